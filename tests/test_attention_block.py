"""The KV block a plan asks vLLM for: one its first-choice MLA kernel takes.

Reference (read from vLLM's source, releases 0.18.0, 0.20.0, 0.24.0, 0.29.0 and 0.34.0, not
from the package): ``vllm/platforms/cuda.py`` ``_get_backend_priorities`` orders the MLA
backends by compute capability; each backend's ``get_supported_kernel_block_sizes`` says which
blocks it takes: FlashInfer MLA ``[32, 64]`` (SM 10.x only), FlashMLA ``[64]`` (Hopper; takes
an fp8 cache, where FlashAttention MLA takes a 16-bit one only), FlashAttention MLA and Triton
MLA ``MultipleOf(16)``; DeepSeek-V3.2's indexer cache ``[64]`` decides a sparse-MLA model's
block. A ``--block-size`` the first choice does not take makes vLLM pick a slower backend (the
"precluded higher-priority backend(s)" warning) or, for sparse MLA, no backend at all.
Compute capabilities: NVIDIA's CUDA GPU table (https://developer.nvidia.com/cuda-gpus).
"""

import dataclasses
import math

import numpy as np
import pytest

import rooflinekit as rk
from rooflinekit import catalog
from rooflinekit.memory import engine_kv_cache, vllm_attention_block, vllm_block_size
from rooflinekit.planning import launch_commands
from rooflinekit.profiles import missing_attention_kernel

#: NVIDIA's compute capabilities of the catalogue's GPUs (the table cited above).
CAPABILITY = {"A100-SXM-80GB": 8.0, "A10G": 8.6, "L40S": 8.9, "RTX-4090": 8.9,
              "H100-SXM-80GB": 9.0, "H200-SXM-141GB": 9.0, "H20": 9.0, "B200": 10.0,
              "GB200": 10.0, "B300": 10.3, "GB300": 10.3, "RTX-PRO-6000-Server": 12.0}

#: (model, GPU) -> the block asked for 16, by the backend table in the module docstring.
EXPECTED = {
    ("DeepSeek-R1", "A100-SXM-80GB"): 16,        # Triton MLA
    ("DeepSeek-R1", "H100-SXM-80GB"): 16,        # FlashAttention MLA, 16-bit cache
    ("DeepSeek-R1", "H200-SXM-141GB"): 16,
    ("DeepSeek-R1", "B200"): 32,                 # FlashInfer MLA
    ("DeepSeek-R1", "GB300"): 32,
    ("DeepSeek-R1", "RTX-PRO-6000-Server"): 16,  # Triton MLA
    ("Kimi-K2-Instruct", "B300"): 32,
    ("DeepSeek-V3.2", "H200-SXM-141GB"): 64,     # the indexer's block
    ("DeepSeek-V3.2", "B200"): 64,
    ("Llama-3.1-70B", "B200"): 16,               # not MLA: FlashInfer takes 16
    ("Llama-3.1-70B", "H100-SXM-80GB"): 16,
    ("DeepSeek-R1", "MI300X"): 16,               # no compute capability: as asked
}


@pytest.mark.parametrize("name, capability", sorted(CAPABILITY.items()))
def test_the_catalogue_states_nvidias_compute_capabilities(name, capability):
    assert catalog.gpu(name).compute_capability == capability


def test_other_vendors_have_none_and_the_dataset_says_nan():
    for name in ("MI300X", "Gaudi-3", "guide-lab-80GB"):
        assert catalog.gpu(name).compute_capability is None
    ds = catalog.gpus(as_dataset=True)
    assert ds["compute_capability"].attrs["units"] == "1"
    assert float(ds["compute_capability"].sel(gpu="B300")) == pytest.approx(10.3)
    assert math.isnan(float(ds["compute_capability"].sel(gpu="MI300X")))


@pytest.mark.parametrize("bad", [0, 0.5, 100, -9.0, math.nan, math.inf])
def test_a_bad_compute_capability_is_refused_naming_it(bad):
    with pytest.raises(ValueError, match="compute_capability"):
        rk.GPU(name="x", memory_bytes=80e9, hbm_bandwidth=3e12, peak_flops=1e15,
               compute_capability=bad)
    with pytest.raises(TypeError, match="compute_capability"):
        rk.GPU(name="x", memory_bytes=80e9, hbm_bandwidth=3e12, peak_flops=1e15,
               compute_capability="9.0")


@pytest.mark.parametrize("key, block", sorted(EXPECTED.items()))
def test_the_block_is_one_the_first_choice_kernel_takes(key, block):
    model, gpu = catalog.resolve_model(key[0]), catalog.gpu(key[1])
    assert vllm_attention_block(model, gpu) == block
    # vLLM holds a model that is not hybrid in that block too
    assert vllm_block_size(model, gpu, 8) == block


