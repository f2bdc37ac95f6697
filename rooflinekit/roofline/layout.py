"""Step times of a layout beyond one tensor-parallel group: pipeline and expert parallelism.

A ``(tp, pp, ep)`` layout runs the one step formula (:func:`~rooflinekit.roofline.decode_step_time`,
:func:`~rooflinekit.roofline.prefill_time`) for a tensor-parallel group of ``tp`` GPUs, split
into ``pp`` pipeline stages of equal layers, and adds what the layout sends between its parts:
the activations from stage to stage and, for a MoE model, the experts' all-to-all. Pipeline
stages run one after another, so one sequence's inter-token latency is the sum of the stage
times plus the hand-offs; micro-batches keep every stage busy and raise throughput instead. The
layout's memory and traffic formulas live in :mod:`rooflinekit.parallel`.
"""

from __future__ import annotations

import numpy as np

from rooflinekit import parallel
from rooflinekit._validation import (
    check_integer,
    check_nonnegative,
    check_positive,
    check_type,
    whole_number,
)
from rooflinekit.dtypes import bytes_per_element
from rooflinekit.hardware import GPU
from rooflinekit.roofline.latency import decode_step_time, prefill_time
from rooflinekit.roofline.options import allreduce_model

__all__ = ["layout_decode_step_time", "layout_prefill_time"]


def _optional(check, name, value):
    if value is not None:
        check(name, value)


def _check(model, gpu, tp, pp, ep, micro_batches, links, options):
    """Every layout argument, before any work; the checked degrees."""
    parallel.check_layout(model, tp=tp, pp=pp, ep=ep)
    check_type("gpu", gpu, GPU)
    micro_batches = whole_number("micro_batches", micro_batches, lo=1)
    _optional(check_positive, "p2p_bandwidth", links["p2p_bandwidth"])
    _optional(check_nonnegative, "p2p_latency", links["p2p_latency"])
    _optional(check_positive, "ep_bandwidth", links["ep_bandwidth"])
    bytes_per_element(options.get("activation_dtype", "bf16"), "activation_dtype")
    return int(tp), int(pp), int(ep), micro_batches


def _link(value, *fallbacks, what, degree_name, degree):
    """The first known bandwidth, or a ValueError saying which layout degree needs one."""
    for candidate in (value, *fallbacks):
        if candidate is not None:
            return candidate
    raise ValueError(f"{degree_name}={degree} needs a link bandwidth for the {what} and this gpu "
                     f"has none; pass {'p2p' if degree_name == 'pp' else 'ep'}_bandwidth=<bytes/s>")


def _p2p_time(model, gpu, tokens, pp, links, activation_bytes):
    """Hand-offs between ``pp`` stages: ``pp − 1`` sends of ``tokens × hidden`` activations."""
    if pp == 1:
        return 0.0
    # stages of a model too large for one node sit on different nodes: the NIC, else the link
    bandwidth = _link(links["p2p_bandwidth"], gpu.network_bandwidth, gpu.interconnect_bandwidth,
                      what="stage-to-stage activations", degree_name="pp", degree=pp)
    latency = gpu.interconnect_latency if links["p2p_latency"] is None else links["p2p_latency"]
    one = tokens * model.hidden_size * activation_bytes / bandwidth + latency
    return (pp - 1) * one


def _all_to_all_time(model, gpu, tokens, ep, links, activation_dtype):
    """Expert parallelism's dispatch and combine for a step of ``tokens``, per GPU."""
    if ep == 1:
        return 0.0
    bandwidth = _link(links["ep_bandwidth"], gpu.interconnect_bandwidth,
                      what="expert all-to-all", degree_name="ep", degree=ep)
    sent = parallel.expert_all_to_all_bytes(model, tokens, ep=ep,
                                            activation_dtype=activation_dtype).per_step
    # each GPU sends its 1/ep share; two all-to-alls (dispatch, combine) per MoE layer
    return sent / ep / bandwidth + 2 * parallel.moe_layers(model) * gpu.interconnect_latency


