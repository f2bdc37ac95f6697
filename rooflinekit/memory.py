"""The memory model: KV cache size, weights and the concurrency budget (guide §2, §4.5, §5).

Takes specs or catalogue Datasets, and numbers, arrays or DataArrays (broadcast by dimension
name, labelled results with ``units``). Sizes are bytes; lengths are tokens.
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from rooflinekit._labels import (
    HELD_CONTEXT,
    PARAMETERS,
    formula,
    parameter_entries,
    spec_fields,
    spec_value,
)
from rooflinekit._validation import (
    check_bool,
    check_fraction,
    check_integer,
    check_nonnegative,
    check_one_of,
    check_range,
    check_type,
    real_number,
    show,
    whole_number,
)
from rooflinekit.hardware import GPU
from rooflinekit.models import ModelShape

__all__ = [
    "blocks_per_sequence",
    "engine_kv_cache",
    "group_memory_bytes",
    "kv_budget_tokens",
    "kv_bytes_left",
    "kv_bytes_per_sequence",
    "kv_bytes_per_token",
    "kv_copies",
    "max_concurrent_sequences",
    "max_context_length",
    "paged_waste_bytes",
    "recurrent_state_bytes",
    "sequences_in_budget",
    "SHARE_BASES",
    "usable_kv_bytes",
    "vllm_attention_block",
    "vllm_block_size",
    "vllm_kv_cache_groups",
    "weight_bytes",
]

DEFAULT_RESERVE = 0.10


def _check_tp(name, tp):
    check_integer(name, tp, lo=1)


def _check_reserve(name, reserve):
    check_fraction(name, reserve, hi_open=True)


def _check_flag(name, value):
    check_bool(name, value)


#: The memory formulas' parameters: the shared ones and those of the KV budget.
MEMORY_PARAMETERS = {**PARAMETERS, **parameter_entries("""
    replicate_kv : bool
        Count the KV copies a real engine keeps when ``tp`` exceeds the KV heads (or for MLA;
        :func:`kv_copies`). Default ``False``: the guide's simple model, every head stored once.
    block_size : int, array_like or xarray.DataArray
        Tokens per KV block [tokens], ≥ 1. Default 16.
    """)}

#: Checks by argument name, shared by the memory formulas.
_CHECKS = {"tp": _check_tp, "reserve": _check_reserve, "replicate_kv": _check_flag,
           "block_size": lambda name, v: check_integer(name, v, lo=1)}

# The fields each formula reads; a spec's unknown sliding window is no window.
_KV_FIELDS = ("kv_bytes_per_token_per_layer", "n_full_layers", "n_sliding_layers",
              "sliding_window")
_BUDGET_FIELDS = ("weight_bytes", "kv_bytes_per_token")
_NO_WINDOW = {"sliding_window": np.inf}
_STATE = "state_bytes_per_sequence"
#: A sliding layer's own KV bytes per token: a spec without it (a catalogue Dataset) has
#: sliding layers like its full ones.
_SLIDING = "sliding_kv_bytes_per_token_per_layer"


def _state_bytes(spec):
    """A spec's constant per-sequence state [bytes]; 0 for a catalogue Dataset or a laid-out
    namespace without the field (the catalogue holds no recurrent models)."""
    if isinstance(spec, xr.Dataset):
        return spec_value(spec, _STATE) if _STATE in spec else 0.0
    return getattr(spec, _STATE, 0.0)


def _budget_fields(*fields, state=False):
    """A reader of ``fields``, and of the KV heads where ``replicate_kv`` asks for them; with
    ``state``, of the constant per-sequence state too; with the per-layer KV bytes, of a
    sliding layer's own where the spec has them."""
    plain, heads = spec_fields(*fields, unknown=_NO_WINDOW), spec_fields("n_kv_heads", "is_mla")

    def read(spec, arguments):
        out = plain(spec, arguments)
        if arguments.get("replicate_kv"):
            out.update(heads(spec, arguments))
        if state:
            out[_STATE] = _state_bytes(spec)
        if "kv_bytes_per_token_per_layer" in fields and (
                _SLIDING in spec if isinstance(spec, xr.Dataset) else hasattr(spec, _SLIDING)):
            out[_SLIDING] = spec_value(spec, _SLIDING)
        return out
    return read


def _memory_formula(units, long_name, *, model=(), gpu=(), checks=None, parameters=None,
                    **kwargs):
    """:func:`rooflinekit._labels.formula` reading ``model`` and ``gpu`` fields, checks by name.

    ``parameters`` adds to (or takes precedence over) :data:`MEMORY_PARAMETERS`.
    """
    specs = {}
    if model:
        specs["model"] = model if callable(model) else spec_fields(*model, unknown=_NO_WINDOW)
    if gpu:
        specs["gpu"] = spec_fields(*gpu)
    return formula(units, long_name, checks={**_CHECKS, **(checks or {})}, specs=specs,
                   parameters={**MEMORY_PARAMETERS, **(parameters or {})}, **kwargs)


def _count(x):
    """Whole units of ``x`` as ``int64``; fractional sequences do not run. A count beyond
    2**63 (a group of GPUs no machine has) is refused rather than wrapped in the cast."""
    floored = np.floor(x)
    if np.any(np.asarray(floored) >= 2.0**63):
        raise ValueError(f"a count of {float(np.max(floored)):.3g} is beyond 2**63 and cannot be "
                         f"held exactly: check tp (the group's GPUs) and the GPU's memory")
    return floored.astype(np.int64)


@_memory_formula("bytes", "KV bytes per token", model=("kv_bytes_per_token",),
                 name="kv_bytes_per_token")
def kv_bytes_per_token(model):
    """KV-cache bytes one token adds to a sequence [bytes].

    ``2 · L · H_kv · d_head · b``; ``L · (kv_lora_rank + qk_rope_head_dim) · b`` for multi-head
    latent attention.

    Returns
    -------
    float or xarray.DataArray
        Bytes per token [bytes].

    Notes
    -----
    Uses KV heads, not attention heads: using attention heads overstates a GQA-8 model's cache
    8× (guide §10). For the guide's 70B-class model (L=80, H_kv=8, d=128, fp16) it is
    327,680 B = 320 KiB.

    References
    ----------
    .. [1] Serving-capacity guide §2.2.
    """
    return model.kv_bytes_per_token


@_memory_formula("bytes", "weight bytes", model=("weight_bytes",), name="weight_bytes")
def weight_bytes(model):
    """Bytes of the model's weights [bytes]: ``n_params × bytes_per_param``.

    Notes
    -----
    A checkpoint whose groups of weights are stored in formats of their own (a quantized one:
    gpt-oss's MXFP4 experts beside bf16 attention and embeddings) counts each group in its
    format, scales included (:attr:`ModelShape.weight_bytes`)::

        body_params · b_body + expert_params · b_expert + embedding_params · b_embedding

    References
    ----------
    .. [1] Serving-capacity guide §2.4 (70e9 × 2 B = 140 GB ≈ 130.4 GiB).
    .. [2] OpenAI, "gpt-oss-120b & gpt-oss-20b Model Card", arXiv:2508.10925, 2025 (MXFP4
       experts at 4.25 bits a weight; a 60.8 GiB checkpoint).
    """
    return model.weight_bytes


