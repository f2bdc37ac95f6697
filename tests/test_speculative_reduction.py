"""Speculative decoding's reductions and a draft head's memory: what drafting nothing, accepting
nothing, and a head's weights, KV and prefill give, on the roofline clock."""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rooflinekit as rk
from rooflinekit import batching, catalog, memory
from rooflinekit.batching import ContinuousBatcher, Speculative, _kernels, _schema
from rooflinekit.batching._kernel_calls import _allocate
from rooflinekit.workloads import LogNormal, Workload
from tests.test_batching_kernels import ROOFLINE, roofline_batcher, workloads

MODEL, GPU = "Llama-3.1-8B", "H100-SXM-80GB"


def _draft(draft, model):
    if draft == "model":
        target = catalog.model(model)
        return dataclasses.replace(target, name="draft", n_layers=max(1, target.n_layers // 8),
                                   sliding_window=None, n_sliding_layers=None)
    return draft


def _raw(kernel, batcher, wl, draft_tokens):
    """``kernel`` on ``wl`` with ``batcher``'s inputs, ``draft_tokens`` drafted, gains of 1."""
    timing = batcher._timing()
    n = wl.n_requests
    out = _allocate(1, n)
    gain = np.ones(max(int(wl.output_tokens.sum()), 1), np.uint8)
    offset = (np.cumsum(wl.output_tokens) - wl.output_tokens).astype(np.int64)
    params = batcher._parameters()[:-2] + (draft_tokens, batcher._parameters()[-1])
    # the inputs as every caller passes them (one signature per kernel: no compile here)
    inputs = _kernels.kernel_inputs(wl.arrival, wl.prompt_tokens, wl.output_tokens, wl.priority,
                                    wl.prefix_group, wl.prefix_tokens, np.zeros(n, np.int64),
                                    gain, offset)
    error = kernel(*inputs, *params, timing.tick, timing.coef, timing.draft_coef,
                   timing.draft_share, 0.05, *(a[0] for a in out[:6]))
    return error, [a[0] for a in out[:6]]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(fractional=True, tiers=True), config=st.sampled_from(sorted(ROOFLINE)),
       max_num_seqs=st.integers(1, 8), extra=st.one_of(st.none(), st.integers(0, 30)),
       kv=st.integers(1, 300), admission=st.sampled_from(["reserve", "paged"]),
       draft=st.sampled_from([0.05, 1.0, "model"]))
def test_drafting_nothing_is_the_plain_kernel_on_the_roofline(wl, config, max_num_seqs, extra,
                                                              kv, admission, draft):
    # k = 0: the verification is one decode step, no draft step or prefill: plain, bit for bit
    c = ROOFLINE[config]
    wl = Workload(wl.arrival * 0.01, wl.prompt_tokens, wl.output_tokens, wl.priority)
    b = ContinuousBatcher(model=c["model"], gpu=c["gpu"], tp=c["tp"], max_num_seqs=max_num_seqs,
                          kv_budget_tokens=kv, admission=admission, block_size=4,
                          max_num_batched_tokens=None if extra is None else max_num_seqs + extra,
                          speculative=Speculative(draft=_draft(draft, c["model"]),
                                                  acceptance=0.0))
    tick = b._timing().tick
    spec = _raw(_kernels.continuous_kernel(tick, speculative=True), b, wl, 0)
    plain = _raw(_kernels.continuous_kernel(tick), b, wl, 0)
    assert spec[0] == plain[0] == 0
    for got, want in zip(spec[1], plain[1]):
        np.testing.assert_array_equal(got, want)


def test_drafting_nothing_is_a_decode_step():
    # the closed form's reduction, bit for bit, for a draft model and a head
    model, gpu = catalog.model("Llama-3.1-70B"), catalog.gpu(GPU)
    for draft in (catalog.model(MODEL), 0.05):
        for b, c in ((1, 0), (16, 2048), (256, 8192)):
            assert rk.speculative_step_time(model, gpu, b, c, 4, draft=draft, draft_tokens=0) \
                == rk.roofline.decode_step_time(model, gpu, b, c, 4)


def test_acceptance_zero_costs_the_verification_on_the_roofline():
    # α = 0 gains one token a step, but each step verifies k + 1 positions after k draft
    # steps: one request alone decodes in plain decoding's steps, each the speculative step
    model, gpu = catalog.model("guide-70b"), catalog.gpu("lab")
    wl = Workload([0.0], [100], [6])
    # the ideal roofline, as the formulas it is compared with
    plain = ContinuousBatcher(model=model, gpu=gpu, tp=8, engine=rk.IDEAL).run(wl)
    spec = ContinuousBatcher(model=model, gpu=gpu, tp=8, engine=rk.IDEAL, speculative=Speculative(
        draft=0.25, draft_tokens=3, acceptance=0.0)).run(wl)
    prefill = float(ContinuousBatcher(model=model, gpu=gpu, tp=8, engine=rk.IDEAL).run(
        Workload([0.0], [100], [1])).makespan)
    steps = sum(float(rk.speculative_step_time(model, gpu, 1, c, 8, draft=0.25,
                                               draft_tokens=3)) for c in range(101, 106))
    plain_steps = sum(float(rk.roofline.decode_step_time(model, gpu, 1, c, 8))
                      for c in range(101, 106))
    assert float(plain.makespan) == pytest.approx(prefill + plain_steps, rel=1e-9)
    # the head prefills the prompt too: its share of the target's prefill
    assert float(spec.makespan) == pytest.approx(1.25 * prefill + steps, rel=1e-9)
    assert float(spec.accepted_tokens) == 0 and float(spec.draft_tokens) == 3 * 5


