"""Capacity under load: the highest request rate one replica sustains within an SLO.

A replica is a continuous batcher (:mod:`rooflinekit.batching`) on one tensor-parallel group,
timed by the roofline clock. :func:`max_rate` finds, per Monte Carlo replicate, the highest
arrival rate at which every target of an :class:`~rooflinekit.planning.SLO` holds at its
quantile, and which constraint binds there (:data:`BINDINGS`).
"""

from __future__ import annotations

import functools

import numpy as np

from rooflinekit._validation import check_bool, check_type, describe, real_number
from rooflinekit.batching import (
    ContinuousBatcher,
    DisaggregatedBatcher,
    replicate_seed,
    run_replicates,
)
from rooflinekit.planning.traffic import SLO

#: Public; rate_variables serves the planners of this folder.
__all__ = ["max_rate", "draw_requests", "prefixes", "speculative_rows", "BINDINGS",
           "LOWEST_RATE_FRACTION"]

#: What can bind a replica's rate: a latency target (TTFT, every-gap ITL, end-to-end,
#: per-request TPOT), the goodput attainment, memory (KV cache full, too full to admit the
#: next request, or requests too long for it), the slots, the simulated requests (every one of
#: a replicate's requests ran at once with the cache and the slots to spare: the rate found is
#: a floor, more requests would raise it), the weights not fitting, or a layout the model
#: cannot take.
BINDINGS = ("ttft", "itl", "e2e", "tpot", "attainment", "memory", "max_num_seqs", "requests",
            "does_not_fit", "invalid_layout")

#: The search's lowest rate, as a fraction of the saturation rate.
LOWEST_RATE_FRACTION = 1 / 256

#: Summaries holding each target's attained share: TPOT's is the share of requests with two or
#: more output tokens whose (e2e - ttft) / (output - 1) meets it, as vllm bench serve defines a
#: request's TPOT (vllm/benchmarks/serve.py, calculate_metrics); ITL's the share of every gap.
_ATTAINMENT = {"ttft": "ttft_attainment", "itl": "token_itl_attainment", "e2e": "e2e_attainment",
               "tpot": "tpot_attainment"}

#: The summaries a search step reads, and those of the saturation run.
_SEARCHED = (*_ATTAINMENT.values(), "slo_attainment", "n_rejected")
_SATURATION = ("request_throughput", "mean_service_latency", "peak_running", "peak_kv_occupancy")

#: Shares nearer 0 or 1 than this are taken at it in log-odds (search interpolation only).
_LOGIT_FLOOR = 1e-4

#: KV occupancy at saturation above which memory, not the slots, caps the batch.
_KV_FULL = 0.95


def draw_requests(traffic, replicates: int, requests: int, seed: int):
    """The requests of every replicate, arrivals at unit rate: ``(arrival, prompt, output)``
    (then ``prefix_group``, ``prefix_tokens`` with shared prefixes), each ``(replicate,
    request)``; replicate ``r`` drawn from ``default_rng(replicate_seed(seed, r))``."""
    spec = traffic.workload(requests, rate=1.0)
    if traffic.prefix is None:
        rows = [spec.draw(np.random.default_rng(replicate_seed(seed, r)))
                for r in range(replicates)]
        return tuple(np.stack([row[k] for row in rows]) for k in range(3))
    rows = [spec.draw_prefixed(np.random.default_rng(replicate_seed(seed, r)))
            for r in range(replicates)]
    return tuple(np.stack([row[k] for row in rows]) for k in (0, 1, 2, 4, 5))


def prefixes(draws, rows=slice(None)) -> dict:
    """The shared-prefix arrays of ``draws`` (rows ``rows``) as keywords of ``run_replicates``."""
    if len(draws) == 3:
        return {}
    return {"prefix_group": draws[3][rows], "prefix_tokens": draws[4][rows]}


def speculative_rows(spec, draws) -> tuple[np.ndarray, np.ndarray]:
    """The gains of a speculative batcher for every row of ``draws``: ``(gain, offset)``, row
    ``r`` from ``row_seed(r)`` as :func:`~rooflinekit.batching.run_replicates` draws it."""
    output = draws[2]
    return spec.gains(output, [spec.row_seed(r) for r in range(output.shape[0])])


def _targets(slo) -> dict:
    """The SLO's targets as the simulator's keywords (``ttft_target=``, ...) [s]."""
    return {f"{name}_target": value for name, value in slo.targets.items()}


