"""``memory.engine_kv_cache`` for a hybrid model: the recurrent state takes blocks of the pool.

Hand derivation from Qwen3-Next-80B-A3B's published config.json (tests/data/hf_configs/):
12 full-attention layers of 2 KV heads × head_dim 256 in bf16, 36 Gated DeltaNet layers whose
state per sequence is 77,266,944 bytes (tests/test_models_hybrid.py derives it). At TP 2 a rank
holds 1 KV head and half the state.
"""

import math

import pytest

from rooflinekit import catalog, memory


def test_hybrid_concurrency_counts_the_state_blocks():
    """vLLM pages the state in its enlarged block: at TP 2 one GDN layer's state on a rank is
    77,266,944 / 2 / 36 = 1,073,152 B and one attention layer's KV per token 2 × 1 × 256 × 2 =
    1,024 B, so the block is 16 · ceil(1,073,152 / (16 · 1,024)) = 1,056 tokens; a request
    holds one block in each of the 3 state groups (36 GDN layers in groups of 12)."""
    model, gpu = catalog.model("Qwen3-Next-80B-A3B"), catalog.gpu("H200-SXM-141GB")
    out = memory.engine_kv_cache(model, gpu, tp=2, max_model_len=32_768)
    block = 16 * math.ceil(77_266_944 / 2 / 36 / (16 * 1_024))
    assert block == out["block_size"] == 1_056
    bytes_per_block = 2 * 1 * 256 * 2 * 12 * block              # K and V, 1 head, 12 layers
    assert out["bytes_per_block"] == bytes_per_block
    state_blocks = math.ceil(77_266_944 / 2 / bytes_per_block)
    assert state_blocks == 3
    assert out["max_concurrency"] == pytest.approx(
        out["num_blocks"] / (math.ceil(32_768 / block) + 3), rel=1e-12)
    # the logged cache size stays in tokens of the attention layers
    assert out["kv_cache_tokens"] == out["num_blocks"] * block
    # a block asked for larger than the hybrid's is kept
    assert memory.engine_kv_cache(model, gpu, tp=2, block_size=2_048,
                                  max_model_len=32_768)["block_size"] == 2_048


def test_a_model_without_state_is_unchanged():
    model, gpu = catalog.model("Llama-3.1-8B"), catalog.gpu("H100-SXM-80GB")
    out = memory.engine_kv_cache(model, gpu, max_model_len=8192)
    assert out["max_concurrency"] == out["num_blocks"] / (8192 // 16)
