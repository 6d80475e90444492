"""The report's "Operability" section: how fragmented each service's plan is (sites, instance
types, changes of its replica mix), where availability multiplies its replicas, and, where the
spec sets operability limits, what they cost against the plan solved without them."""

from __future__ import annotations

from dataclasses import dataclass

from compiler.operability import (cost_bound, gpu_types, instance_types, mix_changes, shortest_hold,
                                  shortest_pool_life, sites, spot_share)
from compiler.render.environment import Md, md_code
from compiler.plan import UNDATED, Calendar, Plan, WorkloadPlan, site_replicas
from compiler.spec import SURVIVES_SITE_LOSS



@dataclass(frozen=True)
class ServiceSpread:
    name: str
    sites: int
    types_text: str               # "aws-use1 3, gcp-usc1 2": instance types at each site
    most_types: int
    changes: int                  # months in which its replica mix changes
    changes_text: str             # those months, as runs


@dataclass(frozen=True)
class LimitRow:
    key: str                      # the policy key
    value: str                    # as the spec sets it
    this_plan: str                # the figure it bounds, in this plan
    unlimited: str                # the same figure in the plan solved without the limits
    binds: str                    # whether the plan without the limits breaks it


@dataclass(frozen=True)
class OperabilityView:
    services: tuple[ServiceSpread, ...]
    availability: tuple[str, ...]     # one sentence per N+1 service
    limits: tuple[LimitRow, ...]      # empty where the spec sets none
    cost: str                         # what the limits cost; "" where the spec sets none


def _months(n: int) -> str:
    return f"{n} month{'s' if n != 1 else ''}"


def _spread(w: WorkloadPlan, horizon: int, calendar: Calendar = UNDATED) -> ServiceSpread:
    types = instance_types(w)
    changes = mix_changes(w, horizon)
    return ServiceSpread(w.name, len(types), ", ".join(f"{s} {len(v)}" for s, v in types.items()),
                         max((len(v) for v in types.values()), default=0), len(changes),
                         calendar.runs(changes) if changes else "none")


def availability_line(w: WorkloadPlan, horizon: int, calendar: Calendar = UNDATED) -> str:
    """Why an N+1 service runs more replicas than its load needs: its peak month's replicas are
    spread over N sites so that the N - 1 left after losing any one carry the whole load, which
    takes at least N / (N - 1) times the capacity the load alone needs (each site's capacity
    c_s: sum_{s != t} c_s >= D for every t, summed over the N choices of t)."""
    per_site = site_replicas(w)
    peak = max(range(horizon), key=lambda m: (sum(r[m] if m < len(r) else 0 for r in per_site.values()), -m))
    at = {s: r[peak] for s, r in per_site.items() if peak < len(r) and r[peak] > 0}
    named = calendar.name(peak)
    n = len(at)
    spread = ", ".join(f"{reps} at {s}" for s, reps in sorted(at.items()))
    if n < 2:
        return (f"{w.name}: availability {w.availability:g} asks that it survive the loss of any one site, "
                f"yet its peak month {named} runs at one site ({spread})")
    return (f"{w.name}: availability {w.availability:g} (>= 99.9%) means it must carry its whole peak "
            f"after losing any one site, so in its peak month {named} its {sum(at.values())} replicas run "
            f"on {n} sites ({spread}) and any {n - 1} of those sites carry the load: at least {n}/{n - 1} = "
            f"{n / (n - 1):.2f} times the serving capacity the load alone needs")


