"""Issue 30: the month as traffic really runs. Built-in shapes and a CSV of rates as requests per
hour; one unit for profiles (requests per period, tokens from the traffic's lengths); a fleet
from a plan (``SelfHosted.from_plan``); the fleet autoscaled hour by hour; the command line's
``--profile``, ``--autoscale`` and ``--min-replicas``.

References are hand counts of the 730-hour month (30 days and 10 hours, starting on a Monday)
and the plan's own replica rule ``⌈rate × (1 + headroom) / max_rate⌉``; exact (rel 1e-12)
unless stated.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import rooflinekit as rk
from helpers import run_cli
from rooflinekit import planning

#: Every request alike: 1,200 tokens each.
TRAFFIC = rk.Traffic(20.0, 1000, 200)
SLO = rk.SLO(ttft=1.0, itl=0.05)


run = run_cli


PLAN = ["plan", "llama-3.1-8b", "--gpus", "h100", "--rate", "20", "--prompt-mean", "1000",
        "--output-mean", "200", "--ttft", "1", "--itl", "0.05", "--replicates", "2",
        "--requests", "100"]


# -- shapes ---------------------------------------------------------------------------------------

def test_business_hours_by_hand():
    profile = planning.month_profile("business-hours", 20.0)
    assert profile.shape == (730,)
    # 22 weekdays (4 weeks of 5, then Monday and Tuesday) × 8 h, and 09:00 of day 31 (a
    # Wednesday; the month ends at 10:00): 177 peak hours of 20 × 3,600 requests
    assert int((profile == 72_000).sum()) == 177
    assert int((profile == 7_200).sum()) == 730 - 177
    assert profile.sum() == pytest.approx((177 + 0.1 * 553) * 72_000, rel=1e-12)
    # Monday 09:00 is busy, Monday 08:00 and Saturday noon are not
    assert profile[9] == 72_000 and profile[8] == 7_200 and profile[5 * 24 + 12] == 7_200


def test_flat_and_diurnal_by_hand():
    flat = planning.month_profile("flat", 2.0)
    np.testing.assert_array_equal(flat, np.full(730, 7_200.0))
    diurnal = planning.month_profile("diurnal", 1.0, off_peak=0.3, peak_hour=14)
    # the peak hour at the rate, 12 hours later the trough at 0.3 of it, 6 hours off the mean
    assert diurnal[14] == pytest.approx(3_600.0, rel=1e-12)
    assert diurnal[2] == pytest.approx(0.3 * 3_600.0, rel=1e-12)
    assert diurnal[20] == pytest.approx(0.65 * 3_600.0, rel=1e-12)


@pytest.mark.parametrize("kwargs, name", [
    ({"shape": "weekend"}, "shape"), ({"peak_rate": 0}, "peak_rate"),
    ({"peak_rate": math.nan}, "peak_rate"), ({"off_peak": 1.5}, "off_peak"),
    ({"off_peak": -0.1}, "off_peak"), ({"start_hour": 17, "end_hour": 9}, "start_hour"),
    ({"workdays": 8}, "workdays"), ({"peak_hour": 24}, "peak_hour"),
])
def test_month_profile_refuses_bad_input(kwargs, name):
    args = {"shape": "business-hours", "peak_rate": 1.0, **kwargs}
    with pytest.raises(ValueError, match=name):
        planning.month_profile(args.pop("shape"), args.pop("peak_rate"), **args)


# -- a CSV of rates --------------------------------------------------------------------------------

def test_read_profile_repeats_a_day(tmp_path):
    path = tmp_path / "day.csv"
    rates = [1.0] * 9 + [10.0] * 8 + [1.0] * 7          # requests/s, one an hour
    path.write_text("hour,rate\n" + "".join(f"{h},{r}\n" for h, r in enumerate(rates)))
    profile = planning.read_profile(path)
    assert profile.shape == (730,)
    np.testing.assert_array_equal(profile[:24], np.array(rates) * 3600)
    np.testing.assert_array_equal(profile[24:48], profile[:24])
    # 30 whole days and the first 10 hours of a 31st: 30 × (9 + 80 + 7) + 9 + 10 requests/s-h
    assert profile.sum() == pytest.approx((30 * 96 + 19) * 3600, rel=1e-12)


@pytest.mark.parametrize("text, where", [("1\n-2\n", "line 2"), ("1\nnan\n", "line 2"),
                                         ("1\ninf\n", "line 2"), ("1\nlots\n", "line 2"),
                                         ("", "no rates"), ("0\n0\n", "every rate is 0")])
def test_read_profile_refuses_bad_rates(tmp_path, text, where):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=where):
        planning.read_profile(path)


def test_cli_refuses_a_bad_profile_in_one_line(capsys, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("rate\n1\n-2\n")
    code, out, err = run(capsys, *PLAN, "--profile", str(path))
    assert code == 2 and err.count("\n") == 1 and "--profile" in err and "line 3" in err
    path.write_text("rate\n1\nnan\n")
    code, out, err = run(capsys, *PLAN, "--profile", str(path))
    assert code == 2 and "--profile" in err
    path.write_text("rate\n25\n")                        # above --rate 20
    code, out, err = run(capsys, *PLAN, "--profile", str(path))
    assert code == 2 and "--rate" in err
    for extra in (["--autoscale"], ["--spare-replicas", "-1"], ["--off-peak", "2"],
                  ["--business-hours", "17-9"]):
        code, out, err = run(capsys, *PLAN, *extra)
        assert code == 2 and err.count("\n") == 1, extra


# -- one unit: requests per period, tokens from the lengths ---------------------------------------

def test_token_demand_feeds_the_spillover_plan():
    profile = planning.month_profile("business-hours", 20.0)
    traffic = rk.Traffic(20.0, 1000, 200, profile=profile)
    demand = traffic.token_demand(1200)
    assert demand.dims == ("time",) and demand.attrs["units"] == "tokens"
    np.testing.assert_array_equal(demand.values, profile * 1200)
    assert float(demand.sum()) == pytest.approx(traffic.monthly_requests * 1200, rel=1e-12)
    # the spillover formulas take it as it is: a floor at the median hour (7,200 × 1,200 tokens)
    payg = rk.PayAsYouGo(0.6, 2.4)
    out = rk.plan_with_spillover(demand, payg, 0.1, output_fraction=1 / 6, quantile=0.5)
    assert float(out["floor"]) == pytest.approx(7_200 * 1200, rel=1e-12)
    # no profile: the whole month in one period
    flat = rk.Traffic(2.0, 1000, 200).token_demand(1200)
    assert float(flat.squeeze()) == pytest.approx(2.0 * 730 * 3600 * 1200, rel=1e-12)
    with pytest.raises(ValueError, match="tokens_per_request"):
        traffic.token_demand(0)


# -- a fleet from a plan, fixed and autoscaled ----------------------------------------------------

@pytest.fixture(scope="module")
def best():
    plan = rk.plan(TRAFFIC, SLO, models="Llama-3.1-8B", gpus="H100-SXM-80GB", tp=1,
                   max_num_seqs=64, replicates=2, requests=100, engineering_monthly=500.0,
                   prices={"H100-SXM-80GB": 2.49})
    return rk.cheapest_plan(plan, by=None)


def test_self_hosted_from_plan(best):
    fleet = rk.SelfHosted.from_plan(best)
    gpus = int(best["gpus"])
    assert int(fleet.n_gpus) == gpus and float(fleet.gpu_hourly) == 2.49
    # GPUs × 2.49 × 730 + 500: the plan's own monthly cost (no electricity line here)
    assert float(fleet.monthly_cost) == pytest.approx(gpus * 2.49 * 730 + 500, rel=1e-12)
    assert float(fleet.monthly_cost) == pytest.approx(float(best["monthly_cost"]), rel=1e-12)
    capacity = float(best["max_rate"]) * int(best["replicas"]) * 730 * 3600 * 1200
    assert float(fleet.capacity_tokens) == pytest.approx(capacity, rel=1e-12)
    with pytest.raises(ValueError, match="end"):
        rk.SelfHosted.from_plan(best, end="middle")
    with pytest.raises(TypeError, match="cheapest"):
        rk.SelfHosted.from_plan(rk.Traffic(1.0, 10, 10))


def test_the_autoscaled_fleet_by_hand(best):
    profile = planning.month_profile("business-hours", 20.0)
    traffic = rk.Traffic(20.0, 1000, 200, profile=profile)
    rate = float(best["max_rate"])
    for floor in (1, 3):
        table = rk.decision_table(best, traffic, autoscale=True, min_replicas=floor)
        busy = max(floor, math.ceil(20.0 * 1.2 / rate))     # the plan's rule at the peak
        quiet = max(floor, math.ceil(2.0 * 1.2 / rate))     # and at 2 requests/s
        gpu_hours = 177 * busy + 553 * quiet                 # tp 1: a replica is a GPU
        assert float(table["monthly_cost"].sel(option="self-hosted, autoscaled")) == \
            pytest.approx(gpu_hours * 2.49 + 500, rel=1e-12)
    fixed = float(table["monthly_cost"].sel(option="self-hosted"))
    assert fixed == pytest.approx(int(best["gpus"]) * 2.49 * 730 + 500, rel=1e-12)
    assert "a profile of 730 periods" in table.attrs["month_priced_as"]
    with pytest.raises(ValueError, match="profile"):
        rk.decision_table(best, TRAFFIC, autoscale=True)
    with pytest.raises(ValueError, match="min_replicas"):
        rk.decision_table(best, traffic, autoscale=True, min_replicas=0)


def test_cli_prices_the_month_of_a_profile(capsys):
    code, out, err = run(capsys, *PLAN, "--profile", "business-hours", "--autoscale",
                         "--gpu-hourly", "h100=2.49", "--payg-price", "0.6", "2.4")
    assert code == 0, err
    # (177 × 20 + 553 × 2) requests/s-hours × 3,600 s = 16,725,600 requests
    assert "the month priced at a profile of 730 periods, 16,725,600 requests (peak 20 " \
           "requests/s): 20,070,720,000 tokens" in out
    assert "self-hosted, autoscaled" in out
    code, out, err = run(capsys, *PLAN, "--profile", "business-hours", "--autoscale",
                         "--gpu-hourly", "h100=2.49", "--payg-price", "0.6", "2.4", "--json")
    options = json.loads(out)["decision"]["options"]
    # pay-as-you-go: 20,070,720,000 tokens × 0.9 USD per 1M
    assert options["pay-as-you-go"]["monthly_cost"] == pytest.approx(20_070.72 * 0.9, rel=1e-9)
    assert options["self-hosted, autoscaled"]["monthly_cost"] <= \
        options["self-hosted"]["monthly_cost"]


def test_spare_replicas_of_the_plan_carry_into_the_decision(best):
    # N + 1: a plan whose fleets carry one spare replica (attrs["spare_replicas"], the contract
    # with rk.plan) runs it in every hour of the autoscaled fleet and in every replicate's fleet
    profile = planning.month_profile("business-hours", 20.0)
    traffic = rk.Traffic(20.0, 1000, 200, profile=profile)
    spared = best.copy()
    spared.attrs = {**best.attrs, "spare_replicas": 1}
    rate = float(best["max_rate"])
    busy, quiet = math.ceil(24.0 / rate) + 1, math.ceil(2.4 / rate) + 1
    table = rk.decision_table(spared, traffic, autoscale=True)
    assert float(table["monthly_cost"].sel(option="self-hosted, autoscaled")) == \
        pytest.approx((177 * busy + 553 * quiet) * 2.49 + 500, rel=1e-12)
