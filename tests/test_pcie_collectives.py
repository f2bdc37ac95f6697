"""A PCIe group's collective latency: a hop per peer, where NVLink pays one latency.

A GPU whose catalogue row says ``ring_collectives = true`` (the L40S and the RTX PRO 6000
Server: their all-reduce tables take 5.4, 13.3, 25.0 and 4.3, 12.6, 23.6 us for the smallest
message on 2, 4 and 8 GPUs, where the H100's stays at 4.3-4.7 us) turns an engine's
``"collective"`` all-reduce into the ring's latency: ``2 (d - 1)`` hop latencies per all-reduce
instead of :data:`rooflinekit.parallel.COLLECTIVE_HOPS` (2). The expected values are written
by hand: a decode step of an L-layer model carries ``2 L`` all-reduces.
"""

from __future__ import annotations

import dataclasses

import pytest

from rooflinekit import Engine, catalog, parallel, roofline
from rooflinekit.catalog import _gpu_from_row
from rooflinekit.hardware import GPU

#: Llama-3.1-70B: 80 layers, so 160 all-reduces a step.
MODEL = "Llama-3.1-70B"
ALLREDUCES = 2 * 80


def _card(ring: bool, latency: float = 2e-6) -> GPU:
    return GPU(name="pcie-card", memory_bytes=48 * 2**30, hbm_bandwidth=0.864e12,
               peak_flops=362.05e12, interconnect_bandwidth=32e9, interconnect_latency=latency,
               ring_collectives=ring, source="test")


def _step(gpu, tp, engine=None):
    return roofline.decode_step_time(catalog.model(MODEL), gpu, batch_size=8,
                                     context_length=1024, tp=tp, engine=engine)


@pytest.mark.parametrize("tp, extra_hops", [(1, 0), (2, 0), (4, 4), (8, 12)])
def test_a_ring_card_pays_a_latency_per_hop(tp, extra_hops):
    # 2 (d - 1) hops against 2: none more at d = 2, 4 more at 4, 12 more at 8, per all-reduce
    ring, flat = _card(True), _card(False)
    assert _step(ring, tp) - _step(flat, tp) == pytest.approx(
        ALLREDUCES * extra_hops * 2e-6, rel=1e-9, abs=1e-15)


def test_ring_and_guide_algorithms_are_the_same_on_every_card():
    for tp in (2, 4, 8):
        for algorithm in ("ring", "guide"):
            engine = Engine(allreduce=algorithm)
            assert _step(_card(True), tp, engine) == _step(_card(False), tp, engine)
        # the collective on a ring card is the ring
        assert _step(_card(True), tp) == _step(_card(False), tp, Engine(allreduce="ring"))


def test_allreduce_time_by_hand_and_type_kept():
    model = catalog.model(MODEL)
    ring, flat = _card(True), _card(False)
    got = parallel.allreduce_time(model, ring, 8, 4) - parallel.allreduce_time(model, flat, 8, 4)
    assert got == pytest.approx(ALLREDUCES * 4 * 2e-6, rel=1e-9)
    assert isinstance(parallel.allreduce_time(model, ring, 8, 4), float)


def test_catalogue_rows():
    assert catalog.gpu("L40S").ring_collectives is True
    assert catalog.gpu("RTX-PRO-6000-Server").ring_collectives is True
    for name in ("H100-SXM-80GB", "H200-SXM-141GB", "B200", "GB200"):
        assert catalog.gpu(name).ring_collectives is False


def test_dataset_path_matches_the_object_path():
    names = ["L40S", "H100-SXM-80GB"]
    ds = catalog.gpus(as_dataset=True).sel(gpu=names)
    assert ds["ring_collectives"].attrs["units"] == "1"
    grid = _step(ds, 8)
    model = catalog.model(MODEL)
    times = parallel.allreduce_time(model, ds, 8, 8)
    for name in names:
        assert float(grid.sel(gpu=name)) == pytest.approx(_step(catalog.gpu(name), 8), rel=1e-12)
        assert float(times.sel(gpu=name)) == pytest.approx(
            parallel.allreduce_time(model, catalog.gpu(name), 8, 8), rel=1e-12)


def test_an_nvlink_gpu_is_unchanged():
    h100 = catalog.gpu("H100-SXM-80GB")
    assert _step(h100, 8) == _step(dataclasses.replace(h100, ring_collectives=False), 8)
    assert _step(h100, 8) < _step(h100, 8, Engine(allreduce="ring"))


# -- bad inputs ---------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["yes", 1, None])
def test_gpu_refuses_a_flag_that_is_not_a_bool(value):
    with pytest.raises(TypeError, match="ring_collectives"):
        _card(value)


def _row(**changes):
    row = {"name": "card", "memory_gib": 48, "hbm_bandwidth_tb_s": 0.864,
           "dense_tflops": {"bf16": 362.05}, "interconnect_gb_s": 32, "source": "test",
           "ring_collectives": True, "ring_collectives_source": "test"}
    row.update(changes)
    return {k: v for k, v in row.items() if v is not None}


def test_catalogue_row_reads_the_flag():
    assert _gpu_from_row(_row(), {}).ring_collectives is True
    assert _gpu_from_row(_row(ring_collectives=None, ring_collectives_source=None),
                         {}).ring_collectives is False


@pytest.mark.parametrize("changes, match", [
    ({"ring_collectives_source": None}, "ring_collectives_source"),
    ({"ring_collectives_source": ""}, "ring_collectives_source"),
    ({"ring_collectives": "true"}, "ring_collectives must be true or false"),
    ({"ring_collectives": 1}, "ring_collectives must be true or false"),
])
def test_catalogue_row_refuses_a_bad_flag(changes, match):
    with pytest.raises(ValueError, match=match):
        _gpu_from_row(_row(**changes), {})


def test_the_coefficients_take_the_flag_by_spec_kind():
    """allreduce_coefficients holds the rule for every caller: 2 (d - 1) hops on a ring card,
    COLLECTIVE_HOPS elsewhere, per element of an array of flags."""
    import numpy as np
    _, flat = parallel.allreduce_coefficients(80, 8192, 2, 8, 1e-6, "collective")
    _, ring = parallel.allreduce_coefficients(80, 8192, 2, 8, 1e-6, "collective", True)
    assert flat == pytest.approx(ALLREDUCES * 2 * 1e-6) and ring == pytest.approx(
        ALLREDUCES * 14 * 1e-6)
    _, both = parallel.allreduce_coefficients(80, 8192, 2, 8, 1e-6, "collective",
                                              np.array([0.0, 1.0, np.nan]))
    np.testing.assert_allclose(both, [flat, ring, flat])
