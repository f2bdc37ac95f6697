"""A GPU's measured GEMM throughput, and how a borrowed profile carries by it.

A GPU's datasheet peak is its boost clock's; at its power limit it runs large GEMMs slower, by
a share that differs from GPU to GPU (the profiled ones' kernel tables: the L40S 244 of 362
TFLOP/s in bf16, the A100 269 of 312). ``GPU.gemm_flops`` holds that figure. The engine
profiles are fitted against it and written as shares of the datasheet peak, so a profile
carried to another GPU multiplies its compute efficiencies by the ratio of the two GPUs' GEMM
shares, as it multiplies its bandwidth efficiencies by their streaming shares. The expected
values below are written by hand from those definitions.
"""

from __future__ import annotations

import math

import pytest

import rooflinekit as rk
from rooflinekit import catalog
from rooflinekit.catalog import _gpu_from_row
from rooflinekit.hardware import GPU
from rooflinekit.profiles import Calibration
from rooflinekit.profiles.shipped import borrowed


def _card(gemm=None, streaming=None, name="card") -> GPU:
    return GPU(name=name, memory_bytes=80 * 2**30, hbm_bandwidth=2.0e12, peak_flops=400e12,
               peak_flops_by_dtype={"fp8": 800e12}, gemm_flops=gemm,
               streaming_bandwidth=streaming, source="test")


def test_the_field_is_checked_and_scales_with_the_group():
    assert _card().gemm_flops is None
    assert _card(300e12).gemm_flops == 300e12
    assert _card(300e12).group(4).gemm_flops == pytest.approx(1.2e15, rel=1e-15)
    assert _card().group(4).gemm_flops is None
    assert _card(400e12).gemm_flops == 400e12               # the datasheet peak itself
    with pytest.raises(ValueError, match=r"gemm_flops must be <= peak_flops"):
        _card(401e12)
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="gemm_flops"):
            _card(bad)
    with pytest.raises(TypeError, match="gemm_flops"):
        _card("fast")


def test_the_profiled_gpus_carry_their_measured_figure_and_its_source():
    l40s, a100 = catalog.gpu("L40S"), catalog.gpu("A100-SXM-80GB")
    assert l40s.gemm_flops == pytest.approx(244.2e12, rel=1e-12)
    assert a100.gemm_flops == pytest.approx(269.4e12, rel=1e-12)
    profiled = {k.gpu for k in rk.ENGINE_PROFILES}
    shares = {g: catalog.gpu(g).gemm_flops / catalog.gpu(g).peak_flops for g in profiled}
    # the shares the docstrings quote: 244.2 / 362.05 and 269.4 / 312
    assert min(shares, key=shares.get) == "L40S" and 0.67 < shares["L40S"] < 0.68
    assert max(shares, key=shares.get) == "A100-SXM-80GB" and 0.86 < shares[
        "A100-SXM-80GB"] < 0.87
    assert catalog.gpu("RTX-4090").gemm_flops is None
    ds = catalog.gpus(as_dataset=True)
    assert ds["gemm_flops"].attrs["units"] == "FLOP/s"
    assert math.isnan(float(ds["gemm_flops"].sel(gpu="RTX-4090")))


def _row(**changes):
    row = {"name": "card", "memory_gib": 80, "hbm_bandwidth_tb_s": 2.0,
           "dense_tflops": {"bf16": 400.0}, "source": "test",
           "gemm_tflops": 300.0, "gemm_source": "a large matmul"}
    row.update(changes)
    return {k: v for k, v in row.items() if v is not None}


def test_catalogue_row_reads_the_figure_in_tflops():
    assert _gpu_from_row(_row(), {}).gemm_flops == pytest.approx(3.0e14, rel=1e-15)
    assert _gpu_from_row(_row(gemm_tflops=None, gemm_source=None), {}).gemm_flops is None


