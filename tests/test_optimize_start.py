"""The MIP start (compiler/optimize/start.py): a plan CBC can fall back on when its own search
finds none within the time limit."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from compiler.optimize import SolveOptions, optimize
from compiler.optimize.formulate import Constraint, formulate
from compiler.optimize.solve import solve
from compiler.optimize.start import greedy_start

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from generate import generate  # noqa: E402


def _fixed(problem, values):
    """The problem with every integer variable held at the start's value."""
    rows = tuple(Constraint(f"fix[{n}]", "fix", ((n, 1.0),), "==", v) for n, v in sorted(values.items()))
    return replace(problem, constraints=problem.constraints + rows)


@pytest.mark.parametrize("n,seed", [(10, 0), (20, 1), (30, 2)])
def test_the_start_is_a_feasible_plan_and_no_cheaper_than_the_optimum(n, seed):
    problem = formulate(generate(n, seed, horizon=12))
    start = greedy_start(problem)
    assert start is not None
    at_start = solve(_fixed(problem, start), solver="highs")
    assert at_start.status == "optimal", "the start breaks a constraint"
    best = solve(problem, solver="highs", gap=1e-6)
    assert at_start.objective >= best.objective * (1 - 1e-6)


def test_cbc_returns_the_start_or_better_when_time_runs_out():
    # 100 workloads over 6 sites and 36 months: CBC alone found no integer point in 150 s
    # (exit 5); with the start it returns a plan and says how far from the bound it may be.
    cands = generate(100, 0)
    problem = formulate(cands)
    start = greedy_start(problem)
    at_start = solve(_fixed(problem, start), solver="highs")
    plan = optimize(cands, SolveOptions(solver="cbc", time_limit=8, gap=0.005))
    assert plan.solver.status in ("feasible", "optimal")
    assert plan.total_cost_usd <= at_start.objective * (1 + 1e-6)
    assert plan.solver.best_bound_usd <= plan.total_cost_usd
    assert 0.0 <= plan.solver.gap < 1.0


def test_the_start_respects_site_limits_on_a_crowded_platform():
    # 200 workloads: the cheapest candidates alone would buy more nodes than dc1's 1,500 kW
    # power; the start passes over what no longer fits, and stays a feasible plan.
    problem = formulate(generate(200, 0))
    start = greedy_start(problem)
    assert start is not None
    assert solve(_fixed(problem, start), solver="highs").status == "optimal"
