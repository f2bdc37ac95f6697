"""``rooflinekit simulate``: one workload through static and continuous batching, compared."""

from __future__ import annotations

import dataclasses

import numpy as np

from rooflinekit import batching, catalog, roofline, workloads
from rooflinekit.cli._args import (
    COMMAND_API,
    PREFIX_FLAGS,
    add_flag,
    add_output_flags,
    apply_dtypes,
    engine_from_args,
    mixed_prefill,
    nonnegative_float,
    nonnegative_int,
    positive_float,
    positive_int,
    shared_prefix,
    speculative_draft,
)
from rooflinekit.cli._output import emit, print_table
from rooflinekit.profiles import scheduler_defaults, scheduler_engine

__all__ = list(COMMAND_API)

NAME = "simulate"
HELP = "a workload through static and continuous batching"
DESCRIPTION = "Simulate static and continuous batching on one workload and compare them."
EPILOG = ("examples:\n  rooflinekit simulate                       the guide's 24-request "
          "workload\n  rooflinekit simulate --workload lognormal --requests 500 "
          "--spread 1.5 --max-num-seqs 32\n  rooflinekit simulate --workload lognormal "
          "--model llama-3.1-8b --gpu h100 --admission paged --kv-budget 200000\n"
          "  rooflinekit simulate --workload lognormal --input-len 2000 --model gpt-oss-20b "
          "--gpu h100 --admission paged --kv-budget 20000 --disable-hybrid-kv-cache-manager\n"
          "  rooflinekit simulate --workload geometric --arrival poisson --rate 0.5 --csv\n"
          "  rooflinekit simulate --workload lognormal --model llama-3.1-8b --gpu h100 "
          "--calibration h100_vllm.json\n"
          "  rooflinekit simulate --workload lognormal --requests 200 --input-len 100 "
          "--prefix-tokens 512 --admission paged --enable-prefix-caching\n"
          "  rooflinekit simulate --workload lognormal --model llama-3.1-70b --gpu h100 "
          "--tp 8 --speculative-draft llama-3.1-8b --num-speculative-tokens 4 --acceptance 0.8")

_DISTRIBUTIONS = ("constant", "uniform", "geometric", "lognormal", "short-and-long")

#: The metrics of each batcher's result, in the order they are printed.
_METRICS = ("makespan", "throughput", "mean_latency", "mean_service_latency", "p50_latency",
            "p90_latency", "p99_latency", "mean_ttft", "mean_itl", "slot_utilization",
            "padding_slot_steps", "peak_kv_tokens", "n_completed", "n_rejected",
            "n_preemptions", "prefix_hit_rate", "prefill_tokens_saved", "draft_tokens",
            "accepted_tokens", "acceptance_rate")


