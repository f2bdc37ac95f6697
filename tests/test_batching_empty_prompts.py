"""Empty prompts are simulated as one start token: their first token costs a step."""

import numpy as np
import pytest

from rooflinekit.batching import ContinuousBatcher, StaticBatcher
from rooflinekit.batching.batchers import _kernel_outputs

ROOFLINE = dict(model="guide-70b", gpu="lab", tp=8)
BATCHERS = {
    "continuous roofline": ContinuousBatcher(max_num_seqs=4, **ROOFLINE),
    "continuous paged roofline": ContinuousBatcher(max_num_seqs=4, admission="paged",
                                                   block_size=4, **ROOFLINE),
    "static roofline": StaticBatcher(batch_size=4, **ROOFLINE),
    "continuous tick": ContinuousBatcher(max_num_seqs=4),
    "static tick": StaticBatcher(batch_size=4),
}


@pytest.mark.parametrize("name", sorted(BATCHERS))
def test_empty_prompt_is_a_one_token_prompt(name):
    b = BATCHERS[name]
    wl = dict(arrival=[0.0, 0.0, 1.0], output_tokens=[1, 3, 2])
    empty = b.run(prompt_tokens=[0, 0, 0], **wl)
    one = b.run(prompt_tokens=[1, 1, 1], **wl)
    for key in ("first_token", "finish", "makespan", "throughput", "mean_kv_tokens",
                "peak_kv_used_tokens", "mean_ttft"):
        np.testing.assert_array_equal(empty[key].values, one[key].values, err_msg=key)
    assert float(empty.makespan) > 0
    assert float(empty.throughput) > 0
    assert np.all(empty.ttft.values > 0)
    assert np.isfinite(float(empty.mean_kv_tokens)) and float(empty.mean_kv_tokens) > 0


@pytest.mark.parametrize("name", sorted(BATCHERS))
def test_empty_prompts_kernel_matches_reference(name):
    b = BATCHERS[name]
    wl = dict(arrival=[0.0, 0.0, 0.002, 0.5], prompt_tokens=[0, 7, 0, 0],
              output_tokens=[2, 3, 1, 4])
    ref = b.reference(wl)
    ker = _kernel_outputs(b, wl)
    for key in ("admit", "first_token", "finish", "preemptions", "status", "stats"):
        np.testing.assert_array_equal(ker[key], ref[key], err_msg=key)


def test_empty_prompt_holds_its_start_token():
    # reserve admission budgets prompt + output: an empty prompt with 3 outputs needs 4 tokens
    b = ContinuousBatcher(kv_budget_tokens=3)
    ds = b.run(arrival=[0.0], prompt_tokens=[0], output_tokens=[3])
    assert ds.status.values.tolist() == ["rejected"]
    ds = ContinuousBatcher(kv_budget_tokens=4).run(arrival=[0.0], prompt_tokens=[0],
                                                   output_tokens=[3])
    assert ds.status.values.tolist() == ["completed"]
    assert float(ds.peak_kv_used_tokens) == 4.0


def test_an_unlimited_budget_is_unlimited_or_refused():
    """No KV budget means the kernel's 2**60 tokens: a workload that could hold more is refused
    before the kernel, never queued behind a limit nobody set."""
    import pytest

    from rooflinekit.batching import ContinuousBatcher
    from rooflinekit.workloads import Workload
    big = Workload([0.0] * 200, [2**53] * 200, [1] * 200)      # 200 × 2**53 > 2**60 tokens
    with pytest.raises(ValueError, match="2\\*\\*60"):
        ContinuousBatcher(max_num_seqs=256).run(big)
    fits = Workload([0.0] * 100, [2**53] * 100, [1] * 100)      # 100 × 2**53 < 2**60
    ds = ContinuousBatcher(max_num_seqs=256).run(fits)
    assert (ds.status.values == "completed").all()
    assert float(ds.peak_running) == 100                        # all at once: nothing queued
