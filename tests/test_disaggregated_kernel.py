"""The disaggregated kernel (every replica of both pools in one numba call) against its
plain-Python reference, bit for bit; and the gap percentiles of several decode replicas, pooled
exactly (``rooflinekit.batching._kernels.disaggregated_run``,
``rooflinekit.batching._reference.simulate_disaggregated``).
"""

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_batching_kernels import ROOFLINE, roofline_batcher

from rooflinekit.batching import (
    IDEAL,
    ContinuousBatcher,
    DisaggregatedBatcher,
    _kernels,
    _reference,
)
from rooflinekit.batching._schema import GAP_PERCENTILES, N_GAP_BINS, STAT_NAMES
from rooflinekit.workloads import Poisson, SharedPrefix, Uniform, Workload, WorkloadSpec

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PERCENTILES = [STAT_NAMES.index(f"token_itl_p{q}") for q in GAP_PERCENTILES]


@st.composite
def workloads(draw, max_n=24, fractional=False):
    n = draw(st.integers(0, max_n))
    if fractional:
        gaps = draw(st.lists(st.floats(0, 6, allow_nan=False), min_size=n, max_size=n))
    else:
        gaps = draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
    arrival = np.cumsum(np.asarray(gaps, dtype=float))
    prompt = draw(st.lists(st.integers(0, 40), min_size=n, max_size=n))
    output = draw(st.lists(st.integers(1, 40), min_size=n, max_size=n))
    priority = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    return Workload(arrival, prompt, output, priority)


def served(d, wl, itl_target=None):
    """:meth:`DisaggregatedBatcher._serve`'s outputs keyed as the reference's."""
    out, rejected_in, peak, ready = d._serve(wl, d._timings(), (None, itl_target, None))
    keys = ("admit", "first_token", "finish", "preemptions", "status", "stats")
    return {**dict(zip(keys, out)), "rejected_in": rejected_in, "decode_arrival": ready,
            "peak": peak}


def assert_same(d, wl, itl_target=None):
    kernel, reference = served(d, wl, itl_target), d.reference(wl, itl_target)
    for key in ("admit", "first_token", "finish", "preemptions", "status", "stats",
                "rejected_in", "decode_arrival", "peak"):
        np.testing.assert_array_equal(kernel[key], reference[key], err_msg=key)
    return kernel


pools = st.builds(ContinuousBatcher, max_num_seqs=st.integers(1, 6),
                  kv_budget_tokens=st.one_of(st.none(), st.integers(1, 150)),
                  admission=st.sampled_from(["reserve", "paged"]), block_size=st.integers(1, 8),
                  max_num_batched_tokens=st.one_of(st.none(), st.integers(6, 30)),
                  interactive_cap=st.one_of(st.none(), st.integers(1, 3)),
                  recv_interval=st.integers(1, 6))


@SETTINGS
@given(wl=workloads(), prefill=pools, decode=pools, x=st.integers(1, 3), y=st.integers(1, 3),
       latency=st.integers(0, 4), itl=st.one_of(st.none(), st.integers(0, 3)))
def test_tick_clock_matches_reference(wl, prefill, decode, x, y, latency, itl):
    d = DisaggregatedBatcher(prefill, decode, x, y, link_bandwidth=math.inf,
                             link_latency=latency)
    assert_same(d, wl, itl)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(fractional=True), config=st.sampled_from(sorted(ROOFLINE)),
       slots=st.integers(1, 6), kv=st.integers(1, 300), x=st.integers(1, 3), y=st.integers(1, 3),
       admission=st.sampled_from(["reserve", "paged"]), bandwidth=st.sampled_from([1e9, 50e9]),
       recv=st.integers(1, 6))
def test_roofline_clock_matches_reference(wl, config, slots, kv, x, y, admission, bandwidth,
                                          recv):
    config = ROOFLINE[config]
    prefill = roofline_batcher(config, max_num_seqs=slots, kv_budget_tokens=kv,
                               admission=admission, recv_interval=recv)
    decode = roofline_batcher(config, max_num_seqs=slots + 1, kv_budget_tokens=kv + 50,
                              recv_interval=recv)
    d = DisaggregatedBatcher(prefill, decode, x, y, link_bandwidth=bandwidth, link_latency=1e-3)
    assert_same(d, wl, 0.05)


