"""The engines' own all-reduce: each the faster of the two-stage collective and a one-shot.

vLLM's and SGLang's custom all-reduce and TensorRT-LLM's AUTO strategy run a small message in
one shot over NVLink (every GPU reads its ``d − 1`` peers' payloads and sums them between a
sync at the start and one at the end: two hop latencies) and a large one in two stages
(reduce-scatter, sync, all-gather: three, and ``2·(d−1)/d`` of one payload). ``Engine(allreduce="custom")`` times each all-reduce as the faster; the shipped
profiles are fitted on it. The expected values are written from first principles: Megatron's
two all-reduces a layer, each message ``tokens × hidden × 2`` bytes.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import xarray as xr

import rooflinekit as rk
from rooflinekit import Engine, catalog, parallel, roofline
from rooflinekit.calibrate import measurements_from_records, predict
from rooflinekit.profiles import resolve_engine
from rooflinekit.profiles.shipped import read_profile_file

#: Llama-3.1-70B: 80 layers, hidden 8192.
LAYERS, HIDDEN = 80, 8192


def _by_hand(tokens, degree, link, hop):
    """2·L all-reduces of ``tokens × h × 2`` bytes, each the faster of the two algorithms [s]."""
    message = tokens * HIDDEN * 2.0
    two_stage = 3 * hop + 2 * (degree - 1) / degree * message / link
    one_shot = 2 * hop + (degree - 1) * message / link
    return 2 * LAYERS * min(two_stage, one_shot)


def test_the_coefficients_by_hand():
    per_token, latency = parallel.one_shot_allreduce_coefficients(LAYERS, HIDDEN, 2.0, 8, 2e-6)
    assert per_token == 2 * LAYERS * 7 * HIDDEN * 2.0          # 18,350,080 bytes a token
    assert latency == pytest.approx(2 * LAYERS * 2 * 2e-6)      # 640 us: two syncs each
    # none for another algorithm, a PCIe card's ring or a group past a bounding host
    for kwargs in ({"algorithm": "collective"}, {"algorithm": "ring"},
                   {"ring_collectives": True}, {"host_gpus": 4}):
        assert parallel.one_shot_allreduce_coefficients(
            LAYERS, HIDDEN, 2.0, 8, 2e-6, **kwargs) == (0.0, math.inf), kwargs
    # one GPU: nothing to send, nothing to wait for
    assert parallel.one_shot_allreduce_coefficients(LAYERS, HIDDEN, 2.0, 1, 2e-6) == (0.0, 0.0)
    with pytest.raises(ValueError, match="algorithm"):
        parallel.one_shot_allreduce_coefficients(LAYERS, HIDDEN, 2.0, 8, 2e-6, "oneshot")


def test_the_coefficients_keep_their_input_type():
    degrees = xr.DataArray([2.0, 8.0], dims="tp")
    per_token, latency = parallel.one_shot_allreduce_coefficients(
        LAYERS, HIDDEN, 2.0, degrees, 2e-6, host_gpus=4.0)
    assert isinstance(per_token, xr.DataArray) and per_token.dims == ("tp",)
    np.testing.assert_allclose(per_token.values, [2 * LAYERS * HIDDEN * 2.0, 0.0])
    np.testing.assert_allclose(latency.values, [2 * LAYERS * 2 * 2e-6, math.inf])
    per_token, latency = parallel.one_shot_allreduce_coefficients(
        LAYERS, HIDDEN, 2.0, np.array([2.0, 4.0]), 2e-6)
    assert isinstance(per_token, np.ndarray) and isinstance(latency, np.ndarray)


@pytest.mark.parametrize("tp", [2, 4, 8])
@pytest.mark.parametrize("tokens", [1, 16, 64, 256, 2048])
def test_allreduce_time_is_the_faster_of_the_two(tp, tokens):
    model, gpu = catalog.model("Llama-3.1-70B"), catalog.gpu("H100-SXM-80GB")
    hop = 4.5e-6        # about what vLLM 0.24.0's H100 table implies (4.2-4.8 us at 2 KiB)
    custom = float(parallel.allreduce_time(model, gpu, tokens, tp, algorithm="custom",
                                           interconnect_latency=hop))
    collective = float(parallel.allreduce_time(model, gpu, tokens, tp,
                                               interconnect_latency=hop))
    want = _by_hand(tokens, tp, gpu.interconnect_bandwidth, hop)
    assert custom == pytest.approx(want, rel=1e-12)
    if tp == 2:     # two GPUs: one payload either way, so one shot always, a switch's two syncs
        assert custom == pytest.approx(collective, rel=1e-12)
    if tokens == 2048 and tp > 2:  # a prompt's message: two stages, a sync more than a switch
        assert custom - collective == pytest.approx(2 * LAYERS * hop, rel=1e-9)


def test_the_step_takes_it_and_the_default_is_unchanged_to_the_bit():
    model, gpu = catalog.model("Llama-3.1-70B"), catalog.gpu("H100-SXM-80GB")
    hop = 4.5e-6

    def step(engine, batch):
        return float(roofline.decode_step_time(model, gpu, batch_size=batch,
                                               context_length=1024, tp=8, engine=engine))
    collective = Engine(interconnect_latency=hop)
    custom = collective.replace(allreduce="custom")
    for batch in (1, 4, 32, 256):
        gain = _by_hand(batch, 8, gpu.interconnect_bandwidth, hop) - \
            float(parallel.allreduce_time(model, gpu, batch, 8, interconnect_latency=hop))
        assert step(custom, batch) - step(collective, batch) == pytest.approx(gain, abs=1e-12)
    # without the one-shot the step is the collective's, to the bit
    assert step(Engine(allreduce="collective"), 32) == step(Engine(), 32)


def test_no_one_shot_past_one_host_nor_over_pcie():
    """vLLM's and SGLang's custom all-reduce stop at one host (a GB300 tray's four GPUs): past
    it the switch's collective (two hops) alone, with the engine's cross-host latency; over
    PCIe the ring."""
    model, gb300 = catalog.model("Llama-3.1-70B"), catalog.gpu("GB300")

    def cost(gpu, tp, allreduce="custom", cross=0.0):
        return roofline.step_cost_coefficients(
            model, gpu, tp, engine=Engine(allreduce=allreduce, interconnect_latency=2e-6,
                                          cross_host_allreduce_latency=cross))
    assert math.isinf(cost(gb300, 8).one_shot_allreduce_latency)
    assert cost(gb300, 8).allreduce_latency == cost(gb300, 8, "collective").allreduce_latency
    assert cost(gb300, 8, cross=24e-6).allreduce_latency == pytest.approx(
        2 * LAYERS * (2 * 2e-6 + 24e-6))
    # within the tray: two syncs one-shot, three in two stages
    within = cost(gb300, 4)
    assert within.one_shot_allreduce_latency == pytest.approx(2 * LAYERS * 2 * 2e-6)
    assert within.allreduce_latency == pytest.approx(2 * LAYERS * 3 * 2e-6)
    l40s = catalog.gpu("L40S")
    assert math.isinf(cost(l40s, 4).one_shot_allreduce_latency)
    assert cost(l40s, 4).allreduce_latency == cost(l40s, 4, "collective").allreduce_latency


def test_a_calibration_predicts_with_it_as_the_formula_does():
    """The fit's terms (``one_shot``, ``one_shot_bytes``, ``one_shot_hops``) give the roofline
    formula's step, to rounding, whichever algorithm is the faster at each row."""
    rows = []
    for tp, gpu in ((2, "H100-SXM-80GB"), (4, "H100-SXM-80GB"), (8, "H100-SXM-80GB"),
                    (4, "GB300"), (8, "GB300")):
        for batch, ctx in ((1, 512), (16, 4096), (256, 1024)):
            rows.append({"model": "Llama-3.1-70B", "gpu": gpu, "tp": tp,
                         "batch_size": batch, "prompt_tokens": ctx, "output_tokens": 0,
                         "context_length": ctx, "ttft_ms": None, "tpot_ms": 10.0,
                         "source": "synthetic"})
    ds = measurements_from_records(rows)
    model = catalog.model("Llama-3.1-70B")
    base = Engine(allreduce="custom")
    for knobs in ({"bandwidth_efficiency": 0.8, "interconnect_latency": 4.5e-6,
                   "interconnect_efficiency": 0.6},
                  {"bandwidth_efficiency": 0.8, "interconnect_efficiency": 0.6},
                  {"bandwidth_efficiency": 0.8, "interconnect_latency": 2e-6,
                   "cross_host_allreduce_latency": 24e-6}):
        cal = rk.calibrate.Calibration(prefill={}, decode=knobs, base=base)
        got = predict(ds, cal)["decode"].values
        engine = base.replace(**knobs)
        want = [float(roofline.decode_step_time(model, catalog.gpu(r["gpu"]), r["batch_size"],
                                                r["context_length"], r["tp"], engine=engine))
                for r in rows]
        np.testing.assert_allclose(got, want, rtol=1e-9)


def test_the_shipped_profiles_time_with_the_engines_all_reduce():
    for key in rk.ENGINE_PROFILES:
        profile = rk.engine_profile(key.engine, key.gpu, key.version, warn=False)
        assert profile.base.allreduce == "custom", key
        assert profile.engine_for("decode", gpu=key.gpu).allreduce == "custom", key
    # one engine over several GPUs, and an older version, keep it
    several = resolve_engine("vllm", ["H100-SXM-80GB", "H200-SXM-141GB"], warn=False)
    assert several.engine_for("decode", gpu="H200-SXM-141GB").allreduce == "custom"
    assert rk.engine_profile("vllm", "H100-SXM-80GB", version="0.6.0",
                             warn=False).base.allreduce == "custom"
    # the ideal bound keeps the two-stage collective
    assert rk.IDEAL.allreduce == "collective"


def test_a_profile_file_with_an_unknown_all_reduce_is_refused_naming_it(tmp_path):
    from importlib import resources
    shipped = resources.files("rooflinekit").joinpath("data", "engine_profiles", "vllm.toml")
    text = shipped.read_text(encoding="utf-8").replace('allreduce = "custom"',
                                                        'allreduce = "oneshot"')
    path = tmp_path / "vllm.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=r"vllm\.toml.*allreduce"):
        read_profile_file(path)
    # without the field the file's profiles run on the ideal engine's collective
    path.write_text(text.replace('allreduce = "oneshot"\n', ""), encoding="utf-8")
    _, rows = read_profile_file(path)
    assert rows[0]["calibration"].base.allreduce == "collective"


def test_an_engine_refuses_an_unknown_all_reduce_naming_the_choices():
    with pytest.raises(TypeError, match="allreduce.*custom"):
        Engine(allreduce="oneshot")
    assert dataclasses.replace(Engine(), allreduce="custom").allreduce == "custom"
