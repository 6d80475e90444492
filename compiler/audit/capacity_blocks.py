"""Capacity Blocks, re-derived from plan.json, the spec and the catalog alone
(docs/capacity-blocks.md): what each block costs and that it is one the provider sells.

A block holds a training job's nodes for its run rounded up to a block's length (whole days up to
the provider's daily limit, whole weeks beyond it, up to its longest: capacity_blocks.yaml states
them per provider, the names without one being AWS's), at the catalog's rate for the instance in
the site's region, paid in full: rate x instances x 24 x days, the instances being the job's
nodes, or whole UltraServers of them where the provider sells the type's blocks only so (AWS
P6e-GB200: capacity_block_ultraserver.<provider>.<instance>.<type>, its instances). Its instances run as
on-demand ones, so the pool bills the job's node-hours on demand and the block credits them back:
the job's on-demand node-hours each month, no more."""

from __future__ import annotations

import math
from typing import Iterator

from compiler.audit import codes, rules
from compiler.audit.context import ABS_HOURS, ABS_USD, Context, Finding, close, is_cloud, usd

OPTION = "capacity_block"


def rate(ctx: Context, site: str, instance: str) -> float | None:
    """USD per instance-hour of a block at the site, or None where the site does not list
    capacity_block or the catalog sells none there."""
    s = ctx.sites.get(site)
    if s is None or not is_cloud(s) or OPTION not in s.pricing:
        return None
    f = ctx.catalog.factors.get(f"capacity_block_usd_per_hour.{s.provider}.{s.region}.{instance}")
    return None if f is None else float(f.value)


def _rule(ctx: Context, group: str, leaf: str, provider: str) -> float | None:
    """A block rule the provider states (`group.provider.leaf`); the unqualified name is AWS's."""
    f = ctx.catalog.factors.get(f"{group}.{provider}.{leaf}")
    if f is None and provider == "aws":
        f = ctx.catalog.factors.get(f"{group}.{leaf}")
    return None if f is None else f.value


def _provider(ctx: Context, site: str) -> str:
    s = ctx.sites.get(site)
    return getattr(s, "provider", "") or ""


def ultraserver(ctx: Context, provider: str, instance: str) -> int | None:
    """Instances in the UltraServer the provider sells `instance`'s blocks as, or None."""
    prefix = f"capacity_block_ultraserver.{provider}.{instance}."
    found = [f.value for n, f in ctx.catalog.factors.items() if n.startswith(prefix) and "." not in n[len(prefix):]]
    return int(min(found)) if found else None


def billed(ctx: Context, site: str, instance: str, nodes: int) -> int:
    """Instances a block of `nodes` is paid for: the nodes, or whole UltraServers of them."""
    unit = ultraserver(ctx, _provider(ctx, site), instance)
    return nodes if unit is None else unit * math.ceil(nodes / unit)


def days_for(ctx: Context, hours: float, provider: str = "aws") -> int | None:
    """The shortest block length the provider sells for a run of `hours`, or None."""
    daily = _rule(ctx, "capacity_block_days", "daily_up_to", provider)
    longest = _rule(ctx, "capacity_block_days", "weekly_up_to", provider)
    if daily is None or longest is None:
        return None
    days = max(1, math.ceil(hours / 24.0 - 1e-9))
    if days > daily:
        days = 7 * math.ceil(days / 7)
    return days if days <= longest else None


def cost(ctx: Context) -> float:
    """What the blocks add to cloud_compute: their price, less the on-demand price of the job
    node-hours the pool bills on demand and they carry instead."""
    out = 0.0
    for b in ctx.plan.capacity_blocks:
        r = rate(ctx, b.site, b.instance) or 0.0
        out += r * billed(ctx, b.site, b.instance, b.nodes) * 24.0 * b.days
        s = ctx.sites.get(b.site)
        od = rules.cloud_rate(ctx.catalog, s, b.instance, "on_demand") if s is not None and is_cloud(s) else None
        out -= (od or 0.0) * sum(b.monthly_node_hours[:ctx.H])
    return out


def check_capacity_blocks(ctx: Context) -> Iterator[Finding]:
    for b in ctx.plan.capacity_blocks:
        provider = _provider(ctx, b.site)
        r = rate(ctx, b.site, b.instance)
        if r is None:
            yield Finding(codes.CAPACITY_BLOCK, f"{b.workload}'s Capacity Block of {b.instance} at {b.site}: the site "
                          f"does not list capacity_block or the catalog sells no such block there")
            continue
        w = next((w for w in ctx.plan.workloads if w.name == b.workload), None)
        pl = next((p for p in ctx.placed if p.workload.name == b.workload), None)
        if w is None or pl is None or w.kind != "training" or pl.cand.site != b.site or pl.cand.instance != b.instance:
            yield Finding(codes.CAPACITY_BLOCK, f"a Capacity Block of {b.instance} at {b.site} is for "
                          f"{b.workload}, which runs no training job there")
            continue
        days = days_for(ctx, w.estimate.duration_hours or 0.0, provider)
        if days is None or days != b.days:
            yield Finding(codes.CAPACITY_BLOCK, f"{b.workload}'s block lasts {b.days} days; its "
                          f"{(w.estimate.duration_hours or 0) / 24:.2f}-day run takes a block of {days} days")
        if b.nodes != pl.cand.nodes or b.start_month != pl.cand.start_month:
            yield Finding(codes.CAPACITY_BLOCK, f"{b.workload}'s block holds {b.nodes} nodes from month {b.start_month}; "
                          f"the job holds {pl.cand.nodes} from month {pl.cand.start_month}")
        unit = ultraserver(ctx, provider, b.instance)
        per_block = unit or _rule(ctx, "capacity_block_instances", "per_block", provider)
        if per_block is not None and b.blocks != math.ceil(b.nodes / per_block):
            yield Finding(codes.CAPACITY_BLOCK, f"{b.workload}'s {b.nodes} nodes are bought as {b.blocks} blocks; "
                          f"a block holds {'one UltraServer of ' if unit else 'at most '}{per_block:g}"
                          f"{' instances' if unit else ''}")
        derived = r * billed(ctx, b.site, b.instance, b.nodes) * 24.0 * (days or b.days)
        if not close(b.cost_usd, derived, ABS_USD) or not close(b.usd_per_hour, r, 1e-6):
            yield Finding(codes.CAPACITY_BLOCK, f"{b.workload}'s block states {usd(b.cost_usd)} at "
                          f"{usd(b.usd_per_hour)}/h; re-derived {usd(derived)} at {usd(r)}/h")
        held = {m: 0.0 for m in range(ctx.H)}
        for hd in pl.placement.holdings:
            if hd.pricing == "on_demand":
                for m, h in enumerate(hd.monthly_node_hours[:ctx.H]):
                    held[m] += h
        for m in range(ctx.H):
            said = b.monthly_node_hours[m] if m < len(b.monthly_node_hours) else 0.0
            if not close(said, held[m], ABS_HOURS):
                yield Finding(codes.CAPACITY_BLOCK, f"{b.workload}'s block carries {said:,.1f} node-hours in month "
                              f"{m}; the job runs {held[m]:,.1f} on demand there")
