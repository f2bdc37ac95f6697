"""Tests of rooflinekit.calibrate.readers: engine benchmark outputs as measurement rows.

The files in ``tests/data/engine_outputs/`` are format examples written after each tool's
output-writing code (see the README there), not measurements; the ``vllm bench serve`` result
is a real one from ``tests/data/measurements/``. Every expected value below is computed by hand
from the numbers in those files.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rooflinekit.calibrate import (
    MEASUREMENT_COLUMNS,
    concat_measurements,
    cross_validate,
    measurements_to_records,
    read_guidellm_report,
    read_trtllm_bench,
    read_vllm_latency,
    read_vllm_result,
)

DATA = Path(__file__).parent / "data" / "engine_outputs"
LATENCY = DATA / "vllm_latency_b8_in1024_out128.json"
PREFILL = DATA / "vllm_latency_b8_in1024_out1.json"
GUIDELLM = DATA / "guidellm_report.json"
TRT_JSON = DATA / "trtllm_bench_report.json"
TRT_TEXT = DATA / "trtllm_bench_report.log"
LAMBDA_JSON = Path(__file__).parent / "data" / "measurements" / \
    "vllm_result_lambda_h100_llama3_8b.json"
WHERE = {"model": "llama-3.1-8b", "gpu": "H100-SXM-80GB"}
LATENCY_RUN = {**WHERE, "batch_size": 8, "prompt_tokens": 1024, "output_tokens": 128}


def _row(ds, i=0):
    row = measurements_to_records(ds)[i]
    assert set(row) == set(MEASUREMENT_COLUMNS)
    return row


def _json(path):
    return json.loads(path.read_text(encoding="utf-8"))


# -- vllm bench serve --------------------------------------------------------------------------

def test_read_vllm_result_lambda_file():
    """A real `benchmark_serving.py` result (LambdaLabsML/vllm-benchmark, see the data README)."""
    ds = read_vllm_result(LAMBDA_JSON, model="llama-3.1-8b", gpu="h100")
    assert ds.sizes["measurement"] == 1
    assert ds["prompt_tokens"].item() == pytest.approx(1369 / 10, rel=1e-12)   # total/completed
    assert ds["output_tokens"].item() == pytest.approx(1867 / 10, rel=1e-12)
    # no max_concurrency: Little's law, request_throughput × mean latency = 1.8634/s × 1.4318 s
    assert ds["batch_size"].item() == pytest.approx(1.8633739431904777 * 1.4317765221989248,
                                                    rel=1e-12)
    assert ds["tpot"].item() == pytest.approx(7.558259615148475e-3, rel=1e-12)  # median_tpot_ms
    assert ds["ttft"].item() == pytest.approx(62.1947320032632e-3, rel=1e-12)   # median_ttft_ms
    assert ds["output_throughput"].item() == pytest.approx(347.8919151936622, rel=1e-12)
    assert "Meta-Llama-3-8B-Instruct" in ds["source"].item()
    mean = read_vllm_result(LAMBDA_JSON, model="llama-3.1-8b", gpu="h100", statistic="mean")
    assert mean["tpot"].item() == pytest.approx(11.105466039313557e-3, rel=1e-12)


def test_read_vllm_result_new_format_dict():
    """`vllm bench serve` keys: mean_e2el_ms, max_concurrency (numbers made up for the test)."""
    result = {"completed": 100, "total_input_tokens": 102400, "total_output_tokens": 12800,
              "max_concurrency": 8, "request_rate": "inf", "request_throughput": 5.0,
              "mean_e2el_ms": 1500.0, "median_ttft_ms": 40.0, "median_tpot_ms": 11.0,
              "median_itl_ms": 10.5, "output_throughput": 640.0, "model_id": "m"}
    ds = read_vllm_result(result, model="llama-3.1-8b", gpu="a100", tp=1, source="run 7")
    assert ds["batch_size"].item() == 8                   # the cap the client enforced
    assert ds["prompt_tokens"].item() == 1024
    assert ds["itl"].item() == pytest.approx(0.0105)
    assert ds["source"].item() == "run 7"
    no_cap = dict(result, max_concurrency=None)
    assert read_vllm_result(no_cap, model="m", gpu="g")["batch_size"].item() == \
        pytest.approx(7.5)                                # 5/s × 1.5 s
    with pytest.raises(ValueError, match="'completed'"):
        read_vllm_result({"total_input_tokens": 1}, model="m", gpu="g")
    with pytest.raises(ValueError, match="statistic"):
        read_vllm_result(result, model="m", gpu="g", statistic="p99")


# -- vllm bench latency ------------------------------------------------------------------------

def test_vllm_latency_split_by_its_prefill_run():
    ds = read_vllm_latency(LATENCY, prefill=PREFILL, **LATENCY_RUN)
    row = _row(ds)
    # percentiles["50"]: 1.0501365 s for the batch, 0.195028 s for its --output-len 1 run
    assert row["ttft_ms"] == pytest.approx(195.028)
    assert row["tpot_ms"] == pytest.approx((1050.1365 - 195.028) / 127)
    assert row["output_throughput"] == pytest.approx(8 * 128 / 1.0501365)
    assert row["itl_ms"] is None
    assert (row["model"], row["gpu"], row["tp"]) == ("llama-3.1-8b", "H100-SXM-80GB", 1)
    assert (row["batch_size"], row["prompt_tokens"], row["output_tokens"]) == (8, 1024, 128)
    assert row["ttft_kind"] == "static_batch" and row["engine"] == "vllm"
    assert row["dtype"] == "" and row["kv_dtype"] == ""
    assert "iterations=30" in row["source"] and LATENCY.name in row["source"]
    assert "1050.14 ms" in row["notes"] and PREFILL.name in row["notes"]
    assert ds.attrs["file"] == str(LATENCY)
    # the Dataset holds seconds
    assert float(ds["tpot"][0]) == pytest.approx((1.0501365 - 0.195028) / 127)


def test_vllm_latency_of_one_output_token_is_the_batch_ttft():
    row = _row(read_vllm_latency(PREFILL, **{**LATENCY_RUN, "output_tokens": 1}))
    assert row["ttft_ms"] == pytest.approx(195.028)
    assert row["tpot_ms"] is None and row["ttft_kind"] == "static_batch"
    assert row["output_throughput"] == pytest.approx(8 / 0.195028)


def test_vllm_latency_mean_and_a_given_ttft():
    row = _row(read_vllm_latency(LATENCY, ttft_ms=200.0, statistic="mean", dtype="fp8",
                                 kv_dtype="fp8", tp=2, engine="vllm 0.10.1", source="run 7",
                                 **LATENCY_RUN))
    # avg_latency 1.0497355 s
    assert row["tpot_ms"] == pytest.approx((1049.7355 - 200.0) / 127)
    assert row["ttft_ms"] == 200
    assert (row["dtype"], row["kv_dtype"], row["tp"]) == ("fp8", "fp8", 2)
    assert (row["engine"], row["source"]) == ("vllm 0.10.1", "run 7")


def test_vllm_latency_reads_a_mapping_and_the_older_keys():
    older = {k: v for k, v in _json(LATENCY).items() if k != "std_latency"}
    ds = read_vllm_latency(older, ttft_ms=195.028, **LATENCY_RUN)
    assert _row(ds)["tpot_ms"] == pytest.approx((1050.1365 - 195.028) / 127)
    assert "file" not in ds.attrs          # no file to name in later errors


@pytest.mark.parametrize("changes, match", [
    ({}, "ttft_ms= or prefill="),
    ({"ttft_ms": 100.0, "prefill": PREFILL}, "not both"),
    ({"ttft_ms": 2000.0}, "must exceed the TTFT"),
    ({"output_tokens": 1, "ttft_ms": 100.0}, "itself the batch's TTFT"),
    ({"batch_size": 0, "ttft_ms": 1.0}, "batch_size"),
    ({"prompt_tokens": 2.5, "ttft_ms": 1.0}, "prompt_tokens"),
    ({"ttft_ms": -1.0}, "ttft_ms"),
    ({"ttft_ms": math.nan}, "ttft_ms"),
    ({"statistic": "p99", "ttft_ms": 1.0}, "statistic"),
])
def test_vllm_latency_refuses(changes, match):
    with pytest.raises((ValueError, TypeError), match=match):
        read_vllm_latency(LATENCY, **{**LATENCY_RUN, **changes})


@pytest.mark.parametrize("payload, field", [
    ({"avg_latency": 1.0}, "percentiles.50"),
    ({"percentiles": {"10": 1.0}}, "percentiles.50"),
    ({"percentiles": {"50": "fast"}}, "percentiles.50"),
    ({"percentiles": {"50": 0.0}}, "latency must be > 0"),
])
def test_vllm_latency_names_the_file_and_the_field(tmp_path, payload, field):
    path = tmp_path / "latency.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    with pytest.raises(ValueError, match=field) as info:
        read_vllm_latency(path, **{**LATENCY_RUN, "output_tokens": 1})
    assert str(path) in str(info.value)


def test_vllm_latency_mean_needs_avg_latency(tmp_path):
    path = tmp_path / "latency.json"
    path.write_text(json.dumps({"percentiles": {"50": 1.0}}), encoding="utf-8")
    with pytest.raises(ValueError, match="'avg_latency'"):
        read_vllm_latency(path, statistic="mean", **{**LATENCY_RUN, "output_tokens": 1})


# -- GuideLLM ----------------------------------------------------------------------------------

def test_guidellm_one_row_per_benchmark():
    ds = read_guidellm_report(GUIDELLM, engine="vllm 0.10.1", **WHERE)
    rows = measurements_to_records(ds)
    assert len(rows) == 3
    sync, conc, rate = rows
    # synchronous: batch 1; concurrent: streams; constant: request_concurrency.total.mean
    assert [r["batch_size"] for r in rows] == [1, 16, 7.2]
    # prompt/output_token_count.successful.mean
    assert [r["prompt_tokens"] for r in rows] == [1000.4, 1001.4, 1002.4]
    assert [r["output_tokens"] for r in rows] == [127.6, 127.7, 127.8]
    # time_to_first_token_ms / inter_token_latency_ms .successful.median
    assert [r["ttft_ms"] for r in rows] == [21.4, 48.2, 35.7]
    assert [r["tpot_ms"] for r in rows] == [6.31, 7.94, 7.12]
    assert all(r["itl_ms"] is None for r in rows)
    # output_tokens_per_second.total.mean
    assert [r["output_throughput"] for r in rows] == [152.3, 1871, 1010.5]
    assert all(r["engine"] == "vllm 0.10.1" and r["ttft_kind"] == "isolated" for r in rows)
    assert "guidellm 0.7.3" in sync["source"] and "benchmarks[0] (synchronous)" in sync["source"]
    assert "streams=16" in conc["source"] and "rate=8.0" in rate["source"]
    assert "time-averaged concurrency" in rate["notes"]


def test_guidellm_mean_statistic():
    rows = measurements_to_records(read_guidellm_report(GUIDELLM, statistic="mean", **WHERE))
    # the fixture's means are 1.04 x the median TTFT and 1.01 x the median ITL
    assert [r["ttft_ms"] for r in rows] == pytest.approx([21.4 * 1.04, 48.2 * 1.04, 35.7 * 1.04])
    assert [r["tpot_ms"] for r in rows] == pytest.approx([6.31 * 1.01, 7.94 * 1.01, 7.12 * 1.01])
    assert all(r["engine"] == "" for r in rows)


def test_guidellm_before_0_4_keeps_the_strategy_under_args():
    report = _json(GUIDELLM)
    bench = report["benchmarks"][1]
    bench["args"] = {"strategy": bench.pop("config")["strategy"]}
    del report["metadata"]
    row = _row(read_guidellm_report({"benchmarks": [bench]}, **WHERE))
    assert row["batch_size"] == 16 and row["tpot_ms"] == 7.94
    assert row["source"].startswith("guidellm GuideLLM report benchmarks[0]")


@pytest.mark.parametrize("spoil, match", [
    (lambda r: r.update(benchmarks=[]), "non-empty 'benchmarks'"),
    (lambda r: r.pop("benchmarks"), "non-empty 'benchmarks'"),
    (lambda r: r["benchmarks"][1]["metrics"].pop("inter_token_latency_ms"),
     r"'benchmarks\[1\].metrics.inter_token_latency_ms.successful.median'"),
    (lambda r: r["benchmarks"][2]["metrics"]["request_concurrency"]["total"].update(mean="7"),
     r"'benchmarks\[2\].metrics.request_concurrency.total.mean' must be a number"),
    (lambda r: r["benchmarks"][0].pop("config"), r"'benchmarks\[0\].config.strategy'"),
    (lambda r: r["benchmarks"][1]["config"]["strategy"].pop("streams"),
     r"'benchmarks\[1\].config.strategy.streams'"),
    (lambda r: r["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"].update(
        median=1e400), "finite number"),
])
def test_guidellm_names_the_file_and_the_field(tmp_path, spoil, match):
    report = _json(GUIDELLM)
    spoil(report)
    path = tmp_path / "benchmarks.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    with pytest.raises(ValueError, match=match) as info:
        read_guidellm_report(path, **WHERE)
    assert str(path) in str(info.value)


def test_guidellm_refuses_a_row_the_format_refuses(tmp_path):
    report = _json(GUIDELLM)
    report["benchmarks"][2]["metrics"]["request_concurrency"]["total"]["mean"] = 0.0
    path = tmp_path / "benchmarks.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    with pytest.raises(ValueError, match="batch_size must be > 0") as info:
        read_guidellm_report(path, **WHERE)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("suffix", [".yaml", ".yml"])
def test_guidellm_yaml_report_gives_the_json_rows(tmp_path, suffix):
    # GuideLLM writes yaml.dump of the same model_dump it writes as JSON
    yaml = pytest.importorskip("yaml")
    path = tmp_path / f"benchmarks{suffix}"
    path.write_text(yaml.dump(_json(GUIDELLM)), encoding="utf-8")
    from_yaml = measurements_to_records(read_guidellm_report(path, **WHERE))
    from_json = measurements_to_records(read_guidellm_report(GUIDELLM, **WHERE))
    assert len(from_yaml) == len(from_json) == 3
    for a, b in zip(from_yaml, from_json):
        assert a["source"] == b["source"].replace("guidellm_report.json", path.name)
        assert {k: v for k, v in a.items() if k != "source"} == \
            {k: v for k, v in b.items() if k != "source"}


@pytest.mark.parametrize("text, match", [
    ("benchmarks: [\n  {a: 1\n", r"not a YAML document \(line \d+, column \d+\)"),
    ("!!python/object/apply:os.system ['true']\n", "not a YAML document"),
    ("- 1\n- 2\n", "holds a JSON object"),
])
def test_guidellm_yaml_names_the_file(tmp_path, text, match):
    pytest.importorskip("yaml")
    path = tmp_path / "benchmarks.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=match) as info:
        read_guidellm_report(path, **WHERE)
    assert str(path) in str(info.value)


def test_guidellm_yaml_without_pyyaml_says_what_to_install(tmp_path, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "yaml", None)      # import yaml now fails
    path = tmp_path / "benchmarks.yaml"
    path.write_text("benchmarks: []\n", encoding="utf-8")
    with pytest.raises(ImportError, match=r"needs PyYAML.*rooflinekit\[yaml\].*as JSON"):
        read_guidellm_report(path, **WHERE)
    # a JSON report needs no YAML parser
    assert len(measurements_to_records(read_guidellm_report(GUIDELLM, **WHERE))) == 3


# -- trtllm-bench ------------------------------------------------------------------------------

def test_trtllm_json_report():
    row = _row(read_trtllm_bench(TRT_JSON, **WHERE))
    # 512 requests x 1500 ms average latency over a 12000 ms span: 64 in flight on average
    assert row["batch_size"] == 64
    assert (row["prompt_tokens"], row["output_tokens"]) == (1024, 128)
    assert (row["ttft_ms"], row["tpot_ms"]) == (240, 9.8)        # the p50s
    assert row["output_throughput"] == pytest.approx(512 * 128 / 12.0)
    assert row["tp"] == 1 and row["engine"] == "tensorrt-llm 0.21.0"
    assert row["dtype"] == "" and row["kv_dtype"] == ""          # bf16, no quantization
    assert "meta-llama/Llama-3.1-8B-Instruct" in row["source"] and "requests=512" in row["source"]
    assert "backend Pytorch" in row["notes"]


def test_trtllm_text_report_reads_as_its_json():
    from_text = _row(read_trtllm_bench(TRT_TEXT, **WHERE))
    from_json = _row(read_trtllm_bench(TRT_JSON, **WHERE))
    for column in ("batch_size", "prompt_tokens", "output_tokens", "ttft_ms", "tpot_ms", "tp",
                   "engine", "dtype", "kv_dtype"):
        assert from_text[column] == from_json[column], column
    # the text prints four decimals
    assert from_text["output_throughput"] == pytest.approx(5461.3333)
    assert "backend Pytorch" in from_text["notes"]
    text = TRT_TEXT.read_text(encoding="utf-8")
    assert _row(read_trtllm_bench(text, **WHERE))["ttft_ms"] == 240


def test_trtllm_mean_statistic():
    row = _row(read_trtllm_bench(TRT_JSON, statistic="mean", **WHERE))
    assert row["ttft_ms"] == 250
    assert row["tpot_ms"] == pytest.approx((1500 - 250) / 127)
    assert _row(read_trtllm_bench(TRT_TEXT, statistic="mean", **WHERE))["tpot_ms"] == 9.8425


def test_trtllm_formats_from_the_report():
    report = _json(TRT_JSON)
    report["engine"].update(quantization="FP8", kv_cache_dtype="FP8", version="1.0.0rc4")
    row = _row(read_trtllm_bench(report, **WHERE))
    assert (row["dtype"], row["kv_dtype"], row["engine"]) == ("fp8", "fp8", "tensorrt-llm 1.0.0rc4")
    report["engine"]["quantization"] = "W4A16_AWQ"
    with pytest.raises(ValueError, match="W4A16_AWQ.*dtype="):
        read_trtllm_bench(report, **WHERE)
    assert _row(read_trtllm_bench(report, dtype="int4", engine="trt", **WHERE))["dtype"] == "int4"


@pytest.mark.parametrize("spoil, match", [
    (lambda r: r.pop("streaming_metrics"), "--streaming"),
    (lambda r: r["world_info"].update(pp_size=2), "pp_size=2"),
    (lambda r: r["request_info"].pop("avg_input_length"), "'request_info.avg_input_length'"),
    (lambda r: r["world_info"].pop("tp_size"), "'world_info.tp_size'"),
    (lambda r: r["streaming_metrics"]["tpot_percentiles"].pop("p50"),
     "'streaming_metrics.tpot_percentiles.p50'"),
])
def test_trtllm_names_the_file_and_the_field(tmp_path, spoil, match):
    report = _json(TRT_JSON)
    spoil(report)
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    with pytest.raises(ValueError, match=match) as info:
        read_trtllm_bench(path, **WHERE)
    assert str(path) in str(info.value)


def test_trtllm_tp_must_match_the_report():
    with pytest.raises(ValueError, match="tp=2 differs from the report's tp_size=1"):
        read_trtllm_bench(TRT_JSON, tp=2, **WHERE)
    assert _row(read_trtllm_bench(TRT_JSON, tp=1, **WHERE))["tp"] == 1


def test_trtllm_text_without_a_report(tmp_path):
    path = tmp_path / "server.log"
    path.write_text("[TensorRT-LLM][INFO] Engine loaded\nnothing else\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not a trtllm-bench report") as info:
        read_trtllm_bench(path, **WHERE)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("reader, kwargs", [
    (read_vllm_latency, {**LATENCY_RUN, "output_tokens": 1}),
    (read_guidellm_report, WHERE),
    (read_trtllm_bench, WHERE),
])
def test_readers_refuse_the_wrong_kind_of_argument(reader, kwargs, tmp_path):
    with pytest.raises(TypeError, match="path"):
        reader(3.0, **kwargs)
    listing = tmp_path / "list.json"
    listing.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ValueError, match="JSON object|not a trtllm-bench report") as info:
        reader(listing, **kwargs)
    assert str(listing) in str(info.value)
    with pytest.raises(TypeError, match="model"):
        reader(LATENCY, **{**kwargs, "model": ""})


# -- the readers' rows together --------------------------------------------------------------

def test_cross_validate_by_engine_over_the_readers():
    guidellm = read_guidellm_report(GUIDELLM, engine="vllm 0.10.1", **WHERE)
    trtllm = read_trtllm_bench(TRT_JSON, **WHERE)
    latency = read_vllm_latency(LATENCY, prefill=PREFILL, engine="vllm 0.10.1", **LATENCY_RUN)
    ds = concat_measurements(guidellm, trtllm, latency)
    assert sorted(set(ds["engine"].values)) == ["tensorrt-llm 0.21.0", "vllm 0.10.1"]
    cv = cross_validate(ds, by="engine", fit=["step_overhead"])
    assert list(cv.folds["held_out"].values) == ["vllm 0.10.1", "tensorrt-llm 0.21.0"]
    assert cv.folds.attrs["by"] == "engine"
    # the TRT-LLM fold holds one row per phase out; the vLLM fold four
    assert cv.folds["n_test"].values.tolist() == [[4, 4], [1, 1]]
    for phase in ("prefill", "decode"):
        assert math.isfinite(float(cv.errors["mape_calibrated"].sel(phase=phase)))


def test_vllm_result_takes_kv_dtype_and_engine():
    path = DATA.parent / "measurements" / "vllm_result_lambda_h100_llama3_8b.json"
    plain = _row(read_vllm_result(path, **WHERE))
    tagged = _row(read_vllm_result(path, kv_dtype="fp8", engine="vllm 0.6.1", **WHERE))
    assert (plain["kv_dtype"], plain["engine"]) == ("", "")
    assert (tagged["kv_dtype"], tagged["engine"]) == ("fp8", "vllm 0.6.1")
    assert {k: v for k, v in tagged.items() if k not in ("kv_dtype", "engine")} == \
        {k: v for k, v in plain.items() if k not in ("kv_dtype", "engine")}
