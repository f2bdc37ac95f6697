"""The calibrated model: knobs per phase, kept as JSON, and roofline predictions per measured row.

:class:`Calibration` holds the roofline's three knobs (``compute_efficiency``,
``bandwidth_efficiency``, ``step_overhead``) per phase, prefill and decode, the engine knobs
(:data:`ENGINE_KNOBS`) and the link share (:data:`LINK_KNOBS`) where fitted, knob sets of their
own by GPU, engine, format or model, and the base :class:`~rooflinekit.Engine` they were fitted
on (its other fields: the all-reduce model, the formats, the link). It gives the ``Engine`` of a
phase (:meth:`Calibration.engine_for`: the base with the knobs put in), so it stands wherever an
engine does (``engine=``). :func:`save_calibration` and :func:`load_calibration` keep one as
JSON. :func:`predict` runs the roofline over every row of a measurement table
(:mod:`rooflinekit.calibrate.measurements`) with a calibration or an engine, grouped by (model,
GPU, tp, dtype) so that one call covers a configuration; the fit in :mod:`rooflinekit.calibrate`
evaluates the same grouped predictions. Everything public here is re-exported by
:mod:`rooflinekit.calibrate`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import numpy as np
import xarray as xr

from rooflinekit import catalog, roofline
from rooflinekit._validation import (
    check_keys,
    check_mapping,
    check_one_of,
    check_string,
    MAX_CONFIG_BYTES,
    check_type,
    parse_json,
    read_regular_file,
    real_number,
)
from rooflinekit.calibrate.measurements import MEASUREMENT, _check_measurements
from rooflinekit.dtypes import bytes_per_element
from rooflinekit.hardware import GPU
from rooflinekit.models import ModelShape
from rooflinekit.roofline import IDEAL, Engine

__all__ = ["PHASE", "PARAMETER", "PHASES", "PARAMETERS", "ENGINE_KNOBS", "LINK_KNOBS", "KNOBS",
           "GROUP_FIELDS", "WORKLOADS",
           "IDEAL", "Calibration", "save_calibration", "load_calibration", "predict"]

#: Dimension of per-phase results: "prefill" (fitted to TTFT) and "decode" (fitted to TPOT/ITL).
PHASE = "phase"
#: Dimension of fitted knobs.
PARAMETER = "parameter"

PHASES = ("prefill", "decode")
PARAMETERS = ("compute_efficiency", "bandwidth_efficiency", "step_overhead")

#: The knobs that say what a serving engine does beyond the three: a fixed cost per layer
#: per step [s], the KV traffic's own bandwidth efficiency [1], the tokens at which the GEMMs
#: reach half their efficiency [tokens], the TTFT intercept of a step with prompt tokens [s]
#: and the per-hop all-reduce latency [s]. Each is an :class:`~rooflinekit.Engine` field
#: whose default is the ideal model.
ENGINE_KNOBS = ("layer_overhead", "kv_bandwidth_efficiency", "gemm_half_tokens",
                "prefill_overhead", "interconnect_latency")
#: Knobs a calibration holds as a share of a GPU's own figure: ``interconnect_efficiency``, the
#: share of the per-direction link bandwidth [1] the all-reduces reach (an
#: :class:`~rooflinekit.Engine` field). A share, not an absolute bandwidth, because one
#: engine's collectives reach a similar share of an A100's and an H100's NVLink
#: (docs/calibration.md: the share transfers between GPUs, a fitted absolute bandwidth does not).
LINK_KNOBS = ("interconnect_efficiency",)
#: Every knob a calibration can hold.
KNOBS = PARAMETERS + ENGINE_KNOBS + LINK_KNOBS

#: Ideal values of the knobs: the guide's machine (§3), the roofline's defaults.
_IDEAL = MappingProxyType({k: getattr(IDEAL, k) for k in PARAMETERS})
#: The engine knobs' and the link share's ideal values: :data:`~rooflinekit.IDEAL`'s fields,
#: where ``None`` means "as the weights' bandwidth efficiency" (KV) and "the base engine's
#: link latency, else the GPU's own" (all-reduce).
_ENGINE_IDEAL = MappingProxyType({k: getattr(IDEAL, k) for k in ENGINE_KNOBS + LINK_KNOBS})
#: Knobs in seconds (fitted in milliseconds; shown in ms).
SECONDS_KNOBS = ("step_overhead", "layer_overhead", "prefill_overhead", "interconnect_latency")
#: How a measured row maps onto engine steps (see :func:`~rooflinekit.calibrate.calibrate`).
WORKLOADS = ("isolated", "serving", "loaded")
#: The workloads that map a row onto a continuous-batching server's mixed steps.
_SERVING = ("serving", "loaded")
#: Columns of a measurement table a calibration can keep knob sets by.
GROUP_FIELDS = ("gpu", "engine", "dtype", "model")


# -- specs and the roofline --------------------------------------------------------------------

def _lookup(kind: str, name: str, overrides: Mapping | None, row_no: int, file: str = ""):
    if overrides:
        for key, spec in overrides.items():
            if str(key).lower() == name.lower():
                return spec
    try:
        return catalog.gpu(name) if kind == "gpu" else catalog.model(name)
    except ValueError as exc:
        where = f"{file}: " if file else ""
        raise ValueError(f"{where}measurement {row_no}: field '{kind}': {exc}") from None


def _check_overrides(name, mapping, kind):
    return check_mapping(name, mapping, kind, allow_none=True)


def _knob_priors(engine: Engine) -> dict:
    """Every knob's value in ``engine``: the fit's priors (what a knob it does not free keeps,
    and what a free knob the rows do not identify goes back to), and the value of every knob a
    calibration's phase does not hold.

    ``interconnect_latency`` is ``None``: the engine's own link latency (else the GPU's) is in
    the terms of :class:`_Groups` already.
    """
    return {**{k: getattr(engine, k) for k in KNOBS}, "interconnect_latency": None}


def _check_engine(engine) -> Engine:
    """``engine=`` of the fit and the predictions: an :class:`~rooflinekit.Engine` of single
    numbers (``None``: :data:`~rooflinekit.IDEAL`)."""
    if engine is None:
        return IDEAL
    if not isinstance(engine, Engine):
        hint = " (a calibration's own engine is its .base)" if hasattr(
            engine, "engine_for") else ""
        raise TypeError(f"engine must be a rooflinekit.Engine (the base the knobs are fitted "
                        f"on) or None; got {type(engine).__name__}{hint}")
    for name, value in engine.fields().items():
        if isinstance(value, (xr.DataArray, np.ndarray)):
            raise TypeError(f"engine.{name} must be a single number to time measured rows; "
                            f"got {np.size(value)} values")
    return engine


class _Groups:
    """Rows of a measurement table grouped by hardware configuration, ready for the roofline.

    The roofline takes one model and one GPU per call and broadcasts over arrays of batch sizes,
    context and prompt lengths; grouping keeps calls per fit evaluation to one per configuration.
    ``engine`` (an :class:`~rooflinekit.Engine`) is the base: its fields that are not knobs
    (all-reduce model, link, formats) shape the terms, and its knobs are :attr:`priors`.
    """

    def __init__(self, ds: xr.Dataset, models: Mapping, gpus: Mapping, engine: Engine,
                 workload: str = "isolated"):
        n = ds.sizes[MEASUREMENT]
        self.workload = workload
        self.engine = engine
        self.priors = _knob_priors(engine)
        self.n = n
        keys = {}
        model_names = ds["model"].values
        gpu_names = ds["gpu"].values
        blank = np.array([""] * n, dtype=object)
        dtypes = ds["dtype"].values if "dtype" in ds else blank
        kv_dtypes = ds["kv_dtype"].values if "kv_dtype" in ds else blank
        tps = ds["tp"].values
        for i in range(n):
            key = (str(model_names[i]), str(gpu_names[i]), int(tps[i]), str(dtypes[i] or ""),
                   str(kv_dtypes[i] or ""))
            keys.setdefault(key, []).append(i)
        self.groups = []
        for (mname, gname, tp, dtype, kv_dtype), rows in keys.items():
            file = str(ds.attrs.get("file", ""))
            model = _lookup("model", mname, models, rows[0], file)
            gpu = _lookup("gpu", gname, gpus, rows[0], file)
            if dtype and model.bytes_per_param != _bytes(dtype):
                model = model.replace(bytes_per_param=dtype)
            if kv_dtype and model.kv_bytes_per_element != _bytes(kv_dtype):
                model = model.replace(kv_bytes_per_element=kv_dtype)
            # a row's weight format picks the GPU's peak unless the engine names its own
            mine = engine.replace(compute_dtype=dtype) if dtype and \
                engine.compute_dtype is None else engine
            self.groups.append((np.asarray(rows), model, gpu, tp, mine))
        prompt = ds["prompt_tokens"].values.astype(float)
        output = ds["output_tokens"].values.astype(float)
        ctx = ds["context_length"].values.astype(float) if "context_length" in ds else \
            np.full(n, np.nan)
        # means over a run may be fractional; a step decodes at least one sequence
        self.prompt = prompt
        # a static batch's TTFT is one prefill step of all its prompts: B x the tokens (the
        # attention of B separate prompts is overstated by the same one-prompt arithmetic)
        kinds = ds["ttft_kind"].values if "ttft_kind" in ds else blank
        static = np.array([str(k) == "static_batch" for k in kinds])
        self.prefill_tokens = np.where(static, prompt * np.maximum(
            ds["batch_size"].values.astype(float), 1.0), prompt)
        self.context = np.where(np.isnan(ctx), prompt + output / 2.0, ctx)
        self.batch = np.maximum(ds["batch_size"].values.astype(float), 1.0)
        self.output = output
        if workload in _SERVING:
            # KV tokens each decoding sequence reads (window-capped), per configuration
            self.kv_read = np.empty(n)
            for idx, model, _, _, _ in self.groups:
                self.kv_read[idx] = roofline.effective_kv_tokens(model, self.context[idx])
        # A fit evaluates thousands of knob settings; the knobs enter a step only as
        # max((compute + n½·gemm) / ce, weights / be + kv / be_kv) + overheads + communication,
        # so each row's terms are taken from the step kernel once and every setting is then
        # plain arithmetic.
        self.terms = {phase: self._terms(phase) for phase in PHASES}

    def _prefill_share(self, idx: np.ndarray, cost) -> np.ndarray:
        """Share of a request's life spent in prefill at the ideal roofline, per row [1].

        Under a steady load of ``B`` requests each spends ``s = T_prefill / (T_prefill +
        output · T_decode)`` of its time being prefilled, so a new prompt shares its prefill
        with ``(B − 1)·s`` other prompts on average (mean field; prefill interference under
        load). Taken once from the ideal model, so that the knobs stay linear.
        """
        kernel = roofline.mixed_step_time_kernel
        f, w = cost.full_attention_fraction, cost.sliding_window
        out = np.zeros(idx.size)
        for j, i in enumerate(idx):
            p, b = float(self.prompt[i]), float(self.batch[i])
            if b <= 1.0:
                continue
            pairs = roofline.prefill_context_tokens_kernel(p, 0.0, f, w)
            prefill = kernel(*cost, 0.0, p, 0.0, pairs)
            decode = kernel(*cost, b, 0.0, b * float(self.kv_read[i]), 0.0)
            out[j] = prefill / (prefill + max(float(self.output[i]), 1.0) * decode)
        return out

    def _steps(self, phase: str, idx: np.ndarray, model, cost) -> tuple:
        """The kernel's token counts (decode, prompt, KV read, attention pairs) of rows ``idx``.

        The steps :func:`~rooflinekit.roofline.decode_step_time`,
        :func:`~rooflinekit.roofline.prefill_time` and
        :func:`~rooflinekit.roofline.mixed_step_time` build; ``test_calibrate`` holds the
        predictions to those functions.
        """
        b = self.batch[idx]
        f, w = cost.full_attention_fraction, cost.sliding_window
        if self.workload in _SERVING:
            # one engine step as a continuous-batching server runs it (Sarathi-Serve):
            # TTFT's step carries the new prompt beside the other b - 1 decodes; a decode
            # step carries b decodes and, on average, b / output new prompts' tokens
            if phase == "prefill":
                decodes, kv = b - 1.0, (b - 1.0) * self.kv_read[idx]
                prompt = self.prompt[idx]
                if self.workload == "loaded":
                    prompt = prompt * (1.0 + (b - 1.0) * self._prefill_share(idx, cost))
            else:
                decodes = b
                prompt = b / np.maximum(self.output[idx], 1.0) * self.prompt[idx]
                kv = b * self.kv_read[idx]
        elif phase == "prefill":
            decodes, prompt, kv = np.zeros(idx.size), self.prefill_tokens[idx], np.zeros(idx.size)
        else:
            decodes, prompt = b, np.zeros(idx.size)
            kv = b * np.asarray(roofline.effective_kv_tokens(model, self.context[idx]), dtype=float)
        pairs = np.array([roofline.prefill_context_tokens_kernel(float(p), 0.0, f, w) if p > 0
                          else 0.0 for p in prompt])
        return decodes, prompt, kv, pairs

    def _terms(self, phase: str) -> dict:
        """Per row, each at full efficiency and no engine cost [s unless stated]: ``compute``,
        ``gemm`` (compute per unit of ``gemm_half_tokens`` [s/token]), ``memory`` (all traffic),
        ``kv`` (its KV part), ``comm`` (all-reduce at the GPU's link latency), ``comm_bytes``
        (its bandwidth part), ``hops`` (latency per unit of hop latency [1]), ``runs``,
        ``layers`` (``runs × n_layers`` [1]) and ``prompt`` (``runs × min(prompt tokens, 1)``)."""
        names = ("compute", "gemm", "memory", "kv", "comm", "comm_bytes", "hops", "runs",
                 "layers", "prompt")
        terms = {name: np.full(self.n, np.nan) for name in names}
        kernel = roofline.mixed_step_time_kernel
        for idx, model, gpu, tp, engine in self.groups:
            # the knobs enter in predict(); the engine's link latency is the GPU's own here
            plain = engine.replace(**{k: v for k, v in IDEAL.fields().items()
                                      if k in KNOBS and k != "interconnect_latency"})
            cost = roofline.step_cost_coefficients(model, gpu, tp, engine=plain)
            unit_hop = roofline.step_cost_coefficients(
                model, gpu, tp, engine=plain.replace(interconnect_latency=1.0))
            silent = {"allreduce_bytes_per_token": 0.0, "allreduce_latency": 0.0}
            no_flops = {"flops_per_token": 0.0, "lm_head_flops_per_token": 0.0,
                        "attention_flops_per_pair": 0.0}
            alone = {
                "compute": cost._replace(bandwidth=math.inf, **silent),
                "memory": cost._replace(**no_flops, **silent),
                "kv": cost._replace(**no_flops, **silent, nonexpert_weight_bytes=0.0,
                                    expert_weight_bytes=0.0, embedding_row_bytes=0.0,
                                    prefill_bytes_per_token=0.0),
                "comm": cost._replace(**no_flops, bandwidth=math.inf),
                "comm_bytes": cost._replace(**no_flops, bandwidth=math.inf,
                                            allreduce_latency=0.0),
            }
            steps = list(zip(*self._steps(phase, idx, model, cost)))
            for name, part in alone.items():
                terms[name][idx] = [kernel(*part, *step) for step in steps]
            runs = np.array([min(d + p, 1.0) for d, p, _, _ in steps])
            terms["runs"][idx] = runs
            terms["gemm"][idx] = runs * (cost.flops_per_token + cost.lm_head_flops_per_token) \
                / cost.peak_flops
            terms["hops"][idx] = runs * unit_hop.allreduce_latency
            terms["layers"][idx] = runs * model.n_layers
            terms["prompt"][idx] = [r * min(p, 1.0) for r, (_, p, _, _) in zip(runs, steps)]
        return terms

    def predict(self, phase: str, params: Mapping, rows: np.ndarray | None = None) -> np.ndarray:
        """Roofline seconds of ``phase`` for every row (or the given rows), with ``params``.

        ``params`` holds knobs (:data:`KNOBS`); those it lacks take their ideal values (not the
        base engine's: the fit passes :attr:`priors` itself). With the engine knobs at their
        defaults this is the three-knob arithmetic exactly.
        """
        knobs = {**_IDEAL, **_ENGINE_IDEAL, **{k: v for k, v in params.items() if k in KNOBS}}
        t = self.terms[phase]
        compute = t["compute"]
        if knobs["gemm_half_tokens"]:
            compute = compute + knobs["gemm_half_tokens"] * t["gemm"]
        memory = t["memory"] / knobs["bandwidth_efficiency"]
        if knobs["kv_bandwidth_efficiency"] is not None:
            memory = memory + t["kv"] * (1.0 / knobs["kv_bandwidth_efficiency"]
                                         - 1.0 / knobs["bandwidth_efficiency"])
        link = t["comm_bytes"] / knobs["interconnect_efficiency"]
        comm = t["comm"] + (link - t["comm_bytes"]) if knobs["interconnect_latency"] is None \
            else link + knobs["interconnect_latency"] * t["hops"]
        out = (np.maximum(compute / knobs["compute_efficiency"], memory)
               + t["runs"] * knobs["step_overhead"] + comm)
        if knobs["layer_overhead"] or knobs["prefill_overhead"]:
            out = out + t["layers"] * knobs["layer_overhead"] + \
                t["prompt"] * knobs["prefill_overhead"]
        if rows is not None:
            keep = np.zeros(self.n, dtype=bool)
            keep[rows] = True
            out = np.where(keep, out, np.nan)
        return out


def _row_keys(ds, group_by) -> list:
    """Each row's knob-set key: its text in every ``group_by`` column ("" where blank)."""
    n = ds.sizes[MEASUREMENT]
    if not group_by:
        return [None] * n
    columns = [ds[field].values for field in group_by]
    return [tuple(_text(col[i]) for col in columns) for i in range(n)]


def _text(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def _predict_calibrated(groups, phase, calibration, keys, rows=None):
    """Each row's prediction with its knob set (the shared knobs where it has none).

    A knob the calibration does not hold takes the base engine's value (``groups.priors``); an
    :class:`~rooflinekit.Engine` holds none, so every knob is its own.
    """
    if isinstance(calibration, Engine):
        return groups.predict(phase, groups.priors, rows)
    if not calibration.groups:
        return groups.predict(phase, {**groups.priors, **calibration._knobs(phase)}, rows)
    out = np.full(groups.n, np.nan)
    # each row's set as a selection would find it (names compared without case)
    found = {key: calibration.group_for(warn=False, **dict(zip(calibration.group_by, key)))
             for key in dict.fromkeys(keys) if key is not None}
    chosen = [None if key is None else found[key] for key in keys]
    for key in dict.fromkeys(chosen):
        mine = np.flatnonzero([c == key for c in chosen])
        if rows is not None:
            mine = np.intersect1d(mine, rows)
        if not mine.size:
            continue
        knobs = {**groups.priors, **calibration._knobs(phase, key)}
        out[mine] = groups.predict(phase, knobs, mine)[mine]
    return out


def _bytes(dtype):
    return bytes_per_element(dtype)


def _targets(ds: xr.Dataset, phase: str) -> np.ndarray:
    """Measured seconds of a phase per row: TTFT for prefill; TPOT, else ITL, for decode.

    TPOT (per request, first token excluded) is preferred for decode: it is immune to servers that
    stream several tokens per chunk, which inflates the per-chunk ITL.
    """
    if phase == "prefill":
        return ds["ttft"].values.astype(float)
    tpot = ds["tpot"].values.astype(float)
    itl = ds["itl"].values.astype(float)
    return np.where(np.isnan(tpot), itl, tpot)


def _check_workload(workload) -> str:
    return check_one_of("workload", workload, WORKLOADS)


# -- the calibrated model ----------------------------------------------------------------------

def _check_knobs(phase: str, knobs: Mapping) -> dict:
    """A phase's knobs: the three always (ideal where missing), an engine knob where given."""
    knobs = check_mapping(phase, knobs)
    check_keys(phase, knobs, KNOBS, what="knob")
    out = dict(_IDEAL)
    for key, value in knobs.items():
        value = _check_knob(f"{phase}.{key}", key, value)
        if value is not None:
            out[key] = value
    return out


def _check_knob(name: str, knob: str, value):
    """One roofline knob as ``float``: an efficiency in (0, 1], a time [s] or tokens >= 0.

    ``kv_bandwidth_efficiency`` and ``interconnect_latency`` may be ``None`` (their default:
    the weights' efficiency, the GPU's own latency).
    """
    optional = knob in ("kv_bandwidth_efficiency", "interconnect_latency")
    if knob in SECONDS_KNOBS or knob == "gemm_half_tokens":
        return real_number(name, value, lo=0, allow_none=optional)
    return real_number(name, value, lo=0, hi=1, lo_open=True, allow_none=optional)


def _selector_name(value):
    """A selector as the text a measurement column holds: a spec's name, or the string."""
    if value is None:
        return None
    name = getattr(value, "name", value)
    if not isinstance(name, str):
        raise TypeError(f"a knob-set selector must be a name or a spec with a name; got "
                        f"{type(value).__name__}")
    return name


def _check_groups(group_by, groups) -> tuple:
    """``group_by`` as a tuple of :data:`GROUP_FIELDS` and ``groups`` as checked knob sets."""
    if isinstance(group_by, str):
        group_by = (group_by,)
    group_by = tuple(group_by)
    for i, field in enumerate(group_by):
        check_one_of(f"group_by[{i}]", field, GROUP_FIELDS)
    if len(set(group_by)) != len(group_by):
        raise ValueError(f"group_by must not repeat a field; got {group_by!r}")
    groups = check_mapping("groups", groups)
    if groups and not group_by:
        raise ValueError("groups need group_by: the fields their keys name")
    out = {}
    for key, phases in groups.items():
        key = (key,) if isinstance(key, str) else tuple(key)
        if len(key) != len(group_by) or not all(isinstance(k, str) for k in key):
            raise ValueError(f"groups: key {key!r} must hold one name per group_by field "
                             f"{group_by!r}")
        phases = check_mapping(f"groups[{key!r}]", phases)
        check_keys(f"groups[{key!r}]", phases, PHASES, what="phase")
        out[key] = MappingProxyType({
            phase: MappingProxyType(_check_knobs(f"groups[{key!r}].{phase}",
                                                 phases.get(phase, {})))
            for phase in PHASES})
    return group_by, out


@dataclasses.dataclass(frozen=True)
class Calibration:
    """Fitted roofline knobs per phase, shared and per knob set: the calibrated model.

    Parameters
    ----------
    prefill, decode : mapping
        The shared knobs of each phase: ``compute_efficiency`` and ``bandwidth_efficiency``
        in (0, 1] [1] and ``step_overhead`` [s] ≥ 0, ideal (1, 1, 0) where missing; and, where
        fitted, the engine knobs (:data:`ENGINE_KNOBS`): ``layer_overhead`` [s per layer],
        ``kv_bandwidth_efficiency`` in (0, 1] [1], ``gemm_half_tokens`` [tokens],
        ``prefill_overhead`` [s] and ``interconnect_latency`` [s per hop], each ≥ 0; and the
        link share ``interconnect_efficiency`` in (0, 1] [1] (:data:`LINK_KNOBS`): each an
        :class:`~rooflinekit.Engine` field.
    source : str
        What the knobs were fitted to.
    held_out_error : float, optional
        Held-out mean absolute percentage error of the decode time per output token (TPOT) [%],
        ≥ 0, from :func:`~rooflinekit.calibrate.cross_validate`; ``None`` (default) when the
        calibration was not cross-validated.
    group_by : sequence of str
        Fields of :data:`GROUP_FIELDS` (``"gpu"``, ``"engine"``, ``"dtype"``, ``"model"``) that
        key the knob sets in ``groups``. Default none.
    groups : mapping
        Knob sets of their own: ``(name per group_by field) -> {"prefill": {...}, "decode":
        {...}}``, each phase's knobs as for ``prefill``/``decode``. Default none.
    base : Engine
        The engine the knobs are fitted on (``engine=`` of
        :func:`~rooflinekit.calibrate.calibrate`): :meth:`engine_for` returns it with this
        calibration's knobs put in, so its other fields (``allreduce``, the link, the formats)
        and every engine knob a phase does not hold are its own. Default
        :data:`rooflinekit.IDEAL`.

    See Also
    --------
    rooflinekit.calibrate.calibrate, rooflinekit.calibrate.cross_validate,
    save_calibration, load_calibration

    Notes
    -----
    A calibration stands wherever an :class:`~rooflinekit.Engine` does (``engine=``):
    every path asks :meth:`engine_for` for the engine of its phase, model and GPU.
    ``Calibration()`` is the ideal model. :attr:`label` is what every output computed with it
    says of itself (``attrs["model_quality"]``).

    With knob sets, :meth:`engine_for` takes selectors (``gpu=``, ``engine=``, ``dtype=``,
    ``model=``: names, or specs with a name) and uses the set whose key they match (names
    compared without case; a field not given matches any one set only if a single set
    fits). A configuration no set matches gets the shared knobs, with a
    :class:`UserWarning` that says so; no selector at all means the shared knobs, silently.
    """

    prefill: Mapping[str, float] = dataclasses.field(default_factory=lambda: dict(_IDEAL))
    decode: Mapping[str, float] = dataclasses.field(default_factory=lambda: dict(_IDEAL))
    source: str = ""
    held_out_error: float | None = None
    group_by: tuple = ()
    groups: Mapping = dataclasses.field(default_factory=dict)
    base: Engine = IDEAL

    def __post_init__(self):
        check_type("base", self.base, Engine)
        object.__setattr__(self, "prefill", MappingProxyType(_check_knobs("prefill", self.prefill)))
        object.__setattr__(self, "decode", MappingProxyType(_check_knobs("decode", self.decode)))
        check_string("source", self.source, allow_empty=True)
        object.__setattr__(self, "held_out_error",
                           real_number("held_out_error", self.held_out_error, lo=0,
                                       allow_none=True))
        group_by, groups = _check_groups(self.group_by, self.groups)
        object.__setattr__(self, "group_by", group_by)
        object.__setattr__(self, "groups", MappingProxyType(groups))

    @property
    def label(self) -> str:
        """What an output computed with this calibration says of itself.

        ``"calibrated: <source>, held-out TPOT error x%"`` (the error where it is known), and
        how many knob sets it keeps by which fields, where it keeps any.
        """
        text = f"calibrated: {self.source or 'unnamed calibration'}"
        if self.groups:
            text += f", {len(self.groups)} knob sets by {'/'.join(self.group_by)}"
        if self.held_out_error is not None:
            text += f", held-out TPOT error {self.held_out_error:.1f}%"
        return text

    def _knobs(self, phase: str, key=None) -> dict:
        """A phase's knobs as fitted (link shares as shares), shared or of the set ``key``."""
        return dict(self.prefill if phase == "prefill" else self.decode) if key is None else \
            dict(self.groups[key][phase])

    def group_for(self, *, warn: bool = True, **selectors):
        """The key of the knob set ``selectors`` pick, or ``None`` for the shared knobs.

        Parameters
        ----------
        warn : bool
            Warn (:class:`UserWarning`) when selectors are given but no knob set matches.
            Default True.
        **selectors
            ``gpu``, ``engine``, ``dtype``, ``model``: names or specs with a ``name``; fields
            this calibration does not key by are ignored.

        Returns
        -------
        tuple of str or None
        """
        check_keys("selectors", selectors, GROUP_FIELDS, what="selector")
        given = {k: _selector_name(v) for k, v in selectors.items() if v is not None}
        if not self.groups or not any(k in self.group_by for k in given):
            return None
        fits = [key for key in self.groups
                if all(field not in given or key[i].lower() == given[field].lower()
                       for i, field in enumerate(self.group_by))]
        if len(fits) == 1:
            return fits[0]
        if warn:
            shown = ", ".join(f"{k}={v!r}" for k, v in given.items() if k in self.group_by)
            why = "no knob set matches" if not fits else f"{len(fits)} knob sets match"
            warnings.warn(f"calibration: {why} {shown}; using the shared knobs",
                          UserWarning, stacklevel=3)
        return None

    def engine_for(self, phase: str, **selectors) -> Engine:
        """The :class:`~rooflinekit.Engine` this calibration gives for a phase.

        Parameters
        ----------
        phase : {"prefill", "decode", "step"}
            ``"prefill"`` and ``"decode"``: that phase's fitted knobs (TTFT, and ITL,
            throughput and cost). ``"step"``: the mixed step a continuous batcher runs, each
            knob from the phase where it binds (below).
        **selectors
            ``gpu``, ``engine``, ``dtype``, ``model``: pick a knob set (see
            :meth:`group_for`); none: the shared knobs.

        Returns
        -------
        Engine
            :attr:`base` with the knobs replaced, labelled :attr:`label`.

        Notes
        -----
        A continuous-batching step mixes prompt tokens (compute-bound) with decode tokens
        (memory-bound) and is timed with one engine: ``compute_efficiency``,
        ``gemm_half_tokens``, ``prefill_overhead`` and the link share come from prefill;
        ``bandwidth_efficiency``, ``step_overhead``, ``layer_overhead``,
        ``kv_bandwidth_efficiency`` and ``interconnect_latency`` from decode (a step that
        carries decodes is a decode step; a prefill's own overhead also holds client time).
        """
        check_one_of("phase", phase, roofline.PHASES)
        key = self.group_for(**selectors)
        if phase == "step":
            prefill, decode = self._knobs("prefill", key), self._knobs("decode", key)
            knobs = {k: (prefill if _CLOCK_PHASE.get(k) == "prefill" else decode)[k]
                     for k in (*PARAMETERS, *ENGINE_KNOBS, *LINK_KNOBS)
                     if k in (prefill if _CLOCK_PHASE.get(k) == "prefill" else decode)}
        else:
            knobs = self._knobs(phase, key)
        return dataclasses.replace(self.base, **knobs, label=self.label)

    def to_dict(self) -> dict:
        """A JSON-ready dict (seconds for the overheads; the held-out error where known)."""
        out = {"prefill": dict(self.prefill), "decode": dict(self.decode), "source": self.source}
        if self.held_out_error is not None:
            out["held_out_error"] = self.held_out_error
        if self.groups:
            out["group_by"] = list(self.group_by)
            out["groups"] = [{"key": list(key), "prefill": dict(knobs["prefill"]),
                              "decode": dict(knobs["decode"])}
                             for key, knobs in self.groups.items()]
        if self.base != IDEAL:
            base = self.base.to_dict()
            # the label the fields give is written afresh on reading
            if base["label"] == self.base.replace().label:
                del base["label"]
            out["base"] = base
        return out

    @classmethod
    def from_dict(cls, data: Mapping) -> "Calibration":
        """The inverse of :meth:`to_dict` (a file without knob sets reads as before)."""
        check_mapping("data", data)
        check_keys("data", data, ("prefill", "decode", "source", "held_out_error", "group_by",
                                  "groups", "base"), what="calibration field")
        groups = data.get("groups", [])
        if not isinstance(groups, list):
            raise TypeError(f"data.groups must be a list of knob sets; got "
                            f"{type(groups).__name__}")
        sets = {}
        for i, entry in enumerate(groups):
            entry = check_mapping(f"data.groups[{i}]", entry)
            check_keys(f"data.groups[{i}]", entry, ("key", *PHASES), what="field")
            key = entry.get("key")
            if not isinstance(key, list):
                raise TypeError(f"data.groups[{i}].key must be a list of names; got "
                                f"{type(key).__name__}")
            sets[tuple(key)] = {p: entry.get(p, {}) for p in PHASES}
        return cls(prefill=data.get("prefill", {}), decode=data.get("decode", {}),
                   source=data.get("source", ""), held_out_error=data.get("held_out_error"),
                   group_by=tuple(data.get("group_by", ())), groups=sets,
                   base=Engine.from_dict(check_mapping("data.base", data.get("base", {}))))


#: Where the mixed step takes each knob from: the phase whose steps it shapes (decode
#: where not listed).
_CLOCK_PHASE = {"compute_efficiency": "prefill", "gemm_half_tokens": "prefill",
                "prefill_overhead": "prefill", "interconnect_efficiency": "prefill"}


def save_calibration(calibration: Calibration, path) -> Path:
    """Write a :class:`Calibration` as JSON and return the path."""
    check_type("calibration", calibration, Calibration)
    path = Path(path)
    with path.open("w", encoding="utf-8") as fh:
        json.dump(calibration.to_dict(), fh, indent=1)
        fh.write("\n")
    return path


def load_calibration(path) -> Calibration:
    """Read a :class:`Calibration` written by :func:`save_calibration`.

    Raises
    ------
    ValueError, TypeError
        A file that is not JSON or not a calibration, not a regular file, not UTF-8 or larger
        than :data:`~rooflinekit._validation.MAX_CONFIG_BYTES`; the message names the file.
    """
    path = Path(path)
    data = parse_json(read_regular_file(path, "calibration file", MAX_CONFIG_BYTES),
                      f"calibration file {path}")
    try:
        return Calibration.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{path}: {exc}") from None


def predict(measurements, calibration: Calibration | Engine | None = None, *, models=None,
            gpus=None, workload: str = "isolated") -> xr.Dataset:
    """Roofline TTFT and decode time for every measured configuration [s].

    Parameters
    ----------
    measurements : Dataset, list of rows or path
        The configurations (see :func:`measurements_from_records`).
    calibration : Calibration, Engine or None
        What times the rows. A :class:`Calibration`: each phase's knobs (each row's knob set
        where it keeps them) on its :attr:`~Calibration.base` engine. An
        :class:`~rooflinekit.Engine`: a calibration that holds no knobs, so every field is the
        engine's own in both phases (the roofline functions called with ``engine=``). Default
        :data:`~rooflinekit.IDEAL`.
    models, gpus : mapping of name -> ModelShape / GPU, optional
        Specs for names that are not in the catalogue (they take precedence).
    workload : {"isolated", "serving", "loaded"}
        How a measured row maps onto engine steps; see :func:`calibrate`. Default "isolated".

    Returns
    -------
    xarray.Dataset
        ``prefill`` and ``decode`` [s] over ``measurement``; ``attrs["model_quality"]`` is the
        calibration's or the engine's label.

    Raises
    ------
    TypeError
        ``calibration`` is neither, or an engine field is not a single number.
    """
    ds = _check_measurements(measurements)
    calibration = IDEAL if calibration is None else calibration
    if not isinstance(calibration, (Calibration, Engine)):
        raise TypeError(f"calibration must be a Calibration, a rooflinekit.Engine or None; got "
                        f"{type(calibration).__name__}")
    engine = calibration if isinstance(calibration, Engine) else calibration.base
    groups = _Groups(ds, _check_overrides("models", models, ModelShape),
                     _check_overrides("gpus", gpus, GPU), _check_engine(engine),
                     _check_workload(workload))
    group_by = getattr(calibration, "group_by", ())
    keys = _row_keys(ds, group_by) if all(field in ds for field in group_by) else \
        [None] * ds.sizes[MEASUREMENT]
    return xr.Dataset(
        {phase: ((MEASUREMENT,), _predict_calibrated(groups, phase, calibration, keys),
                 {"units": "s", "long_name": f"roofline {phase} time"}) for phase in PHASES},
        coords={MEASUREMENT: ds[MEASUREMENT].values},
        attrs={"model_quality": calibration.label})
