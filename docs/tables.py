"""The tables of docs/validation.md and docs/calibration.md, computed from the data and the package.

Run from the repository root::

    python docs/tables.py            # rewrite the tables in both pages
    python docs/tables.py --check    # exit 1, naming the page, if a page holds other numbers

Every table sits in its page between ``<!-- tables:NAME -->`` and ``<!-- /tables -->``; the
script replaces what lies between and leaves the prose alone. ``tests/test_docs_tables.py``
regenerates the tables in memory and checks that the pages hold exactly this output, so a page
that a physics or data change has made stale fails the test suite.

Inputs: ``tests/data/measurements/validation.csv`` (the published figures of the validation
page), ``public.csv`` and ``public_more.csv`` (the rows every "fit on all" figure is fitted to),
``public_holdout.csv`` (rows no fit sees) and ``public_excluded.csv`` (a run no fit uses, shown
with what the fits predict for it and what fitting it would do), all with their sources.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import functools
import math
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))     # run from a checkout without installing

from rooflinekit import catalog, profiles
from rooflinekit import roofline as rl
from rooflinekit.calibrate import (
    calibrate,
    concat_measurements,
    cross_validate,
    measurements_from_records,
    measurements_to_records,
    predict,
    read_measurements,
)

DATA = ROOT / "tests" / "data" / "measurements"
PAGES = {"validation": ROOT / "docs" / "validation.md",
         "calibration": ROOT / "docs" / "calibration.md"}
#: Files every "fit on all" figure is fitted to, and the file no fit sees.
FITTED = ("public.csv", "public_more.csv")
HELD_OUT = "public_holdout.csv"
#: Published rows no fit uses: a run whose times no configuration-dependent cost explains.
EXCLUDED = "public_excluded.csv"
#: The serving stack of each ``public.csv`` row, by its source. That file has no ``engine``
#: column (its other readers hold it as it stands); knob sets by engine need the NIM rows
#: apart from vLLM's.
PUBLIC_ENGINES = (("NVIDIA NIM", "nim 1.8.0"), ("LambdaLabsML/vllm-benchmark", "vllm"),
                  ("Musgrave", "vllm 0.23.0"))
#: Bootstrap resamples of the knob intervals (seed 0): enough for a 95 % percentile interval
#: of three knobs, and few enough that the test regenerates the pages in seconds.
RESAMPLES = 40
WORKLOADS = ("isolated", "serving")
#: Cross-validation splits: (label, ``by`` of cross_validate, held-out TPOT target [%]).
SPLITS = (("5-fold over rows", None, 10.0), ("leave one TP degree out", "tp", 10.0),
          ("leave one GPU out", "gpu", 10.0), ("leave one model out", "model", 15.0))
#: Held-out TTFT target of every split [%].
TTFT_TARGET = 15.0
#: Knob sets of the grouped structure: one per GPU, engine and weight format.
GROUP_BY = ("gpu", "engine", "dtype")
#: The calibration structures the pages compare: (label, keywords of calibrate, workloads).
STRUCTURES = (("three knobs", {}, WORKLOADS),
              ("engine knobs", {"fit": "engine"}, ("isolated", "loaded")),
              ("engine knobs + sets", {"fit": "engine", "group_by": GROUP_BY}, ("loaded",)))
MARKER = re.compile(r"(<!-- tables:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /tables -->)",
                    re.DOTALL)


# -- formatting -----------------------------------------------------------------------------------

def _num(value: float, digits: int = 2) -> str:
    """A number with thousands separators; a minus sign, not a hyphen."""
    return f"{value:,.{digits}f}".replace("-", "−")


def _pct(value: float, signed: bool = False) -> str:
    if not math.isfinite(value):
        return "—"
    return (f"{value:+.0f} %" if signed else f"{value:.1f} %").replace("-", "−")


def _ms(seconds: float, digits: int = 2) -> str:
    return "—" if not math.isfinite(seconds) else _num(seconds * 1e3, digits)


def _table(header: list, rows: list, align: str) -> str:
    """A Markdown table; ``align`` holds one "l" or "r" per column."""
    rule = ["---" if a == "l" else "---:" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# -- validation: the ideal model against published figures ---------------------------------------

def _spec(row: dict):
    model = catalog.model(row["model"])
    dtype = row["dtype"] or None
    if dtype:
        model = model.replace(bytes_per_param=dtype, kv_bytes_per_element=dtype)
    return model, catalog.gpu(row["gpu"]), int(row["tp"]), dtype


def _static_prefill(model, gpu, batch, prompt, tp, engine):
    """One prefill step of ``batch`` prompts of ``prompt`` tokens that arrived together [s].

    The step kernel with each prompt's own attention pairs (``batch`` separate prompts, not one
    long one); logits are charged once, as for one prompt (< 0.1 % of the step here).
    """
    cost = rl.step_cost_coefficients(model, gpu, tp, engine=engine, phase="prefill")
    pairs = rl.prefill_context_tokens_kernel(float(prompt), 0.0, cost.full_attention_fraction,
                                             cost.sliding_window)
    return rl.mixed_step_time_kernel(*cost, 0.0, float(batch * prompt), 0.0, batch * pairs,
                                     float(prompt))


def _static_run(model, gpu, batch, prompt, output, tp, engine):
    """A lock-step static batch: one prefill step, then ``output − 1`` decode steps [s]."""
    return (_static_prefill(model, gpu, batch, prompt, tp, engine)
            + float(rl.generation_time(model, gpu, output - 1, prompt, batch, tp,
                                       engine=engine)))


def _validation_prediction(row: dict, engine=rl.IDEAL) -> float:
    """The roofline's figure for one published row under ``engine`` (an Engine or a
    Calibration; the ideal one by default, in the row's format), in the row's unit (ms or
    tokens/s)."""
    model, gpu, tp, dtype = _spec(row)
    if isinstance(engine, rl.Engine):
        engine = engine.replace(compute_dtype=dtype)
    else:
        engine = dataclasses.replace(engine, base=engine.base.replace(compute_dtype=dtype))
    b, p, o = (int(row[k]) for k in ("batch_size", "prompt_tokens", "output_tokens"))
    if row["kind"] == "itl":          # at the generation's mean context
        return 1e3 * float(rl.decode_step_time(model, gpu, b, p + o / 2, tp, engine=engine))
    if row["kind"] == "e2e":          # vLLM benchmark_latency: all sequences in lock-step
        return 1e3 * _static_run(model, gpu, b, p, o, tp, engine)
    if row["kind"] == "throughput":   # TensorRT-LLM gptSessionBenchmark: batch × output / time
        return b * o / _static_run(model, gpu, b, p, o, tp, engine)
    return 1e3 * float(rl.prefill_time(model, gpu, p, tp, engine=engine))


def _solve_efficiency(row: dict, knob: str) -> float:
    """The one efficiency that makes the prediction equal the measurement (NaN if none ≤ 1)."""
    from scipy.optimize import brentq

    measured = float(row["measured"])
    faster = row["kind"] == "throughput"          # higher is faster for throughput only

    def gap(e):
        value = _validation_prediction(row, rl.Engine(**{knob: e}))
        return (measured - value) if faster else (value - measured)

    if gap(1.0) > 0:       # slower than measured even at full efficiency
        return math.nan
    return brentq(gap, 1e-3, 1.0, xtol=1e-6)


def _overhead(row: dict, predicted: float) -> float:
    """The fixed time per decode step that alone closes the gap [s]."""
    b, o = int(row["batch_size"]), int(row["output_tokens"])
    measured = float(row["measured"])
    if row["kind"] == "itl":
        return (measured - predicted) * 1e-3
    if row["kind"] == "e2e":
        return (measured - predicted) * 1e-3 / (o - 1)
    return (b * o / measured - b * o / predicted) / (o - 1)


def _validation_rows() -> list:
    with (DATA / "validation.csv").open(encoding="utf-8") as fh:
        return list(csv.DictReader(line for line in fh if not line.startswith("#")))


def validation_tables() -> dict:
    """The decode and prefill tables of docs/validation.md, as Markdown."""
    decode, prefill = [], []
    for row in _validation_rows():
        pred = _validation_prediction(row)
        plain = _validation_prediction(row, rl.Engine(allreduce=False))
        default = _validation_prediction(
            row, profiles.engine_profile("vllm", row["gpu"], warn=False))
        measured = float(row["measured"])
        err = 100.0 * (pred / measured - 1.0)
        unit_ms = row["kind"] != "throughput"
        show = (lambda v: f"{_num(v, 2 if v < 100 else 1)} ms") if unit_ms else \
            (lambda v: _num(v, 0))
        profiled = [show(default), _pct(100.0 * (default / measured - 1.0), True)]
        if row["kind"] == "ttft":
            prefill.append([row["id"], row["label"], show(measured), show(pred), _pct(err, True),
                            *profiled, show(plain), f"{pred / measured:.2f}"])
            continue
        be = _solve_efficiency(row, "bandwidth_efficiency")
        over = _overhead(row, pred)
        decode.append([row["id"], row["label"], show(measured), show(pred), _pct(err, True),
                       *profiled, show(plain), "—" if math.isnan(be) else f"{be:.2f}",
                       f"{_ms(over, 1)} ms"])
    return {
        "validation-decode": _table(
            ["#", "Source and configuration", "Measured", "Predicted (ideal)", "Error",
             "vLLM profile", "Error", "No communication", "bw eff.", "overhead / step"],
            decode, "llrrrrrrrr"),
        "validation-prefill": _table(
            ["#", "Source and configuration", "Measured", "Predicted (ideal)", "Error",
             "vLLM profile", "Error", "No communication", "compute eff."], prefill,
            "llrrrrrrr"),
        "profiles": _profiles_table(),
        "load-sweeps": _load_sweeps_table(),
        "load-sweeps-own-engine": _own_engine_table(),
        "load-sweeps-by-source": _by_source_table(),
        "load-sweep-points": _load_sweep_points_table(load_sweep_points()),
        "saturation-bursts": _bursts_table(),
        "trtllm-throughput": _throughput_table(),
        "engine-memory": _engine_memory_table(),
    }


def _engine_memory_table() -> str:
    """Each vLLM 0.19.0 start-up log of a catalogue model: the KV cache it logged, this rule's
    (``engine_memory`` with the log's weights and total) and the weights' remainder alone
    (what the planner took before: ``gpu_memory_utilization`` × the catalogue's memory less the
    weights), and the activation peak and non-torch memory, logged and by the rule."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "rooflinekit_fit_engine_memory", ROOT / "scripts" / "fit_engine_memory.py")
    fit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fit)
    rows = fit.fit_rows(fit.read_rows())
    knobs = fit.fit(rows)
    held = fit.errors(rows)["held_out"]
    out = []
    for r in rows:
        p = fit.predict(r, knobs)
        nominal = r["utilization"] * catalog.gpu("H100-SXM-80GB").memory_per_gpu / 2**30
        out.append([r["id"], r["model"].name, r["tp"], f"{r['utilization']:.2f}",
                    f"{r['activation'] + r['non_torch']:.2f}",
                    f"{p['activation'] + p['non_torch']:.2f}", f"{r['kv']:.2f}",
                    f"{p['kv']:.2f} ({_num(held[r['id']], 2)})",
                    f"{nominal - r['weights']:.2f} ({_num(nominal - r['weights'] - r['kv'], 2)})"])
    return _table(["start-up log", "catalogue model", "TP", "util.",
                   "activation + non-torch logged [GiB]", "by the rule [GiB]",
                   "KV logged [GiB]", "by the rule (error, model held out)",
                   "weights' remainder (error)"], out, "llrrrrrrr")


