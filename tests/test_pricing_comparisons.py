"""Tests for rooflinekit.pricing: break-even, savings surfaces, self-hosting crossover, price list
(§6); the capacity types are tested in test_pricing_capacity.py, the gates and the cheapest option
in test_pricing_choice.py."""

import math

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from rooflinekit import catalog
from rooflinekit.pricing import (BreakEven, PayAsYouGo, Provisioned, SelfHosted,
                                 blended_price, break_even, capacity_price, cheapest_option,
                                 crossover_volume, gpu_hourly_price, load_prices, payg_price,
                                 provisioned_example, provisioned_savings, provisioned_unit_cost,
                                 unit_cost)

from helpers import da



# -- guide §6.3 -----------------------------------------------------------------------------------
def test_guide_blended_prices(guide_payg):
    # guide §6.3 / docs/conventions.md: blended $3.90 and $7.50 per 1M, rel 1e-12
    assert blended_price(guide_payg, 0.1) == pytest.approx(3.90, rel=1e-12)
    assert blended_price(guide_payg, 0.5) == pytest.approx(7.50, rel=1e-12)


def test_guide_break_even(guide_provisioned, guide_payg):
    # guide §6.3 / docs/conventions.md: 3.077B and 1.6B tokens; 76.92% and 40.00% of 4B
    tokens, util = break_even(guide_provisioned, guide_payg, 0.1)
    assert tokens == pytest.approx(12_000 / 3.9e-6, rel=1e-12)
    assert round(tokens / 1e9, 3) == 3.077
    assert round(util * 100, 2) == 76.92
    tokens, util = break_even(guide_provisioned, guide_payg, 0.5)
    assert tokens == pytest.approx(1.6e9, rel=1e-12)
    assert util == pytest.approx(0.40, rel=1e-12)


def test_break_even_mix_is_required(guide_provisioned, guide_payg):
    with pytest.raises(TypeError):
        break_even(guide_provisioned, guide_payg)  # no output fraction, no number
    with pytest.raises(TypeError):
        blended_price(guide_payg)


# -- input kinds ----------------------------------------------------------------------------------
def test_break_even_scalar(guide_provisioned, guide_payg):
    out = break_even(guide_provisioned, guide_payg, 0.1)
    assert isinstance(out, BreakEven)
    assert isinstance(out.tokens, float) and isinstance(out.utilization, float)


def test_break_even_ndarray(guide_provisioned, guide_payg):
    out = break_even(guide_provisioned, guide_payg, np.array([0.1, 0.5]))
    np.testing.assert_allclose(out.utilization, [12_000 / 3.9e-6 / 4e9, 0.4], rtol=1e-12)


def test_break_even_dataarray(guide_provisioned, guide_payg):
    out = break_even(guide_provisioned, guide_payg, da([0.1, 0.5], "output_fraction"))
    assert isinstance(out, xr.Dataset)
    assert out["tokens"].attrs["units"] == "tokens/month"
    assert out["utilization"].attrs["units"] == "1"
    np.testing.assert_allclose(out["utilization"].values, [0.76923077, 0.4], rtol=1e-7)


def test_break_even_labelled_spec_fields(guide_payg):
    # A spec whose field is a DataArray broadcasts against a plain ndarray by name.
    prov = Provisioned(da([6_000.0, 12_000.0], "monthly_cost"), 4e9)
    out = break_even(prov, guide_payg, np.array([0.1, 0.5]))
    assert set(out["utilization"].dims) == {"monthly_cost", "output_fraction"}
    assert float(out["utilization"].sel(monthly_cost=12_000, output_fraction=0.5)) == \
        pytest.approx(0.4, rel=1e-12)


def test_break_even_surface_one_call():
    # output_fraction × input price × capacity × volume in one call (savings) and break-even.
    f = da(np.linspace(0, 1, 11), "output_fraction")
    c_in = da([1.0, 3.0], "input_per_mtok")
    cap = da([2e9, 4e9, 8e9], "monthly_capacity_tokens")
    vol = da([1e9, 3e9, 5e9], "monthly_tokens")
    payg = PayAsYouGo(c_in, 12.0)
    prov = Provisioned(12_000.0, cap)
    saved = provisioned_savings(prov, payg, vol, f)
    assert set(saved.dims) == {"output_fraction", "input_per_mtok", "monthly_capacity_tokens",
                               "monthly_tokens"}
    assert saved.attrs["units"] == "USD/month"
    cell = saved.sel(output_fraction=0.1, input_per_mtok=3.0, monthly_capacity_tokens=4e9,
                     monthly_tokens=3e9)
    expected = provisioned_savings(Provisioned(12_000.0, 4e9), PayAsYouGo(3.0, 12.0), 3e9, 0.1)
    assert float(cell) == pytest.approx(expected, rel=1e-12)
    surface = break_even(prov, payg, f)
    assert dict(surface["utilization"].sizes) == {"input_per_mtok": 2, "output_fraction": 11,
                                                  "monthly_capacity_tokens": 3}
    assert float(surface["utilization"].sel(input_per_mtok=3.0, output_fraction=0.5,
                                            monthly_capacity_tokens=4e9)) == \
        pytest.approx(0.4, rel=1e-12)


