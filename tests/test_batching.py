"""Static and continuous batching: the guide's figures, admission rules, properties, Monte Carlo."""

import dataclasses
import math

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rooflinekit as rk
from rooflinekit.batching import (IDEAL, REASON_KV_BUDGET, ContinuousBatcher, StaticBatcher,
                                  monte_carlo, replicate_seed, run_replicates)
from rooflinekit.calibrate import Calibration
from rooflinekit.workloads import (AllAtOnce, Constant, LogNormal, Poisson, Uniform, Workload,
                                   WorkloadSpec, guide_workload, short_and_long)


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def workloads(draw, max_n=24, all_at_once=False, tiers=False):
    n = draw(st.integers(1, max_n))
    gaps = [0] * n if all_at_once else draw(st.lists(st.integers(0, 8), min_size=n, max_size=n))
    prompt = draw(st.lists(st.integers(0, 40), min_size=n, max_size=n))
    output = draw(st.lists(st.integers(1, 60), min_size=n, max_size=n))
    priority = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)) if tiers else None
    return Workload(np.cumsum(gaps).astype(float), prompt, output, priority)


# --- the guide's figures (guide §4.3; docs/conventions.md "Static vs continuous") -------------------


def test_guide_static_figures():
    res = StaticBatcher(batch_size=8).run(guide_workload())
    # docs/conventions.md: batches of 4, 8, 8, 4 ending at 400, 800, 1,200, 1,220 -> makespan 1,220 (exact)
    assert res.makespan.item() == 1220
    np.testing.assert_array_equal(np.unique(res.finish), [400, 800, 1200, 1220])
    # docs/conventions.md: mean service latency 336.67 = 8,080 / 24 (exact in binary up to rounding, rel 1e-12)
    assert res.mean_service_latency.item() == pytest.approx(8080 / 24, rel=1e-12)
    # from arrival (hand sum: 400×4 + 790×4 + 780×4 + 1170×4 + 1160×4 + 1170×4 = 21,880), exact
    assert res.mean_latency.item() == pytest.approx(21880 / 24, rel=1e-12)
    # padding: batches 4×400 + 8×400 + 8×400 + 4×20 slot-steps minus 8,080 useful tokens
    assert res.padding_slot_steps.item() == 8080 - (3 * 400 + 21 * 20)


def test_guide_continuous_figures():
    wl = guide_workload()
    for slots in (16, None):          # docs/conventions.md: "16 slots (or unlimited)"
        res = ContinuousBatcher(max_num_seqs=slots).run(wl)
        assert res.makespan.item() == 440                                    # exact
        assert res.mean_service_latency.item() == pytest.approx(67.5, rel=1e-12)
        assert res.mean_latency.item() == pytest.approx(67.5, rel=1e-12)    # no queueing here
        assert res.padding_slot_steps.item() == 0


def test_guide_ratios():
    # guide §4.3: "2.8× faster, mean latency from 337 to 68" (conventions: 2.77× and 4.99×), rel 1e-3
    wl = guide_workload()
    s, c = StaticBatcher(batch_size=8).run(wl), ContinuousBatcher(max_num_seqs=16).run(wl)
    assert (s.makespan / c.makespan).item() == pytest.approx(2.773, rel=1e-3)
    assert (s.mean_service_latency / c.mean_service_latency).item() == pytest.approx(4.988,
                                                                                     rel=1e-3)


def test_tick_convention():
    # admitted at t with n tokens: first token at t + 1, finish at t + n (one step per token)
    res = ContinuousBatcher(max_num_seqs=1).run(arrival=[3, 3], prompt_tokens=[10, 0],
                                                  output_tokens=[5, 1])
    np.testing.assert_array_equal(res.admit, [3, 8])
    np.testing.assert_array_equal(res.first_token, [4, 9])
    np.testing.assert_array_equal(res.finish, [8, 9])
    np.testing.assert_array_equal(res.latency, [5, 6])
    np.testing.assert_array_equal(res.service_latency, [5, 1])
    np.testing.assert_array_equal(res.itl, [1.0, np.nan])


def test_fractional_arrival_joins_next_tick():
    res = ContinuousBatcher().run(arrival=[0.5], prompt_tokens=[0], output_tokens=[2])
    assert res.admit.item() == 1 and res.finish.item() == 3
    assert res.latency.item() == 2.5


def test_result_layout_and_units():
    res = ContinuousBatcher(max_num_seqs=16).run(**guide_workload())
    assert res.admit.dims == ("request",)
    assert res.makespan.dims == ()
    assert res.tier_mean_latency.dims == ("tier",)
    for name, var in res.data_vars.items():
        assert "units" in var.attrs and "long_name" in var.attrs, name
    assert res.latency.attrs["units"] == "tick"
    assert res.throughput.attrs["units"] == "tokens/tick"
    assert set(np.unique(res.status.values)) == {"completed"}


@pytest.mark.parametrize("kind", ["list", "ndarray", "DataArray"])
def test_input_kinds(kind):
    wl = guide_workload()
    conv = {"list": lambda a: a.tolist(), "ndarray": np.asarray,
            "DataArray": lambda a: xr.DataArray(a, dims="request")}[kind]
    res = ContinuousBatcher(max_num_seqs=16).run(
        arrival=conv(wl.arrival), prompt_tokens=conv(wl.prompt_tokens),
        output_tokens=conv(wl.output_tokens))
    assert res.makespan.item() == 440


# --- continuous beats static --------------------------------------------------------------------


def test_continuous_beats_static_on_uneven_workload():
    # guide §4.2's mix (15 × 20 with 1 × 400 in expectation), 256 requests at once, 16 slots
    wl = WorkloadSpec(256, output=short_and_long()).sample(7)
    s, c = StaticBatcher(batch_size=16).run(wl), ContinuousBatcher(max_num_seqs=16).run(wl)
    assert c.makespan < s.makespan
    assert c.mean_latency < s.mean_latency
    assert c.slot_utilization > s.slot_utilization


