"""Results of a batching simulation: per-request Dataset, summary metrics, percentiles, goodput.

From a kernel's raw outputs (per request; per run the statistics
:data:`rooflinekit.batching._schema.STAT_NAMES`) this module derives the per-request times and
the summaries per replicate, and labels them: one ``request`` Dataset for a single run, one over
``policy``, the sweep names and ``replicate`` for a Monte Carlo, one over ``replicate`` for
caller-drawn replicates.

Percentiles of per-request quantities match ``numpy.quantile`` ("linear") over the completed
requests of each replicate, computed for all replicates at once; percentiles of the inter-token
gaps are the kernel's (nearest rank, read from a bounded histogram, at most 0.2 % above the exact
value: :class:`rooflinekit.batching._reference.GapLog`); a replicate with none completed gives
NaN, and a run that completes nothing has zero throughput, not NaN.

TPOT and ITL as ``vllm bench serve`` reports them (``vllm/benchmarks/serve.py``,
``calculate_metrics``): a request's TPOT is ``(e2e latency - ttft) / (output_tokens - 1)``, over
the completed requests with more than one output token, and its ITL every gap between tokens.
Our per-request ``itl`` *is* that TPOT (NaN for a one-token request), so ``mean_tpot``,
``p50_tpot`` ... ``p99_tpot`` (linear, as ``np.percentile``) are vLLM's ``mean_tpot_ms``,
``median_tpot_ms``, ``p99_tpot_ms`` in seconds (``mean_itl`` and ``p99_itl``, older names, the
same numbers); vLLM's every-gap ``mean_itl_ms`` / ``median_itl_ms`` are ``mean_token_itl`` /
``p50_token_itl``, its ``mean_e2el_ms`` / ``median_e2el_ms`` ``mean_latency`` / ``p50_latency``,
its ``request_throughput`` ours, its ``output_throughput`` our ``throughput`` (per
``makespan``, first arrival to last completion, not the benchmark's duration). The status, reason
and tier labels (:data:`STATUS_COMPLETED`, ..., :data:`TIERS`) are
:mod:`rooflinekit.batching._schema`'s.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr
from xarray.indexes import PandasIndex

from rooflinekit import dims, roofline
from rooflinekit.batching._schema import (
    BATCH,
    COMPLETED,
    GAP_PERCENTILES,
    INTERACTIVE,
    REASON_KV_BUDGET,
    REJECTED,
    STAT,
    STATUS_COMPLETED,
    STATUS_REJECTED,
    TIERS,
)
from rooflinekit.profiles import resolve_engine
from rooflinekit.roofline import IDEAL
from rooflinekit.workloads import Workload

__all__ = ["IDEAL", "STATUS_COMPLETED", "STATUS_REJECTED", "REASON_KV_BUDGET", "TIERS",
           "SUMMARY_NAMES"]

_TIER = "tier"
_POLICY = "policy"

#: Every summary of a run, in the order results list them (a test holds it to the results).
SUMMARY_NAMES = (
    "makespan", "throughput", "request_throughput", "mean_latency", "mean_service_latency",
    "mean_queue_delay", "mean_ttft", "mean_itl",
    *(f"p{q}_{what}" for q in GAP_PERCENTILES for what in ("latency", "ttft")),
    "p99_itl", "p99_service_latency", "mean_tpot", *(f"p{q}_tpot" for q in GAP_PERCENTILES),
    "mean_token_itl", *(f"p{q}_token_itl" for q in GAP_PERCENTILES),
    "ttft_attainment", "e2e_attainment", "token_itl_attainment", "tpot_attainment",
    "slot_utilization",
    "mean_running", "peak_running", "padding_slot_steps", "peak_kv_tokens",
    "peak_kv_used_tokens", "mean_kv_tokens", "kv_waste_fraction", "peak_kv_occupancy",
    "mean_kv_occupancy", "n_completed", "n_rejected", "n_preempted", "n_preemptions", "goodput",
    "slo_attainment", "prefix_hit_rate", "prefill_tokens_saved", "mean_cached_prefix_blocks",
    "prefix_evictions", "draft_tokens", "accepted_tokens", "acceptance_rate",
    "tier_mean_latency", "tier_mean_ttft", "tier_mean_itl",
)
#: Percentiles of latency and TTFT in the summaries [%], and of the inter-token gaps.
_PERCENTILES = GAP_PERCENTILES


def _safe_div(num, den):
    num = np.asarray(num, dtype=float)
    den = np.broadcast_to(np.asarray(den, dtype=float), num.shape)
    return np.divide(num, den, out=np.full(num.shape, np.nan), where=den > 0)


def _masked_mean(x, valid):
    return _safe_div(np.where(valid, x, 0.0).sum(axis=-1), valid.sum(axis=-1))


def _masked_quantile(x, valid, q):
    """Row-wise ``numpy.quantile(x[valid], q)`` ("linear" method); NaN for rows with none valid."""
    filled = np.sort(np.where(valid, x, np.inf), axis=-1)
    k = valid.sum(axis=-1)
    filled = np.where(np.arange(x.shape[-1]) < k[..., None], filled, 0.0)
    h = np.maximum(k - 1, 0) * q
    lo = np.floor(h).astype(np.int64)
    hi = np.minimum(lo + 1, np.maximum(k - 1, 0))
    if x.shape[-1] == 0:
        return np.full(k.shape, np.nan)
    a = np.take_along_axis(filled, lo[..., None], axis=-1)[..., 0]
    b = np.take_along_axis(filled, hi[..., None], axis=-1)[..., 0]
    return np.where(k > 0, a + (b - a) * (h - lo), np.nan)


def _per_request(arrival, prompt, output, out, frontend_latency=0.0):
    """Derived per-request times: 2-D (replicate, request) arrays; ``frontend_latency``
    (:attr:`rooflinekit.Engine.frontend_latency`) delays what the client sees, ``ttft`` and
    ``latency``, not the engine's own times.
    """
    admit, first, finish, _, status = out[:5]
    completed = status == COMPLETED
    multi = output > 1
    itl = np.divide(finish - first, output - 1.0, out=np.full(finish.shape, np.nan),
                    where=completed & multi)
    return {
        "latency": finish - arrival + frontend_latency,
        "service_latency": finish - admit,
        "queue_delay": admit - arrival,
        "ttft": first - arrival + frontend_latency,
        "itl": itl,
        "completed": completed,
    }


def _summaries(arrival, prompt, output, priority, out, slots, budget, targets, wanted=None,
               frontend_latency=0.0):
    """Summary metrics per replicate: name -> (array over replicates, units kind, long name);
    ``wanted``: only these names (default all of :data:`SUMMARY_NAMES`).
    """
    def want(name):
        return wanted is None or name in wanted

    _, _, finish, preempt, status, stats = out[:6]
    d = _per_request(arrival, prompt, output, out, frontend_latency)
    shares, n_good = _attainments(d, output, status, stats, targets)
    if wanted is not None and set(wanted) <= set(ATTAINMENT_NAMES):
        return {name: shares[name] for name in wanted}        # what a rate search reads
    done = d["completed"]
    n = arrival.shape[-1]
    first_arrival = arrival.min(axis=-1) if n else np.zeros(arrival.shape[0])
    last_finish = np.where(done, finish, -np.inf).max(axis=-1) if n else np.zeros(arrival.shape[0])
    makespan = np.where(done.any(axis=-1), last_finish - first_arrival, 0.0)
    tokens_done = np.where(done, output, 0).sum(axis=-1).astype(float)
    s = lambda name: stats[:, STAT[name]]  # noqa: E731
    res = {
        "makespan": (makespan, "time", "time from first arrival to last completion"),
        "throughput": (_zero_div(tokens_done, makespan), "tokens/time",
                       "output tokens completed per unit time"),
        "request_throughput": (_zero_div(done.sum(axis=-1), makespan), "1/time",
                               "requests completed per unit time"),
        "mean_latency": (_masked_mean(d["latency"], done), "time",
                         "mean latency from arrival to finish (completed requests)"),
        "mean_service_latency": (_masked_mean(d["service_latency"], done), "time",
                                 "mean latency from admission to finish (completed requests)"),
        "mean_queue_delay": (_masked_mean(d["queue_delay"], done), "time",
                             "mean wait from arrival to first admission"),
        "mean_ttft": (_masked_mean(d["ttft"], done), "time", "mean time to first token"),
        "mean_itl": (_masked_mean(d["itl"], done & (output > 1)), "time",
                     "mean inter-token latency (requests with >= 2 output tokens)"),
    }
    for q in _PERCENTILES:
        if want(f"p{q}_latency"):
            res[f"p{q}_latency"] = (_masked_quantile(d["latency"], done, q / 100), "time",
                                    f"{q}th percentile latency from arrival")
        if want(f"p{q}_ttft"):
            res[f"p{q}_ttft"] = (_masked_quantile(d["ttft"], done, q / 100), "time",
                                 f"{q}th percentile time to first token")
    if want("p99_itl"):
        res["p99_itl"] = (_masked_quantile(d["itl"], done & (output > 1), 0.99), "time",
                          "99th percentile inter-token latency")
    if want("p99_service_latency"):
        res["p99_service_latency"] = (_masked_quantile(d["service_latency"], done, 0.99), "time",
                                      "99th percentile latency from admission")
    # TPOT is the per-request mean gap ``itl``, over the requests with >= 2 output tokens (as
    # vllm bench serve; module docstring): mean_tpot is mean_itl, p99_tpot p99_itl
    timed = done & (output > 1)
    res["mean_tpot"] = (_masked_mean(d["itl"], timed), "time",
                        "mean time per output token, first token excluded: per request "
                        "(finish - first token) / (output tokens - 1) (>= 2 output tokens)")
    for q in _PERCENTILES:
        if want(f"p{q}_tpot"):
            res[f"p{q}_tpot"] = (_masked_quantile(d["itl"], timed, q / 100), "time",
                                 f"{q}th percentile over requests of the time per output token "
                                 f"(>= 2 output tokens)")
    n_gaps = s("token_gaps")
    res["mean_token_itl"] = (_safe_div(s("token_gap_time"), n_gaps), "time",
                             ("mean gap between consecutive output tokens (every gap of every "
                              "completed request)"))
    for q in _PERCENTILES:
        res[f"p{q}_token_itl"] = (s(f"token_itl_p{q}"), "time",
                                  (f"{q}th percentile gap between consecutive output tokens "
                                   f"(nearest rank, within 0.2% above)"))
    res.update({k: shares[k] for k in ("ttft_attainment", "e2e_attainment",
                                       "token_itl_attainment", "tpot_attainment")})
    slot_den = np.nan if slots is None else float(slots)
    res.update({
        "slot_utilization": (_safe_div(s("active_time"), slot_den * makespan)
                             if slots is not None else np.full(makespan.shape, np.nan), "1",
                             "share of slot-time producing tokens (NaN with unlimited slots)"),
        "mean_running": (_safe_div(s("running_time"), makespan), "1",
                         "time-averaged sequences in the batch"),
        "peak_running": (s("peak_running"), "1", "most sequences in one step"),
        "padding_slot_steps": (s("running_time") - s("active_time"), "slot*time",
                               "slot-time of batch members that have finished (static padding) "
                               "or are waiting for a prefill slice"),
        "peak_kv_tokens": (s("peak_kv_reserved"), "tokens",
                           "peak KV reserved (reserve), allocated (paged) or padded (static)"),
        "peak_kv_used_tokens": (s("peak_kv_used"), "tokens",
                                "peak KV tokens holding context or recurrent state"),
        "mean_kv_tokens": (_safe_div(s("kv_reserved_time"), makespan), "tokens",
                           "time-averaged KV reserved or allocated"),
        "kv_waste_fraction": (1.0 - _safe_div(s("kv_used_time"), s("kv_reserved_time")), "1",
                              "share of reserved/allocated KV not holding context "
                              "(fragmentation)"),
        "peak_kv_occupancy": (_safe_div(s("peak_kv_reserved"), np.nan if not budget else budget),
                              "1", "peak KV reserved or allocated / KV budget"),
        "mean_kv_occupancy": (_safe_div(_safe_div(s("kv_reserved_time"), makespan),
                                        np.nan if not budget else budget),
                              "1", "time-averaged KV reserved or allocated / KV budget"),
        "n_completed": (done.sum(axis=-1), "1", "requests completed"),
        "n_rejected": shares["n_rejected"],
        "n_preempted": ((preempt > 0).sum(axis=-1), "1", "requests preempted at least once"),
        "n_preemptions": (preempt.sum(axis=-1), "1", "preemptions in the run"),
        "goodput": (_zero_div(n_good, makespan), "1/time",
                    "requests completed within the TTFT/ITL targets per unit time"),
        "slo_attainment": shares["slo_attainment"],
        "prefix_hit_rate": (_safe_div(s("prefix_hits"), s("prefix_requests")), "1",
                            "share of prefixed requests first admitted with their prefix "
                            "cached (NaN without prefixed requests)"),
        "prefill_tokens_saved": (s("prefill_tokens_saved"), "tokens",
                                 "prompt tokens not prefilled because their prefix was cached"),
        "mean_cached_prefix_blocks": (_safe_div(s("cached_prefix_block_time"), makespan), "1",
                                      "time-averaged KV blocks of resident shared prefixes"),
        "prefix_evictions": (s("prefix_evictions"), "1", "cached prefixes evicted for memory"),
        "draft_tokens": (s("draft_tokens"), "tokens",
                         "speculative decoding: tokens drafted (k per decoding sequence-step)"),
        "accepted_tokens": (s("accepted_tokens"), "tokens",
                            "speculative decoding: drafted tokens the target accepted"),
        "acceptance_rate": (_safe_div(s("accepted_tokens"), s("draft_tokens")), "1",
                            "share of drafted tokens accepted (NaN without speculation)"),
    })
    tier_lat = np.stack([_masked_mean(d["latency"], done & (priority == k))
                         for k in (INTERACTIVE, BATCH)], -1)
    tier_ttft = np.stack([_masked_mean(d["ttft"], done & (priority == k))
                          for k in (INTERACTIVE, BATCH)], -1)
    tier_itl = np.stack([_masked_mean(d["itl"], done & (priority == k) & (output > 1))
                         for k in (INTERACTIVE, BATCH)], -1)
    res["tier_mean_latency"] = (tier_lat, "time", "mean latency from arrival, per tier")
    res["tier_mean_ttft"] = (tier_ttft, "time", "mean time to first token, per tier")
    res["tier_mean_itl"] = (tier_itl, "time", "mean inter-token latency, per tier")
    return res if wanted is None else {name: res[name] for name in wanted}


#: The summaries :func:`_attainments` gives: the SLO's shares and the refusals.
ATTAINMENT_NAMES = ("ttft_attainment", "e2e_attainment", "token_itl_attainment",
                    "tpot_attainment", "slo_attainment", "n_rejected")


def _attainments(d, output, status, stats, targets):
    """The SLO's shares per replicate (of all requests, a rejected one missing; TPOT's of those
    with two or more output tokens), and the requests within the TTFT, ITL and TPOT targets as a
    count (``goodput``'s numerator; a one-token request meets both per-token targets, as vllm
    bench serve's goodput counts its TPOT as 0); ``d`` is :func:`_per_request`'s.
    """
    done = d["completed"]
    n = output.shape[-1]
    ttft_target, itl_target, e2e_target = targets[:3]
    tpot_target = targets[3] if len(targets) > 3 else None
    ttft_met = done if ttft_target is None else done & (d["ttft"] <= ttft_target)
    e2e_met = done if e2e_target is None else done & (d["latency"] <= e2e_target)
    good = ttft_met if itl_target is None else ttft_met & ~(d["itl"] > itl_target)
    if tpot_target is not None:
        good = good & ~(d["itl"] > tpot_target)
    timed = output > 1                      # the requests that have a TPOT when completed
    tpot_met = done & timed if tpot_target is None else done & (d["itl"] <= tpot_target)
    n_timed = timed.sum(axis=-1)
    n_gaps = stats[:, STAT["token_gaps"]]
    n_good = good.sum(axis=-1).astype(float)
    return {
        "ttft_attainment": (_safe_div(ttft_met.sum(axis=-1), float(n)), "1",
                            "share of all requests completed with TTFT within ttft_target"),
        "e2e_attainment": (_safe_div(e2e_met.sum(axis=-1), float(n)), "1",
                           "share of all requests completed with latency within e2e_target"),
        "token_itl_attainment": (
            np.divide(stats[:, STAT["token_gaps_met"]], n_gaps, out=np.ones(n_gaps.shape),
                      where=n_gaps > 0),
            "1", "share of inter-token gaps within itl_target (1 without gaps)"),
        "tpot_attainment": (
            np.divide(tpot_met.sum(axis=-1), n_timed, out=np.ones(n_timed.shape),
                      where=n_timed > 0),
            "1", "share of requests with >= 2 output tokens completed with TPOT within "
                 "tpot_target (1 without such requests)"),
        # one-token requests have no ITL: they pass
        "slo_attainment": (_safe_div(n_good, float(n)) if n else
                           np.full(output.shape[0], np.nan), "1",
                           "share of all requests completed within the TTFT/ITL targets"),
        "n_rejected": ((status == REJECTED).sum(axis=-1), "1", "requests rejected on arrival"),
    }, n_good


def _zero_div(num, den):
    """``num / den``, 0 where ``den`` is 0 (nothing completed: zero throughput, not NaN)."""
    num = np.asarray(num, dtype=float)
    return np.divide(num, den, out=np.zeros(num.shape), where=np.asarray(den) > 0)


def _units(kind, time_units):
    return kind.replace("time", time_units) if kind != "1" else "1"


def _variable(dims, values, attrs=None) -> xr.Variable:
    """``xr.Variable(dims, values, attrs)``, skipping xarray's duck-array checks (which import
    dask) for numbers, booleans and strings (``docs/simulator-cache.md``, "What it costs").
    """
    data = np.asarray(values)
    return xr.Variable(dims, data, attrs=attrs, fastpath=data.dtype.kind in "biufcUS")


def _coordinates(**labels) -> xr.Coordinates:
    """Dimension coordinates from numpy labels (their dtype kept), indexed by a ready
    ``pandas.Index``, which skips xarray's duck-array checks.
    """
    indexes = {dim: PandasIndex(pd.Index(values), dim, coord_dtype=values.dtype)
               for dim, values in ((d, np.asarray(v)) for d, v in labels.items())}
    variables = {}
    for index in indexes.values():
        variables.update(index.create_variables())
    return xr.Coordinates(variables, indexes=indexes)


def _single_dataset(wl: Workload, out, batcher, timing, targets) -> xr.Dataset:
    n = wl.n_requests
    arrival, prompt, output, priority = (wl.arrival[None], wl.prompt_tokens[None],
                                         wl.output_tokens[None], wl.priority[None])
    admit, first, finish, preempt, status = (a[0] for a in out[:5])
    per = _per_request(arrival, prompt, output, out, timing.frontend_latency)
    tu = timing.units
    req = dims.REQUEST
    status_str = np.where(status == COMPLETED, STATUS_COMPLETED, STATUS_REJECTED)
    reason = np.where(status == COMPLETED, "", REASON_KV_BUDGET)
    data = {
        "arrival": (wl.arrival, tu, "arrival time"),
        "prompt_tokens": (wl.prompt_tokens, "tokens", "prompt length"),
        "output_tokens": (wl.output_tokens, "tokens", "output length"),
        "priority": (wl.priority, "1", "tier: 0 interactive, 1 batch"),
        "status": (status_str, "", "completed or rejected"),
        "reason": (reason, "", "rejection reason code ('' when completed)"),
        "admit": (admit, tu, "time of first admission into the batch"),
        "first_token": (first, tu, "time the first output token is produced"),
        "finish": (finish, tu, "time the request completes (retired)"),
        "latency": (per["latency"][0], tu, "latency from arrival to finish"),
        "service_latency": (per["service_latency"][0], tu,
                            "latency from first admission to finish (service time)"),
        "queue_delay": (per["queue_delay"][0], tu, "wait from arrival to first admission"),
        "ttft": (per["ttft"][0], tu, "time to first token, from arrival"),
        "itl": (per["itl"][0], tu, "mean inter-token latency"),
        "preemptions": (preempt, "1", "times the request was preempted"),
    }
    variables = {name: _variable((req,), values, {"units": units, "long_name": long_name})
                 for name, (values, units, long_name) in data.items()}
    budget = batcher._kv_budget()
    summaries = _summaries(arrival, prompt, output, priority, out, batcher._slots(), budget,
                           targets, frontend_latency=timing.frontend_latency)
    for name, (values, kind, long_name) in summaries.items():
        variables[name] = _variable((_TIER,) if name.startswith("tier_") else (), values[0],
                                    {"units": _units(kind, tu), "long_name": long_name})
    ds = xr.Dataset(variables, coords=_coordinates(**{req: np.arange(n), _TIER: list(TIERS)}))
    _stamp(ds, batcher, timing, budget, targets)
    return ds


def _model_quality(batcher, clock) -> str:
    """What the clock's step times are: the label of the engine that timed them (a
    calibration's label, :data:`IDEAL`'s, or the fields an ``Engine`` changes)."""
    if clock != "roofline":
        return "tick clock (the guide's lab): no hardware model"
    engine = resolve_engine(batcher.engine, batcher.gpu, warn=False)
    return roofline.engine_for(engine, "step", model=batcher.model, gpu=batcher.gpu).label


def _stamp(ds, batcher, timing, budget, targets):
    ds.attrs.update({
        "policy": batcher.policy,
        "clock": timing.clock,
        "model_quality": _model_quality(batcher, timing.clock),
        "time_units": timing.units,
        "kv_budget_tokens": "unlimited" if budget is None else budget,
        **_target_attrs(targets),
        "latency_definitions": "latency = finish - arrival + frontend_latency; ttft = "
                               "first_token - arrival + frontend_latency; service_latency = "
                               "finish - admit",
        "frontend_latency": timing.frontend_latency,
        **({"state_tokens_per_sequence": batcher._state_tokens()}
           if hasattr(batcher, "_state_tokens") else {}),
        # the continuous batcher's scheduling (1: prefill beside the decodes), an int for netCDF
        **({"mixed_prefill": int(batcher.mixed_prefill),
            "recv_interval": int(batcher.recv_interval),
            "stream_interval": int(batcher.stream_interval),
            "num_scheduler_steps": int(batcher.num_scheduler_steps)}
           if hasattr(batcher, "mixed_prefill") else {}),
    })



def _summary_grid(results, policies, sweep, r0, r1, time_units) -> xr.Dataset:
    """Monte Carlo summaries (``(values, units kind, long name)``, values shaped (policy, *sweep,
    replicate[, tier])) as a Dataset over ``policy``, the sweep names and ``replicate``.
    """
    names = list(sweep)
    lead = (_POLICY,) + tuple(names) + (dims.REPLICATE,)
    data_vars = {
        key: _variable(lead + ((_TIER,) if key.startswith("tier_") else ()), values,
                       {"units": _units(kind, time_units), "long_name": long_name})
        for key, (values, kind, long_name) in results.items()}
    coords = {_POLICY: list(policies), **{k: sweep[k] for k in names},
              dims.REPLICATE: np.arange(r0, r1), _TIER: list(TIERS)}
    return xr.Dataset(data_vars, coords=coords)


def _target_attrs(targets) -> dict:
    """The latency targets as Dataset attributes (``"none"`` where unset)."""
    return {f"{name}_target": "none" if value is None else value
            for name, value in zip(("ttft", "itl", "e2e", "tpot"), targets)}


def _replicate_dataset(results, time_units) -> xr.Dataset:
    """Summaries over ``replicate`` (and ``tier``), from :func:`_summaries` of 2-D workloads."""
    data_vars = {
        key: _variable((dims.REPLICATE,) + ((_TIER,) if key.startswith("tier_") else ()),
                       values, {"units": _units(kind, time_units), "long_name": long_name})
        for key, (values, kind, long_name) in results.items()}
    replicates = next(iter(results.values()))[0].shape[0]
    return xr.Dataset(data_vars, coords=_coordinates(**{dims.REPLICATE: np.arange(replicates),
                                                        _TIER: np.array(TIERS)}))
