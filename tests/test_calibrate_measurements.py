"""Tests of rooflinekit.calibrate.measurements: the measurement table and its CSV/JSON files.

The reader of ``vllm bench serve`` results is tested with the other engine readers
(``tests/test_readers.py``).

Reference data live in ``tests/data/measurements`` (see its README for provenance).
"""

import math
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from rooflinekit.calibrate.measurements import (MEASUREMENT_COLUMNS, concat_measurements,
                                      measurements_from_records, measurements_to_records,
                                      read_measurements, write_measurements)

DATA = Path(__file__).parent / "data" / "measurements"
PUBLIC = DATA / "public.csv"
LAMBDA_JSON = DATA / "vllm_result_lambda_h100_llama3_8b.json"


def _row(**kw):
    row = {"model": "llama-3.1-8b", "gpu": "h100", "tp": 1, "batch_size": 1,
           "prompt_tokens": 512, "output_tokens": 128, "itl_ms": 10.0, "source": "test"}
    row.update(kw)
    return row


@pytest.fixture(scope="module")
def public():
    return read_measurements(PUBLIC)


# -- the measurement format ---------------------------------------------------------------------

def test_records_to_dataset_si_units():
    ds = measurements_from_records([_row(ttft_ms=250.0, tpot_ms=12.5, output_throughput=80)])
    assert ds.sizes["measurement"] == 1
    assert ds["ttft"].item() == pytest.approx(0.25, rel=1e-12)      # 250 ms = 0.25 s, exact
    assert ds["tpot"].item() == pytest.approx(0.0125, rel=1e-12)
    assert ds["itl"].item() == pytest.approx(0.010, rel=1e-12)
    assert ds["ttft"].attrs["units"] == "s"
    assert ds["tp"].dtype == np.int64
    assert math.isnan(ds["context_length"].item())                  # not given: derived later


@pytest.mark.parametrize("suffix", [".csv", ".json"])
def test_write_read_round_trip(tmp_path, public, suffix):
    path = write_measurements(public, tmp_path / f"m{suffix}")
    back = read_measurements(path)
    for var in ("ttft", "itl", "tpot", "batch_size", "prompt_tokens", "output_tokens"):
        np.testing.assert_allclose(back[var].values, public[var].values, rtol=1e-11)
    assert list(back["source"].values) == list(public["source"].values)
    assert list(back["dtype"].values) == list(public["dtype"].values)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 8), st.floats(1, 4096), st.floats(1, 1e5),
                          st.floats(0, 1e4), st.one_of(st.none(), st.floats(0.001, 1e5))),
                min_size=1, max_size=6))
def test_round_trip_property(tmp_path_factory, rows):
    """Any valid rows survive CSV and JSON unchanged (12 significant digits)."""
    records = [_row(tp=tp, batch_size=b, prompt_tokens=p, output_tokens=o, ttft_ms=t)
               for tp, b, p, o, t in rows]
    ds = measurements_from_records(records)
    folder = tmp_path_factory.mktemp("rt")
    for suffix in (".csv", ".json"):
        back = read_measurements(write_measurements(ds, folder / f"x{suffix}"))
        for var in ("tp", "batch_size", "prompt_tokens", "output_tokens", "ttft", "itl"):
            np.testing.assert_allclose(back[var].values, ds[var].values, rtol=1e-11)


def test_records_round_trip_through_dicts(public):
    again = measurements_from_records(measurements_to_records(public))
    xr.testing.assert_allclose(again[["ttft", "tpot", "batch_size"]],
                               public[["ttft", "tpot", "batch_size"]])


def test_concat_renumbers(public):
    both = concat_measurements(public, public)
    assert both.sizes["measurement"] == 2 * public.sizes["measurement"]
    assert list(both["measurement"].values) == list(range(both.sizes["measurement"]))


# -- bad input: ValueError/TypeError naming the field ------------------------------------------

@pytest.mark.parametrize("records, match", [
    ([], "measurements is empty"),
    ([{k: v for k, v in _row().items() if k != "gpu"}], "missing required column.*'gpu'"),
    ([_row(source="")], "missing required column.*'source'"),
    ([_row(itl_ms=-1.0)], "itl_ms must be >= 0"),
    ([_row(ttft_ms=-5)], "ttft_ms must be >= 0"),
    ([_row(itl_ms=None)], "at least one of ttft_ms, itl_ms, tpot_ms"),
    ([_row(tp=0)], "tp must be a whole number >= 1"),
    ([_row(tp=1.5)], "tp must be a whole number >= 1"),
    ([_row(batch_size=0)], "batch_size must be > 0"),
    ([_row(prompt_tokens=0)], "prompt_tokens must be >= 1"),
    ([_row(itl_ms="fast")], "itl_ms must be a number"),
    ([_row(itl_ms=float("inf"))], "itl_ms must be finite"),
    ([_row(dtype="fp7")], "dtype: unknown dtype"),
    ([_row(latency=3)], "unknown column.*'latency'"),
])
def test_bad_records(records, match):
    with pytest.raises(ValueError, match=match):
        measurements_from_records(records)


def test_bad_record_type():
    with pytest.raises(TypeError, match="measurement 0: each row must be a mapping"):
        measurements_from_records([("llama", "h100")])


def test_bad_files(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ValueError, match="measurements is empty"):
        read_measurements(empty)
    missing = tmp_path / "missing.csv"
    missing.write_text("model,gpu,tp,batch_size,prompt_tokens,output_tokens,itl_ms\n"
                       "llama-3.1-8b,h100,1,1,10,10,5\n")
    with pytest.raises(ValueError, match="missing required column.*'source'"):
        read_measurements(missing)
    with pytest.raises(ValueError, match="must end in .csv or .json"):
        read_measurements(tmp_path / "m.txt")
    with pytest.raises(ValueError, match="read_vllm_result"):
        read_measurements(LAMBDA_JSON)
    header_only = tmp_path / "header.csv"
    header_only.write_text(",".join(MEASUREMENT_COLUMNS) + "\n")
    with pytest.raises(ValueError, match="measurements is empty"):
        read_measurements(header_only)
