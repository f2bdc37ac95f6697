"""What a serving engine keeps on each GPU beside the weights and the KV cache.

vLLM sizes its KV cache as ``gpu_memory_utilization`` × the memory the driver reports, less the
weights, less the activation peak of a profiling run and the memory that grew outside PyTorch
(:func:`rooflinekit.memory.engine_kv_cache`). :func:`engine_memory` gives those two for a model,
GPU and layout, from the release's figures in ``rooflinekit/data/engine_memory.toml``
(:data:`ENGINE_MEMORY`; fitted to the engine's own start-up logs by
``scripts/fit_engine_memory.py``); :func:`moe_workspace_bytes` is the fused-MoE kernel's share.
SGLang keeps ``1 − mem_fraction_static`` of the memory free before the weights load
(:func:`sglang_mem_fraction_static`, its default by GPU and layout), which the same arithmetic
holds as a share and the memory in use before loading. TensorRT-LLM's PyTorch backend takes its
``free_gpu_memory_fraction`` of what the weights and its profiling pass's peak leave
(:data:`TRTLLM_FREE_GPU_MEMORY_FRACTION`; its row's ``share_of = "free"``), fitted to its
start-up logs the same way.
"""

from __future__ import annotations

import functools
import math
from importlib import resources
from pathlib import Path

from rooflinekit import catalog
from rooflinekit.memory import SHARE_BASES, kv_bytes_left
from rooflinekit._validation import (check_bool, check_type, read_toml_file, real_number,
                                     whole_number)
from rooflinekit.hardware import GPU
from rooflinekit.dtypes import MXFP4_BYTES, is_mxfp4
from rooflinekit.models import ModelShape
from rooflinekit.roofline import IDEAL
from rooflinekit.profiles import shipped
from rooflinekit.profiles.scheduling import scheduler_defaults, scheduler_engine
from rooflinekit.profiles.shipped import DEFAULT_ENGINE, profiled_engine

__all__ = ["ENGINE_MEMORY", "FUSED_MOE_CHUNK_TOKENS", "MOE_ACTIVATION_BYTES",
           "TRTLLM_FREE_GPU_MEMORY_FRACTION", "VLLM_GPU_MEMORY_UTILIZATION", "engine_memory",
           "counts_cuda_graphs", "cuda_graph_note", "default_share", "held_bytes", "held_memory", "memory_engine", "memory_share_of",
           "layout_kv_bytes", "memory_outside_kv", "memory_rule", "memory_share",
           "moe_workspace_bytes",
           "mxfp4_layout_bytes",
           "MXFP4_BYTES", "read_engine_memory_file", "sglang_mem_fraction_static",
           "vllm_cuda_graph_bytes"]

GIB = 2**30
#: Tokens vLLM's fused-MoE kernel works on at once (``VLLM_FUSED_MOE_CHUNK_SIZE``, default
#: 16 × 1024, ``vllm/envs.py``): a larger step is split, so its working tensors stop growing.
FUSED_MOE_CHUNK_TOKENS = 16 * 1024
#: Bytes of one activation element in the fused-MoE kernel's working tensors (16-bit).
MOE_ACTIVATION_BYTES = 2.0
#: vLLM's default ``--gpu-memory-utilization`` (``vllm/config/cache.py``): the share a plan
#: takes for every engine but SGLang unless given one.
VLLM_GPU_MEMORY_UTILIZATION = 0.9
#: TensorRT-LLM's default ``free_gpu_memory_fraction`` (``KvCacheConfig``, ``trtllm-serve
#: --kv_cache_free_gpu_memory_fraction``): the share of what the weights and its profiling
#: pass leave that its KV cache takes.
TRTLLM_FREE_GPU_MEMORY_FRACTION = 0.9
MIB = 2**20
#: SGLang's CUDA-graph batch sizes by GPU memory when not given (``cuda_graph_max_bs``): each
#: row (below this many GiB, below 4 GPUs of tensor parallelism, at 4 and above), from
#: ``server_args.py``'s ``_handle_gpu_memory_settings`` (SGLang 0.5).
_SGLANG_CUDA_GRAPH_MAX_BS = ((20, 8, 8), (35, 24, 80), (60, 32, 160), (90, 256, 512),
                             (160, 256, 512), (math.inf, 512, 512))
#: vLLM's MXFP4 expert kernels by GPU and how each lays the experts out
#: (``vllm/model_executor/layers/quantization/mxfp4.py``, ``get_mxfp4_backend`` and
#: ``create_weights``): (GPUs, backend, intermediate width rounded up to, hidden width rounded
#: up to, the checkpoint's scales kept beside the kernel's swizzled copy). Hopper (sm_90) runs
#: OpenAI's Triton kernels, Blackwell (sm_100) FlashInfer's, the rest (sm_80, sm_86, sm_89,
#: sm_120) Marlin; compute capabilities: https://developer.nvidia.com/cuda-gpus.
_VLLM_MXFP4_LAYOUTS = (
    (("H100-SXM-80GB", "H100-PCIe-80GB", "H100-NVL-94GB", "H200-SXM-141GB", "H20"),
     "triton", 64, 1, True),
    (("B200", "B300", "GB200", "GB300"), "flashinfer", 256, 256, False),
    (("A100-SXM-40GB", "A100-SXM-80GB", "A100-PCIe-80GB", "A10", "A10G", "L4", "L40S",
      "RTX-4090", "RTX-PRO-6000-Server"), "marlin", 128, 256, False),
)

_NUMBER_FIELDS = ("sampler_bytes_per_logit", "non_torch_gib", "non_torch_parallel_gib",
                  "fit_error_gib")
#: Numbers a row may leave out (an engine with too few logs to hold any out; an engine whose
#: memory profiling does not count its CUDA graphs).
_OPTIONAL_FIELDS = ("held_out_error_gib", "held_out_median_error_gib", "cuda_graph_gib",
                    "cuda_graph_gib_per_layer", "cuda_graph_fit_error_gib",
                    "default_share_from_then")
