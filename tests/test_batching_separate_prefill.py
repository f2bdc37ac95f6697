"""Prefill steps apart from decodes (``mixed_prefill=False``: SGLang's default, vLLM's V0).

A step with prompt tokens to process carries only those; the decoding sequences wait. The
numba kernel must match the plain-Python reference bit for bit, every request must end
completed or rejected, the KV in use must stay within the budget, and every gap must be the
time between a request's consecutive tokens (checked token by token).
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rooflinekit.batching import ContinuousBatcher, DisaggregatedBatcher, Speculative, _schema
from rooflinekit.batching.batchers import _kernel_outputs
from rooflinekit.workloads import Workload

from test_batching_kernels import (ROOFLINE, arrived_shares, assert_same_with_arrived,
                                   brute_force_gaps, check_gaps, roofline_batcher, workloads)

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
slots = st.one_of(st.none(), st.integers(1, 8))


@SETTINGS
@given(wl=workloads(fractional=True, tiers=True), max_num_seqs=slots, kv=st.integers(1, 300),
       admission=st.sampled_from(["reserve", "paged"]), block_size=st.integers(1, 8),
       extra=st.one_of(st.none(), st.integers(0, 30)), cap=st.one_of(st.none(), st.integers(1, 4)),
       shares=arrived_shares)
def test_tick_kernel_matches_reference(wl, max_num_seqs, kv, admission, block_size, extra, cap,
                                       shares):
    mnbt = None if extra is None or max_num_seqs is None else max_num_seqs + extra
    b = ContinuousBatcher(max_num_seqs=max_num_seqs, kv_budget_tokens=kv, admission=admission,
                          block_size=block_size, max_num_batched_tokens=mnbt,
                          interactive_cap=cap, mixed_prefill=False)
    assert_same_with_arrived(b, wl, shares)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(fractional=True, tiers=True), config=st.sampled_from(sorted(ROOFLINE)),
       max_num_seqs=st.integers(1, 8), extra=st.one_of(st.none(), st.integers(0, 30)),
       kv=st.integers(1, 300), admission=st.sampled_from(["reserve", "paged"]),
       shares=arrived_shares)
def test_roofline_kernel_matches_reference(wl, config, max_num_seqs, extra, kv, admission,
                                           shares):
    wl = Workload(wl.arrival * 0.01, wl.prompt_tokens, wl.output_tokens, wl.priority)
    b = roofline_batcher(ROOFLINE[config], max_num_seqs=max_num_seqs, kv_budget_tokens=kv,
                         admission=admission, block_size=4, mixed_prefill=False,
                         max_num_batched_tokens=None if extra is None else max_num_seqs + extra)
    assert_same_with_arrived(b, wl, shares)


@SETTINGS
@given(wl=workloads(tiers=True), max_num_seqs=slots, kv=st.integers(1, 200),
       admission=st.sampled_from(["reserve", "paged"]), block_size=st.integers(1, 8),
       extra=st.one_of(st.none(), st.integers(0, 30)), target=st.sampled_from([0.5, 1.0, 3.0]))
def test_tick_gaps_match_every_token(wl, max_num_seqs, kv, admission, block_size, extra, target):
    mnbt = None if extra is None or max_num_seqs is None else max_num_seqs + extra
    b = ContinuousBatcher(max_num_seqs=max_num_seqs, kv_budget_tokens=kv, admission=admission,
                          block_size=block_size, max_num_batched_tokens=mnbt, interactive_cap=2,
                          mixed_prefill=False)
    check_gaps(b, wl, target)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(fractional=True, tiers=True), config=st.sampled_from(sorted(ROOFLINE)),
       max_num_seqs=st.integers(1, 8), extra=st.one_of(st.none(), st.integers(0, 30)),
       kv=st.integers(1, 300), admission=st.sampled_from(["reserve", "paged"]),
       target=st.floats(0.0, 0.05))
def test_roofline_gaps_match_every_token(wl, config, max_num_seqs, extra, kv, admission, target):
    wl = Workload(wl.arrival * 0.01, wl.prompt_tokens, wl.output_tokens, wl.priority)
    b = roofline_batcher(ROOFLINE[config], max_num_seqs=max_num_seqs, kv_budget_tokens=kv,
                         admission=admission, block_size=4, mixed_prefill=False,
                         max_num_batched_tokens=None if extra is None else max_num_seqs + extra)
    check_gaps(b, wl, target)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(fractional=True, tiers=True), config=st.sampled_from([None, *sorted(ROOFLINE)]),
       max_num_seqs=slots, extra=st.one_of(st.none(), st.integers(0, 30)),
       kv=st.integers(1, 300), admission=st.sampled_from(["reserve", "paged"]),
       block_size=st.integers(1, 8))
def test_no_request_lost_and_kv_within_budget(wl, config, max_num_seqs, extra, kv, admission,
                                              block_size):
    mnbt = None if extra is None or max_num_seqs is None else max_num_seqs + extra
    kwargs = dict(max_num_seqs=max_num_seqs, kv_budget_tokens=kv, admission=admission,
                  block_size=block_size, max_num_batched_tokens=mnbt, mixed_prefill=False)
    if config is None:
        b = ContinuousBatcher(**kwargs)
    else:
        wl = Workload(wl.arrival * 0.01, wl.prompt_tokens, wl.output_tokens, wl.priority)
        b = roofline_batcher(ROOFLINE[config], **kwargs)
    out = _kernel_outputs(b, wl)
    stats = dict(zip(_schema.STAT_NAMES, out["stats"]))
    done = out["status"] == _schema.COMPLETED
    rejected = out["status"] == _schema.REJECTED
    assert np.all(done ^ rejected)                                # every request accounted for
    final = np.maximum(wl.prompt_tokens, 1) + wl.output_tokens
    need = -(-final // block_size) * block_size if admission == "paged" else final
    np.testing.assert_array_equal(rejected, need > kv)            # the one rejection reason
    assert stats["peak_kv_reserved"] <= kv and stats["peak_kv_used"] <= stats["peak_kv_reserved"]
    assert stats["token_gaps"] == (wl.output_tokens[done] - 1).sum()


def test_a_decode_waits_for_a_prefill_step():
    """By hand, one tick a step: A (prompt 2, 5 tokens) arrives at 0, B (prompt 3, 2 tokens)
    at 2. Mixed, the step at 2 prefills B and decodes A: A's tokens at 1, 2, 3, 4, 5. Apart,
    A waits while B prefills: A's tokens at 1, 2, 4, 5, 6 (one gap of 2 ticks), B's at 3, 4."""
    wl = Workload([0.0, 2.0], [2, 3], [5, 2])
    for mixed, a_tokens, b_tokens in ((True, [1, 2, 3, 4, 5], [3, 4]),
                                      (False, [1, 2, 4, 5, 6], [3, 4])):
        b = ContinuousBatcher(max_num_seqs=4, mixed_prefill=mixed)
        tokens = []
        ref = b.reference(wl, tokens=tokens)
        times = {i: [t for j, t in tokens if j == i] for i in (0, 1)}
        assert times == {0: a_tokens, 1: b_tokens}
        stats = dict(zip(_schema.STAT_NAMES, ref["stats"]))
        gaps = brute_force_gaps(tokens, 2)
        assert stats["token_gaps"] == 5 and stats["token_gap_time"] == gaps.sum()
        assert stats["token_gap_time"] == (5.0 if mixed else 6.0)
        out = _kernel_outputs(b, wl)
        np.testing.assert_array_equal(out["finish"], [a_tokens[-1], b_tokens[-1]])
        np.testing.assert_array_equal(out["stats"], ref["stats"])


def test_mixed_prefill_is_checked():
    with pytest.raises(TypeError, match="mixed_prefill must be True or False"):
        ContinuousBatcher(mixed_prefill="no")
    spec = Speculative(draft=0.1, draft_tokens=2, acceptance=0.7)
    with pytest.raises(ValueError, match="mixed_prefill=False with speculative"):
        ContinuousBatcher(mixed_prefill=False, speculative=spec)
    with pytest.raises(ValueError, match="prefill: mixed_prefill=False"):
        DisaggregatedBatcher(prefill=ContinuousBatcher(mixed_prefill=False),
                             decode=ContinuousBatcher(), link_bandwidth=float("inf"))
