"""ModelOpt checkpoints: static per-tensor FP8 without a quant_method, and MIXED_PRECISION.

Configs: ``tests/data/hf_configs/qwen3-32b-fp8-static-pertensor.json`` (a ``quantization_config``
that is ModelOpt's own: ``quant_algo`` FP8, ``ignore`` [lm_head], no ``quant_method``) and
``qwen3.6-27b-nvfp4.json`` (NVIDIA's Qwen3.6-27B-NVFP4: ``quant_algo`` MIXED_PRECISION, each
quantized module's format in ``quantized_layers``: the MLPs and the LM head in W4A16_NVFP4,
attention and the Gated DeltaNet projections in FP8, the rest 16-bit). Sources in the README
there.

Expected bytes are derived by hand, module by module, from the configs' numbers:

- Qwen3-32B (tests/test_catalog.py's hand count of its shapes): every linear layer of the
  decoder in FP8 (1 byte, one scale per tensor, not counted), the norms, the embedding table
  and the LM head (``ignore``) in bf16. The reader gives a layer's q/k norms its attention's
  format: 64 · 2 · 128 weights, 16 kB of 34 GB; 1e-6 relative.
- Qwen3.6-27B: Qwen3.5-27B's shapes (tests/test_models_families_qwen3_5.py; the text fields
  agree but for rotary and token ids), NVFP4 at (4 + 8/16) / 8 = 0.5625 bytes a weight, FP8 at
  1, bf16 at 2. The reader gives each layer's whole token mixer the format its main
  projections have (in_proj_b/a, the convolution, dt_bias, A_log and the norms, about 26M
  weights, go at FP8 instead of bf16): 0.5 % relative.
"""

import json
import pathlib

import pytest

from rooflinekit.hf_config import count_params
from rooflinekit.models import model_from_hf_config

CONFIGS = pathlib.Path(__file__).parent / "data" / "hf_configs"
NVFP4, FP8, BF16 = (4 + 8 / 16) / 8, 1.0, 2.0


def test_static_per_tensor_fp8_reads_as_modelopt():
    h, layers, heads, kv, d, inner, vocab = 5120, 64, 64, 8, 128, 25_600, 151_936
    linear = layers * (h * (heads + 2 * kv) * d + heads * d * h + 3 * h * inner)
    qk_norms = layers * 2 * d
    norms = layers * 2 * h + h
    by_hand = linear * FP8 + (qk_norms + norms) * BF16 + 2 * vocab * h * BF16
    m = model_from_hf_config(CONFIGS / "qwen3-32b-fp8-static-pertensor.json")
    assert m.bytes_per_param == 1.0 and m.embedding_bytes_per_param == BF16
    assert m.n_params == linear + qk_norms + norms + 2 * vocab * h == 32_762_123_264
    assert m.weight_bytes == pytest.approx(by_hand, rel=1e-6)       # 34.32 GB


def qwen3_6_27b_bytes_by_hand():
    h, layers, heads, kv, d, inner, vocab = 5120, 64, 24, 4, 256, 17_408, 248_320
    key_heads, value_heads, key_dim, value_dim, kernel = 16, 48, 128, 128, 4
    keys, values = key_heads * key_dim, value_heads * value_dim
    n_full, n_linear = 16, 48
    fp8 = (n_full * (h * (2 * heads + 2 * kv) * d + heads * d * h)          # q (gated), k, v, o
           + n_linear * (h * (2 * keys + values) + h * values + values * h))  # qkv, z, out
    bf16 = (n_full * 2 * d                                                   # q/k norms
            + n_linear * (2 * h * value_heads + (2 * keys + values) * kernel  # b, a; conv
                          + 2 * value_heads + value_dim)                      # dt, A; norm
            + layers * 2 * h + h                                              # norms
            + vocab * h)                                                      # embedding
    nvfp4 = layers * 3 * h * inner + vocab * h                               # MLPs, LM head
    v, vi = 1152, 4304                                       # the vision encoder, all bf16
    vision = (3 * 2 * 16 * 16 * v + v + 2304 * v
              + 27 * (4 * v + 3 * v * v + 3 * v + v * v + v + 2 * v * vi + vi + v)
              + 2 * v + (4 * v) ** 2 + 4 * v + 4 * v * h + h)
    return fp8 * FP8 + (bf16 + vision) * BF16 + nvfp4 * NVFP4, fp8 + bf16 + nvfp4 + vision


