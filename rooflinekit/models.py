"""Model architecture specifications: what a transformer stores and moves (guide §2)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from rooflinekit import hf_config
from rooflinekit._validation import (MAX_LAYERS, check_bool, check_string, positive_number,
                                      real_number, show, whole_number)
from rooflinekit._labels import SPEC_PARAMETERS, document
from rooflinekit.dtypes import bytes_per_element

__all__ = ["ModelShape", "model_from_hf_config"]

#: The fields giving a group of weights a format of its own (ModelShape's Parameters).
_WEIGHT_GROUPS = ("body_bytes_per_param", "expert_bytes_per_param", "embedding_bytes_per_param")


def _int_field(name: str, value, lo: int = 1, allow_none: bool = False):
    """A count field: a whole number, at least one unless ``lo`` says otherwise."""
    return whole_number(name, value, lo, allow_none=allow_none)


@document(SPEC_PARAMETERS)
@dataclasses.dataclass(frozen=True)
class ModelShape:
    """The shape of a decoder-only transformer, as far as serving memory and traffic go.

    Parameters
    ----------
    n_layers : int
        Decoder layers, L; at most :data:`~rooflinekit._validation.MAX_LAYERS` (10,000).
    n_heads : int
        Query (attention) heads.
    n_kv_heads : int
        Key/value heads, H_kv. ``n_heads`` must be a multiple of it: equal is MHA, 1 is MQA,
        anything between is GQA.
    head_dim : int
        Head dimension, d_head.
    n_params : float
        Total parameters (all experts for MoE). :meth:`from_hf_config` counts them from the shapes
        when a config does not state them.
    bytes_per_param : str or float
        Weight format by name ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "mxfp4", "nvfp4")
        or bytes per parameter: the checkpoint's format (its quantized values' width for a
        quantized one), used for every weight that no per-group field below gives otherwise.
        Default "bf16" (2 bytes).
    kv_bytes_per_element : str or float
        KV-cache format, independent of the weights (an fp8 or int4 checkpoint usually still caches
        16-bit KV). Default "bf16" (2 bytes).
    hidden_size, intermediate_size, vocab_size : int, optional
        Model width, MLP width (per expert for MoE) and vocabulary, informational except
        ``hidden_size``, which sizes the all-reduce payload of tensor parallelism (default
        ``n_heads * head_dim``).
    n_active_params : float, optional
        Parameters used per token (MoE); ``None`` means all of ``n_params``.
    n_aside_params : float
        Parameters held in ``n_params`` that no generated token runs, routed or not: a
        multimodal model's vision and audio encoders [1]. Default 0. They are neither active
        nor routed experts, so :attr:`expert_params` leaves them out.
    n_experts, n_experts_per_token : int
        Routed experts per MoE layer and experts each token uses; 1 and 1 for dense models.
    kv_lora_rank, qk_rope_head_dim : int, optional
        Multi-head latent attention (DeepSeek-V2/V3): each layer caches one latent vector of
        ``kv_lora_rank + qk_rope_head_dim`` elements per token instead of K and V per head.
    sliding_window : int, optional
        Window of sliding-window attention [tokens]: a windowed layer caches at most this many.
    n_sliding_layers : int, optional
        How many layers use the window (Gemma-2 alternates, so half of them); ``None`` with a
        window means all layers.
    tie_word_embeddings : bool
        Whether the output projection shares the embedding matrix (parameter counting).
    max_context : int, optional
        Longest context the model was trained for [tokens], informational.
    source : str
        Where the figures come from (the model card or ``config.json`` URL).
    body_bytes_per_param, expert_bytes_per_param, embedding_bytes_per_param : str or float, optional
        Bytes per parameter of three groups of weights stored in formats of their own, scales
        and zero points included [bytes]: the body (:attr:`body_params`: attention, dense and
        shared-expert MLPs, routers, norms, encoders), the routed experts
        (:attr:`expert_params`) and the token-embedding table with the LM head
        (:attr:`embedding_params`). ``None`` (the default) means ``bytes_per_param``
        (:attr:`bytes_per_body_param` and its siblings give the value in force). A
        quantized checkpoint read by :meth:`from_hf_config` sets them: gpt-oss keeps its
        experts in MXFP4 (0.53125 B) and the rest in bf16. Changing ``bytes_per_param`` with
        :meth:`replace` alone resets them, so that a new format applies to every weight.
    n_attention_layers : int, optional
        Layers with a KV cache (full or sliding-window attention), at most ``n_layers``; ``None``
        (the default) means all of them (:attr:`n_kv_layers` gives the count in force). Hybrid
        models have fewer: Qwen3-Next 12 of 48, Nemotron-H-8B 4 of 52.
    n_linear_attention_layers, n_mamba_layers : int
        Layers of linear attention (Gated DeltaNet) and of Mamba state-space mixing, which keep
        a constant recurrent state per sequence instead of a KV cache. Default 0.
    state_bytes_per_sequence : float
        Bytes of that state one sequence holds, all recurrent layers together [bytes], ≥ 0:
        constant in the context length. Default 0.
    ssm_state_bytes_per_sequence : float
        The part of ``state_bytes_per_sequence`` that is the recurrent (SSM or delta-rule) state
        proper, held at ``ssm_state_bytes_per_element`` [bytes], ≥ 0 and at most
        ``state_bytes_per_sequence``; the rest is the short convolution's state, held in the
        activations' 16-bit format. Default 0 (the split not given: the format cannot be
        changed).
    ssm_state_bytes_per_element : str or float
        Format of that recurrent state (vLLM's ``--mamba-ssm-cache-dtype``, SGLang's
        ``--mamba-ssm-dtype``). Default "fp32" (4 bytes), the releases' own. ``replace`` with a
        new format rescales ``ssm_state_bytes_per_sequence`` and ``state_bytes_per_sequence``
        with it.
    attention_chunk_size : int, optional
        Chunk of chunked local attention [tokens] (Llama 4: 8,192): the ``n_sliding_layers``
        windowed layers are then chunked layers, each attending within the chunk its token
        falls in; ``sliding_window`` must equal it. A chunked layer holds at most one chunk,
        the bound a window of that length gives, so memory and traffic take them as windowed
        layers. ``None`` (the default): no chunked attention.
    indexer_bytes_per_token_per_layer : float
        Bytes one token adds to one attention layer's sparse-attention indexer key cache
        [bytes], ≥ 0, counted in :attr:`kv_bytes_per_token_per_layer` beside the KV (or MLA
        latent): DeepSeek-V3.2 keeps a 128-wide FP8 key with one FP32 scale, 132 B
        (:func:`rooflinekit.hf_config.indexer_key_bytes`). Default 0 (no indexer).
    v_head_dim : int, optional
        Value head dimension of the attention layers when it differs from ``head_dim`` (the
        query/key one; MiMo-V2-Flash: 128 beside 192). ``None`` (the default): ``head_dim``.
        With MLA, which caches a latent instead, the value heads its prefill decompresses to
        (DeepSeek-V3: 128; GLM-5: 256), which only :attr:`prefill_attention_width` reads;
        ``None`` there: ``head_dim − qk_rope_head_dim``.
    sliding_n_kv_heads, sliding_head_dim, sliding_v_head_dim : int, optional
        KV heads, key and value head dimensions of the ``n_sliding_layers`` windowed layers
        when they differ from the full layers' (MiMo-V2-Flash: 8 KV heads in its
        sliding-window layers beside 4 in its full ones). ``None`` (the default): the full
        layers' ``n_kv_heads`` and ``head_dim``, and for the value head ``v_head_dim`` or else
        the sliding key head dimension, so that a model whose attention layers are alike has
        one KV layout. Need sliding layers; not with MLA. Query heads are ``n_heads`` in both
        kinds.
    fp4_matmuls : bool, optional
        Whether the weight matrix multiplies run W4A4 on FP4 tensor cores where the GPU lists
        an FP4 peak (Blackwell), as TensorRT-LLM, vLLM and SGLang serve NVFP4 checkpoints: a
        GPU without one runs them at its 16-bit peak. ``None`` (the default) infers it from
        ``bytes_per_param`` given by name: ``True`` for "nvfp4" and "fp4", ``False`` for every
        other name and for bytes given as a number (weight-only int4 widens to 16 bits; MXFP4
        experts run W4A16 or W4A8 by engine and backend). An engine's ``compute_dtype``
        overrides it. :meth:`replace` with a new ``bytes_per_param`` infers it afresh unless
        given too.
    index_topk : int, optional
        Tokens the sparse attention attends to per query [tokens] (DeepSeek-V3.2: 2,048, the
        ones its indexer scores highest). Every token's latent and indexer key stay cached,
        so memory counts all of them; a step reads the indexer keys of the whole context but
        the latent of at most ``index_topk`` tokens (the step model's window,
        :class:`rooflinekit.roofline.StepCost`). Needs an indexer
        (``indexer_bytes_per_token_per_layer`` > 0) and no sliding-window layers. ``None``:
        dense attention.

    Notes
    -----
    KV bytes per cached token (guide §2.2) are ``2 · L · H_kv · d_head · b``; with MLA they are
    ``L · (kv_lora_rank + qk_rope_head_dim) · b``, and a sparse-attention indexer adds its
    ``L · indexer_bytes_per_token_per_layer``. With a sliding window, windowed layers stop
    growing at the window, so the KV of a sequence is no longer linear in its length; see
    :func:`rooflinekit.memory.kv_bytes_per_sequence`. Windowed layers with a KV layout of their
    own (``sliding_n_kv_heads``, ...) hold :attr:`sliding_kv_bytes_per_token_per_layer` a token,
    the full ones :attr:`kv_bytes_per_token_per_layer`. Only the ``n_kv_layers`` attention layers
    of a hybrid model cache tokens; its recurrent layers add ``state_bytes_per_sequence`` once a
    sequence.

    Weight bytes are ``n_params × bytes_per_param`` when no group has a format of its own, else
    ``body_params · b_body + expert_params · b_expert + embedding_params · b_embedding``
    (:attr:`weight_bytes`).

    References
    ----------
    .. [1] Serving-capacity guide §2.2–2.3.
    .. [2] Ainslie et al., "GQA: Training Generalized Multi-Query Transformer Models", 2023.
    .. [3] DeepSeek-AI, "DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts
       Language Model", 2024 (multi-head latent attention).
    .. [4] Beltagy et al., "Longformer", 2020; Jiang et al., "Mistral 7B", 2023 (sliding window).
    .. [5] OpenAI, "gpt-oss-120b & gpt-oss-20b Model Card", arXiv:2508.10925, 2025 (MXFP4
       experts, bf16 attention and embeddings).
    """

    name: str
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    n_params: float
    bytes_per_param: float | str = "bf16"
    kv_bytes_per_element: float | str = "bf16"
    hidden_size: int | None = None
    intermediate_size: int | None = None
    vocab_size: int | None = None
    n_active_params: float | None = None
    n_aside_params: float = 0.0
    n_experts: int = 1
    n_experts_per_token: int = 1
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    sliding_window: int | None = None
    n_sliding_layers: int | None = None
    tie_word_embeddings: bool = False
    max_context: int | None = None
    source: str = ""
    body_bytes_per_param: float | str | None = None
    expert_bytes_per_param: float | str | None = None
    embedding_bytes_per_param: float | str | None = None
    n_attention_layers: int | None = None
    n_linear_attention_layers: int = 0
    n_mamba_layers: int = 0
    state_bytes_per_sequence: float = 0.0
    ssm_state_bytes_per_sequence: float = 0.0
    ssm_state_bytes_per_element: float | str = "fp32"
    attention_chunk_size: int | None = None
    indexer_bytes_per_token_per_layer: float = 0.0
    index_topk: int | None = None
    v_head_dim: int | None = None
    sliding_n_kv_heads: int | None = None
    sliding_head_dim: int | None = None
    sliding_v_head_dim: int | None = None
    fp4_matmuls: bool | None = None

    def __post_init__(self):
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731 (frozen dataclass)
        check_string("name", self.name)
        set_("n_layers", _int_field("n_layers", self.n_layers))
        if self.n_layers > MAX_LAYERS:
            raise ValueError(f"n_layers must be at most {MAX_LAYERS:,} (the deepest served models "
                             f"have about 130 layers); got {show(self.n_layers)}")
        set_("n_heads", _int_field("n_heads", self.n_heads))
        set_("n_kv_heads", _int_field("n_kv_heads", self.n_kv_heads))
        if self.n_kv_heads > self.n_heads or self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"n_heads ({self.n_heads}) must be a multiple of n_kv_heads ({self.n_kv_heads}): "
                f"each KV head serves a whole group of query heads"
            )
        set_("hidden_size", _int_field("hidden_size", self.hidden_size, allow_none=True))
        set_("head_dim", _int_field("head_dim", self.head_dim))
        if self.hidden_size is None:
            set_("hidden_size", self.n_heads * self.head_dim)
        set_("intermediate_size", _int_field("intermediate_size", self.intermediate_size,
                                             allow_none=True))
        set_("vocab_size", _int_field("vocab_size", self.vocab_size, allow_none=True))
        set_("fp4_matmuls", _fp4_matmuls(self.fp4_matmuls, self.bytes_per_param))
        set_("bytes_per_param", bytes_per_element(self.bytes_per_param, "bytes_per_param"))
        set_("kv_bytes_per_element",
             bytes_per_element(self.kv_bytes_per_element, "kv_bytes_per_element"))
        set_("n_experts", _int_field("n_experts", self.n_experts))
        set_("n_experts_per_token", _int_field("n_experts_per_token", self.n_experts_per_token))
        if self.n_experts_per_token > self.n_experts:
            raise ValueError(f"n_experts_per_token ({self.n_experts_per_token}) must not exceed "
                             f"n_experts ({self.n_experts})")
        mla = (self.kv_lora_rank, self.qk_rope_head_dim)
        if (mla[0] is None) != (mla[1] is None):
            raise ValueError("multi-head latent attention needs both kv_lora_rank and "
                             "qk_rope_head_dim (or neither)")
        set_("kv_lora_rank", _int_field("kv_lora_rank", self.kv_lora_rank, allow_none=True))
        set_("qk_rope_head_dim", _int_field("qk_rope_head_dim", self.qk_rope_head_dim, lo=0,
                                            allow_none=True))
        set_("sliding_window", _int_field("sliding_window", self.sliding_window, allow_none=True))
        attention = _int_field("n_attention_layers", self.n_attention_layers, allow_none=True)
        set_("n_attention_layers", attention)
        for field in ("n_linear_attention_layers", "n_mamba_layers"):
            set_(field, _int_field(field, getattr(self, field), lo=0))
        for field in ("n_attention_layers", "n_linear_attention_layers", "n_mamba_layers"):
            if (getattr(self, field) or 0) > self.n_layers:
                raise ValueError(f"{field} ({getattr(self, field)}) must not exceed n_layers "
                                 f"({self.n_layers})")
        set_("state_bytes_per_sequence", real_number("state_bytes_per_sequence",
                                                     self.state_bytes_per_sequence, lo=0))
        if self.state_bytes_per_sequence and not (self.n_linear_attention_layers
                                                  or self.n_mamba_layers):
            raise ValueError("state_bytes_per_sequence > 0 needs recurrent layers "
                             "(n_linear_attention_layers or n_mamba_layers)")
        set_("ssm_state_bytes_per_sequence", real_number(
            "ssm_state_bytes_per_sequence", self.ssm_state_bytes_per_sequence, lo=0,
            hi=self.state_bytes_per_sequence))
        set_("ssm_state_bytes_per_element", bytes_per_element(self.ssm_state_bytes_per_element,
                                                              "ssm_state_bytes_per_element"))
        attention_layers = "n_layers" if attention is None else "n_attention_layers"
        n_sliding = _int_field("n_sliding_layers", self.n_sliding_layers, lo=0, allow_none=True)
        if n_sliding is None:
            n_sliding = self.n_kv_layers if self.sliding_window is not None else 0
        if n_sliding > self.n_kv_layers:
            raise ValueError(f"n_sliding_layers ({n_sliding}) must not exceed {attention_layers} "
                             f"({self.n_kv_layers})")
        if n_sliding and self.sliding_window is None:
            raise ValueError("n_sliding_layers > 0 needs a sliding_window")
        if self.sliding_window is not None and n_sliding == 0:
            raise ValueError("sliding_window is set but n_sliding_layers is 0; give "
                             "n_sliding_layers (None means every layer is windowed)")
        set_("n_sliding_layers", n_sliding)
        chunk = _int_field("attention_chunk_size", self.attention_chunk_size, allow_none=True)
        if chunk is not None and (self.sliding_window != chunk or n_sliding == 0):
            raise ValueError(f"attention_chunk_size ({chunk}) makes the windowed layers chunked: "
                             f"sliding_window must equal it and n_sliding_layers count the "
                             f"chunked layers; got sliding_window={show(self.sliding_window)}, "
                             f"n_sliding_layers={n_sliding}")
        set_("attention_chunk_size", chunk)
        set_("indexer_bytes_per_token_per_layer",
             real_number("indexer_bytes_per_token_per_layer",
                         self.indexer_bytes_per_token_per_layer, lo=0))
        set_("index_topk", _int_field("index_topk", self.index_topk, allow_none=True))
        if self.index_topk is not None and not self.indexer_bytes_per_token_per_layer:
            raise ValueError("index_topk needs a sparse-attention indexer: give "
                             "indexer_bytes_per_token_per_layer > 0 (its key bytes per token "
                             "and layer)")
        self._check_kv_layouts(set_)
        set_("max_context", _int_field("max_context", self.max_context, allow_none=True))
        set_("tie_word_embeddings", check_bool("tie_word_embeddings", self.tie_word_embeddings))
        set_("n_params", positive_number("n_params", self.n_params))
        active = positive_number("n_active_params", self.n_active_params, allow_none=True)
        if active is not None and active > self.n_params:
            raise ValueError(f"n_active_params ({active:g}) must not exceed n_params "
                             f"({self.n_params:g})")
        set_("n_active_params", self.n_params if active is None else active)
        aside = real_number("n_aside_params", self.n_aside_params, lo=0)
        if aside > self.n_params - self.n_active_params:
            raise ValueError(f"n_aside_params ({aside:g}) must not exceed n_params - "
                             f"n_active_params ({self.n_params - self.n_active_params:g}): "
                             f"parameters aside are not active")
        set_("n_aside_params", aside)
        check_string("source", self.source, allow_empty=True)
        for group in _WEIGHT_GROUPS:
            value = getattr(self, group)
            set_(group, None if value is None else bytes_per_element(value, group))
        if self.has_weight_groups and self.body_params < 0:
            raise ValueError(
                f"n_params ({self.n_params:g}) must be at least the expert and embedding "
                f"parameters ({self.expert_params + self.embedding_params:g}) that "
                f"expert_bytes_per_param and embedding_bytes_per_param apply to")

    def _check_kv_layouts(self, set_):
        """The value head dimension and the sliding layers' own KV layout, checked."""
        fields = ("v_head_dim", "sliding_n_kv_heads", "sliding_head_dim", "sliding_v_head_dim")
        for field in fields:
            set_(field, _int_field(field, getattr(self, field), allow_none=True))
        given = [f for f in fields if getattr(self, f) is not None]
        # MLA's value head is what its prefill decompresses to; the sliding layouts are KV heads
        sliding = [f for f in given if f.startswith("sliding_")]
        if sliding and self.kv_lora_rank is not None:
            raise ValueError(f"{sliding[0]} describes K/V heads; a multi-head latent attention "
                             f"model (kv_lora_rank) caches a latent instead")
        if any(f.startswith("sliding_") for f in given) and not self.n_sliding_layers:
            raise ValueError(f"{next(f for f in given if f.startswith('sliding_'))} needs "
                             f"sliding-window layers (sliding_window, n_sliding_layers > 0)")
        heads = self.sliding_n_kv_heads
        if heads is not None and (heads > self.n_heads or self.n_heads % heads):
            raise ValueError(f"n_heads ({self.n_heads}) must be a multiple of "
                             f"sliding_n_kv_heads ({heads}): each KV head serves a whole group "
                             f"of query heads")
        if self.index_topk is not None and self.n_sliding_layers:
            raise ValueError("index_topk (sparse attention) beside sliding-window layers "
                             "(n_sliding_layers > 0) is not supported")

    # -- attention layout ---------------------------------------------------------------------
    @property
    def attention(self) -> str:
        """"MLA", "MHA", "MQA" or "GQA-<n_kv_heads>", from the head counts (guide §2.3)."""
        if self.kv_lora_rank is not None:
            return "MLA"
        if self.n_kv_heads == self.n_heads:
            return "MHA"
        if self.n_kv_heads == 1:
            return "MQA"
        return f"GQA-{self.n_kv_heads}"

    @property
    def is_mla(self) -> bool:
        """True for multi-head latent attention (one latent cache per layer, no KV heads)."""
        return self.kv_lora_rank is not None

    @property
    def attention_width(self) -> int:
        """Width per head that attention FLOPs run at: ``head_dim``, the mean of the key and value
        head dimensions where ``v_head_dim`` is given (``Q·Kᵀ`` runs at one, ``P·V`` at the
        other), or the MLA latent width."""
        if self.kv_lora_rank is not None:
            return self.kv_lora_rank + self.qk_rope_head_dim
        if self.v_head_dim is not None:
            return (self.head_dim + self.v_head_dim) / 2
        return self.head_dim

    @property
    def prefill_attention_width(self) -> float:
        """Width per head that a prompt's attention over its own tokens runs at: the
        :attr:`attention_width`, except with multi-head latent attention, which the serving
        engines run absorbed in decode (over the latent, :attr:`attention_width`) but
        un-absorbed in prefill (multi-head attention over K and V decompressed from the
        latent): the mean of the key head dimension (``head_dim``, no-RoPE part plus
        ``qk_rope_head_dim``) and the value head dimension (``v_head_dim``, else ``head_dim −
        qk_rope_head_dim``): 160 for DeepSeek-V3 and Kimi K2, 256 for GLM-5."""
        if self.kv_lora_rank is not None:
            value = self.v_head_dim or self.head_dim - self.qk_rope_head_dim
            return (self.head_dim + value) / 2
        return self.attention_width

    @property
    def is_moe(self) -> bool:
        """True for mixture-of-experts models."""
        return self.n_experts > 1

    @property
    def n_kv_layers(self) -> int:
        """Layers holding a KV cache: ``n_attention_layers``, or every layer when that is None."""
        return self.n_layers if self.n_attention_layers is None else self.n_attention_layers

    @property
    def n_full_layers(self) -> int:
        """Layers that attend to (and cache) the whole context."""
        return self.n_kv_layers - self.n_sliding_layers

    @property
    def is_hybrid(self) -> bool:
        """True when some layers hold a recurrent state instead of a KV cache (or beside one)."""
        return bool(self.n_recurrent_layers)

    @property
    def n_recurrent_layers(self) -> int:
        """Layers whose state is a recurrence, not a KV cache: ``n_linear_attention_layers +
        n_mamba_layers`` (Gated DeltaNet and Mamba). A prompt passes through each as a scan."""
        return self.n_linear_attention_layers + self.n_mamba_layers

    @property
    def linear_state_elements_per_layer(self) -> float:
        """Elements of the recurrent state one sequence holds in one recurrent layer [1].

        ``ssm_state_bytes_per_sequence / ssm_state_bytes_per_element / n_recurrent_layers``: a
        Gated DeltaNet layer of ``H`` value heads of ``d_k × d_v`` holds ``H · d_k · d_v``
        (Qwen3.5-397B-A17B: 64 · 128 · 128 = 1,048,576), a Mamba-2 layer of ``H`` heads of
        ``P`` channels and state ``N`` holds ``H · P · N`` (Nemotron-3-Nano-30B-A3B: 64 · 64 ·
        128 = 524,288), a Mamba-1 layer its inner width times its state (Jamba-1.5-Mini: 8,192 ·
        16): what its prompt pass updates a token. A model of both kinds gets their mean, whose
        sum over the layers is the state's. 0 without such layers, or where the recurrent part of
        the state is unknown (``ssm_state_bytes_per_sequence`` 0).
        """
        if not self.n_recurrent_layers:
            return 0.0
        return (self.ssm_state_bytes_per_sequence / self.ssm_state_bytes_per_element
                / self.n_recurrent_layers)

    # -- bytes ----------------------------------------------------------------------------------
    def _kv_bytes(self, heads: int, key_dim: int, value_dim: int | None) -> float:
        """KV (or MLA latent) bytes of one token in one layer, with the indexer's keys."""
        if self.kv_lora_rank is not None:
            kv = (self.kv_lora_rank + self.qk_rope_head_dim) * self.kv_bytes_per_element
        elif value_dim is None or value_dim == key_dim:
            kv = 2 * heads * key_dim * self.kv_bytes_per_element
        else:                                   # K and V of different widths (MiMo-V2-Flash)
            kv = heads * (key_dim + value_dim) * self.kv_bytes_per_element
        if self.indexer_bytes_per_token_per_layer:
            return kv + self.indexer_bytes_per_token_per_layer
        return kv

    @property
    def kv_bytes_per_token_per_layer(self) -> float:
        """KV bytes one token adds to one full-attention layer [bytes]: ``2·H_kv·d·b`` (``H_kv·(d_k
        + d_v)·b`` with a value head dimension of its own), or ``(r+d_rope)·b`` (MLA), plus a
        sparse-attention indexer's key bytes (``indexer_bytes_per_token_per_layer``)."""
        return self._kv_bytes(self.n_kv_heads, self.head_dim, self.v_head_dim)

    @property
    def sliding_kv_bytes_per_token_per_layer(self) -> float:
        """KV bytes one token adds to one sliding-window layer [bytes]: as
        :attr:`kv_bytes_per_token_per_layer` with the sliding layers' own KV heads and head
        dimensions (``sliding_n_kv_heads``, ...), the full layers' where not given."""
        if (self.sliding_n_kv_heads, self.sliding_head_dim, self.sliding_v_head_dim) == \
                (None, None, None):
            return self.kv_bytes_per_token_per_layer
        return self._kv_bytes(*self.kv_layouts[1][1:])

    @property
    def kv_layouts(self) -> tuple:
        """``(layers, KV heads, key head dim, value head dim)`` of the full layers, then of the
        sliding-window layers, with the defaults in force (MLA: the head fields, unused)."""
        key = self.sliding_head_dim or self.head_dim
        return ((self.n_full_layers, self.n_kv_heads, self.head_dim,
                 self.v_head_dim or self.head_dim),
                (self.n_sliding_layers, self.sliding_n_kv_heads or self.n_kv_heads, key,
                 self.sliding_v_head_dim or self.v_head_dim or key))

    @property
    def kv_bytes_per_token(self) -> float:
        """KV bytes per cached token over all layers [bytes] (guide §2.2: ``2·L·H_kv·d·b``).

        ``L`` counts the attention layers only (:attr:`n_kv_layers`): recurrent layers
        hold a constant state instead (:attr:`state_bytes_per_sequence`). Sliding-window layers
        with a KV layout of their own count their own bytes
        (:attr:`sliding_kv_bytes_per_token_per_layer`).

        For sliding-window models this holds while the context fits in the window; beyond it only
        the full-attention layers keep growing (:func:`rooflinekit.memory.kv_bytes_per_sequence`).
        """
        full, sliding = self.kv_bytes_per_token_per_layer, \
            self.sliding_kv_bytes_per_token_per_layer
        if sliding == full:
            return self.n_kv_layers * full
        return self.n_full_layers * full + self.n_sliding_layers * sliding

    @property
    def has_weight_groups(self) -> bool:
        """True when some group of weights is stored in a format other than ``bytes_per_param``."""
        return any(getattr(self, g) not in (None, self.bytes_per_param) for g in _WEIGHT_GROUPS)

    def _group_bytes(self, group: str) -> float:
        value = getattr(self, group)
        return self.bytes_per_param if value is None else value

    @property
    def bytes_per_body_param(self) -> float:
        """Bytes per parameter of the body [bytes]: ``body_bytes_per_param`` or the format."""
        return self._group_bytes("body_bytes_per_param")

    @property
    def bytes_per_expert_param(self) -> float:
        """Bytes per routed-expert parameter [bytes]: ``expert_bytes_per_param`` or the format."""
        return self._group_bytes("expert_bytes_per_param")

    @property
    def bytes_per_embedding_param(self) -> float:
        """Bytes per embedding-table and LM-head parameter [bytes]: ``embedding_bytes_per_param``
        or the format."""
        return self._group_bytes("embedding_bytes_per_param")

    @property
    def expert_params(self) -> float:
        """Parameters of the routed experts, all of them [1] (0 for a dense model).

        ``(n_params − n_active_params − n_aside_params) · E / (E − k)``: the parameters a token
        skips, the encoders aside, are those of the ``E − k`` experts it is not routed to.
        """
        skipped = self.n_experts - self.n_experts_per_token
        if skipped <= 0:
            return 0.0
        return (self.n_params - self.n_active_params - self.n_aside_params) * self.n_experts \
            / skipped

    @property
    def embedding_params(self) -> float:
        """Parameters of the token-embedding table and the LM head [1] (shared when tied)."""
        return self.lm_head_params + self.input_embedding_params

    @property
    def body_params(self) -> float:
        """Every other parameter [1]: ``n_params − expert_params − embedding_params``."""
        return self.n_params - self.expert_params - self.embedding_params

    @property
    def weight_bytes(self) -> float:
        """Bytes of all weights [bytes].

        ``n_params × bytes_per_param`` (decimal-exact) when every weight is in that format, else
        ``body_params · b_body + expert_params · b_expert + embedding_params · b_embedding``
        (each group's bytes per parameter, scales included).
        """
        if not self.has_weight_groups:
            return self.n_params * self.bytes_per_param
        return (self.body_params * self.bytes_per_body_param
                + self.expert_params * self.bytes_per_expert_param
                + self.embedding_params * self.bytes_per_embedding_param)

    @property
    def active_weight_bytes(self) -> float:
        """Bytes of the weights one token uses [bytes] (all of them for a dense model).

        With groups in formats of their own: the body, ``k / E`` of the experts and the embedding
        table and LM head, each in its format.
        """
        if not self.has_weight_groups:
            return self.n_active_params * self.bytes_per_param
        share = self.n_experts_per_token / self.n_experts
        return (self.body_params * self.bytes_per_body_param
                + share * self.expert_params * self.bytes_per_expert_param
                + self.embedding_params * self.bytes_per_embedding_param)

    @property
    def mean_bytes_per_param(self) -> float:
        """Weight bytes per parameter over the whole model [bytes]: ``weight_bytes / n_params``."""
        return self.weight_bytes / self.n_params

    @property
    def lm_head_params(self) -> float:
        """Parameters of the output projection, ``vocab_size · hidden_size`` [1] (0: unknown).

        With tied embeddings this is the shared matrix, counted once in ``n_params``.
        """
        return 0.0 if self.vocab_size is None else float(self.vocab_size * self.hidden_size)

    @property
    def input_embedding_params(self) -> float:
        """Parameters of an input-embedding table apart from the output projection [1].

        ``vocab_size · hidden_size`` for untied embeddings, 0 when tied (the table is the LM
        head's matrix) or when ``vocab_size`` is unknown. A step looks rows of it up; it does no
        matrix multiply with it.
        """
        return 0.0 if self.tie_word_embeddings else self.lm_head_params

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def from_hf_config(cls, config: "str | Path | dict", *, name: str | None = None,
                       **overrides) -> "ModelShape":
        """Read a Hugging Face ``config.json`` offline: a path, a model folder, a repo id in the
        local Hugging Face cache, or the parsed dict.

        See :func:`rooflinekit.hf_config.shape_fields` for the fields read and
        :func:`rooflinekit.hf_config.find_config` for where a folder or repo id is looked up.
        """
        return model_from_hf_config(config, name=name, **overrides)

    def replace(self, **changes) -> "ModelShape":
        """A copy with some fields changed (validated again).

        A new ``bytes_per_param`` without per-group formats applies to every weight: the groups'
        formats (``body_bytes_per_param`` and the others) are reset unless given too. A new
        ``state_bytes_per_sequence`` resets its split (``ssm_state_bytes_per_sequence`` 0)
        unless given too; a new ``ssm_state_bytes_per_element`` alone rescales both.
        """
        if "bytes_per_param" in changes:
            changes = {**dict.fromkeys((*_WEIGHT_GROUPS, "fp4_matmuls")), **changes}
        if "state_bytes_per_sequence" in changes:
            changes = {"ssm_state_bytes_per_sequence": 0.0, **changes}
        if "ssm_state_bytes_per_element" in changes:
            changes = self._ssm_state_format(changes)
        return dataclasses.replace(self, **changes)

    def _ssm_state_format(self, changes: dict) -> dict:
        """``changes`` with the state's sizes rescaled to a new ``ssm_state_bytes_per_element``
        (unless they are given too)."""
        if {"state_bytes_per_sequence", "ssm_state_bytes_per_sequence"} & changes.keys():
            return changes
        new = bytes_per_element(changes["ssm_state_bytes_per_element"],
                                "ssm_state_bytes_per_element")
        ssm = self.ssm_state_bytes_per_sequence
        if self.state_bytes_per_sequence and not ssm:
            raise ValueError(f"model {self.name!r} holds {self.state_bytes_per_sequence:,.0f} "
                             f"bytes of recurrent state a sequence without saying which part "
                             f"is the SSM state (ssm_state_bytes_per_sequence = 0): give "
                             f"ssm_state_bytes_per_sequence to change its format")
        rescaled = ssm * new / self.ssm_state_bytes_per_element
        return {**changes, "ssm_state_bytes_per_sequence": rescaled,
                "state_bytes_per_sequence": self.state_bytes_per_sequence - ssm + rescaled}


