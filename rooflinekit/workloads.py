"""Request workloads for the batching simulator (guide §4.2-4.4).

A workload is aligned per-request arrays: arrival time, prompt and output tokens, and optional
priority tier and shared prefix. :class:`Workload` holds a fixed one; :class:`WorkloadSpec` draws
one from token-length distributions and an arrival process. Every random number of the simulator
is drawn here, outside the numba kernels, so a seed fixes a run. Times are ticks (decode steps)
in tick mode, seconds in roofline mode.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
from collections.abc import Mapping
from importlib import resources

import numpy as np

from rooflinekit._validation import check_bool, check_count_array, real_number, whole_number

__all__ = [
    "Workload", "WorkloadSpec", "guide_workload", "as_generator",
    "Constant", "Uniform", "Geometric", "LogNormal", "Mixture", "Empirical", "short_and_long",
    "sharegpt_lengths", "scaled_lengths", "SHAREGPT_REQUESTS", "expected_tokens",
    "AllAtOnce", "FixedInterval", "Poisson", "Gamma",
    "INTERACTIVE", "BATCH", "MAX_ARRIVAL", "coerce_workload", "SharedPrefix", "NO_PREFIX",
    "Beta", "speculative_draws", "speculative_gains", "MAX_DRAFT_TOKENS", "MAX_SIGMA",
]

#: Latest arrival time a workload may hold [tick or s]: 1e9 (31 years in seconds). Beyond it a
#: float64 time cannot resolve a step (at 1e17 a 100-tick request would appear to take 96).
MAX_ARRIVAL = 1e9
#: Most requests a closed-loop client may keep in flight (``load_curve``'s ``concurrencies``,
#: a ``vllm bench serve --max-concurrency`` run) [1].
MAX_CONCURRENCY = 1_000_000

#: Priority tiers (``Workload.priority``): interactive requests are admitted first.
INTERACTIVE = 0
BATCH = 1
#: ``Workload.prefix_group`` of a request that starts with no shared prefix.
NO_PREFIX = -1


def as_generator(seed) -> np.random.Generator:
    """A ``numpy.random.Generator`` from a seed or a ``SeedSequence``; a Generator as it is."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or isinstance(seed, (numbers.Integral, np.random.SeedSequence)):
        if isinstance(seed, numbers.Integral) and not isinstance(seed, bool) and seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        return np.random.default_rng(seed)
    raise TypeError(f"seed must be an int, a numpy SeedSequence or Generator, got "
                    f"{type(seed).__name__}")


# --- declared checks: each spec field's rule, run on construction ----------------------------

#: Rules for :func:`_checked`: a check of :mod:`rooflinekit._validation` and its bounds.
_POSITIVE = (real_number, {"lo": 0, "lo_open": True})
_NONNEGATIVE = (real_number, {"lo": 0})
_FRACTION = (real_number, {"lo": 0, "hi": 1})


def _count(lo):
    """The rule of a whole number >= ``lo``."""
    return (whole_number, {"lo": lo})


def _size(size) -> int:
    """A ``sample`` call's ``size``: a whole number of draws >= 0, as ``int`` (NaN, inf, 2.5 or
    a string refused naming ``size``, before numpy turns them into a warning or a traceback)."""
    return whole_number("size", size, lo=0)


def _checked(**rules):
    """A class decorator (below ``@dataclass``): ``__post_init__`` checks each field's rule."""
    def decorate(cls):
        def __post_init__(self):
            for name, (check, bounds) in rules.items():
                check(name, getattr(self, name), **bounds)
        cls.__post_init__ = __post_init__
        return cls
    return decorate


# --- token-length distributions ---------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
@_checked(value=_count(0))
class Constant:
    """Every request has ``value`` tokens."""

    value: int

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` token counts [tokens] (int64)."""
        size = _size(size)
        return np.full(size, int(self.value), dtype=np.int64)


@dataclasses.dataclass(frozen=True)
class Uniform:
    """Token counts uniform on the integers ``low..high`` (both included)."""

    low: int
    high: int

    def __post_init__(self):
        whole_number("low", self.low, lo=0)
        if whole_number("high", self.high, lo=0) < self.low:
            raise ValueError(f"high must be >= low ({self.low}), got {self.high!r}")

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` token counts [tokens] (int64)."""
        size = _size(size)
        return rng.integers(int(self.low), int(self.high), size=size, endpoint=True, dtype=np.int64)


@dataclasses.dataclass(frozen=True)
@_checked(mean=(real_number, {"lo": 1}))
class Geometric:
    """Geometric token counts on ``1, 2, ...`` with the given ``mean`` [tokens] (>= 1).

    The memoryless length: every generated token ends the sequence with probability ``1/mean``.
    """

    mean: float

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` token counts [tokens] (int64, >= 1)."""
        size = _size(size)
        return rng.geometric(1.0 / float(self.mean), size=size).astype(np.int64)


#: Largest log-space spread of :class:`LogNormal` [1]. At a fixed mean the median is
#: ``mean · exp(−σ²/2)``: at σ = 3 a 200-token mean has a median of 2 tokens, and past it
#: nearly every draw rounds to the one-token floor (σ = 50 made every request one token).
MAX_SIGMA = 3.0


