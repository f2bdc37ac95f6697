"""The guide's figures, recomputed live: data for ``rooflinekit guide``.

Each section function returns a :class:`Section`: the guide's quoted figures beside ours (a mark
and a reason where they differ) and the tables its text refers to, with the worked §6.3–6.5
pricing figures at the guide's own prices. Nothing here derives a number.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import xarray as xr

from rooflinekit import (
    batching,
    catalog,
    dims,
    memory,
    parallel,
    planning,
    pricing,
    roofline,
    units,
    workloads,
)

__all__ = ["Figure", "Table", "Section", "SECTIONS", "build", "section_names",
           "guide_break_even_figures", "GuideSelfHostingFigures", "guide_self_hosting_figures",
           "guide_spillover_figures"]


@dataclasses.dataclass(frozen=True)
class Figure:
    """One figure the guide quotes: its words, its value, ours, and whether they agree."""

    label: str
    guide: str
    ours: float | int | str
    unit: str = ""
    agrees: bool = True
    note: str = ""

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Table:
    """A table the guide's text refers to but does not show, printed in full."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple, ...]

    def as_dict(self) -> dict:
        return {"title": self.title, "columns": list(self.columns),
                "rows": [list(r) for r in self.rows]}


@dataclasses.dataclass(frozen=True)
class Section:
    """One of the guide command's sections."""

    key: str
    title: str
    figures: tuple[Figure, ...]
    tables: tuple[Table, ...] = ()
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {"key": self.key, "title": self.title,
                "figures": [f.as_dict() for f in self.figures],
                "tables": [t.as_dict() for t in self.tables], "notes": list(self.notes)}


def _close(ours: float, guide: float, rel: float) -> bool:
    return abs(ours - guide) <= rel * abs(guide)


def memory_section() -> Section:
    """§2: KV bytes per token, the memory budget and concurrency by attention layout."""
    model = catalog.model("guide-70b")
    gpu = catalog.gpu("guide-lab-80GB")
    ctx = 8192
    per_token = memory.kv_bytes_per_token(model)
    per_seq = memory.kv_bytes_per_sequence(model, ctx)
    weights = memory.weight_bytes(model)
    one_card = memory.max_concurrent_sequences(model, gpu, ctx, tp=1)
    budget = memory.usable_kv_bytes(model, gpu, tp=8)
    layouts = {"MHA": model.replace(n_kv_heads=model.n_heads),
               "GQA-8": model, "MQA": model.replace(n_kv_heads=1)}
    seqs = {k: memory.max_concurrent_sequences(v, gpu, ctx, tp=8) for k, v in layouts.items()}
    figures = (
        Figure("KV bytes per token (L=80, H_kv=8, d=128, fp16)", "327,680 B ≈ 320 KiB",
               per_token, "B", per_token == 327_680),
        Figure("KV of one 8,192-token sequence", "2.5 GiB", per_seq / units.GiB, "GiB",
               per_seq == 2.5 * units.GiB),
        Figure("70B weights at fp16", "140 GB ≈ 130 GiB", weights / units.GiB, "GiB",
               _close(weights / units.GiB, 130, 0.01)),
        Figure("8k sequences on one 80 GiB card", "0 (does not fit)", one_card, "",
               one_card == 0),
        Figure("KV budget on 8 × 80 GiB, 10% reserve", "459 GiB", budget / units.GiB, "GiB",
               round(budget / units.GiB) == 459),
        Figure("concurrent 8k sequences, GQA-8", "183", seqs["GQA-8"], "", seqs["GQA-8"] == 183),
        Figure("concurrent 8k sequences, MHA", "22", seqs["MHA"], "", seqs["MHA"] == 22),
        Figure("concurrent 8k sequences, MQA", "1,467", seqs["MQA"], "", seqs["MQA"] == 1467),
        Figure("… MQA with one KV copy per GPU, as engines store it", "(not discussed)",
               memory.max_concurrent_sequences(layouts["MQA"], gpu, ctx, tp=8,
                                               replicate_kv=True), "", True,
               "1 KV head cannot be split across 8 GPUs: each keeps a copy, and MQA serves what "
               "GQA-8 does; the 1,467 needs tp ≤ H_kv or a layout that shards"),
    )
    contexts = (1024, 2048, 4096, 8192, 16384, 32768, 131072)
    rows = tuple(
        (name, f"{v.kv_bytes_per_token / units.KiB:,.0f}",
         *(memory.max_concurrent_sequences(v, gpu, c, tp=8) for c in contexts))
        for name, v in layouts.items()
    )
    table = Table("Concurrent sequences on 8 × 80 GiB (70B fp16, 10% reserve) by context",
                  ("layout", "KiB/token", *(f"{c:,}" for c in contexts)), rows)
    notes = (
        "Conventions: memory in GiB (2^30 B), weights in decimal GB; the 10% reserve comes off "
        "what remains after the weights; sequence counts are floored.",
    )
    return Section("memory", "KV cache and memory budget (§2)", figures, (table,), notes)


