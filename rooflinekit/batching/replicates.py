"""Many runs: Monte Carlo replicates of a workload distribution, and rows the caller has drawn.

:func:`monte_carlo` runs many replicates of a :class:`~rooflinekit.workloads.WorkloadSpec`
across parameter dimensions and returns the summaries with a ``replicate`` dimension (every
replicate drawn from its own seed, :func:`replicate_seed`, so every grid point sees the same
draws); :func:`run_replicates` does the same for workloads the caller has drawn (a planner's
search, which reuses its draws at many rates). This module checks a call's size before any
work, draws the workloads (only through :mod:`rooflinekit.workloads`), runs the blocks in
process or as dask tasks, and hands the outputs to :mod:`rooflinekit.batching.results`.
"""

from __future__ import annotations

import dataclasses
import itertools
import numbers
from collections.abc import Mapping

import numpy as np
import xarray as xr

from rooflinekit import dims
from rooflinekit._validation import (MAX_COUNT, check_bool, check_keys, describe, real_number,
                                     whole_number)
from rooflinekit.batching._kernel_calls import _allocate, _targets
from rooflinekit.batching._schema import COMPLETED, UNLIMITED
from rooflinekit.batching.batchers import (SIMULATION_MEMORY_LIMIT, SIMULATION_WORK_LIMIT,
                                           ContinuousBatcher, StaticBatcher)
from rooflinekit.batching.results import (_POLICY, _TIER, SUMMARY_NAMES, _model_quality,
                                          _replicate_dataset, _summaries, _summary_grid,
                                          _target_attrs)
from rooflinekit.workloads import MAX_ARRIVAL, Workload, WorkloadSpec

__all__ = ["monte_carlo", "run_replicates", "replicate_seed"]

#: Bytes per request a block holds: arrival, prompt, output, priority, and the kernel's
#: admission, first-token, finish, preemption and status outputs.
_BYTES_PER_REQUEST = 9 * 8


def replicate_seed(seed, replicate: int) -> np.random.SeedSequence:
    """The seed of one Monte Carlo replicate: ``SeedSequence(seed).spawn(R)[replicate]``.

    ``spec.sample(replicate_seed(seed, r))`` reproduces replicate ``r`` of
    ``monte_carlo(spec, ..., seed=seed)`` on its own, for any replicate count.
    """
    if isinstance(seed, np.random.SeedSequence):
        entropy = seed.entropy
    elif isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be a non-negative integer or a SeedSequence; got "
                        f"{describe(seed)}")
    elif seed < 0:
        raise ValueError(f"seed must be a non-negative integer or a SeedSequence; got {seed!r}")
    else:
        entropy = int(seed)     # any size: a SeedSequence's own entropy is 128 bits
    replicate = whole_number("replicate", replicate, lo=0)
    return np.random.SeedSequence(entropy, spawn_key=(replicate,))


def _split_sweep(sweep, batchers, spec):
    """Validate sweep names and split them into batcher and workload parameters."""
    sweep = dict(sweep or {})
    spec_fields = {f.name for f in dataclasses.fields(WorkloadSpec)}
    bat_keys, wl_keys = [], []
    for name, values in sweep.items():
        vals = list(np.atleast_1d(values).tolist()) if not isinstance(values, (list, tuple)) \
            else list(values)
        if not vals:
            raise ValueError(f"sweep[{name!r}] must hold at least one value")
        sweep[name] = vals
        if name in (dims.REPLICATE, _POLICY, _TIER, dims.REQUEST):
            raise ValueError(f"sweep name {name!r} is reserved for a dimension of the result")
        if any(name in {f.name for f in dataclasses.fields(b)} for b in batchers.values()):
            bat_keys.append(name)
        elif name in spec_fields or name.split(".", 1)[0] in ("output", "prompt", "arrival",
                                                               "prefix"):
            spec.replace(**{name: vals[0]})       # raises ValueError naming an unknown field
            wl_keys.append(name)
        else:
            raise ValueError(f"sweep name {name!r} is neither a batcher parameter nor a workload "
                             f"parameter")
    return sweep, bat_keys, wl_keys


