"""Labelled tables of the roofline: a decode step's whole roofline, and scaling over TP degrees.

Each function evaluates the step formula of :mod:`rooflinekit.roofline.step` over its inputs'
dimensions and returns one :class:`xarray.Dataset` with ``units`` and ``long_name`` on every
variable.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from rooflinekit import dims
from rooflinekit._labels import document, finish, spec_value
from rooflinekit._validation import check_integer
from rooflinekit.roofline.latency import decode_step_time
from rooflinekit.roofline.options import (
    ARGUMENT_CHECKS,
    ROOFLINE_PARAMETERS,
    read_options,
)
from rooflinekit.roofline.step import (
    _setup,
    decode_step,
    step_bytes,
    step_flops,
    step_time,
)

__all__ = ["decode_roofline", "tp_scaling"]


@document(ROOFLINE_PARAMETERS)
def decode_roofline(model, gpu, batch_size=1, context_length=0, tp=1, *, compute_efficiency=1.0,
                    bandwidth_efficiency=1.0, step_overhead=0.0, allreduce=False,
                    compute_dtype=None, interconnect_bandwidth=None, interconnect_latency=None):
    """Everything the roofline says about a decode step, as one labelled Dataset.

    Returns
    -------
    xarray.Dataset
        ``flops`` [FLOP], ``bytes`` [bytes], ``arithmetic_intensity`` and ``ridge_point``
        [FLOP/byte], ``compute_utilization`` (achieved ÷ peak FLOP/s) [1], ``compute_time``,
        ``memory_time``, ``step_time`` [s], ``amortized_token_time`` [s/token],
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
    opts = read_options(compute_efficiency=compute_efficiency,
                        bandwidth_efficiency=bandwidth_efficiency, step_overhead=step_overhead,
                        allreduce=allreduce, compute_dtype=compute_dtype,
                        interconnect_bandwidth=interconnect_bandwidth,
                        interconnect_latency=interconnect_latency)
    labelled = {}
    for key, value in (("batch_size", batch_size), ("context_length", context_length),
                       ("tp", tp)):
        if isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and value.ndim):
            value = np.asarray(value)
            if value.ndim != 1:
                raise TypeError(f"{key} must be 1-D or a DataArray for decode_roofline")
            value = xr.DataArray(value, dims=(key,), coords={key: value})
        labelled[key] = value
    for key in ("batch_size", "context_length", "tp"):
        ARGUMENT_CHECKS[key](key, labelled[key])
    g, inputs = _setup(model, gpu, {**labelled, **opts})
    m, group, b = inputs["model"], inputs["gpu"], inputs["batch_size"]
    step = decode_step(m, b, inputs["context_length"])
    flops, traffic = step_flops(m, step), step_bytes(m, step)
    compute_t, memory_t = flops / group.peak_flops, traffic / group.bandwidth
    t = step_time(m, group, step)
    peak = group.peak_flops / group.compute_efficiency
    values = {
        "flops": (flops, "FLOP", "decode FLOPs per step"),
        "bytes": (traffic, "bytes", "decode bytes per step"),
        "arithmetic_intensity": (flops / traffic, "FLOP/byte", "arithmetic intensity"),
        "ridge_point": (group.peak_flops / group.bandwidth, "FLOP/byte", "ridge point"),
        "compute_utilization": (flops / t / peak, "1", "achieved / peak FLOP/s"),
        "compute_time": (compute_t, "s", "decode compute time"),
        "memory_time": (memory_t, "s", "decode memory time"),
        "step_time": (t, "s", "decode step time (ITL)"),
        "amortized_token_time": (t / b, "s/token", "amortized time per token"),
        "throughput": (b / t, "tokens/s", "decode throughput per group"),
    }
    data = {}
    for name, (value, units, long_name) in values.items():
        wrapped = g.wrap(value, units, long_name)
        data[name] = wrapped if isinstance(wrapped, xr.DataArray) else xr.DataArray(
            np.asarray(wrapped), attrs={"units": units, "long_name": long_name})
    compute = np.asarray(compute_t >= memory_t)
    bounds = np.where(np.broadcast_to(compute, g.shape), "compute", "memory")
    data["bound"] = (xr.DataArray(bounds, dims=g.dims, coords=g.coords) if g.labelled
                     else xr.DataArray(bounds))
    data["bound"].attrs = {"units": "", "long_name": "bound"}
    return xr.Dataset(data)


def tp_scaling(model, gpu, degrees=(1, 2, 4, 8), batch_size=1, context_length=0, *,
               allreduce=True, **options):
    """How decode latency scales with the tensor-parallel degree, with and without communication.

    Parameters
    ----------
    degrees : sequence of int
        Degrees to compare [1], each ≥ 1; the first is the baseline of the speed-up.
    allreduce : bool
        Whether ``step_time`` includes the all-reduce cost (default ``True``; ``step_time_simple``
        is always the guide's model without it).
    **options
        Efficiency factors and overrides passed to
        :func:`~rooflinekit.roofline.decode_step_time`.

    Returns
    -------
    xarray.Dataset
        Over ``tp`` (and the inputs' dimensions): ``step_time`` [s], ``step_time_simple`` [s],
        ``allreduce_time`` [s], ``speedup`` and ``speedup_simple`` against the first degree [1],
        ``scaling_efficiency`` (speed-up ÷ degree ratio) [1], and ``weights_fit`` (whether the
        group's memory holds the weights; the latency is computed either way).

    See Also
    --------
    decode_step_time, rooflinekit.parallel.allreduce_time

    Notes
    -----
    The simple model's step time falls as ``1/tp``; the all-reduce time grows with ``tp`` (its
    latency term as ``2·(tp−1)``), so the real speed-up flattens and can reverse. Memory-bound
    decode gains least from a wider group exactly where the guide says to stop: once the
    weights and the needed KV fit.

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
    if not isinstance(allreduce, (bool, np.bool_)):
        raise TypeError("allreduce must be True or False")
    tp = xr.DataArray(np.asarray(degrees, dtype=np.int64), dims=(dims.TP,),
                      coords={dims.TP: np.asarray(degrees, dtype=np.int64)})
    step = decode_step_time(model, gpu, batch_size, context_length, tp,
                            allreduce=bool(allreduce), **options)
    simple = decode_step_time(model, gpu, batch_size, context_length, tp, allreduce=False,
                              **options)
    base_step = step.isel({dims.TP: 0}, drop=True)
    base_simple = simple.isel({dims.TP: 0}, drop=True)
    ratio = tp / tp.isel({dims.TP: 0}, drop=True)
    speedup = base_step / step
    fits = spec_value(gpu, "memory_bytes") * tp > spec_value(model, "weight_bytes")
    data = {
        "step_time": finish(step, "s", "decode step time (ITL)"),
        "step_time_simple": finish(simple, "s", "decode step time, simple TP model"),
        "allreduce_time": finish(step - simple, "s", "all-reduce time per step"),
        "speedup": finish(speedup, "1", "speed-up over the first degree"),
        "speedup_simple": finish(base_simple / simple, "1",
                                 "speed-up over the first degree, simple TP model"),
        "scaling_efficiency": finish(speedup / ratio, "1", "speed-up / degree ratio"),
        "weights_fit": finish(fits, "1", "group memory holds the weights"),
    }
    return xr.Dataset(data)

