"""Engine benchmark outputs as measurement rows: ``vllm bench serve`` and ``vllm bench latency``
results, GuideLLM, ``trtllm-bench``.

Each reader turns one tool's own output file into the measurement table of
:func:`~rooflinekit.calibrate.measurements.measurements_from_records` (same columns, same
validation), taking from the caller what the file does not say (model, GPU and, where the tool
does not record it, the configuration); the table's own files are read by
:func:`~rooflinekit.calibrate.measurements.read_measurements`. Every field name read here was
read in the tool's own output-writing code, named in each reader's References. Every reader
opens only a regular file and reads it whole but bounded (:data:`MAX_REPORT_BYTES`); JSON and
YAML parse bounded (:func:`rooflinekit._validation.parse_json`, ``parse_yaml``: aliases
refused); a missing or malformed field raises a ``ValueError`` naming the file and the field.
"""

from __future__ import annotations

import functools
import math
import numbers
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import xarray as xr

from rooflinekit import units
from rooflinekit._validation import (
    MAX_MAGNITUDE,
    check_count_array,
    check_one_of,
    check_string,
    describe,
    parse_json,
    parse_yaml,
    read_regular_file,
    real_number,
    show,
    whole_number,
)
from rooflinekit.calibrate.measurements import measurements_from_records
from rooflinekit.dtypes import dtype_name
from rooflinekit.workloads import MAX_CONCURRENCY, scaled_lengths

__all__ = ["MAX_REPORT_BYTES", "read_vllm_result", "read_vllm_latency", "read_guidellm_report",
           "read_trtllm_bench", "recorded_model"]

#: The largest file a reader opens [bytes]: 256 MiB. A GuideLLM JSON keeps every request's text
#: by default and can grow large (``--metrics kind=generative,sample_size=0`` keeps statistics
#: only); anything bigger is refused before it is read into memory. Its parsed form is bounded
#: apart (:data:`rooflinekit._validation.MAX_JSON_ELEMENTS`, ``MAX_YAML_NODES``).
MAX_REPORT_BYTES = 256 * 2**20

_STATISTICS = ("median", "mean")


# -- reading a file, bounded -------------------------------------------------------------------

def _read_text(path: Path) -> str:
    """The text of a regular file of at most :data:`MAX_REPORT_BYTES`; a ``ValueError`` naming
    it otherwise."""
    return read_regular_file(path, "benchmark report", MAX_REPORT_BYTES)


def _shown(value) -> str:
    """A word from a file (a version, a rate) for a text column: as printed when a string or a
    number, else bounded."""
    return str(value) if isinstance(value, (str, numbers.Real)) else show(value)


def _load(report, what: str, *, yaml: bool = False) -> tuple[Mapping, str]:
    """``(payload, label)`` of a path to a JSON file (or, with ``yaml``, a ``.yaml``/``.yml``
    one) or an already parsed mapping."""
    if isinstance(report, (str, Path)):
        path = Path(report)
        label = str(path)
        text = _read_text(path)
        if yaml and path.suffix.lower() in (".yaml", ".yml"):
            payload = _load_yaml(text, label)
        else:
            payload = parse_json(text, label)
    elif isinstance(report, Mapping):
        payload, label = report, what
    else:
        raise TypeError(f"{what} must be a path or a mapping; got {describe(report)}")
    if not isinstance(payload, Mapping):
        raise ValueError(f"{label}: a {what} holds a JSON object; got {describe(payload)[:80]}")
    return payload, label


def _load_yaml(text: str, label: str):
    """The content of a YAML report, by PyYAML's safe loader (plain data, no Python objects)."""
    try:
        import yaml  # noqa: F401 (optional: only YAML reports need it)
    except ImportError as exc:
        raise ImportError(f"{label}: reading a YAML report needs PyYAML; install it with "
                          f"`pip install rooflinekit[yaml]`, or save the report as JSON") \
            from exc
    return parse_yaml(text, label)


def _get(payload: Mapping, field: str, label: str, what: str, *, required: bool = True,
         at: str = ""):
    """The value at dotted ``field`` (``None`` where absent and not ``required``); ``at`` is
    where ``payload`` sits in the file, for the message."""
    value = payload
    for key in field.split("."):
        value = value.get(key) if isinstance(value, Mapping) else None
        if value is None:
            if required:
                raise ValueError(f"{label}: the {what} lacks field '{at}{field}'")
            return None
    return value


def _number(value, label: str, field: str, *, required: bool = True):
    """A finite number from a file as ``float``: ``ValueError`` naming the file and field."""
    if value is None:
        if required:
            raise ValueError(f"{label}: field {field!r} is missing")
        return None
    # a field of the wrong kind is a bad file, not a bad argument: ValueError, as for bad JSON
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{label}: field {field!r} must be a number; got {describe(value)}")
    try:
        number = float(value)
    except OverflowError:            # an integer beyond float range
        number = math.inf
    if not math.isfinite(number) or abs(number) > MAX_MAGNITUDE:
        raise ValueError(f"{label}: field {field!r} must be a finite number of at most "
                         f"{MAX_MAGNITUDE:g}; got {show(value)}")
    return number


def _table(rows: list[dict], label: str, report) -> xr.Dataset:
    """:func:`measurements_from_records` of the rows; errors name the file, and a table read
    from a file remembers it (``attrs["file"]``) as :func:`read_measurements` does."""
    try:
        ds = measurements_from_records(rows)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{label}: {exc}") from None
    if isinstance(report, (str, Path)) and label == str(Path(report)):
        ds.attrs["file"] = label
    return ds


def _check_common(model, gpu, source, engine, dtype, kv_dtype):
    check_string("model", model)
    check_string("gpu", gpu)
    check_string("source", source, allow_none=True)
    check_string("engine", engine, allow_none=True, allow_empty=True)
    for name, value in (("dtype", dtype), ("kv_dtype", kv_dtype)):
        if check_string(name, value, allow_none=True) is not None:
            try:
                dtype_name(value)
            except ValueError as exc:
                raise ValueError(f"{name}: {exc}") from None


def _format(name: str, value, label: str, given):
    """A weight or KV format the tool printed, as our name; ``given`` (the caller's) wins."""
    if given is not None:
        return given
    text = "" if value is None else _shown(value).strip()
    if text.lower() in ("", "none", "null", "auto"):
        return None
    try:
        return dtype_name(text)
    except ValueError:
        # a scheme such as W4A16_AWQ or FP8_BLOCK_SCALES names no single format: ask
        raise ValueError(f"{label}: the report's {name} {show(text)} is no format rooflinekit "
                         f"knows; give {'dtype' if name == 'quantization' else 'kv_dtype'}= "
                         f"(fp8, int4, ...)") from None


# -- vllm bench serve --------------------------------------------------------------------------

def _stat(result: Mapping, metric: str, statistic: str, label: str):
    for key in (f"{statistic}_{metric}_ms", f"mean_{metric}_ms", f"median_{metric}_ms"):
        value = result.get(key)
        if value is not None:
            return _number(value, label, key)
    return None


