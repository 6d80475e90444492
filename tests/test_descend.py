"""descend(): an incumbent's integers lowered as far as the rows allow, never infeasible or dearer."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from compiler.optimize.descend import descend
from compiler.optimize.formulate import Constraint, Variable


def _problem(variables, constraints):
    return SimpleNamespace(variables=tuple(variables), constraints=tuple(constraints))


def test_a_node_no_replica_needs_is_let_go_worked_by_hand():
    # One replica of 2 GPUs (y = 1, chosen by an equality row) on 8-GPU nodes: packing
    # 8 n - 2 y >= 0 needs n >= 1/4, so 1 node; the incumbent holds 3 and pays for them through
    # the on-demand hours od >= 730 n. A reserved count r with no row needing it falls to 0. A
    # variable in an equality row (y) and one with a negative cost (z) are left alone.
    p = _problem(
        [Variable("y", "binary"), Variable("n", "integer"), Variable("od", "continuous", costs=(("c", 5.0),)),
         Variable("r", "integer", costs=(("c", 10.0),)), Variable("z", "integer", costs=(("c", -1.0),))],
        [Constraint("one", "one", (("y", 1.0),), "==", 1.0),
         Constraint("packing", "packing", (("n", 8.0), ("y", -2.0)), ">=", 0.0),
         Constraint("ondemand", "cloud_capacity", (("od", 1.0), ("n", -730.0)), ">=", 0.0),
         Constraint("cap", "quota", (("r", 1.0), ("z", 1.0)), "<=", 10.0)])
    got = descend(p, {"y": 1, "n": 3, "od": 2190.0, "r": 3, "z": 2})
    assert got == {"y": 1.0, "n": 1.0, "od": 2190.0, "r": 0.0, "z": 2.0}


def _feasible(p, x) -> bool:
    for c in p.constraints:
        act = sum(a * x[n] for n, a in c.terms)
        if (c.sense == ">=" and act < c.rhs - 1e-6) or (c.sense == "<=" and act > c.rhs + 1e-6) or \
                (c.sense == "==" and abs(act - c.rhs) > 1e-6):
            return False
    return True


@pytest.mark.parametrize("seed", range(40))
def test_random_points_stay_feasible_and_never_dearer(seed):
    # Rows built around a random integer point so that it is feasible; descend must keep every
    # row, never raise a variable, never raise the cost, and stop where no single step is left.
    rng = random.Random(seed)
    names = [f"x{i}" for i in range(6)]
    variables = [Variable(n, rng.choice(["integer", "binary", "continuous"]),
                          costs=(("c", rng.choice([0.0, 1.0, 3.0, -2.0])),)) for n in names]
    point = {v.name: float(rng.randint(0, 1 if v.kind == "binary" else 5)) for v in variables}
    constraints = []
    for k in range(7):
        terms = tuple((n, float(rng.choice([-3, -1, 1, 2, 8]))) for n in rng.sample(names, 3))
        act = sum(a * point[n] for n, a in terms)
        sense = rng.choice([">=", "<=", ">=", "=="])
        rhs = act - rng.randint(0, 4) if sense == ">=" else act + rng.randint(0, 4) if sense == "<=" else act
        constraints.append(Constraint(f"r{k}", "g", terms, sense, rhs))
    p = _problem(variables, constraints)
    got = descend(p, point)
    assert _feasible(p, got)
    assert all(got[n] <= point[n] for n in names)
    cost = lambda x: sum(v.cost * x[v.name] for v in variables)  # noqa: E731
    assert cost(got) <= cost(point) + 1e-9
    # a fixed point: once more changes nothing
    assert descend(p, got) == got
