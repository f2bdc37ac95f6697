"""One model, one name: ``catalog.resolve_model`` names a model in the issue's order.

Explicit ``name=`` first; then a repo id; then the config's own ``_name_or_path`` where it is a
name (microsoft/phi-2's config.json records "microsoft/phi-2"); then the folder or file.
"""

import json
import shutil
from pathlib import Path

import pytest

from rooflinekit import catalog

CONFIGS = Path(__file__).resolve().parent / "data" / "hf_configs"


def test_a_recorded_name_beats_the_file_name():
    assert catalog.resolve_model(CONFIGS / "phi-2.json").name == "microsoft/phi-2"
    assert catalog.resolve_model(CONFIGS / "starcoder.json").name == "bigcode/starcoder"


def test_an_explicit_name_beats_everything(tmp_path):
    assert catalog.resolve_model(CONFIGS / "phi-2.json", name="my-phi").name == "my-phi"
    assert catalog.resolve_model("llama-3.1-8b", name="ours").name == "ours"
    with pytest.raises(TypeError, match="name"):
        catalog.resolve_model("llama-3.1-8b", name="  ")


def test_without_a_recorded_name_the_folder_names_it(tmp_path):
    folder = tmp_path / "My-Llama"
    folder.mkdir()
    shutil.copy(CONFIGS / "llama-3.1-8b.json", folder / "config.json")
    assert catalog.resolve_model(folder).name == "My-Llama"
    # a recorded local path is no name: the folder still names it
    data = json.loads((folder / "config.json").read_text())
    data["_name_or_path"] = "/home/someone/checkpoints/llama"
    (folder / "config.json").write_text(json.dumps(data))
    assert catalog.resolve_model(folder / "config.json").name == "My-Llama"


@pytest.mark.parametrize("command", [
    ["capacity", str(CONFIGS / "phi-2.json"), "h100", "--json"],
    ["layouts", str(CONFIGS / "phi-2.json"), "h100", "--num-gpus", "2", "--json"],
])
def test_every_single_model_command_takes_name(command, capsys):
    from helpers import run_cli
    code, out, _ = run_cli(capsys, *command)
    assert code == 0 and "microsoft/phi-2" in out and "my-phi" not in out
    code, out, _ = run_cli(capsys, *command, "--name", "my-phi")
    assert code == 0 and "my-phi" in out
    code, _, err = run_cli(capsys, *command, "--name", " ")
    assert code == 2 and "--name" in err


def test_a_path_into_the_hub_cache_is_named_by_its_repo_id(tmp_path):
    snapshot = tmp_path / "hub" / "models--microsoft--phi-2" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    shutil.copy(CONFIGS / "llama-3.1-8b.json", snapshot / "config.json")
    # the repo id, not the revision folder, and before any name the config records
    assert catalog.resolve_model(snapshot).name == "microsoft/phi-2"
    assert catalog.resolve_model(snapshot / "config.json").name == "microsoft/phi-2"