@dataclasses.dataclass(frozen=True)
class LogNormal:
    """Log-normal token counts with the given ``mean`` [tokens] and log-space spread ``sigma``.

    ``mu = ln(mean) - sigma**2 / 2`` so the (continuous) mean stays ``mean`` as ``sigma`` grows:
    sweeping ``sigma`` changes the output-length variance, ``mean**2 (exp(sigma**2) - 1)``, at a
    fixed mean. Draws are rounded up to whole tokens and clipped to ``[minimum, maximum]``.
    """

    mean: float
    sigma: float
    minimum: int = 1
    maximum: int | None = None

    def __post_init__(self):
        real_number("mean", self.mean, lo=0, lo_open=True)
        real_number("sigma", self.sigma, lo=0, hi=MAX_SIGMA)
        whole_number("minimum", self.minimum, lo=0)
        if self.maximum is not None and whole_number("maximum", self.maximum, lo=0) < self.minimum:
            raise ValueError(f"maximum must be >= minimum ({self.minimum}), got {self.maximum!r}")

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` token counts [tokens] (int64)."""
        size = _size(size)
        sigma = float(self.sigma)
        mu = math.log(float(self.mean)) - 0.5 * sigma * sigma
        draw = np.ceil(rng.lognormal(mu, sigma, size=size))
        hi = np.inf if self.maximum is None else float(self.maximum)
        # Clip in float first: a huge sigma can draw values past int64.
        return np.clip(draw, float(self.minimum), min(hi, 2.0**62)).astype(np.int64)


@dataclasses.dataclass(frozen=True)
class Mixture:
    """Token counts drawn from ``values`` with probabilities ``weights`` (normalised)."""

    values: tuple
    weights: tuple

    def __post_init__(self):
        values = np.asarray(self.values)
        weights = np.asarray(self.weights, dtype=float)
        if values.ndim != 1 or values.size == 0:
            raise ValueError("values must be a non-empty 1-D sequence of token counts")
        if weights.shape != values.shape:
            raise ValueError(f"weights must have one entry per value ({values.size}), "
                             f"got {weights.size}")
        check_count_array("values", values, lo=0)
        if not np.isfinite(weights).all() or (weights < 0).any() or weights.sum() <= 0:
            raise ValueError("weights must be finite, >= 0 and not all zero")
        object.__setattr__(self, "values", tuple(int(v) for v in values))
        object.__setattr__(self, "weights", tuple(float(w) for w in weights))

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` token counts [tokens] (int64)."""
        size = _size(size)
        p = np.asarray(self.weights) / sum(self.weights)
        return rng.choice(np.asarray(self.values, dtype=np.int64), size=size, p=p)


def short_and_long(short: int = 20, long: int = 400, long_fraction: float = 1 / 16) -> Mixture:
    """The guide's uneven mix: mostly ``short`` outputs, a ``long_fraction`` of ``long`` ones.

    The defaults are §4.2's batch of 16 in expectation: fifteen 20-token generations and one of 400.
    """
    frac = real_number("long_fraction", long_fraction, lo=0, hi=1)
    return Mixture(values=(short, long), weights=(1.0 - frac, frac))


@dataclasses.dataclass(frozen=True)
class Empirical:
    """Token counts resampled from observed ``samples``, or drawn from a histogram.

    Pass either ``samples`` (token counts, resampled with replacement) or ``edges`` and ``counts``
    (a histogram: ``counts[k]`` observations in ``[edges[k], edges[k+1])``, drawn uniformly on the
    integers of the chosen bin). ``replay=True`` (keyword-only; ``samples`` only) draws the
    samples in their order instead, the first ``size`` of them, starting over after the last:
    the requests a benchmark client sent, in the order it sent them, the same in every draw
    (two such lengths of one list keep each prompt with its reply).
    """

    samples: tuple | None = None
    edges: tuple | None = None
    counts: tuple | None = None
    replay: bool = dataclasses.field(default=False, kw_only=True)

    def __post_init__(self):
        if (self.samples is None) == (self.edges is None):
            raise ValueError("pass either samples, or edges and counts")
        if check_bool("replay", self.replay) and self.samples is None:
            raise ValueError("replay=True replays samples: give samples, not edges and counts")
        if self.samples is not None:
            data = check_count_array("samples", self.samples, lo=0)
            if data.size == 0:
                raise ValueError("samples must not be empty")
            object.__setattr__(self, "samples", tuple(int(v) for v in data))
            return
        if self.counts is None:
            raise ValueError("counts must be given with edges")
        edges = check_count_array("edges", self.edges, lo=0)
        counts = np.asarray(self.counts, dtype=float)
        if edges.size < 2 or (np.diff(edges) <= 0).any():
            raise ValueError("edges must hold at least two strictly increasing token counts")
        if counts.shape != (edges.size - 1,):
            raise ValueError(f"counts must have len(edges) - 1 = {edges.size - 1} entries, "
                             f"got {counts.size}")
        if not np.isfinite(counts).all() or (counts < 0).any() or counts.sum() <= 0:
            raise ValueError("counts must be finite, >= 0 and not all zero")
        object.__setattr__(self, "edges", tuple(int(v) for v in edges))
        object.__setattr__(self, "counts", tuple(float(c) for c in counts))

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` token counts [tokens] (int64)."""
        size = _size(size)
        if self.replay:
            return np.resize(np.asarray(self.samples, dtype=np.int64), size)
        if self.samples is not None:
            return rng.choice(np.asarray(self.samples, dtype=np.int64), size=size)
        edges = np.asarray(self.edges, dtype=np.int64)
        p = np.asarray(self.counts) / sum(self.counts)
        k = rng.choice(p.size, size=size, p=p)
        return rng.integers(edges[k], edges[k + 1], dtype=np.int64)


#: Draws of the Monte Carlo mean of a length distribution without a closed form
#: (:func:`expected_tokens`): 2**18, an error of about ``sd / 512`` of what is averaged (for a
#: log-normal only its rounding up, less than a token: about 0.0006 token).
EXPECTED_DRAWS = 2**18


def _uniform_floor(low: int, high: int, floor: int) -> float:
    """``E[max(K, floor)] − E[K]`` for ``K`` uniform on the integers ``low..high`` [tokens]."""
    top = min(high, floor - 1)
    if top < low:
        return 0.0
    below = top - low + 1                          # the integers raised to ``floor``
    return (below * floor - (low + top) * below / 2.0) / (high - low + 1)


@functools.lru_cache(maxsize=256)
def _lognormal_expected(lengths: LogNormal, floor: int) -> float:
    """``E[max(draw, floor)]`` of a :class:`LogNormal`: the closed-form mean of the clipped
    continuous value plus the Monte Carlo mean of its rounding up (see :func:`expected_tokens`);
    kept per distribution, as its 2**18 draws take milliseconds and a plan asks several times."""
    # max(clip(ceil x, m, M), a) = clip(ceil x, lo, hi) for whole numbers m, M, a
    lo = float(max(int(lengths.minimum), floor))
    top = min(np.inf if lengths.maximum is None else float(lengths.maximum), 2.0**62)
    hi = max(top, float(floor))
    mean, sigma = float(lengths.mean), float(lengths.sigma)
    mu = math.log(mean) - 0.5 * sigma * sigma
    if sigma == 0.0:                # every draw is exp(μ), rounded up as the sampler does
        return float(np.clip(np.ceil(np.random.default_rng(0).lognormal(mu, 0.0)), lo, hi))

    def below(t):                   # P(x < t) and E[x; x < t]
        if t <= 0.0:
            return 0.0, 0.0
        if math.isinf(t):
            return 1.0, mean
        z = (math.log(t) - mu) / sigma
        return 0.5 * math.erfc(-z / math.sqrt(2.0)), \
            mean * 0.5 * math.erfc(-(z - sigma) / math.sqrt(2.0))

    (p_lo, m_lo), (p_hi, m_hi) = below(lo), below(hi)
    clipped = lo * p_lo + (m_hi - m_lo) + (hi * (1.0 - p_hi) if math.isfinite(hi) else 0.0)
    x = np.random.default_rng(0).lognormal(mu, sigma, size=EXPECTED_DRAWS)
    rounding = np.clip(np.ceil(x), lo, hi) - np.clip(x, lo, hi)      # in [0, 1)
    return clipped + float(np.mean(rounding))


