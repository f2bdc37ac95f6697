"""Memory model: guide §2 figures to the unit, input kinds, errors and invariants."""

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from rooflinekit import GPU, ModelShape, catalog, units
from rooflinekit import memory as m


# -- guide §2 figures (exact; conventions in docs/conventions.md) ---------------------------------------

def test_kv_bytes_per_token_guide(guide_model):
    # guide §2.2: 2 × 80 × 8 × 128 × 2 = 327,680 B = 320 KiB exactly
    assert m.kv_bytes_per_token(guide_model) == 327_680
    assert m.kv_bytes_per_token(guide_model) == 320 * units.KiB


def test_kv_bytes_8k_sequence_is_2_5_gib(guide_model):
    # guide §2.2: an 8,192-token sequence holds 2.5 GiB exactly; 8,000 tokens is 2.44 GiB (conventions)
    assert m.kv_bytes_per_sequence(guide_model, 8192) == 2.5 * units.GiB
    assert m.kv_bytes_per_sequence(guide_model, 8000) / units.GiB == pytest.approx(2.44, abs=5e-3)


def test_weights_do_not_fit_one_card(guide_model, lab_gpu):
    # guide §2.4: 140 GB ≈ 130.4 GiB of weights > 80 GiB -> budget 0, 0 sequences
    assert m.weight_bytes(guide_model) == 140e9
    assert m.weight_bytes(guide_model) / units.GiB == pytest.approx(130.385, abs=1e-3)
    assert m.usable_kv_bytes(guide_model, lab_gpu, tp=1) == 0
    assert m.max_concurrent_sequences(guide_model, lab_gpu, 8192, tp=1) == 0


def test_kv_budget_8way_group(guide_model, lab_gpu):
    # guide §2.4 / conventions: (8 × 80 GiB − 140e9 B) × 0.9 = 458.65 GiB ("459")
    budget = m.usable_kv_bytes(guide_model, lab_gpu, tp=8)
    assert budget == pytest.approx((8 * 80 * units.GiB - 140e9) * 0.9, rel=1e-15)
    assert budget / units.GiB == pytest.approx(458.65, abs=5e-3)
    # the same through GPU.group
    assert m.usable_kv_bytes(guide_model, lab_gpu.group(8)) == budget


@pytest.mark.parametrize("kv_heads, expected", [(64, 22), (8, 183), (1, 1467)])
def test_concurrency_mha_gqa_mqa(guide_model, lab_gpu, kv_heads, expected):
    # guide §2.3 / conventions: MHA 22, GQA-8 183, MQA 1,467 concurrent 8k sequences on 8 × 80 GiB
    model = guide_model.replace(n_kv_heads=kv_heads)
    n = m.max_concurrent_sequences(model, lab_gpu, 8192, tp=8)
    assert n == expected
    assert isinstance(n, int)


def test_reserve_applies_after_weights(guide_model, lab_gpu):
    # conventions: 10% of *total* memory would give 178, not 183; 0 reserve gives more
    assert m.max_concurrent_sequences(guide_model, lab_gpu, 8192, tp=8, reserve=0.0) == 203
    assert m.max_concurrent_sequences(guide_model, lab_gpu, 8192, tp=8, reserve=0.1) == 183


# -- input kinds -----------------------------------------------------------------------------------

def test_scalar_in_scalar_out(guide_model, lab_gpu):
    assert isinstance(m.kv_bytes_per_sequence(guide_model, 10), float)
    assert isinstance(m.usable_kv_bytes(guide_model, lab_gpu, 8), float)
    assert isinstance(m.kv_budget_tokens(guide_model, lab_gpu, 8), int)


def test_ndarray_broadcasts(guide_model, lab_gpu):
    ctx = np.array([1024, 8192])
    tp = np.array([[2], [4], [8]])
    n = m.max_concurrent_sequences(guide_model, lab_gpu, ctx, tp=tp)
    assert isinstance(n, np.ndarray) and n.shape == (3, 2) and n.dtype == np.int64
    assert n[2, 1] == 183
    assert np.all(n[:, 0] >= n[:, 1])


def test_dataarray_in_labelled_out(guide_model, lab_gpu):
    ctx = xr.DataArray([1024, 8192], dims="context_length")
    n = m.max_concurrent_sequences(guide_model, lab_gpu, ctx, tp=8)
    assert isinstance(n, xr.DataArray)
    assert n.dims == ("context_length",)
    assert n.attrs["units"] == "1"
    assert int(n.sel(context_length=8192) if "context_length" in n.coords else n[1]) == 183
    kv = m.kv_bytes_per_sequence(guide_model, ctx)
    assert kv.attrs["units"] == "bytes"


