"""The site and cloud limits the plan meets (Plan.binding_constraints): which of power, racks,
GPUs at a site, quotas and the cloud share are tight in the solution, one per series of rows (a
quota's months are one), each with the spec path that sets it and what it means there.

A limit is binding when not even one more of what it counts would fit under it: its slack is no
more than a relative 1e-6 of its right-hand side, and no more than its smallest coefficient for a
site's power and racks (one node model's kW or rack share) or QUOTA_HEADROOM_GPUS for a quota.
"""

from __future__ import annotations

from compiler import problem as F
from compiler.plan import BindingConstraint
from compiler.problem import Problem, Solution

# The groups of rows a binding limit is reported from.
BINDING_GROUPS = ("power", "racks", "max_gpus", "quota", "cloud_share")
# A quota binds while less than one 8-GPU node's worth of GPUs is left under it: a cloud's GPU
# instances come 8 GPUs a node, so a smaller headroom takes no further node (7.999, not 8: a
# headroom of exactly 8 still fits one). Not a solver number: it only decides what the report
# calls binding.
QUOTA_HEADROOM_GPUS = 7.999


def slack_tolerance(group: str, rhs: float, coefficients) -> float:
    """How much slack a row of `group` may have and still be binding."""
    tol = 1e-6 * max(1.0, abs(rhs))
    if group in ("power", "racks"):
        # binding when not even one more of the pool's nodes would fit
        tol = max(tol, min(coefficients, default=0.0))
    elif group == "quota":
        tol = max(tol, QUOTA_HEADROOM_GPUS)
    return tol


def binding_constraints(problem: Problem, sol: Solution) -> tuple[BindingConstraint, ...]:
    """The limits tight in `sol`, one per series, by series name."""
    kinds = {v.name: v.kind for v in problem.variables}

    def value(name: str) -> float:
        x = sol.values.get(name, 0.0)
        return float(round(x)) if kinds.get(name, "continuous") != "continuous" else x

    seen: dict[str, BindingConstraint] = {}
    for c in problem.constraints:
        if c.group not in BINDING_GROUPS:
            continue
        lhs = sum(a * value(n) for n, a in c.terms)
        slack = c.rhs - lhs if c.sense == "<=" else lhs - c.rhs
        if slack <= slack_tolerance(c.group, c.rhs, (a for _, a in c.terms)) and (
                c.group != "cloud_share" or c.terms):
            series = F.series_name(c)      # a quota's months: one entry
            seen.setdefault(series, BindingConstraint(c.family, series, c.path, c.meaning))
    return tuple(seen[k] for k in sorted(seen))
