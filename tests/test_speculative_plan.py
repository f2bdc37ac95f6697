"""Speculative decoding as an input of the planner: the search's common random numbers, the
draft's memory, the ITL-bound rate, self-consistency and the command line."""

import json

import numpy as np
import pytest

import rooflinekit as rk
from rooflinekit import batching, catalog, memory
from rooflinekit.batching import ContinuousBatcher, Speculative, run_replicates
from rooflinekit.cli.main import main
from rooflinekit.planning import capacity
from rooflinekit.workloads import LogNormal

MODEL, GPU = "Llama-3.1-8B", "H100-SXM-80GB"
HEAD = Speculative(draft=0.05, draft_tokens=4, acceptance=0.8)


def test_acceptance_zero_searches_as_plain_decoding():
    # α = 0 gains one token a step: on the tick clock (a draft costs nothing there) every run
    # of the search is the plain one, so the rates, the saturation and the bindings are equal
    traffic = rk.Traffic(1.0, 5, 20)
    draws = capacity.draw_requests(traffic, replicates=4, requests=300, seed=2)
    slo = rk.SLO(e2e=60, quantile=0.8)
    kw = {"max_num_seqs": 2, "clock": "tick", "kv_budget_tokens": 200, "admission": "paged",
          "block_size": 4}
    plain = capacity.max_rate(ContinuousBatcher(**kw), slo, draws)
    spec = capacity.max_rate(ContinuousBatcher(
        speculative=Speculative(draft=0.05, draft_tokens=3, acceptance=0.0), **kw), slo, draws)
    for key in ("max_rate", "saturation_rate", "kv_occupancy"):
        np.testing.assert_array_equal(spec[key], plain[key], err_msg=key)
    assert list(spec["binding"]) == list(plain["binding"])
    assert spec["runs"] == plain["runs"]


def test_search_steps_draw_each_replicates_own_gains():
    # a step runs a subset of the replicates: replicate r still draws from row_seed(r), so the
    # bracket holds when r is run alone with its seed (common random numbers across rates)
    traffic = rk.Traffic(1.0, 5, 20)
    draws = capacity.draw_requests(traffic, replicates=3, requests=400, seed=0)
    spec = Speculative(draft=0.05, draft_tokens=4, acceptance=0.7, seed=3)
    batcher = ContinuousBatcher(max_num_seqs=2, clock="tick", speculative=spec)
    found = capacity.max_rate(batcher, rk.SLO(e2e=30, quantile=0.8), draws, rtol=0.01)
    arrival, prompt, output = draws
    assert (found["max_rate"] > 0).all()
    for r, rate in enumerate(found["max_rate"]):
        row = {"speculative_seeds": [spec.row_seed(r)], "e2e_target": 30}
        at = run_replicates(batcher, arrival[r:r + 1] / rate, prompt[r:r + 1], output[r:r + 1],
                            **row)
        above = run_replicates(batcher, arrival[r:r + 1] / (rate * 1.02), prompt[r:r + 1],
                               output[r:r + 1], **row)
        assert float(at["e2e_attainment"][0]) >= 0.8
        assert float(above["e2e_attainment"][0]) < 0.8 or rate == found["saturation_rate"][r]
    with pytest.raises(ValueError, match="speculative_seeds"):
        run_replicates(batcher, arrival, prompt, output, speculative_seeds=[spec.row_seed(0)])


