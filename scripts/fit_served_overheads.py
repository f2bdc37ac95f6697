#!/usr/bin/env python
"""Fit an engine's served overheads to its published load sweeps, held out by source.

A development script, not part of the package; run from the repository root::

    PYTHONPATH=. python scripts/fit_served_overheads.py [--engine sglang|vllm|trtllm]
        [--source SOURCE ...] [--knobs KNOB ...] [--write]

What it fits
------------
A profile made from kernel tables (``scripts/engine_profiles.py``) is a floor under a served
engine: the scheduler, sampling, Python and elementwise kernels run between and around the
measured kernels every step, and the front end (HTTP, tokenisation, the first token's
streaming) adds to every TTFT. For an engine whose kernel profile no served run has corrected
(SGLang), this script fits them with the simulator in the loop, against that engine's sweeps
of ``tests/data/load_sweeps/sweeps.csv`` (each point replayed as its source loaded the server:
``scripts/score_load_sweeps.py``):

* ``step_overhead`` [s], the decode phase's fixed time per step, and ``prefill_overhead`` [s],
  the fixed time of every step that carries prompt tokens (SGLang runs those apart from the
  decodes, which wait it), each the same for every GPU: a coordinate search (:func:`fit`), each
  knob on :data:`rooflinekit.planning.load_fit.ONE_KNOB_GRID` over its range, then by Brent's
  method in the best cell (a simulated sweep is piecewise flat in them);
* for vLLM, ``step_overhead`` and ``sequence_overhead`` [s per decode token], the host time
  each running sequence adds to a step (the engine mixes prompt chunks into the decode steps;
  its host work per sequence is what slows decode with the batch), printed, not written
  (:data:`WRITTEN`);
* for TensorRT-LLM, ``sequence_overhead`` alone, with its own published throughput table in
  the fit beside its two served sources (NIM and InferenceX's DeepSeek-R1 servers): offline
  bursts that run hundreds of sequences at once, each weighed by its saturation throughput,
  the table as one source and held out by model, then whole (:data:`SATURATION`). SGLang's two
  knobs instead trade the served sources, a held-out gain in one's TTFT for a loss in the
  other's TPOT and saturation (``--knobs step_overhead prefill_overhead`` prints that fit;
  ``docs/validation.md``);
* ``frontend_latency`` [s], the same seconds on every TTFT and nothing else, so that for any
  other knobs its least-squares value is closed-form (variable projection, as
  :func:`rooflinekit.planning.fit_under_load`).

The objective is the least squares on relative residuals of every sweep's mean TPOT (or ITL) and
TTFT at its points below 80 % of saturation and of its saturation throughput (a saturation
table's runs: that alone), each source weighing the same. The TTFT is the point's median where
its source publishes one, else its mean (:data:`FITTED`): a run without warm-up requests holds
its server's start in the mean, which a front end fitted to it would add to every request of a
steady server. The scores printed and written stay the means' (the median's beside them where
published). Held out by source: the fit is repeated without each source (each model of a
saturation table, then the table) and scored on it. ``--write`` puts the fit to every source
into each profile of the engine's file, with the range of the held-out fits as the knobs'
interval and the held-out scores in a note.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import minimize_scalar

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fit_frontend_latency as frontend_fit  # noqa: E402  (vLLM's front-end fit, beside)
import score_load_sweeps as sweeps_score  # noqa: E402  (the scorer beside this script)

import rooflinekit  # noqa: E402
from rooflinekit.planning.load_fit import LOAD_KNOBS, ONE_KNOB_GRID  # noqa: E402
from rooflinekit.profiles import Calibration  # noqa: E402

PROFILES = Path(__file__).resolve().parents[1] / "rooflinekit" / "data" / "engine_profiles"


#: The knobs searched with the simulator in the loop, per engine (the front end is closed-form):
#: SGLang runs prompt steps apart, which the decodes wait (``prefill_overhead``); vLLM mixes
#: them into the decode steps, and its host work per running sequence (``sequence_overhead``)
#: is what makes its decode slow with the batch. TensorRT-LLM: the host time per running
#: sequence alone, which its own throughput table (:data:`SATURATION`) measures at batches of
#: hundreds; with SGLang's two knobs instead (``--knobs step_overhead prefill_overhead``), its
#: two served sources trade them, one's TTFT held out for the other's TPOT and saturation
#: (``docs/validation.md``).
SEARCHED = {"sglang": ("step_overhead", "prefill_overhead"),
            "vllm": ("step_overhead", "sequence_overhead"),
            "trtllm": ("sequence_overhead",)}
#: The saturation tables an engine's fit reads beside its sweeps: each run one burst, weighed
#: by its saturation throughput alone, the table as one source, held out by model
#: (:func:`group`). TensorRT-LLM's own published table is the one that loads its engine to
#: hundreds of running sequences. GPUStack's vLLM bursts (``bursts.csv``) stay scored, not
#: fitted: vLLM's fit is printed, never written, and ``docs/validation.md`` quotes it without.
SATURATION = {"trtllm": (sweeps_score.DEFAULT_THROUGHPUT,)}
#: The engines whose profile files ship this stage's fit (``--write``). vLLM's is printed only:
#: fitted to every vLLM source at once it does not predict the held-out ones better than the
#: shipped profile, because vLLM's V0 (before 0.8) and V1 engines spend different host time
#: (``docs/validation.md``, "Host time per sequence").
WRITTEN = ("sglang", "trtllm")
#: Rounds of the coordinate search (each knob in turn on its whole range, the others held):
#: three, since the cost is not convex in a knob (steps of the simulated schedule) and after
#: two a fifth's move of the prefill overhead could still lower it.
ROUNDS = 3
#: The quantities the fit weighs: TPOT, TTFT (``"ttft_fit"``: each point's median where its
#: source publishes one, else its mean) and saturation. A benchmark run without warm-up
#: requests holds its server's start in the mean TTFT: InferenceX's TensorRT-LLM runs
#: (``tests/data/load_sweeps/sweeps.csv``; no warm-up in that client's version) have a mean 2.6-5
#: times their median, 1.9-6 s more for each request of the first wave, which no steady-state
#: server pays and a front end fitted to means spreads over every request. The scores stay the
#: means' (:func:`scores`).
FITTED = ("tpot", "ttft_fit", "saturation")


def _knob_names(engine: str, searched=None) -> tuple:
    """The knobs a fit searches: ``searched``, else the engine's own (:data:`SEARCHED`)."""
    return SEARCHED[engine] if searched is None else tuple(searched)


