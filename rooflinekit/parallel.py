"""Tensor parallelism: the guide's simple group model and the communication it ignores (guide §5).

The simple model (guide §5, what the lab does) splits every layer's weights over ``tp`` GPUs and
lets memory, bandwidth and FLOP/s scale with the degree. What it leaves out is the cost of putting
the pieces back together: Megatron-style tensor parallelism needs **two all-reduces per layer**
(after the attention output projection and after the MLP down projection), each of
``tokens × hidden_size`` activations. With the ring algorithm every GPU sends and receives
``2·(d−1)/d`` of that payload and waits ``2·(d−1)`` hop latencies, so the cost grows with the
degree while the compute and memory time it buys shrink as ``1/d``: speed-ups flatten, and the
practical rule is the smallest degree that fits the model plus a useful KV budget.

Spec inputs are :class:`~rooflinekit.ModelShape` / :class:`~rooflinekit.GPU` objects or catalogue
Datasets; the rest are Python numbers, numpy arrays or DataArrays (labelled outputs carry units).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import xarray as xr

from rooflinekit import memory
from rooflinekit._labels import align_inputs, finish, is_labelled, spec_value
from rooflinekit._validation import check_integer, check_nonnegative, check_positive
from rooflinekit.dtypes import dtype_name
from rooflinekit.hardware import GPU
from rooflinekit.models import ModelShape

__all__ = [
    "ALLREDUCES_PER_LAYER", "device_peak_flops", "require_link", "group_bandwidth", "group_peak_flops", "ring_allreduce_time",
    "allreduce_coefficients", "allreduce_time", "smallest_tp",
]

#: Megatron tensor parallelism all-reduces twice per layer: after attention and after the MLP.
ALLREDUCES_PER_LAYER = 2


def _check_model(model):
    if not isinstance(model, (ModelShape, xr.Dataset)):
        raise TypeError(f"model must be a ModelShape or a catalogue Dataset "
                        f"(catalog.models(as_dataset=True)), got {type(model).__name__}")


def _check_gpu(gpu):
    if not isinstance(gpu, (GPU, xr.Dataset)):
        raise TypeError(f"gpu must be a GPU or a catalogue Dataset (catalog.gpus(as_dataset=True)),"
                        f" got {type(gpu).__name__}")


def _optional(value):
    """A spec field that may be None (unknown) as a float NaN, leaving arrays alone."""
    return math.nan if value is None else value


def device_peak_flops(gpu, compute_dtype=None):
    """Dense peak FLOP/s of ``gpu`` for a compute format (the 16-bit peak when ``None``)."""
    if compute_dtype is None:
        return spec_value(gpu, "peak_flops")
    key = dtype_name(compute_dtype)
    if isinstance(gpu, xr.Dataset):
        name = f"peak_flops_{key}"
        return gpu[name] if name in gpu else gpu["peak_flops"]
    if not isinstance(gpu, GPU):       # an array spec: peak_flops_<dtype> fields, as a Dataset
        return getattr(gpu, f"peak_flops_{key}", spec_value(gpu, "peak_flops"))
    return gpu.flops_for(key)


def group_peak_flops(gpu, tp=1, compute_dtype=None):
    """Dense peak of a tensor-parallel group [FLOP/s]: ``tp × peak`` (guide §5's simple model).

    Parameters
    ----------
    gpu : GPU or xarray.Dataset
        One accelerator, or a catalogue Dataset over ``gpu``.
    tp : int, array_like or xarray.DataArray
        Tensor-parallel degree [1], ≥ 1.
    compute_dtype : str, optional
        Format the matrix multiplies run in ("bf16", "fp8", ...); ``None`` is the 16-bit peak.

    Returns
    -------
    float, ndarray or xarray.DataArray
        Peak arithmetic rate of the group [FLOP/s].

    References
    ----------
    .. [1] Serving-capacity guide §5 ("memory, bandwidth and FLOPs all scale with the group size").
    """
    _check_gpu(gpu)
    check_integer("tp", tp, lo=1)
    a = align_inputs({"tp": tp, "gpu": gpu})
    return finish(device_peak_flops(gpu, compute_dtype) * a["tp"], "FLOP/s", "group peak FLOP/s")


def group_bandwidth(gpu, tp=1):
    """Memory bandwidth of a tensor-parallel group [bytes/s]: ``tp × bandwidth`` (guide §5).

    Parameters
    ----------
    gpu : GPU or xarray.Dataset
        One accelerator, or a catalogue Dataset over ``gpu``.
    tp : int, array_like or xarray.DataArray
        Tensor-parallel degree [1], ≥ 1.

    Returns
    -------
    float, ndarray or xarray.DataArray
        Aggregate HBM bandwidth [bytes/s].

    References
    ----------
    .. [1] Serving-capacity guide §5.
    """
    _check_gpu(gpu)
    check_integer("tp", tp, lo=1)
    a = align_inputs({"tp": tp, "gpu": gpu})
    return finish(spec_value(gpu, "hbm_bandwidth") * a["tp"], "bytes/s", "group HBM bandwidth")


def ring_allreduce_time(payload_bytes, degree, link_bandwidth, hop_latency=0.0):
    """Time of one ring all-reduce of ``payload_bytes`` over ``degree`` GPUs [s].

    ``2·(d−1)/d · payload / link_bandwidth + 2·(d−1) · hop_latency``; 0 for ``d = 1``.

    Parameters
    ----------
    payload_bytes : float, array_like or xarray.DataArray
        Bytes each GPU holds and the group sums [bytes], ≥ 0.
    degree : int, array_like or xarray.DataArray
        GPUs in the ring [1], ≥ 1.
    link_bandwidth : float, array_like or xarray.DataArray
        Per-GPU, per-direction interconnect bandwidth [bytes/s], > 0.
    hop_latency : float, array_like or xarray.DataArray
        Latency of one ring step [s], ≥ 0. Default 0.

    Returns
    -------
    float, ndarray or xarray.DataArray
        Seconds.

    Notes
    -----
    A ring all-reduce is a reduce-scatter then an all-gather, each ``d − 1`` steps moving
    ``payload / d`` per GPU per step, which is bandwidth-optimal. Tree and one-shot algorithms
    (NCCL's for small messages, TensorRT-LLM's custom all-reduce over NVSwitch) trade bandwidth for
    fewer latency terms; this is the textbook ring, and at decode-sized messages
    its ``2·(d−1)`` latency term dominates.

    References
    ----------
    .. [1] Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
       workstations", J. Parallel Distrib. Comput. 69(2), 2009.
    .. [2] Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication Operations in
       MPICH", IJHPCA 19(1), 2005.
    """
    check_nonnegative("payload_bytes", payload_bytes)
    check_integer("degree", degree, lo=1)
    check_positive("link_bandwidth", link_bandwidth, allow_inf=True)
    check_nonnegative("hop_latency", hop_latency)
    a = align_inputs({"payload_bytes": payload_bytes, "degree": degree,
                      "link_bandwidth": link_bandwidth, "hop_latency": hop_latency})
    steps = 2 * (a["degree"] - 1)
    result = (steps / a["degree"] * a["payload_bytes"] / a["link_bandwidth"]
              + steps * a["hop_latency"])
    return finish(result, "s", "ring all-reduce time")


def allreduce_coefficients(n_layers, hidden_size, activation_bytes, degree, hop_latency):
    """Per-step tensor-parallel communication as two coefficients (plain arithmetic).

    Parameters
    ----------
    n_layers, hidden_size : float or ndarray
        Decoder layers and model width [1].
    activation_bytes : float or ndarray
        Bytes per activation element [bytes] (the KV/activation format).
    degree : float or ndarray
        GPUs in the tensor-parallel group [1], ≥ 1.
    hop_latency : float or ndarray
        Latency of one ring step [s].

    Returns
    -------
    bytes_per_token : float or ndarray
        Bytes each GPU sends (and receives) per token per step over all
        ``2 · n_layers`` ring all-reduces [bytes/token]; divide by the link bandwidth for time.
    latency : float or ndarray
        Fixed latency of those all-reduces per step [s]: ``2·L · 2·(d−1) · hop_latency``.

    Notes
    -----
    Used by the roofline's step coefficients (:mod:`rooflinekit.roofline.step`) on raw arrays; both are
    0 when ``degree = 1``.
    """
    ring = 2.0 * (degree - 1.0) / degree
    allreduces = ALLREDUCES_PER_LAYER * n_layers
    bytes_per_token = allreduces * ring * hidden_size * activation_bytes
    latency = allreduces * 2.0 * (degree - 1.0) * hop_latency
    return bytes_per_token, latency


def allreduce_time(model, gpu, tokens, tp=1, *, interconnect_bandwidth=None,
                   interconnect_latency=None):
    """Communication time tensor parallelism adds to one forward step [s].

    Parameters
    ----------
    model : ModelShape or xarray.Dataset
        The model (``n_layers``, ``hidden_size``, activation format = ``kv_bytes_per_element``).
    gpu : GPU or xarray.Dataset
        One accelerator (its ``interconnect_bandwidth`` and ``interconnect_latency``).
    tokens : int, array_like or xarray.DataArray
        Tokens in the step [tokens]: the batch size for decode, the prompt length for prefill.
    tp : int, array_like or xarray.DataArray
        Tensor-parallel degree [1], ≥ 1.
    interconnect_bandwidth : float, optional
        Override of the per-direction link bandwidth per GPU [bytes/s].
    interconnect_latency : float, optional
        Override of the per-hop latency [s].

    Returns
    -------
    float, ndarray or xarray.DataArray
        Seconds per step; 0 at ``tp = 1``.

    Raises
    ------
    ValueError
        If a degree above 1 meets a GPU with no known interconnect bandwidth and no override.

    Notes
    -----
    ``2·L`` ring all-reduces of ``tokens × hidden_size × b_act`` bytes each
    (:func:`ring_allreduce_time`), run one after another with the compute (no overlap), as in
    Megatron-LM inference. A decode step of a 70B model at ``tp = 8`` carries 160 of them.

    References
    ----------
    .. [1] Shoeybi et al., "Megatron-LM: Training Multi-Billion Parameter Language Models Using
       Model Parallelism", arXiv:1909.08053, 2019 (two all-reduces per layer, §3).
    .. [2] Serving-capacity guide §5 ("every layer needs an all-reduce ... scaling is sub-linear").
    """
    _check_model(model)
    _check_gpu(gpu)
    check_nonnegative("tokens", tokens)
    check_integer("tp", tp, lo=1)
    link, hop = _link(gpu, interconnect_bandwidth, interconnect_latency)
    a = align_inputs({"tokens": tokens, "tp": tp, "model": model, "gpu": gpu})
    degree = a["tp"] * spec_value(gpu, "n_gpus")
    require_link(link, degree)
    per_token, latency = allreduce_coefficients(
        spec_value(model, "n_layers"), spec_value(model, "hidden_size"),
        spec_value(model, "kv_bytes_per_element"), degree, hop)
    # 0 / inf is 0 where no link is needed (degree 1); NaN links were rejected above.
    safe_link = xr.where(degree > 1, link, np.inf) if is_labelled(degree) or is_labelled(link) \
        else np.where(np.asarray(degree) > 1, link, np.inf)
    return finish(a["tokens"] * per_token / safe_link + latency, "s",
                  "tensor-parallel all-reduce time")


def _link(gpu, bandwidth, latency):
    """The link bandwidth and hop latency to use: overrides, else the GPU's own."""
    if bandwidth is None:
        bandwidth = _optional(spec_value(gpu, "interconnect_bandwidth"))
    else:
        check_positive("interconnect_bandwidth", bandwidth)
    if latency is None:
        latency = spec_value(gpu, "interconnect_latency")
    else:
        check_nonnegative("interconnect_latency", latency)
    return bandwidth, latency


def require_link(link, degree):
    """Raise ``ValueError`` where a group of more than one GPU has no known link bandwidth."""
    need = np.asarray(degree > 1) & np.isnan(np.asarray(link, dtype=float))
    if need.any():
        raise ValueError("interconnect_bandwidth is unknown for this gpu but tp > 1 needs it for "
                         "the all-reduce cost; pass interconnect_bandwidth=<bytes/s> or use "
                         "allreduce=False (the guide's simple model)")


def smallest_tp(model, gpu, *, kv_budget_bytes=None, concurrency=None, context_length=None,
                reserve=memory.DEFAULT_RESERVE, candidates=(1, 2, 4, 8)):
    """The smallest tensor-parallel degree that holds the weights plus a KV budget (guide §5).

    Parameters
    ----------
    model : ModelShape or xarray.Dataset
        The model, or a catalogue Dataset over ``model``.
    gpu : GPU or xarray.Dataset
        One accelerator, or a catalogue Dataset over ``gpu``.
    kv_budget_bytes : float, array_like or xarray.DataArray, optional
        KV cache the group must hold after weights and reserve [bytes], ≥ 0.
    concurrency : int, array_like or xarray.DataArray, optional
        Sequences that must fit at ``context_length`` [1], ≥ 1 (instead of ``kv_budget_bytes``).
    context_length : int, array_like or xarray.DataArray, optional
        Tokens per sequence for ``concurrency`` [tokens], ≥ 1.
    reserve : float
        Working-space share of the memory left after weights, in [0, 1). Default 0.10 (§2.4).
    candidates : sequence of int
        Degrees to try, each ≥ 1 (searched in increasing order). Default (1, 2, 4, 8).

    Returns
    -------
    int, ndarray of int64 or xarray.DataArray
        The smallest candidate degree that fits; **0 where none does** (the model needs a bigger
        node, a smaller format or pipeline parallelism).

    Raises
    ------
    ValueError
        If both or neither of a KV budget and a concurrency are given, or a value is out of range.

    Notes
    -----
    A degree fits when the group holds the weights (``tp × memory > weights``) and
    :func:`rooflinekit.memory.usable_kv_bytes` (what remains after weights, less the reserve)
    is at least the requested budget, ``concurrency ×``
    :func:`rooflinekit.memory.kv_bytes_per_sequence` for a concurrency. Going wider than that
    buys memory that is not needed with latency that is (all-reduce cost, :func:`tp_scaling`).

    Example: the guide's 70B fp16 model on 80 GiB cards with 8 sequences of 8,192 tokens
    (20 GiB of KV) needs 2 GPUs: 160 GiB − 130.4 GiB leaves 26.7 GiB after the reserve.

    References
    ----------
    .. [1] Serving-capacity guide §5 ("choose the smallest TP degree that fits the model plus a
       useful KV budget") and §2.4.
    """
    _check_model(model)
    _check_gpu(gpu)
    if (kv_budget_bytes is None) == (concurrency is None):
        raise ValueError("give exactly one of kv_budget_bytes or concurrency (with context_length)")
    if concurrency is not None:
        if context_length is None:
            raise ValueError("concurrency needs context_length [tokens]")
        check_integer("concurrency", concurrency, lo=1)
        check_integer("context_length", context_length, lo=1)
    else:
        if context_length is not None:
            raise ValueError("context_length only applies with concurrency")
        check_nonnegative("kv_budget_bytes", kv_budget_bytes)
    if isinstance(candidates, (str, bytes)) or not hasattr(candidates, "__iter__"):
        raise TypeError("candidates must be a sequence of integers >= 1")
    degrees = list(candidates)
    if not degrees or any(isinstance(d, bool) or not isinstance(d, numbers.Integral) or d < 1
                          for d in degrees):
        raise ValueError(f"candidates must be a non-empty sequence of integers >= 1, "
                         f"got {candidates!r}")
    degrees = sorted(set(int(d) for d in degrees))
    if concurrency is not None:
        a = align_inputs({"concurrency": concurrency, "context_length": context_length,
                          "model": model, "gpu": gpu})
        need = a["concurrency"] * memory.kv_bytes_per_sequence(model, a["context_length"])
    else:
        need = align_inputs({"kv_budget_bytes": kv_budget_bytes, "model": model,
                             "gpu": gpu})["kv_budget_bytes"]
    weights = spec_value(model, "weight_bytes")
    chosen = 0 * need * weights * spec_value(gpu, "memory_bytes")   # shape of the answer
    chosen = chosen.astype(np.int64) if hasattr(chosen, "astype") else 0
    # Largest degree first, so the smallest that fits overwrites: a handful of degrees, no cells.
    for degree in reversed(degrees):
        fits = (spec_value(gpu, "memory_bytes") * degree > weights) & (
            memory.usable_kv_bytes(model, gpu, tp=degree, reserve=reserve) >= need)
        chosen = xr.where(fits, degree, chosen) if is_labelled(fits) else np.where(fits, degree,
                                                                                    chosen)
    if isinstance(chosen, xr.DataArray):
        chosen = chosen.astype(np.int64)
    return finish(chosen, "1", "smallest tensor-parallel degree that fits (0: none)")
