"""On-prem sites: onprem/<site>/bom.csv, the bill of materials: what the plan priced, and only
that (docs/artifacts.md): bought nodes at their capex, the fabric share the plan charged for
them, storage capacity at its capex per TB; owned nodes listed as owned, at $0."""

from __future__ import annotations

import math
from dataclasses import dataclass

from compiler.catalog.model import Catalog
from compiler.render.common import STORAGE_KINDS
from compiler.render.environment import render_template
from compiler.render.site import SiteView

# Switch ports the plan charges per node port (compiler/unit_costs.py,
# fabric_switches_per_node): the leaf port facing the node, the leaf port going up and the
# spine port it lands on.
SWITCH_PORTS_PER_NODE_PORT = 3


@dataclass(frozen=True)
class FabricDesign:
    """A two-level leaf/spine tree (three levels once the spines outgrow one switch)."""

    fabric: str
    radix: int
    rails: int                    # ports per node (one leaf per rail in a rail-optimised tree)
    nodes: int
    leaves: int                   # leaf groups (each: radix/2 nodes x rails switches)
    leaf_switches: int            # physical leaf switches
    spine_switches: int
    node_links: int               # node-to-leaf cables
    uplinks: int                  # leaf-to-spine cables


def fabric_design(fabric: str, nodes: int, radix: int, rails: int) -> FabricDesign:
    """Non-blocking, rail-optimised fat tree: half of each leaf's ports face nodes, half spines.

    One switch suffices while every node port fits on it; past that, each group of radix/2
    nodes gets one leaf per rail, and the spines take as many ports as the leaves send up.
    """
    if nodes * rails <= radix:
        return FabricDesign(fabric=fabric, radix=radix, rails=rails, nodes=nodes, leaves=1,
                            leaf_switches=1, spine_switches=0, node_links=nodes * rails, uplinks=0)
    down = max(1, radix // 2)
    groups = math.ceil(nodes / down)
    uplinks = nodes * rails                      # non-blocking: one uplink per node port
    return FabricDesign(fabric=fabric, radix=radix, rails=rails, nodes=nodes, leaves=groups,
                        leaf_switches=groups * rails, spine_switches=math.ceil(uplinks / radix),
                        node_links=nodes * rails, uplinks=uplinks)


@dataclass(frozen=True)
class BomLine:
    category: str
    item: str
    description: str
    quantity: int
    unit_price_usd: float
    month: int | None = None      # the first month of the horizon it is needed in (None: the total)

    @property
    def total_price_usd(self) -> float:
        return self.quantity * self.unit_price_usd


def bom_lines(site: SiteView, catalog: Catalog) -> tuple[BomLine, ...]:
    lines: list[BomLine] = []
    bought: dict[str, int] = {}
    first_buy: dict[str, int] = {}          # fabric -> the first month a node on it is bought
    for d in site.domains:
        node = catalog.onprem_nodes.get(d.instance)
        for b in d.blocks:
            describe = (f"{d.shape.gpus}x {d.shape.gpu}, {d.shape.vcpus} vCPU, "
                        f"{d.shape.ram_gb:g} GB RAM")
            if b.pricing == "purchase":
                # One line per month in which nodes are first needed, so each is bought for its
                # month, not all before month 0; a node no month holds lands with the first.
                firsts = [b.first_needed(i) for i in range(1, b.nodes + 1)]
                earliest = min((m for m in firsts if m is not None), default=0)
                by_month: dict[int, int] = {}
                for m in firsts:
                    key = earliest if m is None else m
                    by_month[key] = by_month.get(key, 0) + 1
                for month, count in sorted(by_month.items()):
                    lines.append(BomLine("node", d.instance, f"{describe}; to buy", count,
                                         node.capex_usd if node else 0.0, month))
                bought[d.fabric] = bought.get(d.fabric, 0) + b.nodes
                first_buy[d.fabric] = min(first_buy.get(d.fabric, earliest), earliest)
            else:
                lines.append(BomLine("node", d.instance, f"{describe}; already owned, on its "
                                     "existing fabric (no capex)", b.nodes, 0.0, 0))
    for fabric_name in sorted(bought):
        fab = catalog.fabrics.get(fabric_name)
        if fab is None or not bought[fabric_name]:
            continue
        n = bought[fabric_name]
        tree = fabric_design(fabric_name, n, fab.switch_radix, fab.ports_per_node)
        ports = n * fab.ports_per_node
        lines.append(BomLine("optics", f"{fabric_name}-node-port",
                             f"NIC port, optic and cable share per node port ({fab.port_gbps:g}G)",
                             ports, fab.cost_per_port_usd, first_buy.get(fabric_name, 0)))
        lines.append(BomLine("switch", f"{fabric_name}-switch-port",
                             f"{SWITCH_PORTS_PER_NODE_PORT} switch ports per node port at "
                             f"1/{fab.switch_radix} of a {fab.switch_radix}-port "
                             f"{fab.port_gbps:g}G switch; the tree for {n} nodes: "
                             f"{tree.leaf_switches} leaf and {tree.spine_switches} spine switches",
                             ports * SWITCH_PORTS_PER_NODE_PORT,
                             fab.switch_cost_usd / fab.switch_radix, first_buy.get(fabric_name, 0)))
    if site.storage is not None:
        tier = catalog.storage.get(site.storage.tier)
        lines.append(BomLine("storage", site.storage.tier,
                             f"{STORAGE_KINDS.get(site.storage.tier, 'shared file system')} capacity, TB "
                             f"(mounted at {site.storage.mount})",
                             math.ceil(site.storage.capacity_tb - 1e-9),
                             tier.capex_usd_per_tb if tier else 0.0, site.storage.first_month))
    return tuple(lines)


def render_site(site: SiteView, catalog: Catalog) -> dict[str, str]:
    lines = bom_lines(site, catalog)
    total = sum(line.total_price_usd for line in lines)
    return {f"onprem/{site.name}/bom.csv": render_template("onprem/bom.csv.j2", site=site,
                                                           lines=lines, total=total)}
