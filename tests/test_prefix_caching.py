"""Prefix caching in the prefill formulas: the cached part of a prompt is read, not computed."""

import numpy as np
import pytest
import xarray as xr

import rooflinekit as rk
from rooflinekit import catalog

M = catalog.model("Llama-3.1-8B")
G = catalog.gpu("H100-SXM-80GB")


def test_nothing_cached_is_the_plain_prefill():
    for p in (1, 17, 2000):
        assert rk.prefill_time(M, G, p, cached_tokens=0) == rk.prefill_time(M, G, p)
    assert rk.request_latency(M, G, 500, 20, cached_tokens=0) == rk.request_latency(M, G, 500, 20)


@pytest.mark.parametrize("cached", [1, 100, 1500, 1999])
def test_a_hit_is_the_rest_after_a_context_of_the_hit(cached):
    assert rk.prefill_time(M, G, 2000, cached_tokens=cached) == \
        rk.prefill_time(M, G, 2000 - cached, context_length=cached)


def test_the_context_and_the_hit_add():
    assert rk.prefill_time(M, G, 2000, context_length=300, cached_tokens=700) == \
        rk.prefill_time(M, G, 1300, context_length=1000)


def test_a_fully_cached_prompt_costs_about_one_decode_step():
    # by hand: the last token is computed at context P - 1, as a decode step at batch 1 is,
    # plus writing its own KV and the elementwise traffic of one prompt token
    p = 4096
    full = rk.prefill_time(M, G, p, cached_tokens=p)
    decode = rk.decode_step_time(M, G, 1, p - 1)
    assert full == pytest.approx(decode, rel=2e-3)
    assert full >= decode
    assert full < rk.prefill_time(M, G, p) / 10


def test_more_cached_is_faster():
    t = rk.prefill_time(M, G, 8000, cached_tokens=np.array([0, 2000, 4000, 6000, 8000]))
    assert np.all(np.diff(t) < 0)


def test_labelled_inputs_broadcast_by_name():
    p = xr.DataArray([1000, 2000], dims="prompt_tokens")
    c = xr.DataArray([0, 500, 1000], dims="cached_tokens")
    t = rk.prefill_time(M, G, p, cached_tokens=c)
    assert t.dims == ("prompt_tokens", "cached_tokens")
    assert float(t[1, 1]) == rk.prefill_time(M, G, 2000, cached_tokens=500)


def test_request_latency_takes_the_hit_in_its_prefill():
    hit = rk.request_latency(M, G, 2000, 50, cached_tokens=1500)
    miss = rk.request_latency(M, G, 2000, 50)
    assert miss - hit == pytest.approx(rk.prefill_time(M, G, 2000)
                                       - rk.prefill_time(M, G, 2000, cached_tokens=1500))


@pytest.mark.parametrize("func", [rk.prefill_time, rk.layout_prefill_time])
@pytest.mark.parametrize("bad", [-1, 101, 2.5, np.nan, np.array([10, 200])])
def test_cached_tokens_outside_the_prompt_is_refused(func, bad):
    with pytest.raises(ValueError, match="cached_tokens"):
        func(M, G, 100, cached_tokens=bad)


def test_cached_tokens_of_the_wrong_type_is_refused():
    with pytest.raises(TypeError, match="cached_tokens"):
        rk.prefill_time(M, G, 100, cached_tokens="10")
    with pytest.raises(ValueError, match="cached_tokens"):
        rk.request_latency(M, G, 100, 10, cached_tokens=200)
