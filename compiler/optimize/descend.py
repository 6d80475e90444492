"""Lower an incumbent's integer variables as far as its constraints allow, one at a time.

A solver stopped by a node limit (or a heuristic's start) can return an integer point that holds
more than its choices need: an inference node in a month when no replica runs on it, a reserved
node no hour uses. polish() then fixes the integers and re-prices the continuous variables, so
such a node stays paid for. This pass runs first.

Exact and safe: a variable is lowered only when its cost is >= 0 and it appears in no equality
row, and only to the least integer value every row it appears in still allows with all the other
variables at their current values (a >= row where its coefficient is positive, a <= row where it
is negative; the other rows only get looser as it falls). Every row stays satisfied after each
step, so the point stays feasible and its cost never rises. Variables go in problem order, in
passes until one changes nothing (at most Settings.descend_passes), so the result is deterministic.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Mapping

from compiler.optimize.settings import DEFAULT

EPS = DEFAULT.slack_tolerance


def descend(problem, values: Mapping[str, float]) -> dict[str, float]:
    """values with the integer variables lowered (see the module docstring); continuous ones as given."""
    out = {v.name: float(values.get(v.name, 0.0)) for v in problem.variables}
    for v in problem.variables:
        if v.kind != "continuous":
            out[v.name] = float(round(out[v.name]))
    rows_of: dict[str, list[tuple[int, float]]] = defaultdict(list)
    fixed_by_equality: set[str] = set()
    activity = []
    for k, c in enumerate(problem.constraints):
        activity.append(sum(a * out.get(n, 0.0) for n, a in c.terms))
        for n, a in c.terms:
            if c.sense == "==":
                fixed_by_equality.add(n)
            elif a:
                rows_of[n].append((k, a))
    movable = [v for v in problem.variables
               if v.kind != "continuous" and v.cost >= 0 and v.name not in fixed_by_equality]
    for _ in range(DEFAULT.descend_passes):
        changed = False
        for v in movable:
            x = out[v.name]
            if x <= 0:
                continue
            low = 0.0
            for k, a in rows_of[v.name]:
                c = problem.constraints[k]
                rest = activity[k] - a * x
                if (c.sense == ">=" and a > 0) or (c.sense == "<=" and a < 0):
                    low = max(low, (c.rhs - rest) / a)
            new = max(0.0, float(math.ceil(low - EPS)))
            if new < x:
                for k, a in rows_of[v.name]:
                    activity[k] += a * (new - x)
                out[v.name] = new
                changed = True
        if not changed:
            break
    return out
