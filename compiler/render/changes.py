"""A re-plan against its baseline, for people: what RUNBOOK.md and the report say changes.

    changes(plan, baseline) -> Changes

The baseline is the plan deployed or approved (`--baseline`): what it runs is there already, so
a re-plan names only what differs. Per pool (site, instance, pricing, the key plan.json and
`infra-compile diff` use): create (the baseline runs none of it), resize (it runs other nodes in
some month), release (this plan runs none of it), and how many pools keep what they run; the
workloads whose placement changes (added, moved to other sites or instances, removed); and each
held commitment that ends inside the horizon, with what the plan runs in its place from then.

What differs is compiler/compare.py's, under its rule AS_DEPLOYED: the months line up as
`infra-compile diff` lines them up, and after the baseline's last month its last month's fleet
stands for what stays deployed (nobody tears a fleet down because its plan's horizon ended, so a
pool this plan keeps running is no create). Workloads are counted by the change the diff gives
them (moved, resized, unchanged ...), so the runbook, the report and the diff agree. Months are
this plan's, named by its calendar.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.compare import AS_DEPLOYED, CHANGE_ORDER, Comparison, compare
from compiler.plan import Calendar, Held, Plan
from compiler.render.environment import Md, md_code, md_text

# How a pool's pricing reads in running text.
PRICING_WORDS = {"owned": "owned", "purchase": "bought", "reserved_3y": "3-year term",
                 "reserved_1y": "1-year term", "on_demand": "on demand", "spot": "spot"}


def _plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


@dataclass(frozen=True)
class PoolChange:
    """One pool that differs from the baseline's, in this plan's months."""
    site: str
    instance: str
    pricing: str
    gpu: str
    change: str                   # create | resize | release
    nodes_before: int             # the baseline's nodes in the first month that differs
    nodes_after: int              # this plan's nodes in that month
    first_month: int              # this plan's first month that differs
    months: str                   # every month that differs, as runs (Calendar.runs)
    when: str                     # the first month as the plan names it: '7', or '2027-08'

    @property
    def pool(self) -> str:
        return f"{self.site} {self.instance} ({self.pricing})"

    @property
    def line(self) -> str:
        """'create aws-use1 g6e.12xlarge (reserved_1y): 0 -> 1 nodes from 2027-08'."""
        return f"{self.change} {self.pool}: {self.nodes_before} -> {self.nodes_after} nodes from {self.when}"


@dataclass(frozen=True)
class PlacementChange:
    """A workload that runs elsewhere than in the baseline, or in one plan only."""
    workload: str
    kind: str
    change: str                   # added | moved | removed
    before: str                   # where the baseline runs it: "aws-use1 p5.48xlarge" ("-": nowhere)
    after: str                    # where this plan runs it ("-": nowhere)
    first_month: int              # this plan's month it starts in (0: it runs from the start)
    sites: tuple[str, ...]        # the sites of either side
    when: str = ""                # first_month as the plan names it

    @property
    def line(self) -> str:
        return f"{self.workload} {self.change} from {self.when}: {self.before} -> {self.after}"


@dataclass(frozen=True)
class Expiring:
    """A held commitment that ends inside the horizon, and what the plan runs in its place."""
    site: str
    instance: str
    commitment: str               # "aws-use1 p5.48xlarge, 1 node (1-year term)"
    until_month: int              # the first month it no longer covers
    replaced_by: str              # from that month: the pools, or "nothing: ..."


@dataclass(frozen=True)
class Changes:
    baseline_name: str
    baseline_start: str | None
    baseline_total_usd: float
    total_usd: float              # this plan's
    sunk_usd: float               # what this plan inherits (held), not in its total
    pools: tuple[PoolChange, ...]           # by site, instance, pricing
    pools_kept: int               # pools that run the same nodes every month
    placements: tuple[PlacementChange, ...]  # by workload
    workloads: tuple[tuple[str, str], ...]   # every workload of either plan and its change (CHANGE_ORDER)
    expiring: tuple[Expiring, ...]           # by month, then site and instance
    deployed_sites: tuple[str, ...]          # sites where the baseline runs a pool in this plan's months
    calendar: Calendar

    @property
    def delta_usd(self) -> float:
        return self.total_usd - self.baseline_total_usd

    @property
    def baseline_label(self) -> Md:
        """"`replay` (from 2027-01)" or "`replay`" undated, as Markdown (the baseline's name and
        start are read from its file: escaped)."""
        return Md(f"`{md_code(self.baseline_name)}`"
                  + (f" (from {md_text(self.baseline_start)})" if self.baseline_start else ""))

    def count(self, change: str) -> int:
        """How many workloads are of one change (CHANGE_ORDER), as `infra-compile diff` counts them."""
        return sum(1 for _, c in self.workloads if c == change)

    @property
    def workloads_kept(self) -> int:
        """The workloads that run as the baseline runs them: the unchanged ones."""
        return self.count("unchanged")

    @property
    def in_place(self) -> str:
        """The workloads that change but are not listed as placed elsewhere (resized where they
        run, a spec or start that changed), counted by change: '3 resized, 1 changed'."""
        listed = {p.workload for p in self.placements}
        rest = [c for n, c in self.workloads if c != "unchanged" and n not in listed]
        return ", ".join(f"{rest.count(c):,} {c}" for c in CHANGE_ORDER if rest.count(c))

    @property
    def kept_line(self) -> str:
        """The pools and workloads that do not change, counted in one line."""
        if not self.pools_kept and not self.workloads_kept:
            return "No pool or workload stays as the baseline runs it."
        pools = _plural(self.pools_kept, "pool") if self.pools_kept else "no pool"
        workloads = _plural(self.workloads_kept, "workload") if self.workloads_kept else "no workload"
        line = f"Kept as the baseline runs them: {pools} and {workloads}, deployed already (nothing to do for them)."
        if self.in_place:
            line += f" Changed where they run (this plan's files carry it): {self.in_place}."
        return line

    @property
    def changed_workloads(self) -> frozenset[str]:
        """The workloads of this plan that are new or moved (the report lists them first)."""
        return frozenset(p.workload for p in self.placements if p.change != "removed")

    def site_lines(self, site: str) -> tuple[str, ...]:
        """What changes at one site, one line each (its pools, then its workloads)."""
        out = [p.line for p in self.pools if p.site == site]
        out += [p.line for p in self.placements if site in p.sites]
        return tuple(out)

    def site_status(self, site: str) -> str:
        """new (the baseline runs nothing there), changed, or deployed (nothing there changes)."""
        if site not in self.deployed_sites:
            return "new"
        return "changed" if self.site_lines(site) else "deployed"


def _pools(c: Comparison) -> tuple[tuple[PoolChange, ...], int, tuple[str, ...]]:
    cal = c.b.calendar
    out = [PoolChange(p.site, p.instance, p.pricing, p.gpu, p.change, p.nodes_a[p.first], p.nodes_b[p.first],
                      p.first, cal.runs(p.differ), cal.name(p.first)) for p in c.pool_months if p.change]
    # a pool whose months all passed before this plan is history: not kept
    kept = sum(1 for p in c.pool_months if not p.change and any(p.nodes_a))
    deployed = sorted({p.site for p in c.pool_months if any(p.nodes_a)})
    return tuple(out), kept, tuple(deployed)


def _placements(c: Comparison) -> tuple[PlacementChange, ...]:
    return tuple(PlacementChange(p.workload, p.kind, p.change, ", ".join(p.where_a) or "-",
                                 ", ".join(p.where_b) or "-", p.first_month, p.sites,
                                 c.b.calendar.name(p.first_month))
                 for p in c.placings if p.change != "kept")


def _nodes_text(pools, m: int) -> str:
    """The pools' nodes in month m, and the terms that begin then: 'aws-use1 p5.48xlarge: 2 nodes
    (1-year term), 1 on a new term from then'."""
    parts = []
    for p in pools:
        n = p.monthly_nodes[m]
        text = f"{p.site} {p.instance}: {_plural(n, 'node')} ({PRICING_WORDS.get(p.pricing, p.pricing)})"
        bought = sum(r.nodes for r in p.reservations if r.start_month == m)
        if bought:
            text += ", on a new term from then" if bought >= n else f", {bought} on a new term from then"
        parts.append(text)
    return "; ".join(parts)


