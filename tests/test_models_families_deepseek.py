"""DeepSeek-V3.2's sparse-attention indexer and DeepSeek's multi-token-prediction modules.

Configs: ``tests/data/hf_configs/deepseek-v3.2.json`` and ``deepseek-v3.json`` (sources in the
README there). Expected numbers are derived by hand from their fields:

- The lightning indexer (DeepSeek's reference ``inference/model.py``, class ``Indexer``) keeps,
  per token and layer, a key of ``index_head_dim`` elements in FP8 and one FP32 scale per 128
  of them, as vLLM (``DeepseekV32IndexerCache``: ``head_dim + head_dim // quant_block_size * 4``
  bytes), SGLang (``NSATokenToKVPool``) and the reference (``k_cache`` float8_e4m3fn,
  ``k_scale_cache`` float32) store it: 128 + 4 = 132 B, beside the bf16 MLA latent of
  (512 + 64) · 2 = 1152 B (+11.5 %). Its weights: ``wq_b`` (q_lora_rank → heads · d), ``wk``
  (h → d), a LayerNorm of d (weight and bias), ``weights_proj`` (h → heads).
- An MTP module (DeepSeek-V3 report, arXiv:2412.19437, §2.2): one decoder layer like the
  model's last (MLA attention and an MoE MLP), ``eh_proj`` (2h → h) and three RMSNorms; the
  embedding table and LM head are shared with the model, the checkpoint storing copies.
  DeepSeek-V3's README: "The total size of DeepSeek-V3 models on Hugging Face is 685B, which
  includes 671B of the Main Model weights and 14B of the Multi-Token Prediction (MTP) Module
  weights" (each figure rounded to 1B, so the MTP share is 14B ± 1B).

Tolerance: exact on bytes and counts; 1 % on the published 685B.
"""

import json
import pathlib

import numpy as np
import pytest

from rooflinekit import ModelShape, catalog, memory, roofline
from rooflinekit.hf_config import count_params, indexer_key_bytes

CONFIGS = pathlib.Path(__file__).parent / "data" / "hf_configs"
V32 = CONFIGS / "deepseek-v3.2.json"
V3 = CONFIGS / "deepseek-v3.json"

H, LAYERS, VOCAB = 7168, 61, 129_280
Q_LORA_RANK = 1536
INDEX_HEADS, INDEX_DIM = 64, 128
LATENT = 512 + 64                                  # kv_lora_rank + qk_rope_head_dim

# DeepSeek-V3's main model, counted by hand in tests/test_hf_config.py
V3_TOTAL = 671_026_419_200
ATTENTION_PER_LAYER = 187_107_328
MOE_MLP_PER_LAYER = 256 * 3 * H * 2048 + 3 * H * 2048 + 256 * H + 256


def indexer_params_per_layer():
    return Q_LORA_RANK * INDEX_HEADS * INDEX_DIM + H * INDEX_DIM + 2 * INDEX_DIM + H * INDEX_HEADS


def test_the_config_states_the_indexer():
    config = json.loads(V32.read_text())
    assert (config["index_n_heads"], config["index_head_dim"], config["index_topk"]) == \
        (INDEX_HEADS, INDEX_DIM, 2048)