def layout_decode_step_time(model, gpu, batch_size=1, context_length=0, *, tp=1, pp=1, ep=1,
                            micro_batches=1, p2p_bandwidth=None, p2p_latency=None,
                            ep_bandwidth=None, **step_options):
    """Decode step time of a ``(tp, pp, ep)`` layout: the ITL every sequence sees [s].

    Parameters
    ----------
    model : ModelShape
        The model.
    gpu : GPU
        One accelerator of the layout.
    batch_size : int or array_like
        Sequences decoding together over all micro-batches [1], ≥ ``micro_batches``.
    context_length : int or array_like
        Tokens of context each sequence attends to [tokens], ≥ 0.
    tp, pp, ep : int
        Tensor-, pipeline- and expert-parallel degrees [1]
        (:func:`rooflinekit.parallel.check_layout`).
    micro_batches : int
        Micro-batches the batch is split into, in flight in the pipeline at once [1], ≥ 1.
    p2p_bandwidth : float, optional
        Stage-to-stage bandwidth [bytes/s]; default the GPU's ``network_bandwidth`` (stages on
        different nodes), else its ``interconnect_bandwidth``.
    p2p_latency : float, optional
        Latency of one stage-to-stage send [s]; default the GPU's ``interconnect_latency``.
    ep_bandwidth : float, optional
        All-to-all bandwidth per GPU [bytes/s]; default the GPU's ``interconnect_bandwidth``.
    **step_options
        The step options of :func:`rooflinekit.roofline.decode_step_time` (efficiencies,
        ``step_overhead``, ``allreduce``, ``compute_dtype``, ``activation_dtype``, link
        overrides of the tensor-parallel all-reduce).

    Returns
    -------
    float or ndarray
        Seconds between two tokens of one sequence.

    Notes
    -----
    With ``b = B/m`` sequences per micro-batch, ``T(b)`` the tensor-parallel group's step over all
    layers (:func:`~rooflinekit.roofline.decode_step_time`) and ``A(b)`` the all-to-all
    (:func:`rooflinekit.parallel.expert_all_to_all_bytes` over the link), a stage takes
    ``s = (T(b) + A(b)) / pp`` and a hand-off ``p(b) = b·h·b_act / link + latency``::

        ITL = max(m · s,  pp · s + (pp − 1) · p)

    One micro-batch (``m = 1``) waits for every stage in turn: ``T + A + (pp−1)·p``, never less
    than without the pipeline. With ``m ≥ pp`` micro-batches every stage is busy and a round
    takes ``m`` stage times; the batch's throughput ``B / ITL`` then grows with ``m`` while the
    ITL stays about ``T(b)·m/pp``. ``pp = ep = m = 1`` is :func:`decode_step_time` exactly. The
    fixed ``step_overhead`` is shared over the stages; unequal stages (the first with the
    embedding, the last with the LM head) are not modelled.

    References
    ----------
    .. [1] Huang et al., "GPipe", NeurIPS 2019 (micro-batches through stages).
    .. [2] Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
       Using Megatron-LM", SC 2021.

    See Also
    --------
    layout_prefill_time, decode_step_time, rooflinekit.parallel.layout_memory,
    rooflinekit.parallel.pipeline_bubble
    """
    links = {"p2p_bandwidth": p2p_bandwidth, "p2p_latency": p2p_latency,
             "ep_bandwidth": ep_bandwidth}
    tp, pp, ep, m = _check(model, gpu, tp, pp, ep, micro_batches, links, step_options)
    check_integer("batch_size", batch_size, lo=1)
    if np.any(np.asarray(batch_size) < m):
        raise ValueError(f"batch_size must be at least micro_batches={m} (one sequence per "
                         f"micro-batch); got {batch_size!r}")
    if "allreduce" in step_options:
        allreduce_model(step_options["allreduce"])
    activation_dtype = step_options.get("activation_dtype", "bf16")
    b = batch_size if m == 1 else np.asarray(batch_size, dtype=float) / m
    group = decode_step_time(model, gpu, b, context_length, tp, **step_options)
    stage = (group + _all_to_all_time(model, gpu, b, ep, links, activation_dtype)) / pp
    hand_offs = _p2p_time(model, gpu, b, pp, links, bytes_per_element(activation_dtype))
    if pp == 1 and m == 1:
        return stage
    return np.maximum(m * stage, pp * stage + hand_offs)


def layout_prefill_time(model, gpu, prompt_tokens, *, tp=1, pp=1, ep=1, p2p_bandwidth=None,
                        p2p_latency=None, ep_bandwidth=None, **step_options):
    """Prefill time of one prompt on a ``(tp, pp, ep)`` layout [s].

    Parameters
    ----------
    model, gpu : ModelShape, GPU
        The model, and one accelerator of the layout.
    prompt_tokens : int or array_like
        Tokens of the prompt [tokens], ≥ 0.
    tp, pp, ep : int
        Layout degrees [1] (:func:`rooflinekit.parallel.check_layout`).
    p2p_bandwidth, p2p_latency, ep_bandwidth : float, optional
        Link overrides, as in :func:`layout_decode_step_time`.
    **step_options
        The step options of :func:`rooflinekit.roofline.prefill_time`.

    Returns
    -------
    float or ndarray
        Seconds.

    Notes
    -----
    The prompt passes the stages one after another: ``T(P) + A(P) + (pp − 1)·p(P)`` with the
    terms of :func:`layout_decode_step_time` at ``P`` tokens. Splitting a long prompt into chunks
    that follow each other through the pipeline would overlap the stages; that is not modelled.
    ``pp = ep = 1`` is :func:`prefill_time` exactly.

    See Also
    --------
    layout_decode_step_time, prefill_time, rooflinekit.parallel.kv_transfer_time
    """
    links = {"p2p_bandwidth": p2p_bandwidth, "p2p_latency": p2p_latency,
             "ep_bandwidth": ep_bandwidth}
    tp, pp, ep, _ = _check(model, gpu, tp, pp, ep, 1, links, step_options)
    check_integer("prompt_tokens", prompt_tokens, lo=0)
    activation_dtype = step_options.get("activation_dtype", "bf16")
    group = prefill_time(model, gpu, prompt_tokens, tp, **step_options)
    if pp == 1 and ep == 1:
        return group
    return (group + _all_to_all_time(model, gpu, prompt_tokens, ep, links, activation_dtype)
            + _p2p_time(model, gpu, prompt_tokens, pp, links, bytes_per_element(activation_dtype)))
