"""The built-in catalogues: lookup, sources, KV bytes against published configs, Dataset views."""

import math
import pathlib
import re
import tomllib
from importlib import resources

import numpy as np
import pytest
import xarray as xr

from rooflinekit import catalog, units
from rooflinekit.models import model_from_hf_config

CONFIGS = pathlib.Path(__file__).parent / "data" / "hf_configs"


def _rows(filename, table):
    with resources.files("rooflinekit").joinpath("data", filename).open("rb") as fh:
        return tomllib.load(fh)[table]


# -- lookup -------------------------------------------------------------------------------------
def test_lookup_is_case_insensitive_and_accepts_aliases():
    assert catalog.model("LLAMA-3.1-70b") is catalog.model("Llama-3.1-70B")
    assert catalog.model("meta-llama/Llama-3.1-70B").name == "Llama-3.1-70B"
    assert catalog.model("llama 3.1 70b").name == "Llama-3.1-70B"       # spaces, no hyphens
    assert catalog.model("mixtral").name == "Mixtral-8x7B"
    assert catalog.model("DSV3").name == "DeepSeek-V3"
    assert catalog.gpu("h100").name == "H100-SXM-80GB"
    assert catalog.gpu("H100_PCIE").name == "H100-PCIe-80GB"
    assert catalog.gpu("a100").name == "A100-SXM-80GB"
    assert catalog.gpu("MI300X") is catalog.gpu("amd-mi300x")


def test_unknown_name_lists_closest():
    with pytest.raises(ValueError, match=r"unknown GPU 'H10'.*H100"):
        catalog.gpu("H10")
    with pytest.raises(ValueError, match=r"unknown model 'llama-3.1-7b'.*Llama-3\.1-"):
        catalog.model("llama-3.1-7b")
    with pytest.raises(ValueError, match="unknown model"):
        catalog.model("zzzzzzzz")
    with pytest.raises(TypeError, match="model name must be a string"):
        catalog.model(70)


# -- rows -----------------------------------------------------------------------------------------
def test_guide_rows_unchanged():
    m, g = catalog.model("guide-70b"), catalog.gpu("guide-lab-80GB")
    assert (m.n_layers, m.n_heads, m.n_kv_heads, m.head_dim, m.n_params) == (80, 64, 8, 128, 70e9)
    assert m.kv_bytes_per_token == 327_680                     # guide §2.2
    assert g.memory_bytes == 80 * units.GiB and g.hbm_bandwidth == 3.35e12
    assert g.peak_flops == 989e12


def test_catalogue_sizes_and_required_entries():
    gpus, models = catalog.gpu_names(), catalog.model_names()
    assert len(gpus) - 1 >= 12 and len(models) - 1 >= 15        # besides the guide's rows
    for name in ["A100-SXM-40GB", "A100-SXM-80GB", "H100-SXM-80GB", "H100-PCIe-80GB",
                 "H200-SXM-141GB", "B200", "L40S", "L4", "A10G", "MI300X",
                 "B300", "GB200", "GB300", "RTX-PRO-6000-Server", "MI355X"]:
        assert name in gpus
    for name in ["Llama-2-7B", "Llama-2-13B", "Llama-2-70B", "Llama-3.1-8B", "Llama-3.1-70B",
                 "Llama-3.1-405B", "Mistral-7B-v0.1", "Mixtral-8x7B", "Mixtral-8x22B",
                 "Qwen2.5-7B", "Qwen2.5-72B", "Gemma-2-9B", "Gemma-2-27B", "Phi-3-mini-4k",
                 "DeepSeek-V3", "guide-70b",
                 "gpt-oss-120b", "gpt-oss-20b", "Qwen3-Next-80B-A3B", "Qwen3-32B", "Llama-3.3-70B",
                 "GLM-4.5", "GLM-4.5-Air", "Mistral-Small-3", "Phi-4", "Qwen3-8B"]:
        assert name in models
    kinds = {m.attention for m in catalog.models().values()}
    assert {"MHA", "MQA", "MLA"} <= kinds and any(k.startswith("GQA") for k in kinds)


@pytest.mark.parametrize("filename, table", [("gpus.toml", "gpu"), ("models.toml", "model")])
def test_every_row_has_a_source(filename, table):
    for row in _rows(filename, table):
        assert isinstance(row.get("source"), str) and row["source"].strip(), row["name"]
    specs = catalog.gpus() if table == "gpu" else catalog.models()
    assert all(s.source.strip() for s in specs.values())


