"""Command-line interface: ``rooflinekit guide`` and friends.

Errors from bad input are one line on stderr and exit status 2; never a traceback.
"""

from __future__ import annotations

import argparse
import json
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
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) for i, h in enumerate(columns)]
    out.write("  " + "  ".join(str(h).ljust(w) for h, w in zip(columns, widths)) + "\n")
    out.write("  " + "  ".join("-" * w for w in widths) + "\n")
    for r in cells:
        out.write("  " + "  ".join(c.rjust(w) if i else c.ljust(w)
                                    for i, (c, w) in enumerate(zip(r, widths))) + "\n")


def _print_section(section, out) -> None:
    out.write(f"\n== {section.title} ==\n")
    rows = [(("  " if f.agrees else "≠ ") + f.label, f.guide,
             f"{_fmt(f.ours)} {f.unit}".strip(), f.note) for f in section.figures]
    _print_table(("figure", "guide", "rooflinekit", "note"), rows, out)
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
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rooflinekit`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args, sys.stdout)
    except (ValueError, TypeError, KeyError, OSError) as exc:
        sys.stderr.write(f"rooflinekit {args.command}: error: {exc}\n")
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
