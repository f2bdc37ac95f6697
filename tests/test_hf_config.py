"""Reading Hugging Face config.json files offline, and counting parameters from their shapes.

The JSON files under ``tests/data/hf_configs/`` are copies of the published ``config.json`` files
(the Hugging Face Hub URL of each is the ``source`` of the matching catalogue row in
``rooflinekit/data/models.toml``).
"""

import json
import pathlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rooflinekit import ModelShape
from rooflinekit.hf_config import count_params, load_hf_config
from rooflinekit.models import model_from_hf_config

CONFIGS = pathlib.Path(__file__).parent / "data" / "hf_configs"


def cfg(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text())


# -- parameter counts against published totals -------------------------------------------------
# (config, published total, published active or None, source). Tolerance: 1% relative, the
# precision to which the totals are published (three significant figures), except where noted.
PUBLISHED = [
    ("llama-2-7b-hf", 6.74e9, None, "Hugging Face Hub, meta-llama/Llama-2-7b-hf: 6.74B params"),
    ("llama-2-13b-hf", 13.0e9, None, "Hugging Face Hub, meta-llama/Llama-2-13b-hf: 13B params"),
    ("llama-2-70b-hf", 69.0e9, None, "Hugging Face Hub, meta-llama/Llama-2-70b-hf: 69B params"),
    ("llama-3.1-8b", 8.03e9, None, "Hugging Face Hub, meta-llama/Llama-3.1-8B: 8.03B params"),
    ("llama-3.1-70b", 70.6e9, None, "Hugging Face Hub, meta-llama/Llama-3.1-70B: 70.6B params"),
    ("llama-3.1-405b", 405e9, None, "Llama 3 Herd of Models, arXiv:2407.21783: 405B"),
    ("mistral-7b-v0.1", 7.24e9, None, "Hugging Face Hub, mistralai/Mistral-7B-v0.1: 7.24B"),
    ("mixtral-8x7b-v0.1", 46.7e9, 12.9e9, "Mixtral of Experts, arXiv:2401.04088: 46.7B / 12.9B"),
    ("mixtral-8x22b-v0.1", 141e9, 39e9, "mistral.ai/news/mixtral-8x22b: 141B total, 39B active"),
    ("qwen2.5-7b", 7.61e9, None, "Qwen/Qwen2.5-7B model card: Number of Parameters 7.61B"),
    ("qwen2.5-72b", 72.7e9, None, "Qwen/Qwen2.5-72B model card: Number of Parameters 72.7B"),
    ("gemma-2-9b-it", 9.24e9, None, "Hugging Face Hub, google/gemma-2-9b-it: 9.24B params"),
    ("gemma-2-27b-it", 27.2e9, None, "Hugging Face Hub, google/gemma-2-27b-it: 27.2B params"),
    ("phi-3-mini-4k-instruct", 3.8e9, None, "Phi-3 Technical Report, arXiv:2404.14219: 3.8B"),
    ("deepseek-v3", 671e9, None, "DeepSeek-V3 Technical Report, arXiv:2412.19437: 671B total"),
    ("starcoder", 15.5e9, None, "StarCoder, arXiv:2305.06161: 15.5B parameters"),
    ("gpt-neox-20b", 20_554_567_680, None, "EleutherAI/gpt-neox-20b model card: 20,554,567,680"),
    ("qwen1.5-moe-a2.7b", 14.3e9, 2.7e9,
     "Qwen/Qwen1.5-MoE-A2.7B model card: 14.3B parameters in total, 2.7B activated"),
]


