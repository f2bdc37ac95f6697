"""What prefix caching and speculative decoding do to what a request and a token cost (§6).

A request's pay-as-you-go bill with prompt-cache hits, its GPU cost on your own GPUs where a hit
skips prefill compute, and a million output tokens' GPU cost with speculation. ``prefix_share``
is the share of each prompt found in the cache, as the sweep's dimension of that name.
"""

from __future__ import annotations

import numpy as np

from rooflinekit import catalog, memory, roofline
from rooflinekit._labels import align_inputs, finish, spec_value, where
from rooflinekit._validation import (
    check_fraction,
    check_integer,
    check_nonnegative,
    check_range,
    check_type,
)
from rooflinekit.models import ModelShape
from rooflinekit.pricing._inputs import (
    USD_PER_MTOK,
    check_engine,
    check_hits,
    prepare,
    price_per_gpu_hour,
    widened,
)
from rooflinekit.pricing.capacity import PayAsYouGo
from rooflinekit.units import PER_MILLION, SECONDS_PER_HOUR

__all__ = ["cost_per_request", "payg_cost_per_request", "speculative_cost_per_million_tokens"]

#: Units of a request's cost.
USD_PER_REQUEST = "USD/request"


def _usd_per_second(gpu, tp, hourly_price):
    """What the group of ``tp`` GPUs costs per second [USD/s]."""
    return tp * spec_value(gpu, "n_gpus") * hourly_price / SECONDS_PER_HOUR


@widened
def payg_cost_per_request(payg, prompt_tokens, output_tokens, *, prefix_share=0.0):
    """Pay-as-you-go bill of one request whose prompt partly hits the prompt cache [USD].

    Parameters
    ----------
    payg : PayAsYouGo
        The price list; it needs ``cached_input_per_mtok`` when any ``prefix_share`` > 0.
    prompt_tokens : float or array_like
        Prompt tokens of the request, P [tokens], ≥ 0.
    output_tokens : float or array_like
        Tokens it generates, O [tokens], ≥ 0.
    prefix_share : float or array_like
        Share of the prompt found in the provider's cache, h [1], in [0, 1]; default 0.

    Returns
    -------
    float, ndarray or xarray.DataArray
        ``(P(1 − h)·c_in + P·h·c_cached + O·c_out) / 1e6`` [USD/request].

    See Also
    --------
    cost_per_request, rooflinekit.pricing.blended_price, rooflinekit.pricing.break_even

    Notes
    -----
    The base tier's prices; a provider's long-context tier and its cache-write surcharge
    (some bill writing a prefix into the cache above the input price) are not applied.

    References
    ----------
    .. [1] Serving-capacity guide §6.1, §6.3 (per-token billing).
    .. [2] OpenAI, "Prompt caching" (cached input tokens at a discount); Anthropic, "Prompt
       caching" (cache reads at a tenth of the input price).
    """
    check_type("payg", payg, PayAsYouGo)
    check_nonnegative("prompt_tokens", prompt_tokens)
    check_nonnegative("output_tokens", output_tokens)
    check_hits(payg, prefix_share)
    a, (payg,) = prepare({"prompt_tokens": prompt_tokens, "output_tokens": output_tokens,
                          "prefix_share": prefix_share}, payg)
    p, o, h = a["prompt_tokens"], a["output_tokens"], a["prefix_share"]
    c_in = payg.input_per_mtok
    c_cached = c_in if payg.cached_input_per_mtok is None else payg.cached_input_per_mtok
    usd = (p * (1 - h) * c_in + p * h * c_cached + o * payg.output_per_mtok) / PER_MILLION
    return finish(usd, USD_PER_REQUEST, "pay-as-you-go cost per request")


