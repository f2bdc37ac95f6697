"""SGLang's receive interval (``--scheduler-recv-interval``) in the continuous-batching simulator.

The kernels against the plain-Python reference, bit for bit, in every mode (open and closed
loop, decodes mixed with prefill slices and prefill steps apart, both clocks, speculative
decoding), the invariants of a run (no request lost, KV within budget), and hand-counted runs
of the rule itself: new requests are taken in at a step whose preceding steps since the last
receive weigh ``N`` (a decode step 1, a step with prompt tokens 1000), or when nothing runs
(sgl-project/sglang, ``python/sglang/srt/managers/scheduler_recv_skipper.py``).
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rooflinekit.batching import ContinuousBatcher, Speculative, _schema, run_replicates
from rooflinekit.batching.batchers import MAX_RECV_INTERVAL, _kernel_outputs
from rooflinekit.workloads import Workload
from tests.test_batching_kernels import (ROOFLINE, ROOFLINE_BATCHERS, assert_same,
                                         roofline_batcher, roofline_case, workloads)

SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
intervals = st.integers(1, 12)
# 0: an open loop; else a closed loop's client of that many requests (fewer or more than the
# server's slots)
loops = st.integers(0, 10)


def assert_both_loops(b, wl, clients):
    assert_same(_kernel_outputs(b, wl, clients=clients), b.reference(wl, clients=clients))


@pytest.mark.parametrize("mixed", [True, False], ids=["mixed", "prefill-apart"])
@SETTINGS
@given(wl=workloads(tiers=True), max_num_seqs=st.integers(1, 8), extra=st.integers(0, 30),
       kv=st.one_of(st.none(), st.integers(1, 300)),
       admission=st.sampled_from(["reserve", "paged"]), block_size=st.integers(1, 8),
       recv=intervals, closed=loops)
def test_tick_matches_reference(mixed, wl, max_num_seqs, extra, kv, admission, block_size, recv,
                                closed):
    b = ContinuousBatcher(max_num_seqs=max_num_seqs, kv_budget_tokens=kv, admission=admission,
                          block_size=block_size, max_num_batched_tokens=max_num_seqs + extra,
                          mixed_prefill=mixed, recv_interval=recv)
    assert_both_loops(b, wl, closed)


@pytest.mark.parametrize("mixed", [True, False], ids=["mixed", "prefill-apart"])
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(fractional=True, tiers=True), recv=intervals, closed=loops,
       **ROOFLINE_BATCHERS)
def test_roofline_matches_reference(mixed, wl, recv, closed, **draws):
    wl, b = roofline_case(wl, mixed_prefill=mixed, recv_interval=recv, **draws)
    assert_both_loops(b, wl, closed)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(), max_num_seqs=st.integers(1, 8), kv=st.integers(1, 300),
       admission=st.sampled_from(["reserve", "paged"]), k=st.integers(1, 4),
       alpha=st.floats(0, 1), recv=intervals, closed=loops)
def test_speculative_matches_reference(wl, max_num_seqs, kv, admission, k, alpha, recv, closed):
    b = ContinuousBatcher(max_num_seqs=max_num_seqs, kv_budget_tokens=kv, admission=admission,
                          block_size=4, recv_interval=recv,
                          speculative=Speculative(draft=0.1, draft_tokens=k, acceptance=alpha))
    assert_both_loops(b, wl, closed)


@SETTINGS
@given(wl=workloads(tiers=True), max_num_seqs=st.one_of(st.none(), st.integers(1, 8)),
       kv=st.integers(1, 300), admission=st.sampled_from(["reserve", "paged"]),
       block_size=st.integers(1, 8), recv=intervals, closed=loops, mixed=st.booleans())
def test_no_request_lost_and_kv_within_budget(wl, max_num_seqs, kv, admission, block_size, recv,
                                              closed, mixed):
    b = ContinuousBatcher(max_num_seqs=max_num_seqs, kv_budget_tokens=kv, admission=admission,
                          block_size=block_size, recv_interval=recv, mixed_prefill=mixed)
    out = _kernel_outputs(b, wl, clients=closed)
    stats = dict(zip(_schema.STAT_NAMES, out["stats"]))
    done = out["status"] == _schema.COMPLETED
    rejected = out["status"] == _schema.REJECTED
    assert np.all(done ^ rejected)
    assert np.isfinite(out["finish"][done]).all()
    final = np.maximum(wl.prompt_tokens, 1) + wl.output_tokens
    need = -(-final // block_size) * block_size if admission == "paged" else final
    np.testing.assert_array_equal(rejected, need > kv)
    assert stats["peak_kv_reserved"] <= kv
    # a request is never admitted before it arrives, and never earlier than every step
    assert np.all(out["admit"][done] >= wl.arrival[done])


@SETTINGS
@given(wl=workloads(tiers=True), max_num_seqs=st.integers(1, 8), extra=st.integers(0, 30),
       mixed=st.booleans())
def test_interval_one_is_every_step(wl, max_num_seqs, extra, mixed):
    kw = dict(max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_seqs + extra,
              mixed_prefill=mixed, admission="paged", kv_budget_tokens=200)
    plain = _kernel_outputs(ContinuousBatcher(**kw), wl)
    assert_same(_kernel_outputs(ContinuousBatcher(recv_interval=1, **kw), wl), plain)
    # a closed loop's client of at least the server's slots has sent each request before a
    # slot frees for it, in the order of one queue: at N = 1 nothing waits (with two tiers
    # the server may want a later request first, one the client has not sent)
    one = Workload(wl.arrival, wl.prompt_tokens, wl.output_tokens)
    plain = _kernel_outputs(ContinuousBatcher(**kw), one)
    for clients in (max_num_seqs, max_num_seqs + 3):
        assert_same(_kernel_outputs(ContinuousBatcher(recv_interval=1, **kw), one,
                                    clients=clients), plain)


def _tick_run(recv, arrival, prompt, output, clients=0, max_num_seqs=8):
    b = ContinuousBatcher(max_num_seqs=max_num_seqs, recv_interval=recv)
    wl = Workload(np.asarray(arrival, float), np.asarray(prompt), np.asarray(output))
    out = _kernel_outputs(b, wl, clients=clients)
    assert_same(out, b.reference(wl, clients=clients))
    return out


def test_hand_counted_open_loop():
    # Tick clock, whole prompts in the step that admits them. A arrives at 0 on an idle server
    # (taken at once) and prefills in step 0 (weight 1000), so step 1 receives (nothing there)
    # and the count restarts: decode steps 1, 2, 3, 4, 5 bring it to 5 at the start of step 6.
    # B, arriving at 3, is taken in and admitted then, at 6 (at 3 with N = 1).
    out = _tick_run(5, [0, 3], [4, 4], [20, 5])
    assert out["admit"].tolist() == [0.0, 6.0]
    assert _tick_run(1, [0, 3], [4, 4], [20, 5])["admit"].tolist() == [0.0, 3.0]
    # B's prefill step (weight 1000) makes step 7 a receive step: C, arriving at 7, is admitted
    # at once; its prefill makes step 8 one (empty), and D, arriving at 9, waits for the five
    # decode steps 8 to 12: admitted at 13
    out = _tick_run(5, [0, 3, 7, 9], [4, 4, 4, 4], [20, 15, 15, 15])
    assert out["admit"].tolist() == [0.0, 6.0, 7.0, 13.0]


def test_idle_server_receives_at_once():
    # A finishes at step 3 (output 3: steps 0, 1, 2); B arrives at 4 on an idle server
    out = _tick_run(30, [0, 4], [2, 2], [3, 3])
    assert out["admit"].tolist() == [0.0, 4.0]
    # B arriving at 2, while A decodes, is received when A retires and the server falls idle
    out = _tick_run(30, [0, 2], [2, 2], [3, 3])
    assert out["admit"].tolist() == [0.0, 3.0]


def test_closed_loop_queue_waits_for_a_receive_step():
    # One slot, every request queued from 0 (a closed loop's client of one): each is sent when
    # the one before completes, and is admitted only at a receive step; the server is idle
    # then, so at once.
    out = _tick_run(4, [0, 0], [2, 2], [3, 3], clients=1, max_num_seqs=1)
    assert out["admit"].tolist() == [0.0, 3.0]
    # Two slots, three requests: step 0 (idle: a receive step) prefills A and B (weight 1000),
    # step 1 receives, A finishes at 2 (tokens at steps 0, 1 and 2: retired at 3).
    b = ContinuousBatcher(max_num_seqs=2, recv_interval=4)
    wl = Workload(np.zeros(3), np.array([2, 2, 2]), np.array([3, 10, 3]))
    # A client of two sends C when A completes, at 3; decode steps 1 to 4 bring the count to
    # 4 at the start of step 5, which takes C in and admits it (at 3 with an open loop)
    two = _kernel_outputs(b, wl, clients=2)
    assert_same(two, b.reference(wl, clients=2))
    assert two["admit"].tolist() == [0.0, 0.0, 5.0]
    assert _kernel_outputs(b, wl)["admit"].tolist() == [0.0, 0.0, 3.0]
    # A client of three sent C at 0 and the server took it in at step 0 (SGLang's waiting
    # queue): it is admitted as soon as A's slot frees, at 3, not at the next receive step
    three = _kernel_outputs(b, wl, clients=3)
    assert_same(three, b.reference(wl, clients=3))
    assert three["admit"].tolist() == [0.0, 0.0, 3.0]


def test_closed_loop_takes_in_only_what_has_arrived():
    # A client of three whose third request arrives (is paced) at 2, after step 1's receive
    # (the one after the prefill): sent then, it is taken in at the next receive step, 5
    # (decode steps 1 to 4), though A's slot frees at 3
    b = ContinuousBatcher(max_num_seqs=2, recv_interval=4)
    wl = Workload(np.array([0.0, 0.0, 2.0]), np.array([2, 2, 2]), np.array([3, 10, 3]))
    out = _kernel_outputs(b, wl, clients=3)
    assert_same(out, b.reference(wl, clients=3))
    assert out["admit"].tolist() == [0.0, 0.0, 5.0]


def test_interval_lengthens_ttft_under_load_on_the_roofline():
    rng = np.random.default_rng(0)
    n = 300
    wl = Workload(np.cumsum(rng.exponential(0.05, n)), rng.integers(100, 400, n),
                  rng.integers(50, 200, n))
    ttft = {}
    for recv in (1, 10, 30):
        b = roofline_batcher(ROOFLINE["dense, tp 8"], max_num_seqs=64, admission="paged",
                             max_num_batched_tokens=2048, recv_interval=recv)
        out = _kernel_outputs(b, wl)
        ttft[recv] = float(np.mean(out["first_token"] - wl.arrival))
    assert ttft[1] < ttft[10] < ttft[30]


def test_run_replicates_closed_loop_reads_the_interval():
    b = ContinuousBatcher(max_num_seqs=4, recv_interval=8)
    rows = np.zeros((2, 40))
    prompt = np.full((2, 40), 10)
    # lengths that differ, so that the server never falls idle (where it receives at once)
    output = np.tile(5 + 3 * (np.arange(40) % 7), (2, 1))
    closed = run_replicates(b, rows, prompt, output, closed_loop=True, clients=4,
                            as_dataset=False)
    every = run_replicates(ContinuousBatcher(max_num_seqs=4), rows, prompt, output,
                           closed_loop=True, clients=4, as_dataset=False)
    assert np.all(closed["mean_ttft"] > every["mean_ttft"])


@pytest.mark.parametrize("bad, error", [(0, ValueError), (-3, ValueError),
                                        (MAX_RECV_INTERVAL + 1, ValueError), (2.5, ValueError),
                                        ("10", TypeError)])
def test_bad_interval_named(bad, error):
    with pytest.raises(error, match="recv_interval"):
        ContinuousBatcher(recv_interval=bad)


def test_load_curve_takes_the_interval_and_records_it():
    import rooflinekit as rk
    traffic = rk.planning.Traffic(1.0, 1000, 300)
    kw = dict(model="Llama-3.1-8B", gpu="H100-SXM-80GB", concurrencies=[16], replicates=2,
              requests=100, engine="sglang")
    every = rk.planning.load_curve(traffic, rk.SLO(ttft=60.0), **kw)
    tenth = rk.planning.load_curve(traffic, rk.SLO(ttft=60.0), recv_interval=10, **kw)
    assert (every.attrs["recv_interval"], tenth.attrs["recv_interval"]) == (1, 10)
    assert float(tenth["mean_ttft"].median()) > float(every["mean_ttft"].median())
    for bad, error in ((0, ValueError), (2.5, ValueError), ("10", TypeError),
                       (MAX_RECV_INTERVAL + 1, ValueError)):
        with pytest.raises(error, match="recv_interval"):
            rk.planning.load_curve(traffic, rk.SLO(ttft=60.0), recv_interval=bad, **kw)


def test_curve_command_takes_the_flag(capsys):
    import json

    from helpers import run_cli
    argv = ("curve", "llama-3.1-8b", "--gpu", "h100", "--engine", "sglang", "--concurrencies",
            "16", "--prompt-mean", "1000", "--output-mean", "300", "--replicates", "1",
            "--requests", "60", "--json")
    rc, every, _ = run_cli(capsys, *argv)
    rc10, tenth, _ = run_cli(capsys, *argv, "--recv-interval", "10")
    assert rc == rc10 == 0
    every, tenth = json.loads(every), json.loads(tenth)
    assert (every["recv_interval"], tenth["recv_interval"]) == (1, 10)
    assert tenth["loads"][0]["mean_ttft_ms"] > every["loads"][0]["mean_ttft_ms"]


def test_plan_runs_the_interval_and_the_sglang_command_carries_it():
    import shlex

    import rooflinekit as rk
    from rooflinekit.planning import launch_commands
    traffic = rk.Traffic(4.0, 500, 100)
    kw = dict(models="Llama-3.1-8B", gpus="H100-SXM-80GB", replicates=2, requests=100,
              engine="sglang", max_num_batched_tokens=8192)
    every = rk.plan(traffic, rk.SLO(ttft=0.3), **kw)
    tenth = rk.plan(traffic, rk.SLO(ttft=0.3), recv_interval=10, **kw)
    assert (every.attrs["recv_interval"], tenth.attrs["recv_interval"]) == (1, 10)
    # the same draws: a prompt waiting for a receive step only lowers the rate within the TTFT
    assert float(tenth["max_rate"].max()) <= float(every["max_rate"].max())
    got = launch_commands(rk.cheapest_plan(tenth, by=None), traffic)
    words = shlex.split(got["sglang_serve"])
    assert words[words.index("--scheduler-recv-interval") + 1] == "10"
    assert "--scheduler-recv-interval" not in got["vllm_serve"]
    assert any("receive interval of 10 steps" in note for note in got["notes"])
    plain = launch_commands(rk.cheapest_plan(every, by=None), traffic)
    assert "--scheduler-recv-interval" not in plain["sglang_serve"]
    with pytest.raises(ValueError, match="recv_interval"):
        rk.plan(traffic, rk.SLO(ttft=0.3), recv_interval=0, **kw)


def test_plan_command_takes_the_flag(capsys):
    from helpers import run_cli
    rc, out, _ = run_cli(capsys, "plan", "llama-3.1-8b", "--gpus", "h100", "--rate", "4",
                         "--prompt-mean", "500", "--output-mean", "100", "--ttft", "0.3",
                         "--engine", "sglang", "--recv-interval", "10", "--replicates", "2",
                         "--requests", "100")
    assert rc == 0
    assert "new requests taken in every 10 decode steps (--recv-interval)" in out
    assert "--scheduler-recv-interval 10" in out
    rc, _, err = run_cli(capsys, "plan", "llama-3.1-8b", "--gpus", "h100", "--rate", "4",
                         "--recv-interval", "0")
    assert rc == 2 and "--recv-interval" in err


def test_plan_disaggregated_runs_the_interval_in_every_pool(capsys):
    import rooflinekit as rk
    from helpers import run_cli
    traffic = rk.Traffic(4.0, rk.workloads.Constant(500), rk.workloads.Constant(100))
    kw = dict(model="Llama-3.1-8B", gpu="H100-SXM-80GB", splits=[(1, 1)], engine="sglang",
              replicates=2, requests=100)
    every = rk.plan_disaggregated(traffic, rk.SLO(ttft=0.15), **kw)
    later = rk.plan_disaggregated(traffic, rk.SLO(ttft=0.15), recv_interval=50, **kw)
    assert (every.attrs["recv_interval"], later.attrs["recv_interval"]) == (1, 50)
    # the aggregated replica's prompts wait up to 50 decode steps for a receive step: the same
    # draws serve less within the TTFT; a prefill replica runs only prefill steps, each of
    # which weighs past the interval, so the split's prompts do not wait
    assert float(later["max_rate"][0]) < float(every["max_rate"][0])
    for bad in (0, MAX_RECV_INTERVAL + 1, 2.5, True):
        with pytest.raises((ValueError, TypeError), match="recv_interval"):
            rk.plan_disaggregated(traffic, rk.SLO(ttft=0.15), recv_interval=bad, **kw)
    rc, out, _ = run_cli(capsys, "disaggregated", "llama-3.1-8b", "--gpu", "h100", "--splits",
                         "1P1D", "--rate", "4", "--prompt-mean", "500", "--output-mean", "100",
                         "--ttft", "1", "--engine", "sglang", "--recv-interval", "10",
                         "--replicates", "2", "--requests", "100", "--json")
    assert rc == 0
    assert '"recv_interval": 10' in out
    rc, _, err = run_cli(capsys, "disaggregated", "llama-3.1-8b", "--gpu", "h100", "--splits",
                         "1P1D", "--rate", "4", "--recv-interval", "0")
    assert rc == 2 and "--recv-interval" in err
