"""The MIP start (compiler/optimize/start.py): a plan CBC can fall back on when its own search
finds none within its limits."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from compiler.optimize.formulate import Constraint, formulate
from compiler.optimize.solve import solve
from compiler.optimize.start import greedy_start
from shared_cache import proven_objective

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from generate import generate  # noqa: E402


def _fixed(problem, values):
    """The problem with every integer variable held at the start's value."""
    rows = tuple(Constraint(f"fix[{n}]", "fix", ((n, 1.0),), "==", v) for n, v in sorted(values.items()))
    return replace(problem, constraints=problem.constraints + rows)


@pytest.mark.slow
@pytest.mark.parametrize("n,seed", [(10, 0), (20, 1), (30, 2)])
def test_the_start_is_a_feasible_plan_and_no_cheaper_than_the_optimum(n, seed):
    problem = formulate(generate(n, seed, horizon=12))
    start = greedy_start(problem)
    assert start is not None
    at_start = solve(_fixed(problem, start), solver="highs")
    assert at_start.status == "optimal", "the start breaks a constraint"
    best = proven_objective(problem, gap=1e-6)      # as solve(problem, "highs", gap=1e-6): shared
    assert at_start.objective >= best * (1 - 1e-6)


@pytest.mark.slow
def test_cbc_returns_the_start_or_better_when_its_node_limit_is_reached():
    # One branch-and-bound node, so the test stops where it stops on every machine. (It used to
    # give CBC 8 s on 100 workloads: where that limit fell depended on the machine's load, and
    # when it fell inside CBC's preprocessing CBC crashed or said "infeasible", one run in four;
    # see solve._run_cbc.) Whatever CBC does in that node, the plan is the start or cheaper.
    problem = formulate(generate(20, 1, horizon=12))
    start = greedy_start(problem)
    assert start is not None
    at_start = solve(_fixed(problem, start), solver="highs")
    assert at_start.status == "optimal", "the start breaks a constraint"
    sol = solve(problem, solver="cbc", start=start, max_nodes=1, gap=0.005)
    assert sol.status in ("feasible", "optimal")
    assert sol.objective <= at_start.objective * (1 + 1e-6)
    assert sol.best_bound <= sol.objective
    assert 0.0 <= sol.gap < 1.0


@pytest.mark.slow
def test_the_start_respects_site_limits_on_a_crowded_platform(monkeypatch):
    # 20 workloads with the data centres at a tenth of their power: the cheapest candidates alone
    # would buy more nodes than dc1 and dc2 can power; the start passes over what no longer fits
    # (the ledger refuses placements there) and stays a feasible plan.
    from compiler.optimize import start as start_module

    candidates = generate(20, 1, horizon=12)
    sites = tuple(replace(s, power_kw=s.power_kw / 10) if s.type == "on_prem" else s for s in candidates.spec.sites)
    problem = formulate(replace(candidates, spec=replace(candidates.spec, sites=sites)))
    refused, add = [], start_module._Ledger.add

    def recording_add(ledger, c, per_month):
        fits = add(ledger, c, per_month)
        if not fits and c.site_type == "on_prem":
            refused.append(c.site)
        return fits
    monkeypatch.setattr(start_module._Ledger, "add", recording_add)
    start = greedy_start(problem)
    assert start is not None
    assert {"dc1", "dc2"} <= set(refused), "no placement was refused: the platform is not crowded"
    assert solve(_fixed(problem, start), solver="highs").status == "optimal"


def test_in_a_replan_the_start_says_which_services_moved_so_it_stays_a_plan():
    # The baseline ran svc on an H100 node; the greedy start puts it on L40S replicas. Without
    # moved[svc] = 1 the start breaks the move rows and is no start; with it, it is a plan, and a
    # start that keeps svc's replicas where they ran says it did not move.
    from compiler.optimize.moves import Kept, moved_indicators, with_moves
    from compiler.optimize.solve import HighsModel
    from optimize_fixtures import LIFTED, candidates, cloud, infer_cand, inference, spec

    aws, svc = cloud(), inference("svc")
    h100, l40s = infer_cand(svc, aws, "p5.48xlarge", 8, 900.0), infer_cand(svc, aws, "g6e.xlarge", 1, 150.0)
    plain = formulate(candidates(spec([aws], [svc], horizon=3, policy=LIFTED), [h100, l40s]))
    ran = {v.name: (1.0 if v.candidate == h100.id else 0.0) for v in plain.variables if v.family == "y"}
    problem = with_moves(plain, Kept(serving={"svc": frozenset({h100.id})}, usd=1000.0, values=ran))
    start = greedy_start(problem)
    assert {n: x for n, x in start.items() if x > 0 and n.startswith("y[")} \
        and all(v.candidate == l40s.id for v in problem.variables if v.family == "y" and start[v.name] > 0)
    assert start["moved[svc]"] == 1.0
    model = HighsModel(problem)
    assert model.solve(fixed=start).has_solution
    assert not model.solve(fixed={**start, "moved[svc]": 0.0}).has_solution
    assert moved_indicators(problem, ran) == {"moved[svc]": 0.0}