def roofline_section() -> Section:
    """§3: decode traffic, the ridge point, intensity and what batching buys."""
    model = catalog.model("guide-70b")
    gpu = catalog.gpu("guide-lab-80GB")
    guide = roofline.Engine(allreduce="guide")     # §3 is the simple model: no communication
    traffic = roofline.decode_bytes(model, 1, 0)
    itl = roofline.decode_step_time(model, gpu, 1, 0, engine=guide)
    arithmetic = roofline.decode_compute_time(model, gpu, 1, 0, engine=guide)
    arithmetic_8 = roofline.decode_compute_time(model, gpu, 1, 0, tp=8, engine=guide)
    ridge = roofline.ridge_point(gpu)
    intensity = roofline.arithmetic_intensity(model, 1, 0)
    fall_0 = (roofline.amortized_token_time(model, gpu, 1, 0, engine=guide)
              / roofline.amortized_token_time(model, gpu, 128, 0, engine=guide))
    ctx_75 = 2390          # conventions: 2,353–2,429 tokens of context round to 75×
    fall_ctx = (roofline.amortized_token_time(model, gpu, 1, ctx_75, engine=guide)
                / roofline.amortized_token_time(model, gpu, 128, ctx_75, engine=guide))
    ttft = roofline.prefill_time(model, gpu, 20_000, tp=8, engine=guide)
    figures = (
        Figure("bytes read per batch-1 decode step (70B fp16)", "140 GB", traffic / units.GB, "GB",
               traffic == 140e9),
        Figure("batch-1 decode step at 3.35 TB/s (one GPU, memory aside)", "~42 ms",
               itl / units.MS, "ms", _close(itl / units.MS, 42, 0.01)),
        Figure("arithmetic time of that step at 989 TFLOP/s", "~0.00003 ms",
               arithmetic / units.MS, "ms", False,
               f"does not re-derive: 140 GFLOP / 989 TFLOP/s = {arithmetic / units.MS:.2f} ms "
               f"({arithmetic_8 / units.MS:.3f} ms across 8 GPUs); the lesson (memory-bound by "
               f"~300×) stands"),
        Figure("ridge point 989e12 / 3.35e12", "≈ 295 FLOP/B", ridge, "FLOP/B",
               round(ridge) == 295),
        Figure("batch-1 decode arithmetic intensity", "~1 FLOP/B", intensity, "FLOP/B",
               intensity == 1.0),
        Figure("share of peak compute at batch 1", "~0.3%", 100 * intensity / ridge, "%",
               round(100 * intensity / ridge, 1) == 0.3),
        Figure("per-token cost fall, batch 1 -> 128, zero context", "75×", fall_0, "×", False,
               "at zero context the fall is exactly 128× (weights amortised, no KV); 75× needs "
               "≈ 2,390 tokens of context per sequence (next line)"),
        Figure(f"per-token cost fall, batch 1 -> 128, {ctx_75:,}-token context", "75×", fall_ctx,
               "×", round(fall_ctx) == 75),
        Figure("TTFT of a 20,000-token prompt on 8 GPUs (compute-bound)", "slow, ∝ prompt",
               ttft / units.MS, "ms", True, "prefill scales with prompt length (§3.3)"),
    )
    batches = (1, 2, 4, 8, 16, 32, 64, 128)
    rows = []
    for b in batches:
        rows.append((b, roofline.arithmetic_intensity(model, b, 0),
                     roofline.arithmetic_intensity(model, b, ctx_75),
                     roofline.decode_step_time(model, gpu, b, ctx_75, tp=8, engine=guide)
                     / units.MS,
                     roofline.amortized_token_time(model, gpu, b, 0, tp=8, engine=guide)
                     / units.MS,
                     roofline.amortized_token_time(model, gpu, b, ctx_75, tp=8, engine=guide)
                     / units.MS,
                     fall_at(model, gpu, b, 0, engine=guide),
                     fall_at(model, gpu, b, ctx_75, engine=guide)))
    table = Table(
        f"Batching raises intensity (70B fp16 on 8 × lab GPU; context 0 and {ctx_75:,} tokens)",
        ("batch", "FLOP/B ctx 0", f"FLOP/B ctx {ctx_75:,}", f"ITL ms ctx {ctx_75:,}",
         "ms/token ctx 0", f"ms/token ctx {ctx_75:,}", "cost fall ctx 0",
         f"cost fall ctx {ctx_75:,}"),
        tuple(rows))
    notes = ("Decode time = max(FLOPs / peak, bytes / bandwidth) with ideal efficiencies; ITL is "
             "the step time, per-token cost the step time ÷ batch.",)
    return Section("roofline", "Prefill and decode: the roofline (§3)", figures, (table,), notes)


