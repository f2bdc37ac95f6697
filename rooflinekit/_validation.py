"""Input checks shared by every public function.

Each check raises ``TypeError`` (wrong kind) or ``ValueError`` (out of range) before any
computation, naming the argument, what is allowed, and the value as a Python literal
(``output_fraction must lie in [0, 1]; got 1.5``). Array checks take numbers, numpy arrays and
DataArrays alike; the scalar checks are for spec fields.
"""

from __future__ import annotations

import codecs
import difflib
import functools
import json
import math
import numbers
import os
import re
import stat
from collections.abc import Iterable, Mapping

import numpy as np
import xarray as xr

__all__ = ["MAX_COUNT", "MAX_MAGNITUDE", "MAX_LAYERS", "MAX_CONFIG_BYTES", "MAX_JSON_ELEMENTS",
           "MAX_YAML_NODES", "MAX_NESTING",
           "show", "describe", "as_numeric", "check_range", "check_positive", "check_nonnegative",
           "check_integer", "check_fraction", "positive_number", "real_number", "whole_number",
           "check_bool", "check_type", "check_string", "check_one_of", "check_keys",
           "check_mapping", "as_1d", "check_count_array", "read_regular_file",
           "parse_json", "parse_yaml"]

_SHOWN_ELEMENTS = 6
_SHOWN_CHARS = 80

#: The largest count accepted anywhere (tokens, sequences, requests, GPUs): 2**53, the largest
#: whole number a float64 holds exactly. Counts beyond it would be rounded, or wrap when cast
#: to int64, and their products overflow the formulas.
MAX_COUNT = 2**53

#: The largest magnitude of any finite number accepted (bytes, FLOP/s, seconds, prices, rates):
#: 1e30, far beyond any real value, so that the formulas' products of a few such numbers stay
#: finite. inf, where an argument allows it, means "no limit" and is not a magnitude.
MAX_MAGNITUDE = 1e30

#: The most decoder layers a model may have: 10,000 (served models have about 130, research
#: ones reach 1,000); a config claiming 10**9 layers would cost 8 GB of per-layer lists.
MAX_LAYERS = 10_000

#: The largest settings file read [bytes]: 8 MiB, for a ``config.json``, a calibration and an
#: ``--engine`` file; real ones are under 100 kB, and parsed even a file of empty objects stays
#: under 256 MiB.
MAX_CONFIG_BYTES = 8 * 2**20

#: The most elements a JSON document may hold before it is parsed: 16,000,000, counted as its
#: ``[``, ``{``, ``,`` and ``:`` outside strings. At most about 100 bytes of memory per element,
#: so any document stays under about 1.6 GB; benchmark reports up to some 300 MB pass.
MAX_JSON_ELEMENTS = 16_000_000

#: The most nodes (scalars, lists, mappings) a YAML document may hold: 1,000,000 (PyYAML holds
#: up to 0.75 kB a node: under about 0.75 GB); GuideLLM's reports hold thousands.
MAX_YAML_NODES = 1_000_000

#: The deepest nesting of a YAML document parsed: 100 levels. A GuideLLM report nests about 8;
#: PyYAML's composer recurses three frames a level, so some 300 levels exhaust Python's stack.
MAX_NESTING = 100


# -- how a value is shown ------------------------------------------------------------------------

def _plain(value):
    """Python objects for numpy scalars and arrays, so that their repr is the literal."""
    if isinstance(value, xr.DataArray):
        value = value.values
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


_SHOWN_DEPTH = 4
# digits of the longest integer shown (Python converts at most 4,300 digits to text)
_SHOWN_INT_BITS = 14_000
_BRACKETS = {list: ("[", "]"), tuple: ("(", ")"), set: ("{", "}"), frozenset: ("frozenset({", "})"),
             dict: ("{", "}")}


