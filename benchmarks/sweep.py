"""asv benchmarks for design-space sweeps: 1,152, 1e6 and 1e7 cells, against a scalar loop.

Configurations per second = cells / time. The 1,152-cell grid is the peer comparison's
(2 models × 3 GPUs × 4 tp × 6 contexts × 8 batch sizes; see ``benchmarks/peer/``); the larger
grids keep those 24 (model, GPU, tp) groups and widen the context and batch axes.

Run as a script for the figures in BENCHMARKS.md (same run, same machine)::

    python benchmarks/sweep.py table      # configs/s at each size, with pp/ep, with the
                                          # techniques' dimensions, the scalar loop
    python benchmarks/sweep.py billion    # 1e9 cells reduced to the best config per model
"""

import resource
import sys
import time
import timeit

import numpy as np

from rooflinekit import catalog, memory, roofline
from rooflinekit import sweep as sw

MODELS = ["Llama-2-70B", "Llama-2-7B"]
GPUS = ["A100-SXM-40GB", "A100-SXM-80GB", "H100-SXM-80GB"]
TP = [1, 2, 4, 8]
CONTEXTS = [128, 256, 512, 1024, 2048, 4096]
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128]

#: (contexts, batch sizes) per size: 24 groups × contexts × batches cells.
SIZES = {1_152: None, 1_000_000: (200, 208), 10_000_000: (640, 651)}


def grid(cells):
    """Sweep keyword arguments for a grid of about ``cells`` configurations."""
    if SIZES[cells] is None:
        return dict(models=MODELS, gpus=GPUS, tp=TP, context_length=CONTEXTS,
                    batch_size=BATCHES)
    n_ctx, n_batch = SIZES[cells]
    return dict(models=MODELS, gpus=GPUS, tp=TP, context_length=np.arange(1, n_ctx + 1) * 64,
                batch_size=np.arange(1, n_batch + 1))


#: Pipeline and expert-parallel dimensions added to a grid: 4 layouts per (model, GPU, tp), the
#: dense models' ep = 2 cells among them (computed, then marked as not fitting).
LAYOUTS = {"pp": [1, 2], "ep": [1, 2]}


def layout_grid(cells):
    """:func:`grid` with the :data:`LAYOUTS` dimensions: 4 × the configurations."""
    return {**grid(cells), **LAYOUTS}


#: Speculative-decoding and prefix-caching dimensions added to a grid: 3 × 2 × 2 = 12 × the
#: configurations, a draft head costing 5% of a target step.
TECHNIQUES = {"draft_tokens": [0, 2, 4], "acceptance": [0.6, 0.8], "draft": 0.05,
              "prefix_share": [0.0, 0.5]}


def technique_grid(cells):
    """:func:`grid` with the :data:`TECHNIQUES` dimensions: 12 × the configurations."""
    return {**grid(cells), **TECHNIQUES}


def scalar_configuration(m, g, tp, c, b):
    """Every sweep variable of one configuration from the scalar functions: the plain loop."""
    step = roofline.decode_step_time(m, g, b, c, tp)
    ai = roofline.arithmetic_intensity(m, b, c)
    ridge = roofline.ridge_point(g)
    mcs = memory.max_concurrent_sequences(m, g, c, tp=tp)
    return (memory.weight_bytes(m), memory.kv_bytes_per_token(m),
            memory.kv_bytes_per_sequence(m, c), b * memory.kv_bytes_per_sequence(m, c),
            memory.group_memory_bytes(g, tp), memory.usable_kv_bytes(m, g, tp=tp), mcs, mcs >= b,
            ridge, ai, roofline.bound(ai, ridge), step,
            roofline.decode_throughput(m, g, b, c, tp),
            roofline.decode_throughput_per_gpu(m, g, b, c, tp),
            roofline.prefill_time(m, g, c, tp),
            roofline.cost_per_million_tokens(m, g, b, c, tp))


def scalar_sample(kw, n, seed=0):
    """``n`` seeded configurations of a grid, as spec objects and Python ints."""
    rng = np.random.default_rng(seed)
    models = [catalog.model(x) for x in kw["models"]]
    gpus = [catalog.gpu(x) for x in kw["gpus"]]
    axes = [np.asarray(kw[k]) for k in ("tp", "context_length", "batch_size")]
    out = []
    for _ in range(n):
        out.append((models[rng.integers(len(models))], gpus[rng.integers(len(gpus))],
                    *(int(a[rng.integers(len(a))]) for a in axes)))
    return out


class Sweep:
    """The in-memory sweep (every variable) at 1,152, 1e6 and 1e7 cells."""

    params = list(SIZES)
    param_names = ["cells"]
    timeout = 300

    def setup(self, cells):
        self.kw = grid(cells)
        sw.sweep(**grid(1_152))          # warm caches (catalogue, imports)

    def time_sweep(self, cells):
        sw.sweep(**self.kw)

    def peakmem_sweep(self, cells):
        sw.sweep(**self.kw)

    def track_configs_per_second(self, cells):
        start = time.perf_counter()
        ds = sw.sweep(**self.kw)
        return sw.sweep_cells(ds) / (time.perf_counter() - start)

    track_configs_per_second.unit = "configurations/s"


