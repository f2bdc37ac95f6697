"""Hostile sizes (issue 31): work that would exceed memory or minutes is estimated first and
refused with the way out, before any work; results that cannot be told apart are not reported
as known. Each test reproduces one row of the issue, without allocating the gigabytes or
running the minutes it guards against (the refusal is asserted to come before the work)."""

from __future__ import annotations

import time
import tracemalloc

import numpy as np
import pytest

import rooflinekit as rk
from rooflinekit.batching import (MAX_BLOCK_SIZE, RUN_BYTES_PER_REQUEST, SIMULATION_MEMORY_LIMIT,
                                  ContinuousBatcher, StaticBatcher, run_memory_bytes)
from rooflinekit.cli.main import main
from rooflinekit.workloads import Constant, Poisson, SharedPrefix, WorkloadSpec


def one_line_error(capsys, argv, *words):
    try:
        code = main(argv)
    except SystemExit as exc:     # a usage error from the parser
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and all(w in err for w in words), err
    return err


def no_work(monkeypatch, target, name):
    """Make ``target.name`` fail the test if called: the refusal must come before it."""
    def refuse(*args, **kwargs):
        raise AssertionError(f"{name} ran: the work started before the refusal")
    monkeypatch.setattr(target, name, refuse)


# --- row 6: a single run has a per-request memory estimate ------------------------------------

def test_simulate_refuses_requests_beyond_memory_before_drawing(capsys, monkeypatch):
    # 20 M requests (50x under the work limit) took 6.8 GB, then MemoryError
    from rooflinekit.cli import simulate
    no_work(monkeypatch, simulate, "_workload")
    err = one_line_error(capsys, ["simulate", "--workload", "constant", "--requests", "20000000",
                                  "--output-mean", "10"], "--requests", "GiB", "at most")
    assert "memory_limit" in err


def test_run_refuses_above_memory_limit_before_the_kernel(monkeypatch):
    spec = WorkloadSpec(2000, output=Constant(10), prompt=Constant(0))
    wl = spec.sample(0)
    for batcher in (StaticBatcher(), ContinuousBatcher(max_num_seqs=16)):
        no_work(monkeypatch, type(batcher), "_simulate")
        with pytest.raises(ValueError, match=r"memory_limit=.*fewer requests .*at most about 1,"):
            batcher.run(wl, memory_limit=2000 * RUN_BYTES_PER_REQUEST / 2)
    assert run_memory_bytes(20_000_000) > SIMULATION_MEMORY_LIMIT
    assert run_memory_bytes(1_000_000) < SIMULATION_MEMORY_LIMIT


@pytest.mark.parametrize("batcher, prefixed", [
    (StaticBatcher(batch_size=8), False),
    (ContinuousBatcher(max_num_seqs=16), False),
    (ContinuousBatcher(max_num_seqs=16, admission="paged", prefix_caching=True), True),
])
def test_run_memory_estimate_bounds_the_peak(batcher, prefixed):
    # the estimate is never below what a run holds at its peak, nor above twice it: a run
    # refused at the limit is not one that would have fit, and one admitted stays within 2x
    n = 100_000
    spec = WorkloadSpec(n, output=Constant(10), prompt=Constant(100), arrival=Poisson(1.0),
                        prefix=SharedPrefix(64, 4) if prefixed else None)
    wl = spec.sample(0)
    batcher.run(wl.__class__(wl.arrival[:10], wl.prompt_tokens[:10], wl.output_tokens[:10]))
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        batcher.run(wl, ttft_target=5.0, itl_target=1.0, e2e_target=10.0, tpot_target=1.0)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    estimate = run_memory_bytes(n, block_size=16 if prefixed else None, prefix_groups=4)
    assert peak <= estimate <= 2 * peak, (peak / n, estimate / n)


# --- row 9: counts that passed validation then asked for petabytes ----------------------------

