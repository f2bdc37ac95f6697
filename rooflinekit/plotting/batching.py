"""The batching figures: a Gantt timeline of static against continuous batching (guide §4.2–4.3),
and the Monte Carlo win against the spread of output lengths (guide §4.3).
"""

from __future__ import annotations

import numpy as np

from rooflinekit._validation import (
    check_mapping,
    check_one_of,
    check_string,
    describe,
)
from rooflinekit.plotting._axes import _axes, _check_ax

__all__ = ["plot_batching_timeline", "plot_batching_win"]


def _lanes(start, end):
    """Row of each interval in a Gantt chart: the lowest row free at its start (layout only)."""
    order = np.lexsort((end, start))
    free_at, lane = [], np.empty(len(start), dtype=int)
    for i in order:
        row = next((k for k, t in enumerate(free_at) if t <= start[i]), len(free_at))
        if row == len(free_at):
            free_at.append(end[i])
        else:
            free_at[row] = end[i]
        lane[i] = row
    return lane


def plot_batching_timeline(results, ax=None):
    """Static vs continuous batching as a Gantt chart of batch slots over time (§4.2–4.3).

    Parameters
    ----------
    results : mapping of str -> xarray.Dataset
        Runs of :meth:`~rooflinekit.StaticBatcher.run` / :meth:`~rooflinekit.ContinuousBatcher.run`
        on the same workload, by label; each needs the per-request ``admit``, ``finish`` and
        ``output_tokens`` and the summaries ``makespan`` and ``mean_service_latency``.
    ax : matplotlib.axes.Axes, optional
        Where to draw.

    Returns
    -------
    matplotlib.axes.Axes
        One band of rows per policy, top to bottom in the order given; each bar is a request
        holding a slot from admission to finish, coloured by its output length, and a dotted line
        marks each policy's makespan.

    Notes
    -----
    The results do not say which slot a request held, so the rows are a layout: each request
    takes the lowest row free when it is admitted. Rejected requests (``finish`` NaN) are not
    drawn. Times are in the runs' ``time_units`` (ticks for the guide's clock).

    References
    ----------
    .. [1] Serving-capacity guide §4.2 (static batching's waste) and §4.3 (1,220 vs 440 ticks).
    .. [2] Yu et al., "Orca: A Distributed Serving System for Transformer-Based Generative
       Models", OSDI 2022.
    """
    from matplotlib.patches import Patch
    _check_ax(ax)
    results = check_mapping("results", results)
    if not results:
        raise ValueError("results must hold at least one run")
    need = ("admit", "finish", "output_tokens", "makespan", "mean_service_latency")
    for label, ds in results.items():
        missing = [v for v in need if not hasattr(ds, "data_vars") or v not in ds.data_vars]
        if missing:
            raise ValueError(f"results[{label!r}] is not a batcher run: missing {missing}")
    lengths = np.unique(np.concatenate([np.asarray(ds["output_tokens"]).ravel()
                                        for ds in results.values()]))
    colour = {n: f"C{k % 10}" for k, n in enumerate(lengths)}
    ax = _axes(ax)
    top, centres, names = 0, [], []
    for label, ds in results.items():
        admit, finish = np.asarray(ds["admit"], float), np.asarray(ds["finish"], float)
        done = np.isfinite(admit) & np.isfinite(finish)
        lane = _lanes(admit[done], finish[done])
        rows = int(lane.max()) + 1 if lane.size else 1
        out = np.asarray(ds["output_tokens"])[done]
        ax.barh(top + lane, finish[done] - admit[done], left=admit[done], height=0.8,
                color=[colour[n] for n in out], edgecolor="white", linewidth=1.5)
        makespan = float(ds["makespan"])
        ax.plot([makespan, makespan], [top - 0.5, top + rows - 0.5], color="black", ls=":")
        ax.annotate(f"makespan {makespan:,.0f}\nmean service latency "
                    f"{float(ds['mean_service_latency']):,.1f}",
                    (makespan, top + rows / 2), xytext=(6, 0), textcoords="offset points",
                    fontsize=8, va="center")
        centres.append(top + (rows - 1) / 2)
        names.append(f"{label}\n({rows} slots used)")
        top += rows + 1
        ax.axhline(top - 1, color="grey", lw=0.5)
    units = next(iter(results.values())).attrs.get("time_units", "tick")
    ax.set_yticks(centres, names)
    ax.set_ylim(top - 1, -1)
    ax.set_xlabel(f"time [{units}]")
    ax.set_title("Batch slots over time: each bar is one request, admission to finish")
    ax.legend(handles=[Patch(color=colour[n], label=f"{int(n):,} output tokens")
                       for n in lengths], loc="lower right", fontsize=8)
    ax.grid(True, axis="x", alpha=0.3)
    return ax


