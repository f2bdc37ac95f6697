"""Design-space sweeps: every derived quantity over every dimension, as one labelled Dataset.

:func:`sweep` evaluates the memory model (:mod:`rooflinekit.memory`) and the roofline
(:mod:`rooflinekit.roofline`) over the outer product of models, GPUs, tensor-parallel degrees,
context lengths, batch sizes and prompt lengths, and returns one :class:`xarray.Dataset`.

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

Both :mod:`rooflinekit.memory` and :mod:`rooflinekit.roofline` read array specs directly.

With ``chunks`` the Dataset is lazy and dask-backed. Its graph holds one task per block of the grid;
a task receives the small coordinate arrays and the block's index, computes every variable of that
block and nothing more, and each variable's chunks are views of those tasks. The full grid never
sits in the graph or in memory, so the same code runs on a threaded scheduler or a
``dask.distributed`` cluster, and the reductions here (:func:`best_configuration`,
:func:`best_tp`, :func:`cheapest_configuration`, :func:`pareto_front`) stream through the blocks
keeping only a few numbers per block.

dask and distributed are optional: ``pip install rooflinekit[distributed]``. netCDF output needs
``netCDF4`` or ``scipy`` (scipy is a core dependency: netCDF3 via ``engine="scipy"``); zarr output
needs ``zarr`` (``pip install zarr``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import numbers
import operator
import sys
from types import MappingProxyType, SimpleNamespace

import numpy as np
import xarray as xr

from . import catalog, dims, memory, roofline
from ._validation import as_numeric, check_fraction, check_integer, check_nonnegative, check_range
from .hardware import GPU
from .models import ModelShape
from .units import PER_MILLION, SECONDS_PER_HOUR

__all__ = [
    "SWEEP_DIMS", "VARIABLES", "AUTO_BLOCK_CELLS", "PARETO_POINT", "sweep", "sweep_cells",
    "best_configuration", "best_tp", "cheapest_configuration", "pareto_front", "progress_bar",
    "parse_axis", "save", "add_sweep_arguments", "sweep_cli_main",
]

#: Axis order of every sweep; a variable uses the subsequence of these it depends on.
SWEEP_DIMS = (dims.MODEL, dims.GPU, dims.TP, dims.CONTEXT_LENGTH, dims.BATCH_SIZE,
              dims.PROMPT_TOKENS)
_M, _G, _T, _C, _B, _P = range(6)
_PROMPT = "prompt"   # placeholder axis: prompt_tokens, or context_length when no prompt is given

_EXTRA = "rooflinekit[distributed]"


def _require_dask():
    try:
        import dask
        import dask.array  # noqa: F401
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(f"chunked (lazy) sweeps need dask; install it with "
                          f"`pip install {_EXTRA}`") from exc
    return dask


# -- the variables --------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Var:
    axes: tuple          # axes of SWEEP_DIMS (with _PROMPT standing for the prefill length axis)
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
    "group_memory_bytes": _Var((_G, _T), "bytes", "group memory"),
    "usable_kv_bytes": _Var((_M, _G, _T), "bytes", "usable KV bytes"),
    "weights_fit": _Var((_M, _G, _T), "1", "group memory holds the weights and a KV budget",
                        "?", deps=("usable_kv_bytes",)),
    "max_concurrent_sequences": _Var((_M, _G, _T, _C), "1", "max concurrent sequences", "i8"),
    "fits": _Var((_M, _G, _T, _C, _B), "1", "batch fits in the KV budget", "?",
                 deps=("max_concurrent_sequences",)),
    "ridge_point": _Var((_G,), "FLOP/byte", "ridge point (peak FLOP/s / bandwidth)"),
    "arithmetic_intensity": _Var((_M, _C, _B), "FLOP/byte", "decode arithmetic intensity"),
    "compute_bound": _Var((_M, _G, _C, _B), "1",
                          "decode step is compute-bound (intensity >= ridge point)", "?",
                          deps=("arithmetic_intensity", "ridge_point")),
    "decode_step_time": _Var((_M, _G, _T, _C, _B), "s", "decode step time (ITL)"),
    "tokens_per_second": _Var((_M, _G, _T, _C, _B), "tokens/s", "decode throughput per group",
                              deps=("decode_step_time",)),
    "tokens_per_second_per_gpu": _Var((_M, _G, _T, _C, _B), "tokens/s",
                                      "decode throughput per GPU", deps=("tokens_per_second",)),
    "prefill_time": _Var((_M, _G, _T, _PROMPT), "s", "prefill time (TTFT without queueing)"),
    "cost_per_million_tokens": _Var((_M, _G, _T, _C, _B), "USD/1M tokens",
                                    "GPU cost per million generated tokens",
                                    deps=("tokens_per_second",)),
})

_NOTES = {
    "cost_per_million_tokens": {
        "comment": "NaN where the GPU has no known hourly price; GPU time only, fully utilised "
                   "(rooflinekit.roofline.cost_per_million_tokens)"},
    "compute_bound": {"comment": "equals rooflinekit.roofline.bound(arithmetic_intensity, "
                                 "ridge_point) == 'compute'"},
    "prefill_time": {"comment": "one pass over the prompt with nothing cached "
                                "(rooflinekit.roofline.prefill_time)"},
}


# -- inputs ---------------------------------------------------------------------------------------

#: Spec fields the memory and roofline formulas read (a catalogue Dataset holds them all).
_REQUIRED = {
    "model": ("n_layers", "n_heads", "head_dim", "hidden_size", "n_params", "n_active_params",
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
                  if var.dims == (dim,) and var.dtype.kind in "iuf"}
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
    if isinstance(values, xr.DataArray):
        values = values.values
    data = as_numeric(name, values)
    if data.ndim > 1:
        raise ValueError(f"{name} must be a number or a 1-D sequence, got {data.ndim} dimensions")
    data = np.atleast_1d(data)
    if data.size == 0:
        raise ValueError(f"{name} must hold at least one value")
    check_integer(name, data, lo=lo)
    if np.unique(data).size != data.size:
        raise ValueError(f"{name} must not repeat values (it labels a dimension)")
    return data.astype(np.int64)


@dataclasses.dataclass(frozen=True, eq=False)
class _Grid:
    """Everything a block task needs: spec tables, axis values and the block boundaries."""

    model_names: np.ndarray
    gpu_names: np.ndarray
    model_fields: dict
    gpu_fields: dict
    axes: tuple            # 1-D arrays for model/gpu index, tp, context, batch, prompt (or None)
    reserve: float
    options: dict          # roofline options: efficiencies, step overhead, all-reduce, dtype
    variables: tuple       # requested and dependency variables, in computing order
    chunks: tuple          # per axis, a tuple of chunk lengths

    @property
    def shape(self):
        return tuple(1 if a is None else len(a) for a in self.axes)


def _resolve(variables):
    """Requested variables plus every variable they are computed from, in dependency order."""
    if variables is None:
        wanted = list(VARIABLES)
    else:
        wanted = [variables] if isinstance(variables, str) else list(variables)
        unknown = [v for v in wanted if v not in VARIABLES]
        if unknown:
            raise ValueError(f"unknown sweep variables {unknown}; choose from {list(VARIABLES)}")
    order = []

    def visit(v):
        for d in VARIABLES[v].deps:
            visit(d)
        if v not in order:
            order.append(v)

    for v in wanted:
        visit(v)
    return tuple(order)


# -- one block ------------------------------------------------------------------------------------

def _shaped(values, axis, n=6):
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
    """Array specs and axis arrays of one block, shaped to broadcast over the six sweep axes."""
    model = SimpleNamespace(**{k: _shaped(v[bounds[_M]], _M) for k, v in grid.model_fields.items()})
    gpu = SimpleNamespace(**{k: _shaped(v[bounds[_G]], _G) for k, v in grid.gpu_fields.items()})
    tp = _shaped(grid.axes[_T][bounds[_T]], _T)
    ctx = _shaped(grid.axes[_C][bounds[_C]], _C)
    batch = _shaped(grid.axes[_B][bounds[_B]], _B)
    prompt = ctx if grid.axes[_P] is None else _shaped(grid.axes[_P][bounds[_P]], _P)
    return model, gpu, tp, ctx, batch, prompt


def _var_axes(grid, name):
    """The six-axis positions variable ``name`` runs over in this grid (sorted)."""
    prompt_axis = _C if grid.axes[_P] is None else _P
    return tuple(sorted({prompt_axis if a == _PROMPT else a for a in VARIABLES[name].axes}))


def _formula(name, out, env, grid):
    """One variable from the public formula functions (array specs in, ndarray out)."""
    model, gpu, tp, ctx, batch = env.model, env.gpu, env.tp, env.ctx, env.batch
    r = grid.reserve
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
    if name == "usable_kv_bytes":
        return memory.usable_kv_bytes(model, gpu, tp=tp, reserve=r)
    if name == "weights_fit":
        return out["usable_kv_bytes"] > 0
    if name == "max_concurrent_sequences":
        return memory.max_concurrent_sequences(model, gpu, ctx, tp=tp, reserve=r)
    if name == "fits":
        return out["max_concurrent_sequences"] >= batch
    return _roofline_formula(name, out, env, grid)


def _roofline_formula(name, out, env, grid):
    """A roofline variable from the public :mod:`rooflinekit.roofline` functions."""
    model, gpu, tp, ctx, batch, prompt = env.model, env.gpu, env.tp, env.ctx, env.batch, env.prompt
    opts = grid.options
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
        v = roofline.decode_time_per_token(model, gpu, batch, ctx, tp, **opts)
    elif name == "tokens_per_second":
        # roofline.decode_throughput: batch_size / decode_time_per_token
        return env.batch / out["decode_step_time"]
    elif name == "tokens_per_second_per_gpu":
        # roofline.decode_throughput_per_gpu: the group's rate over its tp · n_gpus GPUs
        return out["tokens_per_second"] / (env.tp * env.gpu.n_gpus)
    elif name == "prefill_time":
        v = roofline.prefill_time(model, gpu, prompt, tp, **opts)
    elif name == "cost_per_million_tokens":
        # roofline.cost_per_million_tokens, term for term (tp·n_gpus GPUs at the per-GPU price
        # for 1e6 / rate seconds), from the throughput already computed instead of a second
        # decode-step evaluation; tests check it equals the public function cell by cell.
        per_gpu = env.gpu.hourly_price / env.gpu.n_gpus
        known = ~np.isnan(per_gpu)
        usd_per_second = (env.tp * env.gpu.n_gpus) * np.where(known, per_gpu, 0.0) / \
            SECONDS_PER_HOUR
        cost = usd_per_second / out["tokens_per_second"] * PER_MILLION
        return np.where(known, cost, np.nan)
    else:  # pragma: no cover - VARIABLES and these tables are kept together
        raise KeyError(name)
    return _raw(v)


def _raw(value):
    """A formula's result as a numpy array on the six sweep axes (size 1 where absent)."""
    if isinstance(value, xr.DataArray):
        present = [d for d in SWEEP_DIMS if d in value.dims]
        data = value.transpose(*present).values
        return data.reshape([value.sizes[d] if d in value.dims else 1 for d in SWEEP_DIMS])
    return value