def read_vllm_result(result, *, model: str, gpu: str, tp: int = 1, dtype: str | None = None,
                     source: str | None = None, batch_size: float | None = None,
                     statistic: str = "median", kv_dtype: str | None = None,
                     engine: str | None = None) -> xr.Dataset:
    """One measurement row from the result JSON of ``vllm bench serve --save-result``, or one a
    run from a file of runs one a line (``--append-result``; ``python -m sglang.bench_serving
    --output-file``, whose fields are vLLM's but ``mean_e2e_latency_ms``).

    The file holds client-side statistics (``median_tpot_ms``, ``completed``,
    ``total_input_tokens``, ``max_concurrency``, ``mean_e2el_ms``, ``mean_latency_ms`` before
    vLLM 0.7, ...), not the hardware: the model, GPU and degree come as arguments.

    Parameters
    ----------
    result : str, Path or mapping
        Path of the JSON file (or of the JSON lines), or its parsed content.
    model, gpu : str
        Catalogue names (or names you pass to :func:`~rooflinekit.calibrate.calibrate`).
    tp : int
        Tensor-parallel degree of the server. Default 1.
    dtype : str, optional
        Weight format if it differs from the model's (``--quantization fp8`` → "fp8").
    source : str, optional
        Provenance; default names the file, date and ``model_id``.
    batch_size : float, optional
        The concurrency to record. Default: ``max_concurrency`` when the run set one (at most
        ``completed``); otherwise the time-averaged concurrency by Little's law,
        ``request_throughput × mean end-to-end latency``; otherwise ``completed``.
    statistic : {"median", "mean"}
        Which statistic of TTFT, TPOT and ITL to record. Default "median".
    kv_dtype : str, optional
        KV-cache format if it differs from the model's (``--kv-cache-dtype fp8`` → "fp8").
    engine : str, optional
        The ``engine`` column ("vllm 0.10.1"); the file does not record the server's version.
        Default blank.

    Returns
    -------
    xarray.Dataset
        One row a run in the format of :func:`measurements_from_records`; prompt and output
        lengths are the means ``total_input_tokens / completed`` and ``total_output_tokens /
        completed``.

    See Also
    --------
    read_vllm_latency, read_guidellm_report, read_trtllm_bench : the other engine benchmark
    readers.

    References
    ----------
    .. [1] vLLM ``benchmarks/benchmark_serving.py``, ``benchmark()`` and ``main()`` (result keys).
    """
    check_one_of("statistic", statistic, ("median", "mean"))
    if isinstance(result, (str, Path)):
        # the default source names the file (and its line, in a file of lines)
        runs = [(payload, label, Path(result).name + label[len(str(result)):])
                for payload, label in _serve_runs(result, "vllm result")]
    elif isinstance(result, Mapping):
        runs = [(result, "vllm result", None)]
    else:
        raise TypeError(f"result must be a path or a mapping; got {describe(result)}")
    rows = [_vllm_row(payload, label, name, model=model, gpu=gpu, tp=tp, dtype=dtype,
                      source=source, batch_size=batch_size, statistic=statistic,
                      kv_dtype=kv_dtype, engine=engine) for payload, label, name in runs]
    try:
        return measurements_from_records(rows)
    except (TypeError, ValueError) as exc:
        where = runs[0][1] if len(runs) == 1 else str(result)
        prefix = "" if where == "vllm result" else f"{where}: "
        raise type(exc)(f"{prefix}{exc}") from None


def _vllm_row(result: Mapping, label: str, name: str | None, *, model, gpu, tp, dtype, source,
              batch_size, statistic, kv_dtype, engine) -> dict:
    """:func:`read_vllm_result`'s row of one run (``label`` names it in messages, ``name`` in
    the default ``source``: the file, and its line in a file of lines)."""
    prefix = "" if label == "vllm result" else f"{label}: "
    for key in ("completed", "total_input_tokens", "total_output_tokens"):
        if result.get(key) is None:
            raise ValueError(f"{prefix}vllm result lacks field {key!r}: not a benchmark_serving "
                             f"result")
    completed = _number(result["completed"], label, "completed")
    if completed <= 0:
        raise ValueError(f"{prefix}vllm result field 'completed' must be > 0; got "
                         f"{show(completed)}")
    if batch_size is None:
        cap = result.get("max_concurrency")
        # vLLM's mean end-to-end latency (mean_latency_ms before 0.7), SGLang's
        e2el_key = next((k for k in ("mean_e2el_ms", "mean_latency_ms", "mean_e2e_latency_ms")
                         if k in result), "mean_e2el_ms")
        e2el = result.get(e2el_key)
        if cap is not None:
            batch_size = min(_number(cap, label, "max_concurrency"), completed)
        elif e2el is not None and result.get("request_throughput") is not None:
            batch_size = (_number(result["request_throughput"], label, "request_throughput")
                          * _number(e2el, label, e2el_key) * units.MS)
        else:
            batch_size = completed
    if source is None:
        source = (f"vllm bench serve {name or 'result'} "
                  f"(model_id={_shown(result.get('model_id', '?'))}, "
                  f"date={_shown(result.get('date', '?'))})")
    return {
        "model": model, "gpu": gpu, "tp": tp, "dtype": dtype, "kv_dtype": kv_dtype,
        "engine": engine, "batch_size": batch_size,
        "prompt_tokens": _number(result["total_input_tokens"], label, "total_input_tokens")
        / completed,
        "output_tokens": _number(result["total_output_tokens"], label, "total_output_tokens")
        / completed,
        "ttft_ms": _stat(result, "ttft", statistic, label),
        "itl_ms": _stat(result, "itl", statistic, label),
        "tpot_ms": _stat(result, "tpot", statistic, label),
        "output_throughput": _number(result.get("output_throughput"), label, "output_throughput",
                                     required=False),
        "source": source,
        "notes": f"request_rate={_shown(result.get('request_rate', '?'))}, "
                 f"max_concurrency={_shown(result.get('max_concurrency'))}, "
                 f"completed={int(completed)}",
    }


def _recorded_lengths(payload: Mapping, label: str) -> tuple[tuple, tuple] | None:
    """``(prompt_lengths, output_lengths)`` [tokens] of a run's successful requests where its
    file records them request by request (``input_lens`` and ``output_lens``, which
    ``vllm bench serve --save-result --save-detailed`` writes and ``benchmark_serving.py``
    wrote by default; ``errors`` marks the failed requests), else ``None``. A reply counted
    as 0 tokens (the first token ended it) is one token generated."""
    given = [k for k in ("input_lens", "output_lens") if payload.get(k) is not None]
    if not given:
        return None
    if len(given) == 1:
        other = "output_lens" if given == ["input_lens"] else "input_lens"
        raise ValueError(f"{label}: field {given[0]!r} is given without {other!r}: the "
                         f"per-request lengths come in pairs")
    columns = {}
    for key in ("input_lens", "output_lens", "errors"):
        value = payload.get(key)
        if value is None:
            continue
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            raise ValueError(f"{label}: field {key!r} must be a list (one entry per request); "
                             f"got {describe(value)}")
        if key != "errors":
            value = check_count_array(f"{label}: field {key!r}", value)
        columns[key] = value
    n = len(columns["input_lens"])
    if n == 0 or any(len(v) != n for v in columns.values()):
        raise ValueError(f"{label}: fields 'input_lens', 'output_lens' (and 'errors') must "
                         f"hold one entry per request, as many each; got "
                         f"{', '.join(f'{k} {len(v)}' for k, v in columns.items())}")
    ok = [not error for error in columns.get("errors", [""] * n)]
    if not any(ok):
        raise ValueError(f"{label}: field 'errors' marks every request failed: no length to "
                         f"replay")
    prompts, outputs = columns["input_lens"], columns["output_lens"]
    return (tuple(int(p) for p, keep in zip(prompts, ok) if keep),
            tuple(max(int(o), 1) for o, keep in zip(outputs, ok) if keep))


#: Characters of each reply :func:`_reply_openings` keeps: greedy decoding of one prompt
#: begins its reply alike run after run, where batching's rounding may part the later tokens.
REPLY_OPENING = 32


