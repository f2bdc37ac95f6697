"""``fit_under_load``: an engine profile refitted to runs at several rates, simulator in the loop.

The recovery test is a closed loop written from first principles: runs simulated with known
overheads (a profile whose step_overhead and prefill_overhead are replaced) are fitted from the
profile as shipped, and the known values come back within the Monte Carlo noise of other seeds.
"""

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

import rooflinekit as rk
from rooflinekit.planning import load_curve
from rooflinekit.planning import LOAD_KNOBS, fit_under_load
from rooflinekit.profiles import Calibration
from rooflinekit.workloads import Constant, Empirical

from helpers import read_sharegpt_sample

MODEL, GPU = "Llama-3.1-8B", "H100-SXM-80GB"
DOKS = [f"tests/data/load_sweeps/doks/rate-{r}.json" for r in ("0.5", "2.0")]


def _truth(step_overhead, prefill_overhead):
    base = rk.engine_profile("vllm", GPU)
    return Calibration(prefill={**base.prefill, "prefill_overhead": prefill_overhead},
                       decode={**base.decode, "step_overhead": step_overhead}, source="truth")


def _runs(engine, rates, seed=7):
    """``vllm bench serve`` result dicts of ``engine`` at ``rates``: 300 requests of 1,000
    prompt and 200 output tokens each."""
    out = []
    for rate in rates:
        ds = load_curve(rk.Traffic(rate, Constant(1000), Constant(200)), rk.SLO(ttft=10.0),
                        model=MODEL, gpu=GPU, rates=[rate], engine=engine, replicates=3,
                        requests=300, seed=seed)
        out.append({"request_rate": rate, "completed": 300, "total_input_tokens": 300_000,
                    "total_output_tokens": 60_000,
                    "mean_ttft_ms": float(np.nanmedian(ds["mean_ttft"])) * 1e3,
                    "mean_tpot_ms": float(np.nanmedian(ds["mean_tpot"])) * 1e3})
    return out


def test_known_overheads_come_back():
    runs = _runs(_truth(0.004, 0.020), [2.0, 6.0, 12.0])
    fit = fit_under_load(runs, model=MODEL, gpu=GPU, fit=["step_overhead", "prefill_overhead"])
    assert fit.calibration.decode["step_overhead"] == pytest.approx(0.004, rel=0.15)
    assert fit.calibration.prefill["prefill_overhead"] == pytest.approx(0.020, rel=0.15)
    # the shipped profile (1.36 ms step overhead) misses these runs; the fit does not
    assert fit.table.attrs["tpot_error_before"] > 20
    assert fit.table.attrs["tpot_error"] < 5 and fit.table.attrs["ttft_error"] < 5
    assert list(fit.table["request_rate"].values) == [2.0, 6.0, 12.0]
    assert fit.table["fitted_tpot"].attrs["units"] == "s"
    assert "refitted under load to 3 vllm bench serve runs" in fit.calibration.label
    # the other knobs stay the profile's
    base = rk.engine_profile("vllm", GPU)
    assert fit.calibration.decode["bandwidth_efficiency"] == base.decode["bandwidth_efficiency"]


def test_known_front_end_latency_comes_back_by_default():
    """The default knobs: the step overhead and the front end's latency, which moves every
    TTFT by the same seconds and no step (so the TPOT and the saturation stay)."""
    base = rk.engine_profile("vllm", GPU)
    truth = Calibration(prefill={**base.prefill, "frontend_latency": 0.015},
                        decode={**base.decode, "step_overhead": 0.004}, source="truth")
    runs = _runs(truth, [2.0, 6.0, 12.0])
    fit = fit_under_load(runs, model=MODEL, gpu=GPU)
    assert fit.calibration.prefill["frontend_latency"] == pytest.approx(0.015, rel=0.15)
    assert fit.calibration.decode["step_overhead"] == pytest.approx(0.004, rel=0.15)
    assert "prefill_overhead" not in fit.table.attrs["knobs"]
    assert fit.table.attrs["ttft_error"] < 5


def test_a_cold_start_moves_the_mean_not_the_median_fit():
    """Runs without warm-up requests: a cold server holds its first requests (here the first
    8 of 300 wait 4 s more each, +107 ms on the mean TTFT), which the median does not see.
    Weighing the recorded medians gives the known front end back; weighing the means lays the
    cold start on it (a hand calculation: 8 × 4 s / 300 = 107 ms added to each mean)."""
    base = rk.engine_profile("vllm", GPU)
    truth = Calibration(prefill={**base.prefill, "frontend_latency": 0.015},
                        decode={**base.decode, "step_overhead": 0.004}, source="truth")
    runs = []
    for rate in (2.0, 6.0, 12.0):
        ds = load_curve(rk.Traffic(rate, Constant(1000), Constant(200)), rk.SLO(ttft=10.0),
                        model=MODEL, gpu=GPU, rates=[rate], engine=truth, replicates=3,
                        requests=300, seed=7, engine_draws=0)
        runs.append({"request_rate": rate, "completed": 300, "total_input_tokens": 300_000,
                     "total_output_tokens": 60_000,
                     "mean_ttft_ms": float(np.nanmedian(ds["mean_ttft"])) * 1e3 + 8 * 4e3 / 300,
                     "median_ttft_ms": float(np.nanmedian(ds["p50_ttft"])) * 1e3,
                     "mean_tpot_ms": float(np.nanmedian(ds["mean_tpot"])) * 1e3})
    fit = fit_under_load(runs, model=MODEL, gpu=GPU)
    assert fit.table.attrs["ttft_fitted"] == "median"
    assert fit.calibration.prefill["frontend_latency"] == pytest.approx(0.015, rel=0.15)
    assert fit.table.attrs["ttft_median_error"] < 5
    assert fit.table["fitted_median_ttft"].attrs["units"] == "s"
    means = fit_under_load(runs, model=MODEL, gpu=GPU, ttft_statistic="mean")
    assert means.table.attrs["ttft_fitted"] == "mean"
    assert "fitted_median_ttft" not in means.table
    assert means.calibration.prefill["frontend_latency"] > 0.015 + 0.08
    # one run without a median: the means are weighed, for every run alike
    mixed = fit_under_load([runs[0], {k: v for k, v in runs[1].items()
                                      if k != "median_ttft_ms"}], model=MODEL, gpu=GPU)
    assert mixed.table.attrs["ttft_fitted"] == "mean"


