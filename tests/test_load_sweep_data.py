"""Checks of the published load sweeps (tests/data/load_sweeps/sweeps.csv) and their scorer."""

import math
import re
from pathlib import Path

import pytest

import rooflinekit
from rooflinekit import catalog

from helpers import load_script

ROOT = Path(__file__).resolve().parents[1]
SWEEPS = ROOT / "tests" / "data" / "load_sweeps" / "sweeps.csv"

COLUMNS = ["sweep", "source", "engine", "engine_version", "model", "gpu", "tp", "dtype", "dataset",
           "prompt_tokens", "output_tokens", "rate", "concurrency", "mean_ttft_ms",
           "median_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "mean_itl_ms",
           "request_throughput", "output_throughput", "read_from", "notes"]


def _load_script():
    return load_script("score_load_sweeps")


@pytest.fixture(scope="module")
def scorer():
    return _load_script()


@pytest.fixture(scope="module")
def sweeps(scorer):
    return scorer.read_sweeps(SWEEPS)


def test_header_has_the_documented_columns():
    lines = [line for line in SWEEPS.read_text(encoding="utf-8").splitlines()
             if not line.startswith("#")]
    header = lines[0].split(",")
    assert header[:len(COLUMNS)] == COLUMNS


def test_every_row_cites_a_source(sweeps):
    for name, points in sweeps.items():
        for p in points:
            src = p["source"].strip()
            assert src.startswith(("http://", "https://")) or ("@" in src and ":" in src), \
                f"{name}: source {src!r} is neither a URL nor repo@commit:path"
            assert p["read_from"] in ("table", "json", "text", "figure"), (name, p["read_from"])
            assert p["engine"].strip(), name


def test_numbers_are_finite_and_positive(sweeps):
    for name, points in sweeps.items():
        for p in points:
            for key in ("tp", "prompt_tokens", "output_tokens", "output_throughput"):
                assert p[key] is not None, (name, key)
            for key in ("tp", "prompt_tokens", "output_tokens", "concurrency", "mean_ttft_ms",
                        "median_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "mean_itl_ms",
                        "request_throughput", "output_throughput", "num_prompts"):
                value = p[key]
                if value is not None:
                    assert math.isfinite(value) and value > 0, (name, key, value)
            rate = p["rate"]
            if rate is not None:
                assert rate > 0 and (math.isfinite(rate) or rate == math.inf), (name, rate)
            assert p["rate"] is not None or p["concurrency"] is not None, name
            # a point publishes some latency
            assert any(p[k] is not None for k in ("mean_ttft_ms", "median_ttft_ms",
                                                  "mean_tpot_ms", "mean_itl_ms")), name


def test_sweeps_have_three_points_and_increase(sweeps):
    for name, points in sweeps.items():
        assert len(points) >= 3, name
        rates = [p["rate"] for p in points]
        if all(r is not None and math.isfinite(r) for r in rates):
            assert all(a < b for a, b in zip(rates, rates[1:])), (name, rates)
        else:
            conc = [p["concurrency"] for p in points]
            assert all(c is not None for c in conc), name
            assert all(a < b for a, b in zip(conc, conc[1:])), (name, conc)


def test_one_configuration_per_sweep(sweeps):
    for name, points in sweeps.items():
        for key in ("engine", "engine_version", "model", "gpu", "tp", "dtype", "dataset"):
            assert len({p[key] for p in points}) == 1, (name, key)


def test_models_and_gpus_are_catalogue_names(sweeps):
    for name, points in sweeps.items():
        p = points[0]
        assert catalog.model(p["model"]).name == p["model"], name
        assert catalog.gpu(p["gpu"]).name == p["gpu"], name


def test_modes(scorer, sweeps):
    kinds = {name: scorer.mode(points) for name, points in sweeps.items()}
    assert set(kinds.values()) <= {"rate", "burst", "closed"}
    assert kinds["lambda_h100_llama3-8b_tp1_burst"] == "burst"
    assert kinds["nim_h100x2_llama3.3-70b_fp8_tp2_5000in_500out"] == "closed"


def test_below_saturation_is_below_the_peaks_throughput_and_its_load(scorer, sweeps):
    """At most 80 % of the sweep's largest throughput, offered less than the load that gave it:
    a point past the peak is above saturation however far its throughput fell."""
    def point(load, throughput, closed=True):
        return {"rate": math.inf if closed else float(load), "concurrency": load if closed
                else None, "output_throughput": throughput}
    closed = [point(4, 1000), point(16, 3000), point(32, 5000), point(64, 3900)]
    assert [p["concurrency"] for p in scorer.below_saturation(closed)] == [4, 16]
    rates = [point(1, 200, False), point(4, 790, False), point(16, 2260, False),
             point(20, 1500, False)]
    assert [p["rate"] for p in scorer.below_saturation(rates)] == [1, 4]
    # the one published sweep with such a point: gpt-oss-120b at 1k/8k, 64 clients
    gpt_oss = sweeps["inferencex_h100x8_gpt-oss-120b_tp8_random1k8k_conc"]
    assert [p["concurrency"] for p in scorer.below_saturation(gpt_oss)] == [4, 8, 16]
    assert max(p["concurrency"] for p in gpt_oss if p["output_throughput"]
               <= 0.8 * max(q["output_throughput"] for q in gpt_oss)) == 64


@pytest.mark.slow
def test_score_one_small_sweep(scorer):
    name = "lambda_h100x2_llama3-70b_tp2_burst"
    (result,) = scorer.score(SWEEPS, rooflinekit.IDEAL, sweeps=[name], replicates=1,
                             requests=20)
    assert result["sweep"] == name and result["error"] == ""
    assert result["mode"] == "burst" and result["points"] == 4
    assert result["below_saturation"] >= 1
    for key in ("tpot_mape", "ttft_mape", "saturation_predicted", "sat_err"):
        assert math.isfinite(result[key]), key
    assert result["saturation_predicted"] > 0
    rows = scorer.by_source([result])
    assert rows[0]["source"] == "LambdaLabsML/vllm-benchmark"


