"""Parallel layouts: tensor, pipeline, expert and data parallelism, and what they communicate.

Tensor parallelism (guide §5): the simple group model (memory, bandwidth and FLOP/s scale with
``tp``) and the two all-reduces per layer it leaves out, whose cost does not shrink with the
degree. A layout ``(tp, pp, ep, dp)`` serves one model on ``tp × pp × dp`` GPUs: its memory per
GPU, pipeline bubble, expert all-to-all and KV transfer (``docs/parallelism.md``). Specs are
objects or catalogue Datasets; the rest numbers, arrays or DataArrays.
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import NamedTuple

import numpy as np
import xarray as xr

from rooflinekit import memory
from rooflinekit._labels import (
    PARAMETERS,
    formula,
    parameter_entries,
    spec_fields,
    spec_value,
    where,
    widen,
)
from rooflinekit._validation import (
    check_fraction,
    check_integer,
    check_nonnegative,
    check_positive,
    check_range,
    check_type,
    whole_number,
)
from rooflinekit.dtypes import bytes_per_element, dtype_name
from rooflinekit.hardware import GPU
from rooflinekit.models import ModelShape

__all__ = [
    "ALLREDUCES_PER_LAYER",
    "COLLECTIVE_HOPS",
    "ONE_SHOT_HOPS",
    "TWO_STAGE_HOPS",
    "LayoutMemory",
    "all_to_all_bytes_per_token",
    "allreduce_coefficients",
    "cross_host_allreduce_latency",
    "one_shot_allreduce_coefficients",
    "one_shot_available",
    "allreduce_time",
    "check_layout",
    "device_peak_flops",
    "expert_all_to_all_bytes",
    "expert_params",
    "expected_normal_maximum",
    "expert_weight_bytes",
    "group_bandwidth",
    "group_peak_flops",
    "kv_transfer_time",
    "layout_memory",
    "moe_layer_count",
    "moe_layers",
    "pipeline_bubble",
    "require_link",
    "ring_allreduce_time",
    "smallest_tp",
]

#: Megatron tensor parallelism all-reduces twice per layer: after attention and after the MLP.
ALLREDUCES_PER_LAYER = 2

#: Link latencies one all-reduce pays in the "collective" model, whatever the degree: a
#: reduce-scatter then an all-gather, each one direct exchange with every peer at once over a
#: switch (NCCL's NVLS, TensorRT-LLM's and vLLM's one-/two-shot kernels). Measured small-message
#: all-reduce time is flat from 2 to 8 GPUs on NVSwitch, not ``2·(d−1)`` hops as a ring pays.
COLLECTIVE_HOPS = 2

#: Link latencies the engines' own all-reduce ("custom") pays where it runs in one shot: a
#: synchronisation with every peer at the start and at the end (vLLM's ``Signal`` keeps "two
#: sets of peer counters ... for two syncs: starting and ending an operation").
ONE_SHOT_HOPS = 2

#: Link latencies the engines' own all-reduce pays in two stages: the same two syncs and one
#: between the reduce-scatter and the all-gather. Against every NVLink GPU's measured table the
#: 2:3 ratio fits as well as any (vLLM 0.24.0's H100 5.9 % against 5.7 % for 1:2 and 7.2 % for
#: 3:4) and keeps a hop's latency at the collective's scale (2.3 µs against 2.5).
TWO_STAGE_HOPS = 3

#: The all-reduce models :func:`allreduce_coefficients` knows. ``"custom"`` is the engines'
#: own all-reduce over NVLink: each all-reduce the faster of the two-stage ``"collective"`` and
#: a one-shot (:func:`one_shot_allreduce_coefficients`).
_ALGORITHMS = ("collective", "ring", "guide", "custom")


def _check_model(name, model):
    check_type(name, model, (ModelShape, xr.Dataset))


def _check_gpu(name, gpu):
    check_type(name, gpu, (GPU, xr.Dataset))


def _optional(check):
    """An override: ``None`` (the GPU's own) or numbers passing ``check``."""
    def check_override(name, value):
        if value is not None:
            check(name, value)
    return check_override


#: The parallel formulas' parameters: the shared ones and the link overrides.
PARALLEL_PARAMETERS = {**PARAMETERS, **parameter_entries("""
    compute_dtype : str, optional
        Format the matrix multiplies run in ("bf16", "fp8", ...); ``None`` is the 16-bit peak.
    interconnect_bandwidth : float, optional
        Override of the per-direction link bandwidth per GPU [bytes/s].
    interconnect_latency : float, optional
        Override of the per-hop latency [s].
    """)}

#: Checks by argument name, shared by the parallel formulas.
_CHECKS = {"model": _check_model, "gpu": _check_gpu,
           "tp": lambda name, v: check_integer(name, v, lo=1),
           "interconnect_bandwidth": _optional(check_positive),
           "interconnect_latency": _optional(check_nonnegative)}


def _read_peak(gpu, arguments):
    """The GPU's peak at the formula's compute format."""
    return {"peak_flops": device_peak_flops(gpu, arguments.get("compute_dtype"))}


def _parallel_formula(units, long_name, *, model=(), gpu=(), checks=None, **kwargs):
    """:func:`rooflinekit._labels.formula` reading ``model`` and ``gpu`` fields, checks by name."""
    specs = {}
    if model:
        specs["model"] = spec_fields(*model, unknown={"sliding_window": np.inf})
    if gpu:
        specs["gpu"] = gpu if callable(gpu) else spec_fields(*gpu)
    return formula(units, long_name, checks={**_CHECKS, **(checks or {})}, specs=specs,
                   parameters=PARALLEL_PARAMETERS, **kwargs)


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


@_parallel_formula("FLOP/s", "group peak FLOP/s", gpu=_read_peak, order=("gpu", "tp"))
def group_peak_flops(gpu, tp=1, compute_dtype=None):
    """Dense peak of a tensor-parallel group [FLOP/s]: ``tp × peak`` (guide §5's simple model).

    Returns
    -------
    float, ndarray or xarray.DataArray
        Peak arithmetic rate of the group [FLOP/s].

    References
    ----------
    .. [1] Serving-capacity guide §5 ("memory, bandwidth and FLOPs all scale with the group size").
    """
    return gpu.peak_flops * tp


@_parallel_formula("bytes/s", "group HBM bandwidth", gpu=("hbm_bandwidth",), order=("gpu", "tp"))
def group_bandwidth(gpu, tp=1):
    """Memory bandwidth of a tensor-parallel group [bytes/s]: ``tp × bandwidth`` (guide §5).

    Returns
    -------
    float, ndarray or xarray.DataArray
        Aggregate HBM bandwidth [bytes/s].

    References
    ----------
    .. [1] Serving-capacity guide §5.
    """
    return gpu.hbm_bandwidth * tp


@_parallel_formula("s", "ring all-reduce time",
                   order=("degree", "payload_bytes", "link_bandwidth", "hop_latency"), checks={
                       "payload_bytes": check_nonnegative,
                       "degree": lambda name, v: check_integer(name, v, lo=1),
                       "link_bandwidth": lambda name, v: check_positive(name, v, allow_inf=True),
                       "hop_latency": check_nonnegative})
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
    steps = 2 * (degree - 1)
    return steps / degree * payload_bytes / link_bandwidth + steps * hop_latency


def allreduce_coefficients(n_layers, hidden_size, activation_bytes, degree, hop_latency,
                           algorithm="ring", ring_collectives=False, host_gpus=math.nan):
    """Per-step tensor-parallel communication as two coefficients (plain arithmetic).

    Parameters
    ----------
    n_layers, hidden_size : float or ndarray
        Decoder layers and model width [1].
    activation_bytes : float or ndarray
        Bytes per activation element [bytes] (the activation format, bf16: 2).
    degree : float or ndarray
        GPUs in the tensor-parallel group [1], ≥ 1.
    hop_latency : float or ndarray
        Latency of one link hop [s].
    algorithm : {"ring", "collective", "custom", "guide"}
        ``"ring"``: ``2·(d−1)`` hops per all-reduce; ``"collective"``: :data:`COLLECTIVE_HOPS`
        per all-reduce, flat in the degree; ``"custom"``: the engines' two-stage kernel,
        :data:`TWO_STAGE_HOPS`, where it has a one-shot alternative
        (:func:`one_shot_available`; :func:`one_shot_allreduce_coefficients`), else the
        ``"collective"``; ``"guide"``: no communication (both 0).
    ring_collectives : bool, float, ndarray or xarray.DataArray
        The GPU's ``ring_collectives`` (true, or above 0.5: a PCIe card); where it holds, a
        ``"collective"`` or ``"custom"`` all-reduce pays the ring's ``2·(d−1)`` hops. Default
        False.
    host_gpus : float or ndarray
        For ``"custom"``: the GPUs one host holds, past which the engines' own kernels give
        way to the collective (:func:`one_shot_available`). NaN (default): no bound.

    Returns
    -------
    bytes_per_token : float or ndarray
        Bytes each GPU sends (and receives) per token per step over all
        ``2 · n_layers`` all-reduces [bytes/token]; divide by the link bandwidth for time.
    latency : float or ndarray
        Fixed latency of those all-reduces per step [s]: ``2·L · 2·(d−1) · hop_latency``
        (ring) or ``2·L · 2 · hop_latency`` (collective, ``d > 1``).

    Notes
    -----
    Both algorithms move ``2·(d−1)/d`` of the payload per GPU, the bandwidth optimum
    (Patarasuk & Yuan 2009). Used by the roofline's step coefficients
    (:mod:`rooflinekit.roofline.step`) on raw arrays; both are 0 when ``degree = 1``.
    """
    if algorithm not in _ALGORITHMS:
        raise ValueError(f"algorithm must be one of {', '.join(_ALGORITHMS)}, got {algorithm!r}")
    if algorithm == "guide":
        return 0.0, 0.0
    ring = 2.0 * (degree - 1.0) / degree
    allreduces = ALLREDUCES_PER_LAYER * n_layers
    bytes_per_token = allreduces * ring * hidden_size * activation_bytes
    ring_hops = 2.0 * (degree - 1.0)
    hops = ring_hops if algorithm == "ring" else COLLECTIVE_HOPS * np.minimum(degree - 1.0, 1.0)
    if algorithm != "ring" and np.any(np.asarray(ring_collectives) > 0.5):
        # a PCIe card's collective crosses its peers in turn: a latency per ring hop
        hops = where(ring_collectives > 0.5, ring_hops, hops)
    if algorithm == "custom":
        # the engines' own two-stage kernel syncs once more than a switch's collective
        available = one_shot_available(degree, ring_collectives, host_gpus)
        if np.any(np.asarray(available)):
            hops = where(available, TWO_STAGE_HOPS * np.minimum(degree - 1.0, 1.0), hops)
    latency = allreduces * hops * hop_latency
    return bytes_per_token, latency


def one_shot_available(degree, ring_collectives=False, host_gpus=math.nan):
    """Where the engines' own all-reduce has a one-shot (plain arithmetic) [bool].

    Parameters
    ----------
    degree : float, ndarray or xarray.DataArray
        GPUs in the tensor-parallel group [1].
    ring_collectives : bool, float, ndarray or xarray.DataArray
        The GPU's ``ring_collectives`` (true, or above 0.5: a PCIe card). Default False.
    host_gpus : float, ndarray or xarray.DataArray
        GPUs one host holds (NaN, the default: no bound) [1].

    Returns
    -------
    bool, ndarray or xarray.DataArray
        True for an NVLink group (not ``ring_collectives``) of at most ``host_gpus``.

    See Also
    --------
    one_shot_allreduce_coefficients
    """
    return np.logical_not((ring_collectives > 0.5) | (degree > host_gpus))


def one_shot_allreduce_coefficients(n_layers, hidden_size, activation_bytes, degree,
                                    hop_latency, algorithm="custom", ring_collectives=False,
                                    host_gpus=np.nan):
    """Per-step tensor-parallel communication of one-shot all-reduces (plain arithmetic).

    Parameters
    ----------
    n_layers, hidden_size, activation_bytes, degree, hop_latency : float or ndarray
        As for :func:`allreduce_coefficients`.
    algorithm : {"custom", "collective", "ring", "guide"}
        Only ``"custom"`` has a one-shot alternative; the others get none.
    ring_collectives : bool, float, ndarray or xarray.DataArray
        The GPU's ``ring_collectives``: a PCIe card's group has none. Default False.
    host_gpus : float or ndarray
        GPUs one host holds (the catalogue's ``host_gpus``): a group larger than that has
        none. NaN (default): no such bound.

    Returns
    -------
    bytes_per_token : float or ndarray
        Bytes each GPU reads from its peers per token per step over all ``2 · n_layers``
        all-reduces [bytes/token]: ``2·L · (d−1) · h · b``; 0 where there is no alternative.
    latency : float or ndarray
        Their fixed latency per step [s]: ``2·L · ONE_SHOT_HOPS · hop_latency`` (``d > 1``);
        ``inf`` where there is no alternative, so that ``min(two-stage, one-shot)`` is the
        two-stage time exactly.

    Notes
    -----
    The serving engines' own all-reduce over NVLink (vLLM's and SGLang's custom all-reduce,
    TensorRT-LLM's AUTO strategy) runs small messages in one shot: every GPU reads its ``d −
    1`` peers' whole payloads from their mapped buffers and sums them, synchronising with its
    peers at the start and the end (:data:`ONE_SHOT_HOPS`), against the two-stage kernel's
    three syncs (:data:`TWO_STAGE_HOPS`: a reduce-scatter, a sync, an all-gather,
    ``2·(d−1)/d`` of the payload), but ``(d − 1)`` payloads over the link against
    ``2·(d−1)/d`` of one: ``d/2`` times the bytes. Each all-reduce takes the faster, as the
    engines switch from one to the other past a message size that grows with the latency and
    shrinks with the degree. Measured tables bear it out: on eight H100s (vLLM 0.24.0, bf16)
    128 KiB take 7.9 µs and 512 KiB 12.0 µs, against 4.8 and 6.3 µs on two [1]_; over every
    NVLink GPU's and engine's table at 2 KiB-8 MiB the faster-of-two fits the time with about
    half the error of the two-stage alone (H100 under vLLM 0.24.0: 5.9 % against 11.9 %, at a
    fitted hop of 2.3 µs). vLLM's and SGLang's mapped buffers
    reach one host's GPUs only (past them they fall back to a collective library), and over
    PCIe their custom all-reduce stops at two GPUs, so a group past ``host_gpus`` and a PCIe
    card's group take the ``"collective"`` here. TensorRT-LLM's all-reduce spans an NVL72's
    domain, in one shot too, which this leaves out: its eight-GPU groups on a GB200 or GB300
    are timed as two-stage.

    References
    ----------
    .. [1] NVIDIA aiconfigurator-core 0.12.0 (Apache-2.0),
       ``systems/data/h100_sxm/comm/vllm/0.24.0/custom_allreduce_perf.parquet``.
    .. [2] vLLM, ``csrc/custom_all_reduce.cuh``: ``cross_device_reduce_1stage`` and
       ``cross_device_reduce_2stage``.

    See Also
    --------
    allreduce_coefficients
    """
    if algorithm not in _ALGORITHMS:
        raise ValueError(f"algorithm must be one of {', '.join(_ALGORITHMS)}, got {algorithm!r}")
    if algorithm != "custom":
        return 0.0, math.inf
    allreduces = ALLREDUCES_PER_LAYER * n_layers
    bytes_per_token = allreduces * (degree - 1.0) * hidden_size * activation_bytes
    latency = allreduces * ONE_SHOT_HOPS * np.minimum(degree - 1.0, 1.0) * hop_latency
    available = one_shot_available(degree, ring_collectives, host_gpus)
    if np.all(np.asarray(available)):
        return bytes_per_token, latency
    return where(available, bytes_per_token, 0.0), where(available, latency, math.inf)


def cross_host_allreduce_latency(n_layers, degree, host_gpus, latency):
    """Latency the all-reduces of one step add past one host's GPUs [s] (plain arithmetic).

    Parameters
    ----------
    n_layers : float or ndarray
        Decoder layers [1].
    degree : float or ndarray
        GPUs in the tensor-parallel group [1], ≥ 1.
    host_gpus : float or ndarray
        GPUs one host holds [1] (the catalogue's ``host_gpus``); NaN where unknown.
    latency : float or ndarray
        Latency one all-reduce adds across hosts [s], ≥ 0 (an engine's
        ``cross_host_allreduce_latency``).

    Returns
    -------
    float or ndarray
        ``2·L · latency`` where ``degree > host_gpus``, else 0.

    Notes
    -----
    An engine whose all-reduce reads its peers' buffers through device memory mapped from one
    host (CUDA IPC) cannot map a GPU of another host: past one host it falls back to a
    collective library, which pays more per all-reduce even over the same NVLink switches
    (an NVL72's trays hold four GPUs each). The measured tables this knob is read from:
    SGLang 0.5.14's all-reduce of 128 bytes to 64 KiB on GB300 takes 3.4-4.1 µs on two or four
    GPUs and 27-30 µs on eight, vLLM 0.27.0's 7.0-8.0 and 13-14 µs, TensorRT-LLM
    1.3.0rc20's (whose all-reduce spans the NVLink domain) 4.2-4.9 and 4.3-4.6 µs [1]_.

    References
    ----------
    .. [1] NVIDIA aiconfigurator-core 0.12.0 (Apache-2.0),
       ``systems/data/gb300/comm/{sglang/0.5.14,vllm/0.27.0,trtllm/1.3.0rc20}/custom_allreduce_perf.parquet``.

    See Also
    --------
    allreduce_coefficients
    """
    arrays = (n_layers, degree, host_gpus, latency)
    where = xr.where if any(isinstance(a, xr.DataArray) for a in arrays) else np.where
    beyond = degree > host_gpus                  # NaN (unknown): never beyond
    return where(beyond, ALLREDUCES_PER_LAYER * n_layers * latency, 0.0)


def _read_link(gpu, arguments):
    """The GPU's group size and link (an unknown bandwidth reads NaN), and whether its
    collectives pay a latency per ring hop (``ring_collectives``; 0 where a Dataset or array
    spec lacks it)."""
    out = spec_fields("n_gpus", "interconnect_bandwidth", "interconnect_latency")(gpu, arguments)
    if isinstance(gpu, xr.Dataset):
        out["ring_collectives"] = gpu["ring_collectives"].astype(float) \
            if "ring_collectives" in gpu else 0.0
    else:
        ring = getattr(gpu, "ring_collectives", None)
        out["ring_collectives"] = 0.0 if ring is None else np.asarray(ring, dtype=float)
    return out


def _check_algorithm(name, value):
    if value not in _ALGORITHMS:
        raise ValueError(f"{name} must be one of {', '.join(_ALGORITHMS)}, got {value!r}")


def _check_activation(name, value):
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a format name such as 'bf16', got "
                        f"{type(value).__name__}")
    bytes_per_element(value, name)


