"""MiMo-V2-Flash: sliding-window and full attention layers with KV layouts of their own.

Config: ``tests/data/hf_configs/mimo-v2-flash.json`` (source in the README there). Expected
numbers are derived by hand from its fields and the modelling code's module shapes
(``MiMoV2FlashAttention``: q h → H·d_k, k h → H_kv·d_k, v h → H_kv·d_v, o H·d_v → h, no
biases; one attention-sink logit a query head in the sliding-window layers,
``add_swa_attention_sink_bias``):

- ``hybrid_layer_pattern``: 1 marks a sliding-window layer, 0 a full one (the modelling code's
  ``is_swa = hybrid_layer_pattern[i] == 1``): 9 full layers (0, 5, 11, 17, 23, 29, 35, 41,
  47) and 39 windowed ones, ``sliding_window`` 128 tokens.
- Full layers: ``num_key_value_heads`` 4, ``head_dim`` 192 (keys), ``v_head_dim`` 128:
  4 · (192 + 128) · 2 = 2,560 B a token in bf16. Sliding layers: ``swa_num_key_value_heads``
  8, ``swa_head_dim`` 192, ``swa_v_head_dim`` 128: 8 · 320 · 2 = 5,120 B.
- KV of a sequence at C tokens: 9 · 2,560 · C + 39 · 5,120 · min(C, 128).
- MLP: layer 0 dense (``moe_layer_freq`` 0) of width 16,384; 47 MoE layers of 256 experts of
  width 2,048 (top 8) with a router and its ``noaux_tc`` correction bias; no shared expert.

Published (XiaomiMiMo/MiMo-V2-Flash model card): 309B total, 15B active parameters (each
rounded to 1B). Tolerance: 1 % on the total; 3 % on the active count (ours counts the
embedding table, 0.62B); 1 % on KV bytes (the brief's; they agree exactly).
"""

import json
import pathlib

import pytest

from rooflinekit import ModelShape, catalog, memory, roofline
from rooflinekit.hf_config import count_params

CONFIGS = pathlib.Path(__file__).parent / "data" / "hf_configs"
MIMO = CONFIGS / "mimo-v2-flash.json"

H, LAYERS, HEADS, VOCAB = 4096, 48, 64, 152_576
N_FULL, N_SWA, WINDOW = 9, 39, 128
FULL_BYTES = 4 * (192 + 128) * 2                 # 2,560 B a token in a full layer
SWA_BYTES = 8 * (192 + 128) * 2                  # 5,120 B in a sliding-window layer


def kv_by_hand(context):
    return N_FULL * FULL_BYTES * context + N_SWA * SWA_BYTES * min(context, WINDOW)


def params_by_hand():
    """(total, active) parameters."""
    full = H * (HEADS * 192 + 4 * 192 + 4 * 128) + HEADS * 128 * H
    swa = H * (HEADS * 192 + 8 * 192 + 8 * 128) + HEADS * 128 * H + HEADS    # + sinks
    expert = 3 * H * 2048
    moe = 256 * expert + 256 * H + 256              # experts, router, correction bias
    total = (N_FULL * full + N_SWA * swa + 3 * H * 16_384 + 47 * moe
             + LAYERS * 2 * H + H + 2 * VOCAB * H)
    return total, total - 47 * (256 - 8) * expert


def test_the_config_states_two_kv_layouts():
    config = json.loads(MIMO.read_text())
    pattern = config["hybrid_layer_pattern"]
    assert (pattern.count(0), pattern.count(1)) == (N_FULL, N_SWA)
    assert (config["num_key_value_heads"], config["swa_num_key_value_heads"]) == (4, 8)


def test_it_loads_with_each_kinds_kv_layout():
    model = ModelShape.from_hf_config(MIMO)
    assert (model.n_full_layers, model.n_sliding_layers, model.sliding_window) == \
        (N_FULL, N_SWA, WINDOW)
    assert model.attention_chunk_size is None        # its attention_chunk_size is the window
    assert model.kv_bytes_per_token_per_layer == FULL_BYTES
    assert model.sliding_kv_bytes_per_token_per_layer == SWA_BYTES
    assert model.kv_bytes_per_token == N_FULL * FULL_BYTES + N_SWA * SWA_BYTES == 222_720


@pytest.mark.parametrize("context", [4096, 32_768, 131_072])
def test_kv_bytes_per_sequence_by_hand(context):
    model = ModelShape.from_hf_config(MIMO)
    assert memory.kv_bytes_per_sequence(model, context) == \
        pytest.approx(kv_by_hand(context), rel=0.01)
    assert memory.kv_bytes_per_sequence(model, context) == kv_by_hand(context)
    # a decode step reads what the sequence holds
    read = roofline.decode_bytes(model, 1, context) - roofline.decode_bytes(model, 1, 0)
    assert read == pytest.approx(kv_by_hand(context), rel=1e-12)


