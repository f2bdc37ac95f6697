"""Mixture-of-experts Nemotron-H: NVIDIA-Nemotron-3-Nano-30B-A3B, counted from its config.json.

The config (``tests/data/hf_configs/nemotron-3-nano-30b-a3b-bf16.json``, source in the README
there) gives a ``hybrid_override_pattern`` of 52 layers: ``M`` Mamba-2, ``E`` mixture of experts,
``*`` attention. Every expected number below is derived by hand from the config's numbers, the
module shapes being those of NVIDIA's ``modeling_nemotron_h.py`` (transformers' ``NemotronH``):

- Mamba-2 mixer (Dao and Gu, arXiv:2405.21060): ``in_proj`` h → 2·I + 2·G·N + H, a depthwise
  convolution of ``I + 2·G·N`` channels with kernel K and a bias, ``dt_bias``, ``A_log``, ``D``
  (H each), a gated RMSNorm of I and ``out_proj`` I → h, with I = H · d_head.
- Attention: q, k, v, o without bias.
- MoE layer: ``n_routed_experts`` experts and ``n_shared_experts`` shared expert, each an up and
  a down projection (ReLU², no gate), a router of E × h weights and an E-entry score-correction
  bias.
- One RMSNorm a layer, a final one; untied embedding table and LM head.

Published figures: the model card ("3.5B active parameters and 30B parameters in total", the
total rounded to the model's name) and NVIDIA's Nemotron 3 Nano technical report as its
public summaries quote it: 31.6B parameters in total, about 3.2B active per token, 3.6B
including the embeddings. Tolerance: 3 % on parameters (the brief's), exact on bytes.
"""

import json
import pathlib

import pytest

from rooflinekit import ModelShape, memory
from rooflinekit.hf_config import count_params

CONFIG = pathlib.Path(__file__).parent / "data" / "hf_configs" / "nemotron-3-nano-30b-a3b-bf16.json"

# the config's numbers
H = 2688                       # hidden_size
VOCAB = 131_072                # vocab_size
MAMBA_HEADS, MAMBA_HEAD_DIM = 64, 64
GROUPS, STATE, KERNEL = 8, 128, 4        # n_groups, ssm_state_size, conv_kernel
HEADS, KV_HEADS, HEAD_DIM = 32, 2, 128
EXPERTS, TOP_K = 128, 6
EXPERT_WIDTH, SHARED_WIDTH = 1856, 3712  # moe_intermediate_size, moe_shared_expert_...
PATTERN = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"


def layer_counts():
    return PATTERN.count("M"), PATTERN.count("E"), PATTERN.count("*")


def params_by_hand():
    """(total, active) parameters of the language model, from the module shapes."""
    n_mamba, n_moe, n_attention = layer_counts()
    inner = MAMBA_HEADS * MAMBA_HEAD_DIM
    conv_channels = inner + 2 * GROUPS * STATE
    mamba = (H * (2 * inner + 2 * GROUPS * STATE + MAMBA_HEADS)      # in_proj
             + conv_channels * KERNEL + conv_channels                 # conv1d weight, bias
             + 3 * MAMBA_HEADS + inner                                # dt_bias, A_log, D; norm
             + inner * H)                                             # out_proj
    attention = H * HEADS * HEAD_DIM + 2 * H * KV_HEADS * HEAD_DIM + HEADS * HEAD_DIM * H
    expert = 2 * H * EXPERT_WIDTH
    moe = EXPERTS * expert + 2 * H * SHARED_WIDTH + EXPERTS * H + EXPERTS
    norms = 52 * H + H
    embeddings = 2 * VOCAB * H                                        # table and LM head
    total = n_mamba * mamba + n_attention * attention + n_moe * moe + norms + embeddings
    active = total - n_moe * (EXPERTS - TOP_K) * expert
    return total, active


def test_the_pattern_is_the_cards_layer_mix():
    # model card: 23 Mamba-2 and 23 MoE layers, 6 attention layers
    assert layer_counts() == (23, 23, 6)
    assert json.loads(CONFIG.read_text())["hybrid_override_pattern"] == PATTERN


def test_parameters_match_a_hand_count_and_the_published_figures():
    total, active = params_by_hand()
    parts = count_params(CONFIG)
    assert (parts["total"], parts["active"]) == (total, active)
    model = ModelShape.from_hf_config(CONFIG)
    assert (model.n_params, model.n_active_params) == (total, active)
    # technical report: 31.6B total; 3.6B active with the embeddings, 3.2B without the input
    # table (a looked-up table does no work); model card: 3.5B active. 3 % each.
    assert total == pytest.approx(31.6e9, rel=0.03)
    assert active == pytest.approx(3.6e9, rel=0.03)
    assert active - VOCAB * H == pytest.approx(3.2e9, rel=0.03)
    assert active == pytest.approx(3.5e9, rel=0.03)


def test_expert_parameters_split_out_in_their_own_group():
    total, active = params_by_hand()
    model = ModelShape.from_hf_config(CONFIG)
    n_moe = layer_counts()[1]
    assert model.n_experts == EXPERTS and model.n_experts_per_token == TOP_K
    assert model.expert_params == pytest.approx(n_moe * EXPERTS * 2 * H * EXPERT_WIDTH,
                                                rel=1e-12)


def state_by_hand():
    """Constant state of one sequence: 23 Mamba-2 layers, SSM state in the config's
    mamba_ssm_cache_dtype float32, convolution state in bf16."""
    inner = MAMBA_HEADS * MAMBA_HEAD_DIM
    ssm = MAMBA_HEADS * MAMBA_HEAD_DIM * STATE * 4
    convolution = (KERNEL - 1) * (inner + 2 * GROUPS * STATE) * 2
    return 23 * (ssm + convolution)


@pytest.mark.parametrize("context", [4096, 32_768, 131_072])
def test_kv_and_state_per_sequence_match_a_hand_derivation(context):
    model = ModelShape.from_hf_config(CONFIG)
    kv = 6 * 2 * KV_HEADS * HEAD_DIM * 2 * context            # 6 attention layers, K and V
    assert model.state_bytes_per_sequence == state_by_hand() == 49_082_368
    assert memory.kv_bytes_per_sequence(model, context) == kv + state_by_hand()
    assert model.n_kv_layers == 6 and model.n_mamba_layers == 23


@pytest.mark.parametrize("change, field", [
    ({"moe_shared_expert_intermediate_size": None}, "moe_shared_expert_intermediate_size"),
    ({"num_experts_per_tok": 129}, "num_experts_per_tok"),
    ({"hybrid_override_pattern": PATTERN[:-1]}, "hybrid_override_pattern"),
])
def test_bad_moe_hybrid_fields_are_named(change, field):
    config = {k: v for k, v in {**json.loads(CONFIG.read_text()), **change}.items()
              if v is not None}
    with pytest.raises(ValueError, match=field):
        count_params(config)
