"""docs/planning.md, "The month as it runs, at your prices": every number recomputed.

The plan is the page's (the same call as tests/test_docs_planning.py); the profile, the typed
price and the autoscaled fleet are the section's. Hand arithmetic beside each figure.
"""

import re
from pathlib import Path

import pytest

import rooflinekit as rk
from rooflinekit import planning
from rooflinekit.workloads import LogNormal

#: Integration: the planning question's search.
pytestmark = pytest.mark.slow

DOC = (Path(__file__).parents[1] / "docs" / "planning.md").read_text()
SECTION = DOC.split("### The month as it runs, at your prices", 1)[1].split("\n## ", 1)[0]


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.fixture(scope="module")
def answer():
    profile = planning.month_profile("business-hours", 20.0)
    busy = rk.Traffic(20.0, LogNormal(2000, 0.5), LogNormal(300, 0.5), profile=profile)
    slo = rk.SLO(ttft=1.0, itl=0.05, quantile=0.95)
    plan = rk.plan(busy, slo, models="Llama-3.1-70B", gpus=["H100-SXM-80GB", "H200-SXM-141GB"],
                   tp=[1, 2, 4, 8], replicates=20)
    best = rk.cheapest_plan(plan, by=None)
    table = rk.decision_table(best, busy, payg=rk.PayAsYouGo(0.6, 2.4), autoscale=True)
    return profile, best, table


def test_the_month(answer):
    profile, _, table = answer
    text = _flat(SECTION)
    # 22 weekdays × 8 h + 09:00 of the 31st day
    assert "has 177 business hours" in text and int((profile == 72_000).sum()) == 177
    # (177 × 20 + 553 × 2) requests/s-hours × 3,600 s
    assert (177 * 20 + 553 * 2) * 3600 == 16_725_600 == round(table.attrs["monthly_requests"])
    assert "it carries 16,725,600 requests, 3.85e10 tokens — 32% of the peak-all-month" in text
    assert f"{table.attrs['monthly_tokens']:.2e}" == "3.85e+10"
    # the same tokens per request: the share of tokens is that of requests, 16,725,600 of
    # 20 × 730 × 3,600 = 52,560,000
    assert round(100 * table.attrs["monthly_requests"] / (20 * 730 * 3600)) == 32