def engine_at(engine: str, gpu: str, knobs=None, searched=None) -> Calibration:
    """``engine``'s shipped profile of ``gpu`` without its front end, with ``knobs``
    ({name: value [s]} of the engine's :data:`SEARCHED`) in their phases; ``None``: the kernel
    floor, every knob of :data:`SEARCHED` at 0 (SGLang's kernel fit's own prefill intercept,
    1.5-2.5 ms, is replaced by this stage's value once written, so the floor does without it:
    the same floor however often the stage runs; vLLM's floor drops the step overhead its
    profile fitted to static rows). ``searched``: other knobs than the engine's own."""
    base = rooflinekit.engine_profile(engine, gpu, warn=False)
    phases = {"prefill": {k: v for k, v in base.prefill.items() if k != "frontend_latency"},
              "decode": dict(base.decode)}
    for name, value in (knobs or dict.fromkeys(_knob_names(engine, searched), 0.0)).items():
        phases[LOAD_KNOBS[name][0]][name] = float(value)
    # the profile itself otherwise: its serving engine's scheduler and memory rule
    return dataclasses.replace(base, prefill=phases["prefill"], decode=phases["decode"],
                               intervals={})


def saturation_runs(engine: str) -> dict:
    """``engine``'s runs of its :data:`SATURATION` tables, as one-point sweeps ({id: [run]}),
    each marked ``saturation_run``."""
    return {run["sweep"]: [{**run, "saturation_run": True}]
            for path in SATURATION.get(engine, ())
            for run in sweeps_score.read_bursts(path)
            if sweeps_score.PROFILE_OF_ENGINE[run["engine"]] == engine}


