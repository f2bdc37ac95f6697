"""The numba kernels against the plain-Python reference: exact equality, every mode.

Every per-request output (admit, first_token, finish, preemptions, status) and every run statistic
(makespan clock, step count, occupancy integrals and peaks, preemptions) must be equal bit for bit
(NaN == NaN for requests that were rejected). Workloads are drawn by hypothesis.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rooflinekit.batching import ContinuousBatcher, StaticBatcher, _reference, _schema
from rooflinekit.batching.batchers import _kernel_outputs
from rooflinekit.batching.results import REASON_KV_BUDGET
from rooflinekit.workloads import Workload, guide_workload

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
#: Every mode's kernel against the reference: decodes mixed with prefill slices (vLLM V1), and
#: prefill steps apart (``mixed_prefill=False``: SGLang, vLLM V0), its own compiled copy.
MIXED = pytest.mark.parametrize("mixed", [True, False], ids=["mixed", "prefill-apart"])


@st.composite
def workloads(draw, max_n=24, tiers=False, fractional=False):
    n = draw(st.integers(0, max_n))
    if fractional:
        gaps = draw(st.lists(st.floats(0, 8, allow_nan=False), min_size=n, max_size=n))
    else:
        gaps = draw(st.lists(st.integers(0, 8), min_size=n, max_size=n))
    arrival = np.cumsum(np.asarray(gaps, dtype=float))
    prompt = draw(st.lists(st.integers(0, 40), min_size=n, max_size=n))
    output = draw(st.lists(st.integers(1, 40), min_size=n, max_size=n))
    priority = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)) if tiers else None
    return Workload(arrival, prompt, output, priority)


def assert_same(kernel: dict, reference: dict):
    for key in ("admit", "first_token", "finish", "preemptions", "status", "stats"):
        np.testing.assert_array_equal(kernel[key], reference[key], err_msg=key)


def assert_ended_as(ds, never):
    """Every request of a run's Dataset ``ds`` ended: rejected for its KV budget where
    ``never[i]`` (its final length can never fit), else completed."""
    status = ds["status"].values
    assert set(status) <= {"completed", "rejected"}
    for i, refused in enumerate(never):
        assert (status[i] == "rejected") == refused
        if refused:
            assert ds["reason"].values[i] == REASON_KV_BUDGET
        else:
            assert np.isfinite(ds["finish"].values[i])


#: Per request, a share in [0, 1] of its prompt whose KV arrives with it.
arrived_shares = st.lists(st.floats(0, 1), min_size=64, max_size=64)


def assert_same_with_arrived(b, wl, shares):
    """Kernel == reference without arrived KV and with ``shares`` of each prompt arrived."""
    assert_same(_kernel_outputs(b, wl), b.reference(wl))
    arrived = np.floor(np.asarray(shares[:wl.n_requests]) * wl.prompt_tokens).astype(np.int64)
    assert_same(_kernel_outputs(b, wl, arrived_kv_tokens=arrived),
                b.reference(wl, arrived_kv_tokens=arrived))


slots = st.one_of(st.none(), st.integers(1, 8))
budgets = st.one_of(st.none(), st.integers(0, 300))


@SETTINGS
@given(wl=workloads(fractional=True), max_num_seqs=slots, kv=budgets, shares=arrived_shares)
def test_reserve_matches_reference(wl, max_num_seqs, kv, shares):
    b = ContinuousBatcher(max_num_seqs=max_num_seqs, kv_budget_tokens=kv)
    assert_same_with_arrived(b, wl, shares)


@SETTINGS
@given(wl=workloads(), max_num_seqs=slots, kv=st.integers(1, 200), block_size=st.integers(1, 8),
       shares=arrived_shares)
def test_paged_matches_reference(wl, max_num_seqs, kv, block_size, shares):
    b = ContinuousBatcher(max_num_seqs=max_num_seqs, kv_budget_tokens=kv, admission="paged",
                          block_size=block_size)
    assert_same_with_arrived(b, wl, shares)


@MIXED
@SETTINGS
@given(wl=workloads(), max_num_seqs=st.integers(1, 8), extra=st.integers(0, 30),
       kv=budgets, admission=st.sampled_from(["reserve", "paged"]), block_size=st.integers(1, 8),
       shares=arrived_shares)
def test_chunked_prefill_matches_reference(mixed, wl, max_num_seqs, extra, kv, admission,
                                           block_size, shares):
    b = ContinuousBatcher(max_num_seqs=max_num_seqs, kv_budget_tokens=kv, admission=admission,
                          block_size=block_size, max_num_batched_tokens=max_num_seqs + extra,
                          mixed_prefill=mixed)
    assert_same_with_arrived(b, wl, shares)


@MIXED
@SETTINGS
@given(wl=workloads(tiers=True), max_num_seqs=slots, kv=budgets,
       cap=st.one_of(st.none(), st.integers(1, 4)), admission=st.sampled_from(["reserve", "paged"]),
       shares=arrived_shares)
def test_tiers_match_reference(mixed, wl, max_num_seqs, kv, cap, admission, shares):
    b = ContinuousBatcher(max_num_seqs=max_num_seqs, kv_budget_tokens=kv, admission=admission,
                          interactive_cap=cap, block_size=4, mixed_prefill=mixed)
    assert_same_with_arrived(b, wl, shares)


@SETTINGS
@given(wl=workloads(fractional=True), batch_size=st.integers(1, 10))
def test_static_matches_reference(wl, batch_size):
    b = StaticBatcher(batch_size=batch_size)
    assert_same(_kernel_outputs(b, wl), b.reference(wl))


def test_guide_workload_matches_reference():
    # docs/conventions.md workload, both policies: exact equality, not only the headline figures.
    wl = guide_workload()
    for b in (StaticBatcher(batch_size=8), ContinuousBatcher(max_num_seqs=16),
              ContinuousBatcher(max_num_seqs=4, kv_budget_tokens=900, admission="paged",
                                block_size=16, max_num_batched_tokens=8)):
        assert_same(_kernel_outputs(b, wl), b.reference(wl))


def test_reference_prompt_rule_is_reference_only():
    # The failure-mode rule exists in the reference alone; the public class refuses it.
    with pytest.raises(ValueError, match="admission"):
        ContinuousBatcher(admission="prompt")
    out = _reference.simulate_continuous([0.0], [5], [5], admission="prompt", kv_budget=6)
    assert out["status"].tolist() == [_schema.COMPLETED]


# --- roofline clock: same rules, each step timed by rooflinekit.roofline -----------------------

ROOFLINE = {
    "dense, tp 8": dict(model="guide-70b", gpu="lab", tp=8),
    "MoE": dict(model="Mixtral-8x7B", gpu="H100-SXM-80GB", tp=2),
    "sliding window": dict(model="Gemma-2-9B", gpu="L40S", tp=1),
}


def roofline_batcher(config, **kwargs):
    from rooflinekit import catalog
    return ContinuousBatcher(model=catalog.model(config["model"]), gpu=catalog.gpu(config["gpu"]),
                             tp=config["tp"], **kwargs)


#: A roofline-clock batcher's draws: configuration, slots, the token budget beyond the slots
#: (None: unlimited), KV budget and admission (with :func:`roofline_case`).
ROOFLINE_BATCHERS = dict(config=st.sampled_from(sorted(ROOFLINE)), max_num_seqs=st.integers(1, 8),
                         extra=st.one_of(st.none(), st.integers(0, 30)), kv=st.integers(1, 300),
                         admission=st.sampled_from(["reserve", "paged"]))


def roofline_case(wl, config, max_num_seqs, extra, kv, admission, **kwargs):
    """``wl`` with its tick-sized gaps scaled to the roofline steps' milliseconds (arrivals in
    seconds), and the roofline batcher of :data:`ROOFLINE_BATCHERS`' draws (blocks of 4
    tokens), ``kwargs`` beside."""
    scaled = Workload(wl.arrival * 0.01, wl.prompt_tokens, wl.output_tokens, wl.priority)
    return scaled, roofline_batcher(
        ROOFLINE[config], max_num_seqs=max_num_seqs, kv_budget_tokens=kv, admission=admission,
        block_size=4, max_num_batched_tokens=None if extra is None else max_num_seqs + extra,
        **kwargs)


@MIXED
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(fractional=True, tiers=True), cap=st.one_of(st.none(), st.integers(1, 3)),
       shares=arrived_shares, **ROOFLINE_BATCHERS)
def test_roofline_continuous_matches_reference(mixed, wl, cap, shares, **draws):
    wl, b = roofline_case(wl, interactive_cap=cap, mixed_prefill=mixed, **draws)
    assert_same_with_arrived(b, wl, shares)


@pytest.mark.parametrize("mixed", [True, False])
def test_host_time_per_decode_token_matches_reference(mixed):
    # sequence_overhead is the step coefficients' last field: the kernels pass it to the step
    # formula as the reference does, and a lone request's decode step pays it once
    from rooflinekit import Engine, catalog
    engine = Engine(step_overhead=1e-3, sequence_overhead=3e-4)
    wl = Workload([0.0, 0.001, 0.002, 0.05], [5, 9, 3, 7], [6, 2, 9, 4])
    for config in sorted(ROOFLINE):
        b = roofline_batcher(ROOFLINE[config], max_num_seqs=3, mixed_prefill=mixed,
                             engine=engine)
        assert_same(_kernel_outputs(b, wl), b.reference(wl))
    c = ROOFLINE["dense, tp 8"]
    one = Workload([0.0], [4], [3])
    gaps = []
    for host in (0.0, 3e-4):
        b = ContinuousBatcher(model=catalog.model(c["model"]), gpu=catalog.gpu(c["gpu"]),
                              tp=c["tp"], max_num_seqs=1, engine=engine.replace(
                                  sequence_overhead=host))
        out = _kernel_outputs(b, one)
        gaps.append((out["finish"][0] - out["first_token"][0]) / 2)   # two decode steps
    assert gaps[1] - gaps[0] == pytest.approx(3e-4, rel=1e-6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(fractional=True), config=st.sampled_from(sorted(ROOFLINE)),
       batch_size=st.integers(1, 8))
def test_roofline_static_matches_reference(wl, config, batch_size):
    from rooflinekit import catalog
    c = ROOFLINE[config]
    wl = Workload(wl.arrival * 0.01, wl.prompt_tokens, wl.output_tokens)
    b = StaticBatcher(batch_size=batch_size, model=catalog.model(c["model"]),
                      gpu=catalog.gpu(c["gpu"]), tp=c["tp"])
    assert_same(_kernel_outputs(b, wl), b.reference(wl))



@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(fractional=True, tiers=True), window=st.integers(1, 24),
       max_num_seqs=st.integers(1, 8), extra=st.one_of(st.none(), st.integers(0, 30)),
       kv=st.integers(1, 300), admission=st.sampled_from(["reserve", "paged"]),
       shares=arrived_shares)
def test_window_crossings_match_reference(wl, window, max_num_seqs, extra, kv, admission,
                                          shares):
    # a window short enough that sequences cross it while decoding, prefilling and re-prefilling
    import dataclasses

    from rooflinekit import catalog
    model = dataclasses.replace(catalog.model("Gemma-2-9B"), sliding_window=window)
    wl = Workload(wl.arrival * 0.01, wl.prompt_tokens, wl.output_tokens, wl.priority)
    b = ContinuousBatcher(model=model, gpu=catalog.gpu("L40S"), max_num_seqs=max_num_seqs,
                          kv_budget_tokens=kv, admission=admission, block_size=4,
                          max_num_batched_tokens=None if extra is None else max_num_seqs + extra)
    assert_same_with_arrived(b, wl, shares)


@pytest.mark.parametrize("clock", ["tick", "roofline"])
@pytest.mark.parametrize("admission", ["reserve", "paged"])
def test_keys_beyond_the_calendar_ring_match_reference(clock, admission):
    # outputs longer than the kernel's calendar ring (RING_CAP buckets): retirements filed a
    # lap or more ahead wait in their bucket until their step comes round
    from rooflinekit.batching._kernels import RING_CAP
    out = [RING_CAP + 5, 3, 2 * RING_CAP + 1, RING_CAP, 7, RING_CAP - 1]
    wl = Workload([0.0, 0.0, 1.0, 2.0, 2.0, 40.0], [3, 5, 0, 9, 2, 4], out)
    kwargs = dict(max_num_seqs=4, kv_budget_tokens=3 * RING_CAP, admission=admission,
                  block_size=16)
    if clock == "tick":
        b = ContinuousBatcher(**kwargs)
    else:
        wl = Workload(wl.arrival * 0.01, wl.prompt_tokens, wl.output_tokens)
        b = roofline_batcher(ROOFLINE["sliding window"], **kwargs)
    ref = b.reference(wl)
    assert (ref["status"] == _schema.COMPLETED).all()
    assert_same(_kernel_outputs(b, wl), ref)


# --- compilation: lazy, cached on disk (the policy in _kernels.py, docs/simulator-cache.md) ---


@pytest.mark.slow
def test_import_compiles_nothing():
    import subprocess
    import sys
    code = ("import sys, rooflinekit.batching, rooflinekit.workloads, rooflinekit.batching._reference; "
            "assert 'numba' not in sys.modules, 'numba imported'; "
            "assert 'rooflinekit.batching._kernels' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_kernels_cached_on_disk():
    import os

    from rooflinekit.batching import _kernels
    # every entry point, body and replica, of both clocks
    compiled = (*_kernels.KERNELS.values(), *_kernels._BODIES.values(),
                *_kernels._REPLICAS.values())
    assert len(compiled) == 10 + 8 + 4     # entry points, bodies (4 modes x 2 clocks), replicas
    for dispatcher in compiled:
        name = dispatcher.py_func.__name__
        assert type(dispatcher._cache).__name__ == "FunctionCache", name       # not NullCache
        assert os.path.isdir(dispatcher.stats.cache_path), name
        assert dispatcher.targetoptions.get("nogil") or dispatcher.targetoptions.get(
            "parallel")
    for helper in (_kernels._step_time, _kernels._kv_read, _kernels._chunk_pairs,
                   _kernels._ring_size, _kernels._ring, _kernels._reset_outputs):
        assert type(helper._cache).__name__ == "FunctionCache"


def test_every_kernel_and_helper_states_its_error_model():
    # A numba function that states no error model takes its first caller's, and numba's cache
    # keeps that: with the cache filled by another kernel first (rooflinekit guide's
    # precompile), a speculative body once raised ZeroDivisionError where a fresh compile gave
    # inf. Every cached dispatcher in _kernels states one, so none inherits.
    from numba.core.dispatcher import Dispatcher

    from rooflinekit.batching import _kernels
    dispatchers = {name: d for name, d in vars(_kernels).items() if isinstance(d, Dispatcher)}
    dispatchers.update((d.py_func.__name__, d) for d in (
        *_kernels.KERNELS.values(), *_kernels._BODIES.values(), *_kernels._REPLICAS.values()))
    assert len(dispatchers) > 30
    for name, dispatcher in dispatchers.items():
        options = dispatcher.targetoptions
        if options.get("inline") == "always":      # inlined: compiled with its caller's flags
            continue
        assert options.get("error_model") == "numpy", name


def test_step_formula_hash_is_current():
    # numba's cache does not see changes to the roofline kernels compiled into the simulator;
    # the recorded hash makes such a change edit _kernels.py, which invalidates its cache.
    import hashlib
    import inspect

    from rooflinekit import roofline
    from rooflinekit.batching import _kernels
    source = "".join(inspect.getsource(f) for f in (
        roofline.mixed_step_time_kernel, roofline.kv_tokens_read_kernel,
        roofline.prefill_context_tokens_kernel)) + repr(roofline.StepCost._fields)
    digest = hashlib.sha256(source.encode()).hexdigest()
    assert _kernels.STEP_FORMULA_SHA256 == digest, (
        f"the step formula changed: set STEP_FORMULA_SHA256 = {digest!r} in "
        f"rooflinekit/batching/_kernels.py (this invalidates the simulator's numba cache)")


def test_gap_histogram_hash_is_current():
    # the kernels compile _reference.gap_bin and the gap constants as values, which numba's
    # cache does not see change; the recorded hash makes such a change edit _kernels.py
    import hashlib
    import inspect

    from rooflinekit.batching import _kernels, _reference, _schema
    source = inspect.getsource(_reference.gap_bin) + repr((
        _schema.GAP_PERCENTILES, _schema.GAP_SUBBINS, _schema.GAP_MIN_EXPONENT,
        _schema.GAP_MAX_EXPONENT, _schema.N_GAP_BINS))
    digest = hashlib.sha256(source.encode()).hexdigest()
    assert _kernels.GAP_HISTOGRAM_SHA256 == digest, (
        f"the gap histogram changed: set GAP_HISTOGRAM_SHA256 = {digest!r} in "
        f"rooflinekit/batching/_kernels.py (this invalidates the simulator's numba cache)")


def test_schema_hash_is_current():
    # the kernels compile _schema's codes and stats columns as values, which numba's cache does
    # not see change; the recorded hash makes such a change edit _kernels.py
    import hashlib

    from rooflinekit.batching import _kernels, _schema
    values = sorted((name, value) for name, value in vars(_schema).items() if name.isupper())
    digest = hashlib.sha256(repr(values).encode()).hexdigest()
    assert _kernels.SCHEMA_SHA256 == digest, (
        f"the kernels' schema changed: set SCHEMA_SHA256 = {digest!r} in "
        f"rooflinekit/batching/_kernels.py (this invalidates the simulator's numba cache)")


_CACHE_SCRIPT = """
import json, sys
from rooflinekit.batching import StaticBatcher, _kernels
wl = dict(arrival=[0.0, 0.5, 3.0], prompt_tokens=[4, 0, 9], output_tokens=[3, 5, 2])
runs = [StaticBatcher(batch_size=2).run(**wl)]
if sys.argv[1] == "roofline":       # the same compiled kernel serves the roofline clock
    runs.append(StaticBatcher(batch_size=2, model="guide-70b", gpu="lab", tp=8).run(**wl))
