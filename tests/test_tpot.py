"""TPOT as ``vllm bench serve`` states it, and the summaries that lay a plan beside its sweep.

vLLM's definition (vllm-project/vllm, ``vllm/benchmarks/serve.py``, ``calculate_metrics``): a
request's TPOT is ``(latency - ttft) / (output_len - 1)``, only for ``output_len > 1``; its
percentiles are ``np.percentile`` over those requests, its ITL every gap between tokens. The
simulator's per-request ``itl`` is that mean gap; ``SLO(tpot=)`` holds it at the SLO's quantile
over requests, beside the every-gap ``itl``.
"""

import json
import math

import numpy as np
import pytest

import rooflinekit as rk
from rooflinekit import catalog
from rooflinekit.batching import ContinuousBatcher, monte_carlo, run_replicates
from rooflinekit.planning import capacity
from rooflinekit.workloads import LogNormal, Poisson, WorkloadSpec

MODEL, GPU = "Llama-3.1-8B", "H100-SXM-80GB"
TPOT_FAMILY = ("mean_tpot", "p50_tpot", "p90_tpot", "p95_tpot", "p99_tpot", "tpot_attainment")


def _preempted_pair(**targets):
    """Two requests on the tick clock, one preempted: every gap known by hand.

    Paged, one token per block, 6 blocks, both arriving at 0 with a one-token prompt and 4
    output tokens. t=0: both admitted (2 blocks each: prompt + first token), both prefill;
    first tokens at t=1. t=1: each needs a 3rd block (2 free): tokens at t=2. t=2: each needs
    a 4th, none free: the later-admitted B is preempted (its 3 blocks freed, its 2 tokens kept);
    A's 3rd token at t=3. t=3: B needs 1 + 2 + 1 = 4 blocks, 1 free after A's need: it waits; A's
    4th token at t=4, A finishes. t=4: B readmitted, re-prefills and emits its 3rd token at t=5,
    its 4th at t=6. A's gaps 1, 1, 1 (TPOT 1); B's 1, 3, 1 (TPOT 5/3).
    """
    batcher = ContinuousBatcher(max_num_seqs=2, kv_budget_tokens=6, block_size=1,
                                admission="paged")
    return batcher.run(arrival=[0, 0], prompt_tokens=[1, 1], output_tokens=[4, 4], **targets)


# --- the definition, by hand ------------------------------------------------------------------

def test_tpot_of_each_request_by_hand():
    res = _preempted_pair(itl_target=1, tpot_target=1)
    np.testing.assert_array_equal(res.first_token, [1, 1])
    np.testing.assert_array_equal(res.finish, [4, 6])
    np.testing.assert_array_equal(res.preemptions, [0, 1])
    # TPOT = (e2e latency - TTFT) / (output - 1): (4 - 1) / 3 and (6 - 1) / 3; the per-request
    # ``itl`` is that mean gap (no separate per-request TPOT variable)
    tpot = (res.latency - res.ttft) / (res.output_tokens - 1)
    np.testing.assert_array_equal(tpot, [1.0, 5 / 3])
    np.testing.assert_array_equal(res.itl, tpot)
    # over requests: mean 4/3; linear percentiles between 1 and 5/3 (numpy's, as vLLM's)
    assert res.mean_tpot.item() == pytest.approx(4 / 3, rel=1e-15)
    for q in (50, 90, 95, 99):
        assert res[f"p{q}_tpot"].item() == pytest.approx(1 + q / 100 * 2 / 3, rel=1e-15)
    # the older names of the same per-request mean gap give the same numbers
    assert res.mean_tpot.item() == res.mean_itl.item()
    assert res.p99_tpot.item() == res.p99_itl.item()
    # every gap: 1, 1, 1 (A) and 1, 3, 1 (B): 5 of 6 within 1 tick; per request only A's mean
    assert res.token_itl_attainment.item() == pytest.approx(5 / 6, rel=1e-15)
    assert res.tpot_attainment.item() == 0.5
    assert res.mean_token_itl.item() == pytest.approx(8 / 6, rel=1e-15)
    assert res.p99_token_itl.item() == pytest.approx(3.0, rel=2e-3)     # the gap histogram
    assert res.slo_attainment.item() == 0.5          # goodput counts TPOT too: B misses
    assert res.attrs["tpot_target"] == 1.0


