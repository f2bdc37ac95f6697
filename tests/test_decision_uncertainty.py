"""The decision across the plan's draws: how often each option wins, and the break-even band.

Reference: each replicate's fleet by hand, with the plan's own rule (⌈peak × (1 + headroom) /
rate⌉ replicas of tp GPUs, 730 h a month at the GPU's price), against the fixed pay-as-you-go
bill; exact (rel 1e-12).
"""

import math

import numpy as np
import pytest

import rooflinekit as rk
from rooflinekit.workloads import LogNormal

TRAFFIC = rk.Traffic(20.0, LogNormal(2000, 0.5), LogNormal(300, 0.5))
SLO = rk.SLO(ttft=1.0, itl=0.05, quantile=0.95)


@pytest.fixture(scope="module")
def best():
    plan = rk.plan(TRAFFIC, SLO, models="Llama-3.1-70B", gpus="H200-SXM-141GB", tp=2,
                   max_num_seqs=64, replicates=12, requests=300)
    return plan, rk.cheapest_plan(plan, by=None)


def test_the_choice_keeps_each_replicates_rate(best):
    plan, cheapest = best
    np.testing.assert_array_equal(cheapest["replicate_max_rate"].values,
                                  plan["replicate_max_rate"].values.ravel())


@pytest.mark.parametrize("prices", [(0.6, 2.4), (0.5, 2.0), (0.3, 1.2), (5.0, 20.0)])
def test_choice_share_is_each_replicates_cheapest_by_hand(best, prices):
    _, cheapest = best
    table = rk.decision_table(cheapest, TRAFFIC, payg=rk.PayAsYouGo(*prices))
    rates = cheapest["replicate_max_rate"].values
    need = 20.0 * 1.2
    hourly = float(cheapest["gpu_hourly"])
    self_costs = [math.ceil(need / r) * 2 * hourly * 730.0 for r in rates]
    payg = float(table["monthly_cost"].sel(option="pay-as-you-go"))
    share = sum(c < payg for c in self_costs) / len(self_costs)
    assert float(table["choice_share"].sel(option="self-hosted")) == pytest.approx(share,
                                                                                  rel=1e-12)
    assert float(table["choice_share"].sum()) == pytest.approx(1.0, rel=1e-12)
    # the median fleet's cost is the plan's, by the same rule
    median_rate = float(cheapest["max_rate"])
    assert float(table["monthly_cost"].sel(option="self-hosted")) == pytest.approx(
        math.ceil(need / median_rate) * 2 * hourly * 730.0, rel=1e-12)


def test_the_break_even_band_brackets_its_middle(best):
    _, cheapest = best
    table = rk.decision_table(cheapest, TRAFFIC, payg=rk.PayAsYouGo(0.6, 2.4))
    at = table.sel(option="pay-as-you-go")
    assert float(at["break_even_tokens_low"]) <= float(at["break_even_tokens"]) <= \
        float(at["break_even_tokens_high"])
    # fewer GPUs (the band's fast end) break even at a lower volume: cost / blended price
    blended = float(rk.blended_price(rk.PayAsYouGo(0.6, 2.4), table.attrs["output_fraction"],
                                     prompt_tokens=cheapest.attrs["mean_prompt_tokens"]))
    low_cost = float(cheapest["gpus_low"]) * float(cheapest["gpu_hourly"]) * 730.0
    assert float(at["break_even_tokens_low"]) == pytest.approx(low_cost / blended * 1e6,
                                                               rel=1e-9)
