"""``rooflinekit plan``: traffic and an SLO to a ranked table of fleets and the buying decision."""

from __future__ import annotations

import dataclasses
import math
import os

from rooflinekit import batching, catalog, planning, pricing, roofline, workloads
from rooflinekit.cli._args import (
    read_model,
    PREFIX_FLAGS,
    SPECULATIVE_FLAGS,
    add_flag,
    add_output_flags,
    latency,
    apply_dtypes,
    mixed_prefill,
    answer_scheduler,
    engine_from_args,
    scheduled_engine,
    gpu_price,
    int_list,
    name_list,
    nonnegative_float,
    nonnegative_int,
    number,
    positive_float,
    positive_int,
    shared_prefix,
    speculative_draft,
    whole_number,
)
from rooflinekit.cli._output import emit, print_table, to_jsonable
from rooflinekit.profiles import (memory_engine, memory_share, missing_attention_kernel,
                                  scheduler_engine)

__all__ = ["DESCRIPTION", "EPILOG", "HELP", "NAME", "TRAFFIC_FLAGS", "add_arguments",
           "add_replica_flags", "add_table_flags", "run",
           "targets_text", "traffic_and_slo"]

NAME = "plan"
HELP = "traffic + latency SLO -> replicas, GPUs, $/month, and the buying decision"
DESCRIPTION = (
    "Find, for every GPU, TP degree and max-num-seqs, the highest request rate one replica serves "
    "within the SLO (Monte Carlo over seeds, vLLM-style continuous batching on the roofline "
    "clock), the replicas the peak rate needs with headroom, the fleet's monthly cost, and whether "
    "self-hosting beats pay-as-you-go or provisioned capacity at the traffic's volume. Without "
    "--engine each GPU is timed by the shipped vLLM profile of it, and the ideal roofline's "
    "answer (the bound, a best case) is printed beside it.")
EPILOG = ("examples:\n"
          "  rooflinekit plan llama-3.1-8b --gpus h100,l40s --tp 1,2 --rate 5 --prompt-mean 1000 "
          "--output-mean 200 --ttft 1 --itl 0.05 --replicates 4 --requests 200\n"
          "  rooflinekit plan llama-3.1-70b --gpus h100,h200 --tp 2,4,8 --rate 20 "
          "--prompt-mean 2000 --output-mean 300 --spread 0.5 --ttft 1 --itl 0.05 --json\n"
          "  rooflinekit plan llama-3.1-8b --gpus h100 --rate 5 --prompt-mean 300 "
          "--output-mean 100 --prefix-tokens 2000 --prefix-share 0.8 --enable-prefix-caching "
          "--ttft 1 --replicates 2 --requests 100\n"
          "  rooflinekit plan llama-3.1-70b --gpus h100 --tp 4 --rate 2 --prompt-mean 500 "
          "--output-mean 100 --itl 0.03 --speculative-draft llama-3.1-8b "
          "--num-speculative-tokens 4 --acceptance 0.8 --replicates 2 --requests 100\n"
          "  rooflinekit plan llama-3.1-8b --gpus h100 --rate 4 --prompt-mean 500 "
          "--output-mean 100 --ttft 0.3 --engine sglang --recv-interval 10 --replicates 2 "
          "--requests 100\n"
          "  rooflinekit plan llama-3.1-8b --gpus h100 --rate 4 --prompt-mean 500 "
          "--output-mean 200 --ttft 1 --itl 0.3 --stream-interval 10 --replicates 2 "
          "--requests 100\n"
          "  rooflinekit plan llama-3.1-405b --gpus h100 --tp 8 --pp 1,2 --rate 1 "
          "--prompt-mean 500 --output-mean 50 --ttft 5 --replicates 2 --requests 60\n"
          "  rooflinekit plan mixtral-8x7b --gpus h100 --tp 2 --ep 1,2 --rate 2 "
          "--prompt-mean 500 --output-mean 100 --ttft 2 --replicates 2 --requests 60\n"
          "  rooflinekit plan llama-3.1-8b --gpus h100 --rate 2 --prompt-mean 500 "
          "--output-mean 100 --ttft 1 --itl 0.05 --calibration h100_vllm.json --replicates 2 "
          "--requests 60\n"
          "  rooflinekit plan llama-3.1-8b --gpus h100 --rate 5 --prompt-mean 1000 "
          "--output-mean 200 --ttft 1 --itl 0.05 --payg-price 0.6 2.4 --gpu-hourly h100=2.49 "
          "--engineering-monthly 2000 --replicates 2 --requests 100\n"
          "  rooflinekit plan llama-3.1-8b --gpus h100 --rate 5 --prompt-mean 1000 "
          "--output-mean 200 --ttft 1 --payg openai-gpt-4o-mini --provisioned-price 1000 2e9 2 2 "
          "--replicates 2 --requests 100\n"
          "  rooflinekit plan llama-3.1-8b --gpus h100 --rate 20 --prompt-mean 1000 "
          "--output-mean 200 --ttft 1 --profile business-hours --off-peak 0.2 --autoscale "
          "--min-replicas 1 --payg-price 0.6 2.4 --replicates 2 --requests 100\n"
          "  rooflinekit plan llama-3.1-8b --gpus h100 --rate 20 --prompt-mean 1000 "
          "--output-mean 200 --ttft 1 --profile diurnal --peak-hour 20 --off-peak 0.3 "
          "--autoscale --payg-price 0.6 2.4 --replicates 2 --requests 100\n"
          "  rooflinekit plan llama-3.1-8b --gpus h100 --rate 20 --prompt-mean 1000 "
          "--output-mean 200 --ttft 1 --profile business-hours --business-hours 8-20 "
          "--workdays 6 --autoscale --payg-price 0.6 2.4 --replicates 2 --requests 100\n"
          "  rooflinekit plan llama-3.1-8b --gpus h100 --rate 10 --prompt-mean 1000 "
          "--output-mean 200 --ttft 1 --profile day.csv --profile-period 15min --autoscale "
          "--payg-price 0.6 2.4 --replicates 2 --requests 100\n"
          "  rooflinekit plan path/to/config.json --name my-8b --gpus h100 --rate 5 "
          "--prompt-mean 1000 --output-mean 200 --ttft 1 --replicates 2 --requests 100\n"
          "  rooflinekit plan llama-3.1-8b --gpus h100 --rate 5 --prompt-mean 1000 "
          "--output-mean 200 --ttft 1 --spare-replicas 1 --min-replicas 2 --replicates 2 "
          "--requests 100\n"
          "  rooflinekit plan llama-3.1-8b --gpus h100 a100 l40s --tp 1,2 --rate 5 "
          "--prompt-mean 1000 --output-mean 200 --ttft 1 --per-gpu --replicates 2 "
          "--requests 100")


