"""Reading a Hugging Face ``config.json`` offline, and counting parameters from its shapes.

:func:`shape_fields` turns a config into :class:`~rooflinekit.models.ModelShape` fields;
:func:`count_params` counts the weights the architecture implies, matrix by matrix (biases and
norms as transformers' modelling code has them), when the config gives no count. Nothing touches
the network: a config is a path, a model folder, a repo id already in the local Hugging Face
cache (:func:`find_config`), or the parsed dict.
"""

from __future__ import annotations

import contextlib
import fnmatch
import numbers
import os
import re
from collections.abc import Mapping

from rooflinekit._validation import (MAX_CONFIG_BYTES, MAX_LAYERS, check_one_of, describe,
                                      parse_json, read_regular_file, real_number, show,
                                      whole_number)
from rooflinekit.dtypes import bytes_per_element

__all__ = ["shape_fields", "count_params", "load_hf_config", "find_config",
           "hf_cache_dir", "indexer_key_bytes"]

# Older and GPT-style configs spell the same fields differently (transformers' ``attribute_map``).
_ALIASES = {
    "num_hidden_layers": ("n_layer", "num_layers", "n_layers"),
    "num_attention_heads": ("n_head", "n_heads"),
    "num_key_value_heads": ("num_kv_heads", "n_head_kv"),
    "hidden_size": ("n_embd", "n_embed", "d_model"),
    "max_position_embeddings": ("n_positions", "max_seq_len"),
    "intermediate_size": ("n_inner", "ffn_hidden_size"),
    "head_dim": ("attention_head_dim",),                 # Nemotron-H
    "num_experts_per_tok": ("top_k_experts",),           # Gemma 4
}

# transformers' configuration classes whose ``tie_word_embeddings`` default is False; every other
# ``PretrainedConfig`` defaults to True when config.json leaves the field out.
_UNTIED_BY_DEFAULT = frozenset({
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "phi3",
    "gpt_neox", "gptj", "phi", "deepseek_v2", "deepseek_v3", "llama4", "llama4_text",
})

# Architectures built GPT-style: LayerNorm with bias, a two-matrix MLP, biased projections.
_GPT_STYLE = frozenset({"gpt2", "gpt_bigcode", "gpt_neox", "gptj", "falcon", "phi"})

# Fields a multimodal config.json's ``text_config`` may leave out because its configuration
# class supplies them (google/gemma-3-4b-it states five text fields, Qwen/Qwen2-Audio-7B seven):
# transformers' ``Gemma3TextConfig`` and ``Qwen2Config`` defaults.
_TEXT_DEFAULTS = {
    "gemma3_text": {"vocab_size": 262_208, "num_attention_heads": 8, "num_key_value_heads": 4,
                    "head_dim": 256, "max_position_embeddings": 131_072,
                    "sliding_window_pattern": 6},
    "qwen2": {"vocab_size": 151_936, "hidden_size": 4096, "intermediate_size": 22_016,
              "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
              "max_position_embeddings": 32_768, "use_sliding_window": False},
}

# Vision encoders' configuration defaults (transformers' ``SiglipVisionConfig``,
# ``CLIPVisionConfig``): fields a multimodal config.json may leave out.
_VISION_DEFAULTS = {
    "siglip_vision_model": {"hidden_size": 768, "intermediate_size": 3072,
                            "num_hidden_layers": 12, "num_channels": 3, "image_size": 224,
                            "patch_size": 16, "vision_use_head": True},
    "clip_vision_model": {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
                          "num_channels": 3, "image_size": 224, "patch_size": 32},
}

#: The weight widths [bits] a ``quantization_config`` may give as ``bits``: those of GPTQ,
#: AWQ, HQQ, bitsandbytes and quanto. ExLlamaV2 (``quant_method: "exl2"``) gives an average
#: width, any number in [2, 8].
QUANTIZATION_BITS = (1, 2, 3, 4, 8)
_EXL2_BITS = (2, 8)

# layer_types values and the kind of layer each names; hybrid_override_pattern's characters.
_LAYER_TYPES = {"full_attention": "full", "sliding_attention": "sliding", "attention": "full",
                "chunked_attention": "chunked", "linear_attention": "linear", "mamba": "mamba"}
_PATTERN_KINDS = {"M": "mamba", "*": "full", "-": "mlp", "E": "moe"}
# layers_block_type values (Nemotron-H as transformers 5 writes it, in place of the pattern)
_BLOCK_TYPES = {"mamba": "mamba", "attention": "full", "mlp": "mlp", "moe": "moe"}

#: Layer kinds that keep a KV cache (full, sliding-window and chunked local attention).
_ATTENTION_KINDS = ("full", "sliding", "chunked")

_TORCH_DTYPES = {
    "float32": "fp32", "float": "fp32", "bfloat16": "bf16", "float16": "fp16", "half": "fp16",
    "float8_e4m3fn": "fp8", "int8": "int8",
}


# -- reading --------------------------------------------------------------------------------------
def hf_cache_dir() -> str:
    """The local Hugging Face hub cache: where downloaded repositories' snapshots live.

    Returns
    -------
    str
        ``$HF_HUB_CACHE`` if set, else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``
        (``$XDG_CACHE_HOME`` replacing ``~/.cache`` when set), the order ``huggingface_hub``
        uses. The folder need not exist.
    """
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HF_HOME"):
        return os.path.join(os.environ["HF_HOME"], "hub")
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "huggingface", "hub")


def _is_repo_id(text: str) -> bool:
    parts = text.split("/")
    return (len(parts) == 2 and all(parts)
            and all(c.isalnum() or c in "-_." for c in "".join(parts))
            and not text.endswith(".json"))


def find_config(source, *, cache_dir: str | os.PathLike | None = None) -> str:
    """The path of the ``config.json`` a file, a model folder or a cached repo id names.

    Nothing is downloaded: a repo id is looked up in the local hub cache only.

    Parameters
    ----------
    source : str or os.PathLike
        A ``config.json`` path; a model folder holding ``config.json``; or a Hugging Face repo id
        (``"meta-llama/Llama-3.1-8B"``) already downloaded to the hub cache.
    cache_dir : str or os.PathLike, optional
        The hub cache; default :func:`hf_cache_dir`.

    Returns
    -------
    str
        Path of an existing ``config.json``. For a repo id it is
        ``<cache>/models--<org>--<name>/snapshots/<revision>/config.json``, the revision being the
        one ``refs/main`` names, else the only snapshot, else the most recently modified one.

    Raises
    ------
    TypeError
        If ``source`` is not a path or string.
    ValueError
        If no such file or folder exists and ``source`` is not a repo id present in the cache;
        the message says where it looked.

    See Also
    --------
    hf_cache_dir : where the cache is.
    """
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"source must be a path or a repo id string; got {describe(source)}")
    text = os.fspath(source)
    if os.path.isdir(text):
        path = os.path.join(text, "config.json")
        if not os.path.lexists(path):
            raise ValueError(f"model folder {text!r} holds no config.json")
        return path          # load_hf_config refuses a config.json that is no regular file
    if os.path.exists(text) or not _is_repo_id(text):
        return text       # a file, or a path that load_hf_config reports as unreadable
    cache = os.fspath(cache_dir) if cache_dir is not None else hf_cache_dir()
    repo = os.path.join(cache, "models--" + text.replace("/", "--"))
    snapshots = os.path.join(repo, "snapshots")
    candidates = []
    if os.path.isdir(snapshots):
        candidates = [d for d in os.listdir(snapshots)
                      if os.path.isfile(os.path.join(snapshots, d, "config.json"))]
    if not candidates:
        raise ValueError(f"model {text!r} is neither a file, a folder, nor a repo id in the "
                         f"local Hugging Face cache (looked for {snapshots}/<revision>/"
                         f"config.json; nothing is downloaded)")
    try:
        main = read_regular_file(os.path.join(repo, "refs", "main"), "Hugging Face ref",
                                 4096).strip()
    except (OSError, ValueError):      # no ref, or not a file holding one
        main = None
    if main not in candidates:
        # no ref to follow: the newest snapshot, as a fresh download would have written it
        main = max(candidates,
                   key=lambda d: os.path.getmtime(os.path.join(snapshots, d, "config.json")))
    return os.path.join(snapshots, main, "config.json")


def load_hf_config(config) -> dict:
    """The config as a flat dict: read from a path, or copied from a mapping.

    Multimodal configs that nest the language model under ``text_config`` (and give no layer
    count at the top level) are flattened to it, keeping top-level fields it does not override
    (``vision_config`` and ``audio_config`` among them). Text fields that the configuration class
    supplies and such a file leaves out are filled in with the class's defaults for
    ``gemma3_text`` and ``qwen2``, the language models of Gemma-3 and Qwen2-Audio; the outer
    ``model_type`` is kept as ``multimodal_model_type``.

    Parameters
    ----------
    config : str, os.PathLike or Mapping
        Path to ``config.json``, a model folder, a repo id in the local Hugging Face cache
        (see :func:`find_config`), or the parsed contents (not modified).

    Returns
    -------
    dict
        A new dict of the config's fields.

    Raises
    ------
    TypeError
        If ``config`` is neither a path nor a mapping, or the file does not hold a JSON object.
    ValueError
        If the file cannot be read, is not a regular file, is larger than
        :data:`~rooflinekit._validation.MAX_CONFIG_BYTES`, is not UTF-8 or is not valid JSON.
    """
    if isinstance(config, Mapping):
        return _flatten(dict(config))
    if isinstance(config, (str, os.PathLike)):
        return _flatten(_read(find_config(config)))
    raise TypeError(f"config must be a path to config.json or a dict; got {describe(config)}")


def _read(path: str) -> dict:
    """The JSON object of the config file at ``path`` (already resolved by find_config)."""
    try:
        text = read_regular_file(path, "config.json", MAX_CONFIG_BYTES)
    except OSError as err:
        raise ValueError(f"config: cannot read {os.fspath(path)!r}: {err.strerror or err}") \
            from err
    data = parse_json(text, f"config: {os.fspath(path)!r}")
    if not isinstance(data, dict):
        raise TypeError(f"config: {os.fspath(path)!r} must hold a JSON object; "
                        f"got {describe(data)}")
    return data


def _flatten(data: dict) -> dict:
    """A multimodal config's text model's fields at the top level (see load_hf_config)."""
    text = data.get("text_config")
    if isinstance(text, Mapping) and _get(data, "num_hidden_layers") is None:
        kind = str(text.get("model_type") or "").lower()
        defaults = {key: value for key, value in _TEXT_DEFAULTS.get(kind, {}).items()
                    if _get(text, key) is None}
        if text.get("layer_types") is not None:
            defaults.pop("sliding_window_pattern", None)
        outer = data.get("model_type")
        data = {**{k: v for k, v in data.items() if k != "text_config"}, **defaults, **text}
        if outer is not None:
            data["multimodal_model_type"] = outer     # the projector depends on it
    return data


def _get(cfg: Mapping, field: str, default=None):
    for key in (field, *_ALIASES.get(field, ())):
        if cfg.get(key) is not None:
            return cfg[key]
    return default


def _int(cfg: Mapping, field: str, *, lo: int = 1, hi: int | None = None,
         required: bool = True, default=None, at: str = ""):
    """A whole-number field in [lo, hi]; ``at`` is where ``cfg`` sits ("vision_config.")."""
    name = f"config.json field '{at}{field}'"
    value = _get(cfg, field)
    if value is None:
        if required and default is None:
            raise ValueError(f"{name} is missing")
        return default
    number = whole_number(name, value, lo)
    if hi is not None and number > hi:
        raise ValueError(f"{name} must be at most {hi:,}; got {show(value)}")
    return number


def _flag(cfg: Mapping, field: str, default: bool = False, *, at: str = "",
          null: bool = False) -> bool:
    """A boolean field: a JSON ``true``/``false``; ``default`` when absent, ``null`` when null
    (false, as transformers' modelling code reads None). The string ``"false"`` is refused, not
    read as true."""
    if field not in cfg:
        return default
    value = cfg[field]
    if value is None:
        return null
    if isinstance(value, bool) or type(value).__name__ == "bool_":     # numpy's too
        return bool(value)
    raise TypeError(f"config.json field '{at}{field}' must be true or false (a JSON boolean); "
                    f"got {describe(value)}")


@contextlib.contextmanager
def _naming(path):
    """Errors raised inside name the config file ``path`` (when one was read)."""
    try:
        yield
    except (TypeError, ValueError) as exc:
        if path is None or path in str(exc):
            raise
        raise type(exc)(f"{path}: {exc}") from None



# -- shape ----------------------------------------------------------------------------------------
def _layer_flags(value, field: str, layers: int, meaning: str) -> list[bool]:
    """A config field of one 0/1 flag per layer, checked: a list of ``layers`` entries, each 0
    or 1 (``meaning`` says which is which in the error)."""
    name = f"config.json field '{field}'"
    if not isinstance(value, (list, tuple)) or len(value) != layers:
        got = f"{len(value)} entries" if isinstance(value, (list, tuple)) else describe(value)
        raise ValueError(f"{name} must be a list of {layers} entries, one per layer "
                         f"(num_hidden_layers; {meaning}); got {got}")
    bad = next((f for f in value if isinstance(f, bool) or f not in (0, 1)), None)
    if bad is not None:
        raise ValueError(f"{name} must hold 0 or 1 per layer; got {show(bad)}")
    return [bool(f) for f in value]


