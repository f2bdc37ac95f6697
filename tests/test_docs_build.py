"""The documentation site builds with warnings as errors (runs where ``.[docs]`` is installed)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

#: Integration: the Sphinx build.
pytestmark = pytest.mark.slow

for _module in ("sphinx", "numpydoc", "sphinx_gallery", "myst_parser"):
    pytest.importorskip(_module)

DOCS = Path(__file__).parents[1] / "docs"


def test_docs_build_without_warnings(tmp_path):
    env = dict(os.environ, MPLBACKEND="Agg")
    # a fresh process: the gallery runs every example, and -W turns any warning into a failure
    run = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b",
                          "html", "-d", str(tmp_path / "doctrees"), str(DOCS),
                          str(tmp_path / "html")],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    html = tmp_path / "html"
    for page in ("index.html", "planning.html", "api/index.html", "api/roofline.html",
                 "auto_examples/index.html", "auto_examples/plot_roofline.html"):
        assert (html / page).is_file(), page
    assert list((html / "_images").glob("sphx_glr_plot_*")), "the gallery drew no figures"