def test_an_fp8_cache_on_hopper_takes_flashmlas_64():
    r1 = dataclasses.replace(catalog.resolve_model("DeepSeek-R1"), kv_bytes_per_element=1.0)
    assert vllm_attention_block(r1, catalog.gpu("H100-SXM-80GB")) == 64
    assert vllm_attention_block(r1, catalog.gpu("B200")) == 32      # FlashInfer MLA takes fp8
    assert vllm_attention_block(r1, catalog.gpu("A100-SXM-80GB")) == 16


@pytest.mark.parametrize("asked, block", [(1, 32), (16, 32), (32, 32), (48, 64), (64, 64),
                                          (96, 96), (128, 128)])
def test_a_block_asked_for_is_raised_to_the_kernels_next_multiple(asked, block):
    """FlashInfer MLA takes a multiple of 32 (or of 64): 32·⌈asked / 32⌉."""
    r1, b200 = catalog.resolve_model("DeepSeek-R1"), catalog.gpu("B200")
    assert vllm_attention_block(r1, b200, asked) == block
    assert vllm_attention_block(r1, b200, vllm_attention_block(r1, b200, asked)) == block


def test_the_budget_is_held_in_the_kernels_blocks():
    """DeepSeek-R1 on eight B200s: the cache's tokens are whole 32-token blocks."""
    r1, b200 = catalog.resolve_model("DeepSeek-R1"), catalog.gpu("B200")
    cache = engine_kv_cache(r1, b200, 8, gpu_memory_utilization=0.9)
    assert cache["block_size"] == 32
    assert cache["kv_cache_tokens"] == 32 * cache["num_blocks"] > 0


@pytest.fixture(scope="module")
def r1_on_b200():
    traffic = rk.Traffic(2.0, rk.workloads.Constant(1000), rk.workloads.Constant(200))
    plan = rk.plan(traffic, rk.SLO(ttft=5.0, itl=0.2), models="DeepSeek-R1", gpus="B200", tp=8,
                   max_num_seqs=64, max_num_batched_tokens=2048, replicates=2, requests=60)
    return traffic, rk.cheapest_plan(plan, by=None)


def test_the_launch_command_asks_for_the_kernels_block_and_says_why(r1_on_b200):
    traffic, chosen = r1_on_b200
    got = launch_commands(chosen, traffic)
    words = got["vllm_serve"].split()
    assert words[words.index("--block-size") + 1] == "32"
    assert any("--block-size is 32, not 16" in note and "B200" in note for note in got["notes"])
    # the plan's cache is whole blocks of that size
    assert int(chosen["kv_budget_tokens"]) % 32 == 0


def test_an_ordinary_models_command_keeps_16_without_a_note():
    traffic = rk.Traffic(2.0, rk.workloads.Constant(500), rk.workloads.Constant(100))
    plan = rk.plan(traffic, rk.SLO(ttft=2.0, itl=0.1), models="Llama-3.1-8B", gpus="B200",
                   tp=1, max_num_seqs=32, max_num_batched_tokens=1024, replicates=2,
                   requests=60)
    got = launch_commands(rk.cheapest_plan(plan, by=None), traffic)
    words = got["vllm_serve"].split()
    assert words[words.index("--block-size") + 1] == "16"
    assert not any("--block-size is" in note for note in got["notes"])


def test_bad_arguments_are_refused_naming_them():
    r1, b200 = catalog.resolve_model("DeepSeek-R1"), catalog.gpu("B200")
    with pytest.raises(ValueError, match="block_size"):
        vllm_attention_block(r1, b200, 0)
    with pytest.raises(TypeError, match="model"):
        vllm_attention_block("DeepSeek-R1", b200)
    with pytest.raises(TypeError, match="gpu"):
        vllm_attention_block(r1, "B200")
    with pytest.raises(ValueError, match="block_size"):
        vllm_attention_block(r1, b200, np.float64(16.5))


# -- sparse MLA where vLLM has no kernel ----------------------------------------------------------
# Reference: vLLM's sparse-MLA backends' ``supports_compute_capability`` (the module docstring's
# releases): FlashMLA sparse ``major in [9, 10]``, FlashInfer sparse ``major == 10``,
# FlashAttention sparse (0.29+) ``major == 9``, FlashInfer SM120 sparse (0.24+) ``major == 12``;
# none takes 8.x, and the dense MLA backends refuse a sparse model.

