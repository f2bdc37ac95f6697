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
from rooflinekit.units import HOURS_PER_MONTH, PER_MILLION, SECONDS_PER_HOUR

__all__ = ["cheapest_plan", "decision_table", "SELF_HOSTED", "PAY_AS_YOU_GO", "PROVISIONED",
           "PROVISIONED_SPILLOVER", "SELF_HOSTED_AUTOSCALED"]

SELF_HOSTED = "self-hosted"
SELF_HOSTED_AUTOSCALED = "self-hosted, autoscaled"
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
        Over ``by``: every variable of ``plan`` at the chosen configuration (with
        ``replicate_max_rate``), the other axes' chosen labels as variables, and ``feasible``
        (else the configuration with the highest max rate is shown).

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


def decision_table(cheapest: xr.Dataset, traffic: Traffic, *, payg: PayAsYouGo | None = None,
                   provisioned: Provisioned | None = None, compliance: Compliance | None = None,
                   region: str | None = None, unit_increment=1, autoscale: bool = False,
                   min_replicas=1) -> xr.Dataset:
    """Self-host the planned fleet, pay per token, or buy capacity: cost, gates, the choice.

    Parameters
    ----------
    cheapest : xarray.Dataset
        From :func:`cheapest_plan` (any ``by``).
    traffic : Traffic
        The traffic planned for: monthly volume (its profile, else the peak all month) and mix.
    payg : PayAsYouGo, optional
        Price per token of the hosted alternative. There is no default price: without one the
        table has no pay-as-you-go row (a frontier API's list price set against an open model's
        fleet would decide nothing).
    provisioned : Provisioned, optional
        A provisioned commitment of ``units`` units (its minimum purchase; 1 unit when ``units``
        is unset): sized up in whole units of ``unit_increment`` to carry the peak rate, and,
        with a profile and ``payg``, as a floor with pay-as-you-go spillover.
    compliance : Compliance, optional
        The workload's classification and allowed regions (§7); default: no gate.
    region : str, optional
        Where the self-hosted GPUs run (for the residency gate).
    unit_increment : int
        Units the commitment grows by [1], >= 1.
    autoscale : bool
        Also price the fleet scaled period by period with the traffic's profile (rented GPUs
        billed by the hour): the option ``"self-hosted, autoscaled"``. Needs a profile.
    min_replicas : int
        Fewest replicas the autoscaled fleet keeps running [1], >= 1 (default 1).

    Returns
    -------
    xarray.Dataset
        Over the ``by`` dimensions of ``cheapest`` and ``option``: ``monthly_cost`` [USD/month]
        with ``monthly_cost_low``/``_high`` (the fixed and the autoscaled fleet at the 90th and
        10th percentile of the max rate; the option's own cost on the other rows);
        ``cost_per_million_tokens`` [USD/1M tokens]; ``units`` (provisioned units bought, 0
        otherwise); ``admissible`` and ``reason`` (the excluding gate, "" if none);
        ``break_even_tokens`` (volume above which the self-hosted fleet is cheaper than the
        option [tokens/month]; NaN on the self-hosted rows) with ``_low``/``_high`` (the fleets
        at the ends of the rate's band); ``capacity_tokens`` (what the option serves in the
        month at the mix [tokens/month]; inf for pay-as-you-go); the tie points, each holding
        the other inputs fixed (NaN on the self-hosted rows): ``tie_gpu_hourly`` [USD/h] and
        ``tie_engineering_monthly`` [USD/month], below which self-hosting is cheaper than the
        option (negative: never), and ``tie_payg_blended`` [USD/1M tokens], on the
        pay-as-you-go row the blended price below which pay-as-you-go is cheaper (NaN
        elsewhere); ``choice_share`` (share of the plan's replicates in which the option is the
        cheapest admissible one [1]); ``choice`` ("none admissible" if none); and over the
        ``by`` dimensions alone ``gpu_hourly`` [USD/h] and ``flip_against``, the option whose
        ``break_even_tokens`` and ``tie_*`` are where the choice flips (the chosen one, or the
        cheapest admissible other option when a self-hosted fleet is chosen; "" when none).
        Its ``attrs`` add ``monthly_tokens``, ``monthly_requests``, ``output_fraction``,
        ``peak_monthly_tokens``, ``month_priced_as`` (in words) and ``payg_cached_fraction``.

    Notes
    -----
    Volume V = monthly requests × (mean prompt + mean output tokens) of the plan's draws, at
    output fraction f = mean output / (mean prompt + mean output). With a cached-input price
    and the traffic's shared prefixes (``Traffic(prefix=SharedPrefix(tokens, groups, share))``),
    pay-as-you-go bills ``h = min(1, share × tokens / mean prompt)`` of the input tokens at the
    cached-input price (every prefixed request a hit of the provider's prompt cache: its first
    request of a group and cache expiry are not counted, so the bill is a lower bound);
    ``c_b = (c_in (1 − h) + c_cached h)(1 − f) + c_out f``. Provisioned for the peak:
    units carrying ``rate × tokens per request × seconds per month`` at the mix
    (:meth:`~rooflinekit.pricing.Provisioned.capacity`). With a profile of n periods, the
    floor of k units serves ``min(d_t, k·K(f)/n)`` of each period's demand d_t and the rest is
    billed at the pay-as-you-go blended price; k runs over every whole size up to the peak's
    and the cheapest is kept (only with ``payg``, which prices the spill). Break-even volumes:
    :func:`rooflinekit.pricing.crossover_volume` (whole units against provisioned capacity); a
    break-even above the fleet's ``capacity_tokens`` is never reached by this fleet.

    Autoscaled: period t of a profile of n periods (each ``730 h / n``) carries
    ``r_t = requests_t / (730 × 3600 / n)`` requests/s and runs the plan's rule at that rate,
    ``max(min_replicas, ⌈r_t (1 + headroom) / max_rate⌉)`` replicas plus its spares; the month
    costs their GPU-hours plus the plan's engineering and electricity lines, at the median
    ``max_rate`` (its 90th and 10th percentiles for ``_low``/``_high``, each replicate's for
    ``choice_share``).

    Tie points, against an option of monthly cost C_o, for a fleet of n GPUs at hourly price h
    and H hours, engineering line E and other fixed costs R (``C_sh = n h H + E + R``):

    .. math:: h^* = \\frac{C_o - E - R}{n H}, \\qquad E^* = E + C_o - C_{sh}, \\qquad
              c_b^* = \\frac{C_{sh}}{V} \\times 10^6.

    The GPU price and the engineering line move only the fleet's cost, so the tie against
    ``flip_against`` is where the choice flips; ``c_b*`` over the current blended price is the
    factor on both pay-as-you-go list prices at the tie.

    References
    ----------
    .. [1] Serving-capacity guide §6.2–6.5 (break-even, spillover, self-hosting), §7 (gates).

    See Also
    --------
    rooflinekit.planning.month_profile : a month of traffic for ``Traffic(profile=...)``.
    rooflinekit.pricing.SelfHosted.from_plan : the chosen fleet as a pricing option.
    rooflinekit.pricing.crossover_volume : the break-even volumes.
    """
    check_type("cheapest", cheapest, xr.Dataset)
    if "feasible" not in cheapest:
        raise TypeError("cheapest must be the Dataset rooflinekit.cheapest_plan returns")
    check_type("traffic", traffic, Traffic)
    check_type("payg", payg, PayAsYouGo, allow_none=True)
    check_type("provisioned", provisioned, Provisioned, allow_none=True)
    check_type("compliance", compliance, Compliance, allow_none=True)
    unit_increment = whole_number("unit_increment", unit_increment, lo=1)
    min_replicas = whole_number("min_replicas", min_replicas, lo=1)
    if not isinstance(autoscale, (bool, np.bool_)):
        raise TypeError(f"autoscale must be True or False; got {describe(autoscale)}")
    if autoscale and traffic.profile is None:
        raise ValueError("autoscale=True scales the fleet with the traffic's profile: give "
                         "Traffic(profile=...)")
    if region is not None and not isinstance(region, str):
        raise TypeError(f"region must be a string or None; got {describe(region)}")
    prompt = real_number("mean_prompt_tokens", cheapest.attrs["mean_prompt_tokens"], lo=0)
    output = real_number("mean_output_tokens", cheapest.attrs["mean_output_tokens"], lo=0)
    per_request = prompt + output
    f = output / per_request
    volume = traffic.monthly_requests * per_request
    peak_volume = float(traffic.rate) * SECONDS_PER_MONTH * per_request

    options = [SELF_HOSTED] + ([SELF_HOSTED_AUTOSCALED] if autoscale else []) + \
        ([PAY_AS_YOU_GO] if payg is not None else [])
    if provisioned is not None:
        options.append(PROVISIONED)
        if traffic.profile is not None and payg is not None:
            options.append(PROVISIONED_SPILLOVER)
    keep = [d for d in cheapest.dims if d != dims.REPLICATE]
    shape = tuple(cheapest.sizes[d] for d in keep)
    table = {name: np.zeros(shape + (len(options),)) for name in
             ("monthly_cost", "units", "break_even_tokens", "break_even_tokens_low",
              "break_even_tokens_high", "choice_share", "capacity_tokens", "tie_gpu_hourly",
              "tie_engineering_monthly", "tie_payg_blended", "monthly_cost_low",
              "monthly_cost_high")}
    admissible = np.ones(shape + (len(options),), dtype=bool)
    reason = np.full(shape + (len(options),), "", dtype=object)
    choice = np.full(shape, "", dtype=object)
    against = np.full(shape, "", dtype=object)
    cached = _cached_fraction(payg, traffic, prompt)
    payg_blended = math.nan if payg is None else \
        float(np.asarray(blended_price(payg, f, cached_fraction=cached, prompt_tokens=prompt)))
    for index in np.ndindex(shape):
        at = cheapest.isel(dict(zip(keep, index)))
        hosted = _fleet(at, region)
        rows = {SELF_HOSTED: (float(at["monthly_cost"]), 0.0, hosted)}
        if autoscale:
            rows[SELF_HOSTED_AUTOSCALED] = (
                float(_autoscaled_costs(at, traffic, min_replicas, float(at["max_rate"]))[0]),
                0.0, hosted)
        if payg is not None:
            rows[PAY_AS_YOU_GO] = (volume * payg_blended / PER_MILLION, 0.0, payg)
        if provisioned is not None:
            base = 1.0 if provisioned.units is None else float(provisioned.units)
            unit_cost = float(np.asarray(provisioned.monthly_cost)) / base
            unit_capacity = float(np.asarray(provisioned.capacity(f))) / base
            n = _units_for(peak_volume, unit_capacity, base, unit_increment)
            rows[PROVISIONED] = (n * unit_cost, float(n), _resized(provisioned, n, base))
            if PROVISIONED_SPILLOVER in options:
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
            if name == SELF_HOSTED_AUTOSCALED:
                why = reason[index + (options.index(SELF_HOSTED),)] or None
                admissible[index + (j,)] = why is None
                reason[index + (j,)] = why or ""
            for end in ("low", "high"):
                table[f"break_even_tokens_{end}"][index + (j,)] = _break_even(
                    _fleet(at, region, end), option, f, at)
                table[f"monthly_cost_{end}"][index + (j,)] = _cost_at_end(
                    name, at, end, cost, traffic, min_replicas)
            table["capacity_tokens"][index + (j,)] = _capacity_of(hosted, option, f)
            ties = _ties(at, cost, volume) if option is not hosted else (math.nan,) * 3
            table["tie_gpu_hourly"][index + (j,)] = ties[0]
            table["tie_engineering_monthly"][index + (j,)] = ties[1]
            table["tie_payg_blended"][index + (j,)] = ties[2] if name == PAY_AS_YOU_GO \
                else math.nan
        costs = np.where(admissible[index], table["monthly_cost"][index], np.inf)
        choice[index] = options[int(np.argmin(costs))] if np.isfinite(costs).any() else \
            "none admissible"
        # the same choice in every replicate, its self-hosted fleet sized by its own rate
        each = np.repeat(costs[None, :], _replicates(at), axis=0)
        each[:, options.index(SELF_HOSTED)] = np.where(
            admissible[index + (options.index(SELF_HOSTED),)], _replicate_costs(at), np.inf)
        if autoscale:       # and its autoscaled fleet too, each replicate at its own rate
            k = options.index(SELF_HOSTED_AUTOSCALED)
            each[:, k] = np.where(admissible[index + (k,)], _autoscaled_costs(
                at, traffic, min_replicas, _replicate_rates(at)), np.inf)
        wins = np.where(np.isfinite(each).any(axis=1), np.argmin(each, axis=1), -1)
        table["choice_share"][index] = [float(np.mean(wins == j)) for j in range(len(options))]
        against[index] = _flip_against(options, choice[index], costs,
                                       table["tie_gpu_hourly"][index])
    coords = {d: cheapest[d].values for d in keep if d in cheapest.coords}
    coords[dims.OPTION] = options
    full = keep + [dims.OPTION]
    values = {**table, "cost_per_million_tokens": table["monthly_cost"] / volume * PER_MILLION,
              "admissible": admissible, "reason": reason.astype(str),
              "choice": choice.astype(str), "flip_against": against.astype(str),
              "gpu_hourly": np.asarray(xr.broadcast(cheapest["gpu_hourly"],
                                                    cheapest["monthly_cost"])[0]
                                       .transpose(*keep).values, dtype=float)}
    out = xr.Dataset({name: (keep if name in _BY_ONLY else full, values[name],
                             {"units": units, "long_name": long_name})
                      for name, units, long_name in _DECISION_VARIABLES}, coords=coords)
    out.attrs = {**cheapest.attrs, "monthly_tokens": volume, "output_fraction": f,
                 "peak_monthly_tokens": peak_volume,
                 "monthly_requests": traffic.monthly_requests,
                 "month_priced_as": _month_basis(traffic), "payg_cached_fraction": cached}
    return out


