"""What the commands share: the names a command module defines, argument types, common flags.

vLLM's flag names where vLLM has the concept (``--max-num-seqs``, ``--block-size``, ...), one name
per quantity across commands; every number is checked as it is parsed, so a bad value is one
``argparse`` line naming the flag, before any work.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable

from rooflinekit import catalog, workloads
from rooflinekit.batching import MAX_RECV_INTERVAL, MAX_SCHEDULER_STEPS, MAX_STREAM_INTERVAL
from rooflinekit.cli._output import JSON_RULE
from rooflinekit.dtypes import BYTES_PER_ELEMENT

__all__ = ["COMMAND_API", "FLAGS", "MAX_BLOCK_SIZE", "MAX_INT", "MAX_PREFIX_GROUPS", "PREFIX_FLAGS", "add_flag", "add_long_context_flag", "check_trained_context", "add_output_flags", "latency", "LONGEST_BARE_TARGET",
           "apply_dtypes", "apply_calibration", "engine_from_args", "scheduled_engine", "answer_scheduler", "load_engine", "examples", "fraction", "mixed_prefill", "int_list", "name_list", "nonnegative_float",
           "nonnegative_int", "number", "positive_float", "positive_int", "shared_prefix",
           "SPECULATIVE_FLAGS", "speculative_draft", "whole_number"]

#: The names every command module defines (and lists in its ``__all__``): its ``NAME``, the
#: one-line ``HELP`` of ``rooflinekit --help``, the ``DESCRIPTION`` and ``EPILOG`` (examples) of
#: its own ``--help``, ``add_arguments(parser)`` and ``run(args, out) -> int``.
COMMAND_API = ("DESCRIPTION", "EPILOG", "HELP", "NAME", "add_arguments", "run")

#: Largest whole number a flag takes: every count ends up in float64 arithmetic, which holds
#: integers exactly only up to 2**53.
MAX_INT = 2**53


#: Largest KV block a flag takes [tokens] (:data:`rooflinekit.batching.MAX_BLOCK_SIZE`, 2**20):
#: the paged kernel keeps scratch per token of a block, so 2**53 was petabytes.
MAX_BLOCK_SIZE = 2**20

#: Most shared prefixes ``--prefix-groups`` takes: 1,000,000. The workload and the kernel keep a
#: table entry per group (2**53 groups were a 64 PiB allocation); more distinct prefixes than a
#: million system prompts is not a prefix cache's workload.
MAX_PREFIX_GROUPS = 1_000_000


def examples(name: str, *commands: str) -> str:
    """An ``EPILOG``: each of ``commands`` as a run of ``rooflinekit name``, one a line."""
    return "examples:\n" + "\n".join(f"  rooflinekit {name} {command}" for command in commands)


def whole_number(lo: int = 1, hi: int = MAX_INT):
    """An ``argparse`` type: a whole number in ``[lo, hi]`` (``"1e3"`` reads as 1000)."""
    def parse(text: str) -> int:
        try:
            value = float(text) if any(c in str(text) for c in ".eE") else int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if isinstance(value, float):
            if not math.isfinite(value) or not value.is_integer():
                raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")
            value = int(value)
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must be in [{lo}, {hi}], got {text}")
        return value
    parse.__name__ = "whole number"   # argparse names the type in its messages
    return parse


positive_int = whole_number(1)
nonnegative_int = whole_number(0)


def number(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False,
           hi_open: bool = False):
    """An ``argparse`` type: a finite number in the range given (open ends where asked)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        below = lo is not None and (value <= lo if lo_open else value < lo)
        above = hi is not None and (value >= hi if hi_open else value > hi)
        if not math.isfinite(value) or below or above:
            left = "-inf" if lo is None else f"{lo:g}"
            right = "inf" if hi is None else f"{hi:g}"
            interval = ("(" if lo_open or lo is None else "[") + f"{left}, {right}" + (
                ")" if hi_open or hi is None else "]")
            raise argparse.ArgumentTypeError(f"must be a finite number in {interval}, "
                                             f"got {text!r}")
        return value
    parse.__name__ = "number"
    return parse


positive_float = number(0, lo_open=True)
nonnegative_float = number(0)
fraction = number(0, 1)

