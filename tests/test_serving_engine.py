"""A shipped profile's object plans as its engine's name does (``Calibration.serving_engine``).

``rk.engine_profile("trtllm", gpu)`` returns a Calibration; passed as ``engine=`` a planner must
run TensorRT-LLM's scheduler defaults, admission and memory rule, as it does for
``engine="trtllm"``, not vLLM's (the default for a calibration of the user's own). Expected
values are the name's own answers: the two must agree exactly.
"""

import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from helpers import run_cli

import rooflinekit as rk
from rooflinekit.calibrate import calibrate, measured_engine, read_trtllm_bench
from rooflinekit.planning import fit_under_load, load_curve
from rooflinekit.profiles import (Calibration, load_calibration, memory_engine,
                                  profiled_engine, save_calibration, scheduler_admission,
                                  scheduler_engine)
from rooflinekit.workloads import Constant

H100 = "H100-SXM-80GB"


@pytest.mark.parametrize("name, gpu, version, expected", [
    ("trtllm", H100, None, "trtllm"), ("sglang", "B200", None, "sglang"),
    ("vllm", H100, "0.10.1.1", "vllm@0.10.1.1"), ("vllm", None, None, "vllm"),
    ("trtllm", "RTX-4090", None, "trtllm")])      # a borrowed profile keeps its engine
def test_a_shipped_profile_names_its_engine(name, gpu, version, expected):
    profile = rk.engine_profile(name, gpu, version, warn=False)
    assert profile.serving_engine == expected
    assert profiled_engine(profile) == name


def test_profiles_for_several_gpus_name_their_engine():
    both = rk.profiles.resolve_engine("sglang", [H100, "H200-SXM-141GB"], warn=False)
    assert both.serving_engine == "sglang"


@pytest.mark.parametrize("name, gpu", [
    ("trtllm", H100), ("sglang", H100), ("vllm", H100), ("vllm@0.10.1.1", H100),
    # profiled versions: 0.24.0 counts its CUDA graphs, "vllm" alone keeps 0.19.0's rule
    ("vllm@0.24.0", H100), ("vllm@0.14.0", "A100-SXM-80GB")])
def test_the_object_takes_the_names_scheduler_admission_and_memory(name, gpu):
    engine, _, version = name.partition("@")
    profile = rk.engine_profile(engine, gpu, version or None, warn=False)
    assert profile.serving_engine == name
    assert scheduler_engine(profile) == scheduler_engine(name)
    assert memory_engine(profile) == memory_engine(name)
    assert scheduler_admission("auto", profile, gpu) == scheduler_admission("auto", name, gpu)


def test_a_users_calibration_keeps_vllms():
    """Without a serving engine a calibration plans with the default engine's rules."""
    mine = Calibration(prefill={"compute_efficiency": 0.7}, decode={"step_overhead": 1e-3})
    assert mine.serving_engine is None
    assert scheduler_engine(mine) == "vllm"
    assert memory_engine(mine) == "vllm"


def test_a_load_curve_of_the_object_is_the_names():
    """TensorRT-LLM's 2,048 sequences, reserve admission and KV share, by name or by object:
    the same curve, to the bit."""
    traffic = rk.Traffic(1.0, Constant(1000), Constant(200))
    args = dict(model="Llama-3.1-8B", gpu=H100, rates=[4.0], replicates=1, requests=40, seed=1,
                engine_draws=0)
    by_name = load_curve(traffic, rk.SLO(ttft=2.0), engine="trtllm", **args)
    by_object = load_curve(traffic, rk.SLO(ttft=2.0),
                           engine=rk.engine_profile("trtllm", H100, warn=False), **args)
    for name in ("mean_tpot", "mean_ttft", "throughput"):
        np.testing.assert_array_equal(by_object[name].values, by_name[name].values)
    for attr in ("max_num_seqs", "max_num_batched_tokens", "admission", "kv_budget_tokens",
                 "memory_outside_kv"):
        assert by_object.attrs[attr] == by_name.attrs[attr], attr
    # TensorRT-LLM's, not vLLM's: 2,048 sequences, reserve admission, its own memory
    assert (by_object.attrs["max_num_seqs"], by_object.attrs["admission"]) == (2048, "reserve")
    assert by_object.attrs["memory_outside_kv"].startswith("trtllm")


