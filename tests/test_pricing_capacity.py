"""Tests for rooflinekit.pricing.capacity: pay-as-you-go, provisioned and self-hosted specs, their
capacity and cost, blended price and unit cost (§6.1, §6.2, §6.5)."""

import math
import types

import numpy as np
import pytest

from rooflinekit import catalog
from rooflinekit.pricing.capacity import (PayAsYouGo, Provisioned, SelfHosted, blended_price,
                                        unit_cost)
from rooflinekit.pricing import capacity, gpu_hourly_price

from helpers import da


# -- input kinds ----------------------------------------------------------------------------------
def test_blended_price_scalar(guide_payg):
    assert isinstance(blended_price(guide_payg, 0.25), float)


def test_blended_price_ndarray(guide_payg):
    out = blended_price(guide_payg, np.array([0.0, 0.1, 0.5, 1.0]))
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, [3.0, 3.9, 7.5, 12.0], rtol=1e-12)


def test_blended_price_dataarray(guide_payg):
    out = blended_price(guide_payg, da([0.1, 0.5], "output_fraction"))
    assert out.dims == ("output_fraction",)
    assert out.attrs["units"] == "USD/1M tokens" and out.attrs["long_name"]
    np.testing.assert_allclose(out.values, [3.9, 7.5], rtol=1e-12)


# -- provisioned capacity depends on the mix (§6.2) ----------------------------------------------
def test_provisioned_capacity_output_weight():
    prov = Provisioned(10_000.0, 1e9, output_weight=4.0)
    # Capacity in input-token equivalents: f = 0.5 costs (0.5 + 4 × 0.5) = 2.5 per token.
    assert prov.capacity(0.0) == pytest.approx(1e9, rel=1e-12)
    assert prov.capacity(0.5) == pytest.approx(1e9 / 2.5, rel=1e-12)
    np.testing.assert_allclose(prov.capacity(np.array([0.0, 1.0])), [1e9, 0.25e9], rtol=1e-12)
    out = prov.capacity(da([0.0, 1.0], "output_fraction"))
    assert out.attrs["units"] == "tokens/month"


def test_provisioned_reference_mix():
    # Quoted at f = 0.2: at that mix the capacity is exactly the quoted one.
    prov = Provisioned(10_000.0, 1e9, output_weight=3.0, reference_output_fraction=0.2)
    assert prov.capacity(0.2) == pytest.approx(1e9, rel=1e-12)
    assert prov.capacity(0.0) == pytest.approx(1e9 * 1.4, rel=1e-12)


def test_provisioned_from_units_hourly_and_monthly():
    hourly = Provisioned.from_units(15, 2500 * 60 * 730, hourly_cost_per_unit=1.0,
                                    output_weight=4.0)
    assert hourly.monthly_cost == pytest.approx(15 * 730.0, rel=1e-12)
    assert hourly.monthly_capacity_tokens == pytest.approx(15 * 2500 * 60 * 730, rel=1e-12)
    assert hourly.units == 15
    monthly = Provisioned.from_units(2, 4e9, monthly_cost_per_unit=6_000.0)
    assert monthly.monthly_cost == 12_000.0 and monthly.monthly_capacity_tokens == 8e9
    with pytest.raises(ValueError, match="exactly one"):
        Provisioned.from_units(2, 4e9)


def test_provisioned_cost_over_capacity_is_inf(guide_provisioned):
    assert guide_provisioned.cost(4e9, 0.3) == 12_000.0
    assert guide_provisioned.cost(4.1e9, 0.3) == math.inf


def test_payg_cost_kinds(guide_payg):
    assert guide_payg.cost(4e9, 0.1) == pytest.approx(15_600.0, rel=1e-12)
    np.testing.assert_allclose(guide_payg.cost(np.array([1e9, 2e9]), 0.5), [7_500, 15_000],
                               rtol=1e-12)
    out = guide_payg.cost(da([1e9, 2e9], "monthly_tokens"), np.array([0.1, 0.5]))
    assert set(out.dims) == {"monthly_tokens", "output_fraction"}
    assert out.attrs["units"] == "USD/month"


