"""Design-space sweeps: every derived quantity over every dimension, as one labelled Dataset.

:func:`sweep` evaluates the memory model (:mod:`rooflinekit.memory`) and the roofline
(:mod:`rooflinekit.roofline`, :mod:`rooflinekit.roofline.latency`) over the outer product of models, GPUs,
tensor-parallel degrees, context lengths, batch sizes and prompt lengths — and, when asked,
pipeline and expert-parallel degrees, speculative decoding's drafted tokens and acceptance, and
prefix caching's share of each prompt — and returns one :class:`xarray.Dataset`.

How it stays fast and small
---------------------------
The formulas read spec fields through :func:`rooflinekit._labels.spec_value`, which is plain
``getattr`` for anything that is not a Dataset. The sweep therefore builds *array specs*: namespaces
whose fields are numpy arrays shaped to broadcast over ``(model, gpu, tp, context_length,
batch_size, prompt_tokens)`` with size-1 axes everywhere else, and calls the **same public
functions** on them. No formula is written twice, no xarray operation runs per variable, and
every variable is computed on its own minimal broadcast shape (usable KV bytes over
``model × gpu × tp``, the decode step over the five decode dimensions, ...). The results are
wrapped into one Dataset at the end. Grids above :data:`AUTO_BLOCK_CELLS` cells are computed in
blocks on a thread pool (numpy releases the GIL), which keeps temporaries small and uses every core.

:mod:`rooflinekit.memory`, :mod:`rooflinekit.roofline` and :mod:`rooflinekit.roofline.latency` read array
specs directly.

With ``chunks`` the Dataset is lazy and dask-backed. Its graph holds one task per block of the grid;
a task receives the small coordinate arrays and the block's index, computes every variable of that
block and nothing more, and each variable's chunks are views of those tasks. The full grid never
sits in the graph or in memory, so the same code runs on a threaded scheduler or a
``dask.distributed`` cluster, and the reductions here (:func:`best_configuration`,
:func:`best_tp`, :func:`cheapest_configuration`, :func:`pareto_front`) stream through the blocks
keeping only a few numbers per block.

The reductions live in :mod:`rooflinekit.sweep.reductions` and writing to disk in
:mod:`rooflinekit.sweep.io`; the folder's face :mod:`rooflinekit.sweep` exports them all. The
``rooflinekit sweep`` command is :mod:`rooflinekit.cli.sweep`.

dask and distributed are optional: ``pip install rooflinekit[distributed]``. netCDF output needs
``netCDF4`` or ``scipy`` (scipy is a core dependency: netCDF3 via ``engine="scipy"``); zarr output
needs ``zarr`` (``pip install zarr``).
"""

from __future__ import annotations

import dataclasses
import numbers
import operator
from types import MappingProxyType, SimpleNamespace

import numpy as np
import xarray as xr

from rooflinekit import catalog, dims, memory, parallel, roofline
from rooflinekit._validation import (
    as_1d,
    check_bool,
    check_fraction,
    check_integer,
    describe,
    real_number,
    show,
    whole_number,
)
from rooflinekit.dtypes import bytes_per_element
from rooflinekit.hardware import GPU
from rooflinekit.models import ModelShape
from rooflinekit.roofline import Engine
from rooflinekit.sweep._dask import require_dask
from rooflinekit.units import PER_MILLION, SECONDS_PER_HOUR

__all__ = [
    "AUTO_BLOCK_CELLS",
    "SWEEP_MEMORY_LIMIT",
    "SPECULATIVE_VARIABLES",
    "SWEEP_DIMS",
    "VARIABLES",
    "in_memory_bytes",
    "sweep",
    "sweep_cells",
]

#: Most bytes an in-memory sweep may hold without ``memory_limit=`` saying otherwise: 4 GiB.
SWEEP_MEMORY_LIMIT = 4 * 2**30

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



# -- the variables --------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Var:
    axes: tuple          # axes of _AXIS_DIMS (with _PROMPT standing for the prefill length axis)
    units: str
    long_name: str
    dtype: str = "f8"
    deps: tuple = ()     # variables it is computed from


#: Every variable a sweep can hold: name -> axes, units, long name. ``prefill_time`` runs over
#: ``prompt_tokens``, or over ``context_length`` (a prompt that fills the context) when no prompt
#: lengths are given.
VARIABLES = MappingProxyType({
    "weight_bytes": _Var((_M,), "bytes", "weight bytes"),
    "kv_bytes_per_token": _Var((_M,), "bytes", "KV bytes per token"),
    "kv_bytes_per_sequence": _Var((_M, _C), "bytes", "KV bytes per sequence"),
    "kv_bytes": _Var((_M, _C, _B), "bytes", "KV bytes of the batch",
                     deps=("kv_bytes_per_sequence",)),
    "group_memory_bytes": _Var((_G, _T, _PP), "bytes", "group memory"),
    "usable_kv_bytes": _Var((_M, _G, _T, _PP, _EP), "bytes", "usable KV bytes"),
    "weights_fit": _Var((_M, _G, _T, _PP, _EP), "1",
                        "group memory holds the weights and a KV budget", "?",
                        deps=("usable_kv_bytes",)),
    "max_concurrent_sequences": _Var((_M, _G, _T, _PP, _EP, _C, _S), "1",
                                     "max concurrent sequences", "i8"),
    "fits": _Var((_M, _G, _T, _PP, _EP, _C, _B, _S), "1", "batch fits in the KV budget", "?",
                 deps=("max_concurrent_sequences",)),
    "ridge_point": _Var((_G,), "FLOP/byte", "ridge point (peak FLOP/s / bandwidth)"),
    "arithmetic_intensity": _Var((_M, _C, _B), "FLOP/byte", "decode arithmetic intensity"),
    "compute_bound": _Var((_M, _G, _C, _B), "1",
                          "decode step is compute-bound (intensity >= ridge point)", "?",
                          deps=("arithmetic_intensity", "ridge_point")),
    "decode_step_time": _Var((_M, _G, _T, _PP, _EP, _C, _B), "s", "decode step time (ITL)"),
    "tokens_per_second": _Var((_M, _G, _T, _PP, _EP, _C, _B), "tokens/s",
                              "decode throughput per group", deps=("decode_step_time",)),
    "tokens_per_second_per_gpu": _Var((_M, _G, _T, _PP, _EP, _C, _B), "tokens/s",
                                      "decode throughput per GPU", deps=("tokens_per_second",)),
    "prefill_time": _Var((_M, _G, _T, _PP, _EP, _PROMPT, _S), "s",
                         "prefill time (TTFT without queueing)"),
    "cost_per_million_tokens": _Var((_M, _G, _T, _PP, _EP, _C, _B), "USD/1M tokens",
                                    "GPU cost per million generated tokens",
                                    deps=("tokens_per_second",)),
})

