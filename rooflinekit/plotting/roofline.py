"""The step-time figures: the roofline with decode and prefill placed on it (guide §3.2), and
step time and throughput against the tensor-parallel degree (guide §5).
"""

from __future__ import annotations

import numpy as np

from rooflinekit import parallel, roofline
from rooflinekit.plotting._axes import _axes, _check_ax, _labelled, _one_d

__all__ = ["plot_roofline", "plot_tp_scaling", "plot_layouts"]


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
    The roof is ``min(peak, intensity × bandwidth)``; the points come from
    :func:`~rooflinekit.roofline.decode_roofline` and the prefill formulas.

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


def plot_tp_scaling(model, gpu, degrees=(1, 2, 4, 8), batch_size=1, context_length=0, ax=None,
                    *, engine=None):
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
    engine : Engine or Calibration, optional
        How the serving engine runs a decode step, as for :func:`rooflinekit.roofline.tp_scaling`:
        its ``allreduce`` models the solid curves, the dashed ones the same engine without
        communication. Default :data:`rooflinekit.IDEAL`.

    Returns
    -------
    matplotlib.axes.Axes
        Step time [ms] (left) and group throughput [tokens/s] (right), solid with the all-reduce
        and dashed without; degrees whose memory does not hold the weights are shaded.

    References
    ----------
    .. [1] Serving-capacity guide §5: use the smallest degree that fits.
    .. [2] Shoeybi et al., "Megatron-LM", 2019 (two all-reduces per layer).
    """
    _check_ax(ax)
    engine = roofline.engine_for(engine, "decode", model=model, gpu=gpu)
    ts = roofline.tp_scaling(model, gpu, degrees, batch_size, context_length, engine=engine)
    tp = _labelled("tp", ts["tp"].values, "tp")
    rate = roofline.decode_throughput(model, gpu, batch_size, context_length, tp, engine=engine)
    # the dashed curve: the same engine under the guide's model, as tp_scaling's simple one
    rate_simple = roofline.decode_throughput(model, gpu, batch_size, context_length, tp,
                                             engine=engine.replace(allreduce="guide"))
    ax = _axes(ax)
    x = ts["tp"].values
    ax.plot(x, ts["decode_step_time"].values * 1e3, "o-", color="C0", label="step time, with all-reduce")
    ax.plot(x, ts["decode_step_time_simple"].values * 1e3, "o--", color="C0",
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
            # half-way up the band: the step-time marker sits at its top, throughput's at its
            # foot, so the middle stays clear of both
            ax.text(d, 0.5, "weights\ndo not fit", transform=ax.get_xaxis_transform(),
                    ha="center", va="center", fontsize=7, color="dimgrey")
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


def plot_layouts(model, gpu, n_gpus, batch_size=32, context_length=4096, ax=None, *,
                 engine=None, **options):
    """Every layout of a model on ``n_gpus`` GPUs: its ITL against the fleet's tokens/s per GPU.

    Parameters
    ----------
    model, gpu : ModelShape, GPU
        The model, and one accelerator of the fleet.
    n_gpus : int
        GPUs the layouts use, all of them [1].
    batch_size, context_length : int
        Sequences decoding together in each replica [1], and their context [tokens].
    ax : matplotlib.axes.Axes, optional
        Where to draw.
    engine : Engine or Calibration, optional
        As for :func:`rooflinekit.roofline.layouts`; default :data:`rooflinekit.IDEAL`.
    **options
        The layout's other options, passed to :func:`rooflinekit.roofline.layouts`
        (``micro_batches``, ``max_tp``, ``reserve``, ``prompt_tokens``, link overrides).

    Returns
    -------
    matplotlib.axes.Axes
        One point per layout from :func:`rooflinekit.roofline.layouts`, labelled
        ``tp×pp`` (``×ep`` for expert parallelism) and its replicas: filled where the batch fits
        the KV budget, hollow and grey where it does not. Lower and higher is better: the
        upper-left points are the layouts worth comparing.
    """
    _check_ax(ax)
    ds = roofline.layouts(model, gpu, n_gpus, batch_size=batch_size,
                          context_length=context_length, engine=engine, **options)
    ax = _axes(ax)
    itl = ds["decode_step_time"].values * 1e3
    per_gpu = ds["tokens_per_second_per_gpu"].values
    fits = ds["fits"].values
    ax.scatter(itl[fits], per_gpu[fits], color="C0", zorder=3, label="the batch fits")
    ax.scatter(itl[~fits], per_gpu[~fits], facecolors="none", edgecolors="grey", zorder=3,
               label="does not fit (weights or KV)")
    for i in range(ds.sizes["layout"]):
        tp, pp, ep, dp = (int(ds[k][i]) for k in ("tp", "pp", "ep", "dp"))
        label = f"{tp}×{pp}" + (f"×ep{ep}" if ep > 1 else "") + f" ({dp}r)"
        ax.annotate(label, (itl[i], per_gpu[i]), xytext=(4, 3), textcoords="offset points",
                    fontsize=7, color="black" if fits[i] else "grey")
    from matplotlib.ticker import FormatStrFormatter

    ax.set_xscale("log")
    for axis in (ax.xaxis.set_major_formatter, ax.xaxis.set_minor_formatter):
        axis(FormatStrFormatter("%g"))          # 6, 10, 20 ms rather than 6×10⁰
    ax.tick_params(axis="x", which="minor", labelsize=7)
    ax.set_xlabel("decode step time (ITL) [ms]")
    ax.set_ylabel("decode throughput per GPU [tokens/s]")
    ax.set_ylim(0, per_gpu.max() * 1.15)         # room above the top points for their labels
    ax.legend(loc="best", fontsize=8, title="tp×pp (replicas)", title_fontsize=8)
    ax.set_title(f"{getattr(model, 'name', 'model')} on {int(n_gpus)} × {gpu.name}: batch "
                 f"{int(batch_size)} per replica, context {int(context_length):,}")
    ax.grid(True, alpha=0.3)
    return ax
