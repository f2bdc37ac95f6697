"""Speculative decoding on the roofline: tokens per step, the step's time, when it pays.

A step drafts ``k`` tokens per sequence (a draft model, or an MTP/EAGLE head costing a share of
the target's step) and the target verifies the ``k + 1`` positions in one pass: about one decode
step while decode is memory-bound, up to ``k + 1`` steps' arithmetic once it is compute-bound,
where speculation stops paying (Leviathan et al., ICML 2023; Chen et al., arXiv:2302.01318).
"""

from __future__ import annotations

import numbers

import numpy as np
import xarray as xr

from rooflinekit import catalog
from rooflinekit._labels import formula
from rooflinekit._validation import check_fraction, check_integer, describe, real_number
from rooflinekit.models import ModelShape
from rooflinekit.roofline.engine import engine_for
from rooflinekit.roofline.latency import decode_step_time
from rooflinekit.roofline.step import Step, kv_tokens, step_formula, step_time

__all__ = ["speculative_tokens_per_step", "verification_step_time", "draft_step_time",
           "speculative_step_time", "speculative_speedup"]


def _check_acceptance(name, value):
    check_fraction(name, value)


def _check_draft_tokens(name, value):
    check_integer(name, value, lo=0)


@formula("tokens/step", "expected tokens per speculative step",
         checks={"acceptance": _check_acceptance, "draft_tokens": _check_draft_tokens},
         exact=("acceptance", "draft_tokens"))
def speculative_tokens_per_step(acceptance, draft_tokens):
    """Expected tokens a sequence gains per target step with ``draft_tokens`` drafted [tokens].

    Parameters
    ----------
    acceptance : float, array_like or xarray.DataArray
        Probability α that the target accepts a drafted token, i.i.d. per position [1], in
        [0, 1].
    draft_tokens : int, array_like or xarray.DataArray
        Tokens drafted per step, k [tokens], ≥ 0.

    Returns
    -------
    float, ndarray or xarray.DataArray
        ``(1 − α^(k+1)) / (1 − α)``, and ``k + 1`` at α = 1 [tokens/step]: between 1 (nothing
        accepted, the target's own token) and ``k + 1``.

    See Also
    --------
    speculative_step_time, speculative_speedup

    Notes
    -----
    The accepted prefix is the run of leading successes among k Bernoulli(α) trials, plus the
    token the target samples itself: ``E = Σ_{i=0..k} α^i``. k = 4, α = 0.8 gives 3.3616.

    References
    ----------
    .. [1] Leviathan, Kalman & Matias, ICML 2023, eq. (1).
    """
    a = np.asarray(acceptance, dtype=np.float64)
    k = np.asarray(draft_tokens, dtype=np.float64)
    # the geometric sum, written so that α = 1 gives k + 1 without dividing by zero
    return np.where(a < 1.0, (1.0 - a ** (k + 1.0)) / np.where(a < 1.0, 1.0 - a, 1.0), k + 1.0)


@step_formula("s", "verification step time", checks={"draft_tokens": _check_draft_tokens})
def verification_step_time(model, gpu, batch_size=1, context_length=0, tp=1, *, draft_tokens=4,
        engine=None):
    """The target's pass over ``draft_tokens + 1`` positions of every sequence [s].

    Parameters
    ----------
    draft_tokens : int, array_like or xarray.DataArray
        Tokens drafted per step, k [tokens], ≥ 0.

    See Also
    --------
    speculative_step_time, decode_step_time

    Notes
    -----
    One step of ``B·(k+1)`` tokens that all need logits, reading the weights once and each
    sequence's KV once (``B · KV(C)``), with ``B·(k+1)·C + B·k(k+1)/2`` attention pairs (each
    position attends the context and the drafted positions before it). At k = 0 it is exactly
    :func:`decode_step_time`.

    References
    ----------
    .. [1] Leviathan, Kalman & Matias, ICML 2023, §3 (parallel verification).
    """
    k = draft_tokens
    read = batch_size * kv_tokens(model, context_length)
    step = Step(batch_size * (k + 1.0), 0.0, read,
                read * k + batch_size * k * (k + 1.0) / 2.0)
    return step_time(model, gpu, step)


