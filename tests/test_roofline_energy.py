"""Energy per generated token: hand-computed from the step's bytes, FLOPs and board power."""

import math

import numpy as np
import pytest
import xarray as xr

from rooflinekit import GPU, ModelShape, catalog, energy_per_token, units
from rooflinekit.roofline import decode_step_time
from rooflinekit import Engine

# A small dense model whose step is easy to count by hand: 2 layers, 4 query heads, 2 KV heads
# of width 8, 1e9 parameters in bf16 (2 bytes each).
MODEL = ModelShape("tiny", n_layers=2, n_heads=4, n_kv_heads=2, head_dim=8, n_params=1e9)
GPU_500W = GPU("g", memory_bytes=80 * units.GiB, hbm_bandwidth=1e12, peak_flops=1e15,
               board_power=500.0)

# By hand, a decode step of B = 4 sequences at C = 1,000 cached tokens:
WEIGHTS = 1e9 * 2                                       # bytes read once per step
KV_PER_TOKEN = 2 * 2 * 2 * 8 * 2                        # K and V, layers, KV heads, width, bytes
BYTES = WEIGHTS + KV_PER_TOKEN * 4 * 1000               # 2.000512e9 B
FLOPS = 2 * 1e9 * 4 + 4 * 4 * 8 * 2 * 4 * 1000          # matmuls + attention: 8.001024e9 FLOP
T_MEMORY = BYTES / 1e12                                 # 2.000512 ms: memory-bound
T_COMPUTE = FLOPS / 1e15                                # 8.0 µs


def test_memory_bound_step_with_overhead_by_hand():
    overhead = 1e-3
    step = T_MEMORY + overhead                          # 3.000512 ms
    u = T_MEMORY / step                                 # the binding roof's busy share
    power = 500.0 * (0.3 + 0.7 * u)                     # W
    expected = power * step / 4                         # J per token
    assert expected == pytest.approx(0.287564, rel=1e-12)      # 500·(0.3·T + 0.7·T_m)/4
    got = energy_per_token(MODEL, GPU_500W, 4, 1000, engine=Engine(step_overhead=overhead))
    assert got == pytest.approx(expected, rel=1e-12)


def test_without_overhead_the_board_runs_at_its_rating():
    # u = 1: the idle share drops out and every second of the step costs the full 500 W
    expected = 500.0 * T_MEMORY / 4                     # 0.250064 J/token
    for idle in (0.0, 0.3, 1.0):
        got = energy_per_token(MODEL, GPU_500W, 4, 1000, idle_power_fraction=idle)
        assert got == pytest.approx(expected, rel=1e-12)


def test_compute_bound_step_counts_compute_time():
    # at B = 2,000 with no context the arithmetic (4e12 FLOP, 4 ms) outruns the 2 ms of weights
    flops = 2 * 1e9 * 2000
    t_compute = flops / 1e15
    assert t_compute > WEIGHTS / 1e12
    overhead = 2e-3
    expected = 500.0 * (0.5 * (t_compute + overhead) + 0.5 * t_compute) / 2000
    got = energy_per_token(MODEL, GPU_500W, 2000, 0, engine=Engine(step_overhead=overhead),
                           idle_power_fraction=0.5)
    assert got == pytest.approx(expected, rel=1e-12)
    assert got == pytest.approx(1.25e-3, rel=1e-12)


def test_tensor_parallel_group_draws_tp_boards():
    # tp = 2 halves the step (twice the bandwidth) and doubles the power: same joules per token
    # while memory-bound with no overhead, more with a fixed overhead paid by both boards (the
    # guide's simple model: no all-reduce, and GPU_500W has no link to send one over)
    simple = Engine(allreduce="guide")
    one = energy_per_token(MODEL, GPU_500W, 4, 1000)
    two = energy_per_token(MODEL, GPU_500W, 4, 1000, tp=2, engine=simple)
    assert two == pytest.approx(one, rel=1e-12)
    overhead = 1e-3
    expected = 2 * 500.0 * (0.3 * (T_MEMORY / 2 + overhead) + 0.7 * T_MEMORY / 2) / 4
    slow = simple.replace(step_overhead=overhead)
    got = energy_per_token(MODEL, GPU_500W, 4, 1000, tp=2, engine=slow)
    assert got == pytest.approx(expected, rel=1e-12)
    grouped = energy_per_token(MODEL, GPU_500W.group(2), 4, 1000, engine=slow)
    assert grouped == pytest.approx(expected, rel=1e-12)


def test_guide_70b_on_eight_h100_at_batch_one():
    # the guide's simple model: 140e9 bytes of weights over 8 × 3.35 TB/s, at 8 × 700 W:
    # 5,600 W × 5.224 ms = 29.25 J
    model, gpu = catalog.model("guide-70b"), catalog.gpu("h100")
    expected = 8 * 700.0 * (70e9 * 2 / (8 * 3.35e12))
    assert energy_per_token(model, gpu, 1, 0, tp=8, engine=Engine(allreduce="guide")) == \
        pytest.approx(expected, rel=1e-9)
    assert expected == pytest.approx(29.2537, rel=1e-5)


def test_full_idle_fraction_is_board_power_times_step_time():
    step = decode_step_time(MODEL, GPU_500W, 4, 1000, engine=Engine(step_overhead=1e-3))
    got = energy_per_token(MODEL, GPU_500W, 4, 1000, engine=Engine(step_overhead=1e-3), idle_power_fraction=1)
    assert got == pytest.approx(500.0 * step / 4, rel=1e-12)


def test_labels_and_broadcasting():
    batch = xr.DataArray([1, 4], dims=("batch_size",), coords={"batch_size": [1, 4]})
    got = energy_per_token(MODEL, GPU_500W, batch, 1000)
    assert got.attrs["units"] == "J/token"
    assert got.dims == ("batch_size",)
    by_hand = [500.0 * (WEIGHTS + KV_PER_TOKEN * b * 1000) / 1e12 / b for b in (1, 4)]
    np.testing.assert_allclose(got.values, by_hand, rtol=1e-12)
    gpus = catalog.gpus(["h100", "mi300x"], as_dataset=True)
    over_gpus = energy_per_token(MODEL, gpus, 4, 1000)
    assert over_gpus.dims == ("gpu",)
    expected = [700.0 * BYTES / 3.35e12 / 4, 750.0 * BYTES / 5.3e12 / 4]
    np.testing.assert_allclose(over_gpus.values, expected, rtol=1e-12)


def test_gpu_without_board_power_is_refused():
    unknown = GPU("no-power", 80 * units.GiB, 1e12, 1e15)
    assert unknown.board_power is None
    with pytest.raises(ValueError, match=r"gpu\.board_power"):
        energy_per_token(MODEL, unknown)
    with pytest.raises(ValueError, match=r"gpu\.board_power"):
        energy_per_token(MODEL, catalog.gpu("A10G"))


@pytest.mark.parametrize("idle", [-0.1, 1.5, math.nan])
def test_idle_fraction_outside_zero_one_is_refused(idle):
    with pytest.raises(ValueError, match="idle_power_fraction"):
        energy_per_token(MODEL, GPU_500W, idle_power_fraction=idle)


@pytest.mark.parametrize("power", [0.0, -700.0, math.inf, math.nan])
def test_board_power_must_be_finite_and_positive(power):
    with pytest.raises(ValueError, match="board_power"):
        GPU("g", 80 * units.GiB, 1e12, 1e15, board_power=power)


def test_board_power_is_a_group_total():
    assert GPU_500W.group(8).board_power == 4000.0
    assert GPU("g", 80 * units.GiB, 1e12, 1e15).group(8).board_power is None