@pytest.mark.parametrize("value, match", [(0.0, "must be > 0"), (-3.0, "must be > 0"),
                                          ("fast", "must be a number"),
                                          (math.inf, "must be a finite number")])
def test_a_bad_median_ttft_is_refused_naming_the_field(value, match):
    from rooflinekit.calibrate import read_vllm_serve_sweep
    run = {"request_rate": 1.0, "completed": 10, "total_input_tokens": 100,
           "total_output_tokens": 100, "mean_ttft_ms": 50.0, "mean_tpot_ms": 10.0}
    with pytest.raises(ValueError, match=f"results\\[1\\]: field 'median_ttft_ms' {match}"):
        read_vllm_serve_sweep([run, {**run, "request_rate": 2.0, "median_ttft_ms": value}])
    with pytest.raises(ValueError, match="ttft_statistic"):
        fit_under_load([run, {**run, "request_rate": 2.0}], model=MODEL, gpu=GPU,
                       ttft_statistic="p99")


def test_a_fitted_calibration_plans(tmp_path):
    runs = _runs(_truth(0.004, 0.020), [2.0, 8.0])
    fit = fit_under_load(runs, model=MODEL, gpu=GPU, fit=["step_overhead"])
    plan = rk.plan(rk.Traffic(4.0, 1000, 200), rk.SLO(ttft=1.0, itl=0.05), models=MODEL,
                   gpus=GPU, engine=fit.calibration, replicates=2, requests=100)
    assert plan.attrs["model_quality"] == fit.calibration.label
    assert float(plan["max_rate"].squeeze()) > 0


