"""Expert parallelism's load imbalance: the step waits for the busiest group of experts.

References are written from first principles: the expected largest of ``n`` normal draws in
closed form (``n`` ≤ 3) and from published tables (Harter 1961, ``n`` = 4, 5), the touched
experts of uniform routing by hand, and a Monte Carlo of routing itself (each token picks
``k`` distinct experts of ``E`` uniformly; the experts sit in ``ep`` equal groups).
"""

import math

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

import rooflinekit as rk
from rooflinekit import catalog, parallel, roofline
from rooflinekit.planning import load_curve

H200 = catalog.gpu("H200-SXM-141GB")
DSR1 = catalog.model("DeepSeek-R1")
MIXTRAL = catalog.model("Mixtral-8x7B")
#: One routed expert's bytes over DeepSeek-R1's layers: its parameters less the active ones,
#: over the experts a token skips, at the experts' own FP8 bytes (block scales included)
EXPERT_BYTES = (DSR1.n_params - DSR1.n_active_params - DSR1.n_aside_params) \
    / (DSR1.n_experts - DSR1.n_experts_per_token) * DSR1.bytes_per_expert_param


@pytest.mark.parametrize("n, expected, tolerance", [
    (1, 0.0, 0.0),                                   # one draw: its mean, exactly
    (2, 1.0 / math.sqrt(math.pi), 1e-9),             # closed form
    (3, 3.0 / (2.0 * math.sqrt(math.pi)), 1e-9),     # closed form
    (4, 1.0293753730, 1e-8),                         # Harter (1961), Biometrika 48, table 1
    (5, 1.1629644736, 1e-8),                         # same table
])
def test_expected_normal_maximum_against_closed_forms(n, expected, tolerance):
    assert parallel.expected_normal_maximum(n) == pytest.approx(expected, abs=tolerance)


def test_expected_normal_maximum_keeps_the_type_it_is_given():
    values = np.array([1, 2, 8])
    out = parallel.expected_normal_maximum(values)
    assert isinstance(out, np.ndarray) and out.shape == (3,)
    assert out[0] == 0.0 and out[1] == pytest.approx(1.0 / math.sqrt(math.pi), abs=1e-9)
    da = parallel.expected_normal_maximum(xr.DataArray(values, dims="ep"))
    assert isinstance(da, xr.DataArray) and da.dims == ("ep",)
    np.testing.assert_array_equal(da.values, out)
    assert isinstance(parallel.expected_normal_maximum(8), float)


@pytest.mark.parametrize("bad, error", [(0, ValueError), (1.5, ValueError),
                                        (5000, ValueError), ("8", TypeError),
                                        (math.nan, ValueError)])
def test_expected_normal_maximum_refuses_bad_counts(bad, error):
    with pytest.raises(error, match="n"):
        parallel.expected_normal_maximum(bad)


def _touched(experts, per_token, tokens):
    """Experts ``tokens`` uniformly routed tokens touch per layer, in expectation (by hand)."""
    return experts * (1.0 - (1.0 - per_token / experts) ** tokens)


def _busiest(experts, per_token, tokens, groups):
    """The busiest group's touched experts, normal around its share (module docstring)."""
    touched = _touched(experts, per_token, tokens)
    share = touched / groups
    spread = parallel.expected_normal_maximum(groups)
    return min(experts / groups,
               max(share + spread * math.sqrt(share * (1.0 - touched / experts)),
                   min(touched, 1.0)))


def _routed(experts, per_token, tokens, groups, draws, seed=0):
    """Monte Carlo: the mean over draws of the busiest group's touched experts."""
    rng = np.random.default_rng(seed)
    busiest = np.empty(draws)
    for d in range(draws):
        touched = np.zeros(experts, bool)
        for _ in range(tokens):
            touched[rng.choice(experts, per_token, replace=False)] = True
        busiest[d] = touched.reshape(groups, -1).sum(axis=1).max()
    return busiest.mean()


@pytest.mark.parametrize("experts, per_token, groups, tokens, tolerance", [
    (256, 8, 8, 1, 0.07),          # DeepSeek-V3/R1 over 8 GPUs: a token's 8 experts
    (256, 8, 8, 4, 0.03),
    (256, 8, 8, 16, 0.02),
    (256, 8, 8, 64, 0.02),
    (256, 8, 4, 16, 0.02),
    (8, 2, 2, 4, 0.02),            # Mixtral over 2
    (8, 2, 8, 1, 0.0),             # one expert a GPU: some GPU holds a touched one
    (128, 8, 8, 16, 0.03),         # Qwen3-MoE-shaped
])
def test_the_busiest_group_matches_routing_simulated(experts, per_token, groups, tokens,
                                                     tolerance):
    simulated = _routed(experts, per_token, tokens, groups, draws=3000)
    assert _busiest(experts, per_token, tokens, groups) == pytest.approx(
        simulated, rel=tolerance + 3.0 / math.sqrt(3000) / simulated)


