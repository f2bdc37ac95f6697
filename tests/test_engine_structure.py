"""Structure the kernel tables showed the step model lacked: FP8 GEMMs are not bf16 GEMMs.

aiconfigurator-core's GEMM tables (scripts/engine_profiles.py) time an FP8 (W8A8) weight GEMM
at small batch as a fixed part plus its bytes at about the same share of the HBM bandwidth as
a bf16 GEMM, with the fixed part 2.5-3.3 us longer under vLLM and 10-12 us longer under
TensorRT-LLM (``Engine.low_precision_layer_overhead``: that extra fixed time per layer); at
prompt sizes FP8 GEMMs reach a smaller share of the FP8 peak than bf16 GEMMs of the bf16 peak
(52 % against 77 % for Llama-3.1-70B's TP2 layer at 5,000 tokens on an H100 under vLLM 0.24;
``Engine.low_precision_compute_efficiency``). At a few rows an FP8 GEMM streams its weights
at 84-97 % of a bf16 GEMM's rate on the same GPU (``Engine.low_precision_bandwidth_efficiency``).
All three apply only where the matmuls run on a low-precision path; at their defaults every
answer is the ideal model's to the bit.
"""

import math

import numpy as np
import pytest

import rooflinekit as rk
from rooflinekit import catalog, roofline
from rooflinekit.calibrate import KNOBS, Calibration, predict

M = catalog.model("Llama-3.1-8B")
M_FP8 = M.replace(bytes_per_param="fp8")
H100 = catalog.gpu("H100-SXM-80GB")
A100 = catalog.gpu("A100-SXM-80GB")       # no FP8 tensor cores: FP8 weights widen to 16 bits
EXTRA = 1e-5                              # [s] per layer


def test_default_is_zero_and_bad_values_are_refused_naming_the_field():
    assert rk.IDEAL.low_precision_layer_overhead == 0.0
    with pytest.raises(ValueError, match="low_precision_layer_overhead"):
        rk.Engine(low_precision_layer_overhead=-1e-6)
    with pytest.raises(ValueError, match="low_precision_layer_overhead"):
        rk.Engine(low_precision_layer_overhead=math.nan)
    assert "low_precision_layer_overhead" in rk.Engine.__doc__


def test_low_precision_compute_efficiency_is_checked_and_none_by_default():
    assert rk.IDEAL.low_precision_compute_efficiency is None
    for bad in (0.0, 1.5, math.nan):
        with pytest.raises(ValueError, match="low_precision_compute_efficiency"):
            rk.Engine(low_precision_compute_efficiency=bad)
    assert "low_precision_compute_efficiency" in rk.Engine.__doc__


def test_low_precision_gemms_run_at_their_own_share_and_attention_at_the_16_bit_one():
    base = rk.Engine(compute_efficiency=0.8)
    engine = base.replace(low_precision_compute_efficiency=0.5)
    # bf16 weights, and FP8 weights without FP8 tensor cores, keep compute_efficiency
    for model, gpu in ((M, H100), (M_FP8, A100)):
        assert roofline.prefill_time(model, gpu, 4096, engine=engine) == \
            roofline.prefill_time(model, gpu, 4096, engine=base)
    cost = roofline.step_cost_coefficients(M_FP8, H100, engine=engine)
    ideal = roofline.step_cost_coefficients(M_FP8, H100)
    assert cost.peak_flops == pytest.approx(0.5 * ideal.peak_flops)
    assert cost.attention_peak_flops == pytest.approx(0.8 * ideal.attention_peak_flops)
    # a compute-bound prompt: slower at the smaller share
    assert roofline.prefill_time(M_FP8, H100, 4096, engine=engine) > \
        roofline.prefill_time(M_FP8, H100, 4096, engine=base)