def add_arguments(parser) -> None:
    parser.add_argument("--workload", choices=("guide", *_DISTRIBUTIONS), default="guide",
                        help="the guide's reconstructed workload, or output lengths drawn from a "
                             "distribution (default guide)")
    parser.add_argument("--requests", type=positive_int,
                        help=f"requests drawn (256; as many as "
                             f"{batching.SIMULATION_MEMORY_LIMIT // 2**30} GiB hold)")
    parser.add_argument("--output-mean", type=positive_float,
                        help="mean output tokens per request (100)")
    parser.add_argument("--spread", type=nonnegative_float,
                        help="lognormal sigma, or uniform half-width (1.0)")
    parser.add_argument("--input-len", type=nonnegative_int, metavar="TOKENS",
                        help="prompt tokens per request (0)")
    parser.add_argument("--arrival", choices=("all", "interval", "poisson"),
                        help="arrival process of a drawn workload (all at once)")
    parser.add_argument("--interval", type=positive_float,
                        help="ticks/seconds between arrivals, with --arrival interval (1)")
    parser.add_argument("--rate", type=positive_float,
                        help="arrivals per tick/second, with --arrival poisson (1)")
    parser.add_argument("--seed", type=nonnegative_int, help="random seed (0)")
    add_flag(parser, "--batch-size", default=8, help="static batching's batch size (8)")
    add_flag(parser, "--max-num-seqs", default=16,
             help="continuous batching: most sequences in a batch (16)")
    parser.add_argument("--kv-budget", type=positive_int, metavar="TOKENS",
                        help="KV budget of continuous batching [tokens] (unlimited)")
    parser.add_argument("--admission", choices=("reserve", "paged"), default="reserve",
                        help="reserve a sequence's whole KV on admission, or page it in "
                             "--block-size blocks (reserve)")
    add_flag(parser, "--block-size", default=None,
             help="KV block size with --admission paged [tokens] (16)")
    add_flag(parser, "--max-num-batched-tokens")
    add_flag(parser, "--mixed-prefill")
    parser.add_argument("--disable-hybrid-kv-cache-manager", action="store_true",
                        help="with --model and --admission paged: hold every layer's whole "
                             "context, where by default a sliding-window layer keeps only its "
                             "window's blocks of a sequence (vLLM's name)")
    add_flag(parser, "--model", help="time steps with the roofline of this model (with --gpu): "
             "a catalogue name, a config.json, a model folder or a cached Hugging Face repo id")
    add_flag(parser, "--gpu", help="GPU for roofline timing (with --model)")
    add_flag(parser, "--tensor-parallel-size", help="tensor-parallel degree, with --model (1)")
    add_flag(parser, "--dtype", help="weight format, with --model (auto: the model's)")
    add_flag(parser, "--kv-cache-dtype", help="KV-cache format, with --model (auto: the model's)")
    add_flag(parser, "--mamba-ssm-cache-dtype", help="a hybrid model's recurrent-state format, "
             "with --model (auto: the model's, fp32; bf16 halves it)")
    add_flag(parser, "--engine",
             help="with --model, how the roofline clock's engine runs a step: vllm, sglang "
                  "or trtllm (that engine's shipped profile of the GPU), ideal (the roofline "
                  "bound), a calibration JSON from `rooflinekit calibrate` or an engine JSON of "
                  "rooflinekit.Engine fields (default: vllm)")
    add_flag(parser, "--calibration",
             help="with --model, a calibration JSON from `rooflinekit calibrate` (fitted to "
                  "your own runs): it times every step, as --engine FILE does; not with "
                  "--engine")
    for flag in PREFIX_FLAGS:
        add_flag(parser, flag)
    add_flag(parser, "--speculative-draft",
             help="continuous batching decodes speculatively with this draft model "
                  "(catalogue name) or a draft head's cost as a share of the target's decode "
                  "step, in (0, 1]")
    add_flag(parser, "--num-speculative-tokens")
    add_flag(parser, "--acceptance")
    add_output_flags(parser)


#: Workload flags and their defaults for a drawn workload; the guide's workload takes none.
_DRAWN = {"requests": 256, "output_mean": 100.0, "spread": 1.0, "input_len": 0,
          "arrival": "all", "seed": 0}


#: Bytes a drawn workload holds per request while it is drawn and checked (six arrays of 8
#: bytes and the draw's temporaries; measured 80, 123 with shared prefixes).
_WORKLOAD_BYTES_PER_REQUEST = 128