# -- KV bytes per token, by hand from each published config.json ---------------------------------
# 2·L·H_kv·d·b (guide §2.2); MLA: L·(kv_lora_rank + qk_rope_head_dim)·b. b = 2 (16-bit KV).
KV_BY_HAND = {
    "Llama-4-Scout": 2 * 48 * 8 * 128 * 2, "Llama-4-Maverick": 2 * 48 * 8 * 128 * 2,
    "DeepSeek-R1": 61 * (512 + 64) * 2, "DeepSeek-V3.2": 61 * ((512 + 64) * 2 + 128 + 4),
    "Kimi-K2-Instruct": 61 * (512 + 64) * 2, "Nemotron-3-Nano-30B-A3B": 2 * 6 * 2 * 128 * 2,
    "Qwen3-30B-A3B": 2 * 48 * 4 * 128 * 2, "Qwen3-235B-A22B": 2 * 94 * 4 * 128 * 2,
    "guide-70b": 2 * 80 * 8 * 128 * 2,          # guide §2.2: 327,680
    "Llama-2-7B": 2 * 32 * 32 * 128 * 2,        # MHA: 32 KV heads
    "Llama-2-13B": 2 * 40 * 40 * 128 * 2,       # MHA
    "Llama-2-70B": 2 * 80 * 8 * 128 * 2,
    "Llama-3.1-8B": 2 * 32 * 8 * 128 * 2,
    "Llama-3.1-70B": 2 * 80 * 8 * 128 * 2,      # 327,680
    "Llama-3.1-405B": 2 * 126 * 8 * 128 * 2,
    "Mistral-7B-v0.1": 2 * 32 * 8 * 128 * 2,    # per token while inside the 4,096 window
    "Mixtral-8x7B": 2 * 32 * 8 * 128 * 2,
    "Mixtral-8x22B": 2 * 56 * 8 * 128 * 2,
    "Qwen2.5-7B": 2 * 28 * 4 * 128 * 2,
    "Qwen2.5-72B": 2 * 80 * 8 * 128 * 2,
    "Gemma-2-9B": 2 * 42 * 8 * 256 * 2,         # head_dim 256
    "Gemma-2-27B": 2 * 46 * 16 * 128 * 2,
    "Phi-3-mini-4k": 2 * 32 * 32 * 96 * 2,      # MHA, head_dim 3072 / 32 = 96
    "DeepSeek-V3": 61 * (512 + 64) * 2,         # MLA: 70,272
    "StarCoder": 2 * 40 * 1 * 128 * 2,          # MQA
    "Falcon-7B": 2 * 32 * 1 * 64 * 2,           # MQA
    "GPT-NeoX-20B": 2 * 44 * 64 * 96 * 2,       # MHA
    # issue 29. gpt-oss: all 36 / 24 layers cache while inside the 128-token window.
    "gpt-oss-120b": 2 * 36 * 8 * 64 * 2,        # 73,728
    "gpt-oss-20b": 2 * 24 * 8 * 64 * 2,         # 49,152
    "Qwen3-Next-80B-A3B": 2 * 12 * 2 * 256 * 2,  # 48 / full_attention_interval 4 = 12: 24,576
    "Qwen3-32B": 2 * 64 * 8 * 128 * 2,          # 262,144
    "Qwen3-8B": 2 * 36 * 8 * 128 * 2,           # GQA-8 in all 36 layers: 147,456
    "Llama-3.3-70B": 2 * 80 * 8 * 128 * 2,      # 327,680, as Llama-3.1-70B
    "Qwen3.5-27B": 2 * 16 * 4 * 256 * 2,        # 64 / full_attention_interval 4 = 16: 65,536
    "Qwen3.5-35B-A3B": 2 * 10 * 2 * 256 * 2,    # 40 / 4 = 10 attention layers: 20,480
    "Qwen3.5-397B-A17B": 2 * 15 * 2 * 256 * 2,  # 60 / 4 = 15 attention layers: 30,720
    "Nemotron-3-Super-120B-A12B": 2 * 8 * 2 * 128 * 2,  # 8 '*' layers of 88: 8,192
    # Gemma 4: 5 global layers of 2 KV heads of 512, 25 sliding ones of 8 of 256 (in the window)
    "Gemma-4-26B-A4B": 5 * 2 * 2 * 512 * 2 + 25 * 2 * 8 * 256 * 2,     # 225,280
    "GLM-5": 78 * ((512 + 64) * 2 + 128 + 4),   # MLA latent + the indexer's key: 100,152
    "Jamba-1.5-Mini": 2 * 4 * 8 * 128 * 2,      # attention at layers 4, 12, 20, 28: 16,384
    "Falcon-H1-0.5B": 2 * 36 * 2 * 64 * 2,      # attention beside Mamba in all 36: 18,432
    "GLM-4.5-Air": 2 * 46 * 8 * 128 * 2,        # GQA-8 in all 46 layers: 188,416
    "GLM-4.5": 2 * 92 * 8 * 128 * 2,            # GQA-8 in all 92 layers: 376,832
    "Phi-4": 2 * 40 * 10 * 128 * 2,             # GQA-10, head_dim 5120 / 40 = 128: 204,800
    "Mistral-Small-3": 2 * 40 * 8 * 128 * 2,    # GQA-8, head_dim 128 (not 5120 / 32): 163,840
    # Gemma 3: all 62 layers cache while inside the 1,024-token window, 16 KV heads of 128
    "Gemma-3-27B": 2 * 62 * 16 * 128 * 2,       # 507,904
    "Granite-4.0-H-Small": 2 * 4 * 8 * 128 * 2,  # attention at layers 5, 15, 25, 35: 16,384
}


def test_every_catalogue_model_has_a_hand_computation():
    assert set(KV_BY_HAND) == set(catalog.model_names())


