"""The planner's bracket search (planning.capacity._close_in) on synthetic SLO curves.

Each row's attained share is a logistic curve in log rate with a known crossing ``c`` (share
equal to the quantile there), decreasing in the rate; the search must end with ``lo`` meeting,
``hi`` missing, ``hi <= lo * (1 + rtol)`` and so ``c`` inside ``[lo, hi]``, in at most three
runs per halving of the bracket (the module's bound), and on these smooth curves in fewer runs
than bisection needs.
"""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rooflinekit.planning.capacity import _close_in

Q = 0.95


def _share(log_rate, log_crossing, steepness):
    # logistic in log rate, equal to Q at the crossing, falling with the rate
    return 1.0 / (1.0 + math.exp(steepness * (log_rate - log_crossing)
                                 + math.log((1 - Q) / Q)))


def _margin(share):
    share = min(max(share, 1e-4), 1 - 1e-4)
    return math.log(share / (1 - share)) - math.log(Q / (1 - Q))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0.01, 0.99), st.floats(0.5, 200.0)), min_size=1,
                max_size=6),
       st.sampled_from([0.005, 0.02, 0.1]))
def test_the_bracket_closes_around_the_crossing(rows, rtol):
    n = len(rows)
    lo, hi = np.ones(n), np.full(n, 2.0)
    crossing = np.array([1.0 + position for position, _ in rows])     # inside (1, 2)
    steep = np.array([s for _, s in rows])
    runs = np.zeros(n, int)

    def evaluate(index, rates):
        runs[index] += 1
        shares = np.array([_share(math.log(r), math.log(crossing[i]), steep[i])
                           for i, r in zip(index, rates)])
        return shares >= Q, np.full(index.size, "itl", dtype=object), \
            np.array([_margin(s) for s in shares])

    margin = lambda i, r: _margin(_share(math.log(r), math.log(crossing[i]), steep[i]))  # noqa
    margin_lo = np.array([margin(i, 1.0) for i in range(n)])
    margin_hi = np.array([margin(i, 2.0) for i in range(n)])
    binding = np.full(n, "", dtype=object)
    _close_in(evaluate, lo, hi, margin_lo, margin_hi, binding, np.ones(n, bool), 1.0 + rtol)
    assert (hi <= lo * (1 + rtol) * (1 + 1e-12)).all()
    assert ((lo <= crossing * (1 + 1e-9)) & (crossing <= hi * (1 + 1e-9))).all()
    assert (binding[hi < 2.0] == "itl").all()          # hi moved: a run missed there
    halvings = math.ceil(math.log2(math.log(2.0) / math.log(1 + rtol)))
    assert (runs <= 3 * halvings).all()


def test_fewer_runs_than_bisection_on_smooth_curves():
    """A logistic curve (a straight line in log-odds): the line closes an octave to 2 % in two
    runs per row, where bisection takes 6."""
    crossings = np.linspace(1.05, 1.95, 19)
    n = crossings.size
    runs = np.zeros(n, int)

    def evaluate(index, rates):
        runs[index] += 1
        shares = np.array([_share(math.log(r), math.log(crossings[i]), 8.0)
                           for i, r in zip(index, rates)])
        return shares >= Q, np.full(index.size, "ttft", dtype=object), \
            np.array([_margin(s) for s in shares])

    margin_lo = np.array([_margin(_share(0.0, math.log(c), 8.0)) for c in crossings])
    margin_hi = np.array([_margin(_share(math.log(2.0), math.log(c), 8.0)) for c in crossings])
    lo, hi = np.ones(n), np.full(n, 2.0)
    _close_in(evaluate, lo, hi, margin_lo, margin_hi, np.full(n, "", dtype=object),
              np.ones(n, bool), 1.02)
    assert (hi <= lo * 1.02 * (1 + 1e-12)).all()
    assert runs.max() <= 2