def _short_repr(value, budget: int, depth: int = 0) -> str:
    """``repr(value)``, built piece by piece and stopped after about ``budget`` characters
    (exactly the ``repr`` of a small value)."""
    kind, budget = type(value), max(budget, 0)
    if kind in (str, bytes):
        return repr(value) if len(value) <= budget else repr(value[:budget]) + "..."
    if kind is int and value.bit_length() > _SHOWN_INT_BITS:
        digits = int(value.bit_length() * math.log10(2))
        return f"<{'a negative' if value < 0 else 'an'} integer of about {digits:,} digits>"
    if kind not in _BRACKETS:
        try:
            text = repr(value)
        except (RecursionError, ValueError):
            return f"<{kind.__name__}>"
        return text
    opening, closing = _BRACKETS[kind]
    if not value:
        return {set: "set()", frozenset: "frozenset()"}.get(kind, opening + closing)
    if depth >= _SHOWN_DEPTH:
        return opening + "..." + closing
    parts, used = [], 0
    for item in (value.items() if kind is dict else value):
        if used > budget:
            parts.append("...")
            break
        if kind is dict:
            key = _short_repr(item[0], budget - used, depth + 1)
            piece = key + ": " + _short_repr(item[1], budget - used - len(key), depth + 1)
        else:
            piece = _short_repr(item, budget - used, depth + 1)
        parts.append(piece)
        used += len(piece) + 2
    if kind is tuple and len(parts) == 1 and len(value) == 1:
        return f"({parts[0]},)"
    return opening + ", ".join(parts) + closing


def show(value) -> str:
    """The value as the user wrote it, for an error message: no ``np.`` reprs, at most 80
    characters, built without forming the full repr."""
    if isinstance(value, (np.ndarray, xr.DataArray)) and (
            value.ndim > 1 or value.size > _SHOWN_ELEMENTS):
        kind = "DataArray" if isinstance(value, xr.DataArray) else "array"
        return f"{kind} of shape {tuple(value.shape)}"
    text = _short_repr(_plain(value), _SHOWN_CHARS)
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS - 3] + "..."


def describe(value) -> str:
    """A wrong kind of value: its type, then the value (``str '3'``, ``bool True``, ``None``)."""
    if value is None:
        return "None"
    if isinstance(value, (np.ndarray, xr.DataArray)):
        return show(value)
    return f"{type(value).__name__} {show(value)}"


def _suggest(value, choices) -> str:
    """`` (did you mean 'x'?)`` for a near miss among string choices, else ``""``."""
    if not isinstance(value, str):
        return ""
    names = [c for c in choices if isinstance(c, str)]
    close = difflib.get_close_matches(value, names, n=1) or difflib.get_close_matches(
        value.lower(), [c.lower() for c in names], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _listing(choices) -> str:
    return ", ".join(repr(_plain(c)) for c in choices)


# -- arrays of numbers ---------------------------------------------------------------------------

def as_numeric(name: str, value) -> np.ndarray:
    """``value`` as a numeric ndarray view; bools and strings raise ``TypeError``, NaN
    ``ValueError``, naming ``name``."""
    if isinstance(value, xr.DataArray):
        data = value.values
    elif isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a number, a numpy array or an xarray.DataArray; "
                        f"got {describe(value)}")
    elif isinstance(value, (numbers.Number, np.ndarray, list, tuple)):
        try:
            data = np.asarray(value)
        except ValueError:  # ragged nested lists
            raise TypeError(f"{name} must be a number or a regular array of numbers; "
                            f"got {describe(value)}") from None
    else:
        raise TypeError(f"{name} must be a number, a numpy array or an xarray.DataArray; "
                        f"got {describe(value)}")
    if data.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold real numbers; got {describe(value)}")
    if data.dtype.kind == "f" and np.isnan(data).any():
        raise ValueError(f"{name} must not contain NaN; got {show(value)}")
    return data


