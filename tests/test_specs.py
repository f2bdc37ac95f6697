"""GPU and ModelShape: validation, derived properties, the TP group, dtypes and units."""

import dataclasses

import pytest

from rooflinekit import GPU, ModelShape, dims, units
from rooflinekit.dtypes import bytes_per_element


def test_units_conventions():
    # docs/conventions.md: binary memory, decimal weights/bandwidth
    assert units.GiB == 2**30 and units.GB == 10**9
    assert 140e9 / units.GiB == pytest.approx(130.385, abs=1e-3)
    assert units.HOURS_PER_MONTH == 730
    assert 8 * 3 * units.HOURS_PER_MONTH == 17_520    # guide §6.5 GPU line


def test_dims_glossary_covers_every_name():
    names = [getattr(dims, n) for n in dims.__all__ if n != "GLOSSARY"]
    assert set(names) == set(dims.GLOSSARY)


@pytest.mark.parametrize("name, size", [("fp32", 4), ("BF16", 2), ("fp16", 2), ("fp8", 1),
                                        ("int8", 1), ("int4", 0.5), (2, 2), (0.5, 0.5)])
def test_dtype_by_name_or_bytes(name, size):
    assert bytes_per_element(name) == size


def test_dtype_errors():
    with pytest.raises(ValueError, match="unknown format"):
        bytes_per_element("fp7")
    with pytest.raises(ValueError, match="positive"):
        bytes_per_element(0)
    with pytest.raises(TypeError):
        bytes_per_element(None)


def test_model_attention_kinds():
    base = dict(name="m", n_layers=2, n_heads=8, head_dim=64, n_params=1e9)
    assert ModelShape(n_kv_heads=8, **base).attention == "MHA"
    assert ModelShape(n_kv_heads=2, **base).attention == "GQA-2"
    assert ModelShape(n_kv_heads=1, **base).attention == "MQA"


def test_model_weights_and_dtypes():
    m = ModelShape("m", 80, 64, 8, 128, 70e9, bytes_per_param="int4", kv_bytes_per_element="fp8")
    assert m.weight_bytes == 35e9
    assert m.kv_bytes_per_token == 2 * 80 * 8 * 128 * 1


def test_model_frozen():
    m = ModelShape("m", 80, 64, 8, 128, 70e9)
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.n_layers = 3


def test_moe_active_params():
    m = ModelShape("moe", 32, 32, 8, 128, 46.7e9, n_active_params=12.9e9, n_experts=8,
                   n_experts_per_token=2)
    assert m.is_moe and m.active_weight_bytes == 12.9e9 * 2
    assert ModelShape("d", 2, 8, 8, 64, 1e9).n_active_params == 1e9


@pytest.mark.parametrize("kwargs, err, match", [
    (dict(n_heads=8, n_kv_heads=3), ValueError, "multiple of n_kv_heads"),
    (dict(n_layers=0), ValueError, "n_layers"),
    (dict(n_layers=-1), ValueError, "n_layers"),
    (dict(head_dim=1.5), ValueError, "head_dim"),
    (dict(n_params=0), ValueError, "n_params"),
    (dict(n_params="7B"), TypeError, "n_params"),
    (dict(n_active_params=2e9), ValueError, "n_active_params"),
    (dict(n_experts=2, n_experts_per_token=3), ValueError, "n_experts_per_token"),
    (dict(kv_lora_rank=512), ValueError, "kv_lora_rank"),
    (dict(n_sliding_layers=1), ValueError, "sliding_window"),
    (dict(sliding_window=16, n_sliding_layers=5), ValueError, "n_sliding_layers"),
    (dict(bytes_per_param="fp7"), ValueError, "bytes_per_param"),
])
def test_model_validation(kwargs, err, match):
    args = dict(name="m", n_layers=2, n_heads=8, n_kv_heads=8, head_dim=64, n_params=1e9) | kwargs
    with pytest.raises(err, match=match):
        ModelShape(**args)


def test_gpu_group_scales_simple_model():
    # guide §5: memory, bandwidth and FLOP/s scale with the degree
    g = GPU("lab", 80 * units.GiB, 3.35e12, 989e12, {"fp8": 1978e12}, interconnect_bandwidth=450e9,
            hourly_price=3.0)
    g8 = g.group(8)
    assert g8.memory_bytes == 640 * units.GiB
    assert g8.hbm_bandwidth == 8 * 3.35e12 and g8.peak_flops == 8 * 989e12
    assert g8.flops_for("fp8") == 8 * 1978e12
    assert g8.hourly_price == 24.0 and g8.n_gpus == 8
    assert g8.interconnect_bandwidth == 450e9          # per GPU, unchanged
    assert g8.ridge_point == pytest.approx(g.ridge_point)
    assert g.group(1) is g
    assert g.ridge_point == pytest.approx(295.2, abs=0.05)   # guide §3.2


def test_gpu_flops_fallback_and_errors():
    g = GPU("g", 1e9, 1e12, 1e14)
    assert g.flops_for("int4") == 1e14 and g.flops_for("fp16") == 1e14
    with pytest.raises(ValueError, match="memory_bytes"):
        GPU("g", 0, 1e12, 1e14)
    with pytest.raises(TypeError, match="hbm_bandwidth"):
        GPU("g", 1e9, "fast", 1e14)
    with pytest.raises(ValueError, match="tp"):
        g.group(0)
    with pytest.raises(ValueError, match="hourly_price"):
        GPU("g", 1e9, 1e12, 1e14, hourly_price=-1)