def test_catalogue_dataset_broadcasts_by_name():
    models = catalog.models(as_dataset=True)
    gpus = catalog.gpus(as_dataset=True)
    n = m.max_concurrent_sequences(models, gpus, [1024, 8192], tp=[1, 8])
    assert set(n.dims) == {"model", "gpu", "context_length", "tp"}
    # every cell equals the scalar call on the matching specs
    for name in n.model.values[:3]:
        for g in n.gpu.values[:3]:
            for c in (1024, 8192):
                for t in (1, 8):
                    want = m.max_concurrent_sequences(catalog.model(name), catalog.gpu(g), c, tp=t)
                    got = int(n.sel(model=name, gpu=g, context_length=c, tp=t))
                    assert got == want


def test_catalogue_dataset_usable_and_weights():
    models = catalog.models(as_dataset=True)
    gpus = catalog.gpus(as_dataset=True)
    u = m.usable_kv_bytes(models, gpus, tp=8)
    assert u.attrs["units"] == "bytes" and set(u.dims) == {"model", "gpu"}
    assert (u >= 0).all()
    w = m.weight_bytes(models)
    assert w.dims == ("model",)
    assert m.kv_bytes_per_token(models).sel(model="guide-70b") == 327_680


# -- sliding window, MLA, paging, engine budget ----------------------------------------------------

def test_sliding_window_caps_windowed_layers(guide_model):
    half = guide_model.replace(sliding_window=4096, n_sliding_layers=40)
    per_layer = 2 * 8 * 128 * 2
    # inside the window every layer caches every token
    assert m.kv_bytes_per_sequence(half, 4096) == 80 * per_layer * 4096
    # past it only the 40 full layers grow: 40·C + 40·4096
    assert m.kv_bytes_per_sequence(half, 10_000) == per_layer * (40 * 10_000 + 40 * 4096)
    every = guide_model.replace(sliding_window=4096, n_sliding_layers=80)
    assert m.kv_bytes_per_sequence(every, 100_000) == m.kv_bytes_per_sequence(every, 4096)


def test_max_context_length(guide_model, lab_gpu):
    budget = (8 * 80 * units.GiB - 140e9) * 0.9
    assert m.max_context_length(guide_model, lab_gpu, tp=8) == int(budget // 327_680)
    assert m.max_context_length(guide_model, lab_gpu, tp=1) == 0
    every = guide_model.replace(sliding_window=4096, n_sliding_layers=80)
    assert m.max_context_length(every, lab_gpu, tp=8) == float("inf")
    half = guide_model.replace(sliding_window=4096, n_sliding_layers=40)
    longest = m.max_context_length(half, lab_gpu, tp=8)
    assert m.kv_bytes_per_sequence(half, longest) <= budget < m.kv_bytes_per_sequence(half, longest + 1)


def test_mla_cache_width():
    # DeepSeek-V3 style: 61 layers × (512 + 64) × 2 B = 70,272 B/token
    mla = ModelShape("mla", 61, 128, 128, 128, 671e9, kv_lora_rank=512, qk_rope_head_dim=64)
    assert m.kv_bytes_per_token(mla) == 61 * 576 * 2
    assert mla.attention == "MLA"


def test_blocks_and_waste(guide_model):
    assert m.blocks_per_sequence(0) == 0
    assert m.blocks_per_sequence(16) == 1
    assert m.blocks_per_sequence(17) == 2
    np.testing.assert_array_equal(m.blocks_per_sequence(np.array([1, 32, 33]), 32), [1, 1, 2])
    assert m.paged_waste_bytes(guide_model, 17, 16) == 15 * 327_680
    assert m.paged_waste_bytes(guide_model, 32, 16) == 0
    da = m.blocks_per_sequence(xr.DataArray([5, 40], dims="context_length"), 16)
    assert da.attrs["units"] == "1" and list(da.values) == [1, 3]


def test_engine_kv_cache_matches_vllm_arithmetic(guide_model, lab_gpu):
    # vLLM: available = total·util − (weights/tp + activations + non-torch); blocks = available // page
    out = m.engine_kv_cache(guide_model, lab_gpu, tp=8, gpu_memory_utilization=0.9,
                            activation_peak_bytes=2 * units.GiB, non_torch_bytes=units.GiB,
                            block_size=16, max_model_len=8192)
    per_gpu = 80 * units.GiB * 0.9 - (140e9 / 8 + 3 * units.GiB)
    page = 16 * 80 * 2 * 1 * 128 * 2            # 1 KV head per rank at tp=8
    assert out["num_blocks"] == int(per_gpu // page)
    assert out["kv_cache_tokens"] == out["num_blocks"] * 16
    assert out["max_concurrency"] == pytest.approx(out["num_blocks"] / 512)


def test_engine_kv_cache_replicates_heads_when_tp_exceeds_kv_heads(guide_model, lab_gpu):
    mqa = guide_model.replace(n_kv_heads=1)
    a = m.engine_kv_cache(mqa, lab_gpu, tp=8, max_model_len=8192)
    assert a["bytes_per_block"] == 16 * 80 * 2 * 1 * 128 * 2


# -- bad input -------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, match", [
    (dict(tp=0), "tp"), (dict(tp=1.5), "tp"), (dict(reserve=1.0), "reserve"),
    (dict(reserve=-0.1), "reserve"), (dict(context_length=0), "context_length"),
    (dict(context_length=-5), "context_length"),
])
def test_bad_input_names_argument(guide_model, lab_gpu, kwargs, match):
    args = dict(context_length=8192, tp=8, reserve=0.1) | kwargs
    with pytest.raises(ValueError, match=match):
        m.max_concurrent_sequences(guide_model, lab_gpu, **args)


