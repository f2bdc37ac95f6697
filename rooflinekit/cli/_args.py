"""What the commands share: the names a command module defines, argument types, common flags."""

from __future__ import annotations

import argparse

__all__ = ["COMMAND_API", "FLAGS", "add_flag", "examples", "positive_int"]

#: The names every command module defines (and lists in its ``__all__``): its ``NAME``, the
#: one-line ``HELP`` of ``rooflinekit --help``, the ``DESCRIPTION`` and ``EPILOG`` (examples) of
#: its own ``--help``, ``add_arguments(parser)`` and ``run(args, out) -> int``.
COMMAND_API = ("DESCRIPTION", "EPILOG", "HELP", "NAME", "add_arguments", "run")


def examples(name: str, *commands: str) -> str:
    """An ``EPILOG``: each of ``commands`` as a run of ``rooflinekit name``, one a line.

    The command's own ``NAME`` starts every example, so an example cannot name another command.
    """
    return "examples:\n" + "\n".join(f"  rooflinekit {name} {command}" for command in commands)


def positive_int(text: str) -> int:
    """An ``argparse`` type: a whole number >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


#: Flags several commands take, with the same meaning in each: flag -> ``add_argument`` keywords.
#: A command may say more in its help (which runs ``--model`` names) or read a flag another way.
FLAGS = {
    "--json": {"action": "store_true", "help": "emit JSON instead of text"},
    "--model": {"help": "catalogue model name"},
    "--gpu": {"help": "catalogue GPU name"},
    "--tp": {"type": positive_int, "default": 1, "help": "tensor-parallel degree (1)"},
}


def add_flag(parser, flag: str, *, positional: bool = False, **changes) -> None:
    """Add the shared ``flag`` (a key of :data:`FLAGS`) to ``parser``.

    ``positional`` adds it as a positional argument of the same name (``model`` for
    ``--model``); ``changes`` replace keywords of the shared declaration (a longer ``help``).
    """
    name = flag.removeprefix("--") if positional else flag
    parser.add_argument(name, **{**FLAGS[flag], **changes})