@pytest.mark.parametrize("name", sorted(KV_BY_HAND))
def test_kv_bytes_per_token_by_hand(name):
    assert catalog.model(name).kv_bytes_per_token == KV_BY_HAND[name]


def test_named_kv_figures():
    assert catalog.model("DeepSeek-V3").kv_bytes_per_token == 70_272
    assert catalog.model("Llama-3.1-70B").kv_bytes_per_token == 327_680
    # MLA caches ~4.7x less than the GQA-8 70B model per token despite 128 query heads
    assert catalog.model("Llama-3.1-70B").kv_bytes_per_token / 70_272 == pytest.approx(4.663,
                                                                                      abs=1e-3)


def test_sliding_window_rows():
    mistral = catalog.model("Mistral-7B-v0.1")
    assert (mistral.sliding_window, mistral.n_sliding_layers, mistral.n_full_layers) == (4096, 32,
                                                                                         0)
    for name, layers in [("Gemma-2-9B", 42), ("Gemma-2-27B", 46)]:
        m = catalog.model(name)
        assert m.sliding_window == 4096 and m.n_sliding_layers == math.ceil(layers / 2)
    assert catalog.model("Mixtral-8x7B").sliding_window is None


def test_moe_rows():
    for name, total, active, k in [("Mixtral-8x7B", 8, 2, 2), ("Mixtral-8x22B", 8, 2, 2),
                                   ("DeepSeek-V3", 256, 8, 8)]:
        m = catalog.model(name)
        assert (m.n_experts, m.n_experts_per_token) == (total, k)
        assert m.n_active_params < m.n_params and m.is_moe
    for m in catalog.models().values():
        assert m.n_active_params <= m.n_params


# -- catalogue rows agree with the published config.json files -------------------------------------
ROW_CONFIG = {
    "Llama-4-Scout": "llama-4-scout-17b-16e-instruct",
    "Llama-4-Maverick": "llama-4-maverick-17b-128e-instruct",
    "DeepSeek-R1": "deepseek-r1", "DeepSeek-V3.2": "deepseek-v3.2",
    "Kimi-K2-Instruct": "kimi-k2-instruct",
    "Nemotron-3-Nano-30B-A3B": "nemotron-3-nano-30b-a3b-bf16",
    "Qwen3-30B-A3B": "qwen3-30b-a3b", "Qwen3-235B-A22B": "qwen3-235b-a22b",
    "Llama-2-7B": "llama-2-7b-hf", "Llama-2-13B": "llama-2-13b-hf",
    "Llama-2-70B": "llama-2-70b-hf", "Llama-3.1-8B": "llama-3.1-8b",
    "Llama-3.1-70B": "llama-3.1-70b", "Llama-3.1-405B": "llama-3.1-405b",
    "Mistral-7B-v0.1": "mistral-7b-v0.1", "Mixtral-8x7B": "mixtral-8x7b-v0.1",
    "Mixtral-8x22B": "mixtral-8x22b-v0.1", "Qwen2.5-7B": "qwen2.5-7b",
    "Qwen2.5-72B": "qwen2.5-72b", "Gemma-2-9B": "gemma-2-9b-it", "Gemma-2-27B": "gemma-2-27b-it",
    "Phi-3-mini-4k": "phi-3-mini-4k-instruct", "DeepSeek-V3": "deepseek-v3",
    "StarCoder": "starcoder", "Falcon-7B": "falcon-7b", "GPT-NeoX-20B": "gpt-neox-20b",
    "gpt-oss-120b": "gpt-oss-120b", "gpt-oss-20b": "gpt-oss-20b",
    "Qwen3-Next-80B-A3B": "qwen3-next-80b-a3b-instruct", "Qwen3-32B": "qwen3-32b",
    "Llama-3.3-70B": "llama-3.3-70b-instruct",
    "Qwen3.5-27B": "qwen3.5-27b", "Qwen3.5-35B-A3B": "qwen3.5-35b-a3b",
    "Qwen3.5-397B-A17B": "qwen3.5-397b-a17b",
    "Nemotron-3-Super-120B-A12B": "nemotron-3-super-120b-a12b-fp8",
    "Gemma-4-26B-A4B": "gemma-4-26b-a4b", "GLM-5": "glm-5",
    "Jamba-1.5-Mini": "ai21-jamba-1.5-mini", "Falcon-H1-0.5B": "falcon-h1-0.5b",
    "GLM-4.5-Air": "glm-4.5-air", "Gemma-3-27B": "gemma-3-27b-it",
    "GLM-4.5": "glm-4.5", "Phi-4": "phi-4", "Mistral-Small-3": "mistral-small-24b-instruct-2501",
    "Qwen3-8B": "qwen3-8b",
}
FIELDS = ("n_layers", "n_heads", "n_kv_heads", "head_dim", "hidden_size", "intermediate_size",
          "vocab_size", "n_experts", "n_experts_per_token", "kv_lora_rank", "qk_rope_head_dim",
          "sliding_window", "n_sliding_layers", "tie_word_embeddings", "n_params",
          "n_active_params", "kv_bytes_per_token", "kv_bytes_per_element")