#: The decision table's variables in order: name, units, long name.
_DECISION_VARIABLES = (
    ("monthly_cost", "USD/month", "monthly cost of the option"),
    ("cost_per_million_tokens", "USD/1M tokens", "monthly cost per million tokens served"),
    ("units", "1", "provisioned units bought (0: none)"),
    ("admissible", "1", "passes the sovereignty gates"),
    ("reason", "", "why the option is excluded"),
    ("break_even_tokens", "tokens/month", "volume above which the self-hosted fleet is cheaper "
                                          "than the option (NaN: the fleet itself)"),
    ("capacity_tokens", "tokens/month",
     "tokens the option serves in the month at the mix (inf: no limit)"),
    ("tie_gpu_hourly", "USD/h", "GPU-hour price below which the self-hosted fleet is cheaper "
                                "than the option (negative: never; NaN: the fleet itself)"),
    ("tie_engineering_monthly", "USD/month", "engineering line below which the self-hosted fleet "
     "is cheaper than the option (negative: never; NaN: the fleet itself)"),
    ("tie_payg_blended", "USD/1M tokens", "blended pay-as-you-go price below which "
     "pay-as-you-go is cheaper than the self-hosted fleet (NaN: other options)"),
    ("break_even_tokens_low", "tokens/month",
     "break-even volume with the fleet at the 90th-percentile max rate"),
    ("break_even_tokens_high", "tokens/month",
     "break-even volume with the fleet at the 10th-percentile max rate"),
    ("monthly_cost_low", "USD/month", "monthly cost with the fleet at the 90th-percentile max "
     "rate (the fixed and the autoscaled fleet; the option's own cost otherwise)"),
    ("monthly_cost_high", "USD/month", "monthly cost with the fleet at the 10th-percentile max "
     "rate (the fixed and the autoscaled fleet; the option's own cost otherwise)"),
    ("choice_share", "1", "share of the replicates in which the option is the cheapest "
                          "admissible one"),
    ("choice", "", "cheapest admissible option"),
    ("flip_against", "", "the option the choice between it and the self-hosted fleet turns on, "
                         "whose tie_* are the flip points (\"\": none)"),
    ("gpu_hourly", "USD/h", "price per GPU-hour of the self-hosted fleet"),
)
#: Its variables over the ``by`` dimensions alone (the others also over ``option``).
_BY_ONLY = ("choice", "flip_against", "gpu_hourly")


