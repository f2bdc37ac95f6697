"""From traffic and an SLO to a fleet: :func:`plan` over a grid of serving configurations.

Per configuration, :func:`~rooflinekit.planning.capacity.max_rate` finds the rate one replica
sustains within the SLO; the fleet is the replicas the peak rate needs with headroom, its cost a
month's GPU-hours (plus engineering and power), its latencies measured at the operating rate.
"""

from __future__ import annotations

import functools
import itertools
import math
import numbers
import warnings

import numpy as np
import xarray as xr

from rooflinekit import catalog, dims, parallel, roofline
from rooflinekit._validation import (
    MAX_COUNT,
    as_1d,
    check_bool,
    check_mapping,
    check_type,
    describe,
    real_number,
    show,
    whole_number,
)
from rooflinekit.batching import (MAX_RECV_INTERVAL, MAX_SCHEDULER_STEPS, MAX_STREAM_INTERVAL,
                                  ContinuousBatcher,
                                  Speculative, kv_window_text, replica_kv_budget, run_replicates,
                                  vllm_block_size)
from rooflinekit.hardware import GPU
from rooflinekit.models import ModelShape
from rooflinekit.planning.capacity import (
    draw_requests,
    max_rate,
    prefixes,
    rate_variables,
    speculative_rows,
)
from rooflinekit.planning.traffic import SLO, Traffic
from rooflinekit.profiles import (Calibration, default_share,
                                  chunk_budget_candidates, memory_engine, memory_outside_kv,
                                  memory_rule, missing_attention_kernel, older_than_scheduler,
                                  resolve_engine, scheduler_admission, scheduler_defaults,
                                  scheduler_engine)
from rooflinekit.roofline import (
    DEFAULT_IDLE_POWER_FRACTION,
    IDEAL,
    decode_step_time,
    energy_per_token,
    layout_decode_step_time,
)
from rooflinekit.units import HOURS_PER_MONTH, PER_MILLION, SECONDS_PER_HOUR
from rooflinekit.workloads import MAX_CONCURRENCY

__all__ = ["plan", "load_curve", "estimate_work", "check_plan_size", "PLAN_WORK_LIMIT", "PLAN_MEMORY_LIMIT", "IDEAL", "LATENCY_PERCENTILES"]

#: Most simulated token-steps (requests × output tokens × runs) :func:`plan` does in one process
#: without ``chunks=``; above it, it refuses with the estimate.
PLAN_WORK_LIMIT = 2e10

#: Joules in a kilowatt-hour.
JOULES_PER_KWH = 1000.0 * SECONDS_PER_HOUR

#: Most bytes a plan's draws and one search step's outputs may hold (every replicate's requests
#: stay in memory for the whole search, ``chunks=`` or not): 2 GiB.
PLAN_MEMORY_LIMIT = 2 * 2**30

#: Bytes per request of one replicate: its draws (arrival, prompt, output) and a run's outputs
#: (admission, first token, finish, preemptions, status).
_BYTES_PER_REQUEST = 3 * 8 + 5 * 8


#: Percentiles of the latencies reported at the operating rate.
LATENCY_PERCENTILES = (50, 95, 99)
_LATENCY_NAMES = {"ttft": "time to first token", "token_itl": "inter-token latency (every gap)",
                  "latency": "end-to-end latency",
                  "tpot": "time per output token (per request, over requests)"}

#: The latency percentiles measured at the operating rate (TPOT's after the others).
_OPERATING = (*(f"p{q}_{what}" for q in LATENCY_PERCENTILES
                for what in ("ttft", "token_itl", "latency")),
              *(f"p{q}_tpot" for q in LATENCY_PERCENTILES))

#: What ``vllm bench serve`` prints beside the percentiles (vllm/benchmarks/serve.py,
#: ``BenchmarkMetrics``), under the simulator's names: mean TTFT, TPOT, every-gap ITL and
#: end-to-end latency [s], requests and output tokens completed per second. Its medians are the
#: ``p50_*`` of :data:`LATENCY_PERCENTILES`.
_BENCH_SERVE = ("mean_ttft", "mean_tpot", "mean_token_itl", "mean_latency",
                "request_throughput", "throughput", "mean_queue_delay")

#: Runs of the search per replicate, for the work estimate: saturation, the two ends, the
#: steps that close a 2 % bracket (about 6), the operating point.
_RUNS_PER_REPLICATE = 13
#: The fixed cost of one configuration's search, in token-steps of the same time: about 3 ms
#: (measured on two cores) at the ~3e8 token-steps a second of :data:`PLAN_WORK_LIMIT`.
_STEPS_PER_CONFIGURATION = 1e6


def _names(name, values, kind, lookup):
    """A list of specs from one spec/name or a sequence of them, each looked up by name."""
    items = [values] if isinstance(values, (str, kind)) else values
    if not isinstance(items, (list, tuple)) or not items:
        raise TypeError(f"{name} must be a {kind.__name__}, a catalogue name, or a non-empty list "
                        f"of them; got {describe(values)}")
    out = []
    for item in items:
        if isinstance(item, str):
            item = lookup(item)
        if not isinstance(item, kind):
            raise TypeError(f"{name} must hold {kind.__name__}s or catalogue names; "
                            f"got {describe(item)}")
        out.append(item)
    labels = [spec.name for spec in out]
    if len(set(labels)) != len(labels):
        raise ValueError(f"{name} must not repeat an entry; got {labels}")
    return out


def _counts(name, values, lo, allow_none=False):
    """A list of whole numbers >= ``lo`` from one number or a sequence (no repeats)."""
    if values is None and allow_none:
        return None
    items = [values] if isinstance(values, numbers.Real) else values
    if not isinstance(items, (list, tuple, np.ndarray)) or len(items) == 0:
        raise TypeError(f"{name} must be a whole number or a non-empty list of them; "
                        f"got {describe(values)}")
    out = [whole_number(name, v, lo=lo) for v in items]
    if len(set(out)) != len(out):
        raise ValueError(f"{name} must not repeat a value; got {show(values)}")
    return out


def _scheduler_counts(name, values, rules):
    """``_counts`` of ``values``, or one of the named ``rules`` (a string or None) as given."""
    if values is None or isinstance(values, str):
        if values not in rules:
            allowed = ", ".join(repr(r) for r in rules)
            raise ValueError(f"{name} must be {allowed}, a whole number >= 1 or a list of them; "
                             f"got {values!r}")
        return values
    return _counts(name, values, 1)


def _quality(engine, **selectors) -> str:
    """The label of ``engine``'s mixed step (``attrs["model_quality"]``), checked now."""
    return roofline.engine_for(engine, "step", **selectors).label


def _hourly_prices(gpus, prices):
    """USD per GPU-hour for every GPU: ``prices`` first, else the catalogue's price."""
    prices = dict(check_mapping("prices", prices, allow_none=True) or {})
    known = {catalog.gpu(name).name if isinstance(name, str) else name: value
             for name, value in prices.items()}
    out = {}
    for gpu in gpus:
        price = known.get(gpu.name, gpu.hourly_price)
        if price is None:
            raise ValueError(f"gpu {gpu.name!r} has no hourly price in the catalogue; pass "
                             f"prices={{'{gpu.name}': usd_per_gpu_hour}}")
        out[gpu.name] = real_number(f"prices[{gpu.name!r}]", price, lo=0)
    return out


def _layout_problem(model, tp, pp=1, ep=1, gpu=None) -> str | None:
    """Why ``model`` cannot take the layout, or ``gpu``'s scale-up domain the ``tp``, else None."""
    if model.n_heads % tp:
        return "invalid_layout"
    if gpu is not None and gpu.scale_up_gpus is not None and tp > gpu.scale_up_gpus:
        return "beyond_scale_up"
    if pp > 1 or ep > 1:
        try:
            parallel.check_layout(model, tp=tp, pp=pp, ep=ep)
        except ValueError:
            return "invalid_layout"
    return None


def estimate_work(traffic, n_configurations, *, replicates, requests) -> float:
    """Simulated token-steps :func:`plan` will run [1]: configurations × (replicates × runs ×
    requests × mean output tokens + a search's fixed cost, :data:`_STEPS_PER_CONFIGURATION`)."""
    mean_output = traffic.workload(requests).mean_output_tokens()
    return float(n_configurations) * (replicates * _RUNS_PER_REPLICATE * requests * mean_output
                                      + _STEPS_PER_CONFIGURATION)


