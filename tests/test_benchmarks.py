"""Every asv benchmark runs: setup, then each benchmark method once on its first parameters.

The equivalent of ``asv run --quick --dry-run --python=same`` without asv's environment
machinery (asv itself is the ``bench`` extra). Nothing here is timed: speed lives in asv and
BENCHMARKS.md, never in an assertion.
"""

import importlib.util
import inspect
import itertools
import sys
from pathlib import Path

import pytest

#: Integration: every asv benchmark's setup and methods, kernels compiled.
pytestmark = pytest.mark.slow

BENCH_DIR = Path(__file__).parents[1] / "benchmarks"
PREFIXES = ("time_", "peakmem_", "mem_", "track_")


def _load(path):
    name = f"_bench_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(BENCH_DIR))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH_DIR))
    return module


def _cases():
    for path in sorted(BENCH_DIR.glob("*.py")):
        if path.stem in ("__init__", "report"):
            continue
        module = _load(path)
        for cls_name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__:
                continue
            methods = [m for m in dir(cls) if m.startswith(PREFIXES)]
            if methods:
                yield pytest.param(path.stem, cls_name, id=f"{path.stem}.{cls_name}")
        for fn_name, _ in inspect.getmembers(module, inspect.isfunction):
            if fn_name.startswith("timeraw_"):
                yield pytest.param(path.stem, fn_name, id=f"{path.stem}.{fn_name}")


def _first_params(cls):
    params = getattr(cls, "params", None)
    if params is None:
        return ()
    if params and not isinstance(params[0], (list, tuple)):
        params = [params]
    return next(itertools.product(*params))


@pytest.mark.parametrize("module_name, member", list(_cases()))
def test_benchmark_runs(module_name, member):
    module = _load(BENCH_DIR / f"{module_name}.py")
    obj = getattr(module, member)
    if member.startswith("timeraw_"):
        code = obj()
        assert isinstance(code, str) and code.strip()
        exec(compile(code, member, "exec"), {})
        return
    args = _first_params(obj)
    instance = obj()
    if hasattr(instance, "setup"):
        instance.setup(*args)
    for name in sorted(m for m in dir(obj) if m.startswith(PREFIXES)):
        result = getattr(instance, name)(*args)
        if name.startswith("track_"):
            assert result is not None and result == result      # a number, not NaN
    if hasattr(instance, "teardown"):
        instance.teardown(*args)
