"""AUDIT: an independent re-check of every plan before it is written (DESIGN.md section 4).

From the Spec, the Catalog, the Candidates (estimates) and the Plan alone, the audit re-derives
every constraint the plan must meet and every line of its cost, with rules of its own written
from the prose of DESIGN.md and docs/optimizer.md (rules.py). It shares no code with the model:
nothing here imports compiler.optimize (tests/test_audit.py checks the imports), so a mistake
in the formulation, the solver's tolerances or the decoding is not repeated here but caught.

    findings = audit(spec, catalog, candidates, plan)   # [] when the plan holds

Each Finding has a code (codes.py, docs/audit.md), a message in the spec's terms and the spec
path it concerns. compiler.pipeline turns findings into exit code 6 and writes nothing.
"""

from __future__ import annotations

from typing import Callable, Iterable

from compiler.audit import (capacity, capacity_blocks, costs, demand, limits, operability, placement, policy,
                            savings_plans, storage)
from compiler.audit.context import Context, Finding
from compiler.candidates import Candidates
from compiler.catalog.model import Catalog
from compiler.diagnostics import path_tuple   # a Finding's path in a Diagnostic's form
from compiler.plan import Plan
from compiler.spec import Spec

__all__ = ["Finding", "audit", "CHECKS", "path_tuple"]

# In order: the placement checks resolve each placement to its candidate for the rest.
CHECKS: tuple[Callable[[Context], Iterable[Finding]], ...] = (
    placement.check_placements,
    demand.check_demand,
    demand.check_site_loss,
    demand.check_replica_series,
    policy.check_policy,
    operability.check_operability,
    capacity.check_pools,
    capacity.check_holdings,
    capacity.check_pool_hours,
    capacity.check_onprem_capacity,
    capacity.check_cloud_hours,
    capacity.check_fabric,
    limits.check_site_limits,
    limits.check_quotas,
    storage.check_storage,
    costs.check_costs,
    costs.check_cloud_share,
    costs.check_commitments,
    costs.check_credits,
    savings_plans.check_savings_plans,
    capacity_blocks.check_capacity_blocks,
)


def audit(spec: Spec, catalog: Catalog, candidates: Candidates, plan: Plan) -> list[Finding]:
    """Every way `plan` breaks the spec, or misstates its cost; [] when it holds."""
    ctx = Context(spec, catalog, candidates, plan)
    out: list[Finding] = []
    for check in CHECKS:
        for f in check(ctx):
            if f not in out:
                out.append(f)
    return out