def check_plan_size(traffic, n_configurations, *, replicates, requests, work_limit) -> None:
    """Refuse, before any draw, a plan whose requests would not fit :data:`PLAN_MEMORY_LIMIT` or
    whose simulations (:func:`estimate_work`) exceed ``work_limit`` (``None``: not checked,
    the work goes to dask workers), each with the estimate and the way out."""
    held = float(replicates) * requests * _BYTES_PER_REQUEST
    if held > PLAN_MEMORY_LIMIT:
        raise ValueError(
            f"this plan would hold about {held / 2**30:.3g} GiB of requests in memory "
            f"({replicates} replicates × {requests} requests × {_BYTES_PER_REQUEST} bytes), above "
            f"the {PLAN_MEMORY_LIMIT / 2**30:g} GiB limit; use fewer replicates or requests (the "
            f"percentiles' Monte Carlo error falls as 1/sqrt(replicates × requests))")
    work = estimate_work(traffic, n_configurations, replicates=replicates, requests=requests)
    if work_limit is not None and work > work_limit:
        raise ValueError(
            f"this plan would simulate about {work:.2g} token-steps ({n_configurations} "
            f"configurations × {replicates} replicates × {requests} requests), above "
            f"work_limit={work_limit:.2g} (about a minute on two cores); pass chunks= to spread "
            f"it over dask workers where the planner takes it, use fewer replicates, requests "
            f"or configurations, or raise work_limit")


