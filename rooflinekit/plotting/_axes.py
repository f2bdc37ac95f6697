"""Axes and argument helpers shared by the figure modules."""

from __future__ import annotations

import numpy as np

from rooflinekit._validation import (
    as_1d,
    describe,
)


def _axes(ax):
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt
    _, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
    return ax


def _check_ax(ax):
    # duck-typed: matplotlib is imported lazily, so there is no Axes class to test against yet
    if ax is not None and not hasattr(ax, "plot"):
        raise TypeError(f"ax must be a matplotlib Axes or None; got {describe(ax)}")


def _one_d(name, values, default):
    """A 1-D float array of plotting positions (the library validates the values themselves)."""
    if values is None:
        return np.asarray(default, dtype=float)
    return as_1d(name, values, allow_scalar=False)


def _labelled(name, values, dim):
    import xarray as xr
    return xr.DataArray(values, dims=(dim,), coords={dim: values}, name=name)
