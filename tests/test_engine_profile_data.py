"""The shipped engine profiles (rooflinekit/data/engine_profiles/*.toml).

The always-run part checks each file's format and values against rooflinekit's own checks (and
the loader's, :func:`rooflinekit.profiles.shipped.read_profile_file`); the re-derivation runs
``scripts/engine_profiles.py``'s kernel fit for one (engine, GPU) pair, where the dev extra
(``aiconfigurator-core==0.12.0 pandas pyarrow``) is installed, and its vLLM serving stage (fast:
predictions of the public rows on the shipped kernel knobs), and holds the knobs to the shipped
ones.
"""

from __future__ import annotations

import importlib.util
import math
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

import rooflinekit
from rooflinekit import catalog
from rooflinekit.calibrate import Calibration

ROOT = Path(__file__).resolve().parents[1]
PROFILE_DIR = ROOT / "rooflinekit" / "data" / "engine_profiles"
SCRIPT = ROOT / "scripts" / "engine_profiles.py"
ENGINES = ("vllm", "sglang", "trtllm")

#: Every field a profile carries, and the knobs of each phase (Calibration's names).
FIELDS = ("gpu", "version", "date", "source", "models", "held_out_error", "held_out_error_ttft",
          "held_out_error_datasheet", "model_size_error", "fit_error", "prefill", "decode",
          "interval")
ERROR_FIELDS = ("held_out_error", "held_out_error_ttft", "held_out_error_datasheet",
                "model_size_error", "fit_error")
#: A hybrid's Gated DeltaNet prompt pass, in both phases.
RECURRENT = ("recurrent_layer_overhead", "recurrent_chain_time", "recurrent_element_time")
#: (the prefill phase's bandwidth efficiency is its GPU's streaming share: the fit's 1 on the
#: streaming bandwidth, written as a share of the datasheet figure)
KNOBS = {"prefill": ("compute_efficiency", "bandwidth_efficiency", "gemm_half_tokens",
                     "prefill_overhead", "interconnect_efficiency",
                     "low_precision_compute_efficiency", "host_traffic_share",
                     "moe_layer_overhead", "fp4_compute_efficiency", "moe_compute_share",
                     "mxfp4_moe_compute_share", "mla_layer_overhead",
                     "attention_compute_efficiency", "narrow_head_attention_share",
                     "cross_host_allreduce_latency", *RECURRENT),
         "decode": ("bandwidth_efficiency", "kv_bandwidth_efficiency", "step_overhead",
                    "layer_overhead", "low_precision_layer_overhead", "interconnect_latency",
                    "low_precision_bandwidth_efficiency", "compute_efficiency",
                    "gemm_half_tokens", "interconnect_efficiency", "host_traffic_share",
                    "moe_layer_overhead", "fp4_bandwidth_efficiency", "moe_compute_share",
                    "mxfp4_moe_compute_share", "mla_layer_overhead", "attention_compute_efficiency",
                    "narrow_head_attention_share", "cross_host_allreduce_latency", *RECURRENT)}
#: The vLLM GPUs whose own tables give each pooled knob (the A100 takes their median): every
#: GPU with an MoE table; the B200 and GB300, whose MLA module tables time it as served; every
#: GPU whose context-attention table holds heads of 64.
POOLED_FROM = {"moe_compute_share": ("H100-SXM-80GB", "H200-SXM-141GB", "B200", "L40S", "B300",
                                     "GB200", "GB300", "RTX-PRO-6000-Server"),
               "narrow_head_attention_share": ("H100-SXM-80GB", "H200-SXM-141GB", "B200", "L40S",
                                               "B300", "GB200", "GB300",
                                               "RTX-PRO-6000-Server"),
               "mla_layer_overhead": ("B200", "GB300"),
               **{knob: ("H100-SXM-80GB", "H200-SXM-141GB", "B200", "L40S", "B300", "GB200",
                         "GB300", "RTX-PRO-6000-Server") for knob in RECURRENT}}
#: Knobs a later stage adds to one engine's phase.
UNDER_LOAD_KNOBS = {("vllm", "prefill"): ("frontend_latency",),
                    ("sglang", "prefill"): ("frontend_latency",),
                    ("trtllm", "prefill"): ("frontend_latency",),
                    ("trtllm", "decode"): ("sequence_overhead",)}


def _load(engine: str) -> dict:
    with open(PROFILE_DIR / f"{engine}.toml", "rb") as fh:
        return tomllib.load(fh)


def _profiles():
    return [(engine, prof) for engine in ENGINES for prof in _load(engine)["profile"]]


def _id(pair):
    engine, prof = pair
    return f"{engine}-{prof['gpu']}"


@pytest.mark.parametrize("engine", ENGINES)
def test_file_parses_and_names_its_engine(engine):
    data = _load(engine)
    assert data["engine"] == engine
    assert data["profile"], f"{engine}.toml holds no profile"
    gpus = [prof["gpu"] for prof in data["profile"]]
    assert len(gpus) == len(set(gpus)), "one profile per GPU"


@pytest.mark.parametrize("pair", _profiles(), ids=_id)
def test_profile_fields_and_values(pair):
    engine, prof = pair
    assert set(FIELDS) <= set(prof), f"missing {set(FIELDS) - set(prof)}"
    assert catalog.gpu(prof["gpu"]).name == prof["gpu"]
    for model in prof["models"]:
        assert catalog.model(model).name == model
    assert prof["version"] and isinstance(prof["version"], str)
    assert len(prof["date"]) == 10 and prof["date"][4] == "-" and prof["date"][7] == "-"
    assert "aiconfigurator-core 0.12.0" in prof["source"] and engine in prof["source"]
    for name in ERROR_FIELDS:
        value = prof[name]
        assert isinstance(value, float) and math.isfinite(value) and value >= 0, name
    for phase, names in KNOBS.items():
        # the under-load stages add the front end's latency and TensorRT-LLM's host time per
        # sequence (scripts/fit_frontend_latency.py, scripts/fit_served_overheads.py)
        names = names + UNDER_LOAD_KNOBS.get((engine, phase), ())
        assert set(prof[phase]) == set(names), phase
        assert set(prof["interval"][phase]) == set(names), phase
        for name in names:
            value = prof[phase][name]
            low, high = prof["interval"][phase][name]
            assert all(isinstance(v, float) and math.isfinite(v) for v in (value, low, high))
            assert low <= value <= high, f"{phase}.{name}: {value} not in [{low}, {high}]"


@pytest.mark.parametrize("pair", _profiles(), ids=_id)
def test_profile_is_a_valid_calibration(pair):
    _, prof = pair
    intervals = {phase: {k: tuple(v) for k, v in prof["interval"][phase].items()}
                 for phase in KNOBS}
    cal = Calibration(prefill=prof["prefill"], decode=prof["decode"], source=prof["source"],
                      held_out_error=prof["held_out_error"], intervals=intervals)
    for phase in KNOBS:
        for name, value in prof[phase].items():
            assert cal._knobs(phase)[name] == value


def _script_with_tables():
    """The script, where the profiles' development extra (the kernel tables) is installed;
    the test is skipped elsewhere."""
    pytest.importorskip("aiconfigurator_core")
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    return _script()


