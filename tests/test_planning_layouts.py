"""plan(pp=, ep=): replicas of a pipeline or expert layout.

Reference values: Llama-3.1-405B in bf16 holds 810 GB of weights (catalogue n_params 405e9 × 2
bytes), more than 8 × 80 GiB H100s leave, so at tp 8 alone it does not fit; at tp 8, pp 2 each
GPU holds 1/16 of them and it serves. Each case is checked against a ContinuousBatcher built
by hand with the layout, or against the plan without the layout dimensions.
"""

import numpy as np
import pytest

import rooflinekit as rk
from rooflinekit.workloads import Constant

TRAFFIC = rk.Traffic(1.0, Constant(512), Constant(32))
SLO = rk.SLO(ttft=5.0, itl=0.5, quantile=0.9)
SMALL = {"replicates": 2, "requests": 60, "seed": 3}


def test_pp_and_ep_of_one_give_the_plan_without_them():
    base = rk.plan(TRAFFIC, SLO, models="Llama-3.1-8B", gpus="H100-SXM-80GB", tp=[1, 2],
                   max_num_seqs=16, **SMALL)
    layout = rk.plan(TRAFFIC, SLO, models="Llama-3.1-8B", gpus="H100-SXM-80GB", tp=[1, 2],
                     max_num_seqs=16, pp=[1], ep=[1], **SMALL)
    for name in ("max_rate", "replicas", "gpus", "monthly_cost", "kv_budget_tokens"):
        np.testing.assert_array_equal(layout[name].sel(pp=1, ep=1).values, base[name].values,
                                      err_msg=name)


