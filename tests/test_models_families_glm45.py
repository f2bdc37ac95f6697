"""GLM-4.5-Air and GLM-4.5: grouped-query attention with q/k/v biases, dense layers, then MoE.

Configs: ``tests/data/hf_configs/glm-4.5-air.json`` (zai-org/GLM-4.5-Air's published
``config.json``, a verbatim copy) and ``tests/data/hf_configs/glm-4.5.json`` (zai-org/GLM-4.5's,
transcribed field for field in the Air file's layout; sources in the README there). Every
expected number is derived here by hand from the configs' fields, as transformers'
``Glm4MoeForCausalLM`` builds its modules (Air's numbers; GLM-4.5's below):

- Attention (``Glm4MoeAttention``): q (h → 96·128), k and v (h → 8·128), each biased when
  ``attention_bias`` (true here), and o (96·128 → h) never biased; per-head q and k RMSNorms
  only when ``use_qk_norm`` (false here). KV cache: 2 · 46 layers · 8 heads · 128 · 2 bytes.
- MLPs: ``first_k_dense_replace`` 1 dense layer of width ``intermediate_size`` 10,944; 45 MoE
  layers of 128 experts of width ``moe_intermediate_size`` 1,408 (top 8), one shared expert of
  that width, and a router (``Glm4MoeTopkRouter``: h → experts weights and an
  ``e_score_correction_bias`` of one entry an expert, though the config names no
  ``topk_method``).
- Two RMSNorms a layer and a final one; embedding and LM head untied. The
  multi-token-prediction layer (``num_nextn_predict_layers`` 1) is not counted, as for GLM-5.

GLM-4.5 (355B): hidden 5,120, 92 layers, the same 96 query and 8 KV heads of 128 with q/k/v
biases, and per-head q and k RMSNorms of 128 (``use_qk_norm`` true); ``first_k_dense_replace``
3 dense layers of width 12,288, then 89 MoE layers of 160 experts of width 1,536 (top 8) with
one shared expert and the router (160 weights rows and a correction bias of 160). KV cache:
2 · 92 · 8 · 128 · 2 bytes.

Published: GLM-4.5-Air 106B parameters in total, 12B active; GLM-4.5 355B in total, 32B active
(the GLM-4.5 model card, zai-org/GLM-4.5 README; transformers' ``glm4_moe`` page). The card's
12B and 32B are active counts without the embedding table and the LM head (with them Air's is
13.42B, 12 % over; GLM-4.5's 33.63B, 5.1 % over). Counted: Air 106.85B (0.8 % over the card),
GLM-4.5 352.80B (0.6 % under) and 32.08B active without the embeddings (0.3 % over). No
checkpoint size is stated for either. Tolerance: exact on the counts and bytes; 3 % against
the published figures (the issue's bound).
"""

import json
import pathlib

import pytest

from rooflinekit import ModelShape, catalog
from rooflinekit.hf_config import count_params

CONFIG = pathlib.Path(__file__).parent / "data" / "hf_configs" / "glm-4.5-air.json"

H, LAYERS, VOCAB, HEADS, KV_HEADS, HEAD_DIM = 4096, 46, 151_552, 96, 8, 128
DENSE_LAYERS, DENSE_WIDTH = 1, 10_944
EXPERTS, TOP_K, EXPERT_WIDTH = 128, 8, 1408

Q, KV = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM                  # 12,288 and 1,024
ATTENTION = H * Q + 2 * H * KV + Q * H + (Q + 2 * KV)         # q, k, v biased; o not
EXPERT = 3 * H * EXPERT_WIDTH                                  # gate, up and down
ROUTER = H * EXPERTS + EXPERTS                                 # gate and correction bias
EMBEDDING = VOCAB * H


def by_hand(active: bool) -> int:
    routed = TOP_K if active else EXPERTS
    moe = ROUTER + routed * EXPERT + EXPERT                    # + one shared expert
    return (2 * EMBEDDING + LAYERS * (ATTENTION + 2 * H) + DENSE_LAYERS * 3 * H * DENSE_WIDTH
            + (LAYERS - DENSE_LAYERS) * moe + H)


def test_the_config_is_the_published_one():
    config = json.loads(CONFIG.read_text())
    assert config["architectures"] == ["Glm4MoeForCausalLM"]
    assert (config["num_hidden_layers"], config["hidden_size"], config["num_attention_heads"],
            config["num_key_value_heads"], config["head_dim"], config["first_k_dense_replace"],
            config["n_routed_experts"], config["num_experts_per_tok"],
            config["moe_intermediate_size"], config["intermediate_size"],
            config["attention_bias"], config["use_qk_norm"]) == (
        LAYERS, H, HEADS, KV_HEADS, HEAD_DIM, DENSE_LAYERS, EXPERTS, TOP_K, EXPERT_WIDTH,
        DENSE_WIDTH, True, False)


def test_parameters_are_counted_exactly():
    assert ATTENTION == 109_066_240
    counts = count_params(CONFIG)
    assert counts["attention"] == LAYERS * ATTENTION
    assert counts["router"] == (LAYERS - DENSE_LAYERS) * ROUTER
    assert counts["total"] == by_hand(active=False) == 106_852_251_264
    assert counts["active"] == by_hand(active=True) == 13_424_129_664
    model = ModelShape.from_hf_config(CONFIG)
    assert (model.n_params, model.n_active_params) == (by_hand(False), by_hand(True))
    row = catalog.model("GLM-4.5-Air")
    assert (row.n_params, row.n_active_params) == (by_hand(False), by_hand(True))