#: Seconds per unit a latency may be written in (``500ms``, ``0.5 s``, ``300us``).
_TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6}
#: A bare latency target above this many seconds is almost surely milliseconds typed bare.
LONGEST_BARE_TARGET = 60.0


def latency(text: str) -> float:
    """An ``argparse`` type: a latency target [s], > 0, with an optional unit (``500ms``,
    ``300us``); a bare number is seconds, refused above :data:`LONGEST_BARE_TARGET` as a slip."""
    match = re.fullmatch(r"\s*([0-9.eE+-]+)\s*(s|ms|us|µs)?\s*", str(text))
    if not match:
        raise argparse.ArgumentTypeError(
            f"expected a time such as 0.5, 500ms or 50 ms (units: s, ms, us), got {text!r}")
    value = number(0, lo_open=True)(match.group(1)) * _TIME_UNITS[match.group(2) or "s"]
    if match.group(2) is None and value > LONGEST_BARE_TARGET:
        raise argparse.ArgumentTypeError(
            f"a bare number is seconds: {text!r} would be {value / 60:.3g} minutes; write "
            f"{match.group(1)}ms for milliseconds, or {match.group(1)}s if you mean seconds")
    return value


def int_list(text: str) -> list[int]:
    """An ``argparse`` type: comma-separated whole numbers >= 1 (``"1,2,4"``)."""
    values = [positive_int(x) for x in str(text).split(",") if x.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, got {text!r}")
    return values


def name_list(text: str) -> list[str]:
    """An ``argparse`` type: comma-separated names (``"h100,l40s"``)."""
    values = [x.strip() for x in str(text).split(",") if x.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"expected comma-separated names, got {text!r}")
    return values


def _format(names) -> Callable[[str], str]:
    """An ``argparse`` type: ``auto`` or one of the format ``names``, lower-cased."""
    def parse(text: str) -> str:
        key = str(text).strip().lower()
        if key != "auto" and key not in names:
            raise argparse.ArgumentTypeError(
                f"expected auto or one of {', '.join(names)}, got {text!r}")
        return key
    return parse


#: Formats the engines keep a recurrent (SSM) state in: vLLM's --mamba-ssm-cache-dtype choices.
SSM_STATE_DTYPES = ("fp32", "float32", "bf16", "bfloat16", "fp16", "float16")
_dtype = _format(sorted(BYTES_PER_ELEMENT))
_ssm_dtype = _format(SSM_STATE_DTYPES)


#: Flags several commands take, with the same meaning in each: flag -> ``add_argument`` keywords.
#: A command may say more in its help (which runs ``--model`` names) or change a default.
FLAGS = {
    "--json": {"action": "store_true", "help": "print JSON instead of a table"},
    "--csv": {"action": "store_true", "help": "print CSV instead of a table"},
    "--output": {"metavar": "FILE",
                 "help": "also write the result to FILE, the format from its extension: .nc "
                         "or .zarr (the Dataset), .csv or .parquet (the table), .json (as "
                         "--json)"},
    # every command reads its model with catalog.resolve_model
    "--model": {"help": "a catalogue name, a Hugging Face config.json, a model folder, or a repo "
                        "id already in the local Hugging Face cache (read offline) or in the "
                        "catalogue's aliases (meta-llama/Llama-3.1-8B-Instruct)"},
    "--name": {"default": None, "metavar": "NAME",
               "help": "the model's name in the output (default: the catalogue name, the repo "
                       "id, the name the config records, or the folder's or file's name)"},
    "--gpu": {"help": "catalogue GPU name"},
    "--tensor-parallel-size": {"type": positive_int, "default": 1, "dest": "tp",
                               "metavar": "TP", "help": "tensor-parallel degree (1)"},
    "--max-num-seqs": {"type": positive_int, "metavar": "SEQUENCES", "help": "most sequences in a batch (vLLM's name)"},
    "--pipeline-parallel-size": {"type": positive_int, "default": 1, "dest": "pp",
                                 "metavar": "PP", "help": "pipeline-parallel stages (1)"},
    "--expert-parallel-size": {"type": positive_int, "default": 1, "dest": "ep",
                               "metavar": "EP",
                               "help": "GPUs of a stage that a MoE model's routed experts are "
                                       "spread over, whole, instead of sharded: an all-to-all "
                                       "each MoE layer (SGLang's --ep-size, TensorRT-LLM's "
                                       "--ep_size; vLLM's --enable-expert-parallel is the "
                                       "tensor-parallel size) (1)"},
    "--batch-size": {"type": positive_int, "metavar": "SEQUENCES",
                     "help": "sequences decoding together"},
    "--engine": {"metavar": "NAME|FILE",
                 "help": "how the serving engine runs a step: vllm, sglang or trtllm (that "
                         "engine's shipped profile of the GPU; NAME@VERSION at that version, "
                         "e.g. vllm@0.11.0: a vLLM before 0.14.0 waits for its host between "
                         "steps; a later one not profiled takes the newest profile), ideal (the "
                         "roofline bound, a "
                         "best case), a calibration JSON from `rooflinekit calibrate` or an "
                         "engine JSON of rooflinekit.Engine fields such as "
                         "{\"compute_efficiency\": 0.6, \"step_overhead\": 0.004} (default: "
                         "vllm)"},
    "--calibration": {"metavar": "FILE",
                      "help": "a calibration JSON from `rooflinekit calibrate` (fitted to your "
                              "own runs): it times every step, as --engine FILE does; not "
                              "with --engine"},
    "--max-num-batched-tokens": {"type": positive_int, "metavar": "TOKENS",
                                 "help": "tokens per engine step, chunked prefill (vLLM's name)"},
    "--block-size": {"type": whole_number(1, MAX_BLOCK_SIZE), "default": 16, "metavar": "TOKENS",
                     "help": "KV block size [tokens] (16)"},
    "--gpu-memory-utilization": {
        "type": number(0, 1, lo_open=True), "metavar": "SHARE",
        "help": "share of the memory the driver reports on each GPU for weights + KV, in "
                "(0, 1] (vLLM's rule; the engine's activation peak and non-torch memory come "
                "off it under vLLM's profiles)"},
    "--max-model-len": {"type": positive_int, "metavar": "TOKENS",
                        "help": "tokens per sequence, prompt + output [tokens]"},
    "--dtype": {"type": _dtype, "default": "auto", "metavar": "DTYPE",
                "help": "weight format (auto: the model's; bf16, fp8, nvfp4, int4, ...; "
                        "fp8 and nvfp4 multiply on the GPU's FP8 and FP4 tensor cores where "
                        "it has them)"},
    "--kv-cache-dtype": {"type": _dtype, "default": "auto", "metavar": "DTYPE",
                         "help": "KV-cache format (auto: the model's; fp8, ...)"},
    "--mamba-ssm-cache-dtype": {"type": _ssm_dtype, "default": "auto", "metavar": "DTYPE",
                                "help": "a hybrid model's recurrent-state format (auto: the "
                                        "model's, fp32; bf16 halves it; SGLang's "
                                        "--mamba-ssm-dtype)"},
    "--mixed-prefill": {"choices": ("auto", "on", "off"), "default": "auto",
                        "help": "on: a step carries prefill chunks beside the decodes (vLLM "
                                "V1); off: prefill steps run apart from them (SGLang's "
                                "default, vLLM V0); auto: the --engine's rule (auto)"},
    "--recv-interval": {"type": whole_number(1, MAX_RECV_INTERVAL), "default": 1,
                        "metavar": "STEPS",
                        "help": "SGLang's --scheduler-recv-interval: new requests are taken in "
                                "only after this many decode steps (or a prefill step), or "
                                "when the server is idle (1: every step, the default)"},
    "--stream-interval": {"type": whole_number(1, MAX_STREAM_INTERVAL), "default": 1,
                          "metavar": "TOKENS",
                          "help": "vLLM's and SGLang's --stream-interval: the server sends a "
                                  "request's first token at once, then every TOKENS tokens, "
                                  "and its last at its end, so the ITL is the gap between its "
                                  "sends (TTFT and TPOT unchanged; 1: every token, the "
                                  "default)"},
    "--num-scheduler-steps": {"type": whole_number(1, MAX_SCHEDULER_STEPS), "default": 1,
                              "metavar": "STEPS",
                              "help": "vLLM V0's --num-scheduler-steps (0.6.0 to 0.9): decodes "
                                      "run in windows of STEPS steps scheduled once, nothing "
                                      "admitted or retired inside one, and a window's tokens "
                                      "sent at its end; prefill steps run apart from the "
                                      "decodes (--mixed-prefill auto: off; on is refused). 1: "
                                      "one step a window, the default"},
    "--admission": {"choices": ("auto", "paged", "reserve"), "default": "auto",
                    "help": "KV admission: paged admits on the blocks a request holds and "
                            "preempts (vLLM, SGLang); reserve admits only when the prompt and "
                            "whole output fit, never preempting (TensorRT-LLM's default); "
                            "auto: the --engine's rule (auto)"},
    "--allreduce": {"choices": ("collective", "custom", "ring", "guide"),
                    "help": "tensor-parallel all-reduce model: collective (two latencies per "
                            "all-reduce plus the bytes over the link; the ideal's), custom "
                            "(the engines' own and the shipped profiles': each the faster of "
                            "that and a one-shot), ring (a latency per hop), guide (the "
                            "guide's simple model, no communication); overrides the --engine "
                            "file's"},
    "--workspace-fraction": {
        "type": number(0, 1, hi_open=True), "metavar": "SHARE",
        "help": "share of the memory left after the weights kept for activations and the "
                "allocator (the guide's rule; default 0.10)"},
    "--speculative-draft": {
        "metavar": "MODEL|SHARE",
        "help": "speculative decoding: a draft model (catalogue name) or a draft head's cost "
                "as a share of the target's decode step, in (0, 1]"},
    "--num-speculative-tokens": {
        "type": whole_number(1, 64), "metavar": "K",
        "help": "tokens drafted per step (vLLM's name; with --speculative-draft)"},
    "--acceptance": {"type": number(0, 1), "metavar": "ALPHA",
                     "help": "probability the target accepts a drafted token, in [0, 1]"},
}

#: The speculative-decoding flags, which go together.
SPECULATIVE_FLAGS = ("--speculative-draft", "--num-speculative-tokens", "--acceptance")


def speculative_draft(args):
    """The draft of the speculative flags (refused unless all three are given): ``None``
    without them, a share of the target's decode step in (0, 1], or a model."""
    given = (args.speculative_draft, args.num_speculative_tokens, args.acceptance)
    if any(v is not None for v in given) and any(v is None for v in given):
        raise ValueError("--speculative-draft, --num-speculative-tokens and --acceptance go "
                         "together")
    text = args.speculative_draft
    if text is None:
        return None
    try:
        share = float(text)
    except ValueError:
        return catalog.resolve_model(text)
    if not 0.0 < share <= 1.0:          # NaN fails here too
        raise ValueError(f"--speculative-draft as a share of the target's decode step must lie "
                         f"in (0, 1]; got {text!r}")
    return share


#: The shared-prefix flags: drawn requests that start with shared prefixes, and the cache of them.
PREFIX_FLAGS = {
    "--enable-prefix-caching": {
        "action": argparse.BooleanOptionalAction, "default": None,
        "help": "continuous batching keeps shared prefixes' KV blocks and skips their prefill "
                "(vLLM's name; with paged admission). plan: on by default where "
                "--prefix-tokens gives prefixes, as the engines run; --no-enable-prefix-caching "
                "plans without it"},
    "--prefix-tokens": {"type": positive_int, "metavar": "TOKENS",
                        "help": "shared prefix length, before each request's own prompt"},
    "--prefix-groups": {"type": whole_number(1, MAX_PREFIX_GROUPS), "metavar": "PREFIXES",
                        "help": "distinct shared prefixes, each as likely (1)"},
    "--prefix-share": {"type": number(0, 1), "metavar": "SHARE",
                       "help": "share of requests that start with a shared prefix (1)"},
}
FLAGS.update(PREFIX_FLAGS)


def shared_prefix(args):
    """The :class:`~rooflinekit.workloads.SharedPrefix` of the prefix flags, or ``None``
    (``--prefix-groups`` and ``--prefix-share`` refused without ``--prefix-tokens``)."""
    shaping = [f for f, v in (("--prefix-groups", args.prefix_groups),
                              ("--prefix-share", args.prefix_share)) if v is not None]
    if shaping and args.prefix_tokens is None:
        raise ValueError(f"{shaping[0]} applies with --prefix-tokens")
    if args.prefix_tokens is None:
        return None
    return workloads.SharedPrefix(args.prefix_tokens, args.prefix_groups or 1,
                                  1.0 if args.prefix_share is None else args.prefix_share)


#: Short forms: flag -> the other spellings of the same flag.
_ALIASES = {"--tensor-parallel-size": ("--tp",), "--pipeline-parallel-size": ("--pp",),
            "--expert-parallel-size": ("--ep",)}


def read_model(args):
    """The model of ``args.model`` (:func:`rooflinekit.catalog.resolve_model`), named by
    ``--name`` where the command takes it and it was given."""
    name = getattr(args, "name", None)
    if name is not None and not name.strip():
        raise ValueError("--name must not be empty")
    return catalog.resolve_model(args.model, name=None if name is None else name.strip())


def add_flag(parser, flag: str, *, positional: bool = False, **changes) -> None:
    """Add the shared ``flag`` (a key of :data:`FLAGS`) to ``parser``, as a positional of the
    same name with ``positional``; ``changes`` replace keywords of its declaration."""
    options = {**FLAGS[flag], **changes}
    if positional:
        options.pop("dest", None)
        parser.add_argument(flag.removeprefix("--"), **options)
    else:
        parser.add_argument(flag, *_ALIASES.get(flag, ()), **options)


def add_output_flags(parser, *, output_help: str | None = None) -> None:
    """``--json`` and ``--csv`` (one or the other), ``--output FILE`` and ``--force``."""
    group = parser.add_mutually_exclusive_group()
    add_flag(group, "--json", help=f"{FLAGS['--json']['help']} ({JSON_RULE})")
    add_flag(group, "--csv")
    add_flag(parser, "--output", **({"help": output_help} if output_help else {}))
    parser.add_argument("--force", action="store_true",
                        help="overwrite an existing --output (a file, or a .zarr folder's "
                             "contents); never one of the command's inputs")


def apply_dtypes(model, args):
    """``model`` with ``--dtype``, ``--kv-cache-dtype`` and ``--mamba-ssm-cache-dtype``
    applied (``auto`` keeps its own; the last has no effect on a model without a recurrent
    state)."""
    changes = {}
    if getattr(args, "dtype", "auto") not in (None, "auto"):
        changes["bytes_per_param"] = args.dtype
    if getattr(args, "kv_cache_dtype", "auto") not in (None, "auto"):
        changes["kv_bytes_per_element"] = args.kv_cache_dtype
    if getattr(args, "mamba_ssm_cache_dtype", "auto") not in (None, "auto") and \
            model.state_bytes_per_sequence:
        changes["ssm_state_bytes_per_element"] = args.mamba_ssm_cache_dtype
    return model.replace(**changes) if changes else model


def load_engine(path):
    """The engine a JSON file describes: a calibration (a file with ``prefill`` or ``decode``
    knobs), else :class:`rooflinekit.Engine` fields (an unknown one refused). Only a regular
    file is read, bounded; errors name the file."""
    from pathlib import Path

    from rooflinekit import calibrate, roofline
    from rooflinekit._validation import MAX_CONFIG_BYTES, parse_json, read_regular_file

    path = Path(path)
    data = parse_json(read_regular_file(path, "engine file", MAX_CONFIG_BYTES),
                      f"engine file {path}")
    if not isinstance(data, dict):
        raise ValueError(f"engine file {path}: expected a JSON object of engine fields or a "
                         f"calibration, got {type(data).__name__}")
    if "prefill" in data or "decode" in data:
        return calibrate.load_calibration(path)
    try:
        return roofline.Engine.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"engine file {path}: {exc}") from None


