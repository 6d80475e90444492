"""One comparison of two plans: `compare(a, b, rule) -> Comparison`, pure and frozen.

`infra-compile diff` (compiler/diff.py), a re-plan's runbook (compiler/render/changes.py) and its
report (compiler/report/replan.py) all read two plans through it: how their months line up, each
pool added, removed or resized and its nodes month by month, each workload's change (moved,
resized, added, removed) with where it holds nodes of which pricing, and where each one runs.

Months. Months are named as the plans name them (plan.Calendar): by index, or where a plan has a
start, as calendar months. Two dated plans are compared month by calendar month (align): B's
month j is A's month j + offset, so a re-plan that starts later lines up with the plan before it
(a job that starts in the same calendar month in both did not move in time, whatever its month
index). A's months before B's first month are past: neither a replica nor a pool is compared
there. A dated and an undated plan, or two undated ones, are compared by index.

Workloads are matched by name and classed in CHANGE_ORDER: what the input did first (a spec that
changed, per plan.json `inputs`; added; removed), then what the plan did: "moved" (its GPU, GPU
count (training) or main pricing changed, or it holds nodes in a pool or of a pricing it did not
hold before or no longer holds), "resized" (replicas or nodes alone: for inference the GPU count
is replicas x GPUs per replica, so it alone is a resize too), "changed" (its start, its cost),
"unchanged". Where it runs is compared per (site, instance, pricing), never as one joined
string; a service's replicas per site over the months both plans cover. A plan.json written
before plans recorded their inputs still compares: its workloads' spec changes are unknown.

The rule, the one thing the callers read differently: what A holds in B's months after A's
horizon.
  AS_PLANNED (the diff): nothing, each plan as it was planned; those months are B's alone.
  AS_DEPLOYED (a re-plan against its baseline): A's last month stands, since nobody tears a
    fleet down because its plan's horizon ended; a pool B keeps running is no create.
The rule bears on the month-by-month series (pools, and where each workload runs from B's first
month); the workloads' classes are the same under both, so the diff, the runbook and the report
of one re-plan count the same workloads moved, resized and unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from compiler.plan import PRICINGS, Calendar, EstimateFigures, Plan, Pool, WorkloadPlan, add_into, site_replicas

AS_PLANNED = "as planned"
AS_DEPLOYED = "as deployed"
RULES = (AS_PLANNED, AS_DEPLOYED)


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


# The order workloads are listed in: what the input did first, then what the re-plan did.
CHANGE_ORDER = ("input changed", "added", "removed", "moved", "resized", "changed", "unchanged")
# plan fields whose change is a resize (more or fewer of the same), not a move
_SIZE_FIELDS = frozenset({"gpus", "nodes", "total_gpus", "replicas"})


@dataclass(frozen=True)
class WorkloadChange:
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
        """What this workload's change is called (CHANGE_ORDER)."""
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


MOVE_FIELDS = ("gpu", "gpus", "where")
_EPS = 1e-9


@dataclass(frozen=True)
class Months:
    """How two plans' months are named and lined up (the module's docstring): B's month j is
    A's month j + offset."""
    frame: Calendar = Calendar()  # the calendar months are named by: A's, or B's where only B is dated
    offset: int = 0               # B's month j is A's month j + offset (0 unless both are dated)
    dated: bool = False           # both plans are dated: a month is compared as its calendar month
    first: str = ""               # both dated: the later start, the first month both plans cover

    def when(self, m: int, calendar: Calendar) -> int | str:
        """A start, month m of the plan with `calendar`, as it is compared and written: its
        calendar month where both plans are dated; by index otherwise (named by the dated plan's
        calendar where one is). A start before the later plan's first month is that month: a
        service that runs from A's start runs from B's too when B starts later, and says so with
        start_month 0, which is no change."""
        if self.dated:
            return max(calendar.name(m), self.first)     # YYYY-MM: text order is time order
        return self.frame.name(m) if self.frame.dated else m


def align(a: Plan, b: Plan) -> Months:
    """The one rule that lines up two plans' months: by calendar month where both are dated, by
    index otherwise (named by the dated plan's calendar where one is)."""
    ca, cb = a.calendar, b.calendar
    if ca.dated and cb.dated:
        return Months(ca, ca.index(cb.start), True, max(ca.start, cb.start))
    return Months(ca if ca.dated else cb)


def _pool_key(p: Pool) -> tuple[str, str, str]:
    return (p.site, p.instance, p.pricing)


def _ref(p: Pool) -> PoolRef:
    return PoolRef(p.site, p.instance, p.pricing, p.gpu, p.nodes, p.nodes * p.gpus_per_node, p.fabric)


def _pools(a: Plan, b: Plan, months: Months = Months()):
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


