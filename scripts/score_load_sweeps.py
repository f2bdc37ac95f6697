#!/usr/bin/env python
"""Score rooflinekit's continuous-batching simulator against published load sweeps.

Reads ``tests/data/load_sweeps/sweeps.csv`` (one row per point of a published sweep; see that
folder's README) and, for every sweep, runs :func:`rooflinekit.planning.load_curve` at the sweep's
points with

(a) ``engine=rooflinekit.IDEAL``, (b) the default ``engine=None`` (the vLLM profile of each
GPU), (c) each sweep's own engine's shipped profile (:func:`own_engine_name`: TensorRT-LLM's
for NIM) and, with ``--calibration FILE``, (d) a calibration read by
:func:`rooflinekit.calibrate.load_calibration`.

It prints Markdown tables, per sweep and per source, of

* ``tpot_mape``: mean absolute percentage error of the mean TPOT (or, where a source gives only
  an ITL, the mean every-gap ITL) at the points below 80 % of the measured saturation;
* ``ttft_mape``: the same for the mean TTFT (the median where no mean is published);
* ``ttft_median_mape``: the same for the median TTFT, at the points that publish one (a run
  without warm-up requests holds its server's start in the mean, not in the median);
* ``sat_err``: signed error of the predicted output throughput at the sweep's highest-throughput
  point against its measured output throughput (the measured saturation);
* ``decode_mape`` (closed loops only): the same for each request's time from first token to
  last, which Little's law gives from the concurrency, the request throughput and the mean
  TTFT (:func:`decode_side`): where it agrees and the TTFT does not, the missing time is
  before the first token.

"Below 80 % of saturation" means a measured output throughput at most 0.8 × the sweep's largest,
at an offered load (the rate of an open loop, the clients of a closed loop, the prompts of a
burst) below that of the sweep's largest: a point offered more than the saturating load is
above saturation even where its throughput has collapsed (:func:`below_saturation`).

How a point is simulated, by how its source loaded the server:

* ``rate`` finite (open loop): Poisson arrivals at that rate, ``--requests`` requests.
* ``rate = inf`` with ``num_prompts == concurrency`` (a burst: every prompt released at once, as
  ``benchmark_serving.py --request-rate inf`` without ``--max-concurrency``): ``num_prompts``
  requests arriving at :data:`BURST_RATE` (they all arrive within a few ms).
* otherwise (closed loop at a fixed client concurrency ``C``, e.g. AIPerf or
  ``--max-concurrency``): :func:`~rooflinekit.planning.load_curve` at ``concurrencies=[C]``,
  on ``num_prompts`` requests (``max(--requests, 3 × C)`` where the source does not say): a
  server kept full, client times counted from when the client sends (the moment an earlier
  request completes; see its Notes). Its clients start together, as the benchmark clients
  start theirs, where the lengths vary (drawn from a range or ShareGPT's, below: the first
  waves disperse as the source's did, and their waits are in its TTFT); else apart (equal
  lengths would keep a wave together for ever, where real clients drift apart). Until 2026-12-05 every closed
  loop started apart, and the TTFT the first waves wait was missing from those sweeps.

  (Until 2026-12 such points were simulated open loop at the *measured* request throughput,
  which holds the published concurrency only when the predicted latencies are right: a model
  too fast at ``C`` sequences then ran far fewer, and its TPOT error was understated.)

Lengths: datasets named ``sharegpt`` are resampled from the ShareGPT sample vLLM's benchmark
clients send (:func:`rooflinekit.workloads.sharegpt_lengths`: 1,280 requests, seed 0, the
Llama-3 tokenizer; :func:`sharegpt_draws`), whose many short replies (14 % under ten tokens) are what
a mean TPOT over requests weighs most. A point that sent that very sample (its published mean
prompt is the mean of the sample's first ``num_prompts`` prompts: LambdaLabs, Phala,
DigitalOcean) draws from those requests' prompts; any other from the whole sample's, and the
lengths are scaled to the point's published means. ``--sharegpt-sigma S`` draws log-normal
lengths around the means instead (the assumption used until 2026-12-06). A ``random IN/OUT``
dataset whose lengths the client drew uniformly (SGLang's
``bench_serving``: integers from ``max(int(ratio × max), 1)`` to ``max``) is drawn the same way:
``(range ratio R)`` gives the low end ``int(R × max)``; ``(uniform, max)`` (ratio not published)
the low end that puts the mean at the published one, ``max(1, round(2 × mean − max))``. Every
other dataset takes the published lengths as constants.

Weights in a ``dtype`` other than bf16/fp16 (fp8) are applied to the catalogue model
(``bytes_per_param``); an :class:`~rooflinekit.Engine` (IDEAL) then also multiplies in that format
(``compute_dtype``), as :mod:`rooflinekit.calibrate` does for such rows. A ``kv_dtype`` (fp8)
sets the KV cache's format (``kv_bytes_per_element``); blank keeps the model's 16-bit cache. An
``ssm_dtype`` sets a hybrid model's recurrent-state format (``ssm_state_bytes_per_element``, the
server's ``--mamba-ssm-dtype``); blank keeps the model's own (FP32).

It also scores the single bursts of ``tests/data/load_sweeps/bursts.csv`` and
``trtllm_throughput.csv`` (``--bursts``; each a configuration's saturation, :func:`score_bursts`):
their output throughput and, where published, mean TPOT.

Usage::

    PYTHONPATH=. python scripts/score_load_sweeps.py [--calibration FILE] [--replicates 3]
        [--step-overhead MS ...]
"""

from __future__ import annotations

import argparse
import dataclasses
import csv
import math
import re
import sys
from pathlib import Path
from urllib.parse import urlparse

import numpy as np

import rooflinekit
from rooflinekit import catalog
from rooflinekit.dtypes import BYTES_PER_ELEMENT, is_mxfp4
from rooflinekit.profiles import host_scheduling, scheduler_defaults
from rooflinekit.profiles.shipped import release_number
from rooflinekit.planning import SLO, Traffic
from rooflinekit.workloads import (Empirical, LogNormal, Uniform, scaled_lengths,
                                   sharegpt_lengths)

try:  # the top-level name where the package exports it, else the planning module's
    load_curve = rooflinekit.load_curve
except AttributeError:
    from rooflinekit.planning import load_curve

