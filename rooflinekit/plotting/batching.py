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


def _generation_end(admit, first_token, finish, output_tokens):
    """When each request produced its last token (layout only: see the timeline's Notes)."""
    end = finish.copy()
    first = np.where(np.isfinite(first_token), first_token, admit)
    keys = np.stack([admit, finish], axis=1)
    _, group = np.unique(keys, axis=0, return_inverse=True)
    group = np.ravel(group)
    for g in np.unique(group):
        members = group == g
        longest = output_tokens[members].max()
        if longest > 1:
            share = (output_tokens[members] - 1) / (longest - 1)
            end[members] = first[members] + share * (finish[members] - first[members])
    return np.minimum(end, finish)


def plot_batching_timeline(results, ax=None):
    """Static vs continuous batching as a Gantt chart of requests in batch slots (§4.2–4.3).

    Parameters
    ----------
    results : mapping of str -> xarray.Dataset
        Runs of :meth:`~rooflinekit.StaticBatcher.run` / :meth:`~rooflinekit.ContinuousBatcher.run`
        on the same workload, by label; each needs the per-request ``admit``, ``first_token``,
        ``finish`` and ``output_tokens`` and the summaries ``makespan`` and
        ``mean_service_latency``.
    ax : matplotlib.axes.Axes, optional
        Where to draw.

    Returns
    -------
    matplotlib.axes.Axes
        One band of rows per policy, in the order given; each request a bar (``ax.patches``),
        solid by output length from admission to its last token, then hatched to its finish:
        the padding a static batch holds its slot for. A dotted line marks each makespan,
        labelled with it, the mean service latency and the padding [slot × time].

    Notes
    -----
    The rows are a layout (each request takes the lowest row free at admission). A static
    batch's members step together, so a member's n-th token comes at the batch's n-th step
    (exact on the tick clock, where the padding sums to ``padding_slot_steps``; evenly spaced
    steps on the roofline clock). Rejected requests are not drawn. Times in ``time_units``.

    References
    ----------
    .. [1] Serving-capacity guide §4.2 (static batching's waste) and §4.3 (1,220 vs 440 ticks).
    .. [2] Yu et al., "Orca: A Distributed Serving System for Transformer-Based Generative
       Models", OSDI 2022.
    """
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Patch, Rectangle
    _check_ax(ax)
    results = check_mapping("results", results)
    if not results:
        raise ValueError("results must hold at least one run")
    need = ("admit", "first_token", "finish", "output_tokens", "makespan",
            "mean_service_latency")
    for label, ds in results.items():
        missing = [v for v in need if not hasattr(ds, "data_vars") or v not in ds.data_vars]
        if missing:
            raise ValueError(f"results[{label!r}] is not a batcher run: missing {missing}")
    units = next(iter(results.values())).attrs.get("time_units", "tick")
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
        start, stop = admit[done], finish[done]
        first = np.asarray(ds["first_token"], float)[done]
        end = _generation_end(start, first, stop, out.astype(float))
        colours = [colour[n] for n in out]
        ax.barh(top + lane, end - start, left=start, height=0.8, color=colours,
                edgecolor="white", linewidth=1.5)
        pad = stop - end
        padded = pad > 0
        if padded.any():
            # one collection, not a bar per request: ax.patches stays one bar per request
            boxes = [Rectangle((end[i], top + lane[i] - 0.4), pad[i], 0.8)
                     for i in np.flatnonzero(padded)]
            ax.add_collection(PatchCollection(
                boxes, facecolor="white", hatch="///", linewidth=0.8,
                edgecolor=[colours[i] for i in np.flatnonzero(padded)],
                label="padding"), autolim=True)
        makespan = float(ds["makespan"])
        ax.plot([makespan, makespan], [top - 0.5, top + rows - 0.5], color="black", ls=":")
        ax.annotate(f"makespan {makespan:,.0f}\nmean service latency "
                    f"{float(ds['mean_service_latency']):,.1f}\npadding (hatched) "
                    f"{float(pad.sum()):,.0f} slot×{units}",
                    (makespan, top + rows / 2), xytext=(6, 0), textcoords="offset points",
                    fontsize=8, va="center")
        centres.append(top + (rows - 1) / 2)
        names.append(f"{label}\n({rows} slots used)")
        top += rows + 1
        ax.axhline(top - 1, color="grey", lw=0.5)
    ax.set_yticks(centres, names)
    ax.set_ylim(top - 1, -1)
    ax.set_xlabel(f"time [{units}]")
    ax.set_title("Requests in batch slots: solid while generating, hatched while padding")
    ax.legend(handles=[Patch(color=colour[n], label=f"{int(n):,} output tokens")
                       for n in lengths], loc="lower right", fontsize=8)
    ax.autoscale_view()
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
        median joined by a line, and a dashed line at 1 (no win). A numeric parameter is drawn
        at its values on a linear axis, and a median peak inside the range is marked.

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
    # A numeric parameter is drawn on a true numeric axis (uneven steps stay uneven, a tick at
    # each value); a categorical one (an admission policy, say) at 0, 1, 2, ...
    numeric = np.issubdtype(values.dtype, np.number)
    positions = values.astype(float) if numeric else np.arange(values.size, dtype=float)
    gaps = np.diff(np.sort(positions))
    width = 0.5 * gaps.min() if gaps.size and gaps.min() > 0 else 0.5
    ax.boxplot(samples, positions=positions, whis=(5, 95), widths=width, showfliers=False,
               patch_artist=True, boxprops={"facecolor": "C0", "alpha": 0.35},
               medianprops={"color": "C0"}, manage_ticks=False)
    medians = np.array([np.median(s) for s in samples])
    ax.plot(positions, medians, "o-", color="C0",
            label=f"median {baseline} / {policy} {metric}")
    ax.axhline(1.0, color="grey", ls="--", lw=0.8, label="no win")
    ax.plot([], [], "s", color="C0", alpha=0.35, label="quartiles; whiskers 5th–95th percentile")
    ax.set_xticks(positions, [f"{v:g}" if numeric else str(v) for v in values])
    if numeric:
        peak = int(np.argmax(medians))
        if 0 < peak < values.size - 1:       # an interior peak: the win rises, then falls
            ax.annotate(f"peak {medians[peak]:.2f}× at {values[peak]:g}",
                        (positions[peak], medians[peak]), xytext=(0, 28),
                        textcoords="offset points", ha="center", fontsize=8,
                        arrowprops={"arrowstyle": "-", "color": "grey", "lw": 0.8})
    ax.set_xlim(positions.min() - width, positions.max() + width)
    ax.set_xlabel(parameter)
    ax.set_ylabel(f"{baseline} / {policy} {metric} [×]")
    ax.set_title(f"Continuous batching's win against {parameter} "
                 f"({monte_carlo.sizes['replicate']} replicates per box)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return ax
