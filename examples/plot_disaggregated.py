"""
Disaggregated prefill/decode: does splitting the pools serve a traffic with fewer GPUs?
=======================================================================================

Long prompts and short answers (~3,000-token prompts, ~150-token outputs) within p95 TTFT 1 s and
p95 ITL 25 ms, Llama-3.1-8B on H100s. An aggregated replica's decode gaps stall whenever a step
also prefills a long prompt; a disaggregated unit of x prefill and y decode replicas keeps
prefill out of the decode steps, at the price of moving each prompt's KV over the network and of
more GPUs per unit. Every split runs on the same draws as the aggregated replica (common random
numbers), so the bars compare systems, not traffic. The clock is the ideal roofline (a best
case); the pools form a tandem queue without backpressure.
"""

# %%
# The traffic, the SLO and every split of up to 4 GPUs, with the aggregated replica.
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import rooflinekit as rk
from rooflinekit.plotting import plot_disaggregated
from rooflinekit.workloads import LogNormal

traffic = rk.Traffic(10.0, LogNormal(3000, 0.4), LogNormal(150, 0.5))
slo = rk.SLO(ttft=1.0, itl=0.025, quantile=0.95)
ds = rk.plan_disaggregated(traffic, slo, model="Llama-3.1-8B", gpu="H100-SXM-80GB",
                           gpu_budget=4, replicates=3, requests=300)
table = ds.drop_dims("replicate").to_dataframe()
print(table[["gpus_per_unit", "max_rate", "rate_per_gpu", "binding", "gpus"]].round(2)
      .to_string())
print(f"fewest GPUs for {traffic.rate:g} requests/s: {ds.attrs['best_split']}")

# %%
# Max rate per GPU within the SLO, the fleet's GPUs and what binds on each bar.
fig, ax = plt.subplots(figsize=(8, 4.8), layout="constrained")
plot_disaggregated(ds, ax=ax)
fig.suptitle(f"{traffic.rate:g} requests/s of Llama-3.1-8B within p95 TTFT 1 s, ITL 25 ms "
             f"({ds.attrs['model_quality'].split(':')[0]})", fontsize="medium")

# %%
# Save the figure.
out = Path(sys.argv[1] if len(sys.argv) > 1 else "examples/output")
out.mkdir(parents=True, exist_ok=True)
fig.savefig(out / "disaggregated.png", dpi=110)

# %%
# What this leaves out
# --------------------
# Backpressure (a full decode pool does not hold prefill back), contention on the network link
# and layer-by-layer overlap of the KV transfer with prefill, prefix sharing in the decode pool,
# load-aware routing (requests go round-robin), and pools of different GPUs or TP degrees in the
# search (the simulator takes them: ``rooflinekit.batching.DisaggregatedBatcher``).
