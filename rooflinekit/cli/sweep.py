"""``rooflinekit sweep``: axis parsing, arguments and the report of a sweep.

:mod:`rooflinekit.sweep` computes (and saves) what this module prints and writes.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys

import numpy as np

from rooflinekit import catalog, dims, memory
from rooflinekit.cli._args import COMMAND_API, add_flag
from rooflinekit.cli._output import print_json, print_table
from rooflinekit.sweep import (
    DISTRIBUTED_EXTRA,
    PARETO_POINT,
    best_configuration,
    cheapest_configuration,
    distributed_client,
    pareto_front,
    progress_bar,
    save,
    sweep,
    sweep_cells,
)

__all__ = list(COMMAND_API) + ["add_sweep_arguments", "parse_axis", "sweep_cli_main"]

NAME = "sweep"
HELP = "every derived quantity over a design space"
DESCRIPTION = ("Sweep models × GPUs × tp × context × batch; report the best, the cheapest "
               "under TTFT/ITL targets, or the cost-vs-ITL front; optionally write the "
               "whole grid to .nc/.zarr.")
EPILOG = """axis values: comma lists and inclusive ranges, e.g. 1,2,4,8 or 1024:32768:1024
examples:
  rooflinekit sweep --models guide-70b Llama-3.1-8B --gpus H100-SXM-80GB A100-SXM-80GB \\
      --tp 1,2,4,8 --context-length 1024:32768:1024 --batch-size 1,2,4,8,16,32,64,128
  rooflinekit sweep --models all --gpus all --report cheapest --max-ttft 0.5 --max-itl 0.05
  rooflinekit sweep --models all --gpus all --context-length 256:131072:256 \\
      --batch-size 1:1024 --chunks auto --report best --output sweep.nc
