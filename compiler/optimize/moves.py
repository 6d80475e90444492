"""What moving a running workload costs a re-plan (--baseline): the plan keeps each workload
where the baseline placed it unless moving saves more than the spec's policy.replan asks.

Kept says where the baseline ran each workload still in the spec: a training job's candidate,
the candidates a service's replicas ran on. with_moves adds the price of a move to the problem's
objective (cost category "replan"), as a problem of its own: a job's every candidate but the
baseline's costs `usd` more, and a service whose replicas differ from the baseline's in any
month the baseline planned (on another candidate, or another count on one of its own) pays
`usd` once (a binary moved[w], set by rows on its replica counts). So a running workload changes
only where that saves more than its price (Kept.price), or where the spec's change to it leaves
it no choice. The price is not a cost of the plan: the plan is read back on the problem without it (without_moves), so its costs and
the audit are those of the plan itself; the solver's objective and bound include it (a plan that
moves nothing pays nothing, and moves_usd says what the plan's moves add).

kept_plan holds every kept workload where the baseline ran it and leaves the rest free: the
baseline with the cheapest placement of what is new, always a candidate plan (strategy's start).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping

from compiler.problem import Constraint, Problem, Variable, x_name

CATEGORY = "replan"


@dataclass(frozen=True)
class Kept:
    training: Mapping[str, str] = field(default_factory=dict)            # job -> candidate id
    serving: Mapping[str, frozenset[str]] = field(default_factory=dict)  # service -> candidate ids
    usd: float = 0.0                                                     # what one move must save
    # the share of a workload's own cost (in the baseline) a move of it must save, where that is
    # more than `usd`
    share: float = 0.0
    cost: Mapping[str, float] = field(default_factory=dict)              # workload -> its baseline cost
    # the baseline's own decisions by variable name (candidates, replicas, terms, nodes bought):
    # where they are still a plan of this problem, its start is the baseline itself
    values: Mapping[str, float] = field(default_factory=dict)

    def price(self, workload: str) -> float:
        """What moving `workload` must save: `usd`, or `share` of its baseline cost where more."""
        return max(self.usd, self.share * self.cost.get(workload, 0.0))

    @property
    def priced(self) -> bool:
        return self.usd > 0 or self.share > 0


def with_moves(problem: Problem, kept: Kept) -> Problem:
    """The problem with the price of moving a kept workload in its objective."""
    var = {v.name: v for v in problem.variables}
    new_vars = dict(var)
    rows = []
    for w, cid in sorted(kept.training.items()):
        if not x_name_of(problem, w, cid):
            continue            # the baseline's candidate is gone (the job changed): no move to price
        for c in problem.chosen_from.get(w, ()):
            v = var.get(x_name(c))
            if v is not None and c.id != cid:
                new_vars[v.name] = replace(v, costs=tuple(sorted(v.costs + ((CATEGORY, kept.price(w)),))))
    replicas: dict[str, list[Variable]] = {}        # service -> its replica counts, one pass over the model
    for v in problem.variables:
        if v.family == "y" and v.workload in kept.serving and v.month is not None:
            replicas.setdefault(v.workload, []).append(v)
    for w, cids in sorted(kept.serving.items()):
        ys = replicas.get(w, [])
        if not ys or any(v.ub is None for v in ys):
            continue
        mn = f"moved[{w}]"
        new_vars[mn] = Variable(mn, "binary", None, ((CATEGORY, kept.price(w)),), family="moved", workload=w)
        rows += _service_rows(w, mn, ys, cids, kept.values)
    return replace(problem, variables=tuple(new_vars[n] for n in sorted(new_vars)),
                   constraints=tuple(sorted(problem.constraints + tuple(rows), key=lambda c: c.name)))


def _service_rows(w: str, mn: str, ys: list[Variable], cids: frozenset[str],
                  baseline: Mapping[str, float]) -> list[Constraint]:
    """moved[w] = 1 wherever service w's replicas differ from the baseline's: on a candidate the
    baseline did not use (their sum is at most their bounds times moved), or, in a month the
    baseline planned, another count on one it did (y <= y0 + (ub - y0) moved, y >= y0 (1 - moved)).
    A month the baseline did not plan (its horizon ended before) is free."""
    rows, away = [], {}
    for v in ys:
        if v.candidate not in cids:
            away.setdefault(v.month, []).append(v)
        elif v.name in baseline:
            y0, why = baseline[v.name], f"{w}'s replicas on {v.candidate} in month {v.month} change only if it moves"
            rows.append(Constraint(f"kept_most[{v.name}]", "replan", ((mn, y0 - v.ub), (v.name, 1.0)), "<=", y0,
                                   "$.policy.replan", why, family="moved", workload=w, month=v.month))
            if y0 > 0:
                rows.append(Constraint(f"kept_least[{v.name}]", "replan", ((mn, y0), (v.name, 1.0)), ">=", y0,
                                       "$.policy.replan", why, family="moved", workload=w, month=v.month))
    for m, vs in sorted(away.items()):
        bound = sum(v.ub for v in vs)
        terms = tuple(sorted([(v.name, 1.0) for v in vs] + [(mn, -bound)]))
        rows.append(Constraint(f"moved[{w}@{m:03d}]", "replan", terms, "<=", 0.0, "$.policy.replan", f"{w} runs replicas where the baseline did not "
                               f"in month {m} only if it moves", family="moved", workload=w, month=m))
    return rows


def moves_usd(problem: Problem, values: Mapping[str, float]) -> float:
    """What the moves of a plan (`values`) add to the objective of with_moves' problem."""
    return sum(usd * values.get(v.name, 0.0) for v in problem.variables for cat, usd in v.costs if cat == CATEGORY)