def test_the_cli_writes_a_calibration_plan_reads(tmp_path, capsys):
    from rooflinekit.cli.main import main
    out = tmp_path / "under-load.json"
    code = main(["calibrate", "--under-load", "--vllm-result", DOKS[0], "--vllm-result",
                 DOKS[1], "--model", "llama-3.1-70b", "--gpu", "h200", "--dtype", "fp8",
                 "--fit", "step_overhead", "--fit", "bandwidth_efficiency",
                 "--output", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "rooflinekit calibrate --under-load: 2 runs" in text
    saved = json.loads(out.read_text())
    assert "refitted under load" in saved["source"]
    code = main(["plan", "llama-3.1-70b", "--dtype", "fp8", "--gpus", "h200", "--rate", "1",
                 "--prompt-mean", "207", "--output-mean", "198", "--ttft", "1",
                 "--replicates", "2", "--requests", "50", "--engine", str(out)])
    assert code == 0
    assert "refitted under load" in capsys.readouterr().out


@pytest.mark.parametrize("change, match", [
    ({"request_rate": "inf"}, "field 'request_rate' must be a finite rate > 0"),
    ({"request_rate": None}, "field 'request_rate' must be a finite rate > 0"),
    ({"mean_tpot_ms": None}, "field 'mean_tpot_ms' is missing"),
    ({"mean_ttft_ms": -1.0}, "field 'mean_ttft_ms' must be > 0"),
    ({"completed": 0}, "field 'completed' must be >= 1"),
    ({"total_input_tokens": float("nan")}, "field 'total_input_tokens' must be a finite"),
    # the per-request lengths of --save-detailed
    ({"input_lens": [100] * 10}, "field 'input_lens' is given without 'output_lens'"),
    ({"input_lens": [100] * 10, "output_lens": [5] * 9}, "one entry per request"),
    ({"input_lens": [100] * 9 + [-1], "output_lens": [5] * 10}, "field 'input_lens'.* >= 0"),
    ({"input_lens": [100] * 9 + [1.5], "output_lens": [5] * 10}, "whole numbers"),
    ({"input_lens": "100", "output_lens": [5] * 10}, "field 'input_lens' must be a list"),
    ({"input_lens": [], "output_lens": []}, "one entry per request"),
    ({"input_lens": [100] * 10, "output_lens": [5] * 10, "errors": ["boom"] * 10},
     "marks every request failed"),
    ({"input_lens": [100] * 10, "output_lens": [5] * 10, "errors": [""] * 3},
     "one entry per request"),
    # the replies of --save-detailed
    ({"input_lens": [100] * 10, "output_lens": [5] * 10, "generated_texts": "hello"},
     "field 'generated_texts' must be a list of texts"),
    ({"input_lens": [100] * 10, "output_lens": [5] * 10, "generated_texts": ["hi"] * 9},
     "field 'generated_texts' must be a list of texts .* one per request"),
    ({"input_lens": [100] * 10, "output_lens": [5] * 10, "generated_texts": [7] * 10},
     "field 'generated_texts' must be a list of texts"),
])
def test_a_bad_run_is_refused_naming_its_field(change, match):
    good = {"request_rate": 1.0, "completed": 10, "total_input_tokens": 1000,
            "total_output_tokens": 1000, "mean_ttft_ms": 50.0, "mean_tpot_ms": 10.0}
    runs = [{**good, **change}, {**good, "request_rate": 2.0}]
    with pytest.raises(ValueError, match=match):
        fit_under_load(runs, model=MODEL, gpu=GPU)


@pytest.mark.parametrize("kwargs, match, kind", [
    ({"results": 5}, "results must be a list", TypeError),
    ({"results": "no-such-sweep.json"}, "no-such-sweep.json", (OSError, ValueError)),
    ({"fit": ["speed"]}, "fit must name distinct knobs", ValueError),
    ({"fit": ["step_overhead", "step_overhead"]}, "fit must name distinct knobs", ValueError),
    ({"fit": list(LOAD_KNOBS)}, "give more runs or fewer knobs", ValueError),
    ({"prefix_cache": "on"}, "prefix_cache must be True, False or None", TypeError),
    ({"prefix_cache": 1}, "prefix_cache must be True, False or None", TypeError),
])
def test_bad_arguments_are_refused_before_work(kwargs, match, kind):
    one = {"request_rate": 1.0, "completed": 10, "total_input_tokens": 1000,
           "total_output_tokens": 1000, "mean_ttft_ms": 50.0, "mean_tpot_ms": 10.0}
    args = {"results": [one, {**one, "request_rate": 2.0}], "model": MODEL, "gpu": GPU}
    args.update(kwargs)
    with pytest.raises(kind, match=match):
        fit_under_load(**args)


def test_one_rate_is_not_a_curve():
    one = {"request_rate": 1.0, "completed": 10, "total_input_tokens": 1000,
           "total_output_tokens": 1000, "mean_ttft_ms": 50.0, "mean_tpot_ms": 10.0}
    with pytest.raises(ValueError, match="two or more request rates"):
        fit_under_load([one, dict(one)], model=MODEL, gpu=GPU)


@pytest.mark.parametrize("argv, match", [
    # one file of one run (a file of runs one a line may hold the sweep)
    (["--under-load", "--vllm-result", DOKS[0], "--model", "llama-3.1-70b", "--gpu", "h200"],
     "two or more request rates"),
    (["--under-load", "--vllm-result", DOKS[0], "--vllm-result", DOKS[1], "--model",
      "llama-3.1-70b", "--gpu", "h200", "--cv", "kfold"], "--cv applies to the closed-form"),
    (["--under-load", "--vllm-result", DOKS[0], "--vllm-result", DOKS[1], "--model",
      "llama-3.1-70b", "--gpu", "h200", "--fit", "interconnect_latency"],
     "--fit interconnect_latency cannot be fitted under load"),
    (["--vllm-result", DOKS[0], "--model", "llama-3.1-70b", "--gpu", "h200",
      "--ttft-statistic", "mean"], "--ttft-statistic applies to --under-load"),
])
def test_cli_refuses_what_under_load_cannot_use(argv, match, capsys):
    from rooflinekit.cli.main import main
    assert main(["calibrate", *argv]) == 2
    assert match in capsys.readouterr().err


def test_the_documented_fit_of_the_doks_runs():
    """docs/calibration.md's numbers: two DigitalOcean runs (vLLM 0.14.1, Llama-3.1-70B FP8
    with an fp8 KV cache, one H200) fitted in the default knobs, then the whole published sweep
    scored with it (scripts/score_load_sweeps.py with the calibration)."""
    from pathlib import Path

    from helpers import load_script
    model = rk.catalog.model("Llama-3.1-70B").replace(bytes_per_param="fp8",
                                                      kv_bytes_per_element="fp8")
    fit = fit_under_load(DOKS, model=model, gpu="H200-SXM-141GB")
    a = fit.table.attrs
    doc = (Path(__file__).parents[1] / "docs" / "calibration.md").read_text()
    assert "fit moves the mean TPOT from 8.4 % to 8.5 % off,\nthe median TTFT from 16.1 % to " \
        "6.6 % and the mean TTFT from 22.5 % to 15.0 %" in doc
    assert a["ttft_fitted"] == "median"
    assert [round(a[k], 1) for k in ("tpot_error_before", "tpot_error",
                                     "ttft_median_error_before", "ttft_median_error",
                                     "ttft_error_before", "ttft_error")] == \
        [8.4, 8.5, 16.1, 6.6, 22.5, 15.0]
    # the shipped profile already holds no host time per step (vLLM 0.14.1 is asynchronous):
    # the fit finds a small fraction of a synchronous vLLM's
    host = rk.profiles.host_scheduling("vllm").synchronous_step_overhead
    assert fit.calibration.decode["step_overhead"] < host / 4
    assert f"it finds a `step_overhead` of {fit.calibration.decode['step_overhead'] * 1e3:.2f} ms" in doc
    assert f"a `frontend_latency` of {fit.calibration.prefill['frontend_latency'] * 1e3:.1f} " \
           f"ms" in doc
    scorer = load_script("score_load_sweeps")
    name = "doks_h200_llama3.1-70b_fp8_tp1_sharegpt_rate"
    (held,) = scorer.score(engine=fit.calibration, sweeps=[name])
    assert "it gives 10 % TPOT\nand 23 % TTFT error and a saturation +3 %" in doc
    assert (round(100 * held["tpot_mape"]), round(100 * held["ttft_mape"]),
            round(100 * held["sat_err"])) == (10, 23, 3)
    # fitted to the means, the 0.5 req/s run's cold first requests raise the front end
    means = fit_under_load(DOKS, model=model, gpu="H200-SXM-141GB", ttft_statistic="mean")
    assert means.table.attrs["ttft_fitted"] == "mean"
    assert "(27.9 ms fitted to the means" in doc
    assert f"{means.calibration.prefill['frontend_latency'] * 1e3:.1f}" == "27.9"


def test_re_sent_prompts_are_warned_of_and_simulated_as_cache_hits():
    """docs/calibration.md: the DigitalOcean runs sent the same 300 prompts at 0.5 and 2 req/s
    (the same request count and input tokens) to a vLLM with its prefix cache on. By default
    the fit warns and simulates them cold (as before); ``prefix_cache=True`` simulates the
    first run's first request (the client's test prompt) and every request of the second as
    cache hits, whose TTFT is then shorter; ``False`` is the default's fit, without the
    warning."""
    model = rk.catalog.model("Llama-3.1-70B").replace(bytes_per_param="fp8",
                                                      kv_bytes_per_element="fp8")
    kwargs = dict(model=model, gpu="H200-SXM-141GB")
    with pytest.warns(UserWarning, match=r"runs \S*rate-2\.0\.json have the number of "
                                         r"requests and input tokens of an earlier run"):
        default = fit_under_load(DOKS, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        cold = fit_under_load(DOKS, prefix_cache=False, **kwargs)
        warm = fit_under_load(DOKS, prefix_cache=True, **kwargs)
    for name in cold.table.data_vars:
        np.testing.assert_array_equal(default.table[name].values, cold.table[name].values)
    before_cold, before_warm = cold.table["before_ttft"].values, warm.table["before_ttft"].values
    # one request of 300 a hit moves the first run's mean by a step's phase at most; all of
    # them shorten the second run's
    assert before_warm[0] == pytest.approx(before_cold[0], rel=0.01)
    assert before_warm[1] < 0.95 * before_cold[1]             # 48 against 55 ms
    np.testing.assert_allclose(warm.table["before_tpot"].values,
                               cold.table["before_tpot"].values, rtol=0.02)
    # the front end fitted to cache hits as cold prompts comes out too small
    assert warm.calibration.prefill["frontend_latency"] > \
        cold.calibration.prefill["frontend_latency"]
    doc = (Path(__file__).parents[1] / "docs" / "calibration.md").read_text()
    a = warm.table.attrs
    assert (f"`frontend_latency` of "
            f"{warm.calibration.prefill['frontend_latency'] * 1e3:.1f} ms") in doc
    assert (f"median TTFT {a['ttft_median_error']:.1f} % off (the mean "
            f"{a['ttft_error']:.1f} %, the mean TPOT {a['tpot_error']:.1f} %)") in doc
    # runs of other prompts (other request counts or input tokens) are not re-sent ones
    one = {"request_rate": 1.0, "completed": 10, "total_input_tokens": 1000,
           "total_output_tokens": 1000, "mean_ttft_ms": 50.0, "mean_tpot_ms": 10.0}
    from rooflinekit.planning.load_fit import _resent_runs
    assert _resent_runs([one, {**one, "total_input_tokens": 1001}, {**one, "completed": 11},
                         {**one, "request_rate": 3.0}]) == [3]


def test_the_cli_fits_the_kv_cache_format_it_is_given(capsys):
    """docs/calibration.md's command (``--dtype fp8 --kv-cache-dtype fp8``) fits the model the
    runs served: its knobs and errors are the Python fit's of an fp8-weight, fp8-KV model, and
    differ from a 16-bit cache's (whose KV reads the fit would otherwise lay on the knobs)."""
    from rooflinekit.cli.main import main
    model = rk.catalog.model("Llama-3.1-70B").replace(bytes_per_param="fp8",
                                                      kv_bytes_per_element="fp8")
    fit = fit_under_load(DOKS, model=model, gpu="H200-SXM-141GB")
    args = ["calibrate", "--under-load", "--vllm-result", DOKS[0], "--vllm-result", DOKS[1],
            "--model", "llama-3.1-70b", "--gpu", "h200", "--dtype", "fp8", "--json"]
    found = {}
    for kv in ("fp8", "auto"):
        assert main([*args, "--kv-cache-dtype", kv]) == 0
        found[kv] = json.loads(capsys.readouterr().out)
    a = fit.table.attrs
    assert found["fp8"]["calibration"]["decode"]["step_overhead"] == \
        fit.calibration.decode["step_overhead"]
    assert found["fp8"]["calibration"]["prefill"]["frontend_latency"] == \
        fit.calibration.prefill["frontend_latency"]
    assert [found["fp8"][k] for k in ("tpot_error_before", "tpot_error")] == \
        [a["tpot_error_before"], a["tpot_error"]]
    assert found["auto"]["tpot_error_before"] != a["tpot_error_before"]
    assert found["fp8"]["ttft_fitted"] == "median"
    assert found["fp8"]["ttft_median_error"] == a["ttft_median_error"]
    # --ttft-statistic mean: the Python fit's of the means
    means = fit_under_load(DOKS, model=model, gpu="H200-SXM-141GB", ttft_statistic="mean")
    assert main([*args, "--kv-cache-dtype", "fp8", "--ttft-statistic", "mean"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["ttft_fitted"] == "mean" and "ttft_median_error" not in got
    assert got["calibration"]["prefill"]["frontend_latency"] == \
        means.calibration.prefill["frontend_latency"]


def test_the_fit_does_not_depend_on_where_the_profile_starts_it():
    """One knob besides the front end is searched over its whole range (a grid, then Brent's
    method), the front end in closed form: the DigitalOcean fit from a profile whose
    step_overhead starts at 0 ms, at the shipped value or at 3 ms finds the same knobs."""
    model = rk.catalog.model("Llama-3.1-70B").replace(bytes_per_param="fp8",
                                                      kv_bytes_per_element="fp8")
    base = rk.engine_profile("vllm", "H200-SXM-141GB", warn=False)
    found = set()
    for start in (0.0, None, 0.003):
        decode = dict(base.decode) if start is None else {**base.decode, "step_overhead": start}
        engine = rk.Calibration(prefill=dict(base.prefill), decode=decode, source=base.source,
                                base=base.base)
        found.add(fit_under_load(DOKS, model=model, gpu="H200-SXM-141GB",
                                 engine=engine).table.attrs["knobs"])
    assert len(found) == 1


def _guidellm(engine, rates, seed=7):
    """A GuideLLM sweep report of ``engine`` (its ``constant`` benchmarks simulated with
    regular arrivals), a synchronous benchmark first: not a rate point, skipped."""
    from rooflinekit.calibrate.readers import REGULAR_BURSTINESS
    benchmarks = [{"config": {"strategy": {"type_": "synchronous"}}, "metrics": {}}]
    for rate in rates:
        traffic = rk.Traffic(rate, Constant(1000), Constant(200), arrival="gamma",
                             burstiness=REGULAR_BURSTINESS)
        ds = load_curve(traffic, rk.SLO(ttft=10.0), model=MODEL, gpu=GPU, rates=[rate],
                        engine=engine, replicates=3, requests=300, seed=seed)
        stat = {"ttft": float(np.nanmedian(ds["mean_ttft"])) * 1e3,
                "tpot": float(np.nanmedian(ds["mean_tpot"])) * 1e3}
        benchmarks.append({
            "config": {"strategy": {"type_": "constant", "rate": rate}},
            "metrics": {"request_totals": {"successful": 300},
                        "prompt_token_count": {"successful": {"mean": 1000.0}},
                        "output_token_count": {"successful": {"mean": 200.0}},
                        "time_to_first_token_ms": {"successful": {"mean": stat["ttft"]}},
                        "inter_token_latency_ms": {"successful": {"mean": stat["tpot"]}}}})
    return {"metadata": {"guidellm_version": "0.4.0"}, "benchmarks": benchmarks}


def test_a_guidellm_sweep_fits_like_vllm_runs(tmp_path):
    report = _guidellm(_truth(0.004, 0.020), [2.0, 6.0, 12.0])
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(report))
    fit = fit_under_load(str(path), model=MODEL, gpu=GPU,
                         fit=["step_overhead", "prefill_overhead"])
    assert fit.calibration.decode["step_overhead"] == pytest.approx(0.004, rel=0.15)
    assert fit.calibration.prefill["prefill_overhead"] == pytest.approx(0.020, rel=0.15)
    assert "refitted under load to 3 GuideLLM runs" in fit.calibration.label
    assert fit.table.attrs["ttft_fitted"] == "mean"        # the report gives no medians
    # a report's successful.median TTFT is read, and weighed
    for bench in report["benchmarks"][1:]:
        ttft = bench["metrics"]["time_to_first_token_ms"]["successful"]
        ttft["median"] = ttft["mean"] * 0.9
    runs = rk.calibrate.read_guidellm_sweep(report)
    assert [r["median_ttft_ms"] for r in runs] == pytest.approx(
        [b["metrics"]["time_to_first_token_ms"]["successful"]["median"]
         for b in report["benchmarks"][1:]])
    from rooflinekit.cli.main import main
    out = tmp_path / "cal.json"
    assert main(["calibrate", "--under-load", "--from", "guidellm", str(path), "--model",
                 "llama-3.1-8b", "--gpu", "h100", "--output", str(out)]) == 0
    assert "GuideLLM runs" in json.loads(out.read_text())["source"]


def test_a_guidellm_report_without_two_rates_is_refused():
    from rooflinekit.calibrate import read_guidellm_sweep
    one = _guidellm(rk.engine_profile("vllm", GPU), [2.0])
    with pytest.raises(ValueError, match="two or more rates"):
        read_guidellm_sweep(one)
    bad = _guidellm(rk.engine_profile("vllm", GPU), [2.0, 4.0])
    del bad["benchmarks"][1]["metrics"]["time_to_first_token_ms"]
    with pytest.raises(ValueError, match=r"benchmarks\[1\].*time_to_first_token_ms"):
        read_guidellm_sweep(bad)


def _kept(prompts, outputs):
    """GuideLLM's ``requests.successful``: each kept request with its token counts."""
    return [{"request_id": str(i), "prompt_tokens": p, "output_tokens": o}
            for i, (p, o) in enumerate(zip(prompts, outputs))]


def test_a_guidellm_reports_kept_requests_are_read_at_the_runs_means():
    """GuideLLM keeps a sample of each benchmark's requests with their token counts: their
    spread, scaled to the benchmark's means (hand computed), a reply of 0 tokens one token;
    none kept, or a count the server did not report, leaves the means alone."""
    from rooflinekit.calibrate import read_guidellm_sweep
    report = _guidellm(rk.engine_profile("vllm", GPU), [2.0, 4.0])
    report["benchmarks"][1]["requests"] = {"successful": _kept([500, 1500, 1000, 1000],
                                                               [0, 99, 300, 400])}
    runs = read_guidellm_sweep(report)
    # prompts: mean 1000 as the run's, kept; replies 1, 99, 300, 400 (mean 200) as the run's
    assert runs[0]["prompt_lengths"] == (500, 1500, 1000, 1000)
    assert runs[0]["output_lengths"] == (1, 99, 300, 400)
    report["benchmarks"][1]["metrics"]["output_token_count"]["successful"]["mean"] = 100.0
    assert read_guidellm_sweep(report)[0]["output_lengths"] == (1, 50, 150, 200)
    assert "prompt_lengths" not in runs[1]
    for kept in ([], _kept([500, None], [5, 5])):
        report["benchmarks"][1]["requests"] = {"successful": kept}
        assert "prompt_lengths" not in read_guidellm_sweep(report)[0]


@pytest.mark.parametrize("kept, match", [
    ("many", "must be a list"),
    ([3], r"\[0\] must be an object"),
    (_kept([100, -1], [5, 5]), "prompt_tokens.*>= 0"),
    (_kept([100, 100], [5, 2.5]), "output_tokens.*whole numbers"),
    (_kept([100, 100], [5, math.inf]), "output_tokens.*finite"),
])
def test_a_guidellm_reports_bad_kept_requests_are_refused(kept, match):
    from rooflinekit.calibrate import read_guidellm_sweep
    report = _guidellm(rk.engine_profile("vllm", GPU), [2.0, 4.0])
    report["benchmarks"][2]["requests"] = {"successful": kept}
    with pytest.raises(ValueError, match=r"benchmarks\[2\]\.requests\.successful.*" + match):
        read_guidellm_sweep(report)


def test_a_guidellm_concurrency_sweep_is_read_as_closed_loops():
    """``--profile concurrent``: no rate points, so its concurrent benchmarks (and a
    synchronous one, one stream) are the points, closed loops by rising streams."""
    from rooflinekit.calibrate import read_guidellm_sweep
    report = _guidellm(rk.engine_profile("vllm", GPU), [2.0, 4.0])
    for bench, strategy in zip(report["benchmarks"], (
            {"type_": "synchronous"}, {"type_": "concurrent", "streams": 16},
            {"type_": "concurrent", "streams": 4})):
        bench["config"]["strategy"] = strategy
    report["benchmarks"][0]["metrics"] = report["benchmarks"][1]["metrics"]
    runs = read_guidellm_sweep(report)
    assert [r["max_concurrency"] for r in runs] == [1, 4, 16]
    assert all(r["request_rate"] == math.inf and r["burstiness"] is None for r in runs)
    report["benchmarks"][2]["config"]["strategy"]["streams"] = 2.5
    with pytest.raises(ValueError, match=r"benchmarks\[2\]\.config\.strategy\.streams.*whole"):
        read_guidellm_sweep(report)
    # a rate point beside them: the rates are the sweep, and one rate is too few
    report["benchmarks"][2]["config"]["strategy"] = {"type_": "poisson", "rate": 3.0}
    with pytest.raises(ValueError, match="two or more rates"):
        read_guidellm_sweep(report)


def test_a_guidellm_sweeps_kept_requests_fit_what_its_means_cannot():
    """A GuideLLM concurrency sweep of ShareGPT's lengths at known knobs, as
    ``test_recorded_lengths_fit_what_their_means_cannot`` for vLLM's files: replayed from the
    requests the report keeps, the fit gives the knobs back; from the means alone it misses."""
    prompts, outputs = read_sharegpt_sample(400)
    replies = [max(o, 1) for o in outputs]
    base = rk.engine_profile("vllm", GPU)
    truth = Calibration(prefill={**base.prefill, "frontend_latency": 0.015},
                        decode={**base.decode, "step_overhead": 0.004}, source="truth")
    traffic = rk.Traffic(1.0, Empirical(samples=prompts), Empirical(samples=replies))
    benchmarks = []
    for clients in (16, 64, 256):
        ds = load_curve(traffic, rk.SLO(ttft=10.0), model=MODEL, gpu=GPU, concurrencies=[clients],
                        engine=truth, replicates=3, requests=400, seed=7,
                        clients_start="together", engine_draws=0)
        mean = {"ttft": float(np.nanmedian(ds["mean_ttft"])) * 1e3,
                "tpot": float(np.nanmedian(ds["mean_tpot"])) * 1e3}
        benchmarks.append({
            "config": {"strategy": {"type_": "concurrent", "streams": clients}},
            "metrics": {"request_totals": {"successful": 400},
                        "prompt_token_count": {"successful": {"mean": float(np.mean(prompts))}},
                        "output_token_count": {"successful": {"mean": float(np.mean(replies))}},
                        "time_to_first_token_ms": {"successful": {"mean": mean["ttft"]}},
                        "inter_token_latency_ms": {"successful": {"mean": mean["tpot"]}}},
            "requests": {"successful": _kept(prompts, outputs)}})
    report = {"metadata": {"guidellm_version": "0.7.3"}, "benchmarks": benchmarks}
    fit = fit_under_load(report, model=MODEL, gpu=GPU)
    assert fit.calibration.decode["step_overhead"] == pytest.approx(0.004, rel=0.10)
    assert fit.calibration.prefill["frontend_latency"] == pytest.approx(0.015, rel=0.15)
    for bench in benchmarks:
        bench["requests"] = {"successful": []}
    means = fit_under_load(report, model=MODEL, gpu=GPU).calibration
    assert abs(means.decode["step_overhead"] / 0.004 - 1.0) > 0.2 or \
        abs(means.prefill["frontend_latency"] / 0.015 - 1.0) > 0.2


def test_a_runs_recorded_lengths_are_read_without_its_failures():
    """``--save-detailed`` files list each request's lengths and error: the failed requests
    are left out, and a reply counted as 0 tokens is one token generated."""
    from rooflinekit.calibrate import read_vllm_serve_sweep
    one = {"request_rate": 1.0, "completed": 3, "total_input_tokens": 60,
           "total_output_tokens": 12, "mean_ttft_ms": 50.0, "mean_tpot_ms": 10.0,
           "input_lens": [10, 20, 30, 40], "output_lens": [5, 0, 7, 0],
           "errors": ["", "", "", "Server disconnected"]}
    runs = read_vllm_serve_sweep([one, {**one, "request_rate": 2.0, "errors": None}])
    assert (runs[0]["prompt_lengths"], runs[0]["output_lengths"]) == ((10, 20, 30), (5, 1, 7))
    assert (runs[1]["prompt_lengths"], runs[1]["output_lengths"]) == ((10, 20, 30, 40),
                                                                     (5, 1, 7, 1))
    bare = {k: v for k, v in one.items() if k not in ("input_lens", "output_lens", "errors")}
    assert "prompt_lengths" not in read_vllm_serve_sweep([bare, {**bare, "request_rate": 2.0}])[0]


def test_detailed_runs_tell_re_sent_prompts_from_another_seeds():
    """Totals alone cannot tell fixed-length random prompts of one ``--seed`` from another's;
    ``--save-detailed`` files can: the prompt lengths in order, and, where those are all one
    length, the replies' openings (greedy decoding begins one prompt's reply alike, though
    batching may part the later tokens)."""
    from rooflinekit.calibrate import read_vllm_serve_sweep
    from rooflinekit.planning.load_fit import _resent_runs
    n = 8
    base = {"completed": n, "total_input_tokens": 100 * n, "total_output_tokens": 5 * n,
            "mean_ttft_ms": 50.0, "mean_tpot_ms": 10.0, "input_lens": [100] * n,
            "output_lens": [5] * n}
    seed0 = [f"reply {i} to prompt {i} of seed 0, and more words after" for i in range(n)]
    seed1 = [f"another reply {i}, to seed 1's prompt" for i in range(n)]
    # the same prompts at 2 req/s: three replies part after their opening, one differs whole
    again = [t[:32] + " then other words" for t in seed0[:3]] + seed0[3:7] + ["something new"]

    def resent(*texts):
        runs = [{**base, "request_rate": float(r + 1), "generated_texts": t}
                for r, t in enumerate(texts)]
        return _resent_runs(read_vllm_serve_sweep(runs))

    assert resent(seed0, seed1) == []                  # another seed: no warning
    assert resent(seed0, again) == [1]                 # the same prompts sent again
    assert resent(seed0, seed1, again) == [2]          # ... after a run of another seed
    assert resent(seed0, [None] * n) == [1]            # no reply to compare: the totals
    # replies not recorded: fixed lengths are judged by the totals alone
    bare = {k: v for k, v in base.items()}
    runs = read_vllm_serve_sweep([{**bare, "request_rate": 1.0}, {**bare, "request_rate": 2.0}])
    assert "reply_openings" not in runs[0] and _resent_runs(runs) == [1]
    # varied lengths: the same ones (in any order: a report may list them as they completed)
    # are the same prompts, other ones of the same total another draw
    varied = {**base, "input_lens": [50, 150] * (n // 2)}
    swapped = {**varied, "input_lens": [150, 50] * (n // 2)}
    other = {**varied, "input_lens": [60, 140] * (n // 2)}
    for second, expected in ((varied, [1]), (swapped, [1]), (other, [])):
        runs = [{**varied, "request_rate": 1.0, "generated_texts": seed0},
                {**second, "request_rate": 2.0, "generated_texts": seed1}]
        assert _resent_runs(read_vllm_serve_sweep(runs)) == expected
    # a record of some requests only (GuideLLM keeps a sample): the totals alone
    runs = read_vllm_serve_sweep([{**varied, "request_rate": 1.0}, {**other, "request_rate": 2.0}])
    assert _resent_runs([runs[0], {**runs[1], "completed": n + 1}]) == []
    assert _resent_runs([{**runs[0], "prompt_lengths": runs[0]["prompt_lengths"][:-1]},
                         runs[1]]) == [1]
    # the openings kept: 32 characters of each successful request's reply
    runs = read_vllm_serve_sweep([{**base, "request_rate": 1.0, "generated_texts": seed0,
                                   "errors": [""] * (n - 1) + ["Server disconnected"]},
                                  {**base, "request_rate": 2.0}])
    assert runs[0]["reply_openings"] == tuple(t[:32] for t in seed0[:-1])


def test_recorded_lengths_fit_what_their_means_cannot():
    """ShareGPT's replies are mostly short or long (14 % under ten tokens), and a mean TPOT over
    requests weighs each alike: closed-loop runs of known knobs, replayed from the files' own
    request lengths, give the knobs back; replayed at the mean lengths, the fit misses both by
    a quarter and more (the step overhead by 27 %, the front end by more than a third) and
    still misses the runs."""
    prompts, outputs = read_sharegpt_sample(400)
    base = rk.engine_profile("vllm", GPU)
    truth = Calibration(prefill={**base.prefill, "frontend_latency": 0.015},
                        decode={**base.decode, "step_overhead": 0.004}, source="truth")
    traffic = rk.Traffic(1.0, Empirical(samples=prompts),
                         Empirical(samples=[max(o, 1) for o in outputs]))
    runs = []
    for clients in (16, 64, 256):
        ds = load_curve(traffic, rk.SLO(ttft=10.0), model=MODEL, gpu=GPU, concurrencies=[clients],
                        engine=truth, replicates=3, requests=400, seed=7,
                        clients_start="together", engine_draws=0)
        runs.append({"request_rate": "inf", "max_concurrency": clients, "completed": 400,
                     "total_input_tokens": sum(prompts), "total_output_tokens": sum(outputs),
                     "mean_ttft_ms": float(np.nanmedian(ds["mean_ttft"])) * 1e3,
                     "mean_tpot_ms": float(np.nanmedian(ds["mean_tpot"])) * 1e3,
                     "input_lens": prompts, "output_lens": outputs, "errors": [""] * 400})
    fit = fit_under_load(runs, model=MODEL, gpu=GPU)
    assert fit.calibration.decode["step_overhead"] == pytest.approx(0.004, rel=0.10)
    assert fit.calibration.prefill["frontend_latency"] == pytest.approx(0.015, rel=0.15)
    assert fit.table.attrs["tpot_error"] < 5 and fit.table.attrs["ttft_error"] < 5
    means = fit_under_load([{k: v for k, v in run.items()
                             if k not in ("input_lens", "output_lens", "errors")}
                            for run in runs], model=MODEL, gpu=GPU)
    assert means.calibration.decode["step_overhead"] > 0.004 * 1.25
    assert means.calibration.prefill["frontend_latency"] > 0.015 * 1.3
    assert means.table.attrs["tpot_error"] > 10 and means.table.attrs["ttft_error"] > 25


def _lines(tmp_path, payloads, name="runs.jsonl"):
    """A file of runs one a line, as ``--append-result`` and SGLang's ``--output-file`` write
    them (``json.dumps`` of each, ``Infinity`` for an unlimited rate)."""
    path = tmp_path / name
    path.write_text("".join(json.dumps(p) + "\n" for p in payloads))
    return str(path)


def test_a_file_of_runs_one_a_line_is_the_sweep_its_lines_hold(tmp_path):
    """vLLM's --append-result file of the DigitalOcean runs reads as the two files do; an
    indented single run is one run; a bad line is refused naming the file and line."""
    from rooflinekit.calibrate import read_vllm_serve_sweep
    runs = [json.loads(Path(p).read_text()) for p in DOKS]
    path = _lines(tmp_path, runs)
    by_line = read_vllm_serve_sweep([path])
    by_file = read_vllm_serve_sweep(DOKS)
    drop = ("label",)
    assert [{k: v for k, v in r.items() if k not in drop} for r in by_line] == \
        [{k: v for k, v in r.items() if k not in drop} for r in by_file]
    assert by_line[0]["label"] == f"{path}, line 1"
    indented = tmp_path / "indented.json"
    indented.write_text(json.dumps(runs[0], indent=2))
    assert len(read_vllm_serve_sweep([str(indented), DOKS[1]])) == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(runs[0]) + "\n[1, 2]\n")
    with pytest.raises(ValueError, match=r"bad\.jsonl, line 2: a run is a JSON object"):
        read_vllm_serve_sweep([str(bad)])
    bad.write_text(json.dumps(runs[0]) + "\n{oops\n")
    with pytest.raises(ValueError, match=r"bad\.jsonl, line 2 is not valid JSON"):
        read_vllm_serve_sweep([str(bad)])


def test_sglang_bench_serving_lines_fit_as_vllm_runs_do(tmp_path, capsys):
    """``python -m sglang.bench_serving --output-file`` appends a run a line with vLLM's field
    names and no model: a closed-loop sweep (``request_rate`` Infinity, ``max_concurrency``)
    of one file fits as the same runs given as files do; without --model the command line says
    the lines record none."""
    from rooflinekit.calibrate import recorded_model
    from rooflinekit.cli.main import main
    keep = ("completed", "total_input_tokens", "total_output_tokens", "mean_ttft_ms",
            "mean_tpot_ms", "mean_itl_ms", "mean_e2e_latency_ms", "output_throughput")
    runs = []
    for source, clients in zip(DOKS, (4, 16)):
        vllm = json.loads(Path(source).read_text())
        runs.append({"backend": "sglang", "dataset_name": "random", "request_rate": math.inf,
                     "max_concurrency": clients, **{k: vllm.get(k, 1.0) for k in keep}})
    path = _lines(tmp_path, runs)
    assert "Infinity" in Path(path).read_text()
    model = rk.catalog.model("Llama-3.1-70B").replace(bytes_per_param="fp8",
                                                      kv_bytes_per_element="fp8")
    one = fit_under_load(path, model=model, gpu="H200-SXM-141GB", replicates=2, requests=100)
    files = []
    for i, run in enumerate(runs):
        files.append(_lines(tmp_path, [run], f"run{i}.json"))
    each = fit_under_load(files, model=model, gpu="H200-SXM-141GB", replicates=2, requests=100)
    assert one.calibration.decode == each.calibration.decode
    assert one.calibration.prefill == each.calibration.prefill
    assert recorded_model(path) is None
    assert main(["calibrate", "--under-load", "--vllm-result", path, "--gpu", "h200"]) == 2
    assert "records no model" in capsys.readouterr().err