def _check_memory(args) -> None:
    """Refuse, before drawing, a simulation whose workload and two results (both batchers'
    are held to be compared) would exceed :data:`rooflinekit.batching.SIMULATION_MEMORY_LIMIT`."""
    if args.workload == "guide":
        return
    n = args.requests
    paged = args.admission == "paged"
    held = (n * _WORKLOAD_BYTES_PER_REQUEST + batching.run_memory_bytes(n)
            + batching.run_memory_bytes(
                n, block_size=(args.block_size or 16) if paged else None,
                prefix_groups=args.prefix_groups or (1 if args.prefix_tokens else 0)))
    limit = batching.SIMULATION_MEMORY_LIMIT
    if held > limit:
        per = _WORKLOAD_BYTES_PER_REQUEST + 2 * batching.RUN_BYTES_PER_REQUEST
        raise ValueError(f"--requests {n:,} would hold about {held / 2**30:.3g} GiB (the workload "
                         f"and both batchers' results, {per} bytes a request), above the "
                         f"{limit / 2**30:g} GiB limit of a simulation; give --requests at most "
                         f"about {int(limit // per):,}, or call ContinuousBatcher.run from "
                         f"Python with a higher memory_limit")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _check(args) -> None:
    """Refuse every flag that would be ignored, before any work; then fill in the defaults."""
    given = [k for k in (*_DRAWN, "interval", "rate") if getattr(args, k) is not None]
    if args.workload == "guide" and given:
        raise ValueError(f"{_flag(given[0])} applies to a drawn workload; the guide's workload "
                         f"is fixed (give --workload NAME)")
    unused = {"constant": ("spread",), "geometric": ("spread",),
              "short-and-long": ("spread", "output_mean")}.get(args.workload, ())
    for name in unused:
        if name in given:
            raise ValueError(f"{_flag(name)} does not shape --workload {args.workload}")
    if args.workload != "guide":
        for k, v in _DRAWN.items():
            if getattr(args, k) is None:
                setattr(args, k, v)
    if args.interval is not None and args.arrival != "interval":
        raise ValueError("--interval applies with --arrival interval")
    if args.rate is not None and args.arrival != "poisson":
        raise ValueError("--rate applies with --arrival poisson")
    if args.block_size is not None and args.admission != "paged":
        raise ValueError("--block-size applies with --admission paged")
    if args.enable_prefix_caching and args.admission != "paged":
        raise ValueError("--enable-prefix-caching applies with --admission paged")
    shared_prefix(args)            # refuses the shaping flags without --prefix-tokens
    if args.prefix_tokens is not None and args.workload == "guide":
        raise ValueError("--prefix-tokens applies to a drawn workload (give --workload NAME)")
    speculative_draft(args)        # refuses one speculative flag without the others
    if bool(args.model) != bool(args.gpu):
        raise ValueError("--model and --gpu go together (roofline timing)")
    if not args.model:
        given = [f for f, on in (("--tensor-parallel-size", args.tp != 1),
                                 ("--calibration" if args.calibration else "--engine",
                                  args.engine is not None),
                                 ("--dtype", args.dtype != "auto"),
                                 ("--kv-cache-dtype", args.kv_cache_dtype != "auto"),
                                 ("--mamba-ssm-cache-dtype",
                                  args.mamba_ssm_cache_dtype != "auto")) if on]
        if given:
            raise ValueError(f"{given[0]} applies with --model and --gpu (roofline timing)")


def _distribution(kind: str, mean: float, spread: float):
    if kind == "constant":
        return workloads.Constant(int(round(mean)))
    if kind == "uniform":
        low = max(1, int(round(mean - spread)))
        return workloads.Uniform(low, int(round(mean + spread)))
    if kind == "geometric":
        return workloads.Geometric(mean)
    if kind == "lognormal":
        return workloads.LogNormal(mean, spread)
    return workloads.short_and_long()


def _workload(args):
    if args.workload == "guide":
        return workloads.guide_workload()
    arrival = {"all": workloads.AllAtOnce(),
               "interval": workloads.FixedInterval(args.interval or 1.0),
               "poisson": workloads.Poisson(args.rate or 1.0)}[args.arrival]
    prefix = shared_prefix(args)
    spec = workloads.WorkloadSpec(
        args.requests, output=_distribution(args.workload, args.output_mean, args.spread),
        prompt=workloads.Constant(args.input_len), arrival=arrival, prefix=prefix)
    if prefix is not None:
        return spec.sample(np.random.default_rng(args.seed))
    return workloads.Workload(*spec.draw(np.random.default_rng(args.seed)))


def _speculative(args, timing):
    """The ``Speculative`` of the flags, or None; a draft share or a catalogue model."""
    draft = speculative_draft(args)
    if draft is None:
        return None
    if not isinstance(draft, float):
        draft = apply_dtypes(draft, args)        # the draft in the target's formats
    spec = batching.Speculative(draft=draft, draft_tokens=args.num_speculative_tokens,
                                acceptance=args.acceptance, seed=args.seed or 0)
    if "model" in timing:
        try:            # the roofline's rule for a draft, before any work
            roofline.speculative_step_time(timing["model"], timing["gpu"], 1, 1, timing["tp"],
                                           draft=draft, draft_tokens=spec.draft_tokens,
                                           engine=timing["engine"])
        except ValueError as err:
            raise ValueError(f"--speculative-draft: {err}") from None
    return spec


