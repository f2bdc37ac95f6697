"""Sliding-window layers paged as vLLM's hybrid KV-cache manager pages them.

A model with sliding-window (or chunked-local) layers beside its full-attention ones holds, under
paged admission, every token's KV in its full layers but only the window's last blocks in its
sliding ones (``rooflinekit.batching._reference``, "Sliding-window layers";
:func:`rooflinekit.batching.replica_kv_window`). Here: the kernels equal the reference bit for
bit with a window (every kernel copy: plain, prefill apart, prefix caching, disaggregated
replicas, both clocks); no request is lost and the KV held never passes the budget at any step;
a window no sequence reaches is no window; a budget that holds exactly N windowed sequences
(counted by hand) admits N; gpt-oss's units and window from its published config; and a
planner's replica of gpt-oss holds the long prompts vLLM's own log says it does.
"""

import csv
import dataclasses
import json
import math
import pathlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_batching_kernels import assert_ended_as, assert_same, workloads
from test_batching_prefix import prefix_workloads
from test_disaggregated_kernel import assert_same as assert_disaggregated_same

from rooflinekit import catalog, memory
from rooflinekit.batching import (ContinuousBatcher, DisaggregatedBatcher, Speculative,
                                  replica_kv_window)
from rooflinekit.batching._schema import STAT, UNLIMITED
from rooflinekit.batching.batchers import _kernel_outputs
from rooflinekit.workloads import Workload

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclasses.dataclass(frozen=True)
class _Windowed(ContinuousBatcher):
    """A batcher with a ``kv_window`` given, not derived from a model (for tick-clock tests)."""

    kv_window: tuple = dataclasses.field(default=(1, 0, UNLIMITED, 1), kw_only=True)

    def _kv_window(self):
        return self.kv_window


@st.composite
def windows(draw):
    """``(full_units, sliding_units, window_blocks, block_units)``; a block of the budget of
    up to two units fewer than a block of context takes (vLLM's padded groups); a window of 0
    blocks (SGLang's full pool, its sliding layers in a pool of their own)."""
    full, sliding = draw(st.integers(0, 3)), draw(st.integers(1, 4))
    return (full, sliding, draw(st.integers(0, 6)),
            draw(st.integers(max(1, full + sliding - 2), full + sliding)))
slots = st.one_of(st.none(), st.integers(1, 8))


def _batcher(window, max_num_seqs, kv, block_size, extra=None, cap=None, **kw):
    mnbt = None if extra is None or max_num_seqs is None else max_num_seqs + extra
    return _Windowed(max_num_seqs=max_num_seqs, kv_budget_tokens=kv, admission="paged",
                     block_size=block_size, max_num_batched_tokens=mnbt, interactive_cap=cap,
                     kv_window=window, **kw)


# --- kernel == reference, bit for bit, with a window ------------------------------------------


@SETTINGS
@given(wl=workloads(tiers=True, fractional=True), window=windows(), max_num_seqs=slots,
       kv=st.integers(0, 400), block_size=st.integers(1, 8),
       extra=st.one_of(st.none(), st.integers(0, 30)), cap=st.one_of(st.none(), st.integers(1, 3)),
       state=st.integers(0, 20), mixed=st.booleans())
def test_tick_kernel_matches_reference_with_a_window(wl, window, max_num_seqs, kv, block_size,
                                                     extra, cap, state, mixed):
    b = _batcher(window, max_num_seqs, kv, block_size, extra, cap,
                 state_tokens_per_sequence=state, mixed_prefill=mixed)
    assert_same(_kernel_outputs(b, wl), b.reference(wl))
    arrived = np.floor(0.5 * wl.prompt_tokens).astype(np.int64)
    assert_same(_kernel_outputs(b, wl, arrived_kv_tokens=arrived),
                b.reference(wl, arrived_kv_tokens=arrived))


@SETTINGS
@given(wl=prefix_workloads(tiers=True), window=windows(), max_num_seqs=slots,
       kv=st.integers(0, 400), block_size=st.integers(1, 8),
       extra=st.one_of(st.none(), st.integers(0, 30)))
