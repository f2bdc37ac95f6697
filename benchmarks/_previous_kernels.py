"""The continuous kernel as it was before running sums (for ``benchmarks/batching.py`` only).

A verbatim copy of ``rooflinekit/batching/_kernels.py`` at the commit that added the
inter-token gaps, whose roofline clock loops over every running sequence in every step; the
benchmark times it beside today's kernel in the same run. Not part of the package.

numba step loops for the batching simulator.

The kernels implement exactly the rules of :mod:`rooflinekit.batching._reference` (read that module
for what they do; tests require every output of the two to be equal, bit for bit). They only read
their input arrays and write into preallocated outputs: no random numbers (the workload is drawn
before, in :mod:`rooflinekit.workloads`), no Python objects, no allocation inside the step loop
(each run allocates its scratch arrays once, sized by the request count and the slot limit).
Replicates of a Monte Carlo run in parallel with ``prange``, one independent run per replicate;
single runs release the GIL (``nogil=True``) so dask's threaded scheduler can run chunks side by
side.

In tick mode the continuous kernel jumps over runs of ticks in which only decoding can happen (no
arrival, retirement, admission, prefill or preemption before the next event; paged blocks are
allocated in closed form when the free blocks cover them), updating every state variable and
statistic exactly as the single steps would; the reference steps through each tick, and the tests
hold the two equal.

The clock is data
-----------------
Every kernel takes the clock as two arguments: ``tick_mode`` (``True``: every step lasts one tick)
and ``coef``, the :class:`rooflinekit.roofline.StepCost` coefficients as one float64 array of
:data:`N_COEFFICIENTS` (read only by the roofline clock). The roofline clock is the roofline
model's scalar kernels (:func:`rooflinekit.roofline.mixed_step_time_kernel`,
``kv_tokens_read_kernel``, ``prefill_context_tokens_kernel``) compiled here and called with those
coefficients. The kernels are plain module-level functions, so one compiled kernel serves every
clock and every model, and numba can cache it on disk.

Compilation and caching
-----------------------
Nothing compiles at import: ``@njit`` without signatures compiles lazily at the first call, and
``batchers.py`` imports this module only when a simulation first runs, so ``import rooflinekit``
does not import numba (~0.3 s). Every kernel is ``cache=True`` (policy and measurements:
``docs/simulator-cache.md``):

- *where*: numba's default, ``__pycache__`` beside this file, or a per-user cache directory when
  the package directory is not writable; ``NUMBA_CACHE_DIR`` overrides both. The step-formula
  kernels compiled from :mod:`rooflinekit.roofline` are cached beside their own source.
- *when it is stale*: numba keys each function's index on a hash of its source file's contents
  and on the numba version, and each entry on the signature, the CPU name and features, and the
  function's bytecode; any mismatch recompiles. numba does *not* see changes to functions called
  from another file: the step formula lives in ``roofline/step.py`` and is compiled into these
  kernels, so :data:`STEP_FORMULA_SHA256` records a hash of its source here, and a test fails
  until it is updated, which changes this file and so invalidates every kernel's cache.
- *several processes*: numba writes each index and data file to a unique temporary name and
  renames it into place, so processes sharing a cache (multiprocessing, dask workers) may at worst
  compile the same kernel twice; on a network filesystem this holds only where rename is atomic.
  The known cache races concern ``@guvectorize`` functions, which this module does not use.

A first run in a new environment compiles for about 3 s (continuous) and 2 s (static), plus as
much again for the ``prange`` versions on the first Monte Carlo (``benchmarks/batching.py``,
``Compile``); later processes load the machine code in a fraction of that.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from rooflinekit.batching._reference import (
    GAP_MAX_EXPONENT,
    GAP_MIN_EXPONENT,
    GAP_PERCENTILES,
    GAP_SUBBINS,
    N_GAP_BINS,
    STAT_NAMES,
)
from rooflinekit.roofline import (
    StepCost,
    kv_tokens_read_kernel,
    mixed_step_time_kernel,
    prefill_context_tokens_kernel,
)

__all__ = ["continuous_run", "continuous_run_many", "static_run", "static_run_many", "N_STATS",
           "N_COEFFICIENTS", "STALLED", "STEP_FORMULA_SHA256"]

# Indices into the ``stats`` output, in the order of ``_reference.STAT_NAMES``.
(_END, _STEPS, _BUSY, _PEAK_RUN, _RUN_T, _ACT_T, _PEAK_RES, _RES_T, _PEAK_USED, _USED_T, _PREEMPT,
 _GAPS, _GAPS_MET, _GAP_T, _GAP_P) = range(15)
N_STATS = 18
# its statistics are the first N_STATS of STAT_NAMES (the prefix-cache ones came later)
if len(STAT_NAMES) < N_STATS or STAT_NAMES[_GAP_P] != "token_itl_p50":
    raise ImportError("the kernels' stats indices disagree with _reference.STAT_NAMES")
_PERCENTILES = GAP_PERCENTILES
_N_PERCENTILES = len(GAP_PERCENTILES)

#: Error code a run returns when requests are queued and none can ever be admitted (cannot happen
#: with validated inputs; reported rather than looping forever).
STALLED = 1

#: Length of the ``coef`` array: the fields of :class:`rooflinekit.roofline.StepCost`.
N_COEFFICIENTS = 22
if len(StepCost._fields) != N_COEFFICIENTS:
    # _step_time passes the coefficients one by one; a new field needs a new argument there.
    raise ImportError(f"StepCost has {len(StepCost._fields)} fields; the batching kernels pass "
                      f"{N_COEFFICIENTS}")
_FA = StepCost._fields.index("full_attention_fraction")
_SW = StepCost._fields.index("sliding_window")

#: sha256 of the step formula's source (the three kernels and the StepCost field names), which
#: numba's cache cannot see; ``tests/test_batching_kernels.py`` recomputes it.
STEP_FORMULA_SHA256 = "5e175f803317ed29b737456d7d6ee4b19b859a4b817151fe8629d8376d19a86e"

_mixed_step_time = njit(cache=True)(mixed_step_time_kernel)
_kv_tokens_read = njit(cache=True)(kv_tokens_read_kernel)
_prefill_pairs = njit(cache=True)(prefill_context_tokens_kernel)


@njit(cache=True)
def _step_time(tick_mode, coef, n_decode, n_prefill_tokens, kv_tokens_read,
               prefill_context_tokens):
    """Duration of one step: one tick, or the roofline model's time for its tokens [tick or s]."""
    if tick_mode:
        return 1.0
    # A fixed-arity call: numba cannot star-unpack an array into arguments.
    return _mixed_step_time(coef[0], coef[1], coef[2], coef[3], coef[4], coef[5], coef[6],
                            coef[7], coef[8], coef[9], coef[10], coef[11], coef[12], coef[13],
                            coef[14], coef[15], coef[16], coef[17], coef[18], coef[19], coef[20],
                            coef[21], n_decode, n_prefill_tokens, kv_tokens_read,
                            prefill_context_tokens)