def _reply_openings(payload: Mapping, label: str) -> tuple | None:
    """The first :data:`REPLY_OPENING` characters of each successful request's reply where a
    run's file records the replies (``generated_texts``, beside ``input_lens``: ``vllm bench
    serve --save-detailed``), else ``None``; what tells one set of fixed-length prompts from
    another (:func:`rooflinekit.planning.load_fit.fit_under_load`'s check for prompts sent
    again)."""
    texts = payload.get("generated_texts")
    if texts is None or payload.get("input_lens") is None:
        return None
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence) \
            or len(texts) != len(payload["input_lens"]) \
            or any(t is not None and not isinstance(t, str) for t in texts):
        raise ValueError(f"{label}: field 'generated_texts' must be a list of texts (or "
                         f"null), one per request as 'input_lens' holds; got "
                         f"{describe(texts)[:80]}")
    errors = payload.get("errors") or [""] * len(texts)
    return tuple((t or "")[:REPLY_OPENING] for t, error in zip(texts, errors) if not error)


#: Fields a ``vllm bench serve --save-result`` file must hold as a point of a load sweep.
_SWEEP_FIELDS = ("request_rate", "completed", "total_input_tokens", "total_output_tokens",
                 "mean_ttft_ms", "mean_tpot_ms")


def _serve_runs(result, what: str) -> list[tuple[Mapping, str]]:
    """``[(payload, label), ...]``: the run a result file (or mapping) holds, or, in a file of
    JSON lines (``--append-result``, SGLang's ``--output-file``), each line's run, labelled
    with its line."""
    if not isinstance(result, (str, Path)):
        return [_load(result, what)]
    label = str(result)
    text = _read_text(Path(result))
    try:
        whole = parse_json(text, label)
    except ValueError:
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        if len(lines) < 2:               # one run, not JSON: its own message
            raise
    else:
        if not isinstance(whole, Mapping):
            raise ValueError(f"{label}: a run is a JSON object; got {describe(whole)[:80]}")
        return [(whole, label)]
    runs = []
    for n, line in lines:
        where = f"{label}, line {n}"
        payload = parse_json(line, where)
        if not isinstance(payload, Mapping):
            raise ValueError(f"{where}: a run is a JSON object; got {describe(payload)[:80]}")
        runs.append((payload, where))
    return runs


def read_vllm_serve_sweep(results) -> list[dict]:
    """The runs of one server at several request rates, from ``vllm bench serve`` result files.

    Parameters
    ----------
    results : list of str, Path or mapping
        ``vllm bench serve --save-result`` files (or their parsed JSON), one per rate, or files
        of JSON lines, one run a line, as ``vllm bench serve --append-result`` and
        ``python -m sglang.bench_serving --output-file`` append them (SGLang's runs carry the
        same fields: ``request_rate``, ``max_concurrency``, ``completed``, the token totals and
        the means; with ``--output-details`` the ``input_lens``, ``output_lens`` and
        ``errors``).

    Returns
    -------
    list of dict
        By rising ``request_rate`` [requests/s] (or ``max_concurrency``): ``request_rate``
        (``inf`` for a closed-loop run), ``max_concurrency`` [1] (``None`` for an open-loop
        run), ``completed`` [1], ``total_input_tokens``, ``total_output_tokens`` [tokens],
        ``mean_ttft_ms``, ``mean_tpot_ms`` [ms], ``median_ttft_ms`` [ms] (``None`` where the
        run records none) and ``label`` (the file, its line in a file of lines, or
        ``results[i]``);
        where the file records its requests one by one (``--save-detailed``: ``input_lens``,
        ``output_lens``, ``errors``), ``prompt_lengths`` and ``output_lengths`` [tokens], each
        successful request's (a reply counted as 0 tokens is 1), and where it also records
        the replies (``generated_texts``) ``reply_openings``: each one's first
        :data:`REPLY_OPENING` characters.
        Runs of ``--max-concurrency C --request-rate inf`` (the file's ``request_rate``
        ``"inf"``) are a closed-loop client at ``C``; all runs must be of one kind.

    Raises
    ------
    ValueError, TypeError
        A file that is not a JSON object, a missing or non-finite field, a rate that is not
        finite and > 0 without a ``max_concurrency`` (a burst), a finite rate with one, open-
        and closed-loop runs mixed, fewer than two distinct rates (or concurrencies), or
        per-request lengths that are not whole numbers >= 0, one of the pair missing, lists of
        unequal length or every request failed, or replies (``generated_texts``) that are not
        one text (or null) a request; naming the file and field.

    See Also
    --------
    read_vllm_result : one run as a measurement row.
    rooflinekit.planning.fit_under_load : fits an engine to such a sweep.
    """
    if isinstance(results, (str, Path)) or not isinstance(results, Sequence):
        raise TypeError(f"results must be a list of `vllm bench serve` result files or "
                        f"mappings; got {describe(results)}")
    runs = []
    for payload, label in (run for i, result in enumerate(results)
                           for run in _serve_runs(result, f"results[{i}]")):
        values = {f: _number(payload.get(f), label, f) if f != "request_rate" else None
                  for f in _SWEEP_FIELDS}
        rate = payload.get("request_rate")
        concurrency = payload.get("max_concurrency")
        unlimited = rate == "inf" or (isinstance(rate, float) and rate == math.inf)
        if concurrency is not None:
            if isinstance(concurrency, bool) or not isinstance(concurrency, int) \
                    or not 1 <= concurrency <= MAX_CONCURRENCY:
                raise ValueError(f"{label}: field 'max_concurrency' must be a whole number from "
                                 f"1 to {MAX_CONCURRENCY:,} (or null); got {concurrency!r}")
            if not unlimited:
                raise ValueError(f"{label}: a run at a finite 'request_rate' ({rate!r}) capped "
                                 f"by 'max_concurrency' ({concurrency}) mixes an open-loop and a "
                                 f"closed-loop client; give runs of one kind: --request-rate "
                                 f"at several rates, or --max-concurrency at several "
                                 f"concurrencies with --request-rate inf")
            values["request_rate"] = math.inf
            values["max_concurrency"] = int(concurrency)
        elif isinstance(rate, str) or rate is None or isinstance(rate, bool) \
                or not isinstance(rate, (int, float)) or not math.isfinite(rate) or rate <= 0:
            raise ValueError(f"{label}: field 'request_rate' must be a finite rate > 0 "
                             f"[requests/s], or 'inf' with a 'max_concurrency' (a closed-loop "
                             f"client); a run of --request-rate inf without "
                             f"--max-concurrency is a burst, not a point of a load curve; got "
                             f"{rate!r}")
        else:
            values["request_rate"] = float(rate)
            values["max_concurrency"] = None
        if values["completed"] < 1:
            raise ValueError(f"{label}: field 'completed' must be >= 1; got "
                             f"{values['completed']:g}")
        for f in ("mean_ttft_ms", "mean_tpot_ms", "total_input_tokens", "total_output_tokens"):
            if values[f] <= 0:
                raise ValueError(f"{label}: field {f!r} must be > 0; got {values[f]:g}")
        # the median TTFT where the run records one: a run without warm-up requests holds
        # the server's start in its mean
        median = _number(payload.get("median_ttft_ms"), label, "median_ttft_ms", required=False)
        if median is not None and median <= 0:
            raise ValueError(f"{label}: field 'median_ttft_ms' must be > 0; got {median:g}")
        values["median_ttft_ms"] = median
        recorded = _recorded_lengths(payload, label)
        if recorded is not None:
            values["prompt_lengths"], values["output_lengths"] = recorded
            openings = _reply_openings(payload, label)
            if openings is not None:
                values["reply_openings"] = openings
        values["label"] = label
        runs.append(values)
    closed = {r["max_concurrency"] is not None for r in runs}
    if len(closed) > 1:
        raise ValueError("results mix runs at request rates (open loop) with runs at "
                         "max_concurrency (closed loop); give one kind")
    key = "max_concurrency" if closed == {True} else "request_rate"
    if len({r[key] for r in runs}) < 2:
        what = "concurrencies" if key == "max_concurrency" else "request rates"
        raise ValueError(f"results must hold runs at two or more {what} (a curve); got "
                         f"{len(runs)} run(s) at {sorted({r[key] for r in runs})}")
    return sorted(runs, key=lambda r: r[key])