def _check_monte_carlo_size(spec, n_policies, sweep, replicates, chunks, work_limit,
                            memory_limit):
    """Refuse, before any work, a Monte Carlo whose memory or work exceeds the limits."""
    n = spec.n_requests
    points = n_policies * int(np.prod([len(v) for v in sweep.values()], dtype=np.float64))
    block = float(replicates if chunks is None else min(chunks, replicates)) * n
    held = block * _BYTES_PER_REQUEST + float(replicates) * points * 64 * 8
    if held > memory_limit:
        raise ValueError(
            f"this Monte Carlo would hold about {held / 2**30:.3g} GiB ({replicates} replicates × "
            f"{n} requests, {points:g} grid points), above memory_limit="
            f"{memory_limit / 2**30:g} GiB; pass chunks= (replicates per dask task), use fewer "
            f"replicates, requests or grid points, or raise memory_limit")
    mean_output = spec.mean_output_tokens()
    work = float(replicates) * points * n * mean_output
    if work > work_limit:
        raise ValueError(
            f"this Monte Carlo would simulate about {work:.3g} token-steps ({replicates} "
            f"replicates × {points:g} grid points × {n} requests × {mean_output:.3g} output "
            f"tokens), above work_limit={work_limit:g}; use fewer replicates, requests or grid "
            f"points, or raise work_limit")


def _draw(spec, seed, r0, r1):
    """Replicates ``r0..r1-1``: arrival, prompt, output, priority, prefix group and length."""
    n = spec.n_requests
    shape = (r1 - r0, n)
    arrays = (np.empty(shape),) + tuple(np.empty(shape, np.int64) for _ in range(5))
    for j, r in enumerate(range(r0, r1)):
        row = spec.draw_prefixed(np.random.default_rng(replicate_seed(seed, r)))
        Workload(*row)                # validates the draw (sorted arrivals, token ranges)
        for a, values in zip(arrays, row):
            a[j] = values
    return arrays


def _mc_block(spec, batchers, sweep, bat_keys, wl_keys, seed, r0, r1, targets, parallel):
    """Summaries for replicates ``r0..r1-1`` over the whole grid, as a Dataset."""
    names = list(sweep)
    shape = tuple(len(sweep[k]) for k in names)
    results = {}
    tu = None
    for wl_combo in itertools.product(*(range(len(sweep[k])) for k in wl_keys)):
        spec_c = spec.replace(**{k: sweep[k][i] for k, i in zip(wl_keys, wl_combo)})
        arrival, prompt, output, priority, group, length = _draw(spec_c, seed, r0, r1)
        # speculative acceptance: drawn from each replicate's own seed, apart from the workload
        acceptance_seeds = [replicate_seed(seed, r).spawn(1)[0] for r in range(r0, r1)]
        out = _allocate(r1 - r0, spec.n_requests)
        for p_index, (pname, batcher) in enumerate(batchers.items()):
            for b_combo in itertools.product(*(range(len(sweep[k])) for k in bat_keys)):
                changes = {k: sweep[k][i] for k, i in zip(bat_keys, b_combo)
                           if k in {f.name for f in dataclasses.fields(batcher)}}
                b = dataclasses.replace(batcher, **changes)
                timing = b._timing()
                tu = timing.units if tu is None else tu
                if timing.units != tu:
                    raise ValueError("all policies must use the same clock (tick or roofline)")
                b._run_many(timing, arrival, prompt, output, priority, out, targets,
                            parallel=parallel, prefix=(group, length), seeds=acceptance_seeds)
                summ = _summaries(arrival, prompt, output, priority, out, b._slots(),
                                  b._kv_budget(), targets,
                                  frontend_latency=timing.frontend_latency)
                index = dict(zip(wl_keys, wl_combo)) | dict(zip(bat_keys, b_combo))
                pos = (p_index,) + tuple(index[k] for k in names)
                for key, (values, kind, long_name) in summ.items():
                    if key not in results:
                        extra = values.shape[1:]
                        results[key] = (np.empty((len(batchers),) + shape + (r1 - r0,) + extra),
                                        kind, long_name)
                    results[key][0][pos] = values
    return _summary_grid(results, batchers, sweep, r0, r1, tu)


