"""What the kernels, the reference, the batchers and the results agree on, stated once.

The codes and layouts that cross the line between the numba kernels, the plain-Python
specification, the Python side that calls them and the results that label their outputs:
status, tier and return codes and their labels, the "no limit" stand-in, the clocks' names, a
run's outputs and statistics columns, the gap histogram's shape. Values only (no function, no
import from the package), read by the kernels as compile-time constants, which numba's cache
cannot see change: :data:`rooflinekit.batching._kernels.SCHEMA_SHA256` records their hash.
"""

from __future__ import annotations

__all__ = ["COMPLETED", "REJECTED", "STATUS_COMPLETED", "STATUS_REJECTED", "REASON_KV_BUDGET",
           "INTERACTIVE", "BATCH", "TIERS", "UNLIMITED", "RECV_PROMPT_WEIGHT", "STALLED", "WRONG_CLOCK", "CLOCKS",
           "OUTPUT_NAMES", "STAT_NAMES", "N_STATS", "STAT", "STAT_END", "STAT_STEPS", "STAT_BUSY",
           "STAT_PEAK_RUN", "STAT_RUN_T", "STAT_ACT_T", "STAT_PEAK_RES", "STAT_RES_T",
           "STAT_PEAK_USED", "STAT_USED_T", "STAT_PREEMPT", "STAT_GAPS", "STAT_GAPS_MET",
           "STAT_GAP_T", "STAT_GAP_P", "STAT_PFX_REQ", "STAT_PFX_HIT", "STAT_PFX_SAVED",
           "STAT_PFX_T", "STAT_PFX_EVICT", "STAT_DRAFTED", "STAT_ACCEPTED", "GAP_PERCENTILES",
           "GAP_SUBBINS", "GAP_MIN_EXPONENT", "GAP_MAX_EXPONENT", "N_GAP_BINS"]

# --- per request --------------------------------------------------------------------------------

#: Status of a request in the ``status`` output: completed (every admitted request completes) ...
COMPLETED = 0
#: ... or rejected on arrival, its final length never fitting the KV budget.
REJECTED = 1
#: The labels of the two statuses in a result.
STATUS_COMPLETED = "completed"
STATUS_REJECTED = "rejected"
#: Reason code of a rejection: the request's final length (prompt + output) can never fit the
#: KV budget (in paged mode: needs more blocks than exist), with a hybrid model's recurrent
#: state beside it (``_reference``, "Recurrent state"), so it is refused on arrival.
REASON_KV_BUDGET = "final_length_exceeds_kv_budget"

#: Tier of a request (its ``priority``): interactive requests are admitted first ...
INTERACTIVE = 0
#: ... and batch-tier ones after them, under ``interactive_cap``.
BATCH = 1
#: Labels of the ``tier`` dimension (priority 0 and 1).
TIERS = ("interactive", "batch")

# --- a run ----------------------------------------------------------------------------------------

#: Stand-in for "no limit" in slot, KV and token budgets (fits int64 arithmetic with headroom).
UNLIMITED = 2**60

#: A receive interval's weight of a step with prompt tokens (a decode step weighs 1): SGLang's
#: ``SchedulerRecvSkipper`` default, ``SGLANG_SCHEDULER_RECV_SKIPPER_WEIGHT_DEFAULT``.
RECV_PROMPT_WEIGHT = 1000

#: Code a run returns when requests are queued and none can ever be admitted (cannot happen
#: with validated inputs; reported rather than looping forever). A run that ends returns 0.
STALLED = 1
#: Code a kernel returns when handed the other clock's ``tick_mode``.
WRONG_CLOCK = 2

#: The clocks, by a kernel's ``tick_mode``: ``True`` every step one tick, ``False`` the roofline.
CLOCKS = {True: "tick", False: "roofline"}

#: The outputs of one run, in the order the kernels take them (and the reference returns them):
#: per request the times of first admission, first token and finish, the preemptions and the
#: status; the run's statistics (:data:`STAT_NAMES`).
OUTPUT_NAMES = ("admit", "first_token", "finish", "preemptions", "status", "stats")

