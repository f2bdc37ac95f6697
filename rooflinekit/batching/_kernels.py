"""numba step loops for the batching simulator.

The kernels implement exactly the rules of :mod:`rooflinekit._reference` (read that module for
what they do; tests require every output of the two to be equal, bit for bit). They only read their
input arrays and write into preallocated outputs: no random numbers (the workload is drawn before,
in :mod:`rooflinekit.workloads`), no Python objects, no allocation inside the step loop (each run
allocates its scratch arrays once, sized by the request count and the slot limit). Replicates of a
Monte Carlo run in parallel with ``prange``, one independent run per replicate; single runs release
the GIL (``nogil=True``) so dask's threaded scheduler can run chunks side by side.

In tick mode the continuous kernel jumps over runs of ticks in which only decoding can happen (no
arrival, retirement, admission, prefill or preemption before the next event; paged blocks are
allocated in closed form when the free blocks cover them), updating every state variable and
statistic exactly as the single steps would; the reference steps through each tick, and the tests
hold the two equal.

A kernel is built for one *clock* by :func:`continuous_kernels` / :func:`static_kernels`: a
triple of numba functions closed over as compile-time constants, ``step_time(coef, n_decode,
n_prefill_tokens, kv_tokens_read, prefill_context_tokens) -> dt``, ``kv_read(coef, context)`` and
``chunk_pairs(coef, chunk, cached)``: :data:`TICK_CLOCK` (every step lasts one tick) or the roofline
model's kernels wrapped by :func:`roofline_clock`. One loop serves both clocks, so the rules have
one implementation.

Compilation and caching
-----------------------
Nothing compiles at import: ``@njit`` without signatures compiles lazily at the first call, and the
kernel factories run only when a simulation is first requested, so ``import rooflinekit`` stays fast
(``batching.py`` imports this module lazily too, as importing numba costs ~0.3 s). We do **not** use
numba's on-disk cache (``cache=False``, the default): the kernels are closures over a step-time
function, which numba's cache cannot key reliably, and concurrent processes (multiprocessing or dask
workers starting together) writing the same cache index is a known source of crashes. The cost is a
one-off compilation per process and clock: about 3 s for the continuous kernel and 2 s for the
static one, plus as much again for their ``prange`` versions on the first Monte Carlo (measured by
``benchmarks/batching.py``, ``Compile``).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import njit, prange

__all__ = ["continuous_kernels", "static_kernels", "TICK_CLOCK", "roofline_clock", "N_STATS",
           "STALLED"]

# Indices into the ``stats`` output, in the order of ``_reference.STAT_NAMES``.
_END, _STEPS, _BUSY, _PEAK_RUN, _RUN_T, _ACT_T, _PEAK_RES, _RES_T, _PEAK_USED, _USED_T, _PREEMPT = \
    range(11)
N_STATS = 11

#: Error code a run returns when requests are queued and none can ever be admitted (cannot happen
#: with validated inputs; reported rather than looping forever).
STALLED = 1


@njit
def tick_step_time(coef, n_decode, n_prefill_tokens, kv_tokens_read, prefill_context_tokens):
    """Tick mode: every step lasts one tick."""
    return 1.0


@njit
def tick_kv_read(coef, context):
    """Tick mode: KV tokens a sequence reads (unused by the tick clock, kept for one code path)."""
    return context


@njit
def tick_chunk_pairs(coef, chunk, cached):
    """Tick mode: attention pairs of a prompt chunk (unused by the tick clock)."""
    return 0.0


#: The tick clock: ``(step_time, kv_read, chunk_pairs)``.
TICK_CLOCK = (tick_step_time, tick_kv_read, tick_chunk_pairs)


@functools.lru_cache(maxsize=None)
def roofline_clock(step_kernel, kv_read_kernel, pairs_kernel, n_coefficients: int,
                   full_attention_index: int, sliding_window_index: int):
    """The roofline clock ``(step_time, kv_read, chunk_pairs)`` from the roofline model's kernels.

    ``step_kernel(c_0, ..., c_{k-1}, n_decode, n_prefill_tokens, kv_tokens_read,
    prefill_context_tokens)`` (:func:`rooflinekit.roofline.mixed_step_time_kernel`) takes the
    ``k`` step-cost coefficients as floats; the kernels hold them in one float64 array ``coef``.
    ``kv_read_kernel(context, full_attention_fraction, sliding_window)`` and
    ``pairs_kernel(chunk, cached, full_attention_fraction, sliding_window)`` count, per sequence,
    the KV tokens read and a prompt chunk's attention pairs (window-capped).
    """
    inner = njit(step_kernel)
    kv_inner = njit(kv_read_kernel)
    pairs_inner = njit(pairs_kernel)
    args = ", ".join(f"coef[{k}]" for k in range(n_coefficients))
    namespace = {"inner": inner}
    # A fixed-arity call generated once: numba cannot star-unpack an array into arguments.
    exec(  # noqa: S102 - the source is the line below, built from an integer only
        "def step(coef, n_decode, n_prefill_tokens, kv_tokens_read, prefill_context_tokens):\n"
        f"    return inner({args}, n_decode, n_prefill_tokens, kv_tokens_read, "
        "prefill_context_tokens)\n", namespace)
    fa, sw = full_attention_index, sliding_window_index

    @njit
    def kv_read(coef, context):
        return kv_inner(context, coef[fa], coef[sw])

    @njit
    def chunk_pairs(coef, chunk, cached):
        return pairs_inner(chunk, cached, coef[fa], coef[sw])

    return njit(namespace["step"]), kv_read, chunk_pairs


UNBOUNDED = np.int64(2**62)


@njit
def _can_admit(queue, q_head, q_size, nrun, max_num_seqs, interactive_cap, n_interactive, paged,
               total_blocks, alloc, reserved, kv_budget, prompt, output, generated, block_size):
    """Would the admission phase admit a request now, with no sequence needing a new block?"""
    for k in range(2):
        if q_size[k] == 0:
            continue
        i = queue[k, q_head[k]]
        if nrun >= max_num_seqs:
            return False
        if k == 1 and nrun >= interactive_cap and (q_size[0] > 0 or n_interactive > 0):
            return False
        if paged:
            return total_blocks - alloc >= (prompt[i] + generated[i] + block_size) // block_size
        return reserved + prompt[i] + output[i] <= kv_budget
    return False


@njit
def _reset_outputs(admit, first_token, finish, preemptions, status, stats):
    """Clear one run's outputs: statistics 0, no request admitted, started or finished yet."""
    for k in range(N_STATS):
        stats[k] = 0.0
    for i in range(admit.shape[0]):
        admit[i] = np.nan
        first_token[i] = np.nan
        finish[i] = np.nan
        preemptions[i] = 0
        status[i] = 0