def sliding_layer_ratio(model):
    """A sliding layer's KV bytes per token over a full layer's [1], on plain arrays.

    ``sliding_kv_bytes_per_token_per_layer / kv_bytes_per_token_per_layer``; exactly 1 where
    the layers are alike, where the field is NaN, or where ``model`` lacks it (a spec read
    without it: its sliding layers are taken to be like its full ones).
    """
    sliding = getattr(model, _SLIDING, None)
    if sliding is None:
        return 1.0
    ratio = sliding / model.kv_bytes_per_token_per_layer
    if np.ndim(ratio) == 0:
        return 1.0 if np.isnan(ratio) else ratio
    return np.where(np.isnan(ratio), 1.0, ratio)


def sequence_kv_bytes(model, context_length):
    """KV bytes of one sequence, on plain arrays: :func:`kv_bytes_per_sequence`'s body.

    ``model`` is any object with the fields ``kv_bytes_per_token_per_layer``,
    ``n_full_layers``, ``n_sliding_layers`` and ``sliding_window`` (inf: no window) as numbers
    or arrays, and optionally ``sliding_kv_bytes_per_token_per_layer`` (the sliding layers'
    own; :func:`sliding_layer_ratio`); what the formulas of other modules call on their
    laid-out inputs.
    """
    ratio = sliding_layer_ratio(model)
    sliding = model.n_sliding_layers
    if np.ndim(ratio) or ratio != 1.0:      # alike layers round as they always have
        sliding = ratio * sliding
    return model.kv_bytes_per_token_per_layer * (
        model.n_full_layers * context_length
        + sliding * np.minimum(context_length, model.sliding_window))


@_memory_formula("bytes", "recurrent state bytes per sequence", model=_budget_fields(state=True),
                 name="recurrent_state_bytes")
def recurrent_state_bytes(model):
    """Bytes of the constant state one sequence holds in recurrent layers [bytes].

    Returns
    -------
    float or xarray.DataArray
        State bytes [bytes]; 0 for a model whose every layer is attention.

    Notes
    -----
    Linear-attention (Gated DeltaNet) and Mamba layers keep no KV cache: each holds, per
    sequence, a recurrent state and the last ``kernel − 1`` inputs of its causal convolution,
    whatever the context length (:attr:`ModelShape.state_bytes_per_sequence`, filled by
    :func:`rooflinekit.hf_config.shape_fields`)::

        Gated DeltaNet:  H_v · d_k · d_v · b_state + (kernel − 1) · (2 · H_k · d_k + H_v · d_v) · b
        Mamba-2:         H · d_head · N · b_state + (d_conv − 1) · (H · d_head + 2 · G · N) · b

    References
    ----------
    .. [1] Yang et al., "Gated Delta Networks: Improving Mamba2 with Delta Rule",
       arXiv:2412.06464, 2024; Qwen3-Next (Hugging Face ``transformers`` ``qwen3_next``).
    .. [2] Dao and Gu, "Transformers are SSMs" (Mamba-2), arXiv:2405.21060, 2024.
    """
    return model.state_bytes_per_sequence


@_memory_formula("bytes", "KV bytes per sequence", model=_budget_fields(*_KV_FIELDS, state=True),
                 checks={"context_length": check_nonnegative})
def kv_bytes_per_sequence(model, context_length):
    """KV-cache bytes of one sequence holding ``context_length`` tokens [bytes].

    Parameters
    ----------
    context_length : int, array_like or xarray.DataArray
        Tokens cached (prompt plus generated) [tokens], ≥ 0.

    Returns
    -------
    float, ndarray or xarray.DataArray
        KV bytes [bytes], with the constant state of any recurrent layers.

    Notes
    -----
    Full-attention layers cache every token; sliding-window layers cache at most ``sliding_window``
    tokens, so for such models the size stops being linear past the window::

        per_layer · (n_full_layers · C + n_sliding_layers · min(C, window)) + state

    Where the windowed layers have KV heads or head dims of their own (MiMo-V2-Flash), each
    kind counts its own bytes per token and layer::

        full · n_full_layers · C + sliding · n_sliding_layers · min(C, window) + state

    Only attention layers cache tokens; the linear-attention and Mamba layers of a hybrid model
    add their constant ``state`` (:func:`recurrent_state_bytes`) instead, once a sequence.
    Total KV is bytes/token × sequence length × batch size (guide §2.2).

    Chunked local attention (Llama 4, :attr:`ModelShape.attention_chunk_size`) counts as a
    window of the chunk's length: a chunked layer holds the tokens of the current chunk,
    ``((C − 1) mod chunk) + 1`` of them, at most ``min(C, chunk)``, the bound this formula
    (and a KV budget) takes. A sparse-attention indexer's keys (DeepSeek-V3.2) are part of
    ``per_layer`` (:attr:`ModelShape.kv_bytes_per_token_per_layer`).

    References
    ----------
    .. [1] Serving-capacity guide §2.2.
    .. [2] Jiang et al., "Mistral 7B", arXiv:2310.06825, 2023 (rolling-buffer cache).
    .. [3] Meta, Llama 4 (transformers ``Llama4TextConfig``: ``attention_chunk_size``,
       ``no_rope_layers``), 2025 (chunked local attention).
    """
    return sequence_kv_bytes(model, context_length) + model.state_bytes_per_sequence


@_memory_formula("bytes", "group memory", gpu=("memory_bytes",), order=("gpu", "tp"))
def group_memory_bytes(gpu, tp=1):
    """Memory of a tensor-parallel group of ``tp`` GPUs [bytes] (guide §5's simple model)."""
    return gpu.memory_bytes * tp


def usable_bytes(model, gpu, tp, reserve, extra_weight_bytes=0.0):
    """Usable KV bytes on plain arrays: what the weights (and any others) leave, less the reserve.

    :func:`usable_kv_bytes`'s body: ``model`` has ``weight_bytes``, ``gpu`` has
    ``memory_bytes`` (numbers or arrays).
    """
    free = np.maximum(gpu.memory_bytes * tp - model.weight_bytes - extra_weight_bytes, 0.0)
    return free * (1 - reserve)


@_memory_formula("bytes", "usable KV bytes", model=("weight_bytes",), gpu=("memory_bytes",),
                 order=("gpu", "tp", "model"))
