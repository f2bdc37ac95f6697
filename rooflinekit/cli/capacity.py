"""``rooflinekit capacity``: one model on one tensor-parallel GPU group."""

from __future__ import annotations

import sys

from rooflinekit import catalog, memory, pricing, roofline, units
from rooflinekit.batching import replica_kv_window
from rooflinekit.cli._args import (
    read_model,
    engine_from_args,
    COMMAND_API,
    PREFIX_FLAGS,
    SPECULATIVE_FLAGS,
    add_flag,
    add_long_context_flag,
    add_output_flags,
    apply_dtypes,
    check_trained_context,
    examples,
    nonnegative_float,
    positive_int,
    shared_prefix,
    speculative_draft,
)
from rooflinekit.cli._output import emit, engine_kv_rule, format_value, print_table
from rooflinekit.models import ModelShape
from rooflinekit.profiles import (counts_cuda_graphs, cuda_graph_note, held_bytes,
                                  memory_engine, memory_rule, missing_attention_kernel, profiled_engine,
                                  scheduler_defaults, scheduler_engine, vllm_cuda_graph_bytes)

__all__ = list(COMMAND_API)

NAME = "capacity"
HELP = "a model on a GPU group: fit, KV budget, concurrency, TTFT/ITL, cost"
DESCRIPTION = ("Capacity of one model on one tensor-parallel GPU group. The KV cache is the "
               "engine's: its share of the memory the driver reports, less the weights and what "
               "it keeps beside them (--workspace-fraction: the guide's rule instead). A "
               "configuration that does not fit says why and exits 1 (the figures anyway with "
               "--show-anyway).")
EPILOG = examples(NAME, "llama-3.1-70b h100 --tp 4 --max-model-len 8192 --batch-size 32",
                  "path/to/config.json l40s --json",
                  "llama-3.1-8b h100 --gpu-memory-utilization 0.95 --kv-cache-dtype fp8 --csv",
                  "qwen3-next-80b-a3b h100 --tp 4 --max-model-len 4096 "
                  "--mamba-ssm-cache-dtype bf16",
                  "llama-3.1-70b h100 --tp 4 --engine sglang",
                  "llama-3.1-70b guide-lab-80GB --tp 8 --workspace-fraction 0.1",
                  "llama-3.1-8b h100 --calibration h100_vllm.json",
                  "llama-3.1-70b h100 --tp 8 --speculative-draft llama-3.1-8b "
                  "--num-speculative-tokens 4 --acceptance 0.8",
                  "llama-3.1-8b h100 --max-model-len 4096 --prefix-tokens 2048 "
                  "--prefix-groups 4 --prefix-share 0.8",
                  "llama-3.1-8b h100 --max-model-len 262144 --allow-long-context --show-anyway")

#: Each quantity: (key, label with its unit). Keys are the library's dimension names.
_QUANTITIES = (
    ("tp", "tensor-parallel size"), ("context_length", "max model len [tokens]"),
    ("batch_size", "batch size [sequences]"), ("prompt_tokens", "input len [tokens]"),
    ("fits", "fits"), ("weight_gib", "weights [GiB]"),
    ("kv_bytes_per_token", "KV per token [bytes]"),
    ("state_bytes_per_sequence", "recurrent state per sequence [bytes]"),
    ("gpu_memory_utilization", "engine's memory share (of what: the KV cache line)"),
    ("engine_memory_gib", "engine memory outside KV, per GPU [GiB]"),
    ("kv_budget_gib", "KV budget [GiB]"),
    ("kv_budget_tokens", "KV budget [tokens]"),
    ("max_concurrent_sequences", "max concurrent sequences"),
    ("decoding_max_concurrent_sequences",
     "max concurrent sequences, decoding (sliding layers at their window)"),
    ("ttft_ms", "TTFT [ms]"),
    ("decode_step_time_ms", "decode step (ITL) [ms]"), ("tokens_per_s", "throughput [tokens/s]"),
    ("tokens_per_s_per_gpu", "throughput per GPU [tokens/s]"),
    ("usd_per_million_tokens", "cost [USD/1M generated tokens]"),
    ("speculative_tokens_per_step", "speculative: tokens per step"),
    ("speculative_itl_ms", "speculative: ITL per token [ms]"),
    ("speculative_speedup", "speculative: speed-up [x]"),
    ("speculative_max_concurrent_sequences", "speculative: max concurrent sequences"),
    ("speculative_usd_per_million_tokens",
     "speculative: cost [USD/1M generated tokens]"),
    ("prefix_max_concurrent_sequences", "shared prefix: max concurrent sequences"),
    ("ideal_ttft_ms", "ideal roofline bound: TTFT [ms]"),
    ("ideal_decode_step_time_ms", "ideal roofline bound: decode step (ITL) [ms]"),
    ("ideal_tokens_per_s", "ideal roofline bound: throughput [tokens/s]"),
)