#: The largest log-normal sigma ``--spread`` takes: at 3 a length's 95th percentile is already
#: about 140× its median; 50 is a slip (a percentage, or a length typed for a sigma).
LARGEST_SPREAD = 3.0


def _check_spread(spread: float) -> None:
    """``--spread``: a log-normal sigma in [0, 3]; a larger one is refused as the likely slip."""
    if spread > LARGEST_SPREAD:
        raise ValueError(
            f"--spread must be a log-normal sigma in [0, {LARGEST_SPREAD:g}] (at 3 a length's "
            f"95th percentile is about 140x its median); got {spread:g}: a percentage or a "
            f"length typed for a sigma?")


#: The command's flags after the model and the shared ones: (flag, type, default, help).
#: ``...`` as the default marks a required flag.
_FLAGS = (
    ("--rate", positive_float, ..., "peak request rate the fleet must sustain [requests/s]"),
    ("--prompt-mean", positive_float, None,
     "mean prompt tokens per request (required; with --lengths sharegpt the sample's own, "
     "221, by default)"),
    ("--output-mean", positive_float, None,
     "mean output tokens per request (required; with --lengths sharegpt the sample's own, "
     "182, by default)"),
    ("--spread", nonnegative_float, 0.0,
     "log-normal sigma of both lengths, in [0, 3] (0: every request alike)"),
    ("--lengths", None, "lognormal",
     "how lengths spread around their means: lognormal (by --spread) or sharegpt (the "
     "ShareGPT sample vllm bench serve sends, scaled to the means; 14%% of its replies under "
     "ten tokens)"),
    ("--burstiness", positive_float, None,
     "gamma arrivals with this shape (1 = Poisson, < 1 bursty)"),
    ("--ttft", latency, None, "time-to-first-token target [s]; units allowed: 500ms, 1s"),
    ("--itl", latency, None, "inter-token latency target, every gap [s]"),
    ("--tpot", latency, None, "time-per-output-token target, per request: (e2e - TTFT) / "
     "(output tokens - 1), as vllm bench serve's TPOT [s]"),
    ("--e2e", latency, None, "end-to-end latency target [s]"),
    ("--quantile", number(0, 1, lo_open=True, hi_open=True), 0.95,
     "percentile the targets hold at, in (0, 1) (0.95)"),
    ("--headroom", number(0, 1, hi_open=True), 0.2, "spare capacity, in [0, 1) (0.2)"),
    ("--replicates", whole_number(1, 100_000), 20, "Monte Carlo replicates (20)"),
    ("--requests", whole_number(1, 10_000_000), 1000, "requests per replicate (1000)"),
    ("--seed", nonnegative_int, 0, "random seed (0)"),
    ("--engineering-monthly", nonnegative_float, 0.0,
     "engineering line per deployment [USD/month] (0)"),
    ("--electricity-price", nonnegative_float, 0.0, "electricity for owned GPUs [USD/kWh] (0)"),
    ("--engine", None, None, "vllm, sglang or trtllm (that engine's shipped profile of each "
     "GPU), ideal (the roofline bound), a calibration JSON from `rooflinekit calibrate` or an "
     "engine JSON of rooflinekit.Engine fields (default: vllm)"),
    ("--calibration", None, None, "a calibration JSON from `rooflinekit calibrate` (fitted to "
     "your own runs): it times every GPU's steps, as --engine FILE does; not with --engine"),
    ("--payg", None, None, "pay-as-you-go preset: a price row of the catalogue "
     "(`rooflinekit catalog prices`); default none: no pay-as-you-go row unless a price is given"),
    ("--provisioned", None, None, "provisioned-capacity preset: a row of the catalogue"),
    ("--top", positive_int, 10, "configurations shown, cheapest first (10)"),
)


def add_replica_flags(parser, *, lists: bool) -> None:
    """The flags of one replica's batcher: comma lists of values to plan over, or one each."""
    many = {"type": int_list} if lists else {}
    add_flag(parser, "--max-num-seqs", default=None,
             help=("comma-separated max sequences per batch (default: the engine's for each "
                   "GPU, vLLM's 1024 on >= 70 GiB other than A100, else 256)" if lists else
                   "most sequences in a batch of each replica (default: the engine's for the "
                   "GPU, vLLM's 1024 on >= 70 GiB other than A100, else 256)"), **many)
    add_flag(parser, "--max-num-batched-tokens", **many,
             help=("comma-separated per-step token budgets, chunked prefill (default: the "
                   "best of 512 to 16384, powers of two at least its max-num-seqs, and the "
                   "engine's own, for each configuration)" if lists else
                   "per-step token budget, chunked prefill (default: the engine's for the "
                   "GPU, vLLM's 8192 on >= 70 GiB other than A100, else 2048)"))
    add_flag(parser, "--gpu-memory-utilization", default=None,
             help="share of each GPU's memory for weights + KV, in (0, 1] (the engine's own: "
                  "0.9; --engine sglang its --mem-fraction-static rule; --engine trtllm 0.9 "
                  "of what the weights and its own memory leave)")
    add_flag(parser, "--block-size")
    add_flag(parser, "--dtype")
    add_flag(parser, "--kv-cache-dtype")
    add_flag(parser, "--mamba-ssm-cache-dtype")


