"""How fragmented a plan is, in the terms of the policy's operability limits (docs/spec-reference.md,
"Operability limits"), read from the Plan alone: the report and the plan's record of the plan
solved without the limits use these figures (the audit has its own, independent rules); and the
compile's steps that solve with the limits (solve_within_limits: without them first) and price
them (with_limits)."""

from __future__ import annotations

from dataclasses import replace

from compiler.plan import LimitAlone, OperabilityPlan, Plan, SolverInfo, UnlimitedPlan, WorkloadPlan
from compiler.spec import LIMIT_KEYS


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


def sites(w: WorkloadPlan) -> tuple[str, ...]:
    """The sites a service runs any replica at, over the horizon."""
    return tuple(sorted({p.site for p in w.placements if any(r > 0 for r in p.monthly_replicas)}))


def gpu_types(plan: Plan, w: WorkloadPlan) -> tuple[str, ...]:
    """The GPU types a service runs any replica on, over the horizon (a pool's instance names its GPU)."""
    gpu = {(p.site, p.instance): p.gpu for p in plan.pools}
    return tuple(sorted({gpu[(p.site, p.instance)] for p in w.placements
                         if any(r > 0 for r in p.monthly_replicas)}))


def pool_runs(plan: Plan) -> dict[tuple[str, str], tuple[tuple[int, int], ...]]:
    """(site, instance) of each cloud pool that carries a replica -> its runs of consecutive months
    with one, as (first, last) months."""
    cloud = {s.name for s in plan.sites if s.type == "cloud"}
    months: dict[tuple[str, str], set[int]] = {}
    for w in plan.workloads:
        for p in w.placements:
            if p.site in cloud:
                months.setdefault((p.site, p.instance), set()).update(
                    m for m, r in enumerate(p.monthly_replicas) if r > 0)
    out = {}
    for key, ms in sorted(months.items()):
        runs, first = [], None
        for m in range(plan.horizon_months + 1):
            if m in ms and first is None:
                first = m
            elif m not in ms and first is not None:
                runs.append((first, m - 1))
                first = None
        if runs:
            out[key] = tuple(runs)
    return out


def shortest_pool_life(plan: Plan) -> int | None:
    """The fewest months of a cloud pool's run with replicas, leaving out the runs the horizon's end
    cuts short (they go on after it); None where there is none."""
    lives = [b - a + 1 for runs in pool_runs(plan).values() for a, b in runs if b < plan.horizon_months - 1]
    return min(lives) if lives else None


def spot_share(w: WorkloadPlan) -> float:
    """The share of a training job's node-hours on spot nodes."""
    hours = {h.pricing: sum(h.monthly_node_hours) for p in w.placements for h in p.holdings}
    total = sum(hours.values())
    return hours.get("spot", 0.0) / total if total else 0.0


def unlimited(plan: Plan) -> UnlimitedPlan:
    """The record of a plan solved without the limits: its cost, bound and fragmentation. In a
    re-plan the bound is the solver's (on the cost plus the moves' price) less the plan's own
    moves, so cost and bound are one quantity and their difference is the plan's gap."""
    services = [w for w in plan.workloads if w.kind == "inference"]
    holds = [h for w in services for h in [shortest_hold(w, plan.horizon_months)] if h is not None]
    return UnlimitedPlan(
        cost_usd=plan.total_cost_usd, best_bound_usd=cost_bound(plan.solver), status=plan.solver.status,
        most_instance_types=max((len(v) for w in services for v in instance_types(w).values()), default=0),
        shortest_mix_hold=min(holds) if holds else None,
        most_spot_share=max((spot_share(w) for w in plan.workloads if w.kind == "training"), default=0.0),
        most_sites=max((len(sites(w)) for w in services), default=0),
        most_gpu_types=max((len(gpu_types(plan, w)) for w in services), default=0),
        shortest_pool_life=shortest_pool_life(plan))