DEFAULT_SWEEPS = Path(__file__).resolve().parents[1] / "tests" / "data" / "load_sweeps" / "sweeps.csv"
#: Published saturation runs: single bursts, one a row, in the sweeps' columns.
DEFAULT_BURSTS = DEFAULT_SWEEPS.with_name("bursts.csv")
#: TensorRT-LLM's published throughput table: offline bursts (``trtllm-bench throughput``), in
#: the same columns; TensorRT-LLM's served stage fits its host time per sequence to them
#: (``scripts/fit_served_overheads.py``), held out by model and whole in the profile's notes.
DEFAULT_THROUGHPUT = DEFAULT_SWEEPS.with_name("trtllm_throughput.csv")
#: The replies each run's model generated, request by request, where a source's result files
#: record them (:func:`read_replies`); read beside the sweeps file.
REPLIES_NAME = "replies.csv"
#: Every file of saturation runs, in the order the scorer and the docs read them.
SATURATION_FILES = (DEFAULT_BURSTS, DEFAULT_THROUGHPUT)

#: Sources taken after the served overheads were last fitted (``fit_served_overheads.py``,
#: ``fit_frontend_latency.py``): scored like every other, never fitted to, so that their scores
#: are out of sample whole. DataCrunch's (InferenceX's Qwen3.5-397B-A17B on B300) was refitted
#: with once, before the simulator had its server's ``--scheduler-recv-interval 10``: the front
#: end took the wait in (41 to 77 ms) and the cookbook's held-out TTFT went from 42 to 55 %
#: (docs/validation.md, "Two findings since"). With the interval simulated it meets every
#: target held out, and stays out of the fit as the check that it is.
VALIDATION_ONLY = ("datacrunch-research/blogs",)


def fitted_sweeps(sweeps: dict) -> dict:
    """``sweeps`` ({name: points}) without those of a :data:`VALIDATION_ONLY` source: the
    sweeps the served overheads are fitted to."""
    return {name: points for name, points in sweeps.items()
            if source_group(points[0]["source"]) not in VALIDATION_ONLY}


#: Arrival rate that stands for "all at once" [requests/s].
BURST_RATE = 1e4
#: Points at most this share of the sweep's largest measured output throughput are "below saturation".
SATURATION_SHARE = 0.8
#: Log-space spread of ShareGPT lengths drawn log-normal around their means, or ``None``: the
#: recorded sample (:func:`sharegpt_draws`).
SHAREGPT_SIGMA = None
#: A loose SLO: load_curve needs one, the scores do not use its attainments.
_SLO = SLO(ttft=60.0)

NUMERIC = ("tp", "prompt_tokens", "output_tokens", "rate", "concurrency", "mean_ttft_ms",
           "median_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "mean_itl_ms",
           "request_throughput", "output_throughput", "num_prompts", "max_model_len")


#: The OpenAI-compatible endpoint a sweep's client called, where the source says: blank (not
#: stated, or ``/v1/completions``, the benchmark clients' default), ``completions`` or ``chat``
#: (``/v1/chat/completions``, whose server renders the chat template before tokenising).
ENDPOINTS = ("", "completions", "chat")
#: The benchmark tool that chose a point's server caps where its command left them unset:
#: blank (the engine's own defaults, :func:`scheduler`) or ``trtllm-bench``
#: (:func:`trtllm_bench_caps`).
HARNESSES = ("", "trtllm-bench")
#: Columns every point must fill: what it is, where it comes from, and its load.
REQUIRED = ("sweep", "source", "model", "gpu", "tp", "prompt_tokens", "output_tokens",
            "output_throughput")


def _whole(row, key, where, default=None, lo=1):
    """``row[key]`` as a whole number >= ``lo``, ``default`` where blank, or the error naming
    the place and field."""
    value = _number(row.get(key), f"{where}, field {key!r}")
    if value is None:
        return default
    if value < lo or not math.isfinite(value) or value != int(value):
        raise ValueError(f"{where}, field {key!r}: expected a whole number >= {lo} or blank, "
                         f"got {row.get(key, '')[:40]!r}")
    return int(value)


def _number(text, where):
    text = (text or "").strip()
    if not text:
        return None
    try:
        value = float(text)  # "inf" parses to math.inf
    except ValueError:
        raise ValueError(f"{where}: expected a number, got {text[:40]!r}") from None
    if math.isnan(value) or value < 0:
        raise ValueError(f"{where}: must be a number >= 0, got {text[:40]!r}")
    return value


def _blank_or_one_of(row, key, choices, where, *, lower=False) -> str:
    """A text field of ``row``, stripped (and lower-cased with ``lower``): blank or one of
    ``choices``, else a ValueError naming ``where`` (the file and line) and the field."""
    value = (row.get(key) or "").strip()
    value = value.lower() if lower else value
    if value and value not in choices:
        raise ValueError(f"{where}, field {key!r}: expected one of "
                         f"{', '.join(c for c in choices if c)} or blank, got {value[:40]!r}")
    return value


def _csv_rows(path, columns, filled):
    """``(where, row)`` for each row of the CSV file ``path`` (lines starting ``#`` skipped),
    ``where`` naming the file and line; a ValueError naming the file where a column of
    ``columns`` is missing, and the place and field where one of ``filled`` is blank."""
    with open(path, newline="", encoding="utf-8") as fh:
        numbered = [(k, line) for k, line in enumerate(fh, 1) if not line.startswith("#")]
    reader = csv.DictReader(line for _, line in numbered)
    missing = [c for c in columns if c not in (reader.fieldnames or ())]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}")
    for (line_no, _), row in zip(numbered[1:], reader):
        where = f"{path}, line {line_no}"
        for key in filled:
            if not (row.get(key) or "").strip():
                raise ValueError(f"{where}: field {key!r} is empty")
        yield where, row


def read_sweeps(path=DEFAULT_SWEEPS, replies=None) -> dict[str, list[dict]]:
    """The sweeps of ``path`` by id, each a list of points (numbers parsed, blanks ``None``),
    each point with its run's recorded ``replies`` (:func:`read_replies`; ``None`` where none
    is recorded) from the file ``replies``, by default the :data:`REPLIES_NAME` beside
    ``path`` where there is one.

    Raises
    ------
    ValueError
        A missing column, a point without a required field, a number that is not one, a
        point with neither a rate nor a concurrency, or a ``kv_dtype`` or ``ssm_dtype`` that
        names no format; a replies row that :func:`read_replies` refuses, or of a sweep held
        that matches no point of it that sent the recorded sample, or whose mean is not the
        point's ``output_tokens``: the message names the file, the line and the field.
    """
    sweeps: dict[str, list[dict]] = {}
    for where, row in _csv_rows(path, (*REQUIRED, *NUMERIC), REQUIRED):
        point = dict(row)
        for key in NUMERIC:
            point[key] = _number(row.get(key), f"{where}, field {key!r}")
        for key in ("kv_dtype", "ssm_dtype"):
            _blank_or_one_of(row, key, sorted(BYTES_PER_ELEMENT), where, lower=True)
        point["endpoint"] = _blank_or_one_of(row, "endpoint", ENDPOINTS, where)
        point["harness"] = _blank_or_one_of(row, "harness", HARNESSES, where)
        # the server's own settings where its command set them (blank: the engine's default)
        point["recv_interval"] = _whole(row, "recv_interval", where, default=1)
        point["num_scheduler_steps"] = _whole(row, "num_scheduler_steps", where, default=1)
        point["max_num_batched_tokens"] = _whole(row, "max_num_batched_tokens", where)
        point["ep"] = _whole(row, "ep", where, default=1)
        # the run's first prompts that its server had cached (README: a warm-up, an earlier run)
        point["cached_prompts"] = _whole(row, "cached_prompts", where, default=0, lo=0)
        if point["num_prompts"] is not None and point["cached_prompts"] > point["num_prompts"]:
            raise ValueError(f"{where}, field 'cached_prompts': more than the run's "
                             f"{point['num_prompts']:g} prompts")
        if point["rate"] is None and point["concurrency"] is None:
            raise ValueError(f"{where}: a point needs a rate or a concurrency (fields 'rate', "
                             f"'concurrency')")
        point["replies"] = None
        sweeps.setdefault(row["sweep"], []).append(point)
    replies = Path(path).with_name(REPLIES_NAME) if replies is None else Path(replies)
    if replies.exists():
        _attach_replies(sweeps, replies)
    return sweeps