def test_low_precision_bandwidth_efficiency_is_checked_and_none_by_default():
    assert rk.IDEAL.low_precision_bandwidth_efficiency is None
    for bad in (0.0, 1.5, math.nan, -0.5):
        with pytest.raises(ValueError, match="low_precision_bandwidth_efficiency"):
            rk.Engine(low_precision_bandwidth_efficiency=bad)
    assert "low_precision_bandwidth_efficiency" in rk.Engine.__doc__


# Llama-3.1-8B in FP8, one byte a weight: every parameter but the input embedding table's
# 128,256 × 4,096 rows is read once a decode step (Meta's model card: 8.03e9 parameters).
FP8_WEIGHT_BYTES = 8_030_261_248 - 128_256 * 4_096


def test_low_precision_weights_stream_at_their_own_share_hand_computed():
    base = rk.Engine(bandwidth_efficiency=0.8)
    engine = base.replace(low_precision_bandwidth_efficiency=0.5)
    # batch 1 is memory-bound: only the weights' read time moves, by W · (1/0.5 − 1/0.8) / B
    extra = FP8_WEIGHT_BYTES * (1 / 0.5 - 1 / 0.8) / 3.35e12       # H100 SXM: 3.35 TB/s
    for context in (0, 4096, 32768):                                # the KV keeps its share
        moved = roofline.decode_step_time(M_FP8, H100, 1, context, engine=engine) - \
            roofline.decode_step_time(M_FP8, H100, 1, context, engine=base)
        assert moved == pytest.approx(extra, rel=1e-12)
        assert roofline.decode_memory_time(M_FP8, H100, 1, context, engine=engine) - \
            roofline.decode_memory_time(M_FP8, H100, 1, context, engine=base) == \
            pytest.approx(extra, rel=1e-12)
    # bf16 weights, FP8 weights widened on an A100, or widened by the engine: unchanged
    for model, gpu, e in ((M, H100, engine), (M_FP8, A100, engine),
                          (M_FP8, H100, engine.replace(compute_dtype="bf16"))):
        assert roofline.decode_step_time(model, gpu, 8, 1024, engine=e) == \
            roofline.decode_step_time(model, gpu, 8, 1024,
                                      engine=e.replace(low_precision_bandwidth_efficiency=None))


def test_low_precision_weight_streaming_reaches_every_decode_formula():
    engine = rk.Engine(bandwidth_efficiency=0.8, low_precision_bandwidth_efficiency=0.5)
    # the closed-form generation time is the sum of its decode steps
    steps = sum(float(roofline.decode_step_time(M_FP8, H100, 8, 1024 + i, engine=engine))
                for i in range(64))
    assert float(roofline.generation_time(M_FP8, H100, 64, 1024, 8, engine=engine)) == \
        pytest.approx(steps, rel=1e-12)
    # the critical batch balances compute and memory, and slower weights push it out
    critical = float(roofline.critical_batch_size(M_FP8, H100, 1, engine=engine))
    assert float(roofline.decode_compute_time(M_FP8, H100, critical, 1, engine=engine)) == \
        pytest.approx(float(roofline.decode_memory_time(M_FP8, H100, critical, 1,
                                                        engine=engine)), rel=1e-9)
    assert critical > float(roofline.critical_batch_size(
        M_FP8, H100, 1, engine=engine.replace(low_precision_bandwidth_efficiency=None)))
    # the simulator's coefficients carry it in the weight bytes
    cost = roofline.step_cost_coefficients(M_FP8, H100, engine=engine)
    plain = roofline.step_cost_coefficients(
        M_FP8, H100, engine=engine.replace(low_precision_bandwidth_efficiency=None))
    assert cost.nonexpert_weight_bytes == pytest.approx(plain.nonexpert_weight_bytes * 0.8 / 0.5)
    assert cost.kv_bytes_per_token == plain.kv_bytes_per_token


def test_zero_is_the_ideal_model_to_the_bit():
    zero = rk.Engine(low_precision_layer_overhead=0.0, low_precision_compute_efficiency=None,
                     low_precision_bandwidth_efficiency=None)
    for model in (M, M_FP8):
        for gpu in (H100, A100):
            assert roofline.decode_step_time(model, gpu, 8, 1024, engine=zero) == \
                roofline.decode_step_time(model, gpu, 8, 1024)
            assert roofline.prefill_time(model, gpu, 512, engine=zero) == \
                roofline.prefill_time(model, gpu, 512)


