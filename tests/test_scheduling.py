"""The engines' scheduler defaults, and plans that run them and search the chunk budget.

Expected values are the engines' own rules, written here from their sources (not from the
package's data file):

- vLLM, ``vllm/engine/arg_utils.py`` ``EngineArgs.get_batch_defaults``, usage context
  ``OPENAI_API_SERVER`` (``vllm serve``): device memory >= 70 GiB and "a100" not in the device
  name: ``max_num_seqs`` 1024, ``max_num_batched_tokens`` 8192; otherwise 256 and 2048.
- SGLang, ``python/sglang/srt/server_args.py``: ``chunked_prefill_size`` 2048 below 35 GiB,
  4096 below 60 GiB, 8192 below 160 GiB, else 16384; ``max_running_requests`` from
  ``model_runner.py`` clipped to [2048, 4096] (its floor taken).
- TensorRT-LLM, ``BuildConfig``: ``max_batch_size`` 2048, ``max_num_tokens`` 8192; its
  ``SchedulerConfig.capacity_scheduler_policy`` defaults to ``GUARANTEED_NO_EVICT`` (TensorRT-LLM
  docs, "Useful Runtime Options", Capacity Scheduler Policy): a request starts only when its
  prompt and maximum output fit, and is never paused.
"""

import numpy as np
import pytest

import rooflinekit as rk
from rooflinekit.profiles import (CHUNK_BUDGETS, chunk_budget_candidates, read_scheduler_file,
                                  scheduler_defaults, scheduler_engine)

#: (engine, GPU, its memory [GiB] from the catalogue) -> (max_num_seqs, max_num_batched_tokens)
EXPECTED = {
    ("vllm", "H100-SXM-80GB"): (1024, 8192),     # 80 GiB, not an A100
    ("vllm", "H200-SXM-141GB"): (1024, 8192),
    ("vllm", "B200"): (1024, 16384),             # 180 GiB >= 160 (vLLM 0.28.0 on)
    ("vllm", "MI300X"): (1024, 16384),
    ("vllm", "A100-SXM-80GB"): (256, 2048),      # 80 GiB but an A100 (PR #17885)
    ("vllm", "L40S"): (256, 2048),               # 48 GiB < 70
    ("vllm", "RTX-4090"): (256, 2048),
    ("sglang", "RTX-4090"): (2048, 2048),        # 24 GiB < 35
    ("sglang", "A100-SXM-40GB"): (2048, 4096),   # 40 GiB < 60
    ("sglang", "L40S"): (2048, 4096),            # 48 GiB < 60
    ("sglang", "H100-SXM-80GB"): (2048, 8192),   # 80 GiB < 160
    ("sglang", "H200-SXM-141GB"): (2048, 8192),  # 141 GiB < 160
    ("sglang", "B200"): (2048, 16384),           # 180 GiB
    ("trtllm", "H100-SXM-80GB"): (2048, 8192),
    ("trtllm", "RTX-4090"): (2048, 8192),
}

SLO = rk.SLO(ttft=2.0, itl=0.1, quantile=0.9)


@pytest.mark.parametrize("engine, gpu", sorted(EXPECTED))
def test_the_engines_defaults_by_gpu(engine, gpu):
    got = scheduler_defaults(engine, gpu)
    assert (got.max_num_seqs, got.max_num_batched_tokens) == EXPECTED[engine, gpu]
    assert got.engine == engine and got.source


def test_which_engine_schedules_a_plan():
    assert scheduler_engine(None) == "vllm"
    assert scheduler_engine("ideal") == "vllm"          # the launch command is vLLM's
    assert scheduler_engine(rk.IDEAL) == "vllm"
    assert scheduler_engine("sglang") == "sglang"


def test_the_candidates_of_a_chunk_search():
    assert CHUNK_BUDGETS == (512, 1024, 2048, 4096, 8192, 16384)
    assert chunk_budget_candidates(8192, 1024) == (1024, 2048, 4096, 8192, 16384)
    assert chunk_budget_candidates(2048, 256) == (512, 1024, 2048, 4096, 8192, 16384)
    assert chunk_budget_candidates(12288, 2048) == (2048, 4096, 8192, 12288, 16384)
    assert chunk_budget_candidates(2048, 40000) == (40000,)