@_parallel_formula("s", "tensor-parallel all-reduce time",
                   model=("n_layers", "hidden_size"), gpu=_read_link,
                   order=("tokens", "model", "tp", "gpu"),
                   checks={"tokens": check_nonnegative, "algorithm": _check_algorithm,
                           "activation_dtype": _check_activation},
                   keep=("algorithm", "activation_dtype"))
def allreduce_time(model, gpu, tokens, tp=1, *, algorithm="collective", activation_dtype="bf16",
                   interconnect_bandwidth=None, interconnect_latency=None):
    """Communication time tensor parallelism adds to one forward step [s].

    Parameters
    ----------
    model : ModelShape or xarray.Dataset
        The model (``n_layers``, ``hidden_size``).
    gpu : GPU or xarray.Dataset
        One accelerator (its ``interconnect_bandwidth`` and ``interconnect_latency``).
    tokens : int, array_like or xarray.DataArray
        Tokens in the step [tokens]: the batch size for decode, the prompt length for prefill.
    algorithm : {"collective", "custom", "ring", "guide"}
        ``"collective"`` (default): :data:`COLLECTIVE_HOPS` link latencies per all-reduce, flat
        in the degree, or the ring's on a GPU whose ``ring_collectives`` is true (a PCIe card:
        its collectives cross the peers in turn); ``"custom"``: the engines' own all-reduce,
        each the faster of that and a one-shot (one latency, ``d − 1`` payloads over the link;
        :func:`one_shot_allreduce_coefficients`) on NVLink GPUs; ``"ring"``:
        the textbook ring's ``2·(d−1)``; ``"guide"``: none (0 s).
    activation_dtype : str
        Format of the activations summed [bytes per element by name]. Default "bf16" (2 B),
        whatever the KV-cache format.

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
    ``2·L`` all-reduces of ``tokens × hidden_size × b_act`` bytes each, run one after another
    with the compute (no overlap), as in Megatron-LM inference: ``2·(d−1)/d`` of the payload
    over the link plus a latency per all-reduce (2 hops, or the ring's ``2·(d−1)``,
    :func:`ring_allreduce_time`). A decode step of a 70B model at ``tp = 8`` carries 160.

    References
    ----------
    .. [1] Shoeybi et al., "Megatron-LM: Training Multi-Billion Parameter Language Models Using
       Model Parallelism", arXiv:1909.08053, 2019 (two all-reduces per layer, §3).
    .. [2] Serving-capacity guide §5 ("every layer needs an all-reduce ... scaling is sub-linear").
    """
    link = gpu.interconnect_bandwidth if interconnect_bandwidth is None else \
        interconnect_bandwidth
    hop = gpu.interconnect_latency if interconnect_latency is None else interconnect_latency
    degree = tp * gpu.n_gpus
    require_link(link, degree)
    per_token, latency = allreduce_coefficients(
        model.n_layers, model.hidden_size, bytes_per_element(activation_dtype), degree, hop,
        algorithm, gpu.ring_collectives)
    # 0 / inf is 0 where no link is needed (degree 1); NaN links were rejected above.
    safe_link = np.where(degree > 1, link, np.inf)
    two_stage = tokens * per_token / safe_link + latency
    if algorithm != "custom":
        return two_stage
    one_bytes, one_latency = one_shot_allreduce_coefficients(
        model.n_layers, model.hidden_size, bytes_per_element(activation_dtype), degree, hop,
        algorithm, gpu.ring_collectives)
    return np.minimum(two_stage, tokens * one_bytes / safe_link + one_latency)