def test_a_405b_model_serves_across_two_stages_and_counts_their_gpus():
    ds = rk.plan(TRAFFIC, SLO, models="Llama-3.1-405B", gpus="H100-SXM-80GB", tp=8,
                 max_num_seqs=16, pp=[1, 2], **SMALL).squeeze(drop=True)
    one, two = ds.sel(pp=1), ds.sel(pp=2)
    assert str(one["binding"].values) == "does_not_fit" and float(one["max_rate"]) == 0
    assert float(two["max_rate"]) > 0
    assert int(two["gpus"]) == int(two["replicas"]) * 16         # tp × pp GPUs a replica
    # the KV budget is one GPU's: vLLM's available memory with 1/16 of the weights on it,
    # over the KV a token leaves on that GPU (its stage's layers, its tp share of the heads)
    model, gpu = rk.catalog.model("Llama-3.1-405B"), rk.catalog.gpu("H100-SXM-80GB")
    kv = rk.engine_kv_cache(model, gpu, 8, block_size=16, gpu_memory_utilization=0.9,
                            max_model_len=16)
    weights = rk.weight_bytes(model)                   # about 810 GB
    available = kv["available_bytes"] + weights / 8 - weights / 16
    per_token = model.kv_bytes_per_token / 16          # 8 KV heads over tp 8, 126 layers / 2
    assert int(two["kv_budget_tokens"]) == int(available // (per_token * 16)) * 16


def test_a_layout_the_model_cannot_take_is_invalid_not_nan():
    ds = rk.plan(TRAFFIC, SLO, models="Llama-3.1-8B", gpus="H100-SXM-80GB", tp=1,
                 max_num_seqs=16, pp=[3], ep=[2], **SMALL).squeeze(drop=True)
    assert str(ds["binding"].values) == "invalid_layout"
    assert float(ds["max_rate"]) == 0 and int(ds["gpus"]) == 0
    assert np.isinf(float(ds["monthly_cost"]))


@pytest.mark.parametrize("bad, exc", [(0, ValueError), (1.5, ValueError), ("2", TypeError)])
def test_bad_layout_degrees_are_refused_before_work(bad, exc):
    with pytest.raises(exc, match="pp"):
        rk.plan(TRAFFIC, SLO, models="Llama-3.1-8B", gpus="H100-SXM-80GB", pp=bad, **SMALL)


def test_the_cheapest_plan_and_decision_read_the_layout_axes():
    ds = rk.plan(TRAFFIC, SLO, models="Llama-3.1-405B", gpus="H100-SXM-80GB", tp=8,
                 max_num_seqs=16, pp=[1, 2], **SMALL)
    best = rk.cheapest_plan(ds, by=None)
    assert int(best["pp"]) == 2 and int(best["gpus"]) == int(best["replicas"]) * 16
    table = rk.decision_table(best, TRAFFIC, payg=rk.PayAsYouGo(3.0, 12.0))
    assert float(table["monthly_cost"].sel(option="self-hosted")) == \
        pytest.approx(float(best["monthly_cost"]))


def test_a_calibration_with_knob_sets_gives_each_gpu_its_own():
    """plan with knob sets by GPU: each GPU's rows equal a plan with that GPU's knobs."""
    from rooflinekit.calibrate import Calibration
    cal = Calibration(decode={"bandwidth_efficiency": 0.7}, source="bench", group_by=("gpu",),
                      groups={("H100-SXM-80GB",): {"decode": {"bandwidth_efficiency": 0.5}},
                              ("H200-SXM-141GB",): {"decode": {"bandwidth_efficiency": 0.9}}})
    slo = rk.SLO(itl=0.012, quantile=0.9)
    both = rk.plan(TRAFFIC, slo, models="Llama-3.1-8B", gpus=["H100-SXM-80GB", "H200-SXM-141GB"],
                   max_num_seqs=16, engine=cal, **SMALL)
    for gpu in ("H100-SXM-80GB", "H200-SXM-141GB"):
        alone = rk.plan(TRAFFIC, slo, models="Llama-3.1-8B", gpus=gpu, max_num_seqs=16,
                        engine=cal.engine_for("step", gpu=gpu), **SMALL)
        np.testing.assert_array_equal(both["max_rate"].sel(gpu=gpu).values,
                                      alone["max_rate"].sel(gpu=gpu).values)
    shared = rk.plan(TRAFFIC, slo, models="Llama-3.1-8B", gpus="H100-SXM-80GB", max_num_seqs=16,
                     engine=cal.engine_for("step"), **SMALL)
    assert float(both["max_rate"].sel(gpu="H100-SXM-80GB").squeeze()) != \
        float(shared["max_rate"].squeeze())


# A layout's energy by hand: guide-style tiny model (2 layers, hidden 32, 1e9 bf16 parameters,
# 128 B of KV per token), one 500 W GPU per stage, stages joined by a 1 GB/s link of 10 µs.
TINY = rk.ModelShape("tiny", n_layers=2, n_heads=4, n_kv_heads=2, head_dim=8, n_params=1e9)
STAGE_GPU = rk.GPU("g", memory_bytes=80 * 2**30, hbm_bandwidth=1e12, peak_flops=1e15,
                   board_power=500.0, interconnect_bandwidth=1e9, interconnect_latency=1e-5)


@pytest.mark.parametrize("batch", [4, 2.5])
def test_a_pipeline_layouts_energy_by_hand(batch):
    from rooflinekit.planning.fleet import _layout_energy_per_token
    # the group's step reads the weights and the KV (memory-bound, no overhead): T; the stage
    # hand-off sends batch × hidden bf16 activations: p; one micro-batch waits for both stages
    # and the hand-off: T_L = T + p. Two GPUs each draw 0.3 of 500 W the whole T_L and the
    # rest while their stage computes, half of T.
    t = (2e9 + 128 * batch * 1000) / 1e12
    handoff = batch * 32 * 2 / 1e9 + 1e-5
    t_layout = t + handoff
    expected = 2 * 500.0 * (0.3 * t_layout + 0.7 * t / 2) / batch
    got = _layout_energy_per_token(TINY, STAGE_GPU, batch, 1000, tp=1, pp=2)
    assert got == pytest.approx(expected, rel=1e-12)
    # above the single GPU's (no hand-off, no second board idling) by the idle draw alone
    single = rk.energy_per_token(TINY, STAGE_GPU, batch, 1000)
    assert got - float(single) == pytest.approx(500.0 * 0.3 * (2 * t_layout - t) / batch,
                                                rel=1e-9)


def test_a_layouts_energy_is_known_and_tp_rows_keep_theirs():
    base = rk.plan(TRAFFIC, SLO, models="Llama-3.1-8B", gpus="H100-SXM-80GB", tp=[1, 2],
                   max_num_seqs=16, electricity_price=0.1, **SMALL)
    layout = rk.plan(TRAFFIC, SLO, models="Llama-3.1-8B", gpus="H100-SXM-80GB", tp=[1, 2],
                     max_num_seqs=16, pp=[1, 2], electricity_price=0.1, **SMALL)
    for name in ("energy_per_token", "monthly_cost", "max_rate"):
        np.testing.assert_array_equal(layout[name].sel(pp=1).values, base[name].values,
                                      err_msg=name)
    staged = layout["energy_per_token"].sel(pp=2).values
    assert np.isfinite(staged).all() and (staged > 0).all()
