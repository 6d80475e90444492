"""Costs: every line of cost_breakdown_usd re-priced from the plan's choices with the audit's own
unit costs (rules.py), the total, the solver's objective, policy.max_cloud_share, and the
commitments the plan lists after the horizon."""

from __future__ import annotations

import math
from typing import Iterator

from compiler.audit import capacity_blocks, codes, rules, savings_plans
from compiler.audit.context import ABS_USD, Context, Finding, close, exceeds, is_cloud, usd

CATEGORIES = ("capex", "support", "fabric", "power", "cloud_compute", "storage", "egress")


class Priced:
    def __init__(self) -> None:
        self.lines: dict[str, float] = {k: 0.0 for k in CATEGORIES}
        self.storage: dict[tuple[str, str], float] = {}
        self.storage_slack: dict[tuple[str, str], float] = {}   # rounding allowance per entry
        self.cloud_storage = 0.0
        self.missing: list[Finding] = []
        # (site, instance, pricing) -> [node-months, committed USD, charged USD] after the horizon
        self.after: dict[tuple[str, str, str], list[float]] = {}
        # the charge's rounding allowance (USD): credits are written to 6 decimals, and a credit
        # short by half a unit leaves that much of a node idle in every month after the horizon
        self.after_slack: dict[tuple[str, str, str], float] = {}
        self.line_slack: dict[str, float] = {k: 0.0 for k in CATEGORIES}

    @property
    def total(self) -> float:
        return sum(self.lines.values())


def price(ctx: Context) -> Priced:
    """The plan's cost lines, re-priced (once per audit)."""
    if ctx._priced is not None:
        return ctx._priced
    out = ctx._priced = Priced()
    H, cat = ctx.H, ctx.catalog
    rule = ctx.spec.policy.after_horizon
    full = rule == "full"
    # continues: the credits' GPUs and their rounding allowance, per pool (one walk each, for every pool)
    credited, credit_slack = _credited_gpus(ctx), _credit_slack_gpus(ctx)
    unrun = credited - _replica_gpus(ctx)
    # Bought on-prem nodes: capex (policy.after_horizon), support, the fabric they are wired with.
    for p in ctx.plan.pools:
        site = ctx.sites.get(p.site)
        if site is None or is_cloud(site) or p.pricing != "purchase" or p.instance not in cat.onprem_nodes:
            continue
        node = cat.onprem_nodes[p.instance]
        after = node.capex_usd - rules.capex_for_horizon(node, H)
        # continues: the last month's load fills the owned nodes first; the bought ones it leaves
        # idle are charged their months after the horizon
        last = (ctx.usage.gpus.get((p.site, p.instance, H - 1), 0.0)
                + unrun.get((p.site, p.instance), 0.0))
        beyond_owned = max(0.0, last / node.gpus - rules.owned_nodes(site, p.instance, H - 1, ctx.spec.start, cat))
        idle = p.nodes if full else 0.0 if rule == "prorated" else max(0.0, p.nodes - beyond_owned)
        out.lines["capex"] += p.nodes * rules.capex_for_horizon(node, H) + idle * after
        if after > 0 and p.nodes:
            key = (p.site, p.instance, p.pricing)
            out.after[key] = [p.nodes * rules.life_after_horizon(node, H), p.nodes * after, idle * after]
            if rule == "continues":
                out.after_slack[key] = credit_slack.get((p.site, p.instance), 0.0) / node.gpus * after
                out.line_slack["capex"] += out.after_slack[key]
        out.lines["support"] += p.nodes * rules.support_for_horizon(node, H)
        fab = cat.fabrics.get(p.fabric)
        if fab is not None:
            out.lines["fabric"] += p.nodes * rules.fabric_per_node(fab)
    # Power: node-hours run on-prem, owned and bought alike.
    for (s, i, _m), nh in ctx.usage.onprem_node_hours.items():
        out.lines["power"] += nh * rules.power_per_node_hour(cat.onprem_nodes[i], ctx.sites[s])
    # Cloud: reserved terms (the months they cover), on-demand and spot hours billed.
    for p in ctx.plan.pools:
        site = ctx.sites.get(p.site)
        if site is None or not is_cloud(site) or p.pricing not in rules.CLOUD_PRICINGS:
            continue
        rate = rules.cloud_rate(cat, site, p.instance, p.pricing)
        if p.pricing in rules.TERM_MONTHS:
            # a term begun before the horizon is held (the spec's reserved): sunk, not the plan's
            bought = [r for r in p.reservations if r.start_month >= 0]
            amount = sum(r.nodes * rules.HOURS * len(rules.term_months(p.pricing, r.start_month, H))
                         for r in bought)
            late = sum(r.nodes * rules.months_after(p.pricing, r.start_month, H) for r in bought)
            if late:
                idle, slack = ((late, 0.0) if full else (0.0, 0.0) if rule == "prorated"
                               else _idle_term_months(ctx, p, credited, credit_slack))
                key = (p.site, p.instance, p.pricing)
                out.after[key] = [float(late), (rate or 0.0) * rules.HOURS * late, (rate or 0.0) * rules.HOURS * idle]
                out.after_slack[key] = (rate or 0.0) * rules.HOURS * slack
                out.line_slack["cloud_compute"] += out.after_slack[key]
                amount += rules.HOURS * idle
        else:
            amount = sum(p.monthly_node_hours[:H])
        if rate is None:
            if amount > 0:
                out.missing.append(Finding(codes.PRICE_MISSING, f"pool {p.site}/{p.instance} {p.pricing}: the "
                                           f"catalog has no {p.pricing} price for {p.instance} in {site.region}",
                                           site.path))
            continue
        out.lines["cloud_compute"] += rate * amount
    # Savings Plans: their commitments, less the on-demand price of the hours they cover.
    out.lines["cloud_compute"] += savings_plans.cost(ctx)
    # Capacity Blocks: their price, less the on-demand price of the job hours they carry.
    out.lines["cloud_compute"] += capacity_blocks.cost(ctx)
    # Storage: $/TB-month provisioned, capex per TB of the peak.
    for st in ctx.plan.storage:
        site = ctx.sites.get(st.site)
        tier = rules.tiers_at(cat, site).get(st.tier) if site is not None else None
        if tier is None:
            continue
        amount = sum(st.monthly_tb[:H]) * tier.usd_per_tb_month + max(st.monthly_tb, default=0.0) * tier.capex_usd_per_tb
        out.storage[(st.site, st.tier)] = amount
        # sizes are written to 3 decimals: allow half a unit of each month and of the peak
        out.storage_slack[(st.site, st.tier)] = 0.5e-3 * (len(st.monthly_tb) * tier.usd_per_tb_month
                                                          + tier.capex_usd_per_tb)
        out.line_slack["storage"] += out.storage_slack[(st.site, st.tier)]
        out.lines["storage"] += amount
        if is_cloud(site):
            out.cloud_storage += amount
    # Egress: a training job away from its data's home moves the dataset once.
    for pl in ctx.placed:
        w, c = pl.workload, pl.cand
        if c.kind != "training" or not w.data or not w.data.home or not w.data.dataset_tb:
            continue
        if c.site != w.data.home and w.data.home in ctx.sites:
            out.lines["egress"] += w.data.dataset_tb * rules.egress_per_tb(cat, ctx.sites[w.data.home])
    return out


