"""``python -m rooflinekit`` runs the command, as the installed ``rooflinekit`` script does;
cost columns say they count generated tokens."""

import subprocess
import sys
from pathlib import Path

from helpers import run_cli

ROOT = Path(__file__).resolve().parents[1]


def test_python_dash_m_runs_the_command():
    done = subprocess.run([sys.executable, "-m", "rooflinekit", "--help"], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "usage: rooflinekit" in done.stdout


def test_cost_columns_say_generated_tokens(capsys):
    code, out, _ = run_cli(capsys, "capacity", "llama-3.1-8b", "h100")
    assert code == 0 and "cost [USD/1M generated tokens]" in out
    code, out, _ = run_cli(capsys, "sweep", "--models", "llama-3.1-8b", "--gpus", "h100",
                           "--report", "cheapest")
    assert code == 0 and "[USD/1M generated tokens]" in out


def test_disaggregated_refuses_too_much_work_in_flags(capsys):
    code, _, err = run_cli(capsys, "disaggregated", "llama-3.1-8b", "--gpu", "h100",
                           "--gpu-budget", "8", "--rate", "5", "--prompt-mean", "1000",
                           "--output-mean", "100", "--ttft", "1", "--replicates", "1000",
                           "--requests", "30000")
    assert code == 2
    assert "--replicates" in err and "work_limit=" not in err and "chunks=" not in err
