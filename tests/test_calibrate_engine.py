"""The engine knobs (Engine fields a calibration fits) and knob sets kept by GPU/engine/dtype."""

import json
import warnings

import numpy as np
import pytest

from rooflinekit import IDEAL, Engine, batching, catalog
from rooflinekit import roofline as rl
from rooflinekit.calibrate import (
    ENGINE_FIT,
    ENGINE_KNOBS,
    KNOBS,
    Calibration,
    calibrate,
    cross_validate,
    load_calibration,
    measurements_from_records,
    predict,
    save_calibration,
)
from rooflinekit.workloads import guide_workload

MODEL, GPU = catalog.model("llama-3.1-8b"), catalog.gpu("h100")
BIG = catalog.model("llama-3.1-70b")
ENGINE = {"layer_overhead": 2e-5, "kv_bandwidth_efficiency": 0.5, "gemm_half_tokens": 64.0,
          "prefill_overhead": 0.02}


# -- the engine fields: ideal by default, each doing what it says --------------------------------

ENGINE_FIELDS = ("layer_overhead", "kv_bandwidth_efficiency", "gemm_half_tokens",
                 "prefill_overhead")


def test_engine_options_default_to_the_ideal_model_bit_for_bit():
    defaults = {k: getattr(IDEAL, k) for k in ENGINE_FIELDS}
    assert defaults == {"layer_overhead": 0.0, "kv_bandwidth_efficiency": None,
                        "gemm_half_tokens": 0.0, "prefill_overhead": 0.0}
    for func, args in ((rl.decode_step_time, (MODEL, GPU, 16, 4096, 2)),
                       (rl.prefill_time, (MODEL, GPU, 2048, 2)),
                       (rl.generation_time, (MODEL, GPU, 64, 1000, 8, 2)),
                       (rl.mixed_step_time, (MODEL, GPU, 8, 512, 8 * 3000.0, 2))):
        assert float(func(*args)) == float(func(*args, engine=Engine(**defaults)))
    cost = rl.step_cost_coefficients(MODEL, GPU, 2)
    assert cost.gemm_half_tokens == 0.0 and cost.prefill_overhead == 0.0
    assert cost == rl.step_cost_coefficients(MODEL, GPU, 2, engine=Engine(**defaults))


def test_layer_overhead_is_a_fixed_cost_per_layer_per_step():
    base = float(rl.decode_step_time(MODEL, GPU, 8, 1024))
    more = float(rl.decode_step_time(MODEL, GPU, 8, 1024, engine=Engine(layer_overhead=1e-5)))
    assert more - base == pytest.approx(MODEL.n_layers * 1e-5, rel=1e-9)
    assert float(rl.decode_step_time(MODEL, GPU, 8, 1024, engine=Engine(
        step_overhead=MODEL.n_layers * 1e-5))) == pytest.approx(more, rel=1e-12)


def test_prefill_overhead_is_paid_once_per_step_with_prompt_tokens():
    base, more = (float(rl.prefill_time(MODEL, GPU, 1000, engine=Engine(prefill_overhead=p)))
                  for p in (0, 0.03))
    assert more - base == pytest.approx(0.03, rel=1e-9)
    # decode steps carry no prompt: untouched
    assert float(rl.decode_step_time(MODEL, GPU, 8, 1024,
                                     engine=Engine(prefill_overhead=0.03))) == \
        float(rl.decode_step_time(MODEL, GPU, 8, 1024))


def test_gemm_half_tokens_follows_the_efficiency_curve():
    """Compute-bound prefill: GEMM time × (n + n½) / n; attention untouched."""
    n, half = 4096, 256.0
    flat = float(rl.prefill_time(MODEL, GPU, n))
    curved = float(rl.prefill_time(MODEL, GPU, n, engine=Engine(gemm_half_tokens=half)))
    cost = rl.step_cost_coefficients(MODEL, GPU)
    gemm = (cost.flops_per_token + cost.lm_head_flops_per_token) * half / cost.peak_flops
    assert curved - flat == pytest.approx(gemm, rel=1e-9)
    # the same time as an efficiency n / (n + n½) on the GEMMs alone
    eff = n / (n + half)
    assert cost.flops_per_token * n / (cost.peak_flops * eff) == pytest.approx(
        cost.flops_per_token * (n + half) / cost.peak_flops, rel=1e-12)


