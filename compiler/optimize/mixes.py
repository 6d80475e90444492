"""Replica mixes: the minimal integer ways one service can carry one month's demand.

A service's month is a handful of integer replica counts y_c (one per candidate, 0 <= y_c <= u_c)
that must carry the demand D, and with N+1 availability carry it again without any one site:

    sum_c tau_c y_c >= D,   sum_{c: site(c) != s} tau_c y_c >= D  for every site s.

A *mix* is a minimal such vector: no replica can be dropped. Every plan can drop replicas down to
a mix without breaking a constraint or costing more (replicas only cover demand and spend
resources), so choosing exactly one mix per service-month keeps the optimum. The LP relaxation
of "one mix" is the convex hull of the month's integer points, which the rows above (and any
number of cuts on one row at a time) are not: the LP can no longer spread 1.5 replicas over three
sites. Enumeration is bounded; a month with too many mixes keeps the row cuts of cuts.py instead.
"""

from __future__ import annotations

from functools import lru_cache

EPS = 1e-9
MAX_MIXES = 300          # more than this many mixes for one service-month: fall back to row cuts
MAX_VISITS = 10_000      # enumeration budget (partial vectors visited) for one service-month


def minimal_mixes(taus: tuple[float, ...], ubs: tuple[int, ...], sites: tuple[str, ...],
                  demand: float, survive: bool) -> tuple[tuple[int, ...], ...] | None:
    """Every minimal y (0 <= y <= ubs) carrying `demand` (and without any one site when
    `survive`), sorted; None when there are more than MAX_MIXES or the search runs over budget.
    An empty tuple means no vector in the box carries the demand."""
    return _mixes(tuple(taus), tuple(ubs), tuple(sites), round(demand, 9), bool(survive))


@lru_cache(maxsize=4096)
def _mixes(taus, ubs, sites, demand, survive):
    n = len(taus)
    groups = sorted(set(sites)) if survive else []

    def feasible(y) -> bool:
        total = sum(t * k for t, k in zip(taus, y))
        if total < demand - EPS:
            return False
        for s in groups:
            if total - sum(t * k for t, k, ss in zip(taus, y, sites) if ss == s) < demand - EPS:
                return False
        return True

    # Most any partial vector can still carry, per row: prune branches that cannot reach demand.
    def reachable(y, k) -> bool:
        full = list(y) + list(ubs[k:])
        return feasible(full)

    out: list[tuple[int, ...]] = []
    visits = 0
    stack: list[tuple[int, ...]] = [()]
    while stack:
        y = stack.pop()
        visits += 1
        if visits > MAX_VISITS:
            return None
        k = len(y)
        if not reachable(y, k):
            continue
        if k < n and feasible(y + (0,) * (n - k)):
            y, k = y + (0,) * (n - k), n   # anything added later could be dropped again
        if k == n:
            if all(y[j] == 0 or not feasible(y[:j] + (y[j] - 1,) + y[j + 1:]) for j in range(n)):
                out.append(y)
                if len(out) > MAX_MIXES:
                    return None
            continue
        for v in range(ubs[k], -1, -1):
            stack.append(y + (v,))
    return tuple(sorted(out))
