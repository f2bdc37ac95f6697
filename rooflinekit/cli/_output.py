"""What every command prints and writes: tables, JSON, CSV, and ``--output FILE`` by extension.

A table's numbers are right-aligned and each column has one number format; units belong in the
column headings. ``--json`` and ``--csv`` print the same records the table shows, and
``--output FILE`` writes them (or the command's Dataset) in the format of FILE's extension.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math

__all__ = ["OUTPUT_FORMATS", "check_output_path", "emit", "format_column", "format_value",
           "print_header", "print_json", "print_table", "to_jsonable", "write_csv",
           "write_output"]

#: ``--output`` extensions -> the package each needs beyond the required ones (``None``: none).
OUTPUT_FORMATS = {".nc": None, ".csv": None, ".json": None, ".zarr": "zarr",
                  ".parquet": "pyarrow"}

_FIXED_RANGE = (1e-4, 1e12)   # magnitudes printed in fixed point; a column beyond: scientific


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def format_value(value) -> str:
    """One cell alone as text: thousands separators, four significant figures for small or huge
    values, two decimals between (``458.65``).

    For a column of cells use :func:`format_column`, which gives the column one format.
    """
    if value is None:
        return "-"
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


def _shows(value: float, decimals: int) -> bool:
    """Whether ``decimals`` decimals show ``value`` to its four significant figures."""
    if value == 0:
        return True
    step = 10.0 ** (math.floor(math.log10(abs(value))) - 3)   # the fourth figure's place
    return abs(round(value, decimals) - value) <= step / 2 * (1 + 1e-9)


def format_column(values) -> list[str]:
    """A column's cells as text, all numbers in one format.

    Whole numbers (ints, or floats that are whole) get thousands separators; a column with
    fractions gets fixed point with the fewest decimals (at most six) that show every entry to
    four significant figures, or scientific notation for all when an entry is beyond
    ``1e-4 .. 1e12``. ``None`` is ``-``; text, ``True``/``False``, ``nan`` and ``inf`` print as
    themselves.
    """
    finite = [float(v) for v in values if _is_number(v) and math.isfinite(v)]
    whole = all(v.is_integer() and abs(v) < 1e15 for v in finite)
    nonzero = [abs(v) for v in finite if v != 0]
    scientific = not whole and any(not _FIXED_RANGE[0] <= v < _FIXED_RANGE[1] for v in nonzero)
    decimals = 0
    if not whole and not scientific:
        decimals = next((d for d in range(7) if all(_shows(v, d) for v in finite)), 6)

    def cell(v) -> str:
        if v is None:
            return "-"
        if not _is_number(v):
            return str(v)
        if not math.isfinite(v):
            return str(float(v))
        if whole:
            return f"{int(v):,}"
        if scientific:
            return f"{v:.3e}"
        return f"{v:,.{decimals}f}"
    return [cell(v) for v in values]


def print_header(columns, widths, out, *, strip=True, right=None) -> None:
    """The heading line and its rule of dashes; ``strip`` drops the padding at the line's end.

    ``right`` says, per column, whether its heading sits right (over numbers).
    """
    right = right or [False] * len(widths)
    end = str.rstrip if strip else str
    out.write("  " + end("  ".join(str(h).rjust(w) if r else str(h).ljust(w)
                                   for h, w, r in zip(columns, widths, right))) + "\n")
    out.write("  " + "  ".join("-" * w for w in widths) + "\n")


def print_table(columns, rows, out, *, fmt=None, align_numbers=True, strip=True,
                by_row=False) -> None:
    """Write ``rows`` under ``columns``, indented two spaces, each column as wide as its widest.

    Each column's numbers get one format (:func:`format_column`); with ``by_row`` each row's do
    instead (a table whose rows are quantities and whose columns are cases), and ``fmt``, where
    given, formats each cell alone. With ``align_numbers`` numeric cells (and a column's heading, where every cell is a
    number) are right-aligned, text left-aligned; ``strip`` drops the padding at each line's end.
    """
    rows = [list(r) for r in rows]
    by_column = list(zip(*rows)) if rows else [() for _ in columns]
    if by_row:
        cells = [[fmt(c) for c in row] if fmt else format_column(row) for row in rows]
    else:
        texts = [[fmt(c) for c in col] if fmt else format_column(col) for col in by_column]
        cells = [list(r) for r in zip(*texts)] if rows else []
    numeric = [[align_numbers and (_is_number(c) or c is None) for c in row] for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) for i, h in enumerate(columns)]
    right = [bool(rows) and align_numbers and all(_is_number(c) or c is None for c in col)
             and any(_is_number(c) for c in col) for col in by_column]
    print_header(columns, widths, out, strip=strip, right=right)
    end = str.rstrip if strip else str
    for r, num in zip(cells, numeric):
        line = "  ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(r, widths, num))
        out.write("  " + end(line) + "\n")


def to_jsonable(value):
    """Plain JSON values: numpy scalars as Python numbers, ``nan``/``inf`` as ``null``."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        try:
            value = value.item()
        except (TypeError, ValueError):
            return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None   # JSON has no nan or infinity
    return value


