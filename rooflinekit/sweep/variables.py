"""The sweep's variable registry: each variable's name, axes, units, long name and formula.

One :class:`_Var` per quantity (:data:`VARIABLES`, :data:`SPECULATIVE_VARIABLES`): its
``formula(env, deps)`` maps one block's :class:`_Block` and the variables already computed to a
numpy array on the sweep axes, calling the public :mod:`rooflinekit.memory`,
:mod:`rooflinekit.roofline` and :mod:`rooflinekit.parallel` functions (a few derived variables
restate a formula's last step; the tests check them cell by cell). Validation, blocks and
Datasets are :mod:`rooflinekit.sweep.grid`'s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from types import MappingProxyType, SimpleNamespace

import numpy as np
import xarray as xr

from rooflinekit import dims, memory, parallel, roofline
from rooflinekit.dtypes import bytes_per_element
from rooflinekit.roofline import Engine
from rooflinekit.units import PER_MILLION, SECONDS_PER_HOUR

__all__ = ["SWEEP_DIMS", "VARIABLES", "SPECULATIVE_VARIABLES"]


# -- the axes -------------------------------------------------------------------------------------

#: Axis order of every sweep; a variable uses the subsequence of these it depends on.
SWEEP_DIMS = (dims.MODEL, dims.GPU, dims.TP, dims.CONTEXT_LENGTH, dims.BATCH_SIZE,
              dims.PROMPT_TOKENS)

#: Layout dimensions a sweep has only when asked for (``pp=``, ``ep=``): without them a sweep
#: has exactly the dimensions and numbers of a single tensor-parallel group.
_LAYOUT_DIMS = (dims.PP, dims.EP)

#: Serving techniques a sweep has only when asked for (``draft_tokens=``, ``acceptance=``,
#: ``prefix_share=``): speculative decoding and prefix caching.
_TECHNIQUE_DIMS = (dims.DRAFT_TOKENS, dims.ACCEPTANCE, dims.PREFIX_SHARE)

# Every axis of the grid, the layout ones after tp, the techniques' last.
_AXIS_DIMS = (dims.MODEL, dims.GPU, dims.TP, *_LAYOUT_DIMS, dims.CONTEXT_LENGTH, dims.BATCH_SIZE,
              dims.PROMPT_TOKENS, *_TECHNIQUE_DIMS)
_M, _G, _T, _PP, _EP, _C, _B, _P, _K, _A, _S = range(len(_AXIS_DIMS))
_N = len(_AXIS_DIMS)
_OPTIONAL = (_PP, _EP, _K, _A, _S)   # axes a grid has only when given (else no dimension)
_PROMPT = "prompt"   # placeholder axis: prompt_tokens, or context_length when no prompt is given


# -- the environment of a block -------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, eq=False)
class _Block:
    """What a formula reads: one block's array specs and axes (``pp``/``ep`` 1, ``k``,
    ``alpha``, ``share`` None, ``prompt`` ``ctx`` when not swept), and the sweep's settings."""

    model: SimpleNamespace
    gpu: SimpleNamespace
    tp: np.ndarray
    pp: object
    ep: object
    ctx: np.ndarray
    batch: np.ndarray
    prompt: np.ndarray
    k: object
    alpha: object
    share: object
    reserve: float | None     # the guide's rule; None: the engine's (``engine_room``)
    engine: Engine            # the decode phase's engine: every time but prefill_time
    prefill_engine: Engine    # the engine of prefill_time
    layout: bool = False      # the sweep runs over pp or ep (else today's formulas only)
    replicate_kv: bool = False
    micro_batches: int = 1
    draft: object = None      # a ModelShape or a share of the target's decode step
    draft_weight_bytes: float = 0.0
    # the engine's rule: each GPU's share of its memory less what the engine keeps beside the
    # weights [bytes], over (model, gpu, tp, pp); None under the guide's rule
    engine_room: object = None
    engine_weight_scale: object = None   # the KV bytes a byte of weights takes under that rule


# -- helpers the formulas share -------------------------------------------------------------------

def _raw(value):
    """A formula's result as a numpy array on the sweep axes (size 1 where absent)."""
    if isinstance(value, xr.DataArray):
        present = [d for d in _AXIS_DIMS if d in value.dims]
        data = value.transpose(*present).values
        return data.reshape([value.sizes[d] if d in value.dims else 1 for d in _AXIS_DIMS])
    return value


def _layout_ok(env):
    """Cells whose layout divides the model (:func:`rooflinekit.parallel.layout_ok`, dp = 1)."""
    model = env.model
    ok = parallel.layout_ok(model.n_heads, model.n_kv_heads, model.is_mla, model.n_layers,
                            model.n_experts, env.tp, env.pp, env.ep)
    # a tensor-parallel group within one scale-up (NVLink) domain, where the catalogue knows it
    domain = getattr(env.gpu, "scale_up_gpus", None)
    if domain is None:
        return ok
    with np.errstate(invalid="ignore"):
        return ok & ~(np.asarray(env.tp) > np.asarray(domain))