def test_win_grows_with_output_length_variance():
    # Monte Carlo: 40 replicates, 64 requests at once, lognormal outputs (mean 100) with growing
    # sigma, 8 slots each way. The static/continuous ratio of replicate-mean latency must grow with
    # the variance. The makespan ratio grows too at first, then saturates: once one request's tail
    # is most of the run, it bounds both makespans (sigma 1.5 is there to show the latency win
    # keeps growing regardless).
    spec = WorkloadSpec(64, output=LogNormal(mean=100, sigma=0.0))
    ds = monte_carlo(spec, {"static": StaticBatcher(batch_size=8),
                            "continuous": ContinuousBatcher(max_num_seqs=8)},
                     replicates=40, seed=3, sweep={"output.sigma": [0.0, 0.5, 1.0, 1.5]})
    mean = ds.mean("replicate")
    ratio = mean.sel(policy="static") / mean.sel(policy="continuous")
    latency, makespan = ratio.mean_latency.values, ratio.makespan.values
    assert latency[0] == makespan[0] == 1.0   # identical lengths: no win, no loss (exact)
    assert np.all(np.diff(latency) > 0), latency
    assert np.all(np.diff(makespan[:3]) > 0) and np.all(makespan[1:] > 1.5), makespan


# --- admission rules (guide §4.4-4.5) -----------------------------------------------------------


def overload():
    # 10 requests at once, 100-token prompts, 100 output tokens each, 1,000-token budget
    return Workload(np.zeros(10), np.full(10, 100), np.full(10, 100))


def test_reserve_never_exceeds_budget_but_prompt_rule_does():
    b = ContinuousBatcher(max_num_seqs=32, kv_budget_tokens=1000)
    trace_reserve, trace_prompt = [], []
    b.reference(overload(), trace=trace_reserve)
    b.reference(overload(), admission="prompt", trace=trace_prompt)
    used_reserve = max(used for _, _, _, used in trace_reserve)
    used_prompt = max(used for _, _, _, used in trace_prompt)
    assert used_reserve <= 1000          # every tick: final lengths of 5 sequences = 1,000
    assert used_prompt > 1000            # admits all 10 on their prompts; they grow to 2,000
    assert used_prompt == 2000
    res = b.run(overload())
    assert res.peak_kv_used_tokens.item() <= res.peak_kv_tokens.item() <= 1000
    assert res.peak_running.item() == 5


def test_paged_admits_more_than_reserve_and_stays_within_budget():
    wl = overload()
    reserve = ContinuousBatcher(max_num_seqs=32, kv_budget_tokens=1000).run(wl)
    b = ContinuousBatcher(max_num_seqs=32, kv_budget_tokens=1000, admission="paged",
                          block_size=16)
    paged = b.run(wl)
    assert paged.peak_running > reserve.peak_running
    assert paged.peak_kv_tokens <= 1000
    assert (paged.status == "completed").all()
    trace = []
    b.reference(wl, trace=trace)
    assert max(res for _, _, res, _ in trace) <= 1000
    assert all(used <= res for _, _, res, used in trace)
    # fragmentation: paged wastes at most a partial block per sequence, reserve far more
    assert paged.kv_waste_fraction < reserve.kv_waste_fraction


def test_paged_preempts_latest_admitted_and_loses_nothing():
    # 62 blocks of 16 tokens: 9 prompts of 100 tokens fit at admission (7 blocks each = 63 > 62,
    # so 8 are admitted), then growth forces recompute preemptions.
    res = ContinuousBatcher(max_num_seqs=32, kv_budget_tokens=992, admission="paged",
                            block_size=16).run(overload())
    assert res.preemptions.sum() > 0
    assert res.n_preempted.item() == (res.preemptions > 0).sum().item()
    assert (res.status == "completed").all()
    # the first-admitted request is never the victim
    assert res.preemptions[0].item() == 0


def test_oversized_request_rejected_at_once():
    res = ContinuousBatcher(kv_budget_tokens=100).run(arrival=[0, 0, 1], prompt_tokens=[10, 90, 5],
                                                      output_tokens=[10, 11, 5])
    assert res.status.values.tolist() == ["completed", "rejected", "completed"]
    assert res.reason.values.tolist() == ["", REASON_KV_BUDGET, ""]
    assert np.isnan(res.admit[1]) and np.isnan(res.finish[1])
    assert res.n_rejected.item() == 1
    # never queued: the request behind it is not blocked
    assert res.admit[2].item() == 1


def test_chunked_prefill_spreads_long_prompt():
    # 1,000-token prompt under a 256-token step budget: prefill takes 4 steps (256 in the first,
    # then 255 beside the neighbour's decode token, 255, 234) and its last step yields the first
    # token; the decoding neighbour keeps its 1 token per step.
    res = ContinuousBatcher(max_num_seqs=4, max_num_batched_tokens=256).run(
        arrival=[0, 0], prompt_tokens=[0, 1000], output_tokens=[10, 3])
    assert res.first_token.values.tolist() == [1, 4]
    assert res.finish.values.tolist() == [10, 6]


def test_tiers_interactive_first_and_reported():
    n_batch, n_inter = 30, 6
    arrival = np.r_[np.zeros(n_batch), np.full(n_inter, 5.0)]
    wl = Workload(arrival, np.zeros(n_batch + n_inter, int), np.full(n_batch + n_inter, 20),
                  np.r_[np.ones(n_batch, int), np.zeros(n_inter, int)])
    res = ContinuousBatcher(max_num_seqs=8, interactive_cap=4).run(wl)
    lat = res.tier_mean_latency
    assert lat.sel(tier="interactive") < lat.sel(tier="batch")
    # interactive requests jump the batch queue: all admitted at the first free slots (tick 20)
    assert res.admit[n_batch:].max().item() == 20
    # while interactive requests run, batch admission stops at the cap: 6 interactive fill 6
    # slots at tick 20 and no batch request joins them (cap 4 < 6 running)
    assert (res.admit[:n_batch] == 20).sum().item() == 0


def test_goodput_targets():
    wl = guide_workload()
    b = ContinuousBatcher(max_num_seqs=16)
    assert b.run(wl, ttft_target=1).slo_attainment.item() == 1.0
    assert b.run(wl, ttft_target=0.5).slo_attainment.item() == 0.0
    assert b.run(wl, ttft_target=1).goodput.item() == pytest.approx(24 / 440, rel=1e-12)


# --- properties ---------------------------------------------------------------------------------


@SETTINGS
@given(wl=workloads(tiers=True), slots=st.one_of(st.none(), st.integers(1, 8)),
       kv=st.integers(1, 300), admission=st.sampled_from(["reserve", "paged"]),
       block=st.integers(1, 8), chunk=st.one_of(st.none(), st.integers(0, 40)))
