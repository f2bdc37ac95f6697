"""The measurement table: its columns, its checks and its own CSV/JSON files.

One row per measured configuration (model, GPU, tensor-parallel degree, weight format, batch size
or client concurrency, prompt and output lengths, measured TTFT, ITL/TPOT, throughput and a
``source``), held as an :class:`xarray.Dataset` over ``measurement`` in SI units
(:func:`measurements_from_records`), read and written as CSV or JSON (:func:`read_measurements`,
:func:`write_measurements`) and joined (:func:`concat_measurements`). The files carry
milliseconds in columns whose names say so (``ttft_ms``); engine benchmark outputs become rows
in :mod:`rooflinekit.calibrate.readers`.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import xarray as xr

from rooflinekit._validation import (MAX_COUNT, MAX_MAGNITUDE, describe, parse_json,
                                     read_regular_file, show)
from rooflinekit import units
from rooflinekit.dtypes import BYTES_PER_ELEMENT, dtype_name
from rooflinekit.profiles import named_release, profiled_engine

__all__ = [
    "MEASUREMENT", "MEASUREMENT_COLUMNS", "REQUIRED_COLUMNS", "TTFT_KINDS",
    "measurements_from_records", "measurements_to_records", "read_measurements",
    "write_measurements", "concat_measurements", "measured_engine",
]

#: The largest measurement file read [bytes]: 64 MiB. A row takes 100-300 bytes, so this is
#: some 300,000 rows; the public measurements behind the package's calibration take 20 kB.
MAX_MEASUREMENT_BYTES = 64 * 2**20

#: The most rows a measurement file may hold: 100,000. Each row is a benchmark run, and a
#: calibration of thousands of runs is already large; read, a row costs about 2 kB (the CSV
#: reader's dict of strings, then the columns), so the bound keeps a file under about 200 MB.
MAX_MEASUREMENT_ROWS = 100_000

#: Dimension of a measurement table (one row per measured configuration).
MEASUREMENT = "measurement"

#: Columns of the measurement files, in order. Times in milliseconds, throughput in tokens/s.
MEASUREMENT_COLUMNS = (
    "model", "gpu", "tp", "dtype", "batch_size", "prompt_tokens", "output_tokens",
    "context_length", "ttft_ms", "itl_ms", "tpot_ms", "output_throughput", "source", "notes",
    "kv_dtype", "ttft_kind", "engine",
)
#: What a measured TTFT is: one prompt's prefill ("isolated", the default), or the one prefill
#: step of ``batch_size`` prompts that arrived together ("static_batch").
TTFT_KINDS = ("isolated", "static_batch")
#: Columns a measurement must have (besides at least one of ttft_ms, itl_ms, tpot_ms).
REQUIRED_COLUMNS = ("model", "gpu", "tp", "batch_size", "prompt_tokens", "output_tokens", "source")
_TIME_COLUMNS = ("ttft_ms", "itl_ms", "tpot_ms")
# columns that count (GPUs, requests, tokens): at most MAX_COUNT, exact in float64 and int64
_COUNTS = ("tp", "batch_size", "prompt_tokens", "output_tokens", "context_length")
_TEXT = ("model", "gpu", "dtype", "source", "notes", "kv_dtype", "ttft_kind", "engine")
# file column -> (Dataset variable, factor to SI, units, long name)
_NUMERIC = {
    "tp": ("tp", 1, "1", "tensor-parallel degree"),
    "batch_size": ("batch_size", 1, "1", "batch size or client concurrency"),
    "prompt_tokens": ("prompt_tokens", 1, "tokens", "prompt length"),
    "output_tokens": ("output_tokens", 1, "tokens", "output length"),
    "context_length": ("context_length", 1, "tokens", "mean context during decode"),
    "ttft_ms": ("ttft", units.MS, "s", "time to first token"),
    "itl_ms": ("itl", units.MS, "s", "inter-token latency"),
    "tpot_ms": ("tpot", units.MS, "s", "time per output token"),
    "output_throughput": ("output_throughput", 1, "tokens/s", "output token throughput"),
}


def _is_blank(value) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip() == "" or value.strip().lower() in ("nan", "none", "null")
    return isinstance(value, float) and math.isnan(value)


def _number(row_no: int, column: str, value) -> float:
    if isinstance(value, bool):
        raise TypeError(f"measurement {row_no}: {column} must be a number; got {describe(value)}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"measurement {row_no}: {column} must be a number; got {show(value)}") \
            from None
    except OverflowError:            # an integer beyond float range
        number = math.inf
    if not math.isfinite(number):
        raise ValueError(f"measurement {row_no}: {column} must be finite; got {show(value)}")
    # a count past 2**53 wraps as int64 (tp 1e20 was stored as -9.2e18); a time of 1e300 ms
    # moved the fit
    if column in _COUNTS and abs(number) > MAX_COUNT:
        raise ValueError(f"measurement {row_no}: {column} must be at most 2**53 = "
                         f"{MAX_COUNT:,}; got {show(value)}")
    if abs(number) > MAX_MAGNITUDE:
        raise ValueError(f"measurement {row_no}: {column} must be at most {MAX_MAGNITUDE:g} in "
                         f"magnitude; got {show(value)}")
    return number


def measurements_from_records(records: Iterable[Mapping]) -> xr.Dataset:
    """Validate measurement rows and return them as a Dataset over ``measurement`` (SI units).

    Parameters
    ----------
    records : iterable of mapping
        One mapping per measured configuration with the keys of :data:`MEASUREMENT_COLUMNS`:

        - ``model``, ``gpu`` : catalogue names (or names given to :func:`calibrate` via
          ``models=`` / ``gpus=``); ``gpu`` is **one** accelerator, ``tp`` says how many.
        - ``tp`` [1] : tensor-parallel degree, whole number ≥ 1.
        - ``dtype`` : weight format when it differs from the model's ("fp8", "int4", ...);
          optional.
        - ``batch_size`` [1] : decode batch, or the client concurrency of a serving benchmark;
          > 0 (a time-averaged concurrency may be fractional).
        - ``prompt_tokens``, ``output_tokens`` [tokens] : mean lengths, ≥ 1 and ≥ 0.
        - ``context_length`` [tokens] : mean context during decode; optional, default
          ``prompt_tokens + output_tokens / 2``.
        - ``ttft_ms``, ``itl_ms``, ``tpot_ms`` [ms] : measured times, ≥ 0; at least one of them.
        - ``output_throughput`` [tokens/s] : optional.
        - ``source`` : where the row comes from (URL, file, run id); required, non-empty.
        - ``notes`` : optional free text.
        - ``kv_dtype`` : KV-cache format when it differs from the model's (vLLM's
          ``--kv-cache-dtype fp8`` → "fp8"); optional.
        - ``ttft_kind`` : "isolated" (default: the TTFT of one prompt's prefill) or
          "static_batch" (``batch_size`` prompts arrived together and shared one prefill step,
          each attending to its own tokens only,
          as in ``vllm bench serve --request-rate inf``): see :data:`TTFT_KINDS`.
        - ``engine`` : engine and version ("vllm 0.6.0", "sglang 0.4.1"); optional, for
          ``cross_validate(by="engine")``.

    Returns
    -------
    xarray.Dataset
        Over ``measurement``: text variables ``model``, ``gpu``, ``dtype``, ``source``, ``notes``
        and numeric ``tp``, ``batch_size``, ``prompt_tokens``, ``output_tokens``,
        ``context_length``, ``ttft`` [s], ``itl`` [s], ``tpot`` [s], ``output_throughput``
        [tokens/s], each with ``units``. A time that was not measured is NaN.

    Raises
    ------
    ValueError
        No rows; a required column missing; a value negative, non-finite or out of range; a row
        with none of the three times. The message names the row and the field.
    TypeError
        A row that is not a mapping.
    """
    rows = list(records)
    if not rows:
        raise ValueError("measurements is empty: give at least one row")
    columns = {}
    for name in MEASUREMENT_COLUMNS:
        columns[name] = []
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise TypeError(f"measurement {i}: each row must be a mapping of column -> value; "
                            f"got {describe(row)}")
        unknown = sorted(set(row) - set(MEASUREMENT_COLUMNS))
        if unknown:
            more = f" and {len(unknown) - 3:,} more" if len(unknown) > 3 else ""
            raise ValueError(f"measurement {i}: unknown column(s) "
                             f"{', '.join(map(show, unknown[:3]))}{more};"
                             f" allowed: {', '.join(MEASUREMENT_COLUMNS)}")
        missing = [c for c in REQUIRED_COLUMNS if c not in row or _is_blank(row[c])]
        if missing:
            raise ValueError(f"measurement {i}: missing required column(s) "
                             f"{', '.join(map(repr, missing))}")
        if all(_is_blank(row.get(c)) for c in _TIME_COLUMNS):
            raise ValueError(f"measurement {i}: give at least one of ttft_ms, itl_ms, tpot_ms")
        for col in _TEXT:
            value = row.get(col)
            columns[col].append("" if _is_blank(value) else str(value).strip())
        for col in _NUMERIC:
            value = row.get(col)
            columns[col].append(math.nan if _is_blank(value) else _number(i, col, value))
        tp = columns["tp"][-1]
        if tp < 1 or tp != round(tp):
            raise ValueError(f"measurement {i}: tp must be a whole number >= 1; "
                             f"got {show(row['tp'])}")
        if columns["batch_size"][-1] <= 0:
            raise ValueError(f"measurement {i}: batch_size must be > 0; "
                             f"got {show(row['batch_size'])}")
        if columns["prompt_tokens"][-1] < 1:
            raise ValueError(f"measurement {i}: prompt_tokens must be >= 1, "
                             f"got {show(row['prompt_tokens'])}")
        for col in ("output_tokens", "context_length", *_TIME_COLUMNS, "output_throughput"):
            value = columns[col][-1]
            if not math.isnan(value) and value < 0:
                raise ValueError(f"measurement {i}: {col} must be >= 0; got {show(row[col])}")
        for col in ("dtype", "kv_dtype"):
            if columns[col][-1]:
                try:
                    columns[col][-1] = dtype_name(columns[col][-1])
                except ValueError:
                    raise ValueError(f"measurement {i}: {col}: unknown dtype "
                                     f"{show(columns[col][-1])}; allowed: "
                                     f"{', '.join(sorted(BYTES_PER_ELEMENT))}") from None
        kind = columns["ttft_kind"][-1] or "isolated"
        if kind not in TTFT_KINDS:
            raise ValueError(f"measurement {i}: ttft_kind must be one of "
                             f"{', '.join(map(repr, TTFT_KINDS))}; got {show(kind)}")
        columns["ttft_kind"][-1] = kind
    n = len(rows)
    data = {}
    for col in _TEXT:
        data[col] = ((MEASUREMENT,), np.array(columns[col], dtype=object))
    for col, (var, factor, unit, long_name) in _NUMERIC.items():
        values = np.asarray(columns[col], dtype=np.float64) * factor
        if var == "tp":
            values = values.astype(np.int64)
        data[var] = ((MEASUREMENT,), values, {"units": unit, "long_name": long_name})
    return xr.Dataset(data, coords={MEASUREMENT: np.arange(n)})


def _check_measurements(measurements) -> xr.Dataset:
    if isinstance(measurements, xr.Dataset):
        needed = ["model", "gpu", "tp", "batch_size", "prompt_tokens", "output_tokens", "ttft",
                  "itl", "tpot", "source"]
        missing = [v for v in needed if v not in measurements]
        if missing:
            raise ValueError(f"measurements lack variable(s) {', '.join(map(repr, missing))}; "
                             f"build them with measurements_from_records or read_measurements")
        if measurements.sizes.get(MEASUREMENT, 0) == 0:
            raise ValueError("measurements is empty: give at least one row")
        return measurements
    if isinstance(measurements, (str, Path)):
        return read_measurements(measurements)
    if isinstance(measurements, Iterable) and not isinstance(measurements, Mapping):
        return measurements_from_records(measurements)
    raise TypeError(f"measurements must be a Dataset, a list of rows or a file path; "
                    f"got {describe(measurements)}")


def measurements_to_records(measurements: xr.Dataset) -> list[dict]:
    """Rows of a measurement Dataset in file units (ms, tokens/s); blanks for unmeasured values."""
    ds = _check_measurements(measurements)
    records = []
    for i in range(ds.sizes[MEASUREMENT]):
        row = {}
        for col in MEASUREMENT_COLUMNS:
            if col in _TEXT:
                row[col] = str(ds[col].values[i]) if col in ds else ""
                continue
            var, factor, _, _ = _NUMERIC[col]
            value = float(ds[var].values[i]) if var in ds else math.nan
            if math.isnan(value):
                row[col] = None
            else:
                value = value / factor
                row[col] = int(round(value)) if var == "tp" else _tidy(value)
        records.append(row)
    return records


def _tidy(value: float):
    """A float as written to files: whole numbers without ``.0``, else 12 significant digits."""
    if value == round(value) and abs(value) < 1e15:
        return int(round(value))
    return float(f"{value:.12g}")


def read_measurements(path) -> xr.Dataset:
    """Read a measurement file (``.csv`` or ``.json``) into a Dataset (see
    :func:`measurements_from_records` for the columns).

    A JSON file holds a list of rows, or an object with a ``"measurements"`` list. For the result
    JSON of ``vllm bench serve`` use :func:`rooflinekit.calibrate.readers.read_vllm_result`.

    The file must be a regular file of UTF-8 text (a byte-order mark is dropped) of at most
    :data:`MAX_MEASUREMENT_BYTES` and :data:`MAX_MEASUREMENT_ROWS` rows; errors name the file
    and the line, row or field.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".json"):
        raise ValueError(f"{path}: measurement files must end in .csv or .json; got "
                         f"{show(suffix)}")
    text = read_regular_file(path, "measurement file", MAX_MEASUREMENT_BYTES)
    if suffix == ".csv":
        return _from_file(path, _csv_rows(text, path))
    payload = parse_json(text, str(path), unique_keys=True)
    if isinstance(payload, Mapping):
        if "measurements" in payload:
            payload = payload["measurements"]
            if not isinstance(payload, list):
                raise TypeError(f"{path}: field 'measurements' must be a list of rows; got "
                                f"{describe(payload)}")
        elif "mean_ttft_ms" in payload or "median_tpot_ms" in payload:
            raise ValueError(f"{path} is a vllm bench serve result, not a measurement file; "
                             f"read it with read_vllm_result(path, model=..., gpu=...)")
        else:
            raise ValueError(f"{path}: a measurement JSON file holds a list of rows or an "
                             f"object with a 'measurements' list")
    elif not isinstance(payload, list):
        raise TypeError(f"{path}: a measurement JSON file holds a list of rows or an object "
                        f"with a 'measurements' list; got {describe(payload)}")
    if len(payload) > MAX_MEASUREMENT_ROWS:
        raise ValueError(_too_many_rows(path))
    return _from_file(path, payload)


