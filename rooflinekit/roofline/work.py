"""The roofline's work and traffic, and which roof binds a step (guide §3, §4.1).

A step takes as long as the slower of its arithmetic and its HBM traffic::

    time = max(FLOPs / (peak · compute_efficiency), bytes / (bandwidth · bandwidth_efficiency))
           + step_overhead + all-reduce time (tp > 1)

This module holds FLOPs and bytes (each function's Notes give its formula, with ``P_a``
active parameters and ``P`` in all), arithmetic intensity, the ridge point, which roof binds, a
decode step's compute and memory time, the critical batch and the step coefficients
(:class:`~rooflinekit.roofline.StepCost`); a mixed step is decode and prefill in one pass.

Assumptions: one multiply-add per weight per token (the input-embedding table is a lookup, the
LM head runs for tokens that need logits); every weight byte is read once per step; decode does
not count writing the new token's K/V; causal attention, capped at the window in sliding-window
layers; MLA runs absorbed at width ``kv_lora_rank + qk_rope_head_dim`` (≈ 6% over on
DeepSeek-V3's attention FLOPs), except a prompt's pairs among its own tokens, which the engines
run un-absorbed (multi-head attention over decompressed K and V, ``prefill_attention_width``:
160 for DeepSeek-V3). MoE: FLOPs use ``P_a``; bytes are the non-expert weights plus
the ``E·(1 − (1 − k/E)^n)`` experts ``n`` uniformly routed tokens touch per layer, one expert
being ``(P − P_a)/(E − k)`` parameters (skewed routers touch fewer). Decode activations, launch
gaps and tile re-reads are not counted: the engine's overheads and efficiencies take them.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from rooflinekit import memory
from rooflinekit._labels import HELD_CONTEXT, document, formula
from rooflinekit._validation import (
    check_fraction,
    check_integer,
    check_nonnegative,
    check_positive,
)
from rooflinekit.hardware import GPU
from rooflinekit.models import ModelShape
from rooflinekit.roofline.engine import engine_for
from rooflinekit.roofline.options import ARGUMENT_CHECKS, ROOFLINE_PARAMETERS
from rooflinekit.roofline.step import (
    StepCost,
    setup,
    cost,
    decode_step,
    gemm_flops_per_token,
    kv_tokens,
    prefill_step,
    step_bytes,
    step_compute_time,
    step_flops,
    step_formula,
    step_memory_time,
    step_time,
    weight_bytes,
)

__all__ = [
    "arithmetic_intensity",
    "bound",
    "compute_bound_reachable",
    "critical_batch_size",
    "decode_bound",
    "decode_bytes",
    "decode_compute_time",
    "decode_flops",
    "decode_memory_time",
    "effective_kv_tokens",
    "mixed_step_time",
    "prefill_bound",
    "prefill_bytes",
    "prefill_flops",
    "ridge_point",
    "step_cost_coefficients",
]


# ------------------------------------------------------------------------------------------------
# Coefficients for the simulator and the mixed (chunked-prefill) step.
# ------------------------------------------------------------------------------------------------

@document(ROOFLINE_PARAMETERS)
def step_cost_coefficients(model, gpu, tp=1, *, ep=1, engine=None, phase="step") -> StepCost:
    """The coefficients of :func:`mixed_step_time_kernel` for one model on one group.

    Parameters
    ----------
    model : ModelShape
        One model (not a Dataset: the simulator runs one configuration).
    gpu : GPU
        One accelerator; ``tp`` of them form the group.
    tp : int
        Tensor-parallel degree [1], ≥ 1.
    ep : int
        Expert-parallel degree [1], ≥ 1: the routed experts spread over ``ep`` groups of the
        GPUs, the step waiting for the busiest (``expert_groups``, ``expert_spread``). Default 1.
        The layout's all-to-all is not in these coefficients
        (:func:`~rooflinekit.roofline.layout_terms`).
    engine : Engine or Calibration, optional
        How the engine runs the step (:class:`rooflinekit.Engine`; single numbers only);
        default :data:`rooflinekit.IDEAL`.
    phase : {"step", "prefill", "decode"}
        The phase a calibration gives its engine for; default the mixed step.

    Returns
    -------
    StepCost
        Plain Python floats.

    See Also
    --------
    mixed_step_time_kernel, mixed_step_time

    Notes
    -----
    The step formula of :func:`mixed_step_time`, its model and GPU terms folded into plain
    floats once, so that the simulator's kernels price a step of any batch, prompt chunk and
    context with a few multiply-adds.

    References
    ----------
    .. [1] Guide §3.1–3.2 (the roofline), §4.1 (the decode step).

    Examples
    --------
    >>> from rooflinekit import catalog
    >>> from rooflinekit.roofline import mixed_step_time_kernel
    >>> cost = step_cost_coefficients(catalog.model("guide-70b"), catalog.gpu("lab"))
    >>> round(mixed_step_time_kernel(*cost, 1.0, 0.0, 0.0, 0.0, 0.0) * 1e3, 2)   # batch 1, no context
    41.79
    """
    if not isinstance(model, ModelShape):
        raise TypeError(f"model must be one ModelShape, got {type(model).__name__}")
    if not isinstance(gpu, GPU):
        raise TypeError(f"gpu must be one GPU, got {type(gpu).__name__}")
    check_integer("tp", tp, lo=1)
    ARGUMENT_CHECKS["ep"]("ep", ep)     # the formulas' own check: whole, in [1, 4096]
    for name, value in (("tp", tp), ("ep", ep)):
        if isinstance(value, xr.DataArray) or np.ndim(value):
            raise TypeError(f"{name} must be a single number for step_cost_coefficients")
    resolved = engine_for(engine, phase, model=model, gpu=gpu)
    for name, value in resolved.fields().items():
        if isinstance(value, xr.DataArray) or np.ndim(value):
            raise TypeError(f"engine.{name} must be a single number for step_cost_coefficients")
    _, inputs = setup(model, gpu, {"tp": tp, "ep": int(ep)}, resolved, phase)
    return StepCost(*(float(v) for v in cost(inputs["model"], inputs["gpu"])))


@step_formula("s", "mixed step time", phase="step", checks={
    k: check_nonnegative for k in ("decode_tokens", "prefill_tokens", "kv_tokens_read",
                                   "prefill_context_length")})
def mixed_step_time(model, gpu, decode_tokens, prefill_tokens, kv_tokens_read, tp=1, *,
        prefill_context_length=0, engine=None):
    """Time of one step carrying decode tokens and a prompt chunk (chunked prefill) [s].

    Parameters
    ----------
    decode_tokens : int, array_like or xarray.DataArray
        Decoding sequences in the step, one token each [tokens], ≥ 0.
    prefill_tokens : int, array_like or xarray.DataArray
        Prompt tokens of one prefilling sequence in the step (the chunk) [tokens], ≥ 0.
    kv_tokens_read : float, array_like or xarray.DataArray
        KV-cache tokens the decoding sequences read [tokens], ≥ 0: the sum of their contexts,
        each window-capped for sliding-window models (:func:`effective_kv_tokens`).
    prefill_context_length : int, array_like or xarray.DataArray
        Tokens of the prefilling prompt already cached by earlier chunks [tokens], ≥ 0.

    Returns
    -------
    float, ndarray or xarray.DataArray
        Seconds; 0 for a step with no tokens.

    See Also
    --------
    decode_step_time, prefill_time, step_cost_coefficients

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
    chunk = prefill_step(model, prefill_tokens, prefill_context_length)
    # Only a chunk that exists reads its cached prefix.
    prefix = np.where(prefill_tokens > 0, chunk.kv_tokens_read, 0.0)
    pairs = np.where(prefill_tokens > 0, chunk.prefill_context_tokens, 0.0)
    return step_time(model, gpu, (decode_tokens, prefill_tokens, kv_tokens_read + prefix, pairs,
                                  prefill_tokens))


