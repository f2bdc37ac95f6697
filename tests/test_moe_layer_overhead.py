"""``moe_layer_overhead``: the fixed time an MoE block adds to each layer of a step.

An MoE block at a few tokens takes longer than reading its experts' weights: routing, token
permutation and grouped GEMM launches (aiconfigurator-core's MoE tables: 16-50 µs a layer on
H100, H200 and B200, over the dense MLP's GEMMs; scripts/engine_profiles.py). The knob adds
``n_layers · moe_layer_overhead`` to the step's fixed time of a model with more than one
expert, nothing to a dense model's; 0 (the default) leaves every result as it was, to the bit.
Expected values below are written by hand from those rules.
"""

import math

import numpy as np
import pytest

from rooflinekit import Engine, catalog, roofline
from rooflinekit.calibrate import Calibration, measurements_from_records, predict

from helpers import assert_paid_every_layer, assert_paid_per_layer_on_a_grid

GPU = catalog.gpu("H100-SXM-80GB")


def _decode(model, engine, batch=8, context=2048, tp=1):
    return roofline.decode_step_time(model, GPU, batch_size=batch, context_length=context,
                                     tp=tp, engine=engine)


@pytest.mark.parametrize("name, layers", [("Mixtral-8x7B", 32), ("Qwen3-30B-A3B", 48),
                                          ("DeepSeek-R1", 61)])
def test_an_moe_model_pays_it_every_layer(name, layers):
    model = catalog.model(name)
    assert model.n_layers == layers and model.n_experts > 1
    base = Engine(bandwidth_efficiency=0.8, layer_overhead=3e-5)
    tp = 8 if name == "DeepSeek-R1" else 1
    assert_paid_every_layer("moe_layer_overhead", 2e-5, model, GPU, tp, layers, base)


def test_a_dense_model_never_pays_it():
    model = catalog.model("Llama-3.1-8B")
    engine = Engine(bandwidth_efficiency=0.8, moe_layer_overhead=5e-5)
    assert _decode(model, engine) == _decode(model, engine.replace(moe_layer_overhead=0.0))


def test_a_grid_of_models_takes_it_where_each_has_experts():
    assert_paid_per_layer_on_a_grid("moe_layer_overhead", "Mixtral-8x7B", 32, "Llama-3.1-8B",
                                    _decode)


def test_calibrated_prediction_matches_the_roofline():
    cal = Calibration(prefill={"compute_efficiency": 0.8, "moe_layer_overhead": 3e-5},
                      decode={"bandwidth_efficiency": 0.8, "layer_overhead": 3e-5,
                              "moe_layer_overhead": 3e-5})
    rows = [{"model": name, "gpu": "H100-SXM-80GB", "tp": 2, "batch_size": 16,
             "prompt_tokens": 1024, "output_tokens": 0, "context_length": 1024,
             "tpot_ms": 20.0, "source": "test"} for name in ("Mixtral-8x7B", "Llama-3.1-8B")]
    got = predict(measurements_from_records(rows), cal)["decode"].values
    want = [roofline.decode_step_time(catalog.model(name), GPU, batch_size=16,
                                      context_length=1024, tp=2,
                                      engine=cal.engine_for("decode"))
            for name in ("Mixtral-8x7B", "Llama-3.1-8B")]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_the_shipped_profiles_carry_it_for_the_gpus_with_moe_tables():
    """H100, H200 and B200 under vLLM: 14-50 µs a layer (scripts/engine_profiles.py's MoE
    stage); the A100 vLLM 0.14 tables have none of the rows read: 0 there."""
    import rooflinekit as rk
    for gpu in ("H100-SXM-80GB", "H200-SXM-141GB", "B200"):
        value = rk.engine_profile("vllm", gpu, warn=False).decode["moe_layer_overhead"]
        assert 1.4e-5 <= value <= 5e-5
    assert rk.engine_profile("vllm", "A100-SXM-80GB", warn=False).decode[
        "moe_layer_overhead"] == 0.0


@pytest.mark.parametrize("value", [-1e-6, math.nan, math.inf])
def test_bad_values_are_refused_naming_the_knob(value):
    with pytest.raises(ValueError, match="moe_layer_overhead"):
        Engine(moe_layer_overhead=value)
    with pytest.raises(ValueError, match="moe_layer_overhead"):
        Calibration(decode={"moe_layer_overhead": value})