def add_price_flags(parser) -> None:
    """The typed prices: pay-as-you-go, provisioned units and each GPU's hour."""
    parser.add_argument("--payg-price", type=positive_float, nargs="+", default=None,
                        metavar="USD",
                        help="pay-as-you-go price typed: IN OUT [CACHED], USD per 1M input, "
                             "output [and cached-input] tokens (e.g. 0.6 2.4); instead of --payg")
    parser.add_argument("--provisioned-price", type=positive_float, nargs="+", default=None,
                        metavar="N",
                        help="provisioned capacity typed: USD_PER_UNIT_MONTH TOKENS_PER_UNIT_MONTH "
                             "[MIN_UNITS [INCREMENT]] (whole units, default 1 and 1); instead of "
                             "--provisioned")
    parser.add_argument("--gpu-hourly", type=gpu_price, action="append", default=None,
                        metavar="GPU=USD",
                        help="USD per GPU-hour of a GPU of --gpus for the self-hosted fleet "
                             "(rented, spot, reserved or amortised own hardware), e.g. "
                             "H100-SXM-80GB=2.49; repeat per GPU (default: the catalogue's)")


def add_month_flags(parser) -> None:
    """How the month runs: a profile of the traffic, and a fleet that follows it."""
    parser.add_argument("--profile", default=None, metavar="SHAPE|FILE",
                        help="the month's traffic: flat, business-hours or diurnal (peaking at "
                             "--rate), or a CSV of requests/s, one a period (--profile-period, "
                             "or a 'period' column; default an hour), repeated over the "
                             "730-hour month (24 hourly lines a day, 168 a week). Default: "
                             "--rate all month")
    parser.add_argument("--profile-period", default=None, metavar="DURATION",
                        help="the period of each line of a --profile FILE: 15min, 1h, 1d or "
                             "seconds; it must divide an hour or be whole hours (1h)")
    parser.add_argument("--business-hours", type=_hours, default=(9, 17), metavar="START-END",
                        help="business hours of --profile business-hours, weekdays (9-17)")
    parser.add_argument("--workdays", type=whole_number(1, 7), default=None, metavar="N",
                        help="working days a week of --profile business-hours, the month "
                             "starting on a Monday, in [1, 7] (5)")
    parser.add_argument("--peak-hour", type=number(0, 24, hi_open=True), default=None,
                        metavar="HOUR",
                        help="hour of the day --profile diurnal peaks at, in [0, 24) (14)")
    parser.add_argument("--off-peak", type=number(0, 1), default=0.1, metavar="SHARE",
                        help="rate outside business hours, or at the diurnal trough, as a share "
                             "of --rate, in [0, 1] (0.1)")
    parser.add_argument("--autoscale", action="store_true",
                        help="also price the fleet scaled hour by hour with --profile (rented "
                             "GPUs billed by the hour)")
    parser.add_argument("--per-gpu", action="store_true",
                        help="show the cheapest configuration of each GPU type (--top would "
                             "hide a type whose every row is dearer than another's)")
    parser.add_argument("--min-replicas", type=positive_int, default=1, metavar="N",
                        help="fewest replicas the fleet runs, and the --autoscale fleet keeps "
                             "running (1)")
    parser.add_argument("--spare-replicas", type=nonnegative_int, default=0, metavar="N",
                        help="whole replicas kept beside those the peak needs, N+k for a "
                             "replica lost (0)")


def _hours(text: str) -> tuple[int, int]:
    """``START-END`` hours of the day, ``0 <= START < END <= 24``."""
    import argparse
    start, sep, end = str(text).partition("-")
    try:
        hours = (int(start), int(end))
    except ValueError:
        hours = None
    if not sep or hours is None or not 0 <= hours[0] < hours[1] <= 24:
        raise argparse.ArgumentTypeError(f"expected START-END hours with 0 <= START < END <= 24 "
                                         f"such as 9-17, got {text!r}")
    return hours


_hours.__name__ = "hours"


def profile_from_args(args):
    """The month's requests per hour from ``--profile`` (``None`` without it), checked against
    ``--rate``; errors name the flag."""
    if args.profile is None or args.profile not in planning.PROFILE_SHAPES:
        for flag, value in (("--workdays", args.workdays), ("--peak-hour", args.peak_hour)):
            if value is not None:
                raise ValueError(f"{flag} shapes a built-in --profile; got "
                                 f"{'none' if args.profile is None else 'a file'}")
    if args.profile is None:
        if args.profile_period is not None:
            raise ValueError("--profile-period is the period of a --profile FILE's lines: "
                             "give --profile")
        if args.autoscale:
            raise ValueError("--autoscale scales the fleet with the month's traffic: give "
                             "--profile")
        return None
    if args.profile in planning.PROFILE_SHAPES:
        if args.profile_period is not None:
            raise ValueError(f"--profile-period is the period of a --profile FILE's lines; "
                             f"the {args.profile} shape is hourly")
        for flag, value, shape in (("--workdays", args.workdays, "business-hours"),
                                   ("--peak-hour", args.peak_hour, "diurnal")):
            if value is not None and args.profile != shape:
                raise ValueError(f"{flag} shapes --profile {shape}; got --profile "
                                 f"{args.profile}")
        start, end = args.business_hours
        return planning.month_profile(
            args.profile, args.rate, start_hour=start, end_hour=end,
            workdays=5 if args.workdays is None else args.workdays, off_peak=args.off_peak,
            peak_hour=14.0 if args.peak_hour is None else args.peak_hour)
    try:
        profile = planning.read_profile(args.profile, period=args.profile_period)
    except (ValueError, OSError) as exc:
        # read_profile checks the period first, its message starting "period"
        flag = "--profile-period" if str(exc).startswith("period") else "--profile"
        raise ValueError(f"{flag}: {exc}") from None
    peak = float(profile.max()) / (planning.SECONDS_PER_MONTH / profile.size)  # req/s
    if peak > args.rate * (1 + 1e-9):
        raise ValueError(f"--profile peaks at {peak:g} requests/s, above --rate {args.rate:g}: "
                         f"the fleet is sized for --rate; raise it to the profile's peak")
    return profile


