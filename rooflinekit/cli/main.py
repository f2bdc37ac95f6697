"""Command-line interface: ``rooflinekit guide`` and friends.

Errors from bad input are one line on stderr and exit status 2; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

__all__ = ["main"]

_EPILOG_GUIDE = """examples:
  rooflinekit guide                   all sections, guide values beside ours
  rooflinekit guide --section memory  one section
  rooflinekit guide --json            the same numbers, machine-readable
"""


def _fmt(value) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    if isinstance(value, float):
        if value == 0 or 1e-3 <= abs(value) < 1e7:
            return f"{value:,.4g}" if abs(value) < 1 else f"{value:,.2f}"
        return f"{value:.4g}"
    return str(value)


def _print_table(columns, rows, out) -> None:
    cells = [[_fmt(c) for c in row] for row in rows]
    numeric = [[isinstance(c, (int, float)) and not isinstance(c, bool) for c in row]
               for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) for i, h in enumerate(columns)]
    out.write("  " + "  ".join(str(h).ljust(w) for h, w in zip(columns, widths)).rstrip() + "\n")
    out.write("  " + "  ".join("-" * w for w in widths) + "\n")
    for r, num in zip(cells, numeric):
        line = "  ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(r, widths, num))
        out.write("  " + line.rstrip() + "\n")


def _print_section(section, out) -> None:
    out.write(f"\n== {section.title} ==\n")
    labels = [("  " if f.agrees else "≠ ") + f.label for f in section.figures]
    ours = [f"{_fmt(f.ours)} {f.unit}".strip() for f in section.figures]
    widths = [max(len("figure"), *map(len, labels)),
              max(len("guide"), *(len(f.guide) for f in section.figures)),
              max(len("rooflinekit"), *map(len, ours))]
    out.write("  " + "  ".join(h.ljust(w) for h, w in zip(("figure", "guide", "rooflinekit"),
                                                        widths)).rstrip() + "\n")
    out.write("  " + "  ".join("-" * w for w in widths) + "\n")
    for fig, label, value in zip(section.figures, labels, ours):
        out.write(f"  {label.ljust(widths[0])}  {fig.guide.ljust(widths[1])}  {value}\n")
        if fig.note:
            out.write(f"      ↳ {fig.note}\n")
    for table in section.tables:
        out.write(f"\n  {table.title}\n")
        _print_table(table.columns, table.rows, out)
    for note in section.notes:
        out.write(f"\n  note: {note}\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _cmd_guide(args, out) -> int:
    from rooflinekit import guide
    sections = guide.build(args.section)
    if args.json:
        json.dump([s.as_dict() for s in sections], out, indent=2, default=float)
        out.write("\n")
        return 0
    out.write("rooflinekit guide: the serving-capacity guide's figures, recomputed "
              "('≠' marks a figure that differs, with the reason)\n")
    for section in sections:
        _print_section(section, out)
    return 0


def _cmd_catalog(args, out) -> int:
    from rooflinekit import catalog, units
    if args.kind == "gpus":
        specs = [catalog.gpu(n) for n in (args.names or catalog.gpu_names())]
        if args.json:
            json.dump([{"name": g.name, "memory_gib": g.memory_bytes / units.GiB,
                        "hbm_bandwidth_tb_s": g.hbm_bandwidth / units.TB_PER_S,
                        "dense_tflops": {k: v / units.TFLOPS
                                         for k, v in g.peak_flops_by_dtype.items()},
                        "interconnect_gb_s": None if g.interconnect_bandwidth is None
                        else g.interconnect_bandwidth / units.GB_PER_S,
                        "hourly_usd": g.hourly_price, "source": g.source} for g in specs],
                      out, indent=2)
            out.write("\n")
            return 0
        rows = [(g.name, g.memory_bytes / units.GiB, g.hbm_bandwidth / units.TB_PER_S,
                 g.peak_flops / units.TFLOPS,
                 g.peak_flops_by_dtype["fp8"] / units.TFLOPS if "fp8" in g.peak_flops_by_dtype
                 else "-",
                 "-" if g.hourly_price is None else f"{g.hourly_price:.2f}", g.source)
                for g in specs]
        _print_table(("gpu", "GiB", "TB/s", "TFLOP/s bf16", "TFLOP/s fp8", "USD/h", "source"),
                     rows, out)
        return 0
    specs = [catalog.model(n) for n in (args.names or catalog.model_names())]
    if args.json:
        json.dump([{"name": m.name, "n_params": m.n_params, "n_active_params": m.n_active_params,
                    "attention": m.attention, "kv_bytes_per_token": m.kv_bytes_per_token,
                    "weight_bytes": m.weight_bytes, "sliding_window": m.sliding_window,
                    "source": m.source} for m in specs], out, indent=2)
        out.write("\n")
        return 0
    rows = [(m.name, f"{m.n_params / 1e9:,.1f}B" + (
             f" ({m.n_active_params / 1e9:,.1f}B active)" if m.is_moe else ""),
             m.n_layers, m.attention + (f" +SWA{m.sliding_window}" if m.sliding_window else ""),
             m.kv_bytes_per_token / units.KiB, m.weight_bytes / units.GiB, m.source)
            for m in specs]
    _print_table(("model", "params", "layers", "attention", "KV KiB/token", "weights GiB",
                  "source"), rows, out)
    return 0


def _cmd_capacity(args, out) -> int:
    from rooflinekit import catalog, memory, roofline, units
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
        "itl_ms": roofline.decode_step_time(model, gpu, batch, ctx, tp=tp,
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
        json.dump(result, out, indent=2)
        out.write("\n")
        return 0
    out.write(f"{model.name} on {tp} × {gpu.name} ({model.attention}, "
              f"{model.bytes_per_param:g} B/param)\n")
    rows = [(k.replace("_", " "), "-" if v is None else v) for k, v in result.items()
            if k not in ("model", "gpu")]
    _print_table(("quantity", "value"), rows, out)
    return 0


def _cmd_price(args, out) -> int:
    from rooflinekit import pricing
    payg = pricing.PayAsYouGo(args.input, args.output)
    rows = []
    provisioned = None
    if args.provisioned_monthly is not None:
        if args.provisioned_capacity is None:
            raise ValueError("--provisioned-capacity is required with --provisioned-monthly")
        provisioned = pricing.Provisioned(args.provisioned_monthly, args.provisioned_capacity,
                                          name="provisioned")
    hosted = None
    if args.gpus is not None:
        hosted = pricing.SelfHosted(args.gpus, args.gpu_hourly, args.engineering,
                                    capacity_tokens=args.self_hosted_capacity)
    result = []
    for f in args.output_fraction:
        row = {"output_fraction": f, "blended_per_mtok": pricing.blended_price(payg, f)}
        if provisioned is not None:
            be = pricing.break_even(provisioned, payg, f)
            row["break_even_tokens"] = be.tokens
            row["break_even_utilization"] = be.utilization
        if args.volume is not None:
            options = [payg] + [o for o in (provisioned, hosted) if o is not None]
            choice = pricing.cheapest_option(args.volume, options, f)
            row["cheapest"] = choice.option.name if choice.option is not None else None
            row["cheapest_monthly_usd"] = choice.cost
            if choice.option is None:
                row["reason"] = choice.reason
        result.append(row)
    if args.json:
        json.dump(result, out, indent=2, default=float)
        out.write("\n")
        return 0
    columns = tuple(result[0])
    rows = [tuple(r.get(c, "-") for c in columns) for r in result]
    _print_table(tuple(c.replace("_", " ") for c in columns), rows, out)
    return 0


def _cmd_calibrate(args, out) -> int:
    from rooflinekit.cli.calibrate import calibrate_cli_main
    return calibrate_cli_main(args, out)


def _cmd_sweep(args, out) -> int:
    from rooflinekit.cli.sweep import sweep_cli_main
    return sweep_cli_main(args, out)


_DISTRIBUTIONS = ("constant", "uniform", "geometric", "lognormal", "short-and-long")


def _distribution(kind: str, mean: float, spread: float):
    from rooflinekit import workloads
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


def _cmd_simulate(args, out) -> int:
    import numpy as np

    from rooflinekit import batching, catalog, workloads
    if args.workload == "guide":
        work = workloads.guide_workload()
    else:
        arrival = {"all": workloads.AllAtOnce(),
                   "interval": workloads.FixedInterval(args.interval or 1.0),
                   "poisson": workloads.Poisson(args.rate or 1.0)}[args.arrival]
        spec = workloads.WorkloadSpec(
            args.requests, output=_distribution(args.workload, args.output_mean, args.spread),
            prompt=workloads.Constant(args.prompt), arrival=arrival)
        work = workloads.Workload(*spec.draw(np.random.default_rng(args.seed)))
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
    keys = ("makespan", "throughput", "mean_latency", "mean_service_latency", "p50_latency",
            "p90_latency", "p99_latency", "mean_ttft", "mean_itl", "slot_utilization",
            "padding_slot_steps", "peak_kv_tokens", "n_completed", "n_rejected",
            "n_preemptions")
    table = {name: {k: float(ds[k]) for k in keys if k in ds} for name, ds in results.items()}
    unit = results["continuous"].attrs.get("time_units", "tick")
    if args.json:
        json.dump({"time_units": unit, "requests": int(results["static"].sizes["request"]),
                   **table}, out, indent=2)
        out.write("\n")
        return 0
    unit_name = "ticks" if unit == "tick" else "seconds"
    out.write(f"{results['static'].sizes['request']} requests; times in {unit_name}; static batches "
              f"of {args.static_batch}, continuous with {args.slots or 'unlimited'} slots\n")
    rows = [(k.replace("_", " "), table["static"].get(k, "-"), table["continuous"].get(k, "-"))
            for k in keys]
    _print_table(("metric", "static", "continuous"), rows, out)
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (the usage is one ``--help`` away)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rooflinekit",
        description="Capacity, latency and cost planning for serving large language models.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    p = sub.add_parser("guide", help="reproduce the guide's figures and tables",
                       description="Print the serving-capacity guide's figures, recomputed live, "
                                   "with the guide's value beside ours.",
                       epilog=_EPILOG_GUIDE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--section", action="append", metavar="NAME",
                   help="print only this section (repeatable)")
    p.add_argument("--json", action="store_true", help="emit JSON instead of text")
    p.set_defaults(func=_cmd_guide)

    p = sub.add_parser("catalog", help="list the built-in GPUs or models with their sources",
                       description="List catalogue entries with their figures and sources.",
                       epilog="examples:\n  rooflinekit catalog gpus\n"
                              "  rooflinekit catalog models llama-3.1-70b deepseek-v3 --json",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", choices=("gpus", "models"))
    p.add_argument("names", nargs="*", help="only these entries (case-insensitive)")
    p.add_argument("--json", action="store_true", help="emit JSON instead of text")
    p.set_defaults(func=_cmd_catalog)

    p = sub.add_parser(
        "capacity", help="a model on a GPU group: fit, KV budget, concurrency, TTFT/ITL, cost",
        description="Capacity of one model on one tensor-parallel GPU group.",
        epilog="examples:\n  rooflinekit capacity llama-3.1-70b h100 --tp 4 --context 8192 "
               "--batch 32\n  rooflinekit capacity path/to/config.json l40s --json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="catalogue model name or path to a Hugging Face config.json")
    p.add_argument("gpu", help="catalogue GPU name")
    p.add_argument("--tp", type=_positive_int, default=1, help="tensor-parallel degree (1)")
    p.add_argument("--context", type=_positive_int, default=8192,
                   help="tokens per sequence (8192)")
    p.add_argument("--batch", type=_positive_int, default=1, help="decode batch size (1)")
    p.add_argument("--prompt", type=_positive_int, default=1024,
                   help="prompt tokens for TTFT (1024)")
    p.add_argument("--reserve", type=float, default=0.10, help="working-space share (0.10)")
    p.add_argument("--gpu-hourly", type=float, help="USD per GPU-hour (default: catalogue)")
    p.add_argument("--allreduce", action="store_true", help="charge the TP all-reduce")
    p.add_argument("--json", action="store_true", help="emit JSON instead of text")
    p.set_defaults(func=_cmd_capacity)

    p = sub.add_parser(
        "price", help="blended price, break-even and the cheapest option",
        description="Pay-as-you-go vs provisioned vs self-hosted at one or more output mixes.",
        epilog="examples:\n  rooflinekit price --input 3 --output 12 --provisioned-monthly 12000 "
               "--provisioned-capacity 4e9 --output-fraction 0.1 0.5\n"
               "  rooflinekit price --input 3 --output 12 --gpus 8 --gpu-hourly 3 "
               "--engineering 25000 --self-hosted-capacity 2e10 --volume 1.5e10",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--input", type=float, required=True, help="USD per 1M input tokens")
    p.add_argument("--output", type=float, required=True, help="USD per 1M output tokens")
    p.add_argument("--output-fraction", type=float, nargs="+", required=True,
                   help="share of tokens that are output, in [0, 1] (one or more)")
    p.add_argument("--provisioned-monthly", type=float, help="USD per month of the commitment")
    p.add_argument("--provisioned-capacity", type=float, help="tokens per month it serves")
    p.add_argument("--gpus", type=_positive_int, help="self-hosted GPUs")
    p.add_argument("--gpu-hourly", type=float, default=3.0, help="USD per GPU-hour (3)")
    p.add_argument("--engineering", type=float, default=0.0, help="USD per month of engineering")
    p.add_argument("--self-hosted-capacity", type=float, help="tokens per month self-hosting serves")
    p.add_argument("--volume", type=float, help="tokens per month: pick the cheapest option")
    p.add_argument("--json", action="store_true", help="emit JSON instead of text")
    p.set_defaults(func=_cmd_price)

    p = sub.add_parser(
        "simulate", help="a workload through static and continuous batching",
        description="Simulate static and continuous batching on one workload and compare them.",
        epilog="examples:\n  rooflinekit simulate                       the guide's 24-request "
               "workload\n  rooflinekit simulate --workload lognormal --requests 500 "
               "--spread 1.5 --slots 32\n  rooflinekit simulate --workload lognormal "
               "--model llama-3.1-8b --gpu h100 --admission paged --kv-budget 200000",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workload", choices=("guide", *_DISTRIBUTIONS), default="guide",
                   help="the guide's reconstructed workload, or output lengths drawn from a "
                        "distribution (default guide)")
    p.add_argument("--requests", type=_positive_int, default=256, help="requests drawn (256)")
    p.add_argument("--output-mean", type=float, default=100.0, help="mean output tokens (100)")
    p.add_argument("--spread", type=float, default=1.0,
                   help="lognormal sigma, or uniform half-width (1.0)")
    p.add_argument("--prompt", type=int, default=0, help="prompt tokens per request (0)")
    p.add_argument("--arrival", choices=("all", "interval", "poisson"), default="all")
    p.add_argument("--interval", type=float, help="ticks/seconds between arrivals")
    p.add_argument("--rate", type=float, help="Poisson arrivals per tick/second")
    p.add_argument("--seed", type=int, default=0, help="random seed (0)")
    p.add_argument("--static-batch", type=_positive_int, default=8, help="static batch size (8)")
    p.add_argument("--slots", type=_positive_int, default=16, help="max_num_seqs (16)")
    p.add_argument("--kv-budget", type=_positive_int, help="KV budget in tokens")
    p.add_argument("--admission", choices=("reserve", "paged"), default="reserve")
    p.add_argument("--block-size", type=_positive_int, default=16, help="paged block size (16)")
    p.add_argument("--max-batched-tokens", type=_positive_int,
                   help="chunked prefill: tokens per step")
    p.add_argument("--model", help="time steps with the roofline of this model (with --gpu)")
    p.add_argument("--gpu", help="GPU for roofline timing")
    p.add_argument("--tp", type=_positive_int, default=1, help="tensor-parallel degree (1)")
    p.add_argument("--json", action="store_true", help="emit JSON instead of text")
    p.set_defaults(func=_cmd_simulate)

    from rooflinekit.cli.sweep import add_sweep_arguments
    p = sub.add_parser(
        "sweep", help="every derived quantity over a design space",
        description="Sweep models × GPUs × tp × context × batch; report the best, the cheapest "
                    "under TTFT/ITL targets, or the cost-vs-ITL front; optionally write the "
                    "whole grid to .nc/.zarr.",
        epilog="examples:\n  rooflinekit sweep --models all --gpus h100 h200 mi300x --report best\n"
               "  rooflinekit sweep --models llama-3.1-70b --gpus all --report cheapest "
               "--max-ttft 0.5 --max-itl 0.05\n  rooflinekit sweep --models all --gpus all "
               "--chunks auto --output grid.nc",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_sweep_arguments(p)
    p.set_defaults(func=_cmd_sweep)

    from rooflinekit.cli.calibrate import add_calibrate_arguments
    p = sub.add_parser(
        "calibrate", help="fit efficiency factors to measured runs",
        description="Fit compute/bandwidth efficiency and per-step overhead to measurements.",
        epilog="examples:\n  rooflinekit calibrate runs.csv --cv kfold\n"
               "  rooflinekit calibrate --vllm-result result.json --model llama-3.1-8b --gpu h100",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_calibrate_arguments(p)
    p.set_defaults(func=_cmd_calibrate)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rooflinekit`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args, sys.stdout)
    except BrokenPipeError:
        # the reader (e.g. `| head`) went away: not an error of ours
        sys.stdout = open(os.devnull, "w")
        return 0
    except (ValueError, TypeError, KeyError, OSError, ImportError) as exc:
        sys.stderr.write(f"rooflinekit {args.command}: error: {exc}\n")
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
