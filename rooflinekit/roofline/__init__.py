"""The roofline model of serving: one step formula, its work and traffic, and what follows from it.

:mod:`~.engine` (the :class:`Engine` spec), :mod:`~.options` (spec readers, shared checks),
:mod:`~.step` (the step kernel), :mod:`~.work` (FLOPs, bytes, which roof binds),
:mod:`~.latency` (ITL, TTFT, throughput, cost), :mod:`~.layout` (pipeline and expert-parallel
layouts), :mod:`~.energy`, :mod:`~.speculative` and :mod:`~.tables` (labelled tables).
"""

from rooflinekit.roofline.energy import DEFAULT_IDLE_POWER_FRACTION, energy_per_token
from rooflinekit.roofline.engine import (ALLREDUCE_MODELS, IDEAL, MAX_MXFP4_SHARE, PHASES,
                                         SHARE_KNOBS, WIDE_HEAD_DIM, Engine, engine_for,
                                         narrow_head_halvings)
from rooflinekit.roofline.latency import (
                                          amortized_token_time,
                                          cost_per_million_tokens,
                                          decode_step_time,
                                          decode_throughput,
                                          decode_throughput_per_gpu,
                                          generation_time,
                                          prefill_throughput,
                                          prefill_time,
                                          request_latency,
                                          time_to_first_token,
)
from rooflinekit.roofline.layout import (
    MAX_GPUS,
    MAX_TP,
    LayoutLinks,
    LayoutTerms,
    layout_decode_step_time,
    layout_links,
    layout_prefill_time,
    layout_step,
    layout_terms,
    layouts,
)
from rooflinekit.roofline.speculative import (
                                          draft_step_time,
                                          speculative_speedup,
                                          speculative_step_time,
                                          speculative_tokens_per_step,
                                          verification_step_time,
)
from rooflinekit.roofline.step import (
                                          StepCost,
                                          kv_tokens_read_kernel,
                                          mixed_step_time_kernel,
                                          prefill_context_tokens_kernel,
)
from rooflinekit.roofline.tables import decode_roofline, tp_scaling
from rooflinekit.roofline.work import (
                                          arithmetic_intensity,
                                          bound,
                                          compute_bound_reachable,
                                          critical_batch_size,
                                          decode_bound,
                                          decode_bytes,
                                          decode_compute_time,
                                          decode_flops,
                                          decode_memory_time,
                                          effective_kv_tokens,
                                          mixed_step_time,
                                          prefill_bound,
                                          prefill_bytes,
                                          prefill_flops,
                                          ridge_point,
                                          step_cost_coefficients,
)

__all__ = [
    "Engine", "IDEAL", "engine_for", "PHASES", "SHARE_KNOBS", "MAX_MXFP4_SHARE", "WIDE_HEAD_DIM",
    "narrow_head_halvings", "ALLREDUCE_MODELS", "DEFAULT_IDLE_POWER_FRACTION",
    "LayoutLinks", "LayoutTerms", "layout_links", "layout_terms", "layout_step",
    "StepCost", "step_cost_coefficients", "mixed_step_time_kernel", "kv_tokens_read_kernel",
    "prefill_context_tokens_kernel", "mixed_step_time",
    "effective_kv_tokens", "decode_flops", "decode_bytes", "prefill_flops", "prefill_bytes",
    "arithmetic_intensity", "ridge_point", "bound", "decode_bound", "prefill_bound",
    "decode_compute_time", "decode_memory_time", "critical_batch_size", "compute_bound_reachable",
    "decode_step_time", "prefill_time", "amortized_token_time",
    "decode_throughput", "decode_throughput_per_gpu", "prefill_throughput", "generation_time",
    "request_latency", "time_to_first_token", "cost_per_million_tokens",
    "decode_roofline", "tp_scaling", "energy_per_token",
    "speculative_tokens_per_step", "verification_step_time", "draft_step_time",
    "speculative_step_time", "speculative_speedup", "layout_decode_step_time", "layout_prefill_time", "layouts",
    "MAX_GPUS", "MAX_TP",
]