def test_kv_bandwidth_efficiency_weighs_the_kv_traffic_only():
    b, ctx = 32, 8192
    be, kv = 0.8, 0.4
    cost = rl.step_cost_coefficients(MODEL, GPU)
    weights = cost.nonexpert_weight_bytes + cost.embedding_row_bytes * b
    kv_bytes = cost.kv_bytes_per_token * b * ctx
    want = weights / (GPU.hbm_bandwidth * be) + kv_bytes / (GPU.hbm_bandwidth * kv)
    split = Engine(bandwidth_efficiency=be, kv_bandwidth_efficiency=kv)
    got = float(rl.decode_memory_time(MODEL, GPU, b, ctx, engine=split))
    assert got == pytest.approx(want, rel=1e-9)
    # the step (memory-bound here) takes that time
    assert float(rl.decode_step_time(MODEL, GPU, b, ctx, engine=split)) == pytest.approx(
        want, rel=1e-9)
    # equal to the weights' efficiency: as if not given
    assert float(rl.decode_step_time(MODEL, GPU, b, ctx, engine=Engine(
        bandwidth_efficiency=be, kv_bandwidth_efficiency=be))) == pytest.approx(
        float(rl.decode_step_time(MODEL, GPU, b, ctx, engine=Engine(bandwidth_efficiency=be))),
        rel=1e-12)


def test_generation_time_sums_the_steps_with_engine_options():
    engine = Engine(**ENGINE)
    steps = float(np.sum(rl.decode_step_time(MODEL, GPU, 4, 500 + np.arange(40.0),
                                             engine=engine)))
    assert float(rl.generation_time(MODEL, GPU, 40, 500, 4, engine=engine)) == pytest.approx(
        steps, rel=1e-9)


@pytest.mark.parametrize("name, value, match", [
    ("layer_overhead", -1e-6, "layer_overhead"), ("kv_bandwidth_efficiency", 0.0,
                                                  "kv_bandwidth_efficiency"),
    ("kv_bandwidth_efficiency", 1.5, "kv_bandwidth_efficiency"),
    ("gemm_half_tokens", -1.0, "gemm_half_tokens"), ("prefill_overhead", -0.1, "prefill_overhead")])
def test_engine_options_are_checked(name, value, match):
    # checked once, where the engine is built; the roofline takes no loose option any more
    with pytest.raises(ValueError, match=match):
        Engine(**{name: value})
    with pytest.raises(TypeError, match=name):
        rl.decode_step_time(MODEL, GPU, 8, 1024, **{name: value})
    with pytest.raises(TypeError, match=name):
        rl.step_cost_coefficients(MODEL, GPU, **{name: value})


def test_simulator_clock_takes_the_engine_options():
    wl = guide_workload()
    spec = {"model": "llama-3.1-8b", "gpu": "h100", "max_num_seqs": 16}
    ideal = batching.ContinuousBatcher(**spec, engine=IDEAL).run(wl)
    slow = batching.ContinuousBatcher(**spec, engine=Engine(**ENGINE)).run(wl)
    assert float(slow["makespan"]) > float(ideal["makespan"])
    same = batching.ContinuousBatcher(
        **spec, engine=Engine(**{k: getattr(IDEAL, k) for k in ENGINE_FIELDS})).run(wl)
    np.testing.assert_array_equal(same["finish"].values, ideal["finish"].values)


# -- the calibration: knobs held, saved, selected -----------------------------------------------

def test_calibration_holds_engine_knobs_and_round_trips(tmp_path):
    cal = Calibration(prefill={"compute_efficiency": 0.5, "prefill_overhead": 0.03,
                               "gemm_half_tokens": 100.0},
                      decode={"bandwidth_efficiency": 0.8, "layer_overhead": 1e-5,
                              "kv_bandwidth_efficiency": 0.6, "interconnect_latency": 4e-6},
                      source="bench")
    step = cal.engine_for("step")
    assert step.fields() == Engine(compute_efficiency=0.5, bandwidth_efficiency=0.8,
                                   step_overhead=0.0, gemm_half_tokens=100.0,
                                   prefill_overhead=0.03, layer_overhead=1e-5,
                                   kv_bandwidth_efficiency=0.6,
                                   interconnect_latency=4e-6).fields()
    assert step.label == cal.label == "calibrated: bench"
    back = load_calibration(save_calibration(cal, tmp_path / "cal.json"))
    assert back == cal
    # each phase's engine times the roofline as it stands
    rl.decode_step_time(MODEL, GPU, 8, 1024, 2, engine=cal.engine_for("decode"))
    rl.prefill_time(MODEL, GPU, 1024, 2, engine=cal.engine_for("prefill"))
    batching.ContinuousBatcher(model="llama-3.1-8b", gpu="h100", engine=cal)
    with pytest.raises(ValueError, match="decode.layer_overhead"):
        Calibration(decode={"layer_overhead": -1.0})
    with pytest.raises(ValueError, match="unknown knob"):
        Calibration(decode={"layer_overhed": 1e-5})