def prices_from_args(args, gpus):
    """The prices of the decision from the flags: ``(payg, provisioned, gpu_prices, notes)``,
    ``None`` where not given; ``notes`` says, per option, which price was used and whence."""
    notes = {}
    if args.payg is not None and args.payg_price is not None:
        raise ValueError("--payg names a preset and --payg-price types a price: give one")
    if args.provisioned is not None and args.provisioned_price is not None:
        raise ValueError("--provisioned names a preset and --provisioned-price types a price: "
                         "give one")
    payg = None
    if args.payg is not None:
        payg = pricing.payg_price(args.payg)
        row = catalog.payg_row(args.payg)
        notes["pay-as-you-go"] = (f"preset {row['name']}: {_payg_text(payg)} "
                                  f"(illustrative, {row['date']}; {row['source']})")
    elif args.payg_price is not None:
        if len(args.payg_price) not in (2, 3):
            raise ValueError(f"--payg-price takes IN OUT [CACHED] (USD per 1M tokens), 2 or 3 "
                             f"numbers; got {len(args.payg_price)}")
        try:
            payg = pricing.PayAsYouGo(*args.payg_price[:2], cached_input_per_mtok=(
                args.payg_price[2] if len(args.payg_price) == 3 else None))
        except ValueError as exc:
            raise ValueError(f"--payg-price: {exc}") from None
        notes["pay-as-you-go"] = f"typed: {_payg_text(payg)}"
    provisioned, increment = None, 1
    if args.provisioned is not None:
        provisioned = pricing.provisioned_example(args.provisioned)
        row = catalog.provisioned_row(args.provisioned)
        notes["provisioned"] = (f"preset {row['name']} (illustrative, {row['date']}; "
                                f"{row['source']})")
    elif args.provisioned_price is not None:
        values = args.provisioned_price
        if not 2 <= len(values) <= 4:
            raise ValueError(f"--provisioned-price takes USD_PER_UNIT_MONTH "
                             f"TOKENS_PER_UNIT_MONTH [MIN_UNITS [INCREMENT]], 2 to 4 numbers; "
                             f"got {len(values)}")
        for label, value in zip(("MIN_UNITS", "INCREMENT"), values[2:]):
            if value != round(value):
                raise ValueError(f"--provisioned-price: {label} must be a whole number of "
                                 f"units, got {value:g}")
        minimum = int(values[2]) if len(values) > 2 else 1
        increment = int(values[3]) if len(values) > 3 else 1
        provisioned = pricing.Provisioned.from_units(minimum, values[1],
                                                     monthly_cost_per_unit=values[0])
        notes["provisioned"] = (f"typed: USD {values[0]:,.2f} a unit a month for "
                                f"{values[1]:.3g} tokens a month, at least {minimum} unit(s), "
                                f"in steps of {increment}")
    gpu_prices = None
    planned = {catalog.gpu(g).name for g in gpus}
    if args.gpu_hourly:
        gpu_prices = dict(args.gpu_hourly)
        for name in gpu_prices:
            if name not in planned:
                raise ValueError(f"--gpu-hourly prices {name}, which is not in --gpus "
                                 f"({', '.join(sorted(planned))})")
    # the planner's own message names its Python argument; a command names its flag
    unpriced = sorted(name for name in planned if catalog.gpu(name).hourly_price is None
                      and name not in (gpu_prices or {}))
    if unpriced:
        raise ValueError(f"--gpus {', '.join(unpriced)}: no hourly price in the catalogue; "
                         f"type one with --gpu-hourly {unpriced[0]}=USD")
    return payg, provisioned, increment, gpu_prices, notes


def _payg_text(payg) -> str:
    cached = "" if payg.cached_input_per_mtok is None else \
        f", cached input USD {float(payg.cached_input_per_mtok):g}"
    return (f"USD {float(payg.input_per_mtok):g} input / {float(payg.output_per_mtok):g} "
            f"output per 1M tokens{cached}")


def add_table_flags(parser, flags) -> None:
    """Flags from a table of ``(flag, type, default, help)``; ``...`` marks a required one."""
    for flag, kind, default, text in flags:
        required = default is ...
        parser.add_argument(flag, type=kind, required=required,
                            default=None if required else default, help=text)


def add_arguments(parser) -> None:
    add_flag(parser, "--model", positional=True)
    add_flag(parser, "--name")
    parser.add_argument("--gpus", nargs="+", type=name_list, required=True, metavar="NAME",
                        help="catalogue GPU names (h100 l40s or h100,l40s)")
    add_flag(parser, "--tensor-parallel-size", type=int_list, default=[1],
             help="comma-separated tensor-parallel degrees (1)")
    add_flag(parser, "--pipeline-parallel-size", type=int_list, default=None,
             help="comma-separated pipeline-parallel degrees, a replica being tp × pp GPUs "
                  "(default: one stage)")
    add_flag(parser, "--expert-parallel-size", type=int_list, default=None,
             help="comma-separated expert-parallel degrees: a MoE model's routed experts over "
                  "ep of the tp GPUs, each dividing tp (SGLang's --ep-size; vLLM's "
                  "--enable-expert-parallel is ep = tp; default: every expert sharded)")
    add_replica_flags(parser, lists=True)
    add_flag(parser, "--mixed-prefill")
    add_flag(parser, "--recv-interval")
    add_flag(parser, "--stream-interval")
    add_flag(parser, "--admission")
    add_table_flags(parser, _FLAGS)
    add_price_flags(parser)
    add_month_flags(parser)
    for flag in PREFIX_FLAGS:
        add_flag(parser, flag)
    for flag in SPECULATIVE_FLAGS:
        add_flag(parser, flag)
    add_output_flags(parser, output_help=(
        "also write the plan to FILE, the format from its extension: .nc or .zarr (the "
        "Dataset), .csv or .parquet (the configurations), .json (as --json)"))


