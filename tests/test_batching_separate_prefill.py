"""Prefill steps apart from decodes (``mixed_prefill=False``: SGLang's default, vLLM's V0).

A step with prompt tokens to process carries only those; the decoding sequences wait. The
kernel = reference, token-by-token gap and invariant tests run this mode too
(``tests/test_batching_kernels.py``, ``MIXED``); here, a case by hand and the checks.
"""

import numpy as np
import pytest

from rooflinekit.batching import ContinuousBatcher, DisaggregatedBatcher, Speculative, _schema
from rooflinekit.batching.batchers import _kernel_outputs
from rooflinekit.workloads import Workload

from test_batching_kernels import brute_force_gaps


def test_a_decode_waits_for_a_prefill_step():
    """By hand, one tick a step: A (prompt 2, 5 tokens) arrives at 0, B (prompt 3, 2 tokens)
    at 2. Mixed, the step at 2 prefills B and decodes A: A's tokens at 1, 2, 3, 4, 5. Apart,
    A waits while B prefills: A's tokens at 1, 2, 4, 5, 6 (one gap of 2 ticks), B's at 3, 4."""
    wl = Workload([0.0, 2.0], [2, 3], [5, 2])
    for mixed, a_tokens, b_tokens in ((True, [1, 2, 3, 4, 5], [3, 4]),
                                      (False, [1, 2, 4, 5, 6], [3, 4])):
        b = ContinuousBatcher(max_num_seqs=4, mixed_prefill=mixed)
        tokens = []
        ref = b.reference(wl, tokens=tokens)
        times = {i: [t for j, t in tokens if j == i] for i in (0, 1)}
        assert times == {0: a_tokens, 1: b_tokens}
        stats = dict(zip(_schema.STAT_NAMES, ref["stats"]))
        gaps = brute_force_gaps(tokens, 2)
        assert stats["token_gaps"] == 5 and stats["token_gap_time"] == gaps.sum()
        assert stats["token_gap_time"] == (5.0 if mixed else 6.0)
        out = _kernel_outputs(b, wl)
        np.testing.assert_array_equal(out["finish"], [a_tokens[-1], b_tokens[-1]])
        np.testing.assert_array_equal(out["stats"], ref["stats"])


def test_mixed_prefill_is_checked():
    with pytest.raises(TypeError, match="mixed_prefill must be True or False"):
        ContinuousBatcher(mixed_prefill="no")
    spec = Speculative(draft=0.1, draft_tokens=2, acceptance=0.7)
    with pytest.raises(ValueError, match="mixed_prefill=False with speculative"):
        ContinuousBatcher(mixed_prefill=False, speculative=spec)
    with pytest.raises(ValueError, match="prefill: mixed_prefill=False"):
        DisaggregatedBatcher(prefill=ContinuousBatcher(mixed_prefill=False),
                             decode=ContinuousBatcher(), link_bandwidth=float("inf"))
