"""The three capacity types of serving and what each one charges (guide §6.1, §6.2, §6.5).

:class:`PayAsYouGo` (per-token billing on a shared pool; :func:`blended_price`),
:class:`Provisioned` (dedicated capacity for a fixed cost, its capacity depending on the
input:output mix) and :class:`SelfHosted` (your own GPUs; :func:`unit_cost` spreads its fixed
monthly cost over a volume): frozen specs of prices with their capacity and monthly cost at a
volume. Units and input kinds are those of :mod:`rooflinekit.pricing`.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Mapping

import numpy as np
import xarray as xr

from rooflinekit import roofline
from rooflinekit._labels import align_inputs, finish, where
from rooflinekit._validation import (
    check_bool,
    check_fraction,
    check_integer,
    check_nonnegative,
    check_positive,
    check_range,
    check_type,
    positive_number,
)
from rooflinekit.pricing._inputs import (
    TOKENS_PER_MONTH,
    USD_PER_MONTH,
    USD_PER_MTOK,
    admissibility,
    any_positive,
    check_engine,
    numeric_field,
    prepare,
    price_per_gpu_hour,
    widened,
)
from rooflinekit.units import HOURS_PER_MONTH, PER_MILLION, SECONDS_PER_HOUR

__all__ = ["PayAsYouGo", "Provisioned", "SelfHosted", "blended_price", "unit_cost"]

#: Longest billed month [h]: 31 days of 24 hours.
_MAX_HOURS_PER_MONTH = 744

#: Lowest plausible price of a token [USD per 1M tokens]: $0.001 per million (list prices start
#: near $0.02), far above a price typed per token (0.6e-6 for $0.60 per 1M).
MIN_PRICE_PER_MTOK = 1e-3


def _check_per_mtok(name: str, value) -> None:
    """Refuse a price per 1M tokens below :data:`MIN_PRICE_PER_MTOK`, naming the likely slip."""
    data = np.asarray(value.values if isinstance(value, xr.DataArray) else value, dtype=float)
    low = data[data < MIN_PRICE_PER_MTOK]
    if low.size:
        raise ValueError(
            f"{name} is a price per 1M tokens [USD] and must be at least "
            f"{MIN_PRICE_PER_MTOK:g}; got {float(low.flat[0]):g}: a price per token? "
            f"(USD per 1M tokens = USD per token × 1e6, e.g. 0.6e-6 per token is 0.6)")


def _check_fields(spec, *names, **rules) -> None:
    """Check and store the numeric fields ``names`` of a frozen spec (:func:`numeric_field`)."""
    for name in names:
        object.__setattr__(spec, name, numeric_field(name, getattr(spec, name), **rules))


# -- the types ------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, eq=False)
class PayAsYouGo:
    """Managed pay-as-you-go: per-token billing on the provider's shared pool (guide §6.1).

    Parameters
    ----------
    input_per_mtok : float or array_like
        Price of input (prompt) tokens [USD per 1M tokens], finite and at least
        :data:`MIN_PRICE_PER_MTOK` (0.001): a price per token is refused, naming the slip.
    output_per_mtok : float or array_like
        Price of output (generated) tokens [USD per 1M tokens], finite and at least 0.001.
    cached_input_per_mtok : float or array_like, optional
        Price of input tokens served from the provider's prompt cache [USD per 1M tokens], >= 0;
        ``None`` when the provider has no cache discount.
    long_context_threshold : float, optional
        Prompt length above which every token of a request is billed at the long-context tier
        [tokens], as providers with a long-context tier do.
    long_context_input_per_mtok, long_context_output_per_mtok : float or array_like, optional
        Input and output prices of that tier [USD per 1M tokens]; required with the threshold.
    name : str
        Label of the option (unique within one :func:`cheapest_option` call).
    region : str, optional
        Where the provider processes the data (data residency), e.g. ``"eu"``; ``None`` when
        unknown, which no workload with allowed regions accepts.
    third_party : bool
        Whether a third party processes the data: ``True`` for a managed API.

    Notes
    -----
    Pay-as-you-go has no capacity limit in this model; 429s from a busy shared pool (§6.1) are a
    latency and availability cost the price does not show.

    References
    ----------
    .. [1] Serving-capacity guide §6.1 and §6.3.
    """

    input_per_mtok: object
    output_per_mtok: object
    cached_input_per_mtok: object = None
    long_context_threshold: object = None
    long_context_input_per_mtok: object = None
    long_context_output_per_mtok: object = None
    name: str = "pay-as-you-go"
    region: str | None = None
    third_party: bool = True

    def __post_init__(self):
        _check_fields(self, "input_per_mtok", "output_per_mtok", positive=True)
        _check_per_mtok("input_per_mtok", self.input_per_mtok)
        _check_per_mtok("output_per_mtok", self.output_per_mtok)
        _check_fields(self, "cached_input_per_mtok", allow_none=True)
        tier = (self.long_context_threshold, self.long_context_input_per_mtok,
                self.long_context_output_per_mtok)
        if any(v is not None for v in tier) and any(v is None for v in tier):
            raise ValueError("long_context_threshold, long_context_input_per_mtok and "
                             "long_context_output_per_mtok must be given together")
        _check_fields(self, "long_context_threshold", "long_context_input_per_mtok",
                      "long_context_output_per_mtok", positive=True, allow_none=True)
        admissibility(self, "pay-as-you-go")

    kind = "pay-as-you-go"

    def _numeric(self) -> dict:
        fields = ("input_per_mtok", "output_per_mtok", "cached_input_per_mtok",
                  "long_context_threshold", "long_context_input_per_mtok",
                  "long_context_output_per_mtok")
        return {f: getattr(self, f) for f in fields if getattr(self, f) is not None}

    @widened
    def blended(self, output_fraction, *, cached_fraction=0.0, prompt_tokens=None):
        """Blended price at an output fraction [USD per 1M tokens]; see :func:`blended_price`."""
        return blended_price(self, output_fraction, cached_fraction=cached_fraction,
                             prompt_tokens=prompt_tokens)

    @widened
    def capacity(self, output_fraction):
        """Monthly capacity [tokens/month]: unlimited (``inf``) on the shared pool."""
        check_fraction("output_fraction", output_fraction)
        return finish(np.inf + 0 * _as_float(output_fraction), TOKENS_PER_MONTH,
                      "pay-as-you-go capacity (unlimited)")

    @widened
    def cost(self, monthly_tokens, output_fraction, *, cached_fraction=0.0, prompt_tokens=None):
        """Monthly bill for a volume [USD/month]: ``monthly_tokens × blended / 1e6``.

        Parameters
        ----------
        monthly_tokens : float or array_like
            Tokens billed in the month [tokens/month], >= 0.
        output_fraction : float or array_like
            Share of those tokens that are output tokens [1], in [0, 1].
        cached_fraction, prompt_tokens
            As in :func:`blended_price`.
        """
        check_nonnegative("monthly_tokens", monthly_tokens)
        a, (payg,) = prepare({"monthly_tokens": monthly_tokens, "output_fraction": output_fraction,
                              "cached_fraction": cached_fraction}, self)
        price = blended_price(payg, a["output_fraction"], cached_fraction=a["cached_fraction"],
                              prompt_tokens=prompt_tokens)
        return finish(a["monthly_tokens"] * price / PER_MILLION, USD_PER_MONTH,
                      "pay-as-you-go monthly cost")


@dataclasses.dataclass(frozen=True, eq=False)
class Provisioned:
    """Dedicated (provisioned-throughput) capacity for a fixed cost (guide §6.2).

    Parameters
    ----------
    monthly_cost : float or array_like
        Cost of the whole commitment [USD/month], > 0. :meth:`from_units` builds it from a price
        per unit (PTU, model unit) per month or per hour.
    monthly_capacity_tokens : float or array_like
        Tokens the commitment can serve in a month at the reference mix [tokens/month], > 0.
    output_weight : float or array_like
        Capacity one output token consumes, in input tokens [1], > 0. Default 1 (the guide's
        worked example); Azure's PTU sizing counts one output token as several input tokens
        [2]_: measure it with your own traffic (§6.2).
    reference_output_fraction : float or array_like
        Output fraction at which ``monthly_capacity_tokens`` was quoted [1], in [0, 1]. Default 0:
        the capacity is in input-token equivalents.
    units : float, optional
        Number of purchased units, when the commitment is bought in whole units. Informational,
        except that :func:`crossover_volume` uses it to price capacity in whole units.
    name, region, third_party
        Label and admissibility attributes, as for :class:`PayAsYouGo`. A provider-run
        commitment is processed by a third party (default ``True``).

    Notes
    -----
    "Tokens per unit" is not a datasheet constant (§6.2): prefill and decode consume capacity
    differently. Following the idea of the PTU capacity calculator, a billed mix with output
    fraction f consumes ``(1 − f) + w·f`` input-token equivalents per token, so the capacity in
    billed tokens is

    .. math:: K(f) = K_{ref} \\frac{(1 - f_{ref}) + w f_{ref}}{(1 - f) + w f}.

    References
    ----------
    .. [1] Serving-capacity guide §6.2–6.3.
    .. [2] Microsoft, "Provisioned throughput sizing" (Azure AI Foundry documentation), per-model
       input TPM per PTU and output-token ratio,
       https://learn.microsoft.com/azure/ai-foundry/openai/how-to/provisioned-throughput-sizing
    """

    monthly_cost: object
    monthly_capacity_tokens: object
    output_weight: object = 1.0
    reference_output_fraction: object = 0.0
    units: float | None = None
    name: str = "provisioned"
    region: str | None = None
    third_party: bool = True

    kind = "provisioned"

    def __post_init__(self):
        _check_fields(self, "monthly_cost", "monthly_capacity_tokens", "output_weight",
                      positive=True)
        _check_fields(self, "reference_output_fraction", hi=1)
        object.__setattr__(self, "units", positive_number("units", self.units, allow_none=True))
        admissibility(self, "provisioned")

    @classmethod
    @widened
    def from_units(cls, n_units, capacity_per_unit, *, monthly_cost_per_unit=None,
                   hourly_cost_per_unit=None, hours_per_month=HOURS_PER_MONTH, **kwargs):
        """A commitment of ``n_units`` units priced per unit per month or per hour.

        Parameters
        ----------
        n_units : float
            Units bought (PTUs, model units) [1], > 0.
        capacity_per_unit : float or array_like
            Monthly capacity of one unit at the reference mix [tokens/month], > 0.
        monthly_cost_per_unit, hourly_cost_per_unit : float or array_like
            Price of one unit [USD/month] or [USD/h]; give exactly one.
        hours_per_month : float
            Billed hours in a month [h]; default 730 (365 × 24 / 12).
        **kwargs
            Other :class:`Provisioned` fields (``output_weight``, ``name``, ``region``, ...).

        Returns
        -------
        Provisioned
            ``monthly_cost = n_units × cost per unit`` [USD/month] and
            ``monthly_capacity_tokens = n_units × capacity_per_unit`` [tokens/month].
        """
        if (monthly_cost_per_unit is None) == (hourly_cost_per_unit is None):
            raise ValueError("give exactly one of monthly_cost_per_unit, hourly_cost_per_unit")
        check_positive("n_units", n_units)
        check_positive("capacity_per_unit", capacity_per_unit)
        check_range("hours_per_month", hours_per_month, lo=0, hi=_MAX_HOURS_PER_MONTH, lo_open=True)
        if hourly_cost_per_unit is not None:
            check_positive("hourly_cost_per_unit", hourly_cost_per_unit)
            per_unit = _as_float(hourly_cost_per_unit) * hours_per_month
        else:
            check_positive("monthly_cost_per_unit", monthly_cost_per_unit)
            per_unit = _as_float(monthly_cost_per_unit)
        return cls(monthly_cost=n_units * per_unit,
                   monthly_capacity_tokens=n_units * _as_float(capacity_per_unit),
                   units=float(n_units) if isinstance(n_units, numbers.Real) else None, **kwargs)

    def _numeric(self) -> dict:
        return {"monthly_cost": self.monthly_cost,
                "monthly_capacity_tokens": self.monthly_capacity_tokens,
                "output_weight": self.output_weight,
                "reference_output_fraction": self.reference_output_fraction}

    @property
    def fixed_monthly_cost(self):
        """The commitment's cost [USD/month], used or not."""
        return self.monthly_cost

    @widened
    def capacity(self, output_fraction):
        """Capacity in billed tokens at an output fraction [tokens/month]; see the class Notes."""
        check_fraction("output_fraction", output_fraction)
        a, (spec,) = prepare({"output_fraction": output_fraction}, self)
        return finish(_capacity({**a, **spec._numeric()}), TOKENS_PER_MONTH,
                      "provisioned capacity at the mix")

    @widened
    def cost(self, monthly_tokens, output_fraction):
        """Monthly cost of serving a volume [USD/month].

        The fixed ``monthly_cost`` while the volume fits the capacity at that mix, ``inf`` above
        it: the commitment alone cannot serve that volume (spill the excess with
        :func:`rooflinekit.planning.plan_with_spillover`).
        """
        check_nonnegative("monthly_tokens", monthly_tokens)
        check_fraction("output_fraction", output_fraction)
        a, (spec,) = prepare({"monthly_tokens": monthly_tokens,
                              "output_fraction": output_fraction}, self)
        a.update(spec._numeric())
        fits = a["monthly_tokens"] <= _capacity(a)
        return finish(where(fits, a["monthly_cost"] + 0.0 * a["monthly_tokens"], np.inf),
                      USD_PER_MONTH, "provisioned monthly cost (inf: over capacity)")


