"""Layouts beyond one tensor-parallel group: pipeline and expert parallelism, KV transfer.

Every expected value is worked out here from the model's published shape, not read back from
the library.
"""

import dataclasses

import numpy as np
import pytest

import rooflinekit as rk
from rooflinekit import catalog, units
from rooflinekit import parallel as p
from rooflinekit import roofline as r

H100 = catalog.gpu("H100-SXM-80GB")
H200 = catalog.gpu("H200-SXM-141GB")
L405 = catalog.model("Llama-3.1-405B")
L70 = catalog.model("Llama-3.1-70B")
DSV3 = catalog.model("DeepSeek-V3")
MIXTRAL = catalog.model("Mixtral-8x7B")


def test_405b_at_tp8_pp2_holds_a_sixteenth_of_the_weights_and_its_stage_kv():
    mem = rk.layout_memory(L405, H100, tp=8, pp=2)
    weights = 405_853_388_800 * 2 / 16                    # bf16 over 8 × 2 GPUs
    assert mem.weight_bytes == pytest.approx(weights, rel=1e-12)
    # a stage: 63 of 126 layers; a rank: 1 of the 8 KV heads; K and V of 128 bf16 values
    kv_per_token = 63 * 2 * 1 * 128 * 2
    assert mem.kv_bytes_per_token == pytest.approx(kv_per_token, rel=1e-12)
    usable = (80 * 2**30 - weights) * (1 - 0.10)
    assert mem.usable_kv_bytes == pytest.approx(usable, rel=1e-12)
    assert mem.n_gpus == 16


def test_the_same_405b_does_not_fit_one_node_without_the_pipeline():
    mem = rk.layout_memory(L405, H100, tp=8)
    assert mem.weight_bytes > 80 * 2**30 * 0.9 * 0.7            # 101.5e9 B of 85.9e9
    assert mem.usable_kv_bytes == 0.0


def test_kv_transfer_of_a_4000_token_prompt_of_llama_70b_over_50_gb_s():
    kv_per_token = 2 * 80 * 8 * 128 * 2                # 327,680 B = 320 KiB
    assert kv_per_token == 320 * 1024
    seconds = rk.kv_transfer_time(L70, 4000, link_bandwidth=50e9)
    assert seconds == pytest.approx(4000 * kv_per_token / 50e9, rel=1e-12)
    assert round(seconds * 1e3, 1) == 26.2
    assert rk.kv_transfer_time(L70, 4000, link_bandwidth=50e9, link_latency=1e-3) == \
        pytest.approx(seconds + 1e-3)
    # the catalogue's inter-node link for an H100 server: 400 Gb/s ConnectX-7 per GPU
    assert H100.network_bandwidth == 400e9 / 8
    assert rk.kv_transfer_time(L70, 4000, link_bandwidth=H100.network_bandwidth) == seconds


def test_pipeline_with_one_micro_batch_is_the_stages_summed():
    """Two stages of half the layers each, run one after the other, plus one hand-off."""
    model = rk.ModelShape("toy", n_layers=8, n_heads=16, n_kv_heads=4, head_dim=128,
                          n_params=8e9)
    half = dataclasses.replace(model, name="stage", n_layers=4, n_params=4e9, n_active_params=4e9)
    batch, context = 16, 2048
    stage = r.decode_step_time(half, H100, batch, context, 2)
    hand_off = batch * model.hidden_size * 2 / H100.network_bandwidth + H100.interconnect_latency
    itl = rk.layout_decode_step_time(model, H100, batch, context, tp=2, pp=2)
    assert itl == pytest.approx(2 * stage + hand_off, rel=1e-9)
    # never shorter than the group without the pipeline
    assert itl > r.decode_step_time(model, H100, batch, context, 2)


def test_layout_without_pipeline_or_experts_is_todays_step_exactly():
    for batch, context in [(1, 0), (32, 4096)]:
        assert rk.layout_decode_step_time(L70, H100, batch, context, tp=4) == \
            r.decode_step_time(L70, H100, batch, context, 4)
    assert rk.layout_prefill_time(L70, H100, 2000, tp=4) == r.prefill_time(L70, H100, 2000, 4)