def usable_kv_bytes(model, gpu, tp=1, reserve=DEFAULT_RESERVE):
    """Memory left for the KV cache on a group [bytes], floored at 0.

    ``(tp · memory − weights) · (1 − reserve)``: the working-space reserve (activations, CUDA
    context, allocator fragmentation) comes off what remains *after* the weights.

    Parameters
    ----------
    gpu : GPU or xarray.Dataset
        A GPU (or a ``GPU.group``), or a catalogue Dataset over ``gpu``.
    tp : int, array_like or xarray.DataArray
        Tensor-parallel degree, ≥ 1. Memory scales with it (guide §5).

    Returns
    -------
    float, ndarray or xarray.DataArray
        Usable KV bytes [bytes]; 0 where the weights do not fit.

    Notes
    -----
    Guide §2.4: a 70B fp16 model on 8 × 80 GiB has (640 GiB − 140 GB) × 0.9 = 458.65 GiB for KV;
    on one 80 GiB card the remainder is negative and the budget is 0.

    References
    ----------
    .. [1] Serving-capacity guide §2.4; ``docs/conventions.md``.
    """
    return usable_bytes(model, gpu, tp, reserve)


def kv_heads_per_rank(n_kv_heads, tp):
    """KV heads each tensor-parallel rank holds, on plain numbers or arrays [1].

    The one rule of every path (:func:`kv_copies`, :func:`engine_kv_cache`): ``ceil(H_kv /
    tp)``, at least one. Where ``tp`` divides the heads or they divide ``tp`` (the layouts
    vLLM accepts) it is vLLM's ``max(1, H_kv // tp)``; an uneven shard is padded.
    """
    return np.maximum(1.0, np.ceil(n_kv_heads / tp))


def _copies(model, tp):
    """KV copies per token across the group, on raw arrays."""
    heads = model.n_kv_heads
    copies = tp * kv_heads_per_rank(heads, tp) / heads
    return np.where(model.is_mla != 0, tp * 1.0, copies)


@_memory_formula("1", "KV copies per token across the group", model=("n_kv_heads", "is_mla"),
                 order=("model", "tp"))
def kv_copies(model, tp=1):
    """Copies of each token's KV that a tensor-parallel group stores [1].

    Tensor parallelism shards the KV heads across the ranks. With at least as many KV heads as
    ranks every head is stored once (1 copy: the guide's simple model). With more ranks than KV
    heads each rank still holds a whole head, so the group stores ``tp / H_kv`` copies (MQA on
    8 GPUs keeps 8); uneven shards are padded to ``ceil(H_kv / tp)`` heads per rank. A
    multi-head-latent cache has no heads to shard and every rank holds all of it (``tp``
    copies).

    Returns
    -------
    float, ndarray or xarray.DataArray
        Copies [1], ≥ 1.

    References
    ----------
    .. [1] vLLM ``vllm/config`` (``get_num_kv_heads``: ``max(1, total_num_kv_heads // tp)`` per
       rank) and DeepSeek-V2's MLA cache, replicated across tensor-parallel ranks.
    .. [2] Serving-capacity guide §5 (the simple model stores each head once).
    """
    return _copies(model, tp)


def _kv_budget(model, gpu, tp, reserve, replicate_kv, extra_weight_bytes=0.0):
    """Usable KV bytes, divided among the copies each token needs when heads are replicated."""
    budget = usable_bytes(model, gpu, tp, reserve, extra_weight_bytes)
    return budget / _copies(model, tp) if replicate_kv else budget


#: The shared-prefix arguments of :func:`max_concurrent_sequences` and
#: :func:`sequences_in_budget`: their checks and their documentation.
_PREFIX_CHECKS = {"context_length": lambda name, v: check_integer(name, v, lo=1),
                  "shared_prefix_tokens": lambda name, v: check_integer(name, v, lo=0),
                  "prefix_groups": lambda name, v: check_integer(name, v, lo=1),
                  "prefix_share": lambda name, v: check_range(name, v, lo=0, hi=1)}
_PREFIX_PARAMETERS = parameter_entries("""
    shared_prefix_tokens : int, array_like or xarray.DataArray
        Leading tokens every sequence shares (a system prompt, a document) [tokens], ≥ 0 and at
        most ``context_length``; its whole blocks are held once (prefix caching). Default 0.
    prefix_groups : int, array_like or xarray.DataArray
        Distinct shared prefixes of ``shared_prefix_tokens``, each held once [1], ≥ 1.
        Default 1.
    prefix_share : float, array_like or xarray.DataArray
        Share of the sequences that start with one of them [1], in [0, 1]; the others hold
        all their context. Default 1 (every sequence).
    """)


@_memory_formula("1", "max concurrent sequences",
                 model=_budget_fields(*_BUDGET_FIELDS, *_KV_FIELDS, state=True),
                 gpu=("memory_bytes",), order=("gpu", "tp", "model", "context_length"),
                 checks={**_PREFIX_CHECKS,
                         "draft_weight_bytes": lambda name, v: check_nonnegative(name, v)},
                 parameters={**HELD_CONTEXT, **_PREFIX_PARAMETERS, **parameter_entries("""
    draft_weight_bytes : float, array_like or xarray.DataArray
        Weights of a draft model held beside the target's for speculative decoding [bytes],
        ≥ 0 (:func:`weight_bytes` of the draft); they come off the group's memory before the
        reserve, as the target's do. Default 0 (no draft).
    """)})
def max_concurrent_sequences(model, gpu, context_length, tp=1, reserve=DEFAULT_RESERVE, *,
                             replicate_kv=False, shared_prefix_tokens=0, block_size=16,
                             draft_weight_bytes=0.0, prefix_groups=1, prefix_share=1.0):
    """How many sequences of ``context_length`` tokens fit in the KV budget (floored).

    Returns
    -------
    int, ndarray of int64 or xarray.DataArray
        Whole sequences [1]; 0 when the model does not fit.

    Notes
    -----
    Concurrency is a memory question, not a FLOP question (guide §10). With the guide's 70B-class
    model on 8 × 80 GiB at 8,192 tokens: GQA-8 183, MHA 22, MQA 1,467 (``docs/conventions.md``).

    With a shared prefix of P tokens, an engine shares whole KV blocks only (vLLM's prefix
    cache hashes full blocks), so ``S = ⌊P / block_size⌋ · block_size`` tokens are held once and
    each sequence holds the rest:

    .. math:: N = \\left\\lfloor \\frac{B - kv(S)}{kv(C) - kv(S)} \\right\\rfloor

    with B the budget and kv(·) the bytes of a sequence of that length (window-capped layers
    count what the window keeps), and at least one token of its own per sequence. With ``G``
    prefixes (``prefix_groups``) each held once and a share ``s`` of the sequences starting
    with one (``prefix_share``), the others holding all their context:

    .. math:: N = \\left\\lfloor \\frac{B - G\\,kv(S)}{s\\,(kv(C) - kv(S)) + (1 - s)\\,kv(C)}
              \\right\\rfloor

    A draft model's weights ``W_d`` shrink the budget to ``(tp · memory − W − W_d)(1 −
    reserve)``; the draft's own KV cache (small beside the target's) is not counted. A hybrid
    model's constant recurrent state (:func:`recurrent_state_bytes`) adds to each sequence's
    bytes, shared prefix or not.

    References
    ----------
    .. [1] Serving-capacity guide §2.3–2.4, §4.5 (prefix sharing).
    .. [2] Kwon et al., PagedAttention, SOSP 2023 (block-level sharing).
    """
    if np.any(shared_prefix_tokens > context_length):
        raise ValueError(f"shared_prefix_tokens must be at most context_length (a prefix "
                         f"longer than the prompt); got {show(shared_prefix_tokens)} with "
                         f"context_length {show(context_length)}")
    budget = _kv_budget(model, gpu, tp, reserve, replicate_kv, draft_weight_bytes)
    return _sequences(model, budget, context_length, shared_prefix_tokens, block_size,
                      prefix_groups, prefix_share)


