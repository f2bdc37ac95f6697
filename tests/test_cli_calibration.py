"""``--engine FILE`` on capacity, sweep and simulate; every output says what timed it."""

import json
from pathlib import Path

import pytest

from rooflinekit import catalog, roofline, units
from rooflinekit.calibrate import load_calibration
from rooflinekit.roofline import IDEAL
from rooflinekit.cli.main import main

CAL_FILE = Path(__file__).parent / "data" / "measurements" / "calibration_public.json"
CAL = load_calibration(CAL_FILE)


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_capacity_applies_each_phase_and_says_so(capsys):
    base = ("capacity", "llama-3.1-8b", "h100", "--batch-size", "16", "--json")
    _, out, _ = run(capsys, *base, "--engine", "ideal")
    ideal = json.loads(out)
    assert ideal["model_quality"] == IDEAL.label
    _, out, _ = run(capsys, *base, "--engine", str(CAL_FILE))
    cal = json.loads(out)
    assert cal["model_quality"] == CAL.label and "held-out TPOT error" in cal["model_quality"]
    model, gpu = catalog.model("llama-3.1-8b"), catalog.gpu("h100")
    ttft = roofline.prefill_time(model, gpu, 1024, engine=CAL.engine_for(
        "prefill", model=model, gpu=gpu)) / units.MS
    itl = roofline.decode_step_time(model, gpu, 16, 8192, engine=CAL.engine_for(
        "decode", model=model, gpu=gpu)) / units.MS
    assert cal["ttft_ms"] == pytest.approx(float(ttft), rel=1e-12)
    assert cal["decode_step_time_ms"] == pytest.approx(float(itl), rel=1e-12)
    assert cal["ttft_ms"] > ideal["ttft_ms"] and cal["tokens_per_s"] < ideal["tokens_per_s"]
    # memory: a calibration runs vLLM's scheduler, whose footprint comes off as the default's
    # does; the bound keeps nothing beside the weights
    _, out, _ = run(capsys, *base)
    assert cal["kv_budget_tokens"] == json.loads(out)["kv_budget_tokens"]
    assert cal["kv_budget_tokens"] < ideal["kv_budget_tokens"]
    _, text, _ = run(capsys, *base[:-1], "--engine", str(CAL_FILE))
    assert f"timing: {CAL.label}" in text
    _, text, _ = run(capsys, *base[:-1], "--engine", "ideal")
    assert f"timing: {IDEAL.label}" in text
    # no --engine: the vLLM profile of the GPU, labelled so
    _, out, _ = run(capsys, *base)
    assert json.loads(out)["model_quality"].startswith("calibrated: vllm ")


def test_sweep_takes_each_phase_knobs_and_says_so(capsys):
    base = ("sweep", "--models", "Llama-3.1-8B", "--gpus", "h100", "--tp", "1",
            "--max-model-len", "4096", "--batch-size", "8", "--json")
    _, out, _ = run(capsys, *base, "--engine", "ideal")
    ideal = json.loads(out)
    assert ideal["model_quality"] == IDEAL.label
    _, out, _ = run(capsys, *base, "--engine", str(CAL_FILE))
    cal = json.loads(out)
    assert cal["model_quality"] == CAL.label
    assert cal["rows"][0]["tokens_per_second_per_gpu"] < ideal["rows"][0]["tokens_per_second_per_gpu"]
    _, text, _ = run(capsys, *base[:-1], "--engine", str(CAL_FILE))
    assert "timing: calibrated:" in text


def test_simulate_passes_the_calibration_to_the_batchers(capsys):
    base = ("simulate", "--workload", "constant", "--requests", "32", "--output-mean", "64",
            "--input-len", "256", "--model", "llama-3.1-8b", "--gpu", "h100", "--json")
    _, out, _ = run(capsys, *base, "--engine", "ideal")
    ideal = json.loads(out)
    assert ideal["model_quality"] == IDEAL.label
    _, out, _ = run(capsys, *base, "--engine", str(CAL_FILE))
    cal = json.loads(out)
    assert cal["model_quality"] == CAL.label
    assert cal["continuous"]["makespan"] > ideal["continuous"]["makespan"]
    assert cal["static"]["makespan"] > ideal["static"]["makespan"]
    _, text, _ = run(capsys, *base[:-1], "--engine", str(CAL_FILE))
    assert f"timing: {CAL.label}" in text


def test_simulate_tick_clock_says_so(capsys):
    _, out, _ = run(capsys, "simulate", "--json")
    assert json.loads(out)["model_quality"].startswith("tick clock")


