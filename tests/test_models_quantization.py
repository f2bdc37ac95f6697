"""Weight formats of quantized checkpoints: each group of weights in its own format, scales counted.

Expected values are derived by hand from the numbers in the published ``config.json`` files
under ``tests/data/hf_configs/`` (see ``README.md`` there for where each file comes from) and
from the formats' definitions:

- MXFP4 (OCP Microscaling Formats v1.0): 4-bit E2M1 values with one 8-bit E8M0 scale per block
  of 32, so 4 + 8/32 = 4.25 bits a weight.
- NVFP4 (NVIDIA ModelOpt / compressed-tensors): 4-bit E2M1 values with one FP8 E4M3 scale per
  16, so 4.5 bits a weight (the one FP32 scale per tensor is not counted).
- FP8 with ``weight_block_size`` [128, 128] (DeepSeek-V3): one FP32 scale per 128 × 128 block.
- GPTQ / AWQ with ``group_size`` g: one FP16 scale and one packed zero point per g weights.
- bitsandbytes NF4: one FP32 absmax per 64 values; with double quantization an 8-bit absmax per
  64 and one FP32 scale per 256 blocks.
"""

import dataclasses
import json
import pathlib

import pytest

from rooflinekit import ModelShape, memory, units
from rooflinekit.cli.main import main
from rooflinekit.hf_config import count_params

CONFIGS = pathlib.Path(__file__).parent / "data" / "hf_configs"
GIB = 2 ** 30


def cfg(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text())


# -- gpt-oss: MXFP4 experts, everything else bf16 -------------------------------------------------
def gpt_oss_by_hand(layers: int, experts: int) -> dict:
    """gpt-oss-120b / -20b from their config.json numbers (both: hidden 2880, 64 query heads and
    8 KV heads of 64, expert width 2880, vocabulary 201,088, untied embeddings, biased q/k/v/o,
    router and experts, one attention sink a head; quantization_config: MXFP4 experts, the
    modules_to_not_convert self_attn, router, embed_tokens and lm_head left in bf16)."""
    h, q, kv, inter, vocab = 2880, 64 * 64, 8 * 64, 2880, 201_088
    attention = (h * q + q) + 2 * (h * kv + kv) + (q * h + h) + 64        # + 64 sinks
    expert_matrices = experts * (h * 2 * inter + inter * h)               # gate_up, down
    expert_biases = experts * (2 * inter + h)
    router = experts * h + experts
    norms = 2 * h
    embeddings = 2 * vocab * h                                            # embed_tokens, lm_head
    total = layers * (attention + expert_matrices + expert_biases + router + norms) + h \
        + embeddings
    bf16 = total - layers * expert_matrices
    weight_bytes = layers * expert_matrices * 4.25 / 8 + bf16 * 2
    # 4 of the experts a layer per token; the card counts the LM head but not the embedding table
    skipped = layers * (experts - 4) * (expert_matrices + expert_biases) // experts
    active_card = total - skipped - vocab * h
    mlp = layers * (expert_matrices + expert_biases + router)
    return {"total": total, "active_card": active_card, "weight_bytes": weight_bytes,
            "mlp": mlp, "attention": layers * attention}


# gpt-oss model card (OpenAI, "gpt-oss-120b & gpt-oss-20b Model Card", arXiv:2508.10925),
# Table 1: MLP 114.71B / 19.12B, attention 0.96B / 0.64B, active 5.13B / 3.61B ("unembedding
# parameters are counted towards active, but not embeddings"), total 116.83B / 20.91B,
# checkpoint size 60.8 GiB / 12.8 GiB. Tolerance 0.5%: three significant figures.
CARD = {"gpt-oss-120b": (36, 128, 114.71e9, 0.96e9, 5.13e9, 116.83e9, 60.8),
        "gpt-oss-20b": (24, 32, 19.12e9, 0.64e9, 3.61e9, 20.91e9, 12.8)}


@pytest.mark.parametrize("name", sorted(CARD))
def test_gpt_oss_parameters_match_the_model_card(name):
    layers, experts, mlp, attention, active, total, _ = CARD[name]
    hand = gpt_oss_by_hand(layers, experts)
    m = ModelShape.from_hf_config(CONFIGS / f"{name}.json")
    assert m.n_params == hand["total"]
    assert m.n_active_params - m.input_embedding_params == hand["active_card"]
    assert m.n_params == pytest.approx(total, rel=0.005)
    assert m.n_active_params - m.input_embedding_params == pytest.approx(active, rel=0.005)
    parts = count_params(CONFIGS / f"{name}.json")
    assert parts["experts"] + parts["router"] == hand["mlp"] == pytest.approx(mlp, rel=0.005)
    assert parts["attention"] == hand["attention"] == pytest.approx(attention, rel=0.005)


