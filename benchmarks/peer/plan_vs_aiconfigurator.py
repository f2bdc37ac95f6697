"""The planner question, side by side in one run: rooflinekit vs AIConfigurator's `recommend`.

Run from the repository root with rooflinekit's environment; AIConfigurator runs in its own
virtual environment (``pip install aiconfigurator==0.12.0``; offline, on the CPU)::

    python benchmarks/peer/plan_vs_aiconfigurator.py --peer /tmp/aic-venv/bin/aiconfigurator

Two timings, best of ``--repeat`` each: as whole commands in a fresh process (imports, kernel
caches and all), and in process, each planner called again after a first call in the same
process (what a notebook or a service pays per question; each runs in its own environment's
interpreter). Ours answers the question of ``benchmarks/planning.py`` (2 GPU types × 4 TP × 3
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


#: AIConfigurator's arguments for the question (its --save-dir is added per run).
PEER_ARGS = ["cli", "recommend", "--model-path", "meta-llama/Meta-Llama-3.1-70B",
             "--system", "h200_sxm", "--backend", "vllm", "--target-request-rate", "20",
             "--isl", "2000", "--osl", "300", "--ttft", "1000", "--tpot", "50"]

#: In process: a first call (imports, caches), then ``repeat`` timed calls; prints the best [s].
OURS_IN_PROCESS = ("import sys, time; sys.path.insert(0, 'benchmarks'); import planning; "
                   "planning.plan_question(); times = []\n"
                   "for _ in range({repeat}):\n"
                   "    t = time.perf_counter(); planning.plan_question(); "
                   "times.append(time.perf_counter() - t)\n"
                   "print(min(times))")
PEER_IN_PROCESS = ("import sys, tempfile, time; from aiconfigurator import main as m; "
                   "args = {args!r}; times = []\n"
                   "for i in range({repeat} + 1):\n"
                   "    d = tempfile.mkdtemp(); t = time.perf_counter(); "
                   "m.main(args + ['--save-dir', d]); "
                   "times.append(time.perf_counter() - t)\n"
                   "print(min(times[1:]), file=sys.stderr)")


def _peer_command(peer, save_dir):
    return [peer, *PEER_ARGS, "--save-dir", save_dir]


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
    # in process: each planner's own interpreter (the peer's sits beside its command)
    peer_python = os.path.join(os.path.dirname(args.peer), "python")
    warm = subprocess.run([sys.executable, "-c", OURS_IN_PROCESS.format(repeat=args.repeat)],
                          capture_output=True, text=True, check=True, cwd=ROOT)
    ours_warm = float(warm.stdout.split()[-1])
    warm = subprocess.run([peer_python, "-c", PEER_IN_PROCESS.format(args=PEER_ARGS,
                                                                     repeat=args.repeat)],
                          capture_output=True, text=True, check=True)
    peer_warm = float(warm.stderr.split()[-1])
    print(f"rooflinekit plan (2 GPU types, 24 configurations, 20 replicates): {ours:.2f} s  "
          f"-> {answer.strip()}")
    print(f"aiconfigurator recommend (1 GPU type): {peer:.2f} s  -> {'; '.join(gpus)}")
    print(f"ratio, whole commands: {peer / ours:.1f}x")
    print(f"in process, after a first call: rooflinekit {ours_warm:.2f} s, aiconfigurator "
          f"{peer_warm:.2f} s, ratio {peer_warm / ours_warm:.1f}x")
    print(json.dumps({"rooflinekit_s": ours, "aiconfigurator_s": peer, "ratio": peer / ours,
                      "rooflinekit_in_process_s": ours_warm,
                      "aiconfigurator_in_process_s": peer_warm,
                      "ratio_in_process": peer_warm / ours_warm}))


if __name__ == "__main__":
    main()