def plan(traffic: Traffic, slo: SLO, *, models, gpus, tp=1, max_num_seqs="auto",
         max_num_batched_tokens="search", admission="auto", block_size=16,
         gpu_memory_utilization=None, headroom=0.2, spare_replicas=0, min_replicas=1,
         replicates=20, seed=0, engine=None, engine_draws=None, prices=None, engineering_monthly=0.0, electricity_price=0.0,
         prefix_caching=None, speculative=None, pp=None, ep=None,
         pue=1.0, requests=1000, rtol=0.02, chunks=None, work_limit=PLAN_WORK_LIMIT,
         mixed_prefill="auto", recv_interval=1, stream_interval=1) -> xr.Dataset:
    """Capacity under load: max rate per replica within the SLO, the fleet, its monthly cost.

    Parameters
    ----------
    traffic : Traffic
        Peak rate, request lengths, arrivals, monthly profile.
    slo : SLO
        Targets at a quantile.
    models, gpus : spec, catalogue name, or list of them
        The ``model`` and ``gpu`` dimensions; a model may also be a ``config.json`` path, a
        model folder or a cached repo id (:func:`rooflinekit.catalog.resolve_model`).
    tp : int or list of int
        Tensor-parallel degrees [1] (dimension ``tp``); a degree that does not divide the
        model's attention heads gives binding ``"invalid_layout"``.
    pp, ep : int or list of int, optional
        Pipeline- and expert-parallel degrees [1] (dimensions ``pp`` and ``ep``, only when
        given): a replica is ``tp × pp`` GPUs, its stages in sequence with one micro-batch in
        flight (:class:`~rooflinekit.batching.ContinuousBatcher`'s ``pp``/``ep``), its KV budget
        one GPU's (:func:`rooflinekit.parallel.layout_memory`), its ``energy_per_token`` that of
        all ``tp × pp`` GPUs (each idle during the other stages' turns and the sends). A layout
        the model cannot take gives binding ``"invalid_layout"``.
    max_num_seqs : int, list of int or "auto"
        vLLM's ``--max-num-seqs`` [1]; a number or list becomes the dimension. Default
        ``"auto"``: each GPU's default of the engine named by ``engine``, vLLM's otherwise
        (:func:`rooflinekit.profiles.scheduler_defaults`), a variable.
    max_num_batched_tokens : int, list of int, None, "auto" or "search"
        vLLM's ``--max-num-batched-tokens`` [tokens], the per-step token budget of chunked
        prefill; a number or list becomes a dimension; ``None``: whole prompts in one step;
        ``"auto"``: the engine's default for the GPU. Default ``"search"``: each configuration
        screens :func:`rooflinekit.profiles.chunk_budget_candidates` on its first
        :data:`SCREEN_REPLICATES` replicates and keeps the highest median max rate (the
        engine's default unless beaten by more than :data:`SCREEN_RTOL`), which alone is then
        searched on every replicate. A variable.
    admission : {"auto", "paged", "reserve"}
        The batcher's KV admission rule (:class:`~rooflinekit.batching.ContinuousBatcher`).
        Default "auto": the engine's (:func:`~rooflinekit.profiles.scheduler_admission`):
        paged for vLLM and SGLang (and for an ``rk.Engine`` or a calibration), reserve for
        TensorRT-LLM, whose default capacity policy admits a request only when its prompt and
        whole output fit and never preempts; paged wherever ``prefix_caching=True``.
    block_size : int
        Tokens per KV block [tokens].
    gpu_memory_utilization : float, optional
        The share of the memory the driver reports for weights and KV, in (0, 1] (vLLM's
        ``--gpu-memory-utilization``, SGLang's ``--mem-fraction-static``); default the
        engine's own: 0.9, or under ``engine="sglang"`` SGLang's rule for each GPU, layout and
        chunk (:func:`rooflinekit.profiles.memory_share`). The KV budget is that share less the
        weights and, under a vLLM profile (the default, an :class:`rooflinekit.Engine` or a
        calibration) or SGLang's, what the engine keeps beside them at each configuration's
        sequences and token budget (:func:`rooflinekit.engine_memory`); the ideal bound and
        TensorRT-LLM keep the weights' remainder (``attrs["memory_outside_kv"]`` says which;
        :func:`rooflinekit.memory.engine_kv_cache`).
    headroom : float
        Spare capacity [1], >= 0: replicas = ceil(rate · (1 + headroom) / max_rate).
    spare_replicas : int
        Whole replicas kept beside those the rate needs (N + k) [1], >= 0; default 0.
    min_replicas : int
        Fewest replicas a fleet that serves runs [1], >= 1; default 1. The fleet is
        ``max(min_replicas, ceil(rate · (1 + headroom) / max_rate)) + spare_replicas``,
        its latencies measured at the rate each replica carries without the spares.
    replicates : int
        Monte Carlo replicates [1], >= 1.
    seed : int
        Root seed of the replicates' draws (common to every configuration).
    engine : Engine, Calibration or str, optional
        How the replicas' engine runs a step: an :class:`rooflinekit.Engine`, a calibration
        (its mixed-step engine, ``engine_for("step", model=..., gpu=...)``, times every step
        and the energy per token), or a name: ``"vllm"``, ``"sglang"``, ``"trtllm"`` (that
        engine's shipped profile of each GPU), ``"ideal"`` (:data:`rooflinekit.IDEAL`).
        ``attrs["model_quality"]`` is its label. Default ``None``: the vLLM profile of each GPU.
    engine_draws : int, optional
        Draws of the engine's knobs the replicates share [1], in [0, replicates]: replicate
        ``r`` is timed by draw ``r mod engine_draws`` (:meth:`Calibration.draw`), so the bands
        hold the knobs' uncertainty beside the traffic's; 0: the fitted knobs only. Default
        ``None``: ``min(replicates, 4)`` where each GPU's engine is a calibration with
        intervals (the shipped profiles are), else 0.
    prices : mapping, optional
        USD per GPU-hour by GPU name, overriding the catalogue's illustrative prices.
    engineering_monthly : float
        Engineering line per deployment [USD/month], >= 0 (guide §6.5), once per configuration.
    electricity_price : float
        [USD/kWh], >= 0; default 0, as rented GPU-hours include power. Owned GPUs pay it on
        the month's generated tokens × :func:`rooflinekit.roofline.energy_per_token` at the
        operating point × ``pue``; needs every GPU's ``board_power`` when > 0.
    pue : float
        Power usage effectiveness of the data centre [1], >= 1.
    prefix_caching : bool, optional
        Replicas keep the traffic's shared prefixes in the KV cache and skip their prefill
        (vLLM's ``--enable-prefix-caching``; paged admission). Default ``None``: on where the
        traffic has shared prefixes and admission is paged, as the engines run by default.
    speculative : Speculative, optional
        Replicas decode speculatively (:class:`~rooflinekit.batching.Speculative`): a draft
        model's weights come off each replica's KV budget and its KV cache shares the rest;
        replicate ``r`` draws its acceptance from ``row_seed(r)`` at every rate. Default none.
    requests : int
        Requests per replicate [1], >= 10.
    rtol : float
        Relative tolerance of the rate search [1], in (0, 0.5].
    chunks : int, optional
        Configurations per dask task (dask is imported only then); results are identical.
    work_limit : float
        Most simulated token-steps in one process without ``chunks`` (:func:`estimate_work`);
        default :data:`PLAN_WORK_LIMIT`. The draws may hold at most :data:`PLAN_MEMORY_LIMIT`.
    mixed_prefill : bool or "auto"
        Whether a step carries prefill slices beside the decodes (vLLM V1) or prefill steps run
        apart from them (False: SGLang's default, vLLM V0) (:class:`~rooflinekit.batching.
        ContinuousBatcher`). Default ``"auto"``: the rule of the engine named by ``engine``
        (:func:`rooflinekit.profiles.scheduler_defaults`). Speculative decoding is simulated
        mixed.
    recv_interval : int
        SGLang's ``--scheduler-recv-interval`` [steps], in [1,
        :data:`~rooflinekit.batching.MAX_RECV_INTERVAL`]: new requests are taken in only once
        that many decode steps (or one prefill step) have passed
        (:class:`~rooflinekit.batching.ContinuousBatcher`), and the SGLang launch command
        carries it. Default 1: every step, every engine's default.
    stream_interval : int
        vLLM's and SGLang's ``--stream-interval`` [tokens], in [1,
        :data:`~rooflinekit.batching.MAX_STREAM_INTERVAL`]: each request's first token is sent
        at once, then every ``stream_interval`` tokens, and its last at its end, so the ``itl``
        target holds the gaps between sends, as a client times them; both launch commands
        carry it. Default 1: every token as it is made. Not with ``speculative``.

    Returns
    -------
    xarray.Dataset
        Over ``model``, ``gpu``, ``tp`` [, ``max_num_seqs``, ``max_num_batched_tokens``, ``pp``,
        ``ep`` where given as numbers]: ``max_num_seqs`` and ``max_num_batched_tokens`` where
        not dimensions (0: whole prompts); ``max_rate``, ``max_rate_low``, ``max_rate_high``
        (median, 10th and 90th percentile over replicates) and ``saturation_rate`` [requests/s
        per replica]; ``binding`` (ttft, itl, e2e, tpot, attainment, memory, max_num_seqs,
        does_not_fit, invalid_layout, beyond_scale_up: a tensor-parallel group larger than the
        GPU's NVLink domain, whose all-reduces would cross the network; no_attention_kernel:
        the plan's engine has no attention kernel for the model on that GPU and would not
        start, :func:`~rooflinekit.profiles.missing_attention_kernel`, such as DeepSeek-V3.2
        under vLLM on an A100); ``kv_budget_tokens``;
        ``replicas`` and ``gpus`` [1] (with ``_low``/``_high``); ``operating_rate``
        [requests/s per replica]; ``gpu_monthly_cost``, ``monthly_cost`` (with ``_low``/``_high``)
        [USD/month]; ``cost_per_million_tokens`` [USD/1M tokens]; latency percentiles at the
        operating rate (``p95_ttft``, ``p95_token_itl``, ``p95_latency``, ``p95_tpot``, ... [s],
        medians over replicates); ``replicate_max_rate``. A configuration that cannot serve has
        rate 0, replicas and GPUs 0, and infinite cost and latency: never NaN.

    Raises
    ------
    ValueError, TypeError
        Naming the argument, before any simulation; a grid above ``work_limit`` is refused with
        its estimate and the ways out.

    Notes
    -----
    The search and its tolerance: :func:`rooflinekit.planning.capacity.max_rate`. Monthly cost =
    ``gpus × price × 730 h + engineering_monthly + power``; monthly tokens = the traffic's monthly
    requests × the mean prompt + output tokens of the draws.

    References
    ----------
    .. [1] Kwon et al., PagedAttention (vLLM), SOSP 2023: the scheduler simulated.
    .. [2] Law and Kelton, *Simulation Modeling and Analysis*: common random numbers.
    """
    if not isinstance(traffic, Traffic):
        raise TypeError(f"traffic must be a rooflinekit.Traffic; got {describe(traffic)}")
    if not isinstance(slo, SLO):
        raise TypeError(f"slo must be a rooflinekit.SLO; got {describe(slo)}")
    model_list = _names("models", models, ModelShape, catalog.resolve_model)
    gpu_list = _names("gpus", gpus, GPU, catalog.gpu)
    tp_list = _counts("tp", tp, 1)
    pp_list = _counts("pp", pp, 1, allow_none=True)
    ep_list = _counts("ep", ep, 1, allow_none=True)
    seqs_list = _scheduler_counts("max_num_seqs", max_num_seqs, ("auto",))
    mnbt_list = _scheduler_counts("max_num_batched_tokens", max_num_batched_tokens,
                                  ("auto", "search", None))
    scheduler = scheduler_engine(engine)
    defaults = {g.name: scheduler_defaults(scheduler, g) for g in gpu_list}
    if seqs_list == "auto" or not isinstance(mnbt_list, list):
        _warn_older_scheduler(engine, gpu_list[0])
    if not (isinstance(mixed_prefill, str) and mixed_prefill == "auto"):
        mixed_prefill = check_bool("mixed_prefill", mixed_prefill)
        if not mixed_prefill and speculative is not None:
            raise ValueError("mixed_prefill=False cannot go with speculative: speculative "
                             "steps are simulated with the prefill beside the decodes")
        defaults = {k: d._replace(mixed_prefill=mixed_prefill) for k, d in defaults.items()}
    recv_interval = whole_number("recv_interval", recv_interval, lo=1, hi=MAX_RECV_INTERVAL)
    defaults = {k: d._replace(recv_interval=recv_interval) for k, d in defaults.items()}
    stream_interval = whole_number("stream_interval", stream_interval, lo=1,
                                   hi=MAX_STREAM_INTERVAL)
    if stream_interval > 1 and speculative is not None:
        raise ValueError(f"stream_interval={stream_interval} with speculative decoding is not "
                         f"modelled: give stream_interval=1 with speculative")
    most_seqs = max(seqs_list) if isinstance(seqs_list, list) else \
        max(d.max_num_seqs for d in defaults.values())
    if isinstance(mnbt_list, list) and min(mnbt_list) < most_seqs:
        raise ValueError(f"max_num_batched_tokens must be >= max_num_seqs ({most_seqs}"
                         f"{'' if isinstance(seqs_list, list) else ', the engine default'}); "
                         f"got {show(max_num_batched_tokens)}")
    admission = scheduler_admission(admission, engine, gpu_list[0], prefix_caching)
    block_size = whole_number("block_size", block_size, lo=1)
    gpu_memory_utilization = real_number("gpu_memory_utilization", gpu_memory_utilization, lo=0,
                                         hi=1, lo_open=True, allow_none=True)
    headroom = real_number("headroom", headroom, lo=0)
    spare_replicas = whole_number("spare_replicas", spare_replicas, lo=0)
    min_replicas = whole_number("min_replicas", min_replicas, lo=1)
    replicates = whole_number("replicates", replicates, lo=1)
    seed = whole_number("seed", seed, lo=0)
    requests = whole_number("requests", requests, lo=10)
    rtol = real_number("rtol", rtol, lo=0, hi=0.5, lo_open=True)
    chunks = whole_number("chunks", chunks, lo=1, allow_none=True)
    work_limit = real_number("work_limit", work_limit, lo=0, lo_open=True, allow_inf=True)
    engineering_monthly = real_number("engineering_monthly", engineering_monthly, lo=0)
    electricity_price = real_number("electricity_price", electricity_price, lo=0)
    if prefix_caching is None:   # the engines' default: on, where there is something to cache
        prefix_caching = traffic.prefix is not None and admission == "paged"
    prefix_caching = check_bool("prefix_caching", prefix_caching)
    if prefix_caching and admission != "paged":
        raise ValueError("prefix_caching needs admission='paged' (prefixes are shared in KV "
                         "blocks)")
    pue = real_number("pue", pue, lo=1)
    if speculative is not None:
        if not isinstance(speculative, Speculative):
            raise TypeError(f"speculative must be a rooflinekit.batching.Speculative or None; "
                            f"got {describe(speculative)}")
        for model in model_list:     # the draft suits every target (vocabulary, layers)
            ContinuousBatcher(model=model, gpu=gpu_list[0], clock="roofline",
                              speculative=speculative)
    drawn = _engine_draws(engine, gpu_list, engine_draws, replicates, seed)
    held_by = memory_engine(engine)
    engine = resolve_engine(engine, gpu_list)
    label = _quality(engine)
    hourly = _hourly_prices(gpu_list, prices)
    if electricity_price > 0:
        unknown = [g.name for g in gpu_list if g.board_power is None]
        if unknown:
            raise ValueError(f"electricity_price needs each GPU's board_power; unknown for "
                             f"{', '.join(unknown)}")

    axes = {dims.MODEL: model_list, dims.GPU: gpu_list, dims.TP: tp_list}
    if isinstance(seqs_list, list):
        axes[dims.MAX_NUM_SEQS] = seqs_list
    if isinstance(mnbt_list, list):
        axes[dims.MAX_NUM_BATCHED_TOKENS] = mnbt_list
    if pp_list is not None:
        axes[dims.PP] = pp_list
    if ep_list is not None:
        axes[dims.EP] = ep_list
    shape = tuple(len(v) for v in axes.values())
    n_config = math.prod(shape)
    check_plan_size(traffic, n_config, replicates=replicates, requests=requests,
                    work_limit=None if chunks is not None else work_limit)

    draws = draw_requests(traffic, replicates, requests, seed)
    configs = list(itertools.product(*(range(n) for n in shape)))
    run = _Configuration(axes, draws, traffic, slo, headroom, admission, block_size,
                         gpu_memory_utilization, engine, rtol, prefix_caching, speculative,
                         drawn, defaults, mnbt_list, held_by, stream_interval)
    if chunks is None:
        results = _on_all_cores(run, configs)
    else:
        import dask
        blocks = [configs[k:k + chunks] for k in range(0, len(configs), chunks)]
        tasks = [dask.delayed(lambda block: [run(i, parallel=False) for i in block])(b)
                 for b in blocks]
        results = [r for block in dask.compute(*tasks) for r in block]
    ds = _assemble(results, configs, axes, shape, replicates)
    for name, long_name in ((dims.MAX_NUM_SEQS, "most sequences in a step the configuration ran "
                                                "with (vLLM's --max-num-seqs)"),
                            (dims.MAX_NUM_BATCHED_TOKENS, "per-step token budget the "
                             "configuration ran with (vLLM's --max-num-batched-tokens; 0: whole "
                             "prompts)")):
        if name not in axes:
            values = np.zeros(shape, dtype=np.int64)
            for index, r in zip(configs, results):
                values[index] = r[name]
            ds[name] = (list(axes), values, {"units": "1" if name == dims.MAX_NUM_SEQS
                                             else "tokens", "long_name": long_name})
    _price(ds, traffic, headroom, hourly, engineering_monthly, electricity_price, pue,
           spare_replicas, min_replicas)
    ds.attrs.update({
        "description": "capacity under load: max request rate per replica within the SLO, the "
                       "fleet for the traffic's peak rate with headroom, and its monthly cost",
        "model_quality": label,
        "rate": float(traffic.rate), "headroom": headroom, "quantile": float(slo.quantile),
        "spare_replicas": spare_replicas, "min_replicas": min_replicas,
        **{f"{k}_target": v for k, v in slo.targets.items()},
        "attainment_target": "none" if slo.attainment is None else float(slo.attainment),
        "replicates": replicates, "requests": requests, "seed": seed, "rtol": rtol,
        "admission": admission, "block_size": block_size,
        "scheduler": f"{scheduler} defaults ({next(iter(defaults.values())).version})",
        # the engine's scheduling (speculative decoding is simulated mixed): 0, prefill apart
        "mixed_prefill": int(speculative is not None
                             or all(d.mixed_prefill for d in defaults.values())),
        "recv_interval": recv_interval,
        "stream_interval": stream_interval,
        "max_num_batched_tokens_rule": ("given" if isinstance(mnbt_list, list) else
                                        "whole prompts" if mnbt_list is None else mnbt_list),
        "prefix_caching": int(prefix_caching),
        **({} if speculative is None else _speculative_attrs(speculative)),
        "gpu_memory_utilization": _share_attr(held_by, gpu_memory_utilization),
        "memory_outside_kv": memory_outside_kv(held_by, model_list),
        **_window_attrs(model_list, admission, held_by, block_size),
        "simulations": int(sum(r["runs"] for r in results)),
        "engine_draws": 0 if drawn is None else len(next(iter(drawn.values()))),
    })
    return ds


