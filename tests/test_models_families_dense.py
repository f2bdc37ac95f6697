"""Phi-4, Mistral-Small-3, Qwen3-8B: dense GQA models of 2025, counted from their config.json.

Configs (sources in ``tests/data/hf_configs/README.md``):

- ``phi-4.json``: microsoft/phi-4's published file, copied verbatim from the copy of the
  repository's files in OpenMOSE/RWKV-LM-RLHF@c394e06d2ea0fdad4679af83b9dd77b517a87f49
  (``main/tokenizer/phi-4/config.json``).
- ``mistral-small-24b-instruct-2501.json``: mistralai/Mistral-Small-24B-Instruct-2501's, transcribed
  field for field in the Hub's layout: its shapes are those of the same release's Mistral-format
  ``params.json`` in OpenMOSE/RWKV-LM-RLHF@c394e06d2ea0fdad4679af83b9dd77b517a87f49.
- ``qwen3-8b.json``: Qwen/Qwen3-8B's, copied byte for byte from the copy AIConfigurator keeps
  (the aiconfigurator-core 0.12.0 wheel on PyPI,
  ``aiconfigurator_core/model_configs/Qwen--Qwen3-8B_config.json``).

Every expected number is derived here by hand from the configs' numbers, the module shapes
being those of transformers' ``Phi3ForCausalLM``, ``MistralForCausalLM`` and
``Qwen3ForCausalLM``:

- Phi-4: h = 5,120, 40 layers, 40 query heads and 10 KV heads of h / 40 = 128; a fused
  ``qkv_proj`` h → h + 2·10·128 and ``o_proj`` h → h, no biases (``attention_bias`` false); a
  fused ``gate_up_proj`` h → 2·17,920 and ``down_proj`` 17,920 → h; two RMSNorms a layer and a
  final one; untied embedding table and LM head of 100,352 · h.
- Mistral-Small-3: h = 5,120, 40 layers, 32 query heads and 8 KV heads of ``head_dim`` 128
  (32 · 128 = 4,096, not h): q h → 4,096, k and v h → 1,024, o 4,096 → h, no biases; gate, up
  h → 32,768 and down 32,768 → h; two RMSNorms a layer and a final one; untied, vocabulary
  131,072.
- Qwen3-8B: h = 4,096, 36 layers, 32 query heads and 8 KV heads of ``head_dim`` 128
  (32 · 128 = 4,096 = h): q h → 4,096, k and v h → 1,024, o 4,096 → h, no biases
  (``attention_bias`` false), and a per-head RMSNorm of 128 on q and one on k; gate, up
  h → 12,288 and down 12,288 → h; two RMSNorms a layer and a final one; untied
  (``tie_word_embeddings`` false), vocabulary 151,936.
- KV cache (bf16, two bytes an element, none has a sliding window: ``sliding_window`` null,
  Qwen3-8B's ``use_sliding_window`` false): 2 · 40 · 10 · 128 · 2, 2 · 40 · 8 · 128 · 2 and
  2 · 36 · 8 · 128 · 2 bytes a token, and a sequence of C tokens holds C times that.

Published figures:

- Phi-4: the checkpoint, microsoft/phi-4's ``model.safetensors.index.json``, ``total_size``
  29,319,014,400 B (the copy in OpenMOSE/RWKV-LM-RLHF@edf9b23e634f0453ede04c845f909028aa3a9a96;
  also recorded for revision 2db69c1c3e91a05d2c64a3185acfbaf36f744e25 in a second public
  file): 14,659,507,200 parameters at 2 B each, which the count equals exactly. The model card
  says "14B", a rounded figure: the count is 4.7 % over
  it, outside the issue's 3 %, so, as for Falcon-H1-0.5B, the comparison is with the
  checkpoint, and the card's figure and its gap are stated here.
- Mistral-Small-3: the model card, "24B parameters" and "a 32k context window"; the checkpoint,
  ``model.safetensors.index.json`` ``total_size`` 47,144,806,400 B (the copy in
  OpenMOSE/RWKV-LM-RLHF@7e8f62ab3f43bd70de656d5205d1cb4216b4ea58): 23,572,403,200 parameters
  at 2 B each, which the count equals exactly; the card's 24B is 1.8 % over it.
- Qwen3-8B: the model card, 8.2B parameters, 6.95B of them non-embedding, and a context of
  32,768 tokens natively, 131,072 with YaRN (the config's ``max_position_embeddings`` is
  40,960). The count, 8,190,735,360, is 0.11 % under 8.2B; without the embedding table and
  the LM head, 6,946,075,648, 0.06 % under 6.95B.
  No checkpoint size of the release was found, so the row's bytes are held to 2 B a counted
  parameter only.

Tolerance: exact on counts and bytes; 3 % against the published parameter counts (the issue's
bound).
"""