def _replacement(plan: Plan, h: Held) -> str:
    """What the plan runs in a held commitment's place from the month it ends: the pools at its
    site and instance, else the pools of its GPU anywhere, else where its load goes."""
    u = h.until_month
    running = [p for p in plan.pools if len(p.monthly_nodes) > u and p.monthly_nodes[u] > 0]
    here = [p for p in running if (p.site, p.instance) == (h.site, h.instance)]
    if here:
        return _nodes_text(here, u)
    gpu = next((p.gpu for p in plan.pools if p.instance == h.instance), None)
    same = [p for p in running if p.gpu == gpu]
    if same:
        return f"on {gpu} elsewhere: " + _nodes_text(same, u)
    if not h.monthly_used or not h.monthly_used[-1]:
        return "nothing: the plan runs no load on it by then"
    users = [w for w in plan.workloads for p in w.placements if (p.site, p.instance) == (h.site, h.instance)
             and any(len(x.monthly_nodes) > u - 1 and x.monthly_nodes[u - 1] for x in p.holdings)]
    goes = sorted({f"{p.site} {p.instance}" for w in users for p in w.placements
                   if any(len(x.monthly_nodes) > u and x.monthly_nodes[u] for x in p.holdings)})
    return f"nothing: its load moves to {', '.join(goes)}" if goes else "nothing: its load ends"


def expiring(plan: Plan) -> tuple[Expiring, ...]:
    """Every held commitment whose term ends inside the horizon, with its replacement."""
    out = [Expiring(h.site, h.instance,
                    f"{h.site} {h.instance}, {_plural(h.nodes, 'node')} ({PRICING_WORDS.get(h.term, h.term)})",
                    h.until_month, _replacement(plan, h))
           for h in plan.held if 0 < h.until_month < plan.horizon_months]
    return tuple(sorted(out, key=lambda e: (e.until_month, e.site, e.instance)))


def changes(plan: Plan, baseline: Plan) -> Changes:
    c = compare(baseline, plan, AS_DEPLOYED)
    pools, pools_kept, deployed = _pools(c)
    return Changes(baseline.spec_name, baseline.start, baseline.total_cost_usd, plan.total_cost_usd,
                   plan.sunk_usd, pools, pools_kept, _placements(c), tuple((w.name, w.change) for w in c.workloads),
                   expiring(plan), deployed, plan.calendar)
