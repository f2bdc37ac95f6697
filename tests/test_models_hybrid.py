"""Hybrid attention/recurrent models: KV only in the attention layers, plus a constant state.

Expected bytes are derived by hand in each test from the numbers of the published config.json
(``tests/data/hf_configs/``, sources in ``README.md`` there):

- Gated DeltaNet layer (Qwen3-Next; Yang et al., arXiv:2412.06464; transformers'
  ``Qwen3NextGatedDeltaNet``): a recurrent state of ``linear_num_value_heads ×
  linear_key_head_dim × linear_value_head_dim`` elements and a causal-convolution state of
  ``(linear_conv_kernel_dim − 1) × conv_dim`` with ``conv_dim = 2 · key_heads · key_dim +
  value_heads · value_dim``.
- Mamba-2 layer (Nemotron-H; Dao and Gu, arXiv:2405.21060; transformers' ``NemotronHMamba2Mixer``):
  an SSM state of ``mamba_num_heads × mamba_head_dim × ssm_state_size`` and a convolution state of
  ``(conv_kernel − 1) × (mamba_num_heads · mamba_head_dim + 2 · n_groups · ssm_state_size)``.

The recurrent (SSM) states are counted in FP32, the configs stating no ``mamba_ssm_cache_dtype``;
the convolution states and the KV cache in the checkpoint's bf16. Tolerance: 1% (the brief's);
the derivations agree to rounding.
"""

import json
import pathlib

import pytest

from rooflinekit import GPU, ModelShape, memory
from rooflinekit.hf_config import count_params

CONFIGS = pathlib.Path(__file__).parent / "data" / "hf_configs"
CONTEXTS = (4096, 32_768, 131_072)


def cfg(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text())


# Qwen/Qwen3-Next-80B-A3B-Instruct model card: 80B parameters in total, 3B activated.
QWEN3_NEXT = dict(n_params=80e9, n_active_params=3e9)
# nvidia/Nemotron-H-8B-Base-8K model card: 8B parameters.
NEMOTRON_H = dict(n_params=8e9)


def qwen3_next_by_hand(context: int) -> float:
    # 48 layers, full_attention_interval 4: layers 3, 7, ..., 47 are full attention (12), the
    # other 36 Gated DeltaNet; 2 KV heads of 256; 16 key heads and 32 value heads of 128;
    # convolution kernel 4.
    kv = 12 * 2 * 2 * 256 * 2 * context                       # K and V, bf16
    recurrent = 32 * 128 * 128 * 4                             # fp32
    convolution = (4 - 1) * (2 * 16 * 128 + 32 * 128) * 2     # bf16
    return kv + 36 * (recurrent + convolution)


def nemotron_h_by_hand(context: int) -> float:
    # hybrid_override_pattern of 52: 24 'M' (Mamba-2), 4 '*' (attention), 24 '-' (MLP);
    # 8 KV heads of 128 (attention_head_dim); 128 Mamba heads of 64, state 128, 8 groups,
    # convolution kernel 4.
    kv = 4 * 2 * 8 * 128 * 2 * context
    ssm = 128 * 64 * 128 * 4
    convolution = (4 - 1) * (128 * 64 + 2 * 8 * 128) * 2
    return kv + 24 * (ssm + convolution)


@pytest.mark.parametrize("context", CONTEXTS)
def test_qwen3_next_kv_and_state_by_hand(context):
    m = ModelShape.from_hf_config(CONFIGS / "qwen3-next-80b-a3b-instruct.json", **QWEN3_NEXT)
    assert (m.n_attention_layers, m.n_linear_attention_layers, m.n_mamba_layers) == (12, 36, 0)
    assert float(memory.kv_bytes_per_sequence(m, context)) == pytest.approx(
        qwen3_next_by_hand(context), rel=0.01)


@pytest.mark.parametrize("context", CONTEXTS)
def test_nemotron_h_kv_and_state_by_hand(context):
    m = ModelShape.from_hf_config(CONFIGS / "nemotron-h-8b-base-8k.json", **NEMOTRON_H)
    assert (m.n_attention_layers, m.n_linear_attention_layers, m.n_mamba_layers) == (4, 0, 24)
    assert m.head_dim == 128
    assert float(memory.kv_bytes_per_sequence(m, context)) == pytest.approx(
        nemotron_h_by_hand(context), rel=0.01)


def test_state_is_constant_and_kv_counts_attention_layers_only():
    m = ModelShape.from_hf_config(CONFIGS / "qwen3-next-80b-a3b-instruct.json", **QWEN3_NEXT)
    state = float(memory.recurrent_state_bytes(m))
    assert state == qwen3_next_by_hand(0) == m.state_bytes_per_sequence
    assert m.kv_bytes_per_token == 12 * 2 * 2 * 256 * 2
    assert float(memory.kv_bytes_per_sequence(m, 0)) == state