"""


def parse_axis(text):
    """Axis values from the command line: ``"1,2,4,8"``, ``"1024:32768:1024"`` (stop included).

    Returns
    -------
    ndarray of int64
        The values, in the order given.

    Raises
    ------
    ValueError
        For anything that is not whole numbers or ``start:stop[:step]`` ranges with step ≥ 1.
    """
    values = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            raise ValueError(f"empty entry in axis values {text!r}")
        try:
            if ":" in part:
                bits = [int(float(b)) for b in part.split(":")]
                if len(bits) not in (2, 3) or (len(bits) == 3 and bits[2] < 1):
                    raise ValueError
                start, stop = bits[0], bits[1]
                step = bits[2] if len(bits) == 3 else 1
                if stop < start:
                    raise ValueError
                values.extend(range(start, stop + 1, step))
            else:
                number = float(part)
                if not number.is_integer():
                    raise ValueError
                values.append(int(number))
        except ValueError:
            raise ValueError(f"axis values must be whole numbers or start:stop[:step] ranges "
                             f"(stop included), got {part!r}") from None
    return np.asarray(values, dtype=np.int64)


def add_arguments(parser):
    """Add the ``rooflinekit sweep`` options to an ``argparse`` (sub)parser; :func:`run` then
    takes the parsed arguments and an output stream."""
    parser.add_argument("--models", nargs="+", default=["guide-70b"], metavar="NAME",
                        help="catalogue models or paths to Hugging Face config.json files, or "
                             "'all' (default: guide-70b)")
    parser.add_argument("--gpus", nargs="+", default=["guide-lab-80GB"], metavar="NAME",
                        help="catalogue GPUs, or 'all' (default: guide-lab-80GB)")
    parser.add_argument("--tp", type=parse_axis, default=parse_axis("1,2,4,8"),
                        help="tensor-parallel degrees (default 1,2,4,8)")
    parser.add_argument("--context-length", type=parse_axis,
                        default=parse_axis("1024,2048,4096,8192,16384,32768"),
                        help="tokens per sequence (default 1024,...,32768)")
    parser.add_argument("--batch-size", type=parse_axis,
                        default=parse_axis("1,2,4,8,16,32,64,128"),
                        help="sequences per decode step (default 1,2,...,128)")
    parser.add_argument("--prompt-tokens", type=parse_axis, default=None,
                        help="prompt lengths for prefill/TTFT (default: the context length)")
    parser.add_argument("--reserve", type=float, default=memory.DEFAULT_RESERVE,
                        help="working-space share of memory after weights (default 0.10)")
    parser.add_argument("--replicate-kv", action="store_true",
                        help="count the KV copies engines keep when tp exceeds a model's KV "
                             "heads, or for MLA (default: each head stored once, the guide's "
                             "model)")
    parser.add_argument("--allreduce", action="store_true",
                        help="add tensor parallelism's all-reduce time (default: guide's model)")
    parser.add_argument("--chunks", default=None, metavar="CELLS|auto",
                        help="compute lazily with dask in blocks of this many cells "
                             "(needs rooflinekit[distributed])")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="run on this dask.distributed scheduler (implies --chunks auto)")
    parser.add_argument("--report", choices=("best", "cheapest", "pareto", "none"),
                        default="best",
                        help="best: most tokens/s per GPU per model; cheapest: lowest cost per "
                             "1M tokens meeting --max-ttft/--max-itl; pareto: cost vs ITL front")
    parser.add_argument("--max-ttft", type=float, default=None, metavar="SECONDS",
                        help="longest acceptable prefill time (TTFT) for --report cheapest")
    parser.add_argument("--max-itl", type=float, default=None, metavar="SECONDS",
                        help="longest acceptable decode step (ITL) for --report cheapest")
    parser.add_argument("--output", default=None, metavar="PATH",
                        help="write the whole sweep: .nc (netCDF) or .zarr")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bar on stderr (default: when stderr is a terminal)")
    add_flag(parser, "--json", help="emit the report as JSON")
    return parser


def _report_rows(result, by):
    """A reduction result as (columns, rows) of plain Python values."""
    columns = list(by) + [k for k in result.data_vars]
    flat = result.stack(_row=list(by)) if by else result.expand_dims("_row")
    rows = []
    for i in range(flat.sizes["_row"]):
        row = flat.isel(_row=i)
        rows.append([row[c].item() for c in columns])
    return columns, rows


def _format_cell(v):
    """A report cell: four significant figures, plain integers (no thousands separators)."""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.4g}"
    return str(v)


def run(args, out):
    """Run ``rooflinekit sweep`` from parsed arguments (see :func:`add_arguments`).

    Parameters
    ----------
    args : argparse.Namespace
        Parsed options.
    out : file
        Stream for the report. Progress goes to ``sys.stderr``.

    Returns
    -------
    int
        Exit status, 0 on success. Bad input raises ``ValueError``/``TypeError`` (the CLI prints
        them as one line and exits 2).
    """
    models = catalog.model_names() if args.models == ["all"] else [
        catalog.resolve_model(m) for m in args.models]
    gpus = catalog.gpu_names() if args.gpus == ["all"] else args.gpus
    chunks = args.chunks
    if chunks is not None and chunks != "auto":
        try:
            chunks = int(float(chunks))
        except ValueError:
            raise ValueError(f"--chunks must be a number of cells or 'auto', got {chunks!r}")
    if args.scheduler is not None and chunks is None:
        chunks = "auto"
    if args.output is not None and not str(args.output).endswith((".nc", ".zarr")):
        raise ValueError(f"--output must end in .nc (netCDF) or .zarr, got {args.output!r}")
    if args.report != "cheapest" and (args.max_ttft is not None or args.max_itl is not None):
        raise ValueError("--max-ttft/--max-itl apply to --report cheapest")
    progress = sys.stderr.isatty() if args.progress is None else bool(args.progress)
    ds = sweep(models, gpus, tp=args.tp, context_length=args.context_length,
               batch_size=args.batch_size, prompt_tokens=args.prompt_tokens,
               reserve=args.reserve, chunks=chunks, allreduce=args.allreduce,
               replicate_kv=args.replicate_kv)
    with contextlib.ExitStack() as stack:
        if args.scheduler is not None:
            try:
                from distributed import Client
            except ImportError as exc:
                raise ImportError(f"--scheduler needs dask.distributed; install it with "
                                  f"`pip install {DISTRIBUTED_EXTRA}`") from exc
            stack.enter_context(Client(args.scheduler))
        if args.output is not None:
            if chunks is not None:
                with progress_bar(progress and distributed_client() is None):
                    save(ds, args.output)
            else:
                save(ds, args.output)
        if args.report == "none":
            result, by = None, []
        elif args.report == "best":
            result, by = best_configuration(ds, progress=progress), [dims.MODEL]
        elif args.report == "cheapest":
            result = cheapest_configuration(ds, max_ttft=args.max_ttft, max_itl=args.max_itl,
                                            progress=progress)
            by = [dims.MODEL]
        else:
            result, by = pareto_front(ds, progress=progress), []
    if result is None:
        if args.json:
            print_json({"cells": sweep_cells(ds), "output": args.output}, out)
        else:
            out.write(f"swept {sweep_cells(ds):,} configurations"
                      + (f" -> {args.output}\n" if args.output else "\n"))
        return 0
    if by == [] and PARETO_POINT in result.dims:
        columns = list(result.data_vars)
        rows = [[result[c].values[i].item() for c in columns]
                for i in range(result.sizes[PARETO_POINT])]
    else:
        columns, rows = _report_rows(result, by)
    if args.json:
        print_json({"cells": sweep_cells(ds), "report": args.report,
                    "rows": [dict(zip(columns, r)) for r in rows]}, out, indent=2, default=float)
        return 0
    out.write(f"rooflinekit sweep: {sweep_cells(ds):,} configurations, report {args.report!r}"
              f" (times in s, throughput in tokens/s, cost in USD per 1M tokens)\n")
    print_table(columns, rows, out, fmt=_format_cell, align_numbers=False, strip=False)
    return 0


# the names these two had before every command took add_arguments and run
add_sweep_arguments = add_arguments
sweep_cli_main = run