def print_json(data, out, **options) -> None:
    """``json.dump`` to ``out`` (``options`` as for it), then a newline."""
    json.dump(data, out, **options)
    out.write("\n")


def write_csv(records, out) -> None:
    """``records`` (dicts with the same keys) as CSV with a heading line; ``None`` is empty."""
    records = list(records)
    columns = list(dict.fromkeys(k for r in records for k in r))
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for r in records:
        writer.writerow(["" if r.get(c) is None else to_jsonable(r.get(c)) for c in columns])


def _extension(path) -> str:
    name = str(path).lower().rstrip("/")
    return "." + name.rsplit(".", 1)[1] if "." in name.rsplit("/", 1)[-1] else ""


def check_output_path(path, formats=tuple(OUTPUT_FORMATS)) -> None:
    """Refuse an ``--output`` path whose extension is not one of ``formats`` or whose library is
    not installed, before any work.

    Raises
    ------
    ValueError
        Naming ``--output``, the extension and the ones allowed (or the package to install).
    """
    ext = _extension(path)
    if ext not in formats:
        raise ValueError(f"--output must end in one of {', '.join(formats)}; got {str(path)!r}")
    package = OUTPUT_FORMATS.get(ext)
    if package is not None and importlib.util.find_spec(package) is None:
        raise ValueError(f"--output {ext} needs the {package} package, which is not installed "
                         f"(pip install {package}); use .nc, .csv or .json")


def _records_dataset(records):
    import pandas as pd

    frame = pd.DataFrame([{k: (math.nan if v is None else to_jsonable(v)) for k, v in r.items()}
                          for r in records])
    for column in frame.columns:
        if frame[column].dtype == object:
            frame[column] = frame[column].astype(str)   # netCDF needs one type per variable
    return frame.rename_axis("row").to_xarray()


def write_output(path, records, payload=None, dataset=None) -> None:
    """Write to ``path`` by its extension: ``.json`` ``payload`` (default ``records``), ``.csv``
    and ``.parquet`` ``records``, ``.nc`` and ``.zarr`` ``dataset`` (default: ``records`` along
    ``row``)."""
    payload = records if payload is None else payload
    ext = _extension(path)
    if ext == ".json":
        with open(path, "w", encoding="utf-8") as f:
            print_json(to_jsonable(payload), f, indent=2, allow_nan=False)
    elif ext == ".csv":
        with open(path, "w", encoding="utf-8", newline="") as f:
            write_csv(records, f)
    elif ext == ".parquet":
        import pandas as pd

        pd.DataFrame([{k: to_jsonable(v) for k, v in r.items()} for r in records]).to_parquet(
            path)
    else:
        ds = dataset if dataset is not None else _records_dataset(records)
        ds.to_netcdf(path) if ext == ".nc" else ds.to_zarr(path, mode="w")


def emit(args, out, records, *, text, payload=None, dataset=None, write=None) -> int:
    """Print a command's result as ``args`` ask (``--json``, ``--csv`` or ``text(out)``), and
    write it to ``--output FILE`` where given. Returns 0.

    ``records`` are the table's rows as dicts (machine names as keys); ``payload`` is the JSON
    (default ``records``); ``dataset`` is what ``.nc``/``.zarr`` get (default: ``records`` along
    ``row``); ``write(path)``, where given, writes ``--output`` instead.
    """
    payload = records if payload is None else payload
    path = getattr(args, "output", None)
    if path:
        (write or (lambda p: write_output(p, records, payload, dataset)))(path)
    if getattr(args, "json", False):
        print_json(to_jsonable(payload), out, indent=2, allow_nan=False)
    elif getattr(args, "csv", False):
        write_csv(records, out)
    else:
        text(out)
        if path:
            out.write(f"written to {path}\n")
    return 0