def test_nothing_lost_and_kv_within_budget(wl, slots, kv, admission, block, chunk):
    mnbt = None if chunk is None or slots is None else slots + chunk
    res = ContinuousBatcher(max_num_seqs=slots, kv_budget_tokens=kv, admission=admission,
                            block_size=block, max_num_batched_tokens=mnbt,
                            interactive_cap=2).run(wl)
    done = (res.status == "completed").values
    rejected = (res.status == "rejected").values
    assert np.all(done ^ rejected)
    assert np.isfinite(res.finish.values[done]).all() and np.isnan(res.admit.values[rejected]).all()
    assert (res.finish.values[done] >= res.first_token.values[done]).all()
    assert (res.admit.values[done] >= res.arrival.values[done]).all()
    assert res.peak_kv_tokens.item() <= kv
    assert res.peak_kv_used_tokens.item() <= res.peak_kv_tokens.item()
    if slots is not None:
        assert res.peak_running.item() <= slots
    # an empty prompt is simulated as its start token
    final = (np.maximum(res.prompt_tokens, 1) + res.output_tokens).values
    need = np.ceil(final / block) * block if admission == "paged" else final
    np.testing.assert_array_equal(rejected, need > kv)


@SETTINGS
@given(wl=workloads(all_at_once=True), slots=st.integers(1, 8))
def test_continuous_makespan_at_most_static_all_at_once(wl, slots):
    s = StaticBatcher(batch_size=slots).run(wl)
    c = ContinuousBatcher(max_num_seqs=slots).run(wl)
    assert c.makespan.item() <= s.makespan.item()


def test_deterministic_under_seed():
    spec = WorkloadSpec(50, output=LogNormal(100, 1.0), prompt=Constant(10), arrival=Poisson(0.5))
    a = ContinuousBatcher(max_num_seqs=8).run(spec.sample(11))
    b = ContinuousBatcher(max_num_seqs=8).run(spec.sample(11))
    xr.testing.assert_identical(a, b)


# --- Monte Carlo --------------------------------------------------------------------------------


def mc_setup():
    spec = WorkloadSpec(40, output=short_and_long(), prompt=Constant(5), arrival=Poisson(0.3))
    batchers = {"static": StaticBatcher(batch_size=8),
                "continuous": ContinuousBatcher(max_num_seqs=8, kv_budget_tokens=2000)}
    return spec, batchers


def test_monte_carlo_layout_and_replicate_reproducible():
    spec, batchers = mc_setup()
    ds = monte_carlo(spec, batchers, replicates=12, seed=5,
                     sweep={"max_num_seqs": [4, 8], "batch_size": [8]})
    assert ds.makespan.dims == ("policy", "max_num_seqs", "batch_size", "replicate")
    assert ds.tier_mean_latency.dims[-1] == "tier"
    for r in (0, 7, 11):
        wl = spec.sample(replicate_seed(5, r))
        c = ContinuousBatcher(max_num_seqs=4, kv_budget_tokens=2000).run(wl)
        s = StaticBatcher(batch_size=8).run(wl)
        one = ds.isel(replicate=r, batch_size=0)
        for name in ("makespan", "mean_latency", "p99_latency", "peak_kv_tokens", "mean_itl"):
            assert one[name].sel(policy="continuous", max_num_seqs=4).item() == c[name].item()
            assert one[name].sel(policy="static", max_num_seqs=4).item() == s[name].item()
    # static ignores max_num_seqs
    st_ = ds.makespan.sel(policy="static")
    np.testing.assert_array_equal(st_.isel(max_num_seqs=0), st_.isel(max_num_seqs=1))
    # a run is reproducible, and independent of the replicate count
    again = monte_carlo(spec, batchers, replicates=5, seed=5, sweep={"max_num_seqs": [4, 8]})
    np.testing.assert_array_equal(again.makespan.values, ds.makespan.isel(
        batch_size=0, replicate=slice(0, 5)).values)


def test_monte_carlo_kv_budget_and_admission_dims():
    spec = WorkloadSpec(30, output=Uniform(1, 300), prompt=Uniform(0, 300), arrival=Poisson(0.5))
    ds = monte_carlo(spec, ContinuousBatcher(max_num_seqs=8), replicates=6, seed=2,
                     sweep={"kv_budget_tokens": [400, 4000], "admission": ["reserve", "paged"]})
    assert ds.n_rejected.dims == ("policy", "kv_budget_tokens", "admission", "replicate")
    rejected = ds.n_rejected.sel(policy="continuous")
    # final lengths up to 600 tokens: some cannot fit 400, all fit 4,000
    assert (rejected.sel(kv_budget_tokens=400) > 0).all()
    assert (rejected.sel(kv_budget_tokens=4000) == 0).all()
    assert (ds.peak_kv_tokens <= ds.kv_budget_tokens).all()
    # same budget: paged runs at least as many sequences at once as reserve
    peak = ds.peak_running.sel(policy="continuous", kv_budget_tokens=4000)
    assert (peak.sel(admission="paged") >= peak.sel(admission="reserve")).all()


def test_monte_carlo_roofline_matches_single_runs():
    spec = WorkloadSpec(20, output=short_and_long(), prompt=Uniform(50, 500),
                        arrival=Poisson(rate=10.0))
    b = ContinuousBatcher(max_num_seqs=8, kv_budget_tokens=5000, admission="paged",
                          max_num_batched_tokens=256, **lab())
    ds = monte_carlo(spec, b, replicates=3, seed=4, ttft_target=0.2)
    for r in range(3):
        one = b.run(spec.sample(replicate_seed(4, r)), ttft_target=0.2)
        for name in ("makespan", "mean_ttft", "p99_itl", "goodput", "mean_kv_occupancy"):
            assert ds[name].isel(replicate=r).item() == one[name].item()
    assert ds.makespan.attrs["units"] == "s"


def test_monte_carlo_dask_matches_threads():
    pytest.importorskip("dask")
    spec, batchers = mc_setup()
    a = monte_carlo(spec, batchers, replicates=10, seed=9)
    b = monte_carlo(spec, batchers, replicates=10, seed=9, chunks=4)
    xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())


