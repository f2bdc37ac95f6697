"""
Prefix caching: concurrency and TTFT against the shared prefix
==============================================================

Many requests start with the same tokens: a system prompt, a document, earlier turns. A prefix
cache holds those tokens' KV once (in whole blocks) and a new request reads them instead of
computing them. Two things improve with the shared share of each prompt: more sequences fit in
the KV budget, and the prefill — the first part of TTFT — shrinks toward a single decode step.
"""

# %%
# A 70B model on four H100s, 16k-token conversations.
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import rooflinekit as rk
from rooflinekit.plotting import plot_prefix_caching

model = rk.catalog.model("Llama-3.1-70B")
gpu = rk.catalog.gpu("H100-SXM-80GB")
ax = plot_prefix_caching(model, gpu, tp=4, context_length=16384)

# %%
# The numbers behind three of the points.
for share in (0.0, 0.5, 0.9):
    shared = int(share * 16384)
    n = rk.max_concurrent_sequences(model, gpu, 16384, tp=4, shared_prefix_tokens=shared)
    ttft = rk.prefill_time(model, gpu, 16384, 4, cached_tokens=shared)
    print(f"share {share:.0%}: {n:>4} sequences, prefill {ttft * 1e3:7.1f} ms")

# %%
# Save the figure.
out = Path(sys.argv[1] if len(sys.argv) > 1 else "examples/output")
out.mkdir(parents=True, exist_ok=True)
ax.figure.savefig(out / "prefix_caching.png", dpi=120)

# %%
# References
# ----------
# Kwon et al., "Efficient Memory Management for Large Language Model Serving with
# PagedAttention", SOSP 2023 (block-level prefix sharing); vLLM automatic prefix caching.
#
# What is modelled
# ----------------
# Every sequence shares the same prefix and every request hits it; the cache's own eviction
# and the time to write a prefix the first time are not modelled.
