"""The batcher specs: static and continuous batching (guide §4.2-4.5), one run each.

``StaticBatcher(batch_size=8).run(workload)`` and
``ContinuousBatcher(max_num_seqs=16).run(workload)`` return an ``xr.Dataset`` with one entry per
request (dimension ``request``): status, admission, first-token and finish times, latency from
arrival and from admission, TTFT, ITL, preemptions; and scalar summaries: makespan, throughput,
latency percentiles (50, 90, 95, 99), the distribution of every inter-token gap, slot
utilisation, padding waste, KV occupancy, rejected and preempted counts, goodput under optional
TTFT/ITL targets, and exact attainment shares against TTFT, per-token ITL and end-to-end targets.

This module holds the specs (fields, checks, the arguments each policy hands its kernel, a
run's size limits) and one run of a workload; the rules, and what a "tick" means, are
:mod:`rooflinekit.batching._reference`'s. Many runs are
:mod:`~rooflinekit.batching.replicates`'s, which calls the batchers; nothing here imports it.

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
from collections.abc import Mapping

import numpy as np
import xarray as xr

from rooflinekit import catalog, parallel, roofline
from rooflinekit._labels import widen
from rooflinekit._validation import check_one_of, real_number, whole_number
from rooflinekit.batching import _reference
from rooflinekit.batching._kernel_calls import (_allocate, _check_errors, _each_row, _itl_limit,
                                                _targets)
from rooflinekit.batching._schema import OUTPUT_NAMES, RECV_PROMPT_WEIGHT, UNLIMITED
from rooflinekit.batching.clock import (KV_POOLS, _resolve_clock, _timing_for,
                                        replica_kv_budget, replica_kv_window,
                                        replica_state_tokens, vllm_block_size)
from rooflinekit.batching.results import _single_dataset
from rooflinekit.batching.speculative import Speculative
from rooflinekit.profiles import ENGINE_CHOICES, resolve_engine, split_engine_name
from rooflinekit.workloads import coerce_workload

__all__ = ["StaticBatcher", "ContinuousBatcher", "SIMULATION_MEMORY_LIMIT",
           "SIMULATION_WORK_LIMIT", "RUN_BYTES_PER_REQUEST", "MAX_BLOCK_SIZE", "MAX_RECV_INTERVAL",
           "MAX_STREAM_INTERVAL", "MAX_SCHEDULER_STEPS",
           "RECV_PROMPT_WEIGHT", "run_memory_bytes"]

#: Most bytes one Monte Carlo block (all replicates in process, or one ``chunks`` task) may hold
#: for its draws and kernel outputs, and the summaries of the whole run: 2 GiB. A single run
#: (:meth:`ContinuousBatcher.run`) is held to it for the static kernel's scratch.
SIMULATION_MEMORY_LIMIT = 2 * 2**30

#: Bytes one run (:meth:`ContinuousBatcher.run`, :meth:`StaticBatcher.run`) holds per request at
#: its peak, beyond the workload it is given: the kernel's outputs and scratch, the per-request
#: times derived from them and the result Dataset (status labels included). Measured with
#: ``tracemalloc`` on 500,000 requests: 296 continuous, 344 static, 502 paged with prefix
#: caching and every target; rounded up, so that the estimate is never below the peak.
RUN_BYTES_PER_REQUEST = 512

#: Bytes the continuous kernel holds per shared-prefix group (its blocks, references, residency
#: and last use), counted up to the largest group number a workload names.
_BYTES_PER_PREFIX_GROUP = 8 + 1 + 8 + 8

#: Largest KV block a paged batcher takes [tokens]: 2**20, longer than any model's context (the
#: paged kernel keeps 8 bytes of scratch per token of a block).
MAX_BLOCK_SIZE = 2**20

#: Largest receive interval a continuous batcher takes [steps]: 2**20 (SGLang's recipes use up
#: to 30; the kernel's counter stays far inside int64).
MAX_RECV_INTERVAL = 2**20

#: Largest stream interval a continuous batcher takes [tokens]: 2**20, longer than any reply.
MAX_STREAM_INTERVAL = 2**20

#: Most decode steps a multi-step scheduling window may hold (``num_scheduler_steps``): 1,024,
#: beyond the 8 to 16 vLLM's V0 engine was run with; a window's first step sums this many
#: block phases.
MAX_SCHEDULER_STEPS = 1024

#: Most simulated token-steps (output tokens summed over the runs) one call may do: 1e10,
#: minutes on two cores at the kernels' worst (one sequence, one token a step).
SIMULATION_WORK_LIMIT = 1e10


def run_memory_bytes(n_requests, *, block_size=None, prefix_groups=0, longest_output=0) -> float:
    """Bytes one run of ``n_requests`` requests holds at its peak, estimated before any work.

    :data:`RUN_BYTES_PER_REQUEST` per request (outputs, scratch, derived times, the result),
    plus the paged kernel's scratch of 8 bytes per token of a ``block_size`` block, the prefix
    table of ``prefix_groups`` groups (the largest group number + 1) and the static kernel's 8
    bytes per token of the ``longest_output``. The workload's own arrays are the caller's.
    """
    n = float(whole_number("n_requests", widen(n_requests), lo=0))
    return (n * RUN_BYTES_PER_REQUEST + 8.0 * float(block_size or 0)
            + float(prefix_groups) * _BYTES_PER_PREFIX_GROUP + 8.0 * float(longest_output))


def _resolve_specs(batcher):
    """Look up catalogue names given for ``model``/``gpu``."""
    if isinstance(batcher.model, str):
        object.__setattr__(batcher, "model", catalog.model(batcher.model))
    if isinstance(batcher.gpu, str):
        object.__setattr__(batcher, "gpu", catalog.gpu(batcher.gpu))


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
        ``attrs["model_quality"]`` carry that engine's ``label``. A name picks a shipped
        profile (``"vllm"``, ``"sglang"``, ``"trtllm"``) or the bound (``"ideal"``:
        :data:`rooflinekit.IDEAL`). Default ``None``: on the roofline clock, the vLLM
        profile of ``gpu`` (:func:`rooflinekit.engine_profile`). Checked at construction; the
        tick clock, which times no roofline step, refuses one."""


