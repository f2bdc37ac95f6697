"""Every public callable refuses bad input cleanly: a ValueError or TypeError, before any work.

A registry holds, for each callable of ``rooflinekit.__all__``, valid baseline arguments and the
arguments to spoil. Each is replaced in turn by every value of :data:`BAD` (unless the registry
says that value is valid there), and the call must either raise ``ValueError``/``TypeError`` or
return a result free of NaN, with no NumPy warning on the way; only arrays of valid numbers
(:data:`SHAPES`) and the values the registry lists as valid for an argument may be accepted. A public callable without an
entry fails :func:`test_every_public_callable_has_an_entry`.
"""

import math
import warnings

import numpy as np
import pytest
import xarray as xr

import rooflinekit as rk
from rooflinekit import catalog
from rooflinekit.workloads import Constant, WorkloadSpec

M = catalog.model("Llama-3.1-8B")
G = catalog.gpu("H100-SXM-80GB")
MOE = catalog.model("Mixtral-8x7B")
PAYG = rk.PayAsYouGo(3.0, 12.0)
PROV = rk.Provisioned(12_000.0, 4e9, units=1)
HOSTED = rk.SelfHosted(8, 3.0, 25_000.0, capacity_tokens=1e10)
TRAFFIC = rk.Traffic(2.0, 200, 20)
SLO = rk.SLO(ttft=1.0)

#: The hostile values every spoilt argument takes in turn.
BAD = {
    "minus one": -1, "zero": 0, "nan": math.nan, "inf": math.inf, "minus inf": -math.inf,
    "huge": 1e300, "true": True, "string": "3", "none": None, "empty list": [],
    "empty array": np.zeros(0), "2-d array": np.ones((2, 2)),
    "clashing DataArray": xr.DataArray([1.0, 2.0], dims=["model"]),
    # input classes past rows slipped through: beyond float range, a boolean spelt as text, a
    # numpy half-precision NaN and infinity
    "integer beyond float": 10**400, "string boolean": "false",
    "float16 nan": np.float16("nan"), "float16 inf": np.float16("inf"),
}


#: Values that are arrays of valid numbers: a formula may take them (numpy and xarray inputs
#: broadcast), as long as the result holds no NaN.
SHAPES = ("empty list", "empty array", "2-d array", "clashing DataArray")


def _entry(func, args=(), kwargs=None, spoil=(), valid=None, label=None):
    """One registry row: ``func(*args, **kwargs)`` is valid; each name of ``spoil`` is spoilt.

    ``valid`` maps an argument to the names of :data:`BAD` that are legitimate values there.
    """
    return {"func": func, "args": tuple(args), "kwargs": dict(kwargs or {}),
            "spoil": tuple(spoil), "valid": dict(valid or {}), "label": label}


CONTEXT_OK = ("zero",)       # an empty context is a real state
OPTIONAL = ("none",)