def cost_bound(solver: SolverInfo) -> float:
    """The solver's bound on the plan's own cost basis: a re-plan's search bounds the cost plus the
    moves' price, so the plan's moves are taken off (the gap stays the one reported)."""
    return round(solver.best_bound_usd - solver.moves_usd, 2)


def solve_within_limits(candidates, solve_options, optimize) -> tuple[Plan, Plan | None]:
    """The plan under the spec's operability limits, and the plan without them (None: none found).

    The plan without the limits is solved first. Where it keeps every limit it is the answer: it
    is a plan of the limited model, and the bound of the model without them is a bound of the
    limited one too (it has fewer rows), so its status and gap stand. Where it breaks one, the
    limited model is solved (limited())."""
    from compiler.diagnostics import CompileError

    try:
        free_plan = optimize(lifted(candidates), solve_options)
    except CompileError:
        free_plan = None      # no plan without the limits within the budget: nothing to compare
    if free_plan is not None and not breaks(candidates.spec.policy, unlimited(free_plan)):
        return free_plan, free_plan
    return limited(candidates, free_plan, solve_options, optimize), free_plan


def limited(candidates, free_plan: Plan | None, solve_options, optimize, quick: bool = False) -> Plan:
    """The plan of the limited model, given the plan without the limits (None: none was found).

    Where that plan breaks a count (COUNTS), the search runs over each service's candidates cut to
    the sites and types the LP relaxation leans on (optimize/narrow.py). Otherwise the whole model
    is searched, or with `quick` (a limit's price alone, for the report) each service's candidates
    cut to those that plan runs replicas on (the pool life and the mix hold move replicas between
    pools it already has, or keep a pool up longer). A plan over fewer candidates is a plan of the
    whole limited model, but its bound is not, so the plan states the bound proved without the
    limits; where the narrowed candidates have no plan, the whole model is searched
    (docs/optimizer.md, "Operability limits in the search")."""
    from compiler.diagnostics import CompileError

    say = solve_options.progress or (lambda _msg: None)
    if free_plan is None:
        say("solving with the operability limits")
        return optimize(candidates, solve_options)
    broken = breaks(candidates.spec.policy, unlimited(free_plan))
    if set(broken) & COUNTS:
        from compiler.optimize.narrow import narrowed

        say("the plan without the operability limits breaks " + ", ".join(broken)
            + ": solving with them over the sites and types the LP relaxation leans on")
        cut, note = narrowed(candidates, solve_options.settings, say, solve_options.kept), NARROWED_NOTE
    elif quick:
        cut, note = used(candidates, free_plan), USED_NOTE
    else:
        say("the plan without the operability limits breaks " + ", ".join(broken) + ": solving with them")
        cut, note = candidates, None
    try:
        plan = optimize(cut, solve_options if cut is candidates
                        else replace(solve_options, narrowed=True, free_path=free_plan.solver.strategy.path))
    except CompileError:
        if cut is candidates:
            raise
        say("no plan over those: solving with the limits over every candidate")
        plan, note = optimize(candidates, solve_options), None
    return replace(plan, solver=bounded_by(plan.solver, free_plan.solver.best_bound_usd, note))


def used(candidates, plan: Plan):
    """The candidates with each service's cut to those `plan` runs a replica on."""
    on = {p.candidate for w in plan.workloads if w.kind == "inference" for p in w.placements
          if any(r > 0 for r in p.monthly_replicas)}
    by_workload = {name: tuple(c for c in cands if c.kind != "inference" or c.id in on)
                   for name, cands in candidates.by_workload.items()}
    return replace(candidates, by_workload=by_workload)


# The pipeline's count limits: a plan that breaks one is searched again over narrowed candidates.
COUNTS = {"max_sites_per_service", "max_gpu_types_per_service", "max_instance_types_per_site"}