def _compute_block(grid, block):
    """Every variable of ``grid.variables`` over one block: name -> array over its own axes.

    Each variable is computed by the public formula functions on its minimal broadcast shape
    (size-1 axes where it does not depend on an axis); those axes are then dropped.
    """
    bounds = _block_bounds(grid, tuple(block))
    extent = tuple(b.stop - b.start for b in bounds)
    model, gpu, tp, ctx, batch, prompt = _block_arrays(grid, bounds)
    env = SimpleNamespace(model=model, gpu=gpu, tp=tp, ctx=ctx, batch=batch, prompt=prompt,
                          bounds=bounds)
    out = {}
    for name in grid.variables:
        out[name] = _formula(name, out, env, grid)
    result = {}
    for name, value in out.items():
        keep = _var_axes(grid, name)
        value = np.asarray(value)
        value = value.reshape((1,) * (6 - value.ndim) + value.shape)
        target = tuple(extent[a] if a in keep else 1 for a in range(6))
        if value.shape != target:
            # a formula that does not vary along one of its axes for these inputs
            value = np.broadcast_to(value, target).copy()
        result[name] = value.reshape([extent[a] for a in keep]).astype(VARIABLES[name].dtype,
                                                                       copy=False)
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
        unknown = [d for d in chunks if d not in SWEEP_DIMS]
        if unknown:
            raise ValueError(f"chunks names unknown dimensions {unknown}; use {list(SWEEP_DIMS)}")
        out = []
        for ax, d in enumerate(SWEEP_DIMS):
            size = chunks.get(d, -1)
            if isinstance(size, bool) or not isinstance(size, numbers.Integral) or (
                    size < 1 and size != -1):
                raise ValueError(f"chunks[{d!r}] must be an integer >= 1 or -1 (whole axis), "
                                 f"got {size!r}")
            out.append(_chunk_axis(shape[ax], shape[ax] if size == -1 else size))
        return tuple(out)
    if isinstance(chunks, bool) or not isinstance(chunks, numbers.Integral) or chunks < 1:
        raise ValueError(f"chunks must be None, 'auto', an integer number of cells per block >= 1 "
                         f"or a dict {{dimension: chunk length}}, got {chunks!r}")
    # Fill blocks from the last axis backwards, so a block is a contiguous slab of the grid.
    out = [None] * 6
    cells = 1
    for ax in reversed(range(6)):
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
        return _compute_block(grid, (0,) * 6)
    import concurrent.futures
    import itertools
    import os

    grid = dataclasses.replace(grid, chunks=_chunks(shape, AUTO_BLOCK_CELLS))
    keeps = {name: _var_axes(grid, name) for name in grid.variables}
    out = {name: np.empty([shape[a] for a in keep], dtype=VARIABLES[name].dtype)
           for name, keep in keeps.items()}
    starts = [np.concatenate([[0], np.cumsum(c)[:-1]]) for c in grid.chunks]

    def run(block):
        result = _compute_block(grid, block)
        for name, keep in keeps.items():
            if any(block[a] for a in range(6) if a not in keep):
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