REGISTRY = {
    "Engine": _entry(rk.Engine, spoil=(
        "compute_efficiency", "bandwidth_efficiency", "kv_bandwidth_efficiency", "step_overhead",
        "layer_overhead", "prefill_overhead", "gemm_half_tokens", "allreduce",
        "interconnect_bandwidth", "interconnect_latency", "interconnect_efficiency",
        "compute_dtype", "activation_dtype", "label", "moe_layer_overhead", "layer_cycles",
        "host_traffic_share", "sequence_overhead", "low_precision_bandwidth_efficiency",
        "fp4_compute_efficiency", "fp4_bandwidth_efficiency", "moe_compute_share",
        "mla_layer_overhead", "attention_compute_efficiency", "request_overhead",
        "mxfp4_moe_compute_share", "narrow_head_attention_share"),
        valid={"kv_bandwidth_efficiency": OPTIONAL, "mxfp4_moe_compute_share": OPTIONAL, "step_overhead": CONTEXT_OK,
               "low_precision_bandwidth_efficiency": OPTIONAL,
               "fp4_compute_efficiency": OPTIONAL, "fp4_bandwidth_efficiency": OPTIONAL,
               "attention_compute_efficiency": OPTIONAL,
               "sequence_overhead": CONTEXT_OK, "request_overhead": CONTEXT_OK,
               "layer_overhead": CONTEXT_OK, "prefill_overhead": CONTEXT_OK,
               "moe_layer_overhead": CONTEXT_OK, "mla_layer_overhead": CONTEXT_OK,
               "layer_cycles": CONTEXT_OK,
               "host_traffic_share": CONTEXT_OK,
               "gemm_half_tokens": CONTEXT_OK, "allreduce": ("true",),
               "interconnect_bandwidth": OPTIONAL, "interconnect_latency": CONTEXT_OK + OPTIONAL,
               "compute_dtype": OPTIONAL, "label": ("string",)}),
    "GPU": _entry(rk.GPU, kwargs={"name": "x", "memory_bytes": 80e9, "hbm_bandwidth": 3e12,
                                  "peak_flops": 1e15},
                  spoil=("memory_bytes", "hbm_bandwidth", "peak_flops", "ring_collectives",
                         "streaming_bandwidth", "gemm_flops", "compute_capability"),
                  valid={"ring_collectives": ("true",), "streaming_bandwidth": OPTIONAL,
                         "gemm_flops": OPTIONAL, "compute_capability": OPTIONAL}),
    "ModelShape": _entry(rk.ModelShape, kwargs={"name": "x", "n_layers": 2, "n_heads": 4,
                                                "n_kv_heads": 2, "head_dim": 8, "n_params": 1e6},
                         spoil=("n_layers", "n_heads", "n_kv_heads", "head_dim", "n_params",
                                "n_aside_params", "fp4_matmuls", "bytes_per_param",
                                "kv_bytes_per_element", "ssm_state_bytes_per_sequence",
                                "ssm_state_bytes_per_element"),
                         valid={"n_aside_params": CONTEXT_OK,
                                "ssm_state_bytes_per_sequence": CONTEXT_OK,
                                "fp4_matmuls": ("true", "none")}),
    "kv_bytes_per_token": _entry(rk.kv_bytes_per_token, kwargs={"model": M}, spoil=("model",)),
    "kv_bytes_per_sequence": _entry(rk.kv_bytes_per_sequence,
                                    kwargs={"model": M, "context_length": 100},
                                    spoil=("model", "context_length"),
                                    valid={"context_length": CONTEXT_OK}),
    "weight_bytes": _entry(rk.weight_bytes, kwargs={"model": M}, spoil=("model",)),
    "usable_kv_bytes": _entry(rk.usable_kv_bytes, kwargs={"model": M, "gpu": G},
                              spoil=("model", "gpu", "tp", "reserve"),
                              valid={"reserve": CONTEXT_OK}),
    "max_concurrent_sequences": _entry(
        rk.max_concurrent_sequences, kwargs={"model": M, "gpu": G, "context_length": 100},
        spoil=("context_length", "tp", "reserve", "shared_prefix_tokens", "block_size"),
        valid={"reserve": CONTEXT_OK, "shared_prefix_tokens": CONTEXT_OK}),
    "kv_copies": _entry(rk.kv_copies, kwargs={"model": M}, spoil=("model", "tp")),
    "kv_budget_tokens": _entry(rk.kv_budget_tokens, kwargs={"model": M, "gpu": G},
                               spoil=("tp", "reserve"), valid={"reserve": CONTEXT_OK}),
    "max_context_length": _entry(rk.max_context_length, kwargs={"model": M, "gpu": G},
                                 spoil=("tp", "reserve"), valid={"reserve": CONTEXT_OK}),
    "blocks_per_sequence": _entry(rk.blocks_per_sequence, kwargs={"context_length": 100},
                                  spoil=("context_length", "block_size"),
                                  valid={"context_length": CONTEXT_OK}),
    "paged_waste_bytes": _entry(rk.paged_waste_bytes, kwargs={"model": M, "context_length": 100},
                                spoil=("context_length", "block_size"),
                                valid={"context_length": CONTEXT_OK}),
    "engine_memory": _entry(rk.engine_memory, kwargs={"model": MOE, "gpu": G},
                            spoil=("model", "gpu", "tp", "engine", "max_num_seqs",
                                   "max_num_batched_tokens", "gpu_memory_utilization"),
                            valid={"max_num_seqs": OPTIONAL,
                                   "max_num_batched_tokens": OPTIONAL,
                                   "gpu_memory_utilization": OPTIONAL}),
    "memory_share": _entry(rk.memory_share, args=("sglang", G),
                           spoil=("held_by", "gpu", "tp", "gpu_memory_utilization",
                                  "max_num_batched_tokens"),
                           valid={"held_by": OPTIONAL, "gpu_memory_utilization": OPTIONAL,
                                  "max_num_batched_tokens": OPTIONAL}),
    "sglang_mem_fraction_static": _entry(rk.sglang_mem_fraction_static, args=(G,),
                                         spoil=("gpu", "tp", "chunked_prefill_size",
                                                "cuda_graph_max_bs", "speculative"),
                                         valid={"chunked_prefill_size": OPTIONAL,
                                                "cuda_graph_max_bs": OPTIONAL,
                                                "speculative": ("true",)}),
    "engine_kv_cache": _entry(rk.engine_kv_cache, kwargs={"model": M, "gpu": G},
                              spoil=("tp", "gpu_memory_utilization", "activation_peak_bytes",
                                     "block_size", "max_model_len", "mamba_cache_mode",
                                     "num_speculative_tokens", "draft_layers",
                                     "block_alignment"),
                              valid={"activation_peak_bytes": CONTEXT_OK,
                                     "max_model_len": OPTIONAL,
                                     "num_speculative_tokens": CONTEXT_OK,
                                     "draft_layers": CONTEXT_OK}),
    "arithmetic_intensity": _entry(rk.arithmetic_intensity, kwargs={"model": M},
                                   spoil=("batch_size", "context_length"),
                                   valid={"context_length": CONTEXT_OK}),
    "ridge_point": _entry(rk.ridge_point, kwargs={"gpu": G}, spoil=("gpu", "engine"),
                          valid={"engine": OPTIONAL}),
    "critical_batch_size": _entry(rk.critical_batch_size, kwargs={"model": M, "gpu": G},
                                  spoil=("context_length", "tp"),
                                  valid={"context_length": CONTEXT_OK}),
    "prefill_time": _entry(rk.prefill_time, kwargs={"model": M, "gpu": G, "prompt_tokens": 100},
                           spoil=("prompt_tokens", "tp", "ep", "context_length", "engine"),
                           valid={"context_length": CONTEXT_OK, "engine": OPTIONAL,
                                  "prompt_tokens": CONTEXT_OK}),
    "time_to_first_token": _entry(
        rk.time_to_first_token, kwargs={"model": M, "gpu": G, "prompt_tokens": 100},
        spoil=("prompt_tokens", "tp", "context_length", "engine"),
        valid={"context_length": CONTEXT_OK, "engine": OPTIONAL, "prompt_tokens": CONTEXT_OK}),
    "decode_step_time": _entry(rk.decode_step_time, kwargs={"model": M, "gpu": G},
                               spoil=("model", "gpu", "batch_size", "context_length", "tp",
                                      "ep", "engine"),
                               valid={"context_length": CONTEXT_OK, "engine": OPTIONAL}),
    "amortized_token_time": _entry(rk.amortized_token_time, kwargs={"model": M, "gpu": G},
                                   spoil=("batch_size", "context_length", "tp"),
                                   valid={"context_length": CONTEXT_OK}),
    "mixed_step_time": _entry(rk.mixed_step_time,
                              kwargs={"model": M, "gpu": G, "decode_tokens": 4,
                                      "prefill_tokens": 100, "kv_tokens_read": 1000},
                              spoil=("decode_tokens", "prefill_tokens", "kv_tokens_read", "tp"),
                              valid={"decode_tokens": CONTEXT_OK, "prefill_tokens": CONTEXT_OK,
                                     "kv_tokens_read": CONTEXT_OK}),
    "decode_throughput": _entry(rk.decode_throughput, kwargs={"model": M, "gpu": G},
                                spoil=("batch_size", "context_length", "tp"),
                                valid={"context_length": CONTEXT_OK}),
    "request_latency": _entry(rk.request_latency,
                              kwargs={"model": M, "gpu": G, "prompt_tokens": 100,
                                      "output_tokens": 10},
                              spoil=("prompt_tokens", "output_tokens", "batch_size", "tp"),
                              valid={"prompt_tokens": CONTEXT_OK}),
    "cost_per_million_tokens": _entry(rk.cost_per_million_tokens, kwargs={"model": M, "gpu": G},
                                      spoil=("batch_size", "context_length", "tp",
                                             "hourly_price"),
                                      valid={"context_length": CONTEXT_OK,
                                             "hourly_price": ("zero", "none")}),
    "energy_per_token": _entry(rk.energy_per_token, kwargs={"model": M, "gpu": G},
                               spoil=("batch_size", "context_length", "idle_power_fraction"),
                               valid={"context_length": CONTEXT_OK,
                                      "idle_power_fraction": CONTEXT_OK}),
    "speculative_tokens_per_step": _entry(rk.speculative_tokens_per_step,
                                          kwargs={"acceptance": 0.8, "draft_tokens": 4},
                                          spoil=("acceptance", "draft_tokens"),
                                          valid={"acceptance": CONTEXT_OK,
                                                 "draft_tokens": CONTEXT_OK}),
    "speculative_step_time": _entry(rk.speculative_step_time,
                                    kwargs={"model": M, "gpu": G, "draft": 0.05},
                                    spoil=("batch_size", "draft", "draft_tokens"),
                                    valid={"draft_tokens": CONTEXT_OK}),
    "speculative_speedup": _entry(rk.speculative_speedup,
                                  kwargs={"model": M, "gpu": G, "draft": 0.05, "acceptance": 0.8},
                                  spoil=("acceptance", "draft", "draft_tokens"),
                                  valid={"acceptance": CONTEXT_OK, "draft_tokens": CONTEXT_OK}),
    "smallest_tp": _entry(rk.smallest_tp, kwargs={"model": M, "gpu": G, "concurrency": 8,
                                                   "context_length": 1000},
                          spoil=("concurrency", "context_length", "reserve"),
                          valid={"reserve": CONTEXT_OK}),
    "tp_scaling": _entry(rk.tp_scaling, kwargs={"model": M, "gpu": G},
                         spoil=("batch_size", "context_length"),
                         valid={"context_length": CONTEXT_OK}),
    "allreduce_time": _entry(rk.allreduce_time, kwargs={"model": M, "gpu": G, "tokens": 8,
                                                         "tp": 2},
                             spoil=("tokens", "tp"), valid={"tokens": CONTEXT_OK}),
    "layout_memory": _entry(rk.layout_memory, kwargs={"model": M, "gpu": G, "tp": 2, "pp": 2},
                            spoil=("model", "gpu", "tp", "pp", "ep", "dp", "reserve"),
                            valid={"reserve": CONTEXT_OK}),
    "pipeline_bubble": _entry(rk.pipeline_bubble, kwargs={"pp": 4, "micro_batches": 4},
                              spoil=("pp", "micro_batches")),
    "expected_normal_maximum": _entry(rk.expected_normal_maximum, kwargs={"n": 8},
                                      spoil=("n",)),
    "expert_all_to_all_bytes": _entry(rk.expert_all_to_all_bytes,
                                      kwargs={"model": MOE, "tokens": 64, "ep": 4},
                                      spoil=("model", "tokens", "ep", "activation_dtype"),
                                      valid={"tokens": CONTEXT_OK}),
    "kv_transfer_time": _entry(rk.kv_transfer_time,
                               kwargs={"model": M, "prompt_tokens": 1000, "link_bandwidth": 50e9},
                               spoil=("model", "prompt_tokens", "link_bandwidth", "link_latency"),
                               valid={"prompt_tokens": CONTEXT_OK, "link_latency": CONTEXT_OK}),
    "layout_decode_step_time": _entry(
        rk.layout_decode_step_time,
        kwargs={"model": M, "gpu": G, "batch_size": 8, "context_length": 100, "tp": 2, "pp": 2,
                "micro_batches": 2},
        spoil=("model", "gpu", "batch_size", "context_length", "tp", "pp", "ep", "micro_batches",
               "p2p_bandwidth", "p2p_latency"),
        valid={"context_length": CONTEXT_OK, "p2p_bandwidth": OPTIONAL,
               "p2p_latency": ("none", "zero")}),
    "layout_prefill_time": _entry(
        rk.layout_prefill_time, kwargs={"model": MOE, "gpu": G, "prompt_tokens": 512, "tp": 4,
                                        "pp": 2, "ep": 4},
        spoil=("model", "gpu", "prompt_tokens", "tp", "pp", "ep", "ep_bandwidth"),
        valid={"prompt_tokens": CONTEXT_OK, "ep_bandwidth": OPTIONAL}),
    "layouts": _entry(
        rk.layouts, kwargs={"model": M, "gpu": G, "n_gpus": 4, "batch_size": 8,
                            "context_length": 100, "prompt_tokens": 64},
        spoil=("model", "gpu", "n_gpus", "batch_size", "context_length", "prompt_tokens",
               "micro_batches", "max_tp", "reserve", "p2p_bandwidth"),
        valid={"context_length": CONTEXT_OK, "prompt_tokens": CONTEXT_OK + OPTIONAL,
               "micro_batches": OPTIONAL, "p2p_bandwidth": OPTIONAL, "reserve": ("zero",)}),
    "StaticBatcher": _entry(rk.StaticBatcher, kwargs={"batch_size": 4}, spoil=("batch_size",)),
    "ContinuousBatcher": _entry(rk.ContinuousBatcher, kwargs={"max_num_seqs": 4},
                                spoil=("max_num_seqs", "kv_budget_tokens", "block_size",
                                       "reserve", "mixed_prefill", "recv_interval",
                                       "stream_interval", "num_scheduler_steps"),
                                valid={"max_num_seqs": OPTIONAL,
                                       "kv_budget_tokens": ("none", "zero"),
                                       "reserve": CONTEXT_OK, "mixed_prefill": ("true",)}),
    "monte_carlo": _entry(rk.monte_carlo,
                          args=(WorkloadSpec(8, output=Constant(3)), rk.ContinuousBatcher(4)),
                          kwargs={"replicates": 2, "seed": 0, "parallel": False},
                          spoil=("replicates", "seed", "ttft_target"),
                          valid={"seed": ("zero", "none", "integer beyond float"),
                                 "ttft_target": ("zero", "inf", "none")}),
    "Workload": _entry(rk.Workload, kwargs={"arrival": [0.0], "prompt_tokens": [0],
                                            "output_tokens": [1]},
                       spoil=("arrival", "prompt_tokens", "output_tokens"),
                       valid={"prompt_tokens": ()}),
    "WorkloadSpec": _entry(WorkloadSpec, kwargs={"n_requests": 4, "output": Constant(3)},
                           spoil=("n_requests", "output", "batch_fraction"),
                           valid={"batch_fraction": CONTEXT_OK}),
    "guide_workload": _entry(rk.guide_workload),
    "PayAsYouGo": _entry(rk.PayAsYouGo, kwargs={"input_per_mtok": 3.0, "output_per_mtok": 12.0},
                         spoil=("input_per_mtok", "output_per_mtok"),
                         valid={"input_per_mtok": CONTEXT_OK, "output_per_mtok": CONTEXT_OK}),
    "Provisioned": _entry(rk.Provisioned, kwargs={"monthly_cost": 12_000.0,
                                                  "monthly_capacity_tokens": 4e9},
                          spoil=("monthly_cost", "monthly_capacity_tokens", "output_weight")),
    "SelfHosted": _entry(rk.SelfHosted, kwargs={"n_gpus": 8, "gpu_hourly": 3.0,
                                                "engineering_monthly": 25_000.0},
                         spoil=("n_gpus", "gpu_hourly", "engineering_monthly"),
                         valid={"gpu_hourly": CONTEXT_OK, "engineering_monthly": CONTEXT_OK}),
    "Compliance": _entry(rk.Compliance, spoil=("classification",)),
    "NoAdmissibleOptionError": _entry(rk.NoAdmissibleOptionError,
                                      args=(rk.Compliance(), {"x": "because"})),
    "blended_price": _entry(rk.blended_price, kwargs={"payg": PAYG, "output_fraction": 0.1},
                            spoil=("payg", "output_fraction", "cached_fraction"),
                            valid={"output_fraction": CONTEXT_OK,
                                   "cached_fraction": CONTEXT_OK}),
    "break_even": _entry(rk.break_even, kwargs={"provisioned": PROV, "payg": PAYG,
                                                "output_fraction": 0.1},
                         spoil=("provisioned", "payg", "output_fraction"),
                         valid={"output_fraction": CONTEXT_OK}),
    "crossover_volume": _entry(rk.crossover_volume, kwargs={"selfhosted": HOSTED, "other": PAYG,
                                                            "output_fraction": 0.1},
                               spoil=("selfhosted", "other", "output_fraction"),
                               valid={"output_fraction": CONTEXT_OK}),
    "cheapest_option": _entry(rk.cheapest_option,
                              kwargs={"monthly_tokens": 1e9, "options": [PAYG, PROV],
                                      "output_fraction": 0.1},
                              spoil=("monthly_tokens", "options", "output_fraction"),
                              valid={"monthly_tokens": CONTEXT_OK,
                                     "output_fraction": CONTEXT_OK}),
    "plan_with_spillover": _entry(rk.plan_with_spillover,
                                  kwargs={"demand": np.full(24, 1e6), "payg": PAYG,
                                          "floor_unit_cost": 3.0, "output_fraction": 0.1},
                                  spoil=("demand", "floor_unit_cost", "output_fraction",
                                         "quantile"),
                                  valid={"output_fraction": CONTEXT_OK,
                                         "quantile": CONTEXT_OK}),
    "optimal_floor": _entry(rk.optimal_floor, kwargs={"demand": np.full(24, 1e6), "payg": PAYG,
                                                      "floor_unit_cost": 3.0,
                                                      "output_fraction": 0.1},
                            spoil=("demand", "floor_unit_cost", "output_fraction"),
                            valid={"output_fraction": CONTEXT_OK}),
    "compare_floor_sizing": _entry(rk.compare_floor_sizing,
                                   kwargs={"demand": np.full(24, 1e6), "payg": PAYG,
                                           "floor_unit_cost": 3.0, "output_fraction": 0.1},
                                   spoil=("demand", "floor_unit_cost"),),
    "Traffic": _entry(rk.Traffic, kwargs={"rate": 2.0, "prompt": 100, "output": 10},
                      spoil=("rate", "prompt", "output", "burstiness", "profile"),
                      valid={"prompt": CONTEXT_OK, "burstiness": OPTIONAL,
                             "profile": OPTIONAL}),
    "SLO": _entry(rk.SLO, kwargs={"ttft": 1.0},
                  spoil=("ttft", "itl", "e2e", "quantile", "attainment"),
                  valid={"ttft": OPTIONAL, "itl": OPTIONAL, "e2e": OPTIONAL,
                         "attainment": OPTIONAL}),
    "plan": _entry(rk.plan, args=(TRAFFIC, SLO),
                   kwargs={"models": M, "gpus": G, "replicates": 2, "requests": 20},
                   spoil=("tp", "max_num_seqs", "headroom", "replicates", "seed", "requests",
                          "gpu_memory_utilization", "block_size", "electricity_price",
                          "engine", "engine_draws", "spare_replicas", "min_replicas",
                          "max_num_batched_tokens", "mixed_prefill", "recv_interval",
                          "stream_interval"),
                   valid={"headroom": CONTEXT_OK, "seed": CONTEXT_OK, "mixed_prefill": ("true",),
                          "electricity_price": CONTEXT_OK, "engine": OPTIONAL,
                          "engine_draws": CONTEXT_OK + OPTIONAL, "spare_replicas": CONTEXT_OK,
                          "max_num_batched_tokens": OPTIONAL, "gpu_memory_utilization": OPTIONAL}),
    "plan_disaggregated": _entry(rk.plan_disaggregated, args=(TRAFFIC, SLO),
                                 kwargs={"model": M, "gpu": G, "splits": [(1, 1)],
                                         "replicates": 2, "requests": 20},
                                 spoil=("tp", "ep", "splits", "max_num_seqs", "link_bandwidth",
                                        "link_latency", "headroom", "replicates", "seed",
                                        "requests", "gpu_memory_utilization",
                                        "recv_interval"),
                                 valid={"link_bandwidth": ("inf", "none"),
                                        "link_latency": CONTEXT_OK, "headroom": CONTEXT_OK,
                                        "seed": CONTEXT_OK, "gpu_memory_utilization": OPTIONAL}),
    "cheapest_plan": _entry(rk.cheapest_plan, spoil=("plan", "by"),
                            valid={"by": OPTIONAL}, label="needs a plan"),
    "decision_table": _entry(rk.decision_table, spoil=("cheapest", "traffic", "payg"),
                             label="needs a plan"),
    "best_configuration": _entry(rk.best_configuration, spoil=("ds",), label="needs a sweep"),
    "best_tp": _entry(rk.best_tp, spoil=("ds",), label="needs a sweep"),
    "cheapest_configuration": _entry(rk.cheapest_configuration, spoil=("ds", "max_ttft"),
                                     valid={"max_ttft": ("none", "inf")},
                                     label="needs a sweep"),
    "pareto_front": _entry(rk.pareto_front, spoil=("ds",), label="needs a sweep"),
    "Calibration": _entry(rk.Calibration, spoil=("prefill", "decode", "intervals",
                                                 "serving_engine"),
                          valid={"serving_engine": OPTIONAL}),
    "engine_profile": _entry(rk.engine_profile, kwargs={"gpu": "H100-SXM-80GB"},
                             spoil=("engine", "gpu", "version"),
                             valid={"gpu": OPTIONAL, "version": OPTIONAL}),
    "cross_validate": _entry(rk.cross_validate, spoil=("measurements", "k"),
                             label="needs measurements"),
    "read_measurements": _entry(rk.read_measurements, spoil=("path",), label="reads a file"),
    "read_vllm_result": _entry(rk.read_vllm_result, kwargs={"model": "Llama-3.1-8B",
                                                            "gpu": "H100-SXM-80GB"},
                               spoil=("result", "tp"), label="reads a result"),
    "Speculative": _entry(rk.Speculative, kwargs={"draft": 0.1, "draft_tokens": 4,
                                                  "acceptance": 0.8},
                          spoil=("draft", "draft_tokens", "acceptance", "seed"),
                          valid={"acceptance": CONTEXT_OK, "seed": CONTEXT_OK}),
}