@pytest.mark.parametrize("bad, match", [
    (("nope", "H100-SXM-80GB"), "engine must be one of"),
    (("vllm", None), "gpu is needed"),
    (("vllm", "no-such-gpu"), "no-such-gpu"),
])
def test_bad_arguments_are_refused(bad, match):
    with pytest.raises(ValueError, match=match):
        scheduler_defaults(*bad)


GOOD = '''[[scheduler]]
engine = "vllm"
max_num_seqs = 256
max_num_batched_tokens = 2048
version = "x"
date = "2026-12-04"
source = "here"
'''


@pytest.mark.parametrize("text, match", [
    ("", "field 'scheduler'"),
    ("[[scheduler]]\n", r"scheduler\[0\]\.engine"),
    (GOOD.replace('"vllm"', '"tgi"'), r"scheduler\[0\]\.engine: must be one of"),
    (GOOD.replace("= 256", "= 0"), r"scheduler\[0\]\.max_num_seqs: must be a whole number"),
    (GOOD.replace("= 256", "= 2.5"), r"scheduler\[0\]\.max_num_seqs"),
    (GOOD.replace("= 2048", "= 100"), r"max_num_batched_tokens: must be >= max_num_seqs"),
    (GOOD + "speed = 3\n", r"unknown field\(s\) speed"),
    (GOOD.replace('source = "here"', 'source = ""'), r"scheduler\[0\]\.source"),
    (GOOD + "min_memory_gib = nan\n", r"min_memory_gib: must be a number"),
    (GOOD + "below_memory_gib = 70\n", "its last row must apply to every GPU"),
    (GOOD + "mixed_prefill = 0\n", r"scheduler\[0\]\.mixed_prefill: must be true or false"),
    (GOOD + 'admission = "evict"\n', r"scheduler\[0\]\.admission: must be one of paged, reserve"),
    (GOOD.replace("engine =", 'admission = "reserve"\nengine =') + GOOD.replace(
        "[[scheduler]]", "[[scheduler]]\nmin_memory_gib = 0", 1), "must share one admission"),
    (GOOD + 'since_version = "V1"\n', r"scheduler\[0\]\.since_version: must be a release"),
    (GOOD + "since_version = 10\n", r"scheduler\[0\]\.since_version: must be a release"),
    ("scheduler = 3\n", "field 'scheduler'"),
    ("[[scheduler]\n", "not TOML"),
])
def test_a_bad_scheduler_file_names_the_file_row_and_field(tmp_path, text, match):
    path = tmp_path / "schedulers.toml"
    path.write_text(text)
    with pytest.raises((ValueError, TypeError), match=match) as info:
        read_scheduler_file(path)
    assert "schedulers.toml" in str(info.value)


def test_a_good_scheduler_file_reads(tmp_path):
    path = tmp_path / "schedulers.toml"
    path.write_text(GOOD)
    (row,) = read_scheduler_file(path)
    assert row["max_num_seqs"] == 256 and row["below_memory_gib"] == np.inf


@pytest.fixture(scope="module")
def searched():
    """A default plan (engine defaults, chunk search), the same grid over the candidates, and
    the candidates screened as the search screens them (its first 4 replicates, 5 %)."""
    traffic = rk.Traffic(6.0, rk.workloads.LogNormal(1500, 0.5), rk.workloads.LogNormal(200, 0.5))
    common = dict(models="Llama-3.1-8B", tp=[1, 2], requests=200, engine_draws=0)
    default = rk.plan(traffic, SLO, gpus=["H100-SXM-80GB", "A100-SXM-80GB"], replicates=8,
                      **common)
    listed, screened = {}, {}
    for seqs, gpu in ((1024, "H100-SXM-80GB"), (256, "A100-SXM-80GB")):
        grid = dict(max_num_seqs=seqs, max_num_batched_tokens=chunk_budget_candidates(2048, seqs),
                    gpus=[gpu], **common)
        listed[gpu] = rk.plan(traffic, SLO, replicates=8, **grid)
        screened[gpu] = rk.plan(traffic, SLO, replicates=4, rtol=0.05, **grid)
    return default, listed, screened