@pytest.mark.parametrize("argv, flag", [
    (["simulate", "--workload", "constant", "--requests", "1e9"], "--requests"),
    (["simulate", "--workload", "constant", "--requests", "100", "--input-len", "10",
      "--prefix-tokens", "10", "--prefix-groups", str(2**53)], "--prefix-groups"),
    (["simulate", "--workload", "constant", "--requests", "100", "--admission", "paged",
      "--block-size", str(2**53)], "--block-size"),
    (["plan", "llama-3.1-8b", "--gpus", "h100", "--rate", "1", "--prompt-mean", "100",
      "--output-mean", "10", "--ttft", "1", "--prefix-tokens", "10", "--prefix-groups",
      str(2**53)], "--prefix-groups"),
    (["plan", "llama-3.1-8b", "--gpus", "h100", "--rate", "1", "--prompt-mean", "100",
      "--output-mean", "10", "--ttft", "1", "--block-size", str(2**53)], "--block-size"),
    (["capacity", "llama-3.1-8b", "h100", "--gpu-memory-utilization", "0.9", "--block-size",
      str(2**53)], "--block-size"),
])
def test_huge_counts_are_refused_with_their_range(argv, flag, capsys, monkeypatch):
    from rooflinekit.cli import simulate
    no_work(monkeypatch, simulate, "_workload")
    start = time.perf_counter()
    err = one_line_error(capsys, argv, flag)
    assert "[1, " in err or "at most" in err
    assert time.perf_counter() - start < 10


def test_block_size_is_bounded_in_the_api():
    with pytest.raises(ValueError, match=r"block_size must be in \[1, 1,048,576\]"):
        ContinuousBatcher(admission="paged", block_size=2**53)
    assert ContinuousBatcher(admission="paged", block_size=MAX_BLOCK_SIZE).block_size == 2**20
    # the paged kernel's scratch per token of a block counts in the estimate
    assert run_memory_bytes(10, block_size=MAX_BLOCK_SIZE) >= 8 * MAX_BLOCK_SIZE


# --- row 8: axes counted before they are built; chunkings of absurd block counts refused --------

def test_axis_ranges_are_counted_before_they_are_built():
    from rooflinekit.cli.sweep import MAX_AXIS, parse_axis
    assert parse_axis("1:5,10:20:5,7").tolist() == [1, 2, 3, 4, 5, 10, 15, 20, 7]
    start = time.perf_counter()
    with pytest.raises(ValueError, match="more than 10,000,000 values"):
        parse_axis(",".join([f"1:{MAX_AXIS}"] * 30))      # was a MemoryError while parsing
    with pytest.raises(ValueError, match="more than"):
        parse_axis(f"1:{MAX_AXIS},1")
    assert time.perf_counter() - start < 1.0
    assert parse_axis(f"1:{MAX_AXIS}").size == MAX_AXIS


def test_sweep_cli_refuses_ranges_beyond_the_axis_bound(capsys):
    one_line_error(capsys, ["sweep", "--max-model-len", ",".join(["1:10000000"] * 30)],
                   "--max-model-len", "10,000,000")


def test_sweep_refuses_one_block_per_cell_before_any_work(monkeypatch):
    pytest.importorskip("dask")
    from rooflinekit.sweep import grid
    no_work(monkeypatch, grid, "_lazy_arrays")
    kw = dict(context_length=np.arange(1, 101), batch_size=np.arange(1, 101), engine=rk.IDEAL)
    with pytest.raises(ValueError, match=r"10,000 dask blocks of about 1 cells.*1,024"):
        grid.sweep("guide-70b", "h100", chunks=1, **kw)      # took 173 s
    with pytest.raises(ValueError, match=r"above the 100,000 a sweep may have"):
        grid.check_blocks((10**6,), ((1,) * 200_000,))


def test_sweep_cli_refuses_one_block_per_cell(capsys):
    pytest.importorskip("dask")
    one_line_error(capsys, ["sweep", "--models", "guide-70b", "--gpus", "h100", "--max-model-len",
                            "1:100", "--batch-size", "1:100", "--chunks", "1", "--no-progress"],
                   "dask blocks", "chunks")


def test_small_chunkings_of_few_blocks_still_run():
    pytest.importorskip("dask")
    from rooflinekit.sweep import check_blocks, sweep
    kw = dict(context_length=[1024, 2048], batch_size=[1, 2, 4, 8, 16], engine=rk.IDEAL)
    lazy = sweep("guide-70b", "h100", chunks=1, **kw)     # 10 one-cell blocks: fine
    eager = sweep("guide-70b", "h100", **kw)
    for name in ("fits", "decode_step_time"):
        np.testing.assert_array_equal(lazy[name].values, eager[name].values)
    assert check_blocks((4000,), ((4,) * 1000,)) == 1000      # 1,000 blocks of 4 cells


# --- row 16: tensor parallelism bounded by the heads it splits --------------------------------

