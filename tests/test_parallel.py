"""Tensor parallelism: the simple group model, ring all-reduce cost, smallest_tp, scaling."""

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from rooflinekit import GPU, catalog, memory, units
from rooflinekit import parallel as p
from rooflinekit import roofline as r
from rooflinekit import Engine

W70 = 140e9
BW = 3.35e12


# -- the simple model (guide §5) ------------------------------------------------------------------

def test_group_scales_with_degree(lab_gpu):
    # guide §5: memory, bandwidth and FLOP/s all scale with the group size (exact)
    assert p.group_bandwidth(lab_gpu, 8) == 8 * BW
    assert p.group_peak_flops(lab_gpu, 8) == 8 * 989e12
    assert memory.group_memory_bytes(lab_gpu, 8) == 640 * units.GiB
    np.testing.assert_array_equal(p.group_bandwidth(lab_gpu, np.array([1, 2, 4])),
                                  [BW, 2 * BW, 4 * BW])
    da = p.group_peak_flops(lab_gpu, xr.DataArray([1, 8], dims="tp", coords={"tp": [1, 8]}))
    assert da.dims == ("tp",) and da.attrs["units"] == "FLOP/s"
    gpus = catalog.gpus(as_dataset=True)
    out = p.group_bandwidth(gpus, 2)
    assert float(out.sel(gpu="guide-lab-80GB")) == 2 * BW


def test_group_peak_by_format():
    h100 = catalog.gpu("H100-SXM-80GB")
    assert p.group_peak_flops(h100, 2, compute_dtype="fp8") == 2 * h100.flops_for("fp8")
    gpus = catalog.gpus(["H100-SXM-80GB", "A100-SXM-80GB"], as_dataset=True)
    out = p.group_peak_flops(gpus, 1, compute_dtype="fp8")
    assert float(out.sel(gpu="H100-SXM-80GB")) == h100.flops_for("fp8")


def test_simple_model_decode_scales_exactly(guide_model, lab_gpu):
    # without all-reduce, batch-1 decode at tp=8 is 41.79 ms / 8 = 5.22 ms exactly (rel 1e-15)
    t8 = r.decode_step_time(guide_model, lab_gpu, tp=8, engine=Engine(allreduce="guide"))
    assert t8 == pytest.approx(W70 / (8 * BW), rel=1e-15)


# -- ring all-reduce -------------------------------------------------------------------------------

def test_ring_allreduce_formula():
    # 2·(d−1)/d of the payload over the link plus 2·(d−1) hops (Patarasuk & Yuan 2009)
    assert p.ring_allreduce_time(1e6, 1, 1e9, 5e-6) == 0.0
    assert p.ring_allreduce_time(1e6, 8, 1e9, 5e-6) == pytest.approx(
        1.75 * 1e6 / 1e9 + 14 * 5e-6, rel=1e-15)
    arr = p.ring_allreduce_time(np.array([0.0, 8e6]), 4, 4e11)
    np.testing.assert_allclose(arr, [0.0, 1.5 * 8e6 / 4e11], rtol=1e-15)
    da = p.ring_allreduce_time(xr.DataArray([2, 8], dims="tp"), 2, 1e9, 1e-6)
    assert da.dims == ("tp",) and da.attrs["units"] == "s"


def test_allreduce_time_70b_tp8(guide_model, lab_gpu):
    # 160 ring all-reduces (2 per layer × 80) of 1 × 8,192 × 2 B at tp=8 on 450 GB/s, 1 µs per
    # hop (the GPU default): 160 × (1.75 × 16,384 / 450e9 + 14 × 1e-6) = 2.25 ms (rel 1e-12)
    ring = {"algorithm": "ring"}
    expected = 160 * (1.75 * 16_384 / 450e9 + 14 * 1e-6)
    assert p.allreduce_time(guide_model, lab_gpu, 1, 8, **ring) == pytest.approx(expected,
                                                                                 rel=1e-12)
    assert p.allreduce_time(guide_model, lab_gpu, 1, 1, **ring) == 0.0
    assert r.decode_step_time(guide_model, lab_gpu, 1, 0, 8, engine=Engine(allreduce="ring")) == \
        pytest.approx(W70 / (8 * BW) + expected, rel=1e-12)
    # input kinds
    arr = p.allreduce_time(guide_model, lab_gpu, np.array([1, 64]), 8)
    assert arr.shape == (2,) and arr[1] > arr[0]
    da = p.allreduce_time(guide_model, lab_gpu, 1, xr.DataArray([1, 8], dims="tp"))
    assert da.dims == ("tp",) and da.values[0] == 0.0
    slower = p.allreduce_time(guide_model, lab_gpu, 1, 8, interconnect_latency=5e-6, **ring)
    assert slower == pytest.approx(160 * (1.75 * 16_384 / 450e9 + 14 * 5e-6), rel=1e-12)


