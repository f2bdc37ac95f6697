"""``narrow_head_attention_share``: attention of heads narrower than 128 at a share of its own
efficiency.

aiconfigurator-core's context-attention tables time 16,384-token prompts with heads of 64 at
0.55-0.83 of the 128-wide heads' share of the peak on most (engine, GPU) pairs
(scripts/engine_profiles.py's attention stage). A model of head dimension ``d < 128`` runs
attention at ``share ** log2(128 / d)`` times ``attention_compute_efficiency``; 1 (the default)
is every result as it was, to the bit. Expected values are written by hand from the models'
configs: Falcon-7B (32 layers, 71 query heads of 64, no window), GPT-NeoX-20B (44 layers, 64
heads of 96), Llama-3.1-8B (32 layers, 32 heads of 128), and the H100's 989 TFLOP/s dense bf16
peak (NVIDIA's datasheet).
"""

import math

import numpy as np
import pytest
import xarray as xr

import rooflinekit as rk
from rooflinekit import catalog, roofline
from rooflinekit.calibrate import Calibration

from helpers import assert_calibrate_matches_formulas

H100 = catalog.gpu("H100-SXM-80GB")
FALCON = catalog.model("Falcon-7B")
NEOX = catalog.model("GPT-NeoX-20B")
LLAMA = catalog.model("Llama-3.1-8B")
BASE = rk.Engine(compute_efficiency=0.8, bandwidth_efficiency=0.8,
                 attention_compute_efficiency=0.5)
PEAK = 989e12
TOKENS = 8192


def _attention_flops(heads, head_dim, layers, tokens=TOKENS):
    """4 · heads · d FLOPs a pair per layer over a prompt's s(s − 1)/2 pairs."""
    return 4 * heads * head_dim * layers * tokens * (tokens - 1) / 2


def test_one_is_the_default_and_changes_nothing_to_the_bit():
    assert rk.Engine().narrow_head_attention_share == 1.0
    assert rk.IDEAL.narrow_head_attention_share == 1.0
    same = BASE.replace(narrow_head_attention_share=1.0)
    for model in (FALCON, LLAMA):
        assert roofline.prefill_time(model, H100, TOKENS, engine=BASE) == \
            roofline.prefill_time(model, H100, TOKENS, engine=same)


def test_heads_of_128_never_take_it():
    slow = BASE.replace(narrow_head_attention_share=0.3)
    for tokens in (128, TOKENS):
        assert roofline.prefill_time(LLAMA, H100, tokens, engine=slow) == \
            roofline.prefill_time(LLAMA, H100, tokens, engine=BASE)


@pytest.mark.parametrize("model, heads, head_dim, layers", [
    (FALCON, 71, 64, 32), (NEOX, 64, 96, 44)])
def test_narrow_heads_take_the_share_to_the_power_of_their_halvings(model, heads, head_dim,
                                                                    layers):
    """A compute-bound 8,192-token prompt on one H100: its attention FLOPs at ``0.5 · 0.6 **
    log2(128 / d)`` of the peak instead of 0.5 (heads of 64: one halving, 0.6; of 96: 0.415
    of one)."""
    slow = BASE.replace(narrow_head_attention_share=0.6)
    flops = _attention_flops(heads, head_dim, layers)
    slowed = 0.5 * 0.6 ** math.log2(128 / head_dim)
    added = roofline.prefill_time(model, H100, TOKENS, engine=slow) - \
        roofline.prefill_time(model, H100, TOKENS, engine=BASE)
    assert added == pytest.approx(flops / (slowed * PEAK) - flops / (0.5 * PEAK), rel=1e-3)


def test_a_dataarray_of_shares_broadcasts_as_each_share_alone():
    shares = xr.DataArray([0.5, 0.8, 1.0], dims="share")
    got = roofline.prefill_time(FALCON, H100, TOKENS,
                                engine=BASE.replace(narrow_head_attention_share=shares))
    assert got.dims == ("share",)
    for i, s in enumerate(shares.values):
        alone = roofline.prefill_time(FALCON, H100, TOKENS,
                                      engine=BASE.replace(narrow_head_attention_share=float(s)))
        assert float(got[i]) == pytest.approx(float(alone), rel=1e-12)
    assert np.all(np.diff(got.values) < 0)      # a larger share: a faster prompt


