"""Qwen3 MoE (Qwen3-30B-A3B, Qwen3-235B-A22B): their published configs against the model cards.

Configs: ``tests/data/hf_configs/qwen3-30b-a3b.json`` and ``qwen3-235b-a22b.json`` (sources in
the README there). Expected numbers are derived by hand from their fields and transformers'
``Qwen3MoeForCausalLM`` module shapes: attention q, k, v, o without bias and per-head q and k
RMSNorms (``head_dim`` each); every layer an MoE block (``decoder_sparse_step`` 1,
``mlp_only_layers`` empty) of ``num_experts`` experts (gate, up, down of width
``moe_intermediate_size``) and a bias-free router, no shared expert; two RMSNorms a layer, a
final one; untied embedding table and LM head. KV: ``2 · L · H_kv · d · 2`` bytes a token (bf16),
no sliding window (``use_sliding_window`` false).

Published (Qwen's model cards): Qwen3-30B-A3B 30.5B total, 3.3B activated, 29.9B
non-embedding; Qwen3-235B-A22B 235B total, 22B activated, 234B non-embedding. Tolerance: 3 %
(the brief's) on the parameters, exact on bytes.
"""

import pathlib

import pytest

from rooflinekit import memory
from rooflinekit.hf_config import count_params
from rooflinekit.models import model_from_hf_config

CONFIGS = pathlib.Path(__file__).parent / "data" / "hf_configs"

# name: (file, hidden, layers, heads, kv heads, expert width)
SHAPES = {
    "Qwen3-30B-A3B": ("qwen3-30b-a3b", 2048, 48, 32, 4, 768),
    "Qwen3-235B-A22B": ("qwen3-235b-a22b", 4096, 94, 64, 4, 1536),
}
HEAD_DIM, EXPERTS, TOP_K, VOCAB = 128, 128, 8, 151_936
CARDS = {                              # (total, activated, non-embedding) as published
    "Qwen3-30B-A3B": (30.5e9, 3.3e9, 29.9e9),
    "Qwen3-235B-A22B": (235e9, 22e9, 234e9),
}
KV_BY_HAND = {
    "Qwen3-30B-A3B": 2 * 48 * 4 * 128 * 2,             # 98,304
    "Qwen3-235B-A22B": 2 * 94 * 4 * 128 * 2,           # 192,512
}


def params_by_hand(name):
    """(total, active) parameters."""
    _, h, layers, heads, kv, width = SHAPES[name]
    attention = h * (heads + 2 * kv) * HEAD_DIM + heads * HEAD_DIM * h + 2 * HEAD_DIM
    expert = 3 * h * width
    layer = attention + EXPERTS * expert + EXPERTS * h + 2 * h
    total = layers * layer + h + 2 * VOCAB * h
    return total, total - layers * (EXPERTS - TOP_K) * expert


def model(name):
    return model_from_hf_config(CONFIGS / f"{SHAPES[name][0]}.json", name=name)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_config_reads_as_its_shapes(name):
    _, h, layers, heads, kv, width = SHAPES[name]
    m = model(name)
    assert (m.n_layers, m.hidden_size, m.n_heads, m.n_kv_heads, m.head_dim) == \
        (layers, h, heads, kv, HEAD_DIM)
    assert (m.n_experts, m.n_experts_per_token, m.intermediate_size) == (EXPERTS, TOP_K, width)
    assert (m.sliding_window, m.tie_word_embeddings, m.max_context) == (None, False, 40_960)
    assert (m.bytes_per_param, m.kv_bytes_per_element) == (2, 2)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_parameters_by_hand_and_against_the_model_card(name):
    total, active = params_by_hand(name)
    counts = count_params(CONFIGS / f"{SHAPES[name][0]}.json")
    assert (counts["total"], counts["active"]) == (total, active)
    card_total, card_active, card_body = CARDS[name]
    assert total == pytest.approx(card_total, rel=0.03)
    assert active == pytest.approx(card_active, rel=0.03)
    embeddings = 2 * VOCAB * SHAPES[name][1]
    assert total - embeddings == pytest.approx(card_body, rel=0.03)


@pytest.mark.parametrize("name", sorted(KV_BY_HAND))
def test_kv_bytes_by_hand(name):
    m = model(name)
    assert m.kv_bytes_per_token == KV_BY_HAND[name]
    for context in (4096, 32_768, 131_072):
        assert memory.kv_bytes_per_sequence(m, context) == KV_BY_HAND[name] * context
