"""Issue 30's friction points on ``rooflinekit plan``, each reproduced and now passing: labels that
say what they are (latencies named for the rate they were measured at, the binding target at the
max rate and the margin to it), unit slips refused naming the flag (``--spread 50``), the
huge-grid error in the command line's words, and one name for a model (``--name``).

Reference for the margin: ``max_rate / operating_rate − 1`` from the same ``--json`` record
(rel 1e-12); with 20 % headroom and whole replicas it is at least 0.2 (the plan's rule
``replicas = ⌈rate × 1.2 / max_rate⌉`` puts ``operating_rate <= max_rate / 1.2``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rooflinekit as rk
from helpers import run_cli

PLAN = ["plan", "llama-3.1-8b", "--gpus", "h100", "--rate", "20", "--prompt-mean", "1000",
        "--output-mean", "200", "--ttft", "1", "--itl", "0.05", "--replicates", "2",
        "--requests", "100"]
CONFIG = Path(__file__).parent / "data" / "hf_configs" / "llama-3.1-8b.json"


def test_latency_columns_say_the_rate_they_were_measured_at(capsys):
    code, out, err = run_cli(capsys, *PLAN)
    assert code == 0, err
    header = out.splitlines()[1]
    for column in ("operating rate [req/s]", "p95 TTFT at operating rate [s]",
                   "p95 ITL at operating rate [s]", "binding at max rate",
                   "rate margin to max rate"):
        assert column in header, column
    assert "p95 ITL [s]" not in header           # the old, unsaid label


def test_the_margin_is_the_max_rate_over_the_operating_rate(capsys):
    code, out, err = run_cli(capsys, *PLAN, "--json")
    assert code == 0, err
    row = json.loads(out)["configurations"][0]
    assert row["rate_margin"] == pytest.approx(row["max_rate"] / row["operating_rate"] - 1,
                                               rel=1e-12)
    assert row["rate_margin"] >= 0.2 - 1e-12
    # 20 requests/s over its replicas: what each replica carries
    assert row["operating_rate"] == pytest.approx(20 / row["replicas"], rel=1e-12)


@pytest.mark.parametrize("spread", ["50", "3.5", "-1", "nan"])
def test_an_implausible_spread_is_refused_naming_the_flag(capsys, spread):
    code, out, err = run_cli(capsys, *PLAN, "--spread", spread)
    assert code == 2 and err.count("\n") == 1 and "--spread" in err, err


def test_the_largest_spread_is_taken(capsys):
    code, out, err = run_cli(capsys, *PLAN[:-4], "--spread", "3", "--replicates", "2",
                             "--requests", "50")
    assert code == 0, err


@pytest.mark.parametrize("extra, flags", [
    (["--replicates", "100", "--requests", "100000", "--tp", "1,2", "--max-num-seqs",
      "64,128"], ("--replicates", "--requests", "--tp", "--max-num-seqs")),
    (["--replicates", "100000", "--requests", "10000000"], ("--replicates", "--requests")),
])
def test_a_huge_grid_is_refused_in_the_command_lines_words(capsys, extra, flags):
    code, out, err = run_cli(capsys, *PLAN, *extra)
    assert code == 2 and err.count("\n") == 1, err
    for flag in flags:
        assert flag in err, flag
    for python in ("work_limit", "chunks="):
        assert python not in err


def test_name_names_the_model_and_the_engines_load_the_path(capsys):
    code, out, err = run_cli(capsys, "plan", str(CONFIG), "--name", "my-8b", *PLAN[2:],
                             "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["model"] == "my-8b"
    # vllm serve loads the folder of the config, not the display name
    assert data["deployment"]["vllm_serve"].startswith(f"vllm serve {CONFIG.parent} ")
    code, out, err = run_cli(capsys, *PLAN, "--name", " ")
    assert code == 2 and "--name" in err


def test_launch_commands_take_the_path_to_load(capsys):
    traffic = rk.Traffic(5.0, 1000, 200)
    plan = rk.plan(traffic, rk.SLO(ttft=1.0), models="Llama-3.1-8B", gpus="H100-SXM-80GB",
                   max_num_seqs=64, max_num_batched_tokens=2048, replicates=2, requests=50)
    best = rk.cheapest_plan(plan, by=None)
    default = rk.planning.launch_commands(best, traffic)
    assert default["vllm_serve"].startswith("vllm serve meta-llama/Llama-3.1-8B ")
    local = rk.planning.launch_commands(best, traffic, model_path="/models/llama-3.1-8b")
    assert local["vllm_serve"].startswith("vllm serve /models/llama-3.1-8b ")
    assert "--model-path /models/llama-3.1-8b " in local["sglang_serve"]
    assert "--model /models/llama-3.1-8b " in local["bench_serve"]
    for bad in ("", " ", 3, None.__class__):
        with pytest.raises(TypeError, match="model_path"):
            rk.planning.launch_commands(best, traffic, model_path=bad)
