"""vLLM's and SGLang's start-up KV-cache logs beside our engine-style KV budget.

:func:`parse_vllm_kv_log` reads vLLM's memory-profiling and KV-cache start-up lines,
:func:`parse_sglang_kv_log` SGLang's (the same figures under the same keys);
:func:`compare_engine_log` holds :func:`rooflinekit.memory.engine_kv_cache` next to either, so
the weight model and the block arithmetic can be checked against a real engine (the engines'
sources read: each function's References).
"""

from __future__ import annotations

import re

from rooflinekit._validation import (MAX_COUNT, MAX_MAGNITUDE, check_one_of, check_string,
                                      check_type, show, whole_number)
from rooflinekit import units
from rooflinekit.hardware import GPU
from rooflinekit.memory import MAMBA_CACHE_MODES, engine_kv_cache
from rooflinekit.models import ModelShape

__all__ = ["parse_vllm_kv_log", "parse_sglang_kv_log", "compare_engine_log", "ENGINES"]

_NUM = r"([0-9][0-9,]*(?:\.[0-9]+)?)"
#: Each engine's start-up figures: (key, pattern, factor to SI). The last match of a key wins.
_LOG_PATTERNS = {
    "vllm": (
        ("total_gpu_memory", rf"total_gpu_memory[=\s:]+{_NUM}\s*GiB", units.GiB),
        ("gpu_memory_utilization", rf"gpu_memory_utilization[=\s:]+{_NUM}", 1.0),
        ("weights", rf"model weights take\s+{_NUM}\s*GiB", units.GiB),
        # vLLM's "Loading model weights took X GB" divides by 2**30: it is GiB despite the label
        ("weights", rf"(?:Loading model weights took|Model loading took)\s+{_NUM}\s*Gi?B",
         units.GiB),
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
        # "Chunked prefill is enabled with max_num_batched_tokens=8192." (a window group's most)
        ("max_num_batched_tokens", rf"max_num_batched_tokens=\s*{_NUM}", 1.0),
    ),
    # SGLang prints GB for sizes divided by 2**30 (memory_pool.py: GB = 1024 * 1024 * 1024). The
    # gaps within a line are bounded so that a hostile line cannot make the search quadratic.
    "sglang": (
        # the scheduler's view first, so that the pool's own line (below) wins where both appear
        ("kv_cache_tokens", rf"max_total_num_tokens={_NUM}", 1.0),
        ("kv_cache_tokens", rf"KV Cache is allocated\.[^\n]{{0,200}}?#tokens:\s*{_NUM}", 1.0),
        # MHA pools print K and V apiece, MLA pools one latent cache
        ("available_kv", (rf"KV Cache is allocated\.[^\n]{{0,200}}?(?<![A-Za-z])K size:\s*"
                          rf"{_NUM}\s*GB,\s*V size:\s*{_NUM}\s*GB"), units.GiB),
        ("available_kv", rf"KV Cache is allocated\.[^\n]{{0,200}}?KV size:\s*{_NUM}\s*GB",
         units.GiB),
        ("weights", rf"Load weight end\.[^\n]{{0,400}}?mem usage={_NUM}\s*GB", units.GiB),
        ("max_model_len", rf"max_total_num_tokens=[^\n]{{0,400}}?context_len={_NUM}", 1.0),
        ("max_running_requests", rf"max_running_requests={_NUM}", 1.0),
        ("mem_fraction_static", rf"mem_fraction_static={_NUM}", 1.0),
        ("page_size", rf"(?<![A-Za-z_])page_size={_NUM}", 1.0),
    ),
}

