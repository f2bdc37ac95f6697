"""Workloads: explicit arrays, seeded distributions and arrival processes."""

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from rooflinekit.workloads import (AllAtOnce, Constant, Empirical, FixedInterval, Geometric,
                                   LogNormal, Mixture, Poisson, SharedPrefix, Uniform, Workload,
                                   WorkloadSpec, as_generator, guide_workload, short_and_long)


def test_guide_workload():
    # docs/conventions.md: 24 requests, i % 8 == 0 -> 400 tokens else 20, arrival (i // 4) * 10
    wl = guide_workload()
    assert wl.n_requests == 24
    assert (wl.output_tokens == 400).sum() == 3 and (wl.output_tokens == 20).sum() == 21
    np.testing.assert_array_equal(wl.arrival[::4], [0, 10, 20, 30, 40, 50])
    assert wl.arrival.dtype == np.float64 and wl.output_tokens.dtype == np.int64


@pytest.mark.parametrize("kind", ["list", "ndarray", "DataArray"])
def test_workload_input_kinds(kind):
    conv = {"list": list, "ndarray": np.asarray,
            "DataArray": lambda a: xr.DataArray(np.asarray(a), dims="request")}[kind]
    wl = Workload(conv([0, 1, 1]), conv([5, 0, 7]), conv([1, 2, 3]))
    np.testing.assert_array_equal(wl.prompt_tokens, [5, 0, 7])
    assert dict(wl).keys() == {"arrival", "prompt_tokens", "output_tokens", "priority"}
    np.testing.assert_array_equal(wl.priority, [0, 0, 0])


def test_workload_is_read_only():
    wl = guide_workload()
    with pytest.raises(ValueError):
        wl.output_tokens[0] = 1


@pytest.mark.parametrize("args, match", [
    (([0, 1], [1, -1], [1, 1]), "prompt_tokens must be >= 0"),
    (([0, 1], [1, 1], [0, 1]), "output_tokens must be >= 1"),
    (([1, 0], [1, 1], [1, 1]), "arrival must be sorted"),
    (([0, np.inf], [1, 1], [1, 1]), "arrival must be finite"),
    (([0, 1], [1, 1], [1, 1, 1]), "output_tokens must have one entry per request"),
    (([0, 1], [1.5, 1], [1, 1]), "prompt_tokens must hold whole numbers"),
    (([[0, 1]], [1, 1], [1, 1]), "arrival must be 1-D"),
])
def test_workload_errors(args, match):
    with pytest.raises(ValueError, match=match):
        Workload(*args)


def test_workload_type_errors():
    with pytest.raises(TypeError, match="prompt_tokens"):
        Workload([0], ["a"], [1])
    with pytest.raises(TypeError, match="arrival"):
        Workload([True], [1], [1])


@pytest.mark.parametrize("dist, mean, tol", [
    (Constant(7), 7, 0),
    (Uniform(10, 30), 20, 0.02),
    (Geometric(50), 50, 0.03),
    (LogNormal(mean=100, sigma=0.5), 100.5, 0.03),     # ceil adds ~0.5 on average
    (short_and_long(), (15 * 20 + 400) / 16, 0.03),    # guide §4.2: 15 × 20 + 1 × 400
    (Mixture((1, 3), (1, 1)), 2, 0.02),
    (Empirical(samples=(4, 6)), 5, 0.02),
])
def test_distribution_means(dist, mean, tol):
    # 20,000 draws with seed 0; tolerance relative to the stated mean
    x = dist.sample(np.random.default_rng(0), 20_000)
    assert x.dtype == np.int64 and x.shape == (20_000,)
    assert x.mean() == pytest.approx(mean, rel=tol, abs=1e-12)


def test_distribution_supports():
    rng = np.random.default_rng(1)
    u = Uniform(3, 5).sample(rng, 1000)
    assert set(np.unique(u)) == {3, 4, 5}
    assert Geometric(1).sample(rng, 100).tolist() == [1] * 100
    ln = LogNormal(mean=100, sigma=3, minimum=2, maximum=500).sample(rng, 5000)
    assert ln.min() >= 2 and ln.max() <= 500
    h = Empirical(edges=(0, 10, 20), counts=(0, 1)).sample(rng, 1000)
    assert h.min() >= 10 and h.max() < 20
    assert set(np.unique(short_and_long(long_fraction=0).sample(rng, 100))) == {20}