def recorded_model(result) -> str | None:
    """The model a benchmark result file records, or ``None`` where it records none.

    ``vllm bench serve --save-result`` writes the served model as ``model_id`` (the Hugging
    Face repo id or the local path ``vllm serve`` was given); ``trtllm-bench --report_json``
    as ``engine.model``; a GuideLLM report as each benchmark's ``config.backend.model`` (the
    backend's ``--model``, GuideLLM 0.4 on) or ``worker.backend_model`` (0.3). A file of runs
    one a line, or a report of several benchmarks, records one where every run records the
    same (SGLang's ``bench_serving`` lines record none; a GuideLLM run without ``--model``
    records none, or the text ``"None"``). ``vllm bench latency`` JSON and trtllm-bench's
    logged text are read as ``None`` (no field of theirs names the model for certain). No
    format records the GPU.

    Parameters
    ----------
    result : str, Path or mapping
        The JSON file (a GuideLLM report also ``.yaml``/``.yml``, with PyYAML), or its parsed
        content.

    Returns
    -------
    str or None
        The recorded name, stripped; ``None`` where the field is absent or empty.

    Raises
    ------
    ValueError
        A file that is not a JSON object, or a recorded name that is not a string, naming the
        file and the field.
    """
    if isinstance(result, (str, Path)) and Path(result).suffix.lower() in (".yaml", ".yml"):
        return _guidellm_model(result)
    names = set()
    for payload, label in _serve_runs(result, "benchmark result"):
        if isinstance(payload.get("benchmarks"), list):          # a GuideLLM report
            names.add(_guidellm_model(payload, label))
            continue
        names.add(_named(payload, label, ("model_id", "engine.model")))
    # a file of runs a line records a model only where every line records the same one
    return names.pop() if len(names) == 1 else None


def _named(payload: Mapping, label: str, fields, at: str = "") -> str | None:
    """The first of ``fields`` (dotted) that ``payload`` gives a non-empty name in, stripped;
    ``None`` where none does (GuideLLM 0.3 writes an unknown model as ``"None"``)."""
    for field in fields:
        value = _get(payload, field, label, "benchmark result", required=False)
        if value is None:
            continue
        if not isinstance(value, str):
            raise ValueError(f"{label}: field {at + field!r} must be a string (the served "
                             f"model); got {describe(value)[:80]}")
        if value.strip() and value.strip() != "None":
            return value.strip()
    return None


def _guidellm_model(report, label: str | None = None) -> str | None:
    """The model every benchmark of a GuideLLM report records (:func:`recorded_model`), or
    ``None``."""
    _, found, benchmarks = _guidellm_benchmarks(report)
    label = label or found
    names = {_named(bench, label, ("config.backend.model", "worker.backend_model"),
                    at=f"{where}.")
             for where, bench, _ in benchmarks}
    return names.pop() if len(names) == 1 else None


def _guidellm_benchmarks(report) -> tuple:
    """``(payload, label, [(where, benchmark, strategy), ...])`` of a GuideLLM report: its
    non-empty ``benchmarks`` list, each an object, with its ``config.strategy`` (``args.strategy``
    before GuideLLM 0.4; ``None`` where neither is given)."""
    what = "GuideLLM report"
    payload, label = _load(report, what, yaml=True)
    benchmarks = payload.get("benchmarks")
    if not isinstance(benchmarks, list) or not benchmarks:
        raise ValueError(f"{label}: a GuideLLM report holds a non-empty 'benchmarks' list; got "
                         f"{describe(benchmarks)[:80]}")
    out = []
    for i, bench in enumerate(benchmarks):
        where = f"benchmarks[{i}]"
        if not isinstance(bench, Mapping):
            raise ValueError(f"{label}: {where} must be an object; got {describe(bench)[:80]}")
        strategy = (_get(bench, "config.strategy", label, what, required=False)
                    or _get(bench, "args.strategy", label, what, required=False))
        out.append((where, bench, strategy))
    return payload, label, out


#: Gamma burstiness standing for GuideLLM's ``constant`` strategy (requests at fixed intervals):
#: shape 10,000, a coefficient of variation of 1 %: regular to well within a step.
REGULAR_BURSTINESS = 1e4


def _guidellm_lengths(bench: Mapping, where: str, label: str, prompt_mean: float,
                      output_mean: float) -> tuple[tuple, tuple] | None:
    """``(prompt_lengths, output_lengths)`` [tokens] of a GuideLLM benchmark's successful
    requests as its report keeps them (``requests.successful``, each with ``prompt_tokens`` and
    ``output_tokens``), scaled to the benchmark's mean counts; ``None`` where it keeps none
    (``--sample-requests 0``) or a kept request lacks a count (a server that reports no usage).

    GuideLLM keeps a reservoir sample of the requests (``--sample-requests``; every request
    where not set): their spread is the run's, their mean a sample's, so each length is
    ``max(round(x · mean / x̄), lowest)`` with the run's mean (``metrics.prompt_token_count`` and
    ``output_token_count``), ``lowest`` 0 for a prompt and 1 for a reply (a reply of 0 tokens
    is one token generated, as in :func:`_recorded_lengths`)."""
    kept = _get(bench, "requests.successful", label, "GuideLLM report", required=False)
    if kept is None:
        return None
    field = f"{where}.requests.successful"
    if isinstance(kept, (str, bytes)) or not isinstance(kept, Sequence):
        raise ValueError(f"{label}: field {field!r} must be a list (one entry per kept "
                         f"request); got {describe(kept)[:80]}")
    if not kept:
        return None
    counts = {"prompt_tokens": [], "output_tokens": []}
    for j, request in enumerate(kept):
        if not isinstance(request, Mapping):
            raise ValueError(f"{label}: {field}[{j}] must be an object; got "
                             f"{describe(request)[:80]}")
        for key, column in counts.items():
            if request.get(key) is None:
                return None
            column.append(request[key])
    prompts, outputs = (check_count_array(f"{label}: field '{field}[].{key}'", column)
                        for key, column in counts.items())
    return scaled_lengths(prompts, outputs, prompt_mean, output_mean)


