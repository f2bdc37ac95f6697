"""Fit rooflinekit's engine knobs per (serving engine, GPU) to NVIDIA's measured kernel timings.

A development script, not part of the package. It needs the dev extra::

    pip install aiconfigurator-core==0.12.0 pandas pyarrow

and is run from the repository root as ``python scripts/engine_profiles.py``; it (re)writes
``rooflinekit/data/engine_profiles/{vllm,sglang,trtllm}.toml`` and prints a table of the fitted
knobs and held-out errors.

Where the numbers come from
---------------------------
aiconfigurator-core 0.12.0 (Apache-2.0, NVIDIA) ships the kernel timings its collectors measured
on each GPU system, per serving engine and engine version, as parquet tables under
``aiconfigurator_core/systems/data/<system>/<op>/<engine>/<version>/``: GEMMs
(``gemm_perf.parquet``: latency per (dtype, m, n, k)), attention (``context_attention_perf`` and
``generation_attention_perf``: latency per (batch, sequence length, query heads, KV heads, head
size, KV format)) and the engines' own all-reduce (``comm/<engine>/<version>/
custom_allreduce_perf.parquet``: latency per (GPUs, message elements)). Latencies are in
milliseconds. This script reads those tables directly, not through aiconfigurator's SDK
estimator: a step assembled here from named kernels is a sum whose every part can be checked
against a table row, while the SDK's static estimate adds engine heuristics (queueing factors,
dispatch constants, mixed-step corrections) that rooflinekit models separately or not at all.

The step synthesised for a dense decoder (Llama-3.1-8B and Llama-3.1-70B; the catalogue's
shapes, head size 128) at tensor-parallel degree ``tp``:

- decode (TPOT), batch ``B`` at context ``c``: per layer the GEMMs ``qkv`` (m = B,
  n = (H + 2·KV)·d / tp, k = h), ``o`` (n = h, k = H·d / tp), ``gate_up`` (n = 2·I / tp, k = h)
  and ``down`` (n = h, k = I / tp), generation attention (B sequences at c cached tokens,
  H / tp query heads, KV / tp KV heads), and at tp > 1 two all-reduces of B·h bf16 elements;
  plus the LM head GEMM (m = B, n = V / tp, k = h) once;
- prefill (TTFT), B prompts of s tokens prefilled together: the same GEMMs at m = B·s, context
  attention of B sequences of s tokens, two all-reduces of B·s·h elements per layer, and the
  LM head at m = B (only each prompt's last token needs logits).

Elementwise kernels (norms, rotary embedding, activation, residual adds), the embedding lookup,
sampling, the scheduler and Python are in no table, so they are not in the synthesised step:
the step and layer overheads fitted here are the kernels' own (launch gaps are not either), a
floor under what a served engine shows.

Each table is interpolated linearly in log(latency) over log of its axes (the kernel grids are
powers of two or near), after holes in a grid are filled by the same log-log interpolation along
one axis. A query beyond a table's last point takes that point's latency scaled linearly with
the size (a GEMM's m and n, attention's batch and context: time proportional to the work
there). Where several kernels were measured for one point (vLLM's FlashAttention 3 and 4, say)
the fastest is taken, as the engines' autotuning picks. Each weight GEMM and each decode
attention is then floored at its table's shortest latency (the kernel's launch and ramp) plus
the bytes it reads at the rate its own table streams operands larger than any L2
(:class:`Streamed`), a rate never above the GPU's datasheet bandwidth
(TensorRT-LLM 1.0's A100 attention table streams 1.3 times it): the tables time a kernel again
and again on one operand, which a GPU with a large L2 serves from the cache (the L40S's bf16
GEMMs read 4-60 MB of weights at up to 2.9 times its GDDR6's bandwidth), where a served step
reads each layer's operands from device memory once. ``bf16`` rows use the bfloat16 GEMMs;
``fp8`` rows (where the table has per-tensor fp8 GEMMs) use them with bf16 attention and a
bf16 KV cache. A workload is kept only when its weights and KV cache fit in 90 % of the
group's memory.

For each (engine, GPU) the newest engine version with both GEMM and attention tables is used;
the all-reduce table is that engine's at the same version, else its newest older one (the SDK's
own rule: framework-versioned comm tables may fill from earlier versions). CUDA-graph all-reduce
rows (``backend`` ending in ``_graph``) are preferred where a table has both.

The fit, stage 1: kernels
-------------------------
Per (engine, GPU, version), :func:`fit_profile` runs three
:func:`rooflinekit.calibrate.calibrate` fits, each with bootstrap intervals at 90 % from
:data:`N_RESAMPLES` resamples with seed 0:

1. prefill, to the TTFT rows, with the prefill knobs of :data:`FIT` free: compute efficiency,
   the FP8 GEMMs' own (``low_precision_compute_efficiency``: the GEMM tables put FP8 GEMMs of
   Llama-3.1-70B's TP2 layer at 5,000 tokens on an H100 under vLLM 0.24 at 52 % of the FP8
   peak against 77 % of the bf16 peak for bf16 ones), the GEMM half-efficiency tokens, the
   TTFT intercept and the all-reduces' share of the link. This is the profile's prefill phase.
2. the same without the FP8 efficiency (:data:`GEMM_FIT`): one compute efficiency for every
   weight format. Its compute efficiency, GEMM half-efficiency tokens and link share
   (:data:`SHARED_KERNEL_KNOBS`) go to the decode phase, which held them ideal before: a
   decode step's weight GEMMs are the prompt's kernels at fewer rows, and at batches of
   64-256 they bind on compute; its all-reduces are the same collective at smaller messages.
   The format-blind knobs are the ones that transfer there (with the FP8 efficiency also in
   decode, leave-one-GPU-out TPOT of the A100 rows, bf16 only, is 1.3-4 points worse).
3. decode, to the TPOT rows, on a base engine holding those knobs, with the decode knobs
   of :data:`FIT` free: weight and KV bandwidth efficiencies, the per-layer overhead and the
   FP8 GEMMs' extra per-layer overhead (``low_precision_layer_overhead``; the tables time an
   FP8 GEMM at small batch as a fixed part 2.5-3.3 us (vLLM) or 10-12 us (TensorRT-LLM)
   longer than a bf16 one's) and their own share of the bandwidth
   (``low_precision_bandwidth_efficiency``: at 1-8 rows FP8 GEMMs stream their weights at
   84-97 % of the bf16 GEMMs' rate on the same GPU, SGLang's RTX PRO 6000 at 74 %). The
   per-step overhead
   is held at 0 (:data:`HELD`: every two-model fit finds 0, and freed on one model's rows it
   trades against the per-layer overhead and wrecks the transfer to the other size).

Then the FP4 stage (:func:`with_fp4_stage`): where a GPU's GEMM table holds NVFP4 (W4A4)
GEMMs (the Blackwell GPUs and the RTX PRO 6000), the same workloads in NVFP4 give
``fp4_compute_efficiency`` (prefill, to their TTFT) and ``fp4_bandwidth_efficiency`` (decode,
to their TPOT), every other knob held; elsewhere each is its low-precision knob. Predicted by
FP8's knobs, those rows were 5-26 % off in TPOT and 11-30 % in TTFT (``--diagnose``,
``nvfp4_held_out``).

Then the MoE stage (:func:`moe_layer_overhead`): the kernel fit's shapes are dense, yet an
MoE block at a few tokens takes a fixed time beyond reading its experts (routing, token
permutation, grouped GEMM launches) that no dense row shows. The MoE tables
(``moe/<engine>/<version>/moe_perf.parquet``) give it per GPU and engine: 14-50 us a layer
on H100, H200 and B200 over the dense MLP's GEMMs. It is written as ``moe_layer_overhead``
in both phases (0 where the version has no MoE table: vLLM 0.14 and TensorRT-LLM 1.0 on the
A100). At many tokens a step the same tables' grouped expert GEMMs run at a fraction of a
dense GEMM's share of the peak: :func:`moe_compute_share` reads it from the compute-bound
blocks (0.32-0.86 by engine and GPU), written as ``moe_compute_share`` in both phases; a
version without an MoE table takes the median of the engine's other GPUs
(:func:`pool_moe_shares`), which, each GPU left out in turn, times its blocks within a few
points of its own share (``--diagnose``, ``moe_blocks``).

Then the MLA stage (:func:`mla_layer_overhead`): a multi-head latent attention module
(DeepSeek-V3's: the query and KV down- and up-projections, their norms, RoPE, the absorbed
attention and its output, about ten kernels) takes a fixed time at a few sequences beyond
reading its weights and latent cache that the dense rows' qkv and output GEMMs and attention
do not show. The MLA generation-module tables (``mla/<engine>/<version>/
mla_generation_module_perf.parquet``) give it: 6-16 us a layer over a GQA layer's attention
block under TensorRT-LLM 1.3, 11-13 us under vLLM (B200, and GB300's 0.27.0 table), written
as ``mla_layer_overhead`` in both phases. vLLM's other tables ran the module's norms as
native PyTorch chains that serving never runs (their metadata: before the collector's
fused-op fix) and time the module 2-2.3 times as long as the B200's with the same backend:
they are not read (:func:`_as_served`). A GPU no table covers takes the engine's median
(:func:`pool_mla_overheads`). SGLang has no module collector, and holds 0: vLLM's and
TensorRT-LLM's tables standing in for it (8-18 us a layer) made its served stage's held-out
TPOT worse on both sources, where its DeepSeek-R1 sweeps were already timed slow.

Then the attention stage (:func:`attention_compute_efficiency`): the kernel fit times a
prompt's attention at the GEMMs' share of the peak, but the context-attention tables' longest
prompts (16,384 tokens) reach 0.40-0.72 of it where the GEMMs reach 0.56-0.88. The median
over the fitted models' head pairs is written as ``attention_compute_efficiency`` in both
phases; on the fit's own prefill rows (prompts of at most 8,192 tokens, where attention is a
small part) the in-sample TTFT error moves by less than half a point.

Held-out errors (:func:`held_out_errors`, the same three fits without bootstrap): leave one
GPU out (fit on the other GPUs' rows of the same engine, predict this GPU's rows), and across
model sizes (fit on one model's rows of this (engine, GPU), predict the other's; the worse
direction). Leaving a GPU out, the decode fit holds the fixed time per layer as clock cycles
(``layer_cycles``, :data:`TRANSFER_DECODE_FIT`): each row's GPU turns them into seconds with
the catalogue's boost clock, so the A100's (1.41 GHz) comes out longer than the Hopper and
Blackwell GPUs' (1.98 GHz) and the L40S's (2.52 GHz) shorter. NVIDIA states no boost clock for
the B300, GB200, GB300 and RTX PRO 6000 Server: each of those is predicted by the plain fit
(the layer's time in seconds) of every other GPU, and the clocked GPUs' pools leave them out
(:func:`leave_one_gpu_out`).

Structure from the GPU catalogue: the L40S is the PCIe GPU whose topology the catalogue
states, and past a pair its all-reduces share one host link (``host_link_gb_s``,
``p2p_gpus``); every fit runs on an engine with ``host_traffic_share = 1`` (:data:`STRUCTURE`),
which the profiles carry (no effect on a GPU without those fields: the RTX PRO 6000 Server's
PCIe Gen5 link is its interconnect, at the share its fit finds). The L40S and RTX PRO 6000
rows also say ``ring_collectives``: their tables' all-reduce latency grows with the group
(5.4, 13.3, 25.0 us and 4.3, 12.6, 23.6 us at 2, 4, 8 GPUs, where NVLink's stays flat), so
their collectives pay a hop latency per peer (:class:`rooflinekit.hardware.GPU`).

The fit, stage 2: serving (vLLM only)
-------------------------------------
Kernel sums are a floor under a served engine. For vLLM, the one engine with public end-to-end
measurements in the repository, :func:`serving_stage` keeps every GPU's kernel knobs fixed and
fits the one knob of :data:`SERVING_KNOBS`, the decode ``step_overhead`` [s] that kernels cannot
see (scheduler, sampling, Python), as ONE value shared by all GPUs (CPU-side costs do not scale
with the GPU), to the TPOT of the ``LambdaLabsML/vllm-benchmark`` rows of :data:`SERVING_FILES`
(H100-SXM and A100-SXM; the NIM rows are another engine). ``prefill_overhead`` is NOT fitted
here: each GPU keeps its kernel fit's TTFT intercept. Those rows' TTFT is measured at the client
and holds client/API time (tokenisation, HTTP, detokenisation) that does not occupy the GPU,
while rooflinekit's simulator charges ``prefill_overhead`` to every engine step that carries
prompt tokens; a TTFT-fitted intercept (53 ms where the kernels give 1.3-2.3 ms) made
saturation throughput on load sweeps far too low (``scripts/score_load_sweeps.py``). The
overhead adds to every decode step, so a row's TPOT prediction is its kernel-knob prediction
with the overhead at 0 (:func:`rooflinekit.calibrate.predict`, each row on its own GPU's knobs)
plus the overhead, and the least squares on relative residuals (calibrate's loss) has a closed
form (:func:`fit_serving`). Intervals: :data:`N_RESAMPLES` bootstrap resamples of the rows,
seed 0; held out: fit on one GPU's rows, predict the other's. TTFT errors on those rows are
reported with the kernel intercept, for reference. SGLang's served overheads (one
``step_overhead``, ``prefill_overhead`` and ``frontend_latency`` for every GPU) and
TensorRT-LLM's front end (one ``frontend_latency``; its steps stay the kernels' floor) are
fitted to their published load sweeps afterwards, held out by source, by
``scripts/fit_served_overheads.py``, which this script runs after writing the default folder.

The fit, stage 3: under load (vLLM only)
----------------------------------------
That client time has its own knob, ``frontend_latency`` (added to every TTFT, to no step).
Writing the default folder, this script then runs ``scripts/fit_frontend_latency.py --write``,
which fits it with the simulator replaying the published vLLM load sweeps against the profiles
just written, held out by source (see that script).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import functools
import math
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rooflinekit import IDEAL, catalog, parallel
from rooflinekit.calibrate import calibrate, cross_validate, measurements_from_records
from rooflinekit.dtypes import MXFP4_BYTES
from rooflinekit.profiles import HostScheduling
from rooflinekit.roofline import MAX_MXFP4_SHARE, SHARE_KNOBS, WIDE_HEAD_DIM

#: The aiconfigurator-core release whose tables are read.
AIC_VERSION = "0.12.0"
#: aiconfigurator system name -> rooflinekit catalogue GPU name. Systems without data in the
#: package (h100_pcie, a100_pcie and l4 ship empty data folders in 0.12.0) are skipped.
SYSTEM_TO_GPU = {"h100_sxm": "H100-SXM-80GB", "h200_sxm": "H200-SXM-141GB",
                 "a100_sxm": "A100-SXM-80GB", "b200_sxm": "B200", "l40s": "L40S",
                 "b300_sxm": "B300", "gb200": "GB200", "gb300": "GB300",
                 "rtx_pro_6000_server": "RTX-PRO-6000-Server",
                 "h100_pcie": "H100-PCIe-80GB", "a100_pcie": "A100-PCIe-80GB", "l4": "L4"}
#: Its inverse: catalogue GPU name -> aiconfigurator system.
GPU_TO_SYSTEM = {gpu: system for system, gpu in SYSTEM_TO_GPU.items()}
#: Serving engines, as aiconfigurator names their data folders.
ENGINES = ("vllm", "sglang", "trtllm")
#: Catalogue models whose shapes the step is synthesised for (dense, head size 128).
MODELS = ("Llama-3.1-8B", "Llama-3.1-70B")
#: Decode batch sizes [sequences] and contexts [tokens] of the TPOT workloads.
DECODE_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
DECODE_CONTEXTS = (512, 1024, 2048, 4096, 8192, 16384)
#: Prefill batch sizes [prompts] and prompt lengths [tokens] of the TTFT workloads.
PREFILL_BATCHES = (1, 2, 4, 8)
PREFILL_PROMPTS = (128, 256, 512, 1024, 2048, 4096, 8192)
#: Tensor-parallel degrees (beyond 1 only where the GPU has an all-reduce table).
TP_DEGREES = (1, 2, 4, 8)
#: Weight formats: rooflinekit dtype -> aiconfigurator gemm_dtype.
GEMM_DTYPES = {"bf16": "bfloat16", "fp8": "fp8"}
#: Weight formats the fits leave out and :func:`diagnose` predicts from them (held out by
#: format): NVFP4 (W4A4 on FP4 tensor cores; the Blackwell GPUs' and the RTX PRO 6000's
#: tables).
CHECK_DTYPES = {"nvfp4": "nvfp4"}
#: Every weight format synthesised: the fitted ones, then the checked ones.
ALL_DTYPES = (*GEMM_DTYPES, *CHECK_DTYPES)
#: Bytes per weight of each GEMM format (NVFP4: 4-bit values and one FP8 scale per 16).
GEMM_BYTES = {"bf16": 2.0, "fp8": 1.0, "nvfp4": 0.5 + 1.0 / 16}
#: A kernel table's streaming rate (:func:`streaming_bandwidth`) is read from its points that
#: read at least STREAMING_BYTES from device memory: more than every L2 cache of these GPUs
#: (the largest, the RTX PRO 6000's GB202, holds 128 MB), so those operands come from device
#: memory even when the same kernel is timed again and again (:class:`Streamed`); for a GEMM,
#: its points of at most STREAMING_ROWS rows (m), whose time is its weights' read.
STREAMING_ROWS = 8
STREAMING_BYTES = 256 * 2**20
#: A GPU's GEMM throughput (:func:`gpu_gemm_throughput`) is read from its bf16 GEMM table's
#: points with m, n and k all at least GEMM_THROUGHPUT_SIZE: compute-bound on every GPU here
#: (m = 4,096 rows do 4,096 FLOPs per weight byte read, ten times the highest ridge point),
#: and large enough that the tiles fill the GPU, so the rate is what the clock sustains. Of
#: their rates it takes the GEMM_THROUGHPUT_QUANTILE: the tables' big shapes include awkward
#: ones, and a model's GEMMs (the prefill fits' compute efficiencies) reach above the median.
GEMM_THROUGHPUT_SIZE = 4096
GEMM_THROUGHPUT_QUANTILE = 0.9
#: Share of the group's memory the weights and the KV cache may take for a workload to count.
MEMORY_SHARE = 0.9
#: Knobs fitted per phase to the kernel sums (the names of
#: :class:`rooflinekit.calibrate.Calibration`). ``step_overhead`` is held at 0 (:data:`HELD`):
#: every two-model fit finds 0, and freed on one model size it trades against the per-layer
#: overhead and wrecks the transfer to the other size. ``low_precision_layer_overhead`` is
#: the extra fixed time per layer of FP8 (W8A8) GEMMs: fitted to every GPU's GEMM table at
#: small m (time = fixed + bytes / bandwidth per GEMM shape), an FP8 GEMM's fixed part is
#: 2.5-3.3 us more than a bf16 one's under vLLM 0.24 (H100, H200) and 10-12 us more under
#: TensorRT-LLM 1.3 (H100, B200). ``low_precision_bandwidth_efficiency`` is the share of the
#: bandwidth those FP8 GEMMs' weight reads reach: 84-97 % of the bf16 GEMMs' rate at 1-8 rows
#: (SGLang's RTX PRO 6000: 74 %); a GPU without FP8 rows (the A100) takes the bf16 share.
#: ``interconnect_latency`` (decode), the hop latency of the engine's all-reduce on the GPU's
#: links, is not fitted here but read from the engine's all-reduce table and held
#: (:func:`hop_latency`): freed, it took on time that was not the all-reduce's (SGLang's H100
#: 3.1 us a hop against the 1.4 its small messages give).
FIT = {"prefill": ("compute_efficiency", "gemm_half_tokens", "prefill_overhead",
                   "interconnect_efficiency", "low_precision_compute_efficiency"),
       "decode": ("bandwidth_efficiency", "kv_bandwidth_efficiency", "layer_overhead",
                  "low_precision_layer_overhead", "low_precision_bandwidth_efficiency")}
#: Knobs held at a value in the kernel fit, written with it (interval ``[value, value]``).
HELD = {"prefill": {"host_traffic_share": 1.0},
        "decode": {"step_overhead": 0.0, "host_traffic_share": 1.0}}
#: Structural engine fields every fit runs on, held (:data:`HELD`) and written with the knobs:
#: a PCIe group's all-reduce traffic past its peer-to-peer domain all crosses the host link the
#: group shares (``host_traffic_share`` 1; the GPU catalogue's ``host_link_bandwidth`` and
#: ``p2p_gpus``, no effect on an NVLink GPU, which has none).
STRUCTURE = {"host_traffic_share": 1.0}
#: The all-reduce every fit runs on and the profiles time with (the files' ``allreduce``):
#: the engines' own, each all-reduce the faster of the two-stage collective and a one-shot
#: on NVLink GPUs (vLLM's and SGLang's custom all-reduce, TensorRT-LLM's AUTO
#: strategy; :func:`rooflinekit.parallel.one_shot_allreduce_coefficients`). Over every NVLink
#: GPU's table at 1,024-2,097,152 elements it fits the time with about half the collective
#: alone's error (vLLM 0.24.0's H100: 5.9 % against 11.9 %).
ALLREDUCE = "custom"
#: The engine the profiles' knobs go on (their calibrations' ``base``).
PROFILE_BASE = IDEAL.replace(allreduce=ALLREDUCE)
#: The prefill knobs the decode fit holds, from the format-blind prefill fit (:data:`GEMM_FIT`):
#: the weight GEMMs' compute efficiency and half-efficiency tokens (a decode step's GEMMs are a
#: prompt's kernels at fewer rows, and at large batches they bind on compute) and the
#: all-reduces' link share (the same collective at a decode's message sizes; ideal, 1, before)
#: (:func:`fit_profile`).
SHARED_KERNEL_KNOBS = ("compute_efficiency", "gemm_half_tokens", "interconnect_efficiency")
#: The prefill knobs of the fit whose GEMM knobs the decode phase holds: one compute
#: efficiency for every weight format (:func:`fit_profile`).
GEMM_FIT = tuple(k for k in FIT["prefill"] if k != "low_precision_compute_efficiency")
#: Every knob a profile row holds, per phase, in the order written.
KNOBS = {"prefill": (*FIT["prefill"], "host_traffic_share", "moe_layer_overhead",
                     "fp4_compute_efficiency", "moe_compute_share", "mxfp4_moe_compute_share",
                     "mla_layer_overhead", "attention_compute_efficiency",
                     "narrow_head_attention_share", "cross_host_allreduce_latency"),
         "decode": ("bandwidth_efficiency", "kv_bandwidth_efficiency", "step_overhead",
                    "layer_overhead", "low_precision_layer_overhead", "interconnect_latency",
                    "low_precision_bandwidth_efficiency",
                    *SHARED_KERNEL_KNOBS,
                    "host_traffic_share", "moe_layer_overhead", "fp4_bandwidth_efficiency",
                    "moe_compute_share", "mxfp4_moe_compute_share", "mla_layer_overhead",
                    "attention_compute_efficiency", "narrow_head_attention_share",
                    "cross_host_allreduce_latency")}
#: The FP4 stage (:func:`with_fp4_stage`): per phase, the knob it fits to the NVFP4 rows of
#: :data:`CHECK_DTYPES` with every other knob held, and the knob it takes where the tables hold
#: no NVFP4 GEMMs (what ``None`` means for it). The NVFP4 GEMMs of the B200 tables reach 39-44 %
#: of the FP4 peak on large shapes (FP8's of theirs: 47-53 %) and at one to eight rows stream
#: their weights at 68-78 % of the bf16 GEMMs' rate (FP8's: 84-87 %).
FP4_STAGE = {"prefill": ("fp4_compute_efficiency", "low_precision_compute_efficiency"),
             "decode": ("fp4_bandwidth_efficiency", "low_precision_bandwidth_efficiency")}
#: Knobs a later stage of the kernel fit adds (the MoE, MLA, attention and FP4 stages).
STAGE_KNOBS = ("moe_layer_overhead", "moe_compute_share", "mxfp4_moe_compute_share",
               "mla_layer_overhead",
               "attention_compute_efficiency", "narrow_head_attention_share",
               *(knob for knob, _ in FP4_STAGE.values()))
#: The MoE tables' rows the MoE stage reads (:func:`_moe_rows`): the experts sharded over the
#: tensor-parallel group (no expert parallelism) with tokens spread evenly over them, in the
#: formats of :data:`MOE_PATHS`.
MOE_DISTRIBUTIONS = ("balanced", "uniform")
#: Each format's path in the planner (its peak and its GEMMs' efficiency: 16-bit for
#: weight-only 4-bit experts, int4 and MXFP4's as gpt-oss ships, and for MXFP4 experts with
#: MXFP8 activations, which the planner times on the 16-bit path too; FP8 for W8A8; FP4 for
#: NVFP4 where the GPU lists an FP4 peak) and its bytes per weight with scales (FP8 blocks: one
#: fp32 scale per 128 × 128; MXFP4: one 8-bit scale per 32; NVFP4: one FP8 scale per 16; int4:
#: one bf16 scale per 128).
MOE_PATHS = {"bfloat16": ("bf16", 2.0), "fp8": ("fp8", 1.0),
             "fp8_block": ("fp8", 1.0 + 4.0 / (128 * 128)),
             "w4a16_mxfp4": ("bf16", MXFP4_BYTES), "w4a8_mxfp4_mxfp8": ("bf16", MXFP4_BYTES),
             "int4_wo": ("bf16", 0.5 + 2.0 / 128.0), "nvfp4": ("fp4", 9.0 / 16.0)}
#: The MXFP4 expert kernels a table may time: weight-only (W4A16: kernels that widen each
#: weight) and, on Blackwell, MXFP4 weights with MXFP8 activations on the FP8 tensor cores
#: (W4A8). ``mxfp4_moe_compute_share`` reads them, ``moe_compute_share`` the rest.
MXFP4_FORMATS = ("w4a16_mxfp4", "w4a8_mxfp4_mxfp8")
#: The MXFP4 kernel each engine serves gpt-oss with by default: the first of these its table
#: holds (the tables time W4A8 on Blackwell GPUs only). TensorRT-LLM takes W4A8 from SM 100
#: on (``ModelConfig.get_mxfp4_quant_algo``: ``W4A8_MXFP4_MXFP8`` unless
#: ``OVERRIDE_QUANT_ALGO`` is set, ``W4A16_MXFP4`` below SM 100); SGLang quantizes the
#: activations to MXFP8 on Blackwell unless told ``bf16`` (its MXFP4 MoE method's default
#: precision, which aiconfigurator files as ``w4a8_mxfp4_mxfp8``); vLLM runs FlashInfer's BF16
#: activations there unless ``VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1`` (``get_mxfp4_backend``:
#: "Using FlashInfer MXFP4 BF16 backend for SM100").
MXFP4_KERNELS = {"trtllm": ("w4a8_mxfp4_mxfp8", "w4a16_mxfp4"),
                 "sglang": ("w4a8_mxfp4_mxfp8", "w4a16_mxfp4"),
                 "vllm": ("w4a16_mxfp4",)}
#: The fixed time's rows (:func:`moe_layer_overhead`): the 16-bit and FP8 formats' bytes per
#: weight, a few tokens a step.
MOE_BYTES = {f: MOE_PATHS[f][1] for f in ("bfloat16", "fp8", "fp8_block")}
MOE_MAX_TOKENS = 16
#: A row of the MoE table is compute-bound where its FLOPs at the dense GEMMs' share take at
#: least this multiple of its experts' read (the compute share's rows).
MOE_COMPUTE_BOUND = 2.0
#: The MoE blocks :func:`moe_block_errors` scores: this many tokens a step or more (prefill).
MOE_PREFILL_TOKENS = 256
#: The decode knobs of a fit whose knobs go to ANOTHER GPU (leave one GPU out): the fixed time
#: per layer as clock cycles (``layer_cycles``, seconds ``layer_cycles / boost_clock`` on each
#: row's GPU, the catalogue's clock) instead of seconds. The tables' fixed time per layer is
#: 1.6-1.9x Hopper's on the A100 (1.41 GHz against 1.98): in seconds the pooled value of the
#: other GPUs is the Hopper one and the held-out A100 comes out 12-21 % fast. A fit to one
#: GPU's rows (the profiles written, across model sizes) has one clock, where the two are the
#: same, and keeps ``layer_overhead`` [s], which every GPU can use.
TRANSFER_DECODE_FIT = tuple("layer_cycles" if k == "layer_overhead" else k
                            for k in FIT["decode"])
#: Bootstrap resamples, coverage of the intervals and the seed of every fit.
N_RESAMPLES = 100
CONFIDENCE = 0.90
SEED = 0
#: Milliseconds (the tables' unit) to seconds.
MS = 1e-3
#: Where the profiles are written, relative to the repository root.
OUTPUT_DIR = Path("rooflinekit/data/engine_profiles")
#: Attention format of every workload (the tables' activations and KV cache).
ATTENTION_DTYPE = "bfloat16"
KV_CACHE_DTYPE = "bfloat16"


# -- locating the tables ------------------------------------------------------------------------

def data_root() -> Path:
    """The folder of aiconfigurator-core's kernel tables (``systems/data``)."""
    import aiconfigurator_core
    return Path(aiconfigurator_core.__file__).parent / "systems" / "data"


