"""The roofline model of serving: work, traffic and time of prefill and decode (guide §3, §4.1).

Every forward step does arithmetic and moves bytes; it takes as long as the slower of the two::

    time = max(FLOPs / (peak · compute_efficiency), bytes / (bandwidth · bandwidth_efficiency))
           + step_overhead + all-reduce time (tensor parallelism, off by default)

The defaults (efficiencies 1.0, no overhead, no all-reduce) are the guide's ideal model.

Work and traffic (``P_a`` active parameters, ``W`` weight bytes read, ``kv`` KV bytes per token):

* decode step, ``B`` sequences at context ``C``: ``2·P_a·B + A·B·C`` FLOPs and ``W + B·kv·C``
  bytes — the weights are read once for the whole batch, every sequence's KV is read for itself
  (guide §4.1). ``A = 4·H·d·L`` is attention's FLOPs per (query, cached token) pair.
* prefill of ``N`` prompt tokens after ``C0`` cached ones: ``2·P_a·N + A·(N·C0 + N(N−1)/2)``
  FLOPs; bytes ``W`` + the prompt's KV written + the cached prefix's KV read.
* a mixed step (chunked prefill, Sarathi-Serve) is the sum of both in one pass over the weights.

Model assumptions, stated once:

* ``2 × parameters`` FLOPs per token (one multiply-add per weight), embeddings included, as the
  guide counts; every weight byte is read from HBM once per step.
* Decode reads its cached context and does not count writing the new token's K/V (1/C of the
  read), exactly the guide's ``weights + B·KV``; prefill counts the N tokens' KV writes.
* Causal attention: a token attends to the tokens before it. Sliding-window layers cap that at
  the window, and read at most the window (:func:`rooflinekit.memory.kv_bytes_per_sequence`).
  Multi-head latent attention runs "absorbed" at width ``kv_lora_rank + qk_rope_head_dim``
  (``4·H·width`` per pair, over-counting the value side, which is ``kv_lora_rank`` wide, by
  ``qk_rope_head_dim``: ≈ 6% of DeepSeek-V3's attention FLOPs).
* Mixture of experts: FLOPs use the active parameters; bytes are the non-expert weights plus
  the experts a step actually touches. Under uniform, independent routing of ``n`` tokens to
  ``k`` of ``E`` experts each layer touches ``E·(1 − (1 − k/E)^n)`` distinct experts in
  expectation; one expert's parameters over all layers are ``(P − P_a)/(E − k)``, everything
  else (attention, dense layers, shared experts, embeddings) is ``P_a − k·(P − P_a)/(E − k)``.
  Real routers are skewed, which touches fewer experts than uniform at small batches.
* Activations, the LM head's logits, kernel launch gaps and KV re-reads by attention tiles are
  not counted; ``step_overhead`` and the efficiency factors are where a calibration puts them.

Inputs: ``model`` a :class:`~rooflinekit.ModelShape` or a catalogue Dataset over ``model``;
``gpu`` a :class:`~rooflinekit.GPU` (one accelerator; ``tp`` of them form the group) or a
catalogue Dataset over ``gpu``; ``tp``, ``batch_size``, ``context_length``, ``prompt_tokens``
Python numbers, numpy arrays or DataArrays. Labelled inputs broadcast by dimension name and give
DataArrays with ``units`` and ``long_name``; scalars give Python floats.
(:mod:`rooflinekit._roofline_inputs` reads the specs and options; :mod:`rooflinekit._step`
lays the inputs out on one grid and derives the coefficients.)

The step-time formula is written once, as :func:`mixed_step_time_kernel` (defined in
:mod:`rooflinekit._step`, re-exported here), a scalar function of plain floats that
``numba.njit`` compiles unchanged for the batching simulator; the vectorised functions run the
same code on numpy arrays.

This module holds the model's work and traffic (FLOPs, bytes, arithmetic intensity), the
roofline itself (ridge point, which roof binds, the compute and memory time of a step, the
critical batch size) and the step coefficients. What follows from the step time for users and
budgets — ITL, prefill time, throughput, generation and request latency, cost per token,
:func:`~rooflinekit.latency.decode_roofline`, the lab's millisecond names — is
:mod:`rooflinekit.latency`; those names are re-exported here, so that
``rooflinekit.roofline.prefill_time`` keeps working.
"""


