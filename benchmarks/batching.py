"""asv benchmarks of the batching simulator: kernel vs reference, and a large Monte Carlo.

numba compiles (or loads from its on-disk cache) in ``setup`` (each benchmark runs the kernel once
on a small workload first), so timings exclude compilation; ``Compile`` measures it in a fresh
process with an empty cache, and ``SecondProcess`` a new process that loads the cached kernels.
"""

import subprocess
import sys
import time
import timeit

import numpy as np

from rooflinekit.batching import ContinuousBatcher, Speculative, StaticBatcher, monte_carlo
from rooflinekit.batching._kernel_calls import _allocate
from rooflinekit.batching.batchers import _kernel_outputs
from rooflinekit.workloads import Poisson, SharedPrefix, Uniform, WorkloadSpec, short_and_long

_STEPS = 4   # index of "running_time" in _reference.STAT_NAMES: slot-steps = request-steps


def _spec(n):
    # guide §4.2's uneven mix, 10-200 token prompts, Poisson arrivals at ~80% of 16 slots' capacity
    return WorkloadSpec(n, output=short_and_long(), prompt=Uniform(10, 200),
                        arrival=Poisson(rate=0.3))


_BATCHERS = {
    "static": StaticBatcher(batch_size=16),
    "reserve": ContinuousBatcher(max_num_seqs=16, kv_budget_tokens=4000),
    "paged": ContinuousBatcher(max_num_seqs=16, kv_budget_tokens=4000, admission="paged"),
    "chunked": ContinuousBatcher(max_num_seqs=16, kv_budget_tokens=4000, admission="paged",
                                 max_num_batched_tokens=64),
}


def _best(fn, repeat):
    """The fastest of ``repeat`` calls [s] (``timeit``'s clock, garbage collection paused)."""
    return min(timeit.repeat(fn, number=1, repeat=repeat))


class KernelVsReference:
    """Request-steps per second of the numba kernel and of the plain-Python reference."""

    params = ([200, 1000], list(_BATCHERS))
    param_names = ["n_requests", "mode"]

    def setup(self, n, mode):
        self.batcher = _BATCHERS[mode]
        self.workload = _spec(n).sample(0)
        _kernel_outputs(self.batcher, _spec(10).sample(0))        # compile
        self.request_steps = _kernel_outputs(self.batcher, self.workload)["stats"][_STEPS]

    def time_kernel(self, n, mode):
        _kernel_outputs(self.batcher, self.workload)

    def time_reference(self, n, mode):
        self.batcher.reference(self.workload)

    def track_kernel_request_steps_per_second(self, n, mode):
        return self.request_steps / _best(lambda: _kernel_outputs(self.batcher, self.workload), 20)

    def track_speedup_over_reference(self, n, mode):
        kernel = _best(lambda: _kernel_outputs(self.batcher, self.workload), 20)
        reference = _best(lambda: self.batcher.reference(self.workload), 2)
        return reference / kernel

    track_kernel_request_steps_per_second.unit = "request-steps/s"
    track_speedup_over_reference.unit = "x"


class MonteCarlo:
    """1,000 replicates × 1,000 requests: a thread per core, or dask tasks of 250 replicates."""

    params = (["static", "reserve", "paged"], ["threads", "dask"])
    param_names = ["mode", "engine"]
    timeout = 300

    def setup(self, mode, engine):
        self.batcher = _BATCHERS[mode]
        self.chunks = None if engine == "threads" else 250
        monte_carlo(_spec(20), self.batcher, replicates=4, seed=0)              # compile
        monte_carlo(_spec(20), self.batcher, replicates=4, seed=0, chunks=2)    # and dask

    def time_monte_carlo_1000x1000(self, mode, engine):
        monte_carlo(_spec(1000), self.batcher, replicates=1000, seed=0, chunks=self.chunks)

    def peakmem_monte_carlo_1000x1000(self, mode, engine):
        monte_carlo(_spec(1000), self.batcher, replicates=1000, seed=0, chunks=self.chunks)


