"""Qwen3.5 (27B dense, 35B-A3B and 397B-A17B MoE) and Qwen3-VL: their published configs.

Configs: ``tests/data/hf_configs/qwen3.5-27b.json``, ``qwen3.5-35b-a3b.json``,
``qwen3.5-397b-a17b.json``, ``qwen3-vl-8b-instruct.json`` and ``qwen3-vl-30b-a3b-instruct.json``
(sources in the README there). Every expected number below is derived by hand from the
configs' numbers, the module shapes being those of transformers' ``Qwen3_5`` / ``Qwen3_5Moe``
(the Qwen3-Next text tower) and ``Qwen3VLVisionModel``:

- Gated attention (every ``full_attention_interval``-th layer): q projects to twice its width
  (the output gate, ``attn_output_gate``), k, v, o without bias, per-head q and k RMSNorms.
- Gated DeltaNet (the ``linear_attention`` layers): ``in_proj_qkv`` h → 2·H_k·d_k + H_v·d_v,
  ``in_proj_z`` h → H_v·d_v, ``in_proj_b`` and ``in_proj_a`` h → H_v, a bias-free depthwise
  convolution of ``2·H_k·d_k + H_v·d_v`` channels and kernel K, ``dt_bias`` and ``A_log``
  (H_v each), a gated RMSNorm of d_v, ``out_proj`` H_v·d_v → h.
- MLP: gate, up, down (dense); or E experts of width I_e, a router of E × h, one shared expert
  of width I_s and its gate (h → 1).
- Two RMSNorms a layer, a final one; untied embedding table and LM head.
- Vision encoder: a biased Conv3d patch embedding (3 · 2 · 16² inputs a channel), learned
  positions, ``depth`` blocks (two LayerNorms, fused biased qkv and output projection, biased
  two-matrix MLP), a patch merger (LayerNorm of the width; 2×2 merged patches through two
  biased matrices to the text width) and one more merger per ``deepstack_visual_indexes``
  entry (its LayerNorm after the merge).
- MTP (``mtp_num_hidden_layers``): ``fc`` 2h → h, three RMSNorms, and a decoder layer of gated
  attention and the model's MLP; counted apart, as the model card's totals do not name it.

KV: only the full-attention layers cache, ``2 · L_full · H_kv · d · 2`` bytes a token (bf16).
Recurrent state a sequence, a Gated DeltaNet layer: ``H_v · d_k · d_v`` FP32 elements
(``mamba_ssm_dtype: float32``) and ``(K − 1) · (2·H_k·d_k + H_v·d_v)`` bf16 convolution state.

Published figures (sources in the README): Qwen3.5-27B 27B parameters; Qwen3.5-35B-A3B 35B in
total and 3B activated; Qwen3.5-397B-A17B 397B in total and 17B activated. Tolerance: 3 % on
parameters (the brief's), exact on bytes.
"""

import json
import pathlib

import pytest

from rooflinekit import memory
from rooflinekit.hf_config import count_params
from rooflinekit.models import model_from_hf_config

CONFIGS = pathlib.Path(__file__).parent / "data" / "hf_configs"
CONTEXTS = (4096, 32_768, 131_072)

VOCAB = 248_320
HEAD_DIM, KEY_HEADS, KEY_DIM, VALUE_DIM, KERNEL = 256, 16, 128, 128, 4
# name: (file, hidden, layers, heads, kv heads, value heads, MLP width or (E, k, I_e, I_s))
SHAPES = {
    "Qwen3.5-27B": ("qwen3.5-27b", 5120, 64, 24, 4, 48, 17_408),
    "Qwen3.5-35B-A3B": ("qwen3.5-35b-a3b", 2048, 40, 16, 2, 32, (256, 8, 512, 512)),
    "Qwen3.5-397B-A17B": ("qwen3.5-397b-a17b", 4096, 60, 32, 2, 64, (512, 10, 1024, 1024)),
}
CARDS = {"Qwen3.5-27B": (27e9, None), "Qwen3.5-35B-A3B": (35e9, 3e9),
         "Qwen3.5-397B-A17B": (397e9, 17e9)}


def vision_by_hand(out, deepstack=0):
    """The 27-block, 1152-wide encoder all these configs share (MLP 4304, 2304 positions)."""
    v, inner = 1152, 4304
    n = 3 * 2 * 16 * 16 * v + v                        # Conv3d weight and bias
    n += 2304 * v                                      # learned positions
    block = 2 * 2 * v + (3 * v * v + 3 * v) + (v * v + v) + (2 * v * inner + inner + v)
    n += 27 * block
    merged = 4 * v                                     # 2 x 2 patches side by side: 4608
    merger = merged * merged + merged + merged * out + out
    n += 2 * v + merger                                # final merger, LayerNorm before merging
    n += deepstack * (2 * merged + merger)             # DeepStack mergers, LayerNorm after
    return n