def monte_carlo(workload: WorkloadSpec, batcher, *, replicates: int = 100, seed=None,
                sweep: Mapping | None = None, ttft_target=None, itl_target=None,
                e2e_target=None, tpot_target=None, chunks: int | None = None, parallel: bool = True,
                work_limit=SIMULATION_WORK_LIMIT, memory_limit=SIMULATION_MEMORY_LIMIT) -> xr.Dataset:
    """Summaries of many simulated workloads, over replicates and parameter dimensions.

    Parameters
    ----------
    workload : WorkloadSpec
        The workload distribution; replicate ``r`` is drawn with :func:`replicate_seed`
        ``(seed, r)``, so every replicate is reproducible on its own and every grid point sees the
        same draws (common random numbers).
    batcher : StaticBatcher, ContinuousBatcher, or mapping of name -> batcher
        The policies compared, along dimension ``policy`` (a single batcher is named by its
        ``policy``).
    replicates : int
        Number of replicates R (>= 1).
    seed : int or SeedSequence, optional
        Root seed; ``None`` draws fresh entropy, recorded in ``attrs["seed_entropy"]``.
    sweep : mapping of name -> values, optional
        Parameter dimensions: a batcher field (``max_num_seqs``, ``kv_budget_tokens``,
        ``admission``, ``batch_size``, ...; applied to the batchers that have it) or a workload
        field, dotted for a distribution's field (``"output.sigma"``, ``"arrival.rate"``).
    ttft_target, itl_target, e2e_target, tpot_target : float, optional
        Goodput and attainment targets [tick or s] (:meth:`ContinuousBatcher.run`).
    chunks : int, optional
        Run through dask (optional, imported only here) in tasks of ``chunks`` replicates
        each; without it, in process. Results are identical.
    parallel : bool
        In-process runs only: ``True`` (default) runs replicates on all cores, one thread each
        (:func:`~rooflinekit.batching._kernel_calls._each_row`); ``False`` one after another.
        Results are identical.
    work_limit, memory_limit : float
        Most token-steps (replicates × grid points × requests × mean output tokens, the mean of
        4,096 draws) and bytes (one block's draws and outputs, and every summary) the call may
        take; default :data:`SIMULATION_WORK_LIMIT` and :data:`SIMULATION_MEMORY_LIMIT`. Above either it is refused
        before drawing anything, with the estimate and the way out.

    Returns
    -------
    xarray.Dataset
        Every summary of :meth:`ContinuousBatcher.run` with dimensions ``policy``, the sweep names,
        and ``replicate`` (and ``tier`` for per-tier metrics).

    References
    ----------
    .. [1] Serving-capacity guide §4.3 ("its win scales with output-length variance").
    .. [2] NumPy, "Parallel random number generation" (``SeedSequence.spawn``).
    """
    if not isinstance(workload, WorkloadSpec):
        raise TypeError(f"workload must be a WorkloadSpec (a distribution), got "
                        f"{type(workload).__name__}")
    batchers = dict(batcher) if isinstance(batcher, Mapping) else {batcher.policy: batcher}
    if not batchers:
        raise ValueError("batcher must name at least one policy")
    for name, b in batchers.items():
        if not isinstance(b, (StaticBatcher, ContinuousBatcher)):
            raise TypeError(f"batcher {name!r} must be a StaticBatcher or ContinuousBatcher, got "
                            f"{type(b).__name__}")
    replicates = whole_number("replicates", replicates, lo=1)
    if seed is None:
        seed = np.random.SeedSequence().entropy
    elif isinstance(seed, np.random.SeedSequence):
        seed = seed.entropy
    elif isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, a SeedSequence or None, "
                         f"got {seed!r}")
    targets = _targets(ttft_target, itl_target, e2e_target, tpot_target)
    chunks = whole_number("chunks", chunks, lo=1, allow_none=True)
    if not isinstance(parallel, (bool, np.bool_)):
        raise TypeError(f"parallel must be True or False, got {type(parallel).__name__}")
    sweep, bat_keys, wl_keys = _split_sweep(sweep, batchers, workload)
    _check_monte_carlo_size(
        workload, len(batchers), sweep, replicates, chunks,
        real_number("work_limit", work_limit, lo=0, lo_open=True, allow_inf=True),
        real_number("memory_limit", memory_limit, lo=0, lo_open=True, allow_inf=True))
    args = (workload, batchers, sweep, bat_keys, wl_keys, seed)
    if chunks is None:
        ds = _mc_block(*args, 0, replicates, targets, bool(parallel))
    else:
        import dask
        bounds = [(r, min(r + chunks, replicates)) for r in range(0, replicates, chunks)]
        # Each task runs its replicates serially: dask supplies the parallelism, and numba's
        # default threading layer does not support parallel kernels launched from several threads.
        tasks = [dask.delayed(_mc_block)(*args, r0, r1, targets, False) for r0, r1 in bounds]
        ds = xr.concat(dask.compute(*tasks), dim=dims.REPLICATE)
    ds.attrs.update({"seed_entropy": str(seed), "replicates": replicates,
                     **_target_attrs(targets)})
    return ds


