"""docs/techniques.md states what the code gives: its headline numbers, recomputed."""

from pathlib import Path

import numpy as np

import rooflinekit as rk

DOC = (Path(__file__).parents[1] / "docs" / "techniques.md").read_text()
M = rk.catalog.model("Llama-3.1-70B")
G = rk.catalog.gpu("H100-SXM-80GB")
D = rk.catalog.model("Llama-3.1-8B")


def test_the_page_is_in_the_toctree():
    index = (Path(__file__).parents[1] / "docs" / "index.md").read_text()
    assert "\ntechniques\n" in index


def test_prefix_caching_numbers():
    for share, sequences, ms in ((0.0, 33, 799.2), (0.5, 66, 422.0), (0.9, 328, 88.2)):
        shared = int(share * 16384)
        n = rk.max_concurrent_sequences(M, G, 16384, 4, shared_prefix_tokens=shared)
        t = rk.prefill_time(M, G, 16384, 4, cached_tokens=shared)
        assert n == sequences
        assert f"{ms:.1f} ms" in DOC and round(t * 1e3, 1) == ms
        assert f"{sequences}" in DOC


def test_speculative_numbers():
    speedup = rk.speculative_speedup(M, G, np.array([1, 256]), 4096, 4, draft=D,
                                     draft_tokens=4, acceptance=0.7)
    assert [round(float(s), 2) for s in speedup] == [1.87, 0.99]
    assert "1.87 at batch 1 and 0.99 at batch 256" in DOC
    plain = rk.cost_per_million_tokens(M, G, 1, 4096, 4)
    spec = rk.speculative_cost_per_million_tokens(M, G, 1, 4096, 4, draft=D, draft_tokens=4,
                                                  acceptance=0.8)
    assert f"${plain:.2f} without" in DOC and f"${spec:.2f} with" in DOC


def test_every_name_on_the_page_exists():
    for name in ("prefill_time", "request_latency", "max_concurrent_sequences",
                 "break_even", "payg_cost_per_request", "cost_per_request",
                 "speculative_tokens_per_step", "speculative_step_time", "speculative_speedup",
                 "speculative_cost_per_million_tokens"):
        assert f"`{name}(" in DOC and hasattr(rk, name), name
    assert hasattr(rk.roofline, "verification_step_time")
    for variable in rk.sweep.SPECULATIVE_VARIABLES:
        assert f"`{variable}`" in DOC, variable


def test_the_page_names_no_removed_function():
    """``prefill_ms`` and ``decode_ms_per_token`` are gone (``prefill_time``,
    ``amortized_token_time``): the page must not offer them."""
    for gone in ("prefill_ms", "decode_ms_per_token"):
        assert not hasattr(rk, gone), gone
        assert f"`{gone}(" not in DOC, gone