def _draft(draft):
    """A draft model (spec or catalogue name), or a draft head's cost as a share of a step."""
    if isinstance(draft, str):
        return catalog.model(draft)
    if isinstance(draft, ModelShape):
        return draft
    if isinstance(draft, numbers.Real) and not isinstance(draft, bool):
        # checked without float(): an integer beyond float range is refused, not an overflow
        return real_number("draft (as a share of the target's decode step)", draft, lo=0,
                           hi=1, lo_open=True)
    raise TypeError(f"draft must be a ModelShape, a catalogue model name, or a share of the "
                    f"target's decode step in (0, 1]; got {describe(draft)}")


def _check_pair(model, draft):
    """A draft model must share the target's vocabulary and be smaller."""
    if not isinstance(draft, ModelShape) or not isinstance(model, ModelShape):
        return
    if draft.vocab_size is not None and model.vocab_size is not None and \
            draft.vocab_size != model.vocab_size:
        raise ValueError(f"draft {draft.name!r} has another vocabulary ({draft.vocab_size} "
                         f"tokens) than {model.name!r} ({model.vocab_size}); its tokens could not "
                         f"be verified")
    if draft.n_layers > model.n_layers:
        raise ValueError(f"draft {draft.name!r} has more layers ({draft.n_layers}) than "
                         f"{model.name!r} ({model.n_layers}): it would not be a cheap draft")


def speculative_step_time(model, gpu, batch_size=1, context_length=0, tp=1, *, draft,
                          draft_tokens=4, engine=None):
    """One speculative step: ``draft_tokens`` draft steps and the target's verification [s].

    Parameters
    ----------
    model, gpu, batch_size, context_length, tp
        As for :func:`decode_step_time` (the target).
    draft : ModelShape, str or float
        The draft model (a spec or catalogue name, run on the same GPUs with the same ``tp``),
        or the cost of one draft step as a share of the target's decode step in (0, 1] (an
        MTP or EAGLE head).
    draft_tokens : int, array_like or xarray.DataArray
        Tokens drafted per step, k [tokens], ≥ 0.
    engine : Engine or Calibration, optional
        How the engine runs a decode step (:class:`rooflinekit.Engine`), for the target's and
        the draft's steps alike. Default :data:`rooflinekit.IDEAL`.

    Returns
    -------
    float, ndarray or xarray.DataArray
        ``k · t_draft + t_verify`` [s].

    Raises
    ------
    ValueError
        A draft model with another vocabulary or more layers than the target, or a share
        outside (0, 1].

    See Also
    --------
    speculative_tokens_per_step, speculative_speedup, verification_step_time

    Notes
    -----
    ``t_draft`` is :func:`decode_step_time` of the draft at the same batch and context, or the
    share times the target's. The draft's weights also take memory from the KV budget, which this
    step time does not show (:func:`rooflinekit.memory.weight_bytes` of the draft).

    References
    ----------
    .. [1] Leviathan, Kalman & Matias, ICML 2023; Li et al., EAGLE, ICML 2024.
    """
    model, drafter, engine = _target_and_draft(model, gpu, draft, engine)
    check_integer("draft_tokens", draft_tokens, lo=0)
    verify = verification_step_time(model, gpu, batch_size, context_length, tp,
                                    draft_tokens=draft_tokens, engine=engine)
    one = _draft_step(model, gpu, drafter, batch_size, context_length, tp, engine)
    return _label(draft_tokens * one + verify, "speculative_step_time", "s",
                  "speculative step time")