import json
import pathlib

import pytest

from rooflinekit import ModelShape, catalog, memory
from rooflinekit.hf_config import count_params

CONFIGS = pathlib.Path(__file__).parent / "data" / "hf_configs"
PHI4 = CONFIGS / "phi-4.json"
MISTRAL = CONFIGS / "mistral-small-24b-instruct-2501.json"
QWEN3_8B = CONFIGS / "qwen3-8b.json"

# Phi-4's numbers
P_H, P_LAYERS, P_HEADS, P_KV_HEADS, P_WIDTH, P_VOCAB = 5120, 40, 40, 10, 17_920, 100_352
P_HEAD_DIM = P_H // P_HEADS                                    # 128
P_CHECKPOINT_BYTES = 29_319_014_400

# Mistral-Small-3's numbers
M_H, M_LAYERS, M_HEADS, M_KV_HEADS, M_HEAD_DIM = 5120, 40, 32, 8, 128
M_WIDTH, M_VOCAB = 32_768, 131_072
M_CHECKPOINT_BYTES = 47_144_806_400

# Qwen3-8B's numbers
Q_H, Q_LAYERS, Q_HEADS, Q_KV_HEADS, Q_HEAD_DIM = 4096, 36, 32, 8, 128
Q_WIDTH, Q_VOCAB = 12_288, 151_936


def phi4_by_hand() -> int:
    qkv = P_H * (P_H + 2 * P_KV_HEADS * P_HEAD_DIM)            # fused q, k, v
    o = P_H * P_H
    gate_up = P_H * 2 * P_WIDTH                                # fused gate and up
    down = P_WIDTH * P_H
    layer = qkv + o + gate_up + down + 2 * P_H                 # + two RMSNorms
    return 2 * P_VOCAB * P_H + P_LAYERS * layer + P_H          # untied; final norm


def mistral_by_hand() -> int:
    q, kv = M_HEADS * M_HEAD_DIM, M_KV_HEADS * M_HEAD_DIM     # 4,096 and 1,024
    attention = M_H * q + 2 * M_H * kv + q * M_H
    mlp = 3 * M_H * M_WIDTH
    layer = attention + mlp + 2 * M_H
    return 2 * M_VOCAB * M_H + M_LAYERS * layer + M_H


def qwen3_8b_by_hand() -> int:
    q, kv = Q_HEADS * Q_HEAD_DIM, Q_KV_HEADS * Q_HEAD_DIM     # 4,096 and 1,024
    attention = Q_H * q + 2 * Q_H * kv + q * Q_H + 2 * Q_HEAD_DIM   # + q_norm and k_norm
    mlp = 3 * Q_H * Q_WIDTH
    layer = attention + mlp + 2 * Q_H                          # + two RMSNorms
    return 2 * Q_VOCAB * Q_H + Q_LAYERS * layer + Q_H          # untied; final norm