def _sets():
    return Calibration(decode={"bandwidth_efficiency": 0.7}, source="bench",
                       group_by=("gpu", "engine"),
                       groups={("H100-SXM-80GB", "vllm"): {"decode": {"bandwidth_efficiency": 0.8}},
                               ("A100-SXM-80GB", "vllm"): {"decode": {"bandwidth_efficiency": 0.6}}})


def test_knob_sets_are_picked_by_name_or_spec():
    cal = _sets()
    assert cal.engine_for("decode").bandwidth_efficiency == 0.7            # shared
    assert cal.engine_for("decode", gpu="h100-sxm-80gb").bandwidth_efficiency == 0.8
    assert cal.engine_for("decode", gpu=catalog.gpu("a100"), engine="vllm"
                          ).bandwidth_efficiency == 0.6
    assert cal.engine_for("step", gpu="H100-SXM-80GB").bandwidth_efficiency == 0.8
    with pytest.warns(UserWarning, match="no knob set matches.*shared"):
        assert cal.engine_for("decode", gpu="L4").bandwidth_efficiency == 0.7
    with pytest.warns(UserWarning, match="2 knob sets match"):
        assert cal.engine_for("decode", engine="vllm").bandwidth_efficiency == 0.7
    # the roofline hands the calibration the GPU (and model) it times
    h100 = catalog.gpu("h100")
    assert float(rl.decode_step_time(MODEL, h100, 8, 1024, engine=cal)) == float(
        rl.decode_step_time(MODEL, h100, 8, 1024, engine=Engine(bandwidth_efficiency=0.8)))
    assert "2 knob sets by gpu/engine" in cal.label
    with pytest.raises(ValueError, match="unknown selector"):
        cal.engine_for("decode", engin="vllm")


def test_knob_sets_round_trip_and_old_files_load(tmp_path):
    cal = _sets()
    back = load_calibration(save_calibration(cal, tmp_path / "sets.json"))
    assert back == cal and back.group_by == ("gpu", "engine")
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"prefill": {"compute_efficiency": 0.5}, "decode": {},
                               "source": "x"}))
    loaded = load_calibration(old)
    assert loaded.groups == {} and loaded.group_by == ()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert loaded.engine_for("prefill", gpu="h100").compute_efficiency == 0.5
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"decode": {}, "group_by": ["gpu"],
                               "groups": [{"key": ["a", "b"], "decode": {}}]}))
    with pytest.raises(ValueError, match="bad.json.*one name per group_by field"):
        load_calibration(bad)
    with pytest.raises(ValueError, match="group_by"):
        Calibration(group_by=("gpu", "colour"))


# -- the fit --------------------------------------------------------------------------------------

TRUE = {"bandwidth_efficiency": 0.75, "step_overhead": 1e-3, "layer_overhead": 2e-5,
        "kv_bandwidth_efficiency": 0.5, "interconnect_latency": 5e-6}


def _decode_rows(**knobs):
    rows = []
    for model, name in ((MODEL, "llama-3.1-8b"), (BIG, "llama-3.1-70b")):
        for tp in (1, 2, 4):
            for b, ctx in ((1, 256), (8, 4096), (32, 16384), (4, 32768)):
                t = float(rl.decode_step_time(model, GPU, b, ctx, tp, engine=Engine(**knobs)))
                rows.append({"model": name, "gpu": "h100", "tp": tp, "batch_size": b,
                             "prompt_tokens": ctx, "output_tokens": 0, "context_length": ctx,
                             "ttft_ms": None, "tpot_ms": 1e3 * t, "source": "synthetic"})
    return rows


