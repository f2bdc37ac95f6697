"""Speculative decoding on the roofline, against hand calculations.

References: Leviathan, Kalman & Matias, ICML 2023 (expected tokens per step, eq. 1; walltime
improvement, §3.4). Tolerances: exact where the arithmetic is the same, 3% where the test's
closed form drops terms (stated at each).
"""

import pytest
import xarray as xr

from rooflinekit import catalog
from rooflinekit import roofline as rf
from rooflinekit import Engine

TARGET = catalog.model("Llama-3.1-70B")
DRAFT = catalog.model("Llama-3.1-8B")
H100 = catalog.gpu("H100-SXM-80GB")


def _expected_tokens(alpha, k):
    """Σ_{i=0..k} α^i, summed term by term."""
    return sum(alpha ** i for i in range(k + 1))


@pytest.mark.parametrize("alpha, k", [(0.8, 4), (0.5, 1), (0.0, 6), (1.0, 3), (0.95, 8),
                                      (0.3, 0)])
def test_tokens_per_step_is_the_geometric_sum(alpha, k):
    assert rf.speculative_tokens_per_step(alpha, k) == pytest.approx(_expected_tokens(alpha, k),
                                                                      rel=1e-12)


def test_the_issue_figure():
    # k = 4, α = 0.8: 1 + 0.8 + 0.64 + 0.512 + 0.4096 = 3.3616
    assert rf.speculative_tokens_per_step(0.8, 4) == pytest.approx(3.3616, abs=1e-12)


def test_verification_of_nothing_is_a_decode_step():
    for b, c in ((1, 0), (8, 1000), (64, 4096)):
        assert rf.verification_step_time(TARGET, H100, b, c, 8, draft_tokens=0) == \
            rf.decode_step_time(TARGET, H100, b, c, 8)


def test_verification_step_from_first_principles():
    # The guide's 70B model (no vocabulary: no embedding or LM-head terms) on the lab GPU, the
    # guide's simple model (no all-reduce), batch 4 at 2,000 tokens, k = 3.
    model, gpu = catalog.model("guide-70b"), catalog.gpu("lab")
    b, c, k = 4, 2000, 3
    weights = 70e9 * 2
    kv = b * c * 327_680
    flops = 2 * 70e9 * b * (k + 1) + 4 * 64 * 128 * 80 * (b * (k + 1) * c + b * k * (k + 1) / 2)
    expected = max(flops / 989e12, (weights + kv) / 3.35e12)
    got = rf.verification_step_time(model, gpu, b, c, 1, draft_tokens=k, engine=Engine(allreduce="guide"))
    assert got == pytest.approx(expected, rel=1e-12)


def test_batch_one_speedup_approaches_tokens_over_draft_cost():
    # memory-bound decode at batch 1: verification ≈ one decode step, so the speed-up is about
    # E / (1 + k·c) (3%: verification's extra arithmetic and bytes are small but not zero)
    alpha, k, share = 0.8, 4, 0.05
    got = rf.speculative_speedup(TARGET, H100, 1, 1000, 8, draft=share, draft_tokens=k,
                                 acceptance=alpha)
    assert got == pytest.approx(_expected_tokens(alpha, k) / (1 + k * share), rel=0.03)


def test_acceptance_zero_never_pays_and_large_batches_stop_paying():
    assert rf.speculative_speedup(TARGET, H100, 1, 1000, 8, draft=0.05, draft_tokens=4,
                                  acceptance=0.0) < 1
    small = rf.speculative_speedup(TARGET, H100, 1, 1000, 8, draft=DRAFT, draft_tokens=4,
                                   acceptance=0.8)
    large = rf.speculative_speedup(TARGET, H100, 1024, 1000, 8, draft=DRAFT, draft_tokens=4,
                                   acceptance=0.8)
    assert small > 1 > large


def test_speedup_tabulates_over_batch_and_acceptance():
    batch = xr.DataArray([1, 16, 256], dims="batch_size", coords={"batch_size": [1, 16, 256]})
    alpha = xr.DataArray([0.5, 0.9], dims="acceptance", coords={"acceptance": [0.5, 0.9]})
    table = rf.speculative_speedup(TARGET, H100, batch, 1000, 8, draft=0.05, draft_tokens=4,
                                   acceptance=alpha)
    assert set(table.dims) == {"batch_size", "acceptance"}
    assert table.attrs["units"] == "1"
    # more acceptance never hurts; a bigger batch never helps
    assert (table.sel(acceptance=0.9) >= table.sel(acceptance=0.5)).all()
    assert (table.diff("batch_size") <= 0).all()
    point = rf.speculative_speedup(TARGET, H100, 16, 1000, 8, draft=0.05, draft_tokens=4,
                                   acceptance=0.9)
    assert float(table.sel(batch_size=16, acceptance=0.9)) == pytest.approx(point, rel=1e-12)


@pytest.mark.parametrize("kwargs, match", [
    ({"acceptance": 1.5}, "acceptance"), ({"acceptance": -0.1}, "acceptance"),
    ({"draft_tokens": -1}, "draft_tokens"), ({"draft": 0.0}, "draft"), ({"draft": 2.0}, "draft"),
    ({"draft": "Llama-2-7B"}, "vocabulary"), ({"draft": "Llama-3.1-405B"}, "layers"),
    ({"draft": None}, "draft"),
])
def test_bad_speculation_is_refused(kwargs, match):
    base = {"draft": 0.05, "draft_tokens": 4, "acceptance": 0.8}
    with pytest.raises((ValueError, TypeError), match=match):
        rf.speculative_speedup(TARGET, H100, 1, 1000, 8, **{**base, **kwargs})


def test_draft_step_time_is_the_draft_part_of_the_speculative_step():
    """One draft step: a head's share of the target's decode step, or the draft model's own;
    k of them and the verification make the speculative step, bit for bit."""
    from rooflinekit import catalog
    from rooflinekit import roofline as r
    target, draft = catalog.model("Llama-3.1-70B"), catalog.model("Llama-3.1-8B")
    gpu = catalog.gpu("H100-SXM-80GB")
    head = r.draft_step_time(target, gpu, 16, 2048, 4, draft=0.05)
    assert head == 0.05 * r.decode_step_time(target, gpu, 16, 2048, 4)
    small = r.draft_step_time(target, gpu, 16, 2048, 4, draft=draft)
    assert small == r.decode_step_time(draft, gpu, 16, 2048, 4)
    for d, one in ((0.05, head), (draft, small)):
        assert r.speculative_step_time(target, gpu, 16, 2048, 4, draft=d, draft_tokens=4) == \
            4 * one + r.verification_step_time(target, gpu, 16, 2048, 4, draft_tokens=4)
    import pytest
    with pytest.raises(ValueError, match="share"):
        r.draft_step_time(target, gpu, draft=1.5)
