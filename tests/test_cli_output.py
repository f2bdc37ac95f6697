"""Scriptable output: --json, --csv and --output FILE on every command (an existing one kept
unless --force); tables with one number format per column; capacity's exit status; the price
catalogue and --version."""

from __future__ import annotations

import csv
import io
import json

import pytest
import xarray as xr

from rooflinekit import catalog
from rooflinekit.cli import main
from rooflinekit.cli._output import format_column, print_table

#: One quick run of every command.
RUNS = {
    "guide": ["guide", "--section", "memory"],
    "catalog": ["catalog", "gpus", "h100", "l40s"],
    "capacity": ["capacity", "guide-70b", "lab", "--tp", "8"],
    "layouts": ["layouts", "llama-3.1-8b", "h100", "--num-gpus", "4", "--input-len", "100"],
    "price": ["price", "--input-price", "3", "--output-price", "12", "--output-fraction", "0.1",
              "0.5"],
    "simulate": ["simulate"],
    "sweep": ["sweep", "--models", "guide-70b", "--gpus", "h100", "--tp", "1,8",
              "--max-model-len", "1024", "--batch-size", "1,8", "--no-progress"],
    "plan": ["plan", "llama-3.1-8b", "--gpus", "h100", "--rate", "2", "--prompt-mean", "200",
             "--output-mean", "50", "--itl", "0.05", "--replicates", "2", "--requests", "40"],
    "disaggregated": ["disaggregated", "llama-3.1-8b", "--gpu", "h100", "--splits", "1P1D",
                      "--rate", "2", "--prompt-mean", "200", "--output-mean", "50", "--itl",
                      "0.05", "--replicates", "2", "--requests", "40"],
    "curve": ["curve", "llama-3.1-8b", "--gpu", "h100", "--concurrencies", "2,8",
              "--prompt-mean", "200", "--output-mean", "50", "--replicates", "2", "--requests",
              "40"],
    "calibrate": ["calibrate", "tests/data/measurements/public.csv", "--resamples", "2",
                  "--phase", "decode", "--fit", "step_overhead"],
}


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def repo(monkeypatch, request):
    monkeypatch.chdir(request.config.rootpath)


def test_every_command_is_covered():
    from rooflinekit.cli.main import COMMANDS

    assert sorted(RUNS) == sorted(c.NAME for c in COMMANDS)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_json_csv_and_output_files(name, capsys, tmp_path, repo):
    argv, path = RUNS[name], tmp_path / name
    code, out, _ = run(capsys, *argv, "--json", "--output", f"{path}.nc")
    assert code == 0 and json.loads(out) and xr.open_dataset(f"{path}.nc").sizes
    code, out, _ = run(capsys, *argv, "--csv", "--output", f"{path}.csv")
    rows = list(csv.reader(io.StringIO(out)))
    assert code == 0 and len(rows) >= 2 and len({len(r) for r in rows}) == 1
    assert (tmp_path / f"{name}.csv").read_text() == out
    code, out, _ = run(capsys, *argv, "--output", f"{path}.json")
    assert code == 0 and f"{path}.json" in out and json.loads((tmp_path / f"{name}.json")
                                                                .read_text())


@pytest.mark.parametrize("name", sorted(RUNS))
def test_an_existing_output_is_kept_unless_forced(name, capsys, tmp_path, repo):
    """Every command refuses to overwrite an existing --output (exit 2, one line, before the
    work), and replaces it with --force."""
    path = tmp_path / f"{name}.json"
    path.write_text("precious\n")
    code, out, err = run(capsys, *RUNS[name], "--output", str(path))
    assert code == 2 and out == "" and err.count("\n") == 1 and "--force" in err
    assert path.read_text() == "precious\n"
    code, out, err = run(capsys, *RUNS[name], "--output", str(path), "--force")
    assert code == 0, err
    assert json.loads(path.read_text())


