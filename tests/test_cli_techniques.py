"""The command line's speculative-decoding and prefix-caching figures."""

import contextlib
import io
import json

import rooflinekit as rk
from rooflinekit.cli.main import main


def _json(argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    return json.loads(out.getvalue())


def test_capacity_with_a_draft_model_counts_its_weights_and_its_cost():
    got = _json(["capacity", "llama-3.1-70b", "h100", "--tp", "4", "--speculative-draft",
                 "llama-3.1-8b", "--num-speculative-tokens", "4", "--acceptance", "0.8",
                 "--json"])
    m, g, d = (rk.catalog.model("Llama-3.1-70B"), rk.catalog.gpu("H100-SXM-80GB"),
               rk.catalog.model("Llama-3.1-8B"))
    # the draft's weights come off the engine's budget B (the group's, vLLM's rule): each
    # sequence of 8,192 tokens holds 8,192 x 327,680 B
    budget = got["kv_budget_gib"] * 2**30 - float(rk.weight_bytes(d))
    assert got["speculative_max_concurrent_sequences"] == int(budget // (8192 * 327_680))
    assert got["speculative_max_concurrent_sequences"] < got["max_concurrent_sequences"]
    # the guide's rule takes them off its own budget
    guide = _json(["capacity", "llama-3.1-70b", "h100", "--tp", "4", "--speculative-draft",
                   "llama-3.1-8b", "--num-speculative-tokens", "4", "--acceptance", "0.8",
                   "--workspace-fraction", "0.1", "--json"])
    assert guide["speculative_max_concurrent_sequences"] == rk.max_concurrent_sequences(
        m, g, 8192, 4, draft_weight_bytes=rk.weight_bytes(d))
    # the command's default engine: the vLLM profile of its GPU
    assert got["speculative_usd_per_million_tokens"] == rk.speculative_cost_per_million_tokens(
        m, g, 1, 8192, 4, draft=d, draft_tokens=4, acceptance=0.8, hourly_price=g.hourly_price,
        engine=rk.engine_profile("vllm", g))


def test_capacity_with_a_draft_head_holds_no_draft_weights():
    got = _json(["capacity", "llama-3.1-70b", "h100", "--tp", "4", "--speculative-draft",
                 "0.05", "--num-speculative-tokens", "4", "--acceptance", "0.8", "--json"])
    assert "speculative_max_concurrent_sequences" not in got
    assert got["speculative_usd_per_million_tokens"] < got["usd_per_million_tokens"]


def test_sweep_over_the_techniques_reports_their_dimensions():
    got = _json(["sweep", "--models", "llama-3.1-8b", "--gpus", "h100", "--tp", "1",
                 "--max-model-len", "4096", "--batch-size", "1,8", "--speculative-draft",
                 "0.05", "--num-speculative-tokens", "0,4", "--acceptance", "0.7",
                 "--prefix-share", "0,0.5", "--no-progress", "--json"])
    assert got["cells"] == 2 * 2 * 1 * 2
    assert "prefix_share" in got["rows"][0]


def test_price_with_prompt_cache_hits_is_the_library_break_even():
    got = _json(["price", "--input-price", "3", "--output-price", "12", "--cached-input-price",
                 "0.3", "--prefix-share", "0.6", "--provisioned-monthly", "12000",
                 "--provisioned-capacity", "4e9", "--output-fraction", "0.1", "--json"])
    payg = rk.PayAsYouGo(3.0, 12.0, cached_input_per_mtok=0.3)
    be = rk.break_even(rk.Provisioned(12_000.0, 4e9), payg, 0.1, prefix_share=0.6)
    (row,) = got if isinstance(got, list) else got["rows"]
    assert row["blended_per_mtok"] == rk.blended_price(payg, 0.1, cached_fraction=0.6)
    assert row["break_even_tokens"] == be.tokens
    assert row["break_even_utilization"] == be.utilization
