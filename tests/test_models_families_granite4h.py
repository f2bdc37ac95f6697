"""Granite-4.0-H (``granitemoehybrid``): H-Small, H-Tiny and H-Micro, counted from configs
built here from the model card's published shapes; the catalogue row Granite-4.0-H-Small.

No verbatim copy of a Granite-4.0-H ``config.json`` was found among the public sources this
work could read (the Hub itself was out of reach; the copies found were trimmed or quoted
"relevant fields only"), so each config below is built in this file from the architecture
table of IBM's model card, as the copy in
DocDBrown/IBMGranite4Tiny@60d949f9a1b5df8e0fb09bf970d15a8188fb963d:``README.md`` (the
Granite-4.0-H-Tiny card, whose table covers all four Granite 4.0 models) gives it:

=============================  ========  ========  ========
card row                       H Small   H Tiny    H Micro
=============================  ========  ========  ========
Embedding size                 4096      1536      2048
Layers                         4 attention / 36 Mamba2 (all three)
Attention head size            128       128       64
Attention heads / KV heads     32 / 8    12 / 4    32 / 8
Mamba2 state size / heads      128/128   128/48    128/64
MLP / shared expert width      1536      1024      8192
Experts / active / width       72/10/768 64/6/512  none (dense)
# Parameters / active          32B / 9B  7B / 1B   3B / 3B
=============================  ========  ========  ========

with "shared input/output embeddings" (tied) and a 128K context. What the card does not state
takes ``GraniteMoeHybridConfig``'s defaults: ``mamba_expand`` 2, so ``mamba_d_head`` =
2·h / heads (64 in all three), one group, a convolution kernel of 4 with a bias, no projection
biases. The vocabulary, 100,352, is not on the card: it is the one public (trimmed) copies of
the Granite 4.0 configs give. Where the four attention layers sit changes no number here.

H-Small's built config is also what two partial public copies of its published file state,
field for field (``test_h_small_config_agrees_with_the_public_copies``), and the catalogue row
Granite-4.0-H-Small is that config read by ``ModelShape.from_hf_config``:

- MrZoller/headroom@633d12345c2f437fcfafcd499a9dea687b16cd04:``scripts/build-catalog.test.ts``
  (``GRANITE_4_H_SMALL``, citing huggingface.co/ibm-granite/granite-4.0-h-small/raw/main/
  config.json, "trimmed to the keys these two functions read"): 40 layers, 32 heads, 8 KV
  heads, hidden 4,096, ``mamba_d_state`` 128, ``mamba_d_conv`` 4, ``mamba_d_head`` 64,
  ``mamba_n_heads`` 128, ``mamba_expand`` 2, ``mamba_n_groups`` 1, ``layer_types`` with
  attention at 5, 15, 25 and 35;
- a document quoting the same file "relevant fields only, fetched live" (public; the index
  names no repository; found by the string ``"vocab_size": 100352,``): ``granitemoehybrid``,
  hidden 4,096, 40 layers, 32 / 8 heads, 72 local experts, 10 a token,
  ``shared_intermediate_size`` 1,536, ``intermediate_size`` 768, ``mamba_d_state`` 128,
  ``mamba_d_conv`` 4, ``mamba_expand`` 2, tied embeddings, vocabulary 100,352, bfloat16; 36
  Mamba and 4 attention layers.

Neither states ``mamba_conv_bias`` or ``mamba_proj_bias``: the count takes the config class's
defaults (a bias on the convolution, 36 · 8,448 = 304,128 parameters; none on the
projections). Cross-checks, not sources: the GGUF metadata of Ollama's ``granite4:small-h``
(ollama/ollama#12982: 40 blocks, 4,096, feed-forward 768, 32 heads, KV heads
``[0, 0, 0, 0, 0, 8, 0, ...]``, 72 / 10 experts, vocabulary 100,352; its context length
1,048,576 is the 2^20 that llama.cpp's converter writes for a hybrid without RoPE), Docker's card of that GGUF
(docker/model-cards@449bb3107bb0dc45cf7dde62195814a50cbf8141:``ai/granite-4.0-h-small.md``:
32.21 B parameters) and a third party's Hub preflight giving the safetensors 59.99 "GB"
(32,207,337,984 · 2 B = 59.99 GiB).

Every expected number is derived by hand, the module shapes being those of transformers'
``modular_granitemoehybrid.py``: two RMSNorms a layer; a ``BambaMixer`` (Mamba-2: ``in_proj``
h → 2·I + 2·G·N + H, a depthwise convolution of ``I + 2·G·N`` channels with a bias,
``dt_bias``, ``A_log``, ``D``, a gated RMSNorm of I, ``out_proj`` I → h) or attention (q, k, v,
o, no bias); ``shared_mlp`` in every layer (``input_linear`` h → 2·width, ``output_linear``
width → h) and, with experts, ``block_sparse_moe`` (E experts of the same three matrices and a
router of E × h).

Against the card (tolerance 3 %, the brief's): H-Small's 32.21B total and 8.80B active match
"32B" and "9B"; H-Tiny's 6.94B total matches "7B", but its 1.47B active (1.31B without the
embedding table) is far from the card's "1B", which these tests do not claim to match;
H-Micro's 3.19B is 6 % above the card's "3B" (its count without the tied embedding table,
2.99B, is within 1 %). The KV and state bytes are exact.
"""

