"""rooflinekit: how many conversations fit, how fast they run, and what they cost.

Vectorised KV-cache, roofline, batching and pricing models for planning LLM serving capacity.
Importing the package compiles no numba code and imports neither numba nor dask: kernels compile
on first use, and dask is needed only for chunked sweeps and distributed Monte Carlo.
"""

# ``calibrate`` and ``sweep`` are exported as modules (their main functions share their names:
# ``rooflinekit.sweep.sweep``, ``rooflinekit.calibrate.calibrate``)
from . import calibrate, catalog, dims, plotting, sweep, units
from .batching import ContinuousBatcher, StaticBatcher, monte_carlo, simulate
from .calibrate import Calibration, cross_validate, read_measurements, read_vllm_result
from .hardware import GPU
from .latency import (
    amortized_token_time,
    cost_per_million_tokens,
    decode_ms_per_token,
    decode_throughput,
    decode_time_per_token,
    prefill_ms,
    prefill_time,
    request_latency,
)
from .memory import (
    blocks_per_sequence,
    engine_kv_cache,
    kv_budget_tokens,
    kv_copies,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    max_concurrent_sequences,
    max_context_length,
    paged_waste_bytes,
    usable_kv_bytes,
    weight_bytes,
)
from .models import ModelShape
from .parallel import allreduce_time, smallest_tp, tp_scaling
from .planning import compare_floor_sizing, optimal_floor, plan_with_spillover
from .pricing import (
    Compliance,
    NoAdmissibleOptionError,
    PayAsYouGo,
    Provisioned,
    SelfHosted,
    blended_price,
    break_even,
    cheapest_option,
    crossover_volume,
)
from .roofline import (
    arithmetic_intensity,
    critical_batch_size,
    mixed_step_time,
    ridge_point,
)
from .sweep import best_configuration, best_tp, cheapest_configuration, pareto_front
from .workloads import Workload, WorkloadSpec, guide_workload

__version__ = "0.1.0"

__all__ = [
    "__version__",
    # modules
    "calibrate", "catalog", "dims", "plotting", "sweep", "units",
    # specs
    "GPU", "ModelShape",
    # memory (§2)
    "kv_bytes_per_token", "kv_bytes_per_sequence", "weight_bytes", "usable_kv_bytes",
    "max_concurrent_sequences", "kv_copies", "kv_budget_tokens", "max_context_length",
    "blocks_per_sequence", "paged_waste_bytes", "engine_kv_cache",
    # roofline (§3, §4.1)
    "arithmetic_intensity", "ridge_point", "critical_batch_size", "prefill_time",
    "decode_time_per_token", "amortized_token_time", "mixed_step_time", "decode_throughput",
    "request_latency", "cost_per_million_tokens", "prefill_ms", "decode_ms_per_token",
    # tensor parallelism (§5)
    "smallest_tp", "tp_scaling", "allreduce_time",
    # batching (§4)
    "StaticBatcher", "ContinuousBatcher", "simulate", "monte_carlo",
    "Workload", "WorkloadSpec", "guide_workload",
    # economics (§6, §7)
    "PayAsYouGo", "Provisioned", "SelfHosted", "Compliance", "NoAdmissibleOptionError",
    "blended_price", "break_even", "crossover_volume", "cheapest_option",
    "plan_with_spillover", "optimal_floor", "compare_floor_sizing",
    # sweeps
    "best_configuration", "best_tp", "cheapest_configuration", "pareto_front",
    # calibration
    "Calibration", "cross_validate", "read_measurements", "read_vllm_result",
]
