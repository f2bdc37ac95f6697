"""numba step loops for the batching simulator.

The kernels implement exactly the rules of :mod:`rooflinekit.batching._reference`; tests require
every output of the two to be equal, bit for bit. They only read their input arrays and write
into preallocated outputs: no random numbers (the workload is drawn before, in
:mod:`rooflinekit.workloads`), no Python objects, no allocation inside the step loop. Every kernel
is one run and releases the GIL (``nogil=True``), so replicates run in a pool of Python threads
(:func:`rooflinekit.batching._kernel_calls._each_row`) or dask's. A continuous run costs
O(steps + events), whatever the number of running sequences; how (calendar and step rings,
decode-only stretches, one body compiled per variant, the disaggregated call's one scratch
buffer) and what each choice measured: ``docs/simulator.md``, "batching/_kernels.py".

The clock is data: ``tick_mode`` and ``coef``, the :class:`rooflinekit.roofline.StepCost`
coefficients as one float64 array of :data:`N_COEFFICIENTS`, so one compiled kernel serves every
clock and model. Nothing compiles at import; every kernel is ``cache=True``. Where the cache
lives, when it is stale (:data:`STEP_FORMULA_SHA256`, :data:`SCHEMA_SHA256`,
:data:`GAP_HISTOGRAM_SHA256`), several processes, and first-run compile times
(:data:`COMPILE_SECONDS`, :func:`compile_notice`): ``docs/simulator-cache.md``.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
import types

import numpy as np
from numba import njit

from rooflinekit.batching._reference import gap_bin
from rooflinekit.batching._schema import (
    BATCH,
    CLOCKS,
    COMPLETED,
    GAP_PERCENTILES,
    INTERACTIVE,
    N_GAP_BINS,
    N_STATS,
    REJECTED,
    STALLED,
    STAT_ACCEPTED,
    STAT_ACT_T,
    STAT_BUSY,
    STAT_DRAFTED,
    STAT_END,
    STAT_GAP_P,
    STAT_GAP_T,
    STAT_GAPS,
    STAT_GAPS_MET,
    STAT_PEAK_RES,
    STAT_PEAK_RUN,
    STAT_PEAK_USED,
    STAT_PFX_EVICT,
    STAT_PFX_HIT,
    STAT_PFX_REQ,
    STAT_PFX_SAVED,
    STAT_PFX_T,
    STAT_PREEMPT,
    STAT_RES_T,
    STAT_RUN_T,
    STAT_STEPS,
    STAT_USED_T,
    RECV_PROMPT_WEIGHT,
    UNLIMITED,
    WRONG_CLOCK,
)
from rooflinekit.roofline import (
    StepCost,
    kv_tokens_read_kernel,
    mixed_step_time_kernel,
    prefill_context_tokens_kernel,
)

__all__ = ["continuous_kernel", "replica_kernel", "disaggregated_kernel", "static_run",
           "speculative_gain_table", "kernel_inputs", "is_cached", "compile_notice",
           "COMPILE_SECONDS", "KERNELS", "N_COEFFICIENTS", "STEP_FORMULA_SHA256",
           "SCHEMA_SHA256", "GAP_HISTOGRAM_SHA256"]

#: How every kernel and helper here compiles: cached, with numpy's error model (no check for a
#: division by zero, which validated inputs never hold; the checks were a seventh of a body's
#: compile time, 13.6-15.6 s -> 11.9-12.8 s). Stated on each: a helper that states no error
#: model takes the one of the first caller that compiles it, so whichever kernel filled numba's
#: cache first would decide, for every later kernel, whether a division by zero raises.
_CACHED = {"cache": True, "error_model": "numpy"}

# The codes, the ``stats`` columns (``STAT_*``) and the gap histogram's shape are
# ``_schema``'s, read by numba as constants (:data:`SCHEMA_SHA256`).
_PERCENTILES = GAP_PERCENTILES
_N_PERCENTILES = len(GAP_PERCENTILES)

#: Length of the ``coef`` array: the fields of :class:`rooflinekit.roofline.StepCost`.
N_COEFFICIENTS = 31
if len(StepCost._fields) != N_COEFFICIENTS:
    # _step_time passes the coefficients one by one; a new field needs a new argument there.
    raise ImportError(f"StepCost has {len(StepCost._fields)} fields; the batching kernels pass "
                      f"{N_COEFFICIENTS}")
_FA = StepCost._fields.index("full_attention_fraction")
_SW = StepCost._fields.index("sliding_window")

#: sha256 of the step formula's source (the three kernels and the StepCost field names), which
#: numba's cache cannot see; ``tests/test_batching_kernels.py`` recomputes it.
STEP_FORMULA_SHA256 = "5273a119179791f6120dfd3725289d2fb48d42ef90649c2e0d29fdec12557552"

_mixed_step_time = njit(**_CACHED)(mixed_step_time_kernel)
_kv_tokens_read = njit(**_CACHED)(kv_tokens_read_kernel)
_prefill_pairs = njit(**_CACHED)(prefill_context_tokens_kernel)


@njit(**_CACHED)
def _step_time(tick_mode, coef, n_decode, n_prefill_tokens, kv_tokens_read,
               prefill_context_tokens, longest_prefill_chunk):
    """Duration of one step: one tick, or the roofline model's time for its tokens [tick or s]."""
    if tick_mode:
        return 1.0
    # A fixed-arity call: numba cannot star-unpack an array into arguments.
    return _mixed_step_time(coef[0], coef[1], coef[2], coef[3], coef[4], coef[5], coef[6],
                            coef[7], coef[8], coef[9], coef[10], coef[11], coef[12], coef[13],
                            coef[14], coef[15], coef[16], coef[17], coef[18], coef[19], coef[20],
                            coef[21], coef[22], coef[23], coef[24], coef[25], coef[26],
                            coef[27], coef[28], coef[29], coef[30], n_decode,
                            n_prefill_tokens, kv_tokens_read, prefill_context_tokens,
                            longest_prefill_chunk)


@njit(**_CACHED)
def _kv_read(tick_mode, coef, context):
    """KV tokens a sequence reads at ``context`` (window-capped); unused by the tick clock."""
    if tick_mode:
        return 0.0
    return _kv_tokens_read(context, coef[_FA], coef[_SW])


@njit(**_CACHED)
def _chunk_pairs(tick_mode, coef, chunk, cached):
    """Attention pairs of a prompt chunk after ``cached`` tokens; unused by the tick clock."""
    if tick_mode:
        return 0.0
    return _prefill_pairs(chunk, cached, coef[_FA], coef[_SW])


UNBOUNDED = np.int64(2**62)


#: The bin of an inter-token gap: the specification's own function, compiled.
_gap_bin = njit(**_CACHED)(gap_bin)

#: sha256 of :func:`rooflinekit.batching._reference.gap_bin`'s source and of the gap constants
#: (percentiles, histogram bins, from ``_schema``) compiled into these kernels as values, which
#: numba's cache cannot see change in ``_reference.py`` or ``_schema.py``;
#: ``tests/test_batching_kernels.py`` recomputes it.
GAP_HISTOGRAM_SHA256 = "437ec93358f8d26cc5639bb42aed5f8fa8c37fc8bba929e0432ef1f2275b7ed7"

#: sha256 of every constant of :mod:`rooflinekit.batching._schema` (the ``repr`` of its
#: upper-case names and values, sorted by name): the status and tier codes, return codes and
#: ``stats`` columns these kernels compile in as values, which numba's cache cannot see change
#: in ``_schema.py``; ``tests/test_batching_kernels.py`` recomputes it.
SCHEMA_SHA256 = "8b3e2a18355d84cad403afb8473a61e85f4272e1e3f6c0df5bd6903c1c8be418"


@njit(**_CACHED)
def _count_gaps(n_gaps, met, total, itl_target, gap, count):
    """The counts and sum of :func:`_add_gaps` for ``count > 0`` gaps of ``gap``, as values."""
    n_gaps += count
    if gap <= itl_target:
        met += count
    total += gap * count
    return n_gaps, met, total


@njit(**_CACHED)
def _add_gaps(hist_n, hist_max, stats, itl_target, gap, count):
    """``count`` inter-token gaps of ``gap``: counts, sum and histogram (``_reference.GapLog``)."""
    if count == 0:
        return
    stats[STAT_GAPS] += count
    if gap <= itl_target:
        stats[STAT_GAPS_MET] += count
    stats[STAT_GAP_T] += gap * count
    k = _gap_bin(gap)
    if hist_n[k] == 0 or gap > hist_max[k]:
        hist_max[k] = gap
    hist_n[k] += count


@njit(**_CACHED)
def _store_percentiles(hist_n, hist_max, stats):
    """Nearest-rank percentiles of the gaps, each its bin's largest gap (NaN without gaps)."""
    n = np.int64(stats[STAT_GAPS])
    for j in range(_N_PERCENTILES):
        stats[STAT_GAP_P + j] = np.nan
    if n == 0:
        return
    j = 0
    rank = (_PERCENTILES[0] * n + 99) // 100
    seen = 0
    for k in range(N_GAP_BINS):
        seen += hist_n[k]
        while j < _N_PERCENTILES and seen >= rank:
            stats[STAT_GAP_P + j] = hist_max[k]
            j += 1
            if j < _N_PERCENTILES:
                rank = (_PERCENTILES[j] * n + 99) // 100
        if j == _N_PERCENTILES:
            return


@njit(**_CACHED)
def _reset_outputs(admit, first_token, finish, preemptions, status, stats):
    """Clear one run's outputs: statistics 0, no request admitted, started or finished yet."""
    for k in range(N_STATS):
        stats[k] = 0.0
    for j in range(_N_PERCENTILES):
        stats[STAT_GAP_P + j] = np.nan           # no gap yet
    for i in range(admit.shape[0]):
        admit[i] = np.nan
        first_token[i] = np.nan
        finish[i] = np.nan
        preemptions[i] = 0
        status[i] = COMPLETED


# --- calendar rings (retirement and window crossings), lists in admission order ---------------

#: Most buckets of a calendar ring: a key further ahead than this many steps waits in its bucket
#: and is passed over (it is compared, not taken) until its step comes round.
RING_CAP = 4096


@njit(**_CACHED)
def _ring_size(horizon):
    """Buckets of a calendar ring for keys up to ``horizon`` steps ahead: a power of two."""
    size = 1
    while size <= horizon and size < RING_CAP:
        size *= 2
    return size


@njit(**_CACHED)
def _ring(n, size):
    """A calendar ring: ``n`` request nodes, then ``size`` bucket sentinels, each list empty."""
    nxt = np.empty(n + size, np.int64)
    prv = np.empty(n + size, np.int64)
    for b in range(n, n + size):
        nxt[b] = b
        prv[b] = b
    return nxt, prv


@njit(**_CACHED)
def _scratch_need(n, max_out, tick_mode, coef):
    """Elements of int64, float64 and bool scratch one continuous run keeps for ``n`` requests
    and the longest output ``max_out`` (rings included): a shared scratch is sized by the largest.
    """
    window = coef[_SW]
    windowed = not tick_mode and window < math.inf
    ret = _ring_size(max_out)
    win = _ring_size(np.int64(math.ceil(window))) if windowed else 1
    # 7 zeroed counts, the prompt, 2 queues, 4 list links, each ring's 2 links and its key
    return 20 * n + 4 + 2 * ret + 2 * win, n, n


@njit(inline="always")
def _scratch_fresh(n, ret, win):
    """A continuous run's per-request scratch, each array its own allocation (zeroed counts)."""
    ret_next, ret_prev = _ring(n, ret)
    win_next, win_prev = _ring(n, win)
    return (np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64),
            np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64),
            np.zeros(n, np.int64), np.zeros(n, np.bool_), np.zeros(n, np.float64),
            np.empty(n, np.int64), np.empty((2, n), np.int64), np.empty(n + 1, np.int64),
            np.empty(n + 1, np.int64), np.empty(n + 1, np.int64), np.empty(n + 1, np.int64),
            ret_next, ret_prev, np.empty(n, np.int64), win_next, win_prev,
            np.empty(n, np.int64))


