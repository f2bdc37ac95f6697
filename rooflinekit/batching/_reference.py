"""The batching rules in plain Python, one step at a time, written to be read.

The specification the numba kernels (:mod:`rooflinekit.batching._kernels`) are tested against:
every per-request output and every run statistic of the two must be exactly equal. Clarity over
speed (objects, deques, lists). The codes and layouts both share are
:mod:`rooflinekit.batching._schema`'s. The rules are stated in ``docs/simulator.md``, "The
batching rules", under the headings the docstrings here cite (Time, Empty prompts, Continuous
batching, Prefix caching, Recurrent state, Sliding-window layers, KV that arrives with a request,
Receive interval, Request overhead, Stream interval, Scheduler steps, Speculative decoding,
Static batching, Inter-token gaps);
this module is their
code.

References
----------
.. [1] Serving-capacity guide §4.2-4.5, §8; ``docs/conventions.md`` "Static vs continuous".
.. [2] Yu et al., "Orca: A Distributed Serving System for Transformer-Based Generative Models",
       OSDI 2022 (iteration-level scheduling).
.. [3] Kwon et al., "Efficient Memory Management for Large Language Model Serving with
       PagedAttention", SOSP 2023 (blocks, recompute preemption of the latest-admitted sequence).
.. [4] Agrawal et al., "Taming Throughput-Latency Tradeoff in LLM Inference with Sarathi-Serve",
       OSDI 2024 (chunked prefill under a per-step token budget).
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from rooflinekit.batching._schema import (
    BATCH,
    COMPLETED,
    GAP_MAX_EXPONENT,
    GAP_MIN_EXPONENT,
    GAP_PERCENTILES,
    GAP_SUBBINS,
    INTERACTIVE,
    N_GAP_BINS,
    OUTPUT_NAMES,
    RECV_PROMPT_WEIGHT,
    REJECTED,
    STAT_NAMES,
    UNLIMITED,
)

__all__ = ["simulate_continuous", "simulate_static", "effective_prompt", "GapLog",
           "simulate_disaggregated"]


def effective_prompt(prompt):
    """The prompt a request is simulated with [tokens]: ``max(prompt, 1)`` (module docstring,
    "Empty prompts": an empty prompt is its start token)."""
    return max(prompt, 1)


def gap_bin(x):
    """Histogram bin of a gap ``x`` [time]: octave from ``frexp``, then 512 linear sub-bins.

    ``x = m * 2**e`` with ``m`` in [0.5, 1); ``(m - 0.5) * 1024`` is exact in binary, so the bin
    is the same in every implementation (no logarithm).
    """
    if not x > 0.0:
        return 0
    m, e = math.frexp(x)
    if e < GAP_MIN_EXPONENT:
        return 0
    if e >= GAP_MAX_EXPONENT:
        return N_GAP_BINS - 1
    return (e - GAP_MIN_EXPONENT) * GAP_SUBBINS + int((m - 0.5) * (2 * GAP_SUBBINS))


class GapLog:
    """The inter-token gaps of one run, in bounded memory.

    Counts, the count within ``itl_target`` and the sum are exact. The percentiles are read
    from a histogram of :data:`~rooflinekit.batching._schema.N_GAP_BINS` bins that keeps each
    bin's count and largest gap: the ``P``-th percentile is the nearest-rank gap (rank
    ``ceil(P * n / 100)`` of the ``n`` sorted gaps, numpy's ``"inverted_cdf"``), reported as the
    largest gap in its bin, so it is never below the exact value and less than
    ``1 + 1 / GAP_SUBBINS`` times it (exact where the bin holds one distinct value, as every
    tick-clock gap below 2**10 ticks does).
    """

    def __init__(self, itl_target=math.inf):
        self.target = itl_target
        self.n = 0
        self.met = 0
        self.total = 0.0
        self.count = {}
        self.largest = {}

    def add(self, gap, count=1):
        """``count`` gaps of ``gap`` [time]."""
        if count == 0:
            return
        self.n += count
        if gap <= self.target:
            self.met += count
        self.total += gap * count
        k = gap_bin(gap)
        self.count[k] = self.count.get(k, 0) + count
        self.largest[k] = max(self.largest.get(k, gap), gap)

    def percentile(self, p):
        """Nearest-rank ``p``-th percentile [time] (bin maximum); NaN without gaps."""
        if self.n == 0:
            return math.nan
        rank = (p * self.n + 99) // 100
        seen = 0
        for k in sorted(self.count):
            seen += self.count[k]
            if seen >= rank:
                return self.largest[k]
        raise AssertionError("unreachable: the ranks sum to n")

    def merge(self, other):
        """Add another run's gaps (counted against this log's target): the pooled log."""
        self.n += other.n
        self.met += other.met
        self.total += other.total
        for k, c in other.count.items():
            self.count[k] = self.count.get(k, 0) + c
            self.largest[k] = max(self.largest.get(k, other.largest[k]), other.largest[k])

    def store(self, stats):
        stats["token_gaps"] = self.n
        stats["token_gaps_met"] = self.met
        stats["token_gap_time"] = self.total
        for p in GAP_PERCENTILES:
            stats[f"token_itl_p{p}"] = self.percentile(p)


class _Seq:
    """One request's scheduling state."""

    def __init__(self, index, arrival, prompt, output, tier, group=-1, prefix=0):
        self.index = index
        self.group = group       # shared prefix group, -1 for none
        self.prefix = prefix     # its length [tokens]
        self.shared = 0          # prefix blocks used from the cache (not in ``blocks``)
        self.arrival = arrival
        self.prompt = prompt
        self.output = output
        self.tier = tier
        self.generated = 0       # tokens produced so far (kept across recompute preemption)
        self.to_prefill = 0      # tokens the current (re)admission must prefill
        self.prefilled = 0       # of those, processed so far
        self.generated_at_admit = 0
        self.context = 0         # tokens whose KV is in the cache now
        self.blocks = 0          # paged: blocks held (its own, not the shared prefix's)
        self.admit = math.nan
        self.first_token = math.nan
        self.finish = math.nan
        self.preemptions = 0
        self.status = COMPLETED
        self.last_token = math.nan   # time of the latest output token
        self.sent = 0            # tokens sent to the client ("Stream interval")
        self.sent_at = math.nan  # time of the latest send

    def in_prefill(self):
        return self.generated == self.generated_at_admit


