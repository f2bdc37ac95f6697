"""A hybrid model's recurrent state in the continuous-batching simulator (issue 29).

Linear-attention (Gated DeltaNet) and Mamba layers hold a constant state per running sequence
instead of a KV cache. The simulator charges each running sequence ``S`` tokens of the KV
budget for it (``state_tokens_per_sequence``; paged: ``ceil(S / block_size)`` blocks), taken at
admission and released at retirement or preemption (``rooflinekit.batching._reference``,
"Recurrent state"). Here: the kernels equal the reference bit for bit on random hybrid
workloads (every kernel copy: plain, speculative, disaggregated replicas, both clocks); no
request is lost; attention KV + state never exceed the budget at any step; a budget that holds
exactly N sequences with their state admits N; the charge of Qwen3-Next derived by hand from
its published config; and the planner's replicas limit concurrency by the state.
"""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_batching_kernels import assert_ended_as, assert_same, workloads
from test_batching_prefix import prefix_workloads
from test_disaggregated_kernel import assert_same as assert_disaggregated_same

from rooflinekit import SLO, Traffic, catalog, engine_memory, memory, planning
from rooflinekit.batching import ContinuousBatcher, DisaggregatedBatcher, Speculative
from rooflinekit.batching.batchers import _kernel_outputs
from rooflinekit.batching.clock import replica_kv_budget, replica_state_tokens
from rooflinekit.batching._schema import STAT
from rooflinekit.batching.results import REASON_KV_BUDGET
from rooflinekit.planning import fleet
from rooflinekit.workloads import Workload

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

slots = st.one_of(st.none(), st.integers(1, 8))
budgets = st.one_of(st.none(), st.integers(0, 400))
states = st.integers(0, 60)
admissions = st.sampled_from(["reserve", "paged"])

#: Qwen3-Next-80B-A3B, from its published config.json
#: (https://huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct/blob/main/config.json):
#: num_hidden_layers 48, full_attention_interval 4 -> 12 attention layers with
#: num_key_value_heads 2 of head_dim 256; 36 Gated DeltaNet layers with linear_num_key_heads 16,
#: linear_num_value_heads 32, linear_key_head_dim = linear_value_head_dim = 128,
#: linear_conv_kernel_dim 4; bf16 (2 bytes), the recurrent state in fp32 (4 bytes).
QWEN3_NEXT_ATTENTION_BYTES_PER_TOKEN = 12 * 2 * 2 * 256 * 2            # K and V: 24,576 B
QWEN3_NEXT_STATE_BYTES = 36 * (32 * 128 * 128 * 4                      # recurrent state
                               + (4 - 1) * (2 * 16 * 128 + 32 * 128) * 2)  # conv inputs


def _tick_batcher(max_num_seqs, kv, admission, block_size, state, extra=None, cap=None, **kw):
    mnbt = None if extra is None or max_num_seqs is None else max_num_seqs + extra
    return ContinuousBatcher(max_num_seqs=max_num_seqs, kv_budget_tokens=kv,
                             admission=admission, block_size=block_size,
                             max_num_batched_tokens=mnbt, interactive_cap=cap,
                             state_tokens_per_sequence=state, **kw)


# --- kernel == reference, bit for bit, with a state -------------------------------------------


@SETTINGS
@given(wl=workloads(tiers=True, fractional=True), max_num_seqs=slots, kv=budgets,
       admission=admissions, block_size=st.integers(1, 8), state=states,
       extra=st.one_of(st.none(), st.integers(0, 30)),
       cap=st.one_of(st.none(), st.integers(1, 3)))
def test_tick_kernel_matches_reference_with_state(wl, max_num_seqs, kv, admission, block_size,
                                                  state, extra, cap):
    b = _tick_batcher(max_num_seqs, kv, admission, block_size, state, extra, cap)
    assert_same(_kernel_outputs(b, wl), b.reference(wl))


@SETTINGS
@given(wl=prefix_workloads(tiers=True), max_num_seqs=slots, kv=st.integers(0, 400),
       block_size=st.integers(1, 8), state=states,
       extra=st.one_of(st.none(), st.integers(0, 30)))
def test_prefix_caching_kernel_matches_reference_with_state(wl, max_num_seqs, kv, block_size,
                                                            state, extra):
    b = _tick_batcher(max_num_seqs, kv, "paged", block_size, state, extra,
                      prefix_caching=True)
    assert_same(_kernel_outputs(b, wl), b.reference(wl))