@pytest.mark.parametrize("change, match", [
    (lambda rows: [re.sub(r",inf,[\d.]+,", ",,,", r, count=1) if i == 2 else r
                   for i, r in enumerate(rows)], "rate or a concurrency"),
    (lambda rows: [rows[0].replace("rate,", "speed,", 1), *rows[1:]], "missing column"),
    (lambda rows: [r.replace(",inf,", ",fast,", 1) if i == 2 else r for i, r in enumerate(rows)],
     "field 'rate'"),
    # the last seven fields: kv_dtype, max_model_len, endpoint, recv_interval, ssm_dtype,
    # max_num_batched_tokens, then ep
    (lambda rows: [re.sub(r",([^,]*),([^,]*),([^,]*),([^,]*),([^,]*),([^,]*)$",
                          r"fp7,\1,\2,\3,\4,\5,\6", r) if i == 2 else r
                   for i, r in enumerate(rows)], "field 'kv_dtype'"),
    (lambda rows: [re.sub(r",([^,]*),([^,]*),([^,]*),([^,]*),([^,]*)$", r"k,\1,\2,\3,\4,\5", r)
                   if i == 2 else r for i, r in enumerate(rows)], "field 'max_model_len'"),
    (lambda rows: [re.sub(r",([^,]*),([^,]*),([^,]*),([^,]*)$", r"grpc,\1,\2,\3,\4", r)
                   if i == 2 else r for i, r in enumerate(rows)], "field 'endpoint'"),
    (lambda rows: [re.sub(r",([^,]*),([^,]*),([^,]*)$", r"0,\1,\2,\3", r) if i == 2 else r
                   for i, r in enumerate(rows)], "field 'recv_interval'"),
    (lambda rows: [re.sub(r",([^,]*),([^,]*),([^,]*)$", r"2.5,\1,\2,\3", r) if i == 2 else r
                   for i, r in enumerate(rows)], "field 'recv_interval'"),
    (lambda rows: [re.sub(r",([^,]*),([^,]*)$", r"fp6,\1,\2", r) if i == 2 else r
                   for i, r in enumerate(rows)], "field 'ssm_dtype'"),
    (lambda rows: [re.sub(r",([^,]*)$", r"0,\1", r) if i == 2 else r
                   for i, r in enumerate(rows)], "field 'max_num_batched_tokens'"),
    (lambda rows: [re.sub(r",([^,]*)$", r"512.5,\1", r) if i == 2 else r
                   for i, r in enumerate(rows)], "field 'max_num_batched_tokens'"),
    (lambda rows: [r + "0" if i == 2 else r for i, r in enumerate(rows)], "field 'ep'"),
    (lambda rows: [r + "two" if i == 2 else r for i, r in enumerate(rows)], "field 'ep'"),
])
def test_a_bad_sweep_file_is_refused_naming_the_file_line_and_field(scorer, tmp_path, change,
                                                                  match):
    """A sweep file without rates (or concurrencies), a column missing or a value that is not a
    number: refused with the file and the place, before any simulation."""
    lines = [line for line in SWEEPS.read_text(encoding="utf-8").splitlines()
             if not line.startswith("#")]
    burst = [lines[0]] + [line for line in lines[1:] if ",inf," in line][:3]
    # without the optional last column, cached_prompts (its own test below)
    assert lines[0].endswith(",cached_prompts")
    burst = [line.rsplit(",", 1)[0] for line in burst]
    bad = tmp_path / "sweeps.csv"
    bad.write_text("\n".join(change(burst)) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=match) as info:
        scorer.read_sweeps(bad)
    assert str(bad) in str(info.value)


@pytest.mark.parametrize("value, match", [("-1", ">= 0"), ("2.5", ">= 0"), ("two", "number"),
                                          ("11", "more than the run's 10 prompts")])
def test_bad_cached_prompts_are_refused_naming_the_line_and_field(scorer, tmp_path, value,
                                                                 match):
    lines = [line for line in SWEEPS.read_text(encoding="utf-8").splitlines()
             if not line.startswith("#")]
    rows = [line for line in lines[1:] if line.startswith("cookbook_")][:3]
    assert rows[0].endswith(",1")                 # 10 prompts, the first cached by the warm-up
    bad = tmp_path / "sweeps.csv"
    bad.write_text("\n".join([lines[0], rows[0].rsplit(",", 1)[0] + "," + value, *rows[1:]])
                   + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=match) as info:
        scorer.read_sweeps(bad)
    assert f"{bad}, line 2, field 'cached_prompts'" in str(info.value)


def test_recv_interval_reaches_the_simulated_server(scorer, sweeps):
    """A sweep's ``recv_interval`` is its server's ``--scheduler-recv-interval`` (DataCrunch's
    InferenceX runs: 10; see the README), blank 1; the scorer's server takes it, so its TTFT
    grows, at the same point, over the server that receives every step."""
    point = sweeps["inferencex_b300x4_qwen3.5-397b-a17b_fp8_tp4_random1k1k_conc"][3]
    assert point["recv_interval"] == 10
    assert sweeps["lambda_h100_llama3-8b_tp1_burst"][0]["recv_interval"] == 1
    engine = scorer.own_engine(point)
    slow = scorer.predict_point(point, engine, "closed", replicates=1, requests=120)
    fast = scorer.predict_point({**point, "recv_interval": 1}, engine, "closed", replicates=1,
                                requests=120)
    assert slow["mean_ttft"] > fast["mean_ttft"]


def test_kv_dtype_sets_the_cache_format(scorer, sweeps):
    """A sweep's ``kv_dtype`` is the cache the engine ran (DigitalOcean's report: fp8_e4m3; NIM:
    see the README) and reaches the simulated model; blank keeps the 16-bit cache."""
    doks = sweeps["doks_h200_llama3.1-70b_fp8_tp1_sharegpt_rate"][0]
    lambda_ = sweeps["lambda_h100_llama3-8b_tp1_burst"][0]
    assert doks["kv_dtype"] == "fp8" and lambda_["kv_dtype"] == ""
    model, _, _ = scorer._spec(doks, None, 0.8)
    assert model.kv_bytes_per_element == 1
    model, _, _ = scorer._spec(lambda_, None, 0.8)
    assert model.kv_bytes_per_element == catalog.model("Llama-3.1-8B").kv_bytes_per_element == 2


def test_ssm_dtype_sets_the_recurrent_state_format(scorer, sweeps):
    """A sweep's ``ssm_dtype`` is its server's ``--mamba-ssm-dtype`` (DataCrunch's InferenceX
    runs: bfloat16; see the README) and reaches the simulated hybrid model, whose recurrent
    state it halves; blank keeps the model's FP32 state."""
    point = sweeps["inferencex_b300x4_qwen3.5-397b-a17b_fp8_tp4_random1k1k_conc"][0]
    assert point["ssm_dtype"] == "bf16"
    model, _, _ = scorer._spec(point, None, 0.8)
    full = catalog.model("Qwen3.5-397B-A17B")
    assert model.ssm_state_bytes_per_sequence == full.ssm_state_bytes_per_sequence / 2
    model, _, _ = scorer._spec({**point, "ssm_dtype": ""}, None, 0.8)
    assert model.state_bytes_per_sequence == full.state_bytes_per_sequence