def test_a_default_plan_runs_each_gpus_engine_defaults(searched):
    default = searched[0]
    assert "max_num_seqs" not in default.dims and "max_num_batched_tokens" not in default.dims
    seqs = default["max_num_seqs"].sel(model="Llama-3.1-8B")
    assert (seqs.sel(gpu="H100-SXM-80GB") == 1024).all()
    assert (seqs.sel(gpu="A100-SXM-80GB") == 256).all()
    assert default["max_num_batched_tokens"].attrs["units"] == "tokens"
    assert default.attrs["max_num_batched_tokens_rule"] == "search"
    assert default.attrs["scheduler"].startswith("vllm defaults")


@pytest.mark.parametrize("gpu", ["H100-SXM-80GB", "A100-SXM-80GB"])
@pytest.mark.parametrize("tp", [1, 2])
def test_the_search_keeps_the_screened_best_budget(searched, gpu, tp):
    """The chosen budget is the engine's default (8192 on the H100, 2048 on the A100) unless
    another's screened median max rate beats the default's by more than 5 %, then the highest;
    the configuration's numbers are then the full grid's at that budget, to the bit (the same
    draws)."""
    default, listed, screened = searched
    one = default.sel(model="Llama-3.1-8B", gpu=gpu, tp=tp)
    chosen = int(one["max_num_batched_tokens"])
    rates = screened[gpu]["max_rate"].sel(model="Llama-3.1-8B", gpu=gpu, tp=tp).squeeze()
    rates = {int(c): float(rates.sel(max_num_batched_tokens=c))
             for c in rates["max_num_batched_tokens"].values}
    engine_default = {"H100-SXM-80GB": 8192, "A100-SXM-80GB": 2048}[gpu]
    best = max(rates, key=rates.get)
    expected = engine_default if rates[best] <= rates[engine_default] * 1.05 else best
    assert chosen == expected, rates
    full = listed[gpu].sel(model="Llama-3.1-8B", gpu=gpu, tp=tp).squeeze()
    np.testing.assert_array_equal(
        one["replicate_max_rate"].values,
        full["replicate_max_rate"].sel(max_num_batched_tokens=chosen).values)


def test_auto_takes_the_engines_budget_and_none_prefills_whole():
    traffic = rk.Traffic(2.0, 800, 100)
    common = dict(models="Llama-3.1-8B", gpus="H100-SXM-80GB", replicates=2, requests=100,
                  engine_draws=0)
    auto = rk.plan(traffic, SLO, max_num_batched_tokens="auto", **common)
    assert int(auto["max_num_batched_tokens"].squeeze()) == 8192
    whole = rk.plan(traffic, SLO, max_num_batched_tokens=None, max_num_seqs=64, **common)
    assert int(whole["max_num_batched_tokens"].squeeze()) == 0
    assert whole.attrs["max_num_batched_tokens_rule"] == "whole prompts"
    sglang = rk.plan(traffic, SLO, max_num_batched_tokens="auto", **{**common, "engine": "sglang"})
    assert int(sglang["max_num_seqs"].squeeze()) == 2048


@pytest.mark.parametrize("kwargs, match", [
    ({"max_num_seqs": "all"}, "max_num_seqs must be 'auto'"),
    ({"max_num_batched_tokens": "best"}, "max_num_batched_tokens must be 'auto', 'search'"),
    ({"max_num_batched_tokens": 512}, r"max_num_batched_tokens must be >= max_num_seqs \(1024, "
                                      r"the engine default\)"),
])
def test_bad_scheduler_arguments_are_refused_before_work(kwargs, match):
    with pytest.raises(ValueError, match=match):
        rk.plan(rk.Traffic(2.0, 800, 100), SLO, models="Llama-3.1-8B", gpus="H100-SXM-80GB",
                **kwargs)


