"""vLLM's start-up KV-cache log beside our engine-style KV budget.

:func:`parse_vllm_kv_log` reads vLLM's memory-profiling and KV-cache start-up lines;
:func:`compare_engine_log` holds :func:`rooflinekit.memory.engine_kv_cache` next to them, so the
weight model and the block arithmetic can be checked against a real engine.

References
----------
.. [1] vLLM ``vllm/v1/core/kv_cache_utils.py`` (KV cache log lines).
"""

from __future__ import annotations

import re

from rooflinekit._validation import (MAX_COUNT, MAX_MAGNITUDE, check_one_of, check_string,
                                      check_type, show)
from rooflinekit import units
from rooflinekit.hardware import GPU
from rooflinekit.memory import engine_kv_cache
from rooflinekit.models import ModelShape

__all__ = ["parse_vllm_kv_log", "compare_engine_log"]

_NUM = r"([0-9][0-9,]*(?:\.[0-9]+)?)"
_LOG_PATTERNS = (
    ("total_gpu_memory", rf"total_gpu_memory[=\s:]+{_NUM}\s*GiB", units.GiB),
    ("gpu_memory_utilization", rf"gpu_memory_utilization[=\s:]+{_NUM}", 1.0),
    ("weights", rf"model weights take\s+{_NUM}\s*GiB", units.GiB),
    # vLLM's "Loading model weights took X GB" divides by 2**30: it is GiB despite the label
    ("weights", rf"(?:Loading model weights took|Model loading took)\s+{_NUM}\s*Gi?B", units.GiB),
    ("non_torch", rf"non_torch_memory(?: takes)?[=\s:]+{_NUM}\s*GiB", units.GiB),
    ("activation_peak", rf"PyTorch activation peak memory(?: takes)?[=\s:]+{_NUM}\s*GiB",
     units.GiB),
    ("peak_torch", rf"peak_torch_memory[=\s:]+{_NUM}\s*GiB", units.GiB),
    ("available_kv", rf"(?:available_kv_cache_memory|Available KV cache memory:|kv_cache_size=|"
                     rf"memory reserved for KV Cache is)\s*{_NUM}\s*GiB", units.GiB),
    ("num_blocks", rf"(?<![A-Za-z])GPU blocks:\s*{_NUM}", 1.0),
    ("kv_cache_tokens", rf"GPU KV cache size:\s*{_NUM}\s*tokens", 1.0),
    ("max_model_len", rf"Maximum concurrency for\s*{_NUM}\s*tokens per request", 1.0),
    ("max_concurrency", rf"tokens per request:\s*{_NUM}\s*x", 1.0),
)


def parse_vllm_kv_log(text: str) -> dict:
    """Read vLLM's memory-profiling and KV-cache start-up lines.

    Parameters
    ----------
    text : str
        Log text (any amount; the last occurrence of each figure wins).

    Returns
    -------
    dict
        The figures found, in SI units: ``total_gpu_memory``, ``weights``, ``non_torch``,
        ``activation_peak``, ``peak_torch``, ``available_kv`` [bytes] (from the GiB the log
        prints), ``gpu_memory_utilization`` [1], ``num_blocks``, ``kv_cache_tokens``,
        ``max_model_len`` [tokens] and ``max_concurrency`` [1]. Absent figures are absent keys.

    Notes
    -----
    Covers the V0 engine's one-line ``Memory profiling results: total_gpu_memory=...`` and
    ``# GPU blocks: N``, the multi-line profile of vLLM 0.6.5+ ("model weights take ...",
    "PyTorch activation peak memory ..."), and the V1 lines ``Available KV cache memory: X GiB``,
    ``GPU KV cache size: N tokens`` and ``Maximum concurrency for L tokens per request: Xx``.
    The log rounds GiB to two decimals, so figures derived from them carry ±0.005 GiB.
    """
    check_string("text", text, allow_empty=True)
    found = {}
    for key, pattern, factor in _LOG_PATTERNS:
        matches = re.findall(pattern, text)
        if matches:
            value = float(matches[-1].replace(",", "")) * factor
            # a figure no engine prints (a corrupt or hostile log) would overflow the arithmetic
            if not value <= MAX_MAGNITUDE:
                raise ValueError(f"text: the log's {key} figure must be at most "
                                 f"{MAX_MAGNITUDE:g}; got {matches[-1][:40]}"
                                 f"{'...' if len(matches[-1]) > 40 else ''}")
            found[key] = value
    for key in ("num_blocks", "kv_cache_tokens", "max_model_len"):
        if key in found:
            if found[key] > MAX_COUNT:
                raise ValueError(f"text: the log's {key} figure must be at most 2**53 = "
                                 f"{MAX_COUNT:,}; got {show(found[key])}")
            found[key] = int(found[key])
    return found


