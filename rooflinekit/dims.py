"""Dimension names: the glossary every labelled output of rooflinekit uses.

Each name is both the xarray dimension and, where one exists, the coordinate holding its labels.
Functions name their outputs' dimensions from this module only, so a model catalogue, a GPU
catalogue and a grid of context lengths broadcast against each other by name.
"""

from __future__ import annotations

__all__ = [
    "MODEL", "GPU", "TP", "PP", "EP", "CONTEXT_LENGTH", "BATCH_SIZE", "PROMPT_TOKENS", "OUTPUT_TOKENS",
    "OUTPUT_FRACTION", "UTILIZATION", "MONTHLY_TOKENS", "REPLICATE", "REQUEST", "QUANTILE",
    "MAX_NUM_SEQS", "MAX_NUM_BATCHED_TOKENS", "OPTION", "REQUEST_RATE", "CONCURRENCY",
    "DRAFT_TOKENS",
    "ACCEPTANCE", "PREFIX_SHARE", "GLOSSARY",
]

MODEL = "model"
GPU = "gpu"
TP = "tp"
PP = "pp"
EP = "ep"
CONTEXT_LENGTH = "context_length"
BATCH_SIZE = "batch_size"
PROMPT_TOKENS = "prompt_tokens"
OUTPUT_TOKENS = "output_tokens"
OUTPUT_FRACTION = "output_fraction"
UTILIZATION = "utilization"
MONTHLY_TOKENS = "monthly_tokens"
REPLICATE = "replicate"
REQUEST = "request"
QUANTILE = "quantile"
MAX_NUM_SEQS = "max_num_seqs"
MAX_NUM_BATCHED_TOKENS = "max_num_batched_tokens"
OPTION = "option"
REQUEST_RATE = "request_rate"
CONCURRENCY = "concurrency"
DRAFT_TOKENS = "draft_tokens"
ACCEPTANCE = "acceptance"
PREFIX_SHARE = "prefix_share"

#: What each dimension means and the unit of its coordinate.
GLOSSARY: dict[str, str] = {
    MODEL: "model architecture, labelled by catalogue name",
    GPU: "accelerator type, labelled by catalogue name",
    TP: "tensor-parallel degree: GPUs holding one replica of the model [1]",
    PP: "pipeline-parallel degree: stages of equal layers, one after another [1]",
    EP: "expert-parallel degree: GPUs a stage's routed experts are spread over [1]",
    CONTEXT_LENGTH: "tokens held in a sequence's KV cache (prompt plus generated) [tokens]",
    BATCH_SIZE: "sequences decoded together in one step [1]",
    PROMPT_TOKENS: "tokens in a request's prompt, processed by prefill [tokens]",
    OUTPUT_TOKENS: "tokens a request generates, one decode step each [tokens]",
    OUTPUT_FRACTION: "share of billed tokens that are output tokens, f in [0, 1] [1]",
    UTILIZATION: "share of dedicated capacity actually used, in [0, 1] [1]",
    MONTHLY_TOKENS: "tokens served in a month [tokens]",
    REPLICATE: "Monte Carlo replicate index [1]",
    REQUEST: "request index within a simulated workload [1]",
    QUANTILE: "demand quantile, in [0, 1] [1]",
    MAX_NUM_SEQS: "most sequences one replica's batch holds (vLLM's --max-num-seqs) [1]",
    MAX_NUM_BATCHED_TOKENS: "per-step token budget of chunked prefill (vLLM's "
                            "--max-num-batched-tokens) [tokens]",
    REQUEST_RATE: "arrival rate of requests [requests/s]",
    CONCURRENCY: "requests a closed-loop client keeps in flight, sending the next as one "
                 "completes (vllm bench serve's --max-concurrency) [1]",
    DRAFT_TOKENS: "tokens drafted per speculative step, k (vLLM's --num-speculative-tokens) "
                  "[tokens]",
    ACCEPTANCE: "probability the target accepts a drafted token, alpha in [0, 1] [1]",
    PREFIX_SHARE: "share of each prompt that is a shared prefix served from the prefix cache, "
                  "in [0, 1] [1]",
    OPTION: "a way to buy the capacity: self-hosted, pay-as-you-go, provisioned, ...",
}
