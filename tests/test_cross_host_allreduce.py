"""An all-reduce past one host's GPUs: ``host_gpus`` (catalogue) and
``cross_host_allreduce_latency`` (an :class:`rooflinekit.Engine` field and a profile knob).

A GB200 or GB300 NVL72 compute tray holds four GPUs under one operating system. vLLM's and
SGLang's custom all-reduce map their peers' buffers through that host, so a tensor-parallel group
of eight falls back to a slower collective, although all 72 GPUs share one NVLink domain. The
expected values are written from first principles: a decode step runs two all-reduces a layer,
each paying the knob's latency once where the group is larger than the host.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import xarray as xr

import rooflinekit as rk
from rooflinekit import Engine, catalog, parallel, roofline
from rooflinekit.calibrate import measurements_from_records, predict

#: Llama-3.1-70B: 80 layers.
LAYERS = 80


def _step(gpu, tp, engine, batch=8):
    model = catalog.model("Llama-3.1-70B")
    return float(roofline.decode_step_time(model, gpu, batch_size=batch, context_length=1024,
                                           tp=tp, engine=engine))


def test_the_nvl72_trays_hold_four_gpus_and_say_where_that_comes_from():
    for name in ("GB200", "GB300"):
        assert catalog.gpu(name).host_gpus == 4
    # an HGX board's group never leaves its host within the NVLink domain
    for name in ("H100-SXM-80GB", "B200", "B300"):
        assert catalog.gpu(name).host_gpus is None
    ds = catalog.gpus(as_dataset=True)
    assert ds["host_gpus"].attrs["units"] == "1"
    assert float(ds["host_gpus"].sel(gpu="GB300")) == 4.0
    assert np.isnan(float(ds["host_gpus"].sel(gpu="H100-SXM-80GB")))


@pytest.mark.parametrize("tp, crosses", [(2, False), (4, False), (8, True), (16, True)])
def test_each_allreduce_pays_the_latency_once_past_the_host(tp, crosses):
    gb300 = catalog.gpu("GB300")
    plain = _step(gb300, tp, Engine())
    slower = _step(gb300, tp, Engine(cross_host_allreduce_latency=24e-6))
    # by hand: 2 all-reduces a layer x 80 layers x 24 us = 3.84 ms, or nothing within a tray
    assert slower - plain == pytest.approx(2 * LAYERS * 24e-6 if crosses else 0.0, abs=1e-12)


def test_no_effect_without_host_gpus_and_the_ideal_to_the_bit():
    b200 = catalog.gpu("B200")
    assert _step(b200, 8, Engine(cross_host_allreduce_latency=24e-6)) == _step(b200, 8, Engine())
    gb300 = catalog.gpu("GB300")
    # the default is 0: the guide's ideal step, unchanged to the bit
    assert _step(gb300, 8, Engine(cross_host_allreduce_latency=0.0)) == _step(gb300, 8, Engine())
    one_host = dataclasses.replace(gb300, host_gpus=8)
    assert _step(one_host, 8, Engine(cross_host_allreduce_latency=24e-6)) == \
        _step(one_host, 8, Engine())


def test_the_formula_keeps_its_input_type():
    assert parallel.cross_host_allreduce_latency(80, 8, 4, 1e-5) == pytest.approx(1.6e-3)
    assert parallel.cross_host_allreduce_latency(80, 4, 4, 1e-5) == 0.0
    assert parallel.cross_host_allreduce_latency(80, 8, math.nan, 1e-5) == 0.0
    degrees = xr.DataArray([2.0, 4.0, 8.0], dims="tp")
    out = parallel.cross_host_allreduce_latency(80, degrees, 4.0, 1e-5)
    assert isinstance(out, xr.DataArray) and out.dims == ("tp",)
    np.testing.assert_allclose(out.values, [0.0, 0.0, 1.6e-3])
    arr = parallel.cross_host_allreduce_latency(80, np.array([4.0, 8.0]), 4.0, 1e-5)
    assert isinstance(arr, np.ndarray)
    np.testing.assert_allclose(arr, [0.0, 1.6e-3])


@pytest.mark.parametrize("value", [-1e-6, math.nan, math.inf])
def test_a_bad_latency_is_refused_naming_the_field(value):
    with pytest.raises(ValueError, match="cross_host_allreduce_latency"):
        Engine(cross_host_allreduce_latency=value)


@pytest.mark.parametrize("value", [0, -1, 2.5])
def test_a_bad_host_gpus_is_refused_naming_the_field(value):
    with pytest.raises((ValueError, TypeError), match="host_gpus"):
        dataclasses.replace(catalog.gpu("GB300"), host_gpus=value)


def test_a_calibration_predicts_with_it_as_the_formula_does():
    """The fit's linear terms (``cross_hosts``) give the roofline formula's step, to
    rounding: what a profile holding the knob predicts is what a plan computes with it."""
    rows = []
    for tp in (4, 8):
        for batch, ctx in ((1, 512), (16, 4096)):
            rows.append({"model": "Llama-3.1-70B", "gpu": "GB300", "tp": tp,
                         "batch_size": batch, "prompt_tokens": ctx, "output_tokens": 0,
                         "context_length": ctx, "ttft_ms": None, "tpot_ms": 10.0,
                         "source": "synthetic"})
    ds = measurements_from_records(rows)
    knobs = {"bandwidth_efficiency": 0.8, "interconnect_latency": 2e-6,
             "cross_host_allreduce_latency": 24e-6}
    cal = rk.calibrate.Calibration(prefill={}, decode=knobs)
    got = predict(ds, cal)["decode"].values
    engine = Engine(**knobs)
    model, gpu = catalog.model("Llama-3.1-70B"), catalog.gpu("GB300")
    want = [float(roofline.decode_step_time(model, gpu, r["batch_size"], r["context_length"],
                                            r["tp"], engine=engine)) for r in rows]
    np.testing.assert_allclose(got, want, rtol=1e-9)


def test_the_shipped_nvl72_profiles_carry_their_engines_fallback():
    """SGLang's tables time an eight-GPU all-reduce on GB300 at 27-30 us against 3.7-4.1 on
    four (24.3 us more), vLLM 0.27.0's 13-14 against 7-8 (5.9 us), TensorRT-LLM's, whose
    all-reduce spans the NVLink domain, alike (0): the shipped profiles hold those, the GB200's
    lent from the GB300's tables of the same engine, and no other GPU's holds any."""
    expect = {"sglang": 24.3e-6, "vllm": 5.9e-6, "trtllm": 0.0}
    for key in rk.ENGINE_PROFILES:
        profile = rk.engine_profile(key.engine, key.gpu, key.version, warn=False)
        value = profile.decode.get("cross_host_allreduce_latency") or 0.0
        assert (profile.prefill.get("cross_host_allreduce_latency") or 0.0) == value
        if key.gpu in ("GB200", "GB300"):
            assert value == pytest.approx(expect[key.engine], abs=0.05e-6), key
        else:
            assert value == 0.0, key
    # a plan at tp 8 on GB300 under SGLang pays it: 160 all-reduces of Llama-3.1-70B
    sglang = rk.engine_profile("sglang", "GB300").engine_for("decode", gpu="GB300")
    gb300 = catalog.gpu("GB300")
    assert _step(gb300, 8, sglang) - _step(gb300, 8, sglang.replace(
        cross_host_allreduce_latency=0.0)) == pytest.approx(2 * LAYERS * 24.26e-6, rel=1e-3)



def test_a_catalogue_row_states_where_its_host_gpus_comes_from():
    from rooflinekit.catalog import _gpu_from_row
    row = {"name": "tray-gpu", "memory_gib": 186, "hbm_bandwidth_tb_s": 8.0,
           "dense_tflops": {"bf16": 2500.0}, "source": "test", "host_gpus": 4}
    with pytest.raises(ValueError, match="tray-gpu.*host_gpus needs a host_gpus_source"):
        _gpu_from_row(dict(row), {})
    assert _gpu_from_row({**row, "host_gpus_source": "a tray"}, {}).host_gpus == 4
