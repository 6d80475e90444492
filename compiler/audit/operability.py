"""Operability limits of the policy, re-derived from the plan's placements: the sites, GPU types
and instance types at a site a service runs on, how long a cloud pool carries replicas once up,
how long a service keeps its replica mix, the share of a training job on spot (docs/spec-reference.md, "Operability limits", is the rule these are written from)."""

from __future__ import annotations

from typing import Iterator

from compiler.audit import codes
from compiler.audit.context import Context, Finding


def check_operability(ctx: Context) -> Iterator[Finding]:
    pol = ctx.spec.policy
    if pol.max_sites_per_service is not None:
        yield from _counted(ctx, pol.max_sites_per_service, lambda pl: pl.placement.site, "sites",
                            codes.SERVICE_SITES, "max_sites_per_service")
    if pol.max_gpu_types_per_service is not None:
        yield from _counted(ctx, pol.max_gpu_types_per_service, lambda pl: pl.cand.gpu, "GPU types",
                            codes.SERVICE_GPU_TYPES, "max_gpu_types_per_service")
    if pol.min_pool_months is not None:
        yield from _pool_life(ctx, pol.min_pool_months)
    if pol.max_instance_types_per_site is not None:
        yield from _instance_types(ctx, pol.max_instance_types_per_site)
    if pol.min_months_per_mix is not None:
        yield from _mix_hold(ctx, pol.min_months_per_mix)
    if pol.max_spot_share is not None:
        yield from _spot_share(ctx, pol.max_spot_share)


def _serving(ctx: Context):
    """service name -> its placements that run a replica in some month."""
    out: dict[str, list] = {}
    for pl in ctx.placed:
        if pl.workload.kind == "inference" and any(r > 0 for r in pl.placement.monthly_replicas):
            out.setdefault(pl.workload.name, []).append(pl)
    return out


def _counted(ctx: Context, most: int, key, what: str, code: str, policy_key: str) -> Iterator[Finding]:
    """Each service's distinct keys (sites, GPU types) over its placements with a replica."""
    for name, pls in sorted(_serving(ctx).items()):
        keys = sorted({key(pl) for pl in pls})
        if len(keys) > most:
            yield Finding(code, f"{name} runs on {len(keys)} {what} ({', '.join(keys)}); policy.{policy_key} "
                          f"is {most}", f"$.policy.{policy_key}")


def _pool_life(ctx: Context, least: int) -> Iterator[Finding]:
    """A cloud pool (site, instance) is up in a month where any service has a replica on it. Each
    run of such months lasts `least` months, unless it reaches the horizon's last month."""
    up: dict[tuple[str, str], set[int]] = {}
    for pls in _serving(ctx).values():
        for pl in pls:
            if ctx.sites[pl.placement.site].type != "cloud":
                continue
            key = (pl.placement.site, pl.placement.instance)
            up.setdefault(key, set()).update(m for m in range(ctx.H) if ctx.replicas(pl.placement, m) > 0)
    for (site, inst), months in sorted(up.items()):
        m = 0
        while m < ctx.H:
            if m not in months:
                m += 1
                continue
            end = m
            while end + 1 in months:
                end += 1
            if end < ctx.H - 1 and end - m + 1 < least:
                yield Finding(codes.POOL_LIFE,
                              f"{inst} at {site} carries replicas in months {m}-{end} only ({end - m + 1} "
                              f"month(s)); policy.min_pool_months is {least}", "$.policy.min_pool_months")
            m = end + 1


def _instance_types(ctx: Context, most: int) -> Iterator[Finding]:
    for name, pls in sorted(_serving(ctx).items()):
        types: dict[str, set[str]] = {}
        for pl in pls:
            types.setdefault(pl.placement.site, set()).add(pl.placement.instance)
        for site, insts in sorted(types.items()):
            if len(insts) > most:
                yield Finding(codes.INSTANCE_TYPES,
                              f"{name} runs {len(insts)} instance types at {site} ({', '.join(sorted(insts))}); "
                              f"policy.max_instance_types_per_site is {most}",
                              "$.policy.max_instance_types_per_site")


def _mix_hold(ctx: Context, hold: int) -> Iterator[Finding]:
    """The mix of a month: the candidates with a replica. A change is a month whose mix differs
    from the month before; the service's first month counts as one. Two are `hold` apart or more."""
    for name, pls in sorted(_serving(ctx).items()):
        w = ctx.spec.workload(name)
        first = w.window.start_month
        mix = [frozenset(pl.cand.id for pl in pls if ctx.replicas(pl.placement, m) > 0) for m in range(ctx.H)]
        changes = [first] + [m for m in range(first + 1, ctx.H) if mix[m] != mix[m - 1]]
        for a, b in zip(changes, changes[1:]):
            if b - a < hold:
                yield Finding(codes.MIX_HOLD,
                              f"{name} changes its replica mix in month {b}, {b - a} month(s) after "
                              f"{'it starts' if a == first else f'the change in month {a}'}; "
                              f"policy.min_months_per_mix is {hold}", "$.policy.min_months_per_mix")


def _spot_share(ctx: Context, cap: float) -> Iterator[Finding]:
    for pl in ctx.placed:
        if pl.workload.kind != "training":
            continue
        hours = {h.pricing: sum(h.monthly_node_hours) for h in pl.placement.holdings}
        total, spot = sum(hours.values()), hours.get("spot", 0.0)
        if spot > cap * total + 1e-6 * max(1.0, total):
            share = spot / total if total else 1.0
            yield Finding(codes.SPOT_SHARE,
                          f"{pl.workload.name} runs {share:.0%} of its node-hours on spot; "
                          f"policy.max_spot_share is {cap:g}", "$.policy.max_spot_share")
