"""Static and continuous batching, simulated step by step (guide §4).

- :mod:`~rooflinekit.batching.batchers`: :class:`StaticBatcher`, :class:`ContinuousBatcher`
  (each ``.run(workload)``): their fields and checks, the arguments each hands its kernel, the
  size limits of a run;
- :mod:`~rooflinekit.batching.clock`: the step clock (tick or roofline, timed by an
  :class:`~rooflinekit.Engine`, computed before the kernel runs) and
  :func:`replica_kv_budget`, the one KV-budget rule of batchers and plans;
- :mod:`~rooflinekit.batching.replicates`: :func:`monte_carlo` and :func:`run_replicates`
  (validation, random draws, size checks, many rows of one policy);
- :mod:`~rooflinekit.batching.disaggregated`: :class:`DisaggregatedBatcher`, prefill and decode
  pools of continuous batchers with the KV sent between them;
- :mod:`~rooflinekit.batching.results`: per-request and summary Datasets;
- :mod:`~rooflinekit.batching.precompile`: :func:`compile_kernels`, numba's cache filled ahead
  of a first run, kernel families side by side;
- ``_kernels`` (numba, imported on first run), ``_reference`` (plain Python, the
  specification the kernels match bit for bit), ``_schema`` (the codes and layouts both
  share with the Python side) and ``_kernel_calls`` (outputs, rows and error codes of a
  kernel call).
"""

from rooflinekit.batching.batchers import (
                                           MAX_BLOCK_SIZE,
                                           RUN_BYTES_PER_REQUEST,
                                           SIMULATION_MEMORY_LIMIT,
                                           SIMULATION_WORK_LIMIT,
                                           ContinuousBatcher,
                                           StaticBatcher,
                                           run_memory_bytes,
)
from rooflinekit.batching.clock import replica_kv_budget, replica_state_tokens, vllm_block_size
from rooflinekit.batching.disaggregated import POOLS, DisaggregatedBatcher
from rooflinekit.batching.precompile import KERNEL_FAMILIES, compile_kernels
from rooflinekit.batching.replicates import monte_carlo, replicate_seed, run_replicates
from rooflinekit.batching.speculative import Speculative
from rooflinekit.batching.results import (
                                           REASON_KV_BUDGET,
                                           STATUS_COMPLETED,
                                           STATUS_REJECTED,
                                           SUMMARY_NAMES,
                                           TIERS,
)
from rooflinekit.roofline import IDEAL          # the ideal Engine, results' default label

__all__ = ["IDEAL", "MAX_BLOCK_SIZE", "RUN_BYTES_PER_REQUEST", "run_memory_bytes", "SIMULATION_MEMORY_LIMIT", "SIMULATION_WORK_LIMIT", "StaticBatcher", "ContinuousBatcher",
           "monte_carlo", "run_replicates", "replicate_seed", "replica_kv_budget", "replica_state_tokens",
           "vllm_block_size",
           "DisaggregatedBatcher", "POOLS",
           "Speculative", "compile_kernels", "KERNEL_FAMILIES",
           "STATUS_COMPLETED", "STATUS_REJECTED", "REASON_KV_BUDGET", "TIERS", "SUMMARY_NAMES"]