def test_provisioned_savings_scalar_and_spill(guide_provisioned, guide_payg):
    # At the break-even volume the saving is zero (rel 1e-9 of the commitment).
    v = 12_000 / 3.9e-6
    assert abs(provisioned_savings(guide_provisioned, guide_payg, v, 0.1)) < 1e-8 * 12_000
    # Above capacity the excess is billed at pay-as-you-go on both sides.
    s5 = provisioned_savings(guide_provisioned, guide_payg, 5e9, 0.1)
    s4 = provisioned_savings(guide_provisioned, guide_payg, 4e9, 0.1)
    assert s5 == pytest.approx(s4, rel=1e-12)
    assert s4 == pytest.approx(4e9 * 3.9e-6 - 12_000, rel=1e-12)


def test_provisioned_savings_ndarray(guide_provisioned, guide_payg):
    out = provisioned_savings(guide_provisioned, guide_payg, np.array([0.0, 4e9]), 0.5)
    np.testing.assert_allclose(out, [-12_000.0, 4e9 * 7.5e-6 - 12_000], rtol=1e-12)


def test_provisioned_unit_cost_equals_payg_at_break_even(guide_provisioned, guide_payg):
    u = break_even(guide_provisioned, guide_payg, 0.1).utilization
    assert provisioned_unit_cost(guide_provisioned, 0.1, u) == pytest.approx(3.9, rel=1e-12)
    out = provisioned_unit_cost(guide_provisioned, 0.1, da([0.5, 1.0], "utilization"))
    np.testing.assert_allclose(out.values, [6.0, 3.0], rtol=1e-12)
    out = provisioned_unit_cost(guide_provisioned, 0.1, np.array([0.5, 1.0]))
    np.testing.assert_allclose(out, [6.0, 3.0], rtol=1e-12)


def test_capacity_price(guide_provisioned):
    assert capacity_price(guide_provisioned, 0.3) == pytest.approx(3.0, rel=1e-12)
    sh = SelfHosted(8, 3.0, 25_000, capacity_tokens=10e9)
    assert capacity_price(sh, 0.3) == pytest.approx(42_520 / 10e3, rel=1e-12)
    with pytest.raises(ValueError, match="capacity_tokens"):
        capacity_price(SelfHosted(8, 3.0, 0.0), 0.3)


# -- self-hosting (§6.5) --------------------------------------------------------------------------
def test_guide_self_hosting_as_printed(guide_payg):
    # docs/conventions.md: $17.50/M at 1B needs the total rounded to $17.5k; $0.88/M at 20B; crossover
    # 17,545 / 3.90 = 4.50B at a 10% mix (abs 0.005 on the rounded figures).
    printed = SelfHosted(8, 3.0, 25.0)
    assert printed.unit_cost(1e9) == pytest.approx(17.545, rel=1e-12)
    assert unit_cost(round(printed.monthly_cost, -2), 1e9) == pytest.approx(17.50, rel=1e-12)
    assert round(printed.unit_cost(20e9), 2) == 0.88
    crossover = crossover_volume(printed, guide_payg, 0.1)
    assert crossover == pytest.approx(17_545 / 3.9e-6, rel=1e-12)
    assert round(crossover / 1e9, 2) == 4.50


def test_guide_self_hosting_as_stated(guide_payg):
    # docs/conventions.md: with $25,000 the month costs $42,520: $42.52/M at 1B, $2.13/M at 20B,
    # crossover ≈ 10.9B tokens/month at a 10% mix.
    stated = SelfHosted(8, 3.0, 25_000.0)
    assert stated.monthly_cost == pytest.approx(42_520.0, rel=1e-12)
    assert stated.monthly_cost_without_engineering == pytest.approx(17_520.0, rel=1e-12)
    assert stated.unit_cost(1e9) == pytest.approx(42.52, rel=1e-12)
    assert round(stated.unit_cost(20e9), 2) == 2.13
    assert round(crossover_volume(stated, guide_payg, 0.1) / 1e9, 1) == 10.9
    # Without the engineering line it is the GPU-hours-only case.
    assert crossover_volume(stated, guide_payg, 0.1, include_engineering=False) == \
        pytest.approx(17_520 / 3.9e-6, rel=1e-12)
    assert stated.unit_cost(1e9, include_engineering=False) == pytest.approx(17.52, rel=1e-12)