class _Sums(dict):
    """GPUs per (site, instance); `a - b` key by key."""
    def __sub__(self, other: dict) -> "_Sums":
        return _Sums({k: self.get(k, 0.0) - other.get(k, 0.0) for k in set(self) | set(other)})


def _replica_gpus(ctx: Context) -> _Sums:
    """The GPUs the services' replicas hold in the horizon's last month, per pool."""
    out = _Sums()
    for pl in ctx.placed:
        if pl.cand.kind != "training":
            key = (pl.cand.site, pl.cand.instance)
            out[key] = out.get(key, 0.0) + ctx.replicas(pl.placement, ctx.H - 1) * pl.cand.gpus
    return out


def _credits_by_pool(ctx: Context) -> Iterator[tuple[tuple[str, str], float, int]]:
    """continues: each credit of a placed candidate as (its pool, replicas credited, GPUs a replica)."""
    by_id = {pl.cand.id: pl for pl in ctx.placed}
    for k in ctx.plan.after_horizon.credits:
        pl = by_id.get(k.candidate)
        if pl is not None:
            yield (pl.cand.site, pl.cand.instance), k.replicas, pl.cand.gpus


def _credited_gpus(ctx: Context) -> _Sums:
    """continues: the GPUs of the last month's replicas whose load the plan credits after the
    horizon (after_horizon.credits; check_credits holds them to the replicas run and the
    traffic forecast), per pool."""
    out = _Sums()
    for key, replicas, gpus in _credits_by_pool(ctx):
        out[key] = out.get(key, 0.0) + replicas * gpus
    return out


def _credit_slack_gpus(ctx: Context) -> _Sums:
    """The GPUs by which the credits on each pool may fall short of the solver's values: plan.json
    writes each credit to 6 decimals (half a unit each)."""
    out = _Sums()
    for key, _replicas, gpus in _credits_by_pool(ctx):
        out[key] = out.get(key, 0.0) + 0.5e-6 * gpus
    return out


