"""``rooflinekit sweep``: axis parsing, arguments and the report of a sweep.

:mod:`rooflinekit.sweep` computes (and saves) what this module prints and writes.
"""

from __future__ import annotations

import argparse
import contextlib
import sys

import numpy as np

from rooflinekit import catalog, dims
from rooflinekit.profiles import is_engine_name, profiled_engine
from rooflinekit.cli._args import (
    COMMAND_API,
    MAX_INT,
    add_flag,
    add_output_flags,
    apply_dtypes,
    engine_from_args,
    latency,
    positive_int,
    speculative_draft,
)
from rooflinekit.cli._output import (
    check_output,
    emit,
    escape_text,
    guide_kv_rule,
    output_format,
    print_json,
    print_table,
    write_csv,
    write_output,
)
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

__all__ = list(COMMAND_API) + ["parse_axis"]

NAME = "sweep"
HELP = "every derived quantity over a design space"
DESCRIPTION = ("Sweep models × GPUs × tp × context × batch; report the best, the cheapest "
               "under TTFT/ITL targets, or the cost-vs-ITL front; optionally write the "
               "whole grid to .nc/.zarr.")
EPILOG = """axis values: comma lists and inclusive ranges, e.g. 1,2,4,8 or 1024:32768:1024
examples:
  rooflinekit sweep --models guide-70b Llama-3.1-8B --gpus H100-SXM-80GB A100-SXM-80GB \\
      --tp 1,2,4,8 --max-model-len 1024:32768:1024 --batch-size 1,2,4,8,16,32,64,128
  rooflinekit sweep --models all --gpus all --report cheapest --ttft 0.5 --itl 0.05
  rooflinekit sweep --models guide-70b --gpus h100 --report pareto --csv
  rooflinekit sweep --models Llama-3.1-8B --gpus h100 --calibration h100_vllm.json
  rooflinekit sweep --models gpt-oss-120b --gpus h100,h200 --gpu-memory-utilization 0.95
  rooflinekit sweep --models guide-70b --gpus guide-lab-80GB --workspace-fraction 0.1
  rooflinekit sweep --models llama-3.1-70b --gpus h100 --tp 4 --batch-size 1,8,64 \\
      --speculative-draft llama-3.1-8b --num-speculative-tokens 0:6 --acceptance 0.6,0.8 \\
      --prefix-share 0,0.5,0.9 --report none --json
  rooflinekit sweep --models guide-70b Llama-3.1-8B --gpus h100 a100 \\
      --max-model-len 1024:32768:1024 --batch-size 1:64 --chunks auto --output sweep.nc
"""

#: Most values one axis may hold, all its ranges together (a typo like 1:10000000000 is refused,
#: not built; so are thirty ranges of ten million each): counted before any value is built.
MAX_AXIS = 10_000_000

#: Table headings of the coordinates a flag of another name sets (the records keep the
#: Dataset's dimension names).
_HEADINGS = {"context_length": "max_model_len", "prompt_tokens": "input_len"}


def parse_axis(text):
    """Axis values from the command line, in the order given, as an int64 array: ``"1,2,4,8"``,
    ``"1024:32768:1024"`` (stop included); ``ValueError`` for anything that is not whole
    numbers or ``start:stop[:step]`` ranges with step ≥ 1."""
    # every part is read and counted first, then expanded: the count is checked before any
    # value is built (thirty ranges of ten million were a MemoryError while parsing)
    parts, count = [], 0
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
                if stop < start or max(abs(start), abs(stop)) > MAX_INT:
                    raise ValueError
                parts.append((start, stop, step))
                count += (stop - start) // step + 1
            else:
                number = float(part)
                if not number.is_integer() or abs(number) > MAX_INT:
                    raise ValueError
                parts.append((int(number), int(number), 1))
                count += 1
        except (ValueError, OverflowError):
            raise ValueError(f"axis values must be whole numbers of at most {MAX_INT} or "
                             f"start:stop[:step] ranges (stop included), got {part!r}") from None
        if count > MAX_AXIS:
            raise ValueError(f"axis range {part!r} brings these axis values to more than "
                             f"{MAX_AXIS:,} values (counted before any is built); give fewer "
                             f"values or a larger step")
    values = np.empty(count, dtype=np.int64)
    at = 0
    for start, stop, step in parts:
        n = (stop - start) // step + 1
        values[at:at + n] = np.arange(start, start + n * step, step, dtype=np.int64)
        at += n
    return values


