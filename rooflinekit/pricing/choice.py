"""Which capacity may serve a workload, and the cheapest that may (guide §7, §6).

Capacity strategy is downstream of data classification: the :class:`Compliance` gates remove
options before any cost is compared, and exact ties go to pay-as-you-go.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Iterable, Mapping
from types import MappingProxyType

import numpy as np
import xarray as xr

from rooflinekit._labels import finish, is_labelled
from rooflinekit._validation import (
    check_bool,
    check_fraction,
    check_nonnegative,
    check_one_of,
    check_string,
    check_type,
    show,
)
from rooflinekit.pricing._inputs import USD_PER_MONTH, normalise_region, option_name, widened
from rooflinekit.pricing.capacity import PayAsYouGo, Provisioned, SelfHosted

__all__ = ["CLASSIFICATIONS", "Compliance", "admissibility", "NoAdmissibleOptionError", "Choice",
           "cheapest_option"]

#: Data classifications, least to most sensitive. By default only ``"restricted"`` data may not be
#: processed by a third party (§7); a :class:`Compliance` can override that either way.
CLASSIFICATIONS: tuple[str, ...] = ("public", "internal", "confidential", "restricted")
_THIRD_PARTY_ALLOWED = MappingProxyType(
    {"public": True, "internal": True, "confidential": True, "restricted": False})


#: The options the gates and the choice accept.
_OPTION_TYPES = (PayAsYouGo, Provisioned, SelfHosted)


@dataclasses.dataclass(frozen=True)
class Compliance:
    """What a workload's data allows: the gates applied before any cost comparison (guide §7).

    Parameters
    ----------
    classification : str
        One of :data:`CLASSIFICATIONS`: ``"public"``, ``"internal"`` (default), ``"confidential"``,
        ``"restricted"``.
    allowed_regions : iterable of str, optional
        Regions where the data may be processed (residency); ``None`` places no restriction. An
        option whose region is unknown is not admissible when regions are restricted.
    third_party_allowed : bool, optional
        Whether a third party may process the data; ``None`` (default) derives it from the
        classification: ``False`` for ``"restricted"``, ``True`` otherwise.
    name : str
        Label used in messages.

    References
    ----------
    .. [1] Serving-capacity guide §7: capacity strategy is downstream of data classification.
    """

    classification: str = "internal"
    allowed_regions: tuple[str, ...] | None = None
    third_party_allowed: bool | None = None
    name: str = "workload"

    def __post_init__(self):
        set_ = functools.partial(object.__setattr__, self)
        check_string("classification", self.classification)
        set_("classification", check_one_of("classification", self.classification,
                                            CLASSIFICATIONS, fold_case=True))
        if self.allowed_regions is not None:
            regions = ((self.allowed_regions,) if isinstance(self.allowed_regions, str)
                       else tuple(self.allowed_regions))
            if not regions:
                raise ValueError("allowed_regions must name at least one region, or be None; "
                                 "got an empty collection")
            set_("allowed_regions", tuple(normalise_region(r, f"allowed_regions[{i}]")
                                          for i, r in enumerate(regions)))
        if self.third_party_allowed is not None:
            set_("third_party_allowed", check_bool("third_party_allowed",
                                                   self.third_party_allowed))
        set_("name", option_name(self.name, "workload"))

    @property
    def allows_third_party(self) -> bool:
        """Whether a third party may process this workload's data."""
        if self.third_party_allowed is not None:
            return bool(self.third_party_allowed)
        return _THIRD_PARTY_ALLOWED[self.classification]


