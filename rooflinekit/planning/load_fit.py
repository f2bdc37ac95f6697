"""Fit an engine's knobs to your own load sweep, with the simulator in the loop.

:func:`fit_under_load` replays ``vllm bench serve`` runs at several request rates through
:func:`~rooflinekit.planning.load_curve` and moves the chosen knobs of an engine profile until
the simulated TTFT (the runs' medians where recorded) and mean TPOT match the measured
ones; the result is a :class:`~rooflinekit.profiles.Calibration` that ``plan(engine=...)``
takes.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import xarray as xr

from rooflinekit import catalog, dims
from rooflinekit._validation import check_one_of, check_type, describe, whole_number
from rooflinekit.calibrate import read_guidellm_sweep, read_vllm_serve_sweep
from rooflinekit.hardware import GPU
from rooflinekit.models import ModelShape
from rooflinekit.planning.fleet import load_curve
from rooflinekit.planning.traffic import SLO, Traffic
from rooflinekit.profiles import SECONDS_KNOBS, Calibration, resolve_engine
from rooflinekit.workloads import Constant, Empirical

__all__ = ["LOAD_KNOBS", "LoadFit", "fit_under_load"]

#: The knobs a load sweep can fit, their phase in a calibration and their bounds (s or share).
LOAD_KNOBS = {
    "step_overhead": ("decode", 0.0, 0.05),
    "sequence_overhead": ("decode", 0.0, 0.001),
    "layer_overhead": ("decode", 0.0, 0.002),
    "bandwidth_efficiency": ("decode", 0.05, 1.0),
    "prefill_overhead": ("prefill", 0.0, 0.5),
    "compute_efficiency": ("prefill", 0.05, 1.0),
    "gemm_half_tokens": ("prefill", 0.0, 4096.0),
    "frontend_latency": ("prefill", 0.0, 0.5),
}

#: Where a one-knob fit first looks, as shares of the knob's range: finest near 0, where the
#: overheads sit (for ``step_overhead``, 0-50 ms: 0, 0.125, 0.25, 0.5, 1, 2, 4.2, 8.3, 17, 33
#: and 50 ms).
ONE_KNOB_GRID = (0.0, 1 / 400, 1 / 200, 1 / 100, 1 / 50, 1 / 25, 1 / 12, 1 / 6, 1 / 3, 2 / 3, 1.0)
#: Points of the finer grid over the best cell of :data:`ONE_KNOB_GRID` (its two neighbours).
CELL_POINTS = 17


class LoadFit(NamedTuple):
    """What :func:`fit_under_load` returns: ``calibration``, the profile with the fitted knobs
    (its intervals dropped), and ``table`` over ``request_rate``: ``measured_*``, ``before_*``
    and ``fitted_*`` ``ttft`` and ``tpot`` [s] (means), where every run records a median TTFT
    also ``measured_median_ttft``, ``before_median_ttft`` and ``fitted_median_ttft`` [s];
    attrs ``tpot_error_before``, ``tpot_error``, ``ttft_error_before``, ``ttft_error`` (mean
    absolute percentage errors of the means [%]), ``ttft_median_error_before`` and
    ``ttft_median_error`` (of the medians, where recorded), and ``ttft_fitted`` (``"median"``
    or ``"mean"``: the TTFT the fit weighed)."""

    calibration: Calibration
    table: xr.Dataset


def _is_guidellm(results) -> bool:
    """One GuideLLM report (a path or a parsed mapping with ``benchmarks``), not a list of runs
    nor one file of them a line (``.jsonl``)."""
    if isinstance(results, Mapping):
        return "benchmarks" in results
    if isinstance(results, (str, Path)):
        return Path(results).suffix.lower() != ".jsonl"     # JSON lines: serve runs
    return False


def _same_prompts(run, earlier) -> bool:
    """Whether ``run`` sent ``earlier``'s prompts again (:func:`_resent_runs`' rule)."""
    if (int(run["completed"]), round(float(run["total_input_tokens"]))) != \
            (int(earlier["completed"]), round(float(earlier["total_input_tokens"]))):
        return False
    if any(len(r.get("prompt_lengths", ())) != int(r["completed"]) for r in (run, earlier)):
        return True      # the totals alone: no record of every request (GuideLLM's a sample)
    # as a multiset: a report may list its requests in the order they completed
    if sorted(run["prompt_lengths"]) != sorted(earlier["prompt_lengths"]):
        return False
    if len(set(run["prompt_lengths"])) > 1:
        return True                      # the same varied lengths: the same prompts
    # fixed-length prompts, which any seed gives: the replies' openings where both record them
    # (greedy decoding, the benchmark client's default, begins one prompt's reply alike)
    pairs = [(a, b) for a, b in zip(run.get("reply_openings", ()),
                                    earlier.get("reply_openings", ())) if a and b]
    if not pairs:
        return True                      # no reply recorded in both: the totals alone
    return 2 * sum(a == b for a, b in pairs) >= len(pairs)


def _resent_runs(runs) -> list[int]:
    """The positions of the runs (as :func:`~rooflinekit.calibrate.read_vllm_serve_sweep` gives
    them) that sent an earlier run's prompts again (a seeded benchmark client's same prompts):
    the same number of completed requests and of input tokens; where both files record each
    of their requests, the same prompt lengths (in any order); and where those lengths
    are all one (fixed-length synthetic prompts, alike under any seed) and both record the
    replies, the same opening of at least half of the replies both record
    (``reply_openings``). Runs whose files record neither are judged by the totals alone."""
    return [i for i, run in enumerate(runs)
            if any(_same_prompts(run, earlier) for earlier in runs[:i])]


def _with_knobs(base: Calibration, names, values, source: str) -> Calibration:
    phases = {"prefill": dict(base.prefill), "decode": dict(base.decode)}
    for name, value in zip(names, values):
        phases[LOAD_KNOBS[name][0]][name] = float(value)
    # the engine's scheduler and memory rule too (a shipped profile's serving_engine)
    return Calibration(prefill=phases["prefill"], decode=phases["decode"], source=source,
                       base=base.base, serving_engine=base.serving_engine)


def fit_under_load(results, *, model, gpu, tp=1, engine=None,
                   fit=("step_overhead", "frontend_latency"), max_num_seqs="auto",
                   max_num_batched_tokens="auto", ttft_statistic="median", replicates=3,
                   requests=300, seed=0, prefix_cache=None) -> LoadFit:
    """Fit an engine profile's knobs to ``vllm bench serve`` runs at several request rates.

    Parameters
    ----------
    results : list of str, Path or mapping; or one GuideLLM report
        ``vllm bench serve --save-result`` files (or their parsed JSON), one per rate, at two or
        more finite rates, or one per ``--max-concurrency`` at two or more concurrencies
        (``--request-rate inf``: a closed-loop client, simulated as
        :func:`~rooflinekit.planning.load_curve`'s ``concurrencies`` do, on the run's own
        number of requests, its ``completed``, at least its concurrency: the server's filling
        and draining weigh in its means as they did in the run)
        (:func:`~rooflinekit.calibrate.read_vllm_serve_sweep`); or one
        GuideLLM sweep report, its ``constant`` (replayed as regular arrivals) and ``poisson``
        benchmarks the rates, else its ``concurrent`` ones the concurrencies
        (:func:`~rooflinekit.calibrate.read_guidellm_sweep`); or one ``.jsonl`` file of runs,
        one a line (``vllm bench serve --append-result``, ``python -m sglang.bench_serving
        --output-file``).
    model, gpu : spec or catalogue name
        The server's model and GPU (the command line's ``calibrate`` reads the model from
        vLLM's files where not given; no file records the GPU).
    tp : int
        The server's tensor-parallel degree [1].
    engine : str or Calibration, optional
        The profile to start from and keep the other knobs of: a name (``"vllm"``,
        ``"sglang"``, ``"trtllm"``) or a calibration. Default: the vLLM profile of ``gpu``.
    fit : sequence of str
        The knobs to fit, from :data:`LOAD_KNOBS` (at most one per run). Default the two times
        the kernels cannot see: ``step_overhead`` and ``frontend_latency``. ``prefill_overhead``
        is charged to every step with prompt tokens, so fitting it to a client's TTFT (which
        holds front-end time) also slows the simulated server.
    max_num_seqs, max_num_batched_tokens
        The server's scheduler, as for :func:`~rooflinekit.planning.load_curve` (default its
        engine's defaults for the GPU).
    ttft_statistic : {"median", "mean"}
        The TTFT the fit weighs. ``"median"`` (default): each run's median TTFT where every
        run records one (``median_ttft_ms``; GuideLLM's ``successful.median``), else their
        means. A run without warm-up requests (``vllm bench serve`` sends none unless given
        ``--num-warmups``) holds the server's start in its first requests' TTFT: seconds
        that raise its mean, and would raise the fitted ``frontend_latency``, but leave its
        median. The mean TPOT is weighed either way.
    replicates, requests, seed
        Each run's simulation, as for :func:`~rooflinekit.planning.load_curve`; the same draws
        at every step of the fit (common random numbers). ``requests`` sets an open-loop run's
        requests; a closed-loop run replays its own.
    prefix_cache : bool, optional
        Whether the server cached prompts across requests (vLLM V1's and SGLang's default).
        ``True``: every run's first request finds its prompt cached (the client's test or
        warm-up prompt, sent just before), and a run that sent an earlier run's prompts again
        (a seeded client's same prompts: ``vllm bench serve`` keeps ``--seed 0`` unless told)
        finds them all cached. Such a run has the earlier run's number of requests and input
        tokens; where both files record their requests (``--save-detailed``), its prompt
        lengths too, and, where those are all one length (which any seed gives), the same
        opening of at least half of its replies. Each such request computes only its last
        prompt token (:func:`~rooflinekit.planning.load_curve`'s ``cached_prompts``). ``False``: every prompt computed whole. Default ``None``: as
        ``False``, with a warning where some run repeats an earlier run's prompts, since their
        TTFT is then a cache hit's wherever the server caches prompts (a front end fitted to it
        comes out too small for new prompts).

    Returns
    -------
    LoadFit
        The calibration and the measured / before / fitted table.

    Raises
    ------
    ValueError, TypeError
        A file without a field, a non-finite or burst rate, fewer than two rates, an unknown
        knob or more knobs than runs, naming the file and field, before any simulation.

    Notes
    -----
    Each run is simulated at its own rate with prompts and outputs drawn from its requests'
    recorded lengths where the file holds them (``--save-detailed``; a ShareGPT run's many
    short replies weigh in its mean TPOT as much as long ones), else of its mean lengths (the
    ``random`` dataset's fixed lengths). The fit minimises, by bounded least squares
    (:func:`scipy.optimize.least_squares`, overheads in milliseconds), the relative residuals
    ``(simulated − measured) / measured`` of the mean TPOT and the median (or mean) TTFT of
    every run.
    ``frontend_latency`` adds the same seconds to every simulated TTFT and to nothing else, so
    for the other knobs' every value its best value is closed-form,
    ``L = Σ (m − p) / m² / Σ 1 / m²`` over the runs' measured ``m`` and simulated ``p`` TTFT at
    ``L = 0`` (clipped to its bounds): the search runs over the other knobs alone (variable
    projection), and where it is the only knob, one simulation fits it. One knob besides it is
    searched on :data:`ONE_KNOB_GRID` over its whole range, on :data:`CELL_POINTS` points over
    the best cell, then by Brent's method around the best of those, so that the fit does not
    depend on where the profile starts it. A closed loop's mean TTFT jumps as the knob shifts
    its waits against the steps, so the whole cost has narrow dips Brent's method may step
    over; the fine grid and Brent's method also run on the TPOT residuals alone, smooth in a
    decode knob, and the better of the two by the whole cost is kept. More knobs each in
    turn on that grid (the others held), then by bounded least squares from there.

    References
    ----------
    .. [1] vLLM ``vllm/benchmarks/serve.py``: the result file's fields.

    See Also
    --------
    rooflinekit.calibrate.calibrate : the closed-form fit to isolated runs.
    """
    runs = read_guidellm_sweep(results) if _is_guidellm(results) else \
        read_vllm_serve_sweep([results] if isinstance(results, (str, Path)) else results)
    if isinstance(fit, str) or not isinstance(fit, Sequence) or not fit:
        raise TypeError(f"fit must be a non-empty list of knob names; got {describe(fit)}")
    unknown = [k for k in fit if k not in LOAD_KNOBS]
    if unknown or len(set(fit)) != len(fit):
        raise ValueError(f"fit must name distinct knobs of {', '.join(LOAD_KNOBS)}; got "
                         f"{list(fit)}")
    if len(fit) > 2 * len(runs):
        raise ValueError(f"fit names {len(fit)} knobs for {len(runs)} runs: give more runs or "
                         f"fewer knobs")
    model = model if isinstance(model, ModelShape) else catalog.model(model)
    gpu = gpu if isinstance(gpu, GPU) else catalog.gpu(gpu)
    tp = whole_number("tp", tp, lo=1)
    check_one_of("ttft_statistic", ttft_statistic, ("median", "mean"))
    median = ttft_statistic == "median" and all(r.get("median_ttft_ms") is not None
                                                for r in runs)
    if prefix_cache is not None and not isinstance(prefix_cache, (bool, np.bool_)):
        raise TypeError(f"prefix_cache must be True, False or None; got {describe(prefix_cache)}")
    resent = _resent_runs(runs)
    if prefix_cache is None and resent:
        warnings.warn(
            f"runs {', '.join(runs[i]['label'] for i in resent)} have the number of requests "
            f"and input tokens of an earlier run (and, where their files record them, its "
            f"prompt lengths and replies): a seeded client's same prompts sent again, "
            f"which a server that caches prompts (vLLM V1's and SGLang's default) serves from "
            f"cache, so their TTFT is not a new prompt's. Give prefix_cache=True (--prefix-cache "
            f"on) to simulate them so, or False (off) for a server without the cache",
            UserWarning, stacklevel=2)
    base = resolve_engine(engine, gpu)
    if isinstance(engine, Calibration):
        base = engine
    check_type("engine", base, Calibration)
    if base.groups:
        raise ValueError("engine must be a calibration without knob sets (one GPU's profile)")
    slo = SLO(ttft=3600.0)                 # targets are not read: only the means are
    # the knobs as fitted, not drawn from their intervals: engine_draws=0
    common = dict(model=model, gpu=gpu, tp=tp, max_num_seqs=max_num_seqs,
                  max_num_batched_tokens=max_num_batched_tokens, replicates=replicates,
                  requests=requests, seed=seed, engine_draws=0)

    def cached(i, requests):
        """Run ``i``'s requests served from the prefix cache, of its ``requests`` simulated."""
        if not prefix_cache:
            return 0
        return requests if i in resent else 1

    def simulate(cal):
        out = []
        for i, run in enumerate(runs):
            regular = run.get("burstiness")      # GuideLLM's constant rate: regular arrivals
            concurrency = run.get("max_concurrency")
            recorded = "prompt_lengths" in run
            if recorded:            # the requests' own lengths: short replies weigh in a mean TPOT
                prompt = Empirical(samples=run["prompt_lengths"])
                output = Empirical(samples=run["output_lengths"])
            else:
                prompt = Constant(max(1, round(run["total_input_tokens"] / run["completed"])))
                output = Constant(max(2, round(run["total_output_tokens"] / run["completed"])))
            traffic = Traffic(1.0 if concurrency else run["request_rate"], prompt, output,
                              arrival="poisson" if regular is None else "gamma",
                              burstiness=regular)
            if concurrency:         # a closed-loop client (--max-concurrency)
                # the run's own prompts: its filling and draining weigh in its means as sent
                # (at least load_curve's 10); lengths that vary start the clients together,
                # as the benchmark client does (equal ones would stay in one wave for ever)
                many = {**common, "requests": max(int(run["completed"]), concurrency, 10),
                        "clients_start": "together" if recorded else "apart"}
                ds = load_curve(traffic, slo, concurrencies=[concurrency], engine=cal,
                                cached_prompts=cached(i, many["requests"]), **many)
            else:
                ds = load_curve(traffic, slo, rates=[run["request_rate"]], engine=cal,
                                cached_prompts=cached(i, requests), **common)
            # (weighed TTFT, mean TPOT, mean TTFT): the median of the replicates' each
            out.append([float(np.nanmedian(ds["p50_ttft" if median else "mean_ttft"])),
                        float(np.nanmedian(ds["mean_tpot"])),
                        float(np.nanmedian(ds["mean_ttft"]))])
        return np.array(out)

    # the TTFT the fit weighs (median or mean) and the mean TPOT [s]
    weighed = "median_ttft_ms" if median else "mean_ttft_ms"
    measured = np.array([[r[weighed] / 1e3, r["mean_tpot_ms"] / 1e3] for r in runs])
    measured_mean_ttft = np.array([r["mean_ttft_ms"] / 1e3 for r in runs])
    scale = np.array([1e3 if k in SECONDS_KNOBS else 1.0 for k in fit])   # overheads in ms
    start = []
    for k in fit:
        phase, lo, hi = LOAD_KNOBS[k]
        value = (base.prefill if phase == "prefill" else base.decode).get(k, 0.0)
        start.append(min(max(float(value if value is not None else lo), lo), hi))
    lower = np.array([LOAD_KNOBS[k][1] for k in fit]) * scale
    upper = np.array([LOAD_KNOBS[k][2] for k in fit]) * scale

    # frontend_latency adds the same seconds to every simulated TTFT and to nothing else, so
    # for any other knobs its least-squares value is closed-form (variable projection): one
    # simulation at 0 gives it, and the search runs over the other knobs alone
    front = fit.index("frontend_latency") if "frontend_latency" in fit else None
    searched = [i for i in range(len(fit)) if i != front]

    def solve(x):
        """The simulated (TTFT, TPOT) of the searched knobs ``x`` (fit units) and every knob's
        value (SI), the front end's at its closed-form best."""
        values = np.zeros(len(fit))
        values[searched] = x / scale[searched]
        got = simulate(_with_knobs(base, fit, values, "load fit"))
        if front is not None:
            m, p = measured[:, 0], got[:, 0]
            ok = np.isfinite(p)
            best = np.sum((m - p)[ok] / m[ok] ** 2) / np.sum(1.0 / m[ok] ** 2) if ok.any() \
                else 0.0
            values[front] = min(max(best, LOAD_KNOBS["frontend_latency"][1]),
                                LOAD_KNOBS["frontend_latency"][2])
            got[:, [0, 2]] = got[:, [0, 2]] + values[front]
        return got, values

    solved = {}

    def residuals(x):
        key = tuple(np.asarray(x, dtype=float).ravel())
        if key not in solved:             # a knob value simulated once, whichever cost asks
            r = (solve(x)[0][:, :2] - measured) / measured
            solved[key] = np.where(np.isfinite(r), r, 10.0)
        return solved[key].ravel()

    x0 = np.clip(np.array(start) * scale, lower, upper)[searched]
    if len(searched) == 1:
        # one knob: a simulated sweep is piecewise flat in it, where a gradient step from the
        # profile's value stalls; a grid over its whole range, a finer one over the best
        # cell (Brent's method alone can settle on a step's edge there), then Brent's method
        # around the best of those, finds the same minimum from any start
        from scipy.optimize import minimize_scalar
        lo, hi = lower[searched][0], upper[searched][0]

        def cost(g, columns=slice(None)):
            return float(np.sum(residuals(np.array([g])).reshape(-1, 2)[:, columns] ** 2))

        def tpot_cost(g):
            return cost(g, 1)
        grid = lo + (hi - lo) * np.array(ONE_KNOB_GRID)
        costs = [cost(g) for g in grid]
        k = int(np.argmin(costs))
        fine = np.linspace(grid[max(k - 1, 0)], grid[min(k + 1, len(grid) - 1)], CELL_POINTS)
        candidates = []
        # the whole cost, and the TPOT's alone: a closed loop's mean TTFT jumps as the
        # knob shifts its waits against the steps, so the whole cost has narrow dips Brent's
        # method may step over where the TPOT's is smooth; the better by the whole cost wins
        for which in (cost, tpot_cost):
            fine_costs = [which(g) for g in fine]
            j = int(np.argmin(fine_costs))
            cell = (fine[max(j - 1, 0)], fine[min(j + 1, len(fine) - 1)])
            best = minimize_scalar(which, bounds=cell, method="bounded",
                                   options={"xatol": (hi - lo) * 1e-4, "maxiter": 30})
            candidates += [best.x, fine[j]]
        x0 = np.array([min(candidates, key=cost)])
    elif searched:
        # several: each knob in turn on its grid (the others held) puts the start in the right
        # cell whatever the profile's values (a knob at its bound, 0, gives a gradient step
        # nothing to see), then bounded least squares from there
        for i, k in enumerate(searched):
            grid = lower[k] + (upper[k] - lower[k]) * np.array(ONE_KNOB_GRID)
            trials = [np.concatenate([x0[:i], [g], x0[i + 1:]]) for g in grid]
            x0 = min(trials, key=lambda x: float(np.sum(residuals(x) ** 2)))
        from scipy.optimize import least_squares     # scipy: loaded on the first fit
        solution = least_squares(residuals, x0, bounds=(lower[searched], upper[searched]),
                                 diff_step=0.05, max_nfev=60,
                                 x_scale=np.maximum(upper - lower, 1e-9)[searched] / 10)
        x0 = solution.x
    values = solve(x0)[1]
    closed = any(r.get("max_concurrency") for r in runs)
    dim = dims.CONCURRENCY if closed else dims.REQUEST_RATE
    rates = [r["max_concurrency"] if closed else r["request_rate"] for r in runs]
    before = simulate(base)
    tool = "GuideLLM" if _is_guidellm(results) else "vllm bench serve"
    fitted_source = (f"{base.source or 'profile'} refitted under load to {len(runs)} {tool} "
                     f"runs at {', '.join(f'{r:g}' for r in rates)} "
                     f"{'requests in flight' if closed else 'req/s'} ({', '.join(fit)})")
    calibration = _with_knobs(base, fit, values, fitted_source)
    after = simulate(calibration)

    def mape(pred, truth):
        return float(np.mean(np.abs(pred - truth) / truth) * 100)

    def var(values, what):
        return xr.Variable(dim, values, {"units": "s", "long_name": what})

    shipped, fitted = "simulated with the profile as shipped", "simulated with the fitted knobs"
    columns = {"measured_ttft": var(measured_mean_ttft, "mean TTFT measured"),
               "measured_tpot": var(measured[:, 1], "mean TPOT measured"),
               "before_ttft": var(before[:, 2], f"mean TTFT {shipped}"),
               "before_tpot": var(before[:, 1], f"mean TPOT {shipped}"),
               "fitted_ttft": var(after[:, 2], f"mean TTFT {fitted}"),
               "fitted_tpot": var(after[:, 1], f"mean TPOT {fitted}")}
    errors = {"tpot_error_before": mape(before[:, 1], measured[:, 1]),
              "tpot_error": mape(after[:, 1], measured[:, 1]),
              "ttft_error_before": mape(before[:, 2], measured_mean_ttft),
              "ttft_error": mape(after[:, 2], measured_mean_ttft)}
    if median:
        columns.update(measured_median_ttft=var(measured[:, 0], "median TTFT measured"),
                       before_median_ttft=var(before[:, 0], f"median TTFT {shipped}"),
                       fitted_median_ttft=var(after[:, 0], f"median TTFT {fitted}"))
        errors.update(ttft_median_error_before=mape(before[:, 0], measured[:, 0]),
                      ttft_median_error=mape(after[:, 0], measured[:, 0]))
    table = xr.Dataset(
        columns,
        coords={dim: (dim, rates, {"units": "1", "long_name": "requests in flight (a "
                                   "closed-loop client)"} if closed else
                      {"units": "requests/s", "long_name": "request rate"})},
        attrs={**errors, "ttft_fitted": "median" if median else "mean",
               "knobs": ", ".join(f"{k}={v:.6g}" for k, v in zip(fit, values)),
               "files": "; ".join(r["label"] for r in runs)})
    return LoadFit(calibration, table)
