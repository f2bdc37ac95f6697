"""The ideal model is the speed of light: each term pinned on a case worked out by hand.

Every expected value here is written from the model's shape and the GPU's datasheet numbers,
without the package's helpers (docs/validation.md, "Physics of the ideal model").
"""

import itertools

import pytest

from rooflinekit import GPU, ModelShape, catalog
from rooflinekit import roofline as r
from rooflinekit import Engine

GiB = 2**30
L, H, HKV, D, HID, V = 80, 64, 8, 128, 8192, 128_000
P = 70e9
PEAK16, PEAK8, BW, LINK, HOP = 989e12, 1979e12, 3.35e12, 450e9, 1e-6


def shape(**changes):
    """A 70B-class model with a 128k vocabulary (embeddings inside ``n_params``)."""
    fields = dict(name="t70", n_layers=L, n_heads=H, n_kv_heads=HKV, head_dim=D,
                  hidden_size=HID, vocab_size=V, n_params=P)
    return ModelShape(**{**fields, **changes})


@pytest.fixture(scope="module")
def gpu():
    return GPU("t", 80 * GiB, BW, PEAK16, peak_flops_by_dtype={"fp8": PEAK8},
               interconnect_bandwidth=LINK, interconnect_latency=HOP)


# 1. all-reduce payload in the activation format ------------------------------------------------

def test_allreduce_payload_is_the_activation_dtype(gpu):
    # fp8 KV, bf16 activations, tp=2: 160 all-reduces of 8 tokens × 8,192 × 2 B, half of it
    # sent (2·(d−1)/d = 1), plus 2 link latencies each: 160 × (131,072 / 450e9 + 2 µs)
    m = shape(vocab_size=None, kv_bytes_per_element="fp8")
    comm = r.decode_step_time(m, gpu, 8, 0, 2) - r.decode_step_time(m, gpu, 8, 0, 2,
                                                                     engine=Engine(allreduce="guide"))
    assert comm == pytest.approx(160 * (8 * 8192 * 2 / 450e9 + 2e-6), rel=1e-9)
    fp32 = r.decode_step_time(m, gpu, 8, 0, 2, engine=Engine(activation_dtype="fp32")) - \
        r.decode_step_time(m, gpu, 8, 0, 2, engine=Engine(allreduce="guide"))
    assert fp32 == pytest.approx(160 * (8 * 8192 * 4 / 450e9 + 2e-6), rel=1e-9)


# 2. attention at the activation format's peak ----------------------------------------------------

def test_attention_runs_at_the_bf16_peak_with_fp8_weights(gpu):
    # fp8 weights: the GEMMs (2 × 70e9 per token) at 1,979 TFLOP/s; attention
    # (4 · 64 · 128 · 80 FLOPs per cached token) at 989 TFLOP/s, one after the other
    m = shape(vocab_size=None, bytes_per_param="fp8", kv_bytes_per_element="fp8")
    b, c = 64, 4096
    gemm = 2 * 70e9 * b / 1979e12
    attention = 4 * 64 * 128 * 80 * b * c / 989e12
    got = r.decode_compute_time(m, gpu, b, c, engine=Engine(compute_dtype="fp8"))
    assert got == pytest.approx(gemm + attention, rel=1e-12)
    # 16-bit everything: one peak for both, the former figure
    m16 = shape(vocab_size=None)
    assert r.decode_compute_time(m16, gpu, b, c) == pytest.approx(
        (2 * 70e9 * b + 4 * 64 * 128 * 80 * b * c) / 989e12, rel=1e-12)


# 3. the embedding table is looked up, the LM head multiplied -----------------------------------

def test_untied_embeddings_read_one_row_per_token(gpu):
    m = shape()
    table = 128_000 * 8192
    # weights read: everything but the input table (70e9 − 1.048576e9 params × 2 B), plus one
    # row of 8,192 × 2 B per token; FLOPs: 2 per parameter that multiplies (not the table)
    for b in (1, 32):
        assert r.decode_bytes(m, b, 0) == pytest.approx((70e9 - table) * 2 + b * 8192 * 2,
                                                        rel=1e-12)
        assert r.decode_flops(m, b, 0) == pytest.approx(2 * (70e9 - table) * b, rel=1e-12)


def test_tied_embeddings_read_the_shared_matrix_once(gpu):
    m = shape(tie_word_embeddings=True)
    # the LM head reads and multiplies the shared matrix: all 70e9 parameters once, plus rows
    assert r.decode_bytes(m, 4, 0) == pytest.approx(70e9 * 2 + 4 * 8192 * 2, rel=1e-12)
    assert r.decode_flops(m, 4, 0) == pytest.approx(2 * 70e9 * 4, rel=1e-12)


