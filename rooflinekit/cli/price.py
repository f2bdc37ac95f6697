"""``rooflinekit price``: pay-as-you-go vs provisioned vs self-hosted at one or more output mixes."""

from __future__ import annotations

from rooflinekit import pricing
from rooflinekit.cli._args import (
    COMMAND_API,
    add_output_flags,
    fraction,
    nonnegative_float,
    number,
    positive_float,
    positive_int,
)
from rooflinekit.cli._output import emit, print_table

__all__ = list(COMMAND_API)

NAME = "price"
HELP = "blended price, break-even and the cheapest option"
DESCRIPTION = "Pay-as-you-go vs provisioned vs self-hosted at one or more output mixes."
EPILOG = ("examples:\n  rooflinekit price --input-price 3 --output-price 12 "
          "--provisioned-monthly 12000 --provisioned-capacity 4e9 --output-fraction 0.1 0.5\n"
          "  rooflinekit price --input-price 3 --output-price 12 --num-gpus 8 --gpu-hourly 3 "
          "--engineering-monthly 25000 --self-hosted-capacity 2e10 --monthly-tokens 1.5e10 "
          "--output-fraction 0.1\n"
          "  rooflinekit price --input-price 3 --output-price 12 --cached-input-price 0.3 "
          "--prefix-share 0.6 --provisioned-monthly 12000 --provisioned-capacity 4e9 "
          "--output-fraction 0.1\n"
          "  rooflinekit price --input-price 0.6 --output-price 2.4 --provisioned-monthly 12000 "
          "--provisioned-capacity 4e9 --output-fraction 0.1 0.5")

#: Each column: (key, heading with its unit).
_COLUMNS = {"output_fraction": "output share",
            "blended_per_mtok": "pay-as-you-go blended [USD/1M tokens, prompt + output]",
            "break_even_tokens": "provisioned breaks even at [tokens/month]",
            "break_even_utilization": "provisioned breaks even at utilization",
            "cheapest": "cheapest", "cheapest_monthly_usd": "cheapest [USD/month]",
            "reason": "reason"}


def add_arguments(parser) -> None:
    # finite here; the price types check the range and name the field
    parser.add_argument("--input-price", type=number(), required=True, metavar="USD",
                        help="pay-as-you-go USD per 1M input tokens")
    parser.add_argument("--output-price", type=number(), required=True, metavar="USD",
                        help="pay-as-you-go USD per 1M output tokens")
    parser.add_argument("--output-fraction", type=number(), nargs="+", required=True,
                        metavar="SHARE",
                        help="share of tokens that are output, in [0, 1] (one or more)")
    parser.add_argument("--cached-input-price", type=number(), metavar="USD",
                        help="pay-as-you-go USD per 1M input tokens read from the prompt cache "
                             "(with --prefix-share)")
    parser.add_argument("--prefix-share", type=fraction, default=None, metavar="SHARE",
                        help="share of input tokens that hit the prompt cache, in [0, 1]: billed "
                             "at --cached-input-price in the blended price and the break-even")
    parser.add_argument("--provisioned-monthly", type=nonnegative_float, metavar="USD",
                        help="USD per month of the commitment (with --provisioned-capacity)")
    parser.add_argument("--provisioned-capacity", type=positive_float, metavar="TOKENS",
                        help="tokens per month the commitment serves")
    parser.add_argument("--num-gpus", type=positive_int, help="self-hosted GPUs")
    parser.add_argument("--gpu-hourly", type=nonnegative_float, metavar="USD",
                        help="USD per GPU-hour, with --num-gpus (3)")
    parser.add_argument("--engineering-monthly", type=nonnegative_float, metavar="USD",
                        help="USD per month of engineering, with --num-gpus (0)")
    parser.add_argument("--self-hosted-capacity", type=positive_float, metavar="TOKENS",
                        help="tokens per month self-hosting serves, with --num-gpus")
    parser.add_argument("--monthly-tokens", type=nonnegative_float, metavar="TOKENS",
                        help="tokens per month: pick the cheapest option")
    add_output_flags(parser)


