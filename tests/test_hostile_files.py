"""Hostile input files: every reader refuses them with a ValueError naming the file, and every
command that reads one exits 2 with one line on stderr, never a traceback.

Python's JSON parser raises ``RecursionError`` on deep nesting and a bare ``ValueError`` on
integers of more than 4,300 digits (its ``int_max_str_digits`` limit, Python >= 3.11); the log
reader turns 400-digit figures into floats that overflow to inf. Each case is written here as a
file the way an attacker (or a corrupt download) would produce it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rooflinekit as rk
from rooflinekit import calibrate, hf_config
from rooflinekit.cli.main import main

#: Text of each hostile JSON file.
HOSTILE = {
    "deep list": "[" * 100_000 + "]" * 100_000,
    "deep object": '{"a":' * 50_000 + "1" + "}" * 50_000,
    "5000-digit integer": '{"hidden_size": ' + "9" * 5000 + "}",
    "truncated": '{"hidden_size": 40',
}

READERS = {
    "load_hf_config": hf_config.load_hf_config,
    "read_measurements": calibrate.read_measurements,
    "load_calibration": calibrate.load_calibration,
    "read_vllm_result": lambda p: calibrate.read_vllm_result(p, model="llama-3.1-8b",
                                                             gpu="H100-SXM-80GB"),
    "read_vllm_latency": lambda p: calibrate.read_vllm_latency(
        p, model="llama-3.1-8b", gpu="H100-SXM-80GB", batch_size=8, prompt_tokens=1024,
        output_tokens=1),
    "read_vllm_latency prefill": lambda p: calibrate.read_vllm_latency(
        Path(__file__).parent / "data" / "engine_outputs" / "vllm_latency_b8_in1024_out128.json",
        model="llama-3.1-8b", gpu="H100-SXM-80GB", batch_size=8, prompt_tokens=1024,
        output_tokens=128, prefill=p),
    "read_guidellm_report": lambda p: calibrate.read_guidellm_report(
        p, model="llama-3.1-8b", gpu="H100-SXM-80GB"),
    "read_trtllm_bench": lambda p: calibrate.read_trtllm_bench(
        p, model="llama-3.1-8b", gpu="H100-SXM-80GB"),
}


@pytest.fixture(params=sorted(HOSTILE), ids=sorted(HOSTILE))
def hostile(request, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(HOSTILE[request.param], encoding="utf-8")
    return path


@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_reader_refuses_hostile_json_naming_the_file(reader, hostile):
    with pytest.raises(ValueError) as info:
        READERS[reader](hostile)
    assert str(hostile) in str(info.value)


def test_a_config_with_400_digit_fields_is_refused_by_its_range_check(tmp_path):
    config = {"architectures": ["LlamaForCausalLM"], "hidden_size": 10**400,
              "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
              "intermediate_size": 14336, "vocab_size": 128256, "torch_dtype": "bfloat16"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(ValueError, match="hidden_size"):
        rk.ModelShape.from_hf_config(path)


@pytest.mark.parametrize("line, figure", [
    ("GPU KV cache size: " + "9" * 400 + " tokens", "kv_cache_tokens"),
    ("GPU KV cache size: " + "9" * 20 + " tokens", "kv_cache_tokens"),
    ("Available KV cache memory: " + "9" * 400 + " GiB", "available_kv"),
])
def test_log_figures_beyond_any_engine_are_refused(line, figure):
    with pytest.raises(ValueError, match=figure):
        calibrate.parse_vllm_kv_log("INFO " + line + "\n")


def test_an_ordinary_log_figure_still_reads():
    # the largest count the log reader accepts is 2**53, the float64-exact limit
    found = calibrate.parse_vllm_kv_log(f"GPU KV cache size: {2**53:,} tokens\n")
    assert found["kv_cache_tokens"] == 2**53


@pytest.mark.parametrize("line, figure", [
    ("Average Input Length (tokens):  " + "9" * 400 + ".0000", "avg_input_length"),
    ("[TPOT] P50    : " + "9" * 400, "tpot_percentiles"),
])
def test_trtllm_text_figures_beyond_any_report_are_refused(line, figure, tmp_path):
    path = tmp_path / "trtllm.log"
    path.write_text("= REQUEST DETAILS \n" + line + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=figure) as info:
        calibrate.read_trtllm_bench(path, model="llama-3.1-8b", gpu="H100-SXM-80GB")
    assert str(path) in str(info.value)


ENGINE_READERS = ("read_vllm_latency", "read_guidellm_report", "read_trtllm_bench")


@pytest.mark.parametrize("reader", ENGINE_READERS)
def test_engine_readers_refuse_a_file_too_large_to_be_a_report(reader, tmp_path, monkeypatch):
    from rooflinekit.calibrate import readers

    monkeypatch.setattr(readers, "MAX_REPORT_BYTES", 1000)
    path = tmp_path / "huge.json"
    path.write_text('{"x": "' + "a" * 2000 + '"}', encoding="utf-8")
    with pytest.raises(ValueError, match="larger than") as info:
        READERS[reader](path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("reader", ENGINE_READERS)
def test_engine_readers_refuse_a_file_that_is_not_text(reader, tmp_path):
    path = tmp_path / "binary.json"
    path.write_bytes(b'{"avg_latency": \xff\xfe}')
    with pytest.raises(ValueError, match="not UTF-8") as info:
        READERS[reader](path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("command", [
    ["capacity", "{path}", "lab", "--tp", "1"],
    ["calibrate", "{path}", "--resamples", "2"],
    ["calibrate", "--from", "guidellm", "{path}", "--model", "llama-3.1-8b", "--gpu", "h100"],
    ["calibrate", "--from", "trtllm", "{path}", "--model", "llama-3.1-8b", "--gpu", "h100"],
    ["calibrate", "--from", "vllm-latency", "{path}", "--model", "llama-3.1-8b", "--gpu", "h100",
     "--batch-size", "8", "--input-len", "1024", "--output-len", "1"],
    ["simulate", "--model", "llama-3.1-8b", "--gpu", "h100", "--engine", "{path}"],
])
def test_commands_reading_a_hostile_file_exit_2_in_one_line(command, hostile, capsys):
    argv = [str(hostile) if a == "{path}" else a for a in command]
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert str(hostile) in err, err