def fall_at(model, gpu, batch_size, context_length, *, engine=None):
    """How much cheaper a token is at ``batch_size`` than at batch 1 (same context), under
    ``engine`` (an :class:`~rooflinekit.Engine`; default :data:`rooflinekit.IDEAL`)."""
    return (roofline.amortized_token_time(model, gpu, 1, context_length, engine=engine)
            / roofline.amortized_token_time(model, gpu, batch_size, context_length,
                                            engine=engine))


def batching_section() -> Section:
    """§4: static vs continuous on the reconstructed lab workload, admission, paging, variance."""
    # a first run on this machine compiles both simulators, side by side (numba's cache after)
    batching.compile_kernels(("continuous-tick", "static"))
    work = workloads.guide_workload()
    static = batching.StaticBatcher(batch_size=8).run(work)
    cont = batching.ContinuousBatcher(max_num_seqs=16).run(work)
    f = lambda ds, k: float(ds[k])  # noqa: E731
    speedup = f(static, "makespan") / f(cont, "makespan")
    latency_fall = f(static, "mean_service_latency") / f(cont, "mean_service_latency")
    figures = (
        Figure("static batching makespan (24 requests, batches of 8)", "1,220 ticks",
               f(static, "makespan"), "ticks", f(static, "makespan") == 1220),
        Figure("continuous batching makespan (16 slots)", "440 ticks", f(cont, "makespan"),
               "ticks", f(cont, "makespan") == 440),
        Figure("continuous speed-up", "2.8×", speedup, "×", round(speedup, 1) == 2.8),
        Figure("mean latency, static (admission -> finish)", "337 ticks",
               f(static, "mean_service_latency"), "ticks",
               round(f(static, "mean_service_latency")) == 337,
               f"from arrival it is {f(static, 'mean_latency'):.2f} ticks; the guide's figure is "
               f"service time (conventions)"),
        Figure("mean latency, continuous (admission -> finish)", "68 ticks",
               f(cont, "mean_service_latency"), "ticks",
               round(f(cont, "mean_service_latency")) == 68,
               f"from arrival: {f(cont, 'mean_latency'):.2f} ticks"),
        Figure("mean latency fall", "5×", latency_fall, "×", round(latency_fall) == 5),
    )
    # admission (§4.4): 10 requests of 100 prompt + 100 output tokens against 1,000 tokens of KV
    over = workloads.Workload(np.zeros(10), np.full(10, 100), np.full(10, 100))
    guard = batching.ContinuousBatcher(max_num_seqs=32, kv_budget_tokens=1000)
    trace_final, trace_prompt = [], []
    guard.reference(over, trace=trace_final)
    guard.reference(over, admission="prompt", trace=trace_prompt)
    peak_final = max(t[3] for t in trace_final)
    peak_prompt = max(t[3] for t in trace_prompt)
    huge = workloads.Workload(np.zeros(3), np.array([100, 900, 100]), np.array([100, 200, 100]))
    rejected = guard.run(huge)
    reason = str(rejected.reason.values[1])
    paged = batching.ContinuousBatcher(max_num_seqs=32, kv_budget_tokens=1000,
                                       admission="paged", block_size=16).run(over)
    reserve = guard.run(over)
    figures = figures + (
        Figure("peak KV, budgeting the final length (1,000-token budget)", "never over budget",
               peak_final, "tokens", peak_final <= 1000),
        Figure("peak KV, budgeting only the prompt (the failure mode)", "over-admits, OOM",
               peak_prompt, "tokens", peak_prompt > 1000,
               "all 10 admitted on 100-token prompts grow to 200 tokens each"),
        Figure("a request longer than the whole budget", "rejected at once",
               str(rejected.status.values[1]), "", reason != "",
               f"reason: {reason}; the other two complete"),
        Figure("concurrent sequences, paged vs reserve (same budget)", "paging runs fuller",
               f"{int(paged.peak_running)} vs {int(reserve.peak_running)}", "",
               int(paged.peak_running) > int(reserve.peak_running),
               f"{int(paged.n_preemptions)} recompute preemptions; waste "
               f"{100 * float(paged.kv_waste_fraction):.1f}% vs "
               f"{100 * float(reserve.kv_waste_fraction):.1f}% of reserved KV"),
    )
    sigmas = (0.0, 0.5, 1.0, 1.5, 2.0)
    spec = workloads.WorkloadSpec(256, output=workloads.LogNormal(100, 0.0))
    mc = batching.monte_carlo(spec, {"static": batching.StaticBatcher(8),
                                     "continuous": batching.ContinuousBatcher(8)},
                              replicates=50, seed=0, sweep={"output.sigma": list(sigmas)},
                              parallel=False)   # small: serial beats starting threads
    ratio = (mc.sel(policy="static") / mc.sel(policy="continuous"))
    rows = tuple(
        (sg, float(ratio.makespan.sel({"output.sigma": sg}).median()),
         float(ratio.mean_latency.sel({"output.sigma": sg}).median()),
         float(ratio.mean_latency.sel({"output.sigma": sg}).quantile(0.1)),
         float(ratio.mean_latency.sel({"output.sigma": sg}).quantile(0.9)))
        for sg in sigmas)
    table = Table("Continuous win vs output-length spread (256 requests at once, 8 slots each, "
                  "lognormal outputs of mean 100, 50 replicates)",
                  ("sigma", "makespan ratio (median)", "latency ratio (median)", "p10",
                   "p90"), rows)
    notes = ("Tick rules: each tick arrive, retire, admit, terminate-check, step; a request "
             "admitted at tick t with n output tokens finishes at t + n. Latency from arrival "
             "includes queueing; service latency starts at admission.",
             "The latency win grows steadily with spread; the makespan ratio peaks and then "
             "falls once one very long request sets both makespans.")
    return Section("batching", "Batching: static vs continuous, admission, paging (§4)", figures,
                   (table,), notes)


