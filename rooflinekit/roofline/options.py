"""Inputs of the roofline functions: spec fields, keyword options and broadcasting by name.

:mod:`rooflinekit.roofline` and :mod:`rooflinekit.latency` write each formula once as arithmetic
on plain floats or numpy arrays (:mod:`rooflinekit._step` lays the inputs out and derives the
step's coefficients). This module gets their inputs there: the fields of a
:class:`~rooflinekit.ModelShape` or :class:`~rooflinekit.GPU` (or of a catalogue Dataset, or of an
array spec from :mod:`rooflinekit.sweep`) as numbers (:func:`model_fields`, :func:`gpu_fields`);
the efficiency factors and overrides every time function takes, validated (:func:`read_options`,
:func:`with_options_doc` documents them); and :class:`Grid`, which lays labelled and unlabelled
inputs out on one grid of raw arrays and wraps the result once.
"""

from __future__ import annotations

import inspect
import math
import numbers

import numpy as np
import xarray as xr

from rooflinekit import parallel
from rooflinekit._labels import finish
from rooflinekit._validation import check_nonnegative, check_positive, check_range
from rooflinekit.hardware import GPU
from rooflinekit.models import ModelShape

#: Public: the options and their reader. The spec readers, Grid and the docstring helper serve the
#: modules of this folder.
__all__ = ["OPTION_DEFAULTS", "read_options"]

MODEL_FIELDS = ("n_layers", "n_heads", "head_dim", "attention_width", "hidden_size", "n_params",
                "n_active_params", "n_experts", "n_experts_per_token", "bytes_per_param",
                "kv_bytes_per_element", "kv_bytes_per_token", "kv_bytes_per_token_per_layer",
                "n_full_layers", "sliding_window")
GPU_FIELDS = ("hbm_bandwidth", "peak_flops", "interconnect_bandwidth", "interconnect_latency",
              "n_gpus", "hourly_price")


def _spec_fields(kind: str, spec, spec_type: type, fields: tuple, from_object) -> dict:
    """``fields`` of a spec object (via ``from_object``), a catalogue Dataset or an array spec.

    ``kind`` ("model" or "gpu") names the argument in messages and the catalogue function
    (``catalog.models`` / ``catalog.gpus``) that builds its Dataset.
    """
    if isinstance(spec, spec_type):
        return from_object(spec)
    if isinstance(spec, xr.Dataset):
        missing = [k for k in fields if k not in spec]
        if missing:
            raise TypeError(f"{kind} Dataset lacks {', '.join(missing)}; build it with "
                            f"rooflinekit.catalog.{kind}s(as_dataset=True)")
        return {k: spec[k].astype(float) for k in fields}
    if all(hasattr(spec, k) for k in fields):
        # an array spec (rooflinekit.sweep): the fields as numbers or broadcastable ndarrays
        return {k: np.asarray(getattr(spec, k), dtype=float) for k in fields}
    raise TypeError(f"{kind} must be a {spec_type.__name__} or a catalogue Dataset "
                    f"(catalog.{kind}s(as_dataset=True)), got {type(spec).__name__}")


def _model_object_fields(model: ModelShape) -> dict:
    out = {k: float(getattr(model, k)) for k in MODEL_FIELDS if k != "sliding_window"}
    out["sliding_window"] = math.inf if model.sliding_window is None else \
        float(model.sliding_window)
    return out


def _gpu_object_fields(gpu: GPU) -> dict:
    return {k: (math.nan if getattr(gpu, k) is None else float(getattr(gpu, k)))
            for k in GPU_FIELDS}


def model_fields(model) -> dict:
    """The model's fields as floats (object), DataArrays over ``model`` (Dataset) or arrays."""
    out = _spec_fields("model", model, ModelShape, MODEL_FIELDS, _model_object_fields)
    p, pa = np.asarray(out["n_params"]), np.asarray(out["n_active_params"])
    e, k = np.asarray(out["n_experts"]), np.asarray(out["n_experts_per_token"])
    per_expert = np.where(e > k, (p - pa) / np.maximum(e - k, 1.0), 0.0)
    if (pa - k * per_expert < 0).any():
        raise ValueError("model: n_active_params is smaller than its n_experts_per_token routed "
                         "experts ((n_params - n_active_params) / (n_experts - "
                         "n_experts_per_token) each); check the MoE fields")
    return out


def gpu_fields(gpu, compute_dtype) -> dict:
    """The GPU's fields as floats (object) or DataArrays over ``gpu`` (Dataset)."""
    out = _spec_fields("gpu", gpu, GPU, GPU_FIELDS, _gpu_object_fields)
    out["peak_flops"] = parallel.device_peak_flops(gpu, compute_dtype)
    if isinstance(out["peak_flops"], numbers.Real):
        out["peak_flops"] = float(out["peak_flops"])
    return out


