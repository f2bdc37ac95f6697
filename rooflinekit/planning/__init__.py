"""Capacity plans: traffic and SLOs, capacity under load, fleets and their cost, the decision.

From :class:`Traffic` and :class:`SLO` to the max rate of a replica (:func:`max_rate`), the fleet
and its cost over a grid of configurations (:func:`plan`), the best prefill/decode split
(:func:`plan_disaggregated`), and the decision against pay-as-you-go and provisioned capacity
(:func:`decision_table`, spillover, :func:`launch_commands`); docs/architecture.md names the
module of each.
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
