"""A closed-loop client: ``load_curve(concurrencies=...)`` and ``--max-concurrency`` runs.

``vllm bench serve --max-concurrency C`` (and AIPerf, SGLang's bench_serving) keep ``C``
requests in flight, sending the next the moment one completes. Checked from first principles:
one request in flight is served alone, exactly as an open-loop request that finds the server
idle; Little's law ties the closed loop's throughput to its latency and its concurrency; the
client never waits in a queue. Then the reader and the fit to such runs.
"""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rooflinekit as rk
from rooflinekit.calibrate import read_vllm_serve_sweep
from rooflinekit.planning import fit_under_load, load_curve
from rooflinekit.profiles import Calibration
from rooflinekit.workloads import Constant

MODEL, GPU = "Llama-3.1-8B", "H100-SXM-80GB"
TRAFFIC = rk.Traffic(1.0, Constant(500), Constant(100))
SLO = rk.SLO(ttft=10.0)


def _curve(**kwargs):
    return load_curve(TRAFFIC, SLO, model=MODEL, gpu=GPU, replicates=2, requests=200, **kwargs)


def test_one_request_in_flight_is_served_alone_as_an_idle_servers_request():
    closed = _curve(concurrencies=[1])
    # an open loop so slow that every request finds the server idle (mean gap 1,000 s)
    idle = _curve(rates=[1e-3])
    for name in ("mean_ttft", "p50_ttft", "mean_tpot", "mean_latency", "p99_ttft"):
        np.testing.assert_allclose(closed[name].values[0], idle[name].values[0], rtol=1e-9,
                                   err_msg=name)
    assert closed.attrs["client"] == "closed loop" and idle.attrs["client"] == "open loop"
    assert closed["concurrency"].values.tolist() == [1]
    assert closed["concurrency"].attrs["units"] == "1"


def test_littles_law_holds_the_concurrency():
    """In a closed loop with no think time, requests in flight = request throughput × mean
    time in the system (Little, Oper. Res. 9(3), 1961): C = X · E[latency]. The run starts and
    ends with fewer in flight (all start together; the last drain), so within 10 %."""
    for c in (4, 32):
        ds = load_curve(TRAFFIC, SLO, model=MODEL, gpu=GPU, replicates=1, requests=600,
                        concurrencies=[c], engine=rk.IDEAL)
        x = float(ds["request_throughput"].values[0, 0])
        latency = float(ds["mean_latency"].values[0, 0])
        assert x * latency == pytest.approx(c, rel=0.10), c


def test_above_the_kv_caches_concurrency_the_server_queue_counts():
    """A KV cache that holds about 70 of the requests (a quarter of an H100's 80 GiB, 21.5 GB,
    less 16.1 GB of bf16 weights: 5.4 GB at 2·32·8·128·2 = 128 KiB a token, 41K tokens, for
    requests of 500-600 tokens) against 128 clients: the other requests wait in the server's
    queue, and the clients see it. Little's law (C = X · E[latency], Little, Oper. Res. 9(3),
    1961) then still holds within 10 % because the latency counts from the client's send;
    counted from admission it gives the requests the server holds, about 70."""
    c = 128
    ds = load_curve(TRAFFIC, SLO, model=MODEL, gpu=GPU, replicates=1, requests=1000,
                    concurrencies=[c], engine=rk.IDEAL, gpu_memory_utilization=0.25)
    x = float(ds["request_throughput"].values[0, 0])
    latency = float(ds["mean_latency"].values[0, 0])
    queue = float(ds["mean_queue_delay"].values[0, 0])
    assert x * latency == pytest.approx(c, rel=0.10)
    assert x * (latency - queue) == pytest.approx(41_300 / 575, rel=0.15)
    assert float(ds["mean_ttft"].values[0, 0]) > queue > 0.0


def test_clients_above_max_num_seqs_wait_in_the_servers_queue():
    """32 clients against a server of 8 sequences (vllm bench serve --max-concurrency above
    the server's --max-num-seqs): 8 run, 24 wait. Little's law (Little, Oper. Res. 9(3),
    1961) within 10 %: C = X · E[latency] from the clients' sends, and the server's 8 =
    X · E[latency - queue delay]."""
    ds = load_curve(TRAFFIC, SLO, model=MODEL, gpu=GPU, replicates=1, requests=600,
                    concurrencies=[32], max_num_seqs=8, engine=rk.IDEAL)
    x = float(ds["request_throughput"].values[0, 0])
    latency = float(ds["mean_latency"].values[0, 0])
    queue = float(ds["mean_queue_delay"].values[0, 0])
    assert x * latency == pytest.approx(32, rel=0.10)
    assert x * (latency - queue) == pytest.approx(8, rel=0.10)
    assert ds.attrs["max_num_seqs"] == 8


