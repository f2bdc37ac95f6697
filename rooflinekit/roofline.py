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
(:mod:`rooflinekit._roofline_inputs` reads the specs and options and lays the inputs out on one
grid.)

The step-time formula is written once, as :func:`mixed_step_time_kernel`, a scalar function of
plain floats that ``numba.njit`` compiles unchanged for the batching simulator; the vectorised
functions run the same code on numpy arrays.
"""

from __future__ import annotations

import math
import types
from typing import NamedTuple

import numpy as np
import xarray as xr

from . import memory, parallel
from ._labels import align_inputs, finish, where
from ._roofline_inputs import (Grid, gpu_fields, model_fields, read_options,
                               with_options_doc)
from ._validation import check_integer, check_nonnegative, check_positive, check_range
from .hardware import GPU
from .models import ModelShape
from .units import MS, PER_MILLION, SECONDS_PER_HOUR

__all__ = [
    "StepCost", "step_cost_coefficients", "mixed_step_time_kernel", "kv_tokens_read_kernel",
    "prefill_context_tokens_kernel", "mixed_step_time",
    "effective_kv_tokens", "decode_flops", "decode_bytes", "prefill_flops", "prefill_bytes",
    "arithmetic_intensity", "ridge_point", "bound", "decode_bound", "prefill_bound",
    "decode_compute_time", "decode_memory_time", "decode_time_per_token", "prefill_time",
    "amortized_token_time", "decode_throughput", "decode_throughput_per_gpu",
    "prefill_throughput", "critical_batch_size", "compute_bound_reachable", "generation_time",
    "request_latency", "cost_per_million_tokens", "decode_roofline", "prefill_ms",
    "decode_ms_per_token",
]


# ------------------------------------------------------------------------------------------------
# The step kernel: one formula, numba-compilable, shared by every path.
# ------------------------------------------------------------------------------------------------

class StepCost(NamedTuple):
    """Coefficients of one model on one tensor-parallel group, as plain floats.

    Pass them unpacked, in order, before the step's token counts to
    :func:`mixed_step_time_kernel`: ``mixed_step_time_kernel(*cost, n_decode, ...)``.
    Efficiencies are already folded into ``peak_flops`` and ``bandwidth``.
    """

    #: Weights every step reads whatever the routing [bytes] (all of them for a dense model).
    nonexpert_weight_bytes: float
    #: One routed expert's weights summed over layers [bytes] (0 for a dense model).
    expert_weight_bytes: float
    #: Routed experts per MoE layer, E [1] (1 for a dense model).
    n_experts: float
    #: Experts each token is routed to, k [1].
    n_experts_per_token: float
    #: KV bytes one cached token holds over all layers [bytes/token].
    kv_bytes_per_token: float
    #: Matrix-multiply FLOPs per token, 2 × active parameters [FLOP/token].
    flops_per_token: float
    #: Attention FLOPs per (query, cached token) pair over all layers, 4·H·d·L [FLOP].
    attention_flops_per_pair: float
    #: Group peak × compute efficiency [FLOP/s].
    peak_flops: float
    #: Group HBM bandwidth × bandwidth efficiency [bytes/s].
    bandwidth: float
    #: Fixed time added to every step [s].
    step_overhead: float
    #: All-reduce bytes each GPU sends per token per step (0 without all-reduce) [bytes/token].
    allreduce_bytes_per_token: float
    #: Per-direction link bandwidth per GPU [bytes/s] (inf when no communication is modelled).
    link_bandwidth: float
    #: Fixed all-reduce latency per step [s].
    allreduce_latency: float
    #: Share of layers with full attention [1] (1 without a sliding window).
    full_attention_fraction: float
    #: Sliding window [tokens] (inf without one).
    sliding_window: float
    #: GPUs in the group [1].
    tp: float


def mixed_step_time_kernel(nonexpert_weight_bytes, expert_weight_bytes, n_experts,
                           n_experts_per_token, kv_bytes_per_token, flops_per_token,
                           attention_flops_per_pair, peak_flops, bandwidth, step_overhead,
                           allreduce_bytes_per_token, link_bandwidth, allreduce_latency,
                           full_attention_fraction, sliding_window, tp,
                           n_decode, n_prefill_tokens, kv_tokens_read, prefill_context_tokens):
    """Time of one forward step carrying decode tokens and prompt tokens [s] (scalar kernel).

    Written with arithmetic and ``max``/``min`` only, so that ``numba.njit`` compiles it
    unchanged; the first 16 arguments are the fields of :class:`StepCost`.

    Parameters
    ----------
    nonexpert_weight_bytes ... tp : float
        The :class:`StepCost` fields, in order (see there for units).
    n_decode : float
        Decode tokens in the step, one per decoding sequence [tokens].
    n_prefill_tokens : float
        Prompt tokens in the step (prefill chunks) [tokens].
    kv_tokens_read : float
        KV-cache tokens read from HBM this step [tokens]: each decoding sequence's context plus
        each prefilling sequence's already-cached prefix, per sequence as
        :func:`kv_tokens_read_kernel` counts it (window-capped for sliding-window models).
    prefill_context_tokens : float
        Attention pairs of the prompt tokens beyond one pass over their cached prefix
        [tokens], per chunk as :func:`prefill_context_tokens_kernel` counts it.

    Returns
    -------
    float
        Seconds; 0 for a step with no tokens.

    Notes
    -----
    ``max(FLOPs / peak_flops, bytes / bandwidth) + step_overhead + all-reduce`` with
    ``FLOPs = flops_per_token·n + attention_flops_per_pair·(kv_tokens_read +
    prefill_context_tokens)`` and ``bytes = weights touched by n tokens + kv_bytes_per_token ·
    (kv_tokens_read + n_prefill_tokens)``, ``n = n_decode + n_prefill_tokens``.

    References
    ----------
    .. [1] Williams, Waterman & Patterson, "Roofline", CACM 52(4), 2009.
    .. [2] Agrawal et al., "Taming Throughput-Latency Tradeoff in LLM Inference with
       Sarathi-Serve", OSDI 2024 (mixed prefill/decode steps under a token budget).
    """
    tokens = n_decode + n_prefill_tokens
    experts_touched = n_experts * (1.0 - (1.0 - n_experts_per_token / n_experts) ** tokens)
    weight_bytes = nonexpert_weight_bytes + experts_touched * expert_weight_bytes
    traffic = weight_bytes + kv_bytes_per_token * (kv_tokens_read + n_prefill_tokens)
    work = flops_per_token * tokens + attention_flops_per_pair * (
        kv_tokens_read + prefill_context_tokens)
    roofline = max(work / peak_flops, traffic / bandwidth)
    communication = tokens * allreduce_bytes_per_token / link_bandwidth + allreduce_latency
    runs = min(tokens, 1.0)        # a step with no tokens does not run
    return runs * (roofline + step_overhead + communication)


def kv_tokens_read_kernel(context_length, full_attention_fraction, sliding_window):
    """KV tokens one sequence reads at a context, window-capped, as full-layer tokens [tokens].

    ``f·C + (1 − f)·min(C, window)`` with ``f`` the share of full-attention layers: what
    ``kv_tokens_read`` of :func:`mixed_step_time_kernel` sums over sequences. Equals ``C`` for
    a model without a sliding window. Scalar arithmetic; ``numba.njit`` compiles it unchanged.
    """
    return (full_attention_fraction * context_length
            + (1.0 - full_attention_fraction) * min(context_length, sliding_window))


def prefill_context_tokens_kernel(chunk_tokens, cached_tokens, full_attention_fraction,
                                  sliding_window):
    """Attention pairs of a prompt chunk beyond one pass over its cached prefix [tokens].

    A chunk of ``N`` prompt tokens after ``C0`` cached ones: token ``j`` attends to ``C0 + j``
    earlier tokens (at most the window in windowed layers), ``N·C0 + N(N−1)/2`` pairs in a
    full layer. The cached prefix's one pass is counted by ``kv_tokens_read`` (as
    :func:`kv_tokens_read_kernel` of ``C0``), so this returns the rest; ``0`` for ``N = 1``.
    Scalar arithmetic; ``numba.njit`` compiles it unchanged.
    """
    pairs_full = chunk_tokens * cached_tokens + 0.5 * chunk_tokens * (chunk_tokens - 1.0)
    below = max(0.0, min(chunk_tokens, sliding_window - cached_tokens + 1.0))
    pairs_window = (below * cached_tokens + 0.5 * below * (below - 1.0)
                    + (chunk_tokens - below) * min(sliding_window, cached_tokens + chunk_tokens))
    pairs = full_attention_fraction * pairs_full + (1.0 - full_attention_fraction) * pairs_window
    prefix = (full_attention_fraction * cached_tokens
              + (1.0 - full_attention_fraction) * min(cached_tokens, sliding_window))
    return pairs - prefix


def _elementwise(kernel):
    """The same code object with numpy's elementwise max/min bound to ``max``/``min``.

    The kernels are the single source of the formula; running their code on arrays (rather
    than a numpy transcription of it) means the simulator and the vectorised functions cannot
    drift apart.
    """
    namespace = dict(kernel.__globals__, max=np.maximum, min=np.minimum)
    return types.FunctionType(kernel.__code__, namespace, kernel.__name__ + "_array")


_step_time = _elementwise(mixed_step_time_kernel)
_prefill_pairs = _elementwise(prefill_context_tokens_kernel)


# ------------------------------------------------------------------------------------------------
# Inputs on one grid (spec fields, options and broadcasting: rooflinekit._roofline_inputs).
# ------------------------------------------------------------------------------------------------

def _setup(model, gpu, args: dict, opts: dict | None = None, extra: dict | None = None):
    """Read the specs, label and lay out the arguments on one grid, and derive the coefficients.

    ``model`` or ``gpu`` may be ``None`` for functions that need only the other. Returns the
    grid and a dict of coefficients: the model's (always) and, with a GPU, every
    :class:`StepCost` field.
    """
    values = {}
    labelled_specs = {}
    if model is not None:
        values.update({f"model.{k}": v for k, v in model_fields(model).items()})
        labelled_specs["model"] = model
    if gpu is not None:
        opts = opts if opts is not None else read_options()
        check_integer("tp", args.get("tp", 1), lo=1)
        values.update({f"gpu.{k}": v for k, v in gpu_fields(gpu, opts["compute_dtype"]).items()})
        labelled_specs["gpu"] = gpu
        args = {"tp": 1, **args, **{k: opts[k] for k in (
            "compute_efficiency", "bandwidth_efficiency", "step_overhead")}}
    aligned = align_inputs({**args, **labelled_specs})
    values.update({k: aligned[k] for k in args})
    for key, build in (extra or {}).items():
        values[key] = build(aligned)
    g = Grid(values)
    coeff = _model_coefficients(g) if model is not None else {}
    if gpu is not None:
        coeff.update(_gpu_coefficients(g, opts))
    return g, coeff


def _model_coefficients(g: Grid) -> dict:
    n_layers = g["model.n_layers"]
    bpp = g["model.bytes_per_param"]
    p, pa = g["model.n_params"], g["model.n_active_params"]
    e, k = g["model.n_experts"], g["model.n_experts_per_token"]
    per_expert = np.where(e > k, (p - pa) / np.maximum(e - k, 1.0), 0.0)
    return dict(
        nonexpert_weight_bytes=(pa - k * per_expert) * bpp,
        expert_weight_bytes=per_expert * bpp,
        n_experts=e,
        n_experts_per_token=k,
        kv_bytes_per_token=g["model.kv_bytes_per_token"],
        flops_per_token=2.0 * pa,
        attention_flops_per_pair=4.0 * g["model.n_heads"] * g["model.attention_width"] * n_layers,
        full_attention_fraction=g["model.n_full_layers"] / n_layers,
        sliding_window=g["model.sliding_window"],
    )


def _gpu_coefficients(g: Grid, opts: dict) -> dict:
    degree = g["tp"] * g["gpu.n_gpus"]
    if opts["allreduce"]:
        link = g["gpu.interconnect_bandwidth"] if opts["interconnect_bandwidth"] is None else \
            float(opts["interconnect_bandwidth"])
        hop = g["gpu.interconnect_latency"] if opts["interconnect_latency"] is None else \
            float(opts["interconnect_latency"])
        parallel._require_link(link, degree)
        per_token, latency = parallel.allreduce_coefficients(
            g["model.n_layers"], g["model.hidden_size"], g["model.kv_bytes_per_element"],
            degree, hop)
        link = np.where(degree > 1, link, np.inf)        # 0 / inf = 0 where nothing is sent
    else:
        per_token, latency, link = 0.0, 0.0, math.inf
    return dict(
        peak_flops=g["gpu.peak_flops"] * g["tp"] * g["compute_efficiency"],
        bandwidth=g["gpu.hbm_bandwidth"] * g["tp"] * g["bandwidth_efficiency"],
        step_overhead=g["step_overhead"],
        allreduce_bytes_per_token=per_token,
        link_bandwidth=link,
        allreduce_latency=latency,
        tp=degree,
    )


def _cost(coeff: dict) -> StepCost:
    return StepCost(**{k: coeff[k] for k in StepCost._fields})


def _kv_per_sequence(model, key="context_length"):
    return lambda a: memory.kv_bytes_per_sequence(model, a[key])


def _decode(model, gpu, batch_size, context_length, tp=1, opts=None, **more):
    """Grid, coefficients and kernel arguments of a decode step (``gpu`` may be ``None``).

    ``more`` are further (validated) arguments laid out on the same grid.
    """
    check_range("batch_size", batch_size, lo=1)
    check_nonnegative("context_length", context_length)
    args = {"batch_size": batch_size, "context_length": context_length, **more}
    if gpu is not None:
        args = {"tp": tp, **args}
    g, coeff = _setup(model, gpu, args, opts, extra={"kv_per_sequence": _kv_per_sequence(model)})
    b = g["batch_size"]
    kv_read = b * (g["kv_per_sequence"] / coeff["kv_bytes_per_token"])
    return g, coeff, (b, 0.0, kv_read, 0.0)


def _prefill(model, gpu, prompt_tokens, context_length, tp=1, opts=None):
    """Grid, coefficients and kernel arguments of a prefill pass (``gpu`` may be ``None``)."""
    check_range("prompt_tokens", prompt_tokens, lo=1)
    check_nonnegative("context_length", context_length)
    args = {"prompt_tokens": prompt_tokens, "context_length": context_length}
    if gpu is not None:
        args = {"tp": tp, **args}
    g, coeff = _setup(model, gpu, args, opts, extra={"kv_per_sequence": _kv_per_sequence(model)})
    n, c0 = g["prompt_tokens"], g["context_length"]
    kv_read = g["kv_per_sequence"] / coeff["kv_bytes_per_token"]
    pairs = _prefill_pairs(n, c0, coeff["full_attention_fraction"], coeff["sliding_window"])
    return g, coeff, (0.0, n, kv_read, pairs)


def _flops(c: dict, n_decode, n_prefill, kv_read, pairs):
    """FLOPs of a step: the kernel's ``work`` term."""
    return c["flops_per_token"] * (n_decode + n_prefill) + c["attention_flops_per_pair"] * (
        kv_read + pairs)