from __future__ import annotations

import numpy as np
import xarray as xr

from rooflinekit import memory
from rooflinekit._labels import align_inputs, finish, where
from rooflinekit._validation import check_integer, check_nonnegative, check_positive
from rooflinekit.hardware import GPU
from rooflinekit.models import ModelShape
from rooflinekit.roofline.options import model_fields, read_options, with_options_doc
from rooflinekit.roofline.step import (
    StepCost,
    _bytes,
    _cost,
    _decode,
    _flops,
    _kv_per_sequence,
    _prefill,
    _prefill_pairs,
    _setup,
    _step_time,
)

__all__ = [
    "step_cost_coefficients", "mixed_step_time", "effective_kv_tokens", "decode_flops",
    "decode_bytes", "prefill_flops", "prefill_bytes", "arithmetic_intensity", "ridge_point",
    "bound", "decode_bound", "prefill_bound", "decode_compute_time", "decode_memory_time",
    "critical_batch_size", "compute_bound_reachable",
]


# ------------------------------------------------------------------------------------------------
# Coefficients for the simulator and the mixed (chunked-prefill) step.
# ------------------------------------------------------------------------------------------------

@with_options_doc
def step_cost_coefficients(model, gpu, tp=1, **options) -> StepCost:
    """The coefficients of :func:`mixed_step_time_kernel` for one model on one group.

    Parameters
    ----------
    model : ModelShape
        One model (not a Dataset: the simulator runs one configuration).
    gpu : GPU
        One accelerator; ``tp`` of them form the group.
    tp : int
        Tensor-parallel degree [1], ≥ 1.
    {options}

    Returns
    -------
    StepCost
        Plain Python floats.

    Examples
    --------
    >>> from rooflinekit import catalog
    >>> cost = step_cost_coefficients(catalog.model("guide-70b"), catalog.gpu("lab"))
    >>> round(mixed_step_time_kernel(*cost, 1.0, 0.0, 0.0, 0.0) * 1e3, 2)   # batch 1, no context
    41.79
    """
    if not isinstance(model, ModelShape):
        raise TypeError(f"model must be one ModelShape, got {type(model).__name__}")
    if not isinstance(gpu, GPU):
        raise TypeError(f"gpu must be one GPU, got {type(gpu).__name__}")
    opts = read_options(**options)
    for name, value in (("tp", tp), ("compute_efficiency", opts["compute_efficiency"]),
                        ("bandwidth_efficiency", opts["bandwidth_efficiency"]),
                        ("step_overhead", opts["step_overhead"])):
        if isinstance(value, xr.DataArray) or np.ndim(value):
            raise TypeError(f"{name} must be a single number for step_cost_coefficients")
    _, coeff = _setup(model, gpu, {"tp": tp}, opts)
    return StepCost(*(float(v) for v in _cost(coeff)))