def _bounded_axis(lo, hi, what):
    """An ``argparse`` type: axis values (:func:`parse_axis`) that are whole numbers in
    ``[lo, hi]``."""
    def parse(text):
        try:
            values = parse_axis(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        if values.size == 0 or values.min() < lo or values.max() > hi:
            raise argparse.ArgumentTypeError(f"{what} must be whole numbers in [{lo}, {hi}], "
                                             f"got {text!r}")
        return values
    return parse


_axis = _bounded_axis(1, MAX_INT, "axis values")

#: Most tokens drafted per step a sweep takes (capacity's --num-speculative-tokens bound).
_MAX_DRAFT = 64

#: ``--num-speculative-tokens``: drafted tokens per step, as an axis.
_draft_axis = _bounded_axis(0, _MAX_DRAFT, "drafted tokens")


def _shares(text):
    """``--acceptance``, ``--prefix-share``: comma lists of numbers in [0, 1], as an axis."""
    values = []
    for part in str(text).split(","):
        try:
            value = float(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated numbers in [0, 1], "
                                             f"got {text!r}") from None
        if not 0.0 <= value <= 1.0:       # NaN fails here too
            raise argparse.ArgumentTypeError(f"each value must lie in [0, 1], got {part!r}")
        values.append(value)
    return np.asarray(values, dtype=np.float64)


def _chunks(text):
    """``--chunks``: ``None``, ``"auto"`` or a whole number of cells in [1, 2**53]."""
    if text is None or text == "auto":
        return text
    try:
        return positive_int(text)
    except argparse.ArgumentTypeError:
        raise ValueError(f"--chunks must be a number of cells in [1, {MAX_INT}] or 'auto', "
                         f"got {text!r}") from None


def _names(values):
    """``--models a b`` and ``--models a,b`` alike."""
    return [n.strip() for v in values for n in str(v).split(",") if n.strip()]


def add_arguments(parser):
    """Add the ``rooflinekit sweep`` options to an ``argparse`` (sub)parser; :func:`run` then
    takes the parsed arguments and an output stream."""
    parser.add_argument("--models", nargs="+", default=["guide-70b"], metavar="NAME",
                        help="models, each a catalogue name, a Hugging Face config.json, a "
                             "model folder or a cached repo id; or 'all' (the catalogue; "
                             "default: guide-70b)")
    parser.add_argument("--gpus", nargs="+", default=["guide-lab-80GB"], metavar="NAME",
                        help="catalogue GPUs, or 'all' (default: guide-lab-80GB)")
    add_flag(parser, "--tensor-parallel-size", type=_axis, default=parse_axis("1,2,4,8"),
             help="tensor-parallel degrees (1,2,4,8)")
    add_flag(parser, "--max-model-len", type=_axis,
             default=parse_axis("1024,2048,4096,8192,16384,32768"),
             help="tokens per sequence (1024,...,32768)")
    parser.add_argument("--batch-size", type=_axis, default=parse_axis("1,2,4,8,16,32,64,128"),
                        metavar="SEQUENCES", help="sequences per decode step (1,2,...,128)")
    parser.add_argument("--input-len", type=_axis, default=None, metavar="TOKENS",
                        help="prompt lengths for prefill/TTFT (default: --max-model-len)")
    add_flag(parser, "--workspace-fraction",
             help="size the KV cache by the guide's rule instead: this share of the memory "
                  "left after the weights kept for activations and the allocator, in [0, 1)")
    add_flag(parser, "--gpu-memory-utilization",
             help="the engine's share of the memory the driver reports on each GPU for weights "
                  "+ KV, in (0, 1]; what it keeps beside the weights comes off it (default: "
                  "the engine's own, 0.9 for vLLM; not with --workspace-fraction)")
    add_flag(parser, "--dtype")
    add_flag(parser, "--kv-cache-dtype")
    add_flag(parser, "--mamba-ssm-cache-dtype")
    parser.add_argument("--replicate-kv", action="store_true",
                        help="count the KV copies engines keep when tp exceeds a model's KV "
                             "heads, or for MLA (default: each head stored once, the guide's "
                             "model)")
    add_flag(parser, "--allreduce")
    parser.add_argument("--speculative-draft", metavar="MODEL|SHARE",
                        help="speculative decoding: a draft model (catalogue name; its weights "
                             "come off the KV budget) or a draft head's cost as a share of the "
                             "target's decode step, in (0, 1]")
    parser.add_argument("--num-speculative-tokens", "--draft-tokens", type=_draft_axis,
                        default=None, metavar="K",
                        help="tokens drafted per step, an axis (vLLM's name; with "
                             "--speculative-draft and --acceptance)")
    parser.add_argument("--acceptance", type=_shares, default=None, metavar="ALPHA",
                        help="probabilities the target accepts a drafted token, in [0, 1], "
                             "an axis (e.g. 0.6,0.8)")
    parser.add_argument("--prefix-share", type=_shares, default=None, metavar="SHARE",
                        help="shares of each prompt that are one shared, cached prefix, in "
                             "[0, 1], an axis: held once in the KV cache, read not computed "
                             "by prefill")
    add_flag(parser, "--engine")
    add_flag(parser, "--calibration")
    parser.add_argument("--chunks", default=None, metavar="CELLS|auto",
                        help="compute lazily with dask in blocks of this many cells "
                             "(needs rooflinekit[distributed])")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="run on this dask.distributed scheduler (implies --chunks auto)")
    parser.add_argument("--report", choices=("best", "cheapest", "pareto", "none"),
                        default="best",
                        help="best: most tokens/s per GPU per model; cheapest: lowest cost per "
                             "1M tokens meeting --ttft/--itl; pareto: cost vs ITL front")
    parser.add_argument("--ttft", type=latency, default=None, metavar="SECONDS",
                        help="longest acceptable prefill time (TTFT) for --report cheapest")
    parser.add_argument("--itl", type=latency, default=None, metavar="SECONDS",
                        help="longest acceptable decode step (ITL) for --report cheapest")
    add_output_flags(parser, output_help=(
        "also write to FILE, the format from its extension: .nc or .zarr (the whole sweep), "
        ".csv or .parquet (the report table), .json (as --json)"))
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bar on stderr (default: when stderr is a terminal)")
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


