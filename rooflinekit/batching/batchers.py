"""Static and continuous batching simulators (guide §4.2-4.5).

``StaticBatcher(batch_size=8).run(workload)`` and
``ContinuousBatcher(max_num_seqs=16).run(workload)`` return an ``xr.Dataset`` with one entry per
request (dimension ``request``): status, admission, first-token and finish times, latency from
arrival and from admission, TTFT, ITL, preemptions; and scalar summaries: makespan, throughput,
latency percentiles, slot utilisation, padding waste, KV occupancy, rejected and preempted counts,
goodput under optional TTFT/ITL targets.
:func:`monte_carlo` runs many replicates of a :class:`~rooflinekit.workloads.WorkloadSpec` across
parameter dimensions and returns the summaries with a ``replicate`` dimension.

The rules are stated once, in :mod:`rooflinekit._reference` (which also pins down what a "tick"
means); the numba kernels in :mod:`rooflinekit._kernels` implement them and are tested to agree
exactly. This module validates, draws random numbers only through :mod:`rooflinekit.workloads`
generators, allocates the outputs and calls a kernel; :mod:`rooflinekit._batching_results` derives
the per-request times and the summaries from the kernel's outputs and labels the result.

Clocks
------
``clock="tick"`` (the guide's lab): one tick per step; times in ticks. ``clock="roofline"``: each
step lasts what the roofline model (:func:`rooflinekit.roofline.mixed_step_time`) says for that
step's batch on ``model`` + ``gpu`` × ``tp``: its decode tokens, prefill tokens and KV read; times
in seconds. Arrival times are in the clock's unit.

Latency definitions
-------------------
``latency`` = finish − arrival (what a user waits); ``service_latency`` = finish − first admission
(time in the batch, no queueing). The guide's 337 / 68 ticks are mean *service* latencies
(``guide/NOTES.md``).

References
----------
.. [1] Serving-capacity guide §4.2-4.5, §3.3, §11 (tiers); ``guide/NOTES.md``.
.. [2] Yu et al., Orca, OSDI 2022; Kwon et al., PagedAttention, SOSP 2023; Agrawal et al.,
       Sarathi-Serve, OSDI 2024.
"""

from __future__ import annotations

import dataclasses
import itertools
import numbers
from collections.abc import Mapping

import numpy as np
import xarray as xr

from rooflinekit import dims
from rooflinekit.batching._reference import STAT_NAMES, UNLIMITED

# Result assembly lives in _batching_results; its public constants are re-exported here.
from rooflinekit.batching.results import (
    _POLICY,
    _TIER,
    REASON_KV_BUDGET,
    STATUS_COMPLETED,
    STATUS_REJECTED,
    TIERS,
    _single_dataset,
    _summaries,
    _summary_grid,
    _target_attrs,
)
from rooflinekit.workloads import Workload, WorkloadSpec, coerce_workload

__all__ = ["StaticBatcher", "ContinuousBatcher", "simulate", "monte_carlo", "replicate_seed",
           "STATUS_COMPLETED", "STATUS_REJECTED", "REASON_KV_BUDGET", "TIERS"]


# --- validation helpers -------------------------------------------------------------------------


