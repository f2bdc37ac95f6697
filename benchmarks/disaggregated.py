"""asv benchmarks of disaggregated serving: the pools' simulation against one aggregated batcher.

Both run on the same workload in the same process, tick clock (a step's request-steps are its
running sequences): ``DisaggregatedBatcher`` is one kernel call that runs the prefill replicas,
the hand-over and the decode replicas (``_kernels.disaggregated_run``), plus the transfer times
and the results' assembly in numpy; the aggregated batcher is one kernel call. numba compiles
(or loads its cache) in ``setup``. ``python benchmarks/disaggregated.py`` prints the table of
``BENCHMARKS.md``, every case in one process, the two timed alternately.
"""

import sys
import timeit

import numpy as np

from rooflinekit.batching import ContinuousBatcher, DisaggregatedBatcher
from rooflinekit.batching.batchers import _kernel_outputs
from rooflinekit.workloads import Poisson, Uniform, WorkloadSpec, short_and_long

_RUNNING_TIME = 4   # index of "running_time" in _reference.STAT_NAMES: slot-steps = request-steps
_NO_TARGETS = (None, None, None)


def _spec(n):
    # the batching benchmarks' mix: 10-200 token prompts, Poisson arrivals
    return WorkloadSpec(n, output=short_and_long(), prompt=Uniform(10, 200),
                        arrival=Poisson(rate=0.3))


def _best(fn, repeat):
    """The fastest of ``repeat`` calls [s] (``timeit``'s clock, garbage collection paused)."""
    return min(timeit.repeat(fn, number=1, repeat=repeat))


class DisaggregatedVsAggregated:
    """Request-steps per second: 1P1D, 2P1D and 2P2D pools of 16-slot paged batchers, and one."""

    params = ([1000, 5000, 10000], ["1P1D", "2P1D", "2P2D"])
    param_names = ["n_requests", "split"]

    def setup(self, n, split):
        self.batcher = ContinuousBatcher(max_num_seqs=16, kv_budget_tokens=4000,
                                         admission="paged")
        x, y = int(split[0]), int(split[2])
        self.pools = DisaggregatedBatcher(self.batcher, self.batcher, x, y, link_bandwidth=np.inf,
                                          link_latency=2)
        self.workload = _spec(n).sample(0)
        self.timings = self.pools._timings()
        self.pools._serve(_spec(10).sample(0), self.timings, _NO_TARGETS)        # compile
        self.aggregated_steps = _kernel_outputs(self.batcher, self.workload)["stats"][
            _RUNNING_TIME]
        self.pool_steps = self._serve()[5][_RUNNING_TIME]

    def _serve(self):
        return self.pools._serve(self.workload, self.timings, _NO_TARGETS)[0]

    def time_disaggregated(self, n, split):
        self._serve()

    def time_aggregated(self, n, split):
        _kernel_outputs(self.batcher, self.workload)

    def track_disaggregated_request_steps_per_second(self, n, split):
        return self.pool_steps / _best(self._serve, 10)

    def track_aggregated_request_steps_per_second(self, n, split):
        return self.aggregated_steps / _best(lambda: _kernel_outputs(self.batcher, self.workload),
                                             10)

    track_disaggregated_request_steps_per_second.unit = "request-steps/s"
    track_aggregated_request_steps_per_second.unit = "request-steps/s"


def table(repeat=30, rounds=5):
    """The BENCHMARKS.md rows: request-steps/s of both, best of ``repeat`` calls in each of
    ``rounds`` alternating rounds (the machine's noise falls on both alike)."""
    print("| requests | split | disaggregated request-steps/s | aggregated | ÷ aggregated |")
    print("|---|---|---|---|---|")
    for n in DisaggregatedVsAggregated.params[0]:
        for split in DisaggregatedVsAggregated.params[1]:
            case = DisaggregatedVsAggregated()
            case.setup(n, split)
            t_dis = t_agg = np.inf
            for _ in range(rounds):
                t_dis = min(t_dis, _best(case._serve, repeat))
                t_agg = min(t_agg, _best(lambda c=case: _kernel_outputs(c.batcher, c.workload),
                                         repeat))
            dis, agg = case.pool_steps / t_dis, case.aggregated_steps / t_agg
            print(f"| {n:,} | {split} | {dis:.3g} | {agg:.3g} | {dis / agg:.2f} |")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] != "table":
        sys.exit(f"usage: python {sys.argv[0]} [table]")
    table()