def test_monte_carlo_errors():
    spec, batchers = mc_setup()
    with pytest.raises(ValueError, match="sweep name 'nonsense'"):
        monte_carlo(spec, batchers, replicates=2, sweep={"nonsense": [1]})
    with pytest.raises(ValueError, match="output.nope"):
        monte_carlo(spec, batchers, replicates=2, sweep={"output.nope": [1]})
    with pytest.raises(ValueError, match="replicates"):
        monte_carlo(spec, batchers, replicates=0)
    with pytest.raises(TypeError, match="WorkloadSpec"):
        monte_carlo(guide_workload(), batchers)
    with pytest.raises(ValueError, match="seed"):
        monte_carlo(spec, batchers, seed=-1)


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, match", [
    (dict(max_num_seqs=0), "max_num_seqs"),
    (dict(max_num_seqs=2.5), "max_num_seqs"),
    (dict(kv_budget_tokens=-1), "kv_budget_tokens"),
    (dict(admission="prompt"), "admission"),
    (dict(block_size=0), "block_size"),
    (dict(max_num_seqs=8, max_num_batched_tokens=4), "max_num_batched_tokens"),
    (dict(max_num_seqs=None, max_num_batched_tokens=64), "max_num_batched_tokens"),
    (dict(interactive_cap=0), "interactive_cap"),
    (dict(reserve=1.0), "reserve"),
    (dict(clock="roofline"), "model"),
    (dict(clock="wall"), "clock"),
])
def test_continuous_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ContinuousBatcher(**kwargs)


def test_static_bad_parameters():
    with pytest.raises(ValueError, match="batch_size"):
        StaticBatcher(batch_size=0)
    with pytest.raises(TypeError, match="batch_size"):
        StaticBatcher(batch_size="8")


@pytest.mark.parametrize("make, error, message", [
    (lambda: ContinuousBatcher(max_num_seqs=0.5), ValueError,
     "max_num_seqs must be a whole number >= 1 or None; got 0.5"),
    (lambda: ContinuousBatcher(max_num_seqs=np.float64(0.5)), ValueError,
     "max_num_seqs must be a whole number >= 1 or None; got 0.5"),
    (lambda: ContinuousBatcher(block_size=np.int64(0)), ValueError,
     "block_size must be a whole number >= 1; got 0"),
    (lambda: ContinuousBatcher(kv_budget_tokens=True), TypeError,
     "kv_budget_tokens must be a whole number >= 0 or None; got bool True"),
    (lambda: ContinuousBatcher(reserve=1.0), ValueError,
     "reserve must lie in [0, 1); got 1.0"),
    (lambda: ContinuousBatcher(admission="Paged"), ValueError,
     "admission must be one of 'reserve', 'paged'; got 'Paged' (did you mean 'paged'?)"),
    (lambda: StaticBatcher(batch_size="8"), TypeError,
     "batch_size must be a whole number >= 1; got str '8'"),
    (lambda: StaticBatcher(tp=0), ValueError, "tp must be a whole number >= 1; got 0"),
])
def test_parameter_messages(make, error, message):
    # name, allowed range and the value as written (never a numpy repr such as np.float64(0.5))
    with pytest.raises(error) as info:
        make()
    assert str(info.value) == message


@pytest.mark.parametrize("batcher", [ContinuousBatcher, StaticBatcher])
def test_engine_checked_at_construction(batcher):
    roofline = dict(model="guide-70b", gpu="lab", tp=8)
    with pytest.raises(TypeError, match="compute_effciency"):
        batcher(**roofline, engine=rk.Engine(compute_effciency=0.5))
    with pytest.raises(ValueError, match="compute_efficiency"):
        batcher(**roofline, engine=rk.Engine(compute_efficiency=2.0))
    with pytest.raises(TypeError, match="^engine must be"):
        batcher(**roofline, engine=0.5)
    with pytest.raises(TypeError, match="^engine must be.*Engine\\(\\*\\*options\\)"):
        batcher(**roofline, engine={"compute_efficiency": 0.5})     # the old options mapping
    with pytest.raises(TypeError, match="^engine must be"):
        batcher(engine={"bogus": 1})                     # tick clock: still checked
    with pytest.raises(TypeError, match="^engine must be"):
        batcher(**roofline, engine=Calibration)          # the class, not a calibration
    for gone in ("roofline_options", "calibration"):
        with pytest.raises(TypeError, match=gone):
            batcher(**roofline, **{gone: None})
    b = batcher(**roofline, engine=rk.Engine(compute_efficiency=0.5, step_overhead=1e-3))
    assert b.run(arrival=[0.0], prompt_tokens=[4], output_tokens=[2])["n_completed"] == 1


def test_a_string_engine_names_engine():
    # a string that names no engine is refused, naming engine and the names it takes
    with pytest.raises(ValueError, match="^engine must be one of 'vllm', .*'ideal'; got 'fast'"):
        ContinuousBatcher(max_num_seqs=4, model="guide-70b", gpu="lab", tp=8, engine="fast")
    with pytest.raises(ValueError, match="^engine must be one of"):
        ContinuousBatcher(engine="fast")
    with pytest.raises(ValueError, match="^engine must be one of"):
        StaticBatcher(batch_size=4, model="guide-70b", gpu="lab", tp=8, engine="")
    # every engine name is accepted, and times the run as the engine it names
    from rooflinekit.profiles import ENGINE_CHOICES, resolve_engine
    spec = dict(model="llama-3.1-8b", gpu="h100")
    wl = guide_workload()
    for name in ENGINE_CHOICES:
        named = ContinuousBatcher(max_num_seqs=16, **spec, engine=name)
        xr.testing.assert_identical(
            named.run(wl),
            ContinuousBatcher(max_num_seqs=16, **spec,
                              engine=resolve_engine(name, spec["gpu"])).run(wl))


@pytest.mark.parametrize("make", [
    lambda **kw: ContinuousBatcher(max_num_seqs=16, **kw),
    lambda **kw: StaticBatcher(batch_size=8, **kw)])
def test_a_calibration_is_an_engine(make):
    cal = Calibration(prefill={"compute_efficiency": 0.43, "step_overhead": 5e-3},
                      decode={"bandwidth_efficiency": 0.61, "step_overhead": 2e-4},
                      source="bench")
    spec = {"model": "llama-3.1-8b", "gpu": "h100"}
    wl = guide_workload()
    calibrated = make(**spec, engine=cal)
    assert calibrated.engine is cal
    same = make(**spec, engine=cal.engine_for("step"))
    a, b = calibrated.run(wl), same.run(wl)
    for name in ("admit", "first_token", "finish", "ttft", "itl", "latency"):
        np.testing.assert_array_equal(a[name].values, b[name].values)
    assert float(a["makespan"]) == float(b["makespan"])
    assert a.attrs["model_quality"] == b.attrs["model_quality"] == cal.label == \
        "calibrated: bench"
    # slower than ideal, as the knobs say
    ideal = make(**spec, engine=IDEAL).run(wl)
    assert ideal.attrs["model_quality"] == IDEAL.label
    assert float(a["makespan"]) > float(ideal["makespan"])
    reps = run_replicates(calibrated, wl.arrival[None], wl.prompt_tokens[None],
                          wl.output_tokens[None])
    assert reps.attrs["model_quality"] == "calibrated: bench"


