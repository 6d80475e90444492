"""Valid inequalities for the serving-demand rows (2) and (3), added before the solver starts.

Each row says sum_c tau_c y_c >= D over a few integer replica counts 0 <= y_c <= u_c. Its LP
relaxation lets a service run 2.3 replicas; the solver's own cut loop closes that gap slowly on
large platforms. Here every row gets the facets of the convex hull of its own integer points for
each pair of its candidates (exact 2-D lower hull, integer coefficients), lifted over the row's
other candidates by enumeration. Every cut holds for every integer point of its row, so the MILP
keeps exactly the same integer solutions (and optimum); only its LP bound rises.
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache

from compiler.optimize.settings import DEFAULT

EPS = DEFAULT.count_tolerance


def _need(rest: float, tau: float) -> int:
    return 0 if rest <= EPS else math.ceil(rest / tau - EPS)


def _pair_facets(t1: float, t2: float, u1: int, u2: int, d: float) -> list[tuple[int, int, int]]:
    """Facets a1 y1 + a2 y2 >= c (a > 0 integers) of conv{y in Z^2 in the box: t1 y1 + t2 y2 >= d},
    the lower-left hull of the minimal points (k, need(d - t1 k))."""
    pts = []
    for k in range(u1 + 1):
        n = _need(d - t1 * k, t2)
        if n <= u2:
            pts.append((k, n))
        if n == 0:
            break
    hull: list[tuple[int, int]] = []
    for p in pts:   # monotone chain: keep the lower convex chain from left to right
        while len(hull) >= 2:
            (ax, ay), (bx, by) = hull[-2], hull[-1]
            if (bx - ax) * (p[1] - ay) - (by - ay) * (p[0] - ax) <= 0:
                hull.pop()
            else:
                break
        hull.append(p)
    out = []
    for (px, py), (qx, qy) in zip(hull, hull[1:]):
        a1, a2 = py - qy, qx - px
        if a1 <= 0 or a2 <= 0:
            continue
        g = math.gcd(a1, a2)
        a1, a2 = a1 // g, a2 // g
        out.append((a1, a2, a1 * px + a2 * py))
    return out


@lru_cache(maxsize=65536)
def row_cuts(taus: tuple[float, ...], ubs: tuple[int, ...], demand: float) -> tuple[tuple[tuple[float, ...], float], ...]:
    """Cuts (coefficients aligned with taus, rhs) for sum taus[i] y_i >= demand, 0 <= y_i <= ubs[i]."""
    n = len(taus)
    if n < 2 or max(ubs) > DEFAULT.max_cut_replicas:
        return ()
    cuts = []
    points = math.prod(u + 1 for u in ubs)   # integers: the quotient below is exact
    for i, j in itertools.combinations(range(n), 2):
        if points // ((ubs[i] + 1) * (ubs[j] + 1)) > DEFAULT.max_lift_points:
            continue    # the other candidates' points, the lifting's enumeration: too many
        others = [k for k in range(n) if k not in (i, j)]
        for a1, a2, c in _pair_facets(taus[i], taus[j], ubs[i], ubs[j], demand):
            coef = [0.0] * n
            coef[i], coef[j] = float(a1), float(a2)
            if others:
                _lift(coef, c, i, j, others, taus, ubs, demand)
            cuts.append((tuple(coef), float(c)))
    return tuple(sorted(set(cuts)))


def _lift(coef: list[float], c: int, i: int, j: int, others: list[int], taus, ubs, demand) -> None:
    """Sequential lifting: the coefficient of y_k is the largest a with sum a y >= c still valid
    for every integer point, found by enumerating y_k and the already lifted candidates. Each
    point of the lifted candidates is kept as (sum tau y, sum a y), extended by one candidate at
    a time in the order the sums would add them, so every float is the one summing it anew gives."""
    points: list[tuple[float, float]] = [(0, 0)]    # the lifted candidates' points: (tau . y, a . y)
    pair = (coef[i], coef[j], taus[i], taus[j], ubs[i], ubs[j])
    for k in others:
        best = 0.0
        for t in range(1, ubs[k] + 1):
            worst = math.inf   # min of the cut's current left side with y_k = t
            left = demand - taus[k] * t
            for tau_y, a_y in points:
                worst = min(worst, a_y + _min_pair(*pair, left - tau_y))
            if worst < math.inf:
                best = max(best, (c - worst) / t)
        coef[k] = best + EPS if best > 0 else 0.0
        points = [(tau_y + taus[k] * v, a_y + coef[k] * v) for tau_y, a_y in points for v in range(ubs[k] + 1)]


@lru_cache(maxsize=262144)
def _min_pair(a1: float, a2: float, t1: float, t2: float, u1: int, u2: int, r: float) -> float:
    """min a1 y1 + a2 y2 over integer y in the box with t1 y1 + t2 y2 >= r (inf if none)."""
    if r <= EPS:
        return 0.0
    best = math.inf
    for k in range(u1 + 1):
        n = _need(r - t1 * k, t2)
        if n <= u2:
            best = min(best, a1 * k + a2 * n)
        if n == 0:
            break
    return best


def node_mirs(caps: tuple[float, ...], demand: float) -> tuple[tuple[tuple[float, ...], float], ...]:
    """Mixed-integer rounding cuts of sum_p caps[p] N_p >= demand over whole nodes N_p >= 0, one
    per divisor delta in caps: with alpha = cap / delta, beta = demand / delta, f = frac(beta),
    sum_p G(alpha_p) N_p >= ceil(beta), G(a) = ceil(a) - max(0, ceil(a) - a - (1 - f)) / f.
    (The MIR inequality of the row written as <=, Nemhauser and Wolsey, II.1.7.) Valid for every
    non-negative integer N; "two p5 nodes, or one and anything else" where the LP would take
    1.02 nodes."""
    out = []
    for delta in sorted(set(caps)):
        beta = demand / delta
        f = beta - math.floor(beta)
        if f < 1e-6 or f > 1 - 1e-6:
            continue
        coef = []
        for a in caps:
            alpha = a / delta
            up = math.ceil(alpha - 1e-12)
            coef.append(up - max(0.0, up - alpha - (1 - f)) / f)
        out.append((tuple(round(c, 9) for c in coef), float(math.ceil(beta))))
    return tuple(sorted(set(out)))
