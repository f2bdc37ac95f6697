"""NVFP4 weights multiply W4A4 on FP4 tensor cores where the GPU has them.

TensorRT-LLM, vLLM and SGLang serve NVFP4 checkpoints with FP4 GEMMs on Blackwell:
aiconfigurator-core 0.12.0's B200 GEMM tables run them at 3.5-4.0 PFLOP/s on large shapes
against 1.5-1.6 for bf16 (scripts/engine_profiles.py; docs/validation.md). Timed on the 16-bit
peak, as weight-only int4 is, an NVFP4 prefill on a B200 came out 49-84 % slow against those
tables. ``ModelShape.fp4_matmuls`` says which formats run so; the other low-precision knobs of
an engine (``low_precision_*``) then apply to them as to FP8, unless its FP4 shares
(``fp4_compute_efficiency``, ``fp4_bandwidth_efficiency``) are given: the tables' NVFP4 GEMMs
reach less of their peak than FP8 ones and stream their weights at 62-85 % of the bf16 rate.
"""

import json
from pathlib import Path

import pytest

import rooflinekit as rk
from rooflinekit import catalog, roofline
from rooflinekit.calibrate import Calibration, predict

from helpers import assert_calibrate_matches_formulas

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
M = catalog.model("Llama-3.1-8B")
NVFP4 = M.replace(bytes_per_param="nvfp4")
B200 = catalog.gpu("B200")
H100 = catalog.gpu("H100-SXM-80GB")
# NVIDIA's B200 datasheet: 18 PFLOPS FP4 and 4.5 PFLOPS BF16 with sparsity, halved for dense
B200_FP4, B200_BF16 = 9.0e15, 2.25e15


@pytest.mark.parametrize("fmt, expected", [
    ("nvfp4", True), ("NVFP4", True), ("fp4", True),
    ("mxfp4", False), ("int4", False), ("fp8", False), ("bf16", False), (0.5, False)])
def test_it_is_inferred_from_the_format_by_name(fmt, expected):
    assert M.replace(bytes_per_param=fmt).fp4_matmuls is expected


def test_given_it_wins_and_replace_infers_it_afresh():
    assert M.replace(bytes_per_param=0.5625, fp4_matmuls=True).fp4_matmuls is True
    assert M.replace(bytes_per_param="nvfp4", fp4_matmuls=False).fp4_matmuls is False
    # a new format without the flag: inferred again; other changes keep it
    assert NVFP4.replace(bytes_per_param="int4").fp4_matmuls is False
    assert NVFP4.replace(name="renamed").fp4_matmuls is True
    for bad in (1, "yes", 0.0):
        with pytest.raises(TypeError, match="fp4_matmuls"):
            M.replace(fp4_matmuls=bad)


def test_a_blackwell_gpu_runs_them_on_its_fp4_peak_a_hopper_on_its_16_bit_one():
    assert roofline.step_cost_coefficients(NVFP4, B200).peak_flops == B200_FP4
    assert roofline.step_cost_coefficients(NVFP4, H100).peak_flops == \
        roofline.step_cost_coefficients(M, H100).peak_flops
    # MXFP4 and weight-only int4 widen to 16 bits; an engine's compute_dtype overrides the flag
    for fmt in ("mxfp4", "int4"):
        assert roofline.step_cost_coefficients(
            M.replace(bytes_per_param=fmt), B200).peak_flops == B200_BF16
    widened = rk.Engine(compute_dtype="bf16")
    assert roofline.step_cost_coefficients(NVFP4, B200, engine=widened).peak_flops == B200_BF16
    # a compute-bound prompt: 4,096 tokens × 2 FLOPs × (8.03e9 − the 128,256 × 4,096 input
    # table) at 9 PFLOP/s, attention and the memory floor aside, is what the step time exceeds
    gemm = 4096 * 2 * (8_030_261_248 - 128_256 * 4_096) / B200_FP4
    fast = float(roofline.prefill_time(NVFP4, B200, 4096))
    assert gemm <= fast < 1.5 * gemm
    assert float(roofline.prefill_time(NVFP4.replace(fp4_matmuls=False), B200, 4096)) > 3 * fast


