"""Plans for the audit tests: the shipped examples compiled for real, helpers that corrupt one
thing in a plan or a spec (dataclasses.replace on frozen values; the plan ones shared with the
render and report tests in tests/plans.py), and one small plan written by hand, independent of
the solver.

`compiled(name)` returns the (candidates, plan) of a shipped example's session-wide compile
(tests/examples_cache.py: the whole pipeline, whose own audit passed); a test corrupts that
plan and audits it itself with `run_audit`.
"""

from __future__ import annotations

from dataclasses import replace

from compiler.plan import (CostBreakdown, EstimateFigures, Holding, Placement, Plan, Pool, Reservation, SitePlan,
                           SolverInfo, WorkloadPlan, LayoutPlan)
from examples_cache import example
from plans import with_placement, workload


def compiled(name: str):
    """(Candidates, Plan) of examples/<name>.yaml: the candidates its estimate stage gave the
    optimizer and the audited plan (examples_cache.example, compiled once per session)."""
    candidates, result = example(name)
    return candidates, result.plan


def run_audit(candidates, plan, spec=None):
    from compiler.audit import audit

    spec = spec or candidates.spec
    return audit(spec, candidates.catalog, candidates, plan)


def codes_of(findings) -> set[str]:
    return {f.code for f in findings}


# --- corrupting one thing (set_at, workload, with_workload, with_placement: tests/plans.py) ----

def with_holding(plan: Plan, name: str, index: int, pricing: str, **changes) -> Plan:
    p = workload(plan, name).placements[index]
    holdings = tuple(replace(h, **changes) if h.pricing == pricing else h for h in p.holdings)
    return with_placement(plan, name, index, holdings=holdings)


def pool(plan: Plan, site: str, instance: str, pricing: str) -> Pool:
    return next(p for p in plan.pools if (p.site, p.instance, p.pricing) == (site, instance, pricing))


def with_pool(plan: Plan, site: str, instance: str, pricing: str, **changes) -> Plan:
    return replace(plan, pools=tuple(replace(p, **changes) if (p.site, p.instance, p.pricing) == (site, instance, pricing)
                                     else p for p in plan.pools))


def with_site(spec, name: str, **changes):
    return replace(spec, sites=tuple(replace(s, **changes) if s.name == name else s for s in spec.sites))


def with_spec_workload(spec, name: str, **changes):
    return replace(spec, workloads=tuple(replace(w, **changes) if w.name == name else w for w in spec.workloads))


# --- a plan written by hand -------------------------------------------------------------

def optimistic_reserved():
    """Two jobs in one AWS pool over 12 months, 10 nodes reserved for a year: job a runs 10 nodes
    for 11 months, job b 20 nodes for the first half of month 11. Sharing node-hours within the
    month, b's 7,300 node-hours fit the 10 reserved nodes' 7,300; but b holds 20 nodes at once
    for 365 hours, so 10 of them run on demand (3,650 node-hours) that this plan does not bill.
    Returns (candidates, plan)."""
    from optimize_fixtures import CATALOG, candidates, cloud, spec, train_cand, training

    H = 12
    aws = cloud(pricing=("on_demand", "reserved_1y"))
    a, b = training("a", 0, 0), training("b", 1, 11)
    sp = spec([aws], [a, b], horizon=H)
    ca = train_cand(a, aws, "p5.48xlarge", 10, 11 * 730.0)
    cb = train_cand(b, aws, "p5.48xlarge", 20, 365.0)
    cs = candidates(sp, [ca, cb])
    rate = CATALOG.instances["p5.48xlarge"].price("us-east-1", "reserved_1y")
    res = 10 * 730.0 * 12 * rate
    months = lambda v, last: tuple([v] * 11 + [last])  # noqa: E731
    a_hold = Holding("reserved_1y", months(10, 0), months(7300.0, 0.0))
    zeros = (0,) * 11
    b_hold = (Holding("reserved_1y", zeros + (10,), (0.0,) * 11 + (3650.0,)),
              Holding("on_demand", zeros + (10,), (0.0,) * 11 + (3650.0,)))
    from compiler.audit.rules import checkpoint_tb

    # storage: fsx-lustre for the two jobs' checkpoints (the dataset is empty)
    ck = {w.name: checkpoint_tb(w, CATALOG) for w in (a, b)}
    monthly_tb = tuple(max(1.2, ck["a"]) if m < 11 else max(1.2, ck["b"]) for m in range(H))
    tier = CATALOG.storage["fsx-lustre"]
    storage_cost = sum(monthly_tb) * tier.usd_per_tb_month
    from compiler.plan import StoragePlan

    total = round(res + storage_cost, 2)
    plan = Plan(
        spec_name="test", spec_sha256="0" * 64, catalog_version=CATALOG.version, horizon_months=H,
        solver=SolverInfo("cbc", "optimal", total, total, 0.0, 0.1), total_cost_usd=total,
        cost_breakdown_usd=CostBreakdown(cloud_compute=round(res, 2), storage=round(storage_cost, 2)),
        sites=(SitePlan("aws-use1", "cloud", "aws", "us-east-1", ("slurm",)),),
        pools=(Pool("aws-use1", "p5.48xlarge", "H100", 8, 10, "on_demand", "efa", zeros + (10,), (),
                    (0.0,) * 12),     # the model bills no on-demand hours: reserved ones cover 7,300
               Pool("aws-use1", "p5.48xlarge", "H100", 8, 10, "reserved_1y", "efa", (10,) * 12, (),
                    months(7300.0, 3650.0), (Reservation(0, 10),))),
        workloads=(
            WorkloadPlan("a", "training", "H100", 80, LayoutPlan(dp=80),
                         (Placement("aws-use1", "p5.48xlarge", "reserved_1y", 10, 80, candidate=ca.id,
                                    holdings=(a_hold,)),), EstimateFigures(), round(total * 0.9, 2), "slurm"),
            WorkloadPlan("b", "training", "H100", 160, LayoutPlan(dp=160),
                         (Placement("aws-use1", "p5.48xlarge", "reserved_1y", 20, 160, candidate=cb.id,
                                    holdings=b_hold),), EstimateFigures(), round(total - round(total * 0.9, 2), 2),
                         "slurm", start_month=11)),
        storage=(StoragePlan("aws-use1", "fsx-lustre", max(monthly_tb), round(storage_cost, 2), monthly_tb),),
    )
    return cs, plan


__all__ = ["compiled", "run_audit", "codes_of", "with_holding", "pool", "with_pool", "with_site", "with_spec_workload",
           "optimistic_reserved"]
