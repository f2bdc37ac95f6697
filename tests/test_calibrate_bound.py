"""A measurement faster than physics is a slip, refused before the fit: more than 2× below the
ideal roofline's time for its row (seconds typed in a ``_ms`` column, say)."""

import csv
from pathlib import Path

import pytest

from rooflinekit.calibrate import calibrate, read_measurements

PUBLIC = Path(__file__).parent / "data" / "measurements" / "public.csv"


def _rows():
    lines = [line for line in PUBLIC.read_text().splitlines() if not line.startswith("#")]
    return list(csv.DictReader(lines))


def _write(rows, path):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_seconds_in_the_millisecond_columns_are_refused(tmp_path):
    rows = _rows()[:6]
    for row in rows:
        for column in ("ttft_ms", "itl_ms", "tpot_ms"):
            if row[column]:
                row[column] = str(float(row[column]) / 1000)
    ds = read_measurements(_write(rows, tmp_path / "seconds.csv"))
    with pytest.raises(ValueError, match=r"measurement row 0: .* more than 2x below the ideal "
                                         r"roofline's .* seconds in a millisecond column"):
        calibrate(ds, n_resamples=0)


def test_the_public_rows_are_all_within_the_bound():
    calibrate(read_measurements(PUBLIC), n_resamples=0)


def test_one_row_three_times_faster_than_physics_is_named(tmp_path):
    rows = _rows()[:6]
    i = next(k for k, r in enumerate(rows) if r["tpot_ms"])
    rows[i]["tpot_ms"] = str(float(rows[i]["tpot_ms"]) / 3 / 2.5)
    ds = read_measurements(_write(rows, tmp_path / "fast.csv"))
    with pytest.raises(ValueError, match=f"measurement row {i}: tpot_ms"):
        calibrate(ds, n_resamples=0)
