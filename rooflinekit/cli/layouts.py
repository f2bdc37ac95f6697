"""``rooflinekit layouts``: every tensor × pipeline × expert × data-parallel layout of a model
on N GPUs, with its memory, ITL and throughput (:func:`rooflinekit.roofline.layouts`)."""

from __future__ import annotations

import functools

from rooflinekit import catalog, roofline
from rooflinekit.cli._args import (
    read_model,
    COMMAND_API,
    add_flag,
    add_long_context_flag,
    add_output_flags,
    apply_dtypes,
    check_trained_context,
    engine_from_args,
    nonnegative_int,
    positive_int,
    whole_number,
)
from rooflinekit.cli._output import emit, engine_kv_rule, guide_kv_rule, print_table
from rooflinekit.profiles import layout_kv_bytes, memory_engine, memory_share
from rooflinekit.units import GiB, MS

__all__ = list(COMMAND_API)

NAME = "layouts"
HELP = "every tp × pp × ep × dp layout of a model on N GPUs"
DESCRIPTION = ("Every layout of a model on N GPUs (tensor parallel within a node, pipeline "
               "stages, experts, replicas): memory per GPU, whether the batch fits, ITL, and "
               "tokens/s per replica and for the whole fleet; fastest fleet first.")
EPILOG = """examples:
  rooflinekit layouts llama-3.1-405b h100 --num-gpus 16 --batch-size 32 --max-model-len 4096
  rooflinekit layouts mixtral-8x7b h100 --num-gpus 8 --input-len 2000 --csv
"""

#: Each column: (record key, heading with its unit).
_COLUMNS = (("tp", "tp"), ("pp", "pp"), ("ep", "ep"), ("dp", "replicas"),
            ("fits", "fits"), ("weight_gib_per_gpu", "weights/GPU [GiB]"),
            ("kv_budget_tokens", "KV/replica [tokens]"),
            ("max_concurrent_sequences", "max seqs/replica"),
            ("decode_step_time_ms", "ITL [ms]"), ("ttft_ms", "TTFT [ms]"),
            ("tokens_per_s", "tokens/s/replica"), ("fleet_tokens_per_s", "fleet tokens/s"),
            ("tokens_per_s_per_gpu", "tokens/s/GPU"))


def add_arguments(parser) -> None:
    add_flag(parser, "--model", positional=True)
    add_flag(parser, "--name")
    add_flag(parser, "--gpu", positional=True)
    parser.add_argument("--num-gpus", type=whole_number(1, roofline.MAX_GPUS), required=True,
                        metavar="GPUS", help="GPUs the layouts use, all of them")
    add_flag(parser, "--batch-size", default=32,
             help="sequences decoding together in each replica (32)")
    add_flag(parser, "--max-model-len", default=None,
             help="context each sequence attends to and holds in KV [tokens] (4096)")
    add_long_context_flag(parser)
    parser.add_argument("--input-len", type=nonnegative_int, metavar="TOKENS",
                        help="a prompt to time the prefill (TTFT without queueing) of")
    parser.add_argument("--micro-batches", type=positive_int, metavar="M",
                        help="pipeline micro-batches (default: the stages, every stage busy)")
    parser.add_argument("--max-tp", type=positive_int, default=roofline.MAX_TP, metavar="TP",
                        help=f"largest tensor-parallel degree listed ({roofline.MAX_TP}: "
                             f"one node)")
    add_flag(parser, "--workspace-fraction",
             help="size the KV cache by the guide's rule instead of the engine's: this share of "
                  "the memory left after the weights kept for activations and the allocator, "
                  "in [0, 1)")
    add_flag(parser, "--dtype")
    add_flag(parser, "--kv-cache-dtype")
    add_flag(parser, "--mamba-ssm-cache-dtype")
    add_flag(parser, "--allreduce")
    add_flag(parser, "--engine")
    add_flag(parser, "--calibration")
    add_output_flags(parser)


