"""``attention_compute_efficiency``: the share of the peak attention reaches, apart from the
weight GEMMs'.

aiconfigurator-core's context-attention tables time a 16,384-token prompt's attention at
0.40-0.72 of the GPU's bf16 peak, where the same engines' weight GEMMs reach 0.56-0.88
(scripts/engine_profiles.py's attention stage). The knob divides attention's FLOPs alone;
``None`` (the default) is ``compute_efficiency``, every result as it was, to the bit. Expected
values are written by hand: Llama-3.1-8B (Meta's config: 32 layers, 32 query heads of 128)
and the H100's 989 TFLOP/s dense bf16 peak (NVIDIA's datasheet).
"""

import math

import pytest

import rooflinekit as rk
from rooflinekit import catalog, roofline
from rooflinekit.calibrate import Calibration

from helpers import assert_calibrate_matches_formulas

H100 = catalog.gpu("H100-SXM-80GB")
LLAMA = catalog.model("Llama-3.1-8B")
BASE = rk.Engine(compute_efficiency=0.8, bandwidth_efficiency=0.8)


def test_none_is_the_gemms_share_to_the_bit():
    assert rk.Engine().attention_compute_efficiency is None
    assert rk.IDEAL.attention_compute_efficiency is None
    same = BASE.replace(attention_compute_efficiency=0.8)
    for tokens in (128, 8192):
        assert roofline.prefill_time(LLAMA, H100, tokens, engine=BASE) == \
            roofline.prefill_time(LLAMA, H100, tokens, engine=same)


def test_a_long_prompts_attention_takes_its_own_share():
    """An 8,192-token prompt on one H100 is compute-bound; its attention FLOPs are
    4 · 32 heads · 128 · 32 layers per pair, over 8,192 · 8,191 / 2 pairs; at 0.4 of the
    peak instead of 0.8 they take that over 0.4 · peak less that over 0.8 · peak longer."""
    tokens = 8192
    slow = BASE.replace(attention_compute_efficiency=0.4)
    flops = 4 * 32 * 128 * 32 * tokens * (tokens - 1) / 2
    peak = 989e12
    added = roofline.prefill_time(LLAMA, H100, tokens, engine=slow) - \
        roofline.prefill_time(LLAMA, H100, tokens, engine=BASE)
    assert added == pytest.approx(flops / (0.4 * peak) - flops / (0.8 * peak), rel=1e-3)


def test_a_memory_bound_decode_does_not_move():
    slow = BASE.replace(attention_compute_efficiency=0.3)
    for batch in (1, 64):
        assert roofline.decode_step_time(LLAMA, H100, batch, 4096, engine=slow) == \
            roofline.decode_step_time(LLAMA, H100, batch, 4096, engine=BASE)


def test_mla_prefill_takes_it_at_the_head_widths():
    """DeepSeek-V3 prefills its attention un-absorbed (keys 192, values 128: 160 a head), so
    a slower attention adds that count's time, not the latent width's."""
    model = catalog.model("DeepSeek-V3")
    gpu = catalog.gpu("H200-SXM-141GB")
    tokens = 16384
    slow = BASE.replace(attention_compute_efficiency=0.4)
    added = roofline.prefill_time(model, gpu, tokens, tp=8, engine=slow) - \
        roofline.prefill_time(model, gpu, tokens, tp=8, engine=BASE)
    flops = 4 * 128 * 160 * 61 * tokens * (tokens - 1) / 2
    peak = 8 * 989e12
    assert added == pytest.approx(flops / (0.4 * peak) - flops / (0.8 * peak), rel=1e-3)


@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_calibrate_predicts_what_the_formulas_give(phase):
    knobs = {"compute_efficiency": 0.8, "bandwidth_efficiency": 0.8, "layer_overhead": 3e-5,
             "low_precision_compute_efficiency": 0.6, "attention_compute_efficiency": 0.45}
    rows = [{"model": LLAMA.name, "gpu": H100.name, "tp": 1, "dtype": dtype, "batch_size": b,
             "prompt_tokens": 8192, "output_tokens": 0, "context_length": 8192,
             "tpot_ms": 1.0, "ttft_ms": 1.0, "source": "test rows"}
            for dtype in ("", "fp8") for b in (1, 256)]
    assert_calibrate_matches_formulas(
        rows, knobs, phase,
        lambda row: (LLAMA.replace(bytes_per_param=row["dtype"] or 2), H100), 8192)


def test_the_shipped_profiles_carry_it_below_the_gemms_share():
    """0.40-0.72 of the peak; below the GEMMs' share on the H100, H200 and B200 under every
    engine (SGLang's L40S reaches as much in attention as in its GEMMs: 0.58 and 0.56)."""
    for engine in ("vllm", "sglang", "trtllm"):
        for gpu in ("H100-SXM-80GB", "H200-SXM-141GB", "B200", "A100-SXM-80GB", "L40S"):
            profile = rk.engine_profile(engine, gpu, warn=False)
            value = profile.prefill["attention_compute_efficiency"]
            assert 0.35 <= value <= 0.8, (engine, gpu)
            assert profile.decode["attention_compute_efficiency"] == value
            gemms = profile.prefill["compute_efficiency"]
            assert value < (gemms if gpu in ("H100-SXM-80GB", "H200-SXM-141GB", "B200")
                            else 1.05 * gemms), (engine, gpu)


@pytest.mark.parametrize("value", [0.0, -0.1, 1.5, math.nan])
def test_bad_values_are_refused_naming_the_knob(value):
    with pytest.raises(ValueError, match="attention_compute_efficiency"):
        rk.Engine(attention_compute_efficiency=value)
    with pytest.raises(ValueError, match="attention_compute_efficiency"):
        Calibration(prefill={"attention_compute_efficiency": value})


def test_calibrate_recovers_it_from_exact_long_prompt_rows():
    """TTFT rows of 2,048-32,768-token prompts timed with a known attention share (and GEMM
    share): fitting both gives them back; prompts this long tell the two apart because
    attention's FLOPs grow with the square of the prompt, the GEMMs' linearly."""
    from rooflinekit.calibrate import calibrate, measurements_from_records
    truth = rk.Engine(compute_efficiency=0.75, attention_compute_efficiency=0.5)
    rows = [{"model": LLAMA.name, "gpu": H100.name, "tp": 1, "batch_size": 1,
             "prompt_tokens": n, "output_tokens": 0, "context_length": n,
             "ttft_ms": 1e3 * float(roofline.prefill_time(LLAMA, H100, n, engine=truth)),
             "source": "exact rows"} for n in (2048, 4096, 8192, 16384, 32768)]
    result = calibrate(measurements_from_records(rows), phases=("prefill",),
                       fit={"prefill": ("compute_efficiency", "attention_compute_efficiency")},
                       n_resamples=0)
    for knob, value in (("compute_efficiency", 0.75), ("attention_compute_efficiency", 0.5)):
        got = float(result.parameters["value"].sel(phase="prefill", parameter=knob))
        assert got == pytest.approx(value, rel=1e-3), knob
