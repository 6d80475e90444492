"""Reweighed floors (compiler/optimize/floor_weights.py): the month floors' spanning costs re-split
between the blocks lift the bound, and every split keeps it a bound. Oracles: a case worked by
hand, the model solved to its end (HiGHS, gap 0), and the projection checked against its
definition by brute force."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from compiler.optimize import floor_weights
from compiler.optimize.floor_weights import _onto_simplex, reweighed_bound
from compiler.optimize.formulate import Problem
from compiler.optimize.month_floors import month_floors
from compiler.optimize.settings import DEFAULT
from compiler.optimize.solve import HighsModel

from optimize_fixtures import reserved_or_on_demand


def _uneven() -> Problem:
    """Two months of one service: 2 replicas in month 0, 1 in month 1, each on a node of its own,
    on demand at $6 a month (u_m) or reserved (r, $10 for both months). By hand: r = 1 and one
    node on demand in month 0, $16 (none reserved: $18; two: $20). Month blocks with r at $5 a
    month: month 0 alone takes two reserved nodes ($10), month 1 one ($5), $15 in all. With r's
    cost split $6 / $4 the blocks take $12 (either way) and $4: $16, the optimum."""
    return reserved_or_on_demand((2, 1), term_usd=10.0)


def test_the_hand_worked_split_lifts_the_floors_to_the_optimum():
    p = _uneven()
    assert HighsModel(p).solve(gap=0.0).objective == pytest.approx(16.0)
    floors = month_floors(p, size=1)
    assert [r.rhs for r in floors.rows] == pytest.approx([10.0, 5.0], rel=1e-6)
    # one Polyak step toward $16: blocks buy r = 2 and 1, g = (+1/2, -1/2), step (16 - 15) / (1/2) = 2,
    # the weights $6 / $4
    said = []
    assert reweighed_bound(p, floors, 16.0, say=said.append) == pytest.approx(16.0, rel=1e-6)
    assert said == ["reweighed floors: pass 1 of 8: bound $16"]


@pytest.mark.parametrize("plan_cost", [16.0, 16.5, 17.0, 20.0])
def test_no_split_bounds_above_the_optimum_and_every_split_keeps_each_cost(plan_cost, monkeypatch):
    p = _uneven()
    floors = month_floors(p, size=1)
    seen = []
    real = floor_weights.solve_blocks
    monkeypatch.setattr(floor_weights, "solve_blocks",
                        lambda pr, cut, w, *a, **k: seen.append(dict(w)) or real(pr, cut, w, *a, **k))
    bound = reweighed_bound(p, floors, plan_cost)
    assert seen
    for w in seen:           # each pass: r's weights sum to its cost and none is negative
        assert w[("reserved[p@000]", frozenset({0}))] + w[("reserved[p@000]", frozenset({1}))] == pytest.approx(10.0)
        assert min(w.values()) >= 0
    assert bound is None or 15.0 < bound <= 16.0 * (1 + 1e-9)


def test_no_pass_where_the_floors_took_many_nodes_or_the_plan_is_within_the_gap():
    p = _uneven()
    floors = month_floors(p, size=1)
    assert reweighed_bound(p, replace(floors, most_nodes=DEFAULT.reweigh_nodes + 1), 16.0) is None
    assert reweighed_bound(p, floors, 15.1) is None        # within 1% of the floors' $15
    assert reweighed_bound(p, floors, 16.0, replace(DEFAULT, reweigh_passes=0)) is None


@pytest.mark.parametrize("v,total", [([0.5, 0.5], 1.0), ([2.0, -1.0], 1.0), ([1.0, 1.0, 1.0], 0.3),
                                     ([3.0, 0.2, -0.4], 2.0), ([0.0, 0.0], 4.0)])
def test_the_projection_is_the_nearest_point_of_the_simplex(v, total):
    x = _onto_simplex(v, total)
    assert sum(x) == pytest.approx(total) and min(x) >= 0
    # brute force: no point of a fine grid on the simplex is nearer
    steps = 40
    dist = sum((a - b) ** 2 for a, b in zip(x, v))
    for k in itertools.product(range(steps + 1), repeat=len(v) - 1):
        if sum(k) <= steps:
            y = [total * i / steps for i in k] + [total * (steps - sum(k)) / steps]
            assert dist <= sum((a - b) ** 2 for a, b in zip(y, v)) + 1e-9