def run_replicates(batcher, arrival, prompt_tokens, output_tokens, priority=None, *,
                   ttft_target=None, itl_target=None, e2e_target=None, tpot_target=None,
                   parallel: bool = True, variables=None, work_limit=SIMULATION_WORK_LIMIT,
                   memory_limit=SIMULATION_MEMORY_LIMIT, prefix_group=None,
                   prefix_tokens=None, speculative_seeds=None, speculative_gains=None,
                   as_dataset: bool = True, closed_loop: bool = False,
                   clients: int | None = None,
                   arrived_kv_tokens=None) -> xr.Dataset | dict:
    """Summaries of caller-drawn workloads, one per row: :func:`monte_carlo` without the drawing.

    Parameters
    ----------
    batcher : StaticBatcher or ContinuousBatcher
        The policy.
    arrival : array_like of float, shape (replicate, request)
        Arrival times [tick or s]; each row sorted, finite, >= 0.
    prompt_tokens, output_tokens : array_like of int, shape (replicate, request)
        Prompt [tokens], >= 0, and output lengths [tokens], >= 1.
    priority : array_like of int, shape (replicate, request), optional
        Tiers (0 interactive, 1 batch); default all interactive.
    ttft_target, itl_target, e2e_target, tpot_target : float, optional
        Goodput and attainment targets [tick or s] (:meth:`ContinuousBatcher.run`).
    parallel : bool
        ``True`` (default) runs the rows on all cores, one thread each; ``False`` one after
        another. Results are identical.
    variables : sequence of str, optional
        Only these summaries (names of :data:`~rooflinekit.batching.results.SUMMARY_NAMES`),
        for callers that run many small simulations and read a few numbers (a search); the
        percentiles of per-request times are then computed only when named.
    work_limit, memory_limit : float
        As for :func:`monte_carlo`: the rows' output tokens, and their bytes with the kernel's
        outputs.
    prefix_group, prefix_tokens : array_like of int, shape (replicate, request), optional
        Shared prefixes, as :class:`~rooflinekit.workloads.Workload` takes them (group -1: no
        prefix), for a batcher with ``prefix_caching``; give both or neither.
    speculative_seeds : sequence of numpy.random.SeedSequence, optional
        A speculative batcher's seed of each row's acceptance draws, one per row; default
        :meth:`Speculative.row_seed` of the row's position (so a subset of rows would draw
        other gains: a search over subsets passes its rows' own seeds).
    speculative_gains : tuple of ndarray, optional
        Instead of seeds, the rows' gains already drawn (once, for a search at many rates; the
        results are those of their seeds): ``(gain, offset)`` as :meth:`Speculative.gains` makes
        them for these ``output_tokens`` (uint8 of shape ``(replicate, >= the longest row's
        total output)``, int64 of the rows' shape), checked whole (offsets the outputs' running
        sums, every gain in ``[1, draft_tokens + 1]``, none past its request's output).
    as_dataset : bool
        ``True`` (default): a Dataset. ``False``: a dict of the summaries' numpy arrays, without
        labels, for a search that reads a few numbers of many runs (building a Dataset costs
        about as much as summarising a run).
    closed_loop : bool
        ``True``: every time a client sees (TTFT, latency, and the attainments of their targets)
        counts from when a closed-loop client holding ``clients`` requests in flight sends the
        request, instead of its arrival: the moment an earlier one completes (the first
        ``clients`` at their arrival), which is when the batcher admits it while it holds them
        all; where it holds fewer (its slots or its KV cache full), the wait in the server's
        queue counts (``mean_queue_delay``, else 0). The throughputs run from the first send.
        Requests never admitted keep their arrival. Default ``False``: an open-loop client,
        clocks from arrival.
    clients : int, optional
        With ``closed_loop``: the requests the client keeps in flight, >= 1. Default the
        batcher's slots (``max_num_seqs``, a static batcher's ``batch_size``).
    arrived_kv_tokens : array_like of int, shape (replicate, request), optional
        Continuous batching only: per request, the prompt tokens whose KV the server holds when
        it arrives [tokens], in [0, prompt_tokens], as :meth:`ContinuousBatcher.run` takes them
        (a prefix-cache hit, or disaggregated serving's decode side): its prefill starts after
        them, and its last prompt token is always computed. Default none.

    Returns
    -------
    xarray.Dataset or dict
        Every summary of :func:`monte_carlo` (or the ``variables`` named) along ``replicate``
        (and ``tier``), without the ``policy`` dimension; ``attrs`` hold the policy, clock and
        targets. With ``as_dataset=False``, name -> array over replicates.

    Notes
    -----
    Each row is validated as a :class:`~rooflinekit.workloads.Workload`. Rows drawn as
    ``spec.draw(np.random.default_rng(replicate_seed(seed, r)))`` give the summaries of
    ``monte_carlo(spec, batcher, seed=seed)`` at replicate ``r``, so a caller can share draws
    (common random numbers) across configurations it chooses itself.

    See Also
    --------
    monte_carlo : draws the workloads from a :class:`~rooflinekit.workloads.WorkloadSpec`.
    """
    if not isinstance(batcher, (StaticBatcher, ContinuousBatcher)):
        raise TypeError(f"batcher must be a StaticBatcher or ContinuousBatcher, got "
                        f"{type(batcher).__name__}")
    targets = _targets(ttft_target, itl_target, e2e_target, tpot_target)
    check_bool("parallel", parallel)
    check_bool("as_dataset", as_dataset)
    check_bool("closed_loop", closed_loop)
    clients = whole_number("clients", clients, lo=1, allow_none=True)
    if clients is not None and not closed_loop:
        raise ValueError("clients is the closed-loop client's concurrency: give it with "
                         "closed_loop=True")
    if variables is not None:
        if isinstance(variables, str):
            raise TypeError("variables must be a sequence of summary names, not one string")
        variables = list(variables)
        check_keys("variables", variables, SUMMARY_NAMES, what="summary")
    arrays = _replicate_rows(arrival, prompt_tokens, output_tokens, priority)
    work_limit = real_number("work_limit", work_limit, lo=0, lo_open=True, allow_inf=True)
    memory_limit = real_number("memory_limit", memory_limit, lo=0, lo_open=True, allow_inf=True)
    held = float(arrays[0].size) * _BYTES_PER_REQUEST
    if held > memory_limit:
        raise ValueError(f"these rows would hold {held / 2**30:.3g} GiB with the kernel's "
                         f"outputs, above memory_limit={memory_limit / 2**30:g} GiB; pass fewer "
                         f"rows at a time or raise memory_limit")
    batcher._check_size(arrays[2], work_limit, memory_limit)
    prefix = _prefix_rows(arrays, prefix_group, prefix_tokens)
    arrived = batcher._arrived_kv(arrays[1], arrived_kv_tokens)
    out = _allocate(*arrays[0].shape)
    timing = batcher._timing()
    if speculative_seeds is not None:
        speculative_seeds = list(speculative_seeds)
        if len(speculative_seeds) != arrays[0].shape[0]:
            raise ValueError(f"speculative_seeds must hold one seed per row "
                             f"({arrays[0].shape[0]}), got {len(speculative_seeds)}")
    gains = _gain_rows(batcher, speculative_gains, speculative_seeds, arrays[2])
    in_flight = _clients(batcher, clients) if closed_loop else 0
    batcher._run_many(timing, *arrays, out, targets, parallel=bool(parallel), prefix=prefix,
                      arrived=arrived, seeds=speculative_seeds, gains=gains, clients=in_flight)
    if closed_loop:
        arrays = (_closed_loop_sends(arrays[0], out[0], out[2], out[4] == COMPLETED,
                                     in_flight), *arrays[1:])
    summ = _summaries(*arrays, out, batcher._slots(), batcher._kv_budget(), targets,
                      wanted=variables, frontend_latency=timing.frontend_latency)
    if not as_dataset:
        return {name: values for name, (values, _, _) in summ.items()}
    ds = _replicate_dataset(summ, timing.units)
    budget = batcher._kv_budget()
    ds.attrs.update({"policy": batcher.policy, "clock": timing.clock,
                     "model_quality": _model_quality(batcher, timing.clock),
                     "time_units": timing.units,
                     "kv_budget_tokens": "unlimited" if budget is None else budget,
                     **_target_attrs(targets)})
    return ds


