"""Latency, throughput and cost of serving under the roofline model (guide §3.3, §4.1, §6.5).

What a user and a budget see of the step time that :mod:`rooflinekit.roofline` models: the
decode step (the inter-token latency, ITL) and the prefill pass (the prefill part of TTFT), the
step shared over the batch, tokens per second per group and per GPU, the time of a whole
generation and of a request end to end (summed in closed form), the GPU cost of a million
generated tokens, one labelled Dataset of everything the roofline says about a decode step, and
the guide's lab names in milliseconds.

Inputs, the efficiency options and the model's assumptions are those of
:mod:`rooflinekit.roofline`; every time here is the one step formula,
:func:`~rooflinekit.roofline.mixed_step_time_kernel`, run on the grid of the inputs. These names
are also importable from :mod:`rooflinekit.roofline`.
"""

from __future__ import annotations

import warnings

import numpy as np

from rooflinekit._labels import finish
from rooflinekit._validation import check_integer, check_nonnegative, check_range
from rooflinekit.roofline.options import read_options, with_options_doc
from rooflinekit.roofline.step import (
    _bytes,
    _cost,
    _decode,
    _prefill,
    _prefill_pairs,
    _setup,
    _step_time,
)
from rooflinekit.units import MS, PER_MILLION, SECONDS_PER_HOUR

__all__ = [
    "decode_step_time", "prefill_time", "amortized_token_time", "decode_throughput",
    "decode_throughput_per_gpu", "prefill_throughput", "generation_time", "request_latency",
    "cost_per_million_tokens", "prefill_ms", "decode_ms_per_token", "decode_time_per_token",
]


# ------------------------------------------------------------------------------------------------
# Step time, per token and per second.
# ------------------------------------------------------------------------------------------------

@with_options_doc
def decode_step_time(model, gpu, batch_size=1, context_length=0, tp=1, **options):
    """Decode step time = inter-token latency (ITL) [s]: every sequence gets one token per step.

    Parameters
    ----------
    model : ModelShape or xarray.Dataset
        The model, or a catalogue Dataset over ``model``.
    gpu : GPU or xarray.Dataset
        One accelerator (``tp`` of them form the group), or a catalogue Dataset over ``gpu``.
    batch_size : int, array_like or xarray.DataArray
        Sequences decoded together [1], ≥ 1.
    context_length : int, array_like or xarray.DataArray
        Tokens each sequence has cached [tokens], ≥ 0.
    tp : int, array_like or xarray.DataArray
        Tensor-parallel degree [1], ≥ 1.
    {options}

    Returns
    -------
    float, ndarray or xarray.DataArray
        Seconds per step.

    Notes
    -----
    ``max(decode FLOPs / peak, (weights + B·KV(C)) / bandwidth) + overhead [+ all-reduce]``
    with peak and bandwidth × ``tp`` (guide §5's simple model). ITL grows with batch size and
    context, not with prompt length (guide §3.3). The guide's §4.1 "per-token time" divides
    this by ``B``: :func:`amortized_token_time`.

    References
    ----------
    .. [1] Guide §3.1, §3.3, §4.1, §5.
    """
    opts = read_options(**options)
    g, c, step = _decode(model, gpu, batch_size, context_length, tp, opts)
    return g.wrap(_step_time(*_cost(c), *step), "s", "decode step time (ITL)")


@with_options_doc
def prefill_time(model, gpu, prompt_tokens, tp=1, *, context_length=0, **options):
    """Time of prefilling a prompt in one pass [s]: the prefill part of TTFT.

    Parameters
    ----------
    model : ModelShape or xarray.Dataset
        The model, or a catalogue Dataset over ``model``.
    gpu : GPU or xarray.Dataset
        One accelerator, or a catalogue Dataset over ``gpu``.
    prompt_tokens : int, array_like or xarray.DataArray
        Prompt tokens [tokens], ≥ 1.
    tp : int, array_like or xarray.DataArray
        Tensor-parallel degree [1], ≥ 1.
    context_length : int, array_like or xarray.DataArray
        Tokens already cached before the prompt (a prefix-cache hit, earlier chunks) [tokens].
    {options}

    Returns
    -------
    float, ndarray or xarray.DataArray
        Seconds.

    Notes
    -----
    Compute-bound for any real prompt, so it grows linearly with the prompt (plus attention's
    quadratic term): a 20,000-token document gives a slow first token on any GPU (guide §3.3).
    TTFT adds queueing, which this does not model. The first output token comes out of this pass.

    References
    ----------
    .. [1] Guide §3.1, §3.3.
    """
    opts = read_options(**options)
    g, c, step = _prefill(model, gpu, prompt_tokens, context_length, tp, opts)
    return g.wrap(_step_time(*_cost(c), *step), "s", "prefill time")