def _lengths(mean, spread):
    if spread == 0:
        return workloads.Constant(int(round(mean)))
    return workloads.LogNormal(mean, spread)


def _rows(ds):
    """Configurations serving the traffic, cheapest first, as dicts."""
    flat = ds.drop_dims("replicate").to_dataframe().reset_index()
    flat = flat.sort_values(["monthly_cost", "gpus", "max_rate"], ascending=[True, True, False])
    rows = []
    for _, r in flat.iterrows():
        rows.append({"gpu": r["gpu"], "tp": int(r["tp"]),
                     **{k: int(r[k]) for k in ("pp", "ep") if k in r},
                     "max_num_seqs": int(r["max_num_seqs"]),
                     "max_num_batched_tokens": int(r["max_num_batched_tokens"]),
                     "max_rate": float(r["max_rate"]), "max_rate_low": float(r["max_rate_low"]),
                     "max_rate_high": float(r["max_rate_high"]), "replicas": int(r["replicas"]),
                     "gpus": int(r["gpus"]), "monthly_cost": float(r["monthly_cost"]),
                     "cost_per_million_tokens": float(r["cost_per_million_tokens"]),
                     "operating_rate": float(r["operating_rate"]),
                     "p95_ttft": float(r["p95_ttft"]), "p95_token_itl": float(r["p95_token_itl"]),
                     "binding": r["binding"],
                     "rate_margin": rate_margin(r["max_rate"], r["operating_rate"])})
    return rows


def rate_margin(max_rate, operating_rate) -> float:
    """How far each replica's operating rate may rise before the binding target fails [1]:
    ``max_rate / operating_rate − 1`` (0.25: 25 % more traffic per replica; >= headroom with
    enough replicas); NaN where the configuration serves nothing."""
    top, now = float(max_rate), float(operating_rate)
    if not (top > 0 and now > 0 and math.isfinite(top) and math.isfinite(now)):
        return math.nan
    return top / now - 1.0


def _layout_text(row) -> str | int:
    """A row's layout as the table heads it: ``tp``, ``tp×pp``, with ``, ep`` where planned."""
    if "pp" not in row and "ep" not in row:
        return row["tp"]
    text = str(row["tp"]) + (f"×{row['pp']}" if "pp" in row else "")
    return text + (f", {row['ep']}" if "ep" in row else "")


def _margin_text(margin: float) -> str:
    return "—" if margin != margin else f"+{margin:.0%}"


def _ideal_bound(rows, traffic, slo, model, *, pp, ep, search) -> dict | None:
    """The cheapest configuration planned again on the ideal roofline, the bound beside the
    engine's answer (``None`` when nothing serves)."""
    if not rows or rows[0]["gpus"] <= 0:
        return None
    best = rows[0]
    ideal = planning.plan(traffic, slo, models=[model], gpus=[best["gpu"]], tp=best["tp"],
                          pp=None if pp is None else [best.get("pp", 1)],
                          ep=None if ep is None else [best.get("ep", 1)],
                          max_num_seqs=best["max_num_seqs"], engine="ideal",
                          **{**search, "max_num_batched_tokens":
                             best["max_num_batched_tokens"] or None})
    row = _rows(ideal)[0]
    return {"gpu": row["gpu"], "tp": row["tp"], "max_num_seqs": row["max_num_seqs"],
            "max_rate": row["max_rate"], "replicas": row["replicas"], "gpus": row["gpus"],
            "monthly_cost": row["monthly_cost"], "model_quality": ideal.attrs["model_quality"]}


#: ``--lengths``: how the lengths spread around ``--prompt-mean`` and ``--output-mean``.
LENGTH_SHAPES = ("lognormal", "sharegpt")


def lengths_from_args(args) -> tuple:
    """The prompt and output length distributions of ``--prompt-mean``, ``--output-mean``,
    ``--spread`` (whole tokens where every request is alike) and ``--lengths`` (``sharegpt``:
    :func:`rooflinekit.workloads.sharegpt_lengths` scaled to the means)."""
    shape = getattr(args, "lengths", "lognormal")
    if shape not in LENGTH_SHAPES:
        raise ValueError(f"--lengths must be one of {', '.join(LENGTH_SHAPES)}; got {shape!r}")
    _check_spread(args.spread)
    if shape == "sharegpt":
        if args.spread:
            raise ValueError(f"--spread is the log-normal's sigma and --lengths sharegpt draws "
                             f"the recorded sample's own spread; got --spread {args.spread:g}: "
                             f"give one of them")
        return workloads.sharegpt_lengths(args.prompt_mean, args.output_mean)
    for flag, mean in (("--prompt-mean", args.prompt_mean), ("--output-mean", args.output_mean)):
        if mean is None:
            raise ValueError(f"{flag} is required: the mean tokens per request (only "
                             f"--lengths sharegpt has a default, the sample's own)")
        if args.spread == 0 and mean != round(mean):   # every request alike: whole tokens
            raise ValueError(f"{flag} must be a whole number of tokens with --spread 0, "
                             f"got {mean:g}")
    return _lengths(args.prompt_mean, args.spread), _lengths(args.output_mean, args.spread)


def traffic_and_slo(args):
    """The ``Traffic`` and ``SLO`` of the traffic and target flags (:data:`TRAFFIC_FLAGS`)."""
    prompt, output = lengths_from_args(args)
    prefix = shared_prefix(args) if hasattr(args, "prefix_tokens") else None
    traffic = planning.Traffic(
        args.rate, prompt, output,
        arrival="poisson" if args.burstiness is None else "gamma", burstiness=args.burstiness,
        prefix=prefix)
    return traffic, planning.SLO(ttft=args.ttft, itl=args.itl, e2e=args.e2e, tpot=args.tpot,
                                 quantile=args.quantile)


