"""Every config naming family loads, and its count matches one worked out here from first principles.

Each fixture in ``tests/data/hf_configs/`` is the published ``config.json`` of the Hugging Face
Hub repository named next to it. The counts below are written out layer by layer from the
architecture (which projections carry biases, how many norms, tied or not), reading the file's
own field names, independently of ``rooflinekit.hf_config``.
"""

import json
import os
import pathlib

import pytest

from rooflinekit import ModelShape
from rooflinekit.catalog import resolve_model
from rooflinekit.hf_config import count_params, find_config, load_hf_config
from rooflinekit.models import model_from_hf_config

CONFIGS = pathlib.Path(__file__).parent / "data" / "hf_configs"


def cfg(name):
    return json.loads((CONFIGS / f"{name}.json").read_text())


def layer_norm(width):
    return 2 * width                      # weight and bias


def linear(n_in, n_out, bias):
    return n_in * n_out + (n_out if bias else 0)


# -- first-principles counts, one per architecture ---------------------------------------------
def gpt2_count(c):
    # openai-community/gpt2: wte, wpe; per block ln_1, c_attn (h -> 3h), c_proj, ln_2, c_fc (h -> 4h:
    # no n_inner), c_proj; ln_f; the LM head is tied to wte.
    h, inner = c["n_embd"], c.get("n_inner") or 4 * c["n_embd"]
    block = (layer_norm(h) + linear(h, 3 * h, True) + linear(h, h, True) + layer_norm(h)
             + linear(h, inner, True) + linear(inner, h, True))
    return c["vocab_size"] * h + c["n_positions"] * h + c["n_layer"] * block + layer_norm(h)


def gptj_count(c):
    # EleutherAI/gpt-j-6b: n_inner null means 4h; q/k/v/out without bias, fc_in/fc_out with; one
    # ln_1 per block (attention and MLP in parallel); ln_f; an untied lm_head with a bias.
    h, inner, v = c["n_embd"], c["n_inner"] or 4 * c["n_embd"], c["vocab_size"]
    block = layer_norm(h) + 4 * linear(h, h, False) + linear(h, inner, True) + linear(inner, h, True)
    return v * h + c["n_layer"] * block + layer_norm(h) + linear(h, v, True)


def neox_count(c):
    # EleutherAI/gpt-neox-20b: two LayerNorms a block, fused biased qkv, dense, h->4h->h with
    # biases, final LayerNorm, untied embed_out without bias.
    h, i, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    block = (2 * layer_norm(h) + linear(h, 3 * h, True) + linear(h, h, True)
             + linear(h, i, True) + linear(i, h, True))
    return v * h + c["num_hidden_layers"] * block + layer_norm(h) + v * h


def falcon7b_count(c):
    # tiiuae/falcon-7b: multi-query (one K/V head of 64), no biases, one LayerNorm a block
    # (parallel attention), 4h MLP, tied head.
    h, heads = c["hidden_size"], c["num_attention_heads"]
    d = h // heads
    block = layer_norm(h) + h * (h + 2 * d) + h * h + 2 * h * 4 * h
    return c["vocab_size"] * h + c["num_hidden_layers"] * block + layer_norm(h)


def phi2_count(c):
    # microsoft/phi-2: one input_layernorm a block, biased q/k/v/dense and fc1/fc2, a final
    # LayerNorm and an untied biased lm_head.
    h, i, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    block = layer_norm(h) + 4 * linear(h, h, True) + linear(h, i, True) + linear(i, h, True)
    return v * h + c["num_hidden_layers"] * block + layer_norm(h) + linear(h, v, True)


def llama_like_count(c, *, qkv_bias=False, norms_per_layer=2, qk_norm=0, tied=False):
    # RMSNorm (weight only), q/k/v/o, gated MLP of three matrices.
    h, i, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    heads = c["num_attention_heads"]
    kv = c.get("num_key_value_heads", heads)
    d = c.get("head_dim") or h // heads
    attn = h * heads * d + 2 * h * kv * d + heads * d * h
    if qkv_bias:
        attn += heads * d + 2 * kv * d
    block = attn + 2 * qk_norm * d + 3 * h * i + norms_per_layer * h
    return v * h * (1 if tied else 2) + c["num_hidden_layers"] * block + h


def mixtral_count(c):
    # mistralai/Mixtral-8x7B-v0.1: the MLP is num_local_experts gated experts and a router.
    h, i, e = c["hidden_size"], c["intermediate_size"], c["num_local_experts"]
    heads, kv = c["num_attention_heads"], c["num_key_value_heads"]
    d = h // heads
    attn = 2 * h * heads * d + 2 * h * kv * d
    block = attn + e * 3 * h * i + e * h + 2 * h
    return 2 * c["vocab_size"] * h + c["num_hidden_layers"] * block + h


