"""``rooflinekit price``: pay-as-you-go vs provisioned vs self-hosted at one or more output mixes."""

from __future__ import annotations

from rooflinekit import pricing
from rooflinekit.cli._args import COMMAND_API, add_flag, positive_int
from rooflinekit.cli._output import print_json, print_table

__all__ = list(COMMAND_API)

NAME = "price"
HELP = "blended price, break-even and the cheapest option"
DESCRIPTION = "Pay-as-you-go vs provisioned vs self-hosted at one or more output mixes."
EPILOG = ("examples:\n  rooflinekit price --input 3 --output 12 --provisioned-monthly 12000 "
          "--provisioned-capacity 4e9 --output-fraction 0.1 0.5\n"
          "  rooflinekit price --input 3 --output 12 --gpus 8 --gpu-hourly 3 "
          "--engineering 25000 --self-hosted-capacity 2e10 --volume 1.5e10 --output-fraction 0.1")


def add_arguments(parser) -> None:
    parser.add_argument("--input", type=float, required=True, help="USD per 1M input tokens")
    parser.add_argument("--output", type=float, required=True, help="USD per 1M output tokens")
    parser.add_argument("--output-fraction", type=float, nargs="+", required=True,
                        help="share of tokens that are output, in [0, 1] (one or more)")
    parser.add_argument("--provisioned-monthly", type=float,
                        help="USD per month of the commitment")
    parser.add_argument("--provisioned-capacity", type=float, help="tokens per month it serves")
    parser.add_argument("--gpus", type=positive_int, help="self-hosted GPUs")
    parser.add_argument("--gpu-hourly", type=float, default=3.0, help="USD per GPU-hour (3)")
    parser.add_argument("--engineering", type=float, default=0.0,
                        help="USD per month of engineering")
    parser.add_argument("--self-hosted-capacity", type=float,
                        help="tokens per month self-hosting serves")
    parser.add_argument("--volume", type=float,
                        help="tokens per month: pick the cheapest option")
    add_flag(parser, "--json")


def run(args, out) -> int:
    payg = pricing.PayAsYouGo(args.input, args.output)
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
        print_json(result, out, indent=2, default=float)
        return 0
    columns = tuple(result[0])
    rows = [tuple(r.get(c, "-") for c in columns) for r in result]
    print_table(tuple(c.replace("_", " ") for c in columns), rows, out)
    return 0
