"""Operability limits of the policy, re-derived from the plan's placements: instance types a
service runs at a site, how long a service keeps its replica mix, the share of a training job on
spot (docs/spec-reference.md, "Operability limits", is the rule these are written from)."""

from __future__ import annotations

from typing import Iterator

from compiler.audit import codes
from compiler.audit.context import Context, Finding


def check_operability(ctx: Context) -> Iterator[Finding]:
    pol = ctx.spec.policy
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
