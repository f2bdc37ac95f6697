"""TensorRT-LLM's KV-cache rule: a share of what the weights and its profiling peak leave.

TensorRT-LLM's PyTorch backend sizes its cache as ``free_gpu_memory_fraction × (total − peak +
tmp_kv)`` (``tensorrt_llm/_torch/pyexecutor/_util.py``, ``KvCacheCreator._cal_max_memory``),
``peak`` its profiling pass's, which holds the weights and a temporary cache of ``tmp_kv``. The
memory row (``rooflinekit/data/engine_memory.toml``) holds the peak beyond the weights, fitted to
the start-ups of ``tests/data/engine_logs/trtllm_memory.csv``; hand arithmetic beside each check.
"""

import json
import subprocess
import sys
import pytest

import rooflinekit as rk
from rooflinekit import catalog
from rooflinekit.planning.deployment import launch_commands
from rooflinekit.profiles import ENGINE_MEMORY, held_memory, layout_kv_bytes, memory_rule
from rooflinekit.sweep import sweep

from helpers import load_script

GIB = 2**30
#: The H100's driver total (79.19 GiB) and Llama-3.3-70B's bf16 weights a GPU at TP 2:
#: 70,553,706,496 parameters × 2 B / 2 (its Hugging Face safetensors index).
H100_TOTAL = 79.19 * GIB
LLAMA70B_WEIGHTS_TP2 = 70_553_706_496.0


def test_the_shipped_row_is_the_scripts_fit_of_the_logs():
    script = load_script("fit_engine_memory")
    fit = script.fit_trtllm(script.trtllm_rows())
    row = next(r for r in ENGINE_MEMORY if r["engine"] == "trtllm")
    assert row["share_of"] == "free"
    # seven discrete-GPU logs (the unified-memory DGX Spark's left out); peak − weights − tmp:
    # t02 106.46 − 93.90 − 2.14 = 10.42, t03 10.70, t04 12.58, t05 13.78, t11 6.58, t12 8.36,
    # t13 11.01: the median 10.70
    assert fit["n_rows"] == 7
    assert row["non_torch_parallel_gib"] == pytest.approx(10.70, abs=0.005)
    assert row["non_torch_gib"] == row["non_torch_parallel_gib"]
    assert row["fit_error_gib"] == pytest.approx(max(abs(v) for v in fit["in_sample"].values()),
                                                 abs=5e-4)
    assert row["held_out_error_gib"] == pytest.approx(
        max(abs(v) for v in fit["held_out"].values()), abs=5e-4)
    # Kimi-K2 on four GB200s at 0.6 (t13): 0.6 × (184.31 − 142.21 − 10.70) = 18.84 GiB against
    # 18.65 logged; the share of the total less the weights said it did not fit (−31.6)
    assert fit["in_sample"]["t13"] == pytest.approx(0.6 * (184.31 - 142.21 - 10.70) - 18.65,
                                                    abs=0.01)
    assert fit["share_of_total"]["t13"] == pytest.approx(0.6 * 184.31 - 142.21 - 18.65,
                                                         abs=0.01)
    assert row["fit_error_gib"] < 4.0 < max(abs(v) for v in fit["share_of_total"].values())


def test_engine_kv_cache_takes_a_share_of_what_is_left():
    model, gpu = catalog.model("Llama-3.3-70B"), catalog.gpu("H100-SXM-80GB")
    held = 10.70 * GIB
    free = rk.engine_kv_cache(model, gpu, 2, gpu_memory_utilization=0.9, non_torch_bytes=held,
                              max_model_len=8192, share_of="free")
    total = rk.engine_kv_cache(model, gpu, 2, gpu_memory_utilization=0.9, non_torch_bytes=held,
                               max_model_len=8192)
    # 0.9 × (79.19 − 65.71 − 10.70) = 2.50 GiB; of the total: 0.9 × 79.19 − 65.71 − 10.70 < 0
    assert free["available_bytes"] == pytest.approx(
        0.9 * (H100_TOTAL - LLAMA70B_WEIGHTS_TP2 - held), rel=1e-9)
    assert free["available_bytes"] / GIB == pytest.approx(2.50, abs=0.01)
    assert total["available_bytes"] == 0.0
    assert free["weight_scale"] == 0.9 and total["weight_scale"] == 1.0
    with pytest.raises(ValueError, match="share_of"):
        rk.engine_kv_cache(model, gpu, 2, max_model_len=8192, share_of="spare")