def test_bad_types(guide_model, lab_gpu):
    with pytest.raises(TypeError, match="context_length"):
        m.kv_bytes_per_sequence(guide_model, "8k")
    with pytest.raises(ValueError, match="NaN"):
        m.kv_bytes_per_sequence(guide_model, np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="block_size"):
        m.blocks_per_sequence(10, 0)
    with pytest.raises(ValueError, match="gpu_memory_utilization"):
        m.engine_kv_cache(guide_model, lab_gpu, 8, gpu_memory_utilization=0, max_model_len=10)
    with pytest.raises(ValueError, match="max_model_len"):
        m.engine_kv_cache(guide_model, lab_gpu, 8)


# -- invariants (hypothesis) -----------------------------------------------------------------------

_gib = st.integers(min_value=1, max_value=1024)
_ctx = st.integers(min_value=1, max_value=2_000_000)


@settings(max_examples=200, deadline=None)
@given(mem_a=_gib, mem_b=_gib, ctx=_ctx, tp=st.sampled_from([1, 2, 4, 8]),
       reserve=st.floats(0, 0.99))
def test_concurrency_monotonic_in_memory(guide_model, mem_a, mem_b, ctx, tp, reserve):
    lo, hi = sorted((mem_a, mem_b))
    ga = GPU("a", lo * units.GiB, 1e12, 1e14)
    gb = GPU("b", hi * units.GiB, 1e12, 1e14)
    na = m.max_concurrent_sequences(guide_model, ga, ctx, tp=tp, reserve=reserve)
    nb = m.max_concurrent_sequences(guide_model, gb, ctx, tp=tp, reserve=reserve)
    assert isinstance(na, int) and 0 <= na <= nb


@settings(max_examples=200, deadline=None)
@given(c1=_ctx, c2=_ctx, window=st.one_of(st.none(), st.integers(1, 100_000)),
       n_sliding=st.integers(1, 80))
def test_concurrency_monotonic_in_context(guide_model, lab_gpu, c1, c2, window, n_sliding):
    model = guide_model if window is None else guide_model.replace(
        sliding_window=window, n_sliding_layers=n_sliding)
    lo, hi = sorted((c1, c2))
    assert m.kv_bytes_per_sequence(model, lo) <= m.kv_bytes_per_sequence(model, hi)
    n_lo = m.max_concurrent_sequences(model, lab_gpu, lo, tp=8)
    n_hi = m.max_concurrent_sequences(model, lab_gpu, hi, tp=8)
    assert n_lo >= n_hi >= 0


@settings(max_examples=100, deadline=None)
@given(params=st.floats(1e6, 2e12), mem=_gib, reserve=st.floats(0, 0.99))
def test_budget_never_negative(params, mem, reserve):
    model = ModelShape("x", 32, 32, 8, 128, params)
    gpu = GPU("g", mem * units.GiB, 1e12, 1e14)
    assert m.usable_kv_bytes(model, gpu, reserve=reserve) >= 0
    assert m.kv_budget_tokens(model, gpu, reserve=reserve) >= 0


# -- one test per input kind for every kernel ------------------------------------------------------

