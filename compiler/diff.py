"""What changed between two plans: `infra-compile diff PLAN_A PLAN_B`.

    diff_plans(a, b) -> PlanDiff        pure, frozen
    render_diff(d, console)             rich tables for people
    diff_to_json(d) -> dict             the same facts for CI (sorted, rounded: deterministic)

Pools are matched by (site, instance, pricing); workloads by name. The diff is read against a
re-plan (DESIGN.md section 6), so it says first what the input did, then what the plan did:
- a workload whose spec changed (plan.json `inputs`, one row per field that differs), or that
  was added or removed, comes first, with its own cost in each plan;
- then a workload whose spec did not change but which "moved": its GPU, GPU count (training)
  or main pricing changed, or it holds nodes in a pool or of a pricing it did not hold before
  or no longer holds; with what it saved (its own cost in A minus its own cost in B);
- then one "resized": replicas or nodes alone (for inference the GPU count is replicas x GPUs
  per replica, so it alone is a resize too); then any other change (its start, its cost);
- unchanged workloads are counted, not listed.
Where a workload is placed is a table, one row per (site, instance, pricing) with the nodes it
holds there in each plan (most at once, and node-hours over the horizon), never one joined
string; for services, the replicas per site (peak, and the months that differ).

Months are named as the plans name them (plan.Calendar): by index, or where a plan has a start,
as calendar months. Two dated plans are compared month by calendar month, so a re-plan that
starts later lines up with the plan before it (a job that starts in the same calendar month in
both did not move in time, whatever its month index), and replicas over the months both cover
(A's months before B's start are past, B's after A's horizon are new); a dated and an undated
plan are compared by index, over every month of either. A plan.json written before plans recorded their inputs still compares: its workloads'
spec changes are unknown, and the diff says so.
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


# The order the diff lists workloads in: what the input did first, then what the re-plan did.
CHANGE_ORDER = ("input changed", "added", "removed", "moved", "resized", "changed", "unchanged")
# plan fields whose change is a resize (more or fewer of the same), not a move
_SIZE_FIELDS = frozenset({"gpus", "nodes", "total_gpus", "replicas"})


@dataclass(frozen=True)
class WorkloadDiff:
    name: str
    status: str                   # added | removed | input changed | changed | unchanged
    moved: bool                   # gpu / gpus / where / main pricing changed
    changes: tuple[Change, ...]   # plan fields that differ, one per field (where it runs: holdings)
    estimate: tuple[Delta, ...]   # estimate keys whose value differs
    cost: Delta
    holdings: tuple[HoldingDelta, ...] = ()   # per pool and pricing, where they differ
    replicas: tuple[ReplicaDelta, ...] = ()   # inference: per site, where they differ
    inputs: tuple[Change, ...] = ()           # the spec's fields that differ ('traffic.peak_rps')
    inputs_known: bool = True     # both plans record the workload's spec (plan.json `inputs`)

    @property
    def change(self) -> str:
        """What the diff calls this workload's change (CHANGE_ORDER)."""
        if self.status != "changed":
            return self.status
        if self.moved:
            return "moved"
        if self.holdings or self.replicas or any(c.field in _SIZE_FIELDS for c in self.changes):
            return "resized"
        return "changed"

    @property
    def saving(self) -> float | None:
        """Its own cost in plan A minus in plan B (None where it is in one plan only)."""
        return None if self.cost.delta is None else -self.cost.delta


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
    inputs: bool = True           # every workload records its spec (plan.json from before: False)
    moves_usd: float = 0.0        # a re-plan: what its objective priced its moves at (policy.replan)
    prices_as_of: str = ""        # its sites' oldest price (compiler/catalog/freshness.py); "" unknown
    prices_sha256: str = ""       # digest of those prices; "" unknown


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
    workloads: tuple[WorkloadDiff, ...]   # every workload of either plan, in CHANGE_ORDER, then by name
    plan_a: PlanInfo | None = None
    plan_b: PlanInfo | None = None

    @property
    def listed(self) -> tuple[WorkloadDiff, ...]:
        """The workloads the diff shows: every one that changed, in CHANGE_ORDER."""
        return tuple(w for w in self.workloads if w.status != "unchanged")

    @property
    def unchanged(self) -> int:
        return len(self.workloads) - len(self.listed)

    @property
    def rise(self) -> float | None:
        """The total's relative change, B over A (None where A costs nothing)."""
        return self.total.delta / self.total.a if self.total.delta is not None and self.total.a else None

    @property
    def changed(self) -> bool:
        return bool(self.pools_added or self.pools_removed or self.pools_resized or self.breakdown
                    or any(w.status != "unchanged" for w in self.workloads)
                    or abs(self.total.delta or 0.0) >= 0.005)


