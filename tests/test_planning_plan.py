"""Capacity under load: Traffic, SLO, the max-rate search, plan, cheapest_plan, decision_table."""

import dataclasses
import math

import numpy as np
import pytest
import xarray as xr

import rooflinekit as rk
from rooflinekit import catalog
from rooflinekit.batching import ContinuousBatcher
from rooflinekit.planning import capacity
from rooflinekit.workloads import Constant, LogNormal, Workload

MODEL, GPU = "Llama-3.1-8B", "H100-SXM-80GB"
TRAFFIC = rk.Traffic(4.0, LogNormal(1000, 0.5), LogNormal(200, 0.5))
SLO = rk.SLO(ttft=0.5, itl=0.02, quantile=0.9)


@pytest.fixture(scope="module")
def small_plan():
    return rk.plan(TRAFFIC, SLO, models=MODEL, gpus=[GPU, "L40S"], tp=[1, 2],
                   max_num_seqs=[32, 128], replicates=6, requests=300, seed=1)


# --- specs ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, match", [
    ({"rate": 0}, "rate"), ({"rate": -1}, "rate"), ({"rate": math.inf}, "rate"),
    ({"rate": math.nan}, "rate"), ({"prompt": "long"}, "prompt"), ({"output": -3}, "output"), ({"output": 0}, "output"),
    ({"arrival": "uniform"}, "arrival"), ({"burstiness": 0.5}, "burstiness"),
    ({"arrival": "gamma", "burstiness": 0}, "burstiness"), ({"profile": [1, -1]}, "profile"),
    ({"profile": [0, 0]}, "profile"), ({"profile": [[1, 2]]}, "profile"),
])
def test_traffic_refuses_bad_input(kwargs, match):
    base = {"rate": 1.0, "prompt": 100, "output": 10}
    with pytest.raises((ValueError, TypeError), match=match):
        rk.Traffic(**{**base, **kwargs})