def _clients(batcher, clients) -> int:
    """The requests a closed-loop client keeps in flight, for the kernel: ``clients``, else
    the batcher's slots (:data:`UNLIMITED` where it has no cap)."""
    if clients is not None:
        return int(clients)
    slots = batcher._slots()
    return UNLIMITED if slots is None else int(slots)


def _closed_loop_sends(arrival, admit, finish, completed, clients):
    """When a closed-loop client of ``clients`` requests in flight sends each request [tick
    or s].

    Request ``j`` goes out at its ``arrival`` while ``j < clients``, else at
    ``max(arrival, F[j − clients])`` with ``F`` the row's completion times in order (each
    completion frees the client that sends the next request), and never after its first
    admission: that is its admission while the server holds all ``clients``, and earlier when
    its slots or KV cache hold fewer, so the wait in the server's queue stays in the client's
    clocks. A request never admitted keeps its arrival.
    """
    n = arrival.shape[1]
    send = np.array(arrival, dtype=float)
    if clients < n:
        freed = np.sort(np.where(completed, finish, np.inf), axis=1)[:, :n - clients]
        send[:, clients:] = np.maximum(send[:, clients:], freed)
    return np.where(completed, np.minimum(send, admit), arrival)


def _gain_rows(batcher, gains, seeds, output):
    """Validated ``speculative_gains`` of ``run_replicates`` for rows of ``output``, or None."""
    if gains is None:
        return None
    if seeds is not None:
        raise ValueError("give speculative_gains or speculative_seeds, not both (the gains "
                         "are drawn from seeds)")
    spec = getattr(batcher, "speculative", None)
    if spec is None:
        raise ValueError("speculative_gains needs a batcher with speculative=Speculative(...)")
    if not (isinstance(gains, tuple) and len(gains) == 2
            and all(isinstance(a, np.ndarray) for a in gains)):
        raise TypeError(f"speculative_gains must be a (gain, offset) pair of arrays, as "
                        f"Speculative.gains returns, got {describe(gains)}")
    gain, offset = gains
    total = output.sum(axis=1)
    width = int(total.max()) if total.size else 0
    if gain.dtype != np.uint8 or gain.ndim != 2 or gain.shape[0] != output.shape[0] \
            or gain.shape[1] < width:
        raise ValueError(f"speculative_gains' gain must be uint8 of shape (rows, >= the "
                         f"longest row's total output) = ({output.shape[0]}, >= {width}); got "
                         f"{gain.dtype} of shape {gain.shape}")
    starts = np.zeros(output.shape, np.int64)
    np.cumsum(output[:, :-1], axis=1, out=starts[:, 1:])
    if offset.shape != output.shape or not np.array_equal(offset, starts):
        raise ValueError("speculative_gains' offset must be each row's running sum of its "
                         "output_tokens (where each request's positions start), as "
                         "Speculative.gains makes it for these rows")
    k = spec.draft_tokens
    if gain.size and (gain.min() < 1 or gain.max() > k + 1):
        raise ValueError(f"speculative_gains' gains must lie in [1, draft_tokens + 1] = "
                         f"[1, {k + 1}]; got [{gain.min()}, {gain.max()}]")
    # none past its output: at position m of a request of o tokens, at most o - m
    left = np.arange(1, k + 1)
    near_end = output[:, :, None] > left                   # position o - j exists and is > 0
    rows = np.broadcast_to(np.arange(output.shape[0])[:, None, None], near_end.shape)
    at = (offset + output)[:, :, None] - left
    cap = np.broadcast_to(left, near_end.shape)[near_end]
    if (gain[rows[near_end], at[near_end]] > cap).any():
        raise ValueError("speculative_gains gains a request tokens past its output; make them "
                         "with Speculative.gains for these output_tokens")
    return gain, offset