class Grid:
    """Inputs broadcast by dimension name, computed on raw numpy arrays, wrapped once.

    xarray costs a fraction of a millisecond per operation; a step-time formula has dozens, so
    labelled inputs are aligned once (exactly: shared dimensions must carry equal coordinates),
    each is laid out on the union of dimensions with size-1 axes where it has none, and the
    result is wrapped in a DataArray at the end.
    """

    def __init__(self, values: dict):
        self.labelled = any(isinstance(v, xr.DataArray) for v in values.values())
        self.raw = {}
        if not self.labelled:
            self.raw = {k: (v if isinstance(v, float) else np.asarray(v, dtype=float))
                        for k, v in values.items()}
            try:
                self.shape = np.broadcast_shapes(*(np.shape(v) for v in self.raw.values()))
            except ValueError:
                shapes = {k: np.shape(v) for k, v in values.items() if np.ndim(v)}
                raise ValueError(f"array inputs do not broadcast together: {shapes}; pass "
                                 f"xarray.DataArrays to combine them by dimension name") from None
            return
        order, sizes, indexes, coords = [], {}, {}, {}
        for key, value in values.items():
            if not isinstance(value, xr.DataArray):
                continue
            for dim in value.dims:
                if dim not in sizes:
                    order.append(dim)
                    sizes[dim] = value.sizes[dim]
                elif value.sizes[dim] != sizes[dim]:
                    raise ValueError(f"{key}: dimension {dim!r} has {value.sizes[dim]} entries "
                                     f"where another input has {sizes[dim]}")
                if dim in value.indexes:
                    index = value.indexes[dim]
                    if dim not in indexes:
                        indexes[dim] = index
                    elif index is not indexes[dim] and not index.equals(indexes[dim]):
                        raise ValueError(f"{key}: coordinates of dimension {dim!r} differ from "
                                         f"another input's; select or reindex so they match")
            for name, coord in value.coords.items():
                coords.setdefault(name, coord.variable)
        self.dims = tuple(order)
        self.shape = tuple(sizes[d] for d in order)
        self.coords = coords
        for key, value in values.items():
            if isinstance(value, xr.DataArray):
                present = [d for d in order if d in value.dims]
                data = np.asarray(value.transpose(*present).values, dtype=float)
                self.raw[key] = data.reshape([sizes[d] if d in value.dims else 1 for d in order])
            else:
                self.raw[key] = value if isinstance(value, float) else np.asarray(value, float)

    def __getitem__(self, key):
        return self.raw[key]

    def wrap(self, result, units: str, long_name: str, name: str | None = None):
        """The result in its inputs' kind: DataArray over the grid, ndarray, or Python scalar."""
        result = np.asarray(result)
        if result.shape != self.shape:
            result = np.broadcast_to(result, self.shape).copy()
        if self.labelled:
            result = xr.DataArray(result, dims=self.dims, coords=self.coords)
        return finish(result, units, long_name, name)


def check_options(compute_efficiency, bandwidth_efficiency, step_overhead, allreduce):
    check_range("compute_efficiency", compute_efficiency, lo=0, hi=1, lo_open=True)
    check_range("bandwidth_efficiency", bandwidth_efficiency, lo=0, hi=1, lo_open=True)
    check_nonnegative("step_overhead", step_overhead)
    if not isinstance(allreduce, (bool, np.bool_)):
        raise TypeError(f"allreduce must be True or False, got {type(allreduce).__name__}")


#: The keyword options every time function takes, with the guide's ideal-model defaults.
OPTION_DEFAULTS = {"compute_efficiency": 1.0, "bandwidth_efficiency": 1.0, "step_overhead": 0.0,
                   "allreduce": False, "compute_dtype": None, "interconnect_bandwidth": None,
                   "interconnect_latency": None}


def read_options(**options):
    """Validate the efficiency factors and overrides every time function accepts."""
    unknown = sorted(set(options) - set(OPTION_DEFAULTS))
    if unknown:
        raise TypeError(f"unexpected keyword argument(s) {', '.join(unknown)}; the options are "
                        f"{', '.join(OPTION_DEFAULTS)}")
    o = {**OPTION_DEFAULTS, **options}
    check_options(o["compute_efficiency"], o["bandwidth_efficiency"], o["step_overhead"],
                  o["allreduce"])
    for name, check in (("interconnect_bandwidth", check_positive),
                        ("interconnect_latency", check_nonnegative)):
        if o[name] is not None:
            check(name, o[name])
            if np.ndim(o[name]):
                raise TypeError(f"{name} must be a single number")
    if o["compute_dtype"] is not None and not isinstance(o["compute_dtype"], str):
        raise TypeError(f"compute_dtype must be a format name such as 'fp8', got "
                        f"{type(o['compute_dtype']).__name__}")
    o["allreduce"] = bool(o["allreduce"])
    return o


OPTIONS_DOC = """compute_efficiency : float, array_like or xarray.DataArray
        Share of the peak FLOP/s the matrix multiplies reach [1], in (0, 1]. Default 1.0.
    bandwidth_efficiency : float, array_like or xarray.DataArray
        Share of the HBM bandwidth the step reaches [1], in (0, 1]. Default 1.0.
    step_overhead : float, array_like or xarray.DataArray
        Fixed time per step (scheduling, kernel launches, sampling) [s], ≥ 0. Default 0.
    allreduce : bool
        Add tensor parallelism's all-reduce time (:mod:`rooflinekit.parallel`). Default
        ``False``: the guide's simple model.
    compute_dtype : str, optional
        Format of the matrix multiplies ("fp8", ...); default the GPU's 16-bit dense peak.
    interconnect_bandwidth, interconnect_latency : float, optional
        Overrides of the GPU's per-direction link bandwidth [bytes/s] and per-hop latency [s]."""


def with_options_doc(func):
    """Fill in the options' documentation and show them in the signature (for help())."""
    func.__doc__ = func.__doc__.replace("{options}", OPTIONS_DOC)
    sig = inspect.signature(func)
    params = [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
    params += [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=v)
               for k, v in OPTION_DEFAULTS.items()]
    func.__signature__ = sig.replace(parameters=params)
    return func