#: The variables of a sweep over speculative decoding (``draft_tokens=``, ``acceptance=``,
#: ``draft=``), besides :data:`VARIABLES`.
SPECULATIVE_VARIABLES = MappingProxyType({
    "speculative_step_time": _Var((_M, _G, _T, _PP, _EP, _C, _B, _K), "s",
                                  "speculative step time (drafts and verification)"),
    "speculative_tokens_per_step": _Var((_K, _A), "tokens/step",
                                        "expected tokens per speculative step"),
    "speculative_itl": _Var((_M, _G, _T, _PP, _EP, _C, _B, _K, _A), "s",
                            "speculative inter-token latency (step per token gained)",
                            deps=("speculative_step_time", "speculative_tokens_per_step")),
    "speculative_tokens_per_second": _Var((_M, _G, _T, _PP, _EP, _C, _B, _K, _A), "tokens/s",
                                          "speculative decode throughput per group",
                                          deps=("speculative_itl",)),
    "speculative_speedup": _Var((_M, _G, _T, _PP, _EP, _C, _B, _K, _A), "1",
                                "speculative decoding speed-up",
                                deps=("speculative_itl", "decode_step_time")),
})

# Every variable by name, for the grid's own lookups.
_REGISTRY = MappingProxyType({**VARIABLES, **SPECULATIVE_VARIABLES})

_NOTES = {
    "cost_per_million_tokens": {
        "comment": "NaN where the GPU has no known hourly price; GPU time only, fully utilised "
                   "(rooflinekit.roofline.cost_per_million_tokens)"},
    "compute_bound": {"comment": "equals rooflinekit.roofline.bound(arithmetic_intensity, "
                                 "ridge_point) == 'compute'"},
    "prefill_time": {"comment": "one pass over the prompt, its prefix_share served from the "
                                "prefix cache when the sweep has that dimension, else nothing "
                                "cached (rooflinekit.roofline.prefill_time)"},
    "speculative_itl": {"comment": "speculative_step_time / speculative_tokens_per_step "
                                   "(rooflinekit.roofline.speculative_speedup's effective ITL)"},
    "speculative_speedup": {"comment": "decode_step_time / speculative_itl: above 1 speculation "
                                       "pays (rooflinekit.roofline.speculative_speedup)"},
}


# -- inputs ---------------------------------------------------------------------------------------

#: Spec fields the memory and roofline formulas read (a catalogue Dataset holds them all).
_REQUIRED = {
    "model": ("n_layers", "n_heads", "n_kv_heads", "is_mla", "head_dim", "hidden_size",
              "n_params", "n_active_params",
              "n_experts", "n_experts_per_token", "bytes_per_param", "kv_bytes_per_element",
              "kv_bytes_per_token", "kv_bytes_per_token_per_layer", "n_full_layers",
              "n_sliding_layers", "sliding_window", "weight_bytes", "active_weight_bytes"),
    "gpu": ("memory_bytes", "hbm_bandwidth", "peak_flops", "interconnect_bandwidth",
            "interconnect_latency", "n_gpus", "hourly_price"),
}

def _spec_table(specs, kind):
    """Names and 1-D float fields of models or GPUs (names, spec objects or a Dataset).

    Spec objects are read with :func:`rooflinekit.catalog.spec_fields`, without building a
    Dataset: a Dataset costs a millisecond, which matters on small grids.
    """
    dim = dims.MODEL if kind == "model" else dims.GPU
    cls = ModelShape if kind == "model" else GPU
    lookup = catalog.model if kind == "model" else catalog.gpu
    if isinstance(specs, xr.Dataset):
        if dim not in specs.dims:
            raise TypeError(f"{kind}s Dataset must be indexed by {dim!r}; build it with "
                            f"rooflinekit.catalog.{kind}s(as_dataset=True)")
        if specs.sizes[dim] == 0:
            raise ValueError(f"{kind}s must name at least one {kind}")
        fields = {name: np.asarray(var.values, dtype=np.float64)
                  for name, var in specs.data_vars.items()
                  if var.dims == (dim,) and var.dtype.kind in "iufb"}
        missing = [f for f in _REQUIRED[kind] if f not in fields]
        if missing:
            raise TypeError(f"{kind}s Dataset lacks {', '.join(missing)}; build it with "
                            f"rooflinekit.catalog.{kind}s(as_dataset=True)")
        return np.asarray(specs[dim].values), fields
    items = [specs] if isinstance(specs, (str, cls)) else specs
    if isinstance(items, (bytes, numbers.Number)) or not hasattr(items, "__iter__"):
        raise TypeError(f"{kind}s must be a name, a {cls.__name__}, a sequence of those, or a "
                        f"catalogue Dataset; got {type(specs).__name__}")
    objs = []
    for item in items:
        if isinstance(item, str):
            objs.append(lookup(item))
        elif isinstance(item, cls):
            objs.append(item)
        else:
            raise TypeError(f"{kind}s entries must be names or {cls.__name__} objects, got "
                            f"{type(item).__name__}")
    if not objs:
        raise ValueError(f"{kind}s must name at least one {kind}")
    names, fields = catalog.spec_fields(objs)
    fields = {k: v.astype(np.float64) for k, v in fields.items()}
    return np.array(names), fields


def _axis_values(name, values, *, lo, allow_none=False):
    """A sweep axis as a 1-D int64 array of whole numbers ≥ ``lo``."""
    if values is None:
        if allow_none:
            return None
        raise ValueError(f"{name} is required")
    data = as_1d(name, values)
    check_integer(name, data, lo=lo)
    _unique(name, data, values)
    return data.astype(np.int64)


def _unique(name, data, values):
    if np.unique(data).size != data.size:
        raise ValueError(f"{name} must not repeat values (it labels a dimension); "
                         f"got {show(values)}")


def _share_values(name, values):
    """A sweep axis of shares as a 1-D float64 array in [0, 1], or ``None`` when not given."""
    if values is None:
        return None
    data = as_1d(name, values)
    check_fraction(name, data)
    _unique(name, data, values)
    return data.astype(np.float64)