def test_acceptance_zero_plans_below_plain_decoding_on_the_roofline():
    # the same gains as plain decoding at a higher cost a step: never a higher rate
    traffic = rk.Traffic(4.0, LogNormal(500, 0.5), LogNormal(200, 0.5))
    slo = rk.SLO(itl=0.01, ttft=0.5, quantile=0.5)
    # the ideal roofline: the ITL target is met by the physics, not by a profile's numbers
    kw = {"models": MODEL, "gpus": GPU, "tp": 1, "max_num_seqs": 64, "replicates": 3,
          "requests": 200, "seed": 1, "engine": rk.IDEAL}
    plain = rk.plan(traffic, slo, **kw)
    zero = rk.plan(traffic, slo, speculative=Speculative(draft=0.05, draft_tokens=4,
                                                         acceptance=0.0), **kw)
    assert 0 < float(zero["max_rate"].squeeze()) < float(plain["max_rate"].squeeze())


def test_a_heads_weights_are_its_share_of_the_layers():
    target = catalog.model(MODEL)
    head = Speculative(draft=0.05)
    layers = target.n_params - 2 * target.vocab_size * target.hidden_size     # untied
    assert head.weight_bytes(target) == pytest.approx(0.05 * layers * 2, rel=1e-12)
    assert head.weight_bytes(None) == 0.0
    tied = dataclasses.replace(target, tie_word_embeddings=True)
    assert head.weight_bytes(tied) == pytest.approx(
        0.05 * (target.n_params - target.vocab_size * target.hidden_size) * 2, rel=1e-12)
    assert Speculative(draft=target).weight_bytes(catalog.model("Llama-3.1-70B")) \
        == target.weight_bytes                        # a draft model's own, whole
    with pytest.raises(TypeError, match="model"):
        head.weight_bytes("Llama-3.1-8B")


def test_a_heads_weights_and_kv_come_off_the_budget():
    target, gpu = catalog.model(MODEL), catalog.gpu(GPU)
    head = Speculative(draft=0.05)
    plain = int(ContinuousBatcher(model=target, gpu=gpu)._kv_budget())
    weights = head.weight_bytes(target)
    tokens = int(np.asarray(memory.kv_budget_tokens(target, gpu, draft_weight_bytes=weights)))
    kv = float(target.kv_bytes_per_token)
    want = int(tokens * kv // (kv + 0.05 * kv))      # its layer's fraction of a token's KV
    assert ContinuousBatcher(model=target, gpu=gpu, speculative=head)._kv_budget() == want
    assert want < tokens < plain
    assert head.kv_tokens(target, 1000) == int(1000 * kv // (1.05 * kv)) == 952
    # the planner: the weights per rank off the memory before the blocks are counted
    engine = memory.engine_kv_cache(target, gpu, 2, block_size=16, max_model_len=16)
    blocks = int((engine["available_bytes"] - weights / 2) // engine["bytes_per_block"])
    assert batching.replica_kv_budget(target, gpu, 2, block_size=16, gpu_memory_utilization=0.9,
                                       speculative=head) == blocks * 16
    assert blocks * 16 < engine["kv_cache_tokens"]


def test_a_head_prefills_its_share_of_the_prompt():
    # one prefill and its token, nothing to decode: the head adds its share of the target's pass
    kw = {"model": "Llama-3.1-70B", "gpu": GPU, "tp": 4, "max_num_seqs": 4,
          "kv_budget_tokens": 4096}
    wl = Workload([0.0], [200], [1])
    plain = float(ContinuousBatcher(**kw).run(wl).makespan)
    head = float(ContinuousBatcher(speculative=Speculative(draft=0.1), **kw).run(wl).makespan)
    assert head == plain + 0.1 * plain
    tick = {"max_num_seqs": 4, "kv_budget_tokens": 4096}
    assert float(ContinuousBatcher(speculative=Speculative(draft=0.1), **tick).run(wl).makespan) \
        == float(ContinuousBatcher(**tick).run(wl).makespan)


def test_the_techniques_page_states_the_heads_memory():
    from pathlib import Path
    page = (Path(__file__).parents[1] / "docs" / "techniques.md").read_text()
    target, head = catalog.model(MODEL), Speculative(draft=0.05)
    assert f"{head.weight_bytes(target) / 1e9:.2f} GB of head weights" in page
    assert "(`f = 1.6` layers)" in page and 0.05 * target.n_layers == pytest.approx(1.6)
    assert "95.2 % of the context" in page
    assert round(head.kv_tokens(target, 10**6) / 1e4, 1) == 95.2


@pytest.mark.parametrize("tick", [True, False])
@pytest.mark.parametrize("speculative", [False, True])
def test_a_kernel_handed_the_other_clock_returns_wrong_clock(tick, speculative):
    # each kernel is compiled for one clock (its body prunes the other's code before typing)
    b = ContinuousBatcher(max_num_seqs=4) if tick else roofline_batcher(
        ROOFLINE[sorted(ROOFLINE)[0]], max_num_seqs=4)
    wl = Workload([0.0, 1.0], [4, 8], [3, 2])
    other = _kernels.continuous_kernel(not tick, speculative=speculative)
    assert _raw(other, b, wl, 1 if speculative else 0)[0] == _schema.WRONG_CLOCK
    own = _kernels.continuous_kernel(tick, speculative=speculative)
    assert _raw(own, b, wl, 1 if speculative else 0)[0] == 0
