"""
Speculative decoding: speed-up against batch size and acceptance
================================================================

A small draft model proposes k tokens; the target verifies all of them in one pass. While decode
is memory-bound that pass costs about one step, so the tokens accepted come almost free. As the
batch grows decode becomes compute-bound, verification costs up to k + 1 steps, and below the
dashed line (speed-up = 1) speculation costs more than it gains.
"""

# %%
# Llama-3.1-70B on four H100s, drafted by Llama-3.1-8B four tokens at a time.
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np

import rooflinekit as rk
from rooflinekit.plotting import plot_speculative_speedup

model = rk.catalog.model("Llama-3.1-70B")
gpu = rk.catalog.gpu("H100-SXM-80GB")
draft = rk.catalog.model("Llama-3.1-8B")
ax = plot_speculative_speedup(model, gpu, tp=4, draft=draft, draft_tokens=4,
                              acceptances=[0.5, 0.7, 0.8, 0.9])

# %%
# Where it stops paying, and what a million output tokens cost with and without it.
batches = np.array([1, 16, 64, 256])
for alpha in (0.7, 0.9):
    speedup = rk.speculative_speedup(model, gpu, batches, 4096, 4, draft=draft, draft_tokens=4,
                                     acceptance=alpha)
    print(f"alpha {alpha}: speed-up {np.round(speedup, 2)} at batch {batches}")
plain = rk.cost_per_million_tokens(model, gpu, batches, 4096, 4)
spec = rk.speculative_cost_per_million_tokens(model, gpu, batches, 4096, 4, draft=draft,
                                              draft_tokens=4, acceptance=0.8)
print(f"USD per 1M output tokens: plain {np.round(plain, 2)}, speculative {np.round(spec, 2)}")

# %%
# Save the figure.
out = Path(sys.argv[1] if len(sys.argv) > 1 else "examples/output")
out.mkdir(parents=True, exist_ok=True)
ax.figure.savefig(out / "speculative_speedup.png", dpi=120)

# %%
# References
# ----------
# Leviathan, Kalman & Matias, "Fast Inference from Transformers via Speculative Decoding",
# ICML 2023; Chen et al., "Accelerating Large Language Model Decoding with Speculative Sampling",
# 2023.
#
# What is modelled
# ----------------
# Acceptance is one probability per drafted token, independent of position; the draft runs on
# the same GPUs, one decode step per drafted token; its weights come off the KV budget (the
# cost is inf where the batch no longer fits).