def test_tp_that_does_not_divide_the_heads_never_fits():
    # the sweep recommended tp 5 for the 405B's 128 heads; the layout rule refuses it now
    from rooflinekit.sweep import cheapest_configuration, sweep
    ds = sweep("llama-3.1-405b", ["H100-SXM-80GB", "H200-SXM-141GB"], tp=np.arange(1, 9),
               context_length=[1024, 8192], batch_size=[1, 32, 128], engine=rk.IDEAL)
    assert not bool(ds["fits"].sel(tp=[3, 5, 6, 7]).any())
    best = cheapest_configuration(ds)
    tp = int(np.atleast_1d(best["tp"].values)[0])
    assert tp in (1, 2, 4, 8) and 128 % tp == 0


@pytest.mark.parametrize("tp", [256, 2**53])
def test_tp_above_every_models_heads_is_refused(tp, capsys):
    # tp 2**53 "fitted"
    from rooflinekit.sweep import sweep
    with pytest.raises(ValueError, match=r"tp must be at most the attention heads.*128"):
        sweep("llama-3.1-405b", "h100", tp=[8, tp], engine=rk.IDEAL)
    one_line_error(capsys, ["sweep", "--models", "llama-3.1-405b", "--gpus", "h100", "--tp",
                            str(tp), "--report", "cheapest", "--no-progress"], "tp", "heads")


# --- row 20: identification by distinct configurations, not rows -------------------------------

def _runs(tpots, **changes):
    base = dict(model="llama-3.1-8b", gpu="H100-SXM-80GB", tp=1, dtype="bf16", batch_size=8,
                prompt_tokens=1000, output_tokens=200, source="test")
    return [{**base, "tpot_ms": t, **{k: v[i] for k, v in changes.items()}}
            for i, t in enumerate(tpots)]


def test_calibrate_refuses_more_knobs_than_distinct_configurations():
    # four runs of one configuration reported two knobs "identified" with tight intervals
    from rooflinekit.calibrate import calibrate
    with pytest.raises(ValueError, match=r"4 measurement\(s\) of 1 distinct configuration.*"
                                         r"2 free knob"):
        calibrate(_runs([9.0, 9.2, 9.1, 8.9]), phases=("decode",), n_resamples=20,
                  fit={"decode": ["bandwidth_efficiency", "step_overhead"]})
    # one configuration pins one knob
    one = calibrate(_runs([9.0, 9.2, 9.1, 8.9]), phases=("decode",), n_resamples=20,
                    fit={"decode": ["step_overhead"]}).parameters.sel(phase="decode")
    assert bool(one["identified"].sel(parameter="step_overhead"))


def test_knobs_on_a_ridge_are_reported_unidentified():
    # two configurations the decode step cannot tell apart (the same context, batch and model;
    # only the output length differs): one combination of two knobs is pinned, neither knob
    from rooflinekit.calibrate import calibrate
    runs = _runs([9.0, 9.2], output_tokens=[200, 300], context_length=[1100, 1100])
    p = calibrate(runs, phases=("decode",), n_resamples=20,
                  fit={"decode": ["bandwidth_efficiency", "step_overhead"]}
                  ).parameters.sel(phase="decode")
    for knob in ("bandwidth_efficiency", "step_overhead"):
        assert not bool(p["identified"].sel(parameter=knob)), knob
        lo, hi = float(p["lower"].sel(parameter=knob)), float(p["upper"].sel(parameter=knob))
        assert hi - lo > 0.9 * hi, (knob, lo, hi)      # its bounds, not a tight interval


def test_a_shared_prefix_of_2_53_groups_is_drawn_and_refused_by_its_table():
    # SharedPrefix(10, 2**53): the workload check no longer allocates by the largest group
    # number (a MemoryError before), and the run refuses the prefix table it would need, naming
    # the groups rather than the requests
    from rooflinekit.batching import ContinuousBatcher
    from rooflinekit.workloads import Constant, SharedPrefix, WorkloadSpec
    spec = WorkloadSpec(50, prompt=Constant(100), output=Constant(5),
                        prefix=SharedPrefix(10, 2**53))
    wl = spec.sample(np.random.default_rng(0))
    assert wl.n_requests == 50 and int(wl.prefix_group.max()) > 2**40
    with pytest.raises(ValueError, match="prefix table .*SharedPrefix\\(groups=\\)"):
        ContinuousBatcher(max_num_seqs=8, admission="paged", prefix_caching=True).run(wl)