def test_mixed_precision_gives_each_module_its_format():
    by_hand, params = qwen3_6_27b_bytes_by_hand()
    m = model_from_hf_config(CONFIGS / "qwen3.6-27b-nvfp4.json")
    assert m.n_params == params == count_params(CONFIGS / "qwen3.5-27b.json")["total"]
    assert m.bytes_per_param == 0.5                      # nominal: NVFP4's 4-bit values
    # the LM head in NVFP4 beside the bf16 table: (2 + 0.5625) / 2
    assert m.embedding_bytes_per_param == (BF16 + NVFP4) / 2
    assert m.weight_bytes == pytest.approx(by_hand, rel=0.005)      # 21.0 GB


def _quant(**change):
    cfg = json.loads((CONFIGS / "qwen3.6-27b-nvfp4.json").read_text())
    cfg["quantization_config"] = {**cfg["quantization_config"], **change}
    return cfg


@pytest.mark.parametrize("change, error, field", [
    ({"quantized_layers": {"model.language_model.layers.0.mlp.gate_proj":
                           {"quant_algo": "W4A8_AWQ"}}},
     ValueError, "quantized_layers.model.language_model.layers.0.mlp.gate_proj.quant_algo"),
    ({"quantized_layers": {"model.language_model.layers.0.mlp.gate_proj": "NVFP4"}},
     TypeError, "quantized_layers.model.language_model.layers.0.mlp.gate_proj'"),
    ({"quantized_layers": {"model.language_model.layers.0.mlp.gate_proj": {"group_size": 16}}},
     TypeError, "quantized_layers.model.language_model.layers.0.mlp.gate_proj.quant_algo"),
    ({"quantized_layers": []}, TypeError, "quantization_config.quantized_layers"),
    ({"quant_algo": "INT4_AWQ"}, ValueError, "quantization_config.quant_algo"),
])
def test_bad_modelopt_fields_are_named(change, error, field):
    with pytest.raises(error, match=field.replace(".", r"\.")):
        model_from_hf_config(_quant(**change))


@pytest.mark.parametrize("name", [
    "backbone.layers.0.mixer.in_proj",     # Nemotron-H's naming, not the one rooflinekit reads
    "mtp.layers.0.mlp.gate_proj",          # the MTP layer's, not the model's layer 0
    "model.visual.blocks.0.attn.qkv",      # the vision tower's
])
def test_a_table_naming_no_module_is_an_error_not_bf16(name):
    table = {name: {"quant_algo": "FP8"}}
    with pytest.raises(ValueError, match="quantized_layers names none"):
        model_from_hf_config(_quant(quantized_layers=table))


def test_qwen3_6_35b_a3b_nvfp4_against_its_published_checkpoint():
    # nvidia/Qwen3.6-35B-A3B-NVFP4: the Hub lists the repository (commit 1355db6) at 23.5 GB,
    # its shards holding the MTP layer too, in bf16 (exclude_modules 'mtp*'); the model's
    # weights are Qwen3.5-35B-A3B's shapes with the experts, shared expert and LM head in
    # W4A16_NVFP4, attention and Gated DeltaNet projections in FP8
    path = CONFIGS / "qwen3.6-35b-a3b-nvfp4.json"
    m = model_from_hf_config(path)
    counts = count_params(path)
    assert (m.n_params, counts["mtp"]) == (35_107_181_936, 844_640_768)
    assert (m.bytes_per_param, m.expert_bytes_per_param) == (0.5, NVFP4)
    assert m.weight_bytes + counts["mtp"] * BF16 == pytest.approx(23.5e9, rel=0.03)  # 23.40 GB
