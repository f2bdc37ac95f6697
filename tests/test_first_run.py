"""The one line a first run prints before a kernel compiles, and the silence after it.

A kernel of its own (a tiny ``@njit(cache=True)`` function in a module written to ``tmp_path``)
stands in for the simulator's: the rule is numba's cache, not the kernel's size, and compiling
the simulator's kernels afresh costs a minute.
"""

import importlib
import logging
import re
import subprocess
import sys
import time
import types

import pytest

from rooflinekit import cli
from rooflinekit.batching import _kernels

_MODULE = """
from numba import njit

@njit(cache=True)
def twice(x):
    return 2 * x
"""

_LOADER = """
import logging, sys
sys.path.insert(0, sys.argv[1])
logging.basicConfig(level=logging.INFO, format="%(message)s")
import tiny
from rooflinekit.batching import _kernels
with _kernels.compile_notice(tiny.twice):
    assert tiny.twice(21) == 42
"""


def _tiny(tmp_path, monkeypatch):
    """The module ``tiny`` written to ``tmp_path`` and imported (importable while it compiles:
    numba records its module in the cache)."""
    (tmp_path / "tiny.py").write_text(_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "tiny", raising=False)
    return importlib.import_module("tiny")


@pytest.mark.slow
def test_announced_once_before_a_compile_and_never_from_the_cache(tmp_path, monkeypatch, caplog):
    tiny = _tiny(tmp_path, monkeypatch)
    with caplog.at_level(logging.INFO, logger="rooflinekit"):
        with _kernels.compile_notice(tiny.twice):
            assert tiny.twice(21) == 42                 # compiles, writes the cache
        with _kernels.compile_notice(tiny.twice):       # loaded in this process: silent
            assert tiny.twice(1) == 2
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert "compiling" in lines[0] and "twice" in lines[0]
    assert "about 10 s" in lines[0]                     # no measured time: the default
    assert lines[1].startswith("twice compiled in ")
    # a new process finds the machine code on disk: nothing to say
    done = subprocess.run([sys.executable, "-c", _LOADER, str(tmp_path)], check=True,
                          capture_output=True, text=True, timeout=300)
    assert "compiling" not in done.stderr


def _uncached(name):
    """A kernel stand-in that is never cached (no overloads, no cache numba could read)."""
    return types.SimpleNamespace(overloads={}, py_func=types.SimpleNamespace(__name__=name))


def test_a_long_compile_beats_while_it_lasts(caplog):
    with caplog.at_level(logging.DEBUG, logger="rooflinekit"):
        with _kernels.compile_notice(_uncached("slow_kernel"), heartbeat=0.01):
            time.sleep(0.2)
    stages = [getattr(r, "compile", None) for r in caplog.records]
    assert stages[0] == "start" and stages[-1] == "end"
    assert stages.count("tick") >= 5 and set(stages[1:-1]) == {"tick"}


@pytest.mark.slow
def test_a_stale_cache_is_announced(tmp_path, monkeypatch):
    tiny = _tiny(tmp_path, monkeypatch)
    assert tiny.twice(1) == 2                           # cached for this source
    (tmp_path / "tiny.py").write_text(_MODULE + "\n# edited\n")   # a new stamp: stale
    done = subprocess.run([sys.executable, "-c", _LOADER, str(tmp_path)], check=True,
                          capture_output=True, text=True, timeout=300)
    assert done.stderr.count("compiling") == 1


def test_the_command_line_prints_a_compile_as_one_line_on_stderr(monkeypatch, capsys):
    def fake_run(args, out):
        with _kernels.compile_notice(_uncached("x"), heartbeat=0.01):
            time.sleep(0.1)
        logging.getLogger("rooflinekit").info("another notice")
        logging.getLogger("rooflinekit").debug("not shown")
        return 0
    args = cli.build_parser().parse_args(["guide"])
    main_module = importlib.import_module("rooflinekit.cli.main")
    monkeypatch.setattr(main_module, "build_parser", lambda: _Fixed(args, fake_run))
    assert cli.main(["guide"]) == 0
    captured = capsys.readouterr()
    first, second, rest = captured.err.split("\n")
    assert first.startswith("rooflinekit guide: compiling the simulator's x kernel")
    assert re.search(r"\) \.{3,} x compiled in 0\.\d s$", first)
    assert second == "rooflinekit guide: another notice" and rest == ""
    assert captured.out == ""
    # the handler leaves with the command: the library stays silent outside it
    assert not logging.getLogger("rooflinekit").handlers


class _Fixed:
    """A parser stand-in that returns ``args`` with ``run`` replaced."""

    def __init__(self, args, run):
        self.args = args
        args.run = run

    def parse_args(self, argv):
        return self.args


# --- compile_kernels: numba's cache filled ahead of a first run ----------------------------------


def test_compile_kernels_leaves_a_warm_cache_alone():
    # the suite's conftest filled the cache: every family is cached, nothing compiles
    from rooflinekit.batching import KERNEL_FAMILIES, compile_kernels
    assert compile_kernels() == ()
    assert compile_kernels("static", processes=1) == ()
    for family, kernels in KERNEL_FAMILIES.items():
        assert all(_kernels.is_cached(_kernels.KERNELS[k]) for k in kernels), family