def test_engine_knobs_recovered_from_exact_decode_data():
    ds = measurements_from_records(_decode_rows(**TRUE))
    result = calibrate(ds, phases="decode", fit={"decode": ENGINE_FIT["decode"]}, n_resamples=0)
    got = result.calibration.decode
    for knob, value in TRUE.items():
        assert got[knob] == pytest.approx(value, rel=2e-3), knob
    assert float(result.errors.sel(phase="decode")["mape_calibrated"]) < 0.05
    # the prefill phase's own knobs (TTFT) are not decode parameters; nor are layer_cycles,
    # which fit="engine" leaves at its prior (it needs every row's GPU clock), and
    # moe_layer_overhead, moe_compute_share (mxfp4_ too), mla_layer_overhead and
    # attention_compute_efficiency with narrow_head_attention_share (read from MoE, MLA and
    # attention kernel tables, not fitted to rows), nor cross_host_allreduce_latency (read from all-reduce tables past a host),
    # nor sequence_overhead (a served engine's host time, fitted under load when named), nor
    # the recurrent_* knobs (read from Gated DeltaNet kernel tables)
    assert set(ENGINE_KNOBS) - {"gemm_half_tokens", "prefill_overhead", "frontend_latency",
                                "recurrent_layer_overhead", "recurrent_chain_time",
                                "recurrent_element_time",
                                "cross_host_allreduce_latency",
                                "low_precision_compute_efficiency",
                                "low_precision_layer_overhead",
                                "low_precision_bandwidth_efficiency",
                                "fp4_compute_efficiency", "fp4_bandwidth_efficiency",
                                "layer_cycles", "moe_compute_share",
                                "mxfp4_moe_compute_share", "moe_layer_overhead", "mla_layer_overhead",
                                "attention_compute_efficiency", "narrow_head_attention_share",
                                "sequence_overhead"} <= set(
        result.parameters["parameter"].values)


def test_sequence_overhead_recovered_when_named():
    # exact rows of an engine with a host cost per decode token: the batch sizes 1-32 set it
    # apart from the fixed cost per step
    true = {**TRUE, "sequence_overhead": 4e-5}
    ds = measurements_from_records(_decode_rows(**true))
    fit = {"decode": ENGINE_FIT["decode"] + ("sequence_overhead",)}
    result = calibrate(ds, phases="decode", fit=fit, n_resamples=0)
    got = result.calibration.decode
    for knob, value in true.items():
        assert got[knob] == pytest.approx(value, rel=2e-3), knob
    # and a decode step of b sequences pays b of it, by hand: 64 · 40 µs more than without
    model, gpu = MODEL, GPU
    with_host = float(rl.decode_step_time(model, gpu, 64, 1024, engine=Engine(**true)))
    without = float(rl.decode_step_time(model, gpu, 64, 1024, engine=Engine(**TRUE)))
    assert with_host - without == pytest.approx(64 * 4e-5, rel=1e-9)


def test_unidentified_engine_knob_keeps_its_prior():
    """No context: no KV traffic, so its efficiency is invisible and stays 'as the weights'."""
    rows = [r for r in _decode_rows(bandwidth_efficiency=0.7) if r["tp"] == 1]
    for r in rows:
        r["context_length"], r["prompt_tokens"] = 0, 1
        model = MODEL if r["model"] == "llama-3.1-8b" else BIG
        r["tpot_ms"] = 1e3 * float(rl.decode_step_time(model, GPU, r["batch_size"], 0,
                                                       engine=Engine(bandwidth_efficiency=0.7)))
    result = calibrate(measurements_from_records(rows), phases="decode",
                       fit={"decode": ("bandwidth_efficiency", "kv_bandwidth_efficiency")},
                       n_resamples=0)
    sel = result.parameters.sel(phase="decode", parameter="kv_bandwidth_efficiency")
    assert not bool(sel["identified"]) and np.isnan(float(sel["value"]))
    assert "kv_bandwidth_efficiency" not in result.calibration.decode
    assert result.calibration.decode["bandwidth_efficiency"] == pytest.approx(0.7, rel=1e-4)


