"""`infra-compile diff --format markdown`: the cost diff as a pull-request comment.

    comment_view(d, threshold) -> Comment     pure, frozen: every cell already worded
    render_comment(d, threshold) -> str       templates/diff/comment.md.j2

The comment answers what a reviewer asks of a spec change, in this order: how much the total
moves (and whether it crossed the team's threshold), whether the two plans can be compared (each
one's solver status, proven gap and catalog), which workloads changed, in the diff's order (the
ones whose spec changed, or added or removed, first; then the ones the re-plan moved, each with
what it saved; then the resized ones), the spec fields that changed, where each workload holds
nodes (one row per site, instance and pricing), its other changed fields, a service's replicas
per site, and which pools are added, removed or resized. Every row is one field: nothing is
joined into one cell. `threshold` is the largest rise of the total the team accepts, as a ratio
(0.05: 5%); the CLI exits non-zero past it (cli.EXIT_COST_RISE).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from compiler.diff import Delta, PlanDiff, PlanInfo, cautions, hours_text, note_text, value_text
from compiler.render.environment import money, percent, render_template


@dataclass(frozen=True)
class Row:
    name: str
    a: str
    b: str
    delta: str
    ratio: str


@dataclass(frozen=True)
class Side:
    label: str            # base | head
    spec: str
    status: str
    gap: str
    solver: str
    catalog: str
    sha: str              # the spec's sha256, first 12 digits


@dataclass(frozen=True)
class WorkloadRow:
    name: str
    change: str           # input changed | added | removed | moved | resized | changed
    a: str
    b: str
    delta: str
    ratio: str
    note: str             # a move: what it saved (its own cost, base minus head)


@dataclass(frozen=True)
class FieldRow:
    """One field of one workload that differs: a spec input, or a field of its plan."""
    workload: str
    field: str
    a: str
    b: str


@dataclass(frozen=True)
class PlacementRow:
    """The nodes one workload holds of one pricing in one pool, in each plan."""
    workload: str
    site: str
    instance: str
    pricing: str
    nodes_a: str
    nodes_b: str
    node_hours_a: str
    node_hours_b: str


@dataclass(frozen=True)
class ReplicaRow:
    """A service's replicas at one site in each plan (peak), and the months they differ."""
    workload: str
    site: str
    a: str
    b: str
    months: str


@dataclass(frozen=True)
class PoolRow:
    change: str           # added | removed | resized | changed
    site: str
    instance: str
    pricing: str
    gpu: str
    nodes_a: str
    nodes_b: str


@dataclass(frozen=True)
class Comment:
    title: str
    headline: str         # the total's change: "+$4,132,411 (+44.9%)", or "unchanged"
    total: Row
    categories: tuple[Row, ...]
    sides: tuple[Side, ...]
    cautions: tuple[str, ...]
    verdict: str          # the threshold's verdict, "" without one
    over: bool            # the rise exceeds the threshold
    workloads: tuple[WorkloadRow, ...]
    inputs: tuple[FieldRow, ...]            # spec fields that changed
    placements: tuple[PlacementRow, ...]
    others: tuple[FieldRow, ...]            # plan fields that changed (start, replicas, layout ...)
    replicas: tuple[ReplicaRow, ...]
    unchanged: int        # workloads with no change
    pools: tuple[PoolRow, ...]
    same: bool            # nothing differs


def over_threshold(d: PlanDiff, threshold: float | None) -> bool:
    """Whether the total rose by more than `threshold` (a ratio) from plan A to plan B; a plan A
    that costs nothing rises past any threshold once B costs anything."""
    if threshold is None or d.total.delta is None:
        return False
    if not (math.isfinite(d.total.a) and math.isfinite(d.total.b)):
        return True       # a total that is no number cannot pass a gate (the reader refuses one)
    if not d.total.a:
        return d.total.delta > 0.005
    return d.total.delta / d.total.a > threshold + 1e-12


def _row(name: str, x: Delta) -> Row:
    return Row(name, "-" if x.a is None else money(x.a), "-" if x.b is None else money(x.b),
               "-" if x.delta is None else money(x.delta, signed=True),
               percent(x.delta / x.a, signed=True) if x.delta is not None and x.a else "")


def _side(label: str, info: PlanInfo | None, spec: str) -> Side:
    if info is None:
        return Side(label, spec, "-", "-", "-", "-", "-")
    return Side(label, info.spec, info.status, percent(info.gap, digits=2), info.solver,
                info.catalog_version + (f" (prices as of {info.prices_as_of})" if info.prices_as_of else ""),
                info.spec_sha256[:12])


def comment_view(d: PlanDiff, threshold: float | None = None) -> Comment:
    title = d.spec_a if d.spec_a == d.spec_b else f"{d.spec_a} -> {d.spec_b}"
    over = over_threshold(d, threshold)
    verdict = ""
    if threshold is not None:
        rise = "" if d.rise is None else f" ({percent(d.rise, signed=True)})"
        verdict = (f"The total rises more than the {percent(threshold)} allowed{rise}."
                   if over else f"Within the {percent(threshold)} rise allowed{rise}.")
    listed = d.listed
    workloads = []
    for w in listed:
        cost = _row(w.name, w.cost)
        workloads.append(WorkloadRow(w.name, w.change, cost.a, cost.b, cost.delta, cost.ratio, note_text(w)))
    pools = tuple(
        [PoolRow("added", p.site, p.instance, p.pricing, p.gpu, "-", str(p.nodes)) for p in d.pools_added]
        + [PoolRow("removed", p.site, p.instance, p.pricing, p.gpu, str(p.nodes), "-") for p in d.pools_removed]
        + [PoolRow("resized" if r.nodes_delta else "changed", r.site, r.instance, r.pricing, r.gpu,
                   str(r.nodes_a), str(r.nodes_b)) for r in d.pools_resized])
    total = _row("total", d.total)
    headline = "unchanged" if abs(d.total.delta or 0.0) < 0.005 else \
        f"{total.delta} ({total.ratio})" if total.ratio else total.delta
    return Comment(
        title=title, headline=headline, total=total,
        categories=tuple(_row(x.key, x) for x in d.breakdown),
        sides=(_side("base", d.plan_a, d.spec_a), _side("head", d.plan_b, d.spec_b)),
        cautions=cautions(d), verdict=verdict, over=over, workloads=tuple(workloads),
        inputs=tuple(FieldRow(w.name, c.field, value_text(c.a), value_text(c.b)) for w in listed for c in w.inputs),
        placements=tuple(PlacementRow(w.name, h.site, h.instance, h.pricing, str(h.nodes_a), str(h.nodes_b),
                                      hours_text(h.node_hours_a), hours_text(h.node_hours_b))
                         for w in listed for h in w.holdings),
        others=tuple(FieldRow(w.name, c.field, value_text(c.a), value_text(c.b)) for w in listed for c in w.changes),
        replicas=tuple(ReplicaRow(w.name, r.site, str(r.peak_a), str(r.peak_b), r.months or "-")
                       for w in listed for r in w.replicas),
        unchanged=d.unchanged, pools=pools, same=not d.changed)


def render_comment(d: PlanDiff, threshold: float | None = None) -> str:
    return render_template("diff/comment.md.j2", c=comment_view(d, threshold))
