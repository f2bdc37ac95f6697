"""The guide's figures (matplotlib, imported when a figure is drawn), one module per family.

Every function draws on an ``ax`` (a new figure when ``None``) and returns it; the numbers come
from the library's formulas, never re-derived here.
"""

from rooflinekit.plotting.batching import plot_batching_timeline, plot_batching_win
from rooflinekit.plotting.disaggregated import plot_disaggregated
from rooflinekit.plotting.memory import plot_concurrency_vs_context
from rooflinekit.plotting.planning import plot_decision, plot_decision_flips, plot_load_curves
from rooflinekit.plotting.pricing import plot_break_even, plot_self_hosting, plot_spillover
from rooflinekit.plotting.roofline import plot_layouts, plot_roofline, plot_tp_scaling
from rooflinekit.plotting.techniques import plot_prefix_caching, plot_speculative_speedup

__all__ = ["plot_roofline", "plot_concurrency_vs_context", "plot_batching_timeline",
           "plot_batching_win", "plot_break_even", "plot_spillover", "plot_self_hosting",
           "plot_tp_scaling", "plot_layouts", "plot_load_curves", "plot_decision",
           "plot_decision_flips",
           "plot_disaggregated", "plot_prefix_caching", "plot_speculative_speedup"]