@SETTINGS
@given(wl=workloads(tiers=True), max_num_seqs=slots, kv=st.integers(0, 400),
       admission=admissions, block_size=st.integers(1, 8), state=states, k=st.integers(1, 4),
       acceptance=st.floats(0, 1))
def test_speculative_kernel_matches_reference_with_state(wl, max_num_seqs, kv, admission,
                                                         block_size, state, k, acceptance):
    b = _tick_batcher(max_num_seqs, kv, admission, block_size, state,
                      speculative=Speculative(draft=0.1, draft_tokens=k, acceptance=acceptance))
    assert_same(_kernel_outputs(b, wl), b.reference(wl))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(tiers=True, fractional=True), max_num_seqs=slots,
       kv=st.integers(3144, 3144 * 8), admission=admissions,
       derived=st.booleans(), state=states)
def test_roofline_kernel_matches_reference_on_a_hybrid_model(wl, max_num_seqs, kv, admission,
                                                             derived, state):
    # Qwen3-Next's own charge (3,144 tokens, derived from the model) or a small one given
    wl = Workload(wl.arrival * 0.01, wl.prompt_tokens, wl.output_tokens, wl.priority)
    b = ContinuousBatcher(model="Qwen3-Next-80B-A3B", gpu="B200", max_num_seqs=max_num_seqs,
                          kv_budget_tokens=kv, admission=admission,
                          state_tokens_per_sequence=None if derived else state)
    assert b._state_tokens() == (3144 if derived else state)
    assert_same(_kernel_outputs(b, wl), b.reference(wl))


pools = st.builds(ContinuousBatcher, max_num_seqs=st.integers(1, 6),
                  kv_budget_tokens=st.one_of(st.none(), st.integers(1, 200)),
                  admission=admissions, block_size=st.integers(1, 8),
                  max_num_batched_tokens=st.one_of(st.none(), st.integers(6, 30)),
                  state_tokens_per_sequence=states)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(tiers=True), prefill=pools, decode=pools, x=st.integers(1, 3),
       y=st.integers(1, 3))
def test_disaggregated_kernel_matches_reference_with_state(wl, prefill, decode, x, y):
    d = DisaggregatedBatcher(prefill, decode, x, y, link_bandwidth=math.inf, link_latency=1)
    assert_disaggregated_same(d, wl)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(tiers=True), max_num_seqs=slots, kv=budgets, admission=admissions,
       block_size=st.integers(1, 8))
def test_a_state_of_zero_is_no_state(wl, max_num_seqs, kv, admission, block_size):
    # state 0 given runs exactly as the batcher without the field (today's simulator)
    plain = ContinuousBatcher(max_num_seqs=max_num_seqs, kv_budget_tokens=kv,
                              admission=admission, block_size=block_size)
    assert plain._state_tokens() == 0
    zero = _tick_batcher(max_num_seqs, kv, admission, block_size, 0)
    assert_same(_kernel_outputs(zero, wl), _kernel_outputs(plain, wl))


def test_a_model_without_recurrent_layers_has_no_state():
    llama = catalog.model("Llama-3.1-8B")
    assert llama.state_bytes_per_sequence == 0
    assert replica_state_tokens(llama) == 0
    assert ContinuousBatcher(model=llama, gpu="H100-SXM-80GB")._state_tokens() == 0


# --- no request lost; KV + state within the budget at every step ------------------------------


