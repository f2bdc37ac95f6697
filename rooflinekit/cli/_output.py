"""What every command prints and writes: tables, JSON, CSV, and ``--output FILE`` by extension.

A table's numbers are right-aligned, one number format a column, units in the headings;
``--json`` and ``--csv`` print the records the table shows. Outputs never destroy
(:func:`check_output`, before any work); text from files is printed escaped, one line each
(:func:`escape_text`); a CSV text cell cannot start a formula (:func:`write_csv`); JSON spells
NaN ``null`` and infinity ``"inf"``, and "none found" is ``null`` with a ``reason``.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import os
import re
from pathlib import Path

from rooflinekit.profiles import memory_outside_kv, memory_share_of
from rooflinekit.sweep import save
from rooflinekit.units import GiB

__all__ = ["JSON_RULE", "OUTPUT_FORMATS", "check_output", "check_output_path", "emit",
           "escape_text", "format_column", "format_value", "input_paths", "output_format",
           "print_header", "print_json", "print_table", "to_jsonable", "write_csv",
           "write_output"]

#: ``--output`` extensions -> the package each needs beyond the required ones (``None``: none).
OUTPUT_FORMATS = {".nc": None, ".csv": None, ".json": None, ".zarr": "zarr",
                  ".parquet": "pyarrow"}

#: How JSON holds what it has no number for (said in every ``--json`` help).
JSON_RULE = 'unknown (NaN) is null, infinity the string "inf", "none found" null with a reason'

_FIXED_RANGE = (1e-4, 1e12)   # magnitudes printed in fixed point; a column beyond: scientific


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


#: How JSON spells the infinities (:func:`to_jsonable`); a table aligns them as numbers.
_INF_TEXT = {math.inf: "inf", -math.inf: "-inf"}


def _numeric_cell(value) -> bool:
    """Whether a table aligns ``value`` as a number (``None``, and "inf" from JSON, included)."""
    return _is_number(value) or value is None or (isinstance(value, str)
                                                   and value in ("inf", "-inf"))


#: Characters never printed raw: C0 and C1 controls and DEL, and the invisible format
#: characters that move or hide text (bidi marks, embeddings and isolates, zero widths, line and
#: paragraph separators, the byte-order mark).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e"
                     "\u2060-\u2069\ufeff]")
_EDGES = re.compile(f"^{_UNSAFE.pattern}+|{_UNSAFE.pattern}+$")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _shown(char: str) -> str:
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def escape_text(text, keep: str = "") -> str:
    """``text`` with every control character but those in ``keep`` shown as an escape
    (``\\x1b``, ``\\n``, ``\\u202e``), so that text from a file prints on one line."""
    return _UNSAFE.sub(lambda m: m.group() if m.group() in keep else _shown(m.group()),
                       str(text))


class _TerminalText:
    """A text stream on which each string of ``texts`` prints wholly escaped, and any other
    control character but the newline as an escape too."""

    def __init__(self, out, texts=()):
        self._out = out
        # the control characters inside a string: those at its ends never join two lines
        cores = {_EDGES.sub("", t) for t in texts if _UNSAFE.search(t)}
        self._texts = sorted((c for c in cores if _UNSAFE.search(c)), key=len, reverse=True)

    def write(self, text):
        for t in self._texts:
            text = text.replace(t, escape_text(t))
        return self._out.write(escape_text(text, keep="\n"))

    def __getattr__(self, name):
        return getattr(self._out, name)


def _strings(value, found=None, depth=0):
    """Every string in ``value`` (nested dicts, lists, tuples), keys included."""
    found = set() if found is None else found
    if isinstance(value, str):
        found.add(value)
    elif isinstance(value, dict) and depth < 64:
        for k, v in value.items():
            _strings(k, found, depth + 1)
            _strings(v, found, depth + 1)
    elif isinstance(value, (list, tuple)) and depth < 64:
        for v in value:
            _strings(v, found, depth + 1)
    return found


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
    return escape_text(value)


def _shows(value: float, decimals: int) -> bool:
    """Whether ``decimals`` decimals show ``value`` to its four significant figures."""
    if value == 0:
        return True
    step = 10.0 ** (math.floor(math.log10(abs(value))) - 3)   # the fourth figure's place
    return abs(round(value, decimals) - value) <= step / 2 * (1 + 1e-9)


def format_column(values) -> list[str]:
    """A column's cells as text, all numbers in one format: whole numbers with thousands
    separators, else fixed point with the fewest decimals (at most six) that show each entry to
    four significant figures, or all scientific when one is beyond ``1e-4 .. 1e12``. ``None`` is
    ``-``; bools, ``nan`` and ``inf`` print as themselves, text escaped."""
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
            return escape_text(v)
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
    columns = [escape_text(h) for h in columns]
    out.write("  " + end("  ".join(h.rjust(w) if r else h.ljust(w)
                                   for h, w, r in zip(columns, widths, right))) + "\n")
    out.write("  " + "  ".join("-" * w for w in widths) + "\n")


def print_table(columns, rows, out, *, fmt=None, align_numbers=True, strip=True,
                by_row=False) -> None:
    """Write ``rows`` under ``columns``, indented two spaces, each column as wide as its widest.

    Each column's numbers get one format (:func:`format_column`; each row's with ``by_row``;
    ``fmt`` formats each cell alone). With ``align_numbers`` numbers (and all-number columns'
    headings) are right-aligned; ``strip`` drops the padding at each line's end.
    """
    rows = [list(r) for r in rows]
    columns = [escape_text(h) for h in columns]
    by_column = list(zip(*rows)) if rows else [() for _ in columns]
    if by_row:
        cells = [[escape_text(fmt(c)) for c in row] if fmt else format_column(row)
                 for row in rows]
    else:
        texts = [[escape_text(fmt(c)) for c in col] if fmt else format_column(col)
                 for col in by_column]
        cells = [list(r) for r in zip(*texts)] if rows else []
    numeric = [[align_numbers and _numeric_cell(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(columns)]
    right = [bool(rows) and align_numbers and all(_numeric_cell(c) for c in col)
             and any(_is_number(c) for c in col) for col in by_column]
    print_header(columns, widths, out, strip=strip, right=right)
    end = str.rstrip if strip else str
    for r, num in zip(cells, numeric):
        line = "  ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(r, widths, num))
        out.write("  " + end(line) + "\n")


def _plain(value):
    """A numpy scalar as the Python number (or bool, or text) it holds; anything else as is."""
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        try:
            return value.item()
        except (TypeError, ValueError):
            return str(value)
    return value


def to_jsonable(value):
    """Plain JSON values: numpy scalars as Python numbers; NaN (unknown) as ``null``, infinity
    as the string ``"inf"`` (``"-inf"``), so that the two stay apart (JSON has neither)."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    value = _plain(value)
    if isinstance(value, float) and not math.isfinite(value):
        return _INF_TEXT.get(value)   # NaN: None
    return value


