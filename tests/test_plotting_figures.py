"""The guide's figures read: requests and padding, a numeric spread axis past the peak, labels
that do not overlap, and the examples on the guide's own settings."""

import os
import subprocess
import sys
from itertools import combinations
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import xarray as xr  # noqa: E402

import rooflinekit as rk  # noqa: E402
from rooflinekit import catalog, planning, pricing  # noqa: E402
from rooflinekit.batching import ContinuousBatcher, StaticBatcher  # noqa: E402
from rooflinekit.guide import guide_spillover_figures  # noqa: E402
from rooflinekit.plotting import (  # noqa: E402
    plot_batching_timeline,
    plot_batching_win,
    plot_spillover,
    plot_tp_scaling,
)
from rooflinekit.workloads import guide_workload  # noqa: E402

EXAMPLES = Path(__file__).parents[1] / "examples"


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _boxes(ax, artists):
    renderer = ax.figure.canvas.get_renderer()
    return [a.get_window_extent(renderer) for a in artists]


# -- timeline: requests, and the padding marked -------------------------------------------------
def test_static_panel_draws_each_request_and_its_padding():
    wl = guide_workload()
    static = StaticBatcher(8).run(wl)
    ax = plot_batching_timeline({"static": static})
    # one solid bar per request, as long as its generation: output_tokens ticks on the tick clock
    widths = sorted(p.get_width() for p in ax.patches)
    assert widths == sorted(static["output_tokens"].values.astype(float))
    (padding,) = ax.collections
    area = sum(path.get_extents().width for path in padding.get_paths())
    # the hatched padding is the run's own count of idle slot-time: 6,460 slot-ticks
    assert area == pytest.approx(float(static["padding_slot_steps"])) == 6460
    assert padding.get_hatch() == "///"
    assert "padding (hatched) 6,460" in " ".join(t.get_text() for t in ax.texts)
    # every bar ends by the makespan
    assert max(p.get_x() + p.get_width() for p in ax.patches) <= float(static["makespan"])


def test_continuous_panel_has_no_padding():
    ax = plot_batching_timeline({"continuous": ContinuousBatcher(16).run(guide_workload())})
    assert len(ax.collections) == 0
    assert "padding (hatched) 0" in " ".join(t.get_text() for t in ax.texts)


# -- the win against spread: numeric axis, past the peak ------------------------------------------
def _peaked_monte_carlo(sigma):
    rng = np.random.default_rng(5)
    cont = rng.uniform(100, 200, size=(len(sigma), 30))
    win = 1 + 3 * np.asarray(sigma) * np.exp(-np.asarray(sigma) / 1.3)   # rises, then falls
    return xr.Dataset({"makespan": (("policy", "output.sigma", "replicate"),
                                    np.stack([cont * win[:, None], cont]))},
                      coords={"policy": ["static", "continuous"], "output.sigma": sigma,
                              "replicate": np.arange(30)})


def test_win_axis_is_numeric_and_the_peak_is_marked():
    sigma = [0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0]            # uneven steps
    ax = plot_batching_win(_peaked_monte_carlo(sigma), "output.sigma")
    ticks = ax.get_xticks()
    np.testing.assert_allclose(ticks, sigma)                 # a tick at each value, at its value
    x = ax.transData.transform(np.c_[ticks, np.zeros_like(ticks)])[:, 0]
    gaps = np.diff(x) / np.diff(sigma)
    np.testing.assert_allclose(gaps, gaps[0], rtol=1e-9)     # pixels per unit of sigma: constant
    peak = [t.get_text() for t in ax.texts if t.get_text().startswith("peak")]
    s = np.asarray(sigma)
    win = 1 + 3 * s * np.exp(-s / 1.3)
    assert peak == [f"peak {win.max():.2f}× at {s[win.argmax()]:g}"] == ["peak 2.42× at 1.5"]
    assert ax.get_xlim()[1] > 3.0


def test_example_win_reaches_past_the_peak():
    text = (EXAMPLES / "plot_batching_win.py").read_text()
    assert "sigmas = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0]" in text


# -- spillover: the guide's month, labels apart ---------------------------------------------------
PAYG = pricing.PayAsYouGo(input_per_mtok=3.0, output_per_mtok=12.0)
PROVISIONED = pricing.Provisioned(monthly_cost=12_000, monthly_capacity_tokens=4e9)


def test_spillover_labels_do_not_overlap_and_match_the_guide():
    demand = planning.bursty_demand(seed=0)
    fig, ax = plt.subplots(figsize=(8.5, 5.5), layout="constrained")
    plot_spillover(demand, PAYG, PROVISIONED, output_fraction=0.1, ax=ax)
    fig.canvas.draw()
    labels = [t for t in ax.texts if ":" in t.get_text()]
    assert len(labels) == 4
    boxes = _boxes(ax, labels)
    for a, b in combinations(boxes, 2):
        assert not a.overlaps(b)
    legend = ax.get_legend().get_window_extent(fig.canvas.get_renderer())
    assert not any(box.overlaps(legend) for box in boxes)
    guide = guide_spillover_figures()            # what `rooflinekit guide` prints
    text = " ".join(t.get_text() for t in labels)
    for name in guide.sizing.values:
        assert f"{name}: ${float(guide.total_cost.sel(sizing=name)):,.0f}" in text


# -- tensor parallelism: the guide's batch, the label clear of the markers ------------------------
def test_tp_label_clear_of_markers():
    model, gpu = catalog.model("guide-70b"), catalog.gpu("guide-lab-80GB")
    fig, ax = plt.subplots(figsize=(8.5, 5.5), layout="constrained")
    plot_tp_scaling(model, gpu, [1, 2, 4, 8, 16], batch_size=32, context_length=4096, ax=ax,
                    engine=rk.Engine(allreduce="ring"))
    fig.canvas.draw()
    (label,) = [t for t in ax.texts if "do not fit" in t.get_text()]
    box = _boxes(ax, [label])[0]
    for axes in fig.axes:
        for line in axes.lines:
            for x, y in axes.transData.transform(line.get_xydata()):
                # a marker is ~6 points across: keep its whole disc off the label
                assert not box.expanded(1.0, 1.0).padded(6).contains(x, y)


def test_tp_allreduce_option_is_checked():
    model, gpu = catalog.model("guide-70b"), catalog.gpu("guide-lab-80GB")
    with pytest.raises(TypeError, match="allreduce"):
        plot_tp_scaling(model, gpu, engine=rk.Engine(allreduce="tree"))
    # an engine= that is not one, and the old option, are refused by name
    with pytest.raises(TypeError, match="engine"):
        plot_tp_scaling(model, gpu, engine="ring")
    with pytest.raises(TypeError, match="allreduce"):
        plot_tp_scaling(model, gpu, allreduce="ring")


@pytest.mark.parametrize("script, needle", [
    ("plot_tp_scaling.py", "batch_size=32"),
    ("plot_spillover.py", "bursty_demand(seed=0)"),
])
def test_examples_use_the_guides_settings(script, needle):
    assert needle in (EXAMPLES / script).read_text()


def test_spillover_example_prints_the_guides_table(tmp_path):
    env = dict(os.environ, MPLBACKEND="Agg")
    run = subprocess.run([sys.executable, str(EXAMPLES / "plot_spillover.py"), str(tmp_path)],
                         check=False,
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    guide = guide_spillover_figures()
    for name in guide.sizing.values:
        assert f"{float(guide.total_cost.sel(sizing=name)):.3f}" in run.stdout
