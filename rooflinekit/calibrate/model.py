"""Roofline predictions per measured row, with a calibration or an engine.

:func:`predict` runs the roofline over every row of a measurement table
(:mod:`rooflinekit.calibrate.measurements`) with a :class:`~rooflinekit.profiles.Calibration` or
an engine, grouped by (model, GPU, tp, dtype) so that one call covers a configuration; the fit in
:mod:`rooflinekit.calibrate` evaluates the same grouped predictions. The calibrated model itself
(:class:`~rooflinekit.profiles.Calibration`, its knobs, save and load) lives in
:mod:`rooflinekit.profiles`, below the batchers and the sweep that default to it; everything
public of it is re-exported by :mod:`rooflinekit.calibrate`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping

import numpy as np
import xarray as xr

from rooflinekit import catalog, roofline
from rooflinekit._validation import check_mapping, check_one_of
from rooflinekit.calibrate.measurements import MEASUREMENT, _check_measurements
from rooflinekit.dtypes import bytes_per_element, is_mxfp4
from rooflinekit.hardware import GPU
from rooflinekit.models import ModelShape
from rooflinekit.profiles import (
    ENGINE_IDEAL_KNOBS,
    ENGINE_KNOBS,
    GROUP_FIELDS,
    IDEAL_KNOBS,
    KNOBS,
    LINK_KNOBS,
    PARAMETERS,
    PHASES,
    Calibration,
    load_calibration,
    save_calibration,
)
from rooflinekit.roofline import IDEAL, Engine

__all__ = ["PHASE", "PARAMETER", "PHASES", "PARAMETERS", "ENGINE_KNOBS", "LINK_KNOBS", "KNOBS",
           "GROUP_FIELDS", "WORKLOADS",
           "IDEAL", "Calibration", "save_calibration", "load_calibration", "predict"]

#: Dimension of per-phase results: "prefill" (fitted to TTFT) and "decode" (fitted to TPOT/ITL).
PHASE = "phase"
#: Dimension of fitted knobs.
PARAMETER = "parameter"

#: How a measured row maps onto engine steps (see :func:`~rooflinekit.calibrate.calibrate`).
WORKLOADS = ("isolated", "serving", "loaded")
#: The workloads that map a row onto a continuous-batching server's mixed steps.
_SERVING = ("serving", "loaded")


# -- specs and the roofline --------------------------------------------------------------------

def _lookup(kind: str, name: str, overrides: Mapping | None, row_no: int, file: str = ""):
    if overrides:
        for key, spec in overrides.items():
            if str(key).lower() == name.lower():
                return spec
    try:
        return catalog.gpu(name) if kind == "gpu" else catalog.model(name)
    except ValueError as exc:
        where = f"{file}: " if file else ""
        raise ValueError(f"{where}measurement {row_no}: field '{kind}': {exc}") from None


def _check_overrides(name, mapping, kind):
    return check_mapping(name, mapping, kind, allow_none=True)


def _knob_priors(engine: Engine) -> dict:
    """Every knob's value in ``engine``: the fit's priors; ``interconnect_latency`` ``None``, as
    the engine's own link latency is in :class:`_Groups`' terms already.
    """
    return {**{k: getattr(engine, k) for k in KNOBS}, "interconnect_latency": None}


def _check_engine(engine) -> Engine:
    """``engine=`` of the fit and the predictions: an :class:`~rooflinekit.Engine` of single
    numbers (``None``: :data:`~rooflinekit.IDEAL`)."""
    if engine is None:
        return IDEAL
    if not isinstance(engine, Engine):
        hint = " (a calibration's own engine is its .base)" if hasattr(
            engine, "engine_for") else ""
        raise TypeError(f"engine must be a rooflinekit.Engine (the base the knobs are fitted "
                        f"on) or None; got {type(engine).__name__}{hint}")
    for name, value in engine.fields().items():
        if isinstance(value, (xr.DataArray, np.ndarray)):
            raise TypeError(f"engine.{name} must be a single number to time measured rows; "
                            f"got {np.size(value)} values")
    return engine


class _Groups:
    """Rows of a measurement table grouped by hardware configuration (one roofline call per
    configuration per evaluation); ``engine`` is the base, whose knobs are :attr:`priors`.
    """

    def __init__(self, ds: xr.Dataset, models: Mapping, gpus: Mapping, engine: Engine,
                 workload: str = "isolated"):
        n = ds.sizes[MEASUREMENT]
        self.workload = workload
        self.engine = engine
        self.priors = _knob_priors(engine)
        self.n = n
        keys = {}
        model_names = ds["model"].values
        gpu_names = ds["gpu"].values
        blank = np.array([""] * n, dtype=object)
        dtypes = ds["dtype"].values if "dtype" in ds else blank
        kv_dtypes = ds["kv_dtype"].values if "kv_dtype" in ds else blank
        tps = ds["tp"].values
        for i in range(n):
            key = (str(model_names[i]), str(gpu_names[i]), int(tps[i]), str(dtypes[i] or ""),
                   str(kv_dtypes[i] or ""))
            keys.setdefault(key, []).append(i)
        self.groups = []
        for (mname, gname, tp, dtype, kv_dtype), rows in keys.items():
            file = str(ds.attrs.get("file", ""))
            model = _lookup("model", mname, models, rows[0], file)
            gpu = _lookup("gpu", gname, gpus, rows[0], file)
            if dtype and model.bytes_per_param != _bytes(dtype):
                model = model.replace(bytes_per_param=dtype)
            if kv_dtype and model.kv_bytes_per_element != _bytes(kv_dtype):
                model = model.replace(kv_bytes_per_element=kv_dtype)
            # a row's weight format picks the GPU's peak unless the engine names its own
            mine = engine.replace(compute_dtype=dtype) if dtype and \
                engine.compute_dtype is None else engine
            self.groups.append((np.asarray(rows), model, gpu, tp, mine))
        prompt = ds["prompt_tokens"].values.astype(float)
        output = ds["output_tokens"].values.astype(float)
        ctx = ds["context_length"].values.astype(float) if "context_length" in ds else \
            np.full(n, np.nan)
        # means over a run may be fractional; a step decodes at least one sequence
        self.prompt = prompt
        # a static batch's TTFT is one prefill step of all its prompts: B x the tokens, and
        # B prompts' attention, each prompt attending to its own tokens only (as one prompt
        # of B x s tokens, B(B s)^2/2 pairs against B s^2/2, a batch of 8 prompts of 8K tokens
        # came out 39 % slow against the kernel sums, and the fits pushed every GEMM
        # efficiency to its bound to make up)
        kinds = ds["ttft_kind"].values if "ttft_kind" in ds else blank
        static = np.array([str(k) == "static_batch" for k in kinds])
        self.prefill_prompts = np.where(static, np.maximum(
            ds["batch_size"].values.astype(float), 1.0), 1.0)
        self.prefill_tokens = prompt * self.prefill_prompts
        self.context = np.where(np.isnan(ctx), prompt + output / 2.0, ctx)
        self.batch = np.maximum(ds["batch_size"].values.astype(float), 1.0)
        self.output = output
        if workload in _SERVING:
            # KV tokens each decoding sequence reads (window-capped), per configuration
            self.kv_read = np.empty(n)
            for idx, model, _, _, _ in self.groups:
                self.kv_read[idx] = roofline.effective_kv_tokens(model, self.context[idx])
        # A fit evaluates thousands of knob settings; the knobs enter a step only as
        # max((compute + n½·gemm) / ce, weights / be + kv / be_kv) + overheads + communication,
        # so each row's terms are taken from the step kernel once and every setting is then
        # plain arithmetic.
        self.terms = {phase: self._terms(phase) for phase in PHASES}

    def _prefill_share(self, idx: np.ndarray, cost) -> np.ndarray:
        """Share of a request's life spent in prefill at the ideal roofline, per row [1]:
        ``s = T_prefill / (T_prefill + output · T_decode)`` (mean field; from the ideal model, so
        that the knobs stay linear).
        """
        kernel = roofline.mixed_step_time_kernel
        f, w = cost.full_attention_fraction, cost.sliding_window
        out = np.zeros(idx.size)
        for j, i in enumerate(idx):
            p, b = float(self.prompt[i]), float(self.batch[i])
            if b <= 1.0:
                continue
            pairs = roofline.prefill_context_tokens_kernel(p, 0.0, f, w)
            prefill = kernel(*cost, 0.0, p, 0.0, pairs, p)
            decode = kernel(*cost, b, 0.0, b * float(self.kv_read[i]), 0.0, 0.0)
            out[j] = prefill / (prefill + max(float(self.output[i]), 1.0) * decode)
        return out

    def _steps(self, phase: str, idx: np.ndarray, model, cost) -> tuple:
        """The kernel's token counts (decode, prompt, KV read, attention pairs, longest prompt
        chunk) of rows ``idx``, as the roofline functions build them (``test_calibrate`` holds
        the predictions to those).
        """
        b = self.batch[idx]
        f, w = cost.full_attention_fraction, cost.sliding_window
        if self.workload in _SERVING:
            # one engine step as a continuous-batching server runs it (Sarathi-Serve):
            # TTFT's step carries the new prompt beside the other b - 1 decodes; a decode
            # step carries b decodes and, on average, b / output new prompts' tokens
            if phase == "prefill":
                decodes, kv = b - 1.0, (b - 1.0) * self.kv_read[idx]
                prompt = self.prompt[idx]
                if self.workload == "loaded":
                    prompt = prompt * (1.0 + (b - 1.0) * self._prefill_share(idx, cost))
            else:
                decodes = b
                prompt = b / np.maximum(self.output[idx], 1.0) * self.prompt[idx]
                kv = b * self.kv_read[idx]
        elif phase == "prefill":
            decodes, prompt, kv = np.zeros(idx.size), self.prefill_tokens[idx], np.zeros(idx.size)
        else:
            decodes, prompt = b, np.zeros(idx.size)
            kv = b * np.asarray(roofline.effective_kv_tokens(model, self.context[idx]), dtype=float)
        # each prompt of the step attends to its own tokens: a static batch's are B apart
        prompts = self.prefill_prompts[idx] if phase == "prefill" and \
            self.workload not in _SERVING else np.ones(idx.size)
        pairs = np.array([n * roofline.prefill_context_tokens_kernel(float(p / n), 0.0, f, w)
                          if p > 0 else 0.0 for p, n in zip(prompt, prompts)])
        longest = np.where(prompt > 0, prompt / prompts, 0.0)
        return decodes, prompt, kv, pairs, longest

    def _terms(self, phase: str) -> dict:
        """Per row, each at full efficiency and no engine cost [s unless stated]: ``compute``,
        ``gemm`` (compute per unit of ``gemm_half_tokens`` [s/token]), ``memory`` (all traffic),
        ``kv`` (its KV part), ``comm`` (all-reduce at the GPU's link latency), ``comm_bytes``
        (its bandwidth part), ``comm_host_bytes`` (that part with ``host_traffic_share`` 1:
        all past the peer-to-peer domain over the GPU's shared host link), ``hops`` (latency
        per unit of hop latency [1]), ``one_shot``, ``one_shot_bytes`` and ``one_shot_hops``
        (the same three of the engine's one-shot alternative; infinite where it has none),
        ``cross_hosts`` (all-reduces past one host's GPUs:
        latency per unit of ``cross_host_allreduce_latency`` [1]), ``runs``, ``decodes`` (decode tokens of the step [1]),
        ``layers`` (``runs × n_layers`` [1]), ``moe_layers`` (``layers`` of a model with more
        than one expert, else 0 [1]), ``mla_layers`` (``runs × n_kv_layers`` of a model with
        multi-head latent attention, else 0 [1]), ``cycles`` (``layers / boost_clock`` [s]),
        ``weights`` (the weight reads' part of ``memory``), ``low_precision_layers`` (the
        layers that pay ``low_precision_layer_overhead``: ``layers`` where the matmuls run on
        a low-precision path, times
        :data:`rooflinekit.roofline.engine.ATTENTION_LOW_PRECISION_SHARE` for a
        mixture-of-experts model, else 0 [1]), ``low_precision`` (1 on such a path, else 0
        [1]), ``fp4`` (1 on an FP4 path, else 0 [1]), ``attention`` (the attention part of
        ``compute``), ``experts`` (the routed experts' GEMMs' part of
        ``compute``), ``expert_gemm`` (their part of ``gemm``), ``mxfp4`` (1 where those
        experts are MXFP4 ones, which ``mxfp4_moe_compute_share`` times, else 0 [1]),
        ``narrow_heads`` (:func:`~rooflinekit.roofline.narrow_head_halvings`: the power of
        ``narrow_head_attention_share`` attention runs at [1]), ``prompt`` (``runs ×
        min(prompt tokens, 1)``) and a hybrid's recurrent prompt pass per unit of its knobs:
        ``recurrent_chain`` (per unit of ``recurrent_chain_time`` [s/s]), ``recurrent_state``
        (of ``recurrent_element_time``) and ``recurrent_layers`` (``prompt × n_recurrent_layers``
        [1])."""
        names = ("compute", "gemm", "memory", "kv", "weights", "comm", "comm_bytes",
                 "comm_host_bytes", "hops", "one_shot", "one_shot_bytes", "one_shot_hops",
                 "cross_hosts", "runs", "decodes", "cycles",
                 "layers", "moe_layers", "mla_layers", "low_precision_layers",
                 "low_precision", "fp4", "attention", "experts", "expert_gemm", "mxfp4",
                 "narrow_heads", "prompt", "recurrent_chain", "recurrent_state", "recurrent_layers")
        terms = {name: np.full(self.n, np.nan) for name in names}
        kernel = roofline.mixed_step_time_kernel
        for idx, model, gpu, tp, engine in self.groups:
            # the knobs enter in predict(); the engine's link latency is the GPU's own here
            plain = engine.replace(**{k: v for k, v in IDEAL.fields().items()
                                      if k in KNOBS and k != "interconnect_latency"})
            cost = roofline.step_cost_coefficients(model, gpu, tp, engine=plain)
            unit_hop = roofline.step_cost_coefficients(
                model, gpu, tp, engine=plain.replace(interconnect_latency=1.0))
            # the bandwidth part with all the traffic on a shared host link, where the GPU has one
            unit_host = roofline.step_cost_coefficients(
                model, gpu, tp, engine=plain.replace(host_traffic_share=1.0))
            # layers that pay the low-precision GEMMs' overhead: n_layers on such a path, else 0
            unit_quantised = roofline.step_cost_coefficients(
                model, gpu, tp, engine=plain.replace(low_precision_layer_overhead=1.0))
            # an FP4 path: the weight bytes an FP4 bandwidth share of one half doubles
            unit_fp4 = roofline.step_cost_coefficients(
                model, gpu, tp, engine=plain.replace(fp4_bandwidth_efficiency=0.5))
            silent = {"allreduce_bytes_per_token": 0.0, "allreduce_latency": 0.0}
            # each all-reduce alternative alone: the two-stage with no one-shot beside it, and
            # the one-shot in its place (an infinite latency where the engine has none)
            two_stage = {"one_shot_allreduce_bytes_per_token": 0.0,
                         "one_shot_allreduce_latency": math.inf}
            one_shot = {**two_stage,
                        "allreduce_bytes_per_token": cost.one_shot_allreduce_bytes_per_token,
                        "allreduce_latency": cost.one_shot_allreduce_latency}
            no_flops = {"flops_per_token": 0.0, "lm_head_flops_per_token": 0.0,
                        "attention_flops_per_pair": 0.0}
            alone = {
                "compute": cost._replace(bandwidth=math.inf, **silent),
                "attention": cost._replace(bandwidth=math.inf, flops_per_token=0.0,
                                           lm_head_flops_per_token=0.0, **silent),
                "memory": cost._replace(**no_flops, **silent),
                "kv": cost._replace(**no_flops, **silent, nonexpert_weight_bytes=0.0,
                                    expert_weight_bytes=0.0, embedding_row_bytes=0.0,
                                    prefill_bytes_per_token=0.0,
                                    state_bytes_per_decode_token=0.0),
                "weights": cost._replace(**no_flops, **silent, embedding_row_bytes=0.0,
                                         kv_bytes_per_token=0.0, prefill_bytes_per_token=0.0,
                                         state_bytes_per_decode_token=0.0),
                "comm": cost._replace(**no_flops, bandwidth=math.inf, **two_stage),
                "comm_bytes": cost._replace(**no_flops, bandwidth=math.inf, **two_stage,
                                            allreduce_latency=0.0),
                "comm_host_bytes": unit_host._replace(**no_flops, bandwidth=math.inf,
                                                      **two_stage, allreduce_latency=0.0),
                "one_shot": cost._replace(**no_flops, bandwidth=math.inf, **one_shot),
                "one_shot_bytes": cost._replace(**no_flops, bandwidth=math.inf,
                                                **{**one_shot, "allreduce_latency": 0.0}),
            }
            steps = list(zip(*self._steps(phase, idx, model, cost)))
            for name, part in alone.items():
                terms[name][idx] = [kernel(*part, *step) for step in steps]
            runs = np.array([min(d + p, 1.0) for d, p, _, _, _ in steps])
            terms["runs"][idx] = runs
            terms["decodes"][idx] = [d for d, _, _, _, _ in steps]
            # a hybrid's recurrent prompt pass per unit of each recurrent knob (0 without
            # such layers): its chain and its state updates (its launches: after "prompt")
            unit = {k: roofline.step_cost_coefficients(model, gpu, tp,
                                                       engine=plain.replace(**{k: 1.0}))
                    for k in ("recurrent_chain_time", "recurrent_element_time")}
            terms["recurrent_chain"][idx] = [
                r * unit["recurrent_chain_time"].prefill_chain_time * longest
                for r, (_, _, _, _, longest) in zip(runs, steps)]
            terms["recurrent_state"][idx] = [
                r * unit["recurrent_element_time"].prefill_state_time * p
                for r, (_, p, _, _, _) in zip(runs, steps)]
            terms["gemm"][idx] = runs * (cost.flops_per_token + cost.lm_head_flops_per_token) \
                / cost.peak_flops
            # the routed experts' GEMMs alone (0 for a dense model): what a share of one half
            # adds to the FLOPs per token
            doubled = roofline.step_cost_coefficients(
                model, gpu, tp, engine=plain.replace(moe_compute_share=0.5))
            experts = runs * (doubled.flops_per_token - cost.flops_per_token) / cost.peak_flops
            terms["expert_gemm"][idx] = experts
            terms["experts"][idx] = [e * (d + p) for e, (d, p, _, _, _) in zip(experts, steps)]
            # experts that mxfp4_moe_compute_share times instead (1: MXFP4 ones, gpt-oss)
            terms["mxfp4"][idx] = float(model.n_experts > 1
                                        and is_mxfp4(model.bytes_per_expert_param))
            terms["narrow_heads"][idx] = roofline.narrow_head_halvings(model.head_dim)
            terms["hops"][idx] = runs * unit_hop.allreduce_latency
            terms["one_shot_hops"][idx] = runs * unit_hop.one_shot_allreduce_latency
            # all-reduces past one host's GPUs (0 on a GPU without host_gpus, or within one)
            unit_cross = roofline.step_cost_coefficients(
                model, gpu, tp, engine=plain.replace(cross_host_allreduce_latency=1.0))
            terms["cross_hosts"][idx] = runs * (unit_cross.allreduce_latency
                                                - cost.allreduce_latency)
            terms["layers"][idx] = runs * model.n_layers
            terms["moe_layers"][idx] = runs * model.n_layers * float(model.n_experts > 1)
            terms["mla_layers"][idx] = runs * model.n_kv_layers * float(model.is_mla)
            # seconds per unit of layer_cycles: layers over the clock (NaN: no clock known)
            clock = getattr(gpu, "boost_clock", None)
            terms["cycles"][idx] = runs * model.n_layers / (math.nan if clock is None else clock)
            terms["low_precision_layers"][idx] = runs * unit_quantised.step_overhead
            terms["low_precision"][idx] = float(unit_quantised.step_overhead > 0.0)
            terms["fp4"][idx] = float(unit_fp4.nonexpert_weight_bytes
                                      != cost.nonexpert_weight_bytes)
            terms["prompt"][idx] = [r * min(p, 1.0) for r, (_, p, _, _, _) in zip(runs, steps)]
            terms["recurrent_layers"][idx] = terms["prompt"][idx] * model.n_recurrent_layers
        return terms

    def predict(self, phase: str, params: Mapping, rows: np.ndarray | None = None) -> np.ndarray:
        """Roofline seconds of ``phase`` for every row (or the given rows), with ``params``.

        ``params`` holds knobs (:data:`KNOBS`); those it lacks take their ideal values (not the
        base engine's: the fit passes :attr:`priors` itself). With the engine knobs at their
        defaults this is the three-knob arithmetic exactly.
        """
        knobs = {**IDEAL_KNOBS, **ENGINE_IDEAL_KNOBS, **{k: v for k, v in params.items() if k in KNOBS}}
        t = self.terms[phase]
        compute = t["compute"]
        if knobs["gemm_half_tokens"]:
            compute = compute + knobs["gemm_half_tokens"] * t["gemm"]
        share = knobs.get("moe_compute_share", 1.0)
        if knobs.get("mxfp4_moe_compute_share") is not None:
            share = np.where(t["mxfp4"] > 0.0, knobs["mxfp4_moe_compute_share"], share)
        if np.any(share != 1.0):    # 1 (default): the lines above, to the bit
            compute = compute + (1.0 / share - 1.0) * (
                t["experts"] + knobs["gemm_half_tokens"] * t["expert_gemm"])
        memory = t["memory"] / knobs["bandwidth_efficiency"]
        if knobs["kv_bandwidth_efficiency"] is not None:
            memory = memory + t["kv"] * (1.0 / knobs["kv_bandwidth_efficiency"]
                                         - 1.0 / knobs["bandwidth_efficiency"])
        streamed = knobs.get("low_precision_bandwidth_efficiency")
        fp4_streamed = knobs.get("fp4_bandwidth_efficiency")
        if streamed is not None or fp4_streamed is not None:
            # each path's weights at its own share (the 16-bit rows' term is exactly 0)
            share = knobs["bandwidth_efficiency"] if streamed is None else np.where(
                t["low_precision"] > 0.0, streamed, knobs["bandwidth_efficiency"])
            if fp4_streamed is not None:
                share = np.where(t["fp4"] > 0.0, fp4_streamed, share)
            memory = memory + t["weights"] * (1.0 / share - 1.0 / knobs["bandwidth_efficiency"])
        link_bytes = t["comm_bytes"]
        share = knobs["host_traffic_share"]
        if share:           # 0 (default): each GPU's own link, to the bit
            link_bytes = link_bytes + share * (t["comm_host_bytes"] - t["comm_bytes"])
        link = link_bytes / knobs["interconnect_efficiency"]
        # comm holds the latency and the own-link bytes at full share: swap those bytes for link
        comm = t["comm"] + (link - t["comm_bytes"]) if knobs["interconnect_latency"] is None \
            else link + knobs["interconnect_latency"] * t["hops"]
        cross = knobs["cross_host_allreduce_latency"]
        if np.any(np.asarray(cross) != 0):      # 0 (default): the line above, to the bit
            comm = comm + cross * t["cross_hosts"]
        one_shot = np.isfinite(t["one_shot_hops"])
        if np.any(one_shot):    # the engine's one-shot alternative, where faster
            one_link = t["one_shot_bytes"] / knobs["interconnect_efficiency"]
            hops = np.where(one_shot, t["one_shot_hops"], 0.0)
            alone = t["one_shot"] + (one_link - t["one_shot_bytes"]) \
                if knobs["interconnect_latency"] is None \
                else one_link + knobs["interconnect_latency"] * hops
            comm = np.where(one_shot, np.minimum(comm, alone), comm)
        low_efficiency = knobs.get("low_precision_compute_efficiency")
        fp4_efficiency = knobs.get("fp4_compute_efficiency")
        attention_efficiency = knobs.get("attention_compute_efficiency")
        narrow = knobs.get("narrow_head_attention_share", 1.0)
        if low_efficiency is None and fp4_efficiency is None and attention_efficiency is None \
                and narrow == 1.0:
            compute = compute / knobs["compute_efficiency"]
        else:       # the weight GEMMs at their format's share, attention at its own
            gemm = knobs["compute_efficiency"] if low_efficiency is None else np.where(
                t["low_precision"] > 0.0, low_efficiency, knobs["compute_efficiency"])
            if fp4_efficiency is not None:
                gemm = np.where(t["fp4"] > 0.0, fp4_efficiency, gemm)
            attention = knobs["compute_efficiency"] if attention_efficiency is None else \
                attention_efficiency
            if narrow != 1.0:     # 1 (default): the line above, to the bit
                attention = attention * narrow ** t["narrow_heads"]
            compute = (compute - t["attention"]) / gemm + t["attention"] / attention
        out = (np.maximum(compute, memory)
               + t["runs"] * knobs["step_overhead"] + comm)
        if knobs["layer_overhead"] or knobs["prefill_overhead"]:
            out = out + t["layers"] * knobs["layer_overhead"] + \
                t["prompt"] * knobs["prefill_overhead"]
        if knobs.get("layer_cycles"):
            cycles = t["cycles"] if rows is None else t["cycles"][rows]
            if np.isnan(cycles).any():
                raise ValueError("layer_cycles needs every row's GPU to give its boost_clock "
                                 "(the catalogue's boost_clock_mhz)")
            out = out + t["cycles"] * knobs["layer_cycles"]
        moe = knobs.get("moe_layer_overhead", 0.0)
        if moe:             # 0 (default): the lines above, to the bit
            out = out + t["moe_layers"] * moe
        mla = knobs.get("mla_layer_overhead", 0.0)
        if mla:             # 0 (default): the lines above, to the bit
            out = out + t["mla_layers"] * mla
        chain, element, launch = (knobs.get(k, 0.0) for k in (
            "recurrent_chain_time", "recurrent_element_time", "recurrent_layer_overhead"))
        if chain or element or launch:     # 0 (default): the lines above, to the bit
            out = out + np.maximum(chain * t["recurrent_chain"], element * t["recurrent_state"]) \
                + launch * t["recurrent_layers"]
        per_sequence = knobs.get("sequence_overhead", 0.0)
        if per_sequence:    # 0 (default): the lines above, to the bit
            out = out + t["decodes"] * per_sequence
        quantised = knobs.get("low_precision_layer_overhead", 0.0)
        if quantised:
            out = out + t["low_precision_layers"] * quantised
        if phase == "prefill" and knobs["frontend_latency"]:
            out = out + knobs["frontend_latency"]     # a TTFT row: once, outside the steps
        if rows is not None:
            keep = np.zeros(self.n, dtype=bool)
            keep[rows] = True
            out = np.where(keep, out, np.nan)
        return out


def _row_keys(ds, group_by) -> list:
    """Each row's knob-set key: its text in every ``group_by`` column ("" where blank), GPU
    and model names in the catalogue's spelling (rows saying "h100" and "H100-SXM-80GB" are
    one set, as a :class:`~rooflinekit.profiles.Calibration` keys it)."""
    n = ds.sizes[MEASUREMENT]
    if not group_by:
        return [None] * n
    columns = [ds[field].values for field in group_by]
    return [tuple(_catalogue_name(field, _text(col[i])) for field, col in zip(group_by, columns))
            for i in range(n)]


@functools.lru_cache(maxsize=4096)
def _catalogue_name(field: str, name: str) -> str:
    """``name`` as the catalogue spells it where ``field`` is "gpu" or "model" and it is a
    catalogue name or alias; otherwise (blank, a name of the user's own) as it is."""
    if not name or field not in ("gpu", "model"):
        return name
    try:
        return (catalog.gpu if field == "gpu" else catalog.model)(name).name
    except ValueError:
        return name


def _text(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def _predict_calibrated(groups, phase, calibration, keys, rows=None):
    """Each row's prediction with its knob set (else the shared knobs); a knob the calibration
    does not hold (every knob, for an :class:`~rooflinekit.Engine`) takes ``groups.priors``.
    """
    if isinstance(calibration, Engine):
        return groups.predict(phase, groups.priors, rows)
    if not calibration.groups:
        return groups.predict(phase, {**groups.priors, **calibration._knobs(phase)}, rows)
    out = np.full(groups.n, np.nan)
    # each row's set as a selection would find it (names compared without case)
    found = {key: calibration.group_for(warn=False, **dict(zip(calibration.group_by, key)))
             for key in dict.fromkeys(keys) if key is not None}
    chosen = [None if key is None else found[key] for key in keys]
    for key in dict.fromkeys(chosen):
        mine = np.flatnonzero([c == key for c in chosen])
        if rows is not None:
            mine = np.intersect1d(mine, rows)
        if not mine.size:
            continue
        knobs = {**groups.priors, **calibration._knobs(phase, key)}
        out[mine] = groups.predict(phase, knobs, mine)[mine]
    return out


def _bytes(dtype):
    return bytes_per_element(dtype)


def _targets(ds: xr.Dataset, phase: str) -> np.ndarray:
    """Measured seconds of a phase per row: TTFT for prefill; TPOT, else ITL, for decode (TPOT is
    immune to servers that stream several tokens per chunk).
    """
    if phase == "prefill":
        return ds["ttft"].values.astype(float)
    tpot = ds["tpot"].values.astype(float)
    itl = ds["itl"].values.astype(float)
    return np.where(np.isnan(tpot), itl, tpot)


def _check_workload(workload) -> str:
    return check_one_of("workload", workload, WORKLOADS)


def predict(measurements, calibration: Calibration | Engine | None = None, *, models=None,
            gpus=None, workload: str = "isolated") -> xr.Dataset:
    """Roofline TTFT and decode time for every measured configuration [s].

    Parameters
    ----------
    measurements : Dataset, list of rows or path
        The configurations (see :func:`measurements_from_records`).
    calibration : Calibration, Engine or None
        What times the rows. A :class:`Calibration`: each phase's knobs (each row's knob set
        where it keeps them) on its :attr:`~Calibration.base` engine. An
        :class:`~rooflinekit.Engine`: a calibration that holds no knobs, so every field is the
        engine's own in both phases (the roofline functions called with ``engine=``). Default
        :data:`~rooflinekit.IDEAL`.
    models, gpus : mapping of name -> ModelShape / GPU, optional
        Specs for names that are not in the catalogue (they take precedence).
    workload : {"isolated", "serving", "loaded"}
        How a measured row maps onto engine steps; see :func:`calibrate`. Default "isolated".

    Returns
    -------
    xarray.Dataset
        ``prefill`` and ``decode`` [s] over ``measurement``; ``attrs["model_quality"]`` is the
        calibration's or the engine's label.

    Raises
    ------
    TypeError
        ``calibration`` is neither, or an engine field is not a single number.
    """
    ds = _check_measurements(measurements)
    calibration = IDEAL if calibration is None else calibration
    if not isinstance(calibration, (Calibration, Engine)):
        raise TypeError(f"calibration must be a Calibration, a rooflinekit.Engine or None; got "
                        f"{type(calibration).__name__}")
    engine = calibration if isinstance(calibration, Engine) else calibration.base
    groups = _Groups(ds, _check_overrides("models", models, ModelShape),
                     _check_overrides("gpus", gpus, GPU), _check_engine(engine),
                     _check_workload(workload))
    group_by = getattr(calibration, "group_by", ())
    keys = _row_keys(ds, group_by) if all(field in ds for field in group_by) else \
        [None] * ds.sizes[MEASUREMENT]
    return xr.Dataset(
        {phase: ((MEASUREMENT,), _predict_calibrated(groups, phase, calibration, keys),
                 {"units": "s", "long_name": f"roofline {phase} time"}) for phase in PHASES},
        coords={MEASUREMENT: ds[MEASUREMENT].values},
        attrs={"model_quality": calibration.label})
