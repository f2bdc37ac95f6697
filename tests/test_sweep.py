"""Design-space sweeps: cell-by-cell agreement with the scalar formulas, laziness, reductions,
the distributed path, output round-trips and errors."""

import io
import math
import sys

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from rooflinekit import GPU, catalog, memory, parallel, roofline, units
from rooflinekit import sweep as sw
from rooflinekit.cli import sweep as sweep_cli
from rooflinekit.sweep import grid as sweep_grid

# A grid that exercises every branch of the formulas: GQA, MHA, MQA, MoE (Mixtral), sliding
# window (Gemma-2), multi-head latent attention (DeepSeek-V3); GPUs with and without a price.
MODELS = ["guide-70b", "Llama-2-7B", "Falcon-7B", "Mixtral-8x7B", "Gemma-2-9B", "DeepSeek-V3"]
GPUS = ["guide-lab-80GB", "H100-SXM-80GB", "A100-SXM-40GB", "RTX-4090"]   # RTX-4090: no price
AXES = dict(tp=[1, 2, 4, 8], context_length=[1, 1000, 4096, 8192, 32768],
            batch_size=[1, 3, 16, 128], prompt_tokens=[1, 512, 20000])


@pytest.fixture(scope="module")
def grid():
    # the ideal roofline and the guide's memory rule: the cells are compared with the scalar
    # formulas' defaults
    return sw.sweep(MODELS, GPUS, **AXES, engine=roofline.IDEAL, reserve=0.10)


@pytest.fixture(scope="module")
def small_kw():
    return dict(models=["guide-70b", "Llama-3.1-8B"],
                gpus=["guide-lab-80GB", "H100-SXM-80GB", "A100-SXM-40GB"],
                tp=[1, 2, 4, 8], context_length=[1024, 2048, 4096, 8192, 16384, 32768],
                batch_size=[1, 2, 4, 8, 16, 32, 64, 128])


def _scalar_cell(m, g, tp, c, b, p):
    """Every sweep variable for one configuration, from the scalar public functions.

    A ``tp`` that does not divide the heads (:func:`rooflinekit.parallel.check_layout` refuses
    it) holds no KV and never fits; its times are computed all the same.
    """
    try:
        parallel.check_layout(m, tp=tp)
        valid = True
    except ValueError:
        valid = False
    step = roofline.decode_step_time(m, g, b, c, tp)
    ai = roofline.arithmetic_intensity(m, b, c)
    ridge = roofline.ridge_point(g)
    cost = (roofline.cost_per_million_tokens(m, g, b, c, tp) if g.hourly_price is not None
            else math.nan)
    return {
        "weight_bytes": memory.weight_bytes(m),
        "kv_bytes_per_token": memory.kv_bytes_per_token(m),
        "kv_bytes_per_sequence": memory.kv_bytes_per_sequence(m, c),
        "kv_bytes": b * memory.kv_bytes_per_sequence(m, c),
        "group_memory_bytes": memory.group_memory_bytes(g, tp),
        "usable_kv_bytes": memory.usable_kv_bytes(m, g, tp=tp) if valid else 0.0,
        "weights_fit": valid and memory.usable_kv_bytes(m, g, tp=tp) > 0,
        "max_concurrent_sequences": memory.max_concurrent_sequences(m, g, c, tp=tp) if valid
        else 0,
        "fits": valid and memory.max_concurrent_sequences(m, g, c, tp=tp) >= b,
        "ridge_point": ridge,
        "arithmetic_intensity": ai,
        "compute_bound": roofline.bound(ai, ridge) == "compute",
        "decode_step_time": step,
        "tokens_per_second": roofline.decode_throughput(m, g, b, c, tp),
        "tokens_per_second_per_gpu": roofline.decode_throughput_per_gpu(m, g, b, c, tp),
        "prefill_time": roofline.prefill_time(m, g, p, tp),
        "cost_per_million_tokens": cost,
    }


# -- every variable equals the scalar functions, cell by cell --------------------------------------

def test_random_cells_equal_scalar_functions(grid):
    # exact equality (same formulas, same float operations); 60 seeded cells of 28,800
    rng = np.random.default_rng(20261130)
    sizes = [grid.sizes[d] for d in sw.SWEEP_DIMS]
    assert set(sw.VARIABLES) <= set(grid.data_vars)
    for _ in range(60):
        idx = dict(zip(sw.SWEEP_DIMS, (int(rng.integers(n)) for n in sizes)))
        cell = {d: grid[d].values[i] for d, i in idx.items()}
        m, g = catalog.model(str(cell["model"])), catalog.gpu(str(cell["gpu"]))
        want = _scalar_cell(m, g, int(cell["tp"]), int(cell["context_length"]),
                            int(cell["batch_size"]), int(cell["prompt_tokens"]))
        for name, expected in want.items():
            var = grid[name]
            got = var.isel({d: idx[d] for d in var.dims}).item()
            if isinstance(expected, float) and math.isnan(expected):
                assert math.isnan(got), (name, cell)
            else:
                assert got == expected, (name, cell, got, expected)


