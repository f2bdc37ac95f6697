"""``Engine.moe_compute_share``: a mixture-of-experts model's routed experts' grouped GEMMs at a
share of the dense GEMMs' efficiency, and the MoE stage that reads it from the MoE tables.

References: the hand calculations below use the catalogue's published parameter counts
(gpt-oss-120b's ``config.json``: 116,829,156,672 parameters, 5,711,982,912 active, 128
experts, 4 a token) and the H100 SXM's dense BF16 peak (989.4 TFLOP/s, NVIDIA's datasheet);
tolerance 1e-12 relative (the same arithmetic, another order of operations).
"""

from __future__ import annotations

import numpy as np
import pytest

import rooflinekit as rk
from rooflinekit import catalog, roofline
from rooflinekit.calibrate import calibrate, measurements_from_records

from helpers import assert_calibrate_matches_formulas

GPT_OSS = catalog.model("gpt-oss-120b")
DENSE = catalog.model("Llama-3.1-8B")
H100 = catalog.gpu("H100-SXM-80GB")
BASE = rk.Engine(compute_efficiency=0.7, bandwidth_efficiency=0.8, gemm_half_tokens=64.0)


def test_it_is_checked_and_one_by_default():
    assert rk.IDEAL.moe_compute_share == 1.0
    assert "moe_compute_share" in rk.Engine.__doc__
    for bad in (0.0, 1.5, -0.1, float("nan"), None):
        with pytest.raises((ValueError, TypeError), match="moe_compute_share"):
            rk.Engine(moe_compute_share=bad)


def test_one_is_the_dense_model_to_the_bit():
    same = BASE.replace(moe_compute_share=1.0)
    for model in (GPT_OSS, DENSE):
        assert roofline.prefill_time(model, H100, 8192, engine=same) == \
            roofline.prefill_time(model, H100, 8192, engine=BASE)
        assert roofline.step_cost_coefficients(model, H100, engine=same) == \
            roofline.step_cost_coefficients(model, H100, engine=BASE)


def test_compute_bound_prefill_moves_by_the_experts_flops_hand_computed():
    # 16,384 prompt tokens of gpt-oss-120b on one H100 are compute-bound either way; only
    # the routed experts' FLOPs, 2 · k · (P − P_a) / (E − k) a token, slow by 1/s − 1
    tokens, share = 16_384, 0.4
    per_expert = (116_829_156_672 - 5_711_982_912) / (128 - 4)
    expert_flops = 2.0 * 4 * per_expert
    slow = BASE.replace(moe_compute_share=share)
    moved = roofline.prefill_time(GPT_OSS, H100, tokens, engine=slow) - \
        roofline.prefill_time(GPT_OSS, H100, tokens, engine=BASE)
    # the GEMM curve counts (n + n½) tokens' worth of time
    expected = expert_flops * (tokens + 64.0) * (1 / share - 1) / (989.4e12 * 0.7)
    assert float(moved) == pytest.approx(expected, rel=1e-12)


def test_dense_models_and_memory_bound_decode_keep_their_time():
    slow = BASE.replace(moe_compute_share=0.3)
    assert roofline.prefill_time(DENSE, H100, 8192, engine=slow) == \
        roofline.prefill_time(DENSE, H100, 8192, engine=BASE)
    # a decode step of 8 sequences reads the experts it touches; its FLOPs hide behind that
    assert roofline.decode_step_time(GPT_OSS, H100, 8, 2048, engine=slow) == \
        roofline.decode_step_time(GPT_OSS, H100, 8, 2048, engine=BASE)


def test_the_closed_form_generation_equals_the_sum_of_its_steps():
    slow = BASE.replace(moe_compute_share=0.05)     # so that decode at 512 turns compute-bound
    batch, first, steps = 512, 1000, 40
    closed = float(roofline.generation_time(GPT_OSS, H100, steps, first, batch, engine=slow))
    summed = sum(float(roofline.decode_step_time(GPT_OSS, H100, batch, first + i, engine=slow))
                 for i in range(steps))
    assert closed == pytest.approx(summed, rel=1e-9)
    assert closed > float(roofline.generation_time(GPT_OSS, H100, steps, first, batch,
                                                   engine=BASE))


def test_the_critical_batch_balances_compute_and_memory():
    slow = BASE.replace(moe_compute_share=0.5)
    b = float(roofline.critical_batch_size(GPT_OSS, H100, 1000, engine=slow))
    assert np.isfinite(b)
    compute = roofline.decode_compute_time(GPT_OSS, H100, b, 1000, engine=slow)
    memory = roofline.decode_memory_time(GPT_OSS, H100, b, 1000, engine=slow)
    assert float(compute) == pytest.approx(float(memory), rel=1e-6)
    assert b < float(roofline.critical_batch_size(GPT_OSS, H100, 1000, engine=BASE))


@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_calibrate_predicts_what_the_formulas_give(phase):
    knobs = {"compute_efficiency": 0.8, "bandwidth_efficiency": 0.8, "layer_overhead": 3e-5,
             "gemm_half_tokens": 100.0, "moe_layer_overhead": 2e-5, "moe_compute_share": 0.35}
    rows = [{"model": model.name, "gpu": H100.name, "tp": 1, "dtype": "", "batch_size": b,
             "prompt_tokens": 4096, "output_tokens": 0, "context_length": 4096,
             "tpot_ms": 1.0, "ttft_ms": 1.0, "source": "test rows"}
            for model in (GPT_OSS, DENSE) for b in (1, 256)]
    assert_calibrate_matches_formulas(
        rows, knobs, phase,
        lambda row: (GPT_OSS if row["model"] == GPT_OSS.name else DENSE, H100), 4096)


def test_it_is_recovered_from_exact_prefill_rows():
    truth = {"compute_efficiency": 0.75, "moe_compute_share": 0.4}
    engine = rk.Engine(**truth)
    rows = []
    for model in (GPT_OSS, DENSE):
        for tokens in (2048, 8192, 16384):
            t = float(roofline.prefill_time(model, H100, tokens, engine=engine))
            rows.append({"model": model.name, "gpu": H100.name, "tp": 1, "batch_size": 1,
                         "prompt_tokens": tokens, "output_tokens": 0,
                         "context_length": tokens, "ttft_ms": 1e3 * t, "tpot_ms": None,
                         "source": "exact rows"})
    result = calibrate(measurements_from_records(rows), phases="prefill",
                       fit={"prefill": tuple(truth)}, n_resamples=0)
    for knob, value in truth.items():
        assert result.calibration.prefill[knob] == pytest.approx(value, rel=1e-3), knob


def test_the_simulator_times_an_moe_model_by_it():
    """Four 8,192-token prompts (compute-bound prefill) finish later with a share below 1."""
    finish = []
    for engine in (BASE, BASE.replace(moe_compute_share=0.4)):
        batcher = rk.ContinuousBatcher(max_num_seqs=8, model=GPT_OSS, gpu=H100,
                                       engine=engine)
        res = batcher.run(arrival=[0, 0, 0, 0], prompt_tokens=[8192] * 4,
                          output_tokens=[16] * 4)
        finish.append(float(np.max(res.finish)))
    assert finish[1] > finish[0]
