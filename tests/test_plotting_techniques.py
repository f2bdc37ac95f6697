"""The serving techniques' figures draw what the library computes."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

import rooflinekit as rk
from rooflinekit.plotting import plot_prefix_caching, plot_speculative_speedup

M = rk.catalog.model("Llama-3.1-70B")
G = rk.catalog.gpu("H100-SXM-80GB")


def test_prefix_caching_draws_concurrency_and_ttft():
    shares = [0.0, 0.5, 0.9]
    ax = plot_prefix_caching(M, G, tp=4, context_length=8192, prompt_tokens=4000,
                             shares=shares)
    (line,) = ax.get_lines()
    np.testing.assert_array_equal(line.get_ydata(), [
        rk.max_concurrent_sequences(M, G, 8192, 4, shared_prefix_tokens=int(s * 8192))
        for s in shares])
    (ttft,) = ax.right.get_lines()
    np.testing.assert_allclose(ttft.get_ydata(), [
        rk.prefill_time(M, G, 4000, 4, cached_tokens=int(s * 4000)) * 1e3 for s in shares])


def test_speculative_speedup_draws_a_line_per_acceptance_and_the_break_even():
    ax = plot_speculative_speedup(M, G, tp=4, draft=0.05, batch_sizes=[1, 64, 512],
                                  acceptances=[0.6, 0.9])
    lines = ax.get_lines()
    assert len(lines) == 3
    np.testing.assert_allclose(lines[1].get_ydata(), rk.speculative_speedup(
        M, G, np.array([1, 64, 512]), 4096, 4, draft=0.05, acceptance=0.9))
    assert set(lines[2].get_ydata()) == {1.0}


def test_speculative_speedup_draws_the_engine_given():
    engine = rk.Engine(bandwidth_efficiency=0.7, step_overhead=2e-3)
    ax = plot_speculative_speedup(M, G, tp=4, draft=0.05, batch_sizes=[1, 64, 512],
                                  acceptances=[0.6, 0.9], engine=engine)
    np.testing.assert_allclose(ax.get_lines()[1].get_ydata(), rk.speculative_speedup(
        M, G, np.array([1, 64, 512]), 4096, 4, draft=0.05, acceptance=0.9, engine=engine))
    with pytest.raises(TypeError, match="engine"):
        plot_speculative_speedup(M, G, draft=0.05, engine={"step_overhead": 2e-3})
    with pytest.raises(TypeError, match="roofline_options"):
        plot_speculative_speedup(M, G, draft=0.05, roofline_options={"step_overhead": 2e-3})


@pytest.mark.parametrize("func, kwargs, exc", [
    (plot_prefix_caching, {"shares": [1.5]}, ValueError),
    (plot_prefix_caching, {"context_length": 0}, ValueError),
    (plot_prefix_caching, {"ax": "axes"}, TypeError),
    (plot_speculative_speedup, {"draft": 0.05, "acceptances": [-0.1]}, ValueError),
    (plot_speculative_speedup, {"draft": 0.05, "batch_sizes": [0]}, ValueError),
    (plot_speculative_speedup, {"draft": 2.0}, ValueError),
])
def test_bad_arguments_are_refused(func, kwargs, exc):
    with pytest.raises(exc):
        func(M, G, **kwargs)