def installed_aic_version() -> str:
    """The installed aiconfigurator-core version (refuses any but :data:`AIC_VERSION`)."""
    from importlib.metadata import version
    found = version("aiconfigurator-core")
    if found != AIC_VERSION:
        raise RuntimeError(f"aiconfigurator-core {AIC_VERSION} is required, found {found}")
    return found


def version_key(text: str) -> tuple:
    """A sort key of an engine version such as ``1.3.0rc20`` or ``0.5.6.post2``."""
    from packaging.version import InvalidVersion, Version
    try:
        return (0, Version(text))
    except InvalidVersion:
        return (-1, tuple(int(x) for x in re.findall(r"\d+", text)))


def versions_with(system: str, op: str, engine: str, filename: str) -> list[str]:
    """Engine versions whose ``<op>`` folder holds ``filename``, oldest first."""
    base = data_root() / system / op / engine
    if not base.is_dir():
        return []
    found = [p.name for p in base.iterdir() if (p / filename).is_file()]
    return sorted(found, key=version_key)


def engine_version(system: str, engine: str) -> str | None:
    """The newest version of ``engine`` on ``system`` with GEMM and both attention tables."""
    gemm = set(versions_with(system, "gemm", engine, "gemm_perf.parquet"))
    context = set(versions_with(system, "attention", engine, "context_attention_perf.parquet"))
    generation = set(versions_with(system, "attention", engine,
                                   "generation_attention_perf.parquet"))
    common = sorted(gemm & context & generation, key=version_key)
    return common[-1] if common else None


def allreduce_version(system: str, engine: str, version: str) -> str | None:
    """The engine's all-reduce table version used with ``version``: the same, else the newest
    older one (``None``: no table, so tensor parallelism is not synthesised)."""
    found = [v for v in versions_with(system, "comm", engine, "custom_allreduce_perf.parquet")
             if version_key(v) <= version_key(version)]
    return found[-1] if found else None


#: All-reduce messages at most this many elements (64 KiB of bf16) measure the collective's
#: fixed latency: the tables' times there are flat in the size.
SMALL_MESSAGE = 32_768


def _allreduce_rows(frame):
    """An all-reduce table's rows the fits read: bf16, and the CUDA-graph backend's where the
    table has one (the engines serve decode steps under CUDA graphs)."""
    frame = frame[frame["allreduce_dtype"] == "bfloat16"]
    if "backend" in frame and frame["backend"].astype(str).str.endswith("_graph").any():
        frame = frame[frame["backend"].astype(str).str.endswith("_graph")]
    return frame


@functools.cache
def _allreduce_latencies(system: str, engine: str, version: str) -> dict:
    """``{GPUs: {message elements: latency [s]}}`` of the all-reduce table of ``engine``
    ``version`` on ``system`` (:func:`_allreduce_rows`), at messages of at most
    :data:`SMALL_MESSAGE` elements."""
    frame = _allreduce_rows(_read(data_root() / system / "comm" / engine / version /
                                  "custom_allreduce_perf.parquet"))
    frame = frame[frame["message_size"] <= SMALL_MESSAGE]
    return {int(n): dict(rows.groupby("message_size")["latency"].median() * 1e-3)
            for n, rows in frame.groupby(frame["num_gpus"].astype(int))}


def cross_host_latency(system: str, engine: str, version: str) -> float | None:
    """The latency one all-reduce adds past one host's GPUs [s] in ``engine``'s all-reduce
    table ``version`` on ``system`` (``Engine.cross_host_allreduce_latency``): the median, over
    the messages of at most :data:`SMALL_MESSAGE` elements both degrees measure, of the time at
    the smallest degree past the catalogue's ``host_gpus`` less the time at ``host_gpus``, at
    least 0. ``None`` where the GPU gives no ``host_gpus`` or the table reaches no degree past
    it. SGLang 0.5.14 on GB300: 27-30 µs on eight GPUs (two trays) against 3.7-4.1 on four."""
    host = catalog.gpu(SYSTEM_TO_GPU[system]).host_gpus
    if host is None:
        return None
    table = _allreduce_latencies(system, engine, version)
    past = sorted(n for n in table if n > host)
    if host not in table or not past:
        return None
    inside, beyond = table[host], table[past[0]]
    common = sorted(set(inside) & set(beyond))
    if not common:
        return None
    return max(0.0, float(np.median([beyond[m] - inside[m] for m in common])))


def newest_cross_host_latency(engine: str) -> tuple[float, str] | None:
    """``engine``'s newest measured :func:`cross_host_latency` on any system with a
    ``host_gpus`` (the GB200 and GB300 trays), and where (``"gb300 comm/sglang/0.5.14"``):
    the value a profile whose own tables reach no degree past its host takes."""
    found = []
    for system in systems_with_data():
        for version in versions_with(system, "comm", engine, "custom_allreduce_perf.parquet"):
            value = cross_host_latency(system, engine, version)
            if value is not None:
                found.append((version_key(version), value, f"{system} comm/{engine}/{version}"))
    if not found:
        return None
    _, value, where = max(found, key=lambda f: f[0])
    return value, where


def hop_latency(system: str, engine: str, version: str) -> float | None:
    """One link hop's latency [s] in ``engine``'s all-reduce table ``version`` on ``system``:
    the median over the degrees within one host of the median, over messages of at most
    :data:`SMALL_MESSAGE` elements, of the time over the hops such an all-reduce pays (a PCIe
    card's ring ``2·(d−1)``, else the one-shot's ``ONE_SHOT_HOPS``). ``None`` without a table
    of two GPUs or more."""
    gpu = catalog.gpu(SYSTEM_TO_GPU[system])
    table = _allreduce_latencies(system, engine, version)
    host = gpu.host_gpus or math.inf
    per_degree = []
    for degree, times in table.items():
        if 1 < degree <= host:
            hops = 2 * (degree - 1) if gpu.ring_collectives else parallel.ONE_SHOT_HOPS
            per_degree.append(float(np.median(list(times.values()))) / hops)
    return float(np.median(per_degree)) if per_degree else None


def _table_figures(rows, figure) -> list:
    """``figure(system, engine, version)`` of the all-reduce tables the GPUs of ``rows`` were
    made from (each row's ``engine`` names the engine and version), where it gives one."""
    found = []
    for gpu, label in {(r["gpu"], r["engine"]) for r in rows}:
        system = GPU_TO_SYSTEM[gpu]
        engine, version = label.split(" ", 1)
        comm = allreduce_version(system, engine, version)
        value = None if comm is None else figure(system, engine, comm)
        if value is not None:
            found.append(value)
    return found


def rows_hop_latency(rows) -> float | None:
    """The hop latency a fit of ``rows`` runs on [s]: the median of :func:`hop_latency` of the
    all-reduce tables their GPUs' rows were made from; ``None`` (each GPU's catalogue
    figure) where none has one. A fit reads it from its own rows only."""
    found = _table_figures(rows, hop_latency)
    return float(np.median(found)) if found else None


def rows_cross_host_latency(rows) -> float:
    """The cross-host latency a fit of ``rows`` runs on [s]: the largest
    :func:`cross_host_latency` of the tables their GPUs' rows were made from, 0 where none
    reaches past a host. A fit reads it from its own rows only, so that a GPU left out lends
    it nothing."""
    return max([0.0, *_table_figures(rows, cross_host_latency)])


# -- interpolation ------------------------------------------------------------------------------

def _fill_line(log_x: np.ndarray, log_y: np.ndarray, exponent: float) -> np.ndarray:
    """``log_y`` with NaN entries filled by interpolation in log-log along the line; beyond
    the measured ends, scaled with the size to the power ``exponent``."""
    ok = ~np.isnan(log_y)
    if ok.all() or not ok.any():
        return log_y
    xs, ys = log_x[ok], log_y[ok]
    out = np.interp(log_x, xs, ys)
    low, high = log_x < xs[0], log_x > xs[-1]
    out[low] = ys[0] + exponent * (log_x[low] - xs[0])
    out[high] = ys[-1] + exponent * (log_x[high] - xs[-1])
    return np.where(ok, log_y, out)


class LogGridTable:
    """Latency [s] of a kernel on a grid of sizes, interpolated in log-log.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per measured point: the ``axes`` columns and ``latency`` [ms]; duplicate points
        (several kernels measured) keep the fastest.
    axes : sequence of str
        The size columns, each > 0.
    exponents : sequence of float
        Per axis, the power of the size the latency scales with beyond the grid's ends.
    """

    def __init__(self, frame, axes: Sequence[str], exponents: Sequence[float]):
        from scipy.interpolate import RegularGridInterpolator
        best = frame.groupby(list(axes))["latency"].min()
        self.axes = tuple(axes)
        #: The shortest latency measured [s]: the kernel's launch and ramp at its least work.
        self.shortest = float(best.min()) * MS
        self.exponents = np.asarray(exponents, dtype=float)
        self.points = [np.array(sorted(best.index.get_level_values(a).unique()), dtype=float)
                       for a in axes]
        self.log_points = [np.log(p) for p in self.points]
        grid = np.full([p.size for p in self.points], np.nan)
        index = [np.searchsorted(p, best.index.get_level_values(a).to_numpy(dtype=float))
                 for p, a in zip(self.points, axes)]
        grid[tuple(index)] = np.log(best.to_numpy(dtype=float) * MS)
        for _ in range(len(axes) + 1):           # holes: fill along each axis in turn
            if not np.isnan(grid).any():
                break
            for axis, log_x in enumerate(self.log_points):
                exponent = self.exponents[axis]
                grid = np.apply_along_axis(
                    lambda line, lx=log_x, e=exponent: _fill_line(lx, line, e), axis, grid)
        if np.isnan(grid).any():
            raise ValueError(f"table over {axes} has holes that no axis can fill")
        singleton = [p.size == 1 for p in self.points]
        if any(singleton):
            raise ValueError(f"table over {axes} has a single value on an axis")
        self._interp = RegularGridInterpolator(self.log_points, grid, method="linear")

    def __call__(self, *sizes: float) -> float:
        """Latency [s] at ``sizes`` (one per axis, each > 0)."""
        log_sizes = np.log(np.asarray(sizes, dtype=float))
        lo = np.array([p[0] for p in self.log_points])
        hi = np.array([p[-1] for p in self.log_points])
        inside = np.clip(log_sizes, lo, hi)
        log_t = float(self._interp(inside[None, :])[0])
        return math.exp(log_t + float(np.dot(self.exponents, log_sizes - inside)))


class Streamed:
    """A kernel's latency [s] in a served step: its table's, floored at its fixed time plus
    the bytes it reads from device memory at the rate the same table streams them.

    The tables time each kernel again and again on the same operands, so weights or a KV cache
    that fit in the GPU's L2 cache are read from the cache after the first run. The L40S's bf16
    GEMM table reads 4-60 MB weight matrices at up to 2,469 GB/s, 2.9 times its 864 GB/s of
    GDDR6, and its decode attention 67 MB of KV at 1,763 GB/s; the RTX PRO 6000's (GB202,
    128 MB of L2) at up to 3,017 and 2,462 GB/s against 1,597. A served step reads every
    layer's weights and KV cache once, and a model is many times the L2, so each kernel reads
    them from device memory: at no more than the rate the table shows for operands larger
    than any L2 (:func:`streaming_bandwidth`), after the launch and ramp every kernel pays
    (``fixed``, the table's shortest latency: 1.5-2.5 us for a bf16 GEMM, 3.2-5.5 us for an
    FP8 one under vLLM and SGLang, 10-12 us under TensorRT-LLM, 3.8-14 us for a decode
    attention). The table's own points past the L2 hold both; a floor of the bytes alone
    dropped the fixed time of every kernel whose operands fit in the cache, most of the
    L40S's and RTX PRO 6000's layers. On the HBM GPUs the floor binds less often (their small
    operands run below the streaming rate).

    Parameters
    ----------
    table : LogGridTable
        The kernel's table.
    read_bytes : callable
        Bytes the kernel reads from device memory at the table's sizes (one per axis).
    bandwidth : float
        The table's streaming rate [B/s].
    fixed : float
        The kernel's time at no bytes [s], >= 0 (default 0).
    """

    def __init__(self, table: "LogGridTable", read_bytes, bandwidth: float, fixed: float = 0.0):
        self.table = table
        self.read_bytes = read_bytes
        self.bandwidth = float(bandwidth)
        self.fixed = float(fixed)

    def __call__(self, *sizes: float) -> float:
        """Latency [s] at ``sizes`` (one per axis of the table)."""
        return max(self.table(*sizes), self.fixed + self.read_bytes(*sizes) / self.bandwidth)


