"""Jamba: AI21-Jamba-1.5-Mini, counted from its config.json.

The config (``tests/data/hf_configs/ai21-jamba-1.5-mini.json``, source in the README there) is
ai21labs/AI21-Jamba-1.5-Mini's, transcribed field for field from the copy kept in
sdpython/experimental-experiment@04097e3040047505e7cac0c2c9040ff294fdd980:
``experimental_experiment/torch_models/llm_model_helper.py`` (``get_ai21_jamba_15_mini``, a
Python dict citing the Hub file; ``use_mamba_kernels`` is that copy's, which no count reads).
Every expected number below is derived by hand from the config's numbers, the module shapes
being those of transformers' ``modeling_jamba.py``:

- Layer i holds attention when ``i % attn_layer_period == attn_layer_offset`` (8 and 4: layers
  4, 12, 20, 28), a Mamba-1 mixer otherwise (28 layers); its MLP is a mixture of experts when
  ``i % expert_layer_period == expert_layer_offset`` (2 and 1: the 16 odd layers), a dense
  gated MLP otherwise.
- Mamba-1 mixer (``JambaMambaMixer``; Gu and Dao, arXiv:2312.00752), I = ``mamba_expand`` · h:
  ``in_proj`` h → 2·I, a depthwise convolution of kernel K with a bias, ``x_proj``
  I → R + 2·N, ``dt_proj`` R → I with a bias, ``A_log`` I·N, ``D`` I, ``out_proj`` I → h,
  and RMSNorms of dt (R), B and C (N each); R = ``mamba_dt_rank``, N = ``mamba_d_state``.
- Attention: q, k, v, o without bias. MLP and each expert: gate, up and down of
  ``intermediate_size``; a router of E × h weights.
- Two RMSNorms a layer and a final one; untied embedding table and LM head.

Published figures: "Jamba 1.5 Mini has 12B active and 52B total parameters" (the model card,
as the copy in asgaardlab/model-card-reorganization
``verified_model_cards/ai21labs@AI21-Jamba-1.5-Mini/`` quotes it). Tolerance: 3 % on
parameters (the brief's), exact on bytes.
"""

import json
import pathlib

import pytest

from rooflinekit import ModelShape, memory
from rooflinekit.hf_config import count_params

CONFIG = pathlib.Path(__file__).parent / "data" / "hf_configs" / "ai21-jamba-1.5-mini.json"

# the config's numbers
H, LAYERS, VOCAB = 4096, 32, 65_536
HEADS, KV_HEADS, HEAD_DIM = 32, 8, 128          # head dim 4096 / 32
WIDTH = 14_336                                  # intermediate_size
EXPERTS, TOP_K = 16, 2
INNER = 2 * H                                   # mamba_expand 2
STATE, KERNEL, DT_RANK = 16, 4, 256             # mamba_d_state, mamba_d_conv, mamba_dt_rank


def layer_counts():
    """(attention layers, Mamba layers, mixture-of-experts layers)."""
    attention = [i for i in range(LAYERS) if i % 8 == 4]
    moe = [i for i in range(LAYERS) if i % 2 == 1]
    return len(attention), LAYERS - len(attention), len(moe)


def params_by_hand():
    """(total, active) parameters [count], from the module shapes."""
    n_attention, n_mamba, n_moe = layer_counts()
    mamba = (H * 2 * INNER                                    # in_proj
             + INNER * KERNEL + INNER                         # conv1d weight, bias
             + INNER * (DT_RANK + 2 * STATE)                  # x_proj
             + DT_RANK * INNER + INNER                        # dt_proj weight, bias
             + INNER * STATE + INNER                          # A_log, D
             + INNER * H                                      # out_proj
             + DT_RANK + 2 * STATE)                           # dt, B and C layernorms
    attention = H * HEADS * HEAD_DIM + 2 * H * KV_HEADS * HEAD_DIM + HEADS * HEAD_DIM * H
    mlp = 3 * H * WIDTH
    moe = EXPERTS * mlp + EXPERTS * H                         # experts and router
    norms = 2 * LAYERS * H + H
    embeddings = 2 * VOCAB * H
    total = (n_mamba * mamba + n_attention * attention + (LAYERS - n_moe) * mlp + n_moe * moe
             + norms + embeddings)
    active = total - n_moe * (EXPERTS - TOP_K) * mlp
    return total, active


