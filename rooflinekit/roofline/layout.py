"""Step times of a layout beyond one tensor-parallel group: pipeline and expert parallelism.

A ``(tp, pp, ep)`` layout runs the one step formula for a ``tp`` group split into ``pp`` stages
and adds what it sends between its parts: stage-to-stage activations and, for a MoE model, the
experts' all-to-all. The layout's memory and traffic formulas live in :mod:`rooflinekit.parallel`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import xarray as xr

from rooflinekit import memory, parallel
from rooflinekit._validation import (
    check_integer,
    check_nonnegative,
    check_range,
    check_type,
    whole_number,
)
from rooflinekit.dtypes import bytes_per_element
from rooflinekit.hardware import GPU
from rooflinekit.roofline.latency import decode_step_time, prefill_time
from rooflinekit.roofline.engine import engine_for

__all__ = ["LayoutLinks", "LayoutTerms", "layout_decode_step_time", "layout_links",
           "layout_prefill_time", "layout_step", "layout_terms", "layouts", "MAX_GPUS",
           "MAX_TP"]

#: Most GPUs :func:`layouts` enumerates: 2**20, beyond any fleet one deployment spans.
MAX_GPUS = 2**20

#: Largest tensor-parallel degree :func:`layouts` lists by default: the GPUs of one HGX/DGX-style
#: node, the reach of the fast link the all-reduce is timed on.
MAX_TP = 8


def _check_link(name, value):
    check_range(name, value, lo=1.0)


def _optional(check, name, value):
    if value is not None:
        check(name, value)


def _check(model, gpu, tp, pp, ep, micro_batches, links):
    """Every layout argument, before any work; the checked degrees."""
    parallel.check_layout(model, tp=tp, pp=pp, ep=ep)
    check_type("gpu", gpu, GPU)
    micro_batches = whole_number("micro_batches", micro_batches, lo=1)
    # a link below 1 byte/s is a slip (a denormal rate would overflow the send time to inf)
    _optional(_check_link, "p2p_bandwidth", links["p2p_bandwidth"])
    _optional(check_nonnegative, "p2p_latency", links["p2p_latency"])
    _optional(_check_link, "ep_bandwidth", links["ep_bandwidth"])
    return int(tp), int(pp), int(ep), micro_batches


class LayoutLinks(NamedTuple):
    """The links a layout sends over, per GPU [bytes/s per direction, s]."""

    #: The experts' all-to-all: the interconnect at the engine's share, or an override.
    expert_bandwidth: object
    #: Latency of one all-to-all [s]: the interconnect's.
    expert_latency: object
    #: Stage-to-stage hand-offs: the network link (stages on different nodes), else the
    #: interconnect at the engine's share, or an override.
    stage_bandwidth: object
    #: Latency of one hand-off [s]: the interconnect's, or an override.
    stage_latency: object


class LayoutTerms(NamedTuple):
    """What a ``(tp, pp, ep)`` layout sends in a step of ``n`` tokens, affine in ``n``.

    Each GPU's all-to-all takes ``n · all_to_all_per_token + all_to_all_latency`` and the
    ``pp − 1`` hand-offs ``n · hand_off_per_token + hand_off_latency`` [s/token, s]; every
    term is 0 where its degree is 1.
    """

    all_to_all_per_token: object
    all_to_all_latency: object
    hand_off_per_token: object
    hand_off_latency: object


def _known(value):
    return value is not None and not np.all(np.isnan(np.asarray(value, dtype=float)))


def layout_links(interconnect_bandwidth, interconnect_latency, network_bandwidth,
                 interconnect_efficiency=1.0, *, p2p_bandwidth=None, p2p_latency=None,
                 ep_bandwidth=None) -> LayoutLinks:
    """The links of a layout's sends, on plain numbers or arrays (``None``/NaN: unknown).

    The engine's ``interconnect_efficiency`` is the share of the interconnect every send over
    it reaches (all-reduce, all-to-all, a hand-off without a network link); an explicit
    override (``p2p_bandwidth``, ``ep_bandwidth``) is taken as given.
    """
    interconnect = None if not _known(interconnect_bandwidth) else \
        interconnect_bandwidth * interconnect_efficiency
    if p2p_bandwidth is not None:
        stage = p2p_bandwidth
    elif not _known(network_bandwidth):
        stage = interconnect
    elif np.ndim(network_bandwidth) and interconnect is not None:
        # arrays of GPUs: each its own network link where it has one
        stage = np.where(np.isnan(network_bandwidth), interconnect, network_bandwidth)
    else:
        stage = network_bandwidth
    return LayoutLinks(interconnect if ep_bandwidth is None else ep_bandwidth,
                       interconnect_latency, stage,
                       interconnect_latency if p2p_latency is None else p2p_latency)


def layout_terms(hidden_size, n_moe_layers, n_experts_per_token, activation_bytes, pp, ep,
                 links: LayoutLinks) -> LayoutTerms:
    """The affine terms of what a layout sends per step, on plain numbers or arrays.

    Parameters
    ----------
    hidden_size : float or ndarray
        Width of the activations sent [elements].
    n_moe_layers : float or ndarray
        Layers with routed experts (:func:`rooflinekit.parallel.moe_layers`) [1].
    n_experts_per_token : float or ndarray
        Experts each token is routed to, k [1].
    activation_bytes : float
        Bytes per activation element (the engine's ``activation_dtype``) [bytes].
    pp, ep : int or ndarray
        Pipeline stages and expert-parallel degree [1].
    links : LayoutLinks
        From :func:`layout_links`.

    Returns
    -------
    LayoutTerms

    Notes
    -----
    All-to-all: ``2·h·k·b·(ep−1)/ep`` bytes per token per MoE layer cross GPUs in dispatch and
    combine (:func:`rooflinekit.parallel.all_to_all_bytes_per_token`), each GPU sending its
    ``1/ep`` share, two latencies per MoE layer. Hand-offs: ``pp − 1`` sends of ``h·b`` bytes
    per token and one latency each. The one statement of a layout's sends: the layout
    formulas, the simulator's clock and the sweep all take them from here.
    """
    payload = parallel.all_to_all_bytes_per_token(hidden_size, n_experts_per_token,
                                                  activation_bytes, ep)
    sharded, staged = np.asarray(ep) > 1, np.asarray(pp) > 1
    # an unknown link (None) is never used where its degree is 1
    expert_link = math.inf if links.expert_bandwidth is None else links.expert_bandwidth
    stage_link = math.inf if links.stage_bandwidth is None else links.stage_bandwidth
    return LayoutTerms(
        np.where(sharded, payload * n_moe_layers / ep / np.where(sharded, expert_link, np.inf),
                 0.0)[()],
        np.where(sharded, 2 * n_moe_layers * links.expert_latency, 0.0)[()],
        np.where(staged, (pp - 1) * hidden_size * activation_bytes
                 / np.where(staged, stage_link, np.inf), 0.0)[()],
        np.where(staged, (pp - 1) * links.stage_latency, 0.0)[()])


def layout_step(group_time, tokens, terms: LayoutTerms, pp, micro_batches=None):
    """A layout's step from its tensor-parallel group's: stages, all-to-all, hand-offs [s].

    ``micro_batches=None``: one pass through the stages in turn (a prompt),
    ``T + A(n) + P(n)``. Otherwise ``m`` micro-batches of ``n`` tokens each in flight: a stage
    takes ``s = (T + A(n)) / pp`` and a round ``max(m·s, pp·s + P(n))``
    (:func:`layout_decode_step_time`).
    """
    all_to_all = tokens * terms.all_to_all_per_token + terms.all_to_all_latency
    hand_offs = tokens * terms.hand_off_per_token + terms.hand_off_latency
    if micro_batches is None:
        return group_time + all_to_all + hand_offs
    stage = (group_time + all_to_all) / pp
    return np.maximum(micro_batches * stage, pp * stage + hand_offs)


def _model_terms(model, gpu, pp, ep, engine, links):
    """:func:`layout_terms` of a ModelShape on a GPU, with the link checks of one layout."""
    bandwidths = layout_links(gpu.interconnect_bandwidth, gpu.interconnect_latency,
                              gpu.network_bandwidth, engine.interconnect_efficiency, **links)
    if pp > 1 and bandwidths.stage_bandwidth is None:
        raise ValueError(f"pp={pp} needs a link bandwidth for the stage-to-stage activations "
                         f"and this gpu has none; pass p2p_bandwidth=<bytes/s>")
    if ep > 1 and bandwidths.expert_bandwidth is None:
        raise ValueError(f"ep={ep} needs a link bandwidth for the expert all-to-all and this "
                         f"gpu has none; pass ep_bandwidth=<bytes/s>")
    return layout_terms(model.hidden_size, parallel.moe_layers(model), model.n_experts_per_token,
                        bytes_per_element(engine.activation_dtype), pp, ep, bandwidths)


def layout_decode_step_time(model, gpu, batch_size=1, context_length=0, *, tp=1, pp=1, ep=1,
                            micro_batches=1, p2p_bandwidth=None, p2p_latency=None,
                            ep_bandwidth=None, engine=None):
    """Decode step time of a ``(tp, pp, ep)`` layout: the ITL every sequence sees [s].

    Parameters
    ----------
    model, gpu : ModelShape, GPU
        The model, and one accelerator of the layout.
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
        Stage-to-stage bandwidth [bytes/s], >= 1; default the GPU's ``network_bandwidth`` (stages on
        different nodes), else its ``interconnect_bandwidth``.
    p2p_latency : float, optional
        Latency of one stage-to-stage send [s]; default the GPU's ``interconnect_latency``.
    ep_bandwidth : float, optional
        All-to-all bandwidth per GPU [bytes/s], >= 1; default the GPU's ``interconnect_bandwidth``.
    engine : Engine or Calibration, optional
        How the engine runs a step (:class:`rooflinekit.Engine`), as for
        :func:`~rooflinekit.roofline.decode_step_time`; its ``activation_dtype`` also sizes the
        hand-offs and the all-to-all. Default :data:`rooflinekit.IDEAL`.

    Returns
    -------
    float or ndarray
        Seconds between two tokens of one sequence.

    Notes
    -----
    With ``b = B/m`` sequences per micro-batch, ``T(b)`` the tensor-parallel group's step over all
    layers (:func:`~rooflinekit.roofline.decode_step_time` at ``ep``: the busiest group of
    experts sets it) and ``A(b)`` the all-to-all
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
    tp, pp, ep, m = _check(model, gpu, tp, pp, ep, micro_batches, links)
    engine = engine_for(engine, "decode", model=model, gpu=gpu)
    check_integer("batch_size", batch_size, lo=1)
    if np.any(np.asarray(batch_size) < m):
        raise ValueError(f"batch_size must be at least micro_batches={m} (one sequence per "
                         f"micro-batch); got {batch_size!r}")
    b = batch_size if m == 1 else np.asarray(batch_size, dtype=float) / m
    group = decode_step_time(model, gpu, b, context_length, tp, ep=ep, engine=engine)
    if pp == 1 and ep == 1 and m == 1:
        return group
    terms = _model_terms(model, gpu, pp, ep, engine, links)
    return layout_step(group, b, terms, pp, m)


