"""The catalogue's illustrative, dated prices as price objects (guide §6, §12).

Turns a row of ``data/prices.toml`` (read and found by name in :mod:`rooflinekit.catalog`) into
a :class:`PayAsYouGo`, a :class:`Provisioned` or a GPU-hour's price. Every price in the file is
illustrative and perishable (guide §12): re-derive with your provider's current price list before
deciding anything.
"""

from __future__ import annotations

import dataclasses

from rooflinekit import catalog
from rooflinekit.pricing.capacity import PayAsYouGo, Provisioned
from rooflinekit.units import HOURS_PER_MONTH

__all__ = ["load_prices", "payg_price", "provisioned_example", "gpu_hourly_price"]


def load_prices() -> dict:
    """The illustrative price list ``data/prices.toml`` as a dict (a fresh copy per call).

    Returns
    -------
    dict
        Keys ``"meta"`` (date, caveat), ``"payg"``, ``"provisioned"`` and ``"gpu_hourly"``, each
        a list of rows with their ``date`` and ``source``.

    Notes
    -----
    Illustrative and perishable prices: see the module docstring.
    """
    return catalog.price_table()


def payg_price(name: str) -> PayAsYouGo:
    """The pay-as-you-go price list called ``name`` in ``data/prices.toml`` (illustrative).

    Returns
    -------
    PayAsYouGo
        Prices per 1M tokens, region and third-party attributes from the row
        (:func:`rooflinekit.catalog.payg_row`); its other keys are left out.
    """
    row = catalog.payg_row(name)
    fields = {f.name for f in dataclasses.fields(PayAsYouGo)}
    return PayAsYouGo(**{k: v for k, v in row.items() if k in fields})


def provisioned_example(name: str, n_units: float | None = None) -> Provisioned:
    """The provisioned-capacity example called ``name`` in ``data/prices.toml``.

    Parameters
    ----------
    name : str
        Row name.
    n_units : float, optional
        Units to buy; default the row's ``min_units`` (1 when absent).

    Returns
    -------
    Provisioned
        Built with :meth:`Provisioned.from_units` from the row's price per unit per month or per
        hour and its capacity per unit, given either as ``capacity_tokens_per_month`` or as
        ``input_tokens_per_minute`` (converted with 60 × 730 minutes per month); the row is
        :func:`rooflinekit.catalog.provisioned_row`'s.
    """
    row = catalog.provisioned_row(name)
    n = row.get("min_units", 1) if n_units is None else n_units
    if "capacity_tokens_per_month" in row:
        capacity = float(row["capacity_tokens_per_month"])
    else:
        capacity = float(row["input_tokens_per_minute"]) * 60 * HOURS_PER_MONTH
    return Provisioned.from_units(
        n, capacity, monthly_cost_per_unit=row.get("usd_per_unit_month"),
        hourly_cost_per_unit=row.get("usd_per_unit_hour"),
        output_weight=row.get("output_weight", 1.0), name=row["name"], region=row.get("region"),
        third_party=row.get("third_party", True))


def gpu_hourly_price(gpu: str) -> float:
    """Illustrative price of one GPU-hour for a catalogue GPU name [USD/h].

    The row is :func:`rooflinekit.catalog.gpu_hourly_row`'s, matched on its ``gpu`` name.
    """
    return float(catalog.gpu_hourly_row(gpu)["usd_per_hour"])