@njit(inline="always")
def _scratch_carved(ints, reals, flags, n, ret, win):
    """:func:`_scratch_fresh`'s arrays as views of lent buffers, counts zeroed, rings emptied."""
    ints[:7 * n] = 0
    reals[:n] = 0.0
    flags[:n] = False
    o = 8 * n                            # after the counts and the prompts
    o2 = o + 2 * n + 4 * (n + 1)         # after the queues and the lists
    o3 = o2 + 3 * n + 2 * ret            # after the retirement ring
    for b in range(n, n + ret):
        ints[o2 + b] = b
        ints[o2 + n + ret + b] = b
    for b in range(n, n + win):
        ints[o3 + b] = b
        ints[o3 + n + win + b] = b
    return (ints[0:n], ints[n:2 * n], ints[2 * n:3 * n], ints[3 * n:4 * n], ints[4 * n:5 * n],
            ints[5 * n:6 * n], ints[6 * n:7 * n], flags[:n], reals[:n], ints[7 * n:o],
            ints[o:o + 2 * n].reshape((2, n)), ints[o + 2 * n:o + 3 * n + 1],
            ints[o + 3 * n + 1:o + 4 * n + 2], ints[o + 4 * n + 2:o + 5 * n + 3],
            ints[o + 5 * n + 3:o2], ints[o2:o2 + n + ret], ints[o2 + n + ret:o2 + 2 * (n + ret)],
            ints[o2 + 2 * (n + ret):o3], ints[o3:o3 + n + win],
            ints[o3 + n + win:o3 + 2 * (n + win)], ints[o3 + 2 * (n + win):o3 + 3 * n + 2 * win])


@njit(**_CACHED)
def _spec_ring_size(longest):
    """Slots of a speculative step ring: a power of two above ``longest + 1`` steps."""
    size = 2
    while size <= longest + 1:
        size *= 2
    return size


@njit(inline="always")
def _spec_walk(gain, base, m, c, steps):
    """A decoding sequence's tokens and context ``steps`` steps after it had ``m`` and ``c``."""
    for _ in range(steps):
        x = np.int64(gain[base + m])
        m += x
        c += x
    return m, c


#: Columns of the speculative step rings: per step, the decoding sequences' tokens beyond one,
#: their new blocks (in units with sliding-window layers), what they add to the below-window
#: context sum and to the count past the window, the same two for a draft model's window, and
#: the tokens they add to their sliding layers (paged sliding-window layers).
_S_TOK, _S_BLK, _S_BELOW, _S_ABOVE, _SD_BELOW, _SD_ABOVE, _S_SLID = range(7)


@njit(inline="always")
def _new_units(c, x, bs, wblocks, uf, us):
    """Units a decoding sequence at context ``c`` takes for ``x`` more tokens: ``uf`` a new
    block in its full layers, ``us`` more while its sliding layers are below their window."""
    nb0 = (c + bs - 1) // bs
    nb1 = (c + x + bs - 1) // bs
    return uf * (nb1 - nb0) + us * (min(nb1, wblocks) - min(nb0, wblocks))


@njit(**_CACHED)
def _spec_withdraw(ring, gain, base, m, c, out_m, gg, mask, paged, bs, s_windowed, w_cross,
                   d_windowed, d_cross, s_slid, wblocks, uf, us, wt):
    """Withdraw a decoding sequence's filed path from step ``gg`` on (it was preempted there
    with ``m`` tokens and context ``c``): what the kernel's filing added, subtracted."""
    room = (c + bs - 1) // bs * bs - c if paged else 0
    while m < out_m:
        x = np.int64(gain[base + m])
        k = gg & mask
        ring[k, _S_TOK] -= x - 1
        if s_slid:
            ring[k, _S_BLK] -= _new_units(c, x, bs, wblocks, uf, us)
            if c < wt:
                ring[k, _S_SLID] -= min(c + x, wt) - c
        elif paged:
            r = room - x
            while r < 0:
                r += bs
                ring[k, _S_BLK] -= 1
            room = r
        if s_windowed and c < w_cross:
            if c + x >= w_cross:
                ring[k, _S_BELOW] += c + 1
                ring[k, _S_ABOVE] -= 1
            else:
                ring[k, _S_BELOW] -= x - 1
        if d_windowed and c < d_cross:
            if c + x >= d_cross:
                ring[k, _SD_BELOW] += c
                ring[k, _SD_ABOVE] -= 1
            else:
                ring[k, _SD_BELOW] -= x
        m += x
        c += x
        gg += 1


@njit(**_CACHED)
def _store_steps(stats, n_steps, busy, peak_run, run_t, act_t, peak_res, res_t, peak_used,
                 used_t):
    """Write the step statistics a run keeps in local variables into ``stats``."""
    stats[STAT_STEPS] = n_steps
    stats[STAT_BUSY] = busy
    stats[STAT_PEAK_RUN] = peak_run
    stats[STAT_RUN_T] = run_t
    stats[STAT_ACT_T] = act_t
    stats[STAT_PEAK_RES] = peak_res
    stats[STAT_RES_T] = res_t
    stats[STAT_PEAK_USED] = peak_used
    stats[STAT_USED_T] = used_t


@njit(**_CACHED)
def _lru_group(g_res, g_refs, g_stamp, keep):
    """The resident prefix group no sequence uses (not ``keep``) released longest ago (ties: the
    lowest group), or -1.
    """
    best = -1
    for k in range(g_res.shape[0]):
        if g_res[k] and g_refs[k] == 0 and k != keep:
            if best < 0 or g_stamp[k] < g_stamp[best]:
                best = k
    return best


# --- the decode step's parts, inlined where they are used ------------------------------------
# numba inlines these in its own IR (``inline="always"``), so the arrays they touch are not
# passed in a call (no reference counting) and each use compiles as if written in place.


@njit(inline="always")
def _decoding_kv_read(fa, window, windowed, dec_context, below_context, n_above):
    """KV tokens the decoding sequences read, from the running sums [tokens]."""
    win_sum = float(dec_context)
    if windowed:
        win_sum = float(below_context) + n_above * window
    return fa * float(dec_context) + (1.0 - fa) * win_sum


@njit(inline="always")
def _units_held(nb, shared, window, uf, us):
    """Units a sequence of ``nb`` blocks holds, ``shared`` of them its prefix's: its full
    layers' own blocks and at most ``window`` blocks in its sliding ones (``_reference``,
    "Sliding-window layers"); plain blocks without sliding layers (``us`` 0, ``uf`` 1)."""
    if us > 0:
        return uf * (nb - shared) + us * min(nb, window)
    return nb - shared


@njit(inline="always")
def _below_window(sign, key, bs, by_phase_w, x_count, x_mask, wt, crossing, n_bm):
    """A decoding sequence enters (``sign`` 1) or leaves (-1) those below the sliding window:
    its block phase (``key``, its context less the step counter) and the step it would reach
    the window at; the new count of them."""
    by_phase_w[key % bs] += sign
    if crossing:
        x_count[(wt - key) & x_mask] += sign
    return n_bm + sign


@njit(inline="always")
def _window_reached(x_count, k, by_phase_w, ph, n_bm):
    """The decoding sequences whose context reaches the sliding window in the step of ring
    slot ``k``: no more sliding blocks from it on; the new count of those below it."""
    reached = x_count[k]
    x_count[k] = 0
    by_phase_w[ph] -= reached
    return n_bm - reached


@njit(inline="always")
def _decoded(n, g, ph, bs, need, n_dec, n_above, alloc, used, dec_context, below_context,
             windowed, win_mask, win_next, win_prev, win_key, context, above):
    """Every decoding sequence one token longer: the running sums, the step counter, the
    blocks' phase, and the sequences that reached the window (now read window-capped)."""
    alloc += need
    used += n_dec
    dec_context += n_dec
    below_context += n_dec - n_above
    g += 1
    ph = ph - 1 if ph > 0 else bs - 1
    if windowed:
        b = n + (g & win_mask)
        i = win_next[b]
        while i != b:
            j = win_next[i]
            if win_key[i] == g:
                win_next[win_prev[i]] = win_next[i]
                win_prev[win_next[i]] = win_prev[i]
                below_context -= context[i] + g
                above[i] = True
                n_above += 1
            i = j
    return g, ph, n_above, alloc, used, dec_context, below_context


@njit(inline="always")
def _recv_stepped(recv_count, recv_interval, received, later):
    """``(recv_count, received)`` after a decode step of the decode-only stretch: where the
    count had reached ``recv_interval`` the step receives (``_reference``, "Receive
    interval"), restarting the count at its own weight 1 and taking in ``later`` requests (a
    closed loop's sent ones; nothing arrives in a stretch), else it adds its weight."""
    if recv_count >= recv_interval:
        return 1, later
    return recv_count + 1, received


@njit(inline="always")
def _gaps_counted(n_gaps, gaps_met, gap_time, itl_target, gap, count):
    """``count`` gaps of ``gap`` counted and summed; their histogram bin and the gap to record
    (``-inf`` for none), which the caller adds in place: an inlined helper handed the histogram
    made the step 30 % slower.
    """
    if count == 0:
        return n_gaps, gaps_met, gap_time, 0, -math.inf
    n_gaps, gaps_met, gap_time = _count_gaps(n_gaps, gaps_met, gap_time, itl_target, gap, count)
    return n_gaps, gaps_met, gap_time, _gap_bin(gap), gap


@njit(inline="always")
def _stepped(dt, nrun, active, kv_res, used, cached_blocks, n_steps, busy, run_t, act_t,
             peak_res, res_t, peak_used, used_t, cb_t):
    """A step's statistics added: its count and time, and what it held over ``dt``."""
    n_steps += 1.0
    busy += dt
    run_t += nrun * dt
    act_t += active * dt
    if kv_res > peak_res:
        peak_res = float(kv_res)
    res_t += kv_res * dt
    if used > peak_used:
        peak_used = float(used)
    used_t += used * dt
    cb_t += cached_blocks * dt
    return n_steps, busy, run_t, act_t, peak_res, res_t, peak_used, used_t, cb_t


@njit(inline="always")
def _spec_step_time(tick_mode, cf, dcf, kk, n_decode, n_prefill, kv_read, kv_dec, pairs,
                    longest, draft_share, d_windowed, d_below, d_above, d_window, dec_context):
    """A speculative step's time: ``kk`` draft steps, then one verification of ``kk + 1``
    positions per decoding sequence, with the step's prefill slices [tick or s]."""
    dt = _step_time(tick_mode, cf, float(n_decode) * (kk + 1.0), float(n_prefill), kv_read,
                    pairs + kv_dec * kk + float(n_decode) * kk * (kk + 1.0) / 2.0, longest)
    if tick_mode:
        return dt
    if draft_share > 0.0:
        t_draft = draft_share * _step_time(tick_mode, cf, float(n_decode), 0.0, kv_dec, 0.0,
                                           0.0)
    else:
        d_win = float(dec_context)
        if d_windowed:
            d_win = float(d_below) + d_above * d_window
        d_fa = dcf[_FA]
        d_kv = d_fa * float(dec_context) + (1.0 - d_fa) * d_win
        t_draft = _step_time(tick_mode, dcf, float(n_decode), 0.0, d_kv, 0.0, 0.0)
    return dt + kk * t_draft


@njit(inline="always")
def _spec_prefill_time(tick_mode, cf, dcf, draft_share, n_prefill, kv_read, pairs, longest):
    """The draft's pass over a step's ``n_prefill`` prompt tokens, after the target's [s]: a
    draft model's step of those tokens, or a draft head's share of the target's own."""
    if draft_share > 0.0:
        return draft_share * _step_time(tick_mode, cf, 0.0, n_prefill, kv_read, pairs, longest)
    return _step_time(tick_mode, dcf, 0.0, n_prefill, kv_read, pairs, longest)