def test_the_configs_are_the_published_ones():
    phi = json.loads(PHI4.read_text())
    assert (phi["architectures"], phi["model_type"]) == (["Phi3ForCausalLM"], "phi3")
    assert (phi["hidden_size"], phi["num_hidden_layers"], phi["num_attention_heads"],
            phi["num_key_value_heads"], phi["intermediate_size"], phi["vocab_size"],
            phi["tie_word_embeddings"], phi["attention_bias"], phi["sliding_window"],
            phi["max_position_embeddings"]) == (
        P_H, P_LAYERS, P_HEADS, P_KV_HEADS, P_WIDTH, P_VOCAB, False, False, None, 16_384)
    assert "head_dim" not in phi                               # hidden / heads, 128
    mistral = json.loads(MISTRAL.read_text())
    assert (mistral["architectures"], mistral["model_type"]) == (["MistralForCausalLM"],
                                                                 "mistral")
    assert (mistral["hidden_size"], mistral["num_hidden_layers"],
            mistral["num_attention_heads"], mistral["num_key_value_heads"],
            mistral["head_dim"], mistral["intermediate_size"], mistral["vocab_size"],
            mistral["tie_word_embeddings"], mistral["sliding_window"],
            mistral["max_position_embeddings"], mistral["rope_theta"]) == (
        M_H, M_LAYERS, M_HEADS, M_KV_HEADS, M_HEAD_DIM, M_WIDTH, M_VOCAB, False, None, 32_768,
        1e8)
    qwen = json.loads(QWEN3_8B.read_text())
    assert (qwen["architectures"], qwen["model_type"]) == (["Qwen3ForCausalLM"], "qwen3")
    assert (qwen["hidden_size"], qwen["num_hidden_layers"], qwen["num_attention_heads"],
            qwen["num_key_value_heads"], qwen["head_dim"], qwen["intermediate_size"],
            qwen["vocab_size"], qwen["tie_word_embeddings"], qwen["attention_bias"],
            qwen["sliding_window"], qwen["use_sliding_window"],
            qwen["max_position_embeddings"], qwen["torch_dtype"]) == (
        Q_H, Q_LAYERS, Q_HEADS, Q_KV_HEADS, Q_HEAD_DIM, Q_WIDTH, Q_VOCAB, False, False, None,
        False, 40_960, "bfloat16")


def test_phi4_parameters_and_bytes_are_exact():
    assert phi4_by_hand() == 14_659_507_200
    counts = count_params(PHI4)
    assert counts["total"] == counts["active"] == phi4_by_hand()
    assert counts["embedding"] == counts["lm_head"] == P_VOCAB * P_H
    assert ModelShape.from_hf_config(PHI4).n_params == phi4_by_hand()
    row = catalog.model("Phi-4")
    assert row.n_params == row.n_active_params == phi4_by_hand()
    assert row.weight_bytes == 2 * phi4_by_hand() == P_CHECKPOINT_BYTES      # bf16 checkpoint


def test_phi4_against_the_card():
    # the card's "14B" is rounded: the count, which equals the checkpoint's (above), is 4.7 %
    # over it
    assert phi4_by_hand() / 14e9 == pytest.approx(1.047, abs=0.001)


def test_mistral_small_3_parameters_and_bytes_are_exact():
    assert mistral_by_hand() == 23_572_403_200
    counts = count_params(MISTRAL)
    assert counts["total"] == counts["active"] == mistral_by_hand()
    assert counts["attention"] == M_LAYERS * (2 * M_H * 4096 + 2 * M_H * 1024)
    assert ModelShape.from_hf_config(MISTRAL).n_params == mistral_by_hand()
    row = catalog.model("Mistral-Small-3")
    assert row.n_params == row.n_active_params == mistral_by_hand()
    assert row.weight_bytes == 2 * mistral_by_hand() == M_CHECKPOINT_BYTES   # bf16 checkpoint


def test_mistral_small_3_within_3_percent_of_the_card():
    assert mistral_by_hand() / 24e9 == pytest.approx(1.0, abs=0.03)          # 1.8 % under


