"""Every example script runs under the Agg backend and writes a non-trivial PNG."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

#: Integration: every example script, its figure drawn.
pytestmark = pytest.mark.slow

EXAMPLES = sorted((Path(__file__).parents[1] / "examples").glob("plot_*.py"))


def test_there_are_examples():
    assert EXAMPLES


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_writes_its_figure(script, tmp_path):
    env = dict(os.environ, MPLBACKEND="Agg")
    before = set(tmp_path.iterdir())
    run = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True,
                         text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    pngs = [p for p in tmp_path.iterdir() if p.suffix == ".png" and p not in before]
    assert pngs, "the example saved no PNG"
    for png in pngs:
        data = png.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert len(data) > 10_000, f"{png.name} is suspiciously small ({len(data)} bytes)"