def test_v0_scheduling_follows_the_served_context(scorer, sweeps):
    """vLLM's V0 engine (before 0.8) prefilled whole prompts in steps of their own, of at most
    max(max_model_len, 2048) tokens, unless the served context exceeded 32K tokens: from 0.5.4
    on it then chunked prefill at 512 tokens a step, mixed into the decode steps
    (vllm-project/vllm#6666). Phala served Llama-3.1 at its 131,072 tokens; LambdaLabs,
    Meta-Llama-3 at 2,048 (its result files' ``_len2048``, its tasks_2k.yaml); V1 (0.10) runs
    its GPU defaults."""
    phala = sweeps["phala_h200_llama3.1-8b_tp1_sharegpt_rate"][0]
    lambda_ = sweeps["lambda_h100_llama3-8b_tp1_burst"][0]
    v1 = sweeps["dennislee_a100_qwen2-7b_tp1_1024in_1024out_burst"][0]
    assert (phala["max_model_len"], lambda_["max_model_len"]) == (131_072, 2_048)
    assert scorer.scheduler(phala)[:3] == (256, 512, True)
    assert scorer.scheduler(lambda_)[:3] == (256, 2048, False)
    assert scorer.scheduler({**lambda_, "max_model_len": 4096})[:3] == (256, 4096, False)
    assert scorer.scheduler({**phala, "engine_version": "0.5.3"})[:3] == (256, 131_072, False)
    # without a served context: the catalogue model's (Llama-3.1-8B: 131,072)
    assert scorer.scheduler({**lambda_, "max_model_len": None})[:3] == (256, 512, True)
    assert scorer.scheduler(v1)[:3] == (256, 2048, True)        # A100: vLLM's smaller budget
    # the KV admission the engine ran: vLLM paged; NIM's TensorRT-LLM reserves prompt and output
    assert scorer.scheduler(v1)[3] == scorer.scheduler(phala)[3] == "paged"
    nim = {**v1, "engine": "nim", "engine_version": "1.8.0", "gpu": "H100-SXM-80GB"}
    assert scorer.scheduler(nim)[:4] == (2048, 8192, True, "reserve")
    # a server run with its own tokens a step (TensorRT-LLM's --max_num_tokens 1152)
    assert scorer.scheduler({**nim, "max_num_batched_tokens": 1152})[:4] == \
        (2048, 1152, True, "reserve")


def test_release_numbers_with_suffixes(scorer):
    """TensorRT-LLM's release candidates and post releases name their numeric parts first."""
    assert scorer._release("1.1.0rc2.post2") == (1, 1, 0, 0)
    assert scorer._release("1.2.0rc6.post2") == (1, 2, 0, 0)
    assert scorer._release("0.10.1.1") == (0, 10, 1, 1)
    assert scorer._release("") is None


def test_the_tensorrt_llm_sweeps_hold_littles_law(sweeps):
    """InferenceX's TensorRT-LLM points, transcribed from their records: C clients each
    cycling through TTFT + (output − 1) · TPOT give the recorded output throughput
    (C · output / cycle) within 5 % (the records' own E2E agrees to 1 %: README), and the
    step caps of their launch scripts are on every row."""
    names = [n for n in sweeps if "_trtllm1." in n]
    assert len(names) == 6 and sum(len(sweeps[n]) for n in names) == 24
    for name in names:
        for p in sweeps[name]:
            cycle = (p["mean_ttft_ms"] + (p["output_tokens"] - 1) * p["mean_tpot_ms"]) / 1e3
            little = p["concurrency"] * p["output_tokens"] / cycle
            assert little == pytest.approx(p["output_throughput"], rel=0.05), (name, p)
            assert p["engine"] == "trtllm" and p["kv_dtype"] == "fp8"
            assert p["max_num_batched_tokens"] in (1152, 8192, 8320)
            # the H200 servers spread the experts over their 8 GPUs (--ep_size 8)
            assert p["ep"] == (8 if "_tp8ep8_" in name else 1)


def test_the_stream_interval_sweeps_publish_an_itl_per_chunk(sweeps):
    """docs/validation.md ("Streamed chunks"): InferenceX's SGLang servers ran with
    ``--stream-interval`` 10 (H200) and 50 (B300), and their published mean ITL, left out of
    the rows, is per streamed chunk. With a request's first token sent at once, then every
    ``k`` tokens gathered since the last send, and its last at its end (vLLM's rule), a reply
    of ``n`` tokens arrives in ``ceil((n - 1) / k)`` gaps summing to its time from first token
    to last, so at a steady pace the mean gap over all chunks is the mean TPOT times
    ``E[n - 1] / E[ceil((n - 1) / k)]``; the runs' replies are uniform from 819 to 1,024 tokens
    (``random IN/1024``, range ratio 0.8). Measured: that factor within 1 % at every point
    that publishes its ITL (the H200 sweep's first and last points give its range)."""
    def factor(k, low=819, high=1024):
        lengths = range(low, high + 1)
        return sum(n - 1 for n in lengths) / sum(math.ceil((n - 1) / k) for n in lengths)

    checked = 0
    for name, points in sweeps.items():
        interval = re.search(r"--stream-interval (\d+)", points[0]["notes"])
        if interval is None or not re.fullmatch(r"random \d+/1024 \(range ratio 0\.8\)",
                                                points[0]["dataset"]):
            continue
        k = int(interval.group(1))
        for i, p in enumerate(points):
            each = re.search(r"Mean ITL \(([0-9.]+) s\) left empty", p["notes"])
            spread = re.search(r"Mean ITL \(([0-9.]+)-([0-9.]+) ms\) left empty", p["notes"])
            if each:
                itl = float(each.group(1)) * 1e3
            elif spread and i in (0, len(points) - 1):
                itl = float(spread.group(1 if i == 0 else 2))
            else:
                continue
            assert itl / p["mean_tpot_ms"] == pytest.approx(factor(k), rel=0.01), (name, p)
            checked += 1
    assert checked == 16     # the B300 sweeps' 7 points each, the H200 sweep's 2


