"""The ``rooflinekit`` command: the parser, built from one module per command, and the entry point.

Each command is a module of this folder with ``NAME``, ``HELP``, ``DESCRIPTION``, ``EPILOG``,
``add_arguments(parser)`` and ``run(args, out) -> int``. Errors from bad input are one line on
stderr naming the flag and exit status 2, before any work; never a traceback. The library's
warnings are one line each on stderr, ``rooflinekit COMMAND: warning: ...``. A result that
answers "no" (``capacity`` on a configuration that does not fit) exits 1.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import logging
import os
import sys
import warnings

from rooflinekit.cli import (
    calibrate,
    capacity,
    catalog,
    curve,
    disaggregated,
    guide,
    layouts,
    plan,
    price,
    simulate,
    sweep,
)
from rooflinekit.cli._args import apply_calibration
from rooflinekit.cli._output import check_output, escape_text

__all__ = ["COMMANDS", "build_parser", "main"]

#: The commands, in the order ``rooflinekit --help`` lists them.
COMMANDS = (guide, catalog, capacity, layouts, price, simulate, sweep, plan, disaggregated,
            curve, calibrate)


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (the usage is one ``--help`` away)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


class _Notices(logging.Handler):
    """The ``rooflinekit`` logger's records on stderr: a compile's start, ticks and end (the
    record's ``compile``) as one growing line, any other record at INFO or above a line."""

    def __init__(self, command: str):
        super().__init__(logging.DEBUG)
        self.command = command

    def emit(self, record):
        stage = getattr(record, "compile", None)
        if stage == "tick":
            text = "."
        elif stage == "end":
            text = f" {record.getMessage()}\n"
        elif stage == "start":
            text = f"rooflinekit {self.command}: {record.getMessage()} "
        elif record.levelno >= logging.INFO:
            text = f"rooflinekit {self.command}: {record.getMessage()}\n"
        else:
            return
        sys.stderr.write(text)
        sys.stderr.flush()


def _warning_line(command: str):
    """A ``warnings.showwarning`` that writes the library's warnings (a GPU timed by its
    nearest profile, an engine version older than the scheduler planned) as one line each,
    ``rooflinekit COMMAND: warning: ...``, not Python's file, line and source."""
    def show(message, category, filename, lineno, file=None, line=None):
        text = escape_text(" ".join(str(message).split()))
        sys.stderr.write(f"rooflinekit {command}: warning: {text}\n")
    return show


def build_parser() -> argparse.ArgumentParser:
    """The ``rooflinekit`` parser, one subcommand per module of :data:`COMMANDS`."""
    parser = _Parser(
        prog="rooflinekit",
        description="Capacity, latency and cost planning for serving large language models.")
    # the installed distribution's version: the package face sits on a floor above this one
    parser.add_argument("--version", action="version",
                        version=f"rooflinekit {importlib.metadata.version('rooflinekit')}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for command in COMMANDS:
        p = sub.add_parser(command.NAME, help=command.HELP, description=command.DESCRIPTION,
                           epilog=command.EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        command.add_arguments(p)
        p.set_defaults(run=command.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rooflinekit`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    # the library's notices (a kernel compiling) go to stderr while a command runs
    notices = _Notices(args.command)
    logger = logging.getLogger("rooflinekit")
    level = logger.level
    logger.addHandler(notices)
    logger.setLevel(logging.DEBUG)
    try:
        with warnings.catch_warnings():      # restores the caller's handler on the way out
            warnings.showwarning = _warning_line(args.command)
            check_output(args)   # --output refused before any work (exists, an input, ...)
            apply_calibration(args)     # --calibration FILE: the command's --engine FILE
            return args.run(args, sys.stdout)
    except BrokenPipeError:
        # the reader (e.g. `| head`) went away: not an error of ours
        sys.stdout = open(os.devnull, "w")
        return 0
    except (ValueError, TypeError, KeyError, OSError, ImportError) as exc:
        # one line, whatever the message held, its control characters shown as escapes
        message = escape_text(" ".join(str(exc).split()))
        sys.stderr.write(f"rooflinekit {args.command}: error: {message}\n")
        return 2
    finally:
        logger.removeHandler(notices)
        logger.setLevel(level)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