def test_an_engines_label_is_the_results_model_quality():
    lab = dict(model="guide-70b", gpu="lab", tp=8)
    wl = guide_workload()
    engine = rk.Engine(compute_efficiency=0.5, step_overhead=1e-3)
    ds = ContinuousBatcher(max_num_seqs=16, **lab, engine=engine).run(wl)
    assert ds.attrs["model_quality"] == engine.label
    assert engine.label.startswith("engine: ")
    named = engine.replace(label="vLLM 0.6, measured")
    assert ContinuousBatcher(max_num_seqs=16, **lab, engine=named).run(wl) \
        .attrs["model_quality"] == "vLLM 0.6, measured"
    # IDEAL and "ideal" are the same clock, to the bit
    xr.testing.assert_identical(ContinuousBatcher(max_num_seqs=16, **lab, engine="ideal").run(wl),
                                ContinuousBatcher(max_num_seqs=16, **lab, engine=IDEAL).run(wl))
    # the tick clock reads no engine: one given there is refused, never silently ignored
    for engine_given in (engine, Calibration(decode={"bandwidth_efficiency": 0.5}, source="x")):
        with pytest.raises(ValueError, match="engine times roofline steps"):
            ContinuousBatcher(max_num_seqs=16, engine=engine_given)
    tick = ContinuousBatcher(max_num_seqs=16).run(wl)
    assert tick.attrs["model_quality"].startswith("tick clock")
    assert float(tick["makespan"]) == 440


def test_the_roofline_clocks_default_is_the_vllm_profile_not_ideal():
    # on the roofline clock engine=None is the shipped vLLM profile of the GPU: the same run
    # as engine="vllm", to the bit, labelled as that profile; "ideal" is the bound, and differs
    from rooflinekit.profiles import resolve_engine
    wl = guide_workload()
    for make in (lambda **kw: ContinuousBatcher(max_num_seqs=16, **kw),
                 lambda **kw: StaticBatcher(batch_size=8, **kw)):
        for spec in (dict(model="llama-3.1-8b", gpu="h100"),
                     dict(model="guide-70b", gpu="lab", tp=8)):
            default = make(**spec)
            assert default.engine is None
            ds = default.run(wl)
            vllm = dataclasses.replace(default, engine="vllm").run(wl)
            ideal = dataclasses.replace(default, engine="ideal").run(wl)
            xr.testing.assert_identical(ds, vllm)
            profile = resolve_engine("vllm", spec["gpu"])
            assert ds.attrs["model_quality"] == vllm.attrs["model_quality"] == profile.label
            assert ds.attrs["model_quality"].startswith("calibrated: vllm ")
            assert " profile for " in ds.attrs["model_quality"]
            assert ideal.attrs["model_quality"] == IDEAL.label != ds.attrs["model_quality"]
            assert not np.array_equal(ds["finish"].values, ideal["finish"].values)
            xr.testing.assert_identical(ideal, dataclasses.replace(default, engine=IDEAL).run(wl))


def test_an_engine_of_array_fields_is_timed_afresh():
    lab = dict(model="guide-70b", gpu="lab", tp=8)
    wl = guide_workload()
    arrays = rk.Engine(compute_efficiency=np.asarray(0.5), step_overhead=np.asarray(1e-3))
    with pytest.raises(TypeError):
        hash(arrays)
    numbers = rk.Engine(compute_efficiency=0.5, step_overhead=1e-3)
    a = ContinuousBatcher(max_num_seqs=16, **lab, engine=arrays).run(wl)
    b = ContinuousBatcher(max_num_seqs=16, **lab, engine=numbers).run(wl)
    np.testing.assert_array_equal(a["finish"].values, b["finish"].values)


def test_engine_keeps_the_fields_and_their_order():
    # engine takes roofline_options' place: positional meaning and replace() are unchanged
    assert [f.name for f in dataclasses.fields(StaticBatcher)] == [
        "batch_size", "model", "gpu", "tp", "clock", "engine"]
    positional = [f.name for f in dataclasses.fields(ContinuousBatcher) if not f.kw_only]
    assert positional[-2:] == ["clock", "engine"]
    engine = rk.Engine(step_overhead=1e-3)
    b = StaticBatcher(8, "guide-70b", "lab", 8, None, engine)
    assert b.engine == engine
    assert dataclasses.replace(b, batch_size=4).engine == engine
    with pytest.raises(TypeError, match="^engine must be"):
        StaticBatcher(8, "guide-70b", "lab", 8, None, {"step_overhead": 1e-3})


def test_roofline_inputs_checked_at_construction():
    with pytest.raises(ValueError, match="tp"):
        ContinuousBatcher(model="guide-70b", gpu="lab", tp=1.5)


def test_run_and_monte_carlo_messages():
    b = ContinuousBatcher()
    with pytest.raises(TypeError, match="ttft_target must be a number or None; got str '1'"):
        b.run(guide_workload(), ttft_target="1")
    with pytest.raises(ValueError, match=r"itl_target must lie in \[0, inf\); got -1\.0$"):
        b.run(guide_workload(), itl_target=np.float64(-1))
    spec = WorkloadSpec(3, output=Constant(1))
    with pytest.raises(ValueError, match="replicates must be a whole number >= 1; got 0"):
        monte_carlo(spec, b, replicates=0)
    with pytest.raises(ValueError, match="chunks must be a whole number >= 1 or None; got 2.5"):
        monte_carlo(spec, b, replicates=2, chunks=2.5)


