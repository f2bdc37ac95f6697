"""Sweeps over pipeline and expert parallelism: pp and ep as dimensions."""

import numpy as np
import pytest

import rooflinekit as rk
from rooflinekit import catalog, parallel
from rooflinekit import roofline as r
from rooflinekit.sweep import sweep

MODELS = ["Llama-3.1-70B", "Mixtral-8x7B", "Llama-3.1-405B"]
GPUS = ["H100-SXM-80GB", "H200-SXM-141GB"]
AXES = {"tp": [1, 2, 4, 8], "context_length": [1024, 8192], "batch_size": [1, 8, 64]}


# the ideal roofline and the guide's memory rule throughout: the cells are compared with the
# public formulas' defaults
@pytest.fixture(scope="module")
def today():
    return sweep(MODELS, GPUS, **AXES, engine=rk.IDEAL, reserve=0.10)


@pytest.fixture(scope="module")
def layouts():
    return sweep(MODELS, GPUS, **AXES, pp=[1, 2, 3], ep=[1, 2, 4], engine=rk.IDEAL,
                 reserve=0.10)


def test_a_pipeline_by_the_engines_memory_rule():
    # vLLM's rule on each of a pipeline's 16 GPUs: 0.9 of the 79.19 GiB the driver reports,
    # less what vLLM keeps beside the weights at TP 8 x PP 2; the weights held once
    model, gpu = catalog.model("Llama-3.1-405B"), catalog.gpu("H100-SXM-80GB")
    ds = sweep(model, gpu, tp=8, pp=[1, 2], context_length=[8192], batch_size=[1])
    share, held = rk.profiles.memory_rule("vllm", model, gpu, 8, pp=2)
    room = share * 79.19 * 2**30 - rk.profiles.held_bytes(held)
    want = 16 * room - rk.weight_bytes(model)
    assert float(ds.usable_kv_bytes.sel(pp=2).squeeze()) == pytest.approx(want, rel=1e-4)
    assert not bool(ds.weights_fit.sel(pp=1).squeeze())
    assert int(ds.max_concurrent_sequences.sel(pp=2).squeeze()) == \
        rk.memory.sequences_in_budget(model, float(ds.usable_kv_bytes.sel(pp=2).squeeze()), 8192)
    assert ds.attrs["kv_cache_rule"].startswith("the engine's: 0.9 of the memory")


def test_pp_and_ep_of_one_give_todays_numbers_exactly(today, layouts):
    for name in today.data_vars:
        got = layouts[name]
        got = got.isel({d: 0 for d in ("pp", "ep") if d in got.dims})
        np.testing.assert_array_equal(got.transpose(*today[name].dims).values,
                                      today[name].values, err_msg=name)
    assert "pp" not in today.dims and "ep" not in today.dims


def test_every_layout_cell_is_the_public_formula(layouts):
    for model, gpu, tp, pp, ep in [("Llama-3.1-405B", "H100-SXM-80GB", 8, 2, 1),
                                   ("Mixtral-8x7B", "H200-SXM-141GB", 4, 2, 4),
                                   ("Llama-3.1-70B", "H100-SXM-80GB", 2, 2, 1)]:
        m, g = catalog.model(model), catalog.gpu(gpu)
        cell = layouts.sel(model=model, gpu=gpu, tp=tp, pp=pp, ep=ep)
        for ctx in AXES["context_length"]:
            for batch in AXES["batch_size"]:
                assert cell.decode_step_time.sel(context_length=ctx, batch_size=batch) == \
                    pytest.approx(rk.layout_decode_step_time(m, g, batch, ctx, tp=tp, pp=pp,
                                                             ep=ep), rel=1e-12)
            assert cell.prefill_time.sel(context_length=ctx) == pytest.approx(
                rk.layout_prefill_time(m, g, ctx, tp=tp, pp=pp, ep=ep), rel=1e-12)


