"""The memory figure: concurrent sequences against context length for MHA, GQA and MQA (guide §2.3).
"""

from __future__ import annotations

import numpy as np

from rooflinekit import memory, units
from rooflinekit.plotting._axes import _axes, _check_ax

__all__ = ["plot_concurrency_vs_context"]


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