def test_only_low_precision_matmuls_pay_it_once_per_layer():
    engine = rk.Engine(layer_overhead=2e-5, low_precision_layer_overhead=EXTRA)
    base = rk.Engine(layer_overhead=2e-5)
    batch = np.array([1, 8, 64])
    paid = roofline.decode_step_time(M_FP8, H100, batch, 1024, engine=engine) - \
        roofline.decode_step_time(M_FP8, H100, batch, 1024, engine=base)
    np.testing.assert_allclose(paid, M.n_layers * EXTRA, rtol=1e-9)
    # bf16 weights, and FP8 weights on a GPU without FP8 tensor cores, never pay it
    for model, gpu in ((M, H100), (M_FP8, A100)):
        assert roofline.decode_step_time(model, gpu, 8, 1024, engine=engine) == \
            roofline.decode_step_time(model, gpu, 8, 1024, engine=base)
    # an explicit 16-bit compute format on FP8 weights does not either
    widened = engine.replace(compute_dtype="bf16")
    assert roofline.decode_step_time(M_FP8, H100, 8, 1024, engine=widened) == \
        roofline.decode_step_time(M_FP8, H100, 8, 1024, engine=base.replace(compute_dtype="bf16"))


def test_it_reaches_the_simulator_clock_and_layouts():
    engine = rk.Engine(low_precision_layer_overhead=EXTRA)
    cost = roofline.step_cost_coefficients(M_FP8, H100, 2, engine=engine)
    ideal = roofline.step_cost_coefficients(M_FP8, H100, 2)
    assert cost.step_overhead == pytest.approx(ideal.step_overhead + M.n_layers * EXTRA)
    laid = rk.layout_decode_step_time(M_FP8, H100, 8, 1024, tp=2, engine=engine)
    assert laid == pytest.approx(roofline.decode_step_time(M_FP8, H100, 8, 1024, 2,
                                                           engine=engine))


@pytest.mark.skipif("low_precision_layer_overhead" not in KNOBS,
                    reason="the calibration's knob list does not hold the field yet")
@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_calibrate_predicts_what_the_formulas_give(phase):
    """The fit's fast arithmetic (rooflinekit.calibrate's grouped terms) is the formulas."""
    rows = [{"model": M.name, "gpu": H100.name, "tp": tp, "dtype": dtype, "batch_size": b,
             "prompt_tokens": 1024, "output_tokens": 0, "context_length": 1024, "tpot_ms": 1.0,
             "ttft_ms": 1.0, "source": "test rows"}
            for dtype in ("bf16", "fp8") for tp in (1, 2) for b in (1, 16)]
    knobs = {"compute_efficiency": 0.8, "bandwidth_efficiency": 0.8, "layer_overhead": 3e-5,
             "gemm_half_tokens": 100.0, "low_precision_layer_overhead": EXTRA,
             "low_precision_compute_efficiency": 0.5, "low_precision_bandwidth_efficiency": 0.6}
    cal = Calibration(prefill=knobs, decode=knobs)
    predicted = predict(rows, cal)[phase].values
    engine = rk.Engine(**knobs)
    for row, value in zip(rows, predicted):
        model = M if row["dtype"] == "bf16" else M_FP8
        expected = roofline.decode_step_time(
            model, H100, row["batch_size"], 1024, row["tp"], engine=engine) if phase == \
            "decode" else roofline.prefill_time(model, H100, 1024, row["tp"], engine=engine)
        assert value == pytest.approx(float(expected), rel=1e-9)