def admissibility(option, workload: Compliance) -> str | None:
    """Why ``option`` may not serve ``workload``, or ``None`` when it may (guide §7).

    Parameters
    ----------
    option : PayAsYouGo, Provisioned or SelfHosted
        A capacity option with its ``region`` and ``third_party`` attributes.
    workload : Compliance
        The workload's classification and allowed regions.

    Returns
    -------
    str or None
        A sentence naming the failed gate (third-party processing, residency), or ``None``.
    """
    check_type("option", option, _OPTION_TYPES)
    check_type("workload", workload, Compliance)
    if option.third_party and not workload.allows_third_party:
        return (f"{option.name!r} has a third party process the data, which "
                f"{workload.classification} data of {workload.name!r} does not allow")
    if workload.allowed_regions is not None:
        if option.region is None:
            return (f"{option.name!r} does not state where it processes data; "
                    f"{workload.name!r} must stay in {', '.join(workload.allowed_regions)}")
        if option.region not in workload.allowed_regions:
            return (f"{option.name!r} processes data in {option.region}; {workload.name!r} must "
                    f"stay in {', '.join(workload.allowed_regions)}")
    return None


class NoAdmissibleOptionError(ValueError):
    """No option passes the workload's admissibility gates; cost was never compared (§7).

    Attributes
    ----------
    workload : Compliance
        The workload that was refused.
    excluded : dict
        Option name -> the reason it is not admissible.
    """

    def __init__(self, workload: Compliance, excluded: Mapping[str, str]):
        self.workload = workload
        self.excluded = dict(excluded)
        reasons = "; ".join(self.excluded.values())
        super().__init__(f"no admissible option for {workload.name!r} "
                         f"({workload.classification} data): {reasons}")


@dataclasses.dataclass(frozen=True)
class Choice:
    """Outcome of :func:`cheapest_option`.

    Attributes
    ----------
    option : PayAsYouGo, Provisioned, SelfHosted or None
        The chosen option, for scalar inputs; ``None`` when no admissible option can serve the
        volume (every one is over capacity), and always ``None`` for array inputs (read ``name``).
    name : str, None, ndarray or DataArray
        Name of the chosen option; for array inputs an object array (``None`` where nothing can
        serve) over the inputs' shape or dimensions.
    cost : float, ndarray or DataArray
        Monthly cost of the choice [USD/month]; ``inf`` where nothing can serve.
    costs : dict
        Admissible option name -> its monthly cost [USD/month] (``inf`` above its capacity).
    excluded : dict
        Inadmissible option name -> the reason; these were removed before any cost comparison.
    reason : str
        One sentence saying how the choice was made.
    """

    option: object
    name: object
    cost: object
    costs: dict
    excluded: dict
    reason: str


