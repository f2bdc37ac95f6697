"""Engine profiles: how real serving engines run a step, per phase and GPU.

- :mod:`~rooflinekit.profiles.calibration`: :class:`Calibration`, an engine per phase (fitted
  knobs, their intervals, knob sets by GPU, engine, format or model), kept as JSON;
- :mod:`~rooflinekit.profiles.shipped`: the profiles shipped with the package
  (:func:`engine_profile`, :data:`ENGINE_PROFILES`) and :func:`resolve_engine`, the one rule by
  which a planning answer picks its engine (the vLLM profile of its GPU unless told otherwise);
- :mod:`~rooflinekit.profiles.footprint`: what an engine keeps on each GPU beside the
  weights and the KV cache (:func:`engine_memory`), fitted to its start-up logs;
- :mod:`~rooflinekit.profiles.kernels`: whether an engine's release has an attention kernel
  for a model on a GPU (:func:`missing_attention_kernel`), without which it does not start;
- :mod:`~rooflinekit.profiles.scheduling`: the engines' default slots, chunked-prefill budget
  and KV admission by GPU (:func:`scheduler_defaults`, :func:`scheduler_admission`), and
  whether a named engine version predates them (:func:`older_than_scheduler`).
"""
from rooflinekit.profiles.calibration import (
    ENGINE_IDEAL_KNOBS,
    ENGINE_KNOBS,
    GROUP_FIELDS,
    IDEAL_KNOBS,
    KNOBS,
    LINK_KNOBS,
    PARAMETERS,
    PHASES,
    SECONDS_KNOBS,
    Calibration,
    load_calibration,
    save_calibration,
)
from rooflinekit.profiles.footprint import (
    ENGINE_MEMORY,
    FUSED_MOE_CHUNK_TOKENS,
    MOE_ACTIVATION_BYTES,
    MXFP4_BYTES,
    TRTLLM_FREE_GPU_MEMORY_FRACTION,
    VLLM_GPU_MEMORY_UTILIZATION,
    counts_cuda_graphs,
    cuda_graph_note,
    default_share,
    engine_memory,
    held_bytes,
    held_memory,
    layout_kv_bytes,
    memory_engine,
    memory_outside_kv,
    memory_rule,
    memory_share,
    memory_share_of,
    moe_workspace_bytes,
    mxfp4_layout_bytes,
    read_engine_memory_file,
    sglang_mem_fraction_static,
    vllm_cuda_graph_bytes,
)
from rooflinekit.profiles.kernels import VLLM_SPARSE_MLA_SM120_SINCE, missing_attention_kernel
from rooflinekit.profiles.scheduling import (
    ADMISSIONS,
    CHUNK_BUDGETS,
    ENGINE_SCHEDULERS,
    SchedulerDefaults,
    chunk_budget_candidates,
    read_scheduler_file,
    older_than_scheduler,
    scheduler_admission,
    scheduler_defaults,
    scheduler_engine,
)
from rooflinekit.profiles.shipped import (
    DEFAULT_ENGINE,
    ENGINE_CHOICES,
    ENGINE_NAMES,
    ENGINE_PROFILES,
    HostScheduling,
    ProfileKey,
    engine_name,
    engine_profile,
    host_scheduling,
    is_engine_name,
    named_release,
    profiled_engine,
    read_profile_file,
    resolve_engine,
    split_engine_name,
)

__all__ = ["ENGINE_MEMORY", "FUSED_MOE_CHUNK_TOKENS", "MOE_ACTIVATION_BYTES",
           "TRTLLM_FREE_GPU_MEMORY_FRACTION", "VLLM_GPU_MEMORY_UTILIZATION", "engine_memory",
           "counts_cuda_graphs", "default_share", "held_bytes", "held_memory", "layout_kv_bytes", "memory_share_of",
           "memory_engine",
           "memory_outside_kv", "memory_rule", "memory_share", "moe_workspace_bytes",
           "mxfp4_layout_bytes",
           "MXFP4_BYTES", "read_engine_memory_file",
           "sglang_mem_fraction_static", "vllm_cuda_graph_bytes", "cuda_graph_note", "ENGINE_IDEAL_KNOBS", "ENGINE_KNOBS", "GROUP_FIELDS", "IDEAL_KNOBS", "KNOBS",
           "LINK_KNOBS", "PARAMETERS", "PHASES", "SECONDS_KNOBS", "Calibration",
           "load_calibration", "save_calibration", "DEFAULT_ENGINE", "ENGINE_CHOICES",
           "ENGINE_NAMES", "ENGINE_PROFILES", "HostScheduling", "ProfileKey", "engine_name",
           "engine_profile",
           "host_scheduling", "is_engine_name", "named_release", "profiled_engine", "read_profile_file", "split_engine_name",
           "resolve_engine", "CHUNK_BUDGETS", "ENGINE_SCHEDULERS", "SchedulerDefaults",
           "chunk_budget_candidates", "read_scheduler_file", "scheduler_defaults",
           "scheduler_engine", "scheduler_admission", "older_than_scheduler",
           "ADMISSIONS", "VLLM_SPARSE_MLA_SM120_SINCE", "missing_attention_kernel"]