def read_replies(path) -> list[tuple[str, dict]]:
    """The rows of a replies file (:data:`REPLIES_NAME`): ``(where, row)``, ``where`` naming the
    file and line, with ``row`` a dict of
    ``sweep``, ``num_prompts`` (int), ``output_tokens`` (a tuple of whole numbers >= 0, the
    run's replies in the order sent: what its client counted, 0 for an empty reply) and
    ``source``.

    Raises
    ------
    ValueError
        A missing column or field, a ``num_prompts`` that is not a whole number >= 1, or
        ``output_tokens`` that are not ``num_prompts`` whole numbers >= 0: the message names
        the file, the line and the field.
    """
    columns = ("sweep", "num_prompts", "output_tokens", "source")
    rows = []
    for where, row in _csv_rows(path, columns, columns):
        n = _whole(row, "num_prompts", where)
        words = row["output_tokens"].split()
        if len(words) != n or not all(w.isdigit() for w in words):
            raise ValueError(f"{where}, field 'output_tokens': expected {n} whole numbers >= 0 "
                             f"separated by spaces (num_prompts), got {len(words)} words")
        rows.append((where, {"sweep": row["sweep"].strip(), "num_prompts": n,
                               "output_tokens": tuple(int(w) for w in words),
                               "source": row["source"].strip()}))
    return rows


def _attach_replies(sweeps: dict, path) -> None:
    """Each row of the replies file ``path`` onto its point of ``sweeps`` (``replies``), or the
    ValueError of :func:`read_sweeps`. Rows of a sweep that ``sweeps`` does not hold are
    skipped: one replies file serves every sweeps file beside it (the saturation runs')."""
    for where, row in read_replies(path):
        if row["sweep"] not in sweeps:
            continue
        point = next((p for p in sweeps[row["sweep"]]
                      if p["num_prompts"] == row["num_prompts"]), None)
        if point is None or not sent_the_sample(point):
            raise ValueError(f"{where}, fields 'sweep', 'num_prompts': no point of "
                             f"{row['sweep']!r} at {row['num_prompts']} prompts that sent the "
                             f"recorded ShareGPT sample")
        replies = row["output_tokens"]
        if abs(sum(replies) / len(replies) - point["output_tokens"]) > 5e-3:
            raise ValueError(f"{where}, field 'output_tokens': their mean "
                             f"{sum(replies) / len(replies):.3f} is not the point's "
                             f"output_tokens {point['output_tokens']:g}")
        point["replies"] = replies


def source_group(source: str) -> str:
    """The source a row comes from, for scores by source: a URL's host (a GitHub URL's
    ``owner/repo``), a repository's name."""
    if source.startswith(("http://", "https://")):
        url = urlparse(source)
        parts = [p for p in url.path.split("/") if p]
        if url.netloc == "github.com" and len(parts) >= 2:
            return f"{parts[0]}/{parts[1]}"
        return url.netloc
    return source.split("@", 1)[0].split(":", 1)[0]


def mode(points) -> str:
    """``"rate"`` (open loop), ``"burst"`` (all prompts at once) or ``"closed"`` (fixed concurrency)."""
    if all(p["rate"] is not None and math.isfinite(p["rate"]) for p in points):
        return "rate"
    if all(p["num_prompts"] is not None and p["concurrency"] is not None
           and p["num_prompts"] == p["concurrency"] for p in points):
        return "burst"
    return "closed"


def _offered(point) -> float:
    """The load a point offered: its rate (open loop), else its clients (closed loop; a
    burst's clients are its prompts)."""
    rate = point["rate"]
    return rate if rate is not None and math.isfinite(rate) else point["concurrency"]


def published(point, what: str):
    """``(key, value [ms])`` of what ``point`` publishes for ``what``: ``"tpot"`` the mean TPOT
    (``key`` ``"mean_tpot"`` of :func:`predict_point`), else the mean every-gap ITL
    (``"mean_token_itl"``); ``"ttft"`` the mean TTFT (``"mean_ttft"``), else the median
    (``"p50_ttft"``). ``None`` where it publishes neither."""
    pairs = {"tpot": (("mean_tpot", "mean_tpot_ms"), ("mean_token_itl", "mean_itl_ms")),
             "ttft": (("mean_ttft", "mean_ttft_ms"), ("p50_ttft", "median_ttft_ms"))}[what]
    return next(((key, point[column]) for key, column in pairs if point[column] is not None),
                None)


def bootstrap_over_sources(points, fit, *, n_resamples=1000, quantiles=(0.05, 0.95),
                           seed=0) -> tuple[float, float]:
    """The ``quantiles`` of ``fit(sample)`` over ``n_resamples`` samples of ``points``' sources
    drawn with replacement (``points``: dicts with a ``source``): the interval a fit to load
    sweeps states, where each source is one draw. A source drawn twice counts twice, its points
    renamed apart."""
    sources = list(dict.fromkeys(p["source"] for p in points))
    by_source = {s: [p for p in points if p["source"] == s] for s in sources}
    rng = np.random.default_rng(seed)
    fits = []
    for _ in range(n_resamples):
        drawn = rng.integers(len(sources), size=len(sources))
        sample = []
        for k, index in enumerate(drawn):
            sample += [{**p, "source": f"{p['source']}#{k}"} for p in by_source[sources[index]]]
        fits.append(fit(sample))
    lo, hi = np.quantile(fits, quantiles)
    return float(lo), float(hi)


