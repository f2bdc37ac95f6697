"""A hybrid model's recurrent-state format: ``ModelShape.ssm_state_bytes_per_element``.

The engines keep a Gated DeltaNet's or a Mamba layer's recurrent state in a format of their own
(vLLM's ``--mamba-ssm-cache-dtype``, SGLang's ``--mamba-ssm-dtype``); the short convolution's
state stays in 16 bits. The reference sizes below are counted by hand from each model's
config.json fields (the catalogue notes quote them): recurrent state a layer = value heads x key
dim x value dim (Gated DeltaNet), heads x head dim x state size (Mamba-2), inner width x state
size (Mamba-1), x 4 bytes in FP32.
"""

import json
from pathlib import Path

import pytest

import rooflinekit as rk
from rooflinekit import catalog
from rooflinekit.cli import main
from rooflinekit.hf_config import shape_fields
from rooflinekit.planning import launch_commands

CONFIGS = Path(__file__).parent / "data" / "hf_configs"

# model: (recurrent layers, FP32 recurrent state a layer [bytes]), by hand from config.json
HAND = {
    "Qwen3-Next-80B-A3B": (36, 32 * 128 * 128 * 4),       # 32 value heads, d_k = d_v = 128
    "Qwen3.5-27B": (48, 48 * 128 * 128 * 4),              # 48 value heads
    "Qwen3.5-35B-A3B": (30, 32 * 128 * 128 * 4),
    "Qwen3.5-397B-A17B": (45, 64 * 128 * 128 * 4),        # 64 value heads
    "Nemotron-3-Nano-30B-A3B": (23, 64 * 64 * 128 * 4),   # Mamba-2: 64 heads of 64, N = 128
    "Nemotron-3-Super-120B-A12B": (40, 128 * 64 * 128 * 4),
    "Jamba-1.5-Mini": (28, 8192 * 16 * 4),                # Mamba-1: inner 8192, N = 16
    "Falcon-H1-0.5B": (36, 24 * 64 * 128 * 4),
    "Granite-4.0-H-Small": (36, 128 * 64 * 128 * 4),
}
CONFIG_FILES = {"Qwen3-Next-80B-A3B": "qwen3-next-80b-a3b-instruct.json",
                "Qwen3.5-27B": "qwen3.5-27b.json", "Qwen3.5-35B-A3B": "qwen3.5-35b-a3b.json",
                "Qwen3.5-397B-A17B": "qwen3.5-397b-a17b.json",
                "Nemotron-3-Nano-30B-A3B": "nemotron-3-nano-30b-a3b-bf16.json",
                "Nemotron-3-Super-120B-A12B": "nemotron-3-super-120b-a12b-fp8.json",
                "Jamba-1.5-Mini": "ai21-jamba-1.5-mini.json",
                "Falcon-H1-0.5B": "falcon-h1-0.5b.json"}


@pytest.mark.parametrize("name", sorted(HAND))
def test_catalogue_split_by_hand(name):
    layers, per_layer = HAND[name]
    model = catalog.model(name)
    assert model.ssm_state_bytes_per_sequence == layers * per_layer
    assert model.ssm_state_bytes_per_element == 4.0
    assert 0 < model.ssm_state_bytes_per_sequence < model.state_bytes_per_sequence


def test_every_catalogue_hybrid_has_its_split():
    for model in catalog.models().values():
        assert bool(model.state_bytes_per_sequence) == bool(model.ssm_state_bytes_per_sequence), \
            model.name
        assert model.name in HAND or not model.state_bytes_per_sequence, model.name


@pytest.mark.parametrize("name", sorted(CONFIG_FILES))
def test_config_reader_agrees_with_the_catalogue(name):
    fields = shape_fields(str(CONFIGS / CONFIG_FILES[name]))
    model = catalog.model(name)
    assert fields["ssm_state_bytes_per_sequence"] == model.ssm_state_bytes_per_sequence
    assert fields["state_bytes_per_sequence"] == model.state_bytes_per_sequence


def test_config_state_dtype_field_sets_the_format():
    config = json.loads((CONFIGS / "qwen3-next-80b-a3b-instruct.json").read_text())
    model = rk.ModelShape.from_hf_config({**config, "mamba_ssm_dtype": "bfloat16"})
    layers, per_layer = HAND["Qwen3-Next-80B-A3B"]
    assert model.ssm_state_bytes_per_element == 2.0
    assert model.ssm_state_bytes_per_sequence == layers * per_layer / 2