def _profiles_table() -> str:
    """Every shipped engine profile with its errors (the file's own numbers)."""
    rows = []
    for engine in profiles.ENGINE_NAMES:
        _, entries = profiles.read_profile_file(
            ROOT / "rooflinekit" / "data" / "engine_profiles" / f"{engine}.toml")
        for e in entries:
            decode = e["calibration"].decode
            rows.append([engine, e["version"], e["gpu"],
                         _ms(decode["step_overhead"], 2) + " ms",
                         f"{decode['bandwidth_efficiency']:.2f}", _pct(e["fit_error"]),
                         _pct(e["held_out_error"]), _pct(e["held_out_error_datasheet"]),
                         _pct(e["held_out_error_ttft"]), _pct(e["model_size_error"])])
    return _table(["engine", "version", "GPU", "step overhead", "bw eff.", "fit TPOT",
                   "leave-one-GPU-out TPOT", "same, datasheet figures",
                   "leave-one-GPU-out TTFT", "across model sizes"], rows, "lllrrrrrrr")


@functools.cache
def _scorer():
    """scripts/score_load_sweeps.py as a module (loaded once)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "rooflinekit_score_load_sweeps", ROOT / "scripts" / "score_load_sweeps.py")
    scorer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scorer)
    return scorer


#: Where the load-sweep figures go, one PNG per sweep.
FIGURES = ROOT / "docs" / "img" / "load_sweeps"


def load_sweep_points() -> dict:
    """Every point of every published sweep: measured, ideal and vLLM-profile means.

    ``{sweep: [{"load", "load_label", "tpot_name", "tpot": (measured, ideal, profile),
    "ttft": (measured, ideal, profile)}, ...]}``, times in ms (NaN where not published).
    """
    scorer = _scorer()
    out = {}
    for name, points in scorer.read_sweeps().items():
        kind = scorer.mode(points)
        rows = []
        for point in points:
            ideal, default = (scorer.predict_point(point, engine, kind)
                              for engine in (rl.IDEAL, None))
            use_tpot = point["mean_tpot_ms"] is not None or point["mean_itl_ms"] is None
            key = "mean_tpot" if use_tpot else "mean_token_itl"
            measured_tpot = point["mean_tpot_ms"] if use_tpot else point["mean_itl_ms"]
            measured_ttft = point["mean_ttft_ms"] if point["mean_ttft_ms"] is not None \
                else point["median_ttft_ms"]
            load = point["rate"] if kind == "rate" else point["concurrency"]
            rows.append({
                "load": float(load),
                "load_label": f"{load:g} req/s" if kind == "rate" else f"{load:g} in flight",
                "tpot_name": "TPOT" if use_tpot else "ITL",
                "tpot": (math.nan if measured_tpot is None else measured_tpot, ideal[key],
                         default[key]),
                "ttft": (math.nan if measured_ttft is None else measured_ttft,
                         ideal["mean_ttft"] if point["mean_ttft_ms"] is not None
                         else ideal["p50_ttft"],
                         default["mean_ttft"] if point["mean_ttft_ms"] is not None
                         else default["p50_ttft"])})
        out[name] = rows
    return out


def _load_sweep_points_table(points: dict) -> str:
    def ms(value):
        return "–" if not math.isfinite(value) else f"{_num(value, 1 if value < 1000 else 0)}"

    rows = []
    for name, series in points.items():
        for r in series:
            rows.append([name, r["load_label"], r["tpot_name"], *map(ms, r["tpot"]),
                         *map(ms, r["ttft"])])
    return _table(["sweep", "load", "", "measured [ms]", "ideal", "vLLM profile",
                   "TTFT measured [ms]", "ideal", "vLLM profile"], rows, "lllrrrrrr")


def write_load_sweep_figures(points: dict, folder: Path = FIGURES) -> list:
    """One figure per sweep: TPOT (or ITL) and TTFT against the load, measured, ideal and
    vLLM profile, drawn from :func:`load_sweep_points`; returns the files written."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, series in points.items():
        x = [r["load"] for r in series]
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
        for ax, key, title in ((axes[0], "tpot", series[0]["tpot_name"]),
                               (axes[1], "ttft", "TTFT")):
            for i, (label, style) in enumerate((("measured", "ko"), ("ideal roofline", "--"),
                                                ("vLLM profile", "-"))):
                ax.plot(x, [r[key][i] for r in series], style, label=label)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("offered load [" + ("req/s" if "req/s" in series[0]["load_label"]
                                              else "requests in flight") + "]")
            ax.set_ylabel(f"mean {title} [ms]")
            ax.grid(True, which="both", alpha=0.3)
        axes[0].legend(fontsize=8)
        fig.suptitle(name, fontsize=9)
        fig.tight_layout()
        path = folder / f"{name}.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    return written


