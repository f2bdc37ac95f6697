"""Disaggregated serving: a prefill pool and a decode pool of continuous batchers (xPyD).

``DisaggregatedBatcher(prefill=ContinuousBatcher(...), decode=ContinuousBatcher(...),
prefill_replicas=x, decode_replicas=y, link_bandwidth=...)``: request ``i`` runs on prefill
replica ``i mod x`` with one output token; its prompt's KV crosses the link
(:func:`rooflinekit.parallel.kv_transfer_time`; ``link_latency`` alone on the tick clock or an
infinite link); the ``k``-th arrival at the decode pool (ties by request) runs on decode replica
``k mod y`` as ``prompt + 1`` tokens whose prompt KV came with it (``arrived_kv_tokens``),
``output - 1`` to generate. A tandem queue without backpressure; a request whose final length
can never fit a pool is rejected there (``rejected_in``), on arrival.

Results are :meth:`ContinuousBatcher.run <rooflinekit.batching.ContinuousBatcher.run>`'s for the
whole request (TTFT from the prefill pool, the finish from the decode pool, preemptions of both).
Run summaries are fleet totals over every replica (peaks summed: a bound). Every gap counts in
``token_gaps`` and the attainment, the first-to-second-token hand-off included; the gap
percentiles pool the decode replicas' gaps in one histogram, without the hand-offs (speculative
pools, run one by one: the largest replica's, an upper bound). One numba call runs it all, equal
bit for bit to :func:`rooflinekit.batching._reference.simulate_disaggregated`. The rules in full
and what is not modelled (backpressure, link contention and overlap, prefix sharing in the
decode pool, load-aware routing): ``docs/parallelism.md``, "Disaggregated prefill and decode".

References
----------
.. [1] Zhong et al., "DistServe: Disaggregating Prefill and Decoding for Goodput-optimized Large
       Language Model Serving", OSDI 2024.
.. [2] Patel et al., "Splitwise: Efficient Generative LLM Inference Using Phase Splitting",
       ISCA 2024.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import xarray as xr

from rooflinekit import dims
from rooflinekit._validation import check_bool, check_keys, real_number, whole_number
from rooflinekit.batching import _reference
from rooflinekit.batching._kernel_calls import _allocate, _check_errors, _itl_limit, _targets
from rooflinekit.batching._schema import COMPLETED, GAP_PERCENTILES, N_STATS, STAT, UNLIMITED
from rooflinekit.batching.batchers import (
    SIMULATION_MEMORY_LIMIT,
    SIMULATION_WORK_LIMIT,
    ContinuousBatcher,
)
from rooflinekit.batching.replicates import _prefix_rows, _replicate_rows
from rooflinekit.batching.results import (
    SUMMARY_NAMES,
    _model_quality,
    _replicate_dataset,
    _single_dataset,
    _summaries,
    _target_attrs,
)
from rooflinekit.parallel import kv_transfer_time
from rooflinekit.workloads import Workload, coerce_workload

__all__ = ["POOLS", "DisaggregatedBatcher"]

#: The pools of a disaggregated fleet, as ``rejected_in`` names them.
POOLS = ("prefill", "decode")

# statistics of a fleet: the latest end, the gap percentiles' largest, every other one summed
_LATEST = (STAT["end_time"],)
_PERCENTILE_STATS = tuple(STAT[f"token_itl_p{q}"] for q in GAP_PERCENTILES)


def _run_pool(pool, timing, targets, arrival, prompt, output, priority, prefix, arrived=None):
    """The kernel's outputs for one replica's requests (already valid: no Workload checks)."""
    out = _allocate(1, arrival.shape[0])
    row = lambda a, dtype: np.ascontiguousarray(a, dtype=dtype)[None]  # noqa: E731
    pool._run_many(timing, row(arrival, np.float64), row(prompt, np.int64),
                   row(output, np.int64), row(priority, np.int64), out, targets, parallel=False,
                   prefix=(row(prefix[0], np.int64), row(prefix[1], np.int64)),
                   arrived=None if arrived is None else row(arrived, np.int64))
    return out


@dataclasses.dataclass(frozen=True)
class DisaggregatedBatcher:
    """Prefill and decode on separate pools of continuous batchers, KV sent between them.

    Parameters
    ----------
    prefill, decode : ContinuousBatcher
        One replica of each pool (its slots, KV budget, chunking, GPU, TP and ``engine``, each
        pool timed by its own); both on the same clock and, on the roofline clock, the same
        model.
    prefill_replicas, decode_replicas : int
        Replicas of each pool [1], >= 1 (``x`` and ``y`` of xPyD).
    link_bandwidth : float
        Bandwidth of the link a request's KV crosses [bytes/s], >= 1; ``inf`` for an instant
        link (a 400 Gb/s NIC: 50e9, ``GPU.network_bandwidth``). Unused on the tick clock.
    link_latency : float
        Fixed time of each transfer [tick or s], >= 0. Default 0.

    Notes
    -----
    The rules are the module docstring's. With an instant link and pools that never queue, a
    request's TTFT is its prefill alone and its decode a decode-only run of its KV (tested).

    References
    ----------
    .. [1] Zhong et al., DistServe, OSDI 2024; Patel et al., Splitwise, ISCA 2024.

    See Also
    --------
    ContinuousBatcher : one pool's replica, and the aggregated alternative.
    rooflinekit.parallel.kv_transfer_time : the transfer of one prompt's KV.
    """

    prefill: ContinuousBatcher
    decode: ContinuousBatcher
    prefill_replicas: int = 1
    decode_replicas: int = 1
    link_bandwidth: float = dataclasses.field(kw_only=True)
    link_latency: float = dataclasses.field(default=0.0, kw_only=True)

    def __post_init__(self):
        for name in POOLS:
            pool = getattr(self, name)
            if not isinstance(pool, ContinuousBatcher):
                raise TypeError(f"{name} must be a ContinuousBatcher, got {type(pool).__name__}")
            if not pool.mixed_prefill:
                raise ValueError(f"{name}: mixed_prefill=False is modelled for one aggregated "
                                 f"replica only; give the pools mixed_prefill=True")
            if pool.stream_interval != 1:
                raise ValueError(f"{name}: stream_interval={pool.stream_interval} is modelled "
                                 f"for one aggregated replica only; give the pools "
                                 f"stream_interval=1")
        whole_number("prefill_replicas", self.prefill_replicas, lo=1)
        whole_number("decode_replicas", self.decode_replicas, lo=1)
        # at least 1 byte/s: a denormal rate would overflow the transfer time to inf
        real_number("link_bandwidth", self.link_bandwidth, lo=1, allow_inf=True)
        real_number("link_latency", self.link_latency, lo=0)
        if self.prefill.clock != self.decode.clock:
            raise ValueError(f"prefill and decode must run on the same clock, got "
                             f"{self.prefill.clock!r} and {self.decode.clock!r}")
        if self.prefill.model != self.decode.model:
            raise ValueError("prefill and decode must serve the same model (the KV that moves "
                             "between them is that model's)")

    @property
    def policy(self) -> str:
        return "disaggregated"

    def _fleet_total(self, per):
        """Both pools' replicas summed, from one replica's of each (None: unlimited)."""
        return None if None in per else (self.prefill_replicas * per[0]
                                         + self.decode_replicas * per[1])

    def _slots(self):
        return self._fleet_total((self.prefill._slots(), self.decode._slots()))

    def _kv_budget(self):
        return self._fleet_total(self._budgets())

    def _transfer(self, prompt):
        """Time to move each prompt's KV to the decode pool [tick or s]."""
        if self.prefill.clock == "tick" or math.isinf(self.link_bandwidth):
            return np.full(prompt.shape, float(self.link_latency))
        return np.asarray(kv_transfer_time(self.prefill.model, prompt,
                                           link_bandwidth=self.link_bandwidth,
                                           link_latency=self.link_latency), dtype=float)

    def _serve(self, wl, timings, targets, budgets=None, transfer=None):
        """One workload through both pools in one kernel call: the outputs for the whole requests,
        the pool that rejected each (0 none, 1 prefill, 2 decode), each pool's largest replica peak
        KV occupancy and the decode arrivals; ``budgets`` and ``transfer`` may come computed once.
        """
        if self.prefill.speculative is not None or self.decode.speculative is not None:
            return self._serve_each(wl, timings, targets)
        from rooflinekit.batching import _kernels  # numba: imported on the first run
        n = wl.n_requests
        prompt = np.ascontiguousarray(wl.prompt_tokens, np.int64)
        output = np.ascontiguousarray(wl.output_tokens, np.int64)
        if budgets is None:
            budgets = self._budgets()
        if transfer is None:
            transfer = self._transfer(prompt)
        self._check_unlimited(budgets, prompt, output)
        out = (np.empty(n), np.empty(n), np.empty(n), np.empty(n, np.int64),
               np.empty(n, np.int64))
        rejected_in, ready = np.empty(n, np.int64), np.empty(n)
        handoff, fleet, held = np.empty(n), np.empty(N_STATS), np.empty(2)
        itl = _itl_limit(targets[1])
        inputs = _kernels.kernel_inputs(wl.arrival.astype(np.float64, copy=False), prompt,
                                        output, wl.priority.astype(np.int64, copy=False),
                                        wl.prefix_group.astype(np.int64, copy=False),
                                        wl.prefix_tokens.astype(np.int64, copy=False),
                                        np.asarray(transfer, np.float64))
        run = _kernels.disaggregated_kernel(timings[0].tick)
        with _kernels.compile_notice(run):
            error, h = run(
                *inputs, self.prefill_replicas, self.decode_replicas,
                self.prefill._args(budgets[0]), self.decode._args(budgets[1]), timings[0].tick,
                timings[0].coef, timings[1].coef, itl, *out, rejected_in, ready, handoff, fleet,
                held)
        if error:
            _check_errors(np.array([error]))
        # numpy's (pairwise) sum of the hand-off gaps, as the gaps' total has always been
        fleet[STAT["token_gap_time"]] += handoff[:h].sum()
        peak = [held[p] / b if b else 0.0 for p, b in enumerate(budgets)]
        return (*out, fleet), rejected_in, peak, ready

    def _budgets(self):
        """Each pool's KV budget [tokens] (None: unlimited)."""
        return self.prefill._kv_budget(), self.decode._kv_budget()

    def _check_unlimited(self, budgets, prompt, output):
        """Refuse what an unlimited KV budget (2**60 tokens to the kernel) cannot hold,
        checked on the whole workload (a bound of any replica's share).
        """
        for name, budget in zip(POOLS, budgets):
            if budget is None and prompt.size:
                state = float(getattr(self, name)._state_tokens())
                held = (float(np.sum(prompt, dtype=np.float64))
                        + float(np.sum(output, dtype=np.float64)) + prompt.size * (1.0 + state))
                if held > UNLIMITED:
                    raise ValueError(f"an unlimited KV budget holds at most 2**60 = "
                                     f"{UNLIMITED:,} tokens; these requests hold up to "
                                     f"{held:.3g} in all: give the {name} pool "
                                     f"kv_budget_tokens, or fewer or shorter requests")

    def _serve_each(self, wl, timings, targets):
        """:meth:`_serve` replica by replica, each its pool's own kernel call: speculative
        pools, whose drawn gains follow the requests each replica gets. The gap percentiles
        are the decode replicas' largest, an upper bound of the pooled percentile where there
        are several."""
        n = wl.n_requests
        prompt, output = wl.prompt_tokens, wl.output_tokens
        admit, first, finish = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
        preempt = np.zeros(n, np.int64)
        status = np.zeros(n, np.int64)
        rejected_in = np.zeros(n, np.int64)
        stats, peak = [], [0.0, 0.0]
        handoff = np.empty(0)
        ready = np.full(n, np.nan)
        for p, (pool, replicas) in enumerate(((self.prefill, self.prefill_replicas),
                                              (self.decode, self.decode_replicas))):
            if p == 0:
                groups = [np.arange(j, n, replicas) for j in range(replicas)]
            else:
                waiting = np.flatnonzero((status == COMPLETED) & (output > 1))
                ready[waiting] = finish[waiting] + self._transfer(prompt[waiting])
                waiting = waiting[np.argsort(ready[waiting], kind="stable")]
                groups = [waiting[j::replicas] for j in range(replicas)]
                second = np.full(n, np.nan)
            for idx in groups:
                if idx.size == 0:
                    continue
                # Each replica's requests are a subset of a validated workload, in arrival
                # order (the decode pool's sorted by arrival there above), so the kernel takes
                # them as they are: validating them again cost more than the pools' kernels.
                if p == 0:
                    # prefill: one token, the first; prefixes shared as the pool's cache allows
                    out = _run_pool(pool, timings[p], targets, wl.arrival[idx], prompt[idx],
                                    np.ones(idx.size, np.int64), wl.priority[idx],
                                    (wl.prefix_group[idx], wl.prefix_tokens[idx]))
                    admit[idx], first[idx] = out[0][0], out[1][0]
                else:
                    # decode: the prompt and the first token, the prompt's KV arrived with it
                    none = np.full(idx.size, -1, np.int64)
                    out = _run_pool(pool, timings[p], targets, ready[idx], prompt[idx] + 1,
                                    output[idx] - 1, wl.priority[idx],
                                    (none, np.zeros(idx.size, np.int64)), prompt[idx])
                    second[idx] = out[1][0]
                finish[idx] = out[2][0]
                preempt[idx] += out[3][0]
                status[idx] = out[4][0]
                rejected_in[idx[out[4][0] != COMPLETED]] = p + 1
                stats.append(out[5][0])
                budget = pool._kv_budget()
                if budget:
                    peak[p] = max(peak[p], out[5][0][STAT["peak_kv_reserved"]] / budget)
            if p == 1:
                done = (status == COMPLETED) & (output > 1)
                handoff = second[done] - first[done]
        fleet = _fleet_stats(stats, handoff, targets[1])
        return (admit, first, finish, preempt, status, fleet), rejected_in, peak, ready

    def reference(self, workload, itl_target=None) -> dict:
        """The same run by :func:`rooflinekit.batching._reference.simulate_disaggregated`, for
        tests: the kernel's outputs (``admit`` ... ``stats``), ``rejected_in``,
        ``decode_arrival`` and ``peak`` (each pool's peak KV occupancy), as :meth:`_serve`."""
        wl = coerce_workload(workload)
        pools = []
        for name in POOLS:
            pool = getattr(self, name)
            slots, budget, state, window, _, block, mnbt, cap, caching, _, recv = pool._args(
                pool._kv_budget())
            pools.append({"max_num_seqs": slots, "kv_budget": budget,
                          "state_tokens_per_sequence": state, "kv_window": window,
                          "admission": pool.admission, "block_size": block,
                          "max_num_batched_tokens": mnbt, "interactive_cap": cap,
                          "prefix_caching": caching, "clock": pool._timing().reference_clock,
                          "recv_interval": recv[0], "request_overhead": recv[2]})
        out = _reference.simulate_disaggregated(
            wl.arrival, wl.prompt_tokens, wl.output_tokens, wl.priority, wl.prefix_group,
            wl.prefix_tokens, self._transfer(wl.prompt_tokens),
            prefill_replicas=self.prefill_replicas, decode_replicas=self.decode_replicas,
            prefill=pools[0], decode=pools[1], itl_target=_itl_limit(itl_target))
        held = out.pop("peak_kv_reserved")
        budgets = self._budgets()
        out["peak"] = [held[p] / b if b else 0.0 for p, b in enumerate(budgets)]
        return out

    def _timings(self):
        return self.prefill._timing(), self.decode._timing()

    def _check_work(self, output, work_limit, memory_limit):
        self.decode._check_size(output,
                                real_number("work_limit", work_limit, lo=0, lo_open=True,
                                            allow_inf=True),
                                real_number("memory_limit", memory_limit, lo=0, lo_open=True,
                                            allow_inf=True))

    def _quality(self, clock):
        """What the step times are: one phrase, or each pool's where they differ."""
        q = [_model_quality(getattr(self, name), clock) for name in POOLS]
        return q[0] if q[0] == q[1] else f"prefill: {q[0]}; decode: {q[1]}"

    def _attrs(self):
        return {"prefill_replicas": self.prefill_replicas,
                "decode_replicas": self.decode_replicas,
                "link_bandwidth": float(self.link_bandwidth),
                "link_latency": float(self.link_latency),
                "routing": "round-robin in each pool, in order of arrival there",
                "backpressure": "none (tandem queue: decode does not hold back prefill)"}

    def run(self, workload=None, *, arrival=None, prompt_tokens=None, output_tokens=None,
            priority=None, ttft_target=None, itl_target=None, e2e_target=None,
            tpot_target=None, work_limit=SIMULATION_WORK_LIMIT, memory_limit=SIMULATION_MEMORY_LIMIT) -> xr.Dataset:
        """Serve a workload on both pools (arguments as :meth:`ContinuousBatcher.run`).

        Returns
        -------
        xarray.Dataset
            The variables and summaries of :meth:`ContinuousBatcher.run` for the whole requests
            (module docstring), and per request ``rejected_in`` (``"prefill"``, ``"decode"`` or
            ``""``) and ``decode_arrival`` (when its KV reached the decode pool; NaN if it never
            went there); ``prefill_peak_kv_occupancy`` and ``decode_peak_kv_occupancy``, each
            pool's largest replica peak of KV reserved over its budget.
        """
        wl = coerce_workload(workload, arrival, prompt_tokens, output_tokens, priority)
        targets = _targets(ttft_target, itl_target, e2e_target, tpot_target)
        self._check_work(wl.output_tokens, work_limit, memory_limit)
        timings = self._timings()
        out, rejected_in, peak, ready = self._serve(wl, timings, targets)
        ds = _single_dataset(wl, tuple(a[None] for a in out), _Fleet(self), timings[0], targets)
        req, tu = dims.REQUEST, timings[0].units
        ds["rejected_in"] = xr.Variable((req,), np.array(("",) + POOLS)[rejected_in],
                                        {"units": "", "long_name": "pool that rejected it"})
        ds["decode_arrival"] = xr.Variable((req,), ready, {
            "units": tu, "long_name": "time its KV reached the decode pool"})
        for p, name in enumerate(POOLS):
            ds[f"{name}_peak_kv_occupancy"] = xr.Variable((), peak[p], {
                "units": "1", "long_name": f"largest {name} replica's peak KV reserved / budget"})
        ds.attrs.update(model_quality=self._quality(timings[0].clock), **self._attrs())
        return ds

    def run_replicates(self, arrival, prompt_tokens, output_tokens, priority=None, *,
                       ttft_target=None, itl_target=None, e2e_target=None, tpot_target=None,
                       parallel=True,
                       variables=None, work_limit=SIMULATION_WORK_LIMIT, memory_limit=SIMULATION_MEMORY_LIMIT,
                       prefix_group=None, prefix_tokens=None) -> xr.Dataset:
        """Summaries of caller-drawn workloads, one per row, as
        :func:`rooflinekit.batching.run_replicates` gives them for one batcher.

        The rows run one after another (``parallel`` is accepted for the same signature); each
        row's pools run as :meth:`run` runs them.
        """
        targets = _targets(ttft_target, itl_target, e2e_target, tpot_target)
        check_bool("parallel", parallel)
        if isinstance(variables, str):
            raise TypeError("variables must be a sequence of summary names, not one string")
        variables = None if variables is None else list(variables)
        check_keys("variables", variables or (), SUMMARY_NAMES, what="summary")
        arrays = _replicate_rows(arrival, prompt_tokens, output_tokens, priority)
        self._check_work(arrays[2], work_limit, memory_limit)
        prefix = _prefix_rows(arrays, prefix_group, prefix_tokens)
        timings = self._timings()
        # what every row shares, once: the pools' budgets, and the transfers elementwise
        budgets, transfer = self._budgets(), self._transfer(arrays[1])
        rows = []
        for r in range(arrays[0].shape[0]):
            extra = {} if prefix is None else {"prefix_group": prefix[0][r],
                                               "prefix_tokens": prefix[1][r]}
            wl = Workload(*(a[r] for a in arrays), **extra)
            rows.append(self._serve(wl, timings, targets, budgets, transfer[r])[0])
        out = tuple(np.stack([row[k] for row in rows]) if rows else
                    np.empty((0,) + arrays[0].shape[1:]) for k in range(6))
        # the front end the client meets is the prefill pool's
        summ = _summaries(*arrays, out, self._slots(), self._kv_budget(), targets,
                          wanted=variables, frontend_latency=timings[0].frontend_latency)
        ds = _replicate_dataset(summ, timings[0].units)
        budget = self._kv_budget()
        ds.attrs.update({"policy": self.policy, "clock": timings[0].clock,
                         "model_quality": self._quality(timings[0].clock),
                         "time_units": timings[0].units,
                         "kv_budget_tokens": "unlimited" if budget is None else budget,
                         **_target_attrs(targets), **self._attrs()})
        return ds


