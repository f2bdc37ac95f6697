"""The calibrated model: knobs per phase, kept as JSON, and roofline predictions per measured row.

:class:`Calibration` holds the roofline's three knobs (``compute_efficiency``,
``bandwidth_efficiency``, ``step_overhead``) per phase, prefill and decode; every roofline function
already takes them as keyword arguments, so a calibration is applied by passing them on
(:meth:`Calibration.apply` picks the phase from a function's name). :func:`save_calibration` and
:func:`load_calibration` keep one as JSON. :func:`predict` runs the roofline over every row of a
measurement table (:mod:`rooflinekit.calibrate.measurements`), grouped by (model, GPU, tp, dtype) so that one
call covers a configuration; the fit in :mod:`rooflinekit.calibrate` evaluates the same grouped
predictions. Everything public here is re-exported by :mod:`rooflinekit.calibrate`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType

import numpy as np
import xarray as xr

from rooflinekit import catalog, roofline
from rooflinekit.batching import IDEAL
from rooflinekit._validation import (
    check_keys,
    check_mapping,
    check_one_of,
    check_string,
    check_type,
    load_json,
    real_number,
    renamed_keyword,
)
from rooflinekit.calibrate.measurements import MEASUREMENT, _check_measurements
from rooflinekit.dtypes import bytes_per_element
from rooflinekit.hardware import GPU
from rooflinekit.models import ModelShape

__all__ = ["PHASE", "PARAMETER", "PHASES", "PARAMETERS", "IDEAL", "Calibration",
           "save_calibration", "load_calibration", "predict"]

#: Dimension of per-phase results: "prefill" (fitted to TTFT) and "decode" (fitted to TPOT/ITL).
PHASE = "phase"
#: Dimension of fitted knobs.
PARAMETER = "parameter"

PHASES = ("prefill", "decode")
PARAMETERS = ("compute_efficiency", "bandwidth_efficiency", "step_overhead")

#: Ideal values of the knobs: the guide's machine (§3), the roofline's defaults.
_IDEAL = MappingProxyType({"compute_efficiency": 1.0, "bandwidth_efficiency": 1.0,
                           "step_overhead": 0.0})


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


class _Groups:
    """Rows of a measurement table grouped by hardware configuration, ready for the roofline.

    The roofline takes one model and one GPU per call and broadcasts over arrays of batch sizes,
    context and prompt lengths; grouping keeps calls per fit evaluation to one per configuration.
    """

    def __init__(self, ds: xr.Dataset, models: Mapping, gpus: Mapping, roofline_options: Mapping,
                 workload: str = "isolated"):
        n = ds.sizes[MEASUREMENT]
        self.workload = workload
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
            extra = dict(roofline_options)
            if dtype:
                extra.setdefault("compute_dtype", dtype)
            self.groups.append((np.asarray(rows), model, gpu, tp, extra))
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
        if workload == "serving":
            # KV tokens each decoding sequence reads (window-capped), per configuration
            self.kv_read = np.empty(n)
            for idx, model, _, _, _ in self.groups:
                self.kv_read[idx] = roofline.effective_kv_tokens(model, self.context[idx])
        # A fit evaluates thousands of knob settings; the knobs enter a step only as
        # max(compute / ce, memory / be) + overhead + communication, so each row's three terms
        # are taken from the step kernel once and every setting is then plain arithmetic.
        self.terms = {phase: self._terms(phase) for phase in PHASES}

    def _steps(self, phase: str, idx: np.ndarray, model, cost) -> tuple:
        """The kernel's token counts (decode, prompt, KV read, attention pairs) of rows ``idx``.

        The steps :func:`~rooflinekit.roofline.decode_step_time`,
        :func:`~rooflinekit.roofline.prefill_time` and
        :func:`~rooflinekit.roofline.mixed_step_time` build; ``test_calibrate`` holds the
        predictions to those functions.
        """
        b = self.batch[idx]
        f, w = cost.full_attention_fraction, cost.sliding_window
        if self.workload == "serving":
            # one engine step as a continuous-batching server runs it (Sarathi-Serve):
            # TTFT's step carries the new prompt beside the other b - 1 decodes; a decode
            # step carries b decodes and, on average, b / output new prompts' tokens
            if phase == "prefill":
                decodes, prompt, kv = b - 1.0, self.prompt[idx], (b - 1.0) * self.kv_read[idx]
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
        """Per row: compute time at full efficiency, memory time at full bandwidth,
        communication time and whether the step runs [s, s, s, 1]."""
        terms = {name: np.full(self.n, np.nan) for name in ("compute", "memory", "comm", "runs")}
        kernel = roofline.mixed_step_time_kernel
        for idx, model, gpu, tp, extra in self.groups:
            options = {k: v for k, v in extra.items() if k not in _IDEAL}
            cost = roofline.step_cost_coefficients(model, gpu, tp, **options)
            silent = {"allreduce_bytes_per_token": 0.0, "allreduce_latency": 0.0}
            alone = {
                "compute": cost._replace(bandwidth=math.inf, **silent),
                "memory": cost._replace(flops_per_token=0.0, lm_head_flops_per_token=0.0,
                                        attention_flops_per_pair=0.0, **silent),
                "comm": cost._replace(flops_per_token=0.0, lm_head_flops_per_token=0.0,
                                      attention_flops_per_pair=0.0, bandwidth=math.inf),
            }
            steps = list(zip(*self._steps(phase, idx, model, cost)))
            for name, part in alone.items():
                terms[name][idx] = [kernel(*part, *step) for step in steps]
            terms["runs"][idx] = [min(d + p, 1.0) for d, p, _, _ in steps]
        return terms

    def predict(self, phase: str, params: Mapping, rows: np.ndarray | None = None) -> np.ndarray:
        """Roofline seconds of ``phase`` for every row (or the given rows), with ``params``."""
        knobs = {**_IDEAL, **{k: v for k, v in params.items() if k in _IDEAL}}
        t = self.terms[phase]
        out = (np.maximum(t["compute"] / knobs["compute_efficiency"],
                          t["memory"] / knobs["bandwidth_efficiency"])
               + t["runs"] * knobs["step_overhead"] + t["comm"])
        if rows is not None:
            keep = np.zeros(self.n, dtype=bool)
            keep[rows] = True
            out = np.where(keep, out, np.nan)
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
    return check_one_of("workload", workload, ("isolated", "serving"))


# -- the calibrated model ----------------------------------------------------------------------

#: Roofline function names and the phase whose knobs they take.
_FUNCTION_PHASE = {
    "prefill_time": "prefill", "prefill_flops": "prefill", "prefill_bytes": "prefill",
    "ttft": "prefill", "time_to_first_token": "prefill",
    "decode_step_time": "decode", "decode_throughput": "decode", "itl": "decode",
    "inter_token_latency": "decode", "decode_time_per_token": "decode", "cost_per_token": "decode",
}


def _check_knobs(phase: str, knobs: Mapping) -> dict:
    knobs = check_mapping(phase, knobs)
    check_keys(phase, knobs, PARAMETERS, what="knob")
    out = dict(_IDEAL)
    for key, value in knobs.items():
        out[key] = _check_knob(f"{phase}.{key}", key, value)
    return out


def _check_knob(name: str, knob: str, value) -> float:
    """One roofline knob as ``float``: an efficiency in (0, 1], ``step_overhead`` >= 0 [s]."""
    if knob == "step_overhead":
        return real_number(name, value, lo=0)
    return real_number(name, value, lo=0, hi=1, lo_open=True)


@dataclasses.dataclass(frozen=True)
class Calibration:
    """Fitted roofline knobs per phase: the calibrated model.

    Parameters
    ----------
    prefill, decode : mapping
        ``compute_efficiency`` and ``bandwidth_efficiency`` in (0, 1] [1] and ``step_overhead``
        [s] ≥ 0 for each phase; missing knobs take their ideal values (1, 1, 0).
    source : str
        What the knobs were fitted to.
    held_out_error : float, optional
        Held-out mean absolute percentage error of the decode time per output token (TPOT) [%],
        ≥ 0, from :func:`~rooflinekit.calibrate.cross_validate`; ``None`` (default) when the
        calibration was not cross-validated.

    See Also
    --------
    rooflinekit.calibrate.calibrate, rooflinekit.calibrate.cross_validate,
    save_calibration, load_calibration

    Notes
    -----
    The knobs are keyword arguments every roofline function already takes, so a calibration is
    applied by passing them on: ``decode_step_time(..., **cal.decode_kwargs)``,
    ``prefill_time(..., **cal.prefill_kwargs)``, or ``cal.apply(func)`` which picks the phase
    from the function's name. The simulator's clock times mixed steps with one set of knobs:
    :meth:`clock_options`. ``Calibration()`` is the ideal model. :attr:`label` is what every
    output computed with it says of itself.
    """

    prefill: Mapping[str, float] = dataclasses.field(default_factory=lambda: dict(_IDEAL))
    decode: Mapping[str, float] = dataclasses.field(default_factory=lambda: dict(_IDEAL))
    source: str = ""
    held_out_error: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "prefill", MappingProxyType(_check_knobs("prefill", self.prefill)))
        object.__setattr__(self, "decode", MappingProxyType(_check_knobs("decode", self.decode)))
        check_string("source", self.source, allow_empty=True)
        object.__setattr__(self, "held_out_error",
                           real_number("held_out_error", self.held_out_error, lo=0,
                                       allow_none=True))

    @property
    def label(self) -> str:
        """What an output computed with this calibration says of itself.

        ``"calibrated: <source>, held-out TPOT error x%"`` (the error where it is known).
        """
        text = f"calibrated: {self.source or 'unnamed calibration'}"
        if self.held_out_error is not None:
            text += f", held-out TPOT error {self.held_out_error:.1f}%"
        return text

    @property
    def prefill_kwargs(self) -> dict:
        """Keyword arguments for :func:`rooflinekit.roofline.prefill_time` (and TTFT)."""
        return dict(self.prefill)

    @property
    def decode_kwargs(self) -> dict:
        """Keyword arguments for :func:`rooflinekit.roofline.decode_step_time` (ITL,
        decode throughput)."""
        return dict(self.decode)

    def clock_options(self) -> dict:
        """The knobs of one mixed engine step, as the simulator's roofline clock takes them.

        Returns
        -------
        dict
            ``compute_efficiency`` of prefill [1], ``bandwidth_efficiency`` of decode [1] and
            ``step_overhead`` of decode [s]: the ``roofline_options`` of
            :class:`~rooflinekit.batching.ContinuousBatcher` and
            :func:`~rooflinekit.roofline.mixed_step_time`.

        Notes
        -----
        A continuous-batching step mixes prefill tokens (compute-bound) with decode tokens
        (memory-bound), and the clock takes one set of knobs per step: each phase's knob goes
        where that phase binds, and the fixed cost per step is the decode step's (a step that
        carries decodes is a decode step; a prefill's own overhead also holds client time).
        """
        return {"compute_efficiency": self.prefill["compute_efficiency"],
                "bandwidth_efficiency": self.decode["bandwidth_efficiency"],
                "step_overhead": self.decode["step_overhead"]}

    def kwargs_for(self, phase_or_function) -> dict:
        """The knobs for a phase name ("prefill"/"decode") or a roofline function."""
        phase = phase_or_function
        if callable(phase_or_function):
            name = getattr(phase_or_function, "__name__", "")
            phase = _FUNCTION_PHASE.get(name)
            if phase is None:
                raise ValueError(f"cannot tell the phase of {name or phase_or_function!r}; "
                                 f"known functions: {', '.join(sorted(_FUNCTION_PHASE))}; "
                                 f"use kwargs_for('prefill') or kwargs_for('decode')")
        check_one_of("phase", phase, PHASES)
        return dict(self.prefill if phase == "prefill" else self.decode)

    def apply(self, func: Callable) -> Callable:
        """``func`` with this calibration's knobs for its phase bound as keyword defaults."""
        knobs = self.kwargs_for(func)

        @functools.wraps(func)
        def calibrated(*args, **kwargs):
            return func(*args, **{**knobs, **kwargs})
        return calibrated

    def to_dict(self) -> dict:
        """A JSON-ready dict (seconds for the overheads; the held-out error where known)."""
        out = {"prefill": dict(self.prefill), "decode": dict(self.decode), "source": self.source}
        if self.held_out_error is not None:
            out["held_out_error"] = self.held_out_error
        return out

    @classmethod
    def from_dict(cls, data: Mapping) -> "Calibration":
        """The inverse of :meth:`to_dict`."""
        check_mapping("data", data)
        check_keys("data", data, ("prefill", "decode", "source", "held_out_error"),
                   what="calibration field")
        return cls(prefill=data.get("prefill", {}), decode=data.get("decode", {}),
                   source=data.get("source", ""), held_out_error=data.get("held_out_error"))


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
        A file that is not JSON or not a calibration; the message names the file.
    """
    path = Path(path)
    with path.open(encoding="utf-8") as fh:
        data = load_json(fh, f"calibration file {path}")
    try:
        return Calibration.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{path}: {exc}") from None


@renamed_keyword("roofline_kwargs", "roofline_options")
def predict(measurements, calibration: Calibration | None = None, *, models=None, gpus=None,
            roofline_options=None, workload: str = "isolated") -> xr.Dataset:
    """Roofline TTFT and decode time for every measured configuration [s].

    Parameters
    ----------
    measurements : Dataset, list of rows or path
        The configurations (see :func:`measurements_from_records`).
    calibration : Calibration, optional
        Knobs to use; default the ideal model.
    models, gpus : mapping of name -> ModelShape / GPU, optional
        Specs for names that are not in the catalogue (they take precedence).
    roofline_options : mapping, optional
        Further options of both roofline functions (e.g. ``{"allreduce": True}``). The former
        name ``roofline_kwargs`` is accepted for one release, with a ``FutureWarning``.
    workload : {"isolated", "serving"}
        How a measured row maps onto engine steps; see :func:`calibrate`. Default "isolated".

    Returns
    -------
    xarray.Dataset
        ``prefill`` and ``decode`` [s] over ``measurement``.
    """
    ds = _check_measurements(measurements)
    calibration = Calibration() if calibration is None else calibration
    check_type("calibration", calibration, Calibration)
    groups = _Groups(ds, _check_overrides("models", models, ModelShape),
                     _check_overrides("gpus", gpus, GPU),
                     check_mapping("roofline_options", roofline_options, allow_none=True),
                     _check_workload(workload))
    return xr.Dataset(
        {phase: ((MEASUREMENT,), groups.predict(phase, calibration.kwargs_for(phase)),
                 {"units": "s", "long_name": f"roofline {phase} time"}) for phase in PHASES},
        coords={MEASUREMENT: ds[MEASUREMENT].values})
