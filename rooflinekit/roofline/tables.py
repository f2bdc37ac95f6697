"""Labelled tables of the roofline: a decode step's whole roofline, and scaling over TP degrees.

Each returns one :class:`xarray.Dataset` over its inputs' dimensions, with ``units`` and
``long_name`` on every variable.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from rooflinekit import dims
from rooflinekit._labels import dataset, spec_value
from rooflinekit._validation import check_integer
from rooflinekit.roofline.latency import decode_step_time
from rooflinekit.roofline.engine import engine_for
from rooflinekit.roofline.step import (
    decode_step,
    step_bytes,
    step_compute_time,
    step_flops,
    step_memory_time,
    step_table,
    step_time,
)

__all__ = ["decode_roofline", "tp_scaling"]


@step_table({
    "flops": ("FLOP", "decode FLOPs per step"),
    "bytes": ("bytes", "decode bytes per step"),
    "arithmetic_intensity": ("FLOP/byte", "arithmetic intensity"),
    "ridge_point": ("FLOP/byte", "ridge point"),
    "compute_utilization": ("1", "achieved / peak FLOP/s"),
    "compute_time": ("s", "decode compute time"),
    "memory_time": ("s", "decode memory time"),
    "decode_step_time": ("s", "decode step time (ITL)"),
    "amortized_token_time": ("s/token", "amortized time per token"),
    "throughput": ("tokens/s", "decode throughput per group"),
    "bound": ("", "bound"),
}, as_dims=("batch_size", "context_length", "tp"))
def decode_roofline(model, gpu, batch_size=1, context_length=0, tp=1, *, engine=None):
    """Everything the roofline says about a decode step, as one labelled Dataset.

    Returns
    -------
    xarray.Dataset
        ``flops`` [FLOP], ``bytes`` [bytes], ``arithmetic_intensity`` and ``ridge_point``
        [FLOP/byte], ``compute_utilization`` (achieved ÷ peak FLOP/s) [1], ``compute_time``,
        ``memory_time``, ``decode_step_time`` [s], ``amortized_token_time`` [s/token],
        ``throughput`` [tokens/s], ``bound`` ("compute"/"memory").

    See Also
    --------
    decode_step_time, tp_scaling

    Notes
    -----
    Regenerates the guide's "Batching raises it" table (§3.2): at no context the intensity of
    the 70B model equals the batch size and the per-token time falls as ``1/B``.

    References
    ----------
    .. [1] Guide §3.2, §4.1.
    """
    step = decode_step(model, batch_size, context_length)
    flops, traffic = step_flops(model, step), step_bytes(model, step)
    compute_t, memory_t = step_compute_time(model, gpu, step), step_memory_time(model, gpu, step)
    t = step_time(model, gpu, step)
    peak = gpu.peak_flops / gpu.compute_efficiency
    return {
        "flops": flops,
        "bytes": traffic,
        "arithmetic_intensity": flops / traffic,
        "ridge_point": gpu.peak_flops / gpu.bandwidth,
        "compute_utilization": flops / t / peak,
        "compute_time": compute_t,
        "memory_time": memory_t,
        "decode_step_time": t,
        "amortized_token_time": t / batch_size,
        "throughput": batch_size / t,
        "bound": np.where(compute_t >= memory_t, "compute", "memory"),
    }


def tp_scaling(model, gpu, degrees=(1, 2, 4, 8), batch_size=1, context_length=0, *,
               engine=None):
    """How decode latency scales with the tensor-parallel degree, with and without communication.

    Parameters
    ----------
    degrees : sequence of int
        Degrees to compare [1], each ≥ 1; the first is the baseline of the speed-up.
    engine : Engine or Calibration, optional
        How the engine runs a decode step (:class:`rooflinekit.Engine`; default
        :data:`rooflinekit.IDEAL`); ``decode_step_time_simple`` is the same engine without
        communication (``allreduce="guide"``).

    Returns
    -------
    xarray.Dataset
        Over ``tp`` (and the inputs' dimensions): ``decode_step_time``,
        ``decode_step_time_simple`` and ``allreduce_time`` [s], ``speedup`` and
        ``speedup_simple`` against the first degree [1], ``scaling_efficiency`` (speed-up ÷
        degree ratio) [1], and ``weights_fit`` (whether the group's memory holds the weights;
        the latency is computed either way).

    See Also
    --------
    decode_step_time, rooflinekit.parallel.allreduce_time

    Notes
    -----
    The simple model's step time falls as ``1/tp``; the all-reduce time does not (its latency
    is paid per all-reduce; the ring's grows as ``2·(tp−1)``), so the real speed-up flattens
    and can reverse: past the point where the weights and the needed KV fit, as the guide says.

    References
    ----------
    .. [1] Serving-capacity guide §5.
    .. [2] Pope et al., "Efficiently Scaling Transformer Inference", MLSys 2023.
    """
    if isinstance(degrees, (str, bytes)) or not hasattr(degrees, "__iter__"):
        raise TypeError("degrees must be a sequence of integers >= 1")
    degrees = list(degrees)
    if not degrees:
        raise ValueError("degrees must hold at least one tensor-parallel degree")
    check_integer("degrees", degrees, lo=1)
    engine = engine_for(engine, "decode", model=model, gpu=gpu)
    tp = xr.DataArray(np.asarray(degrees, dtype=np.int64), dims=(dims.TP,),
                      coords={dims.TP: np.asarray(degrees, dtype=np.int64)})
    step = decode_step_time(model, gpu, batch_size, context_length, tp, engine=engine)
    simple = decode_step_time(model, gpu, batch_size, context_length, tp,
                              engine=engine.replace(allreduce="guide"))
    base_step = step.isel({dims.TP: 0}, drop=True)
    base_simple = simple.isel({dims.TP: 0}, drop=True)
    ratio = tp / tp.isel({dims.TP: 0}, drop=True)
    speedup = base_step / step
    fits = spec_value(gpu, "memory_bytes") * tp > spec_value(model, "weight_bytes")
    return dataset({
        "decode_step_time": (step, "s", "decode step time (ITL)"),
        "decode_step_time_simple": (simple, "s", "decode step time, simple TP model"),
        "allreduce_time": (step - simple, "s", "all-reduce time per step"),
        "speedup": (speedup, "1", "speed-up over the first degree"),
        "speedup_simple": (base_simple / simple, "1",
                           "speed-up over the first degree, simple TP model"),
        "scaling_efficiency": (speedup / ratio, "1", "speed-up / degree ratio"),
        "weights_fit": (fits, "1", "group memory holds the weights"),
    })
