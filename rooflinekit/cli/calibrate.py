"""``rooflinekit calibrate``: fit efficiency factors to measured runs, and report them."""

from __future__ import annotations

import dataclasses
import math
import sys

import xarray as xr

from rooflinekit.calibrate import (
    GROUP_FIELDS,
    KNOBS,
    MAX_RESAMPLES,
    MEASUREMENT,
    PHASES,
    WORKLOADS,
    calibrate,
    concat_measurements,
    cross_validate,
    read_guidellm_report,
    read_measurements,
    read_trtllm_bench,
    read_vllm_latency,
    read_vllm_result,
    recorded_model,
    save_calibration,
)
from rooflinekit.cli._args import (
    COMMAND_API,
    add_flag,
    add_output_flags,
    examples,
    nonnegative_int,
    number,
    positive_int,
    whole_number,
)
from rooflinekit.cli._output import check_output, emit, output_format, write_output
from rooflinekit import catalog
from rooflinekit.models import ModelShape
from rooflinekit.planning import LOAD_KNOBS, fit_under_load
from rooflinekit.profiles import profiled_engine
from rooflinekit.roofline import IDEAL

__all__ = list(COMMAND_API)

NAME = "calibrate"
HELP = "fit efficiency factors to measured runs"
DESCRIPTION = "Fit compute/bandwidth efficiency and per-step overhead to measurements."
EPILOG = examples(NAME, "runs.csv --cv kfold", "--vllm-result result.json --model llama-3.1-8b "
                  "--gpu h100 --fit step_overhead",
                  "--from guidellm benchmarks.json --model llama-3.1-8b --gpu h100 "
                  "--engine 'vllm 0.10.1'",
                  "--from vllm-latency latency.json --prefill-result prefill.json --model "
                  "llama-3.1-8b --gpu h100 --batch-size 8 --input-len 1024 --output-len 128 "
                  "--fit step_overhead",
                  "--from trtllm report.json --gpu h100 --fit step_overhead",
                  "--under-load --vllm-result rate-0.5.json --vllm-result rate-2.0.json "
                  "--gpu h200 --dtype fp8 --kv-cache-dtype fp8",
                  "--under-load --vllm-result rate-0.5.json --vllm-result rate-2.0.json "
                  "--gpu h200 --dtype fp8 --kv-cache-dtype fp8 --ttft-statistic mean "
                  "--prefix-cache on")

#: What ``--from`` reads the FILE arguments as: format -> what it is.
FORMATS = {
    "measurements": "measurement files (.csv or .json)",
    "vllm-serve": "`vllm bench serve --save-result` JSON, or runs one a line (--append-result, "
                  "SGLang's bench_serving --output-file; as --vllm-result)",
    "vllm-latency": "`vllm bench latency --output-json` JSON (needs --batch-size, --input-len, "
                    "--output-len)",
    "guidellm": "GuideLLM reports (JSON, or YAML with PyYAML), one row per benchmark",
    "trtllm": "`trtllm-bench throughput --streaming` reports (--report_json, or the logged text)",
}
#: The formats whose files record the served model (``recorded_model``): without --model the
#: runs are of it (--vllm-result files too).
_MODEL_RECORDED = ("measurements", "vllm-serve", "guidellm", "trtllm")
#: Name parts that mark a quantised release (``Llama-3.1-70B-Instruct-FP8``, ``-FP8-dynamic``):
#: the release is its base model in the format --dtype gives.
_FORMAT_SUFFIXES = frozenset(("fp8", "fp4", "nvfp4", "mxfp4", "int8", "int4", "w8a8", "w4a16",
                              "w8a16", "awq", "gptq", "dynamic", "quantized"))
#: The flags that only describe a vllm bench latency run.
_LATENCY_FLAGS = ("--batch-size", "--input-len", "--output-len", "--prefill-result")


