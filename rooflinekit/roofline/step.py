"""The cost of one forward step, written once, and the decorators that give formulas its terms.

:func:`mixed_step_time_kernel` is the step-time formula: a scalar function of plain floats that
``numba.njit`` compiles unchanged for the simulator and that the vectorised formulas run on
arrays. :func:`step_formula` and :func:`step_table` read the specs and derive the coefficients
once, so that a formula's body builds its step and asks for its time, FLOPs or bytes.
"""

from __future__ import annotations

import functools
import inspect
import types
from math import sqrt
from typing import NamedTuple

import numpy as np

from rooflinekit import memory
from rooflinekit._labels import (
    formula,
    lay_out,
    parameter_entries,
    returns_entry,
    spec_fields,
    table,
)
from rooflinekit.dtypes import bytes_per_element, is_mxfp4
from rooflinekit.roofline.engine import engine_for
from rooflinekit.roofline.options import (
    ARGUMENT_CHECKS,
    ROOFLINE_PARAMETERS,
    read_gpu,
    read_model,
)

__all__ = [
    "StepCost",
    "kv_tokens_read_kernel",
    "mixed_step_time_kernel",
    "prefill_context_tokens_kernel",
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
    #: Matrix-multiply FLOPs per token, 2 × active parameters less the LM head and the
    #: input-embedding table (a lookup, no multiply) [FLOP/token].
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
    #: Share of the KV bytes per token held in full-attention layers [1] (1 without a sliding
    #: window): the share of layers where all layers are alike; with sparse attention
    #: (``index_topk``) the indexer keys' share, which every step reads whole.
    full_attention_fraction: float
    #: Sliding window [tokens] (inf without one); with sparse attention the tokens a query
    #: attends to (``index_topk``), whose latent a step reads.
    sliding_window: float
    #: GPUs in the group [1].
    tp: float
    #: Group peak in the activation format, where attention runs, × compute efficiency
    #: [FLOP/s].
    attention_peak_flops: float
    #: LM-head FLOPs per token that needs logits, 2·V·h [FLOP/token] (0: vocabulary unknown,
    #: the head is then in ``flops_per_token``).
    lm_head_flops_per_token: float
    #: Bytes of the input-embedding rows one token looks up, h × weight bytes [bytes/token].
    embedding_row_bytes: float
    #: Elementwise traffic of one prompt token (norms, residual adds) [bytes/token].
    prefill_bytes_per_token: float
    #: Tokens per step at which the weight GEMMs reach half their efficiency, n½ [tokens]
    #: (0: flat efficiency).
    gemm_half_tokens: float
    #: Fixed time a step carrying prompt tokens pays once [s] (the TTFT intercept).
    prefill_overhead: float
    #: Recurrent-state bytes a decode token reads and writes back, 2 × the state per sequence
    #: (linear attention, SSM layers: a constant state, whatever the context) [bytes/token].
    state_bytes_per_decode_token: float
    #: Time per decoding sequence per step the GPU waits for (host work per sequence) [s].
    sequence_overhead: float
    #: FLOPs of a pair of a prompt token with an earlier token of its chunk over those of a
    #: pair with a cached token [1]: 1, except with multi-head latent attention, which decodes
    #: absorbed but prefills un-absorbed (``prefill_attention_width / attention_width``).
    prefill_attention_scale: float
    #: Time the recurrent layers' prompt pass takes per token of the step's longest prompt
    #: chunk (their chunk-to-chunk chain), over all those layers [s/token] (0 without any).
    prefill_chain_time: float
    #: Time the recurrent layers' prompt pass takes per prompt token of the step (their
    #: throughput), over all those layers [s/token] (0 without any).
    prefill_state_time: float
    #: Groups of GPUs the routed experts are spread over, the expert-parallel degree ``ep``
    #: [1] (1: every GPU holds a slice of every expert).
    expert_groups: float
    #: Expected largest of ``expert_groups`` standard normal draws [1]
    #: (:func:`rooflinekit.parallel.expected_normal_maximum`; 0 for one group).
    expert_spread: float
    #: All-reduce bytes each GPU reads per token per step run one-shot [bytes/token] (0
    #: without a one-shot alternative).
    one_shot_allreduce_bytes_per_token: float
    #: Fixed latency of the one-shot all-reduces per step [s] (inf without a one-shot
    #: alternative: the two-stage time exactly).
    one_shot_allreduce_latency: float


def mixed_step_time_kernel(nonexpert_weight_bytes, expert_weight_bytes, n_experts,
                           n_experts_per_token, kv_bytes_per_token, flops_per_token,
                           attention_flops_per_pair, peak_flops, bandwidth, step_overhead,
                           allreduce_bytes_per_token, link_bandwidth, allreduce_latency,
                           full_attention_fraction, sliding_window, tp, attention_peak_flops,
                           lm_head_flops_per_token, embedding_row_bytes, prefill_bytes_per_token,
                           gemm_half_tokens, prefill_overhead, state_bytes_per_decode_token,
                           sequence_overhead, prefill_attention_scale, prefill_chain_time,
                           prefill_state_time, expert_groups, expert_spread,
                           one_shot_allreduce_bytes_per_token, one_shot_allreduce_latency,
                           n_decode, n_prefill_tokens, kv_tokens_read, prefill_context_tokens,
                           longest_prefill_chunk):
    """Time of one forward step carrying decode tokens and prompt tokens [s] (scalar kernel).

    Written with arithmetic, ``max``, ``min`` and ``sqrt`` only, so that ``numba.njit``
    compiles it unchanged; the first 31 arguments are the fields of :class:`StepCost`.

    Parameters
    ----------
    nonexpert_weight_bytes ... one_shot_allreduce_latency : float
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
    longest_prefill_chunk : float
        Prompt tokens of the step's longest prefill chunk [tokens] (0 without prompt tokens).

    Returns
    -------
    float
        Seconds; 0 for a step with no tokens.

    Notes
    -----
    ``max(compute, bytes / bandwidth) + step_overhead + sequence_overhead·n_decode +
    prefill_overhead·min(n_prefill_tokens, 1) + recurrent + all-reduce`` with ``compute =
    (flops_per_token·(n + n½) + lm_head_flops_per_token · (n_logits + n½)) / peak_flops +
    attention_flops_per_pair·(kv_tokens_read + prefill_attention_scale ·
    prefill_context_tokens) / attention_peak_flops``
    (the weight GEMMs and attention run one after the other, each at its format's peak) and
    ``bytes = weights touched by n tokens + embedding_row_bytes·n + kv_bytes_per_token ·
    (kv_tokens_read + n_prefill_tokens) + prefill_bytes_per_token·n_prefill_tokens +
    state_bytes_per_decode_token·n_decode`` (a hybrid's recurrent layers read and write their
    state once a decode token, whatever the context; a prompt's state pass is not counted),
    ``n = n_decode + n_prefill_tokens``. The weights touched are the non-expert ones and, of a
    mixture-of-experts model, the ``t = E·(1 − (1 − k/E)^n)`` experts that ``n`` uniformly
    routed tokens touch per layer. Spread over ``g = expert_groups`` groups of GPUs (expert
    parallelism), each group's count is about normal with mean ``m = t/g`` and variance
    ``m·(1 − t/E)``, and the step waits for the busiest group: it reads ``g·b`` experts' bytes
    at the group's bandwidth, ``b = min(E/g, max(m + s·√(m·(1 − t/E)), min(t, 1)))`` with ``s
    = expert_spread`` (:func:`rooflinekit.parallel.expected_normal_maximum` of ``g``). One
    group reads exactly ``t``. Routers skew tokens to some experts more than uniform routing
    does, so this is the imbalance's floor; the grouped GEMMs' compute imbalance is left out
    (prompt steps touch every expert). Logits are needed for every decode token and for one
    prompt token of a step with prompt tokens, ``n_logits = n_decode + min(n_prefill_tokens,
    1)``: the last token of a prompt (a prefill step serves one prompt). ``all-reduce =
    min(n·allreduce_bytes_per_token / link_bandwidth + allreduce_latency,
    n·one_shot_allreduce_bytes_per_token / link_bandwidth + one_shot_allreduce_latency)``:
    each all-reduce the faster of the two-stage and the one-shot, where the engine has one
    (:func:`rooflinekit.parallel.one_shot_allreduce_coefficients`; else an infinite latency,
    and the two-stage time exactly).

    ``n½ = gemm_half_tokens`` is the GEMM efficiency curve: a matrix multiply of ``n`` rows
    runs at ``compute_efficiency · n / (n + n½)`` of the peak (tiles a small batch leaves idle),
    so its time is ``flops · (n + n½) / peak``; 0 (default) is the flat roofline. The KV
    traffic's own efficiency is folded into ``kv_bytes_per_token`` (scaled by
    ``bandwidth_efficiency / kv_bandwidth_efficiency``), a low-precision path's weight
    streaming into the weight bytes (scaled by ``bandwidth_efficiency /
    low_precision_bandwidth_efficiency``), a mixture-of-experts model's slower grouped expert
    GEMMs into ``flops_per_token`` (its routed experts' part weighed by ``1 /
    moe_compute_share``), the per-layer overhead into ``step_overhead`` (``+ n_layers ·
    layer_overhead``). ``prefill_attention_scale`` is 1 but with multi-head latent attention,
    which decodes absorbed over the cached latent and prefills un-absorbed, at the key and
    value head widths (``prefill_attention_width / attention_width``). ``sequence_overhead``
    is the host's time per decode token that the GPU waits for (scheduling, input preparation,
    sampling and detokenising each running sequence, where the engine does not overlap them
    with the forward pass [4]_): a speculative verification's ``k + 1`` tokens a sequence count
    ``k + 1`` times. ``recurrent = max(prefill_chain_time · longest_prefill_chunk,
    prefill_state_time · n_prefill_tokens)`` is a hybrid's Gated DeltaNet layers' pass over
    the step's prompt tokens as the engines' kernels run it [5]_: the chunked delta rule
    carries its state from chunk to chunk, so the longest chunk's chain bounds it from below,
    and its state updates bound it as the prompt tokens grow; it runs beside the roofline's
    terms, in series. With every engine option at its default each term is the ideal model's, to
    the bit (``x + 0.0`` and ``x · 1.0`` are exact).

    References
    ----------
    .. [1] Williams, Waterman & Patterson, "Roofline", CACM 52(4), 2009.
    .. [2] Agrawal et al., "Taming Throughput-Latency Tradeoff in LLM Inference with
       Sarathi-Serve", OSDI 2024 (mixed prefill/decode steps under a token budget).
    .. [3] Pope et al., "Efficiently Scaling Transformer Inference", MLSys 2023
       (arXiv:2211.05102): model FLOPs utilisation grows with the tokens per step, 76 % on
       large-batch prefill.
    .. [4] vLLM blog, "vLLM v0.6.0: 2.7x Throughput Improvement and 5x Latency Reduction",
       2024-09-05: Llama-3-8B on one H100 under vLLM 0.5.3 spent 33 % of its time in the API
       server and 29 % in scheduling, 38 % on the GPU.
    .. [5] Yang, Kautz & Hatamizadeh, "Gated Delta Networks: Improving Mamba2 with Delta
       Rule", ICLR 2025 (arXiv:2412.06464): the chunkwise-parallel form; NVIDIA
       aiconfigurator-core 0.12.0, ``linear_attention/*/gdn_perf.parquet``: the kernels'
       times under vLLM, SGLang and TensorRT-LLM.
    """
    tokens = n_decode + n_prefill_tokens
    untouched = (1.0 - n_experts_per_token / n_experts) ** tokens     # an expert's chance
    experts_touched = n_experts * (1.0 - untouched)
    # expert parallelism: the step waits for the group whose experts the tokens touch most,
    # about normal around its share (exactly the touched experts with one group)
    share = experts_touched / expert_groups
    busiest = min(n_experts / expert_groups,
                  max(share + expert_spread * sqrt(share * untouched), min(experts_touched, 1.0)))
    weight_bytes = nonexpert_weight_bytes + expert_groups * busiest * expert_weight_bytes
    traffic = (weight_bytes + embedding_row_bytes * tokens
               + kv_bytes_per_token * (kv_tokens_read + n_prefill_tokens)
               + prefill_bytes_per_token * n_prefill_tokens
               + state_bytes_per_decode_token * n_decode)
    logits = n_decode + min(n_prefill_tokens, 1.0)
    # Attention in the peak's units: the ratio is exactly 1 when both formats share a peak.
    work = (flops_per_token * (tokens + gemm_half_tokens)
            + lm_head_flops_per_token * (logits + gemm_half_tokens)
            + attention_flops_per_pair
            * (kv_tokens_read + prefill_context_tokens * prefill_attention_scale)
            * (peak_flops / attention_peak_flops))
    roofline = max(work / peak_flops, traffic / bandwidth)
    # each all-reduce the faster of the two-stage and the one-shot (an engine's own)
    communication = min(tokens * allreduce_bytes_per_token / link_bandwidth + allreduce_latency,
                        tokens * one_shot_allreduce_bytes_per_token / link_bandwidth
                        + one_shot_allreduce_latency)
    runs = min(tokens, 1.0)        # a step with no tokens does not run
    fixed = (step_overhead + sequence_overhead * n_decode
             + prefill_overhead * min(n_prefill_tokens, 1.0))
    recurrent = max(prefill_chain_time * longest_prefill_chunk,
                    prefill_state_time * n_prefill_tokens)
    # the fixed times first: on a grid they are smaller than the roofline's terms
    return runs * (roofline + (fixed + recurrent) + communication)


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
    """The same code object with numpy's elementwise ``max``, ``min`` and ``sqrt`` bound.

    The kernels are the single source of the formula; running their code on arrays (rather
    than a numpy transcription of it) means the simulator and the vectorised functions cannot
    drift apart.
    """
    namespace = dict(kernel.__globals__, max=np.maximum, min=np.minimum, sqrt=np.sqrt)
    return types.FunctionType(kernel.__code__, namespace, kernel.__name__ + "_array")


_step_time = _elementwise(mixed_step_time_kernel)
_prefill_pairs = _elementwise(prefill_context_tokens_kernel)
_kv_read = _elementwise(kv_tokens_read_kernel)


# ------------------------------------------------------------------------------------------------
# The roofline formulas' decorator: specs and options read, coefficients derived on one grid.
# ------------------------------------------------------------------------------------------------

def step_formula(units: str, long_name: str, *, checks: dict | None = None, model_fields=(),
                 gpu_fields=(), order=None, parameters=None, returns=None, phase="decode",
                 engine_fields=None):
    """:func:`rooflinekit._labels.formula` for the roofline: reads ``model``, ``gpu``, ``engine``.

    The arguments are checked by name (:data:`~rooflinekit.roofline.options.ARGUMENT_CHECKS`,
    ``checks`` overriding), the specs read (:func:`~rooflinekit.roofline.options.model_fields`,
    :func:`~rooflinekit.roofline.options.gpu_fields`, plus the spec fields ``model_fields`` and
    ``gpu_fields`` a formula also needs), and everything laid out on one grid, ``model``,
    ``gpu`` and ``tp`` first unless ``order`` says otherwise. A formula with an ``engine``
    parameter takes an :class:`~rooflinekit.roofline.engine.Engine` (or a calibration, asked
    for the engine of ``phase``); its numeric fields are laid out on the grid with the rest and
    :meth:`~rooflinekit.roofline.engine.Engine.group_terms` folds them into the group's terms.
    The body receives the numbers as raw arrays, ``model`` as a namespace of the model's
    coefficients, ``gpu`` as the group's, and ``engine`` as the resolved ``Engine``.
    ``engine_fields`` (default: every field) names the fields that shape the result, for the
    docstring. The docstring's Parameters section is completed from
    :data:`~rooflinekit.roofline.options.ROOFLINE_PARAMETERS`, ``parameters`` taking
    precedence; a docstring without a Returns section is given ``returns``, by default the
    one ``units`` and ``long_name`` say (:func:`rooflinekit._labels.returns_entry`).
    """
    returns = returns_entry(units, long_name) if returns is None else returns
    return _step_decorator(functools.partial(formula, units, long_name, returns=returns), checks,
                           model_fields, gpu_fields, order, parameters, phase, engine_fields)


def step_table(variables: dict, *, checks: dict | None = None, as_dims=(), phase="decode"):
    """:func:`step_formula` for a body returning several quantities: one labelled Dataset.

    ``variables`` maps each name to its ``(units, long_name)``
    (:func:`rooflinekit._labels.table`); the arguments named in ``as_dims`` are the table's
    axes, a list or 1-D array there a dimension of its name.
    """
    return _step_decorator(functools.partial(table, variables, as_dims=as_dims), checks,
                           phase=phase)


def _engine_parameter(phase, engine_fields):
    """The ``engine`` entry of a formula's docstring: which fields shape it, for which phase."""
    shaped = "every field" if engine_fields is None else \
        ", ".join(f"``{f}``" for f in engine_fields)
    return parameter_entries(f"""
    engine : Engine or Calibration, optional
        How the serving engine runs the step (:class:`rooflinekit.Engine`); a calibration
        gives its engine for the {phase} phase. Default :data:`rooflinekit.IDEAL`. Fields that
        shape this result: {shaped}.
    """)


def _step_decorator(make, checks, model_fields=(), gpu_fields=(), order=None, parameters=None,
                    phase="decode", engine_fields=None):
    """The specs, checks, order and coefficients of the roofline, for ``make(**options)``."""
    readers = (("model", read_model, model_fields), ("gpu", read_gpu, gpu_fields))

    def decorate(func):
        params = inspect.signature(func).parameters
        specs = {k: _with_fields(read, extra) for k, read, extra in readers if k in params}
        # tp follows the specs, as the group's size, when a GPU is read
        default_order = ("model", "gpu", "tp") if "gpu" in specs else ()
        takes_engine = "engine" in params

        def resolve(arguments):
            # the engine's numbers go on the grid with the formula's own
            engine = engine_for(arguments.get("engine") if takes_engine else None, phase,
                                **_selectors(arguments))
            arguments["engine"] = engine
            arguments.update(engine.fields())

        shared = {**ROOFLINE_PARAMETERS, **_engine_parameter(phase, engine_fields),
                  **(parameters or {})}
        return make(checks={**ARGUMENT_CHECKS, **(checks or {})}, specs=specs,
                    validate=resolve, derive=functools.partial(_coefficients, params=params),
                    order=default_order if order is None else order,
                    keep=("engine",), parameters=shared)(func)
    return decorate


def _selectors(arguments) -> dict:
    """The model and GPU a calibration's knob sets may key by: specs that carry a name."""
    return {k: arguments[k] for k in ("model", "gpu")
            if isinstance(getattr(arguments.get(k), "name", None), str)}


def _with_fields(read, fields):
    """``read``, and the spec ``fields`` besides where a formula asks for them."""
    if not fields:
        return read
    more = spec_fields(*fields)

    def read_both(spec, arguments):
        return {**read(spec, arguments), **more(spec, arguments)}
    return read_both


def _coefficients(inputs: dict, params=None) -> dict:
    """The laid-out inputs with ``model`` and ``gpu`` as the step's coefficients.

    The engine's fields are consumed here; the body receives the parameters it names.
    """
    engine = inputs["engine"]
    laid = {k: inputs.pop(k) for k in engine.fields() if k in inputs}
    laid["tp"] = inputs.get("tp", 1.0)
    laid["ep"] = inputs.get("ep", 1)
    model, gpu = inputs.get("model"), inputs.get("gpu")
    activation = bytes_per_element(engine.activation_dtype)
    if model is not None:
        inputs["model"] = model = _model_terms(model, activation)
    if gpu is not None:
        inputs["gpu"] = engine.group_terms(gpu, model, laid)
    if params is not None:
        inputs = {k: v for k, v in inputs.items() if k in params}
    return inputs


#: Hidden-state elements a prompt token reads or writes per layer outside the matrix
#: multiplies: two RMSNorms and two residual adds, each one read and one write of the hidden
#: state (fused kernels do no better; SwiGLU, RoPE and softmax traffic are not counted).
ELEMENTWISE_ELEMENTS_PER_LAYER = 8


def _model_terms(m, activation_bytes):
    """The model's fields plus the step's model coefficients (:class:`StepCost`'s first part).

    ``full_attention_fraction`` is the full layers' share of a token's KV *bytes*, so that
    ``kv_bytes_per_token · (f·C + (1 − f)·min(C, w))`` is the bytes a sequence at context C
    reads, exactly, also where sliding-window layers have KV heads or head dims of their own
    (MiMo-V2-Flash); with alike layers it is the share of layers. With sparse attention
    (DeepSeek-V3.2's ``index_topk`` = k) a query reads its layers' indexer keys for the whole
    context but the latent of at most k tokens: ``f`` is then the indexer keys' share of the
    bytes and ``w`` is k (the model holds every token, so memory is unchanged).

    Approximated: attention FLOPs, which follow the same ``f·C + (1 − f)·min(C, w)`` tokens at
    ``attention_flops_per_pair`` (``4·H·d·L``), so that the kernel need not change. Where the
    sliding layers' bytes differ from the full ones' their pairs are weighted by bytes, not by
    layers: MiMo-V2-Flash's sliding layers hold twice a full layer's bytes, so its full
    layers' pairs count 0.55 times at 128K tokens. With sparse attention the indexer's pairs
    count at the latent attention's width, though its scoring (``2·64·128`` FLOPs a pair) is
    5.6 % of that: DeepSeek-V3.2's attention FLOPs are overstated 1.35 times at 32K tokens
    and 1.64 times at 128K.
    """
    p, pa = m.n_params, m.n_active_params
    e, k = m.n_experts, m.n_experts_per_token
    # the parameters a token skips, the encoders aside (n_aside_params), are E - k experts'
    per_expert = np.where(e > k, (p - pa - m.n_aside_params) / np.maximum(e - k, 1.0), 0.0)
    table, head = m.input_embedding_params, m.lm_head_params
    b = m.bytes_per_param
    # each weight group's bytes per parameter (scales included) where it has a format of its
    # own (gpt-oss: MXFP4 experts, bf16 attention and embeddings); NaN: the model's
    body, expert, embedding = (np.where(np.isnan(x), b, x) for x in (
        m.bytes_per_body_param, m.bytes_per_expert_param, m.bytes_per_embedding_param))
    grouped = (body != b) | (expert != b) | (embedding != b)
    # The input table is looked up (one row per token), never read whole nor multiplied.
    m.nonexpert_weight_bytes = np.where(
        grouped, (pa - k * per_expert - table - head) * body + head * embedding,
        (pa - k * per_expert - table) * b)[()]
    m.expert_weight_bytes = per_expert * expert
    # experts that mxfp4_moe_compute_share times (gpt-oss's), where the engine gives it
    m.mxfp4_experts = is_mxfp4(expert)
    m.flops_per_token = 2.0 * (pa - table - head)
    # the routed experts' part of it (a token's k experts), which moe_compute_share slows
    m.expert_flops_per_token = 2.0 * k * per_expert
    m.lm_head_flops_per_token = 2.0 * head
    m.embedding_row_bytes = np.where(head > 0, m.hidden_size * embedding, 0.0)
    # attention runs in the layers with a KV cache (a hybrid's others are recurrent)
    kv_layers = np.where(np.isnan(m.n_kv_layers), m.n_layers, m.n_kv_layers)
    m.attention_flops_per_pair = 4.0 * m.n_heads * m.attention_width * kv_layers
    # a prompt's pairs among its own tokens at its prefill width (MLA: un-absorbed); exactly 1
    # where the two widths are one
    prefill_width = np.where(np.isnan(m.prefill_attention_width), m.attention_width,
                             m.prefill_attention_width)
    m.prefill_attention_scale = (prefill_width / m.attention_width)[()]
    # where a sliding layer's bytes differ from a full one's, the full layers' share of bytes
    # (the share of layers otherwise, unchanged)
    full, sliding = m.kv_bytes_per_token_per_layer, m.sliding_kv_bytes_per_token_per_layer
    m.sliding_kv_bytes_per_token_per_layer = sliding = np.where(np.isnan(sliding), full,
                                                                sliding)[()]
    ratio = sliding / full
    m.full_attention_fraction = np.where(
        ratio == 1.0, m.n_full_layers / kv_layers,
        m.n_full_layers / (m.n_full_layers + ratio * m.n_sliding_layers))[()]
    # sparse attention: the indexer keys are read whole, the latent of at most top-k tokens
    sparse = np.isfinite(m.index_topk)
    if np.any(sparse):
        m.full_attention_fraction = np.where(
            sparse, m.indexer_bytes_per_token_per_layer / full, m.full_attention_fraction)[()]
        m.sliding_window = np.where(sparse, m.index_topk, m.sliding_window)[()]
    m.prefill_bytes_per_token = (ELEMENTWISE_ELEMENTS_PER_LAYER * m.n_layers * m.hidden_size
                                 * activation_bytes)
    # a recurrent layer reads its state and writes it back once a decode token
    m.state_bytes_per_decode_token = 2.0 * m.state_bytes_per_sequence
    return m


def setup(model, gpu, arguments: dict, engine=None, phase="step"):
    """Grid and coefficients of ``arguments`` outside a decorated formula (StepCost).

    ``engine`` is resolved for ``phase`` (:func:`~rooflinekit.roofline.engine.engine_for`).
    """
    engine = engine_for(engine, phase, **_selectors({"model": model, "gpu": gpu}))
    specs = {k: read for k, read, spec in (("model", read_model, model), ("gpu", read_gpu, gpu))
             if spec is not None}
    grid, inputs = lay_out({"model": model, "gpu": gpu, **arguments, **engine.fields()}, specs,
                           order=("model", "gpu", "tp"))
    inputs["engine"] = engine
    return grid, _coefficients(inputs)


# ------------------------------------------------------------------------------------------------
# A step of each phase, and its time, FLOPs and bytes (the kernel's terms).
# ------------------------------------------------------------------------------------------------

class Step(NamedTuple):
    """The token counts of one step, the kernel's last five arguments."""

    n_decode: object
    n_prefill_tokens: object
    kv_tokens_read: object
    prefill_context_tokens: object
    longest_prefill_chunk: object = 0.0


def kv_tokens(model, context_length):
    """KV tokens one sequence at ``context_length`` reads, as full-layer tokens (raw arrays).

    The bytes it holds over those of a token; with sparse attention (``index_topk``) fewer:
    the kernel's window-capped count at the indexer keys' share (:func:`_model_terms`).
    """
    held = memory.sequence_kv_bytes(model, context_length) / model.kv_bytes_per_token
    sparse = np.isfinite(getattr(model, "index_topk", np.inf))
    if not np.any(sparse):
        return held
    read = _kv_read(context_length, model.full_attention_fraction, model.sliding_window)
    return np.where(sparse, read, held)[()]


def decode_step(model, batch_size, context_length) -> Step:
    """``batch_size`` sequences at ``context_length``, one token each."""
    return Step(batch_size, 0.0, batch_size * kv_tokens(model, context_length), 0.0)


def prefill_step(model, prompt_tokens, context_length) -> Step:
    """A prompt of ``prompt_tokens`` after ``context_length`` cached tokens, in one pass."""
    pairs = _prefill_pairs(prompt_tokens, context_length, model.full_attention_fraction,
                           model.sliding_window)
    return Step(0.0, prompt_tokens, kv_tokens(model, context_length), pairs, prompt_tokens)


def cost(model, gpu) -> StepCost:
    """The :class:`StepCost` of a model's and a group's coefficients (raw arrays).

    ``kv_bytes_per_token`` is the model's, weighted by the group's KV-traffic efficiency
    (``kv_traffic_scale``, exactly 1 by default): the model's own field stays the bytes a
    token holds, which the KV token counts divide by. The weight bytes are weighted by the
    group's ``weight_traffic_scale`` (a low-precision path's streaming, exactly 1 by default),
    the FLOPs per token as :func:`gemm_flops_per_token` weighs them.
    """
    fields = {k: getattr(model if hasattr(model, k) else gpu, k) for k in StepCost._fields}
    fields["kv_bytes_per_token"] = model.kv_bytes_per_token * gpu.kv_traffic_scale
    fields["flops_per_token"] = gemm_flops_per_token(model, gpu)
    # a low-precision path's weight streaming, likewise (``weight_traffic_scale``)
    for weights in ("nonexpert_weight_bytes", "expert_weight_bytes"):
        fields[weights] = fields[weights] * gpu.weight_traffic_scale
    return StepCost(**fields)


def gemm_flops_per_token(model, gpu):
    """The weight GEMMs' FLOPs per token as the group's peak times them [FLOP/token]: the
    model's ``flops_per_token``, its routed experts' part weighed by the group's
    ``expert_flops_scale`` (``1 / moe_compute_share``: exactly the model's by default, and
    for a dense model, whose experts' part is 0)."""
    scale = gpu.expert_flops_scale
    if not np.any(np.asarray(scale) != 1.0):       # 1 (default): the model's, to the bit
        return model.flops_per_token
    return model.flops_per_token + model.expert_flops_per_token * (scale - 1.0)


def step_time(model, gpu, step: Step):
    """Time of ``step`` [s]: :func:`mixed_step_time_kernel` on raw arrays."""
    return _step_time(*cost(model, gpu), *step)


def step_flops(model, step: Step):
    """FLOPs of a step: the kernel's ``work`` term, each FLOP counted once."""
    n_decode, n_prefill, kv_read, pairs = step[:4]
    logits = n_decode + np.minimum(n_prefill, 1.0)
    return (model.flops_per_token * (n_decode + n_prefill)
            + model.lm_head_flops_per_token * logits
            + model.attention_flops_per_pair
            * (kv_read + pairs * model.prefill_attention_scale))


def step_compute_time(model, gpu, step: Step):
    """Time of a step's arithmetic [s]: the GEMMs at their peak, attention at its own."""
    n_decode, n_prefill, kv_read, pairs = step[:4]
    logits = n_decode + np.minimum(n_prefill, 1.0)
    # the kernel's expression, so that both round alike
    half = gpu.gemm_half_tokens
    work = (gemm_flops_per_token(model, gpu) * (n_decode + n_prefill + half)
            + model.lm_head_flops_per_token * (logits + half)
            + model.attention_flops_per_pair
            * (kv_read + pairs * model.prefill_attention_scale)
            * (gpu.peak_flops / gpu.attention_peak_flops))
    return work / gpu.peak_flops


def step_memory_time(model, gpu, step: Step):
    """Time of a step's HBM traffic [s]: weights at the bandwidth (a low-precision path's at
    its own efficiency), KV at its own efficiency."""
    n_decode, n_prefill, kv_read = step[:3]
    kv = model.kv_bytes_per_token * (kv_read + n_prefill)
    # the KV and weight bytes' extra weights only: exactly step_bytes / bandwidth by default
    return (step_bytes(model, step) + kv * (gpu.kv_traffic_scale - 1.0)
            + weight_bytes(model, n_decode + n_prefill) * (gpu.weight_traffic_scale - 1.0)) \
        / gpu.bandwidth


def step_bytes(model, step: Step):
    """Bytes of a step: the kernel's ``traffic`` term."""
    n_decode, n_prefill, kv_read = step[:3]
    tokens = n_decode + n_prefill
    return (weight_bytes(model, tokens) + model.embedding_row_bytes * tokens
            + model.kv_bytes_per_token * (kv_read + n_prefill)
            + model.prefill_bytes_per_token * n_prefill
            + model.state_bytes_per_decode_token * n_decode)


def weight_bytes(model, tokens):
    """Weight bytes a step of ``tokens`` tokens reads: every non-expert weight, and the experts
    those tokens touch under uniform routing (the kernel's ``weight_bytes`` term)."""
    touched = model.n_experts * (1.0 - (1.0 - model.n_experts_per_token / model.n_experts)
                                 ** tokens)
    return model.nonexpert_weight_bytes + touched * model.expert_weight_bytes
