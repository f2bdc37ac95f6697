"""Static and continuous batching, simulated step by step (guide §4).

:class:`StaticBatcher` and :class:`ContinuousBatcher` (``.run(workload)``) in
:mod:`~rooflinekit.batching.batchers`; the step clock and :func:`replica_kv_budget`, the one
KV-budget rule of batchers and plans, in :mod:`~rooflinekit.batching.clock`; many runs
(:func:`monte_carlo`, :func:`run_replicates`) in :mod:`~rooflinekit.batching.replicates`;
:class:`DisaggregatedBatcher` in :mod:`~rooflinekit.batching.disaggregated`; the Datasets in
:mod:`~rooflinekit.batching.results`; :func:`compile_kernels` in
:mod:`~rooflinekit.batching.precompile`. The rules are ``_reference``'s (plain Python), which
the numba ``_kernels`` match bit for bit (``docs/simulator.md``).
"""

from rooflinekit.batching.batchers import (
                                           MAX_BLOCK_SIZE,
                                           MAX_RECV_INTERVAL,
                                           MAX_SCHEDULER_STEPS,
                                           MAX_STREAM_INTERVAL,
                                           RECV_PROMPT_WEIGHT,
                                           RUN_BYTES_PER_REQUEST,
                                           SIMULATION_MEMORY_LIMIT,
                                           SIMULATION_WORK_LIMIT,
                                           ContinuousBatcher,
                                           StaticBatcher,
                                           run_memory_bytes,
)
from rooflinekit.batching.clock import (kv_window_text, replica_kv_budget, replica_kv_window,
                                       replica_state_tokens, vllm_block_size)
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

__all__ = ["IDEAL", "MAX_BLOCK_SIZE", "MAX_RECV_INTERVAL", "MAX_SCHEDULER_STEPS", "MAX_STREAM_INTERVAL", "RECV_PROMPT_WEIGHT", "RUN_BYTES_PER_REQUEST", "run_memory_bytes", "SIMULATION_MEMORY_LIMIT", "SIMULATION_WORK_LIMIT", "StaticBatcher", "ContinuousBatcher",
           "monte_carlo", "run_replicates", "replicate_seed", "replica_kv_budget", "replica_kv_window", "kv_window_text",
           "replica_state_tokens",
           "vllm_block_size",
           "DisaggregatedBatcher", "POOLS",
           "Speculative", "compile_kernels", "KERNEL_FAMILIES",
           "STATUS_COMPLETED", "STATUS_REJECTED", "REASON_KV_BUDGET", "TIERS", "SUMMARY_NAMES"]
