"""Hostile numbers (issue 31): odd number types and huge or tiny magnitudes are converted at the
boundary or refused with a ValueError/TypeError naming the argument, never wrapped, kept as
float16 or turned into a crash deep inside. Each test reproduces one row of the issue."""

from __future__ import annotations

import numpy as np
import pytest

import rooflinekit as rk
from rooflinekit.cli.main import main

PLAN = ["plan", "llama-3.1-8b", "--gpus", "h100", "--prompt-mean", "1000", "--output-mean",
        "200", "--ttft", "1", "--replicates", "2", "--requests", "20"]


def one_line_error(capsys, argv, word):
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert word in err and "Traceback" not in err, err
    return err


# --- row 15: results that cannot be represented are refused, never wrapped --------------------

def test_plan_refuses_a_fleet_beyond_counting(capsys):
    # 1e25 requests/s needs ~8e23 replicas: int64 wrapped them to -9.2e18 and the decision
    # flipped to pay-as-you-go
    err = one_line_error(capsys, PLAN + ["--rate", "1e25"], "rate")
    assert "replicas" in err


def test_plan_api_refuses_a_fleet_beyond_counting():
    traffic = rk.Traffic(1e25, 1000, 200)
    with pytest.raises(ValueError, match="rate"):
        rk.plan(traffic, rk.SLO(ttft=1.0), models="llama-3.1-8b", gpus="h100", replicates=2,
                requests=20)


def test_disaggregated_refuses_a_fleet_beyond_counting(capsys):
    argv = ["disaggregated", "llama-3.1-8b", "--gpu", "h100", "--splits", "1P1D", "--rate",
            "1e25", "--prompt-mean", "200", "--output-mean", "50", "--itl", "0.05",
            "--replicates", "2", "--requests", "20"]
    one_line_error(capsys, argv, "rate")


# --- row 17: unsigned and small integers become int64 at the boundary -------------------------

@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.uint16, np.uint32, np.uint64])
def test_blocks_per_sequence_small_and_unsigned_integers(dtype):
    # ceil(100 / 16) = 7; uint8 200 gave 253 by unsigned wrap
    assert rk.blocks_per_sequence(np.array([100], dtype)).tolist() == [7]
    assert int(rk.blocks_per_sequence(dtype(100))) == 7
    assert rk.blocks_per_sequence(np.array([100], dtype)).dtype == np.int64


def test_blocks_per_sequence_uint8_and_uint64_do_not_wrap():
    assert rk.blocks_per_sequence(np.array([200], np.uint8)).tolist() == [13]
    assert rk.blocks_per_sequence(np.array([2**40], np.uint64)).tolist() == [2**36]
    assert rk.blocks_per_sequence(np.uint64(2**40)) == 2**36
    assert rk.blocks_per_sequence(np.array([200]), block_size=np.uint8(16)).tolist() == [13]


def test_plain_integers_unchanged():
    assert rk.blocks_per_sequence(np.array([200, 1, 0])).tolist() == [13, 1, 0]
    assert rk.blocks_per_sequence(200) == 13 and type(rk.blocks_per_sequence(200)) is int


# --- row 18: float16 inputs are computed in float64 -------------------------------------------

def test_cheapest_option_float16_volume():
    payg, prov = rk.PayAsYouGo(3.0, 12.0), rk.Provisioned(12_000.0, 4e9)
    narrow = rk.cheapest_option(np.float16(60000), [payg, prov], 0.1)
    wide = rk.cheapest_option(60000.0, [payg, prov], 0.1)
    assert narrow.name == wide.name == "pay-as-you-go"
    assert narrow.costs == wide.costs
    assert rk.cheapest_option(np.float32(6e4), [payg, prov], np.float16(0.1)).costs == \
        rk.cheapest_option(6e4, [payg, prov], float(np.float16(0.1))).costs


def test_kv_transfer_time_float16_bandwidth():
    model = rk.catalog.model("llama-3.1-8b")
    got = rk.parallel.kv_transfer_time(model, 1000, link_bandwidth=np.float16(6e4))
    assert got == rk.parallel.kv_transfer_time(model, 1000, link_bandwidth=float(np.float16(6e4)))
    assert np.isfinite(got)


