"""A calibration says what it is, and every simulator and planner output carries it."""

import json

import numpy as np
import pytest

import rooflinekit
from rooflinekit import Engine, batching, calibrate, planning, roofline
from rooflinekit.calibrate import IDEAL, Calibration, load_calibration, save_calibration
from rooflinekit.workloads import guide_workload

CAL = Calibration(prefill={"compute_efficiency": 0.43, "step_overhead": 5e-3},
                  decode={"bandwidth_efficiency": 0.61, "step_overhead": 2e-4},
                  source="bench")


def test_label_names_the_source_and_the_held_out_error():
    assert CAL.label == "calibrated: bench"
    cv = Calibration(source="bench", held_out_error=13.46)
    assert cv.label == "calibrated: bench, held-out TPOT error 13.5%"
    assert Calibration().label == "calibrated: unnamed calibration"
    # the ideal engine, re-exported: its label is what an ideal output says of itself
    assert isinstance(IDEAL, Engine) and IDEAL.label.startswith("ideal (best case)")
    assert planning.IDEAL == batching.IDEAL == roofline.IDEAL == rooflinekit.IDEAL == IDEAL


@pytest.mark.parametrize("bad, error", [(-1.0, ValueError), (float("nan"), ValueError),
                                        ("5%", TypeError)])
def test_held_out_error_checked(bad, error):
    with pytest.raises(error, match="held_out_error"):
        Calibration(held_out_error=bad)


def test_held_out_error_round_trips(tmp_path):
    cal = Calibration(decode={"bandwidth_efficiency": 0.5}, source="x", held_out_error=7.0)
    back = load_calibration(save_calibration(cal, tmp_path / "c.json"))
    assert back == cal and back.label.endswith("7.0%")
    # files written before the field load as not cross-validated
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"prefill": {}, "decode": {}, "source": "old"}))
    assert load_calibration(old).held_out_error is None


def test_bad_calibration_file_names_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="bad.json"):
        load_calibration(bad)
    bad.write_text(json.dumps({"prefill": {"compute_efficiency": 2}}))
    with pytest.raises(ValueError, match="bad.json.*compute_efficiency"):
        load_calibration(bad)


def test_step_engine_takes_each_phase_where_it_binds():
    step = CAL.engine_for("step")
    assert step.fields() == Engine(compute_efficiency=0.43, bandwidth_efficiency=0.61,
                                   step_overhead=2e-4).fields()
    assert step.label == CAL.label
    assert Calibration().engine_for("step").fields() == IDEAL.fields()


def test_calibration_round_trips_its_base_engine(tmp_path):
    cal = Calibration(decode={"bandwidth_efficiency": 0.5}, source="x",
                      base=Engine(allreduce="ring"))
    assert Calibration.from_dict(cal.to_dict()) == cal
    assert json.loads(json.dumps(cal.to_dict()))["base"] == {"allreduce": "ring"}
    back = load_calibration(save_calibration(cal, tmp_path / "c.json"))
    assert back == cal and back.base == Engine(allreduce="ring")
    decode = back.engine_for("decode")
    assert decode.allreduce == "ring" and decode.bandwidth_efficiency == 0.5
    assert decode.label == "calibrated: x"
    # a base with a label of its own keeps it; the ideal base writes nothing
    named = Calibration(base=Engine(compute_dtype="fp8", label="vllm fp8"))
    assert Calibration.from_dict(named.to_dict()) == named
    assert "base" not in Calibration().to_dict()
    with pytest.raises(TypeError, match="base"):
        Calibration(base={"allreduce": "ring"})
    with pytest.raises(TypeError, match="unknown engine field"):
        Calibration.from_dict({"base": {"allreduse": "ring"}})


@pytest.mark.parametrize("make", [
    lambda **kw: batching.ContinuousBatcher(max_num_seqs=16, **kw),
    lambda **kw: batching.StaticBatcher(batch_size=8, **kw)])
def test_batchers_take_a_calibration(make):
    spec = {"model": "llama-3.1-8b", "gpu": "h100"}
    wl = guide_workload()
    calibrated = make(**spec, engine=CAL)
    assert calibrated.engine is CAL
    same = make(**spec, engine=CAL.engine_for("step"))
    unnamed = make(**spec, engine=Engine(**CAL.engine_for("step").fields()))
    a, b, c = calibrated.run(wl), same.run(wl), unnamed.run(wl)
    np.testing.assert_array_equal(a["finish"].values, b["finish"].values)
    np.testing.assert_array_equal(a["finish"].values, c["finish"].values)
    assert a.attrs["model_quality"] == "calibrated: bench"
    assert b.attrs["model_quality"] == "calibrated: bench"
    assert c.attrs["model_quality"].startswith("engine: ")
    assert make(**spec, engine=IDEAL).run(wl).attrs["model_quality"] == IDEAL.label
    assert make(**spec, engine="ideal").run(wl).attrs["model_quality"] == IDEAL.label
    # the roofline clock's default is the GPU's vLLM profile, labelled so
    from rooflinekit.profiles import resolve_engine
    default = make(**spec).run(wl).attrs["model_quality"]
    assert default == resolve_engine("vllm", spec["gpu"]).label != IDEAL.label
    assert default.startswith("calibrated: vllm ") and " profile for " in default
    assert make().run(wl).attrs["model_quality"].startswith("tick clock")
    # slower than ideal, as the knobs say
    assert float(a["makespan"]) > float(make(**spec, engine=IDEAL).run(wl)["makespan"])
    reps = batching.run_replicates(calibrated, wl.arrival[None], wl.prompt_tokens[None],
                                   wl.output_tokens[None])
    assert reps.attrs["model_quality"] == "calibrated: bench"


def test_batcher_engine_checked_at_construction():
    spec = {"model": "llama-3.1-8b", "gpu": "h100"}
    with pytest.raises(TypeError, match="engine must be"):
        batching.ContinuousBatcher(**spec, engine={"compute_efficiency": 0.5})
    with pytest.raises(TypeError, match="calibration"):
        batching.ContinuousBatcher(**spec, calibration=CAL)
    # a calibration times roofline steps: without a model and GPU it is refused, not ignored
    with pytest.raises(ValueError, match="model and gpu"):
        batching.StaticBatcher(engine=CAL)
    with pytest.raises(ValueError, match="model and gpu"):
        batching.StaticBatcher(engine=CAL, clock="roofline")


def test_planning_uses_the_calibration_step_engine():
    # the planners ask for each configuration's mixed-step engine by model and GPU
    step = roofline.engine_for(CAL, "step", model="Llama-3.1-8B", gpu="H100-SXM-80GB")
    assert step == CAL.engine_for("step")
    assert step.label == CAL.label
    ideal = roofline.engine_for(None, "step", model="Llama-3.1-8B", gpu="H100-SXM-80GB")
    assert ideal is IDEAL and ideal.label == IDEAL.label
    assert calibrate.Calibration is Calibration