@pytest.mark.parametrize("kwargs, match", [
    ({"ttft": 0}, "ttft"), ({"itl": -0.1}, "itl"), ({"e2e": math.inf}, "e2e"),
    ({"quantile": 0}, "quantile"), ({"quantile": 1}, "quantile"), ({"quantile": 1.5}, "quantile"),
    ({"attainment": 0}, "attainment"), ({"ttft": "1"}, "ttft"),
])
def test_slo_refuses_bad_input(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        rk.SLO(**kwargs)


def test_traffic_monthly_volume_and_arrivals():
    # 730 h × 3600 s × 2 requests/s without a profile; the profile's sum with one
    assert rk.Traffic(2, 10, 10).monthly_requests == pytest.approx(730 * 3600 * 2)
    assert rk.Traffic(2, 10, 10, profile=[5, 7, 0]).monthly_requests == 12
    bursty = rk.Traffic(2, 10, 10, arrival="gamma", burstiness=0.25).arrivals()
    gaps = np.diff(bursty.sample(np.random.default_rng(0), 200_000))
    # Gamma(k, 1/(λk)) gaps: mean 1/λ = 0.5 s, squared CV 1/k = 4 (0.5 % / 3 % Monte Carlo error)
    assert gaps.mean() == pytest.approx(0.5, rel=0.02)
    assert gaps.var() / gaps.mean() ** 2 == pytest.approx(4.0, rel=0.05)


# --- the search against queueing theory ----------------------------------------------------------

def _md1_wait_cdf(t, rho):
    """P(W <= t) of an M/D/1 queue, service time 1, load rho (Erlang 1909).

    P(W <= t) = (1 - rho) Σ_{k=0}^{floor(t)} (rho (k - t))^k / k! · exp(-rho (k - t)).
    """
    return (1 - rho) * sum((rho * (k - t)) ** k / math.factorial(k) * math.exp(-rho * (k - t))
                           for k in range(int(math.floor(t)) + 1))


def test_max_rate_matches_md1_waiting_time_quantile():
    # One slot, every request 50 ticks of decode, no prompt, unlimited KV: an M/D/1 queue in
    # ticks. The SLO "90% of requests finish within 150 ticks of arriving" is W <= 100 ticks,
    # i.e. P(W <= 2 service times) >= 0.9; solve that for the load independently by bisection.
    service, quantile = 50, 0.9
    lo, hi = 1e-6, 1 - 1e-6
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _md1_wait_cdf(100 / service, mid) >= quantile else (lo, mid)
    expected_rate = lo / service                       # requests per tick
    traffic = rk.Traffic(1.0, 0, service)
    draws = capacity.draw_requests(traffic, replicates=8, requests=4000, seed=3)
    batcher = ContinuousBatcher(max_num_seqs=1, clock="tick")
    found = capacity.max_rate(batcher, rk.SLO(e2e=150 + 1, quantile=quantile), draws)
    # Median over 8 replicates of 4,000 requests: within 6 % (Monte Carlo error of a 90th
    # percentile at load ≈ 0.57, the start-up transient, and the 2 % search tolerance).
    assert np.median(found["max_rate"]) == pytest.approx(expected_rate, rel=0.06)
    assert set(found["binding"]) == {"e2e"}


def test_search_brackets_the_crossing():
    # lo meets the SLO and 1 + rtol above it misses it, on the same draws
    traffic = rk.Traffic(1.0, 0, 20)
    draws = capacity.draw_requests(traffic, replicates=3, requests=500, seed=0)
    batcher = ContinuousBatcher(max_num_seqs=2, clock="tick")
    slo = rk.SLO(e2e=60, quantile=0.8)
    found = capacity.max_rate(batcher, slo, draws, rtol=0.01)
    arrival, prompt, output = draws
    for r, rate in enumerate(found["max_rate"]):
        at = rk.batching.run_replicates(batcher, arrival[r:r + 1] / rate, prompt[r:r + 1],
                                        output[r:r + 1], e2e_target=60)
        above = rk.batching.run_replicates(batcher, arrival[r:r + 1] / (rate * 1.02),
                                           prompt[r:r + 1], output[r:r + 1], e2e_target=60)
        assert float(at["e2e_attainment"][0]) >= 0.8
        assert float(above["e2e_attainment"][0]) < 0.8 or rate == found["saturation_rate"][r]


def test_saturation_binding_says_what_capped_the_burst():
    # Tick clock, unlimited KV, every request 20 decode ticks and an SLO loose enough to hold at
    # saturation: the burst of 10 requests runs all at once under 16 slots ("requests": the rate
    # is a floor), under 4 slots the slots cap it.
    traffic = rk.Traffic(1.0, 0, 20)
    draws = capacity.draw_requests(traffic, replicates=2, requests=10, seed=0)
    slo = rk.SLO(e2e=10_000, quantile=0.5)
    found = {slots: capacity.max_rate(ContinuousBatcher(max_num_seqs=slots, clock="tick"),
                                      slo, draws) for slots in (16, 10, 4)}
    assert set(found[16]["binding"]) == {"requests"}
    assert set(found[10]["binding"]) == {"max_num_seqs"}     # all ran at once, and the slots full
    assert set(found[4]["binding"]) == {"max_num_seqs"}
    # all 10 at once: 10 requests over 20 ticks; 4 at once: 4 over 20
    np.testing.assert_allclose(found[16]["saturation_rate"], 10 / 20)
    np.testing.assert_allclose(found[4]["saturation_rate"], 4 / 20)
    # 40-token prompts in a 100-token paged cache: two at once, the cache full (96 %)
    long = capacity.draw_requests(rk.Traffic(1.0, 40, 20), replicates=2, requests=10, seed=0)
    tight = ContinuousBatcher(max_num_seqs=16, clock="tick", kv_budget_tokens=100,
                              admission="paged")
    assert set(capacity.max_rate(tight, slo, long)["binding"]) == {"memory"}
    # reserved whole (40 + 20 of 100 tokens): one at a time, the cache 60 % full but unable
    # to take a second reservation; it was labelled max_num_seqs, whose 16 slots never filled
    reserve = dataclasses.replace(tight, admission="reserve")
    found = capacity.max_rate(reserve, slo, long)
    assert set(found["binding"]) == {"memory"}
    np.testing.assert_allclose(found["kv_occupancy"], 0.6)


# --- plan ----------------------------------------------------------------------------------------

def test_plan_dimensions_units_and_no_nan(small_plan):
    ds = small_plan
    assert dict(ds.sizes) == {"model": 1, "gpu": 2, "tp": 2, "max_num_seqs": 2, "replicate": 6}
    for name, var in ds.data_vars.items():
        assert "units" in var.attrs and "long_name" in var.attrs, name
        if var.dtype.kind == "f":
            assert not np.isnan(var.values).any(), name
    # the default engine: each GPU's vLLM profile, labelled as such (not the ideal bound)
    from rooflinekit.profiles import resolve_engine
    label = ds.attrs["model_quality"]
    assert label == resolve_engine("vllm", [GPU, "L40S"]).label
    assert label.startswith("calibrated: vllm ") and " profile for " in label
    assert label != rk.planning.IDEAL.label
    assert set(np.unique(ds["binding"].values)) <= set(capacity.BINDINGS)
    # the ideal bound by name is rooflinekit.IDEAL, labelled so
    small = dict(models=MODEL, gpus=GPU, tp=1, max_num_seqs=32, replicates=2, requests=100,
                 seed=1)
    ideal = rk.plan(TRAFFIC, SLO, **small, engine="ideal")
    assert ideal.attrs["model_quality"] == rk.planning.IDEAL.label == rk.IDEAL.label
    xr.testing.assert_identical(ideal, rk.plan(TRAFFIC, SLO, **small, engine=rk.IDEAL))


def test_plan_fleet_arithmetic(small_plan):
    ds = small_plan.sel(model=MODEL)
    rate = ds["max_rate"].values
    need = TRAFFIC.rate * 1.2
    replicas = np.where(rate > 0, np.ceil(need / np.where(rate > 0, rate, 1)), 0)
    assert (ds["replicas"].values == replicas).all()
    assert (ds["gpus"] == ds["replicas"] * ds["tp"]).all()
    hourly = {GPU: catalog.gpu(GPU).hourly_price, "L40S": catalog.gpu("L40S").hourly_price}
    for gpu, price in hourly.items():
        got = ds["monthly_cost"].sel(gpu=gpu).values
        want = ds["gpus"].sel(gpu=gpu).values * price * 730.0
        serving = ds["replicas"].sel(gpu=gpu).values > 0
        np.testing.assert_allclose(got[serving], want[serving], rtol=1e-12)
        assert np.isinf(got[~serving]).all()
    # the band brackets the median
    assert (ds["max_rate_low"] <= ds["max_rate"]).all() and \
        (ds["max_rate"] <= ds["max_rate_high"]).all()
    assert (ds["replicas_low"] <= ds["replicas"]).all() and \
        (ds["replicas"] <= ds["replicas_high"]).all()


def test_plan_is_self_consistent():
    # An independent run, on seeds the plan never saw, at 0.85 × max_rate meets the SLO and at
    # 1.3 × misses it, in most seeds.
    ds = rk.plan(TRAFFIC, SLO, models=MODEL, gpus=GPU, tp=1, max_num_seqs=64, replicates=8,
                 requests=400, seed=5)
    rate = float(ds["max_rate"].squeeze())
    assert rate > 0
    budget = int(ds["kv_budget_tokens"].squeeze())
    chunk = int(ds["max_num_batched_tokens"].squeeze()) or None    # the budget the plan chose
    batcher = ContinuousBatcher(max_num_seqs=64, kv_budget_tokens=budget, admission="paged",
                                max_num_batched_tokens=chunk, model=MODEL, gpu=GPU,
                                clock="roofline")
    met = {0.85: 0, 1.3: 0}
    seeds = range(100, 110)
    for factor in met:
        for seed in seeds:
            spec = TRAFFIC.workload(400, rate=rate * factor)
            run = batcher.run(spec.sample(seed), ttft_target=SLO.ttft, itl_target=SLO.itl)
            ttft_share = float((run["ttft"] <= SLO.ttft).sum()) / run.sizes["request"]
            met[factor] += ttft_share >= SLO.quantile and \
                float(run["token_itl_attainment"]) >= SLO.quantile
    assert met[0.85] >= 7 and met[1.3] <= 3, met


def test_plan_configurations_that_cannot_serve():
    ds = rk.plan(rk.Traffic(1, 500, 50), rk.SLO(ttft=1.0), models="Llama-3.1-70B",
                 gpus="L40S", tp=[1, 3], replicates=2, requests=50)
    assert ds["binding"].sel(tp=1).item() == "does_not_fit"
    assert ds["binding"].sel(tp=3).item() == "invalid_layout"      # 64 heads over 3 GPUs
    assert (ds["max_rate"] == 0).all() and (ds["replicas"] == 0).all()
    assert np.isinf(ds["monthly_cost"]).all()
    assert ds.attrs["simulations"] == 0


def test_plan_with_chunks_is_identical(small_plan):
    chunked = rk.plan(TRAFFIC, SLO, models=MODEL, gpus=[GPU, "L40S"], tp=[1, 2],
                      max_num_seqs=[32, 128], replicates=6, requests=300, seed=1, chunks=3)
    xr.testing.assert_identical(chunked, small_plan)


def test_plan_on_one_thread_is_identical(small_plan):
    """Configurations shared out over threads (the default on several cores) give the numbers
    of one configuration at a time with its replicates spread over the cores."""
    import numba
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        one = rk.plan(TRAFFIC, SLO, models=MODEL, gpus=[GPU, "L40S"], tp=[1, 2],
                      max_num_seqs=[32, 128], replicates=6, requests=300, seed=1)
    finally:
        numba.set_num_threads(threads)
    xr.testing.assert_identical(one, small_plan)


def test_looser_slo_never_lowers_the_rate():
    kwargs = {"models": MODEL, "gpus": GPU, "tp": 1, "max_num_seqs": 64, "replicates": 4,
              "requests": 300}
    tight = rk.plan(TRAFFIC, rk.SLO(ttft=0.3, quantile=0.9), **kwargs)
    loose = rk.plan(TRAFFIC, rk.SLO(ttft=1.0, quantile=0.9), **kwargs)
    # same draws: within the search tolerance, the looser target allows at least the rate
    assert float(loose["max_rate"].squeeze()) >= float(tight["max_rate"].squeeze()) / 1.02


def test_calibration_is_used_and_labelled():
    cal = rk.Calibration(prefill={"compute_efficiency": 0.5},
                         decode={"bandwidth_efficiency": 0.5, "step_overhead": 0.002},
                         source="test knobs")
    kwargs = {"models": MODEL, "gpus": GPU, "tp": 1, "max_num_seqs": 64, "replicates": 3,
              "requests": 200}
    ideal = rk.plan(TRAFFIC, SLO, engine=rk.IDEAL, **kwargs)
    slow = rk.plan(TRAFFIC, SLO, engine=cal, **kwargs)
    assert slow.attrs["model_quality"] == "calibrated: test knobs"
    assert float(slow["saturation_rate"].squeeze()) < float(ideal["saturation_rate"].squeeze())
    # the calibration's mixed-step engine is what times the search
    same = rk.plan(TRAFFIC, SLO, engine=cal.engine_for("step"), **kwargs)
    np.testing.assert_array_equal(same["replicate_max_rate"].values,
                                  slow["replicate_max_rate"].values)
    assert same.attrs["model_quality"] == "calibrated: test knobs"
    # an Engine's plan says what it changes
    engine = rk.Engine(compute_efficiency=0.5)
    assert rk.plan(TRAFFIC, SLO, engine=engine, **kwargs).attrs["model_quality"] == \
        engine.label == "engine: compute_efficiency=0.5"


@pytest.mark.parametrize("kwargs, match", [
    ({"models": []}, "models"), ({"gpus": "no-such-gpu"}, "no-such-gpu"), ({"tp": 0}, "tp"),
    ({"tp": []}, "tp"), ({"tp": [1, 1]}, "tp"), ({"max_num_seqs": -1}, "max_num_seqs"),
    ({"headroom": -0.1}, "headroom"), ({"replicates": 0}, "replicates"),
    ({"requests": 5}, "requests"), ({"rtol": 0}, "rtol"), ({"admission": "lazy"}, "admission"),
    ({"gpu_memory_utilization": 1.5}, "gpu_memory_utilization"),
    ({"max_num_batched_tokens": 16}, "max_num_batched_tokens"),
    ({"prices": {GPU: -1}}, "prices"), ({"engine": "fast"}, "engine"),
    ({"engine": {"compute_efficiency": 0.5}}, "engine"),
    ({"calibration": rk.Calibration()}, "calibration"),
    ({"roofline_options": {"compute_efficiency": 0.5}}, "roofline_options"),
])
def test_plan_refuses_bad_input_before_work(kwargs, match):
    base = {"models": MODEL, "gpus": GPU, "replicates": 2, "requests": 50}
    with pytest.raises((ValueError, TypeError), match=match):
        rk.plan(TRAFFIC, SLO, **{**base, **kwargs})


def test_plan_refuses_work_above_the_limit_with_the_way_out():
    with pytest.raises(ValueError, match="chunks="):
        rk.plan(TRAFFIC, SLO, models=MODEL, gpus=GPU, tp=[1, 2, 4, 8],
                max_num_seqs=[16, 32, 64, 128, 256], replicates=1000, requests=10_000)


def test_plan_refuses_draws_above_the_memory_limit_even_with_chunks():
    with pytest.raises(ValueError, match="GiB"):
        rk.plan(TRAFFIC, SLO, models=MODEL, gpus=GPU, replicates=100_000, requests=1_000_000,
                chunks=1)


def test_cli_plan_csv_output_and_calibration(tmp_path, capsys):
    from rooflinekit.calibrate import save_calibration
    from rooflinekit.cli.main import main
    cal = tmp_path / "cal.json"
    save_calibration(rk.Calibration(decode={"bandwidth_efficiency": 0.7}, source="bench"), cal)
    out = tmp_path / "plan.nc"
    code = main(["plan", MODEL, "--gpus", GPU, "--rate", "2", "--prompt-mean", "500",
                 "--output-mean", "100", "--ttft", "1", "--replicates", "2", "--requests", "50",
                 "--engine", str(cal), "--output", str(out), "--csv"])
    assert code == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("gpu,tp,max_num_seqs,max_num_batched_tokens,max_rate")
    saved = xr.open_dataset(out)
    assert saved.attrs["model_quality"] == "calibrated: bench"
    saved.close()


def test_plan_needs_a_price():
    gpu = rk.GPU("no-price", memory_bytes=80e9, hbm_bandwidth=3e12, peak_flops=1e15)
    with pytest.raises(ValueError, match="prices="):
        rk.plan(TRAFFIC, SLO, models=MODEL, gpus=gpu, replicates=2, requests=50)


# --- the decision ----------------------------------------------------------------------------------

def test_cheapest_plan_picks_the_least_monthly_cost(small_plan):
    best = rk.cheapest_plan(small_plan, by="model")
    flat = small_plan["monthly_cost"].values.ravel()
    assert float(best["monthly_cost"].sel(model=MODEL)) == flat.min()
    assert bool(best["feasible"].sel(model=MODEL))
    overall = rk.cheapest_plan(small_plan, by=None)
    chosen = small_plan.sel(gpu=str(overall["gpu"].values), tp=int(overall["tp"]),
                            max_num_seqs=int(overall["max_num_seqs"]), model=MODEL)
    assert float(chosen["monthly_cost"]) == float(overall["monthly_cost"])
    with pytest.raises(ValueError, match="by"):
        rk.cheapest_plan(small_plan, by="batch_size")


def test_a_plan_prices_the_traffics_exact_means(small_plan):
    """The month's tokens are the traffic's, not its 6 × 300 draws': log-normal means plus the
    half token of rounding up (E[⌈X⌉] = Σ_k P(X > k), from the survival function here), the
    same for every seed; a shared prefix adds its share of tokens to the prompt's."""
    import math

    def rounded_up(mean, sigma):
        mu = math.log(mean) - sigma ** 2 / 2
        return 1 + sum(0.5 * math.erfc((math.log(k) - mu) / (sigma * math.sqrt(2)))
                       for k in range(1, 40_000))

    prompt, output = rounded_up(1000, 0.5), rounded_up(200, 0.5)
    assert TRAFFIC.mean_prompt_tokens == pytest.approx(prompt, abs=0.01)
    assert TRAFFIC.mean_output_tokens == pytest.approx(output, abs=0.01)
    attrs = small_plan.attrs
    assert (attrs["mean_prompt_tokens"], attrs["mean_output_tokens"]) == \
        (TRAFFIC.mean_prompt_tokens, TRAFFIC.mean_output_tokens)
    assert attrs["monthly_tokens"] == pytest.approx(
        4.0 * 730 * 3600 * (prompt + output), rel=1e-5)
    other = rk.plan(TRAFFIC, SLO, models=MODEL, gpus=GPU, tp=1, max_num_seqs=32,
                    replicates=2, requests=100, seed=7)
    assert other.attrs["monthly_tokens"] == attrs["monthly_tokens"]
    shared = rk.Traffic(4.0, 300, 50, prefix=rk.workloads.SharedPrefix(groups=2, tokens=100,
                                                                       share=0.25))
    assert (shared.mean_prompt_tokens, shared.mean_output_tokens) == (325.0, 50.0)


def test_decision_table_against_hand_calculation(small_plan):
    best = rk.cheapest_plan(small_plan, by=None)
    payg = rk.PayAsYouGo(input_per_mtok=3.0, output_per_mtok=12.0)
    # 1 unit minimum of 4e9 tokens/month at $12,000 (the guide's §6.3 example)
    provisioned = rk.Provisioned(monthly_cost=12_000, monthly_capacity_tokens=4e9, units=1)
    profile = np.r_[np.full(365, 1.0), np.full(365, 3.0)] * 3600    # requests per hour
    traffic = rk.Traffic(4.0, TRAFFIC.prompt, TRAFFIC.output, profile=profile)
    table = rk.decision_table(best, traffic, payg=payg, provisioned=provisioned)
    prompt, output = best.attrs["mean_prompt_tokens"], best.attrs["mean_output_tokens"]
    volume = profile.sum() * (prompt + output)
    f = output / (prompt + output)
    blended = 3.0 * (1 - f) + 12.0 * f                               # USD per 1M tokens
    pick = table.sel(option="pay-as-you-go")
    assert float(pick["monthly_cost"]) == pytest.approx(volume * blended / 1e6, rel=1e-12)
    # peak 4 requests/s all month, in whole units of 4e9 tokens
    peak = 4.0 * 730 * 3600 * (prompt + output)
    units = math.ceil(peak / 4e9)
    assert float(table["units"].sel(option="provisioned")) == units
    assert float(table["monthly_cost"].sel(option="provisioned")) == units * 12_000
    # floor + spillover: brute force over every whole floor
    demand = profile * (prompt + output)
    costs = [k * 12_000 + np.maximum(demand - k * 4e9 / 730, 0).sum() * blended / 1e6
             for k in range(1, units + 1)]
    spill = table.sel(option="provisioned + spillover")
    assert float(spill["monthly_cost"]) == pytest.approx(min(costs), rel=1e-12)
    assert float(spill["units"]) == 1 + int(np.argmin(costs))
    costs_by_option = table["monthly_cost"].values
    assert str(table["choice"].values) == str(table["option"].values[np.argmin(costs_by_option)])
    # self-hosting breaks even against pay-as-you-go where the fleet's cost buys as many tokens
    fleet = float(table["monthly_cost"].sel(option="self-hosted"))
    assert float(pick["break_even_tokens"]) == pytest.approx(fleet / blended * 1e6, rel=1e-12)


def test_decision_table_applies_the_gates(small_plan):
    best = rk.cheapest_plan(small_plan, by=None)
    payg = rk.PayAsYouGo(input_per_mtok=0.01, output_per_mtok=0.01, region="us")
    confidential = rk.Compliance(classification="restricted", allowed_regions=("eu",))
    table = rk.decision_table(best, TRAFFIC, payg=payg, compliance=confidential, region="eu")
    assert not bool(table["admissible"].sel(option="pay-as-you-go"))
    assert table["reason"].sel(option="pay-as-you-go").item() != ""
    assert str(table["choice"].values) == "self-hosted"


def test_cli_plan_json(capsys):
    from rooflinekit.cli.main import main
    code = main(["plan", MODEL, "--gpus", GPU, "--tp", "1", "--rate", "2", "--prompt-mean",
                 "500", "--output-mean", "100", "--ttft", "1", "--itl", "0.05",
                 "--replicates", "2", "--requests", "100", "--json"])
    assert code == 0
    import json
    data = json.loads(capsys.readouterr().out)
    assert data["configurations"][0]["gpu"] == GPU
    assert data["decision"]["choice"] in ("self-hosted", "pay-as-you-go")


def test_workload_draws_are_common_random_numbers():
    traffic = rk.Traffic(3.0, Constant(10), LogNormal(50, 1.0))
    a1, p1, o1 = capacity.draw_requests(traffic, 3, 100, seed=7)
    spec = traffic.workload(100, rate=1.0)
    w = spec.sample(rk.batching.replicate_seed(7, 2))
    assert isinstance(w, Workload)
    np.testing.assert_array_equal(a1[2], w.arrival)
    np.testing.assert_array_equal(o1[2], w.output_tokens)


def test_prefix_caching_raises_the_rate_of_prefix_heavy_traffic():
    from rooflinekit.workloads import SharedPrefix
    traffic = rk.Traffic(8.0, LogNormal(200, 0.5), LogNormal(150, 0.5),
                         prefix=SharedPrefix(2000, groups=4, share=0.9))
    slo = rk.SLO(ttft=0.5, itl=0.05)
    # the ideal roofline: the gain asserted is the physics', not a profile's numbers
    kwargs = {"models": MODEL, "gpus": GPU, "tp": 1, "max_num_seqs": 128, "replicates": 4,
              "requests": 300, "engine": rk.IDEAL}
    plain = rk.plan(traffic, slo, prefix_caching=False, **kwargs)
    cached = rk.plan(traffic, slo, prefix_caching=True, **kwargs)
    # the same draws: a prefill skipped is time saved, so the cached replica carries more
    assert float(cached["max_rate"].squeeze()) > 1.2 * float(plain["max_rate"].squeeze())
    assert cached.attrs["prefix_caching"] == 1 and plain.attrs["prefix_caching"] == 0
    # by default the cache is on where the traffic shares prefixes, as the engines run
    default = rk.plan(traffic, slo, **kwargs)
    assert default.attrs["prefix_caching"] == 1
    assert float(default["max_rate"].squeeze()) == float(cached["max_rate"].squeeze())
    assert rk.plan(rk.Traffic(8.0, 200, 150), slo, **kwargs).attrs["prefix_caching"] == 0
    with pytest.raises(ValueError, match="paged"):
        rk.plan(traffic, slo, prefix_caching=True, admission="reserve", **kwargs)
    with pytest.raises(TypeError, match="prefix"):
        rk.Traffic(1.0, 100, 10, prefix=2000)


def test_run_replicates_takes_prefixes_like_a_workload():
    from rooflinekit.batching import run_replicates
    from rooflinekit.workloads import SharedPrefix
    spec = rk.WorkloadSpec(50, output=Constant(5), prompt=Constant(40),
                           prefix=SharedPrefix(64, groups=2, share=1.0))
    wl = spec.sample(3)
    batcher = ContinuousBatcher(8, kv_budget_tokens=10_000, admission="paged",
                                prefix_caching=True)
    single = batcher.run(wl)
    rows = run_replicates(batcher, wl.arrival[None], wl.prompt_tokens[None],
                          wl.output_tokens[None], prefix_group=wl.prefix_group[None],
                          prefix_tokens=wl.prefix_tokens[None])
    assert float(rows["prefix_hit_rate"][0]) == float(single["prefix_hit_rate"])
    assert float(rows["makespan"][0]) == float(single["makespan"])
    with pytest.raises(ValueError, match="together"):
        run_replicates(batcher, wl.arrival[None], wl.prompt_tokens[None],
                       wl.output_tokens[None], prefix_group=wl.prefix_group[None])


def test_plan_command_says_when_the_burst_was_too_small(capsys):
    # 20 short requests on one H100 run all at once (1,024 slots, a cache of 440k tokens): the
    # row's max rate is the burst's, a floor, and the text says how to find the real one
    from rooflinekit import cli
    args = ["plan", "llama-3.1-8b", "--gpus", "h100", "--rate", "1", "--prompt-mean", "100",
            "--output-mean", "20", "--ttft", "10s", "--itl", "1s", "--replicates", "2",
            "--requests", "20"]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert " requests " in out.splitlines()[3]
    assert "note: binding 'requests': all 20 requests of a replicate ran at once" in out
    assert "raise --requests" in out
