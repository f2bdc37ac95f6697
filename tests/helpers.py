"""Small helpers shared by test modules (fixtures live in conftest.py)."""

import numpy as np
import xarray as xr


def da(values, dim):
    """A labelled test axis: the values as a DataArray along ``dim`` with themselves as labels."""
    values = np.asarray(values, dtype=float)
    return xr.DataArray(values, dims=(dim,), coords={dim: values})