import pytest

from rooflinekit import ModelShape, catalog, memory
from rooflinekit.hf_config import count_params

VOCAB, LAYERS, N_ATTENTION, N_MAMBA, STATE, KERNEL = 100_352, 40, 4, 36, 128, 4
LAYER_TYPES = (["mamba"] * 5 + ["attention"] + ["mamba"] * 9 + ["attention"]
               + ["mamba"] * 9 + ["attention"] + ["mamba"] * 9 + ["attention"] + ["mamba"] * 4)

# (hidden, heads, KV heads, Mamba heads, shared width, experts, active experts, expert width)
CARD = {
    "H-Small": (4096, 32, 8, 128, 1536, 72, 10, 768),
    "H-Tiny": (1536, 12, 4, 48, 1024, 64, 6, 512),
    "H-Micro": (2048, 32, 8, 64, 8192, 0, 0, None),
}


def config(model: str) -> dict:
    """The card's shapes as a ``granitemoehybrid`` config.json."""
    h, heads, kv, m_heads, shared, experts, active, width = CARD[model]
    return {
        "model_type": "granitemoehybrid", "architectures": ["GraniteMoeHybridForCausalLM"],
        "hidden_size": h, "num_hidden_layers": LAYERS, "layer_types": LAYER_TYPES,
        "num_attention_heads": heads, "num_key_value_heads": kv,
        "mamba_n_heads": m_heads, "mamba_d_head": 2 * h // m_heads, "mamba_d_state": STATE,
        "num_local_experts": experts, "num_experts_per_tok": active,
        "intermediate_size": width or shared, "shared_intermediate_size": shared,
        "vocab_size": VOCAB, "tie_word_embeddings": True, "max_position_embeddings": 131_072,
        "position_embedding_type": "nope", "torch_dtype": "bfloat16",
    }


def params_by_hand(model: str):
    """(total, active, embedding table) parameters [count], from the module shapes."""
    h, heads, kv, m_heads, shared, experts, active, width = CARD[model]
    head_dim = h // heads                                     # 128, 128, 64: the card's
    inner = 2 * h                                             # mamba_expand 2
    conv_channels = inner + 2 * 1 * STATE                     # one group
    mamba = (h * (2 * inner + 2 * STATE + m_heads)            # in_proj
             + conv_channels * KERNEL + conv_channels         # conv1d weight, bias
             + 3 * m_heads + inner                            # dt_bias, A_log, D; gated norm
             + inner * h)                                     # out_proj
    attention = h * heads * head_dim + 2 * h * kv * head_dim + heads * head_dim * h
    shared_mlp = 3 * h * shared
    expert = 3 * h * width if experts else 0
    moe = experts * expert + experts * h                      # experts and router
    norms = 2 * LAYERS * h + h
    embedding = VOCAB * h                                     # tied to the LM head
    total = (N_MAMBA * mamba + N_ATTENTION * attention + LAYERS * (shared_mlp + moe)
             + norms + embedding)
    return total, total - LAYERS * (experts - active) * expert, embedding


@pytest.mark.parametrize("model", sorted(CARD))
def test_parameters_match_a_hand_count(model):
    total, active, _ = params_by_hand(model)
    parts = count_params(config(model))
    assert (parts["total"], parts["active"]) == (total, active)
    assert parts["lm_head"] == 0                              # tied
    shape = ModelShape.from_hf_config(config(model))
    assert (shape.n_params, shape.n_active_params) == (total, active)