class SweepLayouts:
    """The in-memory sweep with pp and ep dimensions (4 layouts) on the 1,152 and 1e6 grids."""

    params = [1_152, 1_000_000]
    param_names = ["cells"]
    timeout = 300
    make = staticmethod(layout_grid)

    def setup(self, cells):
        self.kw = self.make(cells)
        sw.sweep(**self.make(1_152))

    def time_sweep(self, cells):
        sw.sweep(**self.kw)

    def track_configs_per_second(self, cells):
        start = time.perf_counter()
        ds = sw.sweep(**self.kw)
        return sw.sweep_cells(ds) / (time.perf_counter() - start)

    track_configs_per_second.unit = "configurations/s"


class SweepTechniques(SweepLayouts):
    """The in-memory sweep with draft_tokens, acceptance and prefix_share dimensions (12 × the
    cells) on the 1,152 and 1e6 grids."""

    make = staticmethod(technique_grid)


class ScalarLoop:
    """A plain Python loop calling the scalar functions per configuration (200 configurations)."""

    def setup(self):
        self.sample = scalar_sample(grid(1_152), 200)

    def time_loop_200(self):
        for config in self.sample:
            scalar_configuration(*config)

    def track_configs_per_second(self):
        start = time.perf_counter()
        for config in self.sample:
            scalar_configuration(*config)
        return len(self.sample) / (time.perf_counter() - start)

    track_configs_per_second.unit = "configurations/s"


class ChunkedReduction:
    """The lazy path: 1e7 cells in 2**20-cell blocks, reduced to the best configuration per
    model."""

    timeout = 300

    def setup(self):
        self.kw = grid(10_000_000)

    def time_best_configuration(self):
        ds = sw.sweep(**self.kw, chunks="auto",
                      variables=["tokens_per_second_per_gpu", "fits"])
        sw.best_configuration(ds)

    def peakmem_best_configuration(self):
        ds = sw.sweep(**self.kw, chunks="auto",
                      variables=["tokens_per_second_per_gpu", "fits"])
        sw.best_configuration(ds)


# -- script mode ----------------------------------------------------------------------------------

def _best_of(func, repeat):
    """The fastest of ``repeat`` calls [s] (``timeit``'s clock, garbage collection paused)."""
    return min(timeit.repeat(func, number=1, repeat=repeat))


def table(repeat=5):
    """Configurations per second at each size (best of ``repeat``) and of the scalar loop."""
    sw.sweep(**grid(1_152))
    rows = []
    for cells in SIZES:
        kw = grid(cells)
        n = sw.sweep_cells(sw.sweep(**kw))
        seconds = _best_of(lambda: sw.sweep(**kw), repeat if cells < 10**7 else 3)
        rows.append((f"sweep, {n:,} cells", seconds, n / seconds))
        if cells < 10**7:
            for what, make in (("pp, ep", layout_grid),
                               ("draft_tokens, acceptance, prefix_share", technique_grid)):
                kw = make(cells)
                n = sw.sweep_cells(sw.sweep(**kw))
                seconds = _best_of(lambda: sw.sweep(**kw), repeat)
                rows.append((f"sweep with {what}, {n:,} cells", seconds, n / seconds))
    sample = scalar_sample(grid(1_152), 300)
    seconds = _best_of(lambda: [scalar_configuration(*c) for c in sample], 3)
    rows.append(("scalar loop, per config (300 sampled)", seconds / len(sample),
                 len(sample) / seconds))
    print(f"{'what':66s} {'seconds':>12s} {'configs/s':>14s}")
    for what, seconds, rate in rows:
        print(f"{what:66s} {seconds:12.6f} {rate:14,.0f}")
    return rows


def billion(chunks="auto"):
    """A 1e9-cell sweep reduced to the best configuration per model; time and peak RSS."""
    kw = dict(models=["Llama-2-70B", "Llama-2-7B", "Llama-3.1-8B", "Mixtral-8x7B"],
              gpus=["A100-SXM-40GB", "A100-SXM-80GB", "H100-SXM-80GB", "H200-SXM-141GB",
                    "MI300X"],
              tp=[1, 2, 4, 8], context_length=np.arange(1, 2001) * 64,
              batch_size=np.arange(1, 6251))
    start = time.perf_counter()
    ds = sw.sweep(**kw, chunks=chunks, variables=["tokens_per_second_per_gpu", "fits"])
    best = sw.best_configuration(ds, progress=sys.stderr.isatty())
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024   # Linux: KiB
    cells = sw.sweep_cells(ds)
    print(best.to_dataframe().to_string())
    print(f"cells {cells:,}  blocks {ds.fits.data.npartitions:,}  time {seconds:.1f} s  "
          f"{cells / seconds:,.0f} configs/s  peak RSS {peak / 2**30:.2f} GiB")
    return seconds, peak


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "table"
    if what == "table":
        table()
    elif what == "billion":
        billion()
    else:
        sys.exit(f"usage: python {sys.argv[0]} [table|billion]")