MOVE_FIELDS = ("gpu", "gpus", "where")
_EPS = 1e-9


@dataclass(frozen=True)
class _Months:
    """How the diff names the two plans' months and lines them up (the module's docstring)."""
    frame: Calendar = Calendar()  # the calendar months are named by: A's, or B's where only B is dated
    offset: int = 0               # B's month j is A's month j + offset (0 unless both are dated)
    dated: bool = False           # both plans are dated: a month is compared as its calendar month
    first: str = ""               # both dated: the later start, the first month both plans cover

    def when(self, m: int, calendar: Calendar) -> int | str:
        """A start, month m of the plan with `calendar`, as the diff compares and writes it: its
        calendar month where both plans are dated; by index otherwise (named by the dated plan's
        calendar where one is). A start before the later plan's first month is that month: a
        service that runs from A's start runs from B's too when B starts later, and says so with
        start_month 0, which is no change."""
        if self.dated:
            return max(calendar.name(m), self.first)     # YYYY-MM: text order is time order
        return self.frame.name(m) if self.frame.dated else m


def _frame(a: Plan, b: Plan) -> _Months:
    ca, cb = a.calendar, b.calendar
    if ca.dated and cb.dated:
        return _Months(ca, ca.index(cb.start), True, max(ca.start, cb.start))
    return _Months(ca if ca.dated else cb)


def _pool_key(p: Pool) -> tuple[str, str, str]:
    return (p.site, p.instance, p.pricing)


def _ref(p: Pool) -> PoolRef:
    return PoolRef(p.site, p.instance, p.pricing, p.gpu, p.nodes, p.nodes * p.gpus_per_node, p.fabric)


def _pools(a: Plan, b: Plan, months: _Months = _Months()):
    pa = {_pool_key(p): p for p in a.pools}
    pb = {_pool_key(p): p for p in b.pools}
    added = tuple(_ref(pb[k]) for k in sorted(pb.keys() - pa.keys()))
    removed = tuple(_ref(pa[k]) for k in sorted(pa.keys() - pb.keys()))
    resized = []
    for k in sorted(pa.keys() & pb.keys()):
        x, y = pa[k], pb[k]
        changes = tuple(Change(f, getattr(x, f), getattr(y, f))
                        for f in ("gpu", "gpus_per_node", "nodes", "fabric") if getattr(x, f) != getattr(y, f))
        # a term's start is compared as the months are (a dated and an undated plan: by index)
        tx = _terms(x, a.calendar if months.dated else months.frame)
        ty = _terms(y, b.calendar if months.dated else months.frame)
        if tx != ty:
            changes += (Change("reservations", tx, ty),)
        if changes:
            resized.append(PoolResize(*k, gpu=y.gpu, nodes_a=x.nodes, nodes_b=y.nodes, changes=changes))
    return added, removed, tuple(resized)


def _terms(p: Pool, calendar: Calendar) -> str:
    """A reserved pool's terms: '4 from month 2, 4 from month 14' (dated: '4 from 2027-03, ...')."""
    return ", ".join(f"{r.nodes} from {calendar.month(r.start_month)}" for r in p.reservations)


def _held(w: WorkloadPlan | None) -> dict[tuple[str, str, str], tuple[int, float | None]]:
    """(site, instance, pricing) -> (most nodes held at once in a month, node-hours over the
    horizon). A placement without holdings (plan.json from before them) holds its nodes of its
    pricing, node-hours unknown. No workload (added or removed): nothing held."""
    nodes: dict[tuple[str, str, str], list[int]] = {}
    hours: dict[tuple[str, str, str], float | None] = {}

    def add(key, series, node_hours: float | None) -> None:
        add_into(nodes.setdefault(key, []), series)
        before = hours.get(key, 0.0)
        hours[key] = None if before is None or node_hours is None else before + node_hours

    for p in w.placements if w is not None else ():
        if not p.holdings:
            add((p.site, p.instance, p.pricing), [p.nodes], None)
        for h in p.holdings:
            add((p.site, p.instance, h.pricing), list(h.monthly_nodes), sum(h.monthly_node_hours))
    out = {k: (max(v, default=0), hours[k]) for k, v in nodes.items()}
    return {k: v for k, v in out.items() if v[0] or v[1]}