def require_link(link, degree):
    """Raise ``ValueError`` where a group of more than one GPU has no known link bandwidth."""
    need = np.asarray(degree > 1) & np.isnan(np.asarray(link, dtype=float))
    if need.any():
        raise ValueError("interconnect_bandwidth is unknown for this gpu but tp > 1 needs it for "
                         "the all-reduce cost; pass interconnect_bandwidth=<bytes/s> or use "
                         "allreduce='guide' (the guide's simple model)")


def _check_request(arguments):
    """Exactly one of a KV budget and a concurrency (with its context), and the candidates."""
    budget, concurrency = arguments["kv_budget_bytes"], arguments["concurrency"]
    context_length, candidates = arguments["context_length"], arguments["candidates"]
    if (budget is None) == (concurrency is None):
        raise ValueError("give exactly one of kv_budget_bytes or concurrency (with context_length)")
    if concurrency is not None:
        if context_length is None:
            raise ValueError("concurrency needs context_length [tokens]")
        check_integer("concurrency", concurrency, lo=1)
        check_integer("context_length", context_length, lo=1)
    else:
        if context_length is not None:
            raise ValueError("context_length only applies with concurrency")
        check_nonnegative("kv_budget_bytes", budget)
    if isinstance(candidates, (str, bytes)) or not hasattr(candidates, "__iter__"):
        raise TypeError("candidates must be a sequence of integers >= 1")
    degrees = list(candidates)
    if not degrees or any(isinstance(d, bool) or not isinstance(d, numbers.Integral) or d < 1
                          for d in degrees):
        raise ValueError(f"candidates must be a non-empty sequence of integers >= 1, "
                         f"got {candidates!r}")


