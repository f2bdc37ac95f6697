#!/usr/bin/env python
"""Fit an engine's served overheads to its published load sweeps, held out by source.

A development script, not part of the package; run from the repository root::

    PYTHONPATH=. python scripts/fit_served_overheads.py [--engine sglang] [--write]

What it fits
------------
A profile made from kernel tables (``scripts/engine_profiles.py``) is a floor under a served
engine: the scheduler, sampling, Python and elementwise kernels run between and around the
measured kernels every step, and the front end (HTTP, tokenisation, the first token's
streaming) adds to every TTFT. For an engine whose kernel profile no served run has corrected
(SGLang), this script fits the two with the simulator in the loop, against that engine's sweeps
of ``tests/data/load_sweeps/sweeps.csv`` (each point replayed as its source loaded the server:
``scripts/score_load_sweeps.py``):

* ``step_overhead`` [s], the decode phase's fixed time per step, the same for every GPU: searched
  on :data:`rooflinekit.planning.load_fit.ONE_KNOB_GRID` over 0-50 ms, then by Brent's method in
  the best cell (a simulated sweep is piecewise flat in it);
* ``frontend_latency`` [s], the same seconds on every TTFT and nothing else, so that for each
  ``step_overhead`` its least-squares value is closed-form (variable projection, as
  :func:`rooflinekit.planning.fit_under_load`).

The objective is the least squares on relative residuals of every sweep's mean TPOT (or ITL) and
mean TTFT at its points below 80 % of saturation and of its saturation throughput, each source
weighing the same. Held out by source: the fit is repeated without each source and scored on
it. ``--write`` puts the fit to every source into each profile of the engine's file, with the
range of the held-out fits as the knobs' interval and the held-out scores in a note.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import minimize_scalar

sys.path.insert(0, str(Path(__file__).resolve().parent))
import score_load_sweeps as sweeps_score  # noqa: E402  (the scorer beside this script)

import rooflinekit  # noqa: E402
from rooflinekit.planning.load_fit import LOAD_KNOBS, ONE_KNOB_GRID  # noqa: E402
from rooflinekit.profiles import Calibration  # noqa: E402

PROFILES = Path(__file__).resolve().parents[1] / "rooflinekit" / "data" / "engine_profiles"


def engine_at(engine: str, gpu: str, step_overhead: float) -> Calibration:
    """``engine``'s shipped profile of ``gpu`` with ``step_overhead`` [s] and no front end."""
    base = rooflinekit.engine_profile(engine, gpu, warn=False)
    prefill = {k: v for k, v in base.prefill.items() if k != "frontend_latency"}
    return Calibration(prefill=prefill, decode={**base.decode, "step_overhead": step_overhead},
                       source=base.source, base=base.base)


def simulate(sweeps, engine: str, step_overhead: float, *, replicates=3, requests=300,
             seed=0) -> list[dict]:
    """Every scored quantity of ``sweeps`` ({id: points}) at ``step_overhead`` [s], front end 0.

    One dict per quantity: ``source``, ``sweep``, ``what`` (``"tpot"``, ``"ttft"`` or
    ``"saturation"``), ``measured`` and ``predicted`` (ms, or output tokens/s).
    """
    rows = []
    for name, points in sweeps.items():
        kind = sweeps_score.mode(points)
        cal = engine_at(engine, points[0]["gpu"], step_overhead)
        source = sweeps_score.source_group(points[0]["source"])
        peak = max(p["output_throughput"] for p in points)
        top = max(points, key=lambda p: p["output_throughput"])
        common = dict(replicates=replicates, requests=requests, seed=seed)
        for point in points:
            if point["output_throughput"] > sweeps_score.SATURATION_SHARE * peak:
                continue
            pred = sweeps_score.predict_point(point, cal, kind, **common)
            tpot = point["mean_tpot_ms"] if point["mean_tpot_ms"] is not None \
                else point["mean_itl_ms"]
            if tpot is not None:
                key = "mean_tpot" if point["mean_tpot_ms"] is not None else "mean_token_itl"
                rows.append({"source": source, "sweep": name, "what": "tpot",
                             "measured": tpot, "predicted": pred[key]})
            if point["mean_ttft_ms"] is not None:
                rows.append({"source": source, "sweep": name, "what": "ttft",
                             "measured": point["mean_ttft_ms"], "predicted": pred["mean_ttft"]})
        sat = sweeps_score.predict_point(top, cal, kind, **common)
        rows.append({"source": source, "sweep": name, "what": "saturation",
                     "measured": peak, "predicted": sat["throughput"]})
    return rows


