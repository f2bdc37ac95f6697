"""Latency, throughput and cost of serving under the roofline model (guide §3.3, §4.1, §6.5).

ITL, prefill time (TTFT without queueing), time to first token (the prefill plus the engine's
front end), the step shared over the batch, throughput per group
and per GPU, generation and end-to-end time (summed in closed form) and GPU cost per million
tokens: each the one step formula (:func:`~rooflinekit.roofline.mixed_step_time_kernel`) run on
the grid of its inputs. Re-exported by :mod:`rooflinekit.roofline`.
"""

from __future__ import annotations


import numpy as np

from rooflinekit._labels import parameter_entries
from rooflinekit._validation import check_integer, check_nonnegative, show
from rooflinekit.roofline.step import (
    decode_step,
    gemm_flops_per_token,
    prefill_step,
    step_bytes,
    step_formula,
    step_time,
    weight_bytes,
)
from rooflinekit.units import PER_MILLION, SECONDS_PER_HOUR

__all__ = [
    "amortized_token_time",
    "cost_per_million_tokens",
    "decode_step_time",
    "decode_throughput",
    "decode_throughput_per_gpu",
    "generation_time",
    "prefill_throughput",
    "prefill_time",
    "request_latency",
    "time_to_first_token",
]


def _whole(lo):
    """A check that every value is a whole number ≥ ``lo``."""
    return lambda name, value: check_integer(name, value, lo=lo)


def _price(name, value):
    if value is not None:
        check_nonnegative(name, value)


# ------------------------------------------------------------------------------------------------
# Step time, per token and per second.
# ------------------------------------------------------------------------------------------------

#: The expert-parallel degree, for the formulas of one step that take it.
_EP_PARAMETER = parameter_entries("""
    ep : int, array_like or xarray.DataArray
        Expert-parallel degree [1], in [1, 4096]: the routed experts spread over ``ep`` groups
        of the ``tp`` GPUs, and the step waits for the group whose experts its tokens touch
        most (:func:`rooflinekit.parallel.expected_normal_maximum`). Default 1. The
        all-to-all it adds, and the check that ``ep`` divides the experts, are the layout's
        (:func:`layout_decode_step_time`).
    """)