def read_guidellm_sweep(report) -> list[dict]:
    """The points of a GuideLLM sweep, as :func:`read_vllm_serve_sweep` gives vLLM's: its
    rate points, or, in a report without any, its concurrency points.

    Parameters
    ----------
    report : str, Path or mapping
        A GuideLLM report (:func:`read_guidellm_report` says which versions and formats).

    Returns
    -------
    list of dict
        One per benchmark whose strategy is ``constant`` or ``poisson`` (``--profile sweep``,
        ``constant`` or ``poisson``), by rising rate, or, where there is none, one per
        ``concurrent`` benchmark (``--profile concurrent``: a closed loop of ``streams``
        clients; a ``synchronous`` one is one stream), by rising concurrency (``throughput``
        benchmarks are neither): ``request_rate`` [requests/s] (the strategy's ``rate``;
        ``inf`` for a closed loop), ``max_concurrency`` [1] (the streams; ``None`` for a
        rate), ``completed`` (``metrics.request_totals.successful``), ``total_input_tokens``
        and ``total_output_tokens`` (the successful means × completed), ``mean_ttft_ms``,
        ``mean_tpot_ms`` (GuideLLM's per-request ``inter_token_latency_ms``, vLLM's TPOT),
        ``median_ttft_ms`` (``None`` where the report gives no median),
        ``burstiness`` (``None`` for Poisson arrivals and closed loops;
        :data:`REGULAR_BURSTINESS` for ``constant``, requests at fixed intervals), ``label``,
        and, where the report keeps its requests with their token counts, ``prompt_lengths``
        and ``output_lengths`` [tokens] (:func:`_guidellm_lengths`: their spread at the run's
        means), which :func:`rooflinekit.fit_under_load` replays.

    Raises
    ------
    ValueError
        Fewer than two rates (or, without rates, two concurrencies), or a field missing or not
        a finite number, naming the file, the benchmark and the field.
    """
    what = "GuideLLM report"
    _, label, benchmarks = _guidellm_benchmarks(report)
    kinds = {where: strategy.get("type_") if isinstance(strategy, Mapping) else None
             for where, _, strategy in benchmarks}
    rates = any(kind in ("constant", "poisson") for kind in kinds.values())
    taken = ("constant", "poisson") if rates else ("concurrent", "synchronous")
    runs = []
    for where, bench, strategy in benchmarks:
        kind = kinds[where]
        if kind not in taken:
            continue
        if kind in ("constant", "poisson"):
            rate, clients = _number(strategy.get("rate"), label,
                                    f"{where}.config.strategy.rate"), None
            point = f"{kind} {rate:g}/s"
        else:
            rate, clients = math.inf, 1
            if kind == "concurrent":
                field = f"{where}.config.strategy.streams"
                streams = _number(strategy.get("streams"), label, field)
                if streams != math.floor(streams) or not 1 <= streams <= MAX_CONCURRENCY:
                    raise ValueError(f"{label}: field {field!r} must be a whole number in "
                                     f"[1, {MAX_CONCURRENCY:,}]; got {show(streams)}")
                clients = int(streams)
            point = f"{clients} concurrent"
        metric = functools.partial(_metric, bench, where, label)
        completed = _number(_get(bench, "metrics.request_totals.successful", label, what,
                                 at=f"{where}."), label,
                            f"{where}.metrics.request_totals.successful")
        prompt_mean = metric("prompt_token_count", "successful", "mean")
        output_mean = metric("output_token_count", "successful", "mean")
        run = {"request_rate": rate, "max_concurrency": clients, "completed": completed,
               "total_input_tokens": prompt_mean * completed,
               "total_output_tokens": output_mean * completed,
               "mean_ttft_ms": metric("time_to_first_token_ms", "successful", "mean"),
               "mean_tpot_ms": metric("inter_token_latency_ms", "successful", "mean"),
               "median_ttft_ms": metric("time_to_first_token_ms", "successful", "median",
                                        required=False),
               "burstiness": REGULAR_BURSTINESS if kind == "constant" else None,
               "label": f"{label} {where} ({point})"}
        for field in ("request_rate", "completed", "mean_ttft_ms", "mean_tpot_ms",
                      "total_input_tokens", "total_output_tokens", "median_ttft_ms"):
            if run[field] is not None and not run[field] > 0:
                raise ValueError(f"{label}: {where}: {field} must be > 0; got {run[field]:g}")
        recorded = _guidellm_lengths(bench, where, label, prompt_mean, output_mean)
        if recorded is not None:
            run["prompt_lengths"], run["output_lengths"] = recorded
        runs.append(run)
    key = "request_rate" if rates else "max_concurrency"
    if len({r[key] for r in runs}) < 2:
        raise ValueError(f"{label}: a load fit needs constant or poisson benchmarks at two or "
                         f"more rates, or concurrent ones at two or more stream counts (a "
                         f"GuideLLM sweep); got {len(runs)}")
    return sorted(runs, key=lambda r: r[key])


# -- vllm bench latency ------------------------------------------------------------------------

def _latency_ms(payload: Mapping, label: str, statistic: str) -> tuple[float, int | None]:
    """The run's batch latency [ms] by ``statistic``, and how many iterations it summarises."""
    if statistic == "median":
        # json.dump writes the int percentages (10, 25, 50, ...) as string keys
        percentiles = payload.get("percentiles")
        if not isinstance(percentiles, Mapping) or percentiles.get("50") is None:
            raise ValueError(f"{label}: the vllm bench latency result lacks field "
                             f"'percentiles.50' (the median latency)")
        seconds = _number(percentiles["50"], label, "percentiles.50")
    else:
        seconds = _number(_get(payload, "avg_latency", label, "vllm bench latency result"),
                          label, "avg_latency")
    if seconds <= 0:
        raise ValueError(f"{label}: the batch latency must be > 0 s; got {show(seconds)}")
    latencies = payload.get("latencies")
    iterations = len(latencies) if isinstance(latencies, list) else None
    return seconds / units.MS, iterations


