"""Prefix caching in the continuous batcher: hand-computed cases, kernel == reference, properties.

A prefix's whole blocks are held once per group; a request whose prefix is resident prefills only
the rest (``rooflinekit.batching._reference``, "Prefix caching").
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_batching_kernels import (
    ROOFLINE,
    arrived_shares,
    assert_same,
    assert_same_with_arrived,
    roofline_batcher,
)

from rooflinekit import catalog, memory
from rooflinekit.batching import ContinuousBatcher, monte_carlo
from rooflinekit.batching._schema import STAT_NAMES
from rooflinekit.batching.batchers import _kernel_outputs
from rooflinekit.workloads import Constant, SharedPrefix, Workload, WorkloadSpec

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
STAT = {name: k for k, name in enumerate(STAT_NAMES)}


def paged(**kwargs):
    return ContinuousBatcher(admission="paged", prefix_caching=True, **kwargs)


def warm_then(n, prompt, prefix, output=1, gap=1.0):
    """Request 0 computes the prefix (a miss); ``n`` more with the same prefix arrive ``gap``
    later, once it is resident."""
    arrival = np.r_[0.0, np.full(n, gap)]
    return Workload(arrival, np.full(n + 1, prompt), np.full(n + 1, output),
                    prefix_group=np.zeros(n + 1, np.int64),
                    prefix_tokens=np.full(n + 1, prefix))


# --- hand-computed -----------------------------------------------------------------------------


def test_hit_prefills_only_the_uncached_tokens():
    # 1,000-token prefix in blocks of 16: 62 blocks (992 tokens) cached; a 1,024-token prompt
    # prefills its last 32 tokens, attending to the 992 cached ones
    b = roofline_batcher(ROOFLINE["dense, tp 8"], admission="paged", prefix_caching=True,
                         max_num_seqs=4)
    clock = b._timing().reference_clock
    wl = warm_then(1, 1024, 1000, gap=1.0)
    ds = b.run(wl)
    hit = clock.step_time(0.0, 32.0, clock.kv_read(992.0), clock.chunk_pairs(32.0, 992.0), 32.0)
    assert ds.first_token.values[1] == 1.0 + hit
    miss = clock.step_time(0.0, 1024.0, 0.0, clock.chunk_pairs(1024.0, 0.0), 1024.0)
    # the client's TTFT adds the profile's front end to the engine's first token
    assert ds.ttft.values[0] == miss + b._timing().frontend_latency
    assert hit < miss / 3                        # weights are read either way
    assert float(ds.prefill_tokens_saved) == 992
    assert float(ds.prefix_hit_rate) == 0.5          # the first request computed it
    # without caching both cost a full prefill
    plain = ContinuousBatcher(**{**b.__dict__, "prefix_caching": False}).run(wl)
    assert plain.first_token.values[1] == 1.0 + miss
    assert float(plain.prefill_tokens_saved) == 0


def test_prompt_cached_to_its_end_recomputes_its_last_token():
    b = paged(max_num_seqs=4, kv_budget_tokens=10_000, max_num_batched_tokens=4)
    # prompt = prefix = 64 tokens = 4 blocks of 16: a hit prefills 1 token, within one step
    ds = b.run(warm_then(1, 64, 64, output=3, gap=20.0))
    assert float(ds.prefill_tokens_saved) == 63
    assert ds.ttft.values[1] == 1.0
    assert ds.ttft.values[0] == 16.0               # 64 tokens in chunks of 4


def test_hundred_sequences_hold_a_shared_prefix_once():
    # each: 1,023-token prompt (1,000 shared) + 1 output = 1,024 tokens, 64 blocks, 62 shared
    blocks = 62 + 100 * 2
    b = paged(max_num_seqs=None, kv_budget_tokens=blocks * 16)
    ds = b.run(warm_then(101, 1023, 1000))
    assert float(ds.peak_running) == 100           # the 101st waits for a free slot of KV
    assert float(ds.peak_kv_tokens) == blocks * 16  # vs 100 * 64 * 16 without sharing
    assert int(ds.n_completed) == 102
    assert float(ds.prefix_hit_rate) == pytest.approx(101 / 102)
    without = ContinuousBatcher(admission="paged", max_num_seqs=None,
                                kv_budget_tokens=blocks * 16).run(warm_then(101, 1023, 1000))
    assert float(without.peak_running) == blocks // 64


def test_concurrency_matches_max_concurrent_sequences():
    model, gpu = catalog.model("guide-70b"), catalog.gpu("guide-lab-80GB")
    n = int(memory.max_concurrent_sequences(model, gpu, 1024, tp=2, reserve=0.1,
                                            shared_prefix_tokens=1000))
    b = paged(model=model, gpu=gpu, tp=2, reserve=0.1, clock="tick", max_num_seqs=None)
    stats = _kernel_outputs(b, warm_then(n + 10, 1023, 1000))["stats"]
    assert stats[STAT["peak_running"]] == n


def test_unused_prefix_is_evicted_when_memory_is_needed():
    # two groups of 4 blocks each; the budget holds one prefix plus one request's own blocks
    wl = Workload([0.0, 10.0, 20.0], [64, 64, 64], [1, 1, 1], prefix_group=[0, 1, 0],
                  prefix_tokens=[64, 64, 64])
    ds = paged(max_num_seqs=4, kv_budget_tokens=16 * 6).run(wl)
    assert int(ds.n_completed) == 3
    assert float(ds.prefix_evictions) == 2          # group 0 for 1, then group 1 for 0 again
    assert float(ds.prefix_hit_rate) == 0.0
    assert float(ds.peak_kv_tokens) <= 16 * 6


def test_prefix_caching_checks():
    with pytest.raises(ValueError, match="prefix_caching needs admission='paged'"):
        ContinuousBatcher(prefix_caching=True)
    with pytest.raises(TypeError, match="prefix_caching must be True or False"):
        ContinuousBatcher(admission="paged", prefix_caching=1)


def test_monte_carlo_sweeps_the_prefix_share():
    spec = WorkloadSpec(40, output=Constant(8), prompt=Constant(8),
                        prefix=SharedPrefix(64, groups=2, share=0.5))
    ds = monte_carlo(spec, paged(max_num_seqs=8, kv_budget_tokens=2000), replicates=3, seed=1,
                     sweep={"prefix.share": [0.0, 0.5, 1.0]}, parallel=False)
    saved = ds.prefill_tokens_saved.mean("replicate").values[0]
    assert saved[0] == 0 and saved[0] < saved[1] < saved[2]
    assert np.isnan(ds.prefix_hit_rate.values[0, 0]).all()
    with pytest.raises(ValueError, match="no prefix"):
        monte_carlo(WorkloadSpec(4, output=Constant(1)), paged(), replicates=1, seed=1,
                    sweep={"prefix.share": [0.5]})


# --- kernel == reference -----------------------------------------------------------------------


@st.composite
def prefix_workloads(draw, max_n=24, fractional=False, tiers=False):
    n = draw(st.integers(0, max_n))
    gaps = draw(st.lists(st.floats(0, 8, allow_nan=False) if fractional else st.integers(0, 8),
                         min_size=n, max_size=n))
    arrival = np.cumsum(np.asarray(gaps, dtype=float))
    n_groups = draw(st.integers(1, 3))
    lengths = draw(st.lists(st.integers(1, 30), min_size=n_groups, max_size=n_groups))
    group = np.asarray(draw(st.lists(st.integers(-1, n_groups - 1), min_size=n, max_size=n)),
                       dtype=np.int64)
    own = np.asarray(draw(st.lists(st.integers(0, 20), min_size=n, max_size=n)), dtype=np.int64)
    length = np.where(group >= 0, np.asarray(lengths)[np.maximum(group, 0)], 0)
    output = draw(st.lists(st.integers(1, 30), min_size=n, max_size=n))
    priority = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)) if tiers else None
    return Workload(arrival, own + length, output, priority, prefix_group=group,
                    prefix_tokens=length)


@SETTINGS
@given(wl=prefix_workloads(tiers=True), max_num_seqs=st.one_of(st.none(), st.integers(1, 8)),
       kv=st.integers(1, 300), block_size=st.integers(1, 8),
       extra=st.one_of(st.none(), st.integers(0, 30)), cap=st.one_of(st.none(), st.integers(1, 3)),
       shares=arrived_shares)
def test_prefix_caching_matches_reference(wl, max_num_seqs, kv, block_size, extra, cap, shares):
    mnbt = None if extra is None or max_num_seqs is None else max_num_seqs + extra
    b = paged(max_num_seqs=max_num_seqs, kv_budget_tokens=kv, block_size=block_size,
              max_num_batched_tokens=mnbt, interactive_cap=cap)
    assert_same_with_arrived(b, wl, shares)
    plain = ContinuousBatcher(admission="paged", max_num_seqs=max_num_seqs, kv_budget_tokens=kv,
                              block_size=block_size, max_num_batched_tokens=mnbt,
                              interactive_cap=cap)
    assert_same(_kernel_outputs(plain, wl), plain.reference(wl))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=prefix_workloads(fractional=True, tiers=True), config=st.sampled_from(sorted(ROOFLINE)),
       max_num_seqs=st.integers(1, 8), extra=st.one_of(st.none(), st.integers(0, 30)),
       kv=st.integers(1, 300))
def test_roofline_prefix_caching_matches_reference(wl, config, max_num_seqs, extra, kv):
    wl = Workload(wl.arrival * 0.01, wl.prompt_tokens, wl.output_tokens, wl.priority,
                  wl.prefix_group, wl.prefix_tokens)
    b = roofline_batcher(ROOFLINE[config], max_num_seqs=max_num_seqs, kv_budget_tokens=kv,
                         admission="paged", block_size=4, prefix_caching=True,
                         max_num_batched_tokens=None if extra is None else max_num_seqs + extra)
    assert_same(_kernel_outputs(b, wl), b.reference(wl))


# --- properties --------------------------------------------------------------------------------


@SETTINGS
@given(wl=prefix_workloads(), max_num_seqs=st.integers(1, 8), kv=st.integers(1, 300),
       block_size=st.integers(1, 8))
def test_kv_within_budget_and_every_request_accounted_for(wl, max_num_seqs, kv, block_size):
    b = paged(max_num_seqs=max_num_seqs, kv_budget_tokens=kv, block_size=block_size)
    trace = []
    out = b.reference(wl, trace=trace)
    assert all(reserved <= kv and used <= reserved for _, _, reserved, used in trace)
    stats = _kernel_outputs(b, wl)["stats"]
    assert stats[STAT["peak_kv_reserved"]] <= kv and stats[STAT["peak_kv_used"]] <= kv
    ds = b.run(wl)
    assert set(ds.status.values) <= {"completed", "rejected"}
    done = ds.status.values == "completed"
    assert np.isfinite(ds.finish.values[done]).all()
    assert (ds.reason.values[~done] != "").all()
    assert int(ds.n_completed) + int(ds.n_rejected) == wl.n_requests
    assert out["stats"][STAT["prefix_hits"]] <= out["stats"][STAT["prefix_requests"]]


@SETTINGS
@given(wl=prefix_workloads(), max_num_seqs=st.integers(1, 8), block_size=st.integers(1, 8),
       extra=st.one_of(st.none(), st.integers(0, 30)))
def test_a_hit_never_costs_more_than_a_miss(wl, max_num_seqs, block_size, extra):
    # KV enough for all (no eviction, no preemption): caching only shortens prefills
    mnbt = None if extra is None else max_num_seqs + extra
    kw = {"admission": "paged", "max_num_seqs": max_num_seqs, "block_size": block_size,
          "max_num_batched_tokens": mnbt}
    cached = ContinuousBatcher(prefix_caching=True, **kw).run(wl)
    plain = ContinuousBatcher(**kw).run(wl)
    assert (plain.ttft.values >= cached.ttft.values).all()
    assert (plain.finish.values >= cached.finish.values).all()
