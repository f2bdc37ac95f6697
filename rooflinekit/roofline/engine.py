"""How a serving engine runs a step against the ideal roofline: the :class:`Engine` spec.

One frozen, checked object carries every departure from the ideal machine; every path that times
a step takes it as ``engine=`` and :meth:`Engine.group_terms` turns its fields into the step's
coefficients. :data:`IDEAL` is the guide's bound; a
:class:`~rooflinekit.calibrate.Calibration` stands wherever an ``Engine`` does (:func:`engine_for`).
"""

from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np
import xarray as xr

from rooflinekit import parallel
from rooflinekit._validation import (MAX_COUNT, check_nonnegative, check_positive, check_range,
                                     real_number)
from rooflinekit.dtypes import bytes_per_element

__all__ = ["ALLREDUCE_MODELS", "Engine", "IDEAL", "MAX_MXFP4_SHARE", "PHASES",
           "WIDE_HEAD_DIM", "engine_for", "narrow_head_halvings"]

#: What ``allreduce`` accepts, each boolean standing for one of the named models.
ALLREDUCE_MODELS = ("collective", "ring", "guide", "custom")
_ALLREDUCE_FLAGS = {True: "collective", False: "guide"}

#: The share of a dense layer's low-precision fixed time (``low_precision_layer_overhead``)
#: that its attention GEMMs (qkv and o) take, its MLP's two the rest: a mixture-of-experts
#: layer pays only this share, its MLP being the expert block, whose fixed time
#: ``moe_layer_overhead`` holds, read from the MoE tables' own rows. The median over the 24
#: newest kernel tables with FP8 GEMMs (three engines, eight GPUs; 0.24-0.58 by table) of
#: the qkv and o GEMMs' FP8 fixed time beyond bf16 over the four GEMMs'
#: (``attention_low_precision_share`` in ``scripts/engine_profiles.py``).
ATTENTION_LOW_PRECISION_SHARE = 0.43

#: The most ``mxfp4_moe_compute_share`` may be [1]: MXFP4 experts multiplied on FP4 tensor
#: cores (W4A4) against the 16-bit peak the planner times them at, the ratio of the two peaks
#: on the catalogue's GPUs with FP4 tensor cores (4 on the B200, GB200 and RTX PRO 6000, 6 on
#: the B300 and GB300).
MAX_MXFP4_SHARE = 6.0

#: The head dimension [1] at and above which attention reaches ``attention_compute_efficiency``
#: whole: the kernel tables' long-prompt rows it is read from have heads of 128, and heads of
#: 256 reach 0.76-1.25 times that share there (``narrow_head_attention_share`` slows narrower
#: ones).
WIDE_HEAD_DIM = 128


def narrow_head_halvings(head_dim):
    """The power of ``narrow_head_attention_share`` a model's attention runs at [1]:
    ``log2(WIDE_HEAD_DIM / d)`` for heads ``d`` narrower than :data:`WIDE_HEAD_DIM`, else 0
    (heads of 64: 1; of 96: 0.415)."""
    return np.log2(WIDE_HEAD_DIM / np.minimum(head_dim, WIDE_HEAD_DIM))


#: What a result of the ideal engine says of itself (``attrs["model_quality"]``).
IDEAL_LABEL = ("ideal (best case): roofline at full compute and bandwidth efficiency, "
               "no overheads")

#: The phases an engine can differ by: a prompt's pass, a decode step, and the mixed step a
#: continuous batcher runs (prompt chunks beside decodes).
PHASES = ("prefill", "decode", "step")

#: The knobs that are shares of a GPU's memory bandwidth and of its dense peak, under the
#: knob whose absence means all of that whole (1). They are the ones that move from one GPU
#: to another by the GPUs' measured streaming and GEMM shares
#: (:func:`rooflinekit.profiles.borrowed`), and that the profile script writes back as
#: shares of the datasheet figures (``scripts/engine_profiles.py``, ``to_datasheet``).
SHARE_KNOBS = {
    "bandwidth_efficiency": ("bandwidth_efficiency", "kv_bandwidth_efficiency",
                             "low_precision_bandwidth_efficiency", "fp4_bandwidth_efficiency"),
    "compute_efficiency": ("compute_efficiency", "low_precision_compute_efficiency",
                           "fp4_compute_efficiency", "attention_compute_efficiency"),
}


def _efficiency(name, value):
    check_range(name, value, lo=0, hi=1, lo_open=True)


def _optional_efficiency(name, value):
    if value is not None:
        _efficiency(name, value)


def _optional_mxfp4_share(name, value):
    if value is not None:
        check_range(name, value, lo=0, hi=MAX_MXFP4_SHARE, lo_open=True)


def _single(check):
    """``None`` (the GPU's own figure) or one number passing ``check``."""
    def check_override(name, value):
        if value is not None:
            check(name, value)
            if np.ndim(value):
                raise TypeError(f"{name} must be a single number")
    return check_override