def _flip_against(options, choice, costs, ties) -> str:
    """The option whose ties with the fleet are where the choice flips ("" when none)."""
    hosted = (SELF_HOSTED, SELF_HOSTED_AUTOSCALED)
    others = [k for k, o in enumerate(options) if o not in hosted and np.isfinite(costs[k])]
    if not others or choice not in options:
        return ""
    k = min(others, key=lambda k: costs[k]) if choice in hosted else options.index(choice)
    return options[k] if math.isfinite(ties[k]) else ""


def _cached_fraction(payg, traffic: Traffic, prompt: float) -> float:
    """Share of input tokens billed at the cached-input price [1] (:func:`decision_table` Notes)."""
    if payg is None or payg.cached_input_per_mtok is None or traffic.prefix is None or \
            not prompt > 0:
        return 0.0
    return min(1.0, float(traffic.prefix.share) * float(traffic.prefix.tokens) / prompt)


def _replicates(at) -> int:
    return int(at["replicate_max_rate"].size) if "replicate_max_rate" in at else 1


def _replicate_costs(at) -> np.ndarray:
    """The chosen configuration's monthly cost, its fleet sized by each replicate's rate."""
    if "replicate_max_rate" not in at:
        return np.array([float(at["monthly_cost"])])
    rates = np.asarray(at["replicate_max_rate"].values, dtype=float)
    need = float(at.attrs["rate"]) * (1.0 + float(at.attrs["headroom"]))
    replicas = _with_spares(at, replicas_for_rate(need, rates))
    per_replica = int(at["gpus"]) / max(int(at["replicas"]), 1)
    fixed = float(at["monthly_cost"]) - float(at["gpu_monthly_cost"]) if \
        np.isfinite(float(at["monthly_cost"])) else 0.0
    gpu_cost = replicas * per_replica * float(at["gpu_hourly"]) * HOURS_PER_MONTH
    return np.where(rates > 0, gpu_cost + fixed, np.inf)


