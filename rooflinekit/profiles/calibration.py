"""Engine profiles: an engine per phase, fitted, kept as JSON.

:class:`Calibration` holds the roofline's knobs per phase (prefill, decode), knob sets of their
own, their intervals and the base :class:`~rooflinekit.Engine` they were fitted on; it gives the
``Engine`` of a phase (:meth:`Calibration.engine_for`), so it stands wherever an engine does.
:func:`save_calibration` and :func:`load_calibration` keep one as JSON; the fit that makes one
is :mod:`rooflinekit.calibrate`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import warnings
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import numpy as np

from rooflinekit import roofline
from rooflinekit._validation import (
    MAX_CONFIG_BYTES,
    check_keys,
    check_mapping,
    check_one_of,
    check_string,
    check_type,
    parse_json,
    read_regular_file,
    real_number,
    show,
    whole_number,
)
from rooflinekit.profiles.names import ENGINE_NAMES, is_engine_name, split_engine_name
from rooflinekit.roofline import IDEAL, MAX_MXFP4_SHARE, Engine

__all__ = ["PHASES", "PARAMETERS", "ENGINE_KNOBS", "LINK_KNOBS", "KNOBS", "IDEAL_KNOBS",
           "ENGINE_IDEAL_KNOBS", "SECONDS_KNOBS", "GROUP_FIELDS", "Calibration",
           "save_calibration", "load_calibration"]

#: The phases a calibration fits: "prefill" (to TTFT) and "decode" (to TPOT/ITL).
PHASES = ("prefill", "decode")
PARAMETERS = ("compute_efficiency", "bandwidth_efficiency", "step_overhead")

#: The knobs that say what a serving engine does beyond the three: a fixed cost per layer
#: per step [s], the KV traffic's own bandwidth efficiency [1], the tokens at which the GEMMs
#: reach half their efficiency [tokens], the TTFT intercept of a step with prompt tokens [s],
#: the per-hop all-reduce latency [s], the front end's time outside the steps [s], and the
#: low-precision (FP8) GEMMs' extra fixed time per layer [s], share of their own peak [1] and
#: share of the HBM bandwidth their weight reads reach [1] (on an FP4 path the ``fp4_`` pair
#: of those two shares), a fixed cost per layer in the GPU's clock cycles [cycles]
#: (``layer_cycles``: seconds ``layer_cycles / boost_clock``, so that it transfers between
#: GPUs of different clocks), the host's time per decode token that the GPU waits for [s]
#: (``sequence_overhead``), the share of the GEMMs' efficiency a mixture-of-experts model's
#: routed experts reach [1] (``moe_compute_share``; ``mxfp4_moe_compute_share`` for MXFP4
#: experts, in (0, 6]), the extra fixed time of a multi-head
#: latent attention layer [s] (``mla_layer_overhead``), the share of the peak attention
#: reaches [1] (``attention_compute_efficiency``; ``narrow_head_attention_share`` of it with
#: heads of 64, in (0, 1]), and the latency an all-reduce adds where the
#: group spans more than one host's GPUs [s] (``cross_host_allreduce_latency``), and a
#: hybrid's Gated DeltaNet prompt pass: its layers' launches [s], its chain per token of the
#: longest chunk [s] and its time per token and state element [s] (``recurrent_*``).
#: Each is an :class:`~rooflinekit.Engine` field whose default is the ideal model.
ENGINE_KNOBS = ("layer_overhead", "kv_bandwidth_efficiency", "gemm_half_tokens",
                "prefill_overhead", "interconnect_latency", "frontend_latency",
                "low_precision_layer_overhead", "low_precision_compute_efficiency",
                "layer_cycles", "moe_layer_overhead", "sequence_overhead",
                "low_precision_bandwidth_efficiency", "fp4_compute_efficiency",
                "fp4_bandwidth_efficiency", "moe_compute_share", "mxfp4_moe_compute_share",
                "mla_layer_overhead",
                "attention_compute_efficiency", "cross_host_allreduce_latency",
                "recurrent_layer_overhead", "recurrent_chain_time", "recurrent_element_time",
                "narrow_head_attention_share")
#: Knobs a calibration holds as a share of a GPU's own figure: ``interconnect_efficiency``, the
#: share of the per-direction link bandwidth [1] the all-reduces reach (an
#: :class:`~rooflinekit.Engine` field). A share, not an absolute bandwidth, because one
#: engine's collectives reach a similar share of an A100's and an H100's NVLink
#: (docs/calibration.md: the share transfers between GPUs, a fitted absolute bandwidth does not).
#: ``host_traffic_share`` [1], in [0, 1], the share of a PCIe group's all-reduce traffic
#: that crosses the host link the catalogue says the whole group shares past its
#: peer-to-peer domain (``host_link_bandwidth``, ``p2p_gpus``): a structural switch read with
#: the GPU's own figures, no effect on a GPU without such a link; 0 (ideal) by default.
LINK_KNOBS = ("interconnect_efficiency", "host_traffic_share")
#: Every knob a calibration can hold.
KNOBS = PARAMETERS + ENGINE_KNOBS + LINK_KNOBS
#: The knobs in the order :meth:`Calibration.draw` draws their deviates, block after block: a
#: knob added later goes in a new block at the end, so that it never moves another knob's draws
#: (a plan with a given seed stays what it was).
DRAW_BLOCKS = (("compute_efficiency", "bandwidth_efficiency", "step_overhead", "layer_overhead",
                "kv_bandwidth_efficiency", "gemm_half_tokens", "prefill_overhead",
                "interconnect_latency", "interconnect_efficiency"),
               ("frontend_latency",),
               ("low_precision_compute_efficiency", "low_precision_layer_overhead"),
               ("host_traffic_share",), ("layer_cycles",), ("moe_layer_overhead",),
               ("sequence_overhead",), ("low_precision_bandwidth_efficiency",),
               ("fp4_compute_efficiency", "fp4_bandwidth_efficiency"),
               ("moe_compute_share",), ("mla_layer_overhead",),
               ("attention_compute_efficiency",), ("cross_host_allreduce_latency",),
               ("recurrent_layer_overhead", "recurrent_chain_time", "recurrent_element_time"),
               ("mxfp4_moe_compute_share",), ("narrow_head_attention_share",))

#: Ideal values of the knobs: the guide's machine (§3), the roofline's defaults.
IDEAL_KNOBS = MappingProxyType({k: getattr(IDEAL, k) for k in PARAMETERS})
#: The engine knobs' and the link share's ideal values: :data:`~rooflinekit.IDEAL`'s fields,
#: where ``None`` means "as the weights' bandwidth efficiency" (KV) and "the base engine's
#: link latency, else the GPU's own" (all-reduce).
ENGINE_IDEAL_KNOBS = MappingProxyType({k: getattr(IDEAL, k) for k in ENGINE_KNOBS + LINK_KNOBS})
#: Knobs in seconds (fitted in milliseconds; shown in ms).
SECONDS_KNOBS = ("step_overhead", "layer_overhead", "prefill_overhead", "interconnect_latency",
                 "frontend_latency", "low_precision_layer_overhead", "moe_layer_overhead",
                 "sequence_overhead", "mla_layer_overhead", "cross_host_allreduce_latency",
                 "recurrent_layer_overhead")
#: Columns of a measurement table a calibration can keep knob sets by.
GROUP_FIELDS = ("gpu", "engine", "dtype", "model")


def _check_knobs(phase: str, knobs: Mapping) -> dict:
    """A phase's knobs: the three always (ideal where missing), an engine knob where given."""
    knobs = check_mapping(phase, knobs)
    check_keys(phase, knobs, KNOBS, what="knob")
    out = dict(IDEAL_KNOBS)
    for key, value in knobs.items():
        value = _check_knob(f"{phase}.{key}", key, value)
        if value is not None:
            out[key] = value
    return out