def frontend(rows) -> float:
    """The least-squares front-end latency [ms] of the TTFT ``rows`` (sources alike), ≥ 0."""
    ttft = [r for r in rows if r["what"] == "ttft" and math.isfinite(r["predicted"])]
    if not ttft:
        return 0.0
    count = {}
    for r in ttft:
        count[r["source"]] = count.get(r["source"], 0) + 1
    w = np.array([1.0 / count[r["source"]] for r in ttft])
    m = np.array([r["measured"] for r in ttft])
    p = np.array([r["predicted"] for r in ttft])
    hi = LOAD_KNOBS["frontend_latency"][2] * 1e3
    return float(min(max(np.sum(w * (m - p) / m**2) / np.sum(w / m**2), 0.0), hi))


def cost(rows, front_ms: float) -> float:
    """Weighted sum of squared relative residuals, sources weighing alike."""
    count = {}
    for r in rows:
        count[r["source"]] = count.get(r["source"], 0) + 1
    total = 0.0
    for r in rows:
        pred = r["predicted"] + (front_ms if r["what"] == "ttft" else 0.0)
        res = (pred - r["measured"]) / r["measured"] if math.isfinite(pred) else 10.0
        total += res * res / count[r["source"]]
    return total


def fit(sweeps, engine: str, **sim) -> tuple[float, float]:
    """``(step_overhead, frontend_latency)`` [s] that fit ``sweeps`` best."""
    lo, hi = LOAD_KNOBS["step_overhead"][1], LOAD_KNOBS["step_overhead"][2]

    def objective(step):
        rows = simulate(sweeps, engine, step, **sim)
        return cost(rows, frontend(rows))

    grid = lo + (hi - lo) * np.array(ONE_KNOB_GRID)
    costs = [objective(g) for g in grid]
    k = int(np.argmin(costs))
    cell = (grid[max(k - 1, 0)], grid[min(k + 1, len(grid) - 1)])
    best = minimize_scalar(objective, bounds=cell, method="bounded",
                           options={"xatol": (hi - lo) * 1e-4, "maxiter": 20})
    step = float(best.x) if best.fun <= costs[k] else float(grid[k])
    return step, frontend(simulate(sweeps, engine, step, **sim)) / 1e3


def scores(rows, front_ms: float) -> dict:
    """TPOT and TTFT MAPE [%] and mean absolute saturation error [%] of ``rows``."""
    def err(what, add=0.0):
        vals = [abs(r["predicted"] + add - r["measured"]) / r["measured"]
                for r in rows if r["what"] == what and math.isfinite(r["predicted"])]
        return float(np.mean(vals) * 100) if vals else math.nan
    return {"tpot": err("tpot"), "ttft": err("ttft", front_ms), "saturation": err("saturation")}


def held_out(sweeps, engine: str, **sim) -> tuple[tuple[float, float], list[dict]]:
    """The fit to every source, and per source the fit without it scored on it."""
    by_source = {}
    for name, points in sweeps.items():
        by_source.setdefault(sweeps_score.source_group(points[0]["source"]), {})[name] = points
    full = fit(sweeps, engine, **sim)
    out = []
    for source, mine in by_source.items():
        rest = {n: p for n, p in sweeps.items() if n not in mine}
        knobs = fit(rest, engine, **sim) if rest else full
        floor = simulate(mine, engine, 0.0, **sim)
        held = simulate(mine, engine, knobs[0], **sim)
        inside = simulate(mine, engine, full[0], **sim)
        out.append({"source": source, "sweeps": len(mine), "step_overhead": knobs[0],
                    "frontend_latency": knobs[1], "floor": scores(floor, 0.0),
                    "held_out": scores(held, knobs[1] * 1e3),
                    "in_sample": scores(inside, full[1] * 1e3)})
    return full, out


def note(full, rows) -> str:
    """The sentence each profile's notes carry about this fit."""
    def fmt(s):
        return f"{s['tpot']:.0f} / {s['ttft']:.0f} / {s['saturation']:.0f} %"
    held = "; ".join(f"{r['source']} ({r['sweeps']} sweeps) {fmt(r['floor'])} -> "
                     f"{fmt(r['held_out'])}" for r in rows)
    return (f"Served overheads step_overhead = {full[0] * 1e3:.2f} ms and frontend_latency = "
            f"{full[1] * 1e3:.1f} ms (the same for every GPU; interval: the range of the fits "
            f"leaving one source out) were fitted by scripts/fit_served_overheads.py with the "
            f"simulator replaying this engine's sweeps of tests/data/load_sweeps/sweeps.csv "
            f"(mean TPOT and TTFT below 80 % of saturation, and the saturation throughput). "
            f"Held out by source, TPOT / TTFT / saturation error of the kernel floor -> of the "
            f"fit without that source: {held}.")


