"""
Floor plus spillover: what each floor size costs (guide §6.4)
=============================================================

Size a dedicated floor to a quantile of hourly demand and spill everything above it to
pay-as-you-go. Sized to peak, the floor idles most of the month; sized to p10, most traffic rides
the shared pool (and its 429s); sized near p50 the floor stays busy and peaks turn into cost rather
than unavailability. Nothing is dropped at any size: the curve is cost, not availability.
"""

# %%
# The seeded bursty month of hourly demand that ``rooflinekit guide`` sizes (seed 0, so the
# numbers below are the guide's floor-sizing table): a daily cycle, noise and occasional 4×
# bursts, about 5B tokens in all. The guide's prices: capacity at $12,000 per 4B tokens ($3 per
# 1M of capacity) and spillover at $3/$12 per 1M with 10% output ($3.90 per 1M).
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import rooflinekit as rk
from rooflinekit.planning import bursty_demand
from rooflinekit.plotting import plot_spillover

demand = bursty_demand(seed=0)
provisioned = rk.Provisioned(monthly_cost=12_000, monthly_capacity_tokens=4e9)
payg = rk.PayAsYouGo(input_per_mtok=3.0, output_per_mtok=12.0)
print(f"demand: {float(demand.sum()) / 1e9:.2f}B tokens over {demand.sizes['time']} hours")

# %%
# The guide's three sizings and the cheapest floor, side by side.
table = rk.compare_floor_sizing(demand, payg, provisioned, output_fraction=0.1)
print(table[["quantile", "total_cost", "floor_utilization", "spilled_share"]]
      .to_dataframe().round(3).to_string())

# %%
# The cost of every floor quantile, with those four marked.
ax = plot_spillover(demand, payg, provisioned, output_fraction=0.1)
ax.set_ylabel("cost for the month [USD]")
ax.figure.set_size_inches(8.5, 5.5)

# %%
# Save the figure.
out = Path(sys.argv[1] if len(sys.argv) > 1 else "examples/output")
out.mkdir(parents=True, exist_ok=True)
ax.figure.savefig(out / "spillover.png", dpi=120)

# %%
# Where this differs from the guide
# ---------------------------------
# The guide gives the rule (size to p50) without a demand profile or a cost. On this profile the
# cheapest floor sits at the newsvendor quantile ``1 − u/p`` = 1 − 3.00/3.90 ≈ 23%, below p50:
# p50 is a sound default that keeps the floor busy, not the cost optimum, which moves with the
# ratio of the two prices. The floor here is priced linearly; real provisioned capacity comes in
# whole units.
#
# References
# ----------
# Serving-capacity guide §6.4; Arrow, Harris & Marschak, "Optimal inventory policy",
# Econometrica 19 (1951); Azure OpenAI provisioned throughput spillover documentation.