@njit(inline="always")
def _spec_taken(s_ring, k, s_windowed, d_windowed, s_slid, used, used_s, dec_context, accepted,
                below_context, n_above, d_below, d_above):
    """Step slot ``k`` of the speculative rings taken and cleared into the step's sums; inlined,
    the one place a step reads the rings.
    """
    extra = s_ring[k, _S_TOK]
    s_ring[k, _S_TOK] = 0
    s_ring[k, _S_BLK] = 0
    if s_slid:
        used_s += s_ring[k, _S_SLID]
        s_ring[k, _S_SLID] = 0
    if s_windowed:
        below_context += s_ring[k, _S_BELOW]
        n_above += s_ring[k, _S_ABOVE]
        s_ring[k, _S_BELOW] = 0
        s_ring[k, _S_ABOVE] = 0
    if d_windowed:
        d_below += s_ring[k, _SD_BELOW]
        d_above += s_ring[k, _SD_ABOVE]
        s_ring[k, _SD_BELOW] = 0
        s_ring[k, _SD_ABOVE] = 0
    return (used + extra, used_s, dec_context + extra, accepted + extra, below_context, n_above,
            d_below, d_above)


def _continuous(arrival, prompt_tokens, output, priority, prefix_group, prefix_tokens,
                arrived_kv_tokens, gains, max_num_seqs, kv_budget, state_tokens_per_sequence,
                kv_window, paged, block_size, max_batched, interactive_cap, prefix_caching,
                draft_tokens, recv, coef, draft_coef, draft_share, itl_target, admit,
                first_token, finish, preemptions, status, stats, workspace):
    """The continuous kernels' one body, compiled in copies (:func:`_body`) with the constants
    ``_SPECULATIVE``, ``_ONE_TOKEN`` (every output one token: the decoding paths left out),
    ``_SEPARATE`` (prefill steps apart from the decodes: ``_reference``, step 5) and
    ``_TICK`` (the clock); ``gains`` the kernels' ``(gain, gain_offset)``.

    ``workspace`` is ``(hist_n, hist_max, ints, reals, flags)``: the gap histogram
    (:data:`N_GAP_BINS` counts, zeros on entry, and bin maxima), and int64, float64 and bool
    scratch of at least :func:`_scratch_need` elements (shorter ones are replaced), overwritten;
    the disaggregated kernel lends one of each to all its replicas. ``recv`` is
    ``(recv_interval, clients, request_overhead, stream_interval, num_scheduler_steps)``
    (``_reference``, "Receive interval"; ``clients`` 0: an open loop; "Request overhead";
    "Stream interval": above 1, the gaps counted are those between a request's sends, never
    with ``_SPECULATIVE``; "Scheduler steps": above 1, decodes in windows of that many steps,
    only with ``_SEPARATE``, and sends at their ends).
    """
    spec = _SPECULATIVE
    one_token = _ONE_TOKEN
    n = arrival.shape[0]
    _reset_outputs(admit, first_token, finish, preemptions, status, stats)
    if n == 0:
        return 0
    hist_n, hist_max, ints, reals, flags = workspace
    # sliding-window layers (``_reference``, "Sliding-window layers"): paged blocks are
    # counted in units, ``uf`` a block's full-attention layers and ``us`` its sliding ones,
    # which hold at most ``wblocks`` blocks (``wt`` tokens) a sequence, ``uw`` a block of the
    # budget; (1, 0, -, 1) without
    uf, us, wblocks, uw = kv_window
    if not paged or us == 0:
        uf = 1
        us = 0
        uw = 1
    wt = wblocks * block_size if us > 0 else UNLIMITED
    # while a sequence prefills, its sliding layers hold its window and a step's tokens too
    # (``_reference``, "Sliding-window layers"): ``wp`` blocks
    wp = wblocks
    if us > 0 and wblocks > 0:
        wp = (wblocks + (max_batched - 1 + block_size - 1) // block_size
              if max_batched < UNLIMITED else UNLIMITED)
    total_blocks = min(kv_budget // block_size, UNLIMITED // uw) * uw if paged else 0
    bs = block_size if paged else 1
    # a hybrid model's recurrent state: each running sequence holds this many tokens of the
    # budget (``_reference``, "Recurrent state"), in whole blocks when paged; 0 without one
    st = state_tokens_per_sequence
    sb = (st + block_size - 1) // block_size * uw if paged else 0
    window = coef[_SW]
    windowed = not _TICK and window < math.inf   # sliding-window layers: count C >= window
    w_cross = np.int64(math.ceil(window)) if windowed else UNBOUNDED
    fa = coef[_FA]
    # the coefficients as a tuple of scalars: no helper is handed an array (docs/simulator.md)
    cf = (coef[0], coef[1], coef[2], coef[3], coef[4], coef[5], coef[6], coef[7], coef[8],
          coef[9], coef[10], coef[11], coef[12], coef[13], coef[14], coef[15], coef[16],
          coef[17], coef[18], coef[19], coef[20], coef[21], coef[22], coef[23], coef[24],
          coef[25], coef[26], coef[27], coef[28], coef[29], coef[30])
    # speculative decoding: a sequence's whole path is filed in step rings when it starts
    # decoding (docs/simulator.md); without it the path below is the plain one.
    gain, gain_offset = gains
    s_len = 0
    if spec:
        for i in range(n):
            s_len = max(s_len, output[i])
    # the step rings: a path is at most s_len steps long, so no two live steps share a slot
    s_mask = _spec_ring_size(s_len) - 1 if spec else 0
    s_windowed = spec and windowed
    # paged sliding-window layers: the rings file a step's new blocks in units, and the
    # tokens it adds to the sliding layers (the plain path's window counters stay off)
    s_slid = spec and us > 0
    # a draft model with a sliding window reads its own window-capped context: its sums too
    d_window = draft_coef[_SW]
    d_windowed = spec and not _TICK and draft_share <= 0.0 and d_window < math.inf
    d_cross = np.int64(math.ceil(d_window)) if d_windowed else UNBOUNDED
    # the step rings, one row a step: 16 bytes (48 with a window) per step of the longest
    # output, as the static kernel's scratch is 8 per token; written in place
    s_ring = np.zeros((s_mask + 1 if spec else 0,
                       7 if s_windowed or d_windowed or s_slid else 2), np.int64)
    d_below = 0                # decoding sequences' context below the draft's window, summed
    d_above = 0                # decoding sequences at or past it
    s_start = np.zeros(n if spec else 0, np.int64)     # step its decoding started
    s_m0 = np.zeros(n if spec else 0, np.int64)        # tokens it had then
    s_c0 = np.zeros(n if spec else 0, np.int64)        # its context then
    dcf = (draft_coef[0], draft_coef[1], draft_coef[2], draft_coef[3], draft_coef[4],
           draft_coef[5], draft_coef[6], draft_coef[7], draft_coef[8], draft_coef[9],
           draft_coef[10], draft_coef[11], draft_coef[12], draft_coef[13], draft_coef[14],
           draft_coef[15], draft_coef[16], draft_coef[17], draft_coef[18], draft_coef[19],
           draft_coef[20], draft_coef[21], draft_coef[22], draft_coef[23], draft_coef[24],
           draft_coef[25], draft_coef[26], draft_coef[27], draft_coef[28], draft_coef[29],
           draft_coef[30])
    kk = float(draft_tokens)
    # filing counts a gain's new block without a branch where no gain fills two (the roofline
    # workload; the tick one keeps the loop, measured: BENCHMARKS.md, speculative decoding)
    one_block = paged and draft_tokens + 1 <= bs and not _TICK
    # the draft prefills every chunk (none is drafted from at k = 0, which is plain decoding);
    # a head's attention is the target's, so it reads and pairs the chunks by the target's rule
    d_prefill = spec and not _TICK and draft_tokens > 0
    pcf = cf if draft_share > 0.0 else dcf
    drafted = 0                # sequence-steps drafted; k tokens each
    accepted = 0               # gained tokens beyond the first, each a gap of 0 (added at the end)
    # Prefix caching: ``alloc`` and ``used`` include the resident prefixes' blocks and tokens;
    # ``shared`` is the prefix blocks a running sequence uses from the cache (not its own).
    caching = prefix_caching and paged
    n_groups = 1
    max_out = 0
    max_len = 0
    for i in range(n):
        n_groups = max(n_groups, prefix_group[i] + 1)
        max_out = max(max_out, output[i])
        max_len = max(max_len, max(prompt_tokens[i], 1) + output[i])
    recv_interval, clients, request_overhead, stream, steps = recv
    # scheduler steps (``_reference``, "Scheduler steps"): the decode step counter ``g`` runs
    # in windows of ``steps`` from 0 (prefill steps leave it), so a window ends where ``g`` is
    # a multiple of it, and a sequence retires at the first such step after its last token
    windows = steps > 1 and not one_token
    chunked = stream > 1 or windows
    max_key = max_out + steps - 1 if windows else max_out
    # the sliding layers' blocks: decoding sequences below the window by phase (each takes a
    # sliding block at its block boundaries too) and how many of them; a count ring of the
    # steps at which they reach it (where one can before it retires)
    slid = us > 0 and not one_token and not spec
    crossing = slid and wt <= max_len
    x_size = 1
    while crossing and x_size <= wt:
        x_size *= 2
    x_mask = x_size - 1
    x_count = np.zeros(x_size, np.int64)
    by_phase_w = np.zeros(bs if slid else 1, np.int64)
    n_bm = 0                   # decoding sequences below the window
    used_s = 0                 # tokens the sliding layers hold, min(context, wt) summed
    g_blocks = np.zeros(n_groups, np.int64)
    for i in range(n):
        if prefix_group[i] >= 0:
            g_blocks[prefix_group[i]] = prefix_tokens[i] // block_size
    g_res = np.zeros(n_groups, np.bool_)
    g_refs = np.zeros(n_groups, np.int64)
    g_stamp = np.zeros(n_groups, np.float64)     # n_steps at the last release
    cached_blocks = 0          # blocks of the resident prefixes
    evictable = 0              # of those, blocks of the prefixes no sequence uses
    cb_t = 0.0                 # integral of cached_blocks over time
    # Calendar rings keyed by step counter (retirement, reaching the window): a key is at most
    # the longest output (or the window) ahead of ``g``, so each bucket holds one step.
    ret_mask = _ring_size(max_key) - 1
    win_mask = _ring_size(w_cross) - 1 if windowed else 0
    # Per request: a queued or prefilling request holds its token counts; a decoding one holds
    # them less the step counter ``g`` (all decoding sequences grow by one a step, so none is
    # touched in a decode step: cost per step does not grow with the batch). ``blocks``: paged,
    # prefilling, blocks held; ``state``: 0 not running, 1 prefilling, 2 decoding; ``above``:
    # decoding with context >= window; ``last_tok``: a preempted sequence's latest token time.
    # The caller's buffers where they are long enough (their views may alias one another,
    # measured as fast as arrays of their own: docs/simulator.md), else arrays of this run's.
    need_i, need_r, need_f = _scratch_need(n, max_key, _TICK, coef)
    if ints.shape[0] >= need_i and reals.shape[0] >= need_r and flags.shape[0] >= need_f:
        (shared, generated, context, to_prefill, prefilled, blocks, state, above, last_tok,
         prompt, queue, r_next, r_prev, p_next, p_prev, ret_next, ret_prev, ret_key, win_next,
         win_prev, win_key) = _scratch_carved(ints, reals, flags, n, ret_mask + 1,
                                              win_mask + 1)
    else:
        (shared, generated, context, to_prefill, prefilled, blocks, state, above, last_tok,
         prompt, queue, r_next, r_prev, p_next, p_prev, ret_next, ret_prev, ret_key, win_next,
         win_prev, win_key) = _scratch_fresh(n, ret_mask + 1, win_mask + 1)
    for i in range(n):
        prompt[i] = max(prompt_tokens[i], 1)  # an empty prompt is its start token
    q_head = np.zeros(2, np.int64)
    q_size = np.zeros(2, np.int64)
    # running sequences and prefilling ones, each a linked list in admission order (sentinel n)
    r_next[n] = n
    r_prev[n] = n
    p_next[n] = n
    p_prev[n] = n
    # paged: decoding sequences by (context - g) mod block size; those with context a multiple
    # of the block size need a new block this step, phase ``ph`` = (-g) mod block size
    by_phase = np.zeros(bs, np.int64)
    ph = 0
    cap = min(max_num_seqs, n)
    done_ids = np.empty(cap, np.int64)       # prefills completing in a step
    # without mixing (``_reference``, step 5): the end of the latest step that was not
    # prefill-only, and the sequences that became decoding since (their token times in
    # ``last_tok``), whose gaps the next decode step counts one by one
    separate = _SEPARATE
    t_decode = -math.inf
    waiting = np.empty(n if separate else 0, np.int64)
    n_waiting = 0
    nrun = 0
    n_dec = 0
    n_interactive = 0
    alloc = 0                  # paged: blocks held by running sequences
    reserved = 0               # reserve: final lengths of running sequences
    used = 0                   # tokens of context held by running sequences
    dec_context = 0            # sum of decoding sequences' context
    n_above = 0                # decoding sequences at or past the window
    below_context = 0          # sum of context of the decoding sequences below the window
    g = np.int64(0)            # steps run
    # the step statistics, kept in registers and stored at the end
    n_steps = busy = peak_run = run_t = act_t = peak_res = res_t = peak_used = used_t = 0.0
    n_gaps = gaps_met = gap_time = 0.0

    t = math.ceil(arrival[0]) * 1.0 if _TICK else arrival[0]
    nxt = 0
    # stream interval or scheduler steps above 1 (``chunked``): each request's tokens sent and
    # the time of its latest send
    sent = np.zeros(n if chunked else 1, np.int64)
    sent_at = np.zeros(n if chunked else 1)
    recv_admits = clients > 0
    intake = 0.0               # the engine's time for the requests taken in since the latest
    #                            step (``_reference``, "Request overhead")
    recv_count = 0             # the steps' weights since the latest receive step
    received = 0               # closed loop: the requests (in order) the server has taken in
    n_answered = 0             # requests completed or rejected: each frees a closed-loop client
    while True:
        # the decoding sequences whose context reaches the window in this step: no more
        # sliding blocks (counted before retiring, so that a retiring one below it is c < wt)
        if crossing and x_count[g & x_mask] > 0:
            n_bm = _window_reached(x_count, g & x_mask, by_phase_w, ph, n_bm)
        # 2. retire: the decoding sequences whose last token came in the previous step
        b = n + (g & ret_mask)
        i = ret_next[b]
        while i != b:
            j = ret_next[i]
            if ret_key[i] == g:
                ret_next[ret_prev[i]] = ret_next[i]
                ret_prev[ret_next[i]] = ret_prev[i]
                c = context[i] + g
                finish[i] = t
                n_answered += 1
                if paged:
                    alloc -= _units_held((c + block_size - 1) // block_size, shared[i],
                                         wblocks, uf, us) + sb
                    if not one_token:
                        by_phase[context[i] % bs] -= 1
                    if slid and c < wt:
                        n_bm = _below_window(-1, context[i], bs, by_phase_w, x_count, x_mask,
                                             wt, crossing, n_bm)
                reserved -= prompt[i] + output[i] + st
                used -= c - shared[i] * block_size + st
                if us > 0:
                    used_s -= min(c, wt) + st
                if not one_token:
                    dec_context -= c
                if shared[i] > 0:
                    q = prefix_group[i]
                    g_refs[q] -= 1
                    if g_refs[q] == 0:
                        g_stamp[q] = n_steps
                        evictable += g_blocks[q]
                    shared[i] = 0
                n_dec -= 1
                if d_windowed:
                    if c >= d_cross:
                        d_above -= 1
                    else:
                        d_below -= c
                if windowed and not one_token:
                    if above[i]:
                        n_above -= 1
                        above[i] = False
                    else:
                        below_context -= c
                        win_next[win_prev[i]] = win_next[i]
                        win_prev[win_next[i]] = win_prev[i]
                if priority[i] == INTERACTIVE:
                    n_interactive -= 1
                generated[i] += g
                context[i] = 0
                state[i] = 0
                r_next[r_prev[i]] = r_next[i]
                r_prev[r_next[i]] = r_prev[i]
                nrun -= 1
            i = j
        # 1. arrive, after 2. retire (the two commute): a receive step is decided by what still
        # runs (``_reference``, "Receive interval"); the arrivals wait for one, unless the queue
        # is a closed loop's, whose requests are admitted once the server has taken them in
        receive = recv_interval <= 1 or recv_count >= recv_interval or nrun == 0
        if receive:
            recv_count = 0
        mid_window = windows and g % steps != 0     # nothing is scheduled inside a window
        before = received if recv_admits else nxt
        while (receive or recv_admits) and nxt < n and arrival[nxt] <= t:
            i = nxt
            nxt += 1
            if paged:
                nb = (prompt[i] + output[i] + block_size - 1) // block_size
                never = _units_held(nb, 0, wp, uf, us) + sb > total_blocks
            else:
                never = prompt[i] + output[i] + st > kv_budget
            if never:
                status[i] = REJECTED
                n_answered += 1
            else:
                k = priority[i]
                j = q_head[k] + q_size[k]
                queue[k, j - n if j >= n else j] = i
                q_size[k] += 1
        if receive:              # the requests sent by now: those arrived that the client's
            received = min(nxt, clients + n_answered)    # answers have let it send
        taken = (received if recv_admits else nxt) - before
        if taken > 0:
            intake += request_overhead * taken
        need = by_phase[ph] if paged and not one_token else 0
        if slid:
            need = uf * need + us * by_phase_w[ph]
        if spec:                 # the blocks of the decoding sequences' filed gains
            need = s_ring[g & s_mask, _S_BLK]
        # 3. admit (a closed loop's queue up to the requests taken in)
        for k in range(0 if mid_window else 2):
            stop = False
            while q_size[k] > 0:
                i = queue[k, q_head[k]]
                if recv_admits and i >= received:
                    break                # not yet at the server: this tier waits
                if nrun >= max_num_seqs:
                    stop = True
                    break
                if k == BATCH and nrun >= interactive_cap and (q_size[INTERACTIVE] > 0
                                                             or n_interactive > 0):
                    stop = True
                    break
                first_blocks = 0
                q = prefix_group[i]
                hit = caching and q >= 0 and g_res[q] and g_blocks[q] > 0
                if paged:
                    # its first blocks in units: the full layers' own, the sliding layers'
                    nb = (prompt[i] + generated[i] + 1 + block_size - 1) // block_size
                    first_blocks = _units_held(nb, g_blocks[q] if hit else 0, wp, uf, us)
                    fits = total_blocks - alloc - need >= first_blocks + sb
                    if not fits and caching:
                        spare = evictable - (g_blocks[q] if hit and g_refs[q] == 0 else 0)
                        if total_blocks - alloc - need + uf * spare >= first_blocks + sb:
                            while total_blocks - alloc - need < first_blocks + sb:
                                e = _lru_group(g_res, g_refs, g_stamp, q if hit else -1)
                                g_res[e] = False
                                cached_blocks -= g_blocks[e]
                                evictable -= g_blocks[e]
                                alloc -= uf * g_blocks[e]
                                used -= g_blocks[e] * block_size
                                stats[STAT_PFX_EVICT] += 1.0
                            fits = True
                else:
                    fits = reserved + prompt[i] + output[i] + st <= kv_budget
                if not fits:
                    stop = True
                    break
                q_head[k] = q_head[k] + 1 if q_head[k] + 1 < n else 0
                q_size[k] -= 1
                first_admission = np.isnan(admit[i])
                if first_admission:
                    admit[i] = t
                    if q >= 0:
                        stats[STAT_PFX_REQ] += 1.0
                        if hit:
                            stats[STAT_PFX_HIT] += 1.0
                to_prefill[i] = prompt[i] + generated[i]
                prefilled[i] = 0
                context[i] = 0
                if hit:
                    # prefill starts after the cached tokens (the last prompt token is always
                    # computed: its logits give the next token)
                    shared[i] = g_blocks[q]
                    if g_refs[q] == 0:
                        evictable -= g_blocks[q]
                    g_refs[q] += 1
                    cached = min(shared[i] * block_size, to_prefill[i] - 1)
                    prefilled[i] = cached
                    context[i] = cached
                    used += cached - shared[i] * block_size
                    if us > 0:
                        used_s += min(cached, wt)
                    stats[STAT_PFX_SAVED] += cached
                if first_admission and arrived_kv_tokens[i] > 0:
                    # KV that came with the request, in its own blocks (a preemption loses it)
                    cached = min(arrived_kv_tokens[i], to_prefill[i] - 1)
                    if cached > prefilled[i]:
                        used += cached - prefilled[i]
                        if us > 0:
                            used_s += min(cached, wt) - min(prefilled[i], wt)
                        prefilled[i] = cached
                        context[i] = cached
                if paged:
                    blocks[i] = first_blocks
                    alloc += first_blocks + sb
                else:
                    reserved += prompt[i] + output[i] + st
                used += st
                if us > 0:
                    used_s += st
                if priority[i] == INTERACTIVE:
                    n_interactive += 1
                state[i] = 1
                last = r_prev[n]
                r_next[last] = i
                r_prev[i] = last
                r_next[i] = n
                r_prev[n] = i
                last = p_prev[n]
                p_next[last] = i
                p_prev[i] = last
                p_next[i] = n
                p_prev[n] = i
                nrun += 1
            if stop:
                break
        # 4. terminate-check
        if nrun == 0:
            if q_size[0] > 0 or q_size[1] > 0:
                _store_steps(stats, n_steps, busy, peak_run, run_t, act_t, peak_res / uw,
                             res_t / uw, peak_used / uw, used_t / uw)
                stats[STAT_GAPS] = n_gaps
                stats[STAT_GAPS_MET] = gaps_met
                stats[STAT_GAP_T] = gap_time
                stats[STAT_END] = t
                return STALLED
            if nxt == n:
                break
            if intake > 0.0:     # the front end's work, then the next arrival
                t = max(t + intake, arrival[nxt])
                intake = 0.0
            else:
                t = math.ceil(arrival[nxt]) * 1.0 if _TICK else arrival[nxt]
            continue
        # 5. step: preempt the latest admitted until the growth fits (paged) ... (without
        # mixing, a step with prompt tokens carries only those: no sequence grows)
        prefill_only = separate and p_next[n] != n
        # a window's first step takes the blocks of the whole window (``_reference``,
        # "Scheduler steps"): ``need_w``; ``need`` stays this step's
        window_start = windows and not mid_window and paged and not prefill_only
        need_w = 0
        if window_start:
            for j in range(steps):
                need_w += by_phase[(ph - j) % bs]
        if paged and not one_token and not prefill_only:
            while (need_w if window_start else need) > total_blocks - alloc:
                if caching and evictable > 0:    # an unused prefix goes before any sequence
                    e = _lru_group(g_res, g_refs, g_stamp, -1)
                    g_res[e] = False
                    cached_blocks -= g_blocks[e]
                    evictable -= g_blocks[e]
                    alloc -= uf * g_blocks[e]
                    used -= g_blocks[e] * block_size
                    stats[STAT_PFX_EVICT] += 1.0
                    continue
                v = r_prev[n]
                r_next[r_prev[v]] = r_next[v]
                r_prev[r_next[v]] = r_prev[v]
                nrun -= 1
                if state[v] == 2:
                    c = context[v] + g
                    n_dec -= 1
                    # it decoded in the step that ended at t (without mixing: its latest token)
                    last_tok[v] = max(last_tok[v], t_decode) if separate else t
                    if spec:
                        # where its path is now; its filed steps from this one on withdrawn
                        m, c = _spec_walk(gain, gain_offset[v], s_m0[v], s_c0[v],
                                          g - s_start[v])
                        x = np.int64(gain[gain_offset[v] + m])
                        need -= _new_units(c, x, bs, wblocks, uf, us)
                        _spec_withdraw(s_ring, gain, gain_offset[v], m, c, output[v], g,
                                       s_mask, paged, bs, s_windowed, w_cross, d_windowed,
                                       d_cross, s_slid, wblocks, uf, us, wt)
                        context[v] = c - g
                        generated[v] = m - g
                        if windowed:
                            above[v] = c >= w_cross
                        if d_windowed:
                            if c >= d_cross:
                                d_above -= 1
                            else:
                                d_below -= c
                    elif c % block_size == 0:
                        need -= uf + (us if c < wt else 0)
                    if window_start:     # the window's blocks it would have taken
                        need_w -= (c + steps - 1) // block_size - (c - 1) // block_size
                    by_phase[context[v] % bs] -= 1
                    if slid and c < wt:
                        n_bm = _below_window(-1, context[v], bs, by_phase_w, x_count, x_mask,
                                             wt, crossing, n_bm)
                    alloc -= _units_held((c + block_size - 1) // block_size, shared[v],
                                         wblocks, uf, us) + sb
                    used -= c - shared[v] * block_size + st
                    if us > 0:
                        used_s -= min(c, wt) + st
                    dec_context -= c
                    if windowed:
                        if above[v]:
                            n_above -= 1
                            above[v] = False
                        else:
                            below_context -= c
                            win_next[win_prev[v]] = win_next[v]
                            win_prev[win_next[v]] = win_prev[v]
                    ret_next[ret_prev[v]] = ret_next[v]
                    ret_prev[ret_next[v]] = ret_prev[v]
                    generated[v] += g
                else:
                    p_next[p_prev[v]] = p_next[v]
                    p_prev[p_next[v]] = p_prev[v]
                    alloc -= blocks[v] + sb
                    used -= context[v] - shared[v] * block_size + st
                    if us > 0:
                        used_s -= min(context[v], wt) + st
                if shared[v] > 0:
                    q = prefix_group[v]
                    g_refs[q] -= 1
                    if g_refs[q] == 0:
                        g_stamp[q] = n_steps
                        evictable += g_blocks[q]
                    shared[v] = 0
                blocks[v] = 0
                context[v] = 0
                state[v] = 0
                if priority[v] == INTERACTIVE:
                    n_interactive -= 1
                preemptions[v] += 1
                stats[STAT_PREEMPT] += 1.0
                k = priority[v]
                q_head[k] = q_head[k] - 1 if q_head[k] > 0 else n - 1
                queue[k, q_head[k]] = v
                q_size[k] += 1
        # ... then the step: each decoding sequence's token (all at once, from the running
        # sums), and prefill slices in admission order from the budget left after them
        n_decode = 0 if one_token or prefill_only else n_dec   # one token: all retired
        budget = max_batched - n_decode
        n_prefill = 0
        pairs = 0.0
        longest_chunk = 0
        kv_read = 0.0
        if not _TICK and not one_token and not prefill_only:
            kv_read = _decoding_kv_read(fa, window, windowed, dec_context, below_context,
                                        n_above)
        kv_dec = kv_read
        d_kv_pre = 0.0
        d_pairs = 0.0
        n_done = 0
        i = p_next[n]
        while i != n:
            c = min(to_prefill[i] - prefilled[i], budget)
            budget -= c
            n_prefill += c
            if c > longest_chunk:
                longest_chunk = c
            if c > 0:
                kv_read += _kv_read(_TICK, cf, float(prefilled[i]))
                pairs += _chunk_pairs(_TICK, cf, float(c), float(prefilled[i]))
                if spec and d_prefill:        # the draft prefills the chunk too
                    d_kv_pre += _kv_read(_TICK, pcf, float(prefilled[i]))
                    d_pairs += _chunk_pairs(_TICK, pcf, float(c), float(prefilled[i]))
            if us > 0:
                used_s += min(context[i] + c, wt) - min(context[i], wt)
            prefilled[i] += c
            context[i] += c
            used += c
            if prefilled[i] == to_prefill[i]:
                done_ids[n_done] = i
                n_done += 1
            i = p_next[i]
        if spec and n_decode > 0:
            # k draft steps, then one verification of k + 1 positions per sequence
            dt = _spec_step_time(_TICK, cf, dcf, kk, n_decode, n_prefill, kv_read, kv_dec,
                                 pairs, float(longest_chunk), draft_share, d_windowed, d_below,
                                 d_above, d_window, dec_context)
        else:
            dt = _step_time(_TICK, cf, float(n_decode), float(n_prefill), kv_read, pairs,
                            float(longest_chunk))
        if spec and d_prefill and n_prefill > 0:
            # the draft's own pass over the step's prompt chunks (its KV of them)
            # (``spec`` first: a branch on the constant is pruned before typing)
            dt = dt + _spec_prefill_time(_TICK, cf, dcf, draft_share, float(n_prefill),
                                         d_kv_pre, d_pairs, float(longest_chunk))
        if intake > 0.0:         # the requests taken in since the latest step
            dt = dt + intake
            intake = 0.0
        # the decode tokens: every decoding sequence one token longer, blocks where it crossed
        if one_token:
            g += 1
        elif prefill_only or windows and n_decode == 0:
            pass                 # the decoding sequences wait (or all were preempted for a
        else:                    # window's blocks): ``g`` counts their steps
            g, ph, n_above, alloc, used, dec_context, below_context = _decoded(
                n, g, ph, bs, need, n_dec, n_above, alloc, used, dec_context, below_context,
                windowed, win_mask, win_next, win_prev, win_key, context, above)
            if slid:
                used_s += n_bm
        if spec:
            # what the decoding sequences filed for this step beyond one token each: their
            # gains' tokens, their blocks (taken above as ``need``), their window crossings
            drafted += n_decode
            (used, used_s, dec_context, accepted, below_context, n_above, d_below,
             d_above) = _spec_taken(s_ring, (g - 1) & s_mask, s_windowed, d_windowed, s_slid,
                                    used, used_s, dec_context, accepted, below_context,
                                    n_above, d_below, d_above)
        if separate and not prefill_only and t_decode != t:
            # the first decode step after prefill-only ones: gaps of one step for those whose
            # token came at t, the wait since t_decode for the others decoding before it, and
            # one by one for those that began decoding since (as _reference adds them)
            regular = 0
            alive = 0
            for j in range(n_waiting):
                i = waiting[j]
                if state[i] == 2:
                    alive += 1
                    if last_tok[i] == t:
                        regular += 1
            for gap, count in ((dt, regular), (t + dt - t_decode, n_decode - alive)):
                if not chunked:          # else the gaps between sends, below
                    n_gaps, gaps_met, gap_time, k, rec = _gaps_counted(
                        n_gaps, gaps_met, gap_time, itl_target, gap, count)
                    if hist_n[k] == 0 or rec > hist_max[k]:
                        hist_max[k] = rec
                    hist_n[k] += count
            for j in range(n_waiting):
                i = waiting[j]
                if not chunked and state[i] == 2 and last_tok[i] != t:
                    n_gaps, gaps_met, gap_time, k, rec = _gaps_counted(
                        n_gaps, gaps_met, gap_time, itl_target, t + dt - last_tok[i], 1)
                    if hist_n[k] == 0 or rec > hist_max[k]:
                        hist_max[k] = rec
                    hist_n[k] += 1
            n_waiting = 0
        elif not one_token and not chunked:
            n_gaps, gaps_met, gap_time, k, rec = _gaps_counted(n_gaps, gaps_met, gap_time,
                                                                 itl_target, dt, n_decode)
            if hist_n[k] == 0 or rec > hist_max[k]:
                hist_max[k] = rec
            hist_n[k] += n_decode
        # completed prefills yield a token and decode from the next step on
        for j in range(n_done):
            i = done_ids[j]
            p_next[p_prev[i]] = p_next[i]
            p_prev[p_next[i]] = p_prev[i]
            if us > 0:
                if context[i] < wt:
                    used_s += 1
                if paged:        # its prefill's window and step tokens down to the window
                    nb = (context[i] + 1 + block_size - 1) // block_size
                    alloc -= us * (min(nb, wp) - min(nb, wblocks))
            context[i] += 1
            used += 1
            q = prefix_group[i]
            if caching and q >= 0 and shared[i] == 0 and not g_res[q] and g_blocks[q] > 0:
                # a miss's first blocks become its group's, now computed and shareable
                g_res[q] = True
                g_refs[q] = 1
                shared[i] = g_blocks[q]
                cached_blocks += g_blocks[q]
            # a gap across a preemption (one token: never preempted; chunked: below)
            if generated[i] > 0 and not one_token and not chunked:
                gap = t + dt - last_tok[i]
                n_gaps, gaps_met, gap_time, k, rec = _gaps_counted(n_gaps, gaps_met, gap_time,
                                                                     itl_target, gap, 1)
                if hist_n[k] == 0 or rec > hist_max[k]:
                    hist_max[k] = rec
                hist_n[k] += 1
            generated[i] += 1
            if generated[i] == 1:
                first_token[i] = t + dt
            if separate:                  # it waits with the decodes (a step with prompts)
                last_tok[i] = t + dt
                waiting[n_waiting] = i
                n_waiting += 1
            c = context[i]
            state[i] = 2
            n_dec += 1
            if not one_token:
                dec_context += c
            context[i] = c - g
            generated[i] -= g
            if paged and not one_token:
                by_phase[context[i] % bs] += 1
            if slid and c < wt:
                n_bm = _below_window(1, context[i], bs, by_phase_w, x_count, x_mask, wt,
                                     crossing, n_bm)
            if windowed and not one_token:
                if c >= w_cross:
                    above[i] = True
                    n_above += 1
                else:
                    below_context += c
                    win_key[i] = w_cross - context[i]
                    b = n + (win_key[i] & win_mask)
                    f = win_next[b]
                    win_next[i] = f
                    win_prev[i] = b
                    win_prev[f] = i
                    win_next[b] = i
            if spec:
                # its whole path filed from this step on; it is kept as the context and tokens
                # it retires with, less the step it retires at (so retirement reads them as
                # in plain decoding), and out of the window ring (the step rings hold its
                # crossings; ``above``: past the window when it retires)
                m = generated[i] + g
                s_start[i] = g
                s_m0[i] = m
                s_c0[i] = c
                # each step's slot gets what it adds beyond the one token of a plain step
                # (which the decode step adds for all), as _spec_withdraw takes it back
                base = gain_offset[i]
                out_m = output[i]
                room = (c + bs - 1) // bs * bs - c if paged else 0   # free slots, last block
                g_end = g
                c_end = c
                while m < out_m:
                    x = np.int64(gain[base + m])
                    k = g_end & s_mask
                    s_ring[k, _S_TOK] += x - 1
                    if s_slid:
                        s_ring[k, _S_BLK] += _new_units(c_end, x, bs, wblocks, uf, us)
                        if c_end < wt:
                            s_ring[k, _S_SLID] += min(c_end + x, wt) - c_end
                    elif one_block:
                        # at most one new block: without a branch (a block boundary falls at
                        # random, and a mispredicted jump costs more than the rest of the step)
                        r = room - x
                        nb = np.int64(r < 0)
                        room = r + nb * bs
                        s_ring[k, _S_BLK] += nb
                    elif paged:
                        r = room - x
                        while r < 0:
                            r += bs
                            s_ring[k, _S_BLK] += 1
                        room = r
                    if s_windowed and c_end < w_cross:
                        # a crossing takes its context out of the sum (to which the decode
                        # step adds 1, as for any sequence below the window)
                        if c_end + x >= w_cross:
                            s_ring[k, _S_BELOW] -= c_end + 1
                            s_ring[k, _S_ABOVE] += 1
                        else:
                            s_ring[k, _S_BELOW] += x - 1
                    if d_windowed and c_end < d_cross:
                        if c_end + x >= d_cross:
                            s_ring[k, _SD_BELOW] -= c_end
                            s_ring[k, _SD_ABOVE] += 1
                        else:
                            s_ring[k, _SD_BELOW] += x
                    m += x
                    c_end += x
                    g_end += 1
                context[i] = c_end - g_end
                generated[i] = output[i] - g_end
                if windowed:
                    if not above[i]:
                        win_next[win_prev[i]] = win_next[i]
                        win_prev[win_next[i]] = win_prev[i]
                    win_next[i] = i
                    win_prev[i] = i
                    above[i] = c_end >= w_cross
                if d_windowed:
                    if c >= d_cross:
                        d_above += 1
                    else:
                        d_below += c
            ret_key[i] = output[i] - generated[i]
            if windows:          # at the end of the window of its last token
                ret_key[i] = (ret_key[i] + steps - 1) // steps * steps
            b = n + (ret_key[i] & ret_mask)
            f = ret_next[b]
            ret_next[i] = f
            ret_prev[i] = b
            ret_prev[f] = i
            ret_next[b] = i
        window_end = windows and n_decode > 0 and g % steps == 0
        if chunked and not one_token and (stream > 1 or prefill_only or window_end):
            # the gaps between sends, in admission order (``_reference``, "Stream interval",
            # "Scheduler steps": at a window's end and a prefill step's, a window's tokens past
            # a sequence's last never)
            i = r_next[n]
            while i != n:
                if state[i] == 2:
                    m = min(generated[i] + g, output[i])
                    if m > sent[i]:
                        if sent[i] == 0:             # the first token goes at once
                            sent[i] = m
                            sent_at[i] = t + dt
                        elif window_end or windows and prefill_only or (
                                stream > 1 and (m - sent[i] >= stream or m == output[i])):
                            n_gaps, gaps_met, gap_time, k, rec = _gaps_counted(
                                n_gaps, gaps_met, gap_time, itl_target, t + dt - sent_at[i], 1)
                            if hist_n[k] == 0 or rec > hist_max[k]:
                                hist_max[k] = rec
                            hist_n[k] += 1
                            sent[i] = m
                            sent_at[i] = t + dt
                i = r_next[i]
        if nrun > peak_run:
            peak_run = float(nrun)
        (n_steps, busy, run_t, act_t, peak_res, res_t, peak_used, used_t, cb_t) = _stepped(
            dt, nrun, n_decode + n_done, alloc * block_size if paged else reserved,
            uf * used + us * used_s if us > 0 else used, cached_blocks, n_steps, busy, run_t,
            act_t, peak_res, res_t,
            peak_used, used_t, cb_t)
        if not prefill_only:
            t_decode = t + dt
        recv_count += RECV_PROMPT_WEIGHT if n_prefill > 0 else 1
        t = t + dt
        # 6. decode-only stretch: while the next step would only decode (no arrival, no
        # retirement, nothing prefilling or admissible, the new blocks free), run it here
        # without the phases that would do nothing (not right after a prefill-only step,
        # whose waiting decodes the main loop's step counts)
        if p_next[n] != n or one_token or t_decode != t or chunked:
            continue
        admissible = False       # would a queue head be admitted if no block were needed?
        # a closed loop's heads are admitted once taken in: as now, and from the stretch's
        # first receive step (where one falls) as then, which no completion moves
        later = min(nxt, clients + n_answered)
        for p in range(2 if recv_admits else 1):
            upto = UNLIMITED if not recv_admits else received if p == 0 else later
            for k in range(2):
                if q_size[k] == 0:
                    continue
                i = queue[k, q_head[k]]
                if i >= upto:
                    continue     # not yet at the server: the other tier's head
                if nrun >= max_num_seqs or (k == BATCH and nrun >= interactive_cap
                                            and (q_size[INTERACTIVE] > 0 or n_interactive > 0)):
                    break
                if paged:
                    # with caching, unused prefixes could be evicted (or a hit need fewer
                    # blocks): count them as free, which can only send the run to the main loop
                    nb = (prompt[i] + generated[i] + block_size) // block_size
                    admissible = (total_blocks - alloc + uf * cached_blocks
                                  >= _units_held(nb, 0, wp, uf, us) + sb)
                else:
                    admissible = reserved + prompt[i] + output[i] + st <= kv_budget
                break
            if admissible:
                break
        # False stays False while only decoding happens: slots and queues do not change, and
        # blocks are only taken
        if admissible:
            continue
        if _TICK:
            # Every step lasts one tick and every sum is a whole number (exact in float64), so
            # the stretch's statistics are added in closed form once it is measured.
            limit = UNBOUNDED
            if nxt < n:
                limit = np.int64(math.ceil(arrival[nxt])) - np.int64(t)
            m = 0
            res_sum = 0                  # paged: blocks held after each step, summed
            used_sum = 0                 # speculative: KV used after each step, summed
            slid_sum = 0                 # sliding layers: their tokens after each step, summed
            while m < limit:
                b = n + ((g + m) & ret_mask)
                if ret_next[b] != b:
                    break
                if crossing and x_count[(g + m) & x_mask] > 0:
                    n_bm = _window_reached(x_count, (g + m) & x_mask, by_phase_w, ph, n_bm)
                if paged:
                    # speculative: the blocks the decoding sequences filed for this step
                    need = (s_ring[(g + m) & s_mask, _S_BLK] if spec
                            else uf * by_phase[ph] + us * by_phase_w[ph] if slid
                            else by_phase[ph])
                    if need > total_blocks - alloc:
                        break
                    alloc += need
                    res_sum += alloc
                    ph = ph - 1 if ph > 0 else bs - 1
                if slid:
                    used_s += n_bm
                    slid_sum += used_s
                if spec:
                    drafted += n_dec
                    (used, used_s, dec_context, accepted, below_context, n_above, d_below,
                     d_above) = _spec_taken(s_ring, (g + m) & s_mask, False, False, s_slid,
                                            used + n_dec, used_s, dec_context + n_dec,
                                            accepted, below_context, n_above, d_below, d_above)
                    used_sum += used
                    slid_sum += used_s
                recv_count, received = _recv_stepped(recv_count, recv_interval, received, later)
                m += 1
            if m == 0:
                continue
            g += m
            n_steps += m
            busy += m
            run_t += nrun * m
            act_t += n_dec * m
            if paged:
                res_t += block_size * res_sum
                if alloc * block_size > peak_res:
                    peak_res = float(alloc * block_size)
                cb_t += cached_blocks * m
            else:
                res_t += reserved * m
            if spec:                     # each step's gains taken above
                used_t += uf * used_sum + us * slid_sum
            else:
                used_t += uf * (m * used + n_dec * (m * (m + 1) // 2)) + us * slid_sum
                used += n_dec * m
                dec_context += n_dec * m
            if uf * used + us * used_s > peak_used:
                peak_used = float(uf * used + us * used_s)
            n_gaps, gaps_met, gap_time, k, rec = _gaps_counted(n_gaps, gaps_met, gap_time,
                                                                 itl_target, 1.0, n_dec * m)
            if hist_n[k] == 0 or rec > hist_max[k]:
                hist_max[k] = rec
            hist_n[k] += n_dec * m
            t = t + m
            t_decode = t
            continue
        while nxt == n or arrival[nxt] > t:
            b = n + (g & ret_mask)
            if ret_next[b] != b:
                break
            if crossing and x_count[g & x_mask] > 0:
                n_bm = _window_reached(x_count, g & x_mask, by_phase_w, ph, n_bm)
            need = 0
            if paged:
                need = (s_ring[g & s_mask, _S_BLK] if spec
                        else uf * by_phase[ph] + us * by_phase_w[ph] if slid
                        else by_phase[ph])
            if need > total_blocks - alloc:
                break
            # the step of section 5 with no prefill slice and no preemption, no completion;
            # its receive first: a closed loop's requests taken in lengthen it
            before = received
            recv_count, received = _recv_stepped(recv_count, recv_interval, received, later)
            kv_read = _decoding_kv_read(fa, window, windowed, dec_context, below_context, n_above)
            if spec:
                dt = _spec_step_time(_TICK, cf, dcf, kk, n_dec, 0, kv_read, kv_read, 0.0, 0.0,
                                     draft_share, d_windowed, d_below, d_above, d_window,
                                     dec_context)
            else:
                dt = _step_time(_TICK, cf, float(n_dec), 0.0, kv_read, 0.0, 0.0)
            if recv_admits and received > before:
                dt = dt + request_overhead * (received - before)
            g, ph, n_above, alloc, used, dec_context, below_context = _decoded(
                n, g, ph, bs, need, n_dec, n_above, alloc, used, dec_context, below_context,
                windowed, win_mask, win_next, win_prev, win_key, context, above)
            if slid:
                used_s += n_bm
            if spec:
                drafted += n_dec
                (used, used_s, dec_context, accepted, below_context, n_above, d_below,
                 d_above) = _spec_taken(s_ring, (g - 1) & s_mask, s_windowed, d_windowed,
                                        s_slid, used, used_s, dec_context, accepted,
                                        below_context, n_above, d_below, d_above)
            n_gaps, gaps_met, gap_time, k, rec = _gaps_counted(n_gaps, gaps_met, gap_time,
                                                                 itl_target, dt, n_dec)
            if hist_n[k] == 0 or rec > hist_max[k]:
                hist_max[k] = rec
            hist_n[k] += n_dec
            (n_steps, busy, run_t, act_t, peak_res, res_t, peak_used, used_t, cb_t) = _stepped(
                dt, nrun, n_dec, alloc * block_size if paged else reserved,
                uf * used + us * used_s if us > 0 else used, cached_blocks, n_steps, busy, run_t,
                act_t, peak_res,
                res_t, peak_used, used_t, cb_t)
            t = t + dt
            t_decode = t
    if spec:
        # The gained tokens come with their step's first: gaps of 0, counted once here (counts
        # of whole numbers and a sum of zeros, equal to adding them step by step).
        stats[STAT_DRAFTED] = drafted * float(draft_tokens)
        stats[STAT_ACCEPTED] = accepted
        n_gaps, gaps_met, gap_time, k, rec = _gaps_counted(n_gaps, gaps_met, gap_time,
                                                             itl_target, 0.0, accepted)
        if hist_n[k] == 0 or rec > hist_max[k]:
            hist_max[k] = rec
        hist_n[k] += accepted
    stats[STAT_PFX_T] = cb_t
    # [tokens of every layer]: the units' sums over a block's units
    _store_steps(stats, n_steps, busy, peak_run, run_t, act_t, peak_res / uw, res_t / uw,
                 peak_used / uw, used_t / uw)
    stats[STAT_GAPS] = n_gaps
    stats[STAT_GAPS_MET] = gaps_met
    stats[STAT_GAP_T] = gap_time
    stats[STAT_END] = t
    _store_percentiles(hist_n, hist_max, stats)
    return 0


def _compiled(function, name, doc, **constants):
    """``function`` compiled (``nogil``, cached under ``name``) with ``constants`` as globals, on
    whose values numba prunes branches (an argument is not pruned; a closure breaks the cache).
    """
    copy = types.FunctionType(function.__code__, {**globals(), **constants}, name)
    copy.__qualname__ = name
    copy.__doc__ = doc
    return njit(nogil=True, **_CACHED)(copy)


def _body(mode, tick):
    """:func:`_continuous` compiled with its constants (``mode``: ``"plain"``, ``"speculative"``,
    ``"one_token"``; ``tick``: the clock), cached as ``_{mode}_body_{clock}``.
    """
    return _compiled(_continuous, f"_{mode}_body_{CLOCKS[tick]}", _continuous.__doc__,
                     _SPECULATIVE=mode == "speculative", _ONE_TOKEN=mode == "one_token",
                     _SEPARATE=mode == "separate", _TICK=tick)


_BODIES = {(mode, tick): _body(mode, tick)
           for mode in ("plain", "speculative", "one_token", "separate")
           for tick in CLOCKS}


def _continuous_run(arrival, prompt_tokens, output, priority, prefix_group, prefix_tokens,
                    arrived_kv_tokens, gain, gain_offset, max_num_seqs, kv_budget,
                    state_tokens_per_sequence, kv_window, paged, block_size, max_batched,
                    interactive_cap, prefix_caching, draft_tokens, recv, tick_mode, coef,
                    draft_coef, draft_share, itl_target, admit, first_token, finish, preemptions,
                    status, stats):
    """A continuous kernel: the body ``_BODY`` of its clock ``_TICK`` on its own histogram and
    scratch; :data:`WRONG_CLOCK` for the other clock.
    """
    if tick_mode != _TICK:                         # noqa: F821 (a global of each copy)
        return WRONG_CLOCK
    hist_n = np.zeros(N_GAP_BINS, np.int64)
    hist_max = np.empty(N_GAP_BINS, np.float64)   # read only where hist_n > 0
    # no scratch lent: the body allocates its own, sized for this run
    workspace = (hist_n, hist_max, np.empty(0, np.int64), np.empty(0, np.float64),
                 np.empty(0, np.bool_))
    body = _BODY                                   # noqa: F821 (a global of each copy)
    return body(arrival, prompt_tokens, output, priority, prefix_group, prefix_tokens,
                arrived_kv_tokens, (gain, gain_offset), max_num_seqs, kv_budget,
                state_tokens_per_sequence, kv_window, paged, block_size, max_batched,
                interactive_cap, prefix_caching, draft_tokens, recv, coef, draft_coef,
                draft_share, itl_target, admit, first_token, finish, preemptions, status, stats,
                workspace)


_PLAIN_DOC = """Continuous batching of one workload; returns 0, :data:`STALLED` or
    :data:`WRONG_CLOCK`.

    The arguments are those of :func:`_continuous` but ``workspace``, with ``gains`` as two
    (``gain``, ``gain_offset``) and ``tick_mode`` before ``coef``, in its order, meaning what
    :func:`rooflinekit.batching._reference.simulate_continuous`'s do (``paged``: its
    ``admission="paged"``; ``UNLIMITED`` for no limit); ``tick_mode`` and ``coef`` are the
    clock. The outputs
    ``admit``, ``first_token``, ``finish``, ``preemptions``, ``status`` (per request) and
    ``stats`` (:data:`N_STATS`) are overwritten. The speculative inputs (the gains,
    ``draft_tokens``, ``draft_coef``, ``draft_share``) are not read.
"""
_SPECULATIVE_DOC = """The plain continuous kernel decoding speculatively; returns as it does.

    ``draft_tokens`` (>= 1) are drafted per sequence-step; request ``i`` gains
    ``gain[gain_offset[i] + m]`` tokens in the step after its ``m``-th (``_reference``,
    "Speculative decoding"); ``draft_coef`` holds the draft model's coefficients, or
    ``draft_share`` > 0 a draft head's share of the target's decode step. The plain kernel
    takes the same arguments and reads none of these.
"""

_SEPARATE_DOC = """The plain continuous kernel with prefill steps apart from the decodes (a step
    with prompt tokens carries only those; ``_reference``, step 5); returns as it does.
"""
_DOCS = {"plain": _PLAIN_DOC, "speculative": _SPECULATIVE_DOC, "separate": _SEPARATE_DOC}
_CONTINUOUS = {(mode, tick): _compiled(
    _continuous_run, f"continuous_run{'' if mode == 'plain' else '_' + mode}_{CLOCKS[tick]}",
    _DOCS[mode], _BODY=_BODIES[mode, tick], _TICK=tick)
    for mode in _DOCS for tick in CLOCKS}


def continuous_kernel(tick_mode: bool, speculative: bool = False, separate: bool = False):
    """The continuous kernel of a clock (``tick_mode``): plain, speculative, or with prefill
    steps apart (``separate``; not with ``speculative``): a numba dispatcher taking
    :data:`_PLAIN_DOC`'s arguments."""
    if speculative and separate:
        raise ValueError("no kernel runs speculative decoding with prefill steps apart")
    mode = "speculative" if speculative else "separate" if separate else "plain"
    return _CONTINUOUS[mode, bool(tick_mode)]


@njit(nogil=True, **_CACHED)
def speculative_gain_table(draws, thresholds, output, gain):
    """:func:`rooflinekit.workloads.speculative_gains` made from its draws, into ``gain``.

    ``draws``, ``thresholds`` as :func:`rooflinekit.workloads.speculative_draws` returns them
    for ``output``; ``gain`` (uint8, at least as long as ``draws``) is overwritten up to the
    draws' length: ``1 + #{j : draws[q] < thresholds[row, j]}`` at position ``q``, ``row`` the
    request's (or the one row), then capped at what is left of the output (tested equal to the
    numpy function, about 12 times as fast).
    """
    n = output.shape[0]
    k = thresholds.shape[1]
    total = draws.shape[0]
    for q in range(total):
        gain[q] = 1
    if thresholds.shape[0] == 1:                 # one α: a pass over every position
        for j in range(k):
            t = thresholds[0, j]
            if t == 0:
                break                            # α^j rounds to 0, and so every later power
            if t > 0xFFFFFFFF:
                for q in range(total):           # α = 1: every position accepts it
                    gain[q] += 1
            else:
                tt = np.uint32(t)
                for q in range(total):
                    gain[q] += np.uint8(draws[q] < tt)
    else:                                        # one α per request: a pass per request
        p = 0
        for i in range(n):
            end = p + output[i]
            for j in range(k):
                t = thresholds[i, j]
                if t == 0:
                    break
                for q in range(p, end):
                    gain[q] += np.uint8(np.int64(draws[q]) < t)
            p = end
    p = 0
    for i in range(n):                           # at most output - m tokens at position m
        for m in range(max(output[i] - k, 0), output[i]):
            if gain[p + m] > output[i] - m:
                gain[p + m] = output[i] - m
        p += output[i]


@njit(nogil=True, **_CACHED)
def static_run(arrival, prompt_tokens, output, batch_size, tick_mode, coef, itl_target,
               admit, first_token, finish, preemptions, status, stats):
    """Static batching of one workload; returns 0 (arguments as the continuous kernel's;
    one kernel serves both clocks)."""
    n = arrival.shape[0]
    _reset_outputs(admit, first_token, finish, preemptions, status, stats)
    prompt = np.maximum(prompt_tokens, 1)    # an empty prompt is its start token
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
                longest_prompt = 0
                for i in range(first, nxt):
                    if prompt[i] > 0:
                        pairs += _chunk_pairs(tick_mode, coef, float(prompt[i]), 0.0)
                        longest_prompt = max(longest_prompt, prompt[i])
                dt = _step_time(tick_mode, coef, 0.0, float(prompt_sum), 0.0, pairs,
                                float(longest_prompt))
            else:
                kv_read = 0.0
                for i in range(first, nxt):
                    kv_read += _kv_read(tick_mode, coef, float(prompt[i] + step))
                dt = _step_time(tick_mode, coef, float(size), 0.0, kv_read, 0.0, 0.0)
            finished += ending[step]         # members whose last token came before this step
            active = size - finished
            used = prompt_sum + size * (step + 1)
            stats[STAT_STEPS] += 1.0
            stats[STAT_BUSY] += dt
            stats[STAT_RUN_T] += size * dt
            stats[STAT_ACT_T] += active * dt
            stats[STAT_RES_T] += kv * dt
            if used > stats[STAT_PEAK_USED]:
                stats[STAT_PEAK_USED] = used
            stats[STAT_USED_T] += used * dt
            if step > 0:           # every member still generating: one gap of dt
                _add_gaps(hist_n, hist_max, stats, itl_target, dt, active)
            t = t + dt
            if step == 0:
                for i in range(first, nxt):
                    first_token[i] = t
        if size > stats[STAT_PEAK_RUN]:
            stats[STAT_PEAK_RUN] = size
        if kv > stats[STAT_PEAK_RES]:
            stats[STAT_PEAK_RES] = kv
        for i in range(first, nxt):
            admit[i] = start
            finish[i] = t
            ending[output[i]] = 0
    stats[STAT_END] = t
    _store_percentiles(hist_n, hist_max, stats)
    return 0



# --- disaggregated serving: the prefill pool, the hand-over, the decode pools -----------------


def _replica_run(arrival, prompt, output, priority, prefix_group, prefix_tokens, arrived, params,
                 tick_mode, coef, itl_target, admit, first_token, finish, preemptions, status,
                 stats, workspace, no_gain):
    """A pool replica's run (the body ``_BODY`` of its clock ``_TICK``) on the workspace's histogram
    and scratch; :data:`WRONG_CLOCK` for the other clock. ``params``: ``ContinuousBatcher._args``.
    """
    if tick_mode != _TICK:                         # noqa: F821 (a global of each copy)
        return WRONG_CLOCK
    (max_num_seqs, kv_budget, state_tokens_per_sequence, kv_window, paged, block_size,
     max_batched, interactive_cap, prefix_caching, draft_tokens, recv) = params
    body = _BODY                                   # noqa: F821 (a global of each copy)
    return body(arrival, prompt, output, priority, prefix_group, prefix_tokens, arrived,
                (no_gain, arrived), max_num_seqs, kv_budget, state_tokens_per_sequence,
                kv_window, paged, block_size, max_batched, interactive_cap, prefix_caching,
                draft_tokens, recv, coef,
                coef, 0.0, itl_target,
                admit, first_token, finish, preemptions, status, stats, workspace)


#: A pool replica by clock and ``one_token``: a prefill replica (every output one token) runs
#: the body compiled without the decoding paths; a decode replica (or any) the plain body.
_REPLICAS = {(one_token, tick): _compiled(
    _replica_run, f"{'_prefill' if one_token else '_decode'}_replica_{CLOCKS[tick]}",
    """One pool replica's run: as the continuous kernel, its gaps added to the workspace's
    histogram and its scratch lent (:func:`_replica_run`).""",
    _BODY=_BODIES["one_token" if one_token else "plain", tick], _TICK=tick)
    for one_token in (False, True) for tick in CLOCKS}


def replica_kernel(tick_mode: bool, one_token: bool):
    """A pool replica's kernel of a clock: a prefill replica's (``one_token``) or a decode
    replica's."""
    return _REPLICAS[bool(one_token), bool(tick_mode)]


@njit(nogil=True, **_CACHED)
def _sort_stable(ids, tmp, starts, key):
    """``ids`` stably sorted by ``key[ids]`` (a natural merge sort: one pass for sorted keys), in
    ``ids`` or ``tmp``, whichever it returns; ``starts`` at least ``ids.shape[0] + 1`` long.
    """
    w = ids.shape[0]
    if w < 2:
        return ids
    r = 0
    starts[0] = 0
    for k in range(1, w):
        if key[ids[k]] < key[ids[k - 1]]:
            r += 1
            starts[r] = k
    r += 1
    starts[r] = w
    src, dst = ids, tmp
    while r > 1:
        # merge runs p and p + 1 into one, its start written over the list already read
        h = 0
        for p in range(0, r, 2):
            lo = starts[p]
            mid = starts[p + 1]
            hi = starts[p + 2] if p + 2 <= r else mid
            a, b = lo, mid
            for k in range(lo, hi):
                # the left run's first on ties (the keys are finite)
                if a < mid and (b >= hi or not key[src[b]] < key[src[a]]):
                    dst[k] = src[a]
                    a += 1
                else:
                    dst[k] = src[b]
                    b += 1
            starts[h] = lo
            h += 1
        starts[h] = w
        r = h
        src, dst = dst, src
    return src


@njit(nogil=True, **_CACHED)
def _fold_replica(stats, replica):
    """A replica's statistics added into the fleet's: the latest end, every count and time
    summed (the gap percentiles are read from the merged histogram instead)."""
    for k in range(N_STATS):
        if k == STAT_END:
            stats[k] = max(stats[k], replica[k])
        elif k < STAT_GAP_P or k >= STAT_GAP_P + _N_PERCENTILES:
            stats[k] += replica[k]


@njit(nogil=True, **_CACHED)
def _scatter_replica(ids, start, stride, m, r_first, first, r_finish, finish, r_preempt,
                     preemptions, r_status, status, rejected_in, pool, r_stats, stats,
                     peak_reserved):
    """A pool replica's outputs (row ``k``: request ``ids[start + k·stride]``) and statistics back
    into the fleet's; a rejection there marked ``pool`` (1 prefill, 2 decode) in ``rejected_in``.
    """
    q = start
    for k in range(m):
        i = ids[q]
        q += stride
        first[i] = r_first[k]
        finish[i] = r_finish[k]
        preemptions[i] += r_preempt[k]
        status[i] = r_status[k]
        if r_status[k] != COMPLETED:
            rejected_in[i] = pool
    _fold_replica(stats, r_stats)
    peak_reserved[pool - 1] = max(peak_reserved[pool - 1], r_stats[STAT_PEAK_RES])


def _disaggregated_run(arrival, prompt, output, priority, prefix_group, prefix_tokens, transfer,
                      prefill_replicas, decode_replicas, prefill_args, decode_args, tick_mode,
                      prefill_coef, decode_coef, itl_target, admit, first_token, finish,
                      preemptions, status, rejected_in, decode_arrival, handoff, stats,
                      peak_reserved):
    """Disaggregated serving of one workload, every replica of both pools in one call.

    The rules and outputs are :func:`rooflinekit.batching._reference.simulate_disaggregated`'s.
    Each replica is the continuous kernel of its requests (``*_args``: the batcher's nine scalar
    parameters, ``*_coef`` its clock): ``_PREFILL`` and ``_DECODE``, the replica kernels of the
    copy's clock. Outputs, overwritten: those of ``simulate_disaggregated``, ``peak_reserved``
    its ``peak_kv_reserved``; ``handoff[:h]`` the completed requests' gaps from first to second
    token, in request order, ``h`` returned with the error code as ``(error, h)``, counted in
    ``token_gaps`` and ``token_gaps_met`` but not in ``token_gap_time``, which the caller adds
    with numpy's summation.
    """
    n = arrival.shape[0]
    for i in range(n):
        admit[i] = np.nan
        first_token[i] = np.nan
        finish[i] = np.nan
        preemptions[i] = 0
        status[i] = COMPLETED
        rejected_in[i] = 0
        decode_arrival[i] = np.nan
    for k in range(N_STATS):
        stats[k] = 0.0
    peak_reserved[0] = 0.0
    peak_reserved[1] = 0.0
    # one histogram for every replica: the prefill runs add no gaps (one token each), the
    # decode runs' gaps pool into the fleet's
    hist_n = np.zeros(N_GAP_BINS, np.int64)
    hist_max = np.empty(N_GAP_BINS, np.float64)
    # One buffer for the whole call: every replica's scratch (sized for the largest of either
    # pool), the gathered requests and their outputs, floats and flags viewed from it. One
    # allocation a call, and the largest: the C allocator keeps it (and its pages) between
    # calls, where many smaller ones freed together were returned to the system and faulted
    # in again. (The few arrays not per request each run allocates itself.)
    max_out = 1
    n_decode = 0
    for i in range(n):
        max_out = max(max_out, output[i])
        if output[i] > 1:
            n_decode += 1
    pre = _scratch_need((n + prefill_replicas - 1) // prefill_replicas, 1, tick_mode,
                        prefill_coef)
    dec = _scratch_need((n_decode + decode_replicas - 1) // decode_replicas, max_out - 1,
                        tick_mode, decode_coef)
    n_int, n_real = max(pre[0], dec[0]), max(pre[1], dec[1])
    n_flag = (max(pre[2], dec[2]) + 7) // 8          # bools, 8 to a word
    work = np.empty(n_int + n_real + n_flag + 16 * n + 1, np.int64)
    o = n_int + n_real + n_flag
    workspace = (hist_n, hist_max, work[:n_int], work[n_int:n_int + n_real].view(np.float64),
                 work[n_int + n_real:o].view(np.bool_))
    no_gain = np.zeros(0, np.uint8)          # not read without speculation
    # one replica's requests, gathered; its outputs, scattered back
    ids = work[o:o + n]
    r_prompt = work[o + n:o + 2 * n]
    r_output = work[o + 2 * n:o + 3 * n]
    r_priority = work[o + 3 * n:o + 4 * n]
    r_group = work[o + 4 * n:o + 5 * n]
    r_prefix = work[o + 5 * n:o + 6 * n]
    r_arrived = work[o + 6 * n:o + 7 * n]
    r_preempt = work[o + 7 * n:o + 8 * n]
    r_status = work[o + 8 * n:o + 9 * n]
    order = work[o + 9 * n:o + 10 * n]       # the hand-over's sort
    reals = work[o + 10 * n:o + 15 * n].view(np.float64)
    r_arrival = reals[:n]
    r_admit = reals[n:2 * n]
    r_first = reals[2 * n:3 * n]
    r_finish = reals[3 * n:4 * n]
    second = reals[4 * n:5 * n]              # the decode pool's first token: the second
    starts = work[o + 15 * n:o + 16 * n + 1]  # the sort's runs
    r_stats = np.empty(N_STATS, np.float64)
    error = 0
    # 1. prefill: request i on prefill replica i mod prefill_replicas, one output token
    for j in range(prefill_replicas):
        m = 0
        for i in range(j, n, prefill_replicas):
            ids[m] = i
            r_arrival[m] = arrival[i]
            r_prompt[m] = prompt[i]
            r_output[m] = 1                  # its first token
            r_priority[m] = priority[i]
            r_group[m] = prefix_group[i]
            r_prefix[m] = prefix_tokens[i]
            r_arrived[m] = 0
            m += 1
        if m == 0:
            continue
        error |= _PREFILL(  # noqa: F821 (a global of each copy)
            r_arrival[:m], r_prompt[:m], r_output[:m], r_priority[:m], r_group[:m],
            r_prefix[:m], r_arrived[:m], prefill_args, tick_mode, prefill_coef, itl_target,
            r_admit[:m], r_first[:m], r_finish[:m], r_preempt[:m], r_status[:m], r_stats,
            workspace, no_gain)
        for q in range(m):
            admit[ids[q]] = r_admit[q]
        _scatter_replica(ids, 0, 1, m, r_first, first_token, r_finish, finish, r_preempt,
                         preemptions, r_status, status, rejected_in, 1, r_stats, stats,
                         peak_reserved)
    # 2. transfer (the hand-over): each request's KV reaches the decode pool after its transfer
    w = 0
    for i in range(n):
        if status[i] == COMPLETED and output[i] > 1:
            decode_arrival[i] = finish[i] + transfer[i]
            ids[w] = i
            w += 1
    waiting = _sort_stable(ids[:w], order[:w], starts, decode_arrival)     # ties by request
    # 3. decode: the k-th arrival on decode replica k mod decode_replicas
    for j in range(decode_replicas):
        m = 0
        for q in range(j, w, decode_replicas):
            i = waiting[q]
            r_arrival[m] = decode_arrival[i]
            r_prompt[m] = prompt[i] + 1      # the prompt and the first token ...
            r_output[m] = output[i] - 1
            r_priority[m] = priority[i]
            r_group[m] = -1
            r_prefix[m] = 0
            r_arrived[m] = prompt[i]         # ... of which the prompt's KV came with it
            m += 1
        if m == 0:
            continue
        error |= _DECODE(  # noqa: F821 (a global of each copy)
            r_arrival[:m], r_prompt[:m], r_output[:m], r_priority[:m], r_group[:m],
            r_prefix[:m], r_arrived[:m], decode_args, tick_mode, decode_coef, itl_target,
            r_admit[:m], r_first[:m], r_finish[:m], r_preempt[:m], r_status[:m], r_stats,
            workspace, no_gain)
        _scatter_replica(waiting, j, decode_replicas, m, r_first, second, r_finish, finish,
                         r_preempt, preemptions, r_status, status, rejected_in, 2, r_stats,
                         stats, peak_reserved)
    _store_percentiles(hist_n, hist_max, stats)
    h = 0
    for i in range(n):
        if status[i] == COMPLETED and output[i] > 1:
            gap = second[i] - first_token[i]
            handoff[h] = gap
            h += 1
            if gap <= itl_target:
                stats[STAT_GAPS_MET] += 1.0
    stats[STAT_GAPS] += h
    return error, h


_DISAGGREGATED = {tick: _compiled(
    _disaggregated_run, f"disaggregated_run_{CLOCKS[tick]}", _disaggregated_run.__doc__,
    _PREFILL=_REPLICAS[True, tick], _DECODE=_REPLICAS[False, tick]) for tick in CLOCKS}


def disaggregated_kernel(tick_mode: bool):
    """The disaggregated kernel of a clock (``tick_mode``): :func:`_disaggregated_run`."""
    return _DISAGGREGATED[bool(tick_mode)]


#: Every entry point by its cached name: the kernels callers run, each compiled on its first
#: call (``rooflinekit.batching.precompile`` compiles them ahead by name).
KERNELS = {d.py_func.__name__: d for d in (
    static_run, speculative_gain_table, *_CONTINUOUS.values(), *_DISAGGREGATED.values())}


# --- calling the kernels: one signature each, and a word before a compile ---------------------


def kernel_inputs(*arrays):
    """``arrays`` as every kernel takes them: writable, C-contiguous, a copy only where not, so
    that each kernel has one signature (``docs/simulator-cache.md``, "What is compiled").
    """
    return tuple(np.require(a, requirements=("C", "W")) for a in arrays)


#: About how long each kernel takes to compile with an empty cache [s] on the project's
#: 2-core machine (``benchmarks/first_run.py``), for the line logged before it compiles.
COMPILE_SECONDS = {"static_run": 3, "continuous_run_tick": 10, "continuous_run_roofline": 12,
                   "continuous_run_speculative_tick": 11,
                   "continuous_run_speculative_roofline": 14,
                   "continuous_run_separate_tick": 10, "continuous_run_separate_roofline": 12,
                   "disaggregated_run_tick": 11,
                   "disaggregated_run_roofline": 13, "speculative_gain_table": 1}

_log = logging.getLogger("rooflinekit")


def is_cached(kernel) -> bool:
    """Whether ``kernel`` runs without compiling: loaded in this process, or a current index in
    numba's cache (one numba cannot read will be rebuilt: not cached).
    """
    if kernel.overloads:
        return True
    try:
        return bool(kernel._cache._cache_file._load_index())    # numba's cache, read only
    except Exception:
        return False


#: Seconds between the heartbeats a compile logs (DEBUG) after its first line: under 2 s, so
#: that a first run is never silent longer.
HEARTBEAT_SECONDS = 1.5


@contextlib.contextmanager
def compile_notice(kernel, heartbeat: float = HEARTBEAT_SECONDS):
    """Around a kernel's first call: if it compiles (not :func:`is_cached`), log so on the
    ``rooflinekit`` logger: an INFO line with the expected time (:data:`COMPILE_SECONDS`), a DEBUG
    heartbeat every ``heartbeat`` seconds, an INFO line with the time taken; each record carries
    ``compile`` (``"start"``, ``"tick"``, ``"end"``) for the command line's one growing line.
    """
    if is_cached(kernel):
        yield
        return
    name = kernel.py_func.__name__
    _log.info("compiling the simulator's %s kernel for this machine, once (about %d s on 2 "
              "cores; later runs load it from numba's cache)", name,
              COMPILE_SECONDS.get(name, 10), extra={"compile": "start"})
    done = threading.Event()

    def beat():
        while not done.wait(heartbeat):
            _log.debug("still compiling %s", name, extra={"compile": "tick"})
    beating = threading.Thread(target=beat, daemon=True)
    start = time.perf_counter()
    beating.start()
    try:
        yield
    except BaseException:
        done.set()
        beating.join()
        _log.info("%s failed after %.1f s", name, time.perf_counter() - start,
                  extra={"compile": "end"})
        raise
    done.set()
    beating.join()
    _log.info("%s compiled in %.1f s", name, time.perf_counter() - start,
              extra={"compile": "end"})
