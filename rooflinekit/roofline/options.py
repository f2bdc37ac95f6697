"""Inputs of the roofline formulas: the fields of their specs, and the shared argument checks.

Reads a :class:`~rooflinekit.ModelShape` or :class:`~rooflinekit.GPU` (or a catalogue Dataset,
or an array spec) as numbers, and checks and documents the arguments the formulas share.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import xarray as xr

from rooflinekit import parallel
from rooflinekit._labels import PARAMETERS
from rooflinekit._validation import (
    MAX_COUNT,
    check_integer,
    check_range,
)
from rooflinekit.dtypes import dtype_name
from rooflinekit.hardware import GPU
from rooflinekit.models import ModelShape

#: Nothing public: the spec readers and checks serve the formulas of this folder.
__all__: list = []

MODEL_FIELDS = ("n_layers", "n_heads", "head_dim", "attention_width", "hidden_size", "n_params",
                "n_active_params", "n_experts", "n_experts_per_token", "bytes_per_param",
                "kv_bytes_per_element", "kv_bytes_per_token", "kv_bytes_per_token_per_layer",
                "n_full_layers", "n_sliding_layers", "sliding_window")
#: Model fields a Dataset or array spec may lack, and their value then (0: no embedding table
#: counted apart from the other weights).
OPTIONAL_MODEL_FIELDS = {"input_embedding_params": 0.0, "lm_head_params": 0.0,
                         # weight groups in a format of their own, and the layers with a KV
                         # cache (NaN: as bytes_per_param, as n_layers)
                         "bytes_per_body_param": math.nan, "bytes_per_expert_param": math.nan,
                         "bytes_per_embedding_param": math.nan, "n_kv_layers": math.nan,
                         # a hybrid's recurrent state per sequence (0: none)
                         "state_bytes_per_sequence": 0.0,
                         # its recurrent layers (Gated DeltaNet and Mamba) and the state
                         # elements of one (0: none)
                         "n_recurrent_layers": 0.0,
                         "linear_state_elements_per_layer": 0.0,
                         # encoders held but in no token's path (0: none)
                         "n_aside_params": 0.0,
                         # a sliding layer's own KV bytes (NaN: a full layer's), and sparse
                         # attention's tokens per query with its indexer's key bytes (inf
                         # and 0: dense attention)
                         "sliding_kv_bytes_per_token_per_layer": math.nan,
                         "index_topk": math.inf, "indexer_bytes_per_token_per_layer": 0.0,
                         # weight GEMMs W4A4 on FP4 tensor cores where the GPU has them (0: no)
                         "fp4_matmuls": 0.0,
                         # a prompt's attention over its own tokens (NaN: attention_width)
                         "prefill_attention_width": math.nan,
                         # multi-head latent attention in its KV layers (0: KV heads)
                         "is_mla": 0.0}
GPU_FIELDS = ("hbm_bandwidth", "peak_flops", "interconnect_bandwidth", "interconnect_latency",
              "n_gpus", "hourly_price")
#: GPU fields a Dataset or array spec may lack, NaN then: a PCIe group's shared host link and
#: its peer-to-peer domain (none: every GPU keeps its own link), the boost clock, whether
#: collectives pay a latency per ring hop (NaN: no, one collective latency) and the GPUs one
#: host holds (NaN: the whole scale-up domain's).
OPTIONAL_GPU_FIELDS = ("host_link_bandwidth", "p2p_gpus", "boost_clock", "ring_collectives",
                       "host_gpus")


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
    # an unknown window or top-k is none: inf
    unbounded = ("sliding_window", "index_topk")
    out = {k: float(getattr(model, k)) for k in (*MODEL_FIELDS, *OPTIONAL_MODEL_FIELDS)
           if k not in unbounded}
    for k in unbounded:
        out[k] = math.inf if getattr(model, k) is None else float(getattr(model, k))
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
    per_expert = np.where(e > k, (p - pa - np.asarray(out["n_aside_params"]))
                          / np.maximum(e - k, 1.0), 0.0)
    if (pa - k * per_expert < 0).any():
        raise ValueError("model: n_active_params is smaller than its n_experts_per_token routed "
                         "experts ((n_params - n_active_params) / (n_experts - "
                         "n_experts_per_token) each); check the MoE fields")
    return out


def gpu_fields(gpu, compute_dtype) -> dict:
    """The GPU's fields as floats (object) or DataArrays over ``gpu`` (Dataset)."""
    out = _spec_fields("gpu", gpu, GPU, GPU_FIELDS, _gpu_object_fields)
    for k in OPTIONAL_GPU_FIELDS:
        if k in out:
            continue
        if isinstance(gpu, GPU):
            value = getattr(gpu, k)
            out[k] = math.nan if value is None else float(value)
        elif isinstance(gpu, xr.Dataset):
            out[k] = gpu[k].astype(float) if k in gpu else math.nan
        else:
            value = getattr(gpu, k, None)
            out[k] = math.nan if value is None else np.asarray(value, dtype=float)
    out["peak_flops"] = parallel.device_peak_flops(gpu, compute_dtype)
    if isinstance(out["peak_flops"], numbers.Real):
        out["peak_flops"] = float(out["peak_flops"])
    return out


