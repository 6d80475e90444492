"""What every check reads: the spec, the catalog, the estimates and the plan, and the usage the
plan's placements imply, derived once from the candidates (never from the model's variables)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property

from compiler.audit import rules
from compiler.candidates import Candidate, Candidates
from compiler.catalog.model import Catalog
from compiler.plan import Placement, Plan, Pool
from compiler.spec import CloudSite, Spec

REL = 1e-6          # relative tolerance on sums of floats
ABS_HOURS = 1e-3    # node-hours
ABS_USD = 0.05      # a few cents of rounding per compared figure


@dataclass(frozen=True)
class Finding:
    code: str          # compiler.audit.codes
    message: str       # in the spec's terms
    path: str = ""     # the spec path it concerns, e.g. $.sites[1].power_kw


def close(a: float, b: float, abs_tol: float = ABS_USD, rel: float = REL) -> bool:
    return abs(a - b) <= abs_tol + rel * max(abs(a), abs(b))


def exceeds(used: float, limit: float, abs_tol: float = ABS_HOURS, rel: float = REL) -> bool:
    """used > limit beyond rounding."""
    return used > limit + abs_tol + rel * max(abs(used), abs(limit))


def num(x: float) -> str:
    """A figure as a person writes it: 9, 1,250, 0.75, 12.3k-free."""
    if abs(x - round(x)) < 1e-6:
        return f"{int(round(x)):,}"
    return f"{x:,.2f}" if abs(x) >= 10 else f"{x:,.3g}"


def usd(x: float) -> str:
    return f"${x:,.2f}"


@dataclass(frozen=True)
class Placed:
    """A placement resolved to its candidate (only placements whose candidate exists, belongs to
    the workload and matches the placement's site and instance)."""
    workload: object            # the spec's workload
    placement: Placement
    cand: Candidate


class Context:
    def __init__(self, spec: Spec, catalog: Catalog, candidates: Candidates, plan: Plan):
        self.spec, self.catalog, self.candidates, self.plan = spec, catalog, candidates, plan
        self.H = spec.horizon_months
        self.by_id: dict[str, Candidate] = {c.id: c for cs in candidates.by_workload.values() for c in cs}
        self.sites = {s.name: s for s in spec.sites}
        self.placed: list[Placed] = []      # filled by the placement checks
        self._priced = None                 # costs.price(), once

    # --- the plan's pools ------------------------------------------------------------------
    @cached_property
    def pools(self) -> dict[tuple[str, str, str], Pool]:
        out: dict[tuple[str, str, str], Pool] = {}
        for p in self.plan.pools:
            out.setdefault((p.site, p.instance, p.pricing), p)
        return out

    def pool_nodes(self, site: str, inst: str, pricing: str, m: int) -> int:
        p = self.pools.get((site, inst, pricing))
        if p is None or m >= len(p.monthly_nodes):
            return 0
        return p.monthly_nodes[m]

    def bought(self, site: str, inst: str) -> int:
        p = self.pools.get((site, inst, "purchase"))
        return p.nodes if p else 0

    def hardware(self, site, inst: str):
        """The catalog's node `inst` of a site's kind (a cloud instance or an on-prem node), or None."""
        return (self.catalog.instances if is_cloud(site) else self.catalog.onprem_nodes).get(inst)

    # --- usage the placements imply ----------------------------------------------------------
    def hours(self, c: Candidate) -> dict[int, float]:
        """Hours a training candidate runs in each month of the horizon."""
        return {m: h for m, h in c.usage if 0 <= m < self.H and h > 0}

    def replicas(self, p: Placement, m: int) -> int:
        return p.monthly_replicas[m] if m < len(p.monthly_replicas) else 0

    @cached_property
    def usage(self) -> "Usage":
        u = Usage()
        for pl in self.placed:
            c, s = pl.cand, pl.cand.site
            gpn = c.gpus_per_node
            pin_pricing = pl.workload.pin.pricing if pl.workload.pin else None
            if c.kind == "training":
                for m, h in self.hours(c).items():
                    u.gpus[(s, c.instance, m)] += c.gpus
                    u.quota[(s, c.gpu, m)] += c.gpus if c.site_type == "cloud" else 0
                    if c.site_type == "on_prem":
                        u.onprem_node_hours[(s, c.instance, m)] += c.nodes * h
                    elif c.spot:
                        u.spot_hours[(s, c.instance, m)] += c.nodes * h
                    else:
                        u.train_hours[(s, c.instance, m)] += c.nodes * h
                        if pin_pricing in ("on_demand", "reserved_1y", "reserved_3y"):
                            u.pinned[(s, c.instance, m, pin_pricing)] += c.nodes * h
                    u.storage[(s, m)] += rules.dataset_tb(pl.workload) + rules.checkpoint_tb(pl.workload, self.catalog)
            else:
                for m in range(self.H):
                    r = self.replicas(pl.placement, m)
                    if not r:
                        continue
                    u.gpus[(s, c.instance, m)] += r * c.gpus
                    if c.site_type == "on_prem":
                        u.onprem_node_hours[(s, c.instance, m)] += r * c.gpus / gpn * rules.HOURS
                    else:
                        u.infer_gpus[(s, c.instance, m)] += r * c.gpus
        # Cloud replicas pack into whole nodes, which count whole against quotas.
        for (s, i, m), g in u.infer_gpus.items():
            gpn = self.catalog.instances[i].gpus
            u.quota[(s, self.catalog.instances[i].gpu, m)] += rules.whole_nodes(g, gpn) * gpn
        return u

    def infer_nodes(self, site: str, inst: str, m: int) -> int:
        g = self.usage.infer_gpus.get((site, inst, m), 0)
        return rules.whole_nodes(g, self.catalog.instances[inst].gpus) if g else 0


class Usage:
    def __init__(self) -> None:
        self.gpus: dict = defaultdict(float)              # (site, inst, m) -> GPUs in use (all jobs active)
        self.quota: dict = defaultdict(float)             # (cloud site, gpu, m) -> GPUs at once
        self.onprem_node_hours: dict = defaultdict(float)  # (site, inst, m) -> node-hours run on-prem
        self.train_hours: dict = defaultdict(float)       # (cloud site, inst, m) -> non-spot training node-hours
        self.spot_hours: dict = defaultdict(float)        # (cloud site, inst, m) -> spot node-hours
        self.infer_gpus: dict = defaultdict(float)        # (cloud site, inst, m) -> replica GPUs
        self.pinned: dict = defaultdict(float)            # (cloud site, inst, m, pricing) -> pinned node-hours
        self.storage: dict = defaultdict(float)           # (site, m) -> TB of datasets + checkpoints


def is_cloud(site) -> bool:
    return isinstance(site, CloudSite)
