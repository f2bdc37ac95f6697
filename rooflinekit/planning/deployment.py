"""From a plan to a deployment: the commands that launch its chosen replica and check it.

The ``vllm serve`` and SGLang command lines of one planned replica (the engines' own flag names;
the model by its Hugging Face repository where the catalogue gives one), and the
``vllm bench serve`` that replays the planned traffic on it.
"""

from __future__ import annotations

import math
import os
import re
import shlex

import xarray as xr

from rooflinekit import catalog, dims
from rooflinekit._validation import check_type, describe
from rooflinekit.memory import kv_bytes_left, vllm_attention_block
from rooflinekit.models import ModelShape
from rooflinekit.planning.traffic import Traffic
from rooflinekit.profiles import (ENGINE_MEMORY, TRTLLM_FREE_GPU_MEMORY_FRACTION,
                                  VLLM_GPU_MEMORY_UTILIZATION, counts_cuda_graphs,
                                  held_bytes, held_memory, memory_rule, missing_attention_kernel,
                                  memory_share, profiled_engine, vllm_cuda_graph_bytes)
from rooflinekit.workloads import SHAREGPT_REQUESTS, Constant, Empirical, sharegpt_lengths

__all__ = ["launch_commands"]

#: The KV-cache formats the engines name, by bytes per element (none: the model's own format).
_VLLM_KV = {1.0: "fp8"}
_SGLANG_KV = {1.0: "fp8_e4m3"}
#: A recurrent state's format by its bytes, as vLLM's --mamba-ssm-cache-dtype and SGLang's
#: --mamba-ssm-dtype name it (two bytes: bfloat16, the format both engines' examples run).
_SSM_STATE = {4.0: "float32", 2.0: "bfloat16"}


def _repository(model: ModelShape) -> str:
    """The model's Hugging Face repository where its source names one, else its name."""
    match = re.search(r"huggingface\.co/([\w.-]+/[\w.-]+)", model.source or "")
    return match.group(1) if match else model.name


def _weight_bits(model: ModelShape) -> tuple[int, int]:
    """The bits a weight of the body and of the routed experts is stored in, scales aside:
    16, 8 or 4 each (a dense model's experts: its body's)."""
    def bits(bytes_per_param: float) -> int:
        return 16 if bytes_per_param >= 1.75 else 8 if bytes_per_param >= 0.75 else 4
    body = bits(model.bytes_per_body_param)
    return body, bits(model.bytes_per_expert_param) if model.expert_params else body


def _weight_format(model: ModelShape) -> str:
    """The formats of a model's body and routed experts, as bits a weight ("16-bit", "body
    16-bit, experts 4-bit"), with ", FP4 matmuls" where its matmuls run in FP4."""
    body, experts = _weight_bits(model)
    text = f"{body}-bit" if experts == body else f"body {body}-bit, experts {experts}-bit"
    return text + (", FP4 matmuls" if model.fp4_matmuls else "")


def _checkpoint_change(model: ModelShape, repository: str, tp: int, stages: int) -> tuple:
    """What the commands add where the plan's weights are not in the format of the checkpoint
    they load: ``(flags, notes)``, ``flags`` the vLLM and SGLang ones.

    The checkpoint is the catalogue model of the same name and repository (a model of the
    user's own, or a ``model_path``, is loaded as planned). A 16-bit checkpoint planned in
    8 bits is quantised to FP8 as vLLM and SGLang load it (``--quantization fp8``: weights
    per-tensor FP8, the path the planner times 8-bit weights on); TensorRT-LLM has no such
    flag. Any other change has no flag: the notes say to load a checkpoint in the planned
    format. The body's and experts' formats are compared (the embedding table and the scales
    aside, which engines keep as they please), and whether the matmuls run in FP4.
    """
    try:
        own = catalog.model(model.name)
    except ValueError:
        return [], []
    if _repository(own) != repository or _weight_format(own) == _weight_format(model):
        return [], []
    planned, stored = (float(m.weight_bytes) / (tp * stages) / 2**30 for m in (model, own))
    sizes = (f"the plan's weights are {_weight_format(model)} ({planned:.1f} GiB a GPU), "
             f"{repository} stores them {_weight_format(own)} ({stored:.1f} GiB a GPU)")
    if _weight_bits(model) == (8, 8) and not model.fp4_matmuls and _weight_bits(own)[0] == 16:
        return ["--quantization", "fp8"], [
            f"{sizes}: the vLLM and SGLang commands quantise them to FP8 as they load "
            f"(--quantization fp8); TensorRT-LLM has no such flag: give it an FP8 checkpoint"]
    return [], [f"{sizes}, and no flag converts them: load a checkpoint in the planned format "
                f"in its place (model_path=, or its folder as plan's model argument), or the "
                f"engines hold {'less' if stored > planned else 'more'} cache than planned"]