@with_options_doc
def mixed_step_time(model, gpu, decode_tokens, prefill_tokens, kv_tokens_read, tp=1, *,
                    prefill_context_length=0, **options):
    """Time of one step carrying decode tokens and a prompt chunk (chunked prefill) [s].

    Parameters
    ----------
    model : ModelShape or xarray.Dataset
        The model.
    gpu : GPU or xarray.Dataset
        One accelerator; ``tp`` of them form the group.
    decode_tokens : int, array_like or xarray.DataArray
        Decoding sequences in the step, one token each [tokens], ≥ 0.
    prefill_tokens : int, array_like or xarray.DataArray
        Prompt tokens of one prefilling sequence in the step (the chunk) [tokens], ≥ 0.
    kv_tokens_read : float, array_like or xarray.DataArray
        KV-cache tokens the decoding sequences read [tokens], ≥ 0: the sum of their contexts,
        each window-capped for sliding-window models (:func:`effective_kv_tokens`).
    tp : int, array_like or xarray.DataArray
        Tensor-parallel degree [1], ≥ 1.
    prefill_context_length : int, array_like or xarray.DataArray
        Tokens of the prefilling prompt already cached by earlier chunks [tokens], ≥ 0.
    {options}

    Returns
    -------
    float, ndarray or xarray.DataArray
        Seconds; 0 for a step with no tokens.

    Notes
    -----
    Sarathi-Serve fills each step up to a token budget with every running decode and a slice
    of a waiting prompt; one pass over the weights serves both, so the step costs less than a
    decode step and a prefill pass run apart. ``mixed_step_time(B, 0, B·C) ==
    decode_step_time(B, C)`` and ``mixed_step_time(0, N, 0) == prefill_time(N)``.

    References
    ----------
    .. [1] Agrawal et al., "Taming Throughput-Latency Tradeoff in LLM Inference with
       Sarathi-Serve", OSDI 2024.
    """
    opts = read_options(**options)
    check_nonnegative("decode_tokens", decode_tokens)
    check_nonnegative("prefill_tokens", prefill_tokens)
    check_nonnegative("kv_tokens_read", kv_tokens_read)
    check_nonnegative("prefill_context_length", prefill_context_length)
    args = {"tp": tp, "decode_tokens": decode_tokens, "prefill_tokens": prefill_tokens,
            "kv_tokens_read": kv_tokens_read, "prefill_context_length": prefill_context_length}
    g, coeff = _setup(model, gpu, args, opts,
                      extra={"prefix_kv": _kv_per_sequence(model, "prefill_context_length")})
    n = g["prefill_tokens"]
    # Only a chunk that exists reads its cached prefix.
    prefix = np.where(n > 0, g["prefix_kv"] / coeff["kv_bytes_per_token"], 0.0)
    pairs = np.where(n > 0, _prefill_pairs(n, g["prefill_context_length"],
                                           coeff["full_attention_fraction"],
                                           coeff["sliding_window"]), 0.0)
    t = _step_time(*_cost(coeff), g["decode_tokens"], n, g["kv_tokens_read"] + prefix, pairs)
    return g.wrap(t, "s", "mixed step time")


def effective_kv_tokens(model, context_length):
    """KV tokens a sequence at ``context_length`` reads per step, as full-layer tokens [tokens].

    ``kv_bytes_per_sequence / kv_bytes_per_token``: ``C`` for full attention, less past the
    window for sliding-window models. Sum it over sequences for ``kv_tokens_read``.

    Parameters
    ----------
    model : ModelShape or xarray.Dataset
        The model.
    context_length : int, array_like or xarray.DataArray
        Tokens cached [tokens], ≥ 0.

    Returns
    -------
    float, ndarray or xarray.DataArray
        Tokens.

    References
    ----------
    .. [1] :func:`rooflinekit.memory.kv_bytes_per_sequence`; Jiang et al., "Mistral 7B", 2023.
    """
    model_fields(model)
    check_nonnegative("context_length", context_length)
    a = align_inputs({"context_length": context_length, "model": model})
    result = memory.kv_bytes_per_sequence(model, a["context_length"]) / \
        memory.kv_bytes_per_token(model)
    return finish(result, "tokens", "KV tokens read per sequence")


# ------------------------------------------------------------------------------------------------
# Work and traffic per phase.
# ------------------------------------------------------------------------------------------------

def decode_flops(model, batch_size=1, context_length=0):
    """FLOPs of one decode step of ``batch_size`` sequences at ``context_length`` [FLOP].

    Parameters
    ----------
    model : ModelShape or xarray.Dataset
        The model, or a catalogue Dataset over ``model``.
    batch_size : int, array_like or xarray.DataArray
        Sequences in the step [1], ≥ 1.
    context_length : int, array_like or xarray.DataArray
        Tokens each sequence has cached [tokens], ≥ 0.

    Returns
    -------
    float, ndarray or xarray.DataArray
        FLOPs per step [FLOP].

    Notes
    -----
    ``2 · P_active · B + 4·H·d·L · B · C`` (attention window-capped). Guide §3.1: at batch 1
    with no context the 70B model does 2 × 70e9 = 140 GFLOP per token.

    References
    ----------
    .. [1] Serving-capacity guide §3.1; Kaplan et al., "Scaling Laws for Neural Language
       Models", arXiv:2001.08361, 2020 (2N FLOPs per token, attention term).
    """
    g, c, step = _decode(model, None, batch_size, context_length)
    return g.wrap(_flops(c, *step), "FLOP", "decode FLOPs per step")