def _check_knob(name: str, knob: str, value):
    """One roofline knob as ``float``: an efficiency in (0, 1], a time [s] or tokens >= 0; ``None``
    for the optional ones below, whose defaults are the weights' efficiency, the GPU's own
    latency, ``compute_efficiency`` and the low-precision ones.
    """
    optional = knob in ("kv_bandwidth_efficiency", "interconnect_latency",
                        "low_precision_compute_efficiency", "low_precision_bandwidth_efficiency",
                        "fp4_compute_efficiency", "fp4_bandwidth_efficiency",
                        "attention_compute_efficiency")
    if knob in SECONDS_KNOBS or knob == "gemm_half_tokens":
        return real_number(name, value, lo=0, allow_none=optional)
    if knob == "layer_cycles":
        return real_number(name, value, lo=0)
    if knob == "host_traffic_share":
        return real_number(name, value, lo=0, hi=1)
    if knob == "mxfp4_moe_compute_share":
        return real_number(name, value, lo=0, hi=MAX_MXFP4_SHARE, lo_open=True, allow_none=True)
    return real_number(name, value, lo=0, hi=1, lo_open=True, allow_none=optional)


def _check_serving_engine(value) -> None:
    """``None``, or a name of :data:`~rooflinekit.profiles.ENGINE_NAMES` with an optional
    ``@VERSION`` (:func:`~rooflinekit.profiles.split_engine_name`; not ``"ideal"``)."""
    if value is None:
        return
    if not isinstance(value, str):
        raise TypeError(f"serving_engine must be None or a string such as 'trtllm'; got "
                        f"{type(value).__name__}")
    if not is_engine_name(value) or split_engine_name(value)[0] not in ENGINE_NAMES:
        raise ValueError(f"serving_engine must be one of {', '.join(ENGINE_NAMES)}, optionally "
                         f"with @VERSION; got {value!r}")


