"""A GPU's measured streaming bandwidth, and how a borrowed profile carries by it.

The profiled GPUs' memories reach 77-93 % of their datasheet bandwidths (the kernel tables'
rate for weights far larger than the L2: A100 1,570 of 2,039 GB/s, RTX PRO 6000 1,486 of 1,597);
``GPU.streaming_bandwidth`` holds that figure. The engine profiles are fitted against it and
written as shares of the datasheet figure, so a profile carried to another GPU multiplies its
bandwidth efficiencies by the ratio of the two GPUs' streaming shares. The expected values
below are written by hand from those definitions.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

import rooflinekit as rk
from rooflinekit import catalog
from rooflinekit.catalog import _gpu_from_row
from rooflinekit.hardware import GPU
from rooflinekit.profiles import Calibration
from rooflinekit.profiles.shipped import borrowed


def _card(streaming=None, bandwidth=2.0e12) -> GPU:
    return GPU(name="card", memory_bytes=80 * 2**30, hbm_bandwidth=bandwidth,
               peak_flops=400e12, streaming_bandwidth=streaming, source="test")


def test_the_field_is_checked_and_scales_with_the_group():
    assert _card().streaming_bandwidth is None
    assert _card(1.6e12).streaming_bandwidth == 1.6e12
    assert _card(1.6e12).group(4).streaming_bandwidth == pytest.approx(6.4e12, rel=1e-15)
    assert _card().group(4).streaming_bandwidth is None
    assert _card(2.0e12).streaming_bandwidth == 2.0e12         # the pins' figure itself
    with pytest.raises(ValueError, match=r"streaming_bandwidth must be <= hbm_bandwidth"):
        _card(2.1e12)
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="streaming_bandwidth"):
            _card(bad)
    with pytest.raises(TypeError, match="streaming_bandwidth"):
        _card("fast")


def test_the_profiled_gpus_carry_their_measured_figure_and_its_source():
    # the shares the module docstring quotes, from the catalogue rows
    a100, rtx = catalog.gpu("A100-SXM-80GB"), catalog.gpu("RTX-PRO-6000-Server")
    assert a100.streaming_bandwidth == pytest.approx(1.570e12, rel=1e-12)
    assert rtx.streaming_bandwidth == pytest.approx(1.4864e12, rel=1e-12)
    profiled = {k.gpu for k in rk.ENGINE_PROFILES}
    shares = {g: catalog.gpu(g).streaming_bandwidth / catalog.gpu(g).hbm_bandwidth
              for g in profiled}
    assert min(shares, key=shares.get) == "A100-SXM-80GB"
    assert max(shares, key=shares.get) == "RTX-PRO-6000-Server"
    assert 0.76 < shares["A100-SXM-80GB"] < 0.78 and 0.92 < shares["RTX-PRO-6000-Server"] < 0.94
    assert catalog.gpu("RTX-4090").streaming_bandwidth is None
    ds = catalog.gpus(as_dataset=True)
    assert ds["streaming_bandwidth"].attrs["units"] == "bytes/s"
    assert math.isnan(float(ds["streaming_bandwidth"].sel(gpu="RTX-4090")))


def _row(**changes):
    row = {"name": "card", "memory_gib": 80, "hbm_bandwidth_tb_s": 2.0,
           "dense_tflops": {"bf16": 400.0}, "source": "test",
           "streaming_bandwidth_tb_s": 1.6, "streaming_bandwidth_source": "a microbenchmark"}
    row.update(changes)
    return {k: v for k, v in row.items() if v is not None}


def test_catalogue_row_reads_the_figure_in_tb_s():
    assert _gpu_from_row(_row(), {}).streaming_bandwidth == pytest.approx(1.6e12, rel=1e-15)
    assert _gpu_from_row(_row(streaming_bandwidth_tb_s=None, streaming_bandwidth_source=None),
                         {}).streaming_bandwidth is None


@pytest.mark.parametrize("changes, match", [
    ({"streaming_bandwidth_source": None}, "streaming_bandwidth_source"),
    ({"streaming_bandwidth_source": ""}, "streaming_bandwidth_source"),
    ({"streaming_bandwidth_tb_s": "1.6"}, "streaming_bandwidth_tb_s must be a number > 0"),
    ({"streaming_bandwidth_tb_s": True}, "streaming_bandwidth_tb_s must be a number > 0"),
    ({"streaming_bandwidth_tb_s": 0.0}, "streaming_bandwidth_tb_s must be a number > 0"),
    ({"streaming_bandwidth_tb_s": math.nan}, "streaming_bandwidth_tb_s must be a number > 0"),
    ({"streaming_bandwidth_tb_s": 2.5}, "streaming_bandwidth must be <= hbm_bandwidth"),
])
def test_catalogue_row_refuses_a_bad_figure(changes, match):
    with pytest.raises(ValueError, match=match):
        _gpu_from_row(_row(**changes), {})


def _fitted():
    return Calibration(
        prefill={"compute_efficiency": 0.8, "bandwidth_efficiency": 0.8},
        decode={"bandwidth_efficiency": 0.7, "kv_bandwidth_efficiency": 0.6,
                "low_precision_bandwidth_efficiency": 0.5, "layer_overhead": 3e-5},
        intervals={"decode": {"bandwidth_efficiency": (0.65, 0.75),
                              "kv_bandwidth_efficiency": (0.55, 0.95)}},
        source="a test")


def test_borrowed_carries_the_bandwidth_efficiencies_by_the_streaming_shares():
    # same ridge point (same FLOP/s and bandwidth), shares 0.8 and 0.9: q = 0.9 / 0.8 = 1.125
    source, target = _card(1.6e12), dataclasses.replace(_card(1.8e12), name="other")
    carried = borrowed(_fitted(), source, target)
    q = 0.9 / 0.8
    assert carried.prefill["bandwidth_efficiency"] == pytest.approx(0.8 * q, rel=1e-12)
    assert carried.prefill["compute_efficiency"] == 0.8
    assert carried.decode["bandwidth_efficiency"] == pytest.approx(0.7 * q, rel=1e-12)
    assert carried.decode["kv_bandwidth_efficiency"] == pytest.approx(0.6 * q, rel=1e-12)
    assert carried.decode["low_precision_bandwidth_efficiency"] == pytest.approx(0.5 * q,
                                                                                rel=1e-12)
    assert carried.decode["layer_overhead"] == 3e-5
    assert carried.intervals["decode"]["bandwidth_efficiency"] == pytest.approx(
        (0.65 * q, 0.75 * q), rel=1e-12)
    # an efficiency carried past 1 stops there (0.95 * 1.125 = 1.07), its value too
    assert carried.intervals["decode"]["kv_bandwidth_efficiency"] == pytest.approx(
        (0.55 * q, 1.0), rel=1e-12)
    assert "bandwidth efficiencies × 1.12" in carried.source and "90%" in carried.source
    # the other way the shares shrink them: 0.8 / 0.9
    back = borrowed(_fitted(), target, source)
    assert back.decode["bandwidth_efficiency"] == pytest.approx(0.7 * 0.8 / 0.9, rel=1e-12)
    # a phase without a bandwidth efficiency (1: all the memory reaches) gets q itself
    plain = Calibration(prefill={"compute_efficiency": 0.8}, decode={}, source="a test")
    assert borrowed(plain, target, source).prefill["bandwidth_efficiency"] == pytest.approx(
        0.8 / 0.9, rel=1e-12)


def test_borrowed_keeps_the_efficiencies_where_a_share_is_unmeasured():
    fitted = _fitted()
    assert borrowed(fitted, _card(1.6e12), dataclasses.replace(_card(), name="other")) is fitted
    assert borrowed(fitted, _card(), dataclasses.replace(_card(1.8e12), name="other")) is fitted


def test_engine_profile_states_the_error_of_the_carriage_it_makes():
    """A GPU without a profile of its own but with a measured streaming bandwidth is timed by
    the nearest profile carried by the two shares and expects its leave-one-GPU-out error at
    measured bandwidths; without one, the error at datasheet bandwidths, which the profile
    row states beside it."""
    nvl = catalog.gpu("H100-NVL-94GB")
    assert nvl.streaming_bandwidth is None
    measured = dataclasses.replace(nvl, streaming_bandwidth=0.85 * nvl.hbm_bandwidth)
    with pytest.warns(UserWarning, match=r"error on datasheet bandwidths") as plain:
        rk.engine_profile("vllm", nvl)
    with pytest.warns(UserWarning, match=r"carried by the GPUs' measured streaming") as carried:
        profile = rk.engine_profile("vllm", measured)
    near = catalog.gpu("H100-SXM-80GB")
    assert f"the {near.name} profile" in str(carried[0].message)
    from rooflinekit.profiles.shipped import _shipped
    row = next(r for r in _shipped()["vllm"] if r["gpu"] == near.name)
    assert f"about {row['held_out_error']:.0f}% error" in str(carried[0].message)
    assert f"about {row['held_out_error_datasheet']:.0f}% error" in str(plain[0].message)
    q = 0.85 / (near.streaming_bandwidth / near.hbm_bandwidth)
    own = rk.engine_profile("vllm", near.name)
    assert profile.decode["bandwidth_efficiency"] == pytest.approx(
        min(1.0, own.decode["bandwidth_efficiency"] * q), rel=1e-12)


def test_every_shipped_profile_states_both_held_out_errors():
    from rooflinekit.profiles.shipped import _shipped
    for engine, rows in _shipped().items():
        for row in rows:
            assert row["held_out_error_datasheet"] is not None, (engine, row["gpu"])
            assert 0 <= row["held_out_error_datasheet"] < 100


@pytest.mark.parametrize("value, ok", [("", True), ("held_out_error_datasheet = 12.5\n", True),
                                       ("held_out_error_datasheet = -1.0\n", False),
                                       ("held_out_error_datasheet = nan\n", False),
                                       ('held_out_error_datasheet = "9"\n', False)])
def test_the_loader_checks_the_datasheet_error(tmp_path, value, ok):
    """An optional field: absent is None, a finite percentage is kept, anything else is refused
    naming the file, the row and the field."""
    from pathlib import Path

    from rooflinekit.profiles.shipped import read_profile_file
    shipped = Path(rk.__file__).parent / "data" / "engine_profiles" / "trtllm.toml"
    lines = [line for line in shipped.read_text(encoding="utf-8").splitlines(keepends=True)
             if not line.startswith("held_out_error_datasheet")]
    at = next(i for i, line in enumerate(lines) if line.startswith("held_out_error_ttft"))
    path = tmp_path / "trtllm.toml"
    path.write_text("".join(lines[:at + 1]) + value + "".join(lines[at + 1:]), encoding="utf-8")
    if not ok:
        with pytest.raises(ValueError, match=r"trtllm\.toml: profile\[0\]\."
                                             r"held_out_error_datasheet: must be a finite"):
            read_profile_file(path)
        return
    _, rows = read_profile_file(path)
    assert rows[0]["held_out_error_datasheet"] == (12.5 if value else None)
    assert all(r["held_out_error_datasheet"] is None for r in rows[1:])
