"""Improving rounds: a better plan to start the search from on large platforms.

A solver improves a start only near it, and on a large platform its own search is slow to move:
the 100-workload benchmark's default CBC compile had not finished after 25 minutes, and HiGHS's
root alone takes minutes there. The rounds here are a large-neighbourhood search on HiGHS (a
dependency either way), each one stopped after its root node (ROUND_NODES), so where they end is
the same on every run and machine (node counts, not the clock). Each round holds some integer
variables at the incumbent's values and solves the rest exactly as the full model says; its plan
replaces the incumbent only if it is cheaper. One HiGHS model is built once and re-solved with
other variables held (solve.HighsModel):

- lp-guided: the LP relaxation is solved once (its optimum is also a valid lower bound on every
  plan: the model's cut rows are valid inequalities); every integer variable whose LP value
  equals the incumbent's is held, the others are free (RINS, Danna et al. 2005);
- training: every training job's candidate is free, every service's replicas are held;
- serving windows: the replica mixes and replicas of every service in a run of consecutive
  months are free, training and the other months held. Windows are as long as WINDOW_INTEGERS
  allows (a month over it is a window alone), so a window's root stays a few seconds where one
  round over every month took 146 s on the 100-workload benchmark.

Everything shared (nodes bought, rented and reserved, fabric, storage) is free in every round, so
a round can move a job or a month's replicas and re-plan the pools and reserved terms around them.
A cycle is the rounds in that order; cycles repeat until one finds nothing cheaper, or CYCLES
cycles. A round is not run again on the plan it left behind itself (no other round has moved it
since). Measured on the 100-workload benchmark (2 cores; docs/optimizer.md has the table): from
the greedy start's $13.29M, lp-guided $9.10M, training $8.84M, the windows $8.09M, in 61 s,
below the best plan any earlier method had found ($8.32M, HiGHS for 30 minutes).

Only problems with at least MIN_INTEGERS integer variables get rounds: smaller ones solve to
optimality from the greedy start in seconds (three of the shipped examples have under 1,300;
hybrid-llm-platform has 7,683 and gets them).
"""

from __future__ import annotations

import math
import time
from typing import Callable, Mapping

from compiler.optimize import formulate as F
from compiler.spec import InferenceWorkload

MIN_INTEGERS = 2000
SEARCH_MAX = 20000      # integer variables from which the default compile ends with the rounds' plan
WINDOW_INTEGERS = 6000  # serving integers one window frees at most (a month over it is alone)
ROUND_NODES = 1         # each round stops after its root node
CYCLES = 2              # below SEARCH_MAX integers; above it one (improve() says why)


def choice_groups(problem: F.Problem) -> tuple[tuple[str, frozenset[str]], ...]:
    """The groups of variables a round can free: every training job's candidate choice; every
    service's replica mixes and replica counts."""
    names = {v.name for v in problem.variables}
    training = {F.x_name(c) for w in problem.spec.workloads if not isinstance(w, InferenceWorkload)
                for c in problem.chosen_from.get(w.name, ())}
    serving = frozenset().union(*_serving_by_month(problem, names))
    return (("training", frozenset(training & names)), ("serving", serving))


def _serving_by_month(problem: F.Problem, names: set[str]) -> list[frozenset[str]]:
    """Per month of the horizon, the services' replica mixes and replica counts in the model."""
    H = problem.spec.horizon_months
    by_month: list[set[str]] = [set() for _ in range(H)]
    for (_w, m), options in problem.mixes.items():
        by_month[m].update(mix for mix, _reps in options)
    for w in problem.spec.workloads:
        if isinstance(w, InferenceWorkload):
            for c in problem.chosen_from.get(w.name, ()):
                for m in range(H):
                    by_month[m].add(F.y_name(c, m))
    return [frozenset(month & names) for month in by_month]


