"""SGLang's served overheads (``scripts/fit_served_overheads.py``).

The SGLang profiles' kernel knobs come from kernel tables, a floor under a served engine; one
``step_overhead``, one ``prefill_overhead`` and one ``frontend_latency`` for every GPU are
fitted afterwards with the simulator replaying SGLang's published load sweeps. Checked here: the
closed-form front end is the least-squares minimum (a brute-force grid written from its
definition); the shipped values are the script's optimum (no move of a searched knob lowers its
objective, and the front end is the closed form there); writing is idempotent; and a fit that
never saw the SGLang cookbook predicts it better than the kernel floor.
"""

import shutil

import numpy as np
import pytest

import rooflinekit as rk

from helpers import load_script

GPUS = ("H100-SXM-80GB", "H200-SXM-141GB", "A100-SXM-80GB", "B200", "L40S")


def _script():
    return load_script("fit_served_overheads")


def _sglang_sweeps():
    scorer = load_script("score_load_sweeps")
    return {n: p for n, p in scorer.fitted_sweeps(scorer.read_sweeps()).items()
            if p[0]["engine"] == "sglang"}


def test_the_closed_form_front_end_is_the_least_squares_minimum():
    frontend = _script().frontend
    rows = [{"source": "a", "what": "ttft_fit", "measured": 50.0, "predicted": 30.0},
            {"source": "a", "what": "ttft_fit", "measured": 80.0, "predicted": 70.0},
            {"source": "a", "what": "tpot", "measured": 9.0, "predicted": 5.0},   # not a TTFT
            {"source": "a", "what": "ttft", "measured": 900.0, "predicted": 1.0},  # scored only
            {"source": "b", "what": "ttft_fit", "measured": 120.0, "predicted": 100.0}]
    grid = np.linspace(0.0, 100.0, 100_001)
    ttft = [r for r in rows if r["what"] == "ttft_fit"]
    loss = sum((1 / (2 if r["source"] == "a" else 1))
               * ((r["predicted"] + grid - r["measured"]) / r["measured"]) ** 2 for r in ttft)
    assert frontend(rows) == pytest.approx(grid[np.argmin(loss)], abs=2e-3)
    # a front end cannot give time back
    assert frontend([{"source": "a", "what": "ttft_fit", "measured": 5.0,
                      "predicted": 8.0}]) == 0.0


def test_the_fit_weighs_the_median_ttft_where_published():
    """A point that publishes a median TTFT enters the fit by it (against the simulated
    median) and is scored by its mean; one without, by its mean in both. InferenceX's
    TensorRT-LLM client sent no warm-up requests, and its mean TTFT holds the server's start:
    2.6 to 5 times the median at concurrency 4 to 64 (the data's own ratio, read here)."""
    script = _script()
    scorer = load_script("score_load_sweeps")
    sweeps = scorer.read_sweeps()
    trt = sweeps["inferencex_h200x8_deepseek-r1_fp8_trtllm1.1.0rc2.post2_tp8ep8_random1k1k_conc"]
    ratios = [p["mean_ttft_ms"] / p["median_ttft_ms"] for p in trt]
    assert 2.5 < min(ratios) and max(ratios) < 5.5
    name = "cookbook_b200x8_qwen3-235b-a22b_tp8_random1k1k_conc"
    rows = script.simulate({name: sweeps[name]}, "sglang", None, replicates=1, requests=60)
    fit = [r for r in rows if r["what"] == "ttft_fit"]
    mean = [r for r in rows if r["what"] == "ttft"]
    below = scorer.below_saturation(sweeps[name])
    assert [r["measured"] for r in fit] == [p["median_ttft_ms"] for p in below]
    assert [r["measured"] for r in mean] == [p["mean_ttft_ms"] for p in below]
    assert all(r["median"] for r in fit)
    nim = "nim_h100x2_llama3.3-70b_fp8_tp2_5000in_500out"      # publishes means only
    rows = script.simulate({nim: sweeps[nim]}, "trtllm", None, replicates=1, requests=60)
    fit = [r for r in rows if r["what"] == "ttft_fit"]
    mean = [r for r in rows if r["what"] == "ttft"]
    assert [(r["measured"], r["predicted"]) for r in fit] == \
        [(r["measured"], r["predicted"]) for r in mean]
    assert not any(r["median"] for r in fit)


def test_the_shipped_values_are_the_script_optimum():
    """Every profile ships the same knobs; moving either searched knob by a fifth either way
    does not lower the fit's objective, and the front end is the closed form at them."""
    script = _script()
    sweeps = _sglang_sweeps()
    shipped = rk.engine_profile("sglang", "B200")
    knobs = {"step_overhead": shipped.decode["step_overhead"],
             "prefill_overhead": shipped.prefill["prefill_overhead"]}
    for gpu in GPUS:
        profile = rk.engine_profile("sglang", gpu)
        assert profile.decode["step_overhead"] == knobs["step_overhead"]
        assert profile.prefill["prefill_overhead"] == knobs["prefill_overhead"]
        assert profile.prefill["frontend_latency"] == shipped.prefill["frontend_latency"]
    rows = script.simulate(sweeps, "sglang", knobs)
    assert script.frontend(rows) / 1e3 == pytest.approx(shipped.prefill["frontend_latency"],
                                                        rel=1e-6)
    best = script.cost(rows, script.frontend(rows))
    for name in script.SEARCHED["sglang"]:
        for factor in (0.8, 1.25):
            moved = script.objective(sweeps, "sglang", {**knobs, name: knobs[name] * factor})
            assert moved >= best, (name, factor)