@step_formula("tokens", "KV tokens read per sequence")
def effective_kv_tokens(model, context_length):
    """KV tokens a sequence at ``context_length`` reads per step, as full-layer tokens [tokens].

    ``kv_bytes_per_sequence / kv_bytes_per_token``: ``C`` for full attention, less past the
    window for sliding-window models. Sum it over sequences for ``kv_tokens_read``.

    See Also
    --------
    rooflinekit.memory.kv_bytes_per_sequence, mixed_step_time

    Notes
    -----
    With ``L_f`` full-attention layers and ``L_s`` sliding-window layers of window ``w`` out of
    ``L = L_f + L_s``: ``(L_f · C + L_s · min(C, w)) / L``; ``C`` when every layer attends to
    the whole context.

    References
    ----------
    .. [1] :func:`rooflinekit.memory.kv_bytes_per_sequence`; Jiang et al., "Mistral 7B", 2023.
    """
    return kv_tokens(model, context_length)


# ------------------------------------------------------------------------------------------------
# Work and traffic per phase.
# ------------------------------------------------------------------------------------------------

@step_formula("FLOP", "decode FLOPs per step")
def decode_flops(model, batch_size=1, context_length=0):
    """FLOPs of one decode step of ``batch_size`` sequences at ``context_length`` [FLOP].

    See Also
    --------
    decode_bytes, prefill_flops, arithmetic_intensity

    Notes
    -----
    ``2 · P_active · B + 4·H·d·L · B · C`` (attention window-capped). Guide §3.1: at batch 1
    with no context the 70B model does 2 × 70e9 = 140 GFLOP per token.

    References
    ----------
    .. [1] Serving-capacity guide §3.1; Kaplan et al., "Scaling Laws for Neural Language
       Models", arXiv:2001.08361, 2020 (2N FLOPs per token, attention term).
    """
    return step_flops(model, decode_step(model, batch_size, context_length))


