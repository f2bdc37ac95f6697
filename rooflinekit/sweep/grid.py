"""Design-space sweeps: every derived quantity over every dimension, as one labelled Dataset.

:func:`sweep` validates the inputs once, lays out the axes, cuts the grid into blocks, runs each
block's formulas of :mod:`rooflinekit.sweep.variables` on array specs (in memory, or as one dask
task per block) and wraps one :class:`xarray.Dataset`; docs/architecture.md says how it stays fast.
dask and distributed are optional (``pip install rooflinekit[distributed]``); netCDF output needs
``netCDF4`` or ``scipy``, zarr output ``zarr``.
"""

from __future__ import annotations

import dataclasses
import numbers
import operator
from types import SimpleNamespace

import numpy as np
import xarray as xr

from rooflinekit import catalog, dims, memory, roofline
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
from rooflinekit.hardware import GPU
from rooflinekit.models import ModelShape
from rooflinekit.profiles import (held_bytes, memory_engine, memory_outside_kv, memory_rule,
                                  memory_share_of, resolve_engine)
from rooflinekit.roofline import Engine
from rooflinekit.sweep._dask import require_dask
from rooflinekit.sweep.variables import (
    _A,
    _AXIS_DIMS,
    _B,
    _C,
    _EP,
    _G,
    _K,
    _M,
    _N,
    _OPTIONAL,
    _P,
    _PP,
    _PROMPT,
    _REGISTRY,
    _S,
    _T,
    _TECHNIQUE_DIMS,
    SPECULATIVE_VARIABLES,
    VARIABLES,
    _Block,
)

__all__ = [
    "AUTO_BLOCK_CELLS",
    "MAX_SWEEP_BLOCKS",
    "MIN_BLOCK_CELLS",
    "SWEEP_MEMORY_LIMIT",
    "check_blocks",
    "in_memory_bytes",
    "sweep",
    "sweep_cells",
]

#: Most bytes an in-memory sweep may hold without ``memory_limit=`` saying otherwise: 4 GiB.
SWEEP_MEMORY_LIMIT = 4 * 2**30

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
    """Names and 1-D float fields of models or GPUs (names, specs or a Dataset)."""
    dim = dims.MODEL if kind == "model" else dims.GPU
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
    names, fields = catalog.spec_fields(_spec_objects(specs, kind))
    fields = {k: v.astype(np.float64) for k, v in fields.items()}
    return np.array(names), fields


def _spec_objects(specs, kind) -> list:
    """The ``ModelShape`` or ``GPU`` objects of names and specs (not a Dataset), checked."""
    cls = ModelShape if kind == "model" else GPU
    lookup = catalog.model if kind == "model" else catalog.gpu
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
    return objs


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
    reserve: float | None  # the guide's rule; None: the engine's (``engine_room``)
    engine: Engine         # the decode phase's engine: every time but prefill_time
    variables: tuple       # requested and dependency variables, in computing order
    chunks: tuple          # per axis, a tuple of chunk lengths
    replicate_kv: bool = False   # count KV copies when tp exceeds the KV heads (memory.kv_copies)
    micro_batches: int = 1       # micro-batches a pipeline's batch is split into
    draft: object = None         # speculative decoding's draft: a ModelShape or a step share
    draft_weight_bytes: float = 0.0   # a draft model's weights, held beside every model's
    prefill_engine: Engine = None     # the engine of prefill_time; None: ``engine``
    # the engine's rule: each GPU's share of its memory less what the engine keeps beside the
    # weights [bytes], shape (model, gpu, tp, pp); ``kv_cache_rule`` says it in words
    engine_room: np.ndarray | None = None
    # the KV bytes a byte of weights takes under that rule, the same shape (1; an engine whose
    # share is of what is left: the share)
    engine_weight_scale: np.ndarray | None = None
    kv_cache_rule: str = ""

    @property
    def shape(self):
        return tuple(1 if a is None else len(a) for a in self.axes)


def _resolve(variables, speculative=False):
    """Requested variables and every variable they are computed from, in dependency order."""
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