def print_json(data, out, **options) -> None:
    """``json.dump`` to ``out`` (``options`` as for it), then a newline."""
    json.dump(data, out, **options)
    out.write("\n")


#: First characters that make a spreadsheet read a cell as a formula (OWASP, CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _csv_cell(value):
    """One CSV cell (:func:`write_csv`'s rules)."""
    if value is None:
        return ""
    value = to_jsonable(value)
    if not isinstance(value, str):
        return "" if value is None else value
    text = escape_text(value)
    return "'" + text if value.startswith(_FORMULA_START) else text


def write_csv(records, out) -> None:
    """``records`` (dicts with the same keys) as CSV with a heading line; ``None`` (and NaN) is
    empty, infinity ``inf``. Text cells are escaped, and one that starts with ``= + - @``, a
    tab or a carriage return is written behind a ``'`` (OWASP's rule against CSV injection);
    numbers, negative ones included, stay numbers."""
    records = list(records)
    columns = list(dict.fromkeys(k for r in records for k in r))
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([_csv_cell(c) for c in columns])
    for r in records:
        writer.writerow([_csv_cell(r.get(c)) for c in columns])


def output_format(path) -> str:
    """The extension of an ``--output`` path, lower-case (``"X.ZARR"`` -> ``".zarr"``), as
    :func:`rooflinekit.sweep.save` reads it."""
    return Path(os.fspath(path)).suffix.lower()