def _holdings(a: WorkloadPlan | None, b: WorkloadPlan | None) -> tuple[HoldingDelta, ...]:
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


def _replicas(a: WorkloadPlan, b: WorkloadPlan, months: _Months = _Months()) -> tuple[ReplicaDelta, ...]:
    """Per site, where the replicas differ: B's month j is A's month j + offset (_frame)."""
    if "inference" not in (a.kind, b.kind):
        return ()
    (ra, ma), (rb, mb) = _site_replicas(a), _site_replicas(b)
    offset = months.offset
    out = []
    for site in sorted(ra.keys() | rb.keys()):
        x, y = ra.get(site, [0]), rb.get(site, [0])
        if ma and mb:
            at = lambda s, m: s[m] if 0 <= m < len(s) else 0   # noqa: E731
            # dated plans: the months both cover (A's months before B's start are past, B's after
            # A's horizon are new); undated: every month of either
            lo, hi = ((max(0, offset), min(len(x), len(y) + offset)) if months.dated
                      else (min(0, offset), max(len(x), len(y) + offset)))
            differ = [m for m in range(lo, hi) if at(x, m) != at(y, m - offset)]
            if differ:
                out.append(ReplicaDelta(site, max(x), max(y), months.frame.runs(differ)))
        elif max(x) != max(y):
            out.append(ReplicaDelta(site, max(x), max(y), ""))
    return tuple(out)


def _shape(w: WorkloadPlan, calendar: Calendar, months: _Months) -> dict[str, Any]:
    """A workload's plan in comparable form, one value per field; where it runs is the holdings'
    table (_holdings), not a field here."""
    return {
        "gpu": w.gpu,
        "gpus": w.gpus,
        "nodes": sum(p.nodes for p in w.placements),
        "total_gpus": sum(p.gpus for p in w.placements),
        "replicas": sum(p.replicas for p in w.placements),
        "layout": f"tp{w.layout.tp}/pp{w.layout.pp}/dp{w.layout.dp}/ep{w.layout.ep}"
                  + (f"/cp{w.layout.cp}" if w.layout.cp > 1 else "")
                  + ("/full-recompute" if getattr(w.layout, "recompute", "selective") == "full" else ""),
        "orchestrator": w.orchestrator,
        "start": months.when(w.start_month, calendar),
    }


def _where(w: WorkloadPlan) -> tuple[tuple[str, str, str], ...]:
    """Each placement's (site, instance, main pricing): a workload whose set of these changes
    moved (compared, never shown: the holdings' table shows where it runs)."""
    return tuple(sorted((p.site, p.instance, p.pricing) for p in w.placements))


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A workload's inputs as dotted paths: {'traffic': {'peak_rps': 20}} -> {'traffic.peak_rps': 20}."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


# inputs that are months of the horizon: compared as calendar months where both plans are dated
_MONTH_INPUTS = frozenset({"window.start_month"})


def _inputs(a: WorkloadPlan, b: WorkloadPlan, cal_a: Calendar, cal_b: Calendar,
            months: _Months) -> tuple[Change, ...]:
    """The spec fields of the workload that differ, one Change per dotted path (A or B None:
    the field is unset on that side)."""
    fa, fb = _flat(a.inputs or {}), _flat(b.inputs or {})
    out = []
    for key in sorted(fa.keys() | fb.keys()):
        x, y = fa.get(key), fb.get(key)
        if key in _MONTH_INPUTS:
            x = None if x is None else months.when(x, cal_a)
            y = None if y is None else months.when(y, cal_b)
        if x != y:
            out.append(Change(key, x, y))
    return tuple(out)


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