@njit(cache=True)
def _kv_read(tick_mode, coef, context):
    """KV tokens a sequence reads at ``context`` (window-capped); unused by the tick clock."""
    if tick_mode:
        return 0.0
    return _kv_tokens_read(context, coef[_FA], coef[_SW])


@njit(cache=True)
def _chunk_pairs(tick_mode, coef, chunk, cached):
    """Attention pairs of a prompt chunk after ``cached`` tokens; unused by the tick clock."""
    if tick_mode:
        return 0.0
    return _prefill_pairs(chunk, cached, coef[_FA], coef[_SW])


UNBOUNDED = np.int64(2**62)


@njit(cache=True)
def _gap_bin(x):
    """Histogram bin of an inter-token gap (``_reference.gap_bin``: frexp octave, linear sub-bin)."""
    if not x > 0.0:
        return 0
    m, e = math.frexp(x)
    if e < GAP_MIN_EXPONENT:
        return 0
    if e >= GAP_MAX_EXPONENT:
        return N_GAP_BINS - 1
    return (e - GAP_MIN_EXPONENT) * GAP_SUBBINS + int((m - 0.5) * (2 * GAP_SUBBINS))


@njit(cache=True)
def _add_gaps(hist_n, hist_max, stats, itl_target, gap, count):
    """``count`` inter-token gaps of ``gap``: counts, sum and histogram (``_reference.GapLog``)."""
    if count == 0:
        return
    stats[_GAPS] += count
    if gap <= itl_target:
        stats[_GAPS_MET] += count
    stats[_GAP_T] += gap * count
    k = _gap_bin(gap)
    if hist_n[k] == 0 or gap > hist_max[k]:
        hist_max[k] = gap
    hist_n[k] += count


