"""``rooflinekit calibrate --from FORMAT``: the engine benchmark readers on the command line."""

from __future__ import annotations

import json
import re
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


def test_the_files_record_the_model():
    """vLLM's ``model_id`` and trtllm-bench's ``engine.model``; the abridged GuideLLM report
    keeps no backend (below: where it does); a recorded name that is not a string is refused
    naming the field."""
    from rooflinekit.calibrate.readers import recorded_model
    assert recorded_model(SERVE) == "meta-llama/Meta-Llama-3-8B-Instruct"
    assert recorded_model(OUTPUTS / "trtllm_bench_report.json") == \
        "meta-llama/Llama-3.1-8B-Instruct"
    assert recorded_model(OUTPUTS / "guidellm_report.json") is None
    assert recorded_model({"model_id": "  "}) is None
    with pytest.raises(ValueError, match="field 'model_id' must be a string"):
        recorded_model({"model_id": 3})


def _guidellm_with(backend_of) -> dict:
    """The GuideLLM fixture with each benchmark's backend as ``backend_of(i, benchmark)`` sets
    it (GuideLLM 0.4 on: ``config.backend``, the backend's arguments; 0.3:
    ``worker.backend_model``)."""
    report = json.loads((OUTPUTS / "guidellm_report.json").read_text(encoding="utf-8"))
    for i, bench in enumerate(report["benchmarks"]):
        backend_of(i, bench)
    return report


def _backend(model):
    def put(i, bench):
        bench["config"]["backend"] = {"kind": "openai_http", "target": "http://localhost:8000",
                                      "model": model}
    return put


def test_a_guidellm_report_records_its_backends_model(tmp_path):
    """GuideLLM 0.4-0.7 write each benchmark's backend arguments as ``config.backend`` (the
    model ``--model`` gave, empty without it: guidellm ``src/guidellm/backends/backend.py``
    ``Backend.info`` at ``ee7a774``); 0.3 wrote ``worker.backend_model`` (``"None"`` when
    unknown: ``src/guidellm/scheduler/worker.py`` at ``v0.3.1``). A report names the model
    where every benchmark names the same one."""
    from rooflinekit.calibrate import recorded_model
    name = "meta-llama/Llama-3.1-8B-Instruct"
    assert recorded_model(_guidellm_with(_backend(name))) == name
    assert recorded_model(_guidellm_with(_backend(""))) is None
    assert recorded_model(_guidellm_with(_backend(None))) is None

    def old(i, bench):
        bench["worker"] = {"backend_type": "openai_http", "backend_model": name}
    assert recorded_model(_guidellm_with(old)) == name

    def unknown(i, bench):
        bench["worker"] = {"backend_type": "openai_http", "backend_model": "None"}
    assert recorded_model(_guidellm_with(unknown)) is None

    def mixed(i, bench):
        _backend(name if i else "Qwen/Qwen2.5-7B-Instruct")(i, bench)
    assert recorded_model(_guidellm_with(mixed)) is None
    path = tmp_path / "benchmarks.json"
    path.write_text(json.dumps(_guidellm_with(_backend(3))), encoding="utf-8")
    with pytest.raises(ValueError, match=r"benchmarks\.json: field "
                                         r"'benchmarks\[0\]\.config\.backend\.model' must be"):
        recorded_model(path)
    yaml = pytest.importorskip("yaml")
    path = tmp_path / "benchmarks.yaml"
    path.write_text(yaml.dump(_guidellm_with(_backend(name))), encoding="utf-8")
    assert recorded_model(path) == name


def test_a_guidellm_report_without_model_fits_the_model_it_records(capsys, tmp_path):
    """``--from guidellm`` without ``--model``: the report's backend model is the runs'
    (``Llama-3.1-8B-Instruct`` is the catalogue's Llama-3.1-8B), the same fit as with
    ``--model llama-3.1-8b``."""
    path = tmp_path / "benchmarks.json"
    path.write_text(json.dumps(_guidellm_with(_backend("meta-llama/Llama-3.1-8B-Instruct"))),
                    encoding="utf-8")
    flags = ["--gpu", "h100", "--engine", "vllm 0.10.1", "--fit", "step_overhead", "--json"]
    assert main(["calibrate", "--from", "guidellm", str(path), *flags]) == 0
    recorded = json.loads(capsys.readouterr().out)
    assert main(["calibrate", "--from", "guidellm", str(path), "--model", "llama-3.1-8b",
                 *flags]) == 0
    assert json.loads(capsys.readouterr().out)["parameters"] == recorded["parameters"]


def test_without_model_the_runs_are_of_the_model_the_files_record(capsys):
    """A repo id whose last part is a catalogue name (trtllm-bench's
    meta-llama/Llama-3.1-8B-Instruct) is that model: the same fit as with --model."""
    fit = ["--gpu", "h100", "--resamples", "0", "--fit", "step_overhead"]
    report = str(OUTPUTS / "trtllm_bench_report.json")
    assert _json(["--from", "trtllm", report, *fit], capsys) == \
        _json(["--from", "trtllm", report, "--model", "llama-3.1-8b", *fit], capsys)


