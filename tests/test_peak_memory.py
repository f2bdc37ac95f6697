"""No run exceeds its documented memory limit by more than 2× (issue 31): with the limit
lowered, the largest run the check lets through is measured by its peak resident set (a fresh
process each, ``resource.getrusage``'s ``ru_maxrss``, the growth over the process's peak before
the run), and the next size up is refused before any work."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

resource = pytest.importorskip("resource")

ROOT = Path(__file__).parents[1]
MIB = 2**20

#: A sweep just under a 96 MiB limit, measured in a process of its own.
SWEEP = r"""
import json, resource, sys
import numpy as np
import rooflinekit as rk
from rooflinekit.sweep import sweep
limit = float(sys.argv[1])
batches = list(range(1, int(sys.argv[2]) + 1))
kwargs = dict(models=["Llama-3.1-8B", "Llama-3.1-70B"], gpus=["H100-SXM-80GB", "A100-SXM-80GB"],
              tp=[1, 2, 4, 8], context_length=list(range(256, 256 * 65, 256)),
              batch_size=batches, engine="ideal", memory_limit=limit)
sweep(**{**kwargs, "batch_size": [1], "context_length": [256]})     # warm: imports, caches
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
try:
    ds = sweep(**kwargs)
    float(ds["tokens_per_second_per_gpu"].max())
    refused = ""
except ValueError as exc:
    refused = str(exc)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"growth": after - before, "refused": refused}))
"""


def _run(script, *args):
    out = subprocess.run([sys.executable, "-c", script, *map(str, args)], capture_output=True,
                         text=True, cwd=ROOT, timeout=600,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_sweep_under_a_lowered_limit_stays_within_twice_it():
    limit = 96 * MIB
    # find the largest accepted size by the package's own check, then measure that run
    accepted, refused_at = None, None
    n = 8
    while n <= 4096:
        got = _run(SWEEP, limit, n)
        if got["refused"]:
            refused_at = n
            assert "above memory_limit" in got["refused"]
            break
        accepted = (n, got["growth"])
        n *= 2
    assert accepted is not None and refused_at is not None
    lo, hi = accepted[0], refused_at            # close in on the largest size let through
    while hi - lo > max(1, lo // 16):
        mid = (lo + hi) // 2
        got = _run(SWEEP, limit, mid)
        if got["refused"]:
            hi = mid
        else:
            lo, accepted = mid, (mid, got["growth"])
    n, growth = accepted
    print(f"{n} batch sizes (largest accepted under {limit / MIB:.0f} MiB): peak grew "
          f"{growth / MIB:.1f} MiB")
    assert growth <= 2 * limit, f"{n} batch sizes grew the peak by {growth / MIB:.0f} MiB"


#: The largest simulation a 32 MiB limit lets through, and one request more, in one process.
RUN = r"""
import json, resource, sys
import numpy as np
import rooflinekit as rk
from rooflinekit.batching import ContinuousBatcher, run_memory_bytes
limit = float(sys.argv[1])
batcher = ContinuousBatcher(max_num_seqs=64, admission="paged", kv_budget_tokens=10**7)
n = 1
while run_memory_bytes(2 * n, block_size=16) <= limit:
    n *= 2
while run_memory_bytes(n + 1, block_size=16) <= limit:   # the largest n the check lets through
    step = 1
    while run_memory_bytes(n + 2 * step, block_size=16) <= limit:
        step *= 2
    n += step
rng = np.random.default_rng(0)
def arrays(k):
    return dict(arrival=np.sort(rng.uniform(0, k / 50.0, k)),
                prompt_tokens=rng.integers(1, 200, k), output_tokens=rng.integers(1, 50, k))
batcher.run(**arrays(100), memory_limit=limit)                      # warm: kernel loaded
work = arrays(n)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
batcher.run(**work, memory_limit=limit)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
try:
    batcher.run(**arrays(n + 1), memory_limit=limit)
    refused = ""
except ValueError as exc:
    refused = str(exc)
print(json.dumps({"n": n, "growth": after - before, "refused": refused}))
"""


@pytest.mark.slow
def test_a_simulation_under_a_lowered_limit_stays_within_twice_it():
    limit = 32 * MIB
    got = _run(RUN, limit)
    assert got["refused"] and "memory_limit" in got["refused"]
    print(f"{got['n']} requests (largest accepted under {limit / MIB:.0f} MiB): peak grew "
          f"{got['growth'] / MIB:.1f} MiB")
    assert got["growth"] <= 2 * limit
