"""A PCIe group's shared host link: the all-reduce law past the peer-to-peer domain.

``host_traffic_share`` (an :class:`rooflinekit.Engine` field and a calibration knob) sends that
share of a tensor-parallel group's all-reduce traffic over the one host link the catalogue says
the group shares (``host_link_bandwidth``) once the group is larger than ``p2p_gpus``. The
expected values below are written from first principles: a ring (or two-phase) all-reduce moves
``2 (d - 1) / d`` of the payload per GPU; on a link shared by ``d`` GPUs each GPU gets
``host / d`` of it.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from rooflinekit import Engine, catalog, roofline
from rooflinekit.calibrate import Calibration, measurements_from_records, predict
from rooflinekit.catalog import _gpu_from_row
from rooflinekit.hardware import GPU

GB = 1e9

#: A Llama-3.1-70B-shaped decode step: 80 layers, width 8192, bf16 activations.
LAYERS, WIDTH, ACT_BYTES = 80, 8192, 2


def _pcie_gpu(**changes) -> GPU:
    """A PCIe card with a 32 GB/s link shared past GPU pairs (the L40S row's figures)."""
    base = GPU(name="pcie-card", memory_bytes=48 * 2**30, hbm_bandwidth=0.864e12,
               peak_flops=362.05e12, interconnect_bandwidth=32 * GB, host_link_bandwidth=32 * GB,
               p2p_gpus=2, source="test")
    return dataclasses.replace(base, **changes)


def _allreduce_bytes_per_gpu(batch: int, tp: int) -> float:
    """Bytes each GPU sends in one decode step's 2 · L all-reduces (by hand)."""
    payload = batch * WIDTH * ACT_BYTES                 # one all-reduce's message [bytes]
    return 2 * LAYERS * 2 * (tp - 1) / tp * payload


def _step(gpu, tp, engine, batch=64):
    model = catalog.model("Llama-3.1-70B")
    return roofline.decode_step_time(model, gpu, batch_size=batch, context_length=2048, tp=tp,
                                     engine=engine)


@pytest.mark.parametrize("tp", [4, 8])
def test_shared_host_link_by_hand(tp):
    # all the traffic over the shared link: each GPU gets 32 GB/s / tp instead of 32 GB/s
    gpu = _pcie_gpu()
    own = _step(gpu, tp, Engine())
    shared = _step(gpu, tp, Engine(host_traffic_share=1.0))
    sent = _allreduce_bytes_per_gpu(64, tp)
    expected = sent / (32 * GB / tp) - sent / (32 * GB)
    assert shared - own == pytest.approx(expected, rel=1e-9)
    # tp = 4, batch 64: 160 all-reduces of 1 MiB, 1.5 MiB each per GPU = 251.7 MB;
    # 31.46 ms at 8 GB/s against 7.86 ms at 32 GB/s
    if tp == 4:
        assert expected == pytest.approx(0.031457280 - 0.007864320, rel=1e-9)


def test_share_and_efficiency_by_hand():
    # half the traffic on the shared link, the link share 0.5 on both paths:
    # seconds per byte = 0.5 / (32e9 · 0.5) + 0.5 · 4 / (32e9 · 0.5)
    gpu = _pcie_gpu()
    tp = 4
    base = _step(gpu, tp, Engine(interconnect_efficiency=0.5))
    mixed = _step(gpu, tp, Engine(interconnect_efficiency=0.5, host_traffic_share=0.5))
    sent = _allreduce_bytes_per_gpu(64, tp)
    per_byte = 0.5 / 16e9 + 0.5 * 4 / 16e9
    assert mixed - base == pytest.approx(sent * per_byte - sent / 16e9, rel=1e-9)


def test_within_the_peer_to_peer_domain_nothing_changes():
    gpu = _pcie_gpu()
    for tp in (1, 2):
        assert _step(gpu, tp, Engine(host_traffic_share=1.0)) == _step(gpu, tp, Engine())
    # a domain of 4 keeps tp = 4 on the cards' own links
    wide = _pcie_gpu(p2p_gpus=4)
    assert _step(wide, 4, Engine(host_traffic_share=1.0)) == _step(wide, 4, Engine())
    assert _step(wide, 8, Engine(host_traffic_share=1.0)) > _step(wide, 8, Engine())


def test_nvlink_gpu_and_ideal_engine_are_unchanged():
    h100 = catalog.gpu("H100-SXM-80GB")
    assert h100.host_link_bandwidth is None and h100.p2p_gpus is None
    for tp in (2, 4, 8):
        assert _step(h100, tp, Engine(host_traffic_share=1.0)) == _step(h100, tp, Engine())
    # the ideal engine ignores the L40S row's host link: each GPU its own 32 GB/s
    l40s = catalog.gpu("L40S")
    plain = dataclasses.replace(l40s, host_link_bandwidth=None, p2p_gpus=None)
    assert _step(l40s, 4, Engine()) == _step(plain, 4, Engine())


def test_catalogue_row_of_l40s():
    gpu = catalog.gpu("L40S")
    assert gpu.host_link_bandwidth == 32 * GB      # one PCIe Gen4 x16 link per direction
    assert gpu.p2p_gpus == 2


def test_dataset_path_matches_the_object_path():
    ds = catalog.gpus(as_dataset=True).sel(gpu=["L40S", "H100-SXM-80GB"])
    engine = Engine(host_traffic_share=1.0)
    grid = _step(ds, 4, engine)
    for name in ("L40S", "H100-SXM-80GB"):
        assert float(grid.sel(gpu=name)) == pytest.approx(
            _step(catalog.gpu(name), 4, engine), rel=1e-12)


def test_calibrated_prediction_matches_the_roofline():
    knobs = {"interconnect_efficiency": 0.6, "host_traffic_share": 1.0}
    cal = Calibration(prefill={"compute_efficiency": 0.8, **knobs},
                      decode={"bandwidth_efficiency": 0.8, "layer_overhead": 3e-5, **knobs})
    rows = [{"model": "Llama-3.1-70B", "gpu": "L40S", "tp": tp, "batch_size": 64,
             "prompt_tokens": 2048, "output_tokens": 0, "context_length": 2048,
             "tpot_ms": 50.0, "source": "test"} for tp in (2, 4, 8)]
    got = predict(measurements_from_records(rows), cal)["decode"].values
    model, gpu = catalog.model("Llama-3.1-70B"), catalog.gpu("L40S")
    want = [roofline.decode_step_time(model, gpu, batch_size=64, context_length=2048, tp=tp,
                                      engine=cal.engine_for("decode")) for tp in (2, 4, 8)]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_default_knob_reproduces_the_link_alone():
    cal = Calibration(decode={"interconnect_efficiency": 0.6})
    assert cal.decode.get("host_traffic_share", 0.0) == 0.0
    assert cal.engine_for("decode").host_traffic_share == 0.0
    assert Engine().host_traffic_share == 0.0


# -- bad inputs ---------------------------------------------------------------------------------

@pytest.mark.parametrize("field, value", [("host_link_bandwidth", -1.0),
                                          ("host_link_bandwidth", 0.0),
                                          ("host_link_bandwidth", math.nan),
                                          ("host_link_bandwidth", math.inf),
                                          ("p2p_gpus", 0), ("p2p_gpus", 1.5)])
def test_gpu_refuses_bad_host_link(field, value):
    with pytest.raises(ValueError, match=field):
        _pcie_gpu(**{field: value})


@pytest.mark.parametrize("value", [-0.1, 1.5, math.nan])
def test_engine_refuses_bad_share(value):
    with pytest.raises(ValueError, match="host_traffic_share"):
        Engine(host_traffic_share=value)


@pytest.mark.parametrize("value", [-0.1, 1.5, math.nan])
def test_calibration_refuses_bad_share(value):
    with pytest.raises(ValueError, match="host_traffic_share"):
        Calibration(decode={"host_traffic_share": value})


def _row(**changes):
    row = {"name": "card", "memory_gib": 48, "hbm_bandwidth_tb_s": 0.864,
           "dense_tflops": {"bf16": 362.05}, "interconnect_gb_s": 32, "source": "test",
           "host_link_gb_s": 32, "p2p_gpus": 2, "host_link_source": "test"}
    row.update(changes)
    return {k: v for k, v in row.items() if v is not None}


def test_catalogue_row_reads_the_host_link():
    gpu = _gpu_from_row(_row(), {})
    assert gpu.host_link_bandwidth == 32e9 and gpu.p2p_gpus == 2


@pytest.mark.parametrize("changes, field", [
    ({"host_link_source": None}, "host_link_source"),
    ({"host_link_source": ""}, "host_link_source"),
    ({"host_link_gb_s": None}, "p2p_gpus"),
    ({"host_link_gb_s": -32}, "host_link_gb_s"),
    ({"host_link_gb_s": 0}, "host_link_gb_s"),
    ({"host_link_gb_s": "32"}, "host_link_gb_s"),
    ({"host_link_gb_s": math.inf}, "host_link_gb_s"),
    ({"p2p_gpus": 0}, "p2p_gpus"),
    ({"p2p_gpus": 2.5}, "p2p_gpus"),
    ({"p2p_gpus": True}, "p2p_gpus"),
])
def test_catalogue_row_refuses_bad_host_link(changes, field):
    with pytest.raises(ValueError, match=field):
        _gpu_from_row(_row(**changes), {})


def test_profile_file_refuses_bad_share(tmp_path):
    from rooflinekit.profiles.shipped import read_profile_file
    text = "\n".join([
        'engine = "vllm"', "", "[[profile]]", 'gpu = "L40S"', 'version = "0.24.0"',
        'date = "2026-01-01"', 'source = "test"', 'models = ["Llama-3.1-8B"]',
        "held_out_error = 1.0", "held_out_error_ttft = 1.0", "model_size_error = 1.0",
        "fit_error = 1.0", "prefill = { host_traffic_share = 1.0 }",
        "decode = { host_traffic_share = 2.0 }", ""])
    path = tmp_path / "vllm.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match="host_traffic_share"):
        read_profile_file(path)
    path.write_text(text.replace("host_traffic_share = 2.0", "host_traffic_share = 1.0"))
    _, rows = read_profile_file(path)
    assert rows[0]["calibration"].engine_for("decode").host_traffic_share == 1.0
