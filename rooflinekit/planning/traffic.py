"""What a deployment must serve and how fast: :class:`Traffic` and :class:`SLO`.

``Traffic`` is the demand (peak rate, length distributions, arrivals, optional monthly profile);
``SLO`` the latency targets at a percentile (TTFT, every-gap ITL, per-request TPOT, end-to-end),
optionally with a goodput attainment. Both are frozen specs, checked on construction.
"""

from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np
import xarray as xr

from rooflinekit._validation import (MAX_CONFIG_BYTES, as_1d, check_one_of, describe,
                                     read_regular_file, real_number, show, whole_number)
from rooflinekit.units import HOURS_PER_MONTH, SECONDS_PER_HOUR
from rooflinekit.workloads import (Constant, Gamma, Poisson, SharedPrefix, WorkloadSpec,
                                  expected_tokens)

__all__ = ["Traffic", "SLO", "ARRIVALS", "SECONDS_PER_MONTH", "MIN_RATE", "PROFILE_SHAPES",
           "month_profile", "read_profile"]

#: Built-in shapes of a month's traffic (:func:`month_profile`).
PROFILE_SHAPES = ("flat", "business-hours", "diurnal")

#: Hours in the planning month, one profile period each: 730.
_MONTH_HOURS = int(HOURS_PER_MONTH)

#: Arrival processes :class:`Traffic` knows.
ARRIVALS = ("poisson", "gamma")

#: The latency targets an :class:`SLO` may give, in the order of the simulator's ``*_target``
#: keywords: time to first token, every-gap inter-token latency, end-to-end, per-request TPOT.
_TARGETS = ("ttft", "itl", "e2e", "tpot")

#: Seconds in the planning month (730 hours, as every monthly price in the package).
SECONDS_PER_MONTH = HOURS_PER_MONTH * SECONDS_PER_HOUR