def add_arguments(parser) -> None:
    """Add the ``rooflinekit calibrate`` arguments to an :mod:`argparse` (sub)parser."""
    parser.add_argument("measurements", nargs="*", metavar="FILE",
                        help="files to read, in the format --from names (default: measurement "
                             "files, .csv or .json, columns above)")
    parser.add_argument("--from", dest="source_format", choices=tuple(FORMATS),
                        default="measurements", metavar="FORMAT",
                        help="what the FILEs are: " + "; ".join(
                            f"{name}: {what}" for name, what in FORMATS.items())
                        + ". Every format but measurements needs --gpu, and --model but "
                          "where its files record the model (vllm-serve, guidellm, trtllm)")
    parser.add_argument("--vllm-result", action="append", default=[], metavar="JSON",
                        help="a `vllm bench serve --save-result` JSON (repeatable), or a file of "
                             "runs one a line (--append-result; `sglang.bench_serving "
                             "--output-file` JSONL); needs --gpu (the model: --model, else "
                             "the file's model_id)")
    add_flag(parser, "--model", help="model of the runs read with --vllm-result or --from "
             "(catalogue name; default: the one vllm-serve, guidellm and trtllm files "
             "record)")
    add_flag(parser, "--gpu", help="GPU of those runs (catalogue name)")
    add_flag(parser, "--tensor-parallel-size",
             help="tensor-parallel degree of those runs (1; trtllm reports say their own)")
    add_flag(parser, "--dtype", help="weight format of those runs (auto: the model's; trtllm "
             "reports say their own)")
    add_flag(parser, "--kv-cache-dtype", help="KV-cache format of those runs (auto: the "
             "model's)")
    parser.add_argument("--engine", metavar="NAME",
                        help="engine and version of those runs, for --cv engine ('vllm "
                             "0.10.1'; default: what the file says: vllm for vllm-latency, "
                             "tensorrt-llm <version> for trtllm, none otherwise)")
    add_flag(parser, "--batch-size", help="--from vllm-latency: the run's --batch-size")
    parser.add_argument("--input-len", type=positive_int, metavar="TOKENS",
                        help="--from vllm-latency: the run's --input-len")
    parser.add_argument("--output-len", type=positive_int, metavar="TOKENS",
                        help="--from vllm-latency: the run's --output-len; above 1 it needs "
                             "--prefill-result")
    parser.add_argument("--prefill-result", metavar="JSON",
                        help="--from vllm-latency: the same batch run with --output-len 1; its "
                             "latency is the TTFT that splits the others into TTFT and TPOT")
    parser.add_argument("--model-config", action="append", default=[], metavar="NAME=CONFIG",
                        help="the model of a name outside the catalogue: a Hugging Face "
                             "config.json, a model folder or a cached repo id (repeatable)")
    parser.add_argument("--phase", action="append", choices=PHASES,
                        help="phase to fit (repeatable; default both)")
    parser.add_argument("--fit", action="append", choices=(*KNOBS, "engine"),
                        help="knob to fit (repeatable; default the three classic knobs); "
                             "'engine': the engine knobs of each phase (ENGINE_FIT)")
    parser.add_argument("--group-by", action="append", choices=GROUP_FIELDS,
                        help="keep a knob set per value of this column, the knobs the data "
                             "cannot separate shared (repeatable; default one shared set)")
    parser.add_argument("--resamples", type=whole_number(0, MAX_RESAMPLES), default=200,
                        help="bootstrap resamples for the intervals; 0: none (200)")
    parser.add_argument("--confidence", type=number(0, 1, lo_open=True, hi_open=True),
                        default=0.95, help="interval coverage, in (0, 1) (0.95)")
    parser.add_argument("--seed", type=nonnegative_int, default=0, help="bootstrap seed (0)")
    parser.add_argument("--cv", choices=("none", "kfold", "gpu", "model", "tp", "engine"),
                        default="none",
                        help="also report held-out error: k-fold, or leave one GPU / model / "
                             "tensor-parallel degree / engine out; the held-out TPOT error then "
                             "goes into the calibration's label")
    parser.add_argument("--folds", type=whole_number(2, 10_000),
                        help="k for --cv kfold (5)")
    parser.add_argument("--workload", choices=WORKLOADS, default="isolated",
                        help="map rows to isolated prefill/decode steps (default), to the mixed "
                             "steps of a continuous-batching server (serving), or to those with "
                             "other prompts' prefill sharing the TTFT step (loaded)")
    add_flag(parser, "--allreduce")
    parser.add_argument("--under-load", action="store_true",
                        help="fit with the simulator in the loop: the --vllm-result runs are one "
                             "server at two or more request rates, or at two or more "
                             "--max-concurrency values (a closed-loop client), or --from "
                             "guidellm with one sweep report (its rates, else its "
                             "concurrencies); the vLLM profile of --gpu "
                             "(or --engine's) is refitted in --fit (default step_overhead and "
                             "frontend_latency) to their TTFT (--ttft-statistic) and mean TPOT")
    parser.add_argument("--ttft-statistic", choices=("median", "mean"), default=None,
                        help="--under-load: the TTFT the fit weighs; median (default: each "
                             "run's median where every run records one, else the means; a run "
                             "without warm-up requests holds the server's start in its mean) "
                             "or mean")
    parser.add_argument("--prefix-cache", choices=("on", "off"), default=None,
                        help="--under-load: whether the server cached prompts (vLLM V1's and "
                             "SGLang's default): on, each run's first request (the client's "
                             "test prompt) and every request of a run that re-sent an earlier "
                             "run's prompts (the same number of requests and input tokens, "
                             "and in --save-detailed files the same prompt lengths and reply "
                             "openings: the same --seed) are simulated as cache hits; off, none are "
                             "(default: none, with a warning where a run re-sent prompts)")
    add_output_flags(parser, output_help=(
        "also write the result to FILE, the format from its extension: .json (the calibration "
        "file `rooflinekit plan --calibration` reads), .nc or .zarr (the parameters Dataset), "
        ".csv or .parquet (the parameters table)"))