def test_speculation_raises_the_itl_bound_rate():
    # at the median gap, a step's gained tokens (gaps of 0) carry the ITL target
    traffic = rk.Traffic(4.0, LogNormal(500, 0.5), LogNormal(200, 0.5))
    slo = rk.SLO(itl=0.006, quantile=0.5)
    kw = {"models": MODEL, "gpus": GPU, "tp": 1, "max_num_seqs": 128, "replicates": 4,
          "requests": 300, "seed": 1}
    plain = rk.plan(traffic, slo, **kw)
    spec = rk.plan(traffic, slo, speculative=HEAD, **kw)
    assert set(plain["binding"].values.ravel()) == {"itl"}
    assert float(spec["max_rate"].squeeze()) > 1.3 * float(plain["max_rate"].squeeze())
    # a draft head's weights come off each replica's memory (its KV then shares the blocks),
    # beside what vLLM keeps there at 128 sequences
    kept = rk.engine_memory(catalog.model(MODEL), GPU, 1, max_num_seqs=128)
    head = batching.replica_kv_budget(catalog.model(MODEL), catalog.gpu(GPU), 1, block_size=16,
                                       gpu_memory_utilization=0.9, speculative=HEAD,
                                       activation_peak_bytes=kept["activation_peak_bytes"],
                                       non_torch_bytes=kept["non_torch_bytes"])
    assert int(spec["kv_budget_tokens"].squeeze()) == head
    assert head < int(plain["kv_budget_tokens"].squeeze())
    assert spec.attrs["speculative_draft"] == 0.05
    assert spec.attrs["num_speculative_tokens"] == 4
    assert spec.attrs["speculative_acceptance"] == 0.8
    assert "speculative_draft" not in plain.attrs


