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
from rooflinekit.planning.traffic import profile_period

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


# -- periods other than an hour (issue 30: "requests/s per hour or per period") ------------------
#
# Rates are requests/s over each line's period whatever the period; the counts are hand sums of
# the 730-hour month (2,920 quarter-hours: 30 days of 96 and 40 more).

DAY_15MIN = [1.0] * 36 + [10.0] * 32 + [1.0] * 28       # 09:00-17:00 at 10 requests/s


def test_read_profile_takes_a_period_column(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text("period,rate\n" + "".join(f"15min,{r}\n" for r in DAY_15MIN))
    profile = planning.read_profile(path)
    assert profile.shape == (2920,)                      # 730 h × 4
    np.testing.assert_array_equal(profile[:96], np.array(DAY_15MIN) * 900)
    # a day: (36 + 320 + 28) × 900 = 345,600 requests; 30 days and 36 × 1 + 4 × 10 more
    assert profile.sum() == pytest.approx(30 * 345_600 + (36 + 40) * 900, rel=1e-12)
    # the same file without the column, its period given: the same month
    plain = tmp_path / "plain.csv"
    plain.write_text("rate\n" + "".join(f"{r}\n" for r in DAY_15MIN))
    np.testing.assert_array_equal(planning.read_profile(plain, period="15min"), profile)
    np.testing.assert_array_equal(planning.read_profile(plain, period=900), profile)
    np.testing.assert_array_equal(planning.read_profile(path, period="15 min"), profile)


def test_read_profile_of_daily_rates_is_hourly(tmp_path):
    path = tmp_path / "week.csv"
    week = [10, 10, 10, 10, 10, 2, 2]                    # requests/s, one a day
    path.write_text("day,rate\n" + "".join(f"{d},{r}\n" for d, r in enumerate(week)))
    profile = planning.read_profile(path, period="1d")
    assert profile.shape == (730,)
    np.testing.assert_array_equal(profile[:24], np.full(24, 36_000.0))
    np.testing.assert_array_equal(profile[5 * 24:7 * 24], np.full(48, 7_200.0))
    # 4 weeks (216 day-rates), days 29-30 at 10, then 10 hours of day 31 (a Wednesday) at 10
    assert profile.sum() == pytest.approx((4 * 54 + 20) * 86_400 + 10 * 3600 * 10, rel=1e-12)


def test_a_traffic_of_quarter_hours_is_priced_per_quarter_hour(best, tmp_path):
    path = tmp_path / "q.csv"
    path.write_text("rate\n" + "".join(f"{2 * r}\n" for r in DAY_15MIN))   # peak 20
    profile = planning.read_profile(path, period="15min")
    traffic = rk.Traffic(20.0, 1000, 200, profile=profile)
    table = rk.decision_table(best, traffic, autoscale=True)
    rate = float(best["max_rate"])
    busy, quiet = math.ceil(24.0 / rate), max(1, math.ceil(2.4 / rate))
    # 30 × 32 + 4 busy quarter-hours, the other 2,920 − 964 quiet; a quarter-hour is 0.25 h
    gpu_hours = (964 * busy + (2920 - 964) * quiet) * 0.25
    assert float(table["monthly_cost"].sel(option="self-hosted, autoscaled")) == \
        pytest.approx(gpu_hours * 2.49 + 500, rel=1e-12)
    assert "a profile of 2920 periods" in table.attrs["month_priced_as"]


@pytest.mark.parametrize("period", ["7min", "90min", "45s", "0.5s", "1000h", "1y", "h", "-1h",
                                    "nan", "inf", 0, -900, 61.5])
def test_a_period_that_does_not_tile_the_month_is_refused(period):
    with pytest.raises(ValueError, match="period"):
        profile_period(period)


@pytest.mark.parametrize("period, seconds", [("1min", 60), ("15min", 900), ("30 min", 1800),
                                             ("1h", 3600), ("2h", 7200), ("1d", 86_400),
                                             (900, 900), ("900", 900), ("730h", 2_628_000)])
def test_periods_that_tile_the_month(period, seconds):
    assert profile_period(period) == seconds


@pytest.mark.parametrize("text, period, where", [
    ("period,rate\n15min,1\n1h,2\n", None, "line 3, column period: every line"),
    ("period,rate\n7min,1\n", None, "line 2, column period"),
    ("period,rate\n15min,-1\n", None, "line 2"),
    ("period,rate\n15min,1\n", "1h", "period column says 900 s"),
    ("rate\n" + "1\n" * 2921, "15min", "more than the 730-hour month"),
    ("rate\n" + "1\n" * 731, None, "more than the 730-hour month"),
])
def test_read_profile_refuses_bad_periods(tmp_path, text, period, where):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=where):
        planning.read_profile(path, period=period)