@pytest.mark.parametrize("value", [0.0, -0.1, 1.5, math.nan])
def test_bad_values_are_refused_naming_the_knob(value):
    with pytest.raises(ValueError, match="narrow_head_attention_share"):
        rk.Engine(narrow_head_attention_share=value)
    with pytest.raises(ValueError, match="narrow_head_attention_share"):
        Calibration(prefill={"narrow_head_attention_share": value})


@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_calibrate_predicts_what_the_formulas_give(phase):
    knobs = {"compute_efficiency": 0.8, "bandwidth_efficiency": 0.8,
             "attention_compute_efficiency": 0.45, "narrow_head_attention_share": 0.6}
    rows = [{"model": name, "gpu": H100.name, "tp": 1, "batch_size": b,
             "prompt_tokens": TOKENS, "output_tokens": 0, "context_length": TOKENS,
             "tpot_ms": 1.0, "ttft_ms": 1.0, "source": "test rows"}
            for name in (FALCON.name, NEOX.name, LLAMA.name) for b in (1, 64)]
    assert_calibrate_matches_formulas(
        rows, knobs, phase, lambda row: (catalog.model(row["model"]), H100), TOKENS)


def test_calibrate_recovers_it_beside_the_attention_share():
    """Long-prompt TTFT rows of a 128-wide and a 64-wide model, timed with known GEMM,
    attention and narrow-head shares: fitting the three gives them back (the wide model's
    rows pin the attention share, the narrow model's the share of it)."""
    from rooflinekit.calibrate import calibrate, measurements_from_records
    truth = rk.Engine(compute_efficiency=0.75, attention_compute_efficiency=0.5,
                      narrow_head_attention_share=0.6)
    rows = [{"model": model.name, "gpu": H100.name, "tp": 1, "batch_size": 1,
             "prompt_tokens": n, "output_tokens": 0, "context_length": n,
             "ttft_ms": 1e3 * float(roofline.prefill_time(model, H100, n, engine=truth)),
             "source": "exact rows"}
            for model in (LLAMA, FALCON) for n in (2048, 4096, 8192, 16384, 32768)]
    knobs = ("compute_efficiency", "attention_compute_efficiency", "narrow_head_attention_share")
    result = calibrate(measurements_from_records(rows), phases=("prefill",),
                       fit={"prefill": knobs}, n_resamples=0)
    for knob, value in zip(knobs, (0.75, 0.5, 0.6)):
        got = float(result.parameters["value"].sel(phase="prefill", parameter=knob))
        assert got == pytest.approx(value, rel=1e-3), knob


def test_the_shipped_profiles_slow_narrow_heads_most_on_blackwell():
    """Heads of 64 reach 0.77-0.83 of the 128-wide share on Hopper under every engine and
    0.57-0.66 on the B200 and GB200 (TensorRT-LLM's L40S and RTX PRO 6000 kernels reach as
    much or more: 1, the ceiling); the same value in both phases."""
    for engine in ("vllm", "sglang", "trtllm"):
        for gpu, (low, high) in (("H100-SXM-80GB", (0.75, 0.85)), ("H200-SXM-141GB", (0.75, 0.85)),
                                 ("B200", (0.55, 0.7)), ("GB200", (0.55, 0.7))):
            profile = rk.engine_profile(engine, gpu, warn=False)
            value = profile.prefill["narrow_head_attention_share"]
            assert low <= value <= high, (engine, gpu, value)
            assert profile.decode["narrow_head_attention_share"] == value
    assert rk.engine_profile("trtllm", "L40S", warn=False).prefill[
        "narrow_head_attention_share"] == 1.0