@njit(cache=True)
def _store_percentiles(hist_n, hist_max, stats):
    """Nearest-rank percentiles of the gaps, each its bin's largest gap (NaN without gaps)."""
    n = np.int64(stats[_GAPS])
    for j in range(_N_PERCENTILES):
        stats[_GAP_P + j] = np.nan
    if n == 0:
        return
    j = 0
    rank = (_PERCENTILES[0] * n + 99) // 100
    seen = 0
    for k in range(N_GAP_BINS):
        seen += hist_n[k]
        while j < _N_PERCENTILES and seen >= rank:
            stats[_GAP_P + j] = hist_max[k]
            j += 1
            if j < _N_PERCENTILES:
                rank = (_PERCENTILES[j] * n + 99) // 100
        if j == _N_PERCENTILES:
            return


@njit(cache=True)
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


@njit(cache=True)
def _reset_outputs(admit, first_token, finish, preemptions, status, stats):
    """Clear one run's outputs: statistics 0, no request admitted, started or finished yet."""
    for k in range(N_STATS):
        stats[k] = 0.0
    for j in range(_N_PERCENTILES):
        stats[_GAP_P + j] = np.nan           # no gap yet
    for i in range(admit.shape[0]):
        admit[i] = np.nan
        first_token[i] = np.nan
        finish[i] = np.nan
        preemptions[i] = 0
        status[i] = 0


@njit(nogil=True, cache=True)
def continuous_run(arrival, prompt, output, priority, max_num_seqs, kv_budget, paged, block_size,
                   max_batched, interactive_cap, tick_mode, coef, itl_target,
                   admit, first_token, finish, preemptions, status, stats):
    """Continuous batching of one workload; returns 0 or :data:`STALLED`.

    ``tick_mode`` and ``coef`` are the clock (module docstring), ``itl_target`` the gap counted
    as met [time] (inf for none); the outputs ``admit``,
    ``first_token``, ``finish``, ``preemptions``, ``status`` (per request) and ``stats``
    (:data:`N_STATS`) are overwritten.
    """
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
    span_ids = np.empty(cap, np.int64)       # re-prefills completing in a step
    last_tok = np.zeros(n, np.float64)       # a preempted sequence's latest token time
    hist_n = np.zeros(N_GAP_BINS, np.int64)  # gap histogram: counts and largest gap per bin
    hist_max = np.zeros(N_GAP_BINS, np.float64)
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
                    last_tok[v] = t          # it decoded in the step that ended at t
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
        n_span = 0
        any_prefill = False
        min_left = UNBOUNDED       # fewest tokens any running sequence has left
        min_room = UNBOUNDED       # paged: fewest tokens any sequence can grow in its blocks
        for r in range(nrun):
            i = running[r]
            if generated[i] != gen_at_admit[i]:
                kv_read += _kv_read(tick_mode, coef, float(context[i]))
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
                    kv_read += _kv_read(tick_mode, coef, float(prefilled[i]))
                    pairs += _chunk_pairs(tick_mode, coef, float(c), float(prefilled[i]))
                prefilled[i] += c
                context[i] += c
                used += c
                if prefilled[i] == to_prefill[i]:
                    context[i] += 1
                    used += 1
                    if generated[i] > 0:
                        span_ids[n_span] = i
                        n_span += 1
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
        dt = _step_time(tick_mode, coef, float(n_decode), float(n_prefill), kv_read, pairs)
        for j in range(n_first):
            first_token[first_ids[j]] = t + dt
        # every decoding sequence's gap is dt; a re-prefill's spans its preemption
        _add_gaps(hist_n, hist_max, stats, itl_target, dt, n_decode)
        for j in range(n_span):
            _add_gaps(hist_n, hist_max, stats, itl_target, t + dt - last_tok[span_ids[j]], 1)
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
                _add_gaps(hist_n, hist_max, stats, itl_target, 1.0, nrun * m)
                used += nrun * m
                if used > stats[_PEAK_USED]:
                    stats[_PEAK_USED] = used
                t = t + m
    stats[_END] = t
    _store_percentiles(hist_n, hist_max, stats)
    return 0



