"""A load curve of an expert- or pipeline-parallel replica (``load_curve(pp=, ep=)``).

``plan`` and the batcher take ``pp`` and ``ep``; a load curve runs the same replica at given
rates, so that a sweep of an expert-parallel server (TensorRT-LLM's ``--ep_size``, vLLM's
``--enable-expert-parallel``) can be laid beside its curve.
"""

import numpy as np
import pytest

import rooflinekit as rk
from rooflinekit.planning import load_curve
from rooflinekit.workloads import LogNormal

TRAFFIC = rk.Traffic(1.0, LogNormal(500, 0.5), LogNormal(100, 0.5))
SLO = rk.SLO(ttft=2.0, itl=0.2, quantile=0.9)
ARGS = dict(model="Mixtral-8x7B", gpu="H100-SXM-80GB", tp=2, max_num_seqs=64,
            max_num_batched_tokens=2048, replicates=2, requests=60, seed=3, rates=[1.0])


def test_the_experts_all_to_all_lengthens_every_step():
    """Spread over 2 GPUs instead of sharded, Mixtral's experts add an all-to-all to every
    step (two latencies per MoE layer, ``rooflinekit.roofline.layout.layout_terms``): on the
    same draws every replicate's mean TPOT is longer, and the curve says which layout it ran."""
    plain = load_curve(TRAFFIC, SLO, **ARGS)
    spread = load_curve(TRAFFIC, SLO, **ARGS, ep=2)
    assert (plain.attrs["pp"], plain.attrs["ep"]) == (1, 1)
    assert (spread.attrs["pp"], spread.attrs["ep"]) == (1, 2)
    assert np.all(spread["mean_tpot"].values > plain["mean_tpot"].values)
    # the same requests complete: the layout changes the clock, not the work
    assert np.allclose(spread["request_throughput"].values, plain["request_throughput"].values,
                       rtol=0.05)


def test_a_pipeline_replica_runs_its_stages():
    """Two stages of Llama-3.1-8B: each step crosses the stage boundary once more than on one
    GPU group, so its TPOT is no shorter."""
    args = {**ARGS, "model": "Llama-3.1-8B", "tp": 1}
    one = load_curve(TRAFFIC, SLO, **args)
    two = load_curve(TRAFFIC, SLO, **args, pp=2)
    assert two.attrs["pp"] == 2
    assert np.all(two["mean_tpot"].values >= one["mean_tpot"].values)


@pytest.mark.parametrize("changes, match", [
    ({"ep": 3}, "ep"),                        # 8 experts do not split over 3 GPUs
    ({"ep": 0}, "ep"),
    ({"pp": 1.5}, "pp"),
    ({"model": "Llama-3.1-8B", "tp": 1, "pp": 33}, "pp"),      # 32 layers
])
def test_a_layout_that_does_not_divide_is_refused_naming_it(changes, match):
    with pytest.raises((ValueError, TypeError), match=match):
        load_curve(TRAFFIC, SLO, **{**ARGS, **changes})