def sweep(models, gpus, tp=1, context_length=4096, batch_size=1, prompt_tokens=None, *,
          reserve=memory.DEFAULT_RESERVE, variables=None, chunks=None, allreduce=False,
          compute_efficiency=1.0, bandwidth_efficiency=1.0, step_overhead=0.0,
          compute_dtype=None):
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
    reserve : float
        Working-space share of the memory left after weights, in [0, 1). Default 0.10 (§2.4).
    variables : sequence of str, optional
        Variables to compute (and keep); default all of :data:`VARIABLES`. Variables they are
        computed from are computed too and kept.
    chunks : None, "auto", int or dict, optional
        ``None`` (default): compute now with numpy. Otherwise return a lazy, dask-backed Dataset
        in blocks of about ``chunks`` cells (``"auto"``: :data:`AUTO_BLOCK_CELLS`), or with
        ``{dimension: chunk length}`` (missing dimensions whole). Needs
        ``rooflinekit[distributed]``.
    allreduce : bool
        Whether decode and prefill times include the tensor-parallel all-reduce cost
        (:mod:`rooflinekit.parallel`); ``False`` (default) is the guide's simple model. With
        ``True`` every GPU must have a known interconnect bandwidth when any ``tp > 1``.
    compute_efficiency, bandwidth_efficiency : float
        Achieved shares of peak FLOP/s and HBM bandwidth [1], in (0, 1]. Default 1.0 (ideal).
    step_overhead : float
        Fixed time added to every forward step [s], ≥ 0. Default 0.
    compute_dtype : str, optional
        Format of the matrix multiplies ("fp8", ...); default the GPUs' 16-bit dense peak.

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
    public functions, on numpy arrays shaped to broadcast, instead of looping. ``fits`` is
    ``max_concurrent_sequences >= batch_size``: the batch's KV at ``context_length`` fits beside the
    weights and the reserve. Latency and throughput are computed whether or not a cell fits; mask
    with ``fits`` (the reductions do).

    References
    ----------
    .. [1] Serving-capacity guide §2–§5.
    .. [2] Williams, Waterman & Patterson, "Roofline: An Insightful Visual Performance Model",
       CACM 52(4), 2009.
    """
    options = _roofline_options(allreduce, compute_efficiency, bandwidth_efficiency,
                                step_overhead, compute_dtype)
    grid = _make_grid(models, gpus, tp, context_length, batch_size, prompt_tokens, reserve,
                      variables, options)
    if chunks is None:
        return _wrap(grid, _compute_in_memory(grid))
    _require_dask()
    grid = dataclasses.replace(grid, chunks=_chunks(grid.shape, chunks))
    return _wrap(grid, _lazy_arrays(grid))


def _roofline_options(allreduce, compute_efficiency, bandwidth_efficiency, step_overhead,
                      compute_dtype):
    """Validate the roofline options now: a lazy sweep must not fail later, inside a block."""
    if not isinstance(allreduce, (bool, np.bool_)):
        raise TypeError("allreduce must be True or False")
    for name, value in (("compute_efficiency", compute_efficiency),
                        ("bandwidth_efficiency", bandwidth_efficiency),
                        ("step_overhead", step_overhead)):
        if np.ndim(value):
            raise TypeError(f"{name} must be a single number")
    check_range("compute_efficiency", compute_efficiency, lo=0, hi=1, lo_open=True)
    check_range("bandwidth_efficiency", bandwidth_efficiency, lo=0, hi=1, lo_open=True)
    check_nonnegative("step_overhead", step_overhead)
    if compute_dtype is not None and not isinstance(compute_dtype, str):
        raise TypeError(f"compute_dtype must be a format name such as 'fp8', got "
                        f"{type(compute_dtype).__name__}")
    return {"allreduce": bool(allreduce), "compute_efficiency": float(compute_efficiency),
            "bandwidth_efficiency": float(bandwidth_efficiency),
            "step_overhead": float(step_overhead), "compute_dtype": compute_dtype}


def _make_grid(models, gpus, tp, context_length, batch_size, prompt_tokens, reserve, variables,
               options):
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
    if options["allreduce"] and (tp > 1).any():
        link = gpu_fields.get("interconnect_bandwidth", np.full(len(gpu_names), np.nan))
        unknown = [str(n) for n, v in zip(gpu_names, link) if np.isnan(v)]
        if unknown:
            raise ValueError(f"allreduce=True with tp > 1 needs each GPU's interconnect "
                             f"bandwidth; unknown for {', '.join(unknown)}")
    order = _resolve(variables)
    axes = (np.arange(len(model_names)), np.arange(len(gpu_names)), tp, ctx, batch, prompt)
    shape = tuple(1 if a is None else len(a) for a in axes)
    return _Grid(model_names, gpu_names, model_fields, gpu_fields, axes, float(reserve), options,
                 order, tuple((n,) for n in shape))


def _coords(grid):
    values = {dims.MODEL: grid.model_names, dims.GPU: grid.gpu_names, dims.TP: grid.axes[_T],
              dims.CONTEXT_LENGTH: grid.axes[_C], dims.BATCH_SIZE: grid.axes[_B]}
    if grid.axes[_P] is not None:
        values[dims.PROMPT_TOKENS] = grid.axes[_P]
    return xr.Coordinates({d: xr.Variable((d,), v, {"long_name": dims.GLOSSARY[d]})
                           for d, v in values.items()})


def _wrap(grid, arrays):
    """One Dataset from the variables' arrays (numpy or dask), wrapped once."""
    data_vars = {}
    for name, values in arrays.items():
        spec = VARIABLES[name]
        attrs = {"units": spec.units, "long_name": spec.long_name}
        attrs.update(_NOTES.get(name, {}))
        data_vars[name] = xr.Variable(tuple(SWEEP_DIMS[a] for a in _var_axes(grid, name)),
                                      values, attrs=attrs)
    return xr.Dataset(data_vars, coords=_coords(grid), attrs={
        "title": "rooflinekit design-space sweep",
        "reserve": grid.reserve,
        "allreduce": int(grid.options["allreduce"]),
        "compute_efficiency": grid.options["compute_efficiency"],
        "bandwidth_efficiency": grid.options["bandwidth_efficiency"],
        "step_overhead": grid.options["step_overhead"],
        "cells": int(np.prod(grid.shape)),
        "references": "Serving-capacity guide §2-§5; Williams et al., CACM 2009 (roofline)",
    })