def _check(args) -> None:
    """Refuse flags that would be ignored, before reading anything."""
    check_output(args)   # exists, an input of this run, a missing folder: refused first
    for flag, given in (("--ttft-statistic", args.ttft_statistic),
                        ("--prefix-cache", args.prefix_cache)):
        if given is not None and not args.under_load:
            raise ValueError(f"{flag} applies to --under-load (the closed-form fit takes "
                             f"each row's TTFT as measured)")
    fmt = args.source_format
    runs = bool(args.vllm_result) or fmt != "measurements"
    if not runs:
        given = [f for f, on in (("--model", args.model), ("--gpu", args.gpu),
                                 ("--tensor-parallel-size", args.tp != 1),
                                 ("--dtype", args.dtype != "auto"),
                                 ("--kv-cache-dtype", args.kv_cache_dtype != "auto"),
                                 ("--engine", args.engine is not None)) if on]
        if given:
            raise ValueError(f"{given[0]} describes runs read with --vllm-result or --from; "
                             f"give --vllm-result JSON or --from FORMAT")
    else:
        reader = "--vllm-result" if fmt == "measurements" else f"--from {fmt}"
        missing = [flag for flag, need in (
            ("--model", not args.model and fmt not in _MODEL_RECORDED),
            ("--gpu", not args.gpu)) if need]
        if missing:
            why = {("--gpu",): "no benchmark file records the GPU",
                   ("--model",): "its files do not record the model"}.get(
                tuple(missing), "its files record neither the model nor the GPU")
            raise ValueError(f"{reader} needs {' and '.join(missing)} ({why})")
    if fmt != "measurements" and not args.measurements:
        raise ValueError(f"--from {fmt} reads the FILE arguments; give at least one")
    latency = {"--batch-size": args.batch_size, "--input-len": args.input_len,
               "--output-len": args.output_len, "--prefill-result": args.prefill_result}
    if fmt != "vllm-latency":
        given = [f for f in _LATENCY_FLAGS if latency[f] is not None]
        if given:
            raise ValueError(f"{given[0]} describes a vllm bench latency run; give --from "
                             f"vllm-latency")
    else:
        missing = [f for f in _LATENCY_FLAGS[:3] if latency[f] is None]
        if missing:
            raise ValueError(f"--from vllm-latency needs {', '.join(missing)}: the JSON holds "
                             f"the latencies only, not the run's configuration")
        if args.output_len > 1 and args.prefill_result is None:
            raise ValueError(f"--output-len {args.output_len} runs are prefill and decode "
                             f"together; give --prefill-result (the same batch run with "
                             f"--output-len 1) to split them into TTFT and TPOT")
        if args.output_len == 1 and args.prefill_result is not None:
            raise ValueError("--prefill-result splits runs of --output-len above 1; a run of "
                             "--output-len 1 is itself the TTFT")
    if args.folds is not None and args.cv != "kfold":
        raise ValueError("--folds applies with --cv kfold")
    for item in args.model_config:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--model-config takes NAME=PATH, got {item!r}")