# Rows whose config no public file gives whole: built, field by field from the public partial
# copies, in the test module named, which holds the row to it.
ROW_BUILT = {"Granite-4.0-H-Small": "test_models_families_granite4h.py"}


def test_every_real_model_has_a_config_file():
    assert set(ROW_CONFIG) | set(ROW_BUILT) == set(catalog.model_names()) - {"guide-70b"}
    assert not set(ROW_CONFIG) & set(ROW_BUILT)
    for module in ROW_BUILT.values():
        assert (pathlib.Path(__file__).parent / module).is_file()


@pytest.mark.parametrize("name", sorted(ROW_CONFIG))
def test_row_agrees_with_config_json(name):
    row = catalog.model(name)
    built = model_from_hf_config(CONFIGS / f"{ROW_CONFIG[name]}.json", name=name)
    for field in FIELDS:
        assert getattr(row, field) == getattr(built, field), field
    if built.max_context is not None:              # Falcon's config gives no context length
        assert row.max_context == built.max_context


def test_weight_formats_follow_the_release():
    # fp8 DeepSeek-V3 release; fp16 Llama 2 / GPT-NeoX; bf16 elsewhere.
    assert catalog.model("DeepSeek-V3").weight_bytes == 671_026_419_200
    assert catalog.model("Llama-2-7B").bytes_per_param == 2
    assert catalog.model("Llama-3.1-405B").weight_bytes == 2 * 405_853_388_800


#: Bytes a weight of the body takes in the format a repository's name states.
FORMAT_IN_NAME = {"BF16": 2.0, "FP16": 2.0, "FP8": 1.0, "NVFP4": 0.5, "MXFP4": 0.5}


@pytest.mark.parametrize("name", sorted(set(catalog.model_names()) - {"guide-70b"}))
def test_the_repository_a_row_cites_holds_its_format(name):
    # The launch commands load the repository of the row's source: one named for a format
    # (…-FP8, …-BF16) must hold the row's, or a bf16 plan would load FP8 weights.
    row = catalog.model(name)
    match = re.search(r"huggingface\.co/[\w.-]+/([\w.-]+)", row.source)
    assert match, row.source
    named = [fmt for fmt in FORMAT_IN_NAME if re.search(rf"-{fmt}(-|$)", match.group(1), re.I)]
    if named:
        assert row.bytes_per_body_param == FORMAT_IN_NAME[named[-1]], (match.group(1), named)


# -- GPUs ------------------------------------------------------------------------------------------
def test_gpu_dense_flops_sanity():
    for g in catalog.gpus().values():
        table = dict(g.peak_flops_by_dtype)
        for narrow in ("fp8", "int8", "fp4"):
            if narrow in table:
                assert table[narrow] >= table["bf16"], (g.name, narrow)
        for wide in ("tf32", "fp32"):
            if wide in table:
                assert table[wide] <= table["bf16"], (g.name, wide)
        assert 10 * units.GiB <= g.memory_bytes <= 300 * units.GiB, g.name
        assert 0.2e12 <= g.hbm_bandwidth <= 10e12, g.name
        # ridge points of real parts sit between ~100 and ~600 FLOP/byte at 16 bits, but for
        # the export-throttled H20 (test_h20_is_compute_throttled)
        if g.name != "H20":
            assert 100 <= g.ridge_point <= 600, g.name


def test_dense_not_sparse_figures():
    # NVIDIA H100 SXM datasheet: bf16 1,979 TFLOP/s "with sparsity" -> 989.4 dense; fp8 1,979 dense.
    h100 = catalog.gpu("h100")
    assert h100.peak_flops == pytest.approx(989.4e12)
    assert h100.flops_for("fp8") == pytest.approx(1978.9e12)
    assert catalog.gpu("h200").peak_flops == h100.peak_flops            # same compute die
    assert catalog.gpu("a100").peak_flops == 312e12                     # A100 datasheet, dense
    assert catalog.gpu("mi300x").peak_flops == pytest.approx(1307.4e12)  # AMD datasheet, dense


def test_gpu_memory_units():
    assert catalog.gpu("h100").memory_bytes == 80 * units.GiB
    assert catalog.gpu("h200").memory_bytes == 141 * units.GiB
    assert catalog.gpu("a100-40gb").memory_bytes == 40 * units.GiB


#: Maximum board power [W] as each vendor's datasheet states it (the row's power_source).
BOARD_POWER = {"H100-SXM-80GB": 700, "H100-PCIe-80GB": 350, "H100-NVL-94GB": 400,
               "H200-SXM-141GB": 700, "A100-SXM-40GB": 400, "A100-SXM-80GB": 400,
               "A100-PCIe-80GB": 300, "A10": 150, "L4": 72, "L40S": 350, "RTX-4090": 450,
               "B200": 1000, "MI300X": 750, "MI325X": 1000, "Gaudi-3": 900,
               "guide-lab-80GB": 700,
               "B300": 1400, "GB200": 1200, "GB300": 1400, "RTX-PRO-6000-Server": 600,
               "MI355X": 1400, "H20": 400}