def parallel_section() -> Section:
    """§5: tensor parallelism is a precondition here, and its gains flatten."""
    model = catalog.model("guide-70b")
    gpu = catalog.gpu("guide-lab-80GB")
    fits_one = memory.usable_kv_bytes(model, gpu, tp=1) > 0
    tp_8 = parallel.smallest_tp(model, gpu, concurrency=8, context_length=8192)
    tp_183 = parallel.smallest_tp(model, gpu, concurrency=183, context_length=8192)
    # §5 as the guide's text reads it: the simple model beside the textbook ring
    scaling = roofline.tp_scaling(model, gpu, (1, 2, 4, 8), batch_size=32, context_length=4096,
                                  engine=roofline.Engine(allreduce="ring"))
    figures = (
        Figure("70B fp16 fits one 80 GiB card", "no: TP is a precondition", str(fits_one), "",
               not fits_one),
        Figure("smallest TP for 8 sequences of 8k tokens", "smallest that fits", tp_8, "",
               tp_8 == 2),
        Figure("smallest TP for 183 sequences of 8k tokens", "8 (the §2.4 group)", tp_183, "",
               tp_183 == 8),
        Figure("speed-up 4 -> 8 with all-reduce (batch 32, 4k context)", "sub-linear",
               float(scaling.speedup.sel(tp=8) / scaling.speedup.sel(tp=4)), "×",
               float(scaling.speedup.sel(tp=8) / scaling.speedup.sel(tp=4)) < 2),
    )
    rows = tuple(
        (int(t), bool(scaling.weights_fit.sel(tp=t)),
         float(scaling.decode_step_time_simple.sel(tp=t)) / units.MS,
         float(scaling.allreduce_time.sel(tp=t)) / units.MS,
         float(scaling.decode_step_time.sel(tp=t)) / units.MS,
         float(scaling.speedup_simple.sel(tp=t)), float(scaling.speedup.sel(tp=t)),
         float(scaling.scaling_efficiency.sel(tp=t)))
        for t in scaling.tp.values)
    table = Table("Decode step vs TP degree (70B fp16, batch 32, 4,096-token context)",
                  ("tp", "weights fit", "simple ms", "all-reduce ms", "with comm ms",
                   "speed-up simple", "speed-up comm", "efficiency"), rows)
    notes = (f"All-reduce: two per layer, ring algorithm, 2(tp−1)/tp of batch × hidden × 2 B per "
             f"link at {gpu.interconnect_bandwidth / units.GB_PER_S:.0f} GB/s per direction plus "
             f"{gpu.interconnect_latency / units.US:g} µs per hop. Choose the smallest degree "
             f"that fits the weights plus the KV budget you need.",)
    return Section("parallel", "Tensor parallelism (§5)", figures, (table,), notes)


