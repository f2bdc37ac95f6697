"""Gemma 4 (26B-A4B mixture of experts, 31B dense): their published configs.

Configs: ``tests/data/hf_configs/gemma-4-26b-a4b.json`` and ``gemma-4-31b-it-nvfp4.json``
(sources in the README there). Every expected number below is derived by hand from the
configs' numbers, the module shapes being those of transformers' ``modeling_gemma4.py``:

- Sliding-window layers (``layer_types``, window 1024): q (h → H·256), k and v
  (h → H_kv·256), o, per-head q and k RMSNorms (256 each; the v norm has no weight).
- Full-attention layers: ``global_head_dim`` 512 and, with ``attention_k_eq_v``,
  ``num_global_key_value_heads`` KV heads whose values are the key projection (no v_proj);
  the cache still holds K and V (``past_key_values.update(key_states, value_states)``).
- Every layer: a gated MLP of ``intermediate_size`` and four RMSNorms; with
  ``enable_moe_block`` beside it ``num_experts`` experts (gate, up, down of
  ``moe_intermediate_size``), a router (E × h weights, a scale of h, a per-expert scale of E)
  and three more RMSNorms. A final RMSNorm; the LM head tied to the embedding table.
- Vision encoder (``gemma4_vision``): a bias-free patch projection (3 · 16² → 1152), an x and a
  y table of 10,240 positions, 27 layers (q, k, v, o of 16 heads of 72 without bias, q and k
  norms of 72, a gated MLP of 4304, four RMSNorms) and ``embed_vision`` (1152 → text width;
  its norm has no weight). The ``layer_scalar`` and ``std_bias``/``std_scale`` buffers are no
  parameters and are not counted.

Published: Gemma 4 26B A4B "25.2B" parameters, "3.8B" active, a vision encoder of "~550M"
(Google's model details, as the OpenExplorer/gemma-4-26B-A4B-it card quotes them; the language
model's 25.2B); Gemma 4 31B "Total Parameters: 30.7B" (NVIDIA's Gemma-4-31B-IT model pages), a
"~550M" vision encoder. The figures are the language models': the tests compare them with the
total less the vision encoder. Tolerance: 3 % on parameters (5 % on the "~550M"), exact on
bytes.
"""

import json
import pathlib

import pytest

from rooflinekit import memory
from rooflinekit.hf_config import count_params
from rooflinekit.models import model_from_hf_config

CONFIGS = pathlib.Path(__file__).parent / "data" / "hf_configs"
CONTEXTS = (4096, 32_768, 131_072)
VOCAB, WINDOW, SLIDING_DIM, FULL_DIM = 262_144, 1024, 256, 512

# name: (file, hidden, layers, heads, sliding KV heads, full KV heads, MLP, (E, k, I_e) or None)
SHAPES = {
    "Gemma-4-26B-A4B": ("gemma-4-26b-a4b", 2816, 30, 16, 8, 2, 2112, (128, 8, 704)),
    "Gemma-4-31B": ("gemma-4-31b-it-nvfp4", 5376, 60, 32, 16, 4, 21_504, None),
}
CARDS = {"Gemma-4-26B-A4B": (25.2e9, 3.8e9), "Gemma-4-31B": (30.7e9, None)}


def vision_by_hand(text_hidden):
    h, inner, heads, d = 1152, 4304, 16, 72
    n = 3 * 16 * 16 * h + 2 * 10_240 * h                     # patch projection, x/y positions
    layer = (h * 3 * heads * d + heads * d * h                # q, k, v (16 KV heads), o
             + 2 * d + 3 * h * inner + 4 * h)                 # q/k norms, gated MLP, norms
    return n + 27 * layer + h * text_hidden                   # embed_vision


def params_by_hand(name):
    """(total, active, vision)."""
    _, h, layers, heads, kv, full_kv, mlp, moe = SHAPES[name]
    n_full = layers // 6                                       # every 6th layer is global
    sliding = (h * (heads + 2 * kv) * SLIDING_DIM + heads * SLIDING_DIM * h
               + 2 * SLIDING_DIM)
    full = (h * (heads + full_kv) * FULL_DIM + heads * FULL_DIM * h    # q, k; no v (k = v)
            + 2 * FULL_DIM)
    layer = 3 * h * mlp + 4 * h
    skipped = 0
    if moe:
        experts, top_k, width = moe
        layer += experts * 3 * h * width + experts * h + h + experts + 3 * h
        skipped = layers * (experts - top_k) * 3 * h * width
    vision = vision_by_hand(h)
    total = (n_full * full + (layers - n_full) * sliding + layers * layer + h
             + VOCAB * h + vision)                              # tied LM head
    return total, total - vision - skipped, vision