def _too_many_rows(path) -> str:
    return (f"{path} holds more than {MAX_MEASUREMENT_ROWS:,} rows, more than any calibration "
            f"needs; split it or keep a sample of the runs")


def _csv_rows(text: str, path: Path) -> list[dict]:
    """The rows of a measurement CSV (``#`` lines are comments); errors name the file's line."""
    line = 0

    def lines():
        nonlocal line
        for line, row in enumerate(io.StringIO(text, newline=""), 1):
            if not row.lstrip().startswith("#"):
                yield row

    reader = csv.DictReader(lines())
    try:
        if reader.fieldnames is None:
            raise ValueError(f"{path}: measurements is empty: no header row")
        header, seen = line, {}
        for position, key in enumerate(reader.fieldnames, 1):
            if key in seen:
                # csv.DictReader keeps the last of two equal names: the other column's values
                # would be dropped without a word
                raise ValueError(f"{path}, line {header}: column {show(key)} appears twice "
                                 f"(columns {seen[key]} and {position}); keep one")
            seen[key] = position
        missing = [c for c in REQUIRED_COLUMNS if c not in reader.fieldnames]
        if missing:
            raise ValueError(f"{path}: missing required column(s) "
                             f"{', '.join(map(repr, missing))}")
        rows = []
        for row in reader:
            if len(rows) == MAX_MEASUREMENT_ROWS:
                raise ValueError(_too_many_rows(path))
            rows.append({k: v for k, v in row.items() if k is not None})
    except csv.Error as err:
        if "field larger than field limit" in str(err):
            raise ValueError(f"{path}, line {line}: a field longer than "
                             f"{csv.field_size_limit():,} characters, more than any "
                             f"measurement holds") from None
        raise ValueError(f"{path}, line {line}: not a CSV row ({str(err)[:120]})") from None
    return rows