def _kernels(model, gpu):
    """(name, call(ctx, tp)) for every memory kernel with a context and/or tp argument."""
    return [
        ("kv_bytes_per_sequence", lambda c, t: m.kv_bytes_per_sequence(model, c)),
        ("usable_kv_bytes", lambda c, t: m.usable_kv_bytes(model, gpu, tp=t)),
        ("max_concurrent_sequences", lambda c, t: m.max_concurrent_sequences(model, gpu, c, tp=t)),
        ("kv_budget_tokens", lambda c, t: m.kv_budget_tokens(model, gpu, tp=t)),
        ("max_context_length", lambda c, t: m.max_context_length(model, gpu, tp=t)),
        ("blocks_per_sequence", lambda c, t: m.blocks_per_sequence(c, 16)),
        ("paged_waste_bytes", lambda c, t: m.paged_waste_bytes(model, c, 16)),
        ("group_memory_bytes", lambda c, t: m.group_memory_bytes(gpu, tp=t)),
    ]


_KINDS = ["scalar", "ndarray", "dataarray", "dataset"]
_BLOCKS = 5     # blocks_per_sequence takes no model or GPU: no Dataset case


@pytest.mark.parametrize("index, kind", [(i, k) for i in range(8) for k in _KINDS
                                         if not (i == _BLOCKS and k == "dataset")])
def test_every_kernel_every_input_kind(guide_model, lab_gpu, kind, index):
    ctx_values, tp_values = [1000, 8192], [4, 8]
    name, call = _kernels(guide_model, lab_gpu)[index]
    scalar = {(c, t): call(c, t) for c in ctx_values for t in tp_values}
    if kind == "scalar":
        for value in scalar.values():
            assert isinstance(value, (int, float))
        return
    if kind == "ndarray":
        out = call(np.array(ctx_values), np.array(tp_values))
        assert isinstance(out, np.ndarray)
        # contexts and tps line up elementwise (numpy rules)
        for i, (c, t) in enumerate(zip(ctx_values, tp_values)):
            assert np.ravel(np.broadcast_to(out, (2,)))[i] == scalar[(c, t)]
        return
    if kind == "dataarray":
        c = xr.DataArray(ctx_values, dims="context_length", coords={"context_length": ctx_values})
        t = xr.DataArray(tp_values, dims="tp", coords={"tp": tp_values})
        out = call(c, t)
        assert isinstance(out, xr.DataArray) and "units" in out.attrs and "long_name" in out.attrs
        for (cv, tv), want in scalar.items():
            sel = {k: v for k, v in (("context_length", cv), ("tp", tv)) if k in out.dims}
            assert float(out.sel(sel)) == want
        return
    # a catalogue Dataset in place of the spec objects (blocks_per_sequence takes no spec)
    ds_model = catalog.models(["guide-70b"], as_dataset=True)
    ds_gpu = catalog.gpus(["guide-lab-80GB"], as_dataset=True)
    _, ds_call = _kernels(ds_model, ds_gpu)[index]
    out = ds_call(ctx_values[1], tp_values[1])
    assert isinstance(out, xr.DataArray) and out.attrs["units"]
    assert float(out.squeeze()) == scalar[(ctx_values[1], tp_values[1])]


# -- KV copies when tensor parallelism outnumbers the KV heads -------------------------------------

def test_kv_copies_by_layout(guide_model):
    # each head once while tp <= H_kv; tp / H_kv copies beyond; MLA's latent on every rank
    assert m.kv_copies(guide_model, 8) == 1.0
    assert m.kv_copies(guide_model.replace(n_kv_heads=1), 8) == 8.0
    assert m.kv_copies(guide_model.replace(n_kv_heads=2), 8) == 4.0
    np.testing.assert_array_equal(m.kv_copies(guide_model, np.array([1, 16])), [1.0, 2.0])
    assert m.kv_copies(guide_model, 3) == pytest.approx(9 / 8)      # ceil(8/3) = 3 heads per rank
    mla = ModelShape("mla", 61, 128, 128, 128, 671e9, kv_lora_rank=512, qk_rope_head_dim=64)
    assert m.kv_copies(mla, 4) == 4.0
    ds = catalog.models(["DeepSeek-V3", "Falcon-7B", "Llama-3.1-70B"], as_dataset=True)
    copies = m.kv_copies(ds, xr.DataArray([1, 8], dims="tp", coords={"tp": [1, 8]}))
    assert copies.attrs["units"] == "1"
    np.testing.assert_array_equal(copies.sel(tp=8).values, [8.0, 8.0, 1.0])


