"""The batchers' clock: what a step lasts, and the KV budget a replica holds.

``clock="tick"`` (the guide's lab): one tick per step; times in ticks. ``clock="roofline"``: each
step lasts what the roofline model (:func:`rooflinekit.roofline.mixed_step_time`) says for that
step's batch on ``model`` + ``gpu`` × ``tp``: its decode tokens, prefill tokens and KV read, run
by the batcher's ``engine`` (a :class:`~rooflinekit.Engine` or a calibration; default
:data:`rooflinekit.IDEAL`); times in seconds. Arrival times are in the clock's unit.

This module holds what the batchers read before a kernel runs: a clock's step-cost
coefficients, memoised, with a ``(tp, pp, ep)`` layout's sends folded in; the same clock in plain
Python for the reference; and the one rule a replica's KV budget is derived by
(:func:`replica_kv_budget`, which :func:`rooflinekit.plan` sizes replicas by too), with a hybrid
model's recurrent state per sequence (:func:`replica_state_tokens`). It knows no batcher, runs no
kernel and draws nothing.
"""

from __future__ import annotations

import fractions
import functools
import math

import numpy as np

from rooflinekit import memory, parallel, roofline
from rooflinekit._validation import check_bool, check_one_of, check_type, whole_number
from rooflinekit.batching._schema import CLOCKS, UNLIMITED
from rooflinekit.dtypes import bytes_per_element
from rooflinekit.memory import vllm_block_size
from rooflinekit.models import ModelShape

__all__ = ["replica_kv_budget", "replica_kv_window", "kv_window_text", "replica_state_tokens",
           "vllm_block_size"]