class _Shape:
    """The fields of a config that matter here, checked once."""

    def __init__(self, cfg: Mapping):
        self.model_type = str(cfg.get("model_type") or "").lower()
        # bounded before any list per layer is built (a billion layers would take 8 GB)
        self.layers = _int(cfg, "num_hidden_layers", hi=MAX_LAYERS, required=False)
        blocks = cfg.get("layers_block_type")
        if self.layers is None and isinstance(blocks, list) and 0 < len(blocks) <= MAX_LAYERS:
            self.layers = len(blocks)        # Nemotron-H as transformers 5 writes it (Ultra)
        elif self.layers is None:
            raise ValueError("config.json field 'num_hidden_layers' is missing")
        self.heads = _int(cfg, "num_attention_heads")
        self.hidden = _int(cfg, "hidden_size")
        self.vocab = _int(cfg, "vocab_size", required=False)
        _refuse_unread_sparse_attention(cfg)
        self.blocks = _block_configs(cfg, self.layers, self.hidden)
        self.kv_heads = self._kv_heads(cfg)
        self.mla = self._mla(cfg)
        self.head_dim = self._head_dim(cfg)
        self.gpt_style = self.model_type in _GPT_STYLE
        self.intermediate = _int(cfg, "intermediate_size", required=False)
        if self.intermediate is None and self.gpt_style:
            self.intermediate = 4 * self.hidden      # GPT-2/BigCode/Falcon: n_inner null -> 4h
        self.n_experts = self._experts(cfg)
        self.top_k = 1
        self.moe_intermediate = None
        if self.n_experts > 1:
            self.top_k = _int(cfg, "num_experts_per_tok")
            if self.top_k > self.n_experts:
                raise ValueError(f"config.json field 'num_experts_per_tok' ({self.top_k}) must "
                                 f"not exceed the number of experts ({self.n_experts})")
            self.moe_intermediate = _int(cfg, "moe_intermediate_size", required=False,
                                         default=self.intermediate)
            if self.moe_intermediate is None:
                raise ValueError("config.json field 'intermediate_size' (or "
                                 "'moe_intermediate_size') is missing for a mixture-of-experts "
                                 "model")
        self.kinds = self._layer_kinds(cfg)
        # Falcon-H1 runs a Mamba-2 mixer beside attention in every layer
        self.parallel_mamba = self.layers if self.model_type == "falcon_h1" else 0
        self.chunk = None
        self.window, self.n_sliding = self._window(cfg)
        self.v_head_dim, self.swa = self._kv_layouts(cfg)
        if self.model_type == "gemma4_text":
            self._gemma4_layouts(cfg)

    def _gemma4_layouts(self, cfg):
        """Gemma 4: the full-attention layers' own head dim (``global_head_dim``) and, with
        ``attention_k_eq_v`` (their values are their keys' projection), KV heads
        (``num_global_key_value_heads``); the sliding-window layers keep ``head_dim`` and
        ``num_key_value_heads``. Gemma 4's small models' KV sharing and per-layer input
        embeddings are refused."""
        for field in ("num_kv_shared_layers", "hidden_size_per_layer_input"):
            if _int(cfg, field, lo=0, required=False, default=0):
                raise ValueError(f"config.json field {field!r}: Gemma 4's KV sharing across "
                                 f"layers and per-layer input embeddings (E2B, E4B) are not "
                                 f"supported; the field must be 0")
        full_dim = _int(cfg, "global_head_dim", required=False, default=self.head_dim)
        full_kv = self.kv_heads
        if _flag(cfg, "attention_k_eq_v"):
            full_kv = _int(cfg, "num_global_key_value_heads", required=False,
                           default=self.kv_heads)
            if full_kv > self.heads or self.heads % full_kv:
                raise ValueError(f"config.json field 'num_global_key_value_heads' ({full_kv}) "
                                 f"must divide 'num_attention_heads' ({self.heads})")
        if self.n_sliding and (full_kv, full_dim) != (self.kv_heads, self.head_dim):
            self.swa = (self.kv_heads, self.head_dim, self.head_dim)
            self.kv_heads, self.head_dim = full_kv, full_dim

    def _kv_layouts(self, cfg):
        """The value head dimension (None: the key's) and the sliding-window layers' own
        ``(KV heads, key head dim, value head dim)`` (None: the full layers'): MiMo-V2-Flash's
        ``v_head_dim`` and ``swa_*`` fields."""
        value = None
        if self.mla is not None:        # MLA: the value heads its prefill decompresses to
            value = self.mla["v_head_dim"]
        elif cfg.get("v_head_dim") is not None:
            value = _int(cfg, "v_head_dim")
            value = None if value == self.head_dim else value     # one head dim: as ever
        fields = ("swa_num_key_value_heads", "swa_head_dim", "swa_v_head_dim")
        if all(cfg.get(f) is None for f in fields):
            return value, None
        if self.mla is not None or not self.n_sliding:
            field = next(f for f in fields if cfg.get(f) is not None)
            raise ValueError(f"config.json field {field!r} needs sliding-window layers of K/V "
                             f"heads (not MLA) beside the full ones")
        heads = _int(cfg, "swa_num_attention_heads", required=False, default=self.heads)
        if heads != self.heads:
            raise ValueError(f"config.json field 'swa_num_attention_heads' ({heads}) must equal "
                             f"'num_attention_heads' ({self.heads}): query heads of their own "
                             f"in the sliding-window layers are not supported")
        kv = _int(cfg, "swa_num_key_value_heads", required=False, default=self.kv_heads)
        if kv > self.heads or self.heads % kv:
            raise ValueError(f"config.json field 'swa_num_key_value_heads' ({kv}) must divide "
                             f"'num_attention_heads' ({self.heads})")
        key = _int(cfg, "swa_head_dim", required=False, default=self.head_dim)
        return value, (kv, key, _int(cfg, "swa_v_head_dim", required=False,
                                     default=value or key))

    @property
    def attention_kinds(self) -> list:
        """``(layers, KV heads, key head dim, value head dim)`` of the full-attention layers, then
        of the sliding-window ones (non-MLA attention)."""
        full = (self.attention_layers - self.n_sliding, self.kv_heads, self.head_dim,
                self.v_head_dim or self.head_dim)
        return [full, (self.n_sliding, *self.swa) if self.swa else (self.n_sliding, *full[1:])]

    def _kv_heads(self, cfg):
        # Falcon's original layout: multi_query=True means one shared K/V head.
        if _flag(cfg, "multi_query") and not _flag(cfg, "new_decoder_architecture"):
            kv = 1
        elif self.blocks is not None:
            # DeciLM: each attention layer's query heads per KV head
            groups = {g for g, _ in self.blocks if g is not None}
            if len(groups) > 1:
                raise ValueError(f"config.json field 'block_configs': attention layers with "
                                 f"{sorted(groups)} query heads per KV head are not supported "
                                 f"(one KV layout for every layer)")
            group = groups.pop() if groups else 1
            if self.heads % group:
                raise ValueError(f"config.json field 'block_configs': n_heads_in_group "
                                 f"({group}) must divide 'num_attention_heads' ({self.heads})")
            kv = self.heads // group
        else:
            kv = _int(cfg, "num_key_value_heads", required=False, default=self.heads)
        if kv > self.heads or self.heads % kv:
            raise ValueError(f"config.json field 'num_key_value_heads' ({kv}) must divide "
                             f"'num_attention_heads' ({self.heads})")
        return kv

    def _mla(self, cfg):
        if cfg.get("kv_lora_rank") is None:
            return None
        return {
            "kv_lora_rank": _int(cfg, "kv_lora_rank"),
            "qk_rope_head_dim": _int(cfg, "qk_rope_head_dim", lo=0),
            "qk_nope_head_dim": _int(cfg, "qk_nope_head_dim", lo=0),
            "v_head_dim": _int(cfg, "v_head_dim"),
            "q_lora_rank": _int(cfg, "q_lora_rank", required=False),
        }

    def _head_dim(self, cfg):
        if self.mla is not None:      # MLA's query/key head: a non-rotary and a rotary part
            return self.mla["qk_nope_head_dim"] + self.mla["qk_rope_head_dim"]
        explicit = _int(cfg, "head_dim", required=False)
        if explicit is not None:
            return explicit
        if self.hidden % self.heads:
            raise ValueError(f"config.json field 'hidden_size' ({self.hidden}) must be divisible "
                             f"by 'num_attention_heads' ({self.heads}) when 'head_dim' is absent")
        return self.hidden // self.heads

    @staticmethod
    def _experts(cfg):
        if not _flag(cfg, "enable_moe_block", True):      # Gemma 4's dense models
            return 1
        for field in ("num_local_experts", "n_routed_experts", "num_experts"):
            if cfg.get(field) is not None:
                return max(_int(cfg, field, lo=0), 1)
        return 1

    def _layer_kinds(self, cfg):
        """Each layer's kind ("full", "sliding", "chunked", "linear", "mamba", "mlp", "moe"), or
        None when every layer is attention as the window fields say (see _window)."""
        if self.blocks is not None:         # DeciLM: a layer without attention is MLP only
            return ["full" if group is not None else "mlp" for group, _ in self.blocks]
        pattern = cfg.get("hybrid_layer_pattern")
        if pattern is not None:             # MiMo-V2-Flash: 1 a sliding-window layer, 0 a full one
            flags = _layer_flags(pattern, "hybrid_layer_pattern", self.layers,
                                 "1: sliding-window attention, 0: full attention")
            return ["sliding" if f else "full" for f in flags]
        layer_types = cfg.get("layer_types")
        if layer_types is not None:
            if not isinstance(layer_types, list) or len(layer_types) != self.layers:
                raise ValueError(f"config.json field 'layer_types' must be a list of "
                                 f"{self.layers} entries (one per layer)")
            odd = next((t for t in layer_types if not isinstance(t, str)), None)
            if odd is not None:
                raise TypeError(f"config.json field 'layer_types' must hold strings "
                                f"('sliding_attention', 'full_attention'); got {describe(odd)}")
            unknown = set(layer_types) - set(_LAYER_TYPES)
            if unknown:
                raise ValueError(f"config.json field 'layer_types' holds "
                                 f"{show(sorted(unknown))}; allowed: "
                                 f"{', '.join(map(repr, _LAYER_TYPES))}")
            return [_LAYER_TYPES[t] for t in layer_types]
        blocks = cfg.get("layers_block_type")
        if blocks is not None and cfg.get("hybrid_override_pattern") is None:
            name = "config.json field 'layers_block_type'"    # Nemotron-H, one name a layer
            if not isinstance(blocks, list) or len(blocks) != self.layers:
                raise ValueError(f"{name} must be a list of {self.layers} entries (one per "
                                 f"layer)")
            bad = next((b for b in blocks if not isinstance(b, str) or b not in _BLOCK_TYPES),
                       None)
            if bad is not None:
                raise ValueError(f"{name} holds {show(bad)}; allowed: "
                                 f"{', '.join(map(repr, _BLOCK_TYPES))}")
            return [_BLOCK_TYPES[b] for b in blocks]
        pattern = cfg.get("hybrid_override_pattern")
        if pattern is not None:                      # Nemotron-H: one character a layer
            name = "config.json field 'hybrid_override_pattern'"
            if not isinstance(pattern, str):
                raise TypeError(f"{name} must be a string; got {describe(pattern)}")
            if len(pattern) != self.layers:
                raise ValueError(f"{name} has {len(pattern)} characters; it needs one a layer, "
                                 f"num_hidden_layers = {self.layers}")
            unknown = set(pattern) - set(_PATTERN_KINDS)
            if unknown:
                raise ValueError(f"{name} holds {show(sorted(unknown))}; allowed: 'M' (Mamba), "
                                 f"'*' (attention), '-' (MLP), 'E' (mixture of experts)")
            return [_PATTERN_KINDS[c] for c in pattern]
        if cfg.get("full_attention_interval") is not None:      # Qwen3-Next
            every = _int(cfg, "full_attention_interval")
            return ["full" if (i + 1) % every == 0 else "linear" for i in range(self.layers)]
        if cfg.get("attn_layer_period") is not None:            # Jamba
            period = _int(cfg, "attn_layer_period")
            # JambaConfig's default offset is 4 (attention in layers 4, 12, 20, ...)
            offset = _int(cfg, "attn_layer_offset", lo=0, required=False, default=4)
            if offset >= period:
                raise ValueError(f"config.json field 'attn_layer_offset' ({offset}) must be "
                                 f"less than 'attn_layer_period' ({period})")
            return ["full" if i % period == offset else "mamba" for i in range(self.layers)]
        if cfg.get("attention_chunk_size") is not None:         # Llama 4
            if not self.model_type.startswith("llama4"):
                raise ValueError(f"config.json field 'attention_chunk_size' without "
                                 f"'layer_types' is read for Llama 4 only (model_type "
                                 f"'llama4_text'), whose 'no_rope_layers' say which layers are "
                                 f"chunked; model_type is {self.model_type or '(none)'!r}: give "
                                 f"'layer_types' with 'chunked_attention' entries")
            return self._chunked_kinds(cfg)
        return None

    def _chunked_kinds(self, cfg):
        """Llama 4: the layers that use RoPE attend within their chunk, the others (NoPE) to
        the whole context. ``no_rope_layers`` flags them (1: RoPE, chunked), else every
        ``no_rope_layer_interval``-th layer (default 4) is a NoPE layer, as transformers'
        ``Llama4TextConfig`` sets them."""
        flags = cfg.get("no_rope_layers")
        if flags:                                   # an empty list takes the default, as there
            flags = _layer_flags(flags, "no_rope_layers", self.layers,
                                 "1: chunked attention with RoPE, 0: full attention")
            return ["chunked" if f else "full" for f in flags]
        interval = _int(cfg, "no_rope_layer_interval", required=False, default=4)
        return ["full" if (i + 1) % interval == 0 else "chunked" for i in range(self.layers)]

    @property
    def attention_layers(self) -> int:
        """Layers with a KV cache."""
        if self.kinds is None:
            return self.layers
        return sum(k in _ATTENTION_KINDS for k in self.kinds)

    @property
    def is_hybrid(self) -> bool:
        return bool(self.parallel_mamba) or (
            self.kinds is not None
            and any(k in ("linear", "mamba", "mlp", "moe") for k in self.kinds))

    @property
    def mamba_layers(self) -> int:
        """Layers with a Mamba mixer (alone, or beside attention in Falcon-H1)."""
        return (0 if self.kinds is None else self.kinds.count("mamba")) + self.parallel_mamba

    @property
    def linear_layers(self) -> int:
        """Layers of linear attention (Gated DeltaNet)."""
        return 0 if self.kinds is None else self.kinds.count("linear")

    def _window(self, cfg):
        window = _int(cfg, "sliding_window", required=False)
        layer_types = cfg.get("layer_types")
        if self.attention_layers == 0:
            raise ValueError("config.json: no layer holds attention (layer_types, "
                             "hybrid_override_pattern); a model without a KV cache is not "
                             "supported")
        if self.kinds is not None and "chunked" in self.kinds:
            return self._chunk_window(cfg, window)
        if layer_types is not None or cfg.get("hybrid_layer_pattern") is not None:
            n_sliding = self.kinds.count("sliding")
        elif "use_sliding_window" in cfg and not _flag(cfg, "use_sliding_window"):
            return None, 0
        elif self.kinds is not None:       # a hybrid pattern: any window is every attention's
            n_sliding = self.attention_layers
        elif "use_sliding_window" in cfg:
            # Qwen2 family: the window is off unless use_sliding_window, and then applies to the
            # layers from max_window_layers on (transformers' Qwen2Config.layer_types).
            if not _flag(cfg, "use_sliding_window"):
                return None, 0
            first = _int(cfg, "max_window_layers", lo=0, required=False, default=0)
            n_sliding = max(self.layers - first, 0)
        elif self.model_type == "gemma2":
            n_sliding = (self.layers + 1) // 2       # even-indexed layers are local
        elif cfg.get("sliding_window_pattern") is not None:
            period = _int(cfg, "sliding_window_pattern")     # Gemma-3: every period-th is global
            n_sliding = self.layers - self.layers // period
        else:
            n_sliding = self.layers
        if window is None:
            if (layer_types is not None or cfg.get("hybrid_layer_pattern") is not None) \
                    and n_sliding:
                raise ValueError("config.json field 'sliding_window' is missing but "
                                 "'layer_types' (or 'hybrid_layer_pattern') has sliding-window "
                                 "layers")
            return None, 0
        context = _int(cfg, "max_position_embeddings", required=False)
        if n_sliding and context is not None and window > context:
            raise ValueError(f"config.json field 'sliding_window' ({window:,}) exceeds "
                             f"'max_position_embeddings' ({context:,}): a window longer than "
                             f"any context is no window; check the config")
        return (window, n_sliding) if n_sliding else (None, 0)

    def _chunk_window(self, cfg, window):
        """Chunked local attention (Llama 4): each chunked layer holds at most one chunk of
        ``attention_chunk_size`` tokens, the bound a window of that length gives; the window
        fields carry it (ModelShape.attention_chunk_size says the window is a chunk)."""
        if self.kinds.count("sliding") or (window is not None
                                           and _flag(cfg, "use_sliding_window", True)):
            raise ValueError("config.json: chunked local attention ('attention_chunk_size') "
                             "beside sliding-window layers ('sliding_window') is not supported")
        if cfg.get("attention_chunk_size") is None:
            raise ValueError("config.json field 'attention_chunk_size' is missing but "
                             "'layer_types' has chunked_attention layers")
        self.chunk = _int(cfg, "attention_chunk_size")
        context = _int(cfg, "max_position_embeddings", required=False)
        if context is not None and self.chunk > context:
            raise ValueError(f"config.json field 'attention_chunk_size' ({self.chunk:,}) "
                             f"exceeds 'max_position_embeddings' ({context:,}): a chunk longer "
                             f"than any context is no chunk; check the config")
        return self.chunk, self.kinds.count("chunked")


def _refuse_unread_sparse_attention(cfg: Mapping) -> None:
    """A block-sparse attention with an index cache of its own (MiniMax-M3's
    ``sparse_attention_config`` with ``use_sparse_attention``) keeps index keys beside the KV
    cache that this reader does not size: refused, naming the field, rather than read as dense
    attention with the index left out."""
    sparse = cfg.get("sparse_attention_config")
    if sparse is None:
        return
    if not isinstance(sparse, Mapping):
        raise TypeError(f"config.json field 'sparse_attention_config' must be an object; got "
                        f"{describe(sparse)}")
    if _flag(sparse, "use_sparse_attention", False, at="sparse_attention_config."):
        raise ValueError("config.json field 'sparse_attention_config' (block-sparse attention "
                         "with its own index keys, use_sparse_attention: true) is not supported: "
                         "its index cache is not sized here; build the rooflinekit.ModelShape "
                         "by hand with the KV bytes per token the engine keeps")


def _block_configs(cfg: Mapping, layers: int, hidden: int):
    """DeciLM's (Llama-Nemotron's) ``block_configs``: each layer's ``(n_heads_in_group, MLP
    width)``, ``None`` for an attention or MLP that is ``no_op``; None without the field.

    The MLP width is transformers' ``_ffn_mult_to_intermediate_size``: ``2 · ffn_mult · h / 3``
    rounded up to a multiple of 256. Layers replaced by a linear map, sparsified or windowed
    attention and attention sinks are refused, naming the field.
    """
    blocks = cfg.get("block_configs")
    if blocks is None:
        return None
    name = "config.json field 'block_configs'"
    if not isinstance(blocks, list) or len(blocks) != layers:
        raise ValueError(f"{name} must be a list of {layers} entries (one per layer)")
    out = []
    for i, block in enumerate(blocks):
        at = f"block_configs[{i}]."
        parts = []
        for part in ("attention", "ffn"):
            sub = block.get(part) if isinstance(block, Mapping) else None
            if not isinstance(sub, Mapping):
                raise TypeError(f"config.json field '{at}{part}' must be an object; got "
                                f"{describe(sub)}")
            for field in ("replace_with_linear", "sparsify", "window_length", "num_sink_tokens"):
                if sub.get(field) not in (None, False):
                    raise ValueError(f"config.json field '{at}{part}.{field}' "
                                     f"({show(sub[field])}) is not supported; only attention "
                                     f"and MLPs, or no_op layers, are read")
            parts.append(sub)
        attention, ffn = parts
        group = (None if _flag(attention, "no_op", at=at + "attention.")
                 else _int(attention, "n_heads_in_group", at=at + "attention."))
        width = None
        if not _flag(ffn, "no_op", at=at + "ffn."):
            mult = real_number(f"config.json field '{at}ffn.ffn_mult'", ffn.get("ffn_mult"), 0)
            width = int(2 * mult * hidden / 3)
            width += -width % 256
        out.append((group, width))
    if all(group is None for group, _ in out):
        raise ValueError(f"{name}: every layer's attention is no_op; a model without a KV "
                         f"cache is not supported")
    return out