def _check_allreduce(name, value):
    if isinstance(value, (bool, np.bool_)) or value in ALLREDUCE_MODELS:
        return
    raise TypeError(f"{name} must be True or False, or one of {', '.join(ALLREDUCE_MODELS)}; "
                    f"got {value!r}")


def _check_compute_dtype(name, value):
    if value is not None:
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a format name such as 'fp8', got "
                            f"{type(value).__name__}")
        bytes_per_element(value, name)


def _check_activation_dtype(name, value):
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a format name such as 'bf16', got "
                        f"{type(value).__name__}")
    bytes_per_element(value, name)


def _check_label(name, value):
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}")


_CHECKS = {
    "compute_efficiency": _efficiency,
    "low_precision_compute_efficiency": _optional_efficiency,
    "bandwidth_efficiency": _efficiency,
    "kv_bandwidth_efficiency": _optional_efficiency,
    "low_precision_bandwidth_efficiency": _optional_efficiency,
    "fp4_compute_efficiency": _optional_efficiency,
    "fp4_bandwidth_efficiency": _optional_efficiency,
    "attention_compute_efficiency": _optional_efficiency,
    "narrow_head_attention_share": _efficiency,
    "step_overhead": check_nonnegative,
    "sequence_overhead": check_nonnegative,
    "layer_overhead": check_nonnegative,
    "low_precision_layer_overhead": check_nonnegative,
    "layer_cycles": check_nonnegative,
    "moe_layer_overhead": check_nonnegative,
    "moe_compute_share": _efficiency,
    "mxfp4_moe_compute_share": _optional_mxfp4_share,
    "mla_layer_overhead": check_nonnegative,
    "prefill_overhead": check_nonnegative,
    "recurrent_layer_overhead": check_nonnegative,
    "recurrent_chain_time": check_nonnegative,
    "recurrent_element_time": check_nonnegative,
    "frontend_latency": check_nonnegative,
    "request_overhead": lambda name, v: real_number(name, v, lo=0),      # one number
    "gemm_half_tokens": lambda name, v: check_range(name, v, lo=0, hi=MAX_COUNT),
    "allreduce": _check_allreduce,
    "interconnect_bandwidth": _single(check_positive),
    "interconnect_latency": _single(check_nonnegative),
    "cross_host_allreduce_latency": check_nonnegative,
    "interconnect_efficiency": _efficiency,
    "host_traffic_share": lambda name, v: check_range(name, v, lo=0, hi=1),
    "compute_dtype": _check_compute_dtype,
    "activation_dtype": _check_activation_dtype,
    "label": _check_label,
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Engine:
    """How a serving engine runs a step, against the ideal roofline.

    Every field's default is the ideal machine's, so ``Engine()`` is the guide's roofline
    (:data:`IDEAL`); each field checks its range at construction. Numeric fields may be
    arrays or DataArrays: a formula broadcasts them by dimension name like its other inputs.

    Parameters
    ----------
    compute_efficiency : float, array_like or xarray.DataArray
        Share of the peak FLOP/s the matrix multiplies and attention reach [1], in (0, 1].
        Default 1.0.
    low_precision_compute_efficiency : float, array_like, xarray.DataArray or None
        Share of the low-precision peak (FP8, INT8, FP4) the weight matrix multiplies reach
        where they run on such a path (their format's dense peak above the GPU's 16-bit one)
        [1], in (0, 1]; attention, in the activation format, keeps ``compute_efficiency``.
        FP8 GEMMs reach a smaller share of their peak than bf16 GEMMs of theirs (the scaling
        epilogue, tiles tuned for 16 bits). Default ``None``: ``compute_efficiency``.
    bandwidth_efficiency : float, array_like or xarray.DataArray
        Share of the HBM bandwidth the step's traffic reaches [1], in (0, 1]. Default 1.0.
    kv_bandwidth_efficiency : float, array_like, xarray.DataArray or None
        Share of the HBM bandwidth the KV-cache reads and writes reach [1], in (0, 1];
        ``bandwidth_efficiency`` is then the weight-streaming one. Default ``None``: the same
        as ``bandwidth_efficiency``.
    low_precision_bandwidth_efficiency : float, array_like, xarray.DataArray or None
        Share of the HBM bandwidth the weight reads reach where the weight matrix multiplies
        run on a low-precision tensor-core path (W8A8 FP8 or INT8, FP4: the format's dense
        peak above the GPU's 16-bit one) [1], in (0, 1]: a low-precision GEMM at a few rows
        streams its weights at a smaller share than a 16-bit one (its tiles and scaling
        epilogue). The KV cache and activations keep theirs; 16-bit and weight-only formats
        never take it. Default ``None``: ``bandwidth_efficiency``.
    fp4_compute_efficiency : float, array_like, xarray.DataArray or None
        Share of the FP4 peak the weight matrix multiplies reach where they run on an FP4 path
        (W4A4 NVFP4: the GPU's FP4 dense peak above its FP8 one) [1], in (0, 1]: FP4 GEMMs
        reach less of their peak than FP8 ones of theirs. Default ``None``:
        ``low_precision_compute_efficiency``.
    fp4_bandwidth_efficiency : float, array_like, xarray.DataArray or None
        Share of the HBM bandwidth the weight reads reach on an FP4 path [1], in (0, 1]: at a
        few rows FP4 GEMMs stream their weights (values and block scales) slower than FP8
        ones. Default ``None``: ``low_precision_bandwidth_efficiency``.
    attention_compute_efficiency : float, array_like, xarray.DataArray or None
        Share of the peak FLOP/s in the activation format that attention reaches [1], in
        (0, 1]: a long prompt's attention kernels (FlashAttention and its kin) reach less of
        it than the weight GEMMs at the same tokens do. Default ``None``:
        ``compute_efficiency``.
    narrow_head_attention_share : float, array_like or xarray.DataArray
        Share of the attention efficiency that attention with heads of 64 reaches against
        heads of :data:`WIDE_HEAD_DIM` [1], in (0, 1]: a FlashAttention tile of 64-wide heads
        does half the multiply-adds per byte of K and V it loads (gpt-oss, Llama-3.2-1B). A
        model of head dimension ``d`` below :data:`WIDE_HEAD_DIM` runs attention at
        ``share ** log2(WIDE_HEAD_DIM / d)`` times the attention efficiency; wider heads at
        the efficiency itself. Default 1.0 (heads of any width alike).
    step_overhead : float, array_like or xarray.DataArray
        Fixed time per step (scheduling, sampling, kernel launches) [s], ≥ 0. Default 0.
    sequence_overhead : float, array_like or xarray.DataArray
        Time per decoding sequence per step that the GPU waits for [s], ≥ 0: the host's work
        for each running sequence (scheduling it, preparing its inputs, sampling,
        detokenising and returning its token), which an engine that does not overlap it with
        the forward pass adds to every step, so that a step of ``b`` decodes takes
        ``b · sequence_overhead`` longer and decode slows with the batch beyond what the
        GPU's traffic gives. Default 0.
    layer_overhead : float, array_like or xarray.DataArray
        Fixed time per decoder layer per step [s], ≥ 0: the step's fixed cost is
        ``step_overhead + n_layers · layer_overhead``. Default 0.
    layer_cycles : float, array_like or xarray.DataArray
        Fixed cost per decoder layer per step in the GPU's clock cycles [cycles], ≥ 0: it adds
        ``n_layers · layer_cycles / boost_clock`` seconds to the step's fixed cost, so the
        same kernels' fixed time scales with the GPU's clock (the catalogue's
        ``boost_clock_mhz``; a GPU without one refuses a non-zero value). Default 0.
    low_precision_layer_overhead : float, array_like or xarray.DataArray
        Extra fixed time per decoder layer per step when the weight matrix multiplies run on
        a low-precision tensor-core path (W8A8 FP8 or INT8, FP4: the format's dense peak
        above the GPU's 16-bit one) [s], ≥ 0: what such a GEMM's activation quantisation and
        scaling add to its launch, over the layer's four GEMMs. It adds to ``layer_overhead``
        on those steps only; 16-bit and weight-only formats never pay it. A mixture-of-experts
        layer pays :data:`ATTENTION_LOW_PRECISION_SHARE` of it (its attention GEMMs'; its
        expert block's fixed time is ``moe_layer_overhead``'s). Default 0.
    moe_layer_overhead : float, array_like or xarray.DataArray
        Extra fixed time per decoder layer per step of a mixture-of-experts model [s], ≥ 0: what
        an MoE block's routing, token permutation and grouped expert GEMMs take at few tokens
        beyond reading the experts' weights, over the two MLP GEMMs of a dense layer that
        ``layer_overhead`` holds. Every layer of a model with more than one expert pays it
        (DeepSeek's three dense layers of 61 too: a 5 % overstatement there); dense models
        never do. Default 0.
    moe_compute_share : float, array_like or xarray.DataArray
        Share of the weight GEMMs' compute efficiency that a mixture-of-experts model's routed
        experts reach [1], in (0, 1]: their grouped GEMMs, a few rows per expert and a launch
        per expert, run at ``moe_compute_share`` times ``compute_efficiency`` (or the
        low-precision or FP4 one, on those paths) of the peak, so that their FLOPs take
        ``1 / moe_compute_share`` times as long. A dense model's GEMMs and a model's shared
        experts never take it. Default 1.0 (as fast as a dense GEMM).
    mxfp4_moe_compute_share : float, array_like, xarray.DataArray or None
        ``moe_compute_share`` for a model whose routed experts are MXFP4
        (``bytes_per_expert_param`` of :data:`~rooflinekit.dtypes.MXFP4_BYTES`, gpt-oss) [1],
        in (0, :data:`MAX_MXFP4_SHARE`]: such experts multiply on the 16-bit path, but their
        kernels are the engine's own per GPU (weight-only Triton or Marlin kernels that widen
        each weight, or on Blackwell MXFP4 × MXFP8 kernels on the low-precision tensor cores,
        which beat a dense 16-bit GEMM: a share above 1). Default None: ``moe_compute_share``.
    mla_layer_overhead : float, array_like or xarray.DataArray
        Extra fixed time per multi-head latent attention layer per step [s], ≥ 0: what the
        MLA module's ten or so kernels (the query and KV down- and up-projections, their
        norms, RoPE, the absorbed attention and its output) take at a few tokens beyond
        reading their weights and cache, over the query-key-value and output GEMMs and the
        attention kernel of a layer with KV heads that ``layer_overhead`` holds. Every KV
        layer of a model with MLA pays it (DeepSeek-V3, Kimi K2, GLM-5); other models never
        do. Default 0.
    prefill_overhead : float, array_like or xarray.DataArray
        Fixed time a step carrying prompt tokens pays once (admission, scheduling of a new
        prompt): the TTFT intercept [s], ≥ 0. Default 0.
    recurrent_layer_overhead : float, array_like or xarray.DataArray
        Fixed time per recurrent layer (Gated DeltaNet or Mamba: ``n_recurrent_layers``) of a
        step carrying prompt tokens [s], ≥ 0: the launch of its prompt kernels (the short
        convolution and the chunked scan). It adds ``n_recurrent_layers ·
        recurrent_layer_overhead`` to ``prefill_overhead``; models without such layers never
        pay it. Default 0.
    recurrent_chain_time : float, array_like or xarray.DataArray
        Time per recurrent layer per token of the step's longest prompt chunk [s], ≥ 0: the
        chunked scan passes its state from chunk to chunk in order, so a prompt's recurrent
        pass takes at least this chain, however many sequences share the step. Default 0.
    recurrent_element_time : float, array_like or xarray.DataArray
        Time per recurrent layer per prompt token per element of the recurrent state one GPU
        holds for a sequence in that layer [s], ≥ 0 (``linear_state_elements_per_layer / tp``:
        a Gated DeltaNet layer of ``H`` value heads of ``d_k × d_v`` holds ``H · d_k · d_v``, a
        Mamba-2 layer of ``H`` heads of ``P`` channels and state ``N`` holds ``H · P · N``): the
        recurrent pass's throughput bound. A step's prompt tokens take
        ``max(recurrent_chain_time · L, recurrent_element_time · S · T)`` per layer, ``L`` its
        longest chunk, ``T`` its prompt tokens and ``S`` the elements. The shipped profiles fit
        the three knobs to Gated DeltaNet's kernel tables and carry them to Mamba layers, whose
        scan no table times (its arithmetic per state element and token is within a factor of
        two of the delta rule's). Default 0: the ideal model leaves the prompt's recurrent pass
        out.
    frontend_latency : float, array_like or xarray.DataArray
        Time a request spends in the serving front end, outside the engine's steps [s], ≥ 0:
        receiving it over HTTP, tokenising the prompt, handing it to the engine, and
        detokenising and streaming the first token back. It adds to the time to first token
        and to the end-to-end latency, never to a step, so it costs no GPU time and leaves
        throughput unchanged. Default 0.
    request_overhead : float
        The engine's time per request it takes in [s], ≥ 0, one number: the front end's work
        (receiving the request, tokenising its prompt) where it runs in the engine's own
        thread, as vLLM's before 0.6.0 did, so that the engine steps no batch meanwhile. A
        continuous batcher's step after requests arrive takes ``request_overhead`` longer for
        each of them (a burst of ``N`` prompts waits ``N · request_overhead`` for its first
        step, and every running sequence's next token waits too). The static batcher and the
        closed forms of a single request leave it out. Default 0: a front end of its own.
    gemm_half_tokens : float, array_like or xarray.DataArray
        Tokens per step at which the weight matrix multiplies reach half their efficiency,
        ``n½`` [tokens], ≥ 0: a step of ``n`` tokens runs them at
        ``compute_efficiency · n / (n + n½)``. Default 0 (flat).
    allreduce : bool or {"collective", "custom", "ring", "guide"}
        Tensor parallelism's all-reduce, two per layer. ``"collective"`` (default, also
        ``True``): a fixed latency per all-reduce plus ``2·(d−1)/d`` of the payload over the
        link (two hops: a reduce-scatter, then an all-gather). ``"custom"``: the serving
        engines' own all-reduce (the shipped profiles'), each all-reduce the faster of that
        and a one-shot, two hops and ``d − 1`` payloads over the link, its two-stage kernel
        paying three, within one host's NVLink GPUs (past them, and on PCIe cards, the
        ``"collective"``: :func:`rooflinekit.parallel.one_shot_allreduce_coefficients`).
        ``"ring"``: ``2·(d−1)`` hop latencies per all-reduce. ``"guide"`` (also ``False``):
        no communication, the guide's §5 model. Stored as the name.
    interconnect_bandwidth : float, optional
        Per-direction link bandwidth per GPU [bytes/s], > 0; default the GPU's own.
    interconnect_latency : float, optional
        Latency of one link hop [s], ≥ 0 (a collective pays two); default the GPU's own.
    interconnect_efficiency : float
        Share of the link bandwidth the all-reduce reaches [1], in (0, 1]. Default 1.0.
    cross_host_allreduce_latency : float, array_like or xarray.DataArray
        Latency one all-reduce adds where the tensor-parallel group is larger than one host's
        GPUs (the GPU's ``host_gpus``: a GB200 or GB300 tray's four) [s], ≥ 0: an engine whose
        all-reduce maps its peers' memory through one host (vLLM's and SGLang's custom
        all-reduce) falls back to a slower collective across hosts, even inside one NVLink
        domain. No effect on a GPU whose catalogue row gives no ``host_gpus``. Default 0.
    host_traffic_share : float, array_like or xarray.DataArray
        Share of a PCIe group's all-reduce traffic that crosses the host link the whole group
        shares [1], in [0, 1], where the GPU's catalogue row gives one
        (``host_link_bandwidth``) and the group is larger than its peer-to-peer domain
        (``p2p_gpus``): the per-GPU bandwidth is then ``1 / ((1 − s) / (link · e) + s · d /
        (host · e))`` for degree ``d`` and ``e = interconnect_efficiency``; ``s = 1`` is all
        of it, ``host · e / d`` per GPU. GPUs without a shared host link (NVLink/NVSwitch)
        are unaffected. Default 0: each GPU its own link, the ideal.
    compute_dtype : str, optional
        Format the weight matrix multiplies run in ("fp8", "fp4", ...), which picks the GPU's
        peak. Default: one-byte weights (an FP8 checkpoint) on the GPU's FP8 dense peak where it
        lists one, as the serving engines run them (W8A8), and a model whose
        ``fp4_matmuls`` is set (an NVFP4 checkpoint) on its FP4 dense peak where it lists one
        (W4A4); every other format, and a GPU without the format, on the 16-bit dense peak.
    activation_dtype : str
        Format of the activations ("bf16", ...): the all-reduce payload's element size and the
        format attention runs in. Default "bf16".
    label : str
        What a result computed with this engine says of itself (``attrs["model_quality"]``);
        default: :data:`IDEAL_LABEL` for the ideal engine, else the fields that differ from it.

    See Also
    --------
    IDEAL, engine_for, rooflinekit.calibrate.Calibration.engine_for

    Notes
    -----
    The precision choices live here, not on the model: a model's ``bytes_per_param`` is how
    its weights are stored, while ``compute_dtype`` is how the engine multiplies them (FP8
    weights may run W8A8 on FP8 tensor cores or be widened to BF16), a choice of the engine's
    kernels. :meth:`group_terms` is the one place the fields become step coefficients; a new
    knob is one field and its lines there.
    """

    compute_efficiency: object = 1.0
    low_precision_compute_efficiency: object = None
    bandwidth_efficiency: object = 1.0
    kv_bandwidth_efficiency: object = None
    low_precision_bandwidth_efficiency: object = None
    fp4_compute_efficiency: object = None
    fp4_bandwidth_efficiency: object = None
    attention_compute_efficiency: object = None
    narrow_head_attention_share: object = 1.0
    step_overhead: object = 0.0
    sequence_overhead: object = 0.0
    layer_overhead: object = 0.0
    low_precision_layer_overhead: object = 0.0
    layer_cycles: object = 0.0
    moe_layer_overhead: object = 0.0
    moe_compute_share: object = 1.0
    mxfp4_moe_compute_share: object = None
    mla_layer_overhead: object = 0.0
    prefill_overhead: object = 0.0
    recurrent_layer_overhead: object = 0.0
    recurrent_chain_time: object = 0.0
    recurrent_element_time: object = 0.0
    frontend_latency: object = 0.0
    request_overhead: object = 0.0
    gemm_half_tokens: object = 0.0
    allreduce: object = "collective"
    interconnect_bandwidth: object = None
    interconnect_latency: object = None
    interconnect_efficiency: object = 1.0
    cross_host_allreduce_latency: object = 0.0
    host_traffic_share: object = 0.0
    compute_dtype: object = None
    activation_dtype: str = "bf16"
    label: str = ""

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            check = _CHECKS.get(field.name)
            if check is not None:
                check(field.name, value)
            if isinstance(value, (list, tuple)):
                object.__setattr__(self, field.name, np.asarray(value, dtype=float))
        if isinstance(self.allreduce, (bool, np.bool_)):
            object.__setattr__(self, "allreduce", _ALLREDUCE_FLAGS[bool(self.allreduce)])
        if not self.label:
            object.__setattr__(self, "label", self._describe())

    def _describe(self) -> str:
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        changed = [f"{k}={_show(v)}" for k, v in self.fields().items()
                   if not _same(v, defaults[k])]
        return IDEAL_LABEL if not changed else "engine: " + ", ".join(changed)

    def fields(self) -> dict:
        """Every field but ``label``, by name (a subclass's own fields included)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name != "label"}

    def replace(self, **changes) -> "Engine":
        """A copy with ``changes``; the label is written afresh unless given."""
        if "label" not in changes:
            changes["label"] = ""
        return dataclasses.replace(self, **changes)

    def engine_for(self, phase: str, **selectors) -> "Engine":
        """This engine, whatever the phase: an ``Engine`` is the same in every phase."""
        _check_phase(phase)
        return self

    def to_dict(self) -> dict:
        """The fields that differ from the ideal, JSON-ready (the label included)."""
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        out = {k: (v.tolist() if isinstance(v, np.ndarray) else v)
               for k, v in self.fields().items() if not _same(v, defaults[k])}
        if any(isinstance(v, xr.DataArray) for v in out.values()):
            raise TypeError("an Engine with DataArray fields cannot be written as a dict")
        return {**out, "label": self.label}

    @classmethod
    def from_dict(cls, data) -> "Engine":
        """The inverse of :meth:`to_dict`; an unknown field raises ``TypeError`` naming it."""
        if not isinstance(data, dict):
            raise TypeError(f"an engine must be a mapping of field names to values; got "
                            f"{type(data).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise TypeError(f"unknown engine field(s) {', '.join(map(repr, unknown))}; the "
                            f"fields are {', '.join(sorted(known))}")
        return cls(**data)

    def group_terms(self, group, model, laid: dict):
        """The step coefficients of a GPU group run by this engine (raw arrays).

        Parameters
        ----------
        group : types.SimpleNamespace
            The GPU's fields on the formula's grid (``peak_flops`` at ``compute_dtype``,
            ``peak_flops_16bit``, ``attention_peak_flops`` at ``activation_dtype``,
            ``hbm_bandwidth``, link figures, ``n_gpus``), completed here and returned.
        model : types.SimpleNamespace or None
            The model's coefficients (``n_layers``, ``hidden_size``), ``None`` for a formula
            of the GPU alone.
        laid : dict
            This engine's fields as laid out on the grid, and ``tp``.

        Notes
        -----
        ``q = 1`` where the matmuls' format has a dense peak above the GPU's 16-bit one
        (``peak_flops > peak_flops_16bit``: a low-precision path), else 0.
        ``peak = peak_flops · tp · e`` with ``e = low_precision_compute_efficiency`` where
        ``q = 1`` and it is given, else ``compute_efficiency`` (attention's peak takes
        ``attention_compute_efficiency`` where given, else ``compute_efficiency``, times
        ``narrow_head_attention_share ** log2(WIDE_HEAD_DIM / head_dim)`` for a model of
        heads narrower than :data:`WIDE_HEAD_DIM`; a
        mixture-of-experts model's routed experts' FLOPs count ``expert_flops_scale = 1 /
        moe_compute_share`` times, ``1 / mxfp4_moe_compute_share`` for MXFP4 experts where
        given),
        ``bandwidth = hbm · tp · bandwidth_efficiency``,
        ``fixed = step_overhead + n_layers · (layer_overhead + layer_cycles / boost_clock +
        q · s · low_precision_layer_overhead + m · moe_layer_overhead) + n_kv_layers · a ·
        mla_layer_overhead`` with ``m = 1`` for a model of more than one expert, else 0,
        ``s = ATTENTION_LOW_PRECISION_SHARE`` where ``m = 1``, else 1 (the expert block's
        fixed time is ``moe_layer_overhead``'s), and
        ``a = 1`` for one with multi-head latent attention, else 0; the KV traffic weighs
        ``bandwidth_efficiency / kv_bandwidth_efficiency`` against the bandwidth, the weights
        ``bandwidth_efficiency / low_precision_bandwidth_efficiency`` where ``q = 1`` and it
        is given (``weight_traffic_scale``, else exactly 1); on an FP4 path (``fp4_path``: the format's
        peak is the GPU's FP4 one, above its FP8 one) the ``fp4_*`` shares replace the
        low-precision ones where given; the all-reduce is
        :func:`rooflinekit.parallel.allreduce_coefficients` over ``link ·
        interconnect_efficiency`` (past the peer-to-peer domain of a GPU with a shared host
        link, its ``host_traffic_share`` of the traffic over ``host_link_bandwidth ·
        interconnect_efficiency / degree``). With every field at its default each term is the
        ideal model's, to the bit (``x · 1.0`` and ``x + 0.0`` are exact).
        """
        tp = laid.get("tp", 1.0)
        degree = tp * group.n_gpus
        activation_bytes = bytes_per_element(self.activation_dtype)
        # a formula of the GPU alone (the ridge point) has no payload to sum
        algorithm = self.allreduce if model is not None else "guide"
        if algorithm != "guide":
            link = group.interconnect_bandwidth if self.interconnect_bandwidth is None else \
                float(self.interconnect_bandwidth)
            link = link * laid["interconnect_efficiency"]
            share = laid["host_traffic_share"]
            if np.any(np.asarray(share) != 0):       # 0 (default): the line above, to the bit
                link = _host_shared_link(link, group, degree, share,
                                         laid["interconnect_efficiency"])
            hop = group.interconnect_latency if self.interconnect_latency is None else \
                float(self.interconnect_latency)
            parallel.require_link(link, degree)
            # the engines' own kernels ("custom") run within one host's GPUs, with a one-shot
            # alternative (none, an infinite latency, else)
            ring = getattr(group, "ring_collectives", False)
            host = getattr(group, "host_gpus", math.nan)
            per_token, latency = parallel.allreduce_coefficients(
                model.n_layers, model.hidden_size, activation_bytes, degree, hop, algorithm,
                ring, host)
            one_shot = parallel.one_shot_allreduce_coefficients(
                model.n_layers, model.hidden_size, activation_bytes, degree, hop, algorithm,
                ring, host)
            cross = laid["cross_host_allreduce_latency"]
            if np.any(np.asarray(cross) != 0):      # 0 (default): the line above, to the bit
                latency = latency + parallel.cross_host_allreduce_latency(
                    model.n_layers, degree, getattr(group, "host_gpus", math.nan), cross)
            link = np.where(degree > 1, link, np.inf)        # 0 / inf = 0 where nothing is sent
        else:
            per_token, latency, link = 0.0, 0.0, math.inf
            one_shot = (0.0, math.inf)
        # the matmuls run on a low-precision path where their format's peak beats 16 bits
        low_precision = group.peak_flops > group.peak_flops_16bit
        compute = laid["compute_efficiency"]
        # the weight GEMMs' own share: the low-precision one where they run on such a path,
        # the FP4 one on an FP4 path
        gemm = compute if laid["low_precision_compute_efficiency"] is None else \
            np.where(low_precision, laid["low_precision_compute_efficiency"], compute)
        fp4 = group.fp4_path
        if laid["fp4_compute_efficiency"] is not None:
            gemm = np.where(fp4, laid["fp4_compute_efficiency"], gemm)
        group.compute_efficiency = gemm
        # the routed experts' grouped GEMMs at a share of that: their FLOPs weigh 1 / share
        share = laid["moe_compute_share"]
        mxfp4 = laid["mxfp4_moe_compute_share"]
        if mxfp4 is not None and model is not None:     # None (default): the line above
            share = np.where(model.mxfp4_experts, mxfp4, share)
        group.expert_flops_scale = 1.0 / share
        group.peak_flops = group.peak_flops * tp * gemm
        attention = compute if laid["attention_compute_efficiency"] is None else \
            laid["attention_compute_efficiency"]
        narrow = laid["narrow_head_attention_share"]
        if model is not None and np.any(np.asarray(narrow) != 1):   # 1 (default): unchanged
            attention = attention * narrow ** narrow_head_halvings(model.head_dim)
        group.attention_peak_flops = group.attention_peak_flops * tp * attention
        group.bandwidth = group.hbm_bandwidth * tp * laid["bandwidth_efficiency"]
        # kernel launches scale with the layers; a formula of the GPU alone has none
        layers = model.n_layers if model is not None else 0.0
        group.step_overhead = laid["step_overhead"] + layers * laid["layer_overhead"]
        quantised = laid["low_precision_layer_overhead"]
        if np.any(np.asarray(quantised) != 0):      # 0 (default): the line above, to the bit
            # an MoE layer's MLP is its expert block: only its attention GEMMs pay here
            share = 1.0 if model is None else np.where(
                model.n_experts > 1, ATTENTION_LOW_PRECISION_SHARE, 1.0)
            group.step_overhead = group.step_overhead + layers * share * np.where(
                low_precision, quantised, 0.0)
        cycles = laid["layer_cycles"]
        if np.any(np.asarray(cycles) != 0):         # 0 (default): the lines above, to the bit
            clock = getattr(group, "boost_clock", math.nan)
            if np.any(np.isnan(np.asarray(clock, dtype=float))):
                raise ValueError("layer_cycles needs the GPU's boost_clock (the catalogue's "
                                 "boost_clock_mhz), which this GPU does not give; use "
                                 "layer_overhead [s] instead")
            group.step_overhead = group.step_overhead + layers * cycles / clock
        moe = laid["moe_layer_overhead"]
        if model is not None and np.any(np.asarray(moe) != 0):     # 0 (default): unchanged
            group.step_overhead = group.step_overhead + layers * np.where(
                model.n_experts > 1, moe, 0.0)
        mla = laid["mla_layer_overhead"]
        if model is not None and np.any(np.asarray(mla) != 0):     # 0 (default): unchanged
            kv_layers = np.where(np.isnan(model.n_kv_layers), model.n_layers, model.n_kv_layers)
            group.step_overhead = group.step_overhead + kv_layers * np.where(
                model.is_mla > 0, mla, 0.0)
        group.sequence_overhead = laid["sequence_overhead"]
        group.gemm_half_tokens = laid["gemm_half_tokens"]
        # expert parallelism: the routed experts over ``ep`` groups of the GPUs
        # (1, every formula's default, skips the checks a degree given by the caller takes)
        ep = group.expert_groups = laid["ep"]
        group.expert_spread = 0.0 if isinstance(ep, int) and ep == 1 else \
            parallel.expected_normal_maximum(ep)
        group.prefill_overhead = laid["prefill_overhead"]
        # a hybrid's recurrent layers scan the step's prompt tokens too (0 layers, or the
        # default 0 knobs: nothing, to the bit)
        linear = model.n_recurrent_layers if model is not None else 0.0
        launch = laid["recurrent_layer_overhead"]
        if np.any(np.asarray(launch) != 0):
            group.prefill_overhead = group.prefill_overhead + linear * launch
        group.prefill_chain_time = linear * laid["recurrent_chain_time"]
        elements = model.linear_state_elements_per_layer if model is not None else 0.0
        group.prefill_state_time = linear * laid["recurrent_element_time"] * elements / degree
        group.frontend_latency = laid["frontend_latency"]
        kv = laid["kv_bandwidth_efficiency"]
        group.kv_traffic_scale = 1.0 if kv is None else laid["bandwidth_efficiency"] / kv
        streamed = laid["low_precision_bandwidth_efficiency"]
        group.weight_traffic_scale = 1.0 if streamed is None else np.where(
            low_precision, laid["bandwidth_efficiency"] / streamed, 1.0)
        if laid["fp4_bandwidth_efficiency"] is not None:
            group.weight_traffic_scale = np.where(
                fp4, laid["bandwidth_efficiency"] / laid["fp4_bandwidth_efficiency"],
                group.weight_traffic_scale)
        group.allreduce_bytes_per_token = per_token
        group.link_bandwidth = link
        group.allreduce_latency = latency
        group.one_shot_allreduce_bytes_per_token, group.one_shot_allreduce_latency = one_shot
        group.tp = degree
        return group


def _host_shared_link(link, group, degree, share, efficiency):
    """Per-GPU link bandwidth [bytes/s] of a group whose traffic, past the GPU's peer-to-peer
    domain, crosses a host link the whole group shares (``share`` of it); ``link`` where the
    GPU has no shared host link or the group fits in the domain."""
    host = getattr(group, "host_link_bandwidth", math.nan)
    domain = getattr(group, "p2p_gpus", math.nan)
    arrays = (link, host, domain, degree, share, efficiency)
    where = xr.where if any(isinstance(a, xr.DataArray) for a in arrays) else np.where
    known = ~np.isnan(host)
    beyond = known & (degree > where(np.isnan(domain), 1.0, domain))
    shared = 1.0 / ((1.0 - share) / link + share * degree / (where(known, host, 1.0) * efficiency))
    return where(beyond, shared, link)


def _show(value) -> str:
    if isinstance(value, (xr.DataArray, np.ndarray)):
        return f"<{np.size(value)} values>"
    if isinstance(value, float):
        return f"{value:.4g}"
    return repr(value) if isinstance(value, str) else str(value)


def _same(a, b) -> bool:
    if isinstance(a, (np.ndarray, xr.DataArray)) or isinstance(b, (np.ndarray, xr.DataArray)):
        return False
    if isinstance(a, numbers.Real) and isinstance(b, numbers.Real):
        return float(a) == float(b)
    return a == b


#: The guide's ideal roofline: every field at its default.
IDEAL = Engine()


def _check_phase(phase):
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {', '.join(PHASES)}; got {phase!r}")


def engine_for(engine, phase: str, **selectors) -> Engine:
    """The :class:`Engine` that ``engine`` gives for ``phase`` (and a model and GPU).

    Parameters
    ----------
    engine : Engine, Calibration or None
        An ``Engine`` (itself in every phase), an object with an ``engine_for(phase,
        **selectors)`` method (a :class:`~rooflinekit.calibrate.Calibration`, a shipped
        profile) or ``None`` (:data:`IDEAL`).
    phase : {"prefill", "decode", "step"}
        What is timed: a prompt's pass, a decode step, or a mixed step.
    **selectors
        ``model=``, ``gpu=`` (specs or names): what a calibration keyed by them picks from.

    Returns
    -------
    Engine

    Raises
    ------
    TypeError
        ``engine`` is neither, or its ``engine_for`` does not return an ``Engine``.
    """
    _check_phase(phase)
    if engine is None:
        return IDEAL
    if isinstance(engine, Engine):
        return engine
    method = getattr(engine, "engine_for", None)
    if not callable(method) or isinstance(engine, type):
        raise TypeError(f"engine must be an Engine or a Calibration (rooflinekit.Engine(...), "
                        f"rooflinekit.IDEAL, rooflinekit.calibrate.Calibration); got "
                        f"{type(engine).__name__}")
    chosen = method(phase, **{k: v for k, v in selectors.items() if v is not None})
    if not isinstance(chosen, Engine):
        raise TypeError(f"engine.engine_for({phase!r}) must return an Engine; got "
                        f"{type(chosen).__name__}")
    return chosen