def apply_calibration(args) -> None:
    """``--calibration FILE`` as the command's ``--engine FILE``, checked before any work: a
    ``ValueError`` beside ``--engine`` (both would say what times the steps) or where the file
    holds an engine of :class:`rooflinekit.Engine` fields, not a calibration."""
    path = getattr(args, "calibration", None)
    if path is None:
        return
    if getattr(args, "engine", None) is not None:
        raise ValueError("--calibration and --engine both say what times the steps: give one")
    try:
        engine = load_engine(path)
    except (OSError, ValueError, TypeError) as exc:
        raise type(exc)(f"--calibration: {exc}") from None
    if not hasattr(engine, "base"):
        raise ValueError(f"--calibration {path}: the file holds rooflinekit.Engine fields, not a "
                         f"calibration from `rooflinekit calibrate`; give it as --engine FILE")
    args.engine = str(path)
    args.loaded_engine = engine     # read once: engine_from_args takes it


def engine_from_args(args, gpu=None):
    """The engine of a command: ``--engine NAME|FILE`` (default the vLLM profile of ``gpu``,
    :func:`rooflinekit.profiles.resolve_engine`), its all-reduce model from ``--allreduce``."""
    from rooflinekit.profiles import ENGINE_CHOICES, is_engine_name, resolve_engine

    value = getattr(args, "engine", None)
    loaded = getattr(args, "loaded_engine", None)      # --calibration's, read when checked
    if value is None or is_engine_name(value) or \
            value.partition("@")[0].strip().lower() in ENGINE_CHOICES:
        engine = resolve_engine(value, gpu)     # NAME@ with a bad version: its own message
    elif loaded is not None:            # --engine beside --calibration is refused: its file
        engine = loaded
    else:
        engine = load_engine(value)
    allreduce = getattr(args, "allreduce", None)
    if allreduce is None:
        return engine
    if hasattr(engine, "base"):          # a calibration: its base engine takes the model
        import dataclasses
        return dataclasses.replace(engine, base=engine.base.replace(allreduce=allreduce))
    return engine.replace(allreduce=allreduce, label=engine.label
                          if allreduce == engine.allreduce else "")


