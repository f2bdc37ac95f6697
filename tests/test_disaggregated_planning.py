"""The best prefill/decode split for a traffic (``rooflinekit.planning.disaggregated``)."""

import numpy as np
import pytest

import rooflinekit as rk
from rooflinekit.planning import AGGREGATED, SPLIT
from rooflinekit.planning.disaggregated import _splits

M, G = "Llama-3.1-8B", "H100-SXM-80GB"
TRAFFIC = rk.Traffic(2.0, 200, 20)
SLO = rk.SLO(ttft=1.0, itl=0.05)
SMALL = {"model": M, "gpu": G, "replicates": 2, "requests": 20}


def test_a_gpu_budget_gives_every_split_within_it():
    assert _splits(4, None, 1) == [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (3, 1)]
    assert _splits(8, None, 4) == [(1, 1)]
    assert _splits(None, [(2, 1)], 8) == [(2, 1)]


def test_splits_against_the_aggregated_replica():
    ds = rk.plan_disaggregated(TRAFFIC, SLO, splits=[(1, 1), (2, 1)], **SMALL)
    assert ds[SPLIT].values.tolist() == [AGGREGATED, "1P1D", "2P1D"]
    assert ds.gpus_per_unit.values.tolist() == [1, 2, 3]
    assert ds.prefill_replicas.values.tolist() == [0, 1, 2]
    np.testing.assert_allclose(ds.rate_per_gpu.values, ds.max_rate.values / [1, 2, 3])
    assert (ds.max_rate.values > 0).all()
    assert (ds.units.values * ds.max_rate.values >= 2.0 * 1.2).all()
    # the fleet with the fewest GPUs is named
    best = ds.attrs["best_split"]
    assert ds.gpus.sel({SPLIT: best}) == ds.gpus.values.min()


def test_the_aggregated_row_is_the_plans_rate():
    # the same configuration, seed and draws as rk.plan: the same search, the same numbers
    # (plan_disaggregated times every replicate with the fitted knobs: no engine draws)
    ds = rk.plan_disaggregated(TRAFFIC, SLO, splits=[(1, 1)], **SMALL)
    plan = rk.plan(TRAFFIC, SLO, models=M, gpus=G, replicates=2, requests=20, engine_draws=0)
    np.testing.assert_array_equal(ds.replicate_max_rate.sel({SPLIT: AGGREGATED}).values,
                                  plan.replicate_max_rate.values.ravel())


def test_a_model_that_does_not_fit_serves_nowhere():
    ds = rk.plan_disaggregated(TRAFFIC, SLO, model="Llama-3.1-70B", gpu=G, splits=[(1, 1)],
                               replicates=1, requests=10)
    assert (ds.max_rate.values == 0).all() and (ds.binding.values == "does_not_fit").all()
    assert ds.attrs["best_split"] == "none" and (ds.gpus.values == 0).all()


def test_an_expert_parallel_unit_is_the_plans_expert_parallel_replica():
    # Mixtral over 2 H100s with its experts whole on each: the aggregated row is plan(ep=2)'s
    # replicate for replicate, and every split runs the same replicas
    moe = {"model": "Mixtral-8x7B", "gpu": G, "tp": 2, "replicates": 2, "requests": 20}
    traffic = rk.Traffic(2.0, 500, 50)
    ds = rk.plan_disaggregated(traffic, SLO, ep=2, splits=[(1, 1)], **moe)
    plan = rk.plan(traffic, SLO, models="Mixtral-8x7B", gpus=G, tp=2, ep=[2], replicates=2,
                   requests=20, engine_draws=0)
    np.testing.assert_array_equal(ds.replicate_max_rate.sel({SPLIT: AGGREGATED}).values,
                                  plan.replicate_max_rate.values.ravel())
    assert ds.attrs["ep"] == 2 and (ds.max_rate.values > 0).all()
    # a degree that does not divide the experts serves nowhere, and says why
    bad = rk.plan_disaggregated(traffic, SLO, ep=3, splits=[(1, 1)], **moe)
    assert (bad.binding.values == "invalid_layout").all() and (bad.gpus.values == 0).all()


@pytest.mark.parametrize("kwargs, error, match", [
    ({}, ValueError, "gpu_budget"),
    ({"splits": [(1, 1)], "ep": 0}, ValueError, "ep"),
    ({"splits": [(1, 1)], "ep": 1.5}, ValueError, "ep"),
    ({"gpu_budget": 4, "splits": [(1, 1)]}, ValueError, "gpu_budget"),
    ({"gpu_budget": 1}, ValueError, "gpu_budget"),
    ({"splits": []}, TypeError, "splits"),
    ({"splits": [(1, 1, 1)]}, TypeError, "splits"),
    ({"splits": [(0, 1)]}, ValueError, "prefill_replicas"),
    ({"splits": [(1, 0)]}, ValueError, "decode_replicas"),
    ({"splits": [(1, 1), (1, 1)]}, ValueError, "repeat"),
    ({"splits": [(1, 1)], "link_bandwidth": 0.0}, ValueError, "link_bandwidth"),
    ({"splits": [(1, 1)], "link_latency": -1.0}, ValueError, "link_latency"),
    ({"splits": [(1, 1)], "admission": "prompt"}, ValueError, "admission"),
])
def test_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        rk.plan_disaggregated(TRAFFIC, SLO, **SMALL, **kwargs)


def test_the_figure_draws_one_bar_per_split():
    import matplotlib
    matplotlib.use("Agg")
    from rooflinekit.plotting import plot_disaggregated

    ds = rk.plan_disaggregated(TRAFFIC, SLO, splits=[(1, 1), (2, 1)], **SMALL)
    ax = plot_disaggregated(ds)
    heights = [p.get_height() for p in ax.patches]
    np.testing.assert_allclose(heights, ds.rate_per_gpu.values)
    assert [t.get_text() for t in ax.get_xticklabels()] == [AGGREGATED, "1P1D", "2P1D"]
    with pytest.raises(TypeError, match="plan_disaggregated"):
        plot_disaggregated(ds.drop_vars("gpus"))
    with pytest.raises(TypeError, match="ax"):
        plot_disaggregated(ds, ax="here")
