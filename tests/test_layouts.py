"""rooflinekit.layouts: every layout of a model on N GPUs, its memory, ITL and throughput.

Hand-computed references: the layouts of Llama-3.1-8B (32 layers, 32 heads, 8 KV heads) on 8
GPUs enumerated by hand; Llama-3.1-405B bf16 at tp = 8, pp = 2 (126 layers, 8 KV heads of 128,
bf16) holds 1/16 of the weights and 63 · 2 · 128 · 2 = 32,256 KV bytes per token per GPU.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import rooflinekit as rk
from rooflinekit import catalog

H100 = catalog.gpu("H100-SXM-80GB")
L8B = catalog.model("Llama-3.1-8B")


def test_every_layout_of_8b_on_8_gpus():
    ds = rk.layouts(L8B, H100, 8, batch_size=64, context_length=4096)
    got = {(int(t), int(p), int(d)) for t, p, d in zip(ds.tp.values, ds.pp.values, ds.dp.values)}
    # tp in 1, 2, 4, 8 (divides 32 heads, 8 KV heads); pp divides 8 / tp and 32 layers
    by_hand = {(1, 1, 8), (1, 2, 4), (1, 4, 2), (1, 8, 1), (2, 1, 4), (2, 2, 2), (2, 4, 1),
               (4, 1, 2), (4, 2, 1), (8, 1, 1)}
    assert got == by_hand
    assert (ds.ep.values == 1).all()
    assert (ds.tp * ds.pp * ds.dp == 8).all()


def test_one_stage_rows_are_the_tensor_parallel_step():
    ds = rk.layouts(L8B, H100, 8, batch_size=64, context_length=4096, prompt_tokens=2000)
    for row in np.flatnonzero(ds.pp.values == 1):
        tp, dp = int(ds.tp[row]), int(ds.dp[row])
        itl = rk.decode_step_time(L8B, H100, 64, 4096, tp)
        assert float(ds.decode_step_time[row]) == pytest.approx(float(itl), rel=1e-12)
        assert float(ds.prefill_time[row]) == pytest.approx(
            float(rk.prefill_time(L8B, H100, 2000, tp)), rel=1e-12)
        assert float(ds.fleet_tokens_per_second[row]) == pytest.approx(dp * 64 / float(itl))
        assert float(ds.tokens_per_second_per_gpu[row]) == pytest.approx(
            dp * 64 / float(itl) / 8)


def test_405b_on_16_gpus_fits_only_across_two_stages():
    model = catalog.model("Llama-3.1-405B")
    ds = rk.layouts(model, H100, 16, batch_size=32, context_length=4096)
    fitting = [(int(ds.tp[i]), int(ds.pp[i])) for i in np.flatnonzero(ds.fits.values)]
    assert fitting == [(8, 2)]
    row = int(np.flatnonzero(ds.fits.values)[0])
    weights = model.weight_bytes / 16
    assert float(ds.weight_bytes_per_gpu[row]) == pytest.approx(weights, rel=1e-12)
    kv_per_token = 63 * 2 * 128 * 2          # a stage's layers, one KV head per GPU, bf16
    budget = math.floor((H100.memory_bytes - weights) * (1 - 0.10) / kv_per_token)
    assert int(ds.kv_budget_tokens[row]) == budget
    assert int(ds.max_concurrent_sequences[row]) == budget // 4096


def test_moe_layouts_spread_experts_within_a_replica():
    mixtral = catalog.model("Mixtral-8x7B")
    ds = rk.layouts(mixtral, H100, 8, batch_size=16, context_length=1024)
    assert (ds.tp.values % ds.ep.values == 0).all()
    assert set(ds.ep.values[ds.tp.values == 8]) == {1, 2, 4, 8}
    deepseek = catalog.model("DeepSeek-V3")       # 61 layers: no pipeline split divides them
    assert set(rk.layouts(deepseek, H100, 16).pp.values) == {1}


def test_labels_and_units():
    ds = rk.layouts(L8B, H100, 4, batch_size=8)
    for name in ds.data_vars:
        assert ds[name].attrs["units"] and ds[name].attrs["long_name"], name
    assert "prefill_time" not in ds           # only with prompt_tokens
    assert ds.attrs["n_gpus"] == 4


@pytest.mark.parametrize("kwargs, word", [
    ({"n_gpus": 0}, "n_gpus"),
    ({"n_gpus": 2**21}, "n_gpus"),
    ({"n_gpus": 4, "batch_size": 2, "micro_batches": 4}, "micro_batches"),
    ({"n_gpus": 4, "context_length": -1}, "context_length"),
    ({"n_gpus": 4, "max_tp": 0}, "max_tp"),
])
def test_bad_input(kwargs, word):
    with pytest.raises(ValueError, match=word):
        rk.layouts(L8B, H100, **kwargs)