def _limits(plan: Plan) -> tuple[tuple[LimitRow, ...], str]:
    op = plan.operability
    if op is None:
        return (), ""
    h = plan.horizon_months
    services = [w for w in plan.workloads if w.kind == "inference"]
    jobs = [w for w in plan.workloads if w.kind == "training"]
    free = op.unlimited
    rows = []

    def binds(broken: bool | None) -> str:
        return "unknown" if broken is None else ("yes" if broken else "no")

    if op.max_sites_per_service is not None:
        most = max((len(sites(w)) for w in services), default=0)
        rows.append(LimitRow("max_sites_per_service", str(op.max_sites_per_service),
                             f"at most {most} a service" if services else "no service",
                             "-" if free is None else f"at most {free.most_sites}",
                             binds(None if free is None else free.most_sites > op.max_sites_per_service)))
    if op.max_gpu_types_per_service is not None:
        most = max((len(gpu_types(plan, w)) for w in services), default=0)
        rows.append(LimitRow("max_gpu_types_per_service", str(op.max_gpu_types_per_service),
                             f"at most {most} a service" if services else "no service",
                             "-" if free is None else f"at most {free.most_gpu_types}",
                             binds(None if free is None else free.most_gpu_types > op.max_gpu_types_per_service)))
    if op.min_pool_months is not None:
        life = shortest_pool_life(plan)
        rows.append(LimitRow("min_pool_months", str(op.min_pool_months),
                             f"{_months(life)} at the least" if life is not None else "no pool stood down",
                             "-" if free is None else (f"{_months(free.shortest_pool_life)} at the least"
                                                       if free.shortest_pool_life is not None else "no pool stood down"),
                             binds(None if free is None else free.shortest_pool_life is not None
                                   and free.shortest_pool_life < op.min_pool_months)))
    if op.max_instance_types_per_site is not None:
        most = max((len(v) for w in services for v in instance_types(w).values()), default=0)
        rows.append(LimitRow("max_instance_types_per_site", str(op.max_instance_types_per_site),
                             f"at most {most} a service and site" if services else "no service",
                             "-" if free is None else f"at most {free.most_instance_types}",
                             binds(None if free is None else free.most_instance_types > op.max_instance_types_per_site)))
    if op.min_months_per_mix is not None:
        holds = [x for w in services for x in [shortest_hold(w, h)] if x is not None]
        mine = f"{_months(min(holds))} at the least" if holds else "no mix changes"
        theirs = "-" if free is None else (f"{_months(free.shortest_mix_hold)} at the least"
                                           if free.shortest_mix_hold is not None else "no mix changes")
        rows.append(LimitRow("min_months_per_mix", str(op.min_months_per_mix), mine, theirs,
                             binds(None if free is None else free.shortest_mix_hold is not None
                                   and free.shortest_mix_hold < op.min_months_per_mix)))
    if op.max_spot_share is not None:
        most = max((spot_share(w) for w in jobs), default=0.0)
        rows.append(LimitRow("max_spot_share", f"{op.max_spot_share:g}", f"{most:.0%} at the most",
                             "-" if free is None else f"{free.most_spot_share:.0%} at the most",
                             binds(None if free is None else free.most_spot_share > op.max_spot_share + 1e-9)))
    if free is None:
        return tuple(rows), ("Without the limits the solver found no plan within the same budget, so their "
                             "price is not known.")
    if not any(r.binds == "yes" for r in rows):
        return tuple(rows), ("The plan without the limits keeps every one of them, so it is the plan: they "
                             "cost nothing.")
    cost = plan.total_cost_usd
    delta = cost - free.cost_usd
    lo = max(0.0, cost_bound(plan.solver) - free.cost_usd)
    hi = max(0.0, cost - free.best_bound_usd)
    if delta < -0.5:
        # A plan with the limits is a plan without them too (fewer rows): the search without them
        # stopped at a dearer one, so the difference of the two plans is no price at all.
        text = (f"With the limits the plan costs ${cost:,.0f}; solved again without them, with the same search "
                f"budget, the search stopped at a dearer plan (${free.cost_usd:,.0f}), though this plan is a plan "
                f"of that model too (it keeps more rows): the price of the limits (the difference of the two "
                f"optima) is between $0 and ${hi:,.0f}.")
        return tuple(rows), Md(text + _alone(op, free, rows))
    text = (f"With the limits the plan costs ${cost:,.0f}; solved again without them, with the same search "
            f"budget, ${free.cost_usd:,.0f}: the limits add ${delta:,.0f} ({delta / free.cost_usd:+.2%})"
            if free.cost_usd else f"With the limits the plan costs ${cost:,.0f}; without them ${free.cost_usd:,.0f}")
    if plan.solver.status == "optimal" and free.status == "optimal":
        text += ". Both plans are proven optimal, so that is the price of the limits."
    else:
        text += (f". Each figure is a plan within its own proven gap, so the true price of the limits (the "
                 f"difference of the two optima) is between ${lo:,.0f} and ${hi:,.0f}.")
    text += (" A limit the plan without limits already obeys (binds: no) costs nothing beyond that "
             "plan's gap on its own.")
    return tuple(rows), Md(text + _alone(op, free, rows))          # Markdown: its code spans are the compiler's


def _alone(op, free, rows) -> str:
    """Each binding limit's price alone, where --appraise-limits priced them; else how to."""
    if op.alone:
        def more(x: float) -> str:
            return f"{'+' if x >= 0 else '-'}${abs(x):,.0f}"
        each = "; ".join(f"`{md_code(a.key)}` ${a.cost_usd:,.0f} ({more(a.cost_usd - free.cost_usd)})" for a in op.alone)
        return (f" Each binding limit alone, the others removed (solved with the same budget): {each}; "
                f"the limits together cost what the first sentence says, which need not be the sum.")
    if sum(r.binds == "yes" for r in rows) >= 2:
        return (" What each binding limit costs alone is not priced by default (a solve each): compile with "
                "`--appraise-limits` to price them.")
    return ""


def build(plan: Plan) -> OperabilityView:
    h = plan.horizon_months
    services = sorted((w for w in plan.workloads if w.kind == "inference"), key=lambda w: w.name)
    limits, cost = _limits(plan)
    return OperabilityView(
        services=tuple(_spread(w, h, plan.calendar) for w in services),
        availability=tuple(availability_line(w, h, plan.calendar) for w in services
                           if w.availability >= SURVIVES_SITE_LOSS),
        limits=limits, cost=cost)