#: Tokens per sequence without --max-model-len [tokens].
_DEFAULT_CONTEXT = 8192


def add_arguments(parser) -> None:
    add_flag(parser, "--model", positional=True)
    add_flag(parser, "--name")
    add_flag(parser, "--gpu", positional=True)
    add_flag(parser, "--tensor-parallel-size")
    add_flag(parser, "--max-model-len", default=None,
             help="tokens per sequence, prompt + output (8192)")
    add_long_context_flag(parser)
    add_flag(parser, "--batch-size", default=1, help="sequences decoded per step (1)")
    parser.add_argument("--input-len", type=positive_int, default=1024, metavar="TOKENS",
                        help="prompt tokens for TTFT (1024)")
    add_flag(parser, "--workspace-fraction",
             help="budget the KV cache by the guide's rule instead: this share of the memory "
                  "left after the weights kept for activations and the allocator, in [0, 1)")
    add_flag(parser, "--gpu-memory-utilization",
             help="the engine's share of the memory the driver reports on each GPU for weights "
                  "+ KV, in (0, 1]; what it keeps beside the weights comes off it (vLLM's "
                  "activation peak and non-torch memory, SGLang's memory in use before "
                  "loading; none for --engine ideal) (default: the engine's own, 0.9 or "
                  "SGLang's --mem-fraction-static rule)")
    add_flag(parser, "--block-size", default=None,
             help="KV block size of the engine's rule [tokens] (16)")
    add_flag(parser, "--dtype")
    add_flag(parser, "--kv-cache-dtype")
    add_flag(parser, "--mamba-ssm-cache-dtype")
    parser.add_argument("--gpu-hourly", type=nonnegative_float, metavar="USD",
                        help="USD per GPU-hour (default: catalogue)")
    add_flag(parser, "--allreduce")
    add_flag(parser, "--engine")
    add_flag(parser, "--calibration")
    for flag in SPECULATIVE_FLAGS:
        add_flag(parser, flag)
    for flag in PREFIX_FLAGS:
        if flag != "--enable-prefix-caching":    # held once: the cache is what is counted
            add_flag(parser, flag, **({"help": "a shared prefix of this many tokens, its whole "
                                                "blocks held once in the KV cache (prefix "
                                                "caching)"} if flag == "--prefix-tokens" else {}))
    parser.add_argument("--show-anyway", action="store_true",
                        help="print the figures and exit 0 even when the model does not fit")
    add_output_flags(parser)


def _check(args, model) -> None:
    """Refuse what the figures cannot mean, before computing them."""
    if args.gpu_memory_utilization is not None and args.workspace_fraction is not None:
        raise ValueError("--gpu-memory-utilization and --workspace-fraction are two rules for "
                         "the same memory: give one")
    if args.workspace_fraction is not None and args.block_size is not None:
        raise ValueError("--block-size applies to the engine's rule, not --workspace-fraction "
                         "(the guide's rule counts tokens, not blocks)")
    prefix = shared_prefix(args)     # refuses the shaping flags without --prefix-tokens
    if prefix is not None:
        if prefix.tokens > args.max_model_len:
            raise ValueError(f"--prefix-tokens ({prefix.tokens:,}) must be at most "
                             f"--max-model-len ({args.max_model_len:,}): the prefix is part of "
                             f"each sequence")
    if model.n_heads % args.tp:
        raise ValueError(f"--tensor-parallel-size {args.tp} does not divide the "
                         f"{model.n_heads} attention heads of {model.name}")


