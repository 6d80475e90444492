"""CANONICAL: among the plans as cheap as the solver's, the one a fixed rule picks.

A search that stops with a gap, or proves an optimum that many plans share, returns whichever of
the equal-cost plans its path reached first; the path depends on the solver's random seed and on
the machine's floating point, so two machines could write two plans that cost the same and
differ in bytes (replicas split 7 + 0 on two pools against 4 + 1, where both pools' reserved
nodes have room). This step replaces the solver's choice among them by a rule that reads only
the problem, so the plan depends on the spec, the catalog and the pinned versions only.

What is re-derived, and how
---------------------------
The decisions that span months stay as the search left them: training candidates, reserved
terms, nodes bought, fabrics, a re-plan's moves. With them held, a month's decisions (replicas,
nodes carrying them, on-demand hours, storage, the month's operability indicators) meet the
other months only through rows that span months (operability limits, a cloud-share limit, an
idle tail after the horizon: its variables are free with the last month), so each month is
re-derived on its own with every other month held at its current values, in month order; and within a month, each group of variables that shares
a row (services that share a pool, a quota, a site's indicators) on its own. For each group:

  1. its cheapest cost C, proven (a MIP with gap 0, a node budget of Settings.canonical_nodes;
     the plan's values are its start, so C is never above what they cost);
  2. among the group's points costing at most C (within Settings.canonical_tolerance of C, the
     solvers' rounding): the fewest GPUs held by replicas (sum of GPUs per replica x replicas);
  3. with that many, the replicas of each candidate, least preferred first, as few as the
     earlier ones allow: preferred is the candidate's id in sorted order (workload, site,
     instance, layout), so replicas gather on the first candidates of each service that can
     carry them at no extra cost. A candidate with no replicas at this point has its fewest
     already (0) and costs no solve;
  4. the rest of the group (nodes, mixes, indicators) at its cheapest with those replicas held.

Each level is solved to its end (integer objectives, gap 0), so its optimum does not depend on
the solver's path, nor on which solver proves it: the groups run on HiGHS under `--solver cbc`
too (small models built once each, which pulp's CBC would write to files and parse back). A group whose level does not end within the node budget keeps its values.
The whole plan is then priced with its integers held (the LP polish uses) and taken only where
it is no dearer than the plan it replaces: this step never makes a plan dearer, and can make it
cheaper where step 1 finds a month the search left above its cheapest.

Where rows span months (operability limits, cloud share, idle tails), a month's choice is the
rule's given the other months as they stand, so there the rule reads the search's other months
too; the decisions across months (terms, purchases, training) are the search's.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Callable, Mapping

from compiler.optimize.settings import Settings
from compiler.optimize.solve import HighsModel, Solution, relative_gap
from compiler.problem import Constraint, Problem, Variable, integers_of

# month-less indicators of the operability limits (15): free in every month's group, so a month
# may change which site, GPU type or instance type a service uses where the limit allows it
_SHARED_INDICATORS = frozenset({"uses_site", "uses_gpu", "uses_type"})
# what commitments cost after the horizon (16), read from the last month's load: free in the last
# month's groups, so that month's replicas are not held to the load the search left there
_TAIL = frozenset({"idle_tail", "idle_load", "idle_past_owned"})


def canonical(problem: Problem, sol: Solution, price: Callable, solver: str, s: Settings,
              clock: Callable[[], float | None] = lambda: None,
              say: Callable[[str], None] = lambda _msg: None) -> Solution:
    """`sol` (a polished plan) with each month's equal-cost choices made by the rule of the module
    docstring; `price(problem, solver=, fixed=)` prices an integer plan (polish's LP). `sol` itself
    where nothing changes, a group's level does not end, or the result would be dearer. `clock`
    (clock.time_left) gives each solve the seconds a user's --time-limit leaves; at 0 the groups
    left keep their values. `say` hears each month as it starts (a large platform's months take
    a minute in all)."""
    if not sol.has_solution or not any(v.family == "y" for v in problem.variables):
        return sol
    values = {v.name: float(sol.values.get(v.name, 0.0)) for v in problem.variables}
    for v in problem.variables:
        if v.kind != "continuous":
            values[v.name] = float(round(values[v.name]))
    months = sorted({v.month for v in problem.variables if v.family == "y" and v.month is not None})
    shared = {v.name for v in problem.variables if v.family in _SHARED_INDICATORS}
    by_month: dict[int, set[str]] = defaultdict(set)
    for v in problem.variables:
        if v.month is not None:
            by_month[v.month].add(v.name)
    var = {v.name: v for v in problem.variables}
    rows_of: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for k, c in enumerate(problem.constraints):
        for n, a in c.terms:
            if a:
                rows_of[n].append((k, a))
    gpus = {c.id: c.gpus for cs in problem.chosen_from.values() for c in cs}
    within = _Within(problem, var, rows_of, gpus, values)
    tail = {v.name for v in problem.variables if v.family in _TAIL and v.month is None}
    last = problem.spec.horizon_months - 1
    for k, m in enumerate(months):
        say(f"equal-cost choices by the fixed rule: month {m} ({k + 1} of {len(months)})")
        for group in _groups(problem, rows_of, by_month[m] | shared | (tail if m == last else set())):
            if any(var[n].family == "y" for n in group):
                within.update(_group(within, group, s, clock))
    integers = {v.name: values[v.name] for v in problem.variables if v.kind != "continuous"}
    held = integers_of(problem, sol.values)
    if integers == held:
        return sol
    lp = price(problem, solver=solver, fixed=integers)
    if not lp.has_solution or s.above(lp.objective, sol.objective):
        return sol
    bound = min(sol.best_bound, lp.objective)
    return replace(sol, objective=lp.objective, values=lp.values, best_bound=bound,
                   gap=relative_gap(lp.objective, bound))


def _groups(problem: Problem, rows_of: Mapping[str, list[tuple[int, float]]], free: set[str]) -> list[list[str]]:
    """The free variables split into groups that share no row (union-find over the rows), each
    in problem order, the groups in the order of their first variable."""
    parent = {n: n for n in free}

    def root(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for k in sorted({k for n in free for k, _a in rows_of.get(n, ())}):
        names = [n for n, a in problem.constraints[k].terms if a and n in free]
        for n in names[1:]:
            a, b = root(names[0]), root(n)
            if a != b:
                parent[max(a, b)] = min(a, b)
    out: dict[str, list[str]] = {}
    for v in problem.variables:
        if v.name in free:
            out.setdefault(root(v.name), []).append(v.name)
    return list(out.values())


class _Within:
    """What a group's models are made from: the problem, its variables by name, the rows each
    variable is in (with its coefficient), each candidate's GPUs per replica, and the plan's
    values with each row's activity at them, kept up to date as groups change."""

    def __init__(self, problem: Problem, var: Mapping[str, Variable], rows_of: Mapping[str, list[tuple[int, float]]],
                 gpus: Mapping[str, int], values: dict[str, float]) -> None:
        self.problem, self.var, self.rows_of, self.gpus, self.values = problem, var, rows_of, gpus, values
        self.activity = [sum(a * values.get(n, 0.0) for n, a in c.terms) for c in problem.constraints]

    def update(self, changed: Mapping[str, float]) -> None:
        for n, x in changed.items():
            step = x - self.values[n]
            if step:
                for k, a in self.rows_of.get(n, ()):
                    self.activity[k] += a * step
                self.values[n] = x

    def restricted(self, group: list[str], extra: tuple[Constraint, ...] = ()) -> Problem:
        """The problem over `group` alone: every other variable held at its value, moved to the
        rows' right-hand sides; rows that hold none of the group are left out (they hold as
        they are)."""
        free, values = set(group), self.values
        rows = []
        for k in sorted({k for n in group for k, _a in self.rows_of.get(n, ())}):
            c = self.problem.constraints[k]
            terms = tuple((n, a) for n, a in c.terms if n in free)
            rest = self.activity[k] - sum(a * values[n] for n, a in terms)
            rows.append(replace(c, terms=terms, rhs=c.rhs - rest))
        return replace(self.problem, variables=tuple(self.var[n] for n in group), constraints=tuple(rows) + extra)


def _group(w: _Within, group: list[str], s: Settings, clock: Callable[[], float | None]) -> dict[str, float]:
    """One group's values by the rule (levels 1-4 of the module docstring), or {} where a level
    does not end within the node budget (or the time a user's limit leaves)."""
    if clock() == 0:
        return {}
    var = w.var
    ints = [n for n in group if var[n].kind != "continuous"]
    start = {n: w.values[n] for n in ints}
    first = HighsModel(w.restricted(group), s.seed)
    cheapest = first.solve(start=start, gap=0.0, max_nodes=s.canonical_nodes, time_limit=clock())
    if cheapest.status != "optimal":
        return {}
    cost = tuple((n, var[n].cost) for n in group if var[n].cost)
    limit = cheapest.objective + s.canonical_tolerance * max(1.0, abs(cheapest.objective))
    within = Constraint("canonical[cost]", "canonical", cost, "<=", limit, family="canonical")
    replicas = sorted((n for n in group if var[n].family == "y"), key=lambda n: (var[n].candidate, n), reverse=True)
    gpus = {n: float(w.gpus.get(var[n].candidate, 1)) for n in replicas}
    model = HighsModel(w.restricted(group, (within,)), s.seed)
    fewest = model.solve(start=_ints(cheapest, ints), objective=gpus, gap=0.0, max_nodes=s.canonical_nodes,
                         time_limit=clock())
    if fewest.status != "optimal":
        return {}
    held_gpus = sum(gpus[n] * round(fewest.values[n]) for n in replicas)
    at_most = Constraint("canonical[gpus]", "canonical", tuple(gpus.items()), "<=", held_gpus + 0.5,
                         family="canonical")
    model = HighsModel(w.restricted(group, (within, at_most)), s.seed)
    current, fixed = fewest, {}
    for n in replicas:        # least preferred first: each as few as the earlier ones allow
        if round(current.values[n]) > 0:
            least = model.solve(fixed=fixed, start=_ints(current, ints), objective={n: 1.0}, gap=0.0,
                                max_nodes=s.canonical_nodes, time_limit=clock())
            if least.status != "optimal":
                return {}
            current = least
        fixed[n] = float(round(current.values[n]))
    last = first.solve(fixed=fixed, start=_ints(current, ints), gap=0.0, max_nodes=s.canonical_nodes,
                       time_limit=clock())
    if last.status != "optimal":
        return {}
    return {n: (float(round(x)) if var[n].kind != "continuous" else x) for n, x in last.values.items()}


def _ints(sol: Solution, ints: list[str]) -> dict[str, float]:
    return {n: float(round(sol.values.get(n, 0.0))) for n in ints}