def test_layer_types_spelling_reads_the_same():
    c = cfg("qwen3-next-80b-a3b-instruct")
    del c["full_attention_interval"]
    c["layer_types"] = (["linear_attention"] * 3 + ["full_attention"]) * 12
    a = ModelShape.from_hf_config(c, **QWEN3_NEXT)
    b = ModelShape.from_hf_config(CONFIGS / "qwen3-next-80b-a3b-instruct.json", **QWEN3_NEXT)
    assert (a.kv_bytes_per_token, a.state_bytes_per_sequence) == (b.kv_bytes_per_token,
                                                                  b.state_bytes_per_sequence)


def test_config_ssm_dtype_is_used():
    c = dict(cfg("nemotron-h-8b-base-8k"), mamba_ssm_cache_dtype="bfloat16")
    m = ModelShape.from_hf_config(c, **NEMOTRON_H)
    assert m.state_bytes_per_sequence == 24 * (128 * 64 * 128 * 2
                                               + 3 * (128 * 64 + 2 * 8 * 128) * 2)


def test_jamba_period_and_offset():
    # Jamba's layout: attention at layers i with i % 8 == 4, Mamba-1 elsewhere
    c = dict(cfg("mistral-7b-v0.1"), num_hidden_layers=32, attn_layer_period=8,
             attn_layer_offset=4, mamba_d_state=16, mamba_d_conv=4, mamba_expand=2,
             sliding_window=None, model_type="jamba")
    m = ModelShape.from_hf_config(c, n_params=52e9)
    assert (m.n_attention_layers, m.n_mamba_layers) == (4, 28)
    inner = 2 * 4096
    assert m.state_bytes_per_sequence == 28 * (inner * 16 * 4 + 3 * inner * 2)


def test_falcon_h1_mixes_mamba_beside_attention_in_every_layer():
    # Falcon-H1's field spellings (transformers' FalconH1Config) on a Llama-shaped config
    c = dict(cfg("llama-3.1-8b"), model_type="falcon_h1", mamba_n_heads=48, mamba_d_head=64,
             mamba_d_state=256, mamba_n_groups=1, mamba_d_conv=4, mamba_d_ssm=3072)
    # counted now: the Llama-shaped count plus a Mamba-2 mixer a layer (I = 48 * 64, one
    # group, state 256, kernel 4, a biased convolution, no gated norm: mamba_rms_norm false)
    inner, conv_dim = 48 * 64, 48 * 64 + 2 * 256
    mamba = 4096 * (2 * inner + 2 * 256 + 48) + conv_dim * 4 + conv_dim + 3 * 48 + inner * 4096
    llama = ModelShape.from_hf_config(cfg("llama-3.1-8b"))
    assert ModelShape.from_hf_config(c).n_params == llama.n_params + 32 * mamba
    m = ModelShape.from_hf_config(c, n_params=8e9)
    assert (m.n_attention_layers, m.n_mamba_layers) == (32, 32)
    assert m.kv_bytes_per_token == 32 * 2 * 8 * 128 * 2
    assert m.state_bytes_per_sequence == 32 * (48 * 64 * 256 * 4
                                               + 3 * (48 * 64 + 2 * 1 * 256) * 2)


