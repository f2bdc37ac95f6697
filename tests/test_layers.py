"""The house rules of the package layout, read from the source with ``ast`` (nothing is imported).

- no import cycle among the package's modules (function-local imports count: a local import hides
  an arrow, it does not remove it);
- imports point down the floor table (``docs/architecture.md``): a room imports from rooms on
  lower floors, or from rooms listed before it on its own floor, or inside its own folder;
- across rooms, no private name: a folder is entered through its face (``rooflinekit.roofline``,
  never ``rooflinekit.roofline.step``), and no ``_name`` is imported or read from another room;
- the library never imports the command line.

Each rule is checked by a plain function over a source tree, so the tests below can show that the
checker also *fails* on a tree with a bad import planted in it.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "rooflinekit"
ROOT = PACKAGE.name

#: Rooms by floor, lowest first; inside a floor, a room may import the rooms listed before it.
FLOORS = (
    ("dims", "units", "dtypes", "_validation", "_labels", "hf_config"),
    ("hardware", "models", "memory", "workloads"),
    ("catalog", "parallel"),
    ("roofline", "profiles"),
    ("pricing", "batching", "sweep", "calibrate"),
    ("planning",),
    ("guide", "plotting"),
    ("cli", "__init__", "__main__"),
)
RANK = {room: (floor, place) for floor, rooms in enumerate(FLOORS) for place, room in
        enumerate(rooms)}


def module_names(package: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def room(module: str) -> str:
    """The room a module belongs to: its top-level module or folder under the package."""
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def is_folder(package: Path, name: str) -> bool:
    return (package / name).is_dir()


def imports(package: Path) -> list[tuple[str, str, str | None, int]]:
    """Every import of a package module: (importer, imported module, imported name, line).

    ``imported name`` is the name taken from the module by ``from M import name`` (``None`` for
    ``import M`` and for names that are themselves modules).
    """
    modules = module_names(package)
    out = []
    for name, path in modules.items():
        is_pkg = path.name == "__init__.py"
        base = name.split(".") if is_pkg else name.split(".")[:-1]
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == ROOT:
                        out.append((name, alias.name, None, node.lineno))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    anchor = base[: len(base) - node.level + 1]
                    target = ".".join(anchor + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] != ROOT:
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in modules:
                        out.append((name, sub, None, node.lineno))
                    else:
                        out.append((name, target, alias.name, node.lineno))
    return out


def private_attribute_reads(package: Path) -> list[tuple[str, str, int]]:
    """``module._name`` reads of another room's private names through an imported module."""
    modules = module_names(package)
    out = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        bound = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == ROOT:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    if sub in modules:
                        bound[alias.asname or alias.name] = sub
            elif isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None:
                for alias in node.names:
                    bound[alias.asname or alias.name] = f"{ROOT}.{alias.name}"
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in bound and node.attr.startswith("_")
                    and not node.attr.startswith("__")
                    and room(bound[node.value.id]) != room(name)):
                out.append((name, f"{bound[node.value.id]}.{node.attr}", node.lineno))
    return out