def test_tpot_spreads_a_stall_that_itl_counts_once():
    # target 2 ticks: B's stall of 3 is one gap over 2 (every-gap ITL misses it), but its mean
    # gap 5/3 is within 2 (TPOT meets it); target 1.5: both see B miss
    loose = _preempted_pair(itl_target=2, tpot_target=2)
    assert loose.token_itl_attainment.item() == pytest.approx(5 / 6, rel=1e-15)
    assert loose.tpot_attainment.item() == 1.0
    tight = _preempted_pair(tpot_target=1.5)
    assert tight.tpot_attainment.item() == 0.5


def test_one_token_requests_have_no_tpot_and_rejected_ones_miss():
    # One slot, all at 0: A (5 tokens) at 0-5, B (1 token) at 5-6, C (3 tokens) at 6-9; D can
    # never fit the 12-token budget (20 + 5) and is rejected on arrival.
    batcher = ContinuousBatcher(max_num_seqs=1, kv_budget_tokens=12, admission="reserve")
    res = batcher.run(arrival=[0, 0, 0, 0], prompt_tokens=[0, 0, 0, 20],
                      output_tokens=[5, 1, 3, 5], tpot_target=0.5)
    np.testing.assert_array_equal(res.finish[:3], [5, 6, 9])
    assert list(res.status.values) == ["completed"] * 3 + ["rejected"]
    np.testing.assert_array_equal(res.itl[:3], [1.0, np.nan, 1.0])
    # B is left out of TPOT's statistics (vLLM: ``if output_len > 1``) ...
    assert res.mean_tpot.item() == 1.0 and res.p50_tpot.item() == 1.0
    # ... and of its attainment's denominator: A, C and the rejected D have a TPOT target to
    # meet; none does at 0.5 ticks, so the share is 0 of 3
    assert res.tpot_attainment.item() == 0.0
    # goodput counts B as meeting the TPOT target (vLLM counts its TPOT as 0 there): 1 of 4
    assert res.slo_attainment.item() == 0.25
    met = batcher.run(arrival=[0, 0, 0, 0], prompt_tokens=[0, 0, 0, 20],
                      output_tokens=[5, 1, 3, 5], tpot_target=1.0)
    assert met.tpot_attainment.item() == pytest.approx(2 / 3, rel=1e-15)   # D misses
    assert met.slo_attainment.item() == 0.75


def test_no_target_counts_every_completed_request_with_a_tpot():
    res = _preempted_pair()
    assert res.tpot_attainment.item() == 1.0 and res.attrs["tpot_target"] == "none"
    only_one_token = ContinuousBatcher(max_num_seqs=2).run(
        arrival=[0, 0], prompt_tokens=[3, 3], output_tokens=[1, 1], tpot_target=0.1)
    assert only_one_token.tpot_attainment.item() == 1.0     # none has a TPOT: nothing missed
    assert math.isnan(only_one_token.mean_tpot.item())
    assert math.isnan(only_one_token.p50_tpot.item())


# --- the summaries vllm bench serve prints ------------------------------------------------------

def _bench_serve(res):
    """vLLM's ``calculate_metrics`` on a single run's per-request Dataset [s, requests/s,
    tokens/s], with the run's makespan as its duration."""
    done = res.status.values == "completed"
    out = res.output_tokens.values[done]
    latency, ttft = res.latency.values[done], res.ttft.values[done]
    tpots = [(e - t) / (n - 1) for e, t, n in zip(latency, ttft, out) if n > 1]
    duration = res.makespan.item()
    return {"mean_tpot": np.mean(tpots), "tpots": tpots, "mean_ttft": np.mean(ttft),
            "median_ttft": np.median(ttft), "mean_e2el": np.mean(latency),
            "median_e2el": np.median(latency), "request_throughput": done.sum() / duration,
            "output_throughput": out.sum() / duration}


