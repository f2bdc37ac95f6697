"""Bad command lines: each exits 2 with one line on stderr naming what is wrong, no traceback,
before any work (nothing is written, no simulation runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflinekit.cli.main import main

CAP = ["capacity", "guide-70b", "lab", "--tp", "8"]
PRICE = ["price", "--input-price", "3", "--output-price", "12", "--output-fraction", "0.1"]
PLAN = ["plan", "llama-3.1-8b", "--gpus", "h100", "--rate", "5", "--prompt-mean", "1000",
        "--output-mean", "200", "--ttft", "1", "--replicates", "2", "--requests", "20"]
SWEEP = ["sweep", "--models", "guide-70b", "--gpus", "h100", "--no-progress"]
CAL = ["calibrate", str(Path(__file__).parent / "data" / "measurements" / "public.csv"),
       "--resamples", "2"]

#: (command line, a word the one line of stderr must hold)
BAD = [
    # huge integers, inf and nan in numeric flags
    (["simulate", "--workload", "constant", "--kv-budget", "99999999999999999999"],
     "--kv-budget"),
    (["simulate", "--workload", "constant", "--output-mean", "inf"], "--output-mean"),
    (["simulate", "--workload", "constant", "--output-mean", "nan"], "--output-mean"),
    (["simulate", "--workload", "constant", "--requests", "1e300"], "--requests"),
    (["simulate", "--workload", "constant", "--requests", "2.5"], "--requests"),
    (["simulate", "--max-num-seqs", "0"], "--max-num-seqs"),
    (["simulate", "--max-num-batched-tokens", "-1"], "--max-num-batched-tokens"),
    (SWEEP + ["--chunks", "inf"], "--chunks"),
    (SWEEP + ["--chunks", "lots"], "--chunks"),
    (SWEEP + ["--batch-size", "99999999999999999999"], "--batch-size"),
    (SWEEP + ["--max-model-len", "0:10"], "--max-model-len"),
    (SWEEP + ["--tp", "1,x"], "--tensor-parallel-size"),
    (CAP + ["--max-model-len", "inf"], "--max-model-len"),
    (CAP + ["--batch-size", "0"], "--batch-size"),
    (CAP + ["--input-len", "nan"], "--input-len"),
    (CAP + ["--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization"),
    (CAP + ["--gpu-memory-utilization", "0"], "--gpu-memory-utilization"),
    (CAP + ["--workspace-fraction", "1"], "--workspace-fraction"),
    (CAP + ["--gpu-hourly", "-1"], "--gpu-hourly"),
    (CAP + ["--dtype", "fp7"], "--dtype"),
    (CAP + ["--kv-cache-dtype", "int3"], "--kv-cache-dtype"),
    (PRICE + ["--monthly-tokens", "inf"], "--monthly-tokens"),
    (PRICE[:-1] + ["nan"], "--output-fraction"),
    (PLAN + ["--rate", "inf"], "--rate"),
    (PLAN + ["--quantile", "1"], "--quantile"),
    (PLAN + ["--headroom", "-0.1"], "--headroom"),
    (PLAN + ["--replicates", "1e30"], "--replicates"),
    (CAL + ["--confidence", "1.5"], "--confidence"),
    (CAL + ["--resamples", "-1"], "--resamples"),
    # flags that would be ignored
    (["simulate", "--workload", "constant", "--rate", "2"], "--rate"),
    (["simulate", "--workload", "constant", "--arrival", "poisson", "--interval", "2"],
     "--interval"),
    (["simulate", "--arrival", "poisson"], "--arrival"),
    (["simulate", "--rate", "2"], "--rate"),
    (["simulate", "--seed", "3"], "--seed"),
    (["simulate", "--requests", "10"], "--requests"),
    (["simulate", "--block-size", "32"], "--block-size"),
    (["simulate", "--tp", "2"], "--tensor-parallel-size"),
    (["simulate", "--workload", "constant", "--spread", "2"], "--spread"),
    (SWEEP + ["--ttft", "0.5"], "--ttft"),
    (SWEEP + ["--report", "none", "--output", "grid.csv"], "--output"),
    (CAP + ["--block-size", "32"], "--block-size"),
    (CAP + ["--gpu-memory-utilization", "0.9", "--workspace-fraction", "0.1"],
     "--gpu-memory-utilization"),
    (PRICE + ["--gpu-hourly", "3"], "--gpu-hourly"),
    (PRICE + ["--provisioned-monthly", "12000"], "--provisioned-capacity"),
    (CAL + ["--folds", "3"], "--folds"),
    (CAL + ["--model", "llama-3.1-8b"], "--model"),
    (PLAN + ["--prompt-mean", "999.5"], "--prompt-mean"),
    (PLAN + ["--gpus", "h100,no-such-gpu"], "no-such-gpu"),
    (SWEEP + ["--max-model-len", "1:99999999999999"], "--max-model-len"),
    # refused configurations and outputs
    (["capacity", "guide-70b", "lab", "--tp", "3"], "--tensor-parallel-size"),
    (CAP + ["--output", "result.xlsx"], "--output"),
    (CAP + ["--json", "--csv"], "--csv"),
    (["catalog", "prices", "no-such-row"], "no-such-row"),
    (["catalog", "gpus", "--output", "gpus"], "--output"),
    # speculative decoding in the simulator
    (["simulate", "--speculative-draft", "0.1"], "--speculative-draft"),
    (["simulate", "--speculative-draft", "0.1", "--num-speculative-tokens", "0",
      "--acceptance", "0.8"], "--num-speculative-tokens"),
    (["simulate", "--speculative-draft", "0.1", "--num-speculative-tokens", "65",
      "--acceptance", "0.8"], "--num-speculative-tokens"),
    (["simulate", "--speculative-draft", "0.1", "--num-speculative-tokens", "4",
      "--acceptance", "1.5"], "--acceptance"),
    (["simulate", "--speculative-draft", "0.1", "--num-speculative-tokens", "4",
      "--acceptance", "nan"], "--acceptance"),
    (["simulate", "--speculative-draft", "1.5", "--num-speculative-tokens", "4",
      "--acceptance", "0.8"], "--speculative-draft"),
    (["simulate", "--model", "llama-3.1-8b", "--gpu", "h100", "--speculative-draft",
      "llama-3.1-70b", "--num-speculative-tokens", "4", "--acceptance", "0.8"],
     "--speculative-draft"),
]


def test_there_are_many():
    assert len(BAD) >= 40


@pytest.mark.parametrize("argv, needle", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_command_line(argv, needle, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)      # anything written would land here
    try:
        code = main(argv)
    except SystemExit as exc:     # a usage error from the parser
        code = exc.code
    captured = capsys.readouterr()
    assert code == 2, captured.err
    assert captured.err.count("\n") == 1, captured.err
    assert "Traceback" not in captured.err
    assert needle in captured.err, captured.err
    assert captured.out == ""
    assert list(tmp_path.iterdir()) == []   # refused before any work: nothing written


@pytest.mark.parametrize("extension, package", [(".zarr", "zarr"), (".parquet", "pyarrow")])
def test_an_output_format_without_its_library_is_named(extension, package, capsys,
                                                       monkeypatch, tmp_path):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == package else real(name, *a))
    monkeypatch.chdir(tmp_path)
    code = main(CAP + ["--output", f"out{extension}"])
    err = capsys.readouterr().err
    assert code == 2 and extension in err and package in err and err.count("\n") == 1