#: Run statistics, in the order of the kernels' ``stats`` output array.
STAT_NAMES = (
    "end_time",            # clock when the run stops [time]
    "n_steps",             # steps run [1]
    "busy_time",           # time with at least one sequence running [time]
    "peak_running",        # most sequences in one step [1]
    "running_time",        # integral of sequences running over time [slot x time]
    "active_time",         # integral of sequences still generating over time [slot x time]
    "peak_kv_reserved",    # most KV tokens reserved or allocated after a step [tokens]
    "kv_reserved_time",    # integral of KV reserved [token x time]
    "peak_kv_used",        # most KV tokens actually holding context after a step [tokens]
    "kv_used_time",        # integral of KV used [token x time]
    "preemptions",         # preemptions in the run [1]
    "token_gaps",          # inter-token gaps (tokens after each request's first) [1]
    "token_gaps_met",      # of those, gaps <= itl_target [1]
    "token_gap_time",      # sum of the gaps [time]
    "token_itl_p50",       # percentiles of the gaps (GAP_PERCENTILES; NaN without gaps) [time]
    "token_itl_p90",
    "token_itl_p95",
    "token_itl_p99",
    "prefix_requests",     # prefixed requests admitted (first admissions) [1]
    "prefix_hits",         # of those, admitted with their prefix resident [1]
    "prefill_tokens_saved",  # prompt tokens not prefilled because they were cached [tokens]
    "cached_prefix_block_time",  # integral of resident prefix blocks [block x time]
    "prefix_evictions",    # resident prefixes evicted [1]
    "draft_tokens",        # speculative decoding: tokens drafted [tokens]
    "accepted_tokens",     # of those, accepted by the target [tokens]
)
#: Length of the ``stats`` output.
N_STATS = len(STAT_NAMES)
#: Column of each statistic in ``stats``, by name.
STAT = {name: k for k, name in enumerate(STAT_NAMES)}

#: Columns of ``stats`` the kernels write by position (numba reads each as a constant).
STAT_END = STAT["end_time"]
STAT_STEPS = STAT["n_steps"]
STAT_BUSY = STAT["busy_time"]
STAT_PEAK_RUN = STAT["peak_running"]
STAT_RUN_T = STAT["running_time"]
STAT_ACT_T = STAT["active_time"]
STAT_PEAK_RES = STAT["peak_kv_reserved"]
STAT_RES_T = STAT["kv_reserved_time"]
STAT_PEAK_USED = STAT["peak_kv_used"]
STAT_USED_T = STAT["kv_used_time"]
STAT_PREEMPT = STAT["preemptions"]
STAT_GAPS = STAT["token_gaps"]
STAT_GAPS_MET = STAT["token_gaps_met"]
STAT_GAP_T = STAT["token_gap_time"]
STAT_GAP_P = STAT["token_itl_p50"]         # the first percentile; the others follow it
STAT_PFX_REQ = STAT["prefix_requests"]
STAT_PFX_HIT = STAT["prefix_hits"]
STAT_PFX_SAVED = STAT["prefill_tokens_saved"]
STAT_PFX_T = STAT["cached_prefix_block_time"]
STAT_PFX_EVICT = STAT["prefix_evictions"]
STAT_DRAFTED = STAT["draft_tokens"]
STAT_ACCEPTED = STAT["accepted_tokens"]

# --- the inter-token gaps -----------------------------------------------------------------------

#: Percentiles of the inter-token gaps each run reports [%] (nearest rank, see
#: :class:`rooflinekit.batching._reference.GapLog`), in the ``stats`` columns from
#: :data:`STAT_GAP_P` on.
GAP_PERCENTILES = (50, 90, 95, 99)
if STAT_NAMES[STAT_GAP_P:STAT_GAP_P + len(GAP_PERCENTILES)] != tuple(
        f"token_itl_p{p}" for p in GAP_PERCENTILES):
    raise ImportError("the gap percentiles' statistics must follow one another in STAT_NAMES, "
                      "in the order of GAP_PERCENTILES")

#: Gap histogram: sub-bins per octave (relative resolution ``1 / GAP_SUBBINS``, 0.2 %) ...
GAP_SUBBINS = 512
#: ... over the binary exponents ``[GAP_MIN_EXPONENT, GAP_MAX_EXPONENT)`` of ``math.frexp``:
#: gaps from 2**-31 (4.7e-10) to 2**34 (1.7e10) of the clock's unit; smaller or larger gaps fall
#: into the first or last bin.
GAP_MIN_EXPONENT = -30
GAP_MAX_EXPONENT = 34
#: Bins of the gap histogram (its memory: this many counts and maxima per run, 512 KiB).
N_GAP_BINS = (GAP_MAX_EXPONENT - GAP_MIN_EXPONENT) * GAP_SUBBINS