def group(points) -> str:
    """What a held-out fit leaves out with the sweep ``points``: its source, and of a
    saturation table (:func:`saturation_runs`) its source and model: one source of many models,
    whose runs of one model share their steps' shape."""
    source = sweeps_score.source_group(points[0]["source"])
    return f"{source}, {points[0]['model']}" if points[0].get("saturation_run") else source


def simulate(sweeps, engine: str, knobs=None, *, replicates=3, requests=300,
             seed=0, searched=None, cache=None) -> list[dict]:
    """Every scored quantity of ``sweeps`` ({id: points}) under ``knobs`` (see
    :func:`engine_at`), front end 0.

    One dict per quantity: ``source``, ``group`` (:func:`group`), ``sweep``, ``what``
    (``"tpot"``, ``"ttft"``, ``"ttft_fit"`` or ``"saturation"``), ``measured`` and
    ``predicted`` (ms, or output tokens/s). A saturation run is simulated once: a burst of
    1,000-3,000 fixed-length requests, whose replicates agree to 4e-16. ``cache``: a dict
    that keeps each sweep's rows by its knobs, for fits that try the same values again.
    """
    rows = []
    for name, points in sweeps.items():
        key = (name, tuple(sorted((knobs or {}).items())), tuple(searched or ()),
               replicates, requests, seed)
        if cache is not None and key in cache:
            rows += cache[key]
            continue
        start = len(rows)
        kind = sweeps_score.mode(points)
        cal = engine_at(engine, points[0]["gpu"], knobs, searched)
        source = sweeps_score.source_group(points[0]["source"])
        peak = max(p["output_throughput"] for p in points)
        top = max(points, key=lambda p: p["output_throughput"])
        common = dict(replicates=1 if points[0].get("saturation_run") else replicates,
                      requests=requests, seed=seed)
        for point in sweeps_score.below_saturation(points):
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
            # the fit's TTFT: the median where published (a run without warm-up holds its
            # server's start in the mean, :data:`FITTED`), else the mean
            median = point.get("median_ttft_ms")
            if median is not None or point["mean_ttft_ms"] is not None:
                rows.append({"source": source, "sweep": name, "what": "ttft_fit",
                             "median": median is not None,
                             "measured": median if median is not None else point["mean_ttft_ms"],
                             "predicted": pred["p50_ttft" if median is not None
                                               else "mean_ttft"]})
        sat = sweeps_score.predict_point(top, cal, kind, **common)
        rows.append({"source": source, "sweep": name, "what": "saturation",
                     "measured": peak, "predicted": sat["throughput"]})
        for row in rows[start:]:
            row["group"] = group(points)
        if cache is not None:
            cache[key] = rows[start:]
    return rows


def frontend(rows) -> float:
    """The least-squares front-end latency [ms] of the fit's TTFT ``rows`` (``"ttft_fit"``:
    medians where published; sources alike), ≥ 0."""
    ttft = [r for r in rows if r["what"] == "ttft_fit" and math.isfinite(r["predicted"])]
    if not ttft:
        return 0.0
    # the vLLM front end's closed form (any unit in, the same out), within the knob's bound
    return min(frontend_fit.fit(ttft), LOAD_KNOBS["frontend_latency"][2] * 1e3)


def cost(rows, front_ms: float) -> float:
    """Weighted sum of squared relative residuals, sources weighing alike."""
    rows = [r for r in rows if r["what"] in FITTED]
    count = {}
    for r in rows:
        count[r["source"]] = count.get(r["source"], 0) + 1
    total = 0.0
    for r in rows:
        pred = r["predicted"] + (front_ms if r["what"] == "ttft_fit" else 0.0)
        res = (pred - r["measured"]) / r["measured"] if math.isfinite(pred) else 10.0
        total += res * res / count[r["source"]]
    return total


def objective(sweeps, engine: str, knobs, **sim) -> float:
    """:func:`cost` of ``knobs`` with the front end at its closed-form best."""
    rows = simulate(sweeps, engine, knobs, **sim)
    return cost(rows, frontend(rows))