def test_cli_takes_a_profile_period(capsys, tmp_path):
    path = tmp_path / "q.csv"
    path.write_text("rate\n" + "".join(f"{2 * r}\n" for r in DAY_15MIN))
    code, out, err = run(capsys, *PLAN, "--profile", str(path), "--profile-period", "15min")
    assert code == 0, err
    # 30 × (36 × 2 + 32 × 20 + 28 × 2) × 900 + (36 × 2 + 4 × 20) × 900 requests
    requests = (30 * (72 + 640 + 56) + 72 + 80) * 900
    assert requests == 20_872_800
    assert f"a profile of 2920 periods, {requests:,} requests (peak 20 requests/s)" in out
    path.write_text("period,rate\n" + "".join(f"15min,{2 * r}\n" for r in DAY_15MIN))
    code, out, err = run(capsys, *PLAN, "--profile", str(path))
    assert code == 0 and f"{requests:,} requests" in out, err


@pytest.mark.parametrize("extra, flag", [
    (["--profile-period", "7min"], "--profile-period"),
    (["--profile-period", "15parsecs"], "--profile-period"),
    (["--profile-period", "1h"], "--profile-period"),                  # without --profile
    (["--profile", "business-hours", "--profile-period", "1h"], "--profile-period"),
])
def test_cli_refuses_a_bad_period_in_one_line(capsys, extra, flag):
    code, out, err = run(capsys, *PLAN, *extra)
    assert code == 2 and err.count("\n") == 1 and flag in err, err


def test_cli_refuses_a_bad_period_column_in_one_line(capsys, tmp_path):
    path = tmp_path / "q.csv"
    for text, where in (("period,rate\n15min,1\n1h,2\n", "column period"),
                        ("period,rate\n15min,inf\n", "line 2"),
                        ("period,rate\n15min,1\n", "period column says")):
        path.write_text(text)
        extra = ["--profile-period", "1h"] if "says" in where else []
        code, out, err = run(capsys, *PLAN, "--profile", str(path), *extra)
        assert code == 2 and err.count("\n") == 1 and "--profile" in err and where in err, err


# -- the built-in shapes' parameters on the command line ------------------------------------------

def test_cli_shapes_take_their_parameters(capsys):
    # 08-20 on 6 days a week: 26 whole working days of the 30 (4 weeks of 6, then Monday and
    # Tuesday) × 12 h, and 08:00-10:00 of the 31st (a Wednesday): 314 busy hours, 416 quiet
    code, out, err = run(capsys, *PLAN, "--profile", "business-hours", "--business-hours",
                         "8-20", "--workdays", "6")
    assert code == 0, err
    requests = (314 * 20 + 416 * 2) * 3600
    assert requests == 25_603_200 and f"{requests:,} requests (peak 20" in out
    # diurnal, peaking at 20:00 with a trough of 0.3: the same month as month_profile's
    code, out, err = run(capsys, *PLAN, "--profile", "diurnal", "--peak-hour", "20",
                         "--off-peak", "0.3")
    assert code == 0, err
    profile = planning.month_profile("diurnal", 20.0, peak_hour=20, off_peak=0.3)
    assert f"{profile.sum():,.0f} requests (peak 20" in out
    # s(t) = 0.3 + 0.7 (1 + cos(2π(t − 20)/24)) / 2: 20 × 3,600 at 20:00, 0.3 × that at 08:00
    assert profile[20] == pytest.approx(72_000, rel=1e-12)
    assert profile[8] == pytest.approx(0.3 * 72_000, rel=1e-12)


@pytest.mark.parametrize("extra, flag", [
    (["--profile", "business-hours", "--peak-hour", "3"], "--peak-hour"),
    (["--profile", "diurnal", "--workdays", "6"], "--workdays"),
    (["--peak-hour", "3"], "--peak-hour"),
    (["--profile", "diurnal", "--peak-hour", "24"], "--peak-hour"),
    (["--profile", "business-hours", "--workdays", "8"], "--workdays"),
    (["--profile", "business-hours", "--workdays", "0"], "--workdays"),
])
def test_cli_refuses_a_shape_parameter_in_one_line(capsys, extra, flag):
    code, out, err = run(capsys, *PLAN, *extra)
    assert code == 2 and err.count("\n") == 1 and flag in err, err