def _running_256():
    # ~256 sequences running throughout: Poisson arrivals faster than 256 slots drain them
    spec = WorkloadSpec(4000, output=Uniform(50, 350), prompt=Uniform(50, 350),
                        arrival=Poisson(rate=150.0))
    return spec.sample(0), ContinuousBatcher(max_num_seqs=256, admission="paged",
                                             model="llama-3.1-8b", gpu="h100")


class RunningSequences256:
    """Request-steps/s at ~256 running sequences, roofline clock, paged: the raw kernel call,
    and the plain-Python reference on the same workload timed in the same run (the baseline).

    The kernel's cost per step does not grow with the running sequences; the reference visits
    each of them every step, so the ratio is the kernel's design at this batch, measured."""

    timeout = 300

    def setup(self):
        from rooflinekit.batching import _kernels, _schema
        wl, b = _running_256()
        timing = b._timing()
        params = b._parameters()
        gain, offset = b._gains(wl.output_tokens[None])
        args = _kernels.kernel_inputs(wl.arrival, wl.prompt_tokens, wl.output_tokens,
                                      wl.priority, wl.prefix_group, wl.prefix_tokens,
                                      np.zeros(wl.n_requests, np.int64), gain[0], offset[0])
        n = wl.n_requests
        outs = (np.empty(n), np.empty(n), np.empty(n), np.empty(n, np.int64),
                np.empty(n, np.int64), np.empty(_schema.N_STATS))
        self.kernel = lambda: _kernels.continuous_kernel(timing.tick)(
            *args, *params, timing.tick, timing.coef, timing.draft_coef, timing.draft_share,
            np.inf, *outs)
        self.kernel()                                # compile (or load)
        # the same run with prefill steps apart (SGLang's scheduling): its own compiled copy
        self.separate = lambda: _kernels.continuous_kernel(timing.tick, separate=True)(
            *args, *params, timing.tick, timing.coef, timing.draft_coef, timing.draft_share,
            np.inf, *outs)
        self.separate()
        # the same run on gpt-oss-20b at a 25,000-token budget: its sliding layers keep a
        # 9-block window (``kv_window``), so the budget binds and the window's paths run
        w = ContinuousBatcher(max_num_seqs=256, admission="paged", model="gpt-oss-20b",
                              gpu="h100", kv_budget_tokens=25000)
        w_timing, w_params = w._timing(), w._parameters()
        self.windowed = lambda: _kernels.continuous_kernel(w_timing.tick)(
            *args, *w_params, w_timing.tick, w_timing.coef, w_timing.draft_coef,
            w_timing.draft_share, np.inf, *outs)
        self.windowed()
        trace = []
        start = timeit.default_timer()
        b.reference(wl, trace=trace)
        self.reference_seconds = timeit.default_timer() - start
        self.request_steps = float(sum(step[1] for step in trace))

    def time_kernel(self):
        self.kernel()

    def time_kernel_prefill_apart(self):
        self.separate()

    def time_kernel_sliding_window(self):
        self.windowed()

    def track_request_steps_per_second(self):
        return self.request_steps / _best(self.kernel, 20)

    def track_reference_request_steps_per_second(self):
        return self.request_steps / self.reference_seconds

    def track_speedup_over_reference(self):
        return self.reference_seconds / _best(self.kernel, 20)

    track_request_steps_per_second.unit = "request-steps/s"
    track_reference_request_steps_per_second.unit = "request-steps/s"
    track_speedup_over_reference.unit = "x"


def _prefix_spec(n):
    # the _spec mix with 70% of requests starting with one of 4 system prompts of 256 tokens
    return WorkloadSpec(n, output=short_and_long(), prompt=Uniform(10, 200),
                        arrival=Poisson(rate=0.3), prefix=SharedPrefix(256, groups=4, share=0.7))