# -- the guide's worked figures (§6.3–6.5): the tables its pricing sections print ----------------
_GUIDE_PAYG = dict(input_per_mtok=3.0, output_per_mtok=12.0)       # §6.3
_GUIDE_PROVISIONED = dict(monthly_cost=12_000.0, monthly_capacity_tokens=4e9)  # §6.3
_GUIDE_GPUS, _GUIDE_GPU_HOURLY = 8, 3.0                              # §6.5
_GUIDE_ENGINEERING_STATED, _GUIDE_ENGINEERING_PRINTED = 25_000.0, 25.0
_GUIDE_VOLUMES = (1e9, 20e9)                                         # §11 "at 1B ... at 20B"
_GUIDE_MIX = 0.1                                                     # crossover at a 10% mix


def guide_break_even_figures() -> xr.Dataset:
    """The guide's §6.3 worked break-even at 10% and 50% output.

    Returns
    -------
    xarray.Dataset
        Over ``output_fraction`` = [0.1, 0.5]: ``blended_price`` [USD/1M tokens] ($3.90, $7.50),
        ``tokens`` [tokens/month] (3.077B, 1.6B) and ``utilization`` [1] (76.92%, 40.00%) of
        $12,000/month for 4B tokens against $3/$12 per 1M.

    References
    ----------
    .. [1] Serving-capacity guide §6.3; ``docs/conventions.md``.
    """
    f = xr.DataArray([0.1, 0.5], dims=(dims.OUTPUT_FRACTION,),
                     coords={dims.OUTPUT_FRACTION: [0.1, 0.5]})
    payg = pricing.PayAsYouGo(**_GUIDE_PAYG)
    out = pricing.break_even(pricing.Provisioned(**_GUIDE_PROVISIONED), payg, f)
    out["blended_price"] = pricing.blended_price(payg, f)
    return out


@dataclasses.dataclass(frozen=True, eq=False)
class GuideSelfHostingFigures:
    """The guide's §6.5 self-hosting figures, as printed and as its text states them.

    Attributes
    ----------
    table : xarray.Dataset
        Over ``version`` = ``["as printed", "as stated"]`` (engineering $25 and $25,000 a month)
        and ``monthly_tokens`` = [1B, 20B]: ``gpu_monthly_cost``, ``engineering_monthly``,
        ``monthly_cost`` [USD/month], ``unit_cost`` [USD/1M tokens], ``payg_price``
        [USD/1M tokens] and ``crossover_payg`` [tokens/month] at a 10% output mix.
    discrepancy : str
        The difference between the two, in words, computed from ``table``.
    """

    table: xr.Dataset
    discrepancy: str

    def lines(self) -> list[str]:
        """One line per version and the discrepancy note, for printing."""
        t = self.table
        out = []
        for version in t["version"].values:
            row = t.sel(version=version)
            unit = ", ".join(
                f"${float(row['unit_cost'].sel(monthly_tokens=v)):.2f}/M at {v / 1e9:g}B"
                for v in t["monthly_tokens"].values)
            out.append(f"{version}: engineering ${float(row['engineering_monthly']):,.0f}/month, "
                       f"total ${float(row['monthly_cost']):,.0f}/month; {unit}; crossover "
                       f"{float(row['crossover_payg']) / 1e9:.2f}B tokens/month vs "
                       f"${float(row['payg_price']):.2f}/M pay-as-you-go")
        return out + [self.discrepancy]


