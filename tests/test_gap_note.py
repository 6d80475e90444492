"""plan.json's solver.gap_note: what the reported gap means, and where the bound is known weak."""

from __future__ import annotations

from types import SimpleNamespace

from compiler.readback.decode import gap_note
from compiler.optimize.formulate import Constraint


def _sol(status, gap=0.1, bound=900.0, searched=True):
    return SimpleNamespace(status=status, gap=gap, best_bound=bound, searched=searched)


def _problem(packing=False, reservations=()):
    rows = (Constraint("packing[x]", "packing", (("v", 8.0),), ">=", 0.0),) if packing else ()
    return SimpleNamespace(constraints=rows, reservations=reservations)


def test_an_optimal_plan_says_no_plan_is_cheaper_than_the_bound():
    note = gap_note(_problem(packing=True), _sol("optimal", 0.004, 1234.5))
    assert note.startswith("Optimal within the gap asked for") and "$1,234.50" in note
    assert "weak" not in note


def test_a_stopped_search_states_the_distance_and_where_the_bound_is_weak():
    weak = gap_note(_problem(packing=True), _sol("feasible", 0.1335, 1523795.23))
    assert "at most 13.35% above the optimum" in weak and "$1,523,795.23" in weak
    assert "bound is weak where services share whole nodes" in weak
    # a default search stops too (its budget, its stall, past its proof of 1%), not only at a limit asked for
    assert weak.startswith("The search stopped before proving the optimum (at a node, stall or time limit")
    reserved = gap_note(_problem(reservations=("r",)), _sol("feasible"))
    assert "weak" in reserved
    # training on owned or on-demand nodes only: no lumps, nothing to warn about
    plain = gap_note(_problem(), _sol("feasible", 0.02))
    assert "at most 2.00% above the optimum" in plain and "weak" not in plain


def test_a_plan_without_a_search_says_its_bound_is_the_lp_relaxations():
    note = gap_note(_problem(packing=True), _sol("feasible", 0.2598, 6483974.16, searched=False))
    assert note.startswith("This is the improving rounds' plan, with no branch-and-bound search")
    assert "$6,483,974.16, the LP relaxation's bound" in note and "at most 25.98% above the optimum" in note
    assert "weak" in note and "stopped at its node" not in note
