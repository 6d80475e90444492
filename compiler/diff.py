"""What changed between two plans: `infra-compile diff PLAN_A PLAN_B`.

    diff_plans(a, b) -> PlanDiff        pure, frozen
    render_diff(d, console)             rich tables for people
    diff_to_json(d) -> dict             the same facts for CI (sorted, rounded: deterministic)

Pools are matched by (site, instance, pricing); workloads by name. A workload "moved" when
its site, instance, GPU, GPU count or pricing changed, or it holds nodes of a pricing (in a
pool) it did not hold before or no longer holds; replicas or nodes alone are a resize (for
inference the GPU count is replicas x GPUs per replica, so it alone is a resize too).
Per workload the diff also lists the nodes it holds per pool and pricing (most at once, and
node-hours over the horizon) where they differ, e.g. a job moving from reserved to on-demand
nodes, and for services the replicas per site (peak, and the months that differ).

Months are named as the plans name them (plan.Calendar): by index, or where a plan has a start,
as calendar months. Two dated plans are compared month by calendar month, so a re-plan that
starts later lines up with the plan before it; a dated and an undated plan are compared by index.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from compiler.plan import PRICINGS, Calendar, Plan, Pool, WorkloadPlan, add_into, site_replicas


@dataclass(frozen=True)
class Change:
    field: str
    a: Any
    b: Any


@dataclass(frozen=True)
class PoolRef:
    site: str
    instance: str
    pricing: str
    gpu: str
    nodes: int
    gpus: int
    fabric: str


@dataclass(frozen=True)
class PoolResize:
    site: str
    instance: str
    pricing: str
    gpu: str
    nodes_a: int
    nodes_b: int
    changes: tuple[Change, ...]   # every field that differs, nodes included

    @property
    def nodes_delta(self) -> int:
        return self.nodes_b - self.nodes_a


@dataclass(frozen=True)
class Delta:
    key: str
    a: float | None
    b: float | None

    @property
    def delta(self) -> float | None:
        return None if self.a is None or self.b is None else self.b - self.a


@dataclass(frozen=True)
class HoldingDelta:
    """The nodes a workload holds of one pricing in one pool, in plan A and plan B."""
    site: str
    instance: str
    pricing: str
    nodes_a: int                  # most nodes held at once in any month (0: none)
    nodes_b: int
    node_hours_a: float | None    # over the horizon (None: the plan gives no holdings)
    node_hours_b: float | None


@dataclass(frozen=True)
class ReplicaDelta:
    """A service's replicas at one site in plan A and plan B."""
    site: str
    peak_a: int
    peak_b: int
    months: str                   # the months whose replicas differ, as ranges: "2-11, 14" (dated:
                                  # "2027-03..2027-12, 2028-03")


@dataclass(frozen=True)
class WorkloadDiff:
    name: str
    status: str                   # added | removed | changed | unchanged
    moved: bool                   # site / instance / gpu / gpus / pricing changed
    changes: tuple[Change, ...]   # placement-level fields that differ
    estimate: tuple[Delta, ...]   # estimate keys whose value differs
    cost: Delta
    holdings: tuple[HoldingDelta, ...] = ()   # per pool and pricing, where they differ
    replicas: tuple[ReplicaDelta, ...] = ()   # inference: per site, where they differ


@dataclass(frozen=True)
class PlanInfo:
    """What a reviewer must know to trust one side of the comparison: which spec and catalog it
    was made from, and how close to its optimum the solver proved it (a difference smaller than
    the gaps may be the solver's, not the inputs')."""
    spec: str
    spec_sha256: str
    catalog_version: str
    horizon_months: int
    solver: str
    status: str                   # optimal | feasible ...
    gap: float                    # relative, proven: (plan - bound) / plan
    best_bound_usd: float
    start: str | None = None      # month 0 as YYYY-MM, where the plan is dated
    sunk_usd: float = 0.0         # commitments it inherits (held), paid whatever it does: not in its total


