"""Figures of the guide, drawn with matplotlib (imported only when a plot is made).

Each function takes specs or results computed by the library, draws on ``ax`` (a new figure when
``None``) and returns the Axes. No function here derives a number: each asks the layers below.

- :func:`plot_roofline` — roofline with decode batch sizes and prefill placed on it (§3.2);
- :func:`plot_concurrency_vs_context` — concurrency vs context for MHA / GQA / MQA (§2.3);
- :func:`plot_batching_timeline` — Gantt of batch slots, static vs continuous (§4.2–4.3);
- :func:`plot_batching_win` — Monte Carlo win vs output-length spread (§4.3);
- :func:`plot_break_even` — break-even utilisation vs output fraction (§6.3);
- :func:`plot_spillover` — floor plus spillover cost vs floor quantile (§6.4);
- :func:`plot_self_hosting` — self-hosted unit cost vs volume against pay-as-you-go (§6.5);
- :func:`plot_tp_scaling` — step time and throughput vs tensor-parallel degree (§5).
"""

from __future__ import annotations

import numpy as np

from rooflinekit import dims, memory, parallel, planning, pricing, roofline, units
from rooflinekit._validation import as_1d, check_mapping, check_one_of, check_string, describe

__all__ = [
    "plot_roofline", "plot_concurrency_vs_context", "plot_batching_timeline", "plot_batching_win",
    "plot_break_even", "plot_spillover", "plot_self_hosting", "plot_tp_scaling",
]


def _axes(ax):
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt
    _, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
    return ax


