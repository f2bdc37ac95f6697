"""Spare replicas (N + k) and a minimum replica count: the fleet a plan buys beside the one its
rate needs, by hand: ``max(min, ceil(rate · (1 + headroom) / max_rate)) + spare``."""

import json
import math

import pytest

import rooflinekit as rk

TRAFFIC = rk.Traffic(6.0, 1000, 200)
SLO = rk.SLO(ttft=1.0, itl=0.05)
COMMON = dict(models="Llama-3.1-8B", gpus=["H100-SXM-80GB", "L40S"], tp=[1, 2], replicates=2,
              requests=100, engine_draws=0, max_num_batched_tokens="auto")


@pytest.fixture(scope="module")
def plans():
    return {(spare, floor): rk.plan(TRAFFIC, SLO, spare_replicas=spare, min_replicas=floor,
                                    **COMMON)
            for spare, floor in ((0, 1), (1, 1), (0, 3), (2, 4))}


@pytest.mark.parametrize("spare, floor", [(1, 1), (0, 3), (2, 4)])
def test_the_fleet_is_the_needed_one_floored_plus_spares(plans, spare, floor):
    base, got = plans[0, 1], plans[spare, floor]
    assert (got["max_rate"] == base["max_rate"]).all()          # the search is the same
    for index in base["replicas"].stack(c=base["replicas"].dims)["c"].values:
        sel = dict(zip(base["replicas"].dims, index))
        rate = float(base["max_rate"].sel(sel))
        need = math.ceil(6.0 * 1.2 / rate) if rate > 0 else 0
        expected = max(floor, need) + spare if need > 0 else 0
        assert int(got["replicas"].sel(sel)) == expected
        assert int(got["gpus"].sel(sel)) == expected * int(sel["tp"])
        if expected:
            assert float(got["operating_rate"].sel(sel)) == pytest.approx(6.0 / (expected - spare))
    assert got.attrs["spare_replicas"] == spare and got.attrs["min_replicas"] == floor


def test_a_spare_costs_its_gpus_for_the_month(plans):
    """One spare replica of 1 × H100 adds one GPU at the catalogue's hourly price for 730 h."""
    sel = dict(model="Llama-3.1-8B", gpu="H100-SXM-80GB", tp=1)
    base, spared = (float(plans[k]["monthly_cost"].sel(sel)) for k in ((0, 1), (1, 1)))
    hourly = rk.catalog.gpu("H100-SXM-80GB").hourly_price
    assert spared - base == pytest.approx(hourly * 730.0)


@pytest.mark.parametrize("kwargs, match", [({"spare_replicas": -1}, "spare_replicas"),
                                           ({"min_replicas": 0}, "min_replicas"),
                                           ({"spare_replicas": 1.5}, "spare_replicas")])
def test_bad_counts_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        rk.plan(TRAFFIC, SLO, **{**COMMON, **kwargs})


def test_the_cli_plans_spares_and_deploys_them(capsys):
    from rooflinekit.cli.main import main
    argv = ["plan", "llama-3.1-8b", "--gpus", "h100", "--rate", "6", "--prompt-mean", "1000",
            "--output-mean", "200", "--ttft", "1", "--itl", "0.05", "--replicates", "2",
            "--requests", "100", "--max-num-batched-tokens", "8192", "--json"]
    assert main(argv) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main([*argv, "--spare-replicas", "1", "--min-replicas", "2"]) == 0
    spared = json.loads(capsys.readouterr().out)
    need = plain["configurations"][0]["replicas"]
    assert spared["configurations"][0]["replicas"] == max(2, need) + 1
    assert spared["deployment"]["replicas"] == max(2, need) + 1


def test_per_gpu_shows_every_gpu_type_once(capsys):
    """--top 1 hides the dearer GPU types; --per-gpu shows the cheapest row of each."""
    from rooflinekit.cli.main import main
    argv = ["plan", "llama-3.1-8b", "--gpus", "h100", "l40s", "--tp", "1,2", "--rate", "5",
            "--prompt-mean", "1000", "--output-mean", "200", "--ttft", "1", "--replicates",
            "2", "--requests", "60", "--max-num-batched-tokens", "2048"]
    assert main([*argv, "--top", "1"]) == 0
    top = capsys.readouterr().out
    assert main([*argv, "--per-gpu"]) == 0
    per_gpu = capsys.readouterr().out
    table = [line for line in per_gpu.splitlines() if line.startswith("  H100") or
             line.startswith("  L40S")]
    assert sorted(line.split()[0] for line in table) == ["H100-SXM-80GB", "L40S"]
    assert sum(line.startswith(("  H100", "  L40S")) for line in top.splitlines()) == 1


def test_a_short_gpu_name_says_which_variant_and_the_others(capsys):
    """'h100' plans H100-SXM-80GB; the output names the other H100s the catalogue holds."""
    from rooflinekit.cli.main import main
    assert rk.catalog.gpu_variants("h100") == ("H100-PCIe-80GB", "H100-NVL-94GB")
    assert rk.catalog.gpu_variants("H100-SXM-80GB") == ()
    assert rk.catalog.gpu_variants("h200") == ()             # one H200 in the catalogue
    argv = ["plan", "llama-3.1-8b", "--gpus", "h100", "--rate", "2", "--prompt-mean", "500",
            "--output-mean", "50", "--ttft", "1", "--replicates", "2", "--requests", "40",
            "--max-num-batched-tokens", "2048"]
    assert main(argv) == 0
    assert "note: 'h100' is H100-SXM-80GB; the catalogue also has H100-PCIe-80GB, " \
           "H100-NVL-94GB (name one to plan it)" in capsys.readouterr().out
    assert main([*argv, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["gpu_variants"]["h100"]["also"] == ["H100-PCIe-80GB", "H100-NVL-94GB"]