def below_saturation(points) -> list:
    """The points of one sweep below 80 % of its saturation: a measured output throughput at
    most :data:`SATURATION_SHARE` of the sweep's largest, at a load below the one that gave
    it. A point offered more load than the saturating one is above saturation however far its
    throughput fell (InferenceX's gpt-oss-120b 1k/8k sweep: 3,932 tokens/s at 64 clients, its
    peak 5,553 at 32)."""
    top = max(points, key=lambda p: p["output_throughput"])
    return [p for p in points
            if p["output_throughput"] <= SATURATION_SHARE * top["output_throughput"]
            and _offered(p) < _offered(top)]


_UNIFORM = re.compile(r"random\s+(\d+)/(\d+)\s*\((?:uniform, max|range ratio ([0-9.]+))\)")


def _length(mean, dataset, sigma, which=0):
    """Length draws of ``dataset`` around the published ``mean`` [tokens]: the prompt's
    (``which`` 0) or the output's (1); see the module's docstring (ShareGPT's recorded sample:
    :func:`sharegpt_draws`)."""
    uniform = _UNIFORM.search(dataset or "")
    if uniform:
        top = int(uniform.group(1 + which))
        ratio = uniform.group(3)
        low = max(int(float(ratio) * top), 1) if ratio else max(1, round(2 * mean - top))
        return Uniform(min(low, top), top)
    if _sharegpt(dataset) and sigma is not None and sigma > 0:
        return LogNormal(float(mean), float(sigma))
    return max(1, int(round(mean)))


def _sharegpt(dataset) -> bool:
    return "sharegpt" in (dataset or "").lower()


def sent_the_sample(point) -> bool:
    """Whether ``point``'s client sent the recorded sample
    (:func:`rooflinekit.workloads.sharegpt_lengths`): its published mean prompt is the mean of
    the sample's first ``num_prompts`` prompts (to 0.005 tokens; the client takes the first N
    requests of one seeded shuffle)."""
    prompts = np.asarray(sharegpt_lengths()[0].samples)
    n = int(point.get("num_prompts") or 0)
    return 0 < n <= prompts.size and abs(prompts[:n].mean() - point["prompt_tokens"]) < 5e-3


def sharegpt_draws(point) -> tuple:
    """Prompt and output length draws of a ShareGPT ``point``: the recorded sample's, scaled to
    the point's published mean prompt and output (a factor 1 for the prompts of the very
    sample); where :func:`sent_the_sample`, its first ``num_prompts`` requests replayed in
    order, each prompt with its reply (``replay``: what the client sent), else all of them
    resampled. A point whose run recorded its own ``replies`` (:func:`read_replies`: another
    model's, or the same model's in another run) replays those instead of the sample's."""
    if point.get("replies"):
        n = len(point["replies"])
        prompts, replies = scaled_lengths(sharegpt_lengths(requests=n)[0].samples,
                                          point["replies"])
        return Empirical(samples=prompts, replay=True), Empirical(samples=replies, replay=True)
    sent = sent_the_sample(point)
    return sharegpt_lengths(float(point["prompt_tokens"]), float(point["output_tokens"]),
                            requests=int(point["num_prompts"]) if sent else None, replay=sent)


def _spec(point, engine, sigma):
    """Model spec, engine and traffic of ``point``."""
    model = catalog.model(point["model"])
    dtype = (point.get("dtype") or "").strip().lower()
    if dtype and dtype not in ("bf16", "fp16"):
        model = model.replace(bytes_per_param=dtype)
        if isinstance(engine, rooflinekit.Engine) and engine.compute_dtype is None:
            engine = engine.replace(compute_dtype=dtype)
    kv_dtype = (point.get("kv_dtype") or "").strip().lower()
    if kv_dtype:
        model = model.replace(kv_bytes_per_element=kv_dtype)
    ssm_dtype = (point.get("ssm_dtype") or "").strip().lower()
    if ssm_dtype and model.state_bytes_per_sequence:
        model = model.replace(ssm_state_bytes_per_element=ssm_dtype)
    if _sharegpt(point["dataset"]) and sigma is None:
        prompt, output = sharegpt_draws(point)
    else:
        prompt = _length(point["prompt_tokens"], point["dataset"], sigma)
        output = _length(point["output_tokens"], point["dataset"], sigma, 1)
    traffic = Traffic(1.0, prompt, output)
    return model, engine, traffic


#: Engine versions a source does not record but states elsewhere: LambdaLabsML/vllm-benchmark's
#: result files (dated 2024-09-07) ran vLLM 0.6.0 with --num-scheduler-steps 10, not the v0.5.4
#: image its benchmark.sh defaults to: their streams arrive in ten-step windows (the sweeps'
#: num_scheduler_steps column; multi-step scheduling came with 0.6.0), and its report
#: (benchmark_v0.md, "vLLM v0.5.4 v.s. v0.6.0") gives 0.6.0 with ten steps 8,088 output tokens/s
#: on Llama-3.1-8B where 0.5.4 gives 3,032; the 640- and 1,280-prompt files reach 7,790 and 7,627.
ASSUMED_VERSIONS = {"LambdaLabsML/vllm-benchmark": "0.6.0"}
#: Context [tokens] above which vLLM's V0 engine turned chunked prefill on by default.
V0_LONG_CONTEXT = 32_768
#: V0's prefill step without chunked prefill holds whole prompts up to max(max_model_len, this)
#: tokens (SchedulerConfig's max_num_batched_tokens default).
V0_MIN_BATCHED_TOKENS = 2048
#: The first vLLM release that runs the V1 engine by default (vllm-project/vllm#13726, 0.8.0).
V1_SINCE = (0, 8)


def _release(version: str | None) -> tuple | None:
    """:func:`rooflinekit.profiles.shipped.release_number` of a point's engine version
    (``"1.1.0rc2.post2"`` -> (1, 1, 0, 0)), ``None`` where the source gives none."""
    return release_number(version) if version else None


def runs_v0(point) -> bool:
    """Whether ``point``'s engine is vLLM's V0 engine: vLLM at a known version before
    :data:`V1_SINCE`."""
    release = _release(engine_version(point))
    return point["engine"] == "vllm" and release is not None and release[:2] < V1_SINCE


#: ``trtllm-bench``'s bytes a weight or KV element by quantisation, for the formats it tunes
#: (``tensorrt_llm/bench/build/tuning.py`` ``BYTES_PER_ELEM``: NVFP4, FP8, none); a format it
#: does not tune (gpt-oss's MXFP4 experts) takes TensorRT-LLM's defaults.
TRTLLM_BENCH_BYTES = {"fp4": 0.5, "fp8": 1.0, "": 2.0, "bf16": 2.0, "fp16": 2.0}
#: ``trtllm-bench throughput --kv_cache_free_gpu_mem_fraction`` default.
TRTLLM_BENCH_KV_FRACTION = 0.90
#: TensorRT-LLM's ``max_batch_size`` and ``max_num_tokens`` defaults (``TorchLlmArgs``).
TRTLLM_DEFAULT_CAPS = (2048, 8192)