@pytest.mark.parametrize("clock", ["tick", "roofline"])
def test_summaries_are_vllm_bench_serve_statistics(clock):
    spec = WorkloadSpec(300, output=LogNormal(60, 1.0), prompt=LogNormal(400, 0.5),
                        arrival=Poisson(0.2 if clock == "tick" else 20.0))
    arrival, prompt, output = spec.draw(np.random.default_rng(11))[:3]
    output = np.where(np.arange(output.size) % 7 == 0, 1, output)     # some one-token requests
    keywords = {"clock": clock} if clock == "tick" else {
        "clock": clock, "model": catalog.model(MODEL), "gpu": catalog.gpu(GPU)}
    batcher = ContinuousBatcher(max_num_seqs=16, kv_budget_tokens=20_000, block_size=16,
                                **keywords)
    res = batcher.run(arrival=arrival, prompt_tokens=prompt, output_tokens=output)
    vllm = _bench_serve(res)
    assert res.mean_tpot.item() == pytest.approx(vllm["mean_tpot"], rel=1e-12)
    for q in (50, 90, 95, 99):
        assert res[f"p{q}_tpot"].item() == pytest.approx(np.percentile(vllm["tpots"], q),
                                                         rel=1e-12)
    assert res.mean_ttft.item() == pytest.approx(vllm["mean_ttft"], rel=1e-12)
    assert res.p50_ttft.item() == pytest.approx(vllm["median_ttft"], rel=1e-12)
    assert res.mean_latency.item() == pytest.approx(vllm["mean_e2el"], rel=1e-12)
    assert res.p50_latency.item() == pytest.approx(vllm["median_e2el"], rel=1e-12)
    assert res.request_throughput.item() == pytest.approx(vllm["request_throughput"], rel=1e-12)
    assert res.throughput.item() == pytest.approx(vllm["output_throughput"], rel=1e-12)
    # the same rows through run_replicates and a Monte Carlo give the same numbers
    rows = run_replicates(batcher, arrival[None], prompt[None], output[None],
                          variables=TPOT_FAMILY, as_dataset=False)
    for name in TPOT_FAMILY:
        assert rows[name][0] == res[name].item(), name


def test_monte_carlo_and_run_replicates_take_the_tpot_target():
    spec = WorkloadSpec(100, output=LogNormal(40, 1.0), prompt=LogNormal(50, 0.5),
                        arrival=Poisson(0.5))
    batcher = ContinuousBatcher(max_num_seqs=4, kv_budget_tokens=600, block_size=4)
    mc = monte_carlo(spec, batcher, replicates=3, seed=4, tpot_target=1.5, parallel=False)
    assert mc.attrs["tpot_target"] == 1.5
    draws = [spec.draw(np.random.default_rng(rk.batching.replicate_seed(4, r)))
             for r in range(3)]
    for r, (arrival, prompt, output, *_) in enumerate(draws):
        res = batcher.run(arrival=arrival, prompt_tokens=prompt, output_tokens=output,
                          tpot_target=1.5)
        timed = res.output_tokens.values > 1
        met = (res.status.values == "completed") & (res.itl.values <= 1.5)
        share = met[timed].sum() / timed.sum()
        assert mc.tpot_attainment.isel(policy=0, replicate=r).item() == share
        assert res.tpot_attainment.item() == share


@pytest.mark.parametrize("value", [0, -0.1, math.inf, -math.inf, math.nan, 1e300])
def test_slo_refuses_bad_tpot_naming_it(value):
    with pytest.raises(ValueError, match="tpot"):
        rk.SLO(tpot=value)


@pytest.mark.parametrize("value", ["0.05", True, [0.05], object()])
def test_slo_refuses_a_tpot_that_is_not_a_number(value):
    with pytest.raises(TypeError, match="tpot"):
        rk.SLO(tpot=value)


