"""``rooflinekit guide``: the serving-capacity guide's figures, recomputed, beside the guide's."""

from __future__ import annotations

from rooflinekit import guide
from rooflinekit.cli._args import COMMAND_API, add_output_flags
from rooflinekit.cli._output import emit, format_value, print_header, print_table

__all__ = list(COMMAND_API)

NAME = "guide"
HELP = "reproduce the guide's figures and tables"
DESCRIPTION = ("Print the serving-capacity guide's figures, recomputed live, with the guide's "
               "value beside ours.")
EPILOG = """examples:
  rooflinekit guide                   all sections, guide values beside ours
  rooflinekit guide --section memory  one section
  rooflinekit guide --json            the same numbers, machine-readable
  rooflinekit guide --section memory --csv   one row a figure, for a spreadsheet
"""


def add_arguments(parser) -> None:
    parser.add_argument("--section", action="append", metavar="NAME",
                        help="print only this section (repeatable)")
    add_output_flags(parser)


def run(args, out) -> int:
    sections = guide.build(args.section)
    records = [{"section": s.key, **f.as_dict()} for s in sections for f in s.figures]
    return emit(args, out, records, payload=[s.as_dict() for s in sections],
                text=lambda out: _print_sections(sections, out))


def _print_sections(sections, out) -> None:
    out.write("rooflinekit guide: the serving-capacity guide's figures, recomputed "
              "('≠' marks a figure that differs, with the reason)\n")
    for section in sections:
        _print_section(section, out)


def _print_section(section, out) -> None:
    out.write(f"\n== {section.title} ==\n")
    labels = [("  " if f.agrees else "≠ ") + f.label for f in section.figures]
    ours = [f"{format_value(f.ours)} {f.unit}".strip() for f in section.figures]
    columns = ("figure", "guide", "rooflinekit")
    widths = [max(len(columns[0]), *map(len, labels)),
              max(len(columns[1]), *(len(f.guide) for f in section.figures)),
              max(len(columns[2]), *map(len, ours))]
    print_header(columns, widths, out)
    # not print_table: a figure's note goes on its own line under it
    for fig, label, value in zip(section.figures, labels, ours):
        out.write(f"  {label.ljust(widths[0])}  {fig.guide.ljust(widths[1])}  {value}\n")
        if fig.note:
            out.write(f"      ↳ {fig.note}\n")
    for table in section.tables:
        out.write(f"\n  {table.title}\n")
        print_table(table.columns, table.rows, out)
    for note in section.notes:
        out.write(f"\n  note: {note}\n")