def _with_spares(at, replicas) -> np.ndarray:
    """Replicas by the plan's rule: at least ``min_replicas``, plus the spares; 0 stays 0."""
    floor = int(at.attrs.get("min_replicas", 1))
    spare = int(at.attrs.get("spare_replicas", 0))
    replicas = np.asarray(replicas)
    return np.where(replicas > 0, np.maximum(replicas, floor) + spare, 0)


def _fleet(at, region, end: str | None = None) -> SelfHosted | None:
    """The chosen configuration as a SelfHosted deployment, at ``end`` of the rate's band."""
    suffix = "" if end is None else f"_{end}"
    gpus = int(at[f"gpus{suffix}"]) if f"gpus{suffix}" in at else int(at["gpus"])
    if gpus <= 0:
        return None
    return SelfHosted.from_plan(at, end=end, name=SELF_HOSTED, region=region)


def _resized(provisioned, n, base) -> Provisioned:
    """``provisioned`` scaled from ``base`` to ``n`` units."""
    scale = n / base
    return dataclasses.replace(
        provisioned, monthly_cost=float(np.asarray(provisioned.monthly_cost)) * scale,
        monthly_capacity_tokens=float(np.asarray(provisioned.monthly_capacity_tokens)) * scale,
        units=float(n))


def _break_even(hosted, option, f, at) -> float:
    """Self-hosting's crossover volume against ``option`` [tokens/month]; NaN against itself."""
    if isinstance(option, SelfHosted):
        return math.nan
    if hosted is None:
        return np.inf
    return float(np.asarray(crossover_volume(hosted, option, f)))


