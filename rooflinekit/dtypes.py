"""Numeric formats of weights and KV cache, accepted by name or by bytes per element."""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["BYTES_PER_ELEMENT", "MXFP4_BYTES", "bytes_per_element", "dtype_name", "is_mxfp4"]

#: Bytes per element for the formats models are served in. int4/fp4 pack two values per byte.
BYTES_PER_ELEMENT: dict[str, float] = {
    "fp32": 4.0, "float32": 4.0, "tf32": 4.0,
    "bf16": 2.0, "bfloat16": 2.0, "fp16": 2.0, "float16": 2.0, "half": 2.0,
    "fp8": 1.0, "float8": 1.0, "fp8_e4m3": 1.0, "fp8_e5m2": 1.0, "int8": 1.0,
    "int4": 0.5, "fp4": 0.5, "nvfp4": 0.5, "mxfp4": 0.5,
}

#: MXFP4 as a checkpoint stores it: a 4-bit value and one 8-bit scale per 32 [bytes a weight].
MXFP4_BYTES = 17 / 32

#: The most bytes an element may take [bytes]: fp64's 8 twice over; more is a mistake.
MAX_BYTES_PER_ELEMENT = 16.0

#: The canonical name for each alias, used to pick a GPU's peak FLOP/s for a format.
_CANONICAL = {
    "float32": "fp32", "tf32": "tf32", "bfloat16": "bf16", "float16": "fp16", "half": "fp16",
    "float8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "nvfp4": "fp4", "mxfp4": "fp4",
}


def dtype_name(dtype: str) -> str:
    """Canonical lower-case name of a format ("bfloat16" -> "bf16")."""
    key = str(dtype).strip().lower()
    if key not in BYTES_PER_ELEMENT:
        raise ValueError(
            f"unknown dtype {dtype!r}; allowed: {', '.join(sorted(BYTES_PER_ELEMENT))}"
        )
    return _CANONICAL.get(key, key)


def bytes_per_element(dtype, name: str = "dtype") -> float:
    """Bytes per element for a format name ("bf16") or a positive number of bytes (2).

    Raises
    ------
    TypeError
        If ``dtype`` is neither a string nor a number.
    ValueError
        If the name is unknown or the number is not in (0, :data:`MAX_BYTES_PER_ELEMENT`].
    """
    if isinstance(dtype, bool):
        raise TypeError(f"{name} must be a format name or bytes per element, got a bool")
    if isinstance(dtype, str):
        key = dtype.strip().lower()
        if key not in BYTES_PER_ELEMENT:
            raise ValueError(
                f"{name}: unknown format {dtype!r}; allowed: {', '.join(sorted(BYTES_PER_ELEMENT))} "
                f"or a positive number of bytes"
            )
        return BYTES_PER_ELEMENT[key]
    if isinstance(dtype, numbers.Real):
        try:
            value = float(dtype)
        except OverflowError:              # an integer beyond float range
            value = float("inf")
        if not 0 < value <= MAX_BYTES_PER_ELEMENT:
            raise ValueError(f"{name} must be a positive number of bytes, at most "
                             f"{MAX_BYTES_PER_ELEMENT:g}, got {str(dtype)[:40]}")
        return value
    raise TypeError(f"{name} must be a format name or bytes per element, got {type(dtype).__name__}")


def is_mxfp4(bytes_per_weight):
    """Whether weights of ``bytes_per_weight`` [bytes] are MXFP4 ones (:data:`MXFP4_BYTES`
    within 1 %: int4 with a 16-bit scale per 128, 0.516, and NVFP4, 0.5625, are not) [bool]:
    a number gives a bool, an array or an ``xarray.DataArray`` one of bools, alike."""
    labelled = hasattr(bytes_per_weight, "dims")
    x = bytes_per_weight if labelled else np.asarray(bytes_per_weight)
    if x.dtype.kind not in "iuf":      # NaN is allowed: no format of its own, not MXFP4
        got = type(bytes_per_weight).__name__ if np.ndim(x) == 0 else f"an array of {x.dtype}"
        raise TypeError(f"bytes_per_weight must be a number of bytes, an array of them or a "
                        f"DataArray; got {got}")
    out = abs(x - MXFP4_BYTES) <= 0.01 * MXFP4_BYTES
    return out if labelled or np.ndim(out) else bool(out)