def sweep_cells(ds) -> int:
    """Configurations a sweep covers: the product of its sweep dimensions' sizes."""
    return int(np.prod([ds.sizes[d] for d in SWEEP_DIMS if d in ds.dims]))


def _lazy_arrays(grid):
    """One dask array per variable; all of them views of one task per block of the grid."""
    import itertools

    import dask.array as da
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    token = tokenize(grid.model_names, grid.model_fields, grid.gpu_names, grid.gpu_fields,
                     grid.axes, grid.reserve, grid.options, grid.variables, grid.chunks)
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
            full = [0] * 6
            for a, i in zip(keep, idx):
                full[a] = i
            layer[(vname, *idx)] = (operator.getitem, (block_name, *full), name)
        layers[vname] = layer
        deps[vname] = {block_name}
        names[name] = (vname, keep)
    graph = HighLevelGraph(layers, deps)
    out = {}
    for name, (vname, keep) in names.items():
        dtype = np.dtype(VARIABLES[name].dtype)
        out[name] = da.Array(graph, vname, chunks=tuple(grid.chunks[a] for a in keep),
                             dtype=dtype, meta=np.empty((0,) * len(keep), dtype=dtype))
    return out


# -- streaming reductions -------------------------------------------------------------------------

def _as_list(value):
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _ordered_dims(arrays):
    present = []
    for arr in arrays:
        for d in arr.dims:
            if d not in present:
                present.append(d)
    return [d for d in SWEEP_DIMS if d in present] + [d for d in present if d not in SWEEP_DIMS]


def _reduction_inputs(ds, names, by):
    """The DataArrays named, their union of dimensions (sweep order) and the ``by`` dims."""
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"ds must be an xarray.Dataset from sweep(), got {type(ds).__name__}")
    missing = [n for n in names if n not in ds.variables]
    if missing:
        raise ValueError(f"the sweep has no variable {missing[0]!r}; compute it with "
                         f"sweep(..., variables=[...]) or choose from {list(ds.data_vars)}")
    arrays = [ds[n].variable for n in names]
    full = _ordered_dims(arrays)
    by = _as_list(by)
    for d in by:
        if d not in ds.dims:
            raise ValueError(f"by names {d!r}, which is not a dimension of the sweep "
                             f"({list(ds.dims)})")
        if d not in full:
            full.append(d)
    full = [d for d in SWEEP_DIMS if d in full] + [d for d in full if d not in SWEEP_DIMS]
    return arrays, full, by


def _limits(limits):
    out = {}
    for name, bound in (limits or {}).items():
        if bound is None:
            continue
        if isinstance(bound, bool) or not isinstance(bound, numbers.Real) or math.isnan(bound):
            raise ValueError(f"limits[{name!r}] must be a number, got {bound!r}")
        out[name] = float(bound)
    return out


def _broadcast_block(values, var_dims, full_dims):
    """A numpy block over ``var_dims`` as a view over ``full_dims`` (size-1 where absent)."""
    present = [d for d in full_dims if d in var_dims]
    values = np.asarray(values)
    if list(var_dims) != present:
        values = np.transpose(values, [list(var_dims).index(d) for d in present])
    shape = [values.shape[present.index(d)] if d in present else 1 for d in full_dims]
    return values.reshape(shape)


def _feasible(blocks, layout):
    """Cells that satisfy every mask and limit: ``layout`` says which block is what."""
    ok = None
    for kind, arr, bound in zip(layout["kinds"], blocks, layout["bounds"]):
        if kind == "where":
            cond = arr.astype(bool)
        elif kind == "limit":
            cond = arr <= bound
        else:
            continue
        ok = cond if ok is None else ok & cond
    return ok


def _best_block(layout, offsets, extents, *blocks):
    """Best cell per ``by`` index within one block: (by flat index, score, rest flat index)."""
    full = layout["full_dims"]
    views = [_broadcast_block(b, d, full) for b, d in zip(blocks, layout["dims"])]
    shape = tuple(extents)        # a `by` dimension no input has still gets one row per label
    objective = np.broadcast_to(views[0], shape)
    score = objective if layout["maximize"] else -objective
    ok = np.isfinite(score)
    cond = _feasible(views, layout)
    if cond is not None:
        ok = ok & cond
    score = np.where(ok, score, -np.inf)
    by_axes = [full.index(d) for d in layout["by"]]
    rest_axes = [a for a in range(len(full)) if a not in by_axes]
    moved = np.moveaxis(score, by_axes + rest_axes, range(len(full)))
    by_shape = [shape[a] for a in by_axes]
    rest_shape = [shape[a] for a in rest_axes]
    flat = moved.reshape(int(np.prod(by_shape)), int(np.prod(rest_shape)))
    local = np.argmax(flat, axis=1)
    best = flat[np.arange(flat.shape[0]), local]
    # local indices -> indices in the whole grid (C order within a block is C order globally)
    rest_local = np.unravel_index(local, rest_shape) if rest_shape else ()
    rest_global = [r + offsets[a] for r, a in zip(rest_local, rest_axes)]
    full_shape = layout["full_shape"]
    rest_full = [full_shape[a] for a in rest_axes]
    rest_flat = (np.ravel_multi_index(rest_global, rest_full) if rest_axes
                 else np.zeros(flat.shape[0], dtype=np.int64))
    by_local = np.unravel_index(np.arange(flat.shape[0]), by_shape) if by_shape else ()
    by_global = [b + offsets[a] for b, a in zip(by_local, by_axes)]
    by_full = [full_shape[a] for a in by_axes]
    by_flat = (np.ravel_multi_index(by_global, by_full) if by_axes
               else np.zeros(flat.shape[0], dtype=np.int64))
    return by_flat.astype(np.int64), best, np.asarray(rest_flat, dtype=np.int64)


