"""The engine's time per request taken in (``Engine.request_overhead``) in the simulator.

A front end that runs in the engine's own thread (vLLM before 0.6.0) steps no batch while it
receives and tokenises a request: the step after the requests taken in lasts ``c`` longer for
each (``docs/simulator.md``, "Request overhead"). The kernels against the plain-Python
reference, bit for bit, in every mode (open and closed loop, receive intervals, decodes mixed
with prefill slices and prefill steps apart, speculative decoding, disaggregated pools), the
invariants of a run, and runs counted by hand.
"""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rooflinekit import Engine, catalog
from rooflinekit.batching import (
    ContinuousBatcher,
    DisaggregatedBatcher,
    Speculative,
    StaticBatcher,
    _reference,
    _schema,
)
from rooflinekit.batching.batchers import _kernel_outputs
from rooflinekit.workloads import Workload
from tests.test_batching_kernels import ROOFLINE, assert_same, workloads
from tests.test_disaggregated_kernel import assert_same as assert_same_pools

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: Seconds a request: from far below a step (0.1 ms) to many steps (20 ms)
overheads = st.sampled_from([1e-4, 7e-4, 3e-3, 2e-2])


def batcher(config, overhead, **kwargs):
    c = ROOFLINE[config]
    return ContinuousBatcher(model=catalog.model(c["model"]), gpu=catalog.gpu(c["gpu"]),
                             tp=c["tp"], engine=Engine(step_overhead=1e-3,
                                                       request_overhead=overhead), **kwargs)


def seconds(wl):
    """A drawn workload's tick-sized gaps as the steps' milliseconds."""
    return Workload(wl.arrival * 0.01, wl.prompt_tokens, wl.output_tokens, wl.priority)


@pytest.mark.parametrize("mixed", [True, False], ids=["mixed", "prefill-apart"])
@SETTINGS
@given(wl=workloads(fractional=True, tiers=True), config=st.sampled_from(sorted(ROOFLINE)),
       max_num_seqs=st.integers(1, 8), extra=st.one_of(st.none(), st.integers(0, 30)),
       kv=st.integers(1, 300), admission=st.sampled_from(["reserve", "paged"]),
       recv=st.integers(1, 12), closed=st.integers(0, 10), overhead=overheads)
def test_matches_reference(mixed, wl, config, max_num_seqs, extra, kv, admission, recv, closed,
                           overhead):
    b = batcher(config, overhead, max_num_seqs=max_num_seqs, kv_budget_tokens=kv,
                admission=admission, block_size=4, mixed_prefill=mixed, recv_interval=recv,
                max_num_batched_tokens=None if extra is None else max_num_seqs + extra)
    wl = seconds(wl)
    assert_same(_kernel_outputs(b, wl, clients=closed), b.reference(wl, clients=closed))


@SETTINGS
@given(wl=workloads(fractional=True), config=st.sampled_from(sorted(ROOFLINE)),
       max_num_seqs=st.integers(1, 8), kv=st.integers(1, 300), k=st.integers(1, 4),
       alpha=st.floats(0, 1), recv=st.integers(1, 12), closed=st.integers(0, 10),
       overhead=overheads)
def test_speculative_matches_reference(wl, config, max_num_seqs, kv, k, alpha, recv, closed,
                                       overhead):
    b = batcher(config, overhead, max_num_seqs=max_num_seqs, kv_budget_tokens=kv,
                admission="paged", block_size=4, recv_interval=recv,
                speculative=Speculative(draft=0.1, draft_tokens=k, acceptance=alpha))
    wl = seconds(wl)
    assert_same(_kernel_outputs(b, wl, clients=closed), b.reference(wl, clients=closed))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(fractional=True), config=st.sampled_from(sorted(ROOFLINE)),
       slots=st.integers(1, 6), kv=st.integers(1, 300), x=st.integers(1, 3), y=st.integers(1, 3),
       recv=st.integers(1, 6), overhead=overheads)
def test_disaggregated_matches_reference(wl, config, slots, kv, x, y, recv, overhead):
    prefill = batcher(config, overhead, max_num_seqs=slots, kv_budget_tokens=kv,
                      admission="paged", recv_interval=recv)
    decode = batcher(config, overhead / 2, max_num_seqs=slots + 1, kv_budget_tokens=kv + 50,
                     recv_interval=recv)
    d = DisaggregatedBatcher(prefill, decode, x, y, link_bandwidth=50e9, link_latency=1e-3)
    assert_same_pools(d, seconds(wl), 0.05)


@SETTINGS
@given(wl=workloads(fractional=True, tiers=True), max_num_seqs=st.integers(1, 8),
       kv=st.integers(1, 300), admission=st.sampled_from(["reserve", "paged"]),
       recv=st.integers(1, 12), closed=st.integers(0, 10), mixed=st.booleans(),
       overhead=overheads)
def test_no_request_lost_and_kv_within_budget(wl, max_num_seqs, kv, admission, recv, closed,
                                              mixed, overhead):
    b = batcher("dense, tp 8", overhead, max_num_seqs=max_num_seqs, kv_budget_tokens=kv,
                admission=admission, block_size=4, recv_interval=recv, mixed_prefill=mixed)
    wl = seconds(wl)
    out = _kernel_outputs(b, wl, clients=closed)
    stats = dict(zip(_schema.STAT_NAMES, out["stats"]))
    done = out["status"] == _schema.COMPLETED
    assert np.all(done ^ (out["status"] == _schema.REJECTED))
    assert np.isfinite(out["finish"][done]).all()
    assert stats["peak_kv_reserved"] <= kv
    assert np.all(out["admit"][done] >= wl.arrival[done])
    # every second of the run is a step or idle: the steps carry the front end's time
    assert stats["busy_time"] <= stats["end_time"] + 1e-12