@with_options_doc
def amortized_token_time(model, gpu, batch_size=1, context_length=0, tp=1, **options):
    """Group time per generated token, the decode step shared over the batch [s/token].

    Parameters
    ----------
    model, gpu, batch_size, context_length, tp
        As for :func:`decode_step_time`.
    {options}

    Returns
    -------
    float, ndarray or xarray.DataArray
        ``decode_step_time / batch_size`` [s/token] — guide §4.1's
        ``t = (weights + B·KV) / (bandwidth × B)``, what per-token cost is proportional to.

    Notes
    -----
    With no context it falls exactly as ``1/B`` (while memory-bound); with a long context the
    ``B·KV`` term takes over and it stops falling. For the guide's 70B model the batch-128
    figure is 75× below batch 1 at ≈ 2.4k tokens of context (``guide/NOTES.md``).

    References
    ----------
    .. [1] Guide §4.1.
    """
    opts = read_options(**options)
    g, c, step = _decode(model, gpu, batch_size, context_length, tp, opts)
    return g.wrap(_step_time(*_cost(c), *step) / step[0], "s/token", "amortized time per token")


@with_options_doc
def decode_throughput(model, gpu, batch_size=1, context_length=0, tp=1, **options):
    """Generated tokens per second of one tensor-parallel group [tokens/s].

    Parameters
    ----------
    model, gpu, batch_size, context_length, tp
        As for :func:`decode_step_time`.
    {options}

    Returns
    -------
    float, ndarray or xarray.DataArray
        ``batch_size / decode_step_time`` [tokens/s] for the whole group of ``tp`` GPUs.

    References
    ----------
    .. [1] Guide §4.1.
    """
    opts = read_options(**options)
    g, c, step = _decode(model, gpu, batch_size, context_length, tp, opts)
    return g.wrap(step[0] / _step_time(*_cost(c), *step), "tokens/s",
                  "decode throughput per group")


@with_options_doc
def decode_throughput_per_gpu(model, gpu, batch_size=1, context_length=0, tp=1, **options):
    """Generated tokens per second per GPU [tokens/s]: :func:`decode_throughput` ÷ GPUs.

    Parameters
    ----------
    model, gpu, batch_size, context_length, tp
        As for :func:`decode_step_time`.
    {options}

    Returns
    -------
    float, ndarray or xarray.DataArray
        Tokens per second per GPU.
    """
    opts = read_options(**options)
    g, c, step = _decode(model, gpu, batch_size, context_length, tp, opts)
    return g.wrap(step[0] / _step_time(*_cost(c), *step) / c["tp"], "tokens/s",
                  "decode throughput per GPU")


@with_options_doc
def prefill_throughput(model, gpu, prompt_tokens, tp=1, **options):
    """Prompt tokens per second of one group prefilling one prompt [tokens/s].

    Parameters
    ----------
    model, gpu, prompt_tokens, tp
        As for :func:`prefill_time`.
    {options}

    Returns
    -------
    float, ndarray or xarray.DataArray
        ``prompt_tokens / prefill_time`` [tokens/s].
    """
    opts = read_options(**options)
    g, c, step = _prefill(model, gpu, prompt_tokens, 0, tp, opts)
    return g.wrap(step[1] / _step_time(*_cost(c), *step), "tokens/s", "prefill throughput")



# ------------------------------------------------------------------------------------------------
# Requests: generation, end to end, cost.
# ------------------------------------------------------------------------------------------------

def _sum_linear(a, d, lo, hi):
    """``Σ (a + d·c)`` and ``Σ max(0, a + d·c)`` over whole numbers ``c`` in ``[lo, hi]``."""
    n = np.maximum(hi - lo + 1.0, 0.0)
    total = n * a + d * (lo + hi) * n / 2.0
    root = -a / np.where(d == 0, 1.0, d)
    start = np.where(d > 0, np.maximum(lo, np.floor(root) + 1.0), lo)
    end = np.where(d < 0, np.minimum(hi, np.ceil(root) - 1.0), hi)
    m = np.maximum(end - start + 1.0, 0.0)
    m = np.where((d == 0) & (a <= 0), 0.0, m)
    start = np.where(m > 0, start, 0.0)                 # keep unused bounds finite
    end = np.where(m > 0, end, 0.0)
    positive = m * a + d * (start + end) * m / 2.0
    return total, positive


