"""The planner question, side by side in one run: rooflinekit vs AIConfigurator's `recommend`.

Run from the repository root with rooflinekit's environment; AIConfigurator runs in its own
virtual environment (``pip install aiconfigurator==0.12.0``; offline, on the CPU)::

    python benchmarks/peer/plan_vs_aiconfigurator.py --peer /tmp/aic-venv/bin/aiconfigurator

Both are timed as whole commands in a fresh process (imports, kernel caches and all), best of
``--repeat``: ours answers the question of ``benchmarks/planning.py`` (2 GPU types × 4 TP × 3
max_num_seqs × 20 replicates, with costs and the buying decision); AIConfigurator answers the
GPU-count half for one GPU type (H200 SXM, vLLM backend, its bundled Llama-3.1-70B config).
Prints a table and a JSON line.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

OURS = ("import sys; sys.path.insert(0, 'benchmarks'); import planning; "
        "ds, best, table = planning.plan_question(); "
        "print(best['gpu'].values, int(best['tp']), int(best['replicas']), int(best['gpus']))")


def _peer_command(peer, save_dir):
    return [peer, "cli", "recommend", "--model-path", "meta-llama/Meta-Llama-3.1-70B",
            "--system", "h200_sxm", "--backend", "vllm", "--target-request-rate", "20",
            "--isl", "2000", "--osl", "300", "--ttft", "1000", "--tpot", "50",
            "--save-dir", save_dir]


def _best_of(command, repeat, **kwargs):
    times, out = [], ""
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=True, **kwargs)
        times.append(time.perf_counter() - start)
        out = done.stdout + done.stderr
    return min(times), out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", default="/tmp/aic-venv/bin/aiconfigurator",
                        help="the aiconfigurator command of its own virtual environment")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    ours, answer = _best_of([sys.executable, "-c", OURS], args.repeat, cwd=ROOT)
    with tempfile.TemporaryDirectory() as save_dir:
        peer, log = _best_of(_peer_command(args.peer, save_dir), args.repeat)
    gpus = [line.strip() for line in log.splitlines() if "GPUs needed" in line]
    print(f"rooflinekit plan (2 GPU types, 24 configurations, 20 replicates): {ours:.2f} s  "
          f"-> {answer.strip()}")
    print(f"aiconfigurator recommend (1 GPU type): {peer:.2f} s  -> {'; '.join(gpus)}")
    print(f"ratio: {peer / ours:.1f}x")
    print(json.dumps({"rooflinekit_s": ours, "aiconfigurator_s": peer, "ratio": peer / ours}))


if __name__ == "__main__":
    main()