def decode_bytes(model, batch_size=1, context_length=0):
    """Bytes one decode step moves from HBM: weights once, KV per sequence [bytes].

    Parameters
    ----------
    model : ModelShape or xarray.Dataset
        The model, or a catalogue Dataset over ``model``.
    batch_size : int, array_like or xarray.DataArray
        Sequences in the step [1], ≥ 1.
    context_length : int, array_like or xarray.DataArray
        Tokens each sequence has cached [tokens], ≥ 0.

    Returns
    -------
    float, ndarray or xarray.DataArray
        Bytes per step [bytes].

    Notes
    -----
    ``weights + B · kv_bytes_per_sequence(C)`` (guide §4.1); for MoE the weights are the
    non-expert weights plus the experts ``B`` tokens touch (module notes). Guide §3.1: 140 GB for
    the 70B fp16 model at batch 1.

    References
    ----------
    .. [1] Serving-capacity guide §3.1, §4.1.
    """
    g, c, step = _decode(model, None, batch_size, context_length)
    return g.wrap(_bytes(c, *step), "bytes", "decode bytes per step")


def prefill_flops(model, prompt_tokens, context_length=0):
    """FLOPs of prefilling ``prompt_tokens`` after ``context_length`` cached tokens [FLOP].

    Parameters
    ----------
    model : ModelShape or xarray.Dataset
        The model, or a catalogue Dataset over ``model``.
    prompt_tokens : int, array_like or xarray.DataArray
        Prompt tokens processed [tokens], ≥ 1.
    context_length : int, array_like or xarray.DataArray
        Tokens already cached before them (earlier chunks, a cached prefix) [tokens], ≥ 0.

    Returns
    -------
    float, ndarray or xarray.DataArray
        FLOPs [FLOP].

    Notes
    -----
    ``2 · P_active · N + 4·H·d·L · (N·C0 + N(N−1)/2)``: the matrix multiplies (guide §3.1's
    ``2 × params × N``) plus causal attention, quadratic in the prompt.

    References
    ----------
    .. [1] Serving-capacity guide §3.1.
    .. [2] Dao et al., "FlashAttention", NeurIPS 2022 (causal attention FLOPs).
    """
    g, c, step = _prefill(model, None, prompt_tokens, context_length)
    return g.wrap(_flops(c, *step), "FLOP", "prefill FLOPs")


def prefill_bytes(model, prompt_tokens, context_length=0):
    """Bytes a prefill pass moves: weights, the prompt's KV written, the cached prefix read [bytes].

    Parameters
    ----------
    model : ModelShape or xarray.Dataset
        The model, or a catalogue Dataset over ``model``.
    prompt_tokens : int, array_like or xarray.DataArray
        Prompt tokens processed [tokens], ≥ 1.
    context_length : int, array_like or xarray.DataArray
        Tokens already cached before them [tokens], ≥ 0.

    Returns
    -------
    float, ndarray or xarray.DataArray
        Bytes [bytes].

    References
    ----------
    .. [1] Serving-capacity guide §3.1.
    """
    g, c, step = _prefill(model, None, prompt_tokens, context_length)
    return g.wrap(_bytes(c, *step), "bytes", "prefill bytes")


# ------------------------------------------------------------------------------------------------
# The roofline.
# ------------------------------------------------------------------------------------------------

def arithmetic_intensity(model, batch_size=1, context_length=0):
    """FLOPs per byte of a decode step [FLOP/byte] (guide §3.2).

    Parameters
    ----------
    model : ModelShape or xarray.Dataset
        The model, or a catalogue Dataset over ``model``.
    batch_size : int, array_like or xarray.DataArray
        Sequences in the step [1], ≥ 1.
    context_length : int, array_like or xarray.DataArray
        Tokens each sequence has cached [tokens], ≥ 0.

    Returns
    -------
    float, ndarray or xarray.DataArray
        :func:`decode_flops` ÷ :func:`decode_bytes` [FLOP/byte].

    Notes
    -----
    Batch-1 decode of a 16-bit dense model at no context is exactly 1 FLOP/byte (two FLOPs per
    two-byte weight): 0.34% of the lab accelerator's 295 FLOP/byte ridge (guide §3.2). Batching
    raises it while the weights dominate; a long context caps it near
    ``attention FLOPs / KV bytes`` per token.

    References
    ----------
    .. [1] Williams, Waterman & Patterson, "Roofline", CACM 52(4), 2009; guide §3.2.
    """
    g, c, step = _decode(model, None, batch_size, context_length)
    return g.wrap(_flops(c, *step) / _bytes(c, *step), "FLOP/byte", "decode arithmetic intensity")