@njit(parallel=True, cache=True)
def continuous_run_many(arrival, prompt, output, priority, max_num_seqs, kv_budget, paged,
                        block_size, max_batched, interactive_cap, tick_mode, coef, itl_target,
                        admit, first_token, finish, preemptions, status, stats, errors):
    """:func:`continuous_run` over 2-D ``(replicate, request)`` arrays, replicates in parallel."""
    for r in prange(arrival.shape[0]):
        errors[r] = continuous_run(arrival[r], prompt[r], output[r], priority[r], max_num_seqs,
                                   kv_budget, paged, block_size, max_batched, interactive_cap,
                                   tick_mode, coef, itl_target, admit[r], first_token[r],
                                   finish[r],
                                   preemptions[r], status[r], stats[r])


@njit(nogil=True, cache=True)
def static_run(arrival, prompt, output, batch_size, tick_mode, coef, itl_target,
               admit, first_token, finish, preemptions, status, stats):
    """Static batching of one workload; returns 0 (arguments as :func:`continuous_run`)."""
    n = arrival.shape[0]
    _reset_outputs(admit, first_token, finish, preemptions, status, stats)
    t = 0.0
    nxt = 0
    max_out = 0
    for i in range(n):
        max_out = max(max_out, output[i])
    ending = np.zeros(max_out + 1, np.int64)     # members of the batch by output length
    hist_n = np.zeros(N_GAP_BINS, np.int64)
    hist_max = np.zeros(N_GAP_BINS, np.float64)
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
                        pairs += _chunk_pairs(tick_mode, coef, float(prompt[i]), 0.0)
                dt = _step_time(tick_mode, coef, 0.0, float(prompt_sum), 0.0, pairs)
            else:
                kv_read = 0.0
                for i in range(first, nxt):
                    kv_read += _kv_read(tick_mode, coef, float(prompt[i] + step))
                dt = _step_time(tick_mode, coef, float(size), 0.0, kv_read, 0.0)
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
            if step > 0:           # every member still generating: one gap of dt
                _add_gaps(hist_n, hist_max, stats, itl_target, dt, active)
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
    _store_percentiles(hist_n, hist_max, stats)
    return 0



@njit(parallel=True, cache=True)
def static_run_many(arrival, prompt, output, batch_size, tick_mode, coef, itl_target,
                    admit, first_token, finish, preemptions, status, stats, errors):
    """:func:`static_run` over 2-D ``(replicate, request)`` arrays, replicates in parallel."""
    for r in prange(arrival.shape[0]):
        errors[r] = static_run(arrival[r], prompt[r], output[r], batch_size, tick_mode, coef,
                               itl_target, admit[r], first_token[r], finish[r], preemptions[r],
                               status[r], stats[r])
