"""Kimi-K2.5: Kimi-K2's language model and a MoonViT vision encoder, from its published config.

Config: ``tests/data/hf_configs/kimi-k2.5.json`` (source in the README there). Its
``text_config`` has every shape field of ``kimi-k2-instruct.json`` (DeepSeek-V3's architecture:
61 layers, MLA, 384 experts of 2048, top-8, one shared expert, the first layer dense) but
``max_position_embeddings`` (262,144); its ``vision_config`` is MoonViT's (``vt_*`` fields),
which vLLM's ``MoonViT3dPretrainedModel`` and ``KimiK25MultiModalProjector`` build, with the
defaults this file leaves to them (biased attention and MLP, LayerNorms, a biased patch
embedding):

- a Conv2d patch embedding (3 · 14² → 1152, with bias) and a learned 64 × 64 position table
  (the temporal table is a fixed sine table, no weight);
- 27 blocks: two LayerNorms, fused qkv (1152 → 3 · 1152) and output projections with biases,
  a two-matrix MLP of 4304 with biases; a final LayerNorm;
- the patch merger: a LayerNorm of 1152, then 2 × 2 merged patches (4608) through two biased
  matrices (4608 → 4608 → 7168).

KV: MLA, one latent of ``kv_lora_rank + qk_rope_head_dim`` = 576 elements a token and layer,
bf16. Weights: ``quantization_config`` (compressed-tensors, pack-quantized) stores the routed
experts as 4-bit integers with one 16-bit scale per 32 (0.5625 bytes a weight) and ignores
attention, the shared experts, the dense MLP and the LM head (bf16).

Published: "a 1T-parameter model (32B active)" (SGLang's Kimi-K2.5 page, as Moonshot's card);
the vision weights extracted from the release, "335 tensors, ~899MB (BF16)"
(Drifter4242/Kimi-K2.5-vision), 899 MiB being 471.3M bf16 weights. Tolerance: 3 % on
parameters, 1 % on the encoder's extracted size, exact on KV bytes.
"""

import json
import pathlib

import pytest

from rooflinekit import memory
from rooflinekit.hf_config import count_params
from rooflinekit.models import model_from_hf_config

CONFIGS = pathlib.Path(__file__).parent / "data" / "hf_configs"
CONFIG = CONFIGS / "kimi-k2.5.json"
H, VOCAB, LAYERS, EXPERTS, TOP_K, WIDTH = 7168, 163_840, 61, 384, 8, 2048


def vision_by_hand():
    v, inner = 1152, 4304
    n = 3 * 14 * 14 * v + v                                  # patch embedding and its bias
    n += 64 * 64 * v                                         # learned position table
    block = (2 * 2 * v                                       # two LayerNorms
             + 3 * v * v + 3 * v + v * v + v                 # wqkv, wo with biases
             + 2 * v * inner + inner + v)                    # fc0, fc1 with biases
    n += 27 * block + 2 * v                                  # final LayerNorm
    merged = 4 * v                                           # 2 x 2 patches: 4608
    n += 2 * v + merged * merged + merged + merged * H + H   # the patch-merger projector
    return n


def test_the_vision_encoder_by_hand_and_against_its_extracted_size():
    vision = vision_by_hand()
    assert count_params(CONFIG)["vision"] == vision == 471_143_920
    assert vision * 2 == pytest.approx(899 * 2 ** 20, rel=0.01)    # ~899 MB of bf16


def test_the_language_model_is_kimi_k2s():
    k25 = json.loads(CONFIG.read_text())["text_config"]
    k2 = json.loads((CONFIGS / "kimi-k2-instruct.json").read_text())
    shapes = ("hidden_size", "intermediate_size", "moe_intermediate_size", "n_routed_experts",
              "n_shared_experts", "num_experts_per_tok", "num_hidden_layers",
              "num_attention_heads", "kv_lora_rank", "q_lora_rank", "qk_nope_head_dim",
              "qk_rope_head_dim", "v_head_dim", "vocab_size", "first_k_dense_replace")
    assert all(k25[f] == k2[f] for f in shapes)
    a, b = count_params(CONFIG), count_params(CONFIGS / "kimi-k2-instruct.json")
    vision = vision_by_hand()
    assert (a["total"] - vision, a["active"]) == (b["total"], b["active"])
    # card: 1T total (1.0269T with the encoder), 32B active (32.86B)
    assert a["total"] == pytest.approx(1e12, rel=0.03)
    assert a["active"] == pytest.approx(32e9, rel=0.03)


@pytest.mark.parametrize("context", [4096, 32_768, 131_072])
def test_kv_bytes_by_hand(context):
    m = model_from_hf_config(CONFIG)
    per_token = LAYERS * (512 + 64) * 2                      # 70,272 B
    assert m.kv_bytes_per_token == per_token
    assert memory.kv_bytes_per_sequence(m, context) == per_token * context


def test_int4_experts_and_16_bit_rest():
    m = model_from_hf_config(CONFIG)
    experts = (LAYERS - 1) * EXPERTS * 3 * H * WIDTH         # first_k_dense_replace 1
    assert m.expert_bytes_per_param == (4 + 16 / 32) / 8     # 0.5625
    assert m.body_bytes_per_param == m.embedding_bytes_per_param == 2.0
    by_hand = experts * 0.5625 + (m.n_params - experts) * 2.0
    # the encoder, outside the routed experts, widens ModelShape's expert share
    # ((n_params - n_active) * E / (E - k)) by 0.48B: 0.7 GB of 594 GB
    assert m.weight_bytes == pytest.approx(by_hand, rel=0.002)


@pytest.mark.parametrize("change, field", [
    ({"vt_num_hidden_layers": 0}, "vision_config.vt_num_hidden_layers"),
    ({"vt_intermediate_size": None}, "vision_config.vt_intermediate_size"),
    ({"merge_kernel_size": [2]}, "vision_config.merge_kernel_size"),
    ({"mm_projector_type": "mlp"}, "vision_config.mm_projector_type"),
    ({"pos_emb_type": "rope"}, "vision_config.pos_emb_type"),
])
def test_bad_vision_fields_are_named(change, field):
    cfg = json.loads(CONFIG.read_text())
    cfg["vision_config"] = {k: v for k, v in {**cfg["vision_config"], **change}.items()
                            if v is not None}
    with pytest.raises((ValueError, TypeError), match=field.replace(".", r"\.")):
        count_params(cfg)