def _capacity(a: Mapping):
    """Capacity in billed tokens from aligned Provisioned fields and ``output_fraction``."""
    w, f, f0 = a["output_weight"], a["output_fraction"], a["reference_output_fraction"]
    return a["monthly_capacity_tokens"] * ((1 - f0) + w * f0) / ((1 - f) + w * f)


def _power_monthly(a: Mapping):
    """Electricity of the GPUs from aligned SelfHosted fields [USD/month]: kWh × PUE × price."""
    kwh = a["n_gpus"] * a["power_per_gpu"] / 1000.0 * a["hours_per_month"]
    return kwh * a["pue"] * a["electricity_price"]


def _fixed_monthly(a: Mapping, include_engineering: bool):
    """GPU-hours + electricity + other fixed costs (+ engineering) from aligned SelfHosted
    fields [USD/month]."""
    total = (a["n_gpus"] * a["gpu_hourly"] * a["hours_per_month"] + _power_monthly(a)
             + a["other_fixed_monthly"])
    if include_engineering:
        total = total + a["engineering_monthly"]
    return total


def _as_float(value):
    if isinstance(value, (xr.DataArray, np.ndarray)):
        return value.astype(float)
    if isinstance(value, (list, tuple)):
        return np.asarray(value, dtype=float)
    return float(value)