def test_gpu_board_power_and_its_source():
    for name, watts in BOARD_POWER.items():
        assert catalog.gpu(name).board_power == watts, name
    # no vendor figure for the AWS-only A10G: unknown, not guessed
    assert catalog.gpu("A10G").board_power is None
    assert set(BOARD_POWER) | {"A10G"} == set(catalog.gpu_names())
    for row in _rows("gpus.toml", "gpu"):
        assert isinstance(row.get("power_source"), str) and row["power_source"].strip(), \
            row["name"]


def test_board_power_without_a_source_is_refused():
    row = dict(_rows("gpus.toml", "gpu")[0])
    del row["power_source"]
    with pytest.raises(ValueError, match="power_source"):
        catalog._gpu_from_row(row, {})


def test_price_rows_name_catalogue_gpus():
    with resources.files("rooflinekit").joinpath("data", "prices.toml").open("rb") as fh:
        rows = tomllib.load(fh).get("gpu_hourly", [])
    for row in rows:
        assert catalog.gpu(row["gpu"]).hourly_price == pytest.approx(row["usd_per_hour"])


# -- Dataset views ---------------------------------------------------------------------------------
def test_models_dataset():
    ds = catalog.models(as_dataset=True)
    assert isinstance(ds, xr.Dataset) and ds.kv_bytes_per_token.dims == ("model",)
    assert list(ds["model"].values) == catalog.model_names()
    assert ds.kv_bytes_per_token.attrs["units"] == "bytes"
    assert ds.n_layers.attrs["units"] == "1" and "long_name" in ds.n_layers.attrs
    assert ds.kv_bytes_per_token.sel(model="DeepSeek-V3").item() == 70_272
    assert ds.attention.sel(model="Falcon-7B").item() == "MQA"
    assert np.isinf(ds.sliding_window.sel(model="Llama-3.1-8B").item())
    assert ds.sliding_window.sel(model="Gemma-2-9B").item() == 4096
    np.testing.assert_array_equal(ds.kv_bytes_per_token.values,
                                  [KV_BY_HAND[n] for n in catalog.model_names()])


def test_gpus_dataset_and_subsets():
    ds = catalog.gpus(["h100", "mi300x", "l4"], as_dataset=True)
    assert list(ds["gpu"].values) == ["H100-SXM-80GB", "MI300X", "L4"]
    assert ds.hbm_bandwidth.attrs["units"] == "bytes/s"
    assert ds.peak_flops.attrs["units"] == "FLOP/s"
    assert ds.peak_flops_fp8.sel(gpu="L4").item() == pytest.approx(242.5e12)
    assert ds.memory_bytes.sel(gpu="MI300X").item() == 192 * units.GiB
    assert ds.board_power.attrs["units"] == "W"
    assert ds.board_power.sel(gpu="MI300X").item() == 750
    assert np.isnan(catalog.gpus(["a10g"], as_dataset=True).board_power.item())
    with pytest.raises(ValueError, match="unknown GPU"):
        catalog.gpus(["h100", "h1000"], as_dataset=True)


def test_resolve_model_name_path_or_spec(tmp_path):
    m = catalog.resolve_model("llama-3.1-8b")
    assert m is catalog.model("Llama-3.1-8B")
    assert catalog.resolve_model(m) is m
    path = tmp_path / "config.json"
    path.write_text('{"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 256, '
                    '"intermediate_size": 512, "vocab_size": 1000}')
    read = catalog.resolve_model(path)
    assert read.kv_bytes_per_token == 2 * 2 * 4 * 64 * 2           # MHA (no KV-head count), bf16
    assert read.name == tmp_path.name                              # named after its folder
    with pytest.raises(ValueError, match="does not exist"):
        catalog.resolve_model("missing/config.json")
    with pytest.raises(ValueError, match="unknown model"):
        catalog.resolve_model("no-such-model")


def test_is_mla_flag():
    assert catalog.model("DeepSeek-V3").is_mla and not catalog.model("Llama-3.1-8B").is_mla
    ds = catalog.models(["DeepSeek-V3", "Llama-3.1-8B"], as_dataset=True)
    assert list(ds.is_mla.values) == [True, False]


