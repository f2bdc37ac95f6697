"""Small helpers shared by test modules (fixtures live in conftest.py)."""

import numpy as np
import xarray as xr


def da(values, dim):
    """A labelled test axis: the values as a DataArray along ``dim`` with themselves as labels."""
    values = np.asarray(values, dtype=float)
    return xr.DataArray(values, dims=(dim,), coords={dim: values})


def assert_reexports(module, *homes):
    """A folder's face re-exports its parts: every public name of each of ``homes`` is in
    ``module.__all__`` and is the very object the home defines, and every name in
    ``module.__all__`` resolves."""
    for home in homes:
        for name in home.__all__:
            assert name in module.__all__, name
            assert getattr(module, name) is getattr(home, name), name
    for name in module.__all__:
        assert hasattr(module, name), name
