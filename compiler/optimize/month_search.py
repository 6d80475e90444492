"""Month windows: a plan for small platforms whose services share nodes, found a few months at a time.

The months of a serving platform are coupled only through the variables that span them (reserved
terms, a job's candidate, nodes bought): held at a plan's values outside a few consecutive
months, the rest is a small problem that HiGHS solves in a second or two. Each round frees every
integer variable of one window of months and every spanning one (so the reserved terms and jobs
are re-planned around the window), holds the other months' at the incumbent's values, and starts
from the incumbent; the round's plan replaces the incumbent only if it is cheaper. Windows
overlap and run from the last months to the first, round-robin, until each has run on the plan it
last left behind and found nothing cheaper (or Settings.window_cycles passes).

A window cannot let a bought on-prem node go: the node serves every month, and a window holds
all but two of them at the incumbent, so the plan keeps every node some held month fills. So
once the windows find nothing, fewer-nodes rounds follow (neighbourhoods.fewer_nodes): one per on-prem
pool the plan buys nodes in, the pool held one node lower and the work on it freed in the months
where the remaining nodes are too few (every spanning variable free, the other months held).
The incumbent is no start there (it has the node), so HiGHS is told its cost as a cutoff. The
first round that finds a cheaper plan replaces the incumbent and the windows run again from it;
at most Settings.fewer_passes times.

Large-neighbourhood search (as improve.py's rounds on large platforms, whose windows are sized by
integers, not months): it only finds plans, and proves nothing. The compile's bound is the LP
relaxation's with the month floors (month_floors.py), or the search's where one follows from the
plan found here. Every round stops after a fixed number of nodes, so the plan is the same on
every machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from compiler.optimize.clock import time_left
from compiler.optimize.formulate import Problem
from compiler.optimize.neighbourhoods import fewer_nodes
from compiler.optimize.settings import DEFAULT, Settings


@dataclass(frozen=True)
class Window:
    first: int      # months first..last (inclusive) are free
    last: int

    def __str__(self) -> str:
        return f"months {self.first}-{self.last}"


@dataclass(frozen=True)
class Plan:
    """The search, declared: its windows in the order they run, each round's node budget, the
    most cycles over them, and the most times a fewer-nodes round may restart them."""
    windows: tuple[Window, ...]
    nodes: int
    cycles: int
    fewer_passes: int


def months_plan(problem: Problem, settings: Settings = DEFAULT, fewer_passes: int | None = None) -> Plan:
    """Windows of settings.window_months months every settings.window_step months over the months
    that hold integers, the latest first (`fewer_passes` replaces the settings'): demand grows, so the last months hold the most nodes, and the reserved terms
    that cover them are best re-planned before the earlier months settle around them."""
    width, step, nodes = settings.window_months, settings.window_step, settings.window_nodes
    cycles = settings.window_cycles
    fewer_passes = settings.fewer_passes if fewer_passes is None else fewer_passes
    serving = sorted({v.month for v in problem.variables
                      if v.month is not None and v.kind != "continuous"})
    if len(serving) < 2:
        return Plan((), nodes, 0, 0)
    first, last = serving[0], serving[-1]
    windows = []
    for a in range(first, last + 1, step):
        windows.append(Window(a, min(last, a + width - 1)))
        if a + width - 1 >= last:
            break
    return Plan(tuple(reversed(windows)), nodes, cycles, fewer_passes)


def stitched(problem: Problem, block_plans: Mapping[str, float], model, nodes: int = DEFAULT.window_nodes,
             time_limit: float | None = None) -> dict[str, float] | None:
    """A first plan from the month floors' block plans: every month's integers held at the value
    its block's own sub-problem gave them, the spanning ones (reserved terms, jobs, nodes bought)
    solved for (`nodes` at most). None where those months admit no plan together."""
    integers = [v for v in problem.variables if v.kind != "continuous"]
    held = {v.name: block_plans[v.name] for v in integers if v.month is not None and v.name in block_plans}
    sol = model.solve(fixed=held, max_nodes=nodes, time_limit=time_limit)
    if not sol.has_solution:
        return None
    return _rounded(sol, integers)


def month_search(problem: Problem, start: Mapping[str, float], model, plan: Plan,
                 say: Callable[[str], None] = lambda _m: None, bound: float | None = None,
                 enough: float = 0.0, seconds: float | None = None, settings: Settings = DEFAULT) -> dict[str, float]:
    """Integer values at least as cheap as `start` (`model`: a solve.HighsModel of `problem`).
    With a lower `bound` on every plan, the search stops once its plan is within `enough` of it
    (relative to the plan): no round could make it more than that cheaper. `seconds`: the
    search's time limit, where the user gave one (--time-limit); nodes bound it otherwise."""
    left = time_left(seconds)
    integers = [v for v in problem.variables if v.kind != "continuous"]
    incumbent = {v.name: float(round(start.get(v.name, 0.0))) for v in integers}
    first = model.solve(fixed=incumbent)
    if not first.has_solution:
        return incumbent
    best = first.objective

    def close(cost: float) -> bool:
        """Whether a plan of `cost` ends the search: within `enough` of the bound, or no time left."""
        return (bound is not None and cost - bound <= enough * abs(cost)) or left() == 0.0

    for passes in range(plan.fewer_passes + 1):
        incumbent, best = _windows(integers, incumbent, best, model, plan, say, close, left, settings)
        if passes == plan.fewer_passes or close(best):
            break
        found = _fewer_nodes(problem, integers, incumbent, best, model, plan, say, left, settings)
        if found is None:
            break
        incumbent, best = found
    return incumbent


def _windows(integers, incumbent, best, model, plan: Plan, say, close, left, settings: Settings):
    """The windows, round-robin from the last months, until every window has run once on the
    incumbent it left behind (a window that found nothing on this very plan would find nothing
    again), or `plan.cycles` passes: (the incumbent, its cost)."""
    failed_on: dict[Window, int] = {}
    version, rounds = 0, 0
    while rounds < plan.cycles * len(plan.windows):
        if close(best):
            break
        w = plan.windows[rounds % len(plan.windows)]
        rounds += 1
        if failed_on.get(w) == version:
            if all(failed_on.get(x) == version for x in plan.windows):
                break
            continue
        held = {v.name: incumbent[v.name] for v in integers
                if v.month is not None and not w.first <= v.month <= w.last}
        sol = model.solve(fixed=held, start=incumbent, max_nodes=plan.nodes, time_limit=left())
        if sol.has_solution and settings.cheaper(sol.objective, best):
            best, version = sol.objective, version + 1
            incumbent = _rounded(sol, integers)
        else:
            failed_on[w] = version
        say(f"month windows: {w} round {(rounds - 1) // len(plan.windows) + 1}: ${best:,.0f}")
    return incumbent, best


def _fewer_nodes(problem, integers, incumbent, best, model, plan: Plan, say, left, settings: Settings):
    """The first fewer-nodes round (neighbourhoods.fewer_nodes: the pools in the order of their
    names) that finds a plan cheaper than the incumbent: (that plan, its cost), or None."""
    cutoff = best - settings.margin(best)    # as settings.cheaper
    for r in fewer_nodes(problem, incumbent, most=len(integers), settings=settings):
        held = {**{v.name: incumbent[v.name] for v in integers if v.month is not None and v.name not in r.free},
                **dict(r.moved)}
        sol = model.solve(fixed=held, max_nodes=plan.nodes, time_limit=left(), cutoff=cutoff)
        found = sol.has_solution and sol.objective < cutoff
        say(f"month windows: {r.name}: ${sol.objective if found else best:,.0f}")
        if found:
            return _rounded(sol, integers), sol.objective
        if left() == 0.0:
            break
    return None


def _rounded(sol, integers) -> dict[str, float]:
    """A solution's `integers` at whole values: the plan a round hands on."""
    return {v.name: float(round(sol.values.get(v.name, 0.0))) for v in integers}
