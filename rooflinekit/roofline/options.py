"""Inputs of the roofline functions: spec fields, keyword options and broadcasting by name.

:mod:`rooflinekit.roofline.work` and :mod:`rooflinekit.roofline.latency` write each formula once
as arithmetic on plain floats or numpy arrays (:mod:`rooflinekit.roofline.step` derives the
step's coefficients; :mod:`rooflinekit._labels` lays the inputs out). This module reads them: the fields of a
:class:`~rooflinekit.ModelShape` or :class:`~rooflinekit.GPU` (or of a catalogue Dataset, or of an
array spec from :mod:`rooflinekit.sweep`) as numbers (:func:`model_fields`, :func:`gpu_fields`);
the efficiency factors and overrides every time function takes, validated (:func:`read_options`;
:data:`ROOFLINE_PARAMETERS` documents them with the shared arguments, once).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import xarray as xr

from rooflinekit import parallel
from rooflinekit._labels import PARAMETERS, parameter_entries
from rooflinekit._validation import (
    MAX_COUNT,
    check_integer,
    check_nonnegative,
    check_positive,
    check_range,
)
from rooflinekit.dtypes import bytes_per_element
from rooflinekit.hardware import GPU
from rooflinekit.models import ModelShape

#: Public: the options and their reader. The spec readers and the shared parameter entries
#: serve the modules of this folder.
__all__ = ["OPTION_DEFAULTS", "ENGINE_OPTIONS", "read_options"]

MODEL_FIELDS = ("n_layers", "n_heads", "head_dim", "attention_width", "hidden_size", "n_params",
                "n_active_params", "n_experts", "n_experts_per_token", "bytes_per_param",
                "kv_bytes_per_element", "kv_bytes_per_token", "kv_bytes_per_token_per_layer",
                "n_full_layers", "n_sliding_layers", "sliding_window")
#: Model fields a Dataset or array spec built before they existed may lack: 0 is the former
#: model (no embedding table counted apart from the other weights).
OPTIONAL_MODEL_FIELDS = {"input_embedding_params": 0.0, "lm_head_params": 0.0}
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
    out = {k: float(getattr(model, k)) for k in (*MODEL_FIELDS, *OPTIONAL_MODEL_FIELDS)
           if k != "sliding_window"}
    out["sliding_window"] = math.inf if model.sliding_window is None else \
        float(model.sliding_window)
    return out


def _gpu_object_fields(gpu: GPU) -> dict:
    return {k: (math.nan if getattr(gpu, k) is None else float(getattr(gpu, k)))
            for k in GPU_FIELDS}


def model_fields(model) -> dict:
    """The model's fields as floats (object), DataArrays over ``model`` (Dataset) or arrays."""
    out = _spec_fields("model", model, ModelShape, MODEL_FIELDS, _model_object_fields)
    for k, default in OPTIONAL_MODEL_FIELDS.items():
        if k not in out:
            value = getattr(model, k, None) if not isinstance(model, xr.Dataset) else \
                (model[k].astype(float) if k in model else None)
            out[k] = default if value is None else (
                value if isinstance(value, xr.DataArray) else np.asarray(value, dtype=float))
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


def _check_dtype(name, value):
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{name} must be a format name such as 'fp8', got "
                        f"{type(value).__name__}")


def _check_activation_dtype(name, value):
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a format name such as 'bf16', got "
                        f"{type(value).__name__}")
    bytes_per_element(value, name)


#: What ``allreduce`` accepts, each boolean standing for one of the named models.
ALLREDUCE_MODELS = ("collective", "ring", "guide")
_ALLREDUCE_FLAGS = {True: "collective", False: "guide"}


def _check_allreduce(name, value):
    if isinstance(value, (bool, np.bool_)) or value in ALLREDUCE_MODELS:
        return
    raise TypeError(f"{name} must be True or False, or one of {', '.join(ALLREDUCE_MODELS)}; "
                    f"got {value!r}")


def allreduce_model(value) -> str:
    """The all-reduce model an ``allreduce`` option names: "collective", "ring" or "guide"."""
    if isinstance(value, (bool, np.bool_)):
        return _ALLREDUCE_FLAGS[bool(value)]
    return value


def _single(check):
    """An override: ``None`` (use the GPU's own) or one number passing ``check``."""
    def check_override(name, value):
        if value is not None:
            check(name, value)
            if np.ndim(value):
                raise TypeError(f"{name} must be a single number")
    return check_override


def _efficiency(name, value):
    check_range(name, value, lo=0, hi=1, lo_open=True)


def _optional_efficiency(name, value):
    """``None`` (follow ``bandwidth_efficiency``) or an efficiency in (0, 1]."""
    if value is not None:
        _efficiency(name, value)


#: The keyword options every time function takes, with the guide's ideal-model defaults.
OPTION_DEFAULTS = {"compute_efficiency": 1.0, "bandwidth_efficiency": 1.0, "step_overhead": 0.0,
                   "allreduce": True, "compute_dtype": None, "activation_dtype": "bf16",
                   "interconnect_bandwidth": None, "interconnect_latency": None,
                   "layer_overhead": 0.0, "kv_bandwidth_efficiency": None,
                   "gemm_half_tokens": 0.0, "prefill_overhead": 0.0}

#: The options a calibration fits beside the three classic knobs: every step formula takes
#: them (the step decorator adds them to a signature that does not name them), each at a
#: default that leaves the ideal model exactly as it was.
ENGINE_OPTIONS = ("layer_overhead", "kv_bandwidth_efficiency", "gemm_half_tokens",
                  "prefill_overhead")