def check_credits(ctx: Context) -> Iterator[Finding]:
    """continues: each credit is replicas its placement runs in the last month, and a service's
    credits carry no more than the traffic the spec forecasts for that month."""
    rule, credits = ctx.spec.policy.after_horizon, ctx.plan.after_horizon.credits
    if credits and rule != "continues":
        yield Finding(codes.COMMITMENTS, f"after_horizon.credits under {rule}: only continues credits the last "
                      f"month's load", "$.policy.after_horizon")
    by_id = {pl.cand.id: pl for pl in ctx.placed}
    carried: dict[str, float] = {}
    slack: dict[str, float] = {}      # plan.json writes credits to 6 decimals: half a unit each
    for k in credits:
        pl = by_id.get(k.candidate)
        if pl is None or pl.workload.name != k.workload or (pl.cand.site, pl.cand.instance) != (k.site, k.instance):
            yield Finding(codes.COMMITMENTS, f"after_horizon.credits: {k.workload} has no placement of candidate "
                          f"{k.candidate} at {k.site}/{k.instance}", "$.policy.after_horizon")
            continue
        ran = ctx.replicas(pl.placement, ctx.H - 1)
        if not math.isfinite(k.replicas) or k.replicas < 0 or k.replicas > ran + 1e-6:
            yield Finding(codes.COMMITMENTS, f"after_horizon.credits: {k.replicas:g} replicas of {k.candidate} "
                          f"credited, {ran} run in month {ctx.H - 1}", pl.workload.path)
        carried[k.workload] = carried.get(k.workload, 0.0) + k.replicas * pl.cand.estimate.tokens_per_s
        slack[k.workload] = slack.get(k.workload, 0.0) + 0.5e-6 * pl.cand.estimate.tokens_per_s
    for w in ctx.spec.workloads:
        if w.name in carried:
            need = rules.demand(w, ctx.H - 1)
            if carried[w.name] > need * (1 + 1e-6) + slack[w.name]:
                yield Finding(codes.COMMITMENTS, f"after_horizon.credits: {w.name}'s credited replicas carry "
                              f"{carried[w.name]:,.1f} tokens/s, over the {need:,.1f} forecast for month "
                              f"{ctx.H - 1}", f"{w.path}.traffic")


def _idle_term_months(ctx: Context, pool, credited: _Sums, credit_slack: _Sums) -> tuple[float, float]:
    """policy.after_horizon continues: the node-months of `pool`'s term after the horizon that the
    last month's work leaves idle, and their rounding allowance (the credits' rounding, in
    node-months; `credited` and `credit_slack` are _credited_gpus and _credit_slack_gpus). Month
    by month after the horizon: the reserved nodes of both terms then active, less the node-months
    the pool's jobs (hours) and replicas (GPUs) ran in the horizon's last month; the idle ones are
    the cheaper term's first."""
    H, cat, site = ctx.H, ctx.catalog, ctx.sites[pool.site]
    inst = cat.instances[pool.instance]
    busy = (ctx.usage.train_hours.get((pool.site, pool.instance, H - 1), 0.0) / rules.HOURS
            + credited.get((pool.site, pool.instance), 0.0) / inst.gpus)
    terms = {t: ctx.pools.get((pool.site, pool.instance, t)) for t in rules.TERM_MONTHS}
    rate = {t: rules.cloud_rate(cat, site, pool.instance, t) or 0.0 for t in terms}
    cheap_first = sorted((t for t, p in terms.items() if p is not None), key=lambda t: (rate[t], t))
    # terms held from before the horizon are left out: sunk, whatever the load after it
    last = max(r.start_month + rules.TERM_MONTHS[t] for t, p in terms.items() if p for r in p.reservations
               if r.start_month >= 0)
    idle_months = 0.0
    slack = credit_slack.get((pool.site, pool.instance), 0.0) / inst.gpus * max(0, last - H)
    for j in range(H, last):
        active = {t: sum(r.nodes for r in terms[t].reservations
                         if 0 <= r.start_month <= j < r.start_month + rules.TERM_MONTHS[t]) for t in cheap_first}
        idle = max(0.0, sum(active.values()) - busy)
        for t in cheap_first:
            mine = min(idle, active[t])
            idle -= mine
            if t == pool.pricing:
                idle_months += mine
    return idle_months, slack