def _rounded_up(value, step):
    return step * math.ceil(value / step)


def trtllm_bench_caps(point) -> tuple[int, int]:
    """``(max_batch_size, max_num_tokens)`` that ``trtllm-bench throughput`` ran a point with
    when its command gave neither (NVIDIA/TensorRT-LLM ``tensorrt_llm/bench/benchmark/utils/
    general.py`` ``get_settings``, ``tensorrt_llm/bench/build/build.py``
    ``get_benchmark_engine_settings`` and ``tensorrt_llm/bench/build/tuning.py``
    ``calc_engine_setting`` / ``finetune_setting``).

    For a weight format it tunes (:data:`TRTLLM_BENCH_BYTES`), the KV cache's requests of the
    dataset's mean lengths: ``R = f · (M·tp − P·b) / (2 · L · max(tp, h_kv) · d · b_kv ·
    (ISL + OSL))`` with ``M`` the memory the driver reports [GiB] (NVML's total there),
    ``P·b`` the parameters at the format's bytes, ``f`` = 0.90, ``L`` layers, ``h_kv`` KV
    heads of width ``d`` at ``b_kv`` bytes (1 for an FP8 cache, else 2). The batch cap rounds
    ``min(R, 4096)`` up (to 32 with at least 64 below 256, to 128 below 1,024, else to 256);
    the token cap rounds ``min(R · (1 + ISL/OSL), 32768)`` up (to 256 with at least 2,048
    below 4,096, to 512 below 8,192, else to 1,024). A format it does not tune (MXFP4 experts)
    takes :data:`TRTLLM_DEFAULT_CAPS`. Chunked prefill is off, so the token cap is then raised
    to at least the longest prompt plus the batch cap: a whole prompt fits a step beside the
    decodes."""
    model = catalog.model(point["model"])
    gpu = catalog.gpu(point["gpu"])
    tp = int(point["tp"])
    isl, osl = int(point["prompt_tokens"]), int(point["output_tokens"])
    dtype = (point.get("dtype") or "").strip().lower()
    if is_mxfp4(model.bytes_per_expert_param) or dtype not in TRTLLM_BENCH_BYTES:
        batch, tokens = TRTLLM_DEFAULT_CAPS
    else:
        kv_bytes = 1.0 if (point.get("kv_dtype") or "").strip().lower() == "fp8" else 2.0
        layers = model.n_attention_layers or model.n_layers
        gib_per_token = 2 * layers * max(tp, model.n_kv_heads) * model.head_dim * kv_bytes \
            / 2**30
        free = gpu.visible_memory_per_gpu / 2**30 * tp \
            - model.n_params * TRTLLM_BENCH_BYTES[dtype] / 2**30
        requests = free * TRTLLM_BENCH_KV_FRACTION / (gib_per_token * (isl + osl))
        raw_batch = min(requests, 4096)
        raw_tokens = min(raw_batch * (1 + isl / osl), 32768)
        batch = (max(64, _rounded_up(raw_batch, 32)) if raw_batch < 256 else
                 _rounded_up(raw_batch, 128) if raw_batch < 1024 else
                 _rounded_up(raw_batch, 256))
        tokens = (max(2048, _rounded_up(raw_tokens, 256)) if raw_tokens < 4096 else
                  _rounded_up(raw_tokens, 512) if raw_tokens < 8192 else
                  _rounded_up(raw_tokens, 1024))
    return batch, max(tokens, isl + batch)


def scheduler(point) -> tuple[int, int | None, bool, str, str]:
    """``(max_num_seqs, max_num_batched_tokens, mixed_prefill, admission, why)`` the point's
    engine ran with by default.

    vLLM before 0.8 (the V0 engine), 256 sequences: served at a context of at most 32K
    tokens, chunked prefill off, so prompts are prefilled in prefill steps without the decodes
    (``mixed_prefill`` False) of at most ``max(max_model_len, 2048)`` tokens (V0's
    ``SchedulerConfig`` default; the simulator fills the budget by slicing the last prompt where
    V0 leaves it for the next step: LambdaLabs' 2,048-token steps hold ten ShareGPT prompts);
    above 32K (the point's ``max_model_len``,
    else the catalogue model's context), from 0.5.4 on, chunked prefill on by default with 512
    tokens a step, decodes first (vllm-project/vllm#6666, July 2024; the engine logs "Chunked
    prefill is enabled with max_num_batched_tokens=512"). vLLM 0.8 and later, an unknown vLLM
    version (taken as current), SGLang, and NIM (a TensorRT-LLM engine): the engine's defaults
    for the GPU (:func:`rooflinekit.profiles.scheduler_defaults`), its KV admission among them
    (paged for vLLM and SGLang; TensorRT-LLM's GUARANTEED_NO_EVICT: reserve), with the
    point's ``max_num_batched_tokens`` where its server's command set one. A point whose
    ``harness`` is ``trtllm-bench`` (TensorRT-LLM's throughput table) runs that tool's own caps
    where the command left them unset (:func:`trtllm_bench_caps`).
    """
    engine = point["engine"]
    version = engine_version(point)
    release = _release(version)
    if runs_v0(point):
        context = point.get("max_model_len") or catalog.model(point["model"]).max_context or 0
        if context > V0_LONG_CONTEXT and release >= (0, 5, 4):
            return 256, 512, True, "paged", f"vLLM {version} (V0) at {int(context)} tokens " \
                f"of context: 256 sequences, chunked prefill of 512 tokens a step"
        budget = max(int(context), V0_MIN_BATCHED_TOKENS)
        return 256, budget, False, "paged", f"vLLM {version} (V0): 256 sequences, prefill " \
            f"steps apart of at most {budget} tokens"
    name = {"vllm": "vllm", "sglang": "sglang", "nim": "trtllm", "trtllm": "trtllm"}[engine]
    d = scheduler_defaults(name, point["gpu"])
    budget = point.get("max_num_batched_tokens")
    if point.get("harness") == "trtllm-bench" and not budget:
        seqs, budget = trtllm_bench_caps(point)
        return seqs, budget, d.mixed_prefill, d.admission, \
            f"trtllm-bench's caps: {seqs} sequences, {budget} tokens a step, " \
            f"{d.admission} admission"
    if budget:      # the server's command set its tokens a step
        return d.max_num_seqs, budget, d.mixed_prefill, d.admission, \
            f"{name} defaults: {d.max_num_seqs} sequences, {d.admission} admission; " \
            f"{budget} tokens a step as its server was run"
    return d.max_num_seqs, d.max_num_batched_tokens, d.mixed_prefill, d.admission, \
        f"{name} defaults: {d.max_num_seqs} sequences, {d.max_num_batched_tokens} tokens, " \
        f"{d.admission} admission"


