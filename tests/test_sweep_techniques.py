"""Speculative decoding and prefix caching as sweep dimensions."""

import itertools

import numpy as np
import pytest

import rooflinekit as rk
from rooflinekit import catalog
from rooflinekit.sweep import sweep

MODELS = ["Llama-3.1-70B", "Llama-3.1-8B"]
GPUS = ["H100-SXM-80GB", "A100-SXM-80GB"]
AXES = {"tp": [1, 4], "context_length": [2048, 8192], "batch_size": [1, 8, 64],
            "prompt_tokens": [1000, 4000]}
TECHNIQUES = {"draft_tokens": [0, 2, 4], "acceptance": [0.0, 0.6, 1.0], "draft": 0.05,
                  "prefix_share": [0.0, 0.5, 1.0]}


# the ideal roofline throughout: the cells are compared with the public formulas' ideal default
@pytest.fixture(scope="module")
def today():
    return sweep(MODELS, GPUS, **AXES, engine=rk.IDEAL, reserve=0.10)


@pytest.fixture(scope="module")
def techniques():
    return sweep(MODELS, GPUS, **AXES, **TECHNIQUES, engine=rk.IDEAL, reserve=0.10)


def test_without_the_techniques_nothing_changes(today):
    assert not set(today.dims) & {"draft_tokens", "acceptance", "prefix_share"}
    assert not [v for v in today.data_vars if v.startswith("speculative_")]


def test_a_share_of_zero_gives_todays_numbers_exactly(today, techniques):
    for name in today.data_vars:
        got = techniques[name]
        if "prefix_share" in got.dims:
            got = got.sel(prefix_share=0.0)
        assert got.dims == today[name].dims, name
        np.testing.assert_array_equal(got.values, today[name].values, err_msg=name)


def test_the_new_dimensions_and_variables(techniques):
    assert techniques["speculative_speedup"].dims == (
        "model", "gpu", "tp", "context_length", "batch_size", "draft_tokens", "acceptance")
    assert techniques["prefill_time"].dims[-1] == "prefix_share"
    assert techniques["max_concurrent_sequences"].dims[-1] == "prefix_share"
    assert techniques["fits"].dims[-1] == "prefix_share"
    assert techniques["acceptance"].dtype == np.float64
    for name in ("speculative_step_time", "speculative_itl", "speculative_tokens_per_second",
                 "speculative_speedup", "speculative_tokens_per_step"):
        assert techniques[name].attrs["units"]


def test_every_speculative_cell_is_the_public_formula(techniques):
    rng = np.random.default_rng(3)
    cells = list(itertools.product(range(2), range(2), range(2), range(2), range(3), range(3),
                                   range(3)))
    for idx in rng.choice(len(cells), 25, replace=False):
        m, g, t, c, b, k, a = cells[idx]
        cell = techniques.isel(model=m, gpu=g, tp=t, context_length=c, batch_size=b,
                               draft_tokens=k, acceptance=a)
        args = (catalog.model(MODELS[m]), catalog.gpu(GPUS[g]), int(cell.batch_size),
                int(cell.context_length), int(cell.tp))
        kw = {"draft": 0.05, "draft_tokens": int(cell.draft_tokens)}
        step = rk.speculative_step_time(*args, **kw)
        gained = rk.speculative_tokens_per_step(float(cell.acceptance), int(cell.draft_tokens))
        assert float(cell.speculative_step_time) == pytest.approx(step, rel=1e-12)
        assert float(cell.speculative_itl) == pytest.approx(step / gained, rel=1e-12)
        assert float(cell.speculative_tokens_per_second) == pytest.approx(
            args[2] * gained / step, rel=1e-12)
        assert float(cell.speculative_speedup) == pytest.approx(
            rk.speculative_speedup(*args, acceptance=float(cell.acceptance), **kw), rel=1e-12)


def test_no_drafts_cost_nothing_and_gain_nothing(techniques):
    none = techniques.sel(draft_tokens=0)
    np.testing.assert_allclose(none["speculative_speedup"], 1.0, rtol=1e-12)


