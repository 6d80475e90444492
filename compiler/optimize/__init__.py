"""The optimize stage: Candidates -> Plan (DESIGN.md section 4).

formulate.py writes the MILP (maths in its docstring), solve.py runs pulp (CBC or HiGHS),
decode.py reads the solution back into a Plan, explain.py says why a spec is infeasible,
alternatives.py prices the next-best options for the report.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable

from compiler.candidates import Candidates
from compiler.diagnostics import EXIT_INFEASIBLE, EXIT_NO_PLAN, CompileError, Diagnostic
from compiler.plan import Plan

__all__ = ["MAX_NODES", "SolveOptions", "greedy_plan", "optimize"]

# Branch-and-bound nodes a solve may take by default. A bounded compile without a time limit:
# wall-clock limits stop at a different plan on a faster machine, a node count does not, so
# `--check` in CI stays stable. Specs like the shipped examples need 0-50 nodes; 100 generated
# workloads take about 3 minutes to reach it with CBC (see docs/optimizer.md).
MAX_NODES = 1000

# The default budget of a HiGHS search that goes on from the improving rounds' plan. A HiGHS node
# there costs about eight of CBC's (20 workloads: 0.4 s against 0.05 s) and its root closes more:
# on the 10-workload benchmark it proves the rounds' plan optimal in 25 nodes (11 s) where CBC
# takes about 900 (32 s); on 20 workloads and the 30-workload 6-site platform its 100 nodes end
# on CBC's plan with a higher bound in 53 s and 77 s (CBC's 1,000: 49 s and 62 s).
HIGHS_NODES = 100
# A default HiGHS search (no --max-nodes, --time-limit or --gap) on a problem of fewer than
# SETTLE_MAX_INTEGERS integers seeks the proof of the optimum for its first SETTLE_AFTER nodes
# (instead of HIGHS_NODES). Where that leaves it more than SETTLE_GAP above its bound, it searches
# on from its plan with HiGHS's own gap at SETTLE_GAP, for SETTLE_NODES nodes at most: nodes whose
# bound is within the gap of the plan are pruned, and 1% is proven in far fewer nodes than the
# optimum is. That search also stops once neither its plan nor its bound has moved in
# SETTLE_STALL nodes: where the bound has stopped rising, more nodes rarely prove the gap, and
# their cost is unbounded (a node of a large serving platform takes 0.2 s). Larger problems'
# nodes cost too much for any of it (docs/optimizer.md, "A search settled at 1%", has the
# measurements). Nor does it settle where the first SETTLE_AFTER nodes (root cuts included) left
# the bound at the LP relaxation's (with the month floors, where they are added): no cut or
# branch of those nodes lifted it, and on the platforms measured the settled search then moved
# neither plan nor bound before its stall (docs/optimizer.md, "Not settled where the first nodes
# lift nothing").
SETTLE_AFTER = 25
SETTLE_NODES = 5000
SETTLE_STALL = 200
SETTLE_GAP = 0.01
SETTLE_MAX_INTEGERS = 10000
# The pruned search keeps a small pool of cuts (HiGHS's soft limit, 10,000 by default): its nodes'
# LPs stay small, and with them pruned at 1% the search needs many cheap nodes rather than a
# few strong ones (docs/optimizer.md, "A search settled at 1%").
SETTLE_CUT_POOL = 100

# The month windows' plan is the compile's answer, with no branch-and-bound search after it, where
# it is proven within this of the optimum (the LP bound with the month floors); otherwise the
# search starts from it. --max-nodes, --time-limit or --gap always run the search.
MONTHS_GAP = 0.01
# The relative gap at which a plan counts as proven optimal: HiGHS's mip_rel_gap in solve.py.
PROVEN_GAP = 1e-4


@dataclass(frozen=True)
class SolveOptions:
    solver: str = "auto"                # auto | cbc | highs (auto: resolved by solver_for)
    time_limit: float | None = None     # seconds
    gap: float | None = None            # relative MIP gap to stop at
    progress: Callable[[str], None] | None = None
    max_nodes: int | None = MAX_NODES   # branch-and-bound nodes; 0 or None: no limit
    nodes_given: bool = False           # the user set max_nodes (--max-nodes), even to MAX_NODES


def optimize(candidates: Candidates, options: SolveOptions = SolveOptions()) -> Plan:
    """Pick the cheapest platform; raise CompileError exit 3 (infeasible) or 5 (no plan in time)."""
    from compiler.optimize.clock import time_left
    from compiler.optimize.decode import decode
    from compiler.optimize.explain import explain, no_candidates
    from compiler.optimize.formulate import formulate
    from compiler.optimize.improve import improve, integer_count, search_skipped
    from compiler.optimize.month_floors import month_floors, with_month_floors
    from compiler.optimize.month_search import month_search, search_plan, stitched
    from compiler.optimize.solve import HighsModel, relative_gap, solve
    from compiler.optimize.start import greedy_start

    say = options.progress or (lambda _msg: None)
    problem = formulate(candidates)
    missing = no_candidates(problem)
    if missing:
        raise CompileError(missing, exit_code=EXIT_INFEASIBLE)
    say(f"formulated {len(problem.variables)} variables, {len(problem.constraints)} constraints")
    solver = solver_for(problem, options.solver)
    start = greedy_start(problem)
    time_limit = options.time_limit
    rounds_seconds, bound = 0.0, None
    models: list[HighsModel] = []

    def highs(k: int = 0) -> HighsModel:
        """The rounds' k-th HiGHS model (they solve improve.WORKERS at once), built when needed."""
        while len(models) <= k:
            models.append(HighsModel(problem))
        return models[k]

    # Small platforms whose replicas of several months are integers: month floors raise the
    # bound and month windows find the plan (month_floors.py, month_search.py); their seconds
    # count as the rounds' do. Larger ones go through the improving rounds.
    searched_months = start is not None and months_searched(problem)
    if searched_months:
        # with a time limit, all of this takes at most half of it (as the improving rounds do),
        # the floors at most a quarter; the search after it the rest
        t0 = time.perf_counter()
        half = time_left(None if time_limit is None else time_limit / 2)
        floors = month_floors(problem, seconds=None if time_limit is None else time_limit / 4)
        problem = with_month_floors(problem, floors=floors)
        say(f"month floors: {len(floors.rows)} blocks")
        lp = highs().solve(relax=True)
        bound = lp.objective if lp.has_solution else None
        start = cheapest(highs(), start, stitched(problem, floors.block_plans, highs(), time_limit=half()))
        start = month_search(problem, start, highs(), search_plan(problem), say=say, bound=bound,
                             enough=MONTHS_GAP if options.gap is None else options.gap, seconds=half())
        rounds_seconds = time.perf_counter() - t0
        if time_limit is not None:
            time_limit = max(0.1, time_limit - rounds_seconds)
    if start is not None and not searched_months:
        # Improving rounds on large platforms (improve.py); with a time limit they take at most
        # half of it and the main search the rest.
        t0 = time.perf_counter()
        improved, bound = improve(problem, start, highs, gap=options.gap, say=say,
                                  max_nodes=options.max_nodes,
                                  seconds=None if time_limit is None else time_limit / 2)
        rounds_seconds = time.perf_counter() - t0
        if time_limit is not None:
            time_limit = max(0.1, time_limit - rounds_seconds)
        if solver == "highs" and bound is None:
            start = None          # HiGHS finds its own first plans on small platforms
        else:
            start = improved
    price = solve
    max_nodes = options.max_nodes
    nodes_asked = options.nodes_given or options.max_nodes != MAX_NODES
    within = searched_months and bound is not None and options.gap is None and not nodes_asked \
        and options.time_limit is None and _gap_of(start, bound, highs()) <= MONTHS_GAP
    if bound is not None and (within or search_skipped(problem, options.time_limit, nodes_asked)):
        sol, price = unsearched(start, bound, highs(), solver)
        if within and sol.has_solution and sol.gap <= PROVEN_GAP:
            sol = replace(sol, status="optimal")    # proven as a search would have proven it
    elif bound is not None and solver == "highs":
        # the search goes on from the rounds' plan on their own HiGHS model (no second build)
        settle = False
        if not nodes_asked and options.time_limit is None:
            max_nodes = HIGHS_NODES
            if options.gap is None and integer_count(problem) < SETTLE_MAX_INTEGERS:
                max_nodes, settle = SETTLE_AFTER, True
        sol = highs().solve(start=start, max_nodes=max_nodes, gap=options.gap, time_limit=time_limit)
        if settle and sol.has_solution and sol.gap > SETTLE_GAP and _lifted(sol, bound):
            sol = _settled(highs(), sol)
        if settle and sol.has_solution and sol.gap <= PROVEN_GAP:
            sol = replace(sol, status="optimal")    # settled where the proof ends anyway
        price = _priced_on(highs())
    else:
        sol = solve(problem, solver=solver, time_limit=time_limit, gap=options.gap, start=start,
                    max_nodes=options.max_nodes)
    if bound is not None and sol.has_solution and sol.searched and bound > sol.best_bound:
        floor = min(bound, sol.objective)      # the LP's bound, where it is the stronger
        sol = replace(sol, best_bound=floor, gap=relative_gap(sol.objective, floor))
    sol = replace(sol, seconds=sol.seconds + rounds_seconds)
    say(f"{solver}: {sol.status} in {sol.seconds:.1f} s")
    if sol.status == "infeasible":
        raise explain(problem, solver=solver, time_limit=options.time_limit,
                      max_nodes=options.max_nodes)
    if not sol.has_solution:
        limits = [f"{max_nodes:,} branch-and-bound nodes"] if max_nodes else []
        limits += [f"{options.time_limit:g} s"] if options.time_limit else []
        within = f" within {' and '.join(limits)}" if limits else ""
        raise CompileError([Diagnostic("E501", f"the solver ({solver}) found no plan{within}",
                                       hint="raise --max-nodes or --time-limit, or loosen --gap")],
                           exit_code=EXIT_NO_PLAN)
    return decode(problem, polish(problem, sol, solver, price))


