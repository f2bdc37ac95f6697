"""Catalogue rows of 2025 families: each agrees with its published config.json and model card.

Configs in ``tests/data/hf_configs/`` (sources in the README there). KV bytes per token are
derived by hand from the configs' numbers (bf16 KV, two bytes an element):

- Llama 4 Scout and Maverick: 48 attention layers of 8 KV heads of 128: 2·48·8·128·2 while
  the context is inside one 8,192-token chunk (36 of them stop growing there).
- DeepSeek-R1 and Kimi-K2: MLA, 61 layers caching kv_lora_rank + qk_rope_head_dim = 576
  values: 61·576·2. DeepSeek-V3.2 adds its indexer's 128 fp8 values and one fp32 scale
  (132 B) a layer.
- Nemotron 3 Nano: 6 attention layers of 2 KV heads of 128: 2·6·2·128·2.
- Jamba 1.5 Mini: 4 attention layers (of 32) of 8 KV heads of 128: 2·4·8·128·2.
- Falcon-H1-0.5B: attention in all 36 layers, 2 KV heads of 64: 2·36·2·64·2.
- Granite-4.0-H-Small: 4 attention layers (of 40) of 8 KV heads of 128: 2·4·8·128·2. Its row
  is held to its config in tests/test_models_families_granite4h.py, which builds the config
  from the model card and public partial copies (no whole copy of the file was found).
- GLM-4.5-Air: GQA in all 46 layers, 8 KV heads of 128: 2·46·8·128·2. GLM-4.5: all 92
  layers, 8 KV heads of 128: 2·92·8·128·2.
- Phi-4: 40 layers of 10 KV heads of 128 (5,120 / 40 query heads): 2·40·10·128·2; no sliding
  window (config null).
- Mistral-Small-3 (2501): 40 layers of 8 KV heads of ``head_dim`` 128 (not 5,120 / 32 = 160):
  2·40·8·128·2; no sliding window (config null).
- Qwen3-8B: 36 layers of 8 KV heads of ``head_dim`` 128: 2·36·8·128·2; no sliding window
  (``use_sliding_window`` false).
- Gemma-3-27B: 62 layers of 16 KV heads of 128, 2·16·128·2 = 8,192 B a token and layer;
  ``sliding_window_pattern`` 6 (Gemma3TextConfig's default; the published file leaves it out)
  makes every 6th layer global, 62 // 6 = 10 of them, and the other 52 hold at most the
  1,024-token window. Per token while inside the window 62·8,192; a sequence of C tokens
  holds 8,192·(10·C + 52·min(C, 1,024)).

Published totals (tolerance 3 %, the brief's): Llama 4 Scout 109B / 17B active and Maverick
400B / 17B (Meta's model card, vision encoder included); DeepSeek-R1 671B / 37B (the
DeepSeek-V3 architecture, arXiv:2412.19437); Kimi-K2 1T / 32B (Moonshot's model card);
Nemotron 3 Nano 31.6B total and 3.6B active with its embeddings (NVIDIA's technical report);
Jamba 1.5 Mini 52B / 12B active (AI21's model card); Falcon-H1-0.5B 521,411,104, the Hub's
count of Falcon-H1-0.5B-Base (the release's name says 0.5B; see
tests/test_models_families_falcon_h1.py); Granite-4.0-H-Small 32B / 9B active (IBM's model
card); Gemma-3-27B 27B, vision encoder included (Google's
Gemma 3 model card and Gemma models overview, ai.google.dev/gemma/docs/get_started; the
language model alone is 27.01B of the 27.43B counted); Phi-4 14,659,507,200, the release's
bf16 checkpoint (``model.safetensors.index.json`` ``total_size`` 29,319,014,400 B over 2 B a
parameter; the card's rounded 14B is 4.7 % under it, see tests/test_models_families_dense.py);
Mistral-Small-3 24B (Mistral's model card for Mistral-Small-24B-Instruct-2501); Qwen3-8B
8.2B (Qwen's model card; the count is 0.11 % under it, see tests/test_models_families_dense.py).
GLM-4.5-Air (106B / 12B) and GLM-4.5 (355B / 32B, the GLM-4.5 model card) are compared in
tests/test_models_families_glm45.py, since the card counts the active parameters without the
embedding table and LM head.
"""