def fit(sweeps, engine: str, searched=None, **sim) -> dict:
    """The knobs of :data:`SEARCHED` and ``frontend_latency`` [s] that fit ``sweeps`` best.

    A coordinate search from 0: :data:`ROUNDS` times, each knob of :data:`SEARCHED` in turn on
    :data:`~rooflinekit.planning.load_fit.ONE_KNOB_GRID` over its whole range, then Brent's
    method in the best cell, the others held; the front end closed-form at every step.
    ``searched``: other knobs than the engine's own (printed fits).
    """
    names = _knob_names(engine, searched)
    sim = {**sim, "searched": names}
    knobs = dict.fromkeys(names, 0.0)
    for _ in range(ROUNDS if len(names) > 1 else 1):    # one knob: one round is the search
        for name in names:
            lo, hi = LOAD_KNOBS[name][1], LOAD_KNOBS[name][2]

            def one(value, name=name):
                return objective(sweeps, engine, {**knobs, name: value}, **sim)

            grid = lo + (hi - lo) * np.array(ONE_KNOB_GRID)
            costs = [one(g) for g in grid]
            k = int(np.argmin(costs))
            cell = (grid[max(k - 1, 0)], grid[min(k + 1, len(grid) - 1)])
            best = minimize_scalar(one, bounds=cell, method="bounded",
                                   options={"xatol": (hi - lo) * 1e-4, "maxiter": 20})
            knobs[name] = float(best.x) if best.fun <= costs[k] else float(grid[k])
    knobs["frontend_latency"] = frontend(simulate(sweeps, engine, knobs, **sim)) / 1e3
    return knobs


def _searched(knobs) -> dict:
    return {k: v for k, v in knobs.items() if k != "frontend_latency"}


def scores(rows, front_ms: float) -> dict:
    """TPOT and TTFT MAPE [%] and mean absolute saturation error [%] of ``rows``."""
    def err(what, add=0.0, median=None):
        vals = [abs(r["predicted"] + add - r["measured"]) / r["measured"]
                for r in rows if r["what"] == what and math.isfinite(r["predicted"])
                and (median is None or r["median"] == median)]
        return float(np.mean(vals) * 100) if vals else math.nan
    return {"tpot": err("tpot"), "ttft": err("ttft", front_ms), "saturation": err("saturation"),
            "ttft_median": err("ttft_fit", front_ms, median=True)}


def groups(sweeps) -> dict:
    """``{group: {sweep: points}}`` (:func:`group`)."""
    out = {}
    for name, points in sweeps.items():
        out.setdefault(group(points), {})[name] = points
    return out


def held_out(sweeps, engine: str, searched=None, **sim) -> tuple[dict, list[dict]]:
    """The fit to every source, and per group (:func:`group`: a source, a saturation table's
    model), then per source of several groups, the fit without it scored on it (``searched``:
    other knobs than the engine's own). One cache of simulated sweeps serves every fit
    (``sim["cache"]``, else a new one)."""
    sim = {"cache": {}, **sim, "searched": _knob_names(engine, searched)}
    full = fit(sweeps, engine, **sim)
    parts, whole = groups(sweeps), {}
    for name, points in sweeps.items():
        whole.setdefault(sweeps_score.source_group(points[0]["source"]), {})[name] = points
    out = []
    for source, mine in {**parts, **{s: m for s, m in whole.items() if s not in parts}}.items():
        rest = {n: p for n, p in sweeps.items() if n not in mine}
        knobs = fit(rest, engine, **sim) if rest else full
        floor = simulate(mine, engine, None, **sim)
        held = simulate(mine, engine, _searched(knobs), **sim)
        inside = simulate(mine, engine, _searched(full), **sim)
        out.append({"source": source, "sweeps": len(mine), "knobs": knobs,
                    "runs": all(p[0].get("saturation_run") for p in mine.values()),
                    "floor": scores(floor, 0.0),
                    "held_out": scores(held, knobs["frontend_latency"] * 1e3),
                    "in_sample": scores(inside, full["frontend_latency"] * 1e3)})
    return full, out


def _ms(knobs) -> str:
    return ", ".join(f"{k} {v * 1e6:.0f} µs" if k == "sequence_overhead" else
                     f"{k} {v * 1e3:.1f} ms" for k, v in knobs.items())