def test_guide_figures_in_a_sweep():
    ds = sw.sweep("guide-70b", "guide-lab-80GB", tp=[1, 8], context_length=8192, batch_size=1,
                  prompt_tokens=1, engine=roofline.IDEAL, reserve=0.10)
    # guide §2.4 / conventions: 0 sequences on one card, 183 on 8 × 80 GiB at 8,192 tokens
    assert ds.max_concurrent_sequences.sel(tp=1).item() == 0
    assert ds.max_concurrent_sequences.sel(tp=8).item() == 183
    assert not ds.fits.sel(tp=1).item() and ds.fits.sel(tp=8).item()
    # guide §3.2: ridge 989e12 / 3.35e12 = 295.2 FLOP/B (rel 1e-4)
    assert ds.ridge_point.item() == pytest.approx(295.2, rel=1e-4)
    assert not ds.compute_bound.item()


def test_decode_batch1_guide_figure():
    # conventions: batch-1 decode at no context 140e9 / 3.35e12 = 41.79 ms (abs 5e-3 ms); context 1 adds
    # 327,680 B (1e-4 ms)
    ds = sw.sweep("guide-70b", "guide-lab-80GB", tp=1, context_length=1, batch_size=1,
                  engine=roofline.IDEAL)
    assert ds.decode_step_time.item() / units.MS == pytest.approx(41.79, abs=5e-3)


def test_units_and_long_names_everywhere(grid):
    for name, var in grid.data_vars.items():
        assert var.attrs["units"] == sw.VARIABLES[name].units
        assert var.attrs["long_name"]
    assert "NaN" in grid.cost_per_million_tokens.attrs["comment"]
    assert np.isnan(grid.cost_per_million_tokens.sel(gpu="RTX-4090")).all()
    assert np.isfinite(grid.cost_per_million_tokens.sel(gpu="H100-SXM-80GB")).all()


def test_variables_run_over_their_own_dimensions(grid):
    assert grid.weight_bytes.dims == ("model",)
    assert grid.usable_kv_bytes.dims == ("model", "gpu", "tp")
    assert grid.decode_step_time.dims == ("model", "gpu", "tp", "context_length", "batch_size")
    assert grid.prefill_time.dims == ("model", "gpu", "tp", "prompt_tokens")
    assert sw.sweep_cells(grid) == 6 * 4 * 4 * 5 * 4 * 3
    # the default (each GPU's own profile, one sweep per GPU joined) keeps the same dimensions
    default = sw.sweep(MODELS, GPUS, **AXES)
    assert list(default.data_vars) == list(grid.data_vars)
    for name, var in grid.data_vars.items():
        assert default[name].dims == var.dims, name
    assert sw.sweep_cells(default) == sw.sweep_cells(grid)


def test_prefill_over_context_without_prompt_tokens(small_kw):
    ds = sw.sweep(**small_kw, engine=roofline.IDEAL)
    assert ds.prefill_time.dims == ("model", "gpu", "tp", "context_length")
    m, g = catalog.model("Llama-3.1-8B"), catalog.gpu("H100-SXM-80GB")
    got = ds.prefill_time.sel(model="Llama-3.1-8B", gpu="H100-SXM-80GB", tp=2,
                              context_length=4096).item()
    assert got == roofline.prefill_time(m, g, 4096, 2)


# -- input kinds -----------------------------------------------------------------------------------

def test_names_specs_and_datasets_agree(small_kw):
    by_name = sw.sweep(**small_kw)
    specs = dict(small_kw, models=[catalog.model(n) for n in small_kw["models"]],
                 gpus=[catalog.gpu(n) for n in small_kw["gpus"]])
    datasets = dict(small_kw, models=catalog.models(small_kw["models"], as_dataset=True),
                    gpus=catalog.gpus(small_kw["gpus"], as_dataset=True))
    xr.testing.assert_identical(by_name, sw.sweep(**specs))
    xr.testing.assert_identical(by_name, sw.sweep(**datasets))


def test_scalar_axes_and_single_specs():
    ds = sw.sweep(catalog.model("guide-70b"), "guide-lab-80GB", tp=8, context_length=8192,
                  batch_size=np.int64(1), reserve=0.10)
    assert ds.sizes["tp"] == 1 and ds.sizes["model"] == 1
    assert ds.max_concurrent_sequences.squeeze().item() == 183


def test_dataarray_axes_are_accepted(small_kw):
    kw = dict(small_kw, tp=xr.DataArray([1, 2, 4, 8], dims="tp"))
    xr.testing.assert_identical(sw.sweep(**small_kw), sw.sweep(**kw))


def test_variables_subset_keeps_dependencies(small_kw):
    ds = sw.sweep(**small_kw, variables=["fits"])
    # the engine's rule counts sequences in its usable bytes
    assert set(ds.data_vars) == {"fits", "max_concurrent_sequences", "usable_kv_bytes"}
    full = sw.sweep(**small_kw)
    xr.testing.assert_identical(ds.fits, full.fits)


def test_efficiency_options_reach_the_roofline():
    kw = dict(models="guide-70b", gpus="guide-lab-80GB", tp=8, context_length=2048, batch_size=8)
    engine = roofline.Engine(bandwidth_efficiency=0.5, step_overhead=1e-3)
    slow = sw.sweep(**kw, engine=engine)
    m, g = catalog.model("guide-70b"), catalog.gpu("guide-lab-80GB")
    want = roofline.decode_step_time(m, g, 8, 2048, 8, engine=engine)
    assert slow.decode_step_time.item() == want
    assert slow.attrs["bandwidth_efficiency"] == 0.5
    assert slow.attrs["model_quality"] == engine.label