def test_allreduce_needs_known_link(guide_model):
    no_link = GPU("no-link", 80 * units.GiB, BW, 989e12)
    assert p.allreduce_time(guide_model, no_link, 1, 1) == 0.0
    with pytest.raises(ValueError, match="interconnect_bandwidth is unknown"):
        p.allreduce_time(guide_model, no_link, 1, 2)
    with pytest.raises(ValueError, match="interconnect_bandwidth must lie in"):
        p.allreduce_time(guide_model, no_link, 1, 2, interconnect_bandwidth=0)


# -- what the simple model ignores: sub-linear scaling ---------------------------------------------

def test_tp8_with_allreduce_is_slower_than_simple_and_sublinear(guide_model, lab_gpu):
    # guide §5: communication makes scaling sub-linear. At batch 1 and at batch 64 / 2k tokens:
    for batch, ctx in ((1, 0), (64, 2048)):
        simple = r.decode_step_time(guide_model, lab_gpu, batch, ctx, [4, 8], engine=Engine(allreduce="guide"))
        real = r.decode_step_time(guide_model, lab_gpu, batch, ctx, [4, 8], engine=Engine(allreduce=True))
        assert real[1] > simple[1]
        assert simple[0] / simple[1] == pytest.approx(2.0, rel=1e-12)   # simple model: 2×
        assert real[0] / real[1] < 2.0                                   # really: less


def test_tp_scaling_flattens(guide_model, lab_gpu):
    table = r.tp_scaling(guide_model, lab_gpu, (1, 2, 4, 8), batch_size=32, context_length=4096)
    assert table.decode_step_time.dims == ("tp",)
    np.testing.assert_allclose(table.speedup_simple, [1, 2, 4, 8], rtol=1e-12)
    speedup = table.speedup.values
    assert np.all(speedup[1:] < [2, 4, 8])
    eff = table.scaling_efficiency.values
    assert np.all(np.diff(eff) < 0)                        # every doubling gains less
    gains = speedup[1:] / speedup[:-1]
    assert np.all(np.diff(gains) < 0)                      # and the gains themselves shrink
    assert list(table.weights_fit.values) == [False, True, True, True]
    assert table.allreduce_time.attrs["units"] == "s"
    np.testing.assert_allclose(table.decode_step_time - table.decode_step_time_simple, table.allreduce_time)


def test_tp_scaling_kinds_and_errors(guide_model, lab_gpu):
    table = r.tp_scaling(guide_model, lab_gpu, [2, 4], batch_size=np.array([1, 16]))
    assert table.decode_step_time.dims == ("tp", "batch_size")
    models = catalog.models(["guide-70b", "Llama-3.1-8B"], as_dataset=True)
    table = r.tp_scaling(models, lab_gpu, [1, 2])
    assert set(table.decode_step_time.dims) == {"model", "tp"}
    with pytest.raises(ValueError, match="degrees must lie in"):
        r.tp_scaling(guide_model, lab_gpu, [0, 2])
    with pytest.raises(ValueError, match="at least one"):
        r.tp_scaling(guide_model, lab_gpu, [])
    with pytest.raises(TypeError, match="allreduce"):
        r.tp_scaling(guide_model, lab_gpu, [1, 2], engine=Engine(allreduce=1))


# -- smallest_tp -----------------------------------------------------------------------------------

