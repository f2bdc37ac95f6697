#!/usr/bin/env python
"""Time the weight GEMMs of a decoder step on this machine's NVIDIA GPU (cuBLAS via PyTorch).

A development script, not part of the package; it needs PyTorch with CUDA and a GPU::

    python scripts/measure_gemm.py --output gemm.csv

For Llama-3.1-8B and Llama-3.1-70B (the catalogue's shapes) at tensor-parallel degree ``tp``
it times each layer's four weight GEMMs of one GPU's shard, ``y = x · Wᵀ`` with ``x`` of ``m``
rows (the step's tokens): ``qkv`` (n = (H + 2·KV)·d / tp, k = h), ``o`` (n = h, k = H·d / tp),
``gate_up`` (n = 2·I / tp, k = h) and ``down`` (n = h, k = I / tp), and the LM head (n = V / tp,
k = h) at decode sizes, in bf16 (``torch.matmul``) and in FP8 e4m3 with per-tensor scales
(``torch._scaled_mm``, bf16 out; FP8 needs ``m`` a multiple of 16 there, so smaller ``m`` are
not timed in FP8). These are the GEMMs of ``scripts/engine_profiles.py``'s synthesised step.

How it times: a CUDA graph replays the GEMM on ``C`` copies of the weight in turn, enough copies
to hold at least :data:`COLD_BYTES` (four times the H200's 60 MB L2), so that every GEMM reads
its weight from HBM as a decoder does, layer after layer; the graph is replayed
:data:`REPLAYS` times between two CUDA events after :data:`WARMUP` replays; a point's time is
the elapsed time over the GEMMs run [s]. Launch gaps are inside the graph, not between
launches of Python. The weights are random normal (scaled to 0.02); the GEMM's time does not
depend on the values beyond power and clocks.

Writes one CSV row per (model, tp, gemm, dtype, m): ``time_s``, ``n``, ``k``, and the device,
driver and library versions in ``source``.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time

#: Model shapes (hidden, heads, KV heads, head dim, MLP width, vocabulary), as the catalogue's.
MODELS = {"Llama-3.1-8B": (4096, 32, 8, 128, 14336, 128256),
          "Llama-3.1-70B": (8192, 64, 8, 128, 28672, 128256)}
#: Tensor-parallel degrees per model (the 8B at TP 1 and 2, the 70B at TP 1-8).
TP = {"Llama-3.1-8B": (1, 2), "Llama-3.1-70B": (1, 2, 4, 8)}
#: Rows (tokens in the step) timed for the layer GEMMs, and for the LM head (decode only).
ROWS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
HEAD_ROWS = (1, 8, 16, 64, 256)
#: Weight bytes the copies of one GEMM's weight hold together, at least [bytes].
COLD_BYTES = 256 * 2**20
#: Most copies of one weight (the graph's length).
MAX_COPIES = 32
WARMUP = 3
REPLAYS = 10


def shapes(model: str, tp: int):
    """``(gemm, n, k)`` of one GPU's shard of each weight GEMM."""
    h, heads, kv, d, inter, vocab = MODELS[model]
    return (("qkv", (heads + 2 * kv) * d // tp, h), ("o", h, heads * d // tp),
            ("gate_up", 2 * inter // tp, h), ("down", h, inter // tp),
            ("lm_head", vocab // tp, h))


def time_gemm(torch, m: int, n: int, k: int, dtype: str) -> float:
    """Seconds per GEMM of ``(m, k) × (k, n)`` in ``dtype`` (bf16 or fp8), weights cold."""
    dev = "cuda"
    weight_bytes = n * k * (2 if dtype == "bf16" else 1)
    copies = max(2, min(MAX_COPIES, math.ceil(COLD_BYTES / weight_bytes)))
    x = (torch.randn(m, k, device=dev) * 0.02).to(torch.bfloat16)
    weights = [(torch.randn(n, k, device=dev) * 0.02).to(torch.bfloat16) for _ in range(copies)]
    if dtype == "fp8":
        x = x.to(torch.float8_e4m3fn)
        weights = [w.to(torch.float8_e4m3fn) for w in weights]
        one = torch.ones((), device=dev, dtype=torch.float32)

        def gemm(w):
            return torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    else:
        out = torch.empty(m, n, device=dev, dtype=torch.bfloat16)

        def gemm(w):
            return torch.matmul(x, w.t(), out=out)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for w in weights:
            gemm(w)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for w in weights:
            gemm(w)
    for _ in range(WARMUP):
        graph.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(REPLAYS):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    seconds = start.elapsed_time(end) * 1e-3 / (REPLAYS * copies)
    del graph, weights
    torch.cuda.empty_cache()
    return seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", required=True, help="the CSV to write")
    parser.add_argument("--budget", type=float, default=240.0,
                        help="stop starting new points after this many seconds (240)")
    args = parser.parse_args(argv)
    import torch
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device: this script times GEMMs on an NVIDIA GPU")
    props = torch.cuda.get_device_properties(0)
    source = (f"measured with scripts/measure_gemm.py on one {props.name} "
              f"({props.multi_processor_count} SMs), torch {torch.__version__}, CUDA "
              f"{torch.version.cuda}, cuBLAS via torch.matmul / torch._scaled_mm, CUDA graphs")
    began = time.monotonic()
    rows = []
    for model, degrees in TP.items():
        for tp in degrees:
            for gemm, n, k in shapes(model, tp):
                for dtype in ("bf16", "fp8"):
                    for m in HEAD_ROWS if gemm == "lm_head" else ROWS:
                        if dtype == "fp8" and m % 16:
                            continue
                        if gemm == "lm_head" and tp > 1:
                            continue
                        if time.monotonic() - began > args.budget:
                            break
                        seconds = time_gemm(torch, m, n, k, dtype)
                        rows.append({"model": model, "tp": tp, "gemm": gemm, "dtype": dtype,
                                     "m": m, "n": n, "k": k, "time_s": f"{seconds:.6e}",
                                     "source": source})
                        print(f"{model} tp{tp} {gemm:8s} {dtype} m={m:6d} "
                              f"{seconds * 1e6:10.2f} us "
                              f"{2 * m * n * k / seconds / 1e12:7.1f} TFLOP/s", flush=True)
    with open(args.output, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(rows)} points in {time.monotonic() - began:.0f} s -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