def _pair_setup(bench, spec, n, **batchers):
    """Two batchers of a benchmark on one workload of ``spec``: compiled, their steps counted."""
    for name, b in batchers.items():
        setattr(bench, name, b)
        _kernel_outputs(b, spec(10).sample(0))            # compile
    bench.workload = spec(n).sample(0)
    bench.steps = {b: _kernel_outputs(b, bench.workload)["stats"][_STEPS]
                   for b in batchers.values()}


def _pair_rate(bench, b):
    """Request-steps/s of ``b`` on the benchmark's workload (best of 20)."""
    return bench.steps[b] / _best(lambda: _kernel_outputs(b, bench.workload), 20)


class PrefixCaching:
    """Request-steps/s of paged admission with prefix caching and without it, on the same
    prefixed workload (1,000 requests), in the same run; the ratio is the price of the cache."""

    params = [1000]
    param_names = ["n_requests"]

    def setup(self, n):
        kw = {"max_num_seqs": 16, "kv_budget_tokens": 8000, "admission": "paged"}
        _pair_setup(self, _prefix_spec, n, cached=ContinuousBatcher(prefix_caching=True, **kw),
                    plain=ContinuousBatcher(**kw))

    def time_prefix_caching(self, n):
        _kernel_outputs(self.cached, self.workload)

    def track_prefix_caching_request_steps_per_second(self, n):
        return _pair_rate(self, self.cached)

    def track_plain_paged_request_steps_per_second(self, n):
        return _pair_rate(self, self.plain)

    def track_caching_over_plain(self, n):
        return _pair_rate(self, self.cached) / _pair_rate(self, self.plain)

    track_prefix_caching_request_steps_per_second.unit = "request-steps/s"
    track_plain_paged_request_steps_per_second.unit = "request-steps/s"
    track_caching_over_plain.unit = "x"


class SpeculativeDecoding:
    """Request-steps/s of paged admission with speculative decoding (k = 4, α = 0.8, a draft
    head) and without, on the ``KernelVsReference`` workload (1,000 requests), in the same run.
    Neither kernel's decode step visits a sequence (a speculative sequence files its whole
    path of drawn gains when it starts decoding), and a request-step there carries 1 to 5
    tokens: the ratios are per request-step and, ``*_tokens_over_plain``, per output token;
    ``track_kernel_*`` time the kernels alone, the others through ``_kernel_outputs`` (which
    draws the gains each run)."""

    params = [1000]
    param_names = ["n_requests"]

    def setup(self, n):
        kw = {"max_num_seqs": 16, "kv_budget_tokens": 4000, "admission": "paged"}
        draft = Speculative(draft=0.05, draft_tokens=4, acceptance=0.8)
        _pair_setup(self, _spec, n, speculative=ContinuousBatcher(speculative=draft, **kw),
                    plain=ContinuousBatcher(**kw))

    def time_speculative(self, n):
        _kernel_outputs(self.speculative, self.workload)

    def track_speculative_request_steps_per_second(self, n):
        return _pair_rate(self, self.speculative)

    def track_speculative_over_plain(self, n):
        return _pair_rate(self, self.speculative) / _pair_rate(self, self.plain)

    def track_speculative_tokens_over_plain(self, n):
        # both simulate the same output tokens: the ratio of their speeds
        plain = _best(lambda: _kernel_outputs(self.plain, self.workload), 20)
        return plain / _best(lambda: _kernel_outputs(self.speculative, self.workload), 20)

    def track_kernel_speculative_over_plain(self, n):
        # the kernels alone (the gains drawn once, outside the timing): per request-step
        spec, plain = (_raw_kernel(b, self.workload) for b in (self.speculative, self.plain))
        return (self.steps[self.speculative] / _best(spec, 50)) / (
            self.steps[self.plain] / _best(plain, 50))

    def track_kernel_speculative_tokens_over_plain(self, n):
        spec, plain = (_raw_kernel(b, self.workload) for b in (self.speculative, self.plain))
        return _best(plain, 50) / _best(spec, 50)

    track_speculative_request_steps_per_second.unit = "request-steps/s"
    track_speculative_over_plain.unit = "x"
    track_speculative_tokens_over_plain.unit = "x"
    track_kernel_speculative_over_plain.unit = "x"
    track_kernel_speculative_tokens_over_plain.unit = "x"


