"""TensorRT-LLM's start-up KV-cache figures (``tests/data/engine_logs/trtllm_memory.csv``) against
the catalogue: the driver totals its logs print and the KV bytes a token it counts.

TensorRT-LLM's PyTorch backend sizes its cache as ``(device_total - peak + tmp_kv) x
free_gpu_memory_fraction`` (``KvCacheCreator._cal_max_memory``); each row must satisfy that within
the logs' rounding (a transcription check). Its ``device total memory`` is what the driver reports,
which the catalogue's ``visible_memory_gib`` holds for the B200 and GB200 from other logs; its ``kv
size per token`` is what :func:`rooflinekit.memory.kv_bytes_per_token` counts.
"""

import csv
import dataclasses
import pathlib

import pytest

from rooflinekit import catalog, memory

ROWS = list(csv.DictReader(
    line for line in (pathlib.Path(__file__).parent / "data" / "engine_logs"
                      / "trtllm_memory.csv").open(encoding="utf-8")
    if not line.startswith("#")))


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_each_row_is_tensorrt_llms_own_arithmetic(row):
    assert row["source"].startswith("https://")
    total, peak, tmp, fraction, available = (
        float(row[k]) for k in ("device_total_gib", "peak_memory_gib", "tmp_kv_gib",
                                "free_gpu_memory_fraction", "available_kv_gib"))
    # three figures rounded to 0.005 GiB each, then scaled by the fraction: at most 0.015 off
    assert abs((total - peak + tmp) * fraction - available) <= 0.015 + 0.005


def test_the_driver_totals_agree_with_the_catalogue():
    # B200: 178.35 GiB in every B200 row (vLLM's logs give the same, gpus.toml); GB200: 184.31
    # (vLLM issue #43951's OOM message, gpus.toml)
    for name in ("B200", "GB200"):
        totals = {float(r["device_total_gib"]) for r in ROWS if r["gpu"] == name}
        assert totals == {round(catalog.gpu(name).visible_memory_per_gpu / 2**30, 2)}, name


def test_kv_bytes_a_token_as_tensorrt_llm_counts_them():
    # gpt-oss-120b, 16-bit cache: 36 layers x 2 x 8 KV heads x 64 x 2 B = 73,728 (t01); DeepSeek-R1
    # with an FP8 cache: 61 layers x (512 + 64) latent x 1 B = 35,136, every rank the whole latent
    # (t02-t05, TP 4 and 8)
    assert memory.kv_bytes_per_token(catalog.model("gpt-oss-120b")) == 73_728
    r1 = dataclasses.replace(catalog.model("DeepSeek-R1"), kv_bytes_per_element="fp8")
    assert memory.kv_bytes_per_token(r1) == 35_136
    logged = {(r["model"], r["kv_cache_dtype"]): int(r["kv_bytes_per_token"])
              for r in ROWS if r["kv_bytes_per_token"]}
    assert logged == {("gpt-oss-120b", "auto"): 73_728, ("DeepSeek-R1", "fp8"): 35_136}
