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
import warnings
from types import MappingProxyType, SimpleNamespace

import numpy as np
import xarray as xr

from rooflinekit import catalog, dims, memory, parallel, roofline
from rooflinekit._validation import (
    as_1d,
    check_bool,
    check_fraction,
    check_integer,
    check_nonnegative,
    check_range,
    check_string,
    describe,
    real_number,
    show,
    whole_number,
)
from rooflinekit.batching import IDEAL
from rooflinekit.dtypes import bytes_per_element
from rooflinekit.hardware import GPU
from rooflinekit.models import ModelShape
from rooflinekit.sweep._dask import require_dask
from rooflinekit.units import PER_MILLION, SECONDS_PER_HOUR

__all__ = [
    "AUTO_BLOCK_CELLS",
    "MEMORY_LIMIT",
    "SPECULATIVE_VARIABLES",
    "SWEEP_DIMS",
    "VARIABLES",
    "in_memory_bytes",
    "sweep",
    "sweep_cells",
]

#: Most bytes an in-memory sweep may hold without ``memory_limit=`` saying otherwise: 4 GiB.
MEMORY_LIMIT = 4 * 2**30

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
    options: dict          # roofline options: efficiencies, step overhead, all-reduce, dtype
    variables: tuple       # requested and dependency variables, in computing order
    chunks: tuple          # per axis, a tuple of chunk lengths
    replicate_kv: bool = False   # count KV copies when tp exceeds the KV heads (memory.kv_copies)
    micro_batches: int = 1       # micro-batches a pipeline's batch is split into
    draft: object = None         # speculative decoding's draft: a ModelShape or a step share
    draft_weight_bytes: float = 0.0   # a draft model's weights, held beside every model's
    prefill_options: dict = None      # the options of prefill_time (a calibration's prefill
    #                                   knobs); None: ``options``
    model_quality: str = IDEAL
    link_shares: tuple = (1.0, 1.0)   # a calibration's share of each GPU's link bandwidth the
    #                                   all-reduces reach, (decode, prefill)

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
    """Cells whose ``tp`` divides the model's attention heads, and its KV heads or a multiple of
    them (a latent cache has none): :func:`rooflinekit.parallel.check_layout`'s rule."""
    mla = np.asarray(model.is_mla) > 0             # the spec table holds it as a number
    kv_heads = np.where(mla, 1, model.n_kv_heads)  # (a latent cache's count is not read)
    kv = mla | (kv_heads % tp == 0) | (tp % kv_heads == 0)
    return (model.n_heads % tp == 0) & kv


def _layout_ok(env):
    """Cells whose layout divides the model (rooflinekit.parallel.check_layout's rules, dp = 1).

    ``tp`` divides the heads (:func:`_tp_ok`); ``pp`` divides the layers; ``ep`` is 1, or
    divides a MoE model's experts and ``tp``.
    """
    model, tp, pp, ep = env.model, env.tp, env.pp, env.ep
    experts = (model.n_experts > 1) & (model.n_experts % ep == 0) & (tp % ep == 0)
    return _tp_ok(model, tp) & (model.n_layers % pp == 0) & ((ep == 1) | experts)