# The prefill formulas' prefix-cache hit: a whole count in [0, prompt_tokens]; 0 is valid.
for _name in ("prefill_time", "time_to_first_token", "request_latency"):
    REGISTRY[_name]["spoil"] += ("cached_tokens",)
    REGISTRY[_name]["valid"]["cached_tokens"] = CONTEXT_OK
# A draft model's weights beside the target's: bytes ≥ 0; 0 (no draft) is valid.
REGISTRY["max_concurrent_sequences"]["spoil"] += ("draft_weight_bytes",)
REGISTRY["max_concurrent_sequences"]["valid"]["draft_weight_bytes"] = CONTEXT_OK
# Prefixes held once: a count >= 1 of them, a share in [0, 1] of sequences on one (0 valid).
REGISTRY["max_concurrent_sequences"]["spoil"] += ("prefix_groups", "prefix_share")
REGISTRY["max_concurrent_sequences"]["valid"]["prefix_share"] = CONTEXT_OK
# Break-even with prefix-cache hits: shares in [0, 1]; none cached, or a free hit, is valid.
REGISTRY["break_even"]["spoil"] += ("prefix_share", "cached_input_weight")
REGISTRY["break_even"]["valid"].update(prefix_share=CONTEXT_OK, cached_input_weight=CONTEXT_OK)
CACHED_PAYG = rk.PayAsYouGo(3.0, 12.0, cached_input_per_mtok=0.3)
REGISTRY.update({
    "payg_cost_per_request": _entry(
        rk.payg_cost_per_request, kwargs={"payg": CACHED_PAYG, "prompt_tokens": 1000,
                                          "output_tokens": 100, "prefix_share": 0.5},
        spoil=("payg", "prompt_tokens", "output_tokens", "prefix_share"),
        valid={"prompt_tokens": CONTEXT_OK, "output_tokens": CONTEXT_OK,
               "prefix_share": CONTEXT_OK}),
    "cost_per_request": _entry(
        rk.cost_per_request, kwargs={"model": M, "gpu": G, "prompt_tokens": 1000,
                                     "output_tokens": 100, "prefix_share": 0.5},
        spoil=("model", "gpu", "prompt_tokens", "output_tokens", "batch_size", "tp",
               "prefix_share", "hourly_price", "engine"),
        valid={"prefix_share": CONTEXT_OK, "hourly_price": CONTEXT_OK + OPTIONAL,
               "engine": OPTIONAL}),
    "speculative_cost_per_million_tokens": _entry(
        rk.speculative_cost_per_million_tokens,
        kwargs={"model": M, "gpu": G, "draft": 0.05, "acceptance": 0.8},
        spoil=("batch_size", "context_length", "draft", "draft_tokens", "acceptance",
               "hourly_price", "reserve"),
        valid={"context_length": CONTEXT_OK, "draft_tokens": CONTEXT_OK,
               "acceptance": CONTEXT_OK, "hourly_price": CONTEXT_OK + OPTIONAL,
               "reserve": CONTEXT_OK}),
})