def test_an_engine_times_every_phase_as_the_formulas_do():
    """``engine=`` reaches the decode and prefill times, and the ridge point, cell by cell."""
    import rooflinekit as rk
    engine = rk.Engine(compute_efficiency=0.5, bandwidth_efficiency=0.8, step_overhead=2e-3,
                       layer_overhead=1e-5, prefill_overhead=0.01, gemm_half_tokens=64,
                       kv_bandwidth_efficiency=0.7, allreduce="ring")
    models, gpus = ["guide-70b", "Mixtral-8x7B"], ["guide-lab-80GB", "H100-SXM-80GB"]
    ds = sw.sweep(models, gpus, tp=[1, 2, 8], context_length=[1000, 8192],
                  batch_size=[1, 64], prompt_tokens=[512, 4000], engine=engine)
    assert ds.attrs["model_quality"] == engine.label
    assert ds.attrs["compute_efficiency"] == 0.5
    assert ds.attrs["allreduce"] == "ring"
    for mn in models:
        m = catalog.model(mn)
        for gn in gpus:
            g = catalog.gpu(gn)
            assert ds.ridge_point.sel(gpu=gn).item() == roofline.ridge_point(g, engine=engine)
            for tp in (1, 2, 8):
                for p in (512, 4000):
                    assert ds.prefill_time.sel(model=mn, gpu=gn, tp=tp, prompt_tokens=p).item() \
                        == pytest.approx(roofline.prefill_time(m, g, p, tp, engine=engine),
                                         rel=1e-12)
                for c in (1000, 8192):
                    for b in (1, 64):
                        got = ds.decode_step_time.sel(model=mn, gpu=gn, tp=tp,
                                                      context_length=c, batch_size=b).item()
                        assert got == pytest.approx(
                            roofline.decode_step_time(m, g, b, c, tp, engine=engine), rel=1e-12)
    # slower than the ideal everywhere
    ideal = sw.sweep(models, gpus, tp=[1, 2, 8], context_length=[1000, 8192],
                     batch_size=[1, 64], prompt_tokens=[512, 4000], engine=rk.IDEAL)
    assert (ds.decode_step_time > ideal.decode_step_time).all()
    assert (ds.prefill_time > ideal.prefill_time).all()


def test_a_calibration_as_engine_labels_the_dataset_and_times_each_phase():
    import rooflinekit as rk
    from rooflinekit.calibrate import Calibration
    cal = Calibration(prefill={"compute_efficiency": 0.4, "step_overhead": 0.02},
                      decode={"bandwidth_efficiency": 0.7, "step_overhead": 3e-3},
                      source="a test")
    ds = sw.sweep("guide-70b", "guide-lab-80GB", tp=[1, 8], context_length=2048,
                  batch_size=[1, 32], prompt_tokens=1000, engine=cal)
    assert ds.attrs["model_quality"] == cal.label
    assert ds.attrs["model_quality"] != rk.IDEAL.label
    m, g = catalog.model("guide-70b"), catalog.gpu("guide-lab-80GB")
    for tp in (1, 8):
        assert ds.prefill_time.sel(tp=tp).item() == roofline.prefill_time(
            m, g, 1000, tp, engine=cal.engine_for("prefill"))
        for b in (1, 32):
            assert ds.decode_step_time.sel(tp=tp, batch_size=b).item() == \
                roofline.decode_step_time(m, g, b, 2048, tp, engine=cal.engine_for("decode"))
    # the ideal engine says so, with the guide's label, given as itself or by name
    assert sw.sweep("guide-70b", "guide-lab-80GB", engine=rk.IDEAL).attrs["model_quality"] == \
        rk.IDEAL.label
    assert sw.sweep("guide-70b", "guide-lab-80GB", engine="ideal").attrs["model_quality"] == \
        rk.IDEAL.label
    # the default is the GPU's vLLM profile, and says so
    from rooflinekit.profiles import resolve_engine
    for gpu in ("guide-lab-80GB", "H100-SXM-80GB"):
        label = sw.sweep("guide-70b", gpu).attrs["model_quality"]
        assert label == resolve_engine("vllm", gpu).label
        assert label.startswith("calibrated: vllm ") and " profile for " in label
        assert label != rk.IDEAL.label


@pytest.mark.parametrize("engine", [{"compute_efficiency": 0.5}, 0.5, roofline.Engine])
def test_an_engine_that_is_not_one_is_refused_naming_engine(engine):
    with pytest.raises(TypeError, match="engine"):
        sw.sweep("guide-70b", "guide-lab-80GB", engine=engine)


@pytest.mark.parametrize("engine", ["fast", "IDEAL-ish", ""])
def test_a_string_that_names_no_engine_is_refused_naming_engine(engine):
    with pytest.raises(ValueError, match="^engine must be one of"):
        sw.sweep("guide-70b", "guide-lab-80GB", engine=engine)
    with pytest.raises(ValueError, match="^engine must be one of"):
        sw.sweep("guide-70b", ["guide-lab-80GB", "H100-SXM-80GB"], engine=engine)