@pytest.mark.parametrize("name", sorted(CARD))
def test_gpt_oss_weight_bytes_match_the_checkpoint(name):
    layers, experts, *_, checkpoint_gib = CARD[name]
    m = ModelShape.from_hf_config(CONFIGS / f"{name}.json")
    hand = gpt_oss_by_hand(layers, experts)["weight_bytes"]
    assert m.weight_bytes == pytest.approx(hand, rel=1e-12)
    assert float(memory.weight_bytes(m)) == pytest.approx(hand, rel=1e-12)
    # the card's checkpoint size, to the 0.05 GiB it is rounded to
    assert m.weight_bytes / GIB == pytest.approx(checkpoint_gib, abs=0.05)
    assert (m.bytes_per_param, m.body_bytes_per_param, m.embedding_bytes_per_param) == \
        (0.5, 2.0, 2.0)


def test_gpt_oss_20b_weight_bytes_equal_the_safetensors_index():
    # https://huggingface.co/openai/gpt-oss-20b/blob/main/model.safetensors.index.json:
    # "metadata": {"total_size": 13761264768} (bytes of every tensor of the checkpoint)
    m = ModelShape.from_hf_config(CONFIGS / "gpt-oss-20b.json")
    assert m.weight_bytes == pytest.approx(13_761_264_768, rel=1e-12)


def test_gpt_oss_active_weight_bytes_by_hand():
    m = ModelShape.from_hf_config(CONFIGS / "gpt-oss-120b.json")
    h, inter, vocab, layers = 2880, 2880, 201_088, 36
    experts_bytes = layers * 128 * (3 * h * inter * 4.25 / 8 + (2 * inter + h) * 2)
    rest_bytes = m.weight_bytes - experts_bytes
    assert m.active_weight_bytes == pytest.approx(rest_bytes + experts_bytes * 4 / 128,
                                                  rel=1e-12)
    assert vocab * h * 2 * 2 < rest_bytes                # the bf16 embedding and LM head


def test_gpt_oss_120b_fits_one_h100_at_tp1(capsys):
    path = str(CONFIGS / "gpt-oss-120b.json")
    code = main(["capacity", path, "H100-SXM-80GB", "--tp", "1", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["fits"] is True and out["tp"] == 1
    assert out["weight_gib"] == pytest.approx(60.8, abs=0.05)
    assert out["max_concurrent_sequences"] >= 1
    # the same checkpoint read as bf16 throughout (--dtype bf16) does not fit one GPU
    code = main(["capacity", path, "H100-SXM-80GB", "--dtype", "bf16", "--json"])
    assert code == 1
    capsys.readouterr()


# -- other formats, on the published Llama-3.1-8B config with a quantization_config ----------------
H, INTER, VOCAB, LAYERS = 4096, 14_336, 128_256, 32          # meta-llama/Llama-3.1-8B config.json
ATTENTION = H * H + 2 * H * 1024 + H * H                      # q, k, v (8 KV heads of 128), o
MLP = 3 * H * INTER
LINEAR = LAYERS * (ATTENTION + MLP)
NORMS = LAYERS * 2 * H + H
TABLE = VOCAB * H                                             # embed_tokens; lm_head as large


def llama(quantization_config, **extra):
    return dict(cfg("llama-3.1-8b"), quantization_config=quantization_config, **extra)


def bytes_by_hand(linear_bytes, lm_head_bytes=2.0):
    return LINEAR * linear_bytes + NORMS * 2 + TABLE * 2 + TABLE * lm_head_bytes


@pytest.mark.parametrize("quant, nominal, linear", [
    ({"quant_method": "fp8", "weight_block_size": [128, 128], "activation_scheme": "dynamic"},
     1.0, 1 + 4 / (128 * 128)),
    ({"quant_method": "fp8", "activation_scheme": "static"}, 1.0, 1.0),
    ({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True},
     0.5, (4 + (16 + 4) / 128) / 8),
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True,
      "version": "gemm"}, 0.5, (4 + (16 + 4) / 128) / 8),
    ({"quant_method": "awq", "bits": 4, "group_size": 64, "zero_point": False}, 0.5,
     (4 + 16 / 64) / 8),
    ({"quant_method": "gptq", "bits": 8, "group_size": -1}, 1.0, 1.0),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"},
     0.5, (4 + 32 / 64) / 8),
    ({"quant_method": "bitsandbytes", "load_in_4bit": True,
      "bnb_4bit_use_double_quant": True}, 0.5, (4 + 8 / 64 + 32 / (64 * 256)) / 8),
    ({"quant_method": "bitsandbytes", "load_in_8bit": True}, 1.0, 1.0),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
      "exclude_modules": ["lm_head"]}, 0.5, 4.5 / 8),
    ({"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
      "ignore": ["lm_head"], "config_groups": {"group_0": {
          "targets": ["Linear"], "weights": {"num_bits": 4, "type": "float",
                                             "strategy": "tensor_group", "group_size": 16,
                                             "symmetric": True}}}}, 0.5, 4.5 / 8),
    ({"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head"],
      "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
          "num_bits": 4, "type": "int", "strategy": "group", "group_size": 128,
          "symmetric": True}}}}, 0.5, (4 + 16 / 128) / 8),
    ({"quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
      "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
          "num_bits": 8, "type": "float", "strategy": "channel"}}}}, 1.0, 1.0),
])
def test_linear_layers_in_their_format_the_rest_in_16_bits(quant, nominal, linear):
    m = ModelShape.from_hf_config(llama(quant))
    assert m.bytes_per_param == nominal
    assert m.embedding_bytes_per_param == 2.0 and m.expert_bytes_per_param == linear
    assert m.weight_bytes == pytest.approx(bytes_by_hand(linear), rel=1e-12)


