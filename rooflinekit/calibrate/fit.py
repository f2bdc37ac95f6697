"""Calibration: fit the roofline's efficiency knobs to measured serving runs, with error bars.

The roofline's knobs default to the guide's ideal machine (``compute_efficiency = 1``,
``bandwidth_efficiency = 1``, ``step_overhead = 0``); real engines reach only part of the
datasheet peaks and pay a fixed cost per step, so the ideal model misses measured latency by
tens of percent. :func:`calibrate` fits the knobs **per phase** (prefill from time to first
token, decode from the time per output token) to a measurement table
(:mod:`rooflinekit.calibrate.measurements`, :mod:`rooflinekit.calibrate.readers`): bounded least
squares on relative residuals (``scipy.optimize.least_squares``) through the real roofline
functions, with ``fit="engine"`` also the engine knobs (a cost per layer, the KV traffic's own
efficiency, the link latency, the TTFT intercept, the all-reduces' share of the link bandwidth),
with ``group_by`` knob sets per GPU, engine or weight format beside a shared set; seeded
bootstrap intervals; residuals and MAPE at ideal efficiency and after. The result's
:class:`~rooflinekit.calibrate.model.Calibration` stands wherever an engine does.
:func:`cross_validate` reports the error on held-out configurations (k-fold, or
leave-one-group-out by model or GPU). Units inside are SI; the files carry milliseconds in
columns whose names say so (``ttft_ms``). How to use it: ``docs/calibration.md``.

What the fit cannot see
-----------------------
The roofline models one engine step. A TTFT measured under concurrency also contains queueing and
the prefills of other requests; an ITL measured under load also contains the chunked prefills that
share each step. The fitted knobs absorb part of that on average, which is what calibration is for,
but rows taken past the engine's saturation point (TTFT growing with the queue) describe the
scheduler, not the step: leave them out, or model them with :mod:`rooflinekit.batching`.

References
----------
.. [1] Williams, Waterman & Patterson, "Roofline: An Insightful Visual Performance Model for
   Multicore Architectures", CACM 52(4), 2009.
.. [2] Efron & Tibshirani, *An Introduction to the Bootstrap*, Chapman & Hall, 1993 (percentile
   intervals, ch. 13).
.. [3] Branch, Coleman & Li, "A Subspace, Interior, and Conjugate Gradient Method for Large-Scale
   Bound-Constrained Minimization Problems", SIAM J. Sci. Comput. 21(1), 1999 (``method="trf"``).
.. [4] vLLM ``benchmarks/benchmark_serving.py`` / ``vllm bench serve`` (result JSON fields) and
   ``vllm/v1/core/kv_cache_utils.py`` (KV cache log lines).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType

import numpy as np
import xarray as xr

from rooflinekit import units
from rooflinekit._labels import document, parameter_entries
from rooflinekit._validation import (
    check_keys,
    check_mapping,
    check_one_of,
    real_number,
    show,
    whole_number,
)
from rooflinekit.calibrate.measurements import (
    MEASUREMENT,
    _check_measurements,
    measured_engine,
)
from rooflinekit.calibrate.model import (
    PARAMETER,
    PHASE,
    _check_engine,
    _check_overrides,
    _check_workload,
    _Groups,
    _predict_calibrated,
    _row_keys,
    _targets,
)
from rooflinekit.hardware import GPU
from rooflinekit.profiles import (
    GROUP_FIELDS,
    IDEAL_KNOBS,
    KNOBS,
    PARAMETERS,
    PHASES,
    SECONDS_KNOBS,
    Calibration,
)
from rooflinekit.models import ModelShape
from rooflinekit.roofline import MAX_MXFP4_SHARE, Engine

__all__ = ["MAX_RESAMPLES", "FOLD", "DEFAULT_BOUNDS", "ENGINE_FIT", "GROUP_KNOBS",
           "CalibrationResult", "CrossValidationResult", "calibrate", "cross_validate"]

#: Most bootstrap resamples one fit runs: each is a least-squares fit of every row, so 1e9
#: would run for days (and hold 1e9 × knobs draws) before anything is refused.
MAX_RESAMPLES = 10_000

#: Dimension of cross-validation folds.
FOLD = "fold"

#: Default bounds of each knob. Efficiencies are shares of the datasheet peak; an overhead of more
#: than a second per step would not be an overhead. The engine knobs' bounds are physical
#: ceilings, generous on purpose (the data, not the bound, should set a value): the KV
#: traffic, and a low-precision path's weight reads, reach at least 5 % of the bandwidth; a
#: decoder layer's kernel launches cost at most 100 µs per step (an 80-layer model: 8 ms), an
#: MoE block 200 µs more, an MLA module 200 µs more; GEMMs reach half their efficiency by
#: 4,096 tokens a step at the latest, an MoE model's expert GEMMs at least 2 % of theirs; a
#: link hop costs at most 100 µs; the all-reduces reach at least 5 % of the link's datasheet
#: bandwidth; the host spends at most 1 ms per decode token (256 sequences: 256 ms a step); a
#: Gated DeltaNet layer's prompt pass launches in at most 200 µs, chains at most 1 µs a token
#: and takes at most 1 ps a token and state element (1 µs a token for 1,048,576 elements).
#: The published utilisation fits can be held against: ``docs/calibration.md``, "The fit's
#: design". Every prior is the base engine's
#: value (``engine=`` of :func:`calibrate`; the ideal model by default).
DEFAULT_BOUNDS = MappingProxyType({"compute_efficiency": (0.01, 1.0),
                                   "low_precision_compute_efficiency": (0.01, 1.0),
                                   "bandwidth_efficiency": (0.01, 1.0),
                                   "step_overhead": (0.0, 1.0),
                                   "layer_overhead": (0.0, 1e-4),
                                   "low_precision_layer_overhead": (0.0, 1e-4),
                                   "kv_bandwidth_efficiency": (0.05, 1.0),
                                   "low_precision_bandwidth_efficiency": (0.05, 1.0),
                                   "fp4_compute_efficiency": (0.01, 1.0),
                                   "fp4_bandwidth_efficiency": (0.05, 1.0),
                                   "attention_compute_efficiency": (0.01, 1.0),
                                   "narrow_head_attention_share": (0.05, 1.0),
                                   "gemm_half_tokens": (0.0, 4096.0),
                                   "prefill_overhead": (0.0, 1.0),
                                   "frontend_latency": (0.0, 1.0),
                                   "interconnect_latency": (0.0, 1e-4),
                                   "interconnect_efficiency": (0.05, 1.0),
                                   "host_traffic_share": (0.0, 1.0),
                                   "layer_cycles": (0.0, 4e5),
                                   "moe_layer_overhead": (0.0, 2e-4),
                                   "moe_compute_share": (0.02, 1.0),
                                   "mxfp4_moe_compute_share": (0.02, MAX_MXFP4_SHARE),
                                   "mla_layer_overhead": (0.0, 2e-4),
                                   "sequence_overhead": (0.0, 1e-3),
                                   "recurrent_layer_overhead": (0.0, 2e-4),
                                   "recurrent_chain_time": (0.0, 1e-6),
                                   "recurrent_element_time": (0.0, 1e-12)})

#: The knobs ``fit="engine"`` frees, per phase: each where its phase's rows can see it. TTFT
#: rows see the prompt's compute, the serving stack's intercept and, at TP > 1, the all-reduces
#: of megabytes of activations (their share of the link bandwidth); TPOT rows the weight and KV
#: streaming, the fixed costs per step and per layer, and the all-reduce latency. Prefill takes
#: decode's bandwidth efficiency (:data:`_TIED`); ``gemm_half_tokens`` only when named
#: (docs/calibration.md).
ENGINE_FIT = MappingProxyType({
    "prefill": ("compute_efficiency", "prefill_overhead", "interconnect_efficiency"),
    "decode": ("bandwidth_efficiency", "step_overhead", "layer_overhead",
               "kv_bandwidth_efficiency", "interconnect_latency")})

#: Knobs a knob set of its own (``group_by``) refits by default; the others are shared.
GROUP_KNOBS = ("compute_efficiency", "bandwidth_efficiency", "step_overhead", "prefill_overhead")

#: A knob whose bootstrap interval spans this share of its bounds is not identified.
SPAN_UNIDENTIFIED = 0.9


# -- the fit ------------------------------------------------------------------------------------

# Overheads are fitted in milliseconds and the GEMM curve in hundreds of tokens, so that all
# unknowns are of order one.
_SCALE = {"compute_efficiency": 1.0, "low_precision_compute_efficiency": 1.0,
          "bandwidth_efficiency": 1.0, "step_overhead": units.MS,
          "layer_overhead": units.MS / 100.0, "low_precision_layer_overhead": units.MS / 100.0,
          "kv_bandwidth_efficiency": 1.0, "low_precision_bandwidth_efficiency": 1.0,
          "fp4_compute_efficiency": 1.0, "fp4_bandwidth_efficiency": 1.0,
          "attention_compute_efficiency": 1.0, "narrow_head_attention_share": 1.0,
          "gemm_half_tokens": 100.0,
          "prefill_overhead": units.MS, "frontend_latency": units.MS,
          "interconnect_latency": units.MS / 100.0, "interconnect_efficiency": 1.0,
          "host_traffic_share": 1.0, "layer_cycles": 1e4,
          "moe_layer_overhead": units.MS / 100.0, "sequence_overhead": units.MS / 100.0,
          "moe_compute_share": 1.0, "mxfp4_moe_compute_share": 1.0,
          "mla_layer_overhead": units.MS / 100.0,
          "recurrent_layer_overhead": units.MS / 100.0, "recurrent_chain_time": 1e-8,
          "recurrent_element_time": 1e-14}


def _normalise_fit(fit) -> dict:
    if fit is None:
        fit = PARAMETERS
    if isinstance(fit, str) and fit == "engine":
        fit = ENGINE_FIT
    if isinstance(fit, str):
        fit = (fit,)
    if isinstance(fit, Mapping):
        check_keys("fit", fit, PHASES, what="phase")
        per_phase = {p: tuple(fit.get(p, ())) for p in PHASES}
    else:
        per_phase = {p: tuple(fit) for p in PHASES}
    for phase, names in per_phase.items():
        check_keys("fit", names, KNOBS, what="parameter")
        per_phase[phase] = tuple(p for p in KNOBS if p in names)
    return per_phase


def _normalise_bounds(bounds) -> dict:
    out = dict(DEFAULT_BOUNDS)
    if bounds is None:
        return out
    bounds = check_mapping("bounds", bounds)
    check_keys("bounds", bounds, KNOBS, what="parameter")
    for key, pair in bounds.items():
        try:
            lo, hi = (float(v) for v in pair)
        except (TypeError, ValueError):
            raise ValueError(f"bounds[{key!r}] must be a pair of numbers (low, high); "
                             f"got {show(pair)}") from None
        unbounded = key in SECONDS_KNOBS or key in ("gemm_half_tokens", "layer_cycles")
        if unbounded:
            ok = 0 <= lo < hi < math.inf
        elif key == "host_traffic_share":       # a share that may be 0: none of the traffic
            ok = 0 <= lo < hi <= 1
        elif key == "mxfp4_moe_compute_share":  # a share of the 16-bit path, which may beat it
            ok = 0 < lo < hi <= MAX_MXFP4_SHARE
        else:
            ok = 0 < lo < hi <= 1
        if not ok:
            unit = {"gemm_half_tokens": "tokens", "layer_cycles": "cycles"}.get(key, "seconds")
            allowed = f"0 <= low < high ({unit})" if unbounded else \
                "0 <= low < high <= 1" if key == "host_traffic_share" else \
                f"0 < low < high <= {MAX_MXFP4_SHARE:g}" if key == "mxfp4_moe_compute_share" \
                else "0 < low < high <= 1"
            raise ValueError(f"bounds[{key!r}] must satisfy {allowed}; got {show(pair)}")
        out[key] = (lo, hi)
    return out


@dataclasses.dataclass
class _PhaseFit:
    values: dict
    identified: dict
    lower: dict
    upper: dict
    fitted: bool


#: Weight of each free knob's distance from its prior (in fit units) among the residuals: where
#: the rows cannot tell knobs apart (``_ridge``), the optimum is the ridge's point nearest the
#: priors, not wherever the BLAS, the CPU and the starts' order put it (a held-out error moved
#: by 1.5 points between machines); an identified knob moves by about ``_RIDGE**2`` (1e-8).
_RIDGE = 1e-4
#: Costs within this relative distance of the best are one optimum (``_least_squares``).
_TIED_COST = 1e-9


def _least_squares(groups, phase, rows, targets, free, fixed, bounds, starts):
    """Best bounded least-squares fit of the ``free`` knobs over several starting points:
    residuals each row's relative error and :data:`_RIDGE` times each knob's distance from its
    prior; of the results within :data:`_TIED_COST` of the lowest cost, the one nearest the priors.
    """
    from scipy.optimize import least_squares

    lo = np.array([bounds[p][0] / _SCALE[p] for p in free])
    hi = np.array([bounds[p][1] / _SCALE[p] for p in free])
    priors = [_prior_of(p, bounds, groups.priors) for p in free]
    prior = np.array([np.nan if v is None else v / _SCALE[p] for p, v in zip(free, priors)])
    counted = ~np.isnan(prior)

    def params(x):
        out = dict(fixed)
        out.update({p: float(v) * _SCALE[p] for p, v in zip(free, x)})
        return out

    def residuals(x):
        fit = groups.predict(phase, params(x), rows)[rows] / targets - 1.0
        return np.concatenate([fit, _RIDGE * (x[counted] - prior[counted])])

    def distance(res):
        return float(np.sum((res.x[counted] - prior[counted]) ** 2))

    results = []
    for start in starts:
        x0 = np.clip(np.asarray(start, dtype=float), lo, hi)
        results.append(least_squares(residuals, x0, bounds=(lo, hi), method="trf",
                                     x_scale=1.0, diff_step=1e-4, xtol=1e-10, ftol=1e-10,
                                     gtol=1e-10, max_nfev=200))
    lowest = min(r.cost for r in results)
    tied = [r for r in results if r.cost <= lowest * (1.0 + _TIED_COST)]
    return min(tied, key=distance), params


#: The efficiencies: the knobs whose levels the starting grid profiles.
_EFFICIENCIES = ("compute_efficiency", "bandwidth_efficiency", "kv_bandwidth_efficiency",
                 "low_precision_compute_efficiency", "low_precision_bandwidth_efficiency",
                 "fp4_compute_efficiency", "fp4_bandwidth_efficiency", "moe_compute_share",
                 "attention_compute_efficiency", "narrow_head_attention_share")
#: Coarse starting levels of the other knobs, in SI units (clipped to the bounds).
_LEVELS = {"step_overhead": (0.0, 1e-3, 4e-3), "layer_overhead": (0.0, 2e-5),
           "low_precision_layer_overhead": (0.0, 2e-5),
           "prefill_overhead": (0.0, 2e-2, 1e-1), "frontend_latency": (0.0, 2e-2),
           "gemm_half_tokens": (0.0, 128.0),
           "interconnect_latency": (0.0, 1e-5), "interconnect_efficiency": (1.0, 0.5, 0.25),
           "layer_cycles": (0.0, 4e4), "moe_layer_overhead": (0.0, 3e-5),
           "mla_layer_overhead": (0.0, 3e-5),
           "sequence_overhead": (0.0, 5e-5),
           "mxfp4_moe_compute_share": (1.0, 0.5, 0.25, 2.0)}


def _starting_points(groups, phase, rows, targets, free, fixed, bounds):
    """Starting points for the least squares, in fit units: the best of a coarse log grid at every
    level of each efficiency, and one per regime of which rows bind which side (why:
    ``docs/calibration.md``, "The fit's design").
    """
    # ten levels for the first two efficiencies, fewer when more knobs multiply the grid
    sizes = {p: (10 if len(free) <= 4 else 6) for p in _EFFICIENCIES}
    grids = {p: np.geomspace(max(bounds[p][0], 0.02), 1.0, sizes[p]) for p in _EFFICIENCIES}
    grids.update({p: np.array(v) for p, v in _LEVELS.items()})
    best = {}
    for combo in itertools.product(*(grids[p] for p in free)):
        trial = dict(fixed)
        trial.update({p: float(np.clip(v, *bounds[p])) for p, v in zip(free, combo)})
        err = groups.predict(phase, trial, rows)[rows] / targets - 1.0
        cost = float(np.dot(err, err))
        point = tuple(trial[p] / _SCALE[p] for p in free)
        for i, p in enumerate(free):
            if p not in _EFFICIENCIES:
                continue
            key = (p, combo[i])
            if key not in best or cost < best[key][0]:
                best[key] = (cost, point)
        if not any(p in _EFFICIENCIES for p in free):   # no efficiency free: each point
            best[combo] = (cost, point)
    return [list(x) for x in dict.fromkeys(point for _, point in best.values())]


def _prior_of(p, bounds, priors):
    """A knob's prior, inside its bounds (``None``: the base engine's own, see
    :attr:`_Groups.priors`)."""
    prior = priors[p]
    return None if prior is None else min(max(prior, bounds[p][0]), bounds[p][1])


def _fit_phase(groups, phase, rows, all_targets, free, bounds, n_resamples, confidence, rng,
               fixed=None):
    """Fit one phase on ``rows`` (``all_targets``: every row's measured seconds); a free knob the
    rows do not identify goes back to its value in ``fixed`` (default the priors).
    """
    base_values = {} if fixed is None else dict(fixed)
    fixed = {**groups.priors, **base_values}

    def _prior(p, bounds):
        if p in base_values:
            return base_values[p]
        return _prior_of(p, bounds, groups.priors)
    targets = all_targets[rows]
    if not free:
        return _PhaseFit(dict(fixed), {p: False for p in KNOBS},
                         {p: fixed[p] for p in KNOBS}, {p: fixed[p] for p in KNOBS},
                         fitted=False)
    starts = _starting_points(groups, phase, rows, targets, free, fixed, bounds)
    res, params = _least_squares(groups, phase, rows, targets, free, fixed, bounds, starts)
    identified = {p: False for p in KNOBS}
    values, moved = _settle(groups, phase, rows, params(res.x), free, bounds, _prior)
    identified.update(moved)
    active = tuple(p for p in free if identified[p])
    ridge = _ridge(groups, phase, rows, values, active, bounds)
    if ridge:
        # the rows' distinct configurations cannot tell these knobs apart (four runs of one
        # configuration pin one combination of two knobs, not each): a ridge of equally good
        # fits. They keep the ridge's point nearest their priors (what _RIDGE picks: the
        # combination the rows pin is kept, which predictions need), reported unidentified,
        # with their bounds as interval, and are not resampled
        for p in ridge:
            identified[p] = False
        active = tuple(p for p in active if p not in ridge)
    for p in active:
        values[p] = _snap(values[p], *bounds[p])
    lower = {p: values[p] for p in KNOBS}
    upper = {p: values[p] for p in KNOBS}
    for p in free:
        if not identified[p]:
            lower[p], upper[p] = bounds[p]
    if active and n_resamples > 0:
        q = _bootstrap(groups, phase, rows, all_targets, active, values, bounds, n_resamples,
                       confidence, rng, _prior)
        wide = []
        for k, p in enumerate(active):
            # the optimiser stops within ~1e-12 of a bound; report the bound itself
            lo, hi = bounds[p]
            lower[p] = _snap(float(min(q[0, k], values[p])), lo, hi)
            upper[p] = _snap(float(max(q[1, k], values[p])), lo, hi)
            if upper[p] - lower[p] >= SPAN_UNIDENTIFIED * (hi - lo):
                wide.append(p)
        if wide:
            # resampling moves these knobs across their whole range: the data do not pin
            # them, so they keep their priors and the others are refitted without them
            for p in wide:
                identified[p] = False
                values[p] = _prior(p, bounds)
                lower[p], upper[p] = bounds[p]
            keep = tuple(p for p in active if p not in wide)
            if keep:
                held = {p: values[p] for p in KNOBS if p not in keep}
                res, params = _least_squares(groups, phase, rows, targets, keep, held, bounds,
                                             [[values[p] / _SCALE[p] for p in keep]])
                values = params(res.x)
                for p in keep:
                    lower[p] = min(lower[p], values[p])
                    upper[p] = max(upper[p], values[p])
            active = keep
    for p in active:
        values[p] = _snap(values[p], *bounds[p])
    return _PhaseFit(values, identified, lower, upper, fitted=True)


#: Relative size below which a singular value of the knobs' sensitivities counts as zero.
_RANK_TOL = 1e-6


def _ridge(groups, phase, rows, values, active, bounds) -> tuple:
    """The ``active`` knobs the rows' distinct configurations cannot tell apart: those in a
    combination that moves no prediction, from the rank of the sensitivities to a 1 % nudge
    (``docs/calibration.md``, "The fit's design").
    """
    if len(active) < 2:
        return ()
    base = groups.predict(phase, values, rows)[rows]
    columns = []
    for p in active:
        lo, hi = bounds[p]
        up = min(hi, values[p] + 0.01 * (hi - lo))
        down = max(lo, values[p] - 0.01 * (hi - lo))
        moved = (groups.predict(phase, {**values, p: up}, rows)[rows]
                 - groups.predict(phase, {**values, p: down}, rows)[rows]) / base
        columns.append(moved / ((up - down) / (hi - lo)) if up > down else 0.0 * moved)
    sens = np.unique(np.round(np.column_stack(columns), 12), axis=0)   # one row a configuration
    _, s, vt = np.linalg.svd(sens, full_matrices=True)
    rank = int(np.sum(s > _RANK_TOL * s[0])) if s.size and s[0] > 0 else 0
    if rank >= len(active):
        return ()
    null = vt[rank:]
    return tuple(p for k, p in enumerate(active) if np.any(np.abs(null[:, k]) > 1e-3))


def _settle(groups, phase, rows, values, candidates, bounds, prior_of) -> tuple:
    """``(values, moved)``: ``moved[p]`` whether nudging each of ``candidates`` moves a
    prediction of ``rows``; one that moves none goes back to its prior (``prior_of(p,
    bounds)``) where that moves none either.

    max(compute, memory) is flat in the efficiency of the side that does not bind (compute
    efficiency over memory-bound rows, say), and the prior moves no prediction there either
    (a faster non-binding side stays non-binding). Where the rows are flat in a knob, the
    least squares stops wherever its ridge toward the prior runs out of gradient: a point of
    the optimiser's path, not of the data, which differs in the last bits between machines.
    """
    values = dict(values)
    moved = {}
    base = groups.predict(phase, values, rows)[rows]

    def unchanged(trial_values):
        trial = groups.predict(phase, trial_values, rows)[rows]
        return not np.any(np.abs(trial / base - 1.0) > 1e-9)

    for p in candidates:
        lo, hi = bounds[p]
        nudge = 0.01 * (hi - lo)
        probes = (min(hi, values[p] + nudge), max(lo, values[p] - nudge))
        moved[p] = not all(unchanged({**values, p: probe}) for probe in probes)
        if not moved[p]:
            prior = prior_of(p, bounds)
            if unchanged({**values, p: prior}):
                values[p] = prior
    return values, moved


def _bootstrap(groups, phase, rows, all_targets, active, values, bounds, n_resamples,
               confidence, rng, prior_of):
    """Percentile bounds (2 × len(active)) of the ``active`` knobs over row resamples; a
    resample flat in a knob draws its prior, as the fit settles it (:func:`_settle`)."""
    fixed_now = {p: values[p] for p in KNOBS if p not in active}
    x_hat = [values[p] / _SCALE[p] for p in active]
    draws = np.empty((n_resamples, len(active)))
    n = rows.size
    for r in range(n_resamples):
        pick = rows[rng.integers(0, n, n)]
        tgt = all_targets[pick]
        boot, boot_params = _least_squares(groups, phase, pick, tgt, active, fixed_now,
                                           bounds, [x_hat])
        drawn, _ = _settle(groups, phase, pick, boot_params(boot.x), active, bounds, prior_of)
        draws[r] = [drawn[p] for p in active]
    alpha = (1.0 - confidence) / 2.0
    return np.quantile(draws, [alpha, 1.0 - alpha], axis=0)


def _pct(value) -> str:
    value = float(value)
    return "-" if math.isnan(value) else f"{value:.1f}%"


def _error_lines(errors: xr.Dataset, line) -> list:
    """One summary line per phase: ``line(phase, n, MAPE ideal, MAPE calibrated)`` as text."""
    per_phase = (errors.sel({PHASE: phase}) for phase in PHASES)
    return [line(phase, int(e["n"]), _pct(e["mape_ideal"]), _pct(e["mape_calibrated"]))
            for phase, e in zip(PHASES, per_phase)]


def _snap(value: float, lo: float, hi: float) -> float:
    """``value`` moved onto a bound it is within 1e-9 (relative to the range) of."""
    tol = 1e-9 * (hi - lo)
    return lo if abs(value - lo) <= tol else hi if abs(value - hi) <= tol else value


def _mape(predicted, measured):
    ok = ~np.isnan(measured) & ~np.isnan(predicted)
    if not ok.any():
        return math.nan
    return float(np.mean(np.abs(predicted[ok] / measured[ok] - 1.0)) * 100.0)


@dataclasses.dataclass(frozen=True)
class CalibrationResult:
    """What :func:`calibrate` found.

    Attributes
    ----------
    calibration : Calibration
        The calibrated model: pass it as ``engine=`` (or its :meth:`~Calibration.engine_for`
        a phase) to the roofline functions, the sweep, the simulators and the planners.
    parameters : xarray.Dataset
        Over ``phase`` × ``parameter``: ``value`` (step overheads in s), ``lower`` and ``upper``
        (bootstrap percentile interval at ``attrs["confidence"]``), ``identified`` (False where
        the measurements do not constrain the knob: it keeps its prior value and its interval is
        its bounds) and ``fitted`` (False for a phase with no measurements or no free knob).
    residuals : xarray.Dataset
        Over ``measurement``: for each phase the measured time, the ideal (every knob ideal,
        the base engine's other fields held) and calibrated predictions [s] and the relative
        errors ``(predicted − measured) / measured`` [1]; NaN where that time was not measured.
    errors : xarray.Dataset
        Over ``phase``: ``mape_ideal`` and ``mape_calibrated`` [%] on the fitted measurements,
        and ``n`` (rows used).
    """

    calibration: Calibration
    parameters: xr.Dataset
    residuals: xr.Dataset
    errors: xr.Dataset
    knob_sets: xr.Dataset | None = None

    def summary(self) -> str:
        """A plain-text table of the knobs, their intervals and the errors."""
        conf = self.parameters.attrs.get("confidence", math.nan)
        lines = [f"{'phase':<8} {'parameter':<23} {'value':>10} "
                 f"{f'{conf:.0%} interval':>24}  note"]
        for phase in PHASES:
            for p in self.parameters[PARAMETER].values:
                sel = self.parameters.sel({PHASE: phase, PARAMETER: p})
                scale, unit = (1e3, " ms") if p in SECONDS_KNOBS else (1.0, "")
                note = "" if bool(sel["identified"]) else (
                    "not fitted" if not bool(self.parameters["fitted"].sel({PHASE: phase}))
                    or not bool(sel["free"]) else "not constrained by the data: prior value")
                lines.append(f"{phase:<8} {p:<23} {float(sel['value']) * scale:>10.4g}"
                             f"{unit:<3} [{float(sel['lower']) * scale:.4g}, "
                             f"{float(sel['upper']) * scale:.4g}]{unit}  {note}".rstrip())
        lines.append("")
        lines.append(f"{'phase':<8} {'rows':>5} {'MAPE ideal':>11} {'MAPE calibrated':>16}")
        lines += _error_lines(self.errors, lambda phase, n, ideal, calibrated:
                              f"{phase:<8} {n:>5} {ideal:>11} {calibrated:>16}")
        if self.knob_sets is not None:
            lines += ["", (f"knob sets by {self.knob_sets.attrs['group_by']} "
                           f"(rows per phase; 'shared' where a set keeps the shared knobs)")]
            for i, name in enumerate(self.knob_sets["knob_set"].values):
                own = self.knob_sets["own"].values[i]
                n = self.knob_sets["n"].values[i]
                lines.append(f"  {name}: " + ", ".join(
                    f"{ph} {n[j]} rows{'' if own[j] else ' (shared)'}"
                    for j, ph in enumerate(PHASES)))
        return "\n".join(lines)


#: The arguments :func:`calibrate` and :func:`cross_validate` share, documented once.
FIT_PARAMETERS = parameter_entries("""
    measurements : Dataset, list of rows or path
        Measured configurations (:func:`measurements_from_records`, :func:`read_measurements`,
        :func:`read_vllm_result`). Prefill is fitted to the rows with a TTFT, decode to the rows
        with a TPOT (else an ITL).
    phases : sequence of {"prefill", "decode"}
        Phases to fit; others keep the ideal knobs. Default both.
    fit : "engine", sequence of str, or mapping phase -> sequence of str, optional
        Knobs to fit, among ``compute_efficiency``, ``bandwidth_efficiency``,
        ``step_overhead`` and the engine knobs (``layer_overhead``,
        ``kv_bandwidth_efficiency``, ``gemm_half_tokens``, ``prefill_overhead``,
        ``interconnect_latency``, ``interconnect_efficiency``, and for low-precision (FP8)
        weight GEMMs ``low_precision_compute_efficiency``,
        ``low_precision_bandwidth_efficiency`` and ``low_precision_layer_overhead``, on an
        FP4 path ``fp4_compute_efficiency`` and ``fp4_bandwidth_efficiency``, attention's
        own ``attention_compute_efficiency`` (seen by prompts long enough for attention to
        matter) and ``narrow_head_attention_share`` (by such prompts of a model with heads
        narrower than 128), and the rest of :data:`~rooflinekit.profiles.ENGINE_KNOBS`); the
        others keep their priors
        (``engine``'s values: the ideal model by default), except that a fitted prefill phase
        that does not fit ``bandwidth_efficiency`` takes decode's (the same weights from the
        same HBM). Default the three in both phases; ``"engine"``: :data:`ENGINE_FIT`.
    bounds : mapping parameter -> (low, high), optional
        Box constraints; efficiencies within (0, 1], times [s] and tokens ≥ 0. Default
        :data:`DEFAULT_BOUNDS`.
    group_by : str or sequence of {"gpu", "engine", "dtype", "model"}, optional
        Keep a knob set per value of these columns: every knob is first fitted on all rows
        (the shared set), then each set refits ``group_knobs`` on its own rows, the other
        knobs held at their shared values. A set whose rows in a phase are not more than its
        free knobs keeps the shared knobs there. Default none (one shared set).
    group_knobs : sequence of str
        The knobs a set refits. Default :data:`GROUP_KNOBS` (the efficiencies and the fixed
        costs per step and per prompt, which differ between engines, GPUs and formats; the
        layer, GEMM-curve, KV and link knobs stay shared).
    models, gpus : mapping of name -> ModelShape / GPU, optional
        Specs for names outside the catalogue (e.g. a model read with
        ``ModelShape.from_hf_config``); they take precedence over catalogue names.
    engine : Engine, optional
        The base the knobs are fitted on (:class:`rooflinekit.Engine`, single numbers), held
        fixed: its fields that are not knobs (``allreduce``, ``interconnect_bandwidth``,
        ``compute_dtype``, ``activation_dtype``, ...) shape every prediction, and its knob
        values are the priors: a knob not fitted keeps the engine's value, and a fitted knob
        replaces it where the rows identify it (where they do not, it goes back to the
        engine's value). A row's ``dtype`` sets ``compute_dtype`` unless the engine names
        one. The calibration returned keeps it as :attr:`Calibration.base`. Default
        :data:`rooflinekit.IDEAL` (the ideal model's priors, the roofline's all-reduce).
    workload : {"isolated", "serving", "loaded"}
        How a row maps onto engine steps. "isolated" (default): TTFT is
        :func:`~rooflinekit.roofline.prefill_time` of the prompt and the decode time is
        :func:`~rooflinekit.roofline.decode_step_time` at the batch size, the phases as the
        roofline states them. "serving": the step a continuous-batching server with chunked
        prefill runs (:func:`~rooflinekit.roofline.mixed_step_time`) — a TTFT step carries the
        prompt beside ``B − 1`` decoding sequences, a decode step carries ``B`` decodes plus, on
        average, ``B / output_tokens`` prompts' worth of prefill tokens (as one chunk). Use it for
        serving benchmarks at concurrency > 1; the knobs it fits are the same step-time knobs.
        "loaded": "serving", and the TTFT step also carries the other prompts prefilled at the
        same time (prefill interference under load): ``(B − 1)·s`` prompts, ``s`` a request's
        share of its life in prefill at the ideal roofline, ``T_prefill / (T_prefill +
        output · T_decode)`` (mean field).
    """)


@document(FIT_PARAMETERS)
def calibrate(measurements, *, phases: Sequence[str] = PHASES, fit=None, bounds=None,
              n_resamples: int = 200, confidence: float = 0.95, seed: int | None = 0,
              models: Mapping[str, ModelShape] | None = None,
              gpus: Mapping[str, GPU] | None = None, engine: Engine | None = None,
              workload: str = "isolated", group_by=None,
              group_knobs: Sequence[str] = GROUP_KNOBS) -> CalibrationResult:
    """Fit compute efficiency, bandwidth efficiency and step overhead per phase to measurements.

    Parameters
    ----------
    n_resamples : int
        Bootstrap resamples for the intervals, in [0, :data:`MAX_RESAMPLES`] (0: no intervals,
        ``lower = upper = value``). Default 200.
    confidence : float
        Coverage of the percentile intervals, in (0, 1). Default 0.95.
    seed : int or None
        Seed of the :class:`numpy.random.Generator` that draws the resamples. Default 0.

    Returns
    -------
    CalibrationResult
        The calibrated model, the knobs with intervals, residuals and MAPE before and after.

    Raises
    ------
    ValueError
        Empty or malformed measurements, unknown model or GPU names (naming the field), a phase
        with fewer distinct configurations (:data:`CONFIG_COLUMNS`; repeated runs of one
        count once) than free knobs, bad bounds or settings.
    TypeError
        ``engine`` not an :class:`~rooflinekit.Engine` (a :class:`Calibration` included: its
        base is ``calibration.base``), or one whose fields are arrays.

    Notes
    -----
    Each phase minimises ``Σ (t_pred / t_meas − 1)²``, relative residuals so that a 20 ms ITL and
    a 2 s TTFT weigh alike, with ``scipy.optimize.least_squares(method="trf")`` inside the bounds,
    started from the best points of a coarse log grid of the efficiencies, one per level and
    per regime of which rows bind which roof, because the roofline's ``max(compute, memory)``
    has flat regions. Each row's terms come from the step kernel once per (model, GPU, tp,
    dtype) group; every knob setting is then plain arithmetic on them. Decode rows use the batch size (or concurrency, at least 1) and a mean
    context of ``prompt + output / 2`` unless ``context_length`` is given; fractional means are
    used as they are.

    A knob that the data cannot see (nudging it moves no prediction: compute efficiency when every
    decode row is memory-bound, say) is reported as not identified, keeps its prior (``engine``'s
    value, the ideal one by default) and gets its bounds as interval. Intervals are
    bootstrap percentile intervals: rows are resampled with replacement within the phase and the
    identified knobs refitted from the estimate.

    References
    ----------
    .. [1] Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993, ch. 13.
    .. [2] SciPy ``scipy.optimize.least_squares`` (trust-region reflective, bounds).
    """
    n_resamples = whole_number("n_resamples", n_resamples, lo=0)
    if n_resamples > MAX_RESAMPLES:
        raise ValueError(f"n_resamples must be at most {MAX_RESAMPLES:,} (each is a least-squares "
                         f"fit of every row); got {n_resamples:,}. 200 bound a 95% interval "
                         f"well; for more, fit fewer phases or knobs")
    confidence = real_number("confidence", confidence, lo=0, hi=1, lo_open=True, hi_open=True)
    seed = whole_number("seed", seed, lo=0, allow_none=True)
    ds, phases, per_phase, bounds, groups = _prepare(
        measurements, phases, fit, bounds, models, gpus, engine, workload)
    group_by = _check_group_by(ds, group_by)
    group_knobs = _check_group_knobs(group_knobs)
    rng = np.random.default_rng(seed)
    return _calibrate(ds, groups, phases, per_phase, bounds, n_resamples, confidence, rng,
                      group_by=group_by, group_knobs=group_knobs)


def _check_group_knobs(group_knobs) -> tuple:
    group_knobs = (group_knobs,) if isinstance(group_knobs, str) else tuple(group_knobs)
    check_keys("group_knobs", group_knobs, KNOBS, what="knob")
    return group_knobs


def _prepare(measurements, phases, fit, bounds, models, gpus, engine, workload):
    """The checked inputs of a fit: table, phases, free knobs, bounds and row groups (on the
    base ``engine``)."""
    ds = _check_measurements(measurements)
    phases = _check_phases(phases)
    per_phase = _normalise_fit(fit)
    bounds = _normalise_bounds(bounds)
    groups = _Groups(ds, _check_overrides("models", models, ModelShape),
                     _check_overrides("gpus", gpus, GPU),
                     _check_engine(engine), _check_workload(workload))
    _check_physical(ds, groups)
    return ds, phases, per_phase, bounds, groups


#: A measured time this many times below the ideal roofline is refused (a unit slip, or the
#: wrong model or GPU named): no engine beats the bound, and the model's errors stay within it.
_BELOW_BOUND = 2.0


def _check_physical(ds, groups) -> None:
    """Refuse a row whose measured TTFT or TPOT/ITL is more than :data:`_BELOW_BOUND` times
    below the ideal roofline's time for it: seconds typed in a ``_ms`` column, or the wrong
    model, GPU or format named. The message names the row, the column and both times."""
    columns = {"prefill": "ttft_ms", "decode": "tpot_ms (or itl_ms)"}
    for phase in PHASES:
        measured = _targets(ds, phase)
        bound = groups.predict(phase, {})
        slip = np.flatnonzero(np.isfinite(measured) & (measured > 0)
                              & (measured * _BELOW_BOUND < bound))
        if slip.size:
            i = int(slip[0])
            raise ValueError(
                f"measurement row {i}: {columns[phase]} {measured[i] * 1e3:.4g} ms is more than "
                f"{_BELOW_BOUND:g}x below the ideal roofline's {bound[i] * 1e3:.4g} ms for its "
                f"model, GPU and batch ({slip.size} such row(s)): seconds in a millisecond "
                f"column, or another model, GPU or format than the row names?")



#: Knobs a phase that does not fit them takes from the other phase's fit: prefill streams the
#: same weights from the same HBM as decode, and its compute-bound rows cannot see the
#: bandwidth (left free there, a handful of rows let it trade against the compute side).
_TIED = MappingProxyType({"prefill": MappingProxyType({"bandwidth_efficiency": "decode"})})


def _fit_order(per_phase, phases) -> tuple:
    """The phases in the order they are fitted: a phase that ties a knob to another after it."""
    ties = [phase for phase, knobs in _TIED.items() if phase in phases and per_phase[phase]
            and any(k not in per_phase[phase] and k in per_phase[src] and src in phases
                    for k, src in knobs.items())]
    return tuple(p for p in PHASES if p not in ties) + tuple(ties)


def _tied(fits, phase, free):
    """The values ``phase`` takes from fits already made, for the knobs it does not free (only a
    phase that is fitted takes them).
    """
    tied = {k: fits[src].values[k] for k, src in _TIED.get(phase, {}).items()
            if free and k not in free and src in fits and fits[src].identified[k]}
    return tied or None


def _check_phases(phases) -> tuple:
    if isinstance(phases, str):
        phases = (phases,)
    phases = tuple(phases)
    if not phases:
        allowed = ", ".join(map(repr, PHASES))
        raise ValueError(f"phases must be a non-empty selection of {allowed}; got ()")
    for i, phase in enumerate(phases):
        check_one_of(f"phases[{i}]", phase, PHASES)
    return phases


def _calibrate(ds, groups, phases, per_phase, bounds, n_resamples, confidence, rng,
               require=True, group_by=(), group_knobs=GROUP_KNOBS):
    fits = {}
    targets = {phase: _targets(ds, phase) for phase in PHASES}
    for phase in _fit_order(per_phase, phases):
        rows = np.flatnonzero(~np.isnan(targets[phase]) & (targets[phase] > 0))
        free = per_phase[phase] if phase in phases else ()
        configs = _configurations(ds, rows)
        if free and configs < len(free):
            if require:
                where = f"{ds.attrs['file']}: " if ds.attrs.get("file") else ""
                repeats = (" (repeated runs of one configuration pin one combination of the "
                           "knobs, not each)" if rows.size > configs else "")
                raise ValueError(f"{where}{phase}: {rows.size} measurement(s) of {configs} "
                                 f"distinct configuration(s) with a "
                                 f"{'TTFT' if phase == 'prefill' else 'TPOT or ITL'} but "
                                 f"{len(free)} free knob(s){repeats}; measure more "
                                 f"configurations or fit fewer knobs (fit=...)")
            free = ()
        fits[phase] = _fit_phase(groups, phase, rows, targets[phase], free, bounds,
                                 n_resamples if free else 0, confidence, rng,
                                 fixed=_tied(fits, phase, free))
    frees = {ph: (per_phase[ph] if ph in phases else ()) for ph in PHASES}
    shared = {ph: _kept(fits[ph].values, frees[ph]) for ph in PHASES}
    sets, set_table = _fit_sets(ds, groups, targets, frees, shared, fits, bounds, group_by,
                                group_knobs)
    calibration = Calibration(prefill=shared["prefill"], decode=shared["decode"],
                              source=_describe_sources(ds), group_by=group_by if sets else (),
                              groups=sets, base=groups.engine,
                              intervals=_intervals(fits, frees, shared) if n_resamples else {},
                              interval_confidence=confidence,
                              # planners run the measured engine's scheduler and memory rule
                              serving_engine=measured_engine(ds))
    names = PARAMETERS + tuple(p for p in KNOBS if p not in PARAMETERS
                               and any(p in frees[ph] for ph in PHASES))
    table = {name: ((PHASE, PARAMETER), np.array(
        [[_number(getattr(fits[ph], name)[p]) for p in names] for ph in PHASES]))
        for name in ("values", "lower", "upper")}
    table["identified"] = ((PHASE, PARAMETER), np.array(
        [[bool(fits[ph].identified[p]) for p in names] for ph in PHASES]))
    parameters = xr.Dataset(
        {"value": table["values"], "lower": table["lower"], "upper": table["upper"],
         "identified": table["identified"],
         "free": ((PHASE, PARAMETER), np.array(
             [[p in frees[ph] for p in names] for ph in PHASES])),
         "fitted": ((PHASE,), np.array([fits[ph].fitted for ph in PHASES]))},
        coords={PHASE: list(PHASES), PARAMETER: list(names)},
        attrs={"confidence": confidence, "n_resamples": n_resamples,
               "units_note": "efficiencies [1]; step_overhead [s]" if names == PARAMETERS else
               "efficiencies [1]; overheads and interconnect_latency [s]; gemm_half_tokens "
               "[tokens]; NaN: the engine's own (the weights' efficiency, the base engine's or "
               "the GPU's link latency)"})
    keys = _row_keys(ds, calibration.group_by)
    residuals, errors = _residual_tables(ds, groups, calibration, targets, keys=keys)
    return CalibrationResult(calibration, parameters, residuals, errors, set_table)


#: The columns that make a measurement's configuration: rows equal in all of them are repeated
#: runs of one configuration, which pin no more knobs than one run does.
CONFIG_COLUMNS = ("model", "gpu", "tp", "dtype", "kv_dtype", "batch_size", "prompt_tokens",
                  "output_tokens", "context_length")


def _configurations(ds, rows) -> int:
    """The distinct configurations (:data:`CONFIG_COLUMNS`) among the measurements ``rows``."""
    columns = [np.asarray(ds[c].values)[rows] for c in CONFIG_COLUMNS if c in ds]
    if not columns:
        return int(np.size(rows))
    # NaN (context_length not given) is one value; strings and numbers compare as text
    keys = {tuple("nan" if isinstance(v, float) and v != v else repr(v) for v in row)
            for row in zip(*(c.tolist() for c in columns))}
    return len(keys)


def _intervals(fits, frees, shared) -> dict:
    """The bootstrap intervals of the free knobs a calibration keeps (none without resamples),
    widened where needed to hold the fitted value (a percentile interval need not)."""
    out = {}
    for phase, free in frees.items():
        pairs = {p: (float(fits[phase].lower[p]), float(fits[phase].upper[p])) for p in free
                 if p in shared[phase] and shared[phase][p] is not None}
        pairs = {p: (min(lo, shared[phase][p]), max(hi, shared[phase][p]))
                 for p, (lo, hi) in pairs.items() if math.isfinite(lo) and math.isfinite(hi)}
        if pairs:
            out[phase] = pairs
    return out


def _number(value) -> float:
    """A knob value as a float; ``None`` (the engine's own, see :func:`_prior_of`) as NaN."""
    return math.nan if value is None else float(value)


def _kept(values: dict, free) -> dict:
    """What a calibration keeps of a phase's fit: the three knobs and the free engine knobs."""
    return {p: values[p] for p in KNOBS
            if (p in PARAMETERS or p in free) and values[p] is not None}


def _check_group_by(ds, group_by) -> tuple:
    if group_by is None:
        return ()
    group_by = (group_by,) if isinstance(group_by, str) else tuple(group_by)
    for i, field in enumerate(group_by):
        check_one_of(f"group_by[{i}]", field, GROUP_FIELDS)
    if len(set(group_by)) != len(group_by):
        raise ValueError(f"group_by must not repeat a field; got {group_by!r}")
    absent = [field for field in group_by if field not in ds]
    if absent:
        raise ValueError(f"group_by={group_by!r}: the measurements have no {absent[0]!r} "
                         f"column")
    return group_by


def _fit_sets(ds, groups, targets, frees, shared, fits, bounds, group_by, group_knobs):
    """The knob sets of ``group_by``: each refits ``group_knobs`` on its rows, keeping the shared
    knobs where its rows do not outnumber its free knobs by one or do not identify a knob.
    """
    if not group_by:
        return {}, None
    keys = _row_keys(ds, group_by)
    sets, record = {}, []
    for key in dict.fromkeys(keys):
        mine = np.array([k == key for k in keys])
        knobs, row = {}, {}
        for phase in PHASES:
            rows = np.flatnonzero(mine & ~np.isnan(targets[phase]) & (targets[phase] > 0))
            # a knob the shared rows do not pin, a subset of them cannot pin either
            free = tuple(p for p in frees[phase] if p in group_knobs and fits[phase].fitted
                         and fits[phase].identified[p])
            row[phase] = rows.size
            if not free or _configurations(ds, rows) < len(free) + 1:
                knobs[phase] = dict(shared[phase])
                continue
            base = {p: fits[phase].values[p] for p in KNOBS}
            fit = _fit_phase(groups, phase, rows, targets[phase], free, bounds, 0, 0.95, None,
                             fixed=base)
            knobs[phase] = _kept(fit.values, frees[phase])
        sets[key] = knobs
        record.append((key, row, knobs))
    names = PARAMETERS + tuple(p for p in KNOBS if p not in PARAMETERS
                               and any(p in frees[ph] for ph in PHASES))
    table = xr.Dataset(
        {"value": (("knob_set", PHASE, PARAMETER), np.array(
            [[[_number(k[ph].get(p)) for p in names] for ph in PHASES] for _, _, k in record])),
         "n": (("knob_set", PHASE), np.array([[r[ph] for ph in PHASES] for _, r, _ in record],
                                            dtype=np.int64)),
         "own": (("knob_set", PHASE), np.array(
             [[k[ph] != shared[ph] for ph in PHASES] for _, _, k in record]))},
        coords={"knob_set": [" / ".join(key) for key, _, _ in record], PHASE: list(PHASES),
                PARAMETER: list(names)},
        attrs={"group_by": " / ".join(group_by),
               "note": "own: False where the set keeps the shared knobs (too few rows, or "
                       "none of its knobs identified)"})
    return sets, table


def _describe_sources(ds) -> str:
    sources = sorted(set(str(s) for s in ds["source"].values))
    head = "; ".join(sources[:3])
    more = f" (+{len(sources) - 3} more)" if len(sources) > 3 else ""
    return f"fitted to {ds.sizes[MEASUREMENT]} measurement(s): {head}{more}"


def _residual_tables(ds, groups, calibration, targets, rows=None, keys=None):
    data = {}
    err = {"mape_ideal": [], "mape_calibrated": [], "n": []}
    keys = [None] * ds.sizes[MEASUREMENT] if keys is None else keys
    for phase in PHASES:
        measured = targets[phase]
        ideal = groups.predict(phase, dict(IDEAL_KNOBS), rows)
        fitted = _predict_calibrated(groups, phase, calibration, keys, rows)
        measured = np.where(measured > 0, measured, np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            e_ideal = ideal / measured - 1.0
            e_fit = fitted / measured - 1.0
        label = "TTFT" if phase == "prefill" else "decode time per token"
        data[f"{phase}_measured"] = ((MEASUREMENT,), measured,
                                     {"units": "s", "long_name": f"measured {label}"})
        data[f"{phase}_ideal"] = ((MEASUREMENT,), ideal,
                                  {"units": "s", "long_name": f"ideal roofline {label}"})
        data[f"{phase}_calibrated"] = ((MEASUREMENT,), fitted,
                                       {"units": "s", "long_name": f"calibrated roofline {label}"})
        data[f"{phase}_error_ideal"] = (
            (MEASUREMENT,), e_ideal, {"units": "1", "long_name": f"relative error, ideal {label}"})
        data[f"{phase}_error_calibrated"] = (
            (MEASUREMENT,), e_fit,
            {"units": "1", "long_name": f"relative error, calibrated {label}"})
        err["mape_ideal"].append(_mape(ideal, measured))
        err["mape_calibrated"].append(_mape(fitted, measured))
        err["n"].append(int(np.sum(~np.isnan(measured) & ~np.isnan(ideal))))
    residuals = xr.Dataset(data, coords={MEASUREMENT: ds[MEASUREMENT].values,
                                         "model": ((MEASUREMENT,), ds["model"].values),
                                         "gpu": ((MEASUREMENT,), ds["gpu"].values)})
    errors = _errors_table(err)
    return residuals, errors



def _errors_table(err: dict) -> xr.Dataset:
    """``mape_ideal``, ``mape_calibrated`` [%] and ``n`` over ``phase`` from per-phase lists."""
    return xr.Dataset({"mape_ideal": ((PHASE,), np.array(err["mape_ideal"]), {"units": "%"}),
                       "mape_calibrated": ((PHASE,), np.array(err["mape_calibrated"]),
                                           {"units": "%"}),
                       "n": ((PHASE,), np.array(err["n"], dtype=np.int64))},
                      coords={PHASE: list(PHASES)})

# -- cross-validation --------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class CrossValidationResult:
    """Held-out errors of :func:`cross_validate`.

    Attributes
    ----------
    folds : xarray.Dataset
        Over ``fold`` × ``phase``: ``mape_ideal`` and ``mape_calibrated`` [%] on the held-out
        rows, ``n_train`` and ``n_test`` (rows with that phase's time), ``fitted`` (False when the
        training rows could not fit that phase, which then keeps its priors); ``held_out`` (over
        ``fold``) names what was left out.
    predictions : xarray.Dataset
        Over ``measurement``: each row's measured time and its out-of-fold ideal and calibrated
        predictions per phase [s].
    errors : xarray.Dataset
        Over ``phase``: pooled held-out ``mape_ideal`` and ``mape_calibrated`` [%] and ``n``.
    """

    folds: xr.Dataset
    predictions: xr.Dataset
    errors: xr.Dataset

    def summary(self) -> str:
        """A plain-text table of held-out errors per fold and pooled."""
        lines = [f"{'held out':<34} {'phase':<8} {'train':>5} {'test':>5} "
                 f"{'MAPE ideal':>11} {'MAPE calibrated':>16}"]
        for f in range(self.folds.sizes[FOLD]):
            label = str(self.folds["held_out"].values[f])[:34]
            for phase in PHASES:
                s = self.folds.isel({FOLD: f}).sel({PHASE: phase})
                if int(s["n_test"]) == 0:
                    continue
                note = "" if bool(s["fitted"]) else "  (not fitted: ideal)"
                lines.append(f"{label:<34} {phase:<8} {int(s['n_train']):>5} {int(s['n_test']):>5}"
                             f" {_pct(s['mape_ideal']):>11} {_pct(s['mape_calibrated']):>16}"
                             f"{note}")
        lines.append("")
        lines += _error_lines(self.errors, lambda phase, n, ideal, calibrated:
                              f"pooled held-out {phase:<8} n={n:<4} ideal {ideal}  "
                              f"calibrated {calibrated}")
        return "\n".join(lines)


@document(FIT_PARAMETERS)
def cross_validate(measurements, *, by: str | Sequence[str] | None = None, k: int | None = None,
                   seed: int | None = 0, phases: Sequence[str] = PHASES, fit=None, bounds=None,
                   models: Mapping[str, ModelShape] | None = None,
                   gpus: Mapping[str, GPU] | None = None, engine: Engine | None = None,
                   workload: str = "isolated", group_by=None,
                   group_knobs: Sequence[str] = GROUP_KNOBS) -> CrossValidationResult:
    """Fit on some configurations and measure the error on the held-out ones.

    The shared arguments mean what they mean for :func:`calibrate`; there is no bootstrap
    inside folds.

    Parameters
    ----------
    by : str or sequence of str, optional
        Leave-one-group-out over these columns (``"gpu"``, ``"model"``, ``"tp"``,
        ``"engine"``, ``("model", "gpu")``, ``"source"``, ...): each fold holds out one group, so the error says how the calibration
        transfers to hardware or models it never saw. ``None`` (default): ``k``-fold over rows.
    k : int
        Folds for k-fold, 2 ≤ k ≤ rows (more folds than rows would leave folds empty, so it is
        refused). Default ``None``: 5, or the number of rows if fewer.
    seed : int or None
        Seed of the row shuffle for k-fold. Default 0.

    Returns
    -------
    CrossValidationResult

    Notes
    -----
    A phase whose training rows are fewer than its free knobs is not fitted in that fold and is
    predicted with its priors there (``fitted = False``; the ideal model by default); the pooled
    error includes those rows, so it never flatters the calibration.
    """
    seed = whole_number("seed", seed, lo=0, allow_none=True)
    ds, phases, per_phase, bounds, groups = _prepare(
        measurements, phases, fit, bounds, models, gpus, engine, workload)
    group_by = _check_group_by(ds, group_by)
    group_knobs = _check_group_knobs(group_knobs)
    set_keys = _row_keys(ds, group_by)
    n = ds.sizes[MEASUREMENT]
    if by is not None:
        keys = (by,) if isinstance(by, str) else tuple(by)
        for key in keys:
            check_one_of("by", key, ("model", "gpu", "tp", "engine", "dtype", "kv_dtype",
                                     "source"))
        absent = [key for key in keys if key not in ds]
        if absent:
            raise ValueError(f"by={by!r}: the measurements have no {absent[0]!r} column")
        labels = [" / ".join(f"{ds[key].values[i]}" for key in keys) for i in range(n)]
        uniq = list(dict.fromkeys(labels))
        if len(uniq) < 2:
            raise ValueError(f"by={by!r}: leave-one-group-out needs at least 2 groups, "
                             f"got {len(uniq)}")
        folds = [(u, np.array([lab == u for lab in labels])) for u in uniq]
    else:
        if n < 2:
            raise ValueError(f"cross-validation needs at least 2 measurements; got {n}")
        if k is None:
            k = min(5, n)
        k = whole_number("k", k, lo=2)
        if k > n:
            raise ValueError(f"k must be at most the {n} measurements (each fold holds at "
                             f"least one row); got k={k}")
        order = np.random.default_rng(seed).permutation(n)
        folds = []
        for f in range(k):
            mask = np.zeros(n, dtype=bool)
            mask[order[f::k]] = True
            folds.append((f"fold {f + 1} of {k} ({mask.sum()} rows)", mask))
    targets = {phase: _targets(ds, phase) for phase in PHASES}
    oof = {phase: np.full(n, np.nan) for phase in PHASES}
    ideal = {phase: groups.predict(phase, dict(IDEAL_KNOBS)) for phase in PHASES}
    rec = {name: [] for name in ("mape_ideal", "mape_calibrated", "n_train", "n_test", "fitted")}
    rng = np.random.default_rng(seed)
    for _, test in folds:
        train = ~test
        sub = ds.isel({MEASUREMENT: np.flatnonzero(train)})
        sub_groups = _Groups(sub, models, gpus, groups.engine, workload)
        result = _calibrate(sub, sub_groups, phases, per_phase, bounds, 0, 0.95, rng,
                            require=False, group_by=group_by, group_knobs=group_knobs)
        test_rows = np.flatnonzero(test)
        row = {name: [] for name in rec}
        for phase in PHASES:
            # a held-out row whose knob set the training rows lack takes the shared knobs
            pred = _predict_calibrated(groups, phase, result.calibration, set_keys,
                                       test_rows)
            oof[phase][test_rows] = pred[test_rows]
            measured = np.where(targets[phase] > 0, targets[phase], np.nan)
            m_test = np.where(test, measured, np.nan)
            row["mape_ideal"].append(_mape(np.where(test, ideal[phase], np.nan), m_test))
            row["mape_calibrated"].append(_mape(np.where(test, oof[phase], np.nan), m_test))
            row["n_train"].append(int(np.sum(~np.isnan(np.where(train, measured, np.nan)))))
            row["n_test"].append(int(np.sum(~np.isnan(m_test))))
            row["fitted"].append(bool(result.parameters["fitted"].sel({PHASE: phase})))
        for name in rec:
            rec[name].append(row[name])
    fold_ds = xr.Dataset(
        {"mape_ideal": ((FOLD, PHASE), np.array(rec["mape_ideal"]), {"units": "%"}),
         "mape_calibrated": ((FOLD, PHASE), np.array(rec["mape_calibrated"]), {"units": "%"}),
         "n_train": ((FOLD, PHASE), np.array(rec["n_train"], dtype=np.int64)),
         "n_test": ((FOLD, PHASE), np.array(rec["n_test"], dtype=np.int64)),
         "fitted": ((FOLD, PHASE), np.array(rec["fitted"], dtype=bool)),
         "held_out": ((FOLD,), np.array([label for label, _ in folds], dtype=object))},
        coords={FOLD: np.arange(len(folds)), PHASE: list(PHASES)},
        attrs={"by": "rows (k-fold)" if by is None else str(by)})
    pred = {}
    err = {"mape_ideal": [], "mape_calibrated": [], "n": []}
    for phase in PHASES:
        measured = np.where(targets[phase] > 0, targets[phase], np.nan)
        pred[f"{phase}_measured"] = ((MEASUREMENT,), measured, {"units": "s"})
        pred[f"{phase}_ideal"] = ((MEASUREMENT,), ideal[phase], {"units": "s"})
        pred[f"{phase}_held_out"] = ((MEASUREMENT,), oof[phase], {"units": "s"})
        err["mape_ideal"].append(_mape(ideal[phase], measured))
        err["mape_calibrated"].append(_mape(oof[phase], measured))
        err["n"].append(int(np.sum(~np.isnan(measured))))
    predictions = xr.Dataset(pred, coords={MEASUREMENT: ds[MEASUREMENT].values})
    errors = _errors_table(err)
    return CrossValidationResult(fold_ds, predictions, errors)
