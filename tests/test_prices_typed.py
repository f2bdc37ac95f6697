"""Issue 30: prices are inputs. Typed pay-as-you-go, provisioned and GPU-hour prices; no default
pay-as-you-go price; implausible prices refused; break-even columns that are break-evens; the
tie point of each input.

Reference values are hand arithmetic from the definitions (blended price ``c_in(1 − f) + c_out
f``, guide §6.3; fleet cost ``GPUs × USD/h × 730 h + engineering``, guide §6.5), exact to
rounding (rel 1e-9) unless stated.
"""

from __future__ import annotations

import json
import math

import pytest

import rooflinekit as rk
from helpers import run_cli

#: Every request alike: mean prompt 1,000 and output 200 exactly, so f = 200 / 1,200 = 1/6.
TRAFFIC = rk.Traffic(4.0, 1000, 200)
SLO = rk.SLO(ttft=0.5, itl=0.05)
#: 4 requests/s × 730 h × 3,600 s × 1,200 tokens.
VOLUME = 4.0 * 730 * 3600 * 1200
PLAN = ["plan", "llama-3.1-8b", "--gpus", "h100", "--rate", "5", "--prompt-mean", "1000",
        "--output-mean", "200", "--ttft", "1", "--itl", "0.05", "--replicates", "2",
        "--requests", "100"]
#: 5 requests/s all month, 1,200 tokens each.
PLAN_VOLUME = 5.0 * 730 * 3600 * 1200


run = run_cli


@pytest.fixture(scope="module")
def best():
    plan = rk.plan(TRAFFIC, SLO, models="Llama-3.1-8B", gpus="H100-SXM-80GB", tp=1,
                   max_num_seqs=64, replicates=2, requests=100, engineering_monthly=1000.0)
    return rk.cheapest_plan(plan, by=None)


# -- implausible prices ---------------------------------------------------------------------------

def test_a_price_per_token_is_refused_naming_the_slip():
    # $0.60 / $2.40 per 1M typed per token: 6e-7 and 2.4e-6
    with pytest.raises(ValueError, match=r"input_per_mtok.*per token\?"):
        rk.PayAsYouGo(6e-7, 2.4e-6)
    with pytest.raises(ValueError, match="output_per_mtok"):
        rk.PayAsYouGo(0.6, 2.4e-6)


@pytest.mark.parametrize("c_in, c_out", [(0.0, 2.4), (0.6, 0.0), (-0.6, 2.4), (math.inf, 2.4),
                                         (0.6, math.nan)])
def test_zero_negative_and_non_finite_prices_are_refused(c_in, c_out):
    with pytest.raises(ValueError, match="per_mtok"):
        rk.PayAsYouGo(c_in, c_out)


def test_the_floor_admits_the_cheapest_real_prices():
    # $0.02 per 1M tokens (the cheapest hosted list prices) and a free cache pass
    assert float(rk.PayAsYouGo(0.02, 0.02, cached_input_per_mtok=0.0).blended(0.5)) == \
        pytest.approx(0.02, rel=1e-12)


# -- the decision without a default price ---------------------------------------------------------

def test_no_payg_price_no_payg_row(best):
    table = rk.decision_table(best, TRAFFIC)
    assert list(table["option"].values) == ["self-hosted"]
    assert str(table["choice"].values) == "self-hosted"
    with_prov = rk.decision_table(best, TRAFFIC, provisioned=rk.Provisioned(12_000.0, 4e9))
    assert list(with_prov["option"].values) == ["self-hosted", "provisioned"]


def test_the_fleet_row_has_no_break_even_and_states_its_capacity(best):
    table = rk.decision_table(best, TRAFFIC, payg=rk.PayAsYouGo(0.6, 2.4))
    fleet = table.sel(option="self-hosted")
    assert math.isnan(float(fleet["break_even_tokens"]))
    # capacity: max rate × replicas × 730 h × 3,600 s × 1,200 tokens
    capacity = float(best["max_rate"]) * int(best["replicas"]) * 730 * 3600 * 1200
    assert float(fleet["capacity_tokens"]) == pytest.approx(capacity, rel=1e-9)
    assert math.isinf(float(table["capacity_tokens"].sel(option="pay-as-you-go")))
    assert "month_priced_as" in table.attrs and "4 requests/s all month" in \
        table.attrs["month_priced_as"]