def _merge_best(n_by, partials):
    """Combine per-block bests: higher score wins; ties go to the earlier cell of the grid."""
    score = np.full(n_by, -np.inf)
    index = np.full(n_by, np.iinfo(np.int64).max, dtype=np.int64)
    for by_flat, best, rest_flat in partials:
        cur_s, cur_i = score[by_flat], index[by_flat]
        better = (best > cur_s) | ((best == cur_s) & (rest_flat < cur_i) & (best > -np.inf))
        score[by_flat] = np.where(better, best, cur_s)
        index[by_flat] = np.where(better, rest_flat, cur_i)
    return score, index


def _blocks_of(ds_arrays, full_dims, full_shape):
    """Per-array numpy data (one block), or dask block grids aligned on shared dimensions."""
    lazy = any(_is_dask(a.data) for a in ds_arrays)
    if not lazy:
        return False, None
    chunks = {}
    for a in ds_arrays:
        if _is_dask(a.data):
            for d, c in zip(a.dims, a.chunks):
                if d in chunks and chunks[d] != c:
                    chunks[d] = None      # conflicting: rechunk below to a common grid
                else:
                    chunks.setdefault(d, c)
    for d, c in list(chunks.items()):
        if c is None:
            sizes = [a.chunks[a.dims.index(d)] for a in ds_arrays if _is_dask(a.data)
                     and d in a.dims]
            chunks[d] = min(sizes, key=len)
    aligned = []
    for a in ds_arrays:
        want = {d: chunks.get(d, (a.sizes[d],)) for d in a.dims}
        aligned.append(a.chunk(want))
    full_chunks = {d: chunks.get(d, None) for d in full_dims}
    for d, size in zip(full_dims, full_shape):
        if full_chunks[d] is None:
            full_chunks[d] = (size,)
    return True, (aligned, full_chunks)


def _is_dask(data):
    return type(data).__module__.startswith("dask")


def _run_blocks(func, layout, arrays, full_dims, progress):
    """Apply ``func(layout, offsets, extents, *blocks)`` to every block; a list of results."""
    lazy, info = _blocks_of(arrays, full_dims, layout["full_shape"])
    if not lazy:
        blocks = [np.asarray(a.values) for a in arrays]
        return [func(layout, [0] * len(full_dims), list(layout["full_shape"]), *blocks)]
    import itertools

    import dask
    aligned, full_chunks = info
    grids = [a.data.to_delayed(optimize_graph=False) for a in aligned]
    starts = {d: np.concatenate([[0], np.cumsum(full_chunks[d])[:-1]]).astype(int)
              for d in full_dims}
    tasks = []
    call = dask.delayed(func, pure=True)
    for idx in itertools.product(*(range(len(full_chunks[d])) for d in full_dims)):
        where = dict(zip(full_dims, idx))
        blocks = [g[tuple(where[d] for d in a.dims)] for g, a in zip(grids, aligned)]
        offsets = [int(starts[d][where[d]]) for d in full_dims]
        extents = [int(full_chunks[d][where[d]]) for d in full_dims]
        tasks.append(call(layout, offsets, extents, *blocks))
    return _compute(tasks, progress)


def _client():
    """The active ``dask.distributed`` client, or ``None``."""
    if "distributed" not in sys.modules:
        return None
    from distributed import get_client
    try:
        return get_client()
    except ValueError:
        return None


def _compute(tasks, progress):
    """Compute dask collections (a list of results), with a progress bar when asked."""
    import dask
    client = _client()
    if progress and client is not None:
        from distributed import progress as distributed_progress
        futures = client.compute(list(tasks))
        distributed_progress(futures)
        return client.gather(futures)
    with progress_bar(progress):
        return list(dask.compute(*tasks))


@contextlib.contextmanager
def progress_bar(enabled=True, *, minimum=1.0, out=None):
    """Show dask's text progress bar while the enclosed computations run on a local scheduler.

    Parameters
    ----------
    enabled : bool
        ``False`` makes this a no-op (so callers can pass a flag through).
    minimum : float
        Seconds a computation must run before the bar appears [s]. Default 1.
    out : file, optional
        Stream for the bar; default ``sys.stderr``, so a table on stdout stays clean.

    Notes
    -----
    On a ``dask.distributed`` cluster the reductions here use ``distributed.progress`` on their
    futures instead; this context manager covers the threaded and process schedulers.
    """
    if not enabled:
        yield
        return
    _require_dask()
    from dask.diagnostics import ProgressBar
    with ProgressBar(minimum=minimum, out=out if out is not None else sys.stderr):
        yield


def best_configuration(ds, objective="tokens_per_second_per_gpu", *, by=dims.MODEL,
                       maximize=True, where="fits", limits=None, progress=False):
    """The best cell of a sweep for each ``by`` label, streaming through its blocks.

    Parameters
    ----------
    ds : xarray.Dataset
        A :func:`sweep` result, in memory or lazy (dask-backed, from ``chunks=``).
    objective : str
        Variable to optimise. Cells where it is NaN (an unknown price) never win.
    by : str or sequence of str, optional
        Dimensions to keep: one best cell per label (default ``"model"``); ``None`` for one best
        cell overall.
    maximize : bool
        Maximise (default) or minimise the objective.
    where : str or sequence of str, optional
        Boolean variables a cell must satisfy (all of them); default ``"fits"``.
    limits : dict, optional
        Upper bounds ``{variable: bound}`` a cell must meet, e.g. ``{"prefill_time": 0.5}``.
    progress : bool
        Show a progress bar on stderr while a lazy sweep computes.

    Returns
    -------
    xarray.Dataset
        Over ``by``: ``found`` (whether any cell qualifies), the objective's best value (NaN where
        none is found), and, as variables named after the other dimensions, the coordinates of
        the best cell (``-1``, or ``""`` for names, where none is found).

    Notes
    -----
    Ties go to the earliest cell in the grid's order (model, gpu, tp, context_length,
    batch_size, prompt_tokens), so with ascending coordinates the smaller degree and the
    smaller batch win. A lazy sweep is reduced block by block: each block contributes one
    candidate per label, so memory stays one block (per worker) whatever the grid size, and the
    result is identical to the in-memory reduction.
    """
    if not isinstance(maximize, (bool, np.bool_)):
        raise TypeError("maximize must be True or False")
    if not isinstance(objective, str):
        raise TypeError(f"objective must be a variable name, got {type(objective).__name__}")
    wheres = _as_list(where)
    bounds = _limits(limits)
    names = [objective, *wheres, *bounds]
    arrays, full, by = _reduction_inputs(ds, names, by)
    for w in wheres:
        if ds[w].dtype != bool:
            raise ValueError(f"where names {w!r}, which is not a boolean variable")
    layout = {
        "full_dims": full, "by": by, "maximize": bool(maximize),
        "dims": [a.dims for a in arrays],
        "kinds": ["objective"] + ["where"] * len(wheres) + ["limit"] * len(bounds),
        "bounds": [None] * (1 + len(wheres)) + list(bounds.values()),
        "full_shape": [ds.sizes[d] for d in full],
    }
    partials = _run_blocks(_best_block, layout, arrays, full, progress)
    n_by = int(np.prod([ds.sizes[d] for d in by])) if by else 1
    score, index = _merge_best(n_by, partials)
    found = score > -np.inf
    value = np.where(found, score if maximize else -score, np.nan)
    by_shape = [ds.sizes[d] for d in by]
    rest = [d for d in full if d not in by]
    rest_shape = [ds.sizes[d] for d in rest]
    safe = np.where(found, index, 0)
    rest_idx = np.unravel_index(safe, rest_shape) if rest else ()
    out = {
        "found": (by, found.reshape(by_shape),
                  {"units": "1", "long_name": "a qualifying configuration exists"}),
        objective: (by, value.reshape(by_shape), dict(ds[objective].attrs)),
    }
    for d, idx in zip(rest, rest_idx):
        coord = np.asarray(ds[d].values)
        picked = coord[idx]
        if coord.dtype.kind in "US":
            picked = np.where(found, picked, "")
        else:
            picked = np.where(found, picked, -1).astype(coord.dtype if coord.dtype.kind in "iu"
                                                        else np.float64)
        out[d] = (by, picked.reshape(by_shape),
                  {"long_name": f"{d} of the best configuration"
                   + (" (-1: none)" if coord.dtype.kind not in "US" else " ('': none)")})
    result = xr.Dataset({k: xr.Variable(*v) for k, v in out.items()},
                        coords={d: ds[d].values for d in by})
    result.attrs.update({"objective": objective, "maximize": int(bool(maximize)),
                         "where": ", ".join(wheres),
                         "limits": ", ".join(f"{k} <= {v:g}" for k, v in bounds.items())})
    return result