@step_formula("bytes", "decode bytes per step")
def decode_bytes(model, batch_size=1, context_length=0):
    """Bytes one decode step moves from HBM: weights once, KV per sequence [bytes].

    See Also
    --------
    decode_flops, prefill_bytes, decode_memory_time

    Notes
    -----
    ``weights + B · kv_bytes_per_sequence(C)`` (guide §4.1); for MoE the weights are the
    non-expert weights plus the experts ``B`` tokens touch (module notes). Guide §3.1: 140 GB for
    the 70B fp16 model at batch 1.

    References
    ----------
    .. [1] Serving-capacity guide §3.1, §4.1.
    """
    return step_bytes(model, decode_step(model, batch_size, context_length))


@step_formula("FLOP", "prefill FLOPs")
def prefill_flops(model, prompt_tokens, context_length=0):
    """FLOPs of prefilling ``prompt_tokens`` after ``context_length`` cached tokens [FLOP].

    Parameters
    ----------
    context_length : int, array_like or xarray.DataArray
        Tokens already cached before them (earlier chunks, a cached prefix) [tokens], ≥ 0.

    See Also
    --------
    prefill_bytes, decode_flops

    Notes
    -----
    ``2 · P_active · N + 4·H·d·L · (N·C0 + N(N−1)/2)``: the matrix multiplies (guide §3.1's
    ``2 × params × N``) plus causal attention, quadratic in the prompt. With multi-head
    latent attention the pairs beyond one pass over the cached prefix run un-absorbed, at
    ``prefill_attention_width`` instead of the latent width ``d`` (DeepSeek-V3: 160 against
    576), as the engines prefill it.

    References
    ----------
    .. [1] Serving-capacity guide §3.1.
    .. [2] Dao et al., "FlashAttention", NeurIPS 2022 (causal attention FLOPs).
    """
    return step_flops(model, prefill_step(model, prompt_tokens, context_length))


@step_formula("bytes", "prefill bytes", phase="prefill", engine_fields=("activation_dtype",))
def prefill_bytes(model, prompt_tokens, context_length=0, *, engine=None):
    """Bytes a prefill pass moves: weights, the prompt's KV written, the cached prefix read [bytes].

    Parameters
    ----------
    context_length : int, array_like or xarray.DataArray
        Tokens already cached before them [tokens], ≥ 0.

    See Also
    --------
    prefill_flops, decode_bytes

    Notes
    -----
    ``W + P·e + (P + C_eff)·k + P·a``: the weights ``W`` once (of a MoE model, the experts
    its ``P`` tokens touch), an embedding row ``e`` per token, the prompt's KV written and the
    cached prefix's read (``k`` bytes a token, ``C_eff`` :func:`effective_kv_tokens`), and the
    elementwise activation traffic ``a`` per token (in ``activation_dtype``). One read of the
    weights serves every prompt token, which is why prefill is compute-bound.

    References
    ----------
    .. [1] Serving-capacity guide §3.1.
    """
    return step_bytes(model, prefill_step(model, prompt_tokens, context_length))


# ------------------------------------------------------------------------------------------------
# The roofline.
# ------------------------------------------------------------------------------------------------