@dataclasses.dataclass(frozen=True, eq=False)
class _Grid:
    """Everything a block task needs: spec tables, axis values and the block boundaries."""

    model_names: np.ndarray
    gpu_names: np.ndarray
    model_fields: dict
    gpu_fields: dict
    axes: tuple            # 1-D arrays for model/gpu index, tp, pp, ep, context, batch, prompt
    #                        (pp, ep, prompt: None when not asked for)
    reserve: float
    engine: Engine         # the decode phase's engine: every time but prefill_time
    variables: tuple       # requested and dependency variables, in computing order
    chunks: tuple          # per axis, a tuple of chunk lengths
    replicate_kv: bool = False   # count KV copies when tp exceeds the KV heads (memory.kv_copies)
    micro_batches: int = 1       # micro-batches a pipeline's batch is split into
    draft: object = None         # speculative decoding's draft: a ModelShape or a step share
    draft_weight_bytes: float = 0.0   # a draft model's weights, held beside every model's
    prefill_engine: Engine = None     # the engine of prefill_time; None: ``engine``

    @property
    def shape(self):
        return tuple(1 if a is None else len(a) for a in self.axes)


def _resolve(variables, speculative=False):
    """Requested variables plus every variable they are computed from, in dependency order.

    The speculative variables exist only in a sweep over ``draft_tokens``.
    """
    known = [*VARIABLES, *(SPECULATIVE_VARIABLES if speculative else ())]
    if variables is None:
        wanted = known
    else:
        wanted = [variables] if isinstance(variables, str) else list(variables)
        unknown = [v for v in wanted if v not in _REGISTRY]
        if unknown:
            raise ValueError(f"unknown sweep variables {unknown}; choose from {list(_REGISTRY)}")
        absent = [v for v in wanted if v not in known]
        if absent:
            raise ValueError(f"{absent[0]!r} needs speculative decoding: give draft_tokens=, "
                             f"acceptance= and draft=")
    order = []

    def visit(v):
        for d in _REGISTRY[v].deps:
            visit(d)
        if v not in order:
            order.append(v)

    for v in wanted:
        visit(v)
    return tuple(order)


# -- one block ------------------------------------------------------------------------------------

def _shaped(values, axis, n=_N):
    shape = [1] * n
    shape[axis] = values.shape[0]
    return values.reshape(shape)


def _block_bounds(grid, block):
    bounds = []
    for ax, idx in enumerate(block):
        start = sum(grid.chunks[ax][:idx])
        bounds.append(slice(start, start + grid.chunks[ax][idx]))
    return bounds


def _block_arrays(grid, bounds):
    """Array specs and axis arrays of one block, shaped to broadcast over the sweep axes."""
    model = SimpleNamespace(**{k: _shaped(v[bounds[_M]], _M) for k, v in grid.model_fields.items()})
    gpu = SimpleNamespace(**{k: _shaped(v[bounds[_G]], _G) for k, v in grid.gpu_fields.items()})
    tp = _shaped(grid.axes[_T][bounds[_T]], _T)
    pp, ep = (1 if grid.axes[a] is None else _shaped(grid.axes[a][bounds[a]], a)
              for a in (_PP, _EP))
    ctx = _shaped(grid.axes[_C][bounds[_C]], _C)
    batch = _shaped(grid.axes[_B][bounds[_B]], _B)
    prompt = ctx if grid.axes[_P] is None else _shaped(grid.axes[_P][bounds[_P]], _P)
    k, alpha, share = (None if grid.axes[a] is None else _shaped(grid.axes[a][bounds[a]], a)
                       for a in (_K, _A, _S))
    return model, gpu, tp, pp, ep, ctx, batch, prompt, k, alpha, share


def _var_axes(grid, name):
    """The axis positions variable ``name`` runs over in this grid (sorted)."""
    prompt_axis = _C if grid.axes[_P] is None else _P
    axes = {prompt_axis if a == _PROMPT else a for a in _REGISTRY[name].axes}
    return tuple(sorted(a for a in axes if a not in _OPTIONAL or grid.axes[a] is not None))


def _has_layout(grid):
    """Whether the sweep runs over pipeline or expert parallelism (else today's formulas only)."""
    return grid.axes[_PP] is not None or grid.axes[_EP] is not None


def _tp_ok(model, tp):
    """Cells whose ``tp`` divides the model's heads: :func:`_layout_ok` at ``pp = ep = 1``."""
    return _layout_ok(SimpleNamespace(model=model, tp=tp, pp=1, ep=1))


def _layout_ok(env):
    """Cells whose layout divides the model: :func:`rooflinekit.parallel.layout_ok` (dp = 1),
    the rule :func:`rooflinekit.parallel.check_layout` explains."""
    model = env.model
    return parallel.layout_ok(model.n_heads, model.n_kv_heads, model.is_mla, model.n_layers,
                              model.n_experts, env.tp, env.pp, env.ep)


def _layout_time(base, env, engine, tokens, micro_batches):
    """A layout's step from the tensor-parallel group's: :func:`rooflinekit.roofline.layout_step`
    of :func:`rooflinekit.roofline.layout_terms` on raw arrays (NaN where the layout does not
    divide the model). ``engine`` (the phase's) gives the activations' format and the share of
    the interconnect the sends reach."""
    model, gpu, pp, ep = env.model, env.gpu, env.pp, env.ep
    routed = parallel.expert_params(model.n_params, model.n_active_params, model.n_experts,
                                    model.n_experts_per_token)
    n_moe = parallel.moe_layer_count(model.n_layers, routed, model.n_experts, model.hidden_size,
                                     model.intermediate_size)
    links = roofline.layout_links(gpu.interconnect_bandwidth, gpu.interconnect_latency,
                                  gpu.network_bandwidth, engine.interconnect_efficiency)
    terms = roofline.layout_terms(model.hidden_size, n_moe, model.n_experts_per_token,
                                  bytes_per_element(engine.activation_dtype), pp, ep, links)
    time = roofline.layout_step(base, tokens, terms, pp, micro_batches)
    return np.where(_layout_ok(env), time, np.nan)