def _group(env):
    """GPUs of one replica: a pipeline's ``tp × pp`` on a layout, else ``tp``."""
    return env.tp * env.pp if env.layout else env.tp


def _layout_time(base, env, engine, tokens, micro_batches):
    """A layout's step from the tensor-parallel group's (NaN where the layout does not divide)."""
    model, gpu, pp, ep = env.model, env.gpu, env.pp, env.ep
    routed = parallel.expert_params(model.n_params, model.n_active_params, model.n_experts,
                                    model.n_experts_per_token, model.n_aside_params)
    n_moe = parallel.moe_layer_count(model.n_layers, routed, model.n_experts, model.hidden_size,
                                     model.intermediate_size)
    links = roofline.layout_links(gpu.interconnect_bandwidth, gpu.interconnect_latency,
                                  gpu.network_bandwidth, engine.interconnect_efficiency)
    terms = roofline.layout_terms(model.hidden_size, n_moe, model.n_experts_per_token,
                                  bytes_per_element(engine.activation_dtype), pp, ep, links)
    time = roofline.layout_step(base, tokens, terms, pp, micro_batches)
    return np.where(_layout_ok(env), time, np.nan)


def _shared_tokens(share, tokens):
    """Whole tokens of a prefix that is ``share`` of ``tokens`` (rounded down)."""
    return np.floor(share * tokens)


def _prefix_memory(env):
    """The techniques' keywords of the concurrency formula (empty without techniques)."""
    extra = {}
    if env.share is not None:
        extra["shared_prefix_tokens"] = _shared_tokens(env.share, env.ctx)
    if env.draft_weight_bytes:
        extra["draft_weight_bytes"] = env.draft_weight_bytes
    return extra


def _decode_batch(env):
    """The batch one decode step runs: a micro-batch of a pipeline's, else the whole batch."""
    m = env.micro_batches
    return env.batch if m == 1 else env.batch // m


# -- memory ---------------------------------------------------------------------------------------
# A pipeline's tp × pp GPUs hold the weights and KV once (experts move within a stage, dp = 1);
# a layout that does not divide the model holds nothing and never fits (times still computed).

def _weight_bytes(env, out):
    return memory.weight_bytes(env.model)


def _kv_bytes_per_token(env, out):
    return memory.kv_bytes_per_token(env.model)


def _kv_bytes_per_sequence(env, out):
    return memory.kv_bytes_per_sequence(env.model, env.ctx)


def _kv_bytes(env, out):
    return out["kv_bytes_per_sequence"] * env.batch          # guide §2.2: linear in the batch


def _group_memory_bytes(env, out):
    return memory.group_memory_bytes(env.gpu, _group(env))


def _usable_kv_bytes(env, out):
    if env.engine_room is not None:
        # the engine's rule: the replica's GPUs' room less the weights, which they hold once
        v = np.maximum(_group(env) * env.engine_room
                       - env.engine_weight_scale * env.model.weight_bytes, 0.0)
    else:
        v = _raw(memory.usable_kv_bytes(env.model, env.gpu, tp=_group(env),
                                        reserve=env.reserve))
    return np.where(_layout_ok(env), v, 0)


def _weights_fit(env, out):
    return out["usable_kv_bytes"] > 0


def _max_concurrent_sequences(env, out):
    if env.engine_room is not None:
        # the engine's budget, less a draft model's weights, shared as the guide's rule shares
        # it (memory.sequences_in_budget: the same count on a budget given)
        extra = _prefix_memory(env)
        budget = np.maximum(out["usable_kv_bytes"] - env.engine_weight_scale
                            * extra.pop("draft_weight_bytes", 0.0), 0.0)
        if env.replicate_kv:
            budget = budget / _raw(memory.kv_copies(env.model, env.tp))
        v = _raw(memory.sequences_in_budget(env.model, budget, env.ctx, **extra))
    else:
        v = _raw(memory.max_concurrent_sequences(env.model, env.gpu, env.ctx, tp=_group(env),
                                                 reserve=env.reserve,
                                                 replicate_kv=env.replicate_kv,
                                                 **_prefix_memory(env)))
    return np.where(_layout_ok(env), v, 0)


def _fits(env, out):
    return out["max_concurrent_sequences"] >= env.batch


# -- the roofline ---------------------------------------------------------------------------------

def _ridge_point(env, out):
    return _raw(roofline.ridge_point(env.gpu, engine=env.engine))


def _arithmetic_intensity(env, out):
    return _raw(roofline.arithmetic_intensity(env.model, env.batch, env.ctx))


