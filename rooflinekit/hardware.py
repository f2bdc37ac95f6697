"""Accelerator specifications and the tensor-parallel group model (guide §3.2, §5)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from types import MappingProxyType

from rooflinekit._validation import (
    check_bool,
    check_mapping,
    check_string,
    positive_number,
    real_number,
    whole_number,
)
from rooflinekit._labels import SPEC_PARAMETERS, document
from rooflinekit.dtypes import dtype_name

__all__ = ["GPU"]

_DEFAULT_COMPUTE_DTYPE = "bf16"


@document(SPEC_PARAMETERS)
@dataclasses.dataclass(frozen=True)
class GPU:
    """One accelerator, or a tensor-parallel group of identical ones.

    Parameters
    ----------
    memory_bytes : float
        Device memory [bytes] (HBM capacity; binary-sized, e.g. ``80 * GiB``).
    hbm_bandwidth : float
        Peak memory bandwidth [bytes/s] (decimal, e.g. ``3.35e12``).
    peak_flops : float
        Dense peak arithmetic rate [FLOP/s] of the default compute format (16-bit, bf16/fp16).
        Datasheet figures "with sparsity" are twice this; never use them here.
    peak_flops_by_dtype : Mapping[str, float], optional
        Dense peak [FLOP/s] for other formats ("fp8", "int8", "fp32", ...). ``peak_flops`` is stored
        as the "bf16" entry when none is given.
    interconnect_bandwidth : float, optional
        GPU-to-GPU bandwidth per direction per GPU [bytes/s] (NVLink/Infinity Fabric/PCIe), used for
        all-reduce cost; ``None`` when unknown.
    interconnect_latency : float
        Latency per ring hop of a collective [s]; default 1 µs, the order of one step of NCCL's
        low-latency protocol over NVLink/NVSwitch. With it two all-reduces per layer take about a
        quarter of a batch-1 decode step of a 70B model at tp=8, as practitioners report; PCIe
        and network links are slower (set the catalogue row's ``interconnect_latency_us``).
    network_bandwidth : float, optional
        Inter-node bandwidth per direction per GPU [bytes/s]: the network adapter each GPU has
        for traffic between servers (InfiniBand/RoCE; a 400 Gb/s ConnectX-7 is 50e9), used for
        pipeline stages on different nodes and KV transfers; ``None`` when unknown.
    hourly_price : float, optional
        Illustrative on-demand price per GPU-hour [USD/h]; ``None`` when unknown.
    n_gpus : int
        GPUs in this object: 1 for a single accelerator, the degree for a group.
    source : str
        Where the figures come from (datasheet URL).
    board_power : float, optional
        Maximum board power [W]: the TDP/TBP the vendor's datasheet states (H100 SXM 700 W),
        what the card may draw at full load; ``None`` when unknown.
        :func:`rooflinekit.roofline.energy_per_token` needs it.
    scale_up_gpus : int, optional
        GPUs one scale-up domain links at ``interconnect_bandwidth`` [1] (an HGX board's 8 by
        NVLink and NVSwitch, a GB200 NVL72's 72); a tensor-parallel group larger than it would
        all-reduce over the network, which the model does not time, so planners refuse it.
        ``None`` when unknown (no check).
    host_link_bandwidth : float, optional
        Per-direction bandwidth [bytes/s] of the host path that a PCIe group's collective
        traffic shares once the group is larger than ``p2p_gpus``: GPUs under different PCIe
        switches reach each other through the CPU root complex (and, across sockets, the
        inter-socket link), so the whole group's all-reduce traffic crosses one such link
        instead of each GPU's own. ``None`` (default) when the GPUs have a switched fabric of
        their own (NVLink/NVSwitch) or it is unknown: each GPU then keeps its
        ``interconnect_bandwidth``. Used only by an engine whose ``host_traffic_share`` is
        above 0 (:class:`rooflinekit.Engine`).
    p2p_gpus : int, optional
        GPUs that reach each other peer to peer at ``interconnect_bandwidth`` without
        crossing the shared host path [1] (the GPUs one PCIe switch links), ≥ 1; a group of
        at most this many never uses ``host_link_bandwidth``. ``None`` (default): 1 where
        ``host_link_bandwidth`` is given.
    host_gpus : int, optional
        GPUs one host holds [1], ≥ 1: the operating-system instance whose processes map each
        other's device memory directly (CUDA IPC), the four of a GB200 or GB300 NVL72 compute
        tray. A tensor-parallel group larger than it still all-reduces over the NVLink domain
        (``scale_up_gpus``), but an engine whose all-reduce maps its peers' memory through one
        host falls back to a slower collective there (an engine's
        ``cross_host_allreduce_latency``, :class:`rooflinekit.Engine`). ``None`` (default):
        every group within ``scale_up_gpus`` is one host's (an HGX board's 8).
    boost_clock : float, optional
        The SM clock's maximum boost [Hz] (``1.98e9`` for an H100 SXM), > 0: an engine's
        ``layer_cycles`` (:class:`rooflinekit.Engine`) take ``layer_cycles / boost_clock``
        seconds per layer on it. ``None`` (default) when unknown.
    streaming_bandwidth : float, optional
        Device-memory bandwidth a kernel reaches streaming operands far larger than the L2
        cache, measured [bytes/s], in ``(0, hbm_bandwidth]``. GPUs reach different shares of
        their datasheet figure (the profiled ones 77-93 %), so an engine's bandwidth
        efficiencies carry from one GPU to another in proportion to these shares
        (:func:`rooflinekit.engine_profile` for a GPU without a profile of its own). The
        profiled GPUs' figures are the rate their GEMM tables read weight matrices of 256 MiB
        or more at (a few rows each); measure another GPU's the same way, since a copy or
        read-only microbenchmark reaches a few per cent more than a GEMM streaming weights.
        The roofline itself never reads it. ``None`` (default) when unmeasured.
    gemm_flops : float, optional
        16-bit dense matrix-multiply throughput a large GEMM sustains, measured [FLOP/s], in
        ``(0, peak_flops]``: the datasheet peak is the boost clock's, and a GPU at its power
        limit runs GEMMs slower (the profiled GPUs 67-86 % of it, the L40S least, the A100
        most). An engine's compute efficiencies carry from one GPU to another in proportion to
        these shares, as its bandwidth efficiencies do by ``streaming_bandwidth``. The profiled
        GPUs' figures are the 90th percentile of the rates of their bf16 GEMM tables' points
        with m, n and k all 4,096 or more (a model's GEMMs reach above the median of such
        awkward and tidy shapes alike); measure another GPU's the same way, on shapes that
        large. The roofline itself never reads it. ``None`` (default) when unmeasured.
    visible_memory_bytes : float, optional
        Device memory the driver reports as the device's total [bytes], in ``(0,
        memory_bytes]``: what ``cudaMemGetInfo`` (``torch.cuda.mem_get_info``) gives an engine
        to take its share of, a little under the capacity (an 80 GiB H100 shows 79.19 GiB).
        :func:`rooflinekit.memory.engine_kv_cache` takes vLLM's share of it; the guide's rules
        never read it. ``None`` (default) when unmeasured: the capacity is taken.
    compute_capability : float, optional
        An NVIDIA GPU's CUDA compute capability, ``major.minor`` as a number (``9.0`` for
        Hopper, ``10.0`` for the B200 and GB200, ``10.3`` for the B300 and GB300, ``12.0`` for
        the RTX PRO 6000), in ``[1, 100)``: engines pick their attention kernels by it, and
        those take KV blocks of their own sizes (:func:`rooflinekit.memory.vllm_attention_block`).
        ``None`` (default): not an NVIDIA GPU, or unknown.
    ring_collectives : bool
        Whether the GPUs' collectives pay a link latency per ring hop: ``True`` for PCIe cards
        with no switched fabric of their own, where an all-reduce crosses each peer in turn;
        an engine's ``"collective"`` all-reduce then takes ``2·(d−1)`` hop latencies
        (:func:`rooflinekit.parallel.allreduce_coefficients`' ``"ring"``) on a group of ``d``
        instead of a fixed :data:`~rooflinekit.parallel.COLLECTIVE_HOPS`. Default ``False``
        (NVLink/NVSwitch: one collective latency whatever the degree).

    Notes
    -----
    ``memory_bytes``, ``visible_memory_bytes``, ``hbm_bandwidth``, ``streaming_bandwidth``,
    ``peak_flops``, ``gemm_flops``, ``hourly_price`` and ``board_power`` are totals over
    ``n_gpus``. :meth:`group` scales them with the degree, as the guide's simple TP model does
    (§5); the communication it ignores is in :mod:`rooflinekit.parallel`.

    References
    ----------
    .. [1] Serving-capacity guide §3.2 (ridge point) and §5 (tensor parallelism).
    """

    name: str
    memory_bytes: float
    hbm_bandwidth: float
    peak_flops: float
    # a read-only mapping, unhashable: left out of the hash (equal GPUs still hash alike)
    peak_flops_by_dtype: Mapping[str, float] | None = dataclasses.field(default=None, hash=False)
    interconnect_bandwidth: float | None = None
    interconnect_latency: float = 1e-6
    network_bandwidth: float | None = None
    hourly_price: float | None = None
    n_gpus: int = 1
    source: str = ""
    board_power: float | None = None
    scale_up_gpus: int | None = None
    host_link_bandwidth: float | None = None
    p2p_gpus: int | None = None
    host_gpus: int | None = None
    boost_clock: float | None = None
    ring_collectives: bool = False
    streaming_bandwidth: float | None = None
    gemm_flops: float | None = None
    visible_memory_bytes: float | None = None
    compute_capability: float | None = None

    def __post_init__(self):
        set_ = functools.partial(object.__setattr__, self)
        check_string("name", self.name)
        for field in ("memory_bytes", "hbm_bandwidth", "peak_flops"):
            set_(field, positive_number(field, getattr(self, field)))
        set_("interconnect_bandwidth", positive_number(
            "interconnect_bandwidth", self.interconnect_bandwidth, allow_none=True))
        set_("network_bandwidth", positive_number(
            "network_bandwidth", self.network_bandwidth, allow_none=True))
        set_("interconnect_latency", real_number("interconnect_latency",
                                                 self.interconnect_latency, lo=0))
        set_("scale_up_gpus", whole_number("scale_up_gpus", self.scale_up_gpus, lo=1,
                                           allow_none=True))
        set_("host_link_bandwidth", positive_number(
            "host_link_bandwidth", self.host_link_bandwidth, allow_none=True))
        set_("p2p_gpus", whole_number("p2p_gpus", self.p2p_gpus, lo=1, allow_none=True))
        set_("host_gpus", whole_number("host_gpus", self.host_gpus, lo=1, allow_none=True))
        set_("boost_clock", positive_number("boost_clock", self.boost_clock, allow_none=True))
        set_("ring_collectives", check_bool("ring_collectives", self.ring_collectives))
        # a measured stream cannot beat the memory's pins (a larger figure is a cache's), a
        # measured GEMM the boost clock's peak, nor can the driver report more memory than the
        # card holds
        for field, bound in (("streaming_bandwidth", "hbm_bandwidth"),
                             ("gemm_flops", "peak_flops"),
                             ("visible_memory_bytes", "memory_bytes")):
            value = positive_number(field, getattr(self, field), allow_none=True)
            if value is not None and value > getattr(self, bound):
                raise ValueError(f"{field} must be <= {bound} ({getattr(self, bound)!r}), "
                                 f"got {value!r}")
            set_(field, value)
        set_("hourly_price", real_number("hourly_price", self.hourly_price, lo=0,
                                         allow_none=True))
        set_("n_gpus", whole_number("n_gpus", self.n_gpus, lo=1))
        table = {_DEFAULT_COMPUTE_DTYPE: self.peak_flops}
        by_dtype = check_mapping("peak_flops_by_dtype", self.peak_flops_by_dtype, allow_none=True)
        for key, value in by_dtype.items():
            table[dtype_name(key)] = positive_number(f"peak_flops_by_dtype[{key!r}]", value)
        if "fp16" not in table:
            table["fp16"] = table[_DEFAULT_COMPUTE_DTYPE]
        set_("peak_flops_by_dtype", MappingProxyType(table))
        check_string("source", self.source, allow_empty=True)
        set_("board_power", positive_number("board_power", self.board_power, allow_none=True))
        set_("compute_capability", real_number("compute_capability", self.compute_capability,
                                               lo=1, hi=100, hi_open=True,
                                               allow_none=True))

    # -- derived -------------------------------------------------------------------------------
    @property
    def ridge_point(self) -> float:
        """Peak FLOP/s ÷ bandwidth [FLOP/byte]: below it a kernel is memory-bound (§3.2)."""
        return self.peak_flops / self.hbm_bandwidth

    @property
    def memory_per_gpu(self) -> float:
        """Memory of one GPU of the group [bytes]."""
        return self.memory_bytes / self.n_gpus

    @property
    def visible_memory_per_gpu(self) -> float:
        """Memory the driver reports for one GPU of the group [bytes]: ``visible_memory_bytes``
        where measured, else the capacity (:attr:`memory_per_gpu`)."""
        total = self.memory_bytes if self.visible_memory_bytes is None \
            else self.visible_memory_bytes
        return total / self.n_gpus

    def flops_for(self, dtype: str = _DEFAULT_COMPUTE_DTYPE) -> float:
        """Dense peak [FLOP/s] for a compute format; falls back to the 16-bit peak when unlisted.

        Formats narrower than 16 bits run at the 16-bit rate unless the GPU lists them (weight-only
        int4 quantisation, for example, still computes in 16-bit).
        """
        key = dtype_name(dtype)
        return self.peak_flops_by_dtype.get(key, self.peak_flops)

    def group(self, tp: int) -> "GPU":
        """The tensor-parallel group of ``tp`` of these GPUs (guide §5's simple model).

        Memory, bandwidths, FLOP/s (measured ones too), hourly price and board power scale with
        ``tp``; the per-GPU interconnect does not. ``tp = 1`` returns ``self``.
        """
        whole_number("tp", tp, lo=1)
        if tp == 1:
            return self
        return dataclasses.replace(
            self,
            name=f"{self.name} x{tp}",
            memory_bytes=self.memory_bytes * tp,
            hbm_bandwidth=self.hbm_bandwidth * tp,
            streaming_bandwidth=None if self.streaming_bandwidth is None
            else self.streaming_bandwidth * tp,
            gemm_flops=None if self.gemm_flops is None else self.gemm_flops * tp,
            visible_memory_bytes=None if self.visible_memory_bytes is None
            else self.visible_memory_bytes * tp,
            peak_flops=self.peak_flops * tp,
            peak_flops_by_dtype={k: v * tp for k, v in self.peak_flops_by_dtype.items()},
            hourly_price=None if self.hourly_price is None else self.hourly_price * tp,
            board_power=None if self.board_power is None else self.board_power * tp,
            n_gpus=self.n_gpus * tp,
        )