def plot_batching_win(monte_carlo, parameter, metric="makespan", baseline="static",
                      policy="continuous", ax=None):
    """Distribution of the continuous-batching win over a swept workload parameter (§4.3).

    Parameters
    ----------
    monte_carlo : xarray.Dataset
        A :func:`rooflinekit.monte_carlo` result with dimensions ``policy``, ``parameter`` and
        ``replicate``.
    parameter : str
        The swept dimension drawn along the x axis, e.g. ``"output.sigma"``.
    metric : str
        The summary compared (default ``"makespan"``); the win is ``baseline / policy`` per
        replicate, so lower-is-better metrics (makespan, latencies) read as a speed-up.
    baseline, policy : str
        Labels along ``policy``.
    ax : matplotlib.axes.Axes, optional
        Where to draw.

    Returns
    -------
    matplotlib.axes.Axes
        One box per parameter value (quartiles, whiskers at the 5th and 95th percentiles) with the
        median joined by a line, and a dashed line at 1 (no win).

    References
    ----------
    .. [1] Serving-capacity guide §4.3 and §9 ("its win scales with output-length variance").
    """
    _check_ax(ax)
    if not hasattr(monte_carlo, "data_vars"):
        raise TypeError(f"monte_carlo must be an xarray.Dataset; got {describe(monte_carlo)}")
    for name, value in (("parameter", parameter), ("metric", metric), ("baseline", baseline),
                        ("policy", policy)):
        check_string(name, value)
    if metric not in monte_carlo.data_vars:
        raise ValueError(f"metric {metric!r} is not in the Monte Carlo result")
    da = monte_carlo[metric]
    for dim in ("policy", parameter, "replicate"):
        if dim not in da.dims:
            raise ValueError(f"the Monte Carlo result has no dimension {dim!r} (dims {da.dims})")
    policies = list(da["policy"].values)
    for name, value in (("baseline", baseline), ("policy", policy)):
        check_one_of(name, value, policies)
    win = da.sel(policy=baseline) / da.sel(policy=policy)
    win = win.transpose(parameter, "replicate", ...)
    values = win[parameter].values
    samples = [np.asarray(win.isel({parameter: k})).ravel() for k in range(values.size)]
    ax = _axes(ax)
    # A numeric parameter keeps its spacing on the axis; a categorical one (an admission
    # policy, say) is drawn at 0, 1, 2, ...
    numeric = np.issubdtype(values.dtype, np.number)
    positions = values.astype(float) if numeric else np.arange(values.size, dtype=float)
    gaps = np.diff(np.sort(positions))
    width = 0.5 * gaps.min() if gaps.size and gaps.min() > 0 else 0.5
    ax.boxplot(samples, positions=positions, whis=(5, 95), widths=width, showfliers=False,
               patch_artist=True, boxprops={"facecolor": "C0", "alpha": 0.35},
               medianprops={"color": "C0"})
    ax.plot(positions, [np.median(s) for s in samples], "o-", color="C0",
            label=f"median {baseline} / {policy} {metric}")
    ax.axhline(1.0, color="grey", ls="--", lw=0.8, label="no win")
    ax.plot([], [], "s", color="C0", alpha=0.35, label="quartiles; whiskers 5th–95th percentile")
    ax.set_xticks(positions, [f"{v:g}" if numeric else str(v) for v in values])
    ax.set_xlim(positions.min() - width, positions.max() + width)
    ax.set_xlabel(parameter)
    ax.set_ylabel(f"{baseline} / {policy} {metric} [×]")
    ax.set_title(f"Continuous batching's win grows with output-length spread "
                 f"({monte_carlo.sizes['replicate']} replicates per box)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return ax
