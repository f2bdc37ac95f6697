"""``rooflinekit calibrate``: fit efficiency factors to measured runs, and report them."""

from __future__ import annotations

import dataclasses
import math

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
    read_measurements,
    read_vllm_result,
    save_calibration,
)
from rooflinekit.cli._args import (
    COMMAND_API,
    add_flag,
    add_output_flags,
    examples,
    nonnegative_int,
    number,
    whole_number,
)
from rooflinekit.cli._output import check_output_path, emit, write_output
from rooflinekit.models import ModelShape

__all__ = list(COMMAND_API) + ["add_calibrate_arguments", "calibrate_cli_main"]

NAME = "calibrate"
HELP = "fit efficiency factors to measured runs"
DESCRIPTION = "Fit compute/bandwidth efficiency and per-step overhead to measurements."
EPILOG = examples(NAME, "runs.csv --cv kfold", "--vllm-result result.json --model llama-3.1-8b "
                  "--gpu h100 --fit step_overhead")


def add_arguments(parser) -> None:
    """Add the ``rooflinekit calibrate`` arguments to an :mod:`argparse` (sub)parser."""
    parser.add_argument("measurements", nargs="*", metavar="FILE",
                        help="measurement files (.csv or .json, columns above)")
    parser.add_argument("--vllm-result", action="append", default=[], metavar="JSON",
                        help="a `vllm bench serve --save-result` JSON (repeatable); needs --model "
                             "and --gpu")
    add_flag(parser, "--model", help="model of the --vllm-result runs (catalogue name)")
    add_flag(parser, "--gpu", help="GPU of the --vllm-result runs (catalogue name)")
    add_flag(parser, "--tensor-parallel-size",
             help="tensor-parallel degree of the --vllm-result runs (1)")
    add_flag(parser, "--dtype", help="weight format of the --vllm-result runs (auto: the "
             "model's)")
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
    add_output_flags(parser, output_help=(
        "also write the result to FILE, the format from its extension: .json (the calibration "
        "file `rooflinekit plan --calibration` reads), .nc or .zarr (the parameters Dataset), "
        ".csv or .parquet (the parameters table)"))


def _check(args) -> None:
    """Refuse flags that would be ignored, before reading anything."""
    if args.output is not None:
        check_output_path(args.output)
    if not args.vllm_result:
        given = [f for f, on in (("--model", args.model), ("--gpu", args.gpu),
                                 ("--tensor-parallel-size", args.tp != 1),
                                 ("--dtype", args.dtype != "auto")) if on]
        if given:
            raise ValueError(f"{given[0]} describes --vllm-result runs; give --vllm-result JSON")
    elif not args.model or not args.gpu:
        raise ValueError("--vllm-result needs --model and --gpu")
    if args.folds is not None and args.cv != "kfold":
        raise ValueError("--folds applies with --cv kfold")
    for item in args.model_config:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--model-config takes NAME=PATH, got {item!r}")


def _load_cli_measurements(args):
    tables = [read_measurements(path) for path in args.measurements]
    if args.vllm_result:
        if not args.model or not args.gpu:
            raise ValueError("--vllm-result needs --model and --gpu")
        dtype = None if args.dtype == "auto" else args.dtype
        tables += [read_vllm_result(path, model=args.model, gpu=args.gpu, tp=args.tp,
                                    dtype=dtype) for path in args.vllm_result]
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
    for item in args.model_config:
        name, _, path = item.partition("=")
        models[name] = ModelShape.from_hf_config(path, name=name)
    return models


def run(args, out) -> int:
    """Run ``rooflinekit calibrate`` with parsed ``args``; print to ``out``. Returns 0.

    Bad input raises ``ValueError``/``TypeError``/``OSError`` for the caller to report.
    """
    _check(args)
    ds = _load_cli_measurements(args)
    _check_cv_groups(args.cv, ds)
    models = _cli_models(args)
    phases = tuple(args.phase) if args.phase else PHASES
    fit = _fit_choice(args.fit)
    group_by = tuple(args.group_by) if args.group_by else None
    options = {"allreduce": args.allreduce}
    result = calibrate(ds, phases=phases, fit=fit, n_resamples=args.resamples,
                       confidence=args.confidence, seed=args.seed, models=models,
                       roofline_options=options, workload=args.workload, group_by=group_by)
    cv = None
    if args.cv != "none":
        cv = cross_validate(ds, by=None if args.cv == "kfold" else args.cv, k=5 if args.folds is None else args.folds,
                            seed=args.seed, phases=phases, fit=fit, models=models,
                            roofline_options=options, workload=args.workload,
                            group_by=group_by)
    calibration = result.calibration
    if cv is not None:
        held_out = float(cv.errors["mape_calibrated"].sel({"phase": "decode"}))
        if math.isfinite(held_out):
            calibration = dataclasses.replace(calibration, held_out_error=held_out)
    payload = {"calibration": calibration.to_dict(), "model_quality": calibration.label,
               "parameters": _to_jsonable(result.parameters),
               "errors": _to_jsonable(result.errors)}
    if cv is not None:
        payload["cross_validation"] = {"errors": _to_jsonable(cv.errors),
                                       "folds": _to_jsonable(cv.folds)}
    records = result.parameters.to_dataframe().reset_index().to_dict("records")

    def write(path):
        if str(path).lower().endswith(".json"):
            save_calibration(calibration, path)
        else:
            write_output(path, records, dataset=result.parameters)

    def text(out):
        out.write(f"rooflinekit calibrate: {ds.sizes[MEASUREMENT]} measurement(s)\n\n")
        out.write(result.summary() + "\n")
        if cv is not None:
            out.write(f"\ncross-validation ({cv.folds.attrs['by']}):\n{cv.summary()}\n")
        out.write(f"\nlabel: {calibration.label}\n")
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


# the names these two had before every command took add_arguments and run
add_calibrate_arguments = add_arguments
calibrate_cli_main = run
