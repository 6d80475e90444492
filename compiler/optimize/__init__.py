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
    chosen = strategy.choose(problem, options)
    problem, sol, path = strategy.run(problem, chosen, options)
    return decode(problem, sol, path)


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