def test_every_prefix_cell_is_the_public_formula(techniques):
    for m, g, t, p, s in itertools.product(range(2), range(2), range(2), range(2), range(3)):
        cell = techniques.isel(model=m, gpu=g, tp=t, prompt_tokens=p, prefix_share=s)
        model, gpu = catalog.model(MODELS[m]), catalog.gpu(GPUS[g])
        prompt, share, tp = int(cell.prompt_tokens), float(cell.prefix_share), int(cell.tp)
        assert float(cell.prefill_time) == rk.prefill_time(
            model, gpu, prompt, tp, cached_tokens=int(np.floor(share * prompt)))
        for c in range(2):
            ctx = int(cell.context_length[c])
            assert int(cell.max_concurrent_sequences[c]) == rk.max_concurrent_sequences(
                model, gpu, ctx, tp, shared_prefix_tokens=int(np.floor(share * ctx)))


def test_a_draft_model_takes_its_weights_from_every_budget():
    kw = {"tp": [4], "context_length": [8192], "batch_size": [1, 64]}
    plain = sweep("Llama-3.1-70B", "H100-SXM-80GB", **kw, reserve=0.10)
    drafted = sweep("Llama-3.1-70B", "H100-SXM-80GB", **kw, draft_tokens=[4],
                    acceptance=[0.8], draft="Llama-3.1-8B", reserve=0.10)
    m, g = catalog.model("Llama-3.1-70B"), catalog.gpu("H100-SXM-80GB")
    draft_bytes = rk.weight_bytes(catalog.model("Llama-3.1-8B"))
    assert int(drafted.max_concurrent_sequences.squeeze()) == rk.max_concurrent_sequences(
        m, g, 8192, 4, draft_weight_bytes=draft_bytes)
    assert int(drafted.max_concurrent_sequences.squeeze()) < \
        int(plain.max_concurrent_sequences.squeeze())
    # the engine's rule: the draft's weights off the engine's budget of the four GPUs
    plain = sweep("Llama-3.1-70B", "H100-SXM-80GB", **kw)
    drafted = sweep("Llama-3.1-70B", "H100-SXM-80GB", **kw, draft_tokens=[4],
                    acceptance=[0.8], draft="Llama-3.1-8B")
    budget = float(plain.usable_kv_bytes.squeeze()) - draft_bytes
    assert int(drafted.max_concurrent_sequences.squeeze()) == rk.memory.sequences_in_budget(
        m, budget, 8192)
    assert int(drafted.max_concurrent_sequences.squeeze()) < \
        int(plain.max_concurrent_sequences.squeeze())