#: The fields a row that counts its CUDA graphs gives together (with ``cuda_graph_since``).
_CUDA_GRAPH_FIELDS = ("cuda_graph_gib", "cuda_graph_gib_per_layer", "cuda_graph_fit_error_gib")
_TEXT_FIELDS = ("engine", "version", "date", "source")
#: Text a row may give: what its engine's share is a share of
#: (:data:`rooflinekit.memory.SHARE_BASES`; ``"total"`` where not given), and the releases
#: from which its profiling counts CUDA graphs and its default share changes.
_OPTIONAL_TEXT_FIELDS = ("share_of", "cuda_graph_since", "default_share_since")
#: The fields a row whose engine changed its default share gives together.
_SHARE_FIELDS = ("default_share_since", "default_share_from_then")
#: The fields of one ``[[memory.cuda_graph_gap]]`` table: releases and models whose profiling
#: took no CUDA graphs off the cache though the row's rule counts them.
_GAP_FIELDS = ("since", "before", "models", "source")
#: What a gap may also give: whether it holds only models with 16-bit weights (a checkpoint
#: without a quantisation config).
_GAP_OPTIONAL = ("sixteen_bit_only",)
_WHAT = "engine memory file"


#: ``_fail(path, where, message, kind=ValueError)``: the error naming this file
_fail = functools.partial(shipped._fail, what=_WHAT)


def _table_list(path, where: str, value) -> list:
    """``value`` as a list of tables (``[[...]]``), or the error naming the file and field."""
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        _fail(path, where, "must be a list of tables ([[...]])")
    return value


def _gap(path, where: str, gap: dict) -> dict:
    """One checked ``[[memory.cuda_graph_gap]]`` table: releases ``since`` up to before
    ``before`` and ``models`` (catalogue names, or ``"dense"``: every model without experts
    or a recurrent state; with ``sixteen_bit_only`` true, only in 16-bit weights) whose
    profiling took no CUDA graphs off the cache."""
    unknown = sorted(set(gap) - set(_GAP_FIELDS) - set(_GAP_OPTIONAL))
    missing = sorted(set(_GAP_FIELDS) - set(gap))
    if unknown or missing:
        _fail(path, where, f"gives exactly {', '.join(_GAP_FIELDS)}"
              + (f"; unknown {', '.join(unknown)}" if unknown else "")
              + (f"; missing {', '.join(missing)}" if missing else ""))
    since = shipped._release_field(path, f"{where}.since", gap["since"], _WHAT)
    before = shipped._release_field(path, f"{where}.before", gap["before"], _WHAT)
    if shipped.release_number(since) >= shipped.release_number(before):
        _fail(path, where, f"since ({since}) must come before before ({before})")
    models = gap["models"]
    if models != "dense":
        if not isinstance(models, list) or not models or not all(
                isinstance(m, str) and m.strip() for m in models):
            _fail(path, f"{where}.models", f"must be \"dense\" or a list of catalogue model "
                  f"names; got {models!r}")
        for name in models:
            try:
                catalog.model(name)
            except ValueError:
                _fail(path, f"{where}.models", f"{name!r} is not a catalogue model")
        models = tuple(models)
    source = gap["source"]
    if not isinstance(source, str) or not source.strip():
        _fail(path, f"{where}.source", f"must be a non-empty string; got {source!r}")
    sixteen = gap.get("sixteen_bit_only", False)
    if not isinstance(sixteen, bool):
        _fail(path, f"{where}.sixteen_bit_only", f"must be true or false; got {sixteen!r}")
    return {"since": since, "before": before, "models": models, "source": source,
            "sixteen_bit_only": sixteen}


def _in_gap(gap: dict, release: tuple, model) -> bool:
    """Whether ``model`` at ``release`` falls in ``gap`` (:func:`_gap`)."""
    if not shipped.release_number(gap["since"]) <= release < shipped.release_number(gap["before"]):
        return False
    if gap["sixteen_bit_only"] and float(model.bytes_per_param) != 2.0:
        return False
    if gap["models"] == "dense":
        return not model.is_moe and not model.is_hybrid
    return model.name in gap["models"]