def replica_kv_budget(model, gpu, tp=1, *, reserve=memory.DEFAULT_RESERVE,
                      gpu_memory_utilization=None, block_size=16, speculative=None, pp=1,
                      ep=1, activation_peak_bytes=0.0, non_torch_bytes=0.0,
                      weight_layout_bytes=0.0, share_of="total") -> int:
    """A replica's KV budget [the target's tokens]: the one rule batchers and plans derive it by.

    Parameters
    ----------
    model, gpu : ModelShape, GPU
        The model and one GPU of the replica.
    tp : int
        Tensor-parallel degree [1].
    reserve : float
        The guide's rule: share of the memory left after the weights kept as working space, in
        [0, 1); used when ``gpu_memory_utilization`` is ``None``. Default 0.10.
    gpu_memory_utilization : float, optional
        vLLM's rule instead: the share of each GPU's memory for weights and KV, in (0, 1]
        (:func:`rooflinekit.memory.engine_kv_cache`, whole blocks of ``block_size``).
        :func:`rooflinekit.plan` uses it (default 0.9, vLLM's); a batcher uses the guide's
        rule unless given it.
    block_size : int
        KV block size [tokens] of vLLM's rule.
    speculative : Speculative, optional
        A draft's weights (:meth:`Speculative.weight_bytes`) come off the memory beside the
        target's; its KV then shares the budget in the batcher (:meth:`Speculative.kv_tokens`).
    pp, ep : int
        A pipeline or expert layout: :func:`rooflinekit.parallel.layout_memory`'s weights and
        KV per token on each GPU instead of the tensor-parallel rank's.
    activation_peak_bytes, non_torch_bytes, weight_layout_bytes : float
        What the engine keeps on each GPU beside weights and KV under vLLM's rule [bytes], >= 0
        (:func:`rooflinekit.profiles.footprint`); default 0 (the bound). Not read under the
        guide's rule.
    share_of : {"total", "free"}
        What ``gpu_memory_utilization`` is a share of (:func:`rooflinekit.memory.engine_kv_cache`):
        the driver's total (default; vLLM's and SGLang's rule) or what the weights and the
        engine's memory leave (TensorRT-LLM's). Not read under the guide's rule.

    Returns
    -------
    int
        Tokens; 0 where the weights leave no room.

    Notes
    -----
    The tokens are those of the attention layers' KV cache (``kv_per_token`` counts only the
    layers that cache tokens, :attr:`ModelShape.kv_bytes_per_token`). A hybrid model's
    recurrent state is per running sequence, not per token, so it is not taken off here: the
    batcher charges each running sequence :func:`replica_state_tokens` of these tokens.

    Guide: ``⌊(tp·memory − W − W_draft)(1 − reserve) / kv_per_token⌋``
    (:func:`rooflinekit.memory.kv_budget_tokens`). vLLM: ``⌊(available − W_draft/tp) /
    bytes_per_block⌋ · block_size`` with ``available`` from
    :func:`rooflinekit.memory.engine_kv_cache`; a layout's ``available`` is corrected by
    ``W/tp − W_gpu`` and its blocks hold ``kv_gpu · block_size`` bytes.
    """
    if gpu_memory_utilization is None:
        if pp > 1 or ep > 1:
            # one GPU of the layout: its KV room over the KV each token leaves on it
            per_gpu = parallel.layout_memory(model, gpu, tp=tp, pp=pp, ep=ep, reserve=reserve)
            return int(per_gpu.usable_kv_bytes // per_gpu.kv_bytes_per_token)
        # the draft's weights (a model's, or a head's share of a layer) beside the target's
        extra = 0.0 if speculative is None else speculative.weight_bytes(model)
        return int(np.asarray(memory.kv_budget_tokens(model, gpu, tp=tp, reserve=reserve,
                                                      draft_weight_bytes=extra)).item())
    kv = memory.engine_kv_cache(model, gpu, tp, block_size=block_size,
                                gpu_memory_utilization=gpu_memory_utilization,
                                activation_peak_bytes=activation_peak_bytes,
                                non_torch_bytes=non_torch_bytes,
                                weight_layout_bytes=weight_layout_bytes, max_model_len=block_size,
                                share_of=share_of)
    available, bytes_per_block = kv["available_bytes"], kv["bytes_per_block"]
    # weights moved or added on a GPU move its KV by the rule's scale (1, or a share of free)
    scale = kv["weight_scale"]
    if pp > 1 or ep > 1:
        per_gpu = parallel.layout_memory(model, gpu, tp=tp, pp=pp, ep=ep)
        available += scale * (memory.weight_bytes(model) / tp - float(per_gpu.weight_bytes))
        bytes_per_block = float(per_gpu.kv_bytes_per_token) * block_size
    held = 0.0 if speculative is None else speculative.weight_bytes(model)
    if held > 0.0:
        available -= scale * held / int(tp)
    elif pp == ep == 1:
        return int(kv["kv_cache_tokens"])
    return max(int(available // bytes_per_block), 0) * int(block_size)


def replica_state_tokens(model, gpu=None, tp=1, *, gpu_memory_utilization=None, block_size=16,
                         speculative=None, pp=1, ep=1, prefix_caching=False) -> int:
    """Tokens of a replica's KV budget one running sequence's recurrent state holds [tokens].

    Parameters
    ----------
    model : ModelShape
        The model; its :attr:`~rooflinekit.ModelShape.state_bytes_per_sequence` is the state.
    gpu : GPU, optional
        One GPU of the replica; read only with ``gpu_memory_utilization`` (vLLM's per-rank
        rule), as :func:`replica_kv_budget` reads it.
    tp : int
        Tensor-parallel degree [1], >= 1.
    gpu_memory_utilization : float, optional
        ``None``: the budget's tokens are the guide's (:func:`replica_kv_budget` without it);
        else vLLM's, one rank's (its KV heads replicated where ``tp`` exceeds them).
    block_size : int
        KV block size [tokens] of vLLM's rule, >= 1.
    speculative : Speculative, optional
        A draft sharing the budget: its KV makes each budget token dearer
        (:meth:`Speculative.kv_tokens`) and a draft model's own state adds to the target's.
    pp, ep : int
        A pipeline or expert layout (>= 1): the state is taken to split over the GPUs as the
        KV does, so the model-wide ratio applies.
    prefix_caching : bool
        Whether the engine caches prefixes: under vLLM's rule a hybrid's state then takes two
        blocks a state group (vLLM's "align" mode, its default with prefix caching). Default
        False.

    Returns
    -------
    int
        Tokens [tokens], >= 0: 0 for a model without recurrent layers.

    Notes
    -----
    The budget counts tokens of the attention layers' KV (:func:`replica_kv_budget`); a
    sequence's recurrent state ``S`` [bytes] is charged as the fewest of those tokens that
    hold it:

    .. math:: S_{tok} = \\left\\lceil \\frac{S}{b_{tok}} \\right\\rceil

    with ``b_tok`` the bytes one budget token costs: ``kv_bytes_per_token`` (the guide's rule
    and layouts); vLLM's rule, one rank's ``bytes_per_block / block_size``
    (:func:`rooflinekit.memory.engine_kv_cache`) against its ``S / tp`` (the state's heads
    split over the ranks), i.e. ``b_tok = tp · bytes_per_block / block_size``; a speculative
    draft multiplies ``b_tok`` by ``(kv_target + kv_draft) / kv_target`` (a head: ``1 + s``)
    and a draft model adds its own state to ``S``. Paged admission holds
    ``⌈S_tok / block_size⌉`` blocks a sequence (the kernel rounds).

    This models vLLM's hybrid KV-cache manager, which gives each running request one block in
    each state group beside its attention blocks (a worked comparison on Qwen3-Next-80B-A3B:
    ``docs/simulator.md``, "batching/clock.py"); under vLLM's rule the batchers and plans
    hold KV in vLLM's enlarged block (:func:`vllm_block_size`), where the state takes exactly
    vLLM's blocks. Under vLLM's rule the state is also held ``c`` times, vLLM's blocks a
    request in each state group (:func:`rooflinekit.memory.engine_kv_cache`): ``c = 1``, or 2
    with ``prefix_caching`` ("align"), plus one a drafted token of ``speculative`` (the
    states a rejected draft rolls back to). Not modelled: the state group count's rounding;
    sharing of cached states between requests (a state is never shared).

    References
    ----------
    .. [1] vLLM ``vllm/model_executor/models/config.py``
       (``HybridAttentionMambaModelConfig.verify_and_update_config``),
       ``vllm/v1/core/kv_cache_utils.py`` (``_get_kv_cache_groups_uniform_page_size``),
       ``vllm/v1/core/single_type_kv_cache_manager.py`` (``MambaManager``: one block a
       request).
    """
    check_type("model", model, ModelShape)
    tp = whole_number("tp", tp, lo=1)
    block_size = whole_number("block_size", block_size, lo=1)
    pp = whole_number("pp", pp, lo=1)
    ep = whole_number("ep", ep, lo=1)
    check_bool("prefix_caching", prefix_caching)
    state = float(model.state_bytes_per_sequence)
    # [bytes/token], whole model; > 0: a ModelShape has at least one attention layer
    per_token = float(model.kv_bytes_per_token)
    if speculative is not None:
        draft = speculative.draft
        if isinstance(draft, ModelShape):
            state += float(draft.state_bytes_per_sequence)
            scale = (per_token + float(draft.kv_bytes_per_token)) / per_token
        else:                     # a head: its share of the target's KV per token
            scale = 1.0 + float(draft)
    else:
        scale = 1.0
    if state == 0.0:
        return 0
    if gpu_memory_utilization is not None:
        # vLLM's state blocks a request in each group: "align" keeps two, a draft token one more
        state *= (2 if prefix_caching else 1) + (
            0 if speculative is None else int(speculative.draft_tokens))
    if gpu_memory_utilization is not None and pp == 1 and ep == 1:
        # one rank: its KV per token (heads replicated past their count) against S / tp
        kv = memory.engine_kv_cache(model, gpu, tp, block_size=block_size,
                                    gpu_memory_utilization=gpu_memory_utilization,
                                    max_model_len=block_size)
        per_token = tp * float(kv["bytes_per_block"]) / kv["block_size"]
    return math.ceil(state / (per_token * scale))


#: Largest unit count of a block under :func:`replica_kv_window` (the full and sliding
#: layers' byte shares as a fraction with at most this denominator).
MAX_WINDOW_UNITS = 256

#: How the engines pool a sliding-window model's KV (:func:`replica_kv_window`'s ``pool``).
KV_POOLS = ("vllm", "sglang")

#: SGLang's window pool against its full pool, in tokens (``--swa-full-tokens-ratio``; SGLang
#: 0.5 ``server_args.py``, default 0.8).
SGLANG_SWA_FULL_TOKENS_RATIO = 0.8


def replica_kv_window(model, block_size=16, *, pool="vllm") -> tuple[int, int, int, int]:
    """How a paged engine holds a sliding-window model's KV: ``(full_units, sliding_units,
    window_blocks, block_units)``, the kernels' ``kv_window``.

    Parameters
    ----------
    model : ModelShape
        The model; its ``n_sliding_layers`` windowed (or chunked-local) layers of
        ``sliding_window`` tokens beside its full-attention ones.
    block_size : int
        KV block size [tokens], >= 1.
    pool : {"vllm", "sglang"}
        The engine's pooling: vLLM's hybrid KV-cache manager (default) or SGLang's separate
        window pool (Notes).

    Returns
    -------
    (int, int, int, int)
        ``full_units`` and ``sliding_units`` [1]: the units a block of context takes in the
        full-attention and in the sliding layers; ``window_blocks`` [blocks], the blocks a
        sliding layer keeps a sequence; ``block_units`` [1], the units in a block of every
        layer (a block of the KV budget). The smallest whole numbers in those ratios.
        ``(1, 0, UNLIMITED, 1)`` for a model without sliding layers.

    Notes
    -----
    vLLM's hybrid KV-cache manager pages each layer kind in its own groups from one pool of
    blocks, and frees a sliding layer's blocks once every token in them is out of the window
    [1]: a decoding sequence of context ``c`` then holds ``⌈c / B⌉`` blocks in the full layers
    and at most

    .. math:: W_b = \\lceil W / B \\rceil + 1

    in the sliding ones (the window's blocks and the one it starts in; vLLM's own figure for
    a decoding request, ``cdiv(W - 1 + 1, B) + 1``, which its logged maximum concurrency
    counts). A unit is one layer's page of a block: vLLM pages each kind in groups of ``g``
    layers (:func:`rooflinekit.memory.vllm_kv_cache_groups`: ``G_a`` full and ``G_w`` sliding
    groups, the last of a kind padded), so a block of context takes ``u_f = G_a·g`` units in
    the full layers and ``u_s = G_w·g`` in the sliding ones, where the budget's block of every
    layer is ``u_b = L_a + L_w`` units (the layers that hold KV), and a sequence holds
    ``u_f·⌈c/B⌉ + u_s·min(⌈c/B⌉, W_b)`` units. Gemma-3-27B: 10 full and 52 sliding layers in
    groups of 10, ``(10, 60, W_b, 62)``, i.e. ``(5, 30, W_b, 31)``: the padding's eight
    layers are held too. Sliding layers whose KV bytes differ from a full layer's take their
    share of a token's bytes instead, unpadded (``u_f : u_s = b_f : b_s``, ``u_b = u_f + u_s``,
    a denominator of at most :data:`MAX_WINDOW_UNITS`). A chunked-local layer (Llama 4) is held
    the same way, at most its chunk's ``⌈W / B⌉`` blocks (vLLM frees a chunk's blocks when the
    next chunk starts, so a sequence holds ``c mod W`` of its tokens there: the cap
    overcharges it by up to the chunk, half of it on average).

    SGLang (``pool="sglang"``) splits its cache into a full pool of ``F`` tokens for the full
    layers and a window pool of ``0.8 F`` for the sliding ones
    (:data:`SGLANG_SWA_FULL_TOKENS_RATIO`), so that ``F (b_f + 0.8 b_s)`` bytes are the cache,
    and a request holds its whole context in the full pool [2]: a block of context takes ``u_f =
    b_f + 0.8 b_s`` units where a block of the budget (every layer) is ``u_b = b_f + b_s``,
    and none of this pool in the sliding layers (``(u_f, u_b − u_f, 0, u_b)``, a window of no
    blocks: gpt-oss, 18 and 18 layers, ``(9, 1, 0, 10)``). The window pool, which holds at most
    a window a request, binds only when the running requests' windows fill it, which is not
    modelled. A model whose layers are all windowed holds every layer's whole context there.

    While a sequence prefills, the kernels hold its sliding layers at ``W_b + ⌈(T − 1) / B⌉``
    blocks for a step budget ``T`` (vLLM's ``cdiv(W − 1 + T, B) + 1``, within a block).
    Not modelled: sharing a cached prefix's sliding blocks (a prefix shares its full layers'
    blocks only).

    References
    ----------
    .. [1] vLLM ``vllm/v1/core/single_type_kv_cache_manager.py`` (``SlidingWindowManager``,
       ``ChunkedLocalAttentionManager``: ``remove_skipped_blocks``) and
       ``vllm/v1/kv_cache_interface.py`` (``SlidingWindowSpec.max_memory_usage_bytes``).
    .. [2] SGLang ``python/sglang/srt/model_executor/model_runner.py``
       (``set_num_token_hybrid``: ``full_max_total_num_tokens = total_tokens /
       (swa_full_tokens_ratio · L_s + L_f)``) and ``server_args.py`` (``swa_full_tokens_ratio
       = 0.8``).

    See Also
    --------
    replica_kv_budget : the budget these units divide.
    """
    check_type("model", model, ModelShape)
    block_size = whole_number("block_size", block_size, lo=1)
    check_one_of("pool", pool, KV_POOLS)
    n_sliding = int(model.n_sliding_layers or 0)
    if model.sliding_window is None or n_sliding == 0:
        return 1, 0, UNLIMITED, 1
    # the full and the sliding layers' KV bytes a token
    full = model.n_full_layers * float(model.kv_bytes_per_token_per_layer)
    sliding = n_sliding * float(model.sliding_kv_bytes_per_token_per_layer)
    if pool == "sglang":
        if model.n_full_layers == 0:
            return 1, 0, UNLIMITED, 1
        # a token of context against a token of every layer, as a fraction
        share = fractions.Fraction((full + SGLANG_SWA_FULL_TOKENS_RATIO * sliding)
                                   / (full + sliding)).limit_denominator(MAX_WINDOW_UNITS)
        # the sliding layers' share of a block holds none of it (a window of 0 blocks)
        return (share.numerator, share.denominator - share.numerator, 0, share.denominator)
    # a window's blocks and the one it starts in; a chunk's blocks (aligned to its start)
    window_blocks = -(-int(model.sliding_window) // block_size) + (
        1 if model.attention_chunk_size is None else 0)
    group, full_groups, _, sliding_groups = memory.vllm_kv_cache_groups(model)
    if sliding_groups:               # vLLM's groups of one page size
        units = (full_groups * group, sliding_groups * group, int(model.n_kv_layers))
    else:                            # sliding layers of their own size: their byte share
        share = fractions.Fraction(sliding / (full + sliding)).limit_denominator(
            MAX_WINDOW_UNITS)
        if share.numerator == 0:     # a sliding share below 1/MAX_WINDOW_UNITS
            return 1, 0, UNLIMITED, 1
        units = (share.denominator - share.numerator, share.numerator, share.denominator)
    common = math.gcd(*units)
    return units[0] // common, units[1] // common, window_blocks, units[2] // common


def kv_window_text(model, block_size=16, *, pool="vllm") -> str | None:
    """How :func:`replica_kv_window` holds ``model``'s sliding-window layers, in words; ``None``
    for a model without them."""
    full, sliding, blocks, unit = replica_kv_window(model, block_size, pool=pool)
    if sliding == 0 and full == unit:
        if model.sliding_window is None or not model.n_sliding_layers:
            return None
        return f"every layer windowed ({model.sliding_window:,} tokens): each holds it whole"
    if blocks == 0:
        return (f"a request's context in SGLang's full pool, {full}/{unit} of a token of every "
                f"layer, beside a window pool of {SGLANG_SWA_FULL_TOKENS_RATIO:g} its tokens")
    return (f"the {model.n_sliding_layers} sliding-window layers keep {blocks} blocks of "
            f"{block_size} tokens a request ({model.sliding_window:,}-token window; vLLM's "
            f"hybrid KV-cache manager)")


class _Timing:
    """The clock as the kernels take it: ``tick`` and the step-cost ``coef`` (float64
    :class:`rooflinekit.roofline.StepCost` fields, zeros on the tick clock), ``draft_coef`` and
    ``draft_share`` of a speculative draft, ``reference_clock`` for the reference (``None`` for
    ticks) and ``frontend_latency`` [s], which the summaries add to each TTFT and latency, and
    ``request_overhead`` [s], the engine's time per request taken in (0 on the tick clock),
    which a continuous kernel adds to the step after each arrival.
    """

    def __init__(self, clock, model, gpu, tp, engine, draft=None, layout=(1, 1)):
        self.clock = clock
        self.tick = clock == "tick"
        self.draft_coef = np.zeros(len(roofline.StepCost._fields))
        self.draft_share = draft if isinstance(draft, float) else 0.0
        if self.tick:
            self.coef = np.zeros(len(roofline.StepCost._fields))
            self.reference_clock = None
            self.units = "tick"
            self.frontend_latency = 0.0
            self.request_overhead = 0.0
            return
        # outside the steps: added to what the client sees, never to a step (results.py)
        self.frontend_latency = float(engine.frontend_latency)
        self.request_overhead = float(engine.request_overhead)
        cost = roofline.step_cost_coefficients(model, gpu, tp=tp, ep=layout[1], engine=engine)
        cost = _layout_cost(cost, model, gpu, *layout, engine)
        self.coef = np.array([float(c) for c in cost], dtype=np.float64)
        draft_cost = None
        if draft is not None and not isinstance(draft, float):
            # the draft runs on the target's engine, picked for the target's model
            draft_cost = roofline.step_cost_coefficients(draft, gpu, tp=tp, engine=engine)
            self.draft_coef = np.array([float(c) for c in draft_cost], dtype=np.float64)
        self.reference_clock = _RooflineClock(tuple(float(c) for c in cost),
                                              cost.full_attention_fraction, cost.sliding_window,
                                              draft_cost, self.draft_share)
        self.units = "s"


@functools.lru_cache(maxsize=256)
def _shared_timing(clock, model, gpu, tp, engine, draft=None, layout=(1, 1)):
    """:class:`_Timing` of one clock, memoised (frozen specs): a planner's search asks every run."""
    return _Timing(clock, model, gpu, tp, engine, draft, layout)


def _layout_cost(cost, model, gpu, pp, ep, engine):
    """The step cost of a ``(tp, pp, ep)`` layout with one micro-batch in flight: the stages in
    turn plus :func:`rooflinekit.roofline.layout_terms`' sends, joined to the all-reduce term of
    the step formula (a per-token time over a unit link, and a latency).
    """
    if pp == 1 and ep == 1:
        return cost
    links = roofline.layout_links(gpu.interconnect_bandwidth, gpu.interconnect_latency,
                                  gpu.network_bandwidth, engine.interconnect_efficiency)
    if pp > 1 and links.stage_bandwidth is None:
        raise ValueError(f"pp={pp} needs a link for the stage-to-stage activations and "
                         f"gpu {gpu.name!r} has none (network_bandwidth, "
                         f"interconnect_bandwidth)")
    if ep > 1 and links.expert_bandwidth is None:
        raise ValueError(f"ep={ep} needs a link for the expert all-to-all and gpu "
                         f"{gpu.name!r} has no interconnect_bandwidth")
    terms = roofline.layout_terms(model.hidden_size, parallel.moe_layers(model),
                                  model.n_experts_per_token,
                                  bytes_per_element(engine.activation_dtype), pp, ep, links)

    def joined(bytes_per_token, latency):
        """An all-reduce's per-token time over a unit link and its latency, with the sends."""
        return (bytes_per_token / cost.link_bandwidth                   # [s/token]
                + terms.hand_off_per_token + terms.all_to_all_per_token,
                latency + terms.hand_off_latency + terms.all_to_all_latency)
    per_token, fixed = joined(cost.allreduce_bytes_per_token, cost.allreduce_latency)
    # the one-shot alternative (none, an infinite latency, unless the engine's) sends the same
    one_per_token, one_fixed = joined(cost.one_shot_allreduce_bytes_per_token,
                                      cost.one_shot_allreduce_latency)
    return cost._replace(allreduce_bytes_per_token=per_token, link_bandwidth=1.0,
                         allreduce_latency=fixed,
                         one_shot_allreduce_bytes_per_token=one_per_token,
                         one_shot_allreduce_latency=one_fixed)


class _RooflineClock:
    """The roofline clock in plain Python, for the reference simulator."""

    def __init__(self, coef, full_attention_fraction, sliding_window, draft_cost=None,
                 draft_share=0.0):
        self._coef = coef
        self._fa, self._sw = full_attention_fraction, sliding_window
        self.window = sliding_window
        self._draft = None if draft_cost is None else tuple(float(c) for c in draft_cost)
        if draft_cost is not None:
            self._draft_fa = draft_cost.full_attention_fraction
            self._draft_window = draft_cost.sliding_window
        self._draft_share = draft_share

    def draft_time(self, n_decode, kv_tokens_read, contexts):
        """One draft step of ``n_decode`` sequences at ``contexts`` [s]: a draft model's decode
        step, or a draft head's share of the target's (``kv_tokens_read``: the target's read)."""
        if self._draft is None:
            return self._draft_share * self.step_time(n_decode, 0.0, kv_tokens_read, 0.0, 0.0)
        fa, window = self._draft_fa, self._draft_window
        read = (fa * float(sum(contexts))
                + (1.0 - fa) * float(sum(min(c, window) for c in contexts)))
        return roofline.mixed_step_time_kernel(*self._draft, n_decode, 0.0, read, 0.0, 0.0)

    def draft_prefill_time(self, n_prefill_tokens, chunks):
        """The draft's pass over a step's prompt ``chunks`` (``(chunk, cached)`` pairs, in
        admission order) [s]: a draft model's step of those tokens, or a draft head's share of
        the target's."""
        longest = max((chunk for chunk, _ in chunks), default=0.0)
        if self._draft is None:
            read = pairs = 0.0
            for chunk, cached in chunks:
                read += self.kv_read(cached)
                pairs += self.chunk_pairs(chunk, cached)
            return self._draft_share * self.step_time(0.0, n_prefill_tokens, read, pairs,
                                                      longest)
        fa, window = self._draft_fa, self._draft_window
        read = pairs = 0.0
        for chunk, cached in chunks:
            read += roofline.kv_tokens_read_kernel(cached, fa, window)
            pairs += roofline.prefill_context_tokens_kernel(chunk, cached, fa, window)
        return roofline.mixed_step_time_kernel(*self._draft, 0.0, n_prefill_tokens, read, pairs,
                                               longest)

    def kv_read_sum(self, context_sum, windowed_sum):
        """KV tokens read by decoding sequences from ``sum(C)`` and ``sum(min(C, window))``."""
        return self._fa * context_sum + (1.0 - self._fa) * windowed_sum

    def step_time(self, n_decode, n_prefill_tokens, kv_tokens_read, prefill_context_tokens,
                  longest_prefill_chunk):
        return roofline.mixed_step_time_kernel(*self._coef, n_decode, n_prefill_tokens,
                                               kv_tokens_read, prefill_context_tokens,
                                               longest_prefill_chunk)

    def kv_read(self, context):
        return roofline.kv_tokens_read_kernel(context, self._fa, self._sw)

    def chunk_pairs(self, chunk, cached):
        return roofline.prefill_context_tokens_kernel(chunk, cached, self._fa, self._sw)


def _timing_for(clock, model, gpu, tp, engine, draft=None, layout=(1, 1)):
    """The :class:`_Timing` of a clock: memoised, or afresh where a spec does not hash (an
    :class:`~rooflinekit.Engine` of array fields).
    """
    key = (clock, model, gpu, tp, engine, draft, layout)
    try:
        hash(key)
    except TypeError:
        return _Timing(*key)
    return _shared_timing(*key)


def _resolve_clock(clock, model, gpu):
    """The clock a batcher's fields settle on: ``clock`` checked, or by default ``"tick"``
    without a model and ``"roofline"`` with one (``model`` and ``gpu`` go together)."""
    if (model is None) != (gpu is None):
        raise ValueError("model and gpu must be given together (to derive the KV budget and to "
                         "time steps), or both left None")
    if clock is None:
        clock = "tick" if model is None else "roofline"
    check_one_of("clock", clock, tuple(CLOCKS.values()))
    if clock == "roofline" and model is None:
        raise ValueError("clock='roofline' needs model and gpu")
    return clock