def _chosen(cheapest: xr.Dataset, name: str):
    value = cheapest[name].values if name in cheapest else None
    if value is None or value.ndim:
        return None
    return value.item()


def _held_bytes(held_by, model, gpu, tp, max_num_seqs, max_num_batched_tokens,
                share, pp=1) -> float:
    """What engine ``held_by`` keeps on each GPU beside weights and KV at ``share`` [bytes]
    (:func:`~rooflinekit.profiles.held_memory`; 0 for ``None``)."""
    return held_bytes(held_memory(held_by, model, gpu, tp, max_num_seqs=max_num_seqs,
                                  max_num_batched_tokens=max_num_batched_tokens,
                                  gpu_memory_utilization=share, pp=pp))


def _plan_memory(attrs, model, gpu, tp, max_num_seqs, max_num_batched_tokens, pp=1):
    """The engine whose memory the plan held (the one its ``memory_outside_kv`` names first,
    or ``None``), the share of each GPU it gave weights and KV, what that engine kept
    beside them there [bytes], and what the share is of ("total" or "free")."""
    named = str(attrs.get("memory_outside_kv", "")).split(" ", 1)[0].rstrip(":")
    held_by = named if any(r["engine"] == profiled_engine(named) for r in ENGINE_MEMORY) \
        else None
    given = attrs.get("gpu_memory_utilization", VLLM_GPU_MEMORY_UTILIZATION)
    given = float(given) if isinstance(given, (int, float)) else None   # else the engine's rule
    share, held = memory_rule(held_by, model, gpu, tp, gpu_memory_utilization=given,
                              max_num_seqs=max_num_seqs,
                              max_num_batched_tokens=max_num_batched_tokens, pp=pp)
    return held_by, share, held_bytes(held), held.get("share_of", "total")


#: The ShareGPT file ``vllm bench serve --dataset-name sharegpt`` reads (``--dataset-path``; the
#: download its documentation gives, huggingface.co/datasets/anon8231489123/ShareGPT_Vicuna_unfiltered).
SHAREGPT_FILE = "ShareGPT_V3_unfiltered_cleaned_split.json"


def _sharegpt_sample(traffic: Traffic) -> int | None:
    """How many of the recorded ShareGPT sample's first requests ``traffic`` draws its lengths
    from, unscaled (:func:`rooflinekit.workloads.sharegpt_lengths` at the sample's own means),
    so that ``vllm bench serve``'s ShareGPT dataset sends the same prompts; ``None`` for any
    other lengths, scaled ones included."""
    prompt, output = traffic.prompt, traffic.output
    if not (isinstance(prompt, Empirical) and isinstance(output, Empirical)) \
            or prompt.samples is None or output.samples is None:
        return None
    k = len(prompt.samples)
    if not 1 <= k <= SHAREGPT_REQUESTS or len(output.samples) != k:
        return None
    return k if (prompt, output) == sharegpt_lengths(requests=k) else None