def greedy_plan(candidates: Candidates) -> Plan | None:
    """The greedy start (start.py) as a plan, with no search: its integers held and its continuous
    variables at their cheapest (one LP). None where there is no start or it breaks a limit. A
    quick upper bound on the optimum (pipeline.estimate_candidates); not a compile's answer."""
    from compiler.optimize.decode import decode
    from compiler.optimize.explain import no_candidates
    from compiler.optimize.formulate import formulate
    from compiler.optimize.solve import HighsModel
    from compiler.optimize.start import greedy_start

    problem = formulate(candidates)
    start = None if no_candidates(problem) else greedy_start(problem)
    if start is None:
        return None
    sol = HighsModel(problem).solve(fixed=start)
    if not sol.has_solution:
        return None
    return decode(problem, replace(sol, status="feasible", best_bound=0.0, gap=1.0, searched=False))


def _lifted(sol, bound: float) -> bool:
    """Whether a search's proven bound is above the LP relaxation's `bound` (beyond rounding)."""
    return sol.best_bound > bound + 1e-6 * max(1.0, abs(bound))


def _settled(model, first):
    """The search after `first` (SETTLE_AFTER nodes that did not prove SETTLE_GAP) goes on from
    its plan with HiGHS's mip_rel_gap at SETTLE_GAP, for SETTLE_NODES nodes at most, or until
    its plan and bound have not moved in SETTLE_STALL nodes. Both searches
    ran on the same model, so each one's bound holds for every plan: the plan is the cheaper of
    the two, the bound the higher, and the plan is reported feasible with that gap."""
    from compiler.optimize.solve import relative_gap

    more = model.solve(start=first.values, max_nodes=SETTLE_NODES, gap=SETTLE_GAP, stall=SETTLE_STALL,
                       cut_pool=SETTLE_CUT_POOL)
    if not more.has_solution:
        return first
    plan = more if more.objective < first.objective else first
    bound = min(plan.objective, max(first.best_bound, more.best_bound))
    return replace(plan, status="feasible", best_bound=bound, gap=relative_gap(plan.objective, bound),
                   seconds=first.seconds + more.seconds)


