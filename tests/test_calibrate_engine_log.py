"""Tests of rooflinekit.calibrate.engine_log: vLLM's start-up KV-cache log beside our engine-style budget.

Every log below is quoted verbatim from the public thread named above it.
"""

import math

import pytest

from rooflinekit import ModelShape, catalog, units
from rooflinekit.calibrate.engine_log import compare_engine_log, parse_vllm_kv_log

# -- the KV budget side: vLLM start-up logs ----------------------------------------------------

# vllm-project/vllm issue #10517, comment by kaspersiminski, 2024-12-02: Llama-3.1-8B-Instruct on
# an RTX 3090, V0 engine, --max-model-len 20000 and 29000 (log lines quoted verbatim).
LOG_3090_20K = """Loading model weights took 14.9888 GB
Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB \
peak_torch_memory=17.06GiB memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB \
kv_cache_size=3.81GiB gpu_memory_utilization=0.90
GPU blocks: 1952, # CPU blocks: 2048
Maximum concurrency for 20000 tokens per request: 1.56x"""
LOG_3090_29K = """Loading model weights took 14.9888 GB
Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB \
peak_torch_memory=17.98GiB memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB \
kv_cache_size=2.89GiB gpu_memory_utilization=0.90
# GPU blocks: 1478, # CPU blocks: 2048
Maximum concurrency for 29000 tokens per request: 0.82x
The model's max seq len (29000) is larger than the maximum number of tokens that can be stored \
in KV cache (23648)."""
# LMCache/LMCache issue #1739 (2025-10-03): Qwen3-14B on one GPU, vLLM V1 engine.
LOG_QWEN3_14B = """(EngineCore_DP0 pid=1133552) INFO 10-03 16:22:17 [gpu_worker.py:298] Available \
KV cache memory: 6.51 GiB
(EngineCore_DP0 pid=1133552) INFO 10-03 16:22:17 [kv_cache_utils.py:864] GPU KV cache size: \
42,656 tokens
(EngineCore_DP0 pid=1133552) INFO 10-03 16:22:17 [kv_cache_utils.py:868] Maximum concurrency \
for 32,768 tokens per request: 1.30x"""
# vllm-project/vllm PR #10511 (youkaichao, 2024-12-14): `vllm serve meta-llama/Meta-Llama-3-8B`
# on an 80 GB H100 (79.22 GiB visible), vLLM 0.6.5 memory profile, TP=1.
LOG_H100_PR10511 = """INFO 12-13 19:54:18 worker.py:243] Memory profiling results:
INFO 12-13 19:54:18 worker.py:243] duration     0.75 seconds
INFO 12-13 19:54:18 worker.py:243] total_gpu_memory     79.22GiB
INFO 12-13 19:54:18 worker.py:243] gpu_memory_utilization       0.90
INFO 12-13 19:54:18 worker.py:243] the current vLLM instance can use    71.29GiB
INFO 12-13 19:54:18 worker.py:243] model weights take   14.96GiB
INFO 12-13 19:54:18 worker.py:243] non_torch_memory     1.79GiB
INFO 12-13 19:54:18 worker.py:243] PyTorch activation peak memory       1.26GiB
INFO 12-13 19:54:18 worker.py:243] available_kv_cache_memory    53.29GiB"""
# Qwen3-14B config.json: 40 layers, 40 query heads, 8 KV heads, head_dim 128, bf16.
QWEN3_14B = ModelShape(name="Qwen3-14B", n_layers=40, n_heads=40, n_kv_heads=8, head_dim=128,
                       n_params=14.8e9, source="https://huggingface.co/Qwen/Qwen3-14B")

# The log prints GiB with two decimals: each figure carries ±0.005 GiB.
HALF_CENT = 0.005 * units.GiB


def test_parse_vllm_kv_log():
    found = parse_vllm_kv_log(LOG_3090_29K)
    assert found["total_gpu_memory"] == pytest.approx(23.58 * units.GiB)
    assert found["gpu_memory_utilization"] == 0.90
    assert found["num_blocks"] == 1478 and found["max_model_len"] == 29000
    assert found["max_concurrency"] == 0.82
    assert found["weights"] == pytest.approx(14.9888 * units.GiB)
    v1 = parse_vllm_kv_log(LOG_QWEN3_14B)
    assert v1 == {"available_kv": pytest.approx(6.51 * units.GiB), "kv_cache_tokens": 42656,
                  "max_model_len": 32768, "max_concurrency": 1.30}
    assert parse_vllm_kv_log(LOG_3090_20K)["num_blocks"] == 1952   # line without the '#'
    with pytest.raises(TypeError, match="text must be a string"):
        parse_vllm_kv_log(None)


