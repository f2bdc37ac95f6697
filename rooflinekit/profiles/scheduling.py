"""How the serving engines schedule a step by default: their slots and chunked-prefill budget.

vLLM (V1) and TensorRT-LLM schedule a step as :class:`~rooflinekit.batching.ContinuousBatcher`
with ``max_num_batched_tokens`` does: one token per decoding sequence first, then prefill slices
from what is left of the step's token budget; SGLang by default runs prefill steps apart from
the decodes (``mixed_prefill=False``). The budget and the number of sequences each engine picks
from the GPU's memory when its launch command leaves them unset. :func:`scheduler_defaults`
returns them, read from ``rooflinekit/data/engine_schedulers.toml`` (each row its source);
:func:`chunk_budget_candidates` is the set a planner searches when no budget is given.
"""

from __future__ import annotations

import functools
import math
from importlib import resources
from pathlib import Path
from typing import NamedTuple

from rooflinekit._validation import read_toml_file
from rooflinekit.hardware import GPU
from rooflinekit.profiles import shipped
from rooflinekit.profiles.shipped import DEFAULT_ENGINE, ENGINE_NAMES, _gpu_spec

__all__ = ["SchedulerDefaults", "ENGINE_SCHEDULERS", "CHUNK_BUDGETS", "ADMISSIONS",
           "scheduler_defaults", "scheduler_engine", "scheduler_admission",
           "older_than_scheduler",
           "chunk_budget_candidates", "read_scheduler_file"]

GIB = 2**30

#: The chunked-prefill budgets [tokens] a planner tries when none is given, besides the engine's
#: own for the GPU: powers of two from 512 (Sarathi-Serve's smallest useful slice) to 16,384
#: (the largest engine default), those below a configuration's max_num_seqs left out.
CHUNK_BUDGETS = (512, 1024, 2048, 4096, 8192, 16384)

_INT_FIELDS = ("max_num_seqs", "max_num_batched_tokens")
_TEXT_FIELDS = ("engine", "version", "date", "source")
_MEMORY_FIELDS = ("min_memory_gib", "below_memory_gib")
#: KV admission rules (:class:`~rooflinekit.batching.ContinuousBatcher`'s ``admission``):
#: "paged" admits on the blocks a request holds now and preempts when they run out (vLLM,
#: SGLang); "reserve" admits only when the prompt and the whole output fit, and never preempts
#: (TensorRT-LLM's default capacity policy, GUARANTEED_NO_EVICT).
ADMISSIONS = ("paged", "reserve")


class SchedulerDefaults(NamedTuple):
    """One engine's scheduler defaults on one GPU.

    ``max_num_seqs`` [1]: most sequences in a step (vLLM ``--max-num-seqs``, SGLang
    ``--max-running-requests``, TensorRT-LLM ``--max_batch_size``); ``max_num_batched_tokens``
    [tokens]: the step's token budget (vLLM ``--max-num-batched-tokens``, SGLang
    ``--chunked-prefill-size``, TensorRT-LLM ``--max_num_tokens``); ``version`` and ``source``:
    where they were read; ``mixed_prefill``: whether a step carries prefill slices beside the
    decode tokens (SGLang ``--enable-mixed-chunk``, off by default); ``admission``: the KV
    admission rule (:data:`ADMISSIONS`; TensorRT-LLM's ``capacity_scheduler_policy``);
    ``since_version``: the oldest release they are read from (``None``: not stated);
    ``recv_interval`` [steps]: new requests taken in every that many decode steps (SGLang
    ``--scheduler-recv-interval``; 1, every step, for every engine by default).
    """

    engine: str
    max_num_seqs: int
    max_num_batched_tokens: int
    version: str
    source: str
    mixed_prefill: bool = True
    admission: str = "paged"
    since_version: str | None = None
    recv_interval: int = 1


_WHAT = "engine scheduler file"


#: ``_fail(path, where, message, kind=ValueError)``: the error naming this file
_fail = functools.partial(shipped._fail, what=_WHAT)