def test_the_lazy_sweep_equals_the_in_memory_one(techniques):
    pytest.importorskip("dask")
    lazy = sweep(MODELS, GPUS, **AXES, **TECHNIQUES, chunks=50, engine=rk.IDEAL,
                 reserve=0.10)
    for name in techniques.data_vars:
        np.testing.assert_array_equal(lazy[name].values, techniques[name].values,
                                      err_msg=name)


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"draft_tokens": [4]}, ValueError, "acceptance"),
    ({"draft_tokens": [4], "acceptance": [0.8]}, ValueError, "draft"),
    ({"acceptance": [0.8], "draft": 0.05}, ValueError, "draft_tokens"),
    ({"draft_tokens": [-1], "acceptance": [0.8], "draft": 0.05}, ValueError, "draft_tokens"),
    ({"draft_tokens": [1.5], "acceptance": [0.8], "draft": 0.05}, ValueError, "draft_tokens"),
    ({"draft_tokens": [2, 2], "acceptance": [0.8], "draft": 0.05}, ValueError, "draft_tokens"),
    ({"draft_tokens": [2], "acceptance": [1.2], "draft": 0.05}, ValueError, "acceptance"),
    ({"draft_tokens": [2], "acceptance": [np.nan], "draft": 0.05}, ValueError, "acceptance"),
    ({"draft_tokens": [2], "acceptance": [0.8], "draft": 0.0}, ValueError, "draft"),
    ({"draft_tokens": [2], "acceptance": [0.8], "draft": [0.1]}, TypeError, "draft"),
    ({"draft_tokens": [2], "acceptance": [0.8], "draft": "no-such-model"}, ValueError, "model"),
    ({"prefix_share": [-0.1]}, ValueError, "prefix_share"),
    ({"prefix_share": [0.5, 0.5]}, ValueError, "prefix_share"),
    ({"prefix_share": "half"}, TypeError, "prefix_share"),
    ({"draft_tokens": [2], "acceptance": [0.8], "draft": 0.05, "pp": [0, 2]}, ValueError,
     "pp"),
    ({"variables": ["speculative_speedup"]}, ValueError, "draft_tokens"),
])
def test_bad_technique_axes_are_refused_before_work(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        sweep("Llama-3.1-8B", "H100-SXM-80GB", **kwargs)


def test_a_shared_prefix_combines_with_pipeline_and_expert_parallelism():
    """prefix_share with pp/ep: share 0 is the layout sweep exactly; a shared prefix is held
    once per pipeline and only the uncached tokens cross the stage hand-offs (hand-computed:
    the cached prefill on the group plus (pp - 1) activation hand-offs of the uncached tokens,
    hidden × 2 bytes each over the network link, plus its latency)."""
    from rooflinekit import catalog
    axes = {"tp": [4, 8], "context_length": [8192], "batch_size": [8], "prompt_tokens": [4000],
            "pp": [1, 2]}
    plain = sweep("Llama-3.1-70B", "H100-SXM-80GB", **axes, engine=rk.IDEAL)
    shared = sweep("Llama-3.1-70B", "H100-SXM-80GB", **axes, prefix_share=[0.0, 0.5],
                   engine=rk.IDEAL)
    for name in plain.data_vars:
        got = shared[name]
        got = got.sel(prefix_share=0.0) if "prefix_share" in got.dims else got
        np.testing.assert_array_equal(got.transpose(*plain[name].dims).values,
                                      plain[name].values, err_msg=name)
    model, gpu = catalog.model("Llama-3.1-70B"), catalog.gpu("H100-SXM-80GB")
    cell = shared.sel(model="Llama-3.1-70B", gpu="H100-SXM-80GB", tp=8, pp=2,
                      prefix_share=0.5).squeeze()
    cached = 2000
    group = rk.prefill_time(model, gpu, 4000, 8, cached_tokens=cached)
    hand_off = (4000 - cached) * model.hidden_size * 2 / gpu.network_bandwidth \
        + gpu.interconnect_latency
    assert float(cell.prefill_time) == pytest.approx(group + hand_off, rel=1e-12)
    assert int(cell.max_concurrent_sequences) >= int(
        shared.sel(tp=8, pp=2, prefix_share=0.0).squeeze().max_concurrent_sequences)


def test_a_calibrated_link_share_reaches_every_gpu_of_a_sweep():
    """A calibration's share of the link bandwidth the all-reduces reach: each GPU of the sweep
    gets that share of its own link, phase by phase, as the roofline does given the GPU."""
    from rooflinekit.calibrate import Calibration
    cal = Calibration(prefill={"interconnect_efficiency": 0.3, "compute_efficiency": 0.5},
                      decode={"interconnect_efficiency": 0.6, "bandwidth_efficiency": 0.8})
    gpus = ["H100-SXM-80GB", "A100-SXM-80GB"]
    ds = sweep("Llama-3.1-70B", gpus, tp=[1, 4], context_length=[2048], batch_size=[16],
               engine=cal)
    m = rk.catalog.model("Llama-3.1-70B")
    for name in gpus:
        g = rk.catalog.gpu(name)
        for tp in (1, 4):
            cell = ds.sel(model=m.name, gpu=name, tp=tp, context_length=2048, batch_size=16)
            assert float(cell.prefill_time) == pytest.approx(rk.prefill_time(
                m, g, 2048, tp, engine=cal.engine_for("prefill", gpu=g)), rel=1e-12)
            assert float(cell.decode_step_time) == pytest.approx(rk.decode_step_time(
                m, g, 16, 2048, tp, engine=cal.engine_for("decode", gpu=g)), rel=1e-12)
    # the share slows the tensor-parallel steps only
    ideal_link = sweep("Llama-3.1-70B", gpus, tp=[1, 4], context_length=[2048],
                       batch_size=[16], engine=Calibration(
                           prefill={"compute_efficiency": 0.5},
                           decode={"bandwidth_efficiency": 0.8}))
    assert (ds.prefill_time.sel(tp=4) > ideal_link.prefill_time.sel(tp=4)).all()
    np.testing.assert_array_equal(ds.prefill_time.sel(tp=1), ideal_link.prefill_time.sel(tp=1))