def test_kv_log_v1_available_memory_exact():
    """LMCache#1739: 6.51 GiB / (40·8·128·2·2 B/token × 16) → 2,666 blocks = 42,656 tokens, and
    42,656 / 32,768 = 1.30x — both exactly as logged."""
    cmp = compare_engine_log(QWEN3_14B, LOG_QWEN3_14B)
    assert cmp["mode"] == "available"
    assert cmp["bytes_per_block"] == 40 * 8 * 128 * 2 * 2 * 16
    assert cmp["ours"]["kv_cache_tokens"] == cmp["engine"]["kv_cache_tokens"] == 42656
    assert round(cmp["ours"]["max_concurrency"], 2) == cmp["engine"]["max_concurrency"] == 1.30


@pytest.mark.parametrize("log, blocks, max_len, shown", [
    (LOG_3090_20K, 1952, 20000, 1.56), (LOG_3090_29K, 1478, 29000, 0.82)])
def test_kv_log_v0_profile(log, blocks, max_len, shown):
    """vllm#10517 (RTX 3090, Llama-3.1-8B): with the engine's own weight figure our block count is
    the engine's within the log's rounding (±0.0145 GiB ≈ ±8 blocks of 2 MiB); the concurrency
    from the engine's block count is the logged figure exactly; with our weights (8.03e9 × 2 B
    = 14.958 GiB vs the 14.989 GiB vLLM loaded) we are 0.031 GiB = 15-16 blocks above it."""
    model = catalog.model("llama-3.1-8b")
    logged = compare_engine_log(model, log, weights="logged")
    assert logged["mode"] == "profile" and logged["max_model_len"] == max_len
    block = logged["bytes_per_block"]
    assert block == 2 * units.MiB                              # 131,072 B/token × 16
    slack = (0.9 + 2) * HALF_CENT / block                      # total·0.9, peak, non-torch
    assert abs(logged["ours"]["num_blocks"] - blocks) <= math.ceil(slack)
    assert logged["ours"]["kv_cache_tokens"] == logged["ours"]["num_blocks"] * 16
    # the concurrency figure: blocks / ceil(max_len / 16), rounded as vLLM prints it
    assert round(blocks / math.ceil(max_len / 16), 2) == shown
    assert round(logged["ours"]["max_concurrency"], 2) == pytest.approx(shown, abs=0.011)
    ours = compare_engine_log(model, log)
    gap = ours["ours"]["available_bytes"] - logged["ours"]["available_bytes"]
    assert gap == pytest.approx((14.9888 - model.weight_bytes / units.GiB) * units.GiB, rel=1e-9)
    assert 14 <= ours["ours"]["num_blocks"] - logged["ours"]["num_blocks"] <= 17


def test_kv_log_v0_exceeding_max_len():
    """vllm#10517 at 29k: the log's '(23648)' tokens is 1,478 blocks × 16, the figure our
    kv_cache_tokens reports for that block count."""
    assert 1478 * 16 == 23648
    cmp = compare_engine_log(catalog.model("llama-3.1-8b"), LOG_3090_29K)
    assert cmp["engine"]["kv_cache_tokens"] == 23648


def test_kv_log_profile_h100_pr10511():
    """vllm PR #10511 (Meta-Llama-3-8B, H100): 79.22 × 0.90 − 14.96 − 1.79 − 1.26 = 53.29 GiB
    available; ours with our weights (14.958 GiB) agrees within the log's rounding."""
    cmp = compare_engine_log(catalog.model("llama-3.1-8b"), LOG_H100_PR10511, max_model_len=8192)
    assert cmp["ours"]["weights_bytes"] == pytest.approx(14.96 * units.GiB, abs=HALF_CENT)
    assert cmp["ours"]["available_bytes"] == pytest.approx(53.29 * units.GiB,
                                                           abs=(0.9 + 4) * HALF_CENT)
    # the PR's -tp 2 run logged "model weights take 7.48GiB" per rank: ours is weights / 2
    tp2 = compare_engine_log(catalog.model("llama-3.1-8b"), LOG_H100_PR10511, tp=2,
                             max_model_len=8192)
    assert tp2["ours"]["weights_bytes"] == pytest.approx(7.48 * units.GiB, abs=HALF_CENT)
    assert tp2["bytes_per_block"] == cmp["bytes_per_block"] / 2       # 4 of 8 KV heads per rank


def test_compare_engine_log_bad_input():
    model = catalog.model("llama-3.1-8b")
    with pytest.raises(ValueError, match="max_model_len is unknown"):
        compare_engine_log(model, "GPU KV cache size: 10 tokens")
    with pytest.raises(ValueError, match="neither a memory profile"):
        compare_engine_log(model, "nothing here", max_model_len=100)
    with pytest.raises(ValueError, match="weights must be"):
        compare_engine_log(model, LOG_3090_20K, weights="theirs")
    with pytest.raises(TypeError, match="ModelShape"):
        compare_engine_log("llama", LOG_3090_20K)