def test_a_pipeline_holds_the_405b_that_one_node_cannot(layouts):
    cell = layouts.sel(model="Llama-3.1-405B", gpu="H100-SXM-80GB", tp=8, ep=1)
    assert not bool(cell.weights_fit.sel(pp=1))
    assert bool(cell.weights_fit.sel(pp=2))
    mem = rk.layout_memory(catalog.model("Llama-3.1-405B"), catalog.gpu("H100-SXM-80GB"),
                           tp=8, pp=2)
    assert float(cell.usable_kv_bytes.sel(pp=2)) == pytest.approx(16 * mem.usable_kv_bytes,
                                                                  rel=1e-12)
    per_gpu = cell.tokens_per_second_per_gpu.sel(pp=2, context_length=1024, batch_size=64)
    assert float(per_gpu) == pytest.approx(
        float(cell.tokens_per_second.sel(pp=2, context_length=1024, batch_size=64)) / 16)


def test_layouts_that_do_not_divide_the_model_do_not_fit(layouts):
    # 80 layers in 3 stages; a dense model over experts; ep = 4 over tp = 2
    assert not layouts.fits.sel(model="Llama-3.1-70B", pp=3).any()
    assert np.isnan(layouts.decode_step_time.sel(model="Llama-3.1-70B", pp=3)).all()
    assert not layouts.fits.sel(model="Llama-3.1-70B", ep=2).any()
    assert np.isnan(layouts.decode_step_time.sel(model="Mixtral-8x7B", tp=2, ep=4)).all()
    assert not np.isnan(layouts.decode_step_time.sel(model="Mixtral-8x7B", tp=4, ep=4,
                                                     pp=[1, 2])).any()


def test_micro_batches_in_a_sweep():
    kw = {"tp": [2], "context_length": [1024], "batch_size": [64, 256], "pp": [4]}
    ds = sweep(["Llama-3.1-70B"], ["H100-SXM-80GB"], micro_batches=4, **kw, engine=rk.IDEAL)
    m, g = catalog.model("Llama-3.1-70B"), catalog.gpu("H100-SXM-80GB")
    for batch in (64, 256):
        assert float(ds.decode_step_time.sel(batch_size=batch).squeeze()) == pytest.approx(
            rk.layout_decode_step_time(m, g, batch, 1024, tp=2, pp=4, micro_batches=4),
            rel=1e-12)


@pytest.mark.parametrize("kwargs, message", [
    ({"pp": [0]}, "pp"),
    ({"ep": [1, 1]}, "ep must not repeat"),
    ({"micro_batches": 2}, "micro_batches > 1 needs a pipeline"),
    ({"pp": [2], "micro_batches": 3}, "multiple of micro_batches=3"),
])
def test_bad_layout_axes_are_refused_before_work(kwargs, message):
    with pytest.raises(ValueError, match=message):
        sweep(["Llama-3.1-70B"], ["H100-SXM-80GB"], batch_size=[4], **kwargs)


def test_a_pipeline_over_gpus_with_no_known_link_is_refused():
    gpu = rk.GPU("bare", memory_bytes=80e9, hbm_bandwidth=3e12, peak_flops=1e15)
    with pytest.raises(ValueError, match="pp > 1 needs each GPU's link bandwidth"):
        sweep(["Llama-3.1-70B"], [gpu], pp=[1, 2], engine=rk.Engine(allreduce="guide"))


def test_lazy_layout_sweep_equals_the_in_memory_one(layouts):
    pytest.importorskip("dask")
    lazy = sweep(MODELS, GPUS, **AXES, pp=[1, 2, 3], ep=[1, 2, 4], chunks={"pp": 1, "tp": 2},
                 engine=rk.IDEAL, reserve=0.10)
    for name in ("decode_step_time", "fits", "prefill_time"):
        np.testing.assert_array_equal(lazy[name].values, layouts[name].values)
    # the engine's rule, its room sliced by block along tp and pp
    kw = dict(AXES, pp=[1, 2, 3], ep=[1, 2, 4])
    whole = sweep(MODELS, GPUS, **kw)
    lazy = sweep(MODELS, GPUS, **kw, chunks={"pp": 1, "tp": 2, "model": 1})
    for name in ("usable_kv_bytes", "max_concurrent_sequences", "fits"):
        np.testing.assert_array_equal(lazy[name].values, whole[name].values)