@pytest.fixture(scope="module")
def baselines():
    """Arguments the registry leaves to fixtures: a plan, a sweep, measurements."""
    small_plan = rk.plan(TRAFFIC, SLO, models=M, gpus=G, replicates=2, requests=20)
    grid = rk.sweep.sweep(models=["Llama-3.1-8B"], gpus=["H100-SXM-80GB"], tp=[1],
                          context_length=[1024], batch_size=[1, 8])
    return {"plan": small_plan, "sweep": grid}


def _call(name, entry, baselines, spoilt=None, value=None):
    kwargs = dict(entry["kwargs"])
    args = list(entry["args"])
    if entry["label"] == "needs a plan":
        plan = baselines["plan"]
        kwargs = ({"plan": plan} if name == "cheapest_plan" else
                  {"cheapest": rk.cheapest_plan(plan, by=None), "traffic": TRAFFIC,
                   "payg": PAYG})
    if entry["label"] == "needs a sweep":
        kwargs = {"ds": baselines["sweep"]}
    if spoilt is not None:
        kwargs[spoilt] = value
    return entry["func"](*args, **kwargs)


def _has_nan(result):
    if isinstance(result, (xr.Dataset, xr.DataArray)):
        data = result.to_array() if isinstance(result, xr.Dataset) else result
        values = data.values
        return values.dtype.kind == "f" and np.isnan(values).any()
    if isinstance(result, (float, np.floating, np.ndarray)):
        arr = np.asarray(result)
        return arr.dtype.kind == "f" and np.isnan(arr).any()
    return False


