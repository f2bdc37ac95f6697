"""GLM-5: DeepSeek-V3's layer plan at another width, with DeepSeek Sparse Attention's indexer.

Config: ``tests/data/hf_configs/glm-5.json`` (zai-org/GLM-5's published ``config.json``; source in
the README there). Every expected number is derived here by hand from the config's fields:

- MLA (DeepSeek-V3 report, arXiv:2412.19437, §2.1): per layer ``q_a_proj`` (h → q_lora_rank),
  its RMSNorm, ``q_b_proj`` (q_lora_rank → heads · qk_head_dim), ``kv_a_proj_with_mqa``
  (h → kv_lora_rank + qk_rope_head_dim), its RMSNorm (kv_lora_rank), ``kv_b_proj``
  (kv_lora_rank → heads · (qk_nope_head_dim + v_head_dim)) and ``o_proj`` (heads · v_head_dim
  → h); the cache keeps the latent and the rope key, (512 + 64) values a token and layer.
- The indexer (DeepSeek-V3.2's ``Indexer``; GLM-5's ``index_*`` fields): ``wq_b``
  (q_lora_rank → index heads · index dim), ``wk`` (h → index dim), a LayerNorm of the index dim
  (weight and bias), ``weights_proj`` (h → index heads); it caches one key a token and layer,
  128 FP8 values and one FP32 scale: 132 B.
- MLPs: 3 dense layers (``first_k_dense_replace``) of width 12,288; 75 MoE layers of 256 experts
  (width 2,048, top 8), one shared expert, a router (h → experts) and its correction bias.
- Two RMSNorms a layer, a final one, embedding and LM head untied.

Published: 744B parameters, 40B active (zai-org/glm-5 documentation). Tolerance: exact on the
counts and bytes; 3 % against the published figures (the issue's bound), the active count
without the input embedding table as model cards count it.
"""

import json
import pathlib

import pytest

from rooflinekit import ModelShape, catalog, memory
from rooflinekit.hf_config import count_params

CONFIG = pathlib.Path(__file__).parent / "data" / "hf_configs" / "glm-5.json"

H, LAYERS, VOCAB, HEADS = 6144, 78, 154_880, 64
Q_LORA, KV_LORA, ROPE, NOPE, V_DIM, QK_DIM = 2048, 512, 64, 192, 256, 256
INDEX_HEADS, INDEX_DIM = 32, 128
DENSE_LAYERS, DENSE_WIDTH = 3, 12_288
EXPERTS, TOP_K, EXPERT_WIDTH = 256, 8, 2048

ATTENTION = (H * Q_LORA + Q_LORA + Q_LORA * HEADS * QK_DIM + H * (KV_LORA + ROPE) + KV_LORA
             + KV_LORA * HEADS * (NOPE + V_DIM) + HEADS * V_DIM * H)          # 165,022,208
INDEXER = Q_LORA * INDEX_HEADS * INDEX_DIM + H * INDEX_DIM + 2 * INDEX_DIM + H * INDEX_HEADS
NORMS = 2 * H
EXPERT = 3 * H * EXPERT_WIDTH                      # gate, up and down of one expert
ROUTER = H * EXPERTS + EXPERTS                     # gate and e_score_correction_bias
EMBEDDING = VOCAB * H


def by_hand(active: bool) -> int:
    routed = TOP_K if active else EXPERTS
    moe = ROUTER + routed * EXPERT + EXPERT        # + one shared expert
    return (2 * EMBEDDING + LAYERS * (ATTENTION + INDEXER + NORMS)
            + DENSE_LAYERS * 3 * H * DENSE_WIDTH + (LAYERS - DENSE_LAYERS) * moe + H)


def test_the_config_is_the_published_one():
    config = json.loads(CONFIG.read_text())
    assert config["architectures"] == ["GlmMoeDsaForCausalLM"]
    assert (config["num_hidden_layers"], config["hidden_size"], config["num_attention_heads"],
            config["first_k_dense_replace"], config["n_routed_experts"],
            config["num_experts_per_tok"], config["index_n_heads"],
            config["index_head_dim"]) == (LAYERS, H, HEADS, DENSE_LAYERS, EXPERTS, TOP_K,
                                          INDEX_HEADS, INDEX_DIM)


def test_parameters_are_counted_exactly():
    assert ATTENTION == 165_022_208 and INDEXER == 9_371_904
    counts = count_params(CONFIG)
    assert counts["total"] == by_hand(active=False) == 743_911_218_432
    assert counts["active"] == by_hand(active=True) == 41_784_728_832
    model = ModelShape.from_hf_config(CONFIG)
    assert (model.n_params, model.n_active_params) == (by_hand(False), by_hand(True))


def test_parameters_are_within_3_percent_of_the_published_figures():
    assert by_hand(active=False) / 744e9 == pytest.approx(1.0, abs=0.03)
    # model cards count the active parameters without the input embedding table
    assert (by_hand(active=True) - EMBEDDING) / 40e9 == pytest.approx(1.0, abs=0.03)


@pytest.mark.parametrize("context", [4096, 32_768, 131_072])
def test_kv_per_sequence_is_the_latent_and_the_indexer_key(context):
    per_token = LAYERS * ((KV_LORA + ROPE) * 2 + INDEX_DIM + 4)      # 100,152 B
    assert per_token == 100_152
    model = ModelShape.from_hf_config(CONFIG)
    assert memory.kv_bytes_per_sequence(model, context) == per_token * context
    assert model.index_topk == 2048


def test_the_catalogue_row_is_the_config():
    row = catalog.model("GLM-5")
    assert catalog.model("zai-org/GLM-5") == row
    assert row.kv_bytes_per_token == 100_152
    assert row.weight_bytes == by_hand(active=False) * 2          # bf16 release
