#!/usr/bin/env python
"""Fit the vLLM profiles' ``frontend_latency`` to published load sweeps, held out by source.

A development script, not part of the package; run from the repository root::

    PYTHONPATH=. python scripts/fit_frontend_latency.py [--write]

What it fits
------------
A client's time to first token holds time the engine's steps do not: the HTTP request, the
prompt's tokenisation and hand-over to the engine, and the first token's detokenisation and
streaming (:attr:`rooflinekit.Engine.frontend_latency`). The kernel tables the profiles are
fitted to cannot see it, and no single isolated run separates it from the prefill. The sweeps
of ``tests/data/load_sweeps/sweeps.csv`` can: every point is simulated as its source loaded the
server (``scripts/score_load_sweeps.py``: Poisson arrivals at the offered rate, a burst, or a
closed loop replayed at the measured throughput; the engine's scheduler defaults; each GPU's
shipped vLLM profile, with the host's time per step of a vLLM version that schedules
synchronously (``score_load_sweeps.profile_version``), and ``frontend_latency = 0``).

The simulator in the loop, in closed form: the front end adds the same seconds to every TTFT and
never to a step, so the simulated TTFT at a front-end latency ``L`` is the simulated TTFT at 0
plus ``L``, exactly (the queue, the batch and every step are unchanged). One simulation per
point therefore gives the whole curve, and the least squares on relative residuals that
:func:`rooflinekit.calibrate.calibrate` uses,

    minimise  Σ_i w_i ((p_i + L − m_i) / m_i)²,   L ≥ 0,

has the solution ``L = max(0, Σ w_i (m_i − p_i) / m_i² / Σ w_i / m_i²)``, where ``p_i`` is the
point's simulated mean TTFT at ``L = 0`` (median where the source publishes only a median) and
``m_i`` the measured one, over the points below 80 % of their sweep's saturation
(:func:`score_load_sweeps.below_saturation`); ``w_i = 1 / (points of its source)`` so that every
source weighs the same. One value for every GPU: the front end runs on the host.

Held out by source: the fit is repeated without each vLLM source and scored on that source
(mean absolute percentage error of the mean TTFT at its points below saturation). Sources of
another engine (NVIDIA NIM, SGLang), sweeps on a GPU without a vLLM profile of its own (the
RTX 4090's, timed by the L40S profile) and sweeps of the chat endpoint (``endpoint`` chat:
its front end renders the chat template too) never enter the fit and are always held out
(:func:`fitted`). The shipped value is
the fit to every vLLM source; its interval is the 5th-95th percentile of the fit over sources
resampled with replacement (:data:`N_RESAMPLES`, seed 0).

``--write`` puts the value, its interval and a note into every profile of
``rooflinekit/data/engine_profiles/vllm.toml`` (run it after ``scripts/engine_profiles.py``,
which rewrites that file).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import score_load_sweeps as sweeps_score  # noqa: E402  (the scorer beside this script)

import rooflinekit  # noqa: E402
from rooflinekit.profiles import Calibration  # noqa: E402

VLLM_TOML = Path(__file__).resolve().parents[1] / "rooflinekit" / "data" / "engine_profiles" / \
    "vllm.toml"
#: Bootstrap resamples (sources drawn with replacement) for the interval.
N_RESAMPLES = 1000
#: Share of the resampled fits below the interval's ends.
INTERVAL = (0.05, 0.95)


#: GPUs with a vLLM profile of their own; a sweep on another GPU is timed by its nearest's.
PROFILED = {key.gpu for key in rooflinekit.ENGINE_PROFILES if key.engine == "vllm"}


def fitted(point) -> bool:
    """Whether a point enters the fit: a vLLM sweep on a GPU with its own vLLM profile, whose
    client called the completions endpoint (the benchmark clients' default). A sweep timed by
    the nearest GPU's profile (the RTX 4090's: the L40S's) would charge that profile's error
    to the front end; a chat-endpoint sweep's front end also renders the chat template, work
    the completions front end does not do (GPUStack's Qwen3-8B page: vLLM's TTFT 64 ms on the
    chat endpoint where SGLang's is 28 ms on the same prompts and GPU). Both are scored held
    out, as another engine's sweeps are, and so is a source taken after the fit
    (:data:`score_load_sweeps.VALIDATION_ONLY`)."""
    return (point["engine"] == "vllm" and point["own_profile"] and point["endpoint"] != "chat"
            and point["source"] not in sweeps_score.VALIDATION_ONLY)


def _without_frontend(point) -> Calibration:
    """The shipped vLLM profile of the point's GPU, at its vLLM version's host scheduling
    (:func:`score_load_sweeps.profile_version`), with ``frontend_latency`` at 0 (what is being
    fitted)."""
    base = rooflinekit.engine_profile("vllm", point["gpu"],
                                      version=sweeps_score.profile_version(point), warn=False)
    prefill = {k: v for k, v in base.prefill.items() if k != "frontend_latency"}
    return dataclasses.replace(base, prefill=prefill, intervals={})


def ttft_points(path=sweeps_score.DEFAULT_SWEEPS, *, replicates=3, requests=300,
                seed=0) -> list[dict]:
    """Every point below saturation with a measured TTFT, simulated at ``frontend_latency = 0``.

    Each dict: ``sweep``, ``source`` (:func:`score_load_sweeps.source_group`), ``engine`` (the
    sweep's serving engine), ``measured`` and ``predicted`` [s] (means, or medians where the
    source gives only a median).
    """
    out = []
    for name, points in sweeps_score.read_sweeps(path).items():
        kind = sweeps_score.mode(points)
        engine = _without_frontend(points[0])
        for point in sweeps_score.below_saturation(points):
            found = sweeps_score.published(point, "ttft")
            if found is None:
                continue
            key, measured = found
            pred = sweeps_score.predict_point(point, engine, kind, replicates=replicates,
                                              requests=requests, seed=seed)
            out.append({"sweep": name, "source": sweeps_score.source_group(point["source"]),
                        "engine": point["engine"], "own_profile": point["gpu"] in PROFILED,
                        "endpoint": point["endpoint"],
                        "measured": measured / 1e3,
                        "predicted": pred[key] / 1e3})
    return out


def fit(points) -> float:
    """The least-squares front-end latency [s] of ``points`` (sources weighed alike), ≥ 0."""
    if not points:
        raise ValueError("no points to fit")
    per_source = {}
    for p in points:
        per_source[p["source"]] = per_source.get(p["source"], 0) + 1
    w = np.array([1.0 / per_source[p["source"]] for p in points])
    m = np.array([p["measured"] for p in points])
    pred = np.array([p["predicted"] for p in points])
    return max(0.0, float(np.sum(w * (m - pred) / m**2) / np.sum(w / m**2)))


def mape(points, latency: float) -> float:
    """Mean absolute percentage error [%] of the TTFT of ``points`` at ``latency`` [s]."""
    return float(np.mean([abs(p["predicted"] + latency - p["measured"]) / p["measured"]
                          for p in points]) * 100)


def held_out(points) -> list[dict]:
    """Per source: the fit without it and its TTFT error, before (0) and after."""
    trained = [p for p in points if fitted(p)]
    rows = []
    for source in dict.fromkeys(p["source"] for p in points):
        mine = [p for p in points if p["source"] == source]
        value = fit([p for p in trained if p["source"] != source])
        rows.append({"source": source, "engine": mine[0]["engine"], "points": len(mine),
                     "frontend_latency": value, "before": mape(mine, 0.0),
                     "held_out": mape(mine, value)})
    return rows


def interval(points, seed=0) -> tuple[float, float]:
    """5th-95th percentile of the fit over the vLLM sources resampled with replacement."""
    return sweeps_score.bootstrap_over_sources(
        [p for p in points if fitted(p)], fit, n_resamples=N_RESAMPLES, quantiles=INTERVAL,
        seed=seed)


def note(value, lo, hi, rows) -> str:
    """The sentence a profile's notes carry about this fit."""
    held = "; ".join(f"{r['source']} {r['before']:.0f} % -> {r['held_out']:.0f} %" for r in rows)
    return (f"frontend_latency = {value * 1e3:.1f} ms (the same for every GPU; 90 % bootstrap "
            f"interval over sources {lo * 1e3:.1f}-{hi * 1e3:.1f} ms) was fitted by "
            f"scripts/fit_frontend_latency.py, with the simulator replaying each point of the "
            f"vLLM sweeps of tests/data/load_sweeps/sweeps.csv, to their mean TTFT below 80 % of "
            f"saturation. Held out by source, mean TTFT error without -> with it: {held}.")


#: The header paragraph ``--write`` puts before the file's ``engine = ...`` line.
STAGE = ["# Stage 3, under load (scripts/fit_frontend_latency.py, run after this script): one "
         "frontend_latency [s]",
         "# for every GPU, the front end's time outside the steps (HTTP, tokenisation, first-token "
         "streaming), fitted",
         "# with the simulator replaying the vLLM load sweeps of tests/data/load_sweeps/sweeps.csv "
         "to their mean TTFT;",
         "# held out by source in each profile's notes."]


def write(value, lo, hi, rows, path=VLLM_TOML) -> None:
    """Put ``frontend_latency`` (and its interval and note) in every profile of ``path``."""
    sentence = note(value, lo, hi, rows)
    earlier = re.compile(r"frontend_latency = (\[[^]]*\]|[^,}]+), ")
    lines, in_interval = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line in STAGE:
            continue                       # the header's own paragraph, written afresh below
        if line.startswith('engine = "'):
            lines += STAGE
        if line.startswith("["):
            in_interval = line.strip() == "[profile.interval]"
        if line.startswith("prefill = { "):
            knob = f"[{lo!r}, {hi!r}]" if in_interval else repr(value)
            line = "prefill = { frontend_latency = " + knob + ", " + \
                earlier.sub("", line[len("prefill = { "):])
        elif line.startswith('notes = "') and not in_interval:
            line = re.sub(r" frontend_latency = [0-9.]+ ms \(the same for every GPU[^\"]*", "",
                          line)
            line = line[:-1] + " " + sentence + '"'
        lines.append(line)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true",
                        help="write the fit into rooflinekit/data/engine_profiles/vllm.toml")
    args = parser.parse_args(argv)
    points = ttft_points()
    value = fit([p for p in points if fitted(p)])
    lo, hi = interval(points)
    rows = held_out(points)
    print(f"frontend_latency = {value * 1e3:.2f} ms (90 % over sources: "
          f"{lo * 1e3:.2f}-{hi * 1e3:.2f} ms), from {len(points)} points\n")
    print("| source | engine | points | fitted without it [ms] | TTFT MAPE at 0 | held out |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['source']} | {r['engine']} | {r['points']} | "
              f"{r['frontend_latency'] * 1e3:.1f} | {r['before']:.1f} % | "
              f"{r['held_out']:.1f} % |")
    if not all(math.isfinite(r["held_out"]) for r in rows):
        raise SystemExit("a held-out score is not finite")
    if args.write:
        write(value, lo, hi, rows)
        print(f"\nwrote {VLLM_TOML}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