def serving_windows(problem: F.Problem) -> tuple[tuple[str, frozenset[str]], ...]:
    """The serving rounds: runs of consecutive months, each freeing every service's mixes and
    replicas in its months, as long as WINDOW_INTEGERS allows."""
    windows: list[tuple[int, int, frozenset[str]]] = []
    for m, month in enumerate(_serving_by_month(problem, {v.name for v in problem.variables})):
        if not month:
            continue
        if windows and windows[-1][1] == m and len(windows[-1][2]) + len(month) <= WINDOW_INTEGERS:
            first, _end, free = windows[-1]
            windows[-1] = (first, m + 1, free | month)
        else:
            windows.append((m, m + 1, month))
    return tuple((f"serving months {a}-{b - 1}", free) for a, b, free in windows)


def search_skipped(problem: F.Problem, time_limit: float | None, max_nodes: int | None, default_nodes: int) -> bool:
    """Whether the default compile ends with the rounds' plan, without a branch-and-bound search:
    on platforms of SEARCH_MAX integers or more, unless the user asked for a search (a time
    limit, or a node budget other than the default). There the search's root alone takes minutes
    (100 workloads: HiGHS's root cuts 140 s) and the rounds' plan is already below the best plan
    a 30-minute HiGHS search found."""
    integers = sum(1 for v in problem.variables if v.kind != "continuous")
    return integers >= SEARCH_MAX and time_limit is None and max_nodes == default_nodes


def improve(problem: F.Problem, start: Mapping[str, float], model, *, gap: float | None = None,
            seconds: float | None = None, max_nodes: int | None = None,
            say: Callable[[str], None] = lambda _m: None) -> tuple[Mapping[str, float], float | None]:
    """(integer values at least as good as `start`, the LP relaxation's bound or None): `start`
    itself where the problem is small or no round finds a cheaper plan. `model` makes the solver
    model once it is needed (`model()` -> solve.HighsModel); `max_nodes` is the user's node
    budget (a round takes at most ROUND_NODES of it)."""
    integers = [v.name for v in problem.variables if v.kind != "continuous"]
    if len(integers) < MIN_INTEGERS:
        return start, None
    deadline = None if seconds is None else time.perf_counter() + seconds

    def left() -> float | None:
        return None if deadline is None else deadline - time.perf_counter()

    if left() is not None and left() <= 0:
        return start, None
    highs = model()
    lp = highs.solve(relax=True, time_limit=left())
    if not lp.has_solution:
        return start, None
    bound = lp.objective
    groups = choice_groups(problem)
    rounds = (("lp-guided", frozenset()), groups[0], *serving_windows(problem))
    everything = frozenset().union(*(g for _n, g in groups))
    incumbent, best = dict(start), math.inf
    nodes = min(ROUND_NODES, max_nodes or ROUND_NODES)
    left_at: dict[str, dict[str, float]] = {}    # round -> the incumbent it last left behind
    # Where the rounds' plan is the compile's answer (SEARCH_MAX integers or more), one cycle, and
    # HiGHS does not restart a round's root: on the 100-workload benchmark a cycle takes 61 s
    # instead of 107 s and ends cheaper ($8.09M, not $8.12M). Below it the rounds only start a
    # search, two cycles, HiGHS's defaults.
    large = len(integers) >= SEARCH_MAX
    for cycle in range(1 if large else CYCLES):
        improved = False
        for name, free in rounds:
            if left() is not None and left() <= 0:
                return incumbent, bound
            if left_at.get(name) == incumbent:
                continue     # no other round has moved the plan since this one last ran
            if name == "lp-guided":
                fixed = {n: float(round(incumbent.get(n, 0.0))) for n in integers
                         if abs(lp.values.get(n, 0.0) - round(incumbent.get(n, 0.0))) < 1e-6}
            else:
                fixed = {n: float(round(incumbent.get(n, 0.0))) for n in everything - free}
            sol = highs.solve(time_limit=left(), gap=gap, start=incumbent, max_nodes=nodes, fixed=fixed,
                              restart=not large)
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
