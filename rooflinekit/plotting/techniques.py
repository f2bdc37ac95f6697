"""The serving techniques' figures: prefix caching and speculative decoding.

Concurrency and prefill time against the cached share of each prompt; the speculative speed-up
against batch size, one line per acceptance probability, with the break-even at 1.
"""

from __future__ import annotations

import numpy as np

from rooflinekit import memory, roofline
from rooflinekit._validation import check_fraction, check_integer
from rooflinekit.plotting._axes import _axes, _check_ax, _one_d

__all__ = ["plot_prefix_caching", "plot_speculative_speedup"]


def plot_prefix_caching(model, gpu, tp=1, *, context_length=8192, prompt_tokens=None,
                        shares=None, block_size=16, reserve=memory.DEFAULT_RESERVE, ax=None):
    """Concurrency and TTFT against the prefix share of each prompt (prefix caching).

    Parameters
    ----------
    model : ModelShape
        The model.
    gpu : GPU
        The accelerator.
    tp : int
        Tensor-parallel degree [1].
    context_length : int
        Tokens each sequence holds [tokens]; the shared prefix is ``⌊share × context_length⌋``
        of them.
    prompt_tokens : int, optional
        Prompt length for TTFT [tokens]; default ``context_length``. ``⌊share × prompt⌋`` of
        its tokens hit the cache.
    shares : array_like, optional
        Prefix shares to draw [1], in [0, 1]; default 0 to 0.95.
    block_size : int
        KV block size [tokens]: only whole blocks are shared. Default 16.
    reserve : float
        Working-space share. Default 0.10.
    ax : matplotlib.axes.Axes, optional
        Where to draw concurrency; TTFT goes on a twin axis at its right.

    Returns
    -------
    matplotlib.axes.Axes
        Concurrent sequences (:func:`rooflinekit.memory.max_concurrent_sequences` with
        ``shared_prefix_tokens``) on the left axis and the prefill time
        (:func:`rooflinekit.roofline.prefill_time` with ``cached_tokens``) in milliseconds on the
        right one (``ax.right``), both against the share.

    See Also
    --------
    plot_speculative_speedup, rooflinekit.plotting.plot_concurrency_vs_context

    References
    ----------
    .. [1] Kwon et al., "Efficient Memory Management for Large Language Model Serving with
       PagedAttention", SOSP 2023 (block-level prefix sharing).
    .. [2] Serving-capacity guide §2.3, §3.3, §4.5.
    """
    _check_ax(ax)
    shares = _one_d("shares", shares, np.linspace(0.0, 0.95, 39))
    check_fraction("shares", shares)
    check_integer("context_length", context_length, lo=1)
    prompt = context_length if prompt_tokens is None else prompt_tokens
    check_integer("prompt_tokens", prompt, lo=1)
    n = memory.max_concurrent_sequences(model, gpu, context_length, tp, reserve,
                                        shared_prefix_tokens=np.floor(shares * context_length),
                                        block_size=block_size)
    ttft = roofline.prefill_time(model, gpu, prompt, tp, cached_tokens=np.floor(shares * prompt))
    ax = _axes(ax)
    ax.plot(shares, n, color="C0", marker=".", label="concurrent sequences")
    ax.set_xlabel("prefix share of each prompt (shared and cached) [1]")
    ax.set_ylabel("concurrent sequences", color="C0")
    ax.set_ylim(bottom=0)
    right = ax.twinx()
    right.plot(shares, np.asarray(ttft) * 1e3, color="C1", marker=".",
               label="prefill time (TTFT)")
    right.set_ylabel("prefill time (TTFT without queueing) [ms]", color="C1")
    right.set_ylim(bottom=0)
    ax.right = right
    ax.set_title(f"{model.name} on {tp} × {gpu.name}, {context_length:,}-token context: "
                 f"prefix caching", fontsize="medium")
    lines = ax.get_lines() + right.get_lines()
    ax.legend(lines, [line.get_label() for line in lines], loc="upper left")
    return ax


def plot_speculative_speedup(model, gpu, tp=1, *, draft, draft_tokens=4, context_length=4096,
                             batch_sizes=None, acceptances=None, engine=None, ax=None):
    """Speculative decoding's speed-up against batch size and acceptance, with the break-even.

    Parameters
    ----------
    model : ModelShape
        The target model.
    gpu : GPU
        The accelerator.
    tp : int
        Tensor-parallel degree [1].
    draft : ModelShape, str or float
        The draft model or a draft head's cost as a share of the target's decode step
        (:func:`rooflinekit.roofline.speculative_step_time`).
    draft_tokens : int
        Tokens drafted per step, k [tokens]. Default 4.
    context_length : int
        Tokens each sequence holds [tokens]. Default 4,096.
    batch_sizes : array_like, optional
        Batch sizes to draw [1]; default 1 to 1,024 on a log scale.
    acceptances : array_like, optional
        Acceptance probabilities, one line each [1], in [0, 1]; default 0.5, 0.7, 0.9.
    engine : Engine or Calibration, optional
        How the serving engine runs the target's and the draft's decode steps; default
        :data:`rooflinekit.IDEAL`.
    ax : matplotlib.axes.Axes, optional
        Where to draw.

    Returns
    -------
    matplotlib.axes.Axes
        :func:`rooflinekit.roofline.speculative_speedup` against batch size (log scale), one
        line per acceptance, and the line speed-up = 1 below which speculation costs more than
        it gains.

    See Also
    --------
    plot_prefix_caching, rooflinekit.pricing.speculative_cost_per_million_tokens

    Notes
    -----
    While decode is memory-bound, verifying ``k + 1`` tokens costs about one step and the
    speed-up approaches ``E(α, k) / (1 + k·c)``; once the batch makes decode compute-bound,
    verification costs up to ``k + 1`` steps and the speed-up falls below 1.

    References
    ----------
    .. [1] Leviathan, Kalman & Matias, "Fast Inference from Transformers via Speculative
       Decoding", ICML 2023.
    """
    _check_ax(ax)
    batches = _one_d("batch_sizes", batch_sizes, np.unique(np.geomspace(1, 1024, 41).round()))
    alphas = _one_d("acceptances", acceptances, [0.5, 0.7, 0.9])
    check_fraction("acceptances", alphas)
    ax = _axes(ax)
    for alpha in alphas:
        speedup = roofline.speculative_speedup(model, gpu, batches, context_length, tp,
                                               draft=draft, draft_tokens=draft_tokens,
                                               acceptance=float(alpha), engine=engine)
        ax.plot(batches, speedup, marker=".", label=f"acceptance α = {alpha:g}")
    ax.axhline(1.0, color="black", lw=1.0, ls="--", label="break-even (speed-up = 1)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size [sequences]")
    ax.set_ylabel("speed-up over plain decoding [×]")
    ax.set_title(f"{model.name} on {tp} × {gpu.name}: speculative decoding, k = {draft_tokens}, "
                 f"{context_length:,}-token context", fontsize="medium")
    ax.legend()
    return ax
