"""Savings Plans, re-derived from plan.json, the spec and the catalog alone (docs/savings-plans.md):
what the commitments cost under policy.after_horizon, what their covered hours save against the
on-demand rate, and that the cover is possible: each month within the commitment of its term
(at the plan's rate, the on-demand rate times the catalog's share), within the pool's on-demand
hours, its level part within what runs all month, and, under `continues`, the idle months after
the horizon charged for the commitment the last month's covered level usage leaves unused."""

from __future__ import annotations

from collections import defaultdict
from typing import Iterator

from compiler.audit import codes, rules
from compiler.audit.context import ABS_HOURS, ABS_USD, Context, Finding, close, exceeds, is_cloud, usd

MONTHS = {"savings_plan_1y": 12, "savings_plan_3y": 36}   # a Savings Plan's term (AWS, Azure: 1 or 3 years)


def rate(ctx: Context, site: str, instance: str, term: str) -> float | None:
    """USD per node-hour the term bills for covered usage: the on-demand rate times the catalog's
    share for the provider; None where the site does not opt in or nothing prices it."""
    s = ctx.sites.get(site)
    if s is None or not is_cloud(s) or term not in s.pricing:
        return None
    od = rules.cloud_rate(ctx.catalog, s, instance, "on_demand")
    share = ctx.catalog.factors.get(f"savings_plan_estimated_share.{s.provider}.{term}")
    return None if od is None or share is None else od * float(share.value)


def months_charged(term: str, start: int, horizon: int, rule: str) -> int:
    """The months of a plan bought in `start` charged before any idle tail: all (`full`), else those
    inside the horizon."""
    return MONTHS[term] if rule == "full" else min(MONTHS[term], horizon - start)


def active(ctx: Context, term: str, m: int) -> float:
    """USD per hour committed to `term` in month m."""
    return sum(b.usd_per_hour for b in ctx.plan.savings_plans.bought
               if b.term == term and b.start_month <= m < b.start_month + MONTHS[term])


def cost(ctx: Context) -> float:
    """What the Savings Plans add to cloud_compute: the commitments' charged months, the idle months
    after the horizon, less the on-demand price of the hours they cover."""
    sp, H, rule = ctx.plan.savings_plans, ctx.H, ctx.spec.policy.after_horizon
    out = sum(b.usd_per_hour * rules.HOURS * months_charged(b.term, b.start_month, H, rule) for b in sp.bought)
    out += sum(_idle_usd(ctx, i) for i in sp.idle_after)
    for c in sp.cover:
        s = ctx.sites.get(c.site)
        od = rules.cloud_rate(ctx.catalog, s, c.instance, "on_demand") if s is not None and is_cloud(s) else None
        out -= (od or 0.0) * sum(c.monthly_node_hours[:H])
    return out


def _idle_usd(ctx: Context, i) -> float:
    """An idle run's charge as re-derived: the commitment active then less the credit, if positive."""
    return max(0.0, active(ctx, i.term, i.first_month) - i.credit_usd_per_hour) * rules.HOURS * i.months


def _od_hours(ctx: Context) -> dict[tuple[str, str, int], tuple[float, float]]:
    """(site, instance, month) -> (the pool's on-demand node-hours, of which part-month jobs' own)."""
    H = ctx.H
    out: dict[tuple[str, str, int], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for p in ctx.plan.pools:
        if p.pricing == "on_demand":
            for m, h in enumerate(p.monthly_node_hours[:H]):
                out[(p.site, p.instance, m)][0] += h
    for pl in ctx.placed:
        if pl.cand.kind != "training":
            continue
        for m, h in ctx.hours(pl.cand).items():
            if 0 < h < rules.HOURS - 1e-6 and m < H:
                for hd in pl.placement.holdings:
                    if hd.pricing == "on_demand":
                        out[(pl.cand.site, pl.cand.instance, m)][1] += hd.monthly_node_hours[m]
    return {k: (v[0], v[1]) for k, v in out.items()}


def check_savings_plans(ctx: Context) -> Iterator[Finding]:
    sp, H = ctx.plan.savings_plans, ctx.H
    if not (sp.bought or sp.cover or sp.idle_after):
        return
    for b in sp.bought:
        for s in b.sites:
            site = ctx.sites.get(s)
            if site is None or not is_cloud(site) or b.term not in site.pricing:
                yield Finding(codes.SAVINGS_PLAN, f"a {b.term} Savings Plan covers {s}, which does not list {b.term}")
    spent: dict[tuple[str, int], float] = defaultdict(float)
    od = _od_hours(ctx)
    by_pool: dict[tuple[str, str, int], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for c in sp.cover:
        r = rate(ctx, c.site, c.instance, c.term)
        if r is None:
            yield Finding(codes.SAVINGS_PLAN, f"{c.term} covers {c.instance} at {c.site}, which it may not cover")
            continue
        for m, h in enumerate(c.monthly_node_hours[:H]):
            spent[(c.term, m)] += r * h
            by_pool[(c.site, c.instance, m)][0] += h
            by_pool[(c.site, c.instance, m)][1] += c.monthly_level_node_hours[m] if c.monthly_level_node_hours else h
    for (term, m), dollars in sorted(spent.items()):
        if exceeds(dollars, rules.HOURS * active(ctx, term, m), ABS_USD):
            yield Finding(codes.SAVINGS_PLAN, f"{term} covers {usd(dollars)} of usage in month {m}, beyond its "
                          f"commitment of {usd(rules.HOURS * active(ctx, term, m))}")
    for (s, i, m), (total, level) in sorted(by_pool.items()):
        hours, part = od.get((s, i, m), (0.0, 0.0))
        if exceeds(total, hours, ABS_HOURS):
            yield Finding(codes.SAVINGS_PLAN, f"Savings Plans cover {total:,.1f} node-hours of {i} at {s} in month "
                          f"{m}, beyond its {hours:,.1f} on-demand node-hours")
        elif exceeds(level, hours - part, ABS_HOURS):
            yield Finding(codes.SAVINGS_PLAN, f"Savings Plans cover {level:,.1f} node-hours of {i} at {s} in month "
                          f"{m} as usage that runs all month; {hours - part:,.1f} does")
    rule = ctx.spec.policy.after_horizon
    for i in sp.idle_after:
        if rule != "continues":
            yield Finding(codes.SAVINGS_PLAN, f"idle {i.term} months after the horizon charged under {rule}")
            continue
        most = sum((rate(ctx, c.site, c.instance, c.term) or 0.0) * c.monthly_level_node_hours[H - 1]
                   for c in sp.cover if c.term == i.term and c.monthly_level_node_hours) / rules.HOURS
        if exceeds(i.credit_usd_per_hour, most, 1e-4):
            yield Finding(codes.SAVINGS_PLAN, f"{i.term} is credited {usd(i.credit_usd_per_hour)}/h after the "
                          f"horizon; the last month's covered usage that runs all month is {usd(most)}/h")
        if not close(i.charged_usd, _idle_usd(ctx, i), ABS_USD):
            yield Finding(codes.SAVINGS_PLAN, f"{i.term}'s idle months {i.first_month}-"
                          f"{i.first_month + i.months - 1} state {usd(i.charged_usd)}, re-derived "
                          f"{usd(_idle_usd(ctx, i))}")
    if rule == "continues":
        listed = {(i.term, i.first_month) for i in sp.idle_after}
        for term in sorted({b.term for b in sp.bought}):
            if active(ctx, term, H) > 0 and (term, H) not in listed:
                yield Finding(codes.SAVINGS_PLAN, f"{term} commitments run past the horizon and no idle months "
                              f"after it are stated")
