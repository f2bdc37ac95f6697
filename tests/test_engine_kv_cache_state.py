"""``memory.engine_kv_cache`` for a hybrid model: the recurrent state takes blocks of the pool,
held against vLLM's published start-up logs of hybrid models (sources above each log).

Hand derivation from Qwen3-Next-80B-A3B's published config.json (tests/data/hf_configs/):
12 full-attention layers of 2 KV heads × head_dim 256 in bf16, 36 Gated DeltaNet layers whose
state per sequence is 77,266,944 bytes (tests/test_models_hybrid.py derives it). At TP 2 a rank
holds 1 KV head and half the state.
"""

import dataclasses
import json
import math
import pathlib

import pytest

from rooflinekit import catalog, memory, units
from rooflinekit.calibrate.engine_log import compare_engine_log, parse_vllm_kv_log
from rooflinekit.models import model_from_hf_config

CONFIGS = pathlib.Path(__file__).parent / "data" / "hf_configs"


def test_hybrid_concurrency_counts_the_state_blocks():
    """vLLM pages the state in its enlarged block: at TP 2 one GDN layer's state on a rank is
    77,266,944 / 2 / 36 = 1,073,152 B and one attention layer's KV per token 2 × 1 × 256 × 2 =
    1,024 B, so the block is 16 · ceil(1,073,152 / (16 · 1,024)) = 1,056 tokens; a request
    holds one block in each of the 3 state groups (36 GDN layers in groups of 12)."""
    model, gpu = catalog.model("Qwen3-Next-80B-A3B"), catalog.gpu("H200-SXM-141GB")
    out = memory.engine_kv_cache(model, gpu, tp=2, max_model_len=32_768)
    block = 16 * math.ceil(77_266_944 / 2 / 36 / (16 * 1_024))
    assert block == out["block_size"] == 1_056
    bytes_per_block = 2 * 1 * 256 * 2 * 12 * block              # K and V, 1 head, 12 layers
    assert out["bytes_per_block"] == bytes_per_block
    state_blocks = math.ceil(77_266_944 / 2 / bytes_per_block)
    assert state_blocks == 3
    assert out["max_concurrency"] == pytest.approx(
        out["num_blocks"] / (math.ceil(32_768 / block) + 3), rel=1e-12)
    # the logged cache size stays in tokens of the attention layers
    assert out["kv_cache_tokens"] == out["num_blocks"] * block
    # a block asked for larger than the hybrid's is kept
    assert memory.engine_kv_cache(model, gpu, tp=2, block_size=2_048,
                                  max_model_len=32_768)["block_size"] == 2_048