def _workload(name: str, a: WorkloadPlan | None, b: WorkloadPlan | None, cal_a: Calendar = Calendar(),
              cal_b: Calendar = Calendar(), months: _Months = _Months()) -> WorkloadDiff:
    cost = Delta("cost_usd", a.cost_usd if a else None, b.cost_usd if b else None)
    if a is None or b is None:
        one = a or b
        assert one is not None
        # where it runs (or ran) is its placement rows: held in one plan only
        return WorkloadDiff(name, "added" if a is None else "removed", False, (), (), cost,
                            _holdings(a, b), inputs_known=one.inputs is not None)
    sa, sb = _shape(a, cal_a, months), _shape(b, cal_b, months)
    changes = tuple(Change(k, sa[k], sb[k]) for k in sa if sa[k] != sb[k])
    estimate = _estimate(a.estimate, b.estimate)
    holdings = _holdings(a, b)
    replicas = _replicas(a, b, months)
    known = a.inputs is not None and b.inputs is not None
    inputs = _inputs(a, b, cal_a, cal_b, months) if known else ()
    # An inference workload's gpus is its replicas times the GPUs of one replica: more
    # replicas on the same sites and instances is a resize, not a move.
    move_fields = MOVE_FIELDS if b.kind == "training" else tuple(f for f in MOVE_FIELDS if f != "gpus")
    shape_a, shape_b = {**sa, "where": _where(a)}, {**sb, "where": _where(b)}
    # nodes of a pricing (in a pool) held before and not now, or now and not before: a move
    moved = any(shape_a[f] != shape_b[f] for f in move_fields) or any(
        (h.nodes_a == 0) != (h.nodes_b == 0) for h in holdings)
    same = (not changes and not estimate and not holdings and not replicas and not moved
            and abs(a.cost_usd - b.cost_usd) < 0.005)
    status = "input changed" if inputs else "unchanged" if same else "changed"
    return WorkloadDiff(name, status, moved, changes, estimate, cost, holdings, replicas, inputs, known)


def _info(p: Plan) -> PlanInfo:
    return PlanInfo(p.spec_name, p.spec_sha256, p.catalog_version, p.horizon_months, p.solver.name,
                    p.solver.status, p.solver.gap, p.solver.best_bound_usd, p.start, round(p.sunk_usd, 2),
                    all(w.inputs is not None for w in p.workloads), round(p.solver.moves_usd, 2),
                    p.prices_as_of, p.prices_sha256)


def _order(w: WorkloadDiff) -> tuple[int, str]:
    return CHANGE_ORDER.index(w.change), w.name


def read_plans(*paths) -> tuple[Plan, ...]:
    """The plans in plan.json files from outside (compiler/plan_reader.py: a clear error, exit 2,
    naming the file, for anything that is not one). Plans from before some fields are read."""
    from compiler import plan_reader

    return tuple(plan_reader.read(p, complete=False) for p in paths)


def diff_plans(a: Plan, b: Plan) -> PlanDiff:
    months = _frame(a, b)
    added, removed, resized = _pools(a, b, months)
    wa = {w.name: w for w in a.workloads}
    wb = {w.name: w for w in b.workloads}
    workloads = tuple(sorted((_workload(n, wa.get(n), wb.get(n), a.calendar, b.calendar, months)
                              for n in wa.keys() | wb.keys()), key=_order))
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
        priced = _priced_apart(d.plan_a, d.plan_b)
        if priced:
            out.append(priced)
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
        unknown = [side for side, info in (("A", d.plan_a), ("B", d.plan_b)) if not info.inputs]
        if unknown:
            out.append(f"plan {' and plan '.join(unknown)} {'does' if len(unknown) == 1 else 'do'} not record "
                       f"{'its' if len(unknown) == 1 else 'their'} workloads' spec (a plan.json from before "
                       f"plans recorded it): which workloads the spec changed is unknown")
        if d.plan_b.moves_usd:
            out.append(f"plan B is a re-plan: its moves were priced at {_money(d.plan_b.moves_usd)} in all "
                       f"(policy.replan): a workload whose spec did not change moved only where that "
                       f"saved the plan more than its price, or where it could not stay")
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


def _priced_apart(a: PlanInfo, b: PlanInfo) -> str:
    """Whether the two plans were priced on different catalogs, in words ("" where not): another
    catalog version, or the same version with other prices (an overlay, a refresh). Prices are
    compared by their digest where both plans record one; a plan that does not compares by version."""
    def named(info: PlanInfo) -> str:
        return info.catalog_version + (f", prices as of {info.prices_as_of}" if info.prices_as_of else "")

    if a.catalog_version != b.catalog_version:
        return f"the plans were priced on different catalogs ({named(a)} and {named(b)})"
    if a.prices_sha256 and b.prices_sha256 and a.prices_sha256 != b.prices_sha256:
        return (f"the plans were priced on different catalogs: {a.catalog_version} with other prices "
                f"(an overlay or a refresh; plan A's as of {a.prices_as_of}, plan B's as of {b.prices_as_of})")
    return ""