def run(args, out) -> int:
    traffic, slo = traffic_and_slo(args)
    profile = profile_from_args(args)
    if profile is not None:
        traffic = dataclasses.replace(traffic, profile=profile)
    if args.enable_prefix_caching and traffic.prefix is None:
        raise ValueError("--enable-prefix-caching caches shared prefixes: give --prefix-tokens")
    model = apply_dtypes(read_model(args), args)
    draft = speculative_draft(args)
    speculative = None
    if draft is not None:
        if not isinstance(draft, float):
            draft = apply_dtypes(draft, args)        # the draft in the target's formats
        speculative = batching.Speculative(draft=draft, draft_tokens=args.num_speculative_tokens,
                                           acceptance=args.acceptance, seed=args.seed)
    gpus = [g for names in args.gpus for g in names]
    for name in gpus:
        catalog.gpu(name)
    if speculative is not None:
        try:            # the roofline's rule for a draft (vocabulary, layers), before any work
            batching.ContinuousBatcher(model=model, gpu=catalog.gpu(gpus[0]), clock="roofline",
                                       speculative=speculative)
        except ValueError as err:
            raise ValueError(f"--speculative-draft: {err}") from None
    payg, provisioned, increment, gpu_prices, price_notes = prices_from_args(args, gpus)
    search = dict(max_num_batched_tokens=args.max_num_batched_tokens or "search",
                  gpu_memory_utilization=args.gpu_memory_utilization,
                  block_size=args.block_size, headroom=args.headroom,
                  replicates=args.replicates, requests=args.requests, seed=args.seed,
                  engineering_monthly=args.engineering_monthly,
                  electricity_price=args.electricity_price,
                  prefix_caching=args.enable_prefix_caching, speculative=speculative,
                  prices=gpu_prices, spare_replicas=args.spare_replicas,
                  min_replicas=args.min_replicas, mixed_prefill=mixed_prefill(args),
                  recv_interval=args.recv_interval, stream_interval=args.stream_interval,
                  admission=args.admission)
    check_grid_size(args, traffic, gpus)
    engine = engine_from_args(args, gpus)
    planned = scheduled_engine(args, engine)
    ds = planning.plan(traffic, slo, models=[model], gpus=gpus, tp=args.tp, pp=args.pp,
                       ep=args.ep, max_num_seqs=args.max_num_seqs or "auto", engine=planned, **search)
    best = planning.cheapest_plan(ds, by=None)
    decision = planning.decision_table(best, traffic, payg=payg, provisioned=provisioned,
                                       unit_increment=increment, autoscale=args.autoscale,
                                       min_replicas=args.min_replicas)
    rows = _rows(ds)
    # the bound runs the answer's scheduling (its slots and budget: the best row's)
    search.update(answer_scheduler(ds.attrs))
    bound = None if engine is roofline.IDEAL else _ideal_bound(
        rows, traffic, slo, model, pp=args.pp, ep=args.ep, search=search)
    options = {str(o): {"monthly_cost": float(decision["monthly_cost"].sel(option=o)),
                        "monthly_cost_low": float(decision["monthly_cost_low"].sel(option=o)),
                        "monthly_cost_high":
                            float(decision["monthly_cost_high"].sel(option=o)),
                        "capacity_tokens": float(decision["capacity_tokens"].sel(option=o)),
                        "tie_gpu_hourly": float(decision["tie_gpu_hourly"].sel(option=o)),
                        "tie_engineering_monthly":
                            float(decision["tie_engineering_monthly"].sel(option=o)),
                        "tie_payg_blended": float(decision["tie_payg_blended"].sel(option=o)),
                        "cost_per_million_tokens":
                            float(decision["cost_per_million_tokens"].sel(option=o)),
                        "break_even_tokens": float(decision["break_even_tokens"].sel(option=o)),
                        "break_even_tokens_low":
                            float(decision["break_even_tokens_low"].sel(option=o)),
                        "break_even_tokens_high":
                            float(decision["break_even_tokens_high"].sel(option=o)),
                        "choice_share": float(decision["choice_share"].sel(option=o))}
               for o in decision["option"].values}
    if rows and rows[0]["gpus"] > 0:
        hourly = float(best["gpu_hourly"])
        price_notes["self-hosted"] = (
            f"USD {hourly:g} per GPU-hour of {best['gpu'].values}, "
            + ("typed (--gpu-hourly)" if gpu_prices and str(best["gpu"].values) in gpu_prices
               else "the catalogue's illustrative price (--gpu-hourly to type yours)"))
    flips = decision_flips(decision)
    payload = {"model": model.name, "model_quality": ds.attrs["model_quality"],
               "configurations": rows,
               "decision": {"options": options, "choice": str(decision["choice"].values),
                            "prices": price_notes, "flips": flips,
                            "month_priced_as": decision.attrs["month_priced_as"],
                            "payg_cached_fraction": decision.attrs["payg_cached_fraction"]},
               "monthly_tokens": decision.attrs["monthly_tokens"]}
    if bound is not None:
        payload["ideal_bound"] = bound
    # a path or a repo id typed for the model is what the engines load, whatever --name says
    typed = str(args.model)
    path = typed if os.path.exists(typed) or "/" in typed else None
    if path is not None and os.path.isfile(path):      # a config.json: the folder beside it
        path = os.path.dirname(path) or "."
    deploy = planning.launch_commands(best, traffic, model=model, model_path=path) \
        if bool(best["feasible"]) else None
    if deploy is not None:
        payload["deployment"] = deploy

    # a short name stands for one variant: say which, and which others it could have meant
    variants = {typed: (catalog.gpu(typed).name, also) for typed in gpus
                if (also := catalog.gpu_variants(typed))}
    if variants:
        payload["gpu_variants"] = {t: {"gpu": g, "also": list(v)} for t, (g, v) in
                                   variants.items()}
    # cheapest first; with --per-gpu the first row of each GPU type, every type shown
    shown = [r for i, r in enumerate(rows) if r["gpu"] not in {q["gpu"] for q in rows[:i]}] \
        if args.per_gpu else rows[:args.top]

    def text(out):
        out.write(f"{model.name}: peak {args.rate:g} requests/s, {slo.quantile:.0%} of "
                  f"requests within {targets_text(slo)}; {ds.attrs['model_quality']}\n")
        recv = ds.attrs["recv_interval"]
        taken = (f", new requests taken in every {recv} decode steps (--recv-interval)"
                 if recv > 1 else "")
        stream = ds.attrs["stream_interval"]
        taken += (f", tokens sent {stream} at a time, the ITL between sends "
                  f"(--stream-interval)" if stream > 1 else "")
        if not ds.attrs["mixed_prefill"]:
            given = "" if args.mixed_prefill == "auto" else " (--mixed-prefill off)"
            out.write(f"scheduling: {ds.attrs['scheduler']}, prefill steps apart from the "
                      f"decodes{given}{taken}\n")
        elif taken:
            out.write(f"scheduling: {ds.attrs['scheduler']}{taken}\n")
        if speculative is not None:
            out.write(f"speculative decoding: draft {ds.attrs['speculative_draft']}, "
                      f"{speculative.draft_tokens} tokens a step, acceptance "
                      f"{ds.attrs['speculative_acceptance']}\n")
        headers = ("GPU", "TP" + ("×PP" if "pp" in ds.dims else "")
                   + (", EP" if "ep" in ds.dims else ""), "max seqs", "chunk [tokens]",
                   "max rate [req/s]", "band [req/s]", "replicas",
                   "GPUs", "cost [USD/month]", "cost [USD/1M tokens, prompt + output]",
                   "operating rate [req/s]", "p95 TTFT at operating rate [s]",
                   "p95 ITL at operating rate [s]", "binding at max rate",
                   "rate margin to max rate")
        table = [(r["gpu"], _layout_text(r),
                  r["max_num_seqs"], r["max_num_batched_tokens"] or "whole",
                  to_jsonable(r["max_rate"]),
                  f"{r['max_rate_low']:.3g}-{r['max_rate_high']:.3g}", r["replicas"], r["gpus"],
                  to_jsonable(r["monthly_cost"]), to_jsonable(r["cost_per_million_tokens"]),
                  to_jsonable(r["operating_rate"]), to_jsonable(r["p95_ttft"]),
                  to_jsonable(r["p95_token_itl"]), r["binding"], _margin_text(r["rate_margin"]))
                 for r in shown]
        print_table(headers, table, out)
        if any(r["binding"] == "requests" for r in shown):
            out.write(f"note: binding 'requests': all {args.requests} requests of a replicate "
                      f"ran at once with KV cache and slots to spare, so that max rate is a "
                      f"floor; raise --requests to find it\n")
        # one note a GPU, however many of its rows the table shows
        for name in dict.fromkeys(r["gpu"] for r in shown
                                  if r["binding"] == "no_attention_kernel"):
            missing = missing_attention_kernel(memory_engine(planned), model,
                                               catalog.gpu(name))
            out.write(f"note: binding 'no_attention_kernel': {missing}\n")
        for typed, (name, also) in variants.items():
            out.write(f"note: {typed!r} is {name}; the catalogue also has {', '.join(also)} "
                      f"(name one to plan it)\n")
        share = ds.attrs["gpu_memory_utilization"]
        if isinstance(share, float):
            share = f"{share:g}"
        elif rows:              # the rule SGLang's share varies by: the cheapest one's
            first = rows[0]
            own = memory_share("sglang", first["gpu"], int(first["tp"]),
                               max_num_batched_tokens=first["max_num_batched_tokens"] or None)
            share += f"; {own:g} on {first['gpu']} at TP {first['tp']}"
        out.write(f"KV cache: {share} of the memory the driver reports, less the weights and "
                  f"{ds.attrs['memory_outside_kv']}\n")
        if "sliding_window_kv" in ds.attrs:
            out.write(f"sliding-window layers: {ds.attrs['sliding_window_kv']}\n")
        if bound is not None:
            out.write(f"ideal roofline bound for the cheapest configuration: "
                      f"{bound['gpus']} GPU(s) (max rate {bound['max_rate']:.3g} requests/s, "
                      f"USD {bound['monthly_cost']:,.0f}/month), against {rows[0]['gpus']} "
                      f"timed by the engine\n")
        out.write(f"\nthe month priced at {decision.attrs['month_priced_as']}: "
                  f"{decision.attrs['monthly_tokens']:,.0f} tokens (prompt + output; output "
                  f"share {decision.attrs['output_fraction']:.0%})\n")
        for option, note in price_notes.items():
            out.write(f"  {option} price: {note}\n")
        cached = float(decision.attrs["payg_cached_fraction"])
        if cached > 0:
            out.write(f"  pay-as-you-go bills {cached:.0%} of input tokens (the shared "
                      f"prefixes) at its cached-input price, every prefix a cache hit\n")
        if payg is None:
            out.write("  pay-as-you-go: no price given (--payg-price IN OUT or --payg NAME), "
                      "so no pay-as-you-go row\n")
        print_table(("option", "cost [USD/month]", "cost [USD/1M tokens, prompt + output]",
                     "self-hosting cheaper above [tokens/month]"),
                    [(o, to_jsonable(v["monthly_cost"]), to_jsonable(v["cost_per_million_tokens"]),
                      break_even_text(o, v, options)) for o, v in options.items()], out)
        choice = str(decision["choice"].values)
        share = options[choice]["choice_share"] if choice in options else math.nan
        out.write(f"cheapest: {choice}" + (f" (in {share:.0%} of the {ds.attrs['replicates']} "
                                           f"replicates' draws)" if share == share else "")
                  + "\n")
        if flips:
            out.write(f"where the choice flips (the fleet sized for the peak against "
                      f"{flips['against']}, each input alone, the others held):\n")
            for line in flips["lines"]:
                out.write(f"  {line}\n")
        if deploy is not None:
            # the engine planned for first, the others beside it
            order = [("vllm", "vLLM"), ("sglang", "SGLang"), ("trtllm", "TensorRT-LLM")]
            first = scheduler_engine(planned)   # a calibration: its serving engine
            order.sort(key=lambda pair: pair[0] != first)
            (head, _), others = order[0], order[1:]
            out.write(f"\ndeploy {deploy['replicas']} replica(s), each:\n  "
                      f"{deploy[head + '_serve']}\n")
            for name, label in others:
                out.write(f"  ({label}: {deploy[name + '_serve']})\n")
            out.write(f"check one replica at its planned rate:\n  {deploy['bench_serve']}\n")
            for note in deploy["notes"]:
                out.write(f"note: {note}\n")
    return emit(args, out, rows, text=text, payload=payload, dataset=ds)