def test_cached_and_long_context_prices():
    p = PayAsYouGo(3.0, 15.0, cached_input_per_mtok=0.3, long_context_threshold=200_000,
                   long_context_input_per_mtok=6.0, long_context_output_per_mtok=22.5)
    # Half the input cached, f = 0.2: (3 × 0.5 + 0.3 × 0.5) × 0.8 + 15 × 0.2 = 4.32
    assert p.blended(0.2, cached_fraction=0.5) == pytest.approx(4.32, rel=1e-12)
    # Long prompts: every token at the tier, cached price scaled by 6/3.
    out = blended_price(p, 0.2, cached_fraction=0.5, prompt_tokens=np.array([1e5, 3e5]))
    np.testing.assert_allclose(out, [4.32, (6 * 0.5 + 0.6 * 0.5) * 0.8 + 22.5 * 0.2],
                               rtol=1e-12)
    with pytest.raises(ValueError, match="cached_fraction"):
        blended_price(PayAsYouGo(3.0, 12.0), 0.1, cached_fraction=0.2)
    with pytest.raises(ValueError, match="long_context"):
        PayAsYouGo(3.0, 12.0, long_context_threshold=1000)


# -- self-hosting (§6.5) --------------------------------------------------------------------------
def test_guide_self_hosting_gpu_hours():
    # docs/conventions.md: 8 GPUs × $3/h × 730 h = $17,520; the guide's $17,545 is that plus $25.
    printed = SelfHosted(8, 3.0, 25.0)
    assert printed.gpu_monthly_cost == pytest.approx(17_520.0, rel=1e-12)
    assert printed.monthly_cost == pytest.approx(17_545.0, rel=1e-12)
    assert printed.monthly_cost - printed.gpu_monthly_cost == pytest.approx(25.0, rel=1e-12)


def test_self_hosted_array_fields():
    sh = SelfHosted(np.array([4, 8]), 3.0, 25_000.0)
    np.testing.assert_allclose(sh.monthly_cost, [4 * 3 * 730 + 25_000, 42_520], rtol=1e-12)
    sh = SelfHosted(da([4, 8], "n_gpus"), 3.0, 25_000.0)
    out = sh.unit_cost(np.array([1e9, 2e9]))
    assert set(out.dims) == {"n_gpus", "monthly_tokens"}
    assert out.attrs["units"] == "USD/1M tokens"


def test_electricity_is_its_own_line_of_the_fixed_cost():
    # owned: 8 GPUs at 700 W for 730 h = 4,088 kWh at the GPUs, × 1.3 PUE = 5,314.4 kWh,
    # × $0.12/kWh = $637.728 a month on top of $17,520 of GPU-hours and $25 of engineering
    owned = SelfHosted(8, 3.0, 25.0, power_per_gpu=700.0, electricity_price=0.12, pue=1.3)
    assert owned.power_monthly_cost == pytest.approx(637.728, rel=1e-12)
    assert owned.gpu_monthly_cost == pytest.approx(17_520.0, rel=1e-12)
    assert owned.monthly_cost == pytest.approx(17_520.0 + 637.728 + 25.0, rel=1e-12)
    assert owned.monthly_cost_without_engineering == pytest.approx(18_157.728, rel=1e-12)
    assert owned.unit_cost(1e9) == pytest.approx((18_157.728 + 25.0) / 1e3, rel=1e-12)
    # a shorter month bills fewer kWh: 8 × 0.7 kW × 720 h × 1.0 × $0.10
    short = SelfHosted(8, 0.0, 0.0, hours_per_month=720, power_per_gpu=700.0,
                       electricity_price=0.10)
    assert short.power_monthly_cost == pytest.approx(403.2, rel=1e-12)
    assert short.monthly_cost == pytest.approx(403.2, rel=1e-12)


def test_electricity_defaults_leave_the_cost_unchanged():
    rented = SelfHosted(8, 3.0, 25_000.0)
    assert rented.power_monthly_cost == 0.0
    assert rented.monthly_cost == pytest.approx(42_520.0, rel=1e-12)
    # power without a price, or a price without power, costs nothing
    assert SelfHosted(8, 3.0, 25_000.0, power_per_gpu=700.0).monthly_cost == rented.monthly_cost
    assert SelfHosted(8, 3.0, 25_000.0, electricity_price=0.2).monthly_cost == \
        rented.monthly_cost