def test_catalogue_datasets_without_the_new_fields_read_them_as_unknown():
    models = catalog.models(["Mixtral-8x7B"], as_dataset=True).drop_vars("intermediate_size")
    gpus = catalog.gpus(["H100-SXM-80GB"], as_dataset=True).drop_vars("network_bandwidth")
    kw = {"tp": [4], "pp": [1, 2], "ep": [1, 4], "batch_size": [8]}
    old = sweep(models, gpus, **kw)
    new = sweep("Mixtral-8x7B", "H100-SXM-80GB", **kw)
    # no pipeline: the same; a pipeline: hand-offs over NVLink instead of the unknown NIC
    np.testing.assert_array_equal(old.decode_step_time.sel(pp=1).values,
                                  new.decode_step_time.sel(pp=1).values)
    assert (old.decode_step_time.sel(pp=2) < new.decode_step_time.sel(pp=2)).all()


def test_speculation_on_a_pipeline_verifies_through_the_stages():
    """k = 4 drafts of a 0.05 head, then the verification of 5 positions of each of the batch's
    sequences through 2 stages: one hand-off of 5·B tokens' activations (8,192 wide, bf16) over
    the NIC, worked out here; pp = 1 is the one-group formula exactly."""
    m, g = catalog.model("Llama-3.1-70B"), catalog.gpu("H100-SXM-80GB")
    ds = sweep(m, g, tp=[4], context_length=[2048], batch_size=[8, 64], pp=[1, 2],
               draft_tokens=[4], acceptance=[0.8], draft=0.05, engine=rk.IDEAL)
    for batch in (8, 64):
        cell = ds.sel(model=m.name, gpu=g.name, tp=4, context_length=2048,
                      batch_size=batch, draft_tokens=4, acceptance=0.8)
        one_group = rk.speculative_step_time(m, g, batch, 2048, 4, draft=0.05, draft_tokens=4)
        assert float(cell.speculative_step_time.sel(pp=1)) == one_group
        verify = r.verification_step_time(m, g, batch, 2048, 4, draft_tokens=4)
        hand_off = 5 * batch * 8192 * 2 / g.network_bandwidth + g.interconnect_latency
        drafts = 4 * 0.05 * rk.decode_step_time(m, g, batch, 2048, 4)
        assert float(cell.speculative_step_time.sel(pp=2)) == pytest.approx(
            drafts + verify + hand_off, rel=1e-12)
        # the speed-up is over the layout's own decode step
        itl = float(cell.speculative_step_time.sel(pp=2)) / rk.speculative_tokens_per_step(0.8, 4)
        assert float(cell.speculative_speedup.sel(pp=2)) == pytest.approx(
            rk.layout_decode_step_time(m, g, batch, 2048, tp=4, pp=2) / itl, rel=1e-12)


@pytest.mark.parametrize("layout", [{}, {"pp": [1, 2]}])
def test_a_tp_that_does_not_divide_the_heads_never_fits(layout):
    # check_layout's rule on every path: Llama-3.1-8B's 32 heads (8 KV) refuse tp = 3 and 6,
    # as the batchers, layouts() and plan do; the sweep reported tp = 3, pp = 2 as fitting
    # (a 1.74 ms step) and could recommend it
    m = catalog.model("Llama-3.1-8B")
    ds = sweep(m, "H100-SXM-80GB", tp=[1, 2, 3, 4, 6, 8], context_length=[1024],
               batch_size=[8], **layout)
    for tp in (1, 2, 3, 4, 6, 8):
        try:
            parallel.check_layout(m, tp=tp)
            valid = True
        except ValueError:
            valid = False
        cell = ds.sel(tp=tp)
        assert bool(cell.fits.any()) == valid, tp
        assert valid or int(cell.max_concurrent_sequences.max()) == 0
    best = rk.best_configuration(ds, "tokens_per_second_per_gpu")
    assert int(best.tp.item()) in (1, 2, 4, 8)
