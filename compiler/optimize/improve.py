"""Improving rounds: a better plan to start the search from on large platforms.

A solver improves a start only near it, and on a large platform its own search is slow to move:
the 100-workload benchmark's default CBC compile had not finished after 25 minutes, most of them
in one CBC sub-problem. The rounds here use HiGHS (a dependency either way; it now takes a MIP
start), each one stopped after its root node (ROUND_NODES), so where they end is the same on
every run and machine (node counts, not the clock). Each round holds some integer variables at
the incumbent's values and solves the rest exactly as the full model says; its plan replaces the
incumbent only if it is cheaper:

- lp-guided: the LP relaxation is solved once (its optimum is also a valid lower bound on every
  plan: the model's cut rows are valid inequalities); every integer variable whose LP value
  equals the incumbent's is held, the others are free (RINS, Danna et al. 2005);
- training: every training job's candidate is free, every service's replicas are held;
- serving: every service's replica mixes and replicas are free, every training job is held
  (only below SERVING_MAX integers: on the 100-workload benchmark this round alone took 200 s).

Everything shared (nodes bought, rented and reserved, fabric, storage) is free in every round, so
a round can move a job and re-plan the pools it leaves and joins. A cycle is the rounds in that
order; cycles repeat until one finds nothing cheaper, or CYCLES cycles. A round is not run again
on the plan it left behind itself (no other round has moved it since). Measured (2 cores, the
benchmark platforms of benchmarks/bench_pipeline.py; docs/optimizer.md has the table): 10
workloads, from the greedy start's plan to 0.3% above the proven optimum in 4 s and to the
optimum in 29 s; 100 workloads, $13.29M to $8.76M in 82 s (CBC's training and serving rounds:
$10.31M after 15 s, then the serving round had not ended after 15 minutes).

Only problems with at least MIN_INTEGERS integer variables get rounds: smaller ones solve to
optimality from the greedy start in seconds (three of the shipped examples have under 1,300;
hybrid-llm-platform has 7,683 and gets them).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Callable, Mapping

from compiler.optimize import formulate as F
from compiler.spec import InferenceWorkload

MIN_INTEGERS = 2000
SERVING_MAX = 20000     # integer variables above which the serving round is left out
ROUND_NODES = 1         # each round stops after its root node
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


def search_skipped(problem: F.Problem, time_limit: float | None, max_nodes: int | None, default_nodes: int) -> bool:
    """Whether the default compile ends with the rounds' plan, without a branch-and-bound search:
    on platforms of SERVING_MAX integers or more, unless the user asked for a search (a time
    limit, or a node budget other than the default). There the search's root alone takes minutes
    (100 workloads: HiGHS's root cuts 140 s; from the greedy start its search found a plan 4.5%
    cheaper than the rounds' after 205 s, and $8.32M, 5.3% cheaper, in 30 minutes)."""
    integers = sum(1 for v in problem.variables if v.kind != "continuous")
    return integers >= SERVING_MAX and time_limit is None and max_nodes == default_nodes


def relaxation(problem: F.Problem, solve: Callable, time_limit: float | None = None):
    """The LP relaxation: every integer variable continuous. Its optimum bounds every plan from
    below (the cut rows it keeps are valid for every integer point)."""
    relaxed = replace(problem, variables=tuple(
        replace(v, kind="continuous", ub=1.0 if v.kind == "binary" else v.ub) for v in problem.variables))
    return solve(relaxed, solver="highs", time_limit=time_limit)


def improve(problem: F.Problem, start: Mapping[str, float], solve: Callable, *, gap: float | None = None,
            seconds: float | None = None, max_nodes: int | None = None,
            say: Callable[[str], None] = lambda _m: None) -> tuple[Mapping[str, float], float | None]:
    """(integer values at least as good as `start`, the LP relaxation's bound or None): `start`
    itself where the problem is small or no round finds a cheaper plan. `solve` is solve.solve;
    `max_nodes` is the user's node budget (a round takes at most ROUND_NODES of it)."""
    integers = [v.name for v in problem.variables if v.kind != "continuous"]
    if len(integers) < MIN_INTEGERS:
        return start, None
    deadline = None if seconds is None else time.perf_counter() + seconds

    def left() -> float | None:
        return None if deadline is None else deadline - time.perf_counter()

    if left() is not None and left() <= 0:
        return start, None
    lp = relaxation(problem, solve, left())
    if not lp.has_solution:
        return start, None
    bound = lp.objective
    groups = choice_groups(problem)
    everything = frozenset().union(*(g for _n, g in groups))
    if len(integers) >= SERVING_MAX:
        groups = tuple(g for g in groups if g[0] != "serving")
    incumbent, best = dict(start), math.inf
    nodes = min(ROUND_NODES, max_nodes or ROUND_NODES)
    left_at: dict[str, dict[str, float]] = {}    # round -> the incumbent it last left behind
    for cycle in range(CYCLES):
        improved = False
        for name in ("lp-guided", *(n for n, _g in groups)):
            if left() is not None and left() <= 0:
                return incumbent, bound
            if left_at.get(name) == incumbent:
                continue     # no other round has moved the plan since this one last ran
            if name == "lp-guided":
                fixed = {n: float(round(incumbent.get(n, 0.0))) for n in integers
                         if abs(lp.values.get(n, 0.0) - round(incumbent.get(n, 0.0))) < 1e-6}
            else:
                free = dict(groups)[name]
                fixed = {n: float(round(incumbent.get(n, 0.0))) for n in everything - free}
            sol = solve(problem, solver="highs", time_limit=left(), gap=gap, start=incumbent,
                        max_nodes=nodes, fixed=fixed)
            if sol.has_solution and (best == math.inf or sol.objective < best - 1e-6 * max(1.0, abs(best))):
                best = sol.objective
                incumbent = {n: float(round(sol.values.get(n, 0.0))) for n in integers}
                improved = True
            left_at[name] = incumbent
            say(f"improving the start: {name} round {cycle + 1}: "
                + (f"${best:,.0f}" if best < math.inf else "no plan"))
        if not improved:
            break
    return incumbent, bound