# -- issue 29: GPUs people plan with in 2025-26 ---------------------------------------------------
# Each figure written from the vendor page, sparse ones halved by hand here. TFLOP/s per GPU.
CURRENT_GPUS = {
    # HGX/DGX B300, 8 GPUs: FP4 "144 PFLOPS | 108 PFLOPS" (sparse | dense), FP8/FP6 72 PFLOPS and
    # FP16/BF16 36 PFLOPS with sparsity; NVIDIA: 2.1 TB per 8 GPUs, 268 GB per GPU as AWS lists it.
    # https://www.nvidia.com/en-us/data-center/dgx-b300/  https://www.nvidia.com/en-us/data-center/hgx/
    "B300": dict(gib=268, tb_s=8.0, bf16=36_000 / 2 / 8, fp8=72_000 / 2 / 8, fp4=108_000 / 8),
    # GB200 NVL72, 72 GPUs: FP4 "1,440 | 720 PFLOPS" (sparse | dense), FP8/FP6 720 PFLOPS and
    # FP16/BF16 360 PFLOPS with sparsity, up to 13.4 TB HBM3e (186 GB per GPU), 576 TB/s.
    # https://www.nvidia.com/en-us/data-center/gb200-nvl72/
    "GB200": dict(gib=186, tb_s=576 / 72, bf16=360_000 / 2 / 72, fp8=720_000 / 2 / 72,
                  fp4=720_000 / 72),
    # GB300 NVL72, 72 GPUs: FP4 1,440 PFLOPS with sparsity, 1,080 PFLOPS without; FP8/FP6 720 and
    # FP16/BF16 360 PFLOPS with sparsity; 576 TB/s. 288 GB HBM3E and 15 PFLOPS dense NVFP4 per GPU:
    # https://www.nvidia.com/en-us/data-center/gb300-nvl72/
    # https://developer.nvidia.com/blog/inside-nvidia-blackwell-ultra-the-chip-powering-the-ai-factory-era/
    "GB300": dict(gib=288, tb_s=576 / 72, bf16=360_000 / 2 / 72, fp8=720_000 / 2 / 72,
                  fp4=1_080_000 / 72),
    # RTX PRO 6000 Blackwell Server Edition: 96 GB GDDR7, 1,597 GB/s; FP4 4 PFLOPS, FP8 2 PFLOPS,
    # FP16|BF16 1 PFLOP, all with sparsity (halved).
    # https://www.nvidia.com/en-us/data-center/rtx-pro-6000-blackwell-server-edition/
    "RTX-PRO-6000-Server": dict(gib=96, tb_s=1.597, bf16=1000 / 2, fp8=2000 / 2, fp4=4000 / 2),
    # MI355X: 288 GB HBM3E, 8 TB/s; dense BF16 2.5166 PF (5.0332 with sparsity), OCP-FP8 5.0332 PF
    # (10.0664 with sparsity), MXFP4 10.0663 PF (no sparse figure).
    # https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/product-briefs/amd-instinct-mi355x-gpu-brochure.pdf
    "MI355X": dict(gib=288, tb_s=8.0, bf16=5033.2 / 2, fp8=10066.4 / 2, fp4=10066.3),
}


@pytest.mark.parametrize("name", sorted(CURRENT_GPUS))
def test_current_gpus_match_their_datasheets(name):
    want, g = CURRENT_GPUS[name], catalog.gpu(name)
    assert g.name == name
    assert g.memory_bytes == want["gib"] * units.GiB
    assert g.hbm_bandwidth == pytest.approx(want["tb_s"] * 1e12)
    assert g.peak_flops == pytest.approx(want["bf16"] * 1e12)
    assert g.flops_for("bf16") == pytest.approx(want["bf16"] * 1e12)
    assert g.flops_for("fp8") == pytest.approx(want["fp8"] * 1e12)
    # the FP4 peak, by every name the format goes by (NVFP4 on Blackwell, MXFP4 on both)
    for fp4 in ("fp4", "nvfp4", "mxfp4"):
        assert g.flops_for(fp4) == pytest.approx(want["fp4"] * 1e12), fp4
    assert g.flops_for("fp4") > g.flops_for("fp8") > g.peak_flops


def test_current_gpus_aliases_and_bins():
    assert catalog.gpu("hgx-b300") is catalog.gpu("B300")
    assert catalog.gpu("GB300 NVL72") is catalog.gpu("GB300")
    assert catalog.gpu("gb200_nvl72") is catalog.gpu("GB200")
    assert catalog.gpu("amd-mi355x") is catalog.gpu("MI355X")
    assert catalog.gpu("rtx-pro-6000-server-edition").name == "RTX-PRO-6000-Server"
    # the NVL72 bins are faster than the HGX ones of the same die (B200 9, GB200 10 PF dense FP4)
    assert catalog.gpu("GB200").flops_for("fp4") > catalog.gpu("B200").flops_for("fp4")
    assert catalog.gpu("GB300").flops_for("fp4") > catalog.gpu("B300").flops_for("fp4")
    # NVLink 5: 1.8 TB/s bidirectional = 900 GB/s per direction
    for name in ("B300", "GB200", "GB300"):
        assert catalog.gpu(name).interconnect_bandwidth == 900 * units.GB_PER_S


def test_h20_is_compute_throttled():
    """The H20 (third-party figures; no NVIDIA datasheet): 96 GB at 4.0 TB/s, 148 TFLOP/s
    dense 16-bit, 296 FP8/INT8: a ridge point of 148e12 / 4.0e12 = 37 FLOP/byte, an eighth of
    the H100's 989.4e12 / 3.35e12 = 295."""
    h20, h100 = catalog.gpu("H20"), catalog.gpu("H100-SXM-80GB")
    assert h20.memory_bytes == 96 * units.GiB and h20.hbm_bandwidth == pytest.approx(4.0e12)
    assert h20.peak_flops == pytest.approx(148e12) and h20.flops_for("fp8") == pytest.approx(296e12)
    assert h20.ridge_point == pytest.approx(37.0)
    assert h100.ridge_point == pytest.approx(989.4e12 / 3.35e12)
    assert h20.interconnect_bandwidth == 450 * units.GB_PER_S
    assert catalog.gpu("hgx-h20") is h20


