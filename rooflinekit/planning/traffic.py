"""What a deployment must serve and how fast: :class:`Traffic` and :class:`SLO`.

``Traffic`` is the demand (peak rate, length distributions, arrivals, optional monthly profile);
``SLO`` the latency targets at a percentile (TTFT, every-gap ITL, per-request TPOT, end-to-end),
optionally with a goodput attainment. Both are frozen specs, checked on construction.
"""

from __future__ import annotations

import dataclasses
import numbers

import numpy as np

from rooflinekit._validation import as_1d, check_one_of, describe, real_number, show, whole_number
from rooflinekit.units import HOURS_PER_MONTH, SECONDS_PER_HOUR
from rooflinekit.workloads import Constant, Gamma, Poisson, SharedPrefix, WorkloadSpec

__all__ = ["Traffic", "SLO", "ARRIVALS", "SECONDS_PER_MONTH", "MIN_RATE"]

#: Arrival processes :class:`Traffic` knows.
ARRIVALS = ("poisson", "gamma")

#: The latency targets an :class:`SLO` may give, in the order of the simulator's ``*_target``
#: keywords: time to first token, every-gap inter-token latency, end-to-end, per-request TPOT.
_TARGETS = ("ttft", "itl", "e2e", "tpot")

#: Seconds in the planning month (730 hours, as every monthly price in the package).
SECONDS_PER_MONTH = HOURS_PER_MONTH * SECONDS_PER_HOUR

#: The lowest peak rate a :class:`Traffic` takes [requests/s]: 1e-6, one request in about
#: 12 days (2.6 a month). Below it no fleet is worth planning, and the planner's arrivals
#: (unit-rate draws divided by the rate) would leave the simulator's time range; a denormal
#: rate such as 5e-324 made ``1 / rate`` overflow and a replica's share of it divide by zero.
MIN_RATE = 1e-6


def _lengths(name: str, value, lo: int):
    """A token-length distribution, or a whole number of tokens (>= ``lo``) as :class:`Constant`."""
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
        return Constant(whole_number(name, value, lo=lo))
    if not callable(getattr(value, "sample", None)):
        raise TypeError(f"{name} must be a token-length distribution from rooflinekit.workloads "
                        f"(Constant, LogNormal, ...) or a whole number of tokens; "
                        f"got {describe(value)}")
    return value


@dataclasses.dataclass(frozen=True)
class Traffic:
    """The demand a deployment serves: peak rate, request lengths, arrivals, monthly profile.

    Parameters
    ----------
    rate : float
        Peak request rate the fleet must sustain [requests/s], finite, at least
        :data:`MIN_RATE` (1e-6) and at most 1e30.
    prompt, output : distribution or int
        Prompt and output length [tokens]: a distribution from :mod:`rooflinekit.workloads`
        (``LogNormal(2000, 0.5)``, ``Empirical(...)``, ...) or a whole number (every request
        alike; at least 1 for outputs). Drawn outputs below one token are raised to one.
    arrival : {"poisson", "gamma"}
        Arrival process at ``rate``: Poisson, or a Gamma renewal process with shape
        ``burstiness`` (vLLM's ``bench serve --burstiness``).
    burstiness : float, optional
        Gamma shape k > 0 (squared coefficient of variation of the gaps 1/k; 1 is Poisson, below
        1 bursty). Only with ``arrival="gamma"`` (default 1 there).
    profile : array_like, optional
        Requests per period over one month (e.g. 730 hourly counts), each finite and >= 0, for
        the monthly volume and the spillover plan. Without it the month is taken at the peak
        ``rate`` throughout (the most a fleet sized for ``rate`` can be asked to serve).
    prefix : SharedPrefix, optional
        Shared prompt prefixes (a system prompt, retrieved documents): a share of requests start
        with one of a few prefixes (:class:`rooflinekit.workloads.SharedPrefix`), which a plan
        with ``prefix_caching=True`` keeps in the KV cache.

    Raises
    ------
    ValueError, TypeError
        Naming the argument, before any work.

    Examples
    --------
    >>> from rooflinekit.workloads import LogNormal
    >>> traffic = Traffic(20, LogNormal(2000, 0.5), LogNormal(300, 0.8))
    >>> f"{traffic.monthly_requests:.3g}"
    '5.26e+07'
    """

    rate: float
    prompt: object
    output: object
    arrival: str = "poisson"
    burstiness: float | None = None
    profile: object = None
    prefix: SharedPrefix | None = None

    def __post_init__(self):
        rate = real_number("rate", self.rate, lo=0, lo_open=True)
        if rate < MIN_RATE:
            raise ValueError(f"rate must be at least {MIN_RATE:g} requests/s (one request in "
                             f"about 12 days); got {show(self.rate)}")
        object.__setattr__(self, "prompt", _lengths("prompt", self.prompt, 0))
        object.__setattr__(self, "output", _lengths("output", self.output, 1))
        check_one_of("arrival", self.arrival, ARRIVALS)
        if self.burstiness is not None:
            if self.arrival != "gamma":
                raise ValueError(f"burstiness takes effect only with arrival='gamma'; "
                                 f"got arrival={self.arrival!r}")
            real_number("burstiness", self.burstiness, lo=0, lo_open=True)
        if self.prefix is not None and not isinstance(self.prefix, SharedPrefix):
            raise TypeError(f"prefix must be a rooflinekit.workloads.SharedPrefix or None; got "
                            f"{describe(self.prefix)}")
        if self.profile is not None:
            profile = as_1d("profile", self.profile, allow_scalar=False)
            if not np.isfinite(profile).all() or (profile < 0).any():
                raise ValueError(f"profile must hold finite request counts >= 0 per period; "
                                 f"got {show(self.profile)}")
            if profile.sum() <= 0:
                raise ValueError("profile must hold some requests (its sum is 0)")
            profile = profile.astype(np.float64)
            profile.flags.writeable = False
            object.__setattr__(self, "profile", profile)

    def arrivals(self, rate=None):
        """The arrival process at ``rate`` [requests/s] (default the peak ``rate``)."""
        rate = float(self.rate if rate is None else rate)
        if self.arrival == "gamma":
            return Gamma(rate, 1.0 if self.burstiness is None else float(self.burstiness))
        return Poisson(rate)

    def workload(self, n_requests: int, rate=None) -> WorkloadSpec:
        """A :class:`~rooflinekit.workloads.WorkloadSpec` of ``n_requests`` at ``rate``."""
        return WorkloadSpec(n_requests, output=self.output, prompt=self.prompt,
                            arrival=self.arrivals(rate), prefix=self.prefix)

    @property
    def monthly_requests(self) -> float:
        """Requests in the month [requests]: the profile's sum, else ``rate`` all month."""
        if self.profile is not None:
            return float(self.profile.sum())
        return float(self.rate) * SECONDS_PER_MONTH