def _window_attrs(models, admission, held_by, block_size) -> dict:
    """A plan's ``sliding_window_kv`` attribute: how its replicas hold each model's sliding-
    window layers (:func:`rooflinekit.batching.clock.kv_window_text`); none without them."""
    texts = []
    for model in models:
        if model.sliding_window is None or not model.n_sliding_layers:
            continue
        if admission != "paged":
            text = "every layer holds a request's whole context"
        else:
            text = kv_window_text(model, block_size,
                                  pool="sglang" if held_by == "sglang" else "vllm")
        texts.append(f"{model.name}: {text}")
    return {"sliding_window_kv": "; ".join(texts)} if texts else {}


def _share_attr(held_by, gpu_memory_utilization):
    """A plan's ``gpu_memory_utilization`` attribute: the share given or taken for every
    configuration, or the rule SGLang's varies by."""
    if gpu_memory_utilization is None and held_by == "sglang":
        return "SGLang's default --mem-fraction-static (by GPU, layout and chunk: memory_share)"
    if gpu_memory_utilization is None:
        # vLLM's (0.92 from 0.20.0) and TensorRT-LLM's defaults do not vary by GPU
        return default_share(held_by)
    return float(gpu_memory_utilization)


#: Replicates a chunk-budget search screens each budget on, and its tolerance [1].
SCREEN_REPLICATES = 4
SCREEN_RTOL = 0.05


def _on_all_cores(run, configs) -> list:
    """``run(index, parallel=...)`` of every configuration, in order: with at least as many
    configurations as numba threads, one configuration per thread (the kernels release the
    GIL), else one at a time, its replicates in parallel; the results are identical."""
    import numba                                  # numba: loaded on the first plan
    threads = numba.get_num_threads()
    if len(configs) < threads or threads == 1:
        return [run(index, parallel=True) for index in configs]
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(functools.partial(run, parallel=False), configs))


class _Configuration:
    """One configuration's search, fleet and operating point (a picklable callable for dask)."""

    def __init__(self, axes, draws, traffic, slo, headroom, admission, block_size,
                 gpu_memory_utilization, engine, rtol, prefix_caching=False,
                 speculative=None, drawn=None, defaults=None, chunking=None, held_by=None,
                 stream_interval=1):
        self.axes, self.draws, self.traffic, self.slo = axes, draws, traffic, slo
        self.headroom, self.admission, self.block_size = headroom, admission, block_size
        self.utilization, self.engine, self.rtol = gpu_memory_utilization, engine, rtol
        self.prefix_caching, self.speculative = prefix_caching, speculative
        self.drawn = drawn
        # each GPU's scheduler defaults, and the chunk-budget rule where it is not a dimension
        self.defaults, self.chunking = defaults, chunking
        self.held_by = held_by        # the engine whose memory outside the KV cache is held
        self.stream_interval = stream_interval
        # the acceptance draws of every configuration's search, drawn once as the requests are
        self.gains = None if speculative is None else speculative_rows(speculative, draws)

    def _budgets(self, values) -> list:
        """The configuration's chunk budgets to try: its own, or the rule's (None: whole)."""
        if dims.MAX_NUM_BATCHED_TOKENS in values:
            return [values[dims.MAX_NUM_BATCHED_TOKENS]]
        default = self.defaults[values[dims.GPU].name].max_num_batched_tokens
        if self.chunking == "search":
            return list(chunk_budget_candidates(default, values[dims.MAX_NUM_SEQS]))
        if self.chunking == "auto":
            return [max(default, values[dims.MAX_NUM_SEQS])]
        return [None]

    def __call__(self, index, parallel):
        values = dict(zip(self.axes, (axis[i] for axis, i in zip(self.axes.values(), index))))
        if dims.MAX_NUM_SEQS not in values:
            values[dims.MAX_NUM_SEQS] = self.defaults[values[dims.GPU].name].max_num_seqs
        n = self.draws[0].shape[0]
        budgets = self._budgets(values)
        default = self.defaults[values[dims.GPU].name].max_num_batched_tokens
        runs = 0
        if len(budgets) > 1:
            chunk, runs = self._screen(values, budgets, default, parallel)
        else:
            chunk = budgets[0]
        values[dims.MAX_NUM_BATCHED_TOKENS] = chunk
        batcher, budget, problem = self._replica(values, self.engine)
        if problem:
            return {"max_rate": np.zeros(n), "saturation_rate": np.zeros(n), "runs": 0,
                    "kv_budget_tokens": budget, "latencies": {}, "energy_per_token": 0.0,
                    "binding": np.full(n, problem, dtype=object),
                    dims.MAX_NUM_SEQS: values[dims.MAX_NUM_SEQS],
                    dims.MAX_NUM_BATCHED_TOKENS: chunk or 0}
        if self.drawn is None:
            found = max_rate(batcher, self.slo, self.draws, rtol=self.rtol, parallel=parallel,
                             gains=self.gains)
        else:
            found = self._search_drawn(values, parallel)
        found["runs"] += runs
        found[dims.MAX_NUM_SEQS] = values[dims.MAX_NUM_SEQS]
        found[dims.MAX_NUM_BATCHED_TOKENS] = chunk or 0
        found["kv_budget_tokens"] = budget
        rate = float(np.median(found["max_rate"]))
        found["latencies"], found["energy_per_token"] = {}, 0.0
        if rate > 0:
            replicas = math.ceil(float(self.traffic.rate) * (1 + self.headroom) / rate)
            found["latencies"], batch = _operating_point(
                batcher, self.draws, float(self.traffic.rate) / replicas, parallel, self.gains)
            found["runs"] += n
            gpu = values[dims.GPU]
            pp, ep = values.get(dims.PP, 1), values.get(dims.EP, 1)
            if gpu.board_power is not None:
                # the decode step of the operating point's mean batch, half-way through outputs
                prompt, output = self.draws[1], self.draws[2]
                context = float(prompt.mean() + output.mean() / 2)
                # the engine that timed the search's steps (a calibration's mixed step)
                model = values[dims.MODEL]
                step = roofline.engine_for(self.engine, "step", model=model, gpu=gpu)
                if pp == 1 and ep == 1:
                    found["energy_per_token"] = float(energy_per_token(
                        model, gpu, max(batch, 1.0), context, values[dims.TP], engine=step))
                else:
                    found["energy_per_token"] = _layout_energy_per_token(
                        model, gpu, max(batch, 1.0), context, tp=values[dims.TP], pp=pp,
                        ep=ep, engine=step)
        return found

    def _screen(self, values, budgets, default, parallel) -> tuple:
        """The chunk budget a configuration runs with (the rule of :func:`plan`'s
        ``max_num_batched_tokens="search"``), and the screening's simulations."""
        rows = slice(0, min(SCREEN_REPLICATES, self.draws[0].shape[0]))
        draws = tuple(a[rows] for a in self.draws)
        gains = None if self.gains is None else (self.gains[0][rows], self.gains[1][rows])
        rates, runs = {}, 0
        for chunk in budgets:
            values[dims.MAX_NUM_BATCHED_TOKENS] = chunk
            batcher, _, problem = self._replica(values, self.engine)
            if problem:        # the layout or memory, whatever the budget: say the default
                return (default if default in budgets else chunk), runs
            tried = max_rate(batcher, self.slo, draws, rtol=max(self.rtol, SCREEN_RTOL),
                             parallel=parallel, gains=gains)
            rates[chunk], runs = float(np.median(tried["max_rate"])), runs + tried["runs"]
        best = max(rates, key=rates.get)
        keep = default in rates and rates[best] <= rates[default] * (1 + SCREEN_RTOL)
        return (default if keep else best), runs

    def _replica(self, values, engine):
        """:func:`_replica` of the configuration ``values``, timed by ``engine``."""
        gpu, tp, pp = values[dims.GPU], values[dims.TP], values.get(dims.PP, 1)
        chunk = values.get(dims.MAX_NUM_BATCHED_TOKENS) or None
        share, held = memory_rule(self.held_by, values[dims.MODEL], gpu, tp, pp=pp,
                                  gpu_memory_utilization=self.utilization,
                                  max_num_seqs=values[dims.MAX_NUM_SEQS],
                                  max_num_batched_tokens=chunk)
        return _replica(
            values[dims.MODEL], gpu, tp, values[dims.MAX_NUM_SEQS],
            values.get(dims.MAX_NUM_BATCHED_TOKENS), self.admission, self.block_size,
            share, engine, self.prefix_caching, self.speculative,
            pp, values.get(dims.EP, 1), self.defaults[gpu.name].mixed_prefill, held,
            self.held_by, self.defaults[gpu.name].recv_interval, self.stream_interval)

    def _search_drawn(self, values, parallel) -> dict:
        """:func:`max_rate` with replicate ``r`` timed by engine draw ``r mod k``."""
        engines = self.drawn[values[dims.GPU].name]
        n = self.draws[0].shape[0]
        found = {"max_rate": np.zeros(n), "saturation_rate": np.zeros(n),
                 "binding": np.empty(n, dtype=object), "kv_occupancy": np.zeros(n), "runs": 0}
        for g, engine in enumerate(engines):
            rows = np.arange(g, n, len(engines))
            batcher, _, _ = self._replica(values, engine)
            gains = None if self.gains is None else (self.gains[0][rows], self.gains[1][rows])
            part = max_rate(batcher, self.slo, tuple(a[rows] for a in self.draws),
                            rtol=self.rtol, parallel=parallel, gains=gains)
            for name in ("max_rate", "saturation_rate", "binding", "kv_occupancy"):
                found[name][rows] = part[name]
            found["runs"] += part["runs"]
        return found


