"""``rooflinekit curve``: one replica's load curve, its latencies against request rate or client
concurrency as ``vllm bench serve`` prints them, beside the ideal roofline's
(:func:`rooflinekit.planning.load_curve`)."""

from __future__ import annotations

import argparse

from rooflinekit import catalog, dims, planning, roofline
from rooflinekit.cli._args import (
    add_flag,
    add_output_flags,
    apply_dtypes,
    answer_scheduler,
    engine_from_args,
    scheduled_engine,
    examples,
    whole_number,
    int_list,
    mixed_prefill,
    positive_float,
    read_model,
)
from rooflinekit.cli._output import emit, print_table
from rooflinekit.cli.plan import (
    TRAFFIC_FLAGS,
    add_replica_flags,
    add_table_flags,
    lengths_from_args,
)

__all__ = ["DESCRIPTION", "EPILOG", "HELP", "NAME", "add_arguments", "run"]

NAME = "curve"
HELP = "load curve: one replica's TTFT, TPOT, ITL, throughput against rate or concurrency"
DESCRIPTION = (
    "Simulate one replica (continuous batching on the engine's profile of the GPU) at open-loop "
    "request rates, as `vllm bench serve --request-rate`, or at closed-loop client "
    "concurrencies, as `--max-concurrency` (each client sends a request the moment its last "
    "completes, every time counted from that send), and print the means and medians `vllm bench "
    "serve` prints: TTFT, TPOT (per request), ITL (every gap), end-to-end latency, request and "
    "output throughput, each the median over Monte Carlo replicates, with the ideal roofline's "
    "TTFT and TPOT beside them: lay it beside a benchmark of your own.")
EPILOG = examples(
    NAME,
    "llama-3.1-8b --gpu h100 --rates 1,4,16 --prompt-mean 1000 --output-mean 200 "
    "--replicates 2 --requests 100",
    "llama-3.1-8b --gpu h100 --concurrencies 4,32 --prompt-mean 1000 --output-mean 200 "
    "--replicates 2 --requests 100 --json",
    "llama-3.1-8b --gpu h100 --concurrencies 8,64 --clients-start together --prompt-mean 1000 "
    "--output-mean 200 --replicates 2 --requests 200",
    "llama-3.1-8b --gpu h100 --rates 2,8 --prompt-mean 1000 --output-mean 200 --lengths sharegpt "
    "--replicates 2 --requests 200",
    "llama-3.1-8b --gpu h100 --engine trtllm --admission paged --rates 2,8 --prompt-mean 1000 "
    "--output-mean 200 --replicates 2 --requests 100",
    "llama-3.1-8b --gpu h100 --engine sglang --recv-interval 10 --concurrencies 16,64 "
    "--prompt-mean 1000 --output-mean 1000 --replicates 2 --requests 200",
    "mixtral-8x7b --gpu h100 --tp 2 --ep 2 --rates 1,4 --prompt-mean 500 --output-mean 100 "
    "--replicates 2 --requests 100",
    "llama-3.1-8b --gpu h100 --engine sglang --concurrencies 16 --clients-start together "
    "--cached-prompts 10 --prompt-mean 4000 --output-mean 100 --replicates 2 --requests 80",
    "llama-3.1-8b --gpu h100 --engine sglang --stream-interval 10 --concurrencies 8,32 "
    "--prompt-mean 1000 --output-mean 500 --replicates 2 --requests 100",
    "llama-3.1-8b --gpu h100 --num-scheduler-steps 10 --rates 2,8 --prompt-mean 200 "
    "--output-mean 200 --lengths sharegpt --replicates 2 --requests 100")

#: The traffic flags this command reads: lengths, arrivals and the Monte Carlo (no rate, no
#: targets: the loads are the rates or concurrencies given).
FLAGS = tuple(
    (flag, kind, default, text) if flag not in ("--replicates", "--requests") else
    (flag, kind, {"--replicates": 5, "--requests": 500}[flag],
     text.replace("(20)", "(5)").replace("(1000)", "(500)"))
    for flag, kind, default, text in TRAFFIC_FLAGS
    if flag in ("--prompt-mean", "--output-mean", "--spread", "--lengths", "--burstiness",
                "--replicates", "--requests", "--seed", "--engine", "--calibration"))