#: Checks of the arguments the roofline formulas share, by name (a formula may override one).
ARGUMENT_CHECKS = {"batch_size": lambda name, v: check_range(name, v, lo=1, hi=MAX_COUNT),
                   "context_length": lambda name, v: check_range(name, v, lo=0, hi=MAX_COUNT),
                   "prompt_tokens": lambda name, v: check_range(name, v, lo=1, hi=MAX_COUNT),
                   "tp": lambda name, v: check_integer(name, v, lo=1),
                   # the experts' groups: at most the 4096 GPUs a normal maximum is kept for
                   "ep": lambda name, v: (check_integer(name, v, lo=1),
                                          check_range(name, v, lo=1, hi=4096))}


def read_model(model, arguments) -> dict:
    """Spec reader of the roofline formulas: the model's fields (:func:`model_fields`)."""
    return model_fields(model)


def read_gpu(gpu, arguments) -> dict:
    """Spec reader of the roofline formulas: the GPU's fields at the formula's compute_dtype.

    ``attention_peak_flops`` is the peak in the activation format, where attention runs;
    ``peak_flops_16bit`` the GPU's 16-bit dense peak, which says whether the matmuls' format
    is a low-precision path (its peak above that one); ``fp4_path`` whether it is an FP4 one
    (the GPU's FP4 peak, listed above its FP8 one).
    """
    compute_dtype = arguments.get("compute_dtype")
    out = gpu_fields(gpu, compute_dtype)
    model = arguments.get("model")
    # the matmuls in an FP4 format: named by the engine, else NVFP4 weights (fp4_matmuls)
    fp4 = dtype_name(compute_dtype) == "fp4" if compute_dtype is not None else \
        model is not None and _fp4_matmuls(model)
    if compute_dtype is None and model is not None:
        # one-byte weights (an FP8 checkpoint) multiply on FP8 tensor cores where the GPU has
        # them, as vLLM, SGLang and TensorRT-LLM run W8A8 (and as calibrate fits such rows),
        # and NVFP4 weights (fp4_matmuls) on FP4 tensor cores, W4A4; other formats widen to
        # 16 bits (weight-only int4, MXFP4 experts), as do both on a GPU without the format
        one_byte = (model["bytes_per_param"] if isinstance(model, xr.Dataset)
                    else np.asarray(getattr(model, "bytes_per_param"), dtype=float)) == 1.0
        for narrow, dtype in ((one_byte, "fp8"), (fp4, "fp4")):
            if not np.any(narrow):
                continue
            peak = parallel.device_peak_flops(gpu, dtype)
            peak = float(peak) if isinstance(peak, numbers.Real) else peak
            pick = xr.where if isinstance(narrow, xr.DataArray) or \
                isinstance(peak, xr.DataArray) else np.where
            out["peak_flops"] = pick(narrow, peak, out["peak_flops"])
            if isinstance(out["peak_flops"], np.ndarray) and out["peak_flops"].ndim == 0:
                out["peak_flops"] = float(out["peak_flops"])
    # an FP4 path: FP4 matmuls on a GPU that lists its FP4 peak above its FP8 one
    out["fp4_path"] = fp4 & (parallel.device_peak_flops(gpu, "fp4") > parallel.device_peak_flops(
        gpu, "fp8")) if np.any(fp4) else False
    # the 16-bit peak, against which a format's own says whether it is a low-precision path
    sixteen = parallel.device_peak_flops(gpu, None)
    out["peak_flops_16bit"] = float(sixteen) if isinstance(sixteen, numbers.Real) else sixteen
    attention = parallel.device_peak_flops(gpu, arguments.get("activation_dtype", "bf16"))
    out["attention_peak_flops"] = float(attention) if isinstance(attention, numbers.Real) \
        else attention
    return out


def _fp4_matmuls(model):
    """Where the model's weight GEMMs run W4A4 on FP4 tensor cores (``fp4_matmuls``, absent:
    nowhere), as a boolean array or DataArray."""
    if isinstance(model, xr.Dataset):
        return model["fp4_matmuls"].astype(bool) if "fp4_matmuls" in model else False
    value = getattr(model, "fp4_matmuls", None)
    return False if value is None else np.asarray(value, dtype=float) != 0.0


#: The roofline formulas' parameters, documented once (the engine's are on :class:`Engine`).
ROOFLINE_PARAMETERS = dict(PARAMETERS)