def test_step_overhead_replays_the_profiles_with_it(scorer):
    """``--step-overhead MS`` scores each GPU's vLLM profile with that decode overhead; the
    DigitalOcean sweep (vLLM 0.14.1) is closest at 0 ms and Phala's (0.5.4) at 3 ms, as
    docs/validation.md's table of the per-step serving cost says."""
    engine = scorer.with_step_overhead(0.003)({"gpu": "H200-SXM-141GB", "engine": "vllm"})
    shipped = rooflinekit.engine_profile("vllm", "H200-SXM-141GB", warn=False)
    assert engine.decode["step_overhead"] == 0.003
    assert {k: v for k, v in engine.decode.items() if k != "step_overhead"} == \
        {k: v for k, v in shipped.decode.items() if k != "step_overhead"}
    assert engine.prefill == shipped.prefill
    from pathlib import Path
    doc = (Path(__file__).parents[1] / "docs" / "validation.md").read_text()
    steps = (0.0, 1.40, 3.0)
    for name, row, least in (
            ("doks_h200_llama3.1-70b_fp8_tp1_sharegpt_rate",
             "| DigitalOcean, 70B FP8 on H200 (0.14.1, V1, asynchronous) |", 0.0),
            ("phala_h200_llama3.1-8b_tp1_sharegpt_rate", "| Phala, 8B on H200 (0.5.4, V0) |",
             3.0)):
        tpot = {}
        for ms in steps:
            (result,) = scorer.score(SWEEPS, scorer.with_step_overhead(ms * 1e-3), sweeps=[name])
            tpot[ms] = result["tpot_mape"]
        assert min(tpot, key=tpot.get) == least
        cells = " | ".join(f"{100 * tpot[ms]:.0f} %" for ms in steps)
        assert f"{row} {cells} |" in doc
    with pytest.raises(SystemExit):
        scorer.main(["--step-overhead", "-1"])


def test_each_sweep_can_be_scored_with_its_own_engines_profile(scorer, sweeps):
    """NIM runs TensorRT-LLM: ``own_engine`` times its sweep with TensorRT-LLM's shipped
    profile (a kernel fit no served row entered), which docs/validation.md reports beside the
    vLLM default; vLLM's sweeps keep vLLM's."""
    nim = "nim_h100x2_llama3.3-70b_fp8_tp2_5000in_500out"
    assert scorer.own_engine(sweeps[nim][0]) == \
        rooflinekit.engine_profile("trtllm", "H100-SXM-80GB", warn=False)
    doks = sweeps["doks_h200_llama3.1-70b_fp8_tp1_sharegpt_rate"][0]
    assert scorer.own_engine(doks) == rooflinekit.engine_profile("vllm", "H200-SXM-141GB",
                                                                 warn=False)
    (result,) = scorer.score(SWEEPS, scorer.own_engine, sweeps=[nim])
    assert result["error"] == "" and result["tpot_mape"] < 0.10
    assert abs(result["sat_err"]) < 0.15


def test_a_synchronous_vllm_sweep_is_scored_at_its_versions_host_scheduling(scorer, sweeps):
    """vLLM before 0.14.0 waits for the host between steps: ``own_engine`` times such a sweep
    with the profile at its version (its host time added to every decode step); an
    asynchronous version (DigitalOcean's 0.14.1), an unknown one and another engine get the
    newest. LambdaLabs' files record no version: 0.6.0, which their dates, their ten-step
    streams and their report state (``ASSUMED_VERSIONS``)."""
    host = rooflinekit.profiles.host_scheduling("vllm")
    dennislee = sweeps["dennislee_a100_qwen2-7b_tp1_1024in_1024out_burst"][0]
    lambda_ = sweeps["lambda_h100_llama3-8b_tp1_burst"][0]
    doks = sweeps["doks_h200_llama3.1-70b_fp8_tp1_sharegpt_rate"][0]
    assert (scorer.profile_version(dennislee), scorer.profile_version(lambda_)) == \
        ("0.10.1.1", "0.6.0")
    assert scorer.profile_version(doks) is None
    assert scorer.profile_version({**doks, "engine_version": None}) is None
    assert scorer.profile_version({**dennislee, "engine": "sglang"}) is None
    newest = rooflinekit.engine_profile("vllm", dennislee["gpu"], warn=False)
    timed = scorer.own_engine(dennislee)
    assert timed.decode["step_overhead"] == pytest.approx(
        newest.decode["step_overhead"] + host.synchronous_step_overhead)
    assert "0.10.1.1" in timed.source


@pytest.mark.slow
def test_the_rtx4090_closed_loop_loses_its_time_before_the_first_token(scorer, sweeps):
    """docs/validation.md's table: Little's law splits a closed-loop request's cycle, C /
    request throughput, into TTFT and first token to last, measured and simulated; the decode
    side agrees within the page's few per cent at every concurrency, the TTFT gap grows with
    it."""
    from pathlib import Path
    doc = (Path(__file__).parents[1] / "docs" / "validation.md").read_text()
    points = sweeps["mrahman_rtx4090_mistral-7b_256in_128out"]
    decode_errors, gaps = [], []
    for p in points:
        c = p["concurrency"]
        pred = scorer.predict_point(p, None, "closed")
        cycle, cycle_p = c / p["request_throughput"], c / pred["request_throughput"]
        rest, rest_p = cycle - p["mean_ttft_ms"] / 1e3, cycle_p - pred["mean_ttft"] / 1e3
        decode_errors.append(abs(rest_p / rest - 1))
        gaps.append(p["mean_ttft_ms"] - pred["mean_ttft"])
        row = (f"| {c:.0f} | {cycle:.2f} / {cycle_p:.2f} | {rest:.2f} / {rest_p:.2f} | "
               f"{p['mean_ttft_ms']:.0f} / {pred['mean_ttft']:.0f} |")
        assert row in doc, row
    worst = max(decode_errors)
    assert worst < 0.08            # a few per cent, against a TTFT up to 6 times off
    assert f"The decode side is within {100 * worst:.1f} % at every concurrency" in doc
    assert gaps == sorted(gaps)                     # the wait grows with the streams
    flat = " ".join(doc.split())
    assert f"({gaps[0]:.0f} ms at 4, {gaps[-1]:.0f} ms at 48)" in flat


def test_decode_side_is_littles_law(scorer, sweeps):
    """A closed-loop point's time from first token to last: C / X less the TTFT, measured and
    simulated alike (the output throughput over the mean output where no request throughput
    is published); nothing without a TTFT."""
    nim = sweeps["nim_h100x2_llama3.3-70b_fp8_tp2_5000in_500out"][2]      # 25 in flight
    pred = {"request_throughput": 1.25, "mean_ttft": 400.0, "p50_ttft": 390.0}
    simulated, measured = scorer.decode_side(nim, pred)
    assert simulated == pytest.approx(25 / 1.25 - 0.4)
    x = nim["request_throughput"] or nim["output_throughput"] / nim["output_tokens"]
    assert measured == pytest.approx(25 / x - nim["mean_ttft_ms"] / 1e3)
    assert scorer.decode_side({**nim, "mean_ttft_ms": None, "median_ttft_ms": None},
                              pred) == (None, None)


# -- saturation runs (tests/data/load_sweeps/bursts.csv) ------------------------------------------

BURSTS = SWEEPS.with_name("bursts.csv")


@pytest.fixture(scope="module")
def bursts(scorer):
    return scorer.read_bursts(BURSTS)