def _cold_precompile(monkeypatch, answers):
    """compile_kernels over three cold families in two lanes, nothing compiled: each process
    it starts answers with the next return code of ``answers``; the lanes it was handed."""
    from rooflinekit.batching import precompile
    monkeypatch.setattr(_kernels, "is_cached", lambda kernel: False)
    monkeypatch.setattr(precompile, "_run_family", lambda family: None)
    handed = []

    def process(lane):
        handed.append(tuple(lane))
        return subprocess.CompletedProcess([], answers[len(handed) - 1], "", "boom")
    monkeypatch.setattr(precompile, "_compile_in_a_process", process)
    return precompile.compile_kernels, handed


def test_compile_kernels_tries_a_failed_lane_again_alone(monkeypatch):
    # a lane that fails (processes racing on one cache) compiles again, alone, after the rest
    run, handed = _cold_precompile(monkeypatch, [1, 0])
    families = ("continuous-tick", "static", "separate-tick")
    assert run(families, processes=2) == families
    assert len(handed) == 2 and handed[1] == handed[0]


def test_compile_kernels_reports_a_lane_that_fails_twice(monkeypatch):
    run, handed = _cold_precompile(monkeypatch, [1, 1])
    with pytest.raises(RuntimeError, match="also when compiled again alone:\nboom"):
        run(("continuous-tick", "static", "separate-tick"), processes=2)
    assert len(handed) == 2


@pytest.mark.parametrize("kwargs, error, match", [
    ({"families": ["nope"]}, ValueError, "families: unknown kernel family 'nope'"),
    ({"families": ["continuous-tick", "statik"]}, ValueError, "did you mean 'static'"),
    ({"processes": 0}, ValueError, "processes"),
    ({"processes": 1.5}, (TypeError, ValueError), "processes"),
    ({"processes": "2"}, TypeError, "processes"),
])
def test_compile_kernels_refuses_bad_input(kwargs, error, match):
    from rooflinekit.batching import compile_kernels
    with pytest.raises(error, match=match):
        compile_kernels(**kwargs)


_COLD = """
import json, sys
from rooflinekit.batching import compile_kernels, _kernels, precompile
if sys.argv[1] == "here":
    compiled = compile_kernels(("static",), processes=1)
else:       # the static family in a process of its own
    done = precompile._compile_in_a_process(["static"])
    assert done.returncode == 0, done.stderr
    compiled = ["static"]
again = compile_kernels(("static",))
print(json.dumps({"compiled": list(compiled), "again": list(again),
                  "cached": _kernels.is_cached(_kernels.static_run)}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("where", ["here", "beside"])
def test_compile_kernels_fills_an_empty_cache(tmp_path, where):
    # an empty cache (NUMBA_CACHE_DIR): the family compiles, here or in a process of its own,
    # and a second call finds it cached
    import json
    import os
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", _COLD, where], env=env, check=True,
                          capture_output=True, text=True, timeout=600)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"compiled": ["static"], "again": [], "cached": True}
    assert list(tmp_path.rglob("_kernels.static_run-*.nbc"))


def test_a_family_process_that_fails_is_reported(monkeypatch):
    from rooflinekit.batching import precompile
    # two cold families (as the cache would say), the second in a process that fails
    monkeypatch.setattr(precompile, "_lanes", lambda cold, processes, seconds: [[], ["nope"]])
    monkeypatch.setattr(_kernels, "is_cached", lambda kernel: False)
    with pytest.raises(RuntimeError, match="compiling the nope kernels failed"):
        precompile.compile_kernels(("static",), processes=2)


@pytest.mark.parametrize("cold, processes, lanes", [
    (("continuous-tick", "static", "speculative-tick", "disaggregated-tick"), 2,
     [["continuous-tick", "disaggregated-tick"], ["static", "speculative-tick"]]),
    (("continuous-tick", "static"), 2, [["continuous-tick"], ["static"]]),
    (("continuous-tick", "static"), 1, [["continuous-tick", "static"]]),
    (("static", "disaggregated-roofline"), 4, [["static"], ["disaggregated-roofline"]]),
    (("continuous-roofline", "disaggregated-roofline"), 2,
     [["continuous-roofline", "disaggregated-roofline"]]),
])
def test_lanes_balance_and_keep_a_family_after_the_one_it_runs(cold, processes, lanes):
    from rooflinekit.batching import precompile
    got = precompile._lanes(cold, processes, _kernels.COMPILE_SECONDS)
    assert got == lanes


def test_a_failed_compile_ends_its_line_and_raises(caplog):
    with caplog.at_level(logging.INFO, logger="rooflinekit"):
        with pytest.raises(KeyError):
            with _kernels.compile_notice(_uncached("broken"), heartbeat=0.01):
                raise KeyError("typing failed")
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2 and messages[1].startswith("broken failed after ")


def test_a_kernel_of_the_other_clock_is_refused():
    # each kernel is compiled for one clock; handed the other's tick_mode it returns WRONG_CLOCK
    import numpy as np

    from rooflinekit.batching._kernel_calls import _check_errors
    with pytest.raises(RuntimeError, match="other clock"):
        _check_errors(np.array([0, _kernels.WRONG_CLOCK]))
    with pytest.raises(RuntimeError, match="stalled"):
        _check_errors(np.array([_kernels.STALLED]))
