"""Bad command lines: each exits 2 with one line on stderr naming what is wrong, no traceback,
before any work (nothing is written, no simulation runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflinekit.cli.main import main

CAP = ["capacity", "guide-70b", "lab", "--tp", "8"]
CURVE = ["curve", "llama-3.1-8b", "--gpu", "h100", "--prompt-mean", "500", "--output-mean", "50"]
PRICE = ["price", "--input-price", "3", "--output-price", "12", "--output-fraction", "0.1"]
PLAN = ["plan", "llama-3.1-8b", "--gpus", "h100", "--rate", "5", "--prompt-mean", "1000",
        "--output-mean", "200", "--ttft", "1", "--replicates", "2", "--requests", "20"]
DIS = ["disaggregated", "llama-3.1-8b", "--gpu", "h100", "--rate", "5", "--prompt-mean", "1000",
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
    (CAP + ["--block-size", "32", "--workspace-fraction", "0.1"], "--block-size"),
    (CAP + ["--gpu-memory-utilization", "0.9", "--workspace-fraction", "0.1"],
     "--gpu-memory-utilization"),
    (PRICE + ["--gpu-hourly", "3"], "--gpu-hourly"),
    (PRICE + ["--provisioned-monthly", "12000"], "--provisioned-capacity"),
    (CAL + ["--folds", "3"], "--folds"),
    (CAL + ["--model", "llama-3.1-8b"], "--model"),
    (CAL + ["--cv", "colour"], "--cv"),
    # one group to leave out: refused before the fit
    (["calibrate", str(Path(__file__).parent / "data" / "measurements" / "public_holdout.csv"),
      "--cv", "gpu"], "--cv gpu"),
    (CAL + ["--cv", "engine"], "--cv engine"),
    (PLAN + ["--prompt-mean", "999.5"], "--prompt-mean"),
    (PLAN + ["--gpus", "h100,no-such-gpu"], "no-such-gpu"),
    (PLAN + ["--prefix-share", "0.5"], "--prefix-share"),
    (PLAN + ["--enable-prefix-caching"], "--enable-prefix-caching"),
    (PLAN + ["--prefix-tokens", "0"], "--prefix-tokens"),
    (SWEEP + ["--max-model-len", "1:99999999999999"], "--max-model-len"),
    (["layouts", "llama-3.1-8b", "h100", "--num-gpus", "0"], "--num-gpus"),
    (["layouts", "llama-3.1-8b", "h100", "--num-gpus", "99999999"], "--num-gpus"),
    (["layouts", "llama-3.1-8b", "h100", "--num-gpus", "8", "--batch-size", "2",
      "--micro-batches", "4"], "--micro-batches"),
    (["layouts", "llama-3.1-8b", "h100"], "--num-gpus"),
    # refused configurations and outputs
    (["capacity", "guide-70b", "lab", "--tp", "3"], "--tensor-parallel-size"),
    (CAP + ["--output", "result.xlsx"], "--output"),
    (CAP + ["--json", "--csv"], "--csv"),
    (["catalog", "prices", "no-such-row"], "no-such-row"),
    (["catalog", "gpus", "--output", "gpus"], "--output"),
    (DIS + ["--splits", "0P1D"], "--splits"),
    (DIS + ["--splits", "1P1D,one"], "--splits"),
    (DIS + ["--gpu-budget", "1"], "--gpu-budget"),
    (DIS + ["--gpu-budget", "4", "--splits", "1P1D"], "--splits"),
    (DIS, "--gpu-budget"),
    (DIS + ["--splits", "1P1D,1P1D"], "repeat"),
    (DIS + ["--splits", "1P1D", "--link-bandwidth", "0"], "--link-bandwidth"),
    (DIS + ["--splits", "1P1D", "--link-latency", "-1"], "--link-latency"),
    (DIS + ["--splits", "1P1D", "--gpu", "no-such-gpu"], "no-such-gpu"),
    # a GPU the catalogue gives no network bandwidth or no price: the flag that types one
    (DIS + ["--splits", "1P1D", "--gpu", "gb200"], "--link-bandwidth"),
    (PLAN + ["--gpus", "gb300"], "--gpu-hourly GB300=USD"),
]

#: The sweep's speculative-decoding and prefix-caching axes.
_SPEC = ["--speculative-draft", "0.05", "--acceptance", "0.8"]
BAD += [
    (SWEEP + ["--acceptance", "1.5"], "--acceptance"),
    (SWEEP + ["--acceptance", "nan"], "--acceptance"),
    (SWEEP + ["--acceptance", "0.5,x"], "--acceptance"),
    (SWEEP + ["--num-speculative-tokens", "-1"], "--num-speculative-tokens"),
    (SWEEP + ["--num-speculative-tokens", "65"], "--num-speculative-tokens"),
    (SWEEP + ["--draft-tokens", "2.5"], "--num-speculative-tokens"),
    (SWEEP + ["--num-speculative-tokens", "2"], "--acceptance"),
    (SWEEP + ["--num-speculative-tokens", "2", "--acceptance", "0.8"], "--speculative-draft"),
    (SWEEP + ["--num-speculative-tokens", "2,2"] + _SPEC, "draft_tokens"),
    (SWEEP + ["--num-speculative-tokens", "2", "--speculative-draft", "2",
              "--acceptance", "0.8"], "--speculative-draft"),
    (SWEEP + ["--num-speculative-tokens", "2", "--speculative-draft", "nan",
              "--acceptance", "0.8"], "--speculative-draft"),
    (SWEEP + ["--num-speculative-tokens", "2", "--speculative-draft", "no-such-model",
              "--acceptance", "0.8"], "no-such-model"),
    (SWEEP + ["--prefix-share", "-0.1"], "--prefix-share"),
    (SWEEP + ["--prefix-share", "inf"], "--prefix-share"),
    (SWEEP + ["--prefix-share", "half"], "--prefix-share"),
    (SWEEP + ["--prefix-share", "0.5,0.5"], "prefix_share"),
    (CAP + ["--speculative-draft", "1.5", "--num-speculative-tokens", "4", "--acceptance",
            "0.8"], "--speculative-draft"),
    # the price command's prompt-cache hits
    (PRICE + ["--prefix-share", "0.5"], "--cached-input-price"),
    (PRICE + ["--cached-input-price", "0.3"], "--prefix-share"),
    (PRICE + ["--cached-input-price", "0.3", "--prefix-share", "1.5"], "--prefix-share"),
    (PRICE + ["--cached-input-price", "0.3", "--prefix-share", "nan"], "--prefix-share"),
    (PRICE + ["--cached-input-price", "inf", "--prefix-share", "0.5"], "--cached-input-price"),
    (PRICE + ["--cached-input-price", "-1", "--prefix-share", "0.5"], "cached_input_per_mtok"),
    (PRICE + ["--cached-input-price", "0.3", "--prefix-share", "0.5", "--monthly-tokens",
              "1e9"], "--monthly-tokens"),
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


#: ``calibrate --from``: the engine benchmark formats and their configuration flags.
_OUTPUTS = Path(__file__).parent / "data" / "engine_outputs"
_RUN = ["--model", "llama-3.1-8b", "--gpu", "h100"]
_LAT = ["calibrate", "--from", "vllm-latency",
        str(_OUTPUTS / "vllm_latency_b8_in1024_out128.json")] + _RUN
_LAT_CONFIG = ["--batch-size", "8", "--input-len", "1024"]
BAD += [
    # the abridged report records no model (no config.backend): --model it must be
    (["calibrate", "--from", "guidellm", str(_OUTPUTS / "guidellm_report.json"), "--gpu",
      "h100"], "records no model"),
    (["calibrate", "--from", "guidellm", str(_OUTPUTS / "guidellm_report.json")], "--gpu"),
    (["calibrate", "--from", "trtllm"] + _RUN, "--from trtllm"),
    (["calibrate", "--from", "tgi", "x.json"] + _RUN, "--from"),
    (_LAT, "--batch-size"),
    (_LAT + ["--batch-size", "8", "--output-len", "128"], "--input-len"),
    (_LAT + _LAT_CONFIG + ["--output-len", "128"], "--prefill-result"),
    (_LAT + _LAT_CONFIG + ["--output-len", "1", "--prefill-result",
                           str(_OUTPUTS / "vllm_latency_b8_in1024_out1.json")],
     "--prefill-result"),
    (_LAT + ["--batch-size", "0", "--input-len", "1024", "--output-len", "1"], "--batch-size"),
    (_LAT + _LAT_CONFIG + ["--output-len", "2.5"], "--output-len"),
    (CAL + ["--batch-size", "8"], "--batch-size"),
    (CAL + ["--prefill-result", "prefill.json"], "--prefill-result"),
    (CAL + ["--engine", "vllm 0.10.1"], "--engine"),
    (CAL + ["--kv-cache-dtype", "fp8"], "--kv-cache-dtype"),
    (["calibrate", "--from", "guidellm", str(_OUTPUTS / "guidellm_report.json")] + _RUN
     + ["--input-len", "1024"], "--input-len"),
    (["calibrate", "--from", "trtllm", str(_OUTPUTS / "trtllm_bench_report.json")] + _RUN
     + ["--tp", "2"], "tp_size=1"),
    (["calibrate", "--from", "guidellm", str(_OUTPUTS / "trtllm_bench_report.json")] + _RUN,
     "benchmarks"),
]

#: plan's pipeline stages: whole degrees >= 1
BAD += [(PLAN + ["--pp", "0"], "--pipeline-parallel-size"),
        (PLAN + ["--pp", "1,x"], "--pipeline-parallel-size")]

#: plan's speculative decoding: the three flags together, a draft that suits the target
_PLAN_SPEC = ["--num-speculative-tokens", "4", "--acceptance", "0.8"]
BAD += [
    (PLAN + ["--acceptance", "0.8"], "--speculative-draft"),
    (PLAN + ["--speculative-draft", "0.05"], "--speculative-draft"),
    (PLAN + ["--speculative-draft", "2"] + _PLAN_SPEC, "--speculative-draft"),
    (PLAN + ["--speculative-draft", "nan"] + _PLAN_SPEC, "--speculative-draft"),
    (PLAN + ["--speculative-draft", "no-such-model"] + _PLAN_SPEC, "no-such-model"),
    (PLAN + ["--speculative-draft", "mistral-7b"] + _PLAN_SPEC, "--speculative-draft"),
    (PLAN + ["--speculative-draft", "0.05", "--num-speculative-tokens", "65",
             "--acceptance", "0.8"], "--num-speculative-tokens"),
    (PLAN + ["--speculative-draft", "0.05", "--num-speculative-tokens", "4",
             "--acceptance", "1.5"], "--acceptance"),
    # capacity's shared prefix: shaped only with --prefix-tokens, within a sequence
    (CAP + ["--prefix-share", "0.5"], "--prefix-tokens"),
    (CAP + ["--prefix-groups", "2"], "--prefix-tokens"),
    (CAP + ["--prefix-tokens", "0"], "--prefix-tokens"),
    (CAP + ["--prefix-tokens", "9000"], "--max-model-len"),
    (CAP + ["--prefix-tokens", "100", "--prefix-share", "1.5"], "--prefix-share"),
    (CAP + ["--prefix-tokens", "100", "--prefix-groups", "0"], "--prefix-groups"),
    # curve: rates or concurrencies, one of them, each valid
    (CURVE, "one of the arguments --rates --concurrencies is required"),
    (CURVE + ["--rates", "1", "--concurrencies", "4"], "not allowed with argument --rates"),
    (CURVE + ["--rates", "0"], "--rates: must be a finite number in (0, inf)"),
    (CURVE + ["--rates", "nan"], "--rates: must be a finite number"),
    (CURVE + ["--concurrencies", "0"], "--concurrencies"),
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


@pytest.mark.parametrize("argv, needle", [
    (CAL + ["--fit", "engine", "--fit", "step_overhead"], "--fit engine"),
    (CAL + ["--group-by", "colour"], "--group-by"),
    (CAL + ["--fit", "layer_overhed"], "--fit"),
], ids=["engine-not-alone", "group-by-unknown", "fit-typo"])
def test_bad_calibration_structure_flags(argv, needle, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    assert code == 2, captured.err
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert needle in captured.err, captured.err
    assert list(tmp_path.iterdir()) == []
