"""Issue 30: the autoscaled fleet priced per replicate, so that its band and ``choice_share``
count each draw's own fleet (not the median plan's fleet in every replicate).

The plan is a real one (Llama-3.1-8B on H100-SXM-80GB, TP 1, at $2.49/GPU-hour with a $500
engineering line); its replicates' max rates are then set by hand to 5, 8, 13 and 20
requests/s per replica (median 10.5, band 5 to 20) so that every fleet is a hand count.

Reference, by hand: the business-hours month of ``month_profile`` has 177 hours at 20
requests/s and 553 at 2 (tests/test_month_profile.py), so with 20 % headroom a fleet needs
``⌈24 / r⌉`` replicas in a busy hour and ``max(1, ⌈2.4 / r⌉)`` in a quiet one (the plan's own
rule, ``⌈rate × (1 + headroom) / max_rate⌉``); a replica is one GPU; the month costs the
GPU-hours × 2.49 + 500. Pay-as-you-go at $0.10 / $0.40 per 1M tokens on 16,725,600 requests
of 1,000 + 200 tokens: blended 0.1 × 5/6 + 0.4 × 1/6 = 0.15 USD per 1M tokens.
Exact (rel 1e-12).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

import rooflinekit as rk
from rooflinekit import planning

RATES = (5.0, 8.0, 13.0, 20.0)


@pytest.fixture(scope="module")
def drawn():
    traffic = rk.Traffic(20.0, 1000, 200)
    plan = rk.plan(traffic, rk.SLO(ttft=1.0, itl=0.05), models="Llama-3.1-8B",
                   gpus="H100-SXM-80GB", tp=1, max_num_seqs=64, replicates=2, requests=100,
                   engineering_monthly=500.0, prices={"H100-SXM-80GB": 2.49})
    best = rk.cheapest_plan(plan, by=None).drop_vars("replicate_max_rate")
    best = best.drop_dims("replicate", errors="ignore")
    best["replicate_max_rate"] = xr.DataArray(np.array(RATES), dims=("replicate",))
    best["max_rate"], best["max_rate_low"], best["max_rate_high"] = 10.5, 5.0, 20.0
    # the fixed fleet at the median rate 10.5: ⌈24 / 10.5⌉ = 3 replicas, as the plan counts
    best["replicas"], best["gpus"] = 3, 3
    best["gpu_monthly_cost"] = 3 * 2.49 * 730.0
    best["monthly_cost"] = 3 * 2.49 * 730.0 + 500.0
    best["monthly_cost_low"] = 2 * 2.49 * 730.0 + 500.0          # ⌈24 / 20⌉ = 2
    best["monthly_cost_high"] = 5 * 2.49 * 730.0 + 500.0         # ⌈24 / 5⌉ = 5
    profile = planning.month_profile("business-hours", 20.0)
    return best, rk.Traffic(20.0, 1000, 200, profile=profile)


def _autoscaled(rate: float) -> float:
    busy, quiet = math.ceil(24.0 / rate), max(1, math.ceil(2.4 / rate))
    return (177 * busy + 553 * quiet) * 2.49 + 500.0


def test_hand_counts():
    # 5: 5 busy, 1 quiet; 8: 3, 1; 13: 2, 1; 20: 2, 1 (GPU-hours 1,438, 1,084, 907, 907)
    assert [_autoscaled(r) for r in RATES] == pytest.approx(
        [1438 * 2.49 + 500, 1084 * 2.49 + 500, 907 * 2.49 + 500, 907 * 2.49 + 500], rel=1e-12)


def test_the_autoscaled_band_is_its_fleet_at_the_ends_of_the_rate_band(drawn):
    best, traffic = drawn
    table = rk.decision_table(best, traffic, autoscale=True)
    at = table.sel(option="self-hosted, autoscaled")
    assert float(at["monthly_cost"]) == pytest.approx(_autoscaled(10.5), rel=1e-12)
    assert float(at["monthly_cost_low"]) == pytest.approx(_autoscaled(20.0), rel=1e-12)
    assert float(at["monthly_cost_high"]) == pytest.approx(_autoscaled(5.0), rel=1e-12)
    fixed = table.sel(option="self-hosted")
    assert float(fixed["monthly_cost_low"]) == pytest.approx(2 * 2.49 * 730 + 500, rel=1e-12)
    assert float(fixed["monthly_cost_high"]) == pytest.approx(5 * 2.49 * 730 + 500, rel=1e-12)
    assert table["monthly_cost_low"].attrs["units"] == "USD/month"


def test_choice_share_counts_each_replicates_autoscaled_fleet(drawn):
    best, traffic = drawn
    payg = rk.PayAsYouGo(0.1, 0.4)
    table = rk.decision_table(best, traffic, payg=payg, autoscale=True)
    tokens = (177 * 20 + 553 * 2) * 3600 * 1200
    payg_cost = tokens * 0.15 / 1e6                                  # 3,010.608 USD
    assert float(table["monthly_cost"].sel(option="pay-as-you-go")) == \
        pytest.approx(payg_cost, rel=1e-12)
    # each replicate: its fixed fleet ⌈24 / r⌉ GPUs all month, its autoscaled fleet, payg
    wins = []
    for r in RATES:
        costs = {"self-hosted": math.ceil(24.0 / r) * 2.49 * 730 + 500,
                 "self-hosted, autoscaled": _autoscaled(r), "pay-as-you-go": payg_cost}
        wins.append(min(costs, key=costs.get))
    # rates 5 and 8: pay-as-you-go (4,080.62 and 3,199.16 autoscaled); 13 and 20: autoscaled
    assert wins == ["pay-as-you-go", "pay-as-you-go", "self-hosted, autoscaled",
                    "self-hosted, autoscaled"]
    for option in ("self-hosted", "self-hosted, autoscaled", "pay-as-you-go"):
        assert float(table["choice_share"].sel(option=option)) == \
            pytest.approx(wins.count(option) / len(wins), rel=1e-12), option
    # the median fleet (3,199.16 at 10.5 requests/s) alone would lose to pay-as-you-go in
    # every replicate: the per-replicate count is what moves the share
    assert _autoscaled(10.5) > payg_cost
    assert str(table["choice"].values) == "pay-as-you-go"


def test_a_replicate_that_serves_nothing_is_never_chosen(drawn):
    best, traffic = drawn
    none = best.copy()
    none["replicate_max_rate"] = xr.DataArray(np.array([0.0, 8.0, 13.0, 20.0]),
                                              dims=("replicate",))
    table = rk.decision_table(none, traffic, payg=rk.PayAsYouGo(0.1, 0.4), autoscale=True)
    # replicate 0 serves nothing: pay-as-you-go there; 8: pay-as-you-go; 13, 20: autoscaled
    assert float(table["choice_share"].sel(option="pay-as-you-go")) == 0.5
    assert float(table["choice_share"].sel(option="self-hosted, autoscaled")) == 0.5