def _sequences(model, budget, context_length, shared_prefix_tokens=0, block_size=16,
               prefix_groups=1, prefix_share=1.0):
    """Whole sequences of ``context_length`` in ``budget`` bytes, the shared prefixes' whole
    blocks held once: :func:`max_concurrent_sequences`'s count on plain arrays."""
    shared = np.floor_divide(shared_prefix_tokens, block_size) * block_size
    prefix = sequence_kv_bytes(model, shared)
    held_once = prefix_groups * prefix
    whole = sequence_kv_bytes(model, context_length)
    # a sequence served holds at least one token of its own (the next one it writes)
    per_sequence = (prefix_share * np.maximum(whole - prefix, sequence_kv_bytes(model, 1))
                    + (1.0 - prefix_share) * whole)
    # a recurrent layer's state is each sequence's own, never shared
    per_sequence = per_sequence + model.state_bytes_per_sequence
    return _count(np.maximum(budget - held_once, 0.0) / per_sequence)


@_memory_formula("1", "max concurrent sequences",
                 model=_budget_fields(*_KV_FIELDS, state=True),
                 order=("model", "context_length"),
                 checks={**_PREFIX_CHECKS,
                         "kv_budget_bytes": lambda name, v: check_nonnegative(name, v)},
                 parameters={**HELD_CONTEXT, **_PREFIX_PARAMETERS, **parameter_entries("""
    kv_budget_bytes : float, array_like or xarray.DataArray
        The group's KV budget [bytes], ≥ 0: an engine's (:func:`engine_kv_cache`'s
        ``available_bytes`` × tp) where :func:`max_concurrent_sequences` takes the guide's.
    """)})
def sequences_in_budget(model, kv_budget_bytes, context_length, *, shared_prefix_tokens=0,
                        block_size=16, prefix_groups=1, prefix_share=1.0):
    """How many sequences of ``context_length`` tokens fit in a given KV budget (floored).

    Returns
    -------
    int, ndarray of int64 or xarray.DataArray
        Whole sequences [1]; 0 where the budget holds none.

    Notes
    -----
    :func:`max_concurrent_sequences`'s count with the budget ``B`` given: the shared
    prefixes' whole blocks ``S`` held once, each sequence the rest of its ``C`` tokens, and a
    hybrid model's recurrent state ``r`` a sequence:

    .. math:: N = \\left\\lfloor \\frac{B - G\\,kv(S)}{s\\,(kv(C) - kv(S)) + (1 - s)\\,kv(C)
              + r} \\right\\rfloor

    References
    ----------
    .. [1] Kwon et al., PagedAttention, SOSP 2023 (block-level sharing).

    See Also
    --------
    max_concurrent_sequences : the same count in the guide's budget.
    engine_kv_cache : an engine's budget.
    """
    if np.any(shared_prefix_tokens > context_length):
        raise ValueError(f"shared_prefix_tokens must be at most context_length (a prefix "
                         f"longer than the prompt); got {show(shared_prefix_tokens)} with "
                         f"context_length {show(context_length)}")
    return _sequences(model, kv_budget_bytes, context_length, shared_prefix_tokens,
                      block_size, prefix_groups, prefix_share)


@_memory_formula("tokens", "KV budget in tokens", model=_budget_fields(*_BUDGET_FIELDS),
                 gpu=("memory_bytes",), order=("gpu", "tp", "model"),
                 checks={"draft_weight_bytes": lambda name, v: check_nonnegative(name, v)},
                 parameters=parameter_entries("""
    draft_weight_bytes : float, array_like or xarray.DataArray
        Weights of a draft model held beside the target's for speculative decoding [bytes],
        ≥ 0, off the group's memory before the reserve, as in
        :func:`max_concurrent_sequences`. Default 0 (no draft).
    """))
def kv_budget_tokens(model, gpu, tp=1, reserve=DEFAULT_RESERVE, *, replicate_kv=False,
                     draft_weight_bytes=0.0):
    """Tokens of KV cache the budget holds [tokens] (floored), the simulator's ``kv_budget_tokens``.

    ``floor(usable_kv_bytes / kv_bytes_per_token)``, with a draft model's weights off the memory
    beside the target's. For sliding-window models this counts every token at the full
    per-token size, which is conservative once sequences outgrow the window. ``replicate_kv``
    divides the budget among the copies of :func:`kv_copies`. A hybrid model's recurrent state
    is per sequence, not per token, and is not taken off here
    (:func:`max_concurrent_sequences` counts it).

    References
    ----------
    .. [1] Serving-capacity guide §2.4, §4.4.
    """
    budget = _kv_budget(model, gpu, tp, reserve, replicate_kv, draft_weight_bytes)
    return _count(budget / model.kv_bytes_per_token)


def _whole_where_finite(result):
    """A Python number as ``int`` where finite (an unlimited length stays ``inf``)."""
    if isinstance(result, float) and np.isfinite(result):
        return int(result)
    return result


@_memory_formula("tokens", "max context length",
                 model=_budget_fields(*_BUDGET_FIELDS, *_KV_FIELDS, state=True),
                 gpu=("memory_bytes",), order=("gpu", "tp", "model"), cast=_whole_where_finite)
def max_context_length(model, gpu, tp=1, reserve=DEFAULT_RESERVE, *, replicate_kv=False):
    """The longest context one sequence can hold in the KV budget [tokens] (floored).

    Past a sliding window only the full-attention layers keep growing, so a model whose every
    layer is windowed fits any length once the window fits: the result is then ``inf`` (float).
    0 when the model does not fit. ``replicate_kv`` as for :func:`max_concurrent_sequences`. A
    hybrid model's constant recurrent state comes off the budget first.

    References
    ----------
    .. [1] Serving-capacity guide §2.4.
    """
    # a hybrid model's one sequence holds its constant recurrent state first
    budget = np.maximum(_kv_budget(model, gpu, tp, reserve, replicate_kv)
                        - model.state_bytes_per_sequence, 0.0)
    full_rate = model.kv_bytes_per_token_per_layer * model.n_full_layers  # past the window
    all_rate = model.kv_bytes_per_token                                   # inside it
    window = model.sliding_window
    within = np.floor(budget / all_rate)
    left = budget - all_rate * np.minimum(window, within)      # what remains at the window
    safe_rate = np.where(full_rate > 0, full_rate, 1.0)
    beyond = np.where(full_rate > 0, np.floor(left / safe_rate), np.inf)
    return np.where(within < window, within, window + beyond)