@widened
def cheapest_option(monthly_tokens, options, output_fraction, *, workload=None, tie_rtol=1e-9):
    """The cheapest admissible way to serve a monthly volume at a mix (guide §6, §7).

    Parameters
    ----------
    monthly_tokens : float or array_like
        Tokens to serve in the month [tokens/month], >= 0.
    options : iterable of PayAsYouGo, Provisioned, SelfHosted
        Candidates, with unique names.
    output_fraction : float or array_like
        Share of billed tokens that are output tokens [1], in [0, 1]. Required.
    workload : Compliance, optional
        The data's classification and allowed regions; default an ``"internal"`` workload with no
        residency restriction.
    tie_rtol : float
        Relative tolerance within which a pay-as-you-go cost counts as tied [1], >= 0; default
        1e-9 (float noise only).

    Returns
    -------
    Choice
        The choice, its cost, every admissible option's cost and the excluded options' reasons.

    Raises
    ------
    NoAdmissibleOptionError
        When no option passes the workload's gates. The cheapest inadmissible option is never
        returned.

    Notes
    -----
    Order of decision, as §7 requires: (1) remove the options the workload may not use; (2) cost
    the rest at the volume and mix (dedicated ones ``inf`` above their capacity); (3) take the
    cheapest, on a tie pay-as-you-go — no commitment for no saving.

    References
    ----------
    .. [1] Serving-capacity guide §6 (capacity types) and §7 (sovereignty and compliance as
       serving constraints); §8 step 7: "Ties go to PAYG".
    """
    check_nonnegative("monthly_tokens", monthly_tokens)
    check_fraction("output_fraction", output_fraction)
    check_nonnegative("tie_rtol", tie_rtol)
    if isinstance(options, (str, bytes)) or not isinstance(options, Iterable):
        raise TypeError(f"options must be an iterable of PayAsYouGo, Provisioned or SelfHosted; "
                        f"got {show(options)}")
    options = list(options)
    if not options:
        raise ValueError("options must hold at least one option")
    for i, option in enumerate(options):
        check_type(f"options[{i}]", option, _OPTION_TYPES)
    names = [o.name for o in options]
    if len(set(names)) != len(names):
        raise ValueError(f"options must have unique names; got {names}")
    workload = Compliance() if workload is None else workload
    check_type("workload", workload, Compliance)

    excluded = {o.name: r for o in options if (r := admissibility(o, workload)) is not None}
    admissible = [o for o in options if o.name not in excluded]
    if not admissible:
        raise NoAdmissibleOptionError(workload, excluded)

    costs = {o.name: o.cost(monthly_tokens, output_fraction) for o in admissible}
    labelled = any(is_labelled(c) for c in costs.values())
    if labelled:
        arrays = xr.broadcast(*[c if is_labelled(c) else xr.DataArray(c) for c in costs.values()])
        template = arrays[0]
        stack = np.stack([a.transpose(*template.dims).values for a in arrays])
    else:
        stack = np.stack(np.broadcast_arrays(*[np.asarray(c, dtype=float)
                                               for c in costs.values()]))
    is_payg = np.array([isinstance(o, PayAsYouGo) for o in admissible])
    index = np.arange(len(admissible))

    def best(mask):
        if not mask.any():
            return np.full(stack.shape[1:], np.inf), np.zeros(stack.shape[1:], dtype=int)
        sub = stack[mask]
        j = np.argmin(sub, axis=0)  # first minimum: stable in the given order
        return np.take_along_axis(sub, j[None], axis=0)[0], index[mask][j]

    payg_cost, payg_idx = best(is_payg)
    other_cost, other_idx = best(~is_payg)
    take_payg = payg_cost <= other_cost + tie_rtol * np.abs(np.where(np.isfinite(other_cost),
                                                                      other_cost, 0.0))
    take_payg &= np.isfinite(payg_cost) | ~np.isfinite(other_cost)
    chosen = np.where(take_payg, payg_idx, other_idx)
    cost = np.where(take_payg, payg_cost, other_cost)
    feasible = np.isfinite(cost)
    name_table = np.array([o.name for o in admissible] + [None], dtype=object)
    chosen_names = name_table[np.where(feasible, chosen, len(admissible))]

    gated = f"; excluded before cost: {', '.join(excluded)}" if excluded else ""
    if np.ndim(cost) == 0 and not labelled:
        if not feasible:
            return Choice(None, None, math.inf, costs, excluded,
                          "the volume exceeds the capacity of every admissible option" + gated)
        i = int(chosen)
        tie = bool(take_payg) and bool(np.isfinite(other_cost)) and payg_cost >= other_cost
        how = ("tie: pay-as-you-go preferred" if tie else
               "only admissible option" if len(admissible) == 1 else "cheapest admissible option")
        return Choice(admissible[i], admissible[i].name, float(cost), costs, excluded, how + gated)
    if labelled:
        cost = finish(template.copy(data=cost), USD_PER_MONTH, "cost of the cheapest option")
        chosen_names = template.copy(data=chosen_names)
        chosen_names.attrs = {"units": "1", "long_name": "cheapest admissible option"}
    reason = "cheapest admissible option per cell, ties to pay-as-you-go" + gated
    if not feasible.all():
        reason += "; None where the volume exceeds every admissible option's capacity"
    return Choice(None, chosen_names, cost, costs, excluded, reason)