def test_h_small_matches_the_card():
    total, active, _ = params_by_hand("H-Small")
    assert (total, active) == (32_207_337_984, 8_803_121_664)
    assert total == pytest.approx(32e9, rel=0.03)             # "32B"
    assert active == pytest.approx(9e9, rel=0.03)             # "9B"


def test_h_tiny_total_matches_the_card():
    total, active, embedding = params_by_hand("H-Tiny")
    assert total == pytest.approx(7e9, rel=0.03)              # "7B"
    # the card's "1B active" is rounded far down: 1.47B counted, 1.31B without the table
    assert (active, active - embedding) == (1_465_470_528, 1_311_329_856)


def test_h_micro_is_dense_and_its_card_counts_without_the_embedding_table():
    total, active, embedding = params_by_hand("H-Micro")
    parts = count_params(config("H-Micro"))
    assert total == active and parts["experts"] == parts["router"] == 0
    assert parts["mlp"] == LAYERS * 3 * 2048 * 8192           # shared_mlp is the dense MLP
    assert total == 3_191_396_096
    assert total - embedding == pytest.approx(3e9, rel=0.03)  # "3B"


def test_experts_and_shared_mlp_land_in_their_parts():
    parts = count_params(config("H-Small"))
    assert parts["experts"] == LAYERS * 72 * 3 * 4096 * 768
    assert parts["shared_experts"] == LAYERS * 3 * 4096 * 1536
    assert parts["router"] == LAYERS * 72 * 4096
    assert parts["mlp"] == 0


def test_one_local_expert_is_a_mixture_of_one():
    # transformers' decoder layer builds block_sparse_moe whenever num_local_experts > 0
    one = {**config("H-Tiny"), "num_local_experts": 1, "num_experts_per_tok": 1}
    parts = count_params(one)
    assert parts["experts"] == LAYERS * 3 * 1536 * 512 and parts["router"] == LAYERS * 1536
    assert parts["shared_experts"] == LAYERS * 3 * 1536 * 1024 and parts["mlp"] == 0
    assert parts["active"] == parts["total"]