def test_a_quantised_release_is_its_base_model_in_the_format_dtype_gives(capsys, tmp_path):
    """DigitalOcean's runs record /models/nvidia/Llama-3.1-70B-Instruct-FP8: with --dtype fp8
    they are Llama-3.1-70B's, as with --model; without --dtype, refused (the name's format is
    not guessed)."""
    doks = [str(DATA / "load_sweeps" / "doks" / f"rate-{r}.json") for r in ("0.5", "2.0")]
    runs = ["--under-load", "--vllm-result", doks[0], "--vllm-result", doks[1], "--gpu", "h200",
            "--kv-cache-dtype", "fp8"]
    assert _json([*runs, "--dtype", "fp8"], capsys) == \
        _json([*runs, "--dtype", "fp8", "--model", "llama-3.1-70b"], capsys)
    assert main(["calibrate", *runs]) == 2
    assert "a quantised release of 'Llama-3.1-70B-Instruct': give its weight format with " \
        "--dtype" in capsys.readouterr().err


@pytest.mark.parametrize("payloads, match", [
    ([{"model_id": "meta-llama/Llama-3.1-8B-Instruct"}, {"model_id": "Qwen/Qwen3-8B"}],
     "the files record different models"),
    ([{"model_id": None}], "records no model"),
    ([{"model_id": "acme/not-a-model"}], "neither a catalogue model .*'not-a-model'"),
])
def test_without_model_a_file_that_cannot_say_it_is_refused(payloads, match, tmp_path, capsys):
    run = json.loads(SERVE.read_text())
    args = []
    for i, payload in enumerate(payloads):
        path = tmp_path / f"run{i}.json"
        path.write_text(json.dumps({**run, **payload}))
        args += ["--vllm-result", str(path)]
    assert main(["calibrate", *args, "--gpu", "h100", "--fit", "step_overhead"]) == 2
    assert re.search(match, capsys.readouterr().err)


def test_the_gpu_is_never_read_from_a_file(capsys):
    assert main(["calibrate", "--vllm-result", str(SERVE), "--model", "llama-3.1-8b"]) == 2
    assert "needs --gpu (no benchmark file records the GPU)" in capsys.readouterr().err
    assert main(["calibrate", "--from", "guidellm", str(OUTPUTS / "guidellm_report.json"),
                 "--gpu", "h100"]) == 2
    assert "records no model (vLLM's model_id, trtllm-bench's engine.model, GuideLLM's " \
        "config.backend.model); give --model" in capsys.readouterr().err


def test_one_file_of_appended_runs_fits_as_its_files_do(capsys, tmp_path):
    """``vllm bench serve --append-result``: the two DigitalOcean runs in one file, one a line,
    their model read from the lines' model_id."""
    doks = [DATA / "load_sweeps" / "doks" / f"rate-{r}.json" for r in ("0.5", "2.0")]
    lines = tmp_path / "runs.jsonl"
    lines.write_text("".join(json.dumps(json.loads(p.read_text())) + "\n" for p in doks))
    common = ["--under-load", "--gpu", "h200", "--dtype", "fp8", "--kv-cache-dtype", "fp8"]
    one = _json([*common, "--vllm-result", str(lines)], capsys)
    two = _json([*common, "--vllm-result", str(doks[0]), "--vllm-result", str(doks[1])], capsys)
    assert one["calibration"]["decode"] == two["calibration"]["decode"]
    assert one["calibration"]["prefill"] == two["calibration"]["prefill"]


def test_a_file_of_sglang_runs_gives_a_row_a_run(tmp_path):
    """``sglang.bench_serving --output-file`` lines read in closed form: a row a line, the
    open-loop concurrency by Little's law from SGLang's ``mean_e2e_latency_ms`` (hand
    computed), each row's source naming its line, and a bad line refused naming it."""
    from rooflinekit.calibrate import read_vllm_result
    run = {"backend": "sglang", "request_rate": 2.0, "max_concurrency": None, "completed": 100,
           "total_input_tokens": 100_000, "total_output_tokens": 20_000,
           "request_throughput": 1.9, "mean_e2e_latency_ms": 3_000.0, "mean_ttft_ms": 80.0,
           "median_ttft_ms": 70.0, "mean_tpot_ms": 14.0, "median_tpot_ms": 13.0,
           "mean_itl_ms": 14.0, "median_itl_ms": 12.0}
    path = tmp_path / "sglang.jsonl"
    path.write_text(json.dumps(run) + "\n" + json.dumps({**run, "request_rate": 4.0}) + "\n")
    ds = read_vllm_result(str(path), model="llama-3.1-8b", gpu="h100")
    assert ds.sizes["measurement"] == 2
    # Little's law: 1.9 requests/s x 3.0 s in flight
    assert ds["batch_size"].values.tolist() == pytest.approx([5.7, 5.7])
    assert ds["tpot"].values.tolist() == pytest.approx([0.013, 0.013])
    assert [s.split(" (")[0] for s in ds["source"].values] == \
        ["vllm bench serve sglang.jsonl, line 1", "vllm bench serve sglang.jsonl, line 2"]
    del run["total_input_tokens"]
    path.write_text(json.dumps({**run, "total_input_tokens": 1}) + "\n" + json.dumps(run) + "\n")
    with pytest.raises(ValueError, match=r"sglang\.jsonl, line 2: vllm result lacks field "
                                         r"'total_input_tokens'"):
        read_vllm_result(str(path), model="llama-3.1-8b", gpu="h100")
