"""Capacity: the plan's pools against what its placements hold, month by month.

A pool (site, instance, pricing) says how many nodes of that pricing there are in each month
(owned / purchase: in use; reserved: reserved; on_demand / spot: rented) and, for on_demand and
spot, the node-hours billed. A placement's holdings say, per pricing and month, the nodes it
holds and the node-hours it runs on them."""

from __future__ import annotations

from collections import defaultdict
from typing import Iterator

from compiler.audit import codes, rules
from compiler.audit.context import Context, Finding, exceeds, is_cloud, num
from compiler.audit.policy import used_holdings
from compiler.plan import PRICINGS

BILLED = ("on_demand", "spot")      # pricings paid by the node-hour


def _pool_name(p) -> str:
    return f"pool {p.site}/{p.instance} {p.pricing}"


def check_pools(ctx: Context) -> Iterator[Finding]:
    """Each pool once, of a pricing its site offers, matching the catalog, one figure per month;
    owned pools within the spec's owned nodes; reserved pools exactly their whole terms."""
    seen = set()
    for p in ctx.plan.pools:
        name = _pool_name(p)
        key = (p.site, p.instance, p.pricing)
        if key in seen:
            yield Finding(codes.POOL_SHAPE, f"{name} appears twice in the plan")
            continue
        seen.add(key)
        site = ctx.sites.get(p.site)
        if site is None:
            yield Finding(codes.POOL_SHAPE, f"{name}: the spec has no site {p.site}")
            continue
        hw = ctx.hardware(site, p.instance)
        if hw is None or (is_cloud(site) and hw.provider != site.provider):
            yield Finding(codes.POOL_SHAPE, f"{name}: {p.instance} is not a {site.type} instance the "
                          f"catalog offers at {p.site}", site.path)
            continue
        if (p.gpu, p.gpus_per_node) != (hw.gpu, hw.gpus):
            yield Finding(codes.POOL_SHAPE, f"{name} states {p.gpus_per_node} x {p.gpu} per node, the catalog "
                          f"has {hw.gpus} x {hw.gpu}", site.path)
        offered = rules.offered_pricings(site)
        if p.pricing not in offered:
            yield Finding(codes.PRICING_NOT_OFFERED, f"{name}: {p.site} offers {', '.join(offered)}",
                          rules.pricing_path(site))
            continue
        if len(p.monthly_nodes) != ctx.H:
            yield Finding(codes.POOL_SHAPE, f"{name} gives nodes for {len(p.monthly_nodes)} months, the "
                          f"horizon has {ctx.H}", site.path)
            continue
        hours_needed = p.pricing in BILLED
        if (hours_needed or p.monthly_node_hours) and len(p.monthly_node_hours) != ctx.H:
            yield Finding(codes.POOL_SHAPE, f"{name} gives node-hours for {len(p.monthly_node_hours)} "
                          f"months, the horizon has {ctx.H}", site.path)
            continue
        if min(p.monthly_nodes, default=0) < 0 or min(p.monthly_node_hours, default=0.0) < 0:
            yield Finding(codes.POOL_SHAPE, f"{name} has a negative figure", site.path)
            continue
        peak = max(p.monthly_nodes, default=0)
        # owned: the nodes the site owns; purchase: the nodes bought; others: the peak month
        if (p.nodes < peak) if p.pricing in rules.ONPREM_PRICINGS else (p.nodes != peak):
            yield Finding(codes.POOL_SHAPE, f"{name} states {p.nodes} nodes, its months peak at {peak}",
                          site.path)
        for m, n in enumerate(p.monthly_node_hours):
            if exceeds(n, p.monthly_nodes[m] * rules.HOURS):
                yield Finding(codes.POOL_HOURS, f"{name}: month {m} runs {num(n)} node-hours on "
                              f"{p.monthly_nodes[m]} nodes (at most {num(p.monthly_nodes[m] * rules.HOURS)})",
                              site.path)
                break
        if p.pricing == "owned":
            own = rules.owned_nodes(site, p.instance)
            at = [rules.owned_nodes(site, p.instance, m, ctx.spec.start, ctx.catalog) for m in range(ctx.H)]
            over = [m for m, n in enumerate(p.monthly_nodes) if n > at[m]]
            if p.nodes > own or over:
                m = over[0] if over else max(range(ctx.H), key=lambda k: p.monthly_nodes[k])
                yield Finding(codes.OWNED_EXCEEDED, f"{name}: month {m} uses {max(p.nodes, p.monthly_nodes[m])} "
                              f"nodes, the site owns {at[m] if over else own}"
                              + (" (the rest are past their useful life)" if over and at[m] < own else ""),
                              f"{site.path}.owned")
        yield from _reservations(ctx, p, site)


