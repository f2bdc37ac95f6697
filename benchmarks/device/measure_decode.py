"""Time decode steps of a synthetic transformer and write rooflinekit's measurement format.

Run it on the machine you want to calibrate for: it builds a Llama-shaped decoder with random
weights (nothing is downloaded), fills a KV cache to each context length, times decode steps for
a grid of batch sizes and context lengths with PyTorch, and writes

* a measurement CSV (or JSON) that :func:`rooflinekit.calibrate.read_measurements` reads, one row
  per (batch size, context length), with ``tpot_ms`` = ``itl_ms`` = the median step time;
* the model's ``config.json`` (Hugging Face keys), so that
  ``ModelShape.from_hf_config`` gives rooflinekit the exact shape that was timed.

Then, e.g. on one H100::

    python benchmarks/device/measure_decode.py --preset llama-8b-like --gpu h100 \\
        --output h100_decode.csv --config-output h100_decode_config.json
    rooflinekit calibrate h100_decode.csv --phase decode \\
        --model-config llama-8b-like=h100_decode_config.json

PyTorch is needed (``pip install torch``) but is not a rooflinekit dependency. On a CPU it runs in
fp32; on CUDA in bf16 by default.

What a step contains: per layer RMSNorm, the QKV projection, the new token's K/V written into the
cache, grouped-query attention of one query per sequence over its cache, the output projection,
RMSNorm and a SwiGLU MLP; then the final norm and the LM head. Rotary embeddings and sampling are
left out (a few element-wise passes); the kernels are PyTorch's eager ones, not a serving engine's
fused kernels, so the fitted efficiencies describe this loop, an upper bound on the overhead a
tuned engine pays.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import datetime
import json
import math
import platform
import statistics
import sys
import time
from pathlib import Path

__all__ = ["SyntheticConfig", "PRESETS", "count_params", "hf_config", "build_weights",
           "decode_step", "step_times", "measure", "write_rows", "main"]

COLUMNS = ("model", "gpu", "tp", "dtype", "batch_size", "prompt_tokens", "output_tokens",
           "context_length", "ttft_ms", "itl_ms", "tpot_ms", "output_throughput", "source",
           "notes")


@dataclasses.dataclass(frozen=True)
class SyntheticConfig:
    """Shape of the synthetic Llama-style decoder (all sizes in elements)."""

    name: str
    n_layers: int
    hidden_size: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int

    def __post_init__(self):
        for field in ("n_layers", "hidden_size", "n_heads", "n_kv_heads", "head_dim",
                      "intermediate_size", "vocab_size"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{field} must be an integer >= 1, got {value!r}")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_heads ({self.n_heads}) must be a multiple of n_kv_heads "
                             f"({self.n_kv_heads})")


#: Shapes to time. "tiny" runs in well under a second on a CPU (tests); the others follow the
#: public configs of Llama-3.2-1B and Llama-3.1-8B (random weights, untied LM head).
PRESETS = {
    "tiny": SyntheticConfig("synthetic-tiny", n_layers=2, hidden_size=64, n_heads=4,
                            n_kv_heads=2, head_dim=16, intermediate_size=128, vocab_size=256),
    "llama-1b-like": SyntheticConfig("llama-1b-like", n_layers=16, hidden_size=2048,
                                     n_heads=32, n_kv_heads=8, head_dim=64,
                                     intermediate_size=8192, vocab_size=128256),
    "llama-8b-like": SyntheticConfig("llama-8b-like", n_layers=32, hidden_size=4096,
                                     n_heads=32, n_kv_heads=8, head_dim=128,
                                     intermediate_size=14336, vocab_size=128256),
}


def count_params(cfg: SyntheticConfig) -> int:
    """Parameters of the synthetic model: embeddings, LM head, attention, MLP and norms."""
    h, d = cfg.hidden_size, cfg.head_dim
    attention = h * cfg.n_heads * d + 2 * h * cfg.n_kv_heads * d + cfg.n_heads * d * h
    mlp = 3 * h * cfg.intermediate_size
    per_layer = attention + mlp + 2 * h
    return 2 * cfg.vocab_size * h + cfg.n_layers * per_layer + h


def hf_config(cfg: SyntheticConfig, dtype: str, max_context: int) -> dict:
    """A Hugging Face ``config.json`` describing the synthetic model (``model_type`` llama)."""
    torch_dtype = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}[dtype]
    return {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": cfg.hidden_size, "intermediate_size": cfg.intermediate_size,
        "num_hidden_layers": cfg.n_layers, "num_attention_heads": cfg.n_heads,
        "num_key_value_heads": cfg.n_kv_heads, "head_dim": cfg.head_dim,
        "vocab_size": cfg.vocab_size, "tie_word_embeddings": False,
        "max_position_embeddings": int(max_context), "torch_dtype": torch_dtype,
        "rms_norm_eps": 1e-5, "attention_bias": False, "mlp_bias": False,
    }


def _torch():
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - exercised only without torch
        raise SystemExit("measure_decode.py needs PyTorch: pip install torch") from exc
    return torch


def _torch_dtype(torch, dtype: str):
    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]


def build_weights(cfg: SyntheticConfig, device: str, dtype: str, seed: int = 0) -> dict:
    """Random weights (scaled like an initialised model so activations stay finite)."""
    torch = _torch()
    gen = torch.Generator(device="cpu").manual_seed(seed)
    tdt = _torch_dtype(torch, dtype)
    h, d = cfg.hidden_size, cfg.head_dim

    def rand(*shape):
        w = torch.randn(*shape, generator=gen, dtype=torch.float32) / math.sqrt(shape[0])
        return w.to(device=device, dtype=tdt)

    layers = []
    for _ in range(cfg.n_layers):
        layers.append({
            "attn_norm": torch.ones(h, device=device, dtype=tdt),
            "wqkv": rand(h, (cfg.n_heads + 2 * cfg.n_kv_heads) * d),
            "wo": rand(cfg.n_heads * d, h),
            "mlp_norm": torch.ones(h, device=device, dtype=tdt),
            "w_gate_up": rand(h, 2 * cfg.intermediate_size),
            "w_down": rand(cfg.intermediate_size, h),
        })
    return {"embed": rand(cfg.vocab_size, h), "layers": layers,
            "final_norm": torch.ones(h, device=device, dtype=tdt),
            "lm_head": rand(h, cfg.vocab_size)}


def _rms_norm(torch, x, weight, eps=1e-5):
    var = x.float().pow(2).mean(-1, keepdim=True)
    return (x.float() * torch.rsqrt(var + eps)).to(x.dtype) * weight


def decode_step(weights: dict, cfg: SyntheticConfig, tokens, k_cache: list, v_cache: list,
                position: int):
    """One decode step for a batch: returns logits; writes the new K/V at ``position``.

    ``k_cache[l]`` and ``v_cache[l]`` are ``[batch, n_kv_heads, capacity, head_dim]``; entries
    ``[:position]`` are the cached context.
    """
    torch = _torch()
    b = tokens.shape[0]
    d, nh, nkv = cfg.head_dim, cfg.n_heads, cfg.n_kv_heads
    group = nh // nkv
    x = weights["embed"][tokens]                                        # [b, h]
    for layer, kc, vc in zip(weights["layers"], k_cache, v_cache):
        qkv = _rms_norm(torch, x, layer["attn_norm"]) @ layer["wqkv"]
        q, k, v = torch.split(qkv, [nh * d, nkv * d, nkv * d], dim=-1)
        kc[:, :, position] = k.view(b, nkv, d)
        vc[:, :, position] = v.view(b, nkv, d)
        keys = kc[:, :, :position + 1]                                  # [b, nkv, C+1, d]
        values = vc[:, :, :position + 1]
        qg = q.view(b, nkv, group, d)                                   # GQA: heads share K/V
        scores = (qg @ keys.transpose(-1, -2)) * (1.0 / math.sqrt(d))   # [b, nkv, g, C+1]
        attn = torch.softmax(scores.float(), dim=-1).to(values.dtype) @ values
        x = x + attn.reshape(b, nh * d) @ layer["wo"]
        gate, up = torch.split(_rms_norm(torch, x, layer["mlp_norm"]) @ layer["w_gate_up"],
                               cfg.intermediate_size, dim=-1)
        x = x + (torch.nn.functional.silu(gate) * up) @ layer["w_down"]
    return _rms_norm(torch, x, weights["final_norm"]) @ weights["lm_head"]


def step_times(weights: dict, cfg: SyntheticConfig, batch_size: int, context_length: int,
                     *, steps: int = 10, warmup: int = 3, device: str = "cpu",
                     dtype: str = "fp32", seed: int = 0) -> list[float]:
    """Seconds of each of ``steps`` timed decode steps at ``context_length`` cached tokens.

    The cache is filled with random K/V once; every timed step attends over exactly
    ``context_length`` cached tokens plus its own (position is not advanced, so all steps have
    the same work).
    """
    torch = _torch()
    tdt = _torch_dtype(torch, dtype)
    gen = torch.Generator(device="cpu").manual_seed(seed + 1)
    shape = (batch_size, cfg.n_kv_heads, context_length + 1, cfg.head_dim)
    k_cache = [torch.randn(*shape, generator=gen).to(device=device, dtype=tdt)
               for _ in range(cfg.n_layers)]
    v_cache = [torch.randn(*shape, generator=gen).to(device=device, dtype=tdt)
               for _ in range(cfg.n_layers)]
    tokens = torch.randint(0, cfg.vocab_size, (batch_size,), generator=gen).to(device)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    times = []
    with torch.inference_mode():
        for i in range(warmup + steps):
            sync()
            t0 = time.perf_counter()
            decode_step(weights, cfg, tokens, k_cache, v_cache, context_length)
            sync()
            if i >= warmup:
                times.append(time.perf_counter() - t0)
    return times


def _parse_ints(text: str, name: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name} must be comma-separated integers") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{name} must be integers >= 1")
    return values


def measure(cfg: SyntheticConfig, batch_sizes, context_lengths, *, gpu: str, device: str = "cpu",
            dtype: str = "fp32", steps: int = 10, warmup: int = 3, seed: int = 0,
            max_memory_gib: float | None = None) -> list[dict]:
    """Measurement rows (file units: ms) for every batch size × context length that fits."""
    torch = _torch()
    weights = build_weights(cfg, device, dtype, seed)
    elem = torch.tensor([], dtype=_torch_dtype(torch, dtype)).element_size()
    weight_bytes = count_params(cfg) * elem
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")
    where = torch.cuda.get_device_name(0) if device.startswith("cuda") else platform.processor() \
        or platform.machine()
    # one untimed step first: the first call pays for lazy initialisation (kernels, allocator)
    step_times(weights, cfg, 1, 1, steps=1, warmup=1, device=device, dtype=dtype,
                     seed=seed)
    rows = []
    for ctx in context_lengths:
        for b in batch_sizes:
            kv_bytes = 2 * cfg.n_layers * b * cfg.n_kv_heads * (ctx + 1) * cfg.head_dim * elem
            if max_memory_gib is not None and (weight_bytes + kv_bytes) > max_memory_gib * 2**30:
                continue
            times = step_times(weights, cfg, b, ctx, steps=steps, warmup=warmup,
                                     device=device, dtype=dtype, seed=seed)
            step = statistics.median(times)
            spread = (max(times) - min(times)) / step if step > 0 else 0.0
            rows.append({
                "model": cfg.name, "gpu": gpu, "tp": 1, "dtype": dtype, "batch_size": b,
                "prompt_tokens": ctx, "output_tokens": 0, "context_length": ctx,
                "ttft_ms": "", "itl_ms": round(step * 1e3, 6), "tpot_ms": round(step * 1e3, 6),
                "output_throughput": round(b / step, 3) if step > 0 else "",
                "source": f"benchmarks/device/measure_decode.py {stamp} on {where} "
                          f"(torch {torch.__version__}, {device})",
                "notes": f"median of {steps} steps after {warmup} warm-up; "
                         f"(max-min)/median {spread:.2f}; synthetic {cfg.name}, random weights",
            })
            if device.startswith("cuda"):
                torch.cuda.empty_cache()
    return rows


def write_rows(rows: list[dict], path) -> Path:
    """Write rows as CSV (``.csv``) or JSON (``.json``) in rooflinekit's measurement format."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        with path.open("w", encoding="utf-8") as fh:
            json.dump({"measurements": [{k: (None if v == "" else v) for k, v in r.items()}
                                        for r in rows]}, fh, indent=1)
            fh.write("\n")
        return path
    if path.suffix.lower() != ".csv":
        raise ValueError(f"--output must end in .csv or .json, got {path.name!r}")
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description="Time decode steps of a synthetic transformer (random weights) and write "
                    "rooflinekit measurement rows.")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto (default)")
    parser.add_argument("--dtype", choices=("fp32", "bf16", "fp16"),
                        help="weights and KV format (default bf16 on CUDA, fp32 on CPU)")
    parser.add_argument("--batch-sizes", type=lambda s: _parse_ints(s, "--batch-sizes"),
                        default=[1, 4, 16])
    parser.add_argument("--context-lengths", type=lambda s: _parse_ints(s, "--context-lengths"),
                        default=[128, 1024])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gpu", help="catalogue name of the accelerator, written to the 'gpu' "
                                      "column (default: 'cpu' or the CUDA device name)")
    parser.add_argument("--max-memory-gib", type=float,
                        help="skip grid points whose weights + KV exceed this")
    parser.add_argument("--output", default="decode_measurements.csv")
    parser.add_argument("--config-output", help="write the model's config.json here (default: "
                                                "next to --output)")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.warmup < 0:
        parser.error("--steps must be >= 1 and --warmup >= 0")
    torch = _torch()
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = args.dtype or ("bf16" if device.startswith("cuda") else "fp32")
    gpu = args.gpu or (torch.cuda.get_device_name(0) if device.startswith("cuda") else "cpu")
    cfg = PRESETS[args.preset]
    rows = measure(cfg, args.batch_sizes, args.context_lengths, gpu=gpu, device=device,
                   dtype=dtype, steps=args.steps, warmup=args.warmup, seed=args.seed,
                   max_memory_gib=args.max_memory_gib)
    out = write_rows(rows, args.output)
    config_path = Path(args.config_output) if args.config_output else \
        out.with_name(out.stem + "_config.json")
    with config_path.open("w", encoding="utf-8") as fh:
        json.dump(hf_config(cfg, dtype, max(args.context_lengths) + 1), fh, indent=1)
        fh.write("\n")
    sys.stdout.write(f"{len(rows)} rows -> {out}; model config -> {config_path}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