def test_every_engine_name_is_accepted():
    from rooflinekit.profiles import ENGINE_CHOICES, resolve_engine
    kw = dict(models="guide-70b", gpus="H100-SXM-80GB", tp=[1, 8], context_length=2048,
              batch_size=[1, 8], prompt_tokens=512)
    memory_vars = ["usable_kv_bytes", "weights_fit", "max_concurrent_sequences", "fits"]
    for name in ENGINE_CHOICES:
        # a name and its profile time every step alike; under the guide's memory rule every
        # variable is the same, under the engine's the name also says whose memory rule
        # (SGLang's share), where a profile is taken as vLLM's
        by_name = sw.sweep(**kw, engine=name, reserve=0.10)
        xr.testing.assert_identical(by_name, sw.sweep(
            **kw, engine=resolve_engine(name, "H100-SXM-80GB"), reserve=0.10))
        by_name, by_profile = (sw.sweep(**kw, engine=e).drop_vars(memory_vars)
                               for e in (name, resolve_engine(name, "H100-SXM-80GB")))
        for ds in (by_name, by_profile):
            ds.attrs.pop("kv_cache_rule")
        xr.testing.assert_identical(by_name, by_profile)
    xr.testing.assert_identical(sw.sweep(**kw, engine="ideal"),
                                sw.sweep(**kw, engine=roofline.IDEAL))


def test_an_engine_with_array_fields_is_refused_naming_the_field():
    """The sweep's dimensions are its own: an engine field over values is a TypeError."""
    with pytest.raises(TypeError, match="engine.compute_efficiency must be a single number"):
        sw.sweep("guide-70b", "guide-lab-80GB",
                 engine=roofline.Engine(compute_efficiency=[0.5, 0.8]))
    # a 0-d array is its number
    one = sw.sweep("guide-70b", "guide-lab-80GB",
                   engine=roofline.Engine(compute_efficiency=np.float64(0.5)))
    two = sw.sweep("guide-70b", "guide-lab-80GB", engine=roofline.Engine(compute_efficiency=0.5))
    xr.testing.assert_identical(one, two)


def test_allreduce_option():
    kw = dict(models="guide-70b", gpus="guide-lab-80GB", tp=[1, 8], context_length=2048,
              batch_size=8)
    collective = roofline.Engine(allreduce=True)
    ds = sw.sweep(**kw, engine=collective)
    m, g = catalog.model("guide-70b"), catalog.gpu("guide-lab-80GB")
    assert ds.decode_step_time.sel(tp=8).item() == roofline.decode_step_time(
        m, g, 8, 2048, 8, engine=collective)
    assert ds.decode_step_time.sel(tp=8).item() > sw.sweep(
        **kw, engine=roofline.Engine(allreduce=False)).decode_step_time.sel(tp=8).item()
    # the ideal engine is the formulas' default, and every named model reaches them
    xr.testing.assert_identical(sw.sweep(**kw, engine=roofline.IDEAL).decode_step_time,
                                ds.decode_step_time)
    for name in roofline.ALLREDUCE_MODELS:
        engine = roofline.Engine(allreduce=name)
        assert sw.sweep(**kw, engine=engine).decode_step_time.sel(tp=8).item() == \
            roofline.decode_step_time(m, g, 8, 2048, 8, engine=engine)


# -- blocks, laziness and dask ---------------------------------------------------------------------

def test_threaded_blocks_equal_one_block(monkeypatch, small_kw):
    whole = sw.sweep(**small_kw)
    monkeypatch.setattr(sw, "AUTO_BLOCK_CELLS", 100)     # force the blocked, threaded path
    xr.testing.assert_identical(whole, sw.sweep(**small_kw))


@pytest.mark.parametrize("chunks", [100, {"context_length": 2, "tp": 3}, "auto"])
def test_chunked_sweep_is_lazy_and_identical(small_kw, chunks):
    da = pytest.importorskip("dask.array")
    lazy = sw.sweep(**small_kw, chunks=chunks)
    assert all(isinstance(v.data, da.Array) for v in lazy.data_vars.values())
    xr.testing.assert_identical(sw.sweep(**small_kw), lazy.compute())


def test_graph_holds_blocks_not_the_grid(small_kw):
    pytest.importorskip("dask.array")
    lazy = sw.sweep(**small_kw, chunks=48)                # 24 blocks of 48 cells
    graph = dict(lazy.fits.data.__dask_graph__())
    n_blocks = len([k for k in graph if isinstance(k, tuple) and "sweep-block" in k[0]])
    assert n_blocks == 1152 // 48
    big = [v for v in graph.values() if isinstance(v, np.ndarray) and v.size > 8]
    assert not big                                        # no array data embedded in tasks


def test_chunks_auto_layout():
    chunks = sweep_grid._chunks((2, 3, 4, 1000, 1000, 1), 10_000)
    assert chunks[5] == (1,) and chunks[4] == (1000,) and chunks[3][0] == 10
    assert all(c == (1,) * n for c, n in zip(chunks[:3], (2, 3, 4)))


def test_missing_dask_names_the_extra(monkeypatch, small_kw):
    monkeypatch.setitem(sys.modules, "dask", None)
    with pytest.raises(ImportError, match=r"rooflinekit\[distributed\]"):
        sw.sweep(**small_kw, chunks=100)


# -- reductions ------------------------------------------------------------------------------------