#: What the three ``bound`` functions return, the same answer to the same question.
_BOUND = """str, ndarray of str or xarray.DataArray
    "compute" where the arithmetic takes at least as long as the memory traffic (the
    arithmetic intensity at or above the ridge point), else "memory"."""

@step_formula("FLOP/byte", "decode arithmetic intensity")
def arithmetic_intensity(model, batch_size=1, context_length=0):
    """FLOPs per byte of a decode step [FLOP/byte] (guide §3.2).

    Returns
    -------
    float, ndarray or xarray.DataArray
        :func:`decode_flops` ÷ :func:`decode_bytes` [FLOP/byte].

    See Also
    --------
    ridge_point, bound, decode_bound

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
    step = decode_step(model, batch_size, context_length)
    return step_flops(model, step) / step_bytes(model, step)


@step_formula("FLOP/byte", "ridge point", engine_fields=(
    "compute_efficiency", "bandwidth_efficiency", "compute_dtype"))
def ridge_point(gpu, *, engine=None):
    """Peak FLOP/s ÷ bandwidth [FLOP/byte]: below it a step is memory-bound (guide §3.2).

    Parameters
    ----------
    gpu : GPU or xarray.Dataset
        An accelerator, or a catalogue Dataset over ``gpu``. The tensor-parallel degree cancels.

    Returns
    -------
    float, ndarray or xarray.DataArray
        FLOP/byte. The lab accelerator: 989e12 / 3.35e12 = 295.2.

    See Also
    --------
    arithmetic_intensity, critical_batch_size

    Notes
    -----
    ``I* = η_c · F / (η_b · BW)`` with ``F`` the peak FLOP/s in the compute dtype, ``BW`` the
    memory bandwidth and ``η`` the efficiencies: the arithmetic intensity at which the compute
    and memory roofs take the same time.

    References
    ----------
    .. [1] Williams, Waterman & Patterson, CACM 2009; guide §3.2.
    """
    return gpu.peak_flops / gpu.bandwidth


@formula("", "bound", checks={"arithmetic_intensity": check_positive,
                              "ridge_point": check_positive},
         exact=("arithmetic_intensity", "ridge_point"), returns=_BOUND)
def bound(arithmetic_intensity, ridge_point):
    """Which roof applies: ``"compute"`` at or above the ridge, else ``"memory"``.

    Parameters
    ----------
    arithmetic_intensity : float, array_like or xarray.DataArray
        FLOP/byte of the step, > 0.
    ridge_point : float, array_like or xarray.DataArray
        FLOP/byte of the machine, > 0.

    See Also
    --------
    decode_bound, prefill_bound

    Notes
    -----
    ``"compute"`` where ``I ≥ I*``, ``"memory"`` where ``I < I*``, elementwise, with ``I`` the
    arithmetic intensity and ``I*`` the ridge point; at the ridge both roofs take the same time
    and it counts as compute-bound.

    References
    ----------
    .. [1] Guide §3.2 ("below the ridge you are memory-bound; above it, compute-bound").
    """
    return np.where(arithmetic_intensity >= ridge_point, "compute", "memory")


def _step_bound(model, gpu, step):
    """Which roof binds a step: "compute" where its arithmetic takes at least its traffic."""
    compute = step_compute_time(model, gpu, step) >= step_memory_time(model, gpu, step)
    return np.where(compute, "compute", "memory")


@step_formula("", "bound", returns=_BOUND)
def decode_bound(model, gpu, batch_size=1, context_length=0, tp=1, *, engine=None):
    """Whether a decode step is ``"compute"``- or ``"memory"``-bound.

    See Also
    --------
    prefill_bound, bound, decode_roofline

    Notes
    -----
    :func:`bound` of the step's FLOPs over its bytes against the (effective) ridge point. A
    decode step reads every weight for ``B`` tokens, so it turns compute-bound only near the
    critical batch: the guide's 70B model on the lab GPU is memory-bound at batch 1 and
    compute-bound at 512 (no context).

    References
    ----------
    .. [1] Guide §3.1–3.2.
    """
    return _step_bound(model, gpu, decode_step(model, batch_size, context_length))


@step_formula("", "bound", returns=_BOUND, phase="prefill")
def prefill_bound(model, gpu, prompt_tokens, tp=1, context_length=0, *, engine=None):
    """Whether a prefill pass is ``"compute"``- or ``"memory"``-bound.

    See Also
    --------
    decode_bound, bound

    Notes
    -----
    :func:`bound` of the pass's FLOPs (``≈ 2 · active parameters · P`` plus attention) over its
    bytes (the weights once, the prompt's KV written, the cached prefix read): ``P`` tokens
    share each weight read, so any prompt longer than the ridge point in tokens is
    compute-bound (2,000 tokens of the guide's 70B model on the lab GPU are).

    References
    ----------
    .. [1] Guide §3.1 ("Prefill ... Compute-bound").
    """
    return _step_bound(model, gpu, prefill_step(model, prompt_tokens, context_length))


# ------------------------------------------------------------------------------------------------
# The two roofs: compute and memory time of a decode step.
# ------------------------------------------------------------------------------------------------

@step_formula("s", "decode compute time", engine_fields=(
    "compute_efficiency", "low_precision_compute_efficiency", "fp4_compute_efficiency",
    "moe_compute_share", "mxfp4_moe_compute_share", "attention_compute_efficiency",
    "narrow_head_attention_share", "gemm_half_tokens", "compute_dtype", "activation_dtype"))
def decode_compute_time(model, gpu, batch_size=1, context_length=0, tp=1, *, engine=None):
    """Time the arithmetic of a decode step needs at the (effective) peak [s].

    See Also
    --------
    decode_memory_time, decode_step_time

    Notes
    -----
    Guide §3.1 says batch-1 decode of the 70B model needs "~0.00003 ms worth of arithmetic";
    that does not re-derive. 140 GFLOP at 989 TFLOP/s is 0.14 ms (0.018 ms across 8 GPUs),
    against 41.8 ms of memory traffic: the conclusion (memory-bound, overwhelmingly) stands,
    by a factor of 295 rather than a million (``docs/conventions.md``).

    References
    ----------
    .. [1] Guide §3.1; ``docs/conventions.md`` ("Figures that do not re-derive").
    """
    return step_compute_time(model, gpu, decode_step(model, batch_size, context_length))


@step_formula("s", "decode memory time", engine_fields=(
    "bandwidth_efficiency", "kv_bandwidth_efficiency", "low_precision_bandwidth_efficiency",
    "fp4_bandwidth_efficiency", "compute_dtype"))
def decode_memory_time(model, gpu, batch_size=1, context_length=0, tp=1, *, engine=None):
    """Time the memory traffic of a decode step needs at the (effective) bandwidth [s].

    See Also
    --------
    decode_compute_time, decode_step_time

    Notes
    -----
    The guide's 70B fp16 model at batch 1: 140e9 B / 3.35e12 B/s = 41.79 ms.

    References
    ----------
    .. [1] Guide §3.1, §4.1.
    """
    return step_memory_time(model, gpu, decode_step(model, batch_size, context_length))


# ------------------------------------------------------------------------------------------------
# Where decode turns compute-bound.
# ------------------------------------------------------------------------------------------------

@step_formula("1", "critical batch size (inf: never compute-bound)", engine_fields=(
    "compute_efficiency", "bandwidth_efficiency", "kv_bandwidth_efficiency",
    "low_precision_compute_efficiency", "low_precision_bandwidth_efficiency",
    "fp4_compute_efficiency", "fp4_bandwidth_efficiency", "moe_compute_share",
    "mxfp4_moe_compute_share", "attention_compute_efficiency", "narrow_head_attention_share",
    "gemm_half_tokens", "compute_dtype", "activation_dtype"))
def critical_batch_size(model, gpu, context_length=0, tp=1, *, engine=None):
    """Batch size at which decode turns compute-bound [1]; ``inf`` where it never does.

    Parameters
    ----------
    tp : int, array_like or xarray.DataArray
        Tensor-parallel degree [1], ≥ 1 (cancels in the simple model).

    Returns
    -------
    float, ndarray or xarray.DataArray
        The (real-valued) batch size where compute time equals memory time [1]; ``inf`` where
        every added sequence brings more memory time than compute time, so no batch is
        compute-bound (see :func:`compute_bound_reachable` for the memory limit).

    See Also
    --------
    compute_bound_reachable, ridge_point

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
    return _critical_batch(model, gpu, context_length)


def _critical_batch(model, gpu, context_length):
    """:func:`critical_batch_size` on the laid-out coefficients (plain arrays)."""
    c = {**vars(model), **vars(gpu)}
    kv_per_sequence = memory.sequence_kv_bytes(model, context_length)
    per_seq = kv_per_sequence / c["kv_bytes_per_token"]
    if np.any(np.isfinite(getattr(model, "index_topk", np.inf))):
        # sparse top-k attention reads less than it holds: the step kernel's count
        per_seq = kv_tokens(model, context_length)
        kv_per_sequence = per_seq * c["kv_bytes_per_token"]
    gemm = gemm_flops_per_token(model, gpu) + c["lm_head_flops_per_token"]
    # attention in the GEMM peak's units, as the step kernel counts it
    extra_compute = (gemm + c["attention_flops_per_pair"] * per_seq
                     * (c["peak_flops"] / c["attention_peak_flops"])) / c["peak_flops"]
    extra_memory = (kv_per_sequence * c["kv_traffic_scale"]
                    + c["embedding_row_bytes"]) / c["bandwidth"]
    gain = extra_compute - extra_memory                  # compute minus memory, per sequence
    # the GEMM curve's idle tiles: compute time that does not grow with the batch
    idle = gemm * c["gemm_half_tokens"] / c["peak_flops"]
    crosses = gain > 0
    safe_gain = np.where(crosses, gain, 1.0)
    # a low-precision path streams its weights at its own share (exactly 1 by default)
    streamed = c["weight_traffic_scale"]
    all_weights = (c["nonexpert_weight_bytes"] + c["n_experts"] * c["expert_weight_bytes"]) \
        * streamed
    upper = np.where(crosses, np.maximum(all_weights / c["bandwidth"] - idle, 0.0) / safe_gain,
                     np.inf)
    moe = np.broadcast_to(c["expert_weight_bytes"] > 0, np.shape(upper)) & crosses
    result = upper
    if np.any(moe):
        # h(B) = B·gain + idle − W(B)/bw is convex with h(0) ≤ 0 ≤ h(upper): one root; bisect.
        lo = np.zeros(np.shape(upper))
        hi = np.where(moe, upper, 1.0)
        for _ in range(64):
            mid = 0.5 * (lo + hi)
            w = weight_bytes(model, mid) * streamed
            above = mid * gain + idle - w / c["bandwidth"] >= 0
            hi = np.where(above, mid, hi)
            lo = np.where(above, lo, mid)
        result = np.where(moe, hi, upper)
    return result


# The critical batch's dimensions first, then the memory budget's (reserve).
@step_formula("1", "compute-bound batch fits in memory", checks={
    "context_length": lambda name, v: check_integer(name, v, lo=1),
    "reserve": lambda name, v: check_fraction(name, v, hi_open=True)},
    model_fields=("weight_bytes",), gpu_fields=("memory_bytes",),
    order=("model", "gpu", "tp", "context_length", "compute_efficiency", "bandwidth_efficiency"),
    parameters=HELD_CONTEXT, engine_fields=(
        "compute_efficiency", "bandwidth_efficiency", "kv_bandwidth_efficiency",
        "low_precision_compute_efficiency", "low_precision_bandwidth_efficiency",
        "fp4_compute_efficiency", "fp4_bandwidth_efficiency", "moe_compute_share",
        "mxfp4_moe_compute_share", "attention_compute_efficiency",
        "narrow_head_attention_share", "gemm_half_tokens", "compute_dtype", "activation_dtype"))
def compute_bound_reachable(model, gpu, context_length, tp=1, *, reserve=memory.DEFAULT_RESERVE,
        engine=None):
    """Whether a batch big enough to be compute-bound fits in the KV budget [bool].

    Returns
    -------
    bool, ndarray of bool or xarray.DataArray
        ``critical_batch_size ≤ max_concurrent_sequences``.

    See Also
    --------
    critical_batch_size, rooflinekit.memory.max_concurrent_sequences

    Notes
    -----
    For the guide's 70B model on 8 × 80 GiB the critical batch is 450 at 512 tokens (2,935
    fit) but infinite at 8,192 tokens: there, decode stays memory-bound at any batch and the KV
    budget (183 sequences) is the limit (guide §3.2, §2.4).

    References
    ----------
    .. [1] Guide §2.4, §3.2.
    """
    critical = _critical_batch(model, gpu, context_length)
    fit = np.floor(memory.usable_bytes(model, gpu, tp, reserve)
                   / memory.sequence_kv_bytes(model, context_length))
    return critical <= fit
