"""The cost of one forward step, written once, and the roofline functions' inputs on one grid.

:func:`mixed_step_time_kernel` is the step-time formula of the roofline model (see
:mod:`rooflinekit.roofline` for the model and its assumptions): a scalar function of plain floats
that ``numba.njit`` compiles unchanged for the batching simulator, and that the vectorised
functions of :mod:`rooflinekit.roofline` and :mod:`rooflinekit.latency` run on numpy arrays
(``_step_time``). :class:`StepCost` names its coefficients; :func:`kv_tokens_read_kernel` and
:func:`prefill_context_tokens_kernel` count the KV tokens and attention pairs a step reads.

The private helpers read the specs and options (:mod:`rooflinekit._roofline_inputs`), lay the
arguments out on one :class:`~rooflinekit._roofline_inputs.Grid`, derive every coefficient, and
give the kernel's arguments for a decode step (``_decode``) or a prefill pass (``_prefill``);
``_flops`` and ``_bytes`` are the kernel's ``work`` and ``traffic`` terms on those arguments.
The public names are re-exported by :mod:`rooflinekit.roofline`, their documented home.
"""

from __future__ import annotations

import math
import types
from typing import NamedTuple

import numpy as np

from rooflinekit import memory, parallel
from rooflinekit._labels import align_inputs
from rooflinekit._validation import check_integer, check_nonnegative, check_range
from rooflinekit.roofline.options import Grid, gpu_fields, model_fields, read_options

__all__ = ["StepCost", "mixed_step_time_kernel", "kv_tokens_read_kernel",
           "prefill_context_tokens_kernel"]


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
        parallel.require_link(link, degree)
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