def expected_tokens(lengths, at_least: int = 0) -> float:
    """The mean token count of a length distribution, as its draws have it [tokens].

    Parameters
    ----------
    lengths : Constant, Uniform, Geometric, LogNormal, Mixture, Empirical or int
        A length distribution (an int is a constant length; any other object with a
        ``sample(rng, size)`` method is averaged over its draws, as a log-normal is).
    at_least : int, optional
        Draws below it count as ``at_least`` [tokens], >= 0: a request's output is raised to
        one token (:meth:`WorkloadSpec.draw`), so ``1`` gives the mean output it simulates.
        Default 0 (the draws as they are).

    Returns
    -------
    float
        ``E[max(L, at_least)]`` of what :meth:`sample` draws.

    Raises
    ------
    TypeError
        ``lengths`` is not a length distribution.
    ValueError
        ``at_least`` is not a whole number >= 0.

    Notes
    -----
    Exact where the draws have a closed form: a constant, ``(low + high) / 2`` (uniform),
    ``mean`` (geometric; with a floor ``a``, ``a + (1 − 1/mean)^a · mean``, as it is
    memoryless), ``Σ w_k v_k / Σ w_k`` (mixture), the samples' mean, and a histogram's
    ``Σ_k c_k (e_k + e_{k+1} − 1) / 2 / Σ_k c_k`` (each bin's integers drawn alike); with a
    floor ``a``, each uniform run of integers ``l..h`` adds ``Σ_{k=l}^{min(h, a−1)} (a − k) /
    (h − l + 1)`` and every other value ``v`` counts as ``max(v, a)``. A log-normal's draws are
    rounded up and clipped to ``[lo, hi]``, which moves their mean off ``mean``: it is the
    closed-form mean of the continuous value clipped alike, ``lo·P(x < lo) + mean·(Φ(d_hi) −
    Φ(d_lo)) + hi·P(x ≥ hi)`` with ``d_t = (ln t − μ − σ²)/σ``, plus the mean of the rounding
    up (less than a token) over :data:`EXPECTED_DRAWS` draws with seed 0: within about 0.001
    token, the same number on every call. A planner's own
    draws average to it only as their count grows (400 draws of ShareGPT's heavy-tailed lengths
    miss it by about 5 %): what a benchmark replays at fixed lengths, and what a month of
    traffic averages, is this.

    See Also
    --------
    sharegpt_lengths, LogNormal, rooflinekit.Traffic.mean_output_tokens

    Examples
    --------
    >>> expected_tokens(Uniform(100, 300))
    200.0
    >>> expected_tokens(Uniform(0, 3), at_least=1)
    1.75
    >>> round(expected_tokens(sharegpt_lengths(output_mean=300)[1]))
    300
    """
    if isinstance(lengths, (bool, np.bool_)):
        raise TypeError(f"lengths must be a length distribution or a whole number of tokens, "
                        f"got {lengths!r}")
    floor = whole_number("at_least", at_least, lo=0)
    if isinstance(lengths, (int, np.integer)):
        return float(max(whole_number("lengths", lengths, lo=0), floor))
    if isinstance(lengths, Constant):
        return float(max(int(lengths.value), floor))
    if isinstance(lengths, Uniform):
        low, high = int(lengths.low), int(lengths.high)
        return (low + high) / 2.0 + _uniform_floor(low, high, floor)
    if isinstance(lengths, Geometric):
        # memoryless: E[max(K, a)] = a + P(K > a) · mean, P(K > a) = (1 − 1/mean)^a
        mean = float(lengths.mean)
        return floor + (1.0 - 1.0 / mean) ** floor * mean if floor else mean
    if isinstance(lengths, Mixture):
        weights = np.asarray(lengths.weights)
        values = np.maximum(np.asarray(lengths.values, dtype=float), floor)
        return float(np.dot(weights, values) / weights.sum())
    if isinstance(lengths, Empirical):
        if lengths.samples is not None:
            return float(np.mean(np.maximum(np.asarray(lengths.samples, dtype=np.float64),
                                            floor)))
        edges = np.asarray(lengths.edges, dtype=np.int64)
        counts = np.asarray(lengths.counts)
        means = (edges[:-1] + edges[1:] - 1.0) / 2.0 + np.array(
            [_uniform_floor(int(lo), int(hi) - 1, floor) for lo, hi in zip(edges[:-1], edges[1:])])
        return float(np.dot(counts, means) / counts.sum())
    if isinstance(lengths, LogNormal):
        return _lognormal_expected(lengths, floor)
    if callable(getattr(lengths, "sample", None)):
        draws = check_count_array("lengths.sample(rng, size)", lengths.sample(
            np.random.default_rng(0), EXPECTED_DRAWS), lo=0)
        return float(np.mean(np.maximum(draws, floor)))
    raise TypeError(f"lengths must be a length distribution (Constant, Uniform, Geometric, "
                    f"LogNormal, Mixture, Empirical, or any with a sample(rng, size) method) or a "
                    f"whole number of tokens, got {type(lengths).__name__}")


#: Requests in the ShareGPT sample of :func:`sharegpt_lengths` [1].
SHAREGPT_REQUESTS = 1280
#: Largest mean length :func:`sharegpt_lengths` scales to [tokens]: a trillion, far past any
#: context, and below where a scaled draw (at most 1,280 times the mean: one request holding
#: all its sample's tokens) would pass 2**53.
_LARGEST_MEAN = 1e12


