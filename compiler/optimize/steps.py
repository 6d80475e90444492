"""The steps a Strategy runs (strategy.py), each a function with one job: the greedy start, the
month floors and windows, the neighbourhood rounds, branch-and-bound (HiGHS on its own model, or
CBC and HiGHS through pulp), the plan taken without a search, polish, and the canonical choice
among plans of equal cost."""

from __future__ import annotations

import functools
import threading
from dataclasses import replace
from typing import Callable, Mapping

from compiler.diagnostics import EXIT_NO_PLAN, CompileError, Diagnostic
from compiler.optimize import canonical as _canonical
from compiler.optimize.clock import time_left
from compiler.optimize.descend import descend
from compiler.optimize.explain import explain
from compiler.optimize.formulate import Problem
from compiler.optimize import schedules
from compiler.optimize.engine import search
from compiler.optimize.floor_weights import reweighed_bound
from compiler.optimize.month_floors import Floors, blocks, month_floors, stitched, with_month_floors
from compiler.optimize.neighbourhoods import choice_groups
from compiler.optimize.settings import Settings, SolveOptions
from compiler.optimize.solve import HighsModel, Running, Solution, relative_gap, solve
from compiler.optimize.start import greedy_start
from compiler.problem import integers_of

Plan = Mapping[str, float]        # an integer plan: variable name -> value


def pulp_price(s: Settings) -> Callable:
    """Polish's LPs through pulp, where no HiGHS model was built: price(problem, solver=, fixed=)."""
    return functools.partial(solve, seed=s.seed)


class Models:
    """The HiGHS models of one problem, built when first needed: `models(k)` is the k-th (the
    rounds solve settings.workers at once, each on its own)."""

    def __init__(self, problem: Problem, seed: int) -> None:
        self.problem, self.built, self.seed = problem, [], seed

    def __call__(self, k: int = 0) -> HighsModel:
        while len(self.built) <= k:
            self.built.append(HighsModel(self.problem, self.seed))
        return self.built[k]


def first_plan(problem: Problem, given: Plan | None, models: Models) -> tuple[Plan | None, str]:
    """(the plan every path starts from, which it is): the greedy start (start.py), or `given` (a
    plan from outside: SolveOptions.start) where it is a plan of this problem no dearer than the
    greedy start, priced on `models()`. A tie keeps `given`: a re-plan keeps what runs unless a
    change saves. A variable `given` does not name is 0. (None, "greedy start") where neither is
    a plan."""
    greedy = greedy_start(problem)
    if given is None:
        return greedy, "greedy start"
    held = integers_of(problem, given)
    k = _cheapest(models(), (held, greedy))
    return (None, "greedy start") if k is None else ((held, greedy)[k], ("given start", "greedy start")[k])


def with_floors(problem: Problem, seconds: float | None, settings: Settings,
                say) -> tuple[Problem, Floors, Running | None]:
    """The problem with its month floors (month_floors.py), the floors (the blocks' own plans), and
    the coarse floors where they run (coarse_floors), started on a thread of their own as soon as
    a block of the floors ends past settings.coarse_after_nodes nodes: the floors' last block
    often runs alone for most of their time, and the coarse blocks take the core it leaves idle.
    Whether they run is coarse_floors' rule either way; only when they start depends on timing."""
    say(f"month floors: blocks of {settings.block_months} months, {settings.workers} at a time")
    wanted, started, lock = _other_partition(problem, settings), [], threading.Lock()

    def on_block(nodes: int) -> None:
        with lock:
            if wanted and not started and nodes > settings.coarse_after_nodes:
                started.append(_start_coarse(problem, seconds, settings, say))

    floors = month_floors(problem, seconds=seconds, settings=settings, say=say, on_block=on_block)
    say(f"month floors: {len(floors.rows)} blocks")
    coarse = started[0] if started else coarse_floors(problem, floors, seconds, settings, say)
    return with_month_floors(problem, floors=floors), floors, coarse


def coarse_floors(problem: Problem, floors: Floors, seconds: float | None, s: Settings, say) -> Running | None:
    """The month floors of blocks of settings.coarse_block_months months (month_floors.py) on
    `problem` (the model without the floors' rows), started on a thread of their own to run
    beside the month windows, one block at a time; None where they do not run: no block of
    `floors` took more than settings.coarse_after_nodes nodes, or the longer blocks are no other
    partition of two or more. Nothing the windows do reads them, so the plan does not depend on
    when they finish; with_coarse waits."""
    if not floors.most_nodes > s.coarse_after_nodes or not _other_partition(problem, s):
        return None
    return _start_coarse(problem, seconds, s, say)