def _layout_time(base, env, grid, tokens, micro_batches):
    """A layout's step from the tensor-parallel group's: the stages, hand-offs and all-to-all.

    The terms of :func:`rooflinekit.roofline.layout_decode_step_time` on raw arrays: the
    all-to-all from :mod:`rooflinekit.parallel`'s arithmetic over the intra-node link, the
    hand-offs over the network link (the intra-node one where the GPU has none).
    """
    model, gpu, pp, ep = env.model, env.gpu, env.pp, env.ep
    act = bytes_per_element(grid.options["activation_dtype"])
    routed = parallel.expert_params(model.n_params, model.n_active_params, model.n_experts,
                                    model.n_experts_per_token)
    n_moe = parallel.moe_layer_count(model.n_layers, routed, model.n_experts, model.hidden_size,
                                     model.intermediate_size)
    per_token = parallel.all_to_all_bytes_per_token(model.hidden_size, model.n_experts_per_token,
                                                    act, ep)
    link = np.where(ep > 1, gpu.interconnect_bandwidth, np.inf)
    all_to_all = np.where(ep > 1, tokens * per_token * n_moe / ep / link
                          + 2 * n_moe * gpu.interconnect_latency, 0.0)
    network = np.where(np.isnan(gpu.network_bandwidth), gpu.interconnect_bandwidth,
                       gpu.network_bandwidth)
    network = np.where(pp > 1, network, np.inf)
    hand_offs = np.where(pp > 1, (pp - 1) * (tokens * model.hidden_size * act / network
                                             + gpu.interconnect_latency), 0.0)
    if micro_batches is None:                       # one prompt through the stages in turn
        time = base + all_to_all + hand_offs
    else:
        stage = (base + all_to_all) / pp
        time = np.maximum(micro_batches * stage, pp * stage + hand_offs)
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
    opts = grid.options
    layout = _has_layout(grid)
    gpus = env.tp * env.pp if layout else env.tp
    if name == "ridge_point":
        v = roofline.ridge_point(gpu, compute_efficiency=opts["compute_efficiency"],
                                 bandwidth_efficiency=opts["bandwidth_efficiency"],
                                 compute_dtype=opts["compute_dtype"])
    elif name == "arithmetic_intensity":
        v = roofline.arithmetic_intensity(model, batch, ctx)
    elif name == "compute_bound":
        # roofline.bound's rule (intensity at or above the ridge), as a boolean, not strings
        return out["arithmetic_intensity"] >= out["ridge_point"]
    elif name == "decode_step_time":
        m = grid.micro_batches
        b = batch if m == 1 else batch // m
        v = roofline.decode_step_time(model, gpu, b, ctx, tp, **opts)
        if layout:
            return _layout_time(_raw(v), env, grid, b, m)
    elif name == "tokens_per_second":
        # roofline.decode_throughput: batch_size / decode_step_time
        return env.batch / out["decode_step_time"]
    elif name == "tokens_per_second_per_gpu":
        # roofline.decode_throughput_per_gpu: the group's rate over its tp · n_gpus GPUs
        return out["tokens_per_second"] / (gpus * env.gpu.n_gpus)
    elif name == "prefill_time":
        cached = {} if env.share is None else {"cached_tokens": _shared_tokens(env.share, prompt)}
        v = roofline.prefill_time(model, env.prefill_gpu, prompt, tp, **cached,
                                  **(grid.prefill_options or opts))
        if layout:
            # only the uncached tokens flow through the stages (a fully cached prompt still
            # computes its last token)
            flowing = prompt if not cached else np.maximum(prompt - cached["cached_tokens"], 1)
            return _layout_time(_raw(v), env, grid, flowing, None)
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
                                           roofline_options=grid.options)
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
                                             **grid.options)
    verify = _layout_time(_raw(verify), env, grid, b * (k + 1), m)
    one = roofline.draft_step_time(model, gpu, batch, ctx, tp, draft=grid.draft,
                                   roofline_options=grid.options)
    return k * _raw(one) + verify


def _raw(value):
    """A formula's result as a numpy array on the sweep axes (size 1 where absent)."""
    if isinstance(value, xr.DataArray):
        present = [d for d in _AXIS_DIMS if d in value.dims]
        data = value.transpose(*present).values
        return data.reshape([value.sizes[d] if d in value.dims else 1 for d in _AXIS_DIMS])
    return value


def _linked(gpu, share):
    """``gpu``'s array spec with its link bandwidth times ``share`` (itself for 1)."""
    if share == 1.0:
        return gpu
    return SimpleNamespace(**{**vars(gpu),
                              "interconnect_bandwidth": gpu.interconnect_bandwidth * share})


