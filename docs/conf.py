"""Sphinx configuration: ``sphinx-build -W docs docs/_build`` (install ``.[docs]`` first).

The API reference is written here, at build time, from each module's ``__all__``: every public
name is documented once, on the page of the module or folder that defines it, so that the
package's re-exports do not document one object twice.
"""

import importlib
import os
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")            # examples run headless during the build

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))     # sphinx-gallery imports conf._example_argv by name

project = "rooflinekit"
author = "rooflinekit developers"
copyright = "rooflinekit developers"

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "**.ipynb_checkpoints", "auto_examples/*.ipynb",
                    "auto_examples/*.py", "auto_examples/*.zip"]
html_theme = "alabaster"
html_static_path = []

# Headings get anchors so the Markdown pages can link to sections of each other.
myst_heading_anchors = 3
myst_enable_extensions = ["dollarmath"]

autosummary_generate = True
autodoc_default_options = {"members": False}
autodoc_typehints = "none"       # numpydoc's Parameters sections already give the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

sphinx_gallery_conf = {
    "examples_dirs": str(HERE.parent / "examples"),
    "gallery_dirs": str(HERE / "auto_examples"),
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    # each example saves its PNG into the folder named by its first argument
    "reset_argv": "conf._example_argv",
}


def _example_argv(gallery_conf, script_vars):
    """The examples' command line under the gallery: write PNGs under the build folder."""
    return [str(HERE / "_build" / "example_output")]

# Module or folder -> one-line title of its API page, in floor order (docs/architecture.md).
API_MODULES = {
    "rooflinekit.dims": "Dimension names",
    "rooflinekit.units": "Units and conversions",
    "rooflinekit.dtypes": "Number formats",
    "rooflinekit.hf_config": "Hugging Face config.json",
    "rooflinekit.hardware": "GPUs",
    "rooflinekit.models": "Model shapes",
    "rooflinekit.memory": "Memory and KV cache",
    "rooflinekit.workloads": "Workloads",
    "rooflinekit.catalog": "Catalogue",
    "rooflinekit.parallel": "Parallelism",
    "rooflinekit.roofline": "Roofline step model",
    "rooflinekit.pricing": "Pricing",
    "rooflinekit.batching": "Batching simulator",
    "rooflinekit.sweep": "Sweeps",
    "rooflinekit.calibrate": "Calibration",
    "rooflinekit.planning": "Planning",
    "rooflinekit.guide": "The guide's figures",
    "rooflinekit.plotting": "Plotting",
}


def _home(obj, module: str) -> bool:
    """Whether ``obj`` is defined in ``module`` (the module itself or, for a folder, inside it)."""
    where = getattr(obj, "__module__", None)
    if where is None or isinstance(obj, type(sys)):
        return False
    return where == module or where.startswith(module + ".")


def _write_api_pages() -> None:
    out = HERE / "api"
    out.mkdir(exist_ok=True)
    entries = []
    for module, title in API_MODULES.items():
        mod = importlib.import_module(module)
        names = [n for n in getattr(mod, "__all__", ()) if _home(getattr(mod, n), module)]
        # Module-level constants have no page of their own; their module docstring says them.
        names = [n for n in names if callable(getattr(mod, n))]
        stem = module.removeprefix("rooflinekit.")
        heading = f"``{module}``: {title}"
        lines = [heading, "=" * len(heading), "", f".. automodule:: {module}", "   :no-members:",
                 "", f".. currentmodule:: {module}", ""]
        if names:
            lines += [".. autosummary::", "   :toctree: generated", ""]
            lines += [f"   {n}" for n in names]
        text = "\n".join(lines) + "\n"
        page = out / f"{stem}.rst"
        if not page.exists() or page.read_text() != text:
            page.write_text(text)
        entries.append(f"   {stem}")
    index = ["API reference", "=============", "",
             ("Every public name of the package, on the page of the module that defines it. "
              "``import rooflinekit`` re-exports the most used of them "
              "(``rooflinekit.__all__``)."), "",
             ".. toctree::", "   :maxdepth: 1", "", *entries]
    text = "\n".join(index) + "\n"
    page = out / "index.rst"
    if not page.exists() or page.read_text() != text:
        page.write_text(text)


_write_api_pages()
os.environ.setdefault("MPLBACKEND", "Agg")