# 4. prefill needs the logits of its last token only --------------------------------------------

def test_prefill_charges_the_lm_head_once(gpu):
    m = shape()
    n, head = 2048, 128_000 * 8192
    body = 70e9 - 2 * head                      # neither the table nor the head
    attention = 4 * 64 * 128 * 80 * n * (n - 1) / 2
    expected = 2 * body * n + 2 * head + attention
    assert r.prefill_flops(m, n) == pytest.approx(expected, rel=1e-12)
    # compute-bound, and all of it at the 16-bit peak
    assert r.prefill_time(m, gpu, n, engine=Engine(allreduce="guide")) == pytest.approx(expected / 989e12,
                                                                         rel=1e-12)


# 5. prefill's traffic: prompt KV writes and the stated elementwise passes -----------------------

def test_prefill_bytes_count_kv_writes_and_elementwise_passes():
    m = shape()
    n = 512
    weights = (70e9 - 128_000 * 8192) * 2
    rows = n * 8192 * 2
    kv = n * 2 * 80 * 8 * 128 * 2                    # K and V of every prompt token, 80 layers
    elementwise = n * 80 * 8 * 8192 * 2              # 2 norms + 2 residual adds, read + write
    assert r.prefill_bytes(m, n) == pytest.approx(weights + rows + kv + elementwise, rel=1e-12)
    assert r.prefill_bytes(m, n, engine=Engine(activation_dtype="fp32")) == pytest.approx(
        weights + rows + kv + 2 * elementwise, rel=1e-12)


# 6. all-reduce on by default, one latency per collective ----------------------------------------

def test_allreduce_is_on_by_default_and_flat_in_the_degree(gpu):
    m = shape(vocab_size=None)
    base = {t: r.decode_step_time(m, gpu, 16, 1024, t, engine=Engine(allreduce="guide")) for t in (2, 4, 8)}
    for t in (2, 4, 8):
        expected = 160 * (2 * (t - 1) / t * 16 * 8192 * 2 / 450e9 + 2 * 1e-6)
        assert r.decode_step_time(m, gpu, 16, 1024, t) - base[t] == pytest.approx(expected,
                                                                                  rel=1e-9)
        ring = 160 * (2 * (t - 1) / t * 16 * 8192 * 2 / 450e9 + 2 * (t - 1) * 1e-6)
        assert r.decode_step_time(m, gpu, 16, 1024, t, engine=Engine(allreduce="ring")) - base[t] == \
            pytest.approx(ring, rel=1e-9)
    assert r.decode_step_time(m, gpu, 16, 1024, 1) == r.decode_step_time(
        m, gpu, 16, 1024, 1, engine=Engine(allreduce="guide"))
    # a 2,048-token prefill at tp=8 pays 160 × 1.75 × 2,048 × 8,192 × 2 B over 450 GB/s
    ttft = r.prefill_time(m, gpu, 2048, 8) - r.prefill_time(m, gpu, 2048, 8, engine=Engine(allreduce="guide"))
    assert ttft == pytest.approx(160 * (1.75 * 2048 * 8192 * 2 / 450e9 + 2e-6), rel=1e-9)


def test_allreduce_option_is_checked(gpu):
    m = shape()
    with pytest.raises(TypeError, match="allreduce must be True or False, or one of"):
        r.decode_step_time(m, gpu, engine=Engine(allreduce="tree"))
    with pytest.raises(TypeError, match="activation_dtype must be a format name"):
        r.decode_step_time(m, gpu, engine=Engine(activation_dtype=2))
    with pytest.raises(ValueError, match="activation_dtype: unknown format"):
        r.decode_step_time(m, gpu, engine=Engine(activation_dtype="bf17"))


# 7. the ideal is the speed of light --------------------------------------------------------------

