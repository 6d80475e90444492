"""The report's edge table: per location of each edge site, the boxes the plan holds there (owned
and to buy), the location's peak demand and what one box carries of it.

An edge site is one on-prem site per location (compiler/edge.py), each serving its own users, so
a location's box count is its own demand over what a box carries, rounded up: the table gives the
figures a reviewer checks that with. The demand is the spec's (the workload's `inputs`: peak_rps,
growth, start month; an LLM's times its output tokens), at its peak month, in the unit the
replicas' capacity is stated in: images/s for a vision model's service, output tokens/s for an
LLM's. A box carries (capacity at the peak month / replicas then) x the replicas a box holds;
where a location runs replicas of more than one shape, the plan states no rate for each, and no
per-box figure is given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from compiler.catalog.model import Catalog
from compiler.plan import Plan, WorkloadPlan
from compiler.render.edge import edge_of

OWNED, BOUGHT = "owned", "purchase"


@dataclass(frozen=True)
class EdgeRow:
    location: str                 # the location's name in the spec
    site: str                     # the on-prem site it became (<edge site>-<location>)
    services: str                 # the services it serves, by the spec's names
    boxes: int                    # the boxes the plan holds there, at their most
    owned: int
    to_buy: int
    demand: float                 # its peak demand, in `unit` (all its services, where one unit)
    per_box: float | None         # what one box carries at the bound (None: not one replica shape)
    unit: str                     # images/s | output tokens/s

    @property
    def needed(self) -> int | None:
        """ceil(demand / per box): the boxes the demand alone needs."""
        return None if not self.per_box else math.ceil(self.demand / self.per_box - 1e-9)

    @property
    def load(self) -> float | None:
        """The demand over what the location's boxes carry."""
        return None if not self.per_box or not self.boxes else self.demand / (self.boxes * self.per_box)


@dataclass(frozen=True)
class EdgeFleetView:
    name: str                     # the edge site's name in the spec
    box: str                      # the box model
    gpus_per_box: int
    rows: tuple[EdgeRow, ...]
    box_capex_usd: float | None = None   # from the catalog, when given

    @property
    def boxes(self) -> int:
        return sum(r.boxes for r in self.rows)

    @property
    def to_buy(self) -> int:
        return sum(r.to_buy for r in self.rows)

    @property
    def capex_usd(self) -> float | None:
        return None if self.box_capex_usd is None else self.to_buy * self.box_capex_usd


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def peak_demand(w: WorkloadPlan, horizon: int) -> tuple[float, str] | None:
    """The service's demand at its peak month (growth is never negative: the horizon's last), and
    its unit; None where plan.json does not record the spec's traffic."""
    if w.inputs is None:
        return None
    rps = _number(w.inputs.value("traffic.peak_rps"))
    if rps is None:
        return None
    growth = _number(w.inputs.value("traffic.growth_per_month")) or 0.0
    vision = w.estimate.images_per_s is not None
    per_request = 1.0 if vision else (_number(w.inputs.value("traffic.output_tokens")) or 0.0)
    months = max(0, horizon - 1 - w.start_month)
    return rps * per_request * (1 + growth) ** months, "images/s" if vision else "output tokens/s"


def per_box(w: WorkloadPlan, gpus_per_box: int, horizon: int) -> float | None:
    """What one box carries of the service: one replica's rate (the capacity at the peak month over
    its replicas then) times the replicas a box holds; None unless the location runs one shape."""
    shapes = {p.gpus_per_replica for p in w.placements if p.replicas > 0}
    capacity = w.estimate.images_per_s if w.estimate.images_per_s is not None else w.estimate.tokens_per_s
    if len(shapes) != 1 or not capacity:
        return None
    gpr = shapes.pop() or 1
    last = horizon - 1
    replicas = sum(p.monthly_replicas[last] if len(p.monthly_replicas) > last else p.replicas
                   for p in w.placements)
    if replicas <= 0:
        return None
    return capacity / replicas * (gpus_per_box // gpr)


def build(plan: Plan, catalog: Catalog | None = None) -> tuple[EdgeFleetView, ...]:
    """The plan's edge sites, each with a row per location it serves (none: no edge site)."""
    located = edge_of(plan)
    if not located:
        return ()
    h = plan.horizon_months
    by_site: dict[tuple[str, str], list[WorkloadPlan]] = {}
    where: dict[tuple[str, str], str] = {}
    for w in plan.workloads:
        if w.name not in located:
            continue
        _service, fleet, location = located[w.name]
        sites = {p.site for p in w.placements}
        if len(sites) != 1:
            continue        # an edge service's location is one site
        where[(fleet, location)] = sites.pop()
        by_site.setdefault((fleet, location), []).append(w)
    out = []
    for fleet in sorted({f for f, _ in where}):
        rows, box, gpn = [], "", 0
        for (f, location), site in sorted(where.items(), key=lambda t: t[1]):
            if f != fleet:
                continue
            pools = [p for p in plan.pools if p.site == site]
            box, gpn = (pools[0].instance, pools[0].gpus_per_node) if pools else (box, gpn)
            owned = sum(p.nodes for p in pools if p.pricing == OWNED)
            bought = sum(p.nodes for p in pools if p.pricing == BOUGHT)
            services = by_site[(f, location)]
            demands = [peak_demand(w, h) for w in services]
            units = {d[1] for d in demands if d is not None}
            one = len(services) == 1 and None not in demands
            demand = sum(d[0] for d in demands if d is not None) if len(units) == 1 else 0.0
            rate = per_box(services[0], gpn, h) if one and gpn else None
            names = ", ".join(sorted(located[w.name][0] for w in services))
            rows.append(EdgeRow(location, site, names, owned + bought, owned, bought, demand, rate,
                                units.pop() if len(units) == 1 else ""))
        node = catalog.onprem_nodes.get(box) if catalog is not None else None
        out.append(EdgeFleetView(fleet, box, gpn, tuple(rows), node.capex_usd if node is not None else None))
    return tuple(out)