def _interval(lo, hi, lo_open, hi_open) -> str:
    # an unbounded side is open: no number reaches inf
    left = "(" if lo_open or lo is None else "["
    right = ")" if hi_open or hi is None else "]"
    lo_s = "-inf" if lo is None else f"{lo:g}"
    hi_s = "inf" if hi is None else f"{hi:g}"
    return f"{left}{lo_s}, {hi_s}{right}"


def check_range(name: str, value, lo=None, hi=None, *, lo_open=False, hi_open=False,
                allow_inf=False):
    """``value`` unchanged if every element lies in the interval (``None``: unbounded;
    ``lo_open``/``hi_open`` exclude the bound), else ``ValueError``."""
    kind = type(value)
    if kind is float or (kind is int and -2**63 <= value < 2**63):
        # a plain Python number, the most common call: the same rules without an array
        if value != value:
            raise ValueError(f"{name} must not contain NaN; got {show(value)}")
        if not allow_inf and kind is float and math.isinf(value):
            raise ValueError(f"{name} must be finite; got {show(value)}")
        if abs(value) > MAX_MAGNITUDE and not math.isinf(value):
            raise ValueError(_too_large(name, value))
        if ((lo is not None and (value <= lo if lo_open else value < lo))
                or (hi is not None and (value >= hi if hi_open else value > hi))):
            raise ValueError(f"{name} must lie in {_interval(lo, hi, lo_open, hi_open)}; "
                             f"got {show(value)}")
        return value
    if kind is int and abs(value) > MAX_MAGNITUDE:     # beyond int64 and float range alike
        raise ValueError(_too_large(name, value))
    data = _widened(as_numeric(name, value))
    if not allow_inf and data.dtype.kind == "f" and np.isinf(data).any():
        raise ValueError(f"{name} must be finite; got {show(data[np.isinf(data)].flat[0])}")
    if data.size == 0:
        return value
    huge = np.isfinite(data) & (np.abs(data) > MAX_MAGNITUDE) if data.dtype.kind == "f" else \
        np.abs(data) > MAX_MAGNITUDE
    if huge.any():
        raise ValueError(_too_large(name, data[huge].flat[0]))
    bad = np.zeros(data.shape, dtype=bool)
    if lo is not None:
        bad |= (data <= lo) if lo_open else (data < lo)
    if hi is not None:
        bad |= (data >= hi) if hi_open else (data > hi)
    if bad.any():
        raise ValueError(f"{name} must lie in {_interval(lo, hi, lo_open, hi_open)}; "
                         f"got {show(data[bad].flat[0])}")
    return value


def _widened(data: np.ndarray) -> np.ndarray:
    """``data`` in a type the checks compare exactly: narrow floats as float64, narrow integers
    as int64; 64-bit types unchanged."""
    if data.dtype.kind == "f" and data.dtype.itemsize < 8:
        return data.astype(np.float64)
    if data.dtype.kind in "iu" and data.dtype.itemsize < 8:
        return data.astype(np.int64)
    return data


def _too_large(name, value) -> str:
    return (f"{name} must be at most {MAX_MAGNITUDE:g} in magnitude (larger numbers overflow the "
            f"formulas); got {show(value)}")


def check_positive(name: str, value, **kwargs):
    """Raise ``ValueError`` unless ``value > 0`` everywhere."""
    return check_range(name, value, lo=0, lo_open=True, **kwargs)


def check_nonnegative(name: str, value, **kwargs):
    """Raise ``ValueError`` unless ``value >= 0`` everywhere."""
    return check_range(name, value, lo=0, **kwargs)


def check_fraction(name: str, value, *, hi_open=False):
    """Raise ``ValueError`` unless ``0 <= value <= 1`` (``< 1`` with ``hi_open``)."""
    return check_range(name, value, lo=0, hi=1, hi_open=hi_open)


