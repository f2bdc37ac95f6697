"""The simulator's kernels compiled ahead of a first run: numba's cache filled in parallel.

A simulation compiles each kernel it needs on its first run on a machine (seconds; 10-14 s for
a continuous body on 2 cores), then loads it from numba's cache (``docs/simulator-cache.md``).
:func:`compile_kernels` pays that ahead, the families side by side on every core: for a
command's first run, a test suite, a container image or a benchmark.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from rooflinekit._validation import check_keys, whole_number

__all__ = ["KERNEL_FAMILIES", "compile_kernels"]

#: The kernel families: each with the kernels it fills.
KERNEL_FAMILIES = {
    "continuous-tick": ("continuous_run_tick",),
    "continuous-roofline": ("continuous_run_roofline",),
    "static": ("static_run",),
    "speculative-tick": ("continuous_run_speculative_tick", "speculative_gain_table"),
    "speculative-roofline": ("continuous_run_speculative_roofline", "speculative_gain_table"),
    "separate-tick": ("continuous_run_separate_tick",),
    "separate-roofline": ("continuous_run_separate_roofline",),
    "disaggregated-tick": ("disaggregated_run_tick",),
    "disaggregated-roofline": ("disaggregated_run_roofline",)}
#: A family that runs another's code: it compiles after that one, and loads it from the cache
#: (the disaggregated kernel's decode replicas run the continuous body).
_AFTER = {"disaggregated-tick": "continuous-tick",
          "disaggregated-roofline": "continuous-roofline"}


def compile_kernels(families=tuple(KERNEL_FAMILIES), *, processes=None) -> tuple:
    """Compile the simulator's kernels into numba's on-disk cache, families side by side.

    Parameters
    ----------
    families : sequence of str
        Which of :data:`KERNEL_FAMILIES` (default all).
    processes : int, optional
        How many families compile at once (default the CPUs this process may use): one lane in
        this process, the others each in a process of its own.

    Returns
    -------
    tuple of str
        The families that compiled; those already cached (or loaded) are left alone.

    Raises
    ------
    ValueError
        An unknown family, or ``processes`` below 1.
    RuntimeError
        A lane's process failed, and compiling its families again alone failed too; the error
        output is in the message.

    Notes
    -----
    Each family runs a few-request workload through the public batchers, so the kernels
    compile for exactly the argument types every later call passes, into numba's cache
    (``docs/simulator-cache.md``); lanes are balanced by ``_kernels.COMPILE_SECONDS``
    (:func:`_lanes`), and the one in this process logs what a first run prints.
    """
    if isinstance(families, str):
        families = (families,)
    families = tuple(families)
    check_keys("families", dict.fromkeys(families), KERNEL_FAMILIES, what="kernel family")
    if processes is not None:
        processes = whole_number("processes", processes, lo=1)
    from rooflinekit.batching import _kernels  # numba: imported here, not with the package
    cold = tuple(f for f in KERNEL_FAMILIES if f in families and not all(
        _kernels.is_cached(_kernels.KERNELS[k]) for k in KERNEL_FAMILIES[f]))
    if not cold:
        return ()
    if processes is None:
        processes = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else (os.cpu_count() or 1)
    lanes = _lanes(cold, processes, _kernels.COMPILE_SECONDS)
    with ThreadPoolExecutor(max(1, len(lanes) - 1)) as pool:
        futures = [(lane, pool.submit(_compile_in_a_process, lane)) for lane in lanes[1:]]
        for family in lanes[0]:
            _run_family(family)
        failed = tuple(family for lane, future in futures if future.result().returncode != 0
                       for family in lane)
    if failed:
        # processes filling one cache at once can, rarely, leave one unable to type a call to
        # a helper another has just cached (seen once in CI: a Known-signatures TypingError);
        # the failed lanes' families, compiled again alone, settle it or show a real error
        done = _compile_in_a_process(failed)
        if done.returncode != 0:
            raise RuntimeError(f"compiling the {', '.join(failed)} kernels failed, also when "
                               f"compiled again alone:\n{done.stderr}")
    return cold


def _lanes(cold, processes, seconds) -> list:
    """``cold``'s families in at most ``processes`` lanes (lane 0 runs here): a family of
    :data:`_AFTER` after its predecessor, every other in the lane with the fewest ``seconds``.
    """
    lanes = [[] for _ in range(max(1, min(processes, len(cold))))]

    def load(lane):
        return sum(seconds.get(k, 10) for f in lane for k in KERNEL_FAMILIES[f])
    for family in cold:
        before = _AFTER.get(family)
        lane = next((lane for lane in lanes if before in lane), None)
        (lane if lane is not None else min(lanes, key=load)).append(family)
    return [lane for lane in lanes if lane]


def _compile_in_a_process(lane) -> subprocess.CompletedProcess:
    code = ("from rooflinekit.batching.precompile import _run_family\n"
            f"for family in {tuple(lane)!r}:\n    _run_family(family)")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def _run_family(family: str) -> None:
    """Run the few-request workload that compiles ``family``'s kernels (in this process)."""
    from rooflinekit.batching.batchers import ContinuousBatcher, StaticBatcher
    from rooflinekit.batching.disaggregated import DisaggregatedBatcher
    from rooflinekit.batching.speculative import Speculative
    from rooflinekit.workloads import Workload
    if family not in KERNEL_FAMILIES:
        raise ValueError(f"no kernel family {family!r}")
    wl = Workload([0.0, 1.0, 1.5], [4, 8, 2], [3, 2, 5])
    kind, _, clock = family.partition("-")
    # the roofline clock: a catalogue model on a GPU; the tick clock: none
    timing = {"model": "Llama-3.1-8B", "gpu": "H100-SXM-80GB"} if clock == "roofline" else {}
    if kind == "static":
        StaticBatcher(batch_size=2).run(wl)
    elif kind == "continuous":
        ContinuousBatcher(max_num_seqs=2, **timing).run(wl)
    elif kind == "separate":
        ContinuousBatcher(max_num_seqs=2, mixed_prefill=False, **timing).run(wl)
    elif kind == "speculative":
        head = Speculative(draft=0.05, draft_tokens=2, acceptance=0.5)
        ContinuousBatcher(max_num_seqs=2, speculative=head, **timing).run(wl)
    else:
        DisaggregatedBatcher(ContinuousBatcher(max_num_seqs=2, **timing),
                             ContinuousBatcher(max_num_seqs=2, **timing), 1, 1,
                             link_bandwidth=math.inf).run(wl)