def _formula(name, out, env, grid):
    """One variable from the public formula functions (array specs in, ndarray out)."""
    model, gpu, tp, ctx, batch = env.model, env.gpu, env.tp, env.ctx, env.batch
    r = grid.reserve
    if _has_layout(grid) and name in _LAYOUT_MEMORY:
        # a pipeline's tp × pp GPUs hold the weights and KV once (layers split evenly); expert
        # parallelism within a stage's tp GPUs moves experts, not bytes (dp = 1)
        group = tp * env.pp
        if name == "group_memory_bytes":
            return memory.group_memory_bytes(gpu, group)
        if name == "usable_kv_bytes":
            v = memory.usable_kv_bytes(model, gpu, tp=group, reserve=r)
        else:
            v = memory.max_concurrent_sequences(model, gpu, ctx, tp=group, reserve=r,
                                                replicate_kv=grid.replicate_kv,
                                                **_prefix_memory(env, grid))
        return np.where(_layout_ok(env), _raw(v), 0)
    if name == "weight_bytes":
        return memory.weight_bytes(model)
    if name == "kv_bytes_per_token":
        return memory.kv_bytes_per_token(model)
    if name == "kv_bytes_per_sequence":
        return memory.kv_bytes_per_sequence(model, ctx)
    if name == "kv_bytes":
        return out["kv_bytes_per_sequence"] * batch          # guide §2.2: linear in the batch
    if name == "group_memory_bytes":
        return memory.group_memory_bytes(gpu, tp)
    # a tp that does not divide the heads holds nothing: such a cell never fits (the layout
    # rule of every other path; the times stay computed, as for any cell that does not fit)
    if name == "usable_kv_bytes":
        return np.where(_tp_ok(model, tp),
                        _raw(memory.usable_kv_bytes(model, gpu, tp=tp, reserve=r)), 0)
    if name == "weights_fit":
        return out["usable_kv_bytes"] > 0
    if name == "max_concurrent_sequences":
        return np.where(_tp_ok(model, tp), _raw(memory.max_concurrent_sequences(
            model, gpu, ctx, tp=tp, reserve=r, replicate_kv=grid.replicate_kv,
            **_prefix_memory(env, grid))), 0)
    if name == "fits":
        return out["max_concurrent_sequences"] >= batch
    return _roofline_formula(name, out, env, grid)


def _shared_tokens(share, tokens):
    """Whole tokens of a prefix that is ``share`` of ``tokens`` (rounded down)."""
    return np.floor(share * tokens)


def _prefix_memory(env, grid):
    """The techniques' keywords of the concurrency formula: a shared prefix, a draft's weights.

    Empty without them, so that such a sweep calls the formula exactly as before.
    """
    extra = {}
    if env.share is not None:
        extra["shared_prefix_tokens"] = _shared_tokens(env.share, env.ctx)
    if grid.draft_weight_bytes:
        extra["draft_weight_bytes"] = grid.draft_weight_bytes
    return extra


#: Memory variables a layout changes (the others follow from them).
_LAYOUT_MEMORY = ("group_memory_bytes", "usable_kv_bytes", "max_concurrent_sequences")


def _roofline_formula(name, out, env, grid):
    """A roofline variable from the public :mod:`rooflinekit.roofline` functions."""
    model, gpu, tp, ctx, batch, prompt = env.model, env.gpu, env.tp, env.ctx, env.batch, env.prompt
    engine = grid.engine
    layout = _has_layout(grid)
    gpus = env.tp * env.pp if layout else env.tp
    if name == "ridge_point":
        v = roofline.ridge_point(gpu, engine=engine)
    elif name == "arithmetic_intensity":
        v = roofline.arithmetic_intensity(model, batch, ctx)
    elif name == "compute_bound":
        # roofline.bound's rule (intensity at or above the ridge), as a boolean, not strings
        return out["arithmetic_intensity"] >= out["ridge_point"]
    elif name == "decode_step_time":
        m = grid.micro_batches
        b = batch if m == 1 else batch // m
        v = roofline.decode_step_time(model, gpu, b, ctx, tp, engine=engine)
        if layout:
            return _layout_time(_raw(v), env, engine, b, m)
    elif name == "tokens_per_second":
        # roofline.decode_throughput: batch_size / decode_step_time
        return env.batch / out["decode_step_time"]
    elif name == "tokens_per_second_per_gpu":
        # roofline.decode_throughput_per_gpu: the group's rate over its tp · n_gpus GPUs
        return out["tokens_per_second"] / (gpus * env.gpu.n_gpus)
    elif name == "prefill_time":
        cached = {} if env.share is None else {"cached_tokens": _shared_tokens(env.share, prompt)}
        prefill = grid.prefill_engine or engine
        v = roofline.prefill_time(model, gpu, prompt, tp, **cached, engine=prefill)
        if layout:
            # only the uncached tokens flow through the stages (a fully cached prompt still
            # computes its last token)
            flowing = prompt if not cached else np.maximum(prompt - cached["cached_tokens"], 1)
            return _layout_time(_raw(v), env, prefill, flowing, None)
    elif name == "cost_per_million_tokens":
        # roofline.cost_per_million_tokens, term for term (tp·n_gpus GPUs at the per-GPU price
        # for 1e6 / rate seconds), from the throughput already computed instead of a second
        # decode-step evaluation; tests check it equals the public function cell by cell.
        per_gpu = env.gpu.hourly_price / env.gpu.n_gpus
        known = ~np.isnan(per_gpu)
        usd_per_second = (gpus * env.gpu.n_gpus) * np.where(known, per_gpu, 0.0) / \
            SECONDS_PER_HOUR
        cost = usd_per_second / out["tokens_per_second"] * PER_MILLION
        return np.where(known, cost, np.nan)
    elif name in SPECULATIVE_VARIABLES:
        return _speculative_formula(name, out, env, grid)
    else:  # pragma: no cover - VARIABLES and these tables are kept together
        raise KeyError(name)
    return _raw(v)


def _speculative_formula(name, out, env, grid):
    """A speculative-decoding variable from :mod:`rooflinekit.roofline`'s speculative formulas.

    ``speculative_speedup`` is the public function's ``E · t_decode / t_speculative`` from the
    step times already computed. On a pipeline or expert layout the verification of the
    ``k + 1`` positions passes the layout as a decode step does (its micro-batches, stages,
    hand-offs and all-to-all of ``b·(k + 1)`` tokens, :func:`_layout_time`), while the ``k``
    draft steps run on one tensor-parallel group of ``tp`` GPUs at the whole batch, outside
    the pipeline (a draft model or head is small enough to sit with one stage).
    """
    if name == "speculative_step_time":
        if _has_layout(grid):
            return _layout_speculative_step(env, grid)
        v = roofline.speculative_step_time(env.model, env.gpu, env.batch, env.ctx, env.tp,
                                           draft=grid.draft, draft_tokens=env.k,
                                           engine=grid.engine)
    elif name == "speculative_tokens_per_step":
        v = roofline.speculative_tokens_per_step(env.alpha, env.k)
    elif name == "speculative_itl":
        return out["speculative_step_time"] / out["speculative_tokens_per_step"]
    elif name == "speculative_tokens_per_second":
        return env.batch / out["speculative_itl"]
    elif name == "speculative_speedup":
        return out["decode_step_time"] / out["speculative_itl"]
    else:  # pragma: no cover - VARIABLES and this table are kept together
        raise KeyError(name)
    return _raw(v)


