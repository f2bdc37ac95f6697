"""rooflinekit: how many conversations fit, how fast they run, and what they cost.

Vectorised KV-cache, roofline, batching and pricing models for planning LLM serving capacity.
Importing the package compiles no numba code and imports neither numba nor dask: kernels compile
on first use, and dask is needed only for chunked sweeps and distributed Monte Carlo.
"""

# ``calibrate`` and ``sweep`` are exported as folders (their main functions share their names:
# ``rooflinekit.sweep.sweep``, ``rooflinekit.calibrate.calibrate``)
from rooflinekit import calibrate, catalog, dims, plotting, sweep, units
from rooflinekit.batching import ContinuousBatcher, Speculative, StaticBatcher, monte_carlo
from rooflinekit.calibrate import (
                                Calibration,
                                cross_validate,
                                read_measurements,
                                read_vllm_result,
)
from rooflinekit.hardware import GPU
from rooflinekit.memory import (
                                blocks_per_sequence,
                                engine_kv_cache,
                                kv_budget_tokens,
                                kv_bytes_per_sequence,
                                kv_bytes_per_token,
                                kv_copies,
                                max_concurrent_sequences,
                                max_context_length,
                                paged_waste_bytes,
                                usable_kv_bytes,
                                weight_bytes,
)
from rooflinekit.models import ModelShape
from rooflinekit.parallel import (
                                allreduce_time,
                                expected_normal_maximum,
                                expert_all_to_all_bytes,
                                kv_transfer_time,
                                layout_memory,
                                pipeline_bubble,
                                smallest_tp,
)
from rooflinekit.planning import (
                                SLO,
                                Traffic,
                                cheapest_plan,
                                compare_floor_sizing,
                                decision_table,
                                optimal_floor,
                                plan,
                                plan_disaggregated,
                                plan_with_spillover,
)
from rooflinekit.pricing import (
                                Compliance,
                                NoAdmissibleOptionError,
                                PayAsYouGo,
                                Provisioned,
                                SelfHosted,
                                blended_price,
                                break_even,
                                cheapest_option,
                                cost_per_request,
                                crossover_volume,
                                payg_cost_per_request,
                                speculative_cost_per_million_tokens,
)
from rooflinekit.profiles import (ENGINE_MEMORY, ENGINE_PROFILES, engine_memory, engine_profile,
                                  memory_share, sglang_mem_fraction_static)
from rooflinekit.roofline import (
                                IDEAL,
                                Engine,
                                amortized_token_time,
                                arithmetic_intensity,
                                cost_per_million_tokens,
                                critical_batch_size,
                                decode_step_time,
                                decode_throughput,
                                energy_per_token,
                                layout_decode_step_time,
                                layout_prefill_time,
                                layouts,
                                mixed_step_time,
                                prefill_time,
                                request_latency,
                                ridge_point,
                                speculative_speedup,
                                speculative_step_time,
                                time_to_first_token,
                                speculative_tokens_per_step,
                                tp_scaling,
)
from rooflinekit.sweep import (
                                best_configuration,
                                best_tp,
                                cheapest_configuration,
                                pareto_front,
)
from rooflinekit.workloads import Workload, WorkloadSpec, guide_workload

__version__ = "0.1.0"

__all__ = [
    "__version__",
    # modules
    "calibrate", "catalog", "dims", "plotting", "sweep", "units",
    # specs
    "GPU", "ModelShape", "Engine", "IDEAL",
    # engine profiles: the default engine of every planning answer
    "engine_profile", "ENGINE_PROFILES", "engine_memory", "ENGINE_MEMORY", "memory_share",
    "sglang_mem_fraction_static",
    # memory (§2)
    "kv_bytes_per_token", "kv_bytes_per_sequence", "weight_bytes", "usable_kv_bytes",
    "max_concurrent_sequences", "kv_copies", "kv_budget_tokens", "max_context_length",
    "blocks_per_sequence", "paged_waste_bytes", "engine_kv_cache",
    # roofline (§3, §4.1)
    "arithmetic_intensity", "ridge_point", "critical_batch_size", "prefill_time",
    "decode_step_time", "amortized_token_time", "mixed_step_time", "decode_throughput",
    "request_latency", "time_to_first_token", "cost_per_million_tokens",
    "energy_per_token",
    # speculative decoding
    "speculative_tokens_per_step", "speculative_step_time", "speculative_speedup",
    # tensor parallelism (§5)
    "smallest_tp", "tp_scaling", "allreduce_time",
    # layouts beyond one TP group: pipeline, expert parallelism, KV transfer
    "layout_memory", "pipeline_bubble", "expert_all_to_all_bytes", "expected_normal_maximum",
    "kv_transfer_time", "layout_decode_step_time", "layout_prefill_time", "layouts",
    # batching (§4)
    "StaticBatcher", "ContinuousBatcher", "monte_carlo", "Speculative",
    "Workload", "WorkloadSpec", "guide_workload",
    # economics (§6, §7)
    "PayAsYouGo", "Provisioned", "SelfHosted", "Compliance", "NoAdmissibleOptionError",
    "blended_price", "break_even", "crossover_volume", "cheapest_option",
    "plan_with_spillover", "optimal_floor", "compare_floor_sizing",
    "payg_cost_per_request", "cost_per_request", "speculative_cost_per_million_tokens",
    # capacity under load
    "Traffic", "SLO", "plan", "cheapest_plan", "decision_table", "plan_disaggregated",
    # sweeps
    "best_configuration", "best_tp", "cheapest_configuration", "pareto_front",
    # calibration
    "Calibration", "cross_validate", "read_measurements", "read_vllm_result",
]