def test_every_public_callable_has_an_entry():
    public = {n for n in rk.__all__ if callable(getattr(rk, n))
              and not isinstance(getattr(rk, n), type(rk))}
    assert public == set(REGISTRY), (public ^ set(REGISTRY))


@pytest.mark.parametrize("name", sorted(n for n, e in REGISTRY.items() if not e["label"]
                                        or e["label"] in ("needs a plan", "needs a sweep")))
def test_the_baseline_is_valid(name, baselines):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warnings.simplefilter("ignore", FutureWarning)      # the renamed ITL alias warns
        _call(name, REGISTRY[name], baselines)


#: Hostile values that are legitimate wherever their plain form is: a half-precision infinity
#: where ``inf`` is taken, a boolean spelt as text where any text is.
EQUIVALENT = {"float16 inf": "inf", "string boolean": "string"}


def _legitimate(bad, valid) -> bool:
    return bad in valid or EQUIVALENT.get(bad) in valid


def _cases():
    for name, entry in sorted(REGISTRY.items()):
        if entry["label"] in ("reads a file", "reads a result", "needs measurements"):
            continue
        for arg in entry["spoil"]:
            for bad in BAD:
                if _legitimate(bad, entry["valid"].get(arg, ())):
                    continue
                yield pytest.param(name, arg, bad, id=f"{name}-{arg}-{bad}")


CASES = list(_cases())


def test_the_fuzz_tries_enough_calls():
    assert len(CASES) > 1500


