"""Inputs of the pricing formulas: spec-field checks, units and labelling of arguments and specs."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
import xarray as xr

from rooflinekit import dims, roofline
from rooflinekit._labels import align_inputs, is_labelled, spec_value, widen
from rooflinekit._validation import (
    as_numeric,
    check_bool,
    check_nonnegative,
    check_range,
    check_string,
    check_type,
)
from rooflinekit.hardware import GPU

__all__ = ["USD_PER_MTOK", "USD_PER_MONTH", "TOKENS_PER_MONTH", "numeric_field",
           "normalise_region", "option_name", "ARGUMENT_DIMS", "prepare", "any_positive",
           "admissibility", "price_per_gpu_hour", "check_hits", "check_engine", "widened"]

USD_PER_MTOK = "USD/1M tokens"
USD_PER_MONTH = "USD/month"
TOKENS_PER_MONTH = "tokens/month"


def numeric_field(name: str, value, *, positive: bool = False, hi=None,
                  allow_none: bool = False):
    """A checked numeric spec field (>= 0, > 0 with ``positive``, <= ``hi``); lists as arrays."""
    if value is None and allow_none:
        return None
    value = widen(value)                 # float16 / uint8 fields computed in float64 / int64
    if isinstance(value, (list, tuple)):
        value = np.asarray(as_numeric(name, value), dtype=float)
    check_range(name, value, lo=0, hi=hi, lo_open=positive)
    return value


def widened(func):
    """``func`` with every argument widened by :func:`rooflinekit._labels.widen` first."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*(widen(a) for a in args), **{k: widen(v) for k, v in kwargs.items()})
    return wrapper


def normalise_region(value, name: str = "region") -> str | None:
    """A region label in lower case, or ``None`` (unknown)."""
    region = check_string(name, value, allow_none=True)
    return None if region is None else region.strip().lower()


def option_name(value, default: str) -> str:
    """An option's label, ``default`` when ``None``."""
    return default if value is None else check_string("name", value)


def admissibility(spec, default_name: str) -> None:
    """Check and set the label and admissibility fields every price type shares (frozen)."""
    object.__setattr__(spec, "name", option_name(spec.name, default_name))
    object.__setattr__(spec, "region", normalise_region(spec.region))
    object.__setattr__(spec, "third_party", check_bool("third_party", spec.third_party))


#: Dimension of each labelled numeric argument (the glossary in :mod:`rooflinekit.dims`).
ARGUMENT_DIMS = MappingProxyType({
    "output_fraction": dims.OUTPUT_FRACTION, "monthly_tokens": dims.MONTHLY_TOKENS,
    "utilization": dims.UTILIZATION, "prompt_tokens": dims.PROMPT_TOKENS,
    "prefix_share": dims.PREFIX_SHARE,
})


def prepare(named: Mapping, *specs):
    """The arguments and specs, every 1-D ndarray labelled (by its argument's or field's name)
    when any input is labelled, so that every sub-formula sees the same dimension names."""
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


def any_positive(name: str, value) -> bool:
    """Whether any element of the (checked) numeric ``value`` is positive."""
    return bool(np.any(as_numeric(name, value) > 0))


def price_per_gpu_hour(gpu, price, name: str = "hourly_price"):
    """Price of one GPU-hour [USD/h]: ``price`` (≥ 0) when given, else the catalogue's per GPU."""
    check_type("gpu", gpu, (GPU, xr.Dataset))
    if price is not None:
        check_nonnegative(name, price)
        return price
    listed = spec_value(gpu, "hourly_price")
    if listed is None or np.isnan(np.asarray(listed, dtype=float)).any():
        raise ValueError(f"gpu has no catalogue hourly_price; pass {name} [USD/h]")
    return listed / spec_value(gpu, "n_gpus")


def check_hits(payg, prefix_share) -> None:
    """``prefix_share`` in [0, 1], and 0 unless ``payg`` has a cached-input price for the hits."""
    check_range("prefix_share", prefix_share, lo=0, hi=1)
    if payg.cached_input_per_mtok is None and any_positive("prefix_share", prefix_share):
        raise ValueError(f"prefix_share must be 0: {payg.name!r} has no cached_input_per_mtok "
                         f"to bill the hits at")


def check_engine(engine):
    """``engine`` unchanged, once known to be an Engine, a calibration or None (else TypeError)."""
    roofline.engine_for(engine, "decode")
    return engine