def test_a_cached_prefix_passes_the_stages_only_as_its_computed_tokens():
    """4,000-token prompt, 3,000 cached, pp = 2: one hand-off of the 1,000 computed tokens'
    activations (8,192 wide, bf16) over the NIC, after the group's prefill of those tokens."""
    prompt, cached = 4000, 3000
    group = r.prefill_time(L70, H100, prompt, 4, cached_tokens=cached)
    hand_off = 1000 * 8192 * 2 / H100.network_bandwidth + H100.interconnect_latency
    t = rk.layout_prefill_time(L70, H100, prompt, tp=4, pp=2, cached_tokens=cached)
    assert t == pytest.approx(group + hand_off, rel=1e-12)
    # a fully cached prompt still hands one token's activations on
    full = rk.layout_prefill_time(L70, H100, prompt, tp=4, pp=2, cached_tokens=prompt)
    assert full == pytest.approx(r.prefill_time(L70, H100, prompt, 4, cached_tokens=prompt)
                                 + 8192 * 2 / H100.network_bandwidth
                                 + H100.interconnect_latency, rel=1e-12)
    # without a pipeline it is prefill_time's own
    assert rk.layout_prefill_time(L70, H100, prompt, tp=4, cached_tokens=cached) == group
    with pytest.raises(ValueError, match="cached_tokens"):
        rk.layout_prefill_time(L70, H100, prompt, tp=4, pp=2, cached_tokens=prompt + 1)
    with pytest.raises(ValueError, match="cached_tokens"):
        rk.layout_prefill_time(L70, H100, prompt, tp=4, pp=2, cached_tokens=-1)


def test_micro_batches_raise_throughput_not_single_sequence_speed():
    """Four micro-batches of the same size keep all four stages busy: the same ITL, 4× the rate."""
    batch, context = 64, 2048
    one = rk.layout_decode_step_time(L70, H100, batch, context, tp=2, pp=4)
    four = rk.layout_decode_step_time(L70, H100, 4 * batch, context, tp=2, pp=4,
                                      micro_batches=4)
    assert four == pytest.approx(one, rel=1e-9)
    assert 4 * batch / four == pytest.approx(4 * batch / one, rel=1e-9)
    # past pp micro-batches the stages are the bottleneck: a round is m stage times
    eight = rk.layout_decode_step_time(L70, H100, 8 * batch, context, tp=2, pp=4,
                                       micro_batches=8)
    stage = r.decode_step_time(L70, H100, batch, context, 2) / 4
    assert eight == pytest.approx(8 * stage, rel=1e-9)
    assert rk.pipeline_bubble(4, 1) == pytest.approx(3 / 4)
    assert rk.pipeline_bubble(4, 4) == pytest.approx(3 / 7)
    assert rk.pipeline_bubble(1, 1) == 0.0
    np.testing.assert_allclose(rk.pipeline_bubble(2, [1, 3]), [1 / 2, 1 / 4])


def test_deepseek_v3_all_to_all_bytes_per_layer_and_per_step():
    tokens, ep = 256, 8
    # dispatch + combine of 7168-wide bf16 activations to 8 experts; 7/8 leave the GPU
    per_layer = 2 * tokens * 7168 * 8 * 2 * (ep - 1) / ep
    assert per_layer == 51_380_224
    a2a = rk.expert_all_to_all_bytes(DSV3, tokens, ep=ep)
    assert a2a.per_layer == pytest.approx(per_layer, rel=1e-12)
    # 61 layers, the first 3 dense
    assert p.moe_layers(DSV3) == 58
    assert a2a.per_step == pytest.approx(58 * per_layer, rel=1e-12)
    assert rk.expert_all_to_all_bytes(DSV3, tokens, ep=1).per_step == 0.0