def _tied(cfg: Mapping, s: _Shape) -> bool:
    tied = s.model_type not in _UNTIED_BY_DEFAULT         # null, too, takes the class default
    return _flag(cfg, "tie_word_embeddings", tied, null=tied)


def _quant_bits(quant: Mapping, method: str) -> float:
    """``quantization_config.bits``: a width of :data:`QUANTIZATION_BITS` (exl2: in [2, 8])."""
    name = "config.json field 'quantization_config.bits'"
    bits = quant["bits"]
    if isinstance(bits, bool) or not isinstance(bits, numbers.Real):
        raise TypeError(f"{name} must be a number of bits; got {describe(bits)}")
    if method == "exl2":
        return real_number(name, bits, *_EXL2_BITS)
    try:
        valid = float(bits) in QUANTIZATION_BITS
    except OverflowError:            # an integer beyond float range
        valid = False
    if not valid:
        raise ValueError(f"{name} must be one of {', '.join(map(str, QUANTIZATION_BITS))} "
                         f"(exl2: any width in [{_EXL2_BITS[0]}, {_EXL2_BITS[1]}]); "
                         f"got {show(bits)}")
    return bits


def _compute_dtype(cfg: Mapping):
    """The checkpoint's 16/32-bit format from ``torch_dtype``/``dtype`` (None: not stated)."""
    raw = cfg.get("torch_dtype", cfg.get("dtype"))
    if raw is None:
        return None
    key = check_one_of("config.json field 'torch_dtype'", raw, sorted(_TORCH_DTYPES),
                       fold_case=True)
    return _TORCH_DTYPES[key]


def _dtype(cfg: Mapping):
    """(weights format, KV-cache format) from quantization_config and torch_dtype/dtype.

    The weights format is the nominal one (the quantized values' width); the bytes of each
    group of weights, scales included, come from :func:`_weight_groups`.
    """
    compute = _compute_dtype(cfg)
    quant = _quant_config(cfg)
    weights = compute or "bf16"
    if quant is not None:
        scheme = _scheme(quant)
        if scheme is not None:
            weights = scheme.nominal
    # The KV cache holds activations, kept in the 16-bit compute format; fp32 checkpoints are
    # served in 16 bits (vLLM's dtype="auto" casts them down).
    kv = compute if compute in ("bf16", "fp16") else "bf16"
    return weights, kv


def _quant_config(cfg: Mapping):
    quant = cfg.get("quantization_config")
    if quant is not None and not isinstance(quant, Mapping):
        raise TypeError(f"config.json field 'quantization_config' must be an object; got "
                        f"{describe(quant)}")
    return quant


# -- quantized weight formats ----------------------------------------------------------------------
#: Bytes per weight, scales included, of the microscaling formats: MXFP4 (OCP MX: 4-bit E2M1
#: values, one 8-bit E8M0 scale per 32) and NVFP4 (4-bit E2M1 values, one FP8 E4M3 scale per
#: 16; its one FP32 scale per tensor is not counted).
MXFP4_BYTES = (4 + 8 / 32) / 8
NVFP4_BYTES = (4 + 8 / 16) / 8

#: bitsandbytes' 4-bit formats (NF4, FP4): one FP32 absmax per block of 64 values, or with
#: double quantization an 8-bit absmax per block and one FP32 scale per 256 blocks.
BNB_4BIT_BYTES = (4 + 32 / 64) / 8
BNB_4BIT_DOUBLE_QUANT_BYTES = (4 + 8 / 64 + 32 / (64 * 256)) / 8

# quantization_config.quant_method values read; any other is refused (see _scheme).
_KNOWN_METHODS = ("mxfp4", "fp8", "fbgemm_fp8", "gptq", "awq", "exl2", "bitsandbytes",
                  "compressed-tensors", "modelopt")     # and "modelopt_fp4", ModelOpt's too


class _Scheme:
    """How a quantization_config stores the linear layers' weights.

    ``nominal`` is the values' format (ModelShape.bytes_per_param); ``linear(name)`` the bytes
    per weight, scales included, of the linear layer ``name`` (HF module naming), or ``None``
    when the layer is left in the checkpoint's 16-bit format.
    """

    def __init__(self, nominal, rules, skip=(), lm_head=False):
        self.nominal = nominal
        self.rules = rules            # [(targets or None for every linear layer, bytes)]
        self.skip = tuple(skip)
        self.lm_head = lm_head        # whether the LM head is quantized too (else kept 16-bit)

    def linear(self, name: str):
        if name == "lm_head" and not self.lm_head:
            return None
        if any(_matches(name, pattern) for pattern in self.skip):
            return None
        for targets, nbytes in self.rules:
            if targets is None or any(_matches(name, t) or t == "Linear" for t in targets):
                return nbytes
        return None

    def group(self, names, compute_bytes: float) -> float:
        """Bytes per weight of a group of modules, ``names`` being each family's spelling of
        it: 16-bit when the config skips any of them, else the format of the first one a rule
        names (16-bit when none)."""
        if any(any(_matches(n, pattern) for pattern in self.skip) for n in names):
            return compute_bytes
        found = next((f for f in map(self.linear, names) if f is not None), None)
        return compute_bytes if found is None else found


class _LayerTable(_Scheme):
    """ModelOpt's ``MIXED_PRECISION``: a format for each quantized module by name
    (``quantized_layers``), a language-model layer's matched from ``layers.N.`` on whatever the
    checkpoint's prefix (``language_model.model.``, ``model.language_model.``); the modules it
    does not name stay in the 16-bit format. ``hits`` counts the groups it named."""

    def __init__(self, nominal, table, skip=()):
        super().__init__(nominal, [], skip, lm_head=True)
        self.table = {_layer_key(name): nbytes for name, nbytes in table.items()}
        self.hits = 0

    def linear(self, name: str):
        if any(_matches(name, pattern) for pattern in self.skip):
            return None
        key = _layer_key(name)
        while key not in self.table and key.startswith("layers.") and key.count(".") > 2:
            key = key.rsplit(".", 1)[0]        # a parent module named whole (fused experts)
        return self.table.get(key)

    def group(self, names, compute_bytes: float) -> float:
        # names are alternatives (each family's spelling): the first one the table gives
        found = next((f for f in map(self.linear, names) if f is not None), None)
        if found is None:
            return compute_bytes
        self.hits += 1
        return found


#: Prefixes a checkpoint puts before its language model's ``layers.N.``.
_LANGUAGE_MODEL_PREFIXES = ("model.language_model.", "language_model.model.",
                            "language_model.", "model.")


def _layer_key(name: str) -> str:
    """A language-model module's name from its ``layers.N.`` on, whatever the checkpoint's
    prefix; any other module's (an MTP layer's, a vision tower's) whole name."""
    for prefix in _LANGUAGE_MODEL_PREFIXES:
        if name.startswith(prefix) and re.match(r"layers\.\d+\.", name[len(prefix):]):
            return name[len(prefix):]
    return name


def _matches(name: str, pattern: str) -> bool:
    """Whether a module-name pattern of a quantization_config names module ``name``.

    ``re:`` prefixes a regular expression matched at the start (compressed-tensors); otherwise
    the pattern is whole dotted components anywhere in the name (an exact name, a parent
    module, AutoAWQ's ``self_attn`` or ``layers.0.``), a glob (``model.layers.*.self_attn``,
    ModelOpt and transformers) or a regular expression matched at the start (transformers'
    ``modules_to_not_convert``).
    """
    if pattern.startswith("re:"):
        return _regex_match(pattern[3:], name)
    # whole dotted components anywhere in the name: AutoAWQ's and bitsandbytes' "self_attn",
    # "layers.0.", "mlp.gate" (the router, not gate_proj)
    components = pattern if pattern.endswith(".") else pattern + "."
    if ("." + components) in ("." + name + "."):
        return True
    if fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(name, pattern + ".*"):
        return True
    return _regex_match(pattern + r"(\.|$)", name)


def _regex_match(regex: str, name: str) -> bool:
    try:
        return re.match(regex, name) is not None
    except re.error:
        return False


def _patterns(quant: Mapping, field: str, at: str = "quantization_config.") -> list[str]:
    value = quant.get(field)
    if value is None:
        return []
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"config.json field '{at}{field}' must be a list of module names; got "
                        f"{describe(value)}")
    return list(value)


def _positive_int(quant: Mapping, field: str, at: str = "quantization_config.", *,
                  allow_minus_one: bool = False):
    value = quant.get(field)
    if value is None:
        return None
    if allow_minus_one and value == -1 and not isinstance(value, bool):
        return None                       # GPTQ/AWQ: -1 means one scale per output channel
    return whole_number(f"config.json field '{at}{field}'", value, 1)


def _fp8_block_bytes(quant: Mapping, at: str = "quantization_config.") -> float:
    """FP8 values, plus one FP32 scale per ``weight_block_size`` block when given."""
    block = quant.get("weight_block_size")
    if block is None:
        return 1.0                        # one scale per tensor (or per row): not counted
    if not isinstance(block, (list, tuple)) or len(block) != 2:
        raise ValueError(f"config.json field '{at}weight_block_size' must be two whole numbers "
                         f"(rows, columns of a block); got {show(block)}")
    rows, cols = (whole_number(f"config.json field '{at}weight_block_size'", b, 1)
                  for b in block)
    return 1.0 + 4.0 / (rows * cols)


def _integer_group_bytes(bits: float, group, zero_points: bool, scale_bytes: float = 2.0):
    """Packed ``bits``-bit integers with a 16-bit scale (and a packed zero point) per group."""
    if group is None:
        return bits / 8                   # one scale per output channel: not counted
    return (bits + (8 * scale_bytes + (bits if zero_points else 0)) / group) / 8


def _scheme(quant: Mapping):
    """The :class:`_Scheme` of a quantization_config (None: it quantizes no weights)."""
    method = quant.get("quant_method")
    if method is not None and not isinstance(method, str):
        raise TypeError(f"config.json field 'quantization_config.quant_method' must be a "
                        f"string; got {describe(method)}")
    method = (method or "").lower()
    skip = _patterns(quant, "modules_to_not_convert")
    if quant.get("bits") is not None and method not in ("compressed-tensors", "modelopt"):
        bits = _quant_bits(quant, method)
        if method in ("gptq", "awq"):
            group = _positive_int(quant, "group_size", allow_minus_one=True)
            zeros = method == "gptq" or _flag(quant, "zero_point", True,
                                              at="quantization_config.")
            per_weight = _integer_group_bytes(bits, group, zeros)
        else:
            per_weight = bits / 8            # exl2's average width; HQQ, quanto: values only
        lm_head = _flag(quant, "lm_head", at="quantization_config.")
        return _Scheme(bits / 8, [(None, per_weight)], skip, lm_head=lm_head)
    if method in ("fp8", "fbgemm_fp8"):
        return _Scheme("fp8", [(None, _fp8_block_bytes(quant))], skip)
    if method == "mxfp4":
        return _Scheme("mxfp4", [(None, MXFP4_BYTES)], skip)
    if method == "" and quant.get("quant_algo") is not None:
        # ModelOpt's own quantization_config (its hf_quant_config.json copied in), which names
        # no quant_method: Qwen3-32B-FP8-Static-PerTensor
        return _modelopt(quant, "quantization_config.")
    if method in ("", "bitsandbytes"):
        skip = skip + _patterns(quant, "llm_int8_skip_modules")
        if _flag(quant, "load_in_4bit", at="quantization_config."):
            double = _flag(quant, "bnb_4bit_use_double_quant", at="quantization_config.")
            nbytes = BNB_4BIT_DOUBLE_QUANT_BYTES if double else BNB_4BIT_BYTES
            return _Scheme("int4", [(None, nbytes)], skip)
        if _flag(quant, "load_in_8bit", at="quantization_config."):
            return _Scheme("int8", [(None, 1.0)], skip)   # one FP32 scale per row: not counted
        if method == "bitsandbytes":
            raise ValueError("config.json field 'quantization_config' (bitsandbytes) sets "
                             "neither load_in_4bit nor load_in_8bit")
    if method == "compressed-tensors":
        return _compressed_tensors(quant)
    if method in ("modelopt", "modelopt_fp4"):
        return _modelopt(quant, "quantization_config.")
    raise ValueError(
        f"config.json field 'quantization_config.quant_method': {method or '(none)'!r} is not a "
        f"weight format rooflinekit reads (it reads {', '.join(_KNOWN_METHODS)}, and any method "
        f"stating 'bits'); give the weights' format instead: bytes_per_param= in Python (a "
        f"name such as 'int4' or bytes per weight: ModelShape.from_hf_config(path, "
        f"bytes_per_param=0.55)) or --dtype on the command line")


def _compressed_tensors(quant: Mapping):
    """compressed-tensors: ``config_groups`` of targets and weight arguments, ``ignore``."""
    at = "quantization_config."
    groups = quant.get("config_groups") or {}
    if not isinstance(groups, Mapping):
        raise TypeError(f"config.json field '{at}config_groups' must be an object; got "
                        f"{describe(groups)}")
    rules, nominal = [], None
    for key, group in groups.items():
        where = f"{at}config_groups.{key}."
        if not isinstance(group, Mapping):
            raise TypeError(f"config.json field '{where[:-1]}' must be an object; got "
                            f"{describe(group)}")
        weights = group.get("weights")
        if weights is None:
            continue                                   # activations only
        if not isinstance(weights, Mapping):
            raise TypeError(f"config.json field '{where}weights' must be an object; got "
                            f"{describe(weights)}")
        w = f"{where}weights."
        bits = whole_number(f"config.json field '{w}num_bits'", weights.get("num_bits"), 1)
        if bits > 16:
            raise ValueError(f"config.json field '{w}num_bits' must be at most 16; got "
                             f"{show(bits)}")
        kind = str(weights.get("type") or "int").lower()
        strategy = str(weights.get("strategy") or "tensor").lower()
        if strategy in ("group", "tensor_group"):
            size = _positive_int(weights, "group_size", at=w)
            if size is None:
                raise ValueError(f"config.json field '{w}group_size' is missing for strategy "
                                 f"{strategy!r}")
            # 4-bit floats (NVFP4, MXFP4) keep 8-bit scales; integers a 16-bit scale
            scale = 1.0 if kind == "float" and bits == 4 else 2.0
            zeros = not _flag(weights, "symmetric", True, at=w)
            nbytes = _integer_group_bytes(bits, size, zeros, scale)
        elif strategy == "block":
            # values, and one FP32 scale per block_structure block (DeepSeek's layout)
            block = _fp8_block_bytes({"weight_block_size": weights.get("block_structure")},
                                     at=w) if weights.get("block_structure") is not None else 1.0
            nbytes = bits / 8 + (block - 1.0)
        elif strategy in ("tensor", "channel", "token"):
            nbytes = bits / 8                  # one scale per tensor or row: not counted
        else:
            raise ValueError(f"config.json field '{w}strategy' must be one of 'tensor', "
                             f"'channel', 'group', 'tensor_group', 'block'; got "
                             f"{show(strategy)}")
        targets = _patterns(group, "targets", at=where) or ["Linear"]
        rules.append((targets, nbytes))
        if nominal is None:
            nominal = "nvfp4" if (kind == "float" and bits == 4 and strategy == "tensor_group") \
                else bits / 8
    if not rules:
        return None
    return _Scheme(nominal, rules, _patterns(quant, "ignore"), lm_head=True)


def _modelopt(quant: Mapping, at: str):
    """NVIDIA ModelOpt (``quant_algo``, ``group_size``, ``exclude_modules``)."""
    algo = quant.get("quant_algo")
    if not isinstance(algo, str):
        raise TypeError(f"config.json field '{at}quant_algo' must be a string; got "
                        f"{describe(algo)}")
    skip = _patterns(quant, "exclude_modules", at=at) + _patterns(quant, "ignore", at=at)
    if algo.upper() == "NVFP4":
        group = _positive_int(quant, "group_size", at=at) or 16
        return _Scheme("nvfp4", [(None, (4 + 8 / group) / 8)], skip, lm_head=True)
    if algo.upper() == "FP8":
        return _Scheme("fp8", [(None, 1.0)], skip, lm_head=True)
    if algo.upper() == "MIXED_PRECISION":
        return _mixed_precision(quant, at, skip)
    raise ValueError(f"config.json field '{at}quant_algo': {algo!r} is not a weight format "
                     f"rooflinekit reads (NVFP4, FP8, MIXED_PRECISION); give the weights' "
                     f"format instead: bytes_per_param= in Python or --dtype on the command "
                     f"line")


