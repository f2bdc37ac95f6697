"""docs/quantities.md: every name its table gives exists on the surface it is listed under.

The table maps each quantity across three surfaces. For every row:

- a Python name is a parameter (``name=``) or a public function or class (``name()``) of
  rooflinekit's public API: ``rooflinekit.__all__`` and the public names of its folders
  (``sweep``, ``calibrate``, ``roofline``, ``planning``, ``batching``, ``pricing``, ...), their
  signatures and dataclass fields; a bare name is either;
- a labelled-result name is a dimension of :mod:`rooflinekit.dims` or a variable, coordinate or
  dimension (``attrs["x"]``: an attribute) of a small real result computed here: a sweep, the
  catalogue Datasets, a batcher's run, ``layouts`` and a measurement table. ``plan`` is too heavy
  to run here: its own variables are read from the code that assigns them
  (rooflinekit/planning/fleet.py's ``ds["x"] = ...`` and ``_assemble``, and
  ``rate_variables``);
- a ``--flag`` is an option of at least one ``rooflinekit`` command (the parser of
  ``rooflinekit.cli.main.build_parser``); any other name there is a key of real ``--json`` output
  of capacity, layouts, sweep, simulate, price and catalog run here, a key the plan and
  disaggregated commands write (their record dicts, read from the code), or a measurement-file
  column (``rooflinekit.calibrate.MEASUREMENT_COLUMNS``).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import importlib
import inspect
import io
import json
import re
from pathlib import Path

import pytest

import rooflinekit as rk
from rooflinekit import dims

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "quantities.md"

#: Folders whose public names count as rooflinekit's public API, besides ``rooflinekit.__all__``.
API_MODULES = ("sweep", "calibrate", "roofline", "planning", "batching", "pricing", "memory",
               "profiles", "parallel", "workloads", "catalog")

#: Quantities the table must cover (a word of the first column, lower case).
REQUIRED = ("model", "gpu type", "tensor-parallel", "pipeline", "expert-parallel",
            "context length", "prompt tokens", "output tokens", "batch size", "max num seqs",
            "max num batched tokens", "block size", "gpu memory utilization", "workspace fraction",
            "kv budget [tokens]", "max concurrent sequences", "weight bytes",
            "kv bytes per token", "ttft", "itl", "tpot", "end-to-end latency",
            "throughput [tokens/s]", "throughput per gpu", "request rate", "max rate",
            "replicas", "gpus [1]", "monthly cost", "cost per 1m tokens", "monthly tokens",
            "dtype", "kv-cache dtype", "engine [", "model quality", "draft tokens",
            "acceptance", "seed", "replicates", "requests")

_TICKED = re.compile(r"`([^`]+)`")
_ATTR = re.compile(r'^attrs\["([A-Za-z_][A-Za-z0-9_]*)"\]$')
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# -- the table -------------------------------------------------------------------------------------

def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _table() -> tuple[list[str], list[list[str]]]:
    """The header and rows of the quantities table (the first table of the page)."""
    lines = [line for line in DOC.read_text(encoding="utf-8").splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    block = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        block.append(line)
    header, separator, *rows = block
    assert set(separator.replace("|", "").strip()) <= set("-: "), separator
    return _cells(header), [_cells(r) for r in rows]


def _column(header: list[str], prefix: str) -> int:
    (index,) = [i for i, h in enumerate(header) if h.lower().startswith(prefix)]
    return index


HEADER, ROWS = _table()
QUANTITY = _column(HEADER, "quantity")
PYTHON = _column(HEADER, "python")
DATASET = _column(HEADER, "labelled")
CLI = _column(HEADER, "command line")


def _ticked(row: list[str], column: int) -> list[str]:
    return _TICKED.findall(row[column])


def _row_id(row):
    return row[QUANTITY]


# -- the three surfaces ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def api():
    """(public names, public callables, parameter and field names) of rooflinekit's API."""
    names, callables, params = set(), set(), set()
    modules = [(rk, rk.__all__)]
    for name in API_MODULES:
        module = importlib.import_module(f"rooflinekit.{name}")
        modules.append((module, getattr(module, "__all__", None)
                        or [n for n in dir(module) if not n.startswith("_")]))
    for module, public in modules:
        for name in public:
            obj = getattr(module, name, None)
            if obj is None or inspect.ismodule(obj):
                continue
            names.add(name)
            if callable(obj):
                callables.add(name)
                try:
                    signature = inspect.signature(obj)
                except (TypeError, ValueError):
                    signature = None
                if signature is not None:
                    params.update(p.name for p in signature.parameters.values()
                                  if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))
            if inspect.isclass(obj) and dataclasses.is_dataclass(obj):
                params.update(f.name for f in dataclasses.fields(obj))
    return names, callables, params