@dataclass(frozen=True)
class PlanDiff:
    spec_a: str
    spec_b: str
    horizon_a: int
    horizon_b: int
    total: Delta
    breakdown: tuple[Delta, ...]  # categories whose cost differs
    pools_added: tuple[PoolRef, ...]
    pools_removed: tuple[PoolRef, ...]
    pools_resized: tuple[PoolResize, ...]
    workloads: tuple[WorkloadDiff, ...]   # every workload of either plan, by name
    plan_a: PlanInfo | None = None
    plan_b: PlanInfo | None = None

    @property
    def rise(self) -> float | None:
        """The total's relative change, B over A (None where A costs nothing)."""
        return self.total.delta / self.total.a if self.total.delta is not None and self.total.a else None

    @property
    def changed(self) -> bool:
        return bool(self.pools_added or self.pools_removed or self.pools_resized or self.breakdown
                    or any(w.status != "unchanged" for w in self.workloads)
                    or abs(self.total.delta or 0.0) >= 0.005)


MOVE_FIELDS = ("site", "instance", "gpu", "gpus", "pricing")
_EPS = 1e-9


def _pool_key(p: Pool) -> tuple[str, str, str]:
    return (p.site, p.instance, p.pricing)


def _ref(p: Pool) -> PoolRef:
    return PoolRef(p.site, p.instance, p.pricing, p.gpu, p.nodes, p.nodes * p.gpus_per_node, p.fabric)


def _frame(a: Plan, b: Plan) -> tuple[Calendar, int]:
    """The calendar the diff names months by (A's, or B's where only B is dated), and how many
    months after A's month 0 B's month 0 falls (0 unless both are dated)."""
    ca, cb = a.calendar, b.calendar
    if ca.dated and cb.dated:
        return ca, ca.index(cb.start)
    return (ca if ca.dated else cb), 0


def _pools(a: Plan, b: Plan):
    pa = {_pool_key(p): p for p in a.pools}
    pb = {_pool_key(p): p for p in b.pools}
    added = tuple(_ref(pb[k]) for k in sorted(pb.keys() - pa.keys()))
    removed = tuple(_ref(pa[k]) for k in sorted(pa.keys() - pb.keys()))
    resized = []
    for k in sorted(pa.keys() & pb.keys()):
        x, y = pa[k], pb[k]
        changes = tuple(Change(f, getattr(x, f), getattr(y, f))
                        for f in ("gpu", "gpus_per_node", "nodes", "fabric") if getattr(x, f) != getattr(y, f))
        tx, ty = _terms(x, a.calendar), _terms(y, b.calendar)
        if tx != ty:
            changes += (Change("reservations", tx, ty),)
        if changes:
            resized.append(PoolResize(*k, gpu=y.gpu, nodes_a=x.nodes, nodes_b=y.nodes, changes=changes))
    return added, removed, tuple(resized)


def _terms(p: Pool, calendar: Calendar) -> str:
    """A reserved pool's terms: '4 from month 2, 4 from month 14' (dated: '4 from 2027-03, ...')."""
    return ", ".join(f"{r.nodes} from {calendar.month(r.start_month)}" for r in p.reservations)


def _held(w: WorkloadPlan) -> dict[tuple[str, str, str], tuple[int, float | None]]:
    """(site, instance, pricing) -> (most nodes held at once in a month, node-hours over the
    horizon). A placement without holdings (plan.json from before them) holds its nodes of its
    pricing, node-hours unknown."""
    nodes: dict[tuple[str, str, str], list[int]] = {}
    hours: dict[tuple[str, str, str], float | None] = {}

    def add(key, series, node_hours: float | None) -> None:
        add_into(nodes.setdefault(key, []), series)
        before = hours.get(key, 0.0)
        hours[key] = None if before is None or node_hours is None else before + node_hours

    for p in w.placements:
        if not p.holdings:
            add((p.site, p.instance, p.pricing), [p.nodes], None)
        for h in p.holdings:
            add((p.site, p.instance, h.pricing), list(h.monthly_nodes), sum(h.monthly_node_hours))
    out = {k: (max(v, default=0), hours[k]) for k, v in nodes.items()}
    return {k: v for k, v in out.items() if v[0] or v[1]}