def test_a_quantized_lm_head_is_counted_in_its_format():
    gptq = {"quant_method": "gptq", "bits": 4, "group_size": 128, "lm_head": True}
    linear = (4 + 20 / 128) / 8
    m = ModelShape.from_hf_config(llama(gptq))
    assert m.weight_bytes == pytest.approx(bytes_by_hand(linear, linear), rel=1e-12)
    ct = {"quant_method": "compressed-tensors", "ignore": [], "config_groups": {"g": {
        "targets": ["Linear"], "weights": {"num_bits": 4, "type": "float",
                                           "strategy": "tensor_group", "group_size": 16}}}}
    m = ModelShape.from_hf_config(llama(ct))
    assert m.weight_bytes == pytest.approx(bytes_by_hand(4.5 / 8, 4.5 / 8), rel=1e-12)


def test_ignored_modules_stay_in_16_bits_layer_by_layer():
    # attention left in bf16 everywhere (a regex), then only layer 0's (a glob)
    ct = {"quant_method": "compressed-tensors", "ignore": ["lm_head", "re:.*self_attn.*"],
          "config_groups": {"g": {"targets": ["Linear"], "weights": {
              "num_bits": 8, "type": "float", "strategy": "tensor"}}}}
    m = ModelShape.from_hf_config(llama(ct))
    hand = LAYERS * ATTENTION * 2 + LAYERS * MLP * 1 + NORMS * 2 + 2 * TABLE * 2
    assert m.weight_bytes == pytest.approx(hand, rel=1e-12)
    nvfp4 = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
             "exclude_modules": ["lm_head", "model.layers.0.self_attn*"]}
    m = ModelShape.from_hf_config(llama(nvfp4))
    hand = (ATTENTION * 2 + (LAYERS - 1) * ATTENTION * 4.5 / 8 + LAYERS * MLP * 4.5 / 8
            + NORMS * 2 + 2 * TABLE * 2)
    assert m.weight_bytes == pytest.approx(hand, rel=1e-12)


def test_awq_component_patterns():
    # AutoAWQ's modules_to_not_convert name components: attention and layer 0 stay in fp16,
    # "mlp.gate" (a router) does not catch gate_proj
    awq = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True,
           "modules_to_not_convert": ["self_attn", "layers.0.", "mlp.gate"]}
    linear = (4 + (16 + 4) / 128) / 8
    m = ModelShape.from_hf_config(llama(awq))
    hand = (LAYERS * ATTENTION * 2 + MLP * 2 + (LAYERS - 1) * MLP * linear + NORMS * 2
            + 2 * TABLE * 2)
    assert m.weight_bytes == pytest.approx(hand, rel=1e-12)


def test_modelopt_hf_quant_config_beside_the_config(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(cfg("llama-3.1-8b")))
    (tmp_path / "hf_quant_config.json").write_text(json.dumps({
        "producer": {"name": "modelopt"},
        "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": None, "group_size": 16,
                         "exclude_modules": ["lm_head"]}}))
    m = ModelShape.from_hf_config(tmp_path)
    assert m.bytes_per_param == 0.5
    assert m.weight_bytes == pytest.approx(bytes_by_hand(4.5 / 8), rel=1e-12)