def test_electricity_fields_broadcast():
    sh = SelfHosted(8, 3.0, 0.0, power_per_gpu=da([350.0, 700.0], "power_per_gpu"),
                    electricity_price=0.1)
    cost = sh.power_monthly_cost
    assert cost.dims == ("power_per_gpu",) and cost.attrs["units"] == "USD/month"
    np.testing.assert_allclose(cost.values, [8 * 0.35 * 730 * 0.1, 8 * 0.7 * 730 * 0.1],
                               rtol=1e-12)
    np.testing.assert_allclose(sh.monthly_cost.values, 17_520.0 + cost.values, rtol=1e-12)


@pytest.mark.parametrize("field, value, match", [
    ("pue", 0.9, r"pue must lie in \[1"),
    ("pue", math.inf, "pue"),
    ("power_per_gpu", -1.0, "power_per_gpu"),
    ("electricity_price", -0.1, "electricity_price"),
    ("electricity_price", math.nan, "electricity_price"),
])
def test_electricity_fields_are_checked(field, value, match):
    with pytest.raises(ValueError, match=match):
        SelfHosted(8, 3.0, 0.0, **{field: value})


def test_unit_cost_kinds():
    assert unit_cost(17_500.0, 1e9) == pytest.approx(17.5, rel=1e-12)
    np.testing.assert_allclose(unit_cost(17_500.0, np.array([1e9, 2e9])), [17.5, 8.75])
    out = unit_cost(17_500.0, da([1e9, 2e9], "monthly_tokens"))
    assert out.attrs["units"] == "USD/1M tokens" and out.dims == ("monthly_tokens",)


class _StubRoofline(types.ModuleType):
    """Stands in for rooflinekit.roofline: 1,000 tokens/s per group at any shape."""

    def __init__(self):
        super().__init__("rooflinekit.roofline")
        self.calls = []

    def decode_throughput(self, model, gpu, batch_size, context_length, tp, **options):
        self.calls.append((model, gpu, batch_size, context_length, tp, options))
        return 1000.0 * np.ones(np.shape(batch_size)) if np.ndim(batch_size) else 1000.0


def test_from_roofline_capacity_arithmetic(monkeypatch, guide_model, lab_gpu):
    stub = _StubRoofline()
    monkeypatch.setattr(capacity, "roofline", stub)
    sh = SelfHosted.from_roofline(guide_model, lab_gpu, tp=8, batch_size=64,
                                  context_length=8192, utilization=0.5,
                                  engineering_monthly=25_000.0, replicas=2)
    assert stub.calls == [(guide_model, lab_gpu, 64, 8192, 8, {"engine": None})]
    # 1,000 tokens/s × 2 replicas × 0.5 × 730 h × 3,600 s
    assert sh.capacity_tokens == pytest.approx(1000 * 2 * 0.5 * 730 * 3600, rel=1e-12)
    assert sh.n_gpus == 16
    assert sh.gpu_hourly == pytest.approx(3.0)  # the lab GPU's catalogue price, prices.toml
    with pytest.raises(ValueError, match="utilization"):
        SelfHosted.from_roofline(guide_model, lab_gpu, tp=8, batch_size=64, context_length=8192,
                                 utilization=0.0, engineering_monthly=0.0)