def test_a_load_curve_runs_the_engines_defaults():
    curve = rk.planning.load_curve(rk.Traffic(2.0, 800, 100), SLO, model="Llama-3.1-8B",
                          gpu="A100-SXM-80GB", rates=[1.0], replicates=1, requests=50)
    assert (curve.attrs["max_num_seqs"], curve.attrs["max_num_batched_tokens"]) == (256, 2048)
    whole = rk.planning.load_curve(rk.Traffic(2.0, 800, 100), SLO, model="Llama-3.1-8B",
                          gpu="A100-SXM-80GB", rates=[1.0], replicates=1, requests=50,
                          max_num_seqs=16, max_num_batched_tokens=None)
    assert (whole.attrs["max_num_seqs"], whole.attrs["max_num_batched_tokens"]) == (16, 0)


def test_a_load_curve_carries_the_profiles_uncertainty():
    """With a shipped profile, replicate r is timed by knob draw r mod 4; with engine_draws=0
    every replicate by the fitted knobs. The draws' rows of the curve are those of a curve
    timed by that draw alone (the same requests: common random numbers)."""
    traffic = rk.Traffic(2.0, rk.workloads.LogNormal(800, 0.5), rk.workloads.LogNormal(100, 0.5))
    common = dict(model="Llama-3.1-8B", gpu="H100-SXM-80GB", rates=[2.0, 8.0], replicates=8,
                  requests=100)
    drawn = rk.planning.load_curve(traffic, SLO, **common)
    fitted = rk.planning.load_curve(traffic, SLO, engine_draws=0, **common)
    assert drawn.attrs["engine_draws"] == 4 and fitted.attrs["engine_draws"] == 0
    assert list(drawn["replicate"].values) == list(range(8))
    assert not np.array_equal(drawn["mean_tpot"].values, fitted["mean_tpot"].values)
    # replicate 1 and 5 share draw 1: a curve timed by that draw alone gives their numbers
    seeds = [int(np.random.SeedSequence([0, 0xE16, g]).generate_state(1)[0]) for g in range(4)]
    one = rk.engine_profile("vllm", "H100-SXM-80GB").draw(seeds[1])
    alone = rk.planning.load_curve(traffic, SLO, engine=one, engine_draws=0, **common)
    for r in (1, 5):
        np.testing.assert_array_equal(drawn["mean_tpot"].sel(replicate=r).values,
                                      alone["mean_tpot"].sel(replicate=r).values)


def test_sglang_runs_prefill_steps_apart():
    """SGLang's server_args.py: enable_mixed_chunk = False, so a step with prompt tokens carries
    no decodes; vLLM V1 and TensorRT-LLM mix them. A load curve runs the engine's rule unless
    told, and says which it ran."""
    for engine, mixed in (("vllm", True), ("trtllm", True), ("sglang", False)):
        assert scheduler_defaults(engine, "H100-SXM-80GB").mixed_prefill is mixed
    common = dict(model="Llama-3.1-8B", gpu="H100-SXM-80GB", rates=[4.0], replicates=1,
                  requests=50)
    traffic = rk.Traffic(4.0, 800, 100)
    assert rk.planning.load_curve(traffic, SLO, engine="sglang", **common) \
        .attrs["mixed_prefill"] == 0
    assert rk.planning.load_curve(traffic, SLO, engine="sglang", mixed_prefill=True, **common) \
        .attrs["mixed_prefill"] == 1
    with pytest.raises(TypeError, match="mixed_prefill"):
        rk.planning.load_curve(traffic, SLO, mixed_prefill="yes", **common)


