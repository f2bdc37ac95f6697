"""The package surface: public names resolve, import stays light, the CLI answers."""

import json
import subprocess
import sys


import rooflinekit
from rooflinekit import cli


def test_all_names_resolve():
    for name in rooflinekit.__all__:
        assert hasattr(rooflinekit, name), name


def test_import_compiles_no_numba():
    # importing the package must not compile (or even import) numba: kernels compile on first use
    code = "import sys, rooflinekit; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_guide_memory_section_text(capsys):
    assert cli.main(["guide", "--section", "memory"]) == 0
    text = capsys.readouterr().out
    for figure in ("327,680", "183", "22", "1,467", "458.65"):
        assert figure in text


def test_guide_json(capsys):
    assert cli.main(["guide", "--section", "memory", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    figs = {f["label"]: f for f in data[0]["figures"]}
    assert figs["concurrent 8k sequences, GQA-8"]["ours"] == 183
    assert all(f["agrees"] for f in data[0]["figures"])


def test_cli_bad_section_is_one_line_error(capsys):
    assert cli.main(["guide", "--section", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown section" in err


def test_console_script_entry_point():
    out = subprocess.run([sys.executable, "-m", "rooflinekit.cli", "guide", "--section", "memory"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and "183" in out.stdout


def test_readme_python_snippets_run():
    # the README's examples are code people paste: they must keep working
    import re
    from pathlib import Path
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert blocks
    namespace = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["rk"].max_concurrent_sequences(namespace["model"], namespace["gpu"], 8192,
                                                     tp=8) == 183