@_parallel_formula("1", "smallest tensor-parallel degree that fits (0: none)",
                   model=("weight_bytes", "kv_bytes_per_token_per_layer", "n_full_layers",
                          "n_sliding_layers", "sliding_window"), gpu=("memory_bytes",),
                   order=("gpu", "model", "concurrency", "context_length", "kv_budget_bytes"),
                   checks={"reserve": lambda name, v: check_fraction(name, v, hi_open=True)},
                   validate=_check_request,
                   keep=("candidates",))
def smallest_tp(model, gpu, *, kv_budget_bytes=None, concurrency=None, context_length=None,
                reserve=memory.DEFAULT_RESERVE, candidates=(1, 2, 4, 8)):
    """The smallest tensor-parallel degree that holds the weights plus a KV budget (guide §5).

    Parameters
    ----------
    kv_budget_bytes : float, array_like or xarray.DataArray, optional
        KV cache the group must hold after weights and reserve [bytes], ≥ 0.
    concurrency : int, array_like or xarray.DataArray, optional
        Sequences that must fit at ``context_length`` [1], ≥ 1 (instead of ``kv_budget_bytes``).
    context_length : int, array_like or xarray.DataArray, optional
        Tokens per sequence for ``concurrency`` [tokens], ≥ 1.
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
    if concurrency is not None:
        need = concurrency * memory.sequence_kv_bytes(model, context_length)
    else:
        need = kv_budget_bytes
    chosen = np.zeros(np.broadcast_shapes(np.shape(need), np.shape(model.weight_bytes),
                                          np.shape(gpu.memory_bytes)), dtype=np.int64)
    # Largest degree first, so the smallest that fits overwrites: a handful of degrees, no cells.
    for degree in sorted({int(d) for d in candidates}, reverse=True):
        fits = (gpu.memory_bytes * degree > model.weight_bytes) & (
            memory.usable_bytes(model, gpu, degree, reserve) >= need)
        chosen = np.where(fits, degree, chosen)
    return chosen


# ------------------------------------------------------------------------------------------------
# Layouts: (tp, pp, ep, dp), their memory per GPU and the traffic between their parts.
# ------------------------------------------------------------------------------------------------

def layout_ok(n_heads, n_kv_heads, is_mla, n_layers, n_experts, tp, pp=1, ep=1, dp=1):
    """Whether a ``(tp, pp, ep, dp)`` layout divides a model, elementwise (plain arrays).

    The one rule of a layout's validity, which :func:`check_layout` explains and the sweep
    applies cell by cell: ``tp`` divides the attention heads, and the KV heads or a multiple
    of them (a latent cache, ``is_mla``, has no KV heads to split); ``pp`` divides the
    layers; ``ep`` is 1, or divides the routed experts (more than one) and ``tp × dp``, with
    ``ep`` and ``tp`` one a divisor of the other.
    """
    mla = np.asarray(is_mla) > 0                   # a spec table holds it as a number
    kv_heads = np.where(mla, 1, n_kv_heads)        # (a latent cache's count is not read)
    heads = (n_heads % tp == 0) & (mla | (kv_heads % tp == 0) | (tp % kv_heads == 0))
    experts = (n_experts > 1) & (n_experts % ep == 0) & ((tp * dp) % ep == 0) & (
        (tp % ep == 0) | (ep % tp == 0))
    return heads & (n_layers % pp == 0) & ((ep == 1) | experts)


def _explain_layout(model, tp, pp, ep, dp):
    """Raise the ValueError that says which part of :func:`layout_ok`'s rule a layout breaks."""
    if model.n_layers % pp:
        raise ValueError(f"pp must divide the model's {model.n_layers} layers (stages of equal "
                         f"layers); got pp={pp}")
    if model.n_heads % tp:
        raise ValueError(f"tp must divide the model's {model.n_heads} attention heads; got tp={tp}")
    if not model.is_mla and model.n_kv_heads % tp and tp % model.n_kv_heads:
        raise ValueError(f"tp must divide the model's {model.n_kv_heads} KV heads or be a multiple "
                         f"of them; got tp={tp}")
    if ep > 1:
        if not model.is_moe:
            raise ValueError(f"ep must be 1 for a dense model (no experts to spread); got ep={ep}")
        if model.n_experts % ep:
            raise ValueError(f"ep must divide the model's {model.n_experts} routed experts; "
                             f"got ep={ep}")
        if (tp * dp) % ep or (tp % ep and ep % tp):
            raise ValueError(f"ep must divide tp × dp = {tp * dp} (experts shard over a stage's "
                             f"GPUs) and divide tp or be a multiple of it; got ep={ep}")
    raise ValueError(f"layout tp={tp}, pp={pp}, ep={ep}, dp={dp} does not divide the model")


