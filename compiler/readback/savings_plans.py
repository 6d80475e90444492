"""Savings Plans read back (formulate (17), docs/savings-plans.md): what the plan buys, what it
covers, and who pays for it.

A commitment's cost goes, month by month over the months it covers, to the on-demand users of the
pools it covers that month (then every user of them, then every workload); a pool-month's covered
hours (a saving: negative cost) to that pool-month's on-demand users; a part-month job's covered
hours to the job; an idle tail after the horizon to the last month's users of the covered pools.
The sites bill a commitment to the first site it covers (a Savings Plan is the account's, not a
region's; the sites still add up to the total)."""

from __future__ import annotations

from collections import defaultdict
from typing import Callable

from compiler.plan import SavingsPlanBought, SavingsPlanCover, SavingsPlanIdle, SavingsPlans
from compiler.spec import HOURS_PER_MONTH

FAMILIES = ("savings_plan", "sp_cover", "sp_cover_job", "sp_tail")


def _r(v: float) -> float:
    return round(v, 2)


def bill_site(problem) -> dict[str, str]:
    """The site each commitment and idle-tail variable is billed to: its term's first site."""
    first = {p.term: p.sites[0] for p in problem.savings_plans}
    out = {p.var: p.sites[0] for p in problem.savings_plans}
    out.update({v.name: first[v.pricing] for v in problem.variables if v.family == "sp_tail" and v.pricing in first})
    return out


def read(problem, value: Callable[[str], float]) -> SavingsPlans:
    """The commitments bought (above a cent an hour), the node-hours they cover by pool and month,
    and under `continues` their idle months after the horizon."""
    H = problem.spec.horizon_months
    bought = tuple(SavingsPlanBought(p.term, p.start, round(value(p.var), 6), p.sites)
                   for p in sorted(problem.savings_plans, key=lambda p: (p.term, p.start))
                   if round(value(p.var), 6) > 0)
    if not bought:
        return SavingsPlans()
    total: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0.0] * H)
    level: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0.0] * H)
    credit: dict[str, float] = defaultdict(float)
    tails = []
    for v in problem.variables:
        if v.family in ("sp_cover", "sp_cover_job"):
            q = value(v.name)
            if q > 1e-9:
                total[(v.site, v.instance, v.pricing)][v.month] += q
                if v.family == "sp_cover":
                    level[(v.site, v.instance, v.pricing)][v.month] += q
        elif v.family == "sp_credit" and v.site is not None and v.pricing is not None:
            credit[v.pricing] += value(v.name) * (_rate_of(problem, v) / HOURS_PER_MONTH)
        elif v.family == "sp_tail":
            tails.append(v)
    cover = tuple(SavingsPlanCover(s, i, t, tuple(round(x, 6) for x in hours),
                                   tuple(round(x, 6) for x in level[(s, i, t)]))
                  for (s, i, t), hours in sorted(total.items()) if any(x > 5e-4 for x in hours))
    idle = []
    for v in sorted(tails, key=lambda v: v.name):
        q = value(v.name)
        months = round(v.cost / HOURS_PER_MONTH)
        first = int(v.name.rsplit("@", 1)[1].rstrip("]"))
        idle.append(SavingsPlanIdle(v.pricing, first, months, round(credit[v.pricing], 6), round(q, 6), _r(v.cost * q)))
    return SavingsPlans(bought, cover, tuple(i for i in idle if i.idle_usd_per_hour > 0 or i.credit_usd_per_hour > 0))


def _rate_of(problem, v) -> float:
    """rho_k(p) of an sp_credit variable's pool and term (the model's unit cost)."""
    from compiler import unit_costs
    return unit_costs.savings_plan_rate(problem.candidates.catalog, problem.spec.site(v.site), v.instance,
                                        v.pricing) or 0.0


def spread(problem, v, usd: float, weights, workload_cost: dict[str, float], monthly: list[float],
           spread_to) -> bool:
    """Book a Savings Plan variable's cost (`usd`, at its value) to workloads and months; False
    for any other variable. `weights(site, instance, pricings, months)` gives each workload's
    node-hours; `spread_to(workload_cost, amount, *groups)` books to the first group with any."""
    if v.family not in FAMILIES:
        return False
    H = problem.spec.horizon_months
    if v.family == "sp_cover_job":
        workload_cost[v.workload] = workload_cost.get(v.workload, 0.0) + usd
        monthly[v.month] += usd
        return True
    if v.family == "sp_cover":
        spread_to(workload_cost, usd, weights(v.site, v.instance, ("on_demand",), (v.month,)),
                  weights(v.site, v.instance, ("on_demand",), range(H)))
        monthly[v.month] += usd
        return True
    pools = sorted({(c.site, c.instance) for c in problem.variables if c.family == "sp_cover"
                    and c.pricing == (v.pricing if v.family == "sp_tail" else _term_of(problem, v))})
    everyone = {w.name: 1.0 for w in problem.spec.workloads}

    def users(months) -> dict[str, float]:
        out: dict[str, float] = defaultdict(float)
        for s, i in pools:
            for k, x in weights(s, i, ("on_demand",), months).items():
                out[k] += x
        return out

    if v.family == "sp_tail":
        spread_to(workload_cost, usd, users((H - 1,)), users(range(H)), everyone)
        monthly[H - 1] += usd
        return True
    plan = next(p for p in problem.savings_plans if p.var == v.name)
    months = list(plan.months)
    inside = usd * len(months) / max(1, round(v.cost / HOURS_PER_MONTH))
    for m in months:
        spread_to(workload_cost, usd / len(months), users((m,)), users(range(H)), everyone)
        monthly[m] += inside / len(months)
    monthly[plan.start] += usd - inside
    return True


def _term_of(problem, v) -> str:
    return next(p.term for p in problem.savings_plans if p.var == v.name)
