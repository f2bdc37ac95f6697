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


# -- counts and choices (batching, workloads)


def _as_given(value) -> str:
    """``value`` as the user wrote it: numpy scalars shown as the Python number they hold."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _interval(lo, hi, lo_open, hi_open) -> str:
    if hi is None:
        return f"{'>' if lo_open else '>='} {lo:g}"
    if lo is None:
        return f"{'<' if hi_open else '<='} {hi:g}"
    return f"in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"


def check_count(name: str, value, lo: int = 0, *, allow_none: bool = False) -> int | None:
    """A single whole number ``>= lo`` as ``int`` (``None`` passes with ``allow_none``).

    ``2.0`` counts as whole; ``True`` is not a number. The message names ``name``, the range and
    the value as given: ``max_num_seqs must be a whole number >= 1, got 0.5``.
    """
    if value is None and allow_none:
        return None
    wanted = f"{name} must be a whole number >= {lo}{' or None' if allow_none else ''}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{wanted}, got {type(value).__name__}")
    if not (math.isfinite(value) and float(value).is_integer() and value >= lo):
        raise ValueError(f"{wanted}, got {_as_given(value)}")
    return int(value)


def check_real(name: str, value, lo=None, hi=None, *, lo_open: bool = False,
               hi_open: bool = False, allow_inf: bool = False,
               allow_none: bool = False) -> float | None:
    """A single real number in the given interval as ``float`` (``None`` with ``allow_none``).

    Finite unless ``allow_inf``; ``lo``/``hi`` of ``None`` leave that side open-ended. The message
    names ``name``, the range and the value as given: ``sigma must be a real number >= 0, got -1``.
    """
    if value is None and allow_none:
        return None
    span = "" if lo is None and hi is None else " " + _interval(lo, hi, lo_open, hi_open)
    wanted = f"{name} must be a{'' if allow_inf else ' finite'} real number{span}" \
             f"{' or None' if allow_none else ''}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{wanted}, got {type(value).__name__}")
    x = float(value)
    bad = math.isnan(x) or (not allow_inf and math.isinf(x))
    if lo is not None:
        bad = bad or (x <= lo if lo_open else x < lo)
    if hi is not None:
        bad = bad or (x >= hi if hi_open else x > hi)
    if bad:
        raise ValueError(f"{wanted}, got {_as_given(value)}")
    return x


def check_choice(name: str, value, allowed: tuple):
    """``value`` if it is one of ``allowed``, else ``ValueError`` listing them."""
    try:
        known = value in allowed
    except (TypeError, ValueError):          # an array or other value with no plain ``==``
        known = False
    if not known:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; "
                         f"got {_as_given(value)}")
    return value


def check_count_array(name: str, values, lo: int = 0) -> np.ndarray:
    """A 1-D array of whole numbers ``>= lo`` (one per request, say) as int64.

    Accepts any array-like of integers or integral floats; an empty one passes.
    """
    data = np.asarray(values)
    if data.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one value per request), got shape {data.shape}")
    if data.size == 0:
        return data.astype(np.int64)
    data = as_numeric(name, data)
    if data.dtype.kind == "f":
        if not np.isfinite(data).all():
            raise ValueError(f"{name} must be finite")
        fractional = data != np.floor(data)
        if fractional.any():
            raise ValueError(f"{name} must hold whole numbers >= {lo}, got "
                             f"{_as_given(data[fractional][0])}")
    if data.min() < lo:
        raise ValueError(f"{name} must be >= {lo} for every request, got "
                         f"{_as_given(data.min())}")
    return data.astype(np.int64)