def _capacity_of(hosted, option, f) -> float:
    """What ``option`` serves in the month at output fraction ``f`` [tokens/month]."""
    if isinstance(option, SelfHosted) or option is None:
        return 0.0 if hosted is None else float(np.asarray(hosted.capacity_tokens))
    return float(np.asarray(option.capacity(f)))


def _replicate_rates(at) -> np.ndarray:
    """Each replicate's max rate of the chosen configuration [requests/s] (else its median)."""
    if "replicate_max_rate" not in at:
        return np.array([float(at["max_rate"])])
    return np.asarray(at["replicate_max_rate"].values, dtype=float).ravel()


def _autoscaled_costs(at, traffic: Traffic, min_replicas: int, rates) -> np.ndarray:
    """The autoscaled fleet's monthly cost at each max rate of ``rates`` [USD/month]."""
    rates = np.atleast_1d(np.asarray(rates, dtype=float))
    gpus, replicas = int(at["gpus"]), int(at["replicas"])
    if gpus <= 0 or replicas <= 0:
        return np.full(rates.shape, math.inf)
    periods = traffic.profile.size
    hours = HOURS_PER_MONTH / periods
    need = traffic.profile / (hours * SECONDS_PER_HOUR) * (1.0 + float(at.attrs["headroom"]))
    # periods × rates: the plan's rule in each period, at each rate
    running = np.maximum(replicas_for_rate(need[:, None], rates[None, :]), min_replicas) + \
        int(at.attrs.get("spare_replicas", 0))
    gpu_hours = running.sum(axis=0) * (gpus / replicas) * hours
    fixed = float(at["monthly_cost"]) - float(at["gpu_monthly_cost"])
    return np.where(rates > 0, gpu_hours * float(at["gpu_hourly"]) + fixed, math.inf)