@pytest.mark.parametrize("name, arg, bad", CASES)
def test_bad_input_is_refused_cleanly(name, arg, bad, baselines):
    entry = REGISTRY[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warnings.simplefilter("ignore", FutureWarning)
        try:
            result = _call(name, entry, baselines, arg, BAD[bad])
        except (ValueError, TypeError):
            return
    assert not _has_nan(result), f"{name}({arg}={bad!r}) returned NaN"
    if bad not in SHAPES:
        pytest.fail(f"{name}({arg}={BAD[bad]!r}) was accepted")


# -- the engine benchmark readers of rooflinekit.calibrate (outside rooflinekit.__all__) -----------

from pathlib import Path

_OUTPUTS = Path(__file__).parent / "data" / "engine_outputs"
_WHERE = {"model": "llama-3.1-8b", "gpu": "H100-SXM-80GB"}
_TEXT_OK = ("string",)         # "3" is a name like any other, or a path (absent: OSError)
READER_REGISTRY = {
    "read_vllm_latency": _entry(
        rk.calibrate.read_vllm_latency,
        kwargs={**_WHERE, "result": _OUTPUTS / "vllm_latency_b8_in1024_out128.json",
                "batch_size": 8, "prompt_tokens": 1024, "output_tokens": 128, "ttft_ms": 195.0},
        spoil=("model", "gpu", "tp", "batch_size", "prompt_tokens", "output_tokens", "ttft_ms",
               "dtype", "kv_dtype", "statistic", "engine", "source", "result", "prefill"),
        valid={"model": _TEXT_OK, "gpu": _TEXT_OK, "engine": _TEXT_OK + OPTIONAL,
               "source": _TEXT_OK + OPTIONAL, "dtype": OPTIONAL, "kv_dtype": OPTIONAL,
               "ttft_ms": CONTEXT_OK, "prefill": OPTIONAL + _TEXT_OK, "result": _TEXT_OK}),
    "read_guidellm_report": _entry(
        rk.calibrate.read_guidellm_report,
        kwargs={**_WHERE, "report": _OUTPUTS / "guidellm_report.json"},
        spoil=("model", "gpu", "tp", "dtype", "kv_dtype", "engine", "source", "statistic",
               "report"),
        valid={"model": _TEXT_OK, "gpu": _TEXT_OK, "engine": _TEXT_OK + OPTIONAL,
               "source": _TEXT_OK + OPTIONAL, "dtype": OPTIONAL, "kv_dtype": OPTIONAL,
               "report": _TEXT_OK}),
    "read_trtllm_bench": _entry(
        rk.calibrate.read_trtllm_bench,
        kwargs={**_WHERE, "report": _OUTPUTS / "trtllm_bench_report.json"},
        spoil=("model", "gpu", "tp", "dtype", "kv_dtype", "engine", "source", "statistic",
               "report"),
        valid={"model": _TEXT_OK, "gpu": _TEXT_OK, "engine": _TEXT_OK + OPTIONAL,
               "source": _TEXT_OK + OPTIONAL, "dtype": OPTIONAL, "kv_dtype": OPTIONAL,
               "tp": OPTIONAL, "report": _TEXT_OK}),
    "recorded_model": _entry(rk.calibrate.recorded_model,
                             kwargs={"result": _OUTPUTS / "trtllm_bench_report.json"},
                             spoil=("result",), valid={"result": _TEXT_OK}),
    "parse_sglang_kv_log": _entry(rk.calibrate.parse_sglang_kv_log,
                                  kwargs={"text": "max_total_num_tokens=10, context_len=4"},
                                  spoil=("text",), valid={"text": _TEXT_OK}),
}
READER_CASES = [pytest.param(name, arg, bad, id=f"{name}-{arg}-{bad}")
                for name, entry in sorted(READER_REGISTRY.items()) for arg in entry["spoil"]
                for bad in BAD if not _legitimate(bad, entry["valid"].get(arg, ()))]


@pytest.mark.parametrize("name", sorted(READER_REGISTRY))
def test_the_reader_baseline_is_valid(name):
    _call(name, READER_REGISTRY[name], None)


@pytest.mark.parametrize("name, arg, bad", READER_CASES)
def test_readers_refuse_bad_arguments_cleanly(name, arg, bad):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            _call(name, READER_REGISTRY[name], None, arg, BAD[bad])
        except (ValueError, TypeError):
            return
    pytest.fail(f"{name}({arg}={BAD[bad]!r}) was accepted")


# -- the speculative draws of rooflinekit.workloads and the gains run_replicates reads -----------

from rooflinekit.batching import Speculative, run_replicates
from rooflinekit.workloads import speculative_draws, speculative_gains

_SPEC_BATCHER = rk.ContinuousBatcher(max_num_seqs=2, kv_budget_tokens=100,
                                     speculative=Speculative(draft=0.05, draft_tokens=3))
_ROWS = {"arrival": np.array([[0.0, 1.0]]), "prompt_tokens": np.array([[4, 2]]),
         "output_tokens": np.array([[3, 5]])}
#: as_generator takes None (fresh entropy) and an int seed, 0 and True (1) among them, of any
#: size (numpy's SeedSequence takes integers of any length)
_SEEDS_OK = ("zero", "none", "true", "integer beyond float")
#: no requests, or requests of whole-valued floats, are outputs like any other
_OUTPUTS_OK = ("empty list", "empty array", "clashing DataArray")
SPECULATIVE_REGISTRY = {
    name: _entry(func, kwargs={"rng": 0, "output_tokens": [3, 5], "draft_tokens": 4,
                               "acceptance": 0.8},
                 spoil=("rng", "output_tokens", "draft_tokens", "acceptance"),
                 valid={"rng": _SEEDS_OK, "output_tokens": _OUTPUTS_OK, "acceptance": ("zero",)})
    for name, func in (("speculative_draws", speculative_draws),
                       ("speculative_gains", speculative_gains))
}
SPECULATIVE_REGISTRY["run_replicates(speculative_gains=)"] = _entry(
    run_replicates, args=(_SPEC_BATCHER,),
    kwargs={**_ROWS, "speculative_gains": _SPEC_BATCHER.speculative.gains(
        _ROWS["output_tokens"], [_SPEC_BATCHER.speculative.row_seed(0)])},
    spoil=("speculative_gains",), valid={"speculative_gains": OPTIONAL})
SPECULATIVE_CASES = [pytest.param(name, arg, bad, id=f"{name}-{arg}-{bad}")
                     for name, entry in sorted(SPECULATIVE_REGISTRY.items())
                     for arg in entry["spoil"] for bad in BAD
                     if not _legitimate(bad, entry["valid"].get(arg, ()))]


@pytest.mark.parametrize("name", sorted(SPECULATIVE_REGISTRY))
def test_the_speculative_baseline_is_valid(name):
    _call(name, SPECULATIVE_REGISTRY[name], None)


@pytest.mark.parametrize("name, arg, bad", SPECULATIVE_CASES)
def test_speculative_draws_refuse_bad_arguments_cleanly(name, arg, bad):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            _call(name, SPECULATIVE_REGISTRY[name], None, arg, BAD[bad])
        except (ValueError, TypeError):
            return
    pytest.fail(f"{name}({arg}={BAD[bad]!r}) was accepted")


#: The engine fields the step formulas read and the values of BAD each legitimately takes.
ENGINE_OPTION_VALID = {"layer_overhead": ("zero",), "kv_bandwidth_efficiency": ("none",),
                       "gemm_half_tokens": ("zero",), "prefill_overhead": ("zero",),
                       "interconnect_efficiency": ()}


ENGINE_OPTION_FUNCS = pytest.mark.parametrize(
    "func", [rk.decode_step_time, rk.prefill_time, rk.roofline.step_cost_coefficients],
    ids=["decode_step_time", "prefill_time", "step_cost_coefficients"])


@ENGINE_OPTION_FUNCS
@pytest.mark.parametrize("option, bad", [(o, b) for o in sorted(ENGINE_OPTION_VALID)
                                         for b in sorted(BAD) if b not in ENGINE_OPTION_VALID[o]])
def test_engine_options_refuse_bad_input_cleanly(func, option, bad):
    # refused where the Engine is built, or (an array of valid numbers) by the formula's
    # broadcasting: never a NaN, never a warning
    args = (M, G, 100) if func is rk.prefill_time else (M, G)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            result = func(*args, engine=rk.Engine(**{option: BAD[bad]}))
        except (ValueError, TypeError):
            return
    assert func is not rk.roofline.step_cost_coefficients, f"{option}={bad!r} was accepted"
    assert not _has_nan(result), f"{func.__name__}({option}={bad!r}) returned NaN"
    if bad not in SHAPES:
        pytest.fail(f"{func.__name__}({option}={BAD[bad]!r}) was accepted")


@ENGINE_OPTION_FUNCS
@pytest.mark.parametrize("option, value", [(o, v) for o in sorted(ENGINE_OPTION_VALID)
                                           for v in ENGINE_OPTION_VALID[o]])
def test_engine_options_take_their_valid_values(func, option, value):
    # the values of BAD a field legitimately takes (a zero overhead, no separate KV
    # efficiency) are accepted and give the ideal answer here
    args = (M, G, 100) if func is rk.prefill_time else (M, G)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        result = func(*args, engine=rk.Engine(**{option: BAD[value]}))
    values = np.asarray(tuple(result) if func is rk.roofline.step_cost_coefficients else result,
                        dtype=float)
    # (the coefficients hold inf where a quantity is unbounded: no sliding window, say)
    assert not np.any(np.isnan(values)), f"{func.__name__}({option}={BAD[value]!r})"
    assert np.array_equal(values, np.asarray(
        tuple(func(*args)) if func is rk.roofline.step_cost_coefficients else func(*args),
        dtype=float))


#: Layout degrees of a continuous batcher beyond tp (a MoE model, so ep is meaningful there).
LAYOUT_BATCHER = _entry(rk.ContinuousBatcher,
                        kwargs={"model": "Mixtral-8x7B", "gpu": "H100-SXM-80GB", "tp": 2},
                        spoil=("pp", "ep"))


@pytest.mark.parametrize("arg", LAYOUT_BATCHER["spoil"])
@pytest.mark.parametrize("bad", sorted(BAD))
def test_bad_layout_degrees_are_refused_cleanly(arg, bad):
    with pytest.raises((ValueError, TypeError)):
        _call("ContinuousBatcher", LAYOUT_BATCHER, {}, arg, BAD[bad])


# -- compile_kernels (rooflinekit.batching, outside rooflinekit.__all__) --------------------------

#: Its baseline compiles nothing (conftest.py filled the cache); an empty family list is valid.
PRECOMPILE = _entry(rk.batching.compile_kernels, kwargs={"families": ("static",)},
                    spoil=("families", "processes"),
                    valid={"families": ("empty list", "empty array"), "processes": OPTIONAL})


@pytest.mark.parametrize("arg, bad", [(arg, bad) for arg in PRECOMPILE["spoil"] for bad in BAD
                                      if bad not in PRECOMPILE["valid"].get(arg, ())])
def test_compile_kernels_refuses_bad_arguments_cleanly(arg, bad):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises((ValueError, TypeError)):
            _call("compile_kernels", PRECOMPILE, None, arg, BAD[bad])


def test_compile_kernels_baseline_and_valid_values():
    assert _call("compile_kernels", PRECOMPILE, None) == ()
    for arg, names in PRECOMPILE["valid"].items():
        for name in names:
            assert _call("compile_kernels", PRECOMPILE, None, arg, BAD[name]) == ()


# -- vllm_block_size (rooflinekit.batching, outside rooflinekit.__all__) ------------------------

HYBRID_BLOCK = _entry(rk.batching.vllm_block_size,
                      kwargs={"model": rk.catalog.model("Qwen3-Next-80B-A3B"), "gpu": G},
                      spoil=("model", "gpu", "tp", "block_size", "block_alignment"))
# vLLM's KV-cache groups of a hybrid (rooflinekit.memory, outside rooflinekit.__all__)
HYBRID_GROUPS = _entry(rk.memory.vllm_kv_cache_groups,
                       kwargs={"model": rk.catalog.model("Qwen3-Next-80B-A3B")},
                       spoil=("model", "draft_layers"), valid={"draft_layers": CONTEXT_OK})
# how a paged engine holds a sliding-window model's KV (rooflinekit.batching)
KV_WINDOW = _entry(rk.batching.replica_kv_window, kwargs={"model": rk.catalog.model("gpt-oss-20b")},
                   spoil=("model", "block_size", "pool"))
KV_WINDOW_TEXT = _entry(rk.batching.kv_window_text,
                        kwargs={"model": rk.catalog.model("gpt-oss-20b")},
                        spoil=("model", "block_size", "pool"))
# the block vLLM's first-choice MLA kernel takes (rooflinekit.memory)
MLA_BLOCK = _entry(rk.memory.vllm_attention_block,
                   kwargs={"model": rk.catalog.model("DeepSeek-R1"), "gpu": rk.catalog.gpu("B200")},
                   spoil=("model", "gpu", "block_size"))
# whether vLLM has an attention kernel for the model on the GPU (rooflinekit.profiles)
NO_KERNEL = _entry(rk.profiles.missing_attention_kernel,
                   kwargs={"engine": "vllm", "model": rk.catalog.model("DeepSeek-V3.2"),
                           "gpu": rk.catalog.gpu("A100-SXM-80GB")},
                   spoil=("engine", "model", "gpu"),
                   valid={"engine": ("none", "string", "string boolean")})
# the ShareGPT benchmark sample's lengths (rooflinekit.workloads)
SHAREGPT = _entry(rk.workloads.sharegpt_lengths,
                  kwargs={"prompt_mean": 500.0, "output_mean": 200.0, "requests": 100},
                  spoil=("prompt_mean", "output_mean", "requests", "replay"),
                  valid={"prompt_mean": OPTIONAL, "output_mean": OPTIONAL, "requests": OPTIONAL,
                         "replay": ("true",)})
# requests' lengths scaled to means (rooflinekit.workloads)
SCALED = _entry(rk.workloads.scaled_lengths,
                kwargs={"prompts": [100, 300], "outputs": [0, 10], "prompt_mean": 250.0,
                        "output_mean": 11.0},
                spoil=("prompts", "outputs", "prompt_mean", "output_mean"),
                # a DataArray of lengths is lengths, whatever its dimension
                valid={"prompts": ("clashing DataArray",), "outputs": ("clashing DataArray",),
                       "prompt_mean": OPTIONAL, "output_mean": OPTIONAL})
# a length distribution's mean (rooflinekit.workloads); 0 tokens is a constant length
EXPECTED = _entry(rk.workloads.expected_tokens,
                  kwargs={"lengths": rk.workloads.LogNormal(200, 0.5), "at_least": 1},
                  spoil=("lengths", "at_least"),
                  valid={"lengths": CONTEXT_OK, "at_least": CONTEXT_OK})
#: Callables of the folders, outside rooflinekit.__all__, fuzzed alike.
FOLDER_ENTRIES = {"vllm_block_size": HYBRID_BLOCK, "vllm_kv_cache_groups": HYBRID_GROUPS,
                  "replica_kv_window": KV_WINDOW, "kv_window_text": KV_WINDOW_TEXT,
                  "vllm_attention_block": MLA_BLOCK, "missing_attention_kernel": NO_KERNEL,
                  "sharegpt_lengths": SHAREGPT, "scaled_lengths": SCALED,
                  "expected_tokens": EXPECTED}


@pytest.mark.parametrize("name, arg, bad", [
    (name, arg, bad) for name, entry in FOLDER_ENTRIES.items() for arg in entry["spoil"]
    for bad in BAD if bad not in entry["valid"].get(arg, ())])
def test_folder_callables_refuse_bad_arguments_cleanly(name, arg, bad):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises((ValueError, TypeError)):
            _call(name, FOLDER_ENTRIES[name], None, arg, BAD[bad])


# -- host_scheduling (rooflinekit.profiles, outside rooflinekit.__all__) ------------------------

HOST_SCHEDULING = _entry(rk.profiles.host_scheduling, spoil=("engine",))


@pytest.mark.parametrize("bad", list(BAD))
def test_host_scheduling_refuses_bad_arguments_cleanly(bad):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises((ValueError, TypeError)):
            _call("host_scheduling", HOST_SCHEDULING, None, "engine", BAD[bad])
        with pytest.raises((ValueError, TypeError)):
            rk.profiles.split_engine_name(BAD[bad])
        assert not rk.profiles.is_engine_name(BAD[bad])
        assert rk.profiles.profiled_engine(BAD[bad]) is None


# -- scheduler_admission (rooflinekit.profiles, outside rooflinekit.__all__) --------------------

#: "auto" reads the engine's rule for the GPU, so a spoilt GPU is reached; any engine that names
#: no shipped engine schedules as vLLM (by design), so the engine is not spoilt.
ADMISSION = _entry(rk.profiles.scheduler_admission,
                   kwargs={"admission": "auto", "engine": "trtllm", "gpu": G},
                   spoil=("admission", "gpu"))


@pytest.mark.parametrize("arg, bad", [(arg, bad) for arg in ADMISSION["spoil"] for bad in BAD])
def test_scheduler_admission_refuses_bad_arguments_cleanly(arg, bad):
    assert _call("scheduler_admission", ADMISSION, None) == "reserve"
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises((ValueError, TypeError)):
            _call("scheduler_admission", ADMISSION, None, arg, BAD[bad])


# -- older_than_scheduler (rooflinekit.profiles, outside rooflinekit.__all__) -------------------

#: A version older than the defaults' since_version reads the defaults for the GPU, so a spoilt
#: GPU is reached; an engine that names no version is no older (None, by design): not spoilt.
OLDER = _entry(rk.profiles.older_than_scheduler, kwargs={"engine": "vllm@0.6.0", "gpu": G},
               spoil=("gpu",))


@pytest.mark.parametrize("bad", list(BAD))
def test_older_than_scheduler_refuses_a_bad_gpu_cleanly(bad):
    assert "vllm 0.6.0 is older" in _call("older_than_scheduler", OLDER, None)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises((ValueError, TypeError)):
            _call("older_than_scheduler", OLDER, None, "gpu", BAD[bad])


# -- default_share, counts_cuda_graphs (rooflinekit.profiles, outside rooflinekit.__all__) ------

#: None is the bound, a legitimate held_by (vLLM 0.19.0's 0.9, no graphs), and a legitimate
#: model (the release's rule alone).
RELEASE_RULES = {
    "default_share": _entry(rk.profiles.default_share, kwargs={"held_by": "vllm@0.29.0"},
                            spoil=("held_by",), valid={"held_by": OPTIONAL}),
    "counts_cuda_graphs": _entry(rk.profiles.counts_cuda_graphs,
                                 kwargs={"held_by": "vllm@0.29.0",
                                         "model": rk.catalog.model("Llama-3.1-8B")},
                                 spoil=("held_by", "model"),
                                 valid={"held_by": OPTIONAL, "model": OPTIONAL}),
}


@pytest.mark.parametrize("name, arg, bad", [
    (name, arg, bad) for name, entry in RELEASE_RULES.items() for arg in entry["spoil"]
    for bad in BAD if bad not in entry["valid"].get(arg, ())])
def test_the_release_memory_rules_refuse_bad_arguments_cleanly(name, arg, bad):
    entry = RELEASE_RULES[name]
    assert _call(name, entry, None) in (0.92, True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises((ValueError, TypeError)):
            _call(name, entry, None, arg, BAD[bad])


# -- issue 30: no default pay-as-you-go price ------------------------------------------------------

# decision_table(payg=None) is the table without a pay-as-you-go row: a legitimate call.
REGISTRY["decision_table"]["valid"] = {**REGISTRY["decision_table"]["valid"],
                                       "payg": OPTIONAL}
# CASES was drawn from the registry above, before this entry changed: drop the one case it
# makes legitimate (pytest reads the list at collection, after the module has run).
CASES[:] = [case for case in CASES if case.id != "decision_table-payg-none"]


# -- issue 30: the month's profile, the decision's options and its flip points -------------------

from rooflinekit.planning import read_profile as planning_read_profile  # noqa: E402
from rooflinekit.planning.traffic import profile_period  # noqa: E402

#: A month of 730 hours at 2 requests/s (7,200 requests an hour): the autoscaled fleet's input.
_MONTH = rk.Traffic(2.0, 200, 20, profile=np.full(730, 7200.0))
MONTH_REGISTRY = {
    "month_profile": _entry(rk.planning.month_profile, args=("business-hours", 2.0),
                            spoil=("shape", "peak_rate", "start_hour", "end_hour", "workdays",
                                   "off_peak", "peak_hour"),
                            valid={"start_hour": CONTEXT_OK, "off_peak": CONTEXT_OK,
                                   "peak_hour": CONTEXT_OK}),
    "profile_period": _entry(profile_period, kwargs={"period": "15min"}, spoil=("period",)),
    # with the month's traffic and a fleet to scale (baselines: a plan); the option objects
    "decision_table(autoscale=)": _entry(
        rk.decision_table, kwargs={"autoscale": True},
        spoil=("autoscale", "min_replicas", "unit_increment", "provisioned", "compliance",
               "region"),
        valid={"provisioned": OPTIONAL, "compliance": OPTIONAL, "region": OPTIONAL + ("string",),
               "autoscale": ("true",)}, label="needs a plan"),
    "plot_decision_flips": _entry(rk.plotting.plot_decision_flips, spoil=("table", "ax"),
                                  valid={"ax": OPTIONAL}, label="needs a plan"),
}
MONTH_CASES = [pytest.param(name, arg, bad, id=f"{name}-{arg}-{bad}")
               for name, entry in sorted(MONTH_REGISTRY.items()) for arg in entry["spoil"]
               for bad in BAD if not _legitimate(bad, entry["valid"].get(arg, ()))]


def _call_month(name, baselines, spoilt=None, value=None):
    entry = MONTH_REGISTRY[name]
    kwargs = dict(entry["kwargs"])
    if entry["label"] == "needs a plan":
        cheapest = rk.cheapest_plan(baselines["plan"], by=None)
        if name == "plot_decision_flips":
            kwargs = {"table": rk.decision_table(cheapest, _MONTH, payg=PAYG)}
        else:
            kwargs.update({"cheapest": cheapest, "traffic": _MONTH, "payg": PAYG})
    if spoilt is not None:
        kwargs[spoilt] = value
    return entry["func"](*entry["args"], **kwargs)


@pytest.mark.parametrize("name", sorted(MONTH_REGISTRY))
def test_the_month_baseline_is_valid(name, baselines):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        _call_month(name, baselines)


@pytest.mark.parametrize("name, arg, bad", MONTH_CASES)
def test_the_month_refuses_bad_arguments_cleanly(name, arg, bad, baselines):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            result = _call_month(name, baselines, arg, BAD[bad])
        except (ValueError, TypeError):
            return
    assert not _has_nan(result), f"{name}({arg}={bad!r}) returned NaN"
    if bad not in SHAPES:
        pytest.fail(f"{name}({arg}={BAD[bad]!r}) was accepted")


def test_read_profile_refuses_a_bad_period_cleanly(tmp_path):
    path = tmp_path / "day.csv"
    path.write_text("rate\n" + "1\n" * 24)
    assert planning_read_profile(path, period=None).shape == (730,)
    for bad in BAD:
        if _legitimate(bad, OPTIONAL):           # period=None: an hour, the default
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            with pytest.raises((ValueError, TypeError)):
                planning_read_profile(path, period=BAD[bad])


# -- a closed-loop client: run_replicates(closed_loop=) and load_curve(concurrencies=) --------

from rooflinekit.planning import load_curve

CLOSED_REGISTRY = {
    "run_replicates(closed_loop=)": _entry(
        run_replicates, args=(rk.ContinuousBatcher(max_num_seqs=2),),
        kwargs={**_ROWS, "closed_loop": True},
        spoil=("closed_loop", "clients", "arrived_kv_tokens"),
        valid={"closed_loop": ("true",), "clients": OPTIONAL, "arrived_kv_tokens": OPTIONAL}),
    "load_curve(concurrencies=)": _entry(
        load_curve, args=(TRAFFIC, rk.SLO(ttft=1.0)),
        kwargs={"model": "Llama-3.1-8B", "gpu": "H100-SXM-80GB", "concurrencies": [2],
                "replicates": 1, "requests": 10},
        spoil=("concurrencies", "recv_interval", "pp", "ep", "cached_prompts",
               "stream_interval", "num_scheduler_steps"),
        # a labelled array of whole numbers is a list of concurrencies like any other; no
        # cached prompt is the default
        valid={"concurrencies": ("clashing DataArray",), "cached_prompts": ("zero",)}),
}
CLOSED_CASES = [pytest.param(name, arg, bad, id=f"{name}-{arg}-{bad}")
                for name, entry in sorted(CLOSED_REGISTRY.items())
                for arg in entry["spoil"] for bad in BAD
                if not _legitimate(bad, entry["valid"].get(arg, ()))]


@pytest.mark.parametrize("name", sorted(CLOSED_REGISTRY))
def test_the_closed_loop_baseline_is_valid(name):
    _call(name, CLOSED_REGISTRY[name], None)


@pytest.mark.parametrize("name, arg, bad", CLOSED_CASES)
def test_a_closed_loop_refuses_bad_arguments_cleanly(name, arg, bad):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            _call(name, CLOSED_REGISTRY[name], None, arg, BAD[bad])
        except (ValueError, TypeError):
            return
    pytest.fail(f"{name}({arg}={BAD[bad]!r}) was accepted")
