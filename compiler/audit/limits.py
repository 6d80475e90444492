"""Site limits: power for new nodes, racks, rack power, GPUs on-prem; quotas in the cloud."""

from __future__ import annotations

from typing import Iterator

from compiler.audit import codes, rules
from compiler.audit.context import Context, Finding, exceeds, is_cloud, num
from compiler.spec import RACK_UNITS


def _nodes_at(ctx: Context, site) -> dict[str, tuple[int, int]]:
    """instance -> (owned per the spec, bought per the plan) at an on-prem site."""
    out: dict[str, tuple[int, int]] = {}
    for o in site.owned:
        out[o.instance] = (rules.owned_nodes(site, o.instance), 0)
    for p in ctx.plan.pools:
        if p.site == site.name and p.pricing == "purchase":
            out[p.instance] = (out.get(p.instance, (0, 0))[0], p.nodes)
    return out


def check_site_limits(ctx: Context) -> Iterator[Finding]:
    """power_kw is the budget for NEW nodes: bought kW * PUE within it. Racks (rack units / 42,
    and kW / rack_power_kw) and max_gpus hold every node there, owned and bought, and are judged
    where the plan buys (what a site already owns is the spec's, not the plan's)."""
    for site in ctx.spec.sites:
        if is_cloud(site):
            continue
        nodes = {i: n for i, n in _nodes_at(ctx, site).items() if i in ctx.catalog.onprem_nodes}
        bought = sum(b for _, b in nodes.values())
        if not bought:
            continue
        hw = {i: ctx.catalog.onprem_nodes[i] for i in nodes}
        kw = sum(b * hw[i].power_kw * site.pue for i, (_, b) in nodes.items())
        if exceeds(kw, site.power_kw, 1e-6):
            yield Finding(codes.POWER, f"{site.name}: the {bought} new nodes draw {num(kw)} kW with PUE "
                          f"{site.pue:g}, its power budget for new nodes is {num(site.power_kw)} kW",
                          f"{site.path}.power_kw")
        units = sum((o + b) * hw[i].rack_units for i, (o, b) in nodes.items())
        if exceeds(units, site.max_racks * RACK_UNITS, 1e-6):
            yield Finding(codes.RACKS, f"{site.name}: its nodes take {num(units)} rack units "
                          f"({units / RACK_UNITS:,.2f} racks), max_racks is {site.max_racks}",
                          f"{site.path}.max_racks")
        if site.rack_power_kw:
            node_kw = sum((o + b) * hw[i].power_kw for i, (o, b) in nodes.items())
            if exceeds(node_kw, site.max_racks * site.rack_power_kw, 1e-6):
                yield Finding(codes.RACK_POWER, f"{site.name}: its nodes draw {num(node_kw)} kW, "
                              f"{site.max_racks} racks of {site.rack_power_kw:g} kW hold "
                              f"{num(site.max_racks * site.rack_power_kw)}", f"{site.path}.rack_power_kw")
        if site.max_gpus is not None:
            gpus = sum((o + b) * hw[i].gpus for i, (o, b) in nodes.items())
            if gpus > site.max_gpus:
                yield Finding(codes.MAX_GPUS, f"{site.name}: {gpus} GPUs owned and bought, max_gpus is "
                              f"{site.max_gpus}", f"{site.path}.max_gpus")


def check_quotas(ctx: Context) -> Iterator[Finding]:
    """GPUs of a type running at once at a cloud site in a month (every job that runs any hours
    that month, and the whole nodes replicas pack into) within the site's quota."""
    reported = set()
    for (s, gpu, m), g in sorted(ctx.usage.quota.items()):
        site = ctx.sites[s]
        if not is_cloud(site) or (s, gpu) in reported:
            continue
        q = site.quotas.get(gpu)
        if q is not None and g > q:
            reported.add((s, gpu))
            yield Finding(codes.QUOTA, f"{s}: month {m} runs {num(g)} {gpu} GPUs at once, the quota is {q}",
                          f"{site.path}.quotas.{gpu}")
