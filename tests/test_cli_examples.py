"""Every example in every command's ``--help``, and in the README's command table, runs, in-process,
and exits 0.

An example is an epilog line starting ``  rooflinekit `` (a line ending in ``\\`` goes on on the
next one); what follows two or more spaces on it is its description, not part of the command. In
the README, an example is a code span starting ``rooflinekit `` in the first column of the table
under "Command line".
Examples name files the reader has (``runs.csv``); the test gives them small real ones from
``tests/data`` instead, and every example runs as printed but for the departures listed below,
each with its reason (every example is small enough to run in a test).
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from rooflinekit.cli.main import COMMANDS, main

#: Integration: every example of the README and --help, as a command.
pytestmark = pytest.mark.slow

DATA = Path(__file__).parent / "data"

#: Placeholder files in the examples -> a small real file of the same kind.
FILES = {
    "runs.csv": DATA / "measurements" / "public.csv",
    "result.json": DATA / "measurements" / "vllm_result_lambda_h100_llama3_8b.json",
    "path/to/config.json": DATA / "hf_configs" / "llama-3.1-8b.json",
    "h100_vllm.json": DATA / "measurements" / "calibration_public.json",
    "benchmarks.json": DATA / "engine_outputs" / "guidellm_report.json",
    "latency.json": DATA / "engine_outputs" / "vllm_latency_b8_in1024_out128.json",
    "prefill.json": DATA / "engine_outputs" / "vllm_latency_b8_in1024_out1.json",
    "report.json": DATA / "engine_outputs" / "trtllm_bench_report.json",
    "rate-0.5.json": DATA / "load_sweeps" / "doks" / "rate-0.5.json",
    "rate-2.0.json": DATA / "load_sweeps" / "doks" / "rate-2.0.json",
    "day.csv": DATA / "profiles" / "day_15min.csv",
}

#: Arguments appended to an example (a later option wins in argparse), with the reason.
EXTRA = {
    # as printed (200 bootstrap resamples, 5 folds) it takes ~25 s; 2 and 2 take the same path
    "rooflinekit calibrate runs.csv --cv kfold": ["--resamples", "2", "--folds", "2"],
}

#: Examples that do not succeed as printed: run them, and expect them to fail, until fixed.
FAILS: dict[str, str] = {}

def _help(command: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main([command, "--help"])
    return out.getvalue()


def _examples(text: str) -> list[str]:
    examples, pending = [], None
    for line in text.splitlines():
        if pending is not None:
            line, pending = pending + " " + line.strip(), None
        elif not line.startswith("  rooflinekit "):
            continue
        if line.endswith("\\"):
            pending = line[:-1].strip()
            continue
        examples.append(re.split(r"\s{2,}", line.strip())[0])
    return examples


def _readme_examples() -> list[str]:
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Command line\n", 1)[1].split("\n## ", 1)[0]
    first_cells = [line.split(" | ")[0] for line in section.splitlines() if line.startswith("| `")]
    return [span for cell in first_cells for span in re.findall(r"`([^`]+)`", cell)
            if span.startswith("rooflinekit ")]


HELP_EXAMPLES = [example for command in COMMANDS for example in _examples(_help(command.NAME))]
README_EXAMPLES = _readme_examples()
EXAMPLES = list(dict.fromkeys(HELP_EXAMPLES + README_EXAMPLES))


def _argv(example: str) -> list[str]:
    argv = [str(FILES.get(word, word)) for word in shlex.split(example)[1:]]
    return argv + EXTRA.get(example, [])


def test_every_command_has_examples():
    for command in COMMANDS:
        assert _examples(_help(command.NAME)), command.NAME


def test_the_readme_lists_every_command():
    assert len(README_EXAMPLES) >= len(COMMANDS)
    for command in COMMANDS:
        assert any(e.split()[1] == command.NAME for e in README_EXAMPLES), command.NAME


def test_the_listed_examples_exist():
    # a departure listed here for an example that is gone would hide nothing, and mislead
    for example in (*EXTRA, *FAILS):
        assert example in EXAMPLES, example
    for name in FILES:
        assert any(name in shlex.split(e) for e in EXAMPLES), name


def _cases():
    for example in EXAMPLES:
        marks = ()
        if example in FAILS:
            marks = pytest.mark.xfail(reason=FAILS[example], strict=True)
        yield pytest.param(example, marks=marks, id=example.removeprefix("rooflinekit "))


@pytest.mark.parametrize("example", list(_cases()))
def test_example_runs(example, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)          # an example that writes a file writes it here
    try:
        code = main(_argv(example))
    except SystemExit as exc:            # a usage error
        code = exc.code
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out