#: Units a table heading states more precisely than the variable's attrs.
_HEADING_UNITS = {"cost_per_million_tokens": "USD/1M generated tokens"}


def _heading(result, name):
    units = result[name].attrs.get("units") if name in result.variables else None
    units = _HEADING_UNITS.get(name, units)
    name = _HEADINGS.get(name, name)
    return f"{name} [{units}]" if units and units != "1" else name


def _no_cell_reason(args):
    """Why a model has no row in a ``best`` or ``cheapest`` report: its ``reason`` field."""
    if args.report == "best":
        return "no configuration fits"
    targets = " ".join(f"{flag} {value:g}" for flag, value in
                       (("--ttft", args.ttft), ("--itl", args.itl)) if value is not None)
    return ("no configuration fits, has a known GPU price"
            + (f" and meets the targets ({targets})" if targets else ""))


def _report_records(columns, rows, by, reason):
    """Report rows as records, ``None`` beside a ``reason`` where nothing qualifies."""
    records = []
    for row in rows:
        record = dict(zip(columns, row))
        if "found" in record:
            found = bool(record["found"])
            if not found:
                record.update({c: None for c in columns if c not in by and c != "found"})
            record["reason"] = None if found else reason
        records.append(record)
    return records


def _check(args):
    """Refuse what would be ignored or cannot be written, before any work."""
    check_output(args)
    if args.report != "cheapest" and (args.ttft is not None or args.itl is not None):
        raise ValueError("--ttft/--itl apply to --report cheapest")
    if args.output is not None and args.report == "none" and \
            output_format(args.output) not in (".nc", ".zarr"):
        raise ValueError("--output with --report none writes the whole sweep: give a .nc or "
                         ".zarr path (.csv, .parquet and .json hold the report table)")


def _engine(args):
    """``--engine``: a profile name (or none) goes to the sweep as a name, so that each GPU is
    timed by its own profile; a file, or ``--allreduce``, gives one engine for every GPU."""
    name = getattr(args, "engine", None)
    allreduce = getattr(args, "allreduce", None)
    if allreduce is None and (name is None or is_engine_name(name)):
        return name
    if allreduce is not None and (name is None or profiled_engine(name)):
        raise ValueError("--allreduce changes one engine for every GPU; with an engine "
                         "profile (each GPU its own) give --engine ideal or --engine FILE")
    return engine_from_args(args)


