"""Built-in catalogues of accelerators, models and prices, read from the package's data files.

``data/gpus.toml`` and ``data/models.toml`` hold one sourced row per entry; lookup by name is
case-insensitive, ignores spaces, hyphens and underscores, and an unknown name raises a
``ValueError`` listing the closest. The illustrative, dated rows of ``data/prices.toml`` are
handed out as read (:mod:`rooflinekit.pricing` builds the price objects). Every collection can
also be an :class:`xarray.Dataset` over ``model`` / ``gpu``.
"""

from __future__ import annotations

import copy
import difflib
import functools
import math
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from importlib import resources

import numpy as np
import xarray as xr

from rooflinekit import dims, units
from rooflinekit._validation import check_keys, check_string
from rooflinekit.hardware import GPU
from rooflinekit.hf_config import find_config, load_hf_config
from rooflinekit.models import ModelShape

__all__ = ["gpu", "gpu_variants", "model", "resolve_model", "gpus", "models", "to_dataset", "spec_fields",
           "gpu_names", "model_names", "price_table", "payg_row", "provisioned_row",
           "gpu_hourly_row"]


def _key(name: str) -> str:
    return re.sub(r"[\s_\-]+", "", str(name)).lower()


def _read(filename: str) -> dict:
    with resources.files("rooflinekit").joinpath("data").joinpath(filename).open("rb") as fh:
        return tomllib.load(fh)


def _sourced(row: dict, name: str, field: str, source: str):
    """Pop ``field`` and its ``source`` from a GPU row; a figure without its source is refused."""
    value = row.pop(field, None)
    if value is not None and not row.get(source):
        raise ValueError(f"gpus.toml row {name!r}: {field} needs a {source}")
    row.pop(source, None)
    return value