def _compute_block(grid, block):
    """Every variable of ``grid.variables`` over one block: name -> array over its own axes.

    Each variable is computed by the public formula functions on its minimal broadcast shape
    (size-1 axes where it does not depend on an axis); those axes are then dropped.
    """
    bounds = _block_bounds(grid, tuple(block))
    extent = tuple(b.stop - b.start for b in bounds)
    model, gpu, tp, pp, ep, ctx, batch, prompt, k, alpha, share = _block_arrays(grid, bounds)
    decode_share, prefill_share = grid.link_shares
    # a calibration's link share: the collectives of each phase reach that share of the link
    prefill_gpu = _linked(gpu, prefill_share)
    gpu = _linked(gpu, decode_share)
    env = SimpleNamespace(model=model, gpu=gpu, prefill_gpu=prefill_gpu, tp=tp, pp=pp, ep=ep,
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
          reserve=memory.DEFAULT_RESERVE, variables=None, chunks=None, allreduce=True,
          compute_efficiency=1.0, bandwidth_efficiency=1.0, step_overhead=0.0,
          compute_dtype=None, activation_dtype="bf16", replicate_kv=False,
          memory_limit=MEMORY_LIMIT, pp=None, ep=None, micro_batches=1, draft_tokens=None,
          acceptance=None, draft=None, prefix_share=None, calibration=None):
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
    calibration : Calibration, optional
        Fitted knobs (:class:`rooflinekit.calibrate.Calibration`, or anything with its
        ``kwargs_for(phase)``): its prefill knobs time ``prefill_time``, its decode knobs every
        other time, instead of ``compute_efficiency``, ``bandwidth_efficiency`` and
        ``step_overhead`` (give one or the other). The Dataset's ``model_quality`` says which.
        A link share (``interconnect_efficiency``) scales each GPU's own link bandwidth.
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
        :data:`MEMORY_LIMIT` (4 GiB). Larger grids are refused before any work, with the
        estimate; lazy sweeps are not limited (they hold one block at a time).
    chunks : None, "auto", int or dict, optional
        ``None`` (default): compute now with numpy. Otherwise return a lazy, dask-backed Dataset
        in blocks of about ``chunks`` cells (``"auto"``: :data:`AUTO_BLOCK_CELLS`), or with
        ``{dimension: chunk length}`` (missing dimensions whole). Needs
        ``rooflinekit[distributed]``.
    allreduce : bool or {"collective", "ring", "guide"}
        The tensor-parallel all-reduce model of decode and prefill times
        (:mod:`rooflinekit.parallel`), as in :func:`rooflinekit.roofline.decode_step_time`:
        ``True`` (default) is ``"collective"``, ``False`` is ``"guide"`` (the guide's simple
        model, no communication). Unless ``"guide"``, every GPU must have a known interconnect
        bandwidth when any ``tp > 1``.
    compute_efficiency, bandwidth_efficiency : float
        Achieved shares of peak FLOP/s and HBM bandwidth [1], in (0, 1]. Default 1.0 (ideal).
    step_overhead : float
        Fixed time added to every forward step [s], ≥ 0. Default 0.
    compute_dtype : str, optional
        Format of the matrix multiplies ("fp8", ...); default the GPUs' 16-bit dense peak.
    activation_dtype : str
        Format of the activations ("bf16", ...): all-reduce payloads and attention. Default
        "bf16".

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
    knobs, prefill_knobs, quality = _calibration_knobs(
        calibration, compute_efficiency=compute_efficiency,
        bandwidth_efficiency=bandwidth_efficiency, step_overhead=step_overhead)
    options = _roofline_options(allreduce, compute_dtype=compute_dtype,
                                activation_dtype=activation_dtype, **knobs)
    prefill_options = _roofline_options(allreduce, compute_dtype=compute_dtype,
                                        activation_dtype=activation_dtype, **prefill_knobs)
    grid = _make_grid(models, gpus, tp, context_length, batch_size, prompt_tokens, reserve,
                      variables, options, pp=pp, ep=ep, micro_batches=micro_batches,
                      techniques=_techniques(draft_tokens, acceptance, draft, prefix_share))
    grid = dataclasses.replace(grid, replicate_kv=check_bool("replicate_kv", replicate_kv),
                               prefill_options=prefill_options, model_quality=quality,
                               link_shares=_link_shares(calibration))
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


def _calibration_knobs(calibration, **given):
    """The decode and prefill knobs, and what they make the times: ``calibration``'s or the
    ``given`` ones (which must then be left at their defaults)."""
    defaults = {"compute_efficiency": 1.0, "bandwidth_efficiency": 1.0, "step_overhead": 0.0}
    if calibration is None:
        ideal = all(np.ndim(v) == 0 and v == defaults[k] for k, v in given.items())
        return given, given, IDEAL if ideal else "roofline with the knobs given"
    if not callable(getattr(calibration, "kwargs_for", None)):
        raise TypeError(f"calibration must be a rooflinekit.calibrate.Calibration; got "
                        f"{describe(calibration)}")
    changed = [k for k, v in given.items() if np.ndim(v) or v != defaults[k]]
    if changed:
        raise TypeError(f"give calibration= or {changed[0]}=, not both: the calibration holds "
                        f"the knobs")
    def phase(name):
        with warnings.catch_warnings():
            # a link share needs a GPU, which a sweep has per cell: _link_shares applies it
            warnings.filterwarnings("ignore", f"calibration: {_LINK_SHARE}", UserWarning)
            knobs = {**defaults, **calibration.kwargs_for(name)}
        # the three knobs, and the engine knobs (roofline options) the calibration holds
        return {k: v for k, v in knobs.items() if k in defaults or k in roofline.OPTION_DEFAULTS}
    label = getattr(calibration, "label", "calibrated")
    return phase("decode"), phase("prefill"), label