def _plan_variables() -> set[str]:
    """Variables ``plan`` assigns: ``ds["x"] = ...`` in planning/fleet.py, the keys of its
    ``_assemble`` Dataset and of ``rate_variables`` (planning/capacity.py)."""
    out = set()
    folder = ROOT / "rooflinekit" / "planning"
    for file, functions in (("fleet.py", ("_assemble",)), ("capacity.py", ("rate_variables",))):
        tree = ast.parse((folder / file).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                            and target.value.id == "ds" and isinstance(target.slice, ast.Constant)
                            and isinstance(target.slice.value, str)):
                        out.add(target.slice.value)
            if isinstance(node, ast.FunctionDef) and node.name in functions:
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Dict):
                        out.update(k.value for k in inner.keys
                                   if isinstance(k, ast.Constant) and isinstance(k.value, str))
    return out


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """(names, attributes) of small real labelled results, and rooflinekit.dims' dimensions."""
    model, gpu = rk.catalog.model("Llama-3.1-8B"), rk.catalog.gpu("H100-SXM-80GB")
    csv = tmp_path_factory.mktemp("quantities") / "measurements.csv"
    csv.write_text("model,gpu,tp,batch_size,prompt_tokens,output_tokens,ttft_ms,itl_ms,tpot_ms,"
                   "output_throughput,source,dtype,kv_dtype,engine\n"
                   "Llama-3.1-8B,H100-SXM-80GB,1,1,512,128,20,5,5,200,test,bf16,fp8,vllm 0.6.0\n",
                   encoding="utf-8")
    datasets = [
        rk.sweep.sweep(models="Llama-3.1-8B", gpus="H100-SXM-80GB", tp=[1, 2],
                       context_length=[1024, 2048], batch_size=[1, 4], prompt_tokens=[512],
                       draft_tokens=[2], acceptance=[0.7], draft=0.1, prefix_share=[0.5]),
        rk.sweep.sweep(models="Llama-3.1-8B", gpus="H100-SXM-80GB", reserve=0.10),
        rk.catalog.models(as_dataset=True),
        rk.catalog.gpus(as_dataset=True),
        rk.ContinuousBatcher(max_num_seqs=4).run(rk.guide_workload()),   # 24 requests
        rk.roofline.layouts(model, gpu, 2, batch_size=4, context_length=1024,
                            prompt_tokens=256),
        rk.read_measurements(csv),
        rk.planning.load_curve(rk.Traffic(1.0, 100, 10), rk.SLO(ttft=1.0), model=model,
                               gpu=gpu, concurrencies=[2], replicates=1, requests=10),
    ]
    names = {getattr(dims, n) for n in dims.__all__ if isinstance(getattr(dims, n), str)}
    attrs = set()
    for ds in datasets:
        names.update(str(n) for n in ds.variables)
        names.update(str(n) for n in ds.dims)
        attrs.update(ds.attrs)
    names |= _plan_variables()
    return names, attrs


