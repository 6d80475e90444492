"""Edge sites: edge/<site>/boxes.csv and edge/<site>/inventory.yml.

An edge site (compiler/edge.py) becomes one on-prem site per location; each renders as any
on-prem site does (its bill of materials, its Kubernetes manifests, its schedule). What ops of a
fleet need beyond those is the fleet in one place: how many boxes each location holds (owned,
to buy, in all, and what the boxes to buy cost) and an Ansible inventory with one group per
location and one host per box, named as the location's Kubernetes node manifest names it, so a
playbook provisions the boxes the plan counts.

The plan says which of its services serve an edge location (a workload's inputs carry `edge`:
the service, the edge site and the location); the boxes are the location's pools. A location
no service is served at holds no pool and is not listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from compiler.catalog.model import Catalog
from compiler.plan import Plan
from compiler.render.environment import render_template
from compiler.render.site import SiteView


@dataclass(frozen=True)
class EdgeBox:
    """One box of a location: its node name at the location (the Kubernetes Node's) and whether
    it is there already or to buy."""
    host: str                     # unique across the inventory: <location site>-<node>
    node: str                     # the node's name at its site (kubernetes/<site>/05-nodes.yaml)
    state: str                    # owned | to-buy
    first_month: str              # when it is first needed (a to-buy box: when to have it racked)


@dataclass(frozen=True)
class EdgeLocation:
    name: str                     # the location's name in the spec
    site: str                     # the on-prem site it became (<edge site>-<location>)
    group: str                    # its Ansible group (letters, digits and underscores)
    services: tuple[tuple[str, int], ...]   # (service, most replicas at once)
    boxes: tuple[EdgeBox, ...]
    capex_usd: float              # what its boxes to buy cost

    @property
    def owned(self) -> int:
        return sum(1 for b in self.boxes if b.state == "owned")

    @property
    def to_buy(self) -> int:
        return sum(1 for b in self.boxes if b.state == "to-buy")


@dataclass(frozen=True)
class EdgeFleet:
    name: str                     # the edge site's name in the spec
    group: str
    box: str                      # the catalog box model
    gpu: str
    gpus_per_box: int
    box_capex_usd: float
    box_power_kw: float
    locations: tuple[EdgeLocation, ...]

    @property
    def boxes(self) -> int:
        return sum(len(loc.boxes) for loc in self.locations)

    @property
    def to_buy(self) -> int:
        return sum(loc.to_buy for loc in self.locations)

    @property
    def capex_usd(self) -> float:
        return sum(loc.capex_usd for loc in self.locations)


def group_name(name: str) -> str:
    """An Ansible group name: the spec's name with '-' as '_' (Ansible warns on dashes)."""
    return name.replace("-", "_")


def edge_of(plan: Plan) -> dict[str, tuple[str, str, str]]:
    """Workload name -> (service, edge site, location), for the plan's edge services."""
    out = {}
    for w in plan.workloads:
        e = w.inputs.value("edge") if w.inputs is not None else None
        if isinstance(e, dict) and {"service", "site", "location"} <= set(e):
            out[w.name] = (str(e["service"]), str(e["site"]), str(e["location"]))
    return out


def fleets(plan: Plan, catalog: Catalog, views: Iterable[SiteView]) -> tuple[EdgeFleet, ...]:
    """The plan's edge sites, each with its locations' boxes, from the location sites' views."""
    by_site = {v.name: v for v in views}
    served: dict[tuple[str, str], dict[str, int]] = {}     # (edge site, location) -> service -> replicas
    where: dict[tuple[str, str], str] = {}                 # (edge site, location) -> its site
    for w in plan.workloads:
        e = edge_of(plan).get(w.name)
        if e is None:
            continue
        service, fleet, location = e
        sites = {p.site for p in w.placements}
        if len(sites) != 1:
            continue      # an edge service's location is one site (compiler/edge.py)
        where[(fleet, location)] = sites.pop()
        served.setdefault((fleet, location), {})[service] = w.replicas
    out = []
    for fleet in sorted({f for f, _ in where}):
        locations, model = [], None
        for (f, location), site in sorted(where.items(), key=lambda t: t[1]):
            if f != fleet or site not in by_site:
                continue
            view = by_site[site]
            boxes, capex = [], 0.0
            for d in view.domains:
                node = catalog.onprem_nodes.get(d.instance)
                model = model or node
                for b in d.blocks:
                    if b.pricing not in ("owned", "purchase"):
                        continue
                    for i, name in enumerate(b.node_names(1, b.nodes), start=1):
                        first = b.first_needed(i)
                        boxes.append(EdgeBox(f"{site}-{name}", name, "owned" if b.pricing == "owned" else "to-buy",
                                             view.calendar.name(first if first is not None else 0)))
                        if b.pricing == "purchase" and node is not None:
                            capex += node.capex_usd
            locations.append(EdgeLocation(location, site, group_name(site),
                                          tuple(sorted(served[(f, location)].items())), tuple(boxes), capex))
        if model is None:
            continue
        out.append(EdgeFleet(fleet, group_name(fleet), model.name, model.gpu, model.gpus, model.capex_usd,
                             model.power_kw, tuple(locations)))
    return tuple(out)


def render_fleet(fleet: EdgeFleet, plan: Plan) -> dict[str, str]:
    view = dict(fleet=fleet, spec_name=plan.spec_name)
    return {f"edge/{fleet.name}/boxes.csv": render_template("edge/boxes.csv.j2", **view),
            f"edge/{fleet.name}/inventory.yml": render_template("edge/inventory.yml.j2", **view)}
