"""What a serving engine keeps on each GPU beside the weights and the KV cache.

vLLM sizes its KV cache as ``gpu_memory_utilization`` × the memory the driver reports, less the
weights, less the activation peak of a profiling run and the memory that grew outside PyTorch
(:func:`rooflinekit.memory.engine_kv_cache`). :func:`engine_memory` gives those two for a model,
GPU and layout, from the release's figures in ``rooflinekit/data/engine_memory.toml``
(:data:`ENGINE_MEMORY`; fitted to the engine's own start-up logs by
``scripts/fit_engine_memory.py``); :func:`moe_workspace_bytes` is the fused-MoE kernel's share.
Engines without a row (SGLang and TensorRT-LLM, whose memory rules differ) have none.
"""

from __future__ import annotations

import functools
import math
from importlib import resources
from pathlib import Path

from rooflinekit._validation import check_type, read_toml_file, whole_number
from rooflinekit.models import ModelShape
from rooflinekit.roofline import IDEAL
from rooflinekit.profiles import shipped
from rooflinekit.profiles.scheduling import scheduler_defaults, scheduler_engine
from rooflinekit.profiles.shipped import DEFAULT_ENGINE

__all__ = ["ENGINE_MEMORY", "FUSED_MOE_CHUNK_TOKENS", "MOE_ACTIVATION_BYTES",
           "engine_memory", "held_memory", "memory_engine", "moe_workspace_bytes",
           "read_engine_memory_file"]

GIB = 2**30
#: Tokens vLLM's fused-MoE kernel works on at once (``VLLM_FUSED_MOE_CHUNK_SIZE``, default
#: 16 × 1024, ``vllm/envs.py``): a larger step is split, so its working tensors stop growing.
FUSED_MOE_CHUNK_TOKENS = 16 * 1024
#: Bytes of one activation element in the fused-MoE kernel's working tensors (16-bit).
MOE_ACTIVATION_BYTES = 2.0

_NUMBER_FIELDS = ("sampler_bytes_per_logit", "non_torch_gib", "non_torch_parallel_gib",
                  "fit_error_gib", "held_out_error_gib", "held_out_median_error_gib")
_TEXT_FIELDS = ("engine", "version", "date", "source")
_WHAT = "engine memory file"


#: ``_fail(path, where, message, kind=ValueError)``: the error naming this file
_fail = functools.partial(shipped._fail, what=_WHAT)


def read_engine_memory_file(path) -> tuple[dict, ...]:
    """Read and check a file of engine memory figures.

    Parameters
    ----------
    path : str or os.PathLike
        A TOML file of ``[[memory]]`` tables, each with ``engine`` (one of
        :data:`~rooflinekit.profiles.ENGINE_NAMES`, at most one row each), ``version``,
        ``date``, ``source`` and the finite numbers >= 0 ``sampler_bytes_per_logit`` [bytes],
        ``non_torch_gib``, ``non_torch_parallel_gib``, ``fit_error_gib``,
        ``held_out_error_gib`` and ``held_out_median_error_gib`` [GiB].

    Returns
    -------
    tuple of dict
        The rows in file order, checked.

    Raises
    ------
    ValueError, TypeError
        A missing, non-finite or negative field, an unknown field or engine, or an engine given
        twice; the message names the file, the row and the field.
    """
    path = Path(path)
    data = read_toml_file(path, _WHAT)
    rows, seen = [], set()
    for where, row in shipped._tables(path, data, "memory", what=_WHAT):
        out = shipped._engine_row(path, row, where, _TEXT_FIELDS,
                                  (*_NUMBER_FIELDS, *_TEXT_FIELDS), _WHAT)
        if out["engine"] in seen:
            _fail(path, f"{where}.engine", f"{out['engine']!r} has a row already")
        seen.add(out["engine"])
        for field in _NUMBER_FIELDS:
            value = row.get(field)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value) or value < 0:
                _fail(path, f"{where}.{field}", f"must be a finite number >= 0; got {value!r}")
            out[field] = float(value)
        rows.append(out)
    return tuple(rows)


@functools.cache
def _shipped() -> tuple[dict, ...]:
    entry = resources.files("rooflinekit").joinpath("data").joinpath("engine_memory.toml")
    with resources.as_file(entry) as path:
        return read_engine_memory_file(path)