def _compute_bound(env, out):
    # roofline.bound's rule (intensity at or above the ridge), as a boolean, not strings
    return out["arithmetic_intensity"] >= out["ridge_point"]


def _decode_step_time(env, out):
    b = _decode_batch(env)
    # on a layout the busiest group of experts sets the step (ep 1 elsewhere)
    v = roofline.decode_step_time(env.model, env.gpu, b, env.ctx, env.tp, ep=env.ep,
                                  engine=env.engine)
    if env.layout:
        return _layout_time(_raw(v), env, env.engine, b, env.micro_batches)
    return _raw(v)


def _tokens_per_second(env, out):
    # roofline.decode_throughput: batch_size / decode_step_time
    return env.batch / out["decode_step_time"]


def _tokens_per_second_per_gpu(env, out):
    # roofline.decode_throughput_per_gpu: the group's rate over its tp · n_gpus GPUs
    return out["tokens_per_second"] / (_group(env) * env.gpu.n_gpus)


def _prefill_time(env, out):
    prompt = env.prompt
    cached = {} if env.share is None else {"cached_tokens": _shared_tokens(env.share, prompt)}
    prefill = env.prefill_engine
    v = roofline.prefill_time(env.model, env.gpu, prompt, env.tp, **cached, ep=env.ep,
                              engine=prefill)
    if env.layout:
        # only the uncached tokens flow through the stages (a fully cached prompt still
        # computes its last token)
        flowing = prompt if not cached else np.maximum(prompt - cached["cached_tokens"], 1)
        return _layout_time(_raw(v), env, prefill, flowing, None)
    return _raw(v)


def _cost_per_million_tokens(env, out):
    # roofline.cost_per_million_tokens, term for term (tp·n_gpus GPUs at the per-GPU price
    # for 1e6 / rate seconds), from the throughput already computed instead of a second
    # decode-step evaluation; tests check it equals the public function cell by cell.
    per_gpu = env.gpu.hourly_price / env.gpu.n_gpus
    known = ~np.isnan(per_gpu)
    usd_per_second = (_group(env) * env.gpu.n_gpus) * np.where(known, per_gpu, 0.0) / \
        SECONDS_PER_HOUR
    cost = usd_per_second / out["tokens_per_second"] * PER_MILLION
    return np.where(known, cost, np.nan)


# -- speculative decoding -------------------------------------------------------------------------
# On a layout the verification of k + 1 positions passes it as a decode step does
# (_layout_time); the k draft steps run on one tp group at the whole batch, outside the pipeline.

def _speculative_step_time(env, out):
    if env.layout:
        return _layout_speculative_step(env)
    return _raw(roofline.speculative_step_time(env.model, env.gpu, env.batch, env.ctx, env.tp,
                                               draft=env.draft, draft_tokens=env.k,
                                               engine=env.engine))


def _layout_speculative_step(env):
    """:func:`rooflinekit.roofline.speculative_step_time` on a layout."""
    model, gpu, tp, ctx, batch, k = env.model, env.gpu, env.tp, env.ctx, env.batch, env.k
    b = _decode_batch(env)
    verify = roofline.verification_step_time(model, gpu, b, ctx, tp, draft_tokens=k,
                                             engine=env.engine)
    verify = _layout_time(_raw(verify), env, env.engine, b * (k + 1), env.micro_batches)
    one = roofline.draft_step_time(model, gpu, batch, ctx, tp, draft=env.draft,
                                   engine=env.engine)
    return k * _raw(one) + verify


def _speculative_tokens_per_step(env, out):
    return _raw(roofline.speculative_tokens_per_step(env.alpha, env.k))


def _speculative_itl(env, out):
    return out["speculative_step_time"] / out["speculative_tokens_per_step"]


def _speculative_tokens_per_second(env, out):
    return env.batch / out["speculative_itl"]


def _speculative_speedup(env, out):
    # the public function's E · t_decode / t_speculative from the step times already computed
    return out["decode_step_time"] / out["speculative_itl"]


# -- the registry ---------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Var:
    """One sweep variable: what it is called, what it runs over and how it is computed."""

    name: str
    axes: tuple          # axes of _AXIS_DIMS (with _PROMPT standing for the prefill length axis)
    units: str
    long_name: str
    formula: Callable    # formula(env: _Block, out: {dependency: array}) -> array on the axes
    dtype: str = "f8"
    deps: tuple = ()     # variables it is computed from (in ``out`` when the formula runs)
    comment: str = ""    # the Dataset variable's ``comment`` attribute, when not empty


def _table(*entries):
    return MappingProxyType({v.name: v for v in entries})


_MG = (_M, _G, _T, _PP, _EP)          # a layout of a model on a GPU type
_DECODE = (*_MG, _C, _B)              # a decode step

