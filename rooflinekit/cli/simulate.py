"""``rooflinekit simulate``: one workload through static and continuous batching, compared."""

from __future__ import annotations

import numpy as np

from rooflinekit import batching, catalog, workloads
from rooflinekit.cli._args import COMMAND_API, add_flag, positive_int
from rooflinekit.cli._output import print_json, print_table

__all__ = list(COMMAND_API)

NAME = "simulate"
HELP = "a workload through static and continuous batching"
DESCRIPTION = "Simulate static and continuous batching on one workload and compare them."
EPILOG = ("examples:\n  rooflinekit simulate                       the guide's 24-request "
          "workload\n  rooflinekit simulate --workload lognormal --requests 500 "
          "--spread 1.5 --slots 32\n  rooflinekit simulate --workload lognormal "
          "--model llama-3.1-8b --gpu h100 --admission paged --kv-budget 200000")

_DISTRIBUTIONS = ("constant", "uniform", "geometric", "lognormal", "short-and-long")

#: The metrics of each batcher's result, in the order they are printed.
_METRICS = ("makespan", "throughput", "mean_latency", "mean_service_latency", "p50_latency",
            "p90_latency", "p99_latency", "mean_ttft", "mean_itl", "slot_utilization",
            "padding_slot_steps", "peak_kv_tokens", "n_completed", "n_rejected",
            "n_preemptions")


def add_arguments(parser) -> None:
    parser.add_argument("--workload", choices=("guide", *_DISTRIBUTIONS), default="guide",
                        help="the guide's reconstructed workload, or output lengths drawn from a "
                             "distribution (default guide)")
    parser.add_argument("--requests", type=positive_int, default=256, help="requests drawn (256)")
    parser.add_argument("--output-mean", type=float, default=100.0,
                        help="mean output tokens (100)")
    parser.add_argument("--spread", type=float, default=1.0,
                        help="lognormal sigma, or uniform half-width (1.0)")
    parser.add_argument("--prompt", type=int, default=0, help="prompt tokens per request (0)")
    parser.add_argument("--arrival", choices=("all", "interval", "poisson"), default="all")
    parser.add_argument("--interval", type=float, help="ticks/seconds between arrivals")
    parser.add_argument("--rate", type=float, help="Poisson arrivals per tick/second")
    parser.add_argument("--seed", type=int, default=0, help="random seed (0)")
    parser.add_argument("--static-batch", type=positive_int, default=8,
                        help="static batch size (8)")
    parser.add_argument("--slots", type=positive_int, default=16, help="max_num_seqs (16)")
    parser.add_argument("--kv-budget", type=positive_int, help="KV budget in tokens")
    parser.add_argument("--admission", choices=("reserve", "paged"), default="reserve")
    parser.add_argument("--block-size", type=positive_int, default=16,
                        help="paged block size (16)")
    parser.add_argument("--max-batched-tokens", type=positive_int,
                        help="chunked prefill: tokens per step")
    add_flag(parser, "--model", help="time steps with the roofline of this model (with --gpu)")
    add_flag(parser, "--gpu", help="GPU for roofline timing")
    add_flag(parser, "--tp")
    add_flag(parser, "--json")


def _distribution(kind: str, mean: float, spread: float):
    if kind == "constant":
        return workloads.Constant(int(round(mean)))
    if kind == "uniform":
        low = max(1, int(round(mean - spread)))
        return workloads.Uniform(low, int(round(mean + spread)))
    if kind == "geometric":
        return workloads.Geometric(mean)
    if kind == "lognormal":
        return workloads.LogNormal(mean, spread)
    return workloads.short_and_long()


def _workload(args):
    if args.workload == "guide":
        return workloads.guide_workload()
    arrival = {"all": workloads.AllAtOnce(),
               "interval": workloads.FixedInterval(args.interval or 1.0),
               "poisson": workloads.Poisson(args.rate or 1.0)}[args.arrival]
    spec = workloads.WorkloadSpec(
        args.requests, output=_distribution(args.workload, args.output_mean, args.spread),
        prompt=workloads.Constant(args.prompt), arrival=arrival)
    return workloads.Workload(*spec.draw(np.random.default_rng(args.seed)))


def run(args, out) -> int:
    work = _workload(args)
    timing = {}
    if args.model or args.gpu:
        if not (args.model and args.gpu):
            raise ValueError("--model and --gpu go together (roofline timing)")
        timing = {"model": catalog.resolve_model(args.model), "gpu": args.gpu, "tp": args.tp}
    static = batching.StaticBatcher(batch_size=args.static_batch, **timing)
    cont = batching.ContinuousBatcher(
        max_num_seqs=args.slots, kv_budget_tokens=args.kv_budget, admission=args.admission,
        block_size=args.block_size, max_num_batched_tokens=args.max_batched_tokens, **timing)
    results = {"static": static.run(work), "continuous": cont.run(work)}
    table = {name: {k: float(ds[k]) for k in _METRICS if k in ds}
             for name, ds in results.items()}
    unit = results["continuous"].attrs.get("time_units", "tick")
    if args.json:
        print_json({"time_units": unit, "requests": int(results["static"].sizes["request"]),
                    **table}, out, indent=2)
        return 0
    unit_name = "ticks" if unit == "tick" else "seconds"
    out.write(f"{results['static'].sizes['request']} requests; times in {unit_name}; static batches "
              f"of {args.static_batch}, continuous with {args.slots or 'unlimited'} slots\n")
    rows = [(k.replace("_", " "), table["static"].get(k, "-"), table["continuous"].get(k, "-"))
            for k in _METRICS]
    print_table(("metric", "static", "continuous"), rows, out)
    return 0

