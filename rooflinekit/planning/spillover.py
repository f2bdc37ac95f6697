"""Capacity plans: a dedicated floor plus pay-as-you-go spillover; self-hosting volumes (§6.4–6.5).

Size a dedicated floor to a quantile of demand and spill the rest to pay-as-you-go (§6.4):
nothing is ever dropped, every token is served by the floor or by pay-as-you-go. Results are
Datasets whose variables carry ``units`` and ``long_name``; the guide's worked figures are in
:mod:`rooflinekit.guide`.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from rooflinekit import dims
from rooflinekit._validation import (
    as_numeric,
    check_fraction,
    check_integer,
    check_positive,
    check_range,
    check_string,
    check_type,
    describe,
    show,
)
from rooflinekit.pricing import (
    PayAsYouGo,
    Provisioned,
    SelfHosted,
    blended_price,
    capacity_price,
    crossover_volume,
)
from rooflinekit.units import HOURS_PER_MONTH, PER_MILLION

__all__ = [
    "TIME", "bursty_demand", "plan_with_spillover", "optimal_floor", "compare_floor_sizing",
    "self_hosting_comparison",
]

#: Default name of the period dimension of a demand profile (one entry per hour or day).
TIME = "time"

_TOKENS = "tokens"
_USD = "USD"


# -- demand ---------------------------------------------------------------------------------------
def bursty_demand(n_periods=int(HOURS_PER_MONTH), *, mean_tokens=5.5e6, diurnal_amplitude=0.5,
                  periods_per_day=24, noise_sigma=0.25, burst_probability=0.02,
                  burst_length=3, burst_multiplier=4.0, seed):
    """A seeded synthetic demand profile: a daily cycle, noise and occasional bursts.

    Parameters
    ----------
    n_periods : int
        Periods in the profile [1]; default 730 (the hours of a billing month).
    mean_tokens : float
        Mean demand per period before bursts [tokens/period], > 0. The default, 5.5M tokens an
        hour, is about 4B tokens a month, the guide's provisioned capacity (§6.3).
    diurnal_amplitude : float
        Relative amplitude of the daily sine cycle [1], in [0, 1).
    periods_per_day : int
        Periods in a day [1]: 24 for hourly, 1 for daily (no cycle within a period).
    noise_sigma : float
        Standard deviation of the log-normal noise [1], >= 0 (mean-one multiplicative noise).
    burst_probability : float
        Probability that a burst starts in a period [1], in [0, 1].
    burst_length : int
        Periods a burst lasts [1], >= 1.
    burst_multiplier : float
        Demand multiplier during a burst [1], >= 1.
    seed : int
        Seed of the ``numpy.random.Generator``; required, so profiles are reproducible.

    Returns
    -------
    xarray.DataArray
        Demand per period [tokens] along :data:`TIME` (coordinate: period index).
    """
    check_integer("n_periods", n_periods, lo=1)
    check_positive("mean_tokens", mean_tokens)
    check_range("diurnal_amplitude", diurnal_amplitude, lo=0, hi=1, hi_open=True)
    check_integer("periods_per_day", periods_per_day, lo=1)
    check_range("noise_sigma", noise_sigma, lo=0, hi=5)
    check_fraction("burst_probability", burst_probability)
    check_integer("burst_length", burst_length, lo=1)
    check_range("burst_multiplier", burst_multiplier, lo=1)
    check_integer("seed", seed, lo=0)
    rng = np.random.default_rng(int(seed))
    t = np.arange(int(n_periods))
    cycle = 1.0 + diurnal_amplitude * np.sin(2 * np.pi * t / periods_per_day)
    noise = rng.lognormal(-0.5 * noise_sigma**2, noise_sigma, size=t.size)
    starts = rng.random(t.size) < burst_probability
    # A burst started in period s covers s .. s + burst_length - 1.
    covered = np.convolve(starts.astype(float), np.ones(int(burst_length)))[: t.size] > 0
    demand = mean_tokens * cycle * noise * np.where(covered, burst_multiplier, 1.0)
    return xr.DataArray(demand, dims=(TIME,), coords={TIME: t}, name="demand",
                        attrs={"units": _TOKENS, "long_name": "demand per period"})


def _demand(demand, time_dim, n_periods, seed) -> xr.DataArray:
    """Demand as a DataArray with ``time_dim``, sampled when given as a distribution."""
    check_string("time_dim", time_dim)
    if hasattr(demand, "rvs") and not isinstance(demand, (np.ndarray, xr.DataArray)):
        if seed is None:
            raise ValueError("seed is required to sample demand from a distribution")
        check_integer("n_periods", n_periods, lo=1)
        check_integer("seed", seed, lo=0)
        draws = np.asarray(demand.rvs(size=int(n_periods),
                                      random_state=np.random.default_rng(int(seed))), dtype=float)
        values = xr.DataArray(draws, dims=(time_dim,), coords={time_dim: np.arange(draws.size)})
    elif isinstance(demand, xr.DataArray):
        if time_dim not in demand.dims:
            raise ValueError(f"demand has no dimension {time_dim!r} (dims {demand.dims}); pass "
                             f"time_dim")
        values = demand
    elif isinstance(demand, (np.ndarray, list, tuple)):
        arr = np.asarray(demand, dtype=float) if not isinstance(demand, np.ndarray) else demand
        as_numeric("demand", arr)
        if arr.ndim != 1:
            raise ValueError(f"an unlabelled demand must be 1-D (one value per period; pass an "
                             f"xarray.DataArray to add other dimensions); got {show(demand)}")
        values = xr.DataArray(arr, dims=(time_dim,), coords={time_dim: np.arange(arr.size)})
    else:
        raise TypeError("demand must be a 1-D array, an xarray.DataArray with a time dimension, "
                        f"or a distribution with .rvs; got {describe(demand)}")
    check_range("demand", values, lo=0)
    if values.sizes[time_dim] == 0:
        raise ValueError("demand must hold at least one period")
    if not bool((values.sum(time_dim) > 0).all()):
        raise ValueError("demand must have positive total tokens")
    return values.astype(float)


def _as_labelled(name: str, value, dim: str | None = None):
    """A float, or a DataArray: 1-D arrays are labelled along ``dim`` (default: ``name``)."""
    if isinstance(value, xr.DataArray):
        return value
    if isinstance(value, (np.ndarray, list, tuple)):
        arr = as_numeric(name, value).astype(float)
        if arr.ndim == 0:
            return float(arr)
        if arr.ndim > 1:
            raise TypeError(f"{name} must be a number, a 1-D array or an xarray.DataArray (an "
                            f"unlabelled array's dimensions cannot be matched by name); "
                            f"got {show(value)}")
        dim = dim or name
        return xr.DataArray(arr, dims=(dim,), coords={dim: arr})
    return float(value)


def _labelled(x, units, long_name) -> xr.DataArray:
    """``x`` as a DataArray with ``units`` and ``long_name``."""
    x = x if isinstance(x, xr.DataArray) else xr.DataArray(x)
    return x.assign_attrs(units=units, long_name=long_name)


def _prices(payg, floor_unit_cost, output_fraction):
    """Blended pay-as-you-go price and floor price per token [USD/token], labelled."""
    check_type("payg", payg, PayAsYouGo)
    check_fraction("output_fraction", output_fraction)
    f = _as_labelled("output_fraction", output_fraction, dims.OUTPUT_FRACTION)
    p = blended_price(payg, f)
    if isinstance(floor_unit_cost, (Provisioned, SelfHosted)):
        u = capacity_price(floor_unit_cost, f)
    else:
        check_positive("floor_unit_cost", floor_unit_cost)
        u = _as_labelled("floor_unit_cost", floor_unit_cost)
    return p / PER_MILLION, u / PER_MILLION


def _evaluate(d: xr.DataArray, floor, p, u, time_dim: str) -> xr.Dataset:
    """Account a floor of ``floor`` tokens per period against demand ``d``."""
    n = d.sizes[time_dim]
    spilled = np.maximum(d - floor, 0.0).sum(time_dim)
    by_floor = np.minimum(d, floor).sum(time_dim)  # counted apart, so served == demand is a check
    total = d.sum(time_dim)
    capacity = floor * n
    floor_cost = capacity * u
    spill_cost = spilled * p
    utilization = xr.where(capacity > 0, by_floor / xr.where(capacity > 0, capacity, 1.0), 0.0)
    var = _labelled
    return xr.Dataset({
        "floor": var(floor, "tokens/period", "dedicated floor per period"),
        "floor_capacity": var(capacity, _TOKENS, "floor capacity over the profile"),
        "demand_tokens": var(total, _TOKENS, "demand over the profile"),
        "floor_tokens": var(by_floor, _TOKENS, "tokens served by the floor"),
        "spilled_tokens": var(spilled, _TOKENS, "tokens spilled to pay-as-you-go"),
        "served_tokens": var(by_floor + spilled, _TOKENS, "tokens served (floor + spillover)"),
        "floor_utilization": var(utilization, "1", "utilisation of the floor (0: no floor)"),
        "spilled_share": var(spilled / total, "1", "share of demand spilled"),
        "floor_cost": var(floor_cost, _USD, "cost of the floor"),
        "spill_cost": var(spill_cost, _USD, "pay-as-you-go cost of the spillover"),
        "total_cost": var(floor_cost + spill_cost, _USD, "floor plus spillover cost"),
        "payg_only_cost": var(total * p, _USD, "cost with pay-as-you-go alone"),
    })


# -- floor plus spillover -------------------------------------------------------------------------
def plan_with_spillover(demand, payg, floor_unit_cost, *, output_fraction, quantile=0.5,
                        time_dim=TIME, n_periods=int(HOURS_PER_MONTH), seed=None):
    """Cost of a dedicated floor sized to a demand quantile, with spillover to pay-as-you-go (§6.4).

    Parameters
    ----------
    demand : array_like, xarray.DataArray or distribution
        Token demand per period [tokens] over the planning horizon: a 1-D array, a DataArray
        with dimension ``time_dim`` (others broadcast), or a frozen ``scipy.stats``
        distribution (``rvs(size, random_state)``) from which ``n_periods`` are drawn.
    payg : PayAsYouGo
        Price of the spillover.
    floor_unit_cost : float, array_like, Provisioned or SelfHosted
        Price of dedicated capacity per token of capacity, used or not [USD per 1M tokens], > 0,
        or a Provisioned or capacity-bearing SelfHosted option, priced by
        :func:`~rooflinekit.pricing.capacity_price` at the mix.
    output_fraction : float or array_like
        Share of billed tokens that are output tokens [1], in [0, 1]. Required.
    quantile : float or array_like
        Demand quantile the floor is sized to [1], in [0, 1]; 1 is peak. Default 0.5 (p50).
    time_dim : str
        Name of the period dimension of a DataArray demand.
    n_periods : int
        Periods drawn from a distribution; default 730 (hours in a month).
    seed : int, optional
        Seed for drawing from a distribution (required then).

    Returns
    -------
    xarray.Dataset
        Over ``quantile`` (when an array) and the prices' dimensions: ``floor``
        [tokens/period], ``floor_capacity``, ``demand_tokens``, ``floor_tokens``,
        ``spilled_tokens``, ``served_tokens`` [tokens], ``floor_utilization``,
        ``spilled_share`` [1], ``floor_cost``, ``spill_cost``, ``total_cost``,
        ``payg_only_cost`` [USD over the horizon].

    Notes
    -----
    With floor F per period, n periods and demand d_t: the floor costs ``u·n·F``, the spillover
    ``p·Σ max(d_t − F, 0)``, and the floor serves ``Σ min(d_t, F)``, so ``served_tokens`` equals
    demand: nothing is dropped, peaks turn into cost instead of 429s. The floor is priced linearly
    (no whole units) and quantiles are numpy's linear interpolation.

    References
    ----------
    .. [1] Serving-capacity guide §6.4: size the floor to p50, spill the rest to pay-as-you-go.
    """
    d = _demand(demand, time_dim, n_periods, seed)
    check_fraction("quantile", quantile)
    p, u = _prices(payg, floor_unit_cost, output_fraction)
    if isinstance(quantile, xr.DataArray):
        if quantile.ndim > 1 or (quantile.ndim == 1 and quantile.dims != (dims.QUANTILE,)):
            raise ValueError(f"a labelled quantile must be 0-d or along {dims.QUANTILE!r}; "
                             f"got dims {quantile.dims}")
        q = quantile.values
    else:
        q = np.asarray(quantile, dtype=float)
        if q.ndim > 1:
            raise ValueError(f"quantile must be a number or a 1-D array; got {show(quantile)}")
    floor = d.quantile(q, dim=time_dim)
    plan = _evaluate(d, floor, p, u, time_dim)
    plan.attrs = {"description": "dedicated floor sized to a demand quantile, excess spilled to "
                                 "pay-as-you-go (guide §6.4)", "periods": d.sizes[time_dim]}
    return plan


def optimal_floor(demand, payg, floor_unit_cost, *, output_fraction, time_dim=TIME,
                  n_periods=int(HOURS_PER_MONTH), seed=None):
    """The cheapest floor for a demand profile, and the quantile it sits at (§6.4).

    Parameters
    ----------
    demand, payg, floor_unit_cost, output_fraction, time_dim, n_periods, seed
        As for :func:`plan_with_spillover`.

    Returns
    -------
    xarray.Dataset
        The variables of :func:`plan_with_spillover` at the cost-minimising floor, plus
        ``quantile`` (share of periods whose demand the floor covers, the empirical CDF at the
        floor) and ``critical_ratio`` ``1 − u/p`` [1].

    Notes
    -----
    ``C(F) = u·n·F + p·Σ max(d_t − F, 0)`` is convex and piecewise linear, kinked at the demand
    values, so its minimum is found exactly among them (and 0). The optimal quantile is the
    newsvendor critical ratio ``1 − u/p``; with ``u ≥ p`` the optimum is no floor. Ties go to
    the smaller floor.

    References
    ----------
    .. [1] Serving-capacity guide §6.4.
    .. [2] Arrow, Harris & Marschak, "Optimal inventory policy", Econometrica 19 (1951) — the
       newsvendor critical ratio.
    """
    d = _demand(demand, time_dim, n_periods, seed)
    p, u = _prices(payg, floor_unit_cost, output_fraction)
    n = d.sizes[time_dim]
    other = [k for k in d.dims if k != time_dim]
    values = np.sort(d.transpose(*other, time_dim).values, axis=-1)
    # Candidate floors: 0 and every demand value. Spill at F = d_(k) is the sum of the larger
    # values minus (n − 1 − k)·d_(k); at F = 0 it is the whole demand.
    tail = np.cumsum(values[..., ::-1], axis=-1)[..., ::-1]
    above = np.concatenate([tail[..., 1:], np.zeros(values.shape[:-1] + (1,))], axis=-1)
    spill = above - (n - 1 - np.arange(n)) * values
    candidates = np.concatenate([np.zeros(values.shape[:-1] + (1,)), values], axis=-1)
    spills = np.concatenate([tail[..., :1], spill], axis=-1)
    coords = {k: d.coords[k] for k in other if k in d.coords}
    cand = xr.DataArray(candidates, dims=(*other, "candidate"), coords=coords)
    cost = u * n * cand + p * xr.DataArray(spills, dims=cand.dims, coords=coords)
    best = cand.isel(candidate=cost.argmin("candidate"))
    plan = _evaluate(d, best, p, u, time_dim)
    covered = (d <= best).mean(time_dim)
    plan["quantile"] = covered.assign_attrs(units="1",
                                            long_name="share of periods the floor covers")
    ratio = 1 - u / p
    ratio = ratio if isinstance(ratio, xr.DataArray) else xr.DataArray(ratio)
    plan["critical_ratio"] = ratio.assign_attrs(units="1",
                                                long_name="newsvendor critical ratio 1 - u/p")
    plan.attrs = {"description": "cost-minimising dedicated floor with pay-as-you-go spillover "
                                 "(guide §6.4)", "periods": n}
    return plan


def compare_floor_sizing(demand, payg, floor_unit_cost, *, output_fraction, time_dim=TIME,
                         n_periods=int(HOURS_PER_MONTH), seed=None):
    """The guide's comparison: floor sized to peak, p50 and p10, beside the optimum (§6.4).

    Parameters as for :func:`optimal_floor`: those of :func:`plan_with_spillover` less
    ``quantile``, which this comparison sets (1.0, 0.5, 0.1 and the optimum's).

    Returns
    -------
    xarray.Dataset
        Along ``sizing`` = ``["peak", "p50", "p10", "optimal"]`` (with the floor's ``quantile``
        as a coordinate): the variables of :func:`plan_with_spillover` — cost, floor
        utilisation, share spilled, tokens served.

    Notes
    -----
    Peak sizing buys capacity that idles most of the month; p10 sizing leaves most traffic on the
    shared pool (and its 429s); p50 keeps the floor busy and turns peaks into cost, not
    unavailability. A distribution is sampled once, so all four rows see the same month.

    See Also
    --------
    plan_with_spillover : one floor at a chosen demand quantile.
    optimal_floor : the cost-minimising floor alone.

    References
    ----------
    .. [1] Serving-capacity guide §6.4.
    """
    d = _demand(demand, time_dim, n_periods, seed)
    sized = plan_with_spillover(d, payg, floor_unit_cost, output_fraction=output_fraction,
                                quantile=[1.0, 0.5, 0.1], time_dim=time_dim)
    sized = sized.rename({dims.QUANTILE: "sizing"}).assign_coords(
        sizing=["peak", "p50", "p10"])
    sized = sized.assign_coords({dims.QUANTILE: ("sizing", [1.0, 0.5, 0.1])})
    best = optimal_floor(d, payg, floor_unit_cost, output_fraction=output_fraction,
                         time_dim=time_dim)
    quantile = best["quantile"]
    best = best.drop_vars(["quantile", "critical_ratio"]).expand_dims(sizing=["optimal"])
    best = best.assign_coords({dims.QUANTILE: quantile.expand_dims(sizing=["optimal"])})
    out = xr.concat([sized, best], dim="sizing", join="outer", combine_attrs="drop_conflicts")
    out.attrs = {"description": "floor sized to peak, p50, p10 and the optimum, with "
                                "pay-as-you-go spillover (guide §6.4)",
                 "periods": d.sizes[time_dim]}
    return out


# -- self-hosting ---------------------------------------------------------------------------------
def self_hosting_comparison(selfhosted, payg, monthly_tokens, output_fraction, *,
                            provisioned=None):
    """Self-hosting unit cost against volume, and where it crosses the alternatives (§6.5).

    Parameters
    ----------
    selfhosted : SelfHosted
        The deployment.
    payg : PayAsYouGo
        The pay-as-you-go alternative.
    monthly_tokens : float or array_like
        Volumes to evaluate [tokens/month], > 0.
    output_fraction : float or array_like
        Share of billed tokens that are output tokens [1], in [0, 1].
    provisioned : Provisioned, optional
        A provisioned alternative, for its crossover too.

    Returns
    -------
    xarray.Dataset
        ``unit_cost`` and ``unit_cost_without_engineering`` [USD/1M tokens] over
        ``monthly_tokens``; ``payg_price`` [USD/1M tokens]; ``monthly_cost`` and
        ``monthly_cost_without_engineering`` [USD/month]; ``crossover_payg`` and
        ``crossover_payg_without_engineering`` [tokens/month]; with ``provisioned``, also
        ``crossover_provisioned`` and ``crossover_provisioned_without_engineering``.

    References
    ----------
    .. [1] Serving-capacity guide §6.5: unit cost = monthly fixed cost / monthly tokens; the
       engineering line decides it.
    """
    check_type("selfhosted", selfhosted, SelfHosted)
    check_positive("monthly_tokens", monthly_tokens)
    v = _as_labelled("monthly_tokens", monthly_tokens, dims.MONTHLY_TOKENS)
    f = _as_labelled("output_fraction", output_fraction, dims.OUTPUT_FRACTION)
    da = _labelled
    out = {
        "unit_cost": da(selfhosted.unit_cost(v), "USD/1M tokens", "self-hosted unit cost"),
        "unit_cost_without_engineering": da(
            selfhosted.unit_cost(v, include_engineering=False), "USD/1M tokens",
            "self-hosted unit cost without the engineering line"),
        "payg_price": da(blended_price(payg, f), "USD/1M tokens", "blended pay-as-you-go price"),
        "monthly_cost": da(selfhosted.monthly_cost, "USD/month", "self-hosted monthly cost"),
        "monthly_cost_without_engineering": da(
            selfhosted.monthly_cost_without_engineering, "USD/month",
            "self-hosted monthly cost without the engineering line"),
        "crossover_payg": da(crossover_volume(selfhosted, payg, f), "tokens/month",
                             "crossover volume against pay-as-you-go"),
        "crossover_payg_without_engineering": da(
            crossover_volume(selfhosted, payg, f, include_engineering=False), "tokens/month",
            "crossover volume against pay-as-you-go, without the engineering line"),
    }
    if provisioned is not None:
        out["crossover_provisioned"] = da(
            crossover_volume(selfhosted, provisioned, f), "tokens/month",
            "crossover volume against provisioned capacity")
        out["crossover_provisioned_without_engineering"] = da(
            crossover_volume(selfhosted, provisioned, f, include_engineering=False),
            "tokens/month", "crossover volume against provisioned, without the engineering line")
    return xr.Dataset(out)