def test_simulator_refuses_bad_tpot_target_naming_it():
    batcher = ContinuousBatcher(max_num_seqs=2)
    with pytest.raises(ValueError, match="tpot_target"):
        batcher.run(arrival=[0], prompt_tokens=[1], output_tokens=[3], tpot_target=-1)
    with pytest.raises(ValueError, match="tpot_target"):
        run_replicates(batcher, [[0.0]], [[1]], [[3]], tpot_target=math.nan)


def test_slo_targets_keep_their_order_and_tpot_is_one_more():
    slo = rk.SLO(ttft=1.0, itl=0.05, tpot=0.04, e2e=30, quantile=0.99)
    assert slo.targets == {"ttft": 1.0, "itl": 0.05, "e2e": 30.0, "tpot": 0.04}
    assert rk.SLO(ttft=1.0, itl=0.05).targets == {"ttft": 1.0, "itl": 0.05}
    assert "tpot" in capacity.BINDINGS


# --- the planner ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def prefill_stalls():
    """Long prompts, short outputs: bursty gaps. Each 8,000-token prefill (about 0.13 s for an
    8B model on an H100, whole prompts in one step) stalls every decoding sequence for one gap,
    against decode steps of 5-8 ms. A request that sees k stalls among its 199 gaps has an
    every-gap share of k / 199 over a 12 ms target, which misses 5 % from k ≈ 10, and a TPOT of
    about 6 ms + k × 130 ms / 199, over 12 ms from k ≈ 5: a p95 TPOT of 12 ms binds at a lower
    rate than a p95 every-gap ITL of 12 ms. Timed on the ideal roofline, whose step times these
    are."""
    batcher = ContinuousBatcher(max_num_seqs=64, model=catalog.model(MODEL),
                                gpu=catalog.gpu(GPU), clock="roofline", engine=rk.IDEAL)
    draws = capacity.draw_requests(rk.Traffic(1.0, 8000, 200), replicates=3, requests=200,
                                   seed=0)
    return batcher, draws


def test_slo_binds_on_tpot_where_itl_does_not(prefill_stalls):
    batcher, draws = prefill_stalls
    x, q, rtol = 0.012, 0.95, 0.02
    itl_only = capacity.max_rate(batcher, rk.SLO(itl=x, quantile=q), draws, rtol=rtol)
    both = capacity.max_rate(batcher, rk.SLO(itl=x, tpot=x, quantile=q), draws, rtol=rtol)
    assert set(itl_only["binding"]) == {"itl"}
    assert set(both["binding"]) == {"tpot"}
    assert (both["max_rate"] * (1 + rtol) < itl_only["max_rate"]).all()
    arrival, prompt, output = draws
    for r in range(arrival.shape[0]):
        row = slice(r, r + 1)

        def shares(rate):
            ds = run_replicates(batcher, arrival[row] / rate, prompt[row], output[row],
                                itl_target=x, tpot_target=x, as_dataset=False,
                                variables=("token_itl_attainment", "tpot_attainment"))
            return ds["token_itl_attainment"][0], ds["tpot_attainment"][0]

        # at the rate found both hold; just above it TPOT fails while every gap still holds
        at, above = shares(both["max_rate"][r]), shares(both["max_rate"][r] * (1 + rtol))
        assert at[0] >= q and at[1] >= q
        assert above[1] < q and above[0] >= q
        # at the every-gap search's rate, the gaps hold and the requests' TPOT does not
        itl_rate = shares(itl_only["max_rate"][r])
        assert itl_rate[0] >= q and itl_rate[1] < q


def test_a_tpot_slo_alone_searches_like_any_target(prefill_stalls):
    batcher, draws = prefill_stalls
    found = capacity.max_rate(batcher, rk.SLO(tpot=0.012), draws)
    assert set(found["binding"]) == {"tpot"}
    assert (found["max_rate"] > 0).all()
    loose = capacity.max_rate(batcher, rk.SLO(tpot=0.05), draws)
    assert (loose["max_rate"] >= found["max_rate"]).all()