def _engine_draws(engine, gpus, engine_draws, replicates, seed) -> dict | None:
    """Each GPU's engine drawn ``k`` times (:meth:`Calibration.draw`), by GPU name, or ``None``."""
    k = whole_number("engine_draws", engine_draws, lo=0, allow_none=True)
    if k is not None and k > replicates:
        raise ValueError(f"engine_draws must be at most replicates ({replicates}): each draw "
                         f"times its own replicates; got {k}")
    per_gpu = {gpu.name: resolve_engine(engine, gpu, warn=False) for gpu in gpus}
    drawable = all(isinstance(e, Calibration) and e.intervals and not e.groups
                   for e in per_gpu.values())
    if k is None:
        k = min(replicates, 4) if drawable else 0
    elif k > 0 and not drawable:
        raise ValueError("engine_draws needs each GPU's engine to be a calibration with "
                         "intervals and no knob sets (a shipped profile, or calibrate()'s "
                         "result); give engine_draws=0")
    if k == 0:
        return None
    # one seed per draw, shared by every GPU and configuration: common random numbers
    seeds = [int(np.random.SeedSequence([seed, 0xE16, g]).generate_state(1)[0])
             for g in range(k)]
    return {name: [cal.draw(s) for s in seeds] for name, cal in per_gpu.items()}


def _replica(model, gpu, tp, max_num_seqs, max_num_batched_tokens, admission, block_size,
             gpu_memory_utilization, engine=None, prefix_caching=False, speculative=None, pp=1,
             ep=1, mixed_prefill=True, held=None, held_by="vllm", recv_interval=1,
             stream_interval=1, num_scheduler_steps=1):
    """One replica's batcher and KV budget, or why the configuration cannot serve; prefill
    steps apart from the decodes where the engine runs them so (``mixed_prefill`` False),
    except under speculative decoding (simulated mixed); new requests taken in every
    ``recv_interval`` steps (SGLang's ``--scheduler-recv-interval``); tokens sent in chunks of
    ``stream_interval`` (``--stream-interval``); decodes in windows of ``num_scheduler_steps``
    (vLLM V0's ``--num-scheduler-steps``). ``held``: what the engine keeps on
    each GPU beside weights and KV (:func:`~rooflinekit.profiles.held_memory`), taken off
    before the KV budget; ``held_by``: the engine whose memory rule that is, whose pooling of
    a sliding-window model's KV the batcher takes (SGLang's; vLLM's otherwise) and whose
    attention kernels the model needs on ``gpu``."""
    problem = _layout_problem(model, tp, pp, ep, gpu)
    if problem:
        return None, 0, problem
    if missing_attention_kernel(held_by, model, gpu):
        return None, 0, "no_attention_kernel"       # the engine would not start
    if admission == "paged" and (pp == 1 and ep == 1 or not model.is_hybrid):
        # a hybrid's KV in vLLM's larger blocks; an MLA model's in its kernel's
        block_size = vllm_block_size(model, gpu, tp, block_size=block_size)
    budget = replica_kv_budget(model, gpu, tp, block_size=block_size,
                                gpu_memory_utilization=gpu_memory_utilization,
                                speculative=speculative, pp=pp, ep=ep, **(held or {}))
    if budget <= 0:
        return None, 0, "does_not_fit"
    batcher = ContinuousBatcher(
        max_num_seqs=max_num_seqs, kv_budget_tokens=budget, admission=admission,
        block_size=block_size, max_num_batched_tokens=max_num_batched_tokens, model=model,
        gpu=gpu, tp=tp, clock="roofline", engine=engine,
        # the budget is given; the utilisation rule sets the per-rank state charge with it
        gpu_memory_utilization=gpu_memory_utilization,
        prefix_caching=prefix_caching, speculative=speculative,
        mixed_prefill=bool(mixed_prefill) or speculative is not None,
        kv_pool="sglang" if held_by == "sglang" else "vllm", recv_interval=recv_interval,
        stream_interval=stream_interval, num_scheduler_steps=num_scheduler_steps,
        **({"pp": pp, "ep": ep} if pp > 1 or ep > 1 else {}))
    return batcher, budget, None


def _speculative_attrs(spec) -> dict:
    """The plan's attributes naming its speculative decoding."""
    draft = spec.draft.name if isinstance(spec.draft, ModelShape) else spec.draft
    acceptance = spec.acceptance if isinstance(spec.acceptance, float) else repr(spec.acceptance)
    return {"speculative_draft": draft, "num_speculative_tokens": spec.draft_tokens,
            "speculative_acceptance": acceptance}


#: A closed-loop point's run offers this multiple of a first run's request throughput
#: (:func:`load_curve` with ``concurrencies``): its queue never empties once full, while its
#: first clients start apart. Twice: the first run's clients, started together, can be up to
#: a fifth slower than clients apart.
CLOSED_LOOP_OVERLOAD = 2.0