def scheduled_engine(args, engine):
    """What a command hands its planner as ``engine``: the engine's name where ``--engine``
    names a shipped engine and no ``--allreduce`` changes it (the planner then resolves the
    same profiles and runs that engine's scheduler: its slots, budget, prefill rule and
    admission), else ``engine``, the engine :func:`engine_from_args` built (vLLM's
    scheduler)."""
    from rooflinekit.profiles import profiled_engine
    named = (getattr(args, "engine", None) or "").strip().lower()
    return named if profiled_engine(named) and getattr(args, "allreduce", None) is None \
        else engine


def answer_scheduler(attrs) -> dict:
    """The scheduler a planning result ran, from its ``attrs``, as planner keyword arguments:
    its admission, its prefill rule where it records one, and its slots and budget where one
    configuration ran (a load curve, a disaggregated plan; a budget of 0: whole prompts). An
    ideal bound given them reruns the answer's scheduler, not the default engine's."""
    out = {"admission": attrs["admission"]}
    if "mixed_prefill" in attrs:
        out["mixed_prefill"] = bool(attrs["mixed_prefill"])
    if "max_num_seqs" in attrs:
        out["max_num_seqs"] = int(attrs["max_num_seqs"])
        out["max_num_batched_tokens"] = int(attrs["max_num_batched_tokens"]) or None
    return out