def _from_file(path: Path, rows) -> xr.Dataset:
    """:func:`measurements_from_records` of a file's rows; errors name the file, and the table
    remembers it (``attrs["file"]``) so that later errors (an unknown model) can name it too."""
    try:
        ds = measurements_from_records(rows)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{path}: {exc}") from None
    ds.attrs["file"] = str(path)
    return ds


def write_measurements(measurements, path) -> Path:
    """Write measurements to ``path`` as CSV (``.csv``) or JSON (``.json``) and return the path."""
    records = measurements_to_records(measurements)
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        with path.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=MEASUREMENT_COLUMNS, lineterminator="\n")
            writer.writeheader()
            for row in records:
                writer.writerow({k: "" if v is None else v for k, v in row.items()})
        return path
    if suffix == ".json":
        with path.open("w", encoding="utf-8") as fh:
            json.dump({"measurements": records}, fh, indent=1)
            fh.write("\n")
        return path
    raise ValueError(f"{path}: measurement files must end in .csv or .json; got {show(suffix)}")


def concat_measurements(*tables) -> xr.Dataset:
    """Join measurement tables into one, renumbering ``measurement``."""
    if not tables:
        raise ValueError("measurements is empty: give at least one table")
    records = [row for table in tables for row in measurements_to_records(table)]
    return measurements_from_records(records)


