"""
Layouts: tensor, pipeline and expert parallelism and replicas on 16 GPUs (guide §5)
===================================================================================

"TP within a node and DP across nodes is the common shape." On 16 GPUs a 70B model can take ten
layouts: tensor-parallel groups of 1 to 8 GPUs, pipeline stages, and as many replicas as the
GPUs leave. Each trades the inter-token latency one sequence sees against the tokens/s the
fleet makes per GPU; some do not hold the weights, or not the batch's KV.
"""

# %%
# Llama-3.1-70B (bf16, 141 GB of weights) on 16 H100s, 32 sequences of 4,096 tokens per replica.
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import rooflinekit as rk
from rooflinekit.plotting import plot_layouts

model = rk.catalog.model("Llama-3.1-70B")
gpu = rk.catalog.gpu("H100-SXM-80GB")
table = rk.layouts(model, gpu, 16, batch_size=32, context_length=4096)
print(table[["fits", "decode_step_time", "tokens_per_second_per_gpu"]].to_dataframe()
      .round(4).to_string())

# %%
# ITL against tokens/s per GPU, one point per layout.
ax = plot_layouts(model, gpu, 16, batch_size=32, context_length=4096)
ax.figure.set_size_inches(8.5, 5.5)

# %%
# Save the figure.
out = Path(sys.argv[1] if len(sys.argv) > 1 else "examples/output")
out.mkdir(parents=True, exist_ok=True)
ax.figure.savefig(out / "layouts.png", dpi=120)

# %%
# What the figure leaves out
# --------------------------
# Tensor parallelism stays within a node (``max_tp=8``), on the catalogue's NVLink figures; pipeline
# stages hand activations over the inter-node network. Stages are equal (the embedding and LM head
# are spread with the layers), micro-batches keep every stage busy, and the replicas share traffic
# evenly. Queueing, chunked prefill and the KV a prompt takes while it waits are the simulator's
# business (``rooflinekit plan``).
