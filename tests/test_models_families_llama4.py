"""Llama 4 Scout and Maverick: chunked local attention and the MoE layer interleave.

The configs (``tests/data/hf_configs/llama-4-{scout-17b-16e,maverick-17b-128e}-instruct.json``,
sources in the README there) hold the language model's ``text_config``. Expected numbers are
derived by hand from their fields, with transformers' ``Llama4TextConfig`` defaults for the
fields they leave out and ``modeling_llama4``'s module shapes:

- Layer kinds: ``no_rope_layers`` absent, so every ``no_rope_layer_interval``-th layer (default
  4: layers 3, 7, ..., 47) is a NoPE layer attending to the whole context and the other 36
  attend within their ``attention_chunk_size`` chunk of 8,192 tokens. A chunked layer holds at
  most one chunk: its KV at context C is at most ``min(C, chunk)`` tokens, the bound a KV
  budget must reserve (it drops to the tokens of the current chunk at each chunk boundary).
- MoE layers: ``moe_layers`` absent, so layers ``interleave_moe_layer_step − 1, ...`` in steps of
  ``interleave_moe_layer_step`` (Scout 1: all 48; Maverick 2: the 24 odd ones). An MoE layer
  holds ``num_local_experts`` experts of width ``intermediate_size`` (gate, up, down), one
  shared expert of that width and a bias-free router; a dense layer an MLP of width
  ``intermediate_size_mlp``.
- Attention: q, k, v, o without bias; the QK norm (``use_qk_norm``) is an L2 norm without
  weights. Two RMSNorms a layer, a final one; untied embedding table and LM head (Llama4Config:
  ``tie_word_embeddings`` False).

Published figures (Meta's Llama 4 model card): Scout 17B active, 109B total; Maverick 17B
active, 400B total; the totals include the vision encoder, which these text configs do not
describe. Tolerance: 3 % on parameters (the brief's), exact on bytes.
"""

import json
import pathlib

import pytest

from rooflinekit import ModelShape, memory
from rooflinekit.hf_config import count_params

CONFIGS = pathlib.Path(__file__).parent / "data" / "hf_configs"
SCOUT = CONFIGS / "llama-4-scout-17b-16e-instruct.json"
MAVERICK = CONFIGS / "llama-4-maverick-17b-128e-instruct.json"

H, LAYERS, HEADS, KV_HEADS, HEAD_DIM = 5120, 48, 40, 8, 128
EXPERT_WIDTH, DENSE_WIDTH = 8192, 16_384          # intermediate_size, intermediate_size_mlp
VOCAB = 202_048
CHUNK = 8192


def params_by_hand(experts: int, interleave: int):
    """(total, active) parameters of the text model, top-1 routing."""
    attention = H * HEADS * HEAD_DIM + 2 * H * KV_HEADS * HEAD_DIM + HEADS * HEAD_DIM * H
    expert = 3 * H * EXPERT_WIDTH
    moe = experts * expert + expert + experts * H            # experts, shared expert, router
    dense = 3 * H * DENSE_WIDTH
    n_moe = len(range(interleave - 1, LAYERS, interleave))
    total = (LAYERS * attention + n_moe * moe + (LAYERS - n_moe) * dense
             + LAYERS * 2 * H + H + 2 * VOCAB * H)
    active = total - n_moe * (experts - 1) * expert
    return total, active


@pytest.mark.parametrize("path, experts, interleave, card_total", [
    (SCOUT, 16, 1, 109e9),
    (MAVERICK, 128, 2, 400e9),
])
def test_parameters_match_a_hand_count_and_the_model_card(path, experts, interleave,
                                                         card_total):
    config = json.loads(path.read_text())["text_config"]
    assert (config["num_local_experts"], config["interleave_moe_layer_step"]) == \
        (experts, interleave)
    total, active = params_by_hand(experts, interleave)
    parts = count_params(path)
    assert (parts["total"], parts["active"]) == (total, active)
    model = ModelShape.from_hf_config(path)
    assert (model.n_params, model.n_active_params) == (total, active)
    assert total == pytest.approx(card_total, rel=0.03)
    assert active == pytest.approx(17e9, rel=0.03)


def test_maverick_without_its_interleave_would_be_far_off():
    # the MoE interleave read: every layer an MoE layer would put Maverick near +94 %
    config = json.loads(MAVERICK.read_text())
    config["text_config"] = {**config["text_config"], "interleave_moe_layer_step": 1}
    assert count_params(config)["total"] > 1.9 * params_by_hand(128, 2)[0]


