"""Nemotron 3 Super (LatentMoE) and Nemotron 3.5 Lightning (``layers_block_type``).

Configs: ``tests/data/hf_configs/nemotron-3-super-120b-a12b-fp8.json`` and
``nemotron-3.5-lightning-30b-a3b-nvfp4.json`` (sources in the README there). Every expected
number below is derived by hand from the configs' numbers, the module shapes being those of
NVIDIA's ``modeling_nemotron_h.py`` as tests/test_models_families_nemotron3.py describes them,
plus:

- LatentMoE (``moe_latent_size``): the router reads the full width (E × h weights and an
  E-entry score-correction bias), ``fc1_latent_proj`` (h → latent) and ``fc2_latent_proj``
  (latent → h) surround the routed experts, each an up and a down projection between the
  latent and ``moe_intermediate_size``; the shared expert works at the full width.
- MTP (``num_nextn_predict_layers`` 1, ``mtp_hybrid_override_pattern`` "*E" or
  ``mtp_layers_block_type`` ["attention", "moe"]; SGLang's ``NemotronHMultiTokenPredictor``):
  an attention and an MoE layer, each with its norm, ``enorm``, ``hnorm`` and ``eh_proj``
  (2h → h) before them and a final norm; the embedding table and LM head are shared.
  Counted apart from the totals.

Lightning states its layers as ``layers_block_type`` names instead of Nano's
``hybrid_override_pattern``; read as a plain transformer before, its 52 layers were counted as
52 attention layers with dense MLPs (102B). Its shapes are Nano's, field for field.

Published: Nemotron 3 Super "Total Parameters 120B (12B active)" (NVIDIA's model card) and
"12B active parameters and 120B parameters in total" (Megatron-Bridge's page); Nemotron 3.5
Lightning "30B total (~3B active)" (NVIDIA NeMo Customizer's model page), the figures of its
architecture being Nano's technical report's (31.6B in total, about 3.2B active without the
embeddings). Tolerance: 3 % on parameters, exact on bytes.
"""

import json
import pathlib

import pytest

from rooflinekit import ModelShape, memory
from rooflinekit.hf_config import count_params

CONFIGS = pathlib.Path(__file__).parent / "data" / "hf_configs"
SUPER = CONFIGS / "nemotron-3-super-120b-a12b-fp8.json"
LIGHTNING = CONFIGS / "nemotron-3.5-lightning-30b-a3b-nvfp4.json"
NANO = CONFIGS / "nemotron-3-nano-30b-a3b-bf16.json"
CONTEXTS = (4096, 32_768, 131_072)

# Super's numbers
H, VOCAB = 4096, 131_072
MAMBA_HEADS, MAMBA_HEAD_DIM, GROUPS, STATE, KERNEL = 128, 64, 8, 128, 4
HEADS, KV_HEADS, HEAD_DIM = 32, 2, 128
EXPERTS, TOP_K, EXPERT_WIDTH, LATENT, SHARED_WIDTH = 512, 22, 2688, 1024, 5376
PATTERN = ("MEMEMEM*EMEMEMEM*EMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEM*"
           "EMEMEMEME")


def super_by_hand():
    """(total, active, MTP, routed experts) of Nemotron 3 Super."""
    n_mamba, n_moe, n_attention = PATTERN.count("M"), PATTERN.count("E"), PATTERN.count("*")
    inner = MAMBA_HEADS * MAMBA_HEAD_DIM                                  # 8192
    conv_channels = inner + 2 * GROUPS * STATE                            # 10,240
    mamba = (H * (2 * inner + 2 * GROUPS * STATE + MAMBA_HEADS)          # in_proj
             + conv_channels * KERNEL + conv_channels                     # conv1d, its bias
             + 3 * MAMBA_HEADS + inner + inner * H)                       # dt, A, D; norm; out
    attention = H * HEADS * HEAD_DIM + 2 * H * KV_HEADS * HEAD_DIM + HEADS * HEAD_DIM * H
    expert = 2 * LATENT * EXPERT_WIDTH                                    # up, down in latent
    moe = (EXPERTS * expert
           + 2 * H * LATENT                                               # fc1/fc2_latent_proj
           + 2 * H * SHARED_WIDTH                                         # shared expert
           + EXPERTS * H + EXPERTS)                                       # router and its bias
    total = (n_mamba * mamba + n_attention * attention + n_moe * moe
             + 88 * H + H + 2 * VOCAB * H)                                # norms; table, head
    mtp = (attention + H) + (moe + H) + 2 * H * H + 3 * H
    return total, total - n_moe * (EXPERTS - TOP_K) * expert, mtp, n_moe * EXPERTS * expert