def test_the_weights_low_precision_share_is_recovered_from_exact_decode_rows():
    """bf16 and FP8 rows of one GPU set the two weight-streaming shares apart."""
    from rooflinekit.calibrate import calibrate, measurements_from_records
    truth = {"bandwidth_efficiency": 0.8, "low_precision_bandwidth_efficiency": 0.65,
             "layer_overhead": 2e-5}
    engine = rk.Engine(**truth)
    rows = []
    for dtype, model in (("bf16", M), ("fp8", M_FP8)):
        for tp in (1, 2):
            for b, ctx in ((1, 256), (8, 4096), (32, 16384)):
                t = float(roofline.decode_step_time(model, H100, b, ctx, tp, engine=engine))
                rows.append({"model": M.name, "gpu": H100.name, "tp": tp, "dtype": dtype,
                             "batch_size": b, "prompt_tokens": ctx, "output_tokens": 0,
                             "context_length": ctx, "tpot_ms": 1e3 * t,
                             "source": "exact rows"})
    result = calibrate(measurements_from_records(rows), phases="decode",
                       fit={"decode": tuple(truth)}, n_resamples=0)
    for knob, value in truth.items():
        assert result.calibration.decode[knob] == pytest.approx(value, rel=1e-3), knob


MOE = catalog.model("Mixtral-8x7B")
MOE_FP8 = MOE.replace(bytes_per_param="fp8")


def test_a_mixture_of_experts_layer_pays_its_attention_gemms_share_only():
    """A dense layer's low-precision fixed time is its four GEMMs'; an MoE layer's MLP is its
    expert block, whose fixed time is ``moe_layer_overhead``'s, so it pays the attention GEMMs'
    share (hand computed: n_layers x share x the knob)."""
    from rooflinekit.roofline.engine import ATTENTION_LOW_PRECISION_SHARE
    assert 0.0 < ATTENTION_LOW_PRECISION_SHARE < 1.0
    engine = rk.Engine(layer_overhead=2e-5, low_precision_layer_overhead=EXTRA)
    base = rk.Engine(layer_overhead=2e-5)
    batch = np.array([1, 8, 64])
    paid = roofline.decode_step_time(MOE_FP8, H100, batch, 1024, 2, engine=engine) - \
        roofline.decode_step_time(MOE_FP8, H100, batch, 1024, 2, engine=base)
    np.testing.assert_allclose(paid, MOE.n_layers * ATTENTION_LOW_PRECISION_SHARE * EXTRA,
                               rtol=1e-9)
    # bf16 experts never pay it
    assert roofline.decode_step_time(MOE, H100, 8, 1024, 2, engine=engine) == \
        roofline.decode_step_time(MOE, H100, 8, 1024, 2, engine=base)
    # the simulator's clock takes the same fixed time
    cost = roofline.step_cost_coefficients(MOE_FP8, H100, 2, engine=engine)
    plain = roofline.step_cost_coefficients(MOE_FP8, H100, 2, engine=base)
    assert cost.step_overhead == pytest.approx(
        plain.step_overhead + MOE.n_layers * ATTENTION_LOW_PRECISION_SHARE * EXTRA, rel=1e-12)


def test_calibrate_gives_an_moe_model_the_same_share():
    """The fit's grouped terms count an MoE model's low-precision layers as the formulas do."""
    rows = [{"model": MOE.name, "gpu": H100.name, "tp": 2, "dtype": "fp8", "batch_size": b,
             "prompt_tokens": 1024, "output_tokens": 0, "context_length": 1024, "tpot_ms": 1.0,
             "ttft_ms": 1.0, "source": "test rows"} for b in (1, 16)]
    knobs = {"compute_efficiency": 0.8, "bandwidth_efficiency": 0.8, "layer_overhead": 3e-5,
             "low_precision_layer_overhead": EXTRA}
    predicted = predict(rows, Calibration(prefill=knobs, decode=knobs))["decode"].values
    engine = rk.Engine(**knobs)
    for row, value in zip(rows, predicted):
        expected = roofline.decode_step_time(MOE_FP8, H100, row["batch_size"], 1024, 2,
                                             engine=engine)
        assert value == pytest.approx(float(expected), rel=1e-9)