def _holdings(a: WorkloadPlan, b: WorkloadPlan) -> tuple[HoldingDelta, ...]:
    ha, hb = _held(a), _held(b)
    order = {p: i for i, p in enumerate(PRICINGS)}
    out = []
    for key in sorted(ha.keys() | hb.keys(), key=lambda k: (k[0], k[1], order.get(k[2], 99), k[2])):
        (na, xa), (nb, xb) = ha.get(key, (0, 0.0)), hb.get(key, (0, 0.0))
        same_hours = xa is None or xb is None or abs(xa - xb) < 0.005
        if na != nb or not same_hours:
            out.append(HoldingDelta(*key, na, nb, xa, xb))
    return tuple(out)


def _site_replicas(w: WorkloadPlan) -> tuple[dict[str, list[int]], bool]:
    """Replicas per site, month by month; False when the plan gives no months (plan.json from
    before them: each placement's peak only)."""
    months = all(p.monthly_replicas for p in w.placements)
    return site_replicas(w, monthly=months), months


def _replicas(a: WorkloadPlan, b: WorkloadPlan, frame: Calendar = Calendar(),
              offset: int = 0) -> tuple[ReplicaDelta, ...]:
    """Per site, where the replicas differ: B's month j is A's month j + offset (_frame)."""
    if "inference" not in (a.kind, b.kind):
        return ()
    (ra, ma), (rb, mb) = _site_replicas(a), _site_replicas(b)
    out = []
    for site in sorted(ra.keys() | rb.keys()):
        x, y = ra.get(site, [0]), rb.get(site, [0])
        if ma and mb:
            at = lambda s, m: s[m] if 0 <= m < len(s) else 0   # noqa: E731
            differ = [m for m in range(min(0, offset), max(len(x), len(y) + offset))
                      if at(x, m) != at(y, m - offset)]
            if differ:
                out.append(ReplicaDelta(site, max(x), max(y), frame.runs(differ)))
        elif max(x) != max(y):
            out.append(ReplicaDelta(site, max(x), max(y), ""))
    return tuple(out)


def _shape(w: WorkloadPlan) -> dict[str, Any]:
    """A workload's placement in comparable form: multi-site values joined in site order."""
    ps = sorted(w.placements, key=lambda p: (p.site, p.instance, p.pricing))
    return {
        "site": "+".join(p.site for p in ps),
        "instance": "+".join(p.instance for p in ps),
        "gpu": w.gpu,
        "gpus": w.gpus,
        "pricing": "+".join(p.pricing for p in ps),
        "nodes": sum(p.nodes for p in ps),
        "total_gpus": sum(p.gpus for p in ps),
        "replicas": sum(p.replicas for p in ps),
        "layout": f"tp{w.layout.tp}/pp{w.layout.pp}/dp{w.layout.dp}/ep{w.layout.ep}"
                  + (f"/cp{w.layout.cp}" if w.layout.cp > 1 else ""),
        "orchestrator": w.orchestrator,
    }


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _estimate(a: dict[str, Any], b: dict[str, Any]) -> tuple[Delta, ...]:
    out = []
    for key in sorted(set(a) | set(b)):
        x, y = _num(a.get(key)), _num(b.get(key))
        if x is None and y is None:
            continue
        if x is None or y is None or abs(x - y) > _EPS:
            out.append(Delta(key, x, y))
    return tuple(out)


def _workload(name: str, a: WorkloadPlan | None, b: WorkloadPlan | None,
              frame: Calendar = Calendar(), offset: int = 0) -> WorkloadDiff:
    if a is None or b is None:
        w = a or b
        assert w is not None
        return WorkloadDiff(name, "added" if a is None else "removed", False, (), (),
                            Delta("cost_usd", a.cost_usd if a else None, b.cost_usd if b else None))
    sa, sb = _shape(a), _shape(b)
    changes = tuple(Change(k, sa[k], sb[k]) for k in sa if sa[k] != sb[k])
    estimate = _estimate(a.estimate, b.estimate)
    cost = Delta("cost_usd", a.cost_usd, b.cost_usd)
    # An inference workload's gpus is its replicas times the GPUs of one replica: more
    # replicas on the same sites and instances is a resize, not a move.
    move_fields = MOVE_FIELDS if b.kind == "training" else tuple(f for f in MOVE_FIELDS if f != "gpus")
    holdings = _holdings(a, b)
    replicas = _replicas(a, b, frame, offset)
    # nodes of a pricing (in a pool) held before and not now, or now and not before: a move
    moved = any(c.field in move_fields for c in changes) or any(
        (h.nodes_a == 0) != (h.nodes_b == 0) for h in holdings)
    same = (not changes and not estimate and not holdings and not replicas
            and abs(a.cost_usd - b.cost_usd) < 0.005)
    return WorkloadDiff(name, "unchanged" if same else "changed", moved, changes, estimate, cost,
                        holdings, replicas)