def _engine(label: str):
    """The engine a table's ``label`` names: ``"ideal"`` (the roofline), ``"default"`` (the
    newest vLLM profile) or ``"own"`` (each sweep's engine at its version)."""
    return {"ideal": rl.IDEAL, "default": None, "own": _scorer().own_engine_name}[label]


@functools.cache
def _scores(label: str) -> tuple:
    """Every published sweep scored by ``label``'s engine (:func:`_engine`), once for every
    table."""
    return tuple(_scorer().score(engine=_engine(label)))


def _load_sweeps_table() -> str:
    """Each published load sweep scored with the ideal roofline and the default profile."""
    scorer = _scorer()
    results = {name: _scores(name) for name in ("ideal", "default")}
    rows = []
    for ideal, default in zip(results["ideal"], results["default"]):
        cells = [ideal["sweep"], ideal["source"], ideal["mode"], str(ideal["points"])]
        for r in (ideal, default):
            cells += [scorer._pct(r["tpot_mape"]), scorer._pct(r["ttft_mape"]),
                      scorer._pct(r["sat_err"], signed=True)]
        rows.append(cells)
    return _table(["sweep", "source", "load", "points", "ideal TPOT", "ideal TTFT",
                   "ideal saturation", "vLLM profile TPOT", "vLLM profile TTFT",
                   "vLLM profile saturation"], rows, "llllrrrrrr")


