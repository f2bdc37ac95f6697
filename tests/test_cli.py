"""The command line: each command's output, --json, and one-line errors for bad input."""

import json
import subprocess
import sys

import pytest

import rooflinekit
from rooflinekit import cli
from rooflinekit.cli.main import COMMANDS


def run(capsys, *argv):
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_capacity_text_and_json(capsys):
    # the guide's memory rule, asked for by its flag: 183 sequences of 8,192 tokens (guide §2.4)
    code, out, _ = run(capsys, "capacity", "guide-70b", "lab", "--tp", "8", "--max-model-len", "8192",
                       "--workspace-fraction", "0.1")
    assert code == 0 and "max concurrent sequences" in out and "183" in out
    # by default vLLM's: 0.9 of each 80 GiB GPU less 17.5 GB of weights and vLLM's 2.09 GiB of
    # non-torch memory (the guide's model has no vocabulary: no sampler peak), 327,680 B a token
    code, out, _ = run(capsys, "capacity", "guide-70b", "lab", "--tp", "8", "--json")
    default = json.loads(out)
    per_gpu = 0.9 * 80 * 2**30 - 140e9 / 8 - 2.09 * 2**30
    assert default["max_concurrent_sequences"] == int(8 * per_gpu // (327_680 * 8192))
    # the guide's arithmetic: the ideal roofline and the guide's memory rule, asked for by name
    code, out, _ = run(capsys, "capacity", "guide-70b", "lab", "--tp", "8", "--allreduce", "guide",
                       "--engine", "ideal", "--workspace-fraction", "0.1", "--json")
    data = json.loads(out)
    assert data["max_concurrent_sequences"] == 183
    # guide §4.1 (its simple model, no all-reduce): (weights + B·KV) / bandwidth, batch 1 at
    # 8,192 tokens over 8 GPUs
    assert data["decode_step_time_ms"] == pytest.approx((140e9 + 327_680 * 8192) / (8 * 3.35e12) * 1e3)
    assert data["usd_per_million_tokens"] is not None                     # lab GPU is $3/h


def test_capacity_reads_a_config_json(capsys, tmp_path):
    cfg = {"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
           "hidden_size": 256, "intermediate_size": 512, "vocab_size": 1000,
           "torch_dtype": "bfloat16"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    code, out, _ = run(capsys, "capacity", str(path), "h100", "--json")
    assert code == 0 and json.loads(out)["kv_bytes_per_token"] == 2 * 2 * 2 * 64 * 2


def test_capacity_warns_when_batch_does_not_fit(capsys):
    code, out, _ = run(capsys, "capacity", "guide-70b", "lab", "--tp", "8", "--batch-size", "500",
                       "--json")
    assert "warning" in json.loads(out)


def test_price_break_even_and_cheapest(capsys):
    code, out, _ = run(capsys, "price", "--input-price", "3", "--output-price", "12",
                       "--provisioned-monthly", "12000", "--provisioned-capacity", "4e9",
                       "--output-fraction", "0.1", "0.5", "--monthly-tokens", "3e9", "--json")
    rows = json.loads(out)
    assert code == 0
    assert rows[0]["break_even_utilization"] == pytest.approx(0.7692, abs=1e-4)   # guide §6.3
    assert rows[1]["break_even_utilization"] == pytest.approx(0.40)
    assert rows[0]["cheapest"] == "pay-as-you-go" and rows[1]["cheapest"] == "provisioned"


def test_catalog_lists_sources(capsys):
    code, out, _ = run(capsys, "catalog", "gpus", "--json")
    gpus = json.loads(out)
    assert code == 0 and len(gpus) >= 12 and all(g["source"] for g in gpus)
    code, out, _ = run(capsys, "catalog", "models", "deepseek-v3")
    assert code == 0 and "MLA" in out


@pytest.mark.parametrize("argv, needle", [
    (["capacity", "no-such-model", "h100"], "unknown model"),
    (["capacity", "guide-70b", "no-such-gpu"], "unknown GPU"),
    (["capacity", "missing/config.json", "h100"], "does not exist"),
    (["price", "--input-price", "-3", "--output-price", "12", "--output-fraction", "0.1"],
     "input"),
    (["price", "--input-price", "3", "--output-price", "12", "--output-fraction", "1.5"],
     "output_fraction"),
    (["catalog", "models", "nope"], "unknown model"),
])
def test_bad_input_is_one_line(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [["capacity", "guide-70b", "lab", "--tp", "0"], ["nope"], []])
def test_usage_errors_are_one_line(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error" in err


def test_help_has_examples(capsys):
    for command in ("guide", "capacity", "price", "catalog", "calibrate", "simulate", "sweep"):
        with pytest.raises(SystemExit):
            cli.main([command, "--help"])
        assert "example" in capsys.readouterr().out


def test_simulate_guide_workload(capsys):
    code, out, _ = run(capsys, "simulate", "--json")
    data = json.loads(out)
    assert code == 0 and data["requests"] == 24
    # docs/conventions.md: 1,220 vs 440 ticks, service latency 336.67 vs 67.5
    assert data["static"]["makespan"] == 1220 and data["continuous"]["makespan"] == 440
    assert data["static"]["mean_service_latency"] == pytest.approx(336.67, abs=0.005)
    assert data["continuous"]["mean_service_latency"] == 67.5


def test_simulate_roofline_timed(capsys):
    code, out, _ = run(capsys, "simulate", "--workload", "lognormal", "--requests", "50",
                       "--input-len", "100", "--model", "llama-3.1-8b", "--gpu", "h100", "--json")
    data = json.loads(out)
    assert code == 0 and data["time_units"] == "s"
    assert data["continuous"]["makespan"] < data["static"]["makespan"]
    assert data["static"]["n_completed"] == 50


def test_sweep_best(capsys):
    code, out, _ = run(capsys, "sweep", "--models", "guide-70b", "--gpus", "guide-lab-80GB",
                       "--report", "best", "--no-progress", "--json")
    assert code == 0 and json.loads(out)


def test_simulate_and_sweep_errors(capsys):
    code, _, err = run(capsys, "simulate", "--model", "llama-3.1-8b")
    assert code == 2 and "--gpu" in err and err.count("\n") == 1
    code, _, err = run(capsys, "sweep", "--models", "nope", "--no-progress")
    assert code == 2 and "unknown model" in err


def test_sweep_and_simulate_read_a_config_json(capsys, tmp_path):
    cfg = {"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
           "hidden_size": 256, "intermediate_size": 512, "vocab_size": 1000,
           "torch_dtype": "bfloat16"}
    path = tmp_path / "tiny" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(cfg))
    code, out, _ = run(capsys, "sweep", "--models", str(path), "guide-70b", "--gpus", "h100",
                       "--report", "best", "--no-progress", "--json")
    rows = json.loads(out)["rows"]
    assert code == 0 and [r["model"] for r in rows] == ["tiny", "guide-70b"]   # named by folder
    assert all(r["found"] for r in rows)
    code, out, _ = run(capsys, "simulate", "--workload", "constant", "--requests", "8",
                       "--model", str(path), "--gpu", "h100", "--json")
    assert code == 0 and json.loads(out)["static"]["n_completed"] == 8


def test_every_command_is_one_module():
    for command in COMMANDS:
        assert command.__name__ == f"rooflinekit.cli.{command.NAME}"
        assert callable(command.add_arguments) and callable(command.run)
        assert "examples:" in command.EPILOG


def test_examples_start_with_the_command_they_document():
    from rooflinekit.cli._args import examples

    assert examples("catalog", "gpus", "models --json") == (
        "examples:\n  rooflinekit catalog gpus\n  rooflinekit catalog models --json")
    for command in COMMANDS:
        lines = [line for line in command.EPILOG.splitlines() if line.startswith("  rooflinekit ")]
        assert lines and all(line.split()[1] == command.NAME for line in lines)


HEAVY = "('numba', 'dask', 'distributed', 'matplotlib', 'scipy')"


def test_help_imports_nothing_heavy():
    # `rooflinekit --help` stays fast: the heavy modules load only when a command needs them.
    # What xarray itself imports is not ours to choose (xarray 2025.9 imports scipy, 2026.9
    # does not): the heavy modules counted are those beyond a bare `import xarray`.
    def heavy(code):
        code += f"\nimport json\nprint(json.dumps([m for m in {HEAVY} if m in sys.modules]))"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True)
        return set(json.loads(out.stdout.strip().splitlines()[-1]))
    baseline = heavy("import sys, xarray")
    help_ = heavy("import contextlib, io, sys\nfrom rooflinekit.cli.main import main\n"
                  "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress("
                  "SystemExit):\n    main(['--help'])")
    assert help_ - baseline == set()


def test_capacity_speculative_decoding_is_the_library(capsys):
    from rooflinekit import catalog, roofline
    code, out, _ = run(capsys, "capacity", "llama-3.1-70b", "h100", "--tp", "8", "--batch-size",
                       "4", "--speculative-draft", "0.05", "--num-speculative-tokens", "4",
                       "--acceptance", "0.8", "--json")
    assert code == 0
    data = json.loads(out)
    model, gpu = catalog.model("llama-3.1-70b"), catalog.gpu("h100")
    assert data["speculative_tokens_per_step"] == pytest.approx(3.3616, abs=1e-12)
    # the command's default engine is the vLLM profile of its GPU
    assert data["speculative_speedup"] == pytest.approx(float(roofline.speculative_speedup(
        model, gpu, 4, 8192, 8, draft=0.05, draft_tokens=4, acceptance=0.8,
        engine=rooflinekit.engine_profile("vllm", gpu))), rel=1e-12)
    code, _, err = run(capsys, "capacity", "llama-3.1-70b", "h100", "--acceptance", "0.8")
    assert code == 2 and "go together" in err


def test_simulate_prefix_caching(capsys):
    argv = ["simulate", "--workload", "lognormal", "--requests", "100", "--input-len", "50",
            "--prefix-tokens", "256", "--admission", "paged", "--json"]
    code, out, _ = run(capsys, *argv, "--enable-prefix-caching")
    assert code == 0
    cached = json.loads(out)["continuous"]
    # all arrive at once: the first batch admitted misses together, later ones hit
    assert cached["prefix_hit_rate"] > 0.5 and cached["prefill_tokens_saved"] > 0
    code, out, _ = run(capsys, *argv)
    plain = json.loads(out)["continuous"]
    assert "prefix_hit_rate" not in plain                     # not asked for, not shown
    # the same requests; a hit never costs more than a miss
    assert cached["mean_ttft"] <= plain["mean_ttft"]
    code, _, err = run(capsys, "simulate", "--prefix-tokens", "10")
    assert code == 2 and "drawn workload" in err