def test_simulate_runs_the_engines_scheduling(capsys):
    """`rooflinekit simulate --engine sglang` runs SGLang's prefill steps apart from the decodes
    and says so; vLLM's (the default) mixes them."""
    import json
    from rooflinekit.cli.main import main
    common = ["simulate", "--workload", "lognormal", "--model", "llama-3.1-8b", "--gpu", "h100",
              "--requests", "40"]
    assert main([*common, "--engine", "sglang"]) == 0
    text = capsys.readouterr().out
    assert "prefill steps apart from the decodes (SGLang's scheduling)" in text
    assert main([*common, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["mixed_prefill"] is True
    assert main([*common, "--engine", "sglang", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["mixed_prefill"] is False


def test_plan_by_engine_name_runs_that_engines_scheduler(capsys):
    """`rooflinekit plan --engine sglang` plans with SGLang's scheduler defaults (2,048
    sequences on an H100, prefill steps apart), not vLLM's, and says so."""
    import json
    from rooflinekit.cli.main import main
    argv = ["plan", "llama-3.1-8b", "--gpus", "h100", "--rate", "2", "--prompt-mean", "500",
            "--output-mean", "100", "--ttft", "1", "--itl", "0.05", "--replicates", "2",
            "--requests", "100"]
    assert main([*argv, "--engine", "sglang"]) == 0
    assert "scheduling: sglang defaults (0.5), prefill steps apart" in capsys.readouterr().out
    assert main([*argv, "--engine", "sglang", "--json"]) == 0
    (row, *_) = json.loads(capsys.readouterr().out)["configurations"]
    assert row["max_num_seqs"] == scheduler_defaults("sglang", "H100-SXM-80GB").max_num_seqs


def test_mixed_prefill_given_overrides_the_engines_rule(capsys):
    """`--mixed-prefill on|off` (and ``plan(mixed_prefill=...)``) override the engine's rule:
    vLLM's profile with prefill steps apart, SGLang's with them mixed; off cannot go with
    speculative decoding (simulated mixed), a clear error before any work."""
    import json
    from rooflinekit.cli.main import main
    common = ["simulate", "--workload", "lognormal", "--model", "llama-3.1-8b", "--gpu", "h100",
              "--requests", "40", "--json"]
    runs = {}
    for engine, flag, mixed in (("vllm", "off", False), ("sglang", "on", True),
                                ("sglang", "auto", False)):
        assert main([*common, "--engine", engine, "--mixed-prefill", flag]) == 0
        runs[engine, flag] = json.loads(capsys.readouterr().out)
        assert runs[engine, flag]["mixed_prefill"] is mixed
    assert main([*common[:-1], "--engine", "vllm", "--mixed-prefill", "off"]) == 0
    assert "prefill steps apart from the decodes (--mixed-prefill off)" in \
        capsys.readouterr().out
    with pytest.raises(SystemExit):
        main([*common, "--mixed-prefill", "sometimes"])
    assert "--mixed-prefill" in capsys.readouterr().err
    assert main([*common, "--speculative-draft", "0.1", "--num-speculative-tokens", "3",
                 "--acceptance", "0.7", "--mixed-prefill", "off"]) == 2
    assert "--mixed-prefill off cannot go with --speculative-draft" in capsys.readouterr().err

    traffic = rk.Traffic(2.0, 500, 100)
    common = dict(models=["Llama-3.1-8B"], gpus=["H100-SXM-80GB"], replicates=1, requests=50,
                  max_num_batched_tokens="auto")
    apart = rk.planning.plan(traffic, SLO, mixed_prefill=False, **common)
    assert apart.attrs["mixed_prefill"] == 0
    assert rk.planning.plan(traffic, SLO, engine="sglang", mixed_prefill=True,
                            **common).attrs["mixed_prefill"] == 1
    with pytest.raises(TypeError, match="mixed_prefill"):
        rk.planning.plan(traffic, SLO, mixed_prefill="yes", **common)
    spec = rk.batching.Speculative(draft=0.1, draft_tokens=3, acceptance=0.7)
    with pytest.raises(ValueError, match="mixed_prefill=False cannot go with speculative"):
        rk.planning.plan(traffic, SLO, mixed_prefill=False, speculative=spec, **common)


def test_each_engine_admits_as_it_does_by_default():
    """vLLM and SGLang admit on the blocks a request holds (paged, preempting); TensorRT-LLM's
    GUARANTEED_NO_EVICT only when the prompt and whole output fit (reserve). "auto" takes the
    engine's rule, paged where prefix caching is asked for (shared in paged blocks only); a
    rule given is kept; plans and load curves say which they ran."""
    from rooflinekit.profiles import ADMISSIONS, scheduler_admission
    assert ADMISSIONS == ("paged", "reserve")
    for engine, rule in (("vllm", "paged"), ("sglang", "paged"), ("trtllm", "reserve")):
        assert scheduler_defaults(engine, "H100-SXM-80GB").admission == rule
        assert scheduler_admission("auto", engine, "H100-SXM-80GB") == rule
        assert scheduler_admission("auto", f"{engine}@0.1", "H100-SXM-80GB") == rule
    for engine in (None, "ideal", rk.IDEAL):                # vLLM's launch command
        assert scheduler_admission("auto", engine, "B200") == "paged"
    assert scheduler_admission("auto", "trtllm", "B200", prefix_caching=True) == "paged"
    assert scheduler_admission("paged", "trtllm", "B200") == "paged"
    for bad in ("evict", None, 1):
        with pytest.raises(ValueError, match="admission must be one of auto, paged, reserve"):
            scheduler_admission(bad, "vllm", "B200")
    traffic = rk.Traffic(2.0, 800, 100)
    common = dict(model="Llama-3.1-8B", gpu="H100-SXM-80GB", rates=[2.0], replicates=1,
                  requests=50)
    assert rk.planning.load_curve(traffic, SLO, engine="trtllm", **common) \
        .attrs["admission"] == "reserve"
    assert rk.planning.load_curve(traffic, SLO, **common).attrs["admission"] == "paged"
    plan = rk.plan(traffic, SLO, models="Llama-3.1-8B", gpus="H100-SXM-80GB", engine="trtllm",
                   max_num_batched_tokens="auto", replicates=1, requests=50)
    assert plan.attrs["admission"] == "reserve"
    with pytest.raises(ValueError, match="admission"):
        rk.plan(traffic, SLO, models="Llama-3.1-8B", gpus="H100-SXM-80GB", admission="evict")


def test_reserving_the_whole_output_admits_fewer_long_requests():
    """With outputs far longer than prompts, reserving prompt + output at admission holds
    fewer sequences in the same KV cache than admitting on the blocks held: TensorRT-LLM's rule
    serves fewer tokens a second at saturation than vLLM's on the same profile."""
    traffic = rk.Traffic(50.0, 200, 4000)
    common = dict(model="Llama-3.1-70B", gpu="H100-SXM-80GB", tp=2, concurrencies=[400],
                  replicates=1, requests=800, engine_draws=0,
                  engine=rk.engine_profile("vllm", "H100-SXM-80GB"))
    paged = rk.planning.load_curve(traffic, SLO, admission="paged", **common)
    reserved = rk.planning.load_curve(traffic, SLO, admission="reserve", **common)
    assert float(reserved["throughput"].max()) < 0.9 * float(paged["throughput"].max())
    # fewer sequences a step: each decodes faster
    assert float(reserved["mean_tpot"].max()) < float(paged["mean_tpot"].max())


def test_the_commands_take_admission_and_the_bound_runs_the_answers(capsys):
    """`--admission` (auto, paged, reserve) on curve, plan and disaggregated; a curve says which
    rule it ran, and its ideal columns run the answer's scheduler (TensorRT-LLM's 2,048 slots,
    8,192 tokens and reserved admission under --engine trtllm), not vLLM's."""
    import json
    from rooflinekit.cli.main import main
    argv = ["curve", "llama-3.1-8b", "--gpu", "h100", "--rates", "4", "--prompt-mean", "500",
            "--output-mean", "100", "--replicates", "1", "--requests", "60", "--json"]
    assert main([*argv, "--engine", "trtllm"]) == 0
    trt = json.loads(capsys.readouterr().out)
    assert trt["admission"] == "reserve" and trt["max_num_seqs"] == 2048
    assert main([*argv, "--engine", "trtllm", "--admission", "paged"]) == 0
    assert json.loads(capsys.readouterr().out)["admission"] == "paged"
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["admission"] == "paged"
    bound = rk.planning.load_curve(
        rk.Traffic(1.0, 500, 100), rk.SLO(ttft=3600.0), model="Llama-3.1-8B",
        gpu="H100-SXM-80GB", rates=[4.0], replicates=1, requests=60, engine=rk.IDEAL,
        max_num_seqs=2048, max_num_batched_tokens=8192, mixed_prefill=True,
        admission="reserve", engine_draws=0)
    (point,) = trt["loads"]
    assert point["ideal_mean_ttft_ms"] == pytest.approx(
        float(bound["mean_ttft"].median("replicate").values.ravel()[0]) * 1e3, rel=1e-9)
    for command in ("plan", "disaggregated"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert "--admission {auto,paged,reserve}" in capsys.readouterr().out


def test_an_older_version_named_is_warned_of_its_scheduler():
    """vLLM's defaults in the file are read from 0.10.0 on (``since_version``): a planner told of
    an older vLLM (``vllm@0.6.0``) plans them and says so, naming the arguments that plan the
    ones it ran; a version from 0.10.0 on, no version, another engine, or slots and a budget
    given, says nothing."""
    import warnings

    from rooflinekit.profiles import older_than_scheduler
    assert scheduler_defaults("vllm", "H100-SXM-80GB").since_version == "0.10.0"
    note = older_than_scheduler("vllm@0.6.0", "H100-SXM-80GB")
    assert note.startswith("vllm 0.6.0 is older than the scheduler defaults planned for it "
                           "(1,024 sequences and 8,192 tokens a step on H100-SXM-80GB, vllm's "
                           "from 0.10.0 on)")
    assert "max_num_seqs" in note and "--max-num-batched-tokens" in note
    for engine in ("vllm@0.10.0", "vllm@0.11.0", "vllm", None, "ideal", "sglang@0.4.0"):
        assert older_than_scheduler(engine, "H100-SXM-80GB") is None
    traffic = rk.Traffic(2.0, 500, 100)
    common = dict(models="Llama-3.1-8B", gpus="H100-SXM-80GB", replicates=2, requests=40,
                  engine_draws=0)
    with pytest.warns(UserWarning, match="vllm 0.6.0 is older than the scheduler defaults"):
        rk.plan(traffic, SLO, engine="vllm@0.6.0", **common)
    with pytest.warns(UserWarning, match="vllm 0.6.0 is older"):
        rk.planning.load_curve(traffic, SLO, model="Llama-3.1-8B", gpu="H100-SXM-80GB",
                               rates=[1.0],
                               replicates=2, requests=40, engine="vllm@0.6.0", engine_draws=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rk.plan(traffic, SLO, engine="vllm@0.6.0", max_num_seqs=256,
                max_num_batched_tokens=2048, **common)
        rk.plan(traffic, SLO, engine="vllm@0.11.0", **common)


def test_vllms_160_gib_tier_is_from_0_28():
    """vLLM 0.28.0's get_batch_defaults gives a device of >= 160 GiB 16,384 tokens (0.27.0 has
    no such tier): a plan naming an older release on a B200 says it plans the newer defaults;
    the H200 (139.7 GiB as the driver reports it) keeps 8,192."""
    from rooflinekit.profiles import older_than_scheduler
    assert scheduler_defaults("vllm", "B200").since_version == "0.28.0"
    why = older_than_scheduler("vllm@0.24.0", "B200")
    assert why is not None and "16,384 tokens a step on B200" in why
    assert older_than_scheduler("vllm@0.28.0", "B200") is None
    assert older_than_scheduler("vllm@0.24.0", "H200-SXM-141GB") is None