def test_prefix_caching_kernel_matches_reference_with_a_window(wl, window, max_num_seqs, kv,
                                                               block_size, extra):
    b = _batcher(window, max_num_seqs, kv, block_size, extra, prefix_caching=True)
    assert_same(_kernel_outputs(b, wl), b.reference(wl))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(tiers=True, fractional=True), max_num_seqs=slots,
       kv=st.integers(0, 2000), extra=st.one_of(st.none(), st.integers(0, 300)),
       mixed=st.booleans())
def test_roofline_kernel_matches_reference_on_gpt_oss(wl, max_num_seqs, kv, extra, mixed):
    # gpt-oss-20b's own window (1, 1, 9 blocks of 16), on the roofline clock
    wl = Workload(wl.arrival * 0.01, wl.prompt_tokens * 5, wl.output_tokens * 5, wl.priority)
    mnbt = None if extra is None or max_num_seqs is None else max_num_seqs + extra
    b = ContinuousBatcher(model="gpt-oss-20b", gpu="H100-SXM-80GB", max_num_seqs=max_num_seqs,
                          kv_budget_tokens=kv, admission="paged", max_num_batched_tokens=mnbt,
                          mixed_prefill=mixed)
    assert b._kv_window() == (1, 1, 9, 2)
    assert_same(_kernel_outputs(b, wl), b.reference(wl))


@SETTINGS
@given(wl=workloads(tiers=True), window=windows(), max_num_seqs=slots,
       kv=st.integers(0, 400), block_size=st.integers(1, 8),
       extra=st.one_of(st.none(), st.integers(0, 30)), k=st.integers(1, 6),
       alpha=st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0, 1)), seed=st.integers(0, 3))
def test_tick_speculative_kernel_matches_reference_with_a_window(wl, window, max_num_seqs, kv,
                                                                 block_size, extra, k, alpha,
                                                                 seed):
    # a step's gain of up to k + 1 tokens takes its blocks in units: several blocks at once,
    # the sliding ones only up to the window (and withdrawn again where a sequence is preempted)
    b = _batcher(window, max_num_seqs, kv, block_size, extra,
                 speculative=Speculative(draft=0.1, draft_tokens=k, acceptance=alpha,
                                         seed=seed))
    assert_same(_kernel_outputs(b, wl), b.reference(wl))
    arrived = np.floor(0.5 * wl.prompt_tokens).astype(np.int64)
    assert_same(_kernel_outputs(b, wl, arrived_kv_tokens=arrived),
                b.reference(wl, arrived_kv_tokens=arrived))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=prefix_workloads(tiers=True), window=windows(), kv=st.integers(0, 400),
       block_size=st.integers(1, 8), k=st.integers(1, 4), alpha=st.floats(0, 1))
def test_speculative_prefix_caching_kernel_matches_reference_with_a_window(wl, window, kv,
                                                                          block_size, k, alpha):
    b = _batcher(window, 6, kv, block_size, 10, prefix_caching=True,
                 speculative=Speculative(draft=0.1, draft_tokens=k, acceptance=alpha))
    assert_same(_kernel_outputs(b, wl), b.reference(wl))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(tiers=True, fractional=True), max_num_seqs=slots,
       kv=st.integers(0, 2000), extra=st.one_of(st.none(), st.integers(0, 300)),
       k=st.integers(1, 5), alpha=st.floats(0, 1))
def test_roofline_speculative_kernel_matches_reference_on_gpt_oss(wl, max_num_seqs, kv, extra,
                                                                  k, alpha):
    wl = Workload(wl.arrival * 0.01, wl.prompt_tokens * 5, wl.output_tokens * 5, wl.priority)
    mnbt = None if extra is None or max_num_seqs is None else max_num_seqs + extra
    b = ContinuousBatcher(model="gpt-oss-20b", gpu="H100-SXM-80GB", max_num_seqs=max_num_seqs,
                          kv_budget_tokens=kv, admission="paged", max_num_batched_tokens=mnbt,
                          speculative=Speculative(draft=0.05, draft_tokens=k, acceptance=alpha))
    assert b._kv_window() == (1, 1, 9, 2)
    assert_same(_kernel_outputs(b, wl), b.reference(wl))


