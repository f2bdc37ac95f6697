"""Input checks shared by every public function.

Each check raises a ``TypeError`` or ``ValueError`` that names the argument and the allowed range,
before any computation, and accepts Python numbers, numpy arrays and xarray DataArrays alike.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import xarray as xr

__all__ = ["as_numeric", "check_range", "check_positive", "check_nonnegative", "check_integer",
           "check_fraction", "positive_number"]


def as_numeric(name: str, value) -> np.ndarray:
    """Return ``value`` as a numeric ndarray view, or raise ``TypeError`` naming ``name``."""
    if isinstance(value, xr.DataArray):
        data = value.values
    elif isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a number or an array of numbers, got a bool")
    elif isinstance(value, (numbers.Number, np.ndarray, list, tuple)):
        data = np.asarray(value)
    else:
        raise TypeError(
            f"{name} must be a number, a numpy array or an xarray.DataArray, "
            f"got {type(value).__name__}"
        )
    if data.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {data.dtype}")
    if data.dtype.kind == "f" and np.isnan(data).any():
        raise ValueError(f"{name} must not contain NaN")
    return data


def check_range(name: str, value, lo=None, hi=None, *, lo_open=False, hi_open=False,
                allow_inf=False):
    """Raise ``ValueError`` unless every element of ``value`` lies in the given interval.

    ``lo``/``hi`` of ``None`` leave that side unbounded; ``lo_open``/``hi_open`` exclude the bound.
    Returns ``value`` unchanged so calls can be chained.
    """
    data = as_numeric(name, value)
    if not allow_inf and data.dtype.kind == "f" and np.isinf(data).any():
        raise ValueError(f"{name} must be finite")
    if data.size == 0:
        return value
    bad = np.zeros(data.shape, dtype=bool)
    if lo is not None:
        bad |= (data <= lo) if lo_open else (data < lo)
    if hi is not None:
        bad |= (data >= hi) if hi_open else (data > hi)
    if bad.any():
        left = "(" if lo_open else "["
        right = ")" if hi_open else "]"
        lo_s = "-inf" if lo is None else f"{lo:g}"
        hi_s = "inf" if hi is None else f"{hi:g}"
        first = data[bad].flat[0]
        raise ValueError(f"{name} must lie in {left}{lo_s}, {hi_s}{right}; got {first!r}")
    return value


def check_positive(name: str, value, **kwargs):
    """Raise ``ValueError`` unless ``value > 0`` everywhere."""
    return check_range(name, value, lo=0, lo_open=True, **kwargs)


def check_nonnegative(name: str, value, **kwargs):
    """Raise ``ValueError`` unless ``value >= 0`` everywhere."""
    return check_range(name, value, lo=0, **kwargs)


def check_fraction(name: str, value, *, hi_open=False):
    """Raise ``ValueError`` unless ``0 <= value <= 1`` (``< 1`` with ``hi_open``)."""
    return check_range(name, value, lo=0, hi=1, hi_open=hi_open)


def check_integer(name: str, value, lo=None):
    """Raise unless ``value`` holds whole numbers (at least ``lo`` when given)."""
    data = as_numeric(name, value)
    if data.dtype.kind == "f" and (np.isinf(data).any() or (data != np.round(data)).any()):
        raise ValueError(f"{name} must be a whole number, got {data[data != np.round(data)].flat[0]!r}")
    if lo is not None:
        check_range(name, value, lo=lo)
    return value


def positive_number(name: str, value, allow_none: bool = False):
    """A single positive finite number as ``float`` (``None`` passes with ``allow_none``).

    For spec fields (:class:`~rooflinekit.GPU`, :class:`~rooflinekit.ModelShape`), which hold one
    number each rather than arrays.
    """
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive number, got {type(value).__name__}")
    value = float(value)
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return value