def _block_env(grid, bounds):
    """The environment the formulas read for one block (array specs, axis arrays, settings)."""
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
    room = scale = None
    if grid.engine_room is not None:
        # (model, gpu, tp, pp) of this block, on the sweep's axes (ep and the rest: 1)
        room, scale = (a[bounds[_M], bounds[_G], bounds[_T], bounds[_PP]]
                       for a in (grid.engine_room, grid.engine_weight_scale))
        room = room.reshape(room.shape + (1,) * (_N - 4))
        scale = scale.reshape(room.shape)
    return _Block(model=model, gpu=gpu, tp=tp, pp=pp, ep=ep, ctx=ctx, batch=batch, prompt=prompt,
                  k=k, alpha=alpha, share=share, reserve=grid.reserve, engine=grid.engine,
                  prefill_engine=grid.prefill_engine or grid.engine,
                  layout=grid.axes[_PP] is not None or grid.axes[_EP] is not None,
                  replicate_kv=grid.replicate_kv, micro_batches=grid.micro_batches,
                  draft=grid.draft, draft_weight_bytes=grid.draft_weight_bytes,
                  engine_room=room, engine_weight_scale=scale)


def _var_axes(grid, name):
    """The axis positions variable ``name`` runs over in this grid (sorted)."""
    prompt_axis = _C if grid.axes[_P] is None else _P
    axes = {prompt_axis if a == _PROMPT else a for a in _REGISTRY[name].axes}
    return tuple(sorted(a for a in axes if a not in _OPTIONAL or grid.axes[a] is not None))


def _compute_block(grid, block):
    """Every variable of ``grid.variables`` over one block: name -> array over its own axes."""
    bounds = _block_bounds(grid, tuple(block))
    extent = tuple(b.stop - b.start for b in bounds)
    env = _block_env(grid, bounds)
    out = {}
    for name in grid.variables:
        out[name] = _REGISTRY[name].formula(env, out)
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


#: Most dask blocks a chunked sweep may have: 100,000. dask schedules each block as a task and
#: keeps every task of the graph in memory; a sweep cut finer is refused before any work.
MAX_SWEEP_BLOCKS = 100_000

#: Fewest cells a block should hold once a sweep has more than :data:`SMALL_BLOCKS_ALLOWED`
#: blocks: 1,024 (a block costs milliseconds to schedule, its cells microseconds to compute).
MIN_BLOCK_CELLS = 1024

#: Blocks any chunking may have, however small: 1,000 (a few seconds of scheduling).
SMALL_BLOCKS_ALLOWED = 1000


def check_blocks(shape, chunks) -> int:
    """The number of dask blocks of ``chunks`` (per-axis chunk lengths) over a grid of
    ``shape``; refuses, before any work, more than :data:`MAX_SWEEP_BLOCKS`, or more than
    :data:`SMALL_BLOCKS_ALLOWED` of fewer than :data:`MIN_BLOCK_CELLS` cells each."""
    blocks = float(np.prod([len(c) for c in chunks], dtype=np.float64))
    cells = float(np.prod(shape, dtype=np.float64))
    per_block = cells / blocks if blocks else 0.0
    if blocks > MAX_SWEEP_BLOCKS:
        raise ValueError(f"this chunking cuts the sweep's {cells:.3g} cells into {blocks:.3g} dask "
                         f"blocks, above the {MAX_SWEEP_BLOCKS:,} a sweep may have (dask "
                         f"schedules and keeps every block as a task); give chunks='auto' "
                         f"({AUTO_BLOCK_CELLS:,} cells a block), larger chunks, or fewer axis "
                         f"values")
    if blocks > SMALL_BLOCKS_ALLOWED and per_block < MIN_BLOCK_CELLS:
        raise ValueError(f"this chunking cuts the sweep's {cells:,.0f} cells into {blocks:,.0f} "
                         f"dask blocks of about {per_block:,.0f} cells, below the "
                         f"{MIN_BLOCK_CELLS:,} a block needs when there are more than "
                         f"{SMALL_BLOCKS_ALLOWED:,} (each block costs milliseconds to schedule, "
                         f"its cells microseconds to compute); give chunks='auto', chunks of at "
                         f"least {MIN_BLOCK_CELLS:,} cells, or no chunks (in memory)")
    return int(blocks)