def cheapest_configuration(ds, *, max_ttft=None, max_itl=None, by=dims.MODEL, progress=False):
    """The cheapest fitting configuration meeting TTFT and ITL targets, per ``by`` label.

    Parameters
    ----------
    ds : xarray.Dataset
        A :func:`sweep` result with ``cost_per_million_tokens``, ``prefill_time`` (TTFT) and
        ``decode_step_time`` (ITL).
    max_ttft : float, optional
        Longest acceptable time to first token [s] (``prefill_time``).
    max_itl : float, optional
        Longest acceptable inter-token latency [s] (``decode_step_time``).
    by : str or sequence of str, optional
        One answer per label of these dimensions (default ``"model"``); ``None``: one overall.
    progress : bool
        Show a progress bar while a lazy sweep computes.

    Returns
    -------
    xarray.Dataset
        As :func:`best_configuration`, with ``cost_per_million_tokens`` minimised over cells that
        fit and meet both targets. GPUs with no known price never win.
    """
    limits = {"prefill_time": max_ttft, "decode_step_time": max_itl}
    for k, v in limits.items():
        if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Real) or not v > 0):
            raise ValueError(f"max_{'ttft' if k == 'prefill_time' else 'itl'} must be a "
                             f"positive number of seconds, got {v!r}")
    return best_configuration(ds, "cost_per_million_tokens", by=by, maximize=False,
                              where="fits", limits=limits, progress=progress)


def _front(x, y, index):
    """Non-dominated points (both minimised); among equal points the earliest cell is kept."""
    order = np.lexsort((index, y, x))
    x, y, index = x[order], y[order], index[order]
    best_before = np.concatenate([[np.inf], np.minimum.accumulate(y)[:-1]]) if y.size else y
    keep = y < best_before
    return x[keep], y[keep], index[keep]


def _front_block(layout, offsets, extents, *blocks):
    """The Pareto front of one block: (x, y, flat index of the cell in the whole grid)."""
    full = layout["full_dims"]
    views = [_broadcast_block(b, d, full) for b, d in zip(blocks, layout["dims"])]
    shape = tuple(extents)
    x = np.broadcast_to(views[0], shape)
    y = np.broadcast_to(views[1], shape)
    ok = np.isfinite(x) & np.isfinite(y)
    cond = _feasible(views, layout)
    if cond is not None:
        ok = ok & cond
    local = np.nonzero(ok)
    flat = np.ravel_multi_index([i + o for i, o in zip(local, offsets)], layout["full_shape"])
    return _front(x[local], y[local], flat.astype(np.int64))


#: Dimension of :func:`pareto_front` results: the points of the front, cheapest first.
PARETO_POINT = "pareto_point"


def pareto_front(ds, x="cost_per_million_tokens", y="decode_step_time", *, where="fits",
                 limits=None, progress=False):
    """The configurations no other configuration beats on both ``x`` and ``y`` (both minimised).

    Parameters
    ----------
    ds : xarray.Dataset
        A :func:`sweep` result, in memory or lazy.
    x, y : str
        Variables to minimise; default cost per million tokens and decode step time (ITL).
    where : str or sequence of str, optional
        Boolean variables a cell must satisfy; default ``"fits"``.
    limits : dict, optional
        Upper bounds ``{variable: bound}`` a cell must meet.
    progress : bool
        Show a progress bar while a lazy sweep computes.

    Returns
    -------
    xarray.Dataset
        Over ``pareto_point`` (sorted by ``x``, so ``y`` falls along it): ``x`` and ``y`` and the
        coordinates of each point's cell as variables named after the sweep dimensions.

    Notes
    -----
    Each block is reduced to its own front, and the front of the union of fronts is the front
    of the grid, so a lazy sweep never holds more than a block and the fronts. Cells where
    ``x`` or ``y`` is NaN (an unknown price) are left out; of identical points the earliest
    cell in the grid's order is kept.
    """
    if x == y:
        raise ValueError("x and y must name different variables")
    wheres = _as_list(where)
    bounds = _limits(limits)
    arrays, full, _ = _reduction_inputs(ds, [x, y, *wheres, *bounds], None)
    for w in wheres:
        if ds[w].dtype != bool:
            raise ValueError(f"where names {w!r}, which is not a boolean variable")
    layout = {
        "full_dims": full, "dims": [a.dims for a in arrays],
        "kinds": ["x", "y"] + ["where"] * len(wheres) + ["limit"] * len(bounds),
        "bounds": [None, None] + [None] * len(wheres) + list(bounds.values()),
        "full_shape": [ds.sizes[d] for d in full],
    }
    partials = _run_blocks(_front_block, layout, arrays, full, progress)
    xs, ys, index = _front(*(np.concatenate(parts) for parts in zip(*partials)))
    cells = np.unravel_index(index, layout["full_shape"])
    data = {x: ((PARETO_POINT,), xs, dict(ds[x].attrs)),
            y: ((PARETO_POINT,), ys, dict(ds[y].attrs))}
    for d, idx in zip(full, cells):
        data[d] = ((PARETO_POINT,), np.asarray(ds[d].values)[idx],
                   {"long_name": f"{d} of the configuration"})
    result = xr.Dataset({k: xr.Variable(*v) for k, v in data.items()})
    result.attrs.update({"x": x, "y": y, "where": ", ".join(wheres),
                         "limits": ", ".join(f"{k} <= {v:g}" for k, v in bounds.items())})
    return result


