"""Tests for rooflinekit.planning: floor plus spillover (§6.4) and self-hosting volumes (§6.5)."""

import numpy as np
import pytest
import scipy.stats
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from rooflinekit.guide import (guide_break_even_figures, guide_self_hosting_figures,
                               guide_spillover_figures)
from rooflinekit.planning import (TIME, bursty_demand, compare_floor_sizing, optimal_floor,
                                  plan_with_spillover, self_hosting_comparison)
from rooflinekit.pricing import PayAsYouGo, Provisioned, SelfHosted

PAYG = PayAsYouGo(3.0, 12.0)          # guide §6.3
FLOOR = Provisioned(12_000.0, 4e9)    # guide §6.3: $3.00 per 1M tokens of capacity


@pytest.fixture(scope="module")
def demand():
    """A seeded bursty month of hourly demand (730 periods, about 4–5B tokens)."""
    return bursty_demand(seed=7)


# -- the guide's comparison (§6.4) ----------------------------------------------------------------
def test_p50_beats_peak_and_spills_less_than_p10(demand):
    # guide §6.4: sizing to peak buys idle capacity; p10 leaves most traffic on the shared pool.
    cmp = compare_floor_sizing(demand, PAYG, FLOOR, output_fraction=0.1)
    peak, p50, p10 = (cmp.sel(sizing=s) for s in ("peak", "p50", "p10"))
    assert float(p50["total_cost"]) < float(peak["total_cost"])
    assert float(p50["spilled_share"]) < float(p10["spilled_share"])
    assert float(peak["spilled_share"]) == 0.0
    assert float(p50["floor_utilization"]) > float(peak["floor_utilization"])
    # Nothing dropped: every sizing serves the whole demand (rel 1e-12).
    np.testing.assert_allclose(cmp["served_tokens"].values, float(demand.sum()), rtol=1e-12)
    assert list(cmp["sizing"].values) == ["peak", "p50", "p10", "optimal"]
    np.testing.assert_allclose(cmp["quantile"].values[:3], [1.0, 0.5, 0.1])
    assert float(cmp["total_cost"].sel(sizing="optimal")) <= float(cmp["total_cost"].min())


def test_peak_floor_accounting(demand):
    plan = plan_with_spillover(demand, PAYG, 3.0, output_fraction=0.1, quantile=1.0)
    n = demand.size
    assert float(plan["floor"]) == pytest.approx(float(demand.max()), rel=1e-12)
    assert float(plan["floor_utilization"]) == pytest.approx(
        float(demand.mean() / demand.max()), rel=1e-12)
    assert float(plan["floor_cost"]) == pytest.approx(float(demand.max()) * n * 3e-6, rel=1e-12)
    assert float(plan["spill_cost"]) == 0.0


def test_plan_costs_by_hand():
    # Four periods, floor at the median 2.5: floor 2.5 × 4 = 10 tokens at $3/M; spill 0.5 + 1.5.
    d = np.array([1.0, 2.0, 3.0, 4.0]) * 1e6
    plan = plan_with_spillover(d, PAYG, 3.0, output_fraction=0.1, quantile=0.5)
    assert float(plan["floor"]) == pytest.approx(2.5e6)
    assert float(plan["floor_cost"]) == pytest.approx(10e6 * 3e-6, rel=1e-12)
    assert float(plan["spilled_tokens"]) == pytest.approx(2e6, rel=1e-12)
    assert float(plan["spill_cost"]) == pytest.approx(2e6 * 3.9e-6, rel=1e-12)
    assert float(plan["floor_tokens"]) == pytest.approx(8e6, rel=1e-12)
    assert float(plan["floor_utilization"]) == pytest.approx(0.8, rel=1e-12)
    assert float(plan["spilled_share"]) == pytest.approx(0.2, rel=1e-12)
    assert float(plan["payg_only_cost"]) == pytest.approx(10e6 * 3.9e-6, rel=1e-12)
    assert plan["total_cost"].attrs["units"] == "USD"


# -- input kinds ----------------------------------------------------------------------------------
def test_plan_ndarray_demand_scalar_quantile(demand):
    plan = plan_with_spillover(demand.values, PAYG, FLOOR, output_fraction=0.1)
    assert plan["total_cost"].ndim == 0
    assert float(plan["quantile"]) == 0.5


def test_plan_dataarray_demand_with_replicates():
    reps = xr.concat([bursty_demand(seed=s) for s in range(3)], dim="replicate")
    plan = plan_with_spillover(reps, PAYG, FLOOR, output_fraction=np.array([0.1, 0.5]),
                               quantile=[0.1, 0.5, 1.0])
    assert dict(plan["total_cost"].sizes) == {"quantile": 3, "replicate": 3,
                                              "output_fraction": 2}
    np.testing.assert_allclose(plan["served_tokens"].values,
                               plan["demand_tokens"].broadcast_like(plan["served_tokens"]).values,
                               rtol=1e-12)


