"""Capacity under load: latency against request rate with the SLO, and the buying decision."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import xarray as xr

from rooflinekit import dims
from rooflinekit._validation import check_one_of, describe
from rooflinekit.plotting._axes import _axes, _check_ax

__all__ = ["plot_load_curves", "plot_decision"]

#: What each metric of :func:`plot_load_curves` draws, and its SLO target's name.
_METRICS = {"ttft": ("ttft", "TTFT"), "itl": ("token_itl", "ITL (every gap)"),
            "e2e": ("latency", "end-to-end latency")}


def plot_load_curves(curves, slo, metric="ttft", ax=None):
    """A latency percentile against the request rate per replica, one line per configuration.

    Parameters
    ----------
    curves : mapping of str -> xarray.Dataset
        Label -> :func:`rooflinekit.planning.load_curve` result.
    slo : SLO
        Its quantile picks the percentile drawn (``p95_*`` for 0.95; the nearest of 50, 95, 99
        otherwise) and its target for ``metric`` is drawn as a dashed line.
    metric : {"ttft", "itl", "e2e"}
        Which latency.
    ax : matplotlib.axes.Axes, optional
        Where to draw.

    Returns
    -------
    matplotlib.axes.Axes
        Median over replicates as a line, the 10th–90th percentile over replicates as a band
        [ms against requests/s], both axes logarithmic in latency.
    """
    _check_ax(ax)
    check_one_of("metric", metric, tuple(_METRICS))
    if not isinstance(curves, Mapping) or not curves:
        raise TypeError(f"curves must be a non-empty mapping of labels to load_curve Datasets; "
                        f"got {describe(curves)}")
    for label, ds in curves.items():
        if not isinstance(ds, xr.Dataset) or dims.REQUEST_RATE not in ds.dims:
            raise TypeError(f"curves[{label!r}] must be a load_curve Dataset; got {describe(ds)}")
    percentile = min((50, 95, 99), key=lambda p: abs(p / 100 - float(slo.quantile)))
    name, title = _METRICS[metric]
    variable = f"p{percentile}_{name}"
    ax = _axes(ax)
    for k, (label, ds) in enumerate(curves.items()):
        rate = ds[dims.REQUEST_RATE].values
        values = ds[variable].values * 1e3
        ax.plot(rate, np.median(values, axis=-1), color=f"C{k}", marker="o", ms=3, label=label)
        ax.fill_between(rate, np.quantile(values, 0.1, axis=-1),
                        np.quantile(values, 0.9, axis=-1), color=f"C{k}", alpha=0.18, lw=0)
    target = slo.targets.get(metric)
    if target is not None:
        ax.axhline(target * 1e3, color="black", ls="--", lw=1,
                   label=f"SLO: p{percentile} {title} ≤ {target * 1e3:g} ms")
    from matplotlib.ticker import FormatStrFormatter
    ax.set_yscale("log")
    for axis in (ax.yaxis,):
        axis.set_major_formatter(FormatStrFormatter("%g"))
        axis.set_minor_formatter(FormatStrFormatter("%g"))
    ax.set_xlabel("request rate per replica [requests/s]")
    ax.set_ylabel(f"p{percentile} {title} [ms]")
    ax.legend(fontsize="small")
    return ax


def plot_decision(table, ax=None):
    """Monthly cost of each way to buy the capacity, the cheapest admissible one marked.

    Parameters
    ----------
    table : xarray.Dataset
        :func:`rooflinekit.planning.decision_table` of one cheapest configuration (no dimension
        but ``option``).
    ax : matplotlib.axes.Axes, optional
        Where to draw.

    Returns
    -------
    matplotlib.axes.Axes
        Horizontal bars [USD/month] (a log axis when the costs differ more than 20-fold),
        labelled with USD per 1M tokens; excluded options hatched and labelled "(excluded)".
    """
    _check_ax(ax)
    if not isinstance(table, xr.Dataset) or "choice" not in table or \
            set(table.dims) != {dims.OPTION}:
        raise TypeError(f"table must be a decision_table Dataset over option alone; "
                        f"got {describe(table)}")
    ax = _axes(ax)
    options = [str(o) for o in table[dims.OPTION].values]
    cost = table["monthly_cost"].values
    per_million = table["cost_per_million_tokens"].values
    admissible = table["admissible"].values
    choice = str(table["choice"].values)
    y = np.arange(len(options))
    colors = ["C2" if o == choice else "C0" for o in options]
    ax.barh(y, cost, color=colors, hatch=[None if a else "//" for a in admissible])
    for k, option in enumerate(options):
        # "\$": a bare dollar sign would start matplotlib's mathtext
        note = f"  \\${cost[k]:,.0f}/month, \\${per_million[k]:.2f}/1M tokens"
        if not admissible[k]:
            note += " (excluded)"
        ax.annotate(note, (cost[k], k), va="center", fontsize="small")
    ax.set_yticks(y, options)
    ax.set_xlabel("monthly cost [USD/month]")
    if cost.min() > 0 and cost.max() / cost.min() > 20:
        ax.set_xscale("log")                  # the options can differ by orders of magnitude
        ax.set_xlim(cost.min() / 3, cost.max() * 40)
    else:
        ax.set_xlim(0, cost.max() * 1.9)
    ax.set_title(f"cheapest admissible: {choice}", fontsize="medium")
    return ax
