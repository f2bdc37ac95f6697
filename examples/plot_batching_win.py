"""
Continuous batching's win grows with output-length spread (guide §4.3)
======================================================================

The guide says the continuous-batching win "scales with output-length variance". We test it by
Monte Carlo: 256 requests arrive together with log-normal output lengths of mean 100 tokens, and we
sweep the log-space spread ``sigma`` from 0 (every request the same length: no win at all) to 3
(a few very long generations among many short ones). The win peaks near ``sigma`` = 1.25 and then
falls: once one very long request sets both makespans, neither policy can finish sooner. Each replicate draws one workload and runs it
through static batching and continuous batching with 16 slots each — the same draws for both
policies and for every ``sigma`` (common random numbers).
"""

# %%
# Run the Monte Carlo. ``parallel=False`` runs the replicates one after another, which for a
# run this small finishes sooner than compiling the parallel kernels.
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import rooflinekit as rk
from rooflinekit.plotting import plot_batching_win
from rooflinekit.workloads import LogNormal

spec = rk.WorkloadSpec(256, output=LogNormal(100, 0.5))
sigmas = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0]
mc = rk.monte_carlo(spec, {"static": rk.StaticBatcher(16), "continuous": rk.ContinuousBatcher(16)},
                    replicates=40, seed=20231, sweep={"output.sigma": sigmas}, parallel=False)
win = mc["makespan"].sel(policy="static") / mc["makespan"].sel(policy="continuous")
print(win.median("replicate").to_series().round(2).to_string())

# %%
# Draw the distribution of the win at each spread, on a numeric sigma axis (the steps are
# uneven: 0.25 apart up to 2, then 0.5).
ax = plot_batching_win(mc, "output.sigma", metric="makespan")
ax.set_xlabel("output-length spread: log-normal sigma (mean fixed at 100 tokens)")
ax.figure.set_size_inches(8, 5)

# %%
# Save the figure.
out = Path(sys.argv[1] if len(sys.argv) > 1 else "examples/output")
out.mkdir(parents=True, exist_ok=True)
ax.figure.savefig(out / "batching_win.png", dpi=120)

# %%
# Where this differs from the guide
# ---------------------------------
# The guide states the scaling in words and measures one workload (2.8×, §4.3); it shows no
# distribution, and "scales with variance" holds only up to the peak: past it the makespan win
# falls (the guide's own batching table shows the same, with 8 slots). Here the requests all arrive at once and have no prompt (the guide's lab ignores
# prefill), so the win is purely the static batch waiting for its longest member.
#
# References
# ----------
# Serving-capacity guide §4.2–4.3 and §9; Yu et al., "Orca", OSDI 2022; Kwon et al.,
# "Efficient Memory Management for Large Language Model Serving with PagedAttention", SOSP 2023.