kernel = _kernels.static_run
print(json.dumps({"hits": sum(kernel.stats.cache_hits.values()),
                  "misses": sum(kernel.stats.cache_misses.values()),
                  "finish": runs[0]["finish"].values.tolist()}))
"""


@pytest.mark.slow
def test_second_process_loads_kernels_from_cache(tmp_path):
    # Two processes compile at once into an empty cache (numba writes each file under a unique
    # name and renames it into place), then a third loads the kernel and compiles nothing, and
    # runs it on the roofline clock too. The static kernel (3 s to compile) shows the cache's
    # rules; the continuous kernels follow the same ones (15 s each to show it here), and
    # test_second_simulate_process_compiles_nothing_and_imports_no_dask loads them from the
    # suite's cache.
    import json
    import os
    import subprocess
    import sys
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))

    def start(mode):
        return subprocess.Popen([sys.executable, "-c", _CACHE_SCRIPT, mode], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def result(process):
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, err
        return json.loads(out.strip().splitlines()[-1])

    first = [result(p) for p in [start("tick"), start("tick")]]
    assert all(r["misses"] > 0 for r in first)
    assert first[0]["finish"] == first[1]["finish"]
    assert list(tmp_path.rglob("_kernels.static_run-*.nbi"))
    assert list(tmp_path.rglob("_kernels.static_run-*.nbc"))
    again = result(start("roofline"))
    # one load, and no compilation: the roofline clock ran on the loaded kernel too
    assert again["misses"] == 0 and again["hits"] == 1
    assert again["finish"] == first[0]["finish"]


_SIMULATE_SCRIPT = """
import contextlib, io, json, sys
import numba
from rooflinekit.batching import _kernels
from rooflinekit.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["simulate", *sys.argv[1:]])
kernels = _kernels.KERNELS
print(json.dumps({
    "code": code,
    "misses": sum(sum(d.stats.cache_misses.values()) for d in kernels.values()),
    "loaded": sorted(name for name, d in kernels.items() if d.overloads),
    "dask": sorted(m for m in sys.modules if m == "dask" or m.startswith("dask.")),
}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("argv, clock", [
    ([], "tick"),
    (["--workload", "lognormal", "--requests", "40", "--model", "llama-3.1-8b", "--gpu", "h100",
      "--admission", "paged", "--kv-budget", "200000"], "roofline"),
])
def test_second_simulate_process_compiles_nothing_and_imports_no_dask(argv, clock):
    # What a second `rooflinekit simulate` costs is numba's start-up; the test pins down what it
    # does: load the two single-run kernels from the cache (no compilation) and
    # build its numpy-backed results without importing dask.
    import json
    import subprocess
    import sys

    def run():
        done = subprocess.run([sys.executable, "-c", _SIMULATE_SCRIPT, *argv], check=True,
                              capture_output=True, text=True, timeout=600)
        return json.loads(done.stdout.strip().splitlines()[-1])

    run()                                   # fills the cache if it is empty
    second = run()
    assert second["code"] == 0
    assert second["misses"] == 0
    assert second["loaded"] == [f"continuous_run_{clock}", "static_run"]
    assert second["dask"] == []


# --- inter-token gaps: the run's counts and percentiles against every token, one by one --------


def brute_force_gaps(tokens, n):
    """Every gap between consecutive output tokens of each request, from the reference's tokens."""
    times = [[] for _ in range(n)]
    for i, t in tokens:
        times[i].append(t)
    return np.concatenate([np.diff(np.asarray(ts, dtype=float)) for ts in times] + [np.zeros(0)])


def check_gaps(batcher, wl, itl_target):
    tokens = []
    ref = batcher.reference(wl, itl_target=itl_target, tokens=tokens)
    assert_same(_kernel_outputs(batcher, wl, itl_target=itl_target),
                batcher.reference(wl, itl_target=itl_target))
    stats = dict(zip(_schema.STAT_NAMES, ref["stats"]))
    gaps = brute_force_gaps(tokens, wl.n_requests)
    done = ref["status"] == _schema.COMPLETED
    assert stats["token_gaps"] == gaps.size == (wl.output_tokens[done] - 1).sum()
    # A decode step's gap is its duration dt; a difference of token times, (t + dt) - t, may
    # differ from dt in the last bit, hence the relative slack ``eps`` (none on the tick clock).
    eps = 0.0 if batcher.clock == "tick" else 1e-12
    assert (gaps <= itl_target * (1 - eps)).sum() <= stats["token_gaps_met"] \
        <= (gaps <= itl_target * (1 + eps)).sum()
    assert stats["token_gap_time"] == pytest.approx(gaps.sum(), rel=1e-12, abs=1e-300)
    assert_gap_percentiles(stats, gaps, eps)


def assert_gap_percentiles(stats, gaps, eps=0.0):
    """Each of a run's gap percentiles against the exact one of ``gaps`` (``eps``: the
    relative slack of a gap computed as a difference of times)."""
    for p in _schema.GAP_PERCENTILES:
        got = stats[f"token_itl_p{p}"]
        if gaps.size == 0:
            assert np.isnan(got)
            continue
        exact = np.quantile(gaps, p / 100, method="inverted_cdf")
        # the largest gap of the exact value's bin: never below it, within one bin width above
        assert exact * (1 - eps) <= got < exact * (1 + 1 / _schema.GAP_SUBBINS), p


@MIXED
@SETTINGS
@given(wl=workloads(tiers=True), max_num_seqs=slots, kv=st.integers(1, 200),
       admission=st.sampled_from(["reserve", "paged"]), block_size=st.integers(1, 8),
       extra=st.one_of(st.none(), st.integers(0, 30)), target=st.sampled_from([0.5, 1.0, 3.0]))
def test_tick_gaps_match_every_token(mixed, wl, max_num_seqs, kv, admission, block_size, extra,
                                     target):
    mnbt = None if extra is None or max_num_seqs is None else max_num_seqs + extra
    b = ContinuousBatcher(max_num_seqs=max_num_seqs, kv_budget_tokens=kv, admission=admission,
                          block_size=block_size, max_num_batched_tokens=mnbt, interactive_cap=2,
                          mixed_prefill=mixed)
    check_gaps(b, wl, target)


@MIXED
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(fractional=True, tiers=True), target=st.floats(0.0, 0.05),
       **ROOFLINE_BATCHERS)
def test_roofline_gaps_match_every_token(mixed, wl, target, **draws):
    wl, b = roofline_case(wl, mixed_prefill=mixed, **draws)
    check_gaps(b, wl, target)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(fractional=True), batch_size=st.integers(1, 8),
       config=st.sampled_from([None, *sorted(ROOFLINE)]))