def check_layout(model, *, tp=1, pp=1, ep=1, dp=1, n_gpus=None):
    """Validate a layout against a model and return its degrees as ``(tp, pp, ep, dp)`` ints.

    Parameters
    ----------
    model : ModelShape
        The model the layout serves.
    tp, pp, ep, dp : int
        Tensor-, pipeline-, expert- and data-parallel degrees [1], each ≥ 1.
    n_gpus : int, optional
        GPUs available [1]; the layout's ``tp × pp × dp`` must not exceed it.

    Returns
    -------
    tuple of int
        ``(tp, pp, ep, dp)``.

    Raises
    ------
    ValueError
        Naming the dimension, when the layout breaks :func:`layout_ok`'s rule (``ep > 1`` on a
        dense model included), or needs more GPUs than ``n_gpus``.
    TypeError
        When a degree is not a whole number or ``model`` is not a :class:`ModelShape`.

    Notes
    -----
    Layers are split evenly; a remainder is refused rather than given to one stage, since the
    slowest stage would set every stage's pace. Expert parallelism shards within a pipeline stage
    over its ``tp × dp`` GPUs (vLLM's and SGLang's rule), so ``ep`` divides ``tp × dp``.
    """
    check_type("model", model, ModelShape)
    tp, pp, ep, dp = (whole_number(n, v, lo=1) for n, v in
                      (("tp", tp), ("pp", pp), ("ep", ep), ("dp", dp)))
    if not layout_ok(model.n_heads, model.n_kv_heads, model.is_mla, model.n_layers,
                     model.n_experts, tp, pp, ep, dp):
        _explain_layout(model, tp, pp, ep, dp)
    if n_gpus is not None:
        n_gpus = whole_number("n_gpus", n_gpus, lo=1)
        if tp * pp * dp > n_gpus:
            raise ValueError(f"tp × pp × dp = {tp * pp * dp} exceeds the n_gpus={n_gpus} given")
    return tp, pp, ep, dp