def _options(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string of every subcommand."""
    out = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out |= _options(sub)
        out.update(action.option_strings)
    return out


#: Commands cheap enough to run here for their ``--json`` keys.
_RUNS = (
    ["capacity", "Llama-3.1-8B", "H100-SXM-80GB", "--json"],
    ["capacity", "gpt-oss-20b", "H100-SXM-80GB", "--json"],        # sliding-window layers
    ["capacity", "Qwen3-Next-80B-A3B", "H100-SXM-80GB", "--tp", "4", "--json"],  # a hybrid
    ["layouts", "Llama-3.1-8B", "H100-SXM-80GB", "--num-gpus", "2", "--input-len", "256",
     "--json"],
    *(["sweep", "--models", "Llama-3.1-8B", "--gpus", "H100-SXM-80GB", "--tp", "1",
       "--max-model-len", "1024", "--batch-size", "1,4", "--report", report, "--json"]
      for report in ("best", "cheapest", "pareto")),
    ["simulate", "--workload", "lognormal", "--requests", "50", "--speculative-draft", "0.1",
     "--num-speculative-tokens", "2", "--acceptance", "0.8", "--json"],
    ["price", "--input-price", "3", "--output-price", "12", "--output-fraction", "0.1",
     "--provisioned-monthly", "12000", "--provisioned-capacity", "4e9", "--monthly-tokens", "1e9",
     "--json"],
    ["catalog", "models", "Llama-3.1-8B", "--json"],
    ["catalog", "gpus", "H100-SXM-80GB", "--json"],
)


def _keys(value) -> set[str]:
    if isinstance(value, dict):
        return set(value).union(*(_keys(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_keys(v) for v in value))
    return set()


def _written_keys(files=("plan.py", "disaggregated.py", "curve.py")) -> set[str]:
    """The keys of the dicts the plan, disaggregated and curve commands write (too heavy to
    run)."""
    out = set()
    for file in files:
        tree = ast.parse((ROOT / "rooflinekit" / "cli" / file).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):
                out.update(k.value for k in node.keys
                           if isinstance(k, ast.Constant) and isinstance(k.value, str))
    return out


@pytest.fixture(scope="module")
def cli():
    """(option strings of every command, keys of their JSON output and of measurement files)."""
    from rooflinekit.calibrate import MEASUREMENT_COLUMNS
    from rooflinekit.cli.main import build_parser, main

    keys = set()
    for argv in _RUNS:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(argv) == 0, argv
        keys |= _keys(json.loads(out.getvalue()))
    keys |= _written_keys() | set(MEASUREMENT_COLUMNS)
    return _options(build_parser()), keys


# -- the checks -----------------------------------------------------------------------------------

def test_table_covers_the_quantities():
    quantities = " | ".join(row[QUANTITY].lower() for row in ROWS)
    missing = [q for q in REQUIRED if q not in quantities]
    assert not missing, f"docs/quantities.md has no row for {missing}"


def test_every_row_has_a_unit_and_names():
    for row in ROWS:
        assert len(row) == len(HEADER), row
        assert re.search(r"\[[^\]]+\]", row[QUANTITY]), f"no [unit] in {row[QUANTITY]!r}"
        assert any(_ticked(row, c) for c in (PYTHON, DATASET, CLI)), row[QUANTITY]


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_python_names_exist(row, api):
    names, callables, params = api
    for token in _ticked(row, PYTHON):
        if token.endswith("()"):
            assert token[:-2] in callables, f"{token}: not a public function or class"
        elif token.endswith("="):
            assert token[:-1] in params, f"{token}: no public function takes it"
        else:
            assert _NAME.match(token), f"{token!r}: write name=, name() or a bare name"
            assert token in names or token in params, f"{token}: not a public name"


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_labelled_names_exist(row, results):
    names, attrs = results
    for token in _ticked(row, DATASET):
        attr = _ATTR.match(token)
        if attr:
            assert attr[1] in attrs, f"{token}: no result computed here has that attribute"
        else:
            assert _NAME.match(token), f"{token!r}: write a name or attrs[\"name\"]"
            assert token in names, f"{token}: not a dimension of rooflinekit.dims nor a variable"


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_command_line_names_exist(row, cli):
    options, keys = cli
    for token in _ticked(row, CLI):
        if token.startswith("-"):
            assert token in options, f"{token}: no rooflinekit command takes it"
        else:
            assert _NAME.match(token), f"{token!r}: write a --flag or a key"
            assert token in keys, f"{token}: no command writes that key"