def check_integer(name: str, value, lo=None):
    """Raise unless ``value`` holds finite whole numbers (at least ``lo`` when given)."""
    data = _widened(as_numeric(name, value))
    if data.dtype.kind == "f":
        # inf is no whole number; test it before rounding, which keeps inf as inf
        bad = ~np.isfinite(data) | (data != np.round(data))
        if bad.any():
            raise ValueError(f"{name} must be a whole number; got {show(data[bad].flat[0])}")
    check_range(name, value, lo=lo, hi=MAX_COUNT)
    return value


def as_1d(name: str, value, *, non_empty: bool = True, allow_scalar: bool = True) -> np.ndarray:
    """A 1-D array of real numbers (a scalar one element, with ``allow_scalar``); ``TypeError``
    for non-numbers, ``ValueError`` for 2-D or empty input."""
    kind = "a number or a 1-D sequence of numbers" if allow_scalar else \
        "a 1-D sequence of numbers"
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be {kind}; got {describe(value)}")
    data = as_numeric(name, value)
    if allow_scalar:
        data = np.atleast_1d(data)
    if data.ndim != 1:
        raise ValueError(f"{name} must be {kind}; got {show(value)}")
    if non_empty and data.size == 0:
        raise ValueError(f"{name} must hold at least one value; got {show(value)}")
    return data


# -- single numbers (spec fields) ----------------------------------------------------------------

def real_number(name: str, value, lo=None, hi=None, *, lo_open=False, hi_open=False,
                allow_none: bool = False, allow_inf: bool = False):
    """One real number in an interval, as ``float`` (``None`` passes with ``allow_none``)."""
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        kind = "a number or None" if allow_none else "a number"
        raise TypeError(f"{name} must be {kind}; got {describe(value)}")
    try:
        number = float(value)
    except OverflowError:              # an integer beyond float range
        raise ValueError(_too_large(name, value)) from None
    if math.isnan(number):
        raise ValueError(f"{name} must not be NaN; got {show(value)}")
    if not allow_inf and math.isinf(number):
        raise ValueError(f"{name} must be finite; got {show(value)}")
    if abs(number) > MAX_MAGNITUDE and not math.isinf(number):
        raise ValueError(_too_large(name, value))
    if (lo is not None and (number <= lo if lo_open else number < lo)) or (
            hi is not None and (number >= hi if hi_open else number > hi)):
        raise ValueError(f"{name} must lie in {_interval(lo, hi, lo_open, hi_open)}; "
                         f"got {show(value)}")
    return number


def positive_number(name: str, value, allow_none: bool = False):
    """A single positive finite number as ``float`` (``None`` passes with ``allow_none``)."""
    return real_number(name, value, lo=0, lo_open=True, allow_none=allow_none)


def whole_number(name: str, value, lo=None, *, hi=None, allow_none: bool = False):
    """One whole number (an integer, or a float with no fraction) as ``int``, at least ``lo``
    and at most ``hi`` (each where given)."""
    if value is None and allow_none:
        return None
    bounds = (f" in [{lo:,}, {hi:,}]" if lo is not None and hi is not None
              else f" >= {lo}" if lo is not None else f" <= {hi:,}" if hi is not None else "")
    wanted = f"{name} must be a whole number{bounds}" + (" or None" if allow_none else "")
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{wanted}; got {describe(value)}")
    if isinstance(value, np.generic):
        # numpy scalars as Python numbers: a float16 or int8 compared with 2**53 would
        # overflow in the cast (float16) or compare in its own narrow type
        value = value.item()
    if not isinstance(value, numbers.Integral) and not float(value).is_integer():
        raise ValueError(f"{wanted}; got {show(value)}")
    if lo is not None and value < lo or hi is not None and value > hi:
        raise ValueError(f"{wanted}; got {show(value)}")
    if value > MAX_COUNT:
        raise ValueError(f"{name} must be at most 2**53 = {MAX_COUNT:,}; got {show(value)}")
    return int(value)


