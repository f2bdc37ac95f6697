"""The cost figures: break-even utilisation (guide §6.3), floor plus spillover (guide §6.4) and
self-hosted unit cost against pay-as-you-go (guide §6.5).
"""

from __future__ import annotations

import numpy as np

from rooflinekit import dims, planning, pricing
from rooflinekit.plotting._axes import _axes, _check_ax, _labelled, _one_d

__all__ = ["plot_break_even", "plot_spillover", "plot_self_hosting"]


def plot_break_even(provisioned, payg, output_fractions=None, marks=(0.1, 0.5), ax=None):
    """Break-even utilisation of dedicated capacity against the output fraction (§6.3).

    Parameters
    ----------
    provisioned : Provisioned or SelfHosted
        The commitment (a SelfHosted one needs ``capacity_tokens``).
    payg : PayAsYouGo
        The pay-as-you-go alternative.
    output_fractions : array_like, optional
        Output fractions to draw [1], in [0, 1]; default 0 to 1 in 101 steps.
    marks : sequence of float
        Output fractions to mark and label [1]; default the guide's 10% and 50%.
    ax : matplotlib.axes.Axes, optional
        Where to draw.

    Returns
    -------
    matplotlib.axes.Axes
        Break-even utilisation [%] from :func:`rooflinekit.pricing.comparisons`; above the curve
        the commitment is cheaper, below it pay-as-you-go is. A dotted line marks 100%: where the
        curve passes it, the commitment never pays on price.

    References
    ----------
    .. [1] Serving-capacity guide §6.3: $12,000/month, 4B tokens, $3/$12 per 1M → 76.92% at 10%
       output, 40.00% at 50%.
    """
    _check_ax(ax)
    f = _labelled("output_fraction", _one_d("output_fractions", output_fractions,
                                            np.linspace(0, 1, 101)), dims.OUTPUT_FRACTION)
    marks = _one_d("marks", marks, None) if marks is not None and len(marks) else np.zeros(0)
    curve = pricing.break_even(provisioned, payg, f)["utilization"]
    ax = _axes(ax)
    ax.plot(f.values * 100, curve.values * 100, color="C0", label="break-even utilisation")
    ax.fill_between(f.values * 100, curve.values * 100, 100, where=curve.values < 1,
                    color="C2", alpha=0.12,
                    label="commitment cheaper (utilisation above the curve)")
    ax.axhline(100, color="grey", ls=":", lw=0.8)
    if marks.size:
        m = pricing.break_even(provisioned, payg, _labelled("output_fraction", marks,
                                                            dims.OUTPUT_FRACTION))
        ax.plot(marks * 100, m["utilization"].values * 100, "o", color="C3")
        for fm, u, t in zip(marks, m["utilization"].values, m["tokens"].values):
            ax.annotate(f"{fm:.0%} output: {u:.2%}\n({t / 1e9:.3g}B tokens/month)",
                        (fm * 100, u * 100), xytext=(8, 6), textcoords="offset points",
                        fontsize=8, color="C3")
    ax.set_xlim(f.values.min() * 100, f.values.max() * 100)
    ax.set_ylim(0, max(110.0, float(np.nanmax(curve.values)) * 100 * 1.05))
    ax.set_xlabel("output share of billed tokens [%]")
    ax.set_ylabel("break-even utilisation of capacity [%]")
    ax.set_title("Never quote a break-even without the traffic mix")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    return ax