def _brute_best(ds, objective, by, maximize, where, limits):
    arrays = [ds[objective]] + [ds[w] for w in where] + [ds[k] for k in limits]
    b = xr.broadcast(*arrays)
    full = [d for d in sw.SWEEP_DIMS if d in b[0].dims]
    b = [x.transpose(*full) for x in b]
    ok = np.isfinite(b[0].values)
    for x in b[1:1 + len(where)]:
        ok &= x.values
    for x, bound in zip(b[1 + len(where):], limits.values()):
        ok &= x.values <= bound
    score = np.where(ok, b[0].values if maximize else -b[0].values, -np.inf)
    out = {}
    for label in ds[by].values:
        pos = list(ds[by].values).index(label)
        sub = np.take(score, pos, axis=full.index(by))
        rest = [d for d in full if d != by]
        flat = int(np.argmax(sub))
        cell = np.unravel_index(flat, sub.shape)
        found = sub.flat[flat] > -np.inf
        out[label] = (found, {d: ds[d].values[i] for d, i in zip(rest, cell)})
    return out


@pytest.mark.parametrize("chunks", [None, 37])
def test_best_configuration_matches_brute_force(grid, chunks):
    ds = grid if chunks is None else sw.sweep(MODELS, GPUS, **AXES, chunks=chunks * 13,
                                                engine=roofline.IDEAL, reserve=0.10)
    best = sw.best_configuration(ds)
    want = _brute_best(grid, "tokens_per_second_per_gpu", "model", True, ["fits"], {})
    for label, (found, cell) in want.items():
        row = best.sel(model=label)
        assert bool(row.found) == found
        if found:
            for d, v in cell.items():
                assert row[d].item() == v, (label, d)
            assert row.tokens_per_second_per_gpu.item() == grid.tokens_per_second_per_gpu.sel(
                model=label, **cell).item()


def test_cheapest_meeting_targets_matches_brute_force(grid):
    lazy = sw.sweep(MODELS, GPUS, **AXES, chunks=500, engine=roofline.IDEAL,   # as grid
                    reserve=0.10)
    limits = {"prefill_time": 0.5, "decode_step_time": 0.05}
    for ds in (grid, lazy):
        got = sw.cheapest_configuration(ds, max_ttft=0.5, max_itl=0.05)
        want = _brute_best(grid, "cost_per_million_tokens", "model", False, ["fits"], limits)
        for label, (found, cell) in want.items():
            row = got.sel(model=label)
            assert bool(row.found) == found
            if found:
                assert {d: row[d].item() for d in cell} == cell
                assert row.gpu.item() != "RTX-4090"       # no price never wins
                assert grid.prefill_time.sel(model=label, gpu=cell["gpu"], tp=cell["tp"],
                                             prompt_tokens=cell["prompt_tokens"]).item() <= 0.5
    impossible = sw.cheapest_configuration(grid, max_ttft=1e-9)
    assert not impossible.found.any()
    assert np.isnan(impossible.cost_per_million_tokens).all()
    assert (impossible.tp == -1).all() and (impossible.gpu == "").all()


def test_best_configuration_overall_and_by_two_dims(grid):
    overall = sw.best_configuration(grid, "usable_kv_bytes", by=None, where="weights_fit")
    assert overall.usable_kv_bytes.item() == grid.usable_kv_bytes.max().item()
    per = sw.best_configuration(grid, "max_concurrent_sequences", by=["model", "gpu"],
                                maximize=False, where="weights_fit")
    assert per.found.dims == ("model", "gpu")


def test_best_tp_rules(small_kw):
    ds = sw.sweep(**small_kw)
    smallest = sw.best_tp(ds, rule="smallest")
    # guide-70b on 80 GiB cards: one card never holds the weights (guide §2.4)
    lab = smallest.sel(model="guide-70b", gpu="guide-lab-80GB")
    assert (lab != 1).all() and (lab.sel(context_length=8192, batch_size=1) == 2)
    fits = ds.fits.transpose("model", "gpu", "context_length", "batch_size", "tp").values
    tps = ds.tp.values
    want = np.where(fits.any(-1), tps[np.argmax(fits, axis=-1)], 0)
    np.testing.assert_array_equal(
        smallest.transpose("model", "gpu", "context_length", "batch_size").values, want)
    fastest = sw.best_tp(ds, rule="throughput")
    score = np.where(fits, ds.tokens_per_second_per_gpu.transpose(
        "model", "gpu", "context_length", "batch_size", "tp").values, -np.inf)
    want = np.where(fits.any(-1), tps[np.argmax(score, axis=-1)], 0)
    np.testing.assert_array_equal(
        fastest.transpose("model", "gpu", "context_length", "batch_size").values, want)
    lazy = sw.best_tp(sw.sweep(**small_kw, chunks=100), rule="throughput")
    xr.testing.assert_identical(fastest, lazy.compute())
    assert fastest.attrs["units"] == "1"


def test_pareto_front_matches_brute_force(small_kw):
    ds = sw.sweep(**small_kw)
    front = sw.pareto_front(ds)
    x = ds.cost_per_million_tokens.values
    y = ds.decode_step_time.values
    ok = ds.fits.values & np.isfinite(x)
    pts = set(zip(x[ok], y[ok]))
    want = {p for p in pts if not any((q[0] <= p[0] and q[1] <= p[1] and q != p) for q in pts)}
    got = set(zip(front.cost_per_million_tokens.values, front.decode_step_time.values))
    assert got == want
    assert np.all(np.diff(front.cost_per_million_tokens.values) > 0)
    assert np.all(np.diff(front.decode_step_time.values) < 0)
    lazy = sw.pareto_front(sw.sweep(**small_kw, chunks=50))
    xr.testing.assert_identical(front, lazy)


