"""What a new user's first commands cost: each command's first run (empty kernel cache) and its
second, as ratios against ``python -c "import rooflinekit"`` timed in the same run.

    python benchmarks/first_run.py [--python PATH] [--repeat N] [--commands guide,plan]

``--python`` is the interpreter of a fresh virtual environment with rooflinekit installed
(default this one); each first run gets an empty numba cache of its own (``NUMBA_CACHE_DIR``
in a new temporary folder), each second run the cache its first run filled. Besides the wall
time the script reports each run's longest silence: the longest stretch with nothing new on
stdout or stderr, from the start to the end of the process (a command that compiles says so
before it does). The commands are the README's. The table is printed in Markdown for
BENCHMARKS.md; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import selectors
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: The README's first commands, by name: the arguments of ``python -m rooflinekit.cli``.
COMMANDS = {
    "guide": ["guide"],
    "plan": ["plan", "llama-3.1-8b", "--gpus", "h100,l40s", "--tp", "1,2", "--rate", "5",
             "--prompt-mean", "1000", "--output-mean", "200", "--ttft", "1", "--itl", "0.05",
             "--replicates", "4", "--requests", "200"],
    "simulate": ["simulate", "--workload", "lognormal", "--spread", "1.5"],
    "disaggregated": ["disaggregated", "llama-3.1-8b", "--gpu", "h100", "--gpu-budget", "3",
                      "--rate", "5", "--prompt-mean", "1000", "--output-mean", "200",
                      "--ttft", "1", "--itl", "0.05", "--replicates", "2", "--requests", "100"],
}


def timed(argv: list, env: dict) -> tuple[float, float]:
    """Wall time [s] and longest silence [s] of one process, its output read as it comes.

    It runs in an empty folder, so that ``python -m`` imports the interpreter's installed
    package, not a checkout that happens to be the working directory.
    """
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        return _timed(argv, env, folder, start)


def _timed(argv, env, folder, start):
    process = subprocess.Popen(argv, env=env, cwd=folder, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    selector = selectors.DefaultSelector()
    for stream in (process.stdout, process.stderr):
        selector.register(stream, selectors.EVENT_READ)
    last, silence, open_streams = start, 0.0, 2
    while open_streams:
        for key, _ in selector.select():
            chunk = os.read(key.fileobj.fileno(), 65536)
            now = time.perf_counter()
            if not chunk:
                selector.unregister(key.fileobj)
                open_streams -= 1
                continue
            silence, last = max(silence, now - last), now
    code = process.wait()
    end = time.perf_counter()
    if code != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {code}")
    return end - start, max(silence, end - last)


def measure(python: str, names: list, repeat: int) -> list:
    """Rows of (label, first, first silence, second, second silence), best of ``repeat``."""
    base_env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    rows = []
    baseline = min(timed([python, "-c", "import rooflinekit"], base_env)[0]
                   for _ in range(repeat))
    rows.append(("python -c \"import rooflinekit\"", baseline, None, None, None))
    for name in names:
        firsts, seconds = [], []
        for _ in range(repeat):
            with tempfile.TemporaryDirectory() as cache:
                env = dict(base_env, NUMBA_CACHE_DIR=cache)
                argv = [python, "-m", "rooflinekit.cli", *COMMANDS[name]]
                firsts.append(timed(argv, env))
                seconds.append(timed(argv, env))
        first, second = min(firsts), min(seconds)
        rows.append((f"rooflinekit {name}", first[0], first[1], second[0], second[1]))
    return rows


def table(rows: list) -> str:
    baseline = rows[0][1]
    lines = ["| command | first run | longest silence | ÷ import | second run | ÷ import |",
             "|---|---:|---:|---:|---:|---:|",
             f"| {rows[0][0]} | {baseline:.2f} s | | 1.0 | | |"]
    for label, first, quiet, second, quiet2 in rows[1:]:
        lines.append(f"| `{label}` | {first:.1f} s | {quiet:.1f} s | {first / baseline:.1f} | "
                     f"{second:.2f} s | {second / baseline:.1f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter with rooflinekit installed (default: this one)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each; the best counts")
    parser.add_argument("--commands", default=",".join(COMMANDS),
                        help=f"comma-separated, of {', '.join(COMMANDS)}")
    args = parser.parse_args(argv)
    names = [n for n in args.commands.split(",") if n]
    unknown = [n for n in names if n not in COMMANDS]
    if unknown or args.repeat < 1:
        parser.error(f"unknown command {unknown[0]!r}" if unknown else "--repeat must be >= 1")
    print(table(measure(str(Path(args.python)), names, args.repeat)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