def read_scheduler_file(path) -> tuple[dict, ...]:
    """Read and check a file of engine scheduler defaults.

    Parameters
    ----------
    path : str or os.PathLike
        A TOML file of ``[[scheduler]]`` tables, each with ``engine`` (one of
        :data:`~rooflinekit.profiles.ENGINE_NAMES`), ``max_num_seqs`` and
        ``max_num_batched_tokens`` (whole numbers >= 1, the budget >= the sequences),
        ``version``, ``date``, ``source``, and optionally ``min_memory_gib`` /
        ``below_memory_gib`` [GiB], ``exclude_gpus`` (names a GPU's must not contain),
        ``mixed_prefill`` (true or false; default true) and ``admission`` (one of
        :data:`ADMISSIONS`, default "paged"; the same on every row of an engine).

    Returns
    -------
    tuple of dict
        The rows in file order, checked.

    Raises
    ------
    ValueError, TypeError
        A missing, non-finite or out-of-range field, an unknown field or engine, or an engine
        no row covers for every GPU (its last row must have no memory bound); the message names
        the file, the row and the field; rows of one engine that disagree on ``admission``.
    """
    path = Path(path)
    data = read_toml_file(path, _WHAT)
    rows = []
    for where, row in shipped._tables(path, data, "scheduler", what=_WHAT):
        out = shipped._engine_row(path, row, where, _TEXT_FIELDS,
                                  (*_INT_FIELDS, *_TEXT_FIELDS, *_MEMORY_FIELDS, "exclude_gpus",
                                   "mixed_prefill", "admission", "since_version"), _WHAT)
        for field in _INT_FIELDS:
            value = row.get(field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                _fail(path, f"{where}.{field}", f"must be a whole number >= 1; got {value!r}")
            out[field] = value
        if out["max_num_batched_tokens"] < out["max_num_seqs"]:
            _fail(path, f"{where}.max_num_batched_tokens", f"must be >= max_num_seqs "
                  f"({out['max_num_seqs']}); got {out['max_num_batched_tokens']}")
        for field, default in zip(_MEMORY_FIELDS, (0.0, math.inf)):
            value = row.get(field, default)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or math.isnan(value) or value < 0:
                _fail(path, f"{where}.{field}", f"must be a number of GiB >= 0; got {value!r}")
            out[field] = float(value)
        if out["below_memory_gib"] <= out["min_memory_gib"]:
            _fail(path, f"{where}.below_memory_gib", f"must be above min_memory_gib "
                  f"({out['min_memory_gib']:g}); got {out['below_memory_gib']:g}")
        exclude = row.get("exclude_gpus", [])
        if not isinstance(exclude, list) or not all(isinstance(x, str) and x for x in exclude):
            _fail(path, f"{where}.exclude_gpus", f"must be a list of names; got {exclude!r}",
                  TypeError)
        out["exclude_gpus"] = tuple(exclude)
        out["mixed_prefill"] = row.get("mixed_prefill", True)
        if not isinstance(out["mixed_prefill"], bool):
            _fail(path, f"{where}.mixed_prefill", f"must be true or false; got "
                  f"{out['mixed_prefill']!r}", TypeError)
        out["admission"] = row.get("admission", "paged")
        if out["admission"] not in ADMISSIONS:
            _fail(path, f"{where}.admission", f"must be one of {', '.join(ADMISSIONS)}; got "
                  f"{out['admission']!r}")
        out["since_version"] = row.get("since_version")
        if out["since_version"] is not None:
            shipped._release_field(path, f"{where}.since_version", out["since_version"], _WHAT)
        rows.append(out)
    for engine in {r["engine"] for r in rows}:
        last = [r for r in rows if r["engine"] == engine][-1]
        if last["min_memory_gib"] > 0 or math.isfinite(last["below_memory_gib"]) \
                or last["exclude_gpus"]:
            _fail(path, f"engine {engine!r}", "its last row must apply to every GPU (no "
                  "memory bound, no exclude_gpus), so that every GPU has defaults")
        admissions = {r["admission"] for r in rows if r["engine"] == engine}
        if len(admissions) > 1:
            _fail(path, f"engine {engine!r}", f"its rows must share one admission; got "
                  f"{', '.join(sorted(admissions))}")
    return tuple(rows)


@functools.cache
def _shipped() -> tuple[dict, ...]:
    entry = resources.files("rooflinekit").joinpath("data").joinpath("engine_schedulers.toml")
    with resources.as_file(entry) as path:
        return read_scheduler_file(path)


#: Every shipped scheduler row (a dict per row, in file order).
ENGINE_SCHEDULERS = _shipped()


def scheduler_engine(engine) -> str:
    """The engine whose scheduler a planning answer runs with.

    Parameters
    ----------
    engine : str, Engine, Calibration or None
        A planner's ``engine=`` argument.

    Returns
    -------
    str
        The serving engine ``engine`` names (:data:`~rooflinekit.profiles.ENGINE_NAMES`, with
        or without ``@VERSION``); otherwise (``None``, ``"ideal"``, an
        :class:`~rooflinekit.Engine`, a calibration)
        :data:`~rooflinekit.profiles.DEFAULT_ENGINE`: the planner's launch command is vLLM's.
    """
    return shipped.profiled_engine(engine) or DEFAULT_ENGINE


def scheduler_defaults(engine: str = DEFAULT_ENGINE, gpu=None) -> SchedulerDefaults:
    """The slots and chunked-prefill budget an engine picks for a GPU when not told.

    Parameters
    ----------
    engine : {"vllm", "sglang", "trtllm"}
        The serving engine.
    gpu : GPU or catalogue name
        The GPU, by its memory (the engines' own reading: GiB) and name.

    Returns
    -------
    SchedulerDefaults
        ``max_num_seqs`` [1], ``max_num_batched_tokens`` [tokens], where they were read, and
        ``mixed_prefill`` (False for SGLang: prefill steps apart from the decodes).

    Raises
    ------
    ValueError, TypeError
        An unknown engine or GPU.

    Notes
    -----
    The first row of ``rooflinekit/data/engine_schedulers.toml`` for ``engine`` with
    ``min_memory_gib <= memory / GiB < below_memory_gib`` and no ``exclude_gpus`` name in the
    GPU's name. vLLM: 1,024 sequences and 16,384 tokens on a GPU of >= 160 GiB (B200, B300,
    MI300X: from 0.28.0 on), 1,024 and 8,192 on one of >= 70 GiB other than an A100, else 256
    and 2,048; SGLang: 2,048 sequences and 2,048 / 4,096 / 8,192 / 16,384 tokens below
    35 / 60 / 160 GiB / above; TensorRT-LLM: 2,048 and 8,192.

    References
    ----------
    .. [1] vllm-project/vllm, ``vllm/engine/arg_utils.py``, ``EngineArgs.get_batch_defaults``.
    .. [2] sgl-project/sglang, ``python/sglang/srt/server_args.py``.
    .. [3] NVIDIA/TensorRT-LLM, ``tensorrt_llm/builder.py``, ``BuildConfig``.

    See Also
    --------
    chunk_budget_candidates : the budgets a planner searches.
    rooflinekit.plan : uses them unless given ``max_num_seqs`` / ``max_num_batched_tokens``.
    """
    if not isinstance(engine, str) or engine not in ENGINE_NAMES:
        raise ValueError(f"engine must be one of {', '.join(ENGINE_NAMES)}; got {engine!r}")
    if gpu is None:
        raise ValueError("gpu is needed: the engines pick their defaults by GPU memory")
    spec: GPU = _gpu_spec(gpu)
    memory = spec.memory_per_gpu / GIB
    for row in ENGINE_SCHEDULERS:
        if row["engine"] == engine and row["min_memory_gib"] <= memory < row["below_memory_gib"] \
                and not any(x.lower() in spec.name.lower() for x in row["exclude_gpus"]):
            return SchedulerDefaults(engine, row["max_num_seqs"], row["max_num_batched_tokens"],
                                     row["version"], row["source"], row["mixed_prefill"],
                                     row["admission"], row["since_version"])
    raise ValueError(f"no scheduler row of {engine} applies to {spec.name}")  # file checked


def older_than_scheduler(engine, gpu) -> str | None:
    """Why a planner's default slots and budget may not be those of the engine version
    ``engine`` names, or ``None``.

    Parameters
    ----------
    engine : str, Engine, Calibration or None
        A planner's ``engine=`` argument.
    gpu : GPU or catalogue name
        A GPU of the plan.

    Returns
    -------
    str or None
        Where ``engine`` names a version (``"vllm@0.6.0"``) older than the ``since_version``
        of the defaults the planner takes for ``gpu`` (:func:`scheduler_defaults`), a sentence
        saying so and naming the arguments that plan the defaults that version ran; else
        ``None`` (no version named, none older, or the row states no ``since_version``).
    """
    engine = shipped.engine_name(engine)
    if not shipped.is_engine_name(engine):
        return None
    name, version = shipped.split_engine_name(engine)
    release = shipped.named_release(engine)
    if name not in ENGINE_NAMES or release is None:
        return None
    defaults = scheduler_defaults(name, gpu)
    since = defaults.since_version
    if since is None or release >= shipped.release_number(since):
        return None
    return (f"{name} {version} is older than the scheduler defaults planned for it "
            f"({defaults.max_num_seqs:,} sequences and {defaults.max_num_batched_tokens:,} "
            f"tokens a step on {_gpu_spec(gpu).name}, {name}'s from {since} on); give "
            f"max_num_seqs and "
            f"max_num_batched_tokens (--max-num-seqs, --max-num-batched-tokens) to plan the "
            f"ones it ran")


def scheduler_admission(admission, engine, gpu, prefix_caching=None) -> str:
    """The KV admission rule a planner runs with.

    Parameters
    ----------
    admission : {"auto", "paged", "reserve"}
        A planner's ``admission`` argument: a rule, or ``"auto"`` for the engine's own.
    engine : str, Engine, Calibration or None
        The planner's ``engine`` (:func:`scheduler_engine` names whose rule "auto" takes).
    gpu : GPU or catalogue name
        A GPU of the plan (the rule is the engine's on every GPU).
    prefix_caching : bool or None
        The planner's ``prefix_caching``: ``True`` makes "auto" paged, since rooflinekit shares
        prefixes only in paged blocks (TensorRT-LLM reuses blocks under its no-evict policy
        too; that pair is not simulated).

    Returns
    -------
    str
        "paged" or "reserve": for "auto", the engine's (:func:`scheduler_defaults`): vLLM and
        SGLang paged, TensorRT-LLM reserve (GUARANTEED_NO_EVICT admits a request only when its
        prompt and whole output fit, and never preempts).

    Raises
    ------
    ValueError
        Any other ``admission``.
    """
    if isinstance(admission, str) and admission == "auto":
        if prefix_caching is True:
            return "paged"
        return scheduler_defaults(scheduler_engine(engine), gpu).admission
    if not isinstance(admission, str) or admission not in ADMISSIONS:
        raise ValueError(f"admission must be one of auto, {', '.join(ADMISSIONS)}; got "
                         f"{admission!r}")
    return admission


def chunk_budget_candidates(default: int, max_num_seqs: int) -> tuple[int, ...]:
    """The chunked-prefill budgets a planner tries for one configuration.

    Parameters
    ----------
    default : int
        The engine's own budget for the GPU [tokens] (:func:`scheduler_defaults`).
    max_num_seqs : int
        The configuration's slots [1]: a budget below it cannot hold a decode token for each.

    Returns
    -------
    tuple of int
        :data:`CHUNK_BUDGETS` and ``default``, those >= ``max_num_seqs``, ascending; at least
        ``max_num_seqs`` itself where all are below it.
    """
    found = sorted({b for b in (*CHUNK_BUDGETS, int(default)) if b >= max_num_seqs})
    return tuple(found) or (int(max_num_seqs),)