def cheapest(model, *plans):
    """The cheapest of the integer `plans` (None ones left out) priced on `model`; the first on a tie."""
    priced = [(sol.objective, k, p) for k, p in enumerate(plans) if p is not None
              for sol in [model.solve(fixed=p)] if sol.has_solution]
    return min(priced)[2] if priced else plans[0]


def _gap_of(plan, bound: float, model) -> float:
    from compiler.optimize.solve import relative_gap

    sol = model.solve(fixed=plan)
    return relative_gap(sol.objective, bound) if sol.has_solution else 1.0


def months_searched(problem) -> bool:
    """Whether the compile adds month floors and runs the month windows: where replicas of two
    or more months are integers, below the improving rounds' size (improve.MIN_INTEGERS). Above
    it the rounds find the cheaper plans, and the floors cost more time than they raise the
    bound (docs/optimizer.md)."""
    from compiler.optimize import improve
    from compiler.optimize.month_floors import serving_months

    return improve.integer_count(problem) < improve.MIN_INTEGERS and len(serving_months(problem)) >= 2


def solver_for(problem, asked: str) -> str:
    """The solver that searches: `asked`, or for "auto" (the default) HiGHS where the improving
    rounds or the month windows run (they run on HiGHS, and the search goes on from their plan on
    the same model, with its month floors: CBC's search from the windows' plan proved less) and
    CBC, the bundled solver, on the other small platforms, where it proves the shipped examples'
    plans in seconds."""
    from compiler.optimize import improve

    if asked != "auto":
        return asked
    return "highs" if improve.integer_count(problem) >= improve.MIN_INTEGERS or months_searched(problem) else "cbc"