def _compute_in_memory(grid):
    """Every variable over the whole grid, as numpy arrays (above :data:`AUTO_BLOCK_CELLS`
    cells, block by block on a thread pool; the same values, every formula being elementwise)."""
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
          reserve=None, variables=None, chunks=None, engine=None, replicate_kv=False,
          memory_limit=SWEEP_MEMORY_LIMIT, pp=None, ep=None, micro_batches=1,
          draft_tokens=None, acceptance=None, draft=None, prefix_share=None,
          gpu_memory_utilization=None):
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
        (:func:`rooflinekit.roofline.layout_decode_step_time`); ``None`` (default): no such
        dimension. A pipeline's ``tp × pp`` GPUs hold the weights and KV; experts spread over a
        stage's ``tp`` GPUs and add the all-to-all. A cell whose layout does not divide the
        model (:func:`rooflinekit.parallel.check_layout`'s rule; without ``pp`` and ``ep``, the
        rule for ``tp``) does not fit and holds no KV (its times NaN on a layout), nor does a
        ``tp`` above the GPU's ``scale_up_gpus``, whose all-reduces would cross the network.
    micro_batches : int
        Micro-batches a pipeline splits each batch into [1], ≥ 1; every ``batch_size`` must be
        a multiple of it. Default 1.
    draft_tokens : int or sequence of int, optional
        Tokens drafted per speculative step, k [tokens], each ≥ 0, as dimension
        ``draft_tokens``; with ``acceptance`` and ``draft`` the sweep adds the
        ``speculative_*`` variables (:func:`rooflinekit.roofline.speculative_speedup`). With
        ``pp``/``ep`` the verification passes the layout and the drafts run on one ``tp`` group.
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
        [1], each in [0, 1], as dimension ``prefix_share``: ``⌊share × context_length⌋`` tokens
        held once in blocks of 16, ``⌊share × prompt⌋`` read rather than computed by prefill.
    engine : Engine or Calibration, optional
        How the serving engine runs a step (:class:`rooflinekit.Engine`), or a calibration (its
        prefill engine times ``prefill_time``, its decode engine every other time; its shared
        knobs), or a name: a shipped profile (``"vllm"``, ``"sglang"``, ``"trtllm"``) or
        ``"ideal"`` (:data:`rooflinekit.IDEAL`). Default ``None``: the vLLM profile of each GPU
        (several GPUs: one sweep per GPU, each within its share of ``memory_limit``, joined).
        Its fields must be single numbers. Unless its ``allreduce`` is ``"guide"`` or it has an
        ``interconnect_bandwidth`` of its own, every GPU needs a known interconnect bandwidth
        when any ``tp > 1``. ``attrs["model_quality"]`` is its ``label``.
    reserve : float, optional
        The guide's memory rule: the working-space share of the memory left after the weights,
        in [0, 1) (§2.4: 0.10). Default ``None``: the engine's rule, as the planners size their
        caches: each GPU's share of the memory its driver reports
        (``gpu_memory_utilization``) less the weights and what the engine keeps beside them
        (:func:`rooflinekit.profiles.memory_rule`: vLLM's activation peak and communicators,
        SGLang's memory in use before loading; the bare share for ``engine="ideal"``), where
        the guide's rule keeps a share of what the weights leave. ``attrs["kv_cache_rule"]``
        says which.
    gpu_memory_utilization : float, optional
        The engine's rule: each GPU's share for weights and KV, in (0, 1]; default the engine's
        own (:func:`rooflinekit.profiles.memory_share`: vLLM 0.9, SGLang's
        ``--mem-fraction-static``). Not with ``reserve``.
    replicate_kv : bool
        Count the KV copies an engine keeps when ``tp`` exceeds a model's KV heads, or for MLA
        (:func:`rooflinekit.memory.kv_copies`). Default ``False``: every head stored once.
    variables : sequence of str, optional
        Variables to compute, with those they are computed from; default all of
        :data:`VARIABLES` (and :data:`SPECULATIVE_VARIABLES` over ``draft_tokens``).
    memory_limit : float
        Most bytes an in-memory sweep (``chunks=None``) may hold [bytes], a larger grid refused
        before any work; default :data:`SWEEP_MEMORY_LIMIT` (4 GiB). Lazy sweeps hold a block.
    chunks : None, "auto", int or dict, optional
        ``None`` (default): compute now with numpy. Otherwise return a lazy, dask-backed Dataset
        in blocks of about ``chunks`` cells (``"auto"``: :data:`AUTO_BLOCK_CELLS`), or with
        ``{dimension: chunk length}`` (missing dimensions whole). Needs
        ``rooflinekit[distributed]``.
    Returns
    -------
    xarray.Dataset
        Coordinates ``model``, ``gpu``, ``tp``, ``context_length``, ``batch_size`` and the
        optional axes given; each variable over just the dimensions it depends on
        (:data:`VARIABLES`), with ``units`` (SI) and ``long_name``.

    Raises
    ------
    ValueError, TypeError
        For an unknown name, an axis value out of range or repeated, a bad ``reserve`` or
        ``chunks``, before any work.
    ImportError
        If ``chunks`` is given and dask is not installed.

    Notes
    -----
    Every variable equals the scalar formula evaluated at that cell (the same public functions,
    on arrays shaped to broadcast). Under the engine's rule the replica's ``tp × pp`` GPUs'
    room, ``f·M − held`` each, less the weights is ``usable_kv_bytes``, and
    ``max_concurrent_sequences`` is :func:`rooflinekit.memory.sequences_in_budget` of it (a
    draft model's weights off it first; the KV copies of ``replicate_kv`` dividing it). A shared prefix is held once per pipeline and only its
    uncached tokens flow through the stages. ``fits`` is ``max_concurrent_sequences >=
    batch_size``; latency and throughput are computed whether or not a cell fits: mask with
    ``fits`` (the reductions do).

    References
    ----------
    .. [1] Serving-capacity guide §2–§5.
    .. [2] Williams, Waterman & Patterson, "Roofline: An Insightful Visual Performance Model",
       CACM 52(4), 2009.
    """
    if reserve is not None and gpu_memory_utilization is not None:
        raise ValueError("reserve is the guide's memory rule and gpu_memory_utilization the "
                         "engine's: give one of them")
    if gpu_memory_utilization is not None:
        gpu_memory_utilization = real_number("gpu_memory_utilization", gpu_memory_utilization,
                                             lo=0, hi=1, lo_open=True)
    return _sweep(models, gpus, tp, context_length, batch_size, prompt_tokens, reserve=reserve,
                  variables=variables, chunks=chunks, engine=engine, replicate_kv=replicate_kv,
                  memory_limit=memory_limit, pp=pp, ep=ep, micro_batches=micro_batches,
                  draft_tokens=draft_tokens, acceptance=acceptance, draft=draft,
                  prefix_share=prefix_share, gpu_memory_utilization=gpu_memory_utilization,
                  held_by=memory_engine(engine))


def _sweep(models, gpus, tp, context_length, batch_size, prompt_tokens, *, reserve, variables,
           chunks, engine, replicate_kv, memory_limit, pp, ep, micro_batches, draft_tokens,
           acceptance, draft, prefix_share, gpu_memory_utilization, held_by):
    """:func:`sweep`, its memory rule's engine ``held_by`` (:func:`memory_engine` of the
    ``engine`` asked for) carried into the sweep of each GPU."""
    if engine is None or isinstance(engine, str):
        # every input checked once, on the whole grid, before it is split by GPU
        _make_grid(models, gpus, tp, context_length, batch_size, prompt_tokens, reserve,
                   variables, roofline.IDEAL, pp=pp, ep=ep, micro_batches=micro_batches,
                   techniques=_techniques(draft_tokens, acceptance, draft, prefix_share))
        names = _gpu_names(gpus)
        if len(names) > 1:
            # each GPU timed by its own profile: one sweep per GPU, each within its share of
            # the memory limit, joined along the GPU dimension (a variable without it is the
            # same in every part: it depends on no GPU, so on no engine)
            parts = [_sweep(models, gpus.sel({dims.GPU: [name]}) if isinstance(gpus, xr.Dataset)
                            else [name], tp, context_length, batch_size, prompt_tokens,
                            reserve=reserve, variables=variables, chunks=chunks,
                            engine=resolve_engine(engine, name), replicate_kv=replicate_kv,
                            memory_limit=memory_limit / len(names), pp=pp, ep=ep,
                            micro_batches=micro_batches, draft_tokens=draft_tokens,
                            acceptance=acceptance, draft=draft, prefix_share=prefix_share,
                            gpu_memory_utilization=gpu_memory_utilization, held_by=held_by)
                     for name in names]
            ds = xr.concat(parts, dim=dims.GPU, data_vars="minimal", coords="minimal",
                           compat="override", join="outer", combine_attrs="drop_conflicts")
            ds.attrs["model_quality"] = "; ".join(
                dict.fromkeys(part.attrs["model_quality"] for part in parts))
            return ds
        engine = resolve_engine(engine, names[0])
    decode, prefill = _engines(engine)
    grid = _make_grid(models, gpus, tp, context_length, batch_size, prompt_tokens, reserve,
                      variables, decode, pp=pp, ep=ep, micro_batches=micro_batches,
                      techniques=_techniques(draft_tokens, acceptance, draft, prefix_share),
                      prefill_engine=prefill)
    grid = dataclasses.replace(grid, replicate_kv=check_bool("replicate_kv", replicate_kv))
    if reserve is None:
        grid = dataclasses.replace(grid, **_engine_memory(models, gpus, grid, held_by,
                                                          gpu_memory_utilization))
    else:
        grid = dataclasses.replace(grid, kv_cache_rule=(
            f"the guide's: {reserve:g} of the memory left after the weights kept as "
            f"workspace"))
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
    blocks = _chunks(grid.shape, chunks)
    check_blocks(grid.shape, blocks)
    grid = dataclasses.replace(grid, chunks=blocks)
    return _wrap(grid, _lazy_arrays(grid))


def _specs(specs, kind, names) -> list:
    """The ``ModelShape`` or ``GPU`` objects of a sweep's ``models`` or ``gpus`` (a catalogue
    Dataset: its names looked up in the catalogue), in ``names``' order."""
    cls, lookup = (ModelShape, catalog.model) if kind == "model" else (GPU, catalog.gpu)
    if isinstance(specs, xr.Dataset):
        objs = []
        for name in names:
            try:
                objs.append(lookup(str(name)))
            except ValueError as exc:
                raise ValueError(f"the engine's memory rule needs each {kind} as the catalogue "
                                 f"holds it or as a {cls.__name__}; {str(name)!r} is not in it "
                                 f"(give reserve= for the guide's rule): {exc}") from None
        return objs
    return _spec_objects(specs, kind)