#: The header paragraph ``--write`` puts before the file's ``engine = ...`` line, in place of
#: the kernel-only file's "a floor" paragraph.
STAGE = ["# Stage 2, served (scripts/fit_served_overheads.py, run after scripts/engine_profiles.py):",
         "# one decode step_overhead [s] and one frontend_latency [s] for every GPU, the time a "
         "served engine",
         "# spends outside the measured kernels, fitted with the simulator replaying this "
         "engine's load sweeps",
         "# of tests/data/load_sweeps/sweeps.csv; held out by source in each profile's notes."]
FLOOR = "# No serving overheads have been measured for "


def write(engine: str, full, rows, path=None) -> Path:
    """Put the fit, its interval and its note into every profile of ``engine``'s file."""
    path = path or PROFILES / f"{engine}.toml"
    steps = [full[0]] + [r["step_overhead"] for r in rows]
    fronts = [full[1]] + [r["frontend_latency"] for r in rows]
    sentence = note(full, rows)
    text = path.read_text(encoding="utf-8")
    lines, in_interval, in_floor = [], False, False
    for line in text.splitlines():
        in_floor = line.startswith(FLOOR) or (in_floor and line.startswith("# "))
        if in_floor or line in STAGE:
            continue                # the kernel file's floor paragraph, or ours, written afresh
        if line.startswith('engine = "'):
            lines += STAGE
        if line.startswith("[[profile]]"):
            in_interval = False
        elif line.startswith("[profile.interval]"):
            in_interval = True
        if line.startswith("prefill = { "):
            body = re.sub(r"frontend_latency = (\[[^]]*\]|[^,}]+), ", "",
                          line[len("prefill = { "):])
            knob = f"[{min(fronts)!r}, {max(fronts)!r}]" if in_interval else repr(full[1])
            line = "prefill = { frontend_latency = " + knob + ", " + body
        elif line.startswith("decode = { "):
            knob = f"[{min(steps)!r}, {max(steps)!r}]" if in_interval else repr(full[0])
            line = re.sub(r"step_overhead = (\[[^]]*\]|[^,}]+)", f"step_overhead = {knob}", line)
        elif line.startswith('notes = "') and not in_interval:
            line = re.sub(r" ?Served overheads step_overhead = [^\"]*", "", line[:-1]) + \
                " " + sentence + '"'
        lines.append(line)
        if line.startswith("fit_error = ") and not in_interval and \
                not any(l.startswith("notes = ") for l in text.splitlines()):
            lines.append(f'notes = "{sentence}"')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default="sglang", choices=["sglang"],
                        help="the engine whose sweeps and profile file (default sglang)")
    parser.add_argument("--write", action="store_true",
                        help="write the fit into rooflinekit/data/engine_profiles/ENGINE.toml")
    args = parser.parse_args(argv)
    sweeps = {n: p for n, p in sweeps_score.read_sweeps().items()
              if sweeps_score.PROFILE_OF_ENGINE[p[0]["engine"]] == args.engine}
    if not sweeps:
        raise SystemExit(f"no {args.engine} sweeps in {sweeps_score.DEFAULT_SWEEPS}")
    full, rows = held_out(sweeps, args.engine)
    print(f"{args.engine}: step_overhead = {full[0] * 1e3:.3f} ms, frontend_latency = "
          f"{full[1] * 1e3:.1f} ms, fitted to {len(sweeps)} sweeps\n")
    print("| source | sweeps | fitted without it (step, front end) [ms] | kernel floor "
          "TPOT / TTFT / sat. | held out | in sample |")
    print("| --- | --- | --- | --- | --- | --- |")

    def fmt(s):
        return f"{s['tpot']:.0f} / {s['ttft']:.0f} / {s['saturation']:.0f} %"
    for r in rows:
        print(f"| {r['source']} | {r['sweeps']} | {r['step_overhead'] * 1e3:.2f}, "
              f"{r['frontend_latency'] * 1e3:.1f} | {fmt(r['floor'])} | {fmt(r['held_out'])} | "
              f"{fmt(r['in_sample'])} |")
    if args.write:
        print(f"\nwrote {write(args.engine, full, rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
