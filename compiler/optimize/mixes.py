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

Dropping replicas never adds an instance type, so mixes stay exact under
policy.max_instance_types_per_site; under policy.min_months_per_mix a plan may keep a replica no
row needs (to hold its mix), so formulate uses the row cuts there instead of mixes.
"""

from __future__ import annotations

from functools import lru_cache

from compiler.optimize.settings import DEFAULT

EPS = DEFAULT.count_tolerance


def minimal_mixes(taus: tuple[float, ...], ubs: tuple[int, ...], sites: tuple[str, ...],
                  demand: float, survive: bool, most_mixes: int = DEFAULT.max_mixes,
                  most_visits: int = DEFAULT.max_mix_visits) -> tuple[tuple[int, ...], ...] | None:
    """Every minimal y (0 <= y <= ubs) carrying `demand` (and without any one site when
    `survive`), sorted; None when there are more than `most_mixes` or the search visits more
    than `most_visits` partial vectors. An empty tuple means no vector in the box carries the
    demand."""
    return _mixes(tuple(taus), tuple(ubs), tuple(sites), round(demand, 9), bool(survive), most_mixes, most_visits)


@lru_cache(maxsize=4096)
def _mixes(taus, ubs, sites, demand, survive, most_mixes, most_visits):
    # Depth-first over y_0, y_1, ... with the sums carried along: each stack entry holds the
    # partial vector's total and its total per site, so a visit costs O(sites), not O(n sites).
    # Visit order and the budget are those of a plain enumeration (pop y_k = 0 first).
    n = len(taus)
    groups = sorted(set(sites)) if survive else []
    at = tuple(groups.index(s) if survive else -1 for s in sites)
    need = demand - EPS
    # Most the candidates from k on can still add (every one at its bound), in total and per site.
    most = [(0.0, (0.0,) * len(groups))] * (n + 1)
    for k in range(n - 1, -1, -1):
        add, (total, per) = taus[k] * ubs[k], most[k + 1]
        most[k] = (total + add, per if at[k] < 0 else _plus(per, at[k], add))

    def carries(total: float, per: tuple[float, ...]) -> bool:
        return total >= need and all(total - p >= need for p in per)

    out: list[tuple[int, ...]] = []
    visits = 0
    stack: list[tuple[tuple[int, ...], float, tuple[float, ...]]] = [((), 0.0, (0.0,) * len(groups))]
    while stack:
        y, total, per = stack.pop()
        visits += 1
        if visits > most_visits:
            return None
        k = len(y)
        rest_total, rest_per = most[k]
        if not carries(total + rest_total, tuple(p + q for p, q in zip(per, rest_per))):
            continue     # cannot carry the demand even with every later candidate at its bound
        if k < n and carries(total, per):
            y, k = y + (0,) * (n - k), n   # anything added later could be dropped again
        if k == n:
            if all(y[j] == 0 or not carries(total - taus[j], per if at[j] < 0 else _plus(per, at[j], -taus[j]))
                   for j in range(n)):
                out.append(y)
                if len(out) > most_mixes:
                    return None
            continue
        for v in range(ubs[k], -1, -1):
            add = taus[k] * v
            stack.append((y + (v,), total + add, per if at[k] < 0 else _plus(per, at[k], add)))
    return tuple(sorted(out))


def _plus(per: tuple[float, ...], g: int, add: float) -> tuple[float, ...]:
    return per[:g] + (per[g] + add,) + per[g + 1:]