#: How the readers name the serving engines in a measurement's ``engine`` text, beside the
#: names ``engine=`` takes (:data:`rooflinekit.profiles.ENGINE_NAMES`).
ENGINE_ALIASES = {"tensorrt-llm": "trtllm", "tensorrt_llm": "trtllm", "trt-llm": "trtllm"}


def measured_engine(measurements: xr.Dataset) -> str | None:
    """The serving engine every measured run names, as a planner's ``engine=`` names it.

    Parameters
    ----------
    measurements : xarray.Dataset
        A measurement table (:func:`read_measurements`); its ``engine`` text per run, as the
        readers write it: ``"vllm 0.10.1"``, ``"tensorrt-llm 0.21.0"``, ``"sglang"``.

    Returns
    -------
    str or None
        ``"NAME@VERSION"`` (``"vllm@0.10.1"``, ``"trtllm@0.21.0"``) where every run names the
        same engine with a profile and the same release; the name alone where their versions
        differ, are missing or are not release numbers; ``None`` where a run names none, the
        runs name several engines, or one without a profile (``"lmdeploy 0.9"``): a
        calibration then plans with the default engine's scheduler and memory rule.

    See Also
    --------
    rooflinekit.profiles.Calibration : its ``serving_engine``, which :func:`calibrate` sets
        from this.
    """
    if "engine" not in measurements:
        return None
    runs = [str(text).strip().lower().split() for text in measurements["engine"].values]
    if not all(runs):                     # a run that names no engine
        return None
    names = {ENGINE_ALIASES.get(words[0], words[0]) for words in runs}
    versions = {words[1] if len(words) > 1 else None for words in runs}
    if len(names) != 1 or not profiled_engine(next(iter(names))):
        return None
    (name,), version = names, (versions.pop() if len(versions) == 1 else None)
    if version is not None and named_release(f"{name}@{version}") is not None:
        return f"{name}@{version}"
    return name
