"""What every command prints: numbers as text, one table printer, JSON with a final newline."""

from __future__ import annotations

import json

__all__ = ["format_value", "print_header", "print_json", "print_table"]


def format_value(value) -> str:
    """A cell as text: thousands separators, four significant figures for small or huge values."""
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


def print_header(columns, widths, out, *, strip=True) -> None:
    """The heading line and its rule of dashes; ``strip`` drops the padding at the line's end."""
    end = str.rstrip if strip else str
    out.write("  " + end("  ".join(str(h).ljust(w) for h, w in zip(columns, widths))) + "\n")
    out.write("  " + "  ".join("-" * w for w in widths) + "\n")


def print_table(columns, rows, out, *, fmt=format_value, align_numbers=True,
                strip=True) -> None:
    """Write ``rows`` under ``columns``, indented two spaces, each column as wide as its widest.

    ``fmt`` turns a cell into text; with ``align_numbers`` numeric cells are right-aligned (text
    is always left-aligned); ``strip`` drops the padding at the end of each line.
    """
    cells = [[fmt(c) for c in row] for row in rows]
    numeric = [[align_numbers and isinstance(c, (int, float)) and not isinstance(c, bool)
                for c in row] for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) for i, h in enumerate(columns)]
    print_header(columns, widths, out, strip=strip)
    end = str.rstrip if strip else str
    for r, num in zip(cells, numeric):
        line = "  ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(r, widths, num))
        out.write("  " + end(line) + "\n")


def print_json(data, out, **options) -> None:
    """``json.dump`` to ``out`` (``options`` as for it), then a newline."""
    json.dump(data, out, **options)
    out.write("\n")