@dataclasses.dataclass(frozen=True, eq=False)
class SelfHosted:
    """Your own GPUs serving an open-weight model (guide §6.5).

    Parameters
    ----------
    n_gpus : int or array_like
        GPUs rented or owned [1], >= 1.
    gpu_hourly : float or array_like
        Price of one GPU-hour [USD/h], >= 0.
    engineering_monthly : float or array_like
        The engineering line [USD/month], >= 0: platform engineers, security review, model
        evaluation, on-call — the line that decides the case (§6.5).
    hours_per_month : float
        Hours billed per month [h], in (0, 744]; default 730 (365 × 24 / 12).
    other_fixed_monthly : float or array_like
        Any other fixed monthly cost [USD/month] (storage, networking, licences), >= 0.
    capacity_tokens : float or array_like, optional
        Tokens the deployment can serve in a month [tokens/month], > 0; ``None`` for "enough".
        :meth:`from_roofline` derives it from the roofline decode throughput.
    name, region, third_party
        Label and admissibility attributes, as for :class:`PayAsYouGo`. Nobody else processes the
        data of a self-hosted deployment (default ``third_party=False``); ``region`` is where your
        GPUs run.
    power_per_gpu : float or array_like
        Average electrical power of one GPU over the month [W], >= 0; default 0 (at most the
        catalogue's ``GPU.board_power``).
    electricity_price : float or array_like
        Price of electricity [USD/kWh], >= 0; default 0, as rented GPUs' hourly price includes
        power.
    pue : float or array_like
        Power usage effectiveness of the facility [1], >= 1 (facility power ÷ IT power: cooling
        and power distribution on top of the GPUs); default 1.0.

    Notes
    -----
    ``monthly_cost = n_gpus × gpu_hourly × hours_per_month + power_monthly_cost +
    engineering_monthly + other_fixed_monthly``, ``power_monthly_cost = n_gpus × power_per_gpu
    / 1000 × hours_per_month × pue × electricity_price`` [USD/month]. An idle GPU costs as much
    as a busy one, so the unit cost is a utilisation bet (:meth:`unit_cost`).

    References
    ----------
    .. [1] Serving-capacity guide §6.5; ``docs/conventions.md`` on the guide's $17,545 figure.
    .. [2] The Green Grid, "PUE: A Comprehensive Examination of the Metric", White Paper #49,
       2012 (PUE = total facility energy ÷ IT equipment energy, >= 1).
    """

    n_gpus: object
    gpu_hourly: object
    engineering_monthly: object
    hours_per_month: object = HOURS_PER_MONTH
    other_fixed_monthly: object = 0.0
    capacity_tokens: object = None
    name: str = "self-hosted"
    region: str | None = None
    third_party: bool = False
    power_per_gpu: object = 0.0
    electricity_price: object = 0.0
    pue: object = 1.0

    kind = "self-hosted"

    def __post_init__(self):
        n = np.asarray(self.n_gpus) if isinstance(self.n_gpus, (list, tuple)) else self.n_gpus
        check_integer("n_gpus", n, lo=1)
        object.__setattr__(self, "n_gpus", n)
        _check_fields(self, "gpu_hourly", "engineering_monthly")
        _check_fields(self, "hours_per_month", positive=True, hi=_MAX_HOURS_PER_MONTH)
        _check_fields(self, "other_fixed_monthly")
        _check_fields(self, "capacity_tokens", positive=True, allow_none=True)
        _check_fields(self, "power_per_gpu", "electricity_price", "pue")
        check_range("pue", self.pue, lo=1)
        admissibility(self, "self-hosted")

    @classmethod
    @widened
    def from_roofline(cls, model, gpu, *, tp, batch_size, context_length, utilization,
                      engineering_monthly, gpu_hourly=None, replicas=1,
                      hours_per_month=HOURS_PER_MONTH, other_fixed_monthly=0.0,
                      engine=None, **kwargs):
        """A deployment whose monthly capacity comes from the roofline decode throughput.

        Parameters
        ----------
        model : ModelShape or xarray.Dataset
            The served model (a catalogue Dataset broadcasts over ``model``).
        gpu : GPU or xarray.Dataset
            One accelerator of the group (a catalogue Dataset broadcasts over ``gpu``).
        tp : int
            Tensor-parallel degree: GPUs per replica [1].
        batch_size : int or array_like
            Sequences decoded together [1].
        context_length : int or array_like
            Tokens held per sequence [tokens].
        utilization : float or array_like
            Share of the month the replicas run at that throughput [1], in (0, 1].
        engineering_monthly : float or array_like
            The engineering line [USD/month].
        gpu_hourly : float or array_like, optional
            Price of one GPU-hour [USD/h]; default the GPU's catalogue ``hourly_price`` per GPU.
        replicas : int
            Model replicas (data parallel) [1]; ``n_gpus = tp × replicas``.
        engine : Engine or Calibration, optional
            How the serving engine runs a decode step, passed to ``decode_throughput``; default
            :data:`rooflinekit.IDEAL` (§3). Anything else raises ``TypeError`` first.
        hours_per_month, other_fixed_monthly, **kwargs
            As for :class:`SelfHosted`.

        Returns
        -------
        SelfHosted
            With ``capacity_tokens = decode_throughput × replicas × utilization ×
            hours_per_month × 3600`` [tokens/month].

        Notes
        -----
        Counting every billed token at the decode rate of one group is conservative: prefill
        processes prompt tokens in parallel at a far higher rate (§3.1).

        References
        ----------
        .. [1] Serving-capacity guide §3.1, §4.1 (decode step time) and §6.5.
        """
        check_engine(engine)
        check_integer("tp", tp, lo=1)
        check_integer("replicas", replicas, lo=1)
        check_range("utilization", utilization, lo=0, hi=1, lo_open=True)
        check_range("hours_per_month", hours_per_month, lo=0, hi=_MAX_HOURS_PER_MONTH, lo_open=True)
        if gpu_hourly is None:
            gpu_hourly = price_per_gpu_hour(gpu, None, "gpu_hourly")
        rate = roofline.decode_throughput(model, gpu, batch_size, context_length, tp,
                                          engine=engine)
        a = align_inputs({"rate": rate, "utilization": utilization})
        seconds = hours_per_month * SECONDS_PER_HOUR
        capacity = a["rate"] * replicas * a["utilization"] * seconds
        if isinstance(capacity, xr.DataArray):
            capacity = finish(capacity, TOKENS_PER_MONTH, "self-hosted monthly capacity")
        return cls(n_gpus=tp * replicas, gpu_hourly=gpu_hourly,
                   engineering_monthly=engineering_monthly, hours_per_month=hours_per_month,
                   other_fixed_monthly=other_fixed_monthly, capacity_tokens=capacity, **kwargs)

    @classmethod
    def from_plan(cls, cheapest, *, end=None, **kwargs):
        """The fleet of a plan's chosen configuration as a self-hosted option.

        Parameters
        ----------
        cheapest : xarray.Dataset
            One configuration of :func:`rooflinekit.cheapest_plan` (one label of each ``by``
            dimension selected): its ``gpus``, ``replicas``, ``gpu_hourly``, ``max_rate`` and
            the plan's ``attrs``.
        end : {None, "low", "high"}
            The fleet at the median max rate (default), or at the band's ends: ``"low"`` the
            fewer GPUs of the 90th-percentile rate, ``"high"`` the more of the 10th.
        **kwargs
            Other :class:`SelfHosted` fields (``name``, ``region``, ``power_per_gpu``, ...).

        Returns
        -------
        SelfHosted
            The fleet's GPUs at the plan's ``gpu_hourly`` [USD/h] and ``engineering_monthly``
            [USD/month], ``capacity_tokens = max_rate × replicas × 730 h × 3600 s × (mean prompt
            + mean output)`` [tokens/month].

        Raises
        ------
        ValueError
            The configuration serves nothing (0 GPUs), or is not one configuration.

        Notes
        -----
        The plan's electricity line (``power_monthly_cost``) is not carried over; give
        ``other_fixed_monthly=`` to count it.

        See Also
        --------
        from_roofline : a fleet from the roofline decode throughput alone.
        """
        check_type("cheapest", cheapest, xr.Dataset)
        missing = [v for v in ("gpus", "replicas", "gpu_hourly", "max_rate") if v not in cheapest]
        if missing or "mean_prompt_tokens" not in cheapest.attrs:
            raise TypeError(f"cheapest must be a configuration of rooflinekit.cheapest_plan; "
                            f"missing {', '.join(missing) or 'mean_prompt_tokens'}")
        if end not in (None, "low", "high"):
            raise ValueError(f"end must be None, 'low' or 'high'; got {end!r}")
        suffix = "" if end is None else f"_{end}"
        for name in ("gpus", "replicas"):
            if cheapest[name].size != 1:
                raise ValueError(f"cheapest must hold one configuration; its {name} has "
                                 f"{cheapest[name].size} values (select one label of each "
                                 f"dimension)")
        gpus = int(cheapest.get(f"gpus{suffix}", cheapest["gpus"]))
        replicas = int(cheapest.get(f"replicas{suffix}", cheapest["replicas"]))
        if gpus <= 0 or replicas <= 0:
            raise ValueError("the configuration serves nothing (0 GPUs): no self-hosted option")
        rate = {"": "max_rate", "_low": "max_rate_high", "_high": "max_rate_low"}[suffix]
        per_request = float(cheapest.attrs["mean_prompt_tokens"]) + \
            float(cheapest.attrs["mean_output_tokens"])
        capacity = float(cheapest[rate]) * replicas * HOURS_PER_MONTH * SECONDS_PER_HOUR * \
            per_request
        kwargs.setdefault("engineering_monthly",
                          float(cheapest.attrs.get("engineering_monthly", 0.0)))
        return cls(n_gpus=gpus, gpu_hourly=float(cheapest["gpu_hourly"]),
                   capacity_tokens=capacity, **kwargs)

    def _numeric(self) -> dict:
        out = {"n_gpus": self.n_gpus, "gpu_hourly": self.gpu_hourly,
               "engineering_monthly": self.engineering_monthly,
               "hours_per_month": self.hours_per_month,
               "other_fixed_monthly": self.other_fixed_monthly,
               "power_per_gpu": self.power_per_gpu, "electricity_price": self.electricity_price,
               "pue": self.pue}
        if self.capacity_tokens is not None:
            out["capacity_tokens"] = self.capacity_tokens
        return out

    def _monthly(self, include_engineering: bool):
        return _fixed_monthly(align_inputs(self._numeric()), include_engineering)

    @property
    def gpu_monthly_cost(self):
        """GPU-hours alone: ``n_gpus × gpu_hourly × hours_per_month`` [USD/month]."""
        a = align_inputs(self._numeric())
        return finish(a["n_gpus"] * a["gpu_hourly"] * a["hours_per_month"] + 0.0,
                      USD_PER_MONTH, "GPU cost per month")

    @property
    def power_monthly_cost(self):
        """Electricity: ``n_gpus × power_per_gpu/1000 × hours_per_month × pue ×
        electricity_price`` [USD/month]; 0 by default (power in the hourly price)."""
        return finish(_power_monthly(align_inputs(self._numeric())) + 0.0, USD_PER_MONTH,
                      "GPU electricity cost per month")

    @property
    def monthly_cost(self):
        """Total fixed cost, engineering included [USD/month]."""
        return finish(self._monthly(True) + 0.0, USD_PER_MONTH, "self-hosted monthly cost")

    @property
    def fixed_monthly_cost(self):
        """Alias of :attr:`monthly_cost` [USD/month], shared with :class:`Provisioned`."""
        return self.monthly_cost

    @property
    def monthly_cost_without_engineering(self):
        """GPU-hours, electricity and other fixed costs, without the engineering line
        [USD/month]."""
        return finish(self._monthly(False) + 0.0, USD_PER_MONTH,
                      "self-hosted monthly cost without engineering")

    @widened
    def unit_cost(self, monthly_tokens, *, include_engineering=True):
        """Cost per token served at a monthly volume [USD per 1M tokens].

        Parameters
        ----------
        monthly_tokens : float or array_like
            Tokens served in the month [tokens/month], > 0.
        include_engineering : bool
            Count the engineering line (default) or only GPU-hours, electricity and other fixed
            costs.

        Returns
        -------
        float or array_like
            ``monthly cost / monthly_tokens × 1e6`` [USD/1M tokens]. It does not check
            ``capacity_tokens``: a volume above it cannot actually be served.

        References
        ----------
        .. [1] Serving-capacity guide §6.5: unit cost = monthly fixed cost / monthly tokens.
        """
        check_positive("monthly_tokens", monthly_tokens)
        check_bool("include_engineering", include_engineering)
        a, (spec,) = prepare({"monthly_tokens": monthly_tokens}, self)
        return unit_cost(spec._monthly(include_engineering), a["monthly_tokens"])

    @widened
    def capacity(self, output_fraction):
        """Monthly capacity [tokens/month] (``inf`` when not given); independent of the mix."""
        check_fraction("output_fraction", output_fraction)
        a, (spec,) = prepare({"output_fraction": output_fraction}, self)
        cap = np.inf if spec.capacity_tokens is None else spec.capacity_tokens
        return finish(cap + 0 * a["output_fraction"], TOKENS_PER_MONTH, "self-hosted capacity")

    @widened
    def cost(self, monthly_tokens, output_fraction, *, include_engineering=True):
        """Monthly cost of serving a volume [USD/month]: fixed, ``inf`` above the capacity."""
        check_nonnegative("monthly_tokens", monthly_tokens)
        check_fraction("output_fraction", output_fraction)
        check_bool("include_engineering", include_engineering)
        a, (spec,) = prepare({"monthly_tokens": monthly_tokens,
                              "output_fraction": output_fraction}, self)
        a.update(spec._numeric())
        total = _fixed_monthly(a, include_engineering)
        total = total + 0.0 * a["monthly_tokens"] + 0.0 * a["output_fraction"]
        if self.capacity_tokens is not None:
            total = where(a["monthly_tokens"] <= a["capacity_tokens"], total, np.inf)
        return finish(total, USD_PER_MONTH, "self-hosted monthly cost (inf: over capacity)")