def clients_start(point, sigma=SHAREGPT_SIGMA) -> str:
    """How a closed-loop point's clients start (module docstring): ``"together"`` where the
    client's lengths vary (drawn from a range, or ShareGPT's), else ``"apart"``."""
    dataset = point.get("dataset") or ""
    varied = _UNIFORM.search(dataset) or (_sharegpt(dataset) and (sigma is None or sigma > 0))
    return "together" if varied else "apart"


def _run(point, engine, *, requests, replicates, seed, sigma, rate=None,
         concurrency=None) -> dict:
    """One point of :func:`~rooflinekit.planning.load_curve`: at ``rate`` (open loop) or at
    ``concurrency`` (closed loop); medians over replicates."""
    model, engine, traffic = _spec(point, engine, sigma)
    seqs, chunk, mixed, admission, _ = scheduler(point)
    requests = max(10, int(requests))          # load_curve's fewest
    ds = load_curve(traffic, _SLO, model=model, gpu=point["gpu"], tp=int(point["tp"]),
                    rates=None if rate is None else [float(rate)],
                    concurrencies=None if concurrency is None else [int(concurrency)],
                    max_num_seqs=seqs,
                    max_num_batched_tokens=None if chunk is None else max(chunk, seqs),
                    mixed_prefill=mixed, admission=admission, engine=engine, engine_draws=0,
                    recv_interval=point.get("recv_interval", 1), ep=point.get("ep", 1),
                    num_scheduler_steps=point.get("num_scheduler_steps", 1),
                    cached_prompts=min(point.get("cached_prompts", 0), requests),
                    replicates=replicates,
                    requests=requests, seed=seed,
                    **({} if concurrency is None
                       else {"clients_start": clients_start(point, sigma)}))
    out = {}
    for name, scale in (("mean_ttft", 1e3), ("p50_ttft", 1e3), ("mean_tpot", 1e3),
                        ("mean_token_itl", 1e3), ("throughput", 1.0),
                        ("request_throughput", 1.0)):
        values = ds[name].values
        # NaN in every replicate: no request completed (one prompt outgrows the KV cache)
        out[name] = float(np.nanmedian(values)) * scale if np.isfinite(values).any() \
            else math.nan
    out["mean_ttft"] *= client_ttft_share(point)
    return out


def client_ttft_share(point) -> float:
    """The share of a point's requests whose TTFT its client counted: 1, or for a run whose
    ``replies`` record empty ones (0 tokens: the first token ended the reply, and
    ``benchmark_serving.py`` of these runs, seeing no text, left their TTFT at 0 in the mean:
    the result files' ``ttfts``), ``(n - empty) / n``. The published mean TTFT is then the
    simulated mean (over every request, the empty ones served as one-token replies) times
    this; the median is left as simulated."""
    replies = point.get("replies")
    if not replies:
        return 1.0
    return sum(1 for r in replies if r > 0) / len(replies)


def _ape(pred, meas):
    if pred is None or meas is None or not math.isfinite(pred) or meas <= 0:
        return None
    return abs(pred - meas) / meas


def _mean(values):
    values = [v for v in values if v is not None and math.isfinite(v)]
    return float(np.mean(values)) if values else math.nan


def predict_point(point, engine, kind, *, replicates=3, requests=300, seed=0,
                  sharegpt_sigma=SHAREGPT_SIGMA) -> dict:
    """One point simulated as its source loaded the server (see the module's docstring):
    ``mean_ttft``, ``p50_ttft``, ``mean_tpot``, ``mean_token_itl`` [ms], ``throughput``
    [output tokens/s], ``request_throughput`` [requests/s]."""
    common = dict(replicates=replicates, seed=seed, sigma=sharegpt_sigma)
    if kind == "rate":
        if sharegpt_sigma is None and _sharegpt(point["dataset"]) and sent_the_sample(point):
            requests = int(point["num_prompts"])     # the sample replayed whole, as it was sent
        return _run(point, engine, rate=point["rate"], requests=requests, **common)
    if kind == "burst":
        return _run(point, engine, rate=BURST_RATE, requests=point["num_prompts"], **common)
    return closed_loop(point, engine, requests=requests, **common)


def closed_loop(point, engine, *, requests=300, replicates=3, seed=0,
                sigma=SHAREGPT_SIGMA) -> dict:
    """A closed-loop point at the client concurrency ``point["concurrency"]``
    (:func:`~rooflinekit.planning.load_curve`'s ``concurrencies``), on ``point["num_prompts"]``
    requests (else ``max(requests, 3 C)``)."""
    c = int(point["concurrency"])
    n = max(10, int(point["num_prompts"] or max(requests, 3 * c)))
    return _run(point, engine, concurrency=c, requests=n, replicates=replicates, seed=seed,
                sigma=sigma)


def score_sweep(points, engine, *, replicates=3, requests=300, seed=0,
                sharegpt_sigma=SHAREGPT_SIGMA) -> dict:
    """Scores of one sweep (its points as :func:`read_sweeps` gives them) under ``engine``."""
    kind = mode(points)
    if callable(engine):             # an engine per sweep (own_engine_name, --step-overhead)
        engine = engine(points[0])
    peak = max(p["output_throughput"] for p in points)
    top = max(points, key=lambda p: p["output_throughput"])
    below = below_saturation(points)

    def sim(point):
        return predict_point(point, engine, kind, replicates=replicates, requests=requests,
                             seed=seed, sharegpt_sigma=sharegpt_sigma)

    tpot_err, ttft_err, median_err, decode_err, rows = [], [], [], [], []
    for point in below:
        pred = sim(point)
        if kind == "closed":
            decode_err.append(_ape(*decode_side(point, pred)))
        for what, errors in (("tpot", tpot_err), ("ttft", ttft_err)):
            found = published(point, what)
            if found is not None:
                errors.append(_ape(pred[found[0]], found[1]))
        if point.get("median_ttft_ms") is not None:
            median_err.append(_ape(pred["p50_ttft"], point["median_ttft_ms"]))
        rows.append(pred)
    sat = sim(top)
    return {"mode": kind, "points": len(points), "below_saturation": len(below),
            "tpot_mape": _mean(tpot_err), "ttft_mape": _mean(ttft_err),
            "ttft_median_mape": _mean(median_err), "decode_mape": _mean(decode_err),
            "saturation_measured": float(peak), "saturation_predicted": sat["throughput"],
            "sat_err": (sat["throughput"] - peak) / peak, "error": ""}


