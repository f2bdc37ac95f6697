"""asv benchmarks for capacity under load: the planner question end to end.

"Peak 20 requests/s, ~2,000-token prompts and ~300-token outputs (log-normal), p95 TTFT under 1 s
and p95 ITL under 50 ms, Llama-3.1-70B: which GPU and TP, how many replicas?" over 2 GPUs × 4 TP
× 3 max_num_seqs × 20 replicates (``benchmarks/peer/plan_vs_aiconfigurator.py`` times the same
question against AIConfigurator in one run).
"""

import rooflinekit as rk
from rooflinekit.workloads import LogNormal

QUESTION = {
    "traffic": rk.Traffic(20.0, LogNormal(2000, 0.5), LogNormal(300, 0.5)),
    "slo": rk.SLO(ttft=1.0, itl=0.05, quantile=0.95),
    "grid": {"models": "Llama-3.1-70B", "gpus": ["H100-SXM-80GB", "H200-SXM-141GB"],
             "tp": [1, 2, 4, 8], "max_num_seqs": [64, 128, 256]},
}


#: A draft head of 5 % of the target's decode step drafting 4 tokens, each accepted with 0.8.
DRAFT_HEAD = rk.Speculative(draft=0.05, draft_tokens=4, acceptance=0.8)


def plan_question(replicates=20, requests=1000, speculative=None, engine_draws=None,
                  max_num_batched_tokens="search"):
    """The planner question above, answered: the plan, its cheapest configuration, the decision
    (timed by the vLLM profiles, their knobs drawn ``engine_draws`` times: default 4, 0 none;
    the chunk budget searched by default, ``"auto"`` the engine's own)."""
    ds = rk.plan(QUESTION["traffic"], QUESTION["slo"], replicates=replicates, requests=requests,
                 speculative=speculative, engine_draws=engine_draws,
                 max_num_batched_tokens=max_num_batched_tokens, **QUESTION["grid"])
    best = rk.cheapest_plan(ds, by=None)
    table = rk.decision_table(best, QUESTION["traffic"], payg=rk.PayAsYouGo(3.0, 12.0))
    return ds, best, table


class PlanUnderLoad:
    """The whole question; ``replicates`` 20 is the benchmark, 2 a quick look."""

    params = [2, 20]
    param_names = ["replicates"]
    timeout = 300

    def setup(self, replicates):
        plan_question(replicates=1, requests=50)       # numba kernels loaded or compiled

    def time_plan(self, replicates):
        plan_question(replicates=replicates)

    def peakmem_plan(self, replicates):
        plan_question(replicates=replicates)


class PlanWithProfileUncertainty:
    """The whole question at 20 replicates with the profile's knobs drawn 0 or 4 times: the
    cost of bands that hold model uncertainty (at most 2× the fitted knobs' time)."""

    params = [0, 4]
    param_names = ["engine_draws"]
    timeout = 300

    def setup(self, engine_draws):
        plan_question(replicates=1, requests=50, engine_draws=0)

    def time_plan(self, engine_draws):
        plan_question(engine_draws=engine_draws)


class PlanChunkSearch:
    """The whole question at 20 replicates with the chunk budget searched (the default: each
    configuration tries 512 to 16,384 tokens, those at least its max_num_seqs) or the
    engine's own ("auto"): the cost of the search."""

    params = ["auto", "search"]
    param_names = ["max_num_batched_tokens"]
    timeout = 300

    def setup(self, max_num_batched_tokens):
        plan_question(replicates=1, requests=50, max_num_batched_tokens="auto")

    def time_plan(self, max_num_batched_tokens):
        plan_question(max_num_batched_tokens=max_num_batched_tokens)


class SpeculativePlanUnderLoad:
    """The same question with speculative decoding (:data:`DRAFT_HEAD`): every configuration's
    search reads acceptance draws made once per plan."""

    params = [2, 20]
    param_names = ["replicates"]
    timeout = 300

    def setup(self, replicates):
        plan_question(replicates=1, requests=50, speculative=DRAFT_HEAD)

    def time_plan(self, replicates):
        plan_question(replicates=replicates, speculative=DRAFT_HEAD)
