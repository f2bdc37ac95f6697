"""SGLang's start-up KV-cache log: parse_sglang_kv_log and compare_engine_log(engine="sglang").

``tests/data/engine_outputs/sglang_startup.log`` is a format example written after SGLang's own
log f-strings (see the README there): Llama-3.1-8B in bf16 on one 80 GB GPU, 413,827 KV tokens.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflinekit import catalog, units
from rooflinekit.calibrate import ENGINES, compare_engine_log, parse_sglang_kv_log
from rooflinekit.calibrate.engine_log import parse_vllm_kv_log

LOG = (Path(__file__).parent / "data" / "engine_outputs" / "sglang_startup.log").read_text(
    encoding="utf-8")
LLAMA = catalog.model("llama-3.1-8b")
# Llama-3.1-8B: 32 layers x 8 KV heads x 128 x 2 (K and V) x 2 bytes (bf16) per token
BYTES_PER_TOKEN = 32 * 8 * 128 * 2 * 2
# an MLA pool's line (memory_pool.py, MLATokenToKVPool)
MLA_LINE = ("[2025-06-02 10:00:02 DP0 TP0 EP0] KV Cache is allocated. #tokens: 524288, "
            "KV size: 17.16 GB")


def test_parse_sglang_kv_log():
    found = parse_sglang_kv_log(LOG)
    assert found == {
        "kv_cache_tokens": 413827,
        "available_kv": pytest.approx((25.26 + 25.26) * units.GiB),
        "weights": pytest.approx(15.04 * units.GiB),
        "max_model_len": 131072,
        "max_running_requests": 4097,
        "mem_fraction_static": 0.88,
        "page_size": 1,
    }
    assert isinstance(found["kv_cache_tokens"], int)


def test_parse_sglang_mla_pool_and_the_scheduler_line_alone():
    assert parse_sglang_kv_log(MLA_LINE) == {"kv_cache_tokens": 524288,
                                             "available_kv": pytest.approx(17.16 * units.GiB)}
    scheduler = ("[TP0] max_total_num_tokens=1000, chunked_prefill_size=8192, "
                 "max_prefill_tokens=16384, max_running_requests=8, context_len=4096")
    assert parse_sglang_kv_log(scheduler) == {"kv_cache_tokens": 1000, "max_model_len": 4096,
                                              "max_running_requests": 8}
    # the server_args' max_running_requests=None is no figure
    assert parse_sglang_kv_log("ServerArgs(max_running_requests=None, page_size=16)") == {
        "page_size": 16}
    assert parse_sglang_kv_log("") == {}


def test_the_two_parsers_read_only_their_engine():
    assert parse_vllm_kv_log(LOG) == {}
    assert parse_sglang_kv_log("GPU KV cache size: 42,656 tokens\n") == {}


def test_compare_engine_log_detects_sglang():
    cmp = compare_engine_log(LLAMA, LOG)
    assert cmp["engine_name"] == "sglang" and cmp["mode"] == "available"
    assert cmp["max_model_len"] == 131072 and cmp["bytes_per_block"] == BYTES_PER_TOKEN
    # our tokens: floor(50.52 GiB / 128 KiB) = floor(50.52 x 8192)
    assert cmp["ours"]["kv_cache_tokens"] == 413859
    assert cmp["engine"] == {"available_bytes": pytest.approx(50.52 * units.GiB),
                             "kv_cache_tokens": 413827, "num_blocks": 413827,
                             "weights_bytes": pytest.approx(15.04 * units.GiB),
                             "max_running_requests": 4097}
    # within the log's rounding (±0.005 GiB on each of K and V) plus the pool's padding page
    slack = 2 * 0.005 * units.GiB / BYTES_PER_TOKEN + 1
    assert abs(cmp["ours"]["kv_cache_tokens"] - cmp["engine"]["kv_cache_tokens"]) <= slack
    assert cmp["ours"]["max_concurrency"] == pytest.approx(413859 / 131072)


def test_compare_engine_log_sglang_pages_and_mappings():
    paged = LOG.replace("page_size=1", "page_size=16")
    cmp = compare_engine_log(LLAMA, paged)
    assert cmp["engine"]["num_blocks"] == 413827 // 16
    assert cmp["bytes_per_block"] == 16 * BYTES_PER_TOKEN
    found = parse_sglang_kv_log(LOG)
    assert compare_engine_log(LLAMA, found, engine="sglang")["ours"] == \
        compare_engine_log(LLAMA, LOG)["ours"]
    assert compare_engine_log(LLAMA, LOG, block_size=16)["engine"]["num_blocks"] == 413827 // 16


def test_compare_engine_log_sglang_refusals():
    assert ENGINES == ("vllm", "sglang")
    with pytest.raises(ValueError, match="engine"):
        compare_engine_log(LLAMA, LOG, engine="tgi")
    with pytest.raises(ValueError, match="neither a memory profile"):
        compare_engine_log(LLAMA, LOG, engine="vllm", max_model_len=4096)
    with pytest.raises(ValueError, match="context_len"):
        compare_engine_log(LLAMA, MLA_LINE)
    scheduler = "max_total_num_tokens=1000, max_running_requests=8, context_len=4096"
    with pytest.raises(ValueError, match="KV Cache is allocated"):
        compare_engine_log(LLAMA, scheduler)


@pytest.mark.parametrize("line, figure", [
    ("KV Cache is allocated. #tokens: 10, K size: " + "9" * 400 + " GB, V size: 1.00 GB",
     "available_kv"),
    ("KV Cache is allocated. #tokens: " + "9" * 20 + ", KV size: 1.00 GB", "kv_cache_tokens"),
    ("Load weight end. type=X, avail mem=1.00 GB, mem usage=" + "9" * 400 + " GB.", "weights"),
])
def test_sglang_figures_beyond_any_engine_are_refused(line, figure):
    with pytest.raises(ValueError, match=figure):
        parse_sglang_kv_log("[TP0] " + line + "\n")


def test_parse_sglang_kv_log_takes_text_only():
    with pytest.raises(TypeError, match="text"):
        parse_sglang_kv_log(None)