@pytest.mark.parametrize("arrays, match", [
    (dict(arrival=[0, 0], prompt_tokens=[1, -1], output_tokens=[1, 1]), "prompt_tokens"),
    (dict(arrival=[0, 0], prompt_tokens=[1, 1], output_tokens=[1, 0]), "output_tokens"),
    (dict(arrival=[0, 0], prompt_tokens=[1, 1], output_tokens=[1, 1.5]), "output_tokens"),
    (dict(arrival=[1, 0], prompt_tokens=[1, 1], output_tokens=[1, 1]), "arrival"),
    (dict(arrival=[0, np.nan], prompt_tokens=[1, 1], output_tokens=[1, 1]), "arrival"),
    (dict(arrival=[-1, 0], prompt_tokens=[1, 1], output_tokens=[1, 1]), "arrival"),
    (dict(arrival=[0, 0], prompt_tokens=[1], output_tokens=[1, 1]), "prompt_tokens"),
    (dict(arrival=[0, 0], prompt_tokens=[1, 1], output_tokens=[1, 1], priority=[0, 2]),
     "priority"),
])
def test_bad_workload_arrays(arrays, match):
    with pytest.raises(ValueError, match=match):
        ContinuousBatcher().run(**arrays)
    with pytest.raises(ValueError, match=match):
        StaticBatcher().run(**arrays)


def test_bad_run_arguments():
    b = ContinuousBatcher()
    with pytest.raises(TypeError, match="missing workload arrays: output_tokens"):
        b.run(arrival=[0], prompt_tokens=[1])
    with pytest.raises(TypeError, match="not both"):
        b.run(guide_workload(), arrival=[0])
    with pytest.raises(ValueError, match="ttft_target"):
        b.run(guide_workload(), ttft_target=-1)
    with pytest.raises(TypeError, match="sample"):
        b.run(WorkloadSpec(3, output=Constant(1)))


def test_empty_workload():
    res = ContinuousBatcher().run(arrival=[], prompt_tokens=[], output_tokens=[])
    assert res.sizes["request"] == 0
    assert res.makespan.item() == 0 and res.throughput.item() == 0
    assert np.isnan(res.mean_latency.item())


def test_all_rejected():
    res = ContinuousBatcher(kv_budget_tokens=5).run(arrival=[0, 1], prompt_tokens=[5, 5],
                                                    output_tokens=[1, 1])
    assert res.n_rejected.item() == 2 and res.makespan.item() == 0
    assert res.throughput.item() == 0 and np.isnan(res.p99_latency.item())


def test_all_at_once_spec_static_equals_continuous_for_constant_lengths():
    wl = WorkloadSpec(32, output=Constant(50), arrival=AllAtOnce()).sample(0)
    s, c = StaticBatcher(batch_size=8).run(wl), ContinuousBatcher(max_num_seqs=8).run(wl)
    assert s.makespan.item() == c.makespan.item() == 200


# --- roofline clock and the memory model ----------------------------------------------------------


def lab(tp=8):
    from rooflinekit import catalog
    return dict(model=catalog.model("guide-70b"), gpu=catalog.gpu("lab"), tp=tp)


def test_kv_budget_from_memory_model():
    from rooflinekit import memory
    b = ContinuousBatcher(max_num_seqs=None, **lab())
    # docs/conventions.md: 458.65 GiB of KV at 327,680 B/token; 183 sequences of 8,192 tokens (floored)
    expected = memory.kv_budget_tokens(lab()["model"], lab()["gpu"], tp=8)
    wl = Workload(np.zeros(200), np.full(200, 8000), np.full(200, 192))
    res = b.run(wl)
    assert res.attrs["kv_budget_tokens"] == expected == 1_502_915
    assert res.peak_running.item() == 183
    assert res.attrs["clock"] == "roofline" and res.latency.attrs["units"] == "s"


def test_one_card_rejects_everything():
    # guide §2.4: 70B at fp16 does not fit one 80 GiB card, KV budget 0 -> every request rejected
    res = ContinuousBatcher(**lab(tp=1)).run(arrival=[0, 0], prompt_tokens=[10, 1],
                                             output_tokens=[5, 1])
    assert res.attrs["kv_budget_tokens"] == 0
    assert (res.status == "rejected").all()


def test_roofline_batch_one_decode_step():
    # guide §3.1: batch-1 decode reads 140 GB at 3.35 TB/s = 41.79 ms (docs/conventions.md), rel 1e-4; the
    # step here also reads 2 tokens of KV (655,360 B), 5e-6 relative.
    res = ContinuousBatcher(max_num_seqs=1, kv_budget_tokens=10**6, **lab(tp=1),
                            engine=IDEAL).run(arrival=[0.0], prompt_tokens=[1], output_tokens=[2])
    assert res.itl.item() == pytest.approx(41.79e-3, rel=1e-4)
    assert res.itl.item() == pytest.approx((140e9 + 2 * 327_680) / 3.35e12, rel=1e-12)


def test_roofline_batching_amortises_weights():
    # guide §4.1: the weight read is shared; 16 sequences decode in about one batch-1 step time
    wl = Workload(np.zeros(16), np.full(16, 10), np.full(16, 50))
    one = ContinuousBatcher(max_num_seqs=1, **lab()).run(wl)
    many = ContinuousBatcher(max_num_seqs=16, **lab()).run(wl)
    assert many.makespan.item() < one.makespan.item() / 10
    assert many.throughput.item() > 10 * one.throughput.item()


def test_roofline_static_first_token_after_prefill():
    from rooflinekit import roofline
    m, g = lab()["model"], lab()["gpu"]
    # one request: its first token comes out of one prefill pass (roofline.prefill_time), rel 1e-12
    one = StaticBatcher(batch_size=1, **lab(), engine=IDEAL).run(
        arrival=[0], prompt_tokens=[1000], output_tokens=[3])
    assert one.ttft.item() == pytest.approx(roofline.prefill_time(m, g, 1000, tp=8), rel=1e-12)
    # two requests prefilled together, then decoded together until the longest ends (padding)
    two = StaticBatcher(batch_size=2, **lab(), engine=IDEAL).run(
        arrival=[0, 0], prompt_tokens=[1000, 1000], output_tokens=[5, 1])
    first = two.first_token.values
    assert first[0] == first[1]
    assert one.ttft.item() < first[0] <= roofline.prefill_time(m, g, 2000, tp=8)
    assert two.finish.values[0] == two.finish.values[1]
    assert two.padding_slot_steps.item() > 0