#: The shipped rows (``rooflinekit/data/engine_memory.toml``), one per engine that has one.
ENGINE_MEMORY: tuple[dict, ...] = _shipped()


def moe_workspace_bytes(model, tp=1, max_num_batched_tokens=8192) -> float:
    """Working tensors of vLLM's fused-MoE kernel on one GPU at a step's token budget [bytes].

    Parameters
    ----------
    model : ModelShape
        The model; 0 for a dense one (``n_experts == 1``).
    tp : int
        Tensor-parallel degree, >= 1: each rank holds ``1/tp`` of every expert's intermediate
        width.
    max_num_batched_tokens : int
        The step's token budget [tokens], >= 1 (the profiling run's step).

    Returns
    -------
    float
        Bytes; 0 for a dense model or one whose widths are unknown.

    Notes
    -----
    ``T · k · (max(2 I / tp, H) + I / tp) · b`` with ``T = min(max_num_batched_tokens,``
    :data:`FUSED_MOE_CHUNK_TOKENS` ``)``, ``k`` experts a token, ``I`` an expert's
    intermediate width, ``H`` the hidden width and ``b`` = :data:`MOE_ACTIVATION_BYTES`: the
    kernel's gate-and-up output (``2 I / tp`` a routed token) and its down output (``H``)
    share one buffer, beside the activated product (``I / tp``) [1]. On vLLM 0.19.0's H100
    logs it leaves Qwen3-30B-A3B's, Mixtral-8x7B's and Llama-4-Scout's activation peaks within
    0.1 GiB of the log; gpt-oss's MXFP4 kernels allocate less (0.35 GiB over).

    References
    ----------
    .. [1] vLLM, ``vllm/model_executor/layers/fused_moe/fused_moe.py``
       (``intermediate_cache1/2/3``) and ``vllm/envs.py`` (``VLLM_FUSED_MOE_CHUNK_SIZE``).

    See Also
    --------
    engine_memory : the activation peak this is part of.
    """
    check_type("model", model, ModelShape)
    tp = whole_number("tp", tp, lo=1)
    tokens = whole_number("max_num_batched_tokens", max_num_batched_tokens, lo=1)
    if model.n_experts <= 1 or model.intermediate_size is None or model.hidden_size is None:
        return 0.0           # dense, or widths unknown: nothing to count
    routed = min(tokens, FUSED_MOE_CHUNK_TOKENS) * model.n_experts_per_token
    width = model.intermediate_size / tp
    return float(routed * (max(2.0 * width, model.hidden_size) + width) * MOE_ACTIVATION_BYTES)


