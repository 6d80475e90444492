"""Replica mixes (compiler/optimize/mixes.py): the minimal integer points of a service-month.

Checked by hand on small cases and against brute-force enumeration of the whole box: every mix
carries the demand (and survives losing any site), none can drop a replica, and every integer
point that carries the demand lies above some mix (so choosing one mix loses no plan).
"""

from __future__ import annotations

import itertools
import random

import pytest

from compiler.optimize.mixes import minimal_mixes


def _carries(y, taus, sites, demand, survive):
    total = sum(t * k for t, k in zip(taus, y))
    if total < demand - 1e-9:
        return False
    return not survive or all(
        total - sum(t * k for t, k, ss in zip(taus, y, sites) if ss == s) >= demand - 1e-9
        for s in set(sites))


def test_hand_worked_two_sites_survive():
    # 5,000 tokens/s, replicas of 3,000 tokens/s at two sites, N+1: each site alone must carry
    # 5,000, so each needs ceil(5000/3000) = 2 replicas, and (2, 2) is the only minimal point.
    assert minimal_mixes((3000.0, 3000.0), (2, 2), ("a", "b"), 5000.0, True) == ((2, 2),)
    # Without N+1: any 2 replicas will do, (0,2), (1,1), (2,0).
    assert minimal_mixes((3000.0, 3000.0), (2, 2), ("a", "b"), 5000.0, False) == ((0, 2), (1, 1), (2, 0))


def test_hand_worked_three_sites_survive():
    # One replica (9,138 tokens/s) carries 5,000 alone; surviving any one site's loss needs
    # replicas at two sites: the three pairs.
    got = minimal_mixes((9138.0, 9138.0, 6642.0), (1, 1, 1), ("a", "b", "c"), 5000.0, True)
    assert got == ((0, 1, 1), (1, 0, 1), (1, 1, 0))


def test_two_candidates_at_one_site_count_as_one_site():
    # Both candidates sit at site a: losing a loses both, so no mix survives it.
    assert minimal_mixes((100.0, 100.0), (5, 5), ("a", "a"), 150.0, True) == ()


@pytest.mark.parametrize("seed", range(40))
def test_against_brute_force(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 4)
    taus = tuple(float(rng.choice([800, 1500, 2300, 4000, 6000])) for _ in range(n))
    sites = tuple(rng.choice("abc") for _ in range(n))
    demand = float(rng.choice([500, 2000, 5000, 9000]))
    ubs = tuple(max(1, -(-int(demand) // int(t))) for t in taus)
    survive = rng.random() < 0.5
    got = minimal_mixes(taus, ubs, sites, demand, survive)
    box = list(itertools.product(*[range(u + 1) for u in ubs]))
    feasible = [y for y in box if _carries(y, taus, sites, demand, survive)]
    minimal = sorted(y for y in feasible
                     if all(y[j] == 0 or not _carries(y[:j] + (y[j] - 1,) + y[j + 1:], taus, sites, demand, survive)
                            for j in range(n)))
    assert got == tuple(minimal)
    for y in feasible:   # every plan can drop replicas down to a mix
        assert any(all(a >= b for a, b in zip(y, mix)) for mix in got)


def test_too_many_mixes_falls_back():
    # 6 candidates at 6 sites, one replica each carries it: 15 pairs survive, more than 3.
    assert minimal_mixes((10.0,) * 6, (1,) * 6, tuple("abcdef"), 5.0, True, most_mixes=3) is None
    assert len(minimal_mixes((10.0,) * 6, (1,) * 6, tuple("abcdef"), 5.0, True, most_mixes=15)) == 15