def _held_out_cookbook(script, sweeps, fitted_on):
    """The cookbook's scores by the kernel floor and by a fit to the sweeps ``fitted_on``,
    and that fit's knobs."""
    cookbook = script.groups(sweeps)["sgl-project/sgl-cookbook"]
    knobs = script.fit(fitted_on, "sglang")
    floor = script.scores(script.simulate(cookbook, "sglang", None), 0.0)
    held = script.scores(script.simulate(cookbook, "sglang",
                                         {k: knobs[k] for k in script.SEARCHED["sglang"]}),
                         knobs["frontend_latency"] * 1e3)
    return floor, held, knobs


def test_a_fit_to_one_sweep_predicts_the_cookbook_better_than_the_kernel_floor():
    """Held out by source: fitted on InferenceX's SGLang 0.5.7 sweep alone, scored on the
    SGLang cookbook's eight sweeps (other models, GPUs and clients). TPOT and saturation
    improve on the floor and meet the issue's held-out targets (15 %, ±15 %): 10.2 % and
    10.9 % since the closed loops start their clients together as the benchmark does (9 % and
    8 % started apart, when this bound was 10 %); the TTFT does not transfer from one sweep,
    which the docs say."""
    script = _script()
    sweeps = _sglang_sweeps()
    one = "inferencex_h200x8_deepseek-r1_fp8_tp8_random1k1k_conc"
    floor, held, _ = _held_out_cookbook(script, sweeps, {one: sweeps[one]})
    assert held["tpot"] < 15 < floor["tpot"]
    assert held["saturation"] < 15 < floor["saturation"]


def test_a_fit_without_the_cookbook_meets_its_tpot_and_saturation_targets():
    """The script's own hold-out: fitted on InferenceX's three SGLang sweeps (0.5.7 and
    0.5.12), the cookbook's TPOT and saturation within the issue's held-out targets (15 %,
    ±15 %) and better than the floor; the interval the profiles ship holds this fit."""
    script = _script()
    sweeps = _sglang_sweeps()
    floor, held, knobs = _held_out_cookbook(
        script, sweeps, script.groups(sweeps)["SemiAnalysisAI/InferenceX"])
    assert held["tpot"] < 15 < floor["tpot"]
    assert held["saturation"] < 15 < floor["saturation"]
    profile = rk.engine_profile("sglang", "B200")
    for name in script.SEARCHED["sglang"]:
        phase = "decode" if name == "step_overhead" else "prefill"
        low, high = profile.intervals[phase][name]
        assert low * (1 - 1e-6) <= knobs[name] <= high * (1 + 1e-6), name


def test_writing_the_fit_is_idempotent(tmp_path):
    script = _script()
    path = tmp_path / "sglang.toml"
    shutil.copy(script.PROFILES / "sglang.toml", path)
    full = {"step_overhead": 0.005, "prefill_overhead": 0.05, "frontend_latency": 0.12}
    rows = [{"source": "s", "sweeps": 2,
             "knobs": {"step_overhead": 0.004, "prefill_overhead": 0.06,
                       "frontend_latency": 0.1},
             "floor": {"tpot": 30.0, "ttft": 60.0, "saturation": 50.0},
             "held_out": {"tpot": 10.0, "ttft": 40.0, "saturation": 20.0}}]
    script.write("sglang", full, rows, path)
    once = path.read_text()
    script.write("sglang", full, rows, path)
    assert path.read_text() == once
    assert once.count("# Stage 2, served") == 1
    assert "a floor (a lower bound)" not in once
    assert 'notes = "Served overheads' in once
    from rooflinekit.profiles.shipped import read_profile_file
    name, profiles = read_profile_file(path)
    assert name == "sglang"
    for p in profiles:
        cal = p["calibration"]
        assert cal.decode["step_overhead"] == 0.005
        assert cal.prefill["prefill_overhead"] == 0.05
        assert cal.prefill["frontend_latency"] == 0.12
        assert tuple(cal.intervals["prefill"]["prefill_overhead"]) == (0.05, 0.06)


