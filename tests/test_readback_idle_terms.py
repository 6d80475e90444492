"""A reserved term no placement runs on (a search stopped at its node limit can leave one) is
still read back: its pool is listed, its cost goes to the workloads, and the independent audit
(compiler.audit, no code shared with the readback) finds the plan's lines, pools and workloads
agreeing. Before, such a term was in the cost lines but in no pool and no workload's cost, and
the compile failed its audit (A601, A605: exit 6)."""

from __future__ import annotations

import pytest

from optimize_fixtures import CATALOG, candidates, cloud, infer_cand, inference, spec

import compiler.audit as audit
from compiler.optimize.formulate import formulate
from compiler.optimize.solve import HighsModel
from compiler.readback.decode import decode


def test_an_idle_reserved_term_is_listed_and_paid_for_by_the_workloads():
    site = cloud(pricing=("on_demand", "reserved_1y"))
    svc = inference("svc", rps=2.0, out=100)
    cs = [infer_cand(svc, site, "p5.48xlarge", 1, 400.0), infer_cand(svc, site, "g6e.xlarge", 1, 400.0)]
    cands = candidates(spec([site], [svc], horizon=2), cs)
    problem = formulate(cands)
    names = {v.name for v in problem.variables}
    idle = next(n for n in sorted(names) if n.startswith("reserved[aws-use1/p5.48xlarge/reserved_1y@000"))
    on_l40s = {n: 0.0 for n in names if n.startswith("y[") and "p5.48xlarge" in n}
    sol = HighsModel(problem).solve(fixed={idle: 1.0, **on_l40s}, gap=0.0)
    assert sol.has_solution
    plan = decode(problem, sol)
    (pool,) = [p for p in plan.pools if p.instance == "p5.48xlarge"]
    assert pool.pricing == "reserved_1y" and pool.nodes == 1 and not any(pool.monthly_node_hours)
    assert sum(w.cost_usd for w in plan.workloads) == pytest.approx(plan.total_cost_usd, abs=0.05)
    assert audit.audit(cands.spec, CATALOG, cands, plan) == []