class _Fleet:
    """What :func:`rooflinekit.batching.results._single_dataset` reads of a batcher, for the
    whole fleet (its model quality is replaced by :meth:`DisaggregatedBatcher._quality`)."""

    engine = model = gpu = None

    def __init__(self, batcher):
        self.policy = batcher.policy
        self._batcher = batcher

    def _kv_budget(self):
        return self._batcher._kv_budget()

    def _slots(self):
        return self._batcher._slots()


def _fleet_stats(stats, handoff, itl_target):
    """The run statistics of every replica of both pools as one fleet's (module docstring).

    ``handoff``: the gaps from first to second token, counted with the decode pools' gaps.
    """
    fleet = np.zeros(N_STATS)
    fleet[list(_PERCENTILE_STATS)] = np.nan
    if stats:
        s = np.stack(stats)
        fleet[:] = s.sum(axis=0)
        fleet[list(_LATEST)] = s[:, list(_LATEST)].max(axis=0)
        with np.errstate(invalid="ignore"):
            pct = s[:, list(_PERCENTILE_STATS)]
            have = ~np.isnan(pct).all(axis=0)
            fleet[list(_PERCENTILE_STATS)] = np.where(
                have, np.nanmax(np.where(np.isnan(pct), -np.inf, pct), axis=0), np.nan)
    limit = _itl_limit(itl_target)
    fleet[STAT["token_gaps"]] += handoff.size
    fleet[STAT["token_gaps_met"]] += np.count_nonzero(handoff <= limit)
    fleet[STAT["token_gap_time"]] += handoff.sum()
    return fleet
