"""Fit what vLLM keeps on each GPU beside the weights and the KV cache, from its start-up logs.

Reads ``tests/data/engine_logs/vllm_memory.csv`` (vLLM's own memory-profiling figures, one row
per server start, each sourced) and writes ``rooflinekit/data/engine_memory.toml``, which
:func:`rooflinekit.profiles.footprint` reads. Run from the repository root::

    python scripts/fit_engine_memory.py            # print the fit and its errors
    python scripts/fit_engine_memory.py --write    # and rewrite the data file

The fit uses the rows of one vLLM release (``VERSION``) whose model is in the catalogue and
whose log prints the activation peak, on one pipeline stage:

- ``sampler_bytes_per_logit``: the median, over the dense models' 16-bit rows, of the activation
  peak over ``min(max_num_seqs, max_num_batched_tokens) × vocabulary`` (vLLM's profiling run
  ends with a dummy sampling step over that many rows of logits, which is the peak);
- ``non_torch_gib`` and ``non_torch_parallel_gib``: the medians of the non-torch memory at
  tensor parallelism 1 and above 1 (the communicators' buffers);
- an MoE model adds the fused-MoE kernel's working tensors, which the fit does not touch:
  ``tokens × experts_per_token × (max(2·expert_intermediate/tp, hidden) + expert_intermediate/tp)``
  16-bit activations (:func:`rooflinekit.profiles.footprint.moe_workspace_bytes`).

Errors are reported on the KV cache vLLM logged (``gpu_memory_utilization × total − weights −
activation peak − non-torch`` with the log's weights and total): in sample, and leaving each
model out of the medians in turn.

SGLang's row (``tests/data/engine_logs/sglang_memory.csv``): SGLang sizes its pool as
``mem_fraction_static × A − W`` with ``A`` the memory free before the weights load; its
``non_torch_gib`` and ``non_torch_parallel_gib`` are what the GPU's total less ``A`` leaves
(the CUDA context and communicators) on the logs whose ``A`` is printed or follows (free after
loading plus the weights) and whose GPU's total is known (``SGLANG_LOGS``), at tensor
parallelism 1 and above. Two logs qualify: its errors are in sample.

TensorRT-LLM's row (``tests/data/engine_logs/trtllm_memory.csv``): its PyTorch backend sizes its
cache as ``free_gpu_memory_fraction × (total − peak + tmp_kv)``, ``peak`` the torch and non-torch
peak of a profiling pass that holds a temporary cache of ``tmp_kv``; so the memory it keeps
beside the weights is ``peak − weights − tmp_kv`` (activations, CUDA graphs, communicators'
workspaces: one figure). ``non_torch_parallel_gib`` is its median over the logs of a discrete
GPU (the unified-memory DGX Spark's counts the host's use too), all at tensor parallelism 2 to 8;
no such log is at 1, so ``non_torch_gib`` takes the same figure. Errors on the KV cache the logs
print, in sample and leaving each model out; beside them, the error of the rule the planner
used before (the share of the total less the weights alone).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rooflinekit import catalog  # noqa: E402
from rooflinekit.profiles.footprint import moe_workspace_bytes  # noqa: E402

CSV = ROOT / "tests" / "data" / "engine_logs" / "vllm_memory.csv"
OUT = ROOT / "rooflinekit" / "data" / "engine_memory.toml"
VERSION = "0.19.0"
GIB = 2**30
SGLANG_CSV = ROOT / "tests" / "data" / "engine_logs" / "sglang_memory.csv"
TRTLLM_CSV = ROOT / "tests" / "data" / "engine_logs" / "trtllm_memory.csv"
SGLANG_VERSION = "0.5.6"
#: The SGLang logs the fit reads: each one's GPU total [GiB] (the driver's, as PyTorch reports
#: it) and the mem_fraction_static it ran at where its log does not print it.
SGLANG_LOGS = {
    # an 80 GB card (78.59 GiB free before loading); the H100's 79.19 (vllm_memory.csv); the
    # 0.4.4 rule of its date: 0.88 at TP 1 on <= 80 GiB (server_args.py of sglang 0.4.6)
    "sglang-pr4760-llama31-8b-tp1": (79.19, 0.88),
    # an H200 (137.34 GiB free at loading): 139.72 GiB as vLLM reads it (vllm-project/vllm
    # issue #23192); SGLang 0.5's rule at TP 8, 143,771 MiB: 0.897
    "sglang-pr11716-llama33-70b-tp8": (139.72, 0.897),
}


def read_rows(path=CSV) -> list[dict]:
    """The CSV's rows (comment lines skipped), as strings."""
    with open(path, newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _number(text):
    return float(text) if text not in ("", None) else None


def fit_rows(rows, version=VERSION) -> list[dict]:
    """The rows the fit uses: ``version``, a catalogue model, every figure printed, one stage."""
    out = []
    for r in rows:
        if r["vllm_version"] != version or not r["model"] or r["pp"] not in ("", "1"):
            continue
        figures = ("total_gpu_memory_gib", "weights_gib", "activation_peak_gib",
                   "non_torch_gib", "available_kv_gib", "gpu_memory_utilization",
                   "max_num_seqs", "max_num_batched_tokens")
        if any(r[f] in ("", None) for f in figures):
            continue
        model = catalog.model(r["model"])
        out.append({
            "id": r["id"], "model": model, "tp": int(r["tp"] or 1),
            "seqs": int(r["max_num_seqs"]), "tokens": int(r["max_num_batched_tokens"]),
            "total": float(r["total_gpu_memory_gib"]), "weights": float(r["weights_gib"]),
            "activation": float(r["activation_peak_gib"]),
            "non_torch": float(r["non_torch_gib"]), "kv": float(r["available_kv_gib"]),
            "utilization": float(r["gpu_memory_utilization"]),
            "fp32": "float32" in r["notes"]})
    return out


def _sampler_rows(row) -> int:
    return min(row["seqs"], row["tokens"])


def fit(rows) -> dict:
    """The medians (see the module's docstring) over ``rows`` of :func:`fit_rows`."""
    dense = [r for r in rows if r["model"].n_experts == 1 and not r["fp32"]]
    per_logit = [r["activation"] * GIB / (_sampler_rows(r) * r["model"].vocab_size)
                 for r in dense]
    return {"sampler_bytes_per_logit": statistics.median(per_logit),
            "non_torch_gib": statistics.median(r["non_torch"] for r in rows if r["tp"] == 1),
            "non_torch_parallel_gib": statistics.median(r["non_torch"] for r in rows
                                                        if r["tp"] > 1)}


def predict(row, knobs) -> dict:
    """Activation peak, non-torch memory and KV cache [GiB] of one row by ``knobs``."""
    model = row["model"]
    activation = (knobs["sampler_bytes_per_logit"] * _sampler_rows(row) * model.vocab_size
                  + moe_workspace_bytes(model, row["tp"], row["tokens"])) / GIB
    non_torch = knobs["non_torch_gib"] if row["tp"] == 1 else knobs["non_torch_parallel_gib"]
    kv = row["utilization"] * row["total"] - row["weights"] - activation - non_torch
    return {"activation": activation, "non_torch": non_torch, "kv": kv}


def errors(rows) -> dict:
    """KV-cache errors [GiB] in sample and leaving each model out."""
    knobs = fit(rows)
    inside = {r["id"]: predict(r, knobs)["kv"] - r["kv"] for r in rows}
    held = {}
    for name in sorted({r["model"].name for r in rows}):
        rest = [r for r in rows if r["model"].name != name]
        if not any(r["model"].n_experts == 1 and not r["fp32"] for r in rest):
            continue
        knobs_out = fit(rest)
        for r in rows:
            if r["model"].name == name:
                held[r["id"]] = predict(r, knobs_out)["kv"] - r["kv"]
    return {"in_sample": inside, "held_out": held}


def sglang_rows(path=SGLANG_CSV) -> list[dict]:
    """The SGLang logs of :data:`SGLANG_LOGS`: memory free before loading and the pool."""
    out = []
    for r in read_rows(path):
        if r["id"] not in SGLANG_LOGS:
            continue
        total, share = SGLANG_LOGS[r["id"]]
        before = _number(r["load_begin_avail_gb"])
        if before is None:           # free after loading plus what loading took
            before = float(r["load_end_avail_gb"]) + float(r["weights_gb"])
        tp = int(r["tp"] or 1)
        out.append({"id": r["id"], "model": catalog.model(r["model"]), "tp": tp,
                    "total": total, "share": share, "before": before,
                    "kv": float(r["k_size_gb"]) + float(r["v_size_gb"] or 0.0)})
    return out


def fit_sglang(rows) -> dict:
    """SGLang's memory in use before loading [GiB] at TP 1 and above, and the pool errors."""
    knobs = {"non_torch_gib": statistics.median(r["total"] - r["before"] for r in rows
                                                 if r["tp"] == 1),
             "non_torch_parallel_gib": statistics.median(r["total"] - r["before"] for r in rows
                                                          if r["tp"] > 1)}
    errs = {}
    for r in rows:
        c = knobs["non_torch_gib"] if r["tp"] == 1 else knobs["non_torch_parallel_gib"]
        kv = r["share"] * (r["total"] - c) - float(r["model"].weight_bytes) / r["tp"] / GIB
        errs[r["id"]] = kv - r["kv"]
    return {**knobs, "errors": errs}


def trtllm_rows(path=TRTLLM_CSV) -> list[dict]:
    """The TensorRT-LLM logs of a discrete GPU whose peak, weights and temporary cache are
    printed: what each kept beside the weights [GiB] and its KV cache."""
    out = []
    for r in read_rows(path):
        figures = [_number(r[k]) for k in ("device_total_gib", "peak_memory_gib",
                                             "weights_gib", "tmp_kv_gib", "available_kv_gib",
                                             "free_gpu_memory_fraction")]
        if "unified memory" in r["gpu"] or any(f is None for f in figures):
            continue
        total, peak, weights, tmp, kv, fraction = figures
        out.append({"id": r["id"], "model": r["model"] or r["id"], "tp": int(r["tp"] or 1),
                    "version": r["trtllm_version"], "total": total, "weights": weights,
                    "fraction": fraction, "kept": peak - weights - tmp, "kv": kv})
    return out


def fit_trtllm(rows) -> dict:
    """TensorRT-LLM's memory beside the weights [GiB] (the median of :func:`trtllm_rows`'
    ``kept``) and the KV errors [GiB]: in sample, each model left out, and the share-of-total
    rule's (``fraction × total − weights``)."""
    def kv(r, kept):
        return r["fraction"] * (r["total"] - r["weights"] - kept)
    kept = statistics.median(r["kept"] for r in rows)
    held = {}
    for name in sorted({r["model"] for r in rows}):
        rest = statistics.median(r["kept"] for r in rows if r["model"] != name)
        held.update({r["id"]: kv(r, rest) - r["kv"] for r in rows if r["model"] == name})
    return {"non_torch_gib": kept, "non_torch_parallel_gib": kept,
            "in_sample": {r["id"]: kv(r, kept) - r["kv"] for r in rows}, "held_out": held,
            "share_of_total": {r["id"]: r["fraction"] * r["total"] - r["weights"] - r["kv"]
                               for r in rows},
            "versions": sorted({r["version"] for r in rows if r["version"]}),
            "n_rows": len(rows)}


#: The first vLLM release whose memory profiling takes its CUDA graphs off the KV cache by
#: default: vllm-project/vllm#38284, in 0.20.0's source (``vllm/envs.py``:
#: ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS`` defaults to "1", "0" in 0.19.1), though its
#: start-up log says "default since v0.21.0".
CUDA_GRAPH_SINCE = "0.20.0"
#: The same pull request raised the default ``gpu_memory_utilization`` from 0.9 to 0.92
#: (``vllm/config/cache.py``: ``Field(default=0.92, ...)`` in 0.20.0, 0.9 in 0.19.1), "to
#: preemptively address the impact" of the graphs' estimate on the cache.
DEFAULT_SHARE_SINCE, DEFAULT_SHARE_FROM_THEN = "0.20.0", 0.92
#: Releases and models whose profiling took no CUDA graphs off the cache: vLLM's second model
#: runner (``vllm/v1/worker/gpu/model_runner.py``, "Model Runner V2") returned 0 from
#: ``profile_cudagraph_memory`` until 0.29.0 (vllm-project/vllm#53306), and was the default
#: (``vllm/config/vllm.py``, ``_is_default_v2_model_runner_model``) for Qwen3ForCausalLM from
#: 0.22.0, LlamaForCausalLM and MistralForCausalLM from 0.23.0 (both: not MoE, no
#: ``quantization_config``), and every model that is neither MoE nor hybrid from 0.25.0.
CUDA_GRAPH_GAPS = (
    ("0.22.0", "0.25.0", ["Qwen3-8B", "Qwen3-32B"], True,
     "vLLM 0.22.0 vllm/config/vllm.py: DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES = "
     "frozenset({'Qwen3ForCausalLM'}), 'return not model_config.is_moe and not "
     "model_config.is_quantized'; vllm/v1/worker/gpu/model_runner.py: "
     "profile_cudagraph_memory returns 0"),
    ("0.23.0", "0.25.0", ["Llama-2-7B", "Llama-2-13B", "Llama-2-70B", "Llama-3.1-8B",
                          "Llama-3.1-70B", "Llama-3.1-405B", "Llama-3.3-70B",
                          "Mistral-7B-v0.1", "Mistral-Small-3"], True,
     "vLLM 0.23.0 vllm/config/vllm.py: DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES = "
     "{'LlamaForCausalLM', 'MistralForCausalLM', 'Qwen3ForCausalLM'}, not MoE, not quantized"),
    ("0.25.0", "0.29.0", "dense", False,
     "vLLM 0.25.0 to 0.28.0 vllm/config/vllm.py: _is_default_v2_model_runner_model returns "
     "'not model_config.is_moe' for a model that is not hybrid (#44443: 'Model Runner V2 is "
     "now the default for all dense models'); 0.29.0 profiles the graphs (#53306)"),
)


def graph_rows(rows, version=VERSION) -> list[dict]:
    """The rows the CUDA-graph fit uses: ``version``, a catalogue model, graphs captured
    (not ``enforce_eager``) and their memory printed; ``layers`` per pipeline stage."""
    out = []
    for r in rows:
        if r["vllm_version"] != version or not r["model"] or r["cuda_graph_gib"] in ("", None) \
                or r["enforce_eager"].strip().lower() == "true":
            continue
        model = catalog.model(r["model"])
        pp = int(r["pp"] or 1)
        out.append({"id": r["id"], "model": model, "layers": -(-model.n_layers // pp),
                    "graphs": float(r["cuda_graph_gib"])})
    return out


def fit_cuda_graphs(rows) -> dict:
    """``cuda_graph_gib + cuda_graph_gib_per_layer × layers`` by least squares over ``rows``
    of :func:`graph_rows`."""
    n = len(rows)
    mean_x = sum(r["layers"] for r in rows) / n
    mean_y = sum(r["graphs"] for r in rows) / n
    slope = (sum((r["layers"] - mean_x) * (r["graphs"] - mean_y) for r in rows)
             / sum((r["layers"] - mean_x) ** 2 for r in rows))
    return {"cuda_graph_gib": mean_y - slope * mean_x, "cuda_graph_gib_per_layer": slope}


def cuda_graph_errors(rows) -> dict:
    """Graph-memory errors [GiB] in sample and with each model left out of the fit."""
    knobs = fit_cuda_graphs(rows)

    def predict(r, k):
        return k["cuda_graph_gib"] + k["cuda_graph_gib_per_layer"] * r["layers"]
    inside = {r["id"]: predict(r, knobs) - r["graphs"] for r in rows}
    held = {}
    for name in sorted({r["model"].name for r in rows}):
        rest = [r for r in rows if r["model"].name != name]
        if len({r["layers"] for r in rest}) < 2:
            continue
        k = fit_cuda_graphs(rest)
        held.update({r["id"]: predict(r, k) - r["graphs"] for r in rows
                     if r["model"].name == name})
    return {"in_sample": inside, "held_out": held}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite {OUT.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    rows = fit_rows(read_rows())
    knobs = fit(rows)
    err = errors(rows)
    print(f"{len(rows)} rows of vLLM {VERSION}, "
          f"{len({r['model'].name for r in rows})} catalogue models")
    for key, value in knobs.items():
        print(f"  {key} = {value:.4g}")
    print(f"{'row':38} {'act log':>8} {'act fit':>8} {'KV log':>8} {'in':>7} {'held':>7}")
    for r in rows:
        p = predict(r, knobs)
        print(f"{r['id']:38} {r['activation']:8.2f} {p['activation']:8.2f} {r['kv']:8.2f} "
              f"{err['in_sample'][r['id']]:+7.2f} {err['held_out'].get(r['id'], math.nan):+7.2f}")
    held = [abs(v) for v in err["held_out"].values()]
    inside = [abs(v) for v in err["in_sample"].values()]
    summary = {"fit_error_gib": max(inside), "held_out_error_gib": max(held),
               "held_out_median_error_gib": statistics.median(held)}
    for key, value in summary.items():
        print(f"  {key} = {value:.3f}")
    graphs = graph_rows(read_rows())
    graph_knobs = fit_cuda_graphs(graphs)
    graph_err = cuda_graph_errors(graphs)
    graph_knobs["cuda_graph_fit_error_gib"] = max(abs(v) for v in graph_err["in_sample"].values())
    graph_held = [abs(v) for v in graph_err["held_out"].values()]
    graph_knobs["held_out_error_gib"] = max(graph_held)
    print(f"CUDA graphs ({len(graphs)} rows of vLLM {VERSION}): "
          f"{graph_knobs['cuda_graph_gib']:.3f} GiB + "
          f"{graph_knobs['cuda_graph_gib_per_layer'] * 1024:.2f} MiB a layer; in sample largest "
          f"error {graph_knobs['cuda_graph_fit_error_gib']:.2f} GiB, held out by model largest "
          f"{max(graph_held):.2f}, median {statistics.median(graph_held):.2f}")
    sglang = fit_sglang(sglang_rows())
    print(f"SGLang {SGLANG_VERSION}: memory in use before loading "
          f"{sglang['non_torch_gib']:.2f} GiB at TP 1, {sglang['non_torch_parallel_gib']:.2f} above")
    for key, value in sglang["errors"].items():
        print(f"  {key:38} pool error {value:+.2f} GiB")
    trtllm = fit_trtllm(trtllm_rows())
    print(f"TensorRT-LLM: {trtllm['non_torch_parallel_gib']:.2f} GiB beside the weights "
          f"(median of {trtllm['n_rows']} logs)")
    print(f"  {'row':6} {'in':>7} {'held':>7} {'share of total':>15}")
    for key, value in trtllm["in_sample"].items():
        print(f"  {key:6} {value:+7.2f} {trtllm['held_out'][key]:+7.2f} "
              f"{trtllm['share_of_total'][key]:+15.2f}")
    if args.write:
        OUT.write_text(render(knobs, summary, len(rows), sglang, trtllm, graph_knobs,
                              len(graphs)))
        print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


def _gap_tables() -> str:
    """The vLLM row's ``[[memory.cuda_graph_gap]]`` tables (:data:`CUDA_GRAPH_GAPS`)."""
    out = []
    for since, before, models, sixteen, source in CUDA_GRAPH_GAPS:
        names = '"dense"' if models == "dense" else "[" + ", ".join(f'"{m}"' for m in models) + "]"
        out.append("\n".join([
            "\n[[memory.cuda_graph_gap]]", f'since = "{since}"', f'before = "{before}"',
            f"models = {names}", f"sixteen_bit_only = {str(sixteen).lower()}",
            f'source = "{source}"']))
    return "".join(out)


def render(knobs, summary, n_rows, sglang, trtllm, graphs, n_graph_rows) -> str:
    """The data file's text."""
    return f"""# What a serving engine keeps on each GPU beside the weights and the KV cache, per release:
# rooflinekit.profiles.footprint reads it (rooflinekit.memory.engine_kv_cache subtracts it).
# Made by `python scripts/fit_engine_memory.py --write` from tests/data/engine_logs/vllm_memory.csv
# (vLLM's own start-up memory-profiling lines, one row per server start, each sourced there).
# vLLM sizes its KV cache as gpu_memory_utilization x the memory the driver reports, less the
# weights, less the activation peak of a profiling run, less the memory that grew outside
# PyTorch (CUDA context, communicators); CUDA graphs are captured after. Before
# {CUDA_GRAPH_SINCE} they live in what is left over; from {CUDA_GRAPH_SINCE} on (cuda_graph_since) the
# profiling estimates them and takes them off the cache too (but for the releases and models of
# the cuda_graph_gap tables, whose model runner counted none), and the default share is
# {DEFAULT_SHARE_FROM_THEN} (default_share_since, default_share_from_then; {VERSION}'s: 0.9). For such a release,
# named (engine="vllm@0.29.0"; the name alone keeps this row's {VERSION}), the activation peak holds
# cuda_graph_gib + cuda_graph_gib_per_layer x the layers of a pipeline stage [GiB]: least squares
# over the {n_graph_rows} rows of vLLM {VERSION} that print the graphs' memory (what capture took), largest
# error {graphs['cuda_graph_fit_error_gib']:.2f} GiB in sample (cuda_graph_fit_error_gib), {graphs['held_out_error_gib']:.2f} with each model left out.
# activation peak [bytes] = sampler_bytes_per_logit x min(max_num_seqs, max_num_batched_tokens) x
#   vocabulary (the profiling run ends with a dummy sampling step over that many rows of logits)
#   + for an MoE model the fused-MoE kernel's working tensors, max_num_batched_tokens x
#   experts_per_token x (max(2 x expert_intermediate / tp, hidden) + expert_intermediate / tp)
#   16-bit activations (rooflinekit.profiles.footprint.moe_workspace_bytes).
# non-torch [GiB] = non_torch_gib at tensor parallelism 1, non_torch_parallel_gib above it.
# sampler_bytes_per_logit and the two non-torch figures: medians over the {n_rows} rows of vLLM
# {VERSION} with a catalogue model (sampler: the dense models' 16-bit rows). fit_error_gib: the
# largest error on the KV cache vLLM logged, in sample; held_out_error_gib and
# held_out_median_error_gib: the largest and median error with each model left out of the medians.

[[memory]]
engine = "vllm"
version = "{VERSION}"
date = "{datetime.date.today().isoformat()}"
sampler_bytes_per_logit = {knobs['sampler_bytes_per_logit']:.4f}
non_torch_gib = {knobs['non_torch_gib']:.4f}
non_torch_parallel_gib = {knobs['non_torch_parallel_gib']:.4f}
fit_error_gib = {summary['fit_error_gib']:.3f}
held_out_error_gib = {summary['held_out_error_gib']:.3f}
held_out_median_error_gib = {summary['held_out_median_error_gib']:.3f}
cuda_graph_since = "{CUDA_GRAPH_SINCE}"
cuda_graph_gib = {graphs['cuda_graph_gib']:.4f}
cuda_graph_gib_per_layer = {graphs['cuda_graph_gib_per_layer']:.6f}
cuda_graph_fit_error_gib = {graphs['cuda_graph_fit_error_gib']:.3f}
default_share_since = "{DEFAULT_SHARE_SINCE}"
default_share_from_then = {DEFAULT_SHARE_FROM_THEN}
source = "tests/data/engine_logs/vllm_memory.csv: vLLM {VERSION} start-up logs on H100 80GB (llm-d-planner PR #205, commit d3121e0), {n_rows} rows of catalogue models; the fit: scripts/fit_engine_memory.py; the releases: scripts/fit_engine_memory.py CUDA_GRAPH_SINCE, DEFAULT_SHARE_SINCE and CUDA_GRAPH_GAPS (vLLM's source distributions on PyPI)"
{_gap_tables()}

# SGLang: its pool is mem_fraction_static x the memory free before the weights load, less the
# weights; non_torch_gib / non_torch_parallel_gib: the memory in use before loading (CUDA
# context, communicators) at tensor parallelism 1 / above, from {len(sglang['errors'])} logs of
# tests/data/engine_logs/sglang_memory.csv (no held-out figure: each size has one log).
# mem_fraction_static's default: rooflinekit.profiles.sglang_mem_fraction_static (SGLang's code).
[[memory]]
engine = "sglang"
version = "{SGLANG_VERSION}"
date = "{datetime.date.today().isoformat()}"
sampler_bytes_per_logit = 0.0
non_torch_gib = {sglang['non_torch_gib']:.4f}
non_torch_parallel_gib = {sglang['non_torch_parallel_gib']:.4f}
fit_error_gib = {max(abs(v) for v in sglang['errors'].values()):.3f}
source = "tests/data/engine_logs/sglang_memory.csv: SGLang start-up logs of sgl-project/sglang pull requests #4760 (Llama-3.1-8B, TP 1, 80 GB GPU) and #11716 (Llama-3.3-70B, TP 8, H200); GPU totals and shares: scripts/fit_engine_memory.py SGLANG_LOGS"

# TensorRT-LLM (PyTorch backend): its cache is free_gpu_memory_fraction (default 0.9) x what the
# weights and its profiling pass's peak leave of the driver's total (share_of = "free");
# non_torch_gib / non_torch_parallel_gib: that peak beyond the weights (activations, CUDA graphs,
# communicators' workspaces), the median over {trtllm['n_rows']} logs of a discrete GPU in
# tests/data/engine_logs/trtllm_memory.csv (MoE models on B200 and GB200 at TP 2-8; none at TP 1,
# so both take it). Errors on the KV cache those logs print (the share of the total less the
# weights, the rule used before, was off by up to {max(abs(v) for v in trtllm['share_of_total'].values()):.1f} GiB).
[[memory]]
engine = "trtllm"
version = "{trtllm['versions'][-1]}"
date = "{datetime.date.today().isoformat()}"
share_of = "free"
sampler_bytes_per_logit = 0.0
non_torch_gib = {trtllm['non_torch_gib']:.4f}
non_torch_parallel_gib = {trtllm['non_torch_parallel_gib']:.4f}
fit_error_gib = {max(abs(v) for v in trtllm['in_sample'].values()):.3f}
held_out_error_gib = {max(abs(v) for v in trtllm['held_out'].values()):.3f}
held_out_median_error_gib = {statistics.median(abs(v) for v in trtllm['held_out'].values()):.3f}
source = "tests/data/engine_logs/trtllm_memory.csv: TensorRT-LLM {', '.join(trtllm['versions'])} and NVIDIA CI start-up logs of DeepSeek-R1, gpt-oss-120b and Kimi-K2 on B200 and GB200 (rows {', '.join(sorted(trtllm['in_sample']))}); the rule: tensorrt_llm/_torch/pyexecutor/_util.py KvCacheCreator._cal_max_memory; the fit: scripts/fit_engine_memory.py"
"""


if __name__ == "__main__":
    raise SystemExit(main())
