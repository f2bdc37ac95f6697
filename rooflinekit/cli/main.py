"""The ``rooflinekit`` command: the parser, built from one module per command, and the entry point.

Each command is a module of this folder with ``NAME``, ``HELP``, ``DESCRIPTION``, ``EPILOG``,
``add_arguments(parser)`` and ``run(args, out) -> int``. Errors from bad input are one line on
stderr and exit status 2; never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys

from rooflinekit.cli import calibrate, capacity, catalog, guide, plan, price, simulate, sweep

__all__ = ["COMMANDS", "build_parser", "main"]

#: The commands, in the order ``rooflinekit --help`` lists them.
COMMANDS = (guide, catalog, capacity, price, simulate, sweep, plan, calibrate)


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (the usage is one ``--help`` away)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``rooflinekit`` parser, one subcommand per module of :data:`COMMANDS`."""
    parser = _Parser(
        prog="rooflinekit",
        description="Capacity, latency and cost planning for serving large language models.")
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
    try:
        return args.run(args, sys.stdout)
    except BrokenPipeError:
        # the reader (e.g. `| head`) went away: not an error of ours
        sys.stdout = open(os.devnull, "w")
        return 0
    except (ValueError, TypeError, KeyError, OSError, ImportError) as exc:
        sys.stderr.write(f"rooflinekit {args.command}: error: {exc}\n")
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