def _priced_on(model):
    """polish's LP solves on a HiGHS model of the problem (a re-solve, not a pulp build)."""
    def price(_problem, solver, fixed):
        return replace(model.solve(fixed=fixed), solver=solver)
    return price


def unsearched(plan, bound: float, model, solver: str):
    """(Solution, price) for the improving rounds' plan taken as the answer without a search: its
    continuous variables at their cheapest under the LP's bound, an LP on the rounds' own HiGHS
    `model`; `price` runs polish's LPs on that model too (the same LP through pulp and CBC took
    3.8 s of the two-data-centre benchmark's 86 s; here it is a re-solve)."""
    from compiler.optimize.solve import relative_gap

    sol = replace(model.solve(fixed=plan), solver=solver)
    if sol.has_solution:
        floor = min(bound, sol.objective)
        sol = replace(sol, status="feasible", best_bound=floor, gap=relative_gap(sol.objective, floor),
                      searched=False)
    return sol, _priced_on(model)


def polish(problem, sol, solver: str, solve: Callable):
    """The incumbent's continuous variables at their cheapest: a solver stopped by a limit returns
    an integer point whose on-demand hours or storage may exceed what its choices need (a plan
    that pays for unused on-demand hours; a heuristic's incumbent, or one within --gap, can too).
    Holding every integer at its value leaves an LP; its optimum prices exactly the plan's
    choices, which the audit re-derives. The integers are first lowered as far as the rows allow
    (descend.py: a node held in a month nothing runs on it is let go). The bound stays."""
    from compiler.optimize.descend import descend

    def integers(values) -> dict[str, float]:
        return {v.name: float(round(values.get(v.name, 0.0))) for v in problem.variables if v.kind != "continuous"}

    def no_dearer(lp) -> bool:
        return lp.has_solution and lp.objective <= sol.objective + 1e-6 * max(1.0, abs(sol.objective))

    lowered, held = integers(descend(problem, sol.values)), integers(sol.values)
    lp = solve(problem, solver=solver, fixed=lowered)
    if not no_dearer(lp) and lowered != held:
        lp = solve(problem, solver=solver, fixed=held)   # the incumbent's own integers, as before
    if not no_dearer(lp):
        return sol
    from compiler.optimize.solve import relative_gap

    gap = relative_gap(lp.objective, sol.best_bound)
    return replace(sol, objective=lp.objective, gap=gap, values=lp.values,
                   best_bound=min(sol.best_bound, lp.objective))
