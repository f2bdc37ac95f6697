"""``Engine.frontend_latency``: the serving front end's time outside the engine's steps.

It adds to what a client measures (TTFT, end-to-end latency) and to nothing the GPU does (a step,
the queue, the throughput). The shipped vLLM profiles carry one value fitted to the published
load sweeps by ``scripts/fit_frontend_latency.py``; the closed form that script uses is checked
here against a brute-force minimisation written from its definition.
"""

import shutil

import numpy as np
import pytest

import rooflinekit as rk
from rooflinekit import catalog
from rooflinekit.planning import SLO, Traffic, load_curve
from rooflinekit.workloads import Constant

from helpers import load_script

MODEL, GPU = catalog.model("Llama-3.1-8B"), catalog.gpu("H100-SXM-80GB")


def _script():
    return load_script("fit_frontend_latency")


def test_ttft_formula_adds_the_front_end_to_the_prefill():
    engine = rk.Engine(compute_efficiency=0.7, frontend_latency=0.015)
    prefill = float(rk.prefill_time(MODEL, GPU, 2000, engine=engine))
    assert float(rk.time_to_first_token(MODEL, GPU, 2000, engine=engine)) == \
        pytest.approx(prefill + 0.015, rel=1e-12)
    # the ideal engine has none: the TTFT is the prefill, to the bit
    assert float(rk.time_to_first_token(MODEL, GPU, 2000)) == float(rk.prefill_time(MODEL, GPU,
                                                                                    2000))
    # once per request, not per step: the end-to-end latency moves by the same seconds
    with_it = float(rk.request_latency(MODEL, GPU, 2000, 50, engine=engine))
    without = float(rk.request_latency(MODEL, GPU, 2000, 50,
                                       engine=engine.replace(frontend_latency=0.0)))
    assert with_it - without == pytest.approx(0.015, rel=1e-9)
    # and no step: a decode step is the same
    assert float(rk.decode_step_time(MODEL, GPU, 8, 1000, engine=engine)) == \
        float(rk.decode_step_time(MODEL, GPU, 8, 1000, engine=engine.replace(frontend_latency=0)))


def test_ttft_formula_keeps_the_input_type():
    engine = rk.Engine(frontend_latency=0.01)
    prompts = np.array([100, 1000])
    out = rk.time_to_first_token(MODEL, GPU, prompts, engine=engine)
    assert isinstance(out, np.ndarray) and out.shape == (2,)
    import xarray as xr
    labelled = rk.time_to_first_token(MODEL, GPU, xr.DataArray(prompts, dims="prompt_tokens"),
                                      engine=engine)
    assert labelled.attrs["units"] == "s" and labelled.dims == ("prompt_tokens",)


@pytest.mark.parametrize("value", [-0.001, float("nan"), float("inf")])
def test_a_bad_front_end_latency_is_refused_naming_the_field(value):
    with pytest.raises(ValueError, match="frontend_latency"):
        rk.Engine(frontend_latency=value)


def test_the_simulator_moves_every_ttft_and_no_step():
    """Open loop: the front end delays what the client sees by L, so mean and median TTFT and
    the mean latency move by exactly L, and the TPOT, ITL and throughput not at all."""
    engine = rk.Engine(compute_efficiency=0.8, step_overhead=1e-3)
    traffic = Traffic(1.0, Constant(800), Constant(120))
    common = dict(model=MODEL, gpu=GPU, rates=[2.0, 12.0], replicates=2, requests=200, seed=3)
    a = load_curve(traffic, SLO(ttft=1.0), engine=engine, **common)
    b = load_curve(traffic, SLO(ttft=1.0), engine=engine.replace(frontend_latency=0.025),
                   **common)
    for name in ("mean_ttft", "p50_ttft", "p99_ttft", "mean_latency"):
        np.testing.assert_allclose(b[name] - a[name], 0.025, rtol=0, atol=1e-12)
    for name in ("mean_tpot", "mean_token_itl", "throughput", "request_throughput"):
        np.testing.assert_array_equal(b[name], a[name])


def test_a_profile_engine_carries_its_front_end_in_the_prefill_and_the_step():
    profile = rk.engine_profile("vllm", "H100-SXM-80GB")
    value = profile.prefill["frontend_latency"]
    assert 0 < value < 0.1
    assert profile.engine_for("prefill").frontend_latency == value
    assert profile.engine_for("step").frontend_latency == value
    assert profile.engine_for("decode").frontend_latency == 0.0