def mixed_prefill(args):
    """``--mixed-prefill``: ``"auto"`` (the engine's rule), True (on) or False (off)."""
    return {"auto": "auto", "on": True, "off": False}[args.mixed_prefill]


def gpu_price(text: str) -> tuple[str, float]:
    """An ``argparse`` type: ``GPU=USD`` (``h100=2.49``), a catalogue GPU's price per GPU-hour
    [USD/h], finite and >= 0: on demand, spot, reserved or amortised."""
    name, sep, price = str(text).partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected GPU=USD_PER_HOUR such as H100-SXM-80GB=2.49, "
                                         f"got {text!r}")
    try:
        gpu = catalog.gpu(name.strip()).name
    except (KeyError, ValueError) as exc:
        raise argparse.ArgumentTypeError(str(exc).strip("'\"")) from None
    return gpu, number(0)(price)


gpu_price.__name__ = "GPU=USD"


def add_long_context_flag(parser) -> None:
    """``--allow-long-context``: plan a context above the model's trained length anyway."""
    parser.add_argument("--allow-long-context", action="store_true",
                        help="accept a --max-model-len above the model's trained context "
                             "(max_position_embeddings), e.g. with RoPE scaling you configured")


def check_trained_context(args, model) -> None:
    """Refuse ``--max-model-len`` above ``model.max_context`` (a slip: vLLM refuses it too)
    unless ``--allow-long-context``; a model of unknown trained length is not checked."""
    limit = getattr(model, "max_context", None)
    if limit is not None and args.max_model_len > limit and not args.allow_long_context:
        raise ValueError(f"--max-model-len {args.max_model_len:,} is above {model.name}'s trained "
                         f"context of {limit:,} tokens; lower it, or give --allow-long-context "
                         f"if the server extends it")