def ridge_point(gpu, *, compute_efficiency=1.0, bandwidth_efficiency=1.0, compute_dtype=None):
    """Peak FLOP/s ÷ bandwidth [FLOP/byte]: below it a step is memory-bound (guide §3.2).

    Parameters
    ----------
    gpu : GPU or xarray.Dataset
        An accelerator, or a catalogue Dataset over ``gpu``. The tensor-parallel degree cancels.
    compute_efficiency, bandwidth_efficiency : float, array_like or xarray.DataArray
        Achieved shares of peak FLOP/s and bandwidth [1], in (0, 1]. Default 1.0.
    compute_dtype : str, optional
        Format of the matrix multiplies; default the 16-bit dense peak.

    Returns
    -------
    float, ndarray or xarray.DataArray
        FLOP/byte. The lab accelerator: 989e12 / 3.35e12 = 295.2.

    References
    ----------
    .. [1] Williams, Waterman & Patterson, CACM 2009; guide §3.2.
    """
    opts = read_options(compute_efficiency=compute_efficiency,
                        bandwidth_efficiency=bandwidth_efficiency, compute_dtype=compute_dtype)
    g, c = _setup(None, gpu, {}, opts)
    return g.wrap(c["peak_flops"] / c["bandwidth"], "FLOP/byte", "ridge point")


def bound(arithmetic_intensity, ridge_point):
    """Which roof applies: ``"compute"`` at or above the ridge, else ``"memory"``.

    Parameters
    ----------
    arithmetic_intensity : float, array_like or xarray.DataArray
        FLOP/byte of the step, > 0.
    ridge_point : float, array_like or xarray.DataArray
        FLOP/byte of the machine, > 0.

    Returns
    -------
    str, ndarray of str or xarray.DataArray
        "compute" or "memory".

    References
    ----------
    .. [1] Guide §3.2 ("below the ridge you are memory-bound; above it, compute-bound").
    """
    check_positive("arithmetic_intensity", arithmetic_intensity)
    check_positive("ridge_point", ridge_point)
    a = align_inputs({"arithmetic_intensity": arithmetic_intensity, "ridge_point": ridge_point})
    return _label(a["arithmetic_intensity"] >= a["ridge_point"])


def _label(compute):
    return finish(where(compute, "compute", "memory"), "", "bound")


def _step_bound(g, c, step):
    """Which roof binds a step laid out by ``_decode``/``_prefill``, labelled like the grid."""
    compute = _flops(c, *step) / c["peak_flops"] >= _bytes(c, *step) / c["bandwidth"]
    return _label(g.wrap(compute, "", "bound") if g.labelled else
                  np.broadcast_to(compute, g.shape))


@with_options_doc
def decode_bound(model, gpu, batch_size=1, context_length=0, tp=1, **options):
    """Whether a decode step is ``"compute"``- or ``"memory"``-bound.

    Parameters
    ----------
    model, gpu, batch_size, context_length, tp
        As for :func:`~rooflinekit.latency.decode_step_time`.
    {options}

    Returns
    -------
    str, ndarray of str or xarray.DataArray
        "compute" where the arithmetic takes at least as long as the memory traffic.

    References
    ----------
    .. [1] Guide §3.1–3.2.
    """
    opts = read_options(**options)
    g, c, step = _decode(model, gpu, batch_size, context_length, tp, opts)
    return _step_bound(g, c, step)