def _pool_json(p: PoolRef) -> dict[str, Any]:
    return {"site": p.site, "instance": p.instance, "pricing": p.pricing, "gpu": p.gpu,
            "nodes": p.nodes, "gpus": p.gpus, "fabric": p.fabric}


def _info_json(spec: str, horizon: int, info: PlanInfo | None) -> dict[str, Any]:
    out: dict[str, Any] = {"spec": spec, "horizon_months": horizon}
    if info is not None:
        if info.prices_as_of:
            out.update(prices_as_of=info.prices_as_of, prices_sha256=info.prices_sha256)
        out.update({"spec_sha256": info.spec_sha256, "catalog_version": info.catalog_version,
                    "solver": info.solver, "status": info.status, "gap": _r(info.gap),
                    "best_bound_usd": _r(info.best_bound_usd), "inputs_recorded": info.inputs})
        if info.start is not None:
            out["start"] = info.start
        if info.sunk_usd:
            out["sunk_usd"] = _r(info.sunk_usd)
        if info.moves_usd:
            out["moves_usd"] = _r(info.moves_usd)
    return out


def _workload_json(w: WorkloadDiff) -> dict[str, Any]:
    out = {
        "name": w.name, "change": w.change, "status": w.status, "moved": w.moved,
        "inputs_known": w.inputs_known,
        "cost_usd": _delta_json(w.cost),
        "inputs": [_change_json(c) for c in w.inputs],
        "changes": [_change_json(c) for c in w.changes],
        "placements": [{"site": h.site, "instance": h.instance, "pricing": h.pricing,
                        "nodes_a": h.nodes_a, "nodes_b": h.nodes_b,
                        "node_hours_a": _r(h.node_hours_a), "node_hours_b": _r(h.node_hours_b)}
                       for h in w.holdings],
        "replicas": [{"site": r.site, "peak_a": r.peak_a, "peak_b": r.peak_b, "months": r.months}
                     for r in w.replicas],
        "estimate": {e.key: _delta_json(e) for e in w.estimate},
    }
    if w.change == "moved":
        out["saving_usd"] = _r(w.saving)      # its own cost in A minus in B
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
        # in the diff's order (CHANGE_ORDER, then by name); the unchanged ones are counted
        "workloads": [_workload_json(w) for w in d.listed],
        "unchanged_workloads": d.unchanged,
    }


# --- words, shared with the pull-request comment (diff_comment.py) -----------------------

def _money(v: float | None, signed: bool = False) -> str:
    from compiler.render.environment import money
    return "-" if v is None else money(v, signed)


def _pct(d: Delta) -> str:
    if d.delta is None or not d.a:
        return ""
    return f"{d.delta / d.a * 100:+.1f}%"


def value_text(v: Any) -> str:
    """A changed field's value as the diff writes it (text, JSON aside); '-': unset."""
    if isinstance(v, float):
        return f"{v:,.6g}" if abs(v) < 1e6 else f"{v:,.0f}"
    if isinstance(v, (list, tuple)):
        return ", ".join(value_text(x) for x in v)
    return "-" if v is None else str(v)


def note_text(w: WorkloadDiff) -> str:
    """What the workloads' table says beside a change: what a move saved (its own cost, A
    minus B), where the spec is unknown, and a cost that changed with nothing else (its share
    of nodes or storage it shares with others, as a rule)."""
    if w.change == "moved" and w.saving is not None:
        return (f"saved {_money(w.saving)}" if w.saving >= 0.005 else
                f"costs {_money(-w.saving)} more" if w.saving <= -0.005 else "saved nothing")
    if not w.inputs_known and w.status == "changed":
        return "spec unknown"
    if w.change == "changed" and not (w.changes or w.estimate or w.holdings or w.replicas):
        return "cost only"
    return ""