@pytest.mark.parametrize("changes, match", [
    ({"gemm_source": None}, "gemm_source"),
    ({"gemm_source": ""}, "gemm_source"),
    ({"gemm_tflops": "300"}, "gemm_tflops must be a number > 0"),
    ({"gemm_tflops": True}, "gemm_tflops must be a number > 0"),
    ({"gemm_tflops": 0.0}, "gemm_tflops must be a number > 0"),
    ({"gemm_tflops": math.nan}, "gemm_tflops must be a number > 0"),
    ({"gemm_tflops": 500.0}, "gemm_flops must be <= peak_flops"),
])
def test_catalogue_row_refuses_a_bad_figure(changes, match):
    with pytest.raises(ValueError, match=match):
        _gpu_from_row(_row(**changes), {})


def _fitted():
    return Calibration(
        prefill={"compute_efficiency": 0.8, "attention_compute_efficiency": 0.5,
                 "bandwidth_efficiency": 0.8},
        decode={"compute_efficiency": 0.7, "low_precision_compute_efficiency": 0.6,
                "fp4_compute_efficiency": 0.4, "bandwidth_efficiency": 0.7,
                "layer_overhead": 3e-5},
        intervals={"prefill": {"compute_efficiency": (0.75, 0.95)}},
        source="a test")


def test_borrowed_carries_the_compute_efficiencies_by_the_gemm_shares():
    # same ridge point and no streaming figures; GEMM shares 0.75 and 0.6: c = 0.6 / 0.75
    source, target = _card(300e12), _card(240e12, name="other")
    carried = borrowed(_fitted(), source, target)
    c = 0.6 / 0.75
    assert carried.prefill["compute_efficiency"] == pytest.approx(0.8 * c, rel=1e-12)
    assert carried.prefill["attention_compute_efficiency"] == pytest.approx(0.5 * c, rel=1e-12)
    assert carried.decode["compute_efficiency"] == pytest.approx(0.7 * c, rel=1e-12)
    assert carried.decode["low_precision_compute_efficiency"] == pytest.approx(0.6 * c,
                                                                              rel=1e-12)
    assert carried.decode["fp4_compute_efficiency"] == pytest.approx(0.4 * c, rel=1e-12)
    assert carried.prefill["bandwidth_efficiency"] == 0.8        # streaming unmeasured: kept
    assert carried.decode["layer_overhead"] == 3e-5
    assert carried.intervals["prefill"]["compute_efficiency"] == pytest.approx(
        (0.75 * c, 0.95 * c), rel=1e-12)
    assert "compute efficiencies × 0.8" in carried.source and "60%" in carried.source
    # the other way the shares grow them, at most 1: 0.95 / 0.8 = 1.1875
    back = borrowed(_fitted(), target, source)
    assert back.prefill["compute_efficiency"] == pytest.approx(0.8 / c, rel=1e-12)
    assert back.intervals["prefill"]["compute_efficiency"] == pytest.approx(
        (0.75 / c, 1.0), rel=1e-12)
    # a phase without a compute efficiency (1: all the clock reaches) gets c itself
    plain = Calibration(prefill={"bandwidth_efficiency": 0.8}, decode={}, source="a test")
    assert borrowed(plain, source, target).prefill["compute_efficiency"] == pytest.approx(
        c, rel=1e-12)


def test_borrowed_carries_both_shares_at_once_and_neither_where_unmeasured():
    # streaming shares 0.8 and 0.9 (q = 1.125), GEMM shares 0.75 and 0.6 (c = 0.8)
    source = _card(300e12, 1.6e12)
    target = _card(240e12, 1.8e12, name="other")
    carried = borrowed(_fitted(), source, target)
    assert carried.prefill["bandwidth_efficiency"] == pytest.approx(0.8 * 1.125, rel=1e-12)
    assert carried.prefill["compute_efficiency"] == pytest.approx(0.8 * 0.8, rel=1e-12)
    assert "bandwidth efficiencies × 1.12" in carried.source
    assert "compute efficiencies × 0.8" in carried.source
    fitted = _fitted()
    assert borrowed(fitted, _card(300e12), _card(name="other")) is fitted
    assert borrowed(fitted, _card(), _card(240e12, name="other")) is fitted