def test_super_layer_mix():
    # 40 Mamba-2, 40 LatentMoE and 8 attention layers
    assert (PATTERN.count("M"), PATTERN.count("E"), PATTERN.count("*")) == (40, 40, 8)
    assert json.loads(SUPER.read_text())["hybrid_override_pattern"] == PATTERN


def test_super_parameters_by_hand_and_against_the_card():
    total, active, mtp, experts = super_by_hand()
    parts = count_params(SUPER)
    assert (parts["total"], parts["active"], parts["mtp"]) == (total, active, mtp)
    model = ModelShape.from_hf_config(SUPER)
    assert (model.n_params, model.n_active_params) == (total, active)
    assert model.expert_params == pytest.approx(experts, rel=1e-12)
    assert (model.n_experts, model.n_experts_per_token) == (EXPERTS, TOP_K)
    # card: 120B total (120.67B counted); 12B active: 12.77B with the input table, 12.23B
    # without it (a looked-up table does no matrix work)
    assert total == pytest.approx(120e9, rel=0.03)
    assert active - VOCAB * H == pytest.approx(12e9, rel=0.03)


@pytest.mark.parametrize("context", CONTEXTS)
def test_super_kv_and_state_by_hand(context):
    model = ModelShape.from_hf_config(SUPER)
    kv_per_token = 8 * 2 * KV_HEADS * HEAD_DIM * 2                       # 8,192 B
    state = 40 * (MAMBA_HEADS * MAMBA_HEAD_DIM * STATE * 4                # FP32 SSM state
                  + (KERNEL - 1) * (MAMBA_HEADS * MAMBA_HEAD_DIM + 2 * GROUPS * STATE) * 2)
    assert (model.kv_bytes_per_token, model.state_bytes_per_sequence) == \
        (kv_per_token, state) == (8192, 170_229_760)
    assert memory.kv_bytes_per_sequence(model, context) == kv_per_token * context + state


def test_lightning_reads_as_nano():
    lightning, nano = json.loads(LIGHTNING.read_text()), json.loads(NANO.read_text())
    marks = {"mamba": "M", "moe": "E", "attention": "*", "mlp": "-"}
    assert "".join(marks[b] for b in lightning["layers_block_type"]) == \
        nano["hybrid_override_pattern"]
    a, b = count_params(LIGHTNING), count_params(NANO)
    assert (a["total"], a["active"]) == (b["total"], b["active"])
    # Nano's hand count (tests/test_models_families_nemotron3.py): 31,577,940,288 in total,
    # 3,580,076,352 active; Nano's report: 31.6B total, 3.2B active without the table
    assert (a["total"], a["active"]) == (31_577_940_288, 3_580_076_352)
    assert a["total"] == pytest.approx(31.6e9, rel=0.03)
    assert a["active"] - 131_072 * 2688 == pytest.approx(3.2e9, rel=0.03)
    m = ModelShape.from_hf_config(LIGHTNING)
    for context in CONTEXTS:          # 6 attention layers of 2 KV heads of 128; 23 Mamba-2
        assert memory.kv_bytes_per_sequence(m, context) == \
            6 * 2 * 2 * 128 * 2 * context + 49_082_368


def test_lightning_mtp_by_hand():
    h, heads, kv, d = 2688, 32, 2, 128
    attention = h * heads * d + 2 * h * kv * d + heads * d * h
    moe = 128 * 2 * h * 1856 + 2 * h * 3712 + 128 * h + 128
    assert count_params(LIGHTNING)["mtp"] == (attention + h) + (moe + h) + 2 * h * h + 3 * h


def _changed(path, **change):
    cfg = {**json.loads(path.read_text()), **change}
    return {k: v for k, v in cfg.items() if v is not None}


