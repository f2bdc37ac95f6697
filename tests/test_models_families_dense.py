"""Phi-4 and Mistral-Small-3: two dense GQA models of 2025, counted from their config.json.

Configs (sources in ``tests/data/hf_configs/README.md``):

- ``phi-4.json``: microsoft/phi-4's published file, copied verbatim from the copy of the
  repository's files in OpenMOSE/RWKV-LM-RLHF@c394e06d2ea0fdad4679af83b9dd77b517a87f49
  (``main/tokenizer/phi-4/config.json``).
- ``mistral-small-24b-instruct-2501.json``: mistralai/Mistral-Small-24B-Instruct-2501's, transcribed
  field for field in the Hub's layout: its shapes are those of the same release's Mistral-format
  ``params.json`` in OpenMOSE/RWKV-LM-RLHF@c394e06d2ea0fdad4679af83b9dd77b517a87f49.

Every expected number is derived here by hand from the configs' numbers, the module shapes
being those of transformers' ``Phi3ForCausalLM`` and ``MistralForCausalLM``:

- Phi-4: h = 5,120, 40 layers, 40 query heads and 10 KV heads of h / 40 = 128; a fused
  ``qkv_proj`` h → h + 2·10·128 and ``o_proj`` h → h, no biases (``attention_bias`` false); a
  fused ``gate_up_proj`` h → 2·17,920 and ``down_proj`` 17,920 → h; two RMSNorms a layer and a
  final one; untied embedding table and LM head of 100,352 · h.
- Mistral-Small-3: h = 5,120, 40 layers, 32 query heads and 8 KV heads of ``head_dim`` 128
  (32 · 128 = 4,096, not h): q h → 4,096, k and v h → 1,024, o 4,096 → h, no biases; gate, up
  h → 32,768 and down 32,768 → h; two RMSNorms a layer and a final one; untied, vocabulary
  131,072.
- KV cache (bf16, two bytes an element, neither has a sliding window: ``sliding_window`` null):
  2 · 40 · 10 · 128 · 2 and 2 · 40 · 8 · 128 · 2 bytes a token.

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

Tolerance: exact on counts and bytes; 3 % against the published parameter counts (the issue's
bound).
"""

import json
import pathlib

import pytest

from rooflinekit import ModelShape, catalog
from rooflinekit.hf_config import count_params

CONFIGS = pathlib.Path(__file__).parent / "data" / "hf_configs"
PHI4 = CONFIGS / "phi-4.json"
MISTRAL = CONFIGS / "mistral-small-24b-instruct-2501.json"

# Phi-4's numbers
P_H, P_LAYERS, P_HEADS, P_KV_HEADS, P_WIDTH, P_VOCAB = 5120, 40, 40, 10, 17_920, 100_352
P_HEAD_DIM = P_H // P_HEADS                                    # 128
P_CHECKPOINT_BYTES = 29_319_014_400

# Mistral-Small-3's numbers
M_H, M_LAYERS, M_HEADS, M_KV_HEADS, M_HEAD_DIM = 5120, 40, 32, 8, 128
M_WIDTH, M_VOCAB = 32_768, 131_072
M_CHECKPOINT_BYTES = 47_144_806_400


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


@pytest.mark.parametrize("name, kv, context", [
    ("Phi-4", 2 * P_LAYERS * P_KV_HEADS * P_HEAD_DIM * 2, 16_384),           # 204,800
    ("Mistral-Small-3", 2 * M_LAYERS * M_KV_HEADS * M_HEAD_DIM * 2, 32_768),  # 163,840
])
def test_kv_bytes_per_token_by_hand(name, kv, context):
    row = catalog.model(name)
    assert row.kv_bytes_per_token == kv
    assert (row.sliding_window, row.n_sliding_layers, row.max_context) == (None, 0, context)