#: Every variable a sweep can hold: name -> axes, units, long name, formula. ``prefill_time``
#: runs over ``prompt_tokens``, or over ``context_length`` (a prompt that fills the context) when
#: no prompt lengths are given.
VARIABLES = _table(
    _Var("weight_bytes", (_M,), "bytes", "weight bytes", _weight_bytes),
    _Var("kv_bytes_per_token", (_M,), "bytes", "KV bytes per token", _kv_bytes_per_token),
    _Var("kv_bytes_per_sequence", (_M, _C), "bytes", "KV bytes per sequence",
         _kv_bytes_per_sequence),
    _Var("kv_bytes", (_M, _C, _B), "bytes", "KV bytes of the batch", _kv_bytes,
         deps=("kv_bytes_per_sequence",)),
    _Var("group_memory_bytes", (_G, _T, _PP), "bytes", "group memory", _group_memory_bytes),
    _Var("usable_kv_bytes", _MG, "bytes", "usable KV bytes", _usable_kv_bytes),
    _Var("weights_fit", _MG, "1", "group memory holds the weights and a KV budget", _weights_fit,
         "?", deps=("usable_kv_bytes",)),
    _Var("max_concurrent_sequences", (*_MG, _C, _S), "1", "max concurrent sequences",
         _max_concurrent_sequences, "i8", deps=("usable_kv_bytes",)),
    _Var("fits", (*_MG, _C, _B, _S), "1", "batch fits in the KV budget", _fits, "?",
         deps=("max_concurrent_sequences",)),
    _Var("ridge_point", (_G,), "FLOP/byte", "ridge point (peak FLOP/s / bandwidth)",
         _ridge_point),
    _Var("arithmetic_intensity", (_M, _C, _B), "FLOP/byte", "decode arithmetic intensity",
         _arithmetic_intensity),
    _Var("compute_bound", (_M, _G, _C, _B), "1",
         "decode step is compute-bound (intensity >= ridge point)", _compute_bound, "?",
         deps=("arithmetic_intensity", "ridge_point"),
         comment="equals rooflinekit.roofline.bound(arithmetic_intensity, ridge_point) == "
                 "'compute'"),
    _Var("decode_step_time", _DECODE, "s", "decode step time (ITL)", _decode_step_time),
    _Var("tokens_per_second", _DECODE, "tokens/s", "decode throughput per group",
         _tokens_per_second, deps=("decode_step_time",)),
    _Var("tokens_per_second_per_gpu", _DECODE, "tokens/s", "decode throughput per GPU",
         _tokens_per_second_per_gpu, deps=("tokens_per_second",)),
    _Var("prefill_time", (*_MG, _PROMPT, _S), "s", "prefill time (TTFT without queueing)",
         _prefill_time,
         comment="one pass over the prompt, its prefix_share served from the prefix cache when "
                 "the sweep has that dimension, else nothing cached "
                 "(rooflinekit.roofline.prefill_time)"),
    _Var("cost_per_million_tokens", _DECODE, "USD/1M tokens",
         "GPU cost per million generated tokens", _cost_per_million_tokens,
         deps=("tokens_per_second",),
         comment="NaN where the GPU has no known hourly price; GPU time only, fully utilised "
                 "(rooflinekit.roofline.cost_per_million_tokens)"),
)

#: The variables of a sweep over speculative decoding (``draft_tokens=``, ``acceptance=``,
#: ``draft=``), besides :data:`VARIABLES`.
SPECULATIVE_VARIABLES = _table(
    _Var("speculative_step_time", (*_DECODE, _K), "s",
         "speculative step time (drafts and verification)", _speculative_step_time),
    _Var("speculative_tokens_per_step", (_K, _A), "tokens/step",
         "expected tokens per speculative step", _speculative_tokens_per_step),
    _Var("speculative_itl", (*_DECODE, _K, _A), "s",
         "speculative inter-token latency (step per token gained)", _speculative_itl,
         deps=("speculative_step_time", "speculative_tokens_per_step"),
         comment="speculative_step_time / speculative_tokens_per_step "
                 "(rooflinekit.roofline.speculative_speedup's effective ITL)"),
    _Var("speculative_tokens_per_second", (*_DECODE, _K, _A), "tokens/s",
         "speculative decode throughput per group", _speculative_tokens_per_second,
         deps=("speculative_itl",)),
    _Var("speculative_speedup", (*_DECODE, _K, _A), "1", "speculative decoding speed-up",
         _speculative_speedup, deps=("speculative_itl", "decode_step_time"),
         comment="decode_step_time / speculative_itl: above 1 speculation pays "
                 "(rooflinekit.roofline.speculative_speedup)"),
)

# Every variable by name, for the grid's own lookups.
_REGISTRY = MappingProxyType({**VARIABLES, **SPECULATIVE_VARIABLES})
