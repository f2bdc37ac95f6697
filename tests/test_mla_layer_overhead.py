"""``mla_layer_overhead``: the fixed time a multi-head latent attention layer adds to a step.

An MLA module at a few sequences takes longer than reading its weights and latent cache: about
ten kernels (down- and up-projections, their norms, RoPE, the absorbed attention, its output)
where a layer with KV heads runs three (aiconfigurator-core's MLA generation-module tables:
6-16 µs a layer over a GQA layer's attention block under TensorRT-LLM 1.3;
scripts/engine_profiles.py). The knob adds ``n_kv_layers · mla_layer_overhead`` to the step's
fixed time of a model with MLA, nothing to any other model's; 0 (the default) leaves every
result as it was, to the bit. Expected values below are written by hand from those rules.
"""

import dataclasses
import math

import pytest

from rooflinekit import Engine, catalog, roofline
from rooflinekit.calibrate import Calibration

from helpers import (assert_calibrate_matches_formulas, assert_paid_every_layer,
                     assert_paid_per_layer_on_a_grid)

GPU = catalog.gpu("H200-SXM-141GB")


def _decode(model, engine, batch=8, context=2048, tp=8):
    return roofline.decode_step_time(model, GPU, batch_size=batch, context_length=context,
                                     tp=tp, engine=engine)


@pytest.mark.parametrize("name, layers", [("DeepSeek-V3", 61), ("Kimi-K2-Instruct", 61),
                                          ("GLM-5", 78)])
def test_an_mla_model_pays_it_every_layer(name, layers):
    model = catalog.model(name)
    assert model.n_layers == layers and model.is_mla
    base = Engine(bandwidth_efficiency=0.8, layer_overhead=3e-5, moe_layer_overhead=2e-5)
    assert_paid_every_layer("mla_layer_overhead", 1.5e-5, model, GPU, 8, layers, base)


def test_only_the_layers_with_a_latent_cache_pay_it():
    """A hybrid whose recurrent layers hold no KV cache: 61 layers, 16 of them MLA."""
    full = catalog.model("DeepSeek-V3")
    hybrid = dataclasses.replace(full, name="hybrid", n_attention_layers=16,
                                 n_linear_attention_layers=45)
    assert hybrid.n_kv_layers == 16
    base = Engine(bandwidth_efficiency=0.8)
    added = _decode(hybrid, base.replace(mla_layer_overhead=1e-5)) - _decode(hybrid, base)
    assert added == pytest.approx(16 * 1e-5, rel=1e-9)


@pytest.mark.parametrize("name", ["Llama-3.1-70B", "Qwen3-235B-A22B", "gpt-oss-120b"])
def test_a_model_with_kv_heads_never_pays_it(name):
    model = catalog.model(name)
    engine = Engine(bandwidth_efficiency=0.8, mla_layer_overhead=5e-5)
    assert _decode(model, engine) == _decode(model, engine.replace(mla_layer_overhead=0.0))


def test_a_grid_of_models_takes_it_where_each_has_mla():
    assert_paid_per_layer_on_a_grid("mla_layer_overhead", "DeepSeek-V3", 61, "Llama-3.1-70B",
                                    _decode)


@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_calibrate_predicts_what_the_formulas_give(phase):
    knobs = {"compute_efficiency": 0.8, "bandwidth_efficiency": 0.8, "layer_overhead": 3e-5,
             "mla_layer_overhead": 1e-5}
    rows = [{"model": name, "gpu": GPU.name, "tp": 8, "dtype": "", "batch_size": b,
             "prompt_tokens": 1024, "output_tokens": 0, "context_length": 1024,
             "tpot_ms": 1.0, "ttft_ms": 1.0, "source": "test rows"}
            for name in ("DeepSeek-V3", "Llama-3.1-70B") for b in (1, 64)]
    assert_calibrate_matches_formulas(
        rows, knobs, phase, lambda row: (catalog.model(row["model"]), GPU), 1024)


def test_the_shipped_profiles_carry_it():
    """TensorRT-LLM 1.3's module tables: 6-16 µs a layer on H100-class and Blackwell GPUs;
    vLLM's (B200, GB300) 11-13 µs, the median of which the others take; SGLang, with no module
    table, none (scripts/engine_profiles.py's MLA stage)."""
    import rooflinekit as rk
    for engine in ("vllm", "trtllm"):
        for gpu in ("H100-SXM-80GB", "H200-SXM-141GB", "B200", "A100-SXM-80GB"):
            profile = rk.engine_profile(engine, gpu, warn=False)
            value = profile.decode["mla_layer_overhead"]
            assert 5e-6 <= value <= 2e-5
            assert profile.prefill["mla_layer_overhead"] == value
    h200 = rk.engine_profile("trtllm", "H200-SXM-141GB", warn=False)
    assert 1.4e-5 <= h200.decode["mla_layer_overhead"] <= 1.7e-5
    for gpu in ("H200-SXM-141GB", "B200"):
        assert rk.engine_profile("sglang", gpu, warn=False).decode["mla_layer_overhead"] == 0.0


@pytest.mark.parametrize("value", [-1e-6, math.nan, math.inf])
def test_bad_values_are_refused_naming_the_knob(value):
    with pytest.raises(ValueError, match="mla_layer_overhead"):
        Engine(mla_layer_overhead=value)
    with pytest.raises(ValueError, match="mla_layer_overhead"):
        Calibration(decode={"mla_layer_overhead": value})