def best_tp(ds, rule="throughput", *, where="fits", limits=None):
    """The tensor-parallel degree to use at every other coordinate of a sweep.

    Parameters
    ----------
    ds : xarray.Dataset
        A :func:`sweep` result, in memory or lazy.
    rule : {"throughput", "smallest"}
        ``"throughput"`` (default): the degree with the most decode tokens/s per GPU among the
        qualifying ones (ties to the earlier degree). ``"smallest"``: the smallest qualifying
        degree, the guide's rule (§5: the smallest degree that fits the model plus a useful KV
        budget; a wider group buys memory you may not need with latency).
    where : str or sequence of str, optional
        Boolean variables a degree must satisfy; default ``"fits"`` (the batch's KV fits).
    limits : dict, optional
        Upper bounds ``{variable: bound}``, e.g. ``{"decode_step_time": 0.05}``.

    Returns
    -------
    xarray.DataArray
        Over every dimension of the inputs except ``tp``: the chosen degree [1], **0 where no
        degree qualifies**. Lazy when ``ds`` is (one chunk of ``tp`` at a time).

    References
    ----------
    .. [1] Serving-capacity guide §5.
    """
    if rule not in ("throughput", "smallest"):
        raise ValueError(f"rule must be 'throughput' or 'smallest', got {rule!r}")
    wheres = _as_list(where)
    bounds = _limits(limits)
    names = (["tokens_per_second_per_gpu"] if rule == "throughput" else []) + wheres + \
        list(bounds)
    _reduction_inputs(ds, names, None)
    if dims.TP not in ds.dims:
        raise ValueError("the sweep has no tp dimension")
    ok = None
    for w in wheres:
        if ds[w].dtype != bool:
            raise ValueError(f"where names {w!r}, which is not a boolean variable")
        ok = ds[w] if ok is None else ok & ds[w]
    for name, bound in bounds.items():
        cond = ds[name] <= bound
        ok = cond if ok is None else ok & cond
    score = ds["tokens_per_second_per_gpu"] if rule == "throughput" else -ds[dims.TP]
    finite = np.isfinite(score)
    ok = finite if ok is None else ok & finite
    ok, score = xr.broadcast(ok, score)
    score = score.where(ok, -np.inf)
    index = score.argmax(dims.TP)
    degrees = np.asarray(ds[dims.TP].values)
    picked = xr.apply_ufunc(lambda i: degrees[i], index, dask="parallelized",
                            output_dtypes=[degrees.dtype])
    result = xr.where(ok.any(dims.TP), picked, 0).astype(degrees.dtype)
    result.attrs = {"units": "1",
                    "long_name": f"tensor-parallel degree by the {rule!r} rule (0: none fits)"}
    return result.rename("best_tp")


# -- command line ---------------------------------------------------------------------------------

_CLI_EPILOG = """axis values: comma lists and inclusive ranges, e.g. 1,2,4,8 or 1024:32768:1024
examples:
  rooflinekit sweep --models guide-70b Llama-3.1-8B --gpus H100-SXM-80GB A100-SXM-80GB \\
      --tp 1,2,4,8 --context-length 1024:32768:1024 --batch-size 1,2,4,8,16,32,64,128
  rooflinekit sweep --models all --gpus all --report cheapest --max-ttft 0.5 --max-itl 0.05
  rooflinekit sweep --models all --gpus all --context-length 256:131072:256 \\
      --batch-size 1:1024 --chunks auto --report best --output sweep.nc
"""


def parse_axis(text):
    """Axis values from the command line: ``"1,2,4,8"``, ``"1024:32768:1024"`` (stop included).

    Returns
    -------
    ndarray of int64
        The values, in the order given.

    Raises
    ------
    ValueError
        For anything that is not whole numbers or ``start:stop[:step]`` ranges with step ≥ 1.
    """
    values = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            raise ValueError(f"empty entry in axis values {text!r}")
        try:
            if ":" in part:
                bits = [int(float(b)) for b in part.split(":")]
                if len(bits) not in (2, 3) or (len(bits) == 3 and bits[2] < 1):
                    raise ValueError
                start, stop = bits[0], bits[1]
                step = bits[2] if len(bits) == 3 else 1
                if stop < start:
                    raise ValueError
                values.extend(range(start, stop + 1, step))
            else:
                number = float(part)
                if not number.is_integer():
                    raise ValueError
                values.append(int(number))
        except ValueError:
            raise ValueError(f"axis values must be whole numbers or start:stop[:step] ranges "
                             f"(stop included), got {part!r}") from None
    return np.asarray(values, dtype=np.int64)


def add_sweep_arguments(parser):
    """Add the ``rooflinekit sweep`` options to an ``argparse`` (sub)parser.

    The CLI wires it as ``p = sub.add_parser("sweep", ...)``, ``add_sweep_arguments(p)``,
    ``p.set_defaults(func=sweep_cli_main)``; :func:`sweep_cli_main` then takes the parsed
    arguments and an output stream.
    """
    import argparse
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _CLI_EPILOG
    parser.add_argument("--models", nargs="+", default=["guide-70b"], metavar="NAME",
                        help="catalogue models, or 'all' (default: guide-70b)")
    parser.add_argument("--gpus", nargs="+", default=["guide-lab-80GB"], metavar="NAME",
                        help="catalogue GPUs, or 'all' (default: guide-lab-80GB)")
    parser.add_argument("--tp", type=parse_axis, default=parse_axis("1,2,4,8"),
                        help="tensor-parallel degrees (default 1,2,4,8)")
    parser.add_argument("--context-length", type=parse_axis,
                        default=parse_axis("1024,2048,4096,8192,16384,32768"),
                        help="tokens per sequence (default 1024,...,32768)")
    parser.add_argument("--batch-size", type=parse_axis,
                        default=parse_axis("1,2,4,8,16,32,64,128"),
                        help="sequences per decode step (default 1,2,...,128)")
    parser.add_argument("--prompt-tokens", type=parse_axis, default=None,
                        help="prompt lengths for prefill/TTFT (default: the context length)")
    parser.add_argument("--reserve", type=float, default=memory.DEFAULT_RESERVE,
                        help="working-space share of memory after weights (default 0.10)")
    parser.add_argument("--allreduce", action="store_true",
                        help="add tensor parallelism's all-reduce time (default: guide's model)")
    parser.add_argument("--chunks", default=None, metavar="CELLS|auto",
                        help="compute lazily with dask in blocks of this many cells "
                             "(needs rooflinekit[distributed])")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="run on this dask.distributed scheduler (implies --chunks auto)")
    parser.add_argument("--report", choices=("best", "cheapest", "pareto", "none"),
                        default="best",
                        help="best: most tokens/s per GPU per model; cheapest: lowest cost per "
                             "1M tokens meeting --max-ttft/--max-itl; pareto: cost vs ITL front")
    parser.add_argument("--max-ttft", type=float, default=None, metavar="SECONDS",
                        help="longest acceptable prefill time (TTFT) for --report cheapest")
    parser.add_argument("--max-itl", type=float, default=None, metavar="SECONDS",
                        help="longest acceptable decode step (ITL) for --report cheapest")
    parser.add_argument("--output", default=None, metavar="PATH",
                        help="write the whole sweep: .nc (netCDF) or .zarr")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bar on stderr (default: when stderr is a terminal)")
    parser.add_argument("--json", action="store_true", help="emit the report as JSON")
    return parser