def _margins(ds, slo) -> dict:
    """Per replicate, how far each constraint is from failing (negative: it fails)."""
    q = float(slo.quantile)
    margins = {name: ds[_ATTAINMENT[name]] - q for name in slo.targets}
    if slo.attainment is not None:
        margins["attainment"] = ds["slo_attainment"] - float(slo.attainment)
    return margins


def _logit(share):
    share = np.clip(share, _LOGIT_FLOOR, 1.0 - _LOGIT_FLOOR)
    return np.log(share / (1.0 - share))


def _logit_margin(ds, slo) -> np.ndarray:
    """Per replicate, the smallest constraint's attained share minus its target, in log-odds
    (near a straight line in log rate, which the search interpolates)."""
    pairs = [(ds[_ATTAINMENT[name]], slo.quantile) for name in slo.targets]
    if slo.attainment is not None:
        pairs.append((ds["slo_attainment"], slo.attainment))
    return np.min(np.stack([_logit(share) - _logit(float(target)) for share, target in pairs]),
                  axis=0)


def _meets(margins, n) -> np.ndarray:
    ok = np.ones(n, dtype=bool)
    for m in margins.values():
        ok &= m >= 0
    return ok


def _capacity_bound(batcher, occupancy, peak, requests) -> np.ndarray:
    """What capped the saturation run's batch, per replicate (Notes of :func:`max_rate`, 4).

    A continuous batcher admits a burst's requests while it has slots and cache for their first
    blocks (a prefilling request holds its slot), so a peak below both the slots and the
    requests means the cache stopped admission, even where it was not full (a reservation or
    a prompt that did not fit in what was left). A pair of pools sums its pools' peaks, so
    only a full cache tells there.
    """
    full = occupancy >= _KV_FULL
    if not isinstance(batcher, ContinuousBatcher):
        return np.where(full, "memory", "max_num_seqs")
    slots = np.inf if batcher.max_num_seqs is None else batcher.max_num_seqs
    return np.where(full, "memory",
                    np.where(peak >= slots, "max_num_seqs",
                             np.where(peak >= requests, "requests", "memory")))


def _failing(margins, rejected) -> np.ndarray:
    """The binding constraint of runs that miss the SLO (memory if requests were refused)."""
    names = list(margins)
    if not names:
        return np.where(rejected, "memory", "max_num_seqs")
    worst = np.argmin(np.stack([margins[k] for k in names]), axis=0)
    return np.where(rejected, "memory", np.asarray(names)[worst])


def _close_in(evaluate, lo, hi, margin_lo, margin_hi, binding, searching, ratio) -> None:
    """Close the brackets ``[lo, hi]`` of the rows ``searching`` in place until ``hi <= lo *
    ratio``, by step 3 of :func:`max_rate`'s Notes."""
    n = lo.size
    searching = searching.copy()
    stalled = np.zeros(n, bool)
    earlier = np.full(n, np.inf)             # the bracket's width two runs back
    lo_moved = np.ones(n, bool)              # the descent's last run met the SLO at lo
    step = np.log(ratio)
    while True:
        searching &= hi > lo * ratio
        if not searching.any():
            return
        index = np.flatnonzero(searching)
        log_lo, log_hi = np.log(lo[index]), np.log(hi[index])
        # the crossing of a straight line through the margins, stepped 0.45 of a ratio beyond
        # it toward the end that did not move last (so that an accurate line closes the
        # bracket in two runs, to 0.9 of a ratio), kept half a ratio inside the bracket
        share = margin_lo[index] / (margin_lo[index] - margin_hi[index])
        line = log_lo + share * (log_hi - log_lo) + np.where(lo_moved[index], 0.45, -0.45) * step
        line = np.clip(line, log_lo + 0.5 * step, log_hi - 0.5 * step)
        # bisection where the bracket is within two ratios or the last two runs did not halve it
        bisect = (log_hi - log_lo <= 2 * step) | stalled[index]
        rate = np.exp(np.where(bisect, 0.5 * (log_lo + log_hi), line))
        ok, why, margin = evaluate(index, rate)
        lo[index[ok]], margin_lo[index[ok]] = rate[ok], margin[ok]
        hi[index[~ok]], margin_hi[index[~ok]] = rate[~ok], margin[~ok]
        binding[index[~ok]] = why[~ok]
        lo_moved[index] = ok
        width = np.log(hi[index] / lo[index])
        stalled[index] = ~stalled[index] & (width > 0.5 * earlier[index])
        earlier[index] = log_hi - log_lo