def plot_concurrency_vs_context(model, gpu, tp=1, contexts=None, kv_heads=None, reserve=0.10,
                                ax=None):
    """Concurrent sequences vs context length for MHA, GQA and MQA variants of one model (§2.3).

    Parameters
    ----------
    model : ModelShape
        The model whose KV-head count is varied.
    gpu : GPU
        The accelerator.
    tp : int
        Tensor-parallel degree.
    contexts : array_like, optional
        Context lengths [tokens]; default 1k to 128k on a log scale.
    kv_heads : sequence of int, optional
        KV-head counts to draw; default ``(n_heads, model.n_kv_heads, 1)``.
    reserve : float
        Working-space share.
    ax : matplotlib.axes.Axes, optional
        Where to draw.

    Returns
    -------
    matplotlib.axes.Axes
        Concurrent sequences from :func:`rooflinekit.memory.max_concurrent_sequences` against
        context length, both on log scales (zero drawn at 0.8 so it stays on the axis).

    References
    ----------
    .. [1] Serving-capacity guide §2.3–2.4: 22 / 183 / 1,467 sequences of 8,192 tokens.
    .. [2] Ainslie et al., "GQA", 2023; Shazeer, "Fast Transformer Decoding", 2019.
    """
    _check_ax(ax)
    ax = _axes(ax)
    contexts = np.geomspace(1024, 131072, 64).round() if contexts is None else np.asarray(contexts)
    heads = kv_heads or tuple(dict.fromkeys((model.n_heads, model.n_kv_heads, 1)))
    for h in heads:
        variant = model.replace(n_kv_heads=h)
        n = memory.max_concurrent_sequences(variant, gpu, contexts, tp=tp, reserve=reserve)
        per_token = variant.kv_bytes_per_token / units.KiB
        ax.step(contexts, np.maximum(n, 0.8), where="post",
                label=f"{variant.attention} ({per_token:,.0f} KiB/token)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("context length [tokens]")
    ax.set_ylabel("concurrent sequences")
    ax.set_title(f"{model.name} on {tp} × {gpu.name}: concurrency is a memory question")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return ax


def _check_ax(ax):
    # duck-typed: matplotlib is imported lazily, so there is no Axes class to test against yet
    if ax is not None and not hasattr(ax, "plot"):
        raise TypeError(f"ax must be a matplotlib Axes or None; got {describe(ax)}")


def _one_d(name, values, default):
    """A 1-D float array of plotting positions (the library validates the values themselves)."""
    if values is None:
        return np.asarray(default, dtype=float)
    arr = as_1d(name, values, allow_scalar=False)
    return arr


def _labelled(name, values, dim):
    import xarray as xr
    return xr.DataArray(values, dims=(dim,), coords={dim: values}, name=name)


def plot_roofline(model, gpu, batch_sizes=(1, 2, 4, 8, 16, 32, 64, 128), context_length=0,
                  prompt_tokens=(128, 512, 2048, 8192), tp=1, ax=None):
    """The roofline of one accelerator with decode batch sizes and prefill passes placed on it.

    Parameters
    ----------
    model : ModelShape
        The served model.
    gpu : GPU
        One accelerator; the roofline is drawn per GPU (a tensor-parallel group scales peak and
        bandwidth alike, so its ridge point is the same).
    batch_sizes : sequence of int
        Decode batch sizes to place [sequences], each ≥ 1.
    context_length : int
        Tokens cached per decoding sequence [tokens], ≥ 0. State it: the KV read it adds is what
        keeps large batches below the ridge.
    prompt_tokens : sequence of int, optional
        Prompt lengths of the prefill passes to place [tokens]; ``None`` or empty for none.
    tp : int
        Tensor-parallel degree [1] of the group that runs them.
    ax : matplotlib.axes.Axes, optional
        Where to draw.

    Returns
    -------
    matplotlib.axes.Axes
        Arithmetic intensity [FLOP/byte] against achieved FLOP/s per GPU [TFLOP/s], both on log
        scales, with the ridge point marked.

    Notes
    -----
    Every number comes from :mod:`rooflinekit.roofline`: decode points from
    :func:`~rooflinekit.roofline.decode_roofline` (intensity, share of peak), prefill points from
    :func:`~rooflinekit.roofline.prefill_flops`, :func:`~rooflinekit.roofline.prefill_bytes`
    and :func:`~rooflinekit.roofline.prefill_time`. The roof itself is
    ``min(peak, intensity × bandwidth)``.

    References
    ----------
    .. [1] Serving-capacity guide §3.1–3.2 ("Batching raises it").
    .. [2] Williams, Waterman & Patterson, "Roofline: An Insightful Visual Performance Model",
       CACM 52(4), 2009.
    """
    _check_ax(ax)
    batch_sizes = _one_d("batch_sizes", batch_sizes, 2 ** np.arange(8))
    prompts = (np.zeros(0) if prompt_tokens is None or len(prompt_tokens) == 0
               else _one_d("prompt_tokens", prompt_tokens, None))
    decode = roofline.decode_roofline(model, gpu, batch_sizes, context_length, tp)
    ridge = float(roofline.ridge_point(gpu))
    peak = float(parallel.group_peak_flops(gpu))
    bandwidth = float(parallel.group_bandwidth(gpu))
    if prompts.size:
        p = _labelled("prompt_tokens", prompts, "prompt_tokens")
        flops = roofline.prefill_flops(model, p)
        prefill_x = (flops / roofline.prefill_bytes(model, p)).values
        prefill_y = (flops / roofline.prefill_time(model, gpu, p, tp) / tp).values
    ax = _axes(ax)
    x_lo = min(0.5, float(decode["arithmetic_intensity"].min()) / 2)
    x_hi = max(ridge * 20, float(prefill_x.max()) * 2 if prompts.size else 0)
    x = np.geomspace(x_lo, x_hi, 256)
    tera = 1e12
    ax.plot(x, np.minimum(peak, x * bandwidth) / tera, color="black", lw=1.5,
            label=f"roof: {bandwidth / 1e12:g} TB/s × intensity, capped at "
                  f"{peak / tera:,.0f} TFLOP/s")
    ax.axvline(ridge, color="grey", ls="--", lw=0.8)
    ax.annotate(f"ridge point {ridge:.0f} FLOP/byte", (ridge, peak / tera / 30), xytext=(-4, 0),
                textcoords="offset points", fontsize=8, color="grey", rotation=90,
                ha="right", va="center")
    dx = decode["arithmetic_intensity"].values
    dy = (decode["compute_utilization"] * peak).values / tera
    ax.plot(dx, dy, "o", color="C0", label=f"decode, context {int(context_length):,} tokens")
    for b, xi, yi in zip(batch_sizes, dx, dy):
        ax.annotate(f"B={int(b)}", (xi, yi), xytext=(-4, 6), textcoords="offset points",
                    fontsize=7, ha="right", color="C0")
    if prompts.size:
        ax.plot(prefill_x, prefill_y / tera, "s", color="C3", label="prefill, one prompt")
        for n, xi, yi in zip(prompts, prefill_x, prefill_y / tera):
            ax.annotate(f"N={int(n):,}", (xi, yi), xytext=(4, -12), textcoords="offset points",
                        fontsize=7, color="C3")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity [FLOP/byte]")
    ax.set_ylabel("achieved FLOP/s per GPU [TFLOP/s]")
    name = getattr(model, "name", "model")
    ax.set_title(f"{name} on {gpu.name}: decode is memory-bound, prefill is not")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    return ax


def _lanes(start, end):
    """Row of each interval in a Gantt chart: the lowest row free at its start (layout only)."""
    order = np.lexsort((end, start))
    free_at, lane = [], np.empty(len(start), dtype=int)
    for i in order:
        row = next((k for k, t in enumerate(free_at) if t <= start[i]), len(free_at))
        if row == len(free_at):
            free_at.append(end[i])
        else:
            free_at[row] = end[i]
        lane[i] = row
    return lane


def plot_batching_timeline(results, ax=None):
    """Static vs continuous batching as a Gantt chart of batch slots over time (§4.2–4.3).

    Parameters
    ----------
    results : mapping of str -> xarray.Dataset
        Runs of :meth:`~rooflinekit.StaticBatcher.run` / :meth:`~rooflinekit.ContinuousBatcher.run`
        on the same workload, by label; each needs the per-request ``admit``, ``finish`` and
        ``output_tokens`` and the summaries ``makespan`` and ``mean_service_latency``.
    ax : matplotlib.axes.Axes, optional
        Where to draw.

    Returns
    -------
    matplotlib.axes.Axes
        One band of rows per policy, top to bottom in the order given; each bar is a request
        holding a slot from admission to finish, coloured by its output length, and a dotted line
        marks each policy's makespan.

    Notes
    -----
    The results do not say which slot a request held, so the rows are a layout: each request
    takes the lowest row free when it is admitted. Rejected requests (``finish`` NaN) are not
    drawn. Times are in the runs' ``time_units`` (ticks for the guide's clock).

    References
    ----------
    .. [1] Serving-capacity guide §4.2 (static batching's waste) and §4.3 (1,220 vs 440 ticks).
    .. [2] Yu et al., "Orca: A Distributed Serving System for Transformer-Based Generative
       Models", OSDI 2022.
    """
    from matplotlib.patches import Patch
    _check_ax(ax)
    results = check_mapping("results", results)
    if not results:
        raise ValueError("results must hold at least one run")
    need = ("admit", "finish", "output_tokens", "makespan", "mean_service_latency")
    for label, ds in results.items():
        missing = [v for v in need if not hasattr(ds, "data_vars") or v not in ds.data_vars]
        if missing:
            raise ValueError(f"results[{label!r}] is not a batcher run: missing {missing}")
    lengths = np.unique(np.concatenate([np.asarray(ds["output_tokens"]).ravel()
                                        for ds in results.values()]))
    colour = {n: f"C{k % 10}" for k, n in enumerate(lengths)}
    ax = _axes(ax)
    top, centres, names = 0, [], []
    for label, ds in results.items():
        admit, finish = np.asarray(ds["admit"], float), np.asarray(ds["finish"], float)
        done = np.isfinite(admit) & np.isfinite(finish)
        lane = _lanes(admit[done], finish[done])
        rows = int(lane.max()) + 1 if lane.size else 1
        out = np.asarray(ds["output_tokens"])[done]
        ax.barh(top + lane, finish[done] - admit[done], left=admit[done], height=0.8,
                color=[colour[n] for n in out], edgecolor="white", linewidth=1.5)
        makespan = float(ds["makespan"])
        ax.plot([makespan, makespan], [top - 0.5, top + rows - 0.5], color="black", ls=":")
        ax.annotate(f"makespan {makespan:,.0f}\nmean service latency "
                    f"{float(ds['mean_service_latency']):,.1f}",
                    (makespan, top + rows / 2), xytext=(6, 0), textcoords="offset points",
                    fontsize=8, va="center")
        centres.append(top + (rows - 1) / 2)
        names.append(f"{label}\n({rows} slots used)")
        top += rows + 1
        ax.axhline(top - 1, color="grey", lw=0.5)
    units = next(iter(results.values())).attrs.get("time_units", "tick")
    ax.set_yticks(centres, names)
    ax.set_ylim(top - 1, -1)
    ax.set_xlabel(f"time [{units}]")
    ax.set_title("Batch slots over time: each bar is one request, admission to finish")
    ax.legend(handles=[Patch(color=colour[n], label=f"{int(n):,} output tokens")
                       for n in lengths], loc="lower right", fontsize=8)
    ax.grid(True, axis="x", alpha=0.3)
    return ax


def plot_batching_win(monte_carlo, parameter, metric="makespan", baseline="static",
                      policy="continuous", ax=None):
    """Distribution of the continuous-batching win over a swept workload parameter (§4.3).

    Parameters
    ----------
    monte_carlo : xarray.Dataset
        A :func:`rooflinekit.monte_carlo` result with dimensions ``policy``, ``parameter`` and
        ``replicate``.
    parameter : str
        The swept dimension drawn along the x axis, e.g. ``"output.sigma"``.
    metric : str
        The summary compared (default ``"makespan"``); the win is ``baseline / policy`` per
        replicate, so lower-is-better metrics (makespan, latencies) read as a speed-up.
    baseline, policy : str
        Labels along ``policy``.
    ax : matplotlib.axes.Axes, optional
        Where to draw.

    Returns
    -------
    matplotlib.axes.Axes
        One box per parameter value (quartiles, whiskers at the 5th and 95th percentiles) with the
        median joined by a line, and a dashed line at 1 (no win).

    References
    ----------
    .. [1] Serving-capacity guide §4.3 and §9 ("its win scales with output-length variance").
    """
    _check_ax(ax)
    if not hasattr(monte_carlo, "data_vars"):
        raise TypeError(f"monte_carlo must be an xarray.Dataset; got {describe(monte_carlo)}")
    for name, value in (("parameter", parameter), ("metric", metric), ("baseline", baseline),
                        ("policy", policy)):
        check_string(name, value)
    if metric not in monte_carlo.data_vars:
        raise ValueError(f"metric {metric!r} is not in the Monte Carlo result")
    da = monte_carlo[metric]
    for dim in ("policy", parameter, "replicate"):
        if dim not in da.dims:
            raise ValueError(f"the Monte Carlo result has no dimension {dim!r} (dims {da.dims})")
    policies = list(da["policy"].values)
    for name, value in (("baseline", baseline), ("policy", policy)):
        check_one_of(name, value, policies)
    win = da.sel(policy=baseline) / da.sel(policy=policy)
    win = win.transpose(parameter, "replicate", ...)
    values = win[parameter].values
    samples = [np.asarray(win.isel({parameter: k})).ravel() for k in range(values.size)]
    ax = _axes(ax)
    # A numeric parameter keeps its spacing on the axis; a categorical one (an admission
    # policy, say) is drawn at 0, 1, 2, ...
    numeric = np.issubdtype(values.dtype, np.number)
    positions = values.astype(float) if numeric else np.arange(values.size, dtype=float)
    gaps = np.diff(np.sort(positions))
    width = 0.5 * gaps.min() if gaps.size and gaps.min() > 0 else 0.5
    ax.boxplot(samples, positions=positions, whis=(5, 95), widths=width, showfliers=False,
               patch_artist=True, boxprops={"facecolor": "C0", "alpha": 0.35},
               medianprops={"color": "C0"})
    ax.plot(positions, [np.median(s) for s in samples], "o-", color="C0",
            label=f"median {baseline} / {policy} {metric}")
    ax.axhline(1.0, color="grey", ls="--", lw=0.8, label="no win")
    ax.plot([], [], "s", color="C0", alpha=0.35, label="quartiles; whiskers 5th–95th percentile")
    ax.set_xticks(positions, [f"{v:g}" if numeric else str(v) for v in values])
    ax.set_xlim(positions.min() - width, positions.max() + width)
    ax.set_xlabel(parameter)
    ax.set_ylabel(f"{baseline} / {policy} {metric} [×]")
    ax.set_title(f"Continuous batching's win grows with output-length spread "
                 f"({monte_carlo.sizes['replicate']} replicates per box)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return ax


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
        Floor cost, spillover cost and their total [USD/month] against the quantile [%], the
        pay-as-you-go-only cost as a dashed line, and the guide's three sizings (peak, p50, p10)
        and the optimum from :func:`rooflinekit.planning.compare_floor_sizing` marked on the total.

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
    offsets = {"peak": (-10, -4), "p50": (0, 14), "p10": (0, 14), "optimal": (0, -30)}
    for k, name in enumerate(sizing["sizing"].values):
        row = sizing.sel(sizing=name)
        xq, cost = float(row[dims.QUANTILE]) * 100, float(row["total_cost"])
        ax.plot(xq, cost, "o", color=f"C{k + 2}", zorder=3, mec="black", mew=0.5)
        ax.annotate(f"{name}: ${cost:,.0f}\nfloor {float(row['floor_utilization']):.0%} busy, "
                    f"{float(row['spilled_share']):.0%} spilled", (xq, cost),
                    xytext=offsets.get(name, (0, 14)), textcoords="offset points", fontsize=7,
                    ha="right" if xq > 60 else "center", va="center", color=f"C{k + 2}",
                    bbox={"boxstyle": "round", "fc": "white", "ec": "none", "alpha": 0.8})
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


def plot_tp_scaling(model, gpu, degrees=(1, 2, 4, 8), batch_size=1, context_length=0, ax=None):
    """Decode step time and throughput against the tensor-parallel degree, with and without the
    all-reduce (§5).

    Parameters
    ----------
    model : ModelShape
        The model.
    gpu : GPU
        One accelerator (with its interconnect bandwidth and latency).
    degrees : sequence of int
        Tensor-parallel degrees [1], each ≥ 1.
    batch_size : int
        Sequences per decode step [1].
    context_length : int
        Tokens cached per sequence [tokens].
    ax : matplotlib.axes.Axes, optional
        Where to draw the step time; the throughput goes on a twin axis on the right.

    Returns
    -------
    matplotlib.axes.Axes
        Step time [ms] (left, from :func:`rooflinekit.roofline.tp_scaling`) and group throughput
        [tokens/s] (right, from :func:`rooflinekit.roofline.decode_throughput`), solid with the
        all-reduce and dashed for the guide's simple model; degrees whose memory does not hold
        the weights are shaded.

    References
    ----------
    .. [1] Serving-capacity guide §5: use the smallest degree that fits.
    .. [2] Shoeybi et al., "Megatron-LM", 2019 (two all-reduces per layer).
    """
    _check_ax(ax)
    ts = roofline.tp_scaling(model, gpu, degrees, batch_size, context_length)
    tp = _labelled("tp", ts["tp"].values, "tp")
    rate = roofline.decode_throughput(model, gpu, batch_size, context_length, tp, allreduce=True)
    rate_simple = roofline.decode_throughput(model, gpu, batch_size, context_length, tp)
    ax = _axes(ax)
    x = ts["tp"].values
    ax.plot(x, ts["step_time"].values * 1e3, "o-", color="C0", label="step time, with all-reduce")
    ax.plot(x, ts["step_time_simple"].values * 1e3, "o--", color="C0",
            label="step time, simple model (no communication)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(x, [str(int(d)) for d in x])
    ax.minorticks_off()
    ax.set_xlabel("tensor-parallel degree")
    ax.set_ylabel("decode step time (ITL) [ms]", color="C0")
    ax.set_ylim(bottom=0)
    for d, fits in zip(x, ts["weights_fit"].values):
        if not fits:
            ax.axvspan(d / 2**0.5, d * 2**0.5, color="grey", alpha=0.15, lw=0)
            ax.annotate("weights\ndo not fit", (d, 0), xytext=(0, 4), textcoords="offset points",
                        ha="center", fontsize=7, color="grey")
    right = ax.twinx()
    right.plot(x, np.asarray(rate), "s-", color="C1", label="throughput, with all-reduce")
    right.plot(x, np.asarray(rate_simple), "s--", color="C1", label="throughput, simple model")
    right.set_ylabel("decode throughput per group [tokens/s]", color="C1")
    right.set_ylim(bottom=0)
    handles = ax.get_legend_handles_labels()
    extra = right.get_legend_handles_labels()
    ax.legend(handles[0] + extra[0], handles[1] + extra[1], loc="upper center", fontsize=8)
    name = getattr(model, "name", "model")
    ax.set_title(f"{name} on {gpu.name}: batch {int(batch_size)}, context "
                 f"{int(context_length):,} — communication makes scaling sub-linear")
    ax.grid(True, alpha=0.3)
    return ax
