"""Latency, throughput and cost: guide §3.3 TTFT and ITL, rates per group and per GPU, GPU cost."""

import numpy as np
import pytest

from rooflinekit import GPU
from rooflinekit.roofline import latency as lat
from rooflinekit import roofline as r
from rooflinekit import Engine


# The guide's 70B-class model (§2.2) on the lab accelerator (§3.2): 140e9 B of fp16 weights,
# 989e12 FLOP/s dense, 3.35e12 B/s.
W70 = 140e9
PEAK = 989e12
BW = 3.35e12


# -- guide §3.3: TTFT and ITL ---------------------------------------------------------------------

def test_ttft_grows_linearly_with_prompt(guide_model, lab_gpu):
    # guide §3.3: TTFT scales with prompt length. Prefill is compute-bound; its time is
    # a·N + b·N(N−1)/2 (matmuls + causal attention) exactly, and the attention share stays small.
    prompts = np.array([512, 1024, 2048, 4096, 8192, 20_000])
    t = lat.prefill_time(guide_model, lab_gpu, prompts)
    assert all(b == "compute" for b in r.prefill_bound(guide_model, lab_gpu, prompts))
    a = 2 * 70e9 / PEAK
    b = 4 * 64 * 128 * 80 / PEAK
    np.testing.assert_allclose(t, a * prompts + b * prompts * (prompts - 1) / 2, rtol=1e-12)
    per_token = t / prompts
    assert per_token[-2] / per_token[0] < 1.08            # to 8k: linear within the attention term
    assert t[-1] > 3.0                                    # 20k tokens: a slow first token (3.4 s)


def test_itl_grows_with_batch_and_context_not_prompt(guide_model, lab_gpu):
    # guide §3.3: ITL scales with batch size and context length, not prompt length
    batch = np.array([1, 8, 64, 256])
    assert np.all(np.diff(lat.decode_step_time(guide_model, lab_gpu, batch, 4096)) > 0)
    ctx = np.array([0, 1024, 8192, 32_768])
    assert np.all(np.diff(lat.decode_step_time(guide_model, lab_gpu, 16, ctx)) > 0)
    # a prompt 16× longer: TTFT 16×+, the first ITL after it < 1.3× (only its KV is read)
    ttft = lat.prefill_time(guide_model, lab_gpu, [512, 8192])
    itl = lat.decode_step_time(guide_model, lab_gpu, 1, [512, 8192])
    assert ttft[1] / ttft[0] > 16
    assert itl[1] / itl[0] < 1.3


def test_request_latency_is_prefill_plus_sum_of_steps(guide_model, lab_gpu):
    # closed form vs a loop over steps (rel 1e-12)
    prompt, output, batch = 3000, 50, 64
    loop = lat.prefill_time(guide_model, lab_gpu, prompt) + sum(
        lat.decode_step_time(guide_model, lab_gpu, batch, prompt + j)
        for j in range(output - 1))
    assert lat.request_latency(guide_model, lab_gpu, prompt, output, batch) == pytest.approx(
        loop, rel=1e-12)
    assert lat.request_latency(guide_model, lab_gpu, prompt, 1) == lat.prefill_time(
        guide_model, lab_gpu, prompt)


# -- throughput and cost ---------------------------------------------------------------------------

def test_throughput_per_group_and_per_gpu(guide_model, lab_gpu):
    # batch 64 at 1,024 tokens on 8 GPUs: B / step and ÷ 8 per GPU (rel 1e-12)
    step = lat.decode_step_time(guide_model, lab_gpu, 64, 1024, 8)
    assert lat.decode_throughput(guide_model, lab_gpu, 64, 1024, 8) == pytest.approx(
        64 / step, rel=1e-12)
    assert lat.decode_throughput_per_gpu(guide_model, lab_gpu, 64, 1024, 8) == pytest.approx(
        64 / step / 8, rel=1e-12)
    assert lat.prefill_throughput(guide_model, lab_gpu, 2048) == pytest.approx(
        2048 / lat.prefill_time(guide_model, lab_gpu, 2048), rel=1e-12)


def test_cost_per_million_tokens(guide_model, lab_gpu):
    # 8 GPUs × $3/h (guide §6.5's price) at batch 1, no context: $24/h × 5.22 ms per token
    # (140e9 B / 26.8e12 B/s) = $34.83 per 1M tokens (rel 1e-12); batch 128: 128× cheaper exactly
    # the guide's simple model (no all-reduce)
    usd = lat.cost_per_million_tokens(guide_model, lab_gpu, 1, 0, 8, hourly_price=3.0,
                                      engine=Engine(allreduce="guide"))
    expected = 8 * 3.0 / 3600 * (W70 / (8 * BW)) * 1e6
    assert usd == pytest.approx(expected, rel=1e-12)
    assert usd == pytest.approx(34.83, abs=5e-3)
    assert lat.cost_per_million_tokens(guide_model, lab_gpu, 128, 0, 8, hourly_price=3.0,
                                       engine=Engine(allreduce="guide")) == pytest.approx(expected / 128,
                                                                           rel=1e-12)
    priced = lab_gpu.__class__(**{**lab_gpu.__dict__, "hourly_price": 3.0})
    assert lat.cost_per_million_tokens(guide_model, priced, 1, 0, 8,
                                       engine=Engine(allreduce="guide")) == pytest.approx(
        expected, rel=1e-12)


def test_cost_needs_a_price(guide_model):
    unpriced = GPU("no-price", 80 * 2**30, 3.35e12, 989e12)
    with pytest.raises(ValueError, match="hourly_price"):
        lat.cost_per_million_tokens(guide_model, unpriced)
    with pytest.raises(ValueError, match="hourly_price"):
        lat.cost_per_million_tokens(guide_model, unpriced, hourly_price=-1.0)