def _budget(args, model, gpu, share, held, held_by):
    """The group's KV budget [bytes], [tokens] and sequences of ``--max-model-len`` that fit:
    the engine's ``share`` less ``held``, what it keeps beside the weights
    (:func:`rooflinekit.profiles.held_memory`), or with ``--workspace-fraction`` the guide's
    rule. Sequences: vLLM's logged maximum concurrency; under SGLang (``held_by``) its pool's
    tokens over the length (a sliding-window model's full pool,
    :func:`rooflinekit.batching.replica_kv_window`)."""
    tp, ctx = args.tp, args.max_model_len
    if args.workspace_fraction is not None:
        reserve = args.workspace_fraction
        return (memory.usable_kv_bytes(model, gpu, tp=tp, reserve=reserve),
                memory.kv_budget_tokens(model, gpu, tp=tp, reserve=reserve),
                memory.max_concurrent_sequences(model, gpu, ctx, tp=tp, reserve=reserve))
    # a sliding-window group's most a request holds counts one step's budget, the engine's
    chunk = scheduler_defaults(scheduler_engine(held_by), gpu).max_num_batched_tokens
    engine = memory.engine_kv_cache(model, gpu, tp=tp, gpu_memory_utilization=share,
                                    block_size=args.block_size or 16, max_model_len=ctx,
                                    max_num_batched_tokens=chunk, **held)
    sequences = int(engine["max_concurrency"])
    if held_by == "sglang":          # pages of one token; a request's context in the full pool
        sequences = _decoding_sequences(model, engine["kv_cache_tokens"], ctx, 1, pool="sglang")
    return engine["available_bytes"] * tp, engine["kv_cache_tokens"], sequences