def _other_partition(problem: Problem, s: Settings) -> bool:
    """Whether the coarse blocks are a partition of two or more other than the floors' own."""
    coarse = blocks(problem, s.coarse_block_months)
    return len(coarse) >= 2 and coarse != blocks(problem, s.block_months)


def _start_coarse(problem: Problem, seconds: float | None, s: Settings, say) -> Running:
    size = s.coarse_block_months
    say(f"coarse month floors: {len(blocks(problem, size))} blocks of {size} months, on a thread of their own")
    return Running(lambda: month_floors(problem, size=size, seconds=seconds, settings=replace(s, workers=1)),
                   name="coarse floors")


def with_coarse(problem: Problem, coarse: Running | None, bound: float | None, seed: int,
                say: Callable[[str], None] = lambda _m: None) -> float | None:
    """`bound` (the LP relaxation's with the month floors, or None), or the LP relaxation's of
    `problem` with the coarse floors' rows added too, where they ran and that is higher. A
    coarse block of the same months as a floor's is the same sub-problem, and its row is left out."""
    if coarse is None:
        return bound
    say("coarse month floors: their last blocks")
    have = {c.name for c in problem.constraints}
    rows = tuple(c for c in coarse.result().rows if c.name not in have)
    if bound is None or not rows:
        return bound
    lp = HighsModel(replace(problem, constraints=problem.constraints + rows), seed).solve(relax=True)
    return max(bound, lp.objective) if lp.has_solution else bound


def reweighed(problem: Problem, floors: Floors, sol: Solution, settings: Settings, say) -> Solution | None:
    """`sol` under the bound of the floors' weights re-split (floor_weights.py) on `problem` (the
    model without the floors' rows), where that lifts its bound; None where it does not."""
    bound = reweighed_bound(problem, floors, sol.objective, settings, say)
    return with_bound(sol, bound) if bound is not None and settings.above(bound, sol.best_bound) else None


def month_windows(problem: Problem, start: Plan, block_plans: Plan, models: Models, options: SolveOptions,
                  seconds: Callable[[], float | None], say) -> tuple[Plan, float | None]:
    """The cheaper of the start and the blocks' plans stitched together, improved by the month
    windows (schedules.months on the engine) until it is within the gap asked
    (settings.months_gap) of the LP bound: (that plan, the bound with the floors or None)."""
    s = options.settings
    start = cheapest(models(), start, stitched(problem, block_plans, models(), nodes=s.window_nodes,
                                               time_limit=seconds()))
    schedule = schedules.months(problem, s, enough=options.gap)
    return search(problem, start, models, schedule, seconds=seconds(), say=say, settings=s)


def rounds(problem: Problem, start: Plan, models: Models, options: SolveOptions, say,
           seconds: float | None) -> tuple[Plan, float | None]:
    """The neighbourhood rounds (schedules.rounds on the engine) from `start`: (their plan, the
    LP relaxation's bound or None)."""
    s = options.settings
    schedule = schedules.rounds(problem, options.max_nodes, settings=s)
    return search(problem, start, models, schedule, gap=options.gap, say=say, seconds=seconds, settings=s)


def highs_search(model: HighsModel, start: Plan, bound: float, nodes: int | None, settle: bool,
                 gap: float | None, time_limit: float | None, s: Settings, say=None,
                 plans_only: bool = False, default: bool = False) -> Solution:
    """Branch-and-bound on the rounds' (or windows') own HiGHS model, from their plan, for `nodes`;
    where `settle`, a search that proves less than settings.settle_gap but lifted the bound goes
    on settled at that gap (settled). `say` hears its nodes, plan and bound as they move.
    `plans_only`: the search's bound will be dropped (narrowed candidates), so only its plans count.
    `default`: no budget or gap was asked for, so the search seeking the optimum's proof stops
    settings.proof_points interrupt points after it proves settings.settle_gap, the target (not
    where `plans_only`: a proof on a bound that will be dropped is no reason to stop looking)."""
    within = (s.settle_gap, s.proof_points) if default and gap is None and not plans_only else None
    sol = model.solve(start=start, max_nodes=nodes, gap=gap, time_limit=time_limit, within=within, progress=say)
    if settle and sol.has_solution and sol.gap > s.settle_gap and _lifted(sol, bound, s):
        sol = settled(model, sol, s, say, plans_only)
    if (settle or within) and sol.has_solution and sol.gap <= s.proven_gap:
        sol = replace(sol, status="optimal")    # stopped where the proof ends anyway
    return sol