def test_crossover_against_provisioned_whole_units():
    # Units of $10,000 for 2B tokens: 42,520 buys floor(4.252) = 4 units = 8B tokens.
    prov = Provisioned.from_units(3, 2e9, monthly_cost_per_unit=10_000.0)
    sh = SelfHosted(8, 3.0, 25_000.0)
    assert crossover_volume(sh, prov, 0.3) == pytest.approx(8e9, rel=1e-12)
    assert crossover_volume(sh, prov, 0.3, whole_units=False) == \
        pytest.approx(4.252 * 2e9, rel=1e-12)
    # Just above the crossover the units needed cost more than self-hosting; at it, they don't.
    units_needed = math.ceil(8e9 * (1 + 1e-9) / 2e9)
    assert units_needed * 10_000 > sh.monthly_cost >= math.ceil(8e9 / 2e9) * 10_000
    out = crossover_volume(sh, prov, np.array([0.0, 0.5]))
    assert out.shape == (2,)
    out = crossover_volume(sh, prov, da([0.0, 0.5], "output_fraction"))
    assert out.attrs["units"] == "tokens/month"


def test_crossover_payg_kinds(guide_payg):
    sh = SelfHosted(8, 3.0, 25.0)
    out = crossover_volume(sh, guide_payg, np.array([0.1, 0.5]))
    np.testing.assert_allclose(out, [17_545 / 3.9e-6, 17_545 / 7.5e-6], rtol=1e-12)
    out = crossover_volume(sh, guide_payg, da([0.1, 0.5], "output_fraction"))
    assert out.dims == ("output_fraction",)


# -- errors ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, name", [
    (dict(input_per_mtok=-1.0, output_per_mtok=12.0), "input_per_mtok"),
    (dict(input_per_mtok=3.0, output_per_mtok=-12.0), "output_per_mtok"),
    (dict(input_per_mtok=3.0, output_per_mtok=12.0, cached_input_per_mtok=-0.1),
     "cached_input_per_mtok"),
])
def test_negative_prices_raise(kwargs, name):
    with pytest.raises(ValueError, match=name):
        PayAsYouGo(**kwargs)


@pytest.mark.parametrize("f", [-0.1, 1.5, np.array([0.2, 1.01])])
def test_output_fraction_out_of_range_raises(guide_provisioned, guide_payg, f):
    with pytest.raises(ValueError, match=r"output_fraction must lie in \[0, 1\]"):
        break_even(guide_provisioned, guide_payg, f)
    with pytest.raises(ValueError, match="output_fraction"):
        blended_price(guide_payg, f)


def test_zero_capacity_and_cost_raise():
    with pytest.raises(ValueError, match="monthly_capacity_tokens"):
        Provisioned(12_000.0, 0.0)
    with pytest.raises(ValueError, match="monthly_cost"):
        Provisioned(0.0, 4e9)
    with pytest.raises(ValueError, match="output_weight"):
        Provisioned(12_000.0, 4e9, output_weight=0.0)
    with pytest.raises(ValueError, match="capacity_tokens"):
        SelfHosted(8, 3.0, 0.0, capacity_tokens=0.0)


def test_self_hosted_bad_inputs():
    with pytest.raises(ValueError, match="n_gpus"):
        SelfHosted(0, 3.0, 0.0)
    with pytest.raises(ValueError, match="n_gpus"):
        SelfHosted(2.5, 3.0, 0.0)
    with pytest.raises(ValueError, match="gpu_hourly"):
        SelfHosted(8, -3.0, 0.0)
    with pytest.raises(ValueError, match="engineering_monthly"):
        SelfHosted(8, 3.0, -1.0)
    with pytest.raises(ValueError, match="hours_per_month"):
        SelfHosted(8, 3.0, 0.0, hours_per_month=800)
    with pytest.raises(ValueError, match="monthly_tokens"):
        SelfHosted(8, 3.0, 0.0).unit_cost(0.0)


def test_type_errors(guide_provisioned, guide_payg):
    with pytest.raises(TypeError, match="payg"):
        blended_price(guide_provisioned, 0.1)
    with pytest.raises(TypeError, match="provisioned"):
        break_even(guide_payg, guide_payg, 0.1)
    with pytest.raises(TypeError, match="output_fraction"):
        blended_price(guide_payg, "0.1")
    with pytest.raises(TypeError, match="third_party"):
        PayAsYouGo(3.0, 12.0, third_party="no")
    with pytest.raises(ValueError, match="NaN"):
        blended_price(guide_payg, np.array([0.1, np.nan]))