def _speed_of_light(m, g, tp, batch, context, prompt, weights_fp8, fuller=False):
    """A step's time from first principles [s]; ``fuller`` adds terms the model leaves out.

    Decode: ``batch`` sequences at ``context``; prefill: one prompt of ``prompt`` tokens
    (``batch`` and ``context`` then unused). Arithmetic: every weight that multiplies does two
    FLOPs per token (the LM head only for tokens that need logits), attention 4·H·d per layer
    per (query, key) pair; GEMMs at the weights' peak, attention at the 16-bit one. Traffic:
    the weights that multiply, one embedding row per token, the KV read and written, and the
    hidden state's norms and residual adds of prompt tokens. Communication: 2 all-reduces per
    layer of tokens × hidden × 2 B, 2·(d−1)/d of it over the link, 2 link latencies each.
    """
    w_bytes = 1 if weights_fp8 else 2
    head = (m.vocab_size or 0) * m.hidden_size
    table = 0 if m.tie_word_embeddings else head
    kv_token = 2 * m.n_layers * m.n_kv_heads * m.head_dim * m.kv_bytes_per_element
    per_pair = 4 * m.n_heads * m.head_dim * m.n_layers
    peak_w = (g.flops_for("fp8") if weights_fp8 else g.peak_flops) * tp
    peak_a, bw = g.peak_flops * tp, g.hbm_bandwidth * tp
    rows = m.hidden_size * w_bytes if head else 0
    if prompt:
        tokens, logits = prompt, 1
        pairs = prompt * (prompt - 1) / 2
        kv = prompt * kv_token                                      # written
        elementwise = prompt * m.n_layers * 8 * m.hidden_size * 2
    else:
        tokens, logits = batch, batch
        pairs = batch * context
        kv = batch * context * kv_token                             # read
        elementwise = 0
    if fuller:
        # left out by the model, present in any real step: SwiGLU's reads and writes and, in
        # decode, the new token's K/V and the hidden state's passes
        elementwise += tokens * m.n_layers * 3 * m.intermediate_size * 2
        if not prompt:
            kv += batch * kv_token
            elementwise += batch * m.n_layers * 8 * m.hidden_size * 2
    gemm = 2 * (m.n_params - table - head) * tokens + 2 * head * logits
    compute = gemm / peak_w + per_pair * pairs / peak_a
    traffic = (m.n_params - table) * w_bytes + rows * tokens + kv + elementwise
    comm = 0.0
    if tp > 1:
        comm = 2 * m.n_layers * (2 * (tp - 1) / tp * tokens * m.hidden_size * 2 / g.
                                 interconnect_bandwidth + 2 * g.interconnect_latency)
    return max(compute, traffic / bw) + comm


GRID = list(itertools.product(("Llama-3.1-8B", "Llama-3.1-70B", "Gemma-2-9B"), (1, 2, 4, 8),
                              (1, 16, 128), (0, 2048, 8192), (False, True)))


def _setup(name, fp8):
    m = catalog.model(name)
    if fp8:
        m = m.replace(bytes_per_param="fp8", kv_bytes_per_element="fp8")
    if m.sliding_window is not None:        # full attention: the reference has no window
        m = m.replace(sliding_window=None, n_sliding_layers=None)
    return m, catalog.gpu("H100-SXM-80GB")


@pytest.mark.parametrize("name,tp,batch,context,fp8", GRID)
def test_ideal_tpot_is_the_speed_of_light(name, tp, batch, context, fp8):
    m, g = _setup(name, fp8)
    dtype = "fp8" if fp8 else None
    ideal = r.decode_step_time(m, g, batch, context, tp, engine=Engine(compute_dtype=dtype))
    same_terms = _speed_of_light(m, g, tp, batch, context, 0, fp8)
    assert ideal <= _speed_of_light(m, g, tp, batch, context, 0, fp8, fuller=True) * (1 + 1e-12)
    assert ideal == pytest.approx(same_terms, rel=SAME_TERMS, abs=0)


#: The prefill cases: each (model, tp, prompt, format) once (GRID's batch sizes do not apply).
PREFILL_GRID = list(itertools.product(("Llama-3.1-8B", "Llama-3.1-70B", "Gemma-2-9B"),
                                      (1, 2, 4, 8), (2048, 8192), (False, True)))
#: The model's ideal step and the first-principles sum of the same terms agree to rounding
#: (a few ulps: the two add the same terms in another order); a 1e-12 tolerance still
#: catches an error of one part in 10^12 in any term.
SAME_TERMS = 1e-12


@pytest.mark.parametrize("name,tp,prompt,fp8", PREFILL_GRID)
def test_ideal_ttft_is_the_speed_of_light(name, tp, prompt, fp8):
    m, g = _setup(name, fp8)
    dtype = "fp8" if fp8 else None
    ideal = r.prefill_time(m, g, prompt, tp, engine=Engine(compute_dtype=dtype))
    same_terms = _speed_of_light(m, g, tp, 1, 0, prompt, fp8)
    assert ideal <= _speed_of_light(m, g, tp, 1, 0, prompt, fp8, fuller=True) * (1 + 1e-12)
    assert ideal == pytest.approx(same_terms, rel=SAME_TERMS, abs=0)