def test_reductions_stream_with_a_progress_bar(small_kw):
    pytest.importorskip("dask.diagnostics")
    lazy = sw.sweep(**small_kw, chunks=100)
    buf = io.StringIO()
    with sw.progress_bar(True, minimum=0, out=buf):
        lazy.compute()
    assert "100%" in buf.getvalue()
    # the flag form used by the reductions (and the CLI) leaves stdout alone
    sw.best_configuration(lazy, progress=True)


# -- dask.distributed ------------------------------------------------------------------------------

def test_local_cluster_identical_to_in_memory(small_kw):
    distributed = pytest.importorskip("distributed")
    whole = sw.sweep(**small_kw)
    best = sw.best_configuration(whole)
    front = sw.pareto_front(whole)
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        lazy = sw.sweep(**small_kw, chunks=96)
        xr.testing.assert_identical(whole, lazy.compute())
        xr.testing.assert_identical(best, sw.best_configuration(lazy, progress=True))
        xr.testing.assert_identical(front, sw.pareto_front(lazy))


# -- output ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("chunks", [None, 200])
def test_netcdf_round_trip(tmp_path, small_kw, chunks):
    pytest.importorskip("netCDF4")
    ds = sw.sweep(**small_kw, chunks=chunks)
    path = tmp_path / "sweep.nc"
    sw.save(ds, path)
    with xr.open_dataset(path) as back:
        xr.testing.assert_identical(ds.compute(), back.load())


def test_zarr_round_trip(tmp_path, small_kw):
    pytest.importorskip("zarr", reason="zarr is not installed (pip install rooflinekit[io])")
    ds = sw.sweep(**small_kw, chunks=200)
    sw.save(ds, tmp_path / "sweep.zarr")
    with xr.open_zarr(tmp_path / "sweep.zarr") as back:
        xr.testing.assert_identical(ds.compute(), back.load())


# -- invariants ------------------------------------------------------------------------------------

axis = st.lists(st.integers(1, 65536), min_size=1, max_size=4, unique=True)


@settings(max_examples=15, deadline=None)
@given(ctx=axis, batch=st.lists(st.integers(1, 512), min_size=1, max_size=4, unique=True),
       tp=st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=4, unique=True))
def test_invariants(ctx, batch, tp):
    ds = sw.sweep(["Llama-3.1-8B", "Gemma-2-9B"], ["H100-SXM-80GB", "L4"], tp=tp,
                  context_length=ctx, batch_size=batch)
    ds = ds.sortby(["context_length", "batch_size", "tp"])
    # fitting a batch means fitting every smaller one; longer contexts fit fewer sequences
    fits = ds.fits.transpose(..., "batch_size").values
    assert not (np.diff(fits.astype(int), axis=-1) > 0).any()
    mcs = ds.max_concurrent_sequences.transpose(..., "context_length").values
    assert not (np.diff(mcs, axis=-1) > 0).any()
    # more GPUs never shrink the KV budget; per-GPU throughput never exceeds the group's
    ukv = ds.usable_kv_bytes.transpose(..., "tp").values
    assert not (np.diff(ukv, axis=-1) < 0).any()
    assert (ds.tokens_per_second_per_gpu <= ds.tokens_per_second).all()
    assert (ds.decode_step_time > 0).all()


# -- errors ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(models="no-such-model"), ValueError, "unknown model"),
    (dict(gpus=[3]), TypeError, "gpus entries"),
    (dict(models=[]), ValueError, "at least one model"),
    (dict(models=["guide-70b", "guide-70b"]), ValueError, "repeat"),
    (dict(tp=0), ValueError, "tp must lie in"),
    (dict(tp=1.5), ValueError, "tp must be a whole number"),
    (dict(tp=[[1, 2]]), ValueError, "1-D"),
    (dict(context_length=[1024, 1024]), ValueError, "context_length must not repeat"),
    (dict(batch_size=[]), ValueError, "batch_size must hold"),
    (dict(batch_size="8"), TypeError, "batch_size must be a number"),
    (dict(prompt_tokens=[0]), ValueError, "prompt_tokens"),
    (dict(reserve=1.0), ValueError, "reserve"),
    (dict(gpu_memory_utilization=0), ValueError, "gpu_memory_utilization must lie in"),
    (dict(gpu_memory_utilization=float("nan")), ValueError, "gpu_memory_utilization"),
    (dict(gpu_memory_utilization="0.9"), TypeError, "gpu_memory_utilization must be a number"),
    (dict(gpu_memory_utilization=0.9, reserve=0.1), ValueError, "give one of them"),
    (dict(variables=["nope"]), ValueError, "unknown sweep variables"),
    (dict(chunks=0), ValueError, "chunks must be"),
    (dict(chunks={"nope": 2}), ValueError, "unknown dimensions"),
    (dict(chunks={"tp": 0}), ValueError, r"chunks\['tp'\]"),
    (dict(engine="fast"), ValueError, "engine must be one of"),
    (dict(engine=roofline.Engine(allreduce=True), tp=[1, 2],
          gpus=[GPU("no-link", memory_bytes=80 * units.GiB, hbm_bandwidth=3e12,
                    peak_flops=1e15)]),
     ValueError, "interconnect bandwidth; unknown for no-link"),
])
def test_errors_name_the_argument(kwargs, exc, match):
    base = dict(models="guide-70b", gpus="guide-lab-80GB", tp=[1, 8], context_length=1024,
                batch_size=1)
    with pytest.raises(exc, match=match):
        sw.sweep(**{**base, **kwargs})