def test_clients_are_a_closed_loops_own():
    from rooflinekit.batching import ContinuousBatcher, run_replicates
    rows = np.zeros((1, 4)), np.full((1, 4), 4), np.full((1, 4), 3)
    with pytest.raises(ValueError, match="clients is the closed-loop client's concurrency"):
        run_replicates(ContinuousBatcher(max_num_seqs=2), *rows, clients=4)
    with pytest.raises(ValueError, match="clients"):
        run_replicates(ContinuousBatcher(max_num_seqs=2), *rows, closed_loop=True, clients=0)


def test_the_client_waits_less_than_a_step_and_more_in_flight_is_slower_per_token():
    # the server holds every client's request: a request waits for the next step at most
    ds = _curve(concurrencies=[1, 8, 64])
    assert (ds["mean_queue_delay"].values <= ds["mean_tpot"].values).all()
    assert (ds["mean_queue_delay"].values[0] == 0.0).all()
    tpot = ds["mean_tpot"].median("replicate").values
    throughput = ds["throughput"].median("replicate").values
    assert tpot[0] < tpot[1] < tpot[2]
    assert throughput[0] < throughput[1] < throughput[2]


@pytest.mark.parametrize("kwargs, match", [
    (dict(), "give rates .* or concurrencies"),
    (dict(rates=[1.0], concurrencies=[2]), "not both"),
    (dict(concurrencies=[0]), "concurrencies must be whole numbers from 1"),
    (dict(concurrencies=[1.5]), "concurrencies must be whole numbers"),
    (dict(concurrencies=[math.nan]), "concurrencies must not contain NaN"),
])
def test_bad_concurrencies_are_refused_before_work(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _curve(**kwargs)


def _closed_runs(engine, concurrencies, seed=7, requests=300):
    """``vllm bench serve --max-concurrency C --request-rate inf`` result dicts of
    ``engine``: ``requests`` requests of 1,000 prompt and 200 output tokens each."""
    out = []
    for c in concurrencies:
        ds = load_curve(rk.Traffic(1.0, Constant(1000), Constant(200)), SLO, model=MODEL,
                        gpu=GPU, concurrencies=[c], engine=engine, replicates=3,
                        requests=requests, seed=seed)
        out.append({"request_rate": "inf", "max_concurrency": c, "completed": requests,
                    "total_input_tokens": 1000 * requests,
                    "total_output_tokens": 200 * requests,
                    "mean_ttft_ms": float(np.nanmedian(ds["mean_ttft"])) * 1e3,
                    "mean_tpot_ms": float(np.nanmedian(ds["mean_tpot"])) * 1e3})
    return out


def test_a_known_step_overhead_comes_back_from_concurrency_runs():
    base = rk.engine_profile("vllm", GPU)
    truth = Calibration(prefill=dict(base.prefill),
                        decode={**base.decode, "step_overhead": 0.004}, source="truth")
    runs = _closed_runs(truth, [4, 32])
    fit = fit_under_load(runs, model=MODEL, gpu=GPU)
    assert fit.calibration.decode["step_overhead"] == pytest.approx(0.004, rel=0.15)
    assert fit.table.attrs["tpot_error"] < 5
    assert list(fit.table["concurrency"].values) == [4, 32]
    assert "requests in flight" in fit.calibration.label


def test_a_known_host_time_per_sequence_comes_back_from_concurrency_runs():
    # 60 µs a decode token: 0.24 ms a step at 4 in flight, 3.8 ms at 64; the runs at two
    # concurrencies tell it from the profile's fixed step overhead, which stays as shipped
    base = rk.engine_profile("vllm", GPU)
    truth = Calibration(prefill=dict(base.prefill),
                        decode={**base.decode, "sequence_overhead": 6e-5}, source="truth")
    runs = _closed_runs(truth, [4, 64])
    # replayed on the runs' own draws: what is left is the fit's search, not sampling
    fit = fit_under_load(runs, model=MODEL, gpu=GPU, replicates=3, requests=300, seed=7,
                         fit=("sequence_overhead", "frontend_latency"))
    assert fit.calibration.decode["sequence_overhead"] == pytest.approx(6e-5, rel=0.05)
    assert fit.calibration.decode["step_overhead"] == base.decode["step_overhead"]
    assert fit.table.attrs["tpot_error"] < 5


def test_a_short_closed_run_is_replayed_with_its_own_requests():
    # 64 prompts at 32 in flight: the server fills and drains for half the run, which the
    # means hold; replayed on the run's own 64 (not 300), the fit on the same draws finds the
    # truth again
    base = rk.engine_profile("vllm", GPU)
    truth = Calibration(prefill=dict(base.prefill),
                        decode={**base.decode, "step_overhead": 0.004}, source="truth")
    runs = _closed_runs(truth, [8, 32], requests=64)
    fit = fit_under_load(runs, model=MODEL, gpu=GPU, replicates=3, seed=7)
    assert fit.calibration.decode["step_overhead"] == pytest.approx(0.004, rel=0.02)
    assert fit.table.attrs["tpot_error"] < 1


def test_a_run_of_fewer_prompts_than_load_curves_least_is_replayed_on_ten():
    # 5 prompts at 2 and 4 in flight: replayed on load_curve's least 10 requests, not refused
    runs = [{"request_rate": "inf", "max_concurrency": c, "completed": 5,
             "total_input_tokens": 5000, "total_output_tokens": 1000, "mean_ttft_ms": 40.0,
             "mean_tpot_ms": 8.0} for c in (2, 4)]
    fit = fit_under_load(runs, model=MODEL, gpu=GPU, replicates=1)
    assert list(fit.table["concurrency"].values) == [2, 4]
    assert np.isfinite(fit.table["fitted_tpot"].values).all()


def test_the_reader_takes_concurrency_runs_and_refuses_mixtures():
    runs = _closed_runs(rk.IDEAL, [2, 8])
    read = read_vllm_serve_sweep(runs)
    assert [r["max_concurrency"] for r in read] == [2, 8]
    assert all(math.isinf(r["request_rate"]) for r in read)
    open_run = {**runs[0], "request_rate": 2.0, "max_concurrency": None}
    with pytest.raises(ValueError, match="mix runs at request rates"):
        read_vllm_serve_sweep([open_run, runs[1]])
    with pytest.raises(ValueError, match="finite 'request_rate'.*capped by 'max_concurrency'"):
        read_vllm_serve_sweep([{**runs[0], "request_rate": 2.0}, runs[1]])
    with pytest.raises(ValueError, match="'max_concurrency' must be a whole number"):
        read_vllm_serve_sweep([{**runs[0], "max_concurrency": 0}, runs[1]])
    with pytest.raises(ValueError, match="two or more concurrencies"):
        read_vllm_serve_sweep([runs[0], runs[0]])
    with pytest.raises(ValueError, match="burst"):          # inf without a concurrency
        read_vllm_serve_sweep([{**runs[0], "max_concurrency": None}, runs[1]])


@st.composite
def _rows(draw):
    """One replicate row: gaps, prompts and outputs of up to 24 requests, in ticks."""
    n = draw(st.integers(1, 24))
    gaps = draw(st.lists(st.integers(0, 8), min_size=n, max_size=n))
    prompt = draw(st.lists(st.integers(0, 40), min_size=n, max_size=n))
    output = draw(st.lists(st.integers(1, 60), min_size=n, max_size=n))
    return (np.cumsum(gaps).astype(float)[None], np.array(prompt)[None],
            np.array(output)[None])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=_rows(), slots=st.integers(1, 8))
