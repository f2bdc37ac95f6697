"""Disaggregated serving: a prefill pool and a decode pool, the KV sent between them.

Hand-computed cases on the tick clock, the reduction to its parts (an instant link, pools that
never queue), hypothesis properties (no request lost, each pool's KV within its budget) and bad
input (``rooflinekit.batching.disaggregated``).
"""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_batching_kernels import ROOFLINE, roofline_batcher

import rooflinekit as rk
from rooflinekit.batching import (
    POOLS,
    ContinuousBatcher,
    DisaggregatedBatcher,
    StaticBatcher,
    run_replicates,
)
from rooflinekit.workloads import Workload

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
INF = math.inf


def pair(prefill=None, decode=None, x=1, y=1, **link):
    link = {"link_bandwidth": INF, **link}
    return DisaggregatedBatcher(prefill or ContinuousBatcher(), decode or ContinuousBatcher(),
                                x, y, **link)


# --- hand-computed -----------------------------------------------------------------------------


def test_one_request_on_the_tick_clock():
    # prefill: admitted at 0, first token at 1; the transfer takes 2 ticks, so the decode pool
    # gets it at 3 and makes tokens 2, 3, 4 at 4, 5, 6, retiring it at 6
    ds = pair(link_latency=2).run(Workload([0.0], [8], [4]), itl_target=1)
    assert ds.admit.values[0] == 0 and ds.first_token.values[0] == 1
    assert ds.decode_arrival.values[0] == 3 and ds.finish.values[0] == 6
    assert ds.ttft.values[0] == 1 and ds.latency.values[0] == 6
    assert ds.itl.values[0] == pytest.approx(5 / 3)
    # gaps: 3 (the hand-off), 1, 1; two within the target of 1 tick
    assert float(ds.mean_token_itl) == pytest.approx(5 / 3)
    assert float(ds.token_itl_attainment) == pytest.approx(2 / 3)
    assert ds.rejected_in.values.tolist() == [""]


def test_one_token_requests_end_after_prefill():
    ds = pair(link_latency=5).run(Workload([0.0, 0.0], [8, 8], [1, 3]))
    assert ds.finish.values[0] == 1 and np.isnan(ds.decode_arrival.values[0])
    assert ds.decode_arrival.values[1] == 6 and ds.finish.values[1] == 8


def test_round_robin_over_prefill_replicas():
    # one slot per prefill replica: requests 0 and 2 share a replica, so 2 waits for 0
    one_slot = ContinuousBatcher(max_num_seqs=1)
    ds = pair(prefill=one_slot, x=2).run(Workload([0.0] * 4, [4] * 4, [2] * 4))
    assert ds.admit.values.tolist() == [0.0, 0.0, 1.0, 1.0]
    assert float(ds.peak_running) <= 2 + 4          # two prefill slots and the decode pool's


def test_transfer_time_is_the_prompts_kv_over_the_link():
    config = ROOFLINE["dense, tp 8"]
    b = roofline_batcher(config, max_num_seqs=8)
    d = pair(prefill=b, decode=b, link_bandwidth=50e9, link_latency=1e-3)
    wl = Workload([0.0, 0.5], [4000, 1000], [3, 3])
    ds = d.run(wl)
    moved = rk.kv_transfer_time(b.model, np.array([4000, 1000]), link_bandwidth=50e9,
                                link_latency=1e-3)
    np.testing.assert_allclose(ds.decode_arrival.values - ds.first_token.values, moved,
                               rtol=1e-12)
    assert ds.attrs["policy"] == "disaggregated" and ds.attrs["clock"] == "roofline"


def test_rejected_in_either_pool_with_a_reason():
    # final length 8 + 4 = 12: fits the prefill pool (8 + 1) but not a decode pool of 10 tokens
    d = pair(prefill=ContinuousBatcher(kv_budget_tokens=20),
             decode=ContinuousBatcher(kv_budget_tokens=10))
    ds = d.run(Workload([0.0, 0.0, 0.0], [8, 30, 2], [4, 1, 4]))
    assert ds.rejected_in.values.tolist() == ["decode", "prefill", ""]
    assert ds.status.values.tolist() == ["rejected", "rejected", "completed"]
    assert (ds.reason.values[:2] != "").all()
    assert int(ds.n_rejected) == 2


# --- reduction ---------------------------------------------------------------------------------


@st.composite
def spaced(draw, max_n=8):
    n = draw(st.integers(1, max_n))
    prompt = np.asarray(draw(st.lists(st.integers(1, 2000), min_size=n, max_size=n)))
    output = np.asarray(draw(st.lists(st.integers(1, 40), min_size=n, max_size=n)))
    gaps = np.asarray(draw(st.lists(st.floats(0.0, 2.0), min_size=n, max_size=n)))
    return prompt, output, gaps