def test_capacity_under_tensorrt_llm_by_hand():
    # two H100s: 2 × 0.9 × (79.19 − 65.71 − 10.70) GiB = 5.01 GiB
    out = subprocess.run([sys.executable, "-m", "rooflinekit", "capacity", "llama-3.3-70b",
                          "h100", "--tp", "2", "--engine", "trtllm", "--json"],
                         capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    want = 2 * 0.9 * (H100_TOTAL - LLAMA70B_WEIGHTS_TP2 - 10.70 * GIB) / GIB
    assert got["kv_budget_gib"] == pytest.approx(want, abs=0.01)
    assert got["engine_memory_gib"] == pytest.approx(10.70, abs=0.005)
    assert "0.9 of what the weights and trtllm" in got["kv_cache_rule"]


def test_every_memory_path_agrees_on_the_rule():
    model, gpu = catalog.model("Llama-3.3-70B"), catalog.gpu("H100-SXM-80GB")
    share, held = memory_rule("trtllm", model, gpu, 2)
    assert share == 0.9 and held["share_of"] == "free"
    want = 0.9 * (H100_TOTAL - LLAMA70B_WEIGHTS_TP2 - 10.70 * GIB)
    # one GPU of the layout
    assert layout_kv_bytes("trtllm", model, gpu, 2, 1, 1, LLAMA70B_WEIGHTS_TP2) == \
        pytest.approx(want, rel=1e-3)
    # the batcher's budget, whole blocks of 16 tokens of 163,840 B a GPU
    tokens = rk.batching.replica_kv_budget(model, gpu, 2, gpu_memory_utilization=share, **held)
    assert tokens == int(want // (163_840 * 16)) * 16
    # the sweep grid: the group's room less 0.9 of the weights
    ds = sweep(model, gpu, tp=2, context_length=[8192], batch_size=[1], engine="trtllm")
    assert float(ds.usable_kv_bytes.squeeze()) == pytest.approx(2 * want, rel=1e-3)
    assert "of what the weights and trtllm" in ds.attrs["kv_cache_rule"]


def test_a_tensorrt_llm_plan_deploys_at_its_own_fraction():
    traffic = rk.Traffic(0.5, 1000, 200)
    plan = rk.plan(traffic, rk.SLO(ttft=5.0), models="Llama-3.1-8B", gpus="H100-SXM-80GB",
                   tp=1, engine="trtllm", replicates=1, requests=40)
    got = launch_commands(rk.cheapest_plan(plan, by=None), traffic)
    flags = got["trtllm_serve"].split()
    at = flags.index("--kv_cache_free_gpu_memory_fraction")
    assert flags[at + 1] == "0.90"
    assert plan.attrs["memory_outside_kv"].startswith("trtllm ")


def test_held_memory_under_tensorrt_llm():
    kept = held_memory("trtllm", catalog.model("Llama-3.1-8B"), "H100-SXM-80GB", 1)
    assert kept == {"activation_peak_bytes": 0.0, "weight_layout_bytes": 0.0,
                    "non_torch_bytes": pytest.approx(10.70 * GIB, rel=1e-3), "share_of": "free"}


def test_a_cache_tensorrt_llm_cannot_hold_is_said():
    # a vLLM plan of Llama-3.1-70B on two H100s at 0.95: 0.95 × 79.19 − 65.70 − vLLM's own
    # memory leaves about 7 GiB a GPU; TensorRT-LLM's peak leaves 79.19 − 65.70 − 10.70 = 2.8
    traffic = rk.Traffic(0.3, 1000, 200)
    plan = rk.plan(traffic, rk.SLO(ttft=5.0), models="Llama-3.1-70B", gpus="H100-SXM-80GB",
                   tp=2, gpu_memory_utilization=0.95, replicates=1, requests=40)
    got = launch_commands(rk.cheapest_plan(plan, by=None), traffic)
    assert "--kv_cache_free_gpu_memory_fraction 1.00" in got["trtllm_serve"]
    said = [n for n in got["notes"] if n.startswith("TensorRT-LLM's profiling peak")]
    assert len(said) == 1 and "(10.7 GiB a GPU beside the weights) leaves 2.8 GiB" in said[0]
