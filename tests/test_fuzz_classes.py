"""The fuzz registry's input classes, drawn by hypothesis rather than listed.

``tests/test_fuzz.py`` spoils every argument of every public callable with a fixed list of bad
values. Here the same registry meets the classes those values stand for, generated: every
numpy number type at its extremes, integers beyond every fixed width, denormals, NaN and
infinity in each float width, booleans spelt as text, numbers spelt as text. The property is
the project's rule for bad input (never a crash, never a silent NaN): a call either raises
``ValueError``/``TypeError`` or returns a result without NaN and without a ``RuntimeWarning``.
A new public callable is covered by its registry entry alone. The readers meet special files
(a folder, a FIFO, ``/dev/null``, an empty file, binary bytes, a link to nowhere) the same way:
a clear error, never a hang or a traceback of another kind.
"""

import math
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_fuzz import REGISTRY, _call, _has_nan

#: Every numpy number type.
NUMPY_TYPES = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
               np.uint64, np.float16, np.float32, np.float64)


def _extremes(kind):
    if np.issubdtype(kind, np.integer):
        info = np.iinfo(kind)
        return [info.min, info.max, 0, 1, -1 if info.min < 0 else 2]
    info = np.finfo(kind)
    return [info.max, -info.max, info.tiny, info.smallest_subnormal, np.nan, np.inf, -np.inf,
            0.0, -0.0, 0.5]


numpy_numbers = st.sampled_from(NUMPY_TYPES).flatmap(
    lambda kind: st.sampled_from(_extremes(kind)).map(lambda v: kind(v)))
big_integers = st.one_of(st.integers(min_value=2**53 - 2, max_value=2**80),
                         st.integers(min_value=-2**80, max_value=-2**53 + 2),
                         st.just(10**400), st.just(-10**400))
denormals = st.sampled_from([5e-324, -5e-324, 2.2250738585072014e-308 / 3, 1e-310])
special_floats = st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 1e308, -1e308])
text_booleans = st.sampled_from(["true", "false", "True", "FALSE", "yes", "no", "on", "0", "1"])
text_numbers = st.sampled_from(["3", "0.5", "1e3", "nan", "inf", "-1", " 2 ", "0x10", "1_000"])
booleans = st.sampled_from([True, False, np.True_, np.False_])

#: One hostile value of any class.
hostile_values = st.one_of(numpy_numbers, big_integers, denormals, special_floats,
                           text_booleans, text_numbers, booleans)

PAIRS = [pytest.param(name, arg, id=f"{name}-{arg}")
         for name, entry in sorted(REGISTRY.items()) if not entry["label"]
         and name != "plan"                  # its every call is a search: tests/test_fuzz.py
         for arg in entry["spoil"]]


def test_every_callable_argument_is_drawn_for():
    assert len(PAIRS) > 200


_BASELINE_NAN = {}


def _baseline_has_nan(name) -> bool:
    """Whether the entry's valid call already holds NaN by design (a statistic of an empty
    tier, an acceptance rate without speculation): then only a refusal or a crash tells."""
    if name not in _BASELINE_NAN:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _BASELINE_NAN[name] = _has_nan(_call(name, REGISTRY[name], None))
    return _BASELINE_NAN[name]