def _decoding_sequences(model, tokens, context_length, block_size, pool="vllm"):
    """Sequences of ``context_length`` tokens that ``tokens`` of ``pool``'s KV cache hold once
    they decode, each sliding-window group at its window's blocks (the simulator's count:
    :func:`rooflinekit.batching.replica_kv_window`; SGLang's: its full pool), where vLLM's
    logged concurrency counts a window group at its most while a prompt prefills, a window and
    a step's tokens."""
    full, sliding, window, unit = replica_kv_window(model, block_size, pool=pool)
    blocks = -(-context_length // block_size)
    return tokens // block_size * unit // (full * blocks + sliding * min(blocks, window))


def _sequences(args, model, gpu, budget, **shape):
    """Sequences of ``--max-model-len`` in the rule's budget less a draft's weights or with
    shared prefixes (``shape``: :func:`rooflinekit.memory.max_concurrent_sequences`'s)."""
    if args.workspace_fraction is not None:
        return int(memory.max_concurrent_sequences(model, gpu, args.max_model_len, args.tp,
                                                   args.workspace_fraction, **shape))
    budget -= shape.pop("draft_weight_bytes", 0.0)
    return int(memory.sequences_in_budget(model, max(float(budget), 0.0), args.max_model_len,
                                          block_size=args.block_size or 16, **shape))


def _why_not(result) -> tuple[bool, str | None]:
    """Whether the configuration fits at all, and what is wrong with it (``None``: nothing)."""
    if not result["fits"]:
        # name what the engine keeps beside the weights too: it can be what leaves no room
        held = result.get("engine_memory_gib") or 0.0
        beside = (f" and what the engine keeps beside them on each GPU ({held:,.1f} GiB: "
                  f"{result['kv_cache_rule']})" if held > 0 else "")
        return False, (f"the weights ({result['weight_gib']:,.1f} GiB){beside} leave no memory "
                       f"for the KV cache on {result['tp']} GPU(s); raise "
                       f"--tensor-parallel-size or use a smaller --dtype")
    if result["max_concurrent_sequences"] < 1:
        return False, (f"not one sequence of {result['context_length']:,} tokens fits in the "
                       f"{result['kv_budget_tokens']:,}-token KV budget; lower --max-model-len")
    if result["batch_size"] > result["max_concurrent_sequences"]:
        # it fits, but not at this batch: figures with a warning
        return True, (f"batch {result['batch_size']:,} exceeds the "
                      f"{result['max_concurrent_sequences']:,} sequences of "
                      f"{result['context_length']:,} tokens that fit")
    return True, None


def run(args, out) -> int:
    model = apply_dtypes(read_model(args), args)
    gpu = catalog.gpu(args.gpu)
    if gpu.scale_up_gpus is not None and args.tp > gpu.scale_up_gpus:
        raise ValueError(f"--tensor-parallel-size {args.tp} is more than one scale-up domain of "
                         f"{gpu.name} ({gpu.scale_up_gpus} GPUs linked by NVLink or Infinity "
                         f"Fabric): its all-reduces would cross the network, which is not timed; "
                         f"split across domains with pipeline parallelism (rooflinekit layouts)")
    if args.max_model_len is None:
        args.max_model_len = _DEFAULT_CONTEXT
    else:                       # a length the user typed: not above what the model was trained on
        check_trained_context(args, model)
    _check(args, model)
    draft = speculative_draft(args)
    engine = engine_from_args(args, gpu)
    tp, ctx, batch = args.tp, args.max_model_len, args.batch_size
    # the engine's share and what it keeps beside the weights (vLLM's footprint, SGLang's
    # memory in use before loading; nothing for the bound), unless the guide's rule is asked
    held_by = memory_engine(engine)     # a calibration: its serving engine's
    guide = args.workspace_fraction is not None
    share, held = (None, {}) if guide else memory_rule(
        held_by, model, gpu, tp, gpu_memory_utilization=args.gpu_memory_utilization)
    budget, tokens, sequences = _budget(args, model, gpu, share, held, held_by)
    note = None                     # what vLLM's CUDA graphs take of it, where not counted
    # TTFT is a prefill; ITL, throughput and cost are decode steps: each formula asks the
    # engine (a calibration: its knob set of this model and GPU) for its phase's
    result = {
        "model": model.name, "gpu": gpu.name, "tp": tp, "context_length": ctx,
        "batch_size": batch, "prompt_tokens": args.input_len, "fits": bool(budget > 0),
        "weight_gib": float(memory.weight_bytes(model)) / units.GiB,
        "kv_bytes_per_token": float(memory.kv_bytes_per_token(model)),
        "kv_budget_gib": float(budget) / units.GiB,
        "kv_budget_tokens": int(tokens),
        "max_concurrent_sequences": int(sequences),
        "ttft_ms": float(roofline.time_to_first_token(model, gpu, args.input_len, tp=tp,
                                                      engine=engine)) / units.MS,
        "decode_step_time_ms": float(roofline.decode_step_time(model, gpu, batch, ctx, tp=tp,
                                                               engine=engine)) / units.MS,
        "tokens_per_s": float(roofline.decode_throughput(model, gpu, batch, ctx, tp,
                                                         engine=engine)),
        "model_quality": roofline.engine_for(engine, "decode", model=model, gpu=gpu).label,
    }
    if model.state_bytes_per_sequence:       # a hybrid's, in its --mamba-ssm-cache-dtype
        result["state_bytes_per_sequence"] = float(memory.recurrent_state_bytes(model))
    if guide:
        result["kv_cache_rule"] = (f"the guide's: {args.workspace_fraction:g} of the memory left "
                                   f"after the weights kept as workspace")
    else:
        # the engine's rule: what it keeps on each GPU outside the KV cache, taken off it
        result["gpu_memory_utilization"] = share
        result["engine_memory_gib"] = held_bytes(held) / units.GiB
        result["kv_cache_rule"] = engine_kv_rule(f"{share:g}", gpu, held_by, model)
        vllm = profiled_engine(held_by) == "vllm"
        if vllm and not counts_cuda_graphs(held_by):
            # a release from cuda_graph_since on also takes its graphs' estimate off the cache
            since, graphs = vllm_cuda_graph_bytes(model, gpu, tp)
            result["cuda_graph_gib"] = graphs / units.GiB
            result["cuda_graphs_since"] = since
            note = cuda_graph_note(since, graphs, budget / tp)
        if vllm and model.sliding_window is not None \
                and model.n_sliding_layers:
            result["decoding_max_concurrent_sequences"] = int(_decoding_sequences(
                model, int(tokens), ctx, args.block_size or 16))
    result["tokens_per_s_per_gpu"] = result["tokens_per_s"] / (tp * gpu.n_gpus)
    price = args.gpu_hourly if args.gpu_hourly is not None else gpu.hourly_price
    result["usd_per_million_tokens"] = (
        None if price is None else float(roofline.cost_per_million_tokens(
            model, gpu, batch, ctx, tp, hourly_price=price, engine=engine)))
    if draft is not None:
        k, alpha = args.num_speculative_tokens, args.acceptance
        step = float(roofline.speculative_step_time(model, gpu, batch, ctx, tp, draft=draft,
                                                    draft_tokens=k, engine=engine))
        gained = float(roofline.speculative_tokens_per_step(alpha, k))
        result.update({
            "speculative_tokens_per_step": gained,
            "speculative_itl_ms": step / gained / units.MS,
            "speculative_speedup": float(roofline.speculative_speedup(
                model, gpu, batch, ctx, tp, draft=draft, draft_tokens=k, acceptance=alpha,
                engine=engine))})
        if isinstance(draft, ModelShape):
            # a draft model's weights sit beside the target's, off the KV budget
            result["speculative_max_concurrent_sequences"] = _sequences(
                args, model, gpu, budget, draft_weight_bytes=float(memory.weight_bytes(draft)))
        if price is not None:
            result["speculative_usd_per_million_tokens"] = float(
                pricing.speculative_cost_per_million_tokens(
                    model, gpu, batch, ctx, tp, draft=draft, draft_tokens=k, acceptance=alpha,
                    hourly_price=price, engine=engine))
    prefix = shared_prefix(args)
    if prefix is not None:
        # the prefixes' whole blocks held once, the rest of each sequence its own
        result["prefix_max_concurrent_sequences"] = _sequences(
            args, model, gpu, budget, shared_prefix_tokens=prefix.tokens,
            prefix_groups=prefix.groups, prefix_share=prefix.share)
    if engine is not roofline.IDEAL:
        # the roofline bound beside the engine's answer: no engine runs faster than this
        result.update({
            "ideal_ttft_ms": float(roofline.prefill_time(model, gpu, args.input_len, tp=tp))
            / units.MS,
            "ideal_decode_step_time_ms": float(roofline.decode_step_time(model, gpu, batch, ctx,
                                                                         tp=tp)) / units.MS,
            "ideal_tokens_per_s": float(roofline.decode_throughput(model, gpu, batch, ctx, tp))})
    fits, reason = _why_not(result)
    missing = missing_attention_kernel(held_by, model, gpu)
    if missing is not None:
        # the engine would not start: no figure of it is an answer
        fits, reason = False, missing
    if reason is not None:
        result["warning"] = reason
        if not fits and not args.show_anyway:
            what = "cannot run" if missing is not None else "does not fit"
            sys.stderr.write(f"rooflinekit capacity: {what}: {reason} "
                             f"(--show-anyway prints the figures)\n")
            return 1

    def text(out):
        out.write(f"{model.name} on {tp} × {gpu.name} ({model.attention}, "
                  f"{model.bytes_per_param:g} B/param)\n")
        # one quantity a row, its unit in its label: each value is formatted as itself
        print_table(("quantity", "value"), [(label, result[key]) for key, label in _QUANTITIES
                                            if key in result], out, fmt=format_value)
        out.write(f"KV cache: {result['kv_cache_rule']}\n")
        if note is not None:
            out.write(f"note: {note}\n")
        out.write(f"timing: {result['model_quality']}\n")
        if reason is not None:
            out.write(f"warning: {reason}\n")
    emit(args, out, [result], payload=result, text=text)
    return 0