@pytest.mark.parametrize("model", sorted(CARD))
@pytest.mark.parametrize("context", [4096, 32_768, 131_072])
def test_kv_and_state_per_sequence_match_a_hand_derivation(model, context):
    h, heads, kv, m_heads = CARD[model][:4]
    shape = ModelShape.from_hf_config(config(model))
    per_token = N_ATTENTION * 2 * kv * (h // heads) * 2       # 4 attention layers, bf16
    head_dim = 2 * h // m_heads
    ssm = m_heads * head_dim * STATE * 4                      # fp32
    convolution = (KERNEL - 1) * (m_heads * head_dim + 2 * STATE) * 2      # bf16
    state = N_MAMBA * (ssm + convolution)
    assert (shape.n_kv_layers, shape.n_mamba_layers) == (N_ATTENTION, N_MAMBA)
    assert shape.kv_bytes_per_token == per_token
    assert shape.state_bytes_per_sequence == state
    assert memory.kv_bytes_per_sequence(shape, context) == per_token * context + state


def test_h_small_state_in_numbers():
    shape = ModelShape.from_hf_config(config("H-Small"))
    # 36 * (128*64*128*4 + 3*(8192 + 256)*2) = 36 * (4,194,304 + 50,688)
    assert shape.state_bytes_per_sequence == 152_819_712
    assert shape.kv_bytes_per_token == 4 * 2 * 8 * 128 * 2 == 16_384


@pytest.mark.parametrize("change, error, field", [
    ({"mamba_d_head": 32}, ValueError, "mamba_d_head"),       # 128 * 32 != 2 * 4096
    ({"mamba_expand": 3}, ValueError, "mamba_expand"),
    ({"shared_intermediate_size": None}, ValueError, "shared_intermediate_size"),
    ({"num_experts_per_tok": 73}, ValueError, "num_experts_per_tok"),
    ({"layer_types": LAYER_TYPES[:-1]}, ValueError, "layer_types"),
    ({"mamba_proj_bias": 1}, TypeError, "mamba_proj_bias"),
])
def test_bad_granite_fields_are_named(change, error, field):
    bad = {k: v for k, v in {**config("H-Small"), **change}.items() if v is not None}
    with pytest.raises(error, match=field):
        count_params(bad)


# -- H-Small: the public copies of its config.json and the catalogue row ----------------------------
# GraniteMoeHybridConfig's defaults, which config() leaves to the reader
DEFAULTS = {"mamba_expand": 2, "mamba_d_conv": 4, "mamba_n_groups": 1}
COPIES = {
    "MrZoller/headroom": {
        "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 8,
        "hidden_size": 4096, "mamba_d_state": 128, "mamba_d_conv": 4, "mamba_d_head": 64,
        "mamba_n_heads": 128, "mamba_expand": 2, "mamba_n_groups": 1,
        "layer_types": ["attention" if (i - 5) % 10 == 0 else "mamba" for i in range(40)],
    },
    "a document, relevant fields only": {
        "model_type": "granitemoehybrid", "hidden_size": 4096, "num_hidden_layers": 40,
        "num_attention_heads": 32, "num_key_value_heads": 8, "num_local_experts": 72,
        "num_experts_per_tok": 10, "shared_intermediate_size": 1536, "intermediate_size": 768,
        "mamba_d_state": 128, "mamba_d_conv": 4, "mamba_expand": 2, "tie_word_embeddings": True,
        "vocab_size": 100352, "torch_dtype": "bfloat16",
    },
}
ROW = "Granite-4.0-H-Small"
ROW_FIELDS = ("n_layers", "n_heads", "n_kv_heads", "head_dim", "hidden_size",
              "intermediate_size", "vocab_size", "n_experts", "n_experts_per_token",
              "kv_lora_rank", "qk_rope_head_dim", "sliding_window", "n_sliding_layers",
              "tie_word_embeddings", "n_params", "n_active_params", "kv_bytes_per_token",
              "kv_bytes_per_element", "max_context", "bytes_per_param", "n_kv_layers",
              "n_attention_layers", "n_mamba_layers", "n_linear_attention_layers",
              "state_bytes_per_sequence", "weight_bytes", "active_weight_bytes")


@pytest.mark.parametrize("copy", sorted(COPIES))
def test_h_small_config_agrees_with_the_public_copies(copy):
    built = {**DEFAULTS, **config("H-Small")}
    assert {k: built[k] for k in COPIES[copy]} == COPIES[copy]


def test_catalogue_row_is_the_built_h_small():
    row = catalog.model(ROW)
    built = ModelShape.from_hf_config(config("H-Small"), name=ROW)
    for field in ROW_FIELDS:
        assert getattr(row, field) == getattr(built, field), field
    assert (row.n_params, row.n_active_params) == params_by_hand("H-Small")[:2]
    assert (row.n_kv_layers, row.n_mamba_layers, row.n_experts, row.n_experts_per_token) == \
        (N_ATTENTION, N_MAMBA, 72, 10)
    assert row.is_hybrid and row.is_moe and row.attention == "GQA-8"
    assert row.weight_bytes == 2 * 32_207_337_984                # bf16: 59.99 GiB
    assert row.source.startswith("https://huggingface.co/ibm-granite/granite-4.0-h-small")
    for alias in ("granite-4.0-h-small", "ibm-granite/granite-4.0-h-small"):
        assert catalog.model(alias).name == ROW


def test_catalogue_row_matches_the_card():
    row = catalog.model(ROW)
    assert row.n_params == pytest.approx(32e9, rel=0.03)          # "32B"
    assert row.n_active_params == pytest.approx(9e9, rel=0.03)    # "9B"
    assert row.max_context == 128 * 1024                          # "128K"


# 4 attention layers of 8 KV heads of 128, bf16: 16,384 B a token; 36 Mamba-2 layers, each a
# 128·64·128 fp32 SSM state and a (4 − 1)·(8,192 + 2·128) bf16 convolution state
@pytest.mark.parametrize("context, expected", [
    (4096, 16_384 * 4096 + 152_819_712),           # 219,928,576
    (32_768, 16_384 * 32_768 + 152_819_712),       # 689,690,624
    (131_072, 16_384 * 131_072 + 152_819_712),     # 2,300,303,360
])
def test_catalogue_row_kv_and_state_per_sequence_by_hand(context, expected):
    per_token = N_ATTENTION * 2 * 8 * 128 * 2
    state = N_MAMBA * (128 * 64 * STATE * 4 + (KERNEL - 1) * (2 * 4096 + 2 * 1 * STATE) * 2)
    assert (per_token, state) == (16_384, 152_819_712)
    assert per_token * context + state == expected
    row = catalog.model(ROW)
    assert memory.kv_bytes_per_sequence(row, context) == expected