#: One check per option, run wherever the option enters (one rule, one message).
OPTION_CHECKS = {"compute_efficiency": _efficiency, "bandwidth_efficiency": _efficiency,
                 "step_overhead": check_nonnegative, "allreduce": _check_allreduce,
                 "compute_dtype": _check_dtype, "activation_dtype": _check_activation_dtype,
                 "interconnect_bandwidth": _single(check_positive),
                 "interconnect_latency": _single(check_nonnegative),
                 "layer_overhead": check_nonnegative,
                 "kv_bandwidth_efficiency": _optional_efficiency,
                 "gemm_half_tokens": lambda name, v: check_range(name, v, lo=0, hi=MAX_COUNT),
                 "prefill_overhead": check_nonnegative}

#: Checks of the arguments the roofline formulas share, by name (a formula may override one).
ARGUMENT_CHECKS = {"batch_size": lambda name, v: check_range(name, v, lo=1, hi=MAX_COUNT),
                   "context_length": lambda name, v: check_range(name, v, lo=0, hi=MAX_COUNT),
                   "prompt_tokens": lambda name, v: check_range(name, v, lo=1, hi=MAX_COUNT),
                   "tp": lambda name, v: check_integer(name, v, lo=1),
                   **OPTION_CHECKS}


def read_options(**options):
    """Validate the efficiency factors and overrides every time function accepts."""
    unknown = sorted(set(options) - set(OPTION_DEFAULTS))
    if unknown:
        raise TypeError(f"unexpected keyword argument(s) {', '.join(unknown)}; the options are "
                        f"{', '.join(OPTION_DEFAULTS)}")
    o = {**OPTION_DEFAULTS, **options}
    for name, check in OPTION_CHECKS.items():
        check(name, o[name])
    o["allreduce"] = allreduce_model(o["allreduce"])
    return o


def read_model(model, arguments) -> dict:
    """Spec reader of the roofline formulas: the model's fields (:func:`model_fields`)."""
    return model_fields(model)


def read_gpu(gpu, arguments) -> dict:
    """Spec reader of the roofline formulas: the GPU's fields at the formula's compute_dtype.

    ``attention_peak_flops`` is the peak in the activation format, where attention runs.
    """
    out = gpu_fields(gpu, arguments.get("compute_dtype"))
    attention = parallel.device_peak_flops(
        gpu, arguments.get("activation_dtype", OPTION_DEFAULTS["activation_dtype"]))
    out["attention_peak_flops"] = float(attention) if isinstance(attention, numbers.Real) \
        else attention
    return out


#: The roofline formulas' parameters, documented once: the shared arguments and the options.
ROOFLINE_PARAMETERS = {**PARAMETERS, **parameter_entries("""
    compute_efficiency : float, array_like or xarray.DataArray
        Share of the peak FLOP/s the matrix multiplies reach [1], in (0, 1]. Default 1.0.
    bandwidth_efficiency : float, array_like or xarray.DataArray
        Share of the HBM bandwidth the step reaches [1], in (0, 1]. Default 1.0.
    step_overhead : float, array_like or xarray.DataArray
        Fixed time per step (scheduling, kernel launches, sampling) [s], ≥ 0. Default 0.
    allreduce : bool or {"collective", "ring", "guide"}
        Tensor parallelism's all-reduce time (:mod:`rooflinekit.parallel`), two per layer.
        ``"collective"`` (default, also ``True``): a fixed latency per all-reduce, flat in the
        degree, plus ``2·(d−1)/d`` of the payload over the link. ``"ring"``: the textbook ring,
        ``2·(d−1)`` hop latencies per all-reduce. ``"guide"`` (also ``False``): no
        communication, the guide's §5 simple model.
    compute_dtype : str, optional
        Format of the weight matrix multiplies ("fp8", ...); default the GPU's 16-bit dense peak.
    activation_dtype : str
        Format of the activations ("bf16", ...): the all-reduce payload's element size and the
        format attention runs in (its peak FLOP/s). Default "bf16".
    interconnect_bandwidth, interconnect_latency : float, optional
        Overrides of the GPU's per-direction link bandwidth [bytes/s] and link latency [s] (per
        ring hop; a collective pays two).
    layer_overhead : float, array_like or xarray.DataArray
        Fixed time per decoder layer per step (kernel launches, which scale with the layers)
        [s], ≥ 0: the step's fixed cost is ``step_overhead + n_layers · layer_overhead``.
        Default 0.
    kv_bandwidth_efficiency : float, array_like, xarray.DataArray or None
        Share of the HBM bandwidth the KV-cache reads and writes reach [1], in (0, 1];
        ``bandwidth_efficiency`` is then the weight-streaming one. Default ``None``: the same
        as ``bandwidth_efficiency`` (one efficiency for all traffic, as before).
    gemm_half_tokens : float, array_like or xarray.DataArray
        Tokens per step at which the weight matrix multiplies reach half their efficiency
        [tokens], ≥ 0: small steps run the GEMMs at ``compute_efficiency · n / (n + n½)``, so
        their time is ``flops · (n + n½) / (peak · compute_efficiency)``. Default 0 (flat).
    prefill_overhead : float, array_like or xarray.DataArray
        Fixed time a step carrying prompt tokens pays once (request admission, tokenization
        hand-off, scheduling of a new prompt): the serving stack's TTFT intercept [s], ≥ 0.
        Default 0.
    """)}