def _info(p: Plan) -> PlanInfo:
    return PlanInfo(p.spec_name, p.spec_sha256, p.catalog_version, p.horizon_months, p.solver.name,
                    p.solver.status, p.solver.gap, p.solver.best_bound_usd, p.start, round(p.sunk_usd, 2))


def diff_plans(a: Plan, b: Plan) -> PlanDiff:
    added, removed, resized = _pools(a, b)
    wa = {w.name: w for w in a.workloads}
    wb = {w.name: w for w in b.workloads}
    frame, offset = _frame(a, b)
    workloads = tuple(_workload(n, wa.get(n), wb.get(n), frame, offset) for n in sorted(wa.keys() | wb.keys()))
    ca, cb = a.cost_breakdown_usd, b.cost_breakdown_usd
    breakdown = tuple(Delta(k, ca.get(k), cb.get(k)) for k in sorted(ca.keys() | cb.keys())
                      if abs((ca.get(k) or 0.0) - (cb.get(k) or 0.0)) >= 0.005 or (k in ca) != (k in cb))
    return PlanDiff(
        spec_a=a.spec_name, spec_b=b.spec_name, horizon_a=a.horizon_months, horizon_b=b.horizon_months,
        total=Delta("total_cost_usd", a.total_cost_usd, b.total_cost_usd), breakdown=breakdown,
        pools_added=added, pools_removed=removed, pools_resized=resized, workloads=workloads,
        plan_a=_info(a), plan_b=_info(b))


def cautions(d: PlanDiff) -> tuple[str, ...]:
    """What a reviewer should know before reading the difference as the inputs': a difference
    within the plans' proven gaps may be the solver's search, and plans priced on different
    catalogs differ by the catalog too."""
    out = []
    if d.plan_a is not None and d.plan_b is not None:
        slack = d.plan_a.gap * abs(d.total.a or 0.0) + d.plan_b.gap * abs(d.total.b or 0.0)
        delta = abs(d.total.delta or 0.0)
        if 0.005 <= delta <= slack:
            out.append(f"the totals differ by less than the two plans' proven gaps allow "
                       f"({_money(slack)}): part or all of the difference may be the solver's")
        if d.plan_a.catalog_version != d.plan_b.catalog_version:
            out.append(f"the plans were priced on different catalogs ({d.plan_a.catalog_version} "
                       f"and {d.plan_b.catalog_version})")
        if d.plan_a.sunk_usd or d.plan_b.sunk_usd:
            out.append(f"commitments bought before a plan are sunk, not in its total: plan A inherits "
                       f"{_money(d.plan_a.sunk_usd)}, plan B {_money(d.plan_b.sunk_usd)}")
        starts = (d.plan_a.start, d.plan_b.start)
        if None not in starts and starts[0] != starts[1]:
            out.append(f"plan A starts in {starts[0]} and plan B in {starts[1]}: their months are "
                       f"compared as calendar months")
        elif starts.count(None) == 1:
            dated, other = ("A", "B") if starts[0] else ("B", "A")
            out.append(f"only plan {dated} is dated (start {starts[0] or starts[1]}): months are "
                       f"compared by index, as if plan {other} started then too")
    return tuple(out)


def percent_text(d: PlanDiff) -> str:
    """The total's change for a message: '+$4,132,411, +44.9%'."""
    pct = _pct(d.total)
    return _money(d.total.delta, True) + (f", {pct}" if pct else "")


# --- JSON ---------------------------------------------------------------------------------

def _r(v: Any) -> Any:
    """Rounded like plan.json: 6 decimals, 2 from a million up (money)."""
    if isinstance(v, float):
        return round(v, 6) if abs(v) < 1e6 else round(v, 2)
    return v