def test_engine_file_of_fields(capsys, tmp_path):
    # an engine JSON of Engine fields times every phase alike, and --allreduce overrides it
    base = ("capacity", "llama-3.1-8b", "h100", "--batch-size", "16", "--tp", "2", "--json")
    path = tmp_path / "engine.json"
    path.write_text(json.dumps({"bandwidth_efficiency": 0.8, "step_overhead": 0.002}))
    _, out, _ = run(capsys, *base, "--engine", str(path))
    got = json.loads(out)
    engine = roofline.Engine(bandwidth_efficiency=0.8, step_overhead=0.002)
    model, gpu = catalog.model("llama-3.1-8b"), catalog.gpu("h100")
    itl = roofline.decode_step_time(model, gpu, 16, 8192, 2, engine=engine) / units.MS
    assert got["decode_step_time_ms"] == pytest.approx(float(itl), rel=1e-12)
    assert got["model_quality"] == engine.label == \
        "engine: bandwidth_efficiency=0.8, step_overhead=0.002"
    _, out, _ = run(capsys, *base, "--engine", str(path), "--allreduce", "guide")
    simple = roofline.decode_step_time(model, gpu, 16, 8192, 2,
                                       engine=engine.replace(allreduce="guide")) / units.MS
    assert json.loads(out)["decode_step_time_ms"] == pytest.approx(float(simple), rel=1e-12)
    path.write_text(json.dumps({"bandwith_efficiency": 0.8}))
    code, _, err = run(capsys, *base, "--engine", str(path))
    assert code == 2 and "engine.json" in err and "bandwith_efficiency" in err


def test_calibration_flag_checked(capsys, tmp_path):
    code, _, err = run(capsys, "simulate", "--engine", str(CAL_FILE))
    assert code == 2 and "--engine applies with --model" in err
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    bad.write_text(json.dumps({"prefill": {"compute_efficiency": 0}}))
    code, _, err = run(capsys, "capacity", "llama-3.1-8b", "h100", "--engine", str(bad))
    assert code == 2 and "bad.json" in err
    code, _, err = run(capsys, "sweep", "--engine", str(tmp_path / "missing.json"))
    assert code != 0 and "missing.json" in err


@pytest.mark.parametrize("command", [
    ("capacity", "llama-3.1-8b", "h100", "--batch-size", "16", "--json"),
    ("layouts", "llama-3.1-8b", "h100", "--num-gpus", "2", "--json"),
    ("sweep", "--models", "llama-3.1-8b", "--gpus", "h100", "--json"),
    ("simulate", "--workload", "constant", "--requests", "8", "--model", "llama-3.1-8b",
     "--gpu", "h100", "--json"),
    ("curve", "llama-3.1-8b", "--gpu", "h100", "--rates", "1", "--prompt-mean", "500",
     "--output-mean", "50", "--replicates", "1", "--requests", "20", "--json"),
    ("plan", "llama-3.1-8b", "--gpus", "h100", "--rate", "1", "--prompt-mean", "500",
     "--output-mean", "50", "--ttft", "1", "--replicates", "1", "--requests", "30", "--json"),
    ("disaggregated", "llama-3.1-8b", "--gpu", "h100", "--splits", "1P1D", "--rate", "1",
     "--prompt-mean", "500", "--output-mean", "50", "--ttft", "1", "--replicates", "1",
     "--requests", "30", "--json"),
])
def test_calibration_flag_is_the_engine_file(capsys, monkeypatch, command):
    # the issue's `plan --calibration FILE`: the same answer as --engine FILE on every command
    # that times steps, labelled by the calibration; the file read once, when checked
    from rooflinekit.cli import _args
    reads = []
    load = _args.load_engine
    monkeypatch.setattr(_args, "load_engine", lambda path: reads.append(path) or load(path))
    code, by_flag, err = run(capsys, *command, "--calibration", str(CAL_FILE))
    assert code == 0, err
    assert reads == [str(CAL_FILE)]
    code, by_engine, err = run(capsys, *command, "--engine", str(CAL_FILE))
    assert code == 0, err
    assert by_flag == by_engine and CAL.label in by_flag


def test_calibration_flag_refusals(capsys, tmp_path):
    base = ("capacity", "llama-3.1-8b", "h100")
    code, _, err = run(capsys, *base, "--calibration", str(CAL_FILE), "--engine", "vllm")
    assert code == 2 and "--calibration and --engine" in err
    fields = tmp_path / "engine.json"
    fields.write_text(json.dumps({"compute_efficiency": 0.5}))
    code, _, err = run(capsys, *base, "--calibration", str(fields))
    assert code == 2 and "not a calibration" in err and "--engine FILE" in err
    code, _, err = run(capsys, *base, "--calibration", str(tmp_path / "missing.json"))
    assert code == 2 and "--calibration" in err and "missing.json does not exist" in err
    code, _, err = run(capsys, "simulate", "--calibration", str(CAL_FILE))
    assert code == 2 and "--calibration applies with --model" in err


def test_calibrate_command_fits_engine_knobs_and_sets(tmp_path, capsys):
    from rooflinekit.calibrate import load_calibration
    from rooflinekit.cli.main import main as cli_main
    data = Path(__file__).parent / "data" / "measurements"
    out = tmp_path / "cal.json"
    code = cli_main(["calibrate", str(data / "public_more.csv"), "--resamples", "0",
                     "--fit", "engine", "--workload", "serving", "--group-by", "gpu",
                     "--output", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "layer_overhead" in text and "knob sets by gpu" in text
    cal = load_calibration(out)
    assert cal.group_by == ("gpu",) and "layer_overhead" in cal.decode