def load_curve(traffic: Traffic, slo: SLO, *, model, gpu, tp=1, max_num_seqs="auto", rates=None,
               concurrencies=None, max_num_batched_tokens="auto", admission="auto",
               block_size=16, gpu_memory_utilization=None, replicates=10, seed=0, engine=None,
               engine_draws=None, requests=1000, mixed_prefill="auto",
               clients_start="apart", recv_interval=1, pp=1, ep=1,
               cached_prompts=0, stream_interval=1, num_scheduler_steps=1) -> xr.Dataset:
    """Latency percentiles and SLO attainment of one replica against its load: an open-loop
    request rate, or a closed-loop client's concurrency.

    Parameters
    ----------
    traffic, slo
        As for :func:`plan` (the traffic's own rate is not used: ``rates`` are).
    model, gpu : spec or catalogue name
        One configuration.
    tp, max_num_seqs, max_num_batched_tokens, admission, block_size, gpu_memory_utilization
        As for :func:`plan`, one value each; ``max_num_seqs`` and ``max_num_batched_tokens``
        default to ``"auto"``, the engine's defaults for the GPU (``"search"`` is not taken:
        a load curve is one deployment's).
    rates : sequence of float
        Request rates per replica [requests/s], each finite and > 0 (dimension
        ``request_rate``): Poisson arrivals (or the traffic's own process) at each, an
        open-loop client. Give ``rates`` or ``concurrencies``, not both.
    concurrencies : sequence of int
        Requests a closed-loop client keeps in flight (``vllm bench serve --max-concurrency``),
        each a whole number from 1 to :data:`~rooflinekit.workloads.MAX_CONCURRENCY`
        (dimension ``concurrency``); above ``max_num_seqs`` the rest wait in the server's
        queue; see Notes.
    mixed_prefill : bool or "auto"
        Whether a step carries prefill slices beside the decode tokens
        (:class:`~rooflinekit.batching.ContinuousBatcher`); ``"auto"`` (default): the engine's
        own scheduling (:func:`rooflinekit.profiles.scheduler_defaults`: False for SGLang).
    replicates, seed, engine, engine_draws, requests
        As for :func:`plan`: the same draws as a plan's with the same seed, and the same
        engine draws.
    clients_start : {"apart", "together"}
        How a closed loop's clients start (Notes): ``"apart"`` (default), kept apart while the
        server stays full; ``"together"``, every client's first request at once, as ``vllm
        bench serve --max-concurrency`` and ``sglang.bench_serving`` start theirs. Not read
        for ``rates``.
    recv_interval : int
        SGLang's ``--scheduler-recv-interval`` [steps], in [1,
        :data:`~rooflinekit.batching.MAX_RECV_INTERVAL`]: new requests are taken in at receive
        steps only (:class:`~rooflinekit.batching.ContinuousBatcher`), which lengthens the TTFT
        by up to that many decode steps. Default 1: every step, every engine's default.
    stream_interval : int
        vLLM's and SGLang's ``--stream-interval`` [tokens], in [1,
        :data:`~rooflinekit.batching.MAX_STREAM_INTERVAL`]: the server sends each request's
        first token at once, then every ``stream_interval`` tokens, and its last at its end
        (:class:`~rooflinekit.batching.ContinuousBatcher`), so the ITL variables are the gaps
        between its sends, as ``vllm bench serve`` times them against such a server; TTFT,
        TPOT and E2E latency are unchanged. Default 1: every token as it is made.
    num_scheduler_steps : int
        vLLM V0's multi-step scheduling (``--num-scheduler-steps``, vLLM 0.6.0 to 0.9), in [1,
        :data:`~rooflinekit.batching.MAX_SCHEDULER_STEPS`]: decodes in windows of this many
        steps, each request's tokens sent at its windows' ends and its finish at the end of
        its last (:class:`~rooflinekit.batching.ContinuousBatcher`), so TPOT, E2E latency and
        the ITL variables hold the windows; needs ``mixed_prefill=False``, as vLLM ran it.
        For replaying the sweeps of such servers; default 1 (every engine today).
    pp, ep : int
        Pipeline stages and expert-parallel degree [1], as for :func:`plan`, one value each
        (default 1): a replica of ``tp × pp`` GPUs whose routed experts are spread over ``ep``
        of a stage's ``tp`` GPUs, its steps with their stage hand-offs and the experts'
        all-to-all (:mod:`rooflinekit.roofline.layout`), refused naming the degree where the
        model does not divide (:func:`rooflinekit.parallel.check_layout`).
    cached_prompts : int
        The first ``cached_prompts`` requests, in the order the client sends them, find their
        whole prompt in the server's prefix cache, in [0, ``requests``]: a benchmark client's
        warm-up request sends the first prompt before the run (``vllm bench serve``,
        ``sglang.bench_serving``), and a seeded client run again on the same server sends the
        earlier run's prompts first. Each then computes only its last prompt token
        (:func:`~rooflinekit.batching.run_replicates`' ``arrived_kv_tokens``). Default 0:
        every prompt computed whole, as on a server without a prefix cache.

    Returns
    -------
    xarray.Dataset
        Over ``request_rate`` and ``replicate``, as :func:`rooflinekit.batching.run_replicates`
        gives them: ``p50_ttft`` ... ``p99_latency`` and ``p50_tpot`` ... ``p99_tpot`` [s];
        ``ttft_attainment``, ``token_itl_attainment``, ``e2e_attainment``, ``tpot_attainment``
        [1] against the SLO's targets; and what ``vllm bench serve`` prints beside its
        percentiles, so that a curve lies beside a sweep of it (seconds, not its milliseconds):
        ``mean_ttft``, ``mean_tpot``, ``mean_token_itl``, ``mean_latency`` [s] (its
        ``mean_ttft_ms``, ``mean_tpot_ms``, ``mean_itl_ms``, ``mean_e2el_ms``; its medians are
        the ``p50_*``), ``request_throughput`` [requests/s] and ``throughput`` [tokens/s] (its
        ``request_throughput`` and ``output_throughput``, here over the time from the first
        arrival to the last completion); ``mean_queue_delay`` [s], the mean wait from arrival
        (a closed-loop client's send) to first admission, inside ``mean_ttft``: a closed-loop
        client waits it where the server holds fewer than ``C``, else until the next step.

    Notes
    -----
    ``*_tpot`` and ``*_token_itl`` are vLLM's per-request TPOT and every-gap ITL (:class:`SLO`).

    A closed-loop client at concurrency ``C`` sends a request the moment one completes, so the
    server holds ``C`` requests whatever its speed; it is simulated as a server of
    ``max_num_seqs = min(C, max_num_seqs)`` kept full, every client time counted from when the
    client sends the request, the moment an earlier one completes
    (:func:`~rooflinekit.batching.run_replicates`' ``closed_loop`` and ``clients``).
    Two runs per point on the same draws: every request arriving at once, which gives the
    server's request throughput; and arrivals at :data:`CLOSED_LOOP_OVERLOAD` times that
    throughput, whose summaries are the point's (``clients_start="apart"``), or the first
    run's own (``"together"``). With equal lengths, clients started together would finish and
    send together for ever, each prompt waiting for its whole wave's prefill; real clients
    drift apart, and these start apart while keeping the server full. Where the client draws
    its lengths from a range (``--random-range-ratio``, SGLang's uniform lengths), the first
    waves disperse as the benchmark's do, and a run started together holds the waits of its
    first waves, which grow with ``C`` (``"together"``). The
    throughputs run from the first admission to the last completion, the filling of the
    server included (a few percent of a run of many times ``C`` requests).
    A server that runs fewer than ``C`` (its ``max_num_seqs`` or its KV cache full) queues the
    rest, and their wait counts in the TTFT and the latency as the client sees them
    (``mean_queue_delay``).

    Raises
    ------
    ValueError
        If the configuration cannot serve (weights do not fit, heads do not divide), naming why.
    """
    check_type("traffic", traffic, Traffic)
    check_type("slo", slo, SLO)
    (model,) = _names("model", model, ModelShape, catalog.resolve_model)
    (gpu,) = _names("gpu", gpu, GPU, catalog.gpu)
    if (rates is None) == (concurrencies is None):
        raise ValueError("give rates (an open-loop client) or concurrencies (a closed-loop "
                         "client), not both and not neither")
    closed = concurrencies is not None
    if closed:
        loads = as_1d("concurrencies", concurrencies)
        if not np.isfinite(loads).all() or (loads < 1).any() or (loads > MAX_CONCURRENCY).any() \
                or (loads != np.round(loads)).any():
            raise ValueError(f"concurrencies must be whole numbers from 1 to "
                             f"{MAX_CONCURRENCY:,}; got {show(concurrencies)}")
        loads = loads.astype(np.int64)
    else:
        loads = as_1d("rates", rates)
        if not np.isfinite(loads).all() or (loads <= 0).any():
            raise ValueError(f"rates must be finite and > 0 [requests/s]; got {show(rates)}")
    replicates = whole_number("replicates", replicates, lo=1)
    requests = whole_number("requests", requests, lo=10)
    cached_prompts = whole_number("cached_prompts", cached_prompts, lo=0, hi=requests)
    max_num_seqs, max_num_batched_tokens = one_scheduler(engine, gpu, max_num_seqs,
                                                         max_num_batched_tokens)
    if isinstance(mixed_prefill, str) and mixed_prefill == "auto":
        mixed_prefill = scheduler_defaults(scheduler_engine(engine), gpu).mixed_prefill
    mixed_prefill = check_bool("mixed_prefill", mixed_prefill)
    seed = whole_number("seed", seed, lo=0)
    if not isinstance(clients_start, str) or clients_start not in ("apart", "together"):
        raise ValueError(f"clients_start must be 'apart' or 'together'; got {clients_start!r}")
    recv_interval = whole_number("recv_interval", recv_interval, lo=1, hi=MAX_RECV_INTERVAL)
    stream_interval = whole_number("stream_interval", stream_interval, lo=1,
                                   hi=MAX_STREAM_INTERVAL)
    num_scheduler_steps = whole_number("num_scheduler_steps", num_scheduler_steps, lo=1,
                                       hi=MAX_SCHEDULER_STEPS)
    admission = scheduler_admission(admission, engine, gpu)   # the engine's, before resolving it
    drawn = _engine_draws(engine, [gpu], engine_draws, replicates, seed)
    held_by = memory_engine(engine)
    engine = resolve_engine(engine, gpu)
    label = _quality(engine, model=model, gpu=gpu)
    tp = whole_number("tp", tp, lo=1)
    pp, ep = whole_number("pp", pp, lo=1), whole_number("ep", ep, lo=1)
    if pp > 1 or ep > 1:
        parallel.check_layout(model, tp=tp, pp=pp, ep=ep)       # names what does not divide
    # the server's memory is profiled at its own max_num_seqs, whatever the clients send
    share, held = memory_rule(held_by, model, gpu, tp, max_num_seqs=max_num_seqs,
                              max_num_batched_tokens=max_num_batched_tokens,
                              gpu_memory_utilization=gpu_memory_utilization, pp=pp)
    layout = dict(admission=admission,
                  block_size=whole_number("block_size", block_size, lo=1),
                  gpu_memory_utilization=share, held=held, held_by=held_by, pp=pp, ep=ep)

    def replica(engine, seqs=max_num_seqs):
        return _replica(model, gpu, tp, seqs, max_num_batched_tokens, engine=engine,
                        mixed_prefill=mixed_prefill, recv_interval=recv_interval,
                        stream_interval=stream_interval,
                        num_scheduler_steps=num_scheduler_steps, **layout)
    batcher, _, problem = replica(engine)
    if problem:
        why = missing_attention_kernel(held_by, model, gpu) or problem
        raise ValueError(f"{model.name} on {tp * pp} × {gpu.name} cannot serve: {why}")
    draws = draw_requests(traffic, replicates, requests, seed)
    arrival, prompt, output = draws[:3]
    # the cached requests' prompts are held when they arrive: only their last token is computed
    cached = np.where(np.arange(prompt.shape[1]) < cached_prompts, prompt, 0) \
        if cached_prompts else None
    targets = {f"{k}_target": v for k, v in slo.targets.items()}
    names = [f"p{q}_{w}" for q in LATENCY_PERCENTILES for w in ("ttft", "token_itl", "latency")]
    names += ["ttft_attainment", "token_itl_attainment", "e2e_attainment"]
    names += [f"p{q}_tpot" for q in LATENCY_PERCENTILES] + ["tpot_attainment", *_BENCH_SERVE]
    engines = [engine] if drawn is None else drawn[gpu.name]
    # each engine draw times its own rows; an open loop's batcher is the same at every rate
    groups = [(np.arange(g, replicates, len(engines)), e, None if closed else replica(e)[0])
              for g, e in enumerate(engines)]
    runs = []
    for load in loads:
        pieces = []
        for rows, e, b in groups:
            if not rows.size:
                continue
            common = dict(prompt_tokens=prompt[rows], output_tokens=output[rows],
                          arrived_kv_tokens=None if cached is None else cached[rows],
                          **prefixes(draws, rows), **targets)
            if closed:
                # a server of one slot a client, up to its own max_num_seqs; more clients wait
                # in its queue, and their clocks run from the send (run_replicates' clients)
                b = replica(e, int(min(load, max_num_seqs)))[0]
                loop = dict(closed_loop=True, clients=int(load))
                full = run_replicates(b, np.zeros_like(arrival[rows]), **loop, **common)
                if clients_start == "together":      # the benchmark's own start
                    piece = full
                else:
                    rate = CLOSED_LOOP_OVERLOAD * full["request_throughput"].values[:, None]
                    piece = run_replicates(b, arrival[rows] / rate, **loop, **common)
            else:
                piece = run_replicates(b, arrival[rows] / load, **common)
            pieces.append(piece[names].assign_coords({dims.REPLICATE: rows}))
        runs.append(xr.concat(pieces, dim=dims.REPLICATE).sortby(dims.REPLICATE))
    dim = dims.CONCURRENCY if closed else dims.REQUEST_RATE
    ds = xr.concat(runs, dim=dim)
    ds = ds.assign_coords({dim: loads, dims.REPLICATE: np.arange(replicates)})
    if closed:
        ds[dim].attrs.update(units="1", long_name="requests a closed-loop client keeps in flight")
    else:
        ds[dim].attrs.update(units="requests/s", long_name="request rate per replica")
    ds.attrs.update({"model": model.name, "gpu": gpu.name, "tp": int(tp), "pp": int(pp),
                     "ep": int(ep), "max_num_seqs": int(max_num_seqs),
                     "max_num_batched_tokens": int(max_num_batched_tokens or 0),
                     "mixed_prefill": int(mixed_prefill),
                     "recv_interval": int(recv_interval),
                     "stream_interval": int(stream_interval),
                     "num_scheduler_steps": int(num_scheduler_steps),
                     "cached_prompts": int(cached_prompts),
                     "admission": layout["admission"],
                     "client": "closed loop" if closed else "open loop",
                     **({"clients_start": clients_start} if closed else {}),
                     "engine_draws": 0 if drawn is None else len(engines),
                     "memory_outside_kv": memory_outside_kv(held_by, [model]),
                     **_window_attrs([model], layout["admission"], held_by,
                                     layout["block_size"]),
                     "model_quality": label,
                     "quantile": float(slo.quantile),
                     **{f"{k}_target": v for k, v in slo.targets.items()}})
    return ds


