"""The decision: the cheapest fleet of a plan, beside paying per token or buying capacity.

:func:`cheapest_plan` picks the configuration of a plan that serves the traffic for the least per
month; :func:`decision_table` sets it beside pay-as-you-go, provisioned capacity and (with a
profile) a provisioned floor with spillover, applies the §7 gates before cost, names the cheapest
admissible option and gives each break-even volume.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import xarray as xr

from rooflinekit import dims
from rooflinekit._validation import check_type, describe, real_number, whole_number
from rooflinekit.planning.fleet import replicas_for_rate
from rooflinekit.planning.traffic import SECONDS_PER_MONTH, Traffic
from rooflinekit.pricing import (Compliance, PayAsYouGo, Provisioned, SelfHosted, admissibility,
                                 blended_price, crossover_volume)
from rooflinekit.units import HOURS_PER_MONTH, PER_MILLION

__all__ = ["cheapest_plan", "decision_table", "SELF_HOSTED", "PAY_AS_YOU_GO", "PROVISIONED",
           "PROVISIONED_SPILLOVER"]

SELF_HOSTED = "self-hosted"
PAY_AS_YOU_GO = "pay-as-you-go"
PROVISIONED = "provisioned"
PROVISIONED_SPILLOVER = "provisioned + spillover"

#: Configuration axes a plan may have, in the order they are reported.
_AXES = (dims.MODEL, dims.GPU, dims.TP, dims.MAX_NUM_SEQS, dims.MAX_NUM_BATCHED_TOKENS,
         dims.PP, dims.EP)


def _plan_axes(plan) -> list[str]:
    if not isinstance(plan, xr.Dataset) or "monthly_cost" not in plan:
        raise TypeError(f"plan must be the Dataset rooflinekit.plan returns; got {describe(plan)}")
    return [d for d in _AXES if d in plan.dims]


def cheapest_plan(plan: xr.Dataset, by="model") -> xr.Dataset:
    """The configuration of ``plan`` that serves the traffic for the least, per ``by``.

    Parameters
    ----------
    plan : xarray.Dataset
        From :func:`rooflinekit.planning.plan`.
    by : str, list of str or None
        Configuration dimensions to keep (one answer per label); ``None`` for one answer
        overall. Default ``"model"``.

    Returns
    -------
    xarray.Dataset
        Over ``by``: every variable of ``plan`` at the chosen configuration (of the
        ``replicate`` ones, ``replicate_max_rate``), the chosen labels of the other axes as
        variables of the same names, and
        ``feasible`` (some configuration serves the traffic). Where none does, the configuration
        with the highest max rate is shown, with ``feasible`` false.

    Notes
    -----
    Cheapest means least ``monthly_cost``; ties go to fewer GPUs, then the higher max rate.
    """
    axes = _plan_axes(plan)
    keep = [] if by is None else [by] if isinstance(by, str) else list(by)
    for name in keep:
        if name not in axes:
            raise ValueError(f"by must name dimensions of the plan ({', '.join(axes)}); "
                             f"got {name!r}")
    others = [d for d in axes if d not in keep]
    flat = plan.drop_dims(dims.REPLICATE, errors="ignore")
    flat = flat.transpose(*keep, *others, ...)
    cost = flat["monthly_cost"].values.reshape(
        [flat.sizes[d] for d in keep] + [-1])
    gpus = flat["gpus"].values.reshape(cost.shape)
    rate = flat["max_rate"].values.reshape(cost.shape)
    choice = np.empty(cost.shape[:-1], dtype=np.int64)
    feasible = np.isfinite(cost).any(axis=-1)
    for index in np.ndindex(choice.shape):
        c, g, r = cost[index], gpus[index], rate[index]
        if np.isfinite(c).any():
            choice[index] = np.lexsort((-r, g, c))[0]
        else:
            choice[index] = int(np.argmax(r))
    labels = np.unravel_index(choice, [flat.sizes[d] for d in others])
    picks = {d: xr.DataArray(labels[k], dims=keep) for k, d in enumerate(others)}
    out = flat.isel(picks)
    if "replicate_max_rate" in plan:
        # each replicate's rate at the choice: the decision's spread over the draws
        out["replicate_max_rate"] = plan["replicate_max_rate"].transpose(
            *keep, *others, dims.REPLICATE).isel(picks)
    for d in others:
        out = out.reset_coords(d) if d in out.coords else out
        out[d].attrs.update({"long_name": f"{d} of the cheapest configuration"})
    out["feasible"] = xr.DataArray(feasible, dims=keep).assign_attrs(
        units="1", long_name="some configuration serves the traffic")
    out.attrs = dict(plan.attrs)
    return out


def _units_for(tokens, unit_capacity, min_units, increment):
    """Whole units, from ``min_units`` up in steps of ``increment``, that carry ``tokens``."""
    need = max(tokens / unit_capacity, float(min_units))
    steps = math.ceil(round((need - min_units) / increment, 9))
    return min_units + max(steps, 0) * increment


def decision_table(cheapest: xr.Dataset, traffic: Traffic, *, payg: PayAsYouGo,
                   provisioned: Provisioned | None = None, compliance: Compliance | None = None,
                   region: str | None = None, unit_increment=1) -> xr.Dataset:
    """Self-host the planned fleet, pay per token, or buy capacity: cost, gates, the choice.

    Parameters
    ----------
    cheapest : xarray.Dataset
        From :func:`cheapest_plan` (any ``by``).
    traffic : Traffic
        The traffic planned for: monthly volume (its profile, else the peak all month) and mix.
    payg : PayAsYouGo
        Price per token of the hosted alternative.
    provisioned : Provisioned, optional
        A provisioned commitment of ``units`` units (its minimum purchase; 1 unit when ``units``
        is unset): sized up in whole units of ``unit_increment`` to carry the peak rate, and,
        with a profile, as a floor with pay-as-you-go spillover.
    compliance : Compliance, optional
        The workload's classification and allowed regions (§7); default: no gate.
    region : str, optional
        Where the self-hosted GPUs run (for the residency gate).
    unit_increment : int
        Units the commitment grows by [1], >= 1.

    Returns
    -------
    xarray.Dataset
        Over the ``by`` dimensions of ``cheapest`` and ``option``: ``monthly_cost`` [USD/month],
        ``cost_per_million_tokens`` [USD/1M tokens], ``units`` (provisioned units bought, 0
        otherwise), ``admissible`` and ``reason`` (the gate that excludes it, "" if none),
        ``break_even_tokens`` (monthly volume above which the self-hosted fleet is cheaper than
        the option [tokens/month]; for the fleet itself, its capacity) with
        ``break_even_tokens_low``/``_high`` (the fleets at the ends of the rate's band);
        ``choice_share`` (the share of the plan's replicates, each with its own traffic and
        engine draw, in which the option is the cheapest admissible one [1]); and ``choice``,
        the cheapest admissible option ("none admissible" if none).

    Notes
    -----
    Volume V = monthly requests × (mean prompt + mean output tokens) of the plan's draws, at
    output fraction f = mean output / (mean prompt + mean output). Provisioned for the peak:
    units carrying ``rate × tokens per request × seconds per month`` at the mix
    (:meth:`~rooflinekit.pricing.Provisioned.capacity`). With a profile of n periods, the
    floor of k units serves ``min(d_t, k·K(f)/n)`` of each period's demand d_t and the rest is
    billed at the pay-as-you-go blended price; k runs over every whole size up to the peak's
    and the cheapest is kept. Break-even volumes: :func:`rooflinekit.pricing.crossover_volume`
    (whole units against provisioned capacity).

    References
    ----------
    .. [1] Serving-capacity guide §6.2–6.5 (break-even, spillover, self-hosting), §7 (gates).
    """
    check_type("cheapest", cheapest, xr.Dataset)
    if "feasible" not in cheapest:
        raise TypeError("cheapest must be the Dataset rooflinekit.cheapest_plan returns")
    check_type("traffic", traffic, Traffic)
    check_type("payg", payg, PayAsYouGo)
    check_type("provisioned", provisioned, Provisioned, allow_none=True)
    check_type("compliance", compliance, Compliance, allow_none=True)
    unit_increment = whole_number("unit_increment", unit_increment, lo=1)
    if region is not None and not isinstance(region, str):
        raise TypeError(f"region must be a string or None; got {describe(region)}")
    prompt = real_number("mean_prompt_tokens", cheapest.attrs["mean_prompt_tokens"], lo=0)
    output = real_number("mean_output_tokens", cheapest.attrs["mean_output_tokens"], lo=0)
    per_request = prompt + output
    f = output / per_request
    volume = traffic.monthly_requests * per_request
    peak_volume = float(traffic.rate) * SECONDS_PER_MONTH * per_request

    options = [SELF_HOSTED, PAY_AS_YOU_GO]
    if provisioned is not None:
        options.append(PROVISIONED)
        if traffic.profile is not None:
            options.append(PROVISIONED_SPILLOVER)
    keep = [d for d in cheapest.dims if d != dims.REPLICATE]
    shape = tuple(cheapest.sizes[d] for d in keep)
    table = {name: np.zeros(shape + (len(options),)) for name in
             ("monthly_cost", "units", "break_even_tokens", "break_even_tokens_low",
              "break_even_tokens_high", "choice_share")}
    admissible = np.ones(shape + (len(options),), dtype=bool)
    reason = np.full(shape + (len(options),), "", dtype=object)
    choice = np.full(shape, "", dtype=object)
    payg_blended = float(np.asarray(blended_price(payg, f, prompt_tokens=prompt)))
    for index in np.ndindex(shape):
        at = cheapest.isel(dict(zip(keep, index)))
        hosted = _fleet(at, region)
        rows = {SELF_HOSTED: (float(at["monthly_cost"]), 0.0, hosted)}
        rows[PAY_AS_YOU_GO] = (volume * payg_blended / PER_MILLION, 0.0, payg)
        if provisioned is not None:
            base = 1.0 if provisioned.units is None else float(provisioned.units)
            unit_cost = float(np.asarray(provisioned.monthly_cost)) / base
            unit_capacity = float(np.asarray(provisioned.capacity(f))) / base
            n = _units_for(peak_volume, unit_capacity, base, unit_increment)
            rows[PROVISIONED] = (n * unit_cost, float(n), _resized(provisioned, n, base))
            if traffic.profile is not None:
                demand = traffic.profile * per_request
                per_period = unit_capacity / demand.size
                best = None
                for k in np.arange(base, n + unit_increment, unit_increment):
                    spill = np.maximum(demand - k * per_period, 0.0).sum()
                    total = k * unit_cost + spill * payg_blended / PER_MILLION
                    if best is None or total < best[0]:
                        best = (total, float(k))
                rows[PROVISIONED_SPILLOVER] = (best[0], best[1],
                                               _resized(provisioned, best[1], base))
        for j, name in enumerate(options):
            cost, units, option = rows[name]
            table["monthly_cost"][index + (j,)] = cost
            table["units"][index + (j,)] = units
            why = None if compliance is None or option is None else \
                admissibility(option, compliance)
            if name == SELF_HOSTED and not bool(at["feasible"]):
                why = "no configuration of the plan serves the traffic within the SLO"
            admissible[index + (j,)] = why is None
            reason[index + (j,)] = why or ""
            table["break_even_tokens"][index + (j,)] = _break_even(hosted, option, f, at)
            for end in ("low", "high"):
                table[f"break_even_tokens_{end}"][index + (j,)] = _break_even(
                    _fleet(at, region, end), option, f, at)
        costs = np.where(admissible[index], table["monthly_cost"][index], np.inf)
        choice[index] = options[int(np.argmin(costs))] if np.isfinite(costs).any() else \
            "none admissible"
        # the same choice in every replicate, its self-hosted fleet sized by its own rate
        each = np.repeat(costs[None, :], _replicates(at), axis=0)
        each[:, options.index(SELF_HOSTED)] = np.where(
            admissible[index + (options.index(SELF_HOSTED),)], _replicate_costs(at), np.inf)
        wins = np.where(np.isfinite(each).any(axis=1), np.argmin(each, axis=1), -1)
        table["choice_share"][index] = [float(np.mean(wins == j)) for j in range(len(options))]
    coords = {d: cheapest[d].values for d in keep if d in cheapest.coords}
    coords[dims.OPTION] = options
    full = keep + [dims.OPTION]
    out = xr.Dataset({
        "monthly_cost": (full, table["monthly_cost"], {"units": "USD/month",
                                                       "long_name": "monthly cost of the option"}),
        "cost_per_million_tokens": (full, table["monthly_cost"] / volume * PER_MILLION,
                                    {"units": "USD/1M tokens",
                                     "long_name": "monthly cost per million tokens served"}),
        "units": (full, table["units"], {"units": "1",
                                         "long_name": "provisioned units bought (0: none)"}),
        "admissible": (full, admissible, {"units": "1",
                                          "long_name": "passes the sovereignty gates"}),
        "reason": (full, reason.astype(str), {"units": "",
                                              "long_name": "why the option is excluded"}),
        "break_even_tokens": (full, table["break_even_tokens"],
                              {"units": "tokens/month",
                               "long_name": "volume above which the self-hosted fleet is "
                                            "cheaper (for the fleet: its capacity)"}),
        "break_even_tokens_low": (full, table["break_even_tokens_low"], {
            "units": "tokens/month",
            "long_name": "break-even volume with the fleet at the 90th-percentile max rate"}),
        "break_even_tokens_high": (full, table["break_even_tokens_high"], {
            "units": "tokens/month",
            "long_name": "break-even volume with the fleet at the 10th-percentile max rate"}),
        "choice_share": (full, table["choice_share"], {
            "units": "1", "long_name": "share of the replicates in which the option is the "
                                       "cheapest admissible one"}),
        "choice": (keep, choice.astype(str), {"units": "",
                                              "long_name": "cheapest admissible option"}),
    }, coords=coords)
    out.attrs = {**cheapest.attrs, "monthly_tokens": volume, "output_fraction": f,
                 "peak_monthly_tokens": peak_volume}
    return out


def _replicates(at) -> int:
    return int(at["replicate_max_rate"].size) if "replicate_max_rate" in at else 1


def _replicate_costs(at) -> np.ndarray:
    """The chosen configuration's monthly cost with its fleet sized by each replicate's rate
    (the plan's own rule: ⌈peak × (1 + headroom) / rate⌉ replicas); its median cost where the
    plan kept no replicates."""
    if "replicate_max_rate" not in at:
        return np.array([float(at["monthly_cost"])])
    rates = np.asarray(at["replicate_max_rate"].values, dtype=float)
    need = float(at.attrs["rate"]) * (1.0 + float(at.attrs["headroom"]))
    replicas = replicas_for_rate(need, rates)
    per_replica = int(at["gpus"]) / max(int(at["replicas"]), 1)
    fixed = float(at["monthly_cost"]) - float(at["gpu_monthly_cost"]) if \
        np.isfinite(float(at["monthly_cost"])) else 0.0
    gpu_cost = replicas * per_replica * float(at["gpu_hourly"]) * HOURS_PER_MONTH
    return np.where(rates > 0, gpu_cost + fixed, np.inf)


def _fleet(at, region, end: str | None = None) -> SelfHosted | None:
    """The chosen configuration as a :class:`~rooflinekit.pricing.SelfHosted` deployment; with
    ``end`` ("low", "high"), its fleet at that end of the rate's band."""
    suffix = "" if end is None else f"_{end}"
    gpus = int(at[f"gpus{suffix}"]) if f"gpus{suffix}" in at else int(at["gpus"])
    if gpus <= 0:
        return None
    replicas = int(at[f"replicas{suffix}"]) if f"replicas{suffix}" in at else int(at["replicas"])
    rate = {"": "max_rate", "_low": "max_rate_high", "_high": "max_rate_low"}[suffix]
    capacity = float(at[rate]) * replicas * SECONDS_PER_MONTH * (
        at.attrs["mean_prompt_tokens"] + at.attrs["mean_output_tokens"])
    return SelfHosted(n_gpus=gpus, gpu_hourly=float(at["gpu_hourly"]),
                      engineering_monthly=float(at.attrs.get("engineering_monthly", 0.0)),
                      capacity_tokens=capacity, name=SELF_HOSTED, region=region)


def _resized(provisioned, n, base) -> Provisioned:
    """``provisioned`` scaled from ``base`` to ``n`` units."""
    scale = n / base
    return dataclasses.replace(
        provisioned, monthly_cost=float(np.asarray(provisioned.monthly_cost)) * scale,
        monthly_capacity_tokens=float(np.asarray(provisioned.monthly_capacity_tokens)) * scale,
        units=float(n))


def _break_even(hosted, option, f, at) -> float:
    """Self-hosting's crossover volume against ``option`` [tokens/month]."""
    if hosted is None:
        return np.inf
    if isinstance(option, SelfHosted):
        return float(np.asarray(hosted.capacity_tokens))
    return float(np.asarray(crossover_volume(hosted, option, f)))
