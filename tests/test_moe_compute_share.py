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
import xarray as xr

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


@pytest.mark.parametrize("truth, models", [
    ({"compute_efficiency": 0.75, "moe_compute_share": 0.4}, (GPT_OSS, DENSE)),
    # both shares at once: an MXFP4 model, a 16-bit MoE one and a dense one set them apart
    ({"compute_efficiency": 0.75, "moe_compute_share": 0.4, "mxfp4_moe_compute_share": 1.3},
     (GPT_OSS, catalog.model("Qwen3-30B-A3B"), DENSE))])
def test_it_is_recovered_from_exact_prefill_rows(truth, models):
    engine = rk.Engine(**truth)
    rows = []
    for model in models:
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


# -- mxfp4_moe_compute_share: the same share for MXFP4 experts --------------------------------

QWEN = catalog.model("Qwen3-30B-A3B")      # 16-bit experts


def test_the_mxfp4_share_is_checked_and_none_by_default():
    assert rk.IDEAL.mxfp4_moe_compute_share is None
    assert "mxfp4_moe_compute_share" in rk.Engine.__doc__
    assert rk.Engine(mxfp4_moe_compute_share=6.0).mxfp4_moe_compute_share == 6.0
    for bad in (0.0, 6.5, -0.1):
        with pytest.raises(ValueError, match=r"mxfp4_moe_compute_share.*\(0, 6\]"):
            rk.Engine(mxfp4_moe_compute_share=bad)
    with pytest.raises(ValueError, match="mxfp4_moe_compute_share must not contain NaN"):
        rk.Engine(mxfp4_moe_compute_share=float("nan"))
    with pytest.raises(TypeError, match="mxfp4_moe_compute_share"):
        rk.Engine(mxfp4_moe_compute_share="fast")


def test_a_calibration_holds_the_mxfp4_share_in_its_own_range():
    # a share of the 16-bit path: above 1 is a knob value, a bound and a draw's ceiling
    cal = rk.Calibration(prefill={"mxfp4_moe_compute_share": 1.3},
                         decode={"mxfp4_moe_compute_share": 1.3}, source="test",
                         intervals={"prefill": {"mxfp4_moe_compute_share": (1.0, 5.9)}})
    drawn = [cal.draw(seed).prefill["mxfp4_moe_compute_share"] for seed in range(40)]
    assert 0.0 < min(drawn) and max(drawn) <= 6.0 and max(drawn) > 1.3
    with pytest.raises(ValueError, match="mxfp4_moe_compute_share"):
        rk.Calibration(prefill={"mxfp4_moe_compute_share": 6.5}, decode={}, source="test")
    rows = [{"model": GPT_OSS.name, "gpu": H100.name, "tp": 1, "batch_size": 1,
             "prompt_tokens": 8192, "output_tokens": 0, "context_length": 8192,
             "ttft_ms": 100.0, "tpot_ms": None, "source": "one row"}]
    with pytest.raises(ValueError, match=r"bounds\['mxfp4_moe_compute_share'\].*<= 6"):
        calibrate(measurements_from_records(rows), phases="prefill",
                  fit={"prefill": ("mxfp4_moe_compute_share",)},
                  bounds={"mxfp4_moe_compute_share": (0.5, 7.0)}, n_resamples=0)


def test_the_catalogue_knows_which_experts_are_mxfp4():
    # gpt-oss's checkpoint: a 4-bit value and an 8-bit scale per 32 weights (17/32 bytes),
    # within 1 %; int4 with a 16-bit scale per 128 (0.516) and NVFP4 (0.5625) are not
    assert rk.dtypes.is_mxfp4(GPT_OSS.bytes_per_expert_param)
    assert rk.dtypes.is_mxfp4(catalog.model("gpt-oss-20b").bytes_per_expert_param)
    assert not rk.dtypes.is_mxfp4(QWEN.bytes_per_expert_param)
    assert list(rk.dtypes.is_mxfp4(np.array([0.5 + 2 / 128, 17 / 32, 9 / 16]))) == \
        [False, True, False]
    labelled = rk.dtypes.is_mxfp4(xr.DataArray([17 / 32, 2.0], dims="model"))
    assert isinstance(labelled, xr.DataArray) and labelled.values.tolist() == [True, False]
    assert rk.dtypes.is_mxfp4(0.5317598056230476) is True
    assert rk.dtypes.is_mxfp4(float("nan")) is False     # no format of its own


@pytest.mark.parametrize("bad", ["0.53", True, None, [17 / 32, "a"]])
def test_is_mxfp4_refuses_what_is_not_a_number_of_bytes(bad):
    with pytest.raises(TypeError, match="bytes_per_weight must be a number of bytes"):
        rk.dtypes.is_mxfp4(bad)


def test_the_mxfp4_share_times_mxfp4_experts_only_hand_computed():
    tokens, share, mxfp4 = 16_384, 0.4, 1.25
    engine = BASE.replace(moe_compute_share=share)
    fast = engine.replace(mxfp4_moe_compute_share=mxfp4)
    # none: moe_compute_share, to the bit; a 16-bit MoE model keeps it whatever mxfp4 is
    assert roofline.prefill_time(GPT_OSS, H100, tokens, engine=engine.replace(
        mxfp4_moe_compute_share=None)) == roofline.prefill_time(GPT_OSS, H100, tokens,
                                                               engine=engine)
    assert roofline.prefill_time(QWEN, H100, tokens, engine=fast) == \
        roofline.prefill_time(QWEN, H100, tokens, engine=engine)
    # gpt-oss-120b: its experts' FLOPs take 1/1.25 instead of 1/0.4 of a dense GEMM's time
    per_expert = (116_829_156_672 - 5_711_982_912) / (128 - 4)
    expert_flops = 2.0 * 4 * per_expert
    moved = roofline.prefill_time(GPT_OSS, H100, tokens, engine=engine) - \
        roofline.prefill_time(GPT_OSS, H100, tokens, engine=fast)
    expected = expert_flops * (tokens + 64.0) * (1 / share - 1 / mxfp4) / (989.4e12 * 0.7)
    assert float(moved) == pytest.approx(expected, rel=1e-12)


def test_the_mxfp4_share_broadcasts_over_a_grid():
    shares = [0.25, 0.5, 2.0]
    engine = BASE.replace(mxfp4_moe_compute_share=shares)
    grid = roofline.prefill_time(GPT_OSS, H100, 8192, engine=engine)
    one = [float(roofline.prefill_time(GPT_OSS, H100, 8192,
                                       engine=BASE.replace(mxfp4_moe_compute_share=s)))
           for s in shares]
    assert np.asarray(grid).tolist() == one
    assert one[0] > one[1] > one[2]


@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_calibrate_predicts_what_the_formulas_give_with_the_mxfp4_share(phase):
    knobs = {"compute_efficiency": 0.8, "bandwidth_efficiency": 0.8, "gemm_half_tokens": 100.0,
             "moe_compute_share": 0.35, "mxfp4_moe_compute_share": 1.5}
    rows = [{"model": model.name, "gpu": H100.name, "tp": 1, "dtype": "", "batch_size": b,
             "prompt_tokens": 4096, "output_tokens": 0, "context_length": 4096,
             "tpot_ms": 1.0, "ttft_ms": 1.0, "source": "test rows"}
            for model in (GPT_OSS, QWEN) for b in (1, 256)]
    by_name = {GPT_OSS.name: GPT_OSS, QWEN.name: QWEN}
    assert_calibrate_matches_formulas(rows, knobs, phase,
                                      lambda row: (by_name[row["model"]], H100), 4096)
