"""The solve path, chosen once from the problem's size and the user's options, and run.

    path          when (integer variables n; Settings)        steps
    search        n < min_integers, services in < 2 months    start, branch-and-bound, polish
    months        n < min_integers, services in 2+ months     start, month floors, coarse floors
                                                              beside them and the windows where a
                                                              block branched (Settings.coarse_*),
                                                              month windows, branch-and-bound unless the
                                                              windows' plan is proven within
                                                              months_gap (with both floors),
                                                              reweighed floors unless the plan is
                                                              then within it, polish
    rounds        min_integers <= n (< search_max, or the     start, neighbourhood rounds,
                  user asked for a search)                    branch-and-bound, polish
    rounds-only   search_max <= n, or narrowed candidates     start, neighbourhood rounds, polish
                  whose solve without the limits took
                  rounds-only; no --max-nodes or --time-limit

The solver that searches is the user's, or for `auto` HiGHS wherever the month windows or the
rounds run (they run on HiGHS, and the search goes on from their plan on the same model) and CBC,
the bundled solver, on the other small problems. A default HiGHS search after the rounds or
windows takes settings.highs_nodes nodes, or on problems under settings.settle_max_integers seeks
the optimum for settings.settle_after nodes and then settles for a proven settings.settle_gap
(steps.settled); either stops settings.proof_points interrupt points after it proves
settle_gap. Every path starts from the greedy start, or from a plan given from outside
(SolveOptions.start, a deployed plan) where that is no dearer. Every path ends with polish,
whose plan's equal-cost choices canonical.py then makes by a fixed rule (steps.canonical), so
the plan does not depend on the solver's path. The Strategy is recorded in plan.json; the gap
note reads it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from compiler.optimize import steps
from compiler.optimize.clock import time_left
from compiler.optimize.formulate import Problem
from compiler.optimize.month_floors import serving_months
from compiler.optimize.neighbourhoods import integer_count
from compiler.optimize.settings import SolveOptions
from compiler.optimize.solve import Solution
from compiler.plan import SolvePath

STEPS = {
    "search": ("greedy start", "branch-and-bound", "polish"),
    "months": ("greedy start", "month floors", "coarse floors unless no block branched",
               "month windows", "branch-and-bound unless within months_gap",
               "reweighed floors unless within months_gap", "polish"),
    "rounds": ("greedy start", "neighbourhood rounds", "branch-and-bound", "polish"),
    "rounds-only": ("greedy start", "neighbourhood rounds", "polish"),
}


@dataclass(frozen=True)
class Strategy:
    """The path a solve takes (STEPS), the solver of its branch-and-bound, that search's node
    budget (None: no limit) and whether it settles at settings.settle_gap, and why."""
    path: str
    solver: str
    integers: int
    nodes: int | None
    settle: bool
    why: str

    @property
    def steps(self) -> tuple[str, ...]:
        return STEPS[self.path]


def choose(problem: Problem, options: SolveOptions) -> Strategy:
    """The strategy for `problem` under `options`: a function of the problem's size and the
    options only, so the same spec takes the same path on every machine."""
    s = options.settings
    n = integer_count(problem)
    if n < s.min_integers:
        # month floors price a block's months at no less than nothing (a Savings Plan's covered
        # hours cost less than that) and a job's hours on its pool: where the model has Savings
        # Plans or Capacity Blocks (which take a job's hours off its pool), the plain search
        months = len(serving_months(problem)) >= 2 and not problem.savings_plans and not problem.capacity_blocks
        path = "months" if months else "search"
        why = (f"{n:,} integers, under {s.min_integers:,}: "
               + ("services whose replicas span months get month floors and windows" if months
                  else "a search from the greedy start proves such problems in seconds"))
    else:
        large = n >= s.search_max
        skip = (large or options.free_path == "rounds-only") and options.time_limit is None and not options.nodes_asked
        path = "rounds-only" if skip else "rounds"
        if not skip:
            why = f"{n:,} integers, from {s.min_integers:,}: the rounds give the search its start"
        elif large:
            why = f"{n:,} integers, from {s.search_max:,}: a search's root costs more than the rounds find"
        else:
            why = (f"{n:,} integers over narrowed candidates, whose solve without the limits took no search: "
                   "the rounds' plan is the answer (a search's bound here is dropped)")
    solver = options.solver if options.solver != "auto" else ("cbc" if path == "search" else "highs")
    nodes, settle = options.max_nodes, False
    if solver == "highs" and path != "search" and not options.nodes_asked and options.time_limit is None:
        nodes = s.highs_nodes
        if options.gap is None and n < s.settle_max_integers:
            nodes, settle = s.settle_after, True
    return Strategy(path, solver, n, nodes, settle, why)


def run(problem: Problem, strategy: Strategy, options: SolveOptions) -> tuple[Problem, Solution, SolvePath]:
    """The strategy's steps on `problem`: (the problem as searched, with any month floors; the
    polished solution; the path as it ran, for plan.json: the plain search where there was no
    start, no branch-and-bound where the plan was taken without one)."""
    s, say, time_limit = options.settings, options.progress or (lambda _m: None), options.time_limit
    models = steps.Models(problem, s.seed)
    start, origin = steps.first_plan(problem, options.start, models)
    if start is None and strategy.path != "search":
        strategy = replace(strategy, path="search", nodes=options.max_nodes, settle=False,
                           why=strategy.why + "; no greedy start, so the search starts alone")
    t0, bound, coarse = time.perf_counter(), None, None
    if strategy.path == "months":
        # with a time limit this takes at most half of it, the floors at most a quarter
        half = time_left(None if time_limit is None else time_limit / 2)
        base = problem
        quarter = None if time_limit is None else time_limit / 4
        problem, floors, coarse = steps.with_floors(problem, quarter, s, say)
        models = steps.Models(problem, s.seed)
        start, bound = steps.month_windows(problem, start, floors.block_plans, models, options, half, say)
    else:
        if strategy.path != "search":
            # with a time limit the rounds take at most half of it
            start, bound = steps.rounds(problem, start, models, options, say,
                                        None if time_limit is None else time_limit / 2)
        if strategy.solver == "highs" and bound is None and options.start is None:
            start = None              # HiGHS finds its own first plans without the rounds' bound
    # the bound with the coarse floors too, where they ran: it decides whether a search runs and is
    # the bound stated; the search itself is judged against the LP's own (bound), as before
    proven = steps.with_coarse(problem, coarse, bound, s.seed, say)
    rounds_seconds = time.perf_counter() - t0
    if time_limit is not None and strategy.path != "search":
        time_limit = max(0.1, time_limit - rounds_seconds)
    within = (strategy.path == "months" and bound is not None and not options.search_asked
              and steps.gap_of(start, proven, models()) <= s.months_gap)
    nodes = options.max_nodes
    if bound is not None and (within or strategy.path == "rounds-only"):
        sol, price = steps.unsearched(start, proven, models(), strategy.solver)
        if within and sol.has_solution and sol.gap <= s.proven_gap:
            sol = replace(sol, status="optimal")    # proven as a search would have proven it
    elif bound is not None and strategy.solver == "highs":
        nodes = strategy.nodes
        sol = steps.highs_search(models(), start, bound, nodes, strategy.settle, options.gap, time_limit, s, say,
                                 plans_only=options.narrowed, default=not options.search_asked)
        price = steps.priced_on(models())
    else:
        sol = steps.pulp_search(problem, start, strategy.solver, nodes, options.gap, time_limit, s)
        price = steps.pulp_price(s)
    if proven is not None and sol.has_solution and sol.searched and proven > sol.best_bound:
        sol = steps.with_bound(sol, proven)      # the LP's bound, where it is the stronger
    lifted = None
    if (strategy.path == "months" and time_limit is None and sol.has_solution and sol.gap > s.months_gap
            and not options.search_asked):
        # the floors' weights re-split lift the bound the search could not (floor_weights.py)
        t1 = time.perf_counter()
        lifted = steps.reweighed(base, floors, sol, s, say)
        rounds_seconds += time.perf_counter() - t1
        sol = lifted or sol
    sol = replace(sol, seconds=sol.seconds + rounds_seconds)
    steps.stop_unless_planned(problem, sol, strategy.solver, nodes, options)
    ran = tuple(origin if step == "greedy start" else step.split(" unless")[0] for step in strategy.steps
                if (sol.searched or not step.startswith("branch-and-bound"))
                and (lifted is not None or not step.startswith("reweighed floors"))
                and (coarse is not None or not step.startswith("coarse floors")))
    say("polishing: the plan's nodes, terms, hours and storage at their cheapest with its choices held")
    polished = steps.polish(problem, sol, strategy.solver, price, s, models(), options.time_limit)
    sol = steps.canonical(problem, polished, strategy.solver, price, s, options.time_limit, say)
    # the search's result last: it stays on the status line while the plan is rendered
    say(f"{strategy.solver}: {sol.status} in {sol.seconds:.1f} s")
    return problem, sol, SolvePath(strategy.path, ran, strategy.why)