def _recorded(args) -> None:
    """Without --model, the model the run files record (``recorded_model``: vLLM's
    ``model_id``, trtllm-bench's ``engine.model``, GuideLLM's ``config.backend.model``), as
    ``args.model``: a catalogue model by that name or by its last path part
    (``/models/meta-llama/Llama-3.1-8B-Instruct`` is ``Llama-3.1-8B-Instruct``), or the
    ``config.json`` it names; ``args.recorded_shape`` holds a model read from a config.
    ``ValueError`` where a file records none, the files disagree, or the name is none of
    these."""
    args.recorded_shape = None
    if args.model:
        return
    fmt = args.source_format
    paths = [*(args.measurements if fmt != "measurements" else ()), *args.vllm_result]
    if not paths:                      # measurement files: each row names its model
        return
    names = {}
    for path in paths:
        try:
            names[path] = recorded_model(path)
        except ValueError:
            if fmt != "trtllm":           # trtllm-bench's logged text is not JSON
                raise
            names[path] = None
    missing = [p for p, name in names.items() if name is None]
    if missing:
        raise ValueError(f"{missing[0]} records no model (vLLM's model_id, trtllm-bench's "
                         f"engine.model, GuideLLM's config.backend.model); give --model")
    if len(set(names.values())) > 1:
        shown = ", ".join(f"{p}: {n!r}" for p, n in names.items())
        raise ValueError(f"the files record different models ({shown}); give --model")
    name = next(iter(names.values()))
    tail = name.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    parts = tail.split("-")
    while len(parts) > 1 and parts[-1].lower() in _FORMAT_SUFFIXES:
        parts.pop()
    base = "-".join(parts)
    # a quantised release's name says its format: taken only where --dtype states it
    candidates = (name, tail, *((base,) if args.dtype != "auto" else ()))
    for candidate in dict.fromkeys(candidates):
        try:
            shape = catalog.resolve_model(candidate)
        except ValueError:
            continue
        args.model = shape.name
        if shape.name not in catalog.model_names():
            args.recorded_shape = shape
        return
    if base != tail and args.dtype == "auto":
        raise ValueError(f"the files record model {name!r}, a quantised release of {base!r}: "
                         f"give its weight format with --dtype (or the model with --model)")
    raise ValueError(f"the files record model {name!r}, which is neither a catalogue model "
                     f"(nor is {tail!r}) nor a config.json or Hugging Face cache entry here; "
                     f"give --model")


def _read_runs(fmt, path, args):
    """One FILE read as ``fmt`` with the configuration flags."""
    common = {"model": args.model, "gpu": args.gpu,
              "dtype": None if args.dtype == "auto" else args.dtype}
    kv_dtype = None if args.kv_cache_dtype == "auto" else args.kv_cache_dtype
    if fmt == "vllm-serve":
        return read_vllm_result(path, tp=args.tp, kv_dtype=kv_dtype, engine=args.engine,
                                **common)
    if fmt == "vllm-latency":
        return read_vllm_latency(path, tp=args.tp, kv_dtype=kv_dtype,
                                 batch_size=args.batch_size, prompt_tokens=args.input_len,
                                 output_tokens=args.output_len, prefill=args.prefill_result,
                                 engine=args.engine or "vllm", **common)
    if fmt == "guidellm":
        return read_guidellm_report(path, tp=args.tp, kv_dtype=kv_dtype, engine=args.engine,
                                    **common)
    return read_trtllm_bench(path, tp=None if args.tp == 1 else args.tp, kv_dtype=kv_dtype,
                             engine=args.engine, **common)


def _load_cli_measurements(args):
    fmt = args.source_format
    if fmt == "measurements":
        tables = [read_measurements(path) for path in args.measurements]
    else:
        tables = [_read_runs(fmt, path, args) for path in args.measurements]
    if args.vllm_result:
        tables += [_read_runs("vllm-serve", path, args) for path in args.vllm_result]
    if not tables:
        raise ValueError("measurements is empty: give measurement files or --vllm-result")
    return tables[0] if len(tables) == 1 else concat_measurements(*tables)


def _check_cv_groups(cv, ds):
    """Refuse a leave-one-group-out split with one group before the fit runs."""
    if cv in ("none", "kfold"):
        return
    groups = sorted({str(v) for v in ds[cv].values})
    if len(groups) < 2:
        shown = ", ".join(repr(g) for g in groups[:1])
        raise ValueError(f"--cv {cv} leaves one {cv} out at a time and needs at least 2 "
                         f"{cv} values in the measurements; got {len(groups)} ({shown})")