def run(args, out) -> int:
    _check(args)
    timing = {}
    if args.model:
        timing = {"model": apply_dtypes(catalog.resolve_model(args.model), args),
                  "gpu": catalog.gpu(args.gpu), "tp": args.tp}
        timing["engine"] = engine_from_args(args, timing["gpu"])
    speculative = _speculative(args, timing)
    # the engine's scheduling unless given: SGLang runs prefill steps apart from the decodes
    mixed = mixed_prefill(args)
    if mixed is False and speculative is not None:
        raise ValueError("--mixed-prefill off cannot go with --speculative-draft: speculative "
                         "steps are simulated with the prefill beside the decodes")
    if mixed == "auto":
        mixed = True if not timing else \
            scheduler_defaults(scheduler_engine(timing["engine"]), timing["gpu"]).mixed_prefill
    mixed = mixed or speculative is not None       # speculative steps are simulated mixed
    static = batching.StaticBatcher(batch_size=args.batch_size, **timing)
    cont = batching.ContinuousBatcher(
        max_num_seqs=args.max_num_seqs, kv_budget_tokens=args.kv_budget, admission=args.admission,
        block_size=16 if args.block_size is None else args.block_size,
        max_num_batched_tokens=args.max_num_batched_tokens,
        prefix_caching=bool(args.enable_prefix_caching), speculative=speculative,
        mixed_prefill=mixed, window_paging=not args.disable_hybrid_kv_cache_manager, **timing)
    _check_memory(args)
    work = _workload(args)
    # a first run compiles both simulators side by side (numba's cache after)
    kind = "speculative" if speculative is not None else "continuous" if mixed else "separate"
    batching.compile_kernels((f"{kind}-{'roofline' if timing else 'tick'}", "static"))
    results = {"static": static.run(work), "continuous": cont.run(work)}
    # prefix caching and speculation are the continuous batcher's alone: their metrics are
    # shown for it alone, when it uses them
    shown = {"static": (), "continuous": (("prefix", "prefill") * bool(args.enable_prefix_caching)
                                          + ("draft", "accepted", "acceptance")
                                          * (speculative is not None))}
    hidden = ("prefix", "prefill", "draft", "accepted", "acceptance")
    table = {name: {k: float(ds[k]) for k in _METRICS if k in ds and
                    (k.startswith(shown[name]) or not k.startswith(hidden))}
             for name, ds in results.items()}
    unit = results["continuous"].attrs.get("time_units", "tick")
    n_requests = int(results["static"].sizes["request"])
    unit_name = "ticks" if unit == "tick" else "s"
    metrics = [k for k in _METRICS if any(k in t for t in table.values())]
    records = [{"metric": k, "static": table["static"].get(k), "continuous":
                table["continuous"].get(k)} for k in metrics]
    quality = results["continuous"].attrs["model_quality"]
    # the bound beside the engine's answer: the continuous batcher on the ideal roofline
    bound = None
    if timing and timing["engine"] is not roofline.IDEAL:
        ideal = dataclasses.replace(cont, engine=roofline.IDEAL).run(work)
        bound = {k: float(ideal[k]) for k in ("makespan", "mean_latency", "mean_itl")
                 if k in ideal}

    def text(out):
        out.write(f"{n_requests} requests; static batches of {args.batch_size}, continuous "
                  f"with max {args.max_num_seqs} sequences"
                  + ("" if mixed else ", prefill steps apart from the decodes ("
                     + ("SGLang's scheduling" if args.mixed_prefill == "auto"
                        else "--mixed-prefill off") + ")") + "\n")
        rows = [(_label(k, unit_name), r["static"], r["continuous"])
                for k, r in zip(metrics, records)]
        # one metric a row: each row's two numbers share a format
        print_table(("metric", "static", "continuous"), rows, out, by_row=True)
        out.write(f"timing: {quality}\n")
        if bound:
            shown = ", ".join(f"{k.replace('_', ' ')} {v:.4g} s" for k, v in bound.items())
            out.write(f"ideal roofline bound, continuous: {shown}\n")
    payload = {"time_units": unit, "requests": n_requests, "model_quality": quality,
               "mixed_prefill": mixed, **table}
    if bound:
        payload["ideal_bound"] = bound
    return emit(args, out, records, text=text, payload=payload)


#: Each metric's unit; ``None``: a count or share, no unit.
_TIMES = {"makespan", "mean_latency", "mean_service_latency", "p50_latency", "p90_latency",
          "p99_latency", "mean_ttft", "mean_itl"}


def _label(metric: str, time_unit: str) -> str:
    label = metric.replace("_", " ")
    if metric in _TIMES:
        return f"{label} [{time_unit}]"
    if metric == "throughput":
        return f"{label} [tokens/{time_unit.rstrip('s') or 's'}]"
    if metric in ("peak_kv_tokens", "draft_tokens", "accepted_tokens"):
        return f"{label} [tokens]"
    return label