def _warn_older_scheduler(engine, gpu) -> None:
    """Warn where ``engine`` names a version older than the scheduler defaults planned
    (:func:`rooflinekit.profiles.older_than_scheduler`)."""
    note = older_than_scheduler(engine, gpu)
    if note:
        warnings.warn(note, UserWarning, stacklevel=3)


def one_scheduler(engine, gpu, max_num_seqs, max_num_batched_tokens) -> tuple:
    """One replica's ``(max_num_seqs, max_num_batched_tokens)``: the numbers given, or for
    ``"auto"`` the engine's defaults for ``gpu`` (vLLM's otherwise); a ``None`` budget: whole
    prompts."""
    defaults = scheduler_defaults(scheduler_engine(engine), gpu)
    seqs_auto = _scheduler_counts("max_num_seqs", max_num_seqs, ("auto",)) == "auto"
    budget_auto = _scheduler_counts("max_num_batched_tokens", max_num_batched_tokens,
                                    ("auto", None)) == "auto"
    if seqs_auto or budget_auto:
        _warn_older_scheduler(engine, gpu)
    if seqs_auto:
        max_num_seqs = defaults.max_num_seqs
    max_num_seqs = whole_number("max_num_seqs", max_num_seqs, lo=1)
    if budget_auto:
        max_num_batched_tokens = max(defaults.max_num_batched_tokens, max_num_seqs)
    max_num_batched_tokens = whole_number("max_num_batched_tokens", max_num_batched_tokens,
                                          lo=max_num_seqs, allow_none=True)
    return max_num_seqs, max_num_batched_tokens


def _operating_point(batcher, draws, rate, parallel, gains=None) -> dict:
    """Latency percentiles at ``rate`` per replica, medians over replicates [s]."""
    arrival, prompt, output = draws[:3]
    ds = run_replicates(batcher, arrival / rate, prompt, output, parallel=parallel,
                        variables=(*_OPERATING, "mean_running"), as_dataset=False,
                        **prefixes(draws),
                        **({} if gains is None else {"speculative_gains": gains}))
    out = {name: float(np.median(ds[name])) for name in _OPERATING}
    return out, float(np.median(ds["mean_running"]))



def _layout_energy_per_token(model, gpu, batch_size, context_length, *, tp=1, pp=1, ep=1,
                             engine=None,
                             idle_power_fraction=DEFAULT_IDLE_POWER_FRACTION) -> float:
    """GPU energy of one generated token in a decode step of a ``(tp, pp, ep)`` layout
    [J/token], over its ``tp × pp`` GPUs.

    :func:`~rooflinekit.roofline.energy_per_token`'s model over every GPU of the layout, one
    micro-batch in flight: with ``T_L`` the layout's step
    (:func:`~rooflinekit.roofline.layout_decode_step_time`), ``T`` the group's and a stage busy
    ``max(T_c, T_m) / pp`` of it, ``E = tp · P_board × (i·(T + S) + (1 − i)·max(T_c, T_m)) / B``
    with ``S = pp·T_L − T``: the group's energy with ``S`` more idle time (the other stages'
    turns, the sends, and the wait for the busiest group of experts; Huang et al., GPipe,
    NeurIPS 2019). ``T_L`` less the group's step at ``ep`` (the busiest group's) is affine in
    the batch, so it is read at batches 1 and 2 and drawn through ``B``.
    """
    engine = roofline.engine_for(engine, "decode", model=model, gpu=gpu)
    group = float(decode_step_time(model, gpu, batch_size, context_length, tp, engine=engine))
    spread = group if ep == 1 else float(decode_step_time(model, gpu, batch_size,
                                                          context_length, tp, ep=ep,
                                                          engine=engine))
    added = [float(layout_decode_step_time(model, gpu, b, context_length, tp=tp, pp=pp,
                                           ep=ep, engine=engine)
                   - decode_step_time(model, gpu, b, context_length, tp, ep=ep, engine=engine))
             for b in (1, 2)]
    layout_step = spread + added[0] + (batch_size - 1) * (added[1] - added[0])
    idle = pp * layout_step - group
    # the other stages' turns and the sends, drawn at idle power: more fixed time per step
    return float(energy_per_token(model, gpu, batch_size, context_length, tp,
                                  idle_power_fraction=idle_power_fraction,
                                  engine=engine.replace(step_overhead=engine.step_overhead
                                                        + idle)))