def read_engine_memory_file(path) -> tuple[dict, ...]:
    """Read and check a file of engine memory figures.

    Parameters
    ----------
    path : str or os.PathLike
        A TOML file of ``[[memory]]`` tables, each with ``engine`` (one of
        :data:`~rooflinekit.profiles.ENGINE_NAMES`, at most one row each), ``version``,
        ``date``, ``source`` and the finite numbers >= 0 ``sampler_bytes_per_logit`` [bytes],
        ``non_torch_gib``, ``non_torch_parallel_gib`` and ``fit_error_gib`` [GiB], and where
        the fit held logs out ``held_out_error_gib`` and ``held_out_median_error_gib`` [GiB];
        optionally ``share_of`` (``"total"``, the default, or ``"free"``: what the engine's
        memory share is a share of, :func:`rooflinekit.memory.engine_kv_cache`); and, for an
        engine whose memory profiling counts its CUDA graphs from a release on, all of
        ``cuda_graph_since`` (that release), ``cuda_graph_gib``, ``cuda_graph_gib_per_layer``
        and ``cuda_graph_fit_error_gib`` [GiB] (:func:`engine_memory`'s Notes).

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
                                  (*_NUMBER_FIELDS, *_OPTIONAL_FIELDS, *_TEXT_FIELDS,
                                   *_OPTIONAL_TEXT_FIELDS, "cuda_graph_gap"), _WHAT)
        out["share_of"] = row.get("share_of", "total")
        given = [f for f in ("cuda_graph_since", *_CUDA_GRAPH_FIELDS) if f in row]
        if given and len(given) != 1 + len(_CUDA_GRAPH_FIELDS):
            missing = sorted({"cuda_graph_since", *_CUDA_GRAPH_FIELDS} - set(given))
            _fail(path, where, f"a row that counts its CUDA graphs gives all of "
                  f"cuda_graph_since, {', '.join(_CUDA_GRAPH_FIELDS)}; missing "
                  f"{', '.join(missing)}")
        if given:
            out["cuda_graph_since"] = shipped._release_field(
                path, f"{where}.cuda_graph_since", row["cuda_graph_since"], _WHAT)
        if "cuda_graph_gap" in row and not given:
            _fail(path, f"{where}.cuda_graph_gap", "a row whose profiling counts no CUDA "
                  "graphs (no cuda_graph_since) has no gap in counting them")
        out["cuda_graph_gaps"] = tuple(
            _gap(path, f"{where}.cuda_graph_gap[{i}]", gap)
            for i, gap in enumerate(_table_list(path, f"{where}.cuda_graph_gap",
                                                row.get("cuda_graph_gap", []))))
        shares = [f for f in _SHARE_FIELDS if f in row]
        if shares and len(shares) != len(_SHARE_FIELDS):
            _fail(path, where, f"a row whose default share changed gives both of "
                  f"{', '.join(_SHARE_FIELDS)}")
        if shares:
            out["default_share_since"] = shipped._release_field(
                path, f"{where}.default_share_since", row["default_share_since"], _WHAT)
            value = row["default_share_from_then"]
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not 0 < value <= 1:
                _fail(path, f"{where}.default_share_from_then",
                      f"must be a share in (0, 1]; got {value!r}")
        if out["share_of"] not in SHARE_BASES:
            _fail(path, f"{where}.share_of", f"must be one of {', '.join(SHARE_BASES)}; got "
                  f"{out['share_of']!r}")
        if out["engine"] in seen:
            _fail(path, f"{where}.engine", f"{out['engine']!r} has a row already")
        seen.add(out["engine"])
        for field in (*_NUMBER_FIELDS, *(f for f in _OPTIONAL_FIELDS if f in row)):
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


def sglang_mem_fraction_static(gpu, tp=1, *, pp=1, chunked_prefill_size=None,
                               cuda_graph_max_bs=None, speculative=False) -> float:
    """SGLang's default ``--mem-fraction-static`` for a GPU and layout [1].

    Parameters
    ----------
    gpu : GPU or catalogue name
        One GPU of the group: the memory the driver reports on it
        (:attr:`~rooflinekit.GPU.visible_memory_per_gpu`), which SGLang reads.
    tp : int
        Tensor-parallel degree, >= 1.
    pp : int
        Pipeline stages, >= 1 (SGLang keeps 1 GiB more for every eight GPUs of ``tp × pp``).
    chunked_prefill_size : int, optional
        SGLang's ``--chunked-prefill-size`` [tokens], >= 1; default its own for the GPU
        (:func:`~rooflinekit.profiles.scheduler_defaults`).
    cuda_graph_max_bs : int, optional
        SGLang's ``--cuda-graph-max-bs`` [sequences], >= 1; default its own by GPU memory and
        ``tp``.
    speculative : bool
        An EAGLE-style draft runs beside the model (2 GiB more kept back).

    Returns
    -------
    float
        The share of each GPU's free memory SGLang gives weights and KV, in (0, 1), rounded to
        three places as SGLang rounds it.

    Notes
    -----
    SGLang 0.5 keeps back ``r = 512 + 1.5 · max(c, 2048) + 2 · b + 1024 · tp · pp / 8`` MiB, at
    least 10 GiB on a GPU of more than 60 GiB (plus 2,048 MiB with a draft), of the GPU's
    ``M`` MiB: ``f = round((M − r) / M, 3)``, with ``c`` the chunk and ``b`` the largest
    CUDA-graph batch. Its KV pool is then ``f`` of the memory free before the weights load,
    less the weights (:func:`engine_memory`). Without data-parallel attention; a multimodal
    model's further cut is not modelled. An H100 (79.19 GiB) at TP 1 keeps 13,440 MiB:
    ``f = 0.834``.

    References
    ----------
    .. [1] sgl-project/sglang, ``python/sglang/srt/server_args.py``
       (``_handle_gpu_memory_settings``; pull request #10975) and
       ``python/sglang/srt/model_executor/model_runner.py`` (``profile_max_num_token``).

    See Also
    --------
    memory_share : the share a plan takes for each engine.
    """
    tp = whole_number("tp", tp, lo=1)
    pp = whole_number("pp", pp, lo=1)
    spec = catalog.gpu(gpu) if isinstance(gpu, str) else gpu
    check_type("gpu", spec, GPU)
    if chunked_prefill_size is None:
        chunked_prefill_size = scheduler_defaults("sglang", spec).max_num_batched_tokens
    chunk = whole_number("chunked_prefill_size", chunked_prefill_size, lo=1)
    memory = spec.visible_memory_per_gpu / MIB
    if cuda_graph_max_bs is None:
        row = next(r for r in _SGLANG_CUDA_GRAPH_MAX_BS if memory < r[0] * 1024)
        cuda_graph_max_bs = row[1] if tp < 4 else row[2]
    graphs = whole_number("cuda_graph_max_bs", cuda_graph_max_bs, lo=1)
    reserved = 512 + 1.5 * max(chunk, 2048) + 2 * graphs + 1024 * tp * pp / 8
    if memory > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    if check_bool("speculative", speculative):
        reserved += 2 * 1024
    if reserved >= memory:
        raise ValueError(f"SGLang keeps back {reserved:,.0f} MiB, more than the "
                         f"{memory:,.0f} MiB of {spec.name}: give a smaller "
                         f"chunked_prefill_size or cuda_graph_max_bs")
    return round((memory - reserved) / memory, 3)


def memory_share(held_by, gpu, tp=1, gpu_memory_utilization=None, *,
                 max_num_batched_tokens=None, pp=1) -> float:
    """The share of each GPU's memory a plan gives weights and KV.

    Parameters
    ----------
    held_by : str or None
        The engine whose memory the plan keeps (:func:`memory_engine`), or ``None`` (the
        bound, or an engine without a memory row).
    gpu : GPU or catalogue name
        One GPU of the group.
    tp : int
        Tensor-parallel degree, >= 1.
    gpu_memory_utilization : float, optional
        The share given, in (0, 1]: returned as it is.
    max_num_batched_tokens : int, optional
        The plan's chunk [tokens] (SGLang's ``--chunked-prefill-size``); default the engine's.
    pp : int
        Pipeline stages, >= 1.

    Returns
    -------
    float
        ``gpu_memory_utilization`` where given; otherwise SGLang's default
        ``--mem-fraction-static`` for ``held_by == "sglang"``
        (:func:`sglang_mem_fraction_static`), TensorRT-LLM's ``free_gpu_memory_fraction``
        for ``held_by == "trtllm"`` (:data:`TRTLLM_FREE_GPU_MEMORY_FRACTION`, a share of
        what is left, not of the total: :func:`held_memory`'s ``share_of``) and vLLM's 0.9
        for every other (:data:`VLLM_GPU_MEMORY_UTILIZATION`), or where ``held_by`` names a
        release from its row's ``default_share_since`` on, the row's
        ``default_share_from_then`` (vLLM's 0.92 from 0.20.0 on, ``"vllm@0.29.0"``).
    """
    _memory_row(held_by)
    tp = whole_number("tp", tp, lo=1)
    pp = whole_number("pp", pp, lo=1)
    check_type("gpu", catalog.gpu(gpu) if isinstance(gpu, str) else gpu, GPU)
    whole_number("max_num_batched_tokens", max_num_batched_tokens, lo=1, allow_none=True)
    if gpu_memory_utilization is not None:
        return real_number("gpu_memory_utilization", gpu_memory_utilization, lo=0, hi=1,
                           lo_open=True)
    if profiled_engine(held_by) == "sglang":
        return sglang_mem_fraction_static(gpu, tp, pp=pp,
                                          chunked_prefill_size=max_num_batched_tokens)
    return default_share(held_by)


def default_share(held_by) -> float:
    """The default share of an engine whose share does not depend on the GPU.

    Parameters
    ----------
    held_by : str or None
        An engine with a memory row but SGLang, optionally ``@VERSION``
        (:func:`memory_engine`), or ``None`` (the bound).

    Returns
    -------
    float
        TensorRT-LLM's ``free_gpu_memory_fraction`` for ``"trtllm"``
        (:data:`TRTLLM_FREE_GPU_MEMORY_FRACTION`); for a release named from its row's
        ``default_share_since`` on, the row's ``default_share_from_then`` (vLLM's 0.92 from
        0.20.0, vllm-project/vllm#38284); else vLLM's 0.9 of its row's release
        (:data:`VLLM_GPU_MEMORY_UTILIZATION`).

    Raises
    ------
    ValueError
        SGLang, whose default depends on the GPU (:func:`sglang_mem_fraction_static`), or an
        engine without a memory row.
    """
    row, name = _memory_row(held_by), profiled_engine(held_by)
    if name == "sglang":
        raise ValueError("SGLang's default share depends on the GPU, its layout and chunk: "
                         "use memory_share")
    if name == "trtllm":
        return TRTLLM_FREE_GPU_MEMORY_FRACTION
    release = shipped.named_release(held_by)
    if row is not None and "default_share_since" in row and release is not None \
            and release >= shipped.release_number(row["default_share_since"]):
        return row["default_share_from_then"]
    return VLLM_GPU_MEMORY_UTILIZATION


def _round_up(x: int, to: int) -> int:
    return -(-x // to) * to


def _mxfp4_experts(model) -> bool:
    """Whether ``model``'s experts are MXFP4 (:data:`MXFP4_BYTES` a parameter, within 1 %)
    with the widths :func:`mxfp4_layout_bytes` lays them out by."""
    return (model.n_experts > 1 and model.intermediate_size is not None
            and model.hidden_size is not None
            and is_mxfp4(model.bytes_per_expert_param))


def mxfp4_layout_bytes(model, gpu, tp=1) -> float:
    """What vLLM's MXFP4 expert kernels hold on each GPU beyond the checkpoint's experts
    [bytes].

    Parameters
    ----------
    model : ModelShape
        The model; 0 unless its experts are MXFP4 (``bytes_per_expert_param`` within 1 % of
        :data:`MXFP4_BYTES`, a 4-bit value and an 8-bit scale per 32) with known widths.
    gpu : GPU or catalogue name
        One GPU of the group: its architecture picks vLLM's kernel (0 for a GPU not listed).
    tp : int
        Tensor-parallel degree, >= 1: each rank holds ``1/tp`` of every expert's width.

    Returns
    -------
    float
        Bytes on each GPU beside the checkpoint's weights (part of the weights vLLM logs).

    Notes
    -----
    Per MoE layer of ``E`` experts, hidden width ``H`` and a rank's intermediate width
    ``I = I_model / tp``, the kernel allocates its gate-up and down matrices at ``H' =
    ⌈H⌉_h`` and ``I' = ⌈I⌉_i`` (rounded up to its alignment), ``3 E (H' I' − H I) · 17/32``
    bytes more than the checkpoint's. On Hopper (OpenAI's Triton kernels, ``I`` to 64) the
    layer's unswizzled scales stay registered beside the swizzled copy the kernel reads
    (``3 E H I / 32``), that copy's rows padded to 256 (``E ((⌈2I⌉_256 − 2I) H + (⌈H⌉_256 −
    H) I) / 32``), and the biases are held in 32-bit (``2 E (2I + H)`` more). Blackwell
    (FlashInfer) rounds both widths to 256, the others (Marlin) ``I`` to 128 and ``H`` to 256.
    gpt-oss-20b on one H100: 0.59 GiB (vLLM logs 13.47 GiB of weights, 0.65 over the
    checkpoint's 12.82); gpt-oss-120b on one H100: 3.53 GiB (64.38 logged, 3.61 over); on one
    A100, Marlin: 0.85 GiB (13.72 logged for gpt-oss-20b, 0.90 over). At TP 2 on H100s the
    rule gives 0.41 GiB a GPU where vLLM 0.19's log is 0.60 over.

    References
    ----------
    .. [1] vLLM, ``vllm/model_executor/layers/quantization/mxfp4.py`` (``create_weights``,
       ``process_weights_after_loading``) and ``utils/mxfp4_utils.py`` (``_swizzle_mxfp4``);
       triton-kernels, ``tensor_details/layout_details/hopper_scale.py``.
    .. [2] ``tests/data/engine_logs/vllm_memory.csv``: the weights vLLM logged.

    See Also
    --------
    engine_memory : the rest of what vLLM keeps beside the weights.
    """
    check_type("model", model, ModelShape)
    spec = catalog.gpu(gpu) if isinstance(gpu, str) else gpu
    check_type("gpu", spec, GPU)
    tp = whole_number("tp", tp, lo=1)
    if not _mxfp4_experts(model):
        return 0.0
    layout = next((row for row in _VLLM_MXFP4_LAYOUTS if spec.name in row[0]), None)
    if layout is None:
        return 0.0
    _, backend, align_i, align_h, scales_twice = layout
    experts, hidden = model.n_experts, int(model.hidden_size)
    width = int(model.intermediate_size) // tp
    padded = _round_up(width, align_i) * _round_up(hidden, align_h) - width * hidden
    extra = 3 * experts * padded * MXFP4_BYTES
    if scales_twice:
        extra += 3 * experts * hidden * width / 32
        extra += experts * ((_round_up(2 * width, 256) - 2 * width) * hidden
                            + (_round_up(hidden, 256) - hidden) * width) / 32
        extra += 2 * experts * (2 * width + hidden)
    return float(model.n_layers * extra)


def memory_rule(held_by, model, gpu, tp=1, *, gpu_memory_utilization=None, max_num_seqs=None,
                max_num_batched_tokens=None, pp=1) -> tuple[float, dict]:
    """A KV cache's memory rule: the share of each GPU for weights and KV, and what the engine
    keeps beside them at that share.

    Parameters
    ----------
    held_by : str or None
        The engine whose memory the answer keeps (:func:`memory_engine`), or ``None``.
    model, gpu, tp, gpu_memory_utilization, max_num_seqs, max_num_batched_tokens, pp
        As for :func:`memory_share` and :func:`held_memory`.

    Returns
    -------
    tuple of (float, dict)
        :func:`memory_share`'s share, and :func:`held_memory`'s bytes at it: the
        ``gpu_memory_utilization`` and the keyword arguments
        :func:`rooflinekit.memory.engine_kv_cache` takes.
    """
    share = memory_share(held_by, gpu, tp, gpu_memory_utilization,
                         max_num_batched_tokens=max_num_batched_tokens, pp=pp)
    return share, held_memory(held_by, model, gpu, tp, max_num_seqs=max_num_seqs,
                              max_num_batched_tokens=max_num_batched_tokens,
                              gpu_memory_utilization=share, pp=pp)


def layout_kv_bytes(held_by, model, gpu, tp, pp, ep, weight_bytes, *,
                    gpu_memory_utilization=None) -> float:
    """The KV memory one GPU of a ``(tp, pp, ep)`` layout holds by an engine's rule [bytes].

    Parameters
    ----------
    held_by : str or None
        The engine whose memory rule applies (:func:`memory_engine`), or ``None`` (the bound:
        the share less the weights alone).
    model : ModelShape
        The model.
    gpu : GPU or catalogue name
        One GPU of the layout.
    tp, pp, ep : int
        The layout's degrees, >= 1.
    weight_bytes : float
        The weights each GPU of the layout holds [bytes], >= 0
        (:func:`rooflinekit.parallel.layout_memory`).
    gpu_memory_utilization : float, optional
        The share, in (0, 1]; default the engine's own (:func:`memory_share`).

    Returns
    -------
    float
        ``max(f · M − w − held, 0)`` [bytes]: ``f`` the share of ``M``, the memory the driver
        reports on the GPU, ``w`` its weights and ``held`` what the engine keeps beside them
        (:func:`held_memory` at ``tp`` and ``pp``; an expert layout's workspace is taken as
        its tensor-parallel rank's); ``max(f · (M − w − held), 0)`` for an engine whose share
        is of what is left (TensorRT-LLM's). What :func:`rooflinekit.roofline.layouts` takes
        as its ``kv_bytes_per_gpu``.
    """
    spec = catalog.gpu(gpu) if isinstance(gpu, str) else gpu
    check_type("gpu", spec, GPU)
    whole_number("ep", ep, lo=1)
    weights = real_number("weight_bytes", weight_bytes, lo=0)
    share, held = memory_rule(held_by, model, spec, tp, pp=pp,
                              gpu_memory_utilization=gpu_memory_utilization)
    kv, _ = kv_bytes_left(spec.visible_memory_per_gpu, share, weights + held_bytes(held),
                          held.get("share_of", "total"))
    return max(kv, 0.0)


def engine_memory(model, gpu, tp=1, *, engine=DEFAULT_ENGINE, max_num_seqs=None,
                  max_num_batched_tokens=None, gpu_memory_utilization=None, pp=1) -> dict:
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
        A serving engine with a row in :data:`ENGINE_MEMORY`, optionally ``@VERSION``
        (``"vllm@0.29.0"``): a release from its row's ``cuda_graph_since`` on counts its CUDA
        graphs too (:func:`counts_cuda_graphs`, its gaps aside), and one from its
        ``default_share_since`` on takes the default share of that release
        (:func:`memory_share`); the name alone is the row's own release.
    max_num_seqs, max_num_batched_tokens : int, optional
        The engine's sequences and token budget a step, >= 1; default the engine's own for the
        GPU (:func:`~rooflinekit.profiles.scheduler_defaults`).
    gpu_memory_utilization : float, optional
        The engine's share of each GPU's memory for weights and KV, in (0, 1] (vLLM's
        ``--gpu-memory-utilization``, SGLang's ``--mem-fraction-static``); default the
        engine's own (:func:`memory_share`).
    pp : int
        Pipeline stages, >= 1: a stage keeps what a tensor-parallel rank keeps, its
        communicators' memory wherever ``tp × pp > 1``.

    Returns
    -------
    dict
        ``activation_peak_bytes``, ``non_torch_bytes`` and ``weight_layout_bytes`` (vLLM's
        MXFP4 kernels' layout, :func:`mxfp4_layout_bytes`) [bytes per GPU], the three
        :func:`rooflinekit.memory.engine_kv_cache` subtracts at ``gpu_memory_utilization``
        (also returned, resolved), and the activation peak's parts ``sampler_bytes``,
        ``moe_workspace_bytes`` and ``cuda_graph_bytes`` (0 where not counted); ``version``
        and ``source`` of the row, and its ``held_out_error_bytes`` (the largest error on a
        logged KV cache with the model left out of the fit; ``None`` where too few logs were
        held out: SGLang's).

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
    ``non_torch_parallel_gib`` above it (the communicators' buffers). vLLM captures its CUDA
    graphs after the KV cache is allocated; before 0.20.0 in the memory
    ``gpu_memory_utilization`` leaves, so they were not counted, and from 0.20.0 on its
    profiling estimates them first and takes them off the cache [5]_, with the default share
    raised from 0.9 to 0.92 to make up for it; its second model runner counted none from
    0.22.0 to 0.28 (:func:`counts_cuda_graphs`' Notes). For such a release, named, the
    activation peak holds ``g = g₀ + g₁ · ⌈L / pp⌉``
    (the row's ``cuda_graph_gib`` and ``cuda_graph_gib_per_layer``, ``L`` the model's layers,
    each stage capturing its own), fitted to what the graphs' capture took in 0.19.0's logs.

    TensorRT-LLM (its row's ``share_of = "free"``) sizes its cache as ``f · (M − W − p)``,
    ``p`` its profiling pass's peak beyond the weights (activations at ``max_num_tokens``,
    CUDA graphs, communicators' workspaces; its temporary cache given back) [4]: the row's
    ``non_torch_gib`` at ``tp = 1`` and ``non_torch_parallel_gib`` above, returned as
    ``non_torch_bytes``, with no activation of its own.

    SGLang sizes its pool as ``f · A − W`` with ``A`` the memory free before the weights load
    (the driver's total ``M`` less ``c``, what the CUDA context and communicators hold, the
    row's ``non_torch_gib`` at ``tp = 1`` and ``non_torch_parallel_gib`` above) [3]: the same
    ``f · M − W − activation − non_torch`` with no activation and ``non_torch = f · c``. Its
    activations and CUDA graphs live in the ``1 − f`` it keeps back.

    References
    ----------
    .. [1] vLLM, ``vllm/v1/worker/gpu_worker.py`` (``determine_available_memory``) and
       ``gpu_model_runner.py`` (``profile_run``, ``_dummy_sampler_run``).
    .. [2] ``tests/data/engine_logs/vllm_memory.csv`` and ``sglang_memory.csv``: the start-up
       logs the rows are fitted to.
    .. [3] sgl-project/sglang, ``python/sglang/srt/model_executor/model_runner.py``
       (``profile_max_num_token``: ``available − total · (1 − mem_fraction_static)``).
    .. [4] NVIDIA TensorRT-LLM, ``tensorrt_llm/_torch/pyexecutor/_util.py``
       (``KvCacheCreator._cal_max_memory``); ``tests/data/engine_logs/trtllm_memory.csv``.
    .. [5] vllm-project/vllm#38284 (first released in 0.20.0: ``vllm/envs.py``'s
       ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` defaults to "1" and
       ``vllm/config/cache.py``'s ``gpu_memory_utilization`` to 0.92 there, "0" and 0.9 in
       0.19.1); the log then prints "Estimated CUDA graph memory: X GiB total" (#30515 added
       the estimate, off by default; ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0`` turns it
       off again).

    See Also
    --------
    rooflinekit.memory.engine_kv_cache : the KV cache these leave.
    counts_cuda_graphs : which releases count their CUDA graphs.
    """
    check_type("model", model, ModelShape)
    rows = {r["engine"]: r for r in ENGINE_MEMORY}
    name = profiled_engine(engine)
    if name not in rows:
        raise ValueError(f"engine must be one with a memory row ({', '.join(rows)}), "
                         f"optionally @VERSION; got {engine!r}")
    graphs = counts_cuda_graphs(engine, model)
    engine = name
    tp = whole_number("tp", tp, lo=1)
    defaults = scheduler_defaults(engine, gpu)
    seqs = whole_number("max_num_seqs", defaults.max_num_seqs if max_num_seqs is None
                        else max_num_seqs, lo=1)
    tokens = whole_number("max_num_batched_tokens", defaults.max_num_batched_tokens
                          if max_num_batched_tokens is None else max_num_batched_tokens, lo=1)
    row = rows[engine]
    pp = whole_number("pp", pp, lo=1)
    share = memory_share(engine, gpu, tp, gpu_memory_utilization, max_num_batched_tokens=tokens,
                         pp=pp)
    non_torch = (row["non_torch_gib"] if tp * pp == 1 else row["non_torch_parallel_gib"]) * GIB
    if engine == "sglang":
        # its share is of the memory free before loading: f·(M − c) − W = f·M − W − f·c
        sampler = moe = layout = 0.0
        non_torch *= share
    elif row["share_of"] == "free":
        # TensorRT-LLM: its profiling pass's peak beyond the weights, one figure (its logs'
        # activations, CUDA graphs and communicators together)
        sampler = moe = layout = 0.0
    else:
        # a model without a vocabulary (the guide's) counts no logits: its peak is understated
        sampler = row["sampler_bytes_per_logit"] * min(seqs, tokens) * (model.vocab_size or 0)
        moe = moe_workspace_bytes(model, tp, tokens)
        layout = mxfp4_layout_bytes(model, gpu, tp)
    graph = _cuda_graph_bytes(row, model, pp) if graphs else 0.0
    return {"activation_peak_bytes": sampler + moe + graph, "non_torch_bytes": non_torch,
            "weight_layout_bytes": layout, "gpu_memory_utilization": share,
            "share_of": row["share_of"],
            "sampler_bytes": sampler, "moe_workspace_bytes": moe, "cuda_graph_bytes": graph,
            "version": row["version"], "source": row["source"],
            "held_out_error_bytes": (row["held_out_error_gib"] * GIB
                                     if "held_out_error_gib" in row else None)}


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
        :class:`~rooflinekit.Engine` or a calibration) where :data:`ENGINE_MEMORY` has its row,
        as ``"NAME@VERSION"`` where ``engine`` names a release whose memory differs from the
        row's own (``"vllm@0.29.0"``: vLLM counts its CUDA graphs and takes 0.92 of the
        memory from 0.20.0 on, its memory row's ``cuda_graph_since`` and ``default_share_since``); ``None`` for the ideal bound (``"ideal"``,
        :data:`rooflinekit.IDEAL`) and for engines without a row, whose KV budget is then the
        weights' remainder alone.
    """
    if engine is IDEAL or (isinstance(engine, str) and engine.strip().lower() == "ideal"):
        return None
    name = scheduler_engine(engine)
    if not any(r["engine"] == name for r in ENGINE_MEMORY):
        return None
    named = shipped.engine_name(engine)     # a shipped profile's object: its own name
    if shipped.is_engine_name(named):
        version = shipped.split_engine_name(named)[1]
        if version is not None and _differs_from_row(f"{name}@{version}"):
            return f"{name}@{version}"
    return name


def counts_cuda_graphs(held_by, model=None) -> bool:
    """Whether an engine's memory profiling takes its CUDA graphs off the KV cache.

    Parameters
    ----------
    held_by : str or None
        An engine with a memory row, optionally ``@VERSION`` (:func:`memory_engine`), or
        ``None`` (the bound).
    model : ModelShape, optional
        The model served: a release may count the graphs of some models and not others (the
        row's ``cuda_graph_gap`` tables). ``None``: the release's rule alone.

    Returns
    -------
    bool
        True where the engine's row gives ``cuda_graph_since`` (vLLM's: 0.20.0), ``held_by``
        names a release not before it, and ``model`` is in none of the row's gaps for that
        release. False for ``None``, for the name alone (the row's own release, whose logs
        the rule is fitted to: vLLM 0.19.0's), for a version that is not a release number,
        and for an engine whose row counts none.

    Notes
    -----
    vLLM 0.20.0 turned its estimate of the graphs on by default
    (``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS``, vllm-project/vllm#38284, which raised the
    default ``--gpu-memory-utilization`` to 0.92 with it); its log says "default since
    v0.21.0", which the 0.20.0 source contradicts. Its second model runner (``gpu/``,
    "Model Runner V2"), the default for Qwen3's dense models from 0.22.0, Llama's and
    Mistral's from 0.23.0 and every dense model from 0.25.0, returned 0 for them until 0.29.0
    (vllm-project/vllm#53306, #49224): the row's gaps. The name alone keeps the row's release:
    vLLM's estimate moves between releases (vllm-project/vllm#45178: three times the graphs'
    memory on one MoE layout; #50780: a profiling transient counted as graphs on hybrid
    models from 0.26.0), so a plan counts it where asked for by release
    (``engine="vllm@0.29.0"``, ``--engine vllm@0.29.0``).
    """
    row = _memory_row(held_by)
    if row is None or "cuda_graph_since" not in row:
        return False
    release = shipped.named_release(held_by)
    if release is None or release < shipped.release_number(row["cuda_graph_since"]):
        return False
    if model is None:
        return True
    check_type("model", model, ModelShape)
    return not any(_in_gap(gap, release, model) for gap in row["cuda_graph_gaps"])


def _differs_from_row(held_by) -> bool:
    """Whether ``held_by`` names a release whose memory rule differs from its row's own: from
    the row's ``cuda_graph_since`` or ``default_share_since`` on (whichever is first)."""
    row = _memory_row(held_by)
    release = shipped.named_release(held_by)
    if row is None or release is None:
        return False
    firsts = [shipped.release_number(row[k]) for k in ("cuda_graph_since", "default_share_since")
              if k in row]
    return bool(firsts) and release >= min(firsts)


def vllm_cuda_graph_bytes(model, gpu, tp=1, *, pp=1) -> tuple[str, float]:
    """What vLLM's CUDA graphs take off the KV cache from the release that counts them.

    Parameters
    ----------
    model : ModelShape
        The model.
    gpu : GPU or catalogue name
        One GPU of the group.
    tp, pp : int
        Tensor-parallel degree and pipeline stages, >= 1.

    Returns
    -------
    since : str
        The first release whose profiling takes them off (its memory row's
        ``cuda_graph_since``: ``"0.20.0"``).
    bytes : float
        Their memory on each GPU [bytes] by the row's rule (:func:`engine_memory`'s Notes).

    Notes
    -----
    A plan by vLLM's name alone holds 0.19.0's memory, which leaves them out: this is what a
    deployment on such a release at the plan's share loses of the planned cache (the
    ``capacity`` command's note; the launch commands fix the cache instead,
    :func:`~rooflinekit.planning.launch_commands`).
    """
    row = _memory_row("vllm")
    since = row["cuda_graph_since"]
    kept = engine_memory(model, gpu, tp, engine=f"vllm@{since}", pp=pp)
    return since, kept["cuda_graph_bytes"]


def cuda_graph_note(since: str, graph_bytes: float, cache_bytes: float) -> str:
    """What vLLM's CUDA graphs take of a cache planned without them, in words.

    Parameters
    ----------
    since, graph_bytes
        :func:`vllm_cuda_graph_bytes`' release and bytes a GPU.
    cache_bytes : float
        The planned KV cache on each GPU [bytes].

    Returns
    -------
    str
        The graphs' size, what they leave of the cache on such a release (none: vLLM refuses
        to start), and the two ways out: ``--kv-cache-memory-bytes`` of the planned cache
        (vLLM 0.10.2 and later), which skips vLLM's profiling, or a plan for the release.
    """
    left = cache_bytes - graph_bytes
    held = (f"{left / GIB:.2f} GiB a GPU of the planned {cache_bytes / GIB:.2f}" if left > 0
            else f"none of the planned {cache_bytes / GIB:.2f} GiB a GPU (vLLM refuses to start)")
    return (f"vLLM from {since} on also takes an estimate of its CUDA graphs off the cache "
            f"(about {graph_bytes / GIB:.2f} GiB a GPU by engine_memory's rule; its log's "
            f"'Estimated CUDA graph memory'), which leaves {held}: there, "
            f"--kv-cache-memory-bytes {int(cache_bytes)} in place of --gpu-memory-utilization "
            f"holds the planned cache (it skips that profiling), or plan with "
            f"engine='vllm@{since}' (or the release deployed) for its own cache")


def _cuda_graph_bytes(row, model, pp) -> float:
    """The CUDA graphs' memory on each GPU of a stage [bytes]: ``(g₀ + g₁·⌈L/pp⌉)`` GiB, ``L``
    the model's layers (:func:`engine_memory`'s Notes)."""
    layers = -(-int(model.n_layers) // pp)
    return (row["cuda_graph_gib"] + row["cuda_graph_gib_per_layer"] * layers) * GIB


def memory_outside_kv(held_by, models=None) -> str:
    """What a planning answer took off each GPU beside the weights before sizing the KV cache,
    in words.

    Parameters
    ----------
    held_by : str or None
        An engine with a memory row (:func:`memory_engine`), or ``None`` (the bound).
    models : iterable of ModelShape, optional
        The answer's models: vLLM's MXFP4 expert layout (:func:`mxfp4_layout_bytes`) is named
        only where one of them has MXFP4 experts. ``None`` (default): named as a rule, "for
        MXFP4 experts".

    Returns
    -------
    str
        The engine, its memory row's version and what it keeps, or that nothing was kept; a
        planner's ``memory_outside_kv`` attribute (its first word names the engine).
    """
    if held_by is None:
        return "nothing else (the bound: no engine memory held)"
    row = _memory_row(held_by)
    version = row["version"]
    name = profiled_engine(held_by)
    if name == "sglang":
        return f"{held_by} {version}'s memory in use before its weights load (engine_memory)"
    if row["share_of"] == "free":
        return f"{held_by} {version}'s profiling peak beyond the weights (engine_memory)"
    if models is None:
        layout = ", and for MXFP4 experts its kernels' layout"
    else:
        layout = (", and its MXFP4 kernels' layout"
                  if any(_mxfp4_experts(check_type("models", m, ModelShape)) for m in models)
                  else "")
    if _differs_from_row(held_by):
        graphs = (f", and the CUDA graphs {name} counts from {row['cuda_graph_since']} on "
                  f"(where its release counts them)" if counts_cuda_graphs(held_by) else "")
        return (f"{held_by}: {name} {version}'s activation peak and non-torch memory{graphs}"
                f"{layout} (engine_memory)")
    return f"{name} {version}'s activation peak and non-torch memory{layout} (engine_memory)"


def held_memory(held_by, model, gpu, tp=1, *, max_num_seqs=None,
                max_num_batched_tokens=None, gpu_memory_utilization=None, pp=1) -> dict:
    """What engine ``held_by`` keeps on each GPU beside weights and KV, as the keyword
    arguments :func:`rooflinekit.memory.engine_kv_cache` and
    :func:`rooflinekit.batching.replica_kv_budget` take it.

    Parameters
    ----------
    held_by : str or None
        An engine with a memory row (:func:`memory_engine` of a planner's ``engine=``), or
        ``None``: nothing is held.
    model, gpu, tp, max_num_seqs, max_num_batched_tokens, gpu_memory_utilization, pp
        As for :func:`engine_memory` (the profiling step: the configuration's budget, or the
        engine's own where it is ``None``; the share the plan takes, :func:`memory_share`).

    Returns
    -------
    dict
        ``activation_peak_bytes``, ``non_torch_bytes`` and ``weight_layout_bytes`` [bytes per
        GPU] (:func:`held_bytes` sums them) and ``share_of`` (what the share is a share of,
        :func:`rooflinekit.memory.engine_kv_cache`); empty for ``None``.
    """
    if held_by is None:
        return {}
    kept = engine_memory(model, gpu, tp, engine=held_by, max_num_seqs=max_num_seqs,
                         max_num_batched_tokens=max_num_batched_tokens,
                         gpu_memory_utilization=gpu_memory_utilization, pp=pp)
    return {k: kept[k] for k in ("activation_peak_bytes", "non_torch_bytes",
                                 "weight_layout_bytes", "share_of")}


def memory_share_of(held_by) -> str:
    """What engine ``held_by``'s memory share is a share of: ``"total"`` (the memory the driver
    reports; vLLM, SGLang, and ``None``, the bound) or ``"free"`` (what the weights and its own
    memory leave; TensorRT-LLM), its memory row's ``share_of``."""
    return "total" if held_by is None else _memory_row(held_by)["share_of"]


def _memory_row(held_by) -> dict | None:
    """Engine ``held_by``'s memory row (``None`` for ``None``), or the error naming the
    engines that have one."""
    if held_by is None:
        return None
    rows = {r["engine"]: r for r in ENGINE_MEMORY}
    name = profiled_engine(held_by)
    if name not in rows:
        raise ValueError(f"held_by must be None or an engine with a memory row "
                         f"({', '.join(sorted(rows))}), optionally @VERSION; got {held_by!r}")
    return rows[name]


def held_bytes(held) -> float:
    """What a :func:`held_memory` answer keeps on each GPU beside weights and KV [bytes]: the
    sum of its byte entries (0 for an empty one)."""
    return float(sum(held.get(k, 0.0) for k in ("activation_peak_bytes", "non_torch_bytes",
                                                 "weight_layout_bytes")))