def expert_weight_bytes(model):
    """Bytes of a model's routed-expert weights [bytes]; 0 for a dense model.

    Parameters
    ----------
    model : ModelShape
        The model (``n_params``, ``n_active_params``, ``n_experts``, ``n_experts_per_token``).

    Returns
    -------
    float
        ``(N − N_active) · E / (E − k) · b_expert`` (``b_expert``: the experts' bytes per
        parameter, :attr:`~rooflinekit.ModelShape.bytes_per_expert_param`): the inactive parameters are the ``E − k`` experts a
        token skips, so one expert's share is ``(N − N_active)/(E − k)`` and all routed experts
        hold ``E`` of those shares.

    Notes
    -----
    Shared experts, attention, dense layers and embeddings are used by every token, so they are
    in ``N_active`` and not here. A MoE model without ``n_active_params`` reads 0 (nothing known
    to spread). DeepSeek-V3: ``(671.0 − 37.6)·10⁹ · 256/248`` = 653.9e9 parameters.

    See Also
    --------
    layout_memory, moe_layers
    """
    check_type("model", model, ModelShape)
    # the experts' own format (gpt-oss: MXFP4 with its scales), the model's where not given
    return float(expert_params(model.n_params, model.n_active_params, model.n_experts,
                               model.n_experts_per_token, model.n_aside_params)) \
        * model.bytes_per_expert_param


def expert_params(n_params, n_active_params, n_experts, n_experts_per_token, n_aside_params=0.0):
    """Routed-expert parameters from the model's counts (plain arithmetic on arrays) [1].

    ``(N − N_active − N_aside) · E / (E − k)``, 0 where ``E = k`` (a dense model); ``N_aside``
    (:attr:`~rooflinekit.ModelShape.n_aside_params`) the encoders no token runs. Used by
    :func:`expert_weight_bytes` and by the sweep on raw arrays.
    """
    skipped = np.asarray(n_experts - n_experts_per_token, dtype=float)
    safe = np.where(skipped > 0, skipped, 1.0)
    return np.where(skipped > 0,
                    (n_params - n_active_params - n_aside_params) * n_experts / safe, 0.0)


def moe_layer_count(n_layers, routed_params, n_experts, hidden_size, intermediate_size):
    """MoE layers from the routed parameters and one layer's experts (plain arithmetic) [1].

    ``round(routed / (E · 3 · h · i))`` capped to ``[1, n_layers]``; ``n_layers`` where the
    intermediate size is unknown (NaN or 0); 0 where there are no routed parameters. Used by
    :func:`moe_layers` and by the sweep on raw arrays.
    """
    intermediate = np.nan_to_num(np.asarray(intermediate_size, dtype=float), nan=0.0)
    per_layer = n_experts * 3.0 * hidden_size * intermediate
    safe = np.where(per_layer > 0, per_layer, 1.0)
    counted = np.clip(np.round(routed_params / safe), 1, n_layers)
    layers = np.where(per_layer > 0, counted, n_layers)
    return np.where(routed_params > 0, layers, 0)


def moe_layers(model):
    """MoE layers of a model [1]: ``n_layers`` unless the shapes show dense layers too.

    Parameters
    ----------
    model : ModelShape
        The model.

    Returns
    -------
    int
        0 for a dense model; with ``hidden_size`` and ``intermediate_size`` known, the routed
        expert parameters over one layer's experts (``E · 3 · h · i``, a gated MLP), rounded and
        capped at ``n_layers``; else ``n_layers``.

    Notes
    -----
    DeepSeek-V3 keeps its first 3 of 61 layers dense: 653.9e9 / (256 · 3 · 7168 · 2048) = 58.

    See Also
    --------
    expert_weight_bytes, expert_all_to_all_bytes
    """
    check_type("model", model, ModelShape)
    if not model.is_moe:
        return 0
    routed = expert_params(model.n_params, model.n_active_params, model.n_experts,
                           model.n_experts_per_token, model.n_aside_params)
    if routed <= 0:          # a MoE model without its active count: every layer routed
        return model.n_layers
    return int(moe_layer_count(model.n_layers, routed, model.n_experts, model.hidden_size,
                               model.intermediate_size or 0))


class LayoutMemory(NamedTuple):
    """Memory of one GPU of a layout (:func:`layout_memory`); every field per GPU [bytes]."""

    weight_bytes: float
    kv_bytes_per_token: float
    usable_kv_bytes: float
    n_gpus: int