import pathlib

import pytest

from rooflinekit import catalog, memory
from rooflinekit.models import model_from_hf_config

CONFIGS = pathlib.Path(__file__).parent / "data" / "hf_configs"

ROWS = {
    "Llama-4-Scout": "llama-4-scout-17b-16e-instruct",
    "Llama-4-Maverick": "llama-4-maverick-17b-128e-instruct",
    "DeepSeek-R1": "deepseek-r1",
    "DeepSeek-V3.2": "deepseek-v3.2",
    "Kimi-K2-Instruct": "kimi-k2-instruct",
    "Nemotron-3-Nano-30B-A3B": "nemotron-3-nano-30b-a3b-bf16",
    "Jamba-1.5-Mini": "ai21-jamba-1.5-mini",
    "Falcon-H1-0.5B": "falcon-h1-0.5b",
    "GLM-4.5-Air": "glm-4.5-air",
    "Gemma-3-27B": "gemma-3-27b-it",
    "GLM-4.5": "glm-4.5",
    "Phi-4": "phi-4",
    "Mistral-Small-3": "mistral-small-24b-instruct-2501",
    "Qwen3-8B": "qwen3-8b",
}
KV_BY_HAND = {
    "Llama-4-Scout": 2 * 48 * 8 * 128 * 2,                 # 196,608
    "Llama-4-Maverick": 2 * 48 * 8 * 128 * 2,
    "DeepSeek-R1": 61 * (512 + 64) * 2,                    # 70,272
    "DeepSeek-V3.2": 61 * ((512 + 64) * 2 + 128 + 4),      # 78,324
    "Kimi-K2-Instruct": 61 * (512 + 64) * 2,
    "Nemotron-3-Nano-30B-A3B": 2 * 6 * 2 * 128 * 2,        # 6,144
    "Jamba-1.5-Mini": 2 * 4 * 8 * 128 * 2,                 # 16,384
    "Falcon-H1-0.5B": 2 * 36 * 2 * 64 * 2,                 # 18,432
    "Granite-4.0-H-Small": 2 * 4 * 8 * 128 * 2,            # 16,384
    "GLM-4.5-Air": 2 * 46 * 8 * 128 * 2,                   # 188,416
    "Gemma-3-27B": 62 * 2 * 16 * 128 * 2,                  # 507,904 inside the window
    "GLM-4.5": 2 * 92 * 8 * 128 * 2,                       # 376,832
    "Phi-4": 2 * 40 * 10 * 128 * 2,                        # 204,800
    "Mistral-Small-3": 2 * 40 * 8 * 128 * 2,               # 163,840
    "Qwen3-8B": 2 * 36 * 8 * 128 * 2,                      # 147,456
}
CARDS = {                                   # (total, active) as published
    "Llama-4-Scout": (109e9, 17e9),
    "Llama-4-Maverick": (400e9, 17e9),
    "DeepSeek-R1": (671e9, 37e9),
    "Kimi-K2-Instruct": (1e12, 32e9),
    "Nemotron-3-Nano-30B-A3B": (31.6e9, 3.6e9),
    "Jamba-1.5-Mini": (52e9, 12e9),
    "Falcon-H1-0.5B": (521_411_104, 521_411_104),
    "Granite-4.0-H-Small": (32e9, 9e9),
    "Gemma-3-27B": (27e9, 27e9),            # dense; the vision encoder is not active
    "Phi-4": (14_659_507_200, 14_659_507_200),   # the checkpoint's bytes / 2 (card: "14B")
    "Mistral-Small-3": (24e9, 24e9),        # dense; 1.8 % over the count
    "Qwen3-8B": (8.2e9, 8.2e9),             # dense; 0.11 % over the count
}
FIELDS = ("n_layers", "n_heads", "n_kv_heads", "head_dim", "hidden_size", "intermediate_size",
          "vocab_size", "n_experts", "n_experts_per_token", "kv_lora_rank", "qk_rope_head_dim",
          "sliding_window", "n_sliding_layers", "attention_chunk_size", "tie_word_embeddings",
          "n_params", "n_active_params", "kv_bytes_per_token", "kv_bytes_per_element",
          "max_context", "bytes_per_param", "n_kv_layers", "n_mamba_layers",
          "n_linear_attention_layers", "state_bytes_per_sequence",
          "indexer_bytes_per_token_per_layer", "index_topk")