def _assemble(results, configs, axes, shape, replicates) -> xr.Dataset:
    """The search results as a Dataset over the configuration axes (and ``replicate``)."""
    per = np.zeros(shape + (replicates,))
    saturation = np.zeros(shape)
    binding = np.empty(shape, dtype=object)
    budget = np.zeros(shape, dtype=np.int64)
    energy = np.zeros(shape)
    latency = {name: np.full(shape, np.inf) for name in _OPERATING}
    for index, r in zip(configs, results):
        per[index] = r["max_rate"]
        saturation[index] = float(np.median(r["saturation_rate"]))
        values, counts = np.unique(np.asarray(r["binding"], dtype=str), return_counts=True)
        binding[index] = values[np.argmax(counts)]            # what binds in most replicates
        budget[index] = r["kv_budget_tokens"]
        energy[index] = r["energy_per_token"]
        for name, value in r["latencies"].items():
            latency[name][index] = value
    names = list(axes)
    coords = {dim: [getattr(v, "name", v) for v in values] for dim, values in axes.items()}
    coords[dims.REPLICATE] = np.arange(replicates)

    def var(data, units, long_name, with_replicate=False):
        return xr.Variable(names + ([dims.REPLICATE] if with_replicate else []), data,
                           {"units": units, "long_name": long_name})

    data = {
        **rate_variables(var, per, saturation, "replica"),
        "binding": var(binding.astype(str), "", "what caps the rate"),
        "kv_budget_tokens": var(budget, "tokens", "KV cache budget of one replica"),
        # the format planned, for the launch commands to load the same weights
        "weight_bytes": var(np.broadcast_to(np.array(
            [m.weight_bytes for m in axes[dims.MODEL]], dtype=float).reshape(
                (-1,) + (1,) * (len(shape) - 1)), shape).copy(),
            "bytes", "weights of the model in the format planned, all GPUs of a replica"),
        "energy_per_token": var(energy, "J/token", "GPU energy per generated token at the "
                                                   "operating point (0: not known)"),
        "replicate_max_rate": var(per, "requests/s", "max rate per replica, each replicate",
                                  with_replicate=True),
    }
    for name, values in latency.items():
        q_, what = name.split("_", 1)
        data[name] = var(values, "s", f"{q_[1:]}th percentile {_LATENCY_NAMES[what]} at the "
                                      f"operating rate")
    return xr.Dataset(data, coords=coords)


def check_fleet_counts(rate, need, per_replica, gpus_per_replica) -> None:
    """Refuse a fleet whose replicas or GPUs cannot be counted exactly (more than 2**53): such
    counts would wrap as int64 and read as "cannot serve". ``need`` is the peak rate with headroom
    [requests/s], ``per_replica`` each configuration's max rate per replica (0: cannot serve)."""
    r = np.asarray(per_replica, dtype=np.float64)
    serves = r > 0
    if not serves.any():
        return
    replicas = np.where(serves, need / np.where(serves, r, 1.0), 0.0)
    gpus = replicas * np.asarray(gpus_per_replica, dtype=np.float64)
    worst = float(max(replicas.max(), gpus.max()))
    if not worst <= MAX_COUNT:
        raise ValueError(f"rate {float(rate):g} requests/s needs {worst:.3g} replicas or GPUs, "
                         f"more than 2**53 = {MAX_COUNT:,} can be counted exactly; plan for a "
                         f"lower rate (a replica here serves at most {r.max():.3g} requests/s)")


def replicas_for_rate(need, rate) -> np.ndarray:
    """Replicas that carry ``need`` [requests/s] at ``rate`` each: ``⌈need / rate⌉``, 0 where
    a replica serves nothing (``rate`` 0) [1], int64."""
    rate = np.asarray(rate, dtype=float)
    return np.where(rate > 0, np.ceil(need / np.where(rate > 0, rate, 1.0)), 0).astype(np.int64)


def _price(ds, traffic, headroom, hourly, engineering_monthly, electricity_price,
           pue, spare_replicas=0, min_replicas=1) -> None:
    """Replicas, GPUs and monthly cost from the rates, in place."""
    need = float(traffic.rate) * (1.0 + headroom)
    # a replica's GPUs: tp × pp (expert parallelism runs within a stage's tp GPUs)
    tp = ds[dims.TP] * (ds[dims.PP] if dims.PP in ds.dims else 1)
    for name in ("max_rate", "max_rate_low", "max_rate_high"):
        rate, per_replica = xr.broadcast(ds[name], tp)
        check_fleet_counts(traffic.rate, need, rate.values, per_replica.values)

    def replicas_for(rate):
        # at least min_replicas where the configuration serves, plus the spares (N + k)
        n = replicas_for_rate(need, rate.values)
        n = np.where(n > 0, np.maximum(n, min_replicas) + spare_replicas, 0)
        return xr.DataArray(n, dims=rate.dims)

    ds["replicas"] = replicas_for(ds["max_rate"]).assign_attrs(
        units="1", long_name="replicas for the peak rate with headroom")
    ds["replicas_low"] = replicas_for(ds["max_rate_high"]).assign_attrs(
        units="1", long_name="replicas at the 90th-percentile max rate")
    ds["replicas_high"] = replicas_for(ds["max_rate_low"]).assign_attrs(
        units="1", long_name="replicas at the 10th-percentile max rate")
    ds["gpus"] = (ds["replicas"] * tp).assign_attrs(units="1", long_name="GPUs in the fleet")
    for end, which in (("low", "90th"), ("high", "10th")):
        ds[f"gpus_{end}"] = (ds[f"replicas_{end}"] * tp).assign_attrs(
            units="1", long_name=f"GPUs in the fleet at the {which}-percentile max rate")
    serves = ds["replicas"] > 0
    carrying = ds["replicas"] - spare_replicas            # the spares down: the worst case
    ds["operating_rate"] = xr.where(serves, float(traffic.rate) / carrying.where(serves, 1),
                                    0.0).assign_attrs(
        units="requests/s", long_name="rate each replica carries at the peak (spares down)")
    price = xr.DataArray([hourly[g] for g in ds[dims.GPU].values], dims=[dims.GPU],
                         coords={dims.GPU: ds[dims.GPU].values})
    ds["gpu_hourly"] = price.assign_attrs(units="USD/h", long_name="price per GPU-hour")
    gpu_monthly = ds["gpus"] * price * HOURS_PER_MONTH
    ds["gpu_monthly_cost"] = xr.where(serves, gpu_monthly, np.inf).assign_attrs(
        units="USD/month", long_name="GPU-hours of the fleet for a month")
    # the traffic's exact means, not its draws': a month is priced on what it averages
    prompt, output = traffic.mean_prompt_tokens, traffic.mean_output_tokens
    monthly_tokens = traffic.monthly_requests * (prompt + output)
    output_tokens = traffic.monthly_requests * output
    kwh = ds["energy_per_token"] * output_tokens / JOULES_PER_KWH
    ds["power_monthly_cost"] = (kwh * pue * electricity_price).assign_attrs(
        units="USD/month", long_name="electricity for the month's generated tokens (PUE included; "
                                     "idle time not counted)")
    ds["monthly_cost"] = (ds["gpu_monthly_cost"] + engineering_monthly
                          + ds["power_monthly_cost"]).assign_attrs(
        units="USD/month", long_name="fleet cost per month (GPU-hours + engineering + power)")
    for end, which in (("low", "90th"), ("high", "10th")):
        gpu_cost = xr.where(ds[f"replicas_{end}"] > 0,
                            ds[f"gpus_{end}"] * price * HOURS_PER_MONTH, np.inf)
        ds[f"monthly_cost_{end}"] = (gpu_cost + engineering_monthly
                                     + ds["power_monthly_cost"]).assign_attrs(
            units="USD/month", long_name=f"fleet cost per month at the {which}-percentile max "
                                         f"rate")
    ds["cost_per_million_tokens"] = (ds["monthly_cost"] / monthly_tokens * PER_MILLION) \
        .assign_attrs(units="USD/1M tokens",
                      long_name="monthly cost per million tokens served (prompt + output)")
    ds.attrs.update({"monthly_requests": traffic.monthly_requests,
                     "monthly_tokens": monthly_tokens,
                     "mean_prompt_tokens": prompt, "mean_output_tokens": output,
                     "engineering_monthly": engineering_monthly,
                     "electricity_price": electricity_price, "pue": pue})