def plot_spillover(demand, payg, floor_unit_cost, *, output_fraction, quantiles=None, ax=None):
    """Monthly cost of a dedicated floor plus pay-as-you-go spillover against the floor quantile.

    Parameters
    ----------
    demand : array_like or xarray.DataArray
        Token demand per period [tokens] over the month, as for
        :func:`rooflinekit.planning.plan_with_spillover`.
    payg : PayAsYouGo
        Price of the spillover.
    floor_unit_cost : float, Provisioned or SelfHosted
        Price of dedicated capacity [USD per 1M tokens of capacity], or a commitment to price it
        from.
    output_fraction : float
        Share of billed tokens that are output tokens [1].
    quantiles : array_like, optional
        Floor quantiles to draw [1], in [0, 1]; default 0 to 1 in 101 steps.
    ax : matplotlib.axes.Axes, optional
        Where to draw.

    Returns
    -------
    matplotlib.axes.Axes
        Floor, spillover and total cost [USD/month] against the quantile [%], pay-as-you-go
        alone dashed, and the guide's three sizings and the optimum
        (:func:`rooflinekit.planning.compare_floor_sizing`) marked and labelled on the total.

    References
    ----------
    .. [1] Serving-capacity guide §6.4: size the floor to p50, spill the rest; degrade in cost,
       not in availability.
    """
    _check_ax(ax)
    q = _labelled("quantile", _one_d("quantiles", quantiles, np.linspace(0, 1, 101)),
                  dims.QUANTILE)
    plan = planning.plan_with_spillover(demand, payg, floor_unit_cost,
                                        output_fraction=output_fraction, quantile=q)
    sizing = planning.compare_floor_sizing(demand, payg, floor_unit_cost,
                                           output_fraction=output_fraction)
    ax = _axes(ax)
    x = plan[dims.QUANTILE].values * 100
    ax.plot(x, plan["total_cost"].values, color="black", lw=2, label="total")
    ax.plot(x, plan["floor_cost"].values, color="C0", label="dedicated floor")
    ax.plot(x, plan["spill_cost"].values, color="C1", label="pay-as-you-go spillover")
    ax.axhline(float(plan["payg_only_cost"]), color="C1", ls="--", lw=0.8,
               label="pay-as-you-go only")
    # The labels sit in a row above the curve, one column per marker in order of quantile, with
    # a leader line down to the marker: markers can be close (p10 and the optimum often are),
    # labels in their own columns cannot overlap.
    names = list(sizing["sizing"].values)
    order = sorted(range(len(names)), key=lambda k: float(sizing[dims.QUANTILE][k]))
    # columns stop short of the right edge, where the total climbs steeply to the peak
    slots = np.linspace(0.12, 0.78, len(names)) if len(names) > 1 else np.array([0.45])
    for slot, k in zip(slots, order):
        name = names[k]
        row = sizing.sel(sizing=name)
        xq, cost = float(row[dims.QUANTILE]) * 100, float(row["total_cost"])
        ax.plot(xq, cost, "o", color=f"C{k + 2}", zorder=3, mec="black", mew=0.5)
        ax.annotate(f"{name}: ${cost:,.0f}\nfloor {float(row['floor_utilization']):.0%} busy, "
                    f"{float(row['spilled_share']):.0%} spilled", (xq, cost),
                    xytext=(slot, 0.74), textcoords="axes fraction", fontsize=7, ha="center",
                    va="center", color=f"C{k + 2}",
                    bbox={"boxstyle": "round", "fc": "white", "ec": f"C{k + 2}", "lw": 0.6},
                    arrowprops={"arrowstyle": "-", "color": f"C{k + 2}", "lw": 0.6,
                                "shrinkA": 0, "shrinkB": 3})
    ax.set_xlabel("floor sized to demand quantile [%]")
    ax.set_ylabel(f"cost over {plan.attrs.get('periods', '')} periods [USD]")
    ax.set_title("Floor plus spillover: peak idles, p10 lives on the shared pool")
    # Peak sizing costs several times the rest: a log scale keeps the p50-p10 basin readable.
    from matplotlib.ticker import LogLocator, NullLocator
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter("${x:,.0f}")
    ax.set_ylim(float(plan["payg_only_cost"]) / 20, float(plan["total_cost"].max()) * 1.6)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    return ax


def plot_self_hosting(selfhosted, payg, output_fraction, monthly_tokens=None, ax=None):
    """Self-hosted unit cost against monthly volume, with and without the engineering line (§6.5).

    Parameters
    ----------
    selfhosted : SelfHosted
        The deployment, its ``engineering_monthly`` included.
    payg : PayAsYouGo
        The pay-as-you-go alternative, drawn as its blended price at ``output_fraction``.
    output_fraction : float
        Share of billed tokens that are output tokens [1].
    monthly_tokens : array_like, optional
        Volumes to draw [tokens/month], > 0; default 100M to 100B on a log scale.
    ax : matplotlib.axes.Axes, optional
        Where to draw.

    Returns
    -------
    matplotlib.axes.Axes
        Unit cost [USD per 1M tokens] against volume [tokens/month], both on log scales, from
        :func:`rooflinekit.planning.self_hosting_comparison`; the crossovers with pay-as-you-go
        are marked.

    References
    ----------
    .. [1] Serving-capacity guide §6.5 ("the engineering line decides it"); ``docs/conventions.md``
       on its $17,545 total.
    """
    _check_ax(ax)
    v = _labelled("monthly_tokens", _one_d("monthly_tokens", monthly_tokens,
                                           np.geomspace(1e8, 1e11, 121)), dims.MONTHLY_TOKENS)
    ds = planning.self_hosting_comparison(selfhosted, payg, v, output_fraction)
    ax = _axes(ax)
    x = v.values
    with_line = float(ds["monthly_cost"])
    without = float(ds["monthly_cost_without_engineering"])
    price = float(ds["payg_price"])
    ax.plot(x, ds["unit_cost"].values, color="C0",
            label=f"self-hosted, engineering included (${with_line:,.0f}/month)")
    ax.plot(x, ds["unit_cost_without_engineering"].values, color="C0", ls="--",
            label=f"self-hosted, GPU-hours only (${without:,.0f}/month)")
    ax.axhline(price, color="C1", label=f"pay-as-you-go, {output_fraction:.0%} output "
                                        f"(${price:.2f}/1M)")
    marks = (("crossover_payg", "-", "engineering included", (6, 8), "left"),
             ("crossover_payg_without_engineering", "--", "GPU-hours only", (-8, -26), "right"))
    for key, ls, what, offset, ha in marks:
        cross = float(ds[key])
        ax.plot([cross], [price], "o", color="C3", zorder=3)
        ax.axvline(cross, color="C3", ls=ls, lw=0.6)
        ax.annotate(f"crossover {cross / 1e9:.2f}B tokens\n({what})", (cross, price),
                    xytext=offset, textcoords="offset points", fontsize=8, color="C3", ha=ha)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(lambda x, _: f"{x / 1e9:g}B")
    ax.yaxis.set_major_formatter(lambda y, _: f"${y:g}")
    ax.set_xlabel("monthly volume [tokens/month]")
    ax.set_ylabel("unit cost [USD per 1M tokens]")
    ax.set_title("Self-hosting is a utilisation bet; the engineering line decides it")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    return ax