def _reservations(ctx: Context, p, site) -> Iterator[Finding]:
    name = _pool_name(p)
    if p.pricing not in rules.TERM_MONTHS:
        if p.reservations:
            yield Finding(codes.RESERVATION, f"{name} lists reservations; only reserved pools have terms",
                          site.path)
        return
    implied = [0] * ctx.H
    held = rules.held_terms(site, p.instance, p.pricing)
    shown = {r.start_month: r.nodes for r in p.reservations if r.start_month < 0}
    if shown != held:
        yield Finding(codes.RESERVATION, f"{name}: the terms held from before the horizon are {shown or 'none'} "
                      f"(nodes by the month they began), the spec's reserved entries say {held or 'none'}",
                      f"{site.path}.reserved")
        return
    for r in p.reservations:
        if r.start_month >= ctx.H or r.start_month + rules.TERM_MONTHS[p.pricing] <= 0 or r.nodes <= 0:
            yield Finding(codes.RESERVATION, f"{name}: a reservation of {r.nodes} nodes from month "
                          f"{r.start_month} is outside the horizon or empty", f"{site.path}.pricing")
            return
        for m in rules.term_months(p.pricing, r.start_month, ctx.H):
            implied[m] += r.nodes
    for m in range(ctx.H):
        if implied[m] != p.monthly_nodes[m]:
            terms = ", ".join(f"{r.nodes} from month {r.start_month}" for r in p.reservations) or "none"
            yield Finding(codes.RESERVATION,
                          f"{name}: month {m} shows {p.monthly_nodes[m]} reserved nodes, its "
                          f"{rules.TERM_MONTHS[p.pricing]}-month terms (reservations: {terms}) give "
                          f"{implied[m]}", f"{site.path}.pricing")
            return


def check_holdings(ctx: Context) -> Iterator[Finding]:
    """Each placement's holdings: one per pricing, one figure per month, no more nodes than the
    pool of that pricing has, no more node-hours than their nodes run, and together the nodes the
    job holds at once and the node-hours it runs."""
    for pl in ctx.placed:
        w, p = pl.workload, pl.placement
        where = f"{w.name} at {p.site}/{p.instance}"
        pricings = [h.pricing for h in p.holdings]
        if len(set(pricings)) != len(pricings):
            yield Finding(codes.HOLDINGS, f"{where} lists a pricing twice in its holdings", w.path)
            continue
        bad = [h for h in p.holdings if len(h.monthly_nodes) != ctx.H or len(h.monthly_node_hours) != ctx.H]
        if bad:
            yield Finding(codes.HOLDINGS, f"{where}: its {bad[0].pricing} holding does not give one figure per "
                          f"month of the {ctx.H}-month horizon", w.path)
            continue
        if any(n < 0 for h in p.holdings for n in h.monthly_nodes) or \
                any(x < 0 for h in p.holdings for x in h.monthly_node_hours):
            yield Finding(codes.HOLDINGS, f"{where} holds a negative number of nodes or hours", w.path)
            continue
        yield from _holding_vs_pool(ctx, pl, where)
        yield from _holding_vs_work(ctx, pl, where)


def _holding_vs_pool(ctx: Context, pl, where: str) -> Iterator[Finding]:
    p = pl.placement
    for h in p.holdings:
        pool = ctx.pools.get((p.site, p.instance, h.pricing))
        for m in range(ctx.H):
            n = h.monthly_nodes[m]
            if exceeds(h.monthly_node_hours[m], n * rules.HOURS):
                yield Finding(codes.HOLDINGS, f"{where}: month {m} runs {num(h.monthly_node_hours[m])} "
                              f"{h.pricing} node-hours on {n} nodes (at most {num(n * rules.HOURS)})",
                              pl.workload.path)
                break
        for m in range(ctx.H):
            n = h.monthly_nodes[m]
            have = ctx.pool_nodes(p.site, p.instance, h.pricing, m)
            if n > have:
                what = f"the pool has {have}" if pool else "the plan has no such pool"
                yield Finding(codes.HOLDING_OVER_POOL,
                              f"pool {p.site}/{p.instance} {h.pricing}: {pl.workload.name} holds {n} nodes in "
                              f"month {m}, {what}", ctx.sites[p.site].path)
                break


