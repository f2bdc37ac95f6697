"""The guide's figures (matplotlib, imported when a figure is drawn).

Every function draws on an ``ax`` (a new figure when ``None``) and returns it; the numbers come
from the library's formulas, never re-derived here.
"""

from rooflinekit.plotting.figures import (
                                          plot_batching_timeline,
                                          plot_batching_win,
                                          plot_break_even,
                                          plot_concurrency_vs_context,
                                          plot_roofline,
                                          plot_self_hosting,
                                          plot_spillover,
                                          plot_tp_scaling,
)

__all__ = ["plot_roofline", "plot_concurrency_vs_context", "plot_batching_timeline",
           "plot_batching_win", "plot_break_even", "plot_spillover", "plot_self_hosting",
           "plot_tp_scaling"]