def _blocks(context_length, block_size):
    return -(-context_length // block_size)


def _int64_when_labelled(result):
    """Whole blocks as ``int64`` on labelled results (plain ones keep their inputs' dtype)."""
    return result.astype(np.int64) if isinstance(result, xr.DataArray) else result


@_memory_formula("1", "KV blocks per sequence", exact=("context_length", "block_size"),
                 checks={"context_length": lambda name, v: check_integer(name, v, lo=0)},
                 cast=_int64_when_labelled)
def blocks_per_sequence(context_length, block_size=16):
    """KV blocks a paged cache gives a sequence of ``context_length`` tokens: ``ceil(C / block)``.

    References
    ----------
    .. [1] Kwon et al., "Efficient Memory Management for Large Language Model Serving with
       PagedAttention", SOSP 2023; guide §4.5.
    """
    return _blocks(context_length, block_size)


@_memory_formula("bytes", "bytes wasted in the last block", model=("kv_bytes_per_token",),
                 order=("context_length", "block_size", "model"),
                 checks={"context_length": lambda name, v: check_integer(name, v, lo=0)})
def paged_waste_bytes(model, context_length, block_size=16):
    """Bytes reserved but unused in a sequence's last, partly filled block [bytes].

    A paged cache wastes at most one partial block per sequence; contiguous reservation of the
    final length wastes everything between the current and the final length (guide §4.5).

    References
    ----------
    .. [1] Kwon et al., SOSP 2023 (PagedAttention); guide §4.5.
    """
    empty = _blocks(context_length, block_size) * block_size - context_length
    return empty * model.kv_bytes_per_token


#: vLLM's attention block sizes are multiples of this [tokens] (its FlashAttention backends').
VLLM_BLOCK_ALIGNMENT = 16


def vllm_attention_block(model, gpu, block_size=16) -> int:
    """The KV block a plan asks vLLM for [tokens]: ``block_size``, or for a model with
    multi-head latent attention (MLA) the smallest multiple of the block vLLM's first-choice
    MLA kernel on ``gpu`` takes that is at least ``block_size``.

    Parameters
    ----------
    model : ModelShape
        The model (MLA where it has a ``kv_lora_rank``; sparse MLA where it also has a
        sparse-attention indexer, ``indexer_bytes_per_token_per_layer > 0``).
    gpu : GPU
        The GPU; its :attr:`~rooflinekit.GPU.compute_capability` picks the kernel (``None``:
        ``block_size`` is kept).
    block_size : int
        The block size asked for [tokens], >= 1 (default 16, vLLM's default through 0.33).

    Returns
    -------
    int
        ``k·⌈block_size / k⌉`` [tokens] for an MLA model, ``k`` the kernel's block (below);
        ``block_size`` for any other model, or on a GPU without a compute capability.

    Notes
    -----
    From 0.18.0 vLLM picks its attention backend with the block asked for (``--block-size``)
    as a constraint: a block its first choice does not take makes it fall back to a slower
    backend (Triton MLA, with a warning that the block "precluded higher-priority backends"),
    or, for sparse MLA, refuse to start ("No valid attention backend found"); 0.17 and earlier
    raised the block instead [1]_. Without ``--block-size`` it takes the first choice's own
    block. The first choices and the blocks they take (0.18.0 to 0.34.0) [1]_:

    ======================================  ===========================  ====
    model, GPU                              backend                      k
    ======================================  ===========================  ====
    sparse MLA (DeepSeek-V3.2), any         the indexer's cache          64
    MLA, compute capability 10.x            FlashInfer MLA (32 or 64)    32
    MLA, 9.x, 8-bit KV cache                FlashMLA                     64
    MLA, 9.x, 16-bit KV cache               FlashAttention MLA           16
    MLA, 8.x or 12.x                        Triton MLA                   16
    ======================================  ===========================  ====

    DeepSeek-R1 on a B200 therefore takes 32-token blocks; asked for 16, vLLM runs it with
    Triton MLA. Other attention takes 16 on every NVIDIA GPU (FlashAttention, FlashInfer).

    References
    ----------
    .. [1] vLLM ``vllm/platforms/cuda.py`` (``_get_backend_priorities``, the "precluded"
       warning; "Forcing kv cache block size" until 0.17.1) and each MLA backend's
       ``get_supported_kernel_block_sizes`` (``vllm/v1/attention/backends/mla/``), releases
       0.18.0, 0.20.0, 0.24.0, 0.29.0 and 0.34.0.

    See Also
    --------
    vllm_block_size : the block vLLM holds a model's KV in, a hybrid's enlarged.
    """
    check_type("model", model, ModelShape)
    check_type("gpu", gpu, GPU)
    block_size = whole_number("block_size", block_size, lo=1)
    capability = gpu.compute_capability
    if model.kv_lora_rank is None or capability is None:
        return block_size
    major = int(capability)
    if float(model.indexer_bytes_per_token_per_layer) > 0.0:
        unit = 64                       # the indexer's cache decides the block
    elif major == 10:
        unit = 32                       # FlashInfer MLA: 32 or 64
    elif major == 9 and float(model.kv_bytes_per_element) < 2.0:
        unit = 64                       # FlashMLA; FlashAttention MLA takes a 16-bit cache only
    else:
        unit = VLLM_BLOCK_ALIGNMENT     # FlashAttention MLA, Triton MLA: multiples of 16
    return unit * math.ceil(block_size / unit)


def vllm_block_size(model, gpu, tp=1, *, block_size=16,
                    block_alignment=VLLM_BLOCK_ALIGNMENT) -> int:
    """The KV block size vLLM runs a model with [tokens]: ``block_size``, the block its MLA
    kernel takes for a model with multi-head latent attention (:func:`vllm_attention_block`),
    or for a hybrid model (attention beside linear-attention or Mamba layers) the larger block
    whose one-layer page holds one layer's recurrent state.

    Parameters
    ----------
    model : ModelShape
        The model; its :attr:`~rooflinekit.ModelShape.state_bytes_per_sequence` is the state.
    gpu : GPU
        One GPU of the replica (its KV heads per rank, as
        :func:`rooflinekit.memory.engine_kv_cache` counts them).
    tp : int
        Tensor-parallel degree [1], >= 1.
    block_size : int
        The block size asked for [tokens], >= 1 (vLLM's ``--block-size``, default 16).
    block_alignment : int
        The attention backend's kernel block size the enlarged block is a multiple of
        [tokens], >= 1: 16 (default) for vLLM's FlashAttention backends; the published runs with
        MTP speculative decoding show 64 (tests/test_engine_kv_cache_state.py).

    Returns
    -------
    int
        ``max(b, m·⌈s / (m·a)⌉)`` [tokens] for a hybrid model (``m`` the alignment); ``b``
        for any other, ``b`` the block asked for as :func:`vllm_attention_block` takes it
        (``block_size`` but for an MLA model).

    Notes
    -----
    ``a`` is one attention layer's KV bytes per token on one rank and ``s = S / (tp·L_s)``
    one recurrent layer's state on one rank (``S`` the state per sequence over its ``L_s``
    linear-attention and Mamba layers). vLLM raises a smaller block (the default 16, or one
    given) to this size so that every layer's page is one size, and pads the state's page to
    it [1]; a request's attention KV is then held in blocks this long. Qwen3-Next-80B-A3B at
    TP1: ``a = 2,048 B``, ``s = 2,146,304 B``, 1,056 tokens. vLLM 0.24 takes the same rule
    with prefix caching of states ("align"; "all" aligns to the Mamba kernels' chunk instead):
    its logs show blocks of 784 and 2,096 tokens, multiples of 16 but not of 64, and with MTP
    blocks of 1,600 tokens where 16 gives 1,568 (tests/test_engine_kv_cache_state.py).

    References
    ----------
    .. [1] vLLM ``vllm/model_executor/models/config.py``,
       ``HybridAttentionMambaModelConfig.verify_and_update_config``.

    See Also
    --------
    engine_kv_cache : vLLM's budget, in these blocks.
    rooflinekit.batching.replica_state_tokens : the state's share of a replica's budget.
    """
    check_type("model", model, ModelShape)
    check_type("gpu", gpu, GPU)
    tp = whole_number("tp", tp, lo=1)
    block_size = vllm_attention_block(model, gpu, block_size)   # checks block_size too
    align = whole_number("block_alignment", block_alignment, lo=1)
    layers = model.n_recurrent_layers
    if float(model.state_bytes_per_sequence) == 0.0 or layers == 0:
        return block_size
    attention = _attention_bytes_per_token(model, tp) / model.n_attention_layers   # a, one rank
    state = float(model.state_bytes_per_sequence) / tp / layers          # s, one rank
    return max(block_size, align * math.ceil(state / (align * attention)))


def _attention_bytes_per_token(model: ModelShape, tp: int) -> float:
    """KV bytes one token keeps over every attention layer on one rank of a ``tp`` group, as
    vLLM allocates them: ``max(1, H_kv // tp)`` heads a rank (replicated when ``tp > H_kv``;
    an MLA latent on every rank), each layer kind with its own heads and dims."""
    if model.kv_lora_rank is not None:
        return model.kv_bytes_per_token_per_layer * model.n_kv_layers
    if model.sliding_kv_bytes_per_token_per_layer == model.kv_bytes_per_token_per_layer \
            and model.v_head_dim is None:
        kv_heads = int(kv_heads_per_rank(model.n_kv_heads, tp))
        return 2 * kv_heads * model.head_dim * model.kv_bytes_per_element * model.n_kv_layers
    # layers of each kind with KV heads and head dimensions of their own (MiMo-V2-Flash)
    return sum(layers * int(kv_heads_per_rank(heads, tp)) * (key + value)
               * model.kv_bytes_per_element for layers, heads, key, value in model.kv_layouts)


#: vLLM's ``--mamba-cache-mode`` values: a request's state blocks in each state group are
#: 1 ("none"), 2 ("align", vLLM's mode when prefix caching is on: the block being written and
#: the last one at a block boundary) or one a block of context ("all"), each plus one a
#: speculative token.
MAMBA_CACHE_MODES = ("none", "align", "all")

#: What an engine's memory share is a share of (:func:`engine_kv_cache`'s ``share_of``):
#: the memory the driver reports (vLLM's ``--gpu-memory-utilization``, SGLang's
#: ``--mem-fraction-static``), or what is left of it after the weights and the engine's own
#: memory (TensorRT-LLM's ``free_gpu_memory_fraction``).
SHARE_BASES = ("total", "free")


def vllm_kv_cache_groups(model, *, draft_layers=0) -> tuple[int, int, int, int]:
    """How vLLM's hybrid KV-cache manager groups a model's layers: ``(layers per group,
    attention groups, state groups, sliding-window groups)`` [1].

    Parameters
    ----------
    model : ModelShape
        The model: its full-attention and sliding-window (or chunked-local) layers
        (``n_kv_layers``, ``n_sliding_layers`` of them windowed) and recurrent ones
        (linear-attention and Mamba layers).
    draft_layers : int
        Attention layers of a draft in the same pool [1], >= 0 (an MTP module's: vLLM groups
        the drafter's layers with the target's). Default 0.

    Returns
    -------
    tuple of int
        ``(g, ⌈L_a / g⌉, ⌈L_s / g⌉, ⌈L_w / g⌉)``; ``(L_a, 1, 0, 0)`` for a model whose
        layers are all of one kind.

    Notes
    -----
    vLLM puts the layers of one kind (full attention ``L_a``, recurrent state ``L_s``, sliding
    window ``L_w``; a kind with no layers is left out) in groups of ``g`` layers that share one
    pool of pages (the last group of a kind padded to ``g``): ``g`` the fewest layers of a
    kind, or the most where that is under 1.25 × the fewest, to spare padding [1].
    Qwen3-Next-80B-A3B: 12 attention and 36 Gated DeltaNet layers, groups of 12, one
    attention and three state groups. gpt-oss-120b: 18 full and 18 sliding layers, one group
    of each. Gemma-3-27B: 10 full and 52 sliding layers, groups of 10, one full and six
    sliding (eight layers of padding). A sliding layer whose KV bytes differ from a full
    layer's (its own heads or head dims) is not grouped so here: every attention layer is
    counted in one group.

    References
    ----------
    .. [1] vLLM ``vllm/v1/core/kv_cache_utils.py``, ``_get_kv_cache_groups_uniform_page_size``.

    See Also
    --------
    engine_kv_cache : the budget these groups page.
    """
    check_type("model", model, ModelShape)
    draft_layers = whole_number("draft_layers", draft_layers, lo=0)
    sliding = int(model.n_sliding_layers or 0) if _windows_grouped(model) else 0
    attention = int(model.n_kv_layers) - sliding + draft_layers
    state = int(model.n_recurrent_layers)
    if float(model.state_bytes_per_sequence) == 0.0:
        state = 0
    counts = [c for c in (attention, state, sliding) if c > 0]
    if len(counts) < 2:              # one kind: one group of every layer
        return attention + sliding + state, int(attention > 0), int(state > 0), int(sliding > 0)
    fewest, most = min(counts), max(counts)
    group = most if most < 1.25 * fewest else fewest
    return group, -(-attention // group), -(-state // group), -(-sliding // group)


def _windows_grouped(model) -> bool:
    """Whether vLLM pages ``model``'s sliding-window layers in groups of their own: a window,
    and sliding layers whose KV bytes a token are a full layer's (one page size)."""
    return (model.sliding_window is not None and bool(model.n_sliding_layers)
            and float(model.sliding_kv_bytes_per_token_per_layer)
            == float(model.kv_bytes_per_token_per_layer))


def kv_bytes_left(total_bytes, share, kept_bytes, share_of="total"):
    """The KV bytes an engine's memory share leaves on one GPU (plain arithmetic).

    Parameters
    ----------
    total_bytes : float
        The memory the driver reports on the GPU [bytes].
    share : float
        The engine's share, in (0, 1].
    kept_bytes : float
        What the GPU holds beside the KV cache: weights and the engine's own memory [bytes].
    share_of : {"total", "free"}
        What ``share`` is a share of (:data:`SHARE_BASES`).

    Returns
    -------
    kv_bytes : float
        ``share · total − kept`` (a share of the total: vLLM, SGLang) or ``share · (total −
        kept)`` (a share of what is left: TensorRT-LLM) [bytes]; may be negative.
    weight_scale : float
        The KV bytes one more byte kept takes: 1, or ``share`` [1].

    Notes
    -----
    The one place the two rules are written: :func:`engine_kv_cache`,
    :func:`rooflinekit.profiles.layout_kv_bytes`, the sweep grid and the launch commands
    read them here.
    """
    if share_of == "free":
        return share * (total_bytes - kept_bytes), share
    return share * total_bytes - kept_bytes, 1.0


def engine_kv_cache(model, gpu, tp=1, *, gpu_memory_utilization=0.9, activation_peak_bytes=0.0,
                    non_torch_bytes=0.0, weight_layout_bytes=0.0, block_size=16, max_model_len=None,
                    mamba_cache_mode="none", num_speculative_tokens=0, draft_layers=0,
                    block_alignment=VLLM_BLOCK_ALIGNMENT, max_num_batched_tokens=None,
                    share_of="total"):
    """The KV budget as vLLM computes and logs it, per GPU of a tensor-parallel group.

    Parameters
    ----------
    model : ModelShape
        The model.
    gpu : GPU
        One GPU (not a group: vLLM budgets each rank).
    tp : int
        Tensor-parallel degree, ≥ 1; each rank holds ``weights / tp`` and
        ``max(1, H_kv // tp)`` KV heads (heads are replicated when ``tp > H_kv``; an MLA latent
        cache is replicated on every rank).
    gpu_memory_utilization : float
        vLLM's ``--gpu-memory-utilization``, in (0, 1]. Default 0.9.
    activation_peak_bytes, non_torch_bytes : float
        Peak activation memory and non-torch memory (CUDA context, NCCL buffers) per GPU [bytes],
        as vLLM's memory profiling reports them.
    weight_layout_bytes : float
        What the engine's kernels hold beside the checkpoint's weights on each GPU [bytes], ≥ 0:
        padded or duplicated tensors of their layouts
        (:func:`rooflinekit.profiles.mxfp4_layout_bytes`); part of the weights vLLM logs.
        Default 0.
    block_size : int
        Tokens per KV block, ≥ 1 (vLLM's ``--block-size``). Default 16. A hybrid model runs
        vLLM's enlarged block instead where it is larger, and an MLA model its kernel's
        (:func:`vllm_block_size`).
    max_model_len : int, optional
        Tokens per request for the concurrency figure; default the model's ``max_context``.
    mamba_cache_mode : {"none", "align", "all"}
        vLLM's ``--mamba-cache-mode`` for a hybrid model's state (:data:`MAMBA_CACHE_MODES`):
        "none" (default; one state block a request in each state group), "align" (two: vLLM's
        mode when prefix caching is on) or "all" (one a block of context). No effect on a model
        without recurrent layers.
    num_speculative_tokens : int
        Draft tokens a step (vLLM's ``num_speculative_tokens``), >= 0: each adds a state
        block a request in each state group. Default 0.
    draft_layers : int
        Attention layers of a draft that keep their KV in the same pool, >= 0, each of the
        target's KV heads and head dim (an MTP module's layers, which vLLM groups with the
        target's: Qwen3.5's one). Default 0.
    block_alignment : int
        The kernel block size a hybrid's enlarged block is a multiple of [tokens], >= 1
        (:func:`vllm_block_size`). Default 16.
    max_num_batched_tokens : int, optional
        vLLM's per-step token budget [tokens], >= 1: a sliding-window group's most a request
        holds in the concurrency figure counts one chunk of it. Default ``None``:
        ``max_model_len`` (a window group then counts the whole context and one block).
        No effect on a model without sliding-window layers.
    share_of : {"total", "free"}
        What ``gpu_memory_utilization`` is a share of (:data:`SHARE_BASES`): ``"total"``
        (default), the memory the driver reports (vLLM's and SGLang's rule); ``"free"``, what
        the weights and the engine's own memory leave of it (TensorRT-LLM's
        ``free_gpu_memory_fraction``).

    Returns
    -------
    dict
        ``weight_scale`` (the KV bytes one more byte of weights on the GPU takes: 1 under a
        share of the total, the share under a share of what is free), ``available_bytes`` (per GPU), ``num_blocks`` (blocks of ``bytes_per_block``),
        ``kv_cache_tokens`` (``num_blocks × block_size``: the pool in tokens of the attention
        layers, vLLM's "GPU KV cache size: N tokens" for a model of one KV-cache group),
        ``capacity_tokens`` (``int(max_concurrency × max_model_len)``: the "GPU KV cache size"
        vLLM 0.24 logs, for every model), ``max_concurrency`` ("Maximum concurrency for L
        tokens per request: X x"), ``kv_cache_groups`` (vLLM's group count, attention and
        state), ``bytes_per_block`` (per GPU) and ``block_size`` (the block it counts in
        [tokens]).

    Notes
    -----
    ``available = total × gpu_memory_utilization − (weights/tp + layout + activation peak +
    non-torch)``,
    then ``num_blocks = available // bytes_per_block``; ``total`` is the memory the driver
    reports (:attr:`GPU.visible_memory_per_gpu`: 79.19 GiB on an 80 GiB H100), which vLLM takes
    its share of. Unlike :func:`usable_kv_bytes` the
    reserve is a share of the *whole* memory, and activations are measured, not guessed.
    TensorRT-LLM's PyTorch backend (``share_of="free"``) takes its share of what is left
    instead [2]: ``available = gpu_memory_utilization × (total − (weights/tp + layout +
    activation peak + non-torch))``, the peak of its profiling pass (torch and non-torch, its
    temporary cache given back) taken off before the fraction.

    A hybrid model is paged as vLLM's hybrid KV-cache manager pages it [1]: its layers in
    groups of ``g`` (:func:`vllm_kv_cache_groups`), one page a layer of a block, every page the
    same size (the attention block enlarged by :func:`vllm_block_size` until one layer's page
    holds one layer's state, the state's page padded to it), so ``bytes_per_block`` is ``g``
    pages. A request holds ``⌈L / B⌉`` blocks in each attention group and, in each state group,
    ``k + n_spec`` blocks (``k`` 1, 2 or ``⌈L / B⌉`` by ``mamba_cache_mode``):

    .. math:: c = \\frac{N}{G_a \\lceil L / B \\rceil + G_s (k + n_{spec})}

    (``get_max_concurrency_for_kv_cache_config``). A model with sliding-window layers
    (:func:`vllm_kv_cache_groups`: ``G_w`` groups of them) pages each group apart, and a request
    holds at most ``⌈min(W − 1 + T, L) / B⌉ + 1`` blocks in each (``W`` the window, ``T``
    ``max_num_batched_tokens``; a chunked-local group ``⌈min(W + T, L) / B⌉``, ``W`` its
    chunk); the pool is then ``N_g`` pages of one group, ``g`` layers:

    .. math:: c = \\frac{N_g}{G_a \\lceil L / B \\rceil + G_w (\\lceil \\min(W - 1 + T, L) / B
              \\rceil + 1)}

    (gpt-oss-20b at TP 2, 59.32 GiB: 323,966 pages of 12 layers over 512 + 513 blocks,
    316.06, where its log prints 316.07 of an unrounded figure; Gemma-3-27B, 10 full and 52 sliding layers in 1 + 6 groups of
    10: 4.46). ``kv_cache_tokens`` stays the pool in blocks of every layer. Before vLLM's hybrid log fix (in 0.19 and
    earlier) the "GPU KV cache size" line printed ``N // (G_a + G_s) × B``
    (:func:`rooflinekit.calibrate.compare_engine_log` reads which a log prints).

    References
    ----------
    .. [1] vLLM ``vllm/v1/worker/gpu_worker.py`` (``determine_available_memory``),
       ``vllm/v1/core/kv_cache_utils.py`` (``get_max_concurrency_for_kv_cache_config``,
       ``_report_kv_cache_config``) and ``vllm/v1/kv_cache_interface.py``
       (``MambaSpec.max_memory_usage_bytes``).
    .. [2] NVIDIA TensorRT-LLM, ``tensorrt_llm/_torch/pyexecutor/_util.py``
       (``KvCacheCreator._cal_max_memory``: ``(total_gpu_memory − peak_memory + tmp_kv) ×
       free_gpu_memory_fraction``); the logs of ``tests/data/engine_logs/trtllm_memory.csv``.

    See Also
    --------
    vllm_block_size, vllm_kv_cache_groups
    """
    check_type("model", model, ModelShape)
    check_type("gpu", gpu, GPU)
    _check_tp("tp", tp)
    check_range("gpu_memory_utilization", gpu_memory_utilization, lo=0, hi=1, lo_open=True)
    check_nonnegative("activation_peak_bytes", activation_peak_bytes)
    check_nonnegative("non_torch_bytes", non_torch_bytes)
    check_nonnegative("weight_layout_bytes", weight_layout_bytes)
    check_integer("block_size", block_size, lo=1)
    # one number each, in double precision (a float16 65,504 overflows in its own arithmetic)
    gpu_memory_utilization = real_number("gpu_memory_utilization", gpu_memory_utilization)
    activation_peak_bytes = real_number("activation_peak_bytes", activation_peak_bytes)
    non_torch_bytes = real_number("non_torch_bytes", non_torch_bytes)
    weight_layout_bytes = real_number("weight_layout_bytes", weight_layout_bytes)
    if max_model_len is None:
        max_model_len = model.max_context
        if max_model_len is None:
            raise ValueError("max_model_len is required: the model has no max_context")
    check_integer("max_model_len", max_model_len, lo=1)
    if max_num_batched_tokens is not None:
        max_num_batched_tokens = whole_number("max_num_batched_tokens", max_num_batched_tokens,
                                              lo=1)
    check_one_of("mamba_cache_mode", mamba_cache_mode, MAMBA_CACHE_MODES)
    check_one_of("share_of", share_of, SHARE_BASES)
    num_speculative_tokens = whole_number("num_speculative_tokens", num_speculative_tokens, lo=0)
    draft_layers = whole_number("draft_layers", draft_layers, lo=0)
    tp, max_model_len = int(tp), int(max_model_len)
    # a hybrid's attention KV in vLLM's enlarged block, whose one-layer page holds a state
    block_size = vllm_block_size(model, gpu, tp, block_size=int(block_size),
                                 block_alignment=block_alignment)
    group, attention_groups, state_groups, sliding_groups = vllm_kv_cache_groups(
        model, draft_layers=draft_layers)
    attention = _attention_bytes_per_token(model, tp)            # every target layer, a token
    per_layer = attention / model.n_kv_layers                    # one layer's page, a token
    # one block is one page in each of a group's g layers (a pure-attention model: every layer)
    pages = (attention + per_layer * draft_layers if state_groups == 0 else per_layer * group)
    bytes_per_block = pages * block_size
    per_gpu = gpu.visible_memory_per_gpu          # the driver's total, vLLM's share of it
    kept = model.weight_bytes / tp + weight_layout_bytes + activation_peak_bytes + non_torch_bytes
    available, weight_scale = kv_bytes_left(per_gpu, gpu_memory_utilization, kept, share_of)
    num_blocks = max(int(available // bytes_per_block), 0)
    context_blocks = -(-max_model_len // block_size)
    state_blocks = {"none": 1, "align": 2, "all": context_blocks}[mamba_cache_mode]
    blocks_per_request = (attention_groups * context_blocks
                          + state_groups * (state_blocks + num_speculative_tokens))
    if sliding_groups:
        # a sliding group's most: the window and a chunk's tokens, less one, and the block
        # the window starts in (vLLM's ``SlidingWindowSpec.max_memory_usage_bytes``)
        chunk = max_model_len if max_num_batched_tokens is None else max_num_batched_tokens
        if model.attention_chunk_size is None:
            window = min(int(model.sliding_window) - 1 + chunk, max_model_len)
            blocks_per_request += sliding_groups * (-(-window // block_size) + 1)
        else:                        # chunked-local: the chunk and a step's tokens
            window = min(int(model.attention_chunk_size) + chunk, max_model_len)
            blocks_per_request += sliding_groups * -(-window // block_size)
    pool = num_blocks
    if sliding_groups and state_groups == 0:
        # the pool in pages of one group (``group`` layers) where a block was every layer
        pool = max(int(available // (per_layer * group * block_size)), 0)
    max_concurrency = pool / blocks_per_request
    return {
        "available_bytes": max(available, 0.0),
        "weight_scale": weight_scale,
        "bytes_per_block": bytes_per_block,
        "num_blocks": num_blocks,
        "kv_cache_tokens": num_blocks * block_size,
        "capacity_tokens": int(max_concurrency * max_model_len),
        "max_concurrency": max_concurrency,
        "kv_cache_groups": attention_groups + state_groups + sliding_groups,
        "block_size": block_size,
    }
