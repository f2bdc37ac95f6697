"""How SGLang sizes its KV pool, against its code and its own start-up logs.

SGLang 0.5 keeps back ``512 + 1.5·max(chunk, 2048) + 2·cuda_graph_max_bs + 1024·tp/8`` MiB
(at least 10 GiB on a GPU above 60 GiB) and gives the rest of each GPU to weights and KV
(``python/sglang/srt/server_args.py``, ``_handle_gpu_memory_settings``); its pool is that share
of the memory free before the weights load, less the weights (``model_runner.py``,
``profile_max_num_token``). The logs are ``tests/data/engine_logs/sglang_memory.csv`` (each row
sourced there); hand arithmetic beside each check.
"""

import csv
import dataclasses
import warnings
from pathlib import Path

import pytest

import rooflinekit as rk
from rooflinekit import catalog
from rooflinekit.cli import main
from rooflinekit.planning import launch_commands
from rooflinekit.profiles import (ENGINE_MEMORY, engine_memory, held_memory, memory_share,
                                  sglang_mem_fraction_static)

LOGS = Path(__file__).parents[1] / "tests" / "data" / "engine_logs" / "sglang_memory.csv"
GIB, MIB = 2**30, 2**20
H100 = catalog.gpu("H100-SXM-80GB")
#: the driver's total on an H100 [MiB] (79.19 GiB, the catalogue's visible memory)
H100_MIB = 79.19 * 1024


def _rows():
    with open(LOGS, newline="") as f:
        return {r["id"]: r for r in csv.DictReader(x for x in f if not x.startswith("#"))}


ROWS = _rows()


def test_every_log_row_is_sourced():
    assert len(ROWS) >= 10
    for row in ROWS.values():
        assert row["source"].startswith("http"), row["id"]


def test_the_default_share_by_hand():
    # H100, TP 1: 512 + 1.5 x 8192 + 2 x 256 + 1024 / 8 = 13,440 MiB kept back (above the
    # 10 GiB floor): (81,090.6 - 13,440) / 81,090.6 = 0.834. SGLang reads nvidia-smi's total
    # (81,559 MiB), which gives the 0.835 the LMCache issue's H100 server logged
    assert round((H100_MIB - 13_440) / H100_MIB, 3) == 0.834
    assert sglang_mem_fraction_static("H100-SXM-80GB") == 0.834
    assert round((81_559 - 13_440) / 81_559, 3) == float(
        ROWS["lmcache-2400-qwen3-14b-tp1"]["mem_fraction_static"])
    # TP 8: 512 + 12,288 + 2 x 512 + 1024 = 14,848 MiB
    assert sglang_mem_fraction_static(H100, 8) == round((H100_MIB - 14_848) / H100_MIB, 3)
    # a 16,384-token chunk keeps 512 + 24,576 + 512 + 128 = 25,728 MiB
    assert sglang_mem_fraction_static(H100, chunked_prefill_size=16_384) == \
        round((H100_MIB - 25_728) / H100_MIB, 3) == 0.683
    # an EAGLE draft keeps 2 GiB more
    assert sglang_mem_fraction_static(H100, speculative=True) == \
        round((H100_MIB - 13_440 - 2048) / H100_MIB, 3)
    # below 60 GiB there is no floor: an L40S (the driver's 44.42 GiB) at its 4,096-token
    # chunk and 32 graphs keeps 512 + 6,144 + 64 + 128 = 6,848 MiB; a 4090 (23.64 GiB):
    # 512 + 3,072 + 48 + 128 = 3,760 MiB
    for name, total, kept in (("L40S", 44.42, 6_848), ("RTX-4090", 23.64, 3_760),
                              # a B200 (178.35 GiB): a 16,384-token chunk, 512 graphs at any TP
                              ("B200", 178.35, 512 + 24_576 + 1_024 + 128)):
        mib = total * 1024
        assert sglang_mem_fraction_static(name) == round((mib - kept) / mib, 3), name