@with_options_doc
def generation_time(model, gpu, output_tokens, context_length=0, batch_size=1, tp=1, **options):
    """Time of ``output_tokens`` consecutive decode steps, the first at ``context_length`` [s].

    Parameters
    ----------
    model, gpu, batch_size, tp
        As for :func:`decode_step_time`.
    output_tokens : int, array_like or xarray.DataArray
        Decode steps (tokens generated by decode) [tokens], ≥ 0.
    context_length : int, array_like or xarray.DataArray
        Tokens cached at the first step [tokens], ≥ 0; each step adds one.
    {options}

    Returns
    -------
    float, ndarray or xarray.DataArray
        Seconds: ``Σ decode_step_time(B, C + j)`` for ``j = 0 … output_tokens − 1``.

    Notes
    -----
    Summed in closed form: within a step both the compute and the memory time are affine in
    the (window-capped) context, so the sum of their maximum splits into arithmetic series.
    The batch is taken as ``batch_size`` sequences in lock-step with this one (same context).

    References
    ----------
    .. [1] Guide §3.3, §4.1.
    """
    check_integer("output_tokens", output_tokens, lo=0)
    check_integer("context_length", context_length, lo=0)
    check_range("batch_size", batch_size, lo=1)
    opts = read_options(**options)
    args = {"tp": tp, "output_tokens": output_tokens, "context_length": context_length,
            "batch_size": batch_size}
    g, c = _setup(model, gpu, args, opts)
    return g.wrap(_generation(g, c, g["output_tokens"], g["context_length"]), "s",
                  "generation time")


def _generation(g, c, steps, first):
    b = g["batch_size"]
    zeros = np.zeros_like(np.asarray(first, dtype=float))
    weights = _bytes(c, b, 0.0, zeros, 0.0)                     # W(B) with no KV
    a_compute = c["flops_per_token"] * b / c["peak_flops"]
    b_compute = c["attention_flops_per_pair"] * b / c["peak_flops"]
    a_memory = weights / c["bandwidth"]
    b_memory = c["kv_bytes_per_token"] * b / c["bandwidth"]
    da, db = a_compute - a_memory, b_compute - b_memory
    f, w = c["full_attention_fraction"], c["sliding_window"]
    finite_w = np.where(np.isinf(w), 0.0, w)
    lo, hi = first, first + steps - 1.0
    # Up to the window the context counts whole; past it windowed layers stop growing.
    hi1 = np.minimum(hi, w)
    lo2 = np.where(np.isinf(w), hi + 1.0, np.maximum(lo, finite_w + 1.0))
    _, pos1 = _sum_linear(da, db, lo, hi1)
    _, pos2 = _sum_linear(da + db * (1.0 - f) * finite_w, db * f, lo2, hi)
    n1 = np.maximum(hi1 - lo + 1.0, 0.0)
    n2 = np.maximum(hi - lo2 + 1.0, 0.0)
    context1 = _sum_linear(0.0, 1.0, lo, hi1)[0]
    context2 = f * _sum_linear(0.0, 1.0, lo2, hi)[0] + (1.0 - f) * finite_w * n2
    memory_time = a_memory * (n1 + n2) + b_memory * (context1 + context2)
    fixed = c["step_overhead"] + b * c["allreduce_bytes_per_token"] / c["link_bandwidth"] + \
        c["allreduce_latency"]
    return memory_time + pos1 + pos2 + steps * fixed


