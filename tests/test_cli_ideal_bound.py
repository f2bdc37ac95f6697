"""Every command that answers with the default engine profile prints the ideal roofline bound
beside it (and none with ``--engine ideal``, where the answer is the bound): the same question
asked again of :data:`rooflinekit.IDEAL`."""

import json

import pytest

from rooflinekit.cli.main import main

LAYOUTS = ["layouts", "llama-3.1-70b", "h100", "--num-gpus", "8", "--batch-size", "16",
           "--max-model-len", "2048"]
SWEEP = ["sweep", "--models", "llama-3.1-8b", "--gpus", "h100", "a100", "--report", "best"]
SIMULATE = ["simulate", "--workload", "lognormal", "--model", "llama-3.1-8b", "--gpu", "h100",
            "--requests", "60"]
DISAGGREGATED = ["disaggregated", "llama-3.1-8b", "--gpu", "h100", "--splits", "1P1D",
                 "--rate", "5", "--prompt-mean", "1000", "--output-mean", "200", "--ttft", "1",
                 "--itl", "0.05", "--replicates", "2", "--requests", "60"]

CURVE = ["curve", "llama-3.1-8b", "--gpu", "h100", "--rates", "1,4", "--prompt-mean", "500",
         "--output-mean", "50", "--replicates", "1", "--requests", "30"]


def _run(argv, capsys):
    assert main(argv) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("argv", [LAYOUTS, SWEEP, SIMULATE, DISAGGREGATED, CURVE],
                         ids=["layouts", "sweep", "simulate", "disaggregated", "curve"])
def test_the_bound_is_printed_beside_the_default_and_not_with_ideal(argv, capsys):
    assert "ideal roofline bound" in _run(argv, capsys)
    assert "ideal roofline bound" not in _run([*argv, "--engine", "ideal"], capsys)


def test_the_layouts_bound_is_the_engines_fastest_layout_on_the_ideal_roofline(capsys):
    text = _run(LAYOUTS, capsys)
    engine_rows = json.loads(_run([*LAYOUTS, "--json"], capsys))
    ideal_rows = json.loads(_run([*LAYOUTS, "--json", "--engine", "ideal"], capsys))
    fastest = engine_rows[0]
    key = ("tp", "pp", "ep", "dp")
    same = next(r for r in ideal_rows if all(r[k] == fastest[k] for k in key))
    assert f"{same['fleet_tokens_per_s']:,.0f} tokens/s for the fleet, against " \
           f"{fastest['fleet_tokens_per_s']:,.0f}" in text
    assert same["fleet_tokens_per_s"] > fastest["fleet_tokens_per_s"]


def test_the_sweep_bound_is_the_ideal_sweeps_best(capsys):
    payload = json.loads(_run([*SWEEP, "--json"], capsys))
    ideal = json.loads(_run([*SWEEP, "--json", "--engine", "ideal"], capsys))
    got = payload["ideal_bound"]["Llama-3.1-8B"]["tokens_per_second_per_gpu"]
    assert got == ideal["rows"][0]["tokens_per_second_per_gpu"]
    assert got > payload["rows"][0]["tokens_per_second_per_gpu"]


def test_the_simulate_bound_is_the_ideal_clocks_run(capsys):
    payload = json.loads(_run([*SIMULATE, "--json"], capsys))
    bound = payload["ideal_bound"]
    assert bound["mean_itl"] < payload["continuous"]["mean_itl"]
    assert bound["makespan"] <= payload["continuous"]["makespan"]


def test_the_disaggregated_bound_serves_at_least_the_engines_rate(capsys):
    payload = json.loads(_run([*DISAGGREGATED, "--json"], capsys))
    bound = payload["ideal_bound"]
    best = next(r for r in payload["splits"] if r["split"] == bound["split"])
    assert bound["max_rate"] >= best["max_rate"]
    assert bound["gpus"] <= best["gpus"]
