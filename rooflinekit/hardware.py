"""Accelerator specifications and the tensor-parallel group model (guide §3.2, §5)."""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Mapping
from types import MappingProxyType

from rooflinekit._validation import positive_number
from rooflinekit.dtypes import dtype_name

__all__ = ["GPU"]

_DEFAULT_COMPUTE_DTYPE = "bf16"


@dataclasses.dataclass(frozen=True)
class GPU:
    """One accelerator, or a tensor-parallel group of identical ones.

    Parameters
    ----------
    name : str
        Label, used as the ``gpu`` coordinate in catalogue Datasets.
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
    hourly_price : float, optional
        Illustrative on-demand price per GPU-hour [USD/h]; ``None`` when unknown.
    n_gpus : int
        GPUs in this object: 1 for a single accelerator, the degree for a group.
    source : str
        Where the figures come from (datasheet URL).

    Notes
    -----
    ``memory_bytes``, ``hbm_bandwidth``, ``peak_flops`` and ``hourly_price`` are totals over
    ``n_gpus``. :meth:`group` scales them with the degree, as the guide's simple TP model does (§5);
    the communication that model ignores is in :mod:`rooflinekit.parallel`.

    References
    ----------
    .. [1] Serving-capacity guide §3.2 (ridge point) and §5 (tensor parallelism).
    """

    name: str
    memory_bytes: float
    hbm_bandwidth: float
    peak_flops: float
    peak_flops_by_dtype: Mapping[str, float] | None = None
    interconnect_bandwidth: float | None = None
    interconnect_latency: float = 1e-6
    hourly_price: float | None = None
    n_gpus: int = 1
    source: str = ""

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.strip():
            raise TypeError("name must be a non-empty string")
        for field in ("memory_bytes", "hbm_bandwidth", "peak_flops"):
            object.__setattr__(self, field, positive_number(field, getattr(self, field)))
        object.__setattr__(self, "interconnect_bandwidth",
                           positive_number("interconnect_bandwidth", self.interconnect_bandwidth,
                                           allow_none=True))
        if isinstance(self.interconnect_latency, bool) or not isinstance(
                self.interconnect_latency, numbers.Real) or not (
                0 <= self.interconnect_latency < math.inf):
            raise ValueError(f"interconnect_latency must be a finite number >= 0 seconds, "
                             f"got {self.interconnect_latency!r}")
        object.__setattr__(self, "interconnect_latency", float(self.interconnect_latency))
        if self.hourly_price is not None:
            if isinstance(self.hourly_price, bool) or not isinstance(self.hourly_price, numbers.Real):
                raise TypeError("hourly_price must be a number of USD per hour or None")
            if not (0 <= self.hourly_price < math.inf):
                raise ValueError(f"hourly_price must be >= 0 USD/h, got {self.hourly_price!r}")
            object.__setattr__(self, "hourly_price", float(self.hourly_price))
        if isinstance(self.n_gpus, bool) or not isinstance(self.n_gpus, numbers.Integral) \
                or self.n_gpus < 1:
            raise ValueError(f"n_gpus must be an integer >= 1, got {self.n_gpus!r}")
        object.__setattr__(self, "n_gpus", int(self.n_gpus))
        table = {_DEFAULT_COMPUTE_DTYPE: self.peak_flops}
        for key, value in dict(self.peak_flops_by_dtype or {}).items():
            table[dtype_name(key)] = positive_number(f"peak_flops_by_dtype[{key!r}]", value)
        if "fp16" not in table:
            table["fp16"] = table[_DEFAULT_COMPUTE_DTYPE]
        object.__setattr__(self, "peak_flops_by_dtype", MappingProxyType(table))
        if not isinstance(self.source, str):
            raise TypeError("source must be a string")

    # -- derived -------------------------------------------------------------------------------
    @property
    def ridge_point(self) -> float:
        """Peak FLOP/s ÷ bandwidth [FLOP/byte]: below it a kernel is memory-bound (§3.2)."""
        return self.peak_flops / self.hbm_bandwidth

    @property
    def memory_per_gpu(self) -> float:
        """Memory of one GPU of the group [bytes]."""
        return self.memory_bytes / self.n_gpus

    def flops_for(self, dtype: str = _DEFAULT_COMPUTE_DTYPE) -> float:
        """Dense peak [FLOP/s] for a compute format; falls back to the 16-bit peak when unlisted.

        Formats narrower than 16 bits run at the 16-bit rate unless the GPU lists them (weight-only
        int4 quantisation, for example, still computes in 16-bit).
        """
        key = dtype_name(dtype)
        return self.peak_flops_by_dtype.get(key, self.peak_flops)

    def group(self, tp: int) -> "GPU":
        """The tensor-parallel group of ``tp`` of these GPUs (guide §5's simple model).

        Memory, bandwidth, FLOP/s and hourly price scale with ``tp``; the per-GPU interconnect does
        not. ``tp = 1`` returns ``self``.
        """
        if isinstance(tp, bool) or not isinstance(tp, numbers.Integral) or tp < 1:
            raise ValueError(f"tp must be an integer >= 1, got {tp!r}")
        if tp == 1:
            return self
        return dataclasses.replace(
            self,
            name=f"{self.name} x{tp}",
            memory_bytes=self.memory_bytes * tp,
            hbm_bandwidth=self.hbm_bandwidth * tp,
            peak_flops=self.peak_flops * tp,
            peak_flops_by_dtype={k: v * tp for k, v in self.peak_flops_by_dtype.items()},
            hourly_price=None if self.hourly_price is None else self.hourly_price * tp,
            n_gpus=self.n_gpus * tp,
        )