def _target_and_draft(model, gpu, draft, engine):
    """The target (a spec or catalogue name), the checked draft, and the decode engine."""
    if isinstance(model, str):
        model = catalog.model(model)
    drafter = _draft(draft)
    _check_pair(model, drafter)
    return model, drafter, engine_for(engine, "decode", model=model, gpu=gpu)


def _draft_step(model, gpu, drafter, batch_size, context_length, tp, engine):
    """One draft step: the draft model's decode step, or a head's share of the target's."""
    if isinstance(drafter, float):
        return drafter * decode_step_time(model, gpu, batch_size, context_length, tp,
                                          engine=engine)
    return decode_step_time(drafter, gpu, batch_size, context_length, tp, engine=engine)


def draft_step_time(model, gpu, batch_size=1, context_length=0, tp=1, *, draft,
                    engine=None):
    """Time of one draft step of speculative decoding, every sequence drafting a token [s].

    Parameters
    ----------
    model, gpu, batch_size, context_length, tp, draft, engine
        As for :func:`speculative_step_time`.

    Returns
    -------
    float, ndarray or xarray.DataArray
        ``t_draft`` [s]: :func:`decode_step_time` of the draft model at the same batch and
        context on the same ``tp`` GPUs, or the head's share times the target's.

    Raises
    ------
    ValueError
        As for :func:`speculative_step_time`.

    See Also
    --------
    speculative_step_time, verification_step_time

    Notes
    -----
    ``t_speculative = k · t_draft + t_verify``: the ``k`` draft steps run one after another
    before the target verifies. A head of share ``s`` costs ``s · T(B, C)`` a step.

    References
    ----------
    .. [1] Leviathan, Kalman & Matias, ICML 2023; Li et al., EAGLE, ICML 2024.
    """
    model, drafter, engine = _target_and_draft(model, gpu, draft, engine)
    return _label(_draft_step(model, gpu, drafter, batch_size, context_length, tp, engine),
                  "draft_step_time", "s", "draft step time")


def speculative_speedup(model, gpu, batch_size=1, context_length=0, tp=1, *, draft,
                        draft_tokens=4, acceptance, engine=None):
    """Tokens per second with speculation over tokens per second without [1].

    Parameters
    ----------
    model, gpu, batch_size, context_length, tp, draft, draft_tokens, engine
        As for :func:`speculative_step_time`.
    acceptance : float, array_like or xarray.DataArray
        Acceptance probability α [1], in [0, 1].

    Returns
    -------
    float, ndarray or xarray.DataArray
        ``E(α, k) · t_decode / t_speculative`` [1]: above 1 speculation pays; the effective ITL
        is ``t_speculative / E``.

    See Also
    --------
    speculative_tokens_per_step, speculative_step_time

    Notes
    -----
    At batch 1 with memory-bound decode the verification costs about one decode step, so the
    speed-up approaches ``E / (1 + k · c)`` with c the draft step's share of the target's. As the
    batch grows decode turns compute-bound and verification costs up to ``k + 1`` steps: the
    batch where the speed-up falls below 1 is where speculation stops paying.

    References
    ----------
    .. [1] Leviathan, Kalman & Matias, ICML 2023, §3.4 (walltime improvement).
    """
    if isinstance(model, str):
        model = catalog.model(model)   # a catalogue name, as speculative_step_time takes
    engine = engine_for(engine, "decode", model=model, gpu=gpu)
    gained = speculative_tokens_per_step(acceptance, draft_tokens)
    plain = decode_step_time(model, gpu, batch_size, context_length, tp, engine=engine)
    spec = speculative_step_time(model, gpu, batch_size, context_length, tp, draft=draft,
                                 draft_tokens=draft_tokens, engine=engine)
    return _label(gained * plain / spec, "speculative_speedup", "1",
                  "speculative decoding speed-up")


def _label(value, name, units, long_name):
    """Label a DataArray result (a combination of labelled formulas loses its attributes)."""
    if isinstance(value, xr.DataArray):
        return value.rename(name).assign_attrs(units=units, long_name=long_name)
    return value
