"""Prefix caching and speculative decoding in the economics."""

import numpy as np
import pytest
import xarray as xr

import rooflinekit as rk
from rooflinekit import catalog

M = catalog.model("Llama-3.1-70B")
G = catalog.gpu("H100-SXM-80GB")
D = catalog.model("Llama-3.1-8B")
PAYG = rk.PayAsYouGo(3.0, 12.0, cached_input_per_mtok=0.3)
PROV = rk.Provisioned(12_000.0, 4e9)


def test_payg_request_by_hand():
    # 10,000 prompt tokens, 40% cached, 500 out: 6,000 × $3 + 4,000 × $0.30 + 500 × $12
    assert rk.payg_cost_per_request(PAYG, 10_000, 500, prefix_share=0.4) == pytest.approx(
        (6_000 * 3.0 + 4_000 * 0.3 + 500 * 12.0) / 1e6)
    assert rk.payg_cost_per_request(PAYG, 10_000, 500) == pytest.approx(
        (10_000 * 3.0 + 500 * 12.0) / 1e6)


def test_payg_without_a_cached_price_refuses_hits():
    with pytest.raises(ValueError, match="prefix_share"):
        rk.payg_cost_per_request(rk.PayAsYouGo(3.0, 12.0), 1000, 10, prefix_share=0.5)
    assert rk.payg_cost_per_request(rk.PayAsYouGo(3.0, 12.0), 1000, 10) > 0


def test_self_hosted_request_is_its_prefill_and_its_share_of_decode():
    price = 2.0
    want = 4 * price / 3600 * (rk.prefill_time(M, G, 8000, 4, cached_tokens=4000)
                               + rk.roofline.generation_time(M, G, 299, 8000, 16, 4) / 16)
    got = rk.cost_per_request(M, G, 8000, 300, 16, 4, prefix_share=0.5, hourly_price=price)
    assert got == pytest.approx(want, rel=1e-12)


def test_a_hit_saves_prefill_compute_so_a_request_costs_less():
    share = xr.DataArray([0.0, 0.25, 0.5, 0.75, 1.0], dims="prefix_share")
    cost = rk.cost_per_request(M, G, 16_000, 200, 32, 4, prefix_share=share)
    assert cost.dims == ("prefix_share",) and cost.attrs["units"] == "USD/request"
    assert np.all(np.diff(cost.values) < 0)


def test_break_even_without_hits_is_unchanged():
    assert rk.break_even(PROV, PAYG, 0.1, prefix_share=0.0) == rk.break_even(PROV, PAYG, 0.1)
    assert rk.break_even(PROV, rk.PayAsYouGo(3.0, 12.0), 0.1).utilization == pytest.approx(
        0.7692307692307692)


def test_break_even_over_the_hit_share():
    share = xr.DataArray([0.0, 0.5, 0.9], dims="prefix_share")
    free = rk.break_even(PROV, PAYG, 0.1, prefix_share=share, cached_input_weight=0.0)
    full = rk.break_even(PROV, PAYG, 0.1, prefix_share=share)
    # cheaper pay-as-you-go: a commitment needs more volume to pay for itself
    assert np.all(np.diff(full.tokens.values) > 0)
    np.testing.assert_allclose(free.tokens, full.tokens)
    # cached tokens that consume no capacity lower the utilisation it takes
    assert np.all(free.utilization.values[1:] < full.utilization.values[1:])
    # by hand at h = 0.5, c = 0: blended (3·0.5 + 0.3·0.5)·0.9 + 12·0.1 = 2.685
    tokens = 12_000 / 2.685 * 1e6
    assert float(free.tokens[1]) == pytest.approx(tokens)
    assert float(free.utilization[1]) == pytest.approx(tokens / 4e9 * (0.9 * 0.5 + 0.1))


def test_break_even_refuses_hits_without_a_cached_price():
    with pytest.raises(ValueError, match="prefix_share"):
        rk.break_even(PROV, rk.PayAsYouGo(3.0, 12.0), 0.1, prefix_share=0.2)
    with pytest.raises(ValueError, match="cached_input_weight"):
        rk.break_even(PROV, PAYG, 0.1, prefix_share=0.2, cached_input_weight=1.5)


def test_speculation_costs_less_where_it_pays():
    batch = np.array([1, 8, 64])
    plain = rk.cost_per_million_tokens(M, G, batch, 4096, 4)
    spec = rk.speculative_cost_per_million_tokens(M, G, batch, 4096, 4, draft=D,
                                                  draft_tokens=4, acceptance=0.8)
    speedup = rk.speculative_speedup(M, G, batch, 4096, 4, draft=D, draft_tokens=4,
                                     acceptance=0.8)
    np.testing.assert_allclose(spec, plain / speedup, rtol=1e-12)


def test_no_drafts_is_decoding_without_speculation():
    assert rk.speculative_cost_per_million_tokens(
        M, G, 8, 4096, 4, draft=0.05, draft_tokens=0, acceptance=0.5) == pytest.approx(
        rk.cost_per_million_tokens(M, G, 8, 4096, 4), rel=1e-12)


