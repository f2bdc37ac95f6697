"""Prompts the server has cached before they arrive: ``load_curve(cached_prompts=)`` and
``run_replicates(arrived_kv_tokens=)``.

A benchmark client's warm-up request sends the run's first prompt before the run, and a seeded
client run again on the same server sends the earlier run's prompts first: with a prefix cache
(SGLang's radix cache, vLLM V1's), those requests compute only their last prompt token. Checked
against the batcher's own per-workload input (``ContinuousBatcher.run(arrived_kv_tokens=)``)
and, at one request in flight, from first principles: each request is served alone, so the mean
TTFT is the cached and the uncached requests' TTFTs weighed by their counts.
"""

import numpy as np
import pytest

import rooflinekit as rk
from rooflinekit.batching import ContinuousBatcher, StaticBatcher, run_replicates
from rooflinekit.planning import load_curve
from rooflinekit.workloads import Constant, Workload

MODEL, GPU = "Llama-3.1-8B", "H100-SXM-80GB"
PROMPT, OUTPUT, REQUESTS = 4000, 20, 20
TRAFFIC = rk.Traffic(1.0, Constant(PROMPT), Constant(OUTPUT))
SLO = rk.SLO(ttft=10.0)


def _curve(cached, **kwargs):
    return load_curve(TRAFFIC, SLO, model=MODEL, gpu=GPU, concurrencies=[1], replicates=1,
                      requests=REQUESTS, cached_prompts=cached, **kwargs)


def test_no_cached_prompt_is_the_default_to_the_bit():
    default = load_curve(TRAFFIC, SLO, model=MODEL, gpu=GPU, concurrencies=[1, 4],
                         replicates=2, requests=REQUESTS)
    zero = load_curve(TRAFFIC, SLO, model=MODEL, gpu=GPU, concurrencies=[1, 4], replicates=2,
                      requests=REQUESTS, cached_prompts=0)
    for name in default.data_vars:
        np.testing.assert_array_equal(default[name].values, zero[name].values, err_msg=name)
    assert zero.attrs["cached_prompts"] == 0


def test_one_in_flight_weighs_the_cached_and_the_computed_prompts_by_their_counts():
    # one request in flight is served alone: the first k requests each take the TTFT of a
    # fully cached prompt (every request cached), the others that of a computed one (none)
    computed = float(_curve(0)["mean_ttft"].values[0, 0])
    hit = float(_curve(REQUESTS)["mean_ttft"].values[0, 0])
    # a prompt of one token is computed as fast as a cached one's last token, or faster (its
    # attention reads no earlier context)
    one_token = float(load_curve(rk.Traffic(1.0, Constant(1), Constant(OUTPUT)), SLO,
                                 model=MODEL, gpu=GPU, concurrencies=[1], replicates=1,
                                 requests=REQUESTS)["mean_ttft"].values[0, 0])
    assert one_token <= hit < computed / 2
    for k in (1, 7):
        ds = _curve(k)
        expected = (k * hit + (REQUESTS - k) * computed) / REQUESTS
        np.testing.assert_allclose(float(ds["mean_ttft"].values[0, 0]), expected, rtol=1e-9)
        assert ds.attrs["cached_prompts"] == k
    # the decode is the same: a cached prompt's KV is held as a computed one's
    np.testing.assert_allclose(_curve(7)["mean_tpot"].values, _curve(0)["mean_tpot"].values,
                               rtol=1e-9)


def test_cached_prompts_shorten_a_first_wave_of_clients_started_together():
    # 8 clients sending 4,000-token prompts at once: every prompt of the first wave queues for
    # the ones before it, unless the server had them cached
    kwargs = dict(model=MODEL, gpu=GPU, concurrencies=[8], replicates=1, requests=REQUESTS,
                  clients_start="together")
    cold = load_curve(TRAFFIC, SLO, **kwargs)
    warm = load_curve(TRAFFIC, SLO, cached_prompts=8, **kwargs)
    assert float(warm["mean_ttft"].values[0, 0]) < 0.8 * float(cold["mean_ttft"].values[0, 0])


def test_run_replicates_takes_each_rows_arrived_kv_as_the_batcher_run_does():
    rng = np.random.default_rng(3)
    b = ContinuousBatcher(max_num_seqs=4, kv_budget_tokens=4_000, admission="paged",
                          max_num_batched_tokens=64)
    arrival = np.sort(rng.uniform(0, 50, size=(3, 12)), axis=1)
    prompt = rng.integers(1, 200, size=(3, 12))
    output = rng.integers(1, 30, size=(3, 12))
    arrived = np.where(rng.random((3, 12)) < 0.5, prompt, 0) // rng.integers(1, 3, (3, 12))
    ds = run_replicates(b, arrival, prompt, output, arrived_kv_tokens=arrived, parallel=False)
    plain = run_replicates(b, arrival, prompt, output, parallel=False)
    for r in range(3):
        one = b.run(Workload(arrival[r], prompt[r], output[r]), arrived_kv_tokens=arrived[r])
        for name in ("mean_ttft", "mean_latency", "throughput", "peak_kv_tokens"):
            assert float(ds[name].values[r]) == float(one[name].values), name
    assert (ds["mean_ttft"].values < plain["mean_ttft"].values).all()


@pytest.mark.parametrize("arrived, match", [
    (np.zeros((2, 3), np.int64), "shape"),
    (np.full((1, 3), 1.5), "whole numbers"),
    (np.array([[-1, 0, 0]]), r"\[0, prompt_tokens\]"),
    (np.array([[0, 0, 9]]), r"\[0, prompt_tokens\]"),
])
def test_run_replicates_refuses_bad_arrived_kv(arrived, match):
    with pytest.raises(ValueError, match=match):
        run_replicates(ContinuousBatcher(), [[0.0, 1.0, 2.0]], [[4, 4, 4]], [[2, 2, 2]],
                       arrived_kv_tokens=arrived)
    with pytest.raises(ValueError, match="continuous batching"):
        run_replicates(StaticBatcher(), [[0.0]], [[4]], [[2]], arrived_kv_tokens=[[0]])


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (REQUESTS + 1, ValueError),
                                        (2.5, ValueError), ("3", TypeError), (None, TypeError),
                                        (True, TypeError)])
def test_load_curve_refuses_bad_cached_prompts(bad, error):
    with pytest.raises(error, match="cached_prompts"):
        _curve(bad)
