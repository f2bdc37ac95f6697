"""GLM-4.5-Air: grouped-query attention with q/k/v biases, one dense layer, then MoE.

Config: ``tests/data/hf_configs/glm-4.5-air.json`` (zai-org/GLM-4.5-Air's published
``config.json``; source in the README there). Every expected number is derived here by hand
from the config's fields, as transformers' ``Glm4MoeForCausalLM`` builds its modules:

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

Published: 106B parameters in total, 12B active (the GLM-4.5 model card, zai-org/GLM-4.5
README; transformers' ``glm4_moe`` page). The card's 12B is the active count without the
embedding table and the LM head (with them it is 13.42B, 12 % over). Tolerance: exact on the
counts and bytes; 3 % against the published figures (the issue's bound).
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
    # GLM-4.5 (355B) sets use_qk_norm: an RMSNorm of head_dim for q and one for k, each layer
    config = dict(json.loads(CONFIG.read_text()), use_qk_norm=True)
    assert (count_params(config)["attention"]
            == count_params(CONFIG)["attention"] + LAYERS * 2 * HEAD_DIM)


def test_unbiased_attention_drops_the_q_k_v_biases():
    config = dict(json.loads(CONFIG.read_text()), attention_bias=False)
    assert count_params(config)["attention"] == LAYERS * (ATTENTION - (Q + 2 * KV))