@with_options_doc
def request_latency(model, gpu, prompt_tokens, output_tokens, batch_size=1, tp=1, **options):
    """End-to-end time of one request: prefill, then ``output_tokens − 1`` decode steps [s].

    Parameters
    ----------
    model, gpu, tp
        As for :func:`decode_step_time`.
    prompt_tokens : int, array_like or xarray.DataArray
        Prompt tokens [tokens], ≥ 1.
    output_tokens : int, array_like or xarray.DataArray
        Tokens generated, the first by prefill [tokens], ≥ 1.
    batch_size : int, array_like or xarray.DataArray
        Sequences decoding with it, in lock-step at the same context [1], ≥ 1.
    {options}

    Returns
    -------
    float, ndarray or xarray.DataArray
        Seconds: ``prefill_time(N) + generation_time(output − 1, context N)``. No queueing.

    References
    ----------
    .. [1] Guide §3.3 (TTFT then ITL per token).
    """
    check_integer("prompt_tokens", prompt_tokens, lo=1)
    check_integer("output_tokens", output_tokens, lo=1)
    check_range("batch_size", batch_size, lo=1)
    opts = read_options(**options)
    args = {"tp": tp, "prompt_tokens": prompt_tokens, "output_tokens": output_tokens,
            "batch_size": batch_size, "context_length": 0.0}
    g, c = _setup(model, gpu, args, opts)
    n = g["prompt_tokens"]
    pairs = _prefill_pairs(n, 0.0, c["full_attention_fraction"], c["sliding_window"])
    ttft = _step_time(*_cost(c), 0.0, n, 0.0, pairs)
    total = ttft + _generation(g, c, g["output_tokens"] - 1.0, n)
    return g.wrap(total, "s", "request latency")


@with_options_doc
def cost_per_million_tokens(model, gpu, batch_size=1, context_length=0, tp=1, *,
                            hourly_price=None, **options):
    """GPU cost of a million generated tokens at full decode throughput [USD per 1M tokens].

    Parameters
    ----------
    model, gpu, batch_size, context_length, tp
        As for :func:`decode_step_time`.
    hourly_price : float, array_like or xarray.DataArray, optional
        Price of one GPU-hour [USD/h], ≥ 0; default the GPU's catalogue ``hourly_price``.
    {options}

    Returns
    -------
    float, ndarray or xarray.DataArray
        ``tp × hourly_price / 3600 / decode_throughput × 1e6`` [USD/1M tokens]: GPU time only,
        fully utilised (no idle time, engineering or prefill; see :mod:`rooflinekit.pricing`).

    Raises
    ------
    ValueError
        If no price is given and the GPU has none.

    References
    ----------
    .. [1] Guide §4.1 (per-token cost), §6.5.
    """
    opts = read_options(**options)
    if hourly_price is not None:
        check_nonnegative("hourly_price", hourly_price)
    more = {} if hourly_price is None else {"hourly_price": hourly_price}
    g, c, step = _decode(model, gpu, batch_size, context_length, tp, opts, **more)
    if hourly_price is None:
        per_gpu = g["gpu.hourly_price"] / g["gpu.n_gpus"]
        if np.isnan(per_gpu).any():
            raise ValueError("gpu has no hourly_price; pass hourly_price=<USD per GPU-hour>")
    else:
        per_gpu = g["hourly_price"]
    rate = step[0] / _step_time(*_cost(c), *step)
    usd = c["tp"] * per_gpu / SECONDS_PER_HOUR / rate * PER_MILLION
    return g.wrap(usd, "USD/1M tokens", "GPU cost per million generated tokens")


# ------------------------------------------------------------------------------------------------
# The guide's lab names.
# ------------------------------------------------------------------------------------------------

@with_options_doc
def prefill_ms(model, gpu, prompt_tokens, tp=1, **options):
    """The lab's name: :func:`prefill_time` in milliseconds [ms] (guide §8 step 3)."""
    return _to_ms(prefill_time(model, gpu, prompt_tokens, tp, **options), "prefill time")


@with_options_doc
def decode_ms_per_token(model, gpu, batch_size=1, context_length=0, tp=1, **options):
    """The lab's name: guide §4.1's per-token time ``(weights + B·KV)/(bandwidth·B)`` [ms].

    This is :func:`amortized_token_time` in milliseconds — the decode step shared over the
    batch, which falls exactly as ``1/B`` with no context (the lab's test) — **not** the
    inter-token latency a user sees, which is :func:`decode_step_time` (the whole step).
    """
    return _to_ms(amortized_token_time(model, gpu, batch_size, context_length, tp, **options),
                  "amortized time per token")


def _to_ms(seconds, long_name):
    return finish(seconds / MS, "ms", long_name)


def decode_time_per_token(model, gpu, batch_size=1, context_length=0, tp=1, **options):
    """Former name of :func:`decode_step_time`, kept for one release; warns.

    The old name read as a per-token time, but it is the whole decode step (the inter-token
    latency); the step shared over the batch is :func:`amortized_token_time`.
    """
    warnings.warn("decode_time_per_token is renamed decode_step_time (the whole decode step, "
                  "the ITL); the old name will be removed in the next release",
                  FutureWarning, stacklevel=2)
    return decode_step_time(model, gpu, batch_size, context_length, tp, **options)
