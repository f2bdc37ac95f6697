"""The stream interval (vLLM's and SGLang's ``--stream-interval``): a request's tokens sent in
chunks, the inter-token gaps those between its sends (``_reference``, "Stream interval").

The kernel against the reference, exactly, in every mode it runs; the reference's gaps against
the sends recomputed from its own token times by the rule as vLLM states it
(``vllm/v1/engine/output_processor.py``: send when the request has finished, or it is the first
token, or ``stream_interval`` tokens have gathered since the last send); the per-request
outputs (admission, first token, finish) the same as at interval 1; and InferenceX's published
per-chunk ITL, 48.8 times its TPOT at ``--stream-interval 50``, from the simulator.
"""

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rooflinekit as rk
from rooflinekit.batching import MAX_STREAM_INTERVAL, ContinuousBatcher, Speculative, _schema
from rooflinekit.batching.batchers import _kernel_outputs
from rooflinekit.planning import load_curve
from rooflinekit.workloads import Uniform, Workload

from test_batching_kernels import (ROOFLINE_BATCHERS, assert_gap_percentiles, assert_same,
                                  roofline_case, workloads)

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MIXED = pytest.mark.parametrize("mixed", [True, False], ids=["mixed", "prefill-apart"])
intervals = st.integers(2, 7)


def chunk_gaps(tokens, n, interval):
    """Each request's gaps between sends, from its token times (``(request, time)`` pairs in
    order): the first token sent at once, then whenever ``interval`` tokens have gathered
    since the last send, and the last at the end."""
    times = [[] for _ in range(n)]
    for i, t in tokens:
        times[i].append(t)
    gaps = []
    for ts in times:
        sent = 0
        for j in range(1, len(ts) + 1):          # the j-th token, j from 1
            if sent == 0:
                sent, at = j, ts[j - 1]
            elif j - sent >= interval or j == len(ts):
                gaps.append(ts[j - 1] - at)
                sent, at = j, ts[j - 1]
    return np.asarray(gaps, dtype=float)


def check(batcher, wl, itl_target):
    """Kernel == reference; the reference's gap statistics are the sends' (every count, the
    sum, each percentile to its histogram bin); the requests' outputs are interval 1's."""
    interval = batcher.stream_interval
    kernel = _kernel_outputs(batcher, wl, itl_target=itl_target)
    tokens = []
    ref = batcher.reference(wl, itl_target=itl_target, tokens=tokens)
    assert_same(kernel, ref)
    every = dataclasses.replace(batcher, stream_interval=1).reference(wl, itl_target=itl_target)
    for key in ("admit", "first_token", "finish", "preemptions", "status"):
        np.testing.assert_array_equal(ref[key], every[key], err_msg=key)
    stats = dict(zip(_schema.STAT_NAMES, ref["stats"]))
    gaps = chunk_gaps(tokens, wl.n_requests, interval)
    done = ref["status"] == _schema.COMPLETED
    n = wl.output_tokens[done]
    # one token a decode step: a reply of n tokens arrives in ceil((n - 1) / interval) gaps
    assert stats["token_gaps"] == gaps.size == sum(math.ceil((k - 1) / interval) for k in n)
    assert stats["token_gaps_met"] == (gaps <= itl_target).sum()
    assert stats["token_gap_time"] == pytest.approx(gaps.sum(), rel=1e-12, abs=1e-300)
    # the gaps between sends add up to each request's time from first token to last
    span = (ref["finish"] - ref["first_token"])[done].sum()
    assert stats["token_gap_time"] == pytest.approx(span, rel=1e-12, abs=1e-300)
    assert_gap_percentiles(stats, gaps)


#: A tick-clock batcher's draws: slots, KV budget, admission, block size, the token budget
#: beyond the slots (None: unlimited) and an ITL target (with :func:`tick_batcher`).
TICK_BATCHERS = dict(max_num_seqs=st.integers(1, 8), kv=st.integers(1, 200),
                     admission=st.sampled_from(["reserve", "paged"]),
                     block_size=st.integers(1, 8),
                     extra=st.one_of(st.none(), st.integers(0, 30)),
                     target=st.sampled_from([1.0, 3.0, 12.0]))


def tick_batcher(max_num_seqs, kv, admission, block_size, extra, **kwargs):
    """The tick-clock batcher of :data:`TICK_BATCHERS`' draws, two requests' cap on the batch
    tier, ``kwargs`` beside."""
    return ContinuousBatcher(max_num_seqs=max_num_seqs, kv_budget_tokens=kv, admission=admission,
                             block_size=block_size,
                             max_num_batched_tokens=None if extra is None
                             else max_num_seqs + extra, interactive_cap=2, **kwargs)


@MIXED
@SETTINGS
@given(wl=workloads(tiers=True), interval=intervals, **TICK_BATCHERS)
def test_tick_sends_match_the_rule_and_the_reference(mixed, wl, interval, target, **draws):
    check(tick_batcher(mixed_prefill=mixed, stream_interval=interval, **draws), wl, target)


@MIXED
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(fractional=True, tiers=True), interval=intervals,
       target=st.floats(0.0, 0.2), **ROOFLINE_BATCHERS)
def test_roofline_sends_match_the_rule_and_the_reference(mixed, wl, interval, target, **draws):
    wl, b = roofline_case(wl, mixed_prefill=mixed, stream_interval=interval, **draws)
    check(b, wl, target)