def test_the_three_costs(answer):
    _, best, table = answer
    assert (str(best["gpu"].values), int(best["tp"]), int(best["gpus"]),
            float(best["gpu_hourly"])) == ("H100-SXM-80GB", 8, 24, 2.99)
    rows = {"self-hosted": (52_385, "1.36"), "self-hosted, autoscaled": (25_929, "0.67"),
            "pay-as-you-go": (32_138, "0.84")}
    for option, (cost, per_million) in rows.items():
        at = table.sel(option=option)
        assert round(float(at["monthly_cost"])) == cost, option
        assert f"{float(at['cost_per_million_tokens']):.2f}" == per_million, option
        assert f"| {cost:,} | {per_million} |" in SECTION, option
    # fixed: 24 GPUs × $2.99 × 730 h
    assert 24 * 2.99 * 730 == pytest.approx(52_384.8, rel=1e-12)
    # autoscaled: ⌈24 / 8.96⌉ = 3 replicas busy, ⌈2.4 / 8.96⌉ = 1 quiet, 8 GPUs each
    rate = float(best["max_rate"])
    busy, quiet = -(-24 // rate), -(-2.4 // rate)
    assert (busy, quiet) == (3, 1)
    gpu_hours = (177 * 3 + 553 * 1) * 8
    assert gpu_hours == 8_672 and "8,672 GPU-hours instead of 17,520" in _flat(SECTION)
    assert 24 * 730 == 17_520
    assert float(table["monthly_cost"].sel(option="self-hosted, autoscaled")) == \
        pytest.approx(gpu_hours * 2.99, rel=1e-12)
    # pay-as-you-go: blended 0.6 (1 − f) + 2.4 f at the traffic's output share f
    f = table.attrs["output_fraction"]
    blended = float(rk.blended_price(rk.PayAsYouGo(0.6, 2.4), f))
    assert f"{blended:.3f}" == "0.835" and "blended $0.835" in SECTION
    assert str(table["choice"].values) == "self-hosted, autoscaled"


def test_where_it_flips(answer):
    _, best, table = answer
    text = _flat(SECTION)
    at = table.sel(option="pay-as-you-go")
    fleet, payg = float(best["monthly_cost"]), float(at["monthly_cost"])
    assert f"{float(at['break_even_tokens']):.2e}" == "6.27e+10"
    assert "above 6.27e10 tokens a month" in text
    # h* = C_payg / (24 × 730) (no engineering line)
    assert float(at["tie_gpu_hourly"]) == pytest.approx(payg / (24 * 730), rel=1e-12)
    assert f"{float(at['tie_gpu_hourly']):.2f}" == "1.83" and "below $1.83 a GPU-hour" in text
    tie = float(at["tie_payg_blended"])
    assert tie == pytest.approx(fleet / table.attrs["monthly_tokens"] * 1e6, rel=1e-12)
    blended = payg / table.attrs["monthly_tokens"] * 1e6
    assert (f"{tie:.2f}", f"{tie / blended:.2f}") == ("1.36", "1.63")
    assert "above a blended $1.36 per 1M tokens (×1.63 both list prices)" in text
    assert float(at["tie_engineering_monthly"]) < 0 and "no engineering line" in text


def test_each_replicate_prices_its_own_fleets(answer):
    _, best, table = answer
    text = _flat(SECTION)
    rates = best["replicate_max_rate"].values
    # ⌈24 / r⌉ = 3 replicas in a busy hour from 8 to 12 requests/s a replica, 4 below 8
    assert all(r < 12 for r in rates)
    fast, slow = sorted(r for r in rates if r >= 8), sorted(r for r in rates if r < 8)
    assert (len(fast), len(slow)) == (18, 2)
    assert f"18 of the 20 serve at least 8 requests/s a replica ({fast[0]:.2f}–" \
           f"{fast[-1]:.2f}) and run 3 replicas in business hours; the other two " \
           f"({slow[0]:.2f} and {slow[1]:.2f} requests/s) run 4" in text
    # one under 8: fixed 4 × 8 GPUs × $2.99 × 730 h; autoscaled (177 × 4 + 553) × 8 GPU-hours
    # × $2.99, still under pay-as-you-go's $32,138
    fixed, scaled = 4 * 8 * 2.99 * 730, (177 * 4 + 553) * 8 * 2.99
    assert (round(fixed), round(scaled)) == (69_846, 30_163)
    assert "run 4 — 32 GPUs, $69,846, kept all month; $30,163 autoscaled, still under " \
           "pay-as-you-go" in text
    # the 10th-percentile rate is above 8: the band's dear end is the median's 3 replicas,
    # 24 × $2.99 × 730 h fixed and (177 × 3 + 553) × 8 GPU-hours × $2.99 autoscaled
    low = float(best["max_rate_low"])
    assert 8 <= low < 12 and f"10th-percentile rate, {low:.2f} requests/s" in text
    assert float(table["monthly_cost_high"].sel(option="self-hosted")) == \
        pytest.approx(24 * 2.99 * 730, rel=1e-12)
    assert float(table["monthly_cost_high"].sel(option="self-hosted, autoscaled")) == \
        pytest.approx((177 * 3 + 553) * 8 * 2.99, rel=1e-12)
    # the autoscaled fleet wins in every replicate
    assert float(table["choice_share"].sel(option="self-hosted, autoscaled")) == 1.0
    assert "(`choice_share` 1.0)" in text


def test_the_flip_points_and_their_plot(answer):
    _, _, table = answer
    assert "`table[\"flip_against\"]`" in SECTION
    assert "`rk.plotting.plot_decision_flips(table)`" in SECTION
    # the autoscaled fleet is chosen: the flips are against the cheapest other option
    assert str(table["flip_against"].values) == "pay-as-you-go"
    at = table.sel(option="pay-as-you-go")
    assert f"{float(at['tie_gpu_hourly']):.2f}" == "1.83" and float(table["gpu_hourly"]) == 2.99
    assert f"{float(at['break_even_tokens']):.2e}" == "6.27e+10"


def test_a_profile_file_as_the_page_says(tmp_path):
    text = _flat(SECTION)
    assert "`rk.planning.read_profile(path, period=...)`" in text
    # 96 quarter-hours are a day; 7 daily lines a week: both repeat over the month
    day = tmp_path / "day.csv"
    day.write_text("period,rate\n" + "15min,1\n" * 96)
    assert planning.read_profile(day).shape == (2920,)
    week = tmp_path / "week.csv"
    week.write_text("rate\n" + "1\n" * 7)
    assert planning.read_profile(week, period="1d").shape == (730,)
    assert "a 7-minute period is refused" in text
    with pytest.raises(ValueError, match="period"):
        planning.read_profile(week, period="7min")