def input_paths(args) -> list[Path]:
    """The existing files and folders the arguments of a command name (its inputs): every
    string argument but ``--output`` (or list of them) that names one, and ``NAME=PATH``'s
    ``PATH``."""
    found = []
    for name, value in vars(args).items():
        if name in ("output", "run", "command"):
            continue
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if not isinstance(item, (str, os.PathLike)):
                continue
            text = os.fspath(item)
            for candidate in dict.fromkeys((text, text.partition("=")[2])):
                try:
                    if candidate and os.path.lexists(candidate):
                        found.append(Path(candidate))
                except (OSError, ValueError):    # a name the system cannot hold
                    continue
    return found


def _same_place(a: Path, b: Path) -> bool:
    """Whether two paths are one file: the same after links are followed, or hard links."""
    try:
        if os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b):
            return True
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):
        return False


def _inside(path: Path, folder: Path) -> bool:
    try:
        return folder.resolve() in path.resolve().parents
    except (OSError, RuntimeError):
        return False


def check_output_path(path, formats=tuple(OUTPUT_FORMATS), *, force=False, inputs=()) -> None:
    """Refuse an ``--output`` path before any work: an extension not in ``formats`` (or not
    installed), a missing or read-only folder, one of the command's ``inputs`` (or a ``.zarr``
    folder holding one), the wrong kind of path, and, unless ``force``, an existing one.

    Raises
    ------
    ValueError
        Naming ``--output``, the extension and the ones allowed (or the package to install), or
        the input it would destroy.
    FileNotFoundError, PermissionError
        The folder is missing, or not writable.
    FileExistsError, IsADirectoryError
        The path exists (``--force`` replaces a file or a folder's contents), or is of the
        other kind.
    """
    text = os.fspath(path)
    ext = output_format(text)
    if ext not in formats:
        raise ValueError(f"--output must end in one of {', '.join(formats)}; got {text!r}")
    package = OUTPUT_FORMATS.get(ext)
    if package is not None and importlib.util.find_spec(package) is None:
        raise ValueError(f"--output {ext} needs the {package} package, which is not installed "
                         f"(pip install {package}); use .nc, .csv or .json")
    target = Path(text)
    folder = target.parent
    if not folder.is_dir():
        raise FileNotFoundError(f"--output {text!r}: the folder {str(folder)!r} does not "
                                f"exist; create it first, or choose another path")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(f"--output {text!r}: the folder {str(folder)!r} is not writable")
    for source in inputs:
        if _same_place(Path(source), target) or (ext == ".zarr" and
                                                  _inside(Path(source), target)):
            raise ValueError(f"--output {text!r} is an input of this command "
                             f"({str(source)!r}): writing it would destroy what is read; "
                             f"choose another path")
    if os.path.isdir(target):
        if ext != ".zarr":
            raise IsADirectoryError(f"--output {text!r} is a folder, and a {ext} output is a "
                                    f"file; choose a file path")
        if not force and any(os.scandir(target)):
            raise FileExistsError(f"--output {text!r} is a folder that is not empty; pass "
                                  f"--force to replace its contents, or choose another path")
    elif os.path.lexists(target):
        if ext == ".zarr":
            raise FileExistsError(f"--output {text!r} is a file, and a .zarr output is a "
                                  f"folder; remove it or choose another path")
        if not os.path.isfile(target):
            raise FileExistsError(f"--output {text!r} exists and is not a regular file; "
                                  f"choose another path")
        if not force:
            raise FileExistsError(f"--output {text!r} exists; pass --force to overwrite it, "
                                  f"or choose another path")