@pytest.mark.parametrize("options, exc, match", [
    (dict(compute_efficiency=0.0), ValueError, "compute_efficiency"),
    (dict(step_overhead=-1.0), ValueError, "step_overhead"),
    (dict(allreduce="yes"), TypeError, "allreduce"),
])
def test_bad_engine_fields_are_refused_naming_the_field(options, exc, match):
    """The engine checks its fields once, when built: before any sweep work."""
    with pytest.raises(exc, match=match):
        sw.sweep("guide-70b", "guide-lab-80GB", engine=roofline.Engine(**options))


@pytest.mark.parametrize("old", ["allreduce", "compute_efficiency", "bandwidth_efficiency",
                                 "step_overhead", "compute_dtype", "activation_dtype",
                                 "calibration"])
def test_the_old_options_are_gone(old):
    with pytest.raises(TypeError, match=old):
        sw.sweep("guide-70b", "guide-lab-80GB", **{old: None})


def test_an_engine_link_of_its_own_needs_no_gpu_link():
    """With ``interconnect_bandwidth`` on the engine a GPU without a known link sweeps tp > 1."""
    bare = GPU("no-link", memory_bytes=80 * units.GiB, hbm_bandwidth=3e12, peak_flops=1e15,
               interconnect_latency=1e-6)
    engine = roofline.Engine(interconnect_bandwidth=450e9)
    ds = sw.sweep("guide-70b", [bare], tp=[1, 2], context_length=1024, engine=engine)
    assert ds.decode_step_time.sel(tp=2).item() == roofline.decode_step_time(
        catalog.model("guide-70b"), bare, 1, 1024, 2, engine=engine)


def test_reduction_errors(small_kw):
    ds = sw.sweep(**small_kw)
    with pytest.raises(ValueError, match="no variable 'nope'"):
        sw.best_configuration(ds, "nope")
    with pytest.raises(ValueError, match="not a boolean"):
        sw.best_configuration(ds, where="usable_kv_bytes")
    with pytest.raises(ValueError, match="not a dimension"):
        sw.best_configuration(ds, by="quantile")
    with pytest.raises(ValueError, match="must be a number"):
        sw.best_configuration(ds, limits={"prefill_time": "fast"})
    with pytest.raises(ValueError, match="max_itl"):
        sw.cheapest_configuration(ds, max_itl=-1)
    with pytest.raises(ValueError, match="different variables"):
        sw.pareto_front(ds, x="fits", y="fits")
    with pytest.raises(ValueError, match="rule"):
        sw.best_tp(ds, rule="largest")
    with pytest.raises(TypeError, match="xarray.Dataset"):
        sw.best_configuration(ds.fits)


# -- command-line helpers --------------------------------------------------------------------------

def _cli(argv):
    import argparse
    parser = argparse.ArgumentParser(prog="rooflinekit sweep")
    sweep_cli.add_arguments(parser)
    out = io.StringIO()
    assert sweep_cli.run(parser.parse_args(argv), out) == 0
    return out.getvalue()


def test_parse_axis():
    np.testing.assert_array_equal(sweep_cli.parse_axis("1,2,4,8"), [1, 2, 4, 8])
    np.testing.assert_array_equal(sweep_cli.parse_axis("1024:4096:1024,1e4"), [1024, 2048, 3072, 4096,
                                                                         10000])
    for bad in ("1.5", "a", "1:", "8:1", "1:8:0", "1,,2"):
        with pytest.raises(ValueError, match="axis values"):
            sweep_cli.parse_axis(bad)


def test_cli_best_and_json():
    text = _cli(["--models", "guide-70b", "--gpus", "guide-lab-80GB", "--max-model-len", "8192",
                 "--batch-size", "1,183,184"])
    assert "guide-70b" in text and "tokens_per_second_per_gpu" in text
    import json
    data = json.loads(_cli(["--report", "cheapest", "--itl", "0.05", "--json",
                            "--chunks", "50", "--no-progress"]))
    assert data["cells"] == 192 and data["rows"][0]["found"] is True


def test_cli_pareto_and_output(tmp_path):
    pytest.importorskip("netCDF4")
    path = tmp_path / "s.nc"
    text = _cli(["--report", "pareto", "--output", str(path), "--chunks", "auto",
                 "--no-progress"])
    assert "cost_per_million_tokens" in text
    with xr.open_dataset(path) as back:
        assert sw.sweep_cells(back) == 192


def test_cli_errors():
    with pytest.raises(ValueError, match="--output"):
        _cli(["--output", "x.txt"])
    with pytest.raises(ValueError, match="--report cheapest"):
        _cli(["--ttft", "1"])
    with pytest.raises(ValueError, match="--chunks"):
        _cli(["--chunks", "many"])


@pytest.mark.parametrize("chunks", [None, 40])
def test_best_by_a_dimension_the_objective_lacks(small_kw, chunks):
    # weight_bytes runs over model only; one answer per GPU all the same (ties: first model)
    ds = sw.sweep(**small_kw, chunks=chunks)
    best = sw.best_configuration(ds, "weight_bytes", by="gpu", where=None)
    assert best.found.all()
    assert (best.model == "guide-70b").all()
    assert (best.weight_bytes == 140e9).all()