def streaming_bandwidth(frame, axes: Sequence[str], read_bytes, where=None) -> float:
    """A kernel table's streaming rate [B/s]: the median, over its points that read at least
    :data:`STREAMING_BYTES` (and meet ``where``, a function of the point's sizes; the fastest
    kernel per point), of the bytes read over the latency.

    Raises
    ------
    ValueError
        If no point qualifies.
    """
    best = frame.groupby(list(axes), as_index=False)["latency"].min()
    sizes = [best[a].to_numpy(dtype=float) for a in axes]
    moved = read_bytes(*sizes)
    keep = moved >= STREAMING_BYTES
    if where is not None:
        keep &= where(*sizes)
    if not keep.any():
        raise ValueError(f"kernel table over {tuple(axes)} has no point reading "
                         f"{STREAMING_BYTES / 2**20:.0f} MiB or more to read its streaming "
                         f"rate from")
    return float(np.median(moved[keep] / (best["latency"].to_numpy(dtype=float)[keep] * MS)))


def _gemm(rows, dtype: str, pins: float = math.inf) -> Streamed:
    """The GEMM table of one format, floored at its fixed time and its weights' streaming
    (:class:`Streamed`), at most ``pins`` [B/s] (the GPU's datasheet bandwidth: no kernel
    reads faster)."""
    axes = ("m", "n", "k")
    weights = GEMM_BYTES[dtype]

    def read(m, n, k):
        return n * k * weights
    rate = streaming_bandwidth(rows, axes, read, where=lambda m, n, k: m <= STREAMING_ROWS)
    table = LogGridTable(rows, axes, (1.0, 1.0, 1.0))
    return Streamed(table, read, min(rate, pins), fixed=table.shortest)


def _generation_attention(rows, kv_heads: int, pins: float = math.inf) -> Streamed:
    """The decode attention table of one head pair, floored at its fixed time and its KV
    cache's streaming (:class:`Streamed`): ``batch × context`` tokens of K and V, ``kv_heads``
    heads of 128 elements each in :data:`KV_CACHE_DTYPE` (2 bytes); the rate at most ``pins``
    [B/s], the GPU's datasheet bandwidth (TensorRT-LLM 1.0's A100 table streams 2,639 GB/s of
    such a KV cache, 1.3 times the A100's 2,039: no bf16 cache is read from its memory that
    fast)."""
    axes = ("batch_size", "step")
    per_token = 2 * kv_heads * 128 * 2.0

    def read(batch, tokens):
        return batch * tokens * per_token
    rate = streaming_bandwidth(rows, axes, read)
    table = LogGridTable(rows, axes, (1.0, 1.0))
    return Streamed(table, read, min(rate, pins), fixed=table.shortest)


def _read(path: Path):
    import pandas as pd
    return pd.read_parquet(path)


def _bf16_gemm_tables(system: str):
    """``system``'s bf16 GEMM table of each engine with one (its newest version's)."""
    for engine in ENGINES:
        version = engine_version(system, engine)
        if version is not None:
            frame = _read(data_root() / system / "gemm" / engine / version / "gemm_perf.parquet")
            yield frame[frame["gemm_dtype"] == GEMM_DTYPES["bf16"]]


def gpu_streaming_bandwidth(system: str) -> float:
    """``system``'s measured device-memory bandwidth [B/s]: the median, over the engines with
    tables there, of the rate their bf16 GEMM table streams weights of at least
    :data:`STREAMING_BYTES` (:func:`streaming_bandwidth`, the :class:`Streamed` floor's). The
    catalogue's ``streaming_bandwidth_tb_s`` of the profiled GPUs is this, to 0.1 GB/s
    (``tests/test_engine_profile_data.py`` re-derives it where the extra is installed)."""
    rates = [_gemm(rows, "bf16").bandwidth for rows in _bf16_gemm_tables(system)]
    if not rates:
        raise ValueError(f"no bf16 GEMM table for {system}")
    return float(np.median(rates))


def gemm_throughput(frame) -> float:
    """A GEMM table's throughput [FLOP/s]: the :data:`GEMM_THROUGHPUT_QUANTILE`, over its
    points with m, n and k at least :data:`GEMM_THROUGHPUT_SIZE` (the fastest kernel per
    point), of ``2·m·n·k`` over the latency.

    Raises
    ------
    ValueError
        If no point qualifies.
    """
    best = frame.groupby(["m", "n", "k"], as_index=False)["latency"].min()
    m, n, k = (best[a].to_numpy(dtype=float) for a in ("m", "n", "k"))
    keep = np.minimum(np.minimum(m, n), k) >= GEMM_THROUGHPUT_SIZE
    if not keep.any():
        raise ValueError(f"GEMM table has no point with m, n and k all {GEMM_THROUGHPUT_SIZE} "
                         f"or more to read its throughput from")
    seconds = best["latency"].to_numpy(dtype=float)[keep] * MS
    rates = 2.0 * m[keep] * n[keep] * k[keep] / seconds
    return float(np.quantile(rates, GEMM_THROUGHPUT_QUANTILE))


def gpu_gemm_throughput(system: str) -> float:
    """``system``'s measured 16-bit GEMM throughput [FLOP/s]: the median, over the engines
    with tables there, of their bf16 GEMM tables' :func:`gemm_throughput`. The catalogue's
    ``gemm_tflops`` of the profiled GPUs is this, to 0.1 TFLOP/s
    (``tests/test_engine_profile_data.py`` re-derives it where the extra is installed)."""
    rates = [gemm_throughput(rows) for rows in _bf16_gemm_tables(system)]
    if not rates:
        raise ValueError(f"no bf16 GEMM table for {system}")
    return float(np.median(rates))


@functools.cache
def top_gemm_share() -> float:
    """The largest measured GEMM share (``gemm_flops / peak_flops``) of the catalogue's GPUs."""
    gpus = [catalog.gpu(name) for name in catalog.gpus()]
    return max(g.gemm_flops / g.peak_flops for g in gpus if g.gemm_flops is not None)


def gemm_scale(gpu) -> float | None:
    """What the fits scale ``gpu``'s dense peaks by: its measured GEMM share over
    :func:`top_gemm_share`; ``None`` where unmeasured."""
    return None if gpu.gemm_flops is None else gpu.gemm_flops / gpu.peak_flops / top_gemm_share()


def fit_gpu(name: str):
    """The catalogue GPU ``name`` as the kernel fits see it: its HBM bandwidth replaced by
    its measured ``streaming_bandwidth``, and every format's dense peak scaled by its measured
    GEMM share ``gemm_flops / peak_flops`` over the largest one (:func:`top_gemm_share`),
    where the catalogue gives them. Fitted against what the memory and the clock reach, the
    efficiencies mean the same on every GPU (the profiled ones stream at 77-93 % of their
    datasheet bandwidths and run large bf16 GEMMs at 67-86 % of their datasheet peaks, the
    L40S least, the A100 most), so a fit pooled over GPUs carries to the one left out; over
    the largest share, not the GPU's own, the compute efficiencies stay at most 1 (a
    model's GEMMs reach a little above the tables' figure). :func:`to_datasheet` turns them
    back into shares of the datasheet figures the package's GPUs hold."""
    gpu = catalog.gpu(name)
    if gpu.streaming_bandwidth is not None:
        gpu = dataclasses.replace(gpu, hbm_bandwidth=gpu.streaming_bandwidth)
    scale = gemm_scale(gpu)
    if scale is not None:
        gpu = dataclasses.replace(
            gpu, peak_flops=gpu.peak_flops * scale,
            peak_flops_by_dtype={k: v * scale for k, v in gpu.peak_flops_by_dtype.items()})
    return gpu


def fit_gpus(rows) -> dict:
    """``{name: fit_gpu(name)}`` for the GPUs of ``rows`` (the ``gpus=`` of
    :func:`rooflinekit.calibrate.calibrate` and ``predict``)."""
    return {name: fit_gpu(name) for name in sorted({r["gpu"] for r in rows})}


def to_datasheet(knobs: dict, name: str) -> dict:
    """``knobs`` (:meth:`ProfileFit.knobs`, fitted on :func:`fit_gpu`) as shares of GPU
    ``name``'s datasheet figures: every bandwidth share of
    :data:`rooflinekit.roofline.SHARE_KNOBS`, value and interval, times
    ``streaming_bandwidth / hbm_bandwidth``, every compute share times
    ``gemm_flops / peak_flops`` over :func:`top_gemm_share`, where the catalogue gives them
    (:func:`fit_gpu`'s scales); a phase without
    ``bandwidth_efficiency`` or ``compute_efficiency`` (1: all the memory or clock reaches)
    gets the share. The same step times on the catalogue GPU as the fit had on its measured
    one."""
    gpu = catalog.gpu(name)
    shares = []
    if gpu.streaming_bandwidth is not None:
        shares.append(("bandwidth_efficiency", SHARE_KNOBS["bandwidth_efficiency"],
                       gpu.streaming_bandwidth / gpu.hbm_bandwidth))
    if gpu.gemm_flops is not None:
        shares.append(("compute_efficiency", SHARE_KNOBS["compute_efficiency"],
                       gemm_scale(gpu)))
    if not shares:
        return knobs
    out = {"prefill": dict(knobs["prefill"]), "decode": dict(knobs["decode"]),
           "interval": {p: dict(v) for p, v in knobs["interval"].items()}}
    for phase in ("prefill", "decode"):
        for whole, names, share in shares:
            if out[phase].get(whole) is None:
                out[phase][whole] = 1.0
                out["interval"].setdefault(phase, {})[whole] = [1.0, 1.0]
            for knob in names:
                if out[phase].get(knob) is not None:
                    out[phase][knob] = out[phase][knob] * share
                band = out["interval"].get(phase, {}).get(knob)
                if band is not None:
                    out["interval"][phase][knob] = [band[0] * share, band[1] * share]
    return {**knobs, **out}


@dataclass
class KernelTables:
    """The tables of one (system, engine, version), ready to time a step.

    Attributes
    ----------
    gemm : dict
        rooflinekit dtype -> :class:`Streamed` (a :class:`LogGridTable` over (m, n, k)
        floored at the weights' streaming).
    generation_attention, context_attention : dict
        (query heads, KV heads) -> a table over (batch, tokens): for decode a
        :class:`Streamed` (floored at the KV cache's streaming), for prompts a
        :class:`LogGridTable`.
    allreduce : dict
        GPUs -> :class:`LogGridTable` over (message elements,).
    files : list of str
        The parquet files read, relative to ``systems/data``.
    """

    gemm: dict
    generation_attention: dict
    context_attention: dict
    allreduce: dict
    files: list


def _full_attention_rows(frame, head_dim: int = WIDE_HEAD_DIM):
    """An attention table's rows the fits read: :data:`ATTENTION_DTYPE` with a
    :data:`KV_CACHE_DTYPE` cache, heads of ``head_dim`` (128 by default), full attention, no
    beams (older tables lack the window and beam columns: they measured full attention
    only)."""
    wanted = {"attn_dtype": ATTENTION_DTYPE, "kv_cache_dtype": KV_CACHE_DTYPE,
              "head_dim": head_dim, "window_size": 0, "beam_width": 1}
    for column, value in wanted.items():
        if column in frame:
            frame = frame[frame[column] == value]
    return frame


def load_tables(system: str, engine: str, version: str, head_pairs: Iterable[tuple]) -> \
        KernelTables:
    """Read and index the kernel tables of ``engine`` ``version`` on ``system``.

    Parameters
    ----------
    head_pairs : iterable of (int, int)
        The (query heads, KV heads) per GPU the workloads need.
    """
    root = data_root()
    files = []
    pins = catalog.gpu(SYSTEM_TO_GPU[system]).hbm_bandwidth

    def read(op, ver, name):
        path = root / system / op / engine / ver / name
        files.append(str(path.relative_to(root)))
        return _read(path)

    gemm_frame = read("gemm", version, "gemm_perf.parquet")
    gemm = {}
    for dtype, gemm_dtype in {**GEMM_DTYPES, **CHECK_DTYPES}.items():
        rows = gemm_frame[gemm_frame["gemm_dtype"] == gemm_dtype]
        if len(rows):
            gemm[dtype] = _gemm(rows, dtype, pins)
    attention = {}
    for kind, token_axis, token_exponent in (("generation", "step", 1.0),
                                             ("context", "isl", 2.0)):
        frame = _full_attention_rows(read("attention", version, f"{kind}_attention_perf.parquet"))
        tables = {}
        for heads, kv_heads in sorted(set(head_pairs)):
            rows = frame[(frame["num_heads"] == heads) & (frame["num_key_value_heads"] == kv_heads)]
            if not len(rows):
                continue
            if kind == "generation":     # a decode reads its KV cache: floored at streaming
                tables[(heads, kv_heads)] = _generation_attention(rows, kv_heads, pins)
            else:                        # a prompt's attention is compute-bound
                tables[(heads, kv_heads)] = LogGridTable(
                    rows, ("batch_size", token_axis), (1.0, token_exponent))
        attention[kind] = tables
    allreduce = {}
    comm_version = allreduce_version(system, engine, version)
    if comm_version is not None:
        frame = _allreduce_rows(read("comm", comm_version, "custom_allreduce_perf.parquet"))
        for n_gpus, rows in frame.groupby(frame["num_gpus"].astype(int)):
            allreduce[int(n_gpus)] = LogGridTable(rows, ("message_size",), (1.0,))
    return KernelTables(gemm, attention["generation"], attention["context"], allreduce, files)


# -- the MoE stage -------------------------------------------------------------------------------

def _intercepts(latency: np.ndarray, weight_bytes: np.ndarray, bandwidth: float) -> np.ndarray:
    """A kernel's fixed time [s]: its latency less its weights' read at ``bandwidth``."""
    return latency - weight_bytes / bandwidth


