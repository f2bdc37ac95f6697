"""Measure every hot path against its baseline in one run and print the BENCHMARKS.md tables.

Each ratio compares two timings taken in the same process minutes apart: the vectorised (or
compiled) path against a plain Python loop calling the same library's scalar functions (or, for
the simulator, against the pure-Python reference). Per-call loop costs are measured on a sample
and scaled per configuration; nothing is asserted, everything is printed.

    python benchmarks/report.py            # about two minutes on 2 cores
"""

from __future__ import annotations

import platform
import sys
import timeit
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import rooflinekit as rk  # noqa: E402
from rooflinekit import catalog, memory, pricing, roofline  # noqa: E402


def best_of(func, repeat=5):
    """The fastest of ``repeat`` calls [s] (``timeit``'s clock, garbage collection paused)."""
    return min(timeit.repeat(func, number=1, repeat=repeat))


def vector_vs_loop(label, cells, vector, scalar_calls, repeat=5):
    """Rows: the vectorised call over ``cells`` and a Python loop over ``scalar_calls``."""
    vector()                                    # warm caches
    t_vec = best_of(vector, repeat)
    t_loop = best_of(lambda: [c() for c in scalar_calls], 3) / len(scalar_calls)
    return (label, f"{cells:,}", f"{t_vec * 1e3:,.1f} ms", f"{cells / t_vec:,.3g}",
            f"{1 / t_loop:,.3g}", f"{t_loop * cells / t_vec:,.0f}×")


def formulas():
    rng = np.random.default_rng(0)
    model, gpu = catalog.model("guide-70b"), catalog.gpu("guide-lab-80GB")
    n = 1_000_000
    ctx = rng.integers(1, 131_072, size=n)
    batch = rng.integers(1, 512, size=n)
    sample = rng.integers(0, n, size=2_000)
    rows = [
        vector_vs_loop("memory.max_concurrent_sequences (ndarray)", n,
                       lambda: memory.max_concurrent_sequences(model, gpu, ctx, tp=8),
                       [lambda c=int(ctx[i]): memory.max_concurrent_sequences(model, gpu, c, tp=8)
                        for i in sample]),
        vector_vs_loop("roofline.decode_step_time (ndarray)", n,
                       lambda: roofline.decode_step_time(model, gpu, batch, ctx, 8),
                       [lambda b=int(batch[i]), c=int(ctx[i]):
                        roofline.decode_step_time(model, gpu, b, c, 8) for i in sample]),
        vector_vs_loop("roofline.prefill_time (ndarray)", n,
                       lambda: roofline.prefill_time(model, gpu, ctx, 8),
                       [lambda c=int(ctx[i]): roofline.prefill_time(model, gpu, c, 8)
                        for i in sample]),
    ]
    models = catalog.models(as_dataset=True)
    gpus = catalog.gpus(as_dataset=True)
    import xarray as xr
    tp = xr.DataArray([1, 2, 4, 8], dims="tp")
    cg = xr.DataArray(np.linspace(1024, 131072, 256).astype(int), dims="context_length")
    bg = xr.DataArray(np.arange(1, 17), dims="batch_size")
    cells = models.sizes["model"] * gpus.sizes["gpu"] * 4 * 256 * 16
    names = [(m, g) for m in models.model.values[:5] for g in gpus.gpu.values[:4]]
    specs = [(catalog.model(m), catalog.gpu(g)) for m, g in names]
    rows.append(vector_vs_loop(
        "roofline.decode_step_time (catalogue Datasets)", cells,
        lambda: roofline.decode_step_time(models, gpus, bg, cg, tp),
        [lambda m=m, g=g, i=i: roofline.decode_step_time(m, g, 1 + i % 16, 4096, 2)
         for i, (m, g) in enumerate(specs * 20)]))
    payg, ptu = pricing.PayAsYouGo(3.0, 12.0), pricing.Provisioned(12_000.0, 4e9)
    f = rng.random(n)
    rows.append(vector_vs_loop(
        "pricing.break_even (ndarray of output fractions)", n,
        lambda: pricing.break_even(ptu, payg, f),
        [lambda x=float(f[i]): pricing.break_even(ptu, payg, x) for i in sample]))
    return rows


def simulator():
    import batching as bench   # benchmarks/batching.py
    rows = []
    for mode in ("static", "reserve", "paged", "chunked"):
        case = bench.KernelVsReference()
        case.setup(1000, mode)
        rate = case.track_kernel_request_steps_per_second(1000, mode)
        ratio = case.track_speedup_over_reference(1000, mode)
        rows.append((mode, "1,000", f"{rate:,.3g}", f"{ratio:,.0f}×"))
    mc = []
    for mode in ("static", "reserve", "paged"):
        case = bench.MonteCarlo()
        case.setup(mode, "threads")
        seconds = best_of(lambda: case.time_monte_carlo_1000x1000(mode, "threads"), 2)
        mc.append((mode, "1,000 × 1,000", f"{seconds:.2f} s"))
    return rows, mc


def table(title, columns, rows):
    print(f"\n### {title}\n")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")


if __name__ == "__main__":
    import numba
    print(f"Machine: {platform.processor() or platform.machine()}, {sys.platform}, "
          f"Python {platform.python_version()}, numpy {np.__version__}, numba {numba.__version__}, "
          f"rooflinekit {rk.__version__}")
    table("Formulas: vectorised vs a Python loop over the scalar calls (same run)",
          ("kernel", "cells", "vectorised time", "cells/s", "scalar calls/s", "ratio"),
          formulas())
    kernels, mc = simulator()
    table("Simulator: numba kernel vs the pure-Python reference (same workloads, same run)",
          ("mode", "requests", "kernel request-steps/s", "kernel ÷ reference"), kernels)
    table("Monte Carlo (a thread per core, 2 cores)", ("mode", "replicates × requests", "time"), mc)