def test_mqa_on_eight_gpus_with_replicated_kv(guide_model, lab_gpu):
    # guide §2.3's 1,467 stores MQA's single head once; an engine keeps one per GPU at tp=8,
    # which brings MQA down to GQA-8's 183 (1,467 // 8 = 183)
    mqa = guide_model.replace(n_kv_heads=1)
    assert m.max_concurrent_sequences(mqa, lab_gpu, 8192, tp=8) == 1467
    assert m.max_concurrent_sequences(mqa, lab_gpu, 8192, tp=8, replicate_kv=True) == 183
    assert m.max_concurrent_sequences(guide_model, lab_gpu, 8192, tp=8, replicate_kv=True) == 183
    assert m.kv_budget_tokens(mqa, lab_gpu, 8, replicate_kv=True) == \
        m.kv_budget_tokens(mqa, lab_gpu, 8) // 8
    assert m.max_context_length(mqa, lab_gpu, 8, replicate_kv=True) < \
        m.max_context_length(mqa, lab_gpu, 8)
    with pytest.raises(TypeError, match="replicate_kv"):
        m.max_concurrent_sequences(mqa, lab_gpu, 8192, tp=8, replicate_kv="yes")


@settings(max_examples=100, deadline=None)
@given(heads=st.sampled_from([1, 2, 4, 8, 16, 64]), tp=st.sampled_from([1, 2, 4, 8, 16]),
       ctx=_ctx)
def test_replication_never_adds_capacity(guide_model, lab_gpu, heads, tp, ctx):
    model = guide_model.replace(n_kv_heads=heads)
    assert m.kv_copies(model, tp) >= 1
    assert m.max_concurrent_sequences(model, lab_gpu, ctx, tp=tp, replicate_kv=True) <= \
        m.max_concurrent_sequences(model, lab_gpu, ctx, tp=tp)


# --- shared prefixes (prefix caching) ------------------------------------------------------------

def _tiny():
    # 1 layer, 1 KV head of 64 dims in bf16: 2 × 64 × 2 = 256 bytes per token
    return ModelShape("tiny", n_layers=1, n_heads=1, n_kv_heads=1, head_dim=64, n_params=1e6,
                      bytes_per_param=2, kv_bytes_per_element=2)


def test_a_shared_prefix_is_held_once_in_whole_blocks():
    # 100 sequences of 1,500 tokens sharing a 1,000-token prefix: blocks of 16 share
    # floor(1000/16)·16 = 992 tokens once, and each sequence holds its other 508.
    model = _tiny()
    per_token = 256
    shared, own = 992 * per_token, 508 * per_token
    budget = shared + 100 * own                   # exactly 100 sequences' worth
    # no reserve: the budget is what the weights (1e6 × 2 bytes) leave
    gpu = GPU("exact", memory_bytes=2e6 + budget, hbm_bandwidth=1e12, peak_flops=1e14)
    got = m.max_concurrent_sequences(model, gpu, 1500, reserve=0.0, shared_prefix_tokens=1000)
    assert got == 100
    # without sharing each holds all 1,500 tokens: floor(budget / (1500 × 256))
    assert m.max_concurrent_sequences(model, gpu, 1500, reserve=0.0) == \
        budget // (1500 * per_token)
    # a prefix below one block shares nothing
    assert m.max_concurrent_sequences(model, gpu, 1500, reserve=0.0, shared_prefix_tokens=15) \
        == m.max_concurrent_sequences(model, gpu, 1500, reserve=0.0)


def test_a_shared_prefix_longer_than_the_context_is_refused():
    model, gpu = _tiny(), catalog.gpu("L4")
    with pytest.raises(ValueError, match="shared_prefix_tokens"):
        m.max_concurrent_sequences(model, gpu, 100, shared_prefix_tokens=101)
    with pytest.raises(ValueError, match="shared_prefix_tokens"):
        m.max_concurrent_sequences(model, gpu, 100, shared_prefix_tokens=-1)


@given(st.integers(1, 50_000), st.integers(0, 50_000))
@settings(max_examples=60, deadline=None)
def test_sharing_never_lowers_concurrency(context, prefix):
    model, gpu = catalog.model("Llama-3.1-8B"), catalog.gpu("H100-SXM-80GB")
    prefix = min(prefix, context)
    assert m.max_concurrent_sequences(model, gpu, context, shared_prefix_tokens=prefix) >= \
        m.max_concurrent_sequences(model, gpu, context)