def test_hybrid_concurrency_counts_the_state_once_a_sequence():
    m = ModelShape.from_hf_config(CONFIGS / "nemotron-h-8b-base-8k.json", **NEMOTRON_H)
    gpu = GPU("g", memory_bytes=80e9, hbm_bandwidth=3e12, peak_flops=1e15)
    budget = (80e9 - 8e9 * 2) * (1 - 0.1)
    per_sequence = nemotron_h_by_hand(8192)
    assert int(memory.max_concurrent_sequences(m, gpu, 8192)) == int(budget // per_sequence)
    # one sequence: the state first, then tokens at the attention layers' rate
    assert int(memory.max_context_length(m, gpu)) == int(
        (budget - nemotron_h_by_hand(0)) // (4 * 2 * 8 * 128 * 2))


def test_qwen3_next_parameters_by_hand():
    h, vocab, layers = 2048, 151_936, 48
    moe = 512 * 3 * h * 512 + (3 * h * 512 + h) + 512 * h     # experts, shared + gate, router
    attention = h * (2 * 16 * 256 + 2 * 2 * 256) + 16 * 256 * h + 2 * 256   # gated q, k, v, o
    keys, values = 16 * 128, 32 * 128
    deltanet = (h * (2 * keys + 2 * values) + h * 2 * 32 + (2 * keys + values) * 4
                + 2 * 32 + 128 + values * h)
    total = layers * moe + 12 * attention + 36 * deltanet + layers * 2 * h + h + 2 * vocab * h
    active = total - layers * (512 - 10) * 3 * h * 512
    m = ModelShape.from_hf_config(CONFIGS / "qwen3-next-80b-a3b-instruct.json")
    assert (m.n_params, m.n_active_params) == (total, active)
    assert m.n_params == pytest.approx(QWEN3_NEXT["n_params"], rel=0.01)   # "80B in total"


def test_nemotron_h_parameters_by_hand():
    h, vocab, inner, groups, state, heads = 4096, 131_072, 128 * 64, 8, 128, 128
    conv_dim = inner + 2 * groups * state
    mamba = (h * (2 * inner + 2 * groups * state + heads) + conv_dim * 4 + conv_dim
             + 3 * heads + inner + inner * h)
    attention = h * (4096 + 2 * 1024) + 4096 * h
    mlp = 2 * h * 21_504
    total = 24 * mamba + 4 * attention + 24 * mlp + 52 * h + h + 2 * vocab * h
    m = ModelShape.from_hf_config(CONFIGS / "nemotron-h-8b-base-8k.json")
    assert m.n_params == m.n_active_params == total
    # the model card's 8B, stated to one significant figure
    assert m.n_params == pytest.approx(NEMOTRON_H["n_params"], rel=0.02)


def test_counting_an_unsupported_hybrid_is_refused_until_given_n_params():
    # Jamba itself is counted now (tests/test_models_families_jamba.py); its layout under a
    # model_type with no counter of its own is still refused
    unknown = dict(cfg("mistral-7b-v0.1"), attn_layer_period=8, attn_layer_offset=4,
                   mamba_d_state=16, sliding_window=None, model_type="zamba")
    with pytest.raises(ValueError, match="hybrid.*n_params"):
        ModelShape.from_hf_config(unknown)
    assert ModelShape.from_hf_config(unknown, n_params=7e9).n_mamba_layers == 28
    # MoE Nemotron-H is counted now (tests/test_models_families_nemotron3.py); "E" layers in a
    # model without experts are still refused
    experts_missing = dict(cfg("nemotron-h-8b-base-8k"), hybrid_override_pattern="ME" * 24 + "*E*E")
    with pytest.raises(ValueError, match="hybrid"):
        count_params(experts_missing)


@pytest.mark.parametrize("change, error, field", [
    ({"hybrid_override_pattern": "M-M*"}, ValueError, "hybrid_override_pattern"),
    ({"hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-MX"},
     ValueError, "hybrid_override_pattern"),
    ({"hybrid_override_pattern": 52}, TypeError, "hybrid_override_pattern"),
    ({"hybrid_override_pattern": "M" * 52}, ValueError, "no layer holds attention"),
    ({"mamba_num_heads": None, "mamba_n_heads": "128"}, TypeError, "mamba_n_heads"),
    ({"ssm_state_size": None}, ValueError, "mamba_d_state"),
    ({"mamba_ssm_cache_dtype": "float7"}, ValueError, "mamba_ssm_cache_dtype"),
])
def test_bad_hybrid_fields_are_named(change, error, field):
    with pytest.raises(error, match=field):
        ModelShape.from_hf_config(dict(cfg("nemotron-h-8b-base-8k"), **change), **NEMOTRON_H)


@pytest.mark.parametrize("layer_types, error", [
    (["linear_attention"] * 47, ValueError),                   # not one a layer
    (["linear_attention", "retention"] * 24, ValueError),      # an unknown kind
])
def test_bad_layer_types_are_named(layer_types, error):
    c = dict(cfg("qwen3-next-80b-a3b-instruct"), layer_types=layer_types)
    with pytest.raises(error, match="layer_types"):
        ModelShape.from_hf_config(c, **QWEN3_NEXT)


def test_model_shape_checks_the_hybrid_fields():
    base = dict(name="m", n_layers=4, n_heads=4, n_kv_heads=2, head_dim=8, n_params=1e9)
    with pytest.raises(ValueError, match="n_attention_layers"):
        ModelShape(**base, n_attention_layers=5)
    with pytest.raises(ValueError, match="n_attention_layers"):
        ModelShape(**base, n_attention_layers=0)
    with pytest.raises(ValueError, match="state_bytes_per_sequence"):
        ModelShape(**base, n_mamba_layers=2, state_bytes_per_sequence=-1)
    with pytest.raises(ValueError, match="recurrent layers"):
        ModelShape(**base, state_bytes_per_sequence=1e6)
    m = ModelShape(**base, n_attention_layers=1, n_mamba_layers=3, state_bytes_per_sequence=1e6)
    assert m.is_hybrid and m.kv_bytes_per_token == 1 * 2 * 2 * 8 * 2
    assert ModelShape(**base).n_attention_layers is None and ModelShape(**base).n_kv_layers == 4
    assert float(memory.kv_bytes_per_sequence(m, 10)) == 10 * 64 + 1e6