def _engine_memory(models, gpus, grid, held_by, gpu_memory_utilization) -> dict:
    """The engine's memory rule over the grid's models, GPUs, ``tp`` and ``pp``: ``_Grid``'s
    ``engine_room`` (each GPU's share of its driver's total less what the engine keeps beside
    the weights [bytes]; for an engine whose share is of what is left, that share of the total
    less what it keeps), ``engine_weight_scale`` (the KV bytes a byte of weights takes: 1, or
    that share) and ``kv_cache_rule`` in words."""
    model_specs = _specs(models, "model", grid.model_names)
    gpu_specs = _specs(gpus, "gpu", grid.gpu_names)
    tps = grid.axes[_T]
    pps = grid.axes[_PP] if grid.axes[_PP] is not None else np.ones(1, np.int64)
    room = np.zeros((len(model_specs), len(gpu_specs), len(tps), len(pps)))
    scale = np.ones_like(room)
    shares = set()
    for i, model in enumerate(model_specs):
        for j, gpu in enumerate(gpu_specs):
            for k, tp in enumerate(tps):
                for m, pp in enumerate(pps):
                    try:
                        share, held = memory_rule(held_by, model, gpu, int(tp), pp=int(pp),
                                                  gpu_memory_utilization=gpu_memory_utilization)
                    except ValueError:
                        continue   # a layout that does not divide the model: it holds nothing
                    shares.add(share)
                    room[i, j, k, m], scale[i, j, k, m] = memory.kv_bytes_left(
                        gpu.visible_memory_per_gpu, share, held_bytes(held),
                        held.get("share_of", "total"))
    share = (f"{shares.pop():g}" if len(shares) == 1
             else f"{min(shares):g}-{max(shares):g}" if shares else "the engine's share")
    kept = memory_outside_kv(held_by, model_specs)
    rule = (f"the engine's: {share} of what the weights and {kept} leave of the memory the "
            f"driver reports on each GPU" if memory_share_of(held_by) == "free"
            else f"the engine's: {share} of the memory the driver reports on each GPU, less "
                 f"the weights and {kept}")
    return {"engine_room": room, "engine_weight_scale": scale, "kv_cache_rule": rule}