def test_the_low_precision_knobs_apply_to_them():
    extra = 1e-5                                    # [s] per layer
    engine = rk.Engine(low_precision_layer_overhead=extra)
    paid = roofline.decode_step_time(NVFP4, B200, 8, 1024, engine=engine) - \
        roofline.decode_step_time(NVFP4, B200, 8, 1024)
    assert paid == pytest.approx(M.n_layers * extra, rel=1e-9)
    # on a GPU without FP4 tensor cores they are 16-bit GEMMs: nothing to pay
    assert roofline.decode_step_time(NVFP4, H100, 8, 1024, engine=engine) == \
        roofline.decode_step_time(NVFP4, H100, 8, 1024)


def test_a_model_dataset_carries_it():
    models = catalog.to_dataset([NVFP4, M.replace(name="bf16")])
    assert models["fp4_matmuls"].values.tolist() == [True, False]
    assert models["fp4_matmuls"].attrs["units"] == "1"
    gpus = catalog.gpus(["B200", "H100-SXM-80GB"], as_dataset=True)
    grid = rk.prefill_time(models, gpus, 2048)
    for model in (NVFP4, M.replace(name="bf16")):
        for gpu in (B200, H100):
            assert float(grid.sel(model=model.name, gpu=gpu.name)) == \
                float(rk.prefill_time(model, gpu, 2048))


def test_an_nvfp4_checkpoint_sets_it_and_gpt_oss_mxfp4_does_not():
    nvfp4 = rk.ModelShape.from_hf_config(
        json.loads((CONFIGS / "qwen3.6-27b-nvfp4.json").read_text()))
    assert nvfp4.fp4_matmuls is True
    gpt_oss = rk.ModelShape.from_hf_config(
        json.loads((CONFIGS / "gpt-oss-20b.json").read_text()))
    assert gpt_oss.fp4_matmuls is False


def test_the_planner_reads_nvfp4_as_calibrate_reads_an_nvfp4_row():
    """A calibration row of dtype "nvfp4" takes that format as its compute format; the planner's
    own default for an NVFP4 model now gives the same time."""
    knobs = {"compute_efficiency": 0.7, "bandwidth_efficiency": 0.8,
             "low_precision_compute_efficiency": 0.5, "low_precision_bandwidth_efficiency": 0.7,
             "low_precision_layer_overhead": 1e-5, "layer_overhead": 2e-5}
    cal = Calibration(prefill=knobs, decode=knobs)
    rows = [{"model": M.name, "gpu": B200.name, "tp": 1, "dtype": "nvfp4", "batch_size": b,
             "prompt_tokens": 2048, "output_tokens": 0, "context_length": 2048,
             "tpot_ms": 1.0, "ttft_ms": 1.0, "source": "test rows"} for b in (1, 32)]
    predicted = predict(rows, cal)
    engine = rk.Engine(**knobs)
    for row, decode in zip(rows, predicted["decode"].values):
        assert decode == pytest.approx(float(roofline.decode_step_time(
            NVFP4, B200, row["batch_size"], 2048, engine=engine)), rel=1e-9)


def test_the_fp4_shares_are_checked_and_none_by_default():
    for knob in ("fp4_compute_efficiency", "fp4_bandwidth_efficiency"):
        assert getattr(rk.IDEAL, knob) is None
        assert knob in rk.Engine.__doc__
        for bad in (0.0, 1.5, float("nan")):
            with pytest.raises(ValueError, match=knob):
                rk.Engine(**{knob: bad})