def test_tie_points_by_hand(best):
    table = rk.decision_table(best, TRAFFIC, payg=rk.PayAsYouGo(0.6, 2.4))
    blended = 0.6 * 5 / 6 + 2.4 / 6                     # 0.9 USD per 1M tokens
    payg = VOLUME * blended / 1e6
    assert float(table["monthly_cost"].sel(option="pay-as-you-go")) == pytest.approx(
        payg, rel=1e-9)
    fleet = float(best["monthly_cost"])
    gpus = int(best["gpus"])
    at = table.sel(option="pay-as-you-go")
    # h* = (C_payg − E) / (n × 730), E = 1,000
    assert float(at["tie_gpu_hourly"]) == pytest.approx((payg - 1000.0) / (gpus * 730),
                                                        rel=1e-9)
    # E* = E + C_payg − C_sh
    assert float(at["tie_engineering_monthly"]) == pytest.approx(1000.0 + payg - fleet,
                                                                 rel=1e-9)
    # c_b* = C_sh / V × 1e6: pay-as-you-go at that blended price costs what the fleet does
    tie = float(at["tie_payg_blended"])
    assert tie == pytest.approx(fleet / VOLUME * 1e6, rel=1e-9)
    scale = tie / blended
    again = rk.decision_table(best, TRAFFIC, payg=rk.PayAsYouGo(0.6 * scale, 2.4 * scale))
    assert float(again["monthly_cost"].sel(option="pay-as-you-go")) == pytest.approx(
        fleet, rel=1e-9)
    # and a fleet at the tie GPU price costs what pay-as-you-go does
    assert gpus * float(at["tie_gpu_hourly"]) * 730 + 1000.0 == pytest.approx(payg, rel=1e-9)
    assert math.isnan(float(table["tie_gpu_hourly"].sel(option="self-hosted")))


def test_decision_table_refuses_a_non_price(best):
    with pytest.raises(TypeError, match="payg"):
        rk.decision_table(best, TRAFFIC, payg=0.6)


# -- the command line -----------------------------------------------------------------------------

def test_plan_takes_typed_prices(capsys):
    code, out, err = run(capsys, *PLAN, "--payg-price", "0.6", "2.4", "--gpu-hourly",
                         "H100-SXM-80GB=2.49", "--engineering-monthly", "2000", "--json")
    assert code == 0, err
    data = json.loads(out)
    options = data["decision"]["options"]
    # 5 req/s × 730 h × 3,600 s × 1,200 tokens at 0.9 USD per 1M
    assert options["pay-as-you-go"]["monthly_cost"] == pytest.approx(
        PLAN_VOLUME * 0.9 / 1e6, rel=1e-9)
    gpus = data["configurations"][0]["gpus"]
    assert options["self-hosted"]["monthly_cost"] == pytest.approx(gpus * 2.49 * 730 + 2000,
                                                                   rel=1e-9)
    assert "typed" in data["decision"]["prices"]["pay-as-you-go"]
    assert "0.6 input / 2.4 output per 1M" in data["decision"]["prices"]["pay-as-you-go"]
    assert "2.49" in data["decision"]["prices"]["self-hosted"]
    flips = data["decision"]["flips"]
    assert flips["against"] == "pay-as-you-go"
    assert flips["gpu_hourly"] == pytest.approx((PLAN_VOLUME * 0.9 / 1e6 - 2000) / (gpus * 730),
                                                rel=1e-9)


def test_plan_without_a_price_prints_no_payg_row_and_says_so(capsys):
    code, out, err = run(capsys, *PLAN)
    assert code == 0, err
    assert "no price given" in out
    assert "\n  pay-as-you-go " not in out.split("no pay-as-you-go row")[1]
    # the month says how it was priced: 5 requests/s all month
    assert "the peak 5 requests/s all month (730 h, 13,140,000 requests)" in out
    assert "cost [USD/1M tokens, prompt + output]" in out
    assert "self-hosting cheaper above [tokens/month]" in out