def _check_intervals(calibration) -> dict:
    """``calibration.intervals`` checked: per phase, a ``(low, high)`` pair of numbers per knob
    the phase holds, ``low <= value <= high``, in the knob's own range."""
    intervals = check_mapping("intervals", calibration.intervals)
    check_keys("intervals", intervals, PHASES, what="phase")
    out = {}
    for phase, knobs in intervals.items():
        knobs = check_mapping(f"intervals.{phase}", knobs)
        held = getattr(calibration, phase)
        check_keys(f"intervals.{phase}", knobs, tuple(held), what="knob this phase holds")
        out[phase] = {}
        for knob, pair in knobs.items():
            name = f"intervals.{phase}.{knob}"
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise TypeError(f"{name} must be a (low, high) pair; got {pair!r}")
            low, high = (_check_knob(f"{name}[{i}]", knob, v) for i, v in enumerate(pair))
            value = held[knob]
            if value is None or not low <= value <= high:
                raise ValueError(f"{name} = ({low}, {high}) must contain the knob's value "
                                 f"{value}")
            out[phase][knob] = (low, high)
    return out


def _selector_name(value):
    """A selector as the text a measurement column holds: a spec's name, or the string."""
    if value is None:
        return None
    name = getattr(value, "name", value)
    if not isinstance(name, str):
        raise TypeError(f"a knob-set selector must be a name or a spec with a name; got "
                        f"{type(value).__name__}")
    return name


def _canonical(field: str, name: str) -> str:
    """A knob-set key's or selector's name as the catalogue spells it, where ``field`` is
    ``"gpu"`` or ``"model"`` and the name is a catalogue name or alias (``"h100"`` ->
    ``"H100-SXM-80GB"``); any other name unchanged (a GPU or model of the user's own)."""
    return _catalogue_name(field, name) if field in ("gpu", "model") else name


@functools.lru_cache(maxsize=4096)
def _catalogue_name(field: str, name: str) -> str:
    # cached: engine_for asks on every call, and an unknown name costs the catalogue's
    # near-miss search
    from rooflinekit import catalog

    try:
        return (catalog.gpu if field == "gpu" else catalog.model)(name).name
    except (TypeError, ValueError):
        return name