def test_expert_weights_spread_over_ep_with_attention_data_parallel():
    # routed experts: 256 of 2048-wide gated MLPs at 7168 over 58 layers, fp8
    experts = 256 * 3 * 7168 * 2048 * 58 * 1.0
    assert p.expert_weight_bytes(DSV3) == pytest.approx(experts, rel=1e-3)
    whole = DSV3.weight_bytes
    replicated = rk.layout_memory(DSV3, H200, dp=8)
    spread = rk.layout_memory(DSV3, H200, dp=8, ep=8)
    assert replicated.weight_bytes == pytest.approx(whole)
    assert spread.weight_bytes == pytest.approx(whole - experts + experts / 8, rel=1e-3)
    assert spread.usable_kv_bytes > 0 == replicated.usable_kv_bytes
    # Mixtral: 8 experts of 3 · 4096 · 14336 over 32 layers
    assert p.expert_weight_bytes(MIXTRAL) == pytest.approx(8 * 3 * 4096 * 14336 * 32 * 2,
                                                           rel=1e-9)


def test_expert_parallel_step_adds_the_all_to_all():
    batch = 64
    # the group's step with its experts over 4 groups, then the layout adds the all-to-all
    plain = rk.decode_step_time(MIXTRAL, H100, batch, 1024, 4, ep=4)
    ep = rk.layout_decode_step_time(MIXTRAL, H100, batch, 1024, tp=4, ep=4)
    sent = 2 * batch * 4096 * 2 * 2 * 3 / 4 * 32                   # bytes per step, all GPUs
    extra = sent / 4 / H100.interconnect_bandwidth + 2 * 32 * H100.interconnect_latency
    assert ep - plain == pytest.approx(extra, rel=1e-9)


@pytest.mark.parametrize("kwargs, dimension", [
    ({"pp": 4}, "pp must divide the model's 126 layers"),
    ({"tp": 3}, "tp must divide the model's 128 attention heads"),
    ({"tp": 16, "ep": 3}, "ep must be 1 for a dense model"),
    ({"tp": 8, "pp": 2, "n_gpus": 8}, "exceeds the n_gpus=8"),
    ({"tp": 2.5}, "tp must be a whole number"),
])
def test_layouts_that_do_not_divide_are_refused_naming_the_dimension(kwargs, dimension):
    with pytest.raises(ValueError, match=dimension):
        p.check_layout(L405, **kwargs)


def test_expert_layouts_must_divide_the_experts_and_the_stage():
    with pytest.raises(ValueError, match="ep must divide the model's 256 routed experts"):
        p.check_layout(DSV3, tp=8, ep=3)
    with pytest.raises(ValueError, match="ep must divide tp × dp"):
        p.check_layout(DSV3, tp=2, ep=4)
    with pytest.raises(ValueError, match="ep must divide the model's 8 routed experts"):
        rk.expert_all_to_all_bytes(MIXTRAL, 8, ep=16)
    with pytest.raises(ValueError, match="pp must divide"):
        rk.layout_memory(L405, H100, tp=8, pp=4)
    with pytest.raises(ValueError, match="pp must divide"):
        rk.layout_decode_step_time(L405, H100, 8, tp=8, pp=5)
    with pytest.raises(ValueError, match="batch_size must be at least micro_batches"):
        rk.layout_decode_step_time(L405, H100, 2, tp=8, pp=2, micro_batches=4)


def test_a_pipeline_over_an_unknown_link_asks_for_one():
    gpu = rk.GPU("bare", memory_bytes=80 * units.GiB, hbm_bandwidth=3e12, peak_flops=1e15)
    with pytest.raises(ValueError, match="pp=2 needs a link bandwidth"):
        rk.layout_decode_step_time(L70, gpu, 8, tp=1, pp=2, engine=rk.Engine(allreduce="guide"))
    assert rk.layout_decode_step_time(L70, gpu, 8, tp=1, pp=2, engine=rk.Engine(allreduce="guide"),
                                      p2p_bandwidth=50e9) > 0