def guide_self_hosting_figures() -> GuideSelfHostingFigures:
    """Reproduce the guide's §6.5 self-hosting figures both ways, and say where they part.

    The guide's "$25 000/month of engineering = $17 545/month" and its $17.50 per 1M at 1B, $0.88
    at 20B and 4–5B crossover come out only with a $25 engineering line; with $25,000 the month
    costs $42,520.

    Returns
    -------
    GuideSelfHostingFigures
        The table of both versions and the discrepancy in words.

    References
    ----------
    .. [1] Serving-capacity guide §6.5 and §11; ``docs/conventions.md`` ("Figures that do not
       re-derive").
    """
    versions = {"as printed": _GUIDE_ENGINEERING_PRINTED, "as stated": _GUIDE_ENGINEERING_STATED}
    payg = pricing.PayAsYouGo(**_GUIDE_PAYG)
    v = xr.DataArray(list(_GUIDE_VOLUMES), dims=(dims.MONTHLY_TOKENS,),
                     coords={dims.MONTHLY_TOKENS: list(_GUIDE_VOLUMES)})
    rows = []
    for label, engineering in versions.items():
        sh = pricing.SelfHosted(_GUIDE_GPUS, _GUIDE_GPU_HOURLY, engineering)
        ds = planning.self_hosting_comparison(sh, payg, v, _GUIDE_MIX)
        ds["gpu_monthly_cost"] = xr.DataArray(sh.gpu_monthly_cost).assign_attrs(
            units="USD/month", long_name="GPU-hours per month")
        ds["engineering_monthly"] = xr.DataArray(engineering).assign_attrs(
            units="USD/month", long_name="engineering line")
        rows.append(ds.drop_vars(["unit_cost_without_engineering",
                                  "monthly_cost_without_engineering",
                                  "crossover_payg_without_engineering"]))
    table = xr.concat(rows, dim=xr.DataArray(list(versions), dims=("version",), name="version"))
    table.attrs = {"description": "guide §6.5: 8 GPUs at $3/h, 730 h/month; crossover against "
                                  "$3/$12 per 1M at a 10% output mix"}

    printed, stated = (table.sel(version=k) for k in versions)
    gpu = float(printed["gpu_monthly_cost"])
    p_total, s_total = float(printed["monthly_cost"]), float(stated["monthly_cost"])
    v1, v20 = _GUIDE_VOLUMES
    rounded = round(p_total, -2) / v1 * units.PER_MILLION
    discrepancy = (
        f"Discrepancy in guide §6.5: it says {_GUIDE_GPUS} GPUs at ${_GUIDE_GPU_HOURLY:g}/hour "
        f"plus ${_GUIDE_ENGINEERING_STATED:,.0f}/month of engineering = ${p_total:,.0f}/month, but "
        f"{_GUIDE_GPUS} x ${_GUIDE_GPU_HOURLY:g} x {units.HOURS_PER_MONTH:g} h = ${gpu:,.0f} "
        f"of GPU-hours, and ${p_total:,.0f} is that plus ${p_total - gpu:,.0f}: the engineering "
        f"line was entered as {_GUIDE_ENGINEERING_PRINTED:g} instead of "
        f"{_GUIDE_ENGINEERING_STATED:,.0f}. Its per-token figures follow that total: "
        f"${float(printed['unit_cost'].sel(monthly_tokens=v20)):.2f}/M at {v20 / 1e9:g}B and a "
        f"crossover of {float(printed['crossover_payg']) / 1e9:.2f}B tokens/month "
        f"(${p_total:,.0f} / ${float(printed['payg_price']):.2f}); its '$17.50/M at 1B' needs "
        f"the total rounded to ${round(p_total, -2):,.0f} (${rounded:.2f}; unrounded "
        f"${float(printed['unit_cost'].sel(monthly_tokens=v1)):.3f}). With the "
        f"${_GUIDE_ENGINEERING_STATED:,.0f} engineering line included the month costs "
        f"${s_total:,.0f}: ${float(stated['unit_cost'].sel(monthly_tokens=v1)):.2f}/M at "
        f"{v1 / 1e9:g}B, ${float(stated['unit_cost'].sel(monthly_tokens=v20)):.2f}/M at "
        f"{v20 / 1e9:g}B, crossover about {float(stated['crossover_payg']) / 1e9:.1f}B "
        f"tokens/month at a {_GUIDE_MIX:.0%} output mix. The guide's lesson stands — the "
        f"engineering line decides it — but its figures forgot the line.")
    return GuideSelfHostingFigures(table, discrepancy)