def test_group_by_fits_a_knob_set_per_gpu():
    rows = []
    for gpu, be in (("h100", 0.8), ("a100", 0.6)):
        spec = catalog.gpu(gpu)
        for b, ctx in ((1, 256), (8, 4096), (32, 8192), (64, 2048)):
            t = float(rl.decode_step_time(MODEL, spec, b, ctx, engine=Engine(
                bandwidth_efficiency=be, step_overhead=1e-3)))
            rows.append({"model": "llama-3.1-8b", "gpu": spec.name, "tp": 1, "batch_size": b,
                         "prompt_tokens": ctx, "output_tokens": 0, "context_length": ctx,
                         "tpot_ms": 1e3 * t, "source": "synthetic"})
    ds = measurements_from_records(rows)
    result = calibrate(ds, phases="decode", fit={"decode": ("bandwidth_efficiency",
                                                            "step_overhead")},
                       n_resamples=0, group_by="gpu")
    cal = result.calibration
    assert cal.group_by == ("gpu",) and len(cal.groups) == 2
    h100, a100 = catalog.gpu("h100"), catalog.gpu("a100")
    assert cal.engine_for("decode", gpu=h100).bandwidth_efficiency == pytest.approx(0.8, 1e-4)
    assert cal.engine_for("decode", gpu=a100).bandwidth_efficiency == pytest.approx(0.6, 1e-4)
    assert float(result.errors.sel(phase="decode")["mape_calibrated"]) < 1e-3
    assert bool(result.knob_sets["own"].sel(phase="decode").all())
    assert "knob sets by gpu" in result.summary()
    # predictions pick each row's set; leaving a GPU out falls back to the shared knobs
    np.testing.assert_allclose(predict(ds, cal)["decode"].values,
                               [r["tpot_ms"] / 1e3 for r in rows], rtol=1e-4)
    cv = cross_validate(ds, by="gpu", phases="decode", fit={"decode": ("bandwidth_efficiency",
                                                                       "step_overhead")},
                        group_by="gpu")
    assert np.isfinite(cv.errors["mape_calibrated"].sel(phase="decode"))
    with pytest.raises(ValueError, match=r"group_by\[0\]"):
        calibrate(ds, phases="decode", group_by="colour", n_resamples=0)


def test_fit_engine_preset_and_checks():
    assert set(ENGINE_FIT["prefill"]) | set(ENGINE_FIT["decode"]) <= set(KNOBS)
    ds = measurements_from_records(_decode_rows(**TRUE))
    with pytest.raises(ValueError, match=r"bounds\['layer_overhead'\]"):
        calibrate(ds, bounds={"layer_overhead": (1e-3, 1e-4)})
    with pytest.raises(ValueError, match="unknown knob"):
        calibrate(ds, group_by="gpu", group_knobs=("speed",))


def test_sweep_and_batchers_take_engine_knobs_and_knob_sets():
    from rooflinekit import sweep
    cal = Calibration(decode={"bandwidth_efficiency": 0.8, "layer_overhead": 1e-5,
                              "kv_bandwidth_efficiency": 0.5},
                      prefill={"compute_efficiency": 0.5, "prefill_overhead": 0.03},
                      source="bench")
    ds = sweep.sweep(["llama-3.1-8b"], ["h100"], tp=[1], context_length=[4096], batch_size=[8],
                     prompt_tokens=[1024], engine=cal)
    assert float(ds["decode_step_time"].squeeze()) == float(
        rl.decode_step_time(MODEL, GPU, 8, 4096, engine=cal.engine_for("decode")))
    assert float(ds["prefill_time"].squeeze()) == float(
        rl.prefill_time(MODEL, GPU, 1024, engine=cal.engine_for("prefill")))
    sets = _sets()
    batcher = batching.ContinuousBatcher(model="llama-3.1-8b", gpu="h100", engine=sets,
                                         max_num_seqs=16)
    same = batching.ContinuousBatcher(model="llama-3.1-8b", gpu="h100", max_num_seqs=16,
                                      engine=sets.engine_for("step", gpu=GPU))
    wl = guide_workload()
    np.testing.assert_array_equal(batcher.run(wl)["finish"].values,
                                  same.run(wl)["finish"].values)


