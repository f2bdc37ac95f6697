"""Outputs a careless user or an attacker can abuse (issue 31, rows 1, 28, 29, 30 and 32).

- ``--output`` never destroys: an existing non-empty folder or an existing file is refused
  unless ``--force``; the path is checked before the work (its folder exists and is writable,
  it is none of the command's inputs, its extension is known, compared lower-case everywhere,
  and a ``.zarr`` name is written as zarr whatever its case).
- Text from files (a calibration's or a measurement's ``source``, a model folder's name) is
  printed escaped, one line: no raw control character reaches the terminal, no forged line.
- CSV cells that start with ``= + - @`` (or a tab or carriage return) are quoted with a leading
  ``'`` (OWASP's rule against formula injection).
- JSON says "none" with ``null`` and a ``reason``, never a sentinel; ``inf`` is ``"inf"`` and
  unknown (NaN) is ``null``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import shutil
from pathlib import Path

import pytest
import xarray as xr

from rooflinekit.cli import sweep as cli_sweep
from rooflinekit.cli import _output
from rooflinekit.cli.main import main

DATA = Path(__file__).parent / "data"
SWEEP = ["sweep", "--models", "guide-70b", "--gpus", "h100", "--tp", "1,8",
         "--max-model-len", "1024", "--batch-size", "1", "--no-progress"]
CATALOG = ["catalog", "gpus", "h100"]
HOSTILE = "evil\x1b[2J\nforged: all good"


def run(capsys, *argv):
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:     # a usage error from the parser
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def refused(code, out, err, *needles):
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert out == ""
    for needle in needles:
        assert needle in err, err


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def no_work(monkeypatch):
    """Make the sweep's work fail loudly: a refusal must come before it."""
    def boom(*args, **kwargs):
        raise AssertionError("the work ran before the output path was checked")
    monkeypatch.setattr(cli_sweep, "sweep", boom)


# -- row 1: an existing non-empty folder ---------------------------------------------------------

@pytest.mark.parametrize("argv", [CATALOG, SWEEP + ["--report", "none"]],
                         ids=["catalog", "sweep"])
def test_output_on_a_folder_with_files_is_refused(argv, capsys, tmp_path):
    folder = tmp_path / "p.zarr"
    folder.mkdir()
    (folder / "notes.txt").write_text("x\n")
    refused(*run(capsys, *argv, "--output", "p.zarr"), "--force", "p.zarr")
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]
    assert (folder / "notes.txt").read_text() == "x\n"


@pytest.mark.parametrize("argv", [CATALOG, SWEEP + ["--report", "none"]],
                         ids=["catalog", "sweep"])
def test_force_replaces_a_folder_and_an_empty_folder_needs_none(argv, capsys, tmp_path):
    pytest.importorskip("zarr")
    (tmp_path / "empty.zarr").mkdir()
    code, _, err = run(capsys, *argv, "--output", "empty.zarr")
    assert code == 0, err
    with xr.open_zarr(tmp_path / "empty.zarr") as back:
        assert back.sizes
    folder = tmp_path / "p.zarr"
    folder.mkdir()
    (folder / "notes.txt").write_text("x\n")
    code, _, err = run(capsys, *argv, "--output", "p.zarr", "--force")
    assert code == 0, err
    with xr.open_zarr(folder) as back:
        assert back.sizes


def test_the_library_save_refuses_to_destroy(tmp_path):
    pytest.importorskip("zarr")
    from rooflinekit import sweep as sw

    ds = sw.sweep("guide-70b", "h100", tp=[8], context_length=[1024], batch_size=[1])
    folder = tmp_path / "p.zarr"
    folder.mkdir()
    (folder / "notes.txt").write_text("x\n")
    with pytest.raises(FileExistsError, match="overwrite"):
        sw.save(ds, folder)
    assert (folder / "notes.txt").read_text() == "x\n"
    (tmp_path / "s.nc").write_text("old")
    with pytest.raises(FileExistsError, match="overwrite"):
        sw.save(ds, tmp_path / "s.nc")
    assert (tmp_path / "s.nc").read_text() == "old"
    sw.save(ds, folder, overwrite=True)
    with xr.open_zarr(folder) as back:
        xr.testing.assert_identical(ds, back.load())