def _fit_choice(names):
    """``--fit`` as :func:`calibrate` takes it: ``None``, ``"engine"`` or the knobs named."""
    if not names:
        return None
    if "engine" in names:
        if len(set(names)) > 1:
            raise ValueError("--fit engine frees the engine knobs of each phase; give it alone")
        return "engine"
    return tuple(names)


def _cli_models(args):
    models = {}
    if getattr(args, "recorded_shape", None) is not None:
        models[args.recorded_shape.name] = args.recorded_shape
    for item in args.model_config:
        name, _, path = item.partition("=")
        models[name] = ModelShape.from_hf_config(path, name=name)
    return models


def run(args, out) -> int:
    """Run ``rooflinekit calibrate`` with parsed ``args``; print to ``out``. Returns 0; bad
    input raises ``ValueError``/``TypeError``/``OSError`` for the caller to report."""
    _check(args)
    _recorded(args)
    if args.under_load:
        return _run_under_load(args, out)
    ds = _load_cli_measurements(args)
    _check_cv_groups(args.cv, ds)
    models = _cli_models(args)
    phases = tuple(args.phase) if args.phase else PHASES
    fit = _fit_choice(args.fit)
    group_by = tuple(args.group_by) if args.group_by else None
    # the base the knobs are fitted on (--engine here names the measured runs' engine)
    if args.folds is not None and args.folds > ds.sizes[MEASUREMENT]:
        raise ValueError(f"--folds must be at most the {ds.sizes[MEASUREMENT]} measurements "
                         f"(each fold holds at least one row); got {args.folds}")
    engine = IDEAL if args.allreduce is None else IDEAL.replace(allreduce=args.allreduce)
    result = calibrate(ds, phases=phases, fit=fit, n_resamples=args.resamples,
                       confidence=args.confidence, seed=args.seed, models=models,
                       engine=engine, workload=args.workload, group_by=group_by)
    cv = None
    if args.cv != "none":
        cv = cross_validate(ds, by=None if args.cv == "kfold" else args.cv, k=args.folds,
                            seed=args.seed, phases=phases, fit=fit, models=models,
                            engine=engine, workload=args.workload,
                            group_by=group_by)
    calibration = result.calibration
    if cv is not None:
        errors = {}
        for phase in PHASES:
            if phase in cv.errors["phase"].values:
                errors[phase] = (float(cv.errors["mape_calibrated"].sel(phase=phase)),
                                 float(cv.errors["mape_ideal"].sel(phase=phase)))
        held = {"decode": "held_out_error", "prefill": "held_out_error_ttft"}
        worse = tuple(p for p, (fit, ideal) in errors.items()
                      if math.isfinite(fit) and math.isfinite(ideal) and fit > ideal)
        calibration = dataclasses.replace(
            calibration, worse_than_ideal=worse,
            **{held[p]: fit for p, (fit, _) in errors.items() if math.isfinite(fit)})
        for phase in worse:       # written all the same, but never silently
            fit, ideal = errors[phase]
            print(f"rooflinekit calibrate: warning: the {phase} fit holds out worse than the "
                  f"ideal roofline ({fit:.1f}% against {ideal:.1f}%); its label says so",
                  file=sys.stderr)
    payload = {"calibration": calibration.to_dict(), "model_quality": calibration.label,
               "parameters": _to_jsonable(result.parameters),
               "errors": _to_jsonable(result.errors)}
    if cv is not None:
        payload["cross_validation"] = {"errors": _to_jsonable(cv.errors),
                                       "folds": _to_jsonable(cv.folds)}
    records = result.parameters.to_dataframe().reset_index().to_dict("records")

    write = _writer(args, calibration, records, result.parameters)

    def text(out):
        out.write(f"rooflinekit calibrate: {ds.sizes[MEASUREMENT]} measurement(s)\n\n")
        out.write(result.summary() + "\n")
        if cv is not None:
            out.write(f"\ncross-validation ({cv.folds.attrs['by']}):\n{cv.summary()}\n")
        out.write(f"\nlabel: {calibration.label}\n")
    return emit(args, out, records, text=text, payload=payload, write=write)


