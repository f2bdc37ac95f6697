"""Pipeline and expert-parallel layouts in the continuous batcher's roofline clock.

``ContinuousBatcher(model, gpu, tp=, pp=, ep=)``: a step passes the stages in turn with one
micro-batch in flight, so a prefill-only step is :func:`rooflinekit.roofline.layout_prefill_time`
and a decode step adds :func:`~rooflinekit.roofline.layout_decode_step_time`'s hand-offs and
all-to-all to the group's step; the derived KV budget is one GPU's of
:func:`rooflinekit.parallel.layout_memory`; the kernel still equals the reference bit for bit.
"""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_batching_kernels import assert_same

import rooflinekit as rk
from rooflinekit import catalog, parallel
from rooflinekit.batching import ContinuousBatcher
from rooflinekit.batching.batchers import _kernel_outputs
from rooflinekit.workloads import Workload

MOE = catalog.model("Mixtral-8x7B")
H100 = catalog.gpu("H100-SXM-80GB")
LAYOUTS = [(1, 1), (2, 1), (1, 2), (2, 2), (4, 1)]


def batcher(pp, ep, **kwargs):
    return ContinuousBatcher(model=MOE, gpu=H100, tp=2, pp=pp, ep=ep, **kwargs)


@pytest.mark.parametrize("pp, ep", LAYOUTS)
@pytest.mark.parametrize("prompt", [1, 500, 4000])
def test_a_prefill_step_is_the_layouts_prefill(pp, ep, prompt):
    # the ideal roofline, as the layout formula it is compared with
    ds = batcher(pp, ep, engine=rk.IDEAL).run(Workload([0.0], [prompt], [1]))
    expected = float(rk.layout_prefill_time(MOE, H100, prompt, tp=2, pp=pp, ep=ep))
    np.testing.assert_allclose(float(ds.first_token[0] - ds.admit[0]), expected, rtol=1e-13)


@pytest.mark.parametrize("pp, ep", LAYOUTS)
@pytest.mark.parametrize("batch", [1, 3])
def test_a_decode_step_adds_the_layouts_hand_offs_and_all_to_all(pp, ep, batch):
    # the inter-token gap of a decode step, less the same step on one group: the layout's
    # terms at one micro-batch, whatever the context
    wl = Workload([0.0] * batch, [500] * batch, [2] * batch)
    gap = float(batcher(pp, ep, engine=rk.IDEAL).run(wl).mean_token_itl)
    group = float(batcher(1, 1, engine=rk.IDEAL).run(wl).mean_token_itl)
    context = 600     # any: the terms do not depend on it
    added = (rk.layout_decode_step_time(MOE, H100, batch, context, tp=2, pp=pp, ep=ep)
             - rk.decode_step_time(MOE, H100, batch, context, 2))
    np.testing.assert_allclose(gap - group, float(added), rtol=1e-9, atol=1e-15)
    assert gap >= group


def test_one_group_is_unchanged():
    wl = Workload([0.0, 0.5, 0.5], [300, 20, 900], [5, 9, 3])
    a = ContinuousBatcher(model=MOE, gpu=H100, tp=2, max_num_seqs=4).run(wl)
    b = batcher(1, 1, max_num_seqs=4).run(wl)
    for name in ("first_token", "finish"):
        np.testing.assert_array_equal(a[name].values, b[name].values)


@pytest.mark.parametrize("pp, ep", LAYOUTS)
def test_the_kv_budget_is_one_gpus_of_the_layout(pp, ep):
    per_gpu = parallel.layout_memory(MOE, H100, tp=2, pp=pp, ep=ep, reserve=0.1)
    b = batcher(pp, ep)
    if (pp, ep) == (1, 1):
        assert b._kv_budget() == int(rk.kv_budget_tokens(MOE, H100, tp=2, reserve=0.1))
    else:
        assert b._kv_budget() == int(per_gpu.usable_kv_bytes // per_gpu.kv_bytes_per_token)
    # pipeline stages hold a share of the weights and of each token's KV: more tokens fit
    assert batcher(2, 1)._kv_budget() > 2 * batcher(1, 1)._kv_budget()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 12), layout=st.sampled_from(LAYOUTS), slots=st.integers(1, 4),
       admission=st.sampled_from(["reserve", "paged"]), seed=st.integers(0, 2**16))
def test_kernel_matches_reference_on_a_layout(n, layout, slots, admission, seed):
    rng = np.random.default_rng(seed)
    wl = Workload(np.cumsum(rng.uniform(0, 0.05, n)), rng.integers(0, 400, n),
                  rng.integers(1, 30, n))
    b = batcher(*layout, max_num_seqs=slots, kv_budget_tokens=2000, admission=admission)
    assert_same(_kernel_outputs(b, wl), b.reference(wl))


@pytest.mark.parametrize("kwargs, error, match", [
    ({"pp": 0}, ValueError, "pp"),
    ({"ep": 1.5}, ValueError, "ep"),
    ({"pp": "2"}, TypeError, "pp"),
    ({"pp": 3}, ValueError, "pp"),                    # 32 layers
    ({"ep": 3}, ValueError, "ep"),                    # 8 experts
    ({"pp": 2, "model": None, "gpu": None}, ValueError, "model and gpu"),
    ({"ep": 2, "model": catalog.model("llama-3.1-8b")}, ValueError, "ep"),   # dense
])
def test_bad_layouts(kwargs, error, match):
    args = {"model": MOE, "gpu": H100, "tp": 2, **kwargs}
    with pytest.raises(error, match=match):
        ContinuousBatcher(**args)


def test_speculative_decoding_on_a_layout_is_refused():
    spec = rk.Speculative(draft=0.1, draft_tokens=2, acceptance=0.5)
    with pytest.raises(ValueError, match="speculative"):
        batcher(2, 1, speculative=spec)


def test_a_stage_link_the_gpu_lacks_fails_at_construction():
    bare = dataclasses.replace(H100, network_bandwidth=None, interconnect_bandwidth=None)
    no_allreduce = rk.Engine(allreduce=False)  # the group's own all-reduce needs no link then
    with pytest.raises(ValueError, match="pp=2 needs a link"):
        ContinuousBatcher(model=MOE, gpu=bare, tp=2, pp=2, engine=no_allreduce)
    with pytest.raises(ValueError, match="ep=2 needs a link"):
        ContinuousBatcher(model=MOE, gpu=bare, tp=2, ep=2, engine=no_allreduce)


def test_a_sliding_window_model_on_a_layout_needs_a_kv_budget():
    """The derived KV budget is per full-layer token: a sliding-window model laid out over
    stages or expert groups is refused without ``kv_budget_tokens``, with one it builds."""
    gemma = rk.catalog.model("Gemma-2-9B")
    assert gemma.sliding_window is not None
    with pytest.raises(ValueError, match="sliding-window model on a pp or ep layout needs"):
        ContinuousBatcher(model=gemma, gpu=H100, pp=2)
    ContinuousBatcher(model=gemma, gpu=H100, pp=2, kv_budget_tokens=100_000)