def check_grid_size(args, traffic, gpus) -> None:
    """Refuse, before any work, a grid the planner would refuse as too large, in the command
    line's words (the planner's own message names its Python arguments)."""
    n = len(gpus) * len(args.tp) * len(args.max_num_seqs or [1]) * \
        len(args.max_num_batched_tokens or [1]) * len(args.pp or [1]) * len(args.ep or [1])
    try:
        planning.check_plan_size(traffic, n, replicates=args.replicates,
                                 requests=args.requests, work_limit=planning.PLAN_WORK_LIMIT)
    except ValueError as exc:
        what = str(exc).split(" (", 1)[0]          # "this plan would hold/simulate about ..."
        if "GiB" in what:                           # the draws: replicates × requests
            raise ValueError(
                f"{what}: --replicates {args.replicates} × --requests {args.requests}, above "
                f"the {planning.PLAN_MEMORY_LIMIT / 2**30:g} GiB the draws may hold; give fewer "
                f"--replicates or --requests") from None
        raise ValueError(
            f"{what}: {n} configuration(s) (--gpus × --tp × --max-num-seqs × "
            f"--max-num-batched-tokens × --pp × --ep values) × --replicates {args.replicates} × "
            f"--requests {args.requests}, more than one process plans in about a minute; give "
            f"fewer --replicates or --requests, or fewer values to those flags") from None