def _holding_vs_work(ctx: Context, pl, where: str) -> Iterator[Finding]:
    p, c = pl.placement, pl.cand
    gpn = c.gpus_per_node
    hours = ctx.hours(c) if c.kind == "training" else {}
    for m in range(ctx.H):
        # A job that moves between pricings within a month may hold more nodes in total than at
        # once; it never holds fewer than it runs on.
        nodes = sum(h.monthly_nodes[m] for h in p.holdings)
        run = sum(h.monthly_node_hours[m] for h in p.holdings)
        if c.kind == "training":
            need_nodes = c.nodes if m in hours else 0
            need_hours = c.nodes * hours.get(m, 0.0)
            exact = True
        else:
            r = ctx.replicas(p, m)
            need_nodes = rules.whole_nodes(r * c.gpus, gpn)
            need_hours = r * c.gpus / gpn * rules.HOURS
            exact = r == 0
        if nodes < need_nodes:
            yield Finding(codes.HOLDINGS, f"{where} needs {need_nodes} nodes at once in month {m}, its holdings "
                          f"have {nodes}", pl.workload.path)
            return
        if exceeds(need_hours, run) or (exact and exceeds(run, need_hours)):
            yield Finding(codes.HOLDINGS, f"{where} runs {num(need_hours)} node-hours in month {m}, its "
                          f"holdings account for {num(run)}", pl.workload.path)
            return
        if need_nodes == 0 and nodes:
            yield Finding(codes.HOLDINGS, f"{where} holds {nodes} nodes in month {m}, when it does not run",
                          pl.workload.path)
            return
    used = used_holdings(p)
    if used:
        order = {k: i for i, k in enumerate(PRICINGS)}
        main = min(used, key=lambda h: (-round(sum(h.monthly_node_hours), 6), order.get(h.pricing, 99)))
        if p.pricing != main.pricing:
            yield Finding(codes.HOLDINGS, f"{where} states pricing {p.pricing}, most of its node-hours are "
                          f"{main.pricing}", pl.workload.path)


def check_pool_hours(ctx: Context) -> Iterator[Finding]:
    """Per pool, pricing and month, the placements' node-hours within what the pool provides:
    730 h per node owned, bought or reserved; the billed hours for on_demand and spot."""
    run: dict[tuple, float] = defaultdict(float)
    for pl in ctx.placed:
        p = pl.placement
        for h in p.holdings:
            for m, x in enumerate(h.monthly_node_hours[:ctx.H]):
                run[(p.site, p.instance, h.pricing, m)] += x
    reported = set()
    for (s, i, pricing, m), x in sorted(run.items()):
        pool = ctx.pools.get((s, i, pricing))
        if pool is None or len(pool.monthly_nodes) != ctx.H or (s, i, pricing) in reported:
            continue      # reported by check_pools / check_holdings
        if pricing in BILLED:
            if len(pool.monthly_node_hours) != ctx.H:
                continue
            have = pool.monthly_node_hours[m]
            what = f"the plan bills {num(have)}"
        else:
            have = pool.monthly_nodes[m] * rules.HOURS
            what = f"its {pool.monthly_nodes[m]} nodes provide {num(have)}"
        if exceeds(x, have):
            reported.add((s, i, pricing))
            yield Finding(codes.POOL_HOURS, f"pool {s}/{i} {pricing}: month {m} runs {num(x)} node-hours on it, "
                          f"{what}", ctx.sites[s].path)


def check_onprem_capacity(ctx: Context) -> Iterator[Finding]:
    """On-prem GPUs in use in a month (every job that runs any hours that month, every replica)
    within (owned + bought) nodes; the pools' nodes in use cover them."""
    reported = set()
    for (s, i, m), g in sorted(ctx.usage.gpus.items()):
        site = ctx.sites[s]
        if is_cloud(site) or (s, i) in reported:
            continue
        gpn = ctx.catalog.onprem_nodes[i].gpus
        own, bought = rules.owned_nodes(site, i, m, ctx.spec.start, ctx.catalog), ctx.bought(s, i)
        if g > (own + bought) * gpn:
            reported.add((s, i))
            yield Finding(codes.ONPREM_CAPACITY,
                          f"{s}/{i}: month {m} uses {num(g)} GPUs ({num(rules.whole_nodes(g, gpn))} nodes), the site "
                          f"has {own} owned + {bought} bought = {(own + bought) * gpn} GPUs", site.path)
            continue
        in_use = ctx.pool_nodes(s, i, "owned", m) + ctx.pool_nodes(s, i, "purchase", m)
        if in_use * gpn < g - 1e-9:
            reported.add((s, i))
            yield Finding(codes.ONPREM_CAPACITY,
                          f"{s}/{i}: month {m} uses {num(g)} GPUs, its owned and purchase pools show "
                          f"{in_use} nodes in use ({in_use * gpn} GPUs)", site.path)