#: Weight formats whose checkpoints the engines multiply W4A4 on FP4 tensor cores (NVFP4).
FP4_MATMUL_FORMATS = ("nvfp4", "fp4")


def _fp4_matmuls(value, bytes_per_param) -> bool:
    """``fp4_matmuls`` checked, or inferred from ``bytes_per_param`` given by name."""
    if value is None:
        return isinstance(bytes_per_param, str) and \
            bytes_per_param.strip().lower() in FP4_MATMUL_FORMATS
    return check_bool("fp4_matmuls", value)


def model_from_hf_config(config, *, name: str | None = None, **overrides) -> ModelShape:
    """Build a :class:`ModelShape` from a Hugging Face ``config.json``, offline.

    ``config`` is a path to ``config.json``, a model folder, a repo id already in the local
    Hugging Face cache (``$HF_HOME/hub/models--org--name/snapshots/<rev>/config.json``; nothing
    is downloaded) or the parsed dict. Multimodal configs count their vision and audio encoders
    in ``n_params`` (the server holds them) but not in ``n_active_params`` (a generated token does
    not run them); see :func:`rooflinekit.hf_config.count_params`.

    Parameters as for :func:`rooflinekit.hf_config.shape_fields` (``config``, ``name``,
    ``**overrides``), whose fields this validates into a spec.

    Returns
    -------
    ModelShape

    See Also
    --------
    rooflinekit.hf_config.shape_fields : the fields read, and how.
    rooflinekit.hf_config.count_params : the parameter count from the shapes.
    """
    fields = hf_config.shape_fields(config, name=name, **overrides)
    try:
        return ModelShape(**fields)
    except (TypeError, ValueError) as exc:
        if not isinstance(config, (str, os.PathLike)):
            raise
        # a field out of range names the file it came from
        raise type(exc)(f"{hf_config.find_config(config)}: {exc}") from None