def _writer(args, calibration, records, dataset):
    """``--output``'s writer: the calibration as JSON, else ``records`` / ``dataset``."""
    def write(path):
        if output_format(path) == ".json":
            save_calibration(calibration, path)
        else:
            write_output(path, records, dataset=dataset, force=bool(getattr(args, "force", False)))
    return write


def _run_under_load(args, out) -> int:
    """``--under-load``: :func:`rooflinekit.planning.fit_under_load` of the --vllm-result runs."""
    guidellm = args.source_format == "guidellm"
    if guidellm:
        if len(args.measurements) != 1 or args.vllm_result:
            raise ValueError("--under-load --from guidellm fits one GuideLLM sweep report: give "
                             "one FILE (and no --vllm-result)")
        results = args.measurements[0]
    elif not args.vllm_result or args.source_format != "measurements" or \
            args.measurements:
        raise ValueError("--under-load fits --vllm-result runs at two or more request rates "
                         "or concurrencies (files of one run, or of one run a line: vLLM's "
                         "--append-result, SGLang's bench_serving --output-file; or one "
                         "GuideLLM sweep with --from guidellm FILE); give them with "
                         "--vllm-result")
    else:
        results = args.vllm_result
    for flag, given in (("--cv", args.cv != "none"), ("--phase", args.phase),
                        ("--group-by", args.group_by), ("--workload",
                                                        args.workload != "isolated")):
        if given:
            raise ValueError(f"{flag} applies to the closed-form fit, not to --under-load")
    fit = tuple(args.fit) if args.fit else ("step_overhead", "frontend_latency")
    unknown = [k for k in fit if k not in LOAD_KNOBS]
    if unknown:
        raise ValueError(f"--fit {unknown[0]} cannot be fitted under load; choose from "
                         f"{', '.join(LOAD_KNOBS)}")
    name = (args.engine or "").split()[0] if args.engine else ""
    model = args.recorded_shape or catalog.resolve_model(args.model)
    if args.dtype != "auto":
        model = model.replace(bytes_per_param=args.dtype)
    if args.kv_cache_dtype != "auto":
        model = model.replace(kv_bytes_per_element=args.kv_cache_dtype)
    result = fit_under_load(results, model=model, gpu=args.gpu, tp=args.tp,
                            engine=name if profiled_engine(name) else None, fit=fit,
                            ttft_statistic=args.ttft_statistic or "median", seed=args.seed,
                            prefix_cache=None if args.prefix_cache is None
                            else args.prefix_cache == "on")
    calibration, table = result
    records = table.to_dataframe().reset_index().to_dict("records")
    payload = {"calibration": calibration.to_dict(), "model_quality": calibration.label,
               "table": _to_jsonable(table), **{k: v for k, v in table.attrs.items() if k in (
                   "tpot_error_before", "tpot_error", "ttft_error_before", "ttft_error",
                   "ttft_median_error_before", "ttft_median_error", "ttft_fitted")}}

    write = _writer(args, calibration, records, table)

    def text(out):
        a = table.attrs
        out.write(f"rooflinekit calibrate --under-load: {len(records)} runs\n")
        out.write(f"fitted: {a['knobs']}\n")
        median = (f"median TTFT error {a['ttft_median_error_before']:.1f}% -> "
                  f"{a['ttft_median_error']:.1f}% (fitted), " if a["ttft_fitted"] == "median"
                  else "")
        out.write(f"mean TPOT error {a['tpot_error_before']:.1f}% -> {a['tpot_error']:.1f}%, "
                  f"{median}mean TTFT error {a['ttft_error_before']:.1f}% -> "
                  f"{a['ttft_error']:.1f}% (in sample)\n")
        out.write(f"label: {calibration.label}\n")
    return emit(args, out, records, text=text, payload=payload, write=write)


def _to_jsonable(ds: xr.Dataset) -> dict:
    def clean(values):
        if isinstance(values, list):
            return [clean(v) for v in values]
        if isinstance(values, float) and math.isnan(values):
            return None   # JSON has no NaN: "not measured" / "not fitted"
        return values
    return {"coords": {k: clean(v.values.tolist()) for k, v in ds.coords.items()},
            "data_vars": {k: {"dims": list(v.dims), "data": clean(v.values.tolist()),
                              "attrs": dict(v.attrs)} for k, v in ds.data_vars.items()},
            "attrs": dict(ds.attrs)}