def test_a_draft_models_weights_and_kv_come_off_the_budget():
    target, draft, gpu = catalog.model("Llama-3.1-70B"), catalog.model(MODEL), catalog.gpu(GPU)
    spec = Speculative(draft=draft)
    got = batching.replica_kv_budget(target, gpu, 4, block_size=16, gpu_memory_utilization=0.9,
                                      speculative=spec)
    plain = memory.engine_kv_cache(target, gpu, 4, block_size=16, max_model_len=16)
    # by hand: the draft's weights per rank off the memory
    blocks = int((plain["available_bytes"] - draft.weight_bytes / 4) // plain["bytes_per_block"])
    assert got == blocks * 16 < plain["kv_cache_tokens"]
    assert batching.replica_kv_budget(target, gpu, 4, block_size=16,
                                       gpu_memory_utilization=0.9) == plain["kv_cache_tokens"]
    # ... and its KV in the same blocks: each token of context costs both models' bytes
    shared = spec.kv_tokens(target, got)
    per_token = target.kv_bytes_per_token + draft.kv_bytes_per_token
    assert shared == int(got * target.kv_bytes_per_token // per_token) < got
    batcher = ContinuousBatcher(model=target, gpu=gpu, tp=4, kv_budget_tokens=got,
                                admission="paged", speculative=spec)
    assert batcher._kv_budget() == shared
    kv = target.kv_bytes_per_token                    # a head's KV: its share of the target's
    assert HEAD.kv_tokens(target, got) == int(got * kv // (kv + 0.05 * kv)) < got
    # a draft too large for what the target leaves: no KV at all
    huge = catalog.model("Llama-3.1-405B")
    assert batching.replica_kv_budget(target, gpu, 4, block_size=16,
                                       gpu_memory_utilization=0.9,
                                       speculative=Speculative(draft=huge)) == 0
    with pytest.raises(ValueError, match="budget_tokens"):
        spec.kv_tokens(target, -1)
    with pytest.raises(TypeError, match="model"):
        spec.kv_tokens("Llama-3.1-70B", 10)


def test_the_draft_model_prefills_the_prompts():
    # one request, prompt 200: the prefill step adds the draft's step of those 200 tokens
    target, draft = catalog.model("Llama-3.1-70B"), catalog.model(MODEL)
    # the ideal roofline, as the step-cost formulas it is compared with
    kw = {"model": target, "gpu": GPU, "tp": 4, "max_num_seqs": 4, "engine": rk.IDEAL}
    wl = rk.Workload([0.0], [200], [1])         # a prefill and its token, nothing to decode
    plain = ContinuousBatcher(**kw).run(wl)
    spec = ContinuousBatcher(speculative=Speculative(draft=draft), **kw).run(wl)
    head = ContinuousBatcher(speculative=Speculative(draft=0.1), **kw).run(wl)
    cost = rk.roofline.step_cost_coefficients(draft, catalog.gpu(GPU), tp=4)
    fa, window = cost.full_attention_fraction, cost.sliding_window
    own = rk.roofline.mixed_step_time_kernel(
        *(float(c) for c in cost), 0.0, 200.0,
        rk.roofline.kv_tokens_read_kernel(0.0, fa, window),
        rk.roofline.prefill_context_tokens_kernel(200.0, 0.0, fa, window), 200.0)
    assert float(spec.makespan) == float(plain.makespan) + own > float(plain.makespan)
    # a head prefills too: its share of the target's pass
    assert float(head.makespan) == float(plain.makespan) + 0.1 * float(plain.makespan)


def test_speculative_plan_is_self_consistent():
    # as for a plain plan: independent runs (other requests, other acceptance draws) at
    # 0.85 × max_rate meet the SLO and at 1.3 × miss it, in most seeds
    traffic = rk.Traffic(4.0, LogNormal(1000, 0.5), LogNormal(200, 0.5))
    slo = rk.SLO(ttft=0.5, itl=0.02, quantile=0.9)
    ds = rk.plan(traffic, slo, models=MODEL, gpus=GPU, tp=1, max_num_seqs=64, replicates=8,
                 requests=400, seed=5, speculative=HEAD)
    rate = float(ds["max_rate"].squeeze())
    assert rate > 0
    budget = int(ds["kv_budget_tokens"].squeeze())
    met = {0.85: 0, 1.3: 0}
    for factor in met:
        for seed in range(100, 110):
            batcher = ContinuousBatcher(
                max_num_seqs=64, kv_budget_tokens=budget, admission="paged", model=MODEL,
                gpu=GPU, clock="roofline",
                speculative=Speculative(draft=0.05, draft_tokens=4, acceptance=0.8, seed=seed))
            run = batcher.run(traffic.workload(400, rate=rate * factor).sample(seed),
                              ttft_target=slo.ttft, itl_target=slo.itl)
            ttft_share = float((run["ttft"] <= slo.ttft).sum()) / run.sizes["request"]
            met[factor] += ttft_share >= slo.quantile and \
                float(run["token_itl_attainment"]) >= slo.quantile
    assert met[0.85] >= 7 and met[1.3] <= 3, met


def test_plan_refuses_a_bad_speculative_before_work():
    traffic = rk.Traffic(1.0, 100, 10)
    with pytest.raises(TypeError, match="speculative"):
        rk.plan(traffic, rk.SLO(ttft=1), models=MODEL, gpus=GPU, speculative=0.05)
    with pytest.raises(ValueError, match="vocabulary|vocab"):
        rk.plan(traffic, rk.SLO(ttft=1), models=MODEL, gpus=GPU,
                speculative=Speculative(draft="Mistral-7B-v0.1"))


def test_cli_plan_decodes_speculatively(capsys):
    argv = ["plan", "llama-3.1-8b", "--gpus", "h100", "--rate", "5", "--prompt-mean", "300",
            "--output-mean", "100", "--itl", "0.006", "--quantile", "0.5", "--replicates", "2",
            "--requests", "100", "--json"]
    assert main(argv) == 0
    plain = json.loads(capsys.readouterr().out)
    spec_flags = ["--speculative-draft", "0.05", "--num-speculative-tokens", "4",
                  "--acceptance", "0.8"]
    assert main(argv + spec_flags) == 0
    spec = json.loads(capsys.readouterr().out)
    assert spec["configurations"][0]["max_rate"] > plain["configurations"][0]["max_rate"]
    assert main(argv[:-1] + spec_flags) == 0
    assert "speculative decoding: draft 0.05, 4 tokens a step" in capsys.readouterr().out


# --- capacity with a shared prefix held once -----------------------------------------------------

def test_cli_capacity_counts_a_shared_prefix_once(capsys):
    base = ["capacity", "llama-3.1-8b", "h100", "--max-model-len", "4096", "--json"]
    model, gpu = catalog.model(MODEL), catalog.gpu("h100")
    per_token = float(memory.kv_bytes_per_token(model))           # 131,072 B
    assert main(base + ["--prefix-tokens", "2048"]) == 0
    one = json.loads(capsys.readouterr().out)
    # the engine's budget B (vLLM's rule, the default): the 2,048-token prefix held once, each
    # sequence its other 2,048 tokens
    budget = one["kv_budget_gib"] * 2**30
    assert one["prefix_max_concurrent_sequences"] == int(
        (budget - 2048 * per_token) // (2048 * per_token))
    assert one["prefix_max_concurrent_sequences"] > one["max_concurrent_sequences"]
    assert main(base + ["--prefix-tokens", "2048", "--prefix-groups", "4",
                        "--prefix-share", "0.8"]) == 0
    mixed = json.loads(capsys.readouterr().out)
    want = int((budget - 4 * 2048 * per_token)
               // (0.8 * 2048 * per_token + 0.2 * 4096 * per_token))
    assert mixed["prefix_max_concurrent_sequences"] == want
    assert one["max_concurrent_sequences"] < want < one["prefix_max_concurrent_sequences"]
    # the guide's rule counts in the guide's budget
    assert main(base + ["--prefix-tokens", "2048", "--workspace-fraction", "0.1"]) == 0
    assert json.loads(capsys.readouterr().out)["prefix_max_concurrent_sequences"] == int(
        memory.max_concurrent_sequences(model, gpu, 4096, shared_prefix_tokens=2048))
    assert main(base) == 0
    assert "prefix_max_concurrent_sequences" not in json.loads(capsys.readouterr().out)


def test_concurrency_of_prefix_groups_and_shares_by_hand():
    model, gpu = catalog.model(MODEL), catalog.gpu(GPU)
    budget = float(memory.usable_kv_bytes(model, gpu))
    per_token = float(memory.kv_bytes_per_token(model))
    # 3 prefixes of 1,000 tokens (992 in whole blocks), 60 % of 3,000-token sequences on one
    got = memory.max_concurrent_sequences(model, gpu, 3000, shared_prefix_tokens=1000,
                                          prefix_groups=3, prefix_share=0.6)
    shared = 992 * per_token
    want = (budget - 3 * shared) // (0.6 * (3000 * per_token - shared)
                                     + 0.4 * 3000 * per_token)
    assert int(got) == int(want)
    # share 0 is no prefix at all, less the prefixes' own blocks
    none = memory.max_concurrent_sequences(model, gpu, 3000, shared_prefix_tokens=1000,
                                           prefix_share=0.0)
    assert int(none) == int((budget - shared) // (3000 * per_token))
    for kwargs, match in (({"prefix_groups": 0}, "prefix_groups"),
                          ({"prefix_share": 1.5}, "prefix_share")):
        with pytest.raises(ValueError, match=match):
            memory.max_concurrent_sequences(model, gpu, 3000, shared_prefix_tokens=1000,
                                            **kwargs)


def test_a_derived_budget_takes_the_draft_models_weights_off_the_memory():
    """Llama-3.1-70B on 4 x H100 with Llama-3.1-8B as draft, the budget derived by the batcher:
    (4 x memory - W_target - W_draft) x (1 - reserve) over the target's KV per token, floored
    (guide §2.4's rule with the draft's weights beside the target's), then shared with the
    draft's KV in proportion kv_t / (kv_t + kv_d). Written out from the spec fields."""
    import math

    from rooflinekit import catalog
    from rooflinekit.batching import ContinuousBatcher, Speculative, run_replicates
    target, draft = catalog.model("Llama-3.1-70B"), catalog.model("Llama-3.1-8B")
    gpu = catalog.gpu("H100-SXM-80GB")
    spec = Speculative(draft=draft, draft_tokens=4, acceptance=0.8)
    batcher = ContinuousBatcher(8, model=target, gpu=gpu, tp=4, clock="roofline",
                                admission="paged", speculative=spec)
    weights = lambda m: m.n_params * m.bytes_per_param        # noqa: E731
    usable = (4 * gpu.memory_bytes - weights(target) - weights(draft)) * (1 - 0.1)
    tokens = math.floor(usable / target.kv_bytes_per_token)
    shared = math.floor(tokens * target.kv_bytes_per_token
                        / (target.kv_bytes_per_token + draft.kv_bytes_per_token))
    ds = run_replicates(batcher, [[0.0, 0.1]], [[16, 16]], [[4, 4]])
    assert int(ds.attrs["kv_budget_tokens"]) == shared