def _own_engine_table() -> str:
    """The sweeps that another profile than the default times as they ran: another engine's,
    or vLLM's at a synchronous version (its host time per step)."""
    scorer = _scorer()
    firsts = {name: points[0] for name, points in scorer.read_sweeps().items()}
    others = [name for name, point in firsts.items() if scorer.own_engine_name(point) != "vllm"]
    rows = []
    for r in (r for r in _scores("own") if r["sweep"] in others):
        point = firsts[r["sweep"]]
        ran = " ".join(filter(None, (point["engine"], scorer.engine_version(point))))
        rows.append([r["sweep"], f"{ran} → {scorer.own_engine_name(point)}",
                     scorer._pct(r["tpot_mape"]), scorer._pct(r["ttft_mape"]),
                     scorer._pct(r["sat_err"], signed=True)])
    return _table(["sweep", "engine → profile", "TPOT", "TTFT", "saturation"], rows, "llrrr")


@functools.cache
def _burst_scores(label: str, path: Path) -> tuple:
    """Every saturation run of ``path`` scored by ``label``'s engine (as :func:`_scores`)."""
    return tuple(_scorer().score_bursts(path, engine=_engine(label)))


def _saturation_cells(scorer, runs) -> list:
    """Each of ``runs``' predicted output throughput with its signed error (or "does not
    fit")."""
    return [f"{_num(r['saturation_predicted'], 0)} ({scorer._pct(r['sat_err'], signed=True)})"
            if r["fits"] else "does not fit" for r in runs]