def test_loaded_workload_adds_the_other_prompts_to_the_ttft_step():
    """'loaded' is 'serving' with (B - 1)·s other prompts beside the new one in the TTFT step."""
    row = {"model": "llama-3.1-8b", "gpu": "h100", "tp": 1, "batch_size": 9,
           "prompt_tokens": 2000, "output_tokens": 200, "ttft_ms": 100.0, "tpot_ms": 10.0,
           "source": "synthetic"}
    ds = measurements_from_records([row])
    serving, loaded = (predict(ds, workload=w) for w in ("serving", "loaded"))
    assert loaded["decode"].item() == serving["decode"].item()
    ctx = 2000 + 200 / 2
    kv = float(rl.effective_kv_tokens(MODEL, ctx))
    prefill = float(rl.prefill_time(MODEL, GPU, 2000))
    decode = float(rl.decode_step_time(MODEL, GPU, 9, ctx))
    share = prefill / (prefill + 200 * decode)
    tokens = 2000 * (1 + 8 * share)
    want = float(rl.mixed_step_time(MODEL, GPU, 8, tokens, 8 * kv))
    assert loaded["prefill"].item() == pytest.approx(want, rel=1e-9)
    assert loaded["prefill"].item() > serving["prefill"].item()
    # one request alone has nobody to share with
    alone = measurements_from_records([{**row, "batch_size": 1}])
    assert predict(alone, workload="loaded")["prefill"].item() == \
        predict(alone, workload="serving")["prefill"].item()


def test_knob_whose_bootstrap_spans_its_bounds_is_not_identified():
    """A 1 ms TTFT intercept under 20 % noise on 50-500 ms prefills: resampling moves it across
    its whole (narrow) range, so it keeps its prior and compute efficiency is refitted alone."""
    rng = np.random.default_rng(4)
    rows = []
    for prompt in (1000, 2000, 4000, 8000, 12000, 16000) * 3:
        t = float(rl.prefill_time(MODEL, GPU, prompt, engine=Engine(
            compute_efficiency=0.5, prefill_overhead=1e-3))) * rng.lognormal(0.0, 0.2)
        rows.append({"model": "llama-3.1-8b", "gpu": "h100", "tp": 1, "batch_size": 1,
                     "prompt_tokens": prompt, "output_tokens": 1, "ttft_ms": 1e3 * t,
                     "source": "synthetic"})
    result = calibrate(measurements_from_records(rows), phases="prefill",
                       fit={"prefill": ("compute_efficiency", "prefill_overhead")},
                       bounds={"prefill_overhead": (0.0, 2e-3)}, n_resamples=40, seed=0)
    sel = result.parameters.sel(phase="prefill", parameter="prefill_overhead")
    assert not bool(sel["identified"])
    assert float(sel["value"]) == 0.0
    assert (float(sel["lower"]), float(sel["upper"])) == (0.0, 2e-3)
    ce = result.parameters.sel(phase="prefill", parameter="compute_efficiency")
    assert bool(ce["identified"]) and float(ce["lower"]) <= 0.5 <= float(ce["upper"])


# -- the link share: all-reduce bandwidth as a share of each GPU's link -------------------------

def _prefill_rows(**knobs):
    rows = []
    for gpu_name in ("h100", "a100"):
        gpu = catalog.gpu(gpu_name)
        options = dict(knobs)
        share = options.pop("interconnect_efficiency", 1.0)
        for model, name in ((MODEL, "llama-3.1-8b"), (BIG, "llama-3.1-70b")):
            for tp in (1, 2, 4, 8):
                for prompt in (512, 2048):
                    # the share as an absolute bandwidth: what a share of the link means
                    t = float(rl.prefill_time(model, gpu, prompt, tp, engine=Engine(
                        **options, interconnect_bandwidth=share * gpu.interconnect_bandwidth)))
                    rows.append({"model": name, "gpu": gpu_name, "tp": tp, "batch_size": 1,
                                 "prompt_tokens": prompt, "output_tokens": 1,
                                 "ttft_ms": 1e3 * t, "source": "synthetic"})
    return rows