@pytest.mark.parametrize("path, change, field", [
    (SUPER, {"moe_latent_size": 8192}, "moe_latent_size"),
    (SUPER, {"moe_latent_size": 0}, "moe_latent_size"),
    (SUPER, {"mtp_hybrid_override_pattern": "*M"}, "mtp_hybrid_override_pattern"),
    (SUPER, {"mtp_hybrid_override_pattern": 3}, "mtp_hybrid_override_pattern"),
    (LIGHTNING, {"layers_block_type": ["mamba", "moe"] * 25 + ["attention"]},
     "layers_block_type"),
    (LIGHTNING, {"layers_block_type": ["mamba", "moe"] * 25 + ["ssm", "attention"]},
     "layers_block_type"),
    (LIGHTNING, {"mtp_layers_block_type": ["attention", "mamba"]}, "mtp_layers_block_type"),
])
def test_bad_fields_are_named(path, change, field):
    with pytest.raises((ValueError, TypeError), match=f"'{field}'"):
        count_params(_changed(path, **change))


# -- Nemotron 3 Ultra: Super's architecture at 8192 wide, its 108 layers as layers_block_type ----
ULTRA = CONFIGS / "nemotron-3-ultra-550b-a55b-bf16.json"


def ultra_by_hand():
    """(total, active, MTP): Super's formulas at Ultra's numbers. The config gives no
    num_hidden_layers; its 108 layers_block_type entries are the layers."""
    h, vocab = 8192, 131_072
    heads, kv, d = 64, 2, 128
    mamba_heads, mamba_dim, groups, state, kernel = 256, 64, 8, 128, 4
    experts, top_k, width, latent, shared = 512, 22, 5120, 2048, 10_240
    inner = mamba_heads * mamba_dim
    conv = inner + 2 * groups * state
    mamba = (h * (2 * inner + 2 * groups * state + mamba_heads) + conv * kernel + conv
             + 3 * mamba_heads + inner + inner * h)
    attention = h * heads * d + 2 * h * kv * d + heads * d * h
    expert = 2 * latent * width
    moe = experts * expert + 2 * h * latent + 2 * h * shared + experts * h + experts
    total = 48 * mamba + 12 * attention + 48 * moe + 108 * h + h + 2 * vocab * h
    mtp = (attention + h) + (moe + h) + 2 * h * h + 3 * h
    return total, total - 48 * (experts - top_k) * expert, mtp


def test_ultra_by_hand_and_against_the_card():
    blocks = json.loads(ULTRA.read_text())["layers_block_type"]
    assert (len(blocks), blocks.count("mamba"), blocks.count("moe"),
            blocks.count("attention")) == (108, 48, 48, 12)
    total, active, mtp = ultra_by_hand()
    parts = count_params(ULTRA)
    assert (parts["total"], parts["active"], parts["mtp"]) == (total, active, mtp)
    # "55B active parameters and 550B parameters in total" (NVIDIA's model page): 549.31B;
    # 56.06B active, 54.98B without the input table. The Hub's safetensors count for the BF16
    # repository, 561B, holds the MTP module too: 560.52B
    assert total == pytest.approx(550e9, rel=0.03)
    assert active - 131_072 * 8192 == pytest.approx(55e9, rel=0.03)
    assert total + mtp == pytest.approx(561e9, rel=0.03)
    m = ModelShape.from_hf_config(ULTRA)
    assert m.n_layers == 108 and m.n_kv_layers == 12 and m.n_mamba_layers == 48
    state = 48 * (256 * 64 * 128 * 4 + (4 - 1) * (256 * 64 + 2 * 8 * 128) * 2)
    for context in CONTEXTS:                       # 12 attention layers of 2 KV heads of 128
        assert memory.kv_bytes_per_sequence(m, context) == \
            12 * 2 * 2 * 128 * 2 * context + state


def test_a_missing_layer_count_is_still_named():
    cfg = {k: v for k, v in json.loads(ULTRA.read_text()).items() if k != "layers_block_type"}
    with pytest.raises(ValueError, match="'num_hidden_layers' is missing"):
        count_params(cfg)