def deepseek_v3_count(c):
    # deepseek-ai/DeepSeek-V3: MLA (low-rank q with its RMSNorm; compressed kv plus the shared
    # rotary key, its RMSNorm, the up-projection to per-head keys and values; output), three
    # dense layers, then 256 routed + 1 shared experts and a gate with correction biases.
    h, heads = c["hidden_size"], c["num_attention_heads"]
    qr, kvr = c["q_lora_rank"], c["kv_lora_rank"]
    nope, rope, vd = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
    attn = (h * qr + qr + qr * heads * (nope + rope)
            + h * (kvr + rope) + kvr + kvr * heads * (nope + vd) + heads * vd * h)
    dense = 3 * h * c["intermediate_size"]
    e, mi = c["n_routed_experts"], c["moe_intermediate_size"]
    moe = (e + c["n_shared_experts"]) * 3 * h * mi + e * h + e
    n_dense = c["first_k_dense_replace"]
    n_moe = c["num_hidden_layers"] - n_dense
    layers = n_dense * (attn + dense + 2 * h) + n_moe * (attn + moe + 2 * h)
    return 2 * c["vocab_size"] * h + layers + h


def siglip_count(v):
    # SigLIP vision tower: patch Conv2d (with bias), one learned position per patch, layers of
    # LayerNorm, biased q/k/v/out, LayerNorm, biased fc1/fc2; a post-LayerNorm; no pooling head.
    h, i = v["hidden_size"], v["intermediate_size"]
    patches = (v["image_size"] // v["patch_size"]) ** 2
    layer = 2 * layer_norm(h) + 4 * linear(h, h, True) + linear(h, i, True) + linear(i, h, True)
    return (3 * v["patch_size"] ** 2 * h + h + patches * h + v["num_hidden_layers"] * layer
            + layer_norm(h))


def whisper_encoder_count(a):
    # Qwen2-Audio's Whisper encoder: two Conv1d of kernel 3, learned positions, layers of
    # LayerNorm, q/v/out with bias and k without, LayerNorm, fc1/fc2; a final LayerNorm.
    d, f = a["d_model"], a["encoder_ffn_dim"]
    convs = a["num_mel_bins"] * d * 3 + d + d * d * 3 + d
    layer = (2 * layer_norm(d) + 3 * linear(d, d, True) + linear(d, d, False)
             + linear(d, f, True) + linear(f, d, True))
    return (convs + a["max_source_positions"] * d + a["encoder_layers"] * layer
            + layer_norm(d))


FAMILIES = {
    # name: (first-principles count, Hugging Face Hub repository of the config)
    "gpt2": (lambda c: gpt2_count(c), "openai-community/gpt2"),
    "gpt-j-6b": (lambda c: gptj_count(c), "EleutherAI/gpt-j-6b"),
    "gpt-neox-20b": (lambda c: neox_count(c), "EleutherAI/gpt-neox-20b"),
    "falcon-7b": (lambda c: falcon7b_count(c), "tiiuae/falcon-7b"),
    "phi-2": (lambda c: phi2_count(c), "microsoft/phi-2"),
    "phi-3-mini-4k-instruct": (lambda c: llama_like_count(c), "microsoft/Phi-3-mini-4k-instruct"),
    "gemma-7b": (lambda c: llama_like_count(c, tied=True), "google/gemma-7b"),
    "gemma-2-9b-it": (lambda c: llama_like_count(c, tied=True, norms_per_layer=4),
                      "google/gemma-2-9b-it"),
    "qwen2.5-7b": (lambda c: llama_like_count(c, qkv_bias=True, tied=c["tie_word_embeddings"]),
                   "Qwen/Qwen2.5-7B"),
    "mixtral-8x7b-v0.1": (lambda c: mixtral_count(c), "mistralai/Mixtral-8x7B-v0.1"),
    "deepseek-v3": (lambda c: deepseek_v3_count(c), "deepseek-ai/DeepSeek-V3"),
}


@pytest.mark.parametrize("name", list(FAMILIES))
def test_family_count_from_first_principles(name):
    count, _repo = FAMILIES[name]
    c = cfg(name)
    assert count_params(c)["total"] == count(c)
    m = model_from_hf_config(CONFIGS / f"{name}.json")
    assert m.n_params == count(c)


def test_published_totals_of_the_new_families():
    # Model cards: GPT-2 124M (124,439,808 counted by transformers), Phi-2 2.7B
    # (2,779,683,840), Gemma 7B 8.54B, GPT-J 6B (model card: 6,053,381,344; the counted
    # matrices give 6,050,882,784, 0.04 % below).
    assert count_params(cfg("gpt2"))["total"] == 124_439_808
    assert count_params(cfg("phi-2"))["total"] == 2_779_683_840
    assert count_params(cfg("gemma-7b"))["total"] == pytest.approx(8.54e9, rel=1e-3)
    assert count_params(cfg("gpt-j-6b"))["total"] == pytest.approx(6_053_381_344, rel=1e-3)


def test_gpt_style_fields():
    gptj = model_from_hf_config(CONFIGS / "gpt-j-6b.json")
    assert (gptj.n_layers, gptj.n_heads, gptj.n_kv_heads, gptj.head_dim) == (28, 16, 16, 256)
    assert gptj.intermediate_size == 4 * 4096          # n_inner: null
    assert gptj.max_context == 2048 and not gptj.tie_word_embeddings
    gpt2 = model_from_hf_config(CONFIGS / "gpt2.json")
    assert (gpt2.hidden_size, gpt2.intermediate_size, gpt2.tie_word_embeddings) == (768, 3072, True)
    phi = model_from_hf_config(CONFIGS / "phi-2.json")
    assert (phi.head_dim, phi.n_kv_heads, phi.bytes_per_param) == (80, 32, 2)


# -- multimodal -----------------------------------------------------------------------------
def test_gemma3_vision_tower_counted():
    # google/gemma-3-4b-it: the text fields left out take Gemma3TextConfig's defaults (8 heads,
    # 4 KV heads of 256, vocabulary 262,208, tied); the SigLIP tower (417M, Gemma 3 report) and
    # the projector (1152 x 2560 and an RMSNorm of 1152) are counted in the total, not in the
    # active count. Published: 4.3B (4,300,079,472 on the Hub).
    c = cfg("gemma-3-4b-it")
    text = {**c["text_config"], "vocab_size": 262_208, "num_attention_heads": 8,
            "num_key_value_heads": 4, "head_dim": 256}
    language = llama_like_count(text, tied=True, norms_per_layer=4, qk_norm=1)
    vision = siglip_count(c["vision_config"]) + 1152 * 2560 + 1152
    counts = count_params(c)
    assert counts["vision"] == vision
    assert siglip_count(c["vision_config"]) == pytest.approx(417e6, rel=1e-3)
    assert counts["total"] == language + vision == 4_300_079_472
    assert counts["active"] == language
    m = model_from_hf_config(CONFIGS / "gemma-3-4b-it.json")
    assert (m.n_layers, m.n_heads, m.n_kv_heads, m.head_dim) == (34, 8, 4, 256)
    assert (m.sliding_window, m.n_sliding_layers) == (1024, 34 - 34 // 6)
    assert m.n_params == 4_300_079_472 and m.n_active_params == language


def test_qwen2_audio_tower_counted():
    # Qwen/Qwen2-Audio-7B: text geometry from Qwen2Config's defaults (hidden 4096, 32 layers,
    # 32 heads, no window unless use_sliding_window), a Whisper-large encoder and a linear
    # projector 1280 -> 4096. Published: 8.4B.
    c = cfg("qwen2-audio-7b")
    text = {**c["text_config"], "hidden_size": 4096, "num_hidden_layers": 32,
            "num_attention_heads": 32, "num_key_value_heads": 32}
    language = llama_like_count(text, qkv_bias=True)
    audio = whisper_encoder_count(c["audio_config"]) + linear(1280, 4096, True)
    counts = count_params(c)
    assert counts["audio"] == audio and counts["vision"] == 0
    assert counts["total"] == language + audio
    assert counts["total"] == pytest.approx(8.4e9, rel=0.01)
    assert counts["active"] == language
    assert model_from_hf_config(c).sliding_window is None


def test_text_defaults_apply_only_to_nested_text_configs():
    bare = {k: v for k, v in cfg("qwen2.5-7b").items() if k != "num_attention_heads"}
    with pytest.raises(ValueError, match="num_attention_heads"):
        count_params(bare)
    nested = load_hf_config({"text_config": {"model_type": "gemma3_text", "hidden_size": 64,
                                             "num_hidden_layers": 2, "head_dim": 32}})
    assert nested["head_dim"] == 32 and nested["num_attention_heads"] == 8


def test_vision_config_errors_name_the_field():
    c = cfg("gemma-3-4b-it")
    c["vision_config"] = dict(c["vision_config"], image_size=900)
    with pytest.raises(ValueError, match="image_size"):
        count_params(c)
    c["vision_config"] = "siglip"
    with pytest.raises(TypeError, match="vision_config"):
        count_params(c)


# -- where a config comes from: file, folder, repo id in the local cache ------------------------
def _cache(tmp_path, repo, name, *, ref=True, rev="0123abcd"):
    snap = tmp_path / "hub" / f"models--{repo.replace('/', '--')}" / "snapshots" / rev
    snap.mkdir(parents=True)
    (snap / "config.json").write_text((CONFIGS / f"{name}.json").read_text())
    if ref:
        refs = snap.parents[1] / "refs"
        refs.mkdir(exist_ok=True)
        (refs / "main").write_text(rev + "\n")
    return snap


def test_repo_id_resolves_offline_from_hf_home(tmp_path, monkeypatch):
    snap = _cache(tmp_path, "EleutherAI/gpt-j-6b", "gpt-j-6b")
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    assert find_config("EleutherAI/gpt-j-6b") == str(snap / "config.json")
    m = resolve_model("EleutherAI/gpt-j-6b")
    assert m.name == "EleutherAI/gpt-j-6b" and m.n_layers == 28
    assert str(snap / "config.json") in m.source
    direct = ModelShape.from_hf_config("EleutherAI/gpt-j-6b")
    assert (direct.name, direct.n_params) == ("EleutherAI/gpt-j-6b", m.n_params)


def test_repo_id_follows_refs_main(tmp_path):
    _cache(tmp_path, "org/model", "gpt2", rev="old")
    newer = _cache(tmp_path, "org/model", "phi-2", rev="new")   # refs/main -> "new"
    assert find_config("org/model", cache_dir=tmp_path / "hub") == str(newer / "config.json")


def test_uncached_repo_id_fails_without_network(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    with pytest.raises(ValueError, match="local Hugging Face cache.*nothing is downloaded"):
        resolve_model("someone/not-downloaded")


def test_an_uncached_repo_id_the_catalogue_lists_is_its_row(tmp_path, monkeypatch):
    """Offline, a repo id the catalogue lists as an alias is that catalogue model; in the
    cache, its own config comes first (the exact file the server loaded)."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    assert resolve_model("meta-llama/Meta-Llama-3.1-8B-Instruct") == \
        resolve_model("llama-3.1-8b")
    assert resolve_model("openai/gpt-oss-120b", name="mine").name == "mine"
    _cache(tmp_path, "openai/gpt-oss-20b", "gpt2")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    cached = resolve_model("openai/gpt-oss-20b")
    assert cached.name == "openai/gpt-oss-20b" and cached.n_experts == 1


def test_folder_and_file_and_catalogue_name(tmp_path):
    folder = tmp_path / "phi-2"
    folder.mkdir()
    (folder / "config.json").write_text((CONFIGS / "phi-2.json").read_text())
    by_folder = resolve_model(folder)
    by_file = resolve_model(str(folder / "config.json"))
    # the config records its name ("_name_or_path"), which comes before the folder's
    assert by_folder.name == by_file.name == "microsoft/phi-2"
    assert by_folder.n_params == by_file.n_params == 2_779_683_840
    assert resolve_model(str(folder)).n_params == by_folder.n_params
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="holds no config.json"):
        resolve_model(empty)
    with pytest.raises(ValueError, match="does not exist"):
        resolve_model(str(tmp_path / "missing.json"))
    assert resolve_model("llama-3.1-8b").n_layers == 32          # catalogue name


def test_find_config_rejects_non_paths():
    with pytest.raises(TypeError, match="source"):
        find_config(42)


def test_default_cache_location(monkeypatch):
    from rooflinekit.hf_config import hf_cache_dir
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HF_HOME", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert hf_cache_dir() == os.path.join(os.path.expanduser("~"), ".cache", "huggingface", "hub")


def test_block_sparse_attention_with_its_own_index_is_refused_naming_the_field():
    """MiniMax-M3 (published config, byte for byte) keeps index keys for 57 of its 60 layers
    (``sparse_attention_config``: 4 index heads of 128) beside its KV cache. Read as dense
    attention it came out 122,880 B a token with the index left out; it is refused instead, and
    the same config without the sparse attention switched on loads."""
    config = cfg("minimax-m3")
    assert config["sparse_attention_config"]["use_sparse_attention"] is True
    with pytest.raises(ValueError, match="sparse_attention_config"):
        ModelShape.from_hf_config(CONFIGS / "minimax-m3.json")
    dense = {**config, "sparse_attention_config": {**config["sparse_attention_config"],
                                                   "use_sparse_attention": False}}
    # 60 layers × K and V × 4 KV heads × 128 × 2 bytes
    assert model_from_hf_config(dense).kv_bytes_per_token == 60 * 2 * 4 * 128 * 2
    with pytest.raises(TypeError, match="sparse_attention_config"):
        model_from_hf_config({**config, "sparse_attention_config": [1]})
    with pytest.raises(TypeError, match="use_sparse_attention"):
        model_from_hf_config({**config, "sparse_attention_config": {"use_sparse_attention": "yes"}})