def test_link_share_is_the_roofline_with_that_share_of_each_gpus_bandwidth():
    """The fit's arithmetic with a link share, and the engine a calibration gives, are the
    roofline at share × the GPU's link bandwidth."""
    cal = Calibration(prefill={"compute_efficiency": 0.6, "prefill_overhead": 0.02,
                               "interconnect_efficiency": 0.3})
    for gpu_name in ("h100", "a100"):
        gpu = catalog.gpu(gpu_name)
        absolute = Engine(compute_efficiency=0.6, prefill_overhead=0.02,
                          interconnect_bandwidth=0.3 * gpu.interconnect_bandwidth)
        row = {"model": "llama-3.1-70b", "gpu": gpu_name, "tp": 4, "batch_size": 1,
               "prompt_tokens": 2048, "output_tokens": 1, "ttft_ms": 100.0, "source": "s"}
        got = predict(measurements_from_records([row]), cal)["prefill"].item()
        want = float(rl.prefill_time(BIG, gpu, 2048, 4, engine=absolute))
        assert got == pytest.approx(want, rel=1e-9)
        # the engine keeps the share, whatever the GPU; timed on one, it is share × its link
        engine = cal.engine_for("prefill", gpu=gpu)
        assert engine.interconnect_efficiency == 0.3
        assert engine.interconnect_bandwidth is None
        assert cal.engine_for("prefill", gpu=gpu_name) == engine == cal.engine_for("prefill")
        assert float(rl.prefill_time(BIG, gpu, 2048, 4, engine=engine)) == pytest.approx(
            want, rel=1e-12)
        assert float(rl.prefill_time(BIG, gpu, 2048, 4, engine=cal)) == pytest.approx(
            want, rel=1e-12)
        # the mixed step takes the share from prefill
        step = cal.engine_for("step", gpu=gpu)
        assert step.interconnect_efficiency == 0.3
        assert float(rl.mixed_step_time(BIG, gpu, 8, 512, 8 * 3000.0, 4, engine=step)) == \
            pytest.approx(float(rl.mixed_step_time(BIG, gpu, 8, 512, 8 * 3000.0, 4,
                                                   engine=absolute)), rel=1e-12)


def test_link_share_applies_without_a_gpu(tmp_path):
    """The share is an Engine field: it needs no GPU to be applied, and warns of nothing."""
    cal = Calibration(prefill={"interconnect_efficiency": 0.3})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        engine = cal.engine_for("prefill")
        assert cal.engine_for("prefill", gpu="my-gpu") == engine
    assert engine.interconnect_efficiency == 0.3
    assert engine.fields() == Engine(interconnect_efficiency=0.3).fields()
    for gpu in (GPU, catalog.gpu("a100")):
        assert float(rl.prefill_time(BIG, gpu, 1024, 2, engine=engine)) == pytest.approx(
            float(rl.prefill_time(BIG, gpu, 1024, 2, engine=Engine(
                interconnect_bandwidth=0.3 * gpu.interconnect_bandwidth))), rel=1e-12)
    # the ideal share is the ideal engine
    assert Calibration(prefill={"interconnect_efficiency": 1.0}).engine_for(
        "prefill").fields() == IDEAL.fields()
    assert load_calibration(save_calibration(cal, tmp_path / "link.json")) == cal
    with pytest.raises(ValueError, match=r"prefill.interconnect_efficiency.*\(0, 1\]"):
        Calibration(prefill={"interconnect_efficiency": 1.5})


def test_link_share_recovered_from_exact_ttft_data():
    true = {"compute_efficiency": 0.6, "prefill_overhead": 0.03, "interconnect_efficiency": 0.3}
    ds = measurements_from_records(_prefill_rows(**true))
    result = calibrate(ds, phases="prefill", fit="engine", n_resamples=0)
    for knob, value in true.items():
        assert result.calibration.prefill[knob] == pytest.approx(value, rel=1e-3), knob
    # TP1 rows alone have no all-reduce: the share is not identified and keeps its prior
    tp1 = measurements_from_records([r for r in _prefill_rows(**true) if r["tp"] == 1])
    sel = calibrate(tp1, phases="prefill", fit="engine", n_resamples=0).parameters.sel(
        phase="prefill", parameter="interconnect_efficiency")
    assert not bool(sel["identified"]) and float(sel["value"]) == 1.0


def test_engine_fit_takes_prefills_weight_bandwidth_from_decode():
    """Prefill does not fit the bandwidth its compute-bound rows cannot see: decode's holds."""
    rows = _decode_rows(**TRUE) + _prefill_rows(compute_efficiency=0.6, prefill_overhead=0.03)
    result = calibrate(measurements_from_records(rows), fit="engine", n_resamples=0)
    cal = result.calibration
    assert cal.prefill["bandwidth_efficiency"] == cal.decode["bandwidth_efficiency"]
    assert cal.decode["bandwidth_efficiency"] == pytest.approx(0.75, rel=2e-3)
    assert not bool(result.parameters.sel(phase="prefill", parameter="bandwidth_efficiency")[
        "free"])
    # the three knobs, free in both phases, are fitted apart as before
    three = calibrate(measurements_from_records(rows), n_resamples=0).calibration
    assert three.prefill["bandwidth_efficiency"] != three.decode["bandwidth_efficiency"]