def break_even_text(option: str, row: dict, options: dict):
    """The break-even cell of an option: a volume, "never" where this fleet cannot reach it,
    "—" on the fleet's own row."""
    if option in (planning.SELF_HOSTED, planning.SELF_HOSTED_AUTOSCALED):
        return "—"
    volume = row["break_even_tokens"]
    fleet = options.get(planning.SELF_HOSTED, {}).get("capacity_tokens", math.inf)
    if not math.isfinite(volume):
        return "never"
    if volume == 0:
        return "0 (always: its smallest purchase costs more than the fleet)"
    if volume > fleet:
        return f"never (needs {volume:.3g}, above the fleet's capacity {fleet:.3g})"
    return f"{volume:.3g}"


def decision_flips(decision) -> dict:
    """Where the choice flips, one input at a time: the decision table's tie points against
    its ``flip_against`` option, each with its value now, and a line for each input in words.
    Empty when nothing can flip (no other admissible option, or no fleet)."""
    against = str(decision["flip_against"].values)
    if not against:
        return {}
    at = decision.sel(option=against)
    flips = {"against": against,
             "volume_tokens": float(at["break_even_tokens"]),
             "volume_tokens_now": float(decision.attrs["monthly_tokens"]),
             "gpu_hourly": float(at["tie_gpu_hourly"]),
             "gpu_hourly_now": float(decision["gpu_hourly"]),
             "engineering_monthly": float(at["tie_engineering_monthly"]),
             "engineering_monthly_now": float(decision.attrs.get("engineering_monthly", 0.0)),
             "payg_blended": float(at["tie_payg_blended"]),
             "payg_blended_now": float(at["cost_per_million_tokens"])}
    wins = "self-hosting is cheaper"
    lines = []
    volume, hourly = flips["volume_tokens"], flips["gpu_hourly"]
    engineering = flips["engineering_monthly"]
    if math.isfinite(volume):
        lines.append(f"monthly volume: {wins} above {volume:.3g} tokens/month "
                     f"(now {flips['volume_tokens_now']:.3g})")
    lines.append(f"GPU-hour price: {wins} below USD {hourly:.3g}/h "
                 f"(now {flips['gpu_hourly_now']:.3g})" if hourly > 0 else
                 "GPU-hour price: self-hosting is not cheaper even with free GPU-hours")
    lines.append(f"engineering line: {wins} below USD {engineering:,.0f}/month "
                 f"(now {flips['engineering_monthly_now']:,.0f})" if engineering > 0 else
                 "engineering line: self-hosting is not cheaper even with no engineering line")
    blended, now = flips["payg_blended"], flips["payg_blended_now"]
    if math.isfinite(blended):
        lines.append(f"pay-as-you-go price: pay-as-you-go is cheaper below a blended USD "
                     f"{blended:.3g} per 1M tokens (now {now:.3g}: x{blended / now:.3g} both "
                     f"list prices)")
    return {**flips, "lines": lines}


#: The flags of the traffic, the SLO and the search, shared with ``rooflinekit disaggregated``.
TRAFFIC_FLAGS = tuple(f for f in _FLAGS if f[0] in (
    "--rate", "--prompt-mean", "--output-mean", "--spread", "--lengths", "--burstiness",
    "--ttft", "--itl",
    "--tpot", "--e2e", "--quantile", "--headroom", "--replicates", "--requests", "--seed",
    "--engine", "--calibration"))


def targets_text(slo) -> str:
    """The SLO's targets in words, for a table's title."""
    names = {"ttft": "TTFT", "itl": "ITL", "e2e": "end-to-end", "tpot": "TPOT"}
    return ", ".join(f"{names[k]} {v:g} s" for k, v in slo.targets.items()) or "no target"