def test_the_draft_weights_come_off_the_kv_budget():
    fits = rk.max_concurrent_sequences(M, G, 8192, 4)
    with_draft = rk.max_concurrent_sequences(M, G, 8192, 4,
                                             draft_weight_bytes=rk.weight_bytes(D))
    assert with_draft < fits
    batch = np.array([with_draft, with_draft + 1])
    cost = rk.speculative_cost_per_million_tokens(M, G, batch, 8192, 4, draft="Llama-3.1-8B",
                                                  draft_tokens=3, acceptance=0.7)
    assert np.isfinite(cost[0]) and np.isinf(cost[1])
    # a draft head holds no weights of its own here
    head = rk.speculative_cost_per_million_tokens(M, G, batch, 8192, 4, draft=0.05,
                                                  draft_tokens=3, acceptance=0.7)
    assert np.all(np.isfinite(head))


@pytest.mark.parametrize("kwargs, match", [
    ({"acceptance": 1.5}, "acceptance"), ({"draft_tokens": -1}, "draft_tokens"),
    ({"draft_tokens": 1.5}, "draft_tokens"), ({"reserve": 1.0}, "reserve"),
    ({"hourly_price": -1.0}, "hourly_price"), ({"draft": 0.0}, "draft"),
])
def test_speculative_cost_refuses_bad_input(kwargs, match):
    args = {"draft": 0.05, "draft_tokens": 4, "acceptance": 0.8, **kwargs}
    with pytest.raises(ValueError, match=match):
        rk.speculative_cost_per_million_tokens(M, G, 8, 4096, 4, **args)


def test_a_gpu_without_a_price_needs_one():
    nameless = rk.GPU("x", memory_bytes=80e9, hbm_bandwidth=3e12, peak_flops=1e15)
    with pytest.raises(ValueError, match="hourly_price"):
        rk.cost_per_request(M, nameless, 1000, 10, tp=1)
    assert rk.cost_per_request(M, nameless, 1000, 10, tp=1, hourly_price=1.0) > 0


def test_an_engine_reaches_every_step_of_a_request():
    """``engine=`` goes to the prefill and the decode steps alike; a calibration gives each
    phase its own engine."""
    price = 2.0
    engine = rk.Engine(compute_efficiency=0.5, bandwidth_efficiency=0.8, step_overhead=1e-3)
    want = 4 * price / 3600 * (
        rk.prefill_time(M, G, 8000, 4, cached_tokens=4000, engine=engine)
        + rk.roofline.generation_time(M, G, 299, 8000, 16, 4, engine=engine) / 16)
    got = rk.cost_per_request(M, G, 8000, 300, 16, 4, prefix_share=0.5, hourly_price=price,
                              engine=engine)
    assert got == pytest.approx(want, rel=1e-12)
    assert got > rk.cost_per_request(M, G, 8000, 300, 16, 4, prefix_share=0.5,
                                     hourly_price=price)
    from rooflinekit.calibrate import Calibration
    cal = Calibration(prefill={"compute_efficiency": 0.4}, decode={"bandwidth_efficiency": 0.7})
    want = 4 * price / 3600 * (
        rk.prefill_time(M, G, 8000, 4, engine=cal.engine_for("prefill"))
        + rk.roofline.generation_time(M, G, 299, 8000, 16, 4,
                                      engine=cal.engine_for("decode")) / 16)
    assert rk.cost_per_request(M, G, 8000, 300, 16, 4, hourly_price=price, engine=cal) == \
        pytest.approx(want, rel=1e-12)


def test_an_engine_reaches_the_speculative_cost():
    batch = np.array([1, 8, 64])
    engine = rk.Engine(bandwidth_efficiency=0.7, step_overhead=2e-3)
    plain = rk.cost_per_million_tokens(M, G, batch, 4096, 4, engine=engine)
    spec = rk.speculative_cost_per_million_tokens(M, G, batch, 4096, 4, draft=D, draft_tokens=4,
                                                  acceptance=0.8, engine=engine)
    speedup = rk.speculative_speedup(M, G, batch, 4096, 4, draft=D, draft_tokens=4,
                                     acceptance=0.8, engine=engine)
    np.testing.assert_allclose(spec, plain / speedup, rtol=1e-12)


@pytest.mark.parametrize("engine", [{"compute_efficiency": 0.5}, "ideal", 0.5])
def test_an_engine_that_is_not_one_is_refused(engine):
    with pytest.raises(TypeError, match="engine"):
        rk.cost_per_request(M, G, 1000, 10, engine=engine)
    with pytest.raises(TypeError, match="engine"):
        rk.speculative_cost_per_million_tokens(M, G, 8, 4096, 4, draft=0.05, draft_tokens=4,
                                               acceptance=0.8, engine=engine)
    with pytest.raises(TypeError, match="roofline_options"):
        rk.cost_per_request(M, G, 1000, 10, roofline_options={"compute_efficiency": 0.5})