def test_a_closed_loops_clocks_are_the_open_loops_less_the_queue(rows, slots):
    """Counting from admission takes each completed request's queue wait off its TTFT and its
    latency and nothing else: the mean TTFT is the open loop's less its mean queue delay
    (exactly, in ticks), the client waits for nothing, no request is lost, and the steps —
    TPOT, tokens — are the same run's."""
    from rooflinekit.batching import ContinuousBatcher, run_replicates
    batcher = ContinuousBatcher(max_num_seqs=slots)
    arrival, prompt, output = rows
    opened = run_replicates(batcher, arrival, prompt, output)
    closed = run_replicates(batcher, arrival, prompt, output, closed_loop=True)
    for name, less in (("mean_ttft", "mean_queue_delay"), ("mean_latency", "mean_queue_delay")):
        np.testing.assert_allclose(closed[name].values,
                                   opened[name].values - opened[less].values, atol=1e-9)
    assert (closed["mean_queue_delay"].values == 0).all()
    assert (closed["n_completed"].values == opened["n_completed"].values).all()
    assert (closed["n_completed"].values + closed["n_rejected"].values == arrival.shape[1]).all()
    np.testing.assert_array_equal(closed["mean_tpot"].values, opened["mean_tpot"].values)


def test_clients_started_together_wait_for_their_wave():
    """``clients_start="together"``: every client's first request at once, as ``vllm bench
    serve --max-concurrency`` starts them. One client is the same either way (it is served
    alone); 32 clients of equal lengths share their wave's prefills, so their mean TTFT is
    above the apart start's; Little's law (C = X · E[latency], Little, Oper. Res. 9(3), 1961)
    holds within 10 % for both."""
    one = {start: _curve(concurrencies=[1], clients_start=start)
           for start in ("apart", "together")}
    for name in ("mean_ttft", "mean_tpot", "mean_latency"):
        np.testing.assert_allclose(one["together"][name].values, one["apart"][name].values,
                                   rtol=1e-9, err_msg=name)
    many = {start: load_curve(TRAFFIC, SLO, model=MODEL, gpu=GPU, replicates=1, requests=600,
                              concurrencies=[32], engine=rk.IDEAL, clients_start=start)
            for start in ("apart", "together")}
    assert float(many["together"]["mean_ttft"].squeeze()) > \
        float(many["apart"]["mean_ttft"].squeeze())
    for ds in many.values():
        x = float(ds["request_throughput"].squeeze())
        assert x * float(ds["mean_latency"].squeeze()) == pytest.approx(32, rel=0.10)
    assert many["together"].attrs["clients_start"] == "together"
    assert "clients_start" not in _curve(rates=[1.0]).attrs
    with pytest.raises(ValueError, match="clients_start"):
        _curve(concurrencies=[4], clients_start="staggered")