def layout_memory(model, gpu, *, tp=1, pp=1, ep=1, dp=1, reserve=memory.DEFAULT_RESERVE):
    """Weights, KV per token and KV budget of one GPU of a ``(tp, pp, ep, dp)`` layout.

    Parameters
    ----------
    model : ModelShape
        The model.
    gpu : GPU
        One accelerator (a group's ``memory_bytes`` is read per GPU).
    tp, pp, ep, dp : int
        Layout degrees [1], each ≥ 1, checked by :func:`check_layout`.
    reserve : float
        Fraction of what the weights leave that is kept back for activations [1], in [0, 1).

    Returns
    -------
    LayoutMemory
        ``weight_bytes`` [bytes] per GPU, ``kv_bytes_per_token`` per GPU [bytes/token] (every
        cached token of a sequence this GPU serves), ``usable_kv_bytes`` [bytes] per GPU, and
        ``n_gpus`` = ``tp × pp × dp``.

    Notes
    -----
    - Weights: a stage holds ``1/pp`` of them (layers split evenly; the embedding and LM head
      are spread with them, though an engine puts them on the first and last stage). Within a
      stage the non-expert weights are split over ``tp`` and **replicated** over ``dp``; routed
      experts (:func:`expert_weight_bytes`) are split over ``max(tp, ep)`` GPUs (whole experts
      over ``ep``, each also split over ``tp/ep`` when ``ep < tp``). Per GPU:
      ``(W − W_e)/(pp·tp) + W_e/(pp·max(tp, ep))``.
    - KV: a stage holds its layers' KV, ``1/pp`` per token; the KV heads split over ``tp`` with
      :func:`rooflinekit.memory.kv_copies` (a rank holds at least one whole head; MLA's latent is
      replicated on every rank). Per GPU per token: ``KV/pp · copies(tp)/tp``.
    - Usable KV: ``max(memory − weights, 0) · (1 − reserve)`` per GPU, the rule of
      :func:`rooflinekit.memory.usable_kv_bytes`.

    References
    ----------
    .. [1] Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
       Using Megatron-LM", SC 2021 (pipeline stages of equal layers, tp within a node).
    .. [2] Lepikhin et al., "GShard", arXiv:2006.16668, 2020 (experts sharded over devices).

    See Also
    --------
    check_layout, pipeline_bubble, expert_all_to_all_bytes, rooflinekit.memory.usable_kv_bytes
    """
    _check_gpu("gpu", gpu)
    check_type("gpu", gpu, GPU)
    reserve = float(check_fraction("reserve", reserve, hi_open=True))
    tp, pp, ep, dp = check_layout(model, tp=tp, pp=pp, ep=ep, dp=dp)
    experts = expert_weight_bytes(model)
    weights = (model.weight_bytes - experts) / (pp * tp) + experts / (pp * max(tp, ep))
    kv = model.kv_bytes_per_token / pp * float(memory.kv_copies(model, tp)) / tp
    free = max(gpu.memory_per_gpu - weights, 0.0)
    return LayoutMemory(weights, kv, free * (1.0 - reserve), tp * pp * dp)


def pipeline_bubble(pp, micro_batches):
    """Idle fraction of a pipeline of ``pp`` stages fed ``micro_batches`` micro-batches [1].

    Parameters
    ----------
    pp : int, array_like
        Pipeline stages [1], ≥ 1.
    micro_batches : int, array_like
        Micro-batches pushed through together [1], ≥ 1.

    Returns
    -------
    float or ndarray
        ``(pp − 1) / (m + pp − 1)``: 0 for one stage, ``(pp−1)/pp`` for one micro-batch (only one
        stage works at a time), → 0 as ``m`` grows.

    Notes
    -----
    GPipe's fill-and-drain schedule: ``m`` micro-batches take ``m + pp − 1`` stage times where
    ``pp`` stages could have done ``m·pp`` units of work in ``m``. In steady decoding the
    pipeline never drains, and the stage time of ``max(m, pp)`` micro-batches sets the round
    (:func:`rooflinekit.roofline.layout_decode_step_time`); this is the cost of one pass.

    References
    ----------
    .. [1] Huang et al., "GPipe: Efficient Training of Giant Neural Networks using Pipeline
       Parallelism", NeurIPS 2019 (bubble ``(K−1)/(M+K−1)``).

    See Also
    --------
    layout_memory
    """
    check_integer("pp", pp, lo=1)
    check_integer("micro_batches", micro_batches, lo=1)
    pp = np.asarray(pp, dtype=float)
    m = np.asarray(micro_batches, dtype=float)
    result = (pp - 1.0) / (m + pp - 1.0)
    return float(result) if result.ndim == 0 else result


class AllToAll(NamedTuple):
    """Bytes an expert-parallel all-to-all moves (:func:`expert_all_to_all_bytes`) [bytes]."""

    per_layer: float
    per_step: float


def expert_all_to_all_bytes(model, tokens, *, ep, activation_dtype="bf16"):
    """Bytes that cross GPUs in expert parallelism's all-to-all: dispatch and combine [bytes].

    Parameters
    ----------
    model : ModelShape
        A MoE model (``hidden_size``, ``n_experts_per_token``).
    tokens : int, array_like
        Tokens in the step [tokens], ≥ 0: the batch for decode, the prompt for prefill.
    ep : int
        Expert-parallel degree [1], ≥ 1, dividing the experts.
    activation_dtype : str
        Format of the activations sent. Default "bf16" (2 B).

    Returns
    -------
    AllToAll
        ``per_layer`` [bytes] over the whole expert-parallel group for one MoE layer and
        ``per_step`` = ``per_layer ×`` :func:`moe_layers`.

    Notes
    -----
    Each token goes to ``k`` experts and comes back: ``2 · T · h · k · b`` bytes (dispatch +
    combine). With routing spread evenly over ``ep`` GPUs, ``1/ep`` of the copies land on the
    sender's own GPU and stay, so ``2 · T · h · k · b · (ep − 1)/ep`` cross the fabric, 0 at
    ``ep = 1``; each GPU sends ``1/ep`` of that. Token dropping, capacity factors, fp8 dispatch
    (DeepEP) and node-limited routing are left out.

    References
    ----------
    .. [1] Lepikhin et al., "GShard", arXiv:2006.16668, 2020 (dispatch and combine all-to-all).
    .. [2] DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, 2024.

    See Also
    --------
    layout_memory, moe_layers
    """
    check_type("model", model, ModelShape)
    check_nonnegative("tokens", tokens)
    ep = whole_number("ep", ep, lo=1)
    _check_activation("activation_dtype", activation_dtype)
    if model.n_experts % ep:
        raise ValueError(f"ep must divide the model's {model.n_experts} routed experts; "
                         f"got ep={ep}")
    payload = all_to_all_bytes_per_token(model.hidden_size, model.n_experts_per_token,
                                         bytes_per_element(activation_dtype), ep)
    per_layer = np.asarray(tokens, dtype=float) * payload
    per_step = per_layer * moe_layers(model)
    if per_layer.ndim == 0:
        return AllToAll(float(per_layer), float(per_step))
    return AllToAll(per_layer, per_step)