def _positive(name: str, field: str, value):
    """A GPU row's optional figure ``value`` of ``field``: ``None``, or a finite number > 0
    (refused otherwise with a ``ValueError`` naming the row and the field)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                              or not math.isfinite(value) or value <= 0):
        raise ValueError(f"gpus.toml row {name!r}: {field} must be a number > 0, got {value!r}")
    return value


def _host_link(row: dict, name: str) -> tuple:
    """Pop a PCIe row's shared host link (``host_link_gb_s`` [1e9 B/s]) and its peer-to-peer
    domain (``p2p_gpus``), both under one ``host_link_source``: (bytes/s or None, int or None).
    A figure without its source, a domain without the link, or a value out of range is
    refused with a ``ValueError`` naming the field."""
    link = row.pop("host_link_gb_s", None)
    p2p = row.pop("p2p_gpus", None)
    source = row.pop("host_link_source", None)
    if (link is not None or p2p is not None) and not source:
        raise ValueError(f"gpus.toml row {name!r}: host_link_gb_s and p2p_gpus need a "
                         f"host_link_source")
    if p2p is not None and link is None:
        raise ValueError(f"gpus.toml row {name!r}: p2p_gpus needs host_link_gb_s (the link "
                         f"the larger groups share)")
    if _positive(name, "host_link_gb_s", link) is not None:
        link = link * units.GB_PER_S
    if p2p is not None and (isinstance(p2p, bool) or not isinstance(p2p, int) or p2p < 1):
        raise ValueError(f"gpus.toml row {name!r}: p2p_gpus must be a whole number >= 1, "
                         f"got {p2p!r}")
    return link, p2p


def _gpu_from_row(row: Mapping, prices: Mapping[str, float]) -> GPU:
    row = dict(row)
    aliases = row.pop("aliases", [])
    name = row.pop("name")
    if ("memory_gib" in row) == ("memory_gb" in row):
        raise ValueError(f"gpus.toml row {name!r}: give exactly one of memory_gib, memory_gb")
    memory = row.pop("memory_gib", None)
    memory = memory * units.GiB if memory is not None else row.pop("memory_gb") * units.GB
    flops = {k: v * units.TFLOPS for k, v in row.pop("dense_tflops").items()}
    if "bf16" not in flops:
        raise ValueError(f"gpus.toml row {name!r}: dense_tflops needs a bf16 entry")
    link = row.pop("interconnect_gb_s", None)
    latency = row.pop("interconnect_latency_us", None)
    network = _sourced(row, name, "network_gb_s", "network_source")
    extra = {"interconnect_latency": latency * units.US} if latency is not None else {}
    power = _sourced(row, name, "board_power_w", "power_source")
    domain = _sourced(row, name, "scale_up_gpus", "scale_up_source")
    host_gpus = _sourced(row, name, "host_gpus", "host_gpus_source")
    host, p2p = _host_link(row, name)
    clock = _positive(name, "boost_clock_mhz",
                      _sourced(row, name, "boost_clock_mhz", "clock_source"))
    ring = _sourced(row, name, "ring_collectives", "ring_collectives_source")
    if ring is not None and not isinstance(ring, bool):
        raise ValueError(f"gpus.toml row {name!r}: ring_collectives must be true or false, "
                         f"got {ring!r}")
    streaming = _positive(name, "streaming_bandwidth_tb_s", _sourced(
        row, name, "streaming_bandwidth_tb_s", "streaming_bandwidth_source"))
    gemm = _positive(name, "gemm_tflops", _sourced(row, name, "gemm_tflops", "gemm_source"))
    visible = _positive(name, "visible_memory_gib", _sourced(
        row, name, "visible_memory_gib", "visible_memory_source"))
    capability = _positive(name, "compute_capability", _sourced(
        row, name, "compute_capability", "compute_capability_source"))
    row.pop("notes", None)
    return GPU(
        name=name,
        memory_bytes=memory,
        hbm_bandwidth=row.pop("hbm_bandwidth_tb_s") * units.TB_PER_S,
        streaming_bandwidth=None if streaming is None else streaming * units.TB_PER_S,
        visible_memory_bytes=None if visible is None else visible * units.GiB,
        peak_flops=flops["bf16"],
        gemm_flops=None if gemm is None else gemm * units.TFLOPS,
        peak_flops_by_dtype=flops,
        interconnect_bandwidth=None if link is None else link * units.GB_PER_S,
        network_bandwidth=None if network is None else network * units.GB_PER_S,
        # a price row may name the GPU by any of its aliases
        hourly_price=next((prices[_key(a)] for a in (name, *aliases) if _key(a) in prices), None),
        source=row.pop("source"),
        board_power=power,
        scale_up_gpus=domain,
        host_link_bandwidth=host,
        p2p_gpus=p2p,
        host_gpus=host_gpus,
        boost_clock=None if clock is None else clock * 1e6,
        ring_collectives=bool(ring),
        compute_capability=capability,
        **extra,
        **row,
    )


def _model_from_row(row: Mapping) -> ModelShape:
    row = dict(row)
    row.pop("aliases", None)
    row.pop("notes", None)
    return ModelShape(**row)


@functools.cache
def _prices() -> dict:
    try:
        return _read("prices.toml")
    except FileNotFoundError:
        return {}


def price_table() -> dict:
    """The illustrative, dated price list ``data/prices.toml`` as read (a fresh copy per call);
    the GPU rows' ``usd_per_hour`` is also each catalogue GPU's ``hourly_price``."""
    return copy.deepcopy(_prices())


def _price_row(section: str, name: str, key: str = "name") -> dict:
    """A fresh copy of the row of ``section`` whose ``key`` is ``name`` (case-insensitive)."""
    check_string("name", name, allow_empty=True)
    rows = _prices().get(section, [])
    by_name = {str(r[key]).lower(): r for r in rows}
    row = by_name.get(name.strip().lower())
    if row is None:
        check_keys("name", [name], [str(r[key]) for r in rows], what=f"{section} entry")
    return copy.deepcopy(row)


def payg_row(name: str) -> dict:
    """The pay-as-you-go row called ``name`` in ``data/prices.toml`` (illustrative, dated).

    Returns
    -------
    dict
        The row as read (a fresh copy): ``name``; prices per 1M tokens [USD] ``input_per_mtok``,
        ``output_per_mtok`` and, where quoted, ``cached_input_per_mtok`` and a long-context tier
        (``long_context_*``); ``region``, ``third_party``; its ``date`` and ``source``. An
        unknown name raises a ``ValueError`` listing the names.
    """
    return _price_row("payg", name)


def provisioned_row(name: str) -> dict:
    """The provisioned-capacity row called ``name`` in ``data/prices.toml`` (illustrative, dated).

    Returns
    -------
    dict
        The row as read (a fresh copy): its price per unit (``usd_per_unit_month`` or
        ``usd_per_unit_hour``), its capacity per unit (``capacity_tokens_per_month`` or
        ``input_tokens_per_minute``), optional ``min_units``, ``output_weight``, ``region`` and
        ``third_party``, and its ``date`` and ``source``.
    """
    return _price_row("provisioned", name)


def gpu_hourly_row(gpu: str) -> dict:
    """The GPU-hour price row for the catalogue GPU name ``gpu`` (illustrative, dated).

    Returns
    -------
    dict
        The row as read (a fresh copy): ``gpu``, ``usd_per_hour`` [USD/h], ``date`` and
        ``source``. Matched on the row's ``gpu`` exactly as written (case-insensitive), not on
        the GPU catalogue's aliases.
    """
    return _price_row("gpu_hourly", gpu, key="gpu")


@functools.cache
def _gpu_prices() -> dict[str, float]:
    return {_key(row["gpu"]): float(row["usd_per_hour"])
            for row in _prices().get("gpu_hourly", [])}


@functools.cache
def _gpu_table() -> tuple[dict[str, GPU], dict[str, str]]:
    rows = _read("gpus.toml")["gpu"]
    return _index(rows, lambda r: _gpu_from_row(r, _gpu_prices()))


@functools.cache
def _model_table() -> tuple[dict[str, ModelShape], dict[str, str]]:
    rows = _read("models.toml")["model"]
    return _index(rows, _model_from_row)


def _index(rows, build):
    entries: dict[str, object] = {}
    lookup: dict[str, str] = {}
    for row in rows:
        spec = build(row)
        if spec.name in entries:
            raise ValueError(f"duplicate catalogue name {spec.name!r}")
        entries[spec.name] = spec
        for alias in [spec.name, *row.get("aliases", [])]:
            key = _key(alias)
            if key in lookup and lookup[key] != spec.name:
                raise ValueError(f"catalogue alias {alias!r} names both {lookup[key]!r} and "
                                 f"{spec.name!r}")
            lookup[key] = spec.name
    return entries, lookup


def _find(kind: str, name, table):
    check_string(f"{kind} name", name, allow_empty=True)
    entries, lookup = table
    canonical = lookup.get(_key(name))
    if canonical is None:
        close = difflib.get_close_matches(_key(name), list(lookup), n=5, cutoff=0.4)
        names = list(dict.fromkeys(lookup[c] for c in close))
        hint = f"closest: {', '.join(names)}" if names else f"known: {', '.join(entries)}"
        raise ValueError(f"unknown {kind} {name!r}; {hint}")
    return entries[canonical]


def gpu(name: str) -> GPU:
    """The catalogue GPU called ``name`` (case-insensitive; aliases accepted)."""
    return _find("GPU", name, _gpu_table())


def gpu_variants(name: str) -> tuple[str, ...]:
    """Other catalogue GPUs of the same family (first part of the name) that an alias ``name``
    could have meant; empty for a full name (``gpu_variants("h100")`` is ("H100-PCIe-80GB",
    "H100-NVL-94GB"), which a plan names beside its answer)."""
    chosen = gpu(name).name
    if str(name).strip().lower() == chosen.lower():
        return ()
    family = chosen.split("-")[0].lower()
    return tuple(n for n in gpu_names() if n != chosen and n.split("-")[0].lower() == family)


def model(name: str) -> ModelShape:
    """The catalogue model called ``name`` (case-insensitive; aliases accepted)."""
    return _find("model", name, _model_table())


def _cached_repo_id(path) -> str | None:
    """The repo id of a file inside a Hugging Face cache snapshot
    (``models--org--name/snapshots/<revision>/config.json`` is "org/name"), else ``None``."""
    parts = os.path.abspath(path).split(os.sep)
    for i in range(len(parts) - 2):
        if parts[i].startswith("models--") and parts[i + 1] == "snapshots":
            return parts[i].removeprefix("models--").replace("--", "/")
    return None


#: A model name a config may record: a repo id ("org/name") or a bare name, not a path.
_REPO_NAME = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")


def _recorded_name(path) -> str | None:
    """The ``_name_or_path`` a config.json records, where it is a name and not a local path."""
    try:                             # the bounded reader: a hostile file is refused, not read
        recorded = load_hf_config(path).get("_name_or_path")
    except (TypeError, ValueError):
        return None                  # the reader that follows says what is wrong with the file
    if isinstance(recorded, str) and _REPO_NAME.fullmatch(recorded):
        return recorded
    return None             # none, or a local path ("/home/...", "./ckpt", "C:\\...")


def resolve_model(name_or_path, *, name: str | None = None) -> ModelShape:
    """A catalogue model by name, or a model read offline from a Hugging Face ``config.json``.

    Parameters
    ----------
    name_or_path : str, os.PathLike or ModelShape
        One of: a catalogue name (``"llama-3.1-8b"``); a path to ``config.json``; a model folder
        holding one; a Hugging Face repo id (``"meta-llama/Llama-3.1-8B"``) already in the local
        hub cache (``$HF_HUB_CACHE``, ``$HF_HOME/hub`` or ``~/.cache/huggingface/hub``), else
        one the catalogue lists as an alias (``"openai/gpt-oss-120b"``). A ``ModelShape`` is
        returned unchanged (renamed if ``name`` is given).
    name : str, optional
        The name the model takes, whatever it was read from (non-empty).

    Returns
    -------
    ModelShape
        The catalogue row, or the model built by :meth:`ModelShape.from_hf_config`. Its name,
        in this order: ``name``; for a repo id, the repo id (also for a path into the local
        Hugging Face cache, ``models--org--name/snapshots/...``); the config's own
        ``_name_or_path`` where it records one that is not a local path
        (``"microsoft/phi-2"``); else its folder, the way downloads are laid out
        (``.../Llama-3.1-8B/config.json`` is "Llama-3.1-8B"), or a JSON file named otherwise
        by its own name (``gpt-oss-120b.json`` is "gpt-oss-120b").

    Raises
    ------
    ValueError
        If the name is in none of these places; nothing is downloaded.

    See Also
    --------
    rooflinekit.hf_config.find_config : how a folder or repo id becomes a file.
    """
    if name is not None:
        check_string("name", name)
    if isinstance(name_or_path, ModelShape):
        return name_or_path if name is None else name_or_path.replace(name=name)
    text = os.fspath(name_or_path) if isinstance(name_or_path, os.PathLike) else name_or_path
    if isinstance(text, str) and not os.path.exists(text) and text in _model_table()[0]:
        return model(text) if name is None else model(text).replace(name=name)
    if isinstance(text, str) and (text.endswith(".json") or os.sep in text or "/" in text
                                  or os.path.isdir(text)):
        if os.path.exists(text):
            path = find_config(text)
            folder = os.path.basename(os.path.dirname(os.path.abspath(path)))
            # a download's config.json is named by its folder; a file named otherwise
            # (gpt-oss-120b.json) by its own name
            stem, ext = os.path.splitext(os.path.basename(path))
            if name is None:
                name = _cached_repo_id(path) or _recorded_name(path) or \
                    (folder if os.path.basename(path) == "config.json" or ext != ".json"
                     else stem)
            # the name given, not the file found: found again, it is not taken for a folder
            return ModelShape.from_hf_config(text, name=name or None)
        if text.endswith(".json") or text.count("/") != 1:
            raise ValueError(f"model config {text!r} does not exist")
        # org/name: a repo id, looked up in the local cache (nothing is downloaded), else
        # among the catalogue's aliases (openai/gpt-oss-120b is a catalogue row)
        try:
            config = find_config(text)
        except ValueError:
            if _key(text) not in _model_table()[1]:
                raise
            return model(text) if name is None else model(text).replace(name=name)
        return ModelShape.from_hf_config(config, name=name or text)
    return model(text) if name is None else model(text).replace(name=name)


def gpu_names() -> list[str]:
    """Names of every catalogue GPU, in file order."""
    return list(_gpu_table()[0])


def model_names() -> list[str]:
    """Names of every catalogue model, in file order."""
    return list(_model_table()[0])


def gpus(names: Iterable[str] | None = None, *, as_dataset: bool = False):
    """Catalogue GPUs: a ``{name: GPU}`` dict, or an ``xr.Dataset`` over ``gpu``."""
    specs = [gpu(n) for n in (gpu_names() if names is None else names)]
    return to_dataset(specs) if as_dataset else {s.name: s for s in specs}


def models(names: Iterable[str] | None = None, *, as_dataset: bool = False):
    """Catalogue models: a ``{name: ModelShape}`` dict, or an ``xr.Dataset`` over ``model``."""
    specs = [model(n) for n in (model_names() if names is None else names)]
    return to_dataset(specs) if as_dataset else {s.name: s for s in specs}


# Dataset variables of each kind of spec: field or property -> (units, long name). Absent optional
# values become inf (sliding_window: no window) or NaN (unknown price, link or power), never a
# silent zero.
_VARIABLES = {ModelShape: {
    "n_layers": ("1", "decoder layers"),
    "n_heads": ("1", "query heads"),
    "n_kv_heads": ("1", "key/value heads"),
    "head_dim": ("1", "head dimension"),
    "attention_width": ("1", "width per head attention FLOPs run at (MLA: latent width)"),
    "prefill_attention_width": ("1", "width per head a prompt's attention over its own tokens "
                                     "runs at (MLA: un-absorbed, key and value heads)"),
    "is_mla": ("1", "multi-head latent attention (True) or KV heads (False)"),
    "hidden_size": ("1", "hidden size"),
    "intermediate_size": ("1", "MLP width, per expert for MoE (NaN: unknown)"),
    "n_params": ("1", "total parameters"),
    "n_active_params": ("1", "parameters active per token"),
    "n_aside_params": ("1", "parameters held that no generated token runs (vision and audio "
                            "encoders)"),
    "n_experts": ("1", "routed experts per MoE layer"),
    "n_experts_per_token": ("1", "experts used per token"),
    "bytes_per_param": ("bytes", "bytes per weight"),
    "kv_bytes_per_element": ("bytes", "bytes per KV element"),
    "kv_bytes_per_token_per_layer": ("bytes", "KV bytes per token per layer"),
    "kv_bytes_per_token": ("bytes", "KV bytes per token"),
    "n_sliding_layers": ("1", "sliding-window layers"),
    "n_full_layers": ("1", "full-attention layers"),
    "sliding_window": ("tokens", "sliding-window length (inf: none)"),
    "attention_chunk_size": ("tokens", "chunk of chunked local attention (NaN: none)"),
    "indexer_bytes_per_token_per_layer": ("bytes", "sparse-attention indexer key bytes per "
                                                   "token per layer"),
    "index_topk": ("tokens", "tokens sparse attention reads per query (NaN: dense)"),
    "weight_bytes": ("bytes", "weight bytes"),
    "active_weight_bytes": ("bytes", "weight bytes used per token"),
    "input_embedding_params": ("1", "input-embedding parameters apart from the LM head"),
    "lm_head_params": ("1", "LM head parameters (0: vocabulary unknown)"),
    "bytes_per_body_param": ("bytes", "bytes per weight of the body (attention, dense MLPs)"),
    "bytes_per_expert_param": ("bytes", "bytes per weight of the routed experts"),
    "bytes_per_embedding_param": ("bytes", "bytes per weight of the embeddings and LM head"),
    "n_kv_layers": ("1", "layers with a KV cache (a hybrid's attention layers)"),
    "state_bytes_per_sequence": ("bytes", "recurrent state per sequence (linear attention, SSM)"),
    "ssm_state_bytes_per_sequence": ("bytes", "the recurrent state proper, of that state"),
    "ssm_state_bytes_per_element": ("bytes", "bytes per recurrent-state element"),
    "n_linear_attention_layers": ("1", "Gated DeltaNet (linear-attention) layers"),
    "n_recurrent_layers": ("1", "recurrent layers: Gated DeltaNet and Mamba"),
    "linear_state_elements_per_layer": ("1", "recurrent-state elements a sequence holds per "
                                             "recurrent layer"),
    "fp4_matmuls": ("1", "weight GEMMs W4A4 on FP4 tensor cores where the GPU has them (NVFP4)"),
}, GPU: {
    "memory_bytes": ("bytes", "device memory"),
    "hbm_bandwidth": ("bytes/s", "memory bandwidth"),
    "peak_flops": ("FLOP/s", "dense peak FLOP/s, 16-bit"),
    "interconnect_bandwidth": ("bytes/s", "interconnect bandwidth per direction (NaN: unknown)"),
    "interconnect_latency": ("s", "collective latency per ring hop"),
    "network_bandwidth": ("bytes/s", "inter-node network bandwidth per direction per GPU "
                                     "(NaN: unknown)"),
    "hourly_price": ("USD/h", "illustrative hourly price (NaN: unknown)"),
    "n_gpus": ("1", "GPUs per group"),
    "board_power": ("W", "maximum board power (NaN: unknown)"),
    "scale_up_gpus": ("1", "GPUs one NVLink/Infinity Fabric domain links (NaN: unknown)"),
    "host_link_bandwidth": ("bytes/s", "host link a PCIe group shares beyond p2p_gpus, per "
                                       "direction (NaN: none)"),
    "p2p_gpus": ("1", "GPUs linked peer to peer without the shared host link (NaN: none)"),
    "host_gpus": ("1", "GPUs one host holds, whose engines map each other's memory (NaN: the "
                       "whole scale-up domain's)"),
    "boost_clock": ("Hz", "maximum SM boost clock (NaN: unknown)"),
    "ring_collectives": ("1", "collectives pay a latency per ring hop (PCIe: 1) or a fixed "
                              "one (NVLink: 0)"),
    "streaming_bandwidth": ("bytes/s", "device-memory bandwidth measured streaming operands "
                                       "larger than the L2 cache (NaN: unmeasured)"),
    "gemm_flops": ("FLOP/s", "16-bit dense GEMM throughput measured on large GEMMs (NaN: "
                             "unmeasured)"),
    "compute_capability": ("1", "CUDA compute capability, major.minor (NaN: not NVIDIA, or "
                                "unknown)"),
}}


def _value(spec, field):
    value = getattr(spec, field)
    if value is None:
        return math.inf if field == "sliding_window" else math.nan
    return value


def spec_fields(specs: Iterable[ModelShape | GPU]) -> tuple[list[str], dict[str, np.ndarray]]:
    """Names and numeric fields of spec objects as 1-D arrays, without building a Dataset.

    The fields :func:`to_dataset` holds (GPUs' ``peak_flops_<dtype>`` too); absent optional
    values are ``inf`` (no sliding window) or ``NaN`` (unknown price, link or power).
    """
    specs = list(specs)
    if not specs:
        raise ValueError("specs must hold at least one ModelShape or GPU")
    kind = next((k for k in _VARIABLES if all(isinstance(s, k) for s in specs)), None)
    if kind is None:
        raise TypeError("specs must be all ModelShape or all GPU objects")
    fields = {f: np.array([_value(s, f) for s in specs]) for f in _VARIABLES[kind]}
    if kind is GPU:
        for dt in sorted({k for s in specs for k in s.peak_flops_by_dtype}):
            fields[f"peak_flops_{dt}"] = np.array([s.flops_for(dt) for s in specs])
    return [s.name for s in specs], fields


def to_dataset(specs: Iterable[ModelShape | GPU]) -> xr.Dataset:
    """Stack spec objects (all ``ModelShape`` or all ``GPU``) into a Dataset over their dimension:
    names the coordinate, ``model_source`` / ``gpu_source`` (and models' ``attention``)
    non-index coordinates, so a model Dataset and a GPU Dataset combine without clashing."""
    specs = list(specs)
    names, fields = spec_fields(specs)
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate names in specs: {names}")
    is_model = isinstance(specs[0], ModelShape)
    dim, table = (dims.MODEL, _VARIABLES[ModelShape]) if is_model else \
        (dims.GPU, _VARIABLES[GPU])
    extra = {"attention": [s.attention for s in specs]} if is_model else {}
    data_vars = {}
    for field, values in fields.items():
        u, ln = table.get(field) or ("FLOP/s", f"dense peak FLOP/s, {field[len('peak_flops_'):]}")
        data_vars[field] = xr.DataArray(values, dims=(dim,), attrs={"units": u, "long_name": ln})
    coords = {dim: names, f"{dim}_source": (dim, [s.source for s in specs])}
    coords.update({k: (dim, v) for k, v in extra.items()})
    return xr.Dataset(data_vars, coords=coords)