@with_options_doc
def prefill_bound(model, gpu, prompt_tokens, tp=1, context_length=0, **options):
    """Whether a prefill pass is ``"compute"``- or ``"memory"``-bound.

    Parameters
    ----------
    model, gpu, prompt_tokens, tp, context_length
        As for :func:`~rooflinekit.latency.prefill_time`.
    {options}

    Returns
    -------
    str, ndarray of str or xarray.DataArray
        "compute" or "memory".

    References
    ----------
    .. [1] Guide §3.1 ("Prefill ... Compute-bound").
    """
    opts = read_options(**options)
    g, c, step = _prefill(model, gpu, prompt_tokens, context_length, tp, opts)
    return _step_bound(g, c, step)


# ------------------------------------------------------------------------------------------------
# The two roofs: compute and memory time of a decode step.
# ------------------------------------------------------------------------------------------------

@with_options_doc
def decode_compute_time(model, gpu, batch_size=1, context_length=0, tp=1, **options):
    """Time the arithmetic of a decode step needs at the (effective) peak [s].

    Parameters
    ----------
    model, gpu, batch_size, context_length, tp
        As for :func:`~rooflinekit.latency.decode_step_time`.
    {options}

    Returns
    -------
    float, ndarray or xarray.DataArray
        Seconds.

    Notes
    -----
    Guide §3.1 says batch-1 decode of the 70B model needs "~0.00003 ms worth of arithmetic";
    that does not re-derive. 140 GFLOP at 989 TFLOP/s is 0.14 ms (0.018 ms across 8 GPUs),
    against 41.8 ms of memory traffic: the conclusion (memory-bound, overwhelmingly) stands,
    by a factor of 295 rather than a million (``guide/NOTES.md``).

    References
    ----------
    .. [1] Guide §3.1; ``guide/NOTES.md`` ("Figures that do not re-derive").
    """
    opts = read_options(**options)
    g, c, step = _decode(model, gpu, batch_size, context_length, tp, opts)
    return g.wrap(_flops(c, *step) / c["peak_flops"], "s", "decode compute time")


@with_options_doc
def decode_memory_time(model, gpu, batch_size=1, context_length=0, tp=1, **options):
    """Time the memory traffic of a decode step needs at the (effective) bandwidth [s].

    Parameters
    ----------
    model, gpu, batch_size, context_length, tp
        As for :func:`~rooflinekit.latency.decode_step_time`.
    {options}

    Returns
    -------
    float, ndarray or xarray.DataArray
        Seconds. The guide's 70B fp16 model at batch 1: 140e9 B / 3.35e12 B/s = 41.79 ms.

    References
    ----------
    .. [1] Guide §3.1, §4.1.
    """
    opts = read_options(**options)
    g, c, step = _decode(model, gpu, batch_size, context_length, tp, opts)
    return g.wrap(_bytes(c, *step) / c["bandwidth"], "s", "decode memory time")


# ------------------------------------------------------------------------------------------------
# Where decode turns compute-bound.
# ------------------------------------------------------------------------------------------------