def _raw_kernel(batcher, wl):
    """A call of ``batcher``'s kernel on ``wl`` with every input prepared (gains drawn)."""
    from rooflinekit.batching import _kernels
    timing = batcher._timing()
    n = wl.n_requests
    out = _allocate(1, n)
    gain, offset = batcher._gains(wl.output_tokens[None])
    run = batcher._kernel(timing.tick)
    inputs = _kernels.kernel_inputs(wl.arrival, wl.prompt_tokens, wl.output_tokens, wl.priority,
                                    wl.prefix_group, wl.prefix_tokens, np.zeros(n, np.int64),
                                    gain[0], offset[0])
    args = (*inputs, *batcher._parameters(), timing.tick, timing.coef, timing.draft_coef,
            timing.draft_share, np.inf, *(a[0] for a in out[:6]))
    return lambda: run(*args)


class Import:
    """Importing the simulator compiles nothing and does not import numba."""

    def timeraw_import_batching(self):
        return "import rooflinekit.batching"


_FRESH_CACHE = """
import os, tempfile
os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp()    # an empty cache: numba compiles
"""


class Compile:
    """One-off numba compilation of the tick-mode kernels (fresh process, empty on-disk cache)."""

    def timeraw_compile_continuous(self):
        return _FRESH_CACHE + """
from rooflinekit.batching import ContinuousBatcher
ContinuousBatcher(max_num_seqs=4).run(arrival=[0.0], prompt_tokens=[1], output_tokens=[2])
"""

    def timeraw_compile_static(self):
        return _FRESH_CACHE + """
from rooflinekit.batching import StaticBatcher
StaticBatcher(batch_size=4).run(arrival=[0.0], prompt_tokens=[1], output_tokens=[2])
"""


_SIMULATE = """
from rooflinekit.batching import ContinuousBatcher, StaticBatcher
from rooflinekit.workloads import guide_workload
ContinuousBatcher(max_num_seqs=16).run(guide_workload())
StaticBatcher(batch_size=8).run(guide_workload())
"""


_CLI = {
    "guide": ["simulate"],
    "roofline_paged": ["simulate", "--workload", "lognormal", "--model", "llama-3.1-8b", "--gpu",
                       "h100", "--admission", "paged", "--kv-budget", "200000"],
}


def _new_process(*args):
    subprocess.run([sys.executable, *args], check=True, stdout=subprocess.DEVNULL)


def _median_wall(args, runs=5):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        _new_process(*args)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


class SecondProcess:
    """A whole new process that simulates both policies, its kernels loaded from numba's cache.

    ``setup`` runs the same script once, so the cache (numba's default place) holds the kernels;
    compare with ``Import.timeraw_import_batching`` (docs/simulator-cache.md).
    """

    timeout = 300

    def setup(self):
        _new_process("-c", _SIMULATE)

    def time_simulate_in_new_process(self):
        _new_process("-c", _SIMULATE)


class SimulateCommand:
    """A second ``rooflinekit simulate`` as a user runs it, and against ``import rooflinekit``.

    ``setup`` runs the command once so numba's cache holds its kernels. The ratio is of medians of
    5 new processes each (docs/simulator-cache.md; the target is at most 2.5).
    """

    timeout = 300
    params = list(_CLI)
    param_names = ["command"]

    def setup(self, command):
        _new_process("-m", "rooflinekit.cli", *_CLI[command])

    def time_second_process(self, command):
        _new_process("-m", "rooflinekit.cli", *_CLI[command])

    def track_second_process_over_import(self, command):
        cli = _median_wall(["-m", "rooflinekit.cli", *_CLI[command]])
        return cli / _median_wall(["-c", "import rooflinekit"])

    track_second_process_over_import.unit = "x"
