"""``rooflinekit catalog``: the built-in GPUs or models, with their figures and sources."""

from __future__ import annotations

from rooflinekit import catalog, units
from rooflinekit.cli._args import COMMAND_API, add_flag, examples
from rooflinekit.cli._output import print_json, print_table

__all__ = list(COMMAND_API)

NAME = "catalog"
HELP = "list the built-in GPUs or models with their sources"
DESCRIPTION = "List catalogue entries with their figures and sources."
EPILOG = examples(NAME, "gpus", "models llama-3.1-70b deepseek-v3 --json")


def add_arguments(parser) -> None:
    parser.add_argument("kind", choices=("gpus", "models"))
    parser.add_argument("names", nargs="*", help="only these entries (case-insensitive)")
    add_flag(parser, "--json")


def run(args, out) -> int:
    if args.kind == "gpus":
        _gpus(args, out)
    else:
        _models(args, out)
    return 0


def _gpus(args, out) -> None:
    specs = [catalog.gpu(n) for n in (args.names or catalog.gpu_names())]
    if args.json:
        print_json([{"name": g.name, "memory_gib": g.memory_bytes / units.GiB,
                     "hbm_bandwidth_tb_s": g.hbm_bandwidth / units.TB_PER_S,
                     "dense_tflops": {k: v / units.TFLOPS
                                      for k, v in g.peak_flops_by_dtype.items()},
                     "interconnect_gb_s": None if g.interconnect_bandwidth is None
                     else g.interconnect_bandwidth / units.GB_PER_S,
                     "hourly_usd": g.hourly_price, "source": g.source} for g in specs],
                   out, indent=2)
        return
    rows = [(g.name, g.memory_bytes / units.GiB, g.hbm_bandwidth / units.TB_PER_S,
             g.peak_flops / units.TFLOPS,
             g.peak_flops_by_dtype["fp8"] / units.TFLOPS if "fp8" in g.peak_flops_by_dtype
             else "-",
             "-" if g.hourly_price is None else f"{g.hourly_price:.2f}", g.source)
            for g in specs]
    print_table(("gpu", "GiB", "TB/s", "TFLOP/s bf16", "TFLOP/s fp8", "USD/h", "source"),
                rows, out)


def _models(args, out) -> None:
    specs = [catalog.model(n) for n in (args.names or catalog.model_names())]
    if args.json:
        print_json([{"name": m.name, "n_params": m.n_params, "n_active_params": m.n_active_params,
                     "attention": m.attention, "kv_bytes_per_token": m.kv_bytes_per_token,
                     "weight_bytes": m.weight_bytes, "sliding_window": m.sliding_window,
                     "source": m.source} for m in specs], out, indent=2)
        return
    rows = [(m.name, f"{m.n_params / 1e9:,.1f}B" + (
             f" ({m.n_active_params / 1e9:,.1f}B active)" if m.is_moe else ""),
             m.n_layers, m.attention + (f" +SWA{m.sliding_window}" if m.sliding_window else ""),
             m.kv_bytes_per_token / units.KiB, m.weight_bytes / units.GiB, m.source)
            for m in specs]
    print_table(("model", "params", "layers", "attention", "KV KiB/token", "weights GiB",
                 "source"), rows, out)