def check_output(args, formats=tuple(OUTPUT_FORMATS)) -> None:
    """:func:`check_output_path` for a command's parsed ``args`` (``--output``, ``--force``,
    the inputs :func:`input_paths` finds); nothing without ``--output``."""
    path = getattr(args, "output", None)
    if path:
        check_output_path(path, formats, force=bool(getattr(args, "force", False)),
                          inputs=input_paths(args))


def _records_dataset(records):
    import pandas as pd

    frame = pd.DataFrame([{k: (math.nan if v is None else _plain(v)) for k, v in r.items()}
                          for r in records])
    for column in frame.columns:
        if frame[column].dtype == object:
            frame[column] = frame[column].astype(str)   # netCDF needs one type per variable
    return frame.rename_axis("row").to_xarray()


def write_output(path, records, payload=None, dataset=None, *, force=False) -> None:
    """Write to ``path`` by its extension (:func:`output_format`): ``.json`` ``payload``
    (default ``records``), ``.csv`` and ``.parquet`` ``records``, ``.nc`` and ``.zarr``
    ``dataset`` (default: ``records`` along ``row``); an existing one only with ``force``."""
    payload = records if payload is None else payload
    ext = output_format(path)
    mode = "w" if force else "x"
    if ext == ".json":
        with open(path, mode, encoding="utf-8") as f:
            print_json(to_jsonable(payload), f, indent=2, allow_nan=False)
    elif ext == ".csv":
        with open(path, mode, encoding="utf-8", newline="") as f:
            write_csv(records, f)
    elif ext == ".parquet":
        import pandas as pd

        if not force and os.path.lexists(path):
            raise FileExistsError(f"--output {os.fspath(path)!r} exists; pass --force to "
                                  f"overwrite it")
        pd.DataFrame([{k: _plain(v) for k, v in r.items()} for r in records]).to_parquet(path)
    else:
        save(dataset if dataset is not None else _records_dataset(records), path,
             overwrite=force)


def emit(args, out, records, *, text, payload=None, dataset=None, write=None) -> int:
    """Print a command's result as ``args`` ask (``--json``, ``--csv`` or ``text(out)``), and
    write it to ``--output FILE`` where given (:func:`write_output`, or ``write(path)``).
    Returns 0. ``records`` are the table's rows as dicts; ``text(out)`` writes to a stream that
    prints the result's strings escaped, each on one line."""
    payload = records if payload is None else payload
    path = getattr(args, "output", None)
    force = bool(getattr(args, "force", False))
    if path:
        (write or (lambda p: write_output(p, records, payload, dataset, force=force)))(path)
    if getattr(args, "json", False):
        print_json(to_jsonable(payload), out, indent=2, allow_nan=False)
    elif getattr(args, "csv", False):
        write_csv(records, out)
    else:
        terminal = _TerminalText(out, _strings([payload, records]))
        text(terminal)
        if path:
            terminal.write(f"written to {escape_text(path)}\n")
    return 0


def engine_kv_rule(share: str, gpu, held_by, model) -> str:
    """An engine's KV rule in words: ``share`` (its text) of the memory the driver reports on
    each GPU of ``gpu``'s kind, less the weights and what ``held_by`` keeps beside them for
    ``model`` (:func:`rooflinekit.profiles.memory_outside_kv`); for an engine whose share is
    of what those leave (TensorRT-LLM's), that share of what they leave."""
    kept = memory_outside_kv(held_by, [model])
    if memory_share_of(held_by) == "free":
        return (f"{share} of what the weights and {kept} leave of the "
                f"{gpu.visible_memory_per_gpu / GiB:.2f} GiB the driver reports on each GPU")
    return (f"{share} of the {gpu.visible_memory_per_gpu / GiB:.2f} GiB the driver reports on "
            f"each GPU, less the weights and {kept}")


def guide_kv_rule(reserve: float) -> str:
    """What ``layouts`` and ``sweep`` size the KV cache by, in words: the guide's rule with
    ``reserve`` (the share of what the weights leave kept as workspace)."""
    return (f"the guide's rule, {reserve:g} of what the weights leave kept as workspace (an "
            f"engine allocates less: rooflinekit capacity gives its cache)")
