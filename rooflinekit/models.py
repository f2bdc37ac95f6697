"""Model architecture specifications: what a transformer stores and moves (guide §2)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from rooflinekit import hf_config
from rooflinekit._validation import (MAX_LAYERS, check_bool, check_string, positive_number, show,
                                      whole_number)
from rooflinekit._labels import SPEC_PARAMETERS, document
from rooflinekit.dtypes import bytes_per_element

__all__ = ["ModelShape", "model_from_hf_config"]


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
        Weight format by name ("fp32", "bf16", "fp16", "fp8", "int8", "int4") or bytes per
        parameter. Default "bf16" (2 bytes).
    kv_bytes_per_element : str or float
        KV-cache format, independent of the weights (an fp8 or int4 checkpoint usually still caches
        16-bit KV). Default "bf16" (2 bytes).
    hidden_size, intermediate_size, vocab_size : int, optional
        Model width, MLP width (per expert for MoE) and vocabulary, informational except
        ``hidden_size``, which sizes the all-reduce payload of tensor parallelism (default
        ``n_heads * head_dim``).
    n_active_params : float, optional
        Parameters used per token (MoE); ``None`` means all of ``n_params``.
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

    Notes
    -----
    KV bytes per cached token (guide §2.2) are ``2 · L · H_kv · d_head · b``; with MLA they are
    ``L · (kv_lora_rank + qk_rope_head_dim) · b``. With a sliding window, windowed layers stop
    growing at the window, so the KV of a sequence is no longer linear in its length; see
    :func:`rooflinekit.memory.kv_bytes_per_sequence`.

    References
    ----------
    .. [1] Serving-capacity guide §2.2–2.3.
    .. [2] Ainslie et al., "GQA: Training Generalized Multi-Query Transformer Models", 2023.
    .. [3] DeepSeek-AI, "DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts
       Language Model", 2024 (multi-head latent attention).
    .. [4] Beltagy et al., "Longformer", 2020; Jiang et al., "Mistral 7B", 2023 (sliding window).
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
    n_experts: int = 1
    n_experts_per_token: int = 1
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    sliding_window: int | None = None
    n_sliding_layers: int | None = None
    tie_word_embeddings: bool = False
    max_context: int | None = None
    source: str = ""

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
        n_sliding = _int_field("n_sliding_layers", self.n_sliding_layers, lo=0, allow_none=True)
        if n_sliding is None:
            n_sliding = self.n_layers if self.sliding_window is not None else 0
        if n_sliding > self.n_layers:
            raise ValueError(f"n_sliding_layers ({n_sliding}) must not exceed n_layers "
                             f"({self.n_layers})")
        if n_sliding and self.sliding_window is None:
            raise ValueError("n_sliding_layers > 0 needs a sliding_window")
        if self.sliding_window is not None and n_sliding == 0:
            raise ValueError("sliding_window is set but n_sliding_layers is 0; give "
                             "n_sliding_layers (None means every layer is windowed)")
        set_("n_sliding_layers", n_sliding)
        set_("max_context", _int_field("max_context", self.max_context, allow_none=True))
        set_("tie_word_embeddings", check_bool("tie_word_embeddings", self.tie_word_embeddings))
        set_("n_params", positive_number("n_params", self.n_params))
        active = positive_number("n_active_params", self.n_active_params, allow_none=True)
        if active is not None and active > self.n_params:
            raise ValueError(f"n_active_params ({active:g}) must not exceed n_params "
                             f"({self.n_params:g})")
        set_("n_active_params", self.n_params if active is None else active)
        check_string("source", self.source, allow_empty=True)

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
        """Width per head that attention FLOPs run at: ``head_dim``, or the MLA latent width."""
        if self.kv_lora_rank is not None:
            return self.kv_lora_rank + self.qk_rope_head_dim
        return self.head_dim

    @property
    def is_moe(self) -> bool:
        """True for mixture-of-experts models."""
        return self.n_experts > 1

    @property
    def n_full_layers(self) -> int:
        """Layers that attend to (and cache) the whole context."""
        return self.n_layers - self.n_sliding_layers

    # -- bytes ----------------------------------------------------------------------------------
    @property
    def kv_bytes_per_token_per_layer(self) -> float:
        """KV bytes one token adds to one layer [bytes]: ``2·H_kv·d·b``, or ``(r+d_rope)·b`` (MLA)."""
        if self.kv_lora_rank is not None:
            return (self.kv_lora_rank + self.qk_rope_head_dim) * self.kv_bytes_per_element
        return 2 * self.n_kv_heads * self.head_dim * self.kv_bytes_per_element

    @property
    def kv_bytes_per_token(self) -> float:
        """KV bytes per cached token over all layers [bytes] (guide §2.2: ``2·L·H_kv·d·b``).

        For sliding-window models this holds while the context fits in the window; beyond it only
        the full-attention layers keep growing (:func:`rooflinekit.memory.kv_bytes_per_sequence`).
        """
        return self.n_layers * self.kv_bytes_per_token_per_layer

    @property
    def weight_bytes(self) -> float:
        """Bytes of all weights [bytes]: ``n_params × bytes_per_param`` (decimal-exact)."""
        return self.n_params * self.bytes_per_param

    @property
    def active_weight_bytes(self) -> float:
        """Bytes of the weights one token uses [bytes] (all of them for a dense model)."""
        return self.n_active_params * self.bytes_per_param

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
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)


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
