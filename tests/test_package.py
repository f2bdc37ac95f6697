"""The package surface: public names resolve, import stays light, the CLI answers."""

import importlib
import json
import pkgutil
import subprocess
import sys

import pytest
from helpers import assert_reexports

import rooflinekit
from rooflinekit import cli


def test_all_names_resolve():
    for name in rooflinekit.__all__:
        assert hasattr(rooflinekit, name), name


#: The public names before the folders were introduced; every one must still resolve.
NAMES_BEFORE_FOLDERS = (
    "calibrate", "catalog", "dims", "plotting", "sweep", "units", "GPU", "ModelShape",
    "kv_bytes_per_token", "kv_bytes_per_sequence", "weight_bytes", "usable_kv_bytes",
    "max_concurrent_sequences", "kv_copies", "kv_budget_tokens", "max_context_length",
    "blocks_per_sequence", "paged_waste_bytes", "engine_kv_cache", "arithmetic_intensity",
    "ridge_point", "critical_batch_size", "prefill_time",
    "amortized_token_time", "mixed_step_time", "decode_throughput", "request_latency",
    "cost_per_million_tokens", "smallest_tp", "tp_scaling",
    "allreduce_time", "StaticBatcher", "ContinuousBatcher", "monte_carlo", "Workload",
    "WorkloadSpec", "guide_workload", "PayAsYouGo", "Provisioned", "SelfHosted", "Compliance",
    "NoAdmissibleOptionError", "blended_price", "break_even", "crossover_volume",
    "cheapest_option", "plan_with_spillover", "optimal_floor", "compare_floor_sizing",
    "best_configuration", "best_tp", "cheapest_configuration", "pareto_front", "Calibration",
    "cross_validate", "read_measurements", "read_vllm_result", "__version__",
)


#: Names added since: the ITL's one name, and capacity under load.
NAMES_ADDED = {"decode_step_time", "energy_per_token", "Traffic", "SLO", "plan", "cheapest_plan",
               "decision_table", "speculative_tokens_per_step", "speculative_step_time",
               "speculative_speedup", "Speculative",
               "layout_memory", "pipeline_bubble", "expert_all_to_all_bytes", "kv_transfer_time",
               "layout_decode_step_time", "layout_prefill_time", "layouts", "plan_disaggregated",
               "payg_cost_per_request", "cost_per_request", "speculative_cost_per_million_tokens",
               "Engine", "IDEAL", "engine_profile", "ENGINE_PROFILES", "time_to_first_token",
               "engine_memory", "ENGINE_MEMORY", "memory_share", "sglang_mem_fraction_static",
               "expected_normal_maximum"}


def test_names_before_folders_are_kept():
    # less decode_time_per_token, and the near-synonyms prefill_ms, decode_ms_per_token and
    # simulate (prefill_time, amortized_token_time, a batcher's run), removed
    assert len(NAMES_BEFORE_FOLDERS) == 58
    assert set(NAMES_BEFORE_FOLDERS) <= set(rooflinekit.__all__)
    assert set(rooflinekit.__all__) - set(NAMES_BEFORE_FOLDERS) == NAMES_ADDED


@pytest.mark.parametrize("folder", ["roofline", "profiles", "pricing", "batching", "sweep",
                                    "calibrate",
                                    "plotting", "planning"])
def test_folder_face_re_exports_its_parts(folder):
    """Each public module of a folder lists its names; the face re-exports every one of them."""
    face = importlib.import_module(f"rooflinekit.{folder}")
    parts = [importlib.import_module(f"rooflinekit.{folder}.{info.name}")
             for info in pkgutil.iter_modules(face.__path__) if not info.name.startswith("_")]
    assert parts
    assert_reexports(face, *parts)


def test_import_compiles_no_numba():
    # importing the package must not compile (or even import) numba: kernels compile on first use
    code = "import sys, rooflinekit; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_guide_memory_section_text(capsys):
    assert cli.main(["guide", "--section", "memory"]) == 0
    text = capsys.readouterr().out
    for figure in ("327,680", "183", "22", "1,467", "458.65"):
        assert figure in text


def test_guide_json(capsys):
    assert cli.main(["guide", "--section", "memory", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    figs = {f["label"]: f for f in data[0]["figures"]}
    assert figs["concurrent 8k sequences, GQA-8"]["ours"] == 183
    assert all(f["agrees"] for f in data[0]["figures"])


def test_cli_bad_section_is_one_line_error(capsys):
    assert cli.main(["guide", "--section", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown section" in err


def test_console_script_entry_point():
    out = subprocess.run([sys.executable, "-m", "rooflinekit.cli", "guide", "--section", "memory"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and "183" in out.stdout


def test_readme_python_snippets_run():
    # the README's examples are code people paste: they must keep working
    import re
    from pathlib import Path
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert blocks
    namespace = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["rk"].max_concurrent_sequences(namespace["model"], namespace["gpu"], 8192,
                                                     tp=8) == 183
    # vLLM's cache of Llama-3.1-70B on 2 x H100 (docs/planning.md's plan holds the same)
    assert namespace["kv"]["kv_cache_tokens"] == 10_368
    assert int(namespace["kv"]["max_concurrency"]) == 1