@functools.lru_cache(maxsize=1)
def _sharegpt_sample() -> tuple[np.ndarray, np.ndarray]:
    """The package's ``data/sharegpt_lengths.csv``: prompt and output tokens, in the order sent."""
    text = resources.files("rooflinekit").joinpath("data").joinpath(
        "sharegpt_lengths.csv").read_text(encoding="utf-8")
    rows = [line.split(",") for line in text.splitlines()
            if line and not line.startswith("#")][1:]
    prompts = np.array([int(r[1]) for r in rows], dtype=np.int64)
    outputs = np.array([int(r[2]) for r in rows], dtype=np.int64)
    prompts.setflags(write=False)
    outputs.setflags(write=False)
    return prompts, outputs


def sharegpt_lengths(prompt_mean=None, output_mean=None, *, requests=None, replay=False
                     ) -> tuple[Empirical, Empirical]:
    """Prompt and output lengths of the ShareGPT sample vLLM's benchmark client sends.

    ``vllm bench serve --dataset-name sharegpt`` (and ``benchmark_serving.py`` before it)
    shuffles ShareGPT with seed 0 and sends the first ``--num-prompts`` conversations that pass
    its length filter, so every such run sends one list. This is that list's first 1,280
    requests (:data:`SHAREGPT_REQUESTS`), as a run recorded them: prompts counted by the
    Llama-3 tokenizer, replies as Meta-Llama-3-8B-Instruct generated them (greedy, stopping
    at its end of sequence). Most are short or long: 14 % of the replies are under ten tokens,
    the median 117, the mean 182; the prompts' mean is 221. Plan with it to lay a plan beside
    a ``vllm bench serve`` ShareGPT sweep, or where a service's lengths spread as a chat
    service's do: a per-request TPOT (:class:`~rooflinekit.planning.SLO`'s ``tpot``) weighs a
    four-token reply as much as a 700-token one.

    Parameters
    ----------
    prompt_mean, output_mean : float, optional
        Mean prompt and output length to scale the sample to [tokens], in (0, 1e12]: another
        tokenizer's count, another model's replies (each length times ``mean / sample mean``,
        rounded). Default: the sample's own.
    requests : int, optional
        Only the sample's first ``requests`` [1], in [1, 1280]: what ``--num-prompts
        requests`` sends. Default all 1,280.
    replay : bool, optional
        ``True``: the requests in the sample's order, each prompt with its reply, the same in
        every draw (:class:`Empirical`'s ``replay``): a run of ``--num-prompts requests``
        replayed as its client sent it. Default ``False``: resampled.

    Returns
    -------
    prompt, output : Empirical
        Resampled with replacement, or replayed (:class:`Empirical`):
        ``Traffic(rate, *sharegpt_lengths())``.

    Raises
    ------
    ValueError, TypeError
        Naming the argument: a mean not finite and > 0, ``requests`` outside [1, 1280].

    Notes
    -----
    A scaled length is ``max(round(x · mean / x̄), lowest)``, ``x̄`` the (first ``requests``)
    lengths' mean and ``lowest`` 0 for a prompt, 1 for a reply: the means land within a
    token of the given ones. A reply the run counted as 0 tokens (an empty reply: its first
    token ended it; 89 of 1,280) is one token. Resampled, prompts and replies are drawn
    independently: the sample's pairing is kept by ``replay`` only.

    References
    ----------
    .. [1] LambdaLabsML/vllm-benchmark, commit a4f9f4371a1ccac781293837fce2bce0cc6d25cc,
       ``results/prompt_1280/1xH100-80GB-SXM/Meta-Llama-3-8B-Instruct_tp1_len2048.json``
       (``input_lens``, ``output_lens``); the checks of ``tests/data/load_sweeps/README.md``.

    See Also
    --------
    Empirical : resampled token counts.
    LogNormal : a smooth spread around a mean.

    Examples
    --------
    >>> prompt, output = sharegpt_lengths(output_mean=300)
    >>> round(float(np.mean(output.samples)))
    300
    """
    n = SHAREGPT_REQUESTS if requests is None else whole_number(
        "requests", requests, lo=1, hi=SHAREGPT_REQUESTS)
    means = [None if m is None else real_number(name, m, lo=0, lo_open=True, hi=_LARGEST_MEAN)
             for name, m in (("prompt_mean", prompt_mean), ("output_mean", output_mean))]
    prompts, outputs = _sharegpt_sample()
    prompt, output = scaled_lengths(prompts[:n], outputs[:n], *means)
    replay = check_bool("replay", replay)
    return Empirical(samples=prompt, replay=replay), Empirical(samples=output, replay=replay)