def _prefix_rows(arrays, prefix_group, prefix_tokens):
    """Validated ``(prefix_group, prefix_tokens)`` rows (each as a Workload takes them), or None."""
    if (prefix_group is None) != (prefix_tokens is None):
        raise ValueError("prefix_group and prefix_tokens go together: give both or neither")
    if prefix_group is None:
        return None
    group, tokens = np.asarray(prefix_group), np.asarray(prefix_tokens)
    if group.shape != arrays[0].shape or tokens.shape != arrays[0].shape:
        raise ValueError(f"prefix_group and prefix_tokens must have the rows' shape "
                         f"{arrays[0].shape}; got {group.shape} and {tokens.shape}")
    out = (np.empty(group.shape, np.int64), np.empty(group.shape, np.int64))
    for r in range(group.shape[0]):
        try:
            wl = Workload(arrays[0][r], arrays[1][r], arrays[2][r], arrays[3][r],
                          prefix_group=group[r], prefix_tokens=tokens[r])
        except (ValueError, TypeError) as err:
            raise type(err)(f"replicate {r}: {err}") from None
        out[0][r], out[1][r] = wl.prefix_group, wl.prefix_tokens
    return out


def _valid_block(named):
    """The kernel inputs if every row is a valid :class:`Workload`, checked on the whole block in
    one pass (a search runs thousands of valid blocks); else None.
    """
    arrival = np.asarray(named["arrival"])
    if arrival.dtype.kind not in "iuf" or not np.isfinite(arrival).all() or \
            (arrival.size and (arrival.min() < 0 or arrival.max() > MAX_ARRIVAL
                               or (np.diff(arrival, axis=1) < 0).any())):
        return None
    counts = []
    for name, lo, hi in (("prompt_tokens", 0, MAX_COUNT), ("output_tokens", 1, MAX_COUNT),
                         ("priority", 0, 1)):
        if name not in named:
            counts.append(np.zeros(arrival.shape, np.int64))
            continue
        a = np.asarray(named[name])
        if a.dtype.kind not in "iuf" or (a.size and (a.min() < lo or a.max() > hi)):
            return None
        if a.dtype.kind == "f" and (~np.isfinite(a) | (a != np.floor(a))).any():
            return None
        counts.append(np.ascontiguousarray(a, dtype=np.int64))
    return (np.ascontiguousarray(arrival, dtype=np.float64), *counts)