def guide_spillover_figures(seed: int = 0) -> xr.Dataset:
    """The §6.4 comparison on a seeded bursty month at the guide's §6.3 prices.

    Parameters
    ----------
    seed : int
        Seed of :func:`~rooflinekit.planning.bursty_demand` (hourly, 730 periods, about 4B
        tokens).

    Returns
    -------
    xarray.Dataset
        :func:`~rooflinekit.planning.compare_floor_sizing` with a floor priced at the guide's
        provisioned capacity ($12,000 / 4B = $3.00 per 1M tokens of capacity) and spillover at
        $3/$12 per 1M at a 10% output mix.
    """
    demand = planning.bursty_demand(seed=seed)
    return planning.compare_floor_sizing(demand, pricing.PayAsYouGo(**_GUIDE_PAYG),
                                         pricing.Provisioned(**_GUIDE_PROVISIONED),
                                         output_fraction=_GUIDE_MIX)


def pricing_section() -> Section:
    """§6.1–6.3: blended price and the break-even of provisioned capacity."""
    figs = guide_break_even_figures()
    at = {round(float(f), 2): figs.sel(output_fraction=f) for f in figs.output_fraction.values}
    figures = (
        Figure("blended price at 10% output ($3 in / $12 out per 1M)", "$3.90 per 1M",
               float(at[0.1].blended_price), "$/1M", _close(float(at[0.1].blended_price), 3.9, 1e-9)),
        Figure("blended price at 50% output", "$7.50 per 1M", float(at[0.5].blended_price),
               "$/1M", _close(float(at[0.5].blended_price), 7.5, 1e-9)),
        Figure("break-even tokens at 10% output ($12,000/month)", "3.077B",
               float(at[0.1].tokens) / 1e9, "B tokens", round(float(at[0.1].tokens) / 1e9, 3) == 3.077),
        Figure("break-even tokens at 50% output", "1.6B", float(at[0.5].tokens) / 1e9,
               "B tokens", _close(float(at[0.5].tokens) / 1e9, 1.6, 1e-9)),
        Figure("break-even utilisation of 4B at 10% output", "≈ 77% (76.9%)",
               100 * float(at[0.1].utilization), "%", round(100 * float(at[0.1].utilization), 1) == 76.9),
        Figure("break-even utilisation of 4B at 50% output", "40%",
               100 * float(at[0.5].utilization), "%", round(100 * float(at[0.5].utilization), 1) == 40.0),
    )
    payg = pricing.PayAsYouGo(3.0, 12.0)
    ptu = pricing.Provisioned(12_000.0, 4e9)
    mixes = (0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0)
    rows = []
    for f in mixes:
        be = pricing.break_even(ptu, payg, f)
        rows.append((f"{f:.0%}", pricing.blended_price(payg, f), be.tokens / 1e9,
                     100 * be.utilization))
    table = Table("Break-even of $12,000/month for 4B tokens vs $3/$12 per 1M, by output mix",
                  ("output share", "blended $/1M", "break-even B tokens", "utilisation %"),
                  tuple(rows))
    notes = ("Never quote one break-even without the mix: it moves by nearly 2× between 10% and "
             "50% output. Latency and the exit cost of a commitment are outside the arithmetic.",)
    return Section("pricing", "Capacity types: pricing and break-even (§6.1–6.3)", figures,
                   (table,), notes)