#: The engines whose start-up logs :func:`compare_engine_log` reads.
ENGINES = tuple(_LOG_PATTERNS)


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
        ``max_model_len``, ``max_num_batched_tokens`` [tokens] and ``max_concurrency`` [1].
        Absent figures are absent keys.

    See Also
    --------
    parse_sglang_kv_log, compare_engine_log

    Notes
    -----
    Covers the V0 engine's one-line ``Memory profiling results: total_gpu_memory=...`` and
    ``# GPU blocks: N``, the multi-line profile of vLLM 0.6.5+ ("model weights take ...",
    "PyTorch activation peak memory ..."), and the V1 lines ``Available KV cache memory: X GiB``,
    ``GPU KV cache size: N tokens`` and ``Maximum concurrency for L tokens per request: Xx``.
    The log rounds GiB to two decimals, so figures derived from them carry ±0.005 GiB.

    The engine's settings that page a hybrid model's state are read too, where the log states
    them (its ``non-default args``, engine config or hybrid set-up lines): ``mamba_cache_mode``
    (str), ``enable_prefix_caching`` (bool), ``num_speculative_tokens`` (int),
    ``attention_block_size`` (int, "Setting attention block size to N tokens") and
    ``vllm_version`` (str, from "Initializing a V1 LLM engine (vX.Y.Z)").
    """
    check_string("text", text, allow_empty=True)
    found = _figures(text, _LOG_PATTERNS["vllm"])
    for key, pattern, read in _VLLM_SETTINGS:
        matches = re.findall(pattern, text)
        if matches:
            found[key] = read(matches[-1])
    return found


#: vLLM's settings a log states: (key, pattern, reader). Gaps bounded: no quadratic search.
_SETTING = r"['\"]?\s{0,3}[=:]\s{0,3}"
_VLLM_SETTINGS = (
    ("mamba_cache_mode", rf"mamba_cache_mode{_SETTING}['\"]?(none|align|all)\b", str),
    ("enable_prefix_caching", rf"enable_prefix_caching{_SETTING}(True|False)\b",
     lambda flag: flag == "True"),
    ("num_speculative_tokens", rf"num_speculative_tokens{_SETTING}([0-9]{{1,6}})\b", int),
    ("mamba_cache_mode", r"Mamba cache mode is set to '(none|align|all)'", str),
    ("vllm_version", r"LLM engine \(v([0-9]{1,4}(?:\.[0-9A-Za-z]{1,8}){0,4})\)", str),
    # a hybrid's enlarged block, as vLLM reports raising it
    ("attention_block_size", r"Setting attention block size to ([0-9][0-9,]{0,12}) tokens",
     lambda count: int(count.replace(",", ""))),
)


def _figures(text: str, patterns) -> dict:
    """The last match of each pattern, in SI units, bounded; counts as ``int``."""
    found = {}
    for key, pattern, factor in patterns:
        matches = re.findall(pattern, text)
        if matches:
            # a pattern with several groups (K and V sizes) adds them
            groups = matches[-1] if isinstance(matches[-1], tuple) else (matches[-1],)
            value = sum(float(g.replace(",", "")) for g in groups) * factor
            # a figure no engine prints (a corrupt or hostile log) would overflow the arithmetic
            if not value <= MAX_MAGNITUDE:
                shown = max(groups, key=len)
                raise ValueError(f"text: the log's {key} figure must be at most "
                                 f"{MAX_MAGNITUDE:g}; got {shown[:40]}"
                                 f"{'...' if len(shown) > 40 else ''}")
            found[key] = value
    for key in _COUNTS:
        if key in found:
            if found[key] > MAX_COUNT:
                raise ValueError(f"text: the log's {key} figure must be at most 2**53 = "
                                 f"{MAX_COUNT:,}; got {show(found[key])}")
            found[key] = int(found[key])
    return found


#: The log's figures :func:`compare_engine_log` reports as the engine's, and their names there.
_LOGGED = {"available_kv": "available_bytes", "num_blocks": "num_blocks",
           "kv_cache_tokens": "kv_cache_tokens", "max_concurrency": "max_concurrency",
           "weights": "weights_bytes", "max_running_requests": "max_running_requests"}

#: Figures that are counts (tokens, blocks, requests), kept as ``int``.
_COUNTS = ("num_blocks", "kv_cache_tokens", "max_model_len", "max_running_requests",
           "page_size")

def parse_sglang_kv_log(text: str) -> dict:
    """Read SGLang's KV-cache start-up lines (the same keys as :func:`parse_vllm_kv_log`).

    Parameters
    ----------
    text : str
        Log text (any amount; the last occurrence of each figure wins, so with several
        tensor-parallel ranks logging, the last rank's).

    Returns
    -------
    dict
        The figures found, in SI units: ``kv_cache_tokens`` [tokens] (the pool's ``#tokens``,
        else the scheduler's ``max_total_num_tokens``), ``available_kv`` [bytes] (the KV pool
        as allocated: K size + V size, or the MLA pool's KV size), ``weights`` [bytes] (the
        ``mem usage`` of ``Load weight end``), ``max_model_len`` [tokens] (``context_len``),
        ``max_running_requests`` [1], ``mem_fraction_static`` [1] and ``page_size`` [tokens]
        (from the printed ``server_args``). Absent figures are absent keys.

    Raises
    ------
    ValueError
        A figure beyond any engine's (more than 1e30, or a count above 2**53).
    TypeError
        ``text`` not a string.

    See Also
    --------
    parse_vllm_kv_log, compare_engine_log

    Notes
    -----
    The lines read::

        Load weight end. type=LlamaForCausalLM, ..., avail mem=61.46 GB, mem usage=14.99 GB.
        KV Cache is allocated. #tokens: 426953, K size: 26.07 GB, V size: 26.07 GB
        KV Cache is allocated. #tokens: 524288, KV size: 17.16 GB              (MLA models)
        max_total_num_tokens=426953, chunked_prefill_size=8192, max_prefill_tokens=16384,
        max_running_requests=4096, context_len=131072

    SGLang's "GB" are GiB (``GB = 1024 * 1024 * 1024`` in ``memory_pool.py``), printed with
    two decimals: ±0.005 GiB per figure. The pool allocates ``#tokens + page_size`` slots (slot
    0 takes padded tokens), so its bytes hold one page more than ``#tokens``. Unlike vLLM,
    SGLang logs no maximum concurrency: ``max_running_requests`` is a cap on the batch, not
    ``kv_cache_tokens / max_model_len``.

    References
    ----------
    .. [1] SGLang ``python/sglang/srt/mem_cache/memory_pool.py`` at
       ``000ccdba94d4ed75d4fab7b1dac5f8ebcaaee7e8`` (``MHATokenToKVPool``,
       ``MLATokenToKVPool``: "KV Cache is allocated"); ``python/sglang/srt/managers/
       scheduler.py`` at ``d51c1c21d1ac07cd5d1de9ead6c99087d8428e79`` (``max_total_num_tokens=
       ..., context_len=...``; later versions insert ``chunked_prefill_size``);
       ``python/sglang/srt/model_executor/model_runner.py`` at
       ``0005834cdb2a5b7472789ccbf0d3361b5cf853b8`` ("Load weight end").
    """
    check_string("text", text, allow_empty=True)
    return _figures(text, _LOG_PATTERNS["sglang"])


def _engine_of(text: str) -> str:
    """The engine whose start-up lines ``text`` holds: SGLang's pool or scheduler line, else
    vLLM."""
    return "sglang" if re.search(r"KV Cache is allocated\.|max_total_num_tokens=", text) \
        else "vllm"


def _whole_or_none(value):
    """A logged count as a positive ``int``, or ``None`` where absent or not one."""
    if value is None or not float(value).is_integer() or value < 1:
        return None
    return int(value)


def compare_engine_log(model: ModelShape, log, *, tp: int = 1, block_size: int | None = None,
                       max_model_len: int | None = None, weights: str = "model",
                       engine: str | None = None, mamba_cache_mode: str | None = None,
                       num_speculative_tokens: int | None = None, draft_layers: int = 0,
                       block_alignment: int = 16) -> dict:
    """Our engine-style KV budget (:func:`rooflinekit.memory.engine_kv_cache`) beside an
    engine's start-up log (vLLM's or SGLang's).

    Parameters
    ----------
    model : ModelShape
        The served model (weights and KV format as served).
    log : str or mapping
        The start-up log text, or the dict :func:`parse_vllm_kv_log` or
        :func:`parse_sglang_kv_log` returns.
    tp : int
        Tensor-parallel degree; the engine logs one rank. Default 1.
    block_size : int, optional
        KV block size in tokens: vLLM's ``--block-size`` (default the hybrid block the log
        reports setting, else 16), SGLang's ``--page-size`` (default the logged ``page_size``,
        else 1).
    max_model_len : int, optional
        Tokens per request for the concurrency figure; default the one the log names (vLLM's
        "Maximum concurrency for L tokens", SGLang's ``context_len``).
    weights : {"model", "logged"}
        Whose weight bytes to subtract in "profile" mode: ours (``model.weight_bytes / tp``,
        default, so our weight model is under test too) or the engine's logged figure (isolates
        the block arithmetic). The two differ by the buffers an engine loads beside the
        parameters.
    engine : {"vllm", "sglang"}, optional
        Whose log it is. Default: read from the text (SGLang's "KV Cache is allocated" or
        ``max_total_num_tokens=`` lines, else vLLM); a mapping is taken as vLLM's unless given.
    mamba_cache_mode : {"none", "align", "all"}, optional
        How vLLM paged a hybrid model's state (:func:`rooflinekit.memory.engine_kv_cache`).
        Default: the log's ``mamba_cache_mode`` where it states one, else "align" where it
        turned prefix caching on (``'enable_prefix_caching': True``: vLLM's mode then for a
        model without "all"; opt-in for hybrids), else "none".
    num_speculative_tokens : int, optional
        Draft tokens a step, >= 0; default the log's ``num_speculative_tokens``, else 0.
    draft_layers : int
        Attention layers of a draft whose KV shares the pool, >= 0 (an MTP module's layers;
        the log does not say how many). Default 0.
    block_alignment : int
        The kernel block size a hybrid's enlarged block is a multiple of [tokens], >= 1
        (:func:`rooflinekit.memory.vllm_block_size`); moot where the log reports the block.
        Default 16.

    Returns
    -------
    dict
        ``ours`` and ``engine``: dicts of ``weights_bytes`` (per GPU), ``available_bytes``,
        ``num_blocks``, ``kv_cache_tokens`` and ``max_concurrency`` (engine keys only where the
        log has them; SGLang's adds ``max_running_requests``); ``bytes_per_block`` (ours, per
        GPU); ``inputs``: the figures fed to ``engine_kv_cache``; ``mode``: ``"profile"`` when
        total memory, utilisation and the profiled components were logged (``weights`` picks
        whose weights), or ``"available"`` when only the available KV memory was, the input
        then, so that the block arithmetic is compared (always SGLang's: its allocated K + V
        bytes); ``engine_name``: whose log it was; ``logged_tokens``: how the log's "GPU KV
        cache size" counts, and so ours (below).

    Raises
    ------
    ValueError
        If the log has neither a memory profile nor an available-KV figure, or no
        ``max_model_len`` is known, or ``engine`` is not one of :data:`ENGINES`.

    See Also
    --------
    parse_vllm_kv_log, parse_sglang_kv_log

    Notes
    -----
    vLLM's "GPU KV cache size" line has counted three ways: ``num_blocks × block_size`` (one
    KV-cache group), ``num_blocks // groups × block_size`` (a hybrid, up to vLLM 0.19) and
    ``int(max_concurrency × max_model_len)`` (every model after vLLM's hybrid log fix; 0.24
    prints it). For a hybrid model ``ours["kv_cache_tokens"]`` counts as the log does: the
    last way where the logged tokens are the logged concurrency times ``max_model_len``
    (within the concurrency's two printed decimals), else the second. A hybrid's enlarged
    block (:func:`rooflinekit.memory.vllm_block_size`) gives no block count from the tokens:
    ``engine["num_blocks"]`` is then left out.

    SGLang's pool holds one page beyond its ``#tokens`` (its padding slot), so against an SGLang
    log ours reads about ``page_size`` tokens more, well inside the ±0.005 GiB to which the log
    prints each of the K and V sizes.

    References
    ----------
    .. [1] vLLM ``vllm/v1/core/kv_cache_utils.py`` (KV cache log lines).
    .. [2] SGLang ``python/sglang/srt/mem_cache/memory_pool.py`` at
       ``000ccdba94d4ed75d4fab7b1dac5f8ebcaaee7e8`` (the pool's size and padding slot).
    """

    check_type("model", model, ModelShape)
    # the degree divides the weights before engine_kv_cache sees it: checked here, first
    tp = whole_number("tp", tp, lo=1)
    block_size = whole_number("block_size", block_size, lo=1, allow_none=True)
    max_model_len = whole_number("max_model_len", max_model_len, lo=1, allow_none=True)
    if engine is None:
        engine = _engine_of(log) if isinstance(log, str) else "vllm"
    check_one_of("engine", engine, ENGINES)
    if mamba_cache_mode is not None:
        check_one_of("mamba_cache_mode", mamba_cache_mode, MAMBA_CACHE_MODES)
    num_speculative_tokens = whole_number("num_speculative_tokens", num_speculative_tokens, lo=0,
                                          allow_none=True)
    draft_layers = whole_number("draft_layers", draft_layers, lo=0)
    block_alignment = whole_number("block_alignment", block_alignment, lo=1)
    if isinstance(log, str):
        found = parse_sglang_kv_log(log) if engine == "sglang" else parse_vllm_kv_log(log)
    else:
        found = dict(log)
    if block_size is None:
        block_size = int(found.get("page_size", 1) if engine == "sglang" else
                         found.get("attention_block_size", 16))
    if max_model_len is None:
        max_model_len = found.get("max_model_len")
    if max_model_len is None:
        line = ("'max_total_num_tokens=..., context_len=L' line" if engine == "sglang" else
                "'Maximum concurrency for L tokens per request' line")
        raise ValueError(f"max_model_len is unknown: the log has no {line}; pass "
                         f"max_model_len=")
    check_one_of("weights", weights, ("model", "logged"))
    ours_weights = model.weight_bytes / tp
    if engine == "vllm" and {"total_gpu_memory", "gpu_memory_utilization"} <= set(found) and (
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
    elif engine == "sglang":
        raise ValueError("the SGLang log has no 'KV Cache is allocated. #tokens: N, K size: "
                         "X GB, V size: Y GB' (or 'KV size') line")
    else:
        raise ValueError("the log has neither a memory profile (total_gpu_memory, "
                         "gpu_memory_utilization, activation or peak torch memory) nor an "
                         "available KV cache figure")
    gpu = GPU(name="as logged", memory_bytes=inputs["total_memory"], hbm_bandwidth=1.0,
              peak_flops=1.0)
    if mamba_cache_mode is None:
        mamba_cache_mode = found.get("mamba_cache_mode",
                                     "align" if found.get("enable_prefix_caching") else "none")
    if num_speculative_tokens is None:
        num_speculative_tokens = found.get("num_speculative_tokens", 0)
    ours = engine_kv_cache(model, gpu, tp=tp,
                           gpu_memory_utilization=inputs["gpu_memory_utilization"],
                           activation_peak_bytes=inputs["activation_peak_bytes"],
                           non_torch_bytes=inputs["non_torch_bytes"], block_size=block_size,
                           max_model_len=int(max_model_len), mamba_cache_mode=mamba_cache_mode,
                           num_speculative_tokens=num_speculative_tokens,
                           draft_layers=draft_layers, block_alignment=block_alignment,
                           max_num_batched_tokens=_whole_or_none(
                               found.get("max_num_batched_tokens")))
    logged = {name: found[key] for key, name in _LOGGED.items() if key in found}
    # a hybrid paged by vLLM (SGLang keeps its states in a pool of their own)
    counted, hybrid = "num_blocks × block_size", engine == "vllm" and ours["kv_cache_groups"] > 1
    if hybrid:
        tokens, shown = found.get("kv_cache_tokens"), found.get("max_concurrency")
        # the concurrency is printed to two decimals: its product carries ±0.005 × L
        if tokens is not None and shown is not None and \
                abs(tokens - shown * int(max_model_len)) <= 0.005 * int(max_model_len) + 1:
            counted = "max_concurrency × max_model_len"
            ours_tokens = ours["capacity_tokens"]
        else:
            counted = "num_blocks // groups × block_size"
            ours_tokens = (ours["num_blocks"] // ours["kv_cache_groups"] * ours["block_size"])
        ours = {**ours, "kv_cache_tokens": ours_tokens}
    # blocks and tokens differ by the block size: either gives the other (not a hybrid's)
    elif "kv_cache_tokens" in found:
        logged.setdefault("num_blocks", found["kv_cache_tokens"] // block_size)
    elif "num_blocks" in found:
        logged["kv_cache_tokens"] = found["num_blocks"] * block_size
    return {"ours": {"weights_bytes": ours_weights,
                     **{k: ours[k] for k in ("available_bytes", "num_blocks", "kv_cache_tokens",
                                             "max_concurrency")}},
            "engine": logged, "engine_name": engine, "inputs": inputs, "mode": mode,
            "max_model_len": int(max_model_len), "bytes_per_block": ours["bytes_per_block"],
            "logged_tokens": counted}
