"""The serving-demand cuts (compiler/optimize/cuts.py): valid for every integer point, and they
cut off the fractional points the LP relaxation would use."""

from __future__ import annotations

import itertools
import random

import pytest

from compiler.optimize.cuts import _pair_facets, row_cuts


def test_pair_facets_hand_worked():
    # 3 y1 + 5 y2 >= 7 in the box [0,3] x [0,2]: minimal points (0,2), (1,1), (2,1), (3,0);
    # the lower hull runs (0,2) -> (1,1) -> (3,0), so its facets are y1 + y2 >= 2 and y1 + 2 y2 >= 3.
    assert _pair_facets(3.0, 5.0, 3, 2, 7.0) == [(1, 1, 2), (1, 2, 3)]


def test_cuts_remove_the_lp_point():
    cuts = row_cuts((3.0, 5.0), (3, 2), 7.0)
    lp_point = (7 / 3, 0.0)         # cheapest fractional cover if y1 is cheaper per unit
    assert any(sum(a * y for a, y in zip(coef, lp_point)) < rhs - 1e-9 for coef, rhs in cuts)


@pytest.mark.parametrize("seed", range(40))
def test_cuts_hold_for_every_integer_point(seed):
    rng = random.Random(seed)
    n = rng.choice([2, 2, 3, 4])
    taus = tuple(round(rng.uniform(200, 4000), 3) for _ in range(n))
    demand = round(rng.uniform(100, 20000), 3)
    ubs = tuple(max(1, -(-int(demand) // int(t))) for t in taus)   # ceil(D / tau), as formulate sets
    cuts = row_cuts(taus, ubs, demand)
    for y in itertools.product(*(range(u + 1) for u in ubs)):
        if sum(t * v for t, v in zip(taus, y)) >= demand - 1e-9:
            for coef, rhs in cuts:
                assert sum(a * v for a, v in zip(coef, y)) >= rhs - 1e-6, (y, coef, rhs)
    # Each pair facet is tight at some integer point (a facet, not a loose bound).
    for coef, rhs in cuts:
        tight = min(sum(a * v for a, v in zip(coef, y))
                    for y in itertools.product(*(range(u + 1) for u in ubs))
                    if sum(t * v for t, v in zip(taus, y)) >= demand - 1e-9)
        assert tight == pytest.approx(rhs, abs=1e-6)


def test_rows_with_many_replicas_get_no_cuts():
    # A 4,000 rps service needs tens of replicas per site: lifting there took 47 s of formulate
    # for a 10-workload spec, for a bound gain of at most one replica in MAX_REPLICAS.
    from compiler.optimize import cuts
    many = cuts.MAX_REPLICAS + 1
    assert cuts.row_cuts((1000.0, 1500.0, 700.0), (many, 12, 20), 16_500.0) == ()
    assert cuts.row_cuts((1000.0, 1500.0), (4, 3), 3_500.0) != ()