def spillover_section() -> Section:
    """§6.4–6.5 and §7: floor plus spillover, self-hosting, sovereignty as a gate."""
    sizing = guide_spillover_figures()
    get = lambda k, v: float(sizing[v].sel(sizing=k))  # noqa: E731
    sh = guide_self_hosting_figures()
    t = sh.table
    printed, stated = t.sel(version="as printed"), t.sel(version="as stated")
    unit = lambda v, n: float(v.unit_cost.sel(monthly_tokens=n))  # noqa: E731
    figures = (
        Figure("p50 floor costs less than sizing to peak", "yes", get("p50", "total_cost"),
               "$/month", get("p50", "total_cost") < get("peak", "total_cost"),
               f"peak sizing costs ${get('peak', 'total_cost'):,.0f} on the same demand"),
        Figure("p50 floor spills less than sizing to p10", "yes",
               100 * get("p50", "spilled_share"), "% spilled",
               get("p50", "spilled_share") < get("p10", "spilled_share"),
               f"p10 spills {100 * get('p10', 'spilled_share'):.0f}%"),
        Figure("self-hosting month: 8 GPUs × $3/h + $25,000 engineering", "$17,545",
               float(stated.monthly_cost), "$/month", False,
               f"$17,545 = ${float(printed.gpu_monthly_cost):,.0f} of GPU-hours + $25: the guide "
               f"entered the engineering line as 25, not 25,000"),
        Figure("… the guide's total, with a $25 engineering line", "$17,545",
               float(printed.monthly_cost), "$/month",
               float(printed.monthly_cost) == 17_545),
        Figure("unit cost at 1B tokens/month", "$17.50 per 1M", unit(stated, 1e9), "$/1M", False,
               f"${unit(printed, 1e9):.3f} with the $25 line; $17.50 also needs the total rounded "
               f"to $17.5k"),
        Figure("unit cost at 20B tokens/month", "$0.88 per 1M", unit(stated, 2e10), "$/1M",
               False, f"${unit(printed, 2e10):.2f} with the $25 line"),
        Figure("crossover vs $3.90/1M pay-as-you-go (10% output)", "4–5B tokens/month",
               float(stated.crossover_payg) / 1e9, "B tokens", False,
               f"{float(printed.crossover_payg) / 1e9:.2f}B with the $25 line; with the real "
               f"engineering line the crossover more than doubles: the line decides it"),
    )
    sizing_rows = tuple(
        (str(k), float(sizing["quantile"].sel(sizing=k)), get(k, "floor_capacity") / 1e9,
         100 * get(k, "floor_utilization"), 100 * get(k, "spilled_share"),
         get(k, "floor_cost"), get(k, "spill_cost"), get(k, "total_cost"))
        for k in sizing.sizing.values)
    sizing_table = Table(
        "Floor plus spillover on a seeded bursty month (730 hourly periods)",
        ("floor sized to", "quantile", "floor B tokens", "floor util %", "spilled %",
         "floor $", "spill $", "total $"), sizing_rows)
    volumes = (0.5e9, 1e9, 2e9, 4.5e9, 5e9, 10e9, 20e9, 50e9)
    hosted = pricing.SelfHosted(8, 3.0, 25_000.0)
    payg = pricing.PayAsYouGo(3.0, 12.0)
    vol_rows = tuple(
        (v / 1e9, hosted.unit_cost(v, include_engineering=False), hosted.unit_cost(v),
         pricing.blended_price(payg, 0.1)) for v in volumes)
    volume_table = Table("Self-hosting unit cost by monthly volume (8 GPUs × $3/h; 10% output PAYG)",
                         ("B tokens/month", "$/1M GPU only", "$/1M with $25k eng.",
                          "$/1M pay-as-you-go"), vol_rows)
    restricted = pricing.Compliance("restricted", allowed_regions=("eu",))
    options = [pricing.PayAsYouGo(3.0, 12.0, region="us", third_party=True),
               pricing.Provisioned(12_000.0, 4e9, name="provisioned", region="eu",
                                   third_party=True),
               pricing.SelfHosted(8, 3.0, 25_000.0, capacity_tokens=20e9, region="eu")]
    open_choice = pricing.cheapest_option(2e9, options, 0.1)
    gated = pricing.cheapest_option(2e9, options, 0.1, workload=restricted)
    figures = figures + (
        Figure("2B tokens/month, 10% output, internal data: cheapest", "cost decides",
               open_choice.option.name, "", True),
        Figure("same volume, restricted EU data: only admissible option", "self-hosting",
               gated.option.name, "", gated.option.name == "self-hosted",
               f"costs ${gated.cost:,.0f}/month; gates apply before cost (§7)"),
    )
    notes = tuple(sh.lines())
    return Section("spillover", "Spillover, self-hosting and sovereignty (§6.4–6.5, §7)", figures,
                   (sizing_table, volume_table), notes)


#: Section key -> builder, in the guide's order.
SECTIONS: dict[str, Callable[[], Section]] = {
    "memory": memory_section,
    "roofline": roofline_section,
    "batching": batching_section,
    "parallel": parallel_section,
    "pricing": pricing_section,
    "spillover": spillover_section,
}


def section_names() -> list[str]:
    """Keys accepted by ``rooflinekit guide --section``."""
    return list(SECTIONS)


def build(keys: list[str] | None = None) -> list[Section]:
    """Compute the requested sections (all by default)."""
    keys = section_names() if not keys else keys
    unknown = [k for k in keys if k not in SECTIONS]
    if unknown:
        raise ValueError(f"unknown section {unknown[0]!r}; choose from {', '.join(SECTIONS)}")
    return [SECTIONS[k]() for k in keys]
