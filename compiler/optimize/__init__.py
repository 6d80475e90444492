"""The optimize stage: Candidates -> Plan (DESIGN.md section 4).

formulate.py writes the MILP (maths in its docstring) as a Problem (compiler/problem.py);
strategy.py chooses the solve path once and runs its steps (steps.py) under one Settings object
(settings.py); compiler/readback reads the solution back into a Plan; explain.py says why a spec
is infeasible.
"""

from __future__ import annotations

from dataclasses import replace

from compiler.candidates import Candidates
from compiler.diagnostics import EXIT_INFEASIBLE, CompileError
from compiler.optimize.settings import DEFAULT, Settings, SolveOptions
from compiler.plan import Plan
from compiler.problem import integers_of

__all__ = ["DEFAULT", "Settings", "SolveOptions", "greedy_plan", "optimize"]


def optimize(candidates: Candidates, options: SolveOptions = SolveOptions()) -> Plan:
    """Pick the cheapest platform; raise CompileError exit 3 (infeasible) or 5 (no plan in time)."""
    # the solver's modules import pulp and highspy: loaded here, so `validate` starts fast
    from compiler.optimize import strategy
    from compiler.optimize.explain import no_candidates
    from compiler.optimize.formulate import formulate
    from compiler.readback.decode import decode

    problem = formulate(candidates)
    missing = no_candidates(problem)
    if missing:
        raise CompileError(missing, exit_code=EXIT_INFEASIBLE)
    if options.progress:
        options.progress(f"formulated {len(problem.variables)} variables, {len(problem.constraints)} constraints")
    if options.kept is not None:
        from compiler.optimize import moves

        if options.kept.priced:
            problem = moves.with_moves(problem, options.kept)
        options = replace(options, start=_kept_start(problem, options))
    chosen = strategy.choose(problem, options)
    problem, sol, path = strategy.run(problem, chosen, options)
    if options.kept is None:
        return decode(problem, sol, path)
    from compiler.optimize.moves import moves_usd, without_moves
    from compiler.readback.decode import gap_note

    own = without_moves(problem)
    plan = decode(own, sol, path)    # the plan's own costs, not its moves' price
    moved = round(moves_usd(problem, sol.values), 2)
    return replace(plan, solver=replace(plan.solver, moves_usd=moved, gap_note=gap_note(own, sol, path, moved)))


def _kept_start(problem, options: SolveOptions):
    """The baseline with the cheapest placement of what is new, completed by a search of
    settings.window_nodes nodes: first with the baseline's own decisions held (a spec that only
    relaxes the baseline's then starts from the baseline itself, and can only end cheaper); else
    with every workload the change leaves a plan of held exactly as the baseline ran it and the
    pools free to follow the rest (_untouched); else with its workloads only kept where they ran
    (moves.kept_plan); or the start given, where none completes."""
    from compiler.optimize.moves import as_ran, kept_plan
    from compiler.optimize.solve import HighsModel

    model = HighsModel(problem, options.settings.seed)
    where, exact = kept_plan(problem, options.kept), as_ran(problem, options.kept)
    say = options.progress or (lambda _msg: None)
    steps = ("the baseline's decisions held", "the workloads the change leaves a plan of held",
             "each workload kept where it ran")
    for step, fixed in zip(steps, (exact, _untouched(problem, exact), where)):
        say(f"starting from the baseline: {step}")
        sol = model.solve(fixed=fixed, max_nodes=options.settings.window_nodes)
        if sol.has_solution:
            return integers_of(problem, sol.values)
    return options.start


def _untouched(problem, exact: dict[str, float]) -> dict[str, float]:
    """The baseline's decisions about each workload whose own rows it still satisfies (a service
    whose demand did not outgrow its replicas, a job whose candidate is still there), and nothing
    else: the workloads the change touches, and every pool's terms, nodes and purchases, are left
    to the search, so one service's traffic moves that service and the pools under it, not its
    neighbours."""
    from compiler.optimize.moves import touched

    by_name, moved = {v.name: v for v in problem.variables}, touched(problem, exact)
    return {n: x for n, x in exact.items()
            if by_name[n].workload is not None and by_name[n].workload not in moved and by_name[n].family != "moved"}


def greedy_plan(candidates: Candidates) -> Plan | None:
    """The greedy start (start.py) as a plan, with no search: its integers held and its continuous
    variables at their cheapest (one LP). None where there is no start or it breaks a limit. A
    quick upper bound on the optimum (pipeline.estimate_candidates); not a compile's answer."""
    from compiler.optimize.explain import no_candidates
    from compiler.optimize.formulate import formulate
    from compiler.optimize.solve import HighsModel
    from compiler.optimize.start import greedy_start
    from compiler.readback.decode import decode

    problem = formulate(candidates)
    start = None if no_candidates(problem) else greedy_start(problem)
    if start is None:
        return None
    sol = HighsModel(problem).solve(fixed=start)
    if not sol.has_solution:
        return None
    return decode(problem, replace(sol, status="feasible", best_bound=0.0, gap=1.0, searched=False))