def _replicate_rows(arrival, prompt_tokens, output_tokens, priority):
    """Validate 2-D ``(replicate, request)`` workloads row by row, as contiguous kernel inputs."""
    named = {"arrival": arrival, "prompt_tokens": prompt_tokens, "output_tokens": output_tokens}
    if priority is not None:
        named["priority"] = priority
    shapes = {}
    for name, values in named.items():
        a = np.asarray(values)
        if a.ndim != 2:
            raise ValueError(f"{name} must be 2-D (replicate, request), got shape {a.shape}")
        shapes[name] = a.shape
    if len(set(shapes.values())) != 1:
        raise ValueError(f"arrival, prompt_tokens, output_tokens (and priority) must have one "
                         f"shape, got {shapes}")
    rows, n = shapes["arrival"]
    if rows < 1:
        raise ValueError("arrival must hold at least one replicate (row)")
    fast = _valid_block(named)
    if fast is not None:
        return fast
    # something is wrong: validate row by row for a message naming the replicate and the value
    arrays = (np.empty((rows, n)), np.empty((rows, n), np.int64), np.empty((rows, n), np.int64),
              np.empty((rows, n), np.int64))
    pr = None if priority is None else np.asarray(priority)
    for r in range(rows):
        try:
            wl = Workload(np.asarray(arrival)[r], np.asarray(prompt_tokens)[r],
                          np.asarray(output_tokens)[r], None if pr is None else pr[r])
        except (ValueError, TypeError) as err:
            raise type(err)(f"replicate {r}: {err}") from None
        arrays[0][r], arrays[1][r], arrays[2][r], arrays[3][r] = (
            wl.arrival, wl.prompt_tokens, wl.output_tokens, wl.priority)
    return arrays
