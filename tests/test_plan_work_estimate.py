"""A plan's work estimate counts each configuration's fixed cost (issue 31, row 7).

Before, ``--max-num-seqs 1:300 --max-num-batched-tokens 300:600`` (90,300 configurations of
short requests) was admitted: the estimate counted only token-steps, while each configuration's
search costs about 3 ms of its own (hours of work in all).
"""

import time

import pytest

import rooflinekit as rk
from rooflinekit.planning import PLAN_WORK_LIMIT, estimate_work

SHORT = rk.Traffic(1.0, 20, 2)


def test_many_small_configurations_are_refused_before_any_work():
    start = time.perf_counter()
    with pytest.raises(ValueError, match="work_limit"):
        rk.plan(SHORT, rk.SLO(ttft=1.0), models="Llama-3.1-8B", gpus="H100-SXM-80GB",
                max_num_seqs=list(range(1, 301)), max_num_batched_tokens=list(range(300, 601)),
                replicates=1, requests=10)
    assert time.perf_counter() - start < 60          # refused, not run (it ran for hours)


def test_each_configuration_costs_a_fixed_million_token_steps():
    one = estimate_work(SHORT, 1, replicates=1, requests=10)
    # 13 runs × 10 requests × 2 output tokens, plus the configuration's own 1e6
    assert one == pytest.approx(13 * 10 * 2 + 1e6, rel=1e-12)
    assert estimate_work(SHORT, 300 * 301, replicates=1, requests=10) > PLAN_WORK_LIMIT