NARROWED_NOTE = ("The operability limits were searched over the sites and types the LP relaxation leans on "
                 "(docs/optimizer.md, \"Operability limits in the search\")")
USED_NOTE = ("The operability limits were searched over the candidates the plan without them runs replicas on "
             "(docs/optimizer.md, \"Operability limits in the search\")")


def bounded_by(solver: SolverInfo, bound: float, narrowed_note: str | None) -> SolverInfo:
    """A plan's solver record under the bound `bound` the plan without the limits proved (a bound
    on every plan the limits allow). Where the plan was searched over narrowed candidates
    (`narrowed_note`), its own bound holds for those only, and `bound` replaces it; otherwise the
    higher of the two stands. Optimal only where the gap proves it."""
    from compiler.optimize import DEFAULT

    if narrowed_note is None and bound <= solver.best_bound_usd:
        return solver
    bound = min(bound, solver.objective_usd)
    gap = (solver.objective_usd - bound) / solver.objective_usd if solver.objective_usd > 0 else 0.0
    note = (f"{narrowed_note or 'The operability limits were searched on'}: no plan the spec allows costs less "
            f"than ${bound:,.2f}, the bound proved without the limits, so this plan is at most {gap:.2%} above "
            f"the optimum")
    return replace(solver, best_bound_usd=round(bound, 2), gap=round(gap, 6), gap_note=note,
                   status="optimal" if gap <= DEFAULT.proven_gap else "feasible")


def with_limits(candidates, plan: Plan, free_plan: UnlimitedPlan | None, solve_options, optimize,
                free: Plan | None = None, appraise: bool = False) -> Plan:
    """The plan with its record of the operability limits: the spec's limits, the plan the same
    candidates give without them (`free_plan`; `free` itself where it was solved), solved with the
    same options (node budget, time limit, gap), so the difference in cost is the limits' price as
    far as the two searches go. With `appraise` (--appraise-limits), where two or more bind, each
    one's price alone (the others lifted), solved as limited() solves the plan, quickly: a figure
    for the report, not a plan, at one more solve a binding limit, so never by default (the
    compile's own two solves already price the limits together)."""
    from compiler.diagnostics import CompileError

    pol = candidates.spec.policy
    alone = []
    broken = () if free_plan is None else breaks(pol, free_plan)
    if appraise and len(broken) >= 2:
        for key in broken:
            one = replace(pol.without_limits(), **{key: getattr(pol, key)})
            try:
                p = limited(replace(candidates, spec=replace(candidates.spec, policy=one)), free, solve_options,
                            optimize, quick=True)
            except CompileError:
                continue
            alone.append(LimitAlone(key, p.total_cost_usd, p.solver.best_bound_usd))
    return replace(plan, operability=OperabilityPlan(
        **{k: getattr(pol, k) for k in LIMIT_KEYS}, unlimited=free_plan, alone=tuple(alone)))


def lifted(candidates):
    """The same candidates under the policy with every operability limit lifted."""
    return replace(candidates, spec=replace(candidates.spec, policy=candidates.spec.policy.without_limits()))


def breaks(policy, free: UnlimitedPlan) -> tuple[str, ...]:
    """The policy keys whose limit the plan without limits breaks: the limits that bind, in
    LIMIT_KEYS order."""
    most = {"max_sites_per_service": free.most_sites, "max_gpu_types_per_service": free.most_gpu_types,
            "max_instance_types_per_site": free.most_instance_types}
    least = {"min_pool_months": free.shortest_pool_life, "min_months_per_mix": free.shortest_mix_hold}
    out = []
    for key in LIMIT_KEYS:
        limit = getattr(policy, key)
        if limit is None:
            continue
        if key in most and most[key] > limit:
            out.append(key)
        elif key in least and least[key] is not None and least[key] < limit:
            out.append(key)
        elif key == "max_spot_share" and free.most_spot_share > limit + 1e-9:
            out.append(key)
    return tuple(out)
