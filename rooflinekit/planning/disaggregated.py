"""The best prefill/decode split (xPyD) for a traffic, against aggregated replicas.

A unit is ``x`` prefill and ``y`` decode replicas of one configuration, the KV sent between them
(:class:`rooflinekit.batching.DisaggregatedBatcher`), on ``(x + y) × tp`` GPUs. Each split's max
rate is searched on the same draws as the aggregated replica's; a fleet is whole units.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from rooflinekit import catalog, dims
from rooflinekit._validation import check_type, describe, real_number, show, whole_number
from rooflinekit.batching import MAX_RECV_INTERVAL, DisaggregatedBatcher
from rooflinekit.hardware import GPU
from rooflinekit.models import ModelShape
from rooflinekit.planning.capacity import draw_requests, max_rate, rate_variables
from rooflinekit.planning.fleet import (
    PLAN_WORK_LIMIT,
    _names,
    _quality,
    _replica,
    _window_attrs,
    check_fleet_counts,
    check_plan_size,
    one_scheduler,
)
from rooflinekit.planning.traffic import SLO, Traffic
from rooflinekit.profiles import (memory_engine, memory_outside_kv, memory_rule, resolve_engine,
                                  scheduler_admission)

__all__ = ["AGGREGATED", "MAX_SPLITS", "SPLIT", "plan_disaggregated"]

#: Label of the aggregated replica on the ``split`` dimension.
AGGREGATED = "aggregated"
#: Name of the dimension of the splits compared.
SPLIT = "split"


#: Most splits one call compares (a gpu_budget of 2 × 45 GPUs at tp = 1 gives 990).
MAX_SPLITS = 1000


def _splits(gpu_budget, splits, tp):
    """The ``(x, y)`` splits to compare: those given, or every one within ``gpu_budget``."""
    if (gpu_budget is None) == (splits is None):
        raise ValueError("give gpu_budget (GPUs of one unit at most) or splits (a list of "
                         "(prefill_replicas, decode_replicas)), not both or neither")
    if splits is None:
        budget = whole_number("gpu_budget", gpu_budget, lo=2 * tp)
        units = budget // tp
        if units * (units - 1) // 2 > MAX_SPLITS:
            raise ValueError(f"gpu_budget={budget} at tp={tp} makes {units * (units - 1) // 2:,} "
                             f"splits, above {MAX_SPLITS:,}; give a smaller gpu_budget or the "
                             f"splits to compare (splits=)")
        return [(x, y) for x in range(1, units) for y in range(1, units - x + 1)]
    if not isinstance(splits, (list, tuple)) or not splits:
        raise TypeError(f"splits must be a non-empty list of (prefill_replicas, "
                        f"decode_replicas); got {describe(splits)}")
    out = []
    for split in splits:
        if not isinstance(split, (list, tuple)) or len(split) != 2:
            raise TypeError(f"each of splits must be a pair (prefill_replicas, "
                            f"decode_replicas); got {describe(split)}")
        out.append((whole_number("prefill_replicas", split[0], lo=1),
                    whole_number("decode_replicas", split[1], lo=1)))
    if len(set(out)) != len(out):
        raise ValueError(f"splits must not repeat a pair; got {show(splits)}")
    return out


def plan_disaggregated(traffic: Traffic, slo: SLO, *, model, gpu, tp=1, ep=1, gpu_budget=None,
                       splits=None, max_num_seqs="auto", max_num_batched_tokens="auto",
                       admission="auto", block_size=16, gpu_memory_utilization=None,
                       link_bandwidth=None, link_latency=0.0, headroom=0.2, replicates=10,
                       seed=0, requests=1000, rtol=0.02, engine=None,
                       work_limit=PLAN_WORK_LIMIT, recv_interval=1) -> xr.Dataset:
    """Max rate within the SLO of each xPyD split and of the aggregated replica, and their fleets.

    Parameters
    ----------
    traffic : Traffic
        Peak rate, request lengths, arrivals (the fleet serves ``traffic.rate``).
    slo : SLO
        Targets at a quantile: TTFT is the prefill pool's, the gaps and end-to-end latency the
        decode pool's, the hand-off from first to second token counted as a gap.
    model, gpu : spec or catalogue name
        One configuration, the same for both pools.
    tp : int
        Tensor-parallel degree of every replica [1].
    ep : int
        Expert-parallel degree of every replica [1], >= 1: a MoE model's routed experts spread
        whole over ``ep`` of its ``tp`` GPUs, with the all-to-all and the wait for the busiest
        group (:class:`~rooflinekit.batching.ContinuousBatcher`'s ``ep``). Default 1. A
        degree that does not divide the experts or ``tp`` is every unit's ``invalid_layout``.
    gpu_budget : int, optional
        Compare every split ``x, y >= 1`` with ``(x + y) × tp <= gpu_budget`` [GPUs].
    splits : list of (int, int), optional
        Or these ``(prefill_replicas, decode_replicas)`` splits. Give one of the two.
    max_num_seqs, max_num_batched_tokens, admission, block_size, gpu_memory_utilization
        One replica's scheduler and KV cache (every pool's alike), as for
        :func:`rooflinekit.planning.load_curve`.
    link_bandwidth : float, optional
        Bandwidth a prompt's KV crosses between the pools [bytes/s], >= 1; default ``tp ×
        gpu.network_bandwidth`` (each GPU of the group sends its shard over its own NIC).
    link_latency : float
        Fixed time of each transfer [s], >= 0.
    headroom : float
        Spare capacity [1], >= 0: units = ceil(rate · (1 + headroom) / max_rate).
    replicates, seed, requests, rtol, engine
        As for :func:`rooflinekit.plan`; every split runs on the same draws, both pools and
        the aggregated replica timed by the same engine.
    work_limit : float
        Most simulated token-steps, as for :func:`rooflinekit.plan`; at most
        :data:`MAX_SPLITS` splits.
    recv_interval : int
        SGLang's ``--scheduler-recv-interval`` [steps] of every replica of both pools, in [1,
        :data:`~rooflinekit.batching.MAX_RECV_INTERVAL`]: each takes in new requests (a
        prefill replica its prompts, a decode replica its hand-offs) only once that many
        decode steps (or one prefill step) have passed, as for :func:`rooflinekit.plan`.
        Default 1: every step, every engine's default.

    Returns
    -------
    xarray.Dataset
        Over ``split`` (``"aggregated"``, then ``"xPyD"`` labels): ``prefill_replicas``,
        ``decode_replicas`` (0 for the aggregated replica), ``gpus_per_unit``; ``max_rate``,
        ``max_rate_low``, ``max_rate_high`` (median, 10th and 90th percentile over replicates),
        ``saturation_rate`` [requests/s per unit]; ``rate_per_gpu`` [requests/s]; ``binding``;
        ``units`` and ``gpus`` of the fleet for the traffic's rate (0 where a unit cannot
        serve); per replicate ``replicate_max_rate``. ``attrs["best_split"]``: the split whose
        fleet has the fewest GPUs (ties: the higher rate per GPU), ``"none"`` if none serves.

    Raises
    ------
    ValueError, TypeError
        Naming the argument, before any simulation.

    Notes
    -----
    The unit's search is :func:`~rooflinekit.planning.capacity.max_rate`'s; the pools form a
    tandem queue without backpressure, so a unit's rate is capped by the slower pool. Both
    pools use one GPU type and one TP (heterogeneous pools are not searched here).

    References
    ----------
    .. [1] Zhong et al., "DistServe: Disaggregating Prefill and Decoding for Goodput-optimized
       Large Language Model Serving", OSDI 2024 (placement searched per goodput per GPU).

    See Also
    --------
    rooflinekit.plan : aggregated replicas over a grid of configurations.
    rooflinekit.batching.DisaggregatedBatcher : the unit simulated.
    """
    check_type("traffic", traffic, Traffic)
    check_type("slo", slo, SLO)
    (model,) = _names("model", model, ModelShape, catalog.resolve_model)
    (gpu,) = _names("gpu", gpu, GPU, catalog.gpu)
    tp = whole_number("tp", tp, lo=1)
    ep = whole_number("ep", ep, lo=1)
    recv_interval = whole_number("recv_interval", recv_interval, lo=1, hi=MAX_RECV_INTERVAL)
    admission = scheduler_admission(admission, engine, gpu)
    pairs = _splits(gpu_budget, splits, tp)
    if link_bandwidth is None:
        if gpu.network_bandwidth is None:
            raise ValueError(f"gpu {gpu.name!r} has no network_bandwidth in the catalogue; pass "
                             f"link_bandwidth [bytes/s]")
        link_bandwidth = tp * gpu.network_bandwidth
    link_bandwidth = real_number("link_bandwidth", link_bandwidth, lo=1,
                                 allow_inf=True)
    link_latency = real_number("link_latency", link_latency, lo=0)
    headroom = real_number("headroom", headroom, lo=0)
    replicates = whole_number("replicates", replicates, lo=1)
    requests = whole_number("requests", requests, lo=10)
    rtol = real_number("rtol", rtol, lo=0, hi=0.5, lo_open=True)
    max_num_seqs, max_num_batched_tokens = one_scheduler(engine, gpu, max_num_seqs,
                                                         max_num_batched_tokens)
    held_by = memory_engine(engine)
    engine = resolve_engine(engine, gpu)
    label = _quality(engine, model=model, gpu=gpu)
    share, held = memory_rule(held_by, model, gpu, tp, max_num_seqs=max_num_seqs,
                              max_num_batched_tokens=max_num_batched_tokens,
                              gpu_memory_utilization=gpu_memory_utilization)
    batcher, budget, problem = _replica(
        model, gpu, tp, max_num_seqs, max_num_batched_tokens, admission,
        whole_number("block_size", block_size, lo=1), share, engine, ep=ep, held=held,
        held_by=held_by, recv_interval=recv_interval)
    work_limit = real_number("work_limit", work_limit, lo=0, lo_open=True, allow_inf=True)
    # each unit's search simulates every request in both pools: about one plan's work
    check_plan_size(traffic, len(pairs) + 1, replicates=replicates, requests=requests,
                    work_limit=work_limit)
    draws = draw_requests(traffic, replicates, requests, whole_number("seed", seed, lo=0))

    units = [(0, 0)] + pairs
    per = np.zeros((len(units), replicates))
    saturation = np.zeros(len(units))
    binding = np.full(len(units), problem or "", dtype=object)
    runs = 0
    for k, (x, y) in enumerate(units):
        if problem:
            continue
        unit = batcher if k == 0 else DisaggregatedBatcher(
            batcher, batcher, x, y, link_bandwidth=link_bandwidth, link_latency=link_latency)
        found = max_rate(unit, slo, draws, rtol=rtol)
        per[k], runs = found["max_rate"], runs + found["runs"]
        saturation[k] = float(np.median(found["saturation_rate"]))
        values, counts = np.unique(np.asarray(found["binding"], dtype=str), return_counts=True)
        binding[k] = values[np.argmax(counts)]                # what binds in most replicates
    return _assemble(units, per, saturation, binding, tp, traffic, headroom, {
        "model": model.name, "gpu": gpu.name, "tp": tp, "ep": ep, "model_quality": label,
        "max_num_seqs": max_num_seqs, "max_num_batched_tokens": int(max_num_batched_tokens or 0),
        "admission": admission, "recv_interval": recv_interval,
        "kv_budget_tokens": int(budget), "link_bandwidth": link_bandwidth,
        "link_latency": link_latency, "headroom": headroom, "rate": float(traffic.rate),
        "quantile": float(slo.quantile), **{f"{k}_target": v for k, v in slo.targets.items()},
        "replicates": replicates, "requests": requests, "rtol": rtol, "simulations": runs,
        "memory_outside_kv": memory_outside_kv(held_by, [model]),
        **_window_attrs([model], admission, held_by, block_size)})


def _assemble(units, per, saturation, binding, tp, traffic, headroom, attrs) -> xr.Dataset:
    """The splits' rates as a Dataset over ``split``, with the fleets they imply."""
    labels = [AGGREGATED if x == 0 else f"{x}P{y}D" for x, y in units]
    gpus_per_unit = np.array([tp if x == 0 else (x + y) * tp for x, y in units])
    q = np.quantile(per, [0.5, 0.1, 0.9], axis=-1)
    serves = q[0] > 0
    need = float(traffic.rate) * (1.0 + headroom)
    check_fleet_counts(traffic.rate, need, q[0], gpus_per_unit)
    n_units = np.where(serves, np.ceil(need / np.where(serves, q[0], 1.0)), 0).astype(np.int64)
    gpus = n_units * gpus_per_unit

    def var(data, units_, long_name, extra=()):
        return xr.Variable((SPLIT, *extra), data, {"units": units_, "long_name": long_name})

    ds = xr.Dataset({
        "prefill_replicas": var(np.array([x for x, _ in units]), "1",
                                "prefill replicas of a unit (0: aggregated)"),
        "decode_replicas": var(np.array([y for _, y in units]), "1",
                               "decode replicas of a unit (0: aggregated)"),
        "gpus_per_unit": var(gpus_per_unit, "1", "GPUs of one unit"),
        **rate_variables(var, per, saturation, "unit"),
        "rate_per_gpu": var(q[0] / gpus_per_unit, "requests/s", "max rate per GPU"),
        "binding": var(binding.astype(str), "", "what caps the rate"),
        "units": var(n_units, "1", "units for the peak rate with headroom (0: cannot serve)"),
        "gpus": var(gpus, "1", "GPUs of the fleet (0: cannot serve)"),
        "replicate_max_rate": var(per, "requests/s", "max rate per unit, each replicate",
                                  (dims.REPLICATE,)),
    }, coords={SPLIT: labels, dims.REPLICATE: np.arange(per.shape[1])})
    if serves.any():
        # fewest GPUs, then the most rate per GPU
        order = sorted(np.flatnonzero(serves), key=lambda k: (gpus[k], -q[0][k] / gpus_per_unit[k]))
        attrs["best_split"] = labels[order[0]]
    else:
        attrs["best_split"] = "none"
    ds.attrs.update(description="aggregated replicas against disaggregated prefill/decode "
                                "units (xPyD) under the same traffic and SLO", **attrs)
    return ds