#: (engine, model, GPU) -> whether vLLM stops for want of a kernel.
NO_KERNEL = {
    ("vllm", "DeepSeek-V3.2", "A100-SXM-80GB"): True,
    ("vllm", "GLM-5", "L40S"): True,
    ("vllm", "DeepSeek-V3.2", "RTX-4090"): True,
    ("vllm@0.34.0", "DeepSeek-V3.2", "A100-SXM-80GB"): True,     # in no release
    ("vllm", "DeepSeek-V3.2", "H100-SXM-80GB"): False,
    ("vllm", "DeepSeek-V3.2", "B200"): False,
    ("vllm", "GLM-5", "GB300"): False,
    ("vllm", "DeepSeek-V3.2", "RTX-PRO-6000-Server"): False,     # a current release: 0.24+
    ("vllm@0.24.0", "DeepSeek-V3.2", "RTX-PRO-6000-Server"): False,
    ("vllm@0.20.0", "DeepSeek-V3.2", "RTX-PRO-6000-Server"): True,
    ("vllm", "DeepSeek-R1", "A100-SXM-80GB"): False,             # dense MLA: Triton MLA
    ("vllm", "DeepSeek-V3.2", "MI300X"): False,                  # no compute capability
    ("sglang", "DeepSeek-V3.2", "A100-SXM-80GB"): False,         # only vLLM's rule is known
    (None, "DeepSeek-V3.2", "A100-SXM-80GB"): False,             # the ideal bound
}


@pytest.mark.parametrize("key, stops", sorted(NO_KERNEL.items(), key=str))
def test_vllm_has_no_sparse_mla_kernel_below_hopper(key, stops):
    engine, model, gpu = key
    why = missing_attention_kernel(engine, catalog.resolve_model(model), catalog.gpu(gpu))
    assert (why is not None) == stops
    if stops:
        assert model in why and gpu in why and "No valid attention backend found" in why


def _sparse_small():
    """A sparse-MLA model small enough for one A100 (DeepSeek-V3.2's shapes, 8 layers)."""
    v32 = catalog.resolve_model("DeepSeek-V3.2")
    return dataclasses.replace(v32, name="sparse-MLA-small", n_layers=8, n_params=20e9,
                               n_active_params=4e9)


def test_a_vllm_plan_does_not_serve_where_vllm_would_not_start():
    traffic = rk.Traffic(1.0, rk.workloads.Constant(500), rk.workloads.Constant(100))
    common = dict(models=_sparse_small(), gpus="A100-SXM-80GB", tp=1, max_num_seqs=32,
                  max_num_batched_tokens=1024, replicates=2, requests=60)
    plan = rk.plan(traffic, rk.SLO(ttft=5.0, itl=0.2), **common)
    assert plan["binding"].values.ravel().tolist() == ["no_attention_kernel"]
    assert float(plan["max_rate"].max()) == 0.0
    assert not bool(rk.cheapest_plan(plan, by=None)["feasible"])
    # SGLang's plan serves it; its vLLM command says that one would not start
    sglang = rk.plan(traffic, rk.SLO(ttft=5.0, itl=0.2), engine="sglang", **common)
    assert float(sglang["max_rate"].max()) > 0.0
    got = launch_commands(rk.cheapest_plan(sglang, by=None), traffic, model=_sparse_small())
    notes = [n for n in got["notes"] if "vLLM command will not start" in n]
    assert len(notes) == 1 and "A100-SXM-80GB" in notes[0]
    assert not any("--block-size is" in n for n in got["notes"])


def test_a_load_curve_is_refused_with_the_reason():
    traffic = rk.Traffic(1.0, rk.workloads.Constant(500), rk.workloads.Constant(100))
    with pytest.raises(ValueError, match="no sparse-MLA attention kernel"):
        rk.planning.load_curve(traffic, rk.SLO(ttft=5.0), model=_sparse_small(),
                               gpu="A100-SXM-80GB", rates=[0.5], replicates=1, requests=20)


def test_the_capacity_command_says_it_cannot_run(capsys):
    from rooflinekit.cli import main
    assert main(["capacity", "DeepSeek-V3.2", "A100-SXM-80GB", "--tensor-parallel-size",
                 "8"]) == 1
    assert "cannot run: vLLM has no sparse-MLA attention kernel" in capsys.readouterr().err
    # the SGLang profile's figures are given, and so is the bound's
    assert main(["capacity", "DeepSeek-V3.2", "A100-SXM-80GB", "--tensor-parallel-size", "8",
                 "--engine", "sglang", "--show-anyway"]) == 0


def test_missing_attention_kernel_refuses_bad_arguments():
    v32, a100 = catalog.resolve_model("DeepSeek-V3.2"), catalog.gpu("A100-SXM-80GB")
    with pytest.raises(TypeError, match="engine"):
        missing_attention_kernel(1.5, v32, a100)
    with pytest.raises(TypeError, match="model"):
        missing_attention_kernel("vllm", "DeepSeek-V3.2", a100)
    with pytest.raises(TypeError, match="gpu"):
        missing_attention_kernel("vllm", v32, "A100-SXM-80GB")