# -- row 30: missing folder, existing file, the input itself, .ZARR ------------------------------

def test_a_missing_folder_is_refused_before_the_work(capsys, no_work):
    refused(*run(capsys, *SWEEP, "--output", "missing/out.json"), "--output", "missing")
    refused(*run(capsys, *SWEEP, "--report", "none", "--output", "missing/grid.nc"),
            "missing")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="needs a POSIX user that permissions bind (not root)")
def test_an_unwritable_folder_is_refused_before_the_work(capsys, tmp_path, no_work):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        refused(*run(capsys, *SWEEP, "--output", "locked/out.json"), "not writable")
    finally:
        locked.chmod(0o700)


def test_an_existing_file_is_kept_unless_forced(capsys, tmp_path):
    out = tmp_path / "out.json"
    out.write_text("precious\n")
    refused(*run(capsys, *CATALOG, "--output", "out.json"), "--force", "out.json")
    assert out.read_text() == "precious\n"
    code, _, err = run(capsys, *CATALOG, "--output", "out.json", "--force")
    assert code == 0, err
    assert json.loads(out.read_text())[0]["name"] == "H100-SXM-80GB"


def test_an_existing_file_is_refused_before_the_work(capsys, tmp_path, no_work):
    (tmp_path / "grid.nc").write_text("precious\n")
    refused(*run(capsys, *SWEEP, "--report", "none", "--output", "grid.nc"), "--force")
    assert (tmp_path / "grid.nc").read_text() == "precious\n"


def test_a_folder_where_a_file_goes_and_a_file_where_a_folder_goes(capsys, tmp_path):
    (tmp_path / "out.json").mkdir()
    refused(*run(capsys, *CATALOG, "--output", "out.json", "--force"), "folder")
    (tmp_path / "x.zarr").write_text("precious\n")
    refused(*run(capsys, *CATALOG, "--output", "x.zarr", "--force"), "x.zarr")
    assert (tmp_path / "x.zarr").read_text() == "precious\n"


@pytest.mark.parametrize("force", [[], ["--force"]], ids=["plain", "force"])
@pytest.mark.parametrize("how", ["same", "symlink", "hardlink", "inside-zarr"])
def test_the_input_file_is_never_the_output(how, force, capsys, tmp_path):
    runs = tmp_path / "runs.csv"
    shutil.copy(DATA / "measurements" / "public.csv", runs)
    before = runs.read_bytes()
    target = {"same": "runs.csv", "symlink": "link.csv", "hardlink": "hard.csv",
              "inside-zarr": "."}[how]
    if how == "symlink":
        (tmp_path / "link.csv").symlink_to(runs)
    elif how == "hardlink":
        os.link(runs, tmp_path / "hard.csv")
    elif how == "inside-zarr":
        store = tmp_path / "store.zarr"
        store.mkdir()
        shutil.move(runs, store / "runs.csv")
        runs, target = store / "runs.csv", "store.zarr"
    argv = ["calibrate", str(runs.relative_to(tmp_path)), "--resamples", "2", "--phase",
            "decode", "--fit", "step_overhead", "--output", target, *force]
    code, out, err = run(capsys, *argv)
    refused(code, out, err, target)
    if force:
        assert "input" in err
    assert runs.read_bytes() == before


def test_an_engine_file_is_an_input_too(capsys, tmp_path, no_work):
    shutil.copy(DATA / "measurements" / "calibration_public.json", tmp_path / "cal.json")
    refused(*run(capsys, *SWEEP, "--engine", "cal.json", "--output", "cal.json", "--force"),
            "input")


@pytest.mark.parametrize("name", ["X.ZARR", "y.Zarr"])
def test_an_upper_case_zarr_is_written_as_zarr(name, capsys, tmp_path):
    pytest.importorskip("zarr")
    code, _, err = run(capsys, *SWEEP, "--report", "none", "--output", name)
    assert code == 0, err
    assert (tmp_path / name).is_dir()
    with xr.open_zarr(tmp_path / name) as back:
        assert "fits" in back
    code, _, err = run(capsys, *CATALOG, "--output", f"c{name}")
    assert code == 0, err
    assert (tmp_path / f"c{name}").is_dir()