def test_static_gaps_match_every_token(wl, batch_size, config):
    from rooflinekit import catalog
    if config is None:
        b, target = StaticBatcher(batch_size=batch_size), 1.0
    else:
        c = ROOFLINE[config]
        wl = Workload(wl.arrival * 0.01, wl.prompt_tokens, wl.output_tokens)
        b = StaticBatcher(batch_size=batch_size, model=catalog.model(c["model"]),
                          gpu=catalog.gpu(c["gpu"]), tp=c["tp"])
        target = 0.02
    check_gaps(b, wl, target)


def test_preempted_gap_spans_the_preemption():
    # Two requests, room for one to grow: the later one is preempted, re-prefilled, and its
    # first token after that ends one long gap (the time since its last token before).
    b = ContinuousBatcher(max_num_seqs=2, kv_budget_tokens=8, admission="paged", block_size=2)
    wl = Workload([0.0, 0.0], [2, 2], [5, 4])
    tokens = []
    ref = b.reference(wl, tokens=tokens)
    assert ref["preemptions"].sum() > 0
    gaps = brute_force_gaps(tokens, 2)
    assert gaps.max() > 1.0                         # a gap across the preemption
    stats = dict(zip(_schema.STAT_NAMES, ref["stats"]))
    assert stats["token_gaps"] == 3 + 4
    assert stats["token_gap_time"] == gaps.sum()
    assert_same(_kernel_outputs(b, wl), ref)


