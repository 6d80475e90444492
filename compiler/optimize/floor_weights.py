r"""Reweighed floors: the month floors' bound lifted by re-splitting the spanning variables' costs.

The month floors (month_floors.py) split each spanning variable's cost c_l evenly over the blocks
it reaches, and each block then picks its own copy of it: a quarter may buy three reserved
nodes that the next quarter does without. Any weights pi_{l,B} with sum_B pi_{l,B} = c_l give
valid floors (the proof in month_floors.py holds for every split), so

    L(pi) = sum_B F_B(pi)

is a lower bound on every plan's cost for every such pi: the Lagrangian dual function of the
constraints "every block's copy of l is the same", concave in pi. Its subgradient in pi_{l,B} is
block B's own value of l, projected onto the splits that keep the sum: g_{l,B} = l_B - mean_B l_B.
A step raises the weight where a block buys more of l than the others, so the blocks' copies
are drawn together. Each pass is one projected subgradient step with Polyak's length
theta (U - L) / |g|^2 toward the plan's cost U, theta shrinking by Settings.reweigh_shrink a
pass; the weights of a variable whose even split has no negative share stay non-negative
(the Euclidean projection onto {pi >= 0, sum = c_l}), the others move freely (every block's
variable is bounded, so no block is unbounded). The bound is the best L of any pass: each
block's F_B is its proven bound (its dual bound where the node budget stops it), so every pass's
sum is valid, and none needs to be optimal.

When it runs (strategy.py, the month path): after the search, only where the plan is still
above Settings.months_gap of the bound and the floors were cheap (no block took more than
Settings.reweigh_nodes nodes): a pass costs about what the floors did, so on platforms whose
floors took long it would cost minutes. It stops once the plan is within months_gap of the best
L, after Settings.reweigh_passes passes, or at a pass whose blocks prove nothing. The plan is
never changed: only its bound. Every budget is a count, so the bound is the same on every
machine.
"""

from __future__ import annotations

from typing import Callable

from compiler.optimize.formulate import Problem
from compiler.optimize.month_floors import Floors, solve_blocks
from compiler.optimize.settings import DEFAULT, Settings
from compiler.optimize.solve import relative_gap


def reweighed_bound(problem: Problem, floors: Floors, plan_cost: float, settings: Settings = DEFAULT,
                    say: Callable[[str], None] | None = None) -> float | None:
    """The best sum of floors the re-split weights prove on `problem` (the model the floors were
    split from, without their rows), from the even split's floors toward `plan_cost`; None where
    no pass ran or none proved more than the floors."""
    cut = floors.cut
    if cut is None or not floors.rows or floors.most_nodes > settings.reweigh_nodes:
        return None
    start = sum(r.rhs for r in floors.rows)
    if not start > 0 or not relative_gap(plan_cost, start) > settings.months_gap:
        return None
    reach: dict[str, list[frozenset[int]]] = {}
    for n, b in cut.weights:
        reach.setdefault(n, []).append(b)
    moving = {n: bs for n, bs in reach.items() if len(bs) > 1}
    weights, values, bound, best, theta = dict(cut.weights), dict(floors.spanning), start, start, settings.reweigh_step
    for k in range(settings.reweigh_passes):
        g = {(n, b): values.get((n, b), 0.0) - sum(values.get((n, c), 0.0) for c in bs) / len(bs)
             for n, bs in moving.items() for b in bs}
        norm = sum(x * x for x in g.values())
        if norm <= 1e-12:
            break          # the blocks agree on every spanning variable: the split is optimal
        step = theta * (plan_cost - bound) / norm
        for n, bs in moving.items():
            moved = [weights[(n, b)] + step * g[(n, b)] for b in bs]
            if all(cut.weights[(n, b)] >= 0 for b in bs):
                moved = _onto_simplex(moved, sum(cut.weights[(n, b)] for b in bs))
            weights.update(zip(((n, b) for b in bs), moved))
        blocks = solve_blocks(problem, cut, weights, settings.reweigh_nodes, settings=settings)
        if any(b.bound is None for b in blocks):
            break
        bound = sum(b.bound for b in blocks)
        values = {(n, b.months): x for b in blocks for n, x in b.values.items() if (n, b.months) in weights}
        best = max(best, bound)
        if say is not None:
            say(f"reweighed floors: pass {k + 1} of {settings.reweigh_passes}: bound ${best:,.0f}")
        if not relative_gap(plan_cost, best) > settings.months_gap:
            break
        theta *= settings.reweigh_shrink
    return best * (1 - settings.floor_tolerance) if best > start else None


def _onto_simplex(v: list[float], total: float) -> list[float]:
    """The Euclidean projection of v onto {x >= 0, sum x = total} (sort-based, Held, Wolfe and
    Crowder 1974)."""
    u = sorted(v, reverse=True)
    run, shift = 0.0, 0.0
    for i, x in enumerate(u, 1):
        run += x
        t = (run - total) / i
        if x - t > 0:
            shift = t
    return [max(0.0, x - shift) for x in v]