#: The calibration knob that is a share of each GPU's link bandwidth
#: (``rooflinekit.calibrate.LINK_KNOBS``, a room this one does not import).
_LINK_SHARE = "interconnect_efficiency"


def _link_shares(calibration) -> tuple:
    """``(decode, prefill)`` link shares of ``calibration``'s shared knobs; 1 without."""
    if calibration is None:
        return (1.0, 1.0)
    return tuple(float(dict(getattr(calibration, phase, None) or {}).get(_LINK_SHARE, 1.0))
                 for phase in ("decode", "prefill"))


def _roofline_options(allreduce, compute_efficiency, bandwidth_efficiency, step_overhead,
                      compute_dtype, activation_dtype, **engine):
    """Validate the roofline options now: a lazy sweep must not fail later, inside a block."""
    for name, value in (("compute_efficiency", compute_efficiency),
                        ("bandwidth_efficiency", bandwidth_efficiency),
                        ("step_overhead", step_overhead)):
        if np.ndim(value):
            raise TypeError(f"{name} must be a single number; got {show(value)}")
    check_range("compute_efficiency", compute_efficiency, lo=0, hi=1, lo_open=True)
    check_range("bandwidth_efficiency", bandwidth_efficiency, lo=0, hi=1, lo_open=True)
    check_nonnegative("step_overhead", step_overhead)
    check_string("compute_dtype", compute_dtype, allow_none=True)
    # the formulas' own checks and spelling of the all-reduce model ("collective", ...)
    known = roofline.read_options(allreduce=allreduce, activation_dtype=activation_dtype,
                                  **engine)
    return {"allreduce": known["allreduce"], "compute_efficiency": float(compute_efficiency),
            "bandwidth_efficiency": float(bandwidth_efficiency),
            "step_overhead": float(step_overhead), "compute_dtype": compute_dtype,
            "activation_dtype": known["activation_dtype"], **engine}


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
               options, *, pp=None, ep=None, micro_batches=1,
               techniques=((None, None, None), None, 0.0)):
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
    if options["allreduce"] != "guide" and (tp > 1).any():
        link = gpu_fields.get("interconnect_bandwidth", np.full(len(gpu_names), np.nan))
        unknown = [str(n) for n, v in zip(gpu_names, link) if np.isnan(v)]
        if unknown:
            raise ValueError(f"allreduce={options['allreduce']!r} with tp > 1 needs each GPU's "
                             f"interconnect bandwidth; unknown for {', '.join(unknown)} (pass "
                             f"allreduce='guide' for the guide's simple model)")
    (k, alpha, share), draft, draft_weights = techniques
    order = _resolve(variables, speculative=k is not None)
    axes = (np.arange(len(model_names)), np.arange(len(gpu_names)), tp, pp, ep, ctx, batch,
            prompt, k, alpha, share)
    shape = tuple(1 if a is None else len(a) for a in axes)
    return _Grid(model_names, gpu_names, model_fields, gpu_fields, axes, float(reserve), options,
                 order, tuple((n,) for n in shape), micro_batches=micro_batches, draft=draft,
                 draft_weight_bytes=draft_weights)


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
        "allreduce": grid.options["allreduce"],
        "activation_dtype": grid.options["activation_dtype"],
        "compute_efficiency": grid.options["compute_efficiency"],
        "bandwidth_efficiency": grid.options["bandwidth_efficiency"],
        "step_overhead": grid.options["step_overhead"],
        "model_quality": grid.model_quality,
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
                     grid.axes, grid.reserve, grid.options, grid.variables, grid.chunks,
                     grid.replicate_kv, grid.micro_batches, grid.draft,
                     grid.draft_weight_bytes, grid.prefill_options)
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
