"""Fix-and-optimize rounds (compiler/optimize/improve.py): a start at least as cheap as the
greedy one, the same on every run, and no change for platforms below the size threshold."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from compiler.optimize import improve as improve_mod
from compiler.optimize.formulate import Constraint, formulate
from compiler.optimize.improve import choice_groups, improve
from compiler.optimize.solve import solve
from compiler.optimize.start import greedy_start

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from generate import generate  # noqa: E402


def _cost_at(problem, values):
    """The cheapest completion of a start: every integer variable held, the rest solved."""
    rows = tuple(Constraint(f"fix[{n}]", "fix", ((n, 1.0),), "==", v) for n, v in sorted(values.items()))
    sol = solve(replace(problem, constraints=problem.constraints + rows), solver="highs")
    assert sol.status == "optimal", "the start breaks a constraint"
    return sol.objective


@pytest.fixture(scope="module")
def problem():
    return formulate(generate(20, 1, horizon=12))


def test_groups_split_the_choices_and_leave_the_shared_pools_free(problem):
    groups = dict(choice_groups(problem))
    assert set(groups) == {"training", "serving"}
    assert groups["training"] and groups["serving"]
    assert not groups["training"] & groups["serving"]
    for name in groups["training"]:
        assert name.startswith("x[")
    for name in groups["serving"]:
        assert name.startswith(("y[", "mix["))
    kinds = {v.name: v.kind for v in problem.variables}
    shared = {n for n, k in kinds.items() if k != "continuous"} - groups["training"] - groups["serving"]
    assert shared and not any(n.startswith(("x[", "y[", "mix[")) for n in shared)


def test_below_the_threshold_the_start_is_returned_as_it_is(problem):
    start = greedy_start(problem)
    assert len([v for v in problem.variables if v.kind != "continuous"]) < improve_mod.MIN_INTEGERS
    assert improve(problem, start, solve) is start


def test_rounds_never_make_the_start_dearer_and_repeat_exactly(problem, monkeypatch):
    monkeypatch.setattr(improve_mod, "MIN_INTEGERS", 0)
    start = greedy_start(problem)
    messages = []
    better = improve(problem, start, solve, say=messages.append)
    again = improve(problem, start, solve)
    assert better == again                                   # node budgets, not the clock
    assert set(better) == {v.name for v in problem.variables if v.kind != "continuous"}
    # Measured on the exact model (every node count and serving candidate): the greedy start
    # completes at $7.75M; the rounds reach $4.26M, 2.0% above the optimum HiGHS proves for the
    # whole problem ($4.18M). (Before the model was exact: $6.79M -> $4.71M, the optimum then.)
    before, after = _cost_at(problem, start), _cost_at(problem, better)
    best = solve(problem, solver="highs", gap=1e-6).objective
    assert after < 0.6 * before
    assert best <= after <= 1.025 * best
    assert messages and messages[0].startswith("improving the start: training choices, round 1: $")


def test_a_time_budget_that_is_spent_returns_the_start(problem, monkeypatch):
    monkeypatch.setattr(improve_mod, "MIN_INTEGERS", 0)
    start = greedy_start(problem)
    assert improve(problem, start, solve, seconds=0.0) == start


@pytest.mark.parametrize("user, expected", [(None, improve_mod.ROUND_NODES), (0, improve_mod.ROUND_NODES),
                                            (5, 5), (10_000, improve_mod.ROUND_NODES)])
def test_a_round_takes_no_more_nodes_than_the_user_allows(problem, monkeypatch, user, expected):
    monkeypatch.setattr(improve_mod, "MIN_INTEGERS", 0)
    budgets = []

    def recording(*args, **kwargs):
        budgets.append(kwargs["max_nodes"])
        return solve(*args, **kwargs)

    improve(problem, greedy_start(problem), recording, max_nodes=user)
    assert budgets and set(budgets) == {expected}