def test_reductions_align_differently_chunked_variables(small_kw):
    pytest.importorskip("dask.array")
    lazy = sw.sweep(**small_kw, chunks=100)
    mixed = lazy.assign(fits=lazy.fits.chunk({"batch_size": 3, "context_length": 4}))
    xr.testing.assert_identical(sw.best_configuration(sw.sweep(**small_kw)),
                                sw.best_configuration(mixed))
    # a numpy variable among dask ones is chunked to match
    half = lazy.assign(fits=lazy.fits.compute())
    xr.testing.assert_identical(sw.pareto_front(lazy), sw.pareto_front(half))


def test_incomplete_dataset_is_refused():
    models = catalog.models(["guide-70b"], as_dataset=True).drop_vars("weight_bytes")
    with pytest.raises(TypeError, match="lacks weight_bytes"):
        sw.sweep(models, "guide-lab-80GB")
    with pytest.raises(TypeError, match="indexed by 'gpu'"):
        sw.sweep("guide-70b", catalog.models(["guide-70b"], as_dataset=True))


def test_compute_dtype_option():
    fp8 = roofline.Engine(compute_dtype="fp8")
    ds = sw.sweep("Llama-3.1-8B", ["H100-SXM-80GB", "A100-SXM-80GB"], tp=[1, 2],
                  context_length=512, batch_size=[64, 512], engine=fp8)
    for gpu in ("H100-SXM-80GB", "A100-SXM-80GB"):
        g = catalog.gpu(gpu)
        assert ds.ridge_point.sel(gpu=gpu).item() == roofline.ridge_point(g, engine=fp8)
        got = ds.decode_step_time.sel(gpu=gpu, tp=2, batch_size=512).item()
        assert got == roofline.decode_step_time(catalog.model("Llama-3.1-8B"), g, 512, 512,
                                                2, engine=fp8)


def test_replicate_kv_matches_the_scalar_function():
    # with replicate_kv every concurrency cell equals memory.max_concurrent_sequences(...,
    # replicate_kv=True): MQA (StarCoder: 48 heads, 1 KV head) and MLA (DeepSeek-V3) lose
    # capacity at tp=8, GQA-8 not (Falcon-7B's 71 heads refuse tp=8: no layout)
    from rooflinekit import memory
    names = ["StarCoder", "Llama-3.1-70B", "DeepSeek-V3"]
    for chunks in (None, 4):
        ds = sw.sweep(names, ["H100-SXM-80GB"], tp=[1, 8], context_length=[1024, 8192],
                      batch_size=1, replicate_kv=True, chunks=chunks, reserve=0.10).compute()
        assert ds.attrs["replicate_kv"] == 1
        for name in names:
            for tp in (1, 8):
                for ctx in (1024, 8192):
                    want = memory.max_concurrent_sequences(
                        catalog.model(name), catalog.gpu("H100-SXM-80GB"), ctx, tp=tp,
                        replicate_kv=True)
                    got = int(ds.max_concurrent_sequences.sel(model=name, gpu="H100-SXM-80GB",
                                                              tp=tp, context_length=ctx))
                    assert got == want, (name, tp, ctx)
    plain = sw.sweep(names, ["H100-SXM-80GB"], tp=8, context_length=8192, batch_size=1,
                     reserve=0.10)
    repl = sw.sweep(names, ["H100-SXM-80GB"], tp=8, context_length=8192, batch_size=1,
                    replicate_kv=True, reserve=0.10)
    less = repl.max_concurrent_sequences < plain.max_concurrent_sequences
    assert list(less.squeeze().values) == [True, False, True]
    # the engine's rule divides its budget among the copies too: StarCoder's one KV head on
    # eight ranks is 8 copies (DeepSeek-V3's FP8 weights leave 8 x H100 no cache by vLLM's rule)
    plain = sw.sweep(names, ["H100-SXM-80GB"], tp=8, context_length=8192, batch_size=1)
    repl = sw.sweep(names, ["H100-SXM-80GB"], tp=8, context_length=8192, batch_size=1,
                    replicate_kv=True)
    star = {k: int(ds.max_concurrent_sequences.sel(model="StarCoder").squeeze())
            for k, ds in (("plain", plain), ("repl", repl))}
    assert star["repl"] == memory.sequences_in_budget(
        catalog.model("StarCoder"),
        float(plain.usable_kv_bytes.sel(model="StarCoder").squeeze()) / 8, 8192)
    assert star["repl"] < star["plain"]
    assert int(plain.max_concurrent_sequences.sel(model="DeepSeek-V3").squeeze()) == 0
    with pytest.raises(TypeError, match="replicate_kv"):
        sw.sweep(names, ["H100-SXM-80GB"], replicate_kv="yes")


def test_an_in_memory_sweep_above_its_memory_limit_is_refused_with_the_way_out():
    import rooflinekit as rk
    kwargs = dict(models=["Llama-3.1-8B"], gpus=["H100-SXM-80GB"], context_length=[1024, 2048],
                  batch_size=[1, 2, 4])
    small = rk.sweep.sweep(**kwargs)
    held = sum(v.nbytes for v in small.data_vars.values())
    with pytest.raises(ValueError, match="chunks='auto'"):
        rk.sweep.sweep(**kwargs, memory_limit=held / 2)
    assert rk.sweep.sweep(**kwargs, memory_limit=held * 2).sizes == small.sizes