#: Bytes per weight, scales included, of the formats ModelOpt's ``MIXED_PRECISION`` names per
#: layer, and the nominal format of each: MXFP8 keeps one 8-bit scale per 32 values.
MXFP8_BYTES = (8 + 8 / 32) / 8
_MODELOPT_LAYER_FORMATS = {"NVFP4": "nvfp4", "W4A16_NVFP4": "nvfp4", "FP8": "fp8",
                           "MXFP8": "fp8"}


def _mixed_precision(quant: Mapping, at: str, skip) -> _LayerTable:
    """ModelOpt's ``MIXED_PRECISION``: ``quantized_layers`` gives each module its
    ``quant_algo`` (and ``group_size``)."""
    layers = quant.get("quantized_layers")
    if not isinstance(layers, Mapping) or not layers:
        raise TypeError(f"config.json field '{at}quantized_layers' must be an object of module "
                        f"names and formats for quant_algo MIXED_PRECISION; got "
                        f"{describe(layers)}")
    table, nominals = {}, set()
    for name, entry in layers.items():
        where = f"{at}quantized_layers.{name}."
        if not isinstance(entry, Mapping):
            raise TypeError(f"config.json field '{where[:-1]}' must be an object with a "
                            f"'quant_algo'; got {describe(entry)}")
        algo = entry.get("quant_algo")
        if not isinstance(algo, str):
            raise TypeError(f"config.json field '{where}quant_algo' must be a string; got "
                            f"{describe(algo)}")
        if algo.upper() not in _MODELOPT_LAYER_FORMATS:
            raise ValueError(f"config.json field '{where}quant_algo': {algo!r} "
                             f"is not a format rooflinekit reads "
                             f"({', '.join(_MODELOPT_LAYER_FORMATS)}); give the weights' format "
                             f"instead: bytes_per_param= in Python or --dtype on the command "
                             f"line")
        algo = algo.upper()
        if _MODELOPT_LAYER_FORMATS[algo] == "nvfp4":
            group = _positive_int(entry, "group_size", at=where) or 16
            table[name] = (4 + 8 / group) / 8
        else:
            table[name] = MXFP8_BYTES if algo == "MXFP8" else 1.0
        nominals.add(_MODELOPT_LAYER_FORMATS[algo])
    # the narrowest format named, as the checkpoint's nominal one (each group keeps its own)
    return _LayerTable("nvfp4" if "nvfp4" in nominals else "fp8", table, skip)


def _layer_names(i: int, prefix: str = "model.", linear: bool = False,
                 model_type: str = "") -> dict[str, tuple[str, ...]]:
    """Hugging Face module names of layer ``i``'s linear layers, by group (any may match).

    ``prefix`` is ``"model.language_model."`` in a multimodal model; ``linear`` names a Gated
    DeltaNet layer's mixer (``linear_attn``) in place of attention's. Gemma 4 keeps its experts
    beside the MLP (``layers.N.experts``), not in it."""
    layer = f"{prefix}layers.{i}."
    mixer = (("linear_attn.in_proj_qkv", "linear_attn.out_proj") if linear
             else ("self_attn.q_proj", "self_attn.o_proj"))
    return {
        "attention": tuple(layer + name for name in mixer),
        "mlp": (layer + "mlp.gate_proj", layer + "mlp.down_proj"),
        "experts": ((layer + "experts.gate_up_proj",) if model_type == "gemma4_text" else
                    (layer + "mlp.experts.0.gate_proj", layer + "mlp.experts.gate_up_proj",
                     layer + "block_sparse_moe.experts.0.w1")),
        "shared_experts": (layer + "mlp.shared_experts.gate_proj",
                           layer + "mlp.shared_expert.gate_proj",
                           layer + "block_sparse_moe.shared_experts.gate_proj"),
    }


def _group_format(scheme: _Scheme, names, compute_bytes: float) -> float:
    """Bytes per weight of a group of modules (see :meth:`_Scheme.group`)."""
    return scheme.group(names, compute_bytes)


def _weight_groups(cfg: Mapping, s: "_Shape", parts: Mapping, hf_quant=None):
    """Bytes per parameter of the body, experts and embeddings, or None (one format throughout).

    Each part of :func:`count_params` is stored in the quantized format or, for modules the
    config leaves unconverted (``modules_to_not_convert``, ``ignore``, ``exclude_modules``),
    the routers, norms, biases, embeddings and encoders, in the checkpoint's 16-bit format;
    layer by layer where a pattern names some layers only.
    """
    quant = _quant_config(cfg)
    if quant is None and hf_quant is None:
        return None
    compute = _compute_dtype(cfg) or "bf16"
    compute_bytes = bytes_per_element(compute)
    scheme = _scheme(quant) if quant is not None else _modelopt(hf_quant, "quantization.")
    if scheme is None:
        return None
    # bytes per weight of each quantizable part, layer by layer: [(params, bytes), ...]
    pieces = {group: [] for group in ("attention", "mlp", "experts", "shared_experts")}
    moe = _moe_layers(cfg, s)
    n_moe = sum(moe)
    # a multimodal checkpoint keeps its language model under model.language_model
    prefix = "model.language_model." if cfg.get("multimodal_model_type") else "model."
    for i in range(s.layers):
        names = _layer_names(i, prefix, s.kinds is not None and s.kinds[i] == "linear",
                             s.model_type)
        pieces["attention"].append((parts["attention"] / s.layers,
                                    _group_format(scheme, names["attention"], compute_bytes)))
        if moe[i] and s.model_type == "gemma4_text":      # its MLP runs beside the experts
            pieces["mlp"].append((parts["mlp"] / s.layers,
                                  _group_format(scheme, names["mlp"], compute_bytes)))
        for group in (("experts", "shared_experts") if moe[i] else ("mlp",)):
            count = parts[group] / (n_moe if moe[i] else s.layers - n_moe)
            if group == "experts" and s.model_type == "gpt_oss":
                # gpt-oss keeps its experts' biases in 16 bits beside the MXFP4 matrices
                biases = s.n_experts * (2 * s.moe_intermediate + s.hidden)
                pieces[group].append((biases, compute_bytes))
                count -= biases
            pieces[group].append((count, _group_format(scheme, names[group], compute_bytes)))
    h, tied = s.hidden, _tied(cfg, s)
    head = scheme.linear("lm_head")
    embedding = [(s.vocab * h, compute_bytes)]          # a table looked up, never quantized
    if not tied:
        embedding.append((s.vocab * h, compute_bytes if head is None else head))
    experts = pieces.pop("experts")
    # the body: the quantizable parts in their formats, the rest (routers, norms, learned
    # positions, biases outside the layers, encoders) in the checkpoint's
    body = [piece for group in pieces.values() for piece in group]
    rest = parts["total"] - sum(p for p, _ in experts) - sum(p for p, _ in embedding) \
        - sum(p for p, _ in body)
    body.append((rest, compute_bytes))
    if isinstance(scheme, _LayerTable) and not scheme.hits:
        example = _layer_names(0, prefix)["attention"][0]
        raise ValueError(f"ModelOpt's quantized_layers names none of this model's modules as "
                         f"rooflinekit names them ({example!r}, ...); rather than take every "
                         f"weight as 16-bit, give the weights' format: bytes_per_param= in "
                         f"Python or --dtype on the command line")
    return {"body_bytes_per_param": _mean_format(body, compute_bytes),
            # a dense model's MLP format for its (absent) experts
            "expert_bytes_per_param": _mean_format(experts or pieces["mlp"], compute_bytes),
            "embedding_bytes_per_param": _mean_format(embedding, compute_bytes)}


def _mean_format(pieces, default: float) -> float:
    """Bytes per parameter over ``(params, bytes)`` pieces: the one format when all share it."""
    pieces = [(p, b) for p, b in pieces if p > 0]
    if not pieces:
        return default
    formats = {b for _, b in pieces}
    if len(formats) == 1:
        return formats.pop()
    return sum(p * b for p, b in pieces) / sum(p for p, _ in pieces)


# -- recurrent state of hybrid models --------------------------------------------------------------
def _state_dtype_bytes(cfg: Mapping) -> float:
    """Bytes of a recurrent-state element: the config's SSM state dtype, else FP32."""
    for field in ("mamba_ssm_cache_dtype", "mamba_ssm_dtype"):
        if cfg.get(field) is not None:
            key = check_one_of(f"config.json field {field!r}", cfg[field], sorted(_TORCH_DTYPES),
                               fold_case=True)
            return bytes_per_element(_TORCH_DTYPES[key])
    return 4.0


def _first(cfg: Mapping, fields, **kwargs):
    """The first of ``fields`` the config gives (its spellings differ by family)."""
    for field in fields[:-1]:
        if cfg.get(field) is not None:
            return _int(cfg, field, **kwargs)
    return _int(cfg, fields[-1], **kwargs)


def _recurrent_state(cfg: Mapping, s: "_Shape") -> tuple[float, float]:
    """Bytes of the constant state one sequence holds in the linear-attention and Mamba layers,
    and of its recurrent part (the rest is the convolution state) [bytes].

    Gated DeltaNet (Qwen3-Next, Qwen3.5): a recurrent state of ``H_v · d_k · d_v`` elements and
    a convolution state of ``(kernel − 1) · (2 · H_k · d_k + H_v · d_v)`` a layer. Mamba-2
    (Nemotron-H, Granite-4.0-H): ``H · d_head · N`` and ``(d_conv − 1) · (H · d_head + 2 · G ·
    N)``; Mamba-1 (Jamba): ``E · h · N`` and ``(d_conv − 1) · E · h``. The recurrent states
    are FP32 unless ``mamba_ssm_cache_dtype``/``mamba_ssm_dtype`` says otherwise, the
    convolution states in the checkpoint's 16-bit format. Falcon-H1 has a Mamba-2 mixer beside
    attention in every layer.
    """
    if not s.is_hybrid:
        return 0.0, 0.0
    state = _state_dtype_bytes(cfg)
    conv = bytes_per_element(_compute_dtype(cfg) or "bf16")
    if conv > 2:
        conv = 2.0                       # fp32 checkpoints are served in 16 bits
    total = recurrent = 0.0
    n_linear = s.linear_layers
    if n_linear:
        value_heads = _int(cfg, "linear_num_value_heads")
        key_heads = _int(cfg, "linear_num_key_heads")
        key_dim = _int(cfg, "linear_key_head_dim")
        value_dim = _int(cfg, "linear_value_head_dim")
        kernel = _int(cfg, "linear_conv_kernel_dim")
        ssm = value_heads * key_dim * value_dim * state
        per_layer = ssm + (kernel - 1) * (2 * key_heads * key_dim + value_heads * value_dim) * conv
        total += n_linear * per_layer
        recurrent += n_linear * ssm
    n_mamba = s.mamba_layers
    if n_mamba:
        kernel = _first(cfg, ("conv_kernel", "mamba_d_conv"), required=False, default=4)
        if cfg.get("mamba_num_heads") is not None or cfg.get("mamba_n_heads") is not None:
            heads = _first(cfg, ("mamba_num_heads", "mamba_n_heads"))
            head_dim = _first(cfg, ("mamba_head_dim", "mamba_d_head"))
            size = _first(cfg, ("ssm_state_size", "mamba_d_state"))
            groups = _first(cfg, ("n_groups", "mamba_n_groups"), required=False, default=1)
            inner = heads * head_dim
            ssm = heads * head_dim * size * state
            per_layer = ssm + (kernel - 1) * (inner + 2 * groups * size) * conv
        else:                                   # Mamba-1: a state per inner channel
            size = _first(cfg, ("mamba_d_state", "ssm_state_size"))
            inner = _int(cfg, "mamba_expand", required=False, default=2) * s.hidden
            ssm = inner * size * state
            per_layer = ssm + (kernel - 1) * inner * conv
        total += n_mamba * per_layer
        recurrent += n_mamba * ssm
    return float(total), float(recurrent)


# -- parameter count -------------------------------------------------------------------------------
def _moe_layers(cfg: Mapping, s: _Shape) -> list[bool]:
    """Which layers hold a mixture-of-experts MLP.

    Nemotron-H: the ``E`` layers of ``hybrid_override_pattern``. Otherwise ``moe_layers``
    (Llama 4: the indices), else every layer from ``first_k_dense_replace`` on that
    ``moe_layer_freq`` (an integer period, or a list of 0/1 per layer as MiMo-V2-Flash gives
    it), ``decoder_sparse_step``/``interleave_moe_layer_step`` (every n-th layer, counting from
    1: Qwen2-MoE, Llama 4 Maverick) and ``mlp_only_layers`` leave sparse.
    """
    if s.n_experts <= 1:
        return [False] * s.layers
    if s.model_type == "nemotron_h" and s.kinds is not None:
        return [kind == "moe" for kind in s.kinds]
    if s.model_type == "jamba":
        return _jamba_moe_layers(cfg, s)
    listed = cfg.get("moe_layers")
    if listed is not None:
        name = "config.json field 'moe_layers'"
        if not isinstance(listed, (list, tuple)):
            raise TypeError(f"{name} must be a list of layer indices; got {describe(listed)}")
        indices = {whole_number(f"{name} (entry {i})", layer, 0) for i, layer in enumerate(listed)}
        if indices and max(indices) >= s.layers:
            raise ValueError(f"{name} holds layer {max(indices)}; the model has "
                             f"{s.layers} (indices 0 to {s.layers - 1})")
        return [i in indices for i in range(s.layers)]
    first_dense = _int(cfg, "first_k_dense_replace", lo=0, required=False, default=0)
    freq_field = cfg.get("moe_layer_freq")
    if isinstance(freq_field, (list, tuple)):
        sparse = _layer_flags(freq_field, "moe_layer_freq", s.layers,
                              "1: mixture of experts, 0: dense")
        freq = 1
    else:
        sparse, freq = [True] * s.layers, _int(cfg, "moe_layer_freq", required=False, default=1)
    step = _first(cfg, ("decoder_sparse_step", "interleave_moe_layer_step"), required=False,
                  default=1)
    only = cfg.get("mlp_only_layers")
    if only is not None and not isinstance(only, (list, tuple)):
        raise TypeError(f"config.json field 'mlp_only_layers' must be a list of layer indices; "
                        f"got {describe(only)}")
    dense_only = {whole_number(f"config.json field 'mlp_only_layers' (entry {i})", layer, 0)
                  for i, layer in enumerate(only or ())}
    return [sparse[i] and i >= first_dense and i % freq == 0 and (i + 1) % step == 0
            and i not in dense_only for i in range(s.layers)]