def test_qwen3_8b_parameters_and_bytes_are_exact():
    assert qwen3_8b_by_hand() == 8_190_735_360
    counts = count_params(QWEN3_8B)
    assert counts["total"] == counts["active"] == qwen3_8b_by_hand()
    assert counts["embedding"] == counts["lm_head"] == Q_VOCAB * Q_H          # 622,329,856
    assert counts["attention"] == Q_LAYERS * (2 * Q_H * 4096 + 2 * Q_H * 1024 + 2 * 128)
    assert counts["mlp"] == Q_LAYERS * 3 * Q_H * Q_WIDTH
    assert ModelShape.from_hf_config(QWEN3_8B).n_params == qwen3_8b_by_hand()
    row = catalog.model("Qwen3-8B")
    assert row.n_params == row.n_active_params == qwen3_8b_by_hand()
    assert row.weight_bytes == 2 * qwen3_8b_by_hand() == 16_381_470_720     # bf16
    assert (row.attention, row.is_moe, row.tie_word_embeddings) == ("GQA-8", False, False)


def test_qwen3_8b_against_the_card():
    # card: 8.2B and 6.95B non-embedding; the count is 0.11 % and, without the embedding
    # table and LM head (6,946,075,648), 0.06 % under them
    body = qwen3_8b_by_hand() - 2 * Q_VOCAB * Q_H
    assert body == 6_946_075_648
    assert qwen3_8b_by_hand() / 8.2e9 == pytest.approx(0.9989, abs=0.0001)
    assert body / 6.95e9 == pytest.approx(0.9994, abs=0.0001)
    assert qwen3_8b_by_hand() == pytest.approx(8.2e9, rel=0.03)
    assert body == pytest.approx(6.95e9, rel=0.03)


@pytest.mark.parametrize("name, kv, context", [
    ("Phi-4", 2 * P_LAYERS * P_KV_HEADS * P_HEAD_DIM * 2, 16_384),           # 204,800
    ("Mistral-Small-3", 2 * M_LAYERS * M_KV_HEADS * M_HEAD_DIM * 2, 32_768),  # 163,840
    ("Qwen3-8B", 2 * Q_LAYERS * Q_KV_HEADS * Q_HEAD_DIM * 2, 40_960),        # 147,456
])
def test_kv_bytes_per_token_by_hand(name, kv, context):
    row = catalog.model(name)
    assert row.kv_bytes_per_token == kv
    assert (row.sliding_window, row.n_sliding_layers, row.max_context) == (None, 0, context)


# Qwen3-8B, a sequence of C tokens: 147,456 B a token (above) in all 36 layers, no window.
QWEN3_8B_SEQUENCE_BY_HAND = {
    4096: 2 * 36 * 8 * 128 * 2 * 4096,             # 603,979,776 (576 MiB)
    32_768: 2 * 36 * 8 * 128 * 2 * 32_768,         # 4,831,838,208 (4.5 GiB)
    40_960: 2 * 36 * 8 * 128 * 2 * 40_960,         # 6,039,797,760 (5.625 GiB), the config's
}


@pytest.mark.parametrize("context", sorted(QWEN3_8B_SEQUENCE_BY_HAND))
def test_qwen3_8b_kv_cache_by_hand(context):
    row = catalog.model("Qwen3-8B")
    assert memory.kv_bytes_per_sequence(row, context) == QWEN3_8B_SEQUENCE_BY_HAND[context]
    built = ModelShape.from_hf_config(QWEN3_8B)
    assert memory.kv_bytes_per_sequence(built, context) == QWEN3_8B_SEQUENCE_BY_HAND[context]


def test_qwen3_8b_found_by_its_hub_id():
    assert catalog.model("Qwen/Qwen3-8B") is catalog.model("Qwen3-8B")
    assert catalog.model("qwen3-8b").name == "Qwen3-8B"
