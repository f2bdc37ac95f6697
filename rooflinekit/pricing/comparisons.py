"""Comparisons of the capacity types of :mod:`rooflinekit.pricing.capacity` (guide §6, §7).

Break-even, crossover volume, provisioned savings and unit cost, and the price of dedicated
capacity. Units as in :mod:`rooflinekit.pricing`: USD per 1M tokens, USD per month, tokens per
month. The output fraction ``f`` is always a required argument: the break-even moves by nearly
2× between f = 0.1 and f = 0.5 (§6.3, §10). Numbers, numpy arrays and DataArrays come back in
the same kind, so a whole break-even surface is one call.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import xarray as xr

from rooflinekit._labels import finish, is_labelled
from rooflinekit._validation import (
    check_bool,
    check_fraction,
    check_nonnegative,
    check_range,
    check_type,
)
from rooflinekit.pricing._inputs import (
    TOKENS_PER_MONTH,
    USD_PER_MONTH,
    USD_PER_MTOK,
    check_hits,
    prepare,
    widened,
)
from rooflinekit.pricing.capacity import (
    PayAsYouGo,
    Provisioned,
    SelfHosted,
    blended_price,
)
from rooflinekit.units import PER_MILLION

__all__ = [
    "BreakEven", "break_even", "crossover_volume", "provisioned_savings", "provisioned_unit_cost",
    "capacity_price",
]


# -- comparisons --------------------------------------------------------------------------------

class BreakEven(NamedTuple):
    """Break-even of a commitment against pay-as-you-go, for scalar and ndarray inputs.

    Attributes
    ----------
    tokens : float or ndarray
        Monthly volume at which the commitment costs what pay-as-you-go would [tokens/month].
    utilization : float or ndarray
        ``tokens`` as a share of the commitment's capacity at the mix [1]; above 1 the
        commitment never pays for itself on price.
    """

    tokens: object
    utilization: object


@widened
def break_even(provisioned, payg, output_fraction, *, prefix_share=0.0, cached_input_weight=1.0):
    """Volume and utilisation at which dedicated capacity costs what pay-as-you-go does (§6.3).

    Parameters
    ----------
    provisioned : Provisioned or SelfHosted
        The commitment; a :class:`SelfHosted` one needs ``capacity_tokens``.
    payg : PayAsYouGo
        The pay-as-you-go alternative.
    output_fraction : float or array_like
        Share of billed tokens that are output tokens, f [1], in [0, 1]. Required: a break-even
        without the mix is not a number (§6.3, §10).
    prefix_share : float or array_like
        Share of input tokens that hit a prefix cache, h [1], in [0, 1]; default 0. Pay-as-you-go
        bills them at ``payg.cached_input_per_mtok`` (required when h > 0); on the commitment
        each consumes ``cached_input_weight`` of an input token's capacity.
    cached_input_weight : float or array_like
        Capacity a cached input token consumes, in input tokens, c [1], in [0, 1]; default 1
        (a hit frees no capacity). A self-hosted hit skips its prefill compute, towards 0
        (:func:`rooflinekit.roofline.prefill_time` with ``cached_tokens``); Azure's PTUs
        discount cached input tokens up to 100% [2]_.

    Returns
    -------
    BreakEven or xarray.Dataset
        For scalar or ndarray inputs a :class:`BreakEven` ``(tokens, utilization)`` named tuple;
        when any input is labelled, an ``xr.Dataset`` with variables ``tokens`` [tokens/month] and
        ``utilization`` [1] over the inputs' dimensions.

    See Also
    --------
    blended_price, crossover_volume, rooflinekit.pricing.cost_per_request

    Notes
    -----
    ``tokens = C_p / c_b × 1e6`` with ``c_b`` the blended price per 1M tokens, and
    ``utilization = tokens / K(f)`` with ``K(f)`` the capacity at the mix (:class:`Provisioned`):
    it falls as f rises while the output weight ``w`` is below the price ratio ``c_out / c_in``.

    With a prefix hit share h the blended price is ``(c_in(1 − h) + c_cached·h)(1 − f) +
    c_out·f`` and the capacity at the mix grows to

    .. math:: K_h(f) = K(f) \\frac{(1 - f) + w f}{(1 - f)(1 - h + c h) + w f}

    (``w = 1`` for a :class:`SelfHosted` capacity, which does not depend on the mix): cheaper
    pay-as-you-go moves the break-even volume up, freed capacity moves its utilisation down.

    References
    ----------
    .. [1] Serving-capacity guide §6.3: $12,000/month, 4B tokens, $3/$12 per 1M → 76.92% at
       f = 0.1 and 40.00% at f = 0.5.
    .. [2] Microsoft, "Prompt caching" (Azure OpenAI documentation): on provisioned
       deployments cached input tokens are discounted up to 100% of their utilisation,
       https://learn.microsoft.com/azure/ai-foundry/openai/how-to/prompt-caching
    """
    _check_dedicated("provisioned", provisioned, "break-even utilisation")
    check_type("payg", payg, PayAsYouGo)
    check_fraction("output_fraction", output_fraction)
    check_hits(payg, prefix_share)
    check_fraction("cached_input_weight", cached_input_weight)
    a, (provisioned, payg) = prepare({"output_fraction": output_fraction,
                                      "prefix_share": prefix_share,
                                      "cached_input_weight": cached_input_weight},
                                     provisioned, payg)
    f, h, c = a["output_fraction"], a["prefix_share"], a["cached_input_weight"]
    tokens = provisioned.fixed_monthly_cost / blended_price(payg, f, cached_fraction=h) * \
        PER_MILLION
    w = getattr(provisioned, "output_weight", 1.0)
    # capacity consumed per billed token, without and with the hits (equal at h = 0)
    plain, hit = (1 - f) + w * f, (1 - f) * (1 - h + c * h) + w * f
    # the hits' share of the capacity each billed token uses (exactly 1 at h = 0)
    utilization = tokens / provisioned.capacity(f) * (hit / plain)
    if is_labelled(tokens) or is_labelled(utilization):
        tokens, utilization = xr.broadcast(xr.DataArray(tokens), xr.DataArray(utilization))
        return xr.Dataset({
            "tokens": finish(tokens, TOKENS_PER_MONTH, "break-even monthly volume"),
            "utilization": finish(utilization, "1", "break-even utilisation of capacity"),
        })
    return BreakEven(finish(tokens, TOKENS_PER_MONTH, "break-even monthly volume"),
                     finish(utilization, "1", "break-even utilisation of capacity"))


@widened
def crossover_volume(selfhosted, other, output_fraction, *, include_engineering=True,
                     whole_units=True):
    """Monthly volume above which self-hosting is cheaper than ``other`` (guide §6.5).

    Parameters
    ----------
    selfhosted : SelfHosted
        The self-hosted deployment.
    other : PayAsYouGo or Provisioned
        The alternative.
    output_fraction : float or array_like
        Share of billed tokens that are output tokens [1], in [0, 1].
    include_engineering : bool
        Count the engineering line (default); ``False`` gives the GPU-hours-only case the guide
        warns against.
    whole_units : bool
        Against a :class:`Provisioned` with ``units`` set, buy capacity in whole units (default);
        ``False`` treats it as divisible. Ignored for pay-as-you-go.

    Returns
    -------
    float or array_like
        [tokens/month]. Against pay-as-you-go, ``C_sh / c_b × 1e6``. Against provisioned capacity
        scaled to the volume in units of cost ``u`` and capacity ``k(f)``, ``⌊C_sh / u⌋ × k(f)``
        (``C_sh / u × k(f)`` when divisible): beyond it, the units needed cost more than
        self-hosting.

    Notes
    -----
    The self-hosted ``capacity_tokens`` is not checked: a crossover above it means self-hosting
    on that deployment never gets there.

    References
    ----------
    .. [1] Serving-capacity guide §6.5 and ``docs/conventions.md``: 17,545 / $3.90 = 4.50B tokens,
       42,520 / $3.90 ≈ 10.9B tokens at f = 0.1.
    """
    check_type("selfhosted", selfhosted, SelfHosted)
    check_type("other", other, (PayAsYouGo, Provisioned))
    check_fraction("output_fraction", output_fraction)
    check_bool("include_engineering", include_engineering)
    check_bool("whole_units", whole_units)
    a, (selfhosted, other) = prepare({"output_fraction": output_fraction}, selfhosted, other)
    f = a["output_fraction"]
    fixed = selfhosted._monthly(include_engineering)
    if isinstance(other, PayAsYouGo):
        return finish(fixed / blended_price(other, f) * PER_MILLION, TOKENS_PER_MONTH,
                      "self-hosting crossover volume against pay-as-you-go")
    n_units = 1.0 if other.units is None else other.units
    ratio = fixed / (other.monthly_cost / n_units)
    if whole_units and other.units is not None:
        ratio = np.floor(ratio)
    return finish(ratio * other.capacity(f) / n_units, TOKENS_PER_MONTH,
                  "self-hosting crossover volume against provisioned")


@widened
def provisioned_savings(provisioned, payg, monthly_tokens, output_fraction):
    """What dedicated capacity saves against pay-as-you-go at a volume [USD/month].

    Parameters
    ----------
    provisioned : Provisioned
        The commitment; volume above its capacity at the mix spills to ``payg``.
    payg : PayAsYouGo
        The pay-as-you-go price list.
    monthly_tokens : float or array_like
        Tokens demanded in the month [tokens/month], >= 0.
    output_fraction : float or array_like
        Share of billed tokens that are output tokens [1], in [0, 1].

    Returns
    -------
    float or array_like
        ``c_b·V − (C_p + c_b·max(V − K(f), 0))`` with prices per token [USD/month]; negative
        below the break-even volume. One call over ``output_fraction × prices × capacity ×
        monthly_tokens`` DataArrays gives the whole break-even surface.

    References
    ----------
    .. [1] Serving-capacity guide §6.3–6.4.
    """
    check_type("provisioned", provisioned, Provisioned)
    check_type("payg", payg, PayAsYouGo)
    check_nonnegative("monthly_tokens", monthly_tokens)
    check_fraction("output_fraction", output_fraction)
    a, (provisioned, payg) = prepare({"monthly_tokens": monthly_tokens,
                                      "output_fraction": output_fraction}, provisioned, payg)
    v, f = a["monthly_tokens"], a["output_fraction"]
    per_token = blended_price(payg, f) / PER_MILLION
    excess = np.maximum(v - provisioned.capacity(f), 0.0)
    saved = per_token * v - (provisioned.monthly_cost + per_token * excess)
    return finish(saved, USD_PER_MONTH, "saving of provisioned over pay-as-you-go")


@widened
def provisioned_unit_cost(provisioned, output_fraction, utilization):
    """Cost per token actually served by a commitment at a utilisation [USD per 1M tokens].

    Parameters
    ----------
    provisioned, output_fraction
        The commitment and the output share, as ``option`` and ``output_fraction`` of
        :func:`capacity_price`.
    utilization : float or array_like
        Share of the capacity at that mix actually used [1], in (0, 1].

    Returns
    -------
    float or array_like
        ``C_p / (utilization × K(f)) × 1e6`` [USD/1M tokens]; it equals the blended
        pay-as-you-go price exactly at the break-even utilisation.

    See Also
    --------
    capacity_price : the same cost per token of capacity, used or not.

    References
    ----------
    .. [1] Serving-capacity guide §6.3 and §6.5.
    """
    check_range("utilization", utilization, lo=0, hi=1, lo_open=True)
    _check_dedicated("provisioned", provisioned, "unit cost")
    check_fraction("output_fraction", output_fraction)
    a, (provisioned,) = prepare({"output_fraction": output_fraction,
                                 "utilization": utilization}, provisioned)
    price = capacity_price(provisioned, a["output_fraction"])
    return finish(price / a["utilization"], USD_PER_MTOK,
                  "unit cost of served tokens at the utilisation")


@widened
def capacity_price(option, output_fraction):
    """Price of one token of dedicated capacity, used or not [USD per 1M tokens].

    Parameters
    ----------
    option : Provisioned or SelfHosted
        Dedicated capacity (a :class:`SelfHosted` one needs ``capacity_tokens``).
    output_fraction : float or array_like
        Share of billed tokens that are output tokens [1], in [0, 1].

    Returns
    -------
    float or array_like
        ``fixed monthly cost / K(f) × 1e6`` [USD/1M tokens]: the floor price used by
        :func:`rooflinekit.planning.plan_with_spillover`.

    References
    ----------
    .. [1] Serving-capacity guide §6.3–6.4.
    """
    _check_dedicated("option", option, "capacity price")
    check_fraction("output_fraction", output_fraction)
    a, (option,) = prepare({"output_fraction": output_fraction}, option)
    capacity = option.capacity(a["output_fraction"])
    return finish(option.fixed_monthly_cost / capacity * PER_MILLION, USD_PER_MTOK,
                  "price of dedicated capacity")


def _check_dedicated(name: str, option, what: str) -> None:
    """``option`` is dedicated capacity with a known monthly capacity."""
    check_type(name, option, (Provisioned, SelfHosted))
    if isinstance(option, SelfHosted) and option.capacity_tokens is None:
        raise ValueError(f"{name} is a SelfHosted without capacity_tokens; its {what} is "
                         f"undefined")
