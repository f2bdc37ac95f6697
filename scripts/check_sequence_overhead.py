#!/usr/bin/env python
"""Would a host time per decoding sequence transfer between vLLM load sweeps? A check.

A development script, not part of the package; run from the repository root::

    PYTHONPATH=. python scripts/check_sequence_overhead.py

What it checks
--------------
A vLLM version that schedules synchronously (before 0.14.0) waits for its host between steps:
the scheduler, the input preparation and the output processing. The profiles charge that as one
time a step (``[host_scheduling] synchronous_step_overhead``, fitted by
``scripts/engine_profiles.py`` to runs of ten prompts). Part of the host's work loops over the
running sequences, so it may grow with the batch: the step model's ``sequence_overhead`` [s]
a decoding sequence, which runs of ten prompts cannot see and load sweeps of a hundred
sequences can. This script fits it with the simulator in the loop and holds the sources out:
every point of the vLLM sweeps of ``tests/data/load_sweeps/sweeps.csv`` whose version is
synchronous and runs vLLM's V1 engine (from :data:`score_load_sweeps.V1_SINCE`, 0.8.0, the first
release that runs V1 by default), on a GPU with its own vLLM profile, is simulated as its source
loaded the server (``scripts/score_load_sweeps.py``) at each value of :data:`GRID`, and the
value minimising

    Σ_i w_i ((p_i(s) − m_i) / m_i)²

is kept, where ``p_i(s)`` is the simulated mean TPOT (mean ITL where the source gives only
that) at ``s`` and ``m_i`` the measured one, over the points below 80 % of their sweep's
saturation (:func:`score_load_sweeps.below_saturation`), with ``w_i = 1 / (points of its
source)`` so that every source weighs the same.
Then the fit is repeated without each source and scored on it (mean absolute percentage error
of its TPOT); the interval is the 5th-95th percentile of the fit over the sources resampled
with replacement (:data:`N_RESAMPLES`, seed 0).

What it found (2026-12-07, ShareGPT lengths from the recorded sample): two sources qualify,
dennislee22's A100 burst sweep (vLLM 0.10.1.1, 10-200 prompts at once) and GPUStack's H100
closed loop (vLLM 0.11.0, 1-8 clients). Fitted on both, 40 µs a sequence (90 % over sources
0-45 µs) takes dennislee22's TPOT error from 10.3 to 3.1 % and GPUStack's from 5.8 to 7.0 %.
Held out it does not transfer: fitted on GPUStack's alone it is 0 µs (dennislee22 stays at
10.3 %), fitted on dennislee22's alone 45 µs (GPUStack goes to 7.2 %). GPUStack runs at most
eight sequences, too few to see a time per sequence, so no second source measures it; the
profiles do not carry it (docs/validation.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import score_load_sweeps as sweeps_score  # noqa: E402  (the scorer beside this script)

import rooflinekit  # noqa: E402
from rooflinekit.profiles import Calibration, host_scheduling  # noqa: E402

#: Values tried [s]: 0 to 200 µs a decoding sequence, every 5 µs.
GRID = np.arange(0.0, 200.5e-6, 5e-6)
#: Bootstrap resamples (sources drawn with replacement) for the interval.
N_RESAMPLES = 1000
#: Share of the resampled fits below the interval's ends.
INTERVAL = (0.05, 0.95)
#: GPUs with a vLLM profile of their own; a sweep on another GPU is timed by its nearest's.
PROFILED = {key.gpu for key in rooflinekit.ENGINE_PROFILES if key.engine == "vllm"}


def fitted(point) -> bool:
    """Whether a point's sweep enters the fit: vLLM at a synchronous V1 version (from
    :data:`score_load_sweeps.V1_SINCE` to before the asynchronous default), on a GPU with its own
    vLLM profile (another GPU's profile would charge its own error to the host)."""
    version = sweeps_score.engine_version(point)
    return (point["engine"] == "vllm" and point["gpu"] in PROFILED and version is not None
            and host_scheduling("vllm").synchronous(version)
            and not sweeps_score.runs_v0(point))


def at(point, seconds: float) -> Calibration:
    """The shipped vLLM profile of the point's GPU at its version's host scheduling
    (:func:`score_load_sweeps.profile_version`), with the decode ``sequence_overhead`` set to
    ``seconds`` (what is being fitted)."""
    base = rooflinekit.engine_profile("vllm", point["gpu"],
                                      version=sweeps_score.profile_version(point), warn=False)
    return dataclasses.replace(base, decode={**base.decode, "sequence_overhead": float(seconds)},
                               intervals={})


def tpot_points(path=sweeps_score.DEFAULT_SWEEPS, grid=GRID, *, replicates=3, requests=300,
                seed=0) -> list[dict]:
    """Every point below saturation of the fitted sweeps with a measured TPOT (or ITL),
    simulated at each value of ``grid``.

    Each dict: ``sweep``, ``source`` (:func:`score_load_sweeps.source_group`), ``measured``
    [s] and ``predicted`` (an array over ``grid`` [s]).
    """
    out = []
    for name, points in sweeps_score.read_sweeps(path).items():
        if not fitted(points[0]):
            continue
        kind = sweeps_score.mode(points)
        for point in sweeps_score.below_saturation(points):
            found = sweeps_score.published(point, "tpot")
            if found is None:
                continue
            key, measured = found
            predicted = [sweeps_score.predict_point(point, at(point, s), kind,
                                                    replicates=replicates, requests=requests,
                                                    seed=seed)[key] / 1e3 for s in grid]
            out.append({"sweep": name, "source": sweeps_score.source_group(point["source"]),
                        "measured": measured / 1e3, "predicted": np.array(predicted)})
    return out


def _loss(points) -> np.ndarray:
    """The weighted relative least squares of ``points`` at each grid value."""
    per_source = {}
    for p in points:
        per_source[p["source"]] = per_source.get(p["source"], 0) + 1
    return sum(((p["predicted"] - p["measured"]) / p["measured"]) ** 2 / per_source[p["source"]]
               for p in points)


def fit(points, grid=GRID) -> float:
    """The grid value [s] that minimises :func:`_loss` over ``points``."""
    if not points:
        raise ValueError("no points to fit")
    return float(grid[int(np.argmin(_loss(points)))])


def mape(points, seconds: float, grid=GRID) -> float:
    """Mean absolute percentage error [%] of the TPOT of ``points`` at ``seconds``."""
    k = int(np.argmin(abs(grid - seconds)))
    return float(np.mean([abs(p["predicted"][k] - p["measured"]) / p["measured"]
                          for p in points]) * 100)


def held_out(points, grid=GRID) -> list[dict]:
    """Per fitted source: the fit without it and its TPOT error at 0 and at that fit."""
    rows = []
    for source in dict.fromkeys(p["source"] for p in points):
        mine = [p for p in points if p["source"] == source]
        others = [p for p in points if p["source"] != source]
        value = fit(others, grid) if others else math.nan
        rows.append({"source": source, "points": len(mine), "sequence_overhead": value,
                     "before": mape(mine, 0.0, grid),
                     "held_out": mape(mine, value, grid) if others else math.nan})
    return rows


def interval(points, grid=GRID, seed=0) -> tuple[float, float]:
    """5th-95th percentile of the fit over the sources resampled with replacement."""
    return sweeps_score.bootstrap_over_sources(
        points, lambda sample: fit(sample, grid), n_resamples=N_RESAMPLES, quantiles=INTERVAL,
        seed=seed)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    points = tpot_points()
    value = fit(points)
    lo, hi = interval(points)
    print(f"sequence_overhead = {value * 1e6:.0f} µs (90 % over sources: "
          f"{lo * 1e6:.0f}-{hi * 1e6:.0f} µs), from {len(points)} points\n")
    print("| source | points | fitted without it [µs] | TPOT MAPE at 0 | held out | in sample |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in held_out(points):
        print(f"| {r['source']} | {r['points']} | {r['sequence_overhead'] * 1e6:.0f} | "
              f"{r['before']:.1f} % | {r['held_out']:.1f} % | "
              f"{mape([p for p in points if p['source'] == r['source']], value):.1f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