def kv_by_hand(context: int) -> int:
    per_token_per_layer = 2 * KV_HEADS * HEAD_DIM * 2          # K and V, bf16
    full, chunked = 12, 36
    return per_token_per_layer * (full * context + chunked * min(context, CHUNK))


@pytest.mark.parametrize("path", [SCOUT, MAVERICK])
@pytest.mark.parametrize("context, expected", [
    (4096, 805_306_368), (32_768, 2_818_572_288), (131_072, 7_650_410_496)])
def test_kv_per_sequence_is_bounded_by_the_chunk(path, context, expected):
    model = ModelShape.from_hf_config(path)
    assert (model.attention_chunk_size, model.sliding_window) == (CHUNK, CHUNK)
    assert (model.n_full_layers, model.n_sliding_layers) == (12, 36)
    assert kv_by_hand(context) == expected
    assert memory.kv_bytes_per_sequence(model, context) == expected


def test_read_as_full_attention_the_kv_would_be_3_4_times_too_large():
    full = 48 * 2 * KV_HEADS * HEAD_DIM * 2 * 131_072
    assert full / kv_by_hand(131_072) == pytest.approx(3.37, abs=0.01)


def test_no_rope_layers_pick_the_full_attention_layers():
    config = json.loads(SCOUT.read_text())
    flags = [1] * LAYERS
    flags[0] = flags[47] = 0                                   # two NoPE (full) layers
    config["text_config"] = {**config["text_config"], "no_rope_layers": flags}
    model = ModelShape.from_hf_config(config)
    assert (model.n_full_layers, model.n_sliding_layers) == (2, 46)


def test_moe_layer_freq_as_a_list_marks_the_moe_layers():
    config = json.loads(MAVERICK.read_text())
    text = {k: v for k, v in config["text_config"].items() if k != "interleave_moe_layer_step"}
    config["text_config"] = {**text, "moe_layer_freq": [i % 2 for i in range(LAYERS)]}
    assert count_params(config)["total"] == params_by_hand(128, 2)[0]


@pytest.mark.parametrize("change, field", [
    ({"no_rope_layers": [1] * 47}, "no_rope_layers"),
    ({"no_rope_layers": [2] * 48}, "no_rope_layers"),
    ({"attention_chunk_size": 0}, "attention_chunk_size"),
    ({"attention_chunk_size": 20_000_000}, "attention_chunk_size"),
    ({"moe_layer_freq": [1] * 47}, "moe_layer_freq"),
    ({"moe_layers": [48]}, "moe_layers"),
    ({"layer_types": ["chunked_attention"] * 48, "attention_chunk_size": None}, "layer_types"),
])
def test_bad_llama4_fields_are_named(change, field):
    config = json.loads(SCOUT.read_text())
    text = {k: v for k, v in {**config["text_config"], **change}.items() if v is not None}
    with pytest.raises(ValueError, match=field):
        ModelShape.from_hf_config({**config, "text_config": text})


def test_chunk_must_be_the_window():
    with pytest.raises(ValueError, match="attention_chunk_size"):
        ModelShape(name="x", n_layers=4, n_heads=4, n_kv_heads=4, head_dim=8, n_params=1e6,
                   sliding_window=16, n_sliding_layers=3, attention_chunk_size=8)


def test_per_kind_kv_layouts_are_read():
    # XiaomiMiMo/MiMo-V2-Flash: hybrid_layer_pattern marks sliding-window layers with 8 KV heads
    # (swa_num_key_value_heads) beside full layers with 4; each kind keeps its own layout
    # (tests/test_models_families_mimo.py), and its attention_chunk_size is not Llama 4's.
    model = ModelShape.from_hf_config(CONFIGS / "mimo-v2-flash.json")
    assert (model.n_kv_heads, model.sliding_n_kv_heads) == (4, 8)
    assert model.attention_chunk_size is None


def test_a_chunk_without_layer_kinds_is_read_for_llama4_only():
    config = json.loads(SCOUT.read_text())
    config["text_config"] = {**config["text_config"], "model_type": "llama"}
    with pytest.raises(ValueError, match="attention_chunk_size"):
        ModelShape.from_hf_config(config)
