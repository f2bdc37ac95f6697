"""Static and continuous batching simulators (guide §4.2-4.5).

``StaticBatcher(batch_size=8).run(workload)`` and
``ContinuousBatcher(max_num_seqs=16).run(workload)`` return an ``xr.Dataset`` with one entry per
request (dimension ``request``): status, admission, first-token and finish times, latency from
arrival and from admission, TTFT, ITL, preemptions; and scalar summaries: makespan, throughput,
latency percentiles (50, 90, 95, 99), the distribution of every inter-token gap, slot
utilisation, padding waste, KV occupancy, rejected and preempted counts, goodput under optional
TTFT/ITL targets, and exact attainment shares against TTFT, per-token ITL and end-to-end targets.
:func:`monte_carlo` runs many replicates of a :class:`~rooflinekit.workloads.WorkloadSpec` across
parameter dimensions and returns the summaries with a ``replicate`` dimension;
:func:`run_replicates` does the same for workloads the caller has drawn.

The rules are stated once, in :mod:`rooflinekit.batching._reference` (which also pins down what a
"tick" means); the numba kernels in :mod:`rooflinekit.batching._kernels` implement them and are
tested to agree exactly. This module validates, draws random numbers only through
:mod:`rooflinekit.workloads` generators, allocates the outputs and calls a kernel;
:mod:`rooflinekit.batching.results` derives the per-request times and the summaries from the
kernel's outputs and labels the result.

Clocks
------
``clock="tick"`` (the guide's lab): one tick per step; times in ticks. ``clock="roofline"``: each
step lasts what the roofline model (:func:`rooflinekit.roofline.mixed_step_time`) says for that
step's batch on ``model`` + ``gpu`` × ``tp``: its decode tokens, prefill tokens and KV read, run
by the batcher's ``engine`` (a :class:`~rooflinekit.Engine` or a calibration; default
:data:`rooflinekit.IDEAL`); times in seconds. Arrival times are in the clock's unit.

Latency definitions
-------------------
``latency`` = finish − arrival (what a user waits); ``service_latency`` = finish − first admission
(time in the batch, no queueing). The guide's 337 / 68 ticks are mean *service* latencies
(``docs/conventions.md``).

References
----------
.. [1] Serving-capacity guide §4.2-4.5, §3.3, §11 (tiers); ``docs/conventions.md``.
.. [2] Yu et al., Orca, OSDI 2022; Kwon et al., PagedAttention, SOSP 2023; Agrawal et al.,
       Sarathi-Serve, OSDI 2024.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import numbers
from collections.abc import Mapping

import numpy as np
import xarray as xr

from rooflinekit import catalog, dims, memory, parallel, roofline
from rooflinekit._validation import (MAX_COUNT, check_bool, check_keys, check_one_of, describe,
                                     real_number, whole_number)
from rooflinekit.batching import _reference
from rooflinekit.batching._reference import STAT_NAMES, UNLIMITED
from rooflinekit.dtypes import bytes_per_element

from rooflinekit.batching.speculative import Speculative
from rooflinekit.batching.results import (_POLICY, _TIER, SUMMARY_NAMES, _model_quality,
                                          _replicate_dataset,
                                          _single_dataset, _summaries, _summary_grid,
                                          _target_attrs)
from rooflinekit.workloads import MAX_ARRIVAL, Workload, WorkloadSpec, coerce_workload

__all__ = ["StaticBatcher", "ContinuousBatcher", "monte_carlo", "run_replicates",
           "replicate_seed", "replica_kv_budget", "SIMULATION_MEMORY_LIMIT",
           "SIMULATION_WORK_LIMIT"]

#: Most bytes one Monte Carlo block (all replicates in process, or one ``chunks`` task) may hold
#: for its draws and kernel outputs, and the summaries of the whole run: 2 GiB.
SIMULATION_MEMORY_LIMIT = 2 * 2**30

#: Most simulated token-steps (output tokens summed over the runs) one call may do: 1e10,
#: minutes on two cores at the kernels' worst (one sequence, one token a step).
SIMULATION_WORK_LIMIT = 1e10

#: Bytes per request a block holds: arrival, prompt, output, priority, and the kernel's
#: admission, first-token, finish, preemption and status outputs.
_BYTES_PER_REQUEST = 9 * 8


def replica_kv_budget(model, gpu, tp=1, *, reserve=memory.DEFAULT_RESERVE,
                      gpu_memory_utilization=None, block_size=16, speculative=None, pp=1,
                      ep=1) -> int:
    """A replica's KV budget [the target's tokens]: the one rule batchers and plans derive it by.

    Parameters
    ----------
    model, gpu : ModelShape, GPU
        The model and one GPU of the replica.
    tp : int
        Tensor-parallel degree [1].
    reserve : float
        The guide's rule: share of the memory left after the weights kept as working space, in
        [0, 1); used when ``gpu_memory_utilization`` is ``None``. Default 0.10.
    gpu_memory_utilization : float, optional
        vLLM's rule instead: the share of each GPU's memory for weights and KV, in (0, 1]
        (:func:`rooflinekit.memory.engine_kv_cache`, whole blocks of ``block_size``).
        :func:`rooflinekit.plan` uses it (default 0.9, vLLM's); a batcher uses the guide's
        rule unless given it.
    block_size : int
        KV block size [tokens] of vLLM's rule.
    speculative : Speculative, optional
        A draft's weights (:meth:`Speculative.weight_bytes`) come off the memory beside the
        target's; its KV then shares the budget in the batcher (:meth:`Speculative.kv_tokens`).
    pp, ep : int
        A pipeline or expert layout: :func:`rooflinekit.parallel.layout_memory`'s weights and
        KV per token on each GPU instead of the tensor-parallel rank's.

    Returns
    -------
    int
        Tokens; 0 where the weights leave no room.

    Notes
    -----
    Guide: ``⌊(tp·memory − W − W_draft)(1 − reserve) / kv_per_token⌋``
    (:func:`rooflinekit.memory.kv_budget_tokens`). vLLM: ``⌊(available − W_draft/tp) /
    bytes_per_block⌋ · block_size`` with ``available`` from
    :func:`rooflinekit.memory.engine_kv_cache`; a layout's ``available`` is corrected by
    ``W/tp − W_gpu`` and its blocks hold ``kv_gpu · block_size`` bytes.
    """
    if gpu_memory_utilization is None:
        if pp > 1 or ep > 1:
            # one GPU of the layout: its KV room over the KV each token leaves on it
            per_gpu = parallel.layout_memory(model, gpu, tp=tp, pp=pp, ep=ep, reserve=reserve)
            return int(per_gpu.usable_kv_bytes // per_gpu.kv_bytes_per_token)
        # the draft's weights (a model's, or a head's share of a layer) beside the target's
        extra = 0.0 if speculative is None else speculative.weight_bytes(model)
        return int(np.asarray(memory.kv_budget_tokens(model, gpu, tp=tp, reserve=reserve,
                                                      draft_weight_bytes=extra)).item())
    kv = memory.engine_kv_cache(model, gpu, tp, block_size=block_size,
                                gpu_memory_utilization=gpu_memory_utilization,
                                max_model_len=block_size)
    available, bytes_per_block = kv["available_bytes"], kv["bytes_per_block"]
    if pp > 1 or ep > 1:
        per_gpu = parallel.layout_memory(model, gpu, tp=tp, pp=pp, ep=ep)
        available += memory.weight_bytes(model) / tp - float(per_gpu.weight_bytes)
        bytes_per_block = float(per_gpu.kv_bytes_per_token) * block_size
    held = 0.0 if speculative is None else speculative.weight_bytes(model)
    if held > 0.0:
        available -= held / int(tp)
    elif pp == ep == 1:
        return int(kv["kv_cache_tokens"])
    return max(int(available // bytes_per_block), 0) * int(block_size)


class _Timing:
    """The clock as the kernels take it: ``tick`` (one tick per step) and the step-cost ``coef``.

    ``coef`` holds the :class:`rooflinekit.roofline.StepCost` fields as float64 (zeros for the
    tick clock, which reads none of them), timed by ``engine`` (the resolved
    :class:`~rooflinekit.Engine` of the mixed step; ``None`` on the tick clock); ``draft_coef``
    the same for a speculative draft model (zeros without one) and ``draft_share`` a draft
    head's share of a decode step (0 without one); ``reference_clock`` is the same clock for
    the plain-Python reference (``None`` for ticks).
    """

    def __init__(self, clock, model, gpu, tp, engine, draft=None, layout=(1, 1)):
        self.clock = clock
        self.tick = clock == "tick"
        self.draft_coef = np.zeros(len(roofline.StepCost._fields))
        self.draft_share = draft if isinstance(draft, float) else 0.0
        if self.tick:
            self.coef = np.zeros(len(roofline.StepCost._fields))
            self.reference_clock = None
            self.units = "tick"
            return
        cost = roofline.step_cost_coefficients(model, gpu, tp=tp, engine=engine)
        cost = _layout_cost(cost, model, gpu, *layout, engine)
        self.coef = np.array([float(c) for c in cost], dtype=np.float64)
        draft_cost = None
        if draft is not None and not isinstance(draft, float):
            # the draft runs on the target's engine, picked for the target's model
            draft_cost = roofline.step_cost_coefficients(draft, gpu, tp=tp, engine=engine)
            self.draft_coef = np.array([float(c) for c in draft_cost], dtype=np.float64)
        self.reference_clock = _RooflineClock(tuple(float(c) for c in cost),
                                              cost.full_attention_fraction, cost.sliding_window,
                                              draft_cost, self.draft_share)
        self.units = "s"


@functools.lru_cache(maxsize=256)
def _shared_timing(clock, model, gpu, tp, engine, draft=None, layout=(1, 1)):
    """:class:`_Timing` of one clock, computed once: a planner's search asks for it every run.

    A pure function of frozen specs (the :class:`~rooflinekit.Engine` included), so memoised;
    callers only read the result.
    """
    return _Timing(clock, model, gpu, tp, engine, draft, layout)


def _layout_cost(cost, model, gpu, pp, ep, engine):
    """The step cost of a ``(tp, pp, ep)`` layout with one micro-batch in flight.

    A step passes the ``pp`` stages in turn (each ``1/pp`` of the layers, so the roofline terms
    sum to the group's) and adds what the layout sends, affine in the step's tokens ``n``: the
    hand-offs and all-to-all of :func:`rooflinekit.roofline.layout_terms` (the terms the
    layout formulas and the sweep take, at ``micro_batches=1``). They join the all-reduce's
    term of the step formula, ``n·bytes/link + latency``, as one per-token time over a unit
    link and a fixed latency. ``pp = ep = 1``: ``cost`` as it is.
    """
    if pp == 1 and ep == 1:
        return cost
    links = roofline.layout_links(gpu.interconnect_bandwidth, gpu.interconnect_latency,
                                  gpu.network_bandwidth, engine.interconnect_efficiency)
    if pp > 1 and links.stage_bandwidth is None:
        raise ValueError(f"pp={pp} needs a link for the stage-to-stage activations and "
                         f"gpu {gpu.name!r} has none (network_bandwidth, "
                         f"interconnect_bandwidth)")
    if ep > 1 and links.expert_bandwidth is None:
        raise ValueError(f"ep={ep} needs a link for the expert all-to-all and gpu "
                         f"{gpu.name!r} has no interconnect_bandwidth")
    terms = roofline.layout_terms(model.hidden_size, parallel.moe_layers(model),
                                  model.n_experts_per_token,
                                  bytes_per_element(engine.activation_dtype), pp, ep, links)
    per_token = (cost.allreduce_bytes_per_token / cost.link_bandwidth     # [s/token]
                 + terms.hand_off_per_token + terms.all_to_all_per_token)
    fixed = cost.allreduce_latency + terms.hand_off_latency + terms.all_to_all_latency
    return cost._replace(allreduce_bytes_per_token=per_token, link_bandwidth=1.0,
                         allreduce_latency=fixed)


class _RooflineClock:
    """The roofline clock in plain Python, for the reference simulator."""

    def __init__(self, coef, full_attention_fraction, sliding_window, draft_cost=None,
                 draft_share=0.0):
        self._coef = coef
        self._fa, self._sw = full_attention_fraction, sliding_window
        self.window = sliding_window
        self._draft = None if draft_cost is None else tuple(float(c) for c in draft_cost)
        if draft_cost is not None:
            self._draft_fa = draft_cost.full_attention_fraction
            self._draft_window = draft_cost.sliding_window
        self._draft_share = draft_share

    def draft_time(self, n_decode, kv_tokens_read, contexts):
        """One draft step of ``n_decode`` sequences at ``contexts`` [s]: a draft model's decode
        step, or a draft head's share of the target's (``kv_tokens_read``: the target's read)."""
        if self._draft is None:
            return self._draft_share * self.step_time(n_decode, 0.0, kv_tokens_read, 0.0)
        fa, window = self._draft_fa, self._draft_window
        read = (fa * float(sum(contexts))
                + (1.0 - fa) * float(sum(min(c, window) for c in contexts)))
        return roofline.mixed_step_time_kernel(*self._draft, n_decode, 0.0, read, 0.0)

    def draft_prefill_time(self, n_prefill_tokens, chunks):
        """The draft's pass over a step's prompt ``chunks`` (``(chunk, cached)`` pairs, in
        admission order) [s]: a draft model's step of those tokens, or a draft head's share of
        the target's."""
        if self._draft is None:
            read = pairs = 0.0
            for chunk, cached in chunks:
                read += self.kv_read(cached)
                pairs += self.chunk_pairs(chunk, cached)
            return self._draft_share * self.step_time(0.0, n_prefill_tokens, read, pairs)
        fa, window = self._draft_fa, self._draft_window
        read = pairs = 0.0
        for chunk, cached in chunks:
            read += roofline.kv_tokens_read_kernel(cached, fa, window)
            pairs += roofline.prefill_context_tokens_kernel(chunk, cached, fa, window)
        return roofline.mixed_step_time_kernel(*self._draft, 0.0, n_prefill_tokens, read, pairs)

    def kv_read_sum(self, context_sum, windowed_sum):
        """KV tokens read by decoding sequences from ``sum(C)`` and ``sum(min(C, window))``."""
        return self._fa * context_sum + (1.0 - self._fa) * windowed_sum

    def step_time(self, n_decode, n_prefill_tokens, kv_tokens_read, prefill_context_tokens):
        return roofline.mixed_step_time_kernel(*self._coef, n_decode, n_prefill_tokens,
                                               kv_tokens_read, prefill_context_tokens)

    def kv_read(self, context):
        return roofline.kv_tokens_read_kernel(context, self._fa, self._sw)

    def chunk_pairs(self, chunk, cached):
        return roofline.prefill_context_tokens_kernel(chunk, cached, self._fa, self._sw)


def _resolve_specs(batcher):
    """Look up catalogue names given for ``model``/``gpu``."""
    if isinstance(batcher.model, str):
        object.__setattr__(batcher, "model", catalog.model(batcher.model))
    if isinstance(batcher.gpu, str):
        object.__setattr__(batcher, "gpu", catalog.gpu(batcher.gpu))


def _resolve_clock(clock, model, gpu):
    if (model is None) != (gpu is None):
        raise ValueError("model and gpu must be given together (to derive the KV budget and to "
                         "time steps), or both left None")
    if clock is None:
        clock = "tick" if model is None else "roofline"
    check_one_of("clock", clock, ("tick", "roofline"))
    if clock == "roofline" and model is None:
        raise ValueError("clock='roofline' needs model and gpu")
    return clock


# --- batchers -----------------------------------------------------------------------------------


_CLOCK_PARAMETERS = """tp : int
        Tensor-parallel degree [1].
    clock : {"tick", "roofline"}, optional
        Default "tick" without a model, "roofline" with one.
    engine : Engine or Calibration, optional
        How the serving engine runs a step on the roofline clock: a
        :class:`rooflinekit.Engine` (efficiencies, overheads, all-reduce, formats), or a
        :class:`~rooflinekit.calibrate.Calibration`, whose engine for the mixed step
        (``engine_for("step", model=..., gpu=...)``) times every step. Results'
        ``attrs["model_quality"]`` carry that engine's ``label``. Default ``None``:
        :data:`rooflinekit.IDEAL`. Checked at construction; the tick clock accepts one and
        reads nothing of it."""


def _with_clock_parameters(cls):
    """The parameters both batchers share: ``{clock_parameters}`` in the docstring becomes
    :data:`_CLOCK_PARAMETERS`."""
    cls.__doc__ = cls.__doc__.replace("{clock_parameters}", _CLOCK_PARAMETERS)
    return cls


class _Batcher:
    """What both batchers share: validation and timing of the clock, and the kernel calls."""

    def _check_clock(self):
        """Check ``tp`` and ``engine``, look up specs, settle the clock, before any run.

        In roofline mode this derives the step cost once, so that a bad model, GPU or engine
        fails here rather than at :meth:`run`.
        """
        whole_number("tp", self.tp, lo=1)
        engine = self.engine
        # duck-typed: rooflinekit.calibrate sits above this room and imports it
        if not (engine is None or isinstance(engine, roofline.Engine)
                or (callable(getattr(engine, "engine_for", None))
                    and not isinstance(engine, type))):
            hint = " (build rooflinekit.Engine(**options) from a mapping of options)" \
                if isinstance(engine, Mapping) else ""
            raise TypeError(f"engine must be a rooflinekit.Engine, a "
                            f"rooflinekit.calibrate.Calibration or None, got "
                            f"{type(engine).__name__}{hint}")
        _resolve_specs(self)
        object.__setattr__(self, "clock", _resolve_clock(self.clock, self.model, self.gpu))
        if engine is not None and self.clock == "tick":
            # an engine times roofline steps: on the tick clock it would be ignored, silently
            raise ValueError("engine times roofline steps: give model and gpu (clock="
                             "'roofline'), or leave engine None on the tick clock")
        if self.clock == "roofline":
            self._timing()

    def _check_size(self, output, work_limit=SIMULATION_WORK_LIMIT, memory_limit=SIMULATION_MEMORY_LIMIT):
        """Refuse, before the kernel, a run above ``work_limit`` token-steps (or static scratch
        above ``memory_limit``: the static kernel counts a batch's members by output length)."""
        work = float(np.sum(output, dtype=np.float64))
        if work > work_limit:
            raise ValueError(f"this run would simulate {work:.3g} token-steps (output tokens), "
                             f"above work_limit={work_limit:g}; split the workload, shorten the "
                             f"outputs, or raise work_limit")
        longest = float(np.max(output)) if np.size(output) else 0.0
        if self.policy == "static" and 8 * longest > memory_limit:
            raise ValueError(f"static batching of an output of {longest:.3g} tokens needs "
                             f"{8 * longest / 2**30:.3g} GiB of scratch, above memory_limit="
                             f"{memory_limit / 2**30:g} GiB; shorten the outputs or raise "
                             f"memory_limit")

    def _engine(self):
        """The :class:`~rooflinekit.Engine` of the mixed step: ``engine`` itself, or the one a
        calibration gives for this model and GPU (its knob set, where it has several)."""
        return roofline.engine_for(self.engine, "step", model=self.model, gpu=self.gpu)

    def _timing(self):
        # the tick clock reads no engine: a calibration is not asked for one
        engine = None if self.clock == "tick" else self._engine()
        spec = getattr(self, "speculative", None)
        draft = None if spec is None else spec.draft
        layout = (getattr(self, "pp", 1), getattr(self, "ep", 1))
        key = (self.clock, self.model, self.gpu, self.tp, engine, draft, layout)
        try:
            hash(key)
        except TypeError:            # an Engine of array fields: computed afresh
            return _Timing(*key)
        return _shared_timing(*key)

    def _simulate(self, wl, timing, targets=(None, None, None), arrived=None):
        """The kernel's outputs for one workload (a one-replicate :meth:`_run_many`)."""
        out = _allocate(1, wl.n_requests)
        self._run_many(timing, wl.arrival[None], wl.prompt_tokens[None], wl.output_tokens[None],
                       wl.priority[None], out, targets, parallel=False,
                       prefix=(wl.prefix_group[None], wl.prefix_tokens[None]),
                       arrived=None if arrived is None else arrived[None])
        return out

    def _run_many(self, timing, arrival, prompt, output, priority, out, targets,
                  parallel=True, prefix=None, arrived=None, seeds=None, gains=None):
        """Run the kernel on 2-D ``(replicate, request)`` workloads into ``out``.

        ``prefix``: the ``(prefix_group, prefix_tokens)`` arrays, default no prefix;
        ``arrived``: the prompt tokens whose KV comes with each request, default none;
        ``seeds``: each row's seed of the speculative acceptance draws, default
        :meth:`Speculative.row_seed` of the row; ``gains``: the rows' ``(gain, offset)`` tables
        already made (checked by the caller), read instead of drawing.
        """
        if self.policy == "continuous" and self._kv_budget() is None and prompt.size:
            # "unlimited" is UNLIMITED tokens to the kernel: true only while every request
            # of a row fits in it at once
            held = float(np.max(np.sum(prompt, axis=-1, dtype=np.float64)
                                + np.sum(output, axis=-1, dtype=np.float64)))
            if held > UNLIMITED:
                raise ValueError(f"an unlimited KV budget holds at most 2**60 = {UNLIMITED:,} "
                                 f"tokens; these requests hold up to {held:.3g} in all: give "
                                 f"kv_budget_tokens, or fewer or shorter requests")
        from rooflinekit.batching import _kernels  # numba: imported on the first run
        run = self._kernel(timing.tick)
        arrival, prompt, output, priority = _kernels.kernel_inputs(arrival, prompt, output,
                                                                   priority)
        params = self._parameters()
        # the kernel counts the inter-token gaps within the ITL target; none: every gap is met
        itl = np.inf if targets[1] is None else float(targets[1])
        clock = (timing.tick, timing.coef)
        if self._tiered:
            if prefix is None:
                prefix = (np.full(arrival.shape, -1, np.int64), np.zeros(arrival.shape, np.int64))
            if arrived is None:
                arrived = np.zeros(arrival.shape, np.int64)
            if gains is None:
                gains = self._gains(output, seeds)
            tiers = _kernels.kernel_inputs(priority, *prefix, arrived, *gains)
            clock = (timing.tick, timing.coef, timing.draft_coef, timing.draft_share)

        def one(r):
            row = tuple(a[r] for a in tiers) if self._tiered else ()
            out[6][r] = run(arrival[r], prompt[r], output[r], *row, *params, *clock, itl,
                            *(a[r] for a in out[:6]))
        rows, first = arrival.shape[0], 0
        if rows and not _kernels.is_cached(run):
            with _kernels.compile_notice(run):       # the first row compiles it, said so
                one(0)
            first = 1
        _each_row(lambda r: one(r + first), rows - first, parallel)
        _check_errors(out[6])

    def run(self, workload=None, *, arrival=None, prompt_tokens=None, output_tokens=None,
            priority=None, ttft_target=None, itl_target=None,
            e2e_target=None, work_limit=SIMULATION_WORK_LIMIT,
            memory_limit=SIMULATION_MEMORY_LIMIT, arrived_kv_tokens=None) -> xr.Dataset:
        """Simulate a :class:`~rooflinekit.workloads.Workload` (or a mapping, or the arrays).

        Parameters
        ----------
        workload : Workload or mapping, optional
            Or pass ``arrival`` [tick or s], ``prompt_tokens`` [tokens], ``output_tokens``
            [tokens] and optionally ``priority`` (0 interactive, 1 batch; static batching
            ignores it).
        ttft_target, itl_target : float, optional
            Goodput targets [tick or s]: a completed request counts toward ``goodput`` if its TTFT
            and its mean inter-token latency meet them. Also the attainment targets, with
            ``e2e_target``: ``ttft_attainment`` (share of all requests completed with TTFT <=
            ``ttft_target``), ``token_itl_attainment`` (share of all inter-token gaps <=
            ``itl_target``) and ``e2e_attainment`` (share of all requests completed with
            latency <= ``e2e_target``); an absent target counts as met.
        e2e_target : float, optional
            End-to-end latency target (finish - arrival) [tick or s].
        work_limit, memory_limit : float
            Most token-steps (output tokens) and bytes of scratch the run may take; default
            :data:`SIMULATION_WORK_LIMIT` (1e10) and :data:`SIMULATION_MEMORY_LIMIT` (2 GiB). A run above either is
            refused before the kernel, with the estimate.
        arrived_kv_tokens : array_like of int, optional
            Continuous batching only: per request, the prompt tokens whose KV comes with it
            [tokens], in [0, prompt_tokens] (disaggregated serving's decode side). On a request's
            first admission its prefill starts after them, as after a prefix-cache hit (the last
            prompt token is always computed), in its own blocks; a preemption loses them. Default
            none.

        Returns
        -------
        xarray.Dataset
            Per-request variables along ``request`` and scalar summaries (see module docstring).
        """
        wl = coerce_workload(workload, arrival, prompt_tokens, output_tokens, priority)
        arrived = self._arrived_kv(wl, arrived_kv_tokens)
        targets = _targets(ttft_target, itl_target, e2e_target)
        self._check_size(wl.output_tokens,
                         real_number("work_limit", work_limit, lo=0, lo_open=True, allow_inf=True),
                         real_number("memory_limit", memory_limit, lo=0, lo_open=True,
                                     allow_inf=True))
        timing = self._timing()
        out = self._simulate(wl, timing, targets, arrived)
        return _single_dataset(wl, out, self, timing, targets)

    def _arrived_kv(self, wl, arrived_kv_tokens):
        """``arrived_kv_tokens`` checked against the workload: int64 per request, or None."""
        if arrived_kv_tokens is None:
            return None
        if not self._tiered:
            raise ValueError(f"arrived_kv_tokens is an input of continuous batching, not of "
                             f"{self.policy} batching")
        a = np.asarray(arrived_kv_tokens)
        if a.shape != (wl.n_requests,) or not (a.dtype.kind in "iu" or a.size == 0):
            raise ValueError(f"arrived_kv_tokens must be whole numbers, one per request "
                             f"(shape ({wl.n_requests},)), got shape {a.shape} of {a.dtype}")
        a = a.astype(np.int64)
        if np.any(a < 0) or np.any(a > wl.prompt_tokens):
            raise ValueError("arrived_kv_tokens must be in [0, prompt_tokens] for every request")
        return a


@_with_clock_parameters
@dataclasses.dataclass(frozen=True)
class StaticBatcher(_Batcher):
    """Static batching: run a batch of up to ``batch_size`` requests to completion, then the next.

    Parameters
    ----------
    batch_size : int
        Requests per batch [1], >= 1.
    model, gpu : ModelShape, GPU or catalogue name, optional
        Roofline mode: time each step on ``gpu`` × ``tp`` for ``model``.
    {clock_parameters}

    Notes
    -----
    A batch starts as soon as the previous one ends, with whatever has arrived (or at the next
    arrival if nothing has); every member finishes when the longest does, ``start + max(output)``
    ticks (guide §4.2, §8 step 5). ``padding_slot_steps`` counts the slot-steps members spend
    finished while the batch runs on.

    References
    ----------
    .. [1] Serving-capacity guide §4.2; ``docs/conventions.md`` (1,220 ticks, 336.67 mean service
           latency on :func:`rooflinekit.workloads.guide_workload` with ``batch_size=8``).
    """

    batch_size: int = 8
    model: object = None
    gpu: object = None
    tp: int = 1
    clock: str | None = None
    engine: object = None

    _tiered = False       # static batching ignores priority

    def __post_init__(self):
        whole_number("batch_size", self.batch_size, lo=1)
        self._check_clock()

    @property
    def policy(self) -> str:
        return "static"

    def _kernel(self, tick):
        from rooflinekit.batching import _kernels  # numba: imported on the first run
        return _kernels.static_run                 # one kernel for both clocks

    def _parameters(self):
        return (self.batch_size,)

    def _slots(self):
        return self.batch_size

    def _kv_budget(self):
        return None

    def reference(self, workload, itl_target=None, tokens=None) -> dict:
        """The same simulation by :func:`rooflinekit.batching._reference.simulate_static`.

        For tests: the plain-Python specification the kernel must match bit for bit
        (``tokens``: a list to receive every output token's ``(request, time)``).
        """
        wl = coerce_workload(workload)
        return _reference.simulate_static(wl.arrival, wl.prompt_tokens, wl.output_tokens,
                                          batch_size=self.batch_size,
                                          clock=self._timing().reference_clock,
                                          itl_target=_itl_limit(itl_target), tokens=tokens)


@_with_clock_parameters
@dataclasses.dataclass(frozen=True)
class ContinuousBatcher(_Batcher):
    """Continuous (iteration-level) batching: retire, then admit, every step.

    Parameters
    ----------
    max_num_seqs : int or None
        Slots: the most sequences in one step [1] (vLLM's name); ``None`` for unlimited.
    kv_budget_tokens : int or None
        KV cache budget [tokens]. ``None``: derived from ``model``, ``gpu``, ``tp`` and ``reserve``
        (or ``gpu_memory_utilization``) by :func:`replica_kv_budget` if a model is given, else
        unlimited (the
        kernel's 2**60 tokens: a run whose requests could hold more at once is refused). With
        ``speculative`` and ``model``, a draft model's KV shares it
        (:meth:`Speculative.kv_tokens`).
    admission : {"reserve", "paged"}
        "reserve" (the guide's lab): admit only if the final length (prompt + output) of every
        admitted request fits the budget; FIFO. "paged" (vLLM): KV in blocks of ``block_size``
        tokens allocated as sequences grow, with recompute preemption of the most recently admitted
        sequence when a step needs a block that is not free.
    block_size : int
        Paged mode: tokens per KV block [tokens], >= 1 (vLLM's default 16).
    max_num_batched_tokens : int or None
        Chunked prefill: the per-step token budget [tokens] shared by decode tokens (one per
        decoding sequence, served first) and prefill slices; >= ``max_num_seqs``. ``None``: whole
        prompts are prefilled in one step.
    interactive_cap : int or None
        Tiers: while any interactive (priority 0) request is running or queued, batch-tier
        requests are admitted only while fewer than ``interactive_cap`` sequences run, capping the
        batch the interactive tier is pulled into (guide §11). Interactive requests are always
        admitted first. ``None``: no cap.
    prefix_caching : bool, keyword-only
        Paged admission only: the whole blocks of a shared prompt prefix
        (:class:`~rooflinekit.workloads.SharedPrefix`, ``Workload.prefix_group``) are held once
        per prefix and counted by the sequences using them; a request whose prefix is resident
        skips prefilling it; a prefix no sequence uses stays cached until its blocks are needed
        (evicted least recently used first). Default False.
    speculative : Speculative, optional, keyword-only
        Speculative decoding (:class:`~rooflinekit.batching.Speculative`): every decode step
        drafts ``draft_tokens`` per sequence and verifies them, each sequence gaining its drawn
        1 to ``draft_tokens + 1`` tokens; on the roofline clock a step lasts the draft steps plus
        the verification. A draft model with another vocabulary or more layers than ``model``
        is refused. Default None: plain decoding, one token a step.
    pp, ep : int, keyword-only
        Pipeline- and expert-parallel degrees of the replica [1], >= 1, checked by
        :func:`rooflinekit.parallel.check_layout` (``tp × pp`` GPUs; needs ``model`` and
        ``gpu``). On the roofline clock a step passes the ``pp`` stages one after another with
        one micro-batch in flight, so it lasts the group's step plus ``pp − 1`` activation
        hand-offs and, with ``ep > 1``, the experts' all-to-all
        (:func:`rooflinekit.roofline.layout_decode_step_time` with ``micro_batches=1``;
        a prefill-only step is :func:`~rooflinekit.roofline.layout_prefill_time`). The
        derived KV budget is one GPU's, :func:`rooflinekit.parallel.layout_memory` (its share
        of the weights and of each token's KV). Not modelled: micro-batches interleaved in the
        pipeline (which keep every stage busy and raise throughput at a longer ITL) and
        unequal stages; a sliding-window model on a layout needs ``kv_budget_tokens`` (the
        derived budget does not count the window's savings). Default 1: one tensor-parallel
        group, as before.
    model, gpu : ModelShape, GPU or catalogue name, optional
        Derive the KV budget and, in roofline mode, time each step.
    reserve : float
        Working-space reserve for the derived KV budget, fraction of memory left after weights,
        in [0, 1) (the guide's rule).
    gpu_memory_utilization : float, optional, keyword-only
        Derive the KV budget by vLLM's rule instead, this share of each GPU's memory for
        weights and KV, in (0, 1] (:func:`replica_kv_budget`, the rule :func:`rooflinekit.plan`
        sizes replicas by). Default ``None``: the guide's ``reserve`` rule.
    {clock_parameters}

    Notes
    -----
    Each tick: arrive, retire, admit, terminate-check, step (guide §8 step 4); see
    :mod:`rooflinekit.batching._reference` for the exact rules (prefix caching included). A
    request whose final length can never fit is rejected at once with reason
    :data:`REASON_KV_BUDGET`; every request ends completed or rejected.

    References
    ----------
    .. [1] Serving-capacity guide §4.3-4.5; ``docs/conventions.md`` (440 ticks, 67.5 mean service latency
           on :func:`rooflinekit.workloads.guide_workload` with 16 slots).
    .. [2] Kwon et al., PagedAttention, SOSP 2023; Agrawal et al., Sarathi-Serve, OSDI 2024.
    """

    max_num_seqs: int | None = 256
    kv_budget_tokens: int | None = None
    admission: str = "reserve"
    block_size: int = 16
    max_num_batched_tokens: int | None = None
    interactive_cap: int | None = None
    # keyword-only, so that the positional order of the fields after it stays as it was
    prefix_caching: bool = dataclasses.field(default=False, kw_only=True)
    speculative: Speculative | None = dataclasses.field(default=None, kw_only=True)
    # the layout beyond tp, keyword-only (and before the clock's fields, which stay last)
    pp: int = dataclasses.field(default=1, kw_only=True)
    ep: int = dataclasses.field(default=1, kw_only=True)
    model: object = None
    gpu: object = None
    tp: int = 1
    reserve: float = 0.10
    clock: str | None = None
    engine: object = None
    gpu_memory_utilization: float | None = dataclasses.field(default=None, kw_only=True)

    _tiered = True

    def __post_init__(self):
        whole_number("max_num_seqs", self.max_num_seqs, lo=1, allow_none=True)
        whole_number("kv_budget_tokens", self.kv_budget_tokens, lo=0, allow_none=True)
        check_one_of("admission", self.admission, ("reserve", "paged"))
        whole_number("block_size", self.block_size, lo=1)
        mnbt = whole_number("max_num_batched_tokens", self.max_num_batched_tokens, lo=1,
                           allow_none=True)
        if mnbt is not None:
            if self.max_num_seqs is None:
                raise ValueError("max_num_batched_tokens needs a finite max_num_seqs (every "
                                 "decoding sequence takes one token of the step budget)")
            if mnbt < self.max_num_seqs:
                raise ValueError(f"max_num_batched_tokens must be >= max_num_seqs "
                                 f"({self.max_num_seqs}), got {mnbt}")
        whole_number("interactive_cap", self.interactive_cap, lo=1, allow_none=True)
        real_number("reserve", self.reserve, lo=0, hi=1, hi_open=True)
        real_number("gpu_memory_utilization", self.gpu_memory_utilization, lo=0, hi=1,
                    lo_open=True, allow_none=True)
        if not isinstance(self.prefix_caching, (bool, np.bool_)):
            raise TypeError(f"prefix_caching must be True or False, got "
                            f"{type(self.prefix_caching).__name__}")
        if self.prefix_caching and self.admission != "paged":
            raise ValueError(f"prefix_caching needs admission='paged' (prefixes are shared in "
                             f"blocks), got admission={self.admission!r}")
        if self.speculative is not None and not isinstance(self.speculative, Speculative):
            raise TypeError(f"speculative must be a rooflinekit.batching.Speculative or None, "
                            f"got {type(self.speculative).__name__}")
        whole_number("pp", self.pp, lo=1)
        whole_number("ep", self.ep, lo=1)
        if self.pp > 1 or self.ep > 1:
            if self.model is None:
                raise ValueError(f"pp={self.pp}, ep={self.ep} lay the model out over GPUs: give "
                                 f"model and gpu too")
            if self.speculative is not None:
                raise ValueError("speculative decoding on a pipeline or expert-parallel layout "
                                 "is not modelled: give pp=1 and ep=1 with speculative")
        self._check_clock()
        if self.pp > 1 or self.ep > 1:
            parallel.check_layout(self.model, tp=self.tp, pp=self.pp, ep=self.ep)
            if self.clock == "roofline":
                self._timing()       # a layout's link the GPU lacks fails here
            if self.kv_budget_tokens is None and self.model.sliding_window is not None:
                raise ValueError("a sliding-window model on a pp or ep layout needs "
                                 "kv_budget_tokens (the derived budget is per full-layer token)")
        if self.speculative is not None and self.model is not None:
            # the roofline's rule for a draft (its vocabulary, its layers), and its step
            spec = self.speculative
            roofline.speculative_step_time(self.model, self.gpu, 1, 1, self.tp, draft=spec.draft,
                                           draft_tokens=spec.draft_tokens)

    @property
    def policy(self) -> str:
        return "continuous"

    def _kv_budget(self):
        if self.kv_budget_tokens is not None:
            budget = int(self.kv_budget_tokens)
        elif self.model is None:
            return None
        else:
            budget = replica_kv_budget(self.model, self.gpu, self.tp, reserve=self.reserve,
                                       gpu_memory_utilization=self.gpu_memory_utilization,
                                       block_size=self.block_size, speculative=self.speculative,
                                       pp=self.pp, ep=self.ep)
        if self.speculative is not None and self.model is not None:
            budget = self.speculative.kv_tokens(self.model, budget)   # a draft model's KV
        return budget

    def _slots(self):
        return self.max_num_seqs

    def _args(self, budget):
        return (UNLIMITED if self.max_num_seqs is None else self.max_num_seqs,
                UNLIMITED if budget is None else budget,
                self.admission == "paged", self.block_size,
                UNLIMITED if self.max_num_batched_tokens is None else self.max_num_batched_tokens,
                UNLIMITED if self.interactive_cap is None else self.interactive_cap,
                bool(self.prefix_caching),
                0 if self.speculative is None else self.speculative.draft_tokens)

    def _gains(self, output, seeds=None):
        """The kernel's speculative gain table for 2-D outputs (empty without speculation)."""
        rows = output.shape[0]
        if self.speculative is None:
            return np.zeros((rows, 0), np.uint8), np.zeros(output.shape, np.int64)
        if seeds is None:
            seeds = [self.speculative.row_seed(r) for r in range(rows)]
        return self.speculative.gains(output, seeds)

    def _kernel(self, tick):
        from rooflinekit.batching import _kernels  # numba: imported on the first run
        return _kernels.continuous_kernel(tick, speculative=self.speculative is not None)

    def _parameters(self):
        return self._args(self._kv_budget())

    def reference(self, workload, admission=None, trace=None, itl_target=None,
                  tokens=None, arrived_kv_tokens=None) -> dict:
        """The same simulation by :func:`rooflinekit.batching._reference.simulate_continuous`.

        For tests.

        ``admission`` overrides the batcher's rule; the reference alone also knows ``"prompt"``, the
        guide's failure mode (admit on prompt length), kept only to demonstrate it over-admits.
        """
        wl = coerce_workload(workload)
        slots, budget, _, block, mnbt, cap, caching, k = self._args(self._kv_budget())
        gain, offset = self._gains(wl.output_tokens[None])
        return _reference.simulate_continuous(
            wl.arrival, wl.prompt_tokens, wl.output_tokens, wl.priority, max_num_seqs=slots,
            kv_budget=budget, admission=admission or self.admission, block_size=block,
            max_num_batched_tokens=mnbt, interactive_cap=cap,
            clock=self._timing().reference_clock, itl_target=_itl_limit(itl_target), trace=trace,
            tokens=tokens, prefix_group=wl.prefix_group, prefix_tokens=wl.prefix_tokens,
            prefix_caching=caching, arrived_kv_tokens=self._arrived_kv(wl, arrived_kv_tokens),
            draft_tokens=k, gains=(gain[0], offset[0]))


def _kernel_outputs(batcher, workload, itl_target=None, arrived_kv_tokens=None) -> dict:
    """The kernel's raw outputs for one workload, keyed like the reference's (for tests)."""
    wl = coerce_workload(workload)
    out = batcher._simulate(wl, batcher._timing(), (None, itl_target, None),
                            batcher._arrived_kv(wl, arrived_kv_tokens))
    keys = ("admit", "first_token", "finish", "preemptions", "status", "stats")
    return {k: a[0] for k, a in zip(keys, out[:6])}


def _targets(ttft_target, itl_target, e2e_target=None):
    """Latency targets [tick or s]: each a number >= 0 (inf allowed) or None."""
    return (real_number("ttft_target", ttft_target, lo=0, allow_inf=True, allow_none=True),
            real_number("itl_target", itl_target, lo=0, allow_inf=True, allow_none=True),
            real_number("e2e_target", e2e_target, lo=0, allow_inf=True, allow_none=True))


def _itl_limit(itl_target):
    """The gap counted as met by the reference [tick or s]: inf for no target."""
    return float("inf") if itl_target is None else float(itl_target)


def _each_row(one, rows: int, parallel: bool) -> None:
    """``one(r)`` for every row ``r``; with ``parallel``, on a pool of numba's thread count.

    The kernels release the GIL, so the rows of a Monte Carlo run on all cores at once, each in
    one thread. Threads, not numba's ``prange``: a pool takes the rows one by one, so uneven
    rows balance, and it spends less CPU time waking workers (a third less on the planning
    benchmark; a tenth of the time for a call of small rows); the kernels compile once, single-
    threaded. The rows are independent and write their own outputs: the numbers are the same.
    """
    import numba                                   # loaded with the kernels already
    threads = min(numba.get_num_threads(), rows) if parallel else 1
    if threads < 2:
        for r in range(rows):
            one(r)
        return
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(threads) as pool:
        for _ in pool.map(one, range(rows)):       # raises a row's error here
            pass


def _check_errors(errors):
    from rooflinekit.batching._kernels import WRONG_CLOCK    # loaded with the kernels already
    if np.any(errors == WRONG_CLOCK):
        raise RuntimeError("a kernel of one clock was handed the other clock's tick_mode "
                           "(please report this)")
    if np.any(errors != 0):
        raise RuntimeError("the scheduler stalled: requests queued that can never be admitted "
                           "(please report this workload)")


def _allocate(replicates, n):
    """Kernel outputs: admit, first_token, finish, preemptions, status, stats, errors."""
    return (np.empty((replicates, n)), np.empty((replicates, n)), np.empty((replicates, n)),
            np.empty((replicates, n), np.int64), np.empty((replicates, n), np.int64),
            np.empty((replicates, len(STAT_NAMES))), np.zeros(replicates, np.int64))


# --- summaries ----------------------------------------------------------------------------------


# --- Monte Carlo --------------------------------------------------------------------------------


def replicate_seed(seed, replicate: int) -> np.random.SeedSequence:
    """The seed of one Monte Carlo replicate: ``SeedSequence(seed).spawn(R)[replicate]``.

    ``spec.sample(replicate_seed(seed, r))`` reproduces replicate ``r`` of
    ``monte_carlo(spec, ..., seed=seed)`` on its own, for any replicate count.
    """
    entropy = seed.entropy if isinstance(seed, np.random.SeedSequence) else seed
    return np.random.SeedSequence(entropy, spawn_key=(int(replicate),))


def _split_sweep(sweep, batchers, spec):
    """Validate sweep names and split them into batcher and workload parameters."""
    sweep = dict(sweep or {})
    spec_fields = {f.name for f in dataclasses.fields(WorkloadSpec)}
    bat_keys, wl_keys = [], []
    for name, values in sweep.items():
        vals = list(np.atleast_1d(values).tolist()) if not isinstance(values, (list, tuple)) \
            else list(values)
        if not vals:
            raise ValueError(f"sweep[{name!r}] must hold at least one value")
        sweep[name] = vals
        if name in (dims.REPLICATE, _POLICY, _TIER, dims.REQUEST):
            raise ValueError(f"sweep name {name!r} is reserved for a dimension of the result")
        if any(name in {f.name for f in dataclasses.fields(b)} for b in batchers.values()):
            bat_keys.append(name)
        elif name in spec_fields or name.split(".", 1)[0] in ("output", "prompt", "arrival",
                                                               "prefix"):
            spec.replace(**{name: vals[0]})       # raises ValueError naming an unknown field
            wl_keys.append(name)
        else:
            raise ValueError(f"sweep name {name!r} is neither a batcher parameter nor a workload "
                             f"parameter")
    return sweep, bat_keys, wl_keys


def _check_monte_carlo_size(spec, n_policies, sweep, replicates, chunks, work_limit,
                            memory_limit):
    """Refuse, before any work, a Monte Carlo whose memory or work exceeds the limits."""
    n = spec.n_requests
    points = n_policies * int(np.prod([len(v) for v in sweep.values()], dtype=np.float64))
    block = float(replicates if chunks is None else min(chunks, replicates)) * n
    held = block * _BYTES_PER_REQUEST + float(replicates) * points * 64 * 8
    if held > memory_limit:
        raise ValueError(
            f"this Monte Carlo would hold about {held / 2**30:.3g} GiB ({replicates} replicates × "
            f"{n} requests, {points:g} grid points), above memory_limit="
            f"{memory_limit / 2**30:g} GiB; pass chunks= (replicates per dask task), use fewer "
            f"replicates, requests or grid points, or raise memory_limit")
    mean_output = spec.mean_output_tokens()
    work = float(replicates) * points * n * mean_output
    if work > work_limit:
        raise ValueError(
            f"this Monte Carlo would simulate about {work:.3g} token-steps ({replicates} "
            f"replicates × {points:g} grid points × {n} requests × {mean_output:.3g} output "
            f"tokens), above work_limit={work_limit:g}; use fewer replicates, requests or grid "
            f"points, or raise work_limit")


def _draw(spec, seed, r0, r1):
    """Replicates ``r0..r1-1``: arrival, prompt, output, priority, prefix group and length."""
    n = spec.n_requests
    shape = (r1 - r0, n)
    arrays = (np.empty(shape),) + tuple(np.empty(shape, np.int64) for _ in range(5))
    for j, r in enumerate(range(r0, r1)):
        row = spec.draw_prefixed(np.random.default_rng(replicate_seed(seed, r)))
        Workload(*row)                # validates the draw (sorted arrivals, token ranges)
        for a, values in zip(arrays, row):
            a[j] = values
    return arrays


def _mc_block(spec, batchers, sweep, bat_keys, wl_keys, seed, r0, r1, targets, parallel):
    """Summaries for replicates ``r0..r1-1`` over the whole grid, as a Dataset."""
    names = list(sweep)
    shape = tuple(len(sweep[k]) for k in names)
    results = {}
    tu = None
    for wl_combo in itertools.product(*(range(len(sweep[k])) for k in wl_keys)):
        spec_c = spec.replace(**{k: sweep[k][i] for k, i in zip(wl_keys, wl_combo)})
        arrival, prompt, output, priority, group, length = _draw(spec_c, seed, r0, r1)
        # speculative acceptance: drawn from each replicate's own seed, apart from the workload
        acceptance_seeds = [replicate_seed(seed, r).spawn(1)[0] for r in range(r0, r1)]
        out = _allocate(r1 - r0, spec.n_requests)
        for p_index, (pname, batcher) in enumerate(batchers.items()):
            for b_combo in itertools.product(*(range(len(sweep[k])) for k in bat_keys)):
                changes = {k: sweep[k][i] for k, i in zip(bat_keys, b_combo)
                           if k in {f.name for f in dataclasses.fields(batcher)}}
                b = dataclasses.replace(batcher, **changes)
                timing = b._timing()
                tu = timing.units if tu is None else tu
                if timing.units != tu:
                    raise ValueError("all policies must use the same clock (tick or roofline)")
                b._run_many(timing, arrival, prompt, output, priority, out, targets,
                            parallel=parallel, prefix=(group, length), seeds=acceptance_seeds)
                summ = _summaries(arrival, prompt, output, priority, out, b._slots(),
                                  b._kv_budget(), targets)
                index = dict(zip(wl_keys, wl_combo)) | dict(zip(bat_keys, b_combo))
                pos = (p_index,) + tuple(index[k] for k in names)
                for key, (values, kind, long_name) in summ.items():
                    if key not in results:
                        extra = values.shape[1:]
                        results[key] = (np.empty((len(batchers),) + shape + (r1 - r0,) + extra),
                                        kind, long_name)
                    results[key][0][pos] = values
    return _summary_grid(results, batchers, sweep, r0, r1, tu)


def monte_carlo(workload: WorkloadSpec, batcher, *, replicates: int = 100, seed=None,
                sweep: Mapping | None = None, ttft_target=None, itl_target=None,
                e2e_target=None, chunks: int | None = None, parallel: bool = True,
                work_limit=SIMULATION_WORK_LIMIT, memory_limit=SIMULATION_MEMORY_LIMIT) -> xr.Dataset:
    """Summaries of many simulated workloads, over replicates and parameter dimensions.

    Parameters
    ----------
    workload : WorkloadSpec
        The workload distribution; replicate ``r`` is drawn with :func:`replicate_seed`
        ``(seed, r)``, so every replicate is reproducible on its own and every grid point sees the
        same draws (common random numbers).
    batcher : StaticBatcher, ContinuousBatcher, or mapping of name -> batcher
        The policies compared, along dimension ``policy`` (a single batcher is named by its
        ``policy``).
    replicates : int
        Number of replicates R (>= 1).
    seed : int or SeedSequence, optional
        Root seed; ``None`` draws fresh entropy, recorded in ``attrs["seed_entropy"]``.
    sweep : mapping of name -> values, optional
        Parameter dimensions: a batcher field (``max_num_seqs``, ``kv_budget_tokens``,
        ``admission``, ``batch_size``, ...; applied to the batchers that have it) or a workload
        field, dotted for a distribution's field (``"output.sigma"``, ``"arrival.rate"``).
    ttft_target, itl_target, e2e_target : float, optional
        Goodput and attainment targets [tick or s] (:meth:`ContinuousBatcher.run`).
    chunks : int, optional
        Run through dask in tasks of ``chunks`` replicates each (``dask`` is an optional
        dependency, imported only here); results are identical to the in-process run.
        Without it, replicates run in parallel threads (:func:`_each_row`).
    parallel : bool
        In-process runs only: ``True`` (default) runs replicates on all cores, one thread each
        (numba's thread count); ``False`` runs them one after another. Both run the same
        single-run kernel: results are identical.
    work_limit, memory_limit : float
        Most token-steps (replicates × grid points × requests × mean output tokens, the mean of
        4,096 draws) and bytes (one block's draws and outputs, and every summary) the call may
        take; default :data:`SIMULATION_WORK_LIMIT` and :data:`SIMULATION_MEMORY_LIMIT`. Above either it is refused
        before drawing anything, with the estimate and the way out.

    Returns
    -------
    xarray.Dataset
        Every summary of :meth:`ContinuousBatcher.run` with dimensions ``policy``, the sweep names,
        and ``replicate`` (and ``tier`` for per-tier metrics).

    References
    ----------
    .. [1] Serving-capacity guide §4.3 ("its win scales with output-length variance").
    .. [2] NumPy, "Parallel random number generation" (``SeedSequence.spawn``).
    """
    if not isinstance(workload, WorkloadSpec):
        raise TypeError(f"workload must be a WorkloadSpec (a distribution), got "
                        f"{type(workload).__name__}")
    batchers = dict(batcher) if isinstance(batcher, Mapping) else {batcher.policy: batcher}
    if not batchers:
        raise ValueError("batcher must name at least one policy")
    for name, b in batchers.items():
        if not isinstance(b, (StaticBatcher, ContinuousBatcher)):
            raise TypeError(f"batcher {name!r} must be a StaticBatcher or ContinuousBatcher, got "
                            f"{type(b).__name__}")
    replicates = whole_number("replicates", replicates, lo=1)
    if seed is None:
        seed = np.random.SeedSequence().entropy
    elif isinstance(seed, np.random.SeedSequence):
        seed = seed.entropy
    elif isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, a SeedSequence or None, "
                         f"got {seed!r}")
    targets = _targets(ttft_target, itl_target, e2e_target)
    chunks = whole_number("chunks", chunks, lo=1, allow_none=True)
    if not isinstance(parallel, (bool, np.bool_)):
        raise TypeError(f"parallel must be True or False, got {type(parallel).__name__}")
    sweep, bat_keys, wl_keys = _split_sweep(sweep, batchers, workload)
    _check_monte_carlo_size(
        workload, len(batchers), sweep, replicates, chunks,
        real_number("work_limit", work_limit, lo=0, lo_open=True, allow_inf=True),
        real_number("memory_limit", memory_limit, lo=0, lo_open=True, allow_inf=True))
    args = (workload, batchers, sweep, bat_keys, wl_keys, seed)
    if chunks is None:
        ds = _mc_block(*args, 0, replicates, targets, bool(parallel))
    else:
        import dask
        bounds = [(r, min(r + chunks, replicates)) for r in range(0, replicates, chunks)]
        # Each task runs its replicates serially: dask supplies the parallelism, and numba's
        # default threading layer does not support parallel kernels launched from several threads.
        tasks = [dask.delayed(_mc_block)(*args, r0, r1, targets, False) for r0, r1 in bounds]
        ds = xr.concat(dask.compute(*tasks), dim=dims.REPLICATE)
    ds.attrs.update({"seed_entropy": str(seed), "replicates": replicates,
                     **_target_attrs(targets)})
    return ds


def run_replicates(batcher, arrival, prompt_tokens, output_tokens, priority=None, *,
                   ttft_target=None, itl_target=None, e2e_target=None,
                   parallel: bool = True, variables=None, work_limit=SIMULATION_WORK_LIMIT,
                   memory_limit=SIMULATION_MEMORY_LIMIT, prefix_group=None,
                   prefix_tokens=None, speculative_seeds=None, speculative_gains=None,
                   as_dataset: bool = True) -> xr.Dataset | dict:
    """Summaries of caller-drawn workloads, one per row: :func:`monte_carlo` without the drawing.

    Parameters
    ----------
    batcher : StaticBatcher or ContinuousBatcher
        The policy.
    arrival : array_like of float, shape (replicate, request)
        Arrival times [tick or s]; each row sorted, finite, >= 0.
    prompt_tokens, output_tokens : array_like of int, shape (replicate, request)
        Prompt [tokens], >= 0, and output lengths [tokens], >= 1.
    priority : array_like of int, shape (replicate, request), optional
        Tiers (0 interactive, 1 batch); default all interactive.
    ttft_target, itl_target, e2e_target : float, optional
        Goodput and attainment targets [tick or s] (:meth:`ContinuousBatcher.run`).
    parallel : bool
        ``True`` (default) runs the rows on all cores, one thread each; ``False`` one after
        another. Results are identical.
    variables : sequence of str, optional
        Only these summaries (names of :data:`~rooflinekit.batching.results.SUMMARY_NAMES`),
        for callers that run many small simulations and read a few numbers (a search); the
        percentiles of per-request times are then computed only when named.
    work_limit, memory_limit : float
        As for :func:`monte_carlo`: the rows' output tokens, and their bytes with the kernel's
        outputs.
    prefix_group, prefix_tokens : array_like of int, shape (replicate, request), optional
        Shared prefixes, as :class:`~rooflinekit.workloads.Workload` takes them (group -1: no
        prefix), for a batcher with ``prefix_caching``; give both or neither.
    speculative_seeds : sequence of numpy.random.SeedSequence, optional
        A speculative batcher's seed of each row's acceptance draws, one per row; default
        :meth:`Speculative.row_seed` of the row's position (so a subset of rows would draw
        other gains: a search over subsets passes its rows' own seeds).
    speculative_gains : tuple of ndarray, optional
        Instead of seeds, the rows' gains already drawn: ``(gain, offset)`` as
        :meth:`Speculative.gains` makes them for these ``output_tokens`` (uint8 of shape
        ``(replicate, >= the longest row's total output)``, int64 of the rows' shape). A search
        that runs the same rows at many rates draws them once (:func:`rooflinekit.plan` does);
        the results are those of the seeds they were drawn from. Checked whole: each row's
        offsets its outputs' running sums, every gain in ``[1, draft_tokens + 1]`` and none past
        its request's output.
    as_dataset : bool
        ``True`` (default): a Dataset. ``False``: a dict of the summaries' numpy arrays, without
        labels, for a search that reads a few numbers of many runs (building a Dataset costs
        about as much as summarising a run).

    Returns
    -------
    xarray.Dataset or dict
        Every summary of :func:`monte_carlo` (or the ``variables`` named) along ``replicate``
        (and ``tier``), without the ``policy`` dimension; ``attrs`` hold the policy, clock and
        targets. With ``as_dataset=False``, name -> array over replicates.

    Notes
    -----
    Each row is validated as a :class:`~rooflinekit.workloads.Workload`. Rows drawn as
    ``spec.draw(np.random.default_rng(replicate_seed(seed, r)))`` give the summaries of
    ``monte_carlo(spec, batcher, seed=seed)`` at replicate ``r``, so a caller can share draws
    (common random numbers) across configurations it chooses itself.

    See Also
    --------
    monte_carlo : draws the workloads from a :class:`~rooflinekit.workloads.WorkloadSpec`.
    """
    if not isinstance(batcher, (StaticBatcher, ContinuousBatcher)):
        raise TypeError(f"batcher must be a StaticBatcher or ContinuousBatcher, got "
                        f"{type(batcher).__name__}")
    targets = _targets(ttft_target, itl_target, e2e_target)
    check_bool("parallel", parallel)
    check_bool("as_dataset", as_dataset)
    if variables is not None:
        if isinstance(variables, str):
            raise TypeError("variables must be a sequence of summary names, not one string")
        variables = list(variables)
        check_keys("variables", variables, SUMMARY_NAMES, what="summary")
    arrays = _replicate_rows(arrival, prompt_tokens, output_tokens, priority)
    work_limit = real_number("work_limit", work_limit, lo=0, lo_open=True, allow_inf=True)
    memory_limit = real_number("memory_limit", memory_limit, lo=0, lo_open=True, allow_inf=True)
    held = float(arrays[0].size) * _BYTES_PER_REQUEST
    if held > memory_limit:
        raise ValueError(f"these rows would hold {held / 2**30:.3g} GiB with the kernel's "
                         f"outputs, above memory_limit={memory_limit / 2**30:g} GiB; pass fewer "
                         f"rows at a time or raise memory_limit")
    batcher._check_size(arrays[2], work_limit, memory_limit)
    prefix = _prefix_rows(arrays, prefix_group, prefix_tokens)
    out = _allocate(*arrays[0].shape)
    timing = batcher._timing()
    if speculative_seeds is not None:
        speculative_seeds = list(speculative_seeds)
        if len(speculative_seeds) != arrays[0].shape[0]:
            raise ValueError(f"speculative_seeds must hold one seed per row "
                             f"({arrays[0].shape[0]}), got {len(speculative_seeds)}")
    gains = _gain_rows(batcher, speculative_gains, speculative_seeds, arrays[2])
    batcher._run_many(timing, *arrays, out, targets, parallel=bool(parallel), prefix=prefix,
                      seeds=speculative_seeds, gains=gains)
    summ = _summaries(*arrays, out, batcher._slots(), batcher._kv_budget(), targets,
                      wanted=variables)
    if not as_dataset:
        return {name: values for name, (values, _, _) in summ.items()}
    ds = _replicate_dataset(summ, timing.units)
    budget = batcher._kv_budget()
    ds.attrs.update({"policy": batcher.policy, "clock": timing.clock,
                     "model_quality": _model_quality(batcher, timing.clock),
                     "time_units": timing.units,
                     "kv_budget_tokens": "unlimited" if budget is None else budget,
                     **_target_attrs(targets)})
    return ds


def _gain_rows(batcher, gains, seeds, output):
    """Validated ``speculative_gains`` of ``run_replicates`` for rows of ``output``, or None."""
    if gains is None:
        return None
    if seeds is not None:
        raise ValueError("give speculative_gains or speculative_seeds, not both (the gains "
                         "are drawn from seeds)")
    spec = getattr(batcher, "speculative", None)
    if spec is None:
        raise ValueError("speculative_gains needs a batcher with speculative=Speculative(...)")
    if not (isinstance(gains, tuple) and len(gains) == 2
            and all(isinstance(a, np.ndarray) for a in gains)):
        raise TypeError(f"speculative_gains must be a (gain, offset) pair of arrays, as "
                        f"Speculative.gains returns, got {describe(gains)}")
    gain, offset = gains
    total = output.sum(axis=1)
    width = int(total.max()) if total.size else 0
    if gain.dtype != np.uint8 or gain.ndim != 2 or gain.shape[0] != output.shape[0] \
            or gain.shape[1] < width:
        raise ValueError(f"speculative_gains' gain must be uint8 of shape (rows, >= the "
                         f"longest row's total output) = ({output.shape[0]}, >= {width}); got "
                         f"{gain.dtype} of shape {gain.shape}")
    starts = np.zeros(output.shape, np.int64)
    np.cumsum(output[:, :-1], axis=1, out=starts[:, 1:])
    if offset.shape != output.shape or not np.array_equal(offset, starts):
        raise ValueError("speculative_gains' offset must be each row's running sum of its "
                         "output_tokens (where each request's positions start), as "
                         "Speculative.gains makes it for these rows")
    k = spec.draft_tokens
    if gain.size and (gain.min() < 1 or gain.max() > k + 1):
        raise ValueError(f"speculative_gains' gains must lie in [1, draft_tokens + 1] = "
                         f"[1, {k + 1}]; got [{gain.min()}, {gain.max()}]")
    # none past its output: at position m of a request of o tokens, at most o - m
    left = np.arange(1, k + 1)
    near_end = output[:, :, None] > left                   # position o - j exists and is > 0
    rows = np.broadcast_to(np.arange(output.shape[0])[:, None, None], near_end.shape)
    at = (offset + output)[:, :, None] - left
    cap = np.broadcast_to(left, near_end.shape)[near_end]
    if (gain[rows[near_end], at[near_end]] > cap).any():
        raise ValueError("speculative_gains gains a request tokens past its output; make them "
                         "with Speculative.gains for these output_tokens")
    return gain, offset


def _prefix_rows(arrays, prefix_group, prefix_tokens):
    """Validated ``(prefix_group, prefix_tokens)`` rows (each as a Workload takes them), or None."""
    if (prefix_group is None) != (prefix_tokens is None):
        raise ValueError("prefix_group and prefix_tokens go together: give both or neither")
    if prefix_group is None:
        return None
    group, tokens = np.asarray(prefix_group), np.asarray(prefix_tokens)
    if group.shape != arrays[0].shape or tokens.shape != arrays[0].shape:
        raise ValueError(f"prefix_group and prefix_tokens must have the rows' shape "
                         f"{arrays[0].shape}; got {group.shape} and {tokens.shape}")
    out = (np.empty(group.shape, np.int64), np.empty(group.shape, np.int64))
    for r in range(group.shape[0]):
        try:
            wl = Workload(arrays[0][r], arrays[1][r], arrays[2][r], arrays[3][r],
                          prefix_group=group[r], prefix_tokens=tokens[r])
        except (ValueError, TypeError) as err:
            raise type(err)(f"replicate {r}: {err}") from None
        out[0][r], out[1][r] = wl.prefix_group, wl.prefix_tokens
    return out


def _valid_block(named):
    """The kernel inputs if every row is a valid :class:`Workload`, checked in one pass; else None.

    The same rules as ``Workload`` (finite sorted arrivals >= 0; whole token counts, prompts
    >= 0, outputs >= 1, priorities 0 or 1, none above 2**53), on the whole block at once: a
    search runs thousands of blocks that are all valid.
    """
    arrival = np.asarray(named["arrival"])
    if arrival.dtype.kind not in "iuf" or not np.isfinite(arrival).all() or \
            (arrival.size and (arrival.min() < 0 or arrival.max() > MAX_ARRIVAL
                               or (np.diff(arrival, axis=1) < 0).any())):
        return None
    counts = []
    for name, lo, hi in (("prompt_tokens", 0, MAX_COUNT), ("output_tokens", 1, MAX_COUNT),
                         ("priority", 0, 1)):
        if name not in named:
            counts.append(np.zeros(arrival.shape, np.int64))
            continue
        a = np.asarray(named[name])
        if a.dtype.kind not in "iuf" or (a.size and (a.min() < lo or a.max() > hi)):
            return None
        if a.dtype.kind == "f" and (~np.isfinite(a) | (a != np.floor(a))).any():
            return None
        counts.append(np.ascontiguousarray(a, dtype=np.int64))
    return (np.ascontiguousarray(arrival, dtype=np.float64), *counts)


def _replicate_rows(arrival, prompt_tokens, output_tokens, priority):
    """Validate 2-D ``(replicate, request)`` workloads row by row, as contiguous kernel inputs."""
    named = {"arrival": arrival, "prompt_tokens": prompt_tokens, "output_tokens": output_tokens}
    if priority is not None:
        named["priority"] = priority
    shapes = {}
    for name, values in named.items():
        a = np.asarray(values)
        if a.ndim != 2:
            raise ValueError(f"{name} must be 2-D (replicate, request), got shape {a.shape}")
        shapes[name] = a.shape
    if len(set(shapes.values())) != 1:
        raise ValueError(f"arrival, prompt_tokens, output_tokens (and priority) must have one "
                         f"shape, got {shapes}")
    rows, n = shapes["arrival"]
    if rows < 1:
        raise ValueError("arrival must hold at least one replicate (row)")
    fast = _valid_block(named)
    if fast is not None:
        return fast
    # something is wrong: validate row by row for a message naming the replicate and the value
    arrays = (np.empty((rows, n)), np.empty((rows, n), np.int64), np.empty((rows, n), np.int64),
              np.empty((rows, n), np.int64))
    pr = None if priority is None else np.asarray(priority)
    for r in range(rows):
        try:
            wl = Workload(np.asarray(arrival)[r], np.asarray(prompt_tokens)[r],
                          np.asarray(output_tokens)[r], None if pr is None else pr[r])
        except (ValueError, TypeError) as err:
            raise type(err)(f"replicate {r}: {err}") from None
        arrays[0][r], arrays[1][r], arrays[2][r], arrays[3][r] = (
            wl.arrival, wl.prompt_tokens, wl.output_tokens, wl.priority)
    return arrays