def test_gap_bins_resolution():
    # frexp octaves with 512 linear sub-bins: whole ticks up to 1,024 have a bin each
    bins = [_reference.gap_bin(float(k)) for k in range(1, 1025)]
    assert len(set(bins)) == 1024 and bins == sorted(bins)
    for x in (1e-9, 3.7e-4, 0.0123, 1.0, 77.7, 1e9):
        k = _reference.gap_bin(x)
        assert _reference.gap_bin(x * (1 + 1.01 / _schema.GAP_SUBBINS)) > k
    assert _reference.gap_bin(0.0) == 0 and _reference.gap_bin(1e300) == _schema.N_GAP_BINS - 1


@MIXED
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(fractional=True, tiers=True), config=st.sampled_from([None, *sorted(ROOFLINE)]),
       max_num_seqs=st.one_of(st.none(), st.integers(1, 8)), extra=st.one_of(st.none(),
                                                                          st.integers(0, 30)),
       kv=st.integers(1, 300), admission=st.sampled_from(["reserve", "paged"]),
       block_size=st.integers(1, 8))
def test_no_request_lost_kv_within_budget_and_gaps_counted(mixed, wl, config, max_num_seqs,
                                                           extra, kv, admission, block_size):
    mnbt = None if extra is None or max_num_seqs is None else max_num_seqs + extra
    kwargs = dict(max_num_seqs=max_num_seqs, kv_budget_tokens=kv, admission=admission,
                  block_size=block_size, max_num_batched_tokens=mnbt, mixed_prefill=mixed)
    if config is None:
        b = ContinuousBatcher(**kwargs)
    else:
        wl = Workload(wl.arrival * 0.01, wl.prompt_tokens, wl.output_tokens, wl.priority)
        b = roofline_batcher(ROOFLINE[config], **kwargs)
    out = _kernel_outputs(b, wl)
    stats = dict(zip(_schema.STAT_NAMES, out["stats"]))
    done = out["status"] == _schema.COMPLETED
    rejected = out["status"] == _schema.REJECTED
    assert np.all(done ^ rejected)                                # every request accounted for
    assert np.isfinite(out["finish"][done]).all() and np.isnan(out["finish"][rejected]).all()
    final = np.maximum(wl.prompt_tokens, 1) + wl.output_tokens   # an empty prompt: its start token
    need = -(-final // block_size) * block_size if admission == "paged" else final
    np.testing.assert_array_equal(rejected, need > kv)            # the one rejection reason
    assert stats["peak_kv_reserved"] <= kv and stats["peak_kv_used"] <= stats["peak_kv_reserved"]
    assert stats["token_gaps"] == (wl.output_tokens[done] - 1).sum()
