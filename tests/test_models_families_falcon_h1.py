"""Falcon-H1: Falcon-H1-0.5B, counted from its config.json.

The config (``tests/data/hf_configs/falcon-h1-0.5b.json``, source in the README there) is
transcribed field for field from the copy NVIDIA's Megatron-Bridge keeps in its Falcon-H1
bridge tests: NVIDIA-NeMo/Megatron-Bridge@acc8ca4b025d76ea7bf7735f76209685dbc9a8e7:
``tests/unit_tests/models/falcon_h1/test_falcon_h1_bridge.py`` (``FALCON_H1_500M_CONFIG``).
That copy leaves out ``mamba_d_ssm``; ``FalconH1Config`` requires it to equal
``mamba_n_heads · mamba_d_head`` (24 · 64 = 1,536), the width taken here. Its 16,384-token
context is the one transformers' Falcon-H1 table gives the 0.5B instruction-tuned model (4K
for the base model); the shapes are the same.

Every expected number below is derived by hand from the config's numbers, the module shapes
being those of transformers' ``modeling_falcon_h1.py``:

- Every layer runs a Mamba-2 mixer beside attention, both reading ``input_layernorm``, then
  ``pre_ff_layernorm`` and a gated MLP: 36 attention and 36 Mamba-2 mixers.
- Mamba-2 mixer (``FalconH1Mixer``; Dao and Gu, arXiv:2405.21060), I = 1,536, G = 1, N = 128,
  H = 24, K = 4: ``in_proj`` h → 2·I + 2·G·N + H (no bias: ``mamba_proj_bias`` false), a
  depthwise convolution of ``I + 2·G·N`` channels with a bias (``mamba_conv_bias``),
  ``dt_bias``, ``A_log``, ``D`` (H each), no gated norm (``mamba_rms_norm`` false) and
  ``out_proj`` I → h (no bias: ``projectors_bias`` false).
- Attention: q, k, v, o of 8 query and 2 KV heads of 64, no bias. MLP: gate, up, down of
  2,048, no bias. The muP multipliers scale activations (and a non-persistent buffer) and add
  no parameters.
- Untied embedding table and LM head.

Published figures: the Falcon-H1 release names the model 0.5B ("500M"); the Hugging Face Hub's
count of the released safetensors, 521,411,104 parameters for Falcon-H1-0.5B-Base, as the
public summary of emberian/h-05b-replay (a continued pretraining of it,
<https://huggingface.co/emberian/h-05b-replay>) quotes it. The count agrees with the latter
exactly; the name's 0.5B is 4.1 % below it. Tolerance: 3 % (the brief's), exact on bytes.
"""

import json
import pathlib

import pytest

from rooflinekit import ModelShape, memory
from rooflinekit.hf_config import count_params

CONFIG = pathlib.Path(__file__).parent / "data" / "hf_configs" / "falcon-h1-0.5b.json"

# the config's numbers
H, LAYERS, VOCAB = 1024, 36, 32_784
HEADS, KV_HEADS, HEAD_DIM = 8, 2, 64
WIDTH = 2048                                     # intermediate_size
M_HEADS, M_HEAD_DIM, GROUPS, STATE, KERNEL = 24, 64, 1, 128, 4
INNER = M_HEADS * M_HEAD_DIM                     # mamba_d_ssm, 1,536


def params_by_hand():
    """Total parameters [count], from the module shapes (a dense model: all active)."""
    conv_channels = INNER + 2 * GROUPS * STATE
    mamba = (H * (2 * INNER + 2 * GROUPS * STATE + M_HEADS)      # in_proj
             + conv_channels * KERNEL + conv_channels             # conv1d weight, bias
             + 3 * M_HEADS                                        # dt_bias, A_log, D
             + INNER * H)                                         # out_proj
    attention = H * HEADS * HEAD_DIM + 2 * H * KV_HEADS * HEAD_DIM + HEADS * HEAD_DIM * H
    mlp = 3 * H * WIDTH
    norms = 2 * LAYERS * H + H
    embeddings = 2 * VOCAB * H
    return LAYERS * (mamba + attention + mlp) + norms + embeddings


def test_parameters_match_a_hand_count_and_the_published_figures():
    total = params_by_hand()
    parts = count_params(CONFIG)
    assert parts["total"] == parts["active"] == total == 521_411_104
    model = ModelShape.from_hf_config(CONFIG)
    assert model.n_params == model.n_active_params == total
    assert total == pytest.approx(521_411_104, rel=0.03)     # the Hub's count, quoted
    assert total / 0.5e9 - 1 == pytest.approx(0.043, abs=0.001)   # the name rounds it down


def test_the_mup_multipliers_and_mamba_use_mlp_add_no_parameters():
    config = json.loads(CONFIG.read_text())
    plain = {k: v for k, v in config.items()
             if not k.endswith(("_multiplier", "_multipliers")) and k != "mamba_use_mlp"}
    assert count_params(plain) == count_params(config)


def test_the_optional_norm_and_biases_are_counted_when_set():
    config = json.loads(CONFIG.read_text())
    base = count_params(config)["attention"]
    projected = 2 * INNER + 2 * GROUPS * STATE + M_HEADS
    assert count_params({**config, "mamba_rms_norm": True})["attention"] == base + LAYERS * INNER
    assert (count_params({**config, "mamba_proj_bias": True})["attention"]
            == base + LAYERS * projected)
    assert count_params({**config, "projectors_bias": True})["attention"] == base + LAYERS * H
    assert (count_params({**config, "mamba_d_ssm": INNER})["total"]
            == count_params(config)["total"])


def state_by_hand():
    """Constant state of one sequence [bytes]: a Mamba-2 mixer in each of the 36 layers, an SSM
    state of H·d_head·N FP32 values and a convolution state of (K − 1)·(I + 2·G·N) bf16."""
    ssm = M_HEADS * M_HEAD_DIM * STATE * 4
    convolution = (KERNEL - 1) * (INNER + 2 * GROUPS * STATE) * 2
    return LAYERS * (ssm + convolution)


@pytest.mark.parametrize("context", [4096, 32_768, 131_072])
def test_kv_and_state_per_sequence_match_a_hand_derivation(context):
    model = ModelShape.from_hf_config(CONFIG)
    per_token = LAYERS * 2 * KV_HEADS * HEAD_DIM * 2          # every layer attends; bf16
    assert model.kv_bytes_per_token == per_token == 18_432
    assert (model.n_kv_layers, model.n_mamba_layers) == (36, 36)
    assert model.state_bytes_per_sequence == state_by_hand() == 28_698_624
    assert memory.kv_bytes_per_sequence(model, context) == per_token * context + state_by_hand()


@pytest.mark.parametrize("change, error, field", [
    ({"mamba_d_ssm": 1024}, ValueError, "mamba_d_ssm"),       # not n_heads * d_head
    ({"mamba_n_heads": 0}, ValueError, "mamba_n_heads"),
    ({"mamba_d_head": None}, ValueError, "mamba_d_head"),
    ({"projectors_bias": "no"}, TypeError, "projectors_bias"),
    ({"intermediate_size": None}, ValueError, "intermediate_size"),
])
def test_bad_falcon_h1_fields_are_named(change, error, field):
    config = {k: v for k, v in {**json.loads(CONFIG.read_text()), **change}.items()
              if v is not None}
    with pytest.raises(error, match=field):
        count_params(config)