def read_vllm_latency(result, *, model: str, gpu: str, tp: int = 1, batch_size: int,
                      prompt_tokens: int, output_tokens: int, dtype: str | None = None,
                      kv_dtype: str | None = None, ttft_ms: float | None = None, prefill=None,
                      statistic: str = "median", engine: str | None = "vllm",
                      source: str | None = None) -> xr.Dataset:
    """One measurement row from the JSON of ``vllm bench latency --output-json``.

    ``vllm bench latency`` (formerly ``benchmarks/benchmark_latency.py``) times one static
    batch's ``llm.generate`` call in process, ``--num-iters`` times: ``--batch-size`` prompts
    of ``--input-len`` random tokens, each decoded to exactly ``--output-len`` tokens
    (``ignore_eos``). Its JSON holds only those wall times [s]: ``avg_latency``,
    ``std_latency`` (newer versions), ``latencies`` (one per iteration) and ``percentiles``
    (keys ``"10"`` ... ``"99"``); the configuration comes as arguments, named after vLLM's flags.

    The number is the **end-to-end latency of a static batch**: one prefill of ``batch_size ×
    prompt_tokens`` tokens, then ``output_tokens - 1`` decode steps of the whole batch. With
    ``output_tokens == 1`` it *is* the batch's TTFT (``ttft_kind="static_batch"``). Above 1 it
    needs the TTFT of the same batch (``ttft_ms=``, or ``prefill=``: the same command's JSON
    with ``--output-len 1``); the row then holds that TTFT and the TPOT ``(latency - TTFT) /
    (output_tokens - 1)`` (vLLM's definition, first token excluded). Without one it is refused:
    splitting it by a modelled prefill would make the row repeat the model it is meant to test.
    The latency itself is kept in ``notes`` (the fit compares TTFT and TPOT, not end to end).

    Parameters
    ----------
    result : str, Path or mapping
        Path of the JSON file, or its parsed content.
    model, gpu : str
        Catalogue names (or names given to :func:`~rooflinekit.calibrate.calibrate`).
    tp : int
        ``--tensor-parallel-size`` of the run. Default 1.
    batch_size : int
        ``--batch-size`` [sequences] (times ``--n`` when ``--n > 1``: the sequences decoded
        together). Beam search (``--use-beam-search``) is not a batch of this kind.
    prompt_tokens : int
        ``--input-len`` [tokens].
    output_tokens : int
        ``--output-len`` [tokens], ≥ 1.
    dtype, kv_dtype : str, optional
        ``--quantization`` / ``--kv-cache-dtype`` when they differ from the model's.
    ttft_ms : float, optional
        The TTFT of the same batch [ms], ≥ 0, to split a run of ``output_tokens > 1``.
    prefill : str, Path or mapping, optional
        Instead of ``ttft_ms``: the JSON of the same command with ``--output-len 1``; its latency
        (by the same ``statistic``) is the TTFT.
    statistic : {"median", "mean"}
        ``percentiles["50"]`` or ``avg_latency``. Default "median".
    engine : str, optional
        The ``engine`` column. Default "vllm" (the tool runs vLLM's engine in process; the file
        does not say which version: give ``"vllm 0.10.1"`` to record it).
    source : str, optional
        Provenance; default names the file, the configuration and the iterations.

    Returns
    -------
    xarray.Dataset
        One row in the format of
        :func:`~rooflinekit.calibrate.measurements.measurements_from_records`, with
        ``output_throughput = batch_size × output_tokens / latency`` [tokens/s].

    Raises
    ------
    ValueError
        A configuration out of range; a field missing or not a number (naming the file and the
        field); a latency not above the TTFT; a run of ``output_tokens > 1`` without a TTFT.
    TypeError
        ``result`` neither a path nor a mapping; a name (``model``, ``gpu``, ``source``,
        ``engine``, a format) not a string; a count not a whole number.

    See Also
    --------
    read_vllm_result : ``vllm bench serve`` results.
    read_guidellm_report, read_trtllm_bench : the other engine benchmark readers.

    Notes
    -----
    With chunked prefill (vLLM V1's default) a batch whose ``batch_size × prompt_tokens``
    exceeds ``--max-num-batched-tokens`` is prefilled over several steps, some overlapping the
    first decodes; keep the product within that budget for rows that mean what they say. The
    latency includes sampling and detokenization (``--disable-detokenize`` removes the latter).

    References
    ----------
    .. [1] vLLM ``vllm/benchmarks/latency.py`` at ``00cae0753b8d50118a960888a6aff57f9b098ac6``,
       ``main()``: the ``results`` dict written by ``--output-json``; ``benchmarks/
       benchmark_latency.py`` at ``00db02095a5d578c18383609a00fa0c6e7fc8db8`` (the same keys
       without ``std_latency``).
    """
    _check_common(model, gpu, source, engine, dtype, kv_dtype)
    tp = whole_number("tp", tp, lo=1)
    batch_size = whole_number("batch_size", batch_size, lo=1)
    prompt_tokens = whole_number("prompt_tokens", prompt_tokens, lo=1)
    output_tokens = whole_number("output_tokens", output_tokens, lo=1)
    ttft_ms = real_number("ttft_ms", ttft_ms, lo=0, allow_none=True)
    check_one_of("statistic", statistic, _STATISTICS)
    if ttft_ms is not None and prefill is not None:
        raise ValueError("give ttft_ms or prefill, not both: each is the batch's TTFT")
    if output_tokens == 1 and (ttft_ms is not None or prefill is not None):
        raise ValueError("a run of output_tokens=1 is itself the batch's TTFT; ttft_ms and "
                         "prefill split runs of more output tokens")
    payload, label = _load(result, "vllm bench latency result")
    latency, iterations = _latency_ms(payload, label, statistic)
    ttft_from = None
    if prefill is not None:
        prefill_payload, prefill_label = _load(prefill, "prefill result")
        ttft_ms, _ = _latency_ms(prefill_payload, prefill_label, statistic)
        ttft_from = prefill_label
    row = {"model": model, "gpu": gpu, "tp": tp, "dtype": dtype, "kv_dtype": kv_dtype,
           "batch_size": batch_size, "prompt_tokens": prompt_tokens,
           "output_tokens": output_tokens, "ttft_kind": "static_batch", "engine": engine,
           "output_throughput": batch_size * output_tokens / (latency * units.MS)}
    how = f"{statistic} batch latency {latency:.6g} ms"
    if output_tokens == 1:
        row["ttft_ms"] = latency
        how += " = TTFT (one prefill step of the whole batch)"
    elif ttft_ms is None:
        raise ValueError(f"{label}: a vllm bench latency run of output_tokens={output_tokens} is "
                         f"prefill and decode together; give ttft_ms= or prefill= (the same "
                         f"batch run with --output-len 1) to split it into TTFT and TPOT")
    else:
        if not latency > ttft_ms:
            raise ValueError(f"{label}: the batch latency {latency:.6g} ms must exceed the TTFT "
                             f"{ttft_ms:.6g} ms it contains")
        row["ttft_ms"] = ttft_ms
        row["tpot_ms"] = (latency - ttft_ms) / (output_tokens - 1)
        how += (f"; TTFT {ttft_ms:.6g} ms" + (f" from {ttft_from}" if ttft_from else "")
                + f"; TPOT = (latency - TTFT) / {output_tokens - 1}")
    if source is None:
        source = (f"vllm bench latency {Path(label).name} (batch_size={batch_size}, "
                  f"input_len={prompt_tokens}, output_len={output_tokens}, "
                  f"iterations={iterations if iterations is not None else '?'})")
    row["source"] = source
    row["notes"] = how
    return _table([row], label, result)


# -- GuideLLM ----------------------------------------------------------------------------------

def _metric(bench: Mapping, where: str, label: str, name: str, status: str, stat: str,
            required: bool = True):
    """One statistic of one GuideLLM metric (``metrics.<name>.<status>.<stat>``)."""
    field = f"metrics.{name}.{status}.{stat}"
    value = _get(bench, field, label, "GuideLLM report", required=required, at=f"{where}.")
    return _number(value, label, f"{where}.{field}", required=required)


