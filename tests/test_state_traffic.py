"""A hybrid's recurrent layers read and write their state once a decode token.

Hand derivation: Qwen3-Next-80B-A3B holds 77,266,944 bytes of Gated DeltaNet state a sequence
(tests/test_models_hybrid.py derives it from the config); a decode step of B sequences moves
2 × that × B bytes more than the same model without the state, whatever the context. At a
memory-bound step on the ideal engine the time grows by exactly those bytes over the bandwidth.
"""

import pytest

import rooflinekit as rk
from rooflinekit import catalog

STATE = 77_266_944


def test_decode_moves_the_state_twice_a_token():
    model, gpu = catalog.model("Qwen3-Next-80B-A3B"), catalog.gpu("H200-SXM-141GB")
    assert model.state_bytes_per_sequence == STATE
    stateless = model.replace(state_bytes_per_sequence=0.0, n_linear_attention_layers=0)
    for batch, context in ((1, 1000), (16, 4000), (64, 32_000)):
        with_state = float(rk.decode_step_time(model, gpu, batch, context, 2))
        without = float(rk.decode_step_time(stateless, gpu, batch, context, 2))
        extra = 2 * STATE * batch / (2 * 4.8e12)        # two H200s' HBM, ideal engine
        assert gpu.hbm_bandwidth == 4.8e12
        assert with_state - without == pytest.approx(extra, rel=1e-9)


def test_a_model_without_state_is_unchanged_to_the_bit():
    model, gpu = catalog.model("Llama-3.1-8B"), catalog.gpu("H100-SXM-80GB")
    cost = rk.roofline.step_cost_coefficients(model, gpu)
    assert cost.state_bytes_per_decode_token == 0.0
    assert float(rk.decode_step_time(model, gpu, 8, 2048)) == float(
        rk.decode_step_time(model.replace(name="same"), gpu, 8, 2048))


def test_the_simulator_clock_charges_it_like_the_formula():
    """A decode-only step on the batchers' roofline clock equals the formula's step."""
    from rooflinekit.batching import ContinuousBatcher
    model, gpu = catalog.model("Qwen3-Next-80B-A3B"), catalog.gpu("H200-SXM-141GB")
    clock = ContinuousBatcher(model=model, gpu=gpu, tp=2, engine=rk.IDEAL)._timing()
    step = clock.reference_clock.step_time(8.0, 0.0, clock.reference_clock.kv_read(4000.0) * 8,
                                           0.0, 0.0)
    assert step == pytest.approx(float(rk.decode_step_time(model, gpu, 8, 4000, 2)), rel=1e-12)