def run(args, out) -> int:
    model = apply_dtypes(read_model(args), args)
    gpu = catalog.gpu(args.gpu)
    if args.max_model_len is None:
        args.max_model_len = 4096
    else:                       # a length the user typed: not above what the model was trained on
        check_trained_context(args, model)
    if args.micro_batches is not None and args.micro_batches > args.batch_size:
        raise ValueError(f"--micro-batches {args.micro_batches} exceeds --batch-size "
                         f"{args.batch_size} (one sequence per micro-batch at least)")
    engine = engine_from_args(args, gpu)
    # the engine's memory rule (vLLM's share less its footprint, SGLang's own share), or the
    # guide's when --workspace-fraction asks for it
    held_by = memory_engine(engine)     # a calibration: its serving engine's
    if args.workspace_fraction is None:
        rule = {"kv_bytes_per_gpu": functools.partial(layout_kv_bytes, held_by, model, gpu)}
        share = ("SGLang's default --mem-fraction-static, by layout," if held_by == "sglang"
                 else f"{memory_share(held_by, gpu):g}")
        kv_rule = engine_kv_rule(share, gpu, held_by, model)
    else:
        rule = {"reserve": args.workspace_fraction}
        kv_rule = guide_kv_rule(args.workspace_fraction)
    ds = roofline.layouts(model, gpu, args.num_gpus, batch_size=args.batch_size,
                          context_length=args.max_model_len, prompt_tokens=args.input_len,
                          micro_batches=args.micro_batches, max_tp=args.max_tp,
                          engine=engine, **rule)
    ds.attrs["kv_cache_rule"] = kv_rule
    # fitting layouts first, the fastest fleet first among them
    order = sorted(range(ds.sizes["layout"]),
                   key=lambda i: (not bool(ds.fits[i]), -float(ds.fleet_tokens_per_second[i])))
    timed_by = roofline.engine_for(engine, "decode", model=model, gpu=gpu).label
    records = []
    for i in order:
        row = {"model": model.name, "gpu": gpu.name,
               **{k: int(ds[k][i]) for k in ("tp", "pp", "ep", "dp")},
               "fits": bool(ds.fits[i]),
               "weight_gib_per_gpu": float(ds.weight_bytes_per_gpu[i]) / GiB,
               "kv_budget_tokens": int(ds.kv_budget_tokens[i]),
               "max_concurrent_sequences": int(ds.max_concurrent_sequences[i]),
               "decode_step_time_ms": float(ds.decode_step_time[i]) / MS,
               "tokens_per_s": float(ds.tokens_per_second[i]),
               "fleet_tokens_per_s": float(ds.fleet_tokens_per_second[i]),
               "tokens_per_s_per_gpu": float(ds.tokens_per_second_per_gpu[i])}
        if "prefill_time" in ds:
            row["ttft_ms"] = float(ds.prefill_time[i]) / MS
        row["model_quality"] = timed_by       # what timed it, in every output form
        records.append(row)

    def text(out):
        out.write(f"{model.name} on {args.num_gpus} × {gpu.name}: batch {args.batch_size} of "
                  f"{args.max_model_len:,} tokens per replica\n")
        columns = [(k, h) for k, h in _COLUMNS if k in records[0]]
        print_table([h for _, h in columns], [[r[k] for k, _ in columns] for r in records], out)
        out.write(f"KV cache: {ds.attrs['kv_cache_rule']}\n")
        out.write(f"timing: {timed_by}\n")
        if bound is not None:
            best = records[0]
            out.write(f"ideal roofline bound for the fastest layout (tp {best['tp']}, pp "
                      f"{best['pp']}, ep {best['ep']}): {bound:,.0f} tokens/s for the fleet, "
                      f"against {best['fleet_tokens_per_s']:,.0f} timed by the engine\n")

    # the bound beside the engine's answer: the same layouts on the ideal roofline
    bound = None
    if engine is not roofline.IDEAL and records and records[0]["fits"]:
        ideal = roofline.layouts(model, gpu, args.num_gpus, batch_size=args.batch_size,
                                 context_length=args.max_model_len, prompt_tokens=args.input_len,
                                 micro_batches=args.micro_batches, max_tp=args.max_tp,
                                 engine=roofline.IDEAL, **rule)
        bound = float(ideal.fleet_tokens_per_second[order[0]])
        ds.attrs["ideal_fleet_tokens_per_second"] = bound
    return emit(args, out, records, text=text, dataset=ds)