def compare_engine_log(model: ModelShape, log, *, tp: int = 1, block_size: int = 16,
                       max_model_len: int | None = None, weights: str = "model") -> dict:
    """Our engine-style KV budget (:func:`rooflinekit.memory.engine_kv_cache`) beside vLLM's log.

    Parameters
    ----------
    model : ModelShape
        The served model (weights and KV format as served).
    log : str or mapping
        The start-up log text, or the dict :func:`parse_vllm_kv_log` returns.
    tp : int
        Tensor-parallel degree; vLLM logs one rank. Default 1.
    block_size : int
        KV block size in tokens (vLLM's ``--block-size``, default 16).
    max_model_len : int, optional
        Tokens per request for the concurrency figure; default the one the log names.
    weights : {"model", "logged"}
        Whose weight bytes to subtract in "profile" mode: ours (``model.weight_bytes / tp``,
        default, so our weight model is under test too) or the engine's logged figure (isolates
        the block arithmetic). The two differ by the buffers an engine loads beside the
        parameters.

    Returns
    -------
    dict
        ``ours`` and ``engine``: dicts of ``weights_bytes`` (per GPU), ``available_bytes``,
        ``num_blocks``, ``kv_cache_tokens`` and ``max_concurrency`` (engine keys only where the
        log has them); ``bytes_per_block`` (ours, per GPU);
        ``inputs``: the figures fed to ``engine_kv_cache``; ``mode``: ``"profile"`` when total
        memory, utilisation and the profiled components were logged (our weights replace the
        logged ones, so the weight model is under test too), or ``"available"`` when only the
        available KV memory was (then it is the input, and the block arithmetic is what is
        compared).

    Raises
    ------
    ValueError
        If the log has neither a memory profile nor an available-KV figure, or no
        ``max_model_len`` is known.
    """

    check_type("model", model, ModelShape)
    found = parse_vllm_kv_log(log) if isinstance(log, str) else dict(log)
    if max_model_len is None:
        max_model_len = found.get("max_model_len")
    if max_model_len is None:
        raise ValueError("max_model_len is unknown: the log has no 'Maximum concurrency for L "
                         "tokens per request' line; pass max_model_len=")
    check_one_of("weights", weights, ("model", "logged"))
    ours_weights = model.weight_bytes / tp
    if {"total_gpu_memory", "gpu_memory_utilization"} <= set(found) and (
            "activation_peak" in found or ("peak_torch" in found and "weights" in found)):
        activation = found.get("activation_peak")
        if activation is None:
            # V0 logs peak torch memory, which holds the (logged) weights plus activations
            activation = max(found["peak_torch"] - found["weights"], 0.0)
        if weights == "logged":
            if "weights" not in found:
                raise ValueError("weights='logged' needs the log's model weights line")
            # engine_kv_cache subtracts our weights; carry the engine's extra bytes as activation
            activation = activation + found["weights"] - ours_weights
        inputs = {"total_memory": found["total_gpu_memory"],
                  "gpu_memory_utilization": found["gpu_memory_utilization"],
                  "activation_peak_bytes": activation,
                  "non_torch_bytes": found.get("non_torch", 0.0)}
        mode = "profile"
    elif "available_kv" in found:
        # the only input is what the engine left for KV: a GPU holding exactly that plus weights
        inputs = {"total_memory": found["available_kv"] + ours_weights,
                  "gpu_memory_utilization": 1.0, "activation_peak_bytes": 0.0,
                  "non_torch_bytes": 0.0}
        mode = "available"
    else:
        raise ValueError("the log has neither a memory profile (total_gpu_memory, "
                         "gpu_memory_utilization, activation or peak torch memory) nor an "
                         "available KV cache figure")
    gpu = GPU(name="as logged", memory_bytes=inputs["total_memory"], hbm_bandwidth=1.0,
              peak_flops=1.0)
    ours = engine_kv_cache(model, gpu, tp=tp,
                           gpu_memory_utilization=inputs["gpu_memory_utilization"],
                           activation_peak_bytes=inputs["activation_peak_bytes"],
                           non_torch_bytes=inputs["non_torch_bytes"], block_size=block_size,
                           max_model_len=int(max_model_len))
    engine = {}
    if "available_kv" in found:
        engine["available_bytes"] = found["available_kv"]
    if "num_blocks" in found:
        engine["num_blocks"] = found["num_blocks"]
    if "kv_cache_tokens" in found:
        engine["kv_cache_tokens"] = found["kv_cache_tokens"]
        engine.setdefault("num_blocks", found["kv_cache_tokens"] // block_size)
    elif "num_blocks" in found:
        engine["kv_cache_tokens"] = found["num_blocks"] * block_size
    if "max_concurrency" in found:
        engine["max_concurrency"] = found["max_concurrency"]
    if "weights" in found:
        engine["weights_bytes"] = found["weights"]
    return {"ours": {"weights_bytes": ours_weights,
                     **{k: ours[k] for k in ("available_bytes", "num_blocks", "kv_cache_tokens",
                                             "max_concurrency")}},
            "engine": engine, "inputs": inputs, "mode": mode,
            "max_model_len": int(max_model_len), "bytes_per_block": ours["bytes_per_block"]}