def _scored_runs(scorer, path) -> list:
    """Each saturation run of ``path`` with its scores by the ideal roofline, the default
    profile and its own engine: ``(point, ideal, default, own)``."""
    ideal, default, own = (_burst_scores(label, path) for label in ("ideal", "default", "own"))
    points = {p["sweep"]: p for p in scorer.read_bursts(path)}
    return [(points[i["sweep"]], i, d, o) for i, d, o in zip(ideal, default, own)]


def _bursts_table() -> str:
    """Each published saturation run (a single burst) with the output throughput the ideal
    roofline, the default profile and the run's own engine at its version predict, and the run's
    mean TPOT beside the default profile's."""
    scorer = _scorer()
    rows = []
    for point, ideal, default, own in _scored_runs(scorer, scorer.DEFAULT_BURSTS):
        rows.append([ideal["sweep"], f"{point['engine']} {point['engine_version']}",
                     _num(ideal["saturation_measured"], 0),
                     *_saturation_cells(scorer, (ideal, default, own)),
                     _num(default["tpot_measured"], 1),
                     _num(default["tpot_predicted"], 1) if default["fits"] else "–"])
    return _table(["run", "engine as run", "output tok/s measured", "ideal", "default (newest vLLM)",
                   "its engine at its version", "mean TPOT measured [ms]", "default [ms]"],
                  rows, "llrrrrrr")


def _throughput_table() -> str:
    """Each run of TensorRT-LLM's throughput table: its output throughput beside what the ideal
    roofline, the default profile and the TensorRT-LLM profile predict."""
    scorer = _scorer()
    rows = []
    for point, ideal, default, own in _scored_runs(scorer, scorer.DEFAULT_THROUGHPUT):
        weights = point["dtype"] or "native"
        rows.append([point["model"], f"{int(point['tp'])} × {point['gpu']}",
                     f"{weights} / {point['kv_dtype'] or '16-bit'}",
                     f"{int(point['prompt_tokens'])}/{int(point['output_tokens'])}",
                     _num(ideal["saturation_measured"], 0),
                     *_saturation_cells(scorer, (ideal, default, own))])
    return _table(["model", "GPUs", "weights / KV", "ISL/OSL", "output tok/s measured", "ideal",
                   "default (newest vLLM)", "TensorRT-LLM profile"], rows, "llllrrrr")


#: The issue's targets for a source held out: mean TPOT (or ITL) and mean TTFT error below
#: saturation, and the saturation throughput's error.
TARGETS = {"tpot_mape": 0.15, "ttft_mape": 0.25, "sat_abs_err": 0.15}


def _by_source_table() -> str:
    """Per source: the ideal roofline, the default profile and the profile of the engine and
    version the source ran, TPOT / TTFT / saturation, and the targets each meets."""
    scorer = _scorer()
    # a source's saturation runs count beside its sweeps: held out, they are the same source's
    runs = {label: {r["source"]: r for r in scorer.by_source(
                _scores(label) + sum((_burst_scores(label, path)
                                      for path in scorer.SATURATION_FILES), ()))}
            for label in ("ideal", "default", "own")}
    firsts = {}      # each source's first points, one per engine and version it ran
    for points in [*scorer.read_sweeps().values(),
                   *([p] for path in scorer.SATURATION_FILES for p in scorer.read_bursts(path))]:
        engines = firsts.setdefault(scorer.source_group(points[0]["source"]), {})
        engines.setdefault((points[0]["engine"], scorer.engine_version(points[0])), points[0])

    def cell(r):
        return " / ".join(scorer._pct(r[k]) for k in ("tpot_mape", "ttft_mape", "sat_abs_err"))

    def met(r):
        scored = [k for k in TARGETS if math.isfinite(r[k])]
        return f"{sum(r[k] <= TARGETS[k] for k in scored)} of {len(scored)}"

    rows = []
    for source, points in firsts.items():
        ran = ", ".join(" ".join(filter(None, key)) for key in points)
        profiles = ", ".join(dict.fromkeys(scorer.own_engine_name(p) for p in points.values()))
        rows.append([source, ran, cell(runs["ideal"][source]), cell(runs["default"][source]),
                     met(runs["default"][source]), profiles,
                     cell(runs["own"][source]), met(runs["own"][source]),
                     scorer._pct(runs["own"][source]["ttft_median_mape"]),
                     scorer._pct(runs["own"][source]["decode_mape"])])
    return _table(["source", "engine as run", "ideal", "default (newest vLLM)", "met",
                   "its engine's profile", "TPOT / TTFT / saturation", "met",
                   "median TTFT", "decode side (closed loops)"], rows, "llllrllrrr")