def test_one_number_format_per_column():
    assert format_column([3.076923e9, 1.6e9]) == ["3,076,923,000", "1,600,000,000"]
    assert format_column([0.1, 0.5]) == ["0.1", "0.5"]
    assert format_column([0.76923, 0.4]) == ["0.7692", "0.4000"]
    assert format_column([1e-6, 2.0]) == ["1.000e-06", "2.000e+00"]
    assert format_column([3, 12000, None]) == ["3", "12,000", "-"]
    out = io.StringIO()
    print_table(("name", "value [s]"), [("a", 1.5), ("bb", 12.25)], out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "  name  value [s]"
    assert lines[2].endswith("   1.50") and lines[3].endswith("  12.25")   # right-aligned


def test_a_refusal_names_the_engines_memory_beside_the_weights(capsys):
    # 8B bf16 weights (15.0 GiB) fit an L4's 22 GiB alone; TensorRT-LLM's profiling peak
    # beside them (10.7 GiB) is what leaves no KV cache, and the refusal says so
    code, _, err = run(capsys, "capacity", "llama-3.1-8b", "l4", "--engine", "trtllm")
    refusal = err.splitlines()[-1]
    assert code == 1 and "the weights (15.0 GiB) and what the engine keeps beside them on " \
        "each GPU (10.7 GiB: " in refusal and "profiling peak" in refusal
    # the bound keeps nothing beside the weights: it fits
    code, _, _ = run(capsys, "capacity", "llama-3.1-8b", "l4", "--engine", "ideal")
    assert code == 0


def test_capacity_that_does_not_fit_exits_1(capsys):
    code, out, err = run(capsys, "capacity", "guide-70b", "lab", "--tp", "1")
    # the refusal is one line; before it, the lab GPU's borrowed profile is one warning line
    *warned, refusal = err.splitlines()
    assert code == 1 and out == "" and "does not fit" in refusal and err.endswith("\n")
    assert [w.split(": warning: ")[0] for w in warned] == ["rooflinekit capacity"]
    code, out, _ = run(capsys, "capacity", "guide-70b", "lab", "--tp", "1", "--show-anyway",
                       "--json")
    data = json.loads(out)
    assert code == 0 and data["fits"] is False and "KV cache" in data["warning"]


def test_capacity_vllm_rule_and_dtypes(capsys):
    code, out, _ = run(capsys, "capacity", "llama-3.1-8b", "h100", "--json")
    base = json.loads(out)
    code, out, _ = run(capsys, "capacity", "llama-3.1-8b", "h100", "--kv-cache-dtype", "fp8",
                       "--dtype", "fp8", "--json")
    fp8 = json.loads(out)
    assert fp8["kv_bytes_per_token"] == base["kv_bytes_per_token"] / 2
    assert fp8["weight_gib"] == pytest.approx(base["weight_gib"] / 2)
    # the default is vLLM's rule at its own 0.9, in whole blocks of 16 tokens
    assert base["gpu_memory_utilization"] == 0.9 and base["kv_budget_tokens"] % 16 == 0
    code, out, _ = run(capsys, "capacity", "llama-3.1-8b", "h100", "--gpu-memory-utilization",
                       "0.9", "--json")
    assert code == 0 and json.loads(out)["kv_budget_tokens"] == base["kv_budget_tokens"]
    code, out, _ = run(capsys, "capacity", "llama-3.1-8b", "h100", "--gpu-memory-utilization",
                       "0.95", "--json")
    assert code == 0 and json.loads(out)["kv_budget_tokens"] > base["kv_budget_tokens"]
    code, out, _ = run(capsys, "capacity", "llama-3.1-8b", "h100", "--workspace-fraction",
                       "0.1", "--json")
    guide = json.loads(out)
    assert code == 0 and guide["kv_budget_tokens"] != base["kv_budget_tokens"]
    assert "gpu_memory_utilization" not in guide and guide["kv_cache_rule"].startswith(
        "the guide's")


def test_catalog_prices_and_version(capsys):
    code, out, _ = run(capsys, "catalog", "prices", "--json")
    rows = json.loads(out)
    table = catalog.price_table()
    assert code == 0 and len(rows) == sum(len(v) for v in table.values() if isinstance(v, list))
    assert all(r["date"] and r["source"] for r in rows)
    code, out, _ = run(capsys, "catalog", "prices", "guide-lab")
    assert code == 0 and "guide-lab" in out and "2026" in out
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.startswith("rooflinekit ")


def test_simulate_flags_take_effect(capsys):
    code, out, _ = run(capsys, "simulate", "--workload", "constant", "--requests", "20",
                       "--arrival", "poisson", "--rate", "0.05", "--json")
    slow = json.loads(out)
    assert code == 0
    code, out, _ = run(capsys, "simulate", "--workload", "constant", "--requests", "20",
                       "--json")
    burst = json.loads(out)
    assert code == 0 and slow["continuous"]["makespan"] > burst["continuous"]["makespan"]


def test_a_library_warning_is_one_line_naming_the_command(capsys):
    """The library's warnings (here: a GPU timed by its nearest profile) reach stderr as one
    line each, ``rooflinekit COMMAND: warning: ...``, without Python's file, line and source;
    the caller's warning handler is back once the command returns."""
    import warnings
    before = warnings.showwarning
    code, out, err = run(capsys, "capacity", "llama-3.1-8b", "rtx-4090")
    assert code == 0 and out
    assert err.startswith("rooflinekit capacity: warning: no vllm profile for RTX-4090; using "
                          "the L40S profile")
    assert err.count("\n") == 1 and "UserWarning" not in err and ".py:" not in err
    assert warnings.showwarning is before


def test_layouts_and_sweep_say_their_kv_rule(capsys):
    # layouts: the engine's rule by default, the guide's with --workspace-fraction
    code, out, _ = run(capsys, "layouts", "llama-3.1-70b", "h100", "--num-gpus", "4")
    assert code == 0 and ("KV cache: 0.9 of the 79.19 GiB the driver reports on each GPU, "
                          "less the weights and vllm 0.19.0's activation peak") in out
    code, out, _ = run(capsys, "layouts", "llama-3.1-70b", "h100", "--num-gpus", "4",
                       "--workspace-fraction", "0.1")
    assert code == 0 and ("KV cache: the guide's rule, 0.1 of what the weights leave kept as "
                          "workspace") in out
    # sweep: the engine's rule by default, the guide's with --workspace-fraction
    args = ("sweep", "--models", "llama-3.1-8b", "--gpus", "h100", "--tp", "1",
            "--max-model-len", "4096", "--batch-size", "8", "--no-progress")
    code, out, _ = run(capsys, *args)
    assert code == 0 and ("KV cache: the engine's: 0.9 of the memory the driver reports on "
                          "each GPU, less the weights and vllm 0.19.0's activation peak") in out
    code, out, _ = run(capsys, *args, "--workspace-fraction", "0.2")
    assert code == 0 and "KV cache: the guide's rule, 0.2 of what the weights leave" in out
    code, out, _ = run(capsys, *args, "--gpu-memory-utilization", "0.8")
    assert code == 0 and "KV cache: the engine's: 0.8 of the memory" in out
    code, _, err = run(capsys, *args, "--gpu-memory-utilization", "0.8",
                       "--workspace-fraction", "0.2")
    assert code != 0 and "give one of them" in err