def _gpu_names(gpus) -> list:
    """``gpus`` as a list: names or specs (a Dataset: its GPU names)."""
    if isinstance(gpus, xr.Dataset):
        return [str(name) for name in np.atleast_1d(gpus[dims.GPU].values)]
    return [gpus] if isinstance(gpus, (str, GPU)) else list(gpus)


def _engines(engine) -> tuple:
    """The decode and prefill engines of ``engine`` (a calibration's shared knobs), each field
    checked now to be one number, so a lazy sweep cannot fail later inside a block."""
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
    heads = np.asarray(model_fields.get("n_heads", ()), dtype=np.float64)
    if heads.size and np.all(np.isfinite(heads)) and tp.max() > heads.max():
        # tensor parallelism splits the attention heads: a degree above every model's heads
        # divides none (2**53 "fitted" before the layout rule), so it is no axis value
        raise ValueError(f"tp must be at most the attention heads of a swept model "
                         f"({int(heads.max()):,} at most); got tp={int(tp.max()):,}")
    ctx = _axis_values("context_length", context_length, lo=1)
    batch = _axis_values("batch_size", batch_size, lo=1)
    prompt = _axis_values("prompt_tokens", prompt_tokens, lo=1, allow_none=True)
    if reserve is not None:
        check_fraction("reserve", reserve, hi_open=True)
    pp = _axis_values("pp", pp, lo=1, allow_none=True)
    ep = _axis_values("ep", ep, lo=1, allow_none=True)
    micro_batches = whole_number("micro_batches", micro_batches, lo=1)
    if micro_batches > 1 and pp is None:
        raise ValueError("micro_batches > 1 needs a pipeline: give pp=[...]")
    if (batch % micro_batches).any():
        raise ValueError(f"every batch_size must be a multiple of micro_batches={micro_batches} "
                         f"(equal micro-batches); got {batch.tolist()}")
    # a Dataset built before the field was catalogued: no encoders aside
    model_fields.setdefault("n_aside_params", np.zeros(len(model_names)))
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
    return _Grid(model_names, gpu_names, model_fields, gpu_fields, axes,
                 None if reserve is None else float(reserve), engine,
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
        if spec.comment:
            attrs["comment"] = spec.comment
        data_vars[name] = xr.Variable(tuple(_AXIS_DIMS[a] for a in _var_axes(grid, name)),
                                      values, attrs=attrs)
    return xr.Dataset(data_vars, coords=_coords(grid), attrs={
        "title": "rooflinekit design-space sweep",
        **({"reserve": grid.reserve} if grid.reserve is not None else {}),
        "kv_cache_rule": grid.kv_cache_rule,
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
    if not isinstance(ds, (xr.Dataset, xr.DataArray)):
        raise TypeError(f"ds must be a sweep's xarray.Dataset (or one of its DataArrays); got "
                        f"{describe(ds)}")
    return int(np.prod([ds.sizes[d] for d in _AXIS_DIMS if d in ds.dims]))


def _lazy_arrays(grid):
    """One dask array per variable; all of them views of one task per block of the grid."""
    import itertools

    import dask.array as da
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    token = tokenize(grid.model_names, grid.model_fields, grid.gpu_names, grid.gpu_fields,
                     grid.axes, grid.reserve, grid.engine_room, grid.engine_weight_scale,
                     grid.engine.fields(),
                     grid.variables,
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