@step_formula("s", "decode step time (ITL)", parameters=_EP_PARAMETER)
def decode_step_time(model, gpu, batch_size=1, context_length=0, tp=1, *, ep=1, engine=None):
    """Decode step time = inter-token latency (ITL) [s]: every sequence gets one token per step.

    See Also
    --------
    amortized_token_time, prefill_time, decode_throughput, mixed_step_time

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
    return step_time(model, gpu, decode_step(model, batch_size, context_length))


#: The prompt's tokens a prefix-cache hit serves, for the prefill formulas that take them.
_CACHED_PARAMETER = parameter_entries("""
    cached_tokens : int, array_like or xarray.DataArray
        Leading tokens of the prompt found in the prefix cache [tokens], whole, in
        ``[0, prompt_tokens]``; their KV is read, not computed. Default 0 (nothing cached).
    """)
#: The context before a prompt, for the formulas of one prompt's pass.
_PRIOR_CONTEXT_PARAMETER = parameter_entries("""
    context_length : int, array_like or xarray.DataArray
        Tokens already cached *before* the prompt and not counted in ``prompt_tokens``
        (earlier chunks, a conversation's history) [tokens].
    """)


def _check_cached(prompt_tokens, cached_tokens):
    """``cached_tokens ≤ prompt_tokens`` cell by cell (both laid out on the formula's grid)."""
    over = np.asarray(cached_tokens > prompt_tokens)
    if over.any():
        bad = np.broadcast_to(np.asarray(cached_tokens, dtype=float), over.shape)[over].flat[0]
        raise ValueError(f"cached_tokens must lie in [0, prompt_tokens] (the cached part of the "
                         f"prompt); got {show(bad)} with prompt_tokens "
                         f"{show(np.broadcast_to(prompt_tokens, over.shape)[over].flat[0])}")


def _prompt_step(model, prompt_tokens, context_length, cached_tokens):
    """The prefill of a prompt whose first ``cached_tokens`` are cached, after a context.

    Only the rest is computed, after ``context_length + cached_tokens`` cached tokens; a fully
    cached prompt still computes its last token, whose logits give the first output token.
    """
    _check_cached(prompt_tokens, cached_tokens)
    computed = np.maximum(prompt_tokens - cached_tokens, 1.0)
    return prefill_step(model, computed, context_length + (prompt_tokens - computed))


@step_formula("s", "prefill time", checks={"cached_tokens": _whole(0)},
              parameters={**_CACHED_PARAMETER, **_PRIOR_CONTEXT_PARAMETER, **_EP_PARAMETER},
              phase="prefill")
def prefill_time(model, gpu, prompt_tokens, tp=1, *, context_length=0, cached_tokens=0, ep=1,
                 engine=None):
    """Time of prefilling a prompt in one pass [s]: the prefill part of TTFT.

    Raises
    ------
    ValueError
        ``cached_tokens`` outside ``[0, prompt_tokens]`` (and the shared checks).

    See Also
    --------
    decode_step_time, prefill_throughput, request_latency, mixed_step_time,
    rooflinekit.memory.max_concurrent_sequences

    Notes
    -----
    Compute-bound for any real prompt, so it grows linearly with the prompt (plus attention's
    quadratic term): a 20,000-token document gives a slow first token on any GPU (guide §3.3).
    TTFT adds queueing, which this does not model. The first output token comes out of this pass.

    Prefix caching: ``cached_tokens`` counts the *prompt's own* leading tokens that hit the
    cache, so ``prefill_time(P, cached_tokens=C) == prefill_time(P − C, context_length=C)``
    for ``C < P``: the ``P − C`` new tokens are computed and attend to the ``C`` cached ones,
    whose KV is read once. The two keywords add: the cached prefix is ``context_length +
    cached_tokens``. A fully cached prompt (``C = P``) still computes its last token, about one
    decode step at batch 1 and context ``P − 1``.

    References
    ----------
    .. [1] Guide §3.1, §3.3.
    .. [2] Kwon et al., "Efficient Memory Management for Large Language Model Serving with
       PagedAttention", SOSP 2023 (prefix sharing); vLLM automatic prefix caching.
    """
    return step_time(model, gpu, _prompt_step(model, prompt_tokens, context_length,
                                              cached_tokens))


@step_formula("s", "time to first token", checks={"cached_tokens": _whole(0)},
              parameters={**_CACHED_PARAMETER, **_PRIOR_CONTEXT_PARAMETER}, phase="prefill")
def time_to_first_token(model, gpu, prompt_tokens, tp=1, *, context_length=0, cached_tokens=0,
                        engine=None):
    """Time from sending a prompt to receiving its first token, without queueing [s].

    Raises
    ------
    ValueError
        ``cached_tokens`` outside ``[0, prompt_tokens]`` (and the shared checks).

    See Also
    --------
    prefill_time, request_latency

    Notes
    -----
    ``TTFT = T_prefill(N) + frontend_latency``: the one prefill pass that gives the first token
    (:func:`prefill_time`), plus the time the request spends in the serving front end outside
    the engine's steps (HTTP, tokenisation, detokenising and streaming the first token;
    :attr:`rooflinekit.Engine.frontend_latency`, 0 on the ideal engine, where this equals
    :func:`prefill_time` exactly). This is the TTFT a client such as ``vllm bench serve``
    measures on an idle server; under load the simulator adds the wait for a step.

    References
    ----------
    .. [1] Guide §3.3 (TTFT).
    .. [2] vLLM, ``benchmarks/benchmark_serving.py``: TTFT measured at the client, from the
       request's send to the first streamed token.
    """
    prefill = step_time(model, gpu, _prompt_step(model, prompt_tokens, context_length,
                                                 cached_tokens))
    return prefill + gpu.frontend_latency


@step_formula("s/token", "amortized time per token")
def amortized_token_time(model, gpu, batch_size=1, context_length=0, tp=1, *, engine=None):
    """Group time per generated token, the decode step shared over the batch [s/token].

    Returns
    -------
    float, ndarray or xarray.DataArray
        ``decode_step_time / batch_size`` [s/token] — guide §4.1's
        ``t = (weights + B·KV) / (bandwidth × B)``, what per-token cost is proportional to.

    See Also
    --------
    decode_step_time, decode_throughput

    Notes
    -----
    With no context it falls exactly as ``1/B`` (while memory-bound); with a long context the
    ``B·KV`` term takes over and it stops falling. For the guide's 70B model the batch-128
    figure is 75× below batch 1 at ≈ 2.4k tokens of context (``docs/conventions.md``).

    References
    ----------
    .. [1] Guide §4.1.
    """
    return step_time(model, gpu, decode_step(model, batch_size, context_length)) / batch_size


@step_formula("tokens/s", "decode throughput per group")
def decode_throughput(model, gpu, batch_size=1, context_length=0, tp=1, *, engine=None):
    """Generated tokens per second of one tensor-parallel group [tokens/s].

    ``batch_size / decode_step_time``, for the whole group of ``tp`` GPUs.

    See Also
    --------
    decode_throughput_per_gpu, decode_step_time, amortized_token_time

    Notes
    -----
    ``X(B, C) = B / T(B, C)`` with ``T`` the decode step (:func:`decode_step_time`): every
    sequence of the batch gains one token a step. Memory-bound, ``T`` hardly grows with ``B``
    and ``X`` grows almost linearly: the guide's 70B model on the lab GPU gives 23.9 tokens/s
    at batch 1 and 1,531 at batch 64 (no context).

    References
    ----------
    .. [1] Guide §4.1.
    """
    return batch_size / step_time(model, gpu, decode_step(model, batch_size, context_length))


@step_formula("tokens/s", "decode throughput per GPU")
def decode_throughput_per_gpu(model, gpu, batch_size=1, context_length=0, tp=1, *, engine=None):
    """Generated tokens per second per GPU [tokens/s]: :func:`decode_throughput` ÷ GPUs.

    See Also
    --------
    decode_throughput, cost_per_million_tokens

    Notes
    -----
    ``B / (T(B, C) · tp)``: the group's throughput shared over its ``tp`` GPUs, the figure a
    per-GPU price divides. Splitting the weights over more GPUs shortens ``T`` by less than
    ``tp`` (the all-reduce and fixed costs stay), so per GPU it falls with ``tp``.

    References
    ----------
    .. [1] Guide §4.1, §5.
    """
    t = step_time(model, gpu, decode_step(model, batch_size, context_length))
    return batch_size / t / gpu.tp


@step_formula("tokens/s", "prefill throughput", phase="prefill")
def prefill_throughput(model, gpu, prompt_tokens, tp=1, *, engine=None):
    """Prompt tokens per second of one group prefilling one prompt [tokens/s].

    Returns
    -------
    float, ndarray or xarray.DataArray
        ``prompt_tokens / prefill_time`` [tokens/s].

    See Also
    --------
    prefill_time, decode_throughput

    Notes
    -----
    ``P / T_prefill(P)`` with no cached context. Compute-bound for any real prompt, so close to
    ``peak FLOP/s / (2 · active parameters)`` until attention's quadratic term grows: 6,935
    tokens/s for a 2,000-token prompt of the guide's 70B model on the lab GPU.

    References
    ----------
    .. [1] Guide §3.1, §3.3.
    """
    return prompt_tokens / step_time(model, gpu, prefill_step(model, prompt_tokens, 0.0))



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


@step_formula("s", "generation time", checks={
    "output_tokens": _whole(0), "context_length": _whole(0)})
def generation_time(model, gpu, output_tokens, context_length=0, batch_size=1, tp=1, *, engine=None):
    """Time of ``output_tokens`` consecutive decode steps, the first at ``context_length`` [s].

    Parameters
    ----------
    output_tokens : int, array_like or xarray.DataArray
        Decode steps (tokens generated by decode) [tokens], ≥ 0.
    context_length : int, array_like or xarray.DataArray
        Tokens cached at the first step [tokens], ≥ 0; each step adds one.

    Returns
    -------
    float, ndarray or xarray.DataArray
        Seconds: ``Σ decode_step_time(B, C + j)`` for ``j = 0 … output_tokens − 1``.

    See Also
    --------
    decode_step_time, request_latency

    Notes
    -----
    Summed in closed form: within a step both the compute and the memory time are affine in
    the (window-capped) context, so the sum of their maximum splits into arithmetic series.
    The batch is taken as ``batch_size`` sequences in lock-step with this one (same context).

    References
    ----------
    .. [1] Guide §3.3, §4.1.
    """
    return _generation(model, gpu, batch_size, output_tokens, context_length)


def _generation(model, gpu, b, steps, first):
    """``Σ step_time`` over ``steps`` decode steps from context ``first``, in closed form."""
    zeros = np.zeros_like(np.asarray(first, dtype=float))
    weights = step_bytes(model, (b, 0.0, zeros, 0.0))           # W(B) with no KV
    a_compute = (gemm_flops_per_token(model, gpu) + model.lm_head_flops_per_token) * \
        (b + gpu.gemm_half_tokens) / gpu.peak_flops
    b_compute = model.attention_flops_per_pair * b / gpu.attention_peak_flops
    # a low-precision path's weights at their own share (the scale is exactly 1 by default)
    a_memory = (weights + weight_bytes(model, b) * (gpu.weight_traffic_scale - 1.0)) \
        / gpu.bandwidth
    b_memory = model.kv_bytes_per_token * gpu.kv_traffic_scale * b / gpu.bandwidth
    da, db = a_compute - a_memory, b_compute - b_memory
    f, w = model.full_attention_fraction, model.sliding_window
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
    # each all-reduce the faster of the two-stage and the one-shot, as the step formula
    communication = np.minimum(
        b * gpu.allreduce_bytes_per_token / gpu.link_bandwidth + gpu.allreduce_latency,
        b * gpu.one_shot_allreduce_bytes_per_token / gpu.link_bandwidth
        + gpu.one_shot_allreduce_latency)
    fixed = gpu.step_overhead + b * gpu.sequence_overhead + communication
    return memory_time + pos1 + pos2 + steps * fixed


@step_formula("s", "request latency", checks={
    "prompt_tokens": _whole(1), "output_tokens": _whole(1), "cached_tokens": _whole(0)},
    parameters=_CACHED_PARAMETER, phase="step")
def request_latency(model, gpu, prompt_tokens, output_tokens, batch_size=1, tp=1, *,
        cached_tokens=0, engine=None):
    """End-to-end time of one request: prefill, then ``output_tokens − 1`` decode steps [s].

    Parameters
    ----------
    output_tokens : int, array_like or xarray.DataArray
        Tokens generated, the first by prefill [tokens], ≥ 1.
    batch_size : int, array_like or xarray.DataArray
        Sequences decoding with it, in lock-step at the same context [1], ≥ 1.

    Returns
    -------
    float, ndarray or xarray.DataArray
        Seconds: ``time_to_first_token(N, cached_tokens=C) + generation_time(output − 1,
        context N)``. No queueing.

    See Also
    --------
    time_to_first_token, prefill_time, generation_time

    Notes
    -----
    ``E2E = T_prefill(N) + Σ_{j=0}^{n−2} T(B, N + j) + frontend_latency`` for
    ``n = output_tokens``: the prefill pass gives the first token (TTFT without queueing) and
    each later token one decode step of the batch (the ITL) at a context one longer than the
    last; the engine's front end adds its latency once (0 on the ideal engine).

    References
    ----------
    .. [1] Guide §3.3 (TTFT then ITL per token).
    """
    first = step_time(model, gpu, _prompt_step(model, prompt_tokens, 0.0, cached_tokens))
    return (first + _generation(model, gpu, batch_size, output_tokens - 1.0, prompt_tokens)
            + gpu.frontend_latency)


@step_formula("USD/1M tokens", "GPU cost per million generated tokens",
              checks={"hourly_price": _price})
def cost_per_million_tokens(model, gpu, batch_size=1, context_length=0, tp=1, *, hourly_price=None,
        engine=None):
    """GPU cost of a million generated tokens at full decode throughput [USD per 1M tokens].

    Parameters
    ----------
    hourly_price : float, array_like or xarray.DataArray, optional
        Price of one GPU-hour [USD/h], ≥ 0; default the GPU's catalogue ``hourly_price``.

    Returns
    -------
    float, ndarray or xarray.DataArray
        ``tp × hourly_price / 3600 / decode_throughput × 1e6`` [USD/1M tokens]: GPU time only,
        fully utilised (no idle time, engineering or prefill; see :mod:`rooflinekit.pricing`).

    Raises
    ------
    ValueError
        If no price is given and the GPU has none.

    See Also
    --------
    decode_throughput, decode_throughput_per_gpu

    Notes
    -----
    ``c = tp · p / 3600 / X(B, C) · 10⁶`` with ``p`` the price of a GPU-hour and ``X`` the
    group's decode throughput: the group's cost per second over its tokens per second. At
    2 USD/h the guide's 70B model on one lab GPU at batch 64 costs 0.363 USD per 1M tokens.

    References
    ----------
    .. [1] Guide §4.1 (per-token cost), §6.5.
    """
    if hourly_price is None:
        hourly_price = gpu.hourly_price / gpu.n_gpus
        if np.isnan(hourly_price).any():
            raise ValueError("gpu has no hourly_price; pass hourly_price=<USD per GPU-hour>")
    rate = batch_size / step_time(model, gpu, decode_step(model, batch_size, context_length))
    return gpu.tp * hourly_price / SECONDS_PER_HOUR / rate * PER_MILLION