# -- calibration: fits to public serving runs -----------------------------------------------------

def _files(names) -> list:
    return [_with_engines(read_measurements(DATA / name)) if name == "public.csv" else
            read_measurements(DATA / name) for name in names]


def _with_engines(ds):
    """``ds`` with each row's ``engine`` from its source (:data:`PUBLIC_ENGINES`)."""
    records = measurements_to_records(ds)
    for row in records:
        row["engine"] = next(e for key, e in PUBLIC_ENGINES if key in row["source"])
    return measurements_from_records(records)


def _counts(ds) -> tuple:
    ttft = int(np.sum(np.isfinite(ds["ttft"].values)))
    tpot = np.where(np.isfinite(ds["tpot"].values), ds["tpot"].values, ds["itl"].values)
    return ttft, int(np.sum(np.isfinite(tpot)))


def _data_table(tables: dict) -> str:
    rows = []
    for name, ds in tables.items():
        ttft, tpot = _counts(ds)
        tps = ", ".join(str(t) for t in sorted({int(t) for t in ds["tp"].values}))
        use = {HELD_OUT: "held out", EXCLUDED: "not fitted"}.get(name, "fitted")
        rows.append([f"`{name}`", ds.sizes["measurement"], ttft, tpot,
                     len(set(ds["model"].values)), ", ".join(sorted(set(ds["gpu"].values))), tps,
                     use])
    return _table(["file", "rows", "with TTFT", "with TPOT", "models", "GPUs", "TP", "use"],
                  rows, "lrrrrllr")


def _interval(params, phase: str, knob: str) -> str:
    sel = params.sel(phase=phase, parameter=knob)
    if not bool(sel["identified"]):
        return "not identified (ideal)"
    scale, unit = (1e3, " ms") if knob == "step_overhead" else (1.0, "")
    digits = 1 if knob == "step_overhead" else 2
    return (f"{float(sel['value']) * scale:.{digits}f}{unit} "
            f"[{float(sel['lower']) * scale:.{digits}f}, {float(sel['upper']) * scale:.{digits}f}]")


def _describe(row) -> str:
    dtype = f" {row['dtype'].item()}" if row["dtype"].item() else ""
    gpu = row["gpu"].item().replace("-SXM", "").replace("-80GB", "").replace("-40GB", " 40GB")
    return (f"{row['model'].item()}{dtype} TP{int(row['tp'])} {gpu}, B={row['batch_size'].item():.3g}"
            f", {row['prompt_tokens'].item():.0f}/{row['output_tokens'].item():.0f}")


def _knob_cell(params, phase: str, knob: str) -> str:
    sel = params.sel(phase=phase, parameter=knob)
    if not bool(sel["free"]):
        return "—"
    if not bool(sel["identified"]):
        return "not identified (prior)"
    if knob in ("step_overhead", "prefill_overhead"):
        scale, unit, digits = 1e3, " ms", 1
    elif knob in ("layer_overhead", "interconnect_latency"):
        scale, unit, digits = 1e6, " µs", 1
    elif knob == "gemm_half_tokens":
        scale, unit, digits = 1.0, "", 0
    else:
        scale, unit, digits = 1.0, "", 2
    return (f"{float(sel['value']) * scale:.{digits}f}{unit} "
            f"[{float(sel['lower']) * scale:.{digits}f}, {float(sel['upper']) * scale:.{digits}f}]")


def _mape_of(predicted, measured) -> float:
    ok = np.isfinite(measured)
    return 100 * np.mean(np.abs(predicted[ok] / measured[ok] - 1))