@SETTINGS
@given(case=spaced(), config=st.sampled_from(sorted(ROOFLINE)))
def test_instant_link_and_idle_pools_reduce_to_their_parts(case, config):
    prompt, output, gaps = case
    unlimited = roofline_batcher(ROOFLINE[config], max_num_seqs=None, kv_budget_tokens=10**9)
    clock = unlimited._timing().reference_clock
    # arrivals further apart than any prefill: the prefill pool never batches two prompts
    arrival = np.cumsum(10.0 + gaps)
    wl = Workload(arrival, prompt, output)
    ds = pair(prefill=unlimited, decode=unlimited).run(wl)
    alone = [clock.step_time(0.0, float(p), 0.0, clock.chunk_pairs(float(p), 0.0), float(p))
             for p in prompt]
    # TTFT is the prefill alone: the first token comes one prefill step after the arrival
    np.testing.assert_array_equal(ds.first_token.values, arrival + np.asarray(alone))
    np.testing.assert_array_equal(ds.decode_arrival.values[output > 1],
                                  ds.first_token.values[output > 1])
    # the decode part is a decode-only run of the prompts' KV, exactly
    more = output > 1
    if more.any():
        decode_only = unlimited.run(
            Workload(ds.decode_arrival.values[more], prompt[more] + 1, output[more] - 1),
            arrived_kv_tokens=prompt[more])
        np.testing.assert_array_equal(ds.finish.values[more], decode_only.finish.values)
    np.testing.assert_array_equal(ds.finish.values[~more], ds.first_token.values[~more])


# --- properties --------------------------------------------------------------------------------


@st.composite
def workloads(draw, max_n=24):
    n = draw(st.integers(0, max_n))
    arrival = np.cumsum(draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))).astype(float)
    prompt = draw(st.lists(st.integers(0, 40), min_size=n, max_size=n))
    output = draw(st.lists(st.integers(1, 40), min_size=n, max_size=n))
    priority = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    return Workload(arrival, prompt, output, priority)


pools = st.builds(ContinuousBatcher, max_num_seqs=st.one_of(st.none(), st.integers(1, 6)),
                  kv_budget_tokens=st.integers(1, 150),
                  admission=st.sampled_from(["reserve", "paged"]), block_size=st.integers(1, 8))


@SETTINGS
@given(wl=workloads(), prefill=pools, decode=pools, x=st.integers(1, 3), y=st.integers(1, 3),
       latency=st.integers(0, 5))
def test_no_request_lost_and_kv_within_each_pools_budget(wl, prefill, decode, x, y, latency):
    ds = pair(prefill, decode, x, y, link_latency=latency).run(wl)
    done = ds.status.values == "completed"
    assert (done | (ds.status.values == "rejected")).all()
    assert ((ds.rejected_in.values != "") == ~done).all()
    assert set(ds.rejected_in.values) <= {"", *POOLS}
    assert int(ds.n_completed) + int(ds.n_rejected) == wl.n_requests
    f, t = ds.finish.values[done], ds.first_token.values[done]
    assert (t >= wl.arrival[done]).all() and (f >= t).all()
    assert float(ds.prefill_peak_kv_occupancy) <= 1.0
    assert float(ds.decode_peak_kv_occupancy) <= 1.0
    assert float(ds.peak_kv_occupancy) <= 1.0


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(workloads(max_n=12), min_size=1, max_size=3), x=st.integers(1, 2),
       y=st.integers(1, 2))
def test_replicates_are_the_runs_row_by_row(rows, x, y):
    n = min(wl.n_requests for wl in rows)
    if n == 0:
        return
    rows = [Workload(wl.arrival[:n], wl.prompt_tokens[:n], wl.output_tokens[:n]) for wl in rows]
    d = pair(ContinuousBatcher(max_num_seqs=4, kv_budget_tokens=100, admission="paged"),
             ContinuousBatcher(max_num_seqs=3, kv_budget_tokens=80), x, y, link_latency=1)
    stack = lambda k: np.stack([wl[k] for wl in rows])
    ds = d.run_replicates(stack("arrival"), stack("prompt_tokens"), stack("output_tokens"),
                          itl_target=1, ttft_target=3)
    for r, wl in enumerate(rows):
        one = d.run(wl, itl_target=1, ttft_target=3)
        for name in ("mean_ttft", "mean_latency", "token_itl_attainment", "ttft_attainment",
                     "n_completed", "peak_kv_occupancy", "p99_token_itl"):
            np.testing.assert_array_equal(ds[name].values[r], one[name].values, err_msg=name)


def test_a_single_pool_pair_matches_the_aggregated_ttft_when_idle():
    # one request at a time, an instant link: prefill then decode take what one batcher takes,
    # bar the step that computes the first token's KV in the decode pool (a one-token prefill
    # instead of a decode token: the same tick)
    wl = Workload([0.0, 100.0], [30, 12], [5, 9])
    agg = ContinuousBatcher().run(wl)
    dis = pair().run(wl)
    np.testing.assert_array_equal(dis.ttft.values, agg.ttft.values)
    np.testing.assert_array_equal(dis.finish.values, agg.finish.values)