@functools.lru_cache(maxsize=None)
def continuous_kernels(clock):
    """``(run, run_many)`` continuous-batching kernels for one clock (see :data:`TICK_CLOCK`).

    ``run(arrival, prompt, output, priority, max_num_seqs, kv_budget, paged, block_size,
    max_batched, interactive_cap, tick_mode, coef, admit, first_token, finish, preemptions, status,
    stats) -> error code`` simulates one workload; ``run_many`` takes 2-D ``(replicate, request)``
    workloads and outputs and a 2-D ``stats``, and runs the replicates in parallel.
    """
    step_time, seq_kv_read, chunk_pairs = clock

    @njit(nogil=True)
    def run(arrival, prompt, output, priority, max_num_seqs, kv_budget, paged, block_size,
            max_batched, interactive_cap, tick_mode, coef,
            admit, first_token, finish, preemptions, status, stats):
        n = arrival.shape[0]
        _reset_outputs(admit, first_token, finish, preemptions, status, stats)
        if n == 0:
            return 0
        cap = min(max_num_seqs, n)
        total_blocks = kv_budget // block_size if paged else 0
        # scratch, allocated once per run
        generated = np.zeros(n, np.int64)
        to_prefill = np.zeros(n, np.int64)
        prefilled = np.zeros(n, np.int64)
        gen_at_admit = np.zeros(n, np.int64)
        context = np.zeros(n, np.int64)
        blocks = np.zeros(n, np.int64)
        queue = np.empty((2, n), np.int64)
        q_head = np.zeros(2, np.int64)
        q_size = np.zeros(2, np.int64)
        running = np.empty(cap, np.int64)
        first_ids = np.empty(cap, np.int64)
        nrun = 0
        n_dec = 0                  # running sequences past prefill (decoding)
        n_interactive = 0          # interactive sequences running
        alloc = 0                  # paged: blocks held by running sequences
        reserved = 0               # reserve: final lengths of running sequences
        used = 0                   # tokens of context held by running sequences

        t = math.ceil(arrival[0]) * 1.0 if tick_mode else arrival[0]
        nxt = 0
        while True:
            # 1. arrive
            while nxt < n and arrival[nxt] <= t:
                i = nxt
                nxt += 1
                if paged:
                    never = (prompt[i] + output[i] + block_size - 1) // block_size > total_blocks
                else:
                    never = prompt[i] + output[i] > kv_budget
                if never:
                    status[i] = 1
                else:
                    k = priority[i]
                    queue[k, (q_head[k] + q_size[k]) % n] = i
                    q_size[k] += 1
            # 2. retire (stable compaction keeps admission order), counting on the way the new
            # blocks the remaining decoding sequences need this step (paged)
            w = 0
            need = 0
            for r in range(nrun):
                i = running[r]
                if generated[i] == output[i]:
                    finish[i] = t
                    alloc -= blocks[i]
                    blocks[i] = 0
                    reserved -= prompt[i] + output[i]
                    used -= context[i]
                    n_dec -= 1
                    if priority[i] == 0:
                        n_interactive -= 1
                else:
                    running[w] = i
                    w += 1
                    if paged and generated[i] != gen_at_admit[i] and \
                            context[i] + 1 > blocks[i] * block_size:
                        need += 1
            nrun = w
            # 3. admit
            for k in range(2):
                stop = False
                while q_size[k] > 0:
                    i = queue[k, q_head[k]]
                    if nrun >= max_num_seqs:
                        stop = True
                        break
                    if k == 1 and nrun >= interactive_cap and (q_size[0] > 0 or n_interactive > 0):
                        stop = True
                        break
                    first_blocks = 0
                    if paged:
                        first_blocks = (prompt[i] + generated[i] + 1 + block_size - 1) // block_size
                        fits = total_blocks - alloc - need >= first_blocks
                    else:
                        fits = reserved + prompt[i] + output[i] <= kv_budget
                    if not fits:
                        stop = True
                        break
                    q_head[k] = (q_head[k] + 1) % n
                    q_size[k] -= 1
                    if np.isnan(admit[i]):
                        admit[i] = t
                    gen_at_admit[i] = generated[i]
                    to_prefill[i] = prompt[i] + generated[i]
                    prefilled[i] = 0
                    context[i] = 0
                    if paged:
                        blocks[i] = first_blocks
                        alloc += first_blocks
                    else:
                        reserved += prompt[i] + output[i]
                    if priority[i] == 0:
                        n_interactive += 1
                    running[nrun] = i
                    nrun += 1
                if stop:
                    break
            # 4. terminate-check
            if nrun == 0:
                if q_size[0] > 0 or q_size[1] > 0:
                    stats[_END] = t
                    return STALLED
                if nxt == n:
                    break
                t = math.ceil(arrival[nxt]) * 1.0 if tick_mode else arrival[nxt]
                continue
            # 5. step: preempt the latest admitted until the growth fits (paged) ...
            if paged:
                while need > total_blocks - alloc:
                    nrun -= 1
                    v = running[nrun]
                    if generated[v] != gen_at_admit[v]:
                        n_dec -= 1
                        if context[v] + 1 > blocks[v] * block_size:
                            need -= 1
                    alloc -= blocks[v]
                    blocks[v] = 0
                    used -= context[v]
                    context[v] = 0
                    if priority[v] == 0:
                        n_interactive -= 1
                    preemptions[v] += 1
                    stats[_PREEMPT] += 1.0
                    k = priority[v]
                    q_head[k] = (q_head[k] - 1 + n) % n
                    queue[k, q_head[k]] = v
                    q_size[k] += 1
            # ... then the step, in admission order: each decoding sequence's token, and prefill
            # slices from the token budget left after all decode tokens
            n_decode = n_dec
            budget = max_batched - n_dec
            n_prefill = 0
            kv_read = 0.0
            pairs = 0.0
            active = 0
            n_first = 0
            any_prefill = False
            min_left = UNBOUNDED       # fewest tokens any running sequence has left
            min_room = UNBOUNDED       # paged: fewest tokens any sequence can grow in its blocks
            for r in range(nrun):
                i = running[r]
                if generated[i] != gen_at_admit[i]:
                    kv_read += seq_kv_read(coef, float(context[i]))
                    if paged and context[i] + 1 > blocks[i] * block_size:
                        blocks[i] += 1
                        alloc += 1
                    context[i] += 1
                    used += 1
                    generated[i] += 1
                    active += 1
                else:
                    c = min(to_prefill[i] - prefilled[i], budget)
                    budget -= c
                    n_prefill += c
                    if c > 0:
                        kv_read += seq_kv_read(coef, float(prefilled[i]))
                        pairs += chunk_pairs(coef, float(c), float(prefilled[i]))
                    prefilled[i] += c
                    context[i] += c
                    used += c
                    if prefilled[i] == to_prefill[i]:
                        context[i] += 1
                        used += 1
                        generated[i] += 1
                        active += 1
                        n_dec += 1
                        if generated[i] == 1:
                            first_ids[n_first] = i
                            n_first += 1
                    else:
                        any_prefill = True
                min_left = min(min_left, output[i] - generated[i])
                if paged:
                    min_room = min(min_room, blocks[i] * block_size - context[i])
            dt = step_time(coef, float(n_decode), float(n_prefill), kv_read, pairs)
            for j in range(n_first):
                first_token[first_ids[j]] = t + dt
            kv_res = alloc * block_size if paged else reserved
            stats[_STEPS] += 1.0
            stats[_BUSY] += dt
            if nrun > stats[_PEAK_RUN]:
                stats[_PEAK_RUN] = nrun
            stats[_RUN_T] += nrun * dt
            stats[_ACT_T] += active * dt
            if kv_res > stats[_PEAK_RES]:
                stats[_PEAK_RES] = kv_res
            stats[_RES_T] += kv_res * dt
            if used > stats[_PEAK_USED]:
                stats[_PEAK_USED] = used
            stats[_USED_T] += used * dt
            t = t + dt
            # Tick mode: jump over the ticks in which nothing but decoding can happen (no arrival,
            # no retirement, no admission, no preemption), updating state and statistics exactly
            # as that many single steps would (all partial sums are whole numbers, exact in float).
            if tick_mode and not any_prefill:
                m = min_left
                if nxt < n:
                    m = min(m, np.int64(math.ceil(arrival[nxt])) - np.int64(t))
                # Admission only gets harder as blocks are allocated, so "not now" holds throughout.
                if m > 0 and not _can_admit(queue, q_head, q_size, nrun, max_num_seqs,
                                            interactive_cap, n_interactive, paged, total_blocks,
                                            alloc, reserved, kv_budget, prompt, output,
                                            generated, block_size):
                    if paged:
                        # Sequences cross block boundaries during the jump; without preemption
                        # only if the free blocks cover every crossing, else stop before the first.
                        crossings = 0
                        for r in range(nrun):
                            i = running[r]
                            room = blocks[i] * block_size - context[i]
                            if m > room:
                                crossings += 1 + (m - room - 1) // block_size
                        if crossings > total_blocks - alloc:
                            m = min(m, min_room)
                    extra = 0      # paged: sum over the jumped steps of blocks newly allocated
                    for r in range(nrun):
                        i = running[r]
                        if paged:
                            room = blocks[i] * block_size - context[i]
                            if m > room:
                                k = 1 + (m - room - 1) // block_size
                                extra += k * (m - room) - block_size * (k * (k - 1) // 2)
                                blocks[i] += k
                                alloc += k
                        generated[i] += m
                        context[i] += m
                    stats[_STEPS] += m
                    stats[_BUSY] += m
                    stats[_RUN_T] += nrun * m
                    stats[_ACT_T] += nrun * m
                    stats[_RES_T] += kv_res * m + block_size * extra
                    if paged and alloc * block_size > stats[_PEAK_RES]:
                        stats[_PEAK_RES] = alloc * block_size
                    stats[_USED_T] += m * used + nrun * (m * (m + 1) // 2)
                    used += nrun * m
                    if used > stats[_PEAK_USED]:
                        stats[_PEAK_USED] = used
                    t = t + m
        stats[_END] = t
        return 0

    @njit(parallel=True)
    def run_many(arrival, prompt, output, priority, max_num_seqs, kv_budget, paged, block_size,
                 max_batched, interactive_cap, tick_mode, coef,
                 admit, first_token, finish, preemptions, status, stats, errors):
        for r in prange(arrival.shape[0]):
            errors[r] = run(arrival[r], prompt[r], output[r], priority[r], max_num_seqs,
                            kv_budget, paged, block_size, max_batched, interactive_cap,
                            tick_mode, coef, admit[r], first_token[r], finish[r],
                            preemptions[r], status[r], stats[r])

    return run, run_many


@functools.lru_cache(maxsize=None)
def static_kernels(clock):
    """``(run, run_many)`` static-batching kernels for one clock (see :data:`TICK_CLOCK`).

    ``run(arrival, prompt, output, batch_size, tick_mode, coef, admit, first_token, finish,
    preemptions, status, stats) -> 0``; ``run_many`` is the 2-D, replicate-parallel version.
    """
    step_time, seq_kv_read, chunk_pairs = clock

    @njit(nogil=True)
    def run(arrival, prompt, output, batch_size, tick_mode, coef,
            admit, first_token, finish, preemptions, status, stats):
        n = arrival.shape[0]
        _reset_outputs(admit, first_token, finish, preemptions, status, stats)
        t = 0.0
        nxt = 0
        max_out = 0
        for i in range(n):
            max_out = max(max_out, output[i])
        ending = np.zeros(max_out + 1, np.int64)     # members of the batch by output length
        while nxt < n:
            if arrival[nxt] > t:
                t = math.ceil(arrival[nxt]) * 1.0 if tick_mode else arrival[nxt]
            first = nxt
            longest = 0
            prompt_sum = 0
            while nxt < n and nxt - first < batch_size and arrival[nxt] <= t:
                longest = max(longest, output[nxt])
                prompt_sum += prompt[nxt]
                nxt += 1
            size = nxt - first
            kv = prompt_sum + size * longest
            start = t
            for i in range(first, nxt):
                ending[output[i]] += 1
            finished = 0
            for step in range(longest):
                # the first step prefills every prompt; later steps decode every row (padding too)
                if step == 0:
                    pairs = 0.0
                    for i in range(first, nxt):
                        if prompt[i] > 0:
                            pairs += chunk_pairs(coef, float(prompt[i]), 0.0)
                    dt = step_time(coef, 0.0, float(prompt_sum), 0.0, pairs)
                else:
                    kv_read = 0.0
                    for i in range(first, nxt):
                        kv_read += seq_kv_read(coef, float(prompt[i] + step))
                    dt = step_time(coef, float(size), 0.0, kv_read, 0.0)
                finished += ending[step]         # members whose last token came before this step
                active = size - finished
                used = prompt_sum + size * (step + 1)
                stats[_STEPS] += 1.0
                stats[_BUSY] += dt
                stats[_RUN_T] += size * dt
                stats[_ACT_T] += active * dt
                stats[_RES_T] += kv * dt
                if used > stats[_PEAK_USED]:
                    stats[_PEAK_USED] = used
                stats[_USED_T] += used * dt
                t = t + dt
                if step == 0:
                    for i in range(first, nxt):
                        first_token[i] = t
            if size > stats[_PEAK_RUN]:
                stats[_PEAK_RUN] = size
            if kv > stats[_PEAK_RES]:
                stats[_PEAK_RES] = kv
            for i in range(first, nxt):
                admit[i] = start
                finish[i] = t
                ending[output[i]] = 0
        stats[_END] = t
        return 0

    @njit(parallel=True)
    def run_many(arrival, prompt, output, batch_size, tick_mode, coef,
                 admit, first_token, finish, preemptions, status, stats, errors):
        for r in prange(arrival.shape[0]):
            errors[r] = run(arrival[r], prompt[r], output[r], batch_size, tick_mode, coef,
                            admit[r], first_token[r], finish[r], preemptions[r], status[r],
                            stats[r])

    return run, run_many