def _with_clock_parameters(cls):
    """The parameters both batchers share: ``{clock_parameters}`` in the docstring becomes
    :data:`_CLOCK_PARAMETERS`."""
    cls.__doc__ = cls.__doc__.replace("{clock_parameters}", _CLOCK_PARAMETERS)
    return cls


def _store(spec, name: str, value):
    """Keep a checked field as the checked value (a whole float or numpy integer as ``int``, a
    float16 as ``float``), so no narrow or mistyped number reaches numba.
    """
    if value is not None and type(getattr(spec, name)) is not type(value):
        object.__setattr__(spec, name, value)
    return value


def _whole(spec, name: str, **rules):
    """The field ``name`` checked as a whole number (widened first) and stored as ``int``."""
    return _store(spec, name, whole_number(name, widen(getattr(spec, name)), **rules))


def _real(spec, name: str, **rules):
    """The field ``name`` checked as a real number (widened first) and stored as ``float``."""
    return _store(spec, name, real_number(name, widen(getattr(spec, name)), **rules))


class _Batcher:
    """What both batchers share: validation and timing of the clock, and the kernel calls."""

    def _check_clock(self):
        """Check ``tp`` and ``engine``, look up specs and settle the clock (deriving the step cost,
        so that a bad spec fails here), before any run.
        """
        _whole(self, "tp", lo=1)
        engine = self.engine
        if not (engine is None or isinstance(engine, (str, roofline.Engine))
                or (callable(getattr(engine, "engine_for", None))
                    and not isinstance(engine, type))):
            hint = " (build rooflinekit.Engine(**options) from a mapping of options)" \
                if isinstance(engine, Mapping) else ""
            raise TypeError(f"engine must be a rooflinekit.Engine, a "
                            f"rooflinekit.calibrate.Calibration, an engine name "
                            f"({', '.join(ENGINE_CHOICES)}) or None, got "
                            f"{type(engine).__name__}{hint}")
        if isinstance(engine, str):
            split_engine_name(engine)
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

    def _check_run_memory(self, wl, memory_limit):
        """Refuse, before any allocation, a run whose estimate (:func:`run_memory_bytes`) is
        above ``memory_limit``: the way out is fewer requests, or a higher limit."""
        groups = wl.prefix_group
        paged = getattr(self, "admission", None) == "paged"
        table = float(np.max(groups)) + 1.0 if self._tiered and groups.size else 0.0
        block = self._block_size() if paged else None
        held = run_memory_bytes(wl.n_requests, block_size=block, prefix_groups=table)
        if run_memory_bytes(0, prefix_groups=table) > memory_limit:
            # the prefix table alone: fewer requests would not help
            raise ValueError(f"prefix group numbers up to {table - 1:,.0f} would need a prefix "
                             f"table of {run_memory_bytes(0, prefix_groups=table) / 2**30:.3g} "
                             f"GiB, above memory_limit={memory_limit / 2**30:g} GiB; number "
                             f"the prefix groups from 0 (SharedPrefix(groups=) at most about "
                             f"{memory_limit // _BYTES_PER_PREFIX_GROUP:,.0f})")
        if held > memory_limit:
            most = int(max(0.0, memory_limit - (held - wl.n_requests * RUN_BYTES_PER_REQUEST))
                       // RUN_BYTES_PER_REQUEST)
            raise ValueError(f"this run would hold about {held / 2**30:.3g} GiB ({wl.n_requests:,} "
                             f"requests × {RUN_BYTES_PER_REQUEST} bytes of outputs and scratch"
                             + (f", plus blocks of {block:,} tokens" if paged else "")
                             + f"), above memory_limit={memory_limit / 2**30:g} GiB; simulate "
                             f"fewer requests (at most about {most:,}), or raise memory_limit")

    def _engine(self):
        """The :class:`~rooflinekit.Engine` of the mixed step: ``engine`` itself, or the one a
        calibration gives for this model and GPU (its knob set, where it has several)."""
        engine = resolve_engine(self.engine, self.gpu)
        return roofline.engine_for(engine, "step", model=self.model, gpu=self.gpu)

    def _timing(self):
        # the tick clock reads no engine: a calibration is not asked for one
        engine = None if self.clock == "tick" else self._engine()
        spec = getattr(self, "speculative", None)
        draft = None if spec is None else spec.draft
        layout = (getattr(self, "pp", 1), getattr(self, "ep", 1))
        return _timing_for(self.clock, self.model, self.gpu, self.tp, engine, draft, layout)

    def _simulate(self, wl, timing, targets=(None, None, None), arrived=None, clients=0):
        """The kernel's outputs for one workload (a one-replicate :meth:`_run_many`)."""
        out = _allocate(1, wl.n_requests)
        self._run_many(timing, wl.arrival[None], wl.prompt_tokens[None], wl.output_tokens[None],
                       wl.priority[None], out, targets, parallel=False,
                       prefix=(wl.prefix_group[None], wl.prefix_tokens[None]),
                       arrived=None if arrived is None else arrived[None],
                       clients=clients)
        return out

    def _run_many(self, timing, arrival, prompt, output, priority, out, targets,
                  parallel=True, prefix=None, arrived=None, seeds=None, gains=None,
                  clients=0):
        """Run the kernel on 2-D ``(replicate, request)`` workloads into ``out``; ``prefix``,
        ``arrived``, ``seeds`` (of the acceptance draws) and ``gains`` (drawn) default to none;
        ``clients`` > 0: the queue is a closed-loop client's that keeps that many requests in
        flight (a continuous batcher's receive interval gates what it has sent), 0 an open
        loop.
        """
        if self.policy == "continuous" and self._kv_budget() is None and prompt.size:
            # "unlimited" is UNLIMITED tokens to the kernel: true only while every request
            # of a row fits in it at once (with its recurrent state)
            held = float(np.max(np.sum(prompt, axis=-1, dtype=np.float64)
                                + np.sum(output, axis=-1, dtype=np.float64))
                         + prompt.shape[-1] * float(self._state_tokens()))
            if held > UNLIMITED:
                raise ValueError(f"an unlimited KV budget holds at most 2**60 = {UNLIMITED:,} "
                                 f"tokens; these requests hold up to {held:.3g} in all: give "
                                 f"kv_budget_tokens, or fewer or shorter requests")
        from rooflinekit.batching import _kernels  # numba: imported on the first run
        run = self._kernel(timing.tick)
        arrival, prompt, output, priority = _kernels.kernel_inputs(arrival, prompt, output,
                                                                   priority)
        params = self._parameters(clients)
        # the kernel counts the inter-token gaps within the ITL target; none: every gap is met
        itl = _itl_limit(targets[1])
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
            e2e_target=None, tpot_target=None, work_limit=SIMULATION_WORK_LIMIT,
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
        tpot_target : float, optional
            Time per output token target [tick or s]: ``tpot_attainment`` is the share of the
            requests with two or more output tokens completed with their TPOT (per-request
            ``itl``, ``(finish - first_token) / (output_tokens - 1)``) within it, and a request
            counts toward ``goodput`` only if its TPOT meets it.
        work_limit, memory_limit : float
            Most token-steps (output tokens) and bytes the run may take; default
            :data:`SIMULATION_WORK_LIMIT` (1e10) and :data:`SIMULATION_MEMORY_LIMIT` (2 GiB). A run
            above either is refused before the kernel, with the estimate: the bytes are
            :func:`run_memory_bytes` (:data:`RUN_BYTES_PER_REQUEST` per request, the paged
            kernel's block scratch and the prefix table) and the static kernel's scratch.
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
        arrived = self._arrived_kv(wl.prompt_tokens, arrived_kv_tokens)
        targets = _targets(ttft_target, itl_target, e2e_target, tpot_target)
        self._check_size(wl.output_tokens,
                         real_number("work_limit", work_limit, lo=0, lo_open=True, allow_inf=True),
                         real_number("memory_limit", memory_limit, lo=0, lo_open=True,
                                     allow_inf=True))
        self._check_run_memory(wl, real_number("memory_limit", memory_limit, lo=0, lo_open=True,
                                               allow_inf=True))
        timing = self._timing()
        out = self._simulate(wl, timing, targets, arrived)
        return _single_dataset(wl, out, self, timing, targets)

    def _arrived_kv(self, prompt_tokens, arrived_kv_tokens):
        """``arrived_kv_tokens`` checked against ``prompt_tokens`` (a workload's, or the rows of
        :func:`~rooflinekit.batching.run_replicates`): int64 of their shape, or None."""
        if arrived_kv_tokens is None:
            return None
        if not self._tiered:
            raise ValueError(f"arrived_kv_tokens is an input of continuous batching, not of "
                             f"{self.policy} batching")
        a = np.asarray(arrived_kv_tokens)
        shape = np.shape(prompt_tokens)
        if a.shape != shape or not (a.dtype.kind in "iu" or a.size == 0):
            what = "one per request" if len(shape) == 1 else "of the rows' shape"
            raise ValueError(f"arrived_kv_tokens must be whole numbers, {what} "
                             f"(shape {shape}), got shape {a.shape} of {a.dtype}")
        a = np.ascontiguousarray(a, dtype=np.int64)
        if np.any(a < 0) or np.any(a > prompt_tokens):
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
        _whole(self, "batch_size", lo=1)
        self._check_clock()

    @property
    def policy(self) -> str:
        return "static"

    def _kernel(self, tick):
        from rooflinekit.batching import _kernels  # numba: imported on the first run
        return _kernels.static_run                 # one kernel for both clocks

    def _parameters(self, clients=0):
        return (self.batch_size,)      # a static batch admits no queue: nothing to gate

    def _slots(self):
        return self.batch_size

    def _kv_budget(self):
        return None

    def reference(self, workload, itl_target=None, tokens=None) -> dict:
        """The same simulation by :func:`rooflinekit.batching._reference.simulate_static`, for tests
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
        KV cache budget [tokens]. ``None``: derived from ``model``, ``gpu``, ``tp`` and
        ``reserve`` (or ``gpu_memory_utilization``) by :func:`replica_kv_budget` if a model is
        given, else unlimited (the kernel's 2**60 tokens: a run whose requests could hold more
        at once is refused). With ``speculative`` and ``model``, a draft model's KV shares it
        (:meth:`Speculative.kv_tokens`).
    admission : {"reserve", "paged"}
        "reserve" (the guide's lab): admit only if the final length (prompt + output) of every
        admitted request fits the budget; FIFO. "paged" (vLLM): KV in blocks of ``block_size``
        tokens allocated as sequences grow, with recompute preemption of the most recently admitted
        sequence when a step needs a block that is not free.
    block_size : int
        Paged mode: tokens per KV block [tokens], in [1, :data:`MAX_BLOCK_SIZE`] (vLLM's
        default 16). Under vLLM's rule (``gpu_memory_utilization``) a hybrid model runs in
        vLLM's larger block where this one is smaller (:func:`vllm_block_size`).
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
        Paged admission only: a shared prompt prefix's whole blocks
        (:class:`~rooflinekit.workloads.SharedPrefix`, ``Workload.prefix_group``) are held once,
        a request whose prefix is resident skips prefilling it, and an unused prefix stays
        cached until its blocks are needed (LRU: ``_reference``, "Prefix caching"). Default False.
    mixed_prefill : bool, keyword-only
        ``True`` (default; vLLM V1, TensorRT-LLM): a step carries the decode tokens and the
        prefill slices together. ``False`` (SGLang's default, ``enable_mixed_chunk`` off; vLLM's
        V0 engine): a step with prompt tokens to process carries only those, and the decoding
        sequences wait for the next step without any (their gaps span the wait). Not with
        ``speculative``.
    speculative : Speculative, optional, keyword-only
        Speculative decoding (:class:`~rooflinekit.batching.Speculative`): every decode step
        drafts and verifies, each sequence gaining its drawn 1 to ``draft_tokens + 1`` tokens;
        a draft model with another vocabulary or more layers than ``model`` is refused.
        Default None: plain decoding, one token a step.
    pp, ep : int, keyword-only
        Pipeline- and expert-parallel degrees of the replica [1], >= 1, checked by
        :func:`rooflinekit.parallel.check_layout` (``tp × pp`` GPUs; needs ``model`` and
        ``gpu``). On the roofline clock a step is
        :func:`rooflinekit.roofline.layout_decode_step_time`'s with ``micro_batches=1`` (the
        stages in turn, the hand-offs and the all-to-all; prefill alone:
        :func:`~rooflinekit.roofline.layout_prefill_time`); interleaved micro-batches and
        unequal stages are not modelled. The derived KV budget is one GPU's
        (:func:`rooflinekit.parallel.layout_memory`), without a sliding window's savings: give
        such a model ``kv_budget_tokens``. Default 1: one tensor-parallel group.
    model, gpu : ModelShape, GPU or catalogue name, optional
        Derive the KV budget and, in roofline mode, time each step.
    reserve : float
        Working-space reserve for the derived KV budget, fraction of memory left after weights,
        in [0, 1) (the guide's rule).
    gpu_memory_utilization : float, optional, keyword-only
        Derive the KV budget by vLLM's rule instead, this share of each GPU's memory for
        weights and KV, in (0, 1] (:func:`replica_kv_budget`, the rule :func:`rooflinekit.plan`
        sizes replicas by). Default ``None``: the guide's ``reserve`` rule.
    state_tokens_per_sequence : int or None, keyword-only
        A hybrid model's recurrent state (linear-attention and Mamba layers) in tokens of the
        KV budget [tokens], >= 0, which every running sequence holds beside its context
        (:mod:`rooflinekit.batching._reference`, "Recurrent state"). ``None`` (the default):
        :func:`replica_state_tokens` of ``model`` by the budget's rule (0 without a model, or
        for a model without recurrent layers).
    window_paging : bool, keyword-only
        Paged admission of a ``model`` with sliding-window (or chunked-local) layers: ``True``
        (default) holds them as ``kv_pool``'s engine does (:func:`replica_kv_window`;
        ``_reference``, "Sliding-window layers"); ``False`` holds every layer's whole context
        (vLLM's ``--disable-hybrid-kv-cache-manager``). Not read without paged admission or a
        model. With ``speculative`` a step's gained tokens take their blocks in units as one
        token's do (a draft model's KV shares the budget as without windows). A ``pp`` stage
        takes the whole model's units (its layers interleave the kinds as the model does).
    kv_pool : {"vllm", "sglang"}, keyword-only
        Whose pooling of such a model's KV: vLLM's hybrid KV-cache manager (default: a sliding
        layer's blocks freed once out of its window) or SGLang's full pool beside a window pool
        of 0.8 its tokens.
    recv_interval : int, keyword-only
        SGLang's ``--scheduler-recv-interval`` [steps], >= 1: new requests are taken in only at
        a receive step, one whose preceding steps since the last weigh ``recv_interval`` (a
        decode step 1, a step with prompt tokens :data:`RECV_PROMPT_WEIGHT`), or when nothing
        runs (``_reference``, "Receive interval"). Under :func:`run_replicates`' closed loop the
        queue holds the client's requests too, each admitted once the server has taken it in
        (sent, and a receive step since). Default 1:
        every step (SGLang's and every other engine's default).
    stream_interval : int, keyword-only
        vLLM's and SGLang's ``--stream-interval`` [tokens], from 1 to
        :data:`MAX_STREAM_INTERVAL`: the server sends a request's first token at once, then
        each time ``stream_interval`` tokens have gathered since its last send, and its last
        token at its end (``_reference``, "Stream interval"). The inter-token gaps
        (``token_itl`` statistics, ``itl`` targets) are then those between sends, as a client
        times them; TTFT and TPOT are unchanged. Default 1: every token as it is made. Not
        with ``speculative``.
    num_scheduler_steps : int, keyword-only
        vLLM's V0 multi-step scheduling (``--num-scheduler-steps``, vLLM 0.6.0 to 0.9; its V1
        engine has none), from 1 to :data:`MAX_SCHEDULER_STEPS`: the decodes run in windows of
        this many steps that the scheduler plans once, taking their KV blocks at the start.
        Inside a window nothing is admitted or retired: a sequence whose last token comes
        early keeps its slot (its extra tokens made, never sent) until the window ends, and
        its tokens reach the client together at each window's end; prefill steps run alone
        between windows (``_reference``, "Scheduler steps"). So a request's finish, TPOT and
        E2E include the rest of its last window, and the gaps (``token_itl``, ``itl``
        targets) are those between sends. Needs ``mixed_prefill=False`` (vLLM 0.6 ran it
        without chunked prefill); not with ``speculative``, ``stream_interval`` or
        sliding-window paging. Default 1: every step scheduled.
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
    mixed_prefill: bool = dataclasses.field(default=True, kw_only=True)
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
    state_tokens_per_sequence: int | None = dataclasses.field(default=None, kw_only=True)
    window_paging: bool = dataclasses.field(default=True, kw_only=True)
    kv_pool: str = dataclasses.field(default="vllm", kw_only=True)
    recv_interval: int = dataclasses.field(default=1, kw_only=True)
    stream_interval: int = dataclasses.field(default=1, kw_only=True)
    num_scheduler_steps: int = dataclasses.field(default=1, kw_only=True)

    _tiered = True

    def __post_init__(self):
        _whole(self, "max_num_seqs", lo=1, allow_none=True)
        _whole(self, "kv_budget_tokens", lo=0, allow_none=True)
        check_one_of("admission", self.admission, ("reserve", "paged"))
        if _whole(self, "block_size", lo=1) > MAX_BLOCK_SIZE:
            raise ValueError(f"block_size must be in [1, {MAX_BLOCK_SIZE:,}] tokens (2**20, "
                             f"longer than any context); got {self.block_size:,}")
        mnbt = _whole(self, "max_num_batched_tokens", lo=1, allow_none=True)
        if mnbt is not None:
            if self.max_num_seqs is None:
                raise ValueError("max_num_batched_tokens needs a finite max_num_seqs (every "
                                 "decoding sequence takes one token of the step budget)")
            if mnbt < self.max_num_seqs:
                raise ValueError(f"max_num_batched_tokens must be >= max_num_seqs "
                                 f"({self.max_num_seqs}), got {mnbt}")
        _whole(self, "interactive_cap", lo=1, allow_none=True)
        _real(self, "reserve", lo=0, hi=1, hi_open=True)
        _real(self, "gpu_memory_utilization", lo=0, hi=1, lo_open=True, allow_none=True)
        _whole(self, "state_tokens_per_sequence", lo=0, allow_none=True)
        if not isinstance(self.prefix_caching, (bool, np.bool_)):
            raise TypeError(f"prefix_caching must be True or False, got "
                            f"{type(self.prefix_caching).__name__}")
        if self.prefix_caching and self.admission != "paged":
            raise ValueError(f"prefix_caching needs admission='paged' (prefixes are shared in "
                             f"blocks), got admission={self.admission!r}")
        if not isinstance(self.window_paging, (bool, np.bool_)):
            raise TypeError(f"window_paging must be True or False, got "
                            f"{type(self.window_paging).__name__}")
        check_one_of("kv_pool", self.kv_pool, KV_POOLS)
        _whole(self, "recv_interval", lo=1, hi=MAX_RECV_INTERVAL)
        _whole(self, "stream_interval", lo=1, hi=MAX_STREAM_INTERVAL)
        if not isinstance(self.mixed_prefill, (bool, np.bool_)):
            raise TypeError(f"mixed_prefill must be True or False, got "
                            f"{type(self.mixed_prefill).__name__}")
        if self.speculative is not None and not self.mixed_prefill:
            raise ValueError("mixed_prefill=False with speculative decoding is not modelled: "
                             "give mixed_prefill=True with speculative")
        if self.speculative is not None and not isinstance(self.speculative, Speculative):
            raise TypeError(f"speculative must be a rooflinekit.batching.Speculative or None, "
                            f"got {type(self.speculative).__name__}")
        if self.speculative is not None and self.stream_interval > 1:
            raise ValueError(f"stream_interval={self.stream_interval} with speculative decoding "
                             f"is not modelled: give stream_interval=1 with speculative")
        if _whole(self, "num_scheduler_steps", lo=1, hi=MAX_SCHEDULER_STEPS) > 1:
            steps = self.num_scheduler_steps
            if self.mixed_prefill:
                raise ValueError(f"num_scheduler_steps={steps} needs mixed_prefill=False (vLLM's "
                                 f"multi-step scheduling ran prefill steps apart)")
            if self.speculative is not None or self.stream_interval > 1:
                raise ValueError(f"num_scheduler_steps={steps} with speculative decoding or "
                                 f"stream_interval > 1 is not modelled: give "
                                 f"num_scheduler_steps=1 with either")
        _whole(self, "pp", lo=1)
        _whole(self, "ep", lo=1)
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
        if self.num_scheduler_steps > 1 and self._kv_window()[1] > 0:
            raise ValueError(f"num_scheduler_steps={self.num_scheduler_steps} with paged "
                             f"sliding-window layers is not modelled: give window_paging=False "
                             f"or num_scheduler_steps=1")
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
                                       block_size=self._block_size(),
                                       speculative=self.speculative, pp=self.pp, ep=self.ep)
        if self.speculative is not None and self.model is not None:
            budget = self.speculative.kv_tokens(self.model, budget)   # a draft model's KV
        return budget

    def _state_tokens(self):
        """``state_tokens_per_sequence``, or derived from the model (:func:`replica_state_tokens`);
        0 without a model [tokens].
        """
        if self.state_tokens_per_sequence is not None:
            return int(self.state_tokens_per_sequence)
        if self.model is None:
            return 0
        return replica_state_tokens(self.model, self.gpu, self.tp,
                                    gpu_memory_utilization=self.gpu_memory_utilization,
                                    block_size=self._block_size(), speculative=self.speculative,
                                    pp=self.pp, ep=self.ep, prefix_caching=self.prefix_caching)

    def _kv_window(self):
        """The kernels' ``kv_window`` (:func:`replica_kv_window`), or ``(1, 0, UNLIMITED, 1)``:
        every layer holds the whole context."""
        if not self.window_paging or self.admission != "paged" or self.model is None:
            return 1, 0, UNLIMITED, 1
        return replica_kv_window(self.model, self._block_size(), pool=self.kv_pool)

    def _block_size(self):
        """The block size the run holds KV in [tokens]: ``block_size``, or under vLLM's rule
        (paged, ``gpu_memory_utilization``) vLLM's block for an MLA model and, on one group,
        for a hybrid model (:func:`vllm_block_size`)."""
        if (self.admission != "paged" or self.gpu_memory_utilization is None
                or self.model is None or self.gpu is None
                or (self.pp > 1 or self.ep > 1) and self.model.is_hybrid):
            return self.block_size
        return vllm_block_size(self.model, self.gpu, self.tp, block_size=self.block_size)

    def _slots(self):
        return self.max_num_seqs

    def _args(self, budget, clients=0):
        """The kernel's eleven parameters for a KV ``budget`` [tokens] (None: unlimited): slots,
        budget, recurrent state per sequence, sliding-window paging, paged, block size, token
        budget, interactive cap, prefix caching, draft tokens, and how requests are taken in:
        the receive interval, the requests a closed-loop client keeps in flight (``clients``;
        0: an open loop), the engine's time per request (``request_overhead`` [s]), the
        stream interval and the scheduler steps."""
        return (UNLIMITED if self.max_num_seqs is None else self.max_num_seqs,
                UNLIMITED if budget is None else budget,
                self._state_tokens(), self._kv_window(),
                self.admission == "paged", self._block_size(),
                UNLIMITED if self.max_num_batched_tokens is None else self.max_num_batched_tokens,
                UNLIMITED if self.interactive_cap is None else self.interactive_cap,
                bool(self.prefix_caching),
                0 if self.speculative is None else self.speculative.draft_tokens,
                (int(self.recv_interval), int(clients), self._timing().request_overhead,
                 int(self.stream_interval), int(self.num_scheduler_steps)))

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
        return _kernels.continuous_kernel(tick, speculative=self.speculative is not None,
                                          separate=not self.mixed_prefill)

    def _parameters(self, clients=0):
        return self._args(self._kv_budget(), clients)

    def reference(self, workload, admission=None, trace=None, itl_target=None,
                  tokens=None, arrived_kv_tokens=None, clients=0) -> dict:
        """The same simulation by :func:`rooflinekit.batching._reference.simulate_continuous`,
        for tests; ``admission`` may also be ``"prompt"`` there: the guide's failure mode;
        ``clients`` > 0: the queue is a closed-loop client's that keeps that many in flight.
        """
        wl = coerce_workload(workload)
        slots, budget, state, window, _, block, mnbt, cap, caching, k, recv = self._args(
            self._kv_budget(), clients)
        gain, offset = self._gains(wl.output_tokens[None])
        return _reference.simulate_continuous(
            wl.arrival, wl.prompt_tokens, wl.output_tokens, wl.priority, max_num_seqs=slots,
            kv_budget=budget, admission=admission or self.admission, block_size=block,
            max_num_batched_tokens=mnbt, interactive_cap=cap,
            clock=self._timing().reference_clock, itl_target=_itl_limit(itl_target), trace=trace,
            tokens=tokens, prefix_group=wl.prefix_group, prefix_tokens=wl.prefix_tokens,
            prefix_caching=caching,
            arrived_kv_tokens=self._arrived_kv(wl.prompt_tokens, arrived_kv_tokens),
            draft_tokens=k, gains=(gain[0], offset[0]), state_tokens_per_sequence=state,
            mixed_prefill=self.mixed_prefill, kv_window=window, recv_interval=recv[0],
            clients=recv[1], request_overhead=recv[2], stream_interval=recv[3],
            num_scheduler_steps=recv[4])


def _kernel_outputs(batcher, workload, itl_target=None, arrived_kv_tokens=None,
                    clients=0) -> dict:
    """The kernel's raw outputs for one workload, keyed like the reference's (for tests)."""
    wl = coerce_workload(workload)
    out = batcher._simulate(wl, batcher._timing(), (None, itl_target, None),
                            batcher._arrived_kv(wl.prompt_tokens, arrived_kv_tokens), clients)
    return {k: a[0] for k, a in zip(OUTPUT_NAMES, out)}
