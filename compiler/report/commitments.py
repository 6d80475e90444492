"""The report's "Commitments after the horizon": every reserved term and bought node that outlives
the horizon, what its months after it cost, and what the plan's total pays for them under the
spec's policy.after_horizon (docs/optimizer.md, "Commitments that outlive the horizon")."""

from __future__ import annotations

from dataclasses import dataclass

from compiler import unit_costs
from compiler.plan import Plan
from compiler.render.environment import Md, md_text

# Markdown as written (the code spans are the compiler's); a rule read from elsewhere is escaped.
RULES = {
    "prorated": Md("policy.after_horizon is `prorated`: the total pays each commitment's months inside "
                 "the horizon only; the months after it are committed all the same and left unpaid "
                 "here: the default `continues` charges those the last month's load would leave idle, "
                 "`full` all of them."),
    "full": Md("policy.after_horizon is `full`: every commitment is paid in full, so the total "
             "includes each term's months after the horizon and each bought node's whole price."),
    "continues": Md("policy.after_horizon is `continues` (the default): the months after the horizon "
                  "are valued as if the last month's forecast load went on; the total pays them only "
                  "for the nodes that load would leave idle."),
}
PRICING = {"reserved_1y": "1-year term", "reserved_3y": "3-year term", "purchase": "bought (useful life)"}


@dataclass(frozen=True)
class CommitmentRow:
    site: str
    instance: str
    pricing: str                  # in words
    nodes: int
    node_months: float
    committed_usd: float
    charged_usd: float


@dataclass(frozen=True)
class CommitmentsView:
    rule: str                     # one sentence: the rule and what it does to the total
    committed_usd: float
    charged_usd: float
    rows: tuple[CommitmentRow, ...]


def build(plan: Plan) -> CommitmentsView:
    ah = plan.after_horizon
    rows = tuple(CommitmentRow(c.site, c.instance, PRICING.get(c.pricing, c.pricing), c.nodes, c.node_months,
                               c.committed_usd, c.charged_usd)
                 for c in sorted(ah.commitments, key=lambda c: (c.site, c.instance, c.pricing)))
    return CommitmentsView(RULES.get(ah.rule) or md_text(ah.rule), ah.committed_usd, ah.charged_usd, rows)


@dataclass(frozen=True)
class HeldRow:
    label: str                    # "aws-use1 p5.48xlarge, 8 nodes (1-year term)"
    until: str                    # the first month it no longer covers, as the plan names months
    sunk_usd: float


@dataclass(frozen=True)
class HeldView:
    """The commitments already bought (the spec's `reserved`): sunk, apart from the total, and
    their nodes in use month by month (one column per commitment)."""
    sunk_usd: float
    rows: tuple[HeldRow, ...]
    months: tuple[tuple[str, tuple[str, ...]], ...]   # (month, "6.0 of 8" per commitment)


def held(plan: Plan) -> HeldView:
    cal = plan.calendar
    rows = tuple(HeldRow(f"{h.site} {h.instance}, {h.nodes} nodes ({PRICING.get(h.term, h.term)})",
                         cal.name(h.until_month), h.sunk_usd) for h in plan.held)
    last = max((len(h.monthly_used) for h in plan.held), default=0)
    months = tuple((cal.name(m), tuple(f"{h.monthly_used[m]:,.1f} of {h.nodes}" if m < len(h.monthly_used) else "ended"
                                       for h in plan.held)) for m in range(last))
    return HeldView(plan.sunk_usd, rows, months)


@dataclass(frozen=True)
class OwnedAgeRow:
    label: str                    # "dc1 dgx-h100, 4 nodes"
    bought: str
    life_ends: str
    serves: str                   # "to 2027-06; the plan replaces them from 2027-07" | "through the horizon"
    book_usd: float


@dataclass(frozen=True)
class OwnedAgesView:
    """Owned nodes with a purchase date: until when they serve the plan, and their book value at
    its start (sunk: paid, not in the total)."""
    book_usd: float
    rows: tuple[OwnedAgeRow, ...]


def owned_ages(plan: Plan) -> OwnedAgesView:
    cal = plan.calendar
    rows = []
    for o in plan.owned_ages:
        serves = ("through the horizon" if o.retires_month is None else
                  f"to {cal.name(o.retires_month - 1)}; retired from {cal.name(o.retires_month)}, "
                  f"the plan runs their work elsewhere")
        rows.append(OwnedAgeRow(f"{o.site} {o.instance}, {o.nodes} nodes", o.bought, o.life_ends, serves, o.book_usd))
    return OwnedAgesView(round(sum(o.book_usd for o in plan.owned_ages), 2), tuple(rows))