def test_smallest_tp_picks_2_not_8(guide_model, lab_gpu):
    # 8 sequences of 8,192 tokens = 20 GiB of KV; 2 × 80 GiB leaves (160 GiB − 140e9 B) × 0.9 =
    # 26.7 GiB: tp=2 suffices (guide §5: the smallest degree that fits, not the largest)
    assert p.smallest_tp(guide_model, lab_gpu, concurrency=8, context_length=8192) == 2
    # 183 sequences of 8k need the whole 8-way group (guide §2.4); 184 fit nowhere (0)
    assert p.smallest_tp(guide_model, lab_gpu, concurrency=183, context_length=8192) == 8
    assert p.smallest_tp(guide_model, lab_gpu, concurrency=184, context_length=8192) == 0
    # a KV budget in bytes; zero budget still needs the weights to fit: 2 GPUs
    assert p.smallest_tp(guide_model, lab_gpu, kv_budget_bytes=0) == 2
    assert p.smallest_tp(guide_model, lab_gpu, kv_budget_bytes=100 * units.GiB) == 4
    small = catalog.model("Llama-3.1-8B")
    assert p.smallest_tp(small, lab_gpu, kv_budget_bytes=10 * units.GiB) == 1


def test_smallest_tp_kinds(guide_model, lab_gpu):
    arr = p.smallest_tp(guide_model, lab_gpu, concurrency=np.array([8, 40, 183, 500]),
                        context_length=8192)
    assert arr.dtype == np.int64
    np.testing.assert_array_equal(arr, [2, 4, 8, 0])
    da = p.smallest_tp(guide_model, lab_gpu, concurrency=xr.DataArray([8, 183], dims="c"),
                       context_length=8192)
    assert da.dims == ("c",) and list(da.values) == [2, 8] and da.attrs["units"] == "1"
    models = catalog.models(["guide-70b", "Llama-3.1-8B"], as_dataset=True)
    out = p.smallest_tp(models, lab_gpu, concurrency=8, context_length=8192)
    assert out.sel(model="guide-70b") == 2 and out.sel(model="Llama-3.1-8B") == 1
    assert p.smallest_tp(guide_model, lab_gpu, concurrency=8, context_length=8192,
                         candidates=(8, 4)) == 4


@settings(max_examples=40, deadline=None)
@given(concurrency=st.integers(1, 400), ctx=st.integers(1, 32_768),
       reserve=st.floats(0.0, 0.5))
def test_smallest_tp_is_the_first_that_fits(guide_model, lab_gpu, concurrency, ctx, reserve):
    tp = p.smallest_tp(guide_model, lab_gpu, concurrency=concurrency, context_length=ctx,
                       reserve=reserve)
    need = concurrency * memory.kv_bytes_per_sequence(guide_model, ctx)

    def fits(d):
        return (lab_gpu.memory_bytes * d > W70
                and memory.usable_kv_bytes(guide_model, lab_gpu, d, reserve) >= need)

    if tp == 0:
        assert not any(fits(d) for d in (1, 2, 4, 8))
    else:
        assert fits(tp) and not any(fits(d) for d in (1, 2, 4, 8) if d < tp)


@pytest.mark.parametrize("kwargs, error, match", [
    ({}, ValueError, "exactly one of"),
    ({"kv_budget_bytes": 1.0, "concurrency": 2, "context_length": 8}, ValueError, "exactly one"),
    ({"concurrency": 2}, ValueError, "needs context_length"),
    ({"kv_budget_bytes": 1.0, "context_length": 8}, ValueError, "only applies"),
    ({"kv_budget_bytes": -1.0}, ValueError, "kv_budget_bytes must lie in"),
    ({"concurrency": 0, "context_length": 8}, ValueError, "concurrency must lie in"),
    ({"kv_budget_bytes": 1.0, "candidates": (0, 2)}, ValueError, "candidates must be"),
    ({"kv_budget_bytes": 1.0, "candidates": "1248"}, TypeError, "candidates must be"),
    ({"kv_budget_bytes": 1.0, "reserve": 1.0}, ValueError, "reserve must lie in"),
])
def test_smallest_tp_errors(guide_model, lab_gpu, kwargs, error, match):
    with pytest.raises(error, match=match):
        p.smallest_tp(guide_model, lab_gpu, **kwargs)


def test_spec_type_errors(guide_model, lab_gpu):
    with pytest.raises(TypeError, match="model must be"):
        p.smallest_tp("70b", lab_gpu, kv_budget_bytes=0)
    with pytest.raises(TypeError, match="gpu must be"):
        p.allreduce_time(guide_model, "H100", 1, 2)
    with pytest.raises(ValueError, match="degree must lie in"):
        p.ring_allreduce_time(1.0, 0, 1e9)