def test_a_state_given_over_the_config_drops_its_split():
    # a state size of one's own says nothing of its recurrent part (as ModelShape.replace)
    model = rk.ModelShape.from_hf_config(str(CONFIGS / CONFIG_FILES["Qwen3-Next-80B-A3B"]),
                                         state_bytes_per_sequence=1e6)
    assert (model.state_bytes_per_sequence, model.ssm_state_bytes_per_sequence) == (1e6, 0.0)
    with pytest.raises(ValueError, match="ssm_state_bytes_per_sequence"):
        model.replace(ssm_state_bytes_per_element="bf16")


def test_bf16_state_halves_the_recurrent_part_only():
    model = catalog.model("Qwen3-Next-80B-A3B")
    half = model.replace(ssm_state_bytes_per_element="bf16")
    # by hand: 36 layers x (32 x 128 x 128 x 2 + 3 x (2 x 16 x 128 + 32 x 128) x 2) bytes
    assert half.state_bytes_per_sequence == 36 * (32 * 128 * 128 * 2 + 3 * (4096 + 4096) * 2)
    assert half.state_bytes_per_sequence == 39_518_208
    assert half.ssm_state_bytes_per_sequence == 36 * 32 * 128 * 128 * 2
    assert half.replace(ssm_state_bytes_per_element="fp32") == model


def test_given_sizes_are_kept():
    model = catalog.model("Jamba-1.5-Mini")
    mine = model.replace(ssm_state_bytes_per_element=2, state_bytes_per_sequence=9e6,
                         ssm_state_bytes_per_sequence=8e6)
    assert (mine.state_bytes_per_sequence, mine.ssm_state_bytes_per_sequence) == (9e6, 8e6)


def test_dense_model_has_nothing_to_change():
    model = catalog.model("Llama-3.1-8B")
    assert model.replace(ssm_state_bytes_per_element="bf16").state_bytes_per_sequence == 0.0


