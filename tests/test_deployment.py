"""From a plan to a deployment: the launch and benchmark commands of the chosen replica.

Reference: the flags the engines take (vLLM's ``vllm serve`` engine arguments and ``vllm bench
serve``; SGLang's ``launch_server`` server arguments; TensorRT-LLM's ``trtllm-serve`` options
``--tp_size``, ``--max_batch_size``, ``--max_num_tokens`` and
``--kv_cache_free_gpu_memory_fraction``, the share of the memory left after the weights), each
value read back from the plan.
"""

import json
import shlex

import pytest

import rooflinekit as rk
from rooflinekit import cli
from rooflinekit.planning import launch_commands
from rooflinekit.workloads import LogNormal, SharedPrefix

TRAFFIC = rk.Traffic(6.0, LogNormal(1000, 0.5), LogNormal(200, 0.5))
SLO = rk.SLO(ttft=1.0, itl=0.05)


def _flags(command: str) -> dict:
    words = shlex.split(command)
    out, i = {}, 0
    while i < len(words):
        if words[i].startswith("--"):
            has_value = i + 1 < len(words) and not words[i + 1].startswith("--")
            out[words[i]] = words[i + 1] if has_value else True
            i += 2 if has_value else 1
        else:
            i += 1
    return out


@pytest.fixture(scope="module")
def chunked():
    plan = rk.plan(TRAFFIC, SLO, models="Llama-3.1-8B", gpus="H100-SXM-80GB", tp=[1, 2],
                   max_num_seqs=[64, 128], max_num_batched_tokens=1024, replicates=3,
                   requests=200, gpu_memory_utilization=0.85)
    return rk.cheapest_plan(plan, by=None)


def test_each_flag_is_the_plans_value(chunked):
    got = launch_commands(chunked, TRAFFIC)
    vllm = _flags(got["vllm_serve"])
    assert got["vllm_serve"].startswith("vllm serve meta-llama/Llama-3.1-8B ")
    assert vllm["--tensor-parallel-size"] == str(int(chunked["tp"]))
    assert vllm["--max-num-seqs"] == str(int(chunked["max_num_seqs"]))
    assert vllm["--max-num-batched-tokens"] == "1024"
    assert vllm["--gpu-memory-utilization"] == "0.85" and vllm["--block-size"] == "16"
    assert vllm["--no-enable-prefix-caching"] is True          # the plan cached nothing
    sglang = _flags(got["sglang_serve"])
    assert sglang["--tp-size"] == vllm["--tensor-parallel-size"]
    assert sglang["--max-running-requests"] == vllm["--max-num-seqs"]
    assert sglang["--chunked-prefill-size"] == "1024" and "--disable-radix-cache" in sglang
    assert got["replicas"] == int(chunked["replicas"])
    bench = _flags(got["bench_serve"])
    assert bench["--dataset-name"] == "random"
    # the distributions' means, draws rounded up: the log-normals' 1,000 and 200 plus about
    # half a token (not the plan's 200 draws, which miss them by a few tokens)
    assert int(bench["--random-input-len"]) in (1000, 1001)
    assert int(bench["--random-output-len"]) in (200, 201)
    # one replica's share of the peak
    assert float(bench["--request-rate"]) == pytest.approx(6.0 / got["replicas"], rel=1e-3)
    assert bench["--num-prompts"] == "200"
    assert any("mean lengths" in note for note in got["notes"])


def test_an_fp8_cache_and_bursty_arrivals_are_passed_on():
    model = rk.catalog.model("Llama-3.1-8B").replace(kv_bytes_per_element="fp8")
    traffic = rk.Traffic(4.0, 500, 100, arrival="gamma", burstiness=0.5)
    # prompts prefilled whole (no chunk budget): the note says the engines chunk anyway
    plan = rk.plan(traffic, SLO, models=model, gpus="H100-SXM-80GB", replicates=2, requests=100,
                   max_num_batched_tokens=None)
    got = launch_commands(rk.cheapest_plan(plan, by=None), traffic, model=model)
    assert "--max-num-batched-tokens" not in _flags(got["vllm_serve"])
    assert _flags(got["vllm_serve"])["--kv-cache-dtype"] == "fp8"
    assert _flags(got["sglang_serve"])["--kv-cache-dtype"] == "fp8_e4m3"
    assert _flags(got["bench_serve"])["--burstiness"] == "0.5"
    assert any("whole in one step" in note for note in got["notes"])
    assert not any("mean lengths" in note for note in got["notes"])     # constant lengths


