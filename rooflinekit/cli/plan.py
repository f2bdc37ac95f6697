"""``rooflinekit plan``: traffic and an SLO to a ranked table of fleets and the buying decision."""

from __future__ import annotations

import argparse
import math

import numpy as np

from rooflinekit import calibrate, catalog, planning, pricing, workloads
from rooflinekit.cli._args import add_flag, positive_int
from rooflinekit.cli._output import print_json, print_table

__all__ = ["DESCRIPTION", "EPILOG", "HELP", "NAME", "add_arguments", "run"]

NAME = "plan"
HELP = "traffic + latency SLO -> replicas, GPUs, $/month, and the buying decision"
DESCRIPTION = (
    "Find, for every GPU, TP degree and max-num-seqs, the highest request rate one replica serves "
    "within the SLO (Monte Carlo over seeds, vLLM-style continuous batching on the roofline "
    "clock), the replicas the peak rate needs with headroom, the fleet's monthly cost, and whether "
    "self-hosting beats pay-as-you-go or provisioned capacity at the traffic's volume. Without "
    "--calibration the numbers are the ideal roofline: a best case.")
EPILOG = ("examples:\n"
          "  rooflinekit plan llama-3.1-8b --gpus h100,l40s --tp 1,2 --rate 5 --prompt-mean 1000 "
          "--output-mean 200 --ttft 1 --itl 0.05 --replicates 4 --requests 200\n"
          "  rooflinekit plan llama-3.1-70b --gpus h100,h200 --tp 2,4,8 --rate 20 "
          "--prompt-mean 2000 --output-mean 300 --spread 0.5 --ttft 1 --itl 0.05 --json")


