"""Streaming reductions of a sweep: the best, cheapest and Pareto-optimal configurations.

Each reads a :func:`rooflinekit.sweep.sweep` result, in memory or lazy, block by block keeping a
few numbers per block, so a design space larger than memory reduces on any dask scheduler.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import sys

import numpy as np
import xarray as xr

from rooflinekit import dims
from rooflinekit._validation import (check_bool, check_one_of, check_string, describe, real_number,
                                     show)
from rooflinekit.sweep._dask import distributed_client, require_dask
from rooflinekit.sweep.variables import SWEEP_DIMS

__all__ = ["PARETO_POINT", "best_configuration", "cheapest_configuration", "pareto_front",
           "best_tp", "progress_bar"]


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
    order = SWEEP_DIMS
    return [d for d in order if d in present] + [d for d in present if d not in order]


def _reduction_inputs(ds, names, by):
    """The DataArrays named, their union of dimensions (sweep order) and the ``by`` dims."""
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"ds must be an xarray.Dataset from sweep(); got {describe(ds)}")
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
    order = SWEEP_DIMS
    full = [d for d in order if d in full] + [d for d in full if d not in order]
    return arrays, full, by


def _limits(limits):
    out = {}
    for name, bound in (limits or {}).items():
        if bound is None:
            continue
        if isinstance(bound, bool) or not isinstance(bound, numbers.Real) or math.isnan(bound):
            raise ValueError(f"limits[{name!r}] must be a number; got {show(bound)}")
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


def _compute(tasks, progress):
    """Compute dask collections (a list of results), with a progress bar when asked."""
    import dask
    client = distributed_client()
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
    The local schedulers only; on a ``dask.distributed`` cluster the reductions use
    ``distributed.progress``.
    """
    if not enabled:
        yield
        return
    require_dask()
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
        the best cell. Where none is found (``found`` false) these hold a fill their type allows:
        ``-1`` for whole numbers, NaN for fractions, ``""`` for names; read ``found`` first
        (``rooflinekit sweep --json`` writes ``null`` and a ``reason`` there).

    Notes
    -----
    Ties go to the earliest cell in the grid's order, so with ascending coordinates the smaller
    degree and batch win. A lazy sweep gives one candidate per label per block: memory stays
    one block per worker, and the result is the in-memory reduction's.
    """
    check_bool("maximize", maximize)
    check_string("objective", objective)
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
            picked, none = np.where(found, picked, ""), "''"
        elif coord.dtype.kind in "iu":
            picked, none = np.where(found, picked, -1).astype(coord.dtype), "-1"
        else:   # a float coordinate (a share, an acceptance): NaN, never a value it could hold
            picked, none = np.where(found, picked, np.nan).astype(np.float64), "NaN"
        out[d] = (by, picked.reshape(by_shape),
                  {"long_name": f"{d} of the best configuration ({none}: none)"})
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
    # inf (or None) sets no limit
    limits = {"prefill_time": real_number("max_ttft", max_ttft, lo=0, lo_open=True,
                                          allow_none=True, allow_inf=True),
              "decode_step_time": real_number("max_itl", max_itl, lo=0, lo_open=True,
                                              allow_none=True, allow_inf=True)}
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
    The front of the blocks' fronts is the grid's, so a lazy sweep holds a block and the fronts.
    Cells where ``x`` or ``y`` is NaN are left out; of identical points the earliest is kept.
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
    check_one_of("rule", rule, ("throughput", "smallest"))
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