def test_indexer_key_bytes_are_fp8_values_and_fp32_scales():
    assert indexer_key_bytes(INDEX_DIM) == INDEX_DIM * 1 + (INDEX_DIM // 128) * 4 == 132
    assert 132 / (LATENT * 2) == pytest.approx(0.115, abs=0.001)
    with pytest.raises(ValueError, match="index_head_dim"):
        indexer_key_bytes(100)


@pytest.mark.parametrize("context", [4096, 32_768, 131_072])
def test_kv_per_sequence_counts_the_indexer_keys(context):
    model = ModelShape.from_hf_config(V32)
    expected = LAYERS * (LATENT * 2 + 132) * context
    assert model.indexer_bytes_per_token_per_layer == 132
    assert memory.kv_bytes_per_sequence(model, context) == expected
    # DeepSeek-V3 (no indexer) stays the latent alone
    assert memory.kv_bytes_per_sequence(ModelShape.from_hf_config(V3), context) == \
        LAYERS * LATENT * 2 * context


def test_indexer_weights_are_counted_in_attention():
    v32, v3 = count_params(V32), count_params(V3)
    assert v32["attention"] - v3["attention"] == LAYERS * indexer_params_per_layer()
    assert v32["total"] == V3_TOTAL + LAYERS * indexer_params_per_layer()
    assert v32["total"] == pytest.approx(671e9, rel=0.01)


def mtp_by_hand():
    layer = ATTENTION_PER_LAYER + MOE_MLP_PER_LAYER + 2 * H     # attention, MoE, 2 norms
    return layer + 2 * H * H + 3 * H                             # eh_proj, 3 norms


@pytest.mark.parametrize("path, indexer", [(V3, 0), (V32, 1)])
def test_mtp_modules_are_counted_apart(path, indexer):
    counts = count_params(path)
    mtp = mtp_by_hand() + indexer * indexer_params_per_layer()
    assert counts["mtp"] == mtp
    # not in the model's total (DeepSeek's 671B does not count them)
    assert counts["total"] == V3_TOTAL + indexer * LAYERS * indexer_params_per_layer()
    # the checkpoint's 685B: main model, MTP module and its copies of the table and LM head
    stored = counts["total"] + mtp + 2 * VOCAB * H
    assert stored == pytest.approx(685e9, rel=0.01)
    assert abs(mtp + 2 * VOCAB * H - 14e9) < 1e9


def test_models_without_mtp_count_none():
    assert count_params(CONFIGS / "llama-3.1-8b.json")["mtp"] == 0
    config = json.loads(V3.read_text())
    config["num_nextn_predict_layers"] = 0
    assert count_params(config)["mtp"] == 0


@pytest.mark.parametrize("change, field", [
    ({"index_head_dim": None}, "index_head_dim"),
    ({"index_head_dim": 96}, "index_head_dim"),
    ({"num_nextn_predict_layers": -1}, "num_nextn_predict_layers"),
])
def test_bad_deepseek_fields_are_named(change, field):
    config = {k: v for k, v in {**json.loads(V32.read_text()), **change}.items()
              if v is not None}
    with pytest.raises(ValueError, match=field):
        ModelShape.from_hf_config(config)


def test_index_topk_is_read_and_needs_an_indexer():
    assert ModelShape.from_hf_config(V32).index_topk == 2048
    assert ModelShape.from_hf_config(V3).index_topk is None
    with pytest.raises(ValueError, match="index_topk"):
        ModelShape(name="x", n_layers=2, n_heads=2, n_kv_heads=2, head_dim=8, n_params=1e6,
                   index_topk=2048)
    config = {k: v for k, v in json.loads(V32.read_text()).items() if k != "index_topk"}
    with pytest.raises(ValueError, match="index_topk"):
        ModelShape.from_hf_config(config)


def test_indexer_bytes_must_not_be_negative():
    with pytest.raises(ValueError, match="indexer_bytes_per_token_per_layer"):
        ModelShape(name="x", n_layers=2, n_heads=2, n_kv_heads=2, head_dim=8, n_params=1e6,
                   indexer_bytes_per_token_per_layer=-1)


# -- DeepSeek Sparse Attention in the step model ---------------------------------------------------
# A decode token of a sequence at C tokens reads, in each of the 61 layers, its indexer's keys
# for the whole context (132 B a token) and the MLA latent of at most index_topk = 2,048 of them
# (1,152 B a token): 61 · (132 · C + 1152 · min(C, 2048)). DeepSeek-V3 (dense MLA) reads the
# latent of all C. The cache still holds every token (test_kv_per_sequence_counts_the_indexer_keys).
TOPK = 2048


def sparse_read_by_hand(context):
    return LAYERS * (132 * context + LATENT * 2 * min(context, TOPK))


@pytest.mark.parametrize("context", [4096, 32_768, 131_072])
def test_a_decode_step_reads_top_k_latents_and_every_indexer_key(context):
    v32, v3 = ModelShape.from_hf_config(V32), ModelShape.from_hf_config(V3)
    read = roofline.decode_bytes(v32, 1, context) - roofline.decode_bytes(v32, 1, 0)
    assert read == pytest.approx(sparse_read_by_hand(context), rel=1e-12)
    dense = roofline.decode_bytes(v3, 1, context) - roofline.decode_bytes(v3, 1, 0)
    assert dense == pytest.approx(LAYERS * LATENT * 2 * context, rel=1e-12)
    # what is held is unchanged: every token's latent and key
    assert memory.kv_bytes_per_sequence(v32, context) == LAYERS * (LATENT * 2 + 132) * context


def test_sparse_reads_at_128k_are_a_seventh_of_the_dense_ones():
    context = 131_072
    dense = LAYERS * (LATENT * 2 + 132) * context
    assert dense / sparse_read_by_hand(context) == pytest.approx(8.56, abs=0.01)
    v32 = ModelShape.from_hf_config(V32)
    assert roofline.effective_kv_tokens(v32, context) == pytest.approx(
        sparse_read_by_hand(context) / v32.kv_bytes_per_token, rel=1e-12)


def test_the_step_cost_carries_top_k_as_a_window():
    v32 = ModelShape.from_hf_config(V32)
    cost = roofline.step_cost_coefficients(v32, catalog.gpu("H100-SXM-80GB"))
    assert cost.sliding_window == TOPK
    assert cost.full_attention_fraction == pytest.approx(132 / (LATENT * 2 + 132), rel=1e-15)
    # the closed-form sum over decode steps follows the same reads
    gpu = catalog.gpu("H100-SXM-80GB")
    steps = float(np.sum(roofline.decode_step_time(v32, gpu, 4, 1500 + np.arange(1000.0))))
    assert float(roofline.generation_time(v32, gpu, 1000, 1500, 4)) == pytest.approx(
        steps, rel=1e-9)


def test_models_without_top_k_read_what_they_hold():
    # bit for bit the held tokens over a token's bytes, as before sparse attention was modelled
    context = np.array([0.0, 1.0, 4096.0, 131_072.0])
    for name in catalog.models():
        model = catalog.model(name)
        if model.index_topk is not None:
            continue
        held = (memory.kv_bytes_per_sequence(model, context) - model.state_bytes_per_sequence)
        assert np.array_equal(roofline.effective_kv_tokens(model, context),
                              held / model.kv_bytes_per_token), name


def test_top_k_beside_a_sliding_window_is_refused():
    with pytest.raises(ValueError, match="index_topk"):
        ModelShape(name="x", n_layers=2, n_heads=2, n_kv_heads=2, head_dim=8, n_params=1e6,
                   indexer_bytes_per_token_per_layer=132, index_topk=64, sliding_window=16)


@pytest.mark.parametrize("context", [4096, 131_072])
def test_a_prompt_token_after_a_cached_prefix_reads_it_sparsely(context):
    v32 = ModelShape.from_hf_config(V32)
    read = roofline.prefill_bytes(v32, 1, context) - roofline.prefill_bytes(v32, 1, 0)
    assert read == pytest.approx(sparse_read_by_hand(context), rel=1e-12)


def test_the_critical_batch_of_sparse_attention_is_where_its_step_turns_compute_bound():
    """critical_batch_size reads what the step reads (index_topk: fewer KV bytes than held):
    below it DeepSeek-V3.2's decode step at 128K tokens is memory-bound, above it compute-bound,
    as decode_bound says."""
    import numpy as np
    import rooflinekit as rk
    model, gpu = rk.catalog.model("DeepSeek-V3.2"), rk.catalog.gpu("H200-SXM-141GB")
    kw = dict(context_length=131072, tp=8)
    critical = float(rk.roofline.critical_batch_size(model, gpu, **kw))
    assert rk.roofline.decode_bound(model, gpu, batch_size=np.floor(critical) - 1, **kw) == "memory"
    assert rk.roofline.decode_bound(model, gpu, batch_size=np.ceil(critical) + 1, **kw) == "compute"