def read_guidellm_report(report, *, model: str, gpu: str, tp: int = 1, dtype: str | None = None,
                         kv_dtype: str | None = None, engine: str | None = None,
                         source: str | None = None, statistic: str = "median") -> xr.Dataset:
    """One measurement row per benchmark of a GuideLLM report (its JSON or YAML output).

    A GuideLLM report (``GenerativeBenchmarksReport``) holds ``benchmarks``, one per strategy
    it ran (a sweep runs synchronous, throughput and a series of constant rates). Each has the
    scheduling strategy (``config.strategy``, ``args.strategy`` before GuideLLM 0.4:
    ``type_``, and ``streams`` or ``rate``) and ``metrics``, each metric a
    ``StatusDistributionSummary`` (``successful``, ``incomplete``, ``errored``, ``total``, each
    with ``mean``, ``median``, ``percentiles``...).

    Each row maps ``batch_size`` ← 1 for ``synchronous``, ``streams`` for ``concurrent``, else
    the time-averaged concurrency ``metrics.request_concurrency.total.mean`` (Little's law, as
    :func:`~rooflinekit.calibrate.read_vllm_result`); ``prompt_tokens``, ``output_tokens`` ←
    ``metrics.prompt_token_count`` and ``output_token_count``, ``.successful.mean``;
    ``ttft_ms`` ← ``metrics.time_to_first_token_ms.successful.<statistic>``; ``tpot_ms`` ←
    ``metrics.inter_token_latency_ms.successful.<statistic>``, GuideLLM's per-request ITL
    ``(last token - first token) / (output tokens - 1)``: vLLM's TPOT (its
    ``time_per_output_token_ms`` counts the first token too, so is not a decode step and is not
    read); ``output_throughput`` ← ``metrics.output_tokens_per_second.total.mean``; ``engine``
    ← ``engine=``, as GuideLLM, the client, does not record the server (its own version,
    ``metadata.guidellm_version``, goes into ``notes``).

    Parameters
    ----------
    report : str, Path or mapping
        Path of the report, JSON (``--output kind=json``; older: ``--output-path x.json``)
        or YAML (a ``.yaml`` or ``.yml`` path; GuideLLM writes the same content either way,
        and reading YAML needs PyYAML, ``pip install rooflinekit[yaml]``), or its parsed
        content.
    model, gpu : str
        Catalogue names of the server's model and GPU.
    tp : int
        Tensor-parallel degree of the server. Default 1.
    dtype, kv_dtype : str, optional
        Weight and KV formats when they differ from the model's.
    engine : str, optional
        The server's engine and version ("vllm 0.10.1", "sglang 0.4.1").
    source : str, optional
        Provenance; default names the file, the benchmark's index and strategy.
    statistic : {"median", "mean"}
        Which statistic of TTFT and TPOT to record. Default "median".

    Returns
    -------
    xarray.Dataset
        One row per benchmark, in order, in the format of
        :func:`~rooflinekit.calibrate.measurements.measurements_from_records`.

    Raises
    ------
    ValueError
        No ``benchmarks``; a field missing or not a number (naming the file, the benchmark and
        the field).
    ImportError
        A YAML report without PyYAML installed.
    TypeError
        ``report`` neither a path nor a mapping; a name (``model``, ``gpu``, ``source``,
        ``engine``, a format) not a string; ``tp`` not a whole number.

    See Also
    --------
    read_vllm_latency, read_trtllm_bench : the other engine benchmark readers.

    References
    ----------
    .. [1] GuideLLM at ``ee7a77457ba668b4b5ccb40f110518829893b36a``:
       ``src/guidellm/benchmark/schemas/report.py`` (``GenerativeBenchmarksReport``:
       ``metadata``, ``benchmarks``), ``benchmark.py`` (``GenerativeBenchmark``: ``config``,
       ``metrics``), ``base.py`` (``BenchmarkConfig.strategy``), ``metrics.py``
       (``GenerativeMetrics``), ``src/guidellm/schemas/request_stats.py``
       (``inter_token_latency_ms``, ``time_per_output_token_ms``),
       ``src/guidellm/scheduler/strategies.py`` (``type_``, ``streams``, ``rate``);
       ``src/guidellm/benchmark/benchmark.py`` at v0.3.0 (``args.strategy``, the same metrics).
    .. [2] GuideLLM ``src/guidellm/benchmark/schemas/generative/report.py`` at
       ``03820eba155d34eb602244535cc2412c32af6f54``: ``GenerativeBenchmarksReport.save_file``
       writes ``json.dumps`` or ``yaml.dump`` of the same ``model_dump()`` by the path's suffix
       (``.json``, ``.yaml``, ``.yml``), and ``load_file`` reads YAML with ``yaml.safe_load``.
    """
    _check_common(model, gpu, source, engine, dtype, kv_dtype)
    tp = whole_number("tp", tp, lo=1)
    check_one_of("statistic", statistic, _STATISTICS)
    what = "GuideLLM report"
    payload, label, benchmarks = _guidellm_benchmarks(report)
    version = _get(payload, "metadata.guidellm_version", label, what, required=False)
    tool = "guidellm" + (f" {_shown(version)}" if isinstance(version, str) else "")
    rows = []
    for where, bench, strategy in benchmarks:
        if not isinstance(strategy, Mapping):
            raise ValueError(f"{label}: the {what} lacks field '{where}.config.strategy'")
        kind = _shown(_get(strategy, "type_", label, what, at=f"{where}.config.strategy."))
        metric = functools.partial(_metric, bench, where, label)
        if kind == "synchronous":
            batch = 1.0
            setting = ""
        elif kind == "concurrent":
            batch = _number(_get(strategy, "streams", label, what,
                                 at=f"{where}.config.strategy."), label,
                            f"{where}.config.strategy.streams")
            setting = f", streams={batch:g}"
        else:
            batch = metric("request_concurrency", "total", "mean")
            rate = strategy.get("rate")
            setting = f", rate={_shown(rate)}" if rate is not None else ""
        rows.append({
            "model": model, "gpu": gpu, "tp": tp, "dtype": dtype, "kv_dtype": kv_dtype,
            "batch_size": batch,
            "prompt_tokens": metric("prompt_token_count", "successful", "mean"),
            "output_tokens": metric("output_token_count", "successful", "mean"),
            "ttft_ms": metric("time_to_first_token_ms", "successful", statistic),
            "tpot_ms": metric("inter_token_latency_ms", "successful", statistic),
            "output_throughput": metric("output_tokens_per_second", "total", "mean",
                                        required=False),
            "engine": engine,
            "source": source or f"{tool} {Path(label).name} {where} ({kind}{setting})",
            "notes": f"{tool}: strategy {kind}{setting}; {statistic} TTFT and per-request "
                     f"inter-token latency (first token excluded) as TPOT; batch_size "
                     + ("the strategy's" if kind in ("synchronous", "concurrent")
                        else "the time-averaged concurrency"),
        })
    return _table(rows, label, report)


# -- trtllm-bench ------------------------------------------------------------------------------

_NUM = r"([-+]?[0-9][0-9,]*(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)"
# (field of get_statistics_dict, pattern of report_statistics' logged line)
_TRTLLM_TEXT = (
    ("engine.version", r"TensorRT[- ]?LLM Version:[ \t]*(\S+)"),
    ("engine.model", r"(?m)^[ \t]*Model:[ \t]*(\S+)"),
    ("engine.dtype", r"(?m)^[ \t]*Dtype:[ \t]*(\S+)"),
    ("engine.kv_cache_dtype", r"(?m)^[ \t]*KV Cache Dtype:[ \t]*(\S+)"),
    ("engine.quantization", r"(?m)^[ \t]*Quantization:[ \t]*(\S+)"),
    ("world_info.tp_size", rf"TP Size:\s*{_NUM}"),
    ("world_info.pp_size", rf"PP Size:\s*{_NUM}"),
    ("world_info.ep_size", rf"EP Size:\s*{_NUM}"),
    ("request_info.num_requests", rf"Number of requests:\s*{_NUM}"),
    ("request_info.avg_num_concurrent_requests", rf"Number of concurrent requests:\s*{_NUM}"),
    ("request_info.avg_input_length", rf"Average Input Length \(tokens\):\s*{_NUM}"),
    ("request_info.avg_output_length", rf"Average Output Length \(tokens\):\s*{_NUM}"),
    ("performance.system_output_throughput_tok_s",
     rf"Total Output Throughput \(tokens/sec\):\s*{_NUM}"),
    ("streaming_metrics.avg_ttft_ms", rf"Average time-to-first-token \[TTFT\] \(ms\):\s*{_NUM}"),
    ("streaming_metrics.avg_tpot_ms",
     rf"Average time-per-output-token \[TPOT\] \(ms\):\s*{_NUM}"),
    ("streaming_metrics.ttft_percentiles.p50", rf"\[TTFT\] P50\s*:\s*{_NUM}"),
    ("streaming_metrics.ttft_percentiles.average", rf"\[TTFT\] AVERAGE\s*:\s*{_NUM}"),
    ("streaming_metrics.tpot_percentiles.p50", rf"\[TPOT\] P50\s*:\s*{_NUM}"),
    ("streaming_metrics.tpot_percentiles.average", rf"\[TPOT\] AVERAGE\s*:\s*{_NUM}"),
)
_TRTLLM_WORDS = ("engine.version", "engine.model", "engine.dtype", "engine.kv_cache_dtype",
                 "engine.quantization")


def _trtllm_text(text: str, label: str) -> dict:
    """The logged report as the nested dict ``--report_json`` writes (the fields it prints)."""
    payload: dict = {}
    for field, pattern in _TRTLLM_TEXT:
        matches = re.findall(pattern, text)
        if not matches:
            continue
        raw = matches[-1]            # a log of several runs: the last report wins
        if field in _TRTLLM_WORDS:
            value = raw
        else:
            value = float(raw.replace(",", ""))
            if not abs(value) <= MAX_MAGNITUDE:      # 400-digit figures overflow to inf
                raise ValueError(f"{label}: the report's {field} figure must be at most "
                                 f"{MAX_MAGNITUDE:g}; got {raw[:40]}"
                                 f"{'...' if len(raw) > 40 else ''}")
        section, _, key = field.partition(".")
        node = payload.setdefault(section, {})
        if "." in key:
            key, _, sub = key.partition(".")
            node = node.setdefault(key, {})
            key = sub
        node[key] = value
    if "request_info" not in payload:
        raise ValueError(f"{label}: not a trtllm-bench report: no 'REQUEST DETAILS' lines "
                         f"(Average Input Length (tokens): ...)")
    # the section title says which backend ran (get_statistics_dict's engine.backend)
    if "= PYTORCH BACKEND" in text:
        payload.setdefault("engine", {})["backend"] = "Pytorch"
    elif "= ENGINE DETAILS" in text:
        payload.setdefault("engine", {})["backend"] = "TRT"
    return payload


