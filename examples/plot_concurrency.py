"""
Concurrency vs context: MHA, GQA and MQA (guide §2.3)
=====================================================

The same 70B-class model, on the same 8 × 80 GiB group, serves 22 concurrent 8k-token
conversations with multi-head attention, 183 with 8-way grouped-query attention and 1,467 with
multi-query attention. The only thing that changes is how many KV heads each layer caches.
"""

# %%
# Build the model and the GPU from the catalogue, and draw concurrency against context length.
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import rooflinekit as rk
from rooflinekit.plotting import plot_concurrency_vs_context

model = rk.catalog.model("guide-70b")
gpu = rk.catalog.gpu("guide-lab-80GB")
ax = plot_concurrency_vs_context(model, gpu, tp=8)

# %%
# The guide's three figures sit at 8,192 tokens.
for heads in (64, 8, 1):
    n = rk.max_concurrent_sequences(model.replace(n_kv_heads=heads), gpu, 8192, tp=8)
    print(f"{heads:>2} KV heads: {n:>5} sequences of 8,192 tokens")
ax.axvline(8192, color="grey", lw=0.8, ls=":")

# %%
# Save the figure.
out = Path(sys.argv[1] if len(sys.argv) > 1 else "examples/output")
out.mkdir(parents=True, exist_ok=True)
ax.figure.savefig(out / "concurrency.png", dpi=120)

# %%
# References
# ----------
# Serving-capacity guide §2.3; Ainslie et al., "GQA", 2023; Shazeer, "Fast Transformer Decoding:
# One Write-Head is All You Need", 2019.
