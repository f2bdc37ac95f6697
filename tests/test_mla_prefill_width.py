"""Multi-head latent attention prefills un-absorbed: a prompt's pairs among its own tokens run at
``ModelShape.prefill_attention_width``, decode at the latent width.

References: DeepSeek-V3's ``config.json`` (128 heads, ``qk_nope_head_dim`` 128,
``qk_rope_head_dim`` 64, ``v_head_dim`` 128, ``kv_lora_rank`` 512, 61 layers); causal attention
FLOPs ``4·H·d·L`` a pair, ``N(N−1)/2`` pairs among a prompt's own tokens (Dao et al.,
FlashAttention). The engines run MLA prefill as multi-head attention over K and V decompressed
from the latent and decode absorbed over the latent (vLLM's ``MLACommonImpl``; DeepSeek-V3
technical report, arXiv:2412.19437, §2.1.1). Tolerance 1e-12 relative.
"""

from __future__ import annotations

import pytest

from rooflinekit import catalog, roofline

DSV3 = catalog.model("DeepSeek-V3")
LLAMA = catalog.model("Llama-3.1-8B")
H200 = catalog.gpu("H200-SXM-141GB")


def test_the_widths_of_deepseek_v3_by_hand():
    assert DSV3.attention_width == 512 + 64                   # absorbed: latent and RoPE key
    assert DSV3.prefill_attention_width == (192 + 128) / 2    # key 128 + 64, value 128
    assert LLAMA.prefill_attention_width == LLAMA.attention_width


def test_the_scale_is_exactly_one_without_mla():
    for name in ("Llama-3.1-8B", "Llama-3.1-70B", "gpt-oss-120b", "Qwen3-235B-A22B"):
        assert roofline.step_cost_coefficients(catalog.model(name), H200) \
            .prefill_attention_scale == 1.0
    assert roofline.step_cost_coefficients(DSV3, H200).prefill_attention_scale == \
        pytest.approx(160 / 576, rel=1e-15)


def test_prefill_flops_of_a_prompt_hand_computed():
    n = 8192
    attention = 4 * 128 * 160 * 61 * n * (n - 1) / 2
    without = roofline.prefill_flops(DSV3, n) - attention
    # the rest is the matrix multiplies: the same with a prompt of one token's pairs (none)
    per_token = roofline.prefill_flops(DSV3, 1)
    assert float(without) == pytest.approx(float(per_token) * n - _logits(n), rel=1e-12)


def _logits(n):
    """The LM head runs once a prompt, not once a token: what ``n`` one-token prompts add."""
    return (n - 1) * 2.0 * DSV3.vocab_size * DSV3.hidden_size


def test_decode_keeps_the_latent_width():
    batch, context = 16, 4096
    one_more = roofline.decode_flops(DSV3, batch, context + 1) - \
        roofline.decode_flops(DSV3, batch, context)
    assert float(one_more) == pytest.approx(batch * 4 * 128 * 576 * 61, rel=1e-12)


def test_a_long_prompt_of_deepseek_prefills_faster_than_at_the_latent_width():
    # 32,768 prompt tokens on 8 × H200: attention dominates, and runs at 160 / 576 of the FLOPs
    cost = roofline.step_cost_coefficients(DSV3, H200, tp=8)
    step = (0.0, 32768.0, 0.0, 32768 * 32767 / 2, 32768.0)
    fast = roofline.mixed_step_time_kernel(*cost, *step)
    slow = roofline.mixed_step_time_kernel(*cost._replace(prefill_attention_scale=1.0), *step)
    assert fast < 0.6 * slow


def test_a_catalogue_dataset_carries_it():
    ds = catalog.models(["DeepSeek-V3", "Llama-3.1-8B"], as_dataset=True)
    assert list(ds["prefill_attention_width"].values) == [160.0, 128.0]
    by_dataset = roofline.prefill_time(ds, H200, 8192, tp=8)
    assert float(by_dataset.sel(model="DeepSeek-V3")) == pytest.approx(
        float(roofline.prefill_time(DSV3, H200, 8192, tp=8)), rel=1e-12)


def test_glm5_reads_its_own_value_heads_from_its_config():
    # zai-org/GLM-5's config.json: qk_nope_head_dim 192, qk_rope_head_dim 64, v_head_dim 256
    from pathlib import Path

    from rooflinekit import ModelShape
    model = ModelShape.from_hf_config(Path(__file__).parent / "data" / "hf_configs" /
                                      "glm-5.json")
    assert (model.head_dim, model.v_head_dim) == (256, 256)
    assert model.prefill_attention_width == (256 + 256) / 2
    assert catalog.model("GLM-5").prefill_attention_width == 256
    # the value heads leave the latent cache (and the sparse-attention indexer's keys) alone:
    # 576 latent values of 2 bytes and a 128-wide FP8 key with an FP32 scale a layer
    assert model.kv_bytes_per_token_per_layer == (512 + 64) * 2 + 132 == \
        model.replace(v_head_dim=None).kv_bytes_per_token_per_layer


def test_an_mla_model_without_value_heads_takes_the_no_rope_key_width():
    bare = DSV3.replace(v_head_dim=None)
    assert bare.prefill_attention_width == (192 + 128) / 2
    assert bare.kv_bytes_per_token == DSV3.kv_bytes_per_token