def test_vllm_host_time_per_sequence_slows_decode_with_the_batch():
    """vLLM's searched knobs: the floor drops the profile's step overhead; a host time per
    decode token lengthens TPOT by more at a larger batch (dennislee22's A100 burst, 10 to 200
    prompts at once), by about the sequences decoding times the knob."""
    script = _script()
    assert script.SEARCHED["vllm"] == ("step_overhead", "sequence_overhead")
    assert "vllm" not in script.WRITTEN
    scorer = load_script("score_load_sweeps")
    sweep = "dennislee_a100_qwen2-7b_tp1_1024in_1024out_burst"
    sweeps = {sweep: scorer.read_sweeps()[sweep]}
    floor = script.engine_at("vllm", "A100-SXM-80GB")
    assert floor.decode["step_overhead"] == 0.0 and floor.decode["sequence_overhead"] == 0.0
    assert "frontend_latency" not in floor.prefill
    host = 1e-4
    before, after = ([r for r in script.simulate(sweeps, "vllm", k, replicates=1)
                      if r["what"] == "tpot"]
                     for k in (None, {"step_overhead": 0.0, "sequence_overhead": host}))
    added = [a["predicted"] - b["predicted"] for a, b in zip(after, before)]
    assert all(x > 0 for x in added) and added[-1] > 3 * added[0]
    # 10 prompts at once: at most 10 decoding, at least one → between 0.1 and 1 ms a token
    assert host * 1e3 * 1 <= added[0] <= host * 1e3 * 10


def test_vllm_fits_are_printed_not_written():
    script = _script()
    with pytest.raises(SystemExit):
        script.main(["--engine", "vllm", "--write"])
    with pytest.raises(SystemExit):
        script.main(["--engine", "sglang", "--source", "SemiAnalysisAI/InferenceX", "--write"])


def _trtllm_sweeps(script, table=True):
    """TensorRT-LLM's served sweeps (NIM and InferenceX's DeepSeek-R1 servers), and with
    ``table`` its throughput table's runs, as the script fits them."""
    scorer = load_script("score_load_sweeps")
    sweeps = {n: p for n, p in scorer.fitted_sweeps(scorer.read_sweeps()).items()
              if scorer.PROFILE_OF_ENGINE[p[0]["engine"]] == "trtllm"}
    return {**sweeps, **(script.saturation_runs("trtllm") if table else {})}


def test_the_tensorrt_llm_overheads_are_the_script_optimum():
    """TensorRT-LLM's profiles ship one host time per running sequence and one front end, fitted
    to its two served sources and its own throughput table (70 runs, weighing as one source):
    every GPU the same; moving the searched knob by a fifth either way does not lower the
    fit's objective; the front end is the closed form there."""
    script = _script()
    assert script.SEARCHED["trtllm"] == ("sequence_overhead",)
    sweeps = _trtllm_sweeps(script)
    assert sum(1 for p in sweeps.values() if p[0].get("saturation_run")) == 70
    shipped = rk.engine_profile("trtllm", "B200")
    knobs = {"sequence_overhead": shipped.decode["sequence_overhead"]}
    for gpu in ("H100-SXM-80GB", "H200-SXM-141GB", "A100-SXM-80GB", "L40S"):
        profile = rk.engine_profile("trtllm", gpu)
        assert profile.decode["sequence_overhead"] == knobs["sequence_overhead"]
        assert profile.prefill["frontend_latency"] == shipped.prefill["frontend_latency"]
    cache = {}
    rows = script.simulate(sweeps, "trtllm", knobs, cache=cache)
    assert script.frontend(rows) / 1e3 == pytest.approx(shipped.prefill["frontend_latency"],
                                                        rel=1e-6)
    best = script.cost(rows, script.frontend(rows))
    for factor in (0.8, 1.25):
        moved = {"sequence_overhead": knobs["sequence_overhead"] * factor}
        assert script.objective(sweeps, "trtllm", moved, cache=cache) >= best, factor


def test_a_fit_without_the_throughput_table_predicts_it_better_than_the_floor():
    """Held out whole: fitted on the two served sources alone, the host time per sequence is
    the low end of the interval the profiles ship (15 µs), and it halves the table's mean
    absolute saturation error (the kernel floor's 39 %, 18 % held out, short of the issue's
    ±15 %); each served source's TTFT, fitted without it, beats the floor's (the front end
    transfers)."""
    script = _script()
    sweeps = _trtllm_sweeps(script, table=False)
    full, rows = script.held_out(sweeps, "trtllm")
    low, high = rk.engine_profile("trtllm", "B200").intervals["decode"]["sequence_overhead"]
    assert full["sequence_overhead"] == pytest.approx(low, rel=1e-9) and low < high
    assert {r["source"] for r in rows} == {"docs.nvidia.com", "SemiAnalysisAI/InferenceX-app"}
    for r in rows:
        assert r["held_out"]["ttft"] < r["floor"]["ttft"], r["source"]
    table = script.saturation_runs("trtllm")
    floor = script.scores(script.simulate(table, "trtllm", None), 0.0)["saturation"]
    held = script.scores(script.simulate(table, "trtllm", script._searched(full)),
                         0.0)["saturation"]
    assert held < floor / 2


def test_other_knobs_are_printed_not_written(capsys):
    """``--knobs`` searches other knobs than the engine's own, and is never written."""
    script = _script()
    with pytest.raises(SystemExit):
        script.main(["--engine", "trtllm", "--knobs", "step_overhead", "--write"])
    assert "only printed" in capsys.readouterr().err
