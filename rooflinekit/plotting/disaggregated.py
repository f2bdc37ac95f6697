"""Disaggregated serving: rate per GPU of each prefill/decode split against aggregated replicas."""

from __future__ import annotations

import numpy as np
import xarray as xr

from rooflinekit._validation import describe
from rooflinekit.plotting._axes import _axes, _check_ax

__all__ = ["plot_disaggregated"]

#: The split labelled so in :func:`rooflinekit.plan_disaggregated`'s Dataset, and its dimension.
_AGGREGATED, _SPLIT = "aggregated", "split"


def plot_disaggregated(ds, ax=None):
    """Max rate per GPU within the SLO of each xPyD split, beside the aggregated replica.

    Parameters
    ----------
    ds : xarray.Dataset
        A :func:`rooflinekit.plan_disaggregated` result.
    ax : matplotlib.axes.Axes, optional
        Where to draw.

    Returns
    -------
    matplotlib.axes.Axes
        One bar per split [requests/s per GPU]: the median over replicates, the 10th–90th
        percentile as a whisker; the aggregated replica grey with a dotted line at its rate, each
        bar labelled with the GPUs its fleet needs and what binds; the fewest-GPU split outlined.

    See Also
    --------
    rooflinekit.plan_disaggregated : the numbers drawn.
    plot_load_curves : latency against the rate of one configuration.
    """
    _check_ax(ax)
    needed = ("max_rate", "max_rate_low", "max_rate_high", "gpus_per_unit", "gpus", "binding")
    if not isinstance(ds, xr.Dataset) or _SPLIT not in ds.dims or \
            any(name not in ds for name in needed):
        raise TypeError(f"ds must be a plan_disaggregated Dataset; got {describe(ds)}")
    labels = [str(v) for v in ds[_SPLIT].values]
    per_gpu = ds["gpus_per_unit"].values.astype(float)
    rate = ds["max_rate"].values / per_gpu
    low, high = ds["max_rate_low"].values / per_gpu, ds["max_rate_high"].values / per_gpu
    ax = _axes(ax)
    x = np.arange(len(labels))
    colors = ["0.6" if label == _AGGREGATED else f"C{k % 10}" for k, label in enumerate(labels)]
    best = ds.attrs.get("best_split")
    bars = ax.bar(x, rate, color=colors,
                  edgecolor=["black" if label == best else "none" for label in labels],
                  linewidth=1.5)
    ax.errorbar(x, rate, yerr=[rate - low, high - rate], fmt="none", ecolor="black",
                capsize=3, lw=1)
    if _AGGREGATED in labels:
        ax.axhline(rate[labels.index(_AGGREGATED)], color="0.4", ls=":", lw=1,
                   label="aggregated replica")
    for bar, top, gpus, binding in zip(bars, high, ds["gpus"].values, ds["binding"].values):
        text = f"{int(gpus)} GPUs\n{binding}" if gpus > 0 else f"cannot serve\n{binding}"
        ax.annotate(text, (bar.get_x() + bar.get_width() / 2, top),
                    xytext=(0, 4), textcoords="offset points", ha="center", va="bottom",
                    fontsize="x-small")
    ax.set_xticks(x, labels)
    ax.set_ylabel("max rate within the SLO per GPU [requests/s]")
    ax.set_xlabel("split (x prefill, y decode replicas)")
    ax.set_ylim(0, max(float(np.nanmax(high, initial=0.0)), 1e-9) * 1.3)
    if best and best != "none":
        ax.set_title(f"fewest GPUs for the traffic: {best}", fontsize="medium")
    ax.legend(fontsize="small", loc="upper right")
    return ax