def attention_low_precision_share(log=None) -> float:
    """The attention GEMMs' share of a dense layer's low-precision fixed time, as every newest
    GEMM table with FP8 rows gives it (``ATTENTION_LOW_PRECISION_SHARE`` of
    :mod:`rooflinekit.roofline.engine` holds it, to two decimals).

    Per table (an engine's newest version on a GPU, :func:`engine_version`), each of
    Llama-3.1-8B's and -70B's four weight GEMMs at TP 1-8 and 1-8 rows takes an FP8 fixed
    time beyond its bf16 one: the difference of their intercepts (:func:`_intercepts`, each
    format's weights read at the GPU's streaming bandwidth). The table's share is the median
    of the qkv and o GEMMs' sum over the median of the layer's four; the value is the median
    over the tables. ``log`` (a print function) prints each table's share.
    """
    shares = []
    for engine in ENGINES:
        for system in systems_with_data():
            version = engine_version(system, engine)
            if version is None:
                continue
            tables = load_tables(system, engine, version, ())
            if "fp8" not in tables.gemm:
                continue
            gpu = catalog.gpu(SYSTEM_TO_GPU[system])
            bandwidth = gpu.streaming_bandwidth or gpu.hbm_bandwidth

            def extra(rows, n, k):
                bf16, fp8 = (float(_intercepts(tables.gemm[f](rows, n, k),
                                               n * k * GEMM_BYTES[f], bandwidth))
                             for f in ("bf16", "fp8"))
                return fp8 - bf16
            attention, layer = [], []
            for name in MODELS:
                model = catalog.model(name)
                h, inter = model.hidden_size, model.intermediate_size
                width = h // model.n_heads
                q, kv = model.n_heads * width, model.n_kv_heads * width
                for tp in TP_DEGREES:
                    for rows in (1, 2, 4, 8):
                        att = extra(rows, (q + 2 * kv) // tp, h) + extra(rows, h, q // tp)
                        attention.append(att)
                        layer.append(att + extra(rows, 2 * inter // tp, h)
                                     + extra(rows, h, inter // tp))
            shares.append(float(np.median(attention) / np.median(layer)))
            if log is not None:
                log(f"{engine} {system} {version}: attention share {shares[-1]:.2f}")
    return float(np.median(shares))


def _extra_fixed_time(block: np.ndarray, reference: np.ndarray,
                      n_resamples: int) -> tuple[float, list]:
    """How much longer a block's fixed times (``block`` [s], one per table row) are than the
    dense layer's kernels' that ``layer_overhead`` already holds (``reference``): the
    difference of their medians (≥ 0), and its :data:`CONFIDENCE` interval over
    ``n_resamples`` resamples of both (seed :data:`SEED`), widened to hold the value."""
    value = max(0.0, float(np.median(block) - np.median(reference)))
    rng = np.random.default_rng(SEED)
    draws = [max(0.0, float(np.median(rng.choice(block, block.size))
                            - np.median(rng.choice(reference, reference.size))))
             for _ in range(n_resamples)]
    low, high = np.quantile(draws, (0.5 - CONFIDENCE / 2, 0.5 + CONFIDENCE / 2))
    return value, [min(float(low), value), max(float(high), value)]


def moe_layer_overhead(system: str, engine: str, version: str, bandwidth_efficiency: float,
                       n_resamples: int = N_RESAMPLES) -> dict | None:
    """``moe_layer_overhead`` [s] of one (engine, GPU) from its MoE and GEMM tables, or None
    where the version has no MoE table.

    An MoE block at a few tokens takes a fixed time beyond reading its experts' weights
    (routing, token permutation, grouped GEMM launches): per row of the MoE table
    (:func:`_moe_rows` of :data:`MOE_MAX_TOKENS` tokens or fewer in the formats of
    :data:`MOE_BYTES`), its latency less
    the experts touched (``E·(1 − (1 − k/E)^n)`` of them, ``3·h·I`` weights each, over the
    shards) read at the HBM bandwidth times the profile's decode ``bandwidth_efficiency``. The
    dense layer's MLP (gate_up and down), which ``layer_overhead`` holds, has such a fixed time
    too: the same difference for the bf16 GEMMs of Llama-3.1-8B and -70B's MLPs at TP 1-8 and
    1-16 rows. The knob is the MoE block's median less the MLP's (≥ 0); its interval the
    5th-95th percentile of that over :data:`N_RESAMPLES` resamples of both tables' rows (seed
    :data:`SEED`).
    """
    rows = _moe_rows(system, engine, version)
    if rows is None:
        return None
    gpu = catalog.gpu(SYSTEM_TO_GPU[system])
    bandwidth = gpu.hbm_bandwidth * bandwidth_efficiency
    best = rows[rows["moe_dtype"].isin(list(MOE_BYTES))
                & (rows["num_tokens"] <= MOE_MAX_TOKENS)]
    if best.empty:
        return None
    e, k, n = (best[c].to_numpy(dtype=float) for c in ("num_experts", "topk", "num_tokens"))
    touched = e * (1.0 - (1.0 - k / e) ** n)
    weights = touched * 3.0 * best["hidden_size"].to_numpy(dtype=float) * \
        best["inter_size"].to_numpy(dtype=float) * \
        best["moe_dtype"].map(MOE_BYTES).to_numpy(dtype=float) / \
        best["moe_tp_size"].to_numpy(dtype=float)
    moe = _intercepts(best["latency"].to_numpy(dtype=float) * MS, weights, bandwidth)
    tables = load_tables(system, engine, version, ())
    gemm = tables.gemm["bf16"]
    mlp = []
    for name in MODELS:
        model = catalog.model(name)
        h, inter = model.hidden_size, model.intermediate_size
        for tp in TP_DEGREES:
            for rows in (1, 2, 4, 8, 16):
                latency = gemm(rows, 2 * inter // tp, h) + gemm(rows, h, inter // tp)
                mlp.append(float(_intercepts(latency, 3.0 * h * inter / tp * 2.0, bandwidth)))
    mlp = np.array(mlp)
    value, interval = _extra_fixed_time(moe, mlp, n_resamples)
    return {"value": value, "interval": interval,
            "moe_points": int(moe.size), "moe_median": float(np.median(moe)),
            "mlp_median": float(np.median(mlp)),
            "file": str(_moe_path(system, engine, version).relative_to(data_root()))}


def _moe_path(system: str, engine: str, version: str) -> Path:
    """Where the MoE table of one (GPU, engine, version) lies."""
    return data_root() / system / "moe" / engine / version / "moe_perf.parquet"


@functools.lru_cache(maxsize=4)
def _moe_rows(system: str, engine: str, version: str):
    """The MoE table's rows of :data:`MOE_PATHS`'s formats (no expert parallelism, tokens
    spread evenly, the tensor-parallel degrees of :data:`TP_DEGREES`; the fastest kernel per
    point), or None where the version has none. Read once per table (the MoE stage's two
    knobs and ``--diagnose`` share it); callers select rows, never change them."""
    path = _moe_path(system, engine, version)
    if not path.exists():
        return None
    frame = _read(path)
    frame = frame[frame["moe_dtype"].isin(list(MOE_PATHS)) & (frame["moe_ep_size"] == 1)
                  & frame["distribution"].isin(list(MOE_DISTRIBUTIONS))
                  & frame["moe_tp_size"].isin(list(TP_DEGREES))]
    keys = ["moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk", "num_experts",
            "moe_tp_size"]
    best = frame.groupby(keys, as_index=False)["latency"].min()
    return None if best.empty else best


def _path_shares(knobs: dict) -> tuple[dict, dict]:
    """The GEMMs' compute efficiency (prefill) and their weight reads' bandwidth share
    (decode) on each path of ``knobs``, ``{"bf16": ..., "fp8": ..., "fp4": ...}`` each: a
    path's own knob, else the one it falls back on (``Engine``'s ``None``)."""
    pre, dec = knobs["prefill"], knobs["decode"]
    efficiency = {"bf16": pre["compute_efficiency"]}
    efficiency["fp8"] = pre.get("low_precision_compute_efficiency") or efficiency["bf16"]
    efficiency["fp4"] = pre.get("fp4_compute_efficiency") or efficiency["fp8"]
    share = {"bf16": dec["bandwidth_efficiency"]}
    share["fp8"] = dec.get("low_precision_bandwidth_efficiency") or share["bf16"]
    share["fp4"] = dec.get("fp4_bandwidth_efficiency") or share["fp8"]
    return efficiency, share


def moe_block_times(best, knobs: dict, system: str) -> dict:
    """Per row of ``best`` (:func:`_moe_rows`) as the planner times an MoE block: its format,
    ``latency`` [s] (measured), ``compute`` (its experts' FLOPs at the dense GEMMs' share of
    the format's path, on the GEMM curve, [s]) and ``memory`` (the experts touched read at
    the path's bandwidth share [s]), with the profile's prefill efficiencies and decode
    bandwidth shares (``knobs``, datasheet shares). Rows of a path the GPU lacks are dropped."""
    gpu = catalog.gpu(SYSTEM_TO_GPU[system])
    pre = knobs["prefill"]
    efficiency, share = _path_shares(knobs)
    peaks = gpu.peak_flops_by_dtype
    keep = [MOE_PATHS[f][0] in peaks for f in best["moe_dtype"]]
    best = best[keep]
    paths = [MOE_PATHS[f][0] for f in best["moe_dtype"]]
    e, k, n, h, inter, tp = (best[c].to_numpy(dtype=float) for c in (
        "num_experts", "topk", "num_tokens", "hidden_size", "inter_size", "moe_tp_size"))
    half = pre.get("gemm_half_tokens", 0.0)
    flops = 2.0 * n * k * 3.0 * h * inter / tp
    peak = np.array([peaks[p] * efficiency[p] for p in paths]) * n / (n + half)
    touched = e * (1.0 - (1.0 - k / e) ** n)
    weight_bytes = touched * 3.0 * h * inter * np.array(
        [MOE_PATHS[f][1] for f in best["moe_dtype"]]) / tp
    bandwidth = gpu.hbm_bandwidth * np.array([share[p] for p in paths])
    return {"format": best["moe_dtype"].to_numpy(), "tokens": n,
            "latency": best["latency"].to_numpy(dtype=float) * MS,
            "compute": flops / peak, "memory": weight_bytes / bandwidth}


def moe_compute_share(system: str, engine: str, version: str, knobs: dict, fixed: float,
                      n_resamples: int = N_RESAMPLES) -> dict | None:
    """``moe_compute_share`` [1] of one (engine, GPU) from its MoE table, or None where the
    version has none.

    The tables' MoE blocks at many tokens a step run their experts' grouped GEMMs (a few rows
    per expert, a launch per expert) far below a dense GEMM's share of the peak: on the
    compute-bound rows (:data:`MOE_COMPUTE_BOUND`; :func:`moe_block_times` with the profile's
    dense ``knobs``), the share is the dense GEMMs' time over the block's time less its fixed
    part (``fixed`` [s]: the MoE stage's median intercept, :func:`moe_layer_overhead`'s
    ``moe_median``); per format of :data:`MOE_PATHS` but the MXFP4 ones (their own knob,
    :func:`mxfp4_moe_compute_share`) the median, and the knob the median over formats, so
    that each format weighs alike, clipped to (0.02, 1]. Its interval: the 5th-95th
    percentile over :data:`N_RESAMPLES` resamples of each format's rows (seed :data:`SEED`).
    """
    best = _moe_rows(system, engine, version)
    if best is None:
        return None
    return _compute_share(moe_block_times(_other_rows(best), knobs, system), fixed, 1.0,
                          n_resamples)


def _other_rows(best):
    """``best``'s (:func:`_moe_rows`) rows of the formats but MXFP4's, which
    ``moe_compute_share`` reads (:func:`_mxfp4_rows` the MXFP4 kernel's)."""
    return best[~best["moe_dtype"].isin(list(MXFP4_FORMATS))]


def _mxfp4_rows(system: str, engine: str, version: str):
    """The MoE table's rows of the MXFP4 kernel the engine serves gpt-oss with
    (:data:`MXFP4_KERNELS`: the first of its kernels the table holds), or None."""
    best = _moe_rows(system, engine, version)
    if best is None:
        return None
    held = [f for f in MXFP4_KERNELS[engine] if (best["moe_dtype"] == f).any()]
    return best[best["moe_dtype"] == held[0]] if held else None


def mxfp4_moe_compute_share(system: str, engine: str, version: str, knobs: dict, fixed: float,
                            n_resamples: int = N_RESAMPLES) -> dict | None:
    """``mxfp4_moe_compute_share`` [1] of one (engine, GPU): :func:`moe_compute_share`'s
    reading of the MoE table's rows of the MXFP4 kernel the engine serves gpt-oss with
    (:func:`_mxfp4_rows`), clipped to (0.02, :data:`MAX_MXFP4_SHARE`]; None where the table
    has no compute-bound row of it.

    The planner times MXFP4 experts on the 16-bit path; the engines run them with kernels of
    their own per GPU. Under TensorRT-LLM 1.3 at gpt-oss-20b's shape (2,048 tokens, TP 1,
    balanced), a layer's experts take 1.13 ms on the H200 (W4A16: 0.36 of the 16-bit peak)
    and 0.23 ms on the B200 (W4A8: 0.78), where the median over the other formats times them
    at 0.89 and 0.33 ms.
    """
    rows = _mxfp4_rows(system, engine, version)
    if rows is None:
        return None
    return _compute_share(moe_block_times(rows, knobs, system), fixed, MAX_MXFP4_SHARE,
                          n_resamples)


def _compute_share(times: dict, fixed: float, highest: float, n_resamples: int) -> dict | None:
    """The share of :func:`moe_compute_share` over the compute-bound blocks of ``times``
    (:func:`moe_block_times`), clipped to (0.02, ``highest``], with its interval, the median
    per format (``by_format``) and the rows read (``points``); None where no block is
    compute-bound."""
    bound = times["compute"] >= MOE_COMPUTE_BOUND * times["memory"]
    ratio = times["compute"] / np.maximum(times["latency"] - fixed, 1e-9)
    formats = sorted({f for f, b in zip(times["format"], bound) if b})
    if not formats:
        return None
    groups = [ratio[bound & (times["format"] == f)] for f in formats]

    def share(parts):
        return float(np.clip(np.median([np.median(p) for p in parts]), 0.02, highest))
    value = share(groups)
    rng = np.random.default_rng(SEED)
    draws = [share([rng.choice(g, g.size) for g in groups]) for _ in range(n_resamples)]
    low, high = np.quantile(draws, (0.5 - CONFIDENCE / 2, 0.5 + CONFIDENCE / 2))
    return {"value": value, "interval": [min(float(low), value), max(float(high), value)],
            "by_format": {f: float(np.median(g)) for f, g in zip(formats, groups)},
            "points": int(bound.sum())}


def moe_block_errors(system: str, engine: str, version: str, knobs: dict,
                     held_out_share: float | None = None) -> dict | None:
    """How the profile ``knobs`` (datasheet shares, the MoE stage's knobs in) time the MoE
    table's blocks of :data:`MOE_PREFILL_TOKENS` tokens or more (:func:`moe_block_times`:
    ``max(compute / moe_compute_share, memory)`` plus the MoE stage's median intercept): the
    median absolute error [%] with the knobs' ``moe_compute_share`` (``fitted``), with 1
    (``dense``: every grouped GEMM at a dense GEMM's share) and, where given, with
    ``held_out_share`` (``held_out``: the other GPUs' median), each with its median signed
    error (``*_bias`` [%], < 0: too fast), and the rows scored; None where the version has no
    MoE table. The MXFP4 rows are not scored (:func:`mxfp4_block_errors`)."""
    best = _moe_rows(system, engine, version)
    if best is None:
        return None
    shares = [("dense", 1.0), ("fitted", knobs["prefill"]["moe_compute_share"])]
    if held_out_share is not None:
        shares.append(("held_out", held_out_share))
    return _block_errors(_other_rows(best), system, engine, version, knobs, shares)


def mxfp4_block_errors(system: str, engine: str, version: str, knobs: dict) -> dict | None:
    """:func:`moe_block_errors` of the MXFP4 kernel the engine serves gpt-oss with
    (:func:`_mxfp4_rows`): with the knobs' ``mxfp4_moe_compute_share`` (``fitted``) and with
    their ``moe_compute_share`` (``moe_share``: the MXFP4 experts timed as the other formats'
    are); None where the table has no such rows."""
    rows = _mxfp4_rows(system, engine, version)
    if rows is None:
        return None
    return _block_errors(rows, system, engine, version, knobs, [
        ("moe_share", knobs["prefill"]["moe_compute_share"]),
        ("fitted", knobs["prefill"]["mxfp4_moe_compute_share"])])


def _block_errors(rows, system: str, engine: str, version: str, knobs: dict,
                  shares: list) -> dict | None:
    """Median absolute and signed errors [%] of ``rows``' blocks of
    :data:`MOE_PREFILL_TOKENS` tokens or more timed at each ``(label, share)`` of ``shares``
    (:func:`moe_block_errors`), and the rows scored."""
    moe = moe_layer_overhead(system, engine, version, knobs["decode"]["bandwidth_efficiency"])
    if moe is None:
        return None
    times = moe_block_times(rows, knobs, system)
    big = times["tokens"] >= MOE_PREFILL_TOKENS
    out = {"rows": int(big.sum())}
    for label, share in shares:
        predicted = np.maximum(times["compute"] / share, times["memory"]) + moe["moe_median"]
        error = predicted[big] / times["latency"][big] - 1.0
        out[label] = float(100.0 * np.median(np.abs(error)))
        out[f"{label}_bias"] = float(100.0 * np.median(error))
    return out


#: DeepSeek-V3's attention module, as the MLA tables time it (its ``config.json``): hidden 7,168,
#: query latent 1,536, KV latent 512 and its 64 RoPE values, query and key heads of 128 + 64,
#: value heads of 128; the tables' ``num_heads`` are one GPU's of the 128.
MLA_MODULE = {"hidden": 7168, "q_lora": 1536, "kv_lora": 512, "rope": 64, "nope": 128,
              "v": 128}
#: The MLA context-module rows :func:`mla_context_errors` scores: prompts this long or longer,
#: where attention is a large part of the module's work.
MLA_LONG_PROMPT = 4096


#: The MLA generation-module rows :func:`mla_layer_overhead` reads: this many sequences or
#: fewer, at this context or shorter (a fixed time shows where little is read).
MLA_MAX_BATCH = 16
MLA_MAX_CONTEXT = 1024
#: The head pairs and contexts of the GQA attention block :func:`mla_layer_overhead` holds an
#: MLA module against (Llama-3.1-8B and -70B at :data:`TP_DEGREES`).
GQA_CONTEXTS = (128, 512, 1024)


def _mla_module_path(system: str, engine: str, version: str, phase: str) -> Path:
    """Where the MLA module table of one (GPU, engine, version) and phase lies."""
    return data_root() / system / "mla" / engine / version / f"mla_{phase}_module_perf.parquet"


def _as_served(path: Path) -> bool:
    """Whether a module table times the module as the engine serves it. vLLM's collector
    before its fused-op fix (ai-dynamo/aiconfigurator#1423) ran the module's norms as native
    PyTorch chains that serving never runs (+34 % at the one point its B200 note re-measured):
    a vLLM table counts where its ``collection_meta.yaml`` records the fix for it
    (``norm_dispatch``) or the collector revision it ran (``collector_ref``). The other
    engines' collectors run the engine's own module."""
    if "/vllm/" not in path.as_posix():
        return True
    meta = path.parent / "collection_meta.yaml"
    lines = meta.read_text().splitlines() if meta.exists() else []
    # the table's block: its key's line under ``tables:`` and the deeper lines after it
    start = next((i for i, line in enumerate(lines) if line.strip() == f"{path.stem}:"), None)
    if start is None:
        return False
    depth = len(lines[start]) - len(lines[start].lstrip())
    block = []
    for line in lines[start + 1:]:
        if line.strip() and len(line) - len(line.lstrip()) <= depth:
            break
        block.append(line.strip())
    return any(line.startswith(("norm_dispatch:", "collector_ref:")) for line in block)


def mla_module_tables(system: str, engine: str, version: str) -> list[Path]:
    """The MLA generation-module tables that time the module for (``system``, ``engine``,
    ``version``) as served (:func:`_as_served`): the version's own, else the engine's newest
    on the GPU; none for SGLang, which has no module collector (another engine's tables
    standing in for it made its served fit worse: ``docs/validation.md``)."""
    own = _mla_module_path(system, engine, version, "generation")
    if own.exists() and _as_served(own):
        return [own]
    folder = data_root() / system / "mla" / engine
    newer = sorted((p for p in folder.glob("*/mla_generation_module_perf.parquet")
                    if _as_served(p)), key=lambda p: version_key(p.parent.name))
    return newer[-1:]


def _mla_module_weights(heads) -> np.ndarray:
    """Parameters of DeepSeek-V3's attention module on one GPU running ``heads`` of its heads
    (:data:`MLA_MODULE`): the query and KV down-projections, replicated, and per head the
    query and KV up-projections and the output projection."""
    m = MLA_MODULE
    return (m["hidden"] * (m["q_lora"] + m["kv_lora"] + m["rope"])
            + heads * (m["q_lora"] * (m["nope"] + m["rope"])
                       + m["kv_lora"] * (m["nope"] + m["v"]) + m["v"] * m["hidden"]))


def mla_layer_overhead(system: str, engine: str, version: str, bandwidth_efficiency: float,
                       n_resamples: int = N_RESAMPLES) -> dict | None:
    """``mla_layer_overhead`` [s] of one (engine, GPU) from its MLA generation-module and
    attention tables, or None where the version has no MLA module table.

    An MLA module (DeepSeek-V3's, :data:`MLA_MODULE`: about ten kernels) takes a fixed time
    beyond reading its weights and latent cache: per bf16 row of the module table of
    :data:`MLA_MAX_BATCH` sequences or fewer at :data:`MLA_MAX_CONTEXT` tokens or fewer (the
    fastest backend per point), its latency less the module's weights (two bytes each,
    :func:`_mla_module_weights`) and the ``batch × context`` latent vectors of 576 values read
    at the HBM bandwidth times the profile's decode ``bandwidth_efficiency``. A layer with KV
    heads has such a fixed time in its attention too, which ``layer_overhead`` holds: the same
    difference for the qkv and output GEMMs and the decode attention of Llama-3.1-8B and -70B
    at TP 1-8, 1-16 sequences and :data:`GQA_CONTEXTS` tokens. The knob is the module's median
    less the GQA block's (≥ 0); its interval the 5th-95th percentile of that over
    :data:`N_RESAMPLES` resamples of both (seed :data:`SEED`)."""
    paths = mla_module_tables(system, engine, version)
    if not paths:
        return None
    import pandas as pd
    frame = pd.concat([_read(path) for path in paths])
    frame = frame[(frame["gemm_type"].isin(["bfloat16", "bf16"]))
                  & (frame["kv_cache_dtype"].isin(["bfloat16", "bf16"]))
                  & (frame["batch_size"] <= MLA_MAX_BATCH) & (frame["step"] <= MLA_MAX_CONTEXT)]
    frame = frame.groupby(["num_heads", "batch_size", "step"], as_index=False)["latency"].min()
    if frame.empty:
        return None
    gpu = catalog.gpu(SYSTEM_TO_GPU[system])
    bandwidth = gpu.hbm_bandwidth * bandwidth_efficiency
    heads, batch, context = (frame[c].to_numpy(dtype=float)
                             for c in ("num_heads", "batch_size", "step"))
    latent = MLA_MODULE["kv_lora"] + MLA_MODULE["rope"]
    read = 2.0 * _mla_module_weights(heads) + batch * context * latent * 2.0
    mla = _intercepts(frame["latency"].to_numpy(dtype=float) * MS, read, bandwidth)
    models = [catalog.model(name) for name in MODELS]
    tables = load_tables(system, engine, version,
                         [head_pair(model, tp) for model in models for tp in TP_DEGREES])
    gemm = tables.gemm["bf16"]
    gqa = []
    for model in models:
        d = model.head_dim
        for tp in TP_DEGREES:
            pair = head_pair(model, tp)
            qkv, out = layer_gemms(model, tp)[:2]
            weights = 2.0 * (qkv[0] * qkv[1] + out[0] * out[1])
            for rows in (1, 2, 4, 8, 16):
                for tokens in GQA_CONTEXTS:
                    latency = gemm(rows, *qkv) + gemm(rows, *out) + \
                        tables.generation_attention[pair](rows, tokens)
                    cache = rows * tokens * 2 * pair[1] * d * 2.0
                    gqa.append(float(_intercepts(latency, weights + cache, bandwidth)))
    gqa = np.array(gqa)
    value, interval = _extra_fixed_time(mla, gqa, n_resamples)
    return {"value": value, "interval": interval,
            "mla_points": int(mla.size), "mla_median": float(np.median(mla)),
            "gqa_median": float(np.median(gqa)),
            "files": [str(path.relative_to(data_root())) for path in paths]}


#: The context-attention rows :func:`attention_compute_efficiency` reads: the longest prompts
#: the tables hold, where a prompt's attention is most of its work and nears its kernels'
#: asymptote (at 4,096 and 8,192 tokens the same kernels reach 0.1-0.2 less of the peak).
ATTENTION_LONG_PROMPT = 16384


def _context_attention_rows(system: str, engine: str, version: str):
    """The context-attention table's rows of the fitted models' head pairs at
    :data:`TP_DEGREES` (bf16, head dim 128, full attention) at :data:`ATTENTION_LONG_PROMPT`
    tokens or more."""
    frame = _full_attention_rows(_read(data_root() / system / "attention" / engine / version
                                       / "context_attention_perf.parquet"))
    pairs = {head_pair(catalog.model(name), tp) for name in MODELS for tp in TP_DEGREES}
    keep = [(h, k) in pairs for h, k in zip(frame["num_heads"], frame["num_key_value_heads"])]
    frame = frame[keep]
    return frame[frame["isl"] >= ATTENTION_LONG_PROMPT]


def attention_compute_efficiency(system: str, engine: str, version: str,
                                 n_resamples: int = N_RESAMPLES) -> dict | None:
    """``attention_compute_efficiency`` [1] of one (engine, GPU): the share of the GPU's bf16
    peak that its context attention reaches on long prompts, or None where its table holds
    none.

    Per row of :func:`_context_attention_rows`, the planner's FLOPs (``4·H·128`` a pair, a
    prompt of ``s`` tokens ``s(s − 1)/2`` pairs, ``batch`` prompts) over the measured time
    and the peak; the knob is the median, its interval the 5th-95th percentile of the median
    over :data:`N_RESAMPLES` resamples of the rows (seed :data:`SEED`). The kernel fit's
    prefill rows (prompts of at most 8,192 tokens) hold attention at the GEMMs' share; on
    these prompts it reaches 0.40-0.72 of the peak where the GEMMs reach 0.56-0.88 (0.50-1.03
    times the GEMMs' share: TensorRT-LLM's the lowest, SGLang's L40S the one above)."""
    frame = _context_attention_rows(system, engine, version)
    if frame.empty:
        return None
    gpu = catalog.gpu(SYSTEM_TO_GPU[system])
    heads, batch, prompt = (frame[c].to_numpy(dtype=float)
                            for c in ("num_heads", "batch_size", "isl"))
    flops = 4.0 * heads * 128.0 * batch * prompt * (prompt - 1.0) / 2.0
    share = flops / (gpu.peak_flops_by_dtype["bf16"] * frame["latency"].to_numpy(dtype=float)
                     * MS)
    rng = np.random.default_rng(SEED)
    draws = [float(np.median(rng.choice(share, share.size))) for _ in range(n_resamples)]
    value = float(np.median(share))
    low, high = np.quantile(draws, (0.5 - CONFIDENCE / 2, 0.5 + CONFIDENCE / 2))
    return {"value": value, "interval": [min(float(low), value), max(float(high), value)],
            "points": int(share.size)}


#: The narrow heads :func:`narrow_head_attention_share` reads: gpt-oss's and Llama-3.2-1B's.
NARROW_HEAD_DIM = 64


def narrow_head_attention_share(system: str, engine: str, version: str,
                                n_resamples: int = N_RESAMPLES) -> dict | None:
    """``narrow_head_attention_share`` [1] of one (engine, GPU): how much of the long-prompt
    attention share heads of :data:`NARROW_HEAD_DIM` reach against heads of
    :data:`WIDE_HEAD_DIM`, or None where the context-attention table holds no such pairs.

    Rows are the table's bf16, full-attention rows of prompts of at least
    :data:`ATTENTION_LONG_PROMPT` tokens (the duplicates' median latency). A row of narrow
    heads pairs with the wide row of the same query and KV heads, batch and prompt; at the
    same heads and tokens the narrow kernel does half the FLOPs, so its share against the wide
    one's is ``(t_wide / t_narrow) · (narrow / wide)``. The knob is the median over the pairs,
    capped at 1 (the Engine's range: TensorRT-LLM's L40S and RTX PRO 6000 kernels reach 1.03
    and 1.14), its interval the 5th-95th percentile of the median over :data:`N_RESAMPLES`
    resamples of the pairs (seed :data:`SEED`). Most tables put it at 0.55-0.83: a 64-wide
    tile does half the multiply-adds per byte of K and V it loads."""
    table = _read(data_root() / system / "attention" / engine / version
                  / "context_attention_perf.parquet")
    keys = ["num_heads", "num_key_value_heads", "batch_size", "isl"]
    latency = {}
    for dim in (NARROW_HEAD_DIM, WIDE_HEAD_DIM):
        frame = _full_attention_rows(table, head_dim=dim)
        frame = frame[frame["isl"] >= ATTENTION_LONG_PROMPT]
        latency[dim] = frame.groupby(keys)["latency"].median()
    pairs = latency[NARROW_HEAD_DIM].to_frame("narrow").join(
        latency[WIDE_HEAD_DIM].to_frame("wide"), how="inner")
    if pairs.empty:
        return None
    share = (pairs["wide"] / pairs["narrow"]).to_numpy(dtype=float) \
        * NARROW_HEAD_DIM / WIDE_HEAD_DIM
    rng = np.random.default_rng(SEED)
    draws = [min(float(np.median(rng.choice(share, share.size))), 1.0)
             for _ in range(n_resamples)]
    value = min(float(np.median(share)), 1.0)
    low, high = np.quantile(draws, (0.5 - CONFIDENCE / 2, 0.5 + CONFIDENCE / 2))
    return {"value": value, "interval": [min(float(low), value), max(float(high), value)],
            "points": int(share.size)}


def mla_context_errors(system: str, engine: str, version: str, knobs: dict) -> dict | None:
    """How the profile ``knobs`` (datasheet shares) time the MLA context-module table's long
    prompts (:data:`MLA_LONG_PROMPT` tokens or more; DeepSeek-V3's module,
    :data:`MLA_MODULE`): the median signed error [%] with the prompt's attention counted at
    the latent width (``latent``, 4·h·576 FLOPs a pair, as the step did) and at the head
    widths the engines prefill it at (``heads``, 4·h·160: the model's
    ``prefill_attention_width``), and the rows scored; None where the version has no such
    table. A row is ``max(GEMMs + attention, weights) + layer_overhead`` (and the FP8 GEMMs'
    own overhead): the module's five projections (two of them replicated across the heads'
    GPUs) at the prefill shares and GEMM curve, causal attention over each prompt at the
    attention's share (``attention_compute_efficiency``, else the 16-bit GEMMs'), the weights
    read once at the decode share."""
    path = _mla_module_path(system, engine, version, "context")
    if not path.exists():
        return None
    frame = _read(path)
    frame = frame[frame["isl"] >= MLA_LONG_PROMPT]
    frame = frame.groupby(["gemm_type", "kv_cache_dtype", "num_heads", "batch_size", "isl"],
                          as_index=False)["latency"].min()
    if frame.empty:
        return None
    gpu = catalog.gpu(SYSTEM_TO_GPU[system])
    pre, dec = knobs["prefill"], knobs["decode"]
    heads, batch, prompt = (frame[c].to_numpy(dtype=float)
                            for c in ("num_heads", "batch_size", "isl"))
    fp8 = (frame["gemm_type"] == "fp8_block").to_numpy()
    params = _mla_module_weights(heads)
    efficiency, streaming = _path_shares(knobs)
    share = np.where(fp8, efficiency["fp8"], efficiency["bf16"])
    peak = np.where(fp8, gpu.peak_flops_by_dtype["fp8"], gpu.peak_flops_by_dtype["bf16"])
    tokens = batch * prompt
    gemm = 2.0 * params * (tokens + pre.get("gemm_half_tokens", 0.0)) / (peak * share)
    pairs = batch * prompt * (prompt - 1.0) / 2.0
    attention_peak = gpu.peak_flops_by_dtype["bf16"] * (
        pre.get("attention_compute_efficiency") or pre["compute_efficiency"])
    streamed = np.where(fp8, streaming["fp8"], streaming["bf16"])
    weights = params * np.where(fp8, 1.0, 2.0) / (gpu.hbm_bandwidth * streamed)
    fixed = dec.get("layer_overhead", 0.0) + np.where(
        fp8, dec.get("low_precision_layer_overhead", 0.0), 0.0)
    latency = frame["latency"].to_numpy(dtype=float) * MS
    model = catalog.model("DeepSeek-V3")
    out = {"rows": int(latency.size)}
    for label, width in (("latent", model.attention_width),
                         ("heads", model.prefill_attention_width)):
        attention = pairs * 4.0 * heads * width / attention_peak
        predicted = np.maximum(gemm + attention, weights) + fixed
        out[label] = float(100.0 * np.median(predicted / latency - 1.0))
    return out


def with_fp4_stage(knobs: dict, rows: list, n_resamples: int = N_RESAMPLES) -> dict:
    """``knobs`` (:func:`profile_knobs`, on the streaming bandwidth) with the FP4 shares of
    :data:`FP4_STAGE` and their intervals: each fitted to the NVFP4 ``rows`` of the GPU
    (:func:`by_format`) with the phase's other knobs held, or its low-precision knob where the
    tables hold no NVFP4 GEMMs (the Hopper GPUs, the A100 and the L40S: no rows)."""
    from rooflinekit import Engine
    for phase, (knob, fallback) in FP4_STAGE.items():
        if rows:
            other = "decode" if phase == "prefill" else "prefill"
            result = calibrate(measurements_from_records(rows), phases=(phase,),
                               fit={phase: (knob,), other: ()},
                               engine=Engine(**knobs[phase], allreduce=ALLREDUCE),
                               n_resamples=n_resamples, confidence=CONFIDENCE, seed=SEED,
                               gpus=fit_gpus(rows))
            value, low, high = (float(result.parameters[c].sel(phase=phase, parameter=knob))
                                for c in ("value", "lower", "upper"))
        else:
            value, (low, high) = knobs[phase][fallback], knobs["interval"][phase][fallback]
        knobs[phase][knob] = value
        knobs["interval"][phase][knob] = [low, high]
    return knobs


def staged_knobs(fit: "ProfileFit", fp4_rows: list, engine: str, system: str,
                 version: str) -> dict:
    """A profile row's knobs and intervals: the kernel fit's (:func:`profile_knobs`) with the
    FP4 stage on ``fp4_rows``, as shares of the datasheet bandwidth (:func:`to_datasheet`),
    with the MoE, MLA, attention and Gated DeltaNet stages."""
    knobs = with_fp4_stage(profile_knobs(fit), fp4_rows)
    knobs = with_moe_stage(to_datasheet(knobs, SYSTEM_TO_GPU[system]), system, engine, version)
    knobs = with_attention_stage(with_mla_stage(knobs, system, engine, version), system, engine,
                                 version)
    return with_recurrent_stage(knobs, system, engine, version)


def with_attention_stage(knobs: dict, system: str, engine: str, version: str) -> dict:
    """``knobs`` with ``attention_compute_efficiency`` and its interval in both phases
    (:func:`attention_compute_efficiency`; None, the GEMMs' share, where the table holds no
    long prompts), and ``narrow_head_attention_share`` likewise
    (:func:`narrow_head_attention_share`; None where the table holds no narrow heads:
    :func:`pool_narrow_heads` fills it)."""
    attention = attention_compute_efficiency(system, engine, version)
    narrow = narrow_head_attention_share(system, engine, version)
    for phase in ("prefill", "decode"):
        knobs[phase]["attention_compute_efficiency"] = \
            None if attention is None else attention["value"]
        knobs["interval"][phase]["attention_compute_efficiency"] = \
            None if attention is None else list(attention["interval"])
        knobs[phase]["narrow_head_attention_share"] = \
            None if narrow is None else narrow["value"]
        knobs["interval"][phase]["narrow_head_attention_share"] = \
            None if narrow is None else list(narrow["interval"])
    return knobs


def with_mla_stage(knobs: dict, system: str, engine: str, version: str) -> dict:
    """``knobs`` with ``mla_layer_overhead`` and its interval in both phases
    (:func:`mla_layer_overhead`; None where no table times the module on the GPU:
    :func:`pool_mla_overheads` fills it)."""
    mla = mla_layer_overhead(system, engine, version, knobs["decode"]["bandwidth_efficiency"])
    for phase in ("prefill", "decode"):
        knobs[phase]["mla_layer_overhead"] = None if mla is None else mla["value"]
        knobs["interval"][phase]["mla_layer_overhead"] = \
            None if mla is None else list(mla["interval"])
    return knobs


def with_moe_stage(knobs: dict, system: str, engine: str, version: str) -> dict:
    """``knobs`` (:func:`profile_knobs`) with ``moe_layer_overhead``, ``moe_compute_share`` and
    ``mxfp4_moe_compute_share`` and their intervals in both phases (:func:`moe_layer_overhead`,
    :func:`moe_compute_share`, :func:`mxfp4_moe_compute_share`; where the version has no MoE
    table, 0 and None, and None where it has no MXFP4 rows: :func:`pool_moe_shares` fills
    them)."""
    moe = moe_layer_overhead(system, engine, version, knobs["decode"]["bandwidth_efficiency"])
    shares = {knob: None if moe is None else read(system, engine, version, knobs,
                                                   moe["moe_median"])
              for knob, read in (("moe_compute_share", moe_compute_share),
                                 ("mxfp4_moe_compute_share", mxfp4_moe_compute_share))}
    for phase in ("prefill", "decode"):
        knobs[phase]["moe_layer_overhead"] = 0.0 if moe is None else moe["value"]
        knobs["interval"][phase]["moe_layer_overhead"] = \
            [0.0, 0.0] if moe is None else list(moe["interval"])
        for knob, share in shares.items():
            knobs[phase][knob] = None if share is None else share["value"]
            knobs["interval"][phase][knob] = None if share is None else list(share["interval"])
    return knobs


def pool_moe_shares(profiles: list) -> None:
    """Give each profile whose version has no MoE table (``moe_compute_share`` None) the
    median of the engine's other profiles' shares, and their range as its interval; 1 (a
    dense GEMM's) where none has one. Left out in turn, a GPU's MoE blocks are timed as well
    by that median as by its own share (``docs/validation.md``). A profile without MXFP4 rows
    (``mxfp4_moe_compute_share`` None) takes its own ``moe_compute_share`` for them, what the
    knob's absence means, written out: the Blackwell GPUs' MXFP4 kernels and Hopper's are
    2-6 times apart, so no median of other GPUs stands in for them."""
    _pool(profiles, "moe_compute_share", 1.0)
    for prof in profiles:
        for phase in ("prefill", "decode"):
            if prof[phase]["mxfp4_moe_compute_share"] is None:
                prof[phase]["mxfp4_moe_compute_share"] = prof[phase]["moe_compute_share"]
                prof["interval"][phase]["mxfp4_moe_compute_share"] = list(
                    prof["interval"][phase]["moe_compute_share"])


def _pool(profiles: list, knob: str, default: float) -> None:
    """Give each profile whose ``knob`` is None (in both phases: a stage's knob) the median of
    the others' values, and their range as its interval; ``default`` where none has one."""
    values = [p["decode"][knob] for p in profiles if p["decode"][knob] is not None]
    value = float(np.median(values)) if values else default
    interval = [min(values), max(values)] if values else [default, default]
    for prof in profiles:
        for phase in ("prefill", "decode"):
            if prof[phase][knob] is None:
                prof[phase][knob] = value
                prof["interval"][phase][knob] = list(interval)


def pool_mla_overheads(profiles: list) -> None:
    """Give each profile that no MLA module table times (``mla_layer_overhead`` None) the
    median of the engine's other profiles' values, and their range as its interval; 0 where
    none has one. vLLM's tables of the module as served cover two GPUs (B200 and GB300,
    :func:`_as_served`): its seven others take their median."""
    _pool(profiles, "mla_layer_overhead", 0.0)


def pool_narrow_heads(profiles: list) -> None:
    """Give each profile whose context-attention table holds no heads of 64
    (``narrow_head_attention_share`` None: the A100's) the median of the engine's other
    profiles' shares, and their range as its interval; 1 where none has one."""
    _pool(profiles, "narrow_head_attention_share", 1.0)


# -- a hybrid's Gated DeltaNet prompt pass ----------------------------------------------------

#: The Gated DeltaNet prompt kernels' tables that are not read: SGLang 0.5.10's A100 table, whose
#: times hardly grow with the prompt below 2,048 tokens and run at a tenth of the H100's at
#: 32,768 (0.25 against 2.35 ms a layer at 16 value heads), which no A100 kernel does.
RECURRENT_UNREAD = {("a100_sxm", "sglang", "0.5.10")}
#: The three knobs of the prompt pass, per layer: ``a + max(c1 · L, c2 · T · S)``.
RECURRENT_KNOBS = ("recurrent_layer_overhead", "recurrent_chain_time", "recurrent_element_time")


def _recurrent_path(system: str, engine: str, version: str) -> Path:
    return data_root() / system / "linear_attention" / engine / version / "gdn_perf.parquet"


def recurrent_prefill_rows(system: str, engine: str, version: str):
    """The Gated DeltaNet prompt kernels' times of one (engine, GPU, version): per kernel shape
    (key and value heads and their widths, sequences ``b`` and prompt tokens ``s`` each), the
    short convolution's and the chunked delta rule's latencies summed per model and the median
    over the models sharing the shape [ms]; None where no table is read."""
    path = _recurrent_path(system, engine, version)
    if (system, engine, version) in RECURRENT_UNREAD or not path.exists():
        return None
    frame = _read(path)
    frame = frame[frame["phase"] == "context"]
    shape = ["num_k_heads", "head_k_dim", "num_v_heads", "head_v_dim", "batch_size", "seq_len"]
    frame = frame.groupby(["model_name", *shape], as_index=False)["latency"].sum()
    return frame.groupby(shape, as_index=False)["latency"].median()


def _recurrent_fit(longest, tokens, elements, seconds) -> np.ndarray:
    """``(a, c1, c2)`` of ``a + max(c1 · longest, c2 · tokens · elements)`` fitted to
    ``seconds`` by least squares on the log of the ratio (each row's error relative)."""
    from scipy.optimize import least_squares

    def residuals(p):
        a, c1, c2 = np.exp(p)
        return np.log(a + np.maximum(c1 * longest, c2 * tokens * elements)) - np.log(seconds)
    start = np.log([2e-5, 4e-8, 1.5e-13])
    return np.exp(least_squares(residuals, start, method="lm").x)


def recurrent_prefill(system: str, engine: str, version: str,
                      n_resamples: int = N_RESAMPLES) -> dict | None:
    """The Gated DeltaNet prompt knobs of one (engine, GPU) from its kernel table, or None where
    the version has none (:func:`recurrent_prefill_rows`).

    Per layer a prompt pass of ``b`` sequences of ``s`` tokens takes ``a + max(c1 · s, c2 · b ·
    s · S)``, ``S`` the state elements of a layer on the GPU (value heads × key width × value
    width): ``a`` the kernels' launches (``recurrent_layer_overhead``), ``c1`` the chunks'
    chain per token of the longest sequence (``recurrent_chain_time``), ``c2`` the state
    updates per token and element (``recurrent_element_time``). Fitted to every row by least
    squares on the log of the ratio; intervals the :data:`CONFIDENCE` range over
    ``n_resamples`` resamples of the rows (seed :data:`SEED`), widened to hold the value;
    ``errors`` the median and 90th-percentile absolute error [%] over all rows and over the
    rows of 16 value heads (Qwen3.5-397B-A17B at TP 4) with 1,024 tokens or more."""
    rows = recurrent_prefill_rows(system, engine, version)
    if rows is None or rows.empty:
        return None
    longest = rows["seq_len"].to_numpy(dtype=float)
    tokens = longest * rows["batch_size"].to_numpy(dtype=float)
    elements = (rows["num_v_heads"] * rows["head_k_dim"] * rows["head_v_dim"]).to_numpy(
        dtype=float)
    seconds = rows["latency"].to_numpy(dtype=float) * MS
    value = _recurrent_fit(longest, tokens, elements, seconds)
    rng = np.random.default_rng(SEED)
    draws = []
    for _ in range(n_resamples):
        pick = rng.integers(0, seconds.size, seconds.size)
        draws.append(_recurrent_fit(longest[pick], tokens[pick], elements[pick], seconds[pick]))
    low, high = (np.quantile(np.array(draws), q, axis=0) if draws else value
                 for q in (0.5 - CONFIDENCE / 2, 0.5 + CONFIDENCE / 2))
    predicted = value[0] + np.maximum(value[1] * longest, value[2] * tokens * elements)
    error = np.abs(predicted / seconds - 1.0) * 100.0
    qwen = (rows["num_v_heads"].to_numpy() == 16) & (tokens >= 1024)
    return {"value": dict(zip(RECURRENT_KNOBS, (float(v) for v in value))),
            "interval": {k: [min(float(lo), float(v)), max(float(hi), float(v))]
                         for k, v, lo, hi in zip(RECURRENT_KNOBS, value, low, high)},
            "points": int(seconds.size),
            "errors": [float(np.median(error)), float(np.percentile(error, 90)),
                       float(np.median(error[qwen])) if qwen.any() else math.nan,
                       float(np.percentile(error[qwen], 90)) if qwen.any() else math.nan],
            "file": str(_recurrent_path(system, engine, version).relative_to(data_root()))}


def with_recurrent_stage(knobs: dict, system: str, engine: str, version: str) -> dict:
    """``knobs`` with the Gated DeltaNet prompt knobs and their intervals in both phases
    (:func:`recurrent_prefill`; None where no table is read: :func:`pool_recurrent` fills
    them)."""
    fitted = recurrent_prefill(system, engine, version)
    for phase in ("prefill", "decode"):
        for knob in RECURRENT_KNOBS:
            knobs[phase][knob] = None if fitted is None else fitted["value"][knob]
            knobs["interval"][phase][knob] = \
                None if fitted is None else list(fitted["interval"][knob])
    return knobs


def pool_recurrent(profiles: list) -> None:
    """Give each profile that no Gated DeltaNet table times (vLLM 0.14 and TensorRT-LLM 1.0 on
    the A100, and SGLang's A100 table, not read: :data:`RECURRENT_UNREAD`) the median of the
    engine's other profiles' knobs, and their range as its interval."""
    for knob in RECURRENT_KNOBS:
        _pool(profiles, knob, 0.0)


# -- the synthesised step -----------------------------------------------------------------------

def layer_gemms(model, tp: int) -> list[tuple[int, int]]:
    """(n, k) of a decoder layer's weight GEMMs on one GPU of a ``tp`` group."""
    d, h, inter = model.head_dim, model.hidden_size, model.intermediate_size
    return [((model.n_heads + 2 * model.n_kv_heads) * d // tp, h),   # qkv
            (h, model.n_heads * d // tp),                              # o
            (2 * inter // tp, h),                                      # gate_up
            (h, inter // tp)]                                          # down


def head_pair(model, tp: int) -> tuple[int, int]:
    """(query heads, KV heads) one GPU of a ``tp`` group runs (KV heads replicated below 1)."""
    return model.n_heads // tp, max(model.n_kv_heads // tp, 1)


def step_time(tables: KernelTables, model, tp: int, dtype: str, phase: str, batch: int,
              tokens: int) -> float:
    """Synthesised step time [s] from the kernel tables.

    Parameters
    ----------
    phase : {"decode", "prefill"}
        A decode step of ``batch`` sequences at context ``tokens``, or the prefill of ``batch``
        prompts of ``tokens`` each.
    """
    gemm = tables.gemm[dtype]
    pair = head_pair(model, tp)
    if phase == "decode":
        rows = batch
        attention = tables.generation_attention[pair](batch, tokens)
    else:
        rows = batch * tokens
        attention = tables.context_attention[pair](batch, tokens)
    layer = sum(gemm(rows, n, k) for n, k in layer_gemms(model, tp)) + attention
    if tp > 1:
        layer += 2.0 * tables.allreduce[tp](rows * model.hidden_size)
    lm_head = gemm(batch, model.vocab_size // tp, model.hidden_size)
    return model.n_layers * layer + lm_head


def fits_in_memory(model, gpu, tp: int, sequences: int, tokens: int) -> bool:
    """Whether the weights and ``sequences × tokens`` cached tokens fit in the group's
    :data:`MEMORY_SHARE` of memory."""
    need = model.weight_bytes + sequences * tokens * model.kv_bytes_per_token
    return need <= MEMORY_SHARE * gpu.memory_bytes * tp


def by_format(rows: list, version: str) -> tuple[list, list, str]:
    """:func:`synthesise`'s rows split into the fitted formats' (:data:`GEMM_DTYPES`) and the
    NVFP4 ones (:data:`CHECK_DTYPES`), with the version."""
    return ([r for r in rows if r["dtype"] in GEMM_DTYPES],
            [r for r in rows if r["dtype"] in CHECK_DTYPES], version)


def synthesise(engine: str, system: str, version: str | None = None,
               dtypes=tuple(GEMM_DTYPES)) -> tuple[list, str]:
    """Measurement rows of every workload of one (engine, system) in the weight formats
    ``dtypes`` (those its GEMM table holds), and the version used.

    Returns
    -------
    rows : list of dict
        rooflinekit measurement rows (:func:`rooflinekit.calibrate.measurements_from_records`):
        decode rows carry ``tpot_ms``, prefill rows ``ttft_ms`` of a static batch.
    version : str
        The engine version of the kernel data.
    """
    version = version or engine_version(system, engine)
    if version is None:
        raise ValueError(f"no {engine} GEMM and attention tables for {system}")
    gpu_name = SYSTEM_TO_GPU[system]
    gpu = catalog.gpu(gpu_name)
    models = [catalog.model(name) for name in MODELS]
    pairs = {head_pair(m, tp) for m in models for tp in TP_DEGREES}
    tables = load_tables(system, engine, version, pairs)
    source = (f"aiconfigurator-core {AIC_VERSION} (Apache-2.0) systems/data: "
              + ", ".join(tables.files))
    rows = []
    for base in models:
        for dtype in dtypes:
            if dtype not in tables.gemm:
                continue
            model = base if dtype == "bf16" else base.replace(bytes_per_param=dtype)
            for tp in TP_DEGREES:
                if tp > 1 and tp not in tables.allreduce:
                    continue
                if head_pair(model, tp) not in tables.generation_attention or \
                        head_pair(model, tp) not in tables.context_attention:
                    continue
                common = {"model": base.name, "gpu": gpu_name, "tp": tp, "dtype": dtype,
                          "engine": f"{engine} {version}", "source": source}
                for batch in DECODE_BATCHES:
                    for context in DECODE_CONTEXTS:
                        if not fits_in_memory(model, gpu, tp, batch, context):
                            continue
                        t = step_time(tables, model, tp, dtype, "decode", batch, context)
                        rows.append({**common, "batch_size": batch, "prompt_tokens": context,
                                     "output_tokens": 0, "context_length": context,
                                     "tpot_ms": t / MS,
                                     "notes": "synthesised decode step (kernel sum)"})
                for batch in PREFILL_BATCHES:
                    for prompt in PREFILL_PROMPTS:
                        if not fits_in_memory(model, gpu, tp, batch, prompt):
                            continue
                        t = step_time(tables, model, tp, dtype, "prefill", batch, prompt)
                        rows.append({**common, "batch_size": batch, "prompt_tokens": prompt,
                                     "output_tokens": 1, "ttft_ms": t / MS,
                                     "ttft_kind": "static_batch",
                                     "notes": "synthesised prefill step (kernel sum)"})
    return rows, version


# -- the fits -----------------------------------------------------------------------------------

#: The knob a low-precision efficiency the rows cannot see takes (what ``None`` means for it).
FALLBACK = {"low_precision_compute_efficiency": "compute_efficiency",
            "low_precision_bandwidth_efficiency": "bandwidth_efficiency"}

def _knobs(parameters, phase: str, column: str, names) -> dict:
    """The ``column`` of knobs ``names`` of ``phase``; a low-precision efficiency the rows
    cannot see (``None`` or NaN: no FP8 rows) takes its 16-bit knob's (:data:`FALLBACK`),
    which is what ``None`` means for it."""
    out = {}
    for knob in dict.fromkeys((*FALLBACK.values(), *names)):
        value = parameters[column].sel(phase=phase, parameter=knob).item()
        out[knob] = math.nan if value is None else float(value)
    for knob, value in out.items():
        if math.isnan(value) and knob in FALLBACK:
            out[knob] = out[FALLBACK[knob]]
    return {knob: out[knob] for knob in names}


@dataclass
class ProfileFit:
    """The three calibrations of one kernel fit (:func:`fit_profile`).

    Attributes
    ----------
    prefill : rooflinekit.calibrate.CalibrationResult
        The TTFT fit of the :data:`FIT` prefill knobs (decode knobs ideal): the prefill
        phase written.
    gemm : rooflinekit.calibrate.CalibrationResult
        The TTFT fit of :data:`GEMM_FIT` (one compute efficiency for every weight format),
        whose :data:`SHARED_KERNEL_KNOBS` the decode phase holds.
    decode : rooflinekit.calibrate.CalibrationResult
        The TPOT fit of the :data:`FIT` decode knobs on a base engine holding those.
    cross_host : float
        The all-reduce's latency past one host that every fit ran on [s]
        (:func:`rows_cross_host_latency`), written in both phases.
    """

    prefill: object
    gemm: object
    decode: object
    decode_fit: tuple = FIT["decode"]
    cross_host: float = 0.0
    hop: float | None = None

    def _decode_names(self, names) -> tuple:
        """``names`` with ``layer_overhead`` as ``layer_cycles`` in a transfer fit."""
        if "layer_cycles" not in self.decode_fit:
            return tuple(names)
        return tuple("layer_cycles" if k == "layer_overhead" else k for k in names)

    def shared(self, column: str = "value") -> dict:
        """The prefill knobs the decode phase holds (:data:`SHARED_KERNEL_KNOBS`), ``column``."""
        return _knobs(self.gemm.parameters, "prefill", column, SHARED_KERNEL_KNOBS)

    def knobs(self) -> dict:
        """``{"prefill": {...}, "decode": {...}}`` values and ``interval`` pairs (the knobs of
        :data:`KNOBS`: the :data:`HELD` ones at their held value, the decode phase's shared
        prefill knobs :meth:`shared`, with their intervals)."""
        columns = ("value", "lower", "upper")
        cross = {"cross_host_allreduce_latency": self.cross_host}
        # the hop latency read from the all-reduce tables, held (None: the GPU's own)
        hop = {} if self.hop is None else {"interconnect_latency": self.hop}
        table = {column: {
            "prefill": {**_knobs(self.prefill.parameters, "prefill", column, FIT["prefill"]),
                        **HELD["prefill"], **cross},
            "decode": {**_knobs(self.decode.parameters, "decode", column, self.decode_fit),
                       **HELD["decode"], **cross, **hop, **self.shared(column)}}
            for column in columns}
        # the MoE stage's knob is not the kernel fit's: build_engine adds it
        fitted = {phase: tuple(k for k in KNOBS[phase] if k not in STAGE_KNOBS)
                  for phase in KNOBS}
        names = {"prefill": fitted["prefill"], "decode": self._decode_names(fitted["decode"])}
        out = {phase: {k: table["value"][phase][k] for k in names[phase]} for phase in FIT}
        out["interval"] = {phase: {k: [table["lower"][phase][k], table["upper"][phase][k]]
                                   for k in names[phase]} for phase in FIT}
        return out

    def calibration(self):
        """The fitted knobs as one :class:`rooflinekit.calibrate.Calibration`."""
        from rooflinekit.calibrate import Calibration
        knobs = self.knobs()
        return Calibration(prefill=knobs["prefill"], decode=knobs["decode"],
                           source="engine_profiles.py kernel fit", base=PROFILE_BASE)

    def error(self, phase: str) -> float:
        """In-sample MAPE [%] of ``phase`` ("decode": TPOT, "prefill": TTFT) on the rows."""
        return _mape(getattr(self, phase).errors, phase)


def fit_profile(rows: list, n_resamples: int = N_RESAMPLES, transfer: bool = False,
                streaming: bool = True) -> ProfileFit:
    """The kernel fit of ``rows`` (deterministic: seed :data:`SEED`); ``transfer``: with the
    decode knobs of :data:`TRANSFER_DECODE_FIT` (a layer's fixed time in clock cycles), for
    knobs that go to another GPU; ``streaming``: on each GPU's measured streaming bandwidth
    (:func:`fit_gpu`; the knobs are then shares of it), else on its datasheet figure.

    Three calibrations: the prefill knobs of :data:`FIT` to the TTFT rows (the prefill phase);
    the knobs of :data:`GEMM_FIT` to the same rows, one compute efficiency for every weight
    format; then the decode knobs of :data:`FIT` to the TPOT rows on a base engine holding
    that fit's :data:`SHARED_KERNEL_KNOBS`. A decode step's weight GEMMs are the same kernels
    as a prompt's and bind on compute at large batches, where the ideal decode compute
    efficiency of 1 was too fast, and its all-reduces are the same collective, where the ideal
    link share of 1 was too fast; the format-blind knobs are the ones that transfer there
    (leave-one-GPU-out TPOT: with the FP8 efficiency as well, the A100 rows, bf16 only, come
    out 1.3-4 points worse).
    """
    from rooflinekit import Engine
    ds = measurements_from_records(rows)
    common = {"n_resamples": n_resamples, "confidence": CONFIDENCE, "seed": SEED,
              "gpus": fit_gpus(rows) if streaming else None}
    # an all-reduce past one host pays its tables' extra latency (GB300 at tp 8 under SGLang)
    cross = rows_cross_host_latency(rows)
    hop = rows_hop_latency(rows)
    structure = {**STRUCTURE, "cross_host_allreduce_latency": cross,
                 **({} if hop is None else {"interconnect_latency": hop})}
    base = Engine(**structure, allreduce=ALLREDUCE)
    prefill = calibrate(ds, fit={"prefill": FIT["prefill"], "decode": ()}, engine=base, **common)
    gemm = calibrate(ds, fit={"prefill": GEMM_FIT, "decode": ()}, engine=base, **common)
    shared = ProfileFit(prefill, gemm, None).shared()
    decode_fit = TRANSFER_DECODE_FIT if transfer else FIT["decode"]
    decode = calibrate(ds, fit={"prefill": (), "decode": decode_fit},
                       engine=Engine(**shared, **structure, allreduce=ALLREDUCE), **common)
    return ProfileFit(prefill, gemm, decode, decode_fit, cross, hop)


def profile_knobs(fit: ProfileFit) -> dict:
    """``{"prefill": {...}, "decode": {...}}`` values and ``interval`` pairs of a fit
    (:meth:`ProfileFit.knobs`)."""
    return fit.knobs()


def _mape(result_errors, phase: str) -> float:
    return float(result_errors["mape_calibrated"].sel(phase=phase))


def held_out_errors(train: list, test: list, transfer: bool = False,
                    streaming: bool = True) -> tuple[float, float]:
    """(TPOT, TTFT) MAPE [%] on ``test`` of a :func:`fit_profile` to ``train`` (no bootstrap;
    NaN for a phase ``test`` does not measure; ``transfer``: the fit for another GPU;
    ``streaming``: fitted and predicted on the GPUs' measured streaming bandwidths)."""
    fitted = fit_profile(train, 0, transfer=transfer, streaming=streaming).calibration()
    return held_out_predictions(fitted, test, streaming)


def with_own_cross_host(fitted, test: list):
    """``fitted`` with the cross-host all-reduce latency of ``test``'s own all-reduce tables
    (:func:`rows_cross_host_latency`), in every knob set: a GPU predicted held out runs on its
    own measured collectives, as on its own measured streaming bandwidth (one figure an
    all-reduce microbenchmark gives), while the fit reads only its own rows' (SGLang's GB300
    at tp 8, past its four-GPU tray: 24 us a collective, which no other GPU's tables hold)."""
    value = rows_cross_host_latency(test)
    hop = rows_hop_latency(test)
    # the decode phase holds the hop latency read from the tables (the prefill the GPU's own)
    own = {"prefill": {"cross_host_allreduce_latency": value},
           "decode": {"cross_host_allreduce_latency": value,
                      **({} if hop is None else {"interconnect_latency": hop})}}

    def put(knobs, phase):
        return {**knobs, **own[phase]}
    groups = {key: {phase: put(knobs, phase) for phase, knobs in phases.items()}
              for key, phases in fitted.groups.items()}
    # measured figures, held: each interval is the value (where the calibration has intervals)
    intervals = {phase: {**knobs, **{k: (v, v) for k, v in own[phase].items() if k in knobs}}
                 for phase, knobs in fitted.intervals.items()}
    return dataclasses.replace(fitted, prefill=put(fitted.prefill, "prefill"),
                               decode=put(fitted.decode, "decode"), groups=groups,
                               intervals=intervals)


def held_out_predictions(fitted, test: list, streaming: bool = True) -> tuple[float, float]:
    """(TPOT, TTFT) MAPE [%] on ``test`` of the calibration ``fitted`` (NaN for a phase
    ``test`` does not measure; ``streaming``: on the GPUs' measured streaming bandwidths), on
    ``test``'s own cross-host all-reduce latency (:func:`with_own_cross_host`)."""
    from rooflinekit.calibrate import predict
    predicted = predict(measurements_from_records(test), with_own_cross_host(fitted, test),
                        gpus=fit_gpus(test) if streaming else None)
    out = []
    for phase, column in (("decode", "tpot_ms"), ("prefill", "ttft_ms")):
        measured = np.array([r.get(column, math.nan) for r in test], dtype=float) * MS
        keep = ~np.isnan(measured)
        out.append(_mape_of(predicted[phase].values[keep], measured[keep]) if keep.any()
                   else math.nan)
    return out[0], out[1]


def _held_out_split(rows: list, gpu: str) -> tuple[list, list, bool]:
    """(train, test, transfer) of leaving ``gpu`` out (:func:`leave_one_gpu_out`'s rule)."""
    clocked = {g for g in {r["gpu"] for r in rows}
               if getattr(catalog.gpu(g), "boost_clock", None)}
    test = [r for r in rows if r["gpu"] == gpu]
    train = [r for r in rows if r["gpu"] != gpu and (gpu not in clocked or r["gpu"] in clocked)]
    return train, test, gpu in clocked


#: The row fields :func:`held_out_residuals` breaks the error down by.
RESIDUAL_KEYS = ("tp", "dtype", "batch_size", "context_length", "model")


def held_out_residuals(rows: list, gpu: str) -> dict:
    """Where the leave-one-GPU-out TPOT error of ``gpu`` sits: per value of each of
    :data:`RESIDUAL_KEYS`, the mean signed and mean absolute relative error [%] of the decode
    rows (predicted / measured − 1), under the key ``"all"`` the whole set's."""
    from rooflinekit.calibrate import predict
    train, test, transfer = _held_out_split(rows, gpu)
    fitted = with_own_cross_host(fit_profile(train, 0, transfer=transfer).calibration(), test)
    predicted = predict(measurements_from_records(test), fitted, gpus=fit_gpus(test))
    decode = [(r, p) for r, p in zip(test, predicted["decode"].values) if "tpot_ms" in r]
    error = np.array([p / (r["tpot_ms"] * MS) - 1 for r, p in decode]) * 100
    out = {"all": (float(error.mean()), float(np.abs(error).mean()))}
    for key in RESIDUAL_KEYS:
        values = np.array([r[key] for r, _ in decode])
        out[key] = {v: (float(error[values == v].mean()), float(np.abs(error[values == v]).mean()))
                    for v in sorted(set(values.tolist()))}
    return out


def leave_one_gpu_out(rows: list, streaming: bool = True) -> dict:
    """Per GPU name, held-out (TPOT, TTFT) MAPE [%] of a fit on the other GPUs' rows;
    ``streaming``: every GPU at its measured streaming bandwidth (:func:`fit_gpu`: the held-out
    one's too, one figure a bandwidth microbenchmark gives), else at its datasheet figure. The
    held-out GPU's all-reduces past its host take its own tables' measured latency
    (:func:`with_own_cross_host`), the same kind of figure.

    A GPU whose catalogue row gives its boost clock is predicted by the transfer fit (a
    layer's fixed time in clock cycles, :data:`TRANSFER_DECODE_FIT`) of the other such GPUs;
    one without (NVIDIA states none for the B300, GB200, GB300 and RTX PRO 6000 Server) by
    the plain fit (that time in seconds) of every other GPU. The clocked GPUs' pools leave the
    clockless ones out, so adding one does not move the others' errors.
    """
    out = {}
    for gpu in sorted({r["gpu"] for r in rows}):
        train, test, transfer = _held_out_split(rows, gpu)
        out[gpu] = held_out_errors(train, test, transfer=transfer, streaming=streaming)
    return out


def model_size_error(rows: list) -> tuple[float, dict]:
    """TPOT MAPE [%] fitted on one model, applied to the other: the worse direction, and each."""
    models = sorted({r["model"] for r in rows})
    each = {m: held_out_errors([r for r in rows if r["model"] != m],
                               [r for r in rows if r["model"] == m])[0] for m in models}
    return max(each.values()), each


def diagnose(engine: str, system: str, log=print) -> dict:
    """In-sample and held-out errors of fits that relax one structural limit each.

    Printed with ``--diagnose``, never shipped: they say what the shipped step model lacks.

    Returns
    -------
    dict
        ``per_dtype_tpot`` (in-sample TPOT MAPE [%] of a fit to each weight format's rows
        alone), ``decode_link_tpot`` (in-sample TPOT MAPE with ``interconnect_efficiency``
        free in decode too), ``batch1_ttft`` (in-sample TTFT MAPE of a fit to the batch-1
        prefill rows alone: no static batch) and ``size_free_step_overhead`` (TPOT MAPE
        across model sizes, worse direction, with ``step_overhead`` free as well: what holding
        it at 0 avoids); where the GEMM table holds NVFP4, ``nvfp4_held_out``: the (TPOT,
        TTFT) MAPE [%] on the NVFP4 rows of the profile fitted to the others (bf16 and FP8),
        with the GEMMs on the FP4 peak (``fp4_peak``: each row's format its compute format,
        as :func:`rooflinekit.calibrate.calibrate` takes it and the planner times an NVFP4
        model, ``ModelShape.fp4_matmuls``) and on the 16-bit one (``16bit_peak``: widened, as
        weight-only int4 is); where the shipped profile's version has an MoE table,
        ``moe_blocks``: how the shipped profile times that table's blocks of many tokens,
        with its own share and with the median of the engine's other GPUs' (left out)
        (:func:`moe_block_errors`), and ``mxfp4_blocks``: its MXFP4 blocks with their own
        share and with the MoE share (:func:`mxfp4_block_errors`); where it has an MLA
        context-module table, ``mla_context``:
        how it times that table's long prompts at the latent and at the head widths
        (:func:`mla_context_errors`).
    """
    rows, checked, _ = by_format(*synthesise(engine, system, dtypes=ALL_DTYPES))
    out = {"per_dtype_tpot": {}}
    if checked:
        fitted = fit_profile(rows, 0).calibration()
        out["nvfp4_held_out"] = {
            label: held_out_predictions(cal, checked) for label, cal in (
                ("fp4_peak", fitted),
                ("16bit_peak", dataclasses.replace(
                    fitted, base=fitted.base.replace(compute_dtype="bf16"))))}
    for dtype in GEMM_DTYPES:
        mine = [r for r in rows if r["dtype"] == dtype]
        if mine:
            out["per_dtype_tpot"][dtype] = fit_profile(mine, 0).error("decode")
    ds = measurements_from_records(rows)
    linked = {"prefill": FIT["prefill"], "decode": FIT["decode"] + ("interconnect_efficiency",)}
    result = calibrate(ds, fit=linked, n_resamples=0, confidence=CONFIDENCE, seed=SEED,
                       gpus=fit_gpus(rows))
    out["decode_link_tpot"] = _mape(result.errors, "decode")
    single = [r for r in rows if "ttft_ms" not in r or r["batch_size"] == 1]
    out["batch1_ttft"] = fit_profile(single, 0).error("prefill")
    free_step = {"prefill": FIT["prefill"], "decode": FIT["decode"] + ("step_overhead",)}
    cv = cross_validate(ds, by="model", fit=free_step, seed=SEED, gpus=fit_gpus(rows))
    out["size_free_step_overhead"] = float(
        cv.folds["mape_calibrated"].sel(phase="decode").max())
    with open(OUTPUT_DIR / f"{engine}.toml", "rb") as handle:     # the shipped knobs, raw
        shipped_rows = tomllib.load(handle)["profile"]
    shipped = next((row for row in shipped_rows if row["gpu"] == SYSTEM_TO_GPU[system]), None)
    if shipped is not None:
        # left out: the median share of the engine's other GPUs with MoE tables of their own
        others = [row["prefill"]["moe_compute_share"] for row in shipped_rows
                  if row["gpu"] != shipped["gpu"] and row["gpu"] in GPU_TO_SYSTEM
                  and _moe_rows(GPU_TO_SYSTEM[row["gpu"]], engine, row["version"]) is not None]
        out["moe_blocks"] = moe_block_errors(system, engine, shipped["version"], shipped,
                                             float(np.median(others)) if others else None)
        out["mxfp4_blocks"] = mxfp4_block_errors(system, engine, shipped["version"], shipped)
        out["mla_context"] = mla_context_errors(system, engine, shipped["version"], shipped)
    log(f"  diagnose {engine} {system}: {out}")
    return out


# -- the serving stage (vLLM) ------------------------------------------------------------------

#: Public end-to-end vLLM measurement files, relative to the repository root, and the source
#: whose rows the serving stage fits (the NIM rows are another engine, the Musgrave row a GPU
#: with no profile).
SERVING_FILES = ("tests/data/measurements/public.csv", "tests/data/measurements/public_more.csv")
SERVING_SOURCE = "LambdaLabsML/vllm-benchmark"
#: The engine whose profiles get the serving stage, and its knobs (phase, knob) fitted there:
#: only the decode step overhead. ``prefill_overhead`` keeps each GPU's kernel intercept: the
#: rows' TTFT holds client/API time (tokenisation, HTTP, detokenisation) the GPU does not spend,
#: which the simulator would charge to every step that carries prompt tokens.
SERVING_ENGINE = "vllm"
SERVING_KNOBS = (("decode", "step_overhead"),)
#: The phases whose errors the serving stage reports (TPOT, TTFT), in that order.
SERVING_PHASES = ("decode", "prefill")
#: The serving stage's rows ran vLLM 0.6.0 with --num-scheduler-steps 10 (LambdaLabs' files:
#: score_load_sweeps.ASSUMED_VERSIONS), which waits for the host between steps; vLLM schedules asynchronously by default from 0.14.0 on, preparing step n + 1
#: while the GPU runs step n, so the host's time per step hides behind the kernels'. The fitted
#: overhead is written as the synchronous versions' ([host_scheduling]); a profile of a version
#: from ASYNCHRONOUS_SINCE on holds step_overhead 0.
SYNCHRONOUS_FROM = "0.5.4"
ASYNCHRONOUS_SINCE = "0.14.0"
HOST_SCHEDULING_SOURCE = (
    "vllm-project/vllm#27614 '[Core] Enable async scheduling by default' (merged in the week "
    "to 2026-01-02, first released in 0.14.0: deepjavalibrary/djl#3833, 'Async scheduling is "
    "now enabled by default in v0.14'; the scheduler prepares step n + 1 while step n runs); "
    "synchronous_step_overhead is the serving stage's fit to LambdaLabsML/vllm-benchmark's "
    "rows, which ran vLLM 0.6.0 with --num-scheduler-steps 10 (their ten-step streams; "
    "scripts/engine_profiles.py). in_engine_frontend_before: the first version not measured "
    "taking requests in at the engine's expense; the bursts below ran 0.6.0 and show it, "
    "whose OpenAI API server already had a process of its own (from 0.5.4: "
    "vllm-project/vllm#6883, #7653), so it is the requests' intake the burst waits for, "
    "whichever process pays it; request_overhead is the least-squares slope of the first "
    "token of a burst against its prompts in {bursts} (vLLM 0.6.0; the smallest of each "
    "file's ttfts: {minima}: the first step waits for every prompt to be taken in), "
    "{value:.2f} ms a prompt; the interval spans the {n} runs' own (min ttft - intercept) / N, "
    "{low:.2f}-{high:.2f} ms")
#: The first version not measured taking each request in at the engine's expense
#: (``Engine.request_overhead``): LambdaLabs' bursts ran 0.6.0 and show it; no sweep of a
#: version between 0.6.0 and the V1 engine's 0.10.1.1 (which shows none) is at hand.
IN_ENGINE_FRONTEND_BEFORE = "0.6.1"
#: Where the bursts' first tokens were read: N in place of the prompt count.
FRONTEND_BURSTS = ("LambdaLabsML/vllm-benchmark@a4f9f4371a1ccac781293837fce2bce0cc6d25cc:"
                   "results/prompt_N/1xH100-80GB-SXM/Meta-Llama-3-8B-Instruct_tp1_len2048.json")
#: (prompts sent at once, the earliest first token of the run [s]), read from those files.
FRONTEND_FIRST_TOKENS = ((40, 0.1867), (160, 0.5693), (640, 1.4637), (1280, 3.2582))


def request_overhead_fit(first_tokens=FRONTEND_FIRST_TOKENS) -> tuple:
    """``(slope, (low, high))`` [s]: the least-squares line of a burst's first token against
    its prompts, ``t = a + c·N``; ``c`` is the engine's time per request taken in, and the
    interval spans the runs' own ``(t − a) / N``."""
    n = np.array([float(k) for k, _ in first_tokens])
    t = np.array([v for _, v in first_tokens])
    slope = float(((n - n.mean()) * (t - t.mean())).sum() / ((n - n.mean()) ** 2).sum())
    own = (t - (t.mean() - slope * n.mean())) / n
    return slope, (float(own.min()), float(own.max()))


def _frontend_words() -> dict:
    """The front-end fit's figures for :data:`HOST_SCHEDULING_SOURCE`."""
    value, (low, high) = request_overhead_fit()
    minima = ", ".join(f"{t:.4f} s at N = {n}" if i == 0 else f"{t:.4f} s at {n}"
                       for i, (n, t) in enumerate(FRONTEND_FIRST_TOKENS))
    return {"bursts": FRONTEND_BURSTS, "minima": minima, "value": value * 1e3,
            "n": len(FRONTEND_FIRST_TOKENS), "low": low * 1e3, "high": high * 1e3}


def serving_rows(root: Path = Path(".")) -> list:
    """The :data:`SERVING_SOURCE` rows of :data:`SERVING_FILES` (measurement records)."""
    from rooflinekit.calibrate import (concat_measurements, measurements_to_records,
                                       read_measurements)
    ds = concat_measurements(*(read_measurements(root / f) for f in SERVING_FILES))
    return [r for r in measurements_to_records(ds) if SERVING_SOURCE in str(r.get("source"))]


def _calibration(knobs: dict, overheads: dict | None = None):
    """``knobs`` as a Calibration, with ``overheads`` ({(phase, knob): s}) put in."""
    from rooflinekit.calibrate import Calibration
    phases = {phase: dict(knobs[phase]) for phase in ("prefill", "decode")}
    for (phase, knob), value in (overheads or {}).items():
        phases[phase][knob] = value
    return Calibration(prefill=phases["prefill"], decode=phases["decode"],
                       source="engine_profiles.py serving stage", base=PROFILE_BASE)


def serving_terms(rows: list, kernel_knobs: dict) -> dict:
    """Per phase, the measured times and the kernel-knob predictions [s] of ``rows``.

    Parameters
    ----------
    kernel_knobs : dict
        GPU name -> ``{"prefill": {...}, "decode": {...}}`` (a profile's knobs); every row's
        GPU must be there.

    Returns
    -------
    dict
        ``{phase: {"gpu": array, "measured": array, "base": array, "kernel": array}}``: the
        rows that measure the phase, ``base`` predicted with the :data:`SERVING_KNOBS` at 0
        (each adds to a step's time, so a prediction is ``base`` plus the overhead; a phase
        with no serving knob keeps the kernel fit's own, e.g. its ``prefill_overhead``) and
        ``kernel`` with the kernel fit's own (``step_overhead`` 0, its ``prefill_overhead``).
    """
    from rooflinekit.calibrate import measurements_from_records, predict
    out = {phase: {"gpu": [], "measured": [], "base": [], "kernel": []}
           for phase in ("decode", "prefill")}
    for gpu in sorted({r["gpu"] for r in rows}):
        mine = [r for r in rows if r["gpu"] == gpu]
        ds = measurements_from_records(mine)
        knobs = kernel_knobs[gpu]
        base = predict(ds, _calibration(knobs, {key: 0.0 for key in SERVING_KNOBS}))
        kernel = predict(ds, _calibration(knobs))
        for phase, column in (("decode", "tpot_ms"), ("prefill", "ttft_ms")):
            for i, r in enumerate(mine):
                value = r.get(column)
                if value is None or (isinstance(value, float) and math.isnan(value)):
                    continue
                out[phase]["gpu"].append(gpu)
                out[phase]["measured"].append(float(value) * MS)
                out[phase]["base"].append(float(base[phase].values[i]))
                out[phase]["kernel"].append(float(kernel[phase].values[i]))
    return {phase: {k: np.asarray(v) for k, v in cols.items()} for phase, cols in out.items()}


def _overhead(measured: np.ndarray, base: np.ndarray) -> float:
    """The overhead ``o`` >= 0 minimising ``Σ ((base + o) / measured − 1)²`` (closed form: the
    residuals are linear in ``o``; the same relative residuals as
    :func:`rooflinekit.calibrate.calibrate`)."""
    w = 1.0 / measured ** 2
    return max(float(np.sum(w * (measured - base)) / np.sum(w)), 0.0)


def _mape_of(predicted: np.ndarray, measured: np.ndarray) -> float:
    return float(100.0 * np.mean(np.abs(predicted / measured - 1.0)))


def fit_serving(terms: dict, gpus: Iterable[str] | None = None) -> dict:
    """The shared serving overheads of :data:`SERVING_KNOBS` (``{"step_overhead": s}``) fitted
    to the rows of ``terms`` on ``gpus`` (default all)."""
    out = {}
    for phase, knob in SERVING_KNOBS:
        t = terms[phase]
        keep = np.ones(t["gpu"].size, bool) if gpus is None else np.isin(t["gpu"], list(gpus))
        out[knob] = _overhead(t["measured"][keep], t["base"][keep])
    return out


def serving_errors(terms: dict, overheads: dict, gpus: Iterable[str] | None = None) -> dict:
    """TPOT and TTFT MAPE [%] on the rows of ``gpus`` (default all): kernel-only and with the
    serving ``overheads``: ``{"kernel": (tpot, ttft), "serving": (tpot, ttft)}`` (a phase with
    no serving knob, TTFT, is the same both ways: the kernel intercept)."""
    fitted = dict(SERVING_KNOBS)
    out = {"kernel": [], "serving": []}
    for phase in SERVING_PHASES:
        t = terms[phase]
        keep = np.ones(t["gpu"].size, bool) if gpus is None else np.isin(t["gpu"], list(gpus))
        m = t["measured"][keep]
        out["kernel"].append(_mape_of(t["kernel"][keep], m))
        extra = overheads[fitted[phase]] if phase in fitted else 0.0
        out["serving"].append(_mape_of(t["base"][keep] + extra, m))
    return {k: tuple(v) for k, v in out.items()}


def serving_bootstrap(terms: dict, n_resamples: int = N_RESAMPLES) -> dict:
    """Percentile intervals (:data:`CONFIDENCE`) of the serving overheads: rows resampled with
    replacement (every row of the fitted phases, as one table), seed :data:`SEED`."""
    rng = np.random.default_rng(SEED)
    index = [(phase, i) for phase, _ in SERVING_KNOBS for i in range(terms[phase]["gpu"].size)]
    draws = {knob: [] for _, knob in SERVING_KNOBS}
    for _ in range(n_resamples):
        pick = rng.integers(0, len(index), len(index))
        for phase, knob in SERVING_KNOBS:
            rows = [index[j][1] for j in pick if index[j][0] == phase]
            if not rows:
                continue
            t = terms[phase]
            draws[knob].append(_overhead(t["measured"][rows], t["base"][rows]))
    tail = 100.0 * (1.0 - CONFIDENCE) / 2.0
    return {knob: [float(np.percentile(v, tail)), float(np.percentile(v, 100.0 - tail))]
            for knob, v in draws.items()}


def serving_stage(kernel_knobs: dict, rows: list | None = None, n_resamples: int = N_RESAMPLES,
                  log=print) -> dict:
    """Fit the shared serving overhead (decode ``step_overhead``) on top of each GPU's kernel
    knobs and evaluate it (TPOT; TTFT with each GPU's kernel intercept, for reference).

    Returns
    -------
    dict
        ``overheads`` (knob -> s), ``interval`` (knob -> [low, high]), ``in_sample`` (per GPU
        and ``"all"``: :func:`serving_errors`), ``held_out`` (per GPU: the errors on its rows
        of a fit to the other GPU's rows, with that fit's overheads), ``n_rows`` and
        ``gpus``.
    """
    rows = serving_rows() if rows is None else rows
    terms = serving_terms(rows, kernel_knobs)
    gpus = sorted({str(g) for phase in SERVING_PHASES for g in terms[phase]["gpu"]})
    overheads = fit_serving(terms)
    interval = serving_bootstrap(terms, n_resamples) if n_resamples else \
        {k: [v, v] for k, v in overheads.items()}
    for knob, value in overheads.items():       # a percentile interval may miss the estimate
        interval[knob] = [min(interval[knob][0], value), max(interval[knob][1], value)]
    in_sample = {"all": serving_errors(terms, overheads)}
    held_out = {}
    for gpu in gpus:
        in_sample[gpu] = serving_errors(terms, overheads, [gpu])
        others = [g for g in gpus if g != gpu]
        if others:
            fitted = fit_serving(terms, others)
            held_out[gpu] = {**serving_errors(terms, fitted, [gpu]), "overheads": fitted}
    n_rows = {phase: int(terms[phase]["gpu"].size) for phase in SERVING_PHASES}
    log(f"serving stage: {n_rows} rows on {gpus}; overheads {overheads}, interval {interval}")
    for gpu in gpus:
        log(f"  {gpu}: in-sample kernel TPOT/TTFT {in_sample[gpu]['kernel']}, +serving "
            f"{in_sample[gpu]['serving']}; held out (fit on the others) {held_out.get(gpu)}")
    return {"overheads": overheads, "interval": interval, "in_sample": in_sample,
            "held_out": held_out, "n_rows": n_rows, "gpus": gpus}


# -- the files ----------------------------------------------------------------------------------

def _number(value: float) -> str:
    if not math.isfinite(value):
        raise ValueError(f"non-finite value {value!r}")
    return repr(float(value))


def _inline(mapping: dict) -> str:
    def one(v):
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(_number(x) for x in v) + "]"
        return _number(v)
    return "{ " + ", ".join(f"{k} = {one(v)}" for k, v in mapping.items()) + " }"


def _string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


HEADER = (
    "Engine profile: rooflinekit Engine knobs fitted per GPU to the {engine} kernel timings that "
    "NVIDIA's aiconfigurator-core {aic} (Apache-2.0) ships (systems/data/<system>/{{gemm,"
    "attention,comm}}/{engine}/<version>/*.parquet). Made by `python "
    "scripts/engine_profiles.py`: for each GPU the newest {engine} version with GEMM and "
    "attention tables; a step is the sum of the measured kernels (per layer the "
    "qkv/o/gate_up/down GEMMs, attention and, at tp > 1, two all-reduces; the LM head once), "
    "interpolated log-log in the tables, for Llama-3.1-8B and Llama-3.1-70B shapes, bf16 and "
    "fp8 weights where measured, TP 1/2/4/8 where an all-reduce table exists: decode at batch "
    "1-256 and context 512-16384 (TPOT), static-batch prefill at batch 1-8 and prompts "
    "128-8192 (TTFT), workloads whose weights and KV cache fit in 90 % of memory. Every "
    "profile times the all-reduce as the engine runs it (allreduce = \"custom\"): each the "
    "faster of its two-stage kernel (three hop latencies) and a one-shot (two, d - 1 payloads "
    "over the link) on NVLink GPUs, past one host's GPUs only for an engine whose all-reduce does "
    "not fall back there (cross_host_allreduce_latency 0). Then per GPU "
    "three rooflinekit.calibrate.calibrate() fits (overheads in s, gemm_half_tokens in tokens, "
    "efficiencies as shares of the datasheet peaks of the GEMMs' format; 90 % bootstrap "
    "intervals from {n} resamples, seed 0), each on the GPU's measured streaming bandwidth "
    "(the catalogue's streaming_bandwidth_tb_s: what its tables read operands larger than the "
    "L2 at) and its bandwidth efficiencies then written as shares of the datasheet figure "
    "(times streaming / datasheet: the profiled GPUs stream at 77-93 % of theirs, so the "
    "shares fitted against what the memory reaches are what carries from GPU to GPU): the "
    "prefill knobs to the TTFT rows, with an FP8 "
    "GEMM efficiency of its own (low_precision_compute_efficiency); the same with one compute "
    "efficiency for every format, whose compute_efficiency, gemm_half_tokens and "
    "interconnect_efficiency the decode phase holds (large decode batches bind on compute; "
    "decode's all-reduces are the same collective); and the decode knobs to the TPOT "
    "rows, with the FP8 GEMMs' extra fixed time per layer (low_precision_layer_overhead) "
    "and their weight reads' own bandwidth share (low_precision_bandwidth_efficiency). "
    "fp4_compute_efficiency and fp4_bandwidth_efficiency: the same workloads in NVFP4 (W4A4) "
    "where the GEMM table holds it (Blackwell, RTX PRO 6000), fitted to their TTFT and TPOT "
    "with every other knob held; elsewhere the low-precision knobs. "
    "Kernel sums hold no elementwise kernels, sampling, scheduler or Python time, so the "
    "overheads are a floor under a served engine's (aiconfigurator's own vLLM estimate adds "
    "0.8 ms per layer of CPU dispatch to each TTFT; not included). "
    "step_overhead is held at 0 in this kernel fit (every two-model fit finds 0; freed on one "
    "model size it wrecks the transfer to the other). host_traffic_share = 1 is held in every fit: "
    "a PCIe group larger than the catalogue's p2p_gpus sends its all-reduces over the one host "
    "link it shares (host_link_gb_s; the L40S row), no effect on NVLink GPUs. "
    "moe_layer_overhead (both phases; 0 where the version has no MoE table) is read from the "
    "MoE tables (systems/data/<system>/moe/{engine}/<version>/moe_perf.parquet): the median, "
    "over their rows of at most 16 tokens with the experts sharded over TP 1-8 and tokens "
    "spread evenly, of the block's latency less its touched experts' weights at the fitted "
    "decode bandwidth, less the same for the bf16 gate_up and down GEMMs of a dense MLP "
    "(which layer_overhead holds); interval: 5th-95th percentile over {n} resamples. "
    "moe_compute_share (both phases) is read from the same tables' compute-bound rows: per "
    "format but MXFP4 the median of the dense GEMMs' time for the experts' FLOPs over the "
    "block's latency less that median fixed time, and the median over formats; a version "
    "without an MoE table takes the engine's median. mxfp4_moe_compute_share (both phases; "
    "gpt-oss's MXFP4 experts) is the same over the rows of the MXFP4 kernel the engine serves "
    "gpt-oss with (W4A16; on Blackwell W4A8, MXFP8 activations, for TensorRT-LLM and SGLang), "
    "a share of the 16-bit path that may pass 1; without such rows, moe_compute_share. "
    "Interval: 5th-95th percentile over {n} resamples. "
    "mla_layer_overhead (both phases; every KV layer of a model with multi-head latent "
    "attention pays it) is read from the MLA generation-module tables "
    "(systems/data/<system>/mla/<engine>/<version>/mla_generation_module_perf.parquet; vLLM's "
    "only where their collection_meta.yaml records the collector's fused-op fix or revision; 0 "
    "for an engine with none): the median, over "
    "their bf16 rows of at most 16 sequences at contexts of at most 1,024 tokens, of DeepSeek-"
    "V3's module latency less its weights and latent cache at the fitted decode bandwidth, less "
    "the same for the bf16 qkv and o GEMMs and decode attention of Llama-3.1-8B and -70B (which "
    "layer_overhead holds); interval: 5th-95th percentile over {n} resamples; a GPU no such "
    "table covers takes the median of the engine's others, their range as its interval. "
    "attention_compute_efficiency (both phases) is read from the context-attention tables "
    "(systems/data/<system>/attention/<engine>/<version>/context_attention_perf.parquet): the "
    "median, over their bf16 rows of the two models' head pairs at 16,384-token prompts, of "
    "the attention FLOPs (4 x heads x 128 a pair, s(s-1)/2 pairs a prompt) over the measured "
    "time and the GPU's bf16 peak; interval: 5th-95th percentile over {n} resamples; the "
    "kernel fit above holds attention at the GEMMs' share. "
    "narrow_head_attention_share (both phases) is read from the same tables: the median, "
    "over their bf16 rows at 16,384-token prompts or more with heads of 64 beside a row of "
    "heads of 128 at the same query and KV heads, batch and prompt, of the 64-wide rows' "
    "share of the peak over the 128-wide ones', capped at 1; interval: 5th-95th percentile "
    "over {n} resamples; a GPU no table covers takes the median of the engine's others, "
    "their range as its interval. "
    "recurrent_layer_overhead, recurrent_chain_time and recurrent_element_time (both phases; "
    "a hybrid's Gated DeltaNet layers' prompt pass, per layer a + max(c1 L, c2 T S) for the "
    "step's longest prompt chunk L, its prompt tokens T and the state elements S a GPU holds "
    "a sequence per layer) are fitted to the Gated DeltaNet prompt tables "
    "(systems/data/<system>/linear_attention/<engine>/<version>/gdn_perf.parquet: the short "
    "convolution and the chunked delta rule, summed) by least squares on the log of the "
    "ratio; interval: 5th-95th percentile over {n} resamples of the rows; a GPU no table "
    "covers (SGLang 0.5.10's A100 table is not read: its times barely grow with the prompt) "
    "takes the median of the engine's others, their range as its interval. "
    "held_out_error and held_out_error_ttft: "
    "leave-one-GPU-out MAPE [%] of the kernel fit (there the fixed time per layer is fitted as "
    "clock cycles, layer_cycles, turned into seconds with each GPU's catalogue boost clock), "
    "every GPU at its streaming bandwidth (the one left out too: a figure any bandwidth "
    "microbenchmark gives); held_out_error_datasheet: the same TPOT error with every GPU at "
    "its datasheet bandwidth, what a GPU without a measured one can expect; "
    "model_size_error: TPOT MAPE [%] fitted on "
    "one model, applied to the other (the worse way); fit_error: in-sample TPOT MAPE [%]; all "
    "against the kernel sums.")

#: What the header adds per engine: the serving stage (vLLM), or that the profile is a floor.
HEADER_SERVING = (
    "Stage 2, serving: with each GPU's kernel knobs fixed, one decode step_overhead [s] shared "
    "by every GPU (CPU-side costs do not scale with the GPU), which replaces the kernel fit's "
    "0, is fitted by least squares on relative residuals to the TPOT of the public end-to-end "
    "vLLM rows of {files} from {source} ({rows}; H100-SXM and A100-SXM only; the NIM rows are "
    "another engine and are not used), with a {conf} % bootstrap interval (rows resampled, {n} "
    "resamples, seed 0). Those rows ran vLLM 0.6.0 with --num-scheduler-steps 10, which waits "
    "for the host between steps; "
    "from {asynchronous} on vLLM schedules asynchronously by default (the host prepares the "
    "next step while the GPU runs this one), so the fit is written as the synchronous "
    "versions' host time ([host_scheduling], which engine_profile adds for such a version) "
    "and a profile of version {asynchronous} or later holds step_overhead 0. "
    "prefill_overhead is NOT fitted there: "
    "each GPU keeps its kernel fit's TTFT intercept, because the TTFT of those rows is measured "
    "at the client and holds client/API time (tokenisation, HTTP, detokenisation) that the GPU "
    "does not spend, while rooflinekit's simulator charges prefill_overhead to every engine "
    "step that carries prompt tokens (fitted to that TTFT it came out at 53 ms and cut "
    "saturation throughput on load sweeps far below measured). Each profile's notes give the "
    "rows and the serving fit's in-sample and leave-one-GPU-out errors (TPOT; TTFT with the "
    "kernel intercept, for reference).")
HEADER_FLOOR = (
    "No serving overheads have been measured for {engine}: step_overhead stays 0 and the TTFT "
    "intercept is the kernels' own, so this profile is a floor (a lower bound) under what a "
    "served {engine} shows: scheduler, sampling, Python and elementwise time are missing.")


def _comment(paragraph: str) -> str:
    import textwrap
    return "\n".join("# " + line for line in textwrap.wrap(paragraph, width=96))


def write_profiles(engine: str, profiles: list, path: Path, serving: dict | None = None) -> None:
    """Write one engine's profiles in the shipped TOML format (``serving``: the
    :func:`serving_stage` result the profiles carry, ``None`` for a kernel-only file)."""
    header = [_comment(HEADER.format(engine=engine, aic=AIC_VERSION, n=N_RESAMPLES)), "#"]
    if serving is not None:
        header.append(_comment(HEADER_SERVING.format(
            files=" and ".join(SERVING_FILES), source=SERVING_SOURCE,
            rows=f"{serving['n_rows']['decode']} TPOT and {serving['n_rows']['prefill']} TTFT "
                 f"rows", conf=round(100 * CONFIDENCE), n=N_RESAMPLES,
            asynchronous=ASYNCHRONOUS_SINCE)))
    else:
        header.append(_comment(HEADER_FLOOR.format(engine=engine)))
    lines = [*header, f"engine = {_string(engine)}", f"allreduce = {_string(ALLREDUCE)}", ""]
    if serving is not None:
        ov, iv = serving["overheads"]["step_overhead"], serving["interval"]["step_overhead"]
        intake, band = request_overhead_fit()
        lines += [
            "[host_scheduling]",
            f"synchronous_from = {_string(SYNCHRONOUS_FROM)}",
            f"asynchronous_since = {_string(ASYNCHRONOUS_SINCE)}",
            f"synchronous_step_overhead = {_number(ov)}",
            f"synchronous_step_overhead_interval = [{_number(iv[0])}, {_number(iv[1])}]",
            f"source = {_string(HOST_SCHEDULING_SOURCE.format(**_frontend_words()))}",
            f"in_engine_frontend_before = {_string(IN_ENGINE_FRONTEND_BEFORE)}",
            f"request_overhead = {_number(round(intake, 5))}",
            "request_overhead_interval = [" + ", ".join(_number(round(v, 5)) for v in band) + "]",
            "",
        ]
    for prof in profiles:
        lines += [
            "[[profile]]",
            f"gpu = {_string(prof['gpu'])}",
            f"version = {_string(prof['version'])}",
            f"date = {_string(prof['date'])}",
            f"source = {_string(prof['source'])}",
            "models = [" + ", ".join(_string(m) for m in prof["models"]) + "]",
            f"held_out_error = {_number(prof['held_out_error'])}",
            f"held_out_error_ttft = {_number(prof['held_out_error_ttft'])}",
            f"held_out_error_datasheet = {_number(prof['held_out_error_datasheet'])}",
            f"model_size_error = {_number(prof['model_size_error'])}",
            f"fit_error = {_number(prof['fit_error'])}",
            f"prefill = {_inline(prof['prefill'])}",
            f"decode = {_inline(prof['decode'])}",
            *([f"notes = {_string(prof['notes'])}"] if prof.get("notes") else []),
            "",
            "[profile.interval]",
            f"prefill = {_inline(prof['interval']['prefill'])}",
            f"decode = {_inline(prof['interval']['decode'])}",
            "",
        ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))


def systems_with_data() -> list[str]:
    """The systems of :data:`SYSTEM_TO_GPU` that have kernel tables, in that order."""
    return [s for s in SYSTEM_TO_GPU if (data_root() / s / "gemm").is_dir()]


def build_engine(engine: str, today: str, log=print) -> list:
    """Synthesise, fit and evaluate every GPU of one engine; the profiles to write."""
    per_system = {}
    for system in systems_with_data():
        version = engine_version(system, engine)
        if version is None:
            log(f"{engine} {system}: no GEMM and attention tables, skipped")
            continue
        rows, fp4_rows, version = by_format(*synthesise(engine, system, version,
                                                        dtypes=ALL_DTYPES))
        per_system[system] = (rows, fp4_rows, version)
        log(f"{engine} {system} {version}: {len(rows)} rows")
    all_rows = [r for rows, _, _ in per_system.values() for r in rows]
    held_out = leave_one_gpu_out(all_rows) if len(per_system) > 1 else {}
    datasheet = leave_one_gpu_out(all_rows, streaming=False) if len(per_system) > 1 else {}
    profiles = []
    for system, (rows, fp4_rows, version) in per_system.items():
        gpu_name = SYSTEM_TO_GPU[system]
        result = fit_profile(rows)
        knobs = staged_knobs(result, fp4_rows, engine, system, version)
        size_error, each = model_size_error(rows)
        tpot_out, ttft_out = held_out.get(gpu_name, (math.nan, math.nan))
        tpot_datasheet = datasheet.get(gpu_name, (math.nan, math.nan))[0]
        comm = allreduce_version(system, engine, version)
        folders = f"{{gemm,attention}}/{engine}/{version}"
        if comm is not None:
            folders += f" + comm/{engine}/{comm}"
        profiles.append({
            "gpu": gpu_name, "version": version, "date": today,
            "source": (f"aiconfigurator-core {AIC_VERSION} systems/data/{system}/{folders} "
                       f"(Apache-2.0), fitted by scripts/engine_profiles.py"),
            "models": list(MODELS),
            "held_out_error": tpot_out, "held_out_error_ttft": ttft_out,
            "held_out_error_datasheet": tpot_datasheet,
            "model_size_error": size_error,
            "fit_error": result.error("decode"),
            "fit_error_ttft": result.error("prefill"),
            "model_size_each": each, "n_rows": len(rows),
            **knobs})
        log(f"  {gpu_name}: fit TPOT {profiles[-1]['fit_error']:.1f}% TTFT "
            f"{profiles[-1]['fit_error_ttft']:.1f}%, LOGO TPOT {tpot_out:.1f}% TTFT "
            f"{ttft_out:.1f}% (on datasheet bandwidths TPOT {tpot_datasheet:.1f}%), model size "
            f"{each}")
    pool_moe_shares(profiles)
    pool_mla_overheads(profiles)
    pool_narrow_heads(profiles)
    pool_recurrent(profiles)
    lend_cross_host_latency(engine, profiles)
    return profiles


def lend_cross_host_latency(engine: str, profiles: list) -> None:
    """Give a profile of a GPU with a ``host_gpus`` whose own all-reduce table stops at the host
    (no row of its fit crossed one) the engine's newest measured
    :func:`cross_host_latency` (:func:`newest_cross_host_latency`: its value on another
    table of the same engine, the same tray), in both phases, and say where it comes from in
    its source. It changes no fit: none of that GPU's rows reach past its host."""
    lent = newest_cross_host_latency(engine)
    if lent is None:
        return
    value, where = lent
    for prof in profiles:
        own = prof["decode"].get("cross_host_allreduce_latency", 0.0)
        if catalog.gpu(prof["gpu"]).host_gpus is None or own > 0 or value == 0:
            continue
        for phase in FIT:
            prof[phase]["cross_host_allreduce_latency"] = value
            prof["interval"][phase]["cross_host_allreduce_latency"] = [value, value]
        prof["source"] += (f"; cross_host_allreduce_latency {value * 1e6:.1f} us from {where} "
                           f"(its own tables stop at {catalog.gpu(prof['gpu']).host_gpus} GPUs)")


def _pct_pair(pair) -> str:
    return f"TPOT {pair[0]:.1f} %, TTFT {pair[1]:.1f} %"


def apply_serving(profiles: list, serving: dict) -> None:
    """Put the shared serving overhead, its interval and ``notes`` into ``profiles``."""
    ov, iv = serving["overheads"], serving["interval"]
    held = "; ".join(f"fitted on the other GPU's rows (step_overhead = "
                     f"{e['overheads']['step_overhead'] * 1e3:.3f} ms), predicting {g}'s: "
                     f"{_pct_pair(e['serving'])} (kernel-only {_pct_pair(e['kernel'])})"
                     for g, e in serving["held_out"].items())
    host = HostScheduling(SYNCHRONOUS_FROM, ASYNCHRONOUS_SINCE, ov["step_overhead"],
                          tuple(iv["step_overhead"]), HOST_SCHEDULING_SOURCE)
    for prof in profiles:
        kernel_intercept = prof["prefill"]["prefill_overhead"]
        asynchronous = host.asynchronous(prof["version"])
        for phase, knob in SERVING_KNOBS:
            prof[phase][knob] = 0.0 if asynchronous else ov[knob]
            prof["interval"][phase][knob] = [0.0, 0.0] if asynchronous else list(iv[knob])
        own = serving["in_sample"].get(prof["gpu"])
        held_here = (
            f"This profile's version, {prof['version']}, schedules asynchronously (vLLM's "
            f"default from {ASYNCHRONOUS_SINCE} on): the host prepares the next step while the "
            f"GPU runs this one, so its step_overhead is 0 and the fitted host time is written "
            f"as the synchronous versions' ([host_scheduling]; engine_profile('vllm', gpu, "
            f"version) of a version from {SYNCHRONOUS_FROM} to before {ASYNCHRONOUS_SINCE} adds "
            f"it). " if asynchronous else "")
        prof["notes"] = held_here + (
            f"Serving overhead step_overhead = {ov['step_overhead'] * 1e3:.3f} ms (the same for "
            f"every GPU; {round(100 * CONFIDENCE)} % bootstrap interval "
            f"{iv['step_overhead'][0] * 1e3:.3f}-{iv['step_overhead'][1] * 1e3:.3f} ms) was "
            f"fitted with the kernel knobs fixed to the TPOT of the {SERVING_SOURCE} end-to-end "
            f"vLLM rows of {' and '.join(SERVING_FILES)} ({serving['n_rows']['decode']} TPOT and "
            f"{serving['n_rows']['prefill']} TTFT rows, {' and '.join(serving['gpus'])}). "
            f"prefill_overhead is the kernel fit's own {kernel_intercept * 1e3:.2f} ms TTFT "
            f"intercept, not fitted to those rows: their TTFT holds client/API time "
            f"(tokenisation, HTTP, detokenisation) the GPU does not spend, which the simulator "
            f"would charge to every prefill step; their TTFT errors below use the kernel "
            f"intercept, for reference. Serving-fit MAPE on those rows, all GPUs in sample: "
            f"{_pct_pair(serving['in_sample']['all']['serving'])} (kernel-only "
            f"{_pct_pair(serving['in_sample']['all']['kernel'])})"
            + (f"; this GPU's rows: {_pct_pair(own['serving'])} (kernel-only "
               f"{_pct_pair(own['kernel'])})" if own else
               "; this GPU has no such rows: its overheads are the other GPUs'")
            + f". Leave-one-GPU-out serving fit: {held}. held_out_error is the kernel fit's "
            f"leave-one-GPU-out TPOT error.")


def main(argv: Sequence[str] | None = None) -> int:
    """Build every engine's profile file and print the table of knobs and errors."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", nargs="*", default=list(ENGINES))
    parser.add_argument("--output", type=Path, default=OUTPUT_DIR)
    parser.add_argument("--diagnose", action="store_true",
                        help="only print the fits that relax one structural limit each")
    parser.add_argument("--residuals", metavar="GPU",
                        help="only print where GPU's leave-one-GPU-out TPOT error sits, per "
                             "engine of --engines (mean signed / mean absolute error [%%] by "
                             "tp, format, batch, context and model)")
    args = parser.parse_args(argv)
    installed_aic_version()
    if args.residuals:
        for engine in args.engines:
            rows = [r for system in systems_with_data()
                    if engine_version(system, engine) is not None
                    for r in by_format(*synthesise(engine, system, dtypes=ALL_DTYPES))[0]]
            found = held_out_residuals(rows, catalog.gpu(args.residuals).name)
            print(f"{engine} {args.residuals}: TPOT %+.1f / %.1f %%" % found["all"])
            for key in RESIDUAL_KEYS:
                print(f"  {key:14s} " + "  ".join(f"{v}: {a:+.0f}/{b:.0f}"
                                                  for v, (a, b) in found[key].items()))
        return 0
    if args.diagnose:
        for engine in args.engines:
            for system in systems_with_data():
                if engine_version(system, engine) is not None:
                    diagnose(engine, system)
        return 0
    today = datetime.date.today().isoformat()
    for engine in args.engines:
        profiles = build_engine(engine, today)
        serving = None
        if engine == SERVING_ENGINE:
            kernel = {p["gpu"]: {"prefill": dict(p["prefill"]), "decode": dict(p["decode"])}
                      for p in profiles}
            serving = serving_stage(kernel)
            apply_serving(profiles, serving)
        write_profiles(engine, profiles, args.output / f"{engine}.toml", serving)
        if engine == SERVING_ENGINE and args.output == OUTPUT_DIR:
            # stage 3, under load: the front end's latency fitted to the load sweeps with the
            # profiles just written (a fresh process: the package reads its profiles once)
            subprocess.run([sys.executable, str(Path(__file__).with_name(
                "fit_frontend_latency.py")), "--write"], check=True)
        if engine in ("sglang", "trtllm") and args.output == OUTPUT_DIR:
            # SGLang's served overheads and TensorRT-LLM's front end, fitted to the engine's
            # load sweeps over the kernel profiles just written (scripts/fit_served_overheads.py)
            subprocess.run([sys.executable, str(Path(__file__).with_name(
                "fit_served_overheads.py")), "--engine", engine, "--write"], check=True)
        for prof in profiles:
            print(f"{engine:7s} {prof['gpu']:16s} {prof['version']:11s} rows {prof['n_rows']:4d} "
                  f"fit TPOT {prof['fit_error']:5.1f}% TTFT {prof['fit_error_ttft']:5.1f}% | "
                  f"LOGO TPOT {prof['held_out_error']:5.1f}% TTFT "
                  f"{prof['held_out_error_ttft']:5.1f}% | size {prof['model_size_error']:5.1f}% "
                  f"| {prof['prefill']} {prof['decode']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