def check_commitments(ctx: Context) -> Iterator[Finding]:
    """plan.json's after_horizon: the rule the spec sets, and every pool's commitment after the
    horizon, committed and charged, as re-derived from its reservations and bought nodes."""
    plan = ctx.plan.after_horizon
    if plan.rule != ctx.spec.policy.after_horizon:
        yield Finding(codes.COMMITMENTS, f"after_horizon.rule is {plan.rule}, the spec's policy.after_horizon is "
                      f"{ctx.spec.policy.after_horizon}", "$.policy.after_horizon")
    priced = price(ctx)
    mine = priced.after
    stated = {(c.site, c.instance, c.pricing): c for c in plan.commitments}
    for key in sorted(set(mine) | set(stated)):
        node_months, committed, charged = mine.get(key, (0.0, 0.0, 0.0))
        c = stated.get(key)
        theirs = (c.node_months, c.committed_usd, c.charged_usd) if c else (0.0, 0.0, 0.0)
        slack = priced.after_slack.get(key, 0.0)
        if not (close(node_months, theirs[0], 1e-6) and close(committed, theirs[1])
                and close(charged, theirs[2], ABS_USD + slack)):
            yield Finding(codes.COMMITMENTS, f"{'/'.join(key)} after the horizon: the plan states "
                          f"{theirs[0]:,.1f} node-months, {usd(theirs[1])} committed, {usd(theirs[2])} charged; "
                          f"its reservations and bought nodes give {node_months:,.1f}, {usd(committed)}, "
                          f"{usd(charged)}")


def check_costs(ctx: Context) -> Iterator[Finding]:
    priced = price(ctx)
    yield from priced.missing
    plan = ctx.plan
    stated = plan.cost_breakdown_usd.lines
    for line in sorted(stated, key=lambda x: x.category):
        k = line.category
        mine, theirs = priced.lines.get(k, 0.0), float(line.usd)
        if k not in priced.lines:
            if abs(theirs) > ABS_USD:
                yield Finding(codes.COST_LINE, f"cost line {k} ({usd(theirs)}) is no cost the plan's choices incur")
            continue
        if not close(mine, theirs, ABS_USD + priced.line_slack[k]):
            yield Finding(codes.COST_LINE, f"cost line {k} is {usd(theirs)}, the plan's choices cost {usd(mine)}")
    lines = sum(float(x.usd) for x in stated)
    if not close(plan.total_cost_usd, lines, ABS_USD * max(1, len(stated))):
        yield Finding(codes.COST_TOTAL, f"total_cost_usd is {usd(plan.total_cost_usd)}, its lines add up to "
                      f"{usd(lines)}")
    # a re-plan's objective also prices its moves (policy.replan): solver.moves_usd says how much
    if not close(plan.solver.objective_usd - plan.solver.moves_usd, plan.total_cost_usd, ABS_USD * 4):
        yield Finding(codes.OBJECTIVE, f"the solver's objective is {usd(plan.solver.objective_usd)}, the plan "
                      f"costs {usd(plan.total_cost_usd)}")
    for st in plan.storage:
        mine = priced.storage.get((st.site, st.tier))
        if mine is not None and not close(mine, st.cost_usd, ABS_USD + priced.storage_slack[(st.site, st.tier)]):
            yield Finding(codes.STORAGE_COST, f"storage {st.site}/{st.tier} states {usd(st.cost_usd)}, "
                          f"{sum(st.monthly_tb):,.2f} TB-months and its peak cost {usd(mine)}")
    n = len(plan.workloads)
    wsum = sum(w.cost_usd for w in plan.workloads)
    if n and not close(wsum, plan.total_cost_usd, ABS_USD * n):
        yield Finding(codes.ATTRIBUTION, f"the workloads' costs add up to {usd(wsum)}, the plan costs "
                      f"{usd(plan.total_cost_usd)}")
    if plan.monthly_cost_usd:
        msum = sum(plan.monthly_cost_usd)
        if not close(msum, plan.total_cost_usd, ABS_USD * len(plan.monthly_cost_usd)):
            yield Finding(codes.ATTRIBUTION, f"the monthly costs add up to {usd(msum)}, the plan costs "
                          f"{usd(plan.total_cost_usd)}")


def check_cloud_share(ctx: Context) -> Iterator[Finding]:
    """policy.max_cloud_share: cloud compute + cloud storage within the share of the total."""
    if not ctx.spec.policy.caps_cloud_share:
        return
    share = ctx.spec.policy.max_cloud_share
    priced = price(ctx)
    cloud = priced.lines["cloud_compute"] + priced.cloud_storage
    total = priced.total
    if exceeds(cloud, share * total, ABS_USD):
        yield Finding(codes.CLOUD_SHARE, f"cloud spend is {usd(cloud)} of {usd(total)} "
                      f"({cloud / total:.1%}), policy.max_cloud_share is {share:.0%}",
                      "$.policy.max_cloud_share")