def test_the_bursts_file_has_the_sweeps_columns_and_cites_each_run(bursts):
    lines = [line for line in BURSTS.read_text(encoding="utf-8").splitlines()
             if not line.startswith("#")]
    assert lines[0].split(",")[:len(COLUMNS)] == COLUMNS
    assert len(bursts) == 18
    for p in bursts:
        assert re.fullmatch(r"[\w-]+/[\w.-]+@[0-9a-f]{40}:[\w./-]+\.md", p["source"]), p["source"]
        assert catalog.model(p["model"]).name == p["model"]
        assert catalog.gpu(p["gpu"]).name == p["gpu"]
        assert p["engine_version"] and p["endpoint"] == "chat"


def test_each_burst_is_its_published_totals(bursts):
    """A run's means are its printed totals over its requests, and its output throughput its
    request throughput times the mean output (the request throughput printed to two decimals:
    within 0.005 requests/s)."""
    for p in bursts:
        assert p["rate"] == math.inf and p["num_prompts"] == p["concurrency"]
        lengths = re.fullmatch(r"random (\d+)/(\d+)", p["dataset"])
        assert lengths, p["dataset"]
        assert p["prompt_tokens"] == pytest.approx(float(lengths.group(1)), rel=2e-3)
        assert p["output_tokens"] <= float(lengths.group(2))        # no --ignore-eos
        assert p["output_throughput"] == pytest.approx(
            p["request_throughput"] * p["output_tokens"], rel=1e-3,
            abs=0.005 * p["output_tokens"]), p["sweep"]


@pytest.mark.parametrize("change, match", [
    ({"rate": "2"}, "is not a burst"),
    ({"num_prompts": "7"}, "is not a burst"),
])
def test_a_row_that_is_not_a_burst_is_refused_naming_the_run(scorer, tmp_path, change, match):
    lines = BURSTS.read_text(encoding="utf-8").splitlines(keepends=True)
    import csv
    import io
    header = next(line for line in lines if not line.startswith("#"))
    row = next(csv.DictReader(io.StringIO(header + lines[lines.index(header) + 1])))
    row.update(change)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(row), lineterminator="\n")
    writer.writeheader()
    writer.writerow(row)
    path = tmp_path / "bursts.csv"
    path.write_text(out.getvalue(), encoding="utf-8")
    with pytest.raises(ValueError, match=match) as info:
        scorer.read_bursts(path)
    assert str(path) in str(info.value) and row["sweep"] in str(info.value)


def test_a_run_on_two_rows_is_refused(scorer, tmp_path):
    lines = BURSTS.read_text(encoding="utf-8").splitlines(keepends=True)
    body = [line for line in lines if not line.startswith("#")]
    path = tmp_path / "bursts.csv"
    path.write_text("".join([body[0], body[1], body[1]]), encoding="utf-8")
    with pytest.raises(ValueError, match="is on 2 rows"):
        scorer.read_bursts(path)


def test_a_burst_is_scored_as_every_prompt_at_once(scorer, bursts, monkeypatch):
    """score_bursts replays a run as its prompts all arriving at once (predict_point's burst,
    at the scorer's BURST_RATE): a hundred times that rate gives the same throughput to 1 %,
    and the run's error is the prediction over the published throughput."""
    point = next(p for p in bursts if p["model"] == "Qwen3-235B-A22B"
                 and p["dataset"] == "random 4000/200")
    (scored,) = [r for r in scorer.score_bursts(BURSTS, rooflinekit.IDEAL, replicates=1)
                 if r["sweep"] == point["sweep"]]
    assert scored["saturation_measured"] == point["output_throughput"]
    assert scored["sat_err"] == pytest.approx(
        scored["saturation_predicted"] / point["output_throughput"] - 1.0)
    monkeypatch.setattr(scorer, "BURST_RATE", 100 * scorer.BURST_RATE)
    again = scorer.predict_point(point, rooflinekit.IDEAL, "burst", replicates=1)
    assert again["throughput"] == pytest.approx(scored["saturation_predicted"], rel=0.01)


def test_the_scorer_prints_the_saturation_runs_after_the_sweeps(scorer, tmp_path, capsys):
    """``score_load_sweeps.py`` ends with a table of the saturation runs, one row per run and
    engine (here the file's first run and one sweep, at one replicate), and counts each run in
    its source's row of the per-source table."""
    body = [line for line in BURSTS.read_text(encoding="utf-8").splitlines(keepends=True)
            if not line.startswith("#")]
    bursts = tmp_path / "bursts.csv"
    bursts.write_text("".join(body[:2]), encoding="utf-8")
    sweeps_lines = [line for line in SWEEPS.read_text(encoding="utf-8").splitlines(keepends=True)
                    if not line.startswith("#")]
    sweeps = tmp_path / "sweeps.csv"
    sweeps.write_text("".join([sweeps_lines[0], *(line for line in sweeps_lines[1:]
                                                  if line.startswith("lambda_h100x2_"))]),
                      encoding="utf-8")
    assert scorer.main(["--sweeps", str(sweeps), "--bursts", str(bursts), "--replicates", "1",
                        "--requests", "20"]) == 0
    out = capsys.readouterr().out
    assert "## Saturation runs (single bursts)" in out
    run = body[1].split(",")[0]
    rows = [line for line in out.splitlines() if line.startswith(f"| {run} |")]
    assert [row.split(" | ")[1] for row in rows] == ["ideal", "default", "own engine"]
    # the run's source counts it beside its sweeps (here GPUStack: the run alone)
    per_source = out.split("## Per source")[1].split("## Saturation runs")[0]
    assert "| gpustack/gpustack | default | 1 |" in per_source


# -- TensorRT-LLM's throughput table (tests/data/load_sweeps/trtllm_throughput.csv) --------------

THROUGHPUT = SWEEPS.with_name("trtllm_throughput.csv")
#: The page's request counts by ISL/OSL ("Preparing a Dataset"); 1000/1000 is not in it and is
#: taken as 1024/1024's.
PAGE_REQUESTS = {(1024, 1024): 3000, (8192, 1024): 1500, (1024, 8192): 1500,
                 (32768, 1024): 1000, (1024, 32768): 1000, (1000, 1000): 3000}


@pytest.fixture(scope="module")
def throughput_runs(scorer):
    return scorer.read_bursts(THROUGHPUT)