def _cost_at_end(name, at, end, cost, traffic, min_replicas) -> float:
    """The option's monthly cost with the fleet at ``end`` of the rate's band [USD/month]."""
    if name == SELF_HOSTED:
        key = f"monthly_cost_{end}"
        return float(at[key]) if key in at else cost
    if name == SELF_HOSTED_AUTOSCALED:
        key = "max_rate_high" if end == "low" else "max_rate_low"
        rate = float(at[key]) if key in at else float(at["max_rate"])
        return float(_autoscaled_costs(at, traffic, min_replicas, rate)[0])
    return cost


def _ties(at, option_cost: float, volume: float) -> tuple[float, float, float]:
    """GPU-hour price, engineering line and blended price at which the fleet ties (see Notes)."""
    fleet = float(at["monthly_cost"])
    gpus = int(at["gpus"])
    if gpus <= 0 or not (math.isfinite(fleet) and math.isfinite(option_cost)):
        return math.nan, math.nan, math.nan
    gpu_cost = float(at["gpu_monthly_cost"])
    rest = fleet - gpu_cost
    engineering = float(at.attrs.get("engineering_monthly", 0.0))
    hourly = (option_cost - rest) / (gpus * HOURS_PER_MONTH)
    return hourly, engineering + option_cost - fleet, fleet / volume * PER_MILLION


def _month_basis(traffic: Traffic) -> str:
    """How the month's volume was counted, in words."""
    if traffic.profile is not None:
        return (f"a profile of {traffic.profile.size} periods, {traffic.monthly_requests:,.0f} "
                f"requests (peak {float(traffic.rate):g} requests/s)")
    return (f"the peak {float(traffic.rate):g} requests/s all month ({HOURS_PER_MONTH:g} h, "
            f"{traffic.monthly_requests:,.0f} requests)")