def scaled_lengths(prompts, outputs, prompt_mean=None, output_mean=None
                   ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Requests' prompt and reply lengths, each scaled to a mean, as whole tokens.

    Parameters
    ----------
    prompts, outputs : array_like of int
        The requests' prompt and reply lengths [tokens], whole numbers >= 0, at least one each.
    prompt_mean, output_mean : float, optional
        The means to scale them to [tokens], in (0, 1e12]. Default: unscaled.

    Returns
    -------
    prompts, outputs : tuple of int
        ``max(round(x · mean / x̄), lowest)`` for each length ``x`` (``x̄`` their mean; a
        sample of zeros is left as it is), ``lowest`` 0 for a prompt and 1 for a reply: a reply
        counted as 0 tokens (its first token ended it) is one token generated. The means land
        within a token of the given ones.

    Raises
    ------
    ValueError, TypeError
        Naming the argument: lengths that are not whole numbers >= 0 or none at all, a mean not
        finite and > 0.

    See Also
    --------
    sharegpt_lengths : the ShareGPT sample, scaled so.
    rooflinekit.calibrate.read_guidellm_sweep : a GuideLLM report's kept requests, scaled so.

    Examples
    --------
    >>> scaled_lengths([100, 300], [0, 10], output_mean=11)
    ((100, 300), (2, 20))
    """
    out = []
    for name, values, mean, lowest in (("prompts", prompts, prompt_mean, 0),
                                       ("outputs", outputs, output_mean, 1)):
        values = check_count_array(name, values)
        if values.size == 0:
            raise ValueError(f"{name} must hold at least one length; got none")
        values = np.maximum(values, lowest)
        if mean is not None:
            mean = real_number(f"{name[:-1]}_mean", mean, lo=0, lo_open=True, hi=_LARGEST_MEAN)
            average = values.mean()
            if average > 0:
                values = np.maximum(np.rint(values * (mean / average)), lowest)
        out.append(tuple(int(v) for v in values))
    return out[0], out[1]


# --- arrival processes --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
@_checked(at=_NONNEGATIVE)
class AllAtOnce:
    """Every request arrives at time ``at``."""

    at: float = 0.0

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` sorted arrival times [time unit]."""
        size = _size(size)
        return np.full(size, float(self.at))


@dataclasses.dataclass(frozen=True)
@_checked(interval=_NONNEGATIVE, burst=_count(1), start=_NONNEGATIVE)
class FixedInterval:
    """Bursts of ``burst`` requests every ``interval``, the first at ``start``.

    Request ``i`` arrives at ``start + (i // burst) * interval``; ``burst=4, interval=10`` is the
    workload of ``docs/conventions.md``.
    """

    interval: float
    burst: int = 1
    start: float = 0.0

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` sorted arrival times [time unit]."""
        size = _size(size)
        return float(self.start) + (np.arange(size) // int(self.burst)) * float(self.interval)


@dataclasses.dataclass(frozen=True)
@_checked(rate=_POSITIVE, start=_NONNEGATIVE)
class Poisson:
    """Poisson arrivals at ``rate`` requests per time unit, the first process start at ``start``."""

    rate: float
    start: float = 0.0

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` sorted arrival times [time unit]."""
        size = _size(size)
        return float(self.start) + np.cumsum(rng.exponential(1.0 / float(self.rate), size=size))


@dataclasses.dataclass(frozen=True)
@_checked(rate=_POSITIVE, burstiness=_POSITIVE, start=_NONNEGATIVE)
class Gamma:
    """Gamma-renewal arrivals at ``rate`` requests per time unit, with shape ``burstiness``.

    Inter-arrival times are Gamma(k = ``burstiness``, θ = 1 / (``rate`` · k)): mean ``1/rate``
    whatever the shape, squared coefficient of variation ``1/k``. ``burstiness=1`` is a Poisson
    process; below 1 requests come in bursts, above 1 more evenly (vLLM's ``bench serve
    --burstiness`` has the same meaning).

    References
    ----------
    .. [1] vLLM, ``vllm bench serve --burstiness`` ("only takes effect when request_rate is not
       inf ... 1 is a Poisson process").
    """

    rate: float
    burstiness: float = 1.0
    start: float = 0.0

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` sorted arrival times [time unit]."""
        size = _size(size)
        k = float(self.burstiness)
        return float(self.start) + np.cumsum(rng.gamma(k, 1.0 / (float(self.rate) * k),
                                                       size=size))


# --- shared prefixes ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
@_checked(tokens=_count(1), groups=_count(1), share=_FRACTION)
class SharedPrefix:
    """Requests that start with one of ``groups`` shared prefixes of ``tokens`` tokens each.

    Parameters
    ----------
    tokens : int
        Length of every prefix [tokens], >= 1.
    groups : int
        Distinct prefixes [1], >= 1 (say, system prompts); a prefixed request takes one uniformly.
    share : float
        Probability that a request starts with a prefix, in [0, 1].

    Notes
    -----
    A prefixed request's prompt is the prefix followed by its own drawn prompt, so its prompt is
    ``tokens`` longer than drawn and a prefix is never longer than the prompt. The prefixes are
    drawn after every other draw of :meth:`WorkloadSpec.draw` (one uniform and one group per
    request, whatever ``share``), so a seed gives the same arrivals, prompts, outputs and tiers
    with or without a prefix, and the prefixed requests at a smaller ``share`` are a subset of
    those at a larger one (common random numbers across a ``"prefix.share"`` sweep).

    References
    ----------
    .. [1] Kwon et al., "Efficient Memory Management for Large Language Model Serving with
           PagedAttention", SOSP 2023 (shared prefixes in blocks).
    .. [2] Zheng et al., "SGLang: Efficient Execution of Structured Language Model Programs",
           NeurIPS 2024 (prefix reuse across requests).
    """

    tokens: int
    groups: int = 1
    share: float = 1.0

    def sample(self, rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
        """``(prefix_group, prefix_tokens)`` of ``size`` requests (int64; group -1: none)."""
        size = _size(size)
        prefixed = rng.random(size) < float(self.share)
        group = rng.integers(0, int(self.groups), size=size, dtype=np.int64)
        return (np.where(prefixed, group, NO_PREFIX).astype(np.int64),
                np.where(prefixed, int(self.tokens), 0).astype(np.int64))


# --- speculative decoding: acceptance ----------------------------------------------------------


@dataclasses.dataclass(frozen=True)
@_checked(a=(real_number, {"lo": 0, "lo_open": True}), b=(real_number, {"lo": 0, "lo_open": True}))
class Beta:
    """Per-request acceptance probabilities drawn from a Beta(``a``, ``b``) distribution [1].

    Parameters
    ----------
    a, b : float
        Shape parameters, > 0; the mean acceptance is ``a / (a + b)``.

    Notes
    -----
    Acceptance varies with the text (code and boilerplate are easy to draft, open prose is not);
    a Beta spreads it over requests while staying in [0, 1].
    """

    a: float
    b: float

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` acceptance probabilities in [0, 1] (float64)."""
        size = _size(size)
        return rng.beta(float(self.a), float(self.b), size=size)


#: Most tokens drafted per speculative step (the gains are stored as one byte each).
MAX_DRAFT_TOKENS = 64


def speculative_draws(rng: np.random.Generator, output_tokens, draft_tokens: int,
                      acceptance) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The random numbers behind the speculative gains: one 32-bit draw an output position.

    Parameters
    ----------
    rng : numpy.random.Generator
        The source of every draw.
    output_tokens : array_like of int
        Output length of each request [tokens], >= 1.
    draft_tokens : int
        Tokens drafted per step, k [tokens], in [1, :data:`MAX_DRAFT_TOKENS`].
    acceptance : float or Beta
        Probability α that the target accepts a drafted token, i.i.d. per position [1], in
        [0, 1]; a :class:`Beta` draws one α per request (first, before the positions' draws).

    Returns
    -------
    draws : ndarray of uint32
        ``draws[offset[i] + m]`` decides request ``i``'s step after its ``m``-th token.
    thresholds : ndarray of int64
        ``round(α^j · 2^32)`` for ``j = 1 … k`` [1/2^32], one row for every request or (a Beta)
        a row per request: the ``j``-th draft is accepted at a position whose draw is below
        the ``j``-th.
    offset : ndarray of int64
        Start of each request's positions: the output lengths' running sum.

    See Also
    --------
    speculative_gains : the tokens each step gains, from these.

    Notes
    -----
    ``P(u < t) = t / 2^32`` for a uniform 32-bit ``u`` and ``t`` in ``[0, 2^32]``, so each
    probability ``α^j`` is kept to 2^-33, and α = 0 and α = 1 exactly. Two draws come from each
    64-bit word of the generator. Drawn for every position whatever path a run takes, so what
    a request gains does not depend on the scheduling.
    """
    rng = as_generator(rng)
    k = whole_number("draft_tokens", draft_tokens, lo=1)
    if k > MAX_DRAFT_TOKENS:
        raise ValueError(f"draft_tokens must be in [1, {MAX_DRAFT_TOKENS}], got {draft_tokens!r}")
    output = check_count_array("output_tokens", output_tokens, lo=1)
    n = output.shape[0]
    # one α per request (a Beta), or one for all
    alpha = (acceptance.sample(rng, n) if isinstance(acceptance, Beta)
             else np.array([real_number("acceptance", acceptance, lo=0, hi=1)]))
    offset = np.zeros(n, np.int64)
    np.cumsum(output[:-1], out=offset[1:])
    total = int(output.sum())
    draws = rng.bit_generator.random_raw((total + 1) // 2).view(np.uint32)[:total]
    thresholds = np.rint(np.ldexp(alpha[:, None] ** np.arange(1, k + 1), 32)).astype(np.int64)
    return draws, thresholds, offset


def speculative_gains(rng: np.random.Generator, output_tokens, draft_tokens: int,
                      acceptance) -> tuple[np.ndarray, np.ndarray]:
    """Tokens each decode step of speculative decoding gains, drawn for every output position.

    Parameters
    ----------
    rng, output_tokens, draft_tokens, acceptance
        As for :func:`speculative_draws`: the generator, each request's output length [tokens]
        (>= 1), the tokens drafted per step k [tokens] and the acceptance α [1] (a float in
        [0, 1], or a :class:`Beta` of one α per request).

    Returns
    -------
    gain : ndarray of uint8
        ``gain[offset[i] + m]`` is what request ``i`` gains in the decode step taken after it
        has generated ``m`` tokens [tokens], in ``[1, min(k + 1, output - m)]`` (``m = 0`` is
        unused: the first token comes from the prefill).
    offset : ndarray of int64
        Start of each request's positions in ``gain``: the output lengths' running sum.

    See Also
    --------
    speculative_draws : the draws and thresholds these are made of.

    Notes
    -----
    At each position the accepted drafts are the leading successes of ``k`` Bernoulli(α)
    trials: ``L >= j`` exactly when the position's draw ``u`` (:func:`speculative_draws`) falls
    below ``α^j``, so ``L = #{j <= k : u < α^j}`` (a geometric capped at ``k``), and the step
    gains ``1 + L`` tokens (the accepted drafts and the target's own next token), capped at what
    is left of the output. α = 0 gains exactly one token a step (plain decoding). The mean
    uncapped gain is ``(1 − α^(k+1)) / (1 − α)``
    (:func:`rooflinekit.roofline.speculative_tokens_per_step`), at ``k`` comparisons of 32-bit
    integers a position. The simulator makes the same table with a compiled loop
    (``rooflinekit.batching._kernels.speculative_gain_table``, tested equal to this).

    References
    ----------
    .. [1] Leviathan, Kalman & Matias, "Fast Inference from Transformers via Speculative
           Decoding", ICML 2023, eq. (1).
    """
    u, threshold, offset = speculative_draws(rng, output_tokens, draft_tokens, acceptance)
    output = np.diff(np.append(offset, u.shape[0]))          # the lengths back (none: none)
    k = threshold.shape[1]
    gain = np.ones(u.shape[0], np.uint8)
    if threshold.shape[0] == 1:              # one α for every position
        for t in threshold[0]:
            if t == 0:
                break                        # α^j rounds to 0, and so every later power
            if t > np.iinfo(np.uint32).max:
                gain += 1                    # α = 1: every position accepts the j-th draft
            else:                            # (compared as uint32: no widening of u)
                gain += (u < np.uint32(t)).view(np.uint8)
    else:
        wide = u.astype(np.int64)            # thresholds of 2^32 (α = 1) need 64 bits
        for j in range(k):
            gain += (wide < np.repeat(threshold[:, j], output)).view(np.uint8)
    # capped at what is left of the output, output - m at position m: only the last k
    # positions of a request can pass it (uint8 holds k + 1 <= 65)
    left = np.arange(1, min(k, int(output.max(initial=0))) + 1)
    near_end = output[:, None] >= left                                  # (request, j)
    last = (offset + output)[:, None] - left                            # position output - j
    cap = np.broadcast_to(left, near_end.shape)[near_end]
    at = last[near_end]
    gain[at] = np.minimum(gain[at], cap)
    return gain, offset


# --- workloads ----------------------------------------------------------------------------------


def _column(key: str, doc: str) -> property:
    """A read-only attribute for one of a :class:`Workload`'s arrays."""
    return property(lambda self: self._data[key], doc=doc)


class Workload(Mapping):
    """A fixed workload: one arrival time, prompt and output length (and tier) per request.

    A ``Workload`` is a read-only mapping of ``arrival``, ``prompt_tokens``, ``output_tokens`` and
    ``priority``, so ``batcher.run(workload)`` and ``batcher.run(**workload)`` both work.

    Parameters
    ----------
    arrival : array_like of float
        Arrival times [tick or s], non-decreasing (requests are numbered in arrival order).
    prompt_tokens : array_like of int
        Prompt length of each request [tokens], >= 0.
    output_tokens : array_like of int
        Tokens each request generates [tokens], >= 1 (the first comes out of prefill).
    priority : array_like of int, optional
        Tier of each request: 0 (:data:`INTERACTIVE`, default) or 1 (:data:`BATCH`).
    prefix_group : array_like of int, optional
        Shared prefix each request's prompt starts with: a group number >= 0, or -1
        (:data:`NO_PREFIX`, default) for none. Given with ``prefix_tokens``.
    prefix_tokens : array_like of int, optional
        Length of that prefix [tokens], included in ``prompt_tokens`` (so at most the prompt); 0
        without a prefix, and one length for every request of a group.

    Raises
    ------
    ValueError
        Naming the argument: mismatched lengths, negative or fractional tokens, zero output tokens,
        unsorted or non-finite arrivals, a priority other than 0 or 1, a prefix longer than the
        prompt, one group with two lengths.

    Notes
    -----
    The mapping holds the four arrays above; the prefix arrays are read as attributes
    (:attr:`prefix_group`, :attr:`prefix_tokens`), so ``batcher.run(**workload)`` runs the
    workload without its prefixes (as prompts that share nothing).
    """

    _keys = ("arrival", "prompt_tokens", "output_tokens", "priority")

    def __init__(self, arrival, prompt_tokens, output_tokens, priority=None, prefix_group=None,
                 prefix_tokens=None):
        arr = np.asarray(arrival)
        if arr.ndim != 1:
            raise ValueError(f"arrival must be 1-D (one time per request), got shape {arr.shape}")
        if arr.dtype.kind == "b" or arr.dtype.kind not in "iuf" and arr.size:
            raise TypeError(f"arrival must hold real numbers, got dtype {arr.dtype}")
        arr = arr.astype(np.float64)
        if not np.isfinite(arr).all():
            raise ValueError("arrival must be finite (no NaN or inf)")
        if arr.size and arr.min() < 0:
            raise ValueError(f"arrival must be >= 0; got {float(arr.min())!r}")
        if arr.size and arr.max() > MAX_ARRIVAL:
            raise ValueError(f"arrival must be at most {MAX_ARRIVAL:g} [tick or s]: later times "
                             f"lose the resolution of a step in float64; got "
                             f"{float(arr.max())!r}")
        if arr.size > 1 and (np.diff(arr) < 0).any():
            raise ValueError("arrival must be sorted (non-decreasing): requests are numbered in "
                             "arrival order")
        prompt = check_count_array("prompt_tokens", prompt_tokens, lo=0)
        output = check_count_array("output_tokens", output_tokens, lo=1)
        if priority is None:
            prio = np.zeros(arr.size, dtype=np.int64)
        else:
            prio = check_count_array("priority", priority, lo=0)
            if prio.size and prio.max() > 1:
                raise ValueError(f"priority must be 0 (interactive) or 1 (batch); "
                                 f"got {int(prio.max())!r}")
        for name, a in (("prompt_tokens", prompt), ("output_tokens", output), ("priority", prio)):
            if a.size != arr.size:
                raise ValueError(f"{name} must have one entry per request ({arr.size}), "
                                 f"got {a.size}")
        group, length = _check_prefixes(prefix_group, prefix_tokens, prompt)
        self._data = {"arrival": arr, "prompt_tokens": prompt, "output_tokens": output,
                      "priority": prio}
        self._prefix = {"prefix_group": group, "prefix_tokens": length}
        for a in (*self._data.values(), group, length):
            a.flags.writeable = False

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._keys)

    def __len__(self):
        return len(self._keys)

    @property
    def n_requests(self) -> int:
        """Number of requests."""
        return int(self._data["arrival"].size)

    arrival = _column("arrival", "Arrival times [tick or s], sorted (float64, read-only).")
    prompt_tokens = _column("prompt_tokens", "Prompt lengths [tokens] (int64, read-only).")
    output_tokens = _column("output_tokens", "Output lengths [tokens], >= 1 (int64, read-only).")
    priority = _column("priority", "Tiers: 0 interactive, 1 batch (int64, read-only).")

    @property
    def prefix_group(self) -> np.ndarray:
        """Shared prefix of each request: group >= 0, or -1 for none (int64, read-only)."""
        return self._prefix["prefix_group"]

    @property
    def prefix_tokens(self) -> np.ndarray:
        """Length of each request's shared prefix [tokens], 0 for none (int64, read-only)."""
        return self._prefix["prefix_tokens"]

    def __repr__(self):
        return (f"Workload(n_requests={self.n_requests}, "
                f"output_tokens mean={self.output_tokens.mean() if self.n_requests else 0:g})")


def _check_prefixes(prefix_group, prefix_tokens, prompt):
    """Validated ``(prefix_group, prefix_tokens)`` int64 arrays of a workload (no prefix: -1, 0)."""
    n = prompt.size
    if prefix_group is None and prefix_tokens is None:
        return np.full(n, NO_PREFIX, dtype=np.int64), np.zeros(n, dtype=np.int64)
    if prefix_group is None or prefix_tokens is None:
        raise ValueError("prefix_group and prefix_tokens must be given together")
    group = check_count_array("prefix_group", prefix_group, lo=NO_PREFIX)
    length = check_count_array("prefix_tokens", prefix_tokens, lo=0)
    for name, a in (("prefix_group", group), ("prefix_tokens", length)):
        if a.size != n:
            raise ValueError(f"{name} must have one entry per request ({n}), got {a.size}")
    if n == 0:
        return group, length
    longer = length > prompt
    if longer.any():
        i = int(np.argmax(longer))
        raise ValueError(f"prefix_tokens: prefix longer than the prompt for request {i} "
                         f"({int(length[i])} > {int(prompt[i])} prompt tokens)")
    none = group == NO_PREFIX
    if (length[none] != 0).any():
        raise ValueError("prefix_tokens must be 0 where prefix_group is -1 (no prefix)")
    if (length[~none] < 1).any():
        raise ValueError("prefix_tokens must be >= 1 where prefix_group names a group")
    if (~none).any():
        g, t = group[~none], length[~none]
        # each group's first length, by sorting (not an array as long as the largest group
        # id, which may be 2**53: SharedPrefix(groups=) has no bound of its own)
        order = np.argsort(g, kind="stable")
        starts = np.r_[True, g[order][1:] != g[order][:-1]]
        first = t[order][starts][np.cumsum(starts) - 1]
        differs = first != t[order]
        if differs.any():
            k = int(g[order][np.argmax(differs)])
            raise ValueError(f"prefix_tokens: group {k} has more than one prefix length (a "
                             f"group is one prefix)")
    return group, length


@dataclasses.dataclass(frozen=True)
class WorkloadSpec:
    """A distribution of workloads: ``n_requests`` requests with random lengths and arrivals.

    Parameters
    ----------
    n_requests : int
        Requests per workload (>= 1).
    output : distribution
        Output-length distribution [tokens] (draws below 1 are raised to 1).
    prompt : distribution
        Prompt-length distribution [tokens]; default ``Constant(0)`` (the guide's lab ignores it).
    arrival : arrival process
        Default :class:`AllAtOnce`.
    batch_fraction : float
        Probability that a request belongs to the batch tier (priority 1), in [0, 1]; default 0.
    prefix : SharedPrefix or None
        Shared prompt prefixes; default none. A prefixed request's prompt is the prefix followed
        by its drawn prompt.

    Notes
    -----
    :meth:`sample` draws, in this order, arrivals, prompts, outputs, tiers and prefixes from one
    generator, so a seed fixes the workload (a prefix changes none of the earlier draws).
    Monte Carlo replicates each get their own generator, spawned from one ``SeedSequence``.
    """

    n_requests: int
    output: object
    prompt: object = Constant(0)
    arrival: object = AllAtOnce()
    batch_fraction: float = 0.0
    prefix: SharedPrefix | None = None

    def __post_init__(self):
        whole_number("n_requests", self.n_requests, lo=1)
        for name in ("output", "prompt", "arrival"):
            if not callable(getattr(getattr(self, name), "sample", None)):
                raise TypeError(f"{name} must be a distribution object with a sample(rng, size) "
                                f"method, got {type(getattr(self, name)).__name__}")
        real_number("batch_fraction", self.batch_fraction, lo=0, hi=1)
        if self.prefix is not None and not isinstance(self.prefix, SharedPrefix):
            raise TypeError(f"prefix must be a SharedPrefix or None, got "
                            f"{type(self.prefix).__name__}")

    def draw(self, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        """Raw arrays ``(arrival, prompt_tokens, output_tokens, priority)`` from ``rng``.

        Prompts include their prefixes; :meth:`draw_prefixed` also returns which they are.
        """
        return self.draw_prefixed(rng)[:4]

    def draw_prefixed(self, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        """Raw arrays ``(arrival, prompt_tokens, output_tokens, priority, prefix_group,
        prefix_tokens)`` from ``rng`` (group -1 and 0 tokens without a prefix)."""
        n = int(self.n_requests)
        arrival = np.asarray(self.arrival.sample(rng, n), dtype=np.float64)
        prompt = np.asarray(self.prompt.sample(rng, n), dtype=np.int64)
        output = np.maximum(np.asarray(self.output.sample(rng, n), dtype=np.int64), 1)
        if self.batch_fraction > 0:
            priority = (rng.random(n) < float(self.batch_fraction)).astype(np.int64)
        else:
            priority = np.zeros(n, dtype=np.int64)
        if self.prefix is None:
            group, length = np.full(n, NO_PREFIX, dtype=np.int64), np.zeros(n, dtype=np.int64)
        else:
            # drawn last, so that the draws above are those of the same spec without a prefix
            group, length = self.prefix.sample(rng, n)
            prompt = prompt + length
        return arrival, prompt, output, priority, group, length

    def sample(self, seed=None) -> Workload:
        """One workload drawn with ``seed`` (an int, SeedSequence or Generator)."""
        return Workload(*self.draw_prefixed(as_generator(seed)))

    def mean_output_tokens(self) -> float:
        """Mean output tokens of a request [tokens], outputs below one token raised to one as
        :meth:`draw` does (:func:`expected_tokens` with ``at_least=1``): what sizes the work
        before a workload is drawn; the same number on every call."""
        return expected_tokens(self.output, at_least=1)

    def replace(self, **changes) -> "WorkloadSpec":
        """A copy with fields changed; ``"output.sigma"``-style keys change a field of a field."""
        direct = {}
        for key, value in changes.items():
            if "." in key:
                head, field = key.split(".", 1)
                if head not in ("output", "prompt", "arrival", "prefix"):
                    raise ValueError(f"unknown workload parameter {key!r}")
                inner = direct.get(head, getattr(self, head))
                if inner is None:
                    raise ValueError(f"unknown workload parameter {key!r}: the spec has no "
                                     f"{head} (set {head}= first)")
                if field not in {f.name for f in dataclasses.fields(inner)}:
                    raise ValueError(f"unknown workload parameter {key!r}: "
                                     f"{type(inner).__name__} has no field {field!r}")
                direct[head] = dataclasses.replace(inner, **{field: value})
            else:
                direct[key] = value
        names = {f.name for f in dataclasses.fields(self)}
        for key in direct:
            if key not in names:
                raise ValueError(f"unknown workload parameter {key!r}; fields are {sorted(names)}")
        return dataclasses.replace(self, **direct)


def guide_workload() -> Workload:
    """The 24-request bursty workload that reproduces the guide's §4.3 figures.

    Request ``i`` has 400 output tokens if ``i % 8 == 0`` else 20 (3 long, 21 short), no prompt,
    and arrives at tick ``(i // 4) * 10``. Static batching (8 per batch) takes 1,220 ticks with mean
    service latency 336.67; continuous batching (16 slots) 440 ticks and 67.5.

    References
    ----------
    .. [1] ``docs/conventions.md``, "Static vs continuous: 1,220 / 440 ticks, mean latency 337 / 68".
    """
    i = np.arange(24)
    return Workload(arrival=(i // 4) * 10.0, prompt_tokens=np.zeros(24, dtype=np.int64),
                    output_tokens=np.where(i % 8 == 0, 400, 20))


def coerce_workload(workload=None, arrival=None, prompt_tokens=None, output_tokens=None,
                     priority=None) -> Workload:
    """A :class:`Workload` from a workload object/mapping or from the keyword arrays."""
    if workload is not None:
        if any(v is not None for v in (arrival, prompt_tokens, output_tokens, priority)):
            raise TypeError("pass either a workload or arrival/prompt_tokens/output_tokens, "
                            "not both")
        if isinstance(workload, Workload):
            return workload
        if isinstance(workload, WorkloadSpec):
            raise TypeError("workload is a WorkloadSpec (a distribution); draw one with "
                            ".sample(seed) or use monte_carlo")
        if isinstance(workload, Mapping):
            return Workload(**workload)
        raise TypeError(f"workload must be a Workload or a mapping of arrays, got "
                        f"{type(workload).__name__}")
    missing = [n for n, v in (("arrival", arrival), ("prompt_tokens", prompt_tokens),
                              ("output_tokens", output_tokens)) if v is None]
    if missing:
        raise TypeError(f"missing workload arrays: {', '.join(missing)}")
    return Workload(arrival, prompt_tokens, output_tokens, priority)