def test_prefix_caching_in_the_prefill_pool_matches_reference():
    spec = WorkloadSpec(300, output=Uniform(1, 30), prompt=Uniform(20, 80),
                        prefix=SharedPrefix(tokens=32, groups=4))
    wl = spec.sample(3)
    b = ContinuousBatcher(max_num_seqs=8, kv_budget_tokens=800, admission="paged",
                          prefix_caching=True)
    d = DisaggregatedBatcher(b, ContinuousBatcher(max_num_seqs=8, kv_budget_tokens=900,
                                                  admission="paged"), 2, 2,
                             link_bandwidth=math.inf, link_latency=3)
    out = assert_same(d, wl, 2)
    assert out["stats"][STAT_NAMES.index("prefix_hits")] > 0


def test_several_decode_replicas_pool_their_gaps_exactly():
    # the fleet's percentiles are those of every decode replica's gaps together, not the
    # largest replica's (which bounds them above, here strictly at p95)
    wl = WorkloadSpec(300, output=Uniform(2, 60), prompt=Uniform(10, 400),
                      arrival=Poisson(rate=40.0)).sample(1)
    # the ideal roofline: the strict p95 below depends on the step times, not a profile's
    pool = roofline_batcher(ROOFLINE["dense, tp 8"], max_num_seqs=6, kv_budget_tokens=1500,
                            admission="paged", engine=IDEAL)
    d = DisaggregatedBatcher(pool, pool, 1, 3, link_bandwidth=50e9, link_latency=1e-3)
    kernel = assert_same(d, wl)
    bound = d._serve_each(wl, d._timings(), (None, None, None))[0][5][PERCENTILES]
    pct = kernel["stats"][PERCENTILES]
    assert (pct <= bound).all() and (pct < bound).any()
    # the decode replicas' gaps, pooled by hand from their reference runs
    ready = kernel["decode_arrival"]
    waiting = sorted(np.flatnonzero(~np.isnan(ready)), key=lambda i: ready[i])
    pooled = _reference.GapLog()
    for j in range(3):
        ids = waiting[j::3]
        logs = []
        _reference.simulate_continuous(
            ready[ids], wl.prompt_tokens[ids] + 1, wl.output_tokens[ids] - 1, max_num_seqs=6,
            kv_budget=1500, admission="paged", clock=pool._timing().reference_clock,
            arrived_kv_tokens=wl.prompt_tokens[ids], gap_logs=logs)
        pooled.merge(logs[0])
    np.testing.assert_array_equal(pct, [pooled.percentile(q) for q in GAP_PERCENTILES])


def test_one_decode_replica_keeps_its_own_percentiles():
    # with one decode replica the pooled percentiles are that replica's, as before
    wl = WorkloadSpec(300, output=Uniform(1, 50), prompt=Uniform(10, 100)).sample(2)
    pool = ContinuousBatcher(max_num_seqs=4, kv_budget_tokens=500, admission="paged")
    d = DisaggregatedBatcher(pool, pool, 2, 1, link_bandwidth=math.inf, link_latency=1)
    fused = served(d, wl, 1)
    each = d._serve_each(wl, d._timings(), (None, 1, None))
    np.testing.assert_array_equal(fused["stats"], each[0][5])
    for k in range(5):
        np.testing.assert_array_equal(fused[list(fused)[k]], each[0][k])


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(st.integers(0, 12), max_size=70), data=st.data())
def test_hand_over_sort_is_numpys_stable_argsort(keys, data):
    # the hand-over's natural merge sort: runs found in one pass, merged pairwise; ties by
    # request (the kernel sorts request ids in increasing order)
    key = np.asarray(keys, dtype=float)
    if data.draw(st.booleans()):
        key = np.sort(key)           # mostly the hand-over's case: one run, or a few
        key[::7] -= data.draw(st.integers(0, 3))
    ids = np.flatnonzero(data.draw(st.lists(st.booleans(), min_size=key.size,
                                            max_size=key.size))).astype(np.int64)
    expected = ids[np.argsort(key[ids], kind="stable")]
    got = _kernels._sort_stable(ids.copy(), np.empty_like(ids), np.empty(ids.size + 1, np.int64), key)
    np.testing.assert_array_equal(got, expected)