def check_cloud_hours(ctx: Context) -> Iterator[Finding]:
    """Per cloud pool and month: reserved nodes * 730 + on-demand node-hours carry the training
    node-hours and the whole nodes the replicas pack into; jobs pinned to on_demand run on
    on-demand hours, jobs pinned to a term on reserved nodes of that term; spot pools bill the
    spot jobs' hours."""
    keys = set()
    u = ctx.usage
    for d in (u.train_hours, u.infer_gpus, u.spot_hours):
        keys |= {(s, i) for (s, i, _m) in d}
    for (s, i) in sorted(keys):
        site = ctx.sites[s]
        for m in range(ctx.H):
            need = u.train_hours.get((s, i, m), 0.0) + ctx.infer_nodes(s, i, m) * rules.HOURS
            reserved = {t: ctx.pool_nodes(s, i, t, m) for t in rules.TERM_MONTHS}
            n_reserved = sum(reserved.values())
            od = _billed(ctx, s, i, "on_demand", m)
            have = n_reserved * rules.HOURS + od
            if exceeds(need, have):
                yield Finding(codes.CLOUD_HOURS,
                              f"{s}/{i}: month {m} runs {num(need)} node-hours, reserved nodes "
                              f"({n_reserved}) and on-demand hours ({num(od)}) provide {num(have)}",
                              f"{site.path}.pricing")
                break
            bad = None
            pinned_od = u.pinned.get((s, i, m, "on_demand"), 0.0)
            if exceeds(pinned_od, od):
                bad = (f"{s}/{i}: month {m} runs {num(pinned_od)} node-hours pinned to on_demand, the pool "
                       f"bills {num(od)} on-demand hours")
            for t, n in reserved.items():
                pinned = u.pinned.get((s, i, m, t), 0.0)
                if exceeds(pinned, n * rules.HOURS):
                    bad = (f"{s}/{i}: month {m} runs {num(pinned)} node-hours pinned to {t}, the pool has "
                           f"{n} {t} nodes ({num(n * rules.HOURS)} node-hours)")
            spot, spot_billed = u.spot_hours.get((s, i, m), 0.0), _billed(ctx, s, i, "spot", m)
            if exceeds(spot, spot_billed):
                bad = (f"{s}/{i}: month {m} runs {num(spot)} spot node-hours, the spot pool bills "
                       f"{num(spot_billed)}")
            if bad:
                yield Finding(codes.CLOUD_HOURS, bad, f"{site.path}.pricing")
                break


def _billed(ctx: Context, s: str, i: str, pricing: str, m: int) -> float:
    p = ctx.pools.get((s, i, pricing))
    if p is None or m >= len(p.monthly_node_hours):
        return 0.0
    return p.monthly_node_hours[m]


def check_fabric(ctx: Context) -> Iterator[Finding]:
    """On-prem pools are wired with a fabric the node supports; a multi-node training job runs
    only in a pool wired with the fabric its estimate assumed."""
    for p in ctx.plan.pools:
        site = ctx.sites.get(p.site)
        if site is None or is_cloud(site) or p.instance not in ctx.catalog.onprem_nodes:
            continue
        node = ctx.catalog.onprem_nodes[p.instance]
        if p.fabric not in node.fabrics or p.fabric not in ctx.catalog.fabrics:
            yield Finding(codes.FABRIC, f"{_pool_name(p)} is wired with {p.fabric or 'no fabric'}; "
                          f"{p.instance} takes {', '.join(node.fabrics)}", site.path)
    for pl in ctx.placed:
        c = pl.cand
        if c.kind != "training" or c.site_type != "on_prem" or c.nodes <= 1:
            continue
        for pricing in rules.ONPREM_PRICINGS:
            pool = ctx.pools.get((c.site, c.instance, pricing))
            if pool is not None and pool.fabric != c.fabric:
                yield Finding(codes.FABRIC, f"{pl.workload.name} runs {c.nodes} nodes over {c.fabric}, but "
                              f"{_pool_name(pool)} is wired with {pool.fabric}", ctx.sites[c.site].path)

