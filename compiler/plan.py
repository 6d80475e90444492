"""The Plan: the solved design, and its JSON form (plan.json, see schemas/plan.schema.json).

The Plan is self-contained: render, report and diff read only the Plan (and the
catalog for hardware figures), never the solver. Keys are sorted and floats rounded
when written so the same plan gives the same bytes on every machine.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class SolverInfo:
    name: str                     # cbc | highs
    status: str                   # optimal | feasible (time limit, incumbent) | ...
    objective_usd: float
    best_bound_usd: float
    gap: float                    # relative: (objective - bound) / objective
    seconds: float


@dataclass(frozen=True)
class SitePlan:
    name: str
    type: str                     # cloud | on_prem
    provider: str | None          # aws | gcp | azure; None on-prem
    region: str | None
    orchestrators: tuple[str, ...]  # slurm / kubernetes, from the workloads placed here


@dataclass(frozen=True)
class Pool:
    site: str
    instance: str
    gpu: str
    gpus_per_node: int
    nodes: int                    # peak nodes over the horizon (what Terraform / the BOM provides)
    pricing: str                  # on_demand | spot | reserved_1y | reserved_3y | owned | purchase
    fabric: str
    monthly_nodes: tuple[int, ...] = ()       # nodes in use, month by month
    monthly_utilization: tuple[float, ...] = ()  # GPUs busy / GPUs provided, month by month


@dataclass(frozen=True)
class Placement:
    site: str
    instance: str
    pricing: str
    nodes: int
    gpus: int
    replicas: int = 0             # inference only (peak over the horizon)


@dataclass(frozen=True)
class LayoutPlan:
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1


@dataclass(frozen=True)
class Alternative:
    site: str
    instance: str
    gpu: str
    gpus: int
    pricing: str
    cost_usd: float
    delta_usd: float              # alternative cost - chosen cost (>= 0 when optimal)
    note: str = ""


@dataclass(frozen=True)
class WorkloadPlan:
    name: str
    kind: str
    gpu: str
    gpus: int
    layout: LayoutPlan
    placements: tuple[Placement, ...]
    estimate: dict[str, Any]
    cost_usd: float
    orchestrator: str
    start_month: int = 0
    alternatives: tuple[Alternative, ...] = ()
    replicas: int = 0             # inference: the most replicas running at once (training: 0)


@dataclass(frozen=True)
class StoragePlan:
    site: str
    tier: str
    capacity_tb: float
    cost_usd: float


@dataclass(frozen=True)
class Plan:
    spec_name: str
    spec_sha256: str
    catalog_version: str
    horizon_months: int
    solver: SolverInfo
    total_cost_usd: float
    cost_breakdown_usd: dict[str, float]
    sites: tuple[SitePlan, ...]
    pools: tuple[Pool, ...]
    workloads: tuple[WorkloadPlan, ...]
    storage: tuple[StoragePlan, ...] = ()
    binding_constraints: tuple[str, ...] = ()
    monthly_cost_usd: tuple[float, ...] = ()
    breakeven: tuple[dict[str, Any], ...] = field(default=())


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6) if abs(value) < 1e6 else round(value, 2)
    if isinstance(value, dict):
        return {k: _round(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_round(v) for v in value]
    return value


def to_dict(plan: Plan) -> dict[str, Any]:
    """The plan.json document (DESIGN.md section 5)."""
    d = asdict(plan)
    out = {
        "spec": {"name": d.pop("spec_name"), "sha256": d.pop("spec_sha256")},
        "catalog": {"version": d.pop("catalog_version")},
        **d,
    }
    return _round(out)


def to_json(plan: Plan) -> str:
    return json.dumps(to_dict(plan), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def from_dict(d: dict[str, Any]) -> Plan:
    """Rebuild a Plan from plan.json (used by `diff` and `--check`)."""
    return Plan(
        spec_name=d["spec"]["name"],
        spec_sha256=d["spec"]["sha256"],
        catalog_version=d["catalog"]["version"],
        horizon_months=d["horizon_months"],
        solver=SolverInfo(**d["solver"]),
        total_cost_usd=d["total_cost_usd"],
        cost_breakdown_usd=dict(d["cost_breakdown_usd"]),
        sites=tuple(SitePlan(**{**s, "orchestrators": tuple(s["orchestrators"])}) for s in d["sites"]),
        pools=tuple(Pool(**{**p, "monthly_nodes": tuple(p.get("monthly_nodes", ())),
                            "monthly_utilization": tuple(p.get("monthly_utilization", ()))})
                    for p in d["pools"]),
        workloads=tuple(
            WorkloadPlan(**{**w, "layout": LayoutPlan(**w["layout"]),
                            "placements": tuple(Placement(**p) for p in w["placements"]),
                            "alternatives": tuple(Alternative(**a) for a in w.get("alternatives", ()))})
            for w in d["workloads"]),
        storage=tuple(StoragePlan(**s) for s in d.get("storage", ())),
        binding_constraints=tuple(d.get("binding_constraints", ())),
        monthly_cost_usd=tuple(d.get("monthly_cost_usd", ())),
        breakeven=tuple(d.get("breakeven", ())),
    )