def test_nothing_to_deploy_and_bad_input_are_refused(chunked):
    plan = rk.plan(TRAFFIC, rk.SLO(ttft=1e-6), models="Llama-3.1-8B", gpus="H100-SXM-80GB",
                   replicates=2, requests=50)
    with pytest.raises(ValueError, match="nothing to deploy"):
        launch_commands(rk.cheapest_plan(plan, by=None), TRAFFIC)
    with pytest.raises(TypeError, match="cheapest"):
        launch_commands({"gpu": "h100"}, TRAFFIC)
    with pytest.raises(TypeError, match="traffic"):
        launch_commands(chunked, 6.0)
    with pytest.raises(TypeError, match="model"):
        launch_commands(chunked, TRAFFIC, model=3)


def test_the_plan_command_prints_and_holds_them(capsys):
    argv = ["plan", "llama-3.1-8b", "--gpus", "h100", "--rate", "5", "--prompt-mean", "500",
            "--output-mean", "100", "--replicates", "2", "--requests", "100",
            "--max-num-batched-tokens", "2048"]
    assert cli.main(argv) == 0
    text = capsys.readouterr().out
    assert "vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 1" in text
    assert "vllm bench serve --model meta-llama/Llama-3.1-8B" in text
    assert cli.main(argv + ["--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["deployment"]["vllm_serve"].startswith("vllm serve ")
    assert "--max-num-batched-tokens 2048" in payload["deployment"]["vllm_serve"]


def test_the_default_plan_deploys_the_engine_scheduler_it_ran():
    """By default a plan runs each GPU's vLLM scheduler defaults (1,024 sequences on an H100,
    vllm/engine/arg_utils.py get_batch_defaults) and searches the chunk budget: the command
    carries both, and no "whole in one step" note."""
    traffic = rk.Traffic(4.0, 500, 100)
    plan = rk.plan(traffic, SLO, models="Llama-3.1-8B", gpus="H100-SXM-80GB", replicates=2,
                   requests=100)
    best = rk.cheapest_plan(plan, by=None)
    got = launch_commands(best, traffic)
    flags = _flags(got["vllm_serve"])
    assert flags["--max-num-seqs"] == "1024"
    assert int(flags["--max-num-batched-tokens"]) == int(best["max_num_batched_tokens"])
    assert int(flags["--max-num-batched-tokens"]) in (2048, 8192, 16384)
    assert _flags(got["sglang_serve"])["--chunked-prefill-size"] == \
        flags["--max-num-batched-tokens"]
    assert not any("whole in one step" in note for note in got["notes"])


def test_a_hybrid_plan_with_prefixes_asks_vllm_for_its_prefix_cache():
    """vLLM caches a hybrid model's prefixes only when asked (--enable-prefix-caching), and
    then in its "align" mode, holding two states a request: what the plan's admission held
    (replica_state_tokens with prefix_caching). A plain model's command keeps the default."""
    traffic = rk.Traffic(2.0, 1000, 100, prefix=SharedPrefix(512, groups=2, share=0.9))
    plan = rk.plan(traffic, SLO, models="Qwen3-Next-80B-A3B", gpus="B200", replicates=2,
                   requests=100)
    assert plan.attrs["prefix_caching"] == 1
    vllm = _flags(launch_commands(rk.cheapest_plan(plan, by=None), traffic)["vllm_serve"])
    assert vllm["--enable-prefix-caching"] is True and vllm["--mamba-cache-mode"] == "align"
    assert "--no-enable-prefix-caching" not in vllm
    plain = rk.plan(traffic, SLO, models="Llama-3.1-8B", gpus="H100-SXM-80GB", replicates=2,
                    requests=100)
    flags = _flags(launch_commands(rk.cheapest_plan(plain, by=None), traffic)["vllm_serve"])
    assert "--enable-prefix-caching" not in flags and "--mamba-cache-mode" not in flags


def test_the_tensorrt_llm_and_sglang_commands_size_the_same_cache(chunked):
    """trtllm-serve takes the same slots and budget, and its KV share of the memory left after
    the weights and its own profiling peak P (10.70 GiB, engine_memory.toml) is the plan's
    cache: (u·M − W/tp − F) / (M − W/tp − P); SGLang's
    static share holds weights and KV of the memory free before its weights load, M − c:
    (u·M − F) / (M − c). By hand for Llama-3.1-8B on an H100 (the driver's 79.19 GiB;
    8,030,261,248 parameters of 2 B) at u = 0.85, F vLLM's sampler (15.452 B × max_num_seqs ×
    128,256) and non-torch memory (0.25 GiB at TP 1, 2.09 above), c SGLang's memory in use
    before loading (0.60 GiB at TP 1, 2.38 above: engine_memory.toml)."""
    got = launch_commands(chunked, TRAFFIC)
    trt = _flags(got["trtllm_serve"])
    assert got["trtllm_serve"].startswith("trtllm-serve meta-llama/Llama-3.1-8B ")
    tp, seqs = int(chunked["tp"]), int(chunked["max_num_seqs"])
    assert trt["--tp_size"] == str(tp)
    assert trt["--max_batch_size"] == str(seqs)
    assert trt["--max_num_tokens"] == "1024"
    gib = 2**30
    memory, weights = 79.19 * gib, 2 * 8_030_261_248 / tp
    held = 15.452 * seqs * 128_256 + (0.25 if tp == 1 else 2.09) * gib
    assert float(trt["--kv_cache_free_gpu_memory_fraction"]) == pytest.approx(
        (0.85 * memory - weights - held) / (memory - weights - 10.70 * gib), abs=0.006)
    sglang = _flags(got["sglang_serve"])
    before = memory - (0.60 if tp == 1 else 2.38) * gib
    assert float(sglang["--mem-fraction-static"]) == pytest.approx(
        (0.85 * memory - held) / before, abs=6e-4)
    # the 8B model's cache holds more than its 131,072-token context: no cap
    assert "--max-model-len" not in _flags(got["vllm_serve"])


def test_a_cache_smaller_than_the_context_caps_each_request():
    """Llama-3.1-70B on 2 x H100 holds 10,368 tokens (docs/planning.md), under its 131,072:
    vLLM would refuse to start at the model's context, so each command caps a request there."""
    traffic = rk.Traffic(0.1, 1000, 100)
    plan = rk.plan(traffic, rk.SLO(ttft=5.0), models="Llama-3.1-70B", gpus="H100-SXM-80GB",
                   tp=2, replicates=2, requests=50)
    best = rk.cheapest_plan(plan, by=None)
    tokens = int(best["kv_budget_tokens"])
    assert tokens == 10_368
    from pathlib import Path
    page = (Path(__file__).parents[1] / "docs" / "planning.md").read_text()
    assert "`--max-model-len 10368`" in page
    got = launch_commands(best, traffic)
    assert _flags(got["vllm_serve"])["--max-model-len"] == str(tokens)
    assert _flags(got["sglang_serve"])["--context-length"] == str(tokens)
    assert _flags(got["trtllm_serve"])["--max_seq_len"] == str(tokens)
    assert any("refuse to start" in note for note in got["notes"])


def test_the_vllm_command_fixes_the_planned_cache():
    """--kv-cache-memory-bytes is the plan's cache a GPU (vLLM 0.10.2 and later), so neither
    a release's default share (0.92 from 0.20.0) nor its count of CUDA graphs moves it: for
    Llama-3.1-70B on two H100s 10,368 tokens of 163,840 B a GPU (80 layers x 8 KV heads x 128
    x 2 x 2 B / 2) = 1.58 GiB (docs/validation.md), which a release counting its graphs
    (1.63 GiB by the rule) would leave empty at the plan's share. Graphs the plan did not
    count are captured in the (1 - u) M its share leaves: at u = 0.99, 0.79 GiB of the
    H100's 79.19, less than Llama-3.1-8B's 0.449 + 32 x 0.014793 = 0.92 GiB, so the notes
    say so; a plan for a release that counts them gets no such note."""
    traffic = rk.Traffic(0.1, 1000, 100)
    for model, tp, per_token in (("Llama-3.1-8B", 1, 131_072), ("Llama-3.1-70B", 2, 163_840)):
        plan = rk.plan(traffic, rk.SLO(ttft=5.0), models=model, gpus="H100-SXM-80GB", tp=tp,
                       replicates=2, requests=50)
        best = rk.cheapest_plan(plan, by=None)
        got = launch_commands(best, traffic)
        cache = int(_flags(got["vllm_serve"])["--kv-cache-memory-bytes"])
        tokens = int(best["kv_budget_tokens"])
        assert tokens <= cache / per_token < tokens + 16          # whole 16-token blocks
        assert not any("vLLM's CUDA graphs" in n for n in got["notes"]), got["notes"]
        if model == "Llama-3.1-70B":
            assert cache / 2**30 == pytest.approx(1.58, abs=0.01) and tokens == 10_368
    kw = dict(models="Llama-3.1-8B", gpus="H100-SXM-80GB", replicates=2, requests=50,
              gpu_memory_utilization=0.99)
    tight = launch_commands(rk.cheapest_plan(rk.plan(traffic, rk.SLO(ttft=5.0), **kw),
                                             by=None), traffic)
    (note,) = [n for n in tight["notes"] if "vLLM's CUDA graphs" in n]
    assert "about 0.92 GiB a GPU" in note and "outgrow the 0.79 GiB a GPU" in note
    assert "engine='vllm@0.20.0' or later" in note
    counted = launch_commands(rk.cheapest_plan(rk.plan(traffic, rk.SLO(ttft=5.0),
                                                       engine="vllm@0.29.0", **kw),
                                               by=None), traffic)
    assert not any("vLLM's CUDA graphs" in n for n in counted["notes"])


def test_the_plan_command_leads_with_the_engine_it_planned_for(capsys):
    argv = ["plan", "llama-3.1-8b", "--gpus", "h100", "--rate", "2", "--prompt-mean", "500",
            "--output-mean", "100", "--ttft", "1", "--itl", "0.05", "--replicates", "2",
            "--requests", "100"]
    for engine, head in ((None, "vllm serve"), ("trtllm", "trtllm-serve"),
                         ("sglang", "python -m sglang.launch_server")):
        code = cli.main(argv + ([] if engine is None else ["--engine", engine]))
        out = capsys.readouterr().out
        assert code == 0
        lines = out.split("replica(s), each:\n", 1)[1].splitlines()
        assert lines[0].strip().startswith(head), (engine, lines[0])
        assert sum(line.strip().startswith("(") for line in lines[1:3]) == 2


@pytest.fixture(scope="module")
def fp8_70b():
    """Llama-3.1-70B planned in FP8 on two H100s: 8-bit weights of a 16-bit checkpoint."""
    model = rk.catalog.model("Llama-3.1-70B").replace(bytes_per_param="fp8")
    traffic = rk.Traffic(0.5, 1000, 100)
    plan = rk.plan(traffic, rk.SLO(ttft=5.0), models=model, gpus="H100-SXM-80GB", tp=2,
                   replicates=2, requests=50)
    return model, traffic, rk.cheapest_plan(plan, by=None)


def test_a_16_bit_checkpoint_planned_in_fp8_is_quantised_as_it_loads(fp8_70b):
    """meta-llama/Llama-3.1-70B stores bf16 weights (70,553,706,496 parameters × 2 B, 65.7 GiB
    a GPU at TP 2); the plan holds them in FP8 (32.9 GiB). vLLM and SGLang quantise a 16-bit
    checkpoint to FP8 on load with --quantization fp8 (their engine arguments);
    trtllm-serve has no such flag, so the note says so."""
    model, traffic, best = fp8_70b
    got = launch_commands(best, traffic, model=model)
    assert _flags(got["vllm_serve"])["--quantization"] == "fp8"
    assert _flags(got["sglang_serve"])["--quantization"] == "fp8"
    assert "--quantization" not in got["trtllm_serve"]
    note = next(n for n in got["notes"] if "--quantization fp8" in n)
    assert "8-bit (32.9 GiB a GPU)" in note and "16-bit (65.7 GiB a GPU)" in note
    assert "TensorRT-LLM" in note
    # a checkpoint of the user's own is loaded as planned: no flag, no note
    own = launch_commands(best, traffic, model=model, model_path="/models/llama-70b-fp8")
    assert "--quantization" not in own["vllm_serve"]
    assert not any("stores them" in n for n in own["notes"])


def test_a_format_no_flag_reaches_asks_for_a_checkpoint_in_it():
    """Llama-3.1-8B planned in NVFP4 (0.5 B a weight, FP4 matmuls) from its bf16 checkpoint:
    no engine converts that on load, so no flag, and a note saying the engines would hold
    less cache than planned (16,060,522,496 B against 4,015,130,624 B of weights)."""
    model = rk.catalog.model("Llama-3.1-8B").replace(bytes_per_param="nvfp4")
    traffic = rk.Traffic(1.0, 500, 100)
    plan = rk.plan(traffic, rk.SLO(ttft=5.0), models=model, gpus="B200", replicates=2,
                   requests=50)
    got = launch_commands(rk.cheapest_plan(plan, by=None), traffic, model=model)
    assert "--quantization" not in got["vllm_serve"] + got["sglang_serve"]
    note = next(n for n in got["notes"] if "stores them" in n)
    assert "4-bit, FP4 matmuls (3.7 GiB a GPU)" in note and "16-bit (15.0 GiB a GPU)" in note
    assert "hold less cache than planned" in note


def test_a_checkpoint_in_the_planned_format_changes_nothing():
    """The formats compared are the body's and the experts' bits: DeepSeek-V3.2's block-FP8
    checkpoint (scales included, embeddings in bf16) planned as plain FP8, or gpt-oss's MXFP4
    experts planned as shipped, need no flag and no note."""
    from rooflinekit.planning.deployment import _checkpoint_change, _repository
    for name, change in (("DeepSeek-V3.2", {"bytes_per_param": "fp8"}), ("gpt-oss-120b", {})):
        model = rk.catalog.model(name).replace(**change)
        assert _checkpoint_change(model, _repository(model), 8, 1) == ([], [])
    # planned in bf16, DeepSeek-V3.2 would weigh twice its checkpoint: a note, no flag
    wide = rk.catalog.model("DeepSeek-V3.2").replace(bytes_per_param="bf16")
    flags, notes = _checkpoint_change(wide, _repository(wide), 8, 1)
    assert flags == [] and "hold more cache than planned" in notes[0]


def test_a_plan_in_a_format_of_its_own_needs_its_model(fp8_70b):
    """The plan records the weights it held (weight_bytes: 70,553,706,496 B in FP8); the
    catalogue's Llama-3.1-70B weighs twice that, so commands for it would be another
    deployment: refused, naming model=."""
    model, traffic, best = fp8_70b
    assert float(best["weight_bytes"]) == pytest.approx(70_553_706_496, rel=1e-9)
    assert best["weight_bytes"].attrs["units"] == "bytes"
    with pytest.raises(ValueError, match="model="):
        launch_commands(best, traffic)
    with pytest.raises(ValueError, match="65.71 GiB in the format it was planned in"):
        launch_commands(best, traffic, model="Llama-3.1-70B")


@pytest.mark.parametrize("scale", [None, (500, 100)])
def test_a_sharegpt_plan_benchmarks_with_the_sample_it_drew(scale):
    """Lengths drawn from the recorded ShareGPT sample as it is: the benchmark sends that
    sample (its ShareGPT dataset, seed 0, the seed the sample was recorded under), said in a
    note; scaled to other means it cannot, and replays the means (the distribution's: 500 and
    100 within a token, where 200 heavy-tailed draws miss them by several per cent)."""
    from rooflinekit.planning.deployment import SHAREGPT_FILE
    from rooflinekit.workloads import sharegpt_lengths
    traffic = rk.Traffic(4.0, *sharegpt_lengths(*(scale or ())))
    plan = rk.plan(traffic, SLO, models="Llama-3.1-8B", gpus="H100-SXM-80GB", replicates=2,
                   requests=200, seed=3)
    best = rk.cheapest_plan(plan, by=None)
    got = launch_commands(best, traffic)
    bench = _flags(got["bench_serve"])
    assert bench["--num-prompts"] == "200"
    if scale is None:
        assert (bench["--dataset-name"], bench["--dataset-path"], bench["--seed"]) == \
            ("sharegpt", SHAREGPT_FILE, "0")
        assert "--random-input-len" not in bench
        assert any("ShareGPT's first 200 prompts" in note for note in got["notes"])
    else:
        assert bench["--dataset-name"] == "random" and bench["--seed"] == "3"
        assert abs(int(bench["--random-input-len"]) - 500) <= 1
        assert abs(int(bench["--random-output-len"]) - 100) <= 1
        assert any("replays the mean lengths" in note for note in got["notes"])
    # the first 300 requests as they are are the sample too
    first = rk.Traffic(4.0, *sharegpt_lengths(requests=300))
    assert _flags(launch_commands(best, first)["bench_serve"])["--dataset-name"] == "sharegpt"


@pytest.fixture(scope="module")
def expert_parallel():
    # Mixtral-8x7B over four H100s, its experts whole on 1, 2 or 4 of them
    traffic = rk.Traffic(2.0, 500, 100)
    return traffic, rk.plan(traffic, rk.SLO(ttft=2.0, itl=0.1), models="Mixtral-8x7B",
                            gpus="H100-SXM-80GB", tp=4, ep=[1, 2, 4], max_num_seqs=64,
                            replicates=2, requests=100)


@pytest.mark.parametrize("ep", [1, 2, 4])
def test_an_expert_parallel_plan_spreads_the_experts_in_each_engine(expert_parallel, ep):
    traffic, plan = expert_parallel
    got = launch_commands(rk.cheapest_plan(plan.sel(ep=[ep]), by=None), traffic)
    vllm, sglang, trtllm = (_flags(got[k]) for k in ("vllm_serve", "sglang_serve",
                                                     "trtllm_serve"))
    if ep == 1:
        assert "--enable-expert-parallel" not in vllm and "--ep-size" not in sglang
        assert "--ep_size" not in trtllm
        assert not any("expert" in note for note in got["notes"])
        return
    assert sglang["--ep-size"] == str(ep) and trtllm["--ep_size"] == str(ep)
    # vLLM's expert parallelism is the whole tensor-parallel group's, or none
    assert ("--enable-expert-parallel" in vllm) == (ep == 4)
    assert any("ep=2" in note and "--enable-expert-parallel" in note
               for note in got["notes"]) == (ep == 2)


def test_the_plan_command_plans_expert_parallel_layouts(capsys):
    argv = ["plan", "mixtral-8x7b", "--gpus", "h100", "--tp", "4", "--ep", "1,4", "--rate", "2",
            "--prompt-mean", "500", "--output-mean", "100", "--ttft", "2", "--replicates", "2",
            "--requests", "60", "--json"]
    assert cli.main(argv) == 0
    payload = json.loads(capsys.readouterr().out)
    assert sorted(row["ep"] for row in payload["configurations"]) == [1, 4]
    assert cli.main(argv[:-1]) == 0
    text = capsys.readouterr().out
    assert "TP, EP" in text and "4, 4" in text and "4, 1" in text
    # a degree that does not divide the experts serves nothing, and says why
    bad = ["3" if word == "1,4" else word for word in argv[:-1]]
    assert cli.main(bad) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if "4, 3" in line)
    assert "invalid_layout" in row