def test_more_sequences_fit_with_a_bf16_state():
    model, gpu = catalog.model("Qwen3-Next-80B-A3B"), catalog.gpu("H100-SXM-80GB")
    full = rk.max_concurrent_sequences(model, gpu, 1024, tp=4)
    half = rk.max_concurrent_sequences(model.replace(ssm_state_bytes_per_element="bf16"), gpu,
                                       1024, tp=4)
    # by hand: the same budget over 1,024 tokens of KV plus the state, a sequence
    budget = rk.kv_budget_tokens(model, gpu, tp=4) * model.kv_bytes_per_token
    kv = 1024 * model.kv_bytes_per_token
    assert int(full) == int(budget // (kv + 77_266_944))
    assert int(half) == int(budget // (kv + 39_518_208))


def test_decode_reads_less_state():
    model, gpu = catalog.model("Qwen3.5-397B-A17B"), catalog.gpu("B200")
    half = model.replace(ssm_state_bytes_per_element="bf16")
    slow = rk.decode_step_time(model, gpu, 4096, 256, tp=8)
    fast = rk.decode_step_time(half, gpu, 4096, 256, tp=8)
    assert float(fast) < float(slow)


@pytest.mark.parametrize("changes, match", [
    ({"ssm_state_bytes_per_sequence": 8e7}, "ssm_state_bytes_per_sequence"),
    ({"ssm_state_bytes_per_sequence": -1.0}, "ssm_state_bytes_per_sequence"),
    ({"ssm_state_bytes_per_element": "fp6"}, "ssm_state_bytes_per_element"),
    ({"ssm_state_bytes_per_element": 0}, "ssm_state_bytes_per_element"),
])
def test_bad_values_are_refused(changes, match):
    with pytest.raises(ValueError, match=match):
        catalog.model("Qwen3-Next-80B-A3B").replace(**changes)


def test_unknown_split_cannot_change_format():
    model = catalog.model("Qwen3-Next-80B-A3B").replace(ssm_state_bytes_per_sequence=0.0)
    with pytest.raises(ValueError, match="ssm_state_bytes_per_sequence"):
        model.replace(ssm_state_bytes_per_element="bf16")


def _run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _sequences(text):
    line = next(row for row in text.splitlines() if row.strip().startswith("max concurrent"))
    return int(line.split()[-1].replace(",", ""))


def test_capacity_flag(capsys):
    args = ("capacity", "qwen3-next-80b-a3b", "h100", "--tp", "4", "--max-model-len", "4096")
    code, full, _ = _run(capsys, *args)
    assert code == 0
    code, half, _ = _run(capsys, *args, "--mamba-ssm-cache-dtype", "bf16")
    assert code == 0
    assert _sequences(half) > _sequences(full)
    code, same, _ = _run(capsys, *args, "--mamba-ssm-cache-dtype", "fp32")
    assert _sequences(same) == _sequences(full)


def test_capacity_reports_the_state_it_holds(capsys):
    import json
    args = ("capacity", "qwen3-next-80b-a3b", "h100", "--tp", "4", "--max-model-len", "4096",
            "--json")
    code, full, _ = _run(capsys, *args)
    code, half, _ = _run(capsys, *args, "--mamba-ssm-cache-dtype", "bf16")
    assert json.loads(full)["state_bytes_per_sequence"] == 77_266_944
    assert json.loads(half)["state_bytes_per_sequence"] == 39_518_208
    code, dense, _ = _run(capsys, "capacity", "llama-3.1-8b", "h100", "--json")
    assert "state_bytes_per_sequence" not in json.loads(dense)


def test_capacity_flag_refuses_other_formats(capsys):
    with pytest.raises(SystemExit):
        main(["capacity", "qwen3-next-80b-a3b", "h100", "--tp", "4",
              "--mamba-ssm-cache-dtype", "fp8"])
    assert "--mamba-ssm-cache-dtype" in capsys.readouterr().err


def test_simulate_flag_needs_a_model(capsys):
    code = main(["simulate", "--mamba-ssm-cache-dtype", "bf16"])
    assert code != 0
    assert "--mamba-ssm-cache-dtype" in capsys.readouterr().err


@pytest.mark.parametrize("dtype, flag", [("fp32", "float32"), ("bf16", "bfloat16")])
def test_launch_commands_name_the_planned_format(dtype, flag):
    model = catalog.model("Qwen3-Next-80B-A3B").replace(ssm_state_bytes_per_element=dtype)
    traffic = rk.Traffic(2.0, rk.workloads.Constant(500), rk.workloads.Constant(100))
    plan = rk.plan(traffic, rk.SLO(ttft=2.0), models=model, gpus="H100-SXM-80GB", tp=4,
                   max_num_seqs=32, max_num_batched_tokens=1024, replicates=2, requests=60)
    commands = launch_commands(rk.cheapest_plan(plan, by=None), traffic, model=model)
    assert f"--mamba-ssm-cache-dtype {flag}" in commands["vllm_serve"]
    assert f"--mamba-ssm-dtype {flag}" in commands["sglang_serve"]
    # TensorRT-LLM takes it from its LLM API options (KvCacheConfig.mamba_ssm_cache_dtype,
    # whose values are these names): a note says how
    assert "mamba" not in commands["trtllm_serve"]
    assert any(f"kv_cache_config: {{mamba_ssm_cache_dtype: {flag}}}" in note
               and "--extra_llm_api_options" in note for note in commands["notes"])


def test_launch_commands_of_a_dense_model_name_no_state():
    traffic = rk.Traffic(2.0, rk.workloads.Constant(500), rk.workloads.Constant(100))
    plan = rk.plan(traffic, rk.SLO(ttft=2.0), models="Llama-3.1-8B", gpus="H100-SXM-80GB",
                   max_num_seqs=32, max_num_batched_tokens=1024, replicates=2, requests=60)
    commands = launch_commands(rk.cheapest_plan(plan, by=None), traffic)
    assert "mamba" not in commands["vllm_serve"] + commands["sglang_serve"]


def test_catalog_lists_each_hybrid_state(capsys):
    import json
    code, out, _ = _run(capsys, "catalog", "models", "qwen3-next-80b-a3b", "llama-3.1-8b",
                        "--json")
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["Qwen3-Next-80B-A3B"]["state_bytes_per_sequence"] == 77_266_944
    assert rows["Llama-3.1-8B"]["state_bytes_per_sequence"] == 0
    code, out, _ = _run(capsys, "catalog", "models", "qwen3-next-80b-a3b")
    assert "state [MiB/seq]" in out and "73.69" in out