def _bytes(c: dict, n_decode, n_prefill, kv_read, pairs):
    """Bytes of a step: the kernel's ``traffic`` term."""
    tokens = n_decode + n_prefill
    touched = c["n_experts"] * (1.0 - (1.0 - c["n_experts_per_token"] / c["n_experts"]) ** tokens)
    weights = c["nonexpert_weight_bytes"] + touched * c["expert_weight_bytes"]
    return weights + c["kv_bytes_per_token"] * (kv_read + n_prefill)


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
    decode_time_per_token(B, C)`` and ``mixed_step_time(0, N, 0) == prefill_time(N)``.

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


@with_options_doc
def decode_bound(model, gpu, batch_size=1, context_length=0, tp=1, **options):
    """Whether a decode step is ``"compute"``- or ``"memory"``-bound.

    Parameters
    ----------
    model, gpu, batch_size, context_length, tp
        As for :func:`decode_time_per_token`.
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
    compute = _flops(c, *step) / c["peak_flops"] >= _bytes(c, *step) / c["bandwidth"]
    return _label(g.wrap(compute, "", "bound") if g.labelled else
                  np.broadcast_to(compute, g.shape))


@with_options_doc
def prefill_bound(model, gpu, prompt_tokens, tp=1, context_length=0, **options):
    """Whether a prefill pass is ``"compute"``- or ``"memory"``-bound.

    Parameters
    ----------
    model, gpu, prompt_tokens, tp, context_length
        As for :func:`prefill_time`.
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
    compute = _flops(c, *step) / c["peak_flops"] >= _bytes(c, *step) / c["bandwidth"]
    return _label(g.wrap(compute, "", "bound") if g.labelled else
                  np.broadcast_to(compute, g.shape))