def test_prefix_share_float16():
    from rooflinekit.pricing import techniques
    payg = rk.PayAsYouGo(3.0, 12.0, cached_input_per_mtok=0.3)
    share = np.float16(0.3)
    assert techniques.payg_cost_per_request(payg, 1000, 100, prefix_share=share) == \
        techniques.payg_cost_per_request(payg, 1000, 100, prefix_share=float(share))
    prov = rk.Provisioned(12_000.0, 4e9)
    assert rk.break_even(prov, payg, 0.1, prefix_share=share) == \
        rk.break_even(prov, payg, 0.1, prefix_share=float(share))


def test_price_spec_fields_float16():
    narrow = rk.PayAsYouGo(np.float16(3.0), np.float16(12.0))
    assert narrow.cost(np.float16(60000), 0.1) == rk.PayAsYouGo(3.0, 12.0).cost(60000.0, 0.1)


# --- row 12: whole-number floats and numpy integers become Python ints at the spec ------------

@pytest.mark.parametrize("value", [4.0, np.uint64(4), np.int8(4), np.float16(4), np.float32(4)])
def test_continuous_batcher_whole_number_fields(value):
    from rooflinekit.batching import ContinuousBatcher, StaticBatcher
    from rooflinekit.workloads import guide_workload
    wl = guide_workload()
    want = ContinuousBatcher(max_num_seqs=4, block_size=16, kv_budget_tokens=4096,
                             admission="paged").run(wl)
    got = ContinuousBatcher(max_num_seqs=value, block_size=value * 4,
                            kv_budget_tokens=4096.0, admission="paged").run(wl)
    assert type(ContinuousBatcher(max_num_seqs=value).max_num_seqs) is int
    assert got.equals(want)
    assert StaticBatcher(batch_size=value).run(wl).equals(StaticBatcher(batch_size=4).run(wl))


# --- row 26: cross_validate refuses more folds than rows ------------------------------------

CSV = str(__import__("pathlib").Path(__file__).parent / "data" / "measurements" / "public.csv")


def test_cross_validate_refuses_k_above_rows():
    from rooflinekit.calibrate import cross_validate, read_measurements
    runs = read_measurements(CSV)
    with pytest.raises(ValueError, match=r"k must .*at most"):
        cross_validate(runs, k=1000, phases=("decode",), fit={"decode": ["step_overhead"]})


def test_calibrate_cli_refuses_folds_above_rows(capsys):
    one_line_error(capsys, ["calibrate", CSV, "--resamples", "2", "--phase", "decode", "--fit",
                            "step_overhead", "--cv", "kfold", "--folds", "1000"], "--folds")


def test_one_kv_heads_per_rank_rule():
    # issue 31 row 27: 12 KV heads at tp 8 were 2 heads a rank to kv_copies and 1 to
    # engine_kv_cache; one rule now (padded shards: ceil(H / tp), at least one head)
    import rooflinekit as rk
    model = rk.ModelShape("kv12", n_layers=4, n_heads=24, n_kv_heads=12, head_dim=64,
                          n_params=1e9)
    gpu = rk.catalog.gpu("H100-SXM-80GB")
    per_rank = rk.engine_kv_cache(model, gpu, 8, max_model_len=16)["bytes_per_block"] / 16
    assert per_rank * 8 == pytest.approx(
        rk.kv_copies(model, 8) * rk.kv_bytes_per_token(model), rel=1e-12)
    assert per_rank == 2 * 2 * 64 * 2 * 4          # K and V, 2 heads, bf16, 4 layers


@pytest.mark.parametrize("argv", [
    ["plan", "llama-3.1-8b", "--gpus", "h100", "--rate", "1", "--prompt-mean", "500",
     "--output-mean", "100", "--spread", "50", "--ttft", "1"],
    ["simulate", "--workload", "lognormal", "--spread", "50"],
])
def test_a_spread_that_collapses_every_length_is_refused(argv, capsys):
    # issue 31 row 24: sigma 50 put every draw at one token (11,077 req/s against 443); the
    # log-normal's sigma is bounded where its median is still a sizeable share of its mean
    from rooflinekit.cli.main import main
    from rooflinekit.workloads import MAX_SIGMA, LogNormal
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "sigma" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(ValueError, match="sigma"):
        LogNormal(100, MAX_SIGMA * 1.01)
    LogNormal(100, MAX_SIGMA)