def calibration_tables(n_resamples: int = RESAMPLES) -> dict:
    """Every table of docs/calibration.md (and the summary on docs/validation.md), as Markdown."""
    fitted_files = dict(zip(FITTED, _files(FITTED)))
    held = read_measurements(DATA / HELD_OUT)
    excluded = read_measurements(DATA / EXCLUDED)
    ds = concat_measurements(*fitted_files.values())
    fits = {(label, w): calibrate(ds, n_resamples=n_resamples, seed=0, workload=w, **kw)
            for label, kw, workloads in STRUCTURES for w in workloads}
    three = {w: fits[("three knobs", w)] for w in WORKLOADS}
    out = {"calibration-data": _data_table({**fitted_files, HELD_OUT: held,
                                            EXCLUDED: excluded})}

    rows = []
    for phase, label in (("prefill", "prefill (TTFT)"), ("decode", "decode (TPOT/ITL)")):
        err = {key: fit.errors.sel(phase=phase) for key, fit in fits.items()}
        first = err[("three knobs", "isolated")]
        rows.append([label, int(first["n"]), _pct(float(first["mape_ideal"]))]
                    + [_pct(float(e["mape_calibrated"])) for e in err.values()])
    out["calibration-in-sample"] = _table(
        ["phase", "rows", "MAPE ideal"] + [f"{label} ({w})" for label, w in fits],
        rows, "lrr" + "r" * len(fits))
    knobs = []
    for knob, label in (("compute_efficiency", "compute efficiency"),
                        ("bandwidth_efficiency", "bandwidth efficiency"),
                        ("step_overhead", "step overhead")):
        knobs.append([label, _interval(three["isolated"].parameters, "prefill", knob),
                      _interval(three["isolated"].parameters, "decode", knob),
                      _interval(three["serving"].parameters, "decode", knob)])
    out["calibration-knobs"] = _table(
        ["knob (95 % interval)", "prefill", "decode, isolated", "decode, serving"], knobs, "llll")
    engine = {w: fits[("engine knobs", w)].parameters for w in ("isolated", "loaded")}
    knobs = []
    for knob in engine["isolated"]["parameter"].values:
        knobs.append([f"`{knob}`", _knob_cell(engine["isolated"], "prefill", knob),
                      _knob_cell(engine["loaded"], "prefill", knob),
                      _knob_cell(engine["isolated"], "decode", knob),
                      _knob_cell(engine["loaded"], "decode", knob)])
    out["calibration-engine-knobs"] = _table(
        ["knob (95 % interval)", "prefill, isolated", "prefill, loaded", "decode, isolated",
         "decode, loaded"], knobs, "lllll")
    sets = fits[("engine knobs + sets", "loaded")].knob_sets
    rows = []
    for i, name in enumerate(sets["knob_set"].values):
        cells = [f"`{name.replace(' /  /', ' / — /').rstrip(' /') or '—'}`"]
        for j, phase in enumerate(("prefill", "decode")):
            n, own = int(sets["n"].values[i, j]), bool(sets["own"].values[i, j])
            cells.append(f"{n} rows, " + ("its own knobs" if own else "shared knobs"))
        rows.append(cells)
    out["calibration-knob-sets"] = _table(
        ["knob set (GPU / engine / format)", "prefill (TTFT)", "decode (TPOT)"], rows, "lll")

    held_rows, summary = [], []
    for label, by, target in SPLITS:
        cv = {(name, w): cross_validate(ds, by=by, k=5, seed=0, workload=w, **kw)
              for name, kw, workloads in STRUCTURES for w in workloads}
        for phase, goal in (("decode", target), ("prefill", TTFT_TARGET)):
            e = {key: float(c.errors.sel(phase=phase)["mape_calibrated"])
                 for key, c in cv.items()}
            classic = min(e[("three knobs", w)] for w in WORKLOADS)
            rest = {key: v for key, v in e.items() if key[0] != "three knobs"}
            best_key = min(rest, key=rest.get)
            best = rest[best_key]
            verdict = "met" if best <= goal else f"missed by {best - goal:.1f} points"
            first = cv[("three knobs", "isolated")]
            held_rows.append([label, "TPOT" if phase == "decode" else "TTFT",
                              first.folds.sizes["fold"],
                              _pct(float(first.errors.sel(phase=phase)["mape_ideal"])),
                              _pct(classic)] + [_pct(v) for v in rest.values()]
                             + [f"≤ {goal:.0f} %", verdict])
            summary.append([label, "TPOT" if phase == "decode" else "TTFT", _pct(classic),
                            _pct(best), f"{best_key[0]} ({best_key[1]})", f"≤ {goal:.0f} %",
                            verdict])
    columns = [f"{name} ({w})" for name, _, workloads in STRUCTURES[1:] for w in workloads]
    out["calibration-held-out"] = _table(
        ["split", "target", "folds", "MAPE ideal", "three knobs (best of the two)"] + columns
        + ["goal", "best engine structure"], held_rows, "llrrr" + "r" * len(columns) + "rl")
    out["validation-calibration"] = _table(
        ["split", "target", "three knobs", "engine knobs (best)", "structure", "goal",
         "verdict"], summary, "llrrlrl")

    rows = []
    for (name, w), fit in fits.items():
        pred_ideal = predict(held, workload=w)
        pred_cal = predict(held, fit.calibration, workload=w)
        for phase, label in (("prefill", "TTFT"), ("decode", "TPOT")):
            measured = held["ttft"].values if phase == "prefill" else held["tpot"].values
            rows.append([name, w, label, int(np.isfinite(measured).sum()),
                         _pct(_mape_of(pred_ideal[phase].values, measured)),
                         _pct(_mape_of(pred_cal[phase].values, measured))])
    out["calibration-held-out-file"] = _table(
        ["structure", "workload", "target", "rows", "MAPE ideal",
         "MAPE calibrated on all fitted rows"], rows, "lllrrr")
    out["calibration-excluded"] = _excluded_table(ds, excluded, fits)

    res = three["isolated"].residuals
    eng = fits[("engine knobs", "loaded")].residuals
    rows = []
    for i in range(ds.sizes["measurement"]):
        row = ds.isel(measurement=i)

        def cell(phase, i=i):
            m = float(res[f"{phase}_measured"].values[i])
            if not math.isfinite(m):
                return "—"
            digits = 1 if phase == "prefill" else 2
            return " / ".join([_ms(float(res[f"{phase}_{k}"].values[i]), digits)
                               for k in ("measured", "ideal", "calibrated")]
                              + [_ms(float(eng[f"{phase}_calibrated"].values[i]), digits)])
        rows.append([i, _describe(row), cell("prefill"), cell("decode")])
    out["calibration-residuals"] = _table(
        ["row", "configuration (fitted rows, in file order)",
         "TTFT meas / ideal / three knobs / engine [ms]",
         "decode meas / ideal / three knobs / engine [ms]"], rows, "rlll")
    return out


