"""KV that arrives with a request (``arrived_kv_tokens``): the continuous batcher's decode-side input.

On a request's first admission its prefill starts after the arrived tokens, as after a
prefix-cache hit; a preemption loses them (``rooflinekit.batching._reference``, "KV that arrives
with a request").
"""

import numpy as np
import pytest

from rooflinekit.batching import ContinuousBatcher, StaticBatcher
from rooflinekit.workloads import Workload


def test_arrived_prompt_prefills_only_its_last_token():
    # 64-token prompt in chunks of 4: 16 steps to the first token; with all 64 arrived, one step
    b = ContinuousBatcher(max_num_seqs=4, kv_budget_tokens=1_000, admission="paged",
                          max_num_batched_tokens=4)
    wl = Workload([0.0, 0.0], [64, 64], [3, 3])
    plain = b.run(wl)
    assert plain.ttft.values[0] == 16.0
    ds = b.run(wl, arrived_kv_tokens=[64, 40])
    # request 1 prefills 24 tokens: 3 a step beside request 0's token (its last prompt token,
    # then two decode tokens) in steps 0-2, then 4 a step: 64 reached in step 6, ending at 7
    assert ds.ttft.values.tolist() == [1.0, 7.0]
    assert float(ds.prefill_tokens_saved) == 0       # not a prefix-cache hit
    assert (ds.status == plain.status).all()
    zeros = b.run(wl, arrived_kv_tokens=np.zeros(2, np.int64))
    for name in ("ttft", "latency", "admit"):
        np.testing.assert_array_equal(zeros[name].values, plain[name].values)


def test_arrived_kv_holds_its_own_blocks():
    # the arrived tokens occupy the sequence's blocks: two 64-token prompts fit 9 blocks of 16
    # only one at a time (5 blocks each with the first token), arrived or not
    b = ContinuousBatcher(max_num_seqs=4, kv_budget_tokens=9 * 16, admission="paged")
    wl = Workload([0.0, 0.0], [64, 64], [2, 2])
    ds = b.run(wl, arrived_kv_tokens=[64, 64])
    assert float(ds.peak_running) == 1
    assert float(ds.peak_kv_tokens) <= 9 * 16


def test_preempted_request_recomputes_the_arrived_kv():
    # a tight paged budget forces a preemption; the readmitted request prefills its whole
    # prompt again (the reference and the kernel agree bit for bit, tested with hypothesis)
    b = ContinuousBatcher(max_num_seqs=4, kv_budget_tokens=6 * 4, admission="paged",
                          block_size=4)
    wl = Workload([0.0, 0.0], [8, 8], [8, 8])
    arrived = [8, 8]
    ds = b.run(wl, arrived_kv_tokens=arrived)
    assert int(ds.preemptions.sum()) >= 1
    ref = b.reference(wl, arrived_kv_tokens=arrived)
    np.testing.assert_array_equal(ds.finish.values, ref["finish"])
    np.testing.assert_array_equal(ds.preemptions.values, ref["preemptions"])


@pytest.mark.parametrize("arrived, match", [
    ([1, 2, 3], "shape"),
    ([1.5, 2.0], "whole numbers"),
    ([-1, 0], r"\[0, prompt_tokens\]"),
    ([5, 0], r"\[0, prompt_tokens\]"),
])
def test_bad_arrived_kv_tokens(arrived, match):
    wl = Workload([0.0, 0.0], [4, 4], [2, 2])
    with pytest.raises(ValueError, match=match):
        ContinuousBatcher().run(wl, arrived_kv_tokens=arrived)


def test_static_batching_has_no_arrived_kv():
    with pytest.raises(ValueError, match="arrived_kv_tokens"):
        StaticBatcher().run(Workload([0.0], [4], [2]), arrived_kv_tokens=[0])