def test_the_pool_of_an_8b_model_on_one_gpu_against_its_log():
    # sglang-pr4760 (an 80 GB card, TP 1, SGLang 0.4.4's 0.88): 63.48 GiB free after loading
    # 15.11, so 78.59 before; pool = 63.48 - 78.59 x 0.12 = 54.05, and the log's K + V is 54.04
    row = ROWS["sglang-pr4760-llama31-8b-tp1"]
    before = float(row["load_end_avail_gb"]) + float(row["weights_gb"])
    logged = float(row["k_size_gb"]) + float(row["v_size_gb"])
    assert float(row["load_end_avail_gb"]) - before * (1 - 0.88) == pytest.approx(logged,
                                                                                  abs=0.02)
    # the rule with the catalogue's weights (14.96 GiB) and the H100's 79.19 GiB, less the
    # 0.60 GiB in use before loading: 0.88 x 78.59 - 14.96 = 54.20 GiB, 0.16 over the log
    model = catalog.model("Llama-3.1-8B")
    kept = held_memory("sglang", model, H100, 1, gpu_memory_utilization=0.88)
    assert kept == {"activation_peak_bytes": 0.0, "weight_layout_bytes": 0.0,
                    "non_torch_bytes": pytest.approx(0.88 * 0.60 * GIB), "share_of": "total"}
    kv = rk.engine_kv_cache(model, H100, 1, gpu_memory_utilization=0.88, max_model_len=8192,
                            **kept)
    assert kv["available_bytes"] / GIB == pytest.approx(0.88 * (79.19 - 0.60) - 14.96, abs=0.01)
    assert kv["available_bytes"] / GIB == pytest.approx(logged, abs=0.2)
    # 442,750 tokens of 128 KiB logged
    assert kv["kv_cache_tokens"] == pytest.approx(int(row["kv_cache_tokens"]), rel=0.004)


def test_the_pool_of_a_70b_model_on_eight_h200s_against_its_log():
    # sglang-pr11716 (TP 8, 137.34 GiB free before loading): SGLang 0.5's share on an H200 at
    # TP 8 is 0.897; its weights 131.4 / 8 = 16.43 GiB: 0.897 x 137.34 - 16.43 = 106.77 GiB,
    # the log's K + V 106.62; 40,960 B a token on each rank (80 layers, one KV head)
    row = ROWS["sglang-pr11716-llama33-70b-tp8"]
    assert round((143_771 - 14_848) / 143_771, 3) == 0.897
    model = catalog.model("Llama-3.3-70B")
    assert 0.897 * 137.34 - float(model.weight_bytes) / 8 / GIB == pytest.approx(
        2 * float(row["k_size_gb"]), abs=0.2)
    # the rule: the H200's 139.72 GiB (as PyTorch reads it: the catalogue's) less the 2.38 in
    # use before; read from that total rather than nvidia-smi's 143,771 MiB, the share comes
    # out 0.001 lower
    h200 = catalog.gpu("H200-SXM-141GB")
    assert h200.visible_memory_per_gpu == pytest.approx(139.72 * GIB)
    share = memory_share("sglang", h200, 8)
    assert share == round((139.72 * 1024 - 14_848) / (139.72 * 1024), 3) == 0.896
    kv = rk.engine_kv_cache(model, h200, 8, gpu_memory_utilization=share, max_model_len=8192,
                            **held_memory("sglang", model, h200, 8))
    assert kv["available_bytes"] / GIB == pytest.approx(2 * float(row["k_size_gb"]), abs=0.2)
    assert kv["kv_cache_tokens"] == pytest.approx(int(row["kv_cache_tokens"]), rel=0.004)


def test_the_shipped_row_is_the_scripts_fit():
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "fit_engine_memory", Path(__file__).parents[1] / "scripts" / "fit_engine_memory.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    fitted = script.fit_sglang(script.sglang_rows(LOGS))
    shipped = next(r for r in ENGINE_MEMORY if r["engine"] == "sglang")
    # 79.19 - 78.59 = 0.60 GiB at TP 1; 139.72 - 137.34 = 2.38 above
    assert shipped["non_torch_gib"] == pytest.approx(fitted["non_torch_gib"], abs=5e-5)
    assert shipped["non_torch_gib"] == pytest.approx(0.60, abs=1e-9)
    assert shipped["non_torch_parallel_gib"] == pytest.approx(2.38, abs=1e-9)
    assert shipped["fit_error_gib"] < 0.2
    assert "held_out_error_gib" not in shipped      # one log of each size: nothing held out
    assert engine_memory(catalog.model("Llama-3.1-8B"), H100, engine="sglang")[
        "held_out_error_bytes"] is None


def test_memory_share_is_the_engines_own_unless_given():
    assert memory_share("vllm", H100) == memory_share(None, H100) == 0.9
    assert memory_share("sglang", H100) == 0.834
    assert memory_share("sglang", H100, 1, 0.8) == 0.8
    assert memory_share("sglang", H100, 1, max_num_batched_tokens=16_384) == 0.683
    for bad in (0, 1.5, float("nan")):
        with pytest.raises(ValueError, match="gpu_memory_utilization"):
            memory_share("sglang", H100, 1, bad)
    with pytest.raises(ValueError, match="chunked_prefill_size"):
        sglang_mem_fraction_static(H100, chunked_prefill_size=0)
    with pytest.raises(ValueError, match="cuda_graph_max_bs"):
        sglang_mem_fraction_static(H100, cuda_graph_max_bs=-1)
    with pytest.raises(TypeError, match="gpu"):
        sglang_mem_fraction_static(3)
    tiny = dataclasses.replace(catalog.gpu("RTX-4090"), memory_bytes=3 * GIB,
                               visible_memory_bytes=None)
    with pytest.raises(ValueError, match="keeps back"):
        sglang_mem_fraction_static(tiny)


