"""A re-plan against its baseline, for people: what RUNBOOK.md and the report say changes.

    changes(plan, baseline) -> Changes

The baseline is the plan deployed or approved (`--baseline`): what it runs is there already, so
a re-plan names only what differs. Per pool (site, instance, pricing, the key plan.json and
`infra-compile diff` use): create (the baseline runs none of it), resize (it runs other nodes in
some month), release (this plan runs none of it), and how many pools keep what they run; the
workloads whose placement changes (added, moved to other sites or instances, removed); and each
held commitment that ends inside the horizon, with what the plan runs in its place from then.

Months are this plan's, named by its calendar. Two dated plans line up by calendar month (the
baseline's month k is this plan's month k - shift), as `infra-compile diff` lines them up. After
the baseline's last month its last month's fleet stands for what stays deployed: nobody tears a
fleet down because its plan's horizon ended, so a pool this plan keeps running is no create.

This module reads the two Plans only: compiler/diff.py compares plans for reviewers but imports
the renderer, so the render stage cannot import it back.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.plan import Calendar, Held, Plan, Pool, WorkloadPlan
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
    workloads_kept: int           # workloads of both plans placed where they were
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

    @property
    def kept_line(self) -> str:
        """The pools and workloads that do not change, counted in one line."""
        if not self.pools_kept and not self.workloads_kept:
            return "No pool or workload stays as the baseline runs it."
        pools = _plural(self.pools_kept, "pool") if self.pools_kept else "no pool"
        workloads = _plural(self.workloads_kept, "workload") if self.workloads_kept else "no workload"
        return f"Kept as the baseline runs them: {pools} and {workloads}, deployed already (nothing to do for them)."

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


def _series(p: Pool, horizon: int) -> tuple[int, ...]:
    """A pool's nodes month by month (a plan.json from before the monthly series: its nodes in
    every month)."""
    return tuple(p.monthly_nodes) if p.monthly_nodes else (p.nodes,) * horizon


def _aligned(p: Pool | None, base: Plan, shift: int, months: int) -> tuple[int, ...]:
    """The baseline pool's nodes in each of this plan's months; after its last month, the last
    month's (what stays deployed)."""
    if p is None:
        return (0,) * months
    s = _series(p, base.horizon_months)
    return tuple(s[min(m + shift, len(s) - 1)] if s else 0 for m in range(months))


def _shift(plan: Plan, base: Plan) -> int:
    """How many months after the baseline's month 0 this plan's falls (0 unless both are dated)."""
    if plan.start is None or base.start is None:
        return 0
    return max(0, base.calendar.index(plan.start))


def _pool_change(p: Pool, before: tuple[int, ...], after: tuple[int, ...], cal: Calendar) -> PoolChange:
    differ = [m for m in range(len(after)) if before[m] != after[m]]
    if not any(before):
        change, first = "create", next(m for m in differ if after[m])
    elif not any(after):
        change, first = "release", next(m for m in differ if before[m])
    else:
        change, first = "resize", differ[0]
    return PoolChange(p.site, p.instance, p.pricing, p.gpu, change, before[first], after[first], first,
                      cal.runs(differ), cal.name(first))


def _pools(plan: Plan, base: Plan, shift: int) -> tuple[tuple[PoolChange, ...], int, tuple[str, ...]]:
    H, cal = plan.horizon_months, plan.calendar
    now = {(p.site, p.instance, p.pricing): p for p in plan.pools}
    was = {(p.site, p.instance, p.pricing): p for p in base.pools}
    out, kept, deployed = [], 0, set()
    for key in sorted(now.keys() | was.keys()):
        before = _aligned(was.get(key), base, shift, H)
        after = _series(now[key], H)[:H] if key in now else (0,) * H
        after += (0,) * (H - len(after))
        if any(before):
            deployed.add(key[0])
        if before == after:
            kept += any(before)       # a pool whose months all passed before this plan is history
            continue
        out.append(_pool_change(now.get(key) or was[key], before, after, cal))
    return tuple(out), kept, tuple(sorted(deployed))


def _monthly(p) -> list:
    """A placement's month-by-month series: nodes per holding, and its replicas."""
    return [h.monthly_nodes for h in p.holdings] + ([p.monthly_replicas] if p.monthly_replicas else [])


def _active(w: WorkloadPlan, first: int) -> list:
    """Its placements that run in month `first` or later (a plan.json without monthly figures:
    all of them)."""
    def runs(p) -> bool:
        series = _monthly(p)
        if not series:
            return w.kind == "inference" or w.start_month >= first
        return any(n for s in series for n in s[first:])
    return [p for p in w.placements if runs(p)]


def _where(placements) -> str:
    return ", ".join(sorted({f"{p.site} {p.instance}" for p in placements})) or "-"


def _running(w: WorkloadPlan | None, m: int, last: bool = False) -> frozenset[tuple[str, str]]:
    """The (site, instance)s a workload holds nodes or replicas at in month m; `last`: a month
    after its plan's horizon reads as the last (the baseline's, what stays deployed)."""
    out = set()
    for p in w.placements if w is not None else ():
        if any(s and s[min(m, len(s) - 1) if last else m] for s in _monthly(p) if last or m < len(s)):
            out.add((p.site, p.instance))
    return frozenset(out)


def _first_change(now: WorkloadPlan | None, was: WorkloadPlan | None, shift: int, horizon: int) -> int:
    """This plan's first month in which the workload runs elsewhere than the baseline runs it
    then (a plan.json without monthly figures: its start)."""
    start = now.start_month if now is not None else max(0, was.start_month - shift)
    return next((m for m in range(horizon) if _running(now, m) != _running(was, m + shift, last=True)), start)


def _placements(plan: Plan, base: Plan, shift: int) -> tuple[tuple[PlacementChange, ...], int]:
    now = {w.name: w for w in plan.workloads}
    was = {w.name: w for w in base.workloads}
    out, kept = [], 0
    for name in sorted(now.keys() | was.keys()):
        b = _active(was[name], shift) if name in was else []
        a = list(now[name].placements) if name in now else []
        if name in now and name in was and _where(a) == _where(b):
            kept += 1
            continue
        if not a and not b:
            continue                  # in the baseline only, and over before this plan starts
        w = now.get(name) or was[name]
        change = "added" if not b else "removed" if not a else "moved"
        first = _first_change(now.get(name), was.get(name), shift, plan.horizon_months)
        out.append(PlacementChange(name, w.kind, change, _where(b), _where(a), first,
                                   tuple(sorted({p.site for p in a + b})), plan.calendar.name(first)))
    return tuple(out), kept


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
    shift = _shift(plan, baseline)
    pools, pools_kept, deployed = _pools(plan, baseline, shift)
    placements, workloads_kept = _placements(plan, baseline, shift)
    return Changes(baseline.spec_name, baseline.start, baseline.total_cost_usd, plan.total_cost_usd,
                   plan.sunk_usd, pools, pools_kept, placements, workloads_kept, expiring(plan), deployed,
                   plan.calendar)