def hours_text(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


# --- rich ---------------------------------------------------------------------------------

def _table(title: str, columns: tuple[str, ...], right: tuple[str, ...], rows) -> Any:
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for col in columns:
        t.add_column(col, justify="right" if col in right else "left")
    for row in rows:
        t.add_row(*row)
    return t


def render_diff(d: PlanDiff, console) -> None:
    title = d.spec_a if d.spec_a == d.spec_b else f"{d.spec_a} -> {d.spec_b}"
    console.print(f"[bold]{title}[/bold]: total {_money(d.total.a)} -> {_money(d.total.b)} "
                  f"([bold]{_money(d.total.delta, True)}[/bold] {_pct(d.total)})")
    for side, info in (("A", d.plan_a), ("B", d.plan_b)):
        if info is not None:
            console.print(f"  {side}: {info.status}, gap {info.gap * 100:.2f}% ({info.solver}), "
                          f"catalog {info.catalog_version}"
                          + (f" (prices as of {info.prices_as_of})" if info.prices_as_of else "")
                          + f", spec sha256 {info.spec_sha256[:12]}"
                          + (f", starts {info.start}" if info.start else ""), highlight=False)
    for caution in cautions(d):
        console.print(f"  [yellow]note: {caution}[/yellow]", highlight=False)
    if not d.changed:
        console.print("The plans are the same.")
        return

    if d.breakdown:
        console.print(_table("Cost by category", ("category", "A", "B", "delta", ""), ("A", "B", "delta", ""),
                             [(x.key, _money(x.a), _money(x.b), _money(x.delta, True), _pct(x))
                              for x in d.breakdown]))

    if d.pools_added or d.pools_removed or d.pools_resized:
        rows = ([("added", p.site, p.instance, p.pricing, p.gpu, "-", str(p.nodes), p.fabric)
                 for p in d.pools_added]
                + [("removed", p.site, p.instance, p.pricing, p.gpu, str(p.nodes), "-", p.fabric)
                   for p in d.pools_removed]
                + [("resized" if r.nodes_delta else "changed", r.site, r.instance, r.pricing, r.gpu,
                    str(r.nodes_a), str(r.nodes_b),
                    "; ".join(f"{c.field} {c.a} -> {c.b}" for c in r.changes if c.field != "nodes"))
                   for r in d.pools_resized])
        console.print(_table("Pools", ("change", "site", "instance", "pricing", "GPU", "nodes A", "nodes B",
                                       "other"), ("nodes A", "nodes B"), rows))

    listed = d.listed
    if listed:
        console.print(_table("Workloads", ("workload", "change", "cost A", "cost B", "delta", "", "note"),
                             ("cost A", "cost B", "delta", ""),
                             [(w.name, w.change, _money(w.cost.a), _money(w.cost.b), _money(w.cost.delta, True),
                               _pct(w.cost), note_text(w)) for w in listed]))
        rows = [(w.name, c.field, value_text(c.a), value_text(c.b)) for w in listed for c in w.inputs]
        if rows:
            console.print(_table("Spec changes", ("workload", "field", "A", "B"), (), rows))
        rows = [(w.name, h.site, h.instance, h.pricing, str(h.nodes_a), str(h.nodes_b),
                 hours_text(h.node_hours_a), hours_text(h.node_hours_b)) for w in listed for h in w.holdings]
        if rows:
            console.print(_table("Placements: nodes held (most at once; node-hours over the horizon)",
                                 ("workload", "site", "instance", "pricing", "nodes A", "nodes B",
                                  "node-hours A", "node-hours B"),
                                 ("nodes A", "nodes B", "node-hours A", "node-hours B"), rows))
        rows = [(w.name, c.field, value_text(c.a), value_text(c.b)) for w in listed for c in w.changes]
        if rows:
            console.print(_table("Other changes", ("workload", "field", "A", "B"), ("A", "B"), rows))
        rows = [(w.name, r.site, str(r.peak_a), str(r.peak_b), r.months or "-") for w in listed for r in w.replicas]
        if rows:
            console.print(_table("Replicas per site (peak)", ("workload", "site", "A", "B", "months that differ"),
                                 ("A", "B"), rows))
        rows = [(w.name, e.key, value_text(e.a), value_text(e.b), "-" if e.delta is None else f"{e.delta:+,.6g}",
                 _pct(e)) for w in listed for e in w.estimate]
        if rows:
            console.print(_table("Estimates", ("workload", "metric", "A", "B", "delta", ""),
                                 ("A", "B", "delta", ""), rows))
    if d.unchanged:
        console.print(f"{d.unchanged} workload{'s' if d.unchanged != 1 else ''} unchanged.")