def test_a_preempted_request_sends_across_its_preemption():
    """A KV budget too small for both requests' replies preempts one; its sends keep counting
    its tokens across the recompute (the rule reads tokens, not steps)."""
    wl = Workload(np.array([0.0, 0.0]), np.array([4, 4]), np.array([12, 12]))
    b = ContinuousBatcher(max_num_seqs=2, kv_budget_tokens=20, admission="paged", block_size=2,
                          stream_interval=5)
    ref = b.reference(wl)
    assert ref["preemptions"].sum() >= 1
    check(b, wl, 3.0)


def test_the_default_counts_every_token():
    """Interval 1 is the per-token accounting, bit for bit (the default's code path)."""
    from rooflinekit.workloads import guide_workload
    wl = guide_workload()
    b = ContinuousBatcher(max_num_seqs=8, kv_budget_tokens=4000, admission="paged")
    assert b.stream_interval == 1
    assert_same(_kernel_outputs(b, wl), b.reference(wl))
    stats = dict(zip(_schema.STAT_NAMES, b.reference(wl)["stats"]))
    assert stats["token_gaps"] == (wl.output_tokens - 1).sum()


@pytest.mark.parametrize("value, kind, match", [
    (0, ValueError, "stream_interval"), (MAX_STREAM_INTERVAL + 1, ValueError, "stream_interval"),
    (1.5, ValueError, "stream_interval"), (True, TypeError, "stream_interval"),
    ("2", TypeError, "stream_interval"),
])
def test_a_bad_interval_is_refused_naming_it(value, kind, match):
    with pytest.raises(kind, match=match):
        ContinuousBatcher(stream_interval=value)


def test_speculative_decoding_and_disaggregation_refuse_an_interval():
    with pytest.raises(ValueError, match="stream_interval=4 with speculative decoding"):
        ContinuousBatcher(model="llama-3.1-8b", gpu="h100", clock="roofline",
                          speculative=Speculative(0.05, draft_tokens=3, acceptance=0.7),
                          stream_interval=4)
    from rooflinekit.batching import DisaggregatedBatcher
    with pytest.raises(ValueError, match="decode: stream_interval=4 is modelled for one "
                                         "aggregated replica only"):
        DisaggregatedBatcher(prefill=ContinuousBatcher(), decode=ContinuousBatcher(
            stream_interval=4), link_bandwidth=50e9)


def test_inferencex_itl_per_chunk_comes_out_of_the_simulator():
    """InferenceX's B300 Qwen3.5 runs (SGLang, ``--stream-interval 50``, replies uniform from
    819 to 1,024 tokens) published a mean ITL 48.8 times their mean TPOT at every concurrency
    (``test_load_sweep_data.py``). ``load_curve`` with the same interval: the mean ITL over
    sends against the mean TPOT, within 2 % of 48.8; at interval 1 the two agree within 2 %."""
    traffic = rk.Traffic(1.0, Uniform(819, 1024), Uniform(819, 1024))
    common = dict(model="llama-3.1-8b", gpu="H100-SXM-80GB", concurrencies=[16],
                  replicates=1, requests=64, engine=rk.engine_profile("sglang", "H100-SXM-80GB"))
    chunked = load_curve(traffic, rk.SLO(ttft=3600.0), stream_interval=50, **common)
    assert chunked.attrs["stream_interval"] == 50
    ratio = float(chunked["mean_token_itl"].values.squeeze() / chunked["mean_tpot"].values.squeeze())
    assert ratio == pytest.approx(48.8, rel=0.02)
    every = load_curve(traffic, rk.SLO(ttft=3600.0), **common)
    assert float(every["mean_token_itl"].values.squeeze()) == pytest.approx(
        float(every["mean_tpot"].values.squeeze()), rel=0.02)
    # TTFT and TPOT are the tokens' own: the same runs at either interval
    np.testing.assert_array_equal(chunked["mean_tpot"].values, every["mean_tpot"].values)
    np.testing.assert_array_equal(chunked["mean_ttft"].values, every["mean_ttft"].values)


def test_a_plan_holds_its_itl_target_to_the_gaps_between_sends():
    """``plan(stream_interval=)``: a TTFT target alone plans the same at interval 1 and 10 (the
    first token is the same token); an ITL target binds sooner at 10, whose gaps between sends
    are about ten steps; both engines' launch commands carry the interval."""
    from rooflinekit.planning.deployment import launch_commands
    traffic = rk.Traffic(4.0, 500, 200)
    common = dict(models="Llama-3.1-8B", gpus=["H100-SXM-80GB"], replicates=2, requests=200)

    def plan(slo, interval):
        return rk.plan(traffic, slo, stream_interval=interval, **common)

    ttft = rk.SLO(ttft=1.0)
    np.testing.assert_array_equal(plan(ttft, 10)["max_rate"].values,
                                  plan(ttft, 1)["max_rate"].values)
    itl = rk.SLO(ttft=1.0, itl=0.05)
    every, chunked = plan(itl, 1), plan(itl, 10)
    assert chunked.attrs["stream_interval"] == 10 and every.attrs["stream_interval"] == 1
    assert float(chunked["max_rate"].max()) < 0.5 * float(every["max_rate"].max())
    loose = plan(rk.SLO(ttft=1.0, itl=0.5), 10)
    commands = launch_commands(rk.cheapest_plan(loose, by=None), traffic)
    assert "--stream-interval 10" in commands["vllm_serve"]
    assert "--stream-interval 10" in commands["sglang_serve"]
    assert "--stream-interval" not in commands["trtllm_serve"]
    with pytest.raises(ValueError, match="stream_interval=10 with speculative decoding"):
        rk.plan(traffic, ttft, stream_interval=10,
                speculative=Speculative(0.05, draft_tokens=3, acceptance=0.7), **common)