def without_moves(problem: Problem) -> Problem:
    """The problem as with_moves found it: no moved[] variables or rows, no replan costs."""
    variables = tuple(replace(v, costs=tuple(c for c in v.costs if c[0] != CATEGORY))
                      for v in problem.variables if v.family != "moved")
    return replace(problem, variables=variables,
                   constraints=tuple(c for c in problem.constraints if c.family != "moved"))


def kept_plan(problem: Problem, kept: Kept) -> dict[str, float]:
    """The integers a plan that keeps every kept workload where the baseline ran it must hold:
    each kept job's candidate chosen and its others not, each kept service's replicas on no
    candidate the baseline did not use (the counts themselves are free: demand may have moved)."""
    held: dict[str, float] = {}
    for w, cid in kept.training.items():
        for c in problem.chosen_from.get(w, ()):
            held[x_name(c)] = 1.0 if c.id == cid else 0.0
    for v in problem.variables:
        if v.family == "y" and v.workload in kept.serving and v.candidate not in kept.serving[v.workload]:
            held[v.name] = 0.0
    return held


def x_name_of(problem: Problem, w: str, cid: str) -> str:
    """The choice variable of workload w's candidate `cid` ("" where the problem has no such candidate)."""
    for c in problem.chosen_from.get(w, ()):
        if c.id == cid:
            return x_name(c)
    return ""


def as_ran(problem: Problem, kept: Kept) -> dict[str, float]:
    """The baseline's decisions as values of `problem`'s integers: each kept workload where it ran
    (kept_plan) and the baseline's own values of every variable the problem still has."""
    names = {v.name for v in problem.variables}
    return {**kept_plan(problem, kept), **{n: x for n, x in kept.values.items() if n in names}}


def touched(problem: Problem, ran: Mapping[str, float]) -> set[str]:
    """The workloads whose own rows the baseline's decisions (`ran`, as_ran) no longer satisfy: a
    service whose demand outgrew its replicas, a job whose candidate changed. A row that names a
    variable `ran` lacks says nothing either way."""
    out: set[str] = set()
    for c in problem.constraints:
        if c.workload is None or c.workload in out or not all(n in ran for n, _ in c.terms):
            continue
        if _broken(c, sum(k * ran[n] for n, k in c.terms)):
            out.add(c.workload)
    return out


def moved_indicators(problem: Problem, values: Mapping[str, float]) -> dict[str, float]:
    """Each moved[w] at the least value its rows allow under `values` (a start's replicas): 0
    where w's replicas are the baseline's, else 1. A start built without them (start.py) would
    otherwise break a row and be no start at all."""
    broken: set[str] = set()
    for c in problem.constraints:
        if c.family != "moved" or c.workload in broken:
            continue
        if _broken(c, sum(k * values.get(n, 0.0) for n, k in c.terms if not n.startswith("moved["))):
            broken.add(c.workload)
    return {v.name: float(v.workload in broken) for v in problem.variables if v.family == "moved"}


def _broken(c: Constraint, lhs: float) -> bool:
    """Whether row `c` with left-hand side `lhs` is broken beyond rounding."""
    return ((c.sense == ">=" and lhs < c.rhs - 1e-6) or (c.sense == "<=" and lhs > c.rhs + 1e-6)
            or (c.sense == "==" and abs(lhs - c.rhs) > 1e-6))