def _run(overhead, arrival, prompt, output, clients=0, max_num_seqs=16):
    b = batcher("dense, tp 8", overhead, max_num_seqs=max_num_seqs, kv_budget_tokens=10_000,
                admission="paged", block_size=4)
    wl = Workload(arrival, prompt, output)
    out = _kernel_outputs(b, wl, clients=clients)
    assert_same(out, b.reference(wl, clients=clients))
    return out


def test_a_burst_waits_for_every_prompt_taken_in():
    # N prompts at once, every one in the first step: each first token N·c later than without
    # (hand count: one step of all N prompts, lengthened by the N requests taken in)
    n, c = 12, 2.5e-3
    args = ([0.0] * n, [30] * n, [4] * n)
    base, slow = _run(0.0, *args), _run(c, *args)
    np.testing.assert_allclose(slow["first_token"] - base["first_token"], n * c, rtol=0,
                               atol=1e-12)
    # the decode steps after the first take none: the gaps are the same
    np.testing.assert_allclose(slow["finish"] - slow["first_token"],
                               base["finish"] - base["first_token"], rtol=0, atol=1e-12)


def test_a_lone_request_waits_its_own_overhead():
    c = 4e-3
    base, slow = _run(0.0, [0.0, 5.0], [10, 10], [3, 3]), _run(c, [0.0, 5.0], [10, 10], [3, 3])
    np.testing.assert_allclose(slow["first_token"] - base["first_token"], [c, c], rtol=0,
                               atol=1e-12)
    np.testing.assert_allclose(slow["finish"] - base["finish"], [c, c], rtol=0, atol=1e-12)


def test_an_arrival_during_decoding_lengthens_the_next_step():
    # request 1 arrives as request 0's first token comes (a step boundary in both runs): the
    # step that takes it in (its prefill slice beside request 0's decode) lasts c longer, so
    # request 1's time to first token and request 0's next token each wait c
    c = 5e-3
    first = _run(0.0, [0.0], [10], [40])["first_token"][0]
    base = _run(0.0, [0.0, first], [10, 10], [40, 3])
    slow = _run(c, [0.0, first + c], [10, 10], [40, 3])
    assert slow["first_token"][0] - base["first_token"][0] == pytest.approx(c, abs=1e-12)
    assert (slow["first_token"][1] - (first + c)) - (base["first_token"][1] - first) == \
        pytest.approx(c, abs=1e-12)
    assert slow["finish"][0] - base["finish"][0] == pytest.approx(2 * c, abs=1e-12)


def test_an_idle_engine_moves_on_by_the_front_ends_time():
    # a request that can never fit is rejected at arrival; the engine's time for it passes
    # before the next request, which arrives during it, is stepped
    c = 1e-2
    b = batcher("dense, tp 8", c, max_num_seqs=4, kv_budget_tokens=100, admission="paged",
                block_size=4)
    wl = Workload([0.0, 0.004], [500, 10], [2, 2])
    out = _kernel_outputs(b, wl)
    assert_same(out, b.reference(wl))
    assert out["status"][0] == _schema.REJECTED
    alone = _kernel_outputs(batcher("dense, tp 8", 0.0, max_num_seqs=4, kv_budget_tokens=100,
                                    admission="paged", block_size=4),
                            Workload([0.0], [10], [2]))
    # request 1 is taken in at t = c (request 0's intake), then costs c itself
    assert out["first_token"][1] == pytest.approx(c + c + alone["first_token"][0], abs=1e-12)


def test_a_closed_loop_pays_for_each_request_the_server_takes_in():
    # one client, requests one after another: each costs c before its prefill
    c = 3e-3
    args = ([0.0] * 4, [10] * 4, [3] * 4)
    base, slow = _run(0.0, *args, clients=1), _run(c, *args, clients=1)
    np.testing.assert_allclose(slow["finish"] - base["finish"], c * np.arange(1, 5), rtol=0,
                               atol=1e-12)


def test_zero_is_the_engine_without_it():
    wl = Workload([0.0, 0.001, 0.3], [20, 9, 30], [5, 8, 2])
    for closed in (0, 2):
        assert_same(_kernel_outputs(batcher("MoE", 0.0, max_num_seqs=2), wl, clients=closed),
                    _kernel_outputs(ContinuousBatcher(
                        model=catalog.model("Mixtral-8x7B"), gpu=catalog.gpu("H100-SXM-80GB"),
                        tp=2, max_num_seqs=2, engine=Engine(step_overhead=1e-3)), wl,
                        clients=closed))


def test_the_static_batcher_and_the_tick_clock_take_none():
    # the static batcher has no front end of its own to charge (the guide's §4.2 batches)
    wl = Workload([0.0, 0.0], [10, 10], [3, 3])
    m, g = catalog.model("guide-70b"), catalog.gpu("lab")
    runs = [StaticBatcher(batch_size=2, model=m, gpu=g, tp=8,
                          engine=Engine(request_overhead=c)).run(wl) for c in (0.0, 1.0)]
    np.testing.assert_array_equal(runs[0]["finish"].values, runs[1]["finish"].values)
    with pytest.raises(ValueError, match="request_overhead"):
        _reference.simulate_continuous([0.0], [3], [2], request_overhead=1.0)


@pytest.mark.parametrize("bad, error", [(-1e-3, ValueError), (math.inf, ValueError),
                                        (math.nan, ValueError), (None, TypeError),
                                        ([1e-3, 2e-3], TypeError), ("fast", TypeError)])
def test_bad_values_are_refused(bad, error):
    with pytest.raises(error, match="request_overhead"):
        Engine(request_overhead=bad)