def _never_fits(prompt, output, kv, admission, block_size, state):
    """By hand: a request whose final length and state can never fit the budget."""
    prompt = max(prompt, 1)                       # an empty prompt is its start token
    if admission == "paged":
        blocks = -(-(prompt + output) // block_size) + -(-state // block_size)
        return blocks > kv // block_size
    return prompt + output + state > kv


@SETTINGS
@given(wl=workloads(tiers=True, fractional=True), max_num_seqs=slots,
       kv=st.integers(0, 400), admission=admissions, block_size=st.integers(1, 8),
       state=states, extra=st.one_of(st.none(), st.integers(0, 30)))
def test_no_request_lost_and_kv_plus_state_within_the_budget(wl, max_num_seqs, kv, admission,
                                                             block_size, state, extra):
    b = _tick_batcher(max_num_seqs, kv, admission, block_size, state, extra)
    assert_ended_as(b.run(wl), [_never_fits(int(p), int(o), kv, admission, block_size, state)
                                for p, o in zip(wl.prompt_tokens, wl.output_tokens)])
    # every step of the reference: reserved and used KV (attention + state) within the budget,
    # and each running sequence holding its state
    trace = []
    b.reference(wl, trace=trace)
    state_blocks = -(-state // block_size)
    for _, running, reserved, used in trace:
        assert reserved <= kv
        assert used <= kv
        assert used >= running * state
        held = running * (state_blocks * block_size if admission == "paged" else state)
        assert reserved >= held
    stats = _kernel_outputs(b, wl)["stats"]
    assert stats[STAT["peak_kv_reserved"]] <= kv
    assert stats[STAT["peak_kv_used"]] <= kv


# --- a budget of exactly N sequences with their state admits N --------------------------------


@pytest.mark.parametrize("n", [1, 3, 5])
def test_paged_budget_of_n_sequences_with_state_admits_n(n):
    # By hand, block size 16: a state of 100 tokens holds ceil(100 / 16) = 7 blocks; a prompt
    # of 30 and 2 output tokens holds ceil((30 + 1) / 16) = 2 blocks at admission and
    # ceil(32 / 16) = 2 at its end: 9 blocks a sequence, so 9n blocks (144n tokens) hold n.
    wl = Workload(np.zeros(10), np.full(10, 30), np.full(10, 2))
    fits = ContinuousBatcher(kv_budget_tokens=144 * n, admission="paged", block_size=16,
                             state_tokens_per_sequence=100)
    ds = fits.run(wl)
    assert int(ds["peak_running"]) == n
    assert np.sum(ds["admit"].values == 0.0) == n
    assert int(ds["n_preemptions"]) == 0
    assert int(ds["peak_kv_tokens"]) == 144 * n       # every block of the budget held
    short = ContinuousBatcher(kv_budget_tokens=144 * n - 1, admission="paged", block_size=16,
                              state_tokens_per_sequence=100)
    # (n = 1: 8 blocks hold no sequence, and every request is rejected)
    assert int(short.run(wl)["peak_running"]) == n - 1
    # without the state the same budget holds floor(9n / 2) sequences (all 10 for n = 5)
    stateless = ContinuousBatcher(kv_budget_tokens=144 * n, admission="paged", block_size=16)
    assert int(stateless.run(wl)["peak_running"]) == min(10, 9 * n // 2)


@pytest.mark.parametrize("n", [1, 3, 5])
def test_reserve_budget_of_n_sequences_with_state_admits_n(n):
    # By hand: each sequence reserves prompt + output + state = 30 + 2 + 100 = 132 tokens
    wl = Workload(np.zeros(10), np.full(10, 30), np.full(10, 2))
    ds = ContinuousBatcher(kv_budget_tokens=132 * n, state_tokens_per_sequence=100).run(wl)
    assert int(ds["peak_running"]) == n
    assert int(ds["peak_kv_tokens"]) == 132 * n
    short = ContinuousBatcher(kv_budget_tokens=132 * n - 1, state_tokens_per_sequence=100)
    assert int(short.run(wl)["peak_running"]) == n - 1


def test_a_request_whose_state_never_fits_is_rejected():
    # 30 + 2 tokens fit 40, but not with a state of 10 (42 > 40): rejected, not stalled
    wl = Workload([0.0, 0.0], [30, 5], [2, 2])
    ds = ContinuousBatcher(kv_budget_tokens=40, state_tokens_per_sequence=10).run(wl)
    assert list(ds["status"].values) == ["rejected", "completed"]
    assert ds["reason"].values[0] == REASON_KV_BUDGET


def test_preemption_releases_the_state():
    # paged, block 4, state 4 tokens (1 block), budget 5 blocks: two sequences of prompt 3
    # hold 1 + 1 blocks each at admission (4 of 5); the first decode step needs a block each
    # (context 4 -> 5) but one is free: the later one is preempted, freeing its 2 blocks,
    # and completes after the first retires
    wl = Workload([0.0, 0.0], [3, 3], [6, 6])
    b = ContinuousBatcher(kv_budget_tokens=20, admission="paged", block_size=4,
                          state_tokens_per_sequence=4)
    ds = b.run(wl)
    assert list(ds["preemptions"].values) == [0, 1]
    assert list(ds["status"].values) == ["completed", "completed"]
    assert_same(_kernel_outputs(b, wl), b.reference(wl))


# --- the charge of a real hybrid model, by hand from its config -------------------------------


def test_qwen3_next_state_charge_by_hand():
    model = catalog.model("Qwen3-Next-80B-A3B")
    assert model.kv_bytes_per_token == QWEN3_NEXT_ATTENTION_BYTES_PER_TOKEN == 24_576
    assert model.state_bytes_per_sequence == QWEN3_NEXT_STATE_BYTES == 77_266_944
    # 77,266,944 / 24,576 = 3,144 exactly: the state is 3,144 attention tokens
    assert replica_state_tokens(model) == 3144
    gpu = catalog.gpu("B200")
    assert replica_state_tokens(model, gpu, 1, gpu_memory_utilization=0.9) == 3144
    # vLLM's rule at TP4: 2 KV heads over 4 ranks are replicated, 1 a rank, 12,288 B a token
    # per rank; the state splits 4 ways: (77,266,944 / 4) / 12,288 = 1,572 tokens
    assert replica_state_tokens(model, gpu, 4, gpu_memory_utilization=0.9) == 1572
    # the guide's rule counts the whole model's KV per token at any tp
    assert replica_state_tokens(model, gpu, 4) == 3144
    # a draft head of 0.1 of the target's KV per token makes each budget token 1.1 times dearer
    head = Speculative(draft=0.1, draft_tokens=2)
    assert replica_state_tokens(model, speculative=head) == math.ceil(3144 / 1.1)


def test_qwen3_next_state_in_vllm_blocks():
    # vLLM sets Qwen3-Next's attention block to 16 * ceil(2,146,304 / (16 * 2,048)) = 1,056
    # tokens (one GDN layer's state; one attention layer's KV, 2 heads * 256 * 2 (K, V) * 2 B)
    # and gives a request one block in each of its 3 state groups (36 GDN layers in groups of
    # 12, the attention layers' count): 3 blocks. With that block size the charge is the same
    # 3 blocks: ceil(3,144 / 1,056) = 3.
    per_layer_state = QWEN3_NEXT_STATE_BYTES // 36
    attention_block = 16 * math.ceil(per_layer_state / (16 * 2 * 256 * 2 * 2))
    assert attention_block == 1056
    wl = Workload([0.0], [100], [10])
    b = ContinuousBatcher(model="Qwen3-Next-80B-A3B", gpu="B200", kv_budget_tokens=10 * 1056,
                          admission="paged", block_size=1056)
    ds = b.run(wl)
    # its 110 tokens in 1 block, its state in 3
    assert int(ds["peak_kv_tokens"]) == (1 + 3) * 1056


def test_qwen3_next_state_copies_under_vllms_rule():
    """Under vLLM's rule a request holds its state once in each state group, twice with prefix
    caching (vLLM's "align" mode) and once more for each drafted token (the states a rejected
    draft rolls back to; vllm/v1/kv_cache_interface.py, MambaSpec.max_memory_usage_bytes). At
    TP 1 a budget token is 24,576 B and the state 3,144 tokens: 6,288 with prefix caching,
    6,288 + 3 · 3,144 = 15,720 with 3 drafted tokens (a head of 0.02 of the target's KV makes
    each budget token 1.02 times dearer); the guide's rule keeps one copy. In vLLM's blocks of
    1,056 tokens these are 3, 6 and 15 blocks: engine_kv_cache's count of the same groups."""
    model, gpu = catalog.model("Qwen3-Next-80B-A3B"), catalog.gpu("H200-SXM-141GB")
    vllm = dict(gpu_memory_utilization=0.9)
    assert replica_state_tokens(model, gpu, 1, prefix_caching=True, **vllm) == 6288
    head = Speculative(draft=0.02, draft_tokens=3)
    both = replica_state_tokens(model, gpu, 1, prefix_caching=True, speculative=head, **vllm)
    assert both == math.ceil(5 * 77_266_944 / (24_576 * 1.02))
    assert replica_state_tokens(model, gpu, 1, prefix_caching=True, speculative=head) == \
        math.ceil(3144 / 1.02)
    for caching, draft, blocks in [(False, 0, 3), (True, 0, 6), (True, 3, 15)]:
        mode = "align" if caching else "none"
        out = memory.engine_kv_cache(model, gpu, max_model_len=1056, mamba_cache_mode=mode,
                                     num_speculative_tokens=draft)
        assert out["max_concurrency"] == out["num_blocks"] / (1 + blocks)
        plain = replica_state_tokens(model, gpu, 1, prefix_caching=caching,
                                     speculative=Speculative(draft=1e-9, draft_tokens=draft)
                                     if draft else None, **vllm)
        assert math.ceil(plain / 1056) == blocks
    # the batcher charges it: prefix caching on, the state's 6 blocks beside the prompt's 1
    wl = Workload([0.0], [100], [10])
    # (on a B200: 80B in bf16 leaves no KV budget on one H200)
    b = ContinuousBatcher(model=model, gpu="B200", gpu_memory_utilization=0.9, admission="paged",
                          prefix_caching=True)
    assert b._state_tokens() == 6288 and b._block_size() == 1056
    assert int(b.run(wl)["peak_kv_tokens"]) == (1 + 6) * 1056
    with pytest.raises(TypeError, match="prefix_caching"):
        replica_state_tokens(model, gpu, prefix_caching="yes")


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (1.5, ValueError),
                                        (float("nan"), ValueError), (float("inf"), ValueError),
                                        (2**60, ValueError), ("big", TypeError),
                                        (True, TypeError)])
def test_state_tokens_per_sequence_is_checked(bad, error):
    with pytest.raises(error, match="state_tokens_per_sequence"):
        ContinuousBatcher(state_tokens_per_sequence=bad)


def test_state_tokens_per_sequence_is_kept_as_int():
    assert type(ContinuousBatcher(state_tokens_per_sequence=np.int32(7))
                .state_tokens_per_sequence) is int
    assert ContinuousBatcher(state_tokens_per_sequence=8.0).state_tokens_per_sequence == 8


def test_guide_budget_admits_max_concurrent_sequences_of_a_hybrid_model():
    # The guide's rule (reserve admission, the budget from the model): each sequence reserves
    # its final length C and its state, C + 3,144 tokens of floor(usable / 24,576), which is
    # floor(usable / (24,576 C + 77,266,944)) sequences: memory.max_concurrent_sequences, exactly
    model, gpu = catalog.model("Qwen3-Next-80B-A3B"), catalog.gpu("B200")
    prompt, output = 1000, 24
    wl = Workload(np.zeros(600), np.full(600, prompt), np.full(600, output))
    b = ContinuousBatcher(model=model, gpu=gpu, max_num_seqs=None, clock="tick")
    assert b._state_tokens() == 3144
    want = int(memory.max_concurrent_sequences(model, gpu, prompt + output))
    assert 100 < want < 600                    # the memory binds, not the requests
    assert int(b.run(wl)["peak_running"]) == want
    # without the state, the same budget would hold 1 + 3,144 / 1,024 = 4.07 times as many
    stateless = ContinuousBatcher(model=model, gpu=gpu, max_num_seqs=None, clock="tick",
                                  state_tokens_per_sequence=0)
    assert int(stateless.run(wl)["peak_running"]) == 600


# --- the planner's replicas count the state -------------------------------------------------


def test_load_curve_of_qwen3_next_limits_concurrency_by_the_state(monkeypatch):
    # load_curve builds its replica as plan does (fleet._replica: a budget by vLLM's rule,
    # no new argument); the batcher it runs derives the state from the model.
    runs = []
    original = fleet.run_replicates

    def spy(batcher, *args, **kwargs):
        ds = original(batcher, *args, **kwargs)
        runs.append((batcher, args, kwargs, int(ds["peak_running"].max())))
        return ds
    monkeypatch.setattr(fleet, "run_replicates", spy)
    prompt, output = 2000, 50
    planning.load_curve(Traffic(1.0, prompt, output), SLO(ttft=10.0), model="Qwen3-Next-80B-A3B",
                        gpu="B200", rates=[2000.0], replicates=1, requests=400,
                        max_num_seqs=1024, engine_draws=0)
    ((batcher, args, kwargs, peak),) = runs
    model = catalog.model("Qwen3-Next-80B-A3B")
    budget = batcher.kv_budget_tokens
    # vLLM's block for it, by hand: one attention layer's page per token 2 * 2 * 256 * 2 =
    # 2,048 B must hold one Gated DeltaNet layer's state 77,266,944 / 36 = 2,146,304 B:
    # 16 * ceil(2,146,304 / (16 * 2,048)) = 16 * 66 = 1,056 tokens
    block = 16 * -(-(QWEN3_NEXT_STATE_BYTES // 36) // (16 * 2 * 2 * 256 * 2))
    assert block == batcher.block_size == 1056
    # less what vLLM keeps beside weights and KV (the default engine's footprint)
    kept = engine_memory(model, "B200", 1, max_num_seqs=1024)
    assert budget == replica_kv_budget(model, catalog.gpu("B200"), 1, gpu_memory_utilization=0.9,
                                       block_size=block,
                                       activation_peak_bytes=kept["activation_peak_bytes"],
                                       non_torch_bytes=kept["non_torch_bytes"])
    assert batcher._state_tokens() == 3144
    # By hand, in bytes: the budget holds B * 24,576 bytes; a running sequence holds at least
    # its prompt and first token's KV, (2,000 + 1) * 24,576 bytes, and its state, 77,266,944
    # bytes: at most floor(B / (2,001 + 3,144)) sequences run at once
    most = budget * QWEN3_NEXT_ATTENTION_BYTES_PER_TOKEN // (
        (prompt + 1) * QWEN3_NEXT_ATTENTION_BYTES_PER_TOKEN + QWEN3_NEXT_STATE_BYTES)
    assert peak <= most
    # ... which is memory.max_concurrent_sequences at that budget (its reserve set so that its
    # budget is the replica's), at the context each holds when admitted
    gpu = catalog.gpu("B200")
    reserve = 1.0 - budget * model.kv_bytes_per_token / (gpu.memory_bytes - model.weight_bytes)
    assert peak <= int(memory.max_concurrent_sequences(model, gpu, prompt + 1, reserve=reserve))
    # the state is what binds (within the block rounding of 1,056 tokens: each sequence holds
    # ceil(2,001 / 1,056) + ceil(3,144 / 1,056) = 2 + 3 blocks, vLLM's one state block in each
    # of its 3 state groups)
    total_blocks = budget // block
    assert peak == total_blocks // (2 + 3)
    assert peak >= 0.95 * most
    # the same replica without the state would run about twice as many
    stateless = ContinuousBatcher(**{**{f: getattr(batcher, f) for f in (
        "max_num_seqs", "kv_budget_tokens", "admission", "block_size", "max_num_batched_tokens",
        "model", "gpu", "tp", "clock", "engine")}, "state_tokens_per_sequence": 0})
    ds = original(stateless, *args, **kwargs)
    assert int(ds["peak_running"].max()) > 1.5 * most


def test_vllm_block_size_by_hand():
    """vLLM raises a hybrid model's attention block until one layer's page holds one layer's
    state (HybridAttentionMambaModelConfig): 16 * ceil(state per layer / (16 * page per token
    per layer)), both on one rank. Qwen3-Next-80B-A3B: a layer's state 2,146,304 B (above);
    its 2 KV heads of 256 in bf16 give 2,048 B a token at TP1, one head (1,024 B) from TP2
    (split) and on (replicated), while the state splits by tp."""
    from rooflinekit.batching import vllm_block_size
    model, gpu = catalog.model("Qwen3-Next-80B-A3B"), catalog.gpu("H100-SXM-80GB")
    state = QWEN3_NEXT_STATE_BYTES // 36
    for tp, page in ((1, 2048), (2, 1024), (4, 1024), (8, 1024)):
        by_hand = 16 * -(-(state // tp) // (16 * page))
        assert vllm_block_size(model, gpu, tp) == by_hand, tp
    assert [vllm_block_size(model, gpu, tp) for tp in (1, 2, 4, 8)] == [1056, 1056, 528, 272]
    assert vllm_block_size(model, gpu, 1, block_size=2048) == 2048    # a larger one is kept
    dense = catalog.model("Llama-3.1-8B")
    assert vllm_block_size(dense, gpu, 1) == 16 and vllm_block_size(dense, gpu, 2, block_size=32) == 32
    # the batcher holds KV in it under vLLM's rule only (the guide's rule keeps its block)
    vllm = ContinuousBatcher(model=model, gpu=gpu, admission="paged", gpu_memory_utilization=0.9)
    guide = ContinuousBatcher(model=model, gpu=gpu, admission="paged")
    assert vllm._block_size() == 1056 and guide._block_size() == 16