def _floats(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") \
            from None


def _ints(text: str) -> list[int]:
    values = [positive_int(x) for x in text.split(",") if x.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, got {text!r}")
    return values


def _names(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


#: The command's flags after the model: (flag, type, default, help); ``None`` type: a string.
#: ``...`` as the default marks a required flag.
_FLAGS = (
    ("--gpus", _names, ..., "comma-separated catalogue GPU names"),
    ("--max-num-seqs", _ints, [256], "comma-separated max sequences per batch (256)"),
    ("--max-num-batched-tokens", _ints, None,
     "comma-separated per-step token budgets (chunked prefill)"),
    ("--rate", float, ..., "peak request rate the fleet must sustain [requests/s]"),
    ("--prompt-mean", float, ..., "mean prompt tokens per request"),
    ("--output-mean", float, ..., "mean output tokens per request"),
    ("--spread", float, 0.0, "log-normal sigma of both lengths (0: every request alike)"),
    ("--burstiness", float, None, "gamma arrivals with this shape (1 = Poisson, < 1 bursty)"),
    ("--ttft", float, None, "time-to-first-token target [s]"),
    ("--itl", float, None, "inter-token latency target [s]"),
    ("--e2e", float, None, "end-to-end latency target [s]"),
    ("--quantile", float, 0.95, "percentile the targets hold at (0.95)"),
    ("--headroom", float, 0.2, "spare capacity (0.2)"),
    ("--gpu-memory-utilization", float, 0.9, "share of GPU memory for weights + KV (0.9)"),
    ("--block-size", positive_int, 16, "KV block size [tokens] (16)"),
    ("--replicates", positive_int, 20, "Monte Carlo replicates (20)"),
    ("--requests", positive_int, 1000, "requests per replicate (1000)"),
    ("--seed", int, 0, "random seed (0)"),
    ("--engineering-monthly", float, 0.0, "engineering line per deployment [USD/month] (0)"),
    ("--electricity-price", float, 0.0, "electricity for owned GPUs [USD/kWh] (0)"),
    ("--calibration", None, None, "calibration JSON from `rooflinekit calibrate`"),
    ("--payg", None, "guide-lab", "pay-as-you-go price row of the catalogue (guide-lab)"),
    ("--provisioned", None, None, "provisioned-capacity row of the catalogue"),
    ("--top", positive_int, 10, "configurations shown, cheapest first (10)"),
    ("--output", None, None, "write the plan Dataset to this netCDF file"),
)


def add_arguments(parser) -> None:
    add_flag(parser, "--model", positional=True,
             help="catalogue model name or a config.json path")
    parser.add_argument("--tp", "--tensor-parallel-size", dest="tp", type=_ints, default=[1],
                        help="comma-separated tensor-parallel degrees (1)")
    for flag, kind, default, text in _FLAGS:
        required = default is ...
        parser.add_argument(flag, type=kind, required=required,
                            default=None if required else default, help=text)
    add_flag(parser, "--json")
    parser.add_argument("--csv", action="store_true", help="emit CSV rows instead of a table")


def _lengths(mean, spread):
    if not (math.isfinite(mean) and mean > 0):
        raise ValueError(f"token means must be finite and > 0; got {mean!r}")
    if spread == 0:
        return workloads.Constant(int(round(mean)))
    return workloads.LogNormal(mean, spread)


def _rows(ds):
    """Configurations serving the traffic, cheapest first, as dicts."""
    flat = ds.drop_dims("replicate").to_dataframe().reset_index()
    flat = flat.sort_values(["monthly_cost", "gpus", "max_rate"], ascending=[True, True, False])
    rows = []
    for _, r in flat.iterrows():
        rows.append({"gpu": r["gpu"], "tp": int(r["tp"]), "max_num_seqs": int(r["max_num_seqs"]),
                     "max_rate": float(r["max_rate"]), "max_rate_low": float(r["max_rate_low"]),
                     "max_rate_high": float(r["max_rate_high"]), "replicas": int(r["replicas"]),
                     "gpus": int(r["gpus"]), "monthly_cost": float(r["monthly_cost"]),
                     "cost_per_million_tokens": float(r["cost_per_million_tokens"]),
                     "p95_ttft": float(r["p95_ttft"]), "p95_token_itl": float(r["p95_token_itl"]),
                     "binding": r["binding"]})
    return rows


def run(args, out) -> int:
    model = catalog.resolve_model(args.model)
    traffic = planning.Traffic(
        args.rate, _lengths(args.prompt_mean, args.spread),
        _lengths(args.output_mean, args.spread),
        arrival="poisson" if args.burstiness is None else "gamma", burstiness=args.burstiness)
    slo = planning.SLO(ttft=args.ttft, itl=args.itl, e2e=args.e2e, quantile=args.quantile)
    payg = pricing.payg_price(args.payg)
    provisioned = None if args.provisioned is None else \
        pricing.provisioned_example(args.provisioned)
    calibration = None if args.calibration is None else \
        calibrate.load_calibration(args.calibration)
    ds = planning.plan(traffic, slo, models=[model], gpus=args.gpus, tp=args.tp,
                       max_num_seqs=args.max_num_seqs,
                       max_num_batched_tokens=args.max_num_batched_tokens,
                       gpu_memory_utilization=args.gpu_memory_utilization,
                       block_size=args.block_size, headroom=args.headroom,
                       replicates=args.replicates, requests=args.requests, seed=args.seed,
                       calibration=calibration, engineering_monthly=args.engineering_monthly,
                       electricity_price=args.electricity_price)
    decision = planning.decision_table(planning.cheapest_plan(ds, by=None), traffic, payg=payg,
                                       provisioned=provisioned)
    if args.output:
        ds.to_netcdf(args.output)
    rows = _rows(ds)
    options = {str(o): {"monthly_cost": float(decision["monthly_cost"].sel(option=o)),
                        "cost_per_million_tokens":
                            float(decision["cost_per_million_tokens"].sel(option=o)),
                        "break_even_tokens": float(decision["break_even_tokens"].sel(option=o))}
               for o in decision["option"].values}
    if args.json:
        print_json(_finite({"model": model.name, "model_quality": ds.attrs["model_quality"],
                            "configurations": rows,
                            "decision": {"options": options,
                                         "choice": str(decision["choice"].values)},
                            "monthly_tokens": decision.attrs["monthly_tokens"]}),
                   out, indent=2, allow_nan=False)
        return 0
    columns = ("gpu", "tp", "max_num_seqs", "max_rate", "max_rate_low", "max_rate_high",
               "replicas", "gpus", "monthly_cost", "cost_per_million_tokens", "p95_ttft",
               "p95_token_itl", "binding")
    if args.csv:
        out.write(",".join(columns) + "\n")
        for r in rows:
            out.write(",".join(str(r[c]) for c in columns) + "\n")
        return 0
    out.write(f"{model.name}: peak {args.rate:g} requests/s, {slo.quantile:.0%} of requests "
              f"within {_targets(slo)}; {ds.attrs['model_quality']}\n")
    headers = ("GPU", "TP", "max seqs", "max rate [req/s]", "band [req/s]", "replicas", "GPUs",
               "$/month", "$/1M tokens", "p95 TTFT [s]", "p95 ITL [s]", "binding")
    table = [(r["gpu"], r["tp"], r["max_num_seqs"], round(r["max_rate"], 3),
              f"{r['max_rate_low']:.3g}-{r['max_rate_high']:.3g}", r["replicas"], r["gpus"],
              _money(r["monthly_cost"]), _money(r["cost_per_million_tokens"], 2),
              _seconds(r["p95_ttft"]), _seconds(r["p95_token_itl"]), r["binding"])
             for r in rows[:args.top]]
    print_table(headers, table, out)
    out.write(f"\nat {decision.attrs['monthly_tokens']:.3g} tokens/month "
              f"(output share {decision.attrs['output_fraction']:.0%}):\n")
    print_table(("option", "$/month", "$/1M tokens", "self-hosting breaks even at [tokens/month]"),
                [(o, _money(v["monthly_cost"]), _money(v["cost_per_million_tokens"], 2),
                  f"{v['break_even_tokens']:.3g}") for o, v in options.items()], out)
    out.write(f"cheapest: {decision['choice'].values}\n")
    return 0


def _targets(slo) -> str:
    names = {"ttft": "TTFT", "itl": "ITL", "e2e": "end-to-end"}
    return ", ".join(f"{names[k]} {v:g} s" for k, v in slo.targets.items()) or "no target"


def _money(value, digits=0):
    return "-" if not np.isfinite(value) else round(value, digits) if digits else round(value)


def _seconds(value):
    return "-" if not np.isfinite(value) else round(value, 4)


def _finite(value):
    """JSON has no infinity: a configuration that cannot serve has ``null`` there."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