def _script():
    spec = importlib.util.spec_from_file_location("engine_profiles_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module      # its dataclass looks its module up while defined
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("engine", ENGINES)
def test_file_passes_the_loader(engine):
    from rooflinekit.profiles.shipped import read_profile_file
    name, rows = read_profile_file(PROFILE_DIR / f"{engine}.toml")
    assert name == engine and len(rows) == len(_load(engine)["profile"])


def test_step_overhead_is_held_and_serving_overheads_are_shared():
    """Kernel-only engines (TensorRT-LLM) hold step_overhead at 0; vLLM's serving
    step_overhead (and its interval) is one value for every GPU, and its notes say what it was
    fitted to; so are SGLang's step_overhead, prefill_overhead and front end, fitted under
    load. vLLM's prefill_overhead
    stays each GPU's kernel intercept (not fitted to the client-side TTFT of the public rows,
    which holds time the GPU does not spend): per GPU, a few ms at most."""
    trtllm = _load("trtllm")["profile"]
    for prof in trtllm:
        assert prof["decode"]["step_overhead"] == 0.0
        assert prof["interval"]["decode"]["step_overhead"] == [0.0, 0.0]
        # its front end alone is fitted under load, the same for every GPU
        assert prof["prefill"]["frontend_latency"] == trtllm[0]["prefill"]["frontend_latency"] > 0
        assert "docs.nvidia.com" in prof["notes"] and "InferenceX-app" in prof["notes"]
    sglang = _load("sglang")["profile"]
    for knob, phase in (("step_overhead", "decode"), ("frontend_latency", "prefill"),
                        ("prefill_overhead", "prefill")):
        assert len({prof[phase][knob] for prof in sglang}) == 1, knob
        assert len({tuple(prof["interval"][phase][knob]) for prof in sglang}) == 1, knob
        # fitted, not the kernel profile's 0: the fits held out by source span a range above
        # it (the front end's fit to every source sits at its bound, 0: docs/validation.md)
        low, high = sglang[0]["interval"][phase][knob]
        assert 0 <= low <= sglang[0][phase][knob] <= high and high > 0, knob
        assert f"{knob} {sglang[0][phase][knob] * 1e3:.1f} ms" in sglang[0]["notes"], knob
    for prof in sglang:
        assert "scripts/fit_served_overheads.py" in prof["notes"]
        assert "sgl-project/sgl-cookbook" in prof["notes"]
    vllm = _load("vllm")
    host = vllm["host_scheduling"]
    assert host["synchronous_step_overhead"] > 0
    low, high = host["synchronous_step_overhead_interval"]
    assert 0 < low <= host["synchronous_step_overhead"] <= high
    for prof in vllm["profile"]:
        assert 0.0 <= prof["prefill"]["prefill_overhead"] < 0.01, prof["gpu"]
        assert "LambdaLabsML/vllm-benchmark" in prof["notes"]
        assert "step_overhead" in prof["notes"]
        assert "Leave-one-GPU-out serving fit" in prof["notes"]


def test_vllm_profiles_of_asynchronous_versions_hold_no_host_time():
    """vLLM schedules asynchronously by default from 0.14.0 on (vllm-project/vllm#27614): the
    host prepares the next step while the GPU runs this one. Every shipped vLLM profile is of
    such a version (0.14.0 on the A100, 0.24.0 elsewhere), so each holds step_overhead 0 and
    says why; the serving stage's fit (to vLLM 0.6.0 rows) is the file's synchronous host
    time, which the loader reads and engine_profile adds for a synchronous version."""
    from rooflinekit.profiles import host_scheduling
    data = _load("vllm")
    host = data["host_scheduling"]
    assert (host["synchronous_from"], host["asynchronous_since"]) == ("0.5.4", "0.14.0")
    assert "vllm-project/vllm#27614" in host["source"]
    loaded = host_scheduling("vllm")
    assert loaded.synchronous_step_overhead == host["synchronous_step_overhead"]
    assert loaded.synchronous_step_overhead_interval == \
        tuple(host["synchronous_step_overhead_interval"])
    for prof in data["profile"]:
        assert not loaded.synchronous(prof["version"]), prof["version"]
        assert prof["decode"]["step_overhead"] == 0.0, prof["gpu"]
        assert prof["interval"]["decode"]["step_overhead"] == [0.0, 0.0], prof["gpu"]
        assert "schedules asynchronously" in prof["notes"], prof["gpu"]
    assert host_scheduling("sglang") is None and host_scheduling("trtllm") is None


def test_fp8_structure_is_where_the_tables_put_it():
    """FP8 GEMMs' longer fixed time and smaller share of their peak, where FP8 was measured.

    Every GPU with FP8 GEMM tables (H100, H200, B200) pays a per-layer FP8 overhead, longer
    under TensorRT-LLM than under vLLM (the tables' fixed part: about 10 us more per FP8 GEMM
    against 2.5-3.3 us); their FP8 GEMMs reach a smaller share of the FP8 peak than the
    compute efficiency of 16-bit ones. A100 has no FP8 tensor cores: no FP8 overhead, and the
    FP8 efficiency is the 16-bit one (``None`` written out).
    """
    fp8 = ("H100-SXM-80GB", "H200-SXM-141GB", "B200")
    by = {(engine, prof["gpu"]): prof for engine, prof in _profiles()}
    for (engine, gpu), prof in by.items():
        if gpu in fp8:
            assert prof["decode"]["low_precision_layer_overhead"] > 0.0, (engine, gpu)
            assert prof["prefill"]["low_precision_compute_efficiency"] < \
                prof["prefill"]["compute_efficiency"], (engine, gpu)
        elif gpu == "A100-SXM-80GB":
            assert prof["decode"]["low_precision_layer_overhead"] == 0.0
            assert prof["prefill"]["low_precision_compute_efficiency"] == \
                prof["prefill"]["compute_efficiency"]
    for gpu in fp8:
        assert by[("trtllm", gpu)]["decode"]["low_precision_layer_overhead"] > \
            by[("vllm", gpu)]["decode"]["low_precision_layer_overhead"], gpu


def test_decode_holds_the_prefill_kernel_knobs():
    """A decode step's GEMMs and all-reduces are a prompt's kernels: the decode phase holds the
    format-blind prefill fit's compute efficiency, GEMM half-efficiency tokens and link share
    (no longer the ideal 1, 0 and 1), each a share in (0, 1] or tokens >= 0."""
    for _, prof in _profiles():
        decode = prof["decode"]
        assert 0.0 < decode["compute_efficiency"] <= 1.0
        assert 0.0 < decode["interconnect_efficiency"] < 1.0
        assert decode["gemm_half_tokens"] >= 0.0
        if prof["gpu"] == "A100-SXM-80GB":
            # bf16 only: both prefill fits are the format-blind one, to the optimiser's tolerance
            for knob in ("compute_efficiency", "gemm_half_tokens", "interconnect_efficiency"):
                assert decode[knob] == pytest.approx(prof["prefill"][knob], rel=1e-4), knob


def _kernel_knobs(prof) -> dict:
    """A vLLM profile's knobs with the serving step overhead taken out (the kernel fit's 0; an
    asynchronous version's profile holds 0 already)."""
    knobs = {phase: dict(prof[phase]) for phase in KNOBS}
    knobs["decode"]["step_overhead"] = 0.0
    return knobs


def test_rederived_serving_overheads_match_the_shipped_ones():
    """The serving stage on the shipped kernel knobs (it sets the step overhead itself; the
    prefill intercept is the kernel fit's and is left alone)."""
    script = _script()
    assert script.SERVING_KNOBS == (("decode", "step_overhead"),)
    data = _load("vllm")
    profiles, host = data["profile"], data["host_scheduling"]
    kernel = {prof["gpu"]: _kernel_knobs(prof) for prof in profiles}
    serving = script.serving_stage(kernel, script.serving_rows(ROOT), log=lambda *a: None)
    assert set(serving["gpus"]) == {"H100-SXM-80GB", "A100-SXM-80GB"}
    assert set(serving["overheads"]) == {"step_overhead"}
    # the fit is the synchronous versions' host time (every profile is of an asynchronous one)
    assert serving["overheads"]["step_overhead"] == pytest.approx(
        host["synchronous_step_overhead"], rel=1e-6)
    assert serving["interval"]["step_overhead"] == pytest.approx(
        host["synchronous_step_overhead_interval"], rel=1e-6)
    # the serving stage does what it is for: TPOT in sample and held out, better than kernels
    # alone; TTFT keeps the kernel intercept, so it is the same both ways
    assert serving["in_sample"]["all"]["serving"][0] < serving["in_sample"]["all"]["kernel"][0]
    assert serving["in_sample"]["all"]["serving"][1] == pytest.approx(
        serving["in_sample"]["all"]["kernel"][1])
    assert set(serving["held_out"]) == set(serving["gpus"])
    for errors in serving["held_out"].values():
        assert errors["serving"][0] < errors["kernel"][0]


def test_the_front_end_time_is_the_scripts_fit():
    """[host_scheduling]'s request_overhead (vLLM up to 0.6.0) is what the script writes: the
    slope of the bursts' first tokens, its interval, and the source the script words."""
    script = _script()
    host = _load("vllm")["host_scheduling"]
    value, (low, high) = script.request_overhead_fit()
    assert host["in_engine_frontend_before"] == script.IN_ENGINE_FRONTEND_BEFORE == "0.6.1"
    assert host["request_overhead"] == round(value, 5)
    assert host["request_overhead_interval"] == [round(low, 5), round(high, 5)]
    assert host["source"] == script.HOST_SCHEDULING_SOURCE.format(**script._frontend_words())


#: How near a re-derived knob must come to the shipped one. A least-squares optimum is the same
#: to the last bits only on the same CPU: on another code path (numpy without AVX2, numba's
#: generic target, OpenBLAS's Nehalem kernels) the vLLM A100's decode gemm_half_tokens came out
#: 81.00320 against the shipped 81.00307 (1.7e-6 of itself), where any change to the tables or
#: the fit moves a knob by orders of magnitude more.
REDERIVED_REL = 1e-5


def _assert_shipped(shipped, knob: str, derived: dict) -> None:
    """A stage's re-derived ``knob`` (its ``value`` and ``interval``) is the shipped profile's,
    in both phases."""
    for phase in ("prefill", "decode"):
        assert shipped[phase][knob] == pytest.approx(derived["value"], rel=1e-9)
        assert shipped["interval"][phase][knob] == pytest.approx(derived["interval"], rel=1e-9)


def test_rederived_knobs_match_the_shipped_ones():
    script = _script_with_tables()
    engine, system = "vllm", "a100_sxm"         # the smallest table set: a few seconds
    shipped = next(p for p in _load(engine)["profile"] if p["gpu"] == script.SYSTEM_TO_GPU[system])
    rows, fp4_rows, version = script.by_format(*script.synthesise(
        engine, system, shipped["version"], dtypes=script.ALL_DTYPES))
    assert version == shipped["version"]
    knobs = script.staged_knobs(script.fit_profile(rows), fp4_rows, engine, system, version)
    serving = {knob for _, knob in script.SERVING_KNOBS}      # set by the serving stage
    assert knobs["decode"]["step_overhead"] == 0.0              # held in the kernel fit
    # vLLM 0.14 has no MoE, MLA module or Gated DeltaNet table on the A100, nor heads of 64
    # in its attention table: its MoE compute share, MLA overhead, prompt-pass knobs and
    # narrow-head share are the median of the GPUs whose tables give them
    pooled = {name: (None, None) for name in ("moe_compute_share", "mla_layer_overhead",
                                              "narrow_head_attention_share", *RECURRENT)}
    for name in pooled:
        own = [p["prefill"][name] for p in _load(engine)["profile"]
               if p["gpu"] != shipped["gpu"] and p["gpu"] in POOLED_FROM[name]]
        pooled[name] = (float(np.median(own)), [min(own), max(own)])
    for phase in KNOBS:
        for name in KNOBS[phase]:
            if name in serving:
                continue
            if name in pooled:
                assert knobs[phase][name] is None
                assert shipped[phase][name] == pytest.approx(pooled[name][0])
                assert shipped["interval"][phase][name] == pytest.approx(pooled[name][1])
                continue
            if name == "mxfp4_moe_compute_share":
                # no MXFP4 rows either: the GPU's own moe_compute_share, written out
                assert knobs[phase][name] is None
                assert shipped[phase][name] == shipped[phase]["moe_compute_share"]
                assert shipped["interval"][phase][name] == \
                    shipped["interval"][phase]["moe_compute_share"]
                continue
            assert knobs[phase][name] == pytest.approx(shipped[phase][name],
                                                       rel=REDERIVED_REL, abs=1e-12)
            assert knobs["interval"][phase][name] == pytest.approx(
                shipped["interval"][phase][name], rel=REDERIVED_REL, abs=1e-12)


def test_a_gpu_left_out_runs_on_its_own_cross_host_latency():
    """Leaving SGLang's GB300 out, the fit of the other GPUs reads no all-reduce past a host,
    and the prediction of the GB300's rows takes its own tables' latency (24.3 us at tp 8, one
    figure its all-reduce microbenchmark gives, as its streaming bandwidth is) in every knob
    set; a GPU whose tables stop at its host (the H100) gets 0. The shipped held-out error is
    that prediction's."""
    script = _script_with_tables()
    rows, _, version = script.by_format(*script.synthesise("sglang", "gb300",
                                                           dtypes=("bf16",)))
    measured = script.cross_host_latency("gb300", "sglang", version)
    assert measured == pytest.approx(24.3e-6, abs=0.05e-6)
    base = rooflinekit.engine_profile("sglang", "H100-SXM-80GB")
    assert base.decode["cross_host_allreduce_latency"] == 0.0
    own = script.with_own_cross_host(base, rows)
    assert own.prefill["cross_host_allreduce_latency"] == \
        own.decode["cross_host_allreduce_latency"] == measured
    assert all(phases[p]["cross_host_allreduce_latency"] == measured
               for phases in own.groups.values() for p in phases)
    h100, _, _ = script.by_format(*script.synthesise("sglang", "h100_sxm", dtypes=("bf16",)))
    assert script.with_own_cross_host(base, h100).decode["cross_host_allreduce_latency"] == 0.0
    gb300 = next(p for p in _load("sglang")["profile"] if p["gpu"] == "GB300")
    assert gb300["held_out_error"] < 10.0


def test_nvfp4_rows_are_synthesised_only_where_the_tables_hold_them():
    """The held-out-by-format check's rows (scripts/engine_profiles.py --diagnose): NVFP4 steps
    from the Blackwell-class tables, none from Hopper's; every decode step reads each NVFP4
    weight once at least, 4 bits and one FP8 scale per 16 (0.5625 B), at no more than the
    datasheet bandwidth."""
    script = _script_with_tables()
    rows, _ = script.synthesise("vllm", "rtx_pro_6000_server", dtypes=("nvfp4",))
    assert rows and {r["dtype"] for r in rows} == {"nvfp4"}
    # Llama-3.1-8B: 8,030,261,248 parameters less the 128,256 × 4,096 input table (Meta's
    # model card); the RTX PRO 6000 Server's 1,597 GB/s (NVIDIA's page)
    floor = (8_030_261_248 - 128_256 * 4_096) * 0.5625 / 1.597e12
    decode = [r["tpot_ms"] * 1e-3 for r in rows
              if r["model"] == "Llama-3.1-8B" and r["tp"] == 1 and "tpot_ms" in r]
    assert decode and min(decode) >= floor
    hopper, _ = script.synthesise("vllm", "h100_sxm", dtypes=("nvfp4",))
    assert hopper == []


def test_the_fp4_stage_falls_back_to_the_low_precision_knobs_without_nvfp4_tables():
    """The A100's tables hold no NVFP4 GEMMs: its FP4 shares are its low-precision ones (and
    those, with no FP8 rows either, its 16-bit ones), values and intervals; a B200's are
    fitted to its NVFP4 rows."""
    stage = {"prefill": ("fp4_compute_efficiency", "low_precision_compute_efficiency"),
             "decode": ("fp4_bandwidth_efficiency", "low_precision_bandwidth_efficiency")}
    for engine in ENGINES:
        for row in _load(engine)["profile"]:
            if row["gpu"] in ("A100-SXM-80GB", "H100-SXM-80GB", "H200-SXM-141GB", "L40S"):
                for phase, (knob, fallback) in stage.items():
                    assert row[phase][knob] == row[phase][fallback], (engine, row["gpu"])
                    assert row["interval"][phase][knob] == row["interval"][phase][fallback]
            elif row["gpu"] == "B200":
                assert row["decode"]["fp4_bandwidth_efficiency"] != \
                    row["decode"]["low_precision_bandwidth_efficiency"]


def test_rederived_moe_overhead_matches_the_shipped_one():
    """The MoE stage re-run on the H200's vLLM tables gives the shipped values and intervals
    (``moe_layer_overhead``, ``moe_compute_share``; where the profiles' extra is installed)."""
    script = _script_with_tables()
    shipped = next(p for p in _load("vllm")["profile"] if p["gpu"] == "H200-SXM-141GB")
    moe = script.moe_layer_overhead("h200_sxm", "vllm", shipped["version"],
                                    shipped["decode"]["bandwidth_efficiency"])
    _assert_shipped(shipped, "moe_layer_overhead", moe)
    assert 3e-5 < moe["value"] < 5e-5 and moe["moe_points"] > 500
    # the compute share of its grouped GEMMs, from the same tables and the shipped knobs
    share = script.moe_compute_share("h200_sxm", "vllm", shipped["version"], shipped,
                                     moe["moe_median"])
    _assert_shipped(shipped, "moe_compute_share", share)
    assert 0.3 < share["value"] < 0.6 and share["points"] > 300
    assert "w4a16_mxfp4" not in share["by_format"]
    # the MXFP4 experts' own share, from the table's W4A16 rows (Hopper has no W4A8 kernel)
    mxfp4 = script.mxfp4_moe_compute_share("h200_sxm", "vllm", shipped["version"], shipped,
                                           moe["moe_median"])
    _assert_shipped(shipped, "mxfp4_moe_compute_share", mxfp4)
    assert 0.4 < mxfp4["value"] < 0.8 and mxfp4["points"] > 30


def test_rederived_mla_overhead_matches_the_shipped_one():
    """The MLA stage re-run on TensorRT-LLM's H200 and vLLM's B200 tables gives the shipped
    values and intervals (``mla_layer_overhead``; where the profiles' extra is installed); the
    vLLM tables timed before the collector's fused-op fix are not read (H200)."""
    script = _script_with_tables()
    for engine, gpu, system in (("trtllm", "H200-SXM-141GB", "h200_sxm"),
                                ("vllm", "B200", "b200_sxm")):
        shipped = next(p for p in _load(engine)["profile"] if p["gpu"] == gpu)
        mla = script.mla_layer_overhead(system, engine, shipped["version"],
                                        shipped["decode"]["bandwidth_efficiency"])
        for phase in ("prefill", "decode"):
            assert shipped[phase]["mla_layer_overhead"] == pytest.approx(mla["value"], rel=1e-9)
            assert shipped["interval"][phase]["mla_layer_overhead"] == pytest.approx(
                mla["interval"], rel=1e-9)
        assert 5e-6 < mla["value"] < 2e-5 and mla["mla_points"] >= 400
    assert script.mla_module_tables("h200_sxm", "vllm", "0.24.0") == []


def test_rederived_recurrent_knobs_match_the_shipped_ones():
    """The Gated DeltaNet stage re-run on SGLang's B300 table gives the shipped knobs and
    intervals (where the profiles' extra is installed); SGLang 0.5.10's A100 table is not read,
    so its profile takes the other GPUs' median."""
    script = _script_with_tables()
    shipped = next(p for p in _load("sglang")["profile"] if p["gpu"] == "B300")
    fitted = script.recurrent_prefill("b300_sxm", "sglang", shipped["version"])
    for phase in ("prefill", "decode"):
        for knob in RECURRENT:
            assert shipped[phase][knob] == pytest.approx(fitted["value"][knob], rel=1e-9)
            assert shipped["interval"][phase][knob] == pytest.approx(
                fitted["interval"][knob], rel=1e-9)
    # about 36 us of launches, a 43 ns chain and 2.3 ns a token and value head of 128 x 128
    assert 2e-5 < fitted["value"]["recurrent_layer_overhead"] < 5e-5
    assert 3e-8 < fitted["value"]["recurrent_chain_time"] < 6e-8
    assert 1.5e-9 < fitted["value"]["recurrent_element_time"] * 128 * 128 < 3.5e-9
    assert fitted["points"] > 1000
    assert script.recurrent_prefill("a100_sxm", "sglang", "0.5.10") is None
    a100 = next(p for p in _load("sglang")["profile"] if p["gpu"] == "A100-SXM-80GB")
    others = [p["prefill"]["recurrent_chain_time"] for p in _load("sglang")["profile"]
              if p["gpu"] != "A100-SXM-80GB"]
    assert a100["prefill"]["recurrent_chain_time"] == pytest.approx(float(np.median(others)))


def test_rederived_attention_efficiency_matches_the_shipped_one():
    """The attention stage re-run on SGLang's B200 context-attention table gives the shipped
    value and interval (``attention_compute_efficiency``; where the profiles' extra is
    installed): 16,384-token prompts, below the GEMMs' share."""
    script = _script_with_tables()
    shipped = next(p for p in _load("sglang")["profile"] if p["gpu"] == "B200")
    attention = script.attention_compute_efficiency("b200_sxm", "sglang", shipped["version"])
    _assert_shipped(shipped, "attention_compute_efficiency", attention)
    assert 0.4 < attention["value"] < shipped["prefill"]["compute_efficiency"]
    assert attention["points"] >= 30


def test_rederived_narrow_head_share_matches_the_shipped_one():
    """The attention stage re-run on TensorRT-LLM's B200 context-attention table gives the
    shipped ``narrow_head_attention_share`` and interval (where the profiles' extra is
    installed): heads of 64 at 0.64-0.66 of the 128-wide heads' share of the peak, from every
    matched pair of rows at 16,384 tokens or more."""
    script = _script_with_tables()
    shipped = next(p for p in _load("trtllm")["profile"] if p["gpu"] == "B200")
    narrow = script.narrow_head_attention_share("b200_sxm", "trtllm", shipped["version"])
    _assert_shipped(shipped, "narrow_head_attention_share", narrow)
    assert 0.6 < narrow["value"] < 0.7
    assert narrow["points"] >= 100


def test_the_narrow_head_stage_reads_the_ratio_of_matched_rows(monkeypatch):
    """A context-attention table whose 64-wide rows take 0.8 of the 128-wide rows' time at the
    same heads, batch and prompt (half the FLOPs) gives a share of 0.5 / 0.8 = 0.625; rows of
    shorter prompts, sliding windows, and rows without a partner are not read; a table whose
    narrow rows are faster than half the FLOPs gives 1, the knob's ceiling; one without
    narrow heads gives None (the pool's to fill)."""
    pd = pytest.importorskip("pandas")
    script = _script()
    rows = []
    for heads, kv in ((32, 8), (64, 8)):
        for isl in (4096, 16384, 32768):
            for batch in (1, 2):
                wide = 1e-9 * heads * batch * isl ** 2
                rows.append({"num_heads": heads, "num_key_value_heads": kv, "batch_size": batch,
                             "isl": isl, "head_dim": 128, "latency": wide,
                             "attn_dtype": "bfloat16", "kv_cache_dtype": "bfloat16",
                             "window_size": 0, "beam_width": 1})
                rows.append({**rows[-1], "head_dim": 64,
                             "latency": 0.8 * wide * (3.0 if isl < 16384 else 1.0)})
                rows.append({**rows[-1], "window_size": 128, "latency": 1e-6})
    rows.append({**rows[0], "num_heads": 16, "head_dim": 64, "isl": 16384, "latency": 1e-6})
    table = pd.DataFrame(rows)
    monkeypatch.setattr(script, "_read", lambda path: table)
    # no tables are read: the stage runs where aiconfigurator-core is not installed
    monkeypatch.setattr(script, "data_root", lambda: Path("unused"))
    got = script.narrow_head_attention_share("s", "e", "v", n_resamples=20)
    assert got["value"] == pytest.approx(0.625, rel=1e-12)
    assert got["interval"] == pytest.approx([0.625, 0.625], rel=1e-12)
    assert got["points"] == 8
    table = pd.DataFrame(rows)
    table.loc[table["head_dim"] == 64, "latency"] *= 0.4
    assert script.narrow_head_attention_share("s", "e", "v", n_resamples=5)["value"] == 1.0
    table = pd.DataFrame(rows)
    table = table[table["head_dim"] == 128]
    assert script.narrow_head_attention_share("s", "e", "v", n_resamples=5) is None


def test_the_moe_compute_share_stage_recovers_a_share_from_exact_blocks(monkeypatch):
    """MoE blocks timed ``max(compute / s, memory) + fixed`` give back ``s``, whatever the
    format (``moe_compute_share``; tests/test_moe_compute_share.py tests the knob)."""
    pd = pytest.importorskip("pandas")
    script = _script()
    knobs = {"prefill": {"compute_efficiency": 0.8, "low_precision_compute_efficiency": 0.6,
                         "gemm_half_tokens": 16.0},
             "decode": {"bandwidth_efficiency": 0.8,
                        "low_precision_bandwidth_efficiency": 0.75}}
    share, fixed = 0.37, 5e-5
    grid = [(fmt, n, 4096, 1536, 8, 128, tp) for fmt in ("bfloat16", "fp8_block", "int4_wo")
            for n in (1, 16, 256, 1024, 4096, 16384) for tp in (1, 2)]
    frame = pd.DataFrame(grid, columns=["moe_dtype", "num_tokens", "hidden_size", "inter_size",
                                        "topk", "num_experts", "moe_tp_size"])
    frame["latency"] = 1.0
    times = script.moe_block_times(frame, knobs, "h100_sxm")
    frame["latency"] = (np.maximum(times["compute"] / share, times["memory"]) + fixed) / 1e-3
    monkeypatch.setattr(script, "_moe_rows", lambda *args: frame)
    result = script.moe_compute_share("h100_sxm", "vllm", "x", knobs, fixed, n_resamples=5)
    assert result["value"] == pytest.approx(share, rel=1e-9)
    assert set(result["by_format"]) == {"bfloat16", "fp8_block", "int4_wo"}


def test_the_mxfp4_share_stage_reads_the_engines_own_mxfp4_kernel(monkeypatch):
    """MXFP4 blocks timed ``max(compute / s, memory) + fixed`` give back ``s`` of the kernel
    the engine serves gpt-oss with where the table holds it: W4A8 (1.3 here, beyond 1 where it
    beats a dense 16-bit GEMM) for TensorRT-LLM, W4A16 (0.3) for vLLM; the other formats'
    rows (at 0.5) move neither share into the other (``mxfp4_moe_compute_share``)."""
    pd = pytest.importorskip("pandas")
    script = _script()
    knobs = {"prefill": {"compute_efficiency": 0.8, "gemm_half_tokens": 16.0},
             "decode": {"bandwidth_efficiency": 0.8}}
    shares, fixed = {"w4a16_mxfp4": 0.3, "w4a8_mxfp4_mxfp8": 1.3, "bfloat16": 0.5}, 5e-5
    grid = [(fmt, n, 2880, 2880, 4, 32, tp) for fmt in shares
            for n in (1, 16, 256, 1024, 4096, 16384) for tp in (1, 2)]
    frame = pd.DataFrame(grid, columns=["moe_dtype", "num_tokens", "hidden_size", "inter_size",
                                        "topk", "num_experts", "moe_tp_size"])
    frame["latency"] = 1.0
    times = script.moe_block_times(frame, knobs, "b200_sxm")
    frame["latency"] = (np.maximum(times["compute"] / frame["moe_dtype"].map(shares),
                                   times["memory"]) + fixed) / 1e-3
    monkeypatch.setattr(script, "_moe_rows", lambda *args: frame)
    mxfp4 = script.mxfp4_moe_compute_share("b200_sxm", "trtllm", "x", knobs, fixed,
                                           n_resamples=5)
    assert mxfp4["value"] == pytest.approx(1.3, rel=1e-9)
    assert mxfp4["interval"] == pytest.approx([1.3, 1.3], rel=1e-9)
    assert script.mxfp4_moe_compute_share("b200_sxm", "vllm", "x", knobs, fixed,
                                          n_resamples=5)["value"] == pytest.approx(0.3, rel=1e-9)
    # without W4A8 rows (Hopper's tables), TensorRT-LLM's is the W4A16 kernel's
    monkeypatch.setattr(script, "_moe_rows", lambda *args: frame[frame["moe_dtype"] !=
                                                                  "w4a8_mxfp4_mxfp8"])
    assert script.mxfp4_moe_compute_share("b200_sxm", "trtllm", "x", knobs, fixed,
                                          n_resamples=5)["value"] == pytest.approx(0.3, rel=1e-9)
    monkeypatch.setattr(script, "_moe_rows", lambda *args: frame)
    other = script.moe_compute_share("b200_sxm", "vllm", "x", knobs, fixed, n_resamples=5)
    assert other["value"] == pytest.approx(0.5, rel=1e-9)
    assert set(other["by_format"]) == {"bfloat16"}
    # the diagnosis times those blocks exactly with the share read, not with another
    monkeypatch.setattr(script, "moe_layer_overhead", lambda *args: {"moe_median": fixed})
    shipped = {"prefill": {**knobs["prefill"], "moe_compute_share": 0.5,
                           "mxfp4_moe_compute_share": mxfp4["value"]},
               "decode": knobs["decode"]}
    errors = script.mxfp4_block_errors("b200_sxm", "trtllm", "x", shipped)
    assert errors["fitted"] == pytest.approx(0.0, abs=1e-9) and errors["moe_share"] > 50.0
    assert errors["rows"] == 2 * 4      # 256 tokens or more, two TP degrees, W4A8 alone
    # a table without MXFP4 rows has no MXFP4 share (the profile writes moe_compute_share)
    monkeypatch.setattr(script, "_moe_rows", lambda *args: frame[frame["moe_dtype"] ==
                                                                  "bfloat16"])
    assert script.mxfp4_moe_compute_share("b200_sxm", "vllm", "x", knobs, fixed) is None
    assert script.mxfp4_block_errors("b200_sxm", "vllm", "x", shipped) is None


def test_the_mla_module_is_deepseek_v3s_config():
    """The MLA check's module (scripts/engine_profiles.py ``MLA_MODULE``) is the shapes of
    DeepSeek-V3's published config.json, the model its tables time."""
    import json
    config = json.loads((Path(__file__).parent / "data" / "hf_configs" / "deepseek-v3.json")
                        .read_text())
    module = _script().MLA_MODULE
    assert module == {"hidden": config["hidden_size"], "q_lora": config["q_lora_rank"],
                      "kv_lora": config["kv_lora_rank"], "rope": config["qk_rope_head_dim"],
                      "nope": config["qk_nope_head_dim"], "v": config["v_head_dim"]}
    model = catalog.model("DeepSeek-V3")
    assert model.prefill_attention_width == (module["nope"] + module["rope"] + module["v"]) / 2


def test_leaving_a_gpu_out_uses_the_clock_only_where_the_catalogue_gives_one(monkeypatch):
    """A GPU with a catalogue boost clock is predicted by the cycles fit of the other clocked
    GPUs; one without (the B300) by the seconds fit of every other GPU; the clocked pools leave
    the clockless GPU out, so adding it moves no other GPU's error."""
    script = _script()
    calls = {}

    def record(train, test, transfer=False, streaming=True):
        calls[test[0]["gpu"]] = ({r["gpu"] for r in train}, transfer)
        return 1.0, 2.0
    monkeypatch.setattr(script, "held_out_errors", record)
    gpus = ("H100-SXM-80GB", "A100-SXM-80GB", "B300")
    assert [bool(catalog.gpu(g).boost_clock) for g in gpus] == [True, True, False]
    rows = [{"gpu": g, "n": i} for g in gpus for i in range(2)]
    assert script.leave_one_gpu_out(rows) == {g: (1.0, 2.0) for g in gpus}
    assert calls == {"H100-SXM-80GB": ({"A100-SXM-80GB"}, True),
                     "A100-SXM-80GB": ({"H100-SXM-80GB"}, True),
                     "B300": ({"H100-SXM-80GB", "A100-SXM-80GB"}, False)}


def test_a_kernel_is_floored_at_its_bytes_read_at_the_streaming_rate():
    """A served step reads each layer's operands from device memory once: a table time below
    bytes / streaming rate (the table's warm-L2 rows) is raised to it, a slower one is kept."""
    script = _script()

    def table(m, n, k):
        return 1e-6                               # one microsecond at every size

    gemm = script.Streamed(table, lambda m, n, k: n * k * 2.0, 1e12)
    # 4096 × 4096 bf16 = 33.6 MB at 1 TB/s: 33.6 us, not the table's 1 us
    assert gemm(1, 4096, 4096) == pytest.approx(4096 * 4096 * 2.0 / 1e12, rel=1e-15)
    # 128 × 128 bf16 = 32.8 kB: 0.03 us at 1 TB/s, under the table's 1 us, which stands
    assert gemm(1, 128, 128) == 1e-6
    attention = script.Streamed(lambda b, c: 5e-6, lambda b, c: b * c * 4096.0, 2e12)
    assert attention(1, 128) == 5e-6                   # 0.5 MB / 2 TB/s = 0.26 us < 5 us
    assert attention(8, 1024) == pytest.approx(8 * 1024 * 4096.0 / 2e12, rel=1e-15)



def test_a_kernel_from_device_memory_pays_its_fixed_time_first():
    """The floor is the kernel's fixed time (its table's shortest latency) plus its bytes at
    the streaming rate: a warm-L2 table time of 10 us for 33.6 MB at 1 TB/s with 2 us fixed
    is 2 + 33.6 = 35.6 us; a time above the floor stands."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("scipy")
    script = _script()
    gemm = script.Streamed(lambda m, n, k: 10e-6, lambda m, n, k: n * k * 2.0, 1e12,
                           fixed=2e-6)
    assert gemm(1, 4096, 4096) == pytest.approx(2e-6 + 4096 * 4096 * 2.0 / 1e12, rel=1e-15)
    assert gemm(1, 128, 128) == 10e-6
    # the tables' fixed time: the fastest point's latency (the fastest kernel there)
    rows = pd.DataFrame({"m": [1, 1, 1, 4, 4, 4, 16, 16, 16], "n": [128, 128, 256] * 3,
                         "k": [128, 256, 256] * 3,
                         "latency": [0.003, 0.004, 0.005, 0.003, 0.004, 0.006, 0.004, 0.005,
                                     0.007]})
    rows = pd.concat([rows, pd.DataFrame({"m": [1], "n": [128], "k": [128],
                                          "latency": [0.0025]})])
    table = script.LogGridTable(rows, ("m", "n", "k"), (1.0, 1.0, 1.0))
    assert table.shortest == pytest.approx(2.5e-6, rel=1e-12)


def test_the_streaming_rate_is_read_from_operands_larger_than_any_l2():
    """The median bytes / latency over the points reading at least STREAMING_BYTES (a GEMM's
    of at most STREAMING_ROWS rows), the fastest kernel per point; the L2-sized points, faster
    than the memory can stream, are not read."""
    pd = pytest.importorskip("pandas")
    script = _script()
    big = script.STREAMING_BYTES
    # weights n·k·2 bytes: two big points at 1 and 2 TB/s (a slower kernel at the first),
    # one big point of too many rows, one small point at 10 TB/s (a warm L2)
    rows = pd.DataFrame({
        "m": [1, 1, 4, 64, 1], "n": [big // 2, big // 2, big, big, 1024],
        "k": [1, 1, 1, 1, 1024],
        "latency": [big / 1e12 / 1e-3, 2 * big / 1e12 / 1e-3, 2 * big / 2e12 / 1e-3,
                    2 * big / 1e11 / 1e-3, 1024 * 1024 * 2 / 1e13 / 1e-3]})
    rate = script.streaming_bandwidth(rows, ("m", "n", "k"), lambda m, n, k: n * k * 2.0,
                                      where=lambda m, n, k: m <= script.STREAMING_ROWS)
    assert rate == pytest.approx(1.5e12, rel=1e-12)      # the median of 1 and 2 TB/s
    with pytest.raises(ValueError, match="streaming rate"):
        script.streaming_bandwidth(rows[rows["n"] == 1024], ("m", "n", "k"),
                                   lambda m, n, k: n * k * 2.0)


def test_no_floor_streams_faster_than_the_gpus_pins():
    """A decode attention table whose big points read 2 TB/s on a GPU of 1.5 TB/s (as
    TensorRT-LLM 1.0's A100 table reads 1.3 times the A100's datasheet figure) is floored at
    1.5 TB/s; one below the pins keeps its own rate."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("scipy")
    script = _script()
    per_token = 2 * 8 * 128 * 2.0                      # 8 KV heads of 128 bf16 elements, K and V
    grid = [(b, s) for b in (32, 64) for s in (8192, 16384)]   # 256-512 MiB of KV: past any L2
    rows = pd.DataFrame({"batch_size": [b for b, _ in grid], "step": [s for _, s in grid],
                         "latency": [b * s * per_token / 2e12 / 1e-3 for b, s in grid]})
    assert script._generation_attention(rows, 8, pins=1.5e12).bandwidth == 1.5e12
    assert script._generation_attention(rows, 8, pins=3e12).bandwidth == pytest.approx(
        2e12, rel=1e-12)
    assert script._generation_attention(rows, 8).bandwidth == pytest.approx(2e12, rel=1e-12)


def test_the_catalogue_streaming_figures_are_the_tables_own():
    """Each profiled GPU's catalogue ``streaming_bandwidth_tb_s`` is the median over its
    engines' bf16 GEMM tables of the rate weights of 256 MiB or more stream at, to 0.1 GB/s
    (where the profiles' extra is installed)."""
    script = _script_with_tables()
    for system in script.systems_with_data():
        gpu = catalog.gpu(script.SYSTEM_TO_GPU[system])
        assert gpu.streaming_bandwidth == pytest.approx(
            script.gpu_streaming_bandwidth(system), abs=0.1e9), gpu.name


def test_knobs_fitted_on_the_streaming_bandwidth_are_written_as_datasheet_shares():
    """The A100 streams at 1,570 of its 2,039 GB/s: a fitted 0.9 of what its memory reaches is
    0.9 · 1570 / 2039 of the datasheet figure, intervals alike; a phase without a bandwidth
    efficiency (1) gets the share itself; every other knob is kept."""
    script = _script()
    share = 1570.0 / 2039.0
    knobs = {"prefill": {"compute_efficiency": 0.8},
             "decode": {"bandwidth_efficiency": 0.9, "kv_bandwidth_efficiency": 0.7,
                        "low_precision_bandwidth_efficiency": 0.6,
                        "fp4_bandwidth_efficiency": 0.5, "layer_overhead": 3e-5},
             "interval": {"prefill": {"compute_efficiency": [0.7, 0.9]},
                          "decode": {"bandwidth_efficiency": [0.85, 0.95],
                                     "kv_bandwidth_efficiency": [0.6, 0.8],
                                     "layer_overhead": [2e-5, 4e-5]}}}
    out = script.to_datasheet(knobs, "A100-SXM-80GB")
    assert out["prefill"]["bandwidth_efficiency"] == pytest.approx(share, rel=1e-12)
    assert out["interval"]["prefill"]["bandwidth_efficiency"] == pytest.approx(
        [share, share], rel=1e-12)
    assert out["prefill"]["compute_efficiency"] == 0.8
    assert out["decode"]["bandwidth_efficiency"] == pytest.approx(0.9 * share, rel=1e-12)
    assert out["decode"]["kv_bandwidth_efficiency"] == pytest.approx(0.7 * share, rel=1e-12)
    assert out["decode"]["low_precision_bandwidth_efficiency"] == pytest.approx(0.6 * share,
                                                                               rel=1e-12)
    assert out["decode"]["fp4_bandwidth_efficiency"] == pytest.approx(0.5 * share, rel=1e-12)
    assert out["interval"]["decode"]["kv_bandwidth_efficiency"] == pytest.approx(
        [0.6 * share, 0.8 * share], rel=1e-12)
    assert out["decode"]["layer_overhead"] == 3e-5
    assert out["interval"]["decode"]["layer_overhead"] == [2e-5, 4e-5]
    assert knobs["decode"]["bandwidth_efficiency"] == 0.9          # the input is not changed
    # the fit's GPU: the catalogue's with its streaming figure as the bandwidth
    assert script.fit_gpu("A100-SXM-80GB").hbm_bandwidth == pytest.approx(1.570e12, rel=1e-12)
    assert script.fit_gpu("RTX-4090") == catalog.gpu("RTX-4090")     # none measured: as is
    assert script.to_datasheet(knobs, "RTX-4090") is knobs


def test_a_gemm_tables_throughput_is_its_big_points_upper_decile():
    """Of the points with m, n and k all 4,096 or more (the fastest kernel each), the 90th
    percentile of 2mnk over the latency; smaller points, however fast, are not read."""
    pd = pytest.importorskip("pandas")
    script = _script()
    size = script.GEMM_THROUGHPUT_SIZE
    flops = 2.0 * size**3
    rates = [100e12, 200e12, 300e12, 400e12, 500e12, 600e12, 700e12, 800e12, 900e12, 1000e12,
             1100e12]                               # eleven big shapes, by their k
    rows = pd.DataFrame({
        "m": [size] * 13 + [size // 2], "n": [size] * 13 + [size],
        "k": [size * (1 + i) for i in range(11)] + [size, size, size],
        # a slower kernel at the first point, and a 5 PFLOP/s point with m below the bar
        "latency": [flops * (1 + i) / r / 1e-3 for i, r in enumerate(rates)]
        + [flops / 50e12 / 1e-3, flops / 100e12 / 1e-3, flops / 2 / 5e15 / 1e-3]})
    rows = rows.drop(index=12)
    # numpy's linear quantile of 100..1100 TFLOP/s at 0.9: 100 + 0.9 · 1000 = 1000 TFLOP/s
    assert script.gemm_throughput(rows) == pytest.approx(1000e12, rel=1e-12)
    with pytest.raises(ValueError, match="throughput"):
        script.gemm_throughput(rows[rows["m"] < size])


def test_the_catalogue_gemm_figures_are_the_tables_own():
    """Each profiled GPU's catalogue ``gemm_tflops`` is the median over its engines' bf16 GEMM
    tables of their big points' upper decile, to 0.1 TFLOP/s (where the profiles' extra is
    installed)."""
    script = _script_with_tables()
    for system in script.systems_with_data():
        gpu = catalog.gpu(script.SYSTEM_TO_GPU[system])
        assert gpu.gemm_flops == pytest.approx(script.gpu_gemm_throughput(system),
                                               abs=0.1e12), gpu.name


def test_knobs_fitted_on_the_gemm_throughput_are_written_as_datasheet_shares():
    """The fit's GPUs run at their measured GEMM share over the largest (the A100's 269.4 of
    312 TFLOP/s): the L40S (244.2 of 362.05) at ``s = (244.2 / 362.05) / (269.4 / 312)`` of
    every datasheet peak. A fitted compute efficiency is written times ``s``, intervals
    alike; a phase without one (1) gets ``s`` itself; bandwidth knobs take the streaming
    share (0.7191 of 0.864 TB/s); the A100's compute knobs are kept."""
    script = _script()
    s = (244.2 / 362.05) / (269.4 / 312.0)
    q = 0.7191 / 0.864
    knobs = {"prefill": {"compute_efficiency": 0.8, "attention_compute_efficiency": 0.6},
             "decode": {"bandwidth_efficiency": 0.9, "low_precision_compute_efficiency": 0.7,
                        "fp4_compute_efficiency": 0.5, "layer_overhead": 3e-5},
             "interval": {"prefill": {"compute_efficiency": [0.7, 0.9]}, "decode": {}}}
    out = script.to_datasheet(knobs, "L40S")
    assert out["prefill"]["compute_efficiency"] == pytest.approx(0.8 * s, rel=1e-12)
    assert out["interval"]["prefill"]["compute_efficiency"] == pytest.approx(
        [0.7 * s, 0.9 * s], rel=1e-12)
    assert out["prefill"]["attention_compute_efficiency"] == pytest.approx(0.6 * s, rel=1e-12)
    assert out["decode"]["compute_efficiency"] == pytest.approx(s, rel=1e-12)
    assert out["interval"]["decode"]["compute_efficiency"] == pytest.approx([s, s], rel=1e-12)
    assert out["decode"]["low_precision_compute_efficiency"] == pytest.approx(0.7 * s,
                                                                             rel=1e-12)
    assert out["decode"]["fp4_compute_efficiency"] == pytest.approx(0.5 * s, rel=1e-12)
    assert out["decode"]["bandwidth_efficiency"] == pytest.approx(0.9 * q, rel=1e-12)
    assert out["prefill"]["bandwidth_efficiency"] == pytest.approx(q, rel=1e-12)
    assert out["decode"]["layer_overhead"] == 3e-5
    assert script.to_datasheet(knobs, "A100-SXM-80GB")["prefill"]["compute_efficiency"] == \
        pytest.approx(0.8, rel=1e-12)
    # the fit's GPU: every format's peak times s
    fitted, l40s = script.fit_gpu("L40S"), catalog.gpu("L40S")
    assert fitted.peak_flops == pytest.approx(362.05e12 * s, rel=1e-12)
    assert fitted.flops_for("fp8") == pytest.approx(l40s.flops_for("fp8") * s, rel=1e-12)
    assert script.fit_gpu("A100-SXM-80GB").peak_flops == pytest.approx(312e12, rel=1e-12)


def test_held_out_residuals_break_down_the_leave_one_gpu_out_error():
    """``--residuals``: the same split and error as the leave-one-GPU-out column, and each
    key's groups partition the rows (their size-weighted errors add up to the whole)."""
    script = _script_with_tables()
    rows = [r for system in ("a100_sxm", "l40s")
            for r in script.by_format(*script.synthesise("vllm", system,
                                                         dtypes=script.ALL_DTYPES))[0]]
    gpu = script.SYSTEM_TO_GPU["l40s"]
    found = script.held_out_residuals(rows, gpu)
    tpot, _ = script.leave_one_gpu_out(rows)[gpu]
    assert found["all"][1] == pytest.approx(tpot, rel=1e-9)
    decode = [r for r in rows if r["gpu"] == gpu and "tpot_ms" in r]
    for key in script.RESIDUAL_KEYS:
        sizes = {v: sum(r[key] == v for r in decode) for v in found[key]}
        assert sum(sizes.values()) == len(decode)
        for part in (0, 1):
            whole = sum(sizes[v] * found[key][v][part] for v in sizes) / len(decode)
            assert whole == pytest.approx(found["all"][part], rel=1e-9, abs=1e-9)


def test_the_cross_host_latency_is_read_from_the_allreduce_tables():
    """Where aiconfigurator-core is installed: ``scripts/engine_profiles.py`` re-derives each
    engine's value from its all-reduce tables (the median extra time at eight GPUs over four,
    messages up to 32,768 elements), and a table that stops at the host gives none."""
    script = _script_with_tables()
    shipped = {engine: rooflinekit.engine_profile(engine, "GB300").decode[
        "cross_host_allreduce_latency"]
               for engine in ("sglang", "vllm", "trtllm")}
    assert script.cross_host_latency("gb300", "sglang", "0.5.14") == shipped["sglang"]
    assert script.newest_cross_host_latency("vllm") == (shipped["vllm"],
                                                         "gb300 comm/vllm/0.27.0")
    assert script.cross_host_latency("gb300", "trtllm", "1.3.0rc20") == shipped["trtllm"] == 0
    assert script.cross_host_latency("gb300", "vllm", "0.24.0") is None     # stops at four
    assert script.cross_host_latency("b200_sxm", "sglang", "0.5.14") is None   # no host_gpus


def test_the_attention_share_of_the_low_precision_layer_time_is_the_tables():
    """``ATTENTION_LOW_PRECISION_SHARE`` re-derived from every newest FP8 GEMM table (where
    the profiles' extra is installed): the median share, to two decimals."""
    from rooflinekit.roofline.engine import ATTENTION_LOW_PRECISION_SHARE
    script = _script_with_tables()
    assert script.attention_low_precision_share() == pytest.approx(
        ATTENTION_LOW_PRECISION_SHARE, abs=5e-3)