def pulp_search(problem: Problem, start: Plan | None, solver: str, nodes: int | None, gap: float | None,
                time_limit: float | None, s: Settings) -> Solution:
    """Branch-and-bound through pulp (CBC, or HiGHS where no model of its own was built)."""
    return solve(problem, solver=solver, time_limit=time_limit, gap=gap, start=start, max_nodes=nodes, seed=s.seed)


def _lifted(sol: Solution, bound: float, s: Settings) -> bool:
    """Whether a search's proven bound is above the LP relaxation's `bound` (beyond rounding)."""
    return s.above(sol.best_bound, bound)


def settled(model: HighsModel, first: Solution, s: Settings, say=None, plans_only: bool = False) -> Solution:
    """The search after `first` (settings.settle_after nodes that did not prove settle_gap) goes on
    from its plan with HiGHS's mip_rel_gap at settle_gap, for settle_nodes nodes at most, or
    until its plan and bound have not moved in settle_stall nodes (its plan alone, where
    `plans_only`: a bound that will be dropped is no progress). Both searches ran on the same
    model, so each one's bound holds for every plan: the plan is the cheaper of the two, the
    bound the higher, and the plan is reported feasible with that gap."""
    more = model.solve(start=first.values, max_nodes=s.settle_nodes, gap=s.settle_gap, stall=s.settle_stall,
                       stall_on_bound=not plans_only, cut_pool=s.settle_cut_pool, progress=say)
    if not more.has_solution:
        return first
    plan = more if more.objective < first.objective else first
    bound = min(plan.objective, max(first.best_bound, more.best_bound))
    return replace(plan, status="feasible", best_bound=bound, gap=relative_gap(plan.objective, bound),
                   seconds=first.seconds + more.seconds)


def _cheapest(model: HighsModel, plans) -> int | None:
    """The index of the cheapest of the integer `plans` (None ones and those that are no plan left
    out) priced on `model`, the first on a tie; None where none is a plan."""
    priced = [(sol.objective, k) for k, p in enumerate(plans) if p is not None
              for sol in [model.solve(fixed=p)] if sol.has_solution]
    return min(priced)[1] if priced else None


def cheapest(model: HighsModel, *plans: Plan | None) -> Plan | None:
    """The cheapest of the integer `plans` priced on `model` (the first on a tie), or the first
    where none is a plan."""
    k = _cheapest(model, plans)
    return plans[0 if k is None else k]


def gap_of(plan: Plan, bound: float, model: HighsModel) -> float:
    """How far above `bound` the plan's cost is, as a share of it (1 where it has no price)."""
    sol = model.solve(fixed=plan)
    return relative_gap(sol.objective, bound) if sol.has_solution else 1.0


def with_bound(sol: Solution, bound: float) -> Solution:
    """`sol` under the LP relaxation's `bound`, where that is the stronger."""
    floor = min(bound, sol.objective)
    return replace(sol, best_bound=floor, gap=relative_gap(sol.objective, floor))


def priced_on(model: HighsModel):
    """polish's LP solves on a HiGHS model of the problem (a re-solve, not a pulp build)."""
    def price(_problem, solver, fixed):
        return replace(model.solve(fixed=fixed), solver=solver)
    return price


def unsearched(plan: Plan, bound: float, model: HighsModel, solver: str):
    """(Solution, price) for the rounds' or windows' plan taken as the answer without a search:
    its continuous variables at their cheapest under the LP's bound, an LP on their own HiGHS
    `model`; `price` runs polish's LPs on that model too."""
    sol = replace(model.solve(fixed=plan), solver=solver)
    if sol.has_solution:
        floor = min(bound, sol.objective)
        sol = replace(sol, status="feasible", best_bound=floor, gap=relative_gap(sol.objective, floor),
                      searched=False)
    return sol, priced_on(model)