def test_from_roofline_checks_the_engine_first(monkeypatch, guide_model, lab_gpu):
    # an engine= that is not one raises before any throughput is computed; a misspelt field
    # raises where the Engine is built
    from rooflinekit.roofline import Engine
    stub = _StubRoofline()
    monkeypatch.setattr(capacity, "roofline", stub)
    with pytest.raises(TypeError, match="bandwith_efficiency"):
        Engine(bandwith_efficiency=0.8)
    with pytest.raises(TypeError, match="engine"):
        SelfHosted.from_roofline(guide_model, lab_gpu, tp=8, batch_size=64, context_length=8192,
                                 utilization=0.5, engineering_monthly=0.0,
                                 engine={"bandwidth_efficiency": 0.8})
    with pytest.raises(TypeError, match="engine"):
        SelfHosted.from_roofline(guide_model, lab_gpu, tp=8, batch_size=64, context_length=8192,
                                 utilization=0.5, engineering_monthly=0.0,
                                 engine=[("bandwidth_efficiency", 0.8)])
    assert stub.calls == []
    # the old option is gone
    with pytest.raises(TypeError, match="roofline_options"):
        SelfHosted.from_roofline(guide_model, lab_gpu, tp=8, batch_size=64, context_length=8192,
                                 utilization=0.5, engineering_monthly=0.0,
                                 roofline_options={"bandwidth_efficiency": 0.8})
    stub.calls.clear()
    engine = Engine(bandwidth_efficiency=0.8)
    sh = SelfHosted.from_roofline(guide_model, lab_gpu, tp=8, batch_size=64, context_length=8192,
                                  utilization=0.5, engineering_monthly=0.0, engine=engine)
    # the engine is handed on untouched
    assert stub.calls == [(guide_model, lab_gpu, 64, 8192, 8, {"engine": engine})]
    assert stub.calls[0][5]["engine"] is engine
    assert sh.capacity_tokens == pytest.approx(1000 * 0.5 * 730 * 3600, rel=1e-12)


def test_from_roofline_engine_reaches_the_throughput(guide_model, lab_gpu):
    from rooflinekit.calibrate import Calibration
    from rooflinekit.roofline import Engine, decode_throughput
    engine = Engine(bandwidth_efficiency=0.8, step_overhead=2e-3)
    rate = decode_throughput(guide_model, lab_gpu, 64, 8192, 8, engine=engine)
    sh = SelfHosted.from_roofline(guide_model, lab_gpu, tp=8, batch_size=64, context_length=8192,
                                  utilization=0.6, engineering_monthly=0.0, engine=engine)
    assert sh.capacity_tokens == pytest.approx(float(rate) * 0.6 * 730 * 3600, rel=1e-12)
    # a calibration times it with its decode engine
    cal = Calibration(prefill={"compute_efficiency": 0.3}, decode={"bandwidth_efficiency": 0.8,
                                                                   "step_overhead": 2e-3})
    calibrated = SelfHosted.from_roofline(guide_model, lab_gpu, tp=8, batch_size=64,
                                          context_length=8192, utilization=0.6,
                                          engineering_monthly=0.0, engine=cal)
    assert calibrated.capacity_tokens == sh.capacity_tokens


def test_from_roofline_real_throughput(guide_model, lab_gpu):
    from rooflinekit.roofline import decode_throughput
    rate = decode_throughput(guide_model, lab_gpu, 64, 8192, 8)
    sh = SelfHosted.from_roofline(guide_model, lab_gpu, tp=8, batch_size=64,
                                  context_length=8192, utilization=0.6,
                                  engineering_monthly=25_000.0)
    assert sh.capacity_tokens == pytest.approx(float(rate) * 0.6 * 730 * 3600, rel=1e-12)
    assert sh.monthly_cost == pytest.approx(42_520.0, rel=1e-12)
    # A catalogue Dataset broadcasts over gpu; each GPU's catalogue hourly price is used.
    gpus = catalog.gpus(["guide-lab-80GB", "H100-SXM-80GB"], as_dataset=True)
    sh = SelfHosted.from_roofline(guide_model, gpus, tp=8, batch_size=np.array([16, 64]),
                                  context_length=8192, utilization=0.6,
                                  engineering_monthly=25_000.0)
    assert set(sh.capacity_tokens.dims) == {"gpu", "batch_size"}
    assert sh.capacity_tokens.attrs["units"] == "tokens/month"
    cost = sh.monthly_cost
    assert float(cost.sel(gpu="guide-lab-80GB")) == pytest.approx(42_520.0, rel=1e-12)
    assert float(cost.sel(gpu="H100-SXM-80GB")) == pytest.approx(
        8 * gpu_hourly_price("H100-SXM-80GB") * 730 + 25_000, rel=1e-12)