@dataclasses.dataclass(frozen=True)
class SLO:
    """Latency targets at a percentile: what "meets the SLO" means for a plan.

    Parameters
    ----------
    ttft : float, optional
        Time to first token, from arrival [s], > 0.
    itl : float, optional
        Inter-token latency [s], > 0, over *every* gap between consecutive output tokens of a
        request (not per-request means): a stall of one sequence counts as one long gap.
    e2e : float, optional
        End-to-end latency, arrival to last token [s], > 0.
    quantile : float
        The percentile each target holds at, in (0, 1); default 0.95 (p95).
    attainment : float, optional
        Goodput target in (0, 1]: the share of all requests that complete within every target
        given (TTFT, the request's mean ITL against ``itl``, its TPOT against ``tpot``; a
        one-token request meets both).
    tpot : float, optional
        Time per output token [s], > 0, *per request*, at the quantile over requests: a
        request's TPOT is ``(e2e latency - TTFT) / (output tokens - 1)``, the mean of its gaps,
        and requests with one output token have none (excluded), as ``vllm bench serve`` states
        it (vllm-project/vllm, ``vllm/benchmarks/serve.py``, ``calculate_metrics``: ``if
        output_len > 1: tpot = (latency - ttft) / (output_len - 1)``, percentiles by
        ``np.percentile`` over those requests). A stall of one sequence is spread over its
        request's mean, where ``itl`` counts it as one long gap.

    Notes
    -----
    A target "holds at quantile q" when at least a share q of the requests (of the gaps, for
    ITL; of the requests with two or more output tokens, for TPOT) meet it: the empirical
    distribution's q-quantile is within the target. Requests that are rejected count as misses
    for TTFT, TPOT and end-to-end.

    Examples
    --------
    >>> SLO(ttft=1.0, itl=0.05).targets
    {'ttft': 1.0, 'itl': 0.05}
    >>> SLO(ttft=1.0, tpot=0.04, quantile=0.99).targets
    {'ttft': 1.0, 'tpot': 0.04}
    """

    ttft: float | None = None
    itl: float | None = None
    e2e: float | None = None
    quantile: float = 0.95
    attainment: float | None = None
    tpot: float | None = None

    def __post_init__(self):
        for name in _TARGETS:
            real_number(name, getattr(self, name), lo=0, lo_open=True, allow_none=True)
        real_number("quantile", self.quantile, lo=0, hi=1, lo_open=True, hi_open=True)
        real_number("attainment", self.attainment, lo=0, hi=1, lo_open=True, allow_none=True)

    @property
    def targets(self) -> dict:
        """The latency targets given, by name [s], in the order ttft, itl, e2e, tpot."""
        return {name: float(getattr(self, name)) for name in _TARGETS
                if getattr(self, name) is not None}