# -- what each type charges -----------------------------------------------------------------------

@widened
def blended_price(payg, output_fraction, *, cached_fraction=0.0, prompt_tokens=None):
    """Blended pay-as-you-go price of a token mix (guide §6.3).

    Parameters
    ----------
    payg : PayAsYouGo
        The price list.
    output_fraction : float or array_like
        Share of billed tokens that are output tokens, f [1], in [0, 1]. Required: there is no
        blended price without a mix.
    cached_fraction : float or array_like
        Share of *input* tokens billed at the cached-input price [1], in [0, 1]; default 0.
    prompt_tokens : float or array_like, optional
        Prompt length of the requests [tokens]; above ``payg.long_context_threshold`` the
        long-context tier applies. ``None`` bills at the base tier.

    Returns
    -------
    float or array_like
        ``c_b = c_in(1 − f) + c_out·f`` [USD/1M tokens], with ``c_in`` replaced by
        ``c_in(1 − h) + c_cached·h`` for a cached share ``h``.

    Notes
    -----
    On the long-context tier, the cached-input price scales by the same factor as the input price.

    References
    ----------
    .. [1] Serving-capacity guide §6.3: ``c_b = c_in(1 − f) + c_out f``.

    Examples
    --------
    >>> blended_price(PayAsYouGo(3.0, 12.0), 0.1)   # guide §6.3
    3.9000000000000004
    """
    check_type("payg", payg, PayAsYouGo)
    check_fraction("output_fraction", output_fraction)
    check_fraction("cached_fraction", cached_fraction)
    if prompt_tokens is not None:
        check_nonnegative("prompt_tokens", prompt_tokens)
    if payg.cached_input_per_mtok is None and any_positive("cached_fraction", cached_fraction):
        raise ValueError(f"cached_fraction must be 0: {payg.name!r} has no "
                         f"cached_input_per_mtok")
    named = {"output_fraction": output_fraction, "cached_fraction": cached_fraction}
    if prompt_tokens is not None:
        named["prompt_tokens"] = prompt_tokens
    a, (payg,) = prepare(named, payg)
    a.update(payg._numeric())
    f, h = a["output_fraction"], a["cached_fraction"]
    c_in, c_out = a["input_per_mtok"], a["output_per_mtok"]
    c_cached = a.get("cached_input_per_mtok", c_in)
    if prompt_tokens is not None and payg.long_context_threshold is not None:
        long = a["prompt_tokens"] > a["long_context_threshold"]
        scale = where(long, a["long_context_input_per_mtok"] / c_in, 1.0)
        c_in = where(long, a["long_context_input_per_mtok"], c_in)
        c_out = where(long, a["long_context_output_per_mtok"], c_out)
        c_cached = c_cached * scale
    price = (c_in * (1 - h) + c_cached * h) * (1 - f) + c_out * f
    return finish(price, USD_PER_MTOK, "blended pay-as-you-go price")


@widened
def unit_cost(fixed_monthly_cost, monthly_tokens):
    """Cost per token of a fixed monthly cost spread over a volume (guide §6.5).

    Parameters
    ----------
    fixed_monthly_cost : float or array_like
        Cost that does not depend on volume [USD/month], >= 0.
    monthly_tokens : float or array_like
        Tokens served in the month [tokens/month], > 0.

    Returns
    -------
    float or array_like
        ``fixed_monthly_cost / monthly_tokens × 1e6`` [USD/1M tokens].

    References
    ----------
    .. [1] Serving-capacity guide §6.5: unit cost = monthly fixed cost / monthly tokens.
    """
    check_nonnegative("fixed_monthly_cost", fixed_monthly_cost)
    check_positive("monthly_tokens", monthly_tokens)
    a = align_inputs({"fixed_monthly_cost": fixed_monthly_cost,
                      "monthly_tokens": monthly_tokens})
    # Dividing by millions of tokens (exact) keeps e.g. 17,545 / 1,000 = 17.545 correctly rounded.
    return finish(a["fixed_monthly_cost"] / (a["monthly_tokens"] / PER_MILLION),
                  USD_PER_MTOK, "unit cost")