def read_trtllm_bench(report, *, model: str, gpu: str, tp: int | None = None,
                      dtype: str | None = None, kv_dtype: str | None = None,
                      engine: str | None = None, source: str | None = None,
                      statistic: str = "median") -> xr.Dataset:
    """One measurement row from a ``trtllm-bench throughput`` report, JSON or logged text.

    ``trtllm-bench throughput --report_json FILE`` writes ``get_statistics_dict()``: ``engine``
    (``model``, ``version``, ``backend``, ``dtype``, ``kv_cache_dtype``, ``quantization``),
    ``world_info`` (``tp_size``, ``pp_size``, ...), ``request_info``, ``performance`` and, with
    ``--streaming``, ``streaming_metrics`` (``ttft_percentiles``, ``tpot_percentiles``, each
    with ``p50`` ... ``p99``, ``average`` [ms]). The same figures are logged as text
    (``report_statistics``: "Average Input Length (tokens): ...", "[TPOT] P50    : ..."); a
    string with a line break, or a file that is not JSON, is read as that text.

    The row maps ``batch_size`` ← ``avg_num_concurrent_requests`` (the sum of request latencies
    over the run's span: Little's law), ``prompt_tokens``/``output_tokens`` ←
    ``avg_input_length``/``avg_output_length``, ``ttft_ms`` ← ``ttft_percentiles``, ``tpot_ms``
    ← ``tpot_percentiles`` (per request, ``(end - first token) / (output tokens - 1)``: vLLM's
    TPOT), ``output_throughput`` ← ``system_output_throughput_tok_s``, ``tp`` ← ``tp_size``,
    ``engine`` ← "tensorrt-llm <version>", and ``dtype``/``kv_dtype`` from ``quantization`` /
    ``kv_cache_dtype`` when the report names a format (FP8, NVFP4, ...).

    Parameters
    ----------
    report : str, Path or mapping
        Path of the JSON report or of a log holding the text report, the report's text, or the
        parsed JSON.
    model, gpu : str
        Catalogue names; ``engine.model`` (the Hugging Face name) goes into ``source``.
    tp : int, optional
        Tensor-parallel degree; default the report's ``tp_size``, which it must equal if given.
    dtype, kv_dtype : str, optional
        Override the formats read from the report (needed when it names a scheme such as
        ``W4A16_AWQ``, which is no single format).
    engine : str, optional
        Override the engine column.
    source : str, optional
        Provenance; default names the file, the model and the requests.
    statistic : {"median", "mean"}
        ``p50`` or ``average`` of TTFT and TPOT. Default "median".

    Returns
    -------
    xarray.Dataset
        One row in the format of
        :func:`~rooflinekit.calibrate.measurements.measurements_from_records`.

    Raises
    ------
    ValueError
        No streaming metrics (the run lacked ``--streaming``: no TTFT or TPOT); pipeline
        parallelism (``pp_size > 1``, which the format does not hold); ``tp`` differing from the
        report's; a field missing or not a number (naming the file and the field).
    TypeError
        ``report`` not a path, the report's text or a mapping; a name (``model``, ``gpu``,
        ``source``, ``engine``, a format) not a string; ``tp`` not a whole number or None.

    See Also
    --------
    read_vllm_latency, read_guidellm_report : the other engine benchmark readers.

    Notes
    -----
    TensorRT-LLM's percentiles are order statistics, ``sorted(values)[int(n × q)]``: its p50 of
    an even count is the upper of the two middle values.

    References
    ----------
    .. [1] TensorRT-LLM ``tensorrt_llm/bench/dataclasses/reporting.py`` at
       ``2787769cae353023784dce105d648bcd4d04f4d4``: ``ReportUtility.get_statistics_dict``
       (the JSON) and ``report_statistics`` (the logged text);
       ``tensorrt_llm/bench/dataclasses/statistics.py`` at
       ``77d7fe1eb2d89753ae33a0745d1083c133064f92`` (``PercentileStats``,
       ``RequestRecord.intertoken_latency``, ``avg_concurrent_requests``).
    """
    _check_common(model, gpu, source, engine, dtype, kv_dtype)
    tp = whole_number("tp", tp, lo=1, allow_none=True)
    check_one_of("statistic", statistic, _STATISTICS)
    what = "trtllm-bench report"
    if isinstance(report, str) and "\n" in report:
        label = what
        payload = (parse_json(report, what) if report.lstrip().startswith("{")
                   else _trtllm_text(report, label))
    elif isinstance(report, (str, Path)):
        path = Path(report)
        label = str(path)
        text = _read_text(path)
        payload = (parse_json(text, label) if text.lstrip().startswith("{")
                   else _trtllm_text(text, label))
    elif isinstance(report, Mapping):
        payload, label = report, what
    else:
        raise TypeError(f"report must be a path, the report's text or a mapping; got "
                        f"{describe(report)}")
    if not isinstance(payload, Mapping):
        raise ValueError(f"{label}: a {what} holds a JSON object; got {describe(payload)[:80]}")

    def field(name, required=True):
        return _number(_get(payload, name, label, what, required=required), label, name,
                       required=required)

    if not isinstance(payload.get("streaming_metrics"), Mapping):
        raise ValueError(f"{label}: the {what} has no streaming metrics (TTFT, TPOT): run "
                         f"trtllm-bench throughput with --streaming")
    stat = "p50" if statistic == "median" else "average"
    logged_tp = field("world_info.tp_size")
    pp = field("world_info.pp_size", required=False)
    if pp is not None and pp > 1:
        raise ValueError(f"{label}: pp_size={pp:g}: measurements hold tensor parallelism only")
    if tp is not None and tp != logged_tp:
        raise ValueError(f"tp={tp} differs from the report's tp_size={logged_tp:g} ({label})")
    version = _get(payload, "engine.version", label, what, required=False)
    backend = _get(payload, "engine.backend", label, what, required=False)
    if engine is None:
        engine = "tensorrt-llm" + (f" {_shown(version)}" if version is not None else "")
    hf_model = _get(payload, "engine.model", label, what, required=False)
    hf_model = None if hf_model is None else _shown(hf_model)
    backend = None if backend is None else _shown(backend)
    requests = field("request_info.num_requests", required=False)
    if source is None:
        source = (f"trtllm-bench {Path(label).name} (model={hf_model or '?'}, "
                  f"requests={'?' if requests is None else f'{requests:g}'})")
    ep = field("world_info.ep_size", required=False)
    row = {
        "model": model, "gpu": gpu, "tp": logged_tp,
        "dtype": _format("quantization", _get(payload, "engine.quantization", label, what,
                                                 required=False), label, dtype),
        "kv_dtype": _format("kv_cache_dtype", _get(payload, "engine.kv_cache_dtype", label,
                                                      what, required=False), label, kv_dtype),
        "batch_size": field("request_info.avg_num_concurrent_requests"),
        "prompt_tokens": field("request_info.avg_input_length"),
        "output_tokens": field("request_info.avg_output_length"),
        "ttft_ms": field(f"streaming_metrics.ttft_percentiles.{stat}"),
        "tpot_ms": field(f"streaming_metrics.tpot_percentiles.{stat}"),
        "output_throughput": field("performance.system_output_throughput_tok_s",
                                   required=False),
        "engine": engine, "source": source,
        "notes": f"trtllm-bench {statistic} TTFT and TPOT; batch_size the time-averaged "
                 f"concurrency" + (f"; backend {backend}" if backend else "")
                 + (f"; ep_size={ep:g}" if ep is not None else ""),
    }
    return _table([row], label, report)
