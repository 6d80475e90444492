"""The commitments a plan inherits (the spec's `reserved` at cloud sites): what they cost, sunk,
and how much of them the plan runs work on, month by month."""

from __future__ import annotations

from compiler import unit_costs
from compiler.catalog.model import Catalog
from compiler.plan import Calendar, Held, OwnedAge, Pool
from compiler.spec import HOURS_PER_MONTH, CloudSite, OnPremSite, Spec


def held_commitments(spec: Spec, catalog: Catalog, pools: tuple[Pool, ...]) -> tuple[Held, ...]:
    """Every held commitment of the spec, in the order it lists them: its sunk cost (its nodes at
    its term's rate from month 0 to its end, the horizon's or not) and its nodes in use each
    month it covers within the horizon. A pool's work takes its held nodes first (they cost the
    plan nothing), so a month's use is the pool's node-hours run, in nodes, up to the held nodes."""
    H, out = spec.horizon_months, []
    by_pool = {(p.site, p.instance, p.pricing): p for p in pools}
    for site in spec.sites:
        if not isinstance(site, CloudSite):
            continue
        for j, r in enumerate(site.reserved):
            rate = unit_costs.cloud_price(catalog, site, r.instance, r.term) or 0.0
            pool = by_pool.get((site.name, r.instance, r.term))
            # the entries listed before it of the same pool take the work first
            earlier = sum(e.nodes for e in site.reserved[:j] if (e.instance, e.term) == (r.instance, r.term))
            used = []
            for m in range(min(H, r.until_month)):
                run = pool.monthly_node_hours[m] / HOURS_PER_MONTH if pool and m < len(pool.monthly_node_hours) else 0.0
                used.append(round(min(float(r.nodes), max(0.0, run - earlier)), 3))
            out.append(Held(site.name, r.instance, r.term, r.nodes, r.until_month,
                            round(r.nodes * rate * HOURS_PER_MONTH * r.until_month, 2), tuple(used)))
    return tuple(out)


def owned_ages(spec: Spec, catalog: Catalog) -> tuple[OwnedAge, ...]:
    """Every owned entry whose purchase the spec dates, in the order it lists them: when its
    useful life ends, the month of the horizon it retires in (the spec's reading, OwnedNodes), and
    its book value at the start, straight-line over that life."""
    out = []
    for site in spec.sites:
        if not isinstance(site, OnPremSite) or spec.start is None:
            continue
        for o in site.owned:
            if o.bought is None or o.instance not in catalog.onprem_nodes:
                continue
            node = catalog.onprem_nodes[o.instance]
            life, left = unit_costs.life_months(node), unit_costs.life_left(node, o.bought, spec.start)
            if left <= 0:
                continue            # past its life before the start: left out (E220's warning)
            out.append(OwnedAge(site.name, o.instance, o.nodes, o.bought, Calendar(o.bought).name(life), o.retires,
                                round(node.capex_usd * o.nodes * left / life, 2)))
    return tuple(out)