@pytest.mark.parametrize("name, total, active, source", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_count_matches_published_total(name, total, active, source):
    counts = count_params(CONFIGS / f"{name}.json")
    assert counts["total"] == pytest.approx(total, rel=0.01), source
    if active is not None:
        assert counts["active"] == pytest.approx(active, rel=0.01), source
    else:
        assert counts["active"] <= counts["total"]


def test_deepseek_v3_active_params():
    # DeepSeek-V3 Technical Report (arXiv:2412.19437): "37B activated for each token". The report
    # gives two significant figures; counted (embeddings, attention, 3 dense MLPs, 8 routed + 1
    # shared expert and the gate in 58 MoE layers, LM head): 37,552,297,472. That is 1.5% above
    # 37e9, so this test uses the published precision (±1e9) rather than 1%.
    counts = count_params(CONFIGS / "deepseek-v3.json")
    assert counts["active"] == 37_552_297_472
    assert abs(counts["active"] - 37e9) < 1e9


def test_gemma2_9b_non_embedding_count_exact():
    # Gemma 2 report (arXiv:2408.00118) Table: 9B has 917,504,000 embedding and 8,324,201,984
    # non-embedding parameters. Exact.
    counts = count_params(CONFIGS / "gemma-2-9b-it.json")
    assert counts["embedding"] == 917_504_000
    assert counts["total"] - counts["embedding"] == 8_324_201_984
    assert counts["lm_head"] == 0                 # tied (Gemma2Config default)


def test_gemma3_1b_split():
    # Gemma 3 Technical Report (arXiv:2503.19786) Table 1, 1B: 302M embedding and 698M
    # non-embedding parameters (3 significant figures; rel 1e-3). Per-head q/k norms, 4 norms a
    # layer, tied head.
    c = count_params(CONFIGS / "gemma-3-1b-it.json")
    assert c["embedding"] == pytest.approx(302e6, rel=1e-3) and c["lm_head"] == 0
    assert c["total"] - c["embedding"] == pytest.approx(698e6, rel=1e-3)


def test_qwen2_moe_shared_expert_by_hand():
    # 24 layers, 60 experts of 1408, top-4, one shared expert of 5632 with a sigmoid gate (h -> 1).
    h, L = 2048, 24
    c = count_params(CONFIGS / "qwen1.5-moe-a2.7b.json")
    assert c["shared_experts"] == L * (3 * h * 5632 + h)
    assert c["experts"] == L * 60 * 3 * h * 1408 and c["router"] == L * 60 * h
    assert c["mlp"] == 0
    assert c["total"] - c["active"] == L * (60 - 4) * 3 * h * 1408


def test_llama31_8b_breakdown_by_hand():
    # config: h=4096, L=32, 32 heads x 128, 8 KV heads, MLP 14336, vocab 128256, untied.
    h, L, V, I, kv = 4096, 32, 128_256, 14_336, 8 * 128
    c = count_params(CONFIGS / "llama-3.1-8b.json")
    assert c["embedding"] == c["lm_head"] == V * h
    assert c["attention"] == L * (h * h + 2 * h * kv + h * h)     # q, k, v, o; no bias
    assert c["mlp"] == L * 3 * h * I                              # gate, up, down
    assert c["norms"] == (2 * L + 1) * h                          # 2 RMSNorms a layer + final
    assert c["experts"] == c["router"] == c["shared_experts"] == 0
    assert c["total"] == 8_030_261_248 == c["active"]


def test_qwen2_has_qkv_biases():
    h, L, kv = 3584, 28, 4 * 128
    c = count_params(CONFIGS / "qwen2.5-7b.json")
    no_bias = L * (2 * h * h + 2 * h * kv)
    assert c["attention"] - no_bias == L * (h + 2 * kv)          # q, k and v biases, no o bias
    assert c["total"] == 7_615_616_512


def test_deepseek_v3_breakdown_by_hand():
    # config: h=7168, 128 heads, q_lora 1536, kv_lora 512, nope 128, rope 64, v 128, 61 layers,
    # first 3 dense (18432), 58 MoE layers of 256 routed + 1 shared expert of 2048, top-8.
    h, H, L = 7168, 128, 61
    attn = (h * 1536 + 1536 + 1536 * H * (128 + 64)       # q_a, q_a_layernorm, q_b
            + h * (512 + 64) + 512 + 512 * H * (128 + 128)  # kv_a (latent + rope key), norm, kv_b
            + H * 128 * h)                                  # o_proj
    assert attn == 187_107_328
    c = count_params(CONFIGS / "deepseek-v3.json")
    assert c["attention"] == L * attn
    assert c["mlp"] == 3 * 3 * h * 18_432
    assert c["experts"] == 58 * 256 * 3 * h * 2048
    assert c["shared_experts"] == 58 * 3 * h * 2048
    assert c["router"] == 58 * (256 * h + 256)              # gate + e_score_correction_bias
    assert c["total"] == 671_026_419_200
    assert c["total"] - c["active"] == 58 * (256 - 8) * 3 * h * 2048


def test_mixtral_active_by_hand():
    h, L, I = 4096, 32, 14_336
    c = count_params(CONFIGS / "mixtral-8x7b-v0.1.json")
    assert c["experts"] == L * 8 * 3 * h * I and c["router"] == L * 8 * h
    assert c["total"] - c["active"] == L * 6 * 3 * h * I


def test_gpt_style_counts_by_hand():
    # StarCoder (GPT-BigCode): learned positions, tied head, MQA fused c_attn with bias,
    # 2-matrix MLP with biases, 2 LayerNorms (weight + bias) a layer.
    h, L, I, d = 6144, 40, 24_576, 128
    c = count_params(CONFIGS / "starcoder.json")
    assert c["embedding"] == 49_152 * h + 8192 * h and c["lm_head"] == 0
    assert c["attention"] == L * (h * (h + 2 * d) + (h + 2 * d) + h * h + h)
    assert c["mlp"] == L * (2 * h * I + I + h)
    assert c["norms"] == (2 * L + 1) * 2 * h
    # Falcon-7B: no biases (bias=false), one LayerNorm a layer (parallel attention), MQA, 4h MLP.
    h, L, d = 4544, 32, 64
    c = count_params(CONFIGS / "falcon-7b.json")
    assert c["attention"] == L * (h * (h + 2 * d) + h * h)
    assert c["mlp"] == L * 2 * h * 4 * h
    assert c["norms"] == (L + 1) * 2 * h
    assert c["total"] == 6_921_720_704


def test_count_excludes_deepseek_mtp_module():
    base = cfg("deepseek-v3")
    without = dict(base, num_nextn_predict_layers=0)
    assert count_params(base)["total"] == count_params(without)["total"]


# -- ModelShape fields -----------------------------------------------------------------------------
def test_llama_fields_and_kv():
    m = ModelShape.from_hf_config(CONFIGS / "llama-3.1-70b.json", name="l70")
    assert (m.name, m.n_layers, m.n_heads, m.n_kv_heads, m.head_dim) == ("l70", 80, 64, 8, 128)
    assert m.kv_bytes_per_token == 327_680                  # guide §2.2: 2·80·8·128·2
    assert m.bytes_per_param == 2 and m.kv_bytes_per_element == 2
    assert (m.vocab_size, m.max_context, m.tie_word_embeddings) == (128_256, 131_072, False)
    assert m.sliding_window is None and m.n_sliding_layers == 0


def test_mha_when_kv_heads_absent():
    m = model_from_hf_config(CONFIGS / "gpt-neox-20b.json")
    assert m.n_kv_heads == m.n_heads == 64 and m.attention == "MHA"
    assert m.head_dim == 6144 // 64
    assert m.kv_bytes_per_token == 2 * 44 * 64 * 96 * 2     # fp16
    assert m.bytes_per_param == 2


@pytest.mark.parametrize("name, layers, d", [("falcon-7b", 32, 64), ("starcoder", 40, 128)])
def test_mqa_configs(name, layers, d):
    m = model_from_hf_config(CONFIGS / f"{name}.json")
    assert m.n_kv_heads == 1 and m.attention == "MQA"
    assert m.kv_bytes_per_token == 2 * layers * 1 * d * 2


def test_falcon_new_architecture_reads_num_kv_heads():
    c = dict(cfg("falcon-7b"), new_decoder_architecture=True, num_kv_heads=71)
    assert model_from_hf_config(c).n_kv_heads == 71


def test_deepseek_mla_and_moe_fields():
    m = model_from_hf_config(CONFIGS / "deepseek-v3.json")
    assert m.attention == "MLA"
    assert (m.kv_lora_rank, m.qk_rope_head_dim) == (512, 64)
    assert m.kv_bytes_per_token == 61 * (512 + 64) * 2 == 70_272
    assert (m.n_experts, m.n_experts_per_token, m.intermediate_size) == (256, 8, 2048)
    assert m.head_dim == 128 + 64
    assert m.bytes_per_param == 1                 # quantization_config: fp8
    assert m.kv_bytes_per_element == 2            # torch_dtype bfloat16


def test_gemma3_window_pattern_from_published_config():
    # sliding_window_pattern 6: layers 5, 11, 17, 23 are global, the other 22 use a 512 window.
    m = model_from_hf_config(CONFIGS / "gemma-3-1b-it.json")
    assert (m.sliding_window, m.n_sliding_layers, m.n_full_layers) == (512, 22, 4)
    assert m.attention == "MQA" and m.kv_bytes_per_token == 2 * 26 * 1 * 256 * 2


def test_moe_total_override_keeps_counted_active():
    m = model_from_hf_config(CONFIGS / "mixtral-8x7b-v0.1.json", n_params=46.7e9)
    assert m.n_params == 46.7e9 and m.n_active_params == 12_879_925_248
    m = model_from_hf_config(CONFIGS / "mixtral-8x7b-v0.1.json", n_params=46.7e9,
                             n_active_params=12.9e9)
    assert m.n_active_params == 12.9e9


def test_mistral_sliding_window_all_layers():
    m = model_from_hf_config(CONFIGS / "mistral-7b-v0.1.json")
    assert (m.sliding_window, m.n_sliding_layers, m.n_full_layers) == (4096, 32, 0)


def test_mixtral_null_window_means_none():
    m = model_from_hf_config(CONFIGS / "mixtral-8x7b-v0.1.json")
    assert m.sliding_window is None and m.n_sliding_layers == 0


@pytest.mark.parametrize("name, layers, sliding, d", [("gemma-2-9b-it", 42, 21, 256),
                                                      ("gemma-2-27b-it", 46, 23, 128)])
def test_gemma2_alternates_window(name, layers, sliding, d):
    m = model_from_hf_config(CONFIGS / f"{name}.json")
    assert (m.n_layers, m.n_sliding_layers, m.sliding_window, m.head_dim) == (layers, sliding,
                                                                             4096, d)
    assert m.tie_word_embeddings is True


def test_qwen2_window_off_unless_enabled():
    base = cfg("qwen2.5-7b")
    assert model_from_hf_config(base).sliding_window is None
    on = dict(base, use_sliding_window=True, max_window_layers=20, sliding_window=32_768)
    m = model_from_hf_config(on)
    assert (m.sliding_window, m.n_sliding_layers) == (32_768, 28 - 20)


def test_layer_types_list_and_window_pattern():
    c = dict(cfg("mistral-7b-v0.1"), num_hidden_layers=4,
             layer_types=["sliding_attention", "full_attention"] * 2)
    assert model_from_hf_config(c, n_params=1e9).n_sliding_layers == 2
    g3 = dict(cfg("llama-3.1-8b"), model_type="gemma3_text", num_hidden_layers=26,
              sliding_window=512, sliding_window_pattern=6)
    assert model_from_hf_config(g3, n_params=1e9).n_sliding_layers == 26 - 4   # 5, 11, 17, 23


def test_dtypes():
    assert model_from_hf_config(CONFIGS / "llama-2-7b-hf.json").bytes_per_param == 2     # fp16
    star = model_from_hf_config(CONFIGS / "starcoder.json")
    assert star.bytes_per_param == 4 and star.kv_bytes_per_element == 2   # fp32 ckpt, 16-bit KV
    gptq = dict(cfg("llama-3.1-8b"), quantization_config={"quant_method": "gptq", "bits": 4})
    assert model_from_hf_config(gptq).bytes_per_param == 0.5
    new_key = {k: v for k, v in cfg("llama-3.1-8b").items() if k != "torch_dtype"}
    assert model_from_hf_config(dict(new_key, dtype="float16")).kv_bytes_per_element == 2


def test_path_dict_and_text_config_agree():
    path = CONFIGS / "qwen2.5-7b.json"
    a = model_from_hf_config(path, name="q")
    b = model_from_hf_config(cfg("qwen2.5-7b"), name="q")
    c = model_from_hf_config(str(path), name="q")
    nested = model_from_hf_config({"model_type": "qwen2_vl_like", "torch_dtype": "bfloat16",
                                   "text_config": cfg("qwen2.5-7b")}, name="q")
    fields = ("n_layers", "n_heads", "n_kv_heads", "head_dim", "n_params", "kv_bytes_per_token")
    for other in (b, c, nested):
        assert all(getattr(a, f) == getattr(other, f) for f in fields)
    assert str(path) in a.source


def test_overrides_win():
    m = model_from_hf_config(CONFIGS / "llama-3.1-8b.json", name="x", n_params=8e9,
                             kv_bytes_per_element="fp8", source="mine")
    assert (m.n_params, m.kv_bytes_per_token, m.source) == (8e9, 2 * 32 * 8 * 128, "mine")


def test_load_hf_config_returns_copy():
    c = cfg("llama-3.1-8b")
    loaded = load_hf_config(c)
    loaded["num_hidden_layers"] = 1
    assert c["num_hidden_layers"] == 32


# -- malformed configs --------------------------------------------------------------------------
@pytest.mark.parametrize("change, err, match", [
    ({"num_hidden_layers": None}, ValueError, "num_hidden_layers"),
    ({"num_attention_heads": "32"}, TypeError, "num_attention_heads"),
    ({"num_attention_heads": 32.5}, ValueError, "num_attention_heads"),
    ({"num_attention_heads": True}, TypeError, "num_attention_heads"),
    ({"num_key_value_heads": 5}, ValueError, "num_key_value_heads"),
    ({"num_key_value_heads": 0}, ValueError, "num_key_value_heads"),
    ({"hidden_size": 4100}, ValueError, "hidden_size"),
    ({"num_hidden_layers": -2}, ValueError, "num_hidden_layers"),
    ({"torch_dtype": "float7"}, ValueError, "torch_dtype"),
    ({"sliding_window": "4k"}, TypeError, "sliding_window"),
    ({"layer_types": ["full_attention"] * 3}, ValueError, "layer_types"),
    ({"layer_types": ["chunked_attention"] * 32}, ValueError, "layer_types"),
    ({"num_local_experts": 8, "num_experts_per_tok": 9}, ValueError, "num_experts_per_tok"),
    ({"num_local_experts": 8}, ValueError, "num_experts_per_tok"),
    ({"vocab_size": None}, ValueError, "vocab_size"),
    ({"tie_word_embeddings": "false"}, TypeError, "tie_word_embeddings"),
])
def test_malformed_config_names_the_field(change, err, match):
    c = {k: v for k, v in cfg("llama-3.1-8b").items() if k != "head_dim"}
    c.update(change)
    c = {k: v for k, v in c.items() if v is not None}
    with pytest.raises(err, match=match):
        model_from_hf_config(c)


def test_missing_field_entirely():
    c = {k: v for k, v in cfg("llama-3.1-8b").items() if k != "num_attention_heads"}
    with pytest.raises(ValueError, match="num_attention_heads"):
        model_from_hf_config(c)


def test_unreadable_and_invalid_files(tmp_path):
    with pytest.raises(ValueError, match="cannot read"):
        model_from_hf_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        model_from_hf_config(bad)
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    with pytest.raises(TypeError, match="JSON object"):
        model_from_hf_config(listed)
    with pytest.raises(TypeError, match="config must be"):
        model_from_hf_config(42)


def test_gpt_style_moe_count_refused():
    c = dict(cfg("starcoder"), num_local_experts=4, num_experts_per_tok=2)
    with pytest.raises(ValueError, match="n_active_params"):
        count_params(c)
    assert model_from_hf_config(c, n_params=1e10, n_active_params=5e9).n_experts == 4


def test_unknown_override_is_rejected():
    with pytest.raises(TypeError, match="n_layer"):
        model_from_hf_config(CONFIGS / "llama-3.1-8b.json", n_layer=3)


# -- properties ----------------------------------------------------------------------------------
llama_like = st.fixed_dictionaries({
    "model_type": st.sampled_from(["llama", "mistral", "qwen2", "some_new_arch"]),
    "num_hidden_layers": st.integers(1, 96),
    "kv": st.sampled_from([1, 2, 4, 8]),
    "group": st.integers(1, 8),
    "head_dim": st.sampled_from([64, 80, 96, 128, 256]),
    "intermediate_size": st.integers(1, 60_000),
    "vocab_size": st.integers(1, 300_000),
    "tie_word_embeddings": st.booleans(),
})


def _build(d):
    heads = d["kv"] * d["group"]
    return {"model_type": d["model_type"], "num_hidden_layers": d["num_hidden_layers"],
            "num_attention_heads": heads, "num_key_value_heads": d["kv"],
            "hidden_size": heads * d["head_dim"], "intermediate_size": d["intermediate_size"],
            "vocab_size": d["vocab_size"], "tie_word_embeddings": d["tie_word_embeddings"]}


@settings(max_examples=60, deadline=None)
@given(llama_like)
def test_parts_sum_to_total_and_kv_formula(d):
    c = _build(d)
    counts = count_params(c)
    parts = sum(v for k, v in counts.items() if k not in ("total", "active"))
    assert counts["total"] == parts == counts["active"]          # dense: all active
    m = model_from_hf_config(c)
    assert m.kv_bytes_per_token == 2 * c["num_hidden_layers"] * d["kv"] * d["head_dim"] * 2
    assert m.n_params == counts["total"]


@settings(max_examples=40, deadline=None)
@given(llama_like)
def test_count_linear_in_layers_and_tying(d):
    c = _build(d)
    one_more = dict(c, num_hidden_layers=c["num_hidden_layers"] + 1)
    two_more = dict(c, num_hidden_layers=c["num_hidden_layers"] + 2)
    t0, t1, t2 = (count_params(x)["total"] for x in (c, one_more, two_more))
    assert t1 - t0 == t2 - t1 > 0
    tied, untied = dict(c, tie_word_embeddings=True), dict(c, tie_word_embeddings=False)
    assert count_params(untied)["total"] - count_params(tied)["total"] == \
        c["vocab_size"] * c["hidden_size"]


@settings(max_examples=40, deadline=None)
@given(llama_like, st.integers(2, 64), st.data())
def test_moe_active_never_exceeds_total(d, n_experts, data):
    top_k = data.draw(st.integers(1, n_experts))
    c = dict(_build(d), num_local_experts=n_experts, num_experts_per_tok=top_k)
    counts = count_params(c)
    assert 0 < counts["active"] <= counts["total"]
    assert (counts["active"] == counts["total"]) == (top_k == n_experts)