def launch_commands(cheapest: xr.Dataset, traffic: Traffic, *, model=None,
                    model_path=None) -> dict:
    """The commands that deploy one planned configuration and check it under its traffic.

    Parameters
    ----------
    cheapest : xarray.Dataset
        One configuration of :func:`~rooflinekit.planning.cheapest_plan` (``by=None``, or one
        label of its ``by`` dimensions selected): ``gpu``, ``tp``, ``max_num_seqs`` and, where
        planned, ``pp``, ``ep`` and ``max_num_batched_tokens``, with the plan's attributes.
    traffic : Traffic
        The traffic planned for: the lengths and arrivals the benchmark replays.
    model : str, ModelShape, optional
        The model (its repository, weight and KV formats); default the plan's model by
        catalogue name.
    model_path : str or os.PathLike, optional
        What the engines load: a local folder or a Hugging Face repo id. Default: the
        repository the model's source names, else its name.

    Returns
    -------
    dict
        ``vllm_serve``, ``sglang_serve`` and ``trtllm_serve`` (one replica's launch command in
        each engine), ``replicas`` (how many to run), ``bench_serve`` (``vllm bench serve``
        replaying the traffic's exact mean lengths, :attr:`rooflinekit.Traffic.mean_prompt_tokens`
        and :attr:`~rooflinekit.Traffic.mean_output_tokens`, or ShareGPT's own sample where the
        traffic drew the recorded one unscaled (:func:`rooflinekit.workloads.sharegpt_lengths`),
        and its arrivals on one replica at its peak share), ``rate`` [requests/s], the rate it
        replays, and ``notes`` (where the deployment may differ from the plan).

    Raises
    ------
    ValueError
        A plan that serves nothing (no configuration meets the SLO), a Dataset that holds
        more than one configuration, or a ``model`` whose weights are not the plan's
        (``weight_bytes``: a model planned in a format of its own, passed without it).
    TypeError
        Not a plan's Dataset, or not a :class:`~rooflinekit.Traffic`.

    Notes
    -----
    The commands switch the engines' default prefix cache off where the plan had none, so the
    deployment runs what was planned, and on for a hybrid model where it had one (vLLM's is
    opt-in for them), in vLLM's "align" mode, whose two states a request the plan admitted
    (:func:`rooflinekit.batching.replica_state_tokens`). A plan without
    ``max_num_batched_tokens`` prefilled whole prompts, which the engines chunk at a budget of
    their own: ``notes`` says so. A hybrid model's recurrent state is named in the format
    the plan held it (``ModelShape.ssm_state_bytes_per_element``: vLLM's
    ``--mamba-ssm-cache-dtype``, SGLang's ``--mamba-ssm-dtype``), since the engines' defaults
    differ: SGLang keeps FP32, and vLLM's ``auto`` has meant the weights' 16 bits in some
    releases (the config's ``mamba_ssm_dtype`` for Qwen3.5 and Nemotron-H) and FP32 in
    later ones. TensorRT-LLM takes it only from an LLM API options file
    (``kv_cache_config.mamba_ssm_cache_dtype``), which ``notes`` spells out.

    An expert-parallel plan (``ep`` > 1) spreads the experts with SGLang's ``--ep-size`` and
    TensorRT-LLM's ``--ep_size``; vLLM spreads them over every GPU of its tensor-parallel group
    or none (``--enable-expert-parallel``), so its command takes the flag where ``ep`` equals
    ``tp`` and ``notes`` says where it cannot.

    Where the plan's weights are in another format than the checkpoint the commands load (a
    catalogue model planned with ``bytes_per_param`` of its own, ``--dtype``), a 16-bit
    checkpoint planned in 8 bits is quantised to FP8 as vLLM and SGLang load it
    (``--quantization fp8``); any other change has no flag, and ``notes`` says to load a
    checkpoint in the planned format (``model_path``).

    The plan's cache is ``C = u·M − W − F``: a share ``u`` of the memory the driver reports
    on each GPU ``M``, less the weights ``W`` and what the plan's engine keeps beside them
    ``F`` (:func:`rooflinekit.engine_memory`; 0 where the plan kept none). vLLM's
    ``--gpu-memory-utilization`` is ``(C + W + F_vLLM) / M`` (``u`` itself for a vLLM plan),
    and ``--kv-cache-memory-bytes`` is ``C`` (vLLM 0.10.2 and later; drop it on an older
    release, whose share alone gives ``C``): with it vLLM skips its memory profiling, so
    neither the default share of a release (0.92 from 0.20.0) nor its count of CUDA graphs
    (from 0.20.0, :func:`rooflinekit.profiles.counts_cuda_graphs`) moves the cache, and the
    share is left to vLLM's start-up check that that much memory is free. Graphs the plan
    did not count are captured in the ``(1 − u)·M`` the share leaves; ``notes`` says where
    they would not fit there. ``--block-size`` is the block the plan held KV in, which for a
    model with latent attention is one its first-choice MLA kernel takes
    (:func:`rooflinekit.memory.vllm_attention_block`: 32 for DeepSeek-R1 on a B200, 64 for
    DeepSeek-V3.2 anywhere): asked for a block that kernel does not take, vLLM 0.18 and later
    falls back to a slower one, or refuses to start.
    SGLang's ``--mem-fraction-static`` is a share of the memory free before its weights
    load, ``M − c`` (``c`` the CUDA context and communicators, its memory row): ``(C + W) /
    (M − c)``; ``notes`` says where that is above SGLang's own default
    (:func:`rooflinekit.profiles.sglang_mem_fraction_static`), which keeps more back for its
    activations and CUDA graphs. TensorRT-LLM sizes its cache as a share of the memory left
    after the weights and its profiling pass's peak P (``--kv_cache_free_gpu_memory_fraction``):
    ``C / (M − W − P)``, P its memory row's (:func:`~rooflinekit.profiles.engine_memory`) [1]_;
    ``notes`` says where that is above 1 (TensorRT-LLM cannot hold the plan's cache). Where the
    cache holds fewer tokens than the model's context, each command caps a request at the
    cache (``--max-model-len``, ``--context-length``, ``--max_seq_len``): the engines refuse
    to start when one request of their context does not fit. Its block reuse (prefix caching) is set in its options file
    (``kv_cache_config.enable_block_reuse``), not by a flag: the command leaves it as the
    engine has it.

    References
    ----------
    .. [1] TensorRT-LLM, ``trtllm-serve`` command reference (``--tp_size``, ``--pp_size``,
       ``--ep_size``, ``--max_batch_size``, ``--max_num_tokens``, ``--kv_cache_free_gpu_memory_fraction``).
    """
    check_type("cheapest", cheapest, xr.Dataset)
    check_type("traffic", traffic, Traffic)
    if "feasible" not in cheapest:
        raise TypeError("cheapest must be a configuration of rooflinekit.cheapest_plan")
    gpu, tp, seqs = (_chosen(cheapest, k) for k in (dims.GPU, dims.TP, dims.MAX_NUM_SEQS))
    if gpu is None or tp is None or seqs is None:
        raise ValueError("cheapest must hold one configuration: select one label of its 'by' "
                         "dimensions first (or use cheapest_plan(plan, by=None))")
    if not bool(cheapest["feasible"]) or int(cheapest["replicas"]) <= 0:
        raise ValueError("no configuration of this plan serves the traffic within its SLO: "
                         "there is nothing to deploy")
    if model is None:
        model = catalog.resolve_model(str(_chosen(cheapest, dims.MODEL)))
    elif isinstance(model, str):
        model = catalog.resolve_model(model)
    elif not isinstance(model, ModelShape):
        raise TypeError(f"model must be a name or a rooflinekit.ModelShape; got "
                        f"{describe(model)}")
    planned = _chosen(cheapest, "weight_bytes")
    if planned is not None and not math.isclose(float(model.weight_bytes), float(planned),
                                                 rel_tol=1e-6):
        raise ValueError(f"the plan's model weighs {float(planned) / 2**30:.2f} GiB in the "
                         f"format it was planned in, model {model.name!r} "
                         f"{float(model.weight_bytes) / 2**30:.2f} GiB: pass the ModelShape "
                         f"the plan was made with as model=")
    # a plan's budget variable holds 0 where prompts were prefilled whole
    pp, budget = _chosen(cheapest, dims.PP), _chosen(cheapest, dims.MAX_NUM_BATCHED_TOKENS) or None
    attrs = cheapest.attrs
    if model_path is None:
        repository = _repository(model)
    else:
        if not isinstance(model_path, (str, os.PathLike)) or not os.fspath(model_path).strip():
            raise TypeError(f"model_path must be a folder or a repo id (a non-empty string or "
                            f"path); got {describe(model_path)}")
        repository = os.fspath(model_path).strip()
    kv = float(model.kv_bytes_per_element)
    caching = bool(attrs.get("prefix_caching", 0))
    replicas = int(cheapest["replicas"])
    rate = float(traffic.rate) / replicas

    vllm = ["vllm", "serve", repository, "--tensor-parallel-size", str(int(tp))]
    sglang = ["python", "-m", "sglang.launch_server", "--model-path", repository,
              "--tp-size", str(int(tp))]
    trtllm = ["trtllm-serve", repository, "--tp_size", str(int(tp))]
    stages = 1
    if pp is not None and int(pp) > 1:
        stages = int(pp)
        vllm += ["--pipeline-parallel-size", str(int(pp))]
        sglang += ["--pp-size", str(int(pp))]
        trtllm += ["--pp_size", str(int(pp))]
    notes = []
    ep = _chosen(cheapest, dims.EP)
    if ep is not None and int(ep) > 1:
        sglang += ["--ep-size", str(int(ep))]
        trtllm += ["--ep_size", str(int(ep))]
        if int(ep) == int(tp):
            # vLLM spreads the experts over every GPU of the tensor-parallel group
            vllm += ["--enable-expert-parallel"]
        else:
            notes.append(f"vLLM spreads a model's experts over all {int(tp)} tensor-parallel "
                         f"GPUs (--enable-expert-parallel) or none; the plan's ep={int(ep)} "
                         f"is SGLang's --ep-size and TensorRT-LLM's --ep_size only, so its "
                         f"vLLM command shards every expert instead")
    vllm += ["--max-num-seqs", str(int(seqs))]
    sglang += ["--max-running-requests", str(int(seqs))]
    trtllm += ["--max_batch_size", str(int(seqs))]
    if budget is not None:
        vllm += ["--max-num-batched-tokens", str(int(budget))]
        sglang += ["--chunked-prefill-size", str(int(budget))]
        trtllm += ["--max_num_tokens", str(int(budget))]
    else:
        notes.append("the plan prefilled each prompt whole in one step; both engines chunk "
                     "prompts at a default budget of their own (plan with "
                     "max_num_batched_tokens= to deploy exactly what was planned)")
    card = catalog.gpu(str(gpu))
    memory = float(card.visible_memory_per_gpu)
    weights = float(model.weight_bytes) / (int(tp) * stages)
    held_by, share, held, share_of = _plan_memory(attrs, model, card, int(tp), int(seqs),
                                                  budget, stages)
    cache, _ = kv_bytes_left(memory, share, weights + held, share_of)  # the plan's, a GPU
    # vLLM's share holds weights, KV and its own F: (C + W + F) / M; a plan that held
    # nothing (the bound) keeps its share
    vllm_share = share if profiled_engine(held_by) in ("vllm", None) else (
        cache + weights + _held_bytes("vllm", model, card, int(tp), int(seqs), budget, share,
                                      stages)) / memory
    # the planned cache itself, so that no release's share or CUDA-graph accounting moves it;
    # a block the first-choice MLA kernel takes, which the plan counted (a smaller one would
    # push vLLM onto a slower kernel, or stop a sparse-MLA model from starting)
    asked = int(attrs.get("block_size", 16))
    block = vllm_attention_block(model, card, asked)
    vllm += ["--gpu-memory-utilization", f"{min(max(vllm_share, 0.01), 1.0):.3g}",
             "--kv-cache-memory-bytes", str(int(cache)), "--block-size", str(block)]
    missing = missing_attention_kernel("vllm", model, card)
    if missing:
        notes.append(f"the vLLM command will not start: {missing}")
    elif block != asked:
        notes.append(f"vLLM's --block-size is {block}, not {asked}: its first-choice attention "
                     f"kernel for {model.name}'s latent attention on {card.name} takes blocks "
                     f"of {block} (vllm_attention_block), as the plan counted; asked for "
                     f"{asked}, vLLM 0.18 and later would fall back to a slower kernel or "
                     f"refuse to start")
    if held_by is None or not counts_cuda_graphs(held_by, model):
        # graphs the plan did not count are captured in what its share leaves
        since, graphs = vllm_cuda_graph_bytes(model, card, int(tp), pp=stages)
        spare = (1.0 - min(vllm_share, 1.0)) * memory
        if graphs > spare:
            notes.append(f"vLLM's CUDA graphs (about {graphs / 2**30:.2f} GiB a GPU by "
                         f"engine_memory's rule) outgrow the {spare / 2**30:.2f} GiB a GPU "
                         f"the plan leaves beside its share: vLLM may run out of memory "
                         f"capturing them; plan with a smaller gpu_memory_utilization, or "
                         f"with engine='vllm@{since}' or later, which counts them")
    # SGLang's share is of the memory free before loading, M − c: (C + W) / (M − c)
    before = memory - _held_bytes("sglang", model, card, int(tp), int(seqs), budget, 1.0,
                                  stages)
    fraction = min(max((cache + weights) / before, 0.01), 1.0)
    sglang += ["--mem-fraction-static", f"{fraction:.3f}"]
    own = memory_share("sglang", card, int(tp), max_num_batched_tokens=budget, pp=stages)
    if round(fraction, 3) > own:
        notes.append(f"SGLang's --mem-fraction-static {fraction:.3f} is above its own default "
                     f"for this GPU and chunk ({own:.3f}): it keeps "
                     f"{(1 - fraction) * before / 2**30:.1f} GiB a GPU for activations and "
                     f"CUDA graphs where it would keep {(1 - own) * before / 2**30:.1f}")
    # TensorRT-LLM's fraction is of what the weights and its own peak P leave: C / (M − W − P)
    peak = _held_bytes("trtllm", model, card, int(tp), int(seqs), budget,
                       TRTLLM_FREE_GPU_MEMORY_FRACTION, stages)
    left = memory - weights - peak
    free = cache / left if left > 0 else 0.0
    trtllm += ["--kv_cache_free_gpu_memory_fraction", f"{min(max(free, 0.01), 1.0):.2f}"]
    if free > 1.0:
        notes.append(f"TensorRT-LLM's profiling peak ({peak / 2**30:.1f} GiB a GPU beside the "
                     f"weights) leaves {max(left, 0.0) / 2**30:.1f} GiB, less "
                     f"than the plan's {cache / 2**30:.1f} GiB cache: its command holds a smaller "
                     f"cache than was planned (plan with engine='trtllm' for its own)")
    tokens = int(cheapest["kv_budget_tokens"]) if "kv_budget_tokens" in cheapest else None
    if tokens and (model.max_context is None or tokens < model.max_context):
        # an engine refuses to start when one request of its context outgrows the cache
        vllm += ["--max-model-len", str(tokens)]
        sglang += ["--context-length", str(tokens)]
        trtllm += ["--max_seq_len", str(tokens)]
        notes.append(f"the KV cache holds {tokens:,} tokens, fewer than the model's context: "
                     f"the commands cap a request at that many, or the engines would refuse "
                     f"to start")
    if model_path is None:
        flags, changed = _checkpoint_change(model, repository, int(tp), stages)
        vllm += flags
        sglang += flags
        notes += changed
    if kv in _VLLM_KV:
        vllm += ["--kv-cache-dtype", _VLLM_KV[kv]]
        sglang += ["--kv-cache-dtype", _SGLANG_KV[kv]]
    if float(model.state_bytes_per_sequence) > 0.0:
        # the engines' defaults differ (SGLang float32; vLLM's "auto" by release), so the
        # format the plan held is named
        ssm = _SSM_STATE.get(float(model.ssm_state_bytes_per_element))
        if ssm is None:
            notes.append(f"the plan held {model.name}'s recurrent state at "
                         f"{float(model.ssm_state_bytes_per_element):g} bytes an element, a "
                         f"format neither engine keeps it in")
        else:
            vllm += ["--mamba-ssm-cache-dtype", ssm]
            sglang += ["--mamba-ssm-dtype", ssm]
            # trtllm-serve has no flag for it: its LLM API options file carries it
            notes.append(f"TensorRT-LLM keeps the recurrent state in the format its LLM API "
                         f"options give (kv_cache_config.mamba_ssm_cache_dtype; 'auto' follows "
                         f"the model config): for the plan's, pass trtllm-serve "
                         f"--extra_llm_api_options a YAML file holding "
                         f"'kv_cache_config: {{mamba_ssm_cache_dtype: {ssm}}}'")
    recv = int(attrs.get("recv_interval", 1))
    if recv > 1:
        sglang += ["--scheduler-recv-interval", str(recv)]
        notes.append(f"planned with SGLang's receive interval of {recv} steps; vLLM and "
                     f"TensorRT-LLM take new requests in at every step, a scheduling their "
                     f"commands run and the plan did not")
    stream = int(attrs.get("stream_interval", 1))
    if stream > 1:
        vllm += ["--stream-interval", str(stream)]
        sglang += ["--stream-interval", str(stream)]
        notes.append(f"planned with tokens sent {stream} at a time (--stream-interval), the itl "
                     f"target held to the gaps between sends; the TensorRT-LLM command streams "
                     f"every token, which the plan did not")
    if not caching:
        vllm += ["--no-enable-prefix-caching"]
        sglang += ["--disable-radix-cache"]
    elif float(model.state_bytes_per_sequence) > 0.0:
        # vLLM caches a hybrid's prefixes only when asked, and then holds each state twice in
        # its "align" mode, as the plan's admission held it
        vllm += ["--enable-prefix-caching", "--mamba-cache-mode", "align"]

    requests = int(attrs["requests"])
    sample = _sharegpt_sample(traffic)
    if sample is None:
        # the distributions' means, not the plan's draws' (a few hundred heavy-tailed draws
        # can miss them by several per cent): what the benchmark replays at fixed lengths
        prompt = round(traffic.mean_prompt_tokens)
        output = round(traffic.mean_output_tokens)       # at least one token
        dataset = ["--dataset-name", "random", "--random-input-len", str(prompt),
                   "--random-output-len", str(output)]
        seed = int(attrs.get("seed", 0))
    else:
        # the client's own sample: its shuffle with seed 0 is the recorded one
        dataset = ["--dataset-name", "sharegpt", "--dataset-path", SHAREGPT_FILE]
        seed = 0
        notes.append(f"the benchmark sends ShareGPT's first {requests:,} prompts (seed 0); the "
                     f"plan drew its lengths from the first {sample:,} as one run recorded "
                     f"them, whose replies were Llama-3-8B-Instruct's: the served model's own "
                     f"replies may run longer or shorter, up to each conversation's")
    bench = ["vllm", "bench", "serve", "--model", repository, *dataset,
             "--request-rate", f"{rate:.4g}", "--num-prompts", str(requests),
             "--seed", str(seed)]
    if traffic.arrival == "gamma":
        bench += ["--burstiness", f"{float(traffic.burstiness):g}"]
    if sample is None and not all(isinstance(lengths, Constant)
                                  for lengths in (traffic.prompt, traffic.output)):
        notes.append("the benchmark's random dataset replays the mean lengths; the plan drew "
                     "them spread, so its tail latencies are the harder test")
    return {"vllm_serve": shlex.join(vllm), "sglang_serve": shlex.join(sglang),
            "trtllm_serve": shlex.join(trtllm), "replicas": replicas,
            "bench_serve": shlex.join(bench), "rate": rate, "notes": notes}