def stop_unless_planned(problem: Problem, sol: Solution, solver: str, nodes: int | None,
                        options: SolveOptions) -> None:
    """Raise the compile's error where the search found no plan: why the spec is infeasible
    (explain.py), or which limit stopped it first."""
    if sol.status == "infeasible":
        raise explain(problem, solver=solver, time_limit=options.time_limit, max_nodes=options.max_nodes,
                      settings=options.settings)
    if not sol.has_solution:
        limits = [f"{nodes:,} branch-and-bound nodes"] if nodes else []
        limits += [f"{options.time_limit:g} s"] if options.time_limit else []
        within = f" within {' and '.join(limits)}" if limits else ""
        raise CompileError([Diagnostic("E501", f"the solver ({solver}) found no plan{within}",
                                       hint="raise --max-nodes or --time-limit, or loosen --gap")],
                           exit_code=EXIT_NO_PLAN)


def polish(problem: Problem, sol: Solution, solver: str, price: Callable, s: Settings,
           model: HighsModel | None = None, time_limit: float | None = None) -> Solution:
    """The incumbent's continuous variables at their cheapest: a solver stopped by a limit returns
    an integer point whose on-demand hours or storage may exceed what its choices need (a plan
    that pays for unused on-demand hours; a heuristic's incumbent, or one within --gap, can too).
    Holding every integer at its value leaves an LP; its optimum prices exactly the plan's
    choices, which the audit re-derives. Before it, on `model` where one is given, the shared
    integers are re-planned with the choices held (shared, within `time_limit` seconds where one
    is given: the user's --time-limit), and the integers are lowered as far as the rows allow
    (descend.py: a node held in a month nothing runs on it is let go). The bound stays."""
    if model is not None:
        sol = shared(problem, sol, model, s, time_limit)

    def no_dearer(lp) -> bool:
        return lp.has_solution and not s.above(lp.objective, sol.objective)

    lowered, held = integers_of(problem, descend(problem, sol.values)), integers_of(problem, sol.values)
    lp = price(problem, solver=solver, fixed=lowered)
    if not no_dearer(lp) and lowered != held:
        lp = price(problem, solver=solver, fixed=held)   # the incumbent's own integers, as before
    if not no_dearer(lp):
        return sol
    return replace(sol, objective=lp.objective, gap=relative_gap(lp.objective, sol.best_bound), values=lp.values,
                   best_bound=min(sol.best_bound, lp.objective))


def shared(problem: Problem, sol: Solution, model: HighsModel, s: Settings,
           time_limit: float | None = None) -> Solution:
    """`sol` with its shared integers (nodes rented, reserved and bought, fabric, storage tiers,
    the limits' indicators: every integer but the choices of what runs where) re-planned with
    its choices held (neighbourhoods.choice_groups), where that is cheaper. A search stopped by
    its node budget can leave terms bought a month too early, or on-demand hours where a term
    pays: moves of several integers at once, which descend.py (one integer lowered at a time)
    cannot make. The choices held leave a small MIP, searched settings.shared_nodes nodes from
    the incumbent. The incumbent is a plan of it, so the result is never dearer; the bound stays."""
    if not sol.has_solution:
        return sol
    choices = frozenset().union(*(names for _group, names in choice_groups(problem)))
    integers = integers_of(problem, sol.values)
    held = {n: x for n, x in integers.items() if n in choices}
    if len(held) == len(integers):
        return sol
    again = model.solve(fixed=held, start=integers, max_nodes=s.shared_nodes, time_limit=time_limit)
    if not again.has_solution or not s.cheaper(again.objective, sol.objective):
        return sol
    bound = min(sol.best_bound, again.objective)
    return replace(sol, objective=again.objective, values=again.values, best_bound=bound,
                   gap=relative_gap(again.objective, bound))


def canonical(problem: Problem, sol: Solution, solver: str, price: Callable, s: Settings,
              time_limit: float | None = None, say: Callable[[str], None] = lambda _msg: None) -> Solution:
    """The polished plan's equal-cost choices (which candidates carry a month's replicas) made by
    a fixed rule instead of the solver's path (canonical.py): the same spec, catalog and versions
    give the same plan on every machine. Never dearer than `sol`."""
    return _canonical.canonical(problem, sol, price, solver, s, time_left(time_limit), say)
