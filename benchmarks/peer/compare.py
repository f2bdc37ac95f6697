"""Side-by-side configurations per second on the 1,152-cell grid: rooflinekit vs llm-analysis.

Run from the repository root with rooflinekit's environment; the peer runs in its own virtual
environment, as a subprocess, in the same run (see README.md)::

    python benchmarks/peer/compare.py --peer-python /tmp/peer-venv/bin/python

Prints a table and a JSON line: our sweep (every variable, in memory), our plain Python loop over
the scalar functions (300 sampled configurations, per configuration), and llm-analysis's `infer`
once per configuration. Each figure is the best of ``--repeat`` runs.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))            # benchmarks/, for sweep.py's grid

import sweep as bench                                  # noqa: E402  (benchmarks/sweep.py)
from rooflinekit import sweep as sw                    # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-python", default="/tmp/peer-venv/bin/python",
                        help="python of the virtual environment holding llm-analysis")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    kw = bench.grid(1_152)
    cells = sw.sweep_cells(sw.sweep(**kw))
    ours = bench._best_of(lambda: sw.sweep(**kw), args.repeat)
    sample = bench.scalar_sample(kw, 300)
    loop = bench._best_of(lambda: [bench.scalar_configuration(*c) for c in sample],
                          max(1, args.repeat // 2)) / len(sample)
    peer = json.loads(subprocess.run(
        [args.peer_python, os.path.join(HERE, "llm_analysis_grid.py"), str(args.repeat)],
        check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
    rows = [
        ("rooflinekit sweep (all variables)", cells / ours),
        ("rooflinekit scalar loop", 1.0 / loop),
        ("llm-analysis infer", peer["configs_per_second"]),
    ]
    print("1,152-cell grid")
    print(f"{'':36s} {'configs/s':>12s} {'vs llm-analysis':>16s}")
    for what, rate in rows:
        print(f"{what:36s} {rate:12,.0f} {rate / peer['configs_per_second']:15.1f}x")
    print(json.dumps({"cells": cells, "sweep_seconds": ours, "loop_seconds_per_config": loop,
                      "peer": peer}))


if __name__ == "__main__":
    main()
