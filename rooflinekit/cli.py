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


def _cmd_guide(args, out) -> int:
    from . import guide
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
    from . import catalog, units
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rooflinekit",
        description="Capacity, latency and cost planning for serving large language models.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
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
    except (ValueError, TypeError, KeyError, OSError) as exc:
        sys.stderr.write(f"rooflinekit {args.command}: error: {exc}\n")
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