def decode_side(point, pred) -> tuple:
    """A closed-loop point's time from first token to last per request [s], simulated and
    measured, by Little's law: a client at concurrency ``C`` holds ``C`` requests, so each
    request's cycle is ``C / X`` at request throughput ``X`` (the published one, else output
    throughput over the mean output), and the rest of it after the mean TTFT (the median
    where no mean is published) is its decode. Where that agrees and the TTFT does not, the
    missing time is before the first token. ``(None, None)`` without a TTFT or a throughput."""
    measured_x = point["request_throughput"] or (
        point["output_throughput"] / point["output_tokens"] if point["output_tokens"] else None)
    ttft, key = ((point["mean_ttft_ms"], "mean_ttft") if point["mean_ttft_ms"] is not None
                 else (point["median_ttft_ms"], "p50_ttft"))
    if not measured_x or ttft is None or not pred["request_throughput"]:
        return None, None
    c = point["concurrency"]
    return (c / pred["request_throughput"] - pred[key] / 1e3,
            c / measured_x - ttft / 1e3)


def score(sweeps_path=DEFAULT_SWEEPS, engine=None, *, sweeps=None, replicates=3, requests=300,
          seed=0, sharegpt_sigma=SHAREGPT_SIGMA) -> list[dict]:
    """One dict of scores per sweep of ``sweeps_path`` (only the ids in ``sweeps``, if given).

    Each dict: ``sweep``, ``source`` (:func:`source_group`), ``mode``, ``points``,
    ``below_saturation``, ``tpot_mape``, ``ttft_mape``, ``ttft_median_mape`` (fractions; NaN
    where the sweep publishes none below saturation), ``decode_mape`` (a closed loop's time
    from first token to last, :func:`decode_side`; NaN for other loads),
    ``saturation_measured``, ``saturation_predicted`` [output tokens/s],
    ``sat_err`` (signed fraction) and ``error`` (empty, or why the simulation failed: the other
    scores are then NaN).
    """
    results = []
    for name, points in read_sweeps(sweeps_path).items():
        if sweeps is not None and name not in sweeps:
            continue
        head = {"sweep": name, "source": source_group(points[0]["source"])}
        try:
            head.update(score_sweep(points, engine, replicates=replicates, requests=requests,
                                    seed=seed, sharegpt_sigma=sharegpt_sigma))
        except Exception as exc:  # an engine that cannot run this configuration: say why
            head.update({"mode": mode(points), "points": len(points), "below_saturation": 0,
                         "tpot_mape": math.nan, "ttft_mape": math.nan,
                         "ttft_median_mape": math.nan, "decode_mape": math.nan,
                         "saturation_measured": max(p["output_throughput"] for p in points),
                         "saturation_predicted": math.nan, "sat_err": math.nan,
                         "error": f"{type(exc).__name__}: {exc}"})
        results.append(head)
    return results


#: The shipped profile that times each serving engine's sweeps (NIM runs TensorRT-LLM).
PROFILE_OF_ENGINE = {"vllm": "vllm", "sglang": "sglang", "trtllm": "trtllm", "nim": "trtllm"}


def engine_version(point) -> str | None:
    """The engine version ``point`` ran: its ``engine_version``, else the one its source states
    elsewhere (:data:`ASSUMED_VERSIONS`), else ``None``."""
    return point.get("engine_version") or ASSUMED_VERSIONS.get(source_group(point["source"]))


def profile_version(point) -> str | None:
    """The ``version`` of :func:`rooflinekit.engine_profile` that times ``point``'s engine as
    its version ran: a vLLM version that schedules synchronously
    (:func:`rooflinekit.profiles.host_scheduling`: before 0.14.0, the host's time per step
    added to every decode step); ``None`` (the newest profile) for any other engine, an
    asynchronous vLLM version, or a version not known."""
    if PROFILE_OF_ENGINE[point["engine"]] != "vllm":
        return None
    host = host_scheduling("vllm")
    version = engine_version(point)
    return version if host is not None and version and host.synchronous(version) else None


def own_engine_name(point) -> str:
    """The engine ``point`` ran, as a planner names it: its shipped profile
    (:data:`PROFILE_OF_ENGINE`) at its version's host scheduling (:func:`profile_version`):
    ``"trtllm"``, ``"vllm@0.10.1.1"``, ... An engine per sweep for :func:`score` beside the
    default (the newest vLLM profile for every sweep); by name, so that the planner also holds
    that engine's memory beside the KV cache (vLLM's; none for SGLang and TensorRT-LLM:
    :func:`rooflinekit.profiles.memory_engine`)."""
    version = profile_version(point)
    return PROFILE_OF_ENGINE[point["engine"]] + (f"@{version}" if version else "")


def own_engine(point):
    """The shipped profile :func:`own_engine_name` names, for ``point``'s GPU."""
    name = PROFILE_OF_ENGINE[point["engine"]]
    return rooflinekit.engine_profile(name, point["gpu"], version=profile_version(point),
                                      warn=False)


def with_step_overhead(seconds: float):
    """A function of a point: its GPU's shipped vLLM profile with the decode
    ``step_overhead`` [s] replaced (the per-step serving cost the sweeps are most sensitive
    to), an engine per sweep for :func:`score`."""
    def engine(point):
        base = rooflinekit.engine_profile("vllm", point["gpu"], warn=False)
        return dataclasses.replace(base, decode={**base.decode, "step_overhead": seconds},
                                   intervals={})
    return engine


def read_bursts(path=DEFAULT_BURSTS) -> list[dict]:
    """The saturation runs of ``path``: one burst a row (:func:`read_sweeps`' columns and
    checks), each id once.

    Raises
    ------
    ValueError
        Besides :func:`read_sweeps`' refusals: an id on more than one row, or a row that is not
        a burst (``rate = inf`` with ``num_prompts == concurrency``), naming the file and the id.
    """
    runs = []
    for name, points in read_sweeps(path).items():
        if len(points) != 1:
            raise ValueError(f"{path}: run {name!r} is on {len(points)} rows; a saturation run "
                             f"is one burst, one row")
        if mode(points) != "burst":
            raise ValueError(f"{path}: run {name!r} is not a burst: give rate 'inf' and "
                             f"num_prompts equal to concurrency (fields 'rate', 'num_prompts', "
                             f"'concurrency')")
        runs.append(points[0])
    return runs


