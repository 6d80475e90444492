"""How fragmented a plan is, in the terms of the policy's operability limits (docs/spec-reference.md,
"Operability limits"), read from the Plan alone: the report and the plan's record of the plan
solved without the limits use these figures (the audit has its own, independent rules); and
with_unlimited, the compile's step that solves again without the limits, for their price."""

from __future__ import annotations

from dataclasses import replace

from compiler.plan import LimitAlone, OperabilityPlan, Plan, UnlimitedPlan, WorkloadPlan


def instance_types(w: WorkloadPlan) -> dict[str, tuple[str, ...]]:
    """site -> the instance types a service runs any replica on there, over the horizon."""
    out: dict[str, set[str]] = {}
    for p in w.placements:
        if any(r > 0 for r in p.monthly_replicas):
            out.setdefault(p.site, set()).add(p.instance)
    return {s: tuple(sorted(v)) for s, v in sorted(out.items())}


def mix_changes(w: WorkloadPlan, horizon: int) -> tuple[int, ...]:
    """The months after a service's start month in which its mix (the candidates with a replica)
    differs from the month before."""
    def mix(m: int) -> frozenset[str]:
        return frozenset(p.candidate for p in w.placements
                         if m < len(p.monthly_replicas) and p.monthly_replicas[m] > 0)
    return tuple(m for m in range(w.start_month + 1, horizon) if mix(m) != mix(m - 1))


def shortest_hold(w: WorkloadPlan, horizon: int) -> int | None:
    """The fewest months between two changes of a service's mix, its start counted as one;
    None where the mix never changes."""
    changes = (w.start_month,) + mix_changes(w, horizon)
    gaps = [b - a for a, b in zip(changes, changes[1:])]
    return min(gaps) if gaps else None


def spot_share(w: WorkloadPlan) -> float:
    """The share of a training job's node-hours on spot nodes."""
    hours = {h.pricing: sum(h.monthly_node_hours) for p in w.placements for h in p.holdings}
    total = sum(hours.values())
    return hours.get("spot", 0.0) / total if total else 0.0


def unlimited(plan: Plan) -> UnlimitedPlan:
    """The record of a plan solved without the limits: its cost, bound and fragmentation."""
    services = [w for w in plan.workloads if w.kind == "inference"]
    holds = [h for w in services for h in [shortest_hold(w, plan.horizon_months)] if h is not None]
    return UnlimitedPlan(
        cost_usd=plan.total_cost_usd, best_bound_usd=plan.solver.best_bound_usd, status=plan.solver.status,
        most_instance_types=max((len(v) for w in services for v in instance_types(w).values()), default=0),
        shortest_mix_hold=min(holds) if holds else None,
        most_spot_share=max((spot_share(w) for w in plan.workloads if w.kind == "training"), default=0.0))


def with_unlimited(candidates, plan, solve_options):
    """The plan with its record of the operability limits: the spec's limits, and the plan the
    same candidates give without them, solved with the same options (node budget, time limit,
    gap), so the difference in cost is the limits' price as far as the two searches go."""
    from compiler.diagnostics import CompileError
    from compiler.optimize import optimize

    pol = candidates.spec.policy
    free_policy = replace(pol, max_instance_types_per_site=None, min_months_per_mix=None, max_spot_share=None)
    free = replace(candidates, spec=replace(candidates.spec, policy=free_policy))
    if not pol.has_limits:
        free_plan = unlimited(plan)     # limits that cannot bind (a hold of 1 month, a spot share of 1)
    else:
        if solve_options.progress:
            solve_options.progress("solving again without the operability limits, for their price")
        try:
            free_plan = unlimited(optimize(free, solve_options))
        except CompileError:
            free_plan = None      # no plan without the limits within the budget: nothing to compare
    alone = []
    broken = () if free_plan is None else breaks(pol, free_plan)
    if len(broken) >= 2:
        # Two or more bind: each one's price alone, the others removed, with the same options.
        for key in broken:
            one = replace(free_policy, **{key: getattr(pol, key)})
            try:
                p = optimize(replace(candidates, spec=replace(candidates.spec, policy=one)), solve_options)
            except CompileError:
                continue
            alone.append(LimitAlone(key, p.total_cost_usd, p.solver.best_bound_usd))
    return replace(plan, operability=OperabilityPlan(
        max_instance_types_per_site=pol.max_instance_types_per_site, min_months_per_mix=pol.min_months_per_mix,
        max_spot_share=pol.max_spot_share, unlimited=free_plan, alone=tuple(alone)))


def breaks(policy, free: UnlimitedPlan) -> tuple[str, ...]:
    """The policy keys whose limit the plan without limits breaks: the limits that bind."""
    out = []
    if policy.max_instance_types_per_site is not None and free.most_instance_types > policy.max_instance_types_per_site:
        out.append("max_instance_types_per_site")
    if policy.min_months_per_mix is not None and free.shortest_mix_hold is not None \
            and free.shortest_mix_hold < policy.min_months_per_mix:
        out.append("min_months_per_mix")
    if policy.max_spot_share is not None and free.most_spot_share > policy.max_spot_share + 1e-9:
        out.append("max_spot_share")
    return tuple(out)