def test_the_library_save_reads_the_extension_in_any_case(tmp_path):
    pytest.importorskip("zarr")
    from rooflinekit import sweep as sw

    ds = sw.sweep("guide-70b", "h100", tp=[8], context_length=[1024], batch_size=[1])
    sw.save(ds, tmp_path / "S.ZARR")
    assert (tmp_path / "S.ZARR").is_dir()


def test_upper_case_extensions_are_one_rule(capsys, tmp_path):
    code, out, err = run(capsys, *CATALOG, "--output", "c.JSON")
    assert code == 0, err
    assert json.loads((tmp_path / "c.JSON").read_text())[0]["name"] == "H100-SXM-80GB"
    code, out, err = run(capsys, *SWEEP, "--report", "none", "--output", "g.NC")
    assert code == 0, err
    with xr.open_dataset(tmp_path / "g.NC") as back:
        assert "fits" in back


# -- row 28: text from files printed escaped, one line -------------------------------------------

def test_escape_text_shows_control_characters_on_one_line():
    assert _output.escape_text("a\x1b[2J\nb\tc\rd\x00e\u2028f\u202eg") == \
        "a\\x1b[2J\\nb\\tc\\rd\\x00e\\u2028f\\u202eg"
    assert _output.escape_text("plain text, ünïcode") == "plain text, ünïcode"


def _hostile_calibration(tmp_path):
    data = json.loads((DATA / "measurements" / "calibration_public.json").read_text())
    data["source"] = HOSTILE
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(data))
    return path


def _clean(text):
    assert "\x1b" not in text and "\r" not in text
    assert not any(line.startswith("forged") for line in text.splitlines()), text


@pytest.mark.parametrize("argv", [
    SWEEP,
    SWEEP + ["--report", "cheapest"],
    ["capacity", "guide-70b", "h100", "--tp", "8"],
], ids=["sweep", "sweep-cheapest", "capacity"])
def test_a_calibration_source_is_printed_escaped(argv, capsys, tmp_path):
    cal = _hostile_calibration(tmp_path)
    code, out, err = run(capsys, *argv, "--engine", cal)
    assert code == 0, err
    _clean(out)
    _clean(err)
    assert "\\x1b[2J\\nforged" in out


def test_a_measurement_source_is_printed_escaped(capsys, tmp_path):
    rows = list(csv.reader(
        line for line in (DATA / "measurements" / "public.csv").read_text().splitlines()
        if not line.startswith("#")))
    column = rows[0].index("source")
    for row in rows[1:]:
        row[column] = HOSTILE
    with open(tmp_path / "runs.csv", "w", newline="") as f:
        csv.writer(f).writerows(rows)
    code, out, err = run(capsys, "calibrate", "runs.csv", "--resamples", "2", "--phase",
                         "decode", "--fit", "step_overhead")
    assert code == 0, err
    _clean(out)
    _clean(err)


def test_a_model_folder_name_is_one_escaped_cell(capsys, tmp_path):
    folder = tmp_path / HOSTILE
    folder.mkdir()
    shutil.copy(DATA / "hf_configs" / "gpt2.json", folder / "config.json")
    code, out, err = run(capsys, "sweep", "--models", folder, "--gpus", "h100", "--tp", "1",
                         "--max-model-len", "1024", "--batch-size", "1", "--no-progress")
    assert code == 0, err
    _clean(out)
    assert "evil\\x1b[2J\\nforged: all good" in out


def test_an_error_naming_a_hostile_path_is_one_escaped_line(capsys, tmp_path):
    code, out, err = run(capsys, *SWEEP, "--engine", tmp_path / "no\x1b[2Jsuch\nforged.json")
    refused(code, out, err)
    _clean(err)


# -- row 29: formula injection in CSV -----------------------------------------------------------

def test_csv_cells_that_start_a_formula_are_quoted():
    out = io.StringIO()
    _output.write_csv([{"name": "=cmd|calc!A1", "b": "+1", "c": "-2+3", "d": "@SUM(A1)", "e": "\tx",
                "f": "\ry", "g": "safe", "n": -1.5, "i": -3}], out)
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    assert rows[1] == ["'=cmd|calc!A1", "'+1", "'-2+3", "'@SUM(A1)", "'\\tx", "'\\ry",
                       "safe", "-1.5", "-3"]


