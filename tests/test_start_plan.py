"""A plan given from outside (SolveOptions.start: a deployed plan to re-plan from) as the start of
every solve path: taken where it is a plan of the problem no dearer than the greedy start (a tie
keeps it), left where it is not, and recorded as the path's first step.

Oracles: the optimum HiGHS proves on the whole problem (solve with no gap), and the greedy start
priced on its own; neither uses steps.first_plan."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from compiler.optimize import DEFAULT, SolveOptions, optimize
from compiler.optimize.formulate import formulate
from compiler.optimize.solve import HighsModel, solve
from compiler.optimize.start import greedy_start
from compiler.optimize.steps import Models, first_plan

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from generate import generate  # noqa: E402


@pytest.fixture(scope="module")
def candidates():
    return generate(6, 1, horizon=6)


@pytest.fixture(scope="module")
def optimum(candidates):
    """(the problem, its optimal solution), proven by HiGHS with no gap."""
    problem = formulate(candidates)
    sol = solve(problem, solver="highs", gap=0.0)
    assert sol.status == "optimal"
    return problem, sol


def _integers(problem, values):
    return {v.name: float(round(values.get(v.name, 0.0))) for v in problem.variables if v.kind != "continuous"}


def test_a_cheaper_given_plan_is_the_start_and_a_broken_one_is_not(optimum):
    problem, sol = optimum
    best = _integers(problem, sol.values)
    greedy = greedy_start(problem)
    greedy_cost = HighsModel(problem).solve(fixed=greedy).objective
    assert sol.objective < greedy_cost          # the case: the given plan is the cheaper
    assert first_plan(problem, best, Models(problem, DEFAULT.seed)) == (best, "given start")
    assert first_plan(problem, None, Models(problem, DEFAULT.seed)) == (greedy, "greedy start")
    broken = {n: 0.0 for n in best}             # nothing placed: no plan of this problem
    assert not HighsModel(problem).solve(fixed=broken).has_solution
    assert first_plan(problem, broken, Models(problem, DEFAULT.seed)) == (greedy, "greedy start")
    # a tie keeps the given plan: the greedy start given back is taken as given
    assert first_plan(problem, greedy, Models(problem, DEFAULT.seed))[1] == "given start"


def test_a_compile_from_the_optimum_ends_at_it_and_says_it_started_there(candidates, optimum):
    problem, sol = optimum
    plan = optimize(candidates, SolveOptions(start=_integers(problem, sol.values)))
    assert plan.total_cost_usd == pytest.approx(sol.objective, abs=0.01)
    assert plan.solver.strategy.steps[0] == "given start"
    assert optimize(candidates, SolveOptions()).solver.strategy.steps[0] == "greedy start"
