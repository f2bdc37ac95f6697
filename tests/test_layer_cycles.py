"""A fixed cost per layer in clock cycles (``layer_cycles``), timed with the GPU's boost clock.

The same kernels' fixed time per layer is longer on a slower clock: ``layer_cycles`` adds
``n_layers · layer_cycles / boost_clock`` seconds to a step, the clock from the catalogue's
``boost_clock_mhz``. Expected values are written by hand.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from rooflinekit import Engine, catalog, roofline
from rooflinekit.calibrate import Calibration, measurements_from_records, predict
from rooflinekit.catalog import _gpu_from_row


def _step(gpu, engine, model="Llama-3.1-8B", batch=8):
    return roofline.decode_step_time(catalog.model(model), gpu, batch_size=batch,
                                     context_length=1024, engine=engine)


@pytest.mark.parametrize("name, clock", [("A100-SXM-80GB", 1.41e9), ("H100-SXM-80GB", 1.98e9),
                                         ("L40S", 2.52e9)])
def test_cycles_by_hand(name, clock):
    gpu = catalog.gpu(name)
    assert gpu.boost_clock == clock
    extra = _step(gpu, Engine(layer_cycles=80_000.0)) - _step(gpu, Engine())
    # Llama-3.1-8B: 32 layers; 80,000 cycles each at the clock
    assert extra == pytest.approx(32 * 80_000 / clock, rel=1e-9)


def test_a100_pays_the_clock_ratio():
    a100, h100 = catalog.gpu("A100-SXM-80GB"), catalog.gpu("H100-SXM-80GB")
    engine = Engine(layer_cycles=66_000.0)
    a = _step(a100, engine) - _step(a100, Engine())
    h = _step(h100, engine) - _step(h100, Engine())
    assert a / h == pytest.approx(1980 / 1410, rel=1e-9)
    # 66,000 cycles: 46.8 us per layer on the A100, 33.3 us on the H100
    assert a / 32 == pytest.approx(46.81e-6, rel=1e-3)
    assert h / 32 == pytest.approx(33.33e-6, rel=1e-3)


def test_default_is_the_ideal_to_the_bit():
    gpu = catalog.gpu("A100-SXM-80GB")
    assert Engine().layer_cycles == 0.0
    assert _step(gpu, Engine(layer_cycles=0.0)) == _step(gpu, Engine())
    # a GPU without a clock is fine while the knob is 0
    assert math.isfinite(_step(catalog.gpu("A10"), Engine()))


def test_dataset_path_matches_the_object_path():
    ds = catalog.gpus(as_dataset=True).sel(gpu=["A100-SXM-80GB", "H100-SXM-80GB"])
    engine = Engine(layer_cycles=50_000.0)
    grid = _step(ds, engine)
    for name in ("A100-SXM-80GB", "H100-SXM-80GB"):
        assert float(grid.sel(gpu=name)) == pytest.approx(_step(catalog.gpu(name), engine),
                                                          rel=1e-12)


def test_calibrated_prediction_matches_the_roofline():
    cal = Calibration(decode={"bandwidth_efficiency": 0.8, "layer_cycles": 60_000.0})
    rows = [{"model": "Llama-3.1-8B", "gpu": gpu, "tp": 1, "batch_size": 8,
             "prompt_tokens": 1024, "output_tokens": 0, "context_length": 1024,
             "tpot_ms": 10.0, "source": "test"} for gpu in ("A100-SXM-80GB", "L40S")]
    got = predict(measurements_from_records(rows), cal)["decode"].values
    want = [_step(catalog.gpu(r["gpu"]), cal.engine_for("decode")) for r in rows]
    np.testing.assert_allclose(got, want, rtol=1e-12)


# -- bad inputs ---------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [-1.0, math.nan, math.inf])
def test_engine_refuses_bad_cycles(value):
    with pytest.raises(ValueError, match="layer_cycles"):
        Engine(layer_cycles=value)


@pytest.mark.parametrize("value", [-1.0, math.nan])
def test_calibration_refuses_bad_cycles(value):
    with pytest.raises(ValueError, match="layer_cycles"):
        Calibration(decode={"layer_cycles": value})


def test_cycles_need_a_clock():
    with pytest.raises(ValueError, match="boost_clock"):
        _step(catalog.gpu("A10"), Engine(layer_cycles=1000.0))
    rows = [{"model": "Llama-3.1-8B", "gpu": "A10", "tp": 1, "batch_size": 1,
             "prompt_tokens": 512, "output_tokens": 0, "context_length": 512,
             "tpot_ms": 10.0, "source": "test"}]
    with pytest.raises(ValueError, match="boost_clock"):
        predict(measurements_from_records(rows), Calibration(decode={"layer_cycles": 1000.0}))


@pytest.mark.parametrize("value", [0.0, -1.0, math.nan, math.inf])
def test_gpu_refuses_bad_clock(value):
    gpu = catalog.gpu("H100-SXM-80GB")
    with pytest.raises(ValueError, match="boost_clock"):
        dataclasses.replace(gpu, boost_clock=value)


def _row(**changes):
    row = {"name": "card", "memory_gib": 80, "hbm_bandwidth_tb_s": 3.35,
           "dense_tflops": {"bf16": 989.4}, "source": "test", "boost_clock_mhz": 1980,
           "clock_source": "test"}
    row.update(changes)
    return {k: v for k, v in row.items() if v is not None}


def test_catalogue_row_reads_the_clock():
    assert _gpu_from_row(_row(), {}).boost_clock == 1.98e9


@pytest.mark.parametrize("changes, field", [
    ({"clock_source": None}, "clock_source"),
    ({"clock_source": ""}, "clock_source"),
    ({"boost_clock_mhz": -1980}, "boost_clock_mhz"),
    ({"boost_clock_mhz": 0}, "boost_clock_mhz"),
    ({"boost_clock_mhz": "1980"}, "boost_clock_mhz"),
    ({"boost_clock_mhz": True}, "boost_clock_mhz"),
    ({"boost_clock_mhz": math.inf}, "boost_clock_mhz"),
])
def test_catalogue_row_refuses_bad_clock(changes, field):
    with pytest.raises(ValueError, match=field):
        _gpu_from_row(_row(**changes), {})


def test_calibrate_recovers_cycles_across_clocks():
    # exact rows from two GPUs of different clocks with one cycle count: the fit finds it
    from rooflinekit.calibrate import calibrate
    true = Engine(bandwidth_efficiency=0.8, layer_cycles=70_000.0)
    rows = []
    for name in ("A100-SXM-80GB", "H100-SXM-80GB"):
        for batch, ctx in ((1, 512), (8, 2048), (32, 4096), (64, 1024)):
            t = roofline.decode_step_time(catalog.model("Llama-3.1-8B"), catalog.gpu(name),
                                          batch_size=batch, context_length=ctx, engine=true)
            rows.append({"model": "Llama-3.1-8B", "gpu": name, "tp": 1, "batch_size": batch,
                         "prompt_tokens": ctx, "output_tokens": 0, "context_length": ctx,
                         "tpot_ms": 1e3 * float(t), "source": "test"})
    result = calibrate(measurements_from_records(rows), phases="decode",
                       fit={"decode": ("bandwidth_efficiency", "layer_cycles")}, n_resamples=0)
    got = result.calibration.decode
    assert got["layer_cycles"] == pytest.approx(70_000.0, rel=1e-3)
    assert got["bandwidth_efficiency"] == pytest.approx(0.8, rel=1e-4)


@pytest.mark.parametrize("knob, pair", [("layer_cycles", (0.0, 5e5)),
                                        ("host_traffic_share", (0.0, 1.0))])
def test_bounds_of_the_new_knobs(knob, pair):
    from rooflinekit.calibrate.fit import _normalise_bounds
    assert _normalise_bounds({knob: pair})[knob] == pair
    with pytest.raises(ValueError, match=knob):
        _normalise_bounds({knob: (-1.0, 1.0)})