def test_the_throughput_table_is_the_pages_tensor_parallel_columns(throughput_runs, scorer):
    """70 runs, one a row, each TensorRT-LLM's offline burst of the page's request count at
    its fixed lengths, cited to the page at a commit; its output throughput the page's figure
    per GPU (the notes quote it) times the GPUs."""
    assert scorer.DEFAULT_THROUGHPUT == THROUGHPUT
    lines = [line for line in THROUGHPUT.read_text(encoding="utf-8").splitlines()
             if not line.startswith("#")]
    assert lines[0].split(",")[:len(COLUMNS)] == COLUMNS
    assert len(throughput_runs) == 70
    for p in throughput_runs:
        assert p["source"] == ("NVIDIA/TensorRT-LLM@03e27c7d5ff0c6e89f8328838c0a8e64f1b34f9d:"
                               "docs/source/developer-guide/perf-overview.md")
        assert p["engine"] == "trtllm" and p["endpoint"] == "" and p["read_from"] == "table"
        assert catalog.model(p["model"]).name == p["model"]
        assert catalog.gpu(p["gpu"]).name == p["gpu"]
        lengths = re.fullmatch(r"fixed (\d+)/(\d+)", p["dataset"])
        isl, osl = int(lengths.group(1)), int(lengths.group(2))
        assert (p["prompt_tokens"], p["output_tokens"]) == (isl, osl)
        assert p["rate"] == math.inf and p["num_prompts"] == p["concurrency"] \
            == PAGE_REQUESTS[(isl, osl)]
        per_gpu = re.search(r"row \d+/\d+: ([\d,]+) output tokens/s per GPU", p["notes"])
        assert float(per_gpu.group(1).replace(",", "")) * p["tp"] == p["output_throughput"]
        assert p["request_throughput"] == pytest.approx(p["output_throughput"] / osl,
                                                        abs=5e-5)


def test_the_throughput_tables_figures_and_formats(throughput_runs):
    """Figures read off the page by hand (tokens/s per GPU), and the KV format each row takes:
    FP8 for ModelOpt's checkpoints (hf_ptq's --kv_cache_qformat defaults to fp8) and for
    gpt-oss on Blackwell (the page's llm_options), the checkpoint's 16 bits for gpt-oss on
    Hopper ("Hopper: use auto")."""
    runs = {p["sweep"]: p for p in throughput_runs}
    for name, per_gpu in (("trtllm_perf_h200x2_llama-3.3-70b_tp2_8192-1024", 537),
                          ("trtllm_perf_h100_gpt-oss-20b_tp1_1024-1024", 11403),
                          ("trtllm_perf_rtxpro6000_qwen3-30b-a3b_tp1_32768-1024", 374),
                          ("trtllm_perf_gb200_gpt-oss-120b_tp1_1024-32768", 5556),
                          ("trtllm_perf_b200_llama-3.3-70b_tp1_1000-1000", 6920)):
        assert runs[name]["output_throughput"] == per_gpu * runs[name]["tp"], name
    for p in throughput_runs:
        hopper = catalog.gpu(p["gpu"]).compute_capability < 10
        gpt_oss = p["model"].startswith("gpt-oss")
        assert (p["kv_dtype"] or "") == ("" if gpt_oss and hopper else "fp8"), p["sweep"]
        assert (p["dtype"] or "") == ("" if gpt_oss else "fp8" if "FP8)" in p["notes"]
                                      else "fp4"), p["sweep"]


def test_the_scorer_scores_both_saturation_files_by_default(scorer, monkeypatch):
    """``--bursts`` defaults to GPUStack's runs and TensorRT-LLM's table, in that order."""
    seen = []
    monkeypatch.setattr(scorer, "score", lambda *a, **k: [])
    monkeypatch.setattr(scorer, "score_bursts",
                        lambda path, *a, **k: seen.append(Path(path)) or [])
    assert scorer.main(["--replicates", "1"]) == 0
    assert seen[:2] == [BURSTS, THROUGHPUT] == list(scorer.SATURATION_FILES)


def test_a_sources_saturation_runs_count_in_its_saturation_only(scorer):
    """by_source averages a saturation run's error into its source's saturation beside the
    sweeps', and leaves its TPOT and TTFT to the sweeps (a run has no point below saturation)."""
    sweep = {"source": "s", "tpot_mape": 0.10, "ttft_mape": 0.20, "decode_mape": math.nan,
             "sat_err": -0.10}
    run = {"source": "s", "sat_err": 0.50, "tpot_err": 0.9}
    (row,) = scorer.by_source([sweep, run])
    assert row["sweeps"] == 2
    assert row["tpot_mape"] == pytest.approx(0.10) and row["ttft_mape"] == pytest.approx(0.20)
    assert row["sat_abs_err"] == pytest.approx((0.10 + 0.50) / 2)


def test_the_recorded_sharegpt_sample_is_the_one_the_sweeps_sent(scorer, sweeps):
    """rooflinekit/data/sharegpt_lengths.csv holds LambdaLabs' 1,280-prompt file's per-request
    lengths: its sums are that file's totals, and its first N prompts average what every
    source that sent the sample publishes (LambdaLabs' 8B and 70B bursts, Phala's 1,000
    prompts, DigitalOcean's 300; README.md, "The ShareGPT sample"). GPUStack's Qwen3-8B sweep
    counts the same conversations with another tokenizer, so it draws from the whole sample,
    scaled."""
    import numpy as np

    from helpers import read_sharegpt_sample
    prompts, outputs = map(np.array, read_sharegpt_sample())
    assert prompts.size == outputs.size == 1280
    assert (prompts.sum(), outputs.sum(), (outputs == 0).sum()) == (283_459, 233_412, 89)
    assert prompts[:1000].sum() == 215_196          # vllm-project/vllm issue #7567
    sent = {name: [scorer.sent_the_sample(p) for p in points]
            for name, points in sweeps.items() if "sharegpt" in points[0]["dataset"]}
    assert sent.pop("gpustack_h100_qwen3-8b_tp1_sharegpt_conc") == [False] * 4
    assert set(sent) == {"lambda_h100_llama3-8b_tp1_burst", "lambda_h100x2_llama3-70b_tp2_burst",
                         "lambda_h100x4_llama3-70b_tp4_burst",
                         "lambda_h100x8_llama3-70b_tp8_burst",
                         "phala_h200_llama3.1-8b_tp1_sharegpt_rate",
                         "doks_h200_llama3.1-70b_fp8_tp1_sharegpt_rate"}
    assert all(all(flags) for flags in sent.values())
    # the draws keep each point's published means; a point that sent the sample, its prompts
    for point in (sweeps["lambda_h100_llama3-8b_tp1_burst"][2],
                  sweeps["gpustack_h100_qwen3-8b_tp1_sharegpt_conc"][0]):
        prompt, output = scorer.sharegpt_draws(point)
        assert np.mean(prompt.samples) == pytest.approx(point["prompt_tokens"], rel=2e-3)
        assert np.mean(output.samples) == pytest.approx(point["output_tokens"], rel=2e-3)
    burst = sweeps["lambda_h100_llama3-8b_tp1_burst"][2]          # 160 prompts
    prompt, output = scorer.sharegpt_draws(burst)
    assert list(prompt.samples) == list(prompts[:160])            # the very prompts, as sent
    assert prompt.replay and output.replay                         # in order, each with its reply
    assert not any(d.replay for d in scorer.sharegpt_draws(
        sweeps["gpustack_h100_qwen3-8b_tp1_sharegpt_conc"][0]))
    # scaled to the published means where the run's own replies are not recorded (below)
    unrecorded = {**burst, "replies": None}
    assert scorer.sharegpt_draws(unrecorded) != \
        scorer.sharegpt_draws({**unrecorded, "prompt_tokens": burst["prompt_tokens"] + 1})