pools = st.builds(_Windowed, max_num_seqs=st.integers(1, 6),
                  kv_budget_tokens=st.one_of(st.none(), st.integers(1, 200)),
                  admission=st.just("paged"), block_size=st.integers(1, 8),
                  max_num_batched_tokens=st.one_of(st.none(), st.integers(6, 30)),
                  kv_window=windows())


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(tiers=True), prefill=pools, decode=pools, x=st.integers(1, 3),
       y=st.integers(1, 3))
def test_disaggregated_kernel_matches_reference_with_a_window(wl, prefill, decode, x, y):
    d = DisaggregatedBatcher(prefill, decode, x, y, link_bandwidth=math.inf, link_latency=1)
    assert_disaggregated_same(d, wl)


# --- no request lost; the KV held within the budget at every step -----------------------------


def _units_held(nb, window, chunk=None, block_size=1):
    """By hand: units a sequence of ``nb`` blocks holds (full layers all, sliding at most
    ``window_blocks``, or while it prefills in steps of ``chunk`` tokens, that and the
    step's blocks: ``window_blocks + ceil((chunk - 1) / block_size)``, every block without a
    step budget)."""
    full, sliding, window_blocks, _ = window
    if chunk is not None and window_blocks:
        window_blocks = (math.inf if chunk == math.inf
                         else window_blocks + -(-(chunk - 1) // block_size))
    return full * nb + sliding * min(nb, window_blocks)


@SETTINGS
@given(wl=workloads(tiers=True, fractional=True), window=windows(), max_num_seqs=slots,
       kv=st.integers(0, 400), block_size=st.integers(1, 8),
       extra=st.one_of(st.none(), st.integers(0, 30)), k=st.integers(0, 4))
def test_no_request_lost_and_kv_within_the_budget(wl, window, max_num_seqs, kv, block_size,
                                                  extra, k):
    # k > 0: decoding speculatively, up to k + 1 tokens a step
    b = _batcher(window, max_num_seqs, kv, block_size, extra,
                 speculative=Speculative(draft=0.1, draft_tokens=k) if k else None)
    finals = [max(int(p), 1) + int(o) for p, o in zip(wl.prompt_tokens, wl.output_tokens)]
    # never fits: its final length, held as a prefill holds it (a preemption recomputes all
    # but its last token)
    chunk = math.inf if extra is None or max_num_seqs is None else max_num_seqs + extra
    assert_ended_as(b.run(wl), [_units_held(-(-final // block_size), window, chunk, block_size)
                                > (kv // block_size) * window[3] for final in finals])
    trace = []
    b.reference(wl, trace=trace)
    for _, running, reserved, used in trace:
        assert used <= reserved + 1e-9 <= kv + 1e-9
    stats = _kernel_outputs(b, wl)["stats"]
    assert stats[STAT["peak_kv_used"]] <= stats[STAT["peak_kv_reserved"]] <= kv


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(tiers=True, fractional=True), full=st.integers(0, 3),
       sliding=st.integers(1, 4), max_num_seqs=slots, kv=st.integers(0, 400),
       block_size=st.integers(1, 8), extra=st.one_of(st.none(), st.integers(0, 30)))
def test_a_window_no_sequence_reaches_is_no_window(wl, full, sliding, max_num_seqs, kv,
                                                   block_size, extra):
    # every layer holds the whole context when the window is longer than any sequence: the
    # run, its statistics included, is the plain one's
    longest = -(-81 // block_size)               # prompts <= 40, outputs <= 40, +1
    plain = _batcher((1, 0, UNLIMITED, 1), max_num_seqs, kv, block_size, extra)
    windowed = _batcher((full, sliding, longest, full + sliding), max_num_seqs, kv, block_size,
                        extra)
    assert_same(_kernel_outputs(windowed, wl), _kernel_outputs(plain, wl))


# --- by hand ----------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 3, 5])
def test_a_budget_of_n_windowed_sequences_admits_n(n):
    # By hand, block size 4, window (1, 1, 3), 9 tokens a step: a 40-token prompt and its
    # first token fill ceil(41 / 4) = 11 blocks in the full layers; while it prefills its sliding
    # layers hold the window's 3 blocks and a step's ceil(8 / 4) = 2 more, 11 + 5 = 16 units of
    # a block's 2, then 3 once it decodes, 14; its 8 output tokens end at ceil(48 / 4) = 12
    # blocks, 15 units (17 as a prefill holds it: never refused). A budget of 16 n + 2 units
    # (8 n + 1 blocks) admits n such prompts together, not n + 1 (16 (n + 1) > 16 n + 2), and
    # holds them as they grow (15 n); every layer whole, 2 x 12 = 24 units a sequence, it would
    # hold fewer.
    kv = 4 * (8 * n + 1)
    wl = Workload(np.zeros(n + 1), [40] * (n + 1), [8] * (n + 1))
    b = _Windowed(max_num_seqs=8, kv_budget_tokens=kv, admission="paged", block_size=4,
                  max_num_batched_tokens=9, kv_window=(1, 1, 3, 2))
    assert _kernel_outputs(b, wl)["stats"][STAT["peak_running"]] == n
    assert b.reference(wl)["stats"][STAT["peak_running"]] == n
    plain = dataclasses.replace(b, kv_window=(1, 0, UNLIMITED, 1))
    assert _kernel_outputs(plain, wl)["stats"][STAT["peak_running"]] < n or n == 1


def test_gpt_oss_window_from_its_config():
    # gpt-oss-120b's config.json (https://huggingface.co/openai/gpt-oss-120b/blob/main/config.json):
    # 36 layers alternating sliding_attention / full_attention, sliding_window 128, the same KV
    # heads (8 of 64) in both: vLLM's groups of 18, one of each kind, so a block of context is
    # 1 unit in each and a block of every layer 2; ceil(128 / 16) + 1 = 9 blocks
    model = catalog.model("gpt-oss-120b")
    assert (model.n_full_layers, model.n_sliding_layers, model.sliding_window) == (18, 18, 128)
    assert replica_kv_window(model, 16) == (1, 1, 9, 2)
    assert replica_kv_window(catalog.model("Llama-3.1-8B"), 16) == (1, 0, UNLIMITED, 1)


def test_gemma3_window_holds_vllms_padding():
    # Gemma-3-27B's config.json (https://huggingface.co/google/gemma-3-27b-it): 62 layers,
    # every sixth global (10 full, 52 sliding of 1,024 tokens). vLLM groups them by 10: one full
    # group and six sliding ones, the last padded by 8 layers. A block of context: 10 layer
    # pages in the full group, 60 in the sliding; the budget's block of every layer: 62.
    # Divided by 2: (5, 30, ceil(1024 / 16) + 1 = 65, 31).
    model = catalog.model("Gemma-3-27B")
    assert (model.n_full_layers, model.n_sliding_layers, model.sliding_window) == (10, 52, 1024)
    assert replica_kv_window(model, 16) == (5, 30, 65, 31)
    # every layer windowed (Mistral-7B-v0.1, 4,096 tokens): no full unit
    assert replica_kv_window(catalog.model("Mistral-7B-v0.1"), 16) == (0, 1, 257, 1)


def test_speculative_decoding_pages_windows_too():
    spec = ContinuousBatcher(model="gpt-oss-20b", gpu="H100-SXM-80GB", admission="paged",
                             speculative=Speculative(draft=0.1, draft_tokens=2))
    assert spec._kv_window() == (1, 1, 9, 2)
    # a pipeline's stage interleaves the layer kinds as the model does: the model's units
    staged = ContinuousBatcher(model="gpt-oss-120b", gpu="H100-SXM-80GB", admission="paged",
                               pp=2, kv_budget_tokens=100_000)
    assert staged._kv_window() == (1, 1, 9, 2)
    off = ContinuousBatcher(model="gpt-oss-20b", gpu="H100-SXM-80GB", admission="paged",
                            window_paging=False)
    assert off._kv_window() == (1, 0, UNLIMITED, 1)
    with pytest.raises(TypeError, match="window_paging"):
        ContinuousBatcher(model="gpt-oss-20b", gpu="H100-SXM-80GB", window_paging=1)


# --- vLLM's logged concurrency of sliding-window models ----------------------------------------

LOGS = pathlib.Path(__file__).parent / "data" / "engine_logs" / "vllm_memory.csv"


def test_gpt_oss_concurrency_by_hand():
    # llmd-gptoss-20b-tp2 (vllm_memory.csv): 59.32 GiB of KV a GPU at TP 2, max_model_len and
    # max_num_batched_tokens 8,192. gpt-oss-20b: 12 full and 12 sliding layers (window 128),
    # 8 KV heads of 64 -> 4 a rank: 2 x 4 x 64 x 2 B = 1,024 B a layer a token. A page of one
    # group (12 layers) of a 16-token block: 196,608 B; 59.32 GiB holds 323,966 of them. A
    # request: 8,192 / 16 = 512 blocks in the full group, ceil(min(127 + 8,192, 8,192) / 16) + 1
    # = 513 in the sliding one: 323,966 / 1,025 = 316.064, logged "316.07x" (the log's 59.32
    # is rounded: 0.005 GiB is 27 pages, 0.027 of concurrency). Every layer in one group and
    # no window (512 blocks of all 24 layers): 316.37, outside it.
    pages = int(59.32 * 2**30 // (12 * 16 * 1024))
    assert pages == 323_966
    assert abs(pages / (512 + 513) - 316.07) <= 0.005 + 27 / 1025
    assert abs(pages // 2 / 512 - 316.07) > 0.005 + 27 / 1025
    model, gpu = catalog.model("gpt-oss-20b"), catalog.gpu("H100-SXM-80GB")
    whole = memory.engine_kv_cache(model, gpu, 2, max_model_len=8192, max_num_batched_tokens=8192)
    out = memory.engine_kv_cache(model, gpu, 2, max_model_len=8192, max_num_batched_tokens=8192,
                                 activation_peak_bytes=whole["available_bytes"] - 59.32 * 2**30)
    assert out["max_concurrency"] == pages / (512 + 513)
    assert out["kv_cache_groups"] == 2


def test_logged_concurrency_of_sliding_window_models():
    # every vLLM start-up in vllm_memory.csv of a model with sliding-window layers that logs its
    # maximum concurrency, from the KV memory it logs (rounded to 0.01 GiB: the tolerance)
    rows = [r for r in csv.DictReader(line for line in LOGS.open(encoding="utf-8")
                                      if not line.startswith("#"))
            if r["max_concurrency"] and r["model"]
            and catalog.model(r["model"]).sliding_window is not None]
    # Llama-4-Scout at TP 4: 12 full and 36 chunked-local layers (chunk 8,192), groups of 12:
    # 512 + 3 x ceil(min(8,192 + 8,192, 8,192) / 16) = 2,048 blocks a request
    assert {r["model"] for r in rows} == {"gpt-oss-20b", "Gemma-2-9B", "Gemma-2-27B",
                                          "Gemma-3-27B", "Llama-4-Scout"}
    for r in rows:
        model, gpu = catalog.model(r["model"]), catalog.gpu("H100-SXM-80GB")
        kw = {"max_model_len": int(r["max_model_len"]),
              "max_num_batched_tokens": int(r["max_num_batched_tokens"]),
              "gpu_memory_utilization": float(r["gpu_memory_utilization"])}
        tp = int(r["tp"])
        whole = memory.engine_kv_cache(model, gpu, tp, **kw)
        logged_kv = float(r["available_kv_gib"]) * 2**30
        out = memory.engine_kv_cache(model, gpu, tp, **kw,
                                     activation_peak_bytes=whole["available_bytes"] - logged_kv)
        ours, logged = out["max_concurrency"], float(r["max_concurrency"])
        assert abs(ours - logged) <= 0.005 + ours * 0.005 * 2**30 / logged_kv, r["id"]


def test_simulate_command_pages_windows_unless_told_not_to(capsys):
    # `rooflinekit simulate --model gpt-oss-20b --admission paged`: the sliding layers keep
    # their window, so the same prompts hold less KV at their peak than with every layer whole
    # (vLLM's --disable-hybrid-kv-cache-manager)
    from rooflinekit.cli.main import main
    args = ["simulate", "--workload", "lognormal", "--requests", "40", "--input-len", "2000",
            "--model", "gpt-oss-20b", "--gpu", "h100", "--admission", "paged", "--kv-budget",
            "20000", "--json"]
    peaks = []
    for extra in ([], ["--disable-hybrid-kv-cache-manager"]):
        assert main(args + extra) == 0
        peaks.append(json.loads(capsys.readouterr().out)["continuous"]["peak_kv_tokens"])
    assert peaks[0] < peaks[1] <= 20000


def test_capacity_counts_vllms_window_groups(capsys):
    # `rooflinekit capacity gpt-oss-120b h100 --max-model-len 32768`: vLLM's cache of 47,008
    # tokens is 2,938 blocks of all 36 layers, 5,876 pages of one 18-layer group. A request:
    # 32,768 / 16 = 2,048 blocks in the full group and, at vLLM's 8,192-token step budget on an
    # H100, ceil(min(127 + 8,192, 32,768) / 16) + 1 = 521 in the sliding one: 5,876 / 2,569 =
    # 2.29, so 2 (every layer's whole context: 47,008 / 32,768 = 1.43, so 1)
    from rooflinekit.cli.main import main
    assert main(["capacity", "gpt-oss-120b", "h100", "--max-model-len", "32768", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kv_budget_tokens"] == 47_008
    assert 5876 // 2569 == out["max_concurrent_sequences"] == 2
    # decoding, the sliding group at its window's 9 blocks: 5,876 / (2,048 + 9) = 2.86, so 2;
    # at 8,192 tokens 5,876 / (512 + 9) = 11.3, so 11, where the logged count is 5,876 /
    # (512 + 513) = 5.7, so 5 (the sliding group at ceil(min(127 + 8,192, 8,192) / 16) + 1)
    assert out["decoding_max_concurrent_sequences"] == 5876 // 2057 == 2
    assert main(["capacity", "gpt-oss-120b", "h100", "--max-model-len", "8192", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["max_concurrent_sequences"], out["decoding_max_concurrent_sequences"]) == \
        (5876 // 1025, 5876 // 521) == (5, 11)
    # a model without sliding layers has no such row
    assert main(["capacity", "llama-3.1-8b", "h100", "--json"]) == 0
    assert "decoding_max_concurrent_sequences" not in json.loads(capsys.readouterr().out)


def test_sglang_pools_the_full_layers_apart():
    # SGLang's set_num_token_hybrid: F (L_f + 0.8 L_s) layer-tokens are the cache, a request
    # holds its whole context in the full pool of F tokens. gpt-oss-120b (18 + 18 layers of one
    # size): a token of context is (18 + 0.8 x 18) / 36 = 0.9 of a token of every layer, (9,
    # 0, -, 10); Gemma-3-27B (10 + 52): 51.6 / 62 = 129 / 155; every layer windowed: whole
    model = catalog.model("gpt-oss-120b")
    assert replica_kv_window(model, 16, pool="sglang") == (9, 1, 0, 10)
    assert replica_kv_window(catalog.model("Gemma-3-27B"), 16, pool="sglang") == \
        (129, 26, 0, 155)
    assert replica_kv_window(catalog.model("Mistral-7B-v0.1"), 16, pool="sglang") == \
        (1, 0, UNLIMITED, 1)
    with pytest.raises(ValueError, match="pool"):
        replica_kv_window(model, 16, pool="trtllm")
    # 50 prompts of 32,000 tokens and 100 out in 152,960 tokens of every layer (9,560 blocks,
    # 19,120 units), 8,192 tokens a step: SGLang's full pool is 152,960 x 10 / 9 = 169,955
    # tokens, 5 requests of 32,100; vLLM's paging holds a decoding one in 2,007 + 9 units,
    # 19,120 // 2,016 = 9 (a prefilling one in 2,001 + 9 + 512)
    wl = Workload(np.zeros(50), [32000] * 50, [100] * 50)
    peaks = {}
    for pool in ("vllm", "sglang"):
        b = ContinuousBatcher(model=model, gpu="H100-SXM-80GB", admission="paged",
                              kv_budget_tokens=152_960, kv_pool=pool, max_num_seqs=1024,
                              max_num_batched_tokens=8192)
        peaks[pool] = _kernel_outputs(b, wl)["stats"][STAT["peak_running"]]
    assert peaks == {"vllm": 9, "sglang": 5}
    # the planners' replicas pool as their engine's memory rule says
    from rooflinekit.planning.fleet import _replica
    gpu = catalog.gpu("H100-SXM-80GB")
    for held_by, pool in (("sglang", "sglang"), ("vllm", "vllm"), (None, "vllm")):
        batcher, _, _ = _replica(model, gpu, 1, 256, 8192, "paged", 16, 0.9, held_by=held_by)
        assert batcher.kv_pool == pool
    with pytest.raises(ValueError, match="kv_pool"):
        ContinuousBatcher(model=model, gpu="H100-SXM-80GB", kv_pool="trtllm")


def test_capacity_under_sglang_counts_its_full_pool(capsys):
    # `rooflinekit capacity gpt-oss-120b h100 --max-model-len 16384 --engine sglang`: SGLang's
    # cache of 69,552 tokens of every layer is a full pool of 69,552 x 10 / 9 = 77,280 tokens
    # (a window pool of 0.8 that beside it), 4 requests of 16,384
    from rooflinekit.cli.main import main
    assert main(["capacity", "gpt-oss-120b", "h100", "--max-model-len", "16384", "--engine",
                 "sglang", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kv_budget_tokens"] == 69_552
    assert 69_552 * 10 // 9 // 16_384 == out["max_concurrent_sequences"] == 4


def test_a_plan_says_how_it_holds_sliding_window_layers(capsys):
    from rooflinekit.cli.main import main
    args = ["plan", "gpt-oss-20b", "--gpus", "h100", "--tp", "1", "--rate", "1",
            "--prompt-mean", "2000", "--output-mean", "100", "--ttft", "2", "--replicates", "1",
            "--requests", "50"]
    assert main(args) == 0
    assert ("sliding-window layers: gpt-oss-20b: the 12 sliding-window layers keep 9 blocks of "
            "16 tokens a request (128-token window") in capsys.readouterr().out
    assert main(args + ["--engine", "sglang"]) == 0
    assert "a request's context in SGLang's full pool, 9/10 of a token" in \
        capsys.readouterr().out
    # a draft pages the windows too (the speculative kernel files their units)
    assert main(args + ["--speculative-draft", "0.05", "--num-speculative-tokens", "2",
                       "--acceptance", "0.7"]) == 0
    assert "the 12 sliding-window layers keep 9 blocks" in capsys.readouterr().out
    args[1] = "llama-3.1-8b"
    assert main(args) == 0
    assert "sliding-window layers" not in capsys.readouterr().out


def test_layouts_count_sequences_with_their_windows():
    # rk.layouts of gpt-oss-120b at 32,768 tokens by vLLM's rule: a sequence holds its context
    # in the 18 full layers and its 128-token window in the 18 sliding ones, (18 x 32,768 + 18
    # x 128) / 36 = 16,448 tokens of every layer, so TP 2's 964,416 tokens hold 58 (every layer
    # whole: 29)
    import rooflinekit as rk
    model, gpu = catalog.model("gpt-oss-120b"), catalog.gpu("H100-SXM-80GB")
    ds = rk.layouts(model, gpu, 2, context_length=32_768,
                    kv_bytes_per_gpu=lambda tp, pp, ep, w: rk.profiles.layout_kv_bytes(
                        "vllm", model, gpu, tp, pp, ep, w))
    cell = ds.where((ds.tp == 2) & (ds.ep == 1) & (ds.pp == 1), drop=True)
    assert cell.kv_budget_tokens.values.tolist() == [964_416]
    assert cell.max_concurrent_sequences.values.tolist() == [964_416 // 16_448] == [58]