def _plan(engine, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rk.plan(rk.Traffic(2.0, 1000, 100), rk.SLO(ttft=1.0), models="Llama-3.1-8B",
                       gpus="H100-SXM-80GB", replicates=2, requests=100, engine=engine,
                       max_num_batched_tokens=8192, **kwargs)


def test_an_sglang_plan_holds_the_pool_sglang_allocates():
    # 0.834 x (79.19 - 0.60) - 14.96 GiB of 128 KiB tokens, in whole 16-token blocks
    plan = _plan("sglang")
    assert "mem-fraction-static" in plan.attrs["gpu_memory_utilization"]
    assert plan.attrs["memory_outside_kv"].startswith("sglang ")
    pool = 0.834 * (79.19 - 0.60) * GIB - float(catalog.model("Llama-3.1-8B").weight_bytes)
    tokens = int(pool // (16 * 131_072)) * 16
    assert int(plan["kv_budget_tokens"].squeeze()) == tokens
    # given a share, it is SGLang's --mem-fraction-static: 0.8 x (79.19 - 0.60) - 14.96
    given = _plan("sglang", gpu_memory_utilization=0.8)
    assert given.attrs["gpu_memory_utilization"] == 0.8
    pool = 0.8 * (79.19 - 0.60) * GIB - float(catalog.model("Llama-3.1-8B").weight_bytes)
    assert int(given["kv_budget_tokens"].squeeze()) == int(pool // (16 * 131_072)) * 16
    # its launch command asks SGLang for the share the plan took
    commands = launch_commands(rk.cheapest_plan(plan, by=None), rk.Traffic(2.0, 1000, 100))
    assert "--mem-fraction-static 0.834" in commands["sglang_serve"]
    assert not any("above its own default" in n for n in commands["notes"])
    # vLLM's plan of the same model gives SGLang a share above its own: the notes say so
    vllm = launch_commands(rk.cheapest_plan(_plan(None), by=None), rk.Traffic(2.0, 1000, 100))
    assert any("above its own default for this GPU and chunk (0.834)" in n
               for n in vllm["notes"])


def test_capacity_answers_with_sglangs_pool(capsys):
    # Llama-3.1-70B on 2 x H100 under SGLang's default: 0.833 x (79.19 - 2.38) = 63.98 GiB
    # for the 65.70 GiB of weights on each GPU: no pool at all (SGLang asks for a larger
    # --mem-fraction-static), where vLLM's rule holds 10,368 tokens
    import json
    assert round((H100_MIB - (512 + 12_288 + 512 + 256)) / H100_MIB, 3) == 0.833
    assert main(["capacity", "llama-3.1-70b", "h100", "--tp", "2", "--engine", "sglang",
                 "--json"]) == 1
    assert "does not fit" in capsys.readouterr().err
    assert main(["capacity", "llama-3.1-70b", "h100", "--tp", "2", "--engine", "sglang",
                 "--show-anyway", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["gpu_memory_utilization"] == 0.833 and got["kv_budget_tokens"] == 0
    assert got["engine_memory_gib"] == pytest.approx(0.833 * 2.38, abs=1e-6)
    # on four: 512 + 12,288 + 2 x 512 + 512 = 14,336 MiB kept, a share of 0.823; the pool
    # 0.823 x (79.19 - 2.38) - 131.42 / 4 = 30.36 GiB a GPU, 81,920 B a token on each
    assert main(["capacity", "llama-3.1-70b", "h100", "--tp", "4", "--engine", "sglang",
                 "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    share = round((H100_MIB - 14_336) / H100_MIB, 3)
    assert got["gpu_memory_utilization"] == share == 0.823
    weights = float(catalog.model("Llama-3.1-70B").weight_bytes) / 4
    pool = share * (79.19 - 2.38) * GIB - weights
    assert got["kv_budget_tokens"] == int(pool // (16 * 81_920)) * 16
    assert "sglang 0.5.6's memory in use before its weights load" in got["kv_cache_rule"]


def test_the_plan_command_names_sglangs_share(capsys):
    # the cheapest configuration's share: one H100 at the 8,192-token chunk, 0.834
    argv = ["plan", "llama-3.1-8b", "--gpus", "h100", "--rate", "2", "--prompt-mean", "500",
            "--output-mean", "100", "--ttft", "1", "--replicates", "2", "--requests", "100",
            "--max-num-batched-tokens", "8192", "--engine", "sglang"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert ("KV cache: SGLang's default --mem-fraction-static (by GPU, layout and chunk: "
            "memory_share); 0.834 on H100-SXM-80GB at TP 1 of the memory the driver reports, "
            "less the weights and sglang 0.5.6's memory in use before its weights load") in out
    assert "--mem-fraction-static 0.834" in out
