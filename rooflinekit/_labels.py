"""Same type in, same type out: the conventions that let one formula serve every input kind.

A formula is written once as plain arithmetic. Before it runs, :func:`align_inputs` turns 1-D numpy
arrays into DataArrays along their argument's dimension *if any other input is labelled* (so a
catalogue Dataset over ``model`` broadcasts against a plain list of context lengths by name); after
it runs, :func:`finish` turns a 0-d result back into a Python scalar and stamps ``units`` and
``long_name`` on a DataArray.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

__all__ = ["is_labelled", "align_inputs", "finish", "spec_value", "where"]


def is_labelled(value) -> bool:
    """True for xarray objects, which broadcast by dimension name."""
    return isinstance(value, (xr.DataArray, xr.Dataset))


def align_inputs(named: dict, dims: dict | None = None) -> dict:
    """Label plain 1-D arrays by their argument's dimension when any input is labelled.

    Parameters
    ----------
    named : dict
        Argument name -> value. Values may be scalars, sequences, ndarrays, DataArrays or Datasets.
    dims : dict, optional
        Argument name -> dimension name, for arguments whose dimension differs from their name.

    Returns
    -------
    dict
        The same mapping, with lists and tuples as ndarrays and, when any value is labelled, every
        1-D ndarray as a DataArray along its dimension (coordinate = the values).

    Raises
    ------
    TypeError
        If an unlabelled array of 2 or more dimensions meets a labelled input: its axes could not be
        matched by name.
    """
    dims = dims or {}
    out = {k: (np.asarray(v) if isinstance(v, (list, tuple)) else v) for k, v in named.items()}
    if not any(is_labelled(v) for v in out.values()):
        return out
    for key, value in out.items():
        if isinstance(value, np.ndarray) and value.ndim >= 1:
            if value.ndim > 1:
                raise TypeError(
                    f"{key} is an unlabelled {value.ndim}-d array while other inputs are labelled; "
                    f"pass it as an xarray.DataArray so its dimensions can be matched by name"
                )
            dim = dims.get(key, key)
            out[key] = xr.DataArray(value, dims=(dim,), coords={dim: value})
    return out


def finish(result, units: str, long_name: str, name: str | None = None):
    """Return ``result`` in the kind its inputs had, with units on labelled outputs.

    0-d numpy results become Python ``float``/``int``; ndarrays stay ndarrays; DataArrays get
    ``attrs["units"]`` and ``attrs["long_name"]`` (and ``name``).
    """
    if isinstance(result, xr.DataArray):
        result = result.copy(deep=False)
        result.attrs = {"units": units, "long_name": long_name}
        if name is not None:
            result.name = name
        return result
    if isinstance(result, np.ndarray) and result.ndim == 0:
        result = result[()]
    if isinstance(result, np.generic):
        return result.item()
    return result


def spec_value(spec, field: str):
    """A field of a spec object, or the matching variable of a catalogue Dataset."""
    if isinstance(spec, xr.Dataset):
        if field not in spec:
            raise TypeError(f"catalogue Dataset has no variable {field!r}; build it with "
                            f"rooflinekit.catalog.models(as_dataset=True) / gpus(as_dataset=True)")
        return spec[field]
    return getattr(spec, field)


def where(cond, a, b):
    """``np.where`` that keeps labels when any operand is a DataArray (then ``xr.where``)."""
    if any(isinstance(v, xr.DataArray) for v in (cond, a, b)):
        return xr.where(cond, a, b)
    return np.where(cond, a, b)