def _count(name, value, lo=1, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        none = " or None" if allow_none else ""
        raise TypeError(f"{name} must be a whole number >= {lo}{none}, "
                        f"got {type(value).__name__}")
    if not float(value).is_integer():
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if value < lo:
        raise ValueError(f"{name} must be >= {lo}, got {value!r}")
    return int(value)


def _choice(name, value, allowed):
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")
    return value


def _target(name, value):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value >= 0:
        raise ValueError(f"{name} must be a number >= 0 or None, got {value!r}")
    return float(value)


class _Timing:
    """What the kernels need to tell time: the tick clock, or the roofline model's coefficients."""

    def __init__(self, clock, model, gpu, tp, efficiency):
        from rooflinekit.batching import _kernels
        self.clock = clock
        self.tick = clock == "tick"
        if self.tick:
            self.kernel_clock = _kernels.TICK_CLOCK
            self.coef = np.zeros(1)
            self.reference_clock = None
            self.units = "tick"
            return
        from rooflinekit import roofline
        cost = roofline.step_cost_coefficients(model, gpu, tp=tp, **(efficiency or {}))
        fields = type(cost)._fields
        self.coef = np.array([float(c) for c in cost], dtype=np.float64)
        self.kernel_clock = _kernels.roofline_clock(
            roofline.mixed_step_time_kernel, roofline.kv_tokens_read_kernel,
            roofline.prefill_context_tokens_kernel, len(fields),
            fields.index("full_attention_fraction"), fields.index("sliding_window"))
        self.reference_clock = _RooflineClock(roofline, tuple(float(c) for c in cost),
                                              cost.full_attention_fraction, cost.sliding_window)
        self.units = "s"


class _RooflineClock:
    """The roofline clock in plain Python, for the reference simulator."""

    def __init__(self, roofline, coef, full_attention_fraction, sliding_window):
        self._r, self._coef = roofline, coef
        self._fa, self._sw = full_attention_fraction, sliding_window

    def step_time(self, n_decode, n_prefill_tokens, kv_tokens_read, prefill_context_tokens):
        return self._r.mixed_step_time_kernel(*self._coef, n_decode, n_prefill_tokens,
                                              kv_tokens_read, prefill_context_tokens)

    def kv_read(self, context):
        return self._r.kv_tokens_read_kernel(context, self._fa, self._sw)

    def chunk_pairs(self, chunk, cached):
        return self._r.prefill_context_tokens_kernel(chunk, cached, self._fa, self._sw)


def _resolve_specs(batcher):
    """Look up catalogue names given for ``model``/``gpu``."""
    from rooflinekit import catalog
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
    _choice("clock", clock, ("tick", "roofline"))
    if clock == "roofline" and model is None:
        raise ValueError("clock='roofline' needs model and gpu")
    return clock


# --- batchers -----------------------------------------------------------------------------------


class _Batcher:
    """What both batchers share: timing from their clock, and ``run`` over one workload."""

    def _timing(self):
        return _Timing(self.clock, self.model, self.gpu, self.tp, self.efficiency)

    def run(self, workload=None, *, arrival=None, prompt_tokens=None, output_tokens=None,
            priority=None, ttft_target=None, itl_target=None) -> xr.Dataset:
        """Simulate a :class:`~rooflinekit.workloads.Workload` (or a mapping, or the arrays).

        Parameters
        ----------
        workload : Workload or mapping, optional
            Or pass ``arrival`` [tick or s], ``prompt_tokens`` [tokens], ``output_tokens``
            [tokens] and optionally ``priority`` (0 interactive, 1 batch; static batching
            ignores it).
        ttft_target, itl_target : float, optional
            Goodput targets [tick or s]: a completed request counts toward ``goodput`` if its TTFT
            and its mean inter-token latency meet them.

        Returns
        -------
        xarray.Dataset
            Per-request variables along ``request`` and scalar summaries (see module docstring).
        """
        wl = coerce_workload(workload, arrival, prompt_tokens, output_tokens, priority)
        targets = (_target("ttft_target", ttft_target), _target("itl_target", itl_target))
        timing = self._timing()
        out = self._simulate(wl, timing)
        return _single_dataset(wl, out, self, timing, targets)


@dataclasses.dataclass(frozen=True)
class StaticBatcher(_Batcher):
    """Static batching: run a batch of up to ``batch_size`` requests to completion, then the next.

    Parameters
    ----------
    batch_size : int
        Requests per batch [1], >= 1.
    model, gpu : ModelShape, GPU or catalogue name, optional
        Roofline mode: time each step on ``gpu`` × ``tp`` for ``model``.
    tp : int
        Tensor-parallel degree [1].
    clock : {"tick", "roofline"}, optional
        Default "tick" without a model, "roofline" with one.
    efficiency : dict, optional
        Efficiency factors passed to :func:`rooflinekit.roofline.step_cost_coefficients`.

    Notes
    -----
    A batch starts as soon as the previous one ends, with whatever has arrived (or at the next
    arrival if nothing has); every member finishes when the longest does, ``start + max(output)``
    ticks (guide §4.2, §8 step 5). ``padding_slot_steps`` counts the slot-steps members spend
    finished while the batch runs on.

    References
    ----------
    .. [1] Serving-capacity guide §4.2; ``guide/NOTES.md`` (1,220 ticks, 336.67 mean service
           latency on :func:`rooflinekit.workloads.guide_workload` with ``batch_size=8``).
    """

    batch_size: int = 8
    model: object = None
    gpu: object = None
    tp: int = 1
    clock: str | None = None
    efficiency: Mapping | None = None

    def __post_init__(self):
        _count("batch_size", self.batch_size)
        _count("tp", self.tp)
        _resolve_specs(self)
        object.__setattr__(self, "clock", _resolve_clock(self.clock, self.model, self.gpu))

    @property
    def policy(self) -> str:
        return "static"

    def _simulate(self, wl, timing):
        out = _allocate(1, wl.n_requests)
        run, _ = _static_kernels(timing.kernel_clock)
        out[6][0] = run(wl.arrival, wl.prompt_tokens, wl.output_tokens, self.batch_size,
                        timing.tick, timing.coef, *(a[0] for a in out[:6]))
        return out

    def _run_many(self, timing, arrival, prompt, output, priority, out, parallel=True):
        run, run_many = _static_kernels(timing.kernel_clock)
        if parallel:
            run_many(arrival, prompt, output, self.batch_size, timing.tick, timing.coef, *out)
        else:
            for r in range(arrival.shape[0]):
                out[6][r] = run(arrival[r], prompt[r], output[r], self.batch_size, timing.tick,
                                timing.coef, *(a[r] for a in out[:6]))

    def _slots(self):
        return self.batch_size

    def _kv_budget(self):
        return None

    def reference(self, workload) -> dict:
        """The same simulation by :func:`rooflinekit._reference.simulate_static` (for tests)."""
        from rooflinekit.batching import _reference
        wl = coerce_workload(workload)
        return _reference.simulate_static(wl.arrival, wl.prompt_tokens, wl.output_tokens,
                                          batch_size=self.batch_size,
                                          clock=self._timing().reference_clock)


@dataclasses.dataclass(frozen=True)
class ContinuousBatcher(_Batcher):
    """Continuous (iteration-level) batching: retire, then admit, every step.

    Parameters
    ----------
    max_num_seqs : int or None
        Slots: the most sequences in one step [1] (vLLM's name); ``None`` for unlimited.
    kv_budget_tokens : int or None
        KV cache budget [tokens]. ``None``: derived from ``model``, ``gpu``, ``tp`` and ``reserve``
        by :func:`rooflinekit.memory.kv_budget_tokens` if a model is given, else unlimited.
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
    model, gpu : ModelShape, GPU or catalogue name, optional
        Derive the KV budget and, in roofline mode, time each step.
    tp : int
        Tensor-parallel degree [1].
    reserve : float
        Working-space reserve for the derived KV budget, fraction of memory left after weights.
    clock : {"tick", "roofline"}, optional
        Default "tick" without a model, "roofline" with one.
    efficiency : dict, optional
        Efficiency factors passed to :func:`rooflinekit.roofline.step_cost_coefficients`.

    Notes
    -----
    Each tick: arrive, retire, admit, terminate-check, step (guide §8 step 4); see
    :mod:`rooflinekit._reference` for the exact rules. A request whose final length can never fit
    is rejected at once with reason :data:`REASON_KV_BUDGET`; every request ends completed or
    rejected.

    References
    ----------
    .. [1] Serving-capacity guide §4.3-4.5; ``guide/NOTES.md`` (440 ticks, 67.5 mean service latency
           on :func:`rooflinekit.workloads.guide_workload` with 16 slots).
    .. [2] Kwon et al., PagedAttention, SOSP 2023; Agrawal et al., Sarathi-Serve, OSDI 2024.
    """

    max_num_seqs: int | None = 256
    kv_budget_tokens: int | None = None
    admission: str = "reserve"
    block_size: int = 16
    max_num_batched_tokens: int | None = None
    interactive_cap: int | None = None
    model: object = None
    gpu: object = None
    tp: int = 1
    reserve: float = 0.10
    clock: str | None = None
    efficiency: Mapping | None = None

    def __post_init__(self):
        _count("max_num_seqs", self.max_num_seqs, allow_none=True)
        _count("kv_budget_tokens", self.kv_budget_tokens, lo=0, allow_none=True)
        _choice("admission", self.admission, ("reserve", "paged"))
        _count("block_size", self.block_size)
        _count("tp", self.tp)
        mnbt = _count("max_num_batched_tokens", self.max_num_batched_tokens, allow_none=True)
        if mnbt is not None:
            if self.max_num_seqs is None:
                raise ValueError("max_num_batched_tokens needs a finite max_num_seqs (every "
                                 "decoding sequence takes one token of the step budget)")
            if mnbt < self.max_num_seqs:
                raise ValueError(f"max_num_batched_tokens must be >= max_num_seqs "
                                 f"({self.max_num_seqs}), got {mnbt}")
        _count("interactive_cap", self.interactive_cap, allow_none=True)
        if isinstance(self.reserve, bool) or not isinstance(self.reserve, numbers.Real) \
                or not 0 <= self.reserve < 1:
            raise ValueError(f"reserve must lie in [0, 1), got {self.reserve!r}")
        _resolve_specs(self)
        object.__setattr__(self, "clock", _resolve_clock(self.clock, self.model, self.gpu))

    @property
    def policy(self) -> str:
        return "continuous"

    def _kv_budget(self):
        if self.kv_budget_tokens is not None:
            return int(self.kv_budget_tokens)
        if self.model is None:
            return None
        from rooflinekit import memory
        budget = memory.kv_budget_tokens(self.model, self.gpu, tp=self.tp, reserve=self.reserve)
        return int(np.asarray(budget).item())

    def _slots(self):
        return self.max_num_seqs

    def _args(self, budget):
        return (UNLIMITED if self.max_num_seqs is None else self.max_num_seqs,
                UNLIMITED if budget is None else budget,
                self.admission == "paged", self.block_size,
                UNLIMITED if self.max_num_batched_tokens is None else self.max_num_batched_tokens,
                UNLIMITED if self.interactive_cap is None else self.interactive_cap)

    def _simulate(self, wl, timing):
        out = _allocate(1, wl.n_requests)
        run, _ = _continuous_kernels(timing.kernel_clock)
        out[6][0] = run(wl.arrival, wl.prompt_tokens, wl.output_tokens, wl.priority,
                        *self._args(self._kv_budget()), timing.tick, timing.coef,
                        *(a[0] for a in out[:6]))
        _check_errors(out[6])
        return out

    def _run_many(self, timing, arrival, prompt, output, priority, out, parallel=True):
        run, run_many = _continuous_kernels(timing.kernel_clock)
        args = self._args(self._kv_budget())
        if parallel:
            run_many(arrival, prompt, output, priority, *args, timing.tick, timing.coef, *out)
        else:
            for r in range(arrival.shape[0]):
                out[6][r] = run(arrival[r], prompt[r], output[r], priority[r], *args, timing.tick,
                                timing.coef, *(a[r] for a in out[:6]))
        _check_errors(out[6])

    def reference(self, workload, admission=None, trace=None) -> dict:
        """The same simulation by :func:`rooflinekit._reference.simulate_continuous` (for tests).

        ``admission`` overrides the batcher's rule; the reference alone also knows ``"prompt"``, the
        guide's failure mode (admit on prompt length), kept only to demonstrate it over-admits.
        """
        from rooflinekit.batching import _reference
        wl = coerce_workload(workload)
        slots, budget, _, block, mnbt, cap = self._args(self._kv_budget())
        return _reference.simulate_continuous(
            wl.arrival, wl.prompt_tokens, wl.output_tokens, wl.priority, max_num_seqs=slots,
            kv_budget=budget, admission=admission or self.admission, block_size=block,
            max_num_batched_tokens=mnbt, interactive_cap=cap,
            clock=self._timing().reference_clock, trace=trace)


def simulate(workload=None, *, policy: str = "continuous", ttft_target=None, itl_target=None,
             arrival=None, prompt_tokens=None, output_tokens=None, priority=None,
             **parameters) -> xr.Dataset:
    """Simulate a workload under one policy: ``StaticBatcher``/``ContinuousBatcher(**parameters)``.

    Parameters
    ----------
    workload : Workload or mapping, optional
        Or pass ``arrival``, ``prompt_tokens``, ``output_tokens`` (and ``priority``).
    policy : {"continuous", "static"}
        Which batcher.
    ttft_target, itl_target : float, optional
        Goodput targets [tick or s].
    **parameters
        The batcher's parameters (``max_num_seqs``, ``kv_budget_tokens``, ``batch_size``, ...).

    Returns
    -------
    xarray.Dataset
        As :meth:`ContinuousBatcher.run`.
    """
    kind = {"continuous": ContinuousBatcher, "static": StaticBatcher}
    batcher = kind[_choice("policy", policy, tuple(kind))](**parameters)
    return batcher.run(workload, arrival=arrival, prompt_tokens=prompt_tokens,
                       output_tokens=output_tokens, priority=priority, ttft_target=ttft_target,
                       itl_target=itl_target)


def _kernel_outputs(batcher, workload) -> dict:
    """The kernel's raw outputs for one workload, keyed like the reference's (for tests)."""
    wl = coerce_workload(workload)
    out = batcher._simulate(wl, batcher._timing())
    keys = ("admit", "first_token", "finish", "preemptions", "status", "stats")
    return {k: a[0] for k, a in zip(keys, out[:6])}


def _continuous_kernels(clock):
    from rooflinekit.batching._kernels import continuous_kernels
    return continuous_kernels(clock)


def _static_kernels(clock):
    from rooflinekit.batching._kernels import static_kernels
    return static_kernels(clock)


def _check_errors(errors):
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
        elif name in spec_fields or name.split(".", 1)[0] in ("output", "prompt", "arrival"):
            spec.replace(**{name: vals[0]})       # raises ValueError naming an unknown field
            wl_keys.append(name)
        else:
            raise ValueError(f"sweep name {name!r} is neither a batcher parameter nor a workload "
                             f"parameter")
    return sweep, bat_keys, wl_keys


def _draw(spec, seed, r0, r1):
    n = spec.n_requests
    shape = (r1 - r0, n)
    arrival, prompt = np.empty(shape), np.empty(shape, np.int64)
    output, priority = np.empty(shape, np.int64), np.empty(shape, np.int64)
    for j, r in enumerate(range(r0, r1)):
        a, p, o, q = spec.draw(np.random.default_rng(replicate_seed(seed, r)))
        Workload(a, p, o, q)          # validates the draw (sorted arrivals, token ranges)
        arrival[j], prompt[j], output[j], priority[j] = a, p, o, q
    return arrival, prompt, output, priority


def _mc_block(spec, batchers, sweep, bat_keys, wl_keys, seed, r0, r1, targets, parallel):
    """Summaries for replicates ``r0..r1-1`` over the whole grid, as a Dataset."""
    names = list(sweep)
    shape = tuple(len(sweep[k]) for k in names)
    results = {}
    tu = None
    for wl_combo in itertools.product(*(range(len(sweep[k])) for k in wl_keys)):
        spec_c = spec.replace(**{k: sweep[k][i] for k, i in zip(wl_keys, wl_combo)})
        arrival, prompt, output, priority = _draw(spec_c, seed, r0, r1)
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
                b._run_many(timing, arrival, prompt, output, priority, out, parallel=parallel)
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
                chunks: int | None = None, parallel: bool = True) -> xr.Dataset:
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
    ttft_target, itl_target : float, optional
        Goodput targets [tick or s].
    chunks : int, optional
        Run through dask in tasks of ``chunks`` replicates each (``dask`` is an optional
        dependency, imported only here); results are identical to the in-process run.
        Without it, replicates run in parallel threads with numba ``prange``.
    parallel : bool
        In-process runs only: ``True`` (default) runs replicates on all cores with ``prange``;
        ``False`` runs them one after another with the single-run kernel. Results are identical.
        The ``prange`` kernels compile on first use (a few seconds per policy), so a small Monte
        Carlo in a fresh process finishes sooner serially.

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
    replicates = _count("replicates", replicates)
    if seed is None:
        seed = np.random.SeedSequence().entropy
    elif isinstance(seed, np.random.SeedSequence):
        seed = seed.entropy
    elif isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, a SeedSequence or None, "
                         f"got {seed!r}")
    targets = (_target("ttft_target", ttft_target), _target("itl_target", itl_target))
    chunks = _count("chunks", chunks, allow_none=True)
    if not isinstance(parallel, (bool, np.bool_)):
        raise TypeError(f"parallel must be True or False, got {type(parallel).__name__}")
    sweep, bat_keys, wl_keys = _split_sweep(sweep, batchers, workload)
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
