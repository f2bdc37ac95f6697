"""A shipped profile's object plans as its engine's name does (``Calibration.serving_engine``).

``rk.engine_profile("trtllm", gpu)`` returns a Calibration; passed as ``engine=`` a planner must
run TensorRT-LLM's scheduler defaults, admission and memory rule, as it does for
``engine="trtllm"``, not vLLM's (the default for a calibration of the user's own). Expected
values are the name's own answers: the two must agree exactly.
"""

import numpy as np
import pytest

import rooflinekit as rk
from rooflinekit.planning import load_curve
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


@pytest.mark.parametrize("name", ["trtllm", "sglang", "vllm", "vllm@0.10.1.1"])
def test_the_object_takes_the_names_scheduler_admission_and_memory(name):
    engine, _, version = name.partition("@")
    profile = rk.engine_profile(engine, H100, version or None, warn=False)
    assert scheduler_engine(profile) == scheduler_engine(name)
    assert memory_engine(profile) == memory_engine(name)
    assert scheduler_admission("auto", profile, H100) == scheduler_admission("auto", name, H100)


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
    from rooflinekit.planning import fit_under_load
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