def _ceil_div(a, b):
    return -(-a // b)


def simulate_continuous(arrival, prompt_tokens, output_tokens, priority=None, *,
                        max_num_seqs=UNLIMITED, kv_budget=UNLIMITED, admission="reserve",
                        block_size=16, max_num_batched_tokens=UNLIMITED,
                        interactive_cap=UNLIMITED, clock=None, itl_target=math.inf,
                        trace=None, tokens=None, prefix_group=None, prefix_tokens=None,
                        prefix_caching=False, arrived_kv_tokens=None, draft_tokens=0,
                        gains=None, gap_logs=None, state_tokens_per_sequence=0,
                        mixed_prefill=True, kv_window=(1, 0, UNLIMITED, 1), recv_interval=1,
                        clients=0, request_overhead=0.0, stream_interval=1,
                        num_scheduler_steps=1):
    """Continuous batching, one step at a time (see the module docstring for the rules).

    Parameters
    ----------
    arrival, prompt_tokens, output_tokens, priority : sequences
        The workload (arrival [time] sorted; tokens [tokens]; tier 0 interactive / 1 batch).
    max_num_seqs, kv_budget, max_num_batched_tokens, interactive_cap : int
        Slots, KV budget [tokens], per-step token budget [tokens], batch-tier cap [1]; ``UNLIMITED``
        for none.
    admission : {"reserve", "paged", "prompt"}
        KV admission rule; "prompt" is the guide's failure mode, for tests only.
    block_size : int
        Paged mode: tokens per KV block.
    clock : object or None
        ``None`` for tick mode (each step lasts 1); else an object with ``step_time``,
        ``kv_read`` and ``chunk_pairs`` methods (see the module docstring).
    itl_target : float
        Inter-token gaps up to this [time] count as met (``token_gaps_met``); inf for no target.
    trace : list or None
        If a list, one ``(t, running, kv_reserved, kv_used)`` tuple is appended per step.
    tokens : list or None
        If a list, one ``(request, time)`` tuple is appended per output token (for tests: the
        gaps computed token by token).
    prefix_group, prefix_tokens : sequences or None
        Each request's shared prefix group (-1: none) and its length [tokens].
    prefix_caching : bool
        Paged mode: share and cache prefix blocks (module docstring).
    arrived_kv_tokens : sequence or None
        Each request's prompt tokens whose KV comes with it [tokens] (module docstring,
        "KV that arrives with a request"); None for none.
    draft_tokens : int
        Speculative decoding's tokens drafted per step, k [tokens]; 0 (default) for none.
    gains : (gain, offset) or None
        With ``draft_tokens``: request ``i`` gains ``gain[offset[i] + m]`` tokens in the decode
        step after its ``m``-th (module docstring, "Speculative decoding"). The clock then also
        needs ``draft_time(n_decode, kv_read, contexts)``.
    gap_logs : list or None
        If a list, the run's :class:`GapLog` is appended (to pool the gaps of several runs).
    state_tokens_per_sequence : int
        Tokens of ``kv_budget`` each running sequence's recurrent state holds [tokens], >= 0
        (module docstring, "Recurrent state"); 0 (default) for a model without one.
    mixed_prefill : bool
        ``True`` (default): a step carries the decode tokens and prefill slices together;
        ``False``: a step with prompt tokens carries only those (module docstring, step 5).
    kv_window : (int, int, int, int)
        Paged mode: ``(full_units, sliding_units, window_blocks, block_units)``: the units a
        block of context takes in the full-attention and the sliding-window layers, the blocks
        a sliding layer keeps per sequence, and the units in a block of the budget (module
        docstring, "Sliding-window layers"); ``(1, 0, UNLIMITED, 1)`` (default) for a model
        without sliding layers.
    recv_interval : int
        Arrivals are taken in at a receive step only (SGLang's ``--scheduler-recv-interval``;
        module docstring, "Receive interval"), >= 1; 1 (default): at every step.
    clients : int
        With ``clients`` > 0 the queue is a closed-loop client's that keeps that many requests
        in flight: its arrivals join the queue at every step, and a request is admitted once
        the server has taken it in, at the first receive step at which it had arrived and the
        client had sent it (request ``j`` after ``j − clients`` answers: completions and
        rejections). 0 (default): an open-loop client's arrivals wait for a receive step, and
        the queue is admitted from at every step.
    request_overhead : float
        The engine's time for each request it takes in [time], >= 0 (module docstring,
        "Request overhead"): the next step lasts that much longer for each, or, where no step
        follows, the clock moves on by it. 0 (default): none.
    stream_interval : int
        The server sends a request's tokens in chunks (vLLM's and SGLang's
        ``--stream-interval``; module docstring, "Stream interval"), >= 1, and the gaps counted
        are those between its sends; 1 (default): every token as it is made. Not with
        ``draft_tokens``.
    num_scheduler_steps : int
        vLLM V0's multi-step scheduling (``--num-scheduler-steps``; module docstring,
        "Scheduler steps"), >= 1: the decodes run in windows of this many steps, scheduled
        once, whose tokens are sent at the window's end; 1 (default): every step scheduled.
        Above 1 only with ``mixed_prefill=False``, without ``draft_tokens``,
        ``stream_interval`` or sliding-window paging.

    Returns
    -------
    dict
        ``admit``, ``first_token``, ``finish`` (float arrays, NaN where not reached),
        ``preemptions``, ``status`` (int arrays) and ``stats`` (float array, :data:`STAT_NAMES`).
    """
    n = len(arrival)
    if priority is None:
        priority = [INTERACTIVE] * n
    tick_mode = clock is None
    if tick_mode and request_overhead:
        raise ValueError("request_overhead is in seconds: the tick clock takes none")
    if stream_interval > 1 and draft_tokens:
        raise ValueError("stream_interval > 1 is not simulated with speculative decoding")
    steps = int(num_scheduler_steps)
    if steps > 1 and (mixed_prefill or draft_tokens or stream_interval > 1
                      or (admission == "paged" and int(kv_window[1]) > 0)):
        raise ValueError("num_scheduler_steps > 1 is simulated with mixed_prefill=False only, "
                         "without draft_tokens, stream_interval or sliding-window paging")
    paged = admission == "paged"
    # units: a block of the budget (every layer) is ``units`` (1 without sliding layers); a
    # block of context takes ``full`` in the full layers, ``sliding`` in the sliding ones
    full, sliding, window_blocks, units = (int(x) for x in kv_window)
    if not paged or sliding == 0:
        full, sliding, window_blocks, units = 1, 0, UNLIMITED, 1
    window_tokens = window_blocks * block_size if sliding else UNLIMITED
    # a prefilling sequence's sliding layers hold its window and a step's tokens too
    prefill_blocks = window_blocks
    if sliding and window_blocks:
        prefill_blocks = (window_blocks + _ceil_div(max_num_batched_tokens - 1, block_size)
                          if max_num_batched_tokens < UNLIMITED else UNLIMITED)
    # (at most UNLIMITED blocks' units: an unlimited budget stays in int64 in the kernel)
    total_units = min(kv_budget // block_size, UNLIMITED // units) * units if paged else 0
    state_tokens = int(state_tokens_per_sequence)
    state_units = _ceil_div(state_tokens, block_size) * units if paged else 0
    if prefix_group is None:
        prefix_group, prefix_tokens = [-1] * n, [0] * n
    if arrived_kv_tokens is None:
        arrived_kv_tokens = [0] * n
    seqs = [_Seq(i, float(arrival[i]), effective_prompt(int(prompt_tokens[i])),
                 int(output_tokens[i]), int(priority[i]), int(prefix_group[i]), int(prefix_tokens[i]))
            for i in range(n)]
    caching = bool(prefix_caching) and admission == "paged"
    # prefix groups: blocks, whether resident, sequences using it, step of its last release
    group_blocks = {s.group: s.prefix // block_size for s in seqs if s.group >= 0}
    resident, refs, released = set(), {}, {}
    queues = (deque(), deque())          # interactive, batch
    running = []                         # in admission order
    stats = dict.fromkeys(STAT_NAMES, 0.0)
    gaps = GapLog(itl_target)

    def held(nb, shared=0, window=window_blocks):
        """Units a sequence of ``nb`` blocks holds, ``shared`` of them its prefix's (paged):
        its full layers' own blocks and its sliding layers' last ``window`` (decoding:
        ``window_blocks``; prefilling: ``prefill_blocks``)."""
        return full * (nb - shared) + sliding * min(nb, window)

    def held_by(s):
        return held(s.blocks + s.shared, s.shared,
                    prefill_blocks if s.in_prefill() else window_blocks)

    def never_fits(s):
        if admission == "paged":
            # its most: a prefill of all but its last token (a preempted one's recompute)
            return (held(_ceil_div(s.prompt + s.output, block_size), 0, prefill_blocks)
                    + state_units > total_units)
        if admission == "prompt":
            return s.prompt + state_tokens > kv_budget
        return s.prompt + s.output + state_tokens > kv_budget

    def cached_blocks():
        return sum(group_blocks[k] for k in resident)

    def evictable(keep):
        """Resident groups no sequence uses, but ``keep``, least recently released first."""
        return sorted((k for k in resident if refs[k] == 0 and k != keep),
                      key=lambda k: (released[k], k))

    def evict(k):
        resident.discard(k)
        stats["prefix_evictions"] += 1

    def release(s):
        if s.shared:
            refs[s.group] -= 1
            if refs[s.group] == 0:
                released[s.group] = stats["n_steps"]
            s.shared = 0

    def free_units():
        return (total_units - sum(held_by(r) for r in running) - full * cached_blocks()
                - len(running) * state_units)

    def kv_reserved():
        """KV reserved [units x tokens: ``units`` a token of every layer]."""
        if admission == "paged":
            return ((sum(held_by(s) for s in running) + full * cached_blocks()
                     + len(running) * state_units) * block_size)
        if admission == "prompt":
            return sum(s.prompt + state_tokens for s in running)
        return sum(s.prompt + s.output + state_tokens for s in running)

    def gained(s):
        """Tokens a decoding sequence gains in its next step."""
        return int(gains[0][gains[1][s.index] + s.generated]) if draft_tokens else 1

    def new_blocks(s):
        """Blocks a decoding sequence needs for its next step's tokens (paged)."""
        if admission != "paged" or s.in_prefill():
            return 0
        return max(0, _ceil_div(s.context + gained(s), block_size) - s.blocks - s.shared)

    def window_blocks_needed(s):
        """Blocks a decoding sequence needs for a window's ``steps`` tokens (paged): vLLM
        allocates them when it schedules the window (its lookahead slots)."""
        return max(0, _ceil_div(s.context + steps, block_size) - s.blocks - s.shared)

    def new_units(s):
        """Units those blocks take: a full layer's each, a sliding layer's below its window."""
        nb = s.blocks + s.shared
        return held(nb + new_blocks(s), s.shared) - held(nb, s.shared)

    t = 0.0
    if n:
        t = float(math.ceil(seqs[0].arrival)) if tick_mode else seqs[0].arrival
    next_arrival = 0
    t_decode = -math.inf                 # end of the latest step that was not prefill-only
    recv_count = 0                       # the steps' weights since the latest receive step
    recv_admits = clients > 0
    received = 0                         # closed loop: the requests the server has taken in
    answered = 0                         # completed or rejected: each frees a client
    intake = 0.0                         # the engine's time for the requests taken in since
    decode_steps = 0                     # the latest step ("Request overhead"); steps that
    while True:                          # decoded ("Scheduler steps")
        # inside a window of decode steps nothing is scheduled: no retirement, no admission
        mid_window = steps > 1 and decode_steps % steps != 0
        # 1. arrive, after 2. retire (the two commute): a receive step is decided by what still
        # runs ("Receive interval"); the arrivals wait for one, unless the queue is a closed
        # loop's, whose requests are admitted once the server has taken them in
        for s in [s for s in running if s.generated >= s.output and not mid_window]:
            s.finish = t
            answered += 1
            s.blocks = 0
            release(s)
            running.remove(s)
        receive = recv_interval <= 1 or recv_count >= recv_interval or not running
        if receive:
            recv_count = 0
        before = received if recv_admits else next_arrival
        while (receive or recv_admits) and next_arrival < n and seqs[next_arrival].arrival <= t:
            s = seqs[next_arrival]
            next_arrival += 1
            if never_fits(s):
                s.status = REJECTED
                answered += 1
            else:
                queues[s.tier].append(s)
        if receive:
            received = min(next_arrival, clients + answered)
        taken = (received if recv_admits else next_arrival) - before
        if taken > 0:
            intake += request_overhead * taken
        # 3. admit (a closed loop's queue up to the requests taken in)
        for tier in () if mid_window else (INTERACTIVE, BATCH):
            queue = queues[tier]
            stop = False
            while queue:
                s = queue[0]
                if recv_admits and s.index >= received:
                    break                        # not yet at the server: this tier waits
                if len(running) >= max_num_seqs:
                    stop = True
                    break
                if tier == BATCH and len(running) >= interactive_cap and (
                        queues[INTERACTIVE] or any(r.tier == INTERACTIVE for r in running)):
                    stop = True
                    break
                hit = caching and s.group in resident and group_blocks[s.group] > 0
                if admission == "paged":
                    free = free_units()
                    need = sum(new_units(r) for r in running)
                    first_blocks = _ceil_div(s.prompt + s.generated + 1, block_size)
                    pb = group_blocks[s.group] if hit else 0
                    # its state's blocks beside its first ones
                    wanted = held(first_blocks, pb, prefill_blocks) + state_units
                    first_blocks -= pb
                    fits = free - need >= wanted
                    if not fits and caching:
                        victims = evictable(s.group if hit else None)
                        if free - need + full * sum(group_blocks[k] for k in victims) >= wanted:
                            for k in victims:
                                if free - need >= wanted:
                                    break
                                evict(k)
                                free += full * group_blocks[k]
                            fits = True
                elif admission == "prompt":
                    fits = kv_reserved() + s.prompt + state_tokens <= kv_budget
                else:
                    fits = kv_reserved() + s.prompt + s.output + state_tokens <= kv_budget
                if not fits:
                    stop = True
                    break
                queue.popleft()
                first_admission = math.isnan(s.admit)
                if first_admission:
                    s.admit = t
                    if s.group >= 0:
                        stats["prefix_requests"] += 1
                        stats["prefix_hits"] += hit
                s.generated_at_admit = s.generated
                s.to_prefill = s.prompt + s.generated
                s.prefilled = 0
                s.context = 0
                if hit:
                    s.shared = group_blocks[s.group]
                    refs[s.group] += 1
                    cached = min(s.shared * block_size, s.to_prefill - 1)
                    s.prefilled = s.context = cached
                    stats["prefill_tokens_saved"] += cached
                arrived = int(arrived_kv_tokens[s.index])
                if first_admission and arrived > 0:
                    # its own blocks hold them; a preemption loses them like any computed KV
                    s.prefilled = s.context = max(s.prefilled, min(arrived, s.to_prefill - 1))
                if admission == "paged":
                    s.blocks = first_blocks
                running.append(s)
            if stop:
                break
        # 4. terminate-check
        if not running:
            if queues[0] or queues[1]:
                raise RuntimeError("scheduler stalled with requests queued and none running")
            if next_arrival == n:
                break
            a = seqs[next_arrival].arrival
            if intake > 0.0:                 # the front end's work, then the next arrival
                t = max(t + intake, a)
                intake = 0.0
            else:
                t = float(math.ceil(a)) if tick_mode else a
            continue
        # 5. step: make room (paged), then decode tokens and prefill slices; without mixing, a
        # step with prompt tokens carries only those (no sequence grows: no room to make)
        prefill_only = not mixed_prefill and any(s.in_prefill() for s in running)
        if admission == "paged" and not prefill_only:
            free = free_units()
            # a window's first step: the blocks of the whole window ("Scheduler steps")
            window_start = steps > 1 and not mid_window
            blocks_needed = window_blocks_needed if window_start else new_units
            need = sum(blocks_needed(r) for r in running)
            while need > free:
                victims = evictable(None)
                if victims:
                    evict(victims[0])
                    free += full * group_blocks[victims[0]]
                    continue
                victim = running.pop()
                need -= blocks_needed(victim)
                free += held_by(victim) + state_units     # its state goes with it
                victim.blocks = 0
                victim.context = 0
                release(victim)
                victim.preemptions += 1
                stats["preemptions"] += 1
                queues[victim.tier].appendleft(victim)
        # the step's composition, in admission order: one token per decoding sequence, and
        # prefill slices from the token budget left after all decode tokens
        decoding = [] if prefill_only else [s for s in running if not s.in_prefill()]
        budget = max_num_batched_tokens - len(decoding)
        plan = []
        n_decode = n_prefill = 0
        kv_read = pairs = 0.0
        if decoding and not tick_mode:
            # the decoding sequences' KV read from two sums of whole numbers (exact in any order)
            kv_read = clock.kv_read_sum(float(sum(s.context for s in decoding)),
                                        float(sum(min(s.context, clock.window)
                                                  for s in decoding)))
        kv_dec = kv_read                 # the decoding sequences' part
        longest_chunk = 0.0              # the step's longest prompt chunk
        chunks = []                      # (chunk, cached before it): the draft prefills them
        for s in running:
            if s.in_prefill():
                chunk = min(s.to_prefill - s.prefilled, budget)
                budget -= chunk
                n_prefill += chunk
                if chunk > 0 and not tick_mode:
                    kv_read += clock.kv_read(float(s.prefilled))
                    pairs += clock.chunk_pairs(float(chunk), float(s.prefilled))
                    chunks.append((float(chunk), float(s.prefilled)))
                longest_chunk = max(longest_chunk, float(chunk))
                plan.append((s, chunk))
            elif not prefill_only:
                n_decode += 1
                plan.append((s, None))
        if tick_mode:
            dt = 1.0
        elif draft_tokens and n_decode:
            # k draft steps, then one verification of k + 1 positions per decoding sequence
            k = float(draft_tokens)
            dt = clock.step_time(float(n_decode) * (k + 1.0), float(n_prefill), kv_read,
                                 pairs + kv_dec * k + float(n_decode) * k * (k + 1.0) / 2.0,
                                 longest_chunk)
            dt = dt + k * clock.draft_time(float(n_decode), kv_dec,
                                           [s.context for s in decoding])
        else:
            dt = clock.step_time(float(n_decode), float(n_prefill), kv_read, pairs, longest_chunk)
        if draft_tokens and n_prefill and not tick_mode:
            dt = dt + clock.draft_prefill_time(float(n_prefill), chunks)
        if intake > 0.0:                 # the requests taken in since the latest step
            dt = dt + intake
            intake = 0.0
        if draft_tokens and n_decode:
            stats["draft_tokens"] += n_decode * draft_tokens
        active = 0
        regular = 0                      # gaps of one step (decoding sequences)
        waited = 0                       # decoding sequences that waited since t_decode
        late = []                        # ... that became decoding while the decodes waited
        spanning = []                    # gaps across a preemption (re-prefill completions)
        together = 0                     # gained tokens after a step's first: gaps of 0
        for s, chunk in plan:
            if chunk is None:            # decode one token, or a speculative step's gain
                x = gained(s)
                s.blocks += new_blocks(s)
                s.context += x
                s.generated += x
                active += 1
                if mixed_prefill or s.last_token == t:
                    regular += 1
                elif s.last_token == t_decode:
                    waited += 1
                else:
                    late.append(s.last_token)
                together += x - 1
                s.last_token = t + dt
                if tokens is not None and s.generated <= s.output:   # a window's past the end:
                    tokens.extend([(s.index, t + dt)] * x)            # made, never sent
            else:                        # prefill a slice; the last one yields a token
                s.prefilled += chunk
                s.context += chunk
                if s.prefilled == s.to_prefill:
                    s.context += 1
                    pb = group_blocks.get(s.group, 0)
                    if caching and pb > 0 and not s.shared and s.group not in resident:
                        # its first blocks become the group's, now computed and shareable
                        resident.add(s.group)
                        refs[s.group] = 1
                        s.shared = pb
                        s.blocks -= pb
                    if s.generated > 0:
                        spanning.append(t + dt - s.last_token)
                    s.generated += 1
                    active += 1
                    if s.generated == 1:
                        s.first_token = t + dt
                    s.last_token = t + dt
                    if tokens is not None:
                        tokens.append((s.index, t + dt))
        stats["accepted_tokens"] += together
        if n_decode:
            decode_steps += 1
        if stream_interval == 1 and steps == 1:
            gaps.add(dt, regular)
            gaps.add(0.0, together)
            gaps.add(t + dt - t_decode, waited)
            for last in sorted(late):    # in the order their prefills completed
                gaps.add(t + dt - last)
            for gap in spanning:
                gaps.add(gap)
        else:                            # the gaps between sends, in admission order
            window_end = steps > 1 and n_decode and decode_steps % steps == 0
            for s in running:
                made = min(s.generated, s.output)
                if s.in_prefill() or made == s.sent:
                    continue
                if s.sent == 0:          # the first token goes at once
                    s.sent, s.sent_at = made, t + dt
                elif window_end or (steps > 1 and prefill_only) or (
                        stream_interval > 1 and (made - s.sent >= stream_interval
                                                 or made == s.output)):
                    gaps.add(t + dt - s.sent_at)
                    s.sent, s.sent_at = made, t + dt
        # [units x tokens]: the full layers hold each sequence's context (its prefix's
        # blocks once), the sliding layers at most its window's blocks' worth
        kv_res = kv_reserved()
        kv_used = (full * (sum(s.context - s.shared * block_size for s in running)
                           + cached_blocks() * block_size + len(running) * state_tokens)
                   + sliding * sum(min(s.context, window_tokens) + state_tokens
                                   for s in running))
        stats["cached_prefix_block_time"] += cached_blocks() * dt
        stats["n_steps"] += 1
        stats["busy_time"] += dt
        stats["peak_running"] = max(stats["peak_running"], len(running))
        stats["running_time"] += len(running) * dt
        stats["active_time"] += active * dt
        stats["peak_kv_reserved"] = max(stats["peak_kv_reserved"], kv_res)
        stats["kv_reserved_time"] += kv_res * dt
        stats["peak_kv_used"] = max(stats["peak_kv_used"], kv_used)
        stats["kv_used_time"] += kv_used * dt
        if trace is not None:
            trace.append((t, len(running), kv_res / units if units != 1 else kv_res,
                          kv_used / units if units != 1 else kv_used))
        if not prefill_only:
            t_decode = t + dt
        recv_count += RECV_PROMPT_WEIGHT if n_prefill else 1
        t = t + dt
    stats["end_time"] = t
    for key in ("peak_kv_reserved", "kv_reserved_time", "peak_kv_used", "kv_used_time"):
        stats[key] /= units              # [tokens of every layer]
    gaps.store(stats)
    if gap_logs is not None:
        gap_logs.append(gaps)
    return _pack(seqs, stats)


def simulate_static(arrival, prompt_tokens, output_tokens, *, batch_size, clock=None,
                    itl_target=math.inf, tokens=None):
    """Static batching (see the module docstring for the rules).

    Returns the same dict as :func:`simulate_continuous`; ``kv`` statistics count each member's
    prompt plus the batch's longest output (the padded rectangle a static batch holds).
    """
    n = len(arrival)
    tick_mode = clock is None
    seqs = [_Seq(i, float(arrival[i]), effective_prompt(int(prompt_tokens[i])),
                 int(output_tokens[i]), INTERACTIVE)
            for i in range(n)]
    stats = dict.fromkeys(STAT_NAMES, 0.0)
    gaps = GapLog(itl_target)
    t = 0.0
    nxt = 0
    while nxt < n:
        if seqs[nxt].arrival > t:        # nothing queued: wait for the next arrival
            a = seqs[nxt].arrival
            t = float(math.ceil(a)) if tick_mode else a
        batch = []
        while nxt < n and len(batch) < batch_size and seqs[nxt].arrival <= t:
            batch.append(seqs[nxt])
            nxt += 1
        longest = max(s.output for s in batch)
        kv = sum(s.prompt for s in batch) + len(batch) * longest
        start = t
        for step in range(longest):
            if tick_mode:
                dt = 1.0
            elif step == 0:          # prefill every prompt at once
                pairs = 0.0
                for s in batch:
                    if s.prompt > 0:
                        pairs += clock.chunk_pairs(float(s.prompt), 0.0)
                dt = clock.step_time(0.0, float(sum(s.prompt for s in batch)), 0.0, pairs,
                                     float(max(s.prompt for s in batch)))
            else:                    # decode every row, finished ones included (padding)
                kv_read = 0.0
                for s in batch:
                    kv_read += clock.kv_read(float(s.prompt + step))
                dt = clock.step_time(float(len(batch)), 0.0, kv_read, 0.0, 0.0)
            active = sum(1 for s in batch if step < s.output)
            used = sum(s.prompt + step + 1 for s in batch)
            stats["n_steps"] += 1
            stats["busy_time"] += dt
            stats["running_time"] += len(batch) * dt
            stats["active_time"] += active * dt
            stats["kv_reserved_time"] += kv * dt
            stats["peak_kv_used"] = max(stats["peak_kv_used"], used)
            stats["kv_used_time"] += used * dt
            if step > 0:                 # every member still generating: one gap of dt
                gaps.add(dt, active)
            t = t + dt
            if step == 0:
                for s in batch:
                    s.first_token = t
            if tokens is not None:
                tokens.extend((s.index, t) for s in batch if step < s.output)
        stats["peak_running"] = max(stats["peak_running"], len(batch))
        stats["peak_kv_reserved"] = max(stats["peak_kv_reserved"], kv)
        for s in batch:
            s.admit = start
            s.finish = t
    stats["end_time"] = t
    gaps.store(stats)
    return _pack(seqs, stats)


def _pack(seqs, stats):
    """A run's outputs, keyed by :data:`~rooflinekit.batching._schema.OUTPUT_NAMES`."""
    return dict(zip(OUTPUT_NAMES, (
        np.array([s.admit for s in seqs], dtype=np.float64),
        np.array([s.first_token for s in seqs], dtype=np.float64),
        np.array([s.finish for s in seqs], dtype=np.float64),
        np.array([s.preemptions for s in seqs], dtype=np.int64),
        np.array([s.status for s in seqs], dtype=np.int64),
        np.array([float(stats[k]) for k in STAT_NAMES], dtype=np.float64),
    ), strict=True))


def simulate_disaggregated(arrival, prompt_tokens, output_tokens, priority, prefix_group,
                           prefix_tokens, transfer, *, prefill_replicas, decode_replicas,
                           prefill, decode, itl_target=math.inf):
    """Disaggregated serving, one replica after another (the rules of
    :mod:`rooflinekit.batching.disaggregated`).

    Parameters
    ----------
    arrival, prompt_tokens, output_tokens, priority, prefix_group, prefix_tokens : sequences
        The workload, as :func:`simulate_continuous` takes it.
    transfer : sequence of float
        Each request's KV transfer time to the decode pool [time].
    prefill_replicas, decode_replicas : int
        Replicas of each pool [1].
    prefill, decode : dict
        One replica of each pool: the keyword arguments of :func:`simulate_continuous`
        (``max_num_seqs``, ``kv_budget``, ``admission``, ``clock``, ...).
    itl_target : float
        Gaps counted as met [time]; inf for none.

    Returns
    -------
    dict
        ``admit``, ``first_token``, ``finish``, ``preemptions``, ``status`` per request as
        :func:`simulate_continuous` gives them for the whole request; ``rejected_in`` (0 none,
        1 prefill, 2 decode); ``decode_arrival`` (NaN where it never went there); ``stats``,
        the fleet's: counts and times summed over the replicas in order (prefill, then
        decode), the latest end, the percentiles of every decode replica's gaps pooled in one
        :class:`GapLog`, the hand-off gaps (first to second token) added to the counts and the
        total but not the percentiles; ``peak_kv_reserved``, each pool's largest replica peak.
    """
    n = len(arrival)
    admit, first, finish = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    second, ready = np.full(n, np.nan), np.full(n, np.nan)
    preemptions, status = np.zeros(n, np.int64), np.zeros(n, np.int64)
    rejected_in = np.zeros(n, np.int64)
    stats = dict.fromkeys(STAT_NAMES, 0.0)
    peak = [0.0, 0.0]
    pooled = GapLog(itl_target)

    def run(p, pool, ids, arrivals, prompts, outputs, groups, prefixes, arrived):
        logs = []
        res = simulate_continuous(arrivals, prompts, outputs, [priority[i] for i in ids],
                                  itl_target=itl_target, prefix_group=groups,
                                  prefix_tokens=prefixes, arrived_kv_tokens=arrived,
                                  gap_logs=logs, **pool)
        for name, value in zip(STAT_NAMES, res["stats"]):
            if name == "end_time":
                stats[name] = max(stats[name], value)
            elif not name.startswith("token_itl_p"):
                stats[name] += value
        pooled.merge(logs[0])
        peak[p] = max(peak[p], res["stats"][STAT_NAMES.index("peak_kv_reserved")])
        for q, i in enumerate(ids):
            finish[i] = res["finish"][q]
            preemptions[i] += res["preemptions"][q]
            status[i] = res["status"][q]
            if status[i] != COMPLETED:
                rejected_in[i] = p + 1
        return res

    # 1. prefill: request i on prefill replica i mod prefill_replicas, one output token
    for j in range(prefill_replicas):
        ids = list(range(j, n, prefill_replicas))
        if ids:
            # one output token, the first; the prefixes shared as the pool's cache allows
            res = run(0, prefill, ids, [arrival[i] for i in ids], [prompt_tokens[i] for i in ids],
                      [1] * len(ids), [prefix_group[i] for i in ids],
                      [prefix_tokens[i] for i in ids], None)
            for q, i in enumerate(ids):
                admit[i], first[i] = res["admit"][q], res["first_token"][q]
    # 2. transfer (the hand-over): each request's KV reaches the decode pool after its transfer
    waiting = [i for i in range(n) if status[i] == COMPLETED and output_tokens[i] > 1]
    for i in waiting:
        ready[i] = finish[i] + transfer[i]
    waiting.sort(key=lambda i: ready[i])          # stable: ties by request
    # 3. decode: the k-th arrival on decode replica k mod decode_replicas
    for j in range(decode_replicas):
        ids = waiting[j::decode_replicas]
        if ids:
            # the prompt and the first token, of which the prompt's KV came with it
            res = run(1, decode, ids, [ready[i] for i in ids],
                      [prompt_tokens[i] + 1 for i in ids], [output_tokens[i] - 1 for i in ids],
                      [-1] * len(ids), [0] * len(ids), [prompt_tokens[i] for i in ids])
            for q, i in enumerate(ids):
                second[i] = res["first_token"][q]
    for p in GAP_PERCENTILES:
        stats[f"token_itl_p{p}"] = pooled.percentile(p)
    handoff = [second[i] - first[i] for i in range(n)
               if status[i] == COMPLETED and output_tokens[i] > 1]
    stats["token_gaps"] += len(handoff)
    stats["token_gaps_met"] += sum(1 for gap in handoff if gap <= itl_target)
    # the total as numpy sums an array (pairwise), as the batcher adds it
    stats["token_gap_time"] += np.asarray(handoff, dtype=np.float64).sum()
    return {"admit": admit, "first_token": first, "finish": finish, "preemptions": preemptions,
            "status": status, "rejected_in": rejected_in, "decode_arrival": ready,
            "stats": np.array([float(stats[k]) for k in STAT_NAMES]),
            "peak_kv_reserved": np.array(peak)}