# -- properties -----------------------------------------------------------------------------------
prices = st.floats(0.01, 100.0)
fractions = st.floats(0.0, 1.0)


@settings(max_examples=40, deadline=None)
@given(f=st.one_of(st.floats(-1e6, -1e-9), st.floats(1.0 + 1e-9, 1e6)),
       price=st.floats(-1e6, -1e-9))
def test_invalid_inputs_always_raise(f, price):
    payg, prov = PayAsYouGo(3.0, 12.0), Provisioned(12_000.0, 4e9)
    with pytest.raises(ValueError, match="output_fraction"):
        break_even(prov, payg, f)
    with pytest.raises(ValueError, match="output_fraction"):
        cheapest_option(1e9, [payg, prov], f)
    with pytest.raises(ValueError, match="output_per_mtok"):
        PayAsYouGo(3.0, price)
    with pytest.raises(ValueError, match="monthly_cost"):
        Provisioned(price, 4e9)


@settings(max_examples=60, deadline=None)
@given(c_in=prices, ratio=st.floats(1.01, 20.0), cost=st.floats(1.0, 1e6),
       cap=st.floats(1e6, 1e12), f1=fractions, f2=fractions,
       w_share=st.floats(0.0, 0.99))
def test_break_even_utilization_falls_with_output_fraction(c_in, ratio, cost, cap, f1, f2,
                                                           w_share):
    # Output priced above input; output weight w from 1 up to (not reaching) the price ratio.
    lo, hi = sorted((f1, f2))
    w = 1.0 + w_share * (ratio - 1.0)
    prov = Provisioned(cost, cap, output_weight=w)
    payg = PayAsYouGo(c_in, c_in * ratio)
    u_lo = break_even(prov, payg, lo).utilization
    u_hi = break_even(prov, payg, hi).utilization
    assert u_hi <= u_lo * (1 + 1e-12)
    if hi - lo > 1e-3 and w_share < 0.9:
        assert u_hi < u_lo


@settings(max_examples=60, deadline=None)
@given(c_in=prices, c_out=prices, cached=st.floats(0.0, 100.0), f=fractions, h=fractions,
       v=st.floats(0.0, 1e13), n=st.integers(1, 64), hourly=st.floats(0.0, 50.0),
       eng=st.floats(0.0, 1e6))
def test_costs_are_nonnegative(c_in, c_out, cached, f, h, v, n, hourly, eng):
    payg = PayAsYouGo(c_in, c_out, cached_input_per_mtok=cached)
    assert blended_price(payg, f, cached_fraction=h) >= 0
    assert payg.cost(v, f, cached_fraction=h) >= 0
    sh = SelfHosted(n, hourly, eng)
    assert sh.monthly_cost >= 0 and sh.gpu_monthly_cost >= 0
    assert sh.unit_cost(max(v, 1.0)) >= 0
    assert Provisioned(1.0 + eng, 1e9).cost(v, f) >= 0


# -- price list -----------------------------------------------------------------------------------
def test_price_list_is_dated_and_sourced():
    table = load_prices()
    assert table["meta"]["date"] == "2026-11"
    assert "illustrative" in table["meta"]["caveat"].lower()
    for section in ("payg", "provisioned", "gpu_hourly"):
        assert table[section], section
        for row in table[section]:
            assert row["source"] and row["date"], row
    table["payg"].clear()  # a copy: the next call is unaffected
    assert load_prices()["payg"]


def test_payg_price_loader():
    p = payg_price("guide-lab")
    assert blended_price(p, 0.1) == pytest.approx(3.9, rel=1e-12)
    sonnet = payg_price("anthropic-claude-sonnet-4")
    assert sonnet.long_context_threshold == 200_000 and sonnet.region == "us"
    with pytest.raises(ValueError, match="unknown payg entry"):
        payg_price("no-such-model")


def test_provisioned_example_loader():
    lab = provisioned_example("guide-lab-provisioned")
    assert break_even(lab, payg_price("guide-lab"), 0.5).utilization == pytest.approx(0.4)
    ptu = provisioned_example("azure-ptu-gpt-4o-global-hourly")
    assert ptu.units == 15 and ptu.monthly_cost == pytest.approx(15 * 730.0)
    assert ptu.capacity(0.0) == pytest.approx(15 * 2500 * 60 * 730, rel=1e-12)


def test_gpu_hourly_prices_match_catalogue():
    assert gpu_hourly_price("guide-lab-80GB") == 3.0
    assert catalog.gpu("guide-lab-80GB").hourly_price == 3.0
    names = {n.lower() for n in catalog.gpu_names()}
    listed = {row["gpu"].lower() for row in load_prices()["gpu_hourly"]}
    assert "guide-lab-80gb" in listed & names
