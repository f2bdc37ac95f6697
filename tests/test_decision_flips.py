"""Issue 30: "where the decision flips" — the decision table's ``flip_against`` option and its tie
points, the command line's lines built from them, and the plot helper drawing them.

Reference, by hand: every request alike (1,000 + 200 tokens) at 20 requests/s all month is
20 × 730 × 3,600 × 1,200 = 63,072,000,000 tokens; pay-as-you-go at $0.60 / $2.40 per 1M
tokens blends to 0.6 × 5/6 + 2.4 × 1/6 = 0.9 USD per 1M, so it costs 56,764.8 USD/month. The
fleet of n GPUs at $2.49/GPU-hour with a $500 engineering line costs n × 2.49 × 730 + 500.
The ties (decision_table Notes): h* = (C_payg − 500) / (730 n), E* = 500 + C_payg − C_fleet,
V* = C_fleet / 0.9 × 1e6, c* = C_fleet / V × 1e6. Exact (rel 1e-12).
"""

from __future__ import annotations

import json

import matplotlib
import numpy as np
import pytest

import rooflinekit as rk
from helpers import run_cli
from rooflinekit.cli.plan import decision_flips

matplotlib.use("Agg")

VOLUME = 20 * 730 * 3600 * 1200
PAYG_COST = VOLUME * 0.9 / 1e6


@pytest.fixture(scope="module")
def best():
    traffic = rk.Traffic(20.0, 1000, 200)
    plan = rk.plan(traffic, rk.SLO(ttft=1.0, itl=0.05), models="Llama-3.1-8B",
                   gpus="H100-SXM-80GB", tp=1, max_num_seqs=64, replicates=2, requests=100,
                   engineering_monthly=500.0, prices={"H100-SXM-80GB": 2.49})
    return traffic, rk.cheapest_plan(plan, by=None)


def test_hand_numbers():
    assert VOLUME == 63_072_000_000 and PAYG_COST == pytest.approx(56_764.8, rel=1e-12)


def test_flip_points_by_hand(best):
    traffic, cheapest = best
    table = rk.decision_table(cheapest, traffic, payg=rk.PayAsYouGo(0.6, 2.4))
    n = int(cheapest["gpus"])
    fleet = n * 2.49 * 730 + 500
    assert str(table["choice"].values) == "self-hosted"
    # self-hosting chosen: the flips are against the cheapest admissible other option
    assert str(table["flip_against"].values) == "pay-as-you-go"
    at = table.sel(option="pay-as-you-go")
    assert float(at["tie_gpu_hourly"]) == pytest.approx((PAYG_COST - 500) / (730 * n),
                                                        rel=1e-12)
    assert float(table["gpu_hourly"]) == 2.49
    assert float(at["tie_engineering_monthly"]) == pytest.approx(500 + PAYG_COST - fleet,
                                                                 rel=1e-12)
    assert float(at["break_even_tokens"]) == pytest.approx(fleet / 0.9 * 1e6, rel=1e-12)
    assert float(at["tie_payg_blended"]) == pytest.approx(fleet / VOLUME * 1e6, rel=1e-12)
    # the command line's numbers are the table's, each with its value now
    flips = decision_flips(table)
    assert flips["against"] == "pay-as-you-go"
    assert flips["gpu_hourly"] == float(at["tie_gpu_hourly"]) and flips["gpu_hourly_now"] == 2.49
    assert flips["engineering_monthly_now"] == 500.0
    assert flips["volume_tokens_now"] == pytest.approx(VOLUME, rel=1e-12)
    assert flips["payg_blended_now"] == pytest.approx(0.9, rel=1e-12)


def test_against_the_chosen_option_when_it_is_not_the_fleet(best):
    traffic, cheapest = best
    # at $0.01 / $0.04 per 1M, pay-as-you-go (630.72 USD) is chosen: the flips are against it
    table = rk.decision_table(cheapest, traffic, payg=rk.PayAsYouGo(0.01, 0.04))
    assert str(table["choice"].values) == "pay-as-you-go"
    assert str(table["flip_against"].values) == "pay-as-you-go"
    assert float(table["monthly_cost"].sel(option="pay-as-you-go")) == \
        pytest.approx(VOLUME * 0.015 / 1e6, rel=1e-12)


def test_nothing_flips_without_a_rival(best):
    traffic, cheapest = best
    table = rk.decision_table(cheapest, traffic)
    assert str(table["flip_against"].values) == "" and decision_flips(table) == {}


def test_the_command_line_prints_the_same_flips(capsys, best):
    _, cheapest = best
    code, out, err = run_cli(capsys, "plan", "llama-3.1-8b", "--gpus", "h100", "--rate", "20",
                             "--prompt-mean", "1000", "--output-mean", "200", "--ttft", "1",
                             "--itl", "0.05", "--max-num-seqs", "64", "--replicates", "2",
                             "--requests", "100", "--engineering-monthly", "500",
                             "--gpu-hourly", "h100=2.49", "--payg-price", "0.6", "2.4",
                             "--json")
    assert code == 0, err
    flips = json.loads(out)["decision"]["flips"]
    n = int(cheapest["gpus"])
    assert flips["gpu_hourly"] == pytest.approx((PAYG_COST - 500) / (730 * n), rel=1e-9)
    assert flips["gpu_hourly_now"] == 2.49
    assert any(line.startswith("GPU-hour price: self-hosting is cheaper below USD")
               for line in flips["lines"])


def test_the_plot_draws_each_flip_at_its_ratio_to_now(best):
    from rooflinekit import plotting
    traffic, cheapest = best
    table = rk.decision_table(cheapest, traffic, payg=rk.PayAsYouGo(0.6, 2.4))
    flips = decision_flips(table)
    ax = plotting.plot_decision_flips(table)
    diamonds = [line for line in ax.get_lines() if line.get_marker() == "D"]
    expected = [flips[k] / flips[f"{k}_now"] for k in
                ("volume_tokens", "gpu_hourly", "engineering_monthly", "payg_blended")]
    np.testing.assert_allclose([d.get_xdata()[0] for d in diamonds], expected, rtol=1e-12)
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "monthly volume", "GPU-hour price", "engineering line", "pay-as-you-go price (blended)"]
    assert ax.get_xscale() == "log"
    with pytest.raises(ValueError, match="cannot flip"):
        plotting.plot_decision_flips(rk.decision_table(cheapest, traffic))
    with pytest.raises(TypeError, match="table"):
        plotting.plot_decision_flips(cheapest)