def layout_prefill_time(model, gpu, prompt_tokens, *, tp=1, pp=1, ep=1, cached_tokens=0,
                        p2p_bandwidth=None, p2p_latency=None, ep_bandwidth=None, engine=None):
    """Prefill time of one prompt on a ``(tp, pp, ep)`` layout [s].

    Parameters
    ----------
    model, gpu : ModelShape, GPU
        The model, and one accelerator of the layout.
    prompt_tokens : int or array_like
        Tokens of the prompt [tokens], ≥ 0.
    tp, pp, ep : int
        Layout degrees [1] (:func:`rooflinekit.parallel.check_layout`).
    cached_tokens : int or array_like
        The prompt's leading tokens whose KV is cached (a prefix-cache hit) [tokens], in
        ``[0, prompt_tokens]``, as in :func:`~rooflinekit.roofline.prefill_time`.
    p2p_bandwidth, p2p_latency, ep_bandwidth : float, optional
        Link overrides, as in :func:`layout_decode_step_time`.
    engine : Engine or Calibration, optional
        As for :func:`layout_decode_step_time`, in the prefill phase.

    Returns
    -------
    float or ndarray
        Seconds.

    Notes
    -----
    The prompt passes the stages one after another: ``T(P) + A(P) + (pp − 1)·p(P)`` with the
    terms of :func:`layout_decode_step_time` at ``P`` tokens. Splitting a long prompt into chunks
    that follow each other through the pipeline would overlap the stages; that is not modelled.
    ``pp = ep = 1`` is :func:`prefill_time` exactly. With ``C`` cached tokens only the
    ``max(P − C, 1)`` computed tokens pass the stages and the all-to-all (a fully cached prompt
    still computes its last token); the cached KV is read where it lies, in each stage.

    See Also
    --------
    layout_decode_step_time, prefill_time, rooflinekit.parallel.kv_transfer_time
    """
    links = {"p2p_bandwidth": p2p_bandwidth, "p2p_latency": p2p_latency,
             "ep_bandwidth": ep_bandwidth}
    tp, pp, ep, _ = _check(model, gpu, tp, pp, ep, 1, links)
    check_integer("prompt_tokens", prompt_tokens, lo=0)
    check_integer("cached_tokens", cached_tokens, lo=0)
    engine = engine_for(engine, "prefill", model=model, gpu=gpu)
    group = prefill_time(model, gpu, prompt_tokens, tp, cached_tokens=cached_tokens, ep=ep,
                         engine=engine)
    if pp == 1 and ep == 1:
        return group
    # what passes the stages: the computed tokens (prefill_time checked cached <= prompt)
    computed = (prompt_tokens if np.all(np.asarray(cached_tokens) == 0)
                else np.maximum(np.asarray(prompt_tokens) - np.asarray(cached_tokens), 1))
    return layout_step(group, computed, _model_terms(model, gpu, pp, ep, engine, links), pp)