def _replicas(a: WorkloadPlan, b: WorkloadPlan, months: Months = Months()) -> tuple[ReplicaDelta, ...]:
    """Per site, where the replicas differ: B's month j is A's month j + offset (align)."""
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


def _shape(w: WorkloadPlan, calendar: Calendar, months: Months) -> dict[str, Any]:
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


# inputs that are months of the horizon: compared as calendar months where both plans are dated
_MONTH_INPUTS = frozenset({"window.start_month"})


def _inputs(a: WorkloadPlan, b: WorkloadPlan, cal_a: Calendar, cal_b: Calendar,
            months: Months) -> tuple[Change, ...]:
    """The spec fields of the workload that differ, one Change per dotted path (A or B None:
    the field is unset on that side)."""
    fa = {f.path: f.value for f in a.inputs.fields} if a.inputs is not None else {}
    fb = {f.path: f.value for f in b.inputs.fields} if b.inputs is not None else {}
    out = []
    for key in sorted(fa.keys() | fb.keys()):
        x, y = fa.get(key), fb.get(key)
        if key in _MONTH_INPUTS:
            x = None if x is None else months.when(x, cal_a)
            y = None if y is None else months.when(y, cal_b)
        if x != y:
            out.append(Change(key, x, y))
    return tuple(out)


def _estimate(a: EstimateFigures, b: EstimateFigures) -> tuple[Delta, ...]:
    """The estimate's figures that differ, by name (one stated on one side only: None on the other)."""
    fa = {f.name: float(f.value) for f in a.figures}
    fb = {f.name: float(f.value) for f in b.figures}
    out = []
    for key in sorted(fa.keys() | fb.keys()):
        x, y = fa.get(key), fb.get(key)
        if x is None or y is None or abs(x - y) > _EPS:
            out.append(Delta(key, x, y))
    return tuple(out)