@pytest.mark.parametrize("command", ["sweep", "capacity"])
def test_a_model_folder_named_as_a_formula_is_quoted(command, capsys, tmp_path):
    folder = tmp_path / "=cmd|calc!A1"
    folder.mkdir()
    shutil.copy(DATA / "hf_configs" / "gpt2.json", folder / "config.json")
    argv = (["sweep", "--models", folder, "--gpus", "h100", "--tp", "1", "--max-model-len",
             "1024", "--batch-size", "1", "--no-progress"] if command == "sweep"
            else ["capacity", folder, "h100"])
    code, out, err = run(capsys, *argv, "--csv", "--output", "o.csv")
    assert code == 0, err
    cells = [c for row in csv.reader(io.StringIO(out)) for c in row]
    assert "'=cmd|calc!A1" in cells and "=cmd|calc!A1" not in cells
    assert (tmp_path / "o.csv").read_text() == out


# -- row 32: null and a reason instead of sentinels; inf apart from unknown -----------------------

@pytest.mark.parametrize("report, reason", [
    (["--report", "best"], "no configuration fits"),
    (["--report", "cheapest", "--itl", "1e-9"], "meets"),
])
def test_no_feasible_cell_is_null_with_a_reason(report, reason, capsys, tmp_path):
    argv = ["sweep", "--models", "guide-70b", "--gpus", "h100", "--tp", "1,8",
            "--max-model-len", "1024", "--batch-size", "1", "--no-progress", *report]
    if report[1] == "best":
        argv[6] = "1"                                  # tp 1: the 70B does not fit
    code, out, err = run(capsys, *argv, "--json", "--output", "r.json")
    assert code == 0, err
    (row,) = json.loads(out)["rows"]
    assert row["found"] is False and reason in row["reason"]
    for key in ("gpu", "tp", "context_length", "batch_size"):
        assert row[key] is None, row
    assert json.loads((tmp_path / "r.json").read_text())["rows"] == [row]
    code, out, err = run(capsys, *argv, "--csv")
    (back,) = csv.DictReader(io.StringIO(out))
    assert back["tp"] == "" and back["gpu"] == "" and reason in back["reason"]
    code, out, err = run(capsys, *argv)
    # no -1 sentinel in any cell (a date such as 2026-12-04 in the engine's label is not one)
    assert not re.search(r"(^|\s)-1(\s|$)", out) and reason in out


def test_a_found_row_has_a_null_reason(capsys):
    code, out, err = run(capsys, *SWEEP, "--json")
    (row,) = json.loads(out)["rows"]
    assert row["found"] is True and row["reason"] is None and row["tp"] == 8


def test_inf_and_unknown_are_told_apart_in_json():
    data = _output.to_jsonable({"a": math.inf, "b": -math.inf, "c": math.nan, "d": 1.5})
    assert data == {"a": "inf", "b": "-inf", "c": None, "d": 1.5}
    assert json.loads(json.dumps(data, allow_nan=False)) == data


def test_the_json_rule_is_in_the_help(capsys):
    with pytest.raises(SystemExit):
        main(["catalog", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert '"inf"' in help_text and "null" in help_text and "--force" in help_text


def test_the_reduction_fills_a_float_coordinate_with_nan_not_minus_one():
    import numpy as np

    from rooflinekit import sweep as sw

    ds = sw.sweep("guide-70b", "h100", tp=[1], context_length=[1024], batch_size=[1],
                  prefix_share=[0.0, 0.5])
    none = sw.best_configuration(ds)
    assert not none.found.any()
    assert np.isnan(none.prefix_share).all()                  # float: NaN, not -1.0
    assert (none.tp == -1).all() and (none.gpu == "").all()   # int and text keep their fill


def test_an_unwritable_folder_is_refused_whoever_runs(capsys, tmp_path, monkeypatch, no_work):
    locked = tmp_path / "locked"
    locked.mkdir()
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, *a, **k: False if Path(p) == locked
                        else real(p, mode, *a, **k))
    refused(*run(capsys, *SWEEP, "--output", locked / "out.json"), "not writable")
