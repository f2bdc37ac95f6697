"""The ``rooflinekit`` command: one module per command; the library never imports this folder."""

from rooflinekit.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
