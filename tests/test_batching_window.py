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

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_batching_kernels import assert_same, workloads
from test_batching_prefix import prefix_workloads

from rooflinekit import catalog
from rooflinekit.batching import (ContinuousBatcher, DisaggregatedBatcher, Speculative,
                                  replica_kv_window)
from rooflinekit.batching._schema import STAT, UNLIMITED
from rooflinekit.batching.batchers import _kernel_outputs
from rooflinekit.batching.results import REASON_KV_BUDGET
from rooflinekit.workloads import Workload

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclasses.dataclass(frozen=True)
class _Windowed(ContinuousBatcher):
    """A batcher with a ``kv_window`` given, not derived from a model (for tick-clock tests)."""

    kv_window: tuple = dataclasses.field(default=(1, 0, UNLIMITED), kw_only=True)

    def _kv_window(self):
        return self.kv_window


windows = st.tuples(st.integers(0, 3), st.integers(1, 4), st.integers(1, 6))
slots = st.one_of(st.none(), st.integers(1, 8))


def _batcher(window, max_num_seqs, kv, block_size, extra=None, cap=None, **kw):
    mnbt = None if extra is None or max_num_seqs is None else max_num_seqs + extra
    return _Windowed(max_num_seqs=max_num_seqs, kv_budget_tokens=kv, admission="paged",
                     block_size=block_size, max_num_batched_tokens=mnbt, interactive_cap=cap,
                     kv_window=window, **kw)


# --- kernel == reference, bit for bit, with a window ------------------------------------------


@SETTINGS
@given(wl=workloads(tiers=True, fractional=True), window=windows, max_num_seqs=slots,
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
@given(wl=prefix_workloads(tiers=True), window=windows, max_num_seqs=slots,
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
    assert b._kv_window() == (1, 1, 9)
    assert_same(_kernel_outputs(b, wl), b.reference(wl))


pools = st.builds(_Windowed, max_num_seqs=st.integers(1, 6),
                  kv_budget_tokens=st.one_of(st.none(), st.integers(1, 200)),
                  admission=st.just("paged"), block_size=st.integers(1, 8),
                  max_num_batched_tokens=st.one_of(st.none(), st.integers(6, 30)),
                  kv_window=windows)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(wl=workloads(tiers=True), prefill=pools, decode=pools, x=st.integers(1, 3),
       y=st.integers(1, 3))
def test_disaggregated_kernel_matches_reference_with_a_window(wl, prefill, decode, x, y):
    d = DisaggregatedBatcher(prefill, decode, x, y, link_bandwidth=math.inf, link_latency=1)
    out, rejected_in, peak, ready = d._serve(wl, d._timings(), (None, None, None))
    reference = d.reference(wl)
    for key, got in zip(("admit", "first_token", "finish", "preemptions", "status", "stats"),
                        out):
        np.testing.assert_array_equal(got, reference[key], err_msg=key)
    np.testing.assert_array_equal(rejected_in, reference["rejected_in"])


# --- no request lost; the KV held within the budget at every step -----------------------------


def _units_held(nb, window):
    """By hand: units a sequence of ``nb`` blocks holds (full layers all, sliding at most
    ``window_blocks``)."""
    full, sliding, window_blocks = window
    return full * nb + sliding * min(nb, window_blocks)


@SETTINGS
@given(wl=workloads(tiers=True, fractional=True), window=windows, max_num_seqs=slots,
       kv=st.integers(0, 400), block_size=st.integers(1, 8),
       extra=st.one_of(st.none(), st.integers(0, 30)))
def test_no_request_lost_and_kv_within_the_budget(wl, window, max_num_seqs, kv, block_size,
                                                  extra):
    b = _batcher(window, max_num_seqs, kv, block_size, extra)
    ds = b.run(wl)
    status = ds["status"].values
    assert set(status) <= {"completed", "rejected"}
    units = window[0] + window[1]
    for i in range(wl.n_requests):
        final = max(int(wl.prompt_tokens[i]), 1) + int(wl.output_tokens[i])
        never = _units_held(-(-final // block_size), window) > (kv // block_size) * units
        assert (status[i] == "rejected") == never
        if never:
            assert ds["reason"].values[i] == REASON_KV_BUDGET
        else:
            assert np.isfinite(ds["finish"].values[i])
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
    plain = _batcher((1, 0, UNLIMITED), max_num_seqs, kv, block_size, extra)
    windowed = _batcher((full, sliding, longest), max_num_seqs, kv, block_size, extra)
    assert_same(_kernel_outputs(windowed, wl), _kernel_outputs(plain, wl))


# --- by hand ----------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 3, 5])
def test_a_budget_of_n_windowed_sequences_admits_n(n):
    # By hand, block size 4, window (1, 1, 3): a 40-token prompt and its first token fill
    # ceil(41 / 4) = 11 blocks in the full layers and 3 in the sliding ones, 14 units of a block's
    # 2; its 8 output tokens end at ceil(48 / 4) = 12 blocks, 15 units. A budget of
    # 15 n / 2 blocks (rounded up: 15 n units or one more) holds n such sequences at once,
    # not n + 1 (15 (n + 1) > 15 n + 1); every layer whole, 2 x 12 = 24 units a sequence, it
    # would hold fewer.
    kv = 4 * math.ceil(15 * n / 2)
    wl = Workload(np.zeros(n + 1), [40] * (n + 1), [8] * (n + 1))
    b = _batcher((1, 1, 3), None, kv, 4)
    assert _kernel_outputs(b, wl)["stats"][STAT["peak_running"]] == n
    assert b.reference(wl)["stats"][STAT["peak_running"]] == n
    plain = _batcher((1, 0, UNLIMITED), None, kv, 4)
    assert _kernel_outputs(plain, wl)["stats"][STAT["peak_running"]] < n or n == 1


def test_gpt_oss_window_from_its_config():
    # gpt-oss-120b's config.json (https://huggingface.co/openai/gpt-oss-120b/blob/main/config.json):
    # 36 layers alternating sliding_attention / full_attention, sliding_window 128, the same KV
    # heads (8 of 64) in both: 18 : 18 bytes, so 1 : 1 units; ceil(128 / 16) + 1 = 9 blocks
    model = catalog.model("gpt-oss-120b")
    assert (model.n_full_layers, model.n_sliding_layers, model.sliding_window) == (18, 18, 128)
    assert replica_kv_window(model, 16) == (1, 1, 9)
    assert replica_kv_window(catalog.model("Llama-3.1-8B"), 16) == (1, 0, UNLIMITED)


def test_speculative_and_layouts_hold_every_layer_whole():
    spec = ContinuousBatcher(model="gpt-oss-20b", gpu="H100-SXM-80GB", admission="paged",
                             speculative=Speculative(draft=0.1, draft_tokens=2))
    assert spec._kv_window() == (1, 0, UNLIMITED)
    off = ContinuousBatcher(model="gpt-oss-20b", gpu="H100-SXM-80GB", admission="paged",
                            window_paging=False)
    assert off._kv_window() == (1, 0, UNLIMITED)
    with pytest.raises(TypeError, match="window_paging"):
        ContinuousBatcher(model="gpt-oss-20b", gpu="H100-SXM-80GB", window_paging=1)
