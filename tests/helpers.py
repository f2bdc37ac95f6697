"""Small helpers shared by test modules (fixtures live in conftest.py)."""

import importlib.util
from pathlib import Path

import numpy as np
import xarray as xr

#: The repository's scripts/ folder (development scripts, not part of the package).
SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_script(name: str):
    """``scripts/<name>.py`` as a module, run afresh."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read_sharegpt_sample(n=None):
    """The first ``n`` (default all) rows of rooflinekit/data/sharegpt_lengths.csv, read as a
    plain file: prompt and output tokens [tokens], the output as the client counted it (0 for
    an empty reply)."""
    import csv
    path = Path(__file__).resolve().parents[1] / "rooflinekit" / "data" / "sharegpt_lengths.csv"
    with open(path, newline="") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))[:n]
    assert [int(r["request"]) for r in rows] == list(range(len(rows)))
    return [int(r["prompt_tokens"]) for r in rows], [int(r["output_tokens"]) for r in rows]


def da(values, dim):
    """A labelled test axis: the values as a DataArray along ``dim`` with themselves as labels."""
    values = np.asarray(values, dtype=float)
    return xr.DataArray(values, dims=(dim,), coords={dim: values})


def assert_reexports(module, *homes):
    """A folder's face re-exports its parts: every public name of each of ``homes`` is in
    ``module.__all__`` and is the very object the home defines, and every name in
    ``module.__all__`` resolves."""
    for home in homes:
        for name in home.__all__:
            assert name in module.__all__, name
            assert getattr(module, name) is getattr(home, name), name
    for name in module.__all__:
        assert hasattr(module, name), name


def run_cli(capsys, *argv):
    """``rooflinekit argv...`` in process: ``(exit code, stdout, stderr)``, a usage error's
    code included."""
    from rooflinekit.cli.main import main
    try:
        code = main(list(argv))
    except SystemExit as exc:     # a usage error from the parser
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def assert_calibrate_matches_formulas(rows, knobs, phase, spec, context_length):
    """``calibrate.predict`` of ``rows`` with the knob set ``knobs`` in both phases equals, to
    1e-9, the roofline formula of ``phase`` with ``Engine(**knobs)``: ``decode_step_time`` at
    each row's batch size, or ``prefill_time``, at ``context_length`` and the row's ``tp``
    (1 where it has none); ``spec(row)`` gives the row's ``(model, gpu)`` specs."""
    import pytest

    import rooflinekit as rk
    from rooflinekit import roofline
    from rooflinekit.calibrate import Calibration, predict

    predicted = predict(rows, Calibration(prefill=knobs, decode=knobs))[phase].values
    engine = rk.Engine(**knobs)
    for row, value in zip(rows, predicted):
        model, gpu = spec(row)
        tp = row.get("tp", 1)
        expected = roofline.decode_step_time(model, gpu, row["batch_size"], context_length,
                                             tp=tp, engine=engine) if phase == "decode" else \
            roofline.prefill_time(model, gpu, context_length, tp=tp, engine=engine)
        assert value == pytest.approx(float(expected), rel=1e-9), row


def assert_paid_per_layer_on_a_grid(knob, payer, layers, other, decode):
    """A per-layer knob of 10 µs on a catalogue Dataset of two models: ``decode(models,
    engine)`` grows by ``layers × 10 µs`` for ``payer`` and not at all for ``other``; the
    knob's default is the ideal model's 0, to the bit."""
    import pytest

    import rooflinekit as rk
    from rooflinekit import catalog

    assert getattr(rk.Engine(), knob) == 0.0 == getattr(rk.IDEAL, knob)
    models = catalog.models(as_dataset=True).sel(model=[payer, other])
    assert (decode(models, rk.Engine()) == decode(models, rk.IDEAL)).all()
    grid = decode(models, rk.Engine(**{knob: 1e-5})) - decode(models, rk.IDEAL)
    assert float(grid.sel(model=payer)) == pytest.approx(layers * 1e-5, rel=1e-9)
    assert float(grid.sel(model=other)) == 0.0


def assert_paid_every_layer(knob, value, model, gpu, tp, layers, base):
    """``base`` with ``knob = value`` [s] takes ``layers × value`` longer than ``base`` for a
    decode step (8 sequences at 2,048 tokens) and for a 1,024-token prompt of ``model`` on
    ``tp`` × ``gpu``."""
    import pytest

    from rooflinekit import roofline

    paying = base.replace(**{knob: value})
    for time in (lambda e: roofline.decode_step_time(model, gpu, 8, 2048, tp=tp, engine=e),
                 lambda e: roofline.prefill_time(model, gpu, 1024, tp=tp, engine=e)):
        assert time(paying) - time(base) == pytest.approx(layers * value, rel=1e-9)