def test_load_curve_lies_beside_a_bench_serve_sweep():
    traffic = rk.Traffic(2.0, LogNormal(1000, 0.5), LogNormal(200, 0.5))
    slo = rk.SLO(ttft=0.5, tpot=0.01)
    # the fitted knobs (no draws): the curve is then one batcher's run_replicates
    curve = rk.planning.load_curve(traffic, slo, model=MODEL, gpu=GPU, rates=[1.0, 6.0],
                                   replicates=2, requests=60, seed=3, engine_draws=0)
    names = ("mean_ttft", "p50_ttft", "mean_tpot", "p50_tpot", "p95_tpot", "p99_tpot",
             "mean_token_itl", "p50_token_itl", "mean_latency", "p50_latency",
             "request_throughput", "throughput", "tpot_attainment")
    for name in names:
        assert curve[name].dims == ("request_rate", "replicate"), name
        assert np.isfinite(curve[name].values).all(), name
    assert curve["mean_tpot"].attrs["units"] == "s"
    assert curve["throughput"].attrs["units"] == "tokens/s"
    assert curve.attrs["tpot_target"] == 0.01
    # the curve's numbers are run_replicates' on the same draws
    draws = capacity.draw_requests(traffic, 2, 60, 3)
    batcher = ContinuousBatcher(max_num_seqs=256, model=catalog.model(MODEL),
                                gpu=catalog.gpu(GPU), clock="roofline",
                                kv_budget_tokens=int(curve.attrs["kv_budget_tokens"]))
    direct = run_replicates(batcher, draws[0] / 6.0, draws[1], draws[2], ttft_target=0.5,
                            tpot_target=0.01, as_dataset=False)
    for name in names:
        np.testing.assert_array_equal(curve[name].sel(request_rate=6.0).values, direct[name])
    # more load: slower tokens, never fewer completed per second here
    assert (curve["mean_tpot"].sel(request_rate=6.0) >
            curve["mean_tpot"].sel(request_rate=1.0)).all()


def test_plan_reports_tpot_and_the_cli_takes_it(capsys):
    from rooflinekit.cli.main import main
    code = main(["plan", MODEL, "--gpus", GPU, "--rate", "2", "--prompt-mean", "8000",
                 "--output-mean", "200", "--itl", "0.03", "--tpot", "0.012", "--replicates",
                 "2", "--requests", "100", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["configurations"][0]["binding"] == "tpot"
    # (an ITL target looser than TPOT's: every gap, prompt-carrying steps' too, against each
    # request's mean gap)
    ds = rk.plan(rk.Traffic(2.0, 8000, 200), rk.SLO(itl=0.03, tpot=0.012), models=MODEL,
                 gpus=GPU, replicates=2, requests=100)
    assert str(ds["binding"].item()) == "tpot"
    assert ds.attrs["tpot_target"] == 0.012
    for q in (50, 95, 99):
        assert ds[f"p{q}_tpot"].attrs["units"] == "s"
        assert 0 < ds[f"p{q}_tpot"].item() < math.inf
    # at the operating rate the fleet meets the target it was sized for (p95 over requests)
    assert ds["p95_tpot"].item() <= 0.012 * 1.05


def test_cli_plan_refuses_a_bad_tpot(capsys):
    from rooflinekit.cli.main import main
    with pytest.raises(SystemExit) as stop:
        main(["plan", MODEL, "--gpus", GPU, "--rate", "2", "--prompt-mean", "500",
              "--output-mean", "100", "--tpot", "0", "--replicates", "2", "--requests", "50"])
    assert stop.value.code == 2
    assert "--tpot" in capsys.readouterr().err


def test_targets_text_names_tpot():
    from rooflinekit.cli.plan import targets_text
    assert targets_text(rk.SLO(ttft=1, tpot=0.04)) == "TTFT 1 s, TPOT 0.04 s"
