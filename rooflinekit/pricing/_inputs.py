"""Inputs of the pricing formulas: spec-field checks, units and labelling of arguments and specs.

Shared by :mod:`rooflinekit.capacity_types` (the capacity types and their prices),
:mod:`rooflinekit.pricing` (break-even arithmetic) and :mod:`rooflinekit.compliance`
(admissibility gates and the cheapest option).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
import xarray as xr

from rooflinekit import dims
from rooflinekit._labels import align_inputs, is_labelled
from rooflinekit._validation import as_numeric, check_nonnegative, check_positive

__all__ = ["USD_PER_MTOK", "USD_PER_MONTH", "TOKENS_PER_MONTH", "numeric_field",
           "normalise_region", "option_name", "check_bool", "ARGUMENT_DIMS", "prepare",
           "any_positive", "check_type"]

USD_PER_MTOK = "USD/1M tokens"
USD_PER_MONTH = "USD/month"
TOKENS_PER_MONTH = "tokens/month"


def numeric_field(name: str, value, *, positive: bool = False, allow_none: bool = False):
    """Validate a numeric spec field; lists become arrays, everything else is kept as given."""
    if value is None and allow_none:
        return None
    if isinstance(value, (list, tuple)):
        value = np.asarray(value, dtype=float)
    if positive:
        check_positive(name, value)
    else:
        check_nonnegative(name, value)
    return value


def normalise_region(value) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"region must be a non-empty string or None, got {value!r}")
    return value.strip().lower()


def option_name(value, default: str) -> str:
    if value is None:
        return default
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"name must be a non-empty string, got {value!r}")
    return value


def check_bool(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


#: Dimension of each labelled numeric argument (the glossary in :mod:`rooflinekit.dims`).
ARGUMENT_DIMS = MappingProxyType({
    "output_fraction": dims.OUTPUT_FRACTION, "monthly_tokens": dims.MONTHLY_TOKENS,
    "utilization": dims.UTILIZATION, "prompt_tokens": dims.PROMPT_TOKENS,
})


def prepare(named: Mapping, *specs):
    """Label every 1-D ndarray input, spec fields included, when any input is labelled.

    Returns the arguments (lists as arrays) and the specs, rebuilt with labelled fields when
    needed, so that every sub-formula sees the same dimension names: an argument's dimension is
    its name, a spec field's dimension is the field's name.
    """
    fields = [s._numeric() for s in specs]
    values = [*named.values(), *(v for f in fields for v in f.values())]
    if not any(is_labelled(v) for v in values):
        return align_inputs(dict(named)), specs
    force = {"__labelled__": xr.DataArray(0.0)}
    out = align_inputs({**named, **force}, ARGUMENT_DIMS)
    del out["__labelled__"]
    rebuilt = []
    for spec, f in zip(specs, fields):
        aligned = align_inputs({**f, **force})
        del aligned["__labelled__"]
        changed = {k: v for k, v in aligned.items() if v is not f[k]}
        rebuilt.append(dataclasses.replace(spec, **changed) if changed else spec)
    return out, tuple(rebuilt)


def any_positive(value) -> bool:
    return bool(np.any(as_numeric("value", value) > 0))


def check_type(name: str, value, kind):
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise TypeError(f"{name} must be a {names}, got {type(value).__name__}")