def _cell(row: dict, column: str):
    """A table cell: a break-even the commitment cannot reach says so instead of a number."""
    if column == "break_even_utilization" and "breaks_even" in row and not row["breaks_even"]:
        return f"never (would need {row[column]:.0%} of capacity)"
    if column == "break_even_tokens" and "breaks_even" in row and not row["breaks_even"]:
        return f"never ({row[column]:.3g} is above the capacity)"
    return row.get(column)


def _check(args) -> None:
    """Refuse flags that would be ignored, before any work."""
    if (args.cached_input_price is None) != (args.prefix_share is None):
        raise ValueError("--cached-input-price and --prefix-share go together")
    if args.prefix_share is not None and args.monthly_tokens is not None:
        raise ValueError("--prefix-share prices the blended rate and the break-even; the "
                         "cheapest option at --monthly-tokens does not take it")
    if (args.provisioned_monthly is None) != (args.provisioned_capacity is None):
        raise ValueError("--provisioned-monthly and --provisioned-capacity go together")
    if args.num_gpus is None:
        given = [f for f, v in (("--gpu-hourly", args.gpu_hourly),
                                ("--engineering-monthly", args.engineering_monthly),
                                ("--self-hosted-capacity", args.self_hosted_capacity))
                 if v is not None]
        if given:
            raise ValueError(f"{given[0]} describes self-hosting; give --num-gpus")


#: The flag of each pay-as-you-go field, to name it in a refusal.
_PAYG_FLAGS = {"cached_input_per_mtok": "--cached-input-price",
               "input_per_mtok": "--input-price", "output_per_mtok": "--output-price"}


def _payg(args):
    """The typed pay-as-you-go price; a refusal names the flag, not the field."""
    try:
        return pricing.PayAsYouGo(args.input_price, args.output_price,
                                  cached_input_per_mtok=args.cached_input_price)
    except ValueError as exc:
        text = str(exc)
        for field, flag in _PAYG_FLAGS.items():
            if text.startswith(field):
                raise ValueError(f"{flag} ({field}){text[len(field):]}") from None
        raise


def run(args, out) -> int:
    _check(args)
    payg = _payg(args)
    hits = 0.0 if args.prefix_share is None else args.prefix_share
    provisioned = None
    if args.provisioned_monthly is not None:
        provisioned = pricing.Provisioned(args.provisioned_monthly, args.provisioned_capacity,
                                          name="provisioned")
    hosted = None
    if args.num_gpus is not None:
        hosted = pricing.SelfHosted(
            args.num_gpus, 3.0 if args.gpu_hourly is None else args.gpu_hourly,
            args.engineering_monthly or 0.0, capacity_tokens=args.self_hosted_capacity)
    result = []
    for f in args.output_fraction:
        row = {"output_fraction": f, "blended_per_mtok": float(
            pricing.blended_price(payg, f, cached_fraction=hits))}
        if provisioned is not None:
            be = pricing.break_even(provisioned, payg, f, prefix_share=hits)
            row["break_even_tokens"] = float(be.tokens)
            row["break_even_utilization"] = float(be.utilization)
            # above 1 the commitment would have to serve more than its capacity: it never pays
            row["breaks_even"] = bool(float(be.utilization) <= 1.0)
        if args.monthly_tokens is not None:
            options = [payg] + [o for o in (provisioned, hosted) if o is not None]
            choice = pricing.cheapest_option(args.monthly_tokens, options, f)
            row["cheapest"] = choice.option.name if choice.option is not None else None
            row["cheapest_monthly_usd"] = None if choice.cost is None else float(choice.cost)
            if choice.option is None:
                row["reason"] = choice.reason
        result.append(row)

    def text(out):
        columns = [c for c in _COLUMNS if any(c in r for r in result)]
        print_table([_COLUMNS[c] for c in columns],
                    [[_cell(r, c) for c in columns] for r in result], out)
    return emit(args, out, result, text=text)
