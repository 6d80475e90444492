"""Fix-and-optimize: a better MIP start for CBC on large platforms.

CBC improves a start only near it. On a large platform its own search can end close to the
greedy start (start.py): on a 30-workload, 60-month platform it stopped at a 34% gap, next to
the start. Rounds run first take that start from $14.06M to $10.12M, and the compile then ends
at a 7.3% gap (docs/optimizer.md). They run before CBC's search, not after it: from the plan
CBC's own search ends at they find little (on the 100-workload benchmark, 12.06M to 12.05M).

Each round holds one group of choices at the incumbent's values and solves the rest exactly as
the full model says, with a small node budget:

- training: every training job's candidate is free, every service's replicas are held;
- serving: every service's replica mixes and replicas are free, every training job is held.

Everything shared (nodes bought, rented and reserved, fabric, storage) is free in every round,
so a round can move a job and re-plan the pools it leaves and joins. A round's plan replaces
the incumbent only if it is cheaper. Rounds alternate until a whole cycle finds nothing cheaper,
or CYCLES cycles. Node budgets keep the result deterministic (a time limit, when the user gives
one, also caps the rounds, as it does the main solve).

Only problems with at least MIN_INTEGERS integer variables get rounds: smaller platforms solve
to optimality from the greedy start in seconds, where rounds would only add time (the shipped
examples have under 400, the 10-workload benchmark 2,300, the 100-workload one 16,700).
"""

from __future__ import annotations

import math
import time
from typing import Callable, Mapping

from compiler.optimize import formulate as F
from compiler.spec import InferenceWorkload

MIN_INTEGERS = 5000
ROUND_NODES = 200
CYCLES = 2


def choice_groups(problem: F.Problem) -> tuple[tuple[str, frozenset[str]], ...]:
    """The groups of variables a round can free, in round order: every training job's candidate
    choice; then every service's replica mixes and replica counts, all services at once (in
    groups of eight they ended dearer: moving replicas between sites pays when all can move)."""
    names = {v.name for v in problem.variables}
    H = problem.spec.horizon_months
    training: set[str] = set()
    serving = {mix for options in problem.mixes.values() for mix, _reps in options}
    for w in problem.spec.workloads:
        cands = problem.chosen_from.get(w.name, ())
        if isinstance(w, InferenceWorkload):
            serving.update(F.y_name(c, m) for c in cands for m in range(H))
        else:
            training.update(F.x_name(c) for c in cands)
    return (("training", frozenset(training & names)), ("serving", frozenset(serving & names)))


def improve(problem: F.Problem, start: Mapping[str, float], solve: Callable, *, gap: float | None = None,
            seconds: float | None = None, max_nodes: int | None = None,
            say: Callable[[str], None] = lambda _m: None) -> Mapping[str, float]:
    """Integer values at least as good as `start` (as CBC would complete it): `start` itself where
    the problem is small or no round finds a cheaper plan. `solve` is solve.solve; a round takes
    ROUND_NODES nodes, or the user's smaller `max_nodes`."""
    integers = [v.name for v in problem.variables if v.kind != "continuous"]
    if len(integers) < MIN_INTEGERS:
        return start
    groups = choice_groups(problem)
    everything = frozenset().union(*(g for _n, g in groups))
    deadline = None if seconds is None else time.perf_counter() + seconds
    incumbent, best = dict(start), math.inf
    for cycle in range(CYCLES):
        improved = False
        for name, free in groups:
            left = None if deadline is None else deadline - time.perf_counter()
            if left is not None and left <= 0:
                return incumbent
            fixed = {n: float(round(incumbent.get(n, 0.0))) for n in everything - free}
            sol = solve(problem, solver="cbc", time_limit=left, gap=gap, start=incumbent,
                        max_nodes=min(ROUND_NODES, max_nodes or ROUND_NODES), fixed=fixed)
            if sol.has_solution and (best == math.inf or sol.objective < best - 1e-6 * max(1.0, abs(best))):
                best = sol.objective
                incumbent = {n: float(round(sol.values.get(n, 0.0))) for n in integers}
                improved = True
            say(f"improving the start: {name} choices, round {cycle + 1}: "
                + (f"${best:,.0f}" if best < math.inf else "no plan"))
        if not improved:
            break
    return incumbent