def model(name):
    return model_from_hf_config(CONFIGS / f"{SHAPES[name][0]}.json", name=name)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_config_reads_as_its_shapes(name):
    _, h, layers, heads, kv, full_kv, mlp, moe = SHAPES[name]
    m = model(name)
    assert (m.n_layers, m.hidden_size, m.n_heads) == (layers, h, heads)
    assert (m.n_kv_heads, m.head_dim) == (full_kv, FULL_DIM)            # full layers
    assert (m.sliding_n_kv_heads, m.sliding_head_dim) == (kv, SLIDING_DIM)
    assert (m.sliding_window, m.n_sliding_layers) == (WINDOW, layers - layers // 6)
    assert (m.vocab_size, m.tie_word_embeddings, m.max_context) == (VOCAB, True, 262_144)
    if moe:
        assert (m.n_experts, m.n_experts_per_token, m.intermediate_size) == moe
    else:
        assert (m.n_experts, m.intermediate_size) == (1, mlp)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_parameters_by_hand_and_against_the_model_card(name):
    total, active, vision = params_by_hand(name)
    counts = count_params(CONFIGS / f"{SHAPES[name][0]}.json")
    assert (counts["total"], counts["active"], counts["vision"]) == (total, active, vision)
    m = model(name)
    assert (m.n_params, m.n_active_params) == (total, active)
    card_total, card_active = CARDS[name]
    assert total - vision == pytest.approx(card_total, rel=0.03)    # the language model
    # the 26B's quoted breakdown puts the encoder inside its 25.2B: within 3 % that way too
    assert total == pytest.approx(card_total, rel=0.03)
    assert vision == pytest.approx(550e6, rel=0.05)                 # "~550M"
    if card_active is not None:
        assert active == pytest.approx(card_active, rel=0.03)


@pytest.mark.parametrize("name", sorted(SHAPES))
@pytest.mark.parametrize("context", CONTEXTS)
def test_kv_bytes_by_hand(name, context):
    _, h, layers, heads, kv, full_kv, mlp, moe = SHAPES[name]
    n_full = layers // 6
    full = 2 * full_kv * FULL_DIM * 2                     # K and V, bf16: 26B 4,096 B a token
    sliding = 2 * kv * SLIDING_DIM * 2                    # 26B 8,192 B a token, 1,024 at most
    m = model(name)
    assert m.kv_bytes_per_token == n_full * full + (layers - n_full) * sliding
    assert memory.kv_bytes_per_sequence(m, context) == \
        n_full * full * context + (layers - n_full) * sliding * min(context, WINDOW)


def _changed(name, vision=None, **text):
    cfg = json.loads((CONFIGS / f"{SHAPES[name][0]}.json").read_text())
    cfg["text_config"] = {k: v for k, v in {**cfg["text_config"], **text}.items()
                          if v is not None}
    if vision is not None:
        cfg["vision_config"] = {k: v for k, v in {**cfg["vision_config"], **vision}.items()
                                if v is not None}
    return cfg


@pytest.mark.parametrize("change, field", [
    ({"num_kv_shared_layers": 10}, "num_kv_shared_layers"),
    ({"hidden_size_per_layer_input": 256}, "hidden_size_per_layer_input"),
    ({"num_global_key_value_heads": 3}, "num_global_key_value_heads"),
    ({"global_head_dim": 0}, "global_head_dim"),
    ({"vision": {"position_embedding_size": None}}, "vision_config.position_embedding_size"),
    ({"vision": {"num_hidden_layers": -1}}, "vision_config.num_hidden_layers"),
])
def test_bad_fields_are_named(change, field):
    cfg = _changed("Gemma-4-26B-A4B", **change)
    with pytest.raises((ValueError, TypeError), match=field.replace(".", r"\.")):
        count_params(cfg)