def scores_text(s) -> str:
    """``TPOT / TTFT (median TTFT) / saturation %`` of :func:`scores` ``s`` ("–" for what the
    source does not publish: a saturation table has neither TPOT nor TTFT)."""
    def pct(value):
        return "–" if math.isnan(value) else f"{value:.0f}"
    median = s.get("ttft_median", math.nan)      # NaN: the source publishes no median
    median = "" if math.isnan(median) else f" (median {median:.0f})"
    return f"{pct(s['tpot'])} / {pct(s['ttft'])}{median} / {pct(s['saturation'])} %"


def note(engine: str, full, rows) -> str:
    """The sentence each profile of ``engine`` carries in its notes about this fit."""
    def count(r):
        word = "run" if r.get("runs") else "sweep"
        return f"{r['sweeps']} {word}{'s' * (r['sweeps'] != 1)}"
    held = "; ".join(f"{r['source']} ({count(r)}) {scores_text(r['floor'])} -> "
                     f"{scores_text(r['held_out'])} (fitted without it: {_ms(r['knobs'])})"
                     for r in rows)
    tables = " and ".join(str(path.relative_to(PROFILES.parents[2]))
                          for path in SATURATION.get(engine, ()))
    # an engine without saturation tables keeps the sentence its profiles were written with
    left_out = "one source, or one model of a saturation table," if tables else "one source"
    runs = (f" and its runs of {tables} (their saturation throughput, a table weighing as one "
            f"source)") if tables else ""
    how = " (a table's models one at a time, then the whole table)" if tables else ""
    return (f"Served overheads {_ms(full)} (the same for every GPU; interval: the range of the "
            f"fits leaving {left_out} out) were fitted by scripts/fit_served_overheads.py with "
            f"the simulator replaying this engine's sweeps of tests/data/load_sweeps/sweeps.csv "
            f"(mean TPOT, and the median TTFT where published, else the mean, below 80 % of "
            f"saturation, and the saturation throughput){runs}. Held out by source{how}, TPOT / "
            f"mean TTFT (median TTFT) / saturation error of the kernel floor -> of the fit "
            f"without {'it' if tables else 'that source'}: {held}.")


#: The header paragraph ``--write`` puts before the file's ``engine = ...`` line, in place of
#: the kernel-only file's "a floor" paragraph, per engine.
STAGE = {
    "sglang": ["# Stage 2, served (scripts/fit_served_overheads.py, run after "
               "scripts/engine_profiles.py):",
               "# one step_overhead, one prefill_overhead and one frontend_latency [s] for every "
               "GPU, the time a served engine",
               "# spends outside the measured kernels, fitted with the simulator replaying this "
               "engine's load sweeps",
               "# of tests/data/load_sweeps/sweeps.csv; held out by source in each profile's "
               "notes."],
    "trtllm": ["# Stage 2, served (scripts/fit_served_overheads.py, run after "
               "scripts/engine_profiles.py):",
               "# one sequence_overhead [s per running sequence a decode step] and one "
               "frontend_latency [s] for every",
               "# GPU: the host's time for each running sequence each step (scheduling, "
               "sampling, bookkeeping), which",
               "# no kernel table holds, and the time a served engine spends on a request "
               "before its first step (HTTP,",
               "# tokenisation), fitted with the simulator replaying this engine's load sweeps "
               "of",
               "# tests/data/load_sweeps/sweeps.csv and its own throughput table",
               "# (tests/data/load_sweeps/trtllm_throughput.csv); held out by source and by the "
               "table's models in",
               "# each profile's notes. A per-step and a per-prompt-step overhead fitted "
               "instead trade one served",
               "# source's TPOT and saturation for the other's TTFT held out "
               "(docs/validation.md)."]}


FLOOR = "# No serving overheads have been measured for "