def test_it_survives_a_file(tmp_path):
    profile = rk.engine_profile("trtllm", H100, warn=False)
    path = save_calibration(profile, tmp_path / "trtllm.json")
    assert load_calibration(path).serving_engine == "trtllm"
    assert Calibration.from_dict(Calibration().to_dict()).serving_engine is None


@pytest.mark.parametrize("value, error", [
    ("tensorrt", ValueError), ("vllm@", ValueError), ("ideal", ValueError), (3, TypeError),
    (["vllm"], TypeError)])
def test_a_bad_serving_engine_is_refused_naming_it(value, error):
    with pytest.raises(error, match="serving_engine"):
        Calibration(serving_engine=value)


def test_a_load_fit_keeps_its_engines_rules():
    """``fit_under_load(engine="sglang")`` replays the runs under SGLang's scheduler and
    memory and hands back a calibration that plans as SGLang (it ran vLLM's before)."""
    traffic = rk.Traffic(1.0, Constant(1000), Constant(100))
    runs = []
    for rate in (2.0, 8.0):
        ds = load_curve(traffic, rk.SLO(ttft=2.0), model="Llama-3.1-8B", gpu=H100, rates=[rate],
                        engine="sglang", replicates=1, requests=40, seed=2)
        runs.append({"request_rate": rate, "completed": 40, "total_input_tokens": 40_000,
                     "total_output_tokens": 4_000,
                     "mean_ttft_ms": float(ds["mean_ttft"].values.ravel()[0]) * 1e3 + 20.0,
                     "mean_tpot_ms": float(ds["mean_tpot"].values.ravel()[0]) * 1e3})
    fit = fit_under_load(runs, model="Llama-3.1-8B", gpu=H100, engine="sglang",
                         fit=("frontend_latency",), replicates=1, requests=40, seed=2)
    assert fit.calibration.serving_engine == "sglang"
    assert scheduler_engine(fit.calibration) == "sglang"


_OUTPUTS = Path(__file__).parent / "data" / "engine_outputs"


@pytest.mark.parametrize("argv, expected", [
    # trtllm-bench's report names its engine and version: tensorrt-llm 0.21.0
    (["--from", "trtllm", str(_OUTPUTS / "trtllm_bench_report.json"), "--gpu", "h100",
      "--fit", "step_overhead"], "trtllm@0.21.0"),
    (["--from", "guidellm", str(_OUTPUTS / "guidellm_report.json"), "--model", "llama-3.1-8b",
      "--gpu", "h100", "--engine", "vllm 0.10.1"], "vllm@0.10.1"),
    (["--from", "guidellm", str(_OUTPUTS / "guidellm_report.json"), "--model", "llama-3.1-8b",
      "--gpu", "h100", "--engine", "SGLang"], "sglang"),
    # an engine without a profile, or none named: the planners' default rules
    (["--from", "guidellm", str(_OUTPUTS / "guidellm_report.json"), "--model", "llama-3.1-8b",
      "--gpu", "h100", "--engine", "lmdeploy 0.9"], None),
    (["--from", "guidellm", str(_OUTPUTS / "guidellm_report.json"), "--model", "llama-3.1-8b",
      "--gpu", "h100"], None)])
def test_a_calibration_of_static_runs_names_their_engine(capsys, tmp_path, argv, expected):
    """``rooflinekit calibrate`` writes the measured runs' engine as the calibration's
    ``serving_engine``, so that ``plan --calibration`` runs that engine's scheduler and memory
    (it wrote none before: every calibration planned with vLLM's rules)."""
    path = tmp_path / "mine.json"
    code, _, err = run_cli(capsys, "calibrate", *argv, "--output", str(path))
    assert code == 0, err
    assert load_calibration(path).serving_engine == expected