# -- kinds, names and choices --------------------------------------------------------------------

def check_bool(name: str, value) -> bool:
    """``True`` or ``False`` (numpy bools too) as ``bool``; ``TypeError`` for anything else."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False; got {describe(value)}")
    return bool(value)


def _kind_names(kind) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


def check_type(name: str, value, kind, *, allow_none: bool = False):
    """``value`` unchanged when it is an instance of ``kind`` (a type or a tuple of types)."""
    if (value is None and allow_none) or isinstance(value, kind):
        return value
    suffix = " or None" if allow_none else ""
    raise TypeError(f"{name} must be a {_kind_names(kind)}{suffix}; got {describe(value)}")


def check_string(name: str, value, *, allow_none: bool = False, allow_empty: bool = False):
    """A string (non-blank unless ``allow_empty``), or ``None`` with ``allow_none``."""
    if value is None and allow_none:
        return None
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        kind = "a string" if allow_empty else "a non-empty string"
        raise TypeError(f"{name} must be {kind}{' or None' if allow_none else ''}; "
                        f"got {describe(value)}")
    return value


def check_one_of(name: str, value, choices: Iterable, *, fold_case: bool = False):
    """The one of ``choices`` that ``value`` is (in any case with ``fold_case``); else
    ``ValueError`` with a near miss."""
    choices = tuple(choices)
    if fold_case and isinstance(value, str):
        for choice in choices:
            if isinstance(choice, str) and choice.lower() == value.lower():
                return choice
    try:
        if value in choices:
            return value
    except (TypeError, ValueError):  # an array's ambiguous truth
        pass
    raise ValueError(f"{name} must be one of {_listing(choices)}; got {show(value)}"
                     f"{_suggest(value, choices)}")


def check_keys(name: str, keys: Iterable, allowed: Iterable, *, what: str = "key"):
    """Raise ``ValueError`` naming the first of ``keys`` not in ``allowed`` (a typo's fix too)."""
    allowed = tuple(allowed)
    for key in keys:
        if key not in allowed:
            raise ValueError(f"{name}: unknown {what} {show(key)}{_suggest(key, allowed)}; "
                             f"allowed: {_listing(allowed)}")


def check_mapping(name: str, value, kind=None, *, allow_none: bool = False):
    """A mapping (its values instances of ``kind`` when given) as a ``dict``; ``None`` -> ``{}``."""
    if value is None and allow_none:
        return {}
    what = "a mapping" + (f" of name -> {_kind_names(kind)}" if kind is not None else "")
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be {what}; got {describe(value)}")
    if kind is not None:
        for key, item in value.items():
            check_type(f"{name}[{key!r}]", item, kind)
    return dict(value)


def check_count_array(name: str, values, lo: int = 0) -> np.ndarray:
    """A 1-D array-like of whole numbers ``>= lo`` (one per request, say) as int64."""
    data = np.asarray(values)
    if data.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one value per request); got shape {data.shape}")
    if data.size == 0:
        return data.astype(np.int64)
    data = as_numeric(name, data)
    if data.dtype.kind == "f":
        if not np.isfinite(data).all():
            raise ValueError(f"{name} must be finite; got {show(data[~np.isfinite(data)][0])}")
        fractional = data != np.floor(data)
        if fractional.any():
            raise ValueError(f"{name} must hold whole numbers >= {lo}; got "
                             f"{show(data[fractional][0])}")
    if data.min() < lo:
        raise ValueError(f"{name} must be >= {lo} for every request; got {show(data.min())}")
    if data.max() > MAX_COUNT:
        raise ValueError(f"{name} must be at most 2**53 = {MAX_COUNT:,} for every request; got "
                         f"{show(data.max())}")
    return data.astype(np.int64)


# -- files --------------------------------------------------------------------------------------

_FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISSOCK, "a socket"))
_WIDE_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
              (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"))


def _size(n: int) -> str:
    return f"{n // 2**20} MiB" if n >= 2**20 and n % 2**20 == 0 else f"{n:,} bytes"


def _refuse_special(info, what: str, name: str):
    if not stat.S_ISREG(info.st_mode):
        kind = next((k for test, k in _FILE_KINDS if test(info.st_mode)), "not a file")
        raise ValueError(f"{what} {name} is not a regular file ({kind}); give the path of a "
                         f"file")


def read_regular_file(path, what: str, max_bytes: int) -> str:
    """The text of the regular file at ``path``, read whole but bounded, before any parsing.

    A FIFO, a device, a socket or a directory is refused unread (reading it could hang); a file
    over ``max_bytes``, before or while it is read, too. The bytes are decoded as UTF-8 (a BOM
    dropped); UTF-16/UTF-32 text, NUL bytes and invalid UTF-8 are refused, naming the line.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    what : str
        What the file is, for messages ("config.json", "measurement file", ...).
    max_bytes : int
        The largest file accepted [bytes].

    Raises
    ------
    TypeError
        ``path`` is not a path.
    FileNotFoundError
        No file at ``path`` (the message names ``what`` and the file).
    PermissionError
        As ``open`` raises it (the message names the file).
    ValueError
        Not a regular file, larger than ``max_bytes``, or not UTF-8 text: the message names
        ``what`` and the file.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{what} must be a path; got {describe(path)}")
    name = os.fsdecode(os.fspath(path))
    try:
        status = os.stat(name)
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} {name} does not exist") from None
    _refuse_special(status, what, name)               # before opening: a FIFO would block
    flags = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
             | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
    with open(os.open(name, flags), "rb", closefd=True) as fh:
        info = os.fstat(fh.fileno())
        _refuse_special(info, what, name)             # replaced between the two looks
        if info.st_size > max_bytes:
            raise ValueError(f"{what} {name} is {info.st_size:,} bytes, larger than any {what} "
                             f"(at most {_size(max_bytes)})")
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"{what} {name} is larger than any {what} (at most "
                         f"{_size(max_bytes)})")
    return _decode(data, what, name)


def _decode(data: bytes, what: str, name: str) -> str:
    for bom, encoding in _WIDE_BOMS:
        if data.startswith(bom):
            raise ValueError(f"{what} {name} is {encoding} text (it starts with a {encoding} "
                             f"byte-order mark); save it as UTF-8")
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise ValueError(f"{what} {name} holds NUL bytes (line {line}, byte {nul}): not UTF-8 "
                         f"text (UTF-16 without a byte-order mark?); save it as UTF-8")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ValueError(f"{what} {name} is not UTF-8 text (line {line}, byte {err.start}: "
                         f"{err.reason}); save it as UTF-8") from None


# A JSON string, escapes included: what the element count skips.
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def _json_elements(text: str, limit: int) -> int:
    """An upper bound on the elements of a JSON text: its ``[ { , :`` outside strings."""
    count = text.count(",") + text.count(":") + text.count("[") + text.count("{")
    if count <= limit:
        return count                 # strings can only add to the count
    bare = _JSON_STRING.sub("", text)
    return bare.count(",") + bare.count(":") + bare.count("[") + bare.count("{")


class _DuplicateKey(Exception):
    """A JSON object naming one key twice; :func:`parse_json` names the file."""


def _unique_pairs(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def read_toml_file(path, what: str) -> dict:
    """The TOML of the regular file at ``path`` (:func:`read_regular_file`, at most
    :data:`MAX_CONFIG_BYTES`), a ``ValueError`` naming ``what`` and the file if it is not TOML."""
    import tomllib                          # the readers of the package's TOML files only
    text = read_regular_file(path, what, MAX_CONFIG_BYTES)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{what} {path}: not TOML: {exc}") from None


def parse_json(text: str, where: str, *, unique_keys: bool = False):
    """``json.loads(text)``, bounded, every way the text fails a ``ValueError`` naming ``where``:
    more than :data:`MAX_JSON_ELEMENTS` elements (before parsing), malformed text, nesting past
    the recursion limit, integers of over 4,300 digits, and with ``unique_keys`` a key named
    twice in one object."""
    limit = MAX_JSON_ELEMENTS
    if _json_elements(text, limit) > limit:
        raise ValueError(f"{where} holds more than {limit:,} JSON elements, more than any file "
                         f"rooflinekit reads (its parsed form would not fit in memory)")
    try:
        return json.loads(text, object_pairs_hook=_unique_pairs if unique_keys else None)
    except _DuplicateKey as err:
        raise ValueError(f"{where}: key {show(err.args[0])} appears twice in one object (the "
                         f"last would silently win); keep one") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{where} is not valid JSON ({err})") from None
    except RecursionError:
        raise ValueError(f"{where} nests JSON too deeply to read (a real file nests a few "
                         f"levels)") from None
    except ValueError as err:          # an integer beyond Python's digit limit
        raise ValueError(f"{where} holds a number too long to read ({str(err)[:120]})") \
            from None


class _YamlRefused(Exception):
    """What the bounded YAML loader refuses, with the line; :func:`parse_yaml` names the file."""


@functools.lru_cache(maxsize=None)
def _yaml_loader():
    """A safe YAML loader class (libyaml's parser where installed) that bounds nodes and nesting."""
    import yaml
    from yaml.composer import Composer
    from yaml.constructor import SafeConstructor
    from yaml.events import AliasEvent
    from yaml.resolver import Resolver

    class Bounded:
        def compose_document(self):
            self._nodes = self._depth = 0
            return super().compose_document()

        def compose_node(self, parent, index):
            event = self.peek_event()
            line = event.start_mark.line + 1 if event.start_mark is not None else "?"
            if isinstance(event, AliasEvent):
                raise _YamlRefused(f"line {line}: YAML aliases (*{str(event.anchor)[:40]}) are "
                                   f"refused; a report never needs one, and aliases can expand "
                                   f"without bound")
            self._nodes += 1
            if self._nodes > MAX_YAML_NODES:
                raise _YamlRefused(f"holds more than {MAX_YAML_NODES:,} nodes, more than any "
                                   f"report (save a large report as JSON)")
            self._depth += 1
            if self._depth > MAX_NESTING:
                raise _YamlRefused(f"line {line}: nests deeper than {MAX_NESTING} levels, "
                                   f"more than any report")
            try:
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

    try:
        from yaml._yaml import CParser
    except ImportError:                # no libyaml: PyYAML's own parser, slower
        return type("BoundedSafeLoader", (Bounded, yaml.SafeLoader), {})

    class BoundedCSafeLoader(Bounded, Composer, SafeConstructor, Resolver, CParser):
        def __init__(self, stream):
            CParser.__init__(self, stream)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            Composer.__init__(self)

    return BoundedCSafeLoader


def parse_yaml(text: str, where: str):
    """One YAML document's plain data (PyYAML's safe constructor), bounded: aliases, more than
    :data:`MAX_YAML_NODES` nodes or nesting past :data:`MAX_NESTING` are refused, a
    ``ValueError`` naming ``where``. Needs PyYAML."""
    import yaml

    try:
        return yaml.load(text, Loader=_yaml_loader())
    except _YamlRefused as err:
        raise ValueError(f"{where}: {err}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = str(getattr(exc, "problem", None) or type(exc).__name__)[:200]
        raise ValueError(f"{where}: not a YAML document{at}: {problem}") from None
    except RecursionError:
        raise ValueError(f"{where}: nests too deeply to read, more than any report") from None
    except ValueError as err:          # an integer beyond Python's digit limit
        raise ValueError(f"{where} holds a number too long to read ({str(err)[:120]})") \
            from None