def _replica_outputs(kernel, wl, batcher, itl_target):
    """One pool replica's run of ``wl``'s requests, each with one output token: the outputs."""
    n = wl.n_requests
    timing = batcher._timing()
    out = (np.empty(n), np.empty(n), np.empty(n), np.empty(n, np.int64), np.empty(n, np.int64),
           np.empty(len(STAT_NAMES)))
    hist_n = np.zeros(N_GAP_BINS, np.int64)
    workspace = (hist_n, np.empty(N_GAP_BINS), np.empty(0, np.int64), np.empty(0),
                 np.empty(0, np.bool_))
    # the inputs as every caller passes them (one signature per kernel: no compile here)
    inputs = _kernels.kernel_inputs(
        wl.arrival, np.asarray(wl.prompt_tokens, np.int64), np.ones(n, np.int64),
        np.asarray(wl.priority, np.int64), np.asarray(wl.prefix_group, np.int64),
        np.asarray(wl.prefix_tokens, np.int64), np.zeros(n, np.int64))
    error = kernel(*inputs, batcher._args(batcher._kv_budget()), timing.tick, timing.coef,
                   itl_target, *out, workspace, np.zeros(0, np.uint8))
    return error, out, hist_n


def _assert_one_token_body_is_the_general_one(wl, batcher, itl_target):
    tick = batcher._timing().tick
    lean = _replica_outputs(_kernels.replica_kernel(tick, one_token=True), wl, batcher,
                            itl_target)
    general = _replica_outputs(_kernels.replica_kernel(tick, one_token=False), wl, batcher,
                               itl_target)
    assert lean[0] == general[0]
    for a, b in zip(lean[1], general[1]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(lean[2], general[2])


prefixed_pools = st.one_of(pools, st.builds(
    ContinuousBatcher, max_num_seqs=st.integers(1, 6),
    kv_budget_tokens=st.one_of(st.none(), st.integers(1, 150)), admission=st.just("paged"),
    block_size=st.integers(1, 8),
    max_num_batched_tokens=st.one_of(st.none(), st.integers(6, 30)),
    interactive_cap=st.one_of(st.none(), st.integers(1, 3)), prefix_caching=st.just(True)))


@st.composite
def prefixed(draw, base):
    # a shared prefix of 0-3 groups (one length each, at most every member's prompt)
    wl = draw(base)
    n = wl.n_requests
    prompt = np.asarray(wl.prompt_tokens)
    groups = [q if prompt[i] > 0 else -1
              for i, q in enumerate(draw(st.lists(st.integers(-1, 2), min_size=n, max_size=n)))]
    length = {q: min([prompt[i] for i in range(n) if groups[i] == q] + [draw(
        st.integers(1, 20))]) for q in set(groups) if q >= 0}
    tokens = [length[q] if q >= 0 else 0 for q in groups]
    return Workload(wl.arrival, wl.prompt_tokens, wl.output_tokens, wl.priority,
                    prefix_group=groups, prefix_tokens=tokens)


@SETTINGS
@given(wl=prefixed(workloads(max_n=30)), pool=prefixed_pools,
       itl=st.sampled_from([math.inf, 0.0, 2.0]))
def test_prefill_replica_is_the_general_body_on_the_tick_clock(wl, pool, itl):
    # the prefill pool's body, compiled for outputs of one token, against the general body
    _assert_one_token_body_is_the_general_one(wl, pool, itl)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=prefixed(workloads(max_n=30, fractional=True)), config=st.sampled_from(sorted(ROOFLINE)),
       slots=st.integers(1, 6), kv=st.integers(1, 300),
       admission=st.sampled_from(["reserve", "paged"]),
       chunk=st.one_of(st.none(), st.integers(6, 30)), caching=st.booleans())
def test_prefill_replica_is_the_general_body_on_the_roofline_clock(wl, config, slots, kv,
                                                                   admission, chunk, caching):
    pool = roofline_batcher(ROOFLINE[config], max_num_seqs=slots, kv_budget_tokens=kv,
                            admission=admission, max_num_batched_tokens=chunk,
                            prefix_caching=caching and admission == "paged")
    _assert_one_token_body_is_the_general_one(wl, pool, 0.05)