#: The lowest peak rate a :class:`Traffic` takes [requests/s]: 1e-6, one request in about
#: 12 days; below it the planner's arrivals (draws ÷ rate) would leave the simulator's range.
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
        or a whole number (every request alike; outputs at least 1, drawn ones raised to 1).
    arrival : {"poisson", "gamma"}
        Arrival process at ``rate``: Poisson, or a Gamma renewal process with shape
        ``burstiness`` (vLLM's ``bench serve --burstiness``).
    burstiness : float, optional
        Gamma shape k > 0 (squared coefficient of variation of the gaps 1/k; 1 is Poisson, below
        1 bursty). Only with ``arrival="gamma"`` (default 1 there).
    profile : array_like, optional
        Requests per period over one month of n equal periods of 730 h / n, each finite and >=
        0, for the monthly volume, the spillover plan and the autoscaled fleet; without it the
        month runs at the peak ``rate`` throughout. See :func:`month_profile` and
        :func:`read_profile`.
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
    def mean_prompt_tokens(self) -> float:
        """Mean prompt tokens of a request [tokens], a shared prefix's share included.

        ``E[prompt] + share · prefix tokens``, exact
        (:func:`~rooflinekit.workloads.expected_tokens`): what a month of this traffic averages
        and what its per-token prices are charged on, not the mean of a plan's few hundred
        draws.
        """
        shared = 0.0 if self.prefix is None else \
            float(self.prefix.share) * int(self.prefix.tokens)
        return expected_tokens(self.prompt) + shared

    @property
    def mean_output_tokens(self) -> float:
        """Mean output tokens of a request [tokens], exact, each at least one token as drawn
        (:func:`~rooflinekit.workloads.expected_tokens` with ``at_least=1``)."""
        return expected_tokens(self.output, at_least=1)

    @property
    def monthly_requests(self) -> float:
        """Requests in the month [requests]: the profile's sum, else ``rate`` all month."""
        if self.profile is not None:
            return float(self.profile.sum())
        return float(self.rate) * SECONDS_PER_MONTH

    def token_demand(self, tokens_per_request) -> xr.DataArray:
        """The profile in tokens per period, the demand of
        :func:`~rooflinekit.planning.plan_with_spillover` and :func:`optimal_floor`.

        Parameters
        ----------
        tokens_per_request : float
            Mean prompt + output tokens of a request [tokens], > 0 (a plan's
            ``attrs["mean_prompt_tokens"] + attrs["mean_output_tokens"]``).

        Returns
        -------
        xarray.DataArray
            Over ``time`` (the profile's periods; one period of the whole month without a
            profile): ``profile × tokens_per_request`` [tokens per period].

        Notes
        -----
        ``d_t = requests_t × tokens_per_request``: the spillover formulas take tokens per period.

        References
        ----------
        .. [1] Serving-capacity guide §6.4 (demand per period against a dedicated floor).

        See Also
        --------
        rooflinekit.planning.plan_with_spillover : a floor with pay-as-you-go spillover.
        """
        per_request = real_number("tokens_per_request", tokens_per_request, lo=0, lo_open=True)
        requests = self.profile if self.profile is not None else \
            np.array([self.monthly_requests])
        return xr.DataArray(requests * per_request, dims=("time",), name="demand",
                            attrs={"units": "tokens", "long_name": "token demand per period"})


@dataclasses.dataclass(frozen=True)
class SLO:
    """Latency targets at a percentile: what "meets the SLO" means for a plan.

    Parameters
    ----------
    ttft : float, optional
        Time to first token, from arrival [s], > 0.
    itl : float, optional
        Inter-token latency [s], > 0, over *every* gap between consecutive output tokens of a
        request (not per-request means): a stall of one sequence counts as one long gap. The
        gaps are the tokens' as the engine makes them, what a client of a server at the
        engines' default ``--stream-interval 1`` sees; a server sending chunks of ``k`` tokens
        (vLLM's and SGLang's ``--stream-interval k``) shows a client about ``k`` steps a gap,
        and the same TTFT and TPOT, and :func:`~rooflinekit.planning.plan`'s
        ``stream_interval`` holds the target to those gaps.
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
        request's TPOT is ``(e2e latency - TTFT) / (output tokens - 1)``, requests of one output
        token excluded, as ``vllm bench serve`` computes it (``vllm/benchmarks/serve.py``,
        ``calculate_metrics``). A stall of one sequence is spread over its request's mean,
        where ``itl`` counts it as one long gap.

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


def month_profile(shape: str, peak_rate, *, start_hour=9, end_hour=17, workdays=5,
                  off_peak=0.1, peak_hour=14) -> np.ndarray:
    """Requests per hour over the planning month for a built-in traffic shape.

    Parameters
    ----------
    shape : {"flat", "business-hours", "diurnal"}
        ``flat``: the peak rate every hour. ``business-hours``: the peak from ``start_hour`` to
        ``end_hour`` on the first ``workdays`` days of each week, ``off_peak`` × the peak
        otherwise. ``diurnal``: a daily cosine from ``off_peak`` × the peak (12 hours from
        ``peak_hour``) to the peak (at ``peak_hour``), every day.
    peak_rate : float
        The busiest hour's rate [requests/s], > 0: the :class:`Traffic` ``rate``.
    start_hour, end_hour : int
        Business hours, ``0 <= start_hour < end_hour <= 24`` [h of the day]; default 9 to 17.
    workdays : int
        Working days a week, in [1, 7]; default 5 (the month starts on a Monday).
    off_peak : float
        Rate outside business hours, or at the diurnal trough, as a share of the peak [1], in
        [0, 1]; default 0.1.
    peak_hour : float
        Hour of the diurnal peak, in [0, 24); default 14.

    Returns
    -------
    numpy.ndarray
        730 hourly request counts [requests per hour] (``rate × 3600`` per hour at its share),
        for ``Traffic(profile=...)``.

    Notes
    -----
    Hour t of the month is hour ``t mod 24`` of day ``⌊t / 24⌋``, weekday ``⌊t / 24⌋ mod 7``
    (0 = Monday). Diurnal share ``s(t) = o + (1 − o)(1 + cos(2π(t − t_peak)/24))/2``.
    A 9-to-17, 5-day month (730 h) at off-peak 0.1 has 177 hours at the peak and serves
    ``(177 + 0.1 × 553) / 730 = 31.8 %`` of the requests of a peak-all-month traffic.

    References
    ----------
    .. [1] Serving-capacity guide §6.4 (a month's demand profile and its peaks).

    See Also
    --------
    read_profile : a measured month from a CSV of rates.
    Traffic.token_demand : the same profile in tokens per period.
    """
    check_one_of("shape", shape, PROFILE_SHAPES)
    peak = real_number("peak_rate", peak_rate, lo=0, lo_open=True)
    start = whole_number("start_hour", start_hour, lo=0)
    end = whole_number("end_hour", end_hour, lo=1)
    if not start < end <= 24:
        raise ValueError(f"start_hour and end_hour must satisfy 0 <= start_hour < end_hour <= "
                         f"24; got {start}-{end}")
    days = whole_number("workdays", workdays, lo=1)
    if days > 7:
        raise ValueError(f"workdays must be in [1, 7]; got {days}")
    low = real_number("off_peak", off_peak, lo=0, hi=1)
    at = real_number("peak_hour", peak_hour, lo=0, hi=24, hi_open=True)
    t = np.arange(_MONTH_HOURS, dtype=np.float64)
    hour, day = t % 24, (t // 24) % 7
    if shape == "flat":
        share = np.ones_like(t)
    elif shape == "business-hours":
        share = np.where((day < days) & (hour >= start) & (hour < end), 1.0, low)
    else:
        share = low + (1.0 - low) * (1.0 + np.cos(2 * np.pi * (t - at) / 24.0)) / 2.0
    return peak * SECONDS_PER_HOUR * share


#: Units a profile's period may be given in, with their length [s].
_PERIOD_UNITS = {"s": 1.0, "min": 60.0, "h": SECONDS_PER_HOUR, "d": 24 * SECONDS_PER_HOUR}

#: The shortest period a profile may have [s]: one minute (43,800 periods a month).
SHORTEST_PERIOD = 60.0

#: Header names of a profile file's columns: the rate and the period.
_RATE_COLUMNS = ("rate", "requests_per_second", "requests/s", "rps")
_PERIOD_COLUMNS = ("period", "period_s")


def profile_period(period) -> float:
    """The length of one period of a traffic profile [s], checked against the month.

    Parameters
    ----------
    period : float or str
        Seconds, or a number with a unit: ``s``, ``min``, ``h`` or ``d`` (``"15min"``,
        ``"1h"``, ``"1 d"``, ``900``).

    Returns
    -------
    float
        The period [s]: a whole number of seconds, at least :data:`SHORTEST_PERIOD` (60 s),
        that tiles the 730-hour month: ``3600 mod P = 0`` (it divides an hour) or ``P mod 3600
        = 0`` (whole hours, each taking its period's rate), at most the month.

    Raises
    ------
    ValueError, TypeError
        Naming ``period``, the allowed units and the rule, for anything else.

    References
    ----------
    .. [1] Serving-capacity guide §6.4 (a month's demand profile).
    """
    if isinstance(period, str):
        text = period.strip()
        number = text.rstrip("abcdefghijklmnopqrstuvwxyz ").strip()
        unit = text[len(number):].strip() or "s"
        if unit not in _PERIOD_UNITS or not _is_number(number):
            raise ValueError(f"period must be seconds or a number with a unit "
                             f"({', '.join(_PERIOD_UNITS)}), such as 15min, 1h or 1d; got "
                             f"{period!r}")
        seconds = real_number("period", float(number), lo=0, lo_open=True) * _PERIOD_UNITS[unit]
    else:
        seconds = real_number("period", period, lo=0, lo_open=True)
    if not math.isfinite(seconds) or seconds != round(seconds) or seconds < SHORTEST_PERIOD \
            or seconds > SECONDS_PER_MONTH or \
            not (SECONDS_PER_HOUR % seconds == 0 or seconds % SECONDS_PER_HOUR == 0):
        raise ValueError(f"period must tile the {_MONTH_HOURS}-hour month: a whole number of "
                         f"seconds from 1 min that divides an hour (such as 15min) or a whole "
                         f"number of hours up to {_MONTH_HOURS} h (such as 1h or 1d); got "
                         f"{show(period)} ({seconds:g} s)")
    return float(seconds)


def read_profile(path, period=None) -> np.ndarray:
    """A month of request counts per period from a CSV of request rates.

    Parameters
    ----------
    path : str or os.PathLike
        A text file of one rate per line [requests/s]: the column headed ``rate`` (or
        ``requests_per_second``, ``requests/s``, ``rps``), else each line's last field; a first
        line that is not a number is a header, ``#`` starts a comment. A column headed
        ``period`` (or ``period_s``) gives the lines' one period (:func:`profile_period`). N
        lines are N consecutive periods, repeated over the month.
    period : float or str, optional
        The period of each line when the file has no ``period`` column [s or with a unit];
        default one hour. With a ``period`` column it must agree with it.

    Returns
    -------
    numpy.ndarray
        Requests per period over the month, for ``Traffic(profile=...)``: for a period ``P``
        of an hour or less, ``730 × 3600 / P`` counts of ``rate × P``; for a period of whole
        hours, 730 hourly counts of ``rate × 3600`` (each hour at its period's rate).

    Raises
    ------
    ValueError
        A rate that is negative, not finite or not a number, naming the file and the line (and
        the column); a period that does not tile the month or differs between lines or from
        ``period``; an empty file; more rates than the month holds; all rates 0.

    Notes
    -----
    Period t of the output (of length ``P' = min(P, 1 h)``) takes line ``⌊t P' / P⌋ mod N``:
    ``requests_t = rate × P'``. The file is read bounded and only if it is a regular file.

    References
    ----------
    .. [1] Serving-capacity guide §6.4 (a month's demand profile).

    See Also
    --------
    month_profile : the built-in shapes.
    profile_period : the periods a profile may have.
    """
    given = None if period is None else profile_period(period)
    text = read_regular_file(path, "profile file", MAX_CONFIG_BYTES)
    rates, column, period_column, seen = [], None, None, None
    for number, line in enumerate(text.splitlines(), start=1):
        fields = [f.strip() for f in line.split("#", 1)[0].strip().rstrip(",").split(",")]
        if not any(fields):
            continue
        if not rates and column is None and not _is_number(fields[-1]):
            names = [f.lower() for f in fields]             # a header
            column = next((names.index(n) for n in _RATE_COLUMNS if n in names), -1)
            period_column = next((names.index(n) for n in _PERIOD_COLUMNS if n in names),
                                 None)
            continue
        where = f"profile file {path}, line {number}"
        index = -1 if column is None else column
        field = fields[index] if -len(fields) <= index < len(fields) else ""
        try:
            value = float(field)
        except ValueError:
            raise ValueError(f"{where}: expected a rate [requests/s], got {field!r}") from None
        if not np.isfinite(value) or value < 0:
            raise ValueError(f"{where}: a rate must be finite and >= 0 [requests/s], got "
                             f"{field}")
        if period_column is not None:
            cell = fields[period_column] if period_column < len(fields) else ""
            try:
                this = profile_period(cell)
            except ValueError as exc:
                raise ValueError(f"{where}, column period: {exc}") from None
            if seen is not None and this != seen:
                raise ValueError(f"{where}, column period: every line must have the same "
                                 f"period; got {this:g} s after {seen:g} s")
            seen = this
        rates.append(value)
    if not rates:
        raise ValueError(f"profile file {path} holds no rates")
    if seen is not None and given is not None and seen != given:
        raise ValueError(f"profile file {path}: its period column says {seen:g} s, the period "
                         f"given is {given:g} s")
    step = seen or given or SECONDS_PER_HOUR
    if len(rates) * step > SECONDS_PER_MONTH * (1 + 1e-12):
        raise ValueError(f"profile file {path} holds {len(rates)} rates of {step:g} s, more "
                         f"than the {_MONTH_HOURS}-hour month ({SECONDS_PER_MONTH / step:g} "
                         f"periods)")
    if max(rates) <= 0:
        raise ValueError(f"profile file {path}: every rate is 0")
    out_step = min(step, SECONDS_PER_HOUR)
    periods = int(round(SECONDS_PER_MONTH / out_step))
    per_line = int(round(step / out_step))
    t = np.arange(periods)
    return np.asarray(rates)[(t // per_line) % len(rates)] * out_step


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