def test_deepseek_v3_fp8_blocks_count_their_scales():
    m = ModelShape.from_hf_config(CONFIGS / "deepseek-v3.json")
    assert m.bytes_per_param == 1                       # the format's name stays fp8
    assert m.expert_bytes_per_param == 1 + 4 / (128 * 128)
    assert m.embedding_bytes_per_param == 2             # embed_tokens, lm_head in bf16
    # the body: fp8 projections with their scales, bf16 routers and norms
    assert 1 + 4 / (128 * 128) < m.body_bytes_per_param < 1.01
    assert m.weight_bytes > m.n_params


# -- refusals --------------------------------------------------------------------------------------
@pytest.mark.parametrize("quant, word", [
    ({"quant_method": "hqq_v9"}, "'hqq_v9'"),
    ({"quant_method": "aqlm", "in_group_size": 8}, "'aqlm'"),
    ({"modules_to_not_convert": ["lm_head"]}, "(none)"),
    ({"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"}, "W4A8_AWQ"),
])
def test_an_unknown_method_is_refused_saying_how_to_give_the_format(quant, word):
    with pytest.raises(ValueError, match="quant") as info:
        ModelShape.from_hf_config(llama(quant))
    assert word in str(info.value) and "--dtype" in str(info.value)


@pytest.mark.parametrize("quant, error, field", [
    ({"quant_method": "mxfp4", "modules_to_not_convert": "lm_head"}, TypeError,
     "modules_to_not_convert"),
    ({"quant_method": "fp8", "weight_block_size": [128]}, ValueError, "weight_block_size"),
    ({"quant_method": "gptq", "bits": 4, "group_size": 0}, ValueError, "group_size"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {
        "num_bits": 4, "strategy": "group"}}}}, ValueError, "group_size"),
    ({"quant_method": 4}, TypeError, "quant_method"),
])
def test_malformed_quantization_fields_are_named(quant, error, field):
    with pytest.raises(error, match=field):
        ModelShape.from_hf_config(llama(quant))


# -- ModelShape's groups ---------------------------------------------------------------------------
def test_a_new_format_applies_to_every_weight():
    m = ModelShape.from_hf_config(CONFIGS / "gpt-oss-120b.json")
    bf16 = m.replace(bytes_per_param="bf16")
    assert not bf16.has_weight_groups
    assert bf16.weight_bytes == m.n_params * 2
    kept = m.replace(name="renamed")
    assert kept.weight_bytes == m.weight_bytes
    override = ModelShape.from_hf_config(CONFIGS / "gpt-oss-120b.json", bytes_per_param="fp8")
    assert override.weight_bytes == override.n_params * 1


def test_plain_models_keep_their_bytes_to_the_bit():
    m = ModelShape("m", n_layers=2, n_heads=4, n_kv_heads=2, head_dim=8, n_params=1e9,
                   bytes_per_param="fp8")
    assert not m.has_weight_groups and m.weight_bytes == 1e9
    assert (m.body_bytes_per_param, m.expert_bytes_per_param,
            m.embedding_bytes_per_param) == (None, None, None)
    assert (m.bytes_per_body_param, m.bytes_per_expert_param,
            m.bytes_per_embedding_param) == (1.0, 1.0, 1.0)
    # a copy made field by field (dataclasses.replace) in a new format: every weight in it
    assert dataclasses.replace(m, bytes_per_param="bf16").weight_bytes == 2e9


def test_group_formats_are_checked():
    base = dict(name="m", n_layers=2, n_heads=4, n_kv_heads=2, head_dim=8, n_params=1e6,
                vocab_size=1000, hidden_size=32)
    with pytest.raises(ValueError, match="expert_bytes_per_param"):
        ModelShape(**base, expert_bytes_per_param=-1)
    with pytest.raises(ValueError, match="embedding_bytes_per_param"):
        ModelShape(**base, embedding_bytes_per_param="fp7")
    with pytest.raises(ValueError, match="n_params"):
        ModelShape(**dict(base, n_params=1e4), embedding_bytes_per_param=1)
    m = ModelShape(**base, embedding_bytes_per_param="fp8")
    assert m.weight_bytes == (1e6 - 2 * 1000 * 32) * 2 + 2 * 1000 * 32 * 1
    assert m.mean_bytes_per_param == m.weight_bytes / 1e6
    assert units.GiB == GIB
