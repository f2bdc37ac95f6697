"""The engine profiles shipped with the package, and the rule that picks a planning answer's engine.

A profile is a :class:`~rooflinekit.profiles.Calibration` fitted for one serving engine
(:data:`ENGINE_NAMES`), one engine version and one GPU, kept as a row of
``rooflinekit/data/engine_profiles/<engine>.toml`` with its source, date, bootstrap intervals and
held-out errors. :func:`engine_profile` returns one; :data:`ENGINE_PROFILES` lists them;
:func:`resolve_engine` is the one rule by which every planning answer picks its engine: the vLLM
profile of its GPU unless told otherwise, the ideal roofline only when asked for by name.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import warnings
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import NamedTuple

import numpy as np

from rooflinekit import catalog
from rooflinekit._validation import check_one_of, read_toml_file
from rooflinekit.hardware import GPU
from rooflinekit.profiles.calibration import PHASES, Calibration
from rooflinekit.profiles.names import (DEFAULT_ENGINE, ENGINE_CHOICES, ENGINE_NAMES,
                                        is_engine_name, split_engine_name)
from rooflinekit.roofline import ALLREDUCE_MODELS, IDEAL, SHARE_KNOBS, Engine

__all__ = ["ENGINE_NAMES", "DEFAULT_ENGINE", "ENGINE_CHOICES", "ProfileKey", "ENGINE_PROFILES",
           "HostScheduling", "engine_name", "engine_profile", "host_scheduling", "is_engine_name",
           "profiled_engine", "read_profile_file", "resolve_engine", "split_engine_name"]

#: Fields every profile row holds, and what each must be.
_TEXT_FIELDS = ("gpu", "version", "date", "source")
_ERROR_FIELDS = ("held_out_error", "held_out_error_ttft", "model_size_error", "fit_error")
#: Held-out errors a row may state: leaving its GPU out with every GPU at its datasheet
#: bandwidth and peak (what a GPU without a measured streaming bandwidth can expect).
_OPTIONAL_ERROR_FIELDS = ("held_out_error_datasheet",)


class ProfileKey(NamedTuple):
    """One shipped profile: the engine, the GPU (catalogue name) and the engine version."""

    engine: str
    gpu: str
    version: str


def _version_key(version: str) -> tuple:
    """Orders versions by their numeric parts ("0.10.0" after "0.9.2"; suffixes last)."""
    parts = []
    for piece in version.replace("-", ".").split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append((int(digits) if digits and digits == piece else -1, piece))
    return tuple(parts)


@dataclasses.dataclass(frozen=True)
class HostScheduling:
    """When an engine's host work per step adds to its steps, and how long it takes.

    The host (the scheduler, input preparation, sampling bookkeeping and output processing)
    works once per step. An engine that schedules synchronously waits for it between steps, so
    every step takes ``synchronous_step_overhead`` longer than its kernels; one that schedules
    asynchronously prepares step ``n + 1`` while the GPU runs step ``n``, and the host's time
    hides behind the kernels' (a profile of such a version holds ``step_overhead`` 0).

    Attributes
    ----------
    synchronous_from : str
        The oldest engine version the synchronous host time was measured on.
    asynchronous_since : str
        The first version that schedules asynchronously by default; versions from
        ``synchronous_from`` up to before it schedule synchronously.
    synchronous_step_overhead : float
        The host's time per step that a synchronous engine adds to each decode step [s].
    synchronous_step_overhead_interval : tuple of float
        Its interval ``(low, high)`` [s].
    source : str
        Where the versions and the values come from.
    in_engine_frontend_before : str or None
        The first version not measured taking requests in at the engine's expense: versions
        from ``synchronous_from`` up to before it carry ``request_overhead``, the time a burst's
        first step waits for each prompt taken in (measured on vLLM 0.6.0, whose API server
        already had a process of its own). ``None``: no version carries it.
    request_overhead : float
        The engine's time per request taken in by such a version [s]
        (:attr:`rooflinekit.Engine.request_overhead`); 0 where none.
    request_overhead_interval : tuple of float
        Its interval ``(low, high)`` [s].
    """

    synchronous_from: str
    asynchronous_since: str
    synchronous_step_overhead: float
    synchronous_step_overhead_interval: tuple
    source: str
    in_engine_frontend_before: str | None = None
    request_overhead: float = 0.0
    request_overhead_interval: tuple = (0.0, 0.0)

    def synchronous(self, version: str) -> bool:
        """Whether ``version`` schedules synchronously: ``synchronous_from <= version <
        asynchronous_since`` (numeric parts compared; a version that is not dotted numbers,
        such as ``"latest"``, is not)."""
        if not isinstance(version, str) or not _VERSION.fullmatch(version.strip()):
            return False
        key = release_number(version)
        return release_number(self.synchronous_from) <= key < release_number(self.asynchronous_since)

    def in_engine_frontend(self, version: str) -> bool:
        """Whether ``version`` takes requests in at the engine's expense: a synchronous version
        before ``in_engine_frontend_before``."""
        return self.in_engine_frontend_before is not None and self.synchronous(version) and \
            release_number(version) < release_number(self.in_engine_frontend_before)

    def asynchronous(self, version: str) -> bool:
        """Whether ``version`` schedules asynchronously: a release number from
        ``asynchronous_since`` on."""
        return isinstance(version, str) and bool(_VERSION.fullmatch(version.strip())) and \
            release_number(version) >= release_number(self.asynchronous_since)


#: A release number: dotted integers, optionally with a suffix ("0.10.1.1", "0.11.0rc1").
_VERSION = re.compile(r"\d+(\.\d+){1,3}([.+-]?[A-Za-z0-9.]*)?")


def release_number(version: str) -> tuple:
    """The numeric parts of a release number, padded to four: ``"0.14"`` -> (0, 14, 0, 0),
    ``"1.1.0rc2.post2"`` -> (1, 1, 0, 0) (a suffix after the numbers is not read).

    Raises
    ------
    ValueError
        ``version`` does not start with a release number (two to four dotted integers).
    """
    head = re.match(r"\d+(\.\d+){1,3}", version.strip())
    if head is None:
        raise ValueError(f"version {version!r} is not a release number (such as '0.14.0')")
    parts = [int(p) for p in head.group(0).split(".")]
    return tuple(parts + [0] * (4 - len(parts)))


def _release_field(path, where: str, value, what: str) -> str:
    """A data file's release number (``"0.20.0"``), stripped, or the error naming the file
    and field."""
    if not isinstance(value, str) or not _VERSION.fullmatch(value.strip()):
        _fail(path, where, f"must be a release number such as '0.20.0'; got {value!r}",
              what=what)
    return value.strip()


def named_release(engine) -> tuple | None:
    """The release an engine name gives (``"vllm@0.24.0"`` -> ``(0, 24, 0, 0)``), or ``None``
    for ``None``, the name alone and a version that is not a release number
    (``"vllm@latest"``)."""
    version = split_engine_name(engine)[1] if engine is not None else None
    if version is None or not _VERSION.fullmatch(version):
        return None
    return release_number(version)


def _fail(path, where: str, message: str, kind=ValueError, what="engine profile file"):
    raise kind(f"{what} {path}: {where}: {message}")


def _tables(path, data, key: str, what="engine profile file"):
    """The ``[[key]]`` tables of a data file read as ``data``, each as ``(where, row)``; a
    missing or empty list, or an entry that is not a table, refused naming the file."""
    tables = data.get(key)
    if not isinstance(tables, list) or not tables:
        _fail(path, f"field '{key}'", f"must be one or more [[{key}]] tables", what=what)
    for i, row in enumerate(tables):
        where = f"{key}[{i}]"
        if not isinstance(row, Mapping):
            _fail(path, where, "must be a table", TypeError, what=what)
        yield where, row


def _engine_row(path, row, where: str, fields, known, what: str) -> dict:
    """One table of an engine data file: no field outside ``known``, the non-empty text
    ``fields`` (:func:`_texts`), and an ``engine`` among :data:`ENGINE_NAMES`; or the error
    naming the file, the row and the field."""
    unknown = sorted(set(row) - set(known))
    if unknown:
        _fail(path, where, f"unknown field(s) {', '.join(unknown)}", what=what)
    out = _texts(path, row, where, fields, what=what)
    if out["engine"] not in ENGINE_NAMES:
        _fail(path, f"{where}.engine", f"must be one of {', '.join(ENGINE_NAMES)}; got "
              f"{out['engine']!r}", what=what)
    return out


def _texts(path, row, where: str, fields, what="engine profile file") -> dict:
    """The non-empty text ``fields`` of one table of a data file, or the error naming them."""
    out = {}
    for field in fields:
        value = row.get(field)
        if not isinstance(value, str) or not value.strip():
            _fail(path, f"{where}.{field}", f"must be a non-empty string; got {value!r}",
                  what=what)
        out[field] = value
    return out


def read_profile_file(path) -> tuple[str, tuple[dict, ...]]:
    """Read and check one engine's profile file.

    Parameters
    ----------
    path : str or os.PathLike
        A TOML file in the shipped format: ``engine = "<name>"``, optionally ``allreduce =
        "<model>"`` (the engine's all-reduce, one of
        :data:`~rooflinekit.roofline.ALLREDUCE_MODELS`, that every profile of the file was
        fitted on and times with: its calibrations' ``base``; default the ideal engine's
        ``"collective"``), and one ``[[profile]]`` table
        per (GPU, version) with ``gpu``, ``version``, ``date``, ``source``, ``models``, the
        held-out errors (``held_out_error``, ``held_out_error_ttft``, ``model_size_error``,
        ``fit_error`` [%]; optionally ``held_out_error_datasheet``, the leave-one-GPU-out TPOT
        error with every GPU at its datasheet bandwidth), ``prefill`` and ``decode`` knobs, and
        optionally ``interval``
        (each knob's ``[low, high]``), ``interval_confidence`` (their share, default 0.9) and
        ``notes`` (text); optionally one ``[host_scheduling]`` table for the file
        (:class:`HostScheduling`'s fields: the versions as text, the overhead [s] and its
        ``[low, high]`` interval, ``source``).

    Returns
    -------
    engine : str
        The engine the file describes, one of :data:`ENGINE_NAMES`.
    rows : tuple of dict
        Each profile as a dict: the text fields, the errors, ``models``, ``calibration``
        (a checked :class:`~rooflinekit.profiles.Calibration` with its intervals) and
        ``host_scheduling`` (the file's :class:`HostScheduling`, or ``None``).

    Raises
    ------
    ValueError, TypeError
        A file that is not a regular UTF-8 TOML file of at most
        :data:`~rooflinekit._validation.MAX_CONFIG_BYTES`, or a row with a missing field, a
        non-finite or out-of-range value, or a GPU the catalogue does not know; the message
        names the file, the row and the field.
    """
    path = Path(path)
    data = read_toml_file(path, "engine profile file")
    engine = data.get("engine")
    if engine not in ENGINE_NAMES:
        _fail(path, "field 'engine'", f"must be one of {', '.join(ENGINE_NAMES)}; got "
              f"{engine!r}")
    unknown = sorted(set(data) - {"engine", "allreduce", "profile", "host_scheduling"})
    if unknown:
        _fail(path, "top level", f"unknown field(s) {', '.join(unknown)}")
    # the engine's own all-reduce, which every profile of the file was fitted on
    allreduce = data.get("allreduce", IDEAL.allreduce)
    if allreduce not in ALLREDUCE_MODELS:
        _fail(path, "field 'allreduce'", f"must be one of {', '.join(ALLREDUCE_MODELS)}; got "
              f"{allreduce!r}")
    base = IDEAL.replace(allreduce=allreduce)
    host = _host_scheduling(path, data["host_scheduling"]) if "host_scheduling" in data \
        else None
    rows, seen = [], set()
    for where, row in _tables(path, data, "profile"):
        out = _texts(path, row, where, _TEXT_FIELDS)
        try:
            out["gpu"] = catalog.gpu(out["gpu"]).name
        except ValueError as exc:
            _fail(path, f"{where}.gpu", str(exc))
        for field in (*_ERROR_FIELDS, *_OPTIONAL_ERROR_FIELDS):
            value = row.get(field)
            if value is None and field in _OPTIONAL_ERROR_FIELDS:
                out[field] = None
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value) or value < 0:
                _fail(path, f"{where}.{field}", f"must be a finite percentage >= 0; got "
                      f"{value!r}")
            out[field] = float(value)
        models = row.get("models")
        if not isinstance(models, list) or not models or \
                not all(isinstance(m, str) for m in models):
            _fail(path, f"{where}.models", f"must be a list of model names; got {models!r}")
        out["models"] = tuple(models)
        for phase in PHASES:
            if not isinstance(row.get(phase), Mapping):
                _fail(path, f"{where}.{phase}", "must be a table of knobs")
        notes = row.get("notes", "")
        if not isinstance(notes, str):
            _fail(path, f"{where}.notes", f"must be a string; got {notes!r}", TypeError)
        out["notes"] = notes
        unknown = sorted(set(row) - {*_TEXT_FIELDS, *_ERROR_FIELDS, *_OPTIONAL_ERROR_FIELDS,
                                     "models", *PHASES,
                                     "interval", "interval_confidence", "notes"})
        if unknown:
            _fail(path, where, f"unknown field(s) {', '.join(unknown)}")
        # the label names what timed the answer; the row keeps the full source
        source = f"{engine} {out['version']} profile for {out['gpu']} (fitted {out['date']}" \
            f"{_asynchronous_note(host, out['version'])})"
        try:
            out["calibration"] = Calibration(
                prefill=row["prefill"], decode=row["decode"], source=source,
                held_out_error=out["held_out_error"], intervals=row.get("interval", {}),
                interval_confidence=row.get("interval_confidence", 0.9), base=base)
        except (TypeError, ValueError) as exc:
            _fail(path, where, str(exc), type(exc))
        key = (out["gpu"], out["version"])
        if key in seen:
            _fail(path, where, f"a second profile for {key[0]} at version {key[1]}")
        seen.add(key)
        out["host_scheduling"] = host
        rows.append(out)
    return engine, tuple(rows)


def _asynchronous_note(host, version: str) -> str:
    """What a profile's label adds where its version schedules asynchronously: the assumption
    every answer it times makes (an older engine is ``NAME@VERSION``)."""
    if host is None or not host.asynchronous(version):
        return ""
    return f"; host scheduling asynchronous, as from {host.asynchronous_since}"


def _host_scheduling(path, table) -> HostScheduling:
    """The checked ``[host_scheduling]`` table of a profile file."""
    where = "host_scheduling"
    if not isinstance(table, Mapping):
        _fail(path, where, "must be a table", TypeError)
    fields = {f.name for f in dataclasses.fields(HostScheduling)}
    unknown = sorted(set(table) - fields)
    if unknown:
        _fail(path, where, f"unknown field(s) {', '.join(unknown)}")
    out = _texts(path, table, where, ("synchronous_from", "asynchronous_since", "source"))
    for field in ("synchronous_from", "asynchronous_since"):
        _release_field(path, f"{where}.{field}", out[field], "engine profile file")
    if release_number(out["synchronous_from"]) >= release_number(out["asynchronous_since"]):
        _fail(path, where, f"synchronous_from ({out['synchronous_from']}) must come before "
              f"asynchronous_since ({out['asynchronous_since']})")
    value, band = _overhead(path, table, where, "synchronous_step_overhead")
    frontend = {}
    if "in_engine_frontend_before" in table:
        before = table["in_engine_frontend_before"]
        if not isinstance(before, str):
            _fail(path, f"{where}.in_engine_frontend_before", f"must be a version as text; "
                  f"got {before!r}", TypeError)
        _release_field(path, f"{where}.in_engine_frontend_before", before,
                       "engine profile file")
        if not release_number(out["synchronous_from"]) < release_number(before) \
                <= release_number(out["asynchronous_since"]):
            _fail(path, f"{where}.in_engine_frontend_before", f"must come after "
                  f"synchronous_from ({out['synchronous_from']}) and not after "
                  f"asynchronous_since ({out['asynchronous_since']}); got {before!r}")
        cost = _overhead(path, table, where, "request_overhead")
        frontend = {"in_engine_frontend_before": before, "request_overhead": cost[0],
                    "request_overhead_interval": cost[1]}
    elif "request_overhead" in table or "request_overhead_interval" in table:
        _fail(path, f"{where}.in_engine_frontend_before", "must be given with "
              "request_overhead: the versions it applies to")
    return HostScheduling(synchronous_step_overhead=value,
                          synchronous_step_overhead_interval=band, **out, **frontend)


def _overhead(path, table, where, name) -> tuple:
    """``(value, (low, high))`` of a time [s] in [0, 1) and its interval around it, checked
    (``name`` and ``name_interval`` of ``table``)."""
    value = table.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or not 0 <= value < 1:
        _fail(path, f"{where}.{name}", f"must be a finite time in [0, 1) s; got {value!r}")
    band = table.get(f"{name}_interval")
    if not isinstance(band, list) or len(band) != 2 or any(
            isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
            for v in band) or not 0 <= band[0] <= value <= band[1]:
        _fail(path, f"{where}.{name}_interval", f"must be [low, high] with 0 <= low <= "
              f"{name} ({value!r}) <= high; got {band!r}")
    return float(value), (float(band[0]), float(band[1]))


@functools.cache
def _shipped() -> dict:
    """The shipped profiles by engine: ``{engine: rows}`` (read once; rows are immutable)."""
    folder = resources.files("rooflinekit").joinpath("data").joinpath("engine_profiles")
    out = {name: () for name in ENGINE_NAMES}
    for name in ENGINE_NAMES:
        entry = folder.joinpath(f"{name}.toml")
        if entry.is_file():
            with resources.as_file(entry) as path:
                engine, rows = read_profile_file(path)
            if engine != name:
                raise ValueError(f"engine profile file {path}: field 'engine' is {engine!r}, "
                                 f"its name says {name!r}")
            out[name] = rows
    return out


#: Every shipped profile, as :class:`ProfileKey` (engine, GPU, version).
ENGINE_PROFILES = tuple(ProfileKey(engine, row["gpu"], row["version"])
                        for engine, rows in _shipped().items() for row in rows)


def _gpu_spec(gpu) -> GPU:
    if isinstance(gpu, GPU):
        return gpu
    if isinstance(gpu, str):
        return catalog.gpu(gpu)
    raise TypeError(f"gpu must be a GPU name or a rooflinekit.GPU; got {type(gpu).__name__}")


def _distance(a: GPU, b: GPU) -> float:
    """How far apart two GPUs are for a step: log ratios of HBM bandwidth and dense FLOP/s."""
    return math.hypot(math.log(a.hbm_bandwidth / b.hbm_bandwidth),
                      math.log(a.peak_flops / b.peak_flops))


def engine_profile(engine: str = DEFAULT_ENGINE, gpu=None, version: str | None = None, *,
                   warn: bool = True) -> Calibration:
    """The shipped profile of a serving engine: how it runs a step, fitted per GPU.

    Parameters
    ----------
    engine : {"vllm", "sglang", "trtllm"}
        The serving engine. Default "vllm".
    gpu : str or GPU, optional
        The GPU (a catalogue name or a spec). Default ``None``: every profiled GPU, as knob
        sets keyed by ``"gpu"``.
    version : str, optional
        The engine version. Default ``None``: the newest version profiled (for ``gpu``). A
        version profiled gives that profile; for an engine whose file states its host
        scheduling (:func:`host_scheduling`: vLLM), a version that schedules synchronously
        (vLLM 0.5.4 up to before 0.14.0) gives the newest profile with that version's host
        time per step added to its decode steps (``step_overhead``, with its interval; and
        up to vLLM 0.6.0, whose bursts wait for each prompt taken in, its time per request,
        ``request_overhead``), and
        one that schedules asynchronously but is not profiled (vLLM 0.14.1, 0.20.0, or one
        newer than the newest profiled) gives the newest profile, whose host scheduling it
        shares; both labelled so.
    warn : bool
        Warn (:class:`UserWarning`) when ``gpu`` has no profile of its own. Default True.

    Returns
    -------
    Calibration
        For one GPU: that GPU's knobs, intervals and held-out error, labelled with the engine,
        version, GPU and source. A GPU without a profile of its own gets the profile of the
        nearest profiled GPU (HBM bandwidth and dense FLOP/s, log scale), with a warning that
        states the error to expect (the profile's leave-one-GPU-out TPOT error). Without
        ``gpu``: one knob set per profiled GPU, the shared knobs each knob's median over them.
        Its ``serving_engine`` is ``engine``, or ``"engine@version"`` where a version is named,
        so that a planner given the object runs the scheduler and memory rule the name
        ``"engine@version"`` plans with (vLLM counts its CUDA graphs from 0.20.0 on, where
        ``"vllm"`` alone keeps its memory row's release).

    Raises
    ------
    ValueError
        An unknown engine or version, or an engine with no profile shipped.

    See Also
    --------
    ENGINE_PROFILES, host_scheduling, resolve_engine, rooflinekit.calibrate.calibrate

    Notes
    -----
    The shipped profiles are fitted by ``scripts/engine_profiles.py`` to kernel timings
    measured per GPU and engine version (``docs/validation.md`` says from where and how well
    they hold out); each row in ``rooflinekit/data/engine_profiles/`` carries its source.
    """
    engine = check_one_of("engine", engine, ENGINE_NAMES)
    rows = _shipped()[engine]
    if not rows:
        raise ValueError(f"no {engine} profile is shipped; profiled engines: "
                         f"{', '.join(e for e in ENGINE_NAMES if _shipped()[e]) or 'none'}")
    host = rows[0]["host_scheduling"]
    synchronous = asynchronous = None
    if version is not None:
        versions = sorted({r["version"] for r in rows}, key=_version_key)
        if isinstance(version, str) and version in versions:
            rows = tuple(r for r in rows if r["version"] == version)
        elif host is not None and host.synchronous(version):
            synchronous = version          # the newest kernels, that version's host time
        elif host is not None and host.asynchronous(version):
            asynchronous = version         # the newest profile, whose host scheduling it shares
        else:
            also = "" if host is None else (
                f", or one from {host.synchronous_from} on (synchronous host scheduling before "
                f"{host.asynchronous_since}; from it, the newest profile's)")
            raise ValueError(f"version must be one of the {engine} versions profiled "
                             f"({', '.join(versions)}){also}; got {version!r}")

    def labelled(calibration):
        calibration = _synchronous(calibration, engine, synchronous, host)
        calibration = _asynchronous(calibration, engine, asynchronous, host)
        # planners given the object run this engine's scheduler and memory, as for the name
        # "engine@version" (a version's memory rule may differ from the name alone's)
        return dataclasses.replace(calibration, serving_engine=engine if version is None
                                   else f"{engine}@{version}")
    if gpu is None:
        return labelled(_all_gpus(engine, rows))
    spec = _gpu_spec(gpu)
    newest = _newest_by_gpu(rows)
    own = [r for gpu, r in newest.items() if gpu.lower() == spec.name.lower()]
    if own:
        return labelled(own[0]["calibration"])
    near = min(newest.values(), key=lambda r: _distance(spec, catalog.gpu(r["gpu"])))
    source = catalog.gpu(near["gpu"])
    if warn:
        measured = None not in (_streaming_share(spec), _streaming_share(source))
        error = near["held_out_error"] if measured or near["held_out_error_datasheet"] is None \
            else near["held_out_error_datasheet"]
        how = ("with the bandwidth efficiencies carried by the GPUs' measured streaming "
               "bandwidths" if measured else
               f"on datasheet bandwidths: {spec.name} has no measured streaming bandwidth")
        warnings.warn(f"no {engine} profile for {spec.name}; using the {near['gpu']} profile "
                      f"(the nearest profiled GPU by HBM bandwidth and FLOP/s) with its GEMM "
                      f"curve moved to {spec.name}'s ridge point: expect about {error:.0f}% "
                      f"error in TPOT (its leave-one-GPU-out error {how}), more where the GPUs "
                      f"differ further", UserWarning, stacklevel=2)
    return labelled(borrowed(near["calibration"], source, spec))


def host_scheduling(engine: str = DEFAULT_ENGINE) -> HostScheduling | None:
    """When ``engine``'s host work per step adds to its steps, as its profile file states it.

    Parameters
    ----------
    engine : {"vllm", "sglang", "trtllm"}
        The serving engine. Default "vllm".

    Returns
    -------
    HostScheduling or None
        The versions that schedule synchronously and the host's time per step they add;
        ``None`` where the file states none (its profiles' ``step_overhead`` is then every
        version's).

    See Also
    --------
    engine_profile
    """
    engine = check_one_of("engine", engine, ENGINE_NAMES)
    rows = _shipped()[engine]
    return rows[0]["host_scheduling"] if rows else None


def _synchronous(calibration: Calibration, engine: str, version, host) -> Calibration:
    """``calibration`` (a profile of an asynchronous version) with the host's time per step
    of a synchronous ``version`` added to every decode step; ``calibration`` if ``version`` is
    None."""
    if version is None:
        return calibration
    value, band = host.synchronous_step_overhead, host.synchronous_step_overhead_interval

    def added(knobs):
        return {**knobs, "step_overhead": knobs.get("step_overhead", 0.0) + value}
    groups = {key: {**phases, "decode": added(phases["decode"])}
              for key, phases in calibration.groups.items()}
    intervals = {phase: dict(knobs) for phase, knobs in calibration.intervals.items()}
    if "decode" in intervals:
        low, high = intervals["decode"].get("step_overhead", (0.0, 0.0))
        intervals["decode"]["step_overhead"] = (low + band[0], high + band[1])
    kernels = re.sub(r"; host scheduling asynchronous, as from [^;)]*", "", calibration.source)
    base, intake = calibration.base, ""
    if host.in_engine_frontend(version):
        # not a drawn knob: the time one engine's front end takes per request, measured
        base = base.replace(request_overhead=host.request_overhead)
        intake = (f"; requests taken in at the engine's expense before "
                  f"{host.in_engine_frontend_before}: + {host.request_overhead * 1e3:.2f} ms "
                  f"of the engine's time a request")
    return dataclasses.replace(
        calibration, decode=added(calibration.decode), groups=groups, intervals=intervals,
        base=base,
        source=f"{engine} {version} (host scheduling synchronous before "
               f"{host.asynchronous_since}: + {value * 1e3:.2f} ms a decode step{intake}) on "
               f"the {kernels}")


def _asynchronous(calibration: Calibration, engine: str, version, host) -> Calibration:
    """``calibration`` (the newest profile, of an asynchronous version) labelled as the profile
    of the unprofiled asynchronous ``version`` it times; ``calibration`` if ``version`` is
    None."""
    if version is None:
        return calibration
    return dataclasses.replace(
        calibration, source=f"{engine} {version} (not profiled; host scheduling asynchronous "
                            f"from {host.asynchronous_since}, as the newest profile's, which "
                            f"times it) on the {calibration.source}")


def _ridge(gpu: GPU) -> float:
    return gpu.peak_flops / gpu.hbm_bandwidth


def _streaming_share(gpu: GPU) -> float | None:
    """The share of its datasheet bandwidth ``gpu``'s memory is measured to stream at, or
    ``None`` where unmeasured."""
    streaming = gpu.streaming_bandwidth
    return None if streaming is None else streaming / gpu.hbm_bandwidth


def _gemm_share(gpu: GPU) -> float | None:
    """The share of its 16-bit datasheet peak ``gpu``'s large GEMMs are measured to reach, or
    ``None`` where unmeasured."""
    return None if gpu.gemm_flops is None else gpu.gemm_flops / gpu.peak_flops


def borrowed(calibration: Calibration, source: GPU, target: GPU) -> Calibration:
    """``source``'s profile carried to ``target``: ``gemm_half_tokens`` scaled by their ridge
    points, the bandwidth efficiencies by their measured streaming shares and the compute
    efficiencies by their measured GEMM shares where both GPUs have them, the all-reduce's
    hop latency dropped where their links differ, every other knob as fitted.

    Parameters
    ----------
    calibration : Calibration
        One GPU's profile (no knob sets).
    source, target : GPU
        The GPU it was fitted on and the GPU it is to time.

    Returns
    -------
    Calibration
        The same knobs, intervals and held-out error, with both phases' ``gemm_half_tokens``
        (and its interval) multiplied by ``r = ridge(target) / ridge(source)``; both phases'
        ``bandwidth_efficiency``, ``kv_bandwidth_efficiency``,
        ``low_precision_bandwidth_efficiency`` and ``fp4_bandwidth_efficiency`` (and their
        intervals; an absent ``bandwidth_efficiency`` is 1) by ``q = share(target) /
        share(source)``, ``share = streaming_bandwidth / hbm_bandwidth``, where both GPUs give
        a ``streaming_bandwidth`` (else ``q = 1``); ``compute_efficiency``,
        ``low_precision_compute_efficiency``, ``fp4_compute_efficiency`` and
        ``attention_compute_efficiency`` (an absent ``compute_efficiency`` is 1) likewise by
        ``c = share(target) / share(source)``, ``share = gemm_flops / peak_flops``, where both
        give a ``gemm_flops``; every carried efficiency at most 1; ``interconnect_latency``
        (the hop latency fitted to the engine's all-reduces on ``source``'s links) left out
        where the two GPUs' ``interconnect_bandwidth`` differ (``target``'s own hop latency
        then applies), and a source that says so; ``calibration`` itself where none of these
        applies.

    Notes
    -----
    A GEMM of ``n`` rows takes ``flops · (n + n½) / (peak · e)``
    (:func:`~rooflinekit.roofline.step.mixed_step_time_kernel`), so at small ``n`` its compute
    time is that of ``n½`` rows, and it stays under the weights' read time while ``n½`` is
    below the GPU's ridge point ``peak / bandwidth`` [FLOP/byte] (16-bit weights do one FLOP
    per byte per row). Carried unchanged to a GPU of a lower ridge, an ``n½`` near its source's
    ridge would make memory-bound decode steps compute-bound (an ``n½`` of 285 tokens, fitted
    on the L40S, ridge 419, on an RTX 4090, ridge 164: TPOT 30 ms where 19 ms was measured);
    scaled, the curve keeps its place relative to the ridge. The shipped vLLM profiles' decode
    ``n½`` lie well under their ridges (0-80 tokens against 206-419), where the scaling
    changes little.

    The profiles were fitted against each GPU's measured streaming bandwidth and GEMM
    throughput and written as shares of its datasheet figures, which the profiled GPUs reach
    77-93 % (memory; the A100's least, the RTX PRO 6000's most) and 67-86 % of (large bf16
    GEMMs; the L40S's least, the A100's most); an efficiency fitted on one carries to another
    as its share of what that memory or clock reaches, ``e · q`` or ``e · c``.

    See Also
    --------
    engine_profile
    """
    ratio = _ridge(target) / _ridge(source)
    carries = {}
    for whole, share in (("bandwidth_efficiency", _streaming_share),
                         ("compute_efficiency", _gemm_share)):
        shares = share(target), share(source)
        carries[whole] = (1.0 if None in shares else shares[0] / shares[1], shares)
    carried = {whole: c for whole, (c, _) in carries.items() if c != 1.0}
    # a hop latency fitted on one link says nothing of another's
    other_link = target.interconnect_bandwidth != source.interconnect_bandwidth and any(
        getattr(calibration, p).get("interconnect_latency") is not None for p in PHASES)
    if ratio == 1.0 and not carried and not other_link:
        return calibration
    phases = {}
    for phase in PHASES:
        knobs = dict(getattr(calibration, phase))
        if knobs.get("gemm_half_tokens") is not None:
            knobs["gemm_half_tokens"] = knobs["gemm_half_tokens"] * ratio
        for whole, carry in carried.items():
            knobs.setdefault(whole, 1.0)              # absent: all the memory or clock reaches
            for name in SHARE_KNOBS[whole]:
                if knobs.get(name) is not None:
                    knobs[name] = min(1.0, knobs[name] * carry)
        if other_link:
            knobs.pop("interconnect_latency", None)
        phases[phase] = knobs
    intervals = {phase: dict(knobs) for phase, knobs in calibration.intervals.items()}
    for knobs in intervals.values():
        if "gemm_half_tokens" in knobs:
            low, high = knobs["gemm_half_tokens"]
            knobs["gemm_half_tokens"] = (low * ratio, high * ratio)
        for whole, carry in carried.items():
            for name in SHARE_KNOBS[whole]:
                if name in knobs:
                    low, high = knobs[name]
                    knobs[name] = (min(1.0, low * carry), min(1.0, high * carry))
        if other_link:
            knobs.pop("interconnect_latency", None)
    moved = []
    if ratio != 1.0:
        moved.append(f"GEMM curve moved to {target.name}'s ridge point (gemm_half_tokens × "
                     f"{ratio:.3g})")
    for whole, what, measured in (("bandwidth_efficiency", "bandwidth", "streaming"),
                                  ("compute_efficiency", "compute", "GEMM")):
        if whole in carried:
            shares = carries[whole][1]
            moved.append(f"{what} efficiencies × {carried[whole]:.3g} ({target.name}'s "
                         f"measured {measured} share {shares[0]:.0%} against {shares[1]:.0%})")
    if other_link:
        moved.append(f"all-reduce hop latency {target.name}'s own (another link)")
    return dataclasses.replace(
        calibration, prefill=phases["prefill"], decode=phases["decode"], intervals=intervals,
        source=f"{calibration.source}, {', '.join(moved)}")


def _newest_by_gpu(rows) -> dict:
    """Each GPU's profile row of the newest version, by GPU name."""
    newest = {}
    for r in sorted(rows, key=lambda r: _version_key(r["version"])):
        newest[r["gpu"]] = r
    return newest


def _all_gpus(engine: str, rows) -> Calibration:
    newest = _newest_by_gpu(rows)
    sets = {(gpu,): {p: dict(getattr(r["calibration"], p)) for p in PHASES}
            for gpu, r in newest.items()}
    shared = {}
    for phase in PHASES:
        knobs = set().union(*(knobs[phase] for knobs in sets.values()))
        shared[phase] = {k: float(np.median([s[phase][k] for s in sets.values()
                                             if s[phase].get(k) is not None]))
                         for k in knobs
                         if any(s[phase].get(k) is not None for s in sets.values())}
    versions = sorted({r["version"] for r in newest.values()}, key=_version_key)
    return Calibration(prefill=shared["prefill"], decode=shared["decode"],
                       source=f"{engine} {'/'.join(versions)} profiles of {len(sets)} GPUs "
                              f"(shared knobs: each knob's median)",
                       group_by=("gpu",), groups=sets,
                       base=next(iter(newest.values()))["calibration"].base)


def engine_name(engine) -> str | None:
    """The name a planner's ``engine=`` argument goes by: a string as given (``"trtllm"``,
    ``"vllm@0.11.0"``, a file of knobs), a :class:`Calibration`'s ``serving_engine`` (a
    shipped profile's own), else ``None`` (an :class:`~rooflinekit.Engine`, ``None``)."""
    if isinstance(engine, str):
        return engine
    return engine.serving_engine if isinstance(engine, Calibration) else None


def profiled_engine(text) -> str | None:
    """The serving engine (one of :data:`ENGINE_NAMES`) that ``text`` names, with or without
    ``@VERSION`` (a calibration: its ``serving_engine``, :func:`engine_name`); ``None`` for
    ``"ideal"``, a file of knobs or anything else."""
    text = engine_name(text)
    if not is_engine_name(text):
        return None
    name = split_engine_name(text)[0]
    return None if name == "ideal" else name


def resolve_engine(engine=None, gpu=None, *, warn: bool = True):
    """The engine a planning answer is timed with: the one rule every planning path applies.

    Parameters
    ----------
    engine : None, str, Engine or Calibration
        ``None`` (default): the :data:`DEFAULT_ENGINE` (vLLM) profile of ``gpu``. A name of
        :data:`ENGINE_CHOICES`: that engine's profile, or ``"ideal"``: :data:`~rooflinekit.IDEAL`
        (the roofline bound); ``"NAME@VERSION"``: that engine's profile at ``VERSION``
        (:func:`engine_profile`'s ``version``: ``"vllm@0.11.0"`` adds a synchronous vLLM's host
        time to every decode step). An :class:`~rooflinekit.Engine` or anything with an
        ``engine_for`` method (a :class:`Calibration`) is returned as it is.
    gpu : str, GPU or sequence of them, optional
        The GPU(s) the answer is for. Several: one knob set per GPU, keyed by ``"gpu"``, each
        that GPU's profile (or its nearest's, :func:`engine_profile`). ``None``: every profiled
        GPU.
    warn : bool
        Passed to :func:`engine_profile`. Default True.

    Returns
    -------
    Engine or Calibration

    Raises
    ------
    ValueError
        An unknown engine name or version.
    TypeError
        Anything else.
    """
    if engine is None:
        engine = DEFAULT_ENGINE
    if isinstance(engine, str):
        name, version = split_engine_name(engine)
        if name == "ideal":
            return IDEAL
        if gpu is None or isinstance(gpu, (str, GPU)):
            return engine_profile(name, gpu, version, warn=warn)
        return _for_gpus(name, list(gpu), warn, version)
    if isinstance(engine, Engine) or (callable(getattr(engine, "engine_for", None))
                                      and not isinstance(engine, type)):
        return engine
    raise TypeError(f"engine must be None, one of {', '.join(ENGINE_CHOICES)}, a "
                    f"rooflinekit.Engine or a Calibration; got {type(engine).__name__}")


def _for_gpus(engine: str, gpus: list, warn: bool, version=None) -> Calibration:
    """One knob set per GPU of ``gpus``: each its own profile (at ``version``), or its
    nearest's."""
    if len(gpus) == 1:
        return engine_profile(engine, gpus[0], version, warn=warn)
    specs = [_gpu_spec(g) for g in gpus]
    profiles = {spec.name: engine_profile(engine, spec, version, warn=warn) for spec in specs}
    sets = {(name, ): {p: dict(getattr(c, p)) for p in PHASES} for name, c in profiles.items()}
    first = next(iter(profiles.values()))
    sources = "; ".join(dict.fromkeys(c.source for c in profiles.values()))
    return Calibration(prefill=first.prefill, decode=first.decode, group_by=("gpu",),
                       groups=sets, source=f"{engine} profiles per GPU: {sources}",
                       base=first.base, serving_engine=first.serving_engine)