TERM_WORDS = {"savings_plan_1y": "1-year Savings Plan", "savings_plan_3y": "3-year Savings Plan"}
TERM_MONTHS = {"savings_plan_1y": 12, "savings_plan_3y": 36}
# What each provider calls its Savings Plan (docs/savings-plans.md), and how it is paid.
SAVINGS_PLAN_KINDS = {"aws": "AWS Compute Savings Plans (No Upfront)",
                      "azure": "Azure savings plan for compute (paid monthly)"}


@dataclass(frozen=True)
class SavingsPlanRow:
    term: str                     # in words
    bought: str                   # the month it is bought, as the plan names months
    ends: str                     # its last month
    usd_per_hour: float
    sites: str                    # the sites it covers
    committed_usd: float          # its whole term at the commitment


@dataclass(frozen=True)
class SavingsPlansView:
    """The Savings Plans the plan buys (docs/savings-plans.md): each commitment, and what their
    cover saves against the on-demand rate."""
    rows: tuple[SavingsPlanRow, ...]
    covered_node_hours: float     # on-demand node-hours billed at the plans' rates instead
    on_demand_usd: float          # what those hours would cost on demand
    idle_after_usd: float         # under continues: the unused commitment charged after the horizon
    kinds: str = SAVINGS_PLAN_KINDS["aws"]   # what the providers call them, joined


def savings_plans(plan: Plan, catalog) -> SavingsPlansView:
    cal, sp = plan.calendar, plan.savings_plans
    rows = tuple(SavingsPlanRow(TERM_WORDS.get(b.term, b.term), cal.name(b.start_month),
                                cal.name(b.start_month + TERM_MONTHS.get(b.term, 12) - 1), b.usd_per_hour,
                                ", ".join(b.sites), round(b.usd_per_hour * 730.0 * TERM_MONTHS.get(b.term, 12), 2))
                 for b in sp.bought)
    region = {s.name: s.region for s in plan.sites}
    hours = od = 0.0
    for c in sp.cover:
        h = sum(c.monthly_node_hours[:plan.horizon_months])
        inst = catalog.instances.get(c.instance)
        rate = inst.price(region.get(c.site) or "", "on_demand") if inst is not None else None
        hours += h
        od += h * (rate or 0.0)
    provider = {s.name: s.provider for s in plan.sites}
    kinds = " and ".join(SAVINGS_PLAN_KINDS.get(p, p) for p in sorted({provider.get(b.sites[0]) or "aws"
                                                                        for b in sp.bought if b.sites}))
    return SavingsPlansView(rows, round(hours, 1), round(od, 2), round(sum(i.charged_usd for i in sp.idle_after), 2),
                            kinds or SAVINGS_PLAN_KINDS["aws"])


@dataclass(frozen=True)
class CapacityBlockRow:
    workload: str
    site: str
    instance: str
    instances: int                # paid for: the job's nodes, or whole UltraServers of them
    starts: str                   # the month it starts, as the plan names months
    days: int
    usd_per_hour: float
    cost_usd: float               # paid up front
    on_demand_usd: float          # what the job's node-hours on it would cost on demand


@dataclass(frozen=True)
class CapacityBlocksView:
    """The Capacity Blocks the plan buys (docs/capacity-blocks.md), each against on demand."""
    rows: tuple[CapacityBlockRow, ...]
    cost_usd: float
    on_demand_usd: float
    kinds: str = "AWS EC2 Capacity Blocks for ML"   # what the providers call them, joined
    paid: str = "paid in full when bought"          # when (AWS: up front; GCP: for the whole period)


def capacity_blocks(plan: Plan, catalog) -> CapacityBlocksView:
    region = {s.name: s.region for s in plan.sites}
    provider = {s.name: s.provider for s in plan.sites}
    rows = []
    for b in plan.capacity_blocks:
        inst = catalog.instances.get(b.instance) if catalog is not None else None
        rate = inst.price(region.get(b.site) or "", "on_demand") if inst is not None else None
        od = round((rate or 0.0) * sum(b.monthly_node_hours[:plan.horizon_months]), 2)
        billed = (b.nodes if catalog is None else
                  unit_costs.capacity_block_billed(catalog, provider.get(b.site) or "aws", b.instance, b.nodes))
        rows.append(CapacityBlockRow(b.workload, b.site, b.instance, billed, plan.calendar.name(b.start_month),
                                     b.days, b.usd_per_hour, b.cost_usd, od))
    names = {"aws": "AWS EC2 Capacity Blocks for ML", "gcp": "GCP future reservations in calendar mode"}
    kinds = " and ".join(names.get(p, p) for p in sorted({provider.get(b.site) or "aws" for b in plan.capacity_blocks}))
    return CapacityBlocksView(tuple(rows), round(sum(r.cost_usd for r in rows), 2),
                              round(sum(r.on_demand_usd for r in rows), 2), kinds,
                              "paid in full when bought" if kinds == names["aws"] else "paid for all of it")