def test_parameters_are_within_3_percent_of_the_published_figures():
    assert by_hand(active=False) / 106e9 == pytest.approx(1.0, abs=0.03)        # 0.8 % over
    # the card counts the active parameters without the embedding table and the LM head
    assert (by_hand(active=True) - 2 * EMBEDDING) / 12e9 == pytest.approx(1.0, abs=0.03)


def test_kv_bytes_per_token_by_hand():
    assert catalog.model("GLM-4.5-Air").kv_bytes_per_token == 2 * LAYERS * KV_HEADS * HEAD_DIM * 2


def test_qk_norms_counted_when_the_config_asks():
    # GLM-4.5 (355B) sets use_qk_norm (see below): an RMSNorm of head_dim for q and one for k
    config = dict(json.loads(CONFIG.read_text()), use_qk_norm=True)
    assert (count_params(config)["attention"]
            == count_params(CONFIG)["attention"] + LAYERS * 2 * HEAD_DIM)


def test_unbiased_attention_drops_the_q_k_v_biases():
    config = dict(json.loads(CONFIG.read_text()), attention_bias=False)
    assert count_params(config)["attention"] == LAYERS * (ATTENTION - (Q + 2 * KV))


# -- GLM-4.5 (355B), from its config.json's numbers ----------------------------------------------
FULL = pathlib.Path(__file__).parent / "data" / "hf_configs" / "glm-4.5.json"

F_H, F_LAYERS, F_HEADS, F_KV_HEADS, F_HEAD_DIM = 5120, 92, 96, 8, 128
F_DENSE_LAYERS, F_DENSE_WIDTH = 3, 12_288
F_EXPERTS, F_TOP_K, F_EXPERT_WIDTH = 160, 8, 1536

F_Q, F_KV = F_HEADS * F_HEAD_DIM, F_KV_HEADS * F_HEAD_DIM      # 12,288 and 1,024
F_ATTENTION = (F_H * F_Q + 2 * F_H * F_KV + F_Q * F_H         # q, k, v, o weights
               + (F_Q + 2 * F_KV)                             # q, k, v biases; o unbiased
               + 2 * F_HEAD_DIM)                              # q_norm and k_norm
F_EXPERT = 3 * F_H * F_EXPERT_WIDTH                            # gate, up and down
F_ROUTER = F_H * F_EXPERTS + F_EXPERTS                         # gate and correction bias
F_EMBEDDING = VOCAB * F_H                                      # 151,552 · 5,120


def full_by_hand(active: bool) -> int:
    routed = F_TOP_K if active else F_EXPERTS
    moe = F_ROUTER + routed * F_EXPERT + F_EXPERT              # + one shared expert
    return (2 * F_EMBEDDING + F_LAYERS * (F_ATTENTION + 2 * F_H)
            + F_DENSE_LAYERS * 3 * F_H * F_DENSE_WIDTH
            + (F_LAYERS - F_DENSE_LAYERS) * moe + F_H)


def test_glm45_config_is_the_published_one():
    config = json.loads(FULL.read_text())
    assert config["architectures"] == ["Glm4MoeForCausalLM"]
    assert (config["num_hidden_layers"], config["hidden_size"], config["num_attention_heads"],
            config["num_key_value_heads"], config["head_dim"], config["first_k_dense_replace"],
            config["n_routed_experts"], config["num_experts_per_tok"],
            config["n_shared_experts"], config["moe_intermediate_size"],
            config["intermediate_size"], config["vocab_size"], config["attention_bias"],
            config["use_qk_norm"], config["tie_word_embeddings"],
            config["max_position_embeddings"]) == (
        F_LAYERS, F_H, F_HEADS, F_KV_HEADS, F_HEAD_DIM, F_DENSE_LAYERS, F_EXPERTS, F_TOP_K, 1,
        F_EXPERT_WIDTH, F_DENSE_WIDTH, VOCAB, True, True, False, 131_072)
    # Air's file with GLM-4.5's sizes: the same keys, as the two are one release
    assert set(config) == set(json.loads(CONFIG.read_text()))


def test_glm45_parameters_are_counted_exactly():
    assert F_ATTENTION == 136_329_472
    counts = count_params(FULL)
    assert counts["attention"] == F_LAYERS * F_ATTENTION
    assert counts["router"] == (F_LAYERS - F_DENSE_LAYERS) * F_ROUTER
    assert counts["total"] == full_by_hand(active=False) == 352_797_829_024
    assert counts["active"] == full_by_hand(active=True) == 33_632_266_144
    model = ModelShape.from_hf_config(FULL)
    assert (model.n_params, model.n_active_params) == (full_by_hand(False), full_by_hand(True))
    row = catalog.model("GLM-4.5")
    assert (row.n_params, row.n_active_params) == (full_by_hand(False), full_by_hand(True))
    assert row.weight_bytes == 2 * full_by_hand(False)        # bf16 release


def test_glm45_parameters_are_within_3_percent_of_the_published_figures():
    assert full_by_hand(active=False) / 355e9 == pytest.approx(1.0, abs=0.03)   # 0.6 % under
    # the card counts the active parameters without the embedding table and the LM head
    active = full_by_hand(active=True) - 2 * F_EMBEDDING
    assert active == 32_080_373_664
    assert active / 32e9 == pytest.approx(1.0, abs=0.03)                         # 0.3 % over


def test_glm45_kv_bytes_per_token_by_hand():
    row = catalog.model("GLM-4.5")
    assert row.kv_bytes_per_token == 2 * F_LAYERS * F_KV_HEADS * F_HEAD_DIM * 2 == 376_832
    assert (row.max_context, row.sliding_window) == (131_072, None)