def test_arrival_processes():
    rng = np.random.default_rng(2)
    np.testing.assert_array_equal(AllAtOnce(3).sample(rng, 3), [3, 3, 3])
    np.testing.assert_array_equal(FixedInterval(10, burst=4).sample(rng, 9),
                                  [0, 0, 0, 0, 10, 10, 10, 10, 20])
    p = Poisson(rate=2.0).sample(rng, 20_000)
    assert (np.diff(p) >= 0).all()
    # mean gap 1/rate = 0.5, 20,000 draws, rel 2%
    assert np.diff(p).mean() == pytest.approx(0.5, rel=0.02)


@pytest.mark.parametrize("make, match", [
    (lambda: Constant(-1), "value"),
    (lambda: Uniform(5, 3), "high"),
    (lambda: Geometric(0.5), "mean"),
    (lambda: LogNormal(mean=0, sigma=1), "mean"),
    (lambda: LogNormal(mean=10, sigma=-1), "sigma"),
    (lambda: LogNormal(mean=10, sigma=1, minimum=5, maximum=4), "maximum"),
    (lambda: Mixture((1, 2), (1,)), "weights"),
    (lambda: Mixture((1, 2), (0, 0)), "weights"),
    (lambda: Empirical(), "either"),
    (lambda: Empirical(samples=()), "samples"),
    (lambda: Empirical(edges=(0, 5, 3), counts=(1, 1)), "edges"),
    (lambda: short_and_long(long_fraction=2), "long_fraction"),
    (lambda: FixedInterval(-1), "interval"),
    (lambda: FixedInterval(1, burst=0), "burst"),
    (lambda: Poisson(0), "rate"),
    (lambda: WorkloadSpec(0, output=Constant(1)), "n_requests"),
    (lambda: WorkloadSpec(3, output=Constant(1), batch_fraction=1.5), "batch_fraction"),
])
def test_distribution_errors(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize("make, error, message", [
    (lambda: Constant(2.5), ValueError, "value must be a whole number >= 0; got 2.5"),
    (lambda: Constant(True), TypeError, "value must be a whole number >= 0; got bool True"),
    (lambda: FixedInterval(1, burst=np.float64(0.5)), ValueError,
     "burst must be a whole number >= 1; got 0.5"),
    (lambda: LogNormal(mean=10, sigma=-1), ValueError,
     "sigma must lie in [0, 3]; got -1"),
    (lambda: Poisson(np.float64(0)), ValueError, "rate must lie in (0, inf); got 0.0"),
    (lambda: Poisson(float("nan")), ValueError, "rate must not be NaN; got nan"),
    (lambda: Poisson("1"), TypeError, "rate must be a number; got str '1'"),
    (lambda: short_and_long(long_fraction=2), ValueError,
     "long_fraction must lie in [0, 1]; got 2"),
    (lambda: WorkloadSpec(3, output=Constant(1), batch_fraction=-0.5), ValueError,
     "batch_fraction must lie in [0, 1]; got -0.5"),
    (lambda: Workload([0, 1], np.array([1.0, 1.5]), [1, 1]), ValueError,
     "prompt_tokens must hold whole numbers >= 0; got 1.5"),
    (lambda: Workload([0, 1], [1, 1], np.array([3, 0])), ValueError,
     "output_tokens must be >= 1 for every request; got 0"),
    (lambda: Workload([-1.0, 1], [1, 1], [1, 1]), ValueError, "arrival must be >= 0; got -1.0"),
    (lambda: Workload([0, 1], [1, 1], [1, 1], priority=np.array([0, 3])), ValueError,
     "priority must be 0 (interactive) or 1 (batch); got 3"),
])
def test_messages_show_the_value_as_given(make, error, message):
    with pytest.raises(error) as info:
        make()
    assert str(info.value) == message


def test_spec_type_errors():
    with pytest.raises(TypeError, match="output"):
        WorkloadSpec(3, output=5)
    with pytest.raises(TypeError, match="seed"):
        WorkloadSpec(3, output=Constant(1)).sample("x")
    with pytest.raises(ValueError, match="seed"):
        as_generator(-3)


def test_spec_sample_deterministic_and_tiers():
    spec = WorkloadSpec(500, output=LogNormal(80, 1.0), prompt=Uniform(10, 2000),
                        arrival=Poisson(3.0), batch_fraction=0.25)
    a, b = spec.sample(42), spec.sample(42)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    assert not np.array_equal(a.output_tokens, spec.sample(43).output_tokens)
    # 500 draws, batch share 0.25 ± 0.06 (about 3 standard deviations)
    assert a.priority.mean() == pytest.approx(0.25, abs=0.06)
    gen = np.random.default_rng(42)
    assert as_generator(gen) is gen


def test_spec_replace():
    spec = WorkloadSpec(10, output=LogNormal(100, 0.5))
    assert spec.replace(**{"output.sigma": 1.5}).output.sigma == 1.5
    assert spec.replace(n_requests=20).n_requests == 20
    with pytest.raises(ValueError, match="output.nope"):
        spec.replace(**{"output.nope": 1})
    with pytest.raises(ValueError, match="unknown workload parameter 'bogus'"):
        spec.replace(bogus=1)


@settings(max_examples=50, deadline=None)
@given(n=st.integers(1, 200), seed=st.integers(0, 2**32), sigma=st.floats(0, 3),
       rate=st.floats(0.01, 100))
def test_spec_draws_are_valid_workloads(n, seed, sigma, rate):
    spec = WorkloadSpec(n, output=LogNormal(50, sigma), prompt=Geometric(20),
                        arrival=Poisson(rate), batch_fraction=0.5)
    wl = spec.sample(seed)
    assert wl.n_requests == n
    assert (wl.output_tokens >= 1).all() and (wl.prompt_tokens >= 1).all()
    assert (np.diff(wl.arrival) >= 0).all()


# --- shared prefixes ---------------------------------------------------------------------------


def test_shared_prefix_is_drawn_after_everything_else():
    base = WorkloadSpec(50, output=LogNormal(100, 1.0), prompt=Uniform(0, 30),
                        arrival=Poisson(2.0), batch_fraction=0.3)
    with_prefix = base.replace(prefix=SharedPrefix(40, groups=3, share=0.5))
    a, b = base.sample(7), with_prefix.sample(7)
    for key in ("arrival", "output_tokens", "priority"):
        np.testing.assert_array_equal(a[key], b[key])
    np.testing.assert_array_equal(b.prompt_tokens, a.prompt_tokens + b.prefix_tokens)
    assert set(np.unique(b.prefix_group)) <= {-1, 0, 1, 2}
    assert ((b.prefix_group >= 0) == (b.prefix_tokens == 40)).all()
    assert base.draw(np.random.default_rng(7))[1].tolist() == a.prompt_tokens.tolist()
    assert len(with_prefix.draw(np.random.default_rng(7))) == 4
    # common random numbers: the prefixed requests at a smaller share are among the larger's
    small = with_prefix.replace(**{"prefix.share": 0.2}).sample(7)
    assert ((small.prefix_group >= 0) <= (b.prefix_group >= 0)).all()


def test_shared_prefix_checks():
    for kwargs, match in (({"tokens": 0}, "tokens"), ({"tokens": 8, "groups": 0}, "groups"),
                          ({"tokens": 8, "share": 1.5}, "share"), ({"tokens": 2.5}, "tokens")):
        with pytest.raises(ValueError, match=match):
            SharedPrefix(**kwargs)
    with pytest.raises(TypeError, match="prefix must be a SharedPrefix"):
        WorkloadSpec(3, output=Constant(1), prefix=8)
    with pytest.raises(ValueError, match="no prefix"):
        WorkloadSpec(3, output=Constant(1)).replace(**{"prefix.share": 0.5})


def test_workload_prefix_arrays():
    wl = Workload([0, 1], [10, 5], [1, 1], prefix_group=[0, -1], prefix_tokens=[8, 0])
    assert list(wl) == ["arrival", "prompt_tokens", "output_tokens", "priority"]
    assert wl.prefix_group.tolist() == [0, -1] and wl.prefix_tokens.tolist() == [8, 0]
    assert Workload(**wl).prefix_group.tolist() == [-1, -1]
    with pytest.raises(ValueError, match="prefix longer than the prompt"):
        Workload([0], [4], [1], prefix_group=[0], prefix_tokens=[8])
    with pytest.raises(ValueError, match="more than one prefix length"):
        Workload([0, 1], [10, 10], [1, 1], prefix_group=[0, 0], prefix_tokens=[8, 4])
    with pytest.raises(ValueError, match="given together"):
        Workload([0], [4], [1], prefix_group=[0])
    with pytest.raises(ValueError, match="prefix_tokens must be 0"):
        Workload([0], [4], [1], prefix_group=[-1], prefix_tokens=[2])
    with pytest.raises(ValueError, match="prefix_group must be >= -1"):
        Workload([0], [4], [1], prefix_group=[-2], prefix_tokens=[0])


def test_sharegpt_lengths_is_the_recorded_sample():
    """The sample as recorded (rooflinekit/data/sharegpt_lengths.csv, read here as a plain
    file): its 1,280 prompts and replies, an empty reply one token; the first N requests are
    what ``--num-prompts N`` sends; scaled, each mean lands within a token of the one given."""
    from helpers import read_sharegpt_sample
    from rooflinekit.workloads import SHAREGPT_REQUESTS, sharegpt_lengths
    prompts, counted = read_sharegpt_sample()
    replies = [max(o, 1) for o in counted]
    prompt, output = sharegpt_lengths()
    assert SHAREGPT_REQUESTS == len(prompts) == 1280
    assert list(prompt.samples) == prompts and list(output.samples) == replies
    prompt, output = sharegpt_lengths(requests=160)
    assert list(prompt.samples) == prompts[:160] and sum(prompt.samples) == 34_050
    for mean_in, mean_out in ((1000.0, 300.0), (50.0, 2.0), (221.45234375, None)):
        prompt, output = sharegpt_lengths(mean_in, mean_out)
        assert abs(np.mean(prompt.samples) - mean_in) < 1.0
        if mean_out is not None:
            assert abs(np.mean(output.samples) - mean_out) < 1.0
        assert min(output.samples) >= 1
    # the docstring's example
    assert round(float(np.mean(sharegpt_lengths(output_mean=300)[1].samples))) == 300
    # the spread a per-request TPOT sees: one reply in seven under ten tokens
    under_ten = np.mean(np.array(sharegpt_lengths()[1].samples) < 10)
    assert 0.14 <= under_ten < 0.15


def test_a_replayed_sample_is_drawn_in_its_order_with_its_pairs():
    """``Empirical(samples, replay=True)``: the first ``size`` samples in order, starting over
    after the last, whatever the generator; ``sharegpt_lengths(replay=True)``: each of the
    first N prompts with the reply it had, as ``--num-prompts N`` sent them."""
    from helpers import read_sharegpt_sample
    from rooflinekit.workloads import Empirical, WorkloadSpec, sharegpt_lengths
    lengths = Empirical((3, 1, 2), replay=True)
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        np.testing.assert_array_equal(lengths.sample(rng, 7), [3, 1, 2, 3, 1, 2, 3])
    assert lengths.sample(np.random.default_rng(0), 0).size == 0
    prompts, counted = read_sharegpt_sample()
    prompt, output = sharegpt_lengths(requests=40, replay=True)
    spec = WorkloadSpec(40, prompt=prompt, output=output)
    draw = spec.draw(np.random.default_rng(5))
    assert list(draw[1]) == prompts[:40]                  # (arrival, prompt, output)
    assert list(draw[2]) == [max(o, 1) for o in counted[:40]]
    # resampled, the same lists give other requests
    prompt, output = sharegpt_lengths(requests=40)
    assert list(WorkloadSpec(40, prompt=prompt, output=output).draw(
        np.random.default_rng(5))[1]) != prompts[:40]
    with pytest.raises(ValueError, match="replay"):
        Empirical(edges=(1, 5), counts=(1.0,), replay=True)
    with pytest.raises(TypeError, match="replay"):
        Empirical((1, 2), replay="yes")
    with pytest.raises(TypeError, match="replay"):
        sharegpt_lengths(replay=1.5)


@pytest.mark.parametrize("kwargs, match", [
    ({"prompt_mean": 0}, "prompt_mean"), ({"output_mean": -3.0}, "output_mean"),
    ({"prompt_mean": 1e13}, "prompt_mean"), ({"requests": 0}, "requests"),
    ({"requests": 1281}, "requests"), ({"requests": 10.5}, "requests"),
])
def test_sharegpt_lengths_refuses_what_it_cannot_scale(kwargs, match):
    from rooflinekit.workloads import sharegpt_lengths
    with pytest.raises(ValueError, match=match):
        sharegpt_lengths(**kwargs)


def test_scaled_lengths_by_hand():
    """x · mean / x̄ rounded, a reply at least one token: replies 0 and 10 are 1 and 10 (mean
    5.5), scaled to 11: 2 and 20; prompts 100 and 300 to 250: 125 and 375; a sample of zeros
    stays; no mean, no scaling."""
    from rooflinekit.workloads import scaled_lengths
    assert scaled_lengths([100, 300], [0, 10], 250.0, 11.0) == ((125, 375), (2, 20))
    assert scaled_lengths([0, 0], [5], 10.0) == ((0, 0), (5,))
    assert scaled_lengths(np.array([7]), [0]) == ((7,), (1,))
    for args, match in ((([], [1]), "prompts must hold at least one"),
                        (([1.5], [1]), "prompts must hold whole numbers"),
                        (([1], [-1]), "outputs must be >= 0"),
                        (([1], [1], 0.0), "prompt_mean"), (([1], [1], None, 1e13), "output_mean")):
        with pytest.raises(ValueError, match=match):
            scaled_lengths(*args)


def test_expected_tokens_is_each_distributions_mean():
    """Hand means: (100 + 300) / 2; 15/16 · 20 + 1/16 · 400 = 43.75; a histogram's bins
    [0, 10) and [10, 20) hold 1 and 3 draws, uniform on their integers (means 4.5 and 14.5):
    (4.5 + 3 · 14.5) / 4 = 12; a geometric's mean; a constant. A log-normal's draws are
    rounded up: the continuous mean plus about half a token (E[⌈X⌉] = Σ_k P(X > k), summed
    here from the log-normal's survival function, independent of its sampler)."""
    import math

    from rooflinekit.workloads import Mixture, Uniform, expected_tokens, sharegpt_lengths
    assert expected_tokens(Uniform(100, 300)) == 200.0
    assert expected_tokens(Mixture((20, 400), (15, 1))) == pytest.approx(43.75, rel=1e-15)
    assert expected_tokens(Empirical(edges=(0, 10, 20), counts=(1, 3))) == 12.0
    assert expected_tokens(Geometric(50)) == 50.0
    assert expected_tokens(Constant(7)) == expected_tokens(7) == 7.0
    prompt, output = sharegpt_lengths()
    assert expected_tokens(prompt) == sum(prompt.samples) / 1280 == 283_459 / 1280
    mean, sigma = 200.0, 0.5
    mu = math.log(mean) - sigma ** 2 / 2
    survival = sum(0.5 * math.erfc((math.log(k) - mu) / (sigma * math.sqrt(2)))
                   for k in range(1, 20_000))
    exact = 1 + survival                        # minimum 1: P(Y > 0) = 1, then P(X > k)
    # the closed-form clipped mean leaves only the rounding to Monte Carlo: ~0.001 token
    assert expected_tokens(LogNormal(mean, sigma)) == pytest.approx(exact, abs=0.01)
    assert expected_tokens(LogNormal(mean, sigma)) == expected_tokens(LogNormal(mean, sigma))


def _survival_mean(mean, sigma, lo, hi):
    """E[clip(⌈X⌉, lo, hi)] = lo + Σ_{k=lo}^{hi−1} P(X > k) for a log-normal X of that mean,
    summed from its survival function (independent of the package's sampler)."""
    import math
    mu = math.log(mean) - sigma ** 2 / 2
    return lo + sum(0.5 * math.erfc((math.log(k) - mu) / (sigma * math.sqrt(2))) if k > 0
                    else 1.0 for k in range(lo, hi))


@pytest.mark.parametrize("lengths, at_least, exact", [
    # (1 + 1 + 2 + 3) / 4: the 0 drawn as 1
    (Uniform(0, 3), 1, 1.75),
    # 0..4 drawn as 5, then 5 + 6 + ... + 10: (5 · 5 + 45) / 11
    (Uniform(0, 10), 5, 70 / 11),
    (Uniform(5, 10), 1, 7.5),
    # Σ_k max(k, 4) (2/3)^(k−1) / 3, summed by hand to k = 400
    (Geometric(3.0), 4, sum(max(k, 4) * (2 / 3) ** (k - 1) / 3 for k in range(1, 400))),
    # (1·1 + 2·5 + 3·10) / 6 with 0 raised to 1
    (Mixture((0, 5, 10), (1, 2, 3)), 1, (1 + 10 + 30) / 6),
    # (1 + 1 + 1 + 7) / 4
    (Empirical(samples=(0, 0, 1, 7)), 1, 2.5),
    # bins [0, 3) and [3, 10) with 2 and 1 draws: (2 · (1 + 1 + 2) / 3 + 1 · 6) / 3
    (Empirical(edges=(0, 3, 10), counts=(2, 1)), 1, (2 * 4 / 3 + 6) / 3),
    (Constant(0), 1, 1.0),
    (0, 1, 1.0),
])
def test_expected_tokens_with_a_floor(lengths, at_least, exact):
    """``at_least`` counts a draw below it as it: each hand mean in the parameters."""
    from rooflinekit.workloads import expected_tokens
    assert expected_tokens(lengths, at_least=at_least) == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize("mean, sigma, minimum, maximum, at_least", [
    (3.0, 1.0, 0, None, 0), (3.0, 1.0, 0, None, 7), (200.0, 2.0, 1, 4000, 1),
    (200.0, 2.0, 5, 4000, 7), (300.0, 0.5, 1, 310, 1)])
def test_expected_tokens_of_a_clipped_log_normal(mean, sigma, minimum, maximum, at_least):
    """Clipped and floored log-normal draws: within 0.01 token of the survival-function sum
    (``max(clip(⌈X⌉, m, M), a) = clip(⌈X⌉, max(m, a), max(M, a))``)."""
    from rooflinekit.workloads import expected_tokens
    lo = max(minimum, at_least)
    hi = max(maximum, at_least) if maximum is not None else 20_000
    exact = _survival_mean(mean, sigma, lo, hi)
    got = expected_tokens(LogNormal(mean, sigma, minimum, maximum), at_least=at_least)
    assert got == pytest.approx(exact, abs=0.01)


def test_expected_tokens_of_a_constant_log_normal_is_its_sampler():
    """σ = 0: every draw is the same rounded-up value, and the mean is that draw."""
    from rooflinekit.workloads import expected_tokens
    for lengths in (LogNormal(50, 0.0), LogNormal(50.5, 0.0), LogNormal(50.5, 0.0, maximum=40)):
        drawn = lengths.sample(np.random.default_rng(3), 4)
        assert (drawn == drawn[0]).all()
        assert expected_tokens(lengths) == float(drawn[0])


def test_expected_tokens_of_any_sampler():
    """An object with ``sample(rng, size)`` is averaged over its draws; draws that are no token
    counts are refused naming the call."""
    from rooflinekit.workloads import EXPECTED_DRAWS, expected_tokens

    class Twos:
        def sample(self, rng, size):
            return np.full(size, 2, dtype=np.int64)

    class Negative:
        def sample(self, rng, size):
            return np.full(size, -1, dtype=np.int64)

    assert expected_tokens(Twos()) == 2.0 and expected_tokens(Twos(), at_least=3) == 3.0
    assert EXPECTED_DRAWS == 2**18
    with pytest.raises(ValueError, match="sample"):
        expected_tokens(Negative())


@pytest.mark.parametrize("bad", [True, 2.5, "200", None, -1, [200]])
def test_expected_tokens_refuses_what_is_no_length(bad):
    from rooflinekit.workloads import expected_tokens
    with pytest.raises((TypeError, ValueError), match="lengths"):
        expected_tokens(bad)


@pytest.mark.parametrize("bad", [True, 2.5, "1", None, -1])
def test_expected_tokens_refuses_a_bad_floor(bad):
    from rooflinekit.workloads import expected_tokens
    with pytest.raises((TypeError, ValueError), match="at_least"):
        expected_tokens(Uniform(0, 3), at_least=bad)