def count_params(config) -> dict[str, int]:
    """Count a model's parameters from the shapes in its ``config.json``.

    Parameters
    ----------
    config : str, os.PathLike or Mapping
        Path to ``config.json``, a model folder, a repo id in the local Hugging Face cache
        (:func:`find_config`), or the parsed contents.

    Returns
    -------
    dict of str to int
        Parameters [count] by part: ``embedding`` (token and learned position embeddings),
        ``lm_head`` (0 when tied to the embedding), ``attention`` (projections with their biases,
        MLA's factorised projections and their norms, per-head q/k norms; in a hybrid model the
        Gated DeltaNet, Mamba-1 and Mamba-2 mixers too), ``mlp`` (dense MLPs),
        ``experts`` (routed experts), ``shared_experts``, ``router`` (gates and correction biases),
        ``norms`` (per-layer and final norms), ``vision`` and ``audio`` (a multimodal model's
        encoders with their projectors into the language model; 0 without them), and the sums
        ``total`` and ``active`` (the parameters one generated token uses: everything but the
        routed experts it is not sent to and the vision/audio encoders). ``mtp`` gives the
        multi-token-prediction modules (``num_nextn_predict_layers``) apart: they are in
        neither sum (0 without them): DeepSeek-V3's, Qwen3.5's (``mtp_num_hidden_layers``)
        and Nemotron-H's (``mtp_hybrid_override_pattern``).

    Notes
    -----
    Llama-style architectures (the default for an unknown ``model_type``): RMSNorm without bias,
    a gated MLP of three matrices (gate, up, down), biases only where the architecture has them
    (Qwen2's q/k/v; ``attention_bias``/``mlp_bias`` when set). Gemma-2/3 have four norms a layer.
    GPT-style architectures (GPT-2, GPT-BigCode, GPT-NeoX, GPT-J, Falcon, Phi-1/2): LayerNorm
    with bias, a two-matrix MLP (``n_inner: null`` means 4 × hidden), biased projections (Falcon:
    only when ``bias``; GPT-J: the MLP only), learned positions for GPT-2 and BigCode; GPT-J and
    Phi share one LayerNorm between attention and MLP and give the untied LM head a bias.

    Multimodal configs (``text_config`` with ``vision_config`` and/or ``audio_config``) count
    the encoders' weights too, since the server holds them in memory; ``active`` leaves them
    out, since they run once per image or clip at prefill, not per generated token. A vision
    encoder is counted as a ViT: a patch-embedding convolution, learned positions (CLIP adds a
    class token and a pre-LayerNorm), layers of biased q/k/v/out projections, a two-matrix MLP
    and two LayerNorms, a final LayerNorm and SigLIP's pooling head when ``vision_use_head``;
    the projector is Gemma-3's (one matrix and an RMSNorm of the vision width) or otherwise
    LLaVA's two-layer MLP with biases. A ``vision_config`` of ``depth`` blocks is Qwen3-VL's
    encoder (Qwen3-VL, Qwen3.5), counted with its patch merger and DeepStack mergers; a
    ``gemma4_vision`` one Gemma 4's, ``vt_*`` fields Kimi-K2.5's MoonViT with its patch-merger
    projector. An audio encoder is counted as Whisper's (two
    convolutions, learned positions, layers with an unbiased key projection) with a linear
    projector (Qwen2-Audio). Fields the file leaves out take the encoder class's defaults.
    Mamba hybrids: Nemotron-H (one mixer or MLP a layer, ``hybrid_override_pattern``), Jamba
    (Mamba-1 or attention a layer, then a dense or mixture-of-experts MLP; ``attn_layer_period``,
    ``expert_layer_period``), Granite-4.0-H (Mamba-2 or attention a layer, then a shared MLP
    and, with ``num_local_experts``, routed experts) and Falcon-H1 (Mamba-2 beside attention in
    every layer, then an MLP); the mixers' formulas are :func:`_mamba2_mixer`'s and
    :func:`_count_jamba`'s. Other hybrids of Mamba or MLP-only layers are refused.

    DeepSeek's multi-token-prediction modules (``num_nextn_predict_layers``) are not in
    ``total``, as DeepSeek's own 671B total does not count them; ``mtp`` counts them apart
    (DeepSeek-V3 and V3.2: each one decoder layer like the model's last, ``eh_proj``
    and three norms, the embedding table and LM head shared with the model), the weights a
    server holds when it uses them as a speculative-decoding draft. DeepSeek-V3.2's
    sparse-attention indexer (``index_n_heads``, ``index_head_dim``) is counted in
    ``attention``.

    References
    ----------
    .. [1] DeepSeek-V3 Technical Report, arXiv:2412.19437 (671B total, 37B activated).
    .. [2] Jiang et al., "Mixtral of Experts", arXiv:2401.04088 (46.7B total, 12.9B active).
    .. [3] Gemma Team, "Gemma 3 Technical Report", arXiv:2503.19786, 2025 (a 417M SigLIP vision
       encoder shared by the 4B, 12B and 27B models).
    .. [4] Liu et al., "Improved Baselines with Visual Instruction Tuning" (LLaVA-1.5),
       arXiv:2310.03744, 2023 (CLIP ViT-L/336px and a two-layer MLP projector).
    """
    if isinstance(config, (str, os.PathLike)):
        path = find_config(config)
        cfg = _flatten(_read(path))
    else:
        path, cfg = None, load_hf_config(config)
    with _naming(path):
        return _count(cfg)


def _count(cfg: Mapping) -> dict[str, int]:
    s = _Shape(cfg)
    if s.vocab is None:
        raise ValueError("config.json field 'vocab_size' is missing (needed to count parameters)")
    if s.gpt_style and s.n_experts > 1:
        raise ValueError(f"config.json: counting a mixture-of-experts {s.model_type!r} model is "
                         f"not supported; pass n_params and n_active_params")
    if s.is_hybrid and not _countable_hybrid(s):
        raise ValueError(f"config.json: counting the parameters of a hybrid model (layers of "
                         f"linear attention, Mamba or MLP only: {s.model_type or 'unknown'!r}) "
                         f"is supported for Qwen3-Next-style Gated DeltaNet, Nemotron-H, "
                         f"Jamba, Granite-4.0-H and Falcon-H1 only; pass n_params (and "
                         f"n_active_params for a mixture of experts)")
    h, d = s.hidden, s.head_dim
    q_width, kv_width = s.heads * d, s.kv_heads * d
    tied = _tied(cfg, s)
    parts = dict.fromkeys(("embedding", "lm_head", "attention", "mlp", "experts",
                           "shared_experts", "router", "norms", "vision", "audio"), 0)
    parts["embedding"] = s.vocab * h
    parts["lm_head"] = 0 if tied else s.vocab * h
    if s.gpt_style:
        parts.update(_count_gpt_style(cfg, s, q_width, kv_width))
    elif s.is_hybrid and s.model_type == "nemotron_h":
        parts.update(_count_nemotron_h(cfg, s, q_width, kv_width))
    elif s.model_type in _MAMBA_HYBRID_COUNTS:
        parts.update(_MAMBA_HYBRID_COUNTS[s.model_type](cfg, s))
    elif s.model_type == "gemma4_text":
        parts.update(_count_gemma4(cfg, s))
    elif s.blocks is not None:
        parts.update(_count_block_configs(cfg, s, q_width, kv_width))
    else:
        parts.update(_count_llama_style(cfg, s, q_width, kv_width))
        if s.is_hybrid:
            parts["attention"] = _count_gated_deltanet_mixing(cfg, s, q_width, kv_width)
    parts["vision"] = _count_vision(cfg, h)
    parts["audio"] = _count_audio(cfg, h)
    total = sum(parts.values())
    parts["mtp"] = _count_mtp(cfg, s, parts)         # beside the model: not in the total
    # the encoders run once per image or clip at prefill; a generated token does not use them
    unused = parts["vision"] + parts["audio"]
    if s.n_experts > 1:
        per_expert = 3 * h * s.moe_intermediate
        if s.model_type == "gpt_oss":                 # each expert's two biases
            per_expert += 2 * s.moe_intermediate + h
        if s.model_type == "nemotron_h":              # up and down projections, no gate
            per_expert = _nemotron_h_mlp(cfg, _latent_width(cfg, s), s.moe_intermediate)
        unused += sum(_moe_layers(cfg, s)) * (s.n_experts - s.top_k) * per_expert
    return {**parts, "total": total, "active": total - unused}


#: Model types whose multi-token-prediction module is DeepSeek-V3's (counted by _count_mtp).
_DEEPSEEK_MTP = frozenset({"deepseek_v3", "deepseek_v32"})
#: Qwen3.5's language models (dense and MoE), whose ``mtp_num_hidden_layers`` _count_mtp counts.
_QWEN3_5_MTP = frozenset({"qwen3_5_text", "qwen3_5_moe_text"})


