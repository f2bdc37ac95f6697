"""The Engine spec: one object of how an engine runs a step, reaching every path unchanged.

A field planted in a subclass (a new knob and its one line in ``group_terms``: a change in one
place, no signature edited) must change the answer of a formula, a sweep, the simulator, a
plan, the command line and a calibration alike: the proof that every path hands the object on
rather than unpacking it.
"""

import dataclasses
import json

import numpy as np
import pytest
import xarray as xr

import rooflinekit as rk
from rooflinekit import catalog, roofline
from rooflinekit.calibrate import Calibration
from rooflinekit.cli.main import main
from rooflinekit.workloads import Constant, Poisson, WorkloadSpec

M = catalog.model("Llama-3.1-8B")
G = catalog.gpu("H100-SXM-80GB")
PLANTED = 2e-3          # [s] a step's extra fixed time, from the planted field alone


@dataclasses.dataclass(frozen=True, kw_only=True)
class Planted(rk.Engine):
    """An Engine with one more knob: a fixed time every step pays [s]."""

    planted_overhead: object = 0.0

    def group_terms(self, group, model, laid):
        group = super().group_terms(group, model, laid)
        group.step_overhead = group.step_overhead + laid["planted_overhead"]
        return group


SAME = rk.Engine(step_overhead=PLANTED)       # what the planted knob amounts to
PLANT = Planted(planted_overhead=PLANTED)


def test_ideal_is_the_default_and_labelled():
    assert rk.IDEAL == rk.Engine() and rk.IDEAL.label.startswith("ideal (best case)")
    assert rk.decode_step_time(M, G, 8, 1024) == rk.decode_step_time(M, G, 8, 1024,
                                                                     engine=rk.IDEAL)
    assert SAME.label == "engine: step_overhead=0.002"
    assert PLANT.label == "engine: planted_overhead=0.002"
    assert rk.Engine(label="vLLM 0.10 on H100").label == "vLLM 0.10 on H100"


def test_engine_is_frozen_and_checked_once():
    with pytest.raises(dataclasses.FrozenInstanceError):
        rk.IDEAL.step_overhead = 1.0
    with pytest.raises(TypeError, match="positional"):
        rk.Engine(0.5)
    with pytest.raises(ValueError, match="compute_efficiency"):
        rk.Engine(compute_efficiency=1.5)
    with pytest.raises(TypeError, match="unknown engine field.*'speed'"):
        rk.Engine.from_dict({"speed": 2})
    engine = rk.Engine(compute_efficiency=0.6, step_overhead=0.004, allreduce="ring")
    assert rk.Engine.from_dict(engine.to_dict()) == engine


def test_array_fields_broadcast_by_dimension_name():
    efficiency = xr.DataArray([0.5, 1.0], dims="efficiency", coords={"efficiency": [0.5, 1.0]})
    got = rk.prefill_time(M, G, 4096, engine=rk.Engine(compute_efficiency=efficiency))
    assert got.dims == ("efficiency",)
    for e in (0.5, 1.0):
        one = rk.prefill_time(M, G, 4096, engine=rk.Engine(compute_efficiency=e))
        assert float(got.sel(efficiency=e)) == one


def test_a_calibration_gives_the_engine_of_each_phase():
    cal = Calibration(prefill={"compute_efficiency": 0.6, "prefill_overhead": 0.01},
                      decode={"bandwidth_efficiency": 0.8, "step_overhead": 0.003},
                      source="hand", base=rk.Engine(allreduce="ring"))
    prefill, decode, step = (cal.engine_for(p) for p in ("prefill", "decode", "step"))
    assert prefill.compute_efficiency == 0.6 and prefill.bandwidth_efficiency == 1.0
    assert decode.bandwidth_efficiency == 0.8 and decode.compute_efficiency == 1.0
    # the mixed step: compute where prefill binds, the rest from decode
    assert (step.compute_efficiency, step.prefill_overhead, step.bandwidth_efficiency,
            step.step_overhead) == (0.6, 0.01, 0.8, 0.003)
    assert {e.allreduce for e in (prefill, decode, step)} == {"ring"}
    assert {e.label for e in (prefill, decode, step)} == {cal.label}
    assert rk.prefill_time(M, G, 2048, engine=cal) == rk.prefill_time(M, G, 2048,
                                                                     engine=prefill)
    assert rk.decode_step_time(M, G, 8, 100, engine=cal) == rk.decode_step_time(
        M, G, 8, 100, engine=decode)
    with pytest.raises(ValueError, match="phase"):
        cal.engine_for("training")
    with pytest.raises(TypeError, match="engine must be an Engine"):
        rk.decode_step_time(M, G, engine=0.5)