def text_by_hand(name):
    """(layers' parameters, skipped experts' parameters, one MTP layer, h)."""
    _, h, layers, heads, kv, value_heads, mlp = SHAPES[name]
    attention = (h * 2 * heads * HEAD_DIM + 2 * h * kv * HEAD_DIM + heads * HEAD_DIM * h
                 + 2 * HEAD_DIM)
    keys, values = KEY_HEADS * KEY_DIM, value_heads * VALUE_DIM
    deltanet = (h * (2 * keys + values) + h * values + 2 * h * value_heads
                + (2 * keys + values) * KERNEL + 2 * value_heads + VALUE_DIM + values * h)
    if isinstance(mlp, tuple):
        experts, top_k, width, shared = mlp
        block = experts * 3 * h * width + experts * h + 3 * h * shared + h
        skipped = (experts - top_k) * 3 * h * width
    else:
        block, skipped = 3 * h * mlp, 0
    n_full = layers // 4
    body = n_full * attention + (layers - n_full) * deltanet + layers * (block + 2 * h) + h
    return body, layers * skipped, attention + block + 2 * h, h


def params_by_hand(name):
    """(total, active, MTP)."""
    body, skipped, mtp_layer, h = text_by_hand(name)
    vision = vision_by_hand(out=h)
    total = body + 2 * VOCAB * h + vision
    return total, total - vision - skipped, mtp_layer + 2 * h * h + 3 * h