def cycles(package: Path) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), in the import graph."""
    graph = {m: set() for m in module_names(package)}
    for importer, target, _, _ in imports(package):
        if target in graph and target != importer:
            graph[importer].add(target)
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def crossings(package: Path):
    """Imports from one room into another: (importer, target, name, line, its room, theirs)."""
    for importer, target, name, line in imports(package):
        a, b = room(importer), room(target)
        if a != b:
            yield importer, target, name, line, a, b


def upward_imports(package: Path) -> list[str]:
    """Imports that point up the floor table, or sideways to a room listed later on the floor."""
    bad = []
    for importer, target, _, line, a, b in crossings(package):
        if a not in RANK or b not in RANK:
            bad.append(f"{importer}:{line} -> {target}: room missing from the floor table")
        elif RANK[b] >= RANK[a]:
            bad.append(f"{importer}:{line} imports {target} (floor {RANK[b][0] + 1}) "
                       f"from floor {RANK[a][0] + 1}")
    return bad


def private_crossings(package: Path) -> list[str]:
    """Private modules of a folder, or ``_names``, taken from another room."""
    bad = []
    for importer, target, name, line, _, b in crossings(package):
        parts = target.split(".")
        if is_folder(package, b) and len(parts) > 2:
            bad.append(f"{importer}:{line} imports {target}, a module inside the folder {b}/; "
                       f"import its face rooflinekit.{b}")
        if name is not None and name.startswith("_") and not name.startswith("__"):
            bad.append(f"{importer}:{line} imports the private name {target}.{name}")
    for importer, target, line in private_attribute_reads(package):
        bad.append(f"{importer}:{line} reads the private name {target}")
    return bad


#: Rooms that are the command line's own doors (``python -m rooflinekit``), not library.
ENTRY_POINTS = ("__main__",)


def library_imports_of_cli(package: Path) -> list[str]:
    return [f"{importer}:{line} imports {target}"
            for importer, target, _, line, a, b in crossings(package)
            if b == "cli" and a not in ENTRY_POINTS]


# ------------------------------------------------------------------------------------------------
# The package as it is.
# ------------------------------------------------------------------------------------------------

def test_every_room_is_on_a_floor():
    rooms = {room(m) for m in module_names(PACKAGE)}
    assert rooms - set(RANK) == set()


def test_no_import_cycle():
    assert cycles(PACKAGE) == []


def test_imports_point_down():
    assert upward_imports(PACKAGE) == []


def test_no_private_name_across_rooms():
    assert private_crossings(PACKAGE) == []


def test_library_never_imports_the_command_line():
    assert library_imports_of_cli(PACKAGE) == []


def test_folder_faces_only_re_export():
    """A folder's ``__init__`` imports and lists names; it defines no function or class."""
    for init in PACKAGE.glob("*/__init__.py"):
        tree = ast.parse(init.read_text())
        defined = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        assert defined == [], f"{init.relative_to(PACKAGE.parent)} defines {defined}"


# ------------------------------------------------------------------------------------------------
# The checker fails where it should: a bad import planted in a copy of the package.
# ------------------------------------------------------------------------------------------------

def _plant(tmp_path: Path, module: str, line: str) -> Path:
    copy = tmp_path / ROOT
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "data"))
    path = copy.joinpath(*module.split(".")[1:]).with_suffix(".py")
    if not path.exists():
        path = path.with_suffix("") / "__init__.py"
    path.write_text(path.read_text() + f"\n\ndef _planted():\n    {line}\n")
    return copy


@pytest.mark.parametrize("module, line", [
    ("rooflinekit.memory", "from rooflinekit import roofline"),
    ("rooflinekit.units", "from rooflinekit.hardware import GPU"),
    ("rooflinekit.catalog", "from . import planning"),
])
def test_an_upward_import_fails(tmp_path, module, line):
    copy = _plant(tmp_path, module, line)
    assert any(module in bad for bad in upward_imports(copy))


@pytest.mark.slow
def test_a_cycle_fails(tmp_path):
    copy = _plant(tmp_path, "rooflinekit.dims", "from rooflinekit import units")
    _plant_more = copy / "units.py"
    _plant_more.write_text(_plant_more.read_text() + "\nfrom rooflinekit import dims\n")
    assert cycles(copy) != []


@pytest.mark.slow
def test_a_private_crossing_fails(tmp_path):
    copy = _plant(tmp_path, "rooflinekit.planning", "from rooflinekit.memory import _hidden")
    assert any("private name" in bad for bad in private_crossings(copy))
    # a public name through the folder's face is not a crossing
    copy2 = _plant(tmp_path / "b", "rooflinekit.planning", "from rooflinekit.pricing import x")
    assert private_crossings(copy2) == private_crossings(PACKAGE)


def test_the_library_importing_the_cli_fails(tmp_path):
    copy = _plant(tmp_path, "rooflinekit.guide", "from rooflinekit.cli import main")
    assert library_imports_of_cli(copy) != []