def test_the_fp4_shares_time_an_fp4_path_only_hand_computed():
    low = rk.Engine(bandwidth_efficiency=0.8, low_precision_bandwidth_efficiency=0.7,
                    compute_efficiency=0.8, low_precision_compute_efficiency=0.6)
    fp4 = low.replace(fp4_bandwidth_efficiency=0.5, fp4_compute_efficiency=0.4)
    # batch 1 is memory-bound: the NVFP4 weights' read time moves by W · (1/0.5 − 1/0.7) / B,
    # W = (8.03e9 − the 128,256 × 4,096 input table) × 0.5 B on the B200's 8 TB/s
    weights = (8_030_261_248 - 128_256 * 4_096) * 0.5
    moved = roofline.decode_step_time(NVFP4, B200, 1, 1024, engine=fp4) - \
        roofline.decode_step_time(NVFP4, B200, 1, 1024, engine=low)
    assert moved == pytest.approx(weights * (1 / 0.5 - 1 / 0.7) / 8.0e12, rel=1e-12)
    assert roofline.step_cost_coefficients(NVFP4, B200, engine=fp4).peak_flops == \
        pytest.approx(0.4 * B200_FP4)
    # FP8 weights, bf16 ones, and NVFP4 on a GPU without FP4 tensor cores keep theirs
    for model, gpu in ((M.replace(bytes_per_param="fp8"), B200), (M, B200), (NVFP4, H100)):
        assert roofline.decode_step_time(model, gpu, 8, 1024, engine=fp4) == \
            roofline.decode_step_time(model, gpu, 8, 1024, engine=low)
        assert roofline.prefill_time(model, gpu, 2048, engine=fp4) == \
            roofline.prefill_time(model, gpu, 2048, engine=low)


@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_calibrate_predicts_what_the_formulas_give_on_every_path(phase):
    knobs = {"compute_efficiency": 0.8, "bandwidth_efficiency": 0.8, "layer_overhead": 3e-5,
             "gemm_half_tokens": 100.0, "low_precision_layer_overhead": 1e-5,
             "low_precision_compute_efficiency": 0.6, "low_precision_bandwidth_efficiency": 0.7,
             "fp4_compute_efficiency": 0.45, "fp4_bandwidth_efficiency": 0.55}
    rows = [{"model": M.name, "gpu": gpu.name, "tp": 1, "dtype": dtype, "batch_size": b,
             "prompt_tokens": 1024, "output_tokens": 0, "context_length": 1024,
             "tpot_ms": 1.0, "ttft_ms": 1.0, "source": "test rows"}
            for gpu in (B200, H100) for dtype in ("bf16", "fp8", "nvfp4") for b in (1, 16)]
    assert_calibrate_matches_formulas(
        rows, knobs, phase, lambda row: (M.replace(bytes_per_param=row["dtype"]),
                                         B200 if row["gpu"] == B200.name else H100), 1024)


def test_the_fp4_shares_are_recovered_from_exact_rows():
    from rooflinekit.calibrate import calibrate, measurements_from_records
    truth = {"bandwidth_efficiency": 0.8, "low_precision_bandwidth_efficiency": 0.7,
             "fp4_bandwidth_efficiency": 0.55}
    engine = rk.Engine(**truth)
    rows = []
    for dtype in ("bf16", "fp8", "nvfp4"):
        model = M.replace(bytes_per_param=dtype)
        for b, ctx in ((1, 256), (8, 4096), (32, 16384)):
            t = float(roofline.decode_step_time(model, B200, b, ctx, engine=engine))
            rows.append({"model": M.name, "gpu": B200.name, "tp": 1, "dtype": dtype,
                         "batch_size": b, "prompt_tokens": ctx, "output_tokens": 0,
                         "context_length": ctx, "tpot_ms": 1e3 * t, "source": "exact rows"})
    result = calibrate(measurements_from_records(rows), phases="decode",
                       fit={"decode": tuple(truth)}, n_resamples=0)
    for knob, value in truth.items():
        assert result.calibration.decode[knob] == pytest.approx(value, rel=1e-3), knob
