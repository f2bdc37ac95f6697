"""``rooflinekit plan``: traffic and an SLO to a ranked table of fleets and the buying decision."""

from __future__ import annotations

import math

from rooflinekit import batching, catalog, planning, pricing, roofline, workloads
from rooflinekit.cli._args import (
    PREFIX_FLAGS,
    SPECULATIVE_FLAGS,
    add_flag,
    add_output_flags,
    latency,
    apply_dtypes,
    engine_from_args,
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
    "--engine the numbers are the ideal roofline: a best case.")
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
          "  rooflinekit plan llama-3.1-405b --gpus h100 --tp 8 --pp 1,2 --rate 1 "
          "--prompt-mean 500 --output-mean 50 --ttft 5 --replicates 2 --requests 60")


#: The command's flags after the model and the shared ones: (flag, type, default, help).
#: ``...`` as the default marks a required flag.
_FLAGS = (
    ("--rate", positive_float, ..., "peak request rate the fleet must sustain [requests/s]"),
    ("--prompt-mean", positive_float, ..., "mean prompt tokens per request"),
    ("--output-mean", positive_float, ..., "mean output tokens per request"),
    ("--spread", nonnegative_float, 0.0,
     "log-normal sigma of both lengths (0: every request alike)"),
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
    ("--payg", None, "guide-lab", "pay-as-you-go price row of the catalogue (guide-lab)"),
    ("--provisioned", None, None, "provisioned-capacity row of the catalogue"),
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
    add_flag(parser, "--gpu-memory-utilization", default=0.9,
             help="share of each GPU's memory for weights + KV, in (0, 1] (0.9)")
    add_flag(parser, "--block-size")
    add_flag(parser, "--dtype")
    add_flag(parser, "--kv-cache-dtype")


def add_table_flags(parser, flags) -> None:
    """Flags from a table of ``(flag, type, default, help)``; ``...`` marks a required one."""
    for flag, kind, default, text in flags:
        required = default is ...
        parser.add_argument(flag, type=kind, required=required,
                            default=None if required else default, help=text)


def add_arguments(parser) -> None:
    add_flag(parser, "--model", positional=True)
    parser.add_argument("--gpus", nargs="+", type=name_list, required=True, metavar="NAME",
                        help="catalogue GPU names (h100 l40s or h100,l40s)")
    add_flag(parser, "--tensor-parallel-size", type=int_list, default=[1],
             help="comma-separated tensor-parallel degrees (1)")
    add_flag(parser, "--pipeline-parallel-size", type=int_list, default=None,
             help="comma-separated pipeline-parallel degrees, a replica being tp × pp GPUs "
                  "(default: one stage)")
    add_replica_flags(parser, lists=True)
    add_table_flags(parser, _FLAGS)
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
        rows.append({"gpu": r["gpu"], "tp": int(r["tp"]), **({"pp": int(r["pp"])} if "pp" in r
                                                            else {}),
                     "max_num_seqs": int(r["max_num_seqs"]),
                     "max_num_batched_tokens": int(r["max_num_batched_tokens"]),
                     "max_rate": float(r["max_rate"]), "max_rate_low": float(r["max_rate_low"]),
                     "max_rate_high": float(r["max_rate_high"]), "replicas": int(r["replicas"]),
                     "gpus": int(r["gpus"]), "monthly_cost": float(r["monthly_cost"]),
                     "cost_per_million_tokens": float(r["cost_per_million_tokens"]),
                     "p95_ttft": float(r["p95_ttft"]), "p95_token_itl": float(r["p95_token_itl"]),
                     "binding": r["binding"]})
    return rows


def _ideal_bound(rows, traffic, slo, model, *, pp, search) -> dict | None:
    """The cheapest configuration planned again on the ideal roofline: the bound beside the
    engine's answer (one configuration, so about one more search); ``None`` when nothing
    serves the traffic."""
    if not rows or rows[0]["gpus"] <= 0:
        return None
    best = rows[0]
    ideal = planning.plan(traffic, slo, models=[model], gpus=[best["gpu"]], tp=best["tp"],
                          pp=None if pp is None else [best.get("pp", 1)],
                          max_num_seqs=best["max_num_seqs"], engine="ideal",
                          **{**search, "max_num_batched_tokens":
                             best["max_num_batched_tokens"] or None})
    row = _rows(ideal)[0]
    return {"gpu": row["gpu"], "tp": row["tp"], "max_num_seqs": row["max_num_seqs"],
            "max_rate": row["max_rate"], "replicas": row["replicas"], "gpus": row["gpus"],
            "monthly_cost": row["monthly_cost"], "model_quality": ideal.attrs["model_quality"]}


def traffic_and_slo(args):
    """The ``Traffic`` and ``SLO`` of the traffic and target flags (:data:`TRAFFIC_FLAGS`)."""
    for flag, mean in (("--prompt-mean", args.prompt_mean), ("--output-mean", args.output_mean)):
        if args.spread == 0 and mean != round(mean):   # every request alike: whole tokens
            raise ValueError(f"{flag} must be a whole number of tokens with --spread 0, "
                             f"got {mean:g}")
    prefix = shared_prefix(args) if hasattr(args, "prefix_tokens") else None
    traffic = planning.Traffic(
        args.rate, _lengths(args.prompt_mean, args.spread),
        _lengths(args.output_mean, args.spread),
        arrival="poisson" if args.burstiness is None else "gamma", burstiness=args.burstiness,
        prefix=prefix)
    return traffic, planning.SLO(ttft=args.ttft, itl=args.itl, e2e=args.e2e, tpot=args.tpot,
                                 quantile=args.quantile)


def run(args, out) -> int:
    traffic, slo = traffic_and_slo(args)
    if args.enable_prefix_caching and traffic.prefix is None:
        raise ValueError("--enable-prefix-caching caches shared prefixes: give --prefix-tokens")
    model = apply_dtypes(catalog.resolve_model(args.model), args)
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
    payg = pricing.payg_price(args.payg)
    provisioned = None if args.provisioned is None else \
        pricing.provisioned_example(args.provisioned)
    search = dict(max_num_batched_tokens=args.max_num_batched_tokens or "search",
                  gpu_memory_utilization=args.gpu_memory_utilization,
                  block_size=args.block_size, headroom=args.headroom,
                  replicates=args.replicates, requests=args.requests, seed=args.seed,
                  engineering_monthly=args.engineering_monthly,
                  electricity_price=args.electricity_price,
                  prefix_caching=args.enable_prefix_caching, speculative=speculative)
    engine = engine_from_args(args, gpus)
    ds = planning.plan(traffic, slo, models=[model], gpus=gpus, tp=args.tp, pp=args.pp,
                       max_num_seqs=args.max_num_seqs or "auto", engine=engine, **search)
    best = planning.cheapest_plan(ds, by=None)
    decision = planning.decision_table(best, traffic, payg=payg, provisioned=provisioned)
    rows = _rows(ds)
    bound = None if engine is roofline.IDEAL else _ideal_bound(
        rows, traffic, slo, model, pp=args.pp, search=search)
    options = {str(o): {"monthly_cost": float(decision["monthly_cost"].sel(option=o)),
                        "cost_per_million_tokens":
                            float(decision["cost_per_million_tokens"].sel(option=o)),
                        "break_even_tokens": float(decision["break_even_tokens"].sel(option=o)),
                        "break_even_tokens_low":
                            float(decision["break_even_tokens_low"].sel(option=o)),
                        "break_even_tokens_high":
                            float(decision["break_even_tokens_high"].sel(option=o)),
                        "choice_share": float(decision["choice_share"].sel(option=o))}
               for o in decision["option"].values}
    payload = {"model": model.name, "model_quality": ds.attrs["model_quality"],
               "configurations": rows,
               "decision": {"options": options, "choice": str(decision["choice"].values)},
               "monthly_tokens": decision.attrs["monthly_tokens"]}
    if bound is not None:
        payload["ideal_bound"] = bound
    deploy = planning.launch_commands(best, traffic, model=model) if bool(best["feasible"]) \
        else None
    if deploy is not None:
        payload["deployment"] = deploy

    def text(out):
        out.write(f"{model.name}: peak {args.rate:g} requests/s, {slo.quantile:.0%} of "
                  f"requests within {targets_text(slo)}; {ds.attrs['model_quality']}\n")
        if speculative is not None:
            out.write(f"speculative decoding: draft {ds.attrs['speculative_draft']}, "
                      f"{speculative.draft_tokens} tokens a step, acceptance "
                      f"{ds.attrs['speculative_acceptance']}\n")
        headers = ("GPU", "TP" if "pp" not in ds.dims else "TP×PP", "max seqs", "chunk [tokens]",
                   "max rate [req/s]", "band [req/s]", "replicas",
                   "GPUs", "cost [USD/month]", "cost [USD/1M tokens]", "p95 TTFT [s]",
                   "p95 ITL [s]", "binding")
        table = [(r["gpu"], r["tp"] if "pp" not in r else f"{r['tp']}×{r['pp']}",
                  r["max_num_seqs"], r["max_num_batched_tokens"] or "whole",
                  to_jsonable(r["max_rate"]),
                  f"{r['max_rate_low']:.3g}-{r['max_rate_high']:.3g}", r["replicas"], r["gpus"],
                  to_jsonable(r["monthly_cost"]), to_jsonable(r["cost_per_million_tokens"]),
                  to_jsonable(r["p95_ttft"]), to_jsonable(r["p95_token_itl"]), r["binding"])
                 for r in rows[:args.top]]
        print_table(headers, table, out)
        if bound is not None:
            out.write(f"ideal roofline bound for the cheapest configuration: "
                      f"{bound['gpus']} GPU(s) (max rate {bound['max_rate']:.3g} requests/s, "
                      f"USD {bound['monthly_cost']:,.0f}/month), against {rows[0]['gpus']} "
                      f"timed by the engine\n")
        out.write(f"\nat {decision.attrs['monthly_tokens']:,.0f} tokens/month "
                  f"(output share {decision.attrs['output_fraction']:.0%}):\n")
        print_table(("option", "cost [USD/month]", "cost [USD/1M tokens]",
                     "self-hosting breaks even at [tokens/month]"),
                    [(o, to_jsonable(v["monthly_cost"]), to_jsonable(v["cost_per_million_tokens"]),
                      to_jsonable(v["break_even_tokens"])) for o, v in options.items()], out)
        choice = str(decision["choice"].values)
        share = options[choice]["choice_share"] if choice in options else math.nan
        out.write(f"cheapest: {choice}" + (f" (in {share:.0%} of the {ds.attrs['replicates']} "
                                           f"replicates' draws)" if share == share else "")
                  + "\n")
        if deploy is not None:
            out.write(f"\ndeploy {deploy['replicas']} replica(s), each:\n  "
                      f"{deploy['vllm_serve']}\n  (SGLang: {deploy['sglang_serve']})\n"
                      f"check one replica at its planned rate:\n  {deploy['bench_serve']}\n")
            for note in deploy["notes"]:
                out.write(f"note: {note}\n")
    return emit(args, out, rows, text=text, payload=payload, dataset=ds)


#: The flags of the traffic, the SLO and the search, shared with ``rooflinekit disaggregated``.
TRAFFIC_FLAGS = tuple(f for f in _FLAGS if f[0] in (
    "--rate", "--prompt-mean", "--output-mean", "--spread", "--burstiness", "--ttft", "--itl",
    "--tpot", "--e2e", "--quantile", "--headroom", "--replicates", "--requests", "--seed",
    "--engine"))


def targets_text(slo) -> str:
    """The SLO's targets in words, for a table's title."""
    names = {"ttft": "TTFT", "itl": "ITL", "e2e": "end-to-end", "tpot": "TPOT"}
    return ", ".join(f"{names[k]} {v:g} s" for k, v in slo.targets.items()) or "no target"