@pytest.mark.parametrize("name", sorted(ROWS))
def test_row_agrees_with_its_config(name):
    row = catalog.model(name)
    built = model_from_hf_config(CONFIGS / f"{ROWS[name]}.json", name=name)
    for field in FIELDS:
        assert getattr(row, field) == getattr(built, field), field
    assert row.weight_bytes == pytest.approx(built.weight_bytes, rel=1e-12)
    assert row.source.startswith("https://huggingface.co/")


@pytest.mark.parametrize("name", sorted(KV_BY_HAND))
def test_kv_bytes_per_token_by_hand(name):
    assert catalog.model(name).kv_bytes_per_token == KV_BY_HAND[name]


@pytest.mark.parametrize("name", sorted(CARDS))
def test_rows_match_their_model_cards(name):
    total, active = CARDS[name]
    row = catalog.model(name)
    assert row.n_params == pytest.approx(total, rel=0.03)
    assert row.n_active_params == pytest.approx(active, rel=0.03)


def test_aliases_find_the_rows():
    assert catalog.model("meta-llama/Llama-4-Scout-17B-16E-Instruct").name == "Llama-4-Scout"
    assert catalog.model("moonshotai/Kimi-K2-Instruct").name == "Kimi-K2-Instruct"
    assert catalog.model("deepseek-ai/DeepSeek-V3.2").name == "DeepSeek-V3.2"


# Gemma-3-27B, a sequence of C tokens (from its config.json: 62 layers, sliding_window 1024,
# every 6th layer global; 16 KV heads of 128 in bf16, 8,192 B a token and layer):
# 8,192·(10·C + 52·min(C, 1,024)). Tolerance 1 % (the bound).
GEMMA3_27B_SEQUENCE_BY_HAND = {
    4096: 8192 * (10 * 4096 + 52 * 1024),          # 771,751,936
    32768: 8192 * (10 * 32768 + 52 * 1024),        # 3,120,562,176
    131072: 8192 * (10 * 131072 + 52 * 1024),      # 11,173,625,856
}


@pytest.mark.parametrize("context", sorted(GEMMA3_27B_SEQUENCE_BY_HAND))
def test_gemma3_27b_sequence_kv_is_window_bounded(context):
    row = catalog.model("Gemma-3-27B")
    assert (row.n_sliding_layers, row.n_full_layers, row.sliding_window) == (52, 10, 1024)
    assert memory.kv_bytes_per_sequence(row, context) == pytest.approx(
        GEMMA3_27B_SEQUENCE_BY_HAND[context], rel=0.01)


def test_new_rows_found_by_their_hub_ids():
    assert catalog.model("zai-org/GLM-4.5-Air").name == "GLM-4.5-Air"
    assert catalog.model("google/gemma-3-27b-it").name == "Gemma-3-27B"
    assert catalog.model("zai-org/GLM-4.5").name == "GLM-4.5"
    assert catalog.model("microsoft/phi-4").name == "Phi-4"
    assert catalog.model("mistralai/Mistral-Small-24B-Instruct-2501").name == "Mistral-Small-3"
    assert catalog.model("Qwen/Qwen3-8B").name == "Qwen3-8B"