def test_recorded_replies_are_replayed_and_their_empty_ones_kept_out_of_the_ttft(scorer,
                                                                                sweeps):
    """README.md, "Replies recorded request by request": LambdaLabs' result files record each
    run's replies (``output_lens``); the 70B runs' differ from the 8B sample's (2 of 10, 3 of
    20, 7 of 40 and 17 of 80 are empty, where the 8B sample's first 80 have one), so each run replays
    its own, and its client's mean TTFT, which counts an empty reply's TTFT as 0, is the
    simulated mean times the share of replies that are not empty."""
    import numpy as np

    from helpers import read_sharegpt_sample
    prompts, outputs = read_sharegpt_sample()
    recorded = {(name, int(p["num_prompts"])): p for name, points in sweeps.items()
                for p in points if p["replies"] is not None}
    assert sorted(recorded) == sorted(
        [("lambda_h100_llama3-8b_tp1_burst", n) for n in (10, 40, 160, 640, 1280)]
        + [("lambda_h100x2_llama3-70b_tp2_burst", n) for n in (10, 20, 40, 80)]
        + [("lambda_h100x4_llama3-70b_tp4_burst", n)
           for n in (10, 20, 40, 80, 160, 320, 640, 1280)]
        + [("lambda_h100x8_llama3-70b_tp8_burst", n) for n in (10, 20, 40, 80, 160, 320, 640)])
    assert recorded[("lambda_h100_llama3-8b_tp1_burst", 1280)]["replies"] == tuple(outputs)
    empty = {n: recorded[("lambda_h100x2_llama3-70b_tp2_burst", n)]["replies"].count(0)
             for n in (10, 20, 40, 80)}
    assert empty == {10: 2, 20: 3, 40: 7, 80: 17}
    # the same model at TP4 and TP8 stops where it stopped at TP2, give or take a reply
    for name, differ in (("lambda_h100x4_llama3-70b_tp4_burst", 1),
                         ("lambda_h100x8_llama3-70b_tp8_burst", 4)):
        replies = recorded[(name, 80)]["replies"]
        assert replies.count(0) == 17
        assert sum(a != b for a, b in zip(
            replies, recorded[("lambda_h100x2_llama3-70b_tp2_burst", 80)]["replies"])) == differ
    assert outputs[:80].count(0) == 1
    for (name, n), point in recorded.items():
        replies = point["replies"]
        assert len(replies) == n                                  # every request sent
        assert sum(replies) / n == pytest.approx(point["output_tokens"], abs=5e-3)
        prompt, output = scorer.sharegpt_draws(point)
        assert prompt.replay and output.replay
        assert list(prompt.samples) == list(prompts[:n])
        assert list(output.samples) == [max(r, 1) for r in replies]   # empty: one token (EOS)
        assert scorer.client_ttft_share(point) == (n - replies.count(0)) / n
    # a point without recorded replies: every TTFT counted
    assert scorer.client_ttft_share(sweeps["phala_h200_llama3.1-8b_tp1_sharegpt_rate"][0]) == 1
    point = recorded[("lambda_h100x2_llama3-70b_tp2_burst", 80)]
    assert np.mean(scorer.sharegpt_draws(point)[1].samples) == pytest.approx(
        (12789 + 17) / 80)                       # total_output_tokens, empty replies one each


