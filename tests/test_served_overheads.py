"""SGLang's served overheads (``scripts/fit_served_overheads.py``).

The SGLang profiles' kernel knobs come from kernel tables, a floor under a served engine; one
``step_overhead`` and one ``frontend_latency`` for every GPU are fitted afterwards with the
simulator replaying SGLang's published load sweeps. Checked here: the closed-form front end is the
least-squares minimum (a brute-force grid written from its definition), the shipped values are
the script's fit, writing is idempotent, and each source held out is predicted better than by
the kernel floor (TPOT, the quantity the step overhead is for).
"""

import shutil

import numpy as np
import pytest

import rooflinekit as rk

from helpers import load_script

GPUS = ("H100-SXM-80GB", "H200-SXM-141GB", "A100-SXM-80GB", "B200", "L40S")


def _script():
    return load_script("fit_served_overheads")


def _sglang_sweeps(script):
    scorer = load_script("score_load_sweeps")
    return {n: p for n, p in scorer.read_sweeps().items() if p[0]["engine"] == "sglang"}


def test_the_closed_form_front_end_is_the_least_squares_minimum():
    frontend = _script().frontend
    rows = [{"source": "a", "what": "ttft", "measured": 50.0, "predicted": 30.0},
            {"source": "a", "what": "ttft", "measured": 80.0, "predicted": 70.0},
            {"source": "a", "what": "tpot", "measured": 9.0, "predicted": 5.0},   # not a TTFT
            {"source": "b", "what": "ttft", "measured": 120.0, "predicted": 100.0}]
    grid = np.linspace(0.0, 100.0, 100_001)
    ttft = [r for r in rows if r["what"] == "ttft"]
    loss = sum((1 / (2 if r["source"] == "a" else 1))
               * ((r["predicted"] + grid - r["measured"]) / r["measured"]) ** 2 for r in ttft)
    assert frontend(rows) == pytest.approx(grid[np.argmin(loss)], abs=2e-3)
    # a front end cannot give time back
    assert frontend([{"source": "a", "what": "ttft", "measured": 5.0, "predicted": 8.0}]) == 0.0


def test_the_shipped_values_are_the_script_fit():
    script = _script()
    step, front = script.fit(_sglang_sweeps(script), "sglang")
    for gpu in GPUS:
        profile = rk.engine_profile("sglang", gpu)
        assert profile.decode["step_overhead"] == pytest.approx(step, rel=1e-3)
        assert profile.prefill["frontend_latency"] == pytest.approx(front, rel=1e-3)


def test_each_source_held_out_is_predicted_better_than_the_kernel_floor():
    script = _script()
    full, rows = script.held_out(_sglang_sweeps(script), "sglang")
    assert {r["source"] for r in rows} == {"sgl-project/sgl-cookbook",
                                           "SemiAnalysisAI/InferenceX"}
    for r in rows:
        assert r["held_out"]["tpot"] < r["floor"]["tpot"], r["source"]
        assert r["held_out"]["saturation"] < r["floor"]["saturation"], r["source"]
    # the shipped interval is the range of the fits
    profile = rk.engine_profile("sglang", "B200")
    low, high = profile.intervals["decode"]["step_overhead"]
    steps = [full[0]] + [r["step_overhead"] for r in rows]
    assert low == pytest.approx(min(steps), rel=1e-3)
    assert high == pytest.approx(max(steps), rel=1e-3)


def test_writing_the_fit_is_idempotent(tmp_path):
    script = _script()
    path = tmp_path / "sglang.toml"
    shutil.copy(script.PROFILES / "sglang.toml", path)
    rows = [{"source": "s", "sweeps": 2, "step_overhead": 0.004, "frontend_latency": 0.1,
             "floor": {"tpot": 30.0, "ttft": 60.0, "saturation": 50.0},
             "held_out": {"tpot": 10.0, "ttft": 40.0, "saturation": 20.0}}]
    script.write("sglang", (0.005, 0.12), rows, path)
    once = path.read_text()
    script.write("sglang", (0.005, 0.12), rows, path)
    assert path.read_text() == once
    assert once.count("# Stage 2, served") == 1
    assert "a floor (a lower bound)" not in once
    from rooflinekit.profiles.shipped import read_profile_file
    name, profiles = read_profile_file(path)
    assert name == "sglang"
    for p in profiles:
        assert p["calibration"].decode["step_overhead"] == 0.005
        assert p["calibration"].prefill["frontend_latency"] == 0.12