def max_rate(batcher: ContinuousBatcher, slo, draws, *, rtol: float = 0.02,
             parallel: bool = True, gains=None) -> dict:
    """The highest rate each replicate of ``draws`` sustains on ``batcher`` within ``slo``.

    Parameters
    ----------
    batcher : ContinuousBatcher or DisaggregatedBatcher
        One replica (or one unit of prefill and decode pools), on the roofline clock (times in
        seconds).
    slo : SLO
        The targets and their quantile: each target given is one more constraint, its attained
        share read from the run (``ttft_attainment``, ``token_itl_attainment``, ...).
    draws : tuple of ndarray
        ``(arrival, prompt, output)`` from :func:`draw_requests`, arrivals at unit rate.
    rtol : float
        Relative tolerance of the search [1], in (0, 1): the final bracket's ratio is within
        ``1 + rtol``.
    parallel : bool
        Run the replicates of a step on all cores, one thread each; ``False`` inside dask
        tasks and the planner's own threads, which supply the parallelism themselves.
    gains : tuple of ndarray, optional
        A speculative batcher's gains for the rows of ``draws``, ``(gain, offset)`` from
        :func:`speculative_rows`; default drawn here, the same tables.

    Returns
    -------
    dict
        Per replicate: ``max_rate`` and ``saturation_rate`` [requests/s], ``binding`` (one of
        :data:`BINDINGS`), ``kv_occupancy`` at saturation [1]; and ``runs``, the simulations run.

    Notes
    -----
    1. *Common random numbers.* Replicate ``r`` draws its requests (and a speculative
       batcher's gains) once, at unit rate; a run at rate λ divides the arrival times by λ, so
       every rate and configuration sees the same requests.
    2. *Saturation.* All requests arrive at once; the full batch's completion rate (Little's
       law: its size over the mean time a request spends in it, or the run's completion rate
       if higher) is the rate above which a queue grows without bound.
    3. *Descent, then a safeguarded line search*, per replicate: the rate is halved from
       saturation until the SLO holds (to :data:`LOWEST_RATE_FRACTION` of it at most); each
       further run goes where a line through the bracket's margins (in log-odds, over log
       rate) crosses zero, or bisects it where the line stalls, until ``hi ≤ lo·(1 + rtol)``.
       The max rate is ``lo``, one crossing of an attainment that falls with the rate almost
       everywhere, but not strictly.
    4. If the SLO holds at saturation, the rate is the saturation rate and capacity binds:
       ``"max_num_seqs"`` where the batch reached the batcher's slots, ``"requests"`` where
       every request of the replicate ran at once below them (the burst was too small to fill
       the replica, so its rate is a floor: more requests would find a higher one), else
       ``"memory"``: the KV cache was full, or stopped admission with room left for less
       than a request (a pair of pools: ``"memory"`` where full, else ``"max_num_seqs"``).
       If it fails even at the lowest rate, the rate is 0 and the target missed there binds.

    SLO attainment is counted exactly in each run (:func:`rooflinekit.batching.run_replicates`),
    so "meets" compares shares, not interpolated percentiles. A run starts from an empty
    system, which makes it slightly optimistic, less so with more requests.
    """
    check_type("batcher", batcher, (ContinuousBatcher, DisaggregatedBatcher))
    check_type("slo", slo, SLO)
    # a tolerance <= 0 never ends the search, one >= 1 stops it on the first bracket
    rtol = real_number("rtol", rtol, lo=0, hi=1, lo_open=True, hi_open=True)
    check_bool("parallel", parallel)
    if not isinstance(draws, (tuple, list)) or len(draws) < 3:
        raise TypeError(f"draws must be the (arrival, prompt, output, ...) arrays of "
                        f"draw_requests; got {describe(draws)}")
    arrival, prompt, output = draws[:3]
    n = arrival.shape[0]
    targets = _targets(slo)
    runs = 0
    if isinstance(batcher, DisaggregatedBatcher):
        # a pair of pools simulates its rows itself, with run_replicates' signature
        def simulate(*rows, variables, **keywords):
            ds = batcher.run_replicates(*rows, variables=variables, **keywords)
            return {name: ds[name].values for name in variables}
    else:
        # the search reads a few numbers of many runs: arrays, not Datasets
        simulate = functools.partial(run_replicates, batcher, as_dataset=False)
    spec = getattr(batcher, "speculative", None)   # a pair of pools has none: each draws its own
    if spec is not None and gains is None:
        # replicate r's gains from its own seed, drawn once as the requests are: every run of the
        # search reads its rows' tables (common random numbers across rates)
        gains = speculative_rows(spec, draws)

    def speculative(rows):
        return {} if gains is None else {"speculative_gains": (gains[0][rows], gains[1][rows])}

    def evaluate(rows, rates):
        """Whether the SLO holds at ``rates`` of the replicates ``rows`` (indices, repeats
        allowed), what fails where it does not, and the smallest margin."""
        nonlocal runs
        runs += rows.size
        ds = simulate(arrival[rows] / rates[:, None], prompt[rows], output[rows],
                      parallel=parallel, variables=_SEARCHED, **prefixes(draws, rows),
                      **speculative(rows), **targets)
        margins = _margins(ds, slo)
        smallest = _logit_margin(ds, slo) if margins else np.ones(rows.size)
        return (_meets(margins, rows.size), _failing(margins, ds["n_rejected"] > 0),
                smallest)

    busy = simulate(np.zeros_like(arrival), prompt, output, parallel=parallel,
                    variables=_SATURATION, **prefixes(draws), **speculative(slice(None)))
    runs += n
    # The busy run drains at the end with a shrinking batch, which would understate the rate of
    # a full batch by up to max_num_seqs / requests; Little's law on the full batch (its size
    # over the mean time a request spends in it) does not drain.
    in_batch = busy["mean_service_latency"].astype(float)
    full = np.divide(busy["peak_running"], in_batch, out=np.zeros(n),
                     where=np.nan_to_num(in_batch) > 0)
    saturation = np.maximum(busy["request_throughput"].astype(float), full)
    occupancy = np.nan_to_num(busy["peak_kv_occupancy"].astype(float))
    capacity_bound = _capacity_bound(batcher, occupancy, busy["peak_running"].astype(float),
                                     arrival.shape[1])
    served = saturation > 0
    binding = np.where(served, capacity_bound, "memory").astype(object)
    rate = np.zeros(n)
    if not served.any():
        return {"max_rate": rate, "saturation_rate": saturation, "binding": binding,
                "kv_occupancy": occupancy, "runs": runs}

    hi = np.where(served, saturation, 1.0)
    ok_hi = np.zeros(n, bool)
    margin_lo, margin_hi = np.zeros(n), np.zeros(n)
    index = np.flatnonzero(served)
    ok_hi[index], binding[index], margin_hi[index] = evaluate(index, hi[index])
    binding[served & ok_hi] = capacity_bound[served & ok_hi]
    # Halve the rate until the SLO holds (low rates are the slow runs: a batch of one decodes
    # every token in its own step, so the search never starts at the bottom) ...
    lo = hi.copy()
    ok_lo = np.zeros(n, bool)
    descending = served & ~ok_hi
    while descending.any():
        index = np.flatnonzero(descending)
        lo[index] = hi[index] / 2
        ok, why, margin = evaluate(index, lo[index])
        ok_lo[index[ok]] = True
        margin_lo[index[ok]] = margin[ok]
        hi[index[~ok]], margin_hi[index[~ok]] = lo[index[~ok]], margin[~ok]
        binding[index[~ok]] = why[~ok]
        descending &= ~ok_lo & (lo > saturation * LOWEST_RATE_FRACTION * (1 + 1e-9))
    # ... then close in on the crossing of that octave (Notes, step 3).
    _close_in(evaluate, lo, hi, margin_lo, margin_hi, binding, served & ~ok_hi & ok_lo,
              1.0 + rtol)
    rate = np.where(served & ok_hi, saturation, np.where(served & ok_lo, lo, 0.0))
    return {"max_rate": rate, "saturation_rate": saturation, "binding": binding,
            "kv_occupancy": occupancy, "runs": runs}


def rate_variables(var, per, saturation, unit: str) -> dict:
    """The search's rates as Dataset variables, the median over replicates (``per``'s last axis,
    [requests/s]) and its band, each built by ``var(data, units, long_name)``."""
    q = np.quantile(per, [0.5, 0.1, 0.9], axis=-1)
    return {
        "max_rate": var(q[0], "requests/s", f"highest rate per {unit} within the SLO (median "
                                             f"over replicates)"),
        "max_rate_low": var(q[1], "requests/s", f"max rate per {unit}, 10th percentile"),
        "max_rate_high": var(q[2], "requests/s", f"max rate per {unit}, 90th percentile"),
        "saturation_rate": var(saturation, "requests/s",
                               f"rate per {unit} above which the queue grows without bound"),
    }
