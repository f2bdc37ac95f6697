"""What vLLM keeps on each GPU beside the weights and the KV cache, against its own logs.

The figures are vLLM 0.19.0's start-up lines in ``tests/data/engine_logs/vllm_memory.csv``
(each row sourced there); hand arithmetic beside each check.
"""

import csv
import importlib.util
import math
from pathlib import Path

import pytest

import rooflinekit as rk
from rooflinekit import catalog
from rooflinekit.profiles import (ENGINE_MEMORY, counts_cuda_graphs, engine_memory,
                                  memory_engine,
                                  moe_workspace_bytes, read_engine_memory_file)

ROOT = Path(__file__).parents[1]
LOGS = ROOT / "tests" / "data" / "engine_logs" / "vllm_memory.csv"
GIB = 2**30


def _rows():
    with open(LOGS, newline="") as f:
        return {r["id"]: r for r in csv.DictReader(x for x in f if not x.startswith("#"))}


ROWS = _rows()


def _script():
    spec = importlib.util.spec_from_file_location(
        "fit_engine_memory", ROOT / "scripts" / "fit_engine_memory.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_log_row_is_sourced_and_its_figures_read():
    assert len(ROWS) >= 50
    for row in ROWS.values():
        assert row["source"].startswith("http"), row["id"]
        for key in ("weights_gib", "available_kv_gib"):
            assert math.isfinite(float(row[key])), (row["id"], key)


def test_the_shipped_figures_are_the_scripts_fit_of_the_logs():
    script = _script()
    rows = script.fit_rows(script.read_rows(LOGS))
    knobs = script.fit(rows)
    shipped = next(r for r in ENGINE_MEMORY if r["engine"] == "vllm")
    for key, value in knobs.items():
        assert shipped[key] == pytest.approx(value, abs=5e-5), key
    err = script.errors(rows)
    assert shipped["held_out_error_gib"] == pytest.approx(
        max(abs(v) for v in err["held_out"].values()), abs=5e-4)
    assert shipped["held_out_error_gib"] < 0.4


def test_llama_8b_on_one_h100_by_hand():
    # llmd-llama31-8b-tp1: 0.95 x 79.19 GiB - 14.99 (weights) - 1.89 (activation peak)
    # - 0.25 (non-torch) = 58.10 GiB; the log says 58.11
    row = ROWS["llmd-llama31-8b-tp1"]
    assert 0.95 * 79.19 - 14.99 - 1.89 - 0.25 == pytest.approx(float(row["available_kv_gib"]),
                                                                abs=0.011)
    model = catalog.model("Llama-3.1-8B")
    kept = engine_memory(model, "H100-SXM-80GB", 1, engine="vllm@0.19.0")
    # the sampler's logits: 1,024 sequences x 128,256 entries x 15.452 bytes = 1.89 GiB
    assert kept["sampler_bytes"] == pytest.approx(1024 * 128_256 * 15.452, rel=1e-4)
    assert kept["activation_peak_bytes"] / GIB == pytest.approx(1.89, abs=0.01)
    assert kept["non_torch_bytes"] / GIB == pytest.approx(0.25, abs=1e-9)
    # the whole rule with the catalogue's weights (14.96 GiB) and the H100's 79.19 GiB
    kv = rk.engine_kv_cache(model, catalog.gpu("H100-SXM-80GB"), 1,
                            gpu_memory_utilization=0.95, max_model_len=8192,
                            activation_peak_bytes=kept["activation_peak_bytes"],
                            non_torch_bytes=kept["non_torch_bytes"])
    assert kv["available_bytes"] / GIB == pytest.approx(58.11, abs=0.06)
    # 476,016 tokens logged: 58.11 GiB of 128 KiB tokens, in 16-token blocks
    assert kv["kv_cache_tokens"] == pytest.approx(int(row["kv_cache_tokens"]), rel=1e-3)


def test_mixtral_moe_workspace_by_hand():
    # 8,192 tokens x 2 experts x (max(2 x 14,336 / 2, 4,096) + 14,336 / 2) x 2 bytes
    model = catalog.model("Mixtral-8x7B")
    assert moe_workspace_bytes(model, 2, 8192) == 8192 * 2 * (14_336 + 7_168) * 2
    # a dense model has none; a step past the kernel's 16,384-token chunk is split
    assert moe_workspace_bytes(catalog.model("Llama-3.1-8B"), 1, 8192) == 0.0
    assert moe_workspace_bytes(model, 2, 65_536) == moe_workspace_bytes(model, 2, 16_384)
    # llmd-mixtral-8x7b-tp2 logs 1.21 GiB: 0.47 of logits (32,000 entries) + 0.66 of experts
    kept = engine_memory(model, "H100", 2, engine="vllm@0.19.0")
    assert kept["activation_peak_bytes"] / GIB == pytest.approx(
        float(ROWS["llmd-mixtral-8x7b-tp2"]["activation_peak_gib"]), abs=0.1)
    assert kept["non_torch_bytes"] / GIB == pytest.approx(2.09, abs=1e-9)


@pytest.mark.parametrize("row_id", [k for k, r in ROWS.items() if r["vllm_version"] == "0.19.0"
                                    and r["model"] and r["pp"] in ("", "1")
                                    and r["activation_peak_gib"]])
def test_each_logged_start_within_the_held_out_error(row_id):
    row = ROWS[row_id]
    kept = engine_memory(catalog.model(row["model"]), "H100", int(row["tp"]),
                         max_num_seqs=int(row["max_num_seqs"]),
                         max_num_batched_tokens=int(row["max_num_batched_tokens"]),
                         engine="vllm@0.19.0")
    logged = float(row["activation_peak_gib"]) + float(row["non_torch_gib"])
    ours = (kept["activation_peak_bytes"] + kept["non_torch_bytes"]) / GIB
    assert ours == pytest.approx(logged, abs=ENGINE_MEMORY[0]["held_out_error_gib"] + 0.005)


def test_vllm_counts_its_cuda_graphs_from_0_20():
    """From 0.20.0 on vLLM's profiling estimates its CUDA graphs and takes them off the KV
    cache (vllm-project/vllm#38284: VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to "1"
    in 0.20.0's vllm/envs.py, "0" in 0.19.1's); before, they were captured in the memory the
    share leaves. By hand from engine_memory.toml: 0.449 GiB + 0.014793 GiB a layer of a
    pipeline stage. The name alone keeps the row's release, 0.19.0's (counts_cuda_graphs)."""
    model = catalog.model("Llama-3.1-70B")                      # 80 layers
    now = engine_memory(model, "H100", 4, engine="vllm@0.20.0")
    before = engine_memory(model, "H100", 4, engine="vllm@0.19.1")
    assert before["cuda_graph_bytes"] == 0.0
    assert engine_memory(model, "H100", 4) == before
    assert now["cuda_graph_bytes"] == pytest.approx((0.449 + 80 * 0.014793) * GIB, rel=1e-4)
    assert now["activation_peak_bytes"] - before["activation_peak_bytes"] == pytest.approx(
        now["cuda_graph_bytes"], rel=1e-12)
    # three stages of 27, 27 and 26 layers: the largest stage's
    staged = engine_memory(model, "H100", 4, pp=3, engine="vllm@0.21.0")
    assert staged["cuda_graph_bytes"] == pytest.approx((0.449 + 27 * 0.014793) * GIB, rel=1e-4)
    assert counts_cuda_graphs("vllm@0.20.0") and counts_cuda_graphs("vllm@0.26.0")
    assert not counts_cuda_graphs("vllm") and not counts_cuda_graphs("vllm@0.19.1")
    assert not counts_cuda_graphs(None) and not counts_cuda_graphs("vllm@latest")
    assert not counts_cuda_graphs("sglang") and not counts_cuda_graphs("trtllm")
    assert engine_memory(catalog.model("Llama-3.1-8B"), "H100", engine="sglang")[
        "cuda_graph_bytes"] == 0.0


def test_vllms_second_model_runner_counted_no_cuda_graphs_until_0_29():
    """vLLM's "Model Runner V2" returned 0 from profile_cudagraph_memory until 0.29.0
    (vllm-project/vllm#53306) and was the default (vllm/config/vllm.py of each release) for
    Qwen3ForCausalLM from 0.22.0, LlamaForCausalLM and MistralForCausalLM from 0.23.0 (not
    MoE, no quantisation config), and every model neither MoE nor hybrid from 0.25.0: those
    count none; every other model, and every model from 0.29.0, counts them."""
    llama, qwen3 = catalog.model("Llama-3.1-8B"), catalog.model("Qwen3-8B")
    fp8 = llama.replace(bytes_per_param="fp8")
    moe, hybrid = catalog.model("Qwen3-30B-A3B"), catalog.model("Qwen3.5-27B")
    gemma = catalog.model("Gemma-3-27B")              # dense, in no list before 0.25.0
    table = {  # release: (llama, fp8 llama, qwen3, moe, hybrid, gemma) counted?
        "0.21.0": (True, True, True, True, True, True),
        "0.22.0": (True, True, False, True, True, True),
        "0.24.0": (False, True, False, True, True, True),
        "0.25.0": (False, False, False, True, True, False),
        "0.28.0": (False, False, False, True, True, False),
        "0.29.0": (True, True, True, True, True, True),
    }
    for release, expected in table.items():
        got = tuple(counts_cuda_graphs(f"vllm@{release}", m)
                    for m in (llama, fp8, qwen3, moe, hybrid, gemma))
        assert got == expected, release
        assert counts_cuda_graphs(f"vllm@{release}")          # the release's rule alone
    assert engine_memory(llama, "H100", 1, engine="vllm@0.24.0")["cuda_graph_bytes"] == 0.0
    assert engine_memory(llama, "H100", 1, engine="vllm@0.29.0")["cuda_graph_bytes"] == \
        pytest.approx((0.449 + 32 * 0.014793) * GIB, rel=1e-4)
    with pytest.raises(TypeError, match="model"):
        counts_cuda_graphs("vllm@0.29.0", "Llama-3.1-8B")


def test_vllms_default_share_is_0_92_from_0_20():
    """vllm/config/cache.py: gpu_memory_utilization's default is 0.9 in 0.19.1 and 0.92 from
    0.20.0 (vllm-project/vllm#38284). The name alone keeps 0.19.0's 0.9; a share given wins."""
    from rooflinekit.profiles import memory_share
    assert memory_share("vllm", "H100") == memory_share("vllm@0.19.1", "H100") == 0.9
    assert memory_share("vllm@0.20.0", "H100") == memory_share("vllm@0.29.0", "H100") == 0.92
    assert memory_share("vllm@0.29.0", "H100", gpu_memory_utilization=0.8) == 0.8
    assert memory_share("vllm@latest", "H100") == 0.9          # not a release number
    from rooflinekit.profiles import default_share
    assert default_share("vllm@0.29.0") == 0.92 and default_share(None) == 0.9
    assert default_share("trtllm") == 0.9
    with pytest.raises(ValueError, match="SGLang's default share depends on the GPU"):
        default_share("sglang")
    # a plan records the share it took
    plan = rk.plan(rk.Traffic(0.5, 500, 50), rk.SLO(ttft=5.0), models="Llama-3.1-8B",
                   gpus="H100", engine="vllm@0.29.0", replicates=1, requests=20)
    assert plan.attrs["gpu_memory_utilization"] == 0.92


def test_the_cuda_graph_rule_against_the_logs():
    """The shipped figures are the script's least squares over what vLLM 0.19.0's captures
    took, and within its stated error of each; against the one estimate a vLLM >= 0.21 log
    prints for a catalogue model, Qwen3-8B under 0.21.0 (LMCache/LMCache#3430, 2026-05-28:
    "Estimated CUDA graph memory: 0.52 GiB" at the default 51 + 35 graphs, RTX A5000), the
    rule is 0.46 GiB high: the estimate and the capture differ (docs/validation.md)."""
    script = _script()
    rows = script.graph_rows(script.read_rows(LOGS))
    assert len(rows) >= 30
    knobs = script.fit_cuda_graphs(rows)
    shipped = next(r for r in ENGINE_MEMORY if r["engine"] == "vllm")
    for key, value in knobs.items():
        assert shipped[key] == pytest.approx(value, abs=5e-5), key
    assert shipped["cuda_graph_since"] == script.CUDA_GRAPH_SINCE == "0.20.0"
    assert shipped["default_share_since"] == script.DEFAULT_SHARE_SINCE == "0.20.0"
    assert shipped["default_share_from_then"] == script.DEFAULT_SHARE_FROM_THEN == 0.92
    assert [(g["since"], g["before"]) for g in shipped["cuda_graph_gaps"]] == [
        (since, before) for since, before, *_ in script.CUDA_GRAPH_GAPS]
    for row in rows:
        ours = engine_memory(row["model"], "H100", 1, engine="vllm@0.21.0")[
            "cuda_graph_bytes"] / GIB \
            if row["layers"] == row["model"].n_layers else None
        if ours is not None:
            assert ours == pytest.approx(row["graphs"],
                                         abs=shipped["cuda_graph_fit_error_gib"] + 5e-4)
    qwen = engine_memory(catalog.model("Qwen3-8B"), "RTX-4090", 1, engine="vllm@0.21.0")[
        "cuda_graph_bytes"] / GIB
    assert qwen - 0.52 == pytest.approx(0.46, abs=0.01)


def test_an_older_vllm_profiles_about_as_much():
    # llmdbench-mistral-small32-24b, vLLM 0.11.0 on H100: 2.12 GiB of activation, 0.14 of
    # non-torch; held out of the 0.19.0 fit
    row = ROWS["llmdbench-mistral-small32-24b"]
    kept = engine_memory(catalog.model("Mistral-Small-3"), "H100", 1, max_num_seqs=1024,
                         max_num_batched_tokens=8192, engine="vllm@0.11.0")
    assert kept["activation_peak_bytes"] / GIB == pytest.approx(
        float(row["activation_peak_gib"]), abs=0.25)


def test_the_a100s_smaller_defaults_profile_fewer_logits():
    # myoceane-gptoss-20b-a100, vLLM 0.19.0 at 0.65: weights 13.72, KV 36.56 GiB, so
    # activation + non-torch + the driver's reserve = 0.65 x 80 - 13.72 - 36.56 = 1.72 GiB; at
    # the A100's defaults (256 sequences, 2,048 tokens) the rule gives about 1.2 GiB, inside it
    kept = engine_memory(catalog.model("gpt-oss-20b"), "A100-SXM-80GB", 1, engine="vllm@0.19.0")
    assert kept["sampler_bytes"] == pytest.approx(256 * 201_088 * 15.452, rel=1e-4)
    outside = (kept["activation_peak_bytes"] + kept["non_torch_bytes"]) / GIB
    assert 0.9 < outside < 0.65 * 80 - 13.72 - 36.56


def test_which_engine_holds_memory():
    assert memory_engine(None) == memory_engine("vllm") == memory_engine("vllm@0.11.0") == "vllm"
    # a release whose memory differs (graphs counted, a 0.92 share) keeps its version
    assert memory_engine("vllm@0.20.0") == "vllm@0.20.0"
    assert memory_engine("vllm@0.25.0") == "vllm@0.25.0"     # its share, if not its graphs
    assert memory_engine("vllm@0.19.1") == "vllm"
    assert memory_engine(rk.Engine()) == "vllm"            # its launch command is vLLM's
    assert memory_engine("ideal") is memory_engine(rk.IDEAL) is None
    assert memory_engine("sglang") == memory_engine("sglang@0.5.6") == "sglang"
    assert memory_engine("trtllm") == "trtllm"              # its row: a share of what is left
    with pytest.raises(ValueError, match="engine must be one with a memory row"):
        engine_memory(catalog.model("Llama-3.1-8B"), "H100", engine="lmdeploy")


def test_a_plan_takes_the_footprint_off_each_gpu():
    # Llama-3.1-8B on one H100, 1,024 sequences and 8,192-token chunks: the default's budget
    # is the ideal bound's less (1.890 + 0.25) GiB of 128 KiB tokens = 17,531 tokens, to a block
    traffic, slo = rk.Traffic(1.0, 500, 50), rk.SLO(ttft=5.0)
    kw = dict(models="Llama-3.1-8B", gpus="H100", tp=1, replicates=1, requests=50)
    default = rk.plan(traffic, slo, **kw)
    ideal = rk.plan(traffic, slo, engine="ideal", **kw)
    gap = int(ideal["kv_budget_tokens"].squeeze()) - int(default["kv_budget_tokens"].squeeze())
    kept = engine_memory(catalog.model("Llama-3.1-8B"), "H100", 1)
    held = (kept["activation_peak_bytes"] + kept["non_torch_bytes"]) / 131_072
    assert abs(gap - held) <= 16
    assert default.attrs["memory_outside_kv"].startswith("vllm 0.19.0's activation peak")
    assert "MXFP4" not in default.attrs["memory_outside_kv"]      # no MXFP4 experts here
    assert ideal.attrs["memory_outside_kv"].startswith("nothing else")
    # vLLM 0.29.0, named, takes 0.92 of the driver's 79.19 GiB and its CUDA graphs off
    # (0.449 + 32 x 0.014793 = 0.922 GiB): 0.02 x 79.19 - 0.922 = 0.662 GiB, 5,418 more tokens;
    # 0.24.0 ran Llama on its second model runner, which counted no graphs: 1.584 GiB, 12,975
    newer = rk.plan(traffic, slo, engine="vllm@0.29.0", **kw)
    more = int(newer["kv_budget_tokens"].squeeze()) - int(default["kv_budget_tokens"].squeeze())
    assert abs(more - (0.02 * 79.19 - 0.449 - 32 * 0.014793) * GIB / 131_072) <= 16
    assert newer.attrs["memory_outside_kv"].startswith("vllm@0.29.0: vllm 0.19.0's")
    runner2 = rk.plan(traffic, slo, engine="vllm@0.24.0", **kw)
    more = int(runner2["kv_budget_tokens"].squeeze()) - int(default["kv_budget_tokens"].squeeze())
    assert abs(more - 0.02 * 79.19 * GIB / 131_072) <= 16
    from rooflinekit.planning import launch_commands
    commands = launch_commands(rk.cheapest_plan(newer, by=None), traffic)
    assert "--gpu-memory-utilization 0.92 " in commands["vllm_serve"] + " "


def test_the_mxfp4_layout_is_named_only_for_mxfp4_experts():
    from rooflinekit.profiles import memory_outside_kv
    dense, oss = catalog.model("Llama-3.1-8B"), catalog.model("gpt-oss-20b")
    assert memory_outside_kv("vllm", [dense]) == ("vllm 0.19.0's activation peak and non-torch "
                                                  "memory (engine_memory)")
    assert memory_outside_kv("vllm", [dense, oss]).endswith(
        "non-torch memory, and its MXFP4 kernels' layout (engine_memory)")
    assert memory_outside_kv("vllm@0.24.0", [dense]) == (
        "vllm@0.24.0: vllm 0.19.0's activation peak and non-torch memory, and the CUDA graphs "
        "vllm counts from 0.20.0 on (where its release counts them) (engine_memory)")
    assert "for MXFP4 experts its kernels' layout" in memory_outside_kv("vllm")
    with pytest.raises(TypeError, match="models"):
        memory_outside_kv("vllm", ["Llama-3.1-8B"])


def test_the_driver_reports_less_than_the_capacity():
    h100 = catalog.gpu("H100-SXM-80GB")
    assert h100.visible_memory_per_gpu == 79.19 * GIB
    assert h100.group(4).visible_memory_per_gpu == 79.19 * GIB
    # unmeasured: the capacity; measured, the driver's total (gpus.toml's sources)
    gaudi = catalog.gpu("Gaudi-3")
    assert gaudi.visible_memory_bytes is None
    assert gaudi.visible_memory_per_gpu == gaudi.memory_per_gpu
    # A100 80GB: deviceQuery's 85,100,068,864 B; A100 80GB PCIe: its 84,974,239,744 B; B300:
    # 287,428,771,840 B; H20: PyTorch's 97,285 MiB; MI355X: vLLM's "(.../287.98 GiB)"
    # (gpus.toml's visible_memory_source)
    for name, total in (("H200-SXM-141GB", 139.72), ("L40S", 44.42), ("RTX-4090", 23.64),
                        ("L4", 22.03), ("B200", 178.35), ("A100-SXM-80GB", 79.26),
                        ("A100-PCIe-80GB", 79.14), ("H100-PCIe-80GB", 79.19),
                        ("B300", 267.69), ("H20", 97_285 / 1024), ("MI355X", 287.98)):
        assert catalog.gpu(name).visible_memory_per_gpu == pytest.approx(total * GIB), name
    with pytest.raises(ValueError, match="visible_memory_bytes must be <= memory_bytes"):
        rk.GPU("x", memory_bytes=80 * GIB, hbm_bandwidth=1e12, peak_flops=1e15,
               visible_memory_bytes=81 * GIB)


GOOD = """[[memory]]
engine = "vllm"
version = "0.19.0"
date = "2026-12-05"
sampler_bytes_per_logit = 15.5
non_torch_gib = 0.25
non_torch_parallel_gib = 2.1
fit_error_gib = 0.4
held_out_error_gib = 0.4
held_out_median_error_gib = 0.1
source = "here"
"""
GRAPHS = """cuda_graph_since = "0.20.0"
cuda_graph_gib = 0.4
cuda_graph_gib_per_layer = 0.01
cuda_graph_fit_error_gib = 0.7
"""
GAP = """
[[memory.cuda_graph_gap]]
since = "{since}"
before = "0.29.0"
models = {models}
source = "there"
"""


@pytest.mark.parametrize("text, match", [
    (GOOD.replace('"vllm"', '"tgi"'), r"memory\[0\]\.engine: must be one of"),
    (GOOD.replace("= 15.5", "= nan"), r"memory\[0\]\.sampler_bytes_per_logit: must be a finite"),
    (GOOD.replace("= 0.25", "= -1"), r"memory\[0\]\.non_torch_gib: must be a finite"),
    (GOOD.replace("non_torch_parallel_gib = 2.1\n", ""), r"non_torch_parallel_gib"),
    (GOOD.replace('source = "here"', 'source = ""'), r"memory\[0\]\.source"),
    (GOOD + "speed = 3\n", r"unknown field\(s\) speed"),
    (GOOD + GOOD, r"memory\[1\]\.engine: 'vllm' has a row already"),
    (GOOD + 'cuda_graph_since = "0.21.0"\n',
     r"memory\[0\]: a row that counts its CUDA graphs gives all of .*missing cuda_graph_fit"),
    (GOOD + 'cuda_graph_since = "soon"\ncuda_graph_gib = 0.4\ncuda_graph_gib_per_layer = 0.01\n'
     'cuda_graph_fit_error_gib = 0.7\n', r"memory\[0\]\.cuda_graph_since: must be a release"),
    (GOOD + 'cuda_graph_since = "0.21.0"\ncuda_graph_gib = -0.4\ncuda_graph_gib_per_layer = 0.01\n'
     'cuda_graph_fit_error_gib = 0.7\n', r"memory\[0\]\.cuda_graph_gib: must be a finite"),
    (GOOD + 'default_share_since = "0.20.0"\n', r"gives both of default_share_since"),
    (GOOD + 'default_share_since = "0.20.0"\ndefault_share_from_then = 1.5\n',
     r"memory\[0\]\.default_share_from_then: must be a share in \(0, 1\]"),
    (GOOD + 'default_share_since = "later"\ndefault_share_from_then = 0.92\n',
     r"memory\[0\]\.default_share_since: must be a release"),
    (GOOD + GAP.format(since="0.22.0", models='["Llama-3.1-8B"]'),
     r"memory\[0\]\.cuda_graph_gap: a row whose profiling counts no CUDA graphs"),
    (GOOD + GRAPHS + GAP.format(since="0.22.0", models='["Llama-9"]'),
     r"cuda_graph_gap\[0\]\.models: 'Llama-9' is not a catalogue model"),
    (GOOD + GRAPHS + GAP.format(since="0.29.0", models='"dense"'),
     r"cuda_graph_gap\[0\]: since \(0.29.0\) must come before"),
    (GOOD + GRAPHS + GAP.format(since="0.22.0", models='"all"'),
     r"cuda_graph_gap\[0\]\.models: must be \"dense\" or a list"),
    (GOOD + GRAPHS + GAP.format(since="0.22.0", models='"dense"') + "speed = 3\n",
     r"cuda_graph_gap\[0\]: gives exactly since, before, models, source; unknown speed"),
    ("memory = 3\n", "field 'memory'"),
    ("[[memory]\n", "not TOML"),
])
def test_a_bad_memory_file_names_the_file_row_and_field(tmp_path, text, match):
    path = tmp_path / "memory.toml"
    path.write_text(text)
    with pytest.raises((ValueError, TypeError), match=match) as info:
        read_engine_memory_file(path)
    assert "memory.toml" in str(info.value)


def test_a_good_memory_file_reads(tmp_path):
    path = tmp_path / "memory.toml"
    path.write_text(GOOD)
    (row,) = read_engine_memory_file(path)
    assert row["sampler_bytes_per_logit"] == 15.5 and row["engine"] == "vllm"
    assert row["cuda_graph_gaps"] == () and "default_share_since" not in row
    path.write_text(GOOD + GRAPHS + GAP.format(since="0.25.0", models='"dense"'))
    (row,) = read_engine_memory_file(path)
    assert row["cuda_graph_gaps"] == ({"since": "0.25.0", "before": "0.29.0",
                                       "models": "dense", "source": "there",
                                       "sixteen_bit_only": False},)


def test_the_capacity_command_budgets_what_vllm_logged(capsys):
    # llmd-llama31-8b-tp1: 476,016 tokens at 0.95 (58.11 GiB); the ideal bound keeps the
    # weights' remainder, 0.95 x 79.19 - 14.96 = 60.27 GiB
    from rooflinekit.cli import main
    assert main(["capacity", "Llama-3.1-8B", "H100", "--gpu-memory-utilization", "0.95",
                 "--json"]) == 0
    import json
    out = json.loads(capsys.readouterr().out)
    assert out["kv_budget_tokens"] == pytest.approx(476_016, rel=1e-3)
    assert out["engine_memory_gib"] == pytest.approx(2.14, abs=0.01)
    # vLLM from 0.20.0 on also takes its CUDA graphs off: 0.449 + 32 x 0.014793 = 0.92 GiB
    assert main(["capacity", "Llama-3.1-8B", "H100", "--gpu-memory-utilization", "0.95",
                 "--engine", "vllm@0.29.0", "--json"]) == 0
    now = json.loads(capsys.readouterr().out)
    assert now["engine_memory_gib"] == pytest.approx(2.14 + 0.449 + 32 * 0.014793, abs=0.01)
    assert "cuda_graph_gib" not in now and "cuda_graph_gib" in out
    # but not 0.24.0's second model runner, which ran Llama (and counted none)
    assert main(["capacity", "Llama-3.1-8B", "H100", "--gpu-memory-utilization", "0.95",
                 "--engine", "vllm@0.24.0", "--json"]) == 0
    runner2 = json.loads(capsys.readouterr().out)
    assert runner2["engine_memory_gib"] == pytest.approx(2.14, abs=0.01)
    assert "cuda_graph_gib" not in runner2
    # the name alone plans 0.19.0's memory and says what those graphs would take
    assert out["cuda_graph_gib"] == pytest.approx(0.449 + 32 * 0.014793, abs=0.001)
    assert out["cuda_graphs_since"] == "0.20.0"
    assert main(["capacity", "Llama-3.1-8B", "H100", "--gpu-memory-utilization", "0.95"]) == 0
    text = capsys.readouterr().out
    assert "note: vLLM from 0.20.0 on also takes an estimate of its CUDA graphs" in text
    assert f"leaves {out['kv_budget_gib'] - out['cuda_graph_gib']:.2f} GiB a GPU" in text
    assert main(["capacity", "Llama-3.1-8B", "H100", "--gpu-memory-utilization", "0.95",
                 "--engine", "ideal", "--json"]) == 0
    ideal = json.loads(capsys.readouterr().out)
    assert ideal["kv_budget_gib"] == pytest.approx(0.95 * 79.19 - 14.96, abs=0.01)
    assert "engine_memory_gib" in ideal and ideal["engine_memory_gib"] == 0.0
    assert "cuda_graph_gib" not in ideal


def test_the_capacity_command_answers_by_the_engines_rule(capsys):
    # Llama-3.1-70B on 2 x H100: vLLM at 0.9 holds 10,368 tokens (the plan's budget,
    # docs/planning.md), one sequence of 8,192 tokens, 0.9 x 79.19 - 65.71 - 1.89 (sampler:
    # 1,024 x 128,256 logits) - 2.09 (non-torch) = 1.58 GiB a GPU in whole 16-token blocks;
    # the guide's rule, asked for
    # with --workspace-fraction, keeps 10 % of what the weights leave, (160 - 131.42) x 0.9 =
    # 25.73 GiB, 84,296 tokens
    import json

    from rooflinekit.cli import main
    assert main(["capacity", "Llama-3.1-70B", "H100", "--tp", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["kv_budget_tokens"], out["max_concurrent_sequences"]) == (10_368, 1)
    assert out["engine_memory_gib"] == pytest.approx(1.89 + 2.09, abs=0.01)
    assert out["kv_cache_rule"].startswith("0.9 of the 79.19 GiB the driver reports")
    assert main(["capacity", "Llama-3.1-70B", "H100", "--tp", "2", "--workspace-fraction", "0.1",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kv_budget_gib"] == pytest.approx((160 - 131.42) * 0.9, abs=0.01)
    assert out["kv_budget_tokens"] == 84_296 and "engine_memory_gib" not in out
    # the bound keeps nothing beside the weights: 0.9 x 79.19 - 65.71 = 5.56 GiB a GPU
    assert main(["capacity", "Llama-3.1-70B", "H100", "--tp", "2", "--engine", "ideal",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["engine_memory_gib"] == 0.0
    assert out["kv_budget_gib"] == pytest.approx(2 * (0.9 * 79.19 - 131.42 / 2), abs=0.01)


def test_the_plan_command_says_what_it_took_off_each_gpu(capsys):
    from rooflinekit.cli import main
    argv = ["plan", "llama-3.1-8b", "--gpus", "h100", "--rate", "2", "--prompt-mean", "500",
            "--output-mean", "100", "--ttft", "1", "--replicates", "2", "--requests", "100"]
    assert main(argv) == 0
    assert ("KV cache: 0.9 of the memory the driver reports, less the weights and vllm "
            "0.19.0's activation peak and non-torch memory") in capsys.readouterr().out
    assert main(argv + ["--engine", "ideal"]) == 0
    assert "less the weights and nothing else (the bound: no engine memory held)" in \
        capsys.readouterr().out


def test_the_pages_left_out_figures():
    """docs/validation.md: vLLM's gpt-oss-120b weights on an H100 over the catalogue's against
    the MXFP4 layout rule, and the guide's and vLLM's caches for Llama-3.1-70B on two H100s
    (test_the_capacity_command_answers_by_the_engines_rule computes both)."""
    import re
    page = re.sub(r"\s+", " ", (ROOT / "docs" / "validation.md").read_text())
    model = catalog.model("gpt-oss-120b")
    logged = float(ROWS["llmdbench-gptoss-120b"]["weights_gib"])
    over = logged - model.weight_bytes / GIB                      # 64.38 - 60.77
    rule = rk.profiles.mxfp4_layout_bytes(model, "H100-SXM-80GB") / GIB
    assert f"gpt-oss-120b {over:.2f} ({rule:.2f})" == "gpt-oss-120b 3.61 (3.53)"
    assert "gpt-oss-120b 3.61 (3.53)" in page
    assert "84,296 tokens for Llama-3.1-70B on two H100s, where vLLM allocates 10,368" in page


def _gpu_row(**changes):
    """A catalogue row with a visible memory (test_streaming_bandwidth's row, its stream off)."""
    from test_streaming_bandwidth import _row
    return _row(**{"streaming_bandwidth_tb_s": None, "streaming_bandwidth_source": None,
                   "visible_memory_gib": 79.19, "visible_memory_source": "a start-up log",
                   **changes})


def test_a_catalogue_row_reads_the_visible_memory_in_gib():
    from rooflinekit.catalog import _gpu_from_row
    assert _gpu_from_row(_gpu_row(), {}).visible_memory_bytes == 79.19 * GIB
    assert _gpu_from_row(_gpu_row(visible_memory_gib=None, visible_memory_source=None),
                         {}).visible_memory_bytes is None


@pytest.mark.parametrize("changes, match", [
    ({"visible_memory_source": None}, "visible_memory_source"),
    ({"visible_memory_gib": "79"}, "visible_memory_gib must be a number > 0"),
    ({"visible_memory_gib": 0.0}, "visible_memory_gib must be a number > 0"),
    ({"visible_memory_gib": math.nan}, "visible_memory_gib must be a number > 0"),
    ({"visible_memory_gib": 81.0}, "visible_memory_bytes must be <= memory_bytes"),
])
def test_a_catalogue_row_refuses_a_bad_visible_memory(changes, match):
    from rooflinekit.catalog import _gpu_from_row
    with pytest.raises(ValueError, match=match):
        _gpu_from_row(_gpu_row(**changes), {})


#: Logged starts of models outside the catalogue, held out of the fit: the shapes the rule
#: reads, from each model's Hugging Face config.json (vocab_size; for an MoE model
#: hidden_size, moe_intermediate_size, the routed experts and experts per token).
OUTSIDE = {
    "llmd-gemma2-2b": {"vocab_size": 256_000},                       # google/gemma-2-2b-it
    "llmd-gemma3-4b": {"vocab_size": 262_208},                       # google/gemma-3-4b-it
    "llmd-phi2-mml2048": {"vocab_size": 51_200},                     # microsoft/phi-2
    "llmd-granite31-8b": {"vocab_size": 49_155},        # ibm-granite/granite-3.1-8b-instruct
    "llmd-deepseek-v2-lite": {"vocab_size": 102_400, "hidden_size": 2048,
                              "intermediate_size": 1408, "n_experts": 64,
                              "n_experts_per_token": 6},    # deepseek-ai/DeepSeek-V2-Lite-Chat
    "llmd-qwen15-moe-a27b": {"vocab_size": 151_936, "hidden_size": 2048,
                             "intermediate_size": 1408, "n_experts": 60,
                             "n_experts_per_token": 4},            # Qwen/Qwen1.5-MoE-A2.7B
}


@pytest.mark.parametrize("row_id", sorted(OUTSIDE))
def test_models_outside_the_catalogue_within_the_held_out_error(row_id):
    shape = OUTSIDE[row_id]
    base = catalog.model("Qwen3-30B-A3B" if "n_experts" in shape else "Llama-3.1-8B")
    row = ROWS[row_id]
    kept = engine_memory(base.replace(**shape), "H100", int(row["tp"] or 1),
                         max_num_seqs=int(row["max_num_seqs"]),
                         max_num_batched_tokens=int(row["max_num_batched_tokens"]),
                         engine="vllm@0.19.0")
    logged = float(row["activation_peak_gib"]) + float(row["non_torch_gib"])
    ours = (kept["activation_peak_bytes"] + kept["non_torch_bytes"]) / GIB
    assert ours == pytest.approx(logged, abs=ENGINE_MEMORY[0]["held_out_error_gib"])


def test_the_pages_outside_the_catalogue_figures():
    import re
    page = re.sub(r"\s+", " ", (ROOT / "docs" / "validation.md").read_text())
    errors = {}
    for row_id, shape in OUTSIDE.items():
        base = catalog.model("Qwen3-30B-A3B" if "n_experts" in shape else "Llama-3.1-8B")
        row = ROWS[row_id]
        kept = engine_memory(base.replace(**shape), "H100", int(row["tp"] or 1),
                             max_num_seqs=int(row["max_num_seqs"]),
                             max_num_batched_tokens=int(row["max_num_batched_tokens"]),
                             engine="vllm@0.19.0")
        errors[row_id] = (kept["activation_peak_bytes"] + kept["non_torch_bytes"]) / GIB - (
            float(row["activation_peak_gib"]) + float(row["non_torch_gib"]))
    granite = errors.pop("llmd-granite31-8b")
    assert f"{max(abs(e) for e in errors.values()):.2f}" == "0.16" and f"{-granite:.2f}" == "0.34"
    single = [float(r["non_torch_gib"]) for r in ROWS.values() if r["vllm_version"] == "0.19.0"
              and r["tp"] in ("", "1") and r["pp"] in ("", "1") and r["non_torch_gib"]]
    assert max(single) == 0.46 and sorted(single)[-2] == 0.27 and min(single) == 0.24
    assert ("within 0.16 GiB of the log, Granite's 0.34 under, its non-torch memory 0.46 GiB "
            "where every other start logs 0.24–0.27") in page


@pytest.mark.parametrize("row, gpu, tp, within", [
    # vLLM's weights logged less the checkpoint's (the catalogue's, a GPU's share): Hopper's
    # Triton kernels keep the unswizzled scales beside the swizzled copy and 32-bit biases
    ("llmdbench-gptoss-20b", "H100-SXM-80GB", 1, 0.07),      # 13.47 - 12.82 = 0.65 GiB
    ("llmdbench-gptoss-120b", "H100-SXM-80GB", 1, 0.08),     # 64.38 - 60.77 = 3.61 GiB
    ("llmd-gptoss-20b-tp2", "H100-SXM-80GB", 2, 0.20),       # 7.01 - 6.41 = 0.60 GiB a GPU
    # the A100's Marlin kernels round the widths up: I 2,880 -> 2,944, H 2,880 -> 3,072
    ("myoceane-gptoss-20b-a100", "A100-SXM-80GB", 1, 0.05),  # 13.72 - 12.82 = 0.90 GiB
])
def test_vllms_mxfp4_kernels_hold_more_than_the_checkpoint(row, gpu, tp, within):
    model = catalog.model(ROWS[row]["model"])
    over = float(ROWS[row]["weights_gib"]) - model.weight_bytes / tp / GIB
    got = rk.profiles.mxfp4_layout_bytes(model, gpu, tp) / GIB
    assert got == pytest.approx(over, abs=within)
    assert got <= over + 0.01          # what is left is not the layout's


def test_the_mxfp4_layouts_by_hand():
    model = catalog.model("gpt-oss-20b")          # 24 layers of 32 experts, H = I = 2,880
    e, h, i = 32, 2880, 2880
    # Marlin (A100): (2,944 x 3,072 - 2,880 x 2,880) x 3 x 17/32 B a layer's expert
    marlin = 24 * 3 * e * (2944 * 3072 - h * i) * 17 / 32
    assert rk.profiles.mxfp4_layout_bytes(model, "A100-SXM-80GB") == pytest.approx(marlin)
    # Hopper: the scales twice (3 H I / 32), the swizzled rows padded to 256 (5,760 -> 5,888;
    # 2,880 -> 3,072), 32-bit biases (2 B more on 2 I + H)
    hopper = 24 * e * (3 * h * i / 32 + (128 * h + 192 * i) / 32 + 2 * (2 * i + h))
    assert rk.profiles.mxfp4_layout_bytes(model, "H100-SXM-80GB") == pytest.approx(hopper)
    # Blackwell (FlashInfer): both widths to 3,072
    blackwell = 24 * 3 * e * (3072 * 3072 - h * i) * 17 / 32
    assert rk.profiles.mxfp4_layout_bytes(model, "B200") == pytest.approx(blackwell)
    # nothing for a model without MXFP4 experts, or a GPU vLLM's table does not list
    assert rk.profiles.mxfp4_layout_bytes(catalog.model("Qwen3-30B-A3B"), "H100") == 0.0
    assert rk.profiles.mxfp4_layout_bytes(catalog.model("Llama-3.1-8B"), "B200") == 0.0
    assert rk.profiles.mxfp4_layout_bytes(model, "MI300X") == 0.0
    # it is part of what vLLM keeps: a plan of gpt-oss-120b on one H100 holds 3.53 GiB less
    kept = engine_memory(catalog.model("gpt-oss-120b"), "H100-SXM-80GB")
    assert kept["weight_layout_bytes"] / GIB == pytest.approx(3.535, abs=0.001)
    with pytest.raises(ValueError, match="tp"):
        rk.profiles.mxfp4_layout_bytes(model, "H100", 0)


def test_layouts_take_the_engines_rule_when_given_it(capsys):
    """rk.layouts with an engine's rule: each GPU's share less its weights and what vLLM keeps,
    in whole 16-token blocks. Llama-3.1-70B: TP 2 holds the 10,368 tokens capacity and plan
    give; TP 4, 0.9 x 79.19 - 32.85 (weights) - 1.89 (sampler) - 2.09 (non-torch) GiB a GPU of
    81,920-byte tokens (a quarter of 327,680)."""
    import functools
    import json

    from rooflinekit.cli import main
    from rooflinekit.profiles import layout_kv_bytes
    model, gpu = catalog.model("Llama-3.1-70B"), catalog.gpu("H100-SXM-80GB")
    rule = functools.partial(layout_kv_bytes, "vllm", model, gpu)
    ds = rk.layouts(model, gpu, 4, batch_size=1, context_length=8192, kv_bytes_per_gpu=rule,
                    engine=rk.IDEAL)
    tokens = {(int(t), int(p)): int(k) for t, p, k in zip(ds.tp.values, ds.pp.values,
                                                         ds.kv_budget_tokens.values)}
    assert tokens[(2, 1)] == 10_368
    per_gpu = 0.9 * 79.19 * GIB - float(model.weight_bytes) / 4 - 1024 * 128_256 * 15.452 \
        - 2.09 * GIB
    assert tokens[(4, 1)] == pytest.approx(int(per_gpu // (81_920 * 16)) * 16, abs=16)
    # a stage of a pipeline keeps the communicators' memory too: TP 1 x PP 4 as TP 4
    assert tokens[(1, 4)] == tokens[(4, 1)]
    assert main(["capacity", "Llama-3.1-70B", "H100", "--tp", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kv_budget_tokens"] == tokens[(2, 1)]
    with pytest.raises(TypeError, match="kv_bytes_per_gpu"):
        rk.layouts(model, gpu, 4, kv_bytes_per_gpu=3.0)
    with pytest.raises(ValueError, match="kv_bytes_per_gpu"):
        rk.layouts(model, gpu, 4, kv_bytes_per_gpu=lambda *a: float("nan"))


def test_a_pipeline_plan_keeps_a_stages_communicators():
    """plan(pp=2) on one GPU a stage: each GPU holds half of Llama-3.1-8B's weights and KV a
    token, and vLLM's communicators' 2.09 GiB (tp x pp > 1), not the single GPU's 0.25:
    0.9 x 79.19 - 14.96 / 2 - 1.89 (sampler) - 2.09 GiB of 65,536-byte tokens, in 16s."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = rk.plan(rk.Traffic(1.0, 500, 50), rk.SLO(ttft=2.0), models="Llama-3.1-8B",
                       gpus="H100-SXM-80GB", tp=[1], pp=[2], replicates=2, requests=50,
                       max_num_seqs=64, max_num_batched_tokens=2048)
    model = catalog.model("Llama-3.1-8B")
    sampler = 15.452 * 64 * 128_256
    per_gpu = 0.9 * 79.19 * GIB - float(model.weight_bytes) / 2 - sampler - 2.09 * GIB
    assert int(plan["kv_budget_tokens"].squeeze()) == pytest.approx(
        int(per_gpu // (65_536 * 16)) * 16, abs=16)



def test_what_vllms_cuda_graphs_take_from_the_release_that_counts_them():
    """0.449 GiB + 15.1 MiB a layer of a stage (engine_memory.toml), by hand: Llama-3.1-70B's
    80 layers, and 40 a stage at two stages; the same at any tensor-parallel degree."""
    row = next(r for r in rk.profiles.ENGINE_MEMORY if r["engine"] == "vllm")
    model = catalog.model("Llama-3.1-70B")
    since, got = rk.profiles.vllm_cuda_graph_bytes(model, "H100-SXM-80GB", 2)
    assert since == "0.20.0"
    assert got == pytest.approx((0.4490 + 80 * 0.014793) * GIB, rel=1e-4)
    assert got == pytest.approx((row["cuda_graph_gib"] + 80 * row["cuda_graph_gib_per_layer"])
                                * GIB)
    _, staged = rk.profiles.vllm_cuda_graph_bytes(model, "H100-SXM-80GB", 2, pp=2)
    assert staged == pytest.approx((0.4490 + 40 * 0.014793) * GIB, rel=1e-4)
    assert rk.profiles.vllm_cuda_graph_bytes(model, "H100-SXM-80GB", 8)[1] == got
    with pytest.raises(ValueError, match="tp"):
        rk.profiles.vllm_cuda_graph_bytes(model, "H100-SXM-80GB", 0)


def test_the_cuda_graph_note_says_what_is_left_and_the_way_out():
    note = rk.profiles.cuda_graph_note("0.21.0", 1.0 * GIB, 3.0 * GIB)
    assert "about 1.00 GiB a GPU" in note and "leaves 2.00 GiB a GPU of the planned 3.00" in note
    assert f"--kv-cache-memory-bytes {3 * GIB}" in note and "engine='vllm@0.21.0'" in note
    assert "none of the planned 1.00 GiB a GPU (vLLM refuses to start)" in \
        rk.profiles.cuda_graph_note("0.21.0", 1.5 * GIB, 1.0 * GIB)