def test_the_closed_form_fit_is_the_least_squares_minimum():
    """Σ w ((p + L − m) / m)², sources weighed alike, minimised on a fine grid from scratch."""
    fit = _script().fit
    points = [{"source": "a", "measured": 0.050, "predicted": 0.030},
              {"source": "a", "measured": 0.080, "predicted": 0.070},
              {"source": "a", "measured": 0.400, "predicted": 0.350},
              {"source": "b", "measured": 0.120, "predicted": 0.100}]
    grid = np.linspace(0.0, 0.1, 100_001)
    loss = sum((1 / (3 if p["source"] == "a" else 1))
               * ((p["predicted"] + grid - p["measured"]) / p["measured"]) ** 2 for p in points)
    assert fit(points) == pytest.approx(grid[np.argmin(loss)], abs=2e-6)
    # a front end cannot give time back: predictions already too slow fit 0
    assert fit([{"source": "a", "measured": 0.05, "predicted": 0.08}]) == 0.0
    with pytest.raises(ValueError, match="no points"):
        fit([])


def test_writing_the_fit_is_idempotent(tmp_path):
    script = _script()
    path = tmp_path / "vllm.toml"
    shutil.copy(script.VLLM_TOML, path)
    rows = [{"source": "s", "before": 30.0, "held_out": 10.0}]
    script.write(0.0123, 0.011, 0.014, rows, path)
    once = path.read_text()
    script.write(0.0123, 0.011, 0.014, rows, path)
    assert path.read_text() == once
    from rooflinekit.profiles.shipped import read_profile_file
    name, profiles = read_profile_file(path)
    assert name == "vllm" and all(p["calibration"].prefill["frontend_latency"] == 0.0123
                                  for p in profiles)
    assert once.count("# Stage 3, under load") == 1


def test_the_shipped_value_is_the_script_fit():
    """Regenerating the fit from the sweeps gives the value every vLLM profile ships: vLLM's
    sweeps on GPUs with a vLLM profile of their own through the completions endpoint (the RTX
    4090's and GPUStack's chat-endpoint sweep are held out)."""
    script = _script()
    points = script.ttft_points()
    trained = [p for p in points if script.fitted(p)]
    assert {p["source"] for p in points if p["engine"] == "vllm"} - \
        {p["source"] for p in trained} == {"mushfiqrahman.dev", "gpustack/gpustack"}
    assert {p["endpoint"] for p in points if p["source"] == "gpustack/gpustack"} == {"chat"}
    value = script.fit(trained)
    for gpu in ("H100-SXM-80GB", "H200-SXM-141GB", "A100-SXM-80GB"):
        assert rk.engine_profile("vllm", gpu).prefill["frontend_latency"] == \
            pytest.approx(value, rel=1e-9)


def test_every_knob_is_drawn_once_and_old_draws_do_not_move():
    """Each knob sits in one draw block; the first block is the knobs as first listed, so a knob
    added later (the front end) leaves every other knob's draw as it was."""
    from rooflinekit.profiles import KNOBS
    from rooflinekit.profiles.calibration import DRAW_BLOCKS
    flat = [k for block in DRAW_BLOCKS for k in block]
    assert sorted(flat) == sorted(KNOBS) and len(flat) == len(set(flat))
    profile = rk.engine_profile("vllm", "H100-SXM-80GB")
    drawn = profile.draw(seed=3)
    first = np.random.default_rng(3).standard_normal((2, len(DRAW_BLOCKS[0])))
    z = first[1, DRAW_BLOCKS[0].index("bandwidth_efficiency")]      # decode is the second phase
    low, high = profile.intervals["decode"]["bandwidth_efficiency"]
    value = profile.decode["bandwidth_efficiency"]
    from statistics import NormalDist
    z_c = NormalDist().inv_cdf((1 + profile.interval_confidence) / 2)
    expected = value + z * ((high - value) if z >= 0 else (value - low)) / z_c
    assert drawn.decode["bandwidth_efficiency"] == pytest.approx(min(max(expected, 1e-3), 1.0),
                                                                  rel=1e-12)


def test_calibrate_recovers_a_front_end_from_isolated_ttft_rows():
    """Single-prompt TTFT rows at several lengths: the slope is the compute, the intercept the
    front end (the step's own prefill_overhead held at 0 here, as both are intercepts)."""
    from rooflinekit.calibrate import calibrate, measurements_from_records
    truth = rk.Engine(compute_efficiency=0.7, frontend_latency=0.015)
    rows = [{"model": "llama-3.1-8b", "gpu": "h100", "tp": 1, "batch_size": 1,
             "prompt_tokens": p, "output_tokens": 1, "context_length": 0,
             "ttft_ms": 1e3 * float(rk.time_to_first_token(MODEL, GPU, p, engine=truth)),
             "tpot_ms": None, "source": "synthetic"} for p in (128, 512, 2048, 8192, 16384)]
    result = calibrate(measurements_from_records(rows), phases="prefill",
                       fit={"prefill": ["compute_efficiency", "frontend_latency"]},
                       n_resamples=0)
    assert result.calibration.prefill["frontend_latency"] == pytest.approx(0.015, rel=1e-3)
    assert result.calibration.prefill["compute_efficiency"] == pytest.approx(0.7, rel=1e-3)