def test_plan_preset_and_typed_provisioned(capsys):
    code, out, err = run(capsys, *PLAN, "--payg", "openai-gpt-4o-mini", "--provisioned-price",
                         "1000", "2e9", "2", "2", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert "preset openai-gpt-4o-mini" in data["decision"]["prices"]["pay-as-you-go"]
    assert "openai.com" in data["decision"]["prices"]["pay-as-you-go"]
    prov = data["decision"]["options"]["provisioned"]
    # 1.5768e10 tokens at the peak over 2e9 a unit: 7.9 units, from 2 in steps of 2 -> 8
    assert prov["monthly_cost"] == pytest.approx(8 * 1000.0, rel=1e-12)
    # the fleet has no break-even with itself (JSON null, the NaN rule of --json)
    assert data["decision"]["options"]["self-hosted"]["break_even_tokens"] is None


@pytest.mark.parametrize("extra, flag", [
    (["--payg-price", "6e-7", "2.4e-6"], "--payg-price"),
    (["--payg-price", "0.6"], "--payg-price"),
    (["--payg-price", "0", "2.4"], "--payg-price"),
    (["--payg-price", "0.6", "-2.4"], "--payg-price"),
    (["--payg-price", "0.6", "inf"], "--payg-price"),
    (["--payg", "guide-lab", "--payg-price", "0.6", "2.4"], "--payg"),
    (["--provisioned-price", "1000"], "--provisioned-price"),
    (["--provisioned-price", "1000", "2e9", "1.5"], "--provisioned-price"),
    (["--gpu-hourly", "h100"], "--gpu-hourly"),
    (["--gpu-hourly", "h100=-1"], "--gpu-hourly"),
    (["--gpu-hourly", "l40s=1"], "--gpu-hourly"),
])
def test_bad_prices_are_one_line_naming_the_flag(capsys, extra, flag):
    code, out, err = run(capsys, *PLAN, *extra)
    assert code == 2
    assert err.count("\n") == 1 and flag in err and "Traceback" not in err


def test_price_says_a_break_even_above_capacity_cannot_happen(capsys):
    # $12,000 for 1e9 tokens against $3.90 per 1M (f = 0.1): break-even 12,000 / 3.9e-6 =
    # 3.08e9 tokens, 308% of the capacity: it never pays
    code, out, err = run(capsys, "price", "--input-price", "3", "--output-price", "12",
                         "--provisioned-monthly", "12000", "--provisioned-capacity", "1e9",
                         "--output-fraction", "0.1")
    assert code == 0, err
    assert "never (would need 308% of capacity)" in out
    code, out, err = run(capsys, "price", "--input-price", "3", "--output-price", "12",
                         "--provisioned-monthly", "12000", "--provisioned-capacity", "1e9",
                         "--output-fraction", "0.1", "--json")
    row = json.loads(out)[0]
    assert row["breaks_even"] is False
    assert row["break_even_utilization"] == pytest.approx(12_000 / 3.9e-6 / 1e9, rel=1e-9)


def test_price_refuses_a_price_per_token_naming_the_flag(capsys):
    code, out, err = run(capsys, "price", "--input-price", "6e-7", "--output-price", "2.4",
                         "--output-fraction", "0.1")
    assert code == 2 and "--input-price" in err and "per token" in err


def test_an_open_model_preset_is_dated_and_sourced():
    # a pay-as-you-go row for an open-weights model, to set against self-hosting that model
    row = rk.catalog.payg_row("together-llama-3.1-70b-turbo")
    assert row["date"] and row["source"].startswith("Together AI pricing, https://")
    payg = rk.pricing.payg_price("together-llama-3.1-70b-turbo")
    # one price for input and output: the blend is 0.88 at any mix
    assert float(payg.blended(0.13)) == pytest.approx(0.88, rel=1e-12)


def test_a_gpu_without_a_catalogue_price_is_refused_naming_the_flag(capsys):
    """The GB300 row has no hourly price: the command says to type one with --gpu-hourly
    (not the Python argument), before any planning, and plans once it is typed."""
    assert rk.catalog.gpu("GB300").hourly_price is None
    argv = ["plan", "llama-3.1-8b", "--gpus", "gb300", "--rate", "2", "--prompt-mean", "500",
            "--output-mean", "100", "--ttft", "1", "--itl", "0.05", "--replicates", "2"]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--gpu-hourly GB300=USD" in err and "prices=" not in err
    code, out, err = run(capsys, *argv, "--gpu-hourly", "gb300=6", "--json")
    assert code == 0, err
    assert json.loads(out)["configurations"][0]["gpu"] == "GB300"