def test_interactive_cap_lowers_interactive_itl():
    # guide §11: cap the batch the interactive tier is pulled into -> lower interactive ITL and
    # latency, paid for by the batch tier. Batch requests stream in every 20 ms; four long
    # interactive requests arrive at 1 s.
    n_b, n_i = 200, 4
    arrival = np.r_[np.arange(n_b) * 0.02, np.full(n_i, 1.0)]
    order = np.argsort(arrival, kind="stable")
    wl = Workload(arrival[order], np.full(n_b + n_i, 2000),
                  np.r_[np.full(n_b, 200), np.full(n_i, 400)][order],
                  np.r_[np.ones(n_b, int), np.zeros(n_i, int)][order])
    shared = ContinuousBatcher(max_num_seqs=64, **lab()).run(wl)
    capped = ContinuousBatcher(max_num_seqs=64, interactive_cap=8, **lab()).run(wl)
    inter, batch = {"tier": "interactive"}, {"tier": "batch"}
    assert capped.tier_mean_itl.sel(inter) < 0.5 * shared.tier_mean_itl.sel(inter)
    assert capped.tier_mean_latency.sel(inter) < shared.tier_mean_latency.sel(inter)
    assert capped.tier_mean_latency.sel(batch) > shared.tier_mean_latency.sel(batch)


def test_run_and_catalogue_names():
    import rooflinekit.batching as batching
    wl = guide_workload()
    assert StaticBatcher(batch_size=8).run(wl).makespan.item() == 1220
    assert ContinuousBatcher(max_num_seqs=16).run(**wl).makespan.item() == 440
    # the batchers' run is the one way to simulate: no near-synonym function
    assert not hasattr(batching, "simulate") and "simulate" not in batching.__all__
    by_name = ContinuousBatcher(max_num_seqs=4, model="guide-70b", gpu="lab", tp=8)
    by_spec = ContinuousBatcher(max_num_seqs=4, **lab())
    xr.testing.assert_identical(by_name.run(wl), by_spec.run(wl))


def test_monte_carlo_serial_equals_parallel():
    from rooflinekit.workloads import LogNormal, WorkloadSpec
    spec = WorkloadSpec(40, output=LogNormal(30, 1.0))
    batchers = {"static": StaticBatcher(4), "continuous": ContinuousBatcher(4)}
    a = monte_carlo(spec, batchers, replicates=6, seed=3)
    b = monte_carlo(spec, batchers, replicates=6, seed=3, parallel=False)
    xr.testing.assert_identical(a, b)
    with pytest.raises(TypeError, match="parallel"):
        monte_carlo(spec, batchers, replicates=2, seed=3, parallel="yes")


# --- per-token latency, attainment, caller-drawn replicates -------------------------------------


def test_p95_and_token_itl_summaries():
    wl = guide_workload()
    res = ContinuousBatcher(max_num_seqs=16).run(wl)
    lat = res.latency.values
    assert res.p95_latency.item() == np.quantile(lat, 0.95)
    assert res.p95_ttft.item() == np.quantile(res.ttft.values, 0.95)
    # no preemption on the tick clock: every gap is one tick
    for name in ("mean_token_itl", "p50_token_itl", "p90_token_itl", "p95_token_itl",
                 "p99_token_itl"):
        assert res[name].item() == 1.0, name
        assert res[name].attrs["units"] == "tick"
    assert res.token_itl_attainment.item() == 1.0


def test_attainment_counts_rejected_as_misses():
    # three requests, the last can never fit: shares are of all three
    b = ContinuousBatcher(max_num_seqs=1, kv_budget_tokens=20)
    wl = Workload([0.0, 0.0, 0.0], [5, 5, 30], [3, 4, 2])
    res = b.run(wl)
    assert res.ttft_attainment.item() == pytest.approx(2 / 3)       # no target: share completed
    assert res.e2e_attainment.item() == pytest.approx(2 / 3)
    # request 0: ttft 1, latency 3; request 1: admitted at 3, ttft 4, latency 7
    res = b.run(wl, ttft_target=1, e2e_target=3, itl_target=0.5)
    assert res.ttft_attainment.item() == pytest.approx(1 / 3)
    assert res.e2e_attainment.item() == pytest.approx(1 / 3)
    assert res.token_itl_attainment.item() == 0.0                   # every gap is 1 tick
    assert b.run(wl, itl_target=1).token_itl_attainment.item() == 1.0
    assert res.attrs["e2e_target"] == 3
    assert b.run(wl).attrs["e2e_target"] == "none"


def test_token_itl_attainment_one_when_no_gaps():
    res = ContinuousBatcher().run(arrival=[0.0, 1.0], prompt_tokens=[3, 3], output_tokens=[1, 1],
                                  itl_target=0.0)
    assert res.token_itl_attainment.item() == 1.0
    assert np.isnan(res.mean_token_itl.item()) and np.isnan(res.p99_token_itl.item())


def test_token_itl_spans_preemptions():
    # paged with preemptions: the long gaps across a preemption lift the upper percentiles
    spec = WorkloadSpec(60, output=Uniform(20, 80), prompt=Constant(8), arrival=Poisson(2.0))
    res = ContinuousBatcher(max_num_seqs=16, kv_budget_tokens=400, admission="paged",
                            block_size=8).run(spec.sample(3), itl_target=1)
    assert res.n_preemptions.item() > 0
    assert res.p99_token_itl.item() > 1.0 and res.p50_token_itl.item() == 1.0
    assert 0 < res.token_itl_attainment.item() < 1
    gaps = (res.output_tokens - 1).sum().item()
    assert res.mean_token_itl.item() > 1.0
    assert res.mean_token_itl.item() * gaps == pytest.approx(
        (res.finish - res.first_token).sum().item())


@pytest.mark.parametrize("parallel", [True, False])
def test_run_replicates_equals_monte_carlo(parallel):
    spec, batchers = mc_setup()
    targets = dict(ttft_target=2.0, itl_target=1.0, e2e_target=60.0)
    for name, b in batchers.items():
        mc = monte_carlo(spec, b, replicates=6, seed=3, **targets).sel(policy=name)
        rows = [spec.draw(np.random.default_rng(replicate_seed(3, r))) for r in range(6)]
        a, p, o, q = (np.stack(x) for x in zip(*rows))
        ds = run_replicates(b, a, p, o, q, parallel=parallel, **targets)
        assert "policy" not in ds.dims and ds.makespan.dims == ("replicate",)
        assert ds.tier_mean_latency.dims == ("replicate", "tier")
        assert set(ds.data_vars) == set(mc.data_vars)
        for var in ds.data_vars:
            np.testing.assert_array_equal(ds[var].values, mc[var].values, err_msg=var)
            assert ds[var].attrs == mc[var].attrs, var
        assert ds.attrs["e2e_target"] == 60.0