def model(name):
    return model_from_hf_config(CONFIGS / f"{SHAPES[name][0]}.json", name=name)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_config_reads_as_its_shapes(name):
    _, h, layers, heads, kv, value_heads, mlp = SHAPES[name]
    m = model(name)
    assert (m.n_layers, m.hidden_size, m.n_heads, m.n_kv_heads, m.head_dim) == \
        (layers, h, heads, kv, HEAD_DIM)
    # full_attention_interval 4: one layer in four is attention, the rest Gated DeltaNet
    assert (m.n_attention_layers, m.n_linear_attention_layers) == (layers // 4, 3 * layers // 4)
    assert (m.vocab_size, m.tie_word_embeddings, m.max_context) == (VOCAB, False, 262_144)
    assert (m.bytes_per_param, m.kv_bytes_per_element) == (2, 2)
    if isinstance(mlp, tuple):
        assert (m.n_experts, m.n_experts_per_token, m.intermediate_size) == mlp[:3]


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_kv_and_recurrent_state_by_hand(name):
    _, h, layers, heads, kv, value_heads, mlp = SHAPES[name]
    m = model(name)
    kv_per_token = 2 * (layers // 4) * kv * HEAD_DIM * 2      # 27B: 65,536; 35B: 20,480
    state_per_layer = (value_heads * KEY_DIM * VALUE_DIM * 4             # FP32 recurrent state
                       + (KERNEL - 1) * (2 * KEY_HEADS * KEY_DIM + value_heads * VALUE_DIM) * 2)
    state = (3 * layers // 4) * state_per_layer               # 27B: 48 x 3,207,168
    assert m.kv_bytes_per_token == kv_per_token
    assert m.state_bytes_per_sequence == state
    for context in CONTEXTS:
        # a sequence holds its tokens' KV and, once, the Gated DeltaNet layers' state
        assert memory.kv_bytes_per_sequence(m, context) == kv_per_token * context + state
    assert {"Qwen3.5-27B": (65_536, 153_944_064), "Qwen3.5-35B-A3B": (20_480, 64_389_120),
            "Qwen3.5-397B-A17B": (30_720, 192_061_440)}[name] == (kv_per_token, state)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_parameters_by_hand_and_against_the_model_card(name):
    total, active, mtp = params_by_hand(name)
    counts = count_params(CONFIGS / f"{SHAPES[name][0]}.json")
    assert (counts["total"], counts["active"], counts["mtp"]) == (total, active, mtp)
    assert counts["vision"] == vision_by_hand(out=SHAPES[name][1])
    m = model(name)
    assert (m.n_params, m.n_active_params) == (total, active)
    card_total, card_active = CARDS[name]
    assert total == pytest.approx(card_total, rel=0.03)      # the vision encoder included
    if name == "Qwen3.5-35B-A3B":
        # "3B activated": 3.46B with the input table, 2.95B without it (a looked-up table does
        # no matrix work); the card's round figure is the second within 3 %
        assert active - VOCAB * SHAPES[name][1] == pytest.approx(card_active, rel=0.03)
    elif card_active is not None:
        assert active == pytest.approx(card_active, rel=0.03)    # 397B: 17.35B


def test_the_27b_weights_in_bf16():
    # every parameter at 2 bytes (bf16): the vision encoder included, the MTP layer not
    total, _, _ = params_by_hand("Qwen3.5-27B")
    assert model("Qwen3.5-27B").weight_bytes == 2 * total


# -- Qwen3-VL: the same encoder, with DeepStack mergers, beside a Qwen3 (MoE) text model -------
VL = {  # name: (file, hidden, layers, heads, kv heads, MLP width or (E, k, I_e))
    "Qwen3-VL-8B-Instruct": ("qwen3-vl-8b-instruct", 4096, 36, 32, 8, 12_288),
    "Qwen3-VL-30B-A3B-Instruct": ("qwen3-vl-30b-a3b-instruct", 2048, 48, 32, 4, (128, 8, 768)),
}


@pytest.mark.parametrize("name", sorted(VL))
def test_qwen3_vl_by_hand(name):
    file, h, layers, heads, kv, mlp = VL[name]
    vocab, d = 151_936, 128
    # Qwen3 attention: q, k, v, o without bias, per-head q and k RMSNorms
    attention = h * (heads + 2 * kv) * d + heads * d * h + 2 * d
    if isinstance(mlp, tuple):
        experts, top_k, width = mlp
        block, skipped = experts * 3 * h * width + experts * h, (experts - top_k) * 3 * h * width
    else:
        block, skipped = 3 * h * mlp, 0
    vision = vision_by_hand(out=h, deepstack=3)              # deepstack_visual_indexes [8, 16, 24]
    total = layers * (attention + block + 2 * h) + h + 2 * vocab * h + vision
    counts = count_params(CONFIGS / f"{file}.json")
    assert (counts["vision"], counts["total"], counts["active"]) == \
        (vision, total, total - vision - layers * skipped)
    m = model_from_hf_config(CONFIGS / f"{file}.json")
    assert m.kv_bytes_per_token == 2 * layers * kv * d * 2
    for context in CONTEXTS:
        assert memory.kv_bytes_per_sequence(m, context) == 2 * layers * kv * d * 2 * context


# -- bad input -----------------------------------------------------------------------------------
def _config(file, **vision):
    """The config with vision_config fields changed (None: left out)."""
    cfg = json.loads((CONFIGS / f"{file}.json").read_text())
    merged = {**cfg["vision_config"], **vision}
    cfg["vision_config"] = {k: v for k, v in merged.items() if v is not None}
    return cfg


@pytest.mark.parametrize("change, field", [
    ({"depth": 0}, "vision_config.depth"),
    ({"depth": "27"}, "vision_config.depth"),
    ({"hidden_size": None}, "vision_config.hidden_size"),
    ({"num_position_embeddings": None}, "vision_config.num_position_embeddings"),
    ({"deepstack_visual_indexes": [8, 27]}, "vision_config.deepstack_visual_indexes"),
    ({"deepstack_visual_indexes": 8}, "vision_config.deepstack_visual_indexes"),
    ({"spatial_merge_size": 0}, "vision_config.spatial_merge_size"),
])
def test_a_bad_vision_config_names_the_field(change, field):
    cfg = _config("qwen3-vl-8b-instruct", **change)
    with pytest.raises((ValueError, TypeError), match=field.replace(".", r"\.")):
        count_params(cfg)


def test_a_bad_mtp_count_names_the_field():
    cfg = json.loads((CONFIGS / "qwen3.5-27b.json").read_text())
    cfg["text_config"]["mtp_num_hidden_layers"] = -1
    with pytest.raises(ValueError, match="mtp_num_hidden_layers"):
        count_params(cfg)


@pytest.mark.parametrize("name", ["qwen3.5-35b-a3b", "qwen3-vl-30b-a3b-instruct"])
def test_an_moe_models_encoders_are_not_counted_as_experts(name):
    """A multimodal MoE model holds its vision encoder in n_params, out of n_active_params: it
    is neither active nor a routed expert (n_aside_params), so the experts' parameters are the
    count's own, exactly, where (n_params − n_active_params) · E / (E − k) would add the
    encoder's share to them (1.4–2.0 % too many expert parameters)."""
    path = CONFIGS / f"{name}.json"
    m, counts = model_from_hf_config(path), count_params(path)
    assert counts["vision"] > 0
    assert m.n_aside_params == counts["vision"] + counts["audio"]
    assert m.expert_params == counts["experts"]
    e, k = m.n_experts, m.n_experts_per_token
    overstated = (m.n_params - m.n_active_params) * e / (e - k)
    assert 1.013 < overstated / counts["experts"] < 1.021
    # the routed parameters a step touches exclude it too: one expert's share of a layer set
    from rooflinekit import parallel
    assert float(parallel.expert_params(m.n_params, m.n_active_params, e, k,
                                        m.n_aside_params)) == counts["experts"]


def test_parameters_aside_cannot_exceed_the_inactive_ones():
    m = model_from_hf_config(CONFIGS / "qwen3.5-35b-a3b.json")
    with pytest.raises(ValueError, match="n_aside_params"):
        m.replace(n_aside_params=m.n_params - m.n_active_params + 1)
    with pytest.raises(ValueError, match="n_aside_params"):
        m.replace(n_aside_params=-1.0)
