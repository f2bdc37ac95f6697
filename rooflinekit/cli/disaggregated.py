"""``rooflinekit disaggregated``: the best prefill/decode split (xPyD) for a traffic and an SLO."""

from __future__ import annotations

import re

from rooflinekit import catalog, planning, roofline
from rooflinekit.cli._args import (
    read_model,
    add_flag,
    add_output_flags,
    apply_dtypes,
    answer_scheduler,
    engine_from_args,
    scheduled_engine,
    examples,
    number,
    whole_number,
)
from rooflinekit.cli._output import emit, print_table, to_jsonable
from rooflinekit.cli.plan import (
    TRAFFIC_FLAGS,
    add_replica_flags,
    add_table_flags,
    targets_text,
    traffic_and_slo,
)

__all__ = ["DESCRIPTION", "EPILOG", "HELP", "NAME", "add_arguments", "run"]

NAME = "disaggregated"
HELP = "traffic + latency SLO -> the best prefill/decode split (xPyD) against aggregated"
DESCRIPTION = (
    "Compare, under the same traffic and SLO, one aggregated replica (vLLM-style continuous "
    "batching) with units of x prefill and y decode replicas of the same configuration, the "
    "prompt's KV sent between them: the highest rate each sustains within the SLO (Monte Carlo on "
    "common random numbers, roofline clock), its rate per GPU, and the fleet the peak rate needs. "
    "The pools are a tandem queue without backpressure. Without --engine the GPU is timed by "
    "its shipped vLLM profile, and the ideal roofline's best split (the bound) is printed "
    "beside it.")
EPILOG = examples(
    NAME,
    "llama-3.1-8b --gpu h100 --gpu-budget 3 --rate 5 --prompt-mean 1000 --output-mean 200 "
    "--ttft 1 --itl 0.05 --replicates 2 --requests 100",
    "llama-3.1-8b --gpu h100 --splits 1P1D,2P1D --link-bandwidth 50 --rate 5 --prompt-mean 2000 "
    "--output-mean 100 --ttft 1 --itl 0.05 --replicates 2 --requests 100 --json",
    "llama-3.1-8b --gpu h100 --splits 1P1D --rate 4 --prompt-mean 500 --output-mean 100 "
    "--ttft 1 --engine sglang --recv-interval 10 --replicates 2 --requests 100",
    "mixtral-8x7b --gpu h100 --tp 2 --ep 2 --splits 1P1D --rate 2 --prompt-mean 500 "
    "--output-mean 100 --ttft 2 --replicates 2 --requests 60")

_SPLIT = re.compile(r"(\d+)P(\d+)D", re.IGNORECASE)


def split_list(text: str) -> list[tuple[int, int]]:
    """An ``argparse`` type: comma-separated ``xPyD`` splits (``1P1D,2P1D``), each x, y >= 1."""
    out = []
    for item in text.split(","):
        match = _SPLIT.fullmatch(item.strip())
        if not match or min(int(match[1]), int(match[2])) < 1:
            raise ValueError(f"a split is xPyD with x, y >= 1 (1P1D, 2P1D); got {item!r}")
        out.append((int(match[1]), int(match[2])))
    return out


split_list.__name__ = "xPyD list"      # argparse names the type in its error


def add_arguments(parser) -> None:
    add_flag(parser, "--model", positional=True)
    add_flag(parser, "--name")
    add_flag(parser, "--gpu", required=True)
    add_flag(parser, "--tensor-parallel-size")
    add_flag(parser, "--expert-parallel-size")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--gpu-budget", type=whole_number(2), metavar="GPUS",
                       help="compare every split of at most this many GPUs per unit")
    group.add_argument("--splits", type=split_list, metavar="xPyD",
                       help="comma-separated splits to compare (1P1D,2P1D)")
    parser.add_argument("--link-bandwidth", type=number(0, lo_open=True), metavar="GB/S",
                        help="bandwidth the KV crosses between the pools [GB/s] (the GPU's "
                             "network bandwidth × TP)")
    parser.add_argument("--link-latency", type=number(0), default=0.0, metavar="S",
                        help="fixed time of each KV transfer [s] (0)")
    add_replica_flags(parser, lists=False)
    add_flag(parser, "--admission")
    add_flag(parser, "--recv-interval")
    add_table_flags(parser, TRAFFIC_FLAGS)
    add_output_flags(parser, output_help=(
        "also write the comparison to FILE, the format from its extension: .nc or .zarr (the "
        "Dataset), .csv or .parquet (the splits), .json (as --json)"))


def _rows(ds):
    """One dict per split, in the Dataset's order (aggregated first)."""
    rows = []
    for k, label in enumerate(ds[planning.SPLIT].values):
        r = ds.isel({planning.SPLIT: k})
        rows.append({"split": str(label), "prefill_replicas": int(r.prefill_replicas),
                     "decode_replicas": int(r.decode_replicas),
                     "gpus_per_unit": int(r.gpus_per_unit), "max_rate": float(r.max_rate),
                     "max_rate_low": float(r.max_rate_low),
                     "max_rate_high": float(r.max_rate_high),
                     "rate_per_gpu": float(r.rate_per_gpu), "units": int(r.units),
                     "gpus": int(r.gpus), "binding": str(r.binding.values)})
    return rows