def test_plan_labelled_quantile_and_prices(demand):
    q = xr.DataArray([0.25, 0.75], dims=("quantile",))
    price = xr.DataArray([2.0, 3.0], dims=("floor_unit_cost",), coords={"floor_unit_cost": [2, 3]})
    plan = plan_with_spillover(demand, PAYG, price, output_fraction=0.1, quantile=q)
    assert set(plan["total_cost"].dims) == {"quantile", "floor_unit_cost"}


def test_plan_from_distribution_is_seeded():
    dist = scipy.stats.gamma(2.0, scale=2.75e6)
    a = plan_with_spillover(dist, PAYG, FLOOR, output_fraction=0.1, seed=3, n_periods=200)
    b = plan_with_spillover(dist, PAYG, FLOOR, output_fraction=0.1, seed=3, n_periods=200)
    assert float(a["total_cost"]) == float(b["total_cost"])
    assert a.attrs["periods"] == 200
    with pytest.raises(ValueError, match="seed"):
        plan_with_spillover(dist, PAYG, FLOOR, output_fraction=0.1)


def test_bursty_demand_is_seeded_and_bursty():
    a, b = bursty_demand(seed=1), bursty_demand(seed=1)
    np.testing.assert_array_equal(a.values, b.values)
    assert not np.array_equal(a.values, bursty_demand(seed=2).values)
    assert a.dims == (TIME,) and a.size == 730 and a.attrs["units"] == "tokens"
    assert float(a.max()) > 2.5 * float(a.median())   # bursts well above the typical hour
    with pytest.raises(TypeError):
        bursty_demand()  # the seed is required


# -- optimal floor --------------------------------------------------------------------------------
def test_optimal_floor_is_minimum_and_at_critical_ratio(demand):
    best = optimal_floor(demand, PAYG, FLOOR, output_fraction=0.1)
    grid = plan_with_spillover(demand, PAYG, FLOOR, output_fraction=0.1,
                               quantile=np.linspace(0, 1, 401))
    assert float(best["total_cost"]) <= float(grid["total_cost"].min()) * (1 + 1e-12)
    # Newsvendor: the optimal quantile is 1 − u/p = 1 − 3.00/3.90, within one period (1/730).
    assert float(best["critical_ratio"]) == pytest.approx(1 - 3.0 / 3.9, rel=1e-12)
    assert abs(float(best["quantile"]) - (1 - 3.0 / 3.9)) <= 1.5 / demand.size


def test_optimal_floor_none_when_floor_costs_more_than_payg(demand):
    best = optimal_floor(demand, PAYG, 5.0, output_fraction=0.1)  # $5 > $3.90 blended
    assert float(best["floor"]) == 0.0
    assert float(best["floor_utilization"]) == 0.0
    assert float(best["total_cost"]) == pytest.approx(float(best["payg_only_cost"]), rel=1e-12)


def test_optimal_floor_broadcasts_over_prices(demand):
    best = optimal_floor(demand, PAYG, np.array([1.0, 3.0, 5.0]), output_fraction=0.1)
    assert best["floor"].dims == ("floor_unit_cost",)
    floors = best["floor"].values
    assert floors[0] >= floors[1] >= floors[2] == 0.0  # dearer capacity, smaller floor


# -- errors ---------------------------------------------------------------------------------------
def test_plan_errors(demand):
    with pytest.raises(ValueError, match="demand must lie in"):
        plan_with_spillover(np.array([1.0, -1.0]), PAYG, 3.0, output_fraction=0.1)
    with pytest.raises(ValueError, match="quantile"):
        plan_with_spillover(demand, PAYG, 3.0, output_fraction=0.1, quantile=1.5)
    with pytest.raises(ValueError, match="floor_unit_cost"):
        plan_with_spillover(demand, PAYG, 0.0, output_fraction=0.1)
    with pytest.raises(ValueError, match="output_fraction"):
        plan_with_spillover(demand, PAYG, 3.0, output_fraction=-0.1)
    with pytest.raises(ValueError, match="1-D"):
        plan_with_spillover(np.ones((2, 3)), PAYG, 3.0, output_fraction=0.1)
    with pytest.raises(ValueError, match="positive total"):
        plan_with_spillover(np.zeros(5), PAYG, 3.0, output_fraction=0.1)
    with pytest.raises(ValueError, match="time_dim"):
        plan_with_spillover(demand.rename({TIME: "hour"}), PAYG, 3.0, output_fraction=0.1)
    with pytest.raises(TypeError, match="payg"):
        plan_with_spillover(demand, FLOOR, 3.0, output_fraction=0.1)
    with pytest.raises(TypeError, match="demand"):
        plan_with_spillover("demand", PAYG, 3.0, output_fraction=0.1)