def engine_memory(model, gpu, tp=1, *, engine=DEFAULT_ENGINE, max_num_seqs=None,
                  max_num_batched_tokens=None) -> dict:
    """What ``engine`` keeps on each GPU of a tensor-parallel group beside weights and KV.

    Parameters
    ----------
    model : ModelShape
        The model.
    gpu : GPU or catalogue name
        One GPU of the group (its scheduler defaults fill what is not given).
    tp : int
        Tensor-parallel degree, >= 1.
    engine : str
        A serving engine with a row in :data:`ENGINE_MEMORY` (vLLM's today).
    max_num_seqs, max_num_batched_tokens : int, optional
        The engine's sequences and token budget a step, >= 1; default the engine's own for the
        GPU (:func:`~rooflinekit.profiles.scheduler_defaults`).

    Returns
    -------
    dict
        ``activation_peak_bytes`` and ``non_torch_bytes`` [bytes per GPU], the two
        :func:`rooflinekit.memory.engine_kv_cache` subtracts, and the activation peak's parts
        ``sampler_bytes`` and ``moe_workspace_bytes``; ``version`` and ``source`` of the row,
        and its ``held_out_error_bytes`` (the largest error on a logged KV cache with the
        model left out of the fit).

    Raises
    ------
    ValueError, TypeError
        An engine without a row, an unknown GPU, or a count out of range.

    Notes
    -----
    ``activation = s · min(S, T) · V + W_moe`` (:func:`moe_workspace_bytes`), where ``s`` is
    the row's ``sampler_bytes_per_logit``, ``S`` the sequences, ``T`` the token budget and ``V``
    the vocabulary: vLLM's profiling run ends with a dummy sampling step over ``min(S, T)``
    rows of logits, whose sort and softmax copies are the peak on every dense model of its logs
    (the peak is the same at every tensor-parallel degree: each rank samples from the whole
    vocabulary; a model without ``vocab_size`` counts none, and an MoE model without its
    widths no expert buffers). ``non_torch`` is the row's ``non_torch_gib`` at ``tp = 1`` and
    ``non_torch_parallel_gib`` above it (the communicators' buffers). CUDA graphs are captured
    after the KV cache is allocated, in the memory ``gpu_memory_utilization`` leaves, so they
    are not counted.

    References
    ----------
    .. [1] vLLM, ``vllm/v1/worker/gpu_worker.py`` (``determine_available_memory``) and
       ``gpu_model_runner.py`` (``profile_run``, ``_dummy_sampler_run``).
    .. [2] ``tests/data/engine_logs/vllm_memory.csv``: the start-up logs the row is fitted to.

    See Also
    --------
    rooflinekit.memory.engine_kv_cache : the KV cache these leave.
    """
    check_type("model", model, ModelShape)
    rows = {r["engine"]: r for r in ENGINE_MEMORY}
    if not isinstance(engine, str) or engine not in rows:
        raise ValueError(f"engine must be one with a memory row ({', '.join(rows)}); got "
                         f"{engine!r}")
    tp = whole_number("tp", tp, lo=1)
    defaults = scheduler_defaults(engine, gpu)
    seqs = whole_number("max_num_seqs", defaults.max_num_seqs if max_num_seqs is None
                        else max_num_seqs, lo=1)
    tokens = whole_number("max_num_batched_tokens", defaults.max_num_batched_tokens
                          if max_num_batched_tokens is None else max_num_batched_tokens, lo=1)
    row = rows[engine]
    # a model without a vocabulary (the guide's) counts no logits: its peak is understated
    sampler = row["sampler_bytes_per_logit"] * min(seqs, tokens) * (model.vocab_size or 0)
    moe = moe_workspace_bytes(model, tp, tokens)
    non_torch = (row["non_torch_gib"] if tp == 1 else row["non_torch_parallel_gib"]) * GIB
    return {"activation_peak_bytes": sampler + moe, "non_torch_bytes": non_torch,
            "sampler_bytes": sampler, "moe_workspace_bytes": moe,
            "version": row["version"], "source": row["source"],
            "held_out_error_bytes": row["held_out_error_gib"] * GIB}


def memory_engine(engine) -> str | None:
    """The serving engine whose memory outside the KV cache a planning answer takes off each
    GPU, or ``None``.

    Parameters
    ----------
    engine : str, Engine, Calibration or None
        A planner's ``engine=`` argument.

    Returns
    -------
    str or None
        The engine whose scheduler the answer runs
        (:func:`~rooflinekit.profiles.scheduler_engine`: vLLM's for ``None``, an
        :class:`~rooflinekit.Engine` or a calibration) where :data:`ENGINE_MEMORY` has its row;
        ``None`` for the ideal bound (``"ideal"``, :data:`rooflinekit.IDEAL`) and for engines
        without a row, whose KV budget is then the weights' remainder alone.
    """
    if engine is IDEAL or (isinstance(engine, str) and engine.strip().lower() == "ideal"):
        return None
    name = scheduler_engine(engine)
    return name if any(r["engine"] == name for r in ENGINE_MEMORY) else None


def held_memory(held_by, model, gpu, tp=1, *, max_num_seqs=None,
                max_num_batched_tokens=None) -> dict:
    """What engine ``held_by`` keeps on each GPU beside weights and KV, as the keyword
    arguments :func:`rooflinekit.memory.engine_kv_cache` and
    :func:`rooflinekit.batching.replica_kv_budget` take it.

    Parameters
    ----------
    held_by : str or None
        An engine with a memory row (:func:`memory_engine` of a planner's ``engine=``), or
        ``None``: nothing is held.
    model, gpu, tp, max_num_seqs, max_num_batched_tokens
        As for :func:`engine_memory` (the profiling step: the configuration's budget, or the
        engine's own where it is ``None``).

    Returns
    -------
    dict
        ``activation_peak_bytes`` and ``non_torch_bytes`` [bytes per GPU]; empty for ``None``.
    """
    if held_by is None:
        return {}
    kept = engine_memory(model, gpu, tp, engine=held_by, max_num_seqs=max_num_seqs,
                         max_num_batched_tokens=max_num_batched_tokens)
    return {k: kept[k] for k in ("activation_peak_bytes", "non_torch_bytes")}