@pytest.mark.parametrize("name, arg", PAIRS)
# derandomized: the suite runs the same examples on every machine (a red run names a case
# anyone reproduces); run with --hypothesis-seed and derandomize off to explore further
@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(value=hostile_values)
def test_a_drawn_value_is_refused_or_answered_without_nan(name, arg, value):
    entry = REGISTRY[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", UserWarning)     # a nearest-GPU profile says so
        try:
            result = _call(name, entry, None, arg, value)
        except (ValueError, TypeError):
            return
    assert _baseline_has_nan(name) or not _has_nan(result), \
        f"{name}({arg}={value!r}) returned NaN"


# -- special files, for every reader of a path ----------------------------------------------------

def _readers():
    from rooflinekit import catalog
    from rooflinekit.calibrate import load_calibration, read_measurements, read_vllm_result
    from rooflinekit.planning import fit_under_load
    from rooflinekit.profiles import (read_engine_memory_file, read_profile_file,
                                      read_scheduler_file)
    return {
        "read_engine_memory_file": read_engine_memory_file,
        "read_measurements": read_measurements,
        "load_calibration": load_calibration,
        "read_profile_file": read_profile_file,
        "read_scheduler_file": read_scheduler_file,
        "resolve_model": catalog.resolve_model,
        "read_vllm_result": lambda p: read_vllm_result(p, model="Llama-3.1-8B",
                                                       gpu="H100-SXM-80GB"),
        "fit_under_load": lambda p: fit_under_load([p, p], model="Llama-3.1-8B",
                                                   gpu="H100-SXM-80GB"),
    }


READERS = _readers()
SPECIAL = ("folder", "fifo", "dev null", "empty file", "binary bytes", "dangling link",
           "missing file", "link to a folder")


def _make(kind, folder):
    path = folder / f"input-{SPECIAL.index(kind)}.json"
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev null":
        return "/dev/null"
    elif kind == "empty file":
        path.write_bytes(b"")
    elif kind == "binary bytes":
        path.write_bytes(bytes(range(256)) * 4)
    elif kind == "dangling link":
        path.symlink_to(folder / "nowhere")
    elif kind == "link to a folder":
        (folder / "a-folder").mkdir(exist_ok=True)
        path.symlink_to(folder / "a-folder")
    return path


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX special files")
@pytest.mark.parametrize("reader", sorted(READERS))
@settings(max_examples=len(SPECIAL), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(SPECIAL))
def test_a_special_file_is_refused_cleanly(reader, kind, tmp_path_factory):
    path = _make(kind, tmp_path_factory.mktemp("special"))
    with pytest.raises((ValueError, TypeError, OSError)) as info:
        READERS[reader](path)
    # a path problem names the path; a content problem names what is wrong with it
    assert str(info.value).strip()


# -- existing outputs, for every command that writes one ------------------------------------------

#: Commands with --output, small enough to run many times (the sweep and the catalogue).
OUTPUT_COMMANDS = {
    "catalog": ["catalog", "gpus", "h100"],
    "sweep": ["sweep", "--models", "guide-70b", "--gpus", "h100", "--tp", "1",
              "--max-model-len", "1024", "--batch-size", "1", "--no-progress", "--report",
              "none"],
}
#: What may already stand where the output goes.
OUTPUT_STATES = ("nothing", "a file", "an empty folder", "a folder with a file",
                 "a link to a file", "a dangling link", "a missing parent folder")
OUTPUT_NAMES = ("out.csv", "out.json", "out.nc", "OUT.ZARR", "out.zarr", "out.CSV")


def _place(state, folder, name):
    """Put ``state`` at ``folder / name``; returns the path and what must survive unchanged."""
    path = folder / name
    keep = {}
    if state == "a file":
        path.write_text("precious\n")
        keep[path] = "precious\n"
    elif state == "an empty folder":
        path.mkdir()
    elif state == "a folder with a file":
        path.mkdir()
        (path / "precious.txt").write_text("precious\n")
        keep[path / "precious.txt"] = "precious\n"
    elif state == "a link to a file":
        target = folder / "target.txt"
        target.write_text("precious\n")
        path.symlink_to(target)
        keep[target] = "precious\n"
    elif state == "a dangling link":
        path.symlink_to(folder / "nowhere")
    elif state == "a missing parent folder":
        path = folder / "no-such-folder" / name
    return path, keep


@pytest.mark.parametrize("command", sorted(OUTPUT_COMMANDS))
@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(state=st.sampled_from(OUTPUT_STATES), name=st.sampled_from(OUTPUT_NAMES),
       force=st.booleans())
def test_an_existing_output_is_never_destroyed_unless_forced(command, state, name, force,
                                                              tmp_path_factory, capsys):
    """Whatever stands at ``--output``: the command succeeds (exit 0), or refuses in one line
    naming ``--output`` (exit 2); without ``--force`` nothing that was there is changed."""
    from helpers import run_cli
    folder = tmp_path_factory.mktemp("out")
    path, keep = _place(state, folder, name)
    argv = [*OUTPUT_COMMANDS[command], "--output", str(path), *(["--force"] if force else [])]
    code, out, err = run_cli(capsys, *argv)
    assert code in (0, 2), (state, name, force, err)
    if code == 2:
        assert err.count("\n") == 1 and "Traceback" not in err, err
    if not force:
        for kept, text in keep.items():
            assert kept.read_text() == text, (state, name)


# -- issue 30: the month's profile, the decision's options, its flip points, the profile reader --

import rooflinekit as rk  # noqa: E402
from test_fuzz import M, G, SLO, TRAFFIC, MONTH_REGISTRY, _call_month  # noqa: E402


@pytest.fixture(scope="module")
def month_plan():
    """The fleet the decision's entries price (the registry's "needs a plan")."""
    return {"plan": rk.plan(TRAFFIC, SLO, models=M, gpus=G, replicates=2, requests=20)}


MONTH_PAIRS = [pytest.param(name, arg, id=f"{name}-{arg}")
               for name, entry in sorted(MONTH_REGISTRY.items()) for arg in entry["spoil"]]


@pytest.mark.parametrize("name, arg", MONTH_PAIRS)
@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(value=hostile_values)
def test_the_month_takes_a_drawn_value_or_refuses_it(name, arg, value, month_plan):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            result = _call_month(name, month_plan, arg, value)
        except (ValueError, TypeError):
            return
    assert not _has_nan(result), f"{name}({arg}={value!r}) returned NaN"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX special files")
@settings(max_examples=len(SPECIAL), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(SPECIAL))
def test_a_special_profile_file_is_refused_cleanly(kind, tmp_path_factory):
    from rooflinekit.planning import read_profile
    path = _make(kind, tmp_path_factory.mktemp("special"))
    with pytest.raises((ValueError, TypeError, OSError)) as info:
        read_profile(path, period="15min")
    assert str(info.value).strip()