def _layout_speculative_step(env, grid):
    """:func:`rooflinekit.roofline.speculative_step_time` on a layout (:func:`_speculative_formula`)."""
    model, gpu, tp, ctx, batch, k = env.model, env.gpu, env.tp, env.ctx, env.batch, env.k
    m = grid.micro_batches
    b = batch if m == 1 else batch // m
    verify = roofline.verification_step_time(model, gpu, b, ctx, tp, draft_tokens=k,
                                             engine=grid.engine)
    verify = _layout_time(_raw(verify), env, grid.engine, b * (k + 1), m)
    one = roofline.draft_step_time(model, gpu, batch, ctx, tp, draft=grid.draft,
                                   engine=grid.engine)
    return k * _raw(one) + verify


def _raw(value):
    """A formula's result as a numpy array on the sweep axes (size 1 where absent)."""
    if isinstance(value, xr.DataArray):
        present = [d for d in _AXIS_DIMS if d in value.dims]
        data = value.transpose(*present).values
        return data.reshape([value.sizes[d] if d in value.dims else 1 for d in _AXIS_DIMS])
    return value


def _compute_block(grid, block):
    """Every variable of ``grid.variables`` over one block: name -> array over its own axes.

    Each variable is computed by the public formula functions on its minimal broadcast shape
    (size-1 axes where it does not depend on an axis); those axes are then dropped.
    """
    bounds = _block_bounds(grid, tuple(block))
    extent = tuple(b.stop - b.start for b in bounds)
    model, gpu, tp, pp, ep, ctx, batch, prompt, k, alpha, share = _block_arrays(grid, bounds)
    env = SimpleNamespace(model=model, gpu=gpu, tp=tp, pp=pp, ep=ep,
                          ctx=ctx, batch=batch, prompt=prompt, k=k, alpha=alpha, share=share,
                          bounds=bounds)
    out = {}
    for name in grid.variables:
        out[name] = _formula(name, out, env, grid)
    result = {}
    for name, value in out.items():
        keep = _var_axes(grid, name)
        value = np.asarray(value)
        value = value.reshape((1,) * (_N - value.ndim) + value.shape)
        target = tuple(extent[a] if a in keep else 1 for a in range(_N))
        if value.shape != target:
            # a formula that does not vary along one of its axes for these inputs
            value = np.broadcast_to(value, target).copy()
        result[name] = value.reshape([extent[a] for a in keep]).astype(
            _REGISTRY[name].dtype, copy=False)
    return result


# -- chunking -------------------------------------------------------------------------------------

#: Cells per block for ``chunks="auto"``: about 1e6, a few hundred MB of variables per block.
AUTO_BLOCK_CELLS = 2**20


def _chunk_axis(length, size):
    size = max(1, min(int(size), length))
    full, rest = divmod(length, size)
    return (size,) * full + ((rest,) if rest else ())