# -- the planted field, on every path --------------------------------------------------------

def test_planted_field_reaches_the_formulas():
    for func, args in ((rk.decode_step_time, (8, 1024)), (rk.prefill_time, (2048,)),
                       (rk.request_latency, (512, 16)), (rk.decode_throughput, (8, 1024))):
        got, same = func(M, G, *args, engine=PLANT), func(M, G, *args, engine=SAME)
        assert got == same and got != func(M, G, *args)
    cost = roofline.step_cost_coefficients(M, G, engine=PLANT)
    assert cost == roofline.step_cost_coefficients(M, G, engine=SAME)
    assert rk.layout_decode_step_time(M, G, 8, 1024, tp=2, engine=PLANT) == \
        rk.layout_decode_step_time(M, G, 8, 1024, tp=2, engine=SAME)


def test_planted_field_reaches_the_sweep():
    kw = dict(models="Llama-3.1-8B", gpus="H100-SXM-80GB", tp=[1, 2], context_length=2048,
              batch_size=[1, 8], prompt_tokens=1024)
    got, same = rk.sweep.sweep(**kw, engine=PLANT), rk.sweep.sweep(**kw, engine=SAME)
    for name in ("decode_step_time", "prefill_time"):
        xr.testing.assert_identical(got[name], same[name])
    assert not np.array_equal(got["decode_step_time"], rk.sweep.sweep(**kw)["decode_step_time"])


def _run(engine):
    batcher = rk.ContinuousBatcher(max_num_seqs=8, model=M, gpu=G, engine=engine)
    spec = WorkloadSpec(24, prompt=Constant(256), output=Constant(16), arrival=Poisson(4.0))
    return batcher.run(spec.sample(0))


def test_planted_field_reaches_the_simulator():
    got, same = _run(PLANT), _run(SAME)
    np.testing.assert_array_equal(got["finish"], same["finish"])
    assert not np.array_equal(got["finish"], _run(None)["finish"])
    assert got.attrs["model_quality"] == PLANT.label


def test_planted_field_reaches_the_plan():
    traffic, slo = rk.Traffic(1.0, Constant(512), Constant(32)), rk.SLO(itl=0.02)
    small = dict(models="Llama-3.1-8B", gpus="H100-SXM-80GB", max_num_seqs=16, replicates=2,
                 requests=40, seed=1)
    got = rk.plan(traffic, slo, **small, engine=PLANT)
    same = rk.plan(traffic, slo, **small, engine=SAME)
    np.testing.assert_array_equal(got["max_rate"], same["max_rate"])
    assert got.attrs["model_quality"] == PLANT.label


def test_planted_field_reaches_the_command_line(tmp_path, capsys, monkeypatch):
    # the command line builds its engine from a file of fields: a planted field there too
    monkeypatch.setattr(roofline, "Engine", Planted)
    path = tmp_path / "planted.json"
    path.write_text(json.dumps({"planted_overhead": PLANTED}))
    base = ["capacity", "llama-3.1-8b", "h100", "--batch-size", "8", "--json"]
    assert main([*base, "--engine", str(path)]) == 0
    got = json.loads(capsys.readouterr().out)
    expected = rk.decode_step_time(M, G, 8, 8192, engine=SAME) * 1e3
    assert got["decode_step_time_ms"] == pytest.approx(expected, rel=1e-12)
    assert got["model_quality"] == PLANT.label


def test_planted_field_reaches_a_calibration():
    cal = Calibration(decode={"bandwidth_efficiency": 0.8}, source="hand", base=PLANT)
    decode = cal.engine_for("decode")
    assert isinstance(decode, Planted) and decode.planted_overhead == PLANTED
    assert rk.decode_step_time(M, G, 8, 100, engine=cal) == rk.decode_step_time(
        M, G, 8, 100, engine=SAME.replace(bandwidth_efficiency=0.8))