def score_bursts(bursts_path=DEFAULT_BURSTS, engine=None, *, replicates=3, seed=0) -> list[dict]:
    """Each saturation run of ``bursts_path`` (:func:`read_bursts`) simulated as it was loaded
    (``num_prompts`` requests at once, :func:`predict_point`) under ``engine`` (an engine, or
    a function of the run such as :func:`own_engine`).

    One dict a run: ``sweep``, ``source`` (:func:`source_group`), ``saturation_measured`` and
    ``saturation_predicted`` [output tokens/s], ``sat_err`` (signed fraction), ``tpot_measured``
    and ``tpot_predicted`` (the run's mean TPOT [ms]: in a burst, the steps the decodes share
    with the prompts' chunks) and ``tpot_err`` (signed fraction; NaN where none is published);
    ``fits`` False where the simulated server completes no request (one prompt outgrows its KV
    cache), its errors then NaN.
    """
    results = []
    for point in read_bursts(bursts_path):
        timed = engine(point) if callable(engine) else engine
        pred = predict_point(point, timed, "burst", replicates=replicates, seed=seed)
        measured, tpot = point["output_throughput"], point["mean_tpot_ms"]
        fits = math.isfinite(pred["throughput"]) and pred["throughput"] > 0
        results.append({
            "sweep": point["sweep"], "source": source_group(point["source"]), "fits": fits,
            "saturation_measured": measured, "saturation_predicted": pred["throughput"],
            "sat_err": (pred["throughput"] - measured) / measured if fits else math.nan,
            "tpot_measured": math.nan if tpot is None else tpot,
            "tpot_predicted": pred["mean_tpot"],
            "tpot_err": math.nan if tpot is None else (pred["mean_tpot"] - tpot) / tpot})
    return results


def _pct(value, signed=False):
    if value is None or not math.isfinite(value):
        return "–"
    return f"{100 * value:+.0f} %" if signed else f"{100 * value:.0f} %"


def by_source(results) -> list[dict]:
    """Scores averaged over the sweeps of each source (``sat_err`` as a mean absolute error).

    ``results`` may mix :func:`score`'s sweeps with :func:`score_bursts`' saturation runs: a run
    adds its saturation error only (it has no points below saturation)."""
    groups: dict[str, list[dict]] = {}
    for r in results:
        groups.setdefault(r["source"], []).append(r)
    return [{"source": src, "sweeps": len(rs),
             "tpot_mape": _mean([r.get("tpot_mape", math.nan) for r in rs]),
             "ttft_mape": _mean([r.get("ttft_mape", math.nan) for r in rs]),
             "ttft_median_mape": _mean([r.get("ttft_median_mape", math.nan) for r in rs]),
             "decode_mape": _mean([r.get("decode_mape", math.nan) for r in rs]),
             "sat_abs_err": _mean([abs(r["sat_err"]) for r in rs if math.isfinite(r["sat_err"])])}
            for src, rs in groups.items()]


def _print_table(title: str, header: list, rows, first: bool = False) -> None:
    """A Markdown section: ``## title``, then ``header`` and ``rows`` as a table ("nan" as "–")."""
    print(("" if first else "\n") + f"## {title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + " --- |" * len(header))
    for row in rows:
        print(("| " + " | ".join(str(cell) for cell in row) + " |").replace("| nan |", "| – |"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sweeps", default=str(DEFAULT_SWEEPS), help="the sweeps CSV")
    parser.add_argument("--calibration", help="a calibration JSON (rooflinekit.calibrate)")
    parser.add_argument("--replicates", type=int, default=3)
    parser.add_argument("--requests", type=int, default=300,
                        help="requests per open-loop / closed-loop point (bursts use num_prompts)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sharegpt-sigma", type=float, default=SHAREGPT_SIGMA,
                        help="draw ShareGPT lengths log-normal with this spread around the "
                             "published means (default: the recorded sample)")
    parser.add_argument("--sweep", action="append", help="score only this sweep id (repeatable)")
    parser.add_argument("--step-overhead", type=float, action="append", metavar="MS",
                        help="also score the vLLM profiles with this decode step_overhead [ms] "
                             "(repeatable)")
    parser.add_argument("--bursts", nargs="+", default=[str(p) for p in SATURATION_FILES],
                        help="the saturation runs CSVs (single bursts)")
    args = parser.parse_args(argv)

    engines = [("ideal", rooflinekit.IDEAL), ("default", None),
               ("own engine", own_engine_name)]
    if args.calibration:
        from rooflinekit.calibrate import load_calibration
        engines.append(("calibration", load_calibration(args.calibration)))
    for ms in args.step_overhead or ():
        if not (math.isfinite(ms) and ms >= 0):
            parser.error(f"--step-overhead must be a finite number of ms >= 0, got {ms}")
        engines.append((f"step_overhead {ms:g} ms", with_step_overhead(ms * 1e-3)))

    kw = dict(sweeps=args.sweep, replicates=args.replicates, requests=args.requests,
              seed=args.seed, sharegpt_sigma=args.sharegpt_sigma)
    all_results = {label: score(args.sweeps, engine, **kw) for label, engine in engines}
    # the saturation runs, unless only some sweeps are asked for; a source's runs count in
    # its saturation error beside its sweeps
    bursts = {} if args.sweep else {
        label: [r for path in args.bursts
                for r in score_bursts(path, engine, replicates=args.replicates, seed=args.seed)]
        for label, engine in engines}

    _print_table("Per sweep", ["sweep", "source", "mode", "engine", "points (below sat.)",
                               "TPOT/ITL MAPE", "TTFT MAPE", "decode side (closed)",
                               "sat. tok/s measured", "predicted", "sat. err", "note"],
                 ([r["sweep"], r["source"], r["mode"], label,
                   f"{r['points']} ({r['below_saturation']})", _pct(r["tpot_mape"]),
                   _pct(r["ttft_mape"]), _pct(r["decode_mape"]),
                   f"{r['saturation_measured']:.0f}", f"{r['saturation_predicted']:.0f}",
                   _pct(r["sat_err"], signed=True), r["error"][:120]]
                  for label, results in all_results.items() for r in results), first=True)
    _print_table("Per source", ["source", "engine", "sweeps and runs", "TPOT/ITL MAPE",
                                "TTFT MAPE", "median TTFT MAPE", "decode side (closed)",
                                "mean abs. sat. err"],
                 ([s["source"], label, s["sweeps"], _pct(s["tpot_mape"]), _pct(s["ttft_mape"]),
                   _pct(s["ttft_median_mape"]), _pct(s["decode_mape"]),
                   _pct(s["sat_abs_err"])]
                  for label, results in all_results.items()
                  for s in by_source([*results, *bursts.get(label, ())])))
    if bursts:
        _print_table("Saturation runs (single bursts)",
                     ["run", "engine", "output tok/s measured", "predicted", "sat. err",
                      "mean TPOT measured", "predicted", "TPOT err"],
                     ([r["sweep"], label, f"{r['saturation_measured']:.0f}",
                       f"{r['saturation_predicted']:.0f}", _pct(r["sat_err"], signed=True),
                       f"{r['tpot_measured']:.1f}", f"{r['tpot_predicted']:.1f}",
                       _pct(r["tpot_err"], signed=True)]
                      for label, runs in bursts.items() for r in runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