def test_fp4_only_where_the_gpu_has_it():
    # Hopper and Ampere list no fp4: flops_for falls back to the 16-bit peak (weight-only FP4)
    for name in ("H100-SXM-80GB", "H200-SXM-141GB", "A100-SXM-80GB", "MI300X"):
        g = catalog.gpu(name)
        assert "fp4" not in g.peak_flops_by_dtype
        assert g.flops_for("fp4") == g.peak_flops


# -- issue 29: models deployed in 2025-26 -----------------------------------------------------------
# Fields the rows of quantized and hybrid models set beyond FIELDS: each must be what the reader
# takes from the release's config.json.
RELEASE_FIELDS = ("bytes_per_param", "body_bytes_per_param", "expert_bytes_per_param",
                  "embedding_bytes_per_param", "n_attention_layers", "n_linear_attention_layers",
                  "n_mamba_layers", "state_bytes_per_sequence", "max_context")
CURRENT_MODELS = ["gpt-oss-120b", "gpt-oss-20b", "Qwen3-Next-80B-A3B", "Qwen3-32B",
                  "Llama-3.3-70B"]


def test_current_models_are_in_the_catalogue():
    assert set(CURRENT_MODELS) <= set(catalog.model_names())
    assert catalog.model("openai/gpt-oss-120b").name == "gpt-oss-120b"
    assert catalog.model("GPT-OSS 20B").name == "gpt-oss-20b"
    assert catalog.model("qwen3-next-80b-a3b-instruct").name == "Qwen3-Next-80B-A3B"


@pytest.mark.parametrize("name", CURRENT_MODELS)
def test_current_rows_keep_the_release_formats_and_layers(name):
    row = catalog.model(name)
    built = model_from_hf_config(CONFIGS / f"{ROW_CONFIG[name]}.json", name=name)
    for field in RELEASE_FIELDS:
        assert getattr(row, field) == getattr(built, field), field
    assert row.weight_bytes == pytest.approx(built.weight_bytes, rel=1e-12)
    assert row.active_weight_bytes == pytest.approx(built.active_weight_bytes, rel=1e-12)


def _gpt_oss_weight_bytes(layers, experts):
    """gpt-oss from its config.json: hidden 2880, 64 query and 8 KV heads of 64 (q/k/v/o biased,
    one sink a head), experts of width 2880 (gate_up 2·2880 × 2880 and down, biased), a biased
    router, two norms a layer and a final one, untied 201,088 × 2880 embedding and LM head.
    MXFP4 (4 bits + one 8-bit scale per 32) for the expert matrices, bf16 for everything else."""
    h, q, kv, inter, vocab = 2880, 64 * 64, 8 * 64, 2880, 201_088
    attention = (h * q + q) + 2 * (h * kv + kv) + (q * h + h) + 64
    matrices = experts * 3 * h * inter
    biases = experts * (2 * inter + h)
    router = experts * h + experts
    bf16 = layers * (attention + biases + router + 2 * h) + h + 2 * vocab * h
    return layers * matrices * (4 + 8 / 32) / 8 + bf16 * 2


def test_current_weight_formats_follow_the_release():
    # gpt-oss: MXFP4 experts, the rest bf16; the model card (arXiv:2508.10925) gives 60.8 GiB and
    # 12.8 GiB, the 20b release's model.safetensors.index.json a total_size of 13,761,264,768 B.
    big, small = catalog.model("gpt-oss-120b"), catalog.model("gpt-oss-20b")
    assert big.weight_bytes == pytest.approx(_gpt_oss_weight_bytes(36, 128), rel=1e-12)
    assert small.weight_bytes == pytest.approx(_gpt_oss_weight_bytes(24, 32), rel=1e-12)
    assert big.weight_bytes == pytest.approx(65_248_815_744, rel=1e-12)
    assert big.weight_bytes / units.GiB == pytest.approx(60.8, abs=0.05)
    assert small.weight_bytes == pytest.approx(13_761_264_768, rel=1e-12)
    for m in (big, small):
        assert (m.bytes_per_param, m.body_bytes_per_param, m.embedding_bytes_per_param) == \
            (0.5, 2, 2)
        # the experts' matrices at 17/32 B and their biases at 2 B, per expert
        assert m.expert_bytes_per_param == pytest.approx(
            (3 * 2880 * 2880 * 17 / 32 + (2 * 2880 + 2880) * 2) / (3 * 2880 * 2880 + 3 * 2880),
            rel=1e-15)
    # Qwen3-Next: bf16 release (torch_dtype bfloat16), no quantization_config
    qwen = catalog.model("Qwen3-Next-80B-A3B")
    assert qwen.weight_bytes == 2 * 79_674_391_296 and not qwen.has_weight_groups