def critical_batch_size(model, gpu, context_length=0, tp=1, *, compute_efficiency=1.0,
                        bandwidth_efficiency=1.0, compute_dtype=None):
    """Batch size at which decode turns compute-bound [1]; ``inf`` where it never does.

    Parameters
    ----------
    model : ModelShape or xarray.Dataset
        The model.
    gpu : GPU or xarray.Dataset
        One accelerator.
    context_length : int, array_like or xarray.DataArray
        Tokens each sequence has cached [tokens], ≥ 0.
    tp : int, array_like or xarray.DataArray
        Tensor-parallel degree [1], ≥ 1 (cancels in the simple model).
    compute_efficiency, bandwidth_efficiency : float, array_like or xarray.DataArray
        Achieved shares of peak [1], in (0, 1].
    compute_dtype : str, optional
        Format of the matrix multiplies.

    Returns
    -------
    float, ndarray or xarray.DataArray
        The (real-valued) batch size where compute time equals memory time [1]; ``inf`` where
        every added sequence brings more memory time than compute time, so no batch is
        compute-bound (see :func:`compute_bound_reachable` for the memory limit).

    Notes
    -----
    Per sequence a step adds ``(2·P_a + A·C)/peak`` of compute and ``KV(C)/bandwidth`` of memory
    time; the weights add ``W/bandwidth`` once. Dense models cross at
    ``B* = (W/bw) / ((2·P_a + A·C)/peak − KV(C)/bw)``: the ridge point (295) at no context for
    the guide's model, and never past ≈ 3.3k tokens of context at 16-bit KV. For MoE ``W``
    grows with ``B`` (experts touched); the single crossing is found by bisection.

    References
    ----------
    .. [1] Guide §3.2 ("decode is very hard to make compute-bound").
    .. [2] Pope et al., "Efficiently Scaling Transformer Inference", MLSys 2023.
    """
    opts = read_options(compute_efficiency=compute_efficiency,
                        bandwidth_efficiency=bandwidth_efficiency, compute_dtype=compute_dtype)
    check_nonnegative("context_length", context_length)
    g, c = _setup(model, gpu, {"tp": tp, "context_length": context_length}, opts,
                  extra={"kv_per_sequence": _kv_per_sequence(model)})
    per_seq = g["kv_per_sequence"] / c["kv_bytes_per_token"]
    extra_compute = (c["flops_per_token"] + c["attention_flops_per_pair"] * per_seq) / \
        c["peak_flops"]
    extra_memory = g["kv_per_sequence"] / c["bandwidth"]
    gain = extra_compute - extra_memory                  # compute minus memory, per sequence
    crosses = gain > 0
    safe_gain = np.where(crosses, gain, 1.0)
    all_weights = c["nonexpert_weight_bytes"] + c["n_experts"] * c["expert_weight_bytes"]
    upper = np.where(crosses, all_weights / c["bandwidth"] / safe_gain, np.inf)
    moe = np.broadcast_to(c["expert_weight_bytes"] > 0, np.shape(upper)) & crosses
    result = upper
    if np.any(moe):
        # h(B) = B·gain − W(B)/bw is convex with h(0) ≤ 0 ≤ h(upper): one root; bisect.
        lo = np.zeros(np.shape(upper))
        hi = np.where(moe, upper, 1.0)
        for _ in range(64):
            mid = 0.5 * (lo + hi)
            w = c["nonexpert_weight_bytes"] + c["n_experts"] * (
                1.0 - (1.0 - c["n_experts_per_token"] / c["n_experts"]) ** mid) * \
                c["expert_weight_bytes"]
            above = mid * gain - w / c["bandwidth"] >= 0
            hi = np.where(above, mid, hi)
            lo = np.where(above, lo, mid)
        result = np.where(moe, hi, upper)
    return g.wrap(result, "1", "critical batch size (inf: never compute-bound)")


def compute_bound_reachable(model, gpu, context_length, tp=1, *, reserve=memory.DEFAULT_RESERVE,
                            compute_efficiency=1.0, bandwidth_efficiency=1.0, compute_dtype=None):
    """Whether a batch big enough to be compute-bound fits in the KV budget [bool].

    Parameters
    ----------
    model, gpu, tp, compute_efficiency, bandwidth_efficiency, compute_dtype
        As for :func:`critical_batch_size`.
    context_length : int, array_like or xarray.DataArray
        Tokens each sequence holds [tokens], ≥ 1.
    reserve : float
        Working-space share of the memory left after weights, in [0, 1).

    Returns
    -------
    bool, ndarray of bool or xarray.DataArray
        ``critical_batch_size ≤ max_concurrent_sequences``.

    Notes
    -----
    For the guide's 70B model on 8 × 80 GiB the critical batch is 450 at 512 tokens (2,935
    fit) but infinite at 8,192 tokens: there, decode stays memory-bound at any batch and the KV
    budget (183 sequences) is the limit (guide §3.2, §2.4).

    References
    ----------
    .. [1] Guide §2.4, §3.2.
    """
    check_integer("context_length", context_length, lo=1)
    critical = critical_batch_size(model, gpu, context_length, tp,
                                   compute_efficiency=compute_efficiency,
                                   bandwidth_efficiency=bandwidth_efficiency,
                                   compute_dtype=compute_dtype)
    a = align_inputs({"context_length": context_length, "tp": tp, "model": model, "gpu": gpu})
    fit = memory.max_concurrent_sequences(model, gpu, a["context_length"], tp=a["tp"],
                                          reserve=reserve)
    return finish(critical <= fit, "1", "compute-bound batch fits in memory")