def _workload(name: str, a: WorkloadPlan | None, b: WorkloadPlan | None, cal_a: Calendar = Calendar(),
              cal_b: Calendar = Calendar(), months: Months = Months()) -> WorkloadChange:
    cost = Delta("cost_usd", a.cost_usd if a else None, b.cost_usd if b else None)
    if a is None or b is None:
        one = a or b
        assert one is not None
        # where it runs (or ran) is its placement rows: held in one plan only
        return WorkloadChange(name, "added" if a is None else "removed", False, (), (), cost,
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
    return WorkloadChange(name, status, moved, changes, estimate, cost, holdings, replicas, inputs, known)


def _order(w: WorkloadChange) -> tuple[int, str]:
    return CHANGE_ORDER.index(w.change), w.name




# --- month by month, under the rule ---------------------------------------------------------

@dataclass(frozen=True)
class PoolMonths:
    """One pool (site, instance, pricing) in B's months: A's nodes there (under the rule) and B's."""
    site: str
    instance: str
    pricing: str
    gpu: str                      # B's pool's, or A's where B runs none of it
    nodes_a: tuple[int, ...]
    nodes_b: tuple[int, ...]

    @property
    def differ(self) -> tuple[int, ...]:
        """B's months in which the two differ."""
        return tuple(m for m in range(len(self.nodes_b)) if self.nodes_a[m] != self.nodes_b[m])

    @property
    def change(self) -> str:
        """create (A runs none of it in B's months), release (B runs none), resize, or "" (the
        same nodes every month)."""
        if not self.differ:
            return ""
        return "create" if not any(self.nodes_a) else "release" if not any(self.nodes_b) else "resize"

    @property
    def first(self) -> int:
        """B's first month that differs: a create's first month B runs nodes, a release's first
        month A ran nodes; -1 where none differs."""
        differ = self.differ
        if not differ:
            return -1
        if self.change == "create":
            return next(m for m in differ if self.nodes_b[m])
        if self.change == "release":
            return next(m for m in differ if self.nodes_a[m])
        return differ[0]


@dataclass(frozen=True)
class Placing:
    """Where a workload runs, by (site, instance), in A from B's first month and in B."""
    workload: str
    kind: str
    where_a: tuple[str, ...]      # "site instance", sorted: A's placements running from B's month 0
    where_b: tuple[str, ...]      # B's placements
    first_month: int              # B's first month it runs elsewhere than A runs it then
    both: bool                    # the workload is in both plans
    sites: tuple[str, ...] = ()   # the sites of either side

    @property
    def change(self) -> str:
        """kept (in both, on the same sites and instances), added (A runs it nowhere in B's
        months), removed (B runs it nowhere), or moved."""
        if self.both and self.where_a == self.where_b:
            return "kept"
        return "added" if not self.where_a else "removed" if not self.where_b else "moved"


@dataclass(frozen=True)
class Comparison:
    a: Plan
    b: Plan
    rule: str                     # AS_PLANNED | AS_DEPLOYED
    months: Months
    pools_added: tuple[PoolRef, ...]
    pools_removed: tuple[PoolRef, ...]
    pools_resized: tuple[PoolResize, ...]   # every field that differs, terms included
    pool_months: tuple[PoolMonths, ...]     # every pool of either plan, by site, instance, pricing
    workloads: tuple[WorkloadChange, ...]   # every workload of either plan, in CHANGE_ORDER, then by name
    placings: tuple[Placing, ...]           # by name; a workload of A only whose months all passed: none

    def count(self, change: str) -> int:
        """How many workloads are of one change (CHANGE_ORDER)."""
        return sum(1 for w in self.workloads if w.change == change)


def _series(p: Pool, horizon: int) -> tuple[int, ...]:
    """A pool's nodes month by month (a plan.json from before the monthly series: its nodes in
    every month)."""
    return tuple(p.monthly_nodes) if p.monthly_nodes else (p.nodes,) * horizon


def _at(series, m: int, rule: str) -> int:
    """A series' value in its month m: before its first month nothing; after its last, nothing
    as planned, its last month's as deployed."""
    if m < 0 or not series:
        return 0
    if m >= len(series):
        return series[-1] if rule == AS_DEPLOYED else 0
    return series[m]


def _pool_months(a: Plan, b: Plan, months: Months, rule: str) -> tuple[PoolMonths, ...]:
    H, offset = b.horizon_months, months.offset
    now = {_pool_key(p): p for p in b.pools}
    was = {_pool_key(p): p for p in a.pools}
    out = []
    for key in sorted(now.keys() | was.keys()):
        s = _series(was[key], a.horizon_months) if key in was else ()
        before = tuple(_at(s, m + offset, rule) for m in range(H))
        after = _series(now[key], H)[:H] if key in now else ()
        after += (0,) * (H - len(after))
        out.append(PoolMonths(*key, (now.get(key) or was[key]).gpu, before, after))
    return tuple(out)


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
        return any(n for s in series for n in s[max(0, first):])
    return [p for p in w.placements if runs(p)]


def _sites(placements) -> tuple[str, ...]:
    return tuple(sorted({f"{p.site} {p.instance}" for p in placements}))


def _running(w: WorkloadPlan | None, m: int, rule: str) -> frozenset[tuple[str, str]]:
    """The (site, instance)s a workload holds nodes or replicas at in its month m (_at)."""
    return frozenset((p.site, p.instance) for p in (w.placements if w is not None else ())
                     if any(_at(s, m, rule) for s in _monthly(p)))


def _first_change(now: WorkloadPlan | None, was: WorkloadPlan | None, offset: int, horizon: int, rule: str) -> int:
    """B's first month in which the workload runs elsewhere than A runs it then (a plan.json
    without monthly figures: its start)."""
    start = now.start_month if now is not None else max(0, was.start_month - offset)
    return next((m for m in range(horizon) if _running(now, m, AS_PLANNED) != _running(was, m + offset, rule)),
                start)


def _placings(a: Plan, b: Plan, months: Months, rule: str) -> tuple[Placing, ...]:
    now = {w.name: w for w in b.workloads}
    was = {w.name: w for w in a.workloads}
    out = []
    for name in sorted(now.keys() | was.keys()):
        before = _active(was[name], months.offset) if name in was else []
        after = list(now[name].placements) if name in now else []
        both = name in now and name in was
        if not before and not after and not both:
            continue                  # in A only, and over before B starts
        w = now.get(name) or was[name]
        where_a, where_b = _sites(before), _sites(after)
        first = 0 if both and where_a == where_b else _first_change(now.get(name), was.get(name), months.offset,
                                                                    b.horizon_months, rule)
        out.append(Placing(name, w.kind, where_a, where_b, first, both,
                           tuple(sorted({p.site for p in before + after}))))
    return tuple(out)


def compare(a: Plan, b: Plan, rule: str = AS_PLANNED) -> Comparison:
    """Plan B against plan A (a re-plan: A is its baseline) under `rule` (the module's docstring)."""
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    months = align(a, b)
    added, removed, resized = _pools(a, b, months)
    wa = {w.name: w for w in a.workloads}
    wb = {w.name: w for w in b.workloads}
    workloads = tuple(sorted((_workload(n, wa.get(n), wb.get(n), a.calendar, b.calendar, months)
                              for n in wa.keys() | wb.keys()), key=_order))
    return Comparison(a, b, rule, months, added, removed, resized, _pool_months(a, b, months, rule), workloads,
                      _placings(a, b, months, rule))