def _delta_json(d: Delta) -> dict[str, Any]:
    pct = (d.delta / d.a) if d.delta is not None and d.a else None
    return {"a": _r(d.a), "b": _r(d.b), "delta": _r(d.delta), "delta_ratio": _r(pct)}


def _change_json(c: Change) -> dict[str, Any]:
    return {"field": c.field, "a": _r(c.a), "b": _r(c.b)}


def _pool_json(p: PoolRef) -> dict[str, Any]:
    return {"site": p.site, "instance": p.instance, "pricing": p.pricing, "gpu": p.gpu,
            "nodes": p.nodes, "gpus": p.gpus, "fabric": p.fabric}


def _info_json(spec: str, horizon: int, info: PlanInfo | None) -> dict[str, Any]:
    out: dict[str, Any] = {"spec": spec, "horizon_months": horizon}
    if info is not None:
        out.update({"spec_sha256": info.spec_sha256, "catalog_version": info.catalog_version,
                    "solver": info.solver, "status": info.status, "gap": _r(info.gap),
                    "best_bound_usd": _r(info.best_bound_usd)})
        if info.start is not None:
            out["start"] = info.start
        if info.sunk_usd:
            out["sunk_usd"] = _r(info.sunk_usd)
    return out


def diff_to_json(d: PlanDiff) -> dict[str, Any]:
    return {
        "plans": {"a": _info_json(d.spec_a, d.horizon_a, d.plan_a),
                  "b": _info_json(d.spec_b, d.horizon_b, d.plan_b)},
        "changed": d.changed,
        "cautions": list(cautions(d)),
        "total_cost_usd": _delta_json(d.total),
        "cost_breakdown_usd": {x.key: _delta_json(x) for x in d.breakdown},
        "pools": {
            "added": [_pool_json(p) for p in d.pools_added],
            "removed": [_pool_json(p) for p in d.pools_removed],
            "resized": [{"site": p.site, "instance": p.instance, "pricing": p.pricing, "gpu": p.gpu,
                         "nodes_a": p.nodes_a, "nodes_b": p.nodes_b, "nodes_delta": p.nodes_delta,
                         "changes": [_change_json(c) for c in p.changes]} for p in d.pools_resized],
        },
        "workloads": [{
            "name": w.name, "status": w.status, "moved": w.moved,
            "changes": [_change_json(c) for c in w.changes],
            "estimate": {e.key: _delta_json(e) for e in w.estimate},
            "cost_usd": _delta_json(w.cost),
            "holdings": [{"site": h.site, "instance": h.instance, "pricing": h.pricing,
                          "nodes_a": h.nodes_a, "nodes_b": h.nodes_b,
                          "node_hours_a": _r(h.node_hours_a), "node_hours_b": _r(h.node_hours_b)}
                         for h in w.holdings],
            "replicas": [{"site": r.site, "peak_a": r.peak_a, "peak_b": r.peak_b, "months": r.months}
                         for r in w.replicas],
        } for w in d.workloads],
    }


# --- rich ---------------------------------------------------------------------------------

def _money(v: float | None, signed: bool = False) -> str:
    from compiler.render.environment import money
    return "-" if v is None else money(v, signed)


def _pct(d: Delta) -> str:
    if d.delta is None or not d.a:
        return ""
    return f"{d.delta / d.a * 100:+.1f}%"


def value_text(v: Any) -> str:
    """A changed field's value as the diff writes it (text, JSON aside)."""
    if isinstance(v, float):
        return f"{v:,.6g}" if abs(v) < 1e6 else f"{v:,.0f}"
    return "-" if v is None else str(v)


def changes_text(changes: tuple[Change, ...]) -> str:
    """A workload's changed fields in one line: 'replicas 32 -> 64; site a -> b'."""
    return "; ".join(f"{c.field} {value_text(c.a)} -> {value_text(c.b)}" for c in changes)


