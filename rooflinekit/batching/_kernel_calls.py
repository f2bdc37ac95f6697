"""Calling the kernels from Python: outputs, rows, error codes, targets.

What every caller of a kernel shares (batchers, replicate runs, the disaggregated fleet): a
block of rows' outputs in the kernels' order (:data:`~rooflinekit.batching._schema.OUTPUT_NAMES`,
then the error codes), the rows run in turn or on a pool of threads (:func:`_each_row`), return
codes turned into exceptions (:func:`_check_errors`), and the latency targets as a kernel takes
them (:func:`_targets`, :func:`_itl_limit`). Here, below the batchers, so that a run needs
nothing of the replicate runs; nothing imports numba at module level.
"""

from __future__ import annotations

import numpy as np

from rooflinekit._validation import real_number
from rooflinekit.batching._schema import N_STATS, WRONG_CLOCK


def _targets(ttft_target, itl_target, e2e_target=None, tpot_target=None):
    """Latency targets ``(ttft, itl, e2e, tpot)`` [tick or s], each >= 0 (inf allowed) or None;
    the kernels read only ``itl`` (:func:`_itl_limit`).
    """
    return (real_number("ttft_target", ttft_target, lo=0, allow_inf=True, allow_none=True),
            real_number("itl_target", itl_target, lo=0, allow_inf=True, allow_none=True),
            real_number("e2e_target", e2e_target, lo=0, allow_inf=True, allow_none=True),
            real_number("tpot_target", tpot_target, lo=0, allow_inf=True, allow_none=True))


def _itl_limit(itl_target):
    """The longest gap counted as met by a kernel or the reference [tick or s]: inf for none."""
    return float("inf") if itl_target is None else float(itl_target)


def _each_row(one, rows: int, parallel: bool) -> None:
    """``one(r)`` for every row ``r``; with ``parallel``, on a pool of numba's thread count (the
    kernels release the GIL; why threads: ``docs/simulator.md``, "batching/_kernel_calls.py").
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
    """Raise on the rows' return codes: :data:`~rooflinekit.batching._schema.WRONG_CLOCK`, or
    any other but 0 (:data:`~rooflinekit.batching._schema.STALLED`)."""
    if np.any(errors == WRONG_CLOCK):
        raise RuntimeError("a kernel of one clock was handed the other clock's tick_mode "
                           "(please report this)")
    if np.any(errors != 0):
        raise RuntimeError("the scheduler stalled: requests queued that can never be admitted "
                           "(please report this workload)")


def _allocate(replicates, n):
    """The outputs of ``replicates`` rows of ``n`` requests, as the kernels take them: those of
    :data:`~rooflinekit.batching._schema.OUTPUT_NAMES` (admit, first_token, finish,
    preemptions, status, stats), then each row's return code (zeros)."""
    return (np.empty((replicates, n)), np.empty((replicates, n)), np.empty((replicates, n)),
            np.empty((replicates, n), np.int64), np.empty((replicates, n), np.int64),
            np.empty((replicates, N_STATS)), np.zeros(replicates, np.int64))