def _report_rows(result, by):
    """A reduction result as (columns, rows) of plain Python values."""
    columns = list(by) + [k for k in result.data_vars]
    flat = result.stack(_row=list(by)) if by else result.expand_dims("_row")
    rows = []
    for i in range(flat.sizes["_row"]):
        row = flat.isel(_row=i)
        rows.append([row[c].item() for c in columns])
    return columns, rows


def _write_table(columns, rows, out):
    def fmt(v):
        if isinstance(v, bool):
            return str(v)
        if isinstance(v, float):
            return "nan" if math.isnan(v) else f"{v:.4g}"
        return str(v)
    cells = [[fmt(v) for v in r] for r in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    out.write("  " + "  ".join(c.ljust(w) for c, w in zip(columns, widths)) + "\n")
    out.write("  " + "  ".join("-" * w for w in widths) + "\n")
    for r in cells:
        out.write("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)) + "\n")


def sweep_cli_main(args, out=None):
    """Run ``rooflinekit sweep`` from parsed arguments (see :func:`add_sweep_arguments`).

    Parameters
    ----------
    args : argparse.Namespace
        Parsed options.
    out : file, optional
        Stream for the report; default ``sys.stdout``. Progress goes to ``sys.stderr``.

    Returns
    -------
    int
        Exit status, 0 on success. Bad input raises ``ValueError``/``TypeError`` (the CLI prints
        them as one line and exits 2).
    """
    import json
    out = sys.stdout if out is None else out
    models = catalog.model_names() if args.models == ["all"] else args.models
    gpus = catalog.gpu_names() if args.gpus == ["all"] else args.gpus
    chunks = args.chunks
    if chunks is not None and chunks != "auto":
        try:
            chunks = int(float(chunks))
        except ValueError:
            raise ValueError(f"--chunks must be a number of cells or 'auto', got {chunks!r}")
    if args.scheduler is not None and chunks is None:
        chunks = "auto"
    if args.output is not None and not str(args.output).endswith((".nc", ".zarr")):
        raise ValueError(f"--output must end in .nc (netCDF) or .zarr, got {args.output!r}")
    if args.report != "cheapest" and (args.max_ttft is not None or args.max_itl is not None):
        raise ValueError("--max-ttft/--max-itl apply to --report cheapest")
    progress = sys.stderr.isatty() if args.progress is None else bool(args.progress)
    ds = sweep(models, gpus, tp=args.tp, context_length=args.context_length,
               batch_size=args.batch_size, prompt_tokens=args.prompt_tokens,
               reserve=args.reserve, chunks=chunks, allreduce=args.allreduce)
    with contextlib.ExitStack() as stack:
        if args.scheduler is not None:
            try:
                from distributed import Client
            except ImportError as exc:
                raise ImportError(f"--scheduler needs dask.distributed; install it with "
                                  f"`pip install {_EXTRA}`") from exc
            stack.enter_context(Client(args.scheduler))
        if args.output is not None:
            if chunks is not None:
                with progress_bar(progress and _client() is None):
                    save(ds, args.output)
            else:
                save(ds, args.output)
        if args.report == "none":
            result, by = None, []
        elif args.report == "best":
            result, by = best_configuration(ds, progress=progress), [dims.MODEL]
        elif args.report == "cheapest":
            result = cheapest_configuration(ds, max_ttft=args.max_ttft, max_itl=args.max_itl,
                                            progress=progress)
            by = [dims.MODEL]
        else:
            result, by = pareto_front(ds, progress=progress), []
    if result is None:
        if args.json:
            json.dump({"cells": sweep_cells(ds), "output": args.output}, out)
            out.write("\n")
        else:
            out.write(f"swept {sweep_cells(ds):,} configurations"
                      + (f" -> {args.output}\n" if args.output else "\n"))
        return 0
    if by == [] and PARETO_POINT in result.dims:
        columns = list(result.data_vars)
        rows = [[result[c].values[i].item() for c in columns]
                for i in range(result.sizes[PARETO_POINT])]
    else:
        columns, rows = _report_rows(result, by)
    if args.json:
        json.dump({"cells": sweep_cells(ds), "report": args.report,
                   "rows": [dict(zip(columns, r)) for r in rows]}, out, indent=2, default=float)
        out.write("\n")
        return 0
    out.write(f"rooflinekit sweep: {sweep_cells(ds):,} configurations, report {args.report!r}"
              f" (times in s, throughput in tokens/s, cost in USD per 1M tokens)\n")
    _write_table(columns, rows, out)
    return 0


def save(ds, path):
    """Write a sweep to ``path``: zarr for a ``.zarr`` folder, netCDF otherwise.

    netCDF needs ``netCDF4`` (or scipy's netCDF3 for ``.nc3``) and zarr needs ``zarr``; both come
    with ``pip install rooflinekit[io]``. A lazy sweep streams to disk chunk by chunk.
    """
    if str(path).endswith(".zarr"):
        try:
            import zarr  # noqa: F401  (only to fail early with the extra to install)
        except ImportError as exc:
            raise ImportError("writing .zarr needs zarr; install it with "
                              "`pip install rooflinekit[io]`") \
                from exc
        # format 2: the model/gpu name labels are fixed-length strings, which zarr's format 3
        # has no stable specification for yet
        ds.to_zarr(path, mode="w", zarr_format=2, consolidated=True)
    else:
        ds.to_netcdf(path)
