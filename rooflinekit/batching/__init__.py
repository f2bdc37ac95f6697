"""Static and continuous batching, simulated step by step (guide §4).

- :mod:`~rooflinekit.batching.batchers`: :class:`StaticBatcher`, :class:`ContinuousBatcher`
  (each ``.run(workload)``), :func:`monte_carlo` and :func:`run_replicates` (validation, random
  draws, the KV budget and the step clock, timed by an :class:`~rooflinekit.Engine`, computed
  before the kernel runs);
- :mod:`~rooflinekit.batching.disaggregated`: :class:`DisaggregatedBatcher`, prefill and decode
  pools of continuous batchers with the KV sent between them;
- :mod:`~rooflinekit.batching.results`: per-request and summary Datasets;
- :mod:`~rooflinekit.batching.precompile`: :func:`compile_kernels`, numba's cache filled ahead
  of a first run, kernel families side by side;
- ``_kernels`` (numba, imported on first run) and ``_reference`` (plain Python, the
  specification the kernels match bit for bit).
"""

from rooflinekit.batching.batchers import (
                                           SIMULATION_MEMORY_LIMIT,
                                           SIMULATION_WORK_LIMIT,
                                           ContinuousBatcher,
                                           StaticBatcher,
                                           monte_carlo,
                                           replica_kv_budget,
                                           replicate_seed,
                                           run_replicates,
)
from rooflinekit.batching.disaggregated import POOLS, DisaggregatedBatcher
from rooflinekit.batching.precompile import KERNEL_FAMILIES, compile_kernels
from rooflinekit.batching.speculative import Speculative
from rooflinekit.batching.results import (
                                           REASON_KV_BUDGET,
                                           STATUS_COMPLETED,
                                           STATUS_REJECTED,
                                           SUMMARY_NAMES,
                                           TIERS,
)
from rooflinekit.roofline import IDEAL          # the ideal Engine, results' default label

__all__ = ["IDEAL", "SIMULATION_MEMORY_LIMIT", "SIMULATION_WORK_LIMIT", "StaticBatcher", "ContinuousBatcher",
           "monte_carlo", "run_replicates", "replicate_seed", "replica_kv_budget",
           "DisaggregatedBatcher", "POOLS",
           "Speculative", "compile_kernels", "KERNEL_FAMILIES",
           "STATUS_COMPLETED", "STATUS_REJECTED", "REASON_KV_BUDGET", "TIERS", "SUMMARY_NAMES"]