@pytest.mark.parametrize("change, match", [
    (lambda row: row.replace(",10,120 ", ",11,120 ", 1), "expected 11 whole numbers"),
    (lambda row: row.replace(",10,120 ", ",10,x20 ", 1), "whole numbers >= 0"),
    (lambda row: row.replace(",10,120 ", ",10,121 ", 1), "is not the point's output_tokens"),
    (lambda row: row.replace("lambda_h100_llama3-8b_tp1_burst",
                             "phala_h200_llama3.1-8b_tp1_sharegpt_rate", 1), "no point of"),
    (lambda row: row.replace(",10,120 ", ",,120 ", 1), "field 'num_prompts' is empty"),
])
def test_a_bad_replies_file_is_refused_naming_the_file_line_and_field(scorer, tmp_path, change,
                                                                    match):
    text = (SWEEPS.with_name("replies.csv")).read_text(encoding="utf-8").splitlines()
    header = [line for line in text if line.startswith("sweep,")]
    first = next(line for line in text if line.startswith("lambda_h100_llama3-8b_tp1_burst,10,"))
    bad = tmp_path / "replies.csv"
    bad.write_text("\n".join([*header, change(first)]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=match) as info:
        scorer.read_sweeps(SWEEPS, replies=bad)
    assert f"{bad}, line 2" in str(info.value)


def test_sharegpt_sigma_keeps_the_log_normal_draw(scorer, sweeps):
    """``--sharegpt-sigma S`` draws log-normal lengths around the published means (the scorer's
    ShareGPT model until 2026-12-06); the default draws the recorded sample."""
    from rooflinekit.workloads import Empirical, LogNormal
    point = sweeps["phala_h200_llama3.1-8b_tp1_sharegpt_rate"][0]
    _, _, traffic = scorer._spec(point, None, 0.8)
    assert isinstance(traffic.prompt, LogNormal) and isinstance(traffic.output, LogNormal)
    _, _, traffic = scorer._spec(point, None, scorer.SHAREGPT_SIGMA)
    assert isinstance(traffic.prompt, Empirical) and isinstance(traffic.output, Empirical)
    assert scorer.clients_start(point) == scorer.clients_start(point, 0.8) == "together"
    assert scorer.clients_start(point, 0.0) == "apart"


def test_the_cookbooks_runs_send_the_earlier_runs_prompts_first(sweeps):
    """README, the cookbook rows' ``cached_prompts``: ``sglang.bench_serving`` seeds NumPy's
    global generator with its default ``--seed 1`` and draws ``--num-prompts`` lengths
    uniformly from 1 to the maximum (``np.random.randint(1, max + 1, size=n)``); the legacy
    generator draws them one after another, so a run of more prompts draws the shorter run's
    lengths first, over the same seeded shuffle of ShareGPT texts: the same prompts. Checked
    against every published input total, to the token; each run's ``cached_prompts`` is then
    the run before it's prompts, the first run's the warm-up request's one."""
    import numpy as np
    names = [name for name in sweeps if name.startswith("cookbook_")]
    assert len(names) == 8
    for name in names:
        top = int(re.search(r"random (\d+)/", sweeps[name][0]["dataset"]).group(1))
        before = None
        for point in sweeps[name]:                      # the page's order
            n = int(point["num_prompts"])
            lengths = np.random.RandomState(1).randint(1, top + 1, size=n)
            assert int(lengths.sum()) == round(point["prompt_tokens"] * n), (name, n)
            if before is not None:
                assert (lengths[:before.size] == before).all()
            assert point["cached_prompts"] == (1 if before is None else before.size), (name, n)
            before = lengths


def test_dennislees_cached_bursts_wait_for_a_serial_front_end(scorer, sweeps):
    """docs/validation.md, "What the model leaves out": dennislee22's 20- and 30-prompt bursts
    re-sent prompts the server had cached (their TTFT left out of the scores, published in the
    notes). Simulated with every prompt cached they take 40 ms or so to the first token; the
    published means are 195 and 242 ms, a serial front end's queue: (n + 1)/2 of a fixed time
    a prompt, 13 to 15 ms."""
    (name,) = [n for n in sweeps if n.startswith("dennislee")]
    for point in sweeps[name]:
        n = int(point["num_prompts"])
        if n not in (20, 30):
            continue
        assert point["mean_ttft_ms"] is None
        measured = float(re.search(r"published ([\d.]+) ms mean", point["notes"]).group(1))
        simulated = scorer.predict_point({**point, "cached_prompts": n},
                                         scorer.own_engine_name(point), "burst")["mean_ttft"]
        assert simulated < 45 and measured > 190
        per_prompt = (measured - simulated) / ((n + 1) / 2)
        assert 12.5 < per_prompt < 15.5, (n, per_prompt)


def test_the_lambdalabs_stream_in_groups_of_ten_gives_its_mean_tpot():
    """docs/validation.md: in the LambdaLabs 10-prompt burst (vLLM 0.6.0 with
    ``--num-scheduler-steps 10``, Llama-3-8B, one H100) a reply is seen in windows of ten
    decode steps, so a request of ``n`` tokens takes
    ``ceil((n - 1) / 10) * 10`` steps after its first token. At the file's median TPOT as the
    step, the mean over its requests is 11.6 ms, within 5 % of the 11.1 ms measured; token by
    token it is the step, 7.6 ms. Hand calculation from the file's own output lengths."""
    import json
    path = Path(__file__).parent / "data" / "measurements" / \
        "vllm_result_lambda_h100_llama3_8b.json"
    run = json.loads(path.read_text())
    step = run["median_tpot_ms"]
    grouped = [step * math.ceil((n - 1) / 10) * 10 / (n - 1) for n in run["output_lens"]
               if n > 1]
    mean = sum(grouped) / len(grouped)
    assert f"{step:.2f}" == "7.56" and f"{mean:.1f}" == "11.6"
    assert f"{run['mean_tpot_ms']:.1f}" == "11.1"
    assert abs(mean / run["mean_tpot_ms"] - 1) < 0.05
    doc = (Path(__file__).parents[1] / "docs" / "validation.md").read_text()
    assert "the mean over its\nten requests is 11.6 ms, against 11.1 ms measured" in doc


@pytest.fixture(scope="module")
def throughput_table(scorer):
    return {p["sweep"]: p for p in scorer.read_bursts(scorer.DEFAULT_THROUGHPUT)}


@pytest.mark.parametrize("run, expected", [
    # Llama-3.3-70B NVFP4 (0.5 B a weight, FP8 KV) on a B200 (178.35 GiB reported), 1000/1000:
    # free = 178.35 - 70,553,706,496 x 0.5 / 2^30 = 145.50 GiB; x 0.90 / (2 x 80 x 8 x 128 x
    # 1 B x 2,000 tokens) = 429.1 requests -> batch 128 x ceil(429.1 / 128) = 512; tokens
    # 429.1 x 2 = 858 -> 2,048 (the floor), at least 1,000 + 512.
    ("trtllm_perf_b200_llama-3.3-70b_tp1_1000-1000", (512, 2048)),
    # 32768/1024: 25.4 requests -> 64 (the floor); 838 tokens -> 2,048, raised to 32,768 + 64
    ("trtllm_perf_b200_llama-3.3-70b_tp1_32768-1024", (64, 32832)),
    # Qwen3-30B-A3B NVFP4 (48 layers, 4 KV heads): 1,613.5 requests -> 256 x 7 = 1,792;
    # 3,227 tokens -> 256 x 13 = 3,328
    ("trtllm_perf_b200_qwen3-30b-a3b_tp1_1000-1000", (1792, 3328)),
    # gpt-oss's MXFP4 experts are not a format the tool tunes: TensorRT-LLM's 2,048 and 8,192,
    # the token cap raised to the prompt plus the batch
    ("trtllm_perf_h200_gpt-oss-20b_tp1_1024-1024", (2048, 8192)),
    ("trtllm_perf_b200_gpt-oss-20b_tp1_32768-1024", (2048, 34816))])
def test_trtllm_bench_caps_are_the_tools(scorer, throughput_table, run, expected):
    """trtllm-bench's own max_batch_size and max_num_tokens (tensorrt_llm/bench/build/tuning.py
    calc_engine_setting and finetune_setting, bench/benchmark/utils/general.py get_settings);
    hand calculations in the comments, tolerance none (whole numbers)."""
    point = throughput_table[run]
    assert point["harness"] == "trtllm-bench"
    assert scorer.trtllm_bench_caps(point) == expected
    seqs, budget, _, admission, why = scorer.scheduler(point)
    assert (seqs, budget, admission) == (*expected, "reserve")
    assert "trtllm-bench" in why


def test_every_throughput_run_is_trtllm_benchs_and_no_sweep_is(scorer, throughput_table, sweeps):
    assert {p["harness"] for p in throughput_table.values()} == {"trtllm-bench"}
    assert {p["harness"] for points in sweeps.values() for p in points} == {""}


def test_an_unknown_harness_is_refused_naming_the_field(scorer, tmp_path):
    text = scorer.DEFAULT_THROUGHPUT.read_text(encoding="utf-8")
    bad = tmp_path / "bad.csv"
    bad.write_text(text.replace(",trtllm-bench\n", ",genai-perf\n", 1), encoding="utf-8")
    with pytest.raises(ValueError, match="field 'harness'.*genai-perf"):
        scorer.read_sweeps(bad)
