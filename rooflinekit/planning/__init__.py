"""Capacity plans: traffic and SLOs, capacity under load, fleets and their cost, the decision.

- :mod:`~rooflinekit.planning.traffic`: :class:`Traffic` (peak rate, request lengths, arrivals,
  monthly profile) and :class:`SLO` (latency targets at a percentile).
- :mod:`~rooflinekit.planning.capacity`: the highest rate one replica sustains within an SLO,
  searched on common random numbers (:func:`max_rate`);
- :mod:`~rooflinekit.planning.fleet`: :func:`plan`, that search over a grid of configurations, with
  the fleet it implies and its monthly cost;
- :mod:`~rooflinekit.planning.decision`: :func:`cheapest_plan` and :func:`decision_table`
  (self-hosted fleet, pay-as-you-go, provisioned, provisioned + spillover; the §7 gates);
- :mod:`~rooflinekit.planning.deployment`: :func:`launch_commands`, the ``vllm serve`` /
  SGLang commands of a planned replica and the ``vllm bench serve`` that checks it;
- :mod:`~rooflinekit.planning.disaggregated`: :func:`plan_disaggregated`, the best prefill/decode
  split (xPyD) for a traffic against aggregated replicas;
- :mod:`~rooflinekit.planning.spillover`: a dedicated floor plus pay-as-you-go spillover, and
  self-hosting volumes (guide §6.4–6.5); the guide's worked figures are in
  :mod:`rooflinekit.guide`.
"""

from rooflinekit.planning.capacity import (BINDINGS, LOWEST_RATE_FRACTION, draw_requests, max_rate,
                                          prefixes, speculative_rows)
from rooflinekit.planning.decision import (
    PAY_AS_YOU_GO,
    PROVISIONED,
    PROVISIONED_SPILLOVER,
    SELF_HOSTED,
    SELF_HOSTED_AUTOSCALED,
    cheapest_plan,
    decision_table,
)
from rooflinekit.planning.deployment import launch_commands
from rooflinekit.planning.disaggregated import AGGREGATED, MAX_SPLITS, SPLIT, plan_disaggregated
from rooflinekit.planning.fleet import (IDEAL, LATENCY_PERCENTILES, PLAN_MEMORY_LIMIT, PLAN_WORK_LIMIT,
                                       check_plan_size, estimate_work, load_curve, plan)
from rooflinekit.planning.load_fit import LOAD_KNOBS, LoadFit, fit_under_load
from rooflinekit.planning.spillover import (
    TIME,
    bursty_demand,
    compare_floor_sizing,
    optimal_floor,
    plan_with_spillover,
    self_hosting_comparison,
)
from rooflinekit.planning.traffic import ARRIVALS, MIN_RATE, SECONDS_PER_MONTH, SLO, Traffic
from rooflinekit.planning.traffic import PROFILE_SHAPES, month_profile, read_profile

__all__ = [
    "Traffic", "SLO", "ARRIVALS", "SECONDS_PER_MONTH", "MIN_RATE",
    "plan", "load_curve", "fit_under_load", "LoadFit", "LOAD_KNOBS", "estimate_work", "check_plan_size", "PLAN_WORK_LIMIT", "PLAN_MEMORY_LIMIT", "IDEAL", "LATENCY_PERCENTILES",
    "plan_disaggregated", "AGGREGATED", "SPLIT", "MAX_SPLITS",
    "max_rate", "draw_requests", "prefixes", "speculative_rows", "BINDINGS", "LOWEST_RATE_FRACTION",
    "cheapest_plan", "decision_table", "SELF_HOSTED", "PAY_AS_YOU_GO", "PROVISIONED",
    "PROVISIONED_SPILLOVER", "launch_commands",
    "TIME", "bursty_demand", "plan_with_spillover", "optimal_floor", "compare_floor_sizing",
    "self_hosting_comparison",
    "SELF_HOSTED_AUTOSCALED", "PROFILE_SHAPES", "month_profile", "read_profile",
]
