"""``rooflinekit capacity``: one model on one tensor-parallel GPU group."""

from __future__ import annotations

from rooflinekit import catalog, memory, roofline, units
from rooflinekit.cli._args import COMMAND_API, add_flag, examples, positive_int
from rooflinekit.cli._output import print_json, print_table

__all__ = list(COMMAND_API)

NAME = "capacity"
HELP = "a model on a GPU group: fit, KV budget, concurrency, TTFT/ITL, cost"
DESCRIPTION = "Capacity of one model on one tensor-parallel GPU group."
EPILOG = examples(NAME, "llama-3.1-70b h100 --tp 4 --context 8192 --batch 32",
                  "path/to/config.json l40s --json")


def add_arguments(parser) -> None:
    add_flag(parser, "--model", positional=True,
             help="catalogue model name or path to a Hugging Face config.json")
    add_flag(parser, "--gpu", positional=True)
    add_flag(parser, "--tp")
    parser.add_argument("--context", type=positive_int, default=8192,
                        help="tokens per sequence (8192)")
    parser.add_argument("--batch", type=positive_int, default=1, help="decode batch size (1)")
    parser.add_argument("--prompt", type=positive_int, default=1024,
                        help="prompt tokens for TTFT (1024)")
    parser.add_argument("--reserve", type=float, default=0.10, help="working-space share (0.10)")
    parser.add_argument("--gpu-hourly", type=float, help="USD per GPU-hour (default: catalogue)")
    parser.add_argument("--allreduce", action="store_true", help="charge the TP all-reduce")
    add_flag(parser, "--json")


def run(args, out) -> int:
    model = catalog.resolve_model(args.model)
    gpu = catalog.gpu(args.gpu)
    tp, ctx, batch = args.tp, args.context, args.batch
    budget = memory.usable_kv_bytes(model, gpu, tp=tp, reserve=args.reserve)
    fits = budget > 0
    options = {"allreduce": args.allreduce}
    result = {
        "model": model.name, "gpu": gpu.name, "tp": tp, "context_length": ctx,
        "batch_size": batch, "prompt_tokens": args.prompt, "fits": fits,
        "weight_gib": memory.weight_bytes(model) / units.GiB,
        "kv_bytes_per_token": memory.kv_bytes_per_token(model),
        "kv_budget_gib": budget / units.GiB,
        "kv_budget_tokens": memory.kv_budget_tokens(model, gpu, tp=tp, reserve=args.reserve),
        "max_concurrent_sequences": memory.max_concurrent_sequences(
            model, gpu, ctx, tp=tp, reserve=args.reserve),
        "ttft_ms": roofline.prefill_time(model, gpu, args.prompt, tp=tp, **options) / units.MS,
        "decode_step_time_ms": roofline.decode_step_time(model, gpu, batch, ctx, tp=tp,
                                                         **options) / units.MS,
        "tokens_per_s": roofline.decode_throughput(model, gpu, batch, ctx, tp, **options),
    }
    result["tokens_per_s_per_gpu"] = result["tokens_per_s"] / (tp * gpu.n_gpus)
    price = args.gpu_hourly if args.gpu_hourly is not None else gpu.hourly_price
    result["usd_per_million_tokens"] = (
        None if price is None else roofline.cost_per_million_tokens(
            model, gpu, batch, ctx, tp, hourly_price=price, **options))
    if batch > result["max_concurrent_sequences"]:
        result["warning"] = (f"batch {batch} exceeds the {result['max_concurrent_sequences']} "
                             f"sequences of {ctx:,} tokens that fit")
    if args.json:
        print_json(result, out, indent=2)
        return 0
    out.write(f"{model.name} on {tp} × {gpu.name} ({model.attention}, "
              f"{model.bytes_per_param:g} B/param)\n")
    rows = [(k.replace("_", " "), "-" if v is None else v) for k, v in result.items()
            if k not in ("model", "gpu")]
    print_table(("quantity", "value"), rows, out)
    return 0
