"""Every workload placed, on candidates of its own, within its deadline."""

from __future__ import annotations

from typing import Iterator

from compiler.audit import codes, rules
from compiler.audit.context import Context, Finding, Placed, num
from compiler.spec import InferenceWorkload


def check_placements(ctx: Context) -> Iterator[Finding]:
    """Each spec workload appears once in the plan; training has one placement, a service at
    least one; every placement names a candidate of the workload that matches its site,
    instance and size. Resolved placements are kept in ctx.placed for the other checks."""
    spec_names = {w.name for w in ctx.spec.workloads}
    seen: set[str] = set()
    for wp in ctx.plan.workloads:
        if wp.name not in spec_names:
            yield Finding(codes.UNKNOWN_WORKLOAD, f"the plan places {wp.name}, which the spec does not define")
        elif wp.name in seen:
            yield Finding(codes.UNKNOWN_WORKLOAD, f"the plan places {wp.name} twice")
        seen.add(wp.name)
    for w in ctx.spec.workloads:
        wps = [wp for wp in ctx.plan.workloads if wp.name == w.name]
        if not wps:
            yield Finding(codes.MISSING_WORKLOAD, f"{w.name} is not in the plan: every workload must be placed",
                          w.path)
            continue
        wp = wps[0]
        if wp.kind != w.kind:
            yield Finding(codes.CANDIDATE_MISMATCH, f"{w.name} is {w.kind} in the spec but {wp.kind} in the plan",
                          w.path)
            continue
        service = isinstance(w, InferenceWorkload)
        if not service and len(wp.placements) != 1:
            yield Finding(codes.PLACEMENT_COUNT,
                          f"{w.name} is a training job and needs exactly one placement, the plan has "
                          f"{len(wp.placements)}", w.path)
        if service and not wp.placements:
            yield Finding(codes.PLACEMENT_COUNT, f"{w.name} has no placement: nothing serves it", w.path)
        for p in wp.placements:
            where = f"{w.name} at {p.site}/{p.instance}"
            c = ctx.by_id.get(p.candidate)
            if c is None or c.workload != w.name:
                yield Finding(codes.UNKNOWN_CANDIDATE,
                              f"{where} names candidate {p.candidate!r}, which is not one of {w.name}'s "
                              "estimates (`infra-compile estimate`)", w.path)
                continue
            if (c.site, c.instance) != (p.site, p.instance):
                yield Finding(codes.CANDIDATE_MISMATCH,
                              f"{where} names candidate {c.id}, which runs at {c.site}/{c.instance}", w.path)
                continue
            ctx.placed.append(Placed(w, p, c))
            yield from _sizes(w, wp, p, c, where)
        if not service:
            yield from _deadline(ctx, w, wp)


def _sizes(w, wp, p, c, where: str) -> Iterator[Finding]:
    if c.kind == "training":
        wrong = [f"{k} {num(got)} (the candidate has {num(want)})"
                 for k, got, want in (("nodes", p.nodes, c.nodes), ("GPUs", p.gpus, c.gpus),
                                      ("workload GPUs", wp.gpus, c.gpus)) if got != want]
        if wp.gpu != c.gpu:
            wrong.append(f"GPU {wp.gpu} (the candidate has {c.gpu})")
    else:
        wrong = [] if p.gpus_per_replica == c.gpus else [
            f"{num(p.gpus_per_replica)} GPUs per replica (the candidate has {num(c.gpus)})"]
    if wrong:
        yield Finding(codes.CANDIDATE_MISMATCH, f"{where} states {', '.join(wrong)}", w.path)


def _deadline(ctx: Context, w, wp) -> Iterator[Finding]:
    for p in wp.placements:
        c = ctx.by_id.get(p.candidate)
        if c is None or c.kind != "training":
            continue
        every = _period_hours(w.window.every)
        if every is not None:
            limit = w.window.deadline_days * 24.0 if w.window.deadline_days is not None else every
            what = f"each run's {limit / 24:g}-day window"
            yield from _runs(ctx, w, c, every, limit)
        elif w.window.deadline_days is not None:
            limit, what = w.window.deadline_days * 24.0, f"its {w.window.deadline_days:g}-day deadline"
        else:
            limit = (ctx.H - w.window.start_month) * rules.HOURS
            what = "the rest of the horizon"
        if c.estimate.duration_hours > limit * (1 + 1e-9):
            yield Finding(codes.DEADLINE,
                          f"{w.name} on {c.id} runs {c.estimate.duration_hours / 24:,.1f} days, beyond {what} "
                          f"({limit / 24:,.1f} days)", f"{w.path}.window")


def _period_hours(every: str | None) -> float | None:
    """A recurring job's period in hours, read from the spec's text ("7d", "1mo")."""
    if not every:
        return None
    n, unit = (int(every[:-2]), "mo") if every.endswith("mo") else (int(every[:-1]), "d")
    return n * (rules.HOURS if unit == "mo" else 24.0)


def _runs(ctx: Context, w, c, every: float, window: float) -> Iterator[Finding]:
    """A recurring job's candidate runs the hours of every run whose window ends in the horizon,
    each counted from the month it starts in: re-derived here by walking the runs."""
    want: dict[int, float] = {}
    t = w.window.start_month * rules.HOURS
    while t + window <= ctx.H * rules.HOURS + 1e-6:
        m, left = int(t // rules.HOURS + 1e-9), c.estimate.duration_hours
        while left > 1e-9:
            want[m] = want.get(m, 0.0) + min(rules.HOURS, left)
            left -= rules.HOURS
            m += 1
        t += every
    got = {m: h for m, h in c.usage if h > 0}
    bad = sorted(m for m in set(want) | set(got) if abs(want.get(m, 0.0) - got.get(m, 0.0)) > 1e-3 * max(1.0, want.get(m, 0.0)))
    if bad:
        m = bad[0]
        yield Finding(codes.RUNS,
                      f"{w.name} runs every {w.window.every}: month {m} should hold {want.get(m, 0.0):,.1f} hours of "
                      f"runs, the candidate {c.id} holds {got.get(m, 0.0):,.1f}", f"{w.path}.window.every")