# -- properties -----------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(d=arrays(np.float64, st.integers(1, 60), elements=st.floats(0.0, 1e9)),
       q=st.floats(0.0, 1.0), u=st.floats(0.01, 20.0), f=st.floats(0.0, 1.0))
def test_spillover_serves_demand_and_costs_are_nonnegative(d, q, u, f):
    if d.sum() <= 0:
        d = d + 1.0
    plan = plan_with_spillover(d, PAYG, u, output_fraction=f, quantile=q)
    assert float(plan["served_tokens"]) == pytest.approx(d.sum(), rel=1e-9)
    for var in ("floor_cost", "spill_cost", "total_cost"):
        assert float(plan[var]) >= 0
    assert 0 <= float(plan["floor_utilization"]) <= 1 + 1e-12
    best = optimal_floor(d, PAYG, u, output_fraction=f)
    assert float(best["total_cost"]) <= float(plan["total_cost"]) * (1 + 1e-9) + 1e-9


# -- self-hosting (§6.5) --------------------------------------------------------------------------
def test_self_hosting_comparison_kinds():
    sh = SelfHosted(8, 3.0, 25_000.0)
    out = self_hosting_comparison(sh, PAYG, np.array([1e9, 20e9]), 0.1,
                                  provisioned=Provisioned.from_units(
                                      2, 2e9, monthly_cost_per_unit=6_000.0))
    # docs/conventions.md: $42.52/M at 1B, $2.13/M at 20B, crossover ≈ 10.9B with the engineering line.
    np.testing.assert_allclose(out["unit_cost"].values, [42.52, 2.126], rtol=1e-12)
    np.testing.assert_allclose(out["unit_cost_without_engineering"].values, [17.52, 0.876],
                               rtol=1e-12)
    assert float(out["crossover_payg"]) == pytest.approx(42_520 / 3.9e-6, rel=1e-12)
    assert float(out["crossover_payg_without_engineering"]) == pytest.approx(17_520 / 3.9e-6)
    # $6,000 per 2B-token unit: 42,520 buys 7 whole units (14B); 17,520 buys 2 (4B).
    assert float(out["crossover_provisioned"]) == pytest.approx(14e9, rel=1e-12)
    assert float(out["crossover_provisioned_without_engineering"]) == pytest.approx(4e9)
    assert out["unit_cost"].dims == ("monthly_tokens",)
    out = self_hosting_comparison(sh, PAYG, 5e9, xr.DataArray([0.1, 0.5], dims="output_fraction"))
    assert out["crossover_payg"].dims == ("output_fraction",)


def test_guide_self_hosting_figures_both_versions():
    figs = guide_self_hosting_figures()
    t = figs.table
    printed, stated = t.sel(version="as printed"), t.sel(version="as stated")
    # docs/conventions.md: $17,520 of GPU-hours; $17,545 = that + $25; $42,520 with $25,000.
    assert float(printed["gpu_monthly_cost"]) == pytest.approx(17_520.0, rel=1e-12)
    assert float(printed["monthly_cost"]) == pytest.approx(17_545.0, rel=1e-12)
    assert float(stated["monthly_cost"]) == pytest.approx(42_520.0, rel=1e-12)
    assert round(float(printed["unit_cost"].sel(monthly_tokens=20e9)), 2) == 0.88
    assert round(float(printed["crossover_payg"]) / 1e9, 2) == 4.50
    assert float(stated["unit_cost"].sel(monthly_tokens=1e9)) == pytest.approx(42.52, rel=1e-12)
    assert round(float(stated["unit_cost"].sel(monthly_tokens=20e9)), 2) == 2.13
    assert round(float(stated["crossover_payg"]) / 1e9, 1) == 10.9
    text = figs.discrepancy
    for fragment in ("$17,520", "plus $25", "25 instead of 25,000", "$17,500", "$17.50",
                     "$42,520", "$42.52/M", "$2.13/M", "10.9B"):
        assert fragment in text, fragment
    lines = figs.lines()
    assert len(lines) == 3 and lines[-1] == text
    assert "as printed" in lines[0] and "as stated" in lines[1]


def test_guide_break_even_figures():
    # guide §6.3 / docs/conventions.md: $3.90, $7.50; 3.077B, 1.6B; 76.92%, 40.00%
    t = guide_break_even_figures()
    np.testing.assert_allclose(t["blended_price"].values, [3.9, 7.5], rtol=1e-12)
    np.testing.assert_allclose(t["tokens"].values, [12_000 / 3.9e-6, 1.6e9], rtol=1e-12)
    assert [round(x * 100, 2) for x in t["utilization"].values] == [76.92, 40.0]


def test_guide_spillover_figures():
    t = guide_spillover_figures(seed=0)
    assert float(t["total_cost"].sel(sizing="p50")) < float(t["total_cost"].sel(sizing="peak"))
    assert float(t["spilled_share"].sel(sizing="p50")) < float(
        t["spilled_share"].sel(sizing="p10"))