def _divisors(n):
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted({*small, *(n // d for d in small)})


def _valid(model, **degrees):
    try:
        parallel.check_layout(model, **degrees)
    except ValueError:
        return False
    return True


def layouts(model, gpu, n_gpus, *, batch_size=1, context_length=0, prompt_tokens=None,
            micro_batches=None, max_tp=MAX_TP, reserve=memory.DEFAULT_RESERVE, p2p_bandwidth=None,
            p2p_latency=None, ep_bandwidth=None, engine=None,
            kv_bytes_per_gpu=None) -> xr.Dataset:
    """Every layout a model can take on ``n_gpus`` GPUs, with its memory, ITL and throughput.

    Parameters
    ----------
    model, gpu : ModelShape, GPU
        The model, and one accelerator of the fleet.
    n_gpus : int
        GPUs to use, all of them: ``tp × pp × dp = n_gpus`` [1], in [1, :data:`MAX_GPUS`].
    batch_size : int
        Sequences decoding together in each replica [1], ≥ 1.
    context_length : int
        Tokens of context each sequence attends to [tokens], ≥ 0.
    prompt_tokens : int, optional
        A prompt to time the prefill (TTFT without queueing) of [tokens], ≥ 0; default none.
    micro_batches : int, optional
        Pipeline micro-batches [1]; default ``min(pp, batch_size)`` (every stage busy).
    max_tp : int
        Largest tensor-parallel degree listed [1], default :data:`MAX_TP` (one node); never
        above the GPU's ``scale_up_gpus`` (one NVLink domain) where the catalogue knows it.
    reserve : float
        Fraction of what the weights leave that is kept back for activations [1], in [0, 1).
    p2p_bandwidth, p2p_latency, ep_bandwidth : float, optional
        Link overrides, as in :func:`layout_decode_step_time`.
    engine : Engine or Calibration, optional
        As for :func:`layout_decode_step_time`.
    kv_bytes_per_gpu : callable, optional
        An engine's memory rule instead of the guide's: ``kv_bytes_per_gpu(tp, pp, ep,
        weight_bytes)`` gives the KV bytes one GPU of a layout holds, from the weights it
        holds [bytes] (:func:`rooflinekit.profiles.layout_kv_bytes` with its engine bound),
        counted in whole blocks of 16 tokens; ``reserve`` is then not read.

    Returns
    -------
    xarray.Dataset
        Along ``layout`` (coordinates ``tp``, ``pp``, ``ep``, ``dp``), ordered by ``tp``, ``pp``,
        ``ep``: ``weight_bytes_per_gpu`` [bytes], ``kv_budget_tokens`` of one replica [tokens],
        ``max_concurrent_sequences`` at ``context_length`` [1], ``weights_fit``, ``fits`` (the
        weights and ``batch_size`` sequences of ``context_length``), ``decode_step_time`` [s],
        ``tokens_per_second`` of one replica, ``fleet_tokens_per_second`` of the ``dp``
        replicas and ``tokens_per_second_per_gpu`` [tokens/s]; ``prefill_time`` [s] with
        ``prompt_tokens``. Times are given for layouts that do not fit too (what they would be).

    Raises
    ------
    ValueError
        If an argument is out of range (``tp = pp = 1``, ``dp = n_gpus`` is always a layout).

    Notes
    -----
    A layout is ``(tp, pp, ep, dp)`` with ``tp · pp · dp = n_gpus`` that
    :func:`rooflinekit.parallel.check_layout` accepts; ``ep`` runs over the divisors of
    ``tp · dp`` for a MoE model (1 for a dense one). Memory is
    :func:`rooflinekit.parallel.layout_memory`: a replica's KV budget is its per-GPU usable bytes
    over its per-GPU KV bytes per token, ``max_concurrent_sequences = ⌊budget / C_w⌋``, ``C_w``
    a sequence's KV bytes over a token's (``C``, ``C ≥ 1``, without sliding-window layers; less
    where a window caps them: :func:`rooflinekit.memory.kv_bytes_per_sequence`).
    Time is :func:`layout_decode_step_time` (ITL) at ``batch_size`` per replica; a replica makes
    ``B / ITL`` tokens/s and the fleet ``dp`` times that. Replicas are independent: the
    fleet's rate assumes traffic balanced over them.

    See Also
    --------
    layout_decode_step_time, layout_prefill_time, rooflinekit.parallel.layout_memory
    """
    n_gpus = whole_number("n_gpus", n_gpus, lo=1)
    if n_gpus > MAX_GPUS:
        raise ValueError(f"n_gpus must be at most 2**20 = {MAX_GPUS:,}; got {n_gpus:,}")
    batch_size = whole_number("batch_size", batch_size, lo=1)
    context_length = whole_number("context_length", context_length, lo=0)
    if prompt_tokens is not None:
        prompt_tokens = whole_number("prompt_tokens", prompt_tokens, lo=0)
    if micro_batches is not None:
        micro_batches = whole_number("micro_batches", micro_batches, lo=1)
        if micro_batches > batch_size:
            raise ValueError(f"micro_batches must be at most batch_size={batch_size} (one "
                             f"sequence per micro-batch); got {micro_batches}")
    max_tp = whole_number("max_tp", max_tp, lo=1)
    if kv_bytes_per_gpu is not None and not callable(kv_bytes_per_gpu):
        raise TypeError(f"kv_bytes_per_gpu must be a function (tp, pp, ep, weight_bytes) -> "
                        f"bytes, or None; got {type(kv_bytes_per_gpu).__name__}")
    links = {"p2p_bandwidth": p2p_bandwidth, "p2p_latency": p2p_latency,
             "ep_bandwidth": ep_bandwidth}
    _check(model, gpu, 1, 1, 1, 1, links)
    engine_for(engine, "decode", model=model, gpu=gpu)
    found = []
    # a tensor-parallel group stays within one scale-up (NVLink) domain: beyond it the
    # all-reduces would cross the network, which the step model does not time
    domain = getattr(gpu, "scale_up_gpus", None)
    if domain is not None:
        max_tp = min(max_tp, domain)
    for tp in (d for d in _divisors(n_gpus) if d <= max_tp):
        for pp in _divisors(n_gpus // tp):
            dp = n_gpus // (tp * pp)
            # experts shard within a replica's tensor-parallel group, as the step times take
            # them (attention data-parallel over replicas with experts across them is not listed)
            eps = _divisors(tp) if model.is_moe else [1]
            found += [(tp, pp, ep, dp) for ep in eps
                      if _valid(model, tp=tp, pp=pp, ep=ep, dp=dp)]
    # a sequence in tokens of every layer: its context, less where sliding windows cap layers
    held = max(float(memory.kv_bytes_per_sequence(model, max(context_length, 1)))
               / float(memory.kv_bytes_per_token(model)), 1.0)
    rows = {name: [] for name in ("weight_bytes_per_gpu", "kv_budget_tokens",
                                  "max_concurrent_sequences", "weights_fit", "fits",
                                  "decode_step_time", "prefill_time")}
    for tp, pp, ep, dp in found:
        mem = parallel.layout_memory(model, gpu, tp=tp, pp=pp, ep=ep, dp=dp, reserve=reserve)
        if kv_bytes_per_gpu is not None:     # the engine's rule: its share less what it keeps
            usable = float(kv_bytes_per_gpu(tp, pp, ep, float(mem.weight_bytes)))
            if not math.isfinite(usable) or usable < 0:
                raise ValueError(f"kv_bytes_per_gpu must give a finite number >= 0; got "
                                 f"{usable!r} for tp={tp}, pp={pp}, ep={ep}")
            mem = mem._replace(usable_kv_bytes=usable)
            # an engine pages its cache: whole blocks of vLLM's default 16 tokens
            budget = np.floor(usable / (mem.kv_bytes_per_token * 16)) * 16
        else:
            budget = np.floor(mem.usable_kv_bytes / mem.kv_bytes_per_token)
        most = np.floor(budget / held)
        m = min(pp, batch_size) if micro_batches is None else micro_batches
        rows["weight_bytes_per_gpu"].append(mem.weight_bytes)
        rows["kv_budget_tokens"].append(budget)
        rows["max_concurrent_sequences"].append(most)
        rows["weights_fit"].append(mem.usable_kv_bytes > 0)
        rows["fits"].append(mem.usable_kv_bytes > 0 and batch_size <= most)
        rows["decode_step_time"].append(float(layout_decode_step_time(
            model, gpu, batch_size, context_length, tp=tp, pp=pp, ep=ep, micro_batches=m,
            **links, engine=engine)))
        rows["prefill_time"].append(np.nan if prompt_tokens is None else float(
            layout_prefill_time(model, gpu, prompt_tokens, tp=tp, pp=pp, ep=ep, **links,
                                engine=engine)))
    degrees = np.array(found, dtype=np.int64)
    itl = np.array(rows["decode_step_time"])
    replica = batch_size / itl
    fleet = replica * degrees[:, 3]
    attrs = {
        "weight_bytes_per_gpu": ("bytes", "weight bytes per GPU"),
        "kv_budget_tokens": ("tokens", "KV cache budget of one replica"),
        "max_concurrent_sequences": ("1", "max concurrent sequences per replica"),
        "weights_fit": ("1", "each GPU holds its weights and a KV budget"),
        "fits": ("1", "the batch fits in each replica's KV budget"),
        "decode_step_time": ("s", "decode step time (ITL)"),
        "prefill_time": ("s", "prefill time (TTFT without queueing)"),
        "tokens_per_second": ("tokens/s", "decode throughput per replica"),
        "fleet_tokens_per_second": ("tokens/s", "decode throughput of all replicas"),
        "tokens_per_second_per_gpu": ("tokens/s", "decode throughput per GPU"),
    }
    values = {**rows, "tokens_per_second": replica, "fleet_tokens_per_second": fleet,
              "tokens_per_second_per_gpu": fleet / n_gpus}
    if prompt_tokens is None:
        del values["prefill_time"]
    dtypes = {"max_concurrent_sequences": np.int64, "kv_budget_tokens": np.int64,
              "weights_fit": bool, "fits": bool}
    data = {name: ("layout", np.asarray(v, dtype=dtypes.get(name, float)),
                   {"units": attrs[name][0], "long_name": attrs[name][1]})
            for name, v in values.items()}
    coords = {name: ("layout", degrees[:, k], {"units": "1", "long_name": long_name})
              for k, (name, long_name) in enumerate((
                  ("tp", "tensor-parallel degree"), ("pp", "pipeline stages"),
                  ("ep", "expert-parallel degree"), ("dp", "replicas (data parallel)")))}
    return xr.Dataset(data, coords=coords, attrs={
        "model": model.name, "gpu": gpu.name, "n_gpus": n_gpus, "batch_size": batch_size,
        "context_length": context_length,
        **({} if prompt_tokens is None else {"prompt_tokens": prompt_tokens})})
