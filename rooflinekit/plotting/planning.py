"""Capacity under load: latency against request rate with the SLO, and the buying decision."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import xarray as xr

from rooflinekit import dims
from rooflinekit._validation import check_one_of, describe
from rooflinekit.plotting._axes import _axes, _check_ax

__all__ = ["plot_load_curves", "plot_decision", "plot_decision_flips"]

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
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
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


#: The inputs of :func:`plot_decision_flips`, in drawing order: the decision table's variable
#: at the flip, label, unit, which option wins on which side of the flip.
_FLIP_INPUTS = (("break_even_tokens", "monthly volume", "tokens/month",
                 "self-hosting cheaper above"),
                ("tie_gpu_hourly", "GPU-hour price", "USD/h", "self-hosting cheaper below"),
                ("tie_engineering_monthly", "engineering line", "USD/month",
                 "self-hosting cheaper below"),
                ("tie_payg_blended", "pay-as-you-go price (blended)", "USD/1M tokens",
                 "pay-as-you-go cheaper below"))


def _flip_values(table) -> dict:
    """Each input's value at the flip and now, ``{variable: (at the flip, now)}``, against
    the table's ``flip_against`` option."""
    at = table.sel({dims.OPTION: str(table["flip_against"].values)})
    return {"break_even_tokens": (float(at["break_even_tokens"]),
                                  float(table.attrs["monthly_tokens"])),
            "tie_gpu_hourly": (float(at["tie_gpu_hourly"]), float(table["gpu_hourly"])),
            "tie_engineering_monthly": (float(at["tie_engineering_monthly"]),
                                        float(table.attrs.get("engineering_monthly", 0.0))),
            "tie_payg_blended": (float(at["tie_payg_blended"]),
                                 float(at["cost_per_million_tokens"]))}


def plot_decision_flips(table, ax=None):
    """Where the buying decision flips: each input's value at the tie against its value now.

    Parameters
    ----------
    table : xarray.Dataset
        :func:`rooflinekit.planning.decision_table` of one cheapest configuration (no dimension
        but ``option``), with an admissible option beside the self-hosted fleet.
    ax : matplotlib.axes.Axes, optional
        Where to draw.

    Returns
    -------
    matplotlib.axes.Axes
        One row per input (volume, GPU-hour price, engineering line, pay-as-you-go price) on a
        log axis of its value over its value now [1]: a dot at 1, a diamond at the flip, each
        labelled with the flip's value and the side on which self-hosting is cheaper (in words
        at 1 where it cannot flip, or its value now is 0).

    Raises
    ------
    TypeError
        ``table`` is not a decision table of one configuration.
    ValueError
        The table has no admissible option beside the fleet (nothing can flip).

    Notes
    -----
    The flip points are the table's ``break_even_tokens`` and ``tie_*`` at its
    ``flip_against`` option: each input moved alone.
    """
    _check_ax(ax)
    if not isinstance(table, xr.Dataset) or "flip_against" not in table or \
            set(table.dims) != {dims.OPTION}:
        raise TypeError(f"table must be a decision_table Dataset over option alone; "
                        f"got {describe(table)}")
    if not str(table["flip_against"].values):
        raise ValueError("table has no admissible option beside the self-hosted fleet: the "
                         "decision cannot flip (give a pay-as-you-go or provisioned price)")
    ax = _axes(ax)
    values = _flip_values(table)
    rows = [r for r in _FLIP_INPUTS if np.isfinite(values[r[0]][0])]
    ratios = []
    for y, (key, label, unit, wins) in enumerate(rows):
        tie, now = values[key]
        ax.plot([1.0], [y], "o", color="black")
        if tie > 0 and now > 0:
            ratio = tie / now
            ratios.append(ratio)
            ax.plot([min(1.0, ratio), max(1.0, ratio)], [y, y], color="C0", lw=6, alpha=0.3)
            ax.plot([ratio], [y], "D", color="C3")
            ax.annotate(f"{wins} {tie:.3g} {unit} (now {now:.3g})", (min(1.0, ratio), y),
                        xytext=(0, 7), textcoords="offset points", va="bottom",
                        fontsize="small")
        else:
            text = f"{wins} {tie:,.0f} {unit} (now 0)" if tie > 0 else "never flips"
            ax.annotate(text, (1.0, y), xytext=(0, 7), textcoords="offset points",
                        va="bottom", fontsize="small")
    ax.axvline(1.0, color="black", lw=0.8, ls=":")
    ax.set_xscale("log")
    low, high = min([1.0] + ratios), max([1.0] + ratios)
    ax.set_xlim(low / 4, high * 30)
    ax.set_yticks(np.arange(len(rows)), [r[1] for r in rows])
    ax.set_ylim(len(rows) - 0.3, -0.7)                 # the first input on top
    ax.set_xlabel("value at the flip / value now [1]")
    ax.set_title(f"where the choice flips: the fleet against {table['flip_against'].values}",
                 fontsize="medium")
    return ax
