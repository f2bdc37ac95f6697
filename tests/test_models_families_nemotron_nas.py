"""Llama-3.3-Nemotron-Super-49B-v1: Llama-3.3-70B pruned layer by layer (DeciLM's block_configs).

Config: ``tests/data/hf_configs/llama-3.3-nemotron-super-49b-v1.json`` (source in the README
there). Its 80 ``block_configs`` give each layer an attention (``n_heads_in_group`` query heads
per KV head, or ``no_op``: no attention, no KV cache) and an MLP of ``ffn_mult``
(transformers' ``_ffn_mult_to_intermediate_size``: ``int(2 · ffn_mult · h / 3)`` rounded up to
a multiple of 256). Module shapes as ``modeling_decilm.py`` builds them: Llama's q, k, v, o
without bias, a gated MLP of three matrices, an input RMSNorm with each attention and a
post-attention RMSNorm with each MLP, a final RMSNorm, untied embedding table and LM head.

Published: "49B parameters" (NVIDIA NeMo AutoModel's page for the model). Tolerance: 3 % on
parameters, exact on bytes.
"""

import collections
import json
import pathlib

import pytest

from rooflinekit import memory
from rooflinekit.hf_config import count_params
from rooflinekit.models import model_from_hf_config

CONFIG = pathlib.Path(__file__).parent / "data" / "hf_configs" / "llama-3.3-nemotron-super-49b-v1.json"
H, HEADS, D, VOCAB = 8192, 64, 128, 128_256
# ffn_mult: MLP width, as int(2 * mult * 8192 / 3) rounded up to a multiple of 256
WIDTHS = {5.25: 28_672, 2.625: 14_336, 1.3125: 7168, 1.0: 5632, 0.5: 2816, 3.28125: 17_920}


def layers():
    """[(attention on, ffn_mult)] per layer."""
    blocks = json.loads(CONFIG.read_text())["block_configs"]
    return [(not b["attention"]["no_op"], b["ffn"]["ffn_mult"]) for b in blocks]


def test_the_layer_mix():
    mix = collections.Counter(layers())
    # 49 attention layers (48 with the 70B's MLP of 28,672, one of 14,336), 31 MLP-only ones
    assert mix == {(True, 5.25): 48, (True, 2.625): 1, (False, 1.3125): 10, (False, 1.0): 8,
                   (False, 0.5): 6, (False, 2.625): 5, (False, 3.28125): 1, (False, 5.25): 1}
    for mult, width in WIDTHS.items():
        assert width == -(-int(2 * mult * H / 3) // 256) * 256


def test_parameters_by_hand_and_against_the_card():
    n_attention = sum(on for on, _ in layers())                        # 49
    kv = HEADS // 8                                                    # n_heads_in_group 8
    attention = H * (HEADS + 2 * kv) * D + HEADS * D * H
    mlp = sum(3 * H * WIDTHS[mult] for _, mult in layers())
    norms = n_attention * H + 80 * H + H
    total = n_attention * attention + mlp + norms + 2 * VOCAB * H
    counts = count_params(CONFIG)
    assert (counts["total"], counts["active"]) == (total, total)
    assert total == pytest.approx(49e9, rel=0.03)                      # 49.87B


@pytest.mark.parametrize("context", [4096, 32_768, 131_072])
def test_kv_bytes_by_hand(context):
    m = model_from_hf_config(CONFIG)
    per_token = 49 * 2 * 8 * D * 2                                     # 200,704 B
    assert (m.n_kv_heads, m.n_kv_layers, m.kv_bytes_per_token) == (8, 49, per_token)
    assert m.state_bytes_per_sequence == 0
    assert memory.kv_bytes_per_sequence(m, context) == per_token * context


def _changed(i, part, **change):
    cfg = json.loads(CONFIG.read_text())
    cfg["block_configs"][i][part].update(change)
    return cfg


@pytest.mark.parametrize("cfg, field", [
    (_changed(0, "attention", replace_with_linear=True), r"block_configs\[0\]\.attention"),
    (_changed(0, "attention", window_length=4096), r"block_configs\[0\]\.attention"),
    (_changed(3, "ffn", ffn_mult=None), r"block_configs\[3\]\.ffn\.ffn_mult"),
    (_changed(0, "attention", n_heads_in_group=4), "block_configs"),
    (_changed(0, "attention", n_heads_in_group=0), r"block_configs\[0\]\.attention"),
    ({**json.loads(CONFIG.read_text()), "num_hidden_layers": 81}, "block_configs"),
])
def test_bad_block_configs_are_named(cfg, field):
    with pytest.raises((ValueError, TypeError), match=field):
        count_params(cfg)