def _hours(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def render_diff(d: PlanDiff, console) -> None:
    from rich.table import Table

    title = d.spec_a if d.spec_a == d.spec_b else f"{d.spec_a} -> {d.spec_b}"
    console.print(f"[bold]{title}[/bold]: total {_money(d.total.a)} -> {_money(d.total.b)} "
                  f"([bold]{_money(d.total.delta, True)}[/bold] {_pct(d.total)})")
    for side, info in (("A", d.plan_a), ("B", d.plan_b)):
        if info is not None:
            console.print(f"  {side}: {info.status}, gap {info.gap * 100:.2f}% ({info.solver}), "
                          f"catalog {info.catalog_version}, spec sha256 {info.spec_sha256[:12]}"
                          + (f", starts {info.start}" if info.start else ""), highlight=False)
    for caution in cautions(d):
        console.print(f"  [yellow]note: {caution}[/yellow]", highlight=False)
    if not d.changed:
        console.print("The plans are the same.")
        return

    if d.breakdown:
        t = Table(title="Cost by category", title_justify="left")
        for col in ("category", "A", "B", "delta", ""):
            t.add_column(col, justify="left" if col == "category" else "right")
        for x in d.breakdown:
            t.add_row(x.key, _money(x.a), _money(x.b), _money(x.delta, True), _pct(x))
        console.print(t)

    if d.pools_added or d.pools_removed or d.pools_resized:
        t = Table(title="Pools", title_justify="left")
        for col in ("change", "site", "instance", "pricing", "GPU", "nodes A", "nodes B", "other"):
            t.add_column(col, justify="right" if col.startswith("nodes") else "left")
        for p in d.pools_added:
            t.add_row("added", p.site, p.instance, p.pricing, p.gpu, "-", str(p.nodes), p.fabric)
        for p in d.pools_removed:
            t.add_row("removed", p.site, p.instance, p.pricing, p.gpu, str(p.nodes), "-", p.fabric)
        for r in d.pools_resized:
            other = ", ".join(f"{c.field} {c.a} -> {c.b}" for c in r.changes if c.field != "nodes")
            t.add_row("resized" if r.nodes_delta else "changed", r.site, r.instance, r.pricing, r.gpu,
                      str(r.nodes_a), str(r.nodes_b), other)
        console.print(t)

    changed = [w for w in d.workloads if w.status != "unchanged"]
    if changed:
        t = Table(title="Workloads", title_justify="left")
        for col in ("workload", "status", "what changed", "cost A", "cost B", "delta", ""):
            t.add_column(col, justify="right" if col.startswith("cost") or col in ("delta", "") else "left")
        for w in changed:
            what = changes_text(w.changes)
            status = "moved" if w.moved else w.status
            t.add_row(w.name, status, what or "-", _money(w.cost.a), _money(w.cost.b),
                      _money(w.cost.delta, True), _pct(w.cost))
        console.print(t)

        rows = [(w.name, h) for w in changed for h in w.holdings]
        if rows:
            t = Table(title="Nodes held, by pricing (most at once; node-hours over the horizon)",
                      title_justify="left")
            for col in ("workload", "where", "pricing", "nodes A", "nodes B", "node-hours A", "node-hours B"):
                t.add_column(col, justify="left" if col in ("workload", "where", "pricing") else "right")
            for name, h in rows:
                t.add_row(name, f"{h.site} {h.instance}", h.pricing, str(h.nodes_a), str(h.nodes_b),
                          _hours(h.node_hours_a), _hours(h.node_hours_b))
            console.print(t)

        rows = [(w.name, r) for w in changed for r in w.replicas]
        if rows:
            t = Table(title="Replicas per site (peak)", title_justify="left")
            for col in ("workload", "site", "A", "B", "months that differ"):
                t.add_column(col, justify="right" if col in ("A", "B") else "left")
            for name, r in rows:
                t.add_row(name, r.site, str(r.peak_a), str(r.peak_b), r.months or "-")
            console.print(t)

        rows = [(w.name, e) for w in changed for e in w.estimate]
        if rows:
            t = Table(title="Estimates", title_justify="left")
            for col in ("workload", "metric", "A", "B", "delta", ""):
                t.add_column(col, justify="left" if col in ("workload", "metric") else "right")
            for name, e in rows:
                t.add_row(name, e.key, value_text(e.a), value_text(e.b),
                          "-" if e.delta is None else f"{e.delta:+,.6g}", _pct(e))
            console.print(t)
    unchanged = len(d.workloads) - len(changed)
    if unchanged:
        console.print(f"{unchanged} workload{'s' if unchanged != 1 else ''} unchanged.")