def test_step_cost_takes_the_full_layers_share_of_bytes():
    model = ModelShape.from_hf_config(MIMO)
    cost = roofline.step_cost_coefficients(model, catalog.gpu("H100-SXM-80GB"))
    share = N_FULL * FULL_BYTES / (N_FULL * FULL_BYTES + N_SWA * SWA_BYTES)
    assert cost.full_attention_fraction == pytest.approx(share, rel=1e-12)
    assert cost.kv_bytes_per_token == N_FULL * FULL_BYTES + N_SWA * SWA_BYTES
    assert cost.sliding_window == WINDOW


def test_max_context_and_concurrency_count_each_kind():
    model = ModelShape.from_hf_config(MIMO)
    gpu = catalog.gpu("H100-SXM-80GB")
    budget = memory.usable_kv_bytes(model, gpu, tp=8)
    # past the window only the full layers grow
    longest = memory.max_context_length(model, gpu, tp=8)
    assert kv_by_hand(longest) <= budget < kv_by_hand(longest + 1)
    assert memory.max_concurrent_sequences(model, gpu, 32_768, tp=8) == \
        int(budget // kv_by_hand(32_768))


def test_parameters_by_hand_and_against_the_model_card():
    total, active = params_by_hand()
    counts = count_params(MIMO)
    assert (counts["total"], counts["active"]) == (total, active)
    assert total == pytest.approx(309e9, rel=0.01)
    assert active == pytest.approx(15e9, rel=0.03)


def test_engine_kv_cache_counts_each_kinds_heads_per_rank():
    model = ModelShape.from_hf_config(MIMO)
    gpu = catalog.gpu("H100-SXM-80GB")
    # tp = 8: a full layer's 4 KV heads are padded to one a rank, the sliding layers' 8 split
    per_rank = N_FULL * 1 * 320 * 2 + N_SWA * 1 * 320 * 2
    assert memory.engine_kv_cache(model, gpu, tp=8, max_model_len=4096)["bytes_per_block"] \
        == per_rank * 16


@pytest.mark.parametrize("change, field", [
    ({"swa_num_key_value_heads": 7}, "swa_num_key_value_heads"),
    ({"swa_num_attention_heads": 32}, "swa_num_attention_heads"),
    ({"hybrid_layer_pattern": [0, 1]}, "hybrid_layer_pattern"),
    ({"hybrid_layer_pattern": [2] * 48}, "hybrid_layer_pattern"),
    ({"swa_head_dim": 0}, "swa_head_dim"),
])
def test_bad_mimo_fields_are_named(change, field):
    with pytest.raises(ValueError, match=field):
        ModelShape.from_hf_config({**json.loads(MIMO.read_text()), **change})


def test_per_kind_fields_are_checked():
    base = dict(name="x", n_layers=4, n_heads=8, n_kv_heads=2, head_dim=16, n_params=1e6)
    with pytest.raises(ValueError, match="sliding_n_kv_heads"):
        ModelShape(**base, sliding_n_kv_heads=4)            # no sliding layers
    with pytest.raises(ValueError, match="sliding_n_kv_heads"):
        ModelShape(**base, sliding_window=8, n_sliding_layers=2, sliding_n_kv_heads=3)
    # an MLA model caches a latent: the sliding layers' KV layout means nothing there, its
    # value heads (what its prefill decompresses to) do, and leave the latent's bytes alone
    with pytest.raises(ValueError, match="sliding_head_dim"):
        ModelShape(**base, kv_lora_rank=64, qk_rope_head_dim=16, sliding_window=8,
                   n_sliding_layers=2, sliding_head_dim=8)
    mla = ModelShape(**base, kv_lora_rank=64, qk_rope_head_dim=16, v_head_dim=8)
    assert mla.kv_bytes_per_token_per_layer == ModelShape(
        **base, kv_lora_rank=64, qk_rope_head_dim=16).kv_bytes_per_token_per_layer
    # the defaults are the full layers' layout: bytes as ever
    alike = ModelShape(**base, sliding_window=8, n_sliding_layers=2)
    assert alike.sliding_kv_bytes_per_token_per_layer == alike.kv_bytes_per_token_per_layer
    assert alike.kv_bytes_per_token == 4 * 2 * 2 * 16 * 2


def test_a_pattern_of_sliding_layers_needs_the_window():
    config = {k: v for k, v in json.loads(MIMO.read_text()).items() if k != "sliding_window"}
    with pytest.raises(ValueError, match="sliding_window"):
        ModelShape.from_hf_config(config)