@pytest.mark.parametrize("batch", [1, 4, 16, 64])
def test_a_decode_step_reads_the_busiest_groups_experts(batch):
    # DeepSeek-R1 decoding on 8 H200s, memory-bound at these batches: experts over 8 groups
    # add the busiest group's extra experts' bytes at the group's bandwidth, by hand
    tp, ep, context = 8, 8, 1024
    one = roofline.decode_step_time(DSR1, H200, batch, context, tp)
    spread = roofline.decode_step_time(DSR1, H200, batch, context, tp, ep=ep)
    experts, per_token = DSR1.n_experts, DSR1.n_experts_per_token
    extra = (ep * _busiest(experts, per_token, batch, ep)
             - _touched(experts, per_token, batch)) * EXPERT_BYTES
    assert spread - one == pytest.approx(extra / (tp * H200.hbm_bandwidth), rel=1e-9)
    assert spread > one


def test_one_group_and_a_dense_model_are_unchanged_to_the_bit():
    llama = catalog.model("llama-3.1-8b")
    for model in (DSR1, MIXTRAL, llama):
        for batch in (1, 7, 300):
            assert roofline.decode_step_time(model, H200, batch, 900, 8, ep=1) == \
                roofline.decode_step_time(model, H200, batch, 900, 8)
    # a dense model has nothing to spread (the layout formulas refuse ep > 1 for it)
    assert roofline.decode_step_time(llama, H200, 5, 900, 8, ep=8) == \
        roofline.decode_step_time(llama, H200, 5, 900, 8)


def test_a_long_prompt_touches_every_expert_and_evens_out():
    one = roofline.prefill_time(DSR1, H200, 8192, 8)
    spread = roofline.prefill_time(DSR1, H200, 8192, 8, ep=8)
    assert spread == pytest.approx(one, rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(batch=st.integers(1, 4096), ep=st.sampled_from([1, 2, 4, 8]),
       context=st.integers(0, 32_768))
def test_spreading_the_experts_never_speeds_a_step(batch, ep, context):
    one = roofline.decode_step_time(DSR1, H200, batch, context, 8)
    spread = roofline.decode_step_time(DSR1, H200, batch, context, 8, ep=ep)
    assert spread >= one
    # never more than every group reading all its experts
    assert spread - one <= DSR1.n_experts * EXPERT_BYTES / (8 * H200.hbm_bandwidth) \
        * (1 + 1e-12)


def test_step_cost_coefficients_carry_the_groups():
    cost = roofline.step_cost_coefficients(DSR1, H200, 8, ep=8)
    assert cost.expert_groups == 8.0
    assert cost.expert_spread == pytest.approx(1.4236003060, abs=1e-8)  # Harter (1961)
    plain = roofline.step_cost_coefficients(DSR1, H200, 8)
    assert (plain.expert_groups, plain.expert_spread) == (1.0, 0.0)
    with pytest.raises(ValueError, match="ep"):
        roofline.step_cost_coefficients(DSR1, H200, 8, ep=0)
    with pytest.raises(TypeError, match="ep"):
        roofline.step_cost_coefficients(DSR1, H200, 8, ep=[2, 4])


@pytest.mark.parametrize("bad, error", [(0, ValueError), (2.5, ValueError),
                                        (8192, ValueError), ("8", TypeError)])
def test_decode_step_time_refuses_a_bad_ep(bad, error):
    with pytest.raises(error, match="ep"):
        roofline.decode_step_time(DSR1, H200, 4, 100, 8, ep=bad)


def test_a_simulated_expert_parallel_replica_waits_for_the_busiest_group():
    # a closed loop of 4 clients on DeepSeek-R1 over 8 H200s: expert parallelism lengthens
    # TPOT by the busiest group's extra experts and the all-to-all
    traffic = rk.Traffic(rate=1.0, prompt=1000, output=200)
    common = dict(model=DSR1, gpu=H200, tp=8, concurrencies=[4], replicates=1, requests=16,
                  seed=1, engine=rk.IDEAL)
    plain = load_curve(traffic, rk.SLO(ttft=10.0, itl=1.0), **common)
    spread = load_curve(traffic, rk.SLO(ttft=10.0, itl=1.0), ep=8, **common)
    batch = 4
    all_to_all = (float(roofline.layout_decode_step_time(DSR1, H200, batch, 1100, tp=8, ep=8))
                  - float(roofline.decode_step_time(DSR1, H200, batch, 1100, 8, ep=8)))
    imbalance = (float(roofline.decode_step_time(DSR1, H200, batch, 1100, 8, ep=8))
                 - float(roofline.decode_step_time(DSR1, H200, batch, 1100, 8)))
    gained = float(spread.mean_tpot.squeeze()) - float(plain.mean_tpot.squeeze())
    # the imbalance is most of it (12 times the all-to-all); batches below 4 at the run's
    # ends and contexts from 1000 to 1200 move it a little
    assert imbalance > 10 * all_to_all
    assert gained == pytest.approx(imbalance + all_to_all, rel=0.1)