# ------------------------------------------------------------------------------------------------
# Time.
# ------------------------------------------------------------------------------------------------

@with_options_doc
def decode_compute_time(model, gpu, batch_size=1, context_length=0, tp=1, **options):
    """Time the arithmetic of a decode step needs at the (effective) peak [s].

    Parameters
    ----------
    model, gpu, batch_size, context_length, tp
        As for :func:`decode_time_per_token`.
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
        As for :func:`decode_time_per_token`.
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


@with_options_doc
def decode_time_per_token(model, gpu, batch_size=1, context_length=0, tp=1, **options):
    """Decode step time = inter-token latency (ITL) [s]: every sequence gets one token per step.

    Parameters
    ----------
    model : ModelShape or xarray.Dataset
        The model, or a catalogue Dataset over ``model``.
    gpu : GPU or xarray.Dataset
        One accelerator (``tp`` of them form the group), or a catalogue Dataset over ``gpu``.
    batch_size : int, array_like or xarray.DataArray
        Sequences decoded together [1], ≥ 1.
    context_length : int, array_like or xarray.DataArray
        Tokens each sequence has cached [tokens], ≥ 0.
    tp : int, array_like or xarray.DataArray
        Tensor-parallel degree [1], ≥ 1.
    {options}

    Returns
    -------
    float, ndarray or xarray.DataArray
        Seconds per step.

    Notes
    -----
    ``max(decode FLOPs / peak, (weights + B·KV(C)) / bandwidth) + overhead [+ all-reduce]``
    with peak and bandwidth × ``tp`` (guide §5's simple model). ITL grows with batch size and
    context, not with prompt length (guide §3.3). The guide's §4.1 "per-token time" divides
    this by ``B``: :func:`amortized_token_time`.

    References
    ----------
    .. [1] Guide §3.1, §3.3, §4.1, §5.
    """
    opts = read_options(**options)
    g, c, step = _decode(model, gpu, batch_size, context_length, tp, opts)
    return g.wrap(_step_time(*_cost(c), *step), "s", "decode step time (ITL)")


@with_options_doc
def prefill_time(model, gpu, prompt_tokens, tp=1, *, context_length=0, **options):
    """Time of prefilling a prompt in one pass [s]: the prefill part of TTFT.

    Parameters
    ----------
    model : ModelShape or xarray.Dataset
        The model, or a catalogue Dataset over ``model``.
    gpu : GPU or xarray.Dataset
        One accelerator, or a catalogue Dataset over ``gpu``.
    prompt_tokens : int, array_like or xarray.DataArray
        Prompt tokens [tokens], ≥ 1.
    tp : int, array_like or xarray.DataArray
        Tensor-parallel degree [1], ≥ 1.
    context_length : int, array_like or xarray.DataArray
        Tokens already cached before the prompt (a prefix-cache hit, earlier chunks) [tokens].
    {options}

    Returns
    -------
    float, ndarray or xarray.DataArray
        Seconds.

    Notes
    -----
    Compute-bound for any real prompt, so it grows linearly with the prompt (plus attention's
    quadratic term): a 20,000-token document gives a slow first token on any GPU (guide §3.3).
    TTFT adds queueing, which this does not model. The first output token comes out of this pass.

    References
    ----------
    .. [1] Guide §3.1, §3.3.
    """
    opts = read_options(**options)
    g, c, step = _prefill(model, gpu, prompt_tokens, context_length, tp, opts)
    return g.wrap(_step_time(*_cost(c), *step), "s", "prefill time")


@with_options_doc
def amortized_token_time(model, gpu, batch_size=1, context_length=0, tp=1, **options):
    """Group time per generated token, the decode step shared over the batch [s/token].

    Parameters
    ----------
    model, gpu, batch_size, context_length, tp
        As for :func:`decode_time_per_token`.
    {options}

    Returns
    -------
    float, ndarray or xarray.DataArray
        ``decode_time_per_token / batch_size`` [s/token] — guide §4.1's
        ``t = (weights + B·KV) / (bandwidth × B)``, what per-token cost is proportional to.

    Notes
    -----
    With no context it falls exactly as ``1/B`` (while memory-bound); with a long context the
    ``B·KV`` term takes over and it stops falling. For the guide's 70B model the batch-128
    figure is 75× below batch 1 at ≈ 2.4k tokens of context (``guide/NOTES.md``).

    References
    ----------
    .. [1] Guide §4.1.
    """
    opts = read_options(**options)
    g, c, step = _decode(model, gpu, batch_size, context_length, tp, opts)
    return g.wrap(_step_time(*_cost(c), *step) / step[0], "s/token", "amortized time per token")


@with_options_doc
def decode_throughput(model, gpu, batch_size=1, context_length=0, tp=1, **options):
    """Generated tokens per second of one tensor-parallel group [tokens/s].

    Parameters
    ----------
    model, gpu, batch_size, context_length, tp
        As for :func:`decode_time_per_token`.
    {options}

    Returns
    -------
    float, ndarray or xarray.DataArray
        ``batch_size / decode_time_per_token`` [tokens/s] for the whole group of ``tp`` GPUs.

    References
    ----------
    .. [1] Guide §4.1.
    """
    opts = read_options(**options)
    g, c, step = _decode(model, gpu, batch_size, context_length, tp, opts)
    return g.wrap(step[0] / _step_time(*_cost(c), *step), "tokens/s",
                  "decode throughput per group")


@with_options_doc
def decode_throughput_per_gpu(model, gpu, batch_size=1, context_length=0, tp=1, **options):
    """Generated tokens per second per GPU [tokens/s]: :func:`decode_throughput` ÷ GPUs.

    Parameters
    ----------
    model, gpu, batch_size, context_length, tp
        As for :func:`decode_time_per_token`.
    {options}

    Returns
    -------
    float, ndarray or xarray.DataArray
        Tokens per second per GPU.
    """
    opts = read_options(**options)
    g, c, step = _decode(model, gpu, batch_size, context_length, tp, opts)
    return g.wrap(step[0] / _step_time(*_cost(c), *step) / c["tp"], "tokens/s",
                  "decode throughput per GPU")


@with_options_doc
def prefill_throughput(model, gpu, prompt_tokens, tp=1, **options):
    """Prompt tokens per second of one group prefilling one prompt [tokens/s].

    Parameters
    ----------
    model, gpu, prompt_tokens, tp
        As for :func:`prefill_time`.
    {options}

    Returns
    -------
    float, ndarray or xarray.DataArray
        ``prompt_tokens / prefill_time`` [tokens/s].
    """
    opts = read_options(**options)
    g, c, step = _prefill(model, gpu, prompt_tokens, 0, tp, opts)
    return g.wrap(step[1] / _step_time(*_cost(c), *step), "tokens/s", "prefill throughput")


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


# ------------------------------------------------------------------------------------------------
# Requests: generation, end to end, cost.
# ------------------------------------------------------------------------------------------------

def _sum_linear(a, d, lo, hi):
    """``Σ (a + d·c)`` and ``Σ max(0, a + d·c)`` over whole numbers ``c`` in ``[lo, hi]``."""
    n = np.maximum(hi - lo + 1.0, 0.0)
    total = n * a + d * (lo + hi) * n / 2.0
    root = -a / np.where(d == 0, 1.0, d)
    start = np.where(d > 0, np.maximum(lo, np.floor(root) + 1.0), lo)
    end = np.where(d < 0, np.minimum(hi, np.ceil(root) - 1.0), hi)
    m = np.maximum(end - start + 1.0, 0.0)
    m = np.where((d == 0) & (a <= 0), 0.0, m)
    start = np.where(m > 0, start, 0.0)                 # keep unused bounds finite
    end = np.where(m > 0, end, 0.0)
    positive = m * a + d * (start + end) * m / 2.0
    return total, positive


@with_options_doc
def generation_time(model, gpu, output_tokens, context_length=0, batch_size=1, tp=1, **options):
    """Time of ``output_tokens`` consecutive decode steps, the first at ``context_length`` [s].

    Parameters
    ----------
    model, gpu, batch_size, tp
        As for :func:`decode_time_per_token`.
    output_tokens : int, array_like or xarray.DataArray
        Decode steps (tokens generated by decode) [tokens], ≥ 0.
    context_length : int, array_like or xarray.DataArray
        Tokens cached at the first step [tokens], ≥ 0; each step adds one.
    {options}

    Returns
    -------
    float, ndarray or xarray.DataArray
        Seconds: ``Σ decode_time_per_token(B, C + j)`` for ``j = 0 … output_tokens − 1``.

    Notes
    -----
    Summed in closed form: within a step both the compute and the memory time are affine in
    the (window-capped) context, so the sum of their maximum splits into arithmetic series.
    The batch is taken as ``batch_size`` sequences in lock-step with this one (same context).

    References
    ----------
    .. [1] Guide §3.3, §4.1.
    """
    check_integer("output_tokens", output_tokens, lo=0)
    check_integer("context_length", context_length, lo=0)
    check_range("batch_size", batch_size, lo=1)
    opts = read_options(**options)
    args = {"tp": tp, "output_tokens": output_tokens, "context_length": context_length,
            "batch_size": batch_size}
    g, c = _setup(model, gpu, args, opts)
    return g.wrap(_generation(g, c, g["output_tokens"], g["context_length"]), "s",
                  "generation time")


def _generation(g, c, steps, first):
    b = g["batch_size"]
    zeros = np.zeros_like(np.asarray(first, dtype=float))
    weights = _bytes(c, b, 0.0, zeros, 0.0)                     # W(B) with no KV
    a_compute = c["flops_per_token"] * b / c["peak_flops"]
    b_compute = c["attention_flops_per_pair"] * b / c["peak_flops"]
    a_memory = weights / c["bandwidth"]
    b_memory = c["kv_bytes_per_token"] * b / c["bandwidth"]
    da, db = a_compute - a_memory, b_compute - b_memory
    f, w = c["full_attention_fraction"], c["sliding_window"]
    finite_w = np.where(np.isinf(w), 0.0, w)
    lo, hi = first, first + steps - 1.0
    # Up to the window the context counts whole; past it windowed layers stop growing.
    hi1 = np.minimum(hi, w)
    lo2 = np.where(np.isinf(w), hi + 1.0, np.maximum(lo, finite_w + 1.0))
    _, pos1 = _sum_linear(da, db, lo, hi1)
    _, pos2 = _sum_linear(da + db * (1.0 - f) * finite_w, db * f, lo2, hi)
    n1 = np.maximum(hi1 - lo + 1.0, 0.0)
    n2 = np.maximum(hi - lo2 + 1.0, 0.0)
    context1 = _sum_linear(0.0, 1.0, lo, hi1)[0]
    context2 = f * _sum_linear(0.0, 1.0, lo2, hi)[0] + (1.0 - f) * finite_w * n2
    memory_time = a_memory * (n1 + n2) + b_memory * (context1 + context2)
    fixed = c["step_overhead"] + b * c["allreduce_bytes_per_token"] / c["link_bandwidth"] + \
        c["allreduce_latency"]
    return memory_time + pos1 + pos2 + steps * fixed


@with_options_doc
def request_latency(model, gpu, prompt_tokens, output_tokens, batch_size=1, tp=1, **options):
    """End-to-end time of one request: prefill, then ``output_tokens − 1`` decode steps [s].

    Parameters
    ----------
    model, gpu, tp
        As for :func:`decode_time_per_token`.
    prompt_tokens : int, array_like or xarray.DataArray
        Prompt tokens [tokens], ≥ 1.
    output_tokens : int, array_like or xarray.DataArray
        Tokens generated, the first by prefill [tokens], ≥ 1.
    batch_size : int, array_like or xarray.DataArray
        Sequences decoding with it, in lock-step at the same context [1], ≥ 1.
    {options}

    Returns
    -------
    float, ndarray or xarray.DataArray
        Seconds: ``prefill_time(N) + generation_time(output − 1, context N)``. No queueing.

    References
    ----------
    .. [1] Guide §3.3 (TTFT then ITL per token).
    """
    check_integer("prompt_tokens", prompt_tokens, lo=1)
    check_integer("output_tokens", output_tokens, lo=1)
    check_range("batch_size", batch_size, lo=1)
    opts = read_options(**options)
    args = {"tp": tp, "prompt_tokens": prompt_tokens, "output_tokens": output_tokens,
            "batch_size": batch_size, "context_length": 0.0}
    g, c = _setup(model, gpu, args, opts)
    n = g["prompt_tokens"]
    pairs = _prefill_pairs(n, 0.0, c["full_attention_fraction"], c["sliding_window"])
    ttft = _step_time(*_cost(c), 0.0, n, 0.0, pairs)
    total = ttft + _generation(g, c, g["output_tokens"] - 1.0, n)
    return g.wrap(total, "s", "request latency")


@with_options_doc
def cost_per_million_tokens(model, gpu, batch_size=1, context_length=0, tp=1, *,
                            hourly_price=None, **options):
    """GPU cost of a million generated tokens at full decode throughput [USD per 1M tokens].

    Parameters
    ----------
    model, gpu, batch_size, context_length, tp
        As for :func:`decode_time_per_token`.
    hourly_price : float, array_like or xarray.DataArray, optional
        Price of one GPU-hour [USD/h], ≥ 0; default the GPU's catalogue ``hourly_price``.
    {options}

    Returns
    -------
    float, ndarray or xarray.DataArray
        ``tp × hourly_price / 3600 / decode_throughput × 1e6`` [USD/1M tokens]: GPU time only,
        fully utilised (no idle time, engineering or prefill; see :mod:`rooflinekit.pricing`).

    Raises
    ------
    ValueError
        If no price is given and the GPU has none.

    References
    ----------
    .. [1] Guide §4.1 (per-token cost), §6.5.
    """
    opts = read_options(**options)
    if hourly_price is not None:
        check_nonnegative("hourly_price", hourly_price)
    more = {} if hourly_price is None else {"hourly_price": hourly_price}
    g, c, step = _decode(model, gpu, batch_size, context_length, tp, opts, **more)
    if hourly_price is None:
        per_gpu = g["gpu.hourly_price"] / g["gpu.n_gpus"]
        if np.isnan(per_gpu).any():
            raise ValueError("gpu has no hourly_price; pass hourly_price=<USD per GPU-hour>")
    else:
        per_gpu = g["hourly_price"]
    rate = step[0] / _step_time(*_cost(c), *step)
    usd = c["tp"] * per_gpu / SECONDS_PER_HOUR / rate * PER_MILLION
    return g.wrap(usd, "USD/1M tokens", "GPU cost per million generated tokens")


@with_options_doc
def decode_roofline(model, gpu, batch_size=1, context_length=0, tp=1, **options):
    """Everything the roofline says about a decode step, as one labelled Dataset.

    Parameters
    ----------
    model, gpu, batch_size, context_length, tp
        As for :func:`decode_time_per_token`; 1-D arrays become dimensions of their name.
    {options}

    Returns
    -------
    xarray.Dataset
        ``flops`` [FLOP], ``bytes`` [bytes], ``arithmetic_intensity`` and ``ridge_point``
        [FLOP/byte], ``compute_utilization`` (achieved ÷ peak FLOP/s) [1], ``compute_time``,
        ``memory_time``, ``step_time`` [s], ``amortized_token_time`` [s/token],
        ``throughput`` [tokens/s], ``bound`` ("compute"/"memory").

    Notes
    -----
    Regenerates the guide's "Batching raises it" table (§3.2): at no context the intensity of
    the 70B model equals the batch size and the per-token time falls as ``1/B``.

    References
    ----------
    .. [1] Guide §3.2, §4.1.
    """
    opts = read_options(**options)
    labelled = {}
    for key, value in (("batch_size", batch_size), ("context_length", context_length),
                       ("tp", tp)):
        if isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and value.ndim):
            value = np.asarray(value)
            if value.ndim != 1:
                raise TypeError(f"{key} must be 1-D or a DataArray for decode_roofline")
            value = xr.DataArray(value, dims=(key,), coords={key: value})
        labelled[key] = value
    g, c, step = _decode(model, gpu, labelled["batch_size"], labelled["context_length"],
                         labelled["tp"], opts)
    flops, traffic = _flops(c, *step), _bytes(c, *step)
    compute_t, memory_t = flops / c["peak_flops"], traffic / c["bandwidth"]
    t = _step_time(*_cost(c), *step)
    b = step[0]
    peak = c["peak_flops"] / g["compute_efficiency"]
    values = {
        "flops": (flops, "FLOP", "decode FLOPs per step"),
        "bytes": (traffic, "bytes", "decode bytes per step"),
        "arithmetic_intensity": (flops / traffic, "FLOP/byte", "arithmetic intensity"),
        "ridge_point": (c["peak_flops"] / c["bandwidth"], "FLOP/byte", "ridge point"),
        "compute_utilization": (flops / t / peak, "1", "achieved / peak FLOP/s"),
        "compute_time": (compute_t, "s", "decode compute time"),
        "memory_time": (memory_t, "s", "decode memory time"),
        "step_time": (t, "s", "decode step time (ITL)"),
        "amortized_token_time": (t / b, "s/token", "amortized time per token"),
        "throughput": (b / t, "tokens/s", "decode throughput per group"),
    }
    data = {}
    for name, (value, units, long_name) in values.items():
        wrapped = g.wrap(value, units, long_name)
        data[name] = wrapped if isinstance(wrapped, xr.DataArray) else xr.DataArray(
            np.asarray(wrapped), attrs={"units": units, "long_name": long_name})
    compute = np.asarray(compute_t >= memory_t)
    bounds = np.where(np.broadcast_to(compute, g.shape), "compute", "memory")
    data["bound"] = (xr.DataArray(bounds, dims=g.dims, coords=g.coords) if g.labelled
                     else xr.DataArray(bounds))
    data["bound"].attrs = {"units": "", "long_name": "bound"}
    return xr.Dataset(data)


# ------------------------------------------------------------------------------------------------
# The guide's lab names.
# ------------------------------------------------------------------------------------------------

@with_options_doc
def prefill_ms(model, gpu, prompt_tokens, tp=1, **options):
    """The lab's name: :func:`prefill_time` in milliseconds [ms] (guide §8 step 3)."""
    return _to_ms(prefill_time(model, gpu, prompt_tokens, tp, **options), "prefill time")


@with_options_doc
def decode_ms_per_token(model, gpu, batch_size=1, context_length=0, tp=1, **options):
    """The lab's name: guide §4.1's per-token time ``(weights + B·KV)/(bandwidth·B)`` [ms].

    This is :func:`amortized_token_time` in milliseconds — the decode step shared over the
    batch, which falls exactly as ``1/B`` with no context (the lab's test) — **not** the
    inter-token latency a user sees, which is :func:`decode_time_per_token` (the whole step).
    """
    return _to_ms(amortized_token_time(model, gpu, batch_size, context_length, tp, **options),
                  "amortized time per token")


def _to_ms(seconds, long_name):
    return finish(seconds / MS, "ms", long_name)
