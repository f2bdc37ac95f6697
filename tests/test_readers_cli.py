"""``rooflinekit calibrate --from FORMAT``: the engine benchmark readers on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflinekit.cli.main import main

DATA = Path(__file__).parent / "data"
OUTPUTS = DATA / "engine_outputs"
SERVE = DATA / "measurements" / "vllm_result_lambda_h100_llama3_8b.json"
RUN = ["--model", "llama-3.1-8b", "--gpu", "h100", "--resamples", "0"]


def _json(argv, capsys):
    code = main(["calibrate", *argv, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def test_from_vllm_serve_is_vllm_result(capsys):
    fit = ["--fit", "step_overhead"]
    assert _json(["--from", "vllm-serve", str(SERVE), *RUN, *fit], capsys) == \
        _json(["--vllm-result", str(SERVE), *RUN, *fit], capsys)


def test_from_trtllm_text_and_json_agree(capsys):
    fit = ["--fit", "step_overhead"]
    text = _json(["--from", "trtllm", str(OUTPUTS / "trtllm_bench_report.log"), *RUN, *fit],
                 capsys)
    report = _json(["--from", "trtllm", str(OUTPUTS / "trtllm_bench_report.json"), *RUN, *fit],
                   capsys)
    # the same rows but the source (the file's name) and the throughput (four decimals)
    assert text["parameters"] == report["parameters"]


def test_cv_engine_across_formats(capsys):
    payload = _json(["--from", "trtllm", str(OUTPUTS / "trtllm_bench_report.json"),
                     "--vllm-result", str(SERVE), *RUN, "--fit", "step_overhead",
                     "--cv", "engine"], capsys)
    held_out = payload["cross_validation"]["folds"]["data_vars"]["held_out"]["data"]
    # trtllm-bench says its version; a vllm bench serve result does not (no --engine: blank)
    assert held_out == ["tensorrt-llm 0.21.0", ""]


def test_from_guidellm_with_the_configuration_flags(capsys):
    main(["calibrate", "--from", "guidellm", str(OUTPUTS / "guidellm_report.json"), *RUN,
          "--engine", "vllm 0.10.1", "--kv-cache-dtype", "fp8", "--tp", "2",
          "--fit", "step_overhead"])
    out = capsys.readouterr().out
    assert out.startswith("rooflinekit calibrate: 3 measurement(s)")


def test_from_guidellm_yaml(capsys, tmp_path):
    yaml = pytest.importorskip("yaml")
    path = tmp_path / "benchmarks.yaml"
    report = json.loads((OUTPUTS / "guidellm_report.json").read_text(encoding="utf-8"))
    path.write_text(yaml.dump(report), encoding="utf-8")
    main(["calibrate", "--from", "guidellm", str(path), *RUN, "--engine", "vllm 0.10.1",
          "--fit", "step_overhead"])
    assert capsys.readouterr().out.startswith("rooflinekit calibrate: 3 measurement(s)")


def test_from_vllm_latency_one_output_token_fits_prefill_only(capsys):
    payload = _json(["--from", "vllm-latency", str(OUTPUTS / "vllm_latency_b8_in1024_out1.json"),
                     *RUN, "--batch-size", "8", "--input-len", "1024", "--output-len", "1",
                     "--phase", "prefill", "--fit", "step_overhead"], capsys)
    errors = payload["errors"]["data_vars"]["n"]["data"]
    assert errors == [1, 0]           # one prefill row, no decode row