def test_current_rows_match_their_model_cards():
    # gpt-oss model card, Table 1: 116.83B / 20.91B total, 5.13B / 3.61B active with the LM head
    # but not the embedding table; Qwen3-Next model card: 80B total, 3B activated. 0.5%: the
    # cards' three significant figures; Qwen's "80B" and "3B" are rounded further.
    for name, total, active, experts in [("gpt-oss-120b", 116.83e9, 5.13e9, 128),
                                         ("gpt-oss-20b", 20.91e9, 3.61e9, 32)]:
        m = catalog.model(name)
        assert m.n_params == pytest.approx(total, rel=0.005)
        assert m.n_active_params - 201_088 * 2880 == pytest.approx(active, rel=0.005)
        assert (m.n_experts, m.n_experts_per_token) == (experts, 4)
    qwen = catalog.model("Qwen3-Next-80B-A3B")
    assert qwen.n_params == pytest.approx(80e9, rel=0.01)
    assert 3e9 <= qwen.n_active_params - 151_936 * 2048 < 4e9
    assert (qwen.n_experts, qwen.n_experts_per_token) == (512, 10)


def test_current_rows_sliding_and_hybrid_layers():
    # gpt-oss: layer_types alternates sliding_attention (window 128) and full_attention
    for name, layers in [("gpt-oss-120b", 36), ("gpt-oss-20b", 24)]:
        m = catalog.model(name)
        assert (m.sliding_window, m.n_sliding_layers, m.n_full_layers) == (128, layers // 2,
                                                                           layers // 2)
        assert not m.is_hybrid and m.state_bytes_per_sequence == 0
    # Qwen3-Next: 12 attention layers, 36 Gated DeltaNet layers of 32 value heads of 128 and 16
    # key heads of 128: a 32·128·128 fp32 state and a (4 − 1)·(2·16·128 + 32·128) bf16
    # convolution state each.
    qwen = catalog.model("Qwen3-Next-80B-A3B")
    assert (qwen.n_kv_layers, qwen.n_linear_attention_layers, qwen.n_mamba_layers) == (12, 36, 0)
    assert qwen.is_hybrid and qwen.sliding_window is None
    assert qwen.state_bytes_per_sequence == 36 * (32 * 128 * 128 * 4
                                                  + (4 - 1) * (2 * 16 * 128 + 32 * 128) * 2)
    ds = catalog.models(CURRENT_MODELS, as_dataset=True)
    assert list(ds.kv_bytes_per_token.values) == [KV_BY_HAND[n] for n in CURRENT_MODELS]


def test_qwen3_32b_parameters_by_hand():
    # Qwen/Qwen3-32B config.json: 64 layers, hidden 5120, 64 query and 8 KV heads of 128 (no
    # biases), q_norm and k_norm of 128 a layer, SwiGLU MLP of 25,600, two norms a layer and a
    # final one, untied 151,936 × 5120 embedding and LM head. Model card: 32.8B, 31.2B
    # without the embeddings (both tables). bf16 release.
    h, layers, vocab, inter = 5120, 64, 151_936, 25_600
    attention = h * 64 * 128 + 2 * h * 8 * 128 + 64 * 128 * h + 2 * 128
    per_layer = attention + 3 * h * inter + 2 * h
    total = layers * per_layer + h + 2 * vocab * h
    m = catalog.model("Qwen3-32B")
    assert m.n_params == total == 32_762_123_264
    assert m.n_params == pytest.approx(32.8e9, rel=0.005)
    assert m.n_params - 2 * vocab * h == pytest.approx(31.2e9, rel=0.005)
    assert m.weight_bytes == 2 * total and m.attention == "GQA-8" and not m.is_moe


def test_llama_3_3_70b_has_the_llama_3_1_70b_shapes():
    # meta-llama/Llama-3.3-70B-Instruct config.json: 80 layers, hidden 8192, 64 query and 8 KV
    # heads of 128, SwiGLU MLP of 28,672, untied 128,256 × 8192 embedding and LM head, bf16.
    h, layers, vocab, inter = 8192, 80, 128_256, 28_672
    per_layer = 2 * h * h + 2 * h * 8 * 128 + 3 * h * inter + 2 * h
    total = layers * per_layer + h + 2 * vocab * h
    new, old = catalog.model("Llama-3.3-70B"), catalog.model("Llama-3.1-70B")
    assert new.n_params == total == old.n_params
    assert new.weight_bytes == 2 * total
    assert catalog.model("meta-llama/Llama-3.3-70B-Instruct") is new
    assert catalog.model("llama-3.1-70b-instruct") is old


@pytest.mark.parametrize("changes, field", [
    ({"boost_clock_mhz": 0, "clock_source": "test"}, "boost_clock_mhz"),
    ({"boost_clock_mhz": "fast", "clock_source": "test"}, "boost_clock_mhz"),
    ({"host_link_gb_s": -1.0, "host_link_source": "test"}, "host_link_gb_s"),
    ({"host_link_gb_s": True, "host_link_source": "test"}, "host_link_gb_s"),
    ({"streaming_bandwidth_tb_s": float("inf"), "streaming_bandwidth_source": "test"},
     "streaming_bandwidth_tb_s"),
])
def test_a_row_figure_out_of_range_is_refused_naming_it(changes, field):
    from rooflinekit.catalog import _gpu_from_row
    row = {"name": "card", "memory_gib": 80, "hbm_bandwidth_tb_s": 2.0,
           "dense_tflops": {"bf16": 400.0}, "source": "test", **changes}
    with pytest.raises(ValueError, match=rf"row 'card': {field} must be a number > 0"):
        _gpu_from_row(row, {})