def test_a_model_without_state_is_unchanged():
    model, gpu = catalog.model("Llama-3.1-8B"), catalog.gpu("H100-SXM-80GB")
    out = memory.engine_kv_cache(model, gpu, max_model_len=8192)
    assert out["max_concurrency"] == out["num_blocks"] / (8192 // 16)


# -- vLLM's hybrid start-up logs -----------------------------------------------------------------
#
# noonghunna/club-3090 issue #612 (guybrush01, 2026-07-06; "[bench] vllm/qwen-35b-a3b-single-nvfp4
# 5090 test"): nvidia/Qwen3.6-35B-A3B-NVFP4 on one RTX 5090 under vLLM 0.24.0, fp8 KV cache,
# prefix caching on, no speculative decoding (lines quoted verbatim; the engine-config line stops
# where the quote stops, and the non-default args line is shortened to its memory settings,
# marked "...").
LOG_612 = """\
(APIServer pid=1) INFO 07-06 22:50:34 [api_utils.py:273] non-default args: {... 'dtype': \
'bfloat16', 'max_model_len': 131072, 'quantization': 'modelopt', ... 'kv_cache_dtype': 'fp8', \
'enable_prefix_caching': True, 'limit_mm_per_prompt': {'image': 2, 'audio': 0}, \
'max_num_batched_tokens': 8192, 'max_num_seqs': 1, 'enable_chunked_prefill': True}
(EngineCore pid=107) INFO 07-06 22:50:46 [core.py:114] Initializing a V1 LLM engine (v0.24.0) \
with config:
(EngineCore pid=107) INFO 07-06 22:52:09 [gpu_worker.py:508] Available KV cache memory: 5.98 GiB
(EngineCore pid=107) INFO 07-06 22:52:09 [kv_cache_utils.py:2146] GPU KV cache size: 567,978 \
tokens
(EngineCore pid=107) INFO 07-06 22:52:09 [kv_cache_utils.py:2147] Maximum concurrency for \
131,072 tokens per request: 4.33x"""
# The same user's rerun, noonghunna/club-3090 issue #652 (2026-07-09), same model and flags.
LOG_652 = LOG_612.replace("5.98 GiB", "6.01 GiB").replace("567,978", "569,878").replace(
    "4.33x", "4.35x")


def qwen36_fp8_kv():
    """nvidia/Qwen3.6-35B-A3B-NVFP4 (tests/data/hf_configs/) served with ``kv_cache_dtype fp8``."""
    config = json.loads((CONFIGS / "qwen3.6-35b-a3b-nvfp4.json").read_text())
    return dataclasses.replace(model_from_hf_config(config), kv_bytes_per_element=1.0)


@pytest.mark.parametrize("log, blocks, tokens, shown", [
    (LOG_612, 299, 567_978, 4.33), (LOG_652, 300, 569_878, 4.35)])
def test_vllm_024_hybrid_log_exactly(log, blocks, tokens, shown):
    """By hand from the config: 10 attention layers (1 in 4 of 40) of 2 KV heads of 256 in fp8,
    2·2·256·1 = 1,024 B a token and layer; 30 Gated DeltaNet layers whose state is the fp32
    recurrent state 32·128·128·4 = 2,097,152 B plus the bf16 convolution state
    (2·16·128 + 32·128)·3·2 = 49,152 B, 2,146,304 B a layer. Block: 16·⌈2,146,304 / (16·1,024)⌉
    = 2,096 tokens (one page exactly). Groups of 10 layers (1 attention, 3 state), so a block
    is 10 pages, 21,463,040 B: 5.98 GiB holds 299 of them (6.01 GiB: 300). A request: ⌈131,072 /
    2,096⌉ = 63 attention blocks + 2 in each state group (prefix caching on: vLLM's "align"
    mode) = 69; 299 / 69 = 4.33x, and vLLM 0.24 logs int(299 / 69 · 131,072) = 567,978 tokens.
    Ours gives both lines to the token; with one state block a group (vLLM's "none" mode, the
    rule before) it said 4.53x."""
    model = qwen36_fp8_kv()
    assert model.state_bytes_per_sequence == 30 * (32 * 128 * 128 * 4 + (2 * 16 * 128 + 32 * 128)
                                                  * 3 * 2) == 30 * 2_146_304
    found = parse_vllm_kv_log(log)
    assert found["enable_prefix_caching"] is True and found["vllm_version"] == "0.24.0"
    cmp = compare_engine_log(model, log)
    assert cmp["mode"] == "available"
    assert cmp["bytes_per_block"] == 10 * 1_024 * 2_096 == 21_463_040
    assert cmp["ours"]["num_blocks"] == blocks
    assert cmp["logged_tokens"] == "max_concurrency × max_model_len"
    assert cmp["ours"]["kv_cache_tokens"] == cmp["engine"]["kv_cache_tokens"] == tokens
    assert cmp["ours"]["max_concurrency"] == blocks / (math.ceil(131_072 / 2_096) + 3 * 2)
    assert round(cmp["ours"]["max_concurrency"], 2) == cmp["engine"]["max_concurrency"] == shown
    assert "num_blocks" not in cmp["engine"]        # no block count follows from these tokens
    before = compare_engine_log(model, log, mamba_cache_mode="none")
    assert round(before["ours"]["max_concurrency"], 2) == round(blocks / 66, 2)   # 4.53x


def test_vllm_019_hybrid_log_counts_tokens_by_groups():
    """vllm-project/vllm issue #40691 (SherryC41, 2026-04-23): vLLM 0.19.0 serving Qwen3.5-27B
    with --max-model-len 32768 (bf16 KV, prefix caching not asked for) logged "GPU KV cache size:
    290,864 tokens" and "Maximum concurrency for 32,768 tokens per request: 33.04x" (its memory
    line is not quoted). By hand from tests/data/hf_configs/qwen3.5-27b.json: 16 attention layers
    of 4 KV heads of 256, 4,096 B a token and layer; 48 GDN layers of 48·128·128·4 +
    (2·16·128 + 48·128)·3·2 = 3,207,168 B; block 16·⌈3,207,168 / (16·4,096)⌉ = 784 tokens;
    groups of 16 (1 attention, 3 state), 16·4,096·784 = 51,380,224 B a block. A request holds
    ⌈32,768 / 784⌉ = 42 + 3 blocks. Only 1,487 blocks give both lines (1,487 // 4 · 784 =
    290,864, the count by groups vLLM printed then; 1,487 / 45 = 33.04): fed the memory of
    1,487.5 blocks, ours prints both."""
    model = model_from_hf_config(json.loads((CONFIGS / "qwen3.5-27b.json").read_text()))
    bytes_per_block = 16 * 4_096 * 784
    fits = [n for n in range(1, 4_000) if n // 4 * 784 == 290_864 and round(n / 45, 2) == 33.04]
    assert fits == [1_487]
    log = {"available_kv": 1_487.5 * bytes_per_block, "kv_cache_tokens": 290_864,
           "max_model_len": 32_768, "max_concurrency": 33.04}
    cmp = compare_engine_log(model, log)
    assert cmp["bytes_per_block"] == bytes_per_block and cmp["ours"]["num_blocks"] == 1_487
    assert cmp["logged_tokens"] == "num_blocks // groups × block_size"
    assert cmp["ours"]["kv_cache_tokens"] == 290_864
    assert round(cmp["ours"]["max_concurrency"], 2) == 33.04


def test_kv_cache_groups_follow_vllms_rule():
    """vLLM's groups (``_get_kv_cache_groups_uniform_page_size``): the fewer layers of a kind
    make a group, unless the more are under 1.25 times as many."""
    assert memory.vllm_kv_cache_groups(catalog.model("Qwen3-Next-80B-A3B")) == (12, 1, 3, 0)
    assert memory.vllm_kv_cache_groups(catalog.model("Jamba-1.5-Mini")) == (4, 1, 7, 0)  # 4 / 28
    assert memory.vllm_kv_cache_groups(catalog.model("Falcon-H1-0.5B")) == (36, 1, 1, 0)
    assert memory.vllm_kv_cache_groups(catalog.model("Llama-3.1-8B")) == (32, 1, 0, 0)
    # sliding-window layers are a kind of their own (gpt-oss-120b 18 + 18; Gemma-3-27B 10 full
    # and 52 sliding: groups of 10, 52 < 1.25 x 10 fails); every layer windowed: one group
    assert memory.vllm_kv_cache_groups(catalog.model("gpt-oss-120b")) == (18, 1, 0, 1)
    assert memory.vllm_kv_cache_groups(catalog.model("Gemma-3-27B")) == (10, 1, 0, 6)
    assert memory.vllm_kv_cache_groups(catalog.model("Mistral-7B-v0.1")) == (32, 0, 0, 1)
    # 10 attention beside 12 state layers: one group of 12 each (10 attention layers padded)
    close = dataclasses.replace(catalog.model("Qwen3-Next-80B-A3B"), n_layers=22,
                                n_attention_layers=10, n_linear_attention_layers=12)
    assert memory.vllm_kv_cache_groups(close) == (12, 1, 1, 0)


def test_state_blocks_by_cache_mode_and_draft():
    """Qwen3-Next at TP 2 (block 1,056, 3 state groups), 32,768 tokens: ⌈32,768 / 1,056⌉ = 32
    attention blocks; a state group holds 1 ("none"), 2 ("align") or 32 ("all") blocks, each
    plus one a draft token."""
    model, gpu = catalog.model("Qwen3-Next-80B-A3B"), catalog.gpu("H200-SXM-141GB")
    for mode, draft, held in [("none", 0, 1), ("align", 0, 2), ("all", 0, 32), ("align", 3, 5)]:
        out = memory.engine_kv_cache(model, gpu, tp=2, max_model_len=32_768,
                                     mamba_cache_mode=mode, num_speculative_tokens=draft)
        assert out["max_concurrency"] == out["num_blocks"] / (32 + 3 * held)
        assert out["capacity_tokens"] == int(out["max_concurrency"] * 32_768)
        assert out["kv_cache_groups"] == 4
    with pytest.raises(ValueError, match="mamba_cache_mode"):
        memory.engine_kv_cache(model, gpu, mamba_cache_mode="prefix")
    with pytest.raises(ValueError, match="num_speculative_tokens"):
        memory.engine_kv_cache(model, gpu, num_speculative_tokens=-1)
    with pytest.raises(ValueError, match="mamba_cache_mode"):
        compare_engine_log(model, LOG_612, mamba_cache_mode="aligned")
    for name, bad in [("draft_layers", -1), ("block_alignment", 0), ("block_alignment", 2.5),
                      ("num_speculative_tokens", float("nan"))]:
        with pytest.raises(ValueError, match=name):
            memory.engine_kv_cache(model, gpu, max_model_len=32_768, **{name: bad})
        with pytest.raises(ValueError, match=name):
            compare_engine_log(model, LOG_612, **{name: bad})
    with pytest.raises(ValueError, match="draft_layers"):
        memory.vllm_kv_cache_groups(model, draft_layers=-2)


# noonghunna/club-3090 issues #294 and #295 (hlo-world, 2026-06-01): Qwen3.6-27B (AutoRound int4)
# on two RTX 3090s, vLLM V1, flags quoted from the non-default args line (the rest left out,
# marked "..."); their memory lines are not in the published excerpts. Issue #642
# (internalcore2-create, 2026-07-08), the same model on two RTX 3090s: its flags are cut before
# the parallel and cache settings in the published text, its memory line is quoted.
FLAGS_294 = ("non-default args: {... 'dtype': 'float16', 'max_model_len': 262144, 'quantization': "
             "'auto_round', ... 'tensor_parallel_size': 2, 'disable_custom_all_reduce': True, "
             "'kv_cache_dtype': 'fp8_e5m2', 'enable_prefix_caching': True, "
             "'max_num_batched_tokens': 8192, 'max_num_seqs': 2, 'enable_chunked_prefill': True, "
             "'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 3}}")
LOG_294 = f"""\
(EngineCore pid=128) INFO 06-01 09:47:57 [kv_cache_utils.py:1733] GPU KV cache size: 622,408 tokens
(EngineCore pid=128) INFO 06-01 09:47:57 [kv_cache_utils.py:1734] Maximum concurrency for \
262,144 tokens per request: 2.37x
(APIServer pid=1) INFO 06-01 09:45:34 [utils.py:278] {FLAGS_294}"""
LOG_295 = LOG_294.replace("622,408", "620,944")
LOG_642 = """\
(Worker_TP0 pid=101) INFO 07-08 15:38:03 [gpu_worker.py:508] Available KV cache memory: 11.05 GiB
(EngineCore pid=92) INFO 07-08 15:38:03 [kv_cache_utils.py:2146] GPU KV cache size: 623,873 tokens
(EngineCore pid=92) INFO 07-08 15:38:03 [kv_cache_utils.py:2147] Maximum concurrency for \
262,144 tokens per request: 2.38x"""


def test_vllm_hybrid_log_with_mtp_draft():
    """Qwen3.6-27B's shapes (tests/data/hf_configs/qwen3.6-27b-nvfp4.json: 16 attention layers
    of 4 KV heads of 256, 48 GDN layers, one MTP layer) at TP 2 with an fp8 KV cache. From the
    logs alone: the only (blocks, blocks a request) under 1,000 that print each run's two lines
    are (425, 179), (424, 179) and (426, 179). By hand: a rank's attention page is
    2·2·256·1 = 1,024 B a token and layer, its GDN state 3,207,168 / 2 = 1,603,584 B a layer,
    so the block is 64·⌈1,603,584 / (64·1,024)⌉ = 1,600 tokens (aligned to 64, as vLLM reported
    for such a run, vllm-project/vllm#53595: "block size 1600"; 16 would give 1,568). The MTP
    layer's KV shares the pool: 17 attention layers beside 48 state layers make groups of 17
    (1 attention, 3 state), 17·1,024·1,600 = 27,852,800 B a block. A request: ⌈262,144 /
    1,600⌉ = 164 attention blocks + 3 groups × (2 "align" + 3 draft tokens) = 179. #642's
    11.05 GiB holds 425.98 blocks, 425 (the printed GiB spans 425.8–426.2: 426 at its top,
    which prints #642's lines exactly); 425 blocks print #294's 622,408 tokens exactly."""
    config = json.loads((CONFIGS / "qwen3.6-27b-nvfp4.json").read_text())
    model = dataclasses.replace(model_from_hf_config(config), kv_bytes_per_element=1.0)
    for log, pool in [(LOG_294, 425), (LOG_295, 424), (LOG_642, 426)]:
        found = parse_vllm_kv_log(log)
        fits = [(n, r) for r in range(1, 1_000) for n in range(r, 3 * r)
                if int(n / r * 262_144) == found["kv_cache_tokens"]
                and round(n / r, 2) == found["max_concurrency"]]
        assert fits[0] == (pool, 179)
    assert parse_vllm_kv_log(LOG_294)["num_speculative_tokens"] == 3
    settings = dict(tp=2, mamba_cache_mode="align", num_speculative_tokens=3, draft_layers=1,
                    block_alignment=64)
    cmp = compare_engine_log(model, LOG_642, **settings)
    assert cmp["bytes_per_block"] == 17 * 1_024 * 1_600 == 27_852_800
    assert cmp["ours"]["num_blocks"] == 425
    assert cmp["ours"]["max_concurrency"] == 425 / (164 + 3 * (2 + 3))
    assert cmp["ours"]["kv_cache_tokens"] == 622_408            # #294's line, to the token
    top = {**parse_vllm_kv_log(LOG_642), "available_kv": 11.055 * units.GiB}
    cmp = compare_engine_log(model, top, **settings)
    assert cmp["ours"]["kv_cache_tokens"] == cmp["engine"]["kv_cache_tokens"] == 623_873
    assert round(cmp["ours"]["max_concurrency"], 2) == 2.38
    # the flags the log states are read: prefix caching ("align") and the draft tokens
    assert compare_engine_log(model, LOG_642 + "\n" + FLAGS_294, tp=2, draft_layers=1,
                              block_alignment=64)["ours"]["num_blocks"] == 425


def test_vllm_hybrid_set_up_lines_are_read():
    """vLLM's own lines for the block and the mode: vllm-project/vllm#40696 (vLLM 0.19.1,
    Qwen3.5-4B) quotes the first; vllm-project/vllm#53595 quotes the second (a message of
    model_executor/models/config.py)."""
    found = parse_vllm_kv_log(
        "INFO [config.py:281] Setting attention block size to 528 tokens to ensure that "
        "attention page size is >= mamba page size.\n"
        "Mamba cache mode is set to 'align' for Qwen3_5ForConditionalGeneration by default\n"
        "when prefix caching is enabled")
    assert found == {"attention_block_size": 528, "mamba_cache_mode": "align"}
    # a block the log reports is the block compared in
    line = "Setting attention block size to 2,112 tokens to ensure that attention page size is"
    cmp = compare_engine_log(qwen36_fp8_kv(), LOG_612 + "\n" + line)
    assert cmp["bytes_per_block"] == 10 * 1_024 * 2_112