def test_run_replicates_of_the_planner_path():
    # the same summaries as the library's run_replicates on a batcher, for the names it reads
    b = ContinuousBatcher(max_num_seqs=4)
    arrival = np.array([[0.0, 1.0, 2.0]])
    prompt, output = np.array([[3, 4, 5]]), np.array([[2, 2, 2]])
    ds = pair(b, b).run_replicates(arrival, prompt, output, variables=["n_completed"])
    assert list(ds.data_vars) == ["n_completed"]
    assert int(ds.n_completed[0]) == int(run_replicates(b, arrival, prompt, output).n_completed[0])


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, error, match", [
    ({"link_bandwidth": 0.0}, ValueError, "link_bandwidth"),
    ({"link_bandwidth": -1.0}, ValueError, "link_bandwidth"),
    ({"link_bandwidth": float("nan")}, ValueError, "link_bandwidth"),
    ({"link_bandwidth": "fast"}, TypeError, "link_bandwidth"),
    ({"link_latency": -1.0}, ValueError, "link_latency"),
    ({"prefill_replicas": 0}, ValueError, "prefill_replicas"),
    ({"decode_replicas": 0}, ValueError, "decode_replicas"),
    ({"decode_replicas": 1.5}, ValueError, "decode_replicas"),
    ({"prefill": StaticBatcher()}, TypeError, "prefill"),
    ({"decode": None}, TypeError, "decode"),
])
def test_bad_input(kwargs, error, match):
    args = {"prefill": ContinuousBatcher(), "decode": ContinuousBatcher(), "link_bandwidth": 1e9,
            **kwargs}
    with pytest.raises(error, match=match):
        DisaggregatedBatcher(**args)


def test_pools_must_share_clock_and_model():
    tick = ContinuousBatcher()
    roof = roofline_batcher(ROOFLINE["dense, tp 8"])
    with pytest.raises(ValueError, match="same clock"):
        DisaggregatedBatcher(tick, roof, link_bandwidth=1e9)
    other = roofline_batcher(ROOFLINE["MoE"])
    with pytest.raises(ValueError, match="same model"):
        DisaggregatedBatcher(roof, other, link_bandwidth=1e9)
    with pytest.raises(TypeError, match="link_bandwidth"):
        DisaggregatedBatcher(tick, tick)


def test_plan_disaggregated_refuses_runaway_comparisons_before_any_draw():
    import rooflinekit as rk
    from rooflinekit.workloads import Constant
    traffic = rk.Traffic(2.0, Constant(100), Constant(20))
    slo = rk.SLO(ttft=1.0)
    kwargs = {"model": "llama-3.1-8b", "gpu": "h100"}
    with pytest.raises(ValueError, match="gpu_budget"):
        rk.plan_disaggregated(traffic, slo, gpu_budget=10**6, **kwargs)
    with pytest.raises(ValueError, match="GiB of requests"):
        rk.plan_disaggregated(traffic, slo, splits=[(1, 1)], replicates=10**6,
                              requests=10**4, **kwargs)
    with pytest.raises(ValueError, match="work_limit"):
        rk.plan_disaggregated(traffic, slo, splits=[(1, 1)], replicates=100, requests=10**5,
                              work_limit=1e6, **kwargs)


def test_each_pool_is_timed_by_its_own_engine_and_says_so():
    config = ROOFLINE["dense, tp 8"]
    wl = Workload(np.arange(8.0) * 0.01, [200] * 8, [20] * 8)
    slow = rk.Engine(compute_efficiency=0.5, step_overhead=1e-3)
    cal = rk.Calibration(decode={"bandwidth_efficiency": 0.7}, source="bench")
    same = pair(roofline_batcher(config, engine=slow), roofline_batcher(config, engine=slow),
                link_bandwidth=1e10).run(wl)
    assert same.attrs["model_quality"] == slow.label
    mixed = pair(roofline_batcher(config, engine=slow), roofline_batcher(config, engine=cal),
                 link_bandwidth=1e10)
    ds = mixed.run(wl)
    assert ds.attrs["model_quality"] == f"prefill: {slow.label}; decode: calibrated: bench"
    reps = mixed.run_replicates(wl.arrival[None], wl.prompt_tokens[None], wl.output_tokens[None])
    assert reps.attrs["model_quality"] == ds.attrs["model_quality"]
    # the calibration's pool is its mixed-step engine's, to the bit
    as_engine = pair(roofline_batcher(config, engine=slow),
                     roofline_batcher(config, engine=cal.engine_for("step")),
                     link_bandwidth=1e10).run(wl)
    np.testing.assert_array_equal(ds["finish"].values, as_engine["finish"].values)
    # slower prefill than the ideal pool's
    ideal = pair(roofline_batcher(config, engine=rk.IDEAL),
                 roofline_batcher(config, engine=rk.IDEAL), link_bandwidth=1e10).run(wl)
    assert ideal.attrs["model_quality"] == rk.IDEAL.label
    assert float(ds["ttft"].mean()) > float(ideal["ttft"].mean())