def _count_mtp(cfg: Mapping, s: "_Shape", parts: Mapping) -> int:
    """Multi-token-prediction modules: DeepSeek-V3's (``num_nextn_predict_layers``) and
    Qwen3.5's (``mtp_num_hidden_layers``).

    DeepSeek-V3: each is one decoder layer like the model's last (attention and its MoE MLP),
    the projection ``eh_proj`` (2h → h) and three RMSNorms (``enorm``, ``hnorm``, the shared
    head's norm); it shares the embedding table and the LM head with the model (the checkpoint
    stores copies of them, which DeepSeek's "14B of MTP module weights" count). Qwen3.5 (vLLM's
    ``Qwen3_5MultiTokenPredictor``): ``fc`` (2h → h), ``pre_fc_norm_embedding``,
    ``pre_fc_norm_hidden`` and a final norm, and decoder layers of gated full attention with
    the model's MLP (dense, or its MoE block with the shared expert); an embedding table of its
    own when ``mtp_use_dedicated_embeddings``. Nemotron-H (Nemotron 3 Super, SGLang's
    ``NemotronHMultiTokenPredictor``): one layer a ``mtp_hybrid_override_pattern`` character
    (``mtp_layers_block_type`` entry), each a norm and the model's mixer of that kind, with
    ``enorm``, ``hnorm`` and ``eh_proj`` (2h → h) before the first and a norm after the last.
    0 for a model without such modules, and for other families' (GLM-4.5's, MiMo's,
    Qwen3-Next's), not counted here.
    """
    qwen = s.model_type in _QWEN3_5_MTP
    field = "mtp_num_hidden_layers" if qwen else "num_nextn_predict_layers"
    n = _int(cfg, field, lo=0, required=False, default=0)
    nemotron = s.model_type == "nemotron_h" and s.kinds is not None
    if not n or not (qwen or nemotron or s.model_type in _DEEPSEEK_MTP):
        return 0
    h, L = s.hidden, s.layers
    moe = _moe_layers(cfg, s)
    n_moe = sum(moe)
    if nemotron:
        kinds = _nemotron_h_mtp_kinds(cfg, s)
        if kinds is None:
            return 0
        per_kind = {"full": _nemotron_h_attention(cfg, s),
                    "mlp": parts["mlp"] // max(s.kinds.count("mlp"), 1),
                    "moe": (parts["experts"] + parts["shared_experts"] + parts["router"])
                    // max(n_moe, 1)}
        # a norm a layer; enorm, hnorm and eh_proj before the first, a norm after the last
        return n * (sum(per_kind[k] + h for k in kinds) + 2 * h * h + 3 * h)
    if moe[-1]:
        mlp = (parts["experts"] + parts["shared_experts"] + parts["router"]) // n_moe
    else:
        mlp = parts["mlp"] // (L - n_moe)
    if qwen:
        attention = _gated_attention(cfg, s, s.heads * s.head_dim, s.kv_heads * s.head_dim)
        dedicated = _flag(cfg, "mtp_use_dedicated_embeddings")
        return n * (attention + mlp + 2 * h) + 2 * h * h + 3 * h + (s.vocab * h if dedicated
                                                                     else 0)
    layer = parts["attention"] // L + mlp + 2 * h
    return n * (layer + 2 * h * h + 3 * h)


def _countable_hybrid(s: "_Shape") -> bool:
    """Hybrids whose parameters :func:`count_params` counts: Nemotron-H of Mamba, attention
    and MLP layers; Gated DeltaNet beside attention (Qwen3-Next, Qwen3.5); Jamba, Granite-4.0-H
    and Falcon-H1 (:data:`_MAMBA_HYBRID_COUNTS`)."""
    if s.model_type in _MAMBA_HYBRID_COUNTS:     # Jamba, Granite-4.0-H, Falcon-H1
        return True
    if s.parallel_mamba or s.kinds is None:
        return False
    if s.blocks is not None:                  # DeciLM's MLP-only layers
        return True
    if s.model_type == "nemotron_h":
        # 'E' layers are mixture-of-experts layers only in a model that has experts
        return "mamba" in s.kinds and (s.n_experts > 1 or "moe" not in s.kinds)
    return not {"mamba", "mlp", "moe"} & set(s.kinds)


def _count_gated_deltanet_mixing(cfg, s, q_width, kv_width) -> int:
    """Token mixing of a Qwen3-Next-style hybrid: gated attention and Gated DeltaNet layers.

    Attention (transformers' ``Qwen3NextAttention``): q projects to twice its width (the output
    gate, ``attn_output_gate``, default on), k, v, o, and per-head q and k RMSNorms. Gated
    DeltaNet (``Qwen3NextGatedDeltaNet``): ``in_proj_qkvz`` (h → 2·H_k·d_k + 2·H_v·d_v),
    ``in_proj_ba`` (h → 2·H_v), a bias-free depthwise convolution over ``2·H_k·d_k + H_v·d_v``
    channels, ``dt_bias`` and ``A_log`` (H_v each), a gated RMSNorm of d_v and ``out_proj``
    (H_v·d_v → h).
    """
    h = s.hidden
    attention = _gated_attention(cfg, s, q_width, kv_width)
    value_heads = _int(cfg, "linear_num_value_heads")
    key_heads = _int(cfg, "linear_num_key_heads")
    key_dim = _int(cfg, "linear_key_head_dim")
    value_dim = _int(cfg, "linear_value_head_dim")
    kernel = _int(cfg, "linear_conv_kernel_dim")
    keys, values = key_heads * key_dim, value_heads * value_dim
    conv_dim = 2 * keys + values
    deltanet = (h * (2 * keys + 2 * values) + h * 2 * value_heads + conv_dim * kernel
                + 2 * value_heads + value_dim + values * h)
    return s.attention_layers * attention + s.kinds.count("linear") * deltanet


def _gated_attention(cfg, s, q_width, kv_width) -> int:
    """One gated attention layer of Qwen3-Next and Qwen3.5 (see
    :func:`_count_gated_deltanet_mixing`)."""
    h = s.hidden
    gate = 2 if _flag(cfg, "attn_output_gate", True) else 1
    attention = h * (gate * q_width + 2 * kv_width) + q_width * h + 2 * s.head_dim
    if _flag(cfg, "attention_bias"):
        attention += gate * q_width + 2 * kv_width + h
    return attention


def _nemotron_h_mlp(cfg, h: int, width: int) -> int:
    """Nemotron-H's MLP (and each expert): up and down projections, ReLU², no gate."""
    return 2 * h * width + ((width + h) if _flag(cfg, "mlp_bias") else 0)


def _latent_width(cfg, s) -> int:
    """The width the routed experts read and write: LatentMoE's ``moe_latent_size`` (Nemotron 3
    Super), else the model's."""
    latent = _int(cfg, "moe_latent_size", required=False, default=s.hidden)
    if latent > s.hidden:
        raise ValueError(f"config.json field 'moe_latent_size' ({latent:,}) must not exceed "
                         f"'hidden_size' ({s.hidden:,}): the latent space is a projection down")
    return latent


def _nemotron_h_attention(cfg, s) -> int:
    """One Nemotron-H attention mixer: q, k, v, o (biased when ``attention_bias``)."""
    h, q_width, kv_width = s.hidden, s.heads * s.head_dim, s.kv_heads * s.head_dim
    attention = h * (q_width + 2 * kv_width) + q_width * h
    if _flag(cfg, "attention_bias"):
        attention += q_width + 2 * kv_width + h
    return attention


def _nemotron_h_mtp_kinds(cfg, s):
    """The layer kinds of Nemotron-H's MTP module: ``mtp_hybrid_override_pattern`` ("*E") or
    ``mtp_layers_block_type`` (["attention", "moe"]); None without either."""
    pattern = cfg.get("mtp_hybrid_override_pattern")
    blocks = cfg.get("mtp_layers_block_type")
    if pattern is not None:
        name = "config.json field 'mtp_hybrid_override_pattern'"
        if not isinstance(pattern, str) or not pattern:
            raise TypeError(f"{name} must be a non-empty string; got {describe(pattern)}")
        kinds = [_PATTERN_KINDS.get(c) for c in pattern]
    elif blocks is not None:
        name = "config.json field 'mtp_layers_block_type'"
        if not isinstance(blocks, list) or not blocks:
            raise TypeError(f"{name} must be a non-empty list; got {describe(blocks)}")
        kinds = [_BLOCK_TYPES.get(b) if isinstance(b, str) else None for b in blocks]
    else:
        return None
    allowed = {"full": "attention", "mlp": "mlp", "moe": "mixture of experts"}
    if any(k not in allowed or (k == "moe" and "moe" not in s.kinds)
           or (k == "mlp" and "mlp" not in s.kinds) for k in kinds):
        raise ValueError(f"{name} may hold attention, and MLP or mixture-of-experts layers "
                         f"of the kinds the model has (its Mamba layers are not counted "
                         f"there); got {show(pattern if pattern is not None else blocks)}")
    return kinds


def _count_nemotron_h(cfg, s, q_width, kv_width) -> dict[str, int]:
    """Nemotron-H (transformers' ``NemotronH``): one norm and one mixer a layer.

    Mamba-2 mixer: ``in_proj`` (h → 2·I + 2·G·N + H for z, x, B, C and dt), a depthwise
    convolution over ``I + 2·G·N`` channels (with bias when ``use_conv_bias``), ``dt_bias``,
    ``A_log`` and ``D`` (H each), a gated RMSNorm of I and ``out_proj`` (I → h), with
    ``I = H · d_head``. Attention: q, k, v, o. MLP: up and down projections (ReLU², no gate).
    Mixture-of-experts layers (``E``, Nemotron 3 Nano): ``n_routed_experts`` experts of width
    ``moe_intermediate_size`` and ``n_shared_experts`` shared experts of width
    ``moe_shared_expert_intermediate_size``, each an MLP as above, and a router of
    ``E × h`` weights with an ``E``-entry score-correction bias. LatentMoE (Nemotron 3 Super,
    ``moe_latent_size``): the routed experts read and write a latent of that width, between
    ``fc1_latent_proj`` (h → latent) and ``fc2_latent_proj`` (latent → h), which every token
    runs and which are counted with the shared experts; the router and the shared experts
    read the full width.
    """
    h = s.hidden
    heads, head_dim, size, groups, kernel = _mamba2_shape(cfg)
    bias = _flag(cfg, "mamba_proj_bias")
    mamba = _mamba2_mixer(h, heads * head_dim, heads, groups, size, kernel,
                          conv_bias=_flag(cfg, "use_conv_bias", True), in_bias=bias,
                          out_bias=bias)
    attention = _nemotron_h_attention(cfg, s)
    n_mlp, n_moe = s.kinds.count("mlp"), s.kinds.count("moe")
    mlp = 0
    if n_mlp:
        if s.intermediate is None:
            raise ValueError("config.json field 'intermediate_size' is missing")
        mlp = _nemotron_h_mlp(cfg, h, s.intermediate)
    experts = shared = router = 0
    if n_moe:
        latent = _latent_width(cfg, s)
        experts = s.n_experts * _nemotron_h_mlp(cfg, latent, s.moe_intermediate)
        n_shared = _int(cfg, "n_shared_experts", lo=0, required=False, default=0)
        if n_shared:
            shared = n_shared * _nemotron_h_mlp(
                cfg, h, _int(cfg, "moe_shared_expert_intermediate_size"))
        if latent != h:               # LatentMoE's fc1_latent_proj and fc2_latent_proj
            shared += 2 * h * latent + ((latent + h) if _flag(cfg, "mlp_bias") else 0)
        router = s.n_experts * h + s.n_experts          # weights and score-correction bias
    return {"attention": s.attention_layers * attention + s.kinds.count("mamba") * mamba,
            "mlp": n_mlp * mlp, "experts": n_moe * experts, "shared_experts": n_moe * shared,
            "router": n_moe * router, "norms": s.layers * h + h}


def _mamba2_shape(cfg: Mapping):
    """A Mamba-2 mixer's ``(heads H, head dim, state size N, groups G, kernel K)`` in either
    spelling (Nemotron-H's ``mamba_num_heads``/``ssm_state_size``/``n_groups``/``conv_kernel``,
    or Bamba's, Granite-4.0-H's and Falcon-H1's ``mamba_n_heads``/``mamba_d_state``/...)."""
    heads = _first(cfg, ("mamba_num_heads", "mamba_n_heads"))
    head_dim = _first(cfg, ("mamba_head_dim", "mamba_d_head"))
    size = _first(cfg, ("ssm_state_size", "mamba_d_state"))
    groups = _first(cfg, ("n_groups", "mamba_n_groups"), required=False, default=1)
    kernel = _first(cfg, ("conv_kernel", "mamba_d_conv"), required=False, default=4)
    return heads, head_dim, size, groups, kernel


def _mamba2_mixer(h: int, inner: int, heads: int, groups: int, size: int, kernel: int, *,
                  conv_bias: bool, in_bias: bool, out_bias: bool, gated_norm: bool = True) -> int:
    """Parameters [count] of one Mamba-2 mixer (Dao and Gu, arXiv:2405.21060), as transformers'
    ``NemotronHMamba2Mixer``, ``BambaMixer`` and ``FalconH1Mixer`` hold them.

    ``in_proj`` h → 2·I + 2·G·N + H (z, x, B, C and dt; ``in_bias`` adds its bias), a depthwise
    convolution of ``C = I + 2·G·N`` channels and kernel K (C·K weights, C biases when
    ``conv_bias``), ``dt_bias``, ``A_log`` and ``D`` (H each), a gated RMSNorm of I weights
    (``gated_norm``; Falcon-H1's is optional) and ``out_proj`` I → h (``out_bias`` adds h), with
    I the mixer's inner width [channels], H its heads, G its groups and N its state size.
    """
    projected = 2 * inner + 2 * groups * size + heads
    conv_dim = inner + 2 * groups * size
    return (h * projected + conv_dim * kernel + (conv_dim if conv_bias else 0)
            + 3 * heads + (inner if gated_norm else 0) + inner * h
            + (projected if in_bias else 0) + (h if out_bias else 0))


def _plain_attention(cfg: Mapping, s: "_Shape") -> int:
    """One attention block of q, k, v and o projections, biased when ``attention_bias``
    (Jamba, Granite-4.0-H, Falcon-H1): ``h·(q + 2·kv) + q·h`` with q = heads · head dim and
    kv = KV heads · head dim [count]."""
    return _nemotron_h_attention(cfg, s)


def _gated_mlp(h: int, width: int, bias: bool = False) -> int:
    """A gated (SwiGLU) MLP of gate, up and down projections: ``3·h·width`` [count], plus
    ``2·width + h`` biases when ``bias``."""
    return 3 * h * width + ((2 * width + h) if bias else 0)


def _jamba_dt_rank(cfg: Mapping, h: int) -> int:
    """Jamba's ``mamba_dt_rank``: a whole number, or ``"auto"`` for ⌈h / 16⌉ (``JambaConfig``)."""
    rank = cfg.get("mamba_dt_rank")
    if rank is None or rank == "auto":
        return -(-h // 16)
    return _int(cfg, "mamba_dt_rank")


def _jamba_moe_layers(cfg: Mapping, s: "_Shape") -> list[bool]:
    """Jamba's mixture-of-experts layers: layer i when ``i % expert_layer_period ==
    expert_layer_offset`` (``JambaConfig``'s defaults 2 and 1)."""
    period = _int(cfg, "expert_layer_period", required=False, default=2)
    offset = _int(cfg, "expert_layer_offset", lo=0, required=False, default=1)
    if offset >= period:
        raise ValueError(f"config.json field 'expert_layer_offset' ({offset}) must be less "
                         f"than 'expert_layer_period' ({period})")
    return [i % period == offset for i in range(s.layers)]


def _count_jamba(cfg, s) -> dict[str, int]:
    """Jamba (transformers' ``JambaForCausalLM``): two RMSNorms a layer (``input_layernorm``,
    ``pre_ff_layernorm``), a mixer and an MLP.

    Mamba-1 mixer (``JambaMambaMixer``; Gu and Dao, arXiv:2312.00752), with I =
    ``mamba_expand`` · h inner channels, N = ``mamba_d_state``, K = ``mamba_d_conv`` and
    R = ``mamba_dt_rank`` ("auto": ⌈h/16⌉): ``in_proj`` h → 2·I, a depthwise convolution
    (I·K weights, I biases when ``mamba_conv_bias``), ``x_proj`` I → R + 2·N, ``dt_proj``
    R → I with a bias, ``A_log`` (I·N), ``D`` (I), ``out_proj`` I → h (``in_proj`` and
    ``out_proj`` biased when ``mamba_proj_bias``) and Jamba's RMSNorms of dt, B and C
    (R + 2·N). Attention: q, k, v, o without bias. MLP: gate, up and down of
    ``intermediate_size``; the layers i with ``i % expert_layer_period == expert_layer_offset``
    hold ``num_experts`` such experts and a router of E × h weights instead.
    """
    h = s.hidden
    inner = _int(cfg, "mamba_expand", required=False, default=2) * h
    size = _int(cfg, "mamba_d_state")
    kernel = _int(cfg, "mamba_d_conv", required=False, default=4)
    rank = _jamba_dt_rank(cfg, h)
    bias = _flag(cfg, "mamba_proj_bias")
    mamba = (h * 2 * inner + inner * kernel + (inner if _flag(cfg, "mamba_conv_bias", True)
                                               else 0)
             + inner * (rank + 2 * size) + rank * inner + inner + inner * size + inner
             + inner * h + ((2 * inner + h) if bias else 0) + rank + 2 * size)
    if s.intermediate is None:
        raise ValueError("config.json field 'intermediate_size' is missing")
    moe = _moe_layers(cfg, s)
    n_moe = sum(moe)
    return {"attention": (s.attention_layers * _plain_attention(cfg, s)
                          + s.mamba_layers * mamba),
            "mlp": (s.layers - n_moe) * _gated_mlp(h, s.intermediate),
            "experts": n_moe * s.n_experts * _gated_mlp(h, s.moe_intermediate or 0),
            "router": n_moe * s.n_experts * h, "norms": 2 * s.layers * h + h}


def _count_granite_hybrid(cfg, s) -> dict[str, int]:
    """Granite-4.0-H (transformers' ``GraniteMoeHybrid``): two RMSNorms a layer, a mixer
    (``layer_types``: Mamba-2 or attention) and the MLP block.

    Mamba-2 mixer: ``BambaMixer`` (see :func:`_mamba2_mixer`; gated norm always, ``in_proj``
    and ``out_proj`` biased when ``mamba_proj_bias``, the convolution when
    ``mamba_conv_bias``), I = H · ``mamba_d_head`` channels, which ``BambaConfig`` requires to
    equal ``mamba_expand`` · h. Attention: q, k, v, o (biased when ``attention_bias``). MLP:
    ``shared_mlp`` in every layer, a gated MLP of ``shared_intermediate_size`` (``input_linear``
    h → 2·width, ``output_linear`` width → h, no bias); with ``num_local_experts`` > 0 every
    layer adds ``block_sparse_moe``: E experts of ``intermediate_size`` (the same three
    matrices) and a router of E × h weights. Without experts the shared MLP is the dense MLP
    (``mlp``), with them a shared expert every token runs (``shared_experts``). The embedding
    table is tied to the LM head (``tie_word_embeddings``).
    """
    h = s.hidden
    heads, head_dim, size, groups, kernel = _mamba2_shape(cfg)
    inner = heads * head_dim
    expand = _int(cfg, "mamba_expand", required=False, default=2)
    if s.mamba_layers and inner != expand * h:
        raise ValueError(f"config.json fields 'mamba_n_heads' ({heads}) × 'mamba_d_head' "
                         f"({head_dim}) = {inner:,} must equal 'mamba_expand' ({expand}) × "
                         f"'hidden_size' ({h:,}), the Mamba-2 mixer's inner width")
    bias = _flag(cfg, "mamba_proj_bias")
    mamba = _mamba2_mixer(h, inner, heads, groups, size, kernel,
                          conv_bias=_flag(cfg, "mamba_conv_bias", True), in_bias=bias,
                          out_bias=bias)
    shared = _gated_mlp(h, _int(cfg, "shared_intermediate_size"))
    # transformers builds block_sparse_moe for any num_local_experts > 0, one expert included
    n_experts = _int(cfg, "num_local_experts", lo=0, required=False, default=0)
    moe = n_experts > 0
    width = s.moe_intermediate if s.n_experts > 1 else s.intermediate
    if moe and width is None:
        raise ValueError("config.json field 'intermediate_size' is missing")
    mixing = s.attention_layers * _plain_attention(cfg, s) + s.mamba_layers * mamba
    return {"attention": mixing, "mlp": 0 if moe else s.layers * shared,
            "experts": s.layers * n_experts * _gated_mlp(h, width) if moe else 0,
            "shared_experts": s.layers * shared if moe else 0,
            "router": s.layers * n_experts * h if moe else 0, "norms": 2 * s.layers * h + h}


def _falcon_h1_inner(cfg, heads: int, head_dim: int) -> int:
    """Falcon-H1's Mamba-2 inner width: ``mamba_d_ssm``, which ``FalconH1Config`` requires to
    equal ``mamba_n_heads`` · ``mamba_d_head``; a config that leaves it out takes that product."""
    inner = heads * head_dim
    d_ssm = _int(cfg, "mamba_d_ssm", required=False, default=inner)
    if d_ssm != inner:
        raise ValueError(f"config.json field 'mamba_d_ssm' ({d_ssm:,}) must equal "
                         f"'mamba_n_heads' ({heads}) × 'mamba_d_head' ({head_dim}) = {inner:,}")
    return inner


def _count_falcon_h1(cfg, s) -> dict[str, int]:
    """Falcon-H1 (transformers' ``FalconH1``): in every layer a Mamba-2 mixer beside attention,
    both reading one ``input_layernorm``, then ``pre_ff_layernorm`` and a gated MLP.

    Mamba-2 mixer (``FalconH1Mixer``, see :func:`_mamba2_mixer`): I = ``mamba_d_ssm`` channels,
    ``in_proj`` biased when ``mamba_proj_bias``, ``out_proj`` when ``projectors_bias``, the
    convolution when ``mamba_conv_bias``, the gated RMSNorm only when ``mamba_rms_norm``.
    Attention: q, k, v, o (biased when ``attention_bias``). MLP: gate, up, down of
    ``intermediate_size`` (biased when ``mlp_bias``). The muP multipliers (``*_multiplier``,
    ``ssm_multipliers``, ``mlp_multipliers``) scale activations and a buffer, not weights: they
    add no parameters.
    """
    h = s.hidden
    heads, head_dim, size, groups, kernel = _mamba2_shape(cfg)
    inner = _falcon_h1_inner(cfg, heads, head_dim)
    mamba = _mamba2_mixer(h, inner, heads, groups, size, kernel,
                          conv_bias=_flag(cfg, "mamba_conv_bias", True),
                          in_bias=_flag(cfg, "mamba_proj_bias"),
                          out_bias=_flag(cfg, "projectors_bias"),
                          gated_norm=_flag(cfg, "mamba_rms_norm"))
    if s.intermediate is None:
        raise ValueError("config.json field 'intermediate_size' is missing")
    return {"attention": s.layers * (_plain_attention(cfg, s) + mamba),
            "mlp": s.layers * _gated_mlp(h, s.intermediate, _flag(cfg, "mlp_bias")),
            "norms": 2 * s.layers * h + h}


#: Mamba hybrids with a counter of their own: model_type → counter.
_MAMBA_HYBRID_COUNTS = {"jamba": _count_jamba, "granitemoehybrid": _count_granite_hybrid,
                        "falcon_h1": _count_falcon_h1}


def _sub_config(cfg: Mapping, key: str, defaults: Mapping) -> dict | None:
    sub = cfg.get(key)
    if sub is None:
        return None
    if not isinstance(sub, Mapping):
        raise TypeError(f"config.json field {key!r} must be an object; got {describe(sub)}")
    kind = str(sub.get("model_type") or "").lower()
    return {**defaults.get(kind, {}), **sub}


def _count_vision(cfg: Mapping, text_hidden: int) -> int:
    """A ViT encoder (SigLIP, CLIP) and the projector into the language model's width."""
    v = _sub_config(cfg, "vision_config", _VISION_DEFAULTS)
    if v is None:
        return 0
    where = "vision_config"
    at = where + "."
    if v.get("depth") is not None:             # Qwen-VL's layout: depth, num_heads, ...
        return _count_qwen_vision(v, text_hidden)
    if str(v.get("model_type") or "").lower() == "gemma4_vision":
        return _count_gemma4_vision(v, text_hidden)
    if v.get("vt_hidden_size") is not None:    # Kimi's MoonViT: vt_hidden_size, vt_*, mm_*
        return _count_moonvit(v, text_hidden)
    h = _int(v, "hidden_size", at=at)
    inner = _int(v, "intermediate_size", at=at)
    layers = _int(v, "num_hidden_layers", at=at)
    channels = _int(v, "num_channels", required=False, default=3, at=at)
    patch = _int(v, "patch_size", at=at)
    side = _int(v, "image_size", at=at)
    if side % patch:
        raise ValueError(f"config.json field '{where}.image_size' ({side}) must be a multiple of "
                         f"'{where}.patch_size' ({patch})")
    clip = str(v.get("model_type") or "").lower() == "clip_vision_model"
    positions = (side // patch) ** 2 + (1 if clip else 0)          # CLIP adds a class token
    n = channels * patch * patch * h + (0 if clip else h)          # patch embedding (conv)
    n += positions * h + (h if clip else 0)                        # positions (+ class token)
    per_layer = 4 * (h * h + h) + 2 * h * inner + inner + h + 2 * 2 * h
    n += layers * per_layer
    n += 2 * h * (2 if clip else 1)                     # post-LayerNorm (CLIP: and pre-)
    if not clip and _flag(v, "vision_use_head", at=at):
        n += h + 4 * (h * h + h) + 2 * h + 2 * h * inner + inner + h   # SigLIP's pooling head
    kind = str(cfg.get("multimodal_model_type") or cfg.get("model_type") or "").lower()
    if kind == "gemma3":
        n += h * text_hidden + h                        # input projection and its RMSNorm
    else:
        # LLaVA's projector: Linear(vision, text) - GELU - Linear(text, text), with biases
        n += h * text_hidden + text_hidden + text_hidden * text_hidden + text_hidden
    return n


def _count_qwen_vision(v: Mapping, text_hidden: int) -> int:
    """The vision encoder of Qwen3-VL and Qwen3.5 (transformers' ``Qwen3VLVisionModel``).

    A biased Conv3d patch embedding (``in_channels · temporal_patch_size · patch_size²`` inputs
    a channel), ``num_position_embeddings`` learned positions, ``depth`` blocks of two
    LayerNorms, a biased fused qkv and output projection and a biased two-matrix MLP, then the
    patch merger (a LayerNorm of the width, and two biased matrices from the
    ``spatial_merge_size²`` merged patches to ``out_hidden_size``) and one more merger per
    ``deepstack_visual_indexes`` entry (its LayerNorm after the merge). Qwen2-VL's and
    Qwen2.5-VL's encoders (no learned positions) are refused, not counted as this one.
    """
    at = "vision_config."
    if v.get("num_position_embeddings") is None:
        raise ValueError("config.json field 'vision_config.num_position_embeddings' is missing: "
                         "a vision_config of 'depth' blocks is counted as Qwen3-VL's encoder "
                         "(learned positions); Qwen2-VL's and Qwen2.5-VL's are not supported")
    h = _int(v, "hidden_size", at=at)
    inner = _int(v, "intermediate_size", at=at)
    depth = _int(v, "depth", at=at, hi=MAX_LAYERS)
    patch = _int(v, "patch_size", at=at)
    frames = _int(v, "temporal_patch_size", required=False, default=2, at=at)
    channels = _int(v, "in_channels", required=False, default=3, at=at)
    positions = _int(v, "num_position_embeddings", at=at)
    merge = _int(v, "spatial_merge_size", required=False, default=2, at=at)
    out = _int(v, "out_hidden_size", required=False, default=text_hidden, at=at)
    stacked = v.get("deepstack_visual_indexes") or []
    name = "config.json field 'vision_config.deepstack_visual_indexes'"
    if not isinstance(stacked, (list, tuple)):
        raise TypeError(f"{name} must be a list of block indices; got {describe(stacked)}")
    for i, index in enumerate(stacked):
        if whole_number(f"{name} (entry {i})", index, 0) >= depth:
            raise ValueError(f"{name} holds block {index}; the encoder has {depth} "
                             f"(vision_config.depth)")
    n = channels * frames * patch * patch * h + h + positions * h
    n += depth * (2 * 2 * h + 3 * h * h + 3 * h + h * h + h + 2 * h * inner + inner + h)
    merged = h * merge * merge

    def merger(norm_width):
        return 2 * norm_width + merged * merged + merged + merged * out + out

    return n + merger(h) + len(stacked) * merger(merged)


def _count_gemma4_vision(v: Mapping, text_hidden: int) -> int:
    """Gemma 4's vision encoder (transformers' ``Gemma4VisionModel``) and ``embed_vision``.

    A bias-free patch projection (3 · ``patch_size``² → h), a table of
    2 × ``position_embedding_size`` × h positions (x and y), layers of bias-free q, k, v, o
    with per-head q and k RMSNorms, a gated MLP and four RMSNorms, then the projection into the
    language model's width (its RMSNorm has no weight).
    """
    at = "vision_config."
    h = _int(v, "hidden_size", at=at)
    inner = _int(v, "intermediate_size", at=at)
    layers = _int(v, "num_hidden_layers", at=at, hi=MAX_LAYERS)
    heads = _int(v, "num_attention_heads", at=at)
    kv = _int(v, "num_key_value_heads", required=False, default=heads, at=at)
    d = _int(v, "head_dim", required=False, at=at)
    if d is None:
        if h % heads:
            raise ValueError(f"config.json field 'vision_config.hidden_size' ({h}) must be "
                             f"divisible by 'vision_config.num_attention_heads' ({heads}) when "
                             f"'vision_config.head_dim' is absent")
        d = h // heads
    patch = _int(v, "patch_size", at=at)
    positions = _int(v, "position_embedding_size", at=at)
    n = 3 * patch * patch * h + 2 * positions * h
    n += layers * (h * (heads + 2 * kv) * d + heads * d * h + 2 * d + 3 * h * inner + 4 * h)
    return n + h * text_hidden


def _count_moonvit(v: Mapping, text_hidden: int) -> int:
    """Kimi-K2.5's MoonViT encoder and patch-merger projector (vLLM's ``MoonViT3dPretrainedModel``
    and ``KimiK25MultiModalProjector``).

    A Conv2d patch embedding (3 · ``patch_size``² inputs, biased unless
    ``patch_embed_proj_bias`` is false), a learned ``init_pos_emb_height`` ×
    ``init_pos_emb_width`` position table (the temporal one is a fixed sine table, no weight),
    ``vt_num_hidden_layers`` blocks of two norms (LayerNorm, or RMSNorm for ``norm_type``
    rmsnorm), fused qkv (h → 3 · ``qkv_hidden_size``) and output projections (biased unless
    ``attn_bias`` is false) and a two-matrix MLP (biased unless ``linear_bias`` is false), a
    final norm; then the projector over ``merge_kernel_size`` merged patches: ``patchmerger``
    (a LayerNorm of the width and two biased matrices to the text width) or ``patchmergerv2``
    (two bias-free matrices and an RMSNorm of the text width).
    """
    at = "vision_config."
    h = _int(v, "vt_hidden_size", at=at)
    inner = _int(v, "vt_intermediate_size", at=at)
    layers = _int(v, "vt_num_hidden_layers", at=at, hi=MAX_LAYERS)
    qkv = _int(v, "qkv_hidden_size", required=False, default=h, at=at)
    patch = _int(v, "patch_size", at=at)
    table = (_int(v, "init_pos_emb_height", at=at) * _int(v, "init_pos_emb_width", at=at))
    out = _int(v, "text_hidden_size", required=False, default=text_hidden, at=at)
    for field, allowed in (("pos_emb_type", ("divided_fixed",)), ("mlp_type", ("mlp2",)),
                           ("norm_type", ("layernorm", "rmsnorm")),
                           ("mm_projector_type", ("patchmerger", "patchmergerv2"))):
        if v.get(field) is not None:
            check_one_of(f"config.json field '{at}{field}'", v[field], allowed)
    kernel = v.get("merge_kernel_size", [2, 2])
    if not isinstance(kernel, (list, tuple)) or len(kernel) != 2:
        raise ValueError(f"config.json field '{at}merge_kernel_size' must be two whole numbers; "
                         f"got {show(kernel)}")
    merged = h
    for k in kernel:
        merged *= whole_number(f"config.json field '{at}merge_kernel_size'", k, 1)
    norm = h if v.get("norm_type") == "rmsnorm" else 2 * h      # RMSNorm: weight; LayerNorm: +bias
    attn_bias, mlp_bias = _flag(v, "attn_bias", True, at=at), _flag(v, "linear_bias", True, at=at)
    n = 3 * patch * patch * h + (h if _flag(v, "patch_embed_proj_bias", True, at=at) else 0)
    n += table * h
    n += layers * (2 * norm + h * 3 * qkv + qkv * h + ((3 * qkv + h) if attn_bias else 0)
                   + 2 * h * inner + ((inner + h) if mlp_bias else 0))
    n += norm
    if v.get("mm_projector_type") == "patchmergerv2":
        return n + merged * merged + merged * out + out
    return n + 2 * h + merged * merged + merged + merged * out + out


def _count_audio(cfg: Mapping, text_hidden: int) -> int:
    """A Whisper-style audio encoder and its linear projector into the language model's width."""
    a = _sub_config(cfg, "audio_config", {})
    if a is None:
        return 0
    at = "audio_config."
    d = _int(a, "d_model", at=at)
    ffn = _int(a, "encoder_ffn_dim", at=at)
    layers = _int(a, "encoder_layers", at=at)
    mels = _int(a, "num_mel_bins", at=at)
    positions = _int(a, "max_source_positions", at=at)
    n = mels * d * 3 + d + d * d * 3 + d                # two 3-wide convolutions
    n += positions * d
    # q, v, out with bias and k without; fc1, fc2; two LayerNorms
    n += layers * (4 * d * d + 3 * d + 2 * d * ffn + ffn + d + 2 * 2 * d)
    n += 2 * d                                          # final LayerNorm
    n += d * text_hidden + text_hidden                  # projector
    return n


def _count_gpt_style(cfg, s, q_width, kv_width):
    h, L, inner = s.hidden, s.layers, s.intermediate
    out = {}
    if s.model_type == "falcon":
        attn_bias = mlp_bias = _flag(cfg, "bias")
        if _flag(cfg, "new_decoder_architecture"):
            n_ln = 2                                    # ln_attn and ln_mlp
        else:
            n_ln = 1 if _flag(cfg, "parallel_attn", True) else 2
    elif s.model_type in ("gptj", "phi"):
        # one LayerNorm feeds attention and MLP in parallel; the untied LM head has a bias.
        # GPT-J's q/k/v/out projections carry no bias, Phi's do.
        attn_bias, mlp_bias, n_ln = s.model_type == "phi", True, 1
        out["lm_head"] = 0 if _tied(cfg, s) else s.vocab * h + s.vocab
    else:
        attn_bias = mlp_bias = True
        n_ln = 2
    attn = h * (q_width + 2 * kv_width) + q_width * h
    attn += (q_width + 2 * kv_width + h) if attn_bias else 0
    if s.model_type == "phi" and _flag(cfg, "qk_layernorm"):
        attn += 2 * 2 * s.head_dim                      # LayerNorm (weight, bias) on q and k
    mlp = 2 * h * inner + ((inner + h) if mlp_bias else 0)
    embedding = s.vocab * h
    if s.model_type in ("gpt2", "gpt_bigcode"):     # learned absolute positions
        embedding += _int(cfg, "max_position_embeddings") * h
    return {**out, "embedding": embedding, "attention": L * attn, "mlp": L * mlp,
            "norms": (L * n_ln + 1) * 2 * h}


def _indexer_shape(cfg: Mapping):
    """(heads, head_dim) of DeepSeek-V3.2's sparse-attention indexer, or None without one."""
    if cfg.get("index_n_heads") is None and cfg.get("index_head_dim") is None:
        return None
    return _int(cfg, "index_n_heads"), _int(cfg, "index_head_dim")


#: Key elements per FP32 scale in the indexer's FP8 key cache (vLLM's and SGLang's
#: ``quant_block_size``; DeepSeek's reference ``block_size``).
INDEXER_QUANT_BLOCK = 128


def indexer_key_bytes(index_head_dim: int) -> float:
    """Bytes one token adds to one layer's sparse-attention indexer key cache [bytes].

    Parameters
    ----------
    index_head_dim : int
        The indexer's key width, ``index_head_dim`` [elements], a multiple of
        :data:`INDEXER_QUANT_BLOCK`.

    Returns
    -------
    float
        ``d + 4 · d / 128``: the key in FP8 (one byte an element) and one FP32 scale per
        block of 128 elements; 132 B for DeepSeek-V3.2's ``index_head_dim`` of 128.

    Raises
    ------
    ValueError
        If ``index_head_dim`` is not a positive multiple of 128.

    Notes
    -----
    DeepSeek-V3.2's indexer keeps one key per token and layer beside the MLA latent, whatever
    the latent's format: vLLM (``DeepseekV32IndexerCache``, ``head_dim + head_dim //
    quant_block_size * 4`` bytes of ``uint8``), SGLang (``NSATokenToKVPool``) and DeepSeek's
    reference code (``k_cache`` in ``float8_e4m3fn`` and ``k_scale_cache`` in ``float32``) store
    it so. Beside a bf16 latent of ``(512 + 64) · 2 = 1152`` bytes it adds 11.5 %.

    References
    ----------
    .. [1] DeepSeek-AI, "DeepSeek-V3.2: Pushing the Frontier of Open Large Language Models"
       (DeepSeek Sparse Attention, the lightning indexer), 2025.
    """
    d = whole_number("index_head_dim", index_head_dim, 1)
    if d % INDEXER_QUANT_BLOCK:
        raise ValueError(f"index_head_dim must be a multiple of {INDEXER_QUANT_BLOCK} (one FP32 "
                         f"scale per {INDEXER_QUANT_BLOCK} FP8 values); got {show(d)}")
    return float(d + 4 * d // INDEXER_QUANT_BLOCK)


def _count_indexer(cfg: Mapping, s: "_Shape") -> int:
    """DeepSeek-V3.2's lightning indexer, per layer (DeepSeek's reference ``Indexer``):
    ``wq_b`` (q_lora_rank → heads · d), ``wk`` (h → d), a LayerNorm of d (weight and bias)
    and ``weights_proj`` (h → heads), all without bias."""
    shape = _indexer_shape(cfg)
    if shape is None:
        return 0
    heads, dim = shape
    q_in = s.mla["q_lora_rank"] or s.hidden
    return q_in * heads * dim + s.hidden * dim + 2 * dim + s.hidden * heads


def _count_per_kind_attention(cfg, s) -> int:
    """Attention of layers whose kinds have KV heads and head dims of their own (MiMo-V2-Flash,
    its modelling code's ``MiMoV2FlashAttention``): q (h → H·d_k), k (h → H_kv·d_k), v
    (h → H_kv·d_v), with biases when ``attention_bias``, o (H·d_v → h) without, and one
    attention-sink logit a query head where ``add_full_attention_sink_bias`` /
    ``add_swa_attention_sink_bias`` give the layer kind one."""
    h, heads, bias = s.hidden, s.heads, _flag(cfg, "attention_bias")
    total = 0
    for (layers, kv, key, value), sink in zip(
            s.attention_kinds, ("add_full_attention_sink_bias", "add_swa_attention_sink_bias")):
        widths = heads * key + kv * key + kv * value
        per_layer = h * widths + heads * value * h + (widths if bias else 0)
        total += layers * (per_layer + (heads if _flag(cfg, sink) else 0))
    return total


def _count_block_configs(cfg, s, q_width, kv_width) -> dict[str, int]:
    """DeciLM (Llama-3.3-Nemotron-Super): Llama's layers, each with its own KV grouping or no
    attention and its own MLP width or none (:func:`_block_configs`); a layer's input norm goes
    with its attention, its post-attention norm with its MLP."""
    h = s.hidden
    attention = h * (q_width + 2 * kv_width) + q_width * h
    if _flag(cfg, "attention_bias"):
        attention += q_width + 2 * kv_width + h
    mlp_bias = _flag(cfg, "mlp_bias")
    n_attention = sum(group is not None for group, _ in s.blocks)
    widths = [width for _, width in s.blocks if width is not None]
    return {"attention": n_attention * attention,
            "mlp": sum(3 * h * w + ((2 * w + h) if mlp_bias else 0) for w in widths),
            "norms": (n_attention + len(widths)) * h + h}


def _count_gemma4(cfg, s) -> dict[str, int]:
    """Gemma 4's language model (transformers' ``Gemma4TextDecoderLayer``).

    Attention: q, k, v (none in a full layer with ``attention_k_eq_v``), o, biased when
    ``attention_bias``, and per-head q and k RMSNorms (the v norm has no weight), at each
    layer kind's KV heads and head dim. A gated MLP of ``intermediate_size`` in every layer;
    with ``enable_moe_block`` beside it ``num_experts`` experts (gate, up, down of
    ``moe_intermediate_size``), a router (E × h, a scale of h and one of E) and three more
    RMSNorms. Four RMSNorms a layer, a final one.
    """
    h, heads, bias = s.hidden, s.heads, _flag(cfg, "attention_bias")
    k_eq_v = _flag(cfg, "attention_k_eq_v")
    attention = 0
    for kind, (layers, kv, key, _) in zip(("full", "sliding"), s.attention_kinds):
        widths = heads * key + kv * key * (1 if kind == "full" and k_eq_v else 2)
        attention += layers * (h * widths + heads * key * h + 2 * key
                               + ((widths + h) if bias else 0))
    if s.intermediate is None:
        raise ValueError("config.json field 'intermediate_size' is missing")
    moe = s.n_experts > 1
    experts = s.n_experts * 3 * h * s.moe_intermediate if moe else 0
    router = s.n_experts * h + h + s.n_experts if moe else 0
    return {"attention": attention, "mlp": s.layers * 3 * h * s.intermediate,
            "experts": s.layers * experts, "router": s.layers * router,
            "norms": s.layers * (7 if moe else 4) * h + h}


def _count_llama_style(cfg, s, q_width, kv_width):
    h, L = s.hidden, s.layers
    if s.mla is not None:
        m = s.mla
        qk = m["qk_nope_head_dim"] + m["qk_rope_head_dim"]
        if m["q_lora_rank"]:
            q = h * m["q_lora_rank"] + m["q_lora_rank"] + m["q_lora_rank"] * s.heads * qk
        else:
            q = h * s.heads * qk
        kv = (h * (m["kv_lora_rank"] + m["qk_rope_head_dim"]) + m["kv_lora_rank"]
              + m["kv_lora_rank"] * s.heads * (m["qk_nope_head_dim"] + m["v_head_dim"]))
        attn = q + kv + s.heads * m["v_head_dim"] * h + _count_indexer(cfg, s)
    elif s.v_head_dim is not None or s.swa is not None:
        attn = None                                # each kind's own: counted whole below
    else:
        attn = h * (q_width + 2 * kv_width) + q_width * h
        if s.model_type == "glm4_moe":
            # GLM-4.5 (Glm4MoeAttention): attention_bias biases q, k and v, never o_proj;
            # use_qk_norm adds per-head q and k RMSNorms
            if _flag(cfg, "attention_bias"):
                attn += q_width + 2 * kv_width
            if _flag(cfg, "use_qk_norm"):
                attn += 2 * s.head_dim
        elif _flag(cfg, "attention_bias"):
            attn += q_width + 2 * kv_width + h
        elif s.model_type in ("qwen2", "qwen2_moe"):
            attn += q_width + 2 * kv_width                      # Qwen2: q, k, v biases
        if s.model_type in ("qwen3", "qwen3_moe", "gemma3", "gemma3_text", "qwen3_vl_text",
                            "qwen3_vl_moe_text"):
            attn += 2 * s.head_dim                              # per-head q and k RMSNorm
        if s.model_type == "gpt_oss":
            attn += s.heads                                     # one attention sink a head
    n_norms = 4 if s.model_type.startswith(("gemma2", "gemma3")) else 2
    mlp_bias = _flag(cfg, "mlp_bias")
    moe = _moe_layers(cfg, s)
    n_moe = sum(moe)
    llama4 = s.model_type == "llama4_text"
    dense_mlp = 0
    if n_moe < L:
        # Llama 4's dense layers are intermediate_size_mlp wide (its experts intermediate_size)
        width = (_int(cfg, "intermediate_size_mlp", required=False, default=s.intermediate)
                 if llama4 else s.intermediate)
        if width is None:
            raise ValueError("config.json field 'intermediate_size' is missing")
        dense_mlp = 3 * h * width + ((2 * width + h) if mlp_bias else 0)
    experts = shared = router = 0
    if n_moe:
        experts = s.n_experts * 3 * h * s.moe_intermediate
        router = s.n_experts * h
        if cfg.get("topk_method") == "noaux_tc" or s.model_type == "glm4_moe":
            # DeepSeek-V3's e_score_correction_bias; GLM-4.5's router always has one and its
            # config.json names no topk_method
            router += s.n_experts
        if s.model_type == "gpt_oss":             # biased router and experts
            router += s.n_experts
            experts += s.n_experts * (2 * s.moe_intermediate + h)
        # Llama 4: one shared expert of the experts' width in every MoE layer
        n_shared = 1 if llama4 else _int(cfg, "n_shared_experts", lo=0, required=False,
                                         default=0)
        shared = n_shared * 3 * h * s.moe_intermediate
        shared_size = _int(cfg, "shared_expert_intermediate_size", lo=0, required=False,
                           default=0)
        if shared_size:                           # Qwen2-MoE: one wide shared expert + its gate
            shared += 3 * h * shared_size + h
    attention = _count_per_kind_attention(cfg, s) if attn is None else L * attn
    return {"attention": attention, "mlp": (L - n_moe) * dense_mlp, "experts": n_moe * experts,
            "shared_experts": n_moe * shared, "router": n_moe * router,
            "norms": L * n_norms * h + h}


# -- ModelShape fields -----------------------------------------------------------------------------
def shape_fields(config, *, name: str | None = None, **overrides) -> dict:
    """The :class:`~rooflinekit.models.ModelShape` fields a Hugging Face ``config.json`` gives.

    Parameters
    ----------
    config : str, os.PathLike or Mapping
        Path to ``config.json``, a model folder, a repo id in the local Hugging Face cache
        (:func:`find_config`), or the parsed contents.
    name : str, optional
        Label of the model; default the repo id when one was given, else the config's
        ``_name_or_path``, else its ``model_type``.
    **overrides
        Any :class:`ModelShape` field, applied last (``n_params=70e9``,
        ``kv_bytes_per_element="fp8"``, ``source=...``); a ``state_bytes_per_sequence``
        without ``ssm_state_bytes_per_sequence`` leaves its recurrent part unknown (0).

    Returns
    -------
    dict
        Field name -> value, ready for ``ModelShape(**fields)`` (which validates them), with
        ``n_params``/``n_active_params`` from :func:`count_params` unless overridden (an MoE
        model given ``n_params`` alone still takes its active count from the shapes).

    Notes
    -----
    Fields read (older spellings such as ``n_layer``, ``n_head``, ``n_embd`` are accepted):

    - ``num_hidden_layers``, ``num_attention_heads``, ``hidden_size`` (required);
      ``num_key_value_heads`` (absent: MHA; Falcon's ``multi_query: true``: one KV head);
      ``head_dim`` when present, else ``hidden_size // num_attention_heads``.
    - MLA: ``kv_lora_rank``, ``qk_rope_head_dim`` (what is cached), ``q_lora_rank``,
      ``qk_nope_head_dim``, ``v_head_dim`` (counting); ``head_dim`` is then
      ``qk_nope_head_dim + qk_rope_head_dim``.
    - MoE: ``num_local_experts`` / ``n_routed_experts`` / ``num_experts``,
      ``num_experts_per_tok``, ``moe_intermediate_size`` (reported as ``intermediate_size``),
      ``n_shared_experts``, ``shared_expert_intermediate_size``, ``first_k_dense_replace``.
    - Sliding window: ``sliding_window`` (null: none) applies to every layer unless
      ``layer_types`` lists the layers, Qwen2's ``use_sliding_window``/``max_window_layers`` say
      otherwise, the model is Gemma-2 (every other layer) or ``sliding_window_pattern`` makes every
      n-th layer global (Gemma-3).
    - ``torch_dtype``/``dtype`` and ``quantization_config`` give the weight format; the KV cache
      is taken to be 16-bit (the compute format, bf16 for fp32 checkpoints). Quantized
      checkpoints (``quant_method`` fp8 with or without ``weight_block_size``, fbgemm_fp8,
      mxfp4, gptq/awq with ``group_size``, bitsandbytes, compressed-tensors ``config_groups``,
      modelopt NVFP4/FP8 and MIXED_PRECISION (each module's format in ``quantized_layers``; a
      ``quantization_config`` with ``quant_algo`` and no ``quant_method`` is ModelOpt's), exl2, and any method stating ``bits``; ModelOpt's
      ``hf_quant_config.json`` beside the file too) set ``bytes_per_param`` to the quantized
      values' format and give the body, the routed experts and the embedding table with the LM
      head each their bytes per parameter, scales and zero points included: modules left
      unconverted (``modules_to_not_convert``, ``ignore``, ``exclude_modules``, matched as
      names, globs or ``re:`` expressions, layer by layer), routers, norms, biases, the embedding
      table and (unless quantized explicitly) the LM head stay in the 16-bit format. Module
      names are matched in Hugging Face's Llama-style naming (``model.layers.N.self_attn``,
      ``.mlp``, ``.mlp.experts``, ``.mlp.shared_experts``, ``lm_head``; a multimodal model's
      under ``model.language_model.``, Gated DeltaNet layers' ``.linear_attn``). An unknown
      ``quant_method`` is refused: ``bytes_per_param=`` gives the format instead.
    - ``max_position_embeddings``, ``tie_word_embeddings``, ``vocab_size``,
      ``intermediate_size``.
    - Chunked local attention (Llama 4): ``attention_chunk_size`` with ``no_rope_layers`` (1:
      a chunked layer) or else ``no_rope_layer_interval`` (default 4: every 4th layer attends
      to the whole context), or ``layer_types`` ``chunked_attention``; the chunked layers are
      the windowed ones (``sliding_window`` = the chunk, ``attention_chunk_size`` set).
      MoE layers: ``moe_layers`` (indices), ``moe_layer_freq`` (a period, or 0/1 a layer),
      ``interleave_moe_layer_step``/``decoder_sparse_step``, ``first_k_dense_replace``,
      ``mlp_only_layers``; Llama 4's dense layers are ``intermediate_size_mlp`` wide.
    - Sliding-window and full layers with KV layouts of their own (MiMo-V2-Flash):
      ``hybrid_layer_pattern`` (one 0/1 a layer, 1: sliding-window attention),
      ``swa_num_key_value_heads``, ``swa_head_dim``, ``swa_v_head_dim`` (the sliding layers'
      ``sliding_n_kv_heads``, ``sliding_head_dim``, ``sliding_v_head_dim``; absent: the full
      layers'), ``v_head_dim`` without MLA (the value head dimension when it is not
      ``head_dim``); ``swa_num_attention_heads`` must equal ``num_attention_heads``. Gemma 4
      the same way: its full layers' ``global_head_dim`` and (``attention_k_eq_v``)
      ``num_global_key_value_heads``, its sliding ones' ``head_dim`` and
      ``num_key_value_heads``; its experts (``enable_moe_block``, ``top_k_experts``) run beside
      the MLP.
    - DeepSeek-V3.2's sparse-attention indexer (``index_n_heads``, ``index_head_dim``,
      ``index_topk``): its FP8 key cache with FP32 scales (:func:`indexer_key_bytes`) goes
      into ``indexer_bytes_per_token_per_layer``, ``index_topk`` into ``index_topk``.
    - Hybrid layers: ``layer_types`` (``full_attention``, ``sliding_attention``,
      ``attention``, ``linear_attention``, ``mamba``), ``hybrid_override_pattern``
      (Nemotron-H: ``M`` Mamba, ``*`` attention, ``-`` MLP, ``E`` MoE; one character a layer),
      ``layers_block_type`` (Nemotron-H's names for the same: ``mamba``, ``attention``,
      ``mlp``, ``moe``; Nemotron 3 Super's LatentMoE experts work in ``moe_latent_size``),
      ``full_attention_interval`` (Qwen3-Next: every n-th layer is attention, the others Gated
      DeltaNet), ``attn_layer_period``/``attn_layer_offset`` (Jamba) and Falcon-H1's Mamba beside
      attention in every layer give ``n_attention_layers``, ``n_linear_attention_layers`` and
      ``n_mamba_layers``; the ``linear_*`` and Mamba fields (``mamba_num_heads``/
      ``mamba_n_heads``, ``mamba_head_dim``/``mamba_d_head``, ``ssm_state_size``/
      ``mamba_d_state``, ``n_groups``/``mamba_n_groups``, ``conv_kernel``/``mamba_d_conv``,
      ``mamba_expand``) give ``state_bytes_per_sequence``. DeciLM's ``block_configs``
      (Llama-3.3-Nemotron-Super) give each layer its attention (``n_heads_in_group``, or
      ``no_op``: an MLP-only layer) and MLP width (``ffn_mult``). An unknown kind, or a pattern whose
      length is not the layer count, is refused naming the field.

    Raises
    ------
    TypeError
        If a field has the wrong type (``num_attention_heads: "32"``) or ``config`` is neither a
        path nor a mapping.
    ValueError
        If a required field is missing, a value is out of range, the heads do not divide, or the
        file cannot be read; the message names the field.

    References
    ----------
    .. [1] Hugging Face ``transformers`` configuration classes.
    .. [2] Serving-capacity guide §2.2–2.3.
    """
    default_source = "Hugging Face config.json (dict)"
    if isinstance(config, (str, os.PathLike)):
        path = find_config(config)
        if name is None and path != os.fspath(config):
            name = os.fspath(config) if _is_repo_id(os.fspath(config)) else None
        default_source = f"config.json read from {path}"
        cfg = _flatten(_read(path))
    else:
        path, cfg = None, load_hf_config(config)
    with _naming(path):
        hf_quant = _hf_quant_config(path, cfg)
        return _fields(cfg, name, default_source, overrides, hf_quant)


def _hf_quant_config(path, cfg: Mapping):
    """ModelOpt's ``hf_quant_config.json`` beside a config.json without quantization_config.

    Returns its ``quantization`` object, or None when there is no such file (or the config has
    a quantization_config of its own, which wins).
    """
    if path is None or cfg.get("quantization_config") is not None:
        return None
    beside = os.path.join(os.path.dirname(os.fspath(path)), "hf_quant_config.json")
    if not os.path.isfile(beside):
        return None
    data = parse_json(read_regular_file(beside, "hf_quant_config.json", MAX_CONFIG_BYTES),
                      f"config: {beside!r}")
    quant = data.get("quantization") if isinstance(data, Mapping) else None
    if not isinstance(quant, Mapping):
        raise TypeError(f"{beside}: field 'quantization' must be an object; got "
                        f"{describe(quant)}")
    return quant


def _fields(cfg: Mapping, name, default_source: str, overrides: dict, hf_quant=None) -> dict:
    s = _Shape(cfg)
    weights, kv = _dtype(cfg)
    if hf_quant is not None:
        weights = _modelopt(hf_quant, "quantization.").nominal
    groups = {}
    if "bytes_per_param" not in overrides and (_quant_config(cfg) is not None
                                               or hf_quant is not None):
        # a quantized checkpoint: each group of weights in its own format, scales included
        groups = _weight_groups(cfg, s, _count(cfg), hf_quant) or {}
    aside = 0
    if "n_params" in overrides and (s.n_experts == 1 or "n_active_params" in overrides):
        n_params = overrides.pop("n_params")
        n_active = overrides.pop("n_active_params", None)
    else:
        # an MoE model given only its total still needs the active count from the shapes
        counts = _count(cfg)
        n_params = overrides.pop("n_params", counts["total"])
        n_active = overrides.pop("n_active_params", counts["active"])
        if n_params == counts["total"] and n_active == counts["active"]:
            # the encoders the count holds aside (neither active nor routed experts)
            aside = counts["vision"] + counts["audio"]
    tied = _tied(cfg, s)
    if name is None:
        name = cfg.get("_name_or_path") or s.model_type or "hf-model"
    fields = dict(
        name=name,
        n_layers=s.layers,
        n_heads=s.heads,
        n_kv_heads=s.kv_heads,
        head_dim=s.head_dim,
        n_params=n_params,
        n_active_params=n_active,
        n_aside_params=overrides.pop("n_aside_params", aside),
        bytes_per_param=weights,
        kv_bytes_per_element=kv,
        hidden_size=s.hidden,
        intermediate_size=s.moe_intermediate if s.n_experts > 1 else s.intermediate,
        vocab_size=s.vocab,
        n_experts=s.n_experts,
        n_experts_per_token=s.top_k,
        kv_lora_rank=None if s.mla is None else s.mla["kv_lora_rank"],
        qk_rope_head_dim=None if s.mla is None else s.mla["qk_rope_head_dim"],
        sliding_window=s.window,
        n_sliding_layers=s.n_sliding,
        attention_chunk_size=s.chunk,
        v_head_dim=s.v_head_dim,
        sliding_n_kv_heads=None if s.swa is None else s.swa[0],
        sliding_head_dim=None if s.swa is None else s.swa[1],
        sliding_v_head_dim=None if s.swa is None else s.swa[2],
        indexer_bytes_per_token_per_layer=(0.0 if _indexer_shape(cfg) is None
                                           else indexer_key_bytes(_indexer_shape(cfg)[1])),
        index_topk=(None if _indexer_shape(cfg) is None
                    else _int(cfg, "index_topk")),
        tie_word_embeddings=bool(tied),
        max_context=_int(cfg, "max_position_embeddings", required=False),
        source=default_source,
        **groups,
    )
    if s.is_hybrid:
        state, recurrent = _recurrent_state(cfg, s)
        fields.update(n_attention_layers=s.attention_layers,
                      n_linear_attention_layers=s.linear_layers,
                      n_mamba_layers=s.mamba_layers,
                      state_bytes_per_sequence=state,
                      ssm_state_bytes_per_sequence=recurrent,
                      ssm_state_bytes_per_element=_state_dtype_bytes(cfg))
    unknown = set(overrides) - set(fields) - {
        "body_bytes_per_param", "expert_bytes_per_param", "embedding_bytes_per_param",
        "n_attention_layers", "n_linear_attention_layers", "n_mamba_layers",
        "state_bytes_per_sequence", "ssm_state_bytes_per_sequence",
        "ssm_state_bytes_per_element"}
    if unknown:
        raise TypeError(f"unknown ModelShape field(s) in overrides: {sorted(unknown)}")
    if "state_bytes_per_sequence" in overrides and "ssm_state_bytes_per_sequence" not in overrides:
        fields["ssm_state_bytes_per_sequence"] = 0.0     # a state of one's own: split unknown
    fields.update(overrides)
    return fields