def test_the_measured_engine_is_the_one_every_run_names():
    def runs(*texts):
        return xr.Dataset({"engine": ("measurement", list(texts))})
    assert measured_engine(runs("vllm 0.10.1", "tensorrt-llm 1.0.0")) is None
    assert measured_engine(runs("vllm 0.10.1", "vllm 0.11.0")) == "vllm"   # two versions
    assert measured_engine(runs("vllm 0.10.1", "")) is None       # a run that names none
    assert measured_engine(runs("TensorRT-LLM latest")) == "trtllm"   # not a release number
    assert measured_engine(runs("SGLang 0.5.6", "sglang 0.5.6")) == "sglang@0.5.6"
    assert measured_engine(xr.Dataset()) is None


def test_calibrate_names_the_measured_engine():
    """The library call sets it, as the command does: a fit of trtllm-bench's report plans
    as TensorRT-LLM at that version."""
    runs = read_trtllm_bench(_OUTPUTS / "trtllm_bench_report.json", model="Llama-3.1-8B",
                             gpu="H100-SXM-80GB")
    fit = calibrate(runs, phases=("decode",), fit=("step_overhead",), n_resamples=0)
    assert fit.calibration.serving_engine == "trtllm@0.21.0"
    assert scheduler_engine(fit.calibration) == "trtllm"


def test_plan_with_a_calibration_launches_its_engine(capsys, tmp_path):
    """A TensorRT-LLM calibration plans TensorRT-LLM's slots and memory and puts its launch
    command first, as ``--engine trtllm`` does."""
    path = save_calibration(rk.engine_profile("trtllm", H100, warn=False), tmp_path / "t.json")
    question = ["plan", "llama-3.1-8b", "--gpus", "h100", "--tp", "1", "--rate", "2",
                "--prompt-mean", "500", "--output-mean", "100", "--ttft", "1", "--itl", "0.05",
                "--replicates", "2", "--requests", "60"]
    code, out, err = run_cli(capsys, *question, "--calibration", str(path))
    assert code == 0, err
    deploy = out.split("deploy ", 1)[1].splitlines()
    assert deploy[1].strip().startswith("trtllm-serve")
    assert "trtllm" in out.split("KV cache:", 1)[1].splitlines()[0]
    code, by_name, err = run_cli(capsys, *question, "--engine", "trtllm")
    assert code == 0, err
    assert by_name.split("deploy ", 1)[1] == out.split("deploy ", 1)[1]


@pytest.mark.parametrize("command", [
    ["capacity", "llama-3.1-8b", "h100"],
    ["layouts", "llama-3.1-70b", "h100", "--num-gpus", "8"]])
def test_memory_commands_take_a_calibrations_engine(capsys, tmp_path, command):
    """``capacity`` and ``layouts`` size the KV cache by the calibration's serving engine's
    memory rule (TensorRT-LLM's 0.9 of free memory here), as ``--engine trtllm`` does."""
    path = save_calibration(rk.engine_profile("trtllm", H100, warn=False), tmp_path / "t.json")
    code, by_file, err = run_cli(capsys, *command, "--calibration", str(path), "--json")
    assert code == 0, err
    code, by_name, err = run_cli(capsys, *command, "--engine", "trtllm", "--json")
    assert code == 0, err
    keys = ("kv_budget_tokens", "max_concurrent_sequences", "gpu_memory_utilization",
            "engine_memory_gib", "kv_cache_rule")

    def kv(text):
        rows = json.loads(text)
        return [{k: r[k] for k in keys if k in r} for r in
                (rows if isinstance(rows, list) else [rows])]
    assert kv(by_file) == kv(by_name)
    assert any(row["kv_budget_tokens"] > 0 for row in kv(by_file))