#: The columns: (key in the rows, header, load_curve's variable, scale from its SI units).
COLUMNS = (("mean_ttft_ms", "mean TTFT [ms]", "mean_ttft", 1e3),
           ("median_ttft_ms", "median TTFT [ms]", "p50_ttft", 1e3),
           ("mean_tpot_ms", "mean TPOT [ms]", "mean_tpot", 1e3),
           ("median_tpot_ms", "median TPOT [ms]", "p50_tpot", 1e3),
           ("mean_itl_ms", "mean ITL [ms]", "mean_token_itl", 1e3),
           ("mean_e2e_ms", "mean E2E [ms]", "mean_latency", 1e3),
           ("request_throughput", "req/s", "request_throughput", 1.0),
           ("output_throughput", "output tok/s", "throughput", 1.0))


def rate_list(text: str) -> list[float]:
    """An ``argparse`` type: comma-separated request rates, each finite and > 0."""
    values = [positive_float(x) for x in str(text).split(",") if x.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"expected comma-separated rates, got {text!r}")
    return values


rate_list.__name__ = "rate list"        # argparse names the type in its error


def add_arguments(parser) -> None:
    add_flag(parser, "--model", positional=True)
    add_flag(parser, "--name")
    add_flag(parser, "--gpu", required=True)
    add_flag(parser, "--tensor-parallel-size")
    add_flag(parser, "--pipeline-parallel-size")
    add_flag(parser, "--expert-parallel-size")
    loads = parser.add_mutually_exclusive_group(required=True)
    loads.add_argument("--rates", type=rate_list, metavar="R,R",
                       help="comma-separated open-loop request rates [requests/s], Poisson "
                            "arrivals (vllm bench serve --request-rate)")
    loads.add_argument("--concurrencies", type=int_list, metavar="C,C",
                       help="comma-separated closed-loop client concurrencies (vllm bench "
                            "serve --max-concurrency); above --max-num-seqs the rest wait in "
                            "the server's queue")
    parser.add_argument("--clients-start", choices=("apart", "together"), default="apart",
                        help="with --concurrencies: 'apart' (default) keeps the clients apart "
                             "with the server full; 'together' sends every client's first "
                             "request at once, as vllm bench serve --max-concurrency does (its "
                             "first waves wait for one another's prefills; with equal "
                             "lengths they would wait so for ever, where real clients drift "
                             "apart)")
    parser.add_argument("--cached-prompts", type=whole_number(0), default=0, metavar="N",
                        help="the first N requests find their whole prompt in the server's "
                             "prefix cache and compute only its last token (at most "
                             "--requests): 1 for the warm-up request vllm bench serve and "
                             "sglang.bench_serving send first, with the server's prefix cache "
                             "on; more where a seeded client re-sends an earlier run's prompts "
                             "(default 0)")
    add_replica_flags(parser, lists=False)
    add_flag(parser, "--mixed-prefill")
    add_flag(parser, "--recv-interval")
    add_flag(parser, "--stream-interval")
    add_flag(parser, "--num-scheduler-steps")
    add_flag(parser, "--admission")
    add_table_flags(parser, FLAGS)
    add_output_flags(parser, output_help=(
        "also write the curve to FILE, the format from its extension: .nc or .zarr (the "
        "Dataset), .csv or .parquet (the table), .json (as --json)"))


def _rows(ds, dim) -> list[dict]:
    """One dict per load: the medians over replicates of the bench-serve means and medians."""
    middle = ds.median(dims.REPLICATE)
    return [{dim: float(load), **{key: float(middle[name].sel({dim: load})) * scale
                                  for key, _, name, scale in COLUMNS}}
            for load in ds[dim].values]


