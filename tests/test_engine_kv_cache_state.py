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
    model, gpu = catalog.model("Qwen3-Next-80B-A3B"), catalog.gpu("H200-SXM-141GB")
    out = memory.engine_kv_cache(model, gpu, tp=2, max_model_len=32_768)
    bytes_per_block = 2 * 1 * 256 * 2 * 12 * 16                 # K and V, 1 head, 12 layers
    assert out["bytes_per_block"] == bytes_per_block
    state_blocks = math.ceil(77_266_944 / 2 / bytes_per_block)   # 197
    assert state_blocks == 197
    assert out["max_concurrency"] == pytest.approx(out["num_blocks"] / (32_768 / 16 + 197),
                                                   rel=1e-12)
    # the logged cache size stays in tokens of the attention layers
    assert out["kv_cache_tokens"] == out["num_blocks"] * 16


def test_a_model_without_state_is_unchanged():
    model, gpu = catalog.model("Llama-3.1-8B"), catalog.gpu("H100-SXM-80GB")
    out = memory.engine_kv_cache(model, gpu, max_model_len=8192)
    assert out["max_concurrency"] == out["num_blocks"] / (8192 // 16)