def _check_groups(group_by, groups) -> tuple:
    """``group_by`` as a tuple of :data:`GROUP_FIELDS` and ``groups`` as checked knob sets, keys in
    the catalogue's spelling; two keys that then name the same set are refused, naming both.
    """
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
    out, given = {}, {}
    for key, phases in groups.items():
        key = (key,) if isinstance(key, str) else tuple(key)
        if len(key) != len(group_by) or not all(isinstance(k, str) for k in key):
            raise ValueError(f"groups: key {key!r} must hold one name per group_by field "
                             f"{group_by!r}")
        written = key
        key = tuple(_canonical(field, name) for field, name in zip(group_by, key))
        # selectors match without case: keys equal but for case are one set too
        folded = tuple(name.lower() for name in key)
        if folded in given:
            raise ValueError(f"groups: keys {given[folded]!r} and {written!r} name the same "
                             f"knob set {key!r} (catalogue aliases, or names equal but for "
                             f"case); keep one")
        given[folded] = written
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
        The shared knobs of each phase, each an :class:`~rooflinekit.Engine` field:
        ``compute_efficiency`` and ``bandwidth_efficiency`` in (0, 1] [1] and ``step_overhead``
        [s] ≥ 0, ideal (1, 1, 0) where missing; where fitted, the engine knobs
        (:data:`ENGINE_KNOBS`): ``layer_overhead``, ``low_precision_layer_overhead``,
        ``moe_layer_overhead`` and ``mla_layer_overhead`` [s per layer], ``prefill_overhead``
        and ``frontend_latency`` [s], ``interconnect_latency`` [s
        per hop], ``gemm_half_tokens`` [tokens], each ≥ 0, ``kv_bandwidth_efficiency``,
        ``low_precision_compute_efficiency``, ``low_precision_bandwidth_efficiency``,
        ``fp4_compute_efficiency``, ``fp4_bandwidth_efficiency`` and
        ``attention_compute_efficiency`` in (0, 1] [1]; and the
        link share
        ``interconnect_efficiency`` in (0, 1] [1] and ``host_traffic_share`` in [0, 1] [1]
        (:data:`LINK_KNOBS`).
    source : str
        What the knobs were fitted to.
    held_out_error : float, optional
        Held-out mean absolute percentage error of the decode time per output token (TPOT) [%],
        ≥ 0, from :func:`~rooflinekit.calibrate.cross_validate`; ``None`` (default) when the
        calibration was not cross-validated.
    held_out_error_ttft : float, optional
        The same for the time to first token (prefill) [%], ≥ 0; ``None`` (default) when not
        known.
    worse_than_ideal : sequence of str
        The phases ("prefill", "decode") whose held-out error is worse than the ideal
        roofline's on the same rows: :attr:`label` says so. Default none.
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
    intervals : mapping
        Confidence intervals of the shared knobs, ``{"prefill": {knob: (low, high)},
        "decode": {...}}`` in the knobs' units, each containing its knob's value:
        :func:`~rooflinekit.calibrate.calibrate`'s bootstrap percentile intervals. Default
        none (no model uncertainty known).
    interval_confidence : float
        The share of the knob's distribution each interval holds [1], in (0, 1); default
        0.9. :meth:`draw` reads it.
    serving_engine : str, optional
        The serving engine these knobs describe, as a planner names it (one of
        :data:`ENGINE_NAMES`, optionally ``@VERSION``: ``"trtllm"``, ``"vllm@0.11.0"``): a
        planner given this calibration runs that engine's scheduler defaults, admission and
        memory rule, as it does for the name. A shipped profile carries its own
        (:func:`~rooflinekit.profiles.engine_profile`). Default ``None``: vLLM's, the
        planner's default engine.

    See Also
    --------
    rooflinekit.calibrate.calibrate, rooflinekit.calibrate.cross_validate,
    save_calibration, load_calibration

    Notes
    -----
    Every path asks :meth:`engine_for` for the engine of its phase, model and GPU.
    ``Calibration()`` is the ideal model. :attr:`label` is what every output computed with it
    says of itself (``attrs["model_quality"]``).

    With knob sets, :meth:`engine_for` takes selectors (``gpu=``, ``engine=``, ``dtype=``,
    ``model=``: names, or specs with a name) and uses the set whose key they match (names
    compared without case; a field not given matches any one set only if a single set
    fits). A configuration no set matches gets the shared knobs, with a
    :class:`UserWarning` that says so; no selector at all means the shared knobs, silently.
    """

    prefill: Mapping[str, float] = dataclasses.field(default_factory=lambda: dict(IDEAL_KNOBS))
    decode: Mapping[str, float] = dataclasses.field(default_factory=lambda: dict(IDEAL_KNOBS))
    source: str = ""
    held_out_error: float | None = None
    group_by: tuple = ()
    groups: Mapping = dataclasses.field(default_factory=dict)
    base: Engine = IDEAL
    intervals: Mapping = dataclasses.field(default_factory=dict)
    interval_confidence: float = 0.9
    # keyword-only, after the fields a positional call may still name in order
    held_out_error_ttft: float | None = dataclasses.field(default=None, kw_only=True)
    worse_than_ideal: tuple = dataclasses.field(default=(), kw_only=True)
    serving_engine: str | None = dataclasses.field(default=None, kw_only=True)

    def __post_init__(self):
        check_type("base", self.base, Engine)
        object.__setattr__(self, "prefill", MappingProxyType(_check_knobs("prefill", self.prefill)))
        object.__setattr__(self, "decode", MappingProxyType(_check_knobs("decode", self.decode)))
        check_string("source", self.source, allow_empty=True)
        object.__setattr__(self, "held_out_error",
                           real_number("held_out_error", self.held_out_error, lo=0,
                                       allow_none=True))
        object.__setattr__(self, "held_out_error_ttft",
                           real_number("held_out_error_ttft", self.held_out_error_ttft, lo=0,
                                       allow_none=True))
        worse = (self.worse_than_ideal,) if isinstance(self.worse_than_ideal, str) else \
            tuple(self.worse_than_ideal)
        for phase in worse:
            check_one_of("worse_than_ideal", phase, PHASES)
        object.__setattr__(self, "worse_than_ideal", worse)
        object.__setattr__(self, "intervals", MappingProxyType(_check_intervals(self)))
        object.__setattr__(self, "interval_confidence", real_number(
            "interval_confidence", self.interval_confidence, lo=0, hi=1, lo_open=True,
            hi_open=True))
        group_by, groups = _check_groups(self.group_by, self.groups)
        object.__setattr__(self, "group_by", group_by)
        object.__setattr__(self, "groups", MappingProxyType(groups))
        _check_serving_engine(self.serving_engine)

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
        if self.held_out_error_ttft is not None:
            text += f", TTFT error {self.held_out_error_ttft:.1f}%"
        if self.worse_than_ideal:
            names = {"prefill": "TTFT", "decode": "TPOT"}
            text += (f" (WORSE THAN IDEAL in {' and '.join(names[p] for p in self.worse_than_ideal)}"
                     f": the ideal roofline predicts those rows better)")
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
        given = {k: _canonical(k, _selector_name(v)) for k, v in selectors.items()
                 if v is not None}
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
        ``low_precision_compute_efficiency``, ``gemm_half_tokens``, ``prefill_overhead``,
        ``frontend_latency`` and the link share come from prefill;
        ``bandwidth_efficiency``, ``step_overhead``, ``layer_overhead``,
        ``kv_bandwidth_efficiency``, ``low_precision_bandwidth_efficiency`` and
        ``interconnect_latency`` from decode (a step that
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

    def draw(self, seed: int) -> "Calibration":
        """This calibration with every knob that has an interval moved to one random draw.

        Parameters
        ----------
        seed : int
            Seed of the draw [1], >= 0. The same seed draws the same standard normal deviate
            for a knob of a phase in every calibration (common random numbers: two profiles
            drawn with one seed are moved alike, each within its own interval).

        Returns
        -------
        Calibration
            The knobs drawn, without intervals; its source (and so its label) says which
            draw it is.

        Notes
        -----
        Each knob is drawn as ``v + z · (high − v) / z_c`` for ``z ≥ 0`` and
        ``v + z · (v − low) / z_c`` below, ``z`` standard normal and ``z_c`` the normal
        quantile of ``(1 + interval_confidence) / 2``: a normal on each side of the fitted
        value that puts the interval's share of draws inside it. Knobs are drawn
        independently, in the order of :data:`DRAW_BLOCKS`; a draw is clipped to the knob's
        range (an efficiency to (0, 1], ``mxfp4_moe_compute_share`` to (0, 6], a time to ≥ 0).
        Knob sets (``groups``) are not drawn.
        """
        from statistics import NormalDist

        seed = whole_number("seed", seed, lo=0)
        rng = np.random.default_rng(seed)
        deviates = {}
        for block in DRAW_BLOCKS:
            drawn = rng.standard_normal((len(PHASES), len(block)))
            deviates.update({knob: drawn[:, j] for j, knob in enumerate(block)})
        z_c = NormalDist().inv_cdf((1.0 + self.interval_confidence) / 2.0)
        phases = {}
        for i, phase in enumerate(PHASES):
            knobs = dict(getattr(self, phase))
            for knob, (low, high) in self.intervals.get(phase, {}).items():
                z, value = float(deviates[knob][i]), knobs[knob]
                moved = value + z * ((high - value) if z >= 0 else (value - low)) / z_c
                ceiling = math.inf if knob in SECONDS_KNOBS or \
                    knob in ("gemm_half_tokens", "layer_cycles") else \
                    MAX_MXFP4_SHARE if knob == "mxfp4_moe_compute_share" else 1.0
                floor = 0.0 if ceiling == math.inf else min(value, low, 1e-3)
                knobs[knob] = min(max(moved, floor), ceiling)
            phases[phase] = knobs
        return dataclasses.replace(self, **phases, intervals={},
                                   source=f"{self.source} (knobs drawn, seed {seed})")

    def to_dict(self) -> dict:
        """A JSON-ready dict (seconds for the overheads; the held-out error where known)."""
        out = {"prefill": dict(self.prefill), "decode": dict(self.decode), "source": self.source}
        if self.held_out_error is not None:
            out["held_out_error"] = self.held_out_error
        if self.held_out_error_ttft is not None:
            out["held_out_error_ttft"] = self.held_out_error_ttft
        if self.worse_than_ideal:
            out["worse_than_ideal"] = list(self.worse_than_ideal)
        if self.serving_engine is not None:
            out["serving_engine"] = self.serving_engine
        if self.groups:
            out["group_by"] = list(self.group_by)
            out["groups"] = [{"key": list(key), "prefill": dict(knobs["prefill"]),
                              "decode": dict(knobs["decode"])}
                             for key, knobs in self.groups.items()]
        if self.intervals:
            out["intervals"] = {ph: {k: list(v) for k, v in knobs.items()}
                                for ph, knobs in self.intervals.items()}
            out["interval_confidence"] = self.interval_confidence
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
                                  "groups", "base", "intervals", "interval_confidence",
                                  "held_out_error_ttft", "worse_than_ideal", "serving_engine"),
                   what="calibration field")
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
            if not all(isinstance(name, str) for name in key):
                raise TypeError(f"data.groups[{i}].key must be a list of names (strings); got "
                                f"{show(key)}")
            if tuple(key) in sets:
                first = list(sets).index(tuple(key))
                raise ValueError(f"data.groups[{first}] and data.groups[{i}] have the same key "
                                 f"{show(key)}; keep one (the last would silently win)")
            sets[tuple(key)] = {p: entry.get(p, {}) for p in PHASES}
        return cls(prefill=data.get("prefill", {}), decode=data.get("decode", {}),
                   source=data.get("source", ""), held_out_error=data.get("held_out_error"),
                   group_by=tuple(data.get("group_by", ())), groups=sets,
                   base=Engine.from_dict(check_mapping("data.base", data.get("base", {}))),
                   intervals=data.get("intervals", {}),
                   interval_confidence=data.get("interval_confidence", 0.9),
                   held_out_error_ttft=data.get("held_out_error_ttft"),
                   worse_than_ideal=tuple(data.get("worse_than_ideal", ())),
                   serving_engine=data.get("serving_engine"))


#: Where the mixed step takes each knob from: the phase whose steps it shapes (decode
#: where not listed).
_CLOCK_PHASE = {"compute_efficiency": "prefill", "gemm_half_tokens": "prefill",
                "low_precision_compute_efficiency": "prefill",
                "fp4_compute_efficiency": "prefill",
                "attention_compute_efficiency": "prefill",
                "narrow_head_attention_share": "prefill",
                "prefill_overhead": "prefill", "interconnect_efficiency": "prefill",
                "frontend_latency": "prefill"}


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
                      f"calibration file {path}", unique_keys=True)
    try:
        return Calibration.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{path}: {exc}") from None