def run(args, out) -> int:
    model = apply_dtypes(read_model(args), args)
    gpu = catalog.gpu(args.gpu)
    prompt, output = lengths_from_args(args)
    # the rate is not read: the loads are --rates or --concurrencies
    traffic = planning.Traffic(
        1.0, prompt, output,
        arrival="poisson" if args.burstiness is None else "gamma", burstiness=args.burstiness)
    engine = engine_from_args(args, gpu)
    mixed = mixed_prefill(args)
    if args.num_scheduler_steps > 1 and mixed == "auto":
        mixed = False            # vLLM ran its windows with prefill steps apart
    common = dict(model=model, gpu=gpu, tp=args.tp, pp=args.pp, ep=args.ep, rates=args.rates,
                  concurrencies=args.concurrencies,
                  max_num_seqs=args.max_num_seqs or "auto",
                  max_num_batched_tokens=args.max_num_batched_tokens or "auto",
                  gpu_memory_utilization=args.gpu_memory_utilization,
                  block_size=args.block_size, mixed_prefill=mixed,
                  recv_interval=args.recv_interval, stream_interval=args.stream_interval,
                  num_scheduler_steps=args.num_scheduler_steps, admission=args.admission,
                  cached_prompts=args.cached_prompts, replicates=args.replicates,
                  requests=args.requests, seed=args.seed,
                  engine_draws=0,
                  **({"clients_start": args.clients_start} if args.concurrencies else {}))
    slo = planning.SLO(ttft=3600.0)       # targets are not read: only the means and medians
    ds = planning.load_curve(traffic, slo, engine=scheduled_engine(args, engine), **common)
    dim = dims.CONCURRENCY if args.concurrencies else dims.REQUEST_RATE
    rows = _rows(ds, dim)
    ideal = None if engine is roofline.IDEAL else _rows(planning.load_curve(
        traffic, slo, engine=roofline.IDEAL, **{**common, **answer_scheduler(ds.attrs)}), dim)
    if ideal is not None:
        for row, bound in zip(rows, ideal):
            row["ideal_mean_ttft_ms"] = bound["mean_ttft_ms"]
            row["ideal_mean_tpot_ms"] = bound["mean_tpot_ms"]
    payload = {"model": model.name, "gpu": gpu.name, "tp": args.tp,
               **({"pp": args.pp} if args.pp > 1 else {}),
               **({"ep": args.ep} if args.ep > 1 else {}),
               "client": ds.attrs["client"],
               **({"clients_start": ds.attrs["clients_start"]}
                  if "clients_start" in ds.attrs else {}),
               "max_num_seqs": ds.attrs["max_num_seqs"],
               "max_num_batched_tokens": ds.attrs["max_num_batched_tokens"],
               "admission": ds.attrs["admission"],
               "recv_interval": ds.attrs["recv_interval"],
               "stream_interval": ds.attrs["stream_interval"],
               "num_scheduler_steps": ds.attrs["num_scheduler_steps"],
               "cached_prompts": ds.attrs["cached_prompts"],
               "model_quality": ds.attrs["model_quality"], "loads": rows}

    def text(out):
        client = ds.attrs["client"] + (f" (clients started {ds.attrs['clients_start']})"
                                       if "clients_start" in ds.attrs else "")
        layout = "".join(f", {n} {v}" for n, v in (("pp", args.pp), ("ep", args.ep)) if v > 1)
        out.write(f"{model.name} on {gpu.name} × {args.tp * args.pp}{layout}, {client}: "
                  f"{ds.attrs['max_num_seqs']} sequences, "
                  f"{ds.attrs['max_num_batched_tokens'] or 'whole-prompt'} tokens a step"
                  + (f", new requests taken in every {ds.attrs['recv_interval']} decode steps"
                     if ds.attrs["recv_interval"] > 1 else "")
                  + (f", tokens sent {ds.attrs['stream_interval']} at a time (ITL between "
                     f"sends)" if ds.attrs["stream_interval"] > 1 else "")
                  + (f", decodes in windows of {ds.attrs['num_scheduler_steps']} steps"
                     if ds.attrs["num_scheduler_steps"] > 1 else "")
                  + (f", the first {ds.attrs['cached_prompts']} prompts cached"
                     if ds.attrs["cached_prompts"] else "") + "; "
                  f"medians over {args.replicates} replicate(s) of {args.requests} requests; "
                  f"{ds.attrs['model_quality']}\n")
        load = "concurrency" if dim == dims.CONCURRENCY else "rate [req/s]"
        headers = (load, *(h for _, h, _, _ in COLUMNS),
                   *(("ideal TTFT [ms]", "ideal TPOT [ms]") if ideal is not None else ()))
        print_table(headers, [(r[dim], *(r[k] for k, _, _, _ in COLUMNS),
                               *((r["ideal_mean_ttft_ms"], r["ideal_mean_tpot_ms"])
                                 if ideal is not None else ())) for r in rows], out)
        if ideal is not None:
            out.write("ideal roofline bound: the same runs on the ideal roofline (its TTFT "
                      "and TPOT in the last two columns)\n")
    return emit(args, out, rows, text=text, payload=payload, dataset=ds)
