"""Tests of rooflinekit.plotting: each figure draws what the library computes, on small inputs."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import xarray as xr  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402

import rooflinekit as rk  # noqa: E402
from rooflinekit import planning, plotting, pricing, roofline  # noqa: E402
from rooflinekit.batching import ContinuousBatcher, StaticBatcher  # noqa: E402
from rooflinekit.plotting.batching import _lanes  # noqa: E402
from rooflinekit.plotting import (  # noqa: E402
    plot_batching_timeline,
    plot_batching_win,
    plot_break_even,
    plot_concurrency_vs_context,
    plot_roofline,
    plot_self_hosting,
    plot_spillover,
    plot_tp_scaling,
)
from rooflinekit.workloads import guide_workload  # noqa: E402

PROVISIONED = pricing.Provisioned(monthly_cost=12_000, monthly_capacity_tokens=4e9)  # guide §6.3
PAYG = pricing.PayAsYouGo(input_per_mtok=3.0, output_per_mtok=12.0)                  # guide §6.3
SELF_HOSTED = pricing.SelfHosted(n_gpus=8, gpu_hourly=3.0, engineering_monthly=25_000)  # §6.5


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def guide_runs():
    wl = guide_workload()
    return {"static": StaticBatcher(8).run(wl), "continuous": ContinuousBatcher(16).run(wl)}


def _labels(ax):
    return ax.get_legend_handles_labels()[1]


# -- roofline -------------------------------------------------------------------------------------
def test_roofline_places_every_batch_and_prompt(guide_model, lab_gpu):
    batches, prompts = [1, 8, 128], [512, 4096]
    ax = plot_roofline(guide_model, lab_gpu, batches, context_length=0, prompt_tokens=prompts)
    assert isinstance(ax, Axes)
    assert ax.get_xscale() == ax.get_yscale() == "log"
    decode = next(line for line in ax.lines if line.get_label().startswith("decode"))
    prefill = next(line for line in ax.lines if line.get_label().startswith("prefill"))
    assert len(decode.get_xdata()) == 3 and len(prefill.get_xdata()) == 2
    # guide §3.2: at zero context the 70B model's decode intensity equals the batch size, rel 1e-9
    np.testing.assert_allclose(decode.get_xdata(), batches, rtol=1e-9)
    expected = roofline.decode_roofline(guide_model, lab_gpu, batches, 0)
    np.testing.assert_allclose(decode.get_ydata(),
                               expected["compute_utilization"].values * lab_gpu.peak_flops / 1e12)
    # one label per point plus the ridge point
    assert len(ax.texts) == 3 + 2 + 1
    assert any("295" in t.get_text() for t in ax.texts)  # guide §3.2: ridge ≈ 295 FLOP/byte


def test_roofline_without_prefill_and_on_given_axes(guide_model, lab_gpu):
    _, given_ax = plt.subplots()
    ax = plot_roofline(guide_model, lab_gpu, [1, 2], context_length=2048, prompt_tokens=None,
                       tp=8, ax=given_ax)
    assert ax is given_ax
    assert not any(line.get_label().startswith("prefill") for line in ax.lines)
    assert any("2,048" in label for label in _labels(ax))


@pytest.mark.parametrize("kwargs, error", [
    ({"batch_sizes": [0, 1]}, ValueError),
    ({"batch_sizes": [[1, 2]]}, ValueError),
    ({"batch_sizes": "1,2"}, TypeError),
    ({"context_length": -1}, ValueError),
    ({"prompt_tokens": [0]}, ValueError),
    ({"ax": "axes"}, TypeError),
])
def test_roofline_rejects_bad_input(guide_model, lab_gpu, kwargs, error):
    with pytest.raises(error):
        plot_roofline(guide_model, lab_gpu, **kwargs)


# -- concurrency (§2.3) ---------------------------------------------------------------------------
def test_concurrency_draws_three_variants(guide_model, lab_gpu):
    ax = plot_concurrency_vs_context(guide_model, lab_gpu, tp=8, contexts=[4096, 8192])
    assert isinstance(ax, Axes)
    assert len(ax.lines) == 3
    # guide §2.3: MHA 22, GQA-8 183, MQA 1,467 sequences of 8,192 tokens on 8 × 80 GiB, exact
    assert [int(line.get_ydata()[1]) for line in ax.lines] == [22, 183, 1467]


def test_concurrency_rejects_bad_context(guide_model, lab_gpu):
    with pytest.raises(ValueError):
        plot_concurrency_vs_context(guide_model, lab_gpu, contexts=[-5])


# -- static vs continuous timeline (§4.2-4.3) -----------------------------------------------------
def test_timeline_draws_one_bar_per_request(guide_runs):
    ax = plot_batching_timeline(guide_runs)
    assert isinstance(ax, Axes)
    assert len(ax.patches) == 2 * 24
    assert len(ax.get_yticklabels()) == 2
    text = " ".join(t.get_text() for t in ax.texts)
    # guide §4.3 / docs/conventions.md: 1,220 vs 440 ticks, mean service latency 336.67 vs 67.5
    assert "1,220" in text and "440" in text and "336.7" in text and "67.5" in text
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["20 output tokens", "400 output tokens"]


def test_timeline_static_uses_eight_slots(guide_runs):
    ax = plot_batching_timeline({"static": guide_runs["static"]})
    assert "8 slots" in ax.get_yticklabels()[0].get_text()


@pytest.mark.parametrize("results, error", [
    ([1, 2], TypeError),
    ({}, ValueError),
    ({"x": xr.Dataset({"admit": ("request", [0.0])})}, ValueError),
    ({"x": "not a dataset"}, ValueError),
])
def test_timeline_rejects_bad_input(results, error):
    with pytest.raises(error):
        plot_batching_timeline(results)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(1, 30)), min_size=1, max_size=25))
def test_lanes_never_overlap_and_use_the_peak_overlap(intervals):
    start = np.array([s for s, _ in intervals], dtype=float)
    end = start + np.array([d for _, d in intervals], dtype=float)
    lane = _lanes(start, end)
    for k in np.unique(lane):
        idx = np.flatnonzero(lane == k)
        order = idx[np.argsort(start[idx])]
        assert np.all(start[order][1:] >= end[order][:-1])
    # greedy first-fit on intervals sorted by start is optimal: rows = maximum overlap
    peak = max(int(np.sum((start <= t) & (end > t))) for t in start)
    assert lane.max() + 1 == peak


# -- Monte Carlo win (§4.3) -----------------------------------------------------------------------
def _fake_monte_carlo():
    sigma = [0.0, 0.5, 1.0]
    rng = np.random.default_rng(3)
    cont = rng.uniform(100, 200, size=(3, 20))
    static = cont * np.array([1.0, 2.0, 3.0])[:, None]
    data = np.stack([static, cont])
    return xr.Dataset({"makespan": (("policy", "output.sigma", "replicate"), data)},
                      coords={"policy": ["static", "continuous"], "output.sigma": sigma,
                              "replicate": np.arange(20)})


def test_win_draws_one_box_per_parameter_value():
    ax = plot_batching_win(_fake_monte_carlo(), "output.sigma")
    assert isinstance(ax, Axes)
    assert len(ax.patches) == 3
    median = next(line for line in ax.lines if line.get_label().startswith("median"))
    np.testing.assert_allclose(median.get_ydata(), [1.0, 2.0, 3.0])
    np.testing.assert_allclose(median.get_xdata(), [0.0, 0.5, 1.0])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "0.5", "1"]


def test_win_over_a_categorical_parameter():
    mc = _fake_monte_carlo().rename({"output.sigma": "admission"})
    mc = mc.assign_coords(admission=["final", "prompt", "paged"])
    ax = plot_batching_win(mc, "admission")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["final", "prompt", "paged"]
    assert len(ax.patches) == 3


@pytest.mark.parametrize("kwargs, error", [
    ({"monte_carlo": "mc"}, TypeError),
    ({"parameter": 1}, TypeError),
    ({"parameter": "arrival.rate"}, ValueError),
    ({"metric": "goodput"}, ValueError),
    ({"baseline": "paged"}, ValueError),
])
def test_win_rejects_bad_input(kwargs, error):
    args = {"monte_carlo": _fake_monte_carlo(), "parameter": "output.sigma"} | kwargs
    with pytest.raises(error):
        plot_batching_win(**args)


# -- break-even (§6.3) ----------------------------------------------------------------------------
def test_break_even_curve_and_marks():
    ax = plot_break_even(PROVISIONED, PAYG, output_fractions=[0.1, 0.3, 0.5])
    assert isinstance(ax, Axes)
    curve = ax.lines[0]
    # guide §6.3: 76.92% at 10% output, 40.00% at 50%, rel 1e-4
    np.testing.assert_allclose(curve.get_ydata()[[0, 2]], [76.92, 40.00], rtol=1e-4)
    assert len(ax.texts) == 2
    assert "76.92%" in ax.texts[0].get_text() and "40.00%" in ax.texts[1].get_text()


def test_break_even_without_marks():
    ax = plot_break_even(PROVISIONED, PAYG, marks=None)
    assert len(ax.texts) == 0
    assert len(ax.lines[0].get_xdata()) == 101


@pytest.mark.parametrize("kwargs, error", [
    ({"output_fractions": [1.5]}, ValueError),
    ({"output_fractions": []}, ValueError),
    ({"marks": "0.1"}, TypeError),
    ({"payg": PROVISIONED}, TypeError),
])
def test_break_even_rejects_bad_input(kwargs, error):
    args = {"provisioned": PROVISIONED, "payg": PAYG} | kwargs
    with pytest.raises(error):
        plot_break_even(**args)


# -- spillover (§6.4) -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def demand():
    return planning.bursty_demand(96, periods_per_day=24, seed=1)


def test_spillover_draws_costs_and_the_four_sizings(demand):
    q = [0.0, 0.1, 0.5, 1.0]
    ax = plot_spillover(demand, PAYG, PROVISIONED, output_fraction=0.1, quantiles=q)
    assert isinstance(ax, Axes)
    assert _labels(ax) == ["total", "dedicated floor", "pay-as-you-go spillover",
                           "pay-as-you-go only"]
    expected = planning.plan_with_spillover(demand, PAYG, PROVISIONED, output_fraction=0.1,
                                            quantile=q)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), expected["total_cost"].values)
    names = sorted(t.get_text().split(":")[0] for t in ax.texts)
    assert names == ["optimal", "p10", "p50", "peak"]
    assert ax.get_yscale() == "log"


@pytest.mark.parametrize("kwargs, error", [
    ({"quantiles": [1.2]}, ValueError),
    ({"demand": "demand"}, TypeError),
    ({"demand": [-1.0, 2.0]}, ValueError),
    ({"output_fraction": 2.0}, ValueError),
])
def test_spillover_rejects_bad_input(demand, kwargs, error):
    args = {"demand": demand, "payg": PAYG, "floor_unit_cost": PROVISIONED,
            "output_fraction": 0.1} | kwargs
    with pytest.raises(error):
        plot_spillover(**args)


# -- self-hosting (§6.5) --------------------------------------------------------------------------
def test_self_hosting_with_and_without_engineering():
    ax = plot_self_hosting(SELF_HOSTED, PAYG, 0.1, monthly_tokens=[1e9, 20e9])
    assert isinstance(ax, Axes)
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert len(_labels(ax)) == 3
    # docs/conventions.md: $42,520/month → $42.52/M at 1B, $2.13/M at 20B; GPU-only $17,520 → $17.52
    np.testing.assert_allclose(ax.lines[0].get_ydata(), [42.52, 2.126], rtol=1e-9)
    np.testing.assert_allclose(ax.lines[1].get_ydata(), [17.52, 0.876], rtol=1e-9)
    crossings = sorted(t.get_text().split("B")[0] for t in ax.texts)
    # docs/conventions.md: crossover ≈ 10.9B with the line; 17,520 / 3.90 = 4.49B without
    assert crossings == ["crossover 10.90", "crossover 4.49"]


@pytest.mark.parametrize("kwargs, error", [
    ({"selfhosted": PROVISIONED}, TypeError),
    ({"monthly_tokens": [0.0, 1e9]}, ValueError),
    ({"output_fraction": -0.1}, ValueError),
])
def test_self_hosting_rejects_bad_input(kwargs, error):
    args = {"selfhosted": SELF_HOSTED, "payg": PAYG, "output_fraction": 0.1} | kwargs
    with pytest.raises(error):
        plot_self_hosting(**args)


# -- tensor parallelism (§5) ----------------------------------------------------------------------
def test_tp_scaling_draws_both_models(guide_model, lab_gpu):
    ax = plot_tp_scaling(guide_model, lab_gpu, [1, 2, 8], batch_size=4, context_length=1024)
    assert isinstance(ax, Axes)
    assert len(ax.lines) == 2
    twin = next(other for other in ax.figure.axes if other is not ax)
    assert len(twin.lines) == 2
    expected = roofline.tp_scaling(guide_model, lab_gpu, [1, 2, 8], 4, 1024)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), expected["decode_step_time"].values * 1e3)
    np.testing.assert_allclose(ax.lines[1].get_ydata(),
                               expected["decode_step_time_simple"].values * 1e3)
    # the 70B fp16 weights do not fit one 80 GiB card (guide §2.4): one shaded degree
    assert len(ax.patches) == 1
    assert len(ax.get_legend().get_texts()) == 4


def test_tp_scaling_draws_the_engine_and_its_simple_model(guide_model, lab_gpu):
    """The solid curves are the engine's, the dashed ones the same engine without
    communication: step times from tp_scaling, throughputs from decode_throughput."""
    from rooflinekit import Engine
    engine = Engine(allreduce="ring", bandwidth_efficiency=0.8)
    ax = plot_tp_scaling(guide_model, lab_gpu, [1, 2, 8], batch_size=4, context_length=1024,
                         engine=engine)
    expected = roofline.tp_scaling(guide_model, lab_gpu, [1, 2, 8], 4, 1024, engine=engine)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), expected["decode_step_time"].values * 1e3)
    np.testing.assert_allclose(ax.lines[1].get_ydata(),
                               expected["decode_step_time_simple"].values * 1e3)
    twin = next(other for other in ax.figure.axes if other is not ax)
    for line, one in zip(twin.lines, (engine, engine.replace(allreduce="guide"))):
        np.testing.assert_allclose(line.get_ydata(), [
            roofline.decode_throughput(guide_model, lab_gpu, 4, 1024, t, engine=one)
            for t in (1, 2, 8)], rtol=1e-12)


@pytest.mark.parametrize("kwargs, error", [
    ({"degrees": [0, 2]}, ValueError),
    ({"degrees": "12"}, TypeError),
    ({"batch_size": 0}, ValueError),
    ({"ax": 3}, TypeError),
])
def test_tp_scaling_rejects_bad_input(guide_model, lab_gpu, kwargs, error):
    with pytest.raises(error):
        plot_tp_scaling(guide_model, lab_gpu, **kwargs)


def test_layouts_draws_every_layout_it_lists():
    from rooflinekit import catalog
    model, gpu = catalog.model("Llama-3.1-70B"), catalog.gpu("H100-SXM-80GB")
    ax = plotting.plot_layouts(model, gpu, 8, batch_size=16, context_length=2048)
    table = roofline.layouts(model, gpu, 8, batch_size=16, context_length=2048)
    fitting, not_fitting = ax.collections
    np.testing.assert_allclose(fitting.get_offsets()[:, 0],
                               table.decode_step_time.values[table.fits.values] * 1e3)
    np.testing.assert_allclose(not_fitting.get_offsets()[:, 1],
                               table.tokens_per_second_per_gpu.values[~table.fits.values])
    assert len(ax.texts) == table.sizes["layout"]


def test_layouts_draws_the_engine_given():
    from rooflinekit import Engine, catalog
    model, gpu = catalog.model("Llama-3.1-70B"), catalog.gpu("H100-SXM-80GB")
    engine = Engine(bandwidth_efficiency=0.7, step_overhead=1e-3)
    ax = plotting.plot_layouts(model, gpu, 8, batch_size=16, context_length=2048, engine=engine,
                               max_tp=4)
    table = roofline.layouts(model, gpu, 8, batch_size=16, context_length=2048, engine=engine,
                             max_tp=4)
    fitting, not_fitting = ax.collections
    np.testing.assert_allclose(fitting.get_offsets()[:, 0],
                               table.decode_step_time.values[table.fits.values] * 1e3)
    assert len(ax.texts) == table.sizes["layout"]
    with pytest.raises(TypeError, match="engine"):
        plotting.plot_layouts(model, gpu, 8, engine={"bandwidth_efficiency": 0.7})


@pytest.mark.parametrize("kwargs, error", [({"n_gpus": 0}, ValueError), ({"ax": 3}, TypeError)])
def test_layouts_rejects_bad_input(kwargs, error):
    from rooflinekit import catalog
    args = {"model": catalog.model("Llama-3.1-8B"), "gpu": catalog.gpu("H100-SXM-80GB"),
            "n_gpus": 4} | kwargs
    with pytest.raises(error):
        plotting.plot_layouts(**args)


def test_importing_plotting_does_not_import_matplotlib():
    import subprocess
    import sys
    code = ("import sys, rooflinekit.plotting; "
            "sys.exit('matplotlib' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0


# --- capacity under load -----------------------------------------------------------------------

def _load_curve():
    traffic = rk.Traffic(2.0, 500, 50)
    return rk.planning.load_curve(traffic, rk.SLO(ttft=0.5, itl=0.03), model="Llama-3.1-8B",
                                  gpu="H100-SXM-80GB", rates=[1.0, 4.0], replicates=2,
                                  requests=40)


def test_load_curves_draw_the_medians_and_the_slo():
    curve = _load_curve()
    slo = rk.SLO(ttft=0.5, itl=0.03)
    ax = plotting.plot_load_curves({"h100": curve}, slo, metric="ttft")
    line = ax.get_lines()[0]
    np.testing.assert_allclose(line.get_ydata(), curve["p95_ttft"].median("replicate") * 1e3)
    assert ax.get_lines()[-1].get_ydata()[0] == pytest.approx(500.0)       # the SLO line
    with pytest.raises(ValueError, match="metric"):
        plotting.plot_load_curves({"h100": curve}, slo, metric="tpot")
    with pytest.raises(TypeError, match="curves"):
        plotting.plot_load_curves([], slo)


def test_decision_bars_are_the_table():
    traffic = rk.Traffic(2.0, 500, 50)
    ds = rk.plan(traffic, rk.SLO(ttft=0.5), models="Llama-3.1-8B", gpus="H100-SXM-80GB",
                 replicates=2, requests=40)
    table = rk.decision_table(rk.cheapest_plan(ds, by=None), traffic,
                              payg=rk.PayAsYouGo(3.0, 12.0))
    ax = plotting.plot_decision(table)
    widths = sorted(p.get_width() for p in ax.patches)
    assert widths == pytest.approx(sorted(table["monthly_cost"].values))
    with pytest.raises(TypeError, match="table"):
        plotting.plot_decision(ds)