def write(engine: str, full, rows, path=None) -> Path:
    """Put the fit, its interval and its note into every profile of ``engine``'s file."""
    path = path or PROFILES / f"{engine}.toml"
    fits = [full] + [r["knobs"] for r in rows]
    sentence = note(engine, full, rows)
    text = path.read_text(encoding="utf-8")
    has_notes = any(line.startswith("notes = ") for line in text.splitlines())
    lines, in_interval, in_floor = [], False, False
    for line in text.splitlines():
        # the kernel file's floor paragraph, or a stage paragraph written before, dropped to be
        # written afresh
        in_floor = line.startswith((FLOOR, STAGE[engine][0])) or (
            in_floor and line.startswith("# "))
        if in_floor:
            continue
        if line.startswith('engine = "'):
            lines += STAGE[engine]
        if line.startswith("[[profile]]"):
            in_interval = False
        elif line.startswith("[profile.interval]"):
            in_interval = True

        def value(name):
            if in_interval:
                return f"[{min(f[name] for f in fits)!r}, {max(f[name] for f in fits)!r}]"
            return repr(full[name])
        if line.startswith("prefill = { "):
            body = re.sub(r"frontend_latency = (\[[^]]*\]|[^,}]+), ", "",
                          line[len("prefill = { "):])
            line = "prefill = { frontend_latency = " + value("frontend_latency") + ", " + body
        for name in SEARCHED[engine]:
            phase = LOAD_KNOBS[name][0]
            if line.startswith(f"{phase} = {{ ") and re.search(rf"\b{name} = ", line):
                line = re.sub(rf"\b{name} = (\[[^]]*\]|[^,}}]+)", f"{name} = {value(name)}",
                              line)
            elif line.startswith(f"{phase} = {{ "):    # a knob the kernel fit does not hold
                line = line[:-2].rstrip() + f", {name} = {value(name)} }}"
        if line.startswith('notes = "') and not in_interval:
            kept = re.sub(r" ?Served overheads [^\"]*", "", line[len('notes = "'):-1]).strip()
            line = 'notes = "' + (kept + " " if kept else "") + sentence + '"'
        lines.append(line)
        if line.startswith("fit_error = ") and not in_interval and not has_notes:
            lines.append(f'notes = "{sentence}"')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default="sglang", choices=sorted(SEARCHED),
                        help="the engine whose sweeps and profile file (default sglang)")
    parser.add_argument("--source", action="append", default=None,
                        help="fit only this source's sweeps (repeatable; default all of the "
                             "engine's)")
    parser.add_argument("--knobs", nargs="+", default=None, metavar="KNOB",
                        choices=("step_overhead", "prefill_overhead", "sequence_overhead"),
                        help="search these knobs instead of the engine's own (printed only)")
    parser.add_argument("--write", action="store_true",
                        help="write the fit into rooflinekit/data/engine_profiles/ENGINE.toml "
                             f"(engines {', '.join(WRITTEN)}, every source)")
    args = parser.parse_args(argv)
    if args.write and (args.engine not in WRITTEN or args.source or args.knobs):
        parser.error(f"--write ships a fit of the engine's own knobs to every source of "
                     f"{' or '.join(WRITTEN)}; {args.engine}"
                     f"{' with --source' if args.source else ''}"
                     f"{' with --knobs' if args.knobs else ''} is only printed")
    sweeps = {n: p for n, p in {**sweeps_score.fitted_sweeps(sweeps_score.read_sweeps()),
                                **saturation_runs(args.engine)}.items()
              if sweeps_score.PROFILE_OF_ENGINE[p[0]["engine"]] == args.engine
              and (not args.source or sweeps_score.source_group(p[0]["source"]) in args.source)}
    if not sweeps:
        raise SystemExit(f"no {args.engine} sweeps of {args.source or 'any source'} in "
                         f"{sweeps_score.DEFAULT_SWEEPS}")
    full, rows = held_out(sweeps, args.engine, args.knobs)
    print(f"{args.engine}: {_ms(full)}, fitted to {len(sweeps)} sweeps\n")
    print("| source | sweeps | fitted without it | kernel floor TPOT / TTFT / sat. | held out | "
          "in sample |")
    print("| --- | --- | --- | --- | --- | --- |")

    for r in rows:
        print(f"| {r['source']} | {r['sweeps']} | {_ms(r['knobs'])} | "
              f"{scores_text(r['floor'])} | {scores_text(r['held_out'])} | "
              f"{scores_text(r['in_sample'])} |")
    if args.write:
        print(f"\nwrote {write(args.engine, full, rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
