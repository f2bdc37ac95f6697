"""Queueing theory: the continuous batcher as an M/D/1 and an M/M/c queue.

With the tick clock, no prompt, unlimited KV and ``c`` slots, a request of D output tokens holds
a slot for exactly D ticks, and FIFO admission makes the batcher a c-server queue. Its mean queue
delay must match Pollaczek–Khinchine (M/D/1) and Erlang C (M/M/c), written here from first
principles. Two discrete-time effects are corrected for: a request that finds a free slot waits
until the next tick (half a tick on average, with the probability of finding one), and geometric
service lengths approximate exponential ones.
"""

import math

import numpy as np
import pytest

from rooflinekit.batching import ContinuousBatcher, monte_carlo
from rooflinekit.workloads import Constant, Geometric, Poisson, WorkloadSpec


def _mean_delay(spec, slots, replicates, seed):
    ds = monte_carlo(spec, ContinuousBatcher(max_num_seqs=slots, clock="tick"),
                     replicates=replicates, seed=seed)
    delays = ds["mean_queue_delay"].squeeze().values
    assert (ds["n_completed"] == spec.n_requests).all()        # nothing lost or refused
    return delays.mean(), delays.std(ddof=1) / math.sqrt(delays.size)


def test_md1_mean_queue_delay_is_pollaczek_khinchine():
    # Pollaczek–Khinchine for deterministic service D at load rho = λD:
    # Wq = rho · D / (2 (1 − rho)); an arrival finding the server idle (probability 1 − rho)
    # waits half a tick on average for the next tick.
    service, rho = 100, 0.6
    rate = rho / service
    spec = WorkloadSpec(4000, output=Constant(service), arrival=Poisson(rate))
    mean, se = _mean_delay(spec, slots=1, replicates=16, seed=11)
    expected = rho * service / (2 * (1 - rho)) + (1 - rho) * 0.5
    # within 4 standard errors of the replicates' mean, plus 3% for the start from an empty queue
    assert abs(mean - expected) < 4 * se + 0.03 * expected, (mean, se, expected)


def _erlang_c(c, a):
    """Probability an arrival waits in an M/M/c queue with offered load a = λ/μ (Erlang C)."""
    top = a ** c / math.factorial(c) * c / (c - a)
    return top / (sum(a ** k / math.factorial(k) for k in range(c)) + top)


@pytest.mark.parametrize("slots, rho", [(4, 0.7), (8, 0.8)])
def test_mmc_mean_queue_delay_is_erlang_c(slots, rho):
    # Erlang C: Wq = C(c, a) / (c μ − λ), with a = λ/μ and μ = 1/mean service.
    mean_service = 40.0
    rate = rho * slots / mean_service
    spec = WorkloadSpec(4000, output=Geometric(mean_service), arrival=Poisson(rate))
    mean, se = _mean_delay(spec, slots=slots, replicates=16, seed=5)
    a = rate * mean_service
    expected = _erlang_c(slots, a) / (slots / mean_service - rate)
    # geometric service on whole ticks stands in for exponential: 6% besides Monte Carlo error
    assert abs(mean - expected) < 4 * se + 0.06 * expected, (mean, se, expected)


def test_geometric_service_mean():
    # the service lengths the M/M/c test uses have the stated mean (a check on the stand-in)
    draws = Geometric(40.0).sample(np.random.default_rng(0), 200_000)
    assert draws.mean() == pytest.approx(40.0, rel=0.01)