def run(args, out):
    """Run ``rooflinekit sweep`` with parsed ``args``; print to ``out`` (progress to stderr).
    Returns 0; bad input raises ``ValueError``/``TypeError``."""
    _check(args)
    draft = speculative_draft(args)
    names, gpus = _names(args.models), _names(args.gpus)
    models = catalog.model_names() if names == ["all"] else names
    models = [apply_dtypes(catalog.resolve_model(m), args) for m in models]
    gpus = catalog.gpu_names() if gpus == ["all"] else gpus
    chunks = _chunks(args.chunks)
    if args.scheduler is not None and chunks is None:
        chunks = "auto"
    # the engine's memory rule unless the guide's is asked for (--workspace-fraction)
    reserve = args.workspace_fraction
    progress = sys.stderr.isatty() if args.progress is None else bool(args.progress)
    ds = sweep(models, gpus, tp=args.tp, context_length=args.max_model_len,
               batch_size=args.batch_size, prompt_tokens=args.input_len, reserve=reserve,
               gpu_memory_utilization=args.gpu_memory_utilization,
               chunks=chunks, replicate_kv=args.replicate_kv,
               draft_tokens=args.num_speculative_tokens, acceptance=args.acceptance,
               draft=draft,
               prefix_share=args.prefix_share, engine=_engine(args))
    quality = ds.attrs["model_quality"]
    with contextlib.ExitStack() as stack:
        if args.scheduler is not None:
            try:
                from distributed import Client
            except ImportError as exc:
                raise ImportError(f"--scheduler needs dask.distributed; install it with "
                                  f"`pip install {DISTRIBUTED_EXTRA}`") from exc
            stack.enter_context(Client(args.scheduler))
        grid_file = args.output is not None and output_format(args.output) in (".nc", ".zarr")
        force = bool(getattr(args, "force", False))
        if grid_file:
            if chunks is not None:
                with progress_bar(progress and distributed_client() is None):
                    save(ds, args.output, overwrite=force)
            else:
                save(ds, args.output, overwrite=force)
        if args.report == "none":
            result, by = None, []
        elif args.report == "best":
            result, by = best_configuration(ds, progress=progress), [dims.MODEL]
        elif args.report == "cheapest":
            result = cheapest_configuration(ds, max_ttft=args.ttft, max_itl=args.itl,
                                            progress=progress)
            by = [dims.MODEL]
        else:
            result, by = pareto_front(ds, progress=progress), []
    cells = sweep_cells(ds)
    bound = _ideal_bound(args, result, by, models, gpus, reserve, draft)
    if result is None:
        if args.json:
            print_json({"cells": cells, "output": args.output, "model_quality": quality}, out)
        elif args.csv:
            write_csv([{"cells": cells, "output": args.output}], out)
        else:
            out.write(f"swept {cells:,} configurations"
                      + (f" -> {escape_text(args.output)}\n" if args.output else "\n"))
            out.write(f"timing: {escape_text(quality)}\n")
        return 0
    if by == [] and PARETO_POINT in result.dims:
        columns = list(result.data_vars)
        rows = [[result[c].values[i].item() for c in columns]
                for i in range(result.sizes[PARETO_POINT])]
    else:
        columns, rows = _report_rows(result, by)
    records = _report_records(columns, rows, by, _no_cell_reason(args))
    if any(r.get("reason") for r in records):   # the table shows why a model has no row
        columns = columns + ["reason"]
    rows = [[r.get(c) for c in columns] for r in records]

    def write(path):
        if not grid_file:   # the grid was written above, inside the scheduler's context
            write_output(path, records, {"cells": cells, "report": args.report,
                                         "model_quality": quality, "rows": records},
                         force=force)

    def text(out):
        out.write(f"rooflinekit sweep: {cells:,} configurations, report {args.report!r}\n")
        print_table([_heading(result, c) for c in columns], rows, out)
        rule = ds.attrs["kv_cache_rule"] if reserve is None else guide_kv_rule(reserve)
        out.write(f"KV cache: {escape_text(rule)}\n")
        out.write(f"timing: {escape_text(quality)}\n")
        for model, (name, value) in (bound or {}).items():
            out.write(f"ideal roofline bound ({escape_text(model)}): {name} {value:,.6g}\n")
    payload = {"cells": cells, "report": args.report, "model_quality": quality, "rows": records}
    if bound:
        payload["ideal_bound"] = {m: {name: value} for m, (name, value) in bound.items()}
    return emit(args, out, records, text=text, write=write, payload=payload)


#: The objective each report ranks by, whose ideal-roofline value is printed beside it.
_OBJECTIVES = {"best": "tokens_per_second_per_gpu", "cheapest": "cost_per_million_tokens"}


def _ideal_bound(args, result, by, models, gpus, reserve, draft) -> dict | None:
    """Each model's best objective on the ideal roofline over the same grid, ``{model: (name,
    value)}``: the bound beside the engine's answer (best and cheapest reports; not with
    ``--engine ideal``, a file engine, or a grid the engine's report found nothing in)."""
    if args.report not in _OBJECTIVES or by != [dims.MODEL] or \
            not profiled_engine(args.engine or "vllm"):
        return None
    ideal = sweep(models, gpus, tp=args.tp, context_length=args.max_model_len,
                  batch_size=args.batch_size, prompt_tokens=args.input_len, reserve=reserve,
                  gpu_memory_utilization=args.gpu_memory_utilization,
                  chunks=_chunks(args.chunks), replicate_kv=args.replicate_kv,
                  draft_tokens=args.num_speculative_tokens, acceptance=args.acceptance,
                  draft=draft, prefix_share=args.prefix_share, engine="ideal")
    if args.report == "best":
        best = best_configuration(ideal)
    else:
        best = cheapest_configuration(ideal, max_ttft=args.ttft, max_itl=args.itl)
    name = _OBJECTIVES[args.report]
    out = {}
    for model in best[dims.MODEL].values:
        row = best.sel({dims.MODEL: model})
        if bool(row["found"]):
            out[str(model)] = (name, float(row[name]))
    return out

