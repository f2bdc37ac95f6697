"""Issue 30: ``--payg-price IN OUT CACHED`` — the cached-input price is billed on the traffic's
shared prefixes, not accepted and then ignored.

Reference, by hand (decision_table Notes): half the requests start with one 500-token prefix,
so a share h = 0.5 × 500 / mean prompt of the input tokens is billed at the cached price;
``c_b = (c_in (1 − h) + c_cached h)(1 − f) + c_out f`` with f = mean output / (mean prompt +
mean output), the means those of the plan's draws (its attrs). Exact (rel 1e-12).
"""

from __future__ import annotations

import json

import pytest

import rooflinekit as rk
from helpers import run_cli
from rooflinekit.workloads import SharedPrefix

PREFIX = SharedPrefix(500, 1, 0.5)


@pytest.fixture(scope="module")
def prefixed():
    traffic = rk.Traffic(2.0, 1000, 100, prefix=PREFIX)
    plan = rk.plan(traffic, rk.SLO(ttft=1.0), models="Llama-3.1-8B", gpus="H100-SXM-80GB",
                   max_num_seqs=64, replicates=2, requests=100)
    return traffic, rk.cheapest_plan(plan, by=None)


def test_the_cached_price_bills_the_prefixes(prefixed):
    traffic, cheapest = prefixed
    prompt = cheapest.attrs["mean_prompt_tokens"]
    output = cheapest.attrs["mean_output_tokens"]
    assert 1200 < prompt < 1300                  # 1,000 drawn + about half of 500
    f = output / (prompt + output)
    h = 0.5 * 500 / prompt
    blended = (0.6 * (1 - h) + 0.06 * h) * (1 - f) + 2.4 * f
    volume = 2.0 * 730 * 3600 * (prompt + output)
    table = rk.decision_table(cheapest, traffic, payg=rk.PayAsYouGo(0.6, 2.4, 0.06))
    assert table.attrs["payg_cached_fraction"] == pytest.approx(h, rel=1e-12)
    assert float(table["monthly_cost"].sel(option="pay-as-you-go")) == \
        pytest.approx(volume * blended / 1e6, rel=1e-12)
    # no cached price: every input token at the input price
    plain = rk.decision_table(cheapest, traffic, payg=rk.PayAsYouGo(0.6, 2.4))
    assert plain.attrs["payg_cached_fraction"] == 0.0
    assert float(plain["monthly_cost"].sel(option="pay-as-you-go")) == \
        pytest.approx(volume * (0.6 * (1 - f) + 2.4 * f) / 1e6, rel=1e-12)


def test_no_prefixes_no_cached_share(prefixed):
    _, cheapest = prefixed
    table = rk.decision_table(cheapest, rk.Traffic(2.0, 1000, 100),
                              payg=rk.PayAsYouGo(0.6, 2.4, 0.06))
    assert table.attrs["payg_cached_fraction"] == 0.0


def test_the_command_line_bills_and_says_it(capsys):
    argv = ["plan", "llama-3.1-8b", "--gpus", "h100", "--rate", "2", "--prompt-mean", "1000",
            "--output-mean", "100", "--ttft", "1", "--prefix-tokens", "500", "--prefix-share",
            "0.5", "--enable-prefix-caching", "--max-num-seqs", "64", "--replicates", "2",
            "--requests", "100", "--payg-price", "0.6", "2.4", "0.06"]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert "of input tokens (the shared prefixes) at its cached-input price" in out
    code, out, err = run_cli(capsys, *argv, "--json")
    data = json.loads(out)
    assert 0.18 < data["decision"]["payg_cached_fraction"] < 0.21      # 250 / ~1,250
    assert "cached input USD 0.06" in data["decision"]["prices"]["pay-as-you-go"]