@widened
def cost_per_request(model, gpu, prompt_tokens, output_tokens, batch_size=1, tp=1, *,
                     prefix_share=0.0, hourly_price=None, engine=None):
    """GPU cost of one request on your own GPUs, a prefix-cache hit skipping its compute [USD].

    Parameters
    ----------
    model : ModelShape or xarray.Dataset
        The served model.
    gpu : GPU or xarray.Dataset
        One accelerator of the group.
    prompt_tokens : int or array_like
        Prompt tokens, P [tokens], whole, ≥ 1.
    output_tokens : int or array_like
        Tokens generated, the first by prefill, O [tokens], whole, ≥ 1.
    batch_size : int or array_like
        Sequences that share each decode step with it, B [1], ≥ 1.
    tp : int or array_like
        Tensor-parallel degree [1], ≥ 1.
    prefix_share : float or array_like
        Share of the prompt found in the prefix cache, h [1], in [0, 1]; ``⌊h·P⌋`` tokens are
        read rather than computed. Default 0.
    hourly_price : float or array_like, optional
        Price of one GPU-hour [USD/h], ≥ 0; default the GPU's catalogue price.
    engine : Engine or Calibration, optional
        How the serving engine runs a step (a calibration's per phase); default
        :data:`rooflinekit.IDEAL`.

    Returns
    -------
    float, ndarray or xarray.DataArray
        ``tp·n_gpus·price/3600 × (t_prefill(P, ⌊h·P⌋) + t_generation(O − 1, P, B) / B)``
        [USD/request].

    Raises
    ------
    ValueError
        An argument out of range, or no price known.

    See Also
    --------
    payg_cost_per_request, rooflinekit.roofline.prefill_time,
    rooflinekit.roofline.generation_time, speculative_cost_per_million_tokens

    Notes
    -----
    The prefill runs alone on the group; a request pays ``1/B`` of each shared decode step. GPU
    time only, fully utilised (no idle time, queueing or engineering). A hit saves prefill
    compute only; the decode steps read the whole context.

    References
    ----------
    .. [1] Serving-capacity guide §3.3 (TTFT then ITL), §6.5 (self-hosted cost).
    .. [2] Kwon et al., PagedAttention, SOSP 2023 (prefix sharing).
    """
    check_integer("prompt_tokens", prompt_tokens, lo=1)
    check_integer("output_tokens", output_tokens, lo=1)
    check_fraction("prefix_share", prefix_share)
    price = price_per_gpu_hour(gpu, hourly_price)
    check_engine(engine)
    a = align_inputs({"prompt_tokens": prompt_tokens, "output_tokens": output_tokens,
                      "prefix_share": prefix_share})
    prompt_tokens, output_tokens = a["prompt_tokens"], a["output_tokens"]
    cached = np.floor(a["prefix_share"] * prompt_tokens)
    first = roofline.prefill_time(model, gpu, prompt_tokens, tp, cached_tokens=cached,
                                  engine=engine)
    rest = roofline.generation_time(model, gpu, output_tokens - 1, prompt_tokens, batch_size, tp,
                                    engine=engine)
    usd = _usd_per_second(gpu, tp, price) * (first + rest / batch_size)
    return finish(usd, USD_PER_REQUEST, "GPU cost per request")


@widened
def speculative_cost_per_million_tokens(model, gpu, batch_size=1, context_length=0, tp=1, *,
                                        draft, draft_tokens=4, acceptance, hourly_price=None,
                                        reserve=memory.DEFAULT_RESERVE, engine=None):
    """GPU cost of a million output tokens decoded with speculation [USD per 1M tokens].

    Parameters
    ----------
    model, gpu, batch_size, context_length, tp
        As for :func:`rooflinekit.roofline.cost_per_million_tokens` (the target).
    draft : ModelShape, str or float
        The draft model (a spec or catalogue name, on the same GPUs), whose weights come off
        the KV budget, or one draft step's cost as a share of the target's decode step in
        (0, 1] (a draft head, whose weights are not counted).
    draft_tokens : int or array_like
        Tokens drafted per step, k [tokens], whole, ≥ 0.
    acceptance : float or array_like
        Probability α that the target accepts a drafted token [1], in [0, 1].
    hourly_price : float or array_like, optional
        Price of one GPU-hour [USD/h], ≥ 0; default the GPU's catalogue price.
    reserve : float
        Working-space share of the memory left after the weights, in [0, 1). Default 0.10.
    engine : Engine or Calibration, optional
        How the serving engine runs the target's and the draft's decode steps; default
        :data:`rooflinekit.IDEAL`.

    Returns
    -------
    float, ndarray or xarray.DataArray
        ``tp·n_gpus·price/3600 × t_speculative / (B · E(α, k)) × 1e6`` [USD/1M tokens]; ``inf``
        where ``B`` sequences of ``context_length`` do not fit beside the target's and the
        draft's weights.

    See Also
    --------
    rooflinekit.roofline.cost_per_million_tokens, rooflinekit.roofline.speculative_speedup,
    rooflinekit.memory.max_concurrent_sequences, cost_per_request

    Notes
    -----
    :func:`rooflinekit.roofline.cost_per_million_tokens` divided by the speed-up: lower where
    speculation pays (small batches, memory-bound decode), higher where decode is
    compute-bound. ``k = 0`` decodes without speculation, the draft's weights still held. GPU
    time only, fully utilised.

    References
    ----------
    .. [1] Leviathan, Kalman & Matias, "Fast Inference from Transformers via Speculative
       Decoding", ICML 2023.
    .. [2] Serving-capacity guide §4.1 (per-token cost), §6.5.
    """
    check_fraction("acceptance", acceptance)
    check_integer("draft_tokens", draft_tokens, lo=0)
    check_range("reserve", reserve, lo=0, hi=1, hi_open=True)
    price = price_per_gpu_hour(gpu, hourly_price)
    check_engine(engine)
    drafter = catalog.model(draft) if isinstance(draft, str) else draft
    step = roofline.speculative_step_time(model, gpu, batch_size, context_length, tp,
                                          draft=drafter, draft_tokens=draft_tokens,
                                          engine=engine)
    gained = roofline.speculative_tokens_per_step(acceptance, draft_tokens)
    held = memory.weight_bytes(drafter) if isinstance(drafter, ModelShape) else 0.0
    fit = memory.max_concurrent_sequences(model, gpu, np.maximum(context_length, 1), tp,
                                          reserve, draft_weight_bytes=held) >= batch_size
    usd = _usd_per_second(gpu, tp, price) * step / (batch_size * gained) * PER_MILLION
    return finish(where(fit, usd, np.inf), USD_PER_MTOK,
                  "GPU cost per million output tokens with speculative decoding")
