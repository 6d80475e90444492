"""What changed between two plans: `infra-compile diff PLAN_A PLAN_B`.

    diff_plans(a, b) -> PlanDiff        pure, frozen
    render_diff(d, console)             rich tables for people
    diff_to_json(d) -> dict             the same facts for CI (sorted, rounded: deterministic)

What is compared, and how the months line up, is compiler/compare.py's (compare, as planned):
this module words it. It says first what the input did, then what the plan did: the workloads
whose spec changed, or that were added or removed, each with its own cost in each plan; then
the ones the plan moved, each with what it saved (its own cost in A minus in B); then the
resized ones; then any other change (its start, its cost); unchanged workloads are counted, not
listed. Where a workload is placed is a table, one row per (site, instance, pricing) with the
nodes it holds there in each plan (most at once, and node-hours over the horizon), never one
joined string; for services, the replicas per site (peak, and the months that differ). A plan
that does not record its workloads' spec still compares, and the diff says so.

Every name and value printed to a terminal passes through diagnostics.printable (a plan.json
from outside may hold control or bidirectional characters) and is escaped as rich markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from compiler.compare import Change, Delta, PoolRef, PoolResize, WorkloadChange, compare
from compiler.diagnostics import printable
from compiler.plan import Plan


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
    workloads: tuple[WorkloadChange, ...]   # every workload of either plan, in CHANGE_ORDER, then by name
    plan_a: PlanInfo | None = None
    plan_b: PlanInfo | None = None

    @property
    def listed(self) -> tuple[WorkloadChange, ...]:
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


def _info(p: Plan) -> PlanInfo:
    return PlanInfo(p.spec_name, p.spec_sha256, p.catalog_version, p.horizon_months, p.solver.name,
                    p.solver.status, p.solver.gap, p.solver.best_bound_usd, p.start, round(p.sunk_usd, 2),
                    all(w.inputs is not None for w in p.workloads), round(p.solver.moves_usd, 2),
                    p.prices_as_of, p.prices_sha256)


def read_plans(*paths) -> tuple[Plan, ...]:
    """The plans in plan.json files from outside (compiler/plan_reader.py: a clear error, exit 2,
    naming the file, for anything that is not one). Plans from before some fields are read."""
    from compiler import plan_reader

    return tuple(plan_reader.read(p, complete=False) for p in paths)


def diff_plans(a: Plan, b: Plan) -> PlanDiff:
    c = compare(a, b)
    lines = sorted(zip(a.cost_breakdown_usd.lines, b.cost_breakdown_usd.lines), key=lambda ab: ab[0].category)
    breakdown = tuple(Delta(x.category, x.usd, y.usd) for x, y in lines if abs(x.usd - y.usd) >= 0.005)
    return PlanDiff(
        spec_a=a.spec_name, spec_b=b.spec_name, horizon_a=a.horizon_months, horizon_b=b.horizon_months,
        total=Delta("total_cost_usd", a.total_cost_usd, b.total_cost_usd), breakdown=breakdown,
        pools_added=c.pools_added, pools_removed=c.pools_removed, pools_resized=c.pools_resized,
        workloads=c.workloads,
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


def _workload_json(w: WorkloadChange) -> dict[str, Any]:
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


def note_text(w: WorkloadChange) -> str:
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

def shown(text: Any) -> str:
    """A name or value as the terminal shows it: control and bidirectional characters escaped
    (diagnostics.printable), rich's markup taken literally."""
    from rich.markup import escape

    return escape(printable(str(text)))


def _table(title: str, columns: tuple[str, ...], right: tuple[str, ...], rows) -> Any:
    """A rich table; every cell passes through shown()."""
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for col in columns:
        t.add_column(col, justify="right" if col in right else "left")
    for row in rows:
        t.add_row(*(shown(cell) for cell in row))
    return t


def render_diff(d: PlanDiff, console) -> None:
    title = shown(d.spec_a if d.spec_a == d.spec_b else f"{d.spec_a} -> {d.spec_b}")
    console.print(f"[bold]{title}[/bold]: total {_money(d.total.a)} -> {_money(d.total.b)} "
                  f"([bold]{_money(d.total.delta, True)}[/bold] {_pct(d.total)})")
    for side, info in (("A", d.plan_a), ("B", d.plan_b)):
        if info is not None:
            console.print(f"  {side}: {shown(info.status)}, gap {info.gap * 100:.2f}% ({shown(info.solver)}), "
                          f"catalog {shown(info.catalog_version)}"
                          + (f" (prices as of {shown(info.prices_as_of)})" if info.prices_as_of else "")
                          + f", spec sha256 {shown(info.spec_sha256[:12])}"
                          + (f", starts {shown(info.start)}" if info.start else ""), highlight=False)
    for caution in cautions(d):
        console.print(f"  [yellow]note: {shown(caution)}[/yellow]", highlight=False)
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
