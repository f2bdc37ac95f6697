"""
Capacity under load: how many GPUs a traffic needs within its SLO, and how to buy them
=======================================================================================

A planner's question: peak 8 requests/s, ~1,500-token prompts and ~250-token outputs (log-normal),
p95 TTFT under 0.5 s and p95 ITL under 25 ms, Llama-3.1-8B. Which GPU and TP, how many replicas,
what per month, and is pay-as-you-go or self-hosting cheaper at that volume? The plan searches the
highest rate one replica sustains within the SLO (Monte Carlo over seeds, on common random
numbers); the curves show why that rate is where it is; the bars set the cheapest fleet beside
paying per token. The model is the ideal roofline (a best case) unless a calibration is given.
"""

# %%
# The traffic, the SLO and the grid: 2 GPUs × 2 TP degrees × 2 batch limits, 6 replicates.
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import rooflinekit as rk
from rooflinekit.plotting import plot_decision, plot_load_curves
from rooflinekit.workloads import LogNormal

traffic = rk.Traffic(8.0, LogNormal(1500, 0.5), LogNormal(250, 0.7))
slo = rk.SLO(ttft=0.5, itl=0.025, quantile=0.95)
plan = rk.plan(traffic, slo, models="Llama-3.1-8B", gpus=["L40S", "H100-SXM-80GB"], tp=[1, 2],
               max_num_seqs=[32, 128], replicates=6, requests=400)
table = plan.sel(model="Llama-3.1-8B").drop_dims("replicate").to_dataframe()
print(table[["max_rate", "binding", "replicas", "gpus", "monthly_cost"]].round(2).to_string())

# %%
# The cheapest fleet, and the decision against the guide's pay-as-you-go prices ($3/$12 per 1M).
best = rk.cheapest_plan(plan, by=None)
decision = rk.decision_table(best, traffic, payg=rk.PayAsYouGo(3.0, 12.0))
print(f"cheapest fleet: {int(best['gpus'])} × {best['gpu'].values} (TP {int(best['tp'])}, "
      f"max_num_seqs {int(best['max_num_seqs'])}) at ${float(best['monthly_cost']):,.0f}/month; "
      f"choice: {decision['choice'].values}")

# %%
# p95 TTFT and ITL against the rate per replica for the cheapest configuration of each GPU, with
# the SLO lines: the plan's max rate is where the first curve crosses its line.
curves = {}
for gpu in plan["gpu"].values:
    per_gpu = rk.cheapest_plan(plan.sel(gpu=[gpu]), by=None)
    top = float(per_gpu["saturation_rate"])
    curves[f"{gpu}, TP {int(per_gpu['tp'])}, {int(per_gpu['max_num_seqs'])} seqs"] = \
        rk.planning.load_curve(traffic, slo, model="Llama-3.1-8B", gpu=str(gpu),
                               tp=int(per_gpu["tp"]), max_num_seqs=int(per_gpu["max_num_seqs"]),
                               rates=[top * f for f in (0.2, 0.4, 0.6, 0.8, 0.9, 1.0)],
                               replicates=4, requests=300)
fig, (ax_ttft, ax_itl, ax_cost) = plt.subplots(1, 3, figsize=(15, 4.5), layout="constrained")
plot_load_curves(curves, slo, metric="ttft", ax=ax_ttft)
plot_load_curves(curves, slo, metric="itl", ax=ax_itl)
plot_decision(decision.squeeze(drop=True), ax=ax_cost)
fig.suptitle(f"{traffic.rate:g} requests/s of Llama-3.1-8B within p95 TTFT 0.5 s, ITL 25 ms "
             f"({plan.attrs['model_quality'].split(':')[0]})", fontsize="medium")

# %%
# Save the figure.
out = Path(sys.argv[1] if len(sys.argv) > 1 else "examples/output")
out.mkdir(parents=True, exist_ok=True)
fig.savefig(out / "capacity_under_load.png", dpi=110)

# %%
# What this leaves out
# --------------------
# The roofline clock is ideal: full compute and bandwidth efficiency and no scheduler overhead, so
# the rates are upper bounds until an engine or a calibration is passed (``engine=``). A run
# starts from an empty system, which flatters short runs; more ``requests`` shrink that. The
# fleet is whole replicas of one tensor-parallel layout (pipeline stages are not simulated);
# separate prefill and decode pools are compared by ``rk.plan_disaggregated``.
