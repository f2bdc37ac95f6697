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

Published totals (tolerance 3 %, the brief's): Llama 4 Scout 109B / 17B active and Maverick
400B / 17B (Meta's model card, vision encoder included); DeepSeek-R1 671B / 37B (the
DeepSeek-V3 architecture, arXiv:2412.19437); Kimi-K2 1T / 32B (Moonshot's model card);
Nemotron 3 Nano 31.6B total and 3.6B active with its embeddings (NVIDIA's technical report);
Jamba 1.5 Mini 52B / 12B active (AI21's model card); Falcon-H1-0.5B 521,411,104, the Hub's
count of Falcon-H1-0.5B-Base (the release's name says 0.5B; see
tests/test_models_families_falcon_h1.py).
"""

import pathlib

import pytest

from rooflinekit import catalog
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
}
CARDS = {                                   # (total, active) as published
    "Llama-4-Scout": (109e9, 17e9),
    "Llama-4-Maverick": (400e9, 17e9),
    "DeepSeek-R1": (671e9, 37e9),
    "Kimi-K2-Instruct": (1e12, 32e9),
    "Nemotron-3-Nano-30B-A3B": (31.6e9, 3.6e9),
    "Jamba-1.5-Mini": (52e9, 12e9),
    "Falcon-H1-0.5B": (521_411_104, 521_411_104),
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
