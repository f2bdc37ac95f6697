"""``rooflinekit catalog``: the built-in GPUs or models, with their figures and sources."""

from __future__ import annotations

from rooflinekit import catalog, units
from rooflinekit.cli._args import COMMAND_API, add_output_flags, examples
from rooflinekit.cli._output import emit, print_table

__all__ = list(COMMAND_API)

NAME = "catalog"
HELP = "list the built-in GPUs, models or prices with their sources"
DESCRIPTION = ("List catalogue entries with their figures and sources; prices are illustrative "
               "and dated.")
EPILOG = examples(NAME, "gpus", "models llama-3.1-70b deepseek-v3 --json", "prices",
                  "prices guide-lab --csv")


def add_arguments(parser) -> None:
    parser.add_argument("kind", choices=("gpus", "models", "prices"))
    parser.add_argument("names", nargs="*", help="only these entries (case-insensitive)")
    add_output_flags(parser)


def run(args, out) -> int:
    return {"gpus": _gpus, "models": _models, "prices": _prices}[args.kind](args, out)


#: The price list's sections and what a row of each prices.
_PRICE_SECTIONS = {"payg": "pay-as-you-go", "provisioned": "provisioned", "gpu_hourly": "GPU"}

#: Price fields of a row, each with its unit; a pay-as-you-go row has two.
_PRICE_FIELDS = {"input_per_mtok": "USD/1M input tokens",
                 "output_per_mtok": "USD/1M output tokens",
                 "usd_per_unit_month": "USD/unit-month", "usd_per_unit_hour": "USD/unit-hour",
                 "usd_per_hour": "USD/GPU-hour"}


def _prices(args, out) -> int:
    table = catalog.price_table()
    records = []
    for section, kind in _PRICE_SECTIONS.items():
        for row in table.get(section, []):
            fields = [f for f in _PRICE_FIELDS if f in row]
            records.append({"kind": kind, "name": row.get("name", row.get("gpu")),
                            "price": " / ".join(f"{row[f]:g}" for f in fields),
                            "unit": " / ".join(_PRICE_FIELDS[f] for f in fields),
                            "date": row.get("date", ""), "source": row.get("source", ""),
                            **{f: row[f] for f in fields}})
    if args.names:
        wanted = {n.lower() for n in args.names}
        unknown = wanted - {str(r["name"]).lower() for r in records}
        if unknown:
            raise ValueError(f"unknown price row {min(unknown)!r}; see `rooflinekit "
                             f"catalog prices`")
        records = [r for r in records if str(r["name"]).lower() in wanted]
    meta = table.get("meta", {})

    def text(out):
        out.write(f"prices as of {meta.get('date', '?')}, {meta.get('currency', 'USD')}: "
                  f"{meta.get('caveat', '')}\n")
        print_table(("kind", "name", "price", "unit", "date", "source"),
                    [(r["kind"], r["name"], r["price"], r["unit"], r["date"], r["source"])
                     for r in records], out)
    return emit(args, out, records, text=text)


def _gpus(args, out) -> int:
    specs = [catalog.gpu(n) for n in (args.names or catalog.gpu_names())]
    records = [{"name": g.name, "memory_gib": g.memory_bytes / units.GiB,
                     "hbm_bandwidth_tb_s": g.hbm_bandwidth / units.TB_PER_S,
                     "dense_tflops": {k: v / units.TFLOPS
                                      for k, v in g.peak_flops_by_dtype.items()},
                     "interconnect_gb_s": None if g.interconnect_bandwidth is None
                     else g.interconnect_bandwidth / units.GB_PER_S,
                     "hourly_usd": g.hourly_price, "source": g.source} for g in specs]
    rows = [(g.name, g.memory_bytes / units.GiB, g.hbm_bandwidth / units.TB_PER_S,
             g.peak_flops / units.TFLOPS,
             g.peak_flops_by_dtype["fp8"] / units.TFLOPS if "fp8" in g.peak_flops_by_dtype
             else None,
             g.hourly_price, g.source)
            for g in specs]
    return emit(args, out, records, text=lambda out: print_table(
        ("gpu", "memory [GiB]", "HBM [TB/s]", "bf16 [TFLOP/s]", "fp8 [TFLOP/s]", "[USD/h]",
         "source"), rows, out))


def _models(args, out) -> int:
    specs = [catalog.model(n) for n in (args.names or catalog.model_names())]
    records = [{"name": m.name, "n_params": m.n_params, "n_active_params": m.n_active_params,
                     "attention": m.attention, "kv_bytes_per_token": m.kv_bytes_per_token,
                     "weight_bytes": m.weight_bytes, "sliding_window": m.sliding_window,
                     "state_bytes_per_sequence": m.state_bytes_per_sequence,
                     "source": m.source} for m in specs]
    rows = [(m.name, round(m.n_params / 1e9, 1),
             round(m.n_active_params / 1e9, 1) if m.is_moe else None, m.n_layers, m.attention + (f" +SWA{m.sliding_window}" if m.sliding_window else ""),
             m.kv_bytes_per_token / units.KiB,
             # a hybrid's recurrent layers: their constant state, once a sequence
             m.state_bytes_per_sequence / units.MiB if m.state_bytes_per_sequence else None,
             m.weight_bytes / units.GiB, m.source)
            for m in specs]
    return emit(args, out, records, text=lambda out: print_table(
        ("model", "params [B]", "active [B]", "layers", "attention", "KV [KiB/token]",
         "state [MiB/seq]", "weights [GiB]", "source"),
        rows, out))