def run(args, out) -> int:
    traffic, slo = traffic_and_slo(args)
    model = apply_dtypes(read_model(args), args)
    gpu = catalog.gpu(args.gpu)
    if args.link_bandwidth is None and gpu.network_bandwidth is None:
        # the planner's message names its Python argument; a command names its flag
        raise ValueError(f"--gpu {gpu.name}: no network bandwidth in the catalogue for the KV "
                         f"to cross between the pools; type one with --link-bandwidth GB/S")
    common = dict(
        model=model, gpu=gpu, tp=args.tp, ep=args.ep, max_num_seqs=args.max_num_seqs or "auto",
        max_num_batched_tokens=args.max_num_batched_tokens or "auto",
        gpu_memory_utilization=args.gpu_memory_utilization, block_size=args.block_size,
        admission=args.admission,
        link_bandwidth=None if args.link_bandwidth is None else args.link_bandwidth * 1e9,
        link_latency=args.link_latency, headroom=args.headroom, replicates=args.replicates,
        requests=args.requests, seed=args.seed, recv_interval=args.recv_interval)
    engine = engine_from_args(args, gpu)
    try:
        ds = planning.plan_disaggregated(traffic, slo, gpu_budget=args.gpu_budget,
                                         splits=args.splits,
                                         engine=scheduled_engine(args, engine), **common)
    except ValueError as exc:
        raise ValueError(_in_flags(str(exc), args)) from None
    rows = _rows(ds)
    bound = _ideal_bound(ds, rows, traffic, slo, engine, common)
    payload = {"model": model.name, "gpu": gpu.name, "tp": args.tp,
               **({"ep": args.ep} if args.ep > 1 else {}),
               "model_quality": ds.attrs["model_quality"],
               "link_bandwidth": ds.attrs["link_bandwidth"],
               "recv_interval": int(ds.attrs["recv_interval"]), "splits": rows,
               "best_split": ds.attrs["best_split"]}
    if bound is not None:
        payload["ideal_bound"] = bound

    def text(out):
        layout = f"{args.tp}" + (f", ep {args.ep}" if args.ep > 1 else "")    # as curve heads it
        out.write(f"{model.name} on {gpu.name} × {layout}: peak {args.rate:g} requests/s, "
                  f"{slo.quantile:.0%} of requests within {targets_text(slo)}; KV link "
                  f"{ds.attrs['link_bandwidth'] / 1e9:g} GB/s; {ds.attrs['model_quality']}\n")
        if int(ds.attrs["recv_interval"]) > 1:
            out.write(f"every replica: new requests taken in every "
                      f"{int(ds.attrs['recv_interval'])} decode steps (--recv-interval)\n")
        headers = ("split", "GPUs/unit", "max rate [req/s]", "band [req/s]",
                   "rate/GPU [req/s]", "units", "GPUs", "binding")
        print_table(headers, [(r["split"], r["gpus_per_unit"], to_jsonable(r["max_rate"]),
                               f"{r['max_rate_low']:.3g}-{r['max_rate_high']:.3g}",
                               to_jsonable(r["rate_per_gpu"]), r["units"], r["gpus"],
                               r["binding"]) for r in rows], out)
        out.write(f"fewest GPUs: {ds.attrs['best_split']}\n")
        if bound is not None:
            out.write(f"ideal roofline bound for {bound['split']}: max rate "
                      f"{bound['max_rate']:.4g} requests/s, {bound['gpus']} GPU(s), against "
                      f"{bound['engine_gpus']} timed by the engine\n")
    return emit(args, out, rows, text=text, payload=payload, dataset=ds)


def _in_flags(message: str, args) -> str:
    """The planner's too-much-work refusal in the command line's words (it names its Python
    arguments); any other message as it is."""
    if not message.startswith("this plan would simulate"):
        return message
    what = message.split(", above work_limit", 1)[0]
    return (f"{what}, more than one process plans in about a minute; give fewer --replicates "
            f"(now {args.replicates}) or --requests (now {args.requests}), or fewer splits "
            f"(--splits, or a smaller --gpu-budget)")


def _ideal_bound(ds, rows, traffic, slo, engine, common) -> dict | None:
    """The best split planned again on the ideal roofline, the bound beside the engine's answer
    (``None`` with ``--engine ideal`` or when nothing serves)."""
    best = ds.attrs["best_split"]
    chosen = [r for r in rows if r["split"] == best]
    if engine is roofline.IDEAL or not chosen or chosen[0]["gpus"] <= 0:
        return None
    match = re.fullmatch(r"(\d+)P(\d+)D", best)
    split = (int(match.group(1)), int(match.group(2))) if match else (1, 1)
    ideal = planning.plan_disaggregated(traffic, slo, splits=[split], engine=roofline.IDEAL,
                                        **{**common, **answer_scheduler(ds.attrs)})
    row = next(r for r in _rows(ideal) if r["split"] == best)
    return {"split": best, "max_rate": row["max_rate"], "gpus": row["gpus"],
            "engine_gpus": chosen[0]["gpus"]}