def all_to_all_bytes_per_token(hidden_size, n_experts_per_token, activation_bytes, ep):
    """Bytes per token per MoE layer that cross GPUs in dispatch + combine (plain arithmetic).

    ``2 · h · k · b · (ep − 1)/ep`` [bytes/token]; 0 at ``ep = 1``. Used by
    :func:`expert_all_to_all_bytes` and by the sweep on raw arrays.
    """
    return 2.0 * hidden_size * n_experts_per_token * activation_bytes * (ep - 1.0) / ep


@functools.lru_cache(maxsize=64)
def _normal_maximum(n: int) -> float:
    if n == 1:
        return 0.0          # exactly: one draw's mean (the step formula's bits at ep = 1)
    # E[max] = ∫ x · d/dx Φ(x)^n dx, on a grid fine enough for 1e-9 (the integrand is smooth
    # and below 1e-20 outside ±12)
    from scipy import special
    x = np.linspace(-12.0, 12.0, 48_001)
    cdf = 0.5 * special.erfc(-x / np.sqrt(2.0))
    density = np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi)
    integrand = x * n * density * cdf ** (n - 1)
    return float(np.sum((integrand[1:] + integrand[:-1]) * 0.5 * np.diff(x)))


def expected_normal_maximum(n):
    """Expected largest of ``n`` independent standard normal draws [1].

    Parameters
    ----------
    n : int, array_like
        Draws [1], whole, in [1, 4096]: the expert-parallel degree where the step formula
        takes it.

    Returns
    -------
    float or ndarray
        ``E[max(Z_1 … Z_n)]``: 0 for one draw, ``1/√π`` = 0.5642 for two, 1.4236 for eight.

    Notes
    -----
    ``∫ x · n·φ(x)·Φ(x)^(n−1) dx`` by the trapezoid rule on ``[−12, 12]`` (error below
    1e-9). The step formula uses it for expert parallelism: the experts a step's tokens touch
    on each of ``ep`` GPU groups are about normal, with mean ``m = touched / ep`` and variance
    ``m·(1 − touched / E)`` (each of a group's ``E / ep`` experts touched independently), so
    the busiest group touches about ``m + s(ep)·√(m·(1 − touched / E))``, and the step waits
    for it (:func:`rooflinekit.roofline.mixed_step_time_kernel`'s ``expert_groups`` and
    ``expert_spread``).

    References
    ----------
    .. [1] Tippett, "On the extreme individuals and the range of samples taken from a normal
       population", Biometrika 17(3/4), 1925 (the expected largest of ``n`` normal draws).
    .. [2] DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, 2024 (expert load
       imbalance across expert-parallel GPUs, and its balancing).

    See Also
    --------
    expert_all_to_all_bytes, rooflinekit.roofline.layout_decode_step_time
    """
    check_integer("n", n, lo=1)
    check_range("n", n, lo=1, hi=4096)
    if isinstance(n, xr.DataArray) or np.ndim(n):
        values = np.asarray(n, dtype=float)
        out = np.vectorize(lambda v: _normal_maximum(int(v)), otypes=[float])(values)
        return xr.DataArray(out, coords=n.coords, dims=n.dims) if isinstance(n, xr.DataArray) \
            else out
    return _normal_maximum(int(n))


def kv_transfer_time(model, prompt_tokens, *, link_bandwidth, link_latency=0.0):
    """Time to send a prompt's KV cache over one link [s] (prefill to decode, disaggregated).

    Parameters
    ----------
    model : ModelShape
        The model (its KV bytes per token, sliding window included).
    prompt_tokens : int, array_like
        Tokens whose KV is sent [tokens], ≥ 0.
    link_bandwidth : float, array_like
        Bandwidth of the link per direction [bytes/s], >= 1 (a 400 Gb/s NIC: 50e9;
        ``GPU.network_bandwidth``).
    link_latency : float, array_like
        Fixed latency of the transfer [s], ≥ 0. Default 0.

    Returns
    -------
    float or ndarray
        ``KV(prompt) / link_bandwidth + link_latency`` [s].

    Notes
    -----
    ``KV(prompt)`` is :func:`rooflinekit.memory.kv_bytes_per_sequence`. The transfer is one
    stream at the link's full rate; spreading a tensor-parallel group's shards over its ``tp``
    NICs divides the time by up to ``tp`` (pass ``tp × link_bandwidth``), and overlapping the
    transfer with prefill layer by layer hides most of it, which is not modelled here.

    References
    ----------
    .. [1] Zhong et al., "DistServe: Disaggregating Prefill and Decoding for Goodput-optimized
       Large Language Model Serving", OSDI 2024 (KV transfer between phases).

    See Also
    --------
    layout_memory, rooflinekit.memory.kv_bytes_per_sequence
    """
    check_type("model", model, ModelShape)
    prompt_tokens, link_bandwidth, link_latency = (
        widen(v) for v in (prompt_tokens, link_bandwidth, link_latency))
    check_integer("prompt_tokens", prompt_tokens, lo=0)
    # below 1 byte/s is a slip (a denormal rate overflows the time to inf)
    check_range("link_bandwidth", link_bandwidth, lo=1.0)
    check_nonnegative("link_latency", link_latency)
    kv = memory.kv_bytes_per_sequence(model, prompt_tokens)
    return kv / link_bandwidth + link_latency
