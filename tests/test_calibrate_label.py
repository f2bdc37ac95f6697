"""A calibration says what it is, and every simulator and planner output carries it."""

import json

import numpy as np
import pytest

from rooflinekit import batching, calibrate, planning
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
    assert IDEAL.startswith("ideal (best case)")
    assert planning.IDEAL == batching.IDEAL == IDEAL


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


def test_clock_options_take_each_phase_where_it_binds():
    assert CAL.clock_options() == {"compute_efficiency": 0.43, "bandwidth_efficiency": 0.61,
                                   "step_overhead": 2e-4}
    assert Calibration().clock_options() == {"compute_efficiency": 1.0,
                                             "bandwidth_efficiency": 1.0, "step_overhead": 0.0}


@pytest.mark.parametrize("make", [
    lambda **kw: batching.ContinuousBatcher(max_num_seqs=16, **kw),
    lambda **kw: batching.StaticBatcher(batch_size=8, **kw)])
def test_batchers_take_a_calibration(make):
    spec = {"model": "llama-3.1-8b", "gpu": "h100"}
    wl = guide_workload()
    calibrated = make(**spec, calibration=CAL)
    assert calibrated.calibration is CAL
    same = make(**spec, roofline_options=CAL.clock_options())
    a, b = calibrated.run(wl), same.run(wl)
    np.testing.assert_array_equal(a["finish"].values, b["finish"].values)
    assert a.attrs["model_quality"] == "calibrated: bench"
    assert b.attrs["model_quality"].startswith("roofline options as given")
    assert make(**spec).run(wl).attrs["model_quality"] == IDEAL
    assert make().run(wl).attrs["model_quality"].startswith("tick clock")
    # slower than ideal, as the knobs say
    assert float(a["makespan"]) > float(make(**spec).run(wl)["makespan"])
    reps = batching.run_replicates(calibrated, wl.arrival[None], wl.prompt_tokens[None],
                                   wl.output_tokens[None])
    assert reps.attrs["model_quality"] == "calibrated: bench"


def test_batcher_calibration_checked_at_construction():
    spec = {"model": "llama-3.1-8b", "gpu": "h100"}
    with pytest.raises(ValueError, match="calibration or roofline_options"):
        batching.ContinuousBatcher(**spec, calibration=CAL, roofline_options={})
    with pytest.raises(TypeError, match="calibration must be"):
        batching.ContinuousBatcher(**spec, calibration={"compute_efficiency": 0.5})
    with pytest.raises(ValueError, match="model and gpu"):
        batching.StaticBatcher(calibration=CAL)


def test_planning_uses_the_calibration_conversion():
    from rooflinekit.planning import fleet
    # the planners ask for each configuration's options by model and GPU
    options_for, label = fleet._roofline_options(CAL, None)
    assert options_for("Llama-3.1-8B", "H100-SXM-80GB") == CAL.clock_options()
    assert label == CAL.label
    ideal, label = fleet._roofline_options(None, None)
    assert ideal("Llama-3.1-8B", "H100-SXM-80GB") == {} and label == IDEAL
    assert calibrate.Calibration is Calibration