def test_the_layout_is_the_cards():
    # model card / Jamba paper: one attention layer in eight, MoE every other layer
    assert layer_counts() == (4, 28, 16)
    model = ModelShape.from_hf_config(CONFIG)
    assert (model.n_kv_layers, model.n_mamba_layers) == (4, 28)


def test_parameters_match_a_hand_count_and_the_model_card():
    total, active = params_by_hand()
    parts = count_params(CONFIG)
    assert (parts["total"], parts["active"]) == (total, active) == (51_570_323_328,
                                                                    12_110_311_296)
    model = ModelShape.from_hf_config(CONFIG)
    assert (model.n_params, model.n_active_params) == (total, active)
    assert total == pytest.approx(52e9, rel=0.03)            # "52B total"
    assert active == pytest.approx(12e9, rel=0.03)           # "12B active"


def test_parts_add_up():
    parts = count_params(CONFIG)
    n_attention, n_mamba, n_moe = layer_counts()
    assert parts["experts"] == n_moe * EXPERTS * 3 * H * WIDTH
    assert parts["router"] == n_moe * EXPERTS * H
    assert parts["mlp"] == (LAYERS - n_moe) * 3 * H * WIDTH
    assert parts["embedding"] == parts["lm_head"] == VOCAB * H
    assert parts["total"] == sum(v for k, v in parts.items() if k not in ("total", "active",
                                                                           "mtp"))


def state_by_hand():
    """Constant state of one sequence [bytes]: 28 Mamba-1 layers, each an SSM state of I·N
    FP32 values (the config states no mamba_ssm_cache_dtype) and a convolution state of
    (K − 1)·I bf16 values."""
    ssm = INNER * STATE * 4
    convolution = (KERNEL - 1) * INNER * 2
    return 28 * (ssm + convolution)


@pytest.mark.parametrize("context", [4096, 32_768, 131_072])
def test_kv_and_state_per_sequence_match_a_hand_derivation(context):
    model = ModelShape.from_hf_config(CONFIG)
    kv = 4 * 2 * KV_HEADS * HEAD_DIM * 2 * context           # 4 attention layers, K and V, bf16
    assert model.kv_bytes_per_token == 4 * 2 * KV_HEADS * HEAD_DIM * 2 == 16_384
    assert model.state_bytes_per_sequence == state_by_hand() == 16_056_320
    assert memory.kv_bytes_per_sequence(model, context) == kv + state_by_hand()


def test_auto_dt_rank_is_a_sixteenth_of_the_width():
    # JambaConfig's mamba_dt_rank "auto": ceil(h / 16) = 256 for h = 4096, this config's value
    config = json.loads(CONFIG.read_text())
    assert count_params({**config, "mamba_dt_rank": "auto"}) == count_params(config)


@pytest.mark.parametrize("change, error, field", [
    ({"attn_layer_period": 0}, ValueError, "attn_layer_period"),
    ({"attn_layer_offset": 8}, ValueError, "attn_layer_offset"),
    ({"expert_layer_period": 0}, ValueError, "expert_layer_period"),
    ({"expert_layer_offset": 2}, ValueError, "expert_layer_offset"),
    ({"num_experts_per_tok": 17}, ValueError, "num_experts_per_tok"),
    ({"mamba_dt_rank": -1}, ValueError, "mamba_dt_rank"),
    ({"mamba_d_state": None}, ValueError, "mamba_d_state"),
    ({"mamba_conv_bias": "true"}, TypeError, "mamba_conv_bias"),
])
def test_bad_jamba_fields_are_named(change, error, field):
    config = {k: v for k, v in {**json.loads(CONFIG.read_text()), **change}.items()
              if v is not None}
    with pytest.raises(error, match=field):
        count_params(config)


def test_an_absent_attention_offset_is_jambaconfigs_default():
    """transformers' JambaConfig defaults attn_layer_offset to 4: without the field, layers
    4, 12, 20 and 28 of 32 hold attention, as the published config says explicitly."""
    config = json.loads(CONFIG.read_text())
    assert config["attn_layer_offset"] == 4
    without = {k: v for k, v in config.items() if k != "attn_layer_offset"}
    assert count_params(without) == count_params(config)
    # an offset of 8 or more is no layer of an 8-layer period: refused, so 4 is really read
    with pytest.raises(ValueError, match="attn_layer_offset"):
        count_params({**without, "attn_layer_period": 4})