def test_run_replicates_validates_rows():
    b = ContinuousBatcher(max_num_seqs=4)
    ok = np.zeros((2, 3)), np.ones((2, 3), int), np.ones((2, 3), int)
    with pytest.raises(ValueError, match="2-D"):
        run_replicates(b, np.zeros(3), np.ones(3, int), np.ones(3, int))
    with pytest.raises(ValueError, match="shape"):
        run_replicates(b, ok[0], ok[1][:, :2], ok[2])
    with pytest.raises(ValueError, match="replicate 1: arrival must be sorted"):
        run_replicates(b, np.array([[0.0, 1, 2], [2.0, 1, 0]]), ok[1], ok[2])
    with pytest.raises(ValueError, match="replicate 0: output_tokens"):
        run_replicates(b, ok[0], ok[1], np.zeros((2, 3), int))
    with pytest.raises(ValueError, match="e2e_target"):
        run_replicates(b, *ok, e2e_target=-1)
    with pytest.raises(TypeError, match="batcher"):
        run_replicates("continuous", *ok)


def test_summary_names_are_the_summaries():
    from rooflinekit.batching import run_replicates
    from rooflinekit.batching.results import SUMMARY_NAMES
    batcher = ContinuousBatcher(4)
    ds = run_replicates(batcher, [[0.0, 1.0, 2.0]], [[0, 0, 0]], [[3, 1, 2]])
    assert tuple(ds.data_vars) == SUMMARY_NAMES
    few = run_replicates(batcher, [[0.0, 1.0, 2.0]], [[0, 0, 0]], [[3, 1, 2]],
                         variables=["p95_ttft", "n_rejected"])
    assert list(few.data_vars) == ["p95_ttft", "n_rejected"]
    assert float(few["p95_ttft"][0]) == float(ds["p95_ttft"][0])
    with pytest.raises(ValueError, match="variables"):
        run_replicates(batcher, [[0.0]], [[0]], [[1]], variables=["p95_tft"])
    with pytest.raises(TypeError, match="variables"):
        run_replicates(batcher, [[0.0]], [[0]], [[1]], variables="p95_ttft")


def test_runs_above_their_limits_are_refused_before_the_kernel():
    from rooflinekit.batching import run_replicates
    from rooflinekit.workloads import Constant, WorkloadSpec
    with pytest.raises(ValueError, match="GiB of scratch"):
        StaticBatcher(4).run(Workload([0.0], [0], [10**9]))
    with pytest.raises(ValueError, match="work_limit"):
        ContinuousBatcher(4).run(Workload([0.0] * 11, [0] * 11, [10**9] * 11))
    with pytest.raises(ValueError, match="work_limit"):
        ContinuousBatcher(4).run(Workload([0.0], [0], [100]), work_limit=50)
    with pytest.raises(ValueError, match="chunks="):
        monte_carlo(WorkloadSpec(1000, output=Constant(3)), ContinuousBatcher(8),
                    replicates=10**7)
    with pytest.raises(ValueError, match="work_limit"):
        monte_carlo(WorkloadSpec(1000, output=Constant(300)), ContinuousBatcher(8),
                    replicates=10**6, chunks=100)
    with pytest.raises(ValueError, match="memory_limit"):
        run_replicates(ContinuousBatcher(4), [[0.0, 1.0]], [[0, 0]], [[1, 1]], memory_limit=10)
    # the override lifts the limit
    ds = ContinuousBatcher(4).run(Workload([0.0], [0], [100]), work_limit=math.inf)
    assert int(ds["n_completed"]) == 1


def test_arrivals_beyond_a_steps_resolution_are_refused():
    # at 1e17 a float64 time cannot hold 100 ticks apart: the run would report 96
    with pytest.raises(ValueError, match="resolution"):
        Workload([1e17], [0], [100])
    from rooflinekit.batching import run_replicates
    with pytest.raises(ValueError, match="resolution"):
        run_replicates(ContinuousBatcher(4), [[0.0, 2e9]], [[0, 0]], [[1, 1]])


def test_run_replicates_as_arrays_equal_the_dataset():
    """as_dataset=False gives the Dataset's values, name for name, for any selection."""
    from rooflinekit.batching import run_replicates
    from rooflinekit.batching.results import ATTAINMENT_NAMES
    batcher = ContinuousBatcher(2)
    rows = ([[0.0, 0.5, 0.6, 3.0], [0.0, 0.0, 1.0, 1.5]], [[4, 0, 9, 2], [1, 1, 1, 1]],
            [[3, 1, 5, 2], [2, 6, 1, 4]])
    targets = {"ttft_target": 2.0, "itl_target": 1.0, "e2e_target": 9.0}
    ds = run_replicates(batcher, *rows, **targets)
    for wanted in (None, list(ATTAINMENT_NAMES), ["n_rejected", "p95_ttft", "goodput"]):
        arrays = run_replicates(batcher, *rows, variables=wanted, as_dataset=False, **targets)
        assert list(arrays) == list(wanted or ds.data_vars)
        for name, values in arrays.items():
            np.testing.assert_array_equal(values, ds[name].values)
    with pytest.raises(TypeError, match="as_dataset must be True or False"):
        run_replicates(batcher, *rows, as_dataset="no")


def test_batcher_and_plan_derive_the_kv_budget_by_one_rule():
    # one rule, replica_kv_budget: the guide's reserve by default, vLLM's share when given
    model, gpu = rk.catalog.model("Llama-3.1-8B"), rk.catalog.gpu("H100-SXM-80GB")
    vllm = rk.memory.engine_kv_cache(model, gpu, 2, gpu_memory_utilization=0.9, block_size=16,
                                     max_model_len=16)["kv_cache_tokens"]
    batcher = ContinuousBatcher(model=model, gpu=gpu, tp=2, gpu_memory_utilization=0.9)
    assert batcher._kv_budget() == rk.batching.replica_kv_budget(
        model, gpu, 2, gpu_memory_utilization=0.9) == vllm
    guide = int(rk.memory.kv_budget_tokens(model, gpu, tp=2, reserve=0.10))
    assert ContinuousBatcher(model=model, gpu=gpu, tp=2)._kv_budget() == guide != vllm
    with pytest.raises(ValueError, match="gpu_memory_utilization"):
        ContinuousBatcher(model=model, gpu=gpu, gpu_memory_utilization=1.5)
