"""docs/validation.md and docs/calibration.md hold exactly the tables docs/tables.py computes.

A change of the physics, the fit or the data that moves a number makes the page stale; rerun
``python docs/tables.py`` and read the prose beside the tables again.
"""

import importlib.util
import sys
from pathlib import Path

import pytest

#: Integration: every calibration fit behind the docs' tables.
pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).parents[1] / "docs" / "tables.py"


@pytest.fixture(scope="module")
def tables():
    spec = importlib.util.spec_from_file_location("rooflinekit_docs_tables", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rendered(tables):
    return tables.all_tables()


@pytest.mark.parametrize("page", ["validation", "calibration"])
def test_page_holds_the_computed_tables(tables, rendered, page):
    path = tables.PAGES[page]
    text = path.read_text(encoding="utf-8")
    fresh = tables.render(text, rendered)
    assert text == fresh, f"{path.name} is stale: run python docs/tables.py"


def test_every_table_has_a_place(tables, rendered):
    """Each generated table is placed on a page, and every marker names one."""
    names = set()
    for path in tables.PAGES.values():
        names |= {m.group("name") for m in tables.MARKER.finditer(path.read_text())}
    assert names == set(rendered)


def test_render_replaces_between_markers_only(tables):
    text = "prose\n<!-- tables:x -->\nold\n<!-- /tables -->\nmore prose\n"
    assert tables.render(text, {"x": "new\n"}) == \
        "prose\n<!-- tables:x -->\nnew\n<!-- /tables -->\nmore prose\n"
    with pytest.raises(ValueError, match="tables:y names no generated table"):
        tables.render("<!-- tables:y -->\n<!-- /tables -->", {"x": ""})


def test_held_out_rows_are_not_fitted(tables):
    """The 'fit on all' figures use the fitted files only; the held-out file is disjoint.

    Disjoint by configuration, GPU and TP degree: the held-out H100 TP4 rows share neither
    with any fitted row (the A100 TP4 rows are fitted)."""
    assert tables.HELD_OUT not in tables.FITTED
    held = tables.read_measurements(tables.DATA / tables.HELD_OUT)
    fitted = tables.concat_measurements(*tables._files(tables.FITTED))

    def configurations(ds):
        return set(zip(ds["gpu"].values.tolist(), ds["tp"].values.tolist()))
    assert configurations(held) == {("H100-SXM-80GB", 4)}
    assert configurations(held).isdisjoint(configurations(fitted))


def test_every_published_sweep_has_its_figure_on_the_page(tables):
    """docs/validation.md shows one figure per sweep of tests/data/load_sweeps (drawn by
    ``python docs/tables.py`` from the points table the test above checks)."""
    text = tables.PAGES["validation"].read_text(encoding="utf-8")
    names = tables._scorer().read_sweeps()
    assert names
    for name in names:
        path = tables.FIGURES / f"{name}.png"
        assert path.is_file() and path.stat().st_size > 1000, path
        assert f"![{name}](img/load_sweeps/{name}.png)" in text