def _chunks(shape, chunks):
    """Per-axis chunk lengths from ``chunks``: cells per block (int), "auto" or {dim: size}."""
    if chunks == "auto":
        chunks = AUTO_BLOCK_CELLS
    if isinstance(chunks, dict):
        unknown = [d for d in chunks if d not in _AXIS_DIMS]
        if unknown:
            raise ValueError(f"chunks names unknown dimensions {unknown}; use {list(_AXIS_DIMS)}")
        out = []
        for ax, d in enumerate(_AXIS_DIMS):
            size = chunks.get(d, -1)
            if isinstance(size, bool) or not isinstance(size, numbers.Integral) or (
                    size < 1 and size != -1):
                raise ValueError(f"chunks[{d!r}] must be an integer >= 1 or -1 (whole axis); "
                                 f"got {show(size)}")
            out.append(_chunk_axis(shape[ax], shape[ax] if size == -1 else size))
        return tuple(out)
    if isinstance(chunks, bool) or not isinstance(chunks, numbers.Integral) or chunks < 1:
        raise ValueError(f"chunks must be None, 'auto', an integer number of cells per block >= 1 "
                         f"or a dict {{dimension: chunk length}}; got {show(chunks)}")
    # Fill blocks from the last axis backwards, so a block is a contiguous slab of the grid.
    out = [None] * len(shape)
    cells = 1
    for ax in reversed(range(len(shape))):
        if cells * shape[ax] <= chunks:
            out[ax] = (shape[ax],)
            cells *= shape[ax]
        else:
            out[ax] = _chunk_axis(shape[ax], max(1, chunks // cells))
            cells *= out[ax][0]
            for earlier in range(ax):
                out[earlier] = _chunk_axis(shape[earlier], 1)
            break
    return tuple(out)


def _compute_in_memory(grid):
    """Every variable over the whole grid, as numpy arrays.

    Grids above :data:`AUTO_BLOCK_CELLS` are computed block by block on a thread pool (numpy
    releases the GIL) into preallocated outputs: blocks keep temporaries small enough for the
    allocator to reuse and the cache to hold, and use every core. The values are the same as
    one whole-grid evaluation: every formula is elementwise.
    """
    shape = grid.shape
    if int(np.prod(shape)) <= AUTO_BLOCK_CELLS:
        return _compute_block(grid, (0,) * _N)
    import concurrent.futures
    import itertools
    import os

    grid = dataclasses.replace(grid, chunks=_chunks(shape, AUTO_BLOCK_CELLS))
    keeps = {name: _var_axes(grid, name) for name in grid.variables}
    out = {name: np.empty([shape[a] for a in keep], dtype=_REGISTRY[name].dtype)
           for name, keep in keeps.items()}
    starts = [np.concatenate([[0], np.cumsum(c)[:-1]]) for c in grid.chunks]

    def run(block):
        result = _compute_block(grid, block)
        for name, keep in keeps.items():
            if any(block[a] for a in range(_N) if a not in keep):
                continue              # the block at index 0 of the absent axes writes it
            where = tuple(slice(starts[a][block[a]], starts[a][block[a]] + grid.chunks[a][block[a]])
                          for a in keep)
            out[name][where] = result[name]

    blocks = list(itertools.product(*(range(len(c)) for c in grid.chunks)))
    workers = max(1, min(os.cpu_count() or 1, len(blocks)))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for _ in pool.map(run, blocks):
            pass
    return out


# -- the public sweep -----------------------------------------------------------------------------

def in_memory_bytes(grid) -> int:
    """Bytes the variables of ``grid`` hold when computed in memory (each on its own axes)."""
    return sum(int(np.prod([grid.shape[a] for a in _var_axes(grid, name)], dtype=np.float64))
               * np.dtype(_REGISTRY[name].dtype).itemsize for name in grid.variables)


def sweep(models, gpus, tp=1, context_length=4096, batch_size=1, prompt_tokens=None, *,
          reserve=memory.DEFAULT_RESERVE, variables=None, chunks=None, engine=None,
          replicate_kv=False, memory_limit=SWEEP_MEMORY_LIMIT, pp=None, ep=None, micro_batches=1,
          draft_tokens=None, acceptance=None, draft=None, prefix_share=None):
    """Every derived quantity over every combination of the inputs, as one labelled Dataset.

    Parameters
    ----------
    models : str, ModelShape, sequence of those, or xarray.Dataset
        Models by catalogue name, as specs, or a catalogue Dataset over ``model``.
    gpus : str, GPU, sequence of those, or xarray.Dataset
        Single accelerators by catalogue name, as specs, or a catalogue Dataset over ``gpu``.
    tp : int or sequence of int
        Tensor-parallel degrees [1], each ≥ 1 (guide §5's simple model: memory, bandwidth and
        FLOP/s scale with the degree).
    context_length : int or sequence of int
        Tokens each sequence holds in its KV cache [tokens], each ≥ 1.
    batch_size : int or sequence of int
        Sequences decoded together [1], each ≥ 1.
    prompt_tokens : int or sequence of int, optional
        Prompt lengths for the prefill (TTFT) variables [tokens], each ≥ 1. ``None`` (default):
        the prompt fills the context, and ``prefill_time`` runs over ``context_length``.
    pp, ep : int or sequence of int, optional
        Pipeline- and expert-parallel degrees [1], each ≥ 1, as dimensions ``pp`` and ``ep``
        (:func:`rooflinekit.roofline.layout_decode_step_time`). ``None`` (default): no such
        dimension, today's single tensor-parallel group. A pipeline's ``tp × pp`` GPUs hold the
        weights and KV; expert parallelism spreads the experts over a stage's ``tp`` GPUs (so
        ``ep`` divides ``tp``) and adds the all-to-all. Cells whose layout does not divide the
        model (``tp`` the heads, ``pp`` the layers, ``ep`` the experts or ``tp``; ``ep > 1`` for
        a dense model) do not fit and have NaN times. Without ``pp`` and ``ep`` a ``tp`` that
        does not divide the heads (or the KV heads, nor they it) holds no KV and does not fit,
        its times computed as for any cell that does not fit:
        :func:`rooflinekit.parallel.check_layout`'s rule, as the batchers and ``plan`` apply it.
    micro_batches : int
        Micro-batches a pipeline splits each batch into [1], ≥ 1; every ``batch_size`` must be
        a multiple of it. Default 1.
    draft_tokens : int or sequence of int, optional
        Tokens drafted per speculative step, k [tokens], each ≥ 0, as dimension
        ``draft_tokens`` (vLLM's ``--num-speculative-tokens``). Given with ``acceptance`` and
        ``draft``, the sweep adds the ``speculative_*`` variables
        (:func:`rooflinekit.roofline.speculative_speedup`). ``None`` (default): no speculation.
        With ``pp``/``ep`` the verification passes the layout as a decode step does and the
        drafts run on one ``tp`` group outside the pipeline.
    acceptance : float or sequence of float, optional
        Probability α that the target accepts a drafted token [1], each in [0, 1], as
        dimension ``acceptance``; with ``draft_tokens``.
    draft : ModelShape, str or float, optional
        The draft: a model (a spec or catalogue name, on the same GPUs and ``tp``), whose
        weights then also come off every KV budget (``max_concurrent_sequences``, ``fits``),
        or one draft step's cost as a share of the target's decode step in (0, 1] (a head
        such as EAGLE or MTP, whose weights are not counted); with ``draft_tokens``.
    prefix_share : float or sequence of float, optional
        Share of each prompt that is one prefix all sequences share and the prefix cache holds
        [1], each in [0, 1], as dimension ``prefix_share``. Its whole blocks are held once
        (``max_concurrent_sequences``: ``⌊share × context_length⌋`` shared tokens, in blocks of
        16) and a prefill reads them instead of computing them (``prefill_time``:
        ``⌊share × prompt⌋`` cached tokens). ``None`` (default): nothing shared or cached.
    engine : Engine or Calibration, optional
        How the serving engine runs a step (:class:`rooflinekit.Engine`: efficiencies,
        overheads, the all-reduce model, ``compute_dtype``, ``activation_dtype``, ...), or a
        :class:`rooflinekit.calibrate.Calibration`: its prefill engine
        (``engine_for("prefill")``) times ``prefill_time``, its decode engine every other
        time (a calibration with knob sets gives its shared knobs). Default
        :data:`rooflinekit.IDEAL`, the guide's roofline. Its fields must be single numbers
        (the sweep's own dimensions are the grid). Unless its ``allreduce`` is ``"guide"``
        (the guide's simple model, no communication) and without an
        ``interconnect_bandwidth`` of its own, every GPU must have a known interconnect
        bandwidth when any ``tp > 1``. The Dataset's ``model_quality`` is the engine's
        ``label``.
    reserve : float
        Working-space share of the memory left after weights, in [0, 1). Default 0.10 (§2.4).
    replicate_kv : bool
        Count the KV copies an engine keeps when ``tp`` exceeds a model's KV heads, or for an MLA
        cache (:func:`rooflinekit.memory.kv_copies`) in ``max_concurrent_sequences`` and
        ``fits``. Default ``False``: the guide's simple model, every head stored once.
    variables : sequence of str, optional
        Variables to compute (and keep); default all of :data:`VARIABLES`, and of
        :data:`SPECULATIVE_VARIABLES` in a sweep over ``draft_tokens``. Variables they are
        computed from are computed too and kept.
    memory_limit : float
        Most bytes an in-memory sweep (``chunks=None``) may hold [bytes]; default
        :data:`SWEEP_MEMORY_LIMIT` (4 GiB). Larger grids are refused before any work, with the
        estimate; lazy sweeps are not limited (they hold one block at a time).
    chunks : None, "auto", int or dict, optional
        ``None`` (default): compute now with numpy. Otherwise return a lazy, dask-backed Dataset
        in blocks of about ``chunks`` cells (``"auto"``: :data:`AUTO_BLOCK_CELLS`), or with
        ``{dimension: chunk length}`` (missing dimensions whole). Needs
        ``rooflinekit[distributed]``.
    Returns
    -------
    xarray.Dataset
        Coordinates ``model``, ``gpu``, ``tp``, ``context_length``, ``batch_size`` and, when given,
        ``prompt_tokens``; each variable runs over just the dimensions it depends on (see
        :data:`VARIABLES`) and carries ``units`` and ``long_name``. Units are SI (bytes, s, FLOP,
        tokens/s, USD per million tokens).

    Raises
    ------
    ValueError, TypeError
        For an unknown name, an axis value out of range or repeated, a bad ``reserve`` or
        ``chunks``, before any work.
    ImportError
        If ``chunks`` is given and dask is not installed.

    Notes
    -----
    Every variable equals the scalar formula evaluated at that cell: the sweep calls the same
    public functions, on numpy arrays shaped to broadcast, instead of looping. Without
    ``draft_tokens``, ``acceptance`` and ``prefix_share`` a sweep has neither their
    dimensions nor their variables, and the same numbers as before they existed. A shared
    prefix combines with ``pp`` and ``ep`` (it is held once per pipeline, and only its uncached
    tokens flow through the stages); speculative decoding is modelled for a single
    tensor-parallel group and does not combine with them. ``fits`` is
    ``max_concurrent_sequences >= batch_size``: the batch's KV at ``context_length`` fits beside the
    weights and the reserve. Latency and throughput are computed whether or not a cell fits; mask
    with ``fits`` (the reductions do).

    References
    ----------
    .. [1] Serving-capacity guide §2–§5.
    .. [2] Williams, Waterman & Patterson, "Roofline: An Insightful Visual Performance Model",
       CACM 52(4), 2009.
    """
    decode, prefill = _engines(engine)
    grid = _make_grid(models, gpus, tp, context_length, batch_size, prompt_tokens, reserve,
                      variables, decode, pp=pp, ep=ep, micro_batches=micro_batches,
                      techniques=_techniques(draft_tokens, acceptance, draft, prefix_share),
                      prefill_engine=prefill)
    grid = dataclasses.replace(grid, replicate_kv=check_bool("replicate_kv", replicate_kv))
    memory_limit = real_number("memory_limit", memory_limit, lo=0, lo_open=True, allow_inf=True)
    if chunks is None:
        held = in_memory_bytes(grid)
        if held > memory_limit:
            raise ValueError(
                f"this sweep would hold {held / 2**30:.3g} GiB in memory "
                f"({int(np.prod(grid.shape, dtype=np.float64)):.3g} cells), above memory_limit="
                f"{memory_limit / 2**30:.3g} GiB; pass chunks='auto' for a lazy Dataset in dask "
                f"blocks (reduce it, or save it with rooflinekit.sweep.save), ask for fewer "
                f"variables or axis values, or raise memory_limit")
        return _wrap(grid, _compute_in_memory(grid))
    require_dask()
    grid = dataclasses.replace(grid, chunks=_chunks(grid.shape, chunks))
    return _wrap(grid, _lazy_arrays(grid))


def _engines(engine) -> tuple:
    """The decode and prefill :class:`~rooflinekit.Engine` of ``engine``, checked now.

    A calibration gives its shared knobs (a sweep spans many models and GPUs; each cell does
    not pick a knob set). Every numeric field must be one number: the sweep lays its own axes
    out on the grid, and a lazy sweep must not fail later, inside a block.
    """
    engines = []
    for phase in ("decode", "prefill"):
        one = roofline.engine_for(engine, phase)
        arrays = {k: v for k, v in one.fields().items()
                  if isinstance(v, (np.ndarray, xr.DataArray))}
        for name, value in arrays.items():
            if np.ndim(value):
                raise TypeError(f"engine.{name} must be a single number in a sweep (its "
                                f"dimensions are the sweep's own); got {show(value)}")
        if arrays:
            # a 0-d array is its number (the label stays what the engine says of itself)
            one = one.replace(**{k: float(v) for k, v in arrays.items()}, label=one.label)
        engines.append(one)
    return tuple(engines)


def _techniques(draft_tokens, acceptance, draft, prefix_share):
    """The techniques' axes and draft, checked: (draft_tokens, acceptance, share), draft, bytes."""
    given = {"draft_tokens": draft_tokens, "acceptance": acceptance, "draft": draft}
    if any(v is not None for v in given.values()) and any(v is None for v in given.values()):
        missing = [k for k, v in given.items() if v is None]
        raise ValueError(f"speculative decoding needs draft_tokens, acceptance and draft "
                         f"together; {', '.join(missing)} missing")
    k = _axis_values("draft_tokens", draft_tokens, lo=0, allow_none=True)
    alpha = _share_values("acceptance", acceptance)
    share = _share_values("prefix_share", prefix_share)
    weights = 0.0
    if draft is not None:
        if isinstance(draft, str):
            draft = catalog.model(draft)
        elif isinstance(draft, numbers.Real) and not isinstance(draft, bool):
            draft = real_number("draft", draft, lo=0, hi=1, lo_open=True)
        elif not isinstance(draft, ModelShape):
            raise TypeError(f"draft must be a ModelShape, a catalogue model name, or a share of "
                            f"the target's decode step in (0, 1]; got {describe(draft)}")
        if isinstance(draft, ModelShape):
            weights = float(memory.weight_bytes(draft))
    return (k, alpha, share), draft, weights


def _make_grid(models, gpus, tp, context_length, batch_size, prompt_tokens, reserve, variables,
               engine, *, pp=None, ep=None, micro_batches=1,
               techniques=((None, None, None), None, 0.0), prefill_engine=None):
    model_names, model_fields = _spec_table(models, "model")
    gpu_names, gpu_fields = _spec_table(gpus, "gpu")
    if len(set(model_names.tolist())) != len(model_names):
        raise ValueError(f"models must not repeat names: {model_names.tolist()}")
    if len(set(gpu_names.tolist())) != len(gpu_names):
        raise ValueError(f"gpus must not repeat names: {gpu_names.tolist()}")
    tp = _axis_values("tp", tp, lo=1)
    ctx = _axis_values("context_length", context_length, lo=1)
    batch = _axis_values("batch_size", batch_size, lo=1)
    prompt = _axis_values("prompt_tokens", prompt_tokens, lo=1, allow_none=True)
    check_fraction("reserve", reserve, hi_open=True)
    pp = _axis_values("pp", pp, lo=1, allow_none=True)
    ep = _axis_values("ep", ep, lo=1, allow_none=True)
    micro_batches = whole_number("micro_batches", micro_batches, lo=1)
    if micro_batches > 1 and pp is None:
        raise ValueError("micro_batches > 1 needs a pipeline: give pp=[...]")
    if (batch % micro_batches).any():
        raise ValueError(f"every batch_size must be a multiple of micro_batches={micro_batches} "
                         f"(equal micro-batches); got {batch.tolist()}")
    if pp is not None or ep is not None:
        # a Dataset built before these fields were catalogued: unknown, as the catalogue says
        model_fields.setdefault("intermediate_size", np.full(len(model_names), np.nan))
        gpu_fields.setdefault("network_bandwidth", np.full(len(gpu_names), np.nan))
    for name, axis, fields, needed in (
            ("pp", pp, ("network_bandwidth", "interconnect_bandwidth"), "stage hand-offs"),
            ("ep", ep, ("interconnect_bandwidth",), "expert all-to-all")):
        if axis is None or not (axis > 1).any():
            continue
        known = np.zeros(len(gpu_names), dtype=bool)
        for field in fields:
            known |= ~np.isnan(gpu_fields.get(field, np.full(len(gpu_names), np.nan)))
        if not known.all():
            unknown = [str(n) for n, k in zip(gpu_names, known) if not k]
            raise ValueError(f"{name} > 1 needs each GPU's link bandwidth for the {needed}; "
                             f"unknown for {', '.join(unknown)}")
    for phase in {engine, prefill_engine or engine}:
        if phase.allreduce == "guide" or phase.interconnect_bandwidth is not None or \
                not (tp > 1).any():
            continue
        link = gpu_fields.get("interconnect_bandwidth", np.full(len(gpu_names), np.nan))
        unknown = [str(n) for n, v in zip(gpu_names, link) if np.isnan(v)]
        if unknown:
            raise ValueError(f"allreduce={phase.allreduce!r} with tp > 1 needs each GPU's "
                             f"interconnect bandwidth; unknown for {', '.join(unknown)} (pass "
                             f"engine=rooflinekit.Engine(allreduce='guide') for the guide's "
                             f"simple model)")
    (k, alpha, share), draft, draft_weights = techniques
    order = _resolve(variables, speculative=k is not None)
    axes = (np.arange(len(model_names)), np.arange(len(gpu_names)), tp, pp, ep, ctx, batch,
            prompt, k, alpha, share)
    shape = tuple(1 if a is None else len(a) for a in axes)
    return _Grid(model_names, gpu_names, model_fields, gpu_fields, axes, float(reserve), engine,
                 order, tuple((n,) for n in shape), micro_batches=micro_batches, draft=draft,
                 draft_weight_bytes=draft_weights, prefill_engine=prefill_engine)


def _coords(grid):
    values = {dims.MODEL: grid.model_names, dims.GPU: grid.gpu_names, dims.TP: grid.axes[_T]}
    for d, a in ((dims.PP, _PP), (dims.EP, _EP)):
        if grid.axes[a] is not None:
            values[d] = grid.axes[a]
    values.update({dims.CONTEXT_LENGTH: grid.axes[_C], dims.BATCH_SIZE: grid.axes[_B]})
    if grid.axes[_P] is not None:
        values[dims.PROMPT_TOKENS] = grid.axes[_P]
    for d, a in zip(_TECHNIQUE_DIMS, (_K, _A, _S)):
        if grid.axes[a] is not None:
            values[d] = grid.axes[a]
    return xr.Coordinates({d: xr.Variable((d,), v, {"long_name": dims.GLOSSARY[d]})
                           for d, v in values.items()})


def _wrap(grid, arrays):
    """One Dataset from the variables' arrays (numpy or dask), wrapped once."""
    data_vars = {}
    for name, values in arrays.items():
        spec = _REGISTRY[name]
        attrs = {"units": spec.units, "long_name": spec.long_name}
        attrs.update(_NOTES.get(name, {}))
        data_vars[name] = xr.Variable(tuple(_AXIS_DIMS[a] for a in _var_axes(grid, name)),
                                      values, attrs=attrs)
    return xr.Dataset(data_vars, coords=_coords(grid), attrs={
        "title": "rooflinekit design-space sweep",
        "reserve": grid.reserve,
        "replicate_kv": int(grid.replicate_kv),
        "allreduce": grid.engine.allreduce,
        "activation_dtype": grid.engine.activation_dtype,
        "compute_efficiency": float(grid.engine.compute_efficiency),
        "bandwidth_efficiency": float(grid.engine.bandwidth_efficiency),
        "step_overhead": float(grid.engine.step_overhead),
        "model_quality": grid.engine.label,
        "cells": int(np.prod(grid.shape)),
        "references": "Serving-capacity guide §2-§5; Williams et al., CACM 2009 (roofline)",
    })


def sweep_cells(ds) -> int:
    """Configurations a sweep covers: the product of its sweep dimensions' sizes."""
    return int(np.prod([ds.sizes[d] for d in _AXIS_DIMS if d in ds.dims]))


def _lazy_arrays(grid):
    """One dask array per variable; all of them views of one task per block of the grid."""
    import itertools

    import dask.array as da
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    token = tokenize(grid.model_names, grid.model_fields, grid.gpu_names, grid.gpu_fields,
                     grid.axes, grid.reserve, grid.engine.fields(), grid.variables,
                     grid.chunks, grid.replicate_kv, grid.micro_batches, grid.draft,
                     grid.draft_weight_bytes,
                     None if grid.prefill_engine is None else grid.prefill_engine.fields())
    grid_key = f"sweep-grid-{token}"
    block_name = f"sweep-block-{token}"
    block_layer = {grid_key: grid}
    for block in itertools.product(*(range(len(c)) for c in grid.chunks)):
        block_layer[(block_name, *block)] = (_compute_block, grid_key, list(block))
    layers = {block_name: block_layer}
    deps = {block_name: set()}
    names = {}
    for name in grid.variables:
        keep = _var_axes(grid, name)
        vname = f"sweep-{name}-{token}"
        layer = {}
        for idx in itertools.product(*(range(len(grid.chunks[a])) for a in keep)):
            full = [0] * _N
            for a, i in zip(keep, idx):
                full[a] = i
            layer[(vname, *idx)] = (operator.getitem, (block_name, *full), name)
        layers[vname] = layer
        deps[vname] = {block_name}
        names[name] = (vname, keep)
    graph = HighLevelGraph(layers, deps)
    out = {}
    for name, (vname, keep) in names.items():
        dtype = np.dtype(_REGISTRY[name].dtype)
        out[name] = da.Array(graph, vname, chunks=tuple(grid.chunks[a] for a in keep),
                             dtype=dtype, meta=np.empty((0,) * len(keep), dtype=dtype))
    return out