def _excluded_table(ds, excluded, fits) -> str:
    """What the engine structures predict for the excluded run, and the held-out errors of
    every split when it is fitted too."""
    label, kw, workloads = STRUCTURES[-1]
    w = workloads[-1]
    pred = predict(excluded, fits[(label, w)].calibration, workload=w)
    rows = []
    for i in range(excluded.sizes["measurement"]):
        row = excluded.isel(measurement=i)
        for phase, column, name in (("prefill", "ttft", "TTFT"), ("decode", "tpot", "TPOT")):
            measured = float(row[column])
            if math.isfinite(measured):
                p = float(pred[phase].values[i])
                rows.append([_describe(row), name, _ms(measured, 2), _ms(p, 2),
                             _pct(100 * (p / measured - 1), signed=True)])
    table = _table(["configuration", "target", "measured [ms]",
                    f"{label} ({w}) [ms]", "error"], rows, "llrrr")
    both = concat_measurements(ds, excluded)
    rows = []
    for split, by, target in SPLITS:
        cv = cross_validate(both, by=by, k=5, seed=0, workload=w, **kw)
        for phase, goal in (("decode", target), ("prefill", TTFT_TARGET)):
            e = float(cv.errors.sel(phase=phase)["mape_calibrated"])
            rows.append([split, "TPOT" if phase == "decode" else "TTFT", _pct(e),
                         f"≤ {goal:.0f} %",
                         "met" if e <= goal else f"missed by {e - goal:.1f} points"])
    return table + "\n" + _table(
        ["split (excluded rows fitted too)", "target", f"{label} ({w})", "goal", "verdict"],
        rows, "llrrl")


# -- the pages -------------------------------------------------------------------------------------

def all_tables(n_resamples: int = RESAMPLES) -> dict:
    """Every generated table by marker name."""
    return {**validation_tables(), **calibration_tables(n_resamples)}


def render(text: str, tables: dict) -> str:
    """``text`` with each marked table replaced by ``tables[name]``.

    Raises
    ------
    ValueError
        A marker names no generated table.
    """
    def swap(match):
        name = match.group("name")
        if name not in tables:
            raise ValueError(f"marker tables:{name} names no generated table; known: "
                             f"{', '.join(sorted(tables))}")
        return match.group(1) + tables[name] + match.group(4)
    return MARKER.sub(swap, text)


def rendered_pages(n_resamples: int = RESAMPLES) -> dict:
    """Each page's path and its text with freshly computed tables."""
    tables = all_tables(n_resamples)
    return {path: render(path.read_text(encoding="utf-8"), tables) for path in PAGES.values()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a page holds other tables")
    args = parser.parse_args(argv)
    stale = []
    for path, text in rendered_pages().items():
        if path.read_text(encoding="utf-8") != text:
            stale.append(path)
            if not args.check:
                path.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"{'stale' if args.check else 'rewrote'}: {path.relative_to(ROOT)}")
    if not args.check:
        for path in write_load_sweep_figures(load_sweep_points()):
            print(f"drew: {path.relative_to(ROOT)}")
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
