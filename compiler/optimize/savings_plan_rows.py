r"""Savings Plans in the model: formulate's rows (17), written once the cloud pools' on-demand hours
(12), (12b) are (docs/savings-plans.md has the model and what is exact in it).

A Savings Plan (AWS Compute Savings Plans, Azure savings plan for compute: the providers with
savings_plan_estimated_share factors) is a commitment of C USD per hour for a term (12 or 36
months) bought in a month; each hour it bills the usage it covers at the plan's rate up to C, usage above C on demand,
and C whether used or not. A site opts in by listing the term in its `pricing`.

Notation (beyond formulate's)
-----------------------------
  k                  a Savings Plan term sold at some site of the spec (savings_plan_1y, _3y)
  P_k                the cloud pools p at sites listing k whose instance has an on-demand rate
  rho_k(p)           USD per node-hour k bills for p's usage it covers (unit_costs.savings_plan_rate)
  J_{p,m}            the jobs of p that run part of month m (0 < h_{c,m} < 730), on demand:
                     o_{c,m} = od_excess e_{c,m} where reserved terms are active in m, else n_c h_{c,m} x_c

Decisions
---------
  C_{k,a} >= 0       USD per hour committed to a plan of term k bought in month a
  l_{p,k,m} >= 0     node-hours of p's level on-demand usage in m covered by k (usage that runs
                     every hour of the month: replicas' nodes, jobs running all month)
  j_{c,k,m} >= 0     node-hours of part-month job c's on-demand hours in m covered by k

Objective: + sum 730 * T_{k,a} * C_{k,a} - sum od(p) * (l + j)   (covered hours are not billed on
  demand; T_{k,a} the months charged: policy.after_horizon as for reserved terms)

Rows
----
  sp_level[p@m]:      sum_k l_{p,k,m} <= u_{p,m} - sum_{c in J_{p,m}} o_{c,m}
                      (u minus the part-month jobs' on-demand hours is what runs every hour)
  sp_job[c@m]:        sum_k j_{c,k,m} <= o_{c,m}
  sp_commit[k@m]:     sum_p rho_k(p) (l_{p,k,m} + sum_c j_{c,k,m}) <= 730 sum_{a active} C_{k,a}
  sp_hours[c/k@m]:    rho_k(p) j_{c,k,m} <= h_{c,m} (sum_{a active} C_{k,a} - sum_q rho_k(q) l_{q,k,m} / 730)
                      (a job's hours meet only the commitment the level usage leaves each hour)
  (16) under `continues`, for each run R of months after the horizon with the same plans active:
  sp_tail[k@R]:       t_{k,R} >= sum_{a active in R} C_{k,a} - sum_p rho_k(p) g_{p,k} / 730, t >= 0
                      at 730 |R| USD each, with sp_credit[p]: sum_k g_{p,k} <= L_p (the last
                      month's credited load of the pool, as (16) reads it) and
                      sp_credit[p/k]: g_{p,k} <= l_{p,k,H-1}: the commitment the last month's
                      covered level load uses continues to be used; the rest is paid idle.
"""

from __future__ import annotations

from typing import Mapping

from compiler import unit_costs
from compiler.optimize.capacity_block_rows import job_terms
from compiler.problem import SavingsPlanTerm
from compiler.spec import HOURS_PER_MONTH, CloudSite


def _rates(st) -> dict[str, dict[tuple[str, str], float]]:
    """term -> pool -> rho_k(p), for the cloud pools the model has."""
    out: dict[str, dict[tuple[str, str], float]] = {}
    for (s, i) in sorted(st.pools_cloud):
        site = st.spec.site(s)
        if not isinstance(site, CloudSite):
            continue
        for term in unit_costs.SAVINGS_PLAN_MONTHS:
            rate = unit_costs.savings_plan_rate(st.cat, site, i, term)
            if rate is not None:
                out.setdefault(term, {})[(s, i)] = rate
    return out


def _part_month_jobs(st, s: str, i: str, m: int) -> list[tuple[object, dict[str, float], float]]:
    """The jobs of pool (s, i) running part of month m: (candidate, its on-demand hours as terms
    o_{c,m}, h_{c,m})."""
    B, out = st.B, []
    for xn, nh, own in job_terms(B, st.od_hours.get((s, i, m), {})):
        c = st.by_id[B.vars[xn].candidate]
        h = nh / c.nodes
        if h >= HOURS_PER_MONTH - 1e-9:
            continue
        en = f"od_excess[{c.id}@{m:03d}]"
        out.append((c, {en: 1.0} if en in B.vars else own, h))   # own: x, less a block (18)
    return out


def savings_plans(st, last_load: Mapping[tuple[str, str], Mapping[str, float]]) -> list[SavingsPlanTerm]:
    """Rows (17) for every Savings Plan term some site opts in to; returns the commitments made.
    `last_load`: each cloud pool's month-(H-1) credited load terms (node-hours), for `continues`."""
    B, H, rule = st.B, st.H, st.spec.policy.after_horizon
    made: list[SavingsPlanTerm] = []
    rates = _rates(st)
    level: dict[tuple[str, str, str, int], str] = {}
    for term, pools in sorted(rates.items()):
        tm = unit_costs.SAVINGS_PLAN_MONTHS[term]
        used = sorted({m for p in pools for m in st.pools_cloud[p] if (*p, m) in st.od_vars})
        sites = tuple(sorted({s for s, _ in pools}))
        commits = []
        for a in used:
            paid = unit_costs.savings_plan_months_charged(term, a, H, rule)
            cn = B.var(f"savings_plan[{term}@{a:03d}]", "continuous", None, family="savings_plan", pricing=term,
                       usd={"cloud_compute": HOURS_PER_MONTH * paid})
            commits.append((cn, a))
            made.append(SavingsPlanTerm(cn, term, a, range(a, min(H, a + tm)), sites))
        for m in used:
            active = {cn: 1.0 for cn, a in commits if a <= m < a + tm}
            spent: dict[str, float] = {}
            jobs_rows = []
            for (s, i), rate in sorted(pools.items()):
                un = st.od_vars.get((s, i, m))
                if un is None:
                    continue
                od = unit_costs.cloud_price(st.cat, st.spec.site(s), i, "on_demand") or 0.0
                pool_month = dict(site=s, instance=i, month=m, pricing=term)
                ln = B.var(f"sp_cover[{s}/{i}/{term}@{m:03d}]", "continuous", None, family="sp_cover",
                           usd={"cloud_compute": -od}, **pool_month)
                B.vars[ln] = _scaled(B.vars[ln])
                level[(s, i, term, m)] = ln
                spent[ln] = rate
                for c, o, h in _part_month_jobs(st, s, i, m):
                    jn = B.var(f"sp_cover[{c.id}/{term}@{m:03d}]", "continuous", None, family="sp_cover_job",
                               usd={"cloud_compute": -od}, workload=c.workload, candidate=c.id, site=s, instance=i,
                               month=m, pricing=term)
                    B.vars[jn] = _scaled(B.vars[jn])
                    spent[jn] = rate
                    jobs_rows.append((c, jn, rate, h))
            for cn in active:
                spent[cn] = spent.get(cn, 0.0) - HOURS_PER_MONTH
            B.con(f"sp_commit[{term}@{m:03d}]", "cloud_capacity", spent, "<=", 0.0, "$.sites",
                  f"usage a {term} Savings Plan covers in month {m} is within its commitment",
                  family="sp_commit", pricing=term, month=m)
            level_use = {n: r / HOURS_PER_MONTH for n, r in spent.items() if B.vars[n].family == "sp_cover"}
            for c, jn, rate, h in jobs_rows:
                row = {jn: rate, **{cn: -h for cn in active}, **{n: h * v for n, v in level_use.items()}}
                B.con(f"sp_hours[{c.id}/{term}@{m:03d}]", "cloud_capacity", row, "<=", 0.0, "$.sites",
                      f"{c.id}'s {h:.0f} hours in month {m} meet only the {term} commitment the all-month "
                      f"usage leaves free", family="sp_hours", workload=c.workload, candidate=c.id, month=m,
                      pricing=term)
    _pool_rows(st, level)
    if rule == "continues":
        _tails(st, rates, made, level, last_load)
    return made


def _scaled(v):
    """Node-hours go to the solver as node-months, as on-demand hours do (Variable.scale)."""
    from dataclasses import replace
    return replace(v, scale=HOURS_PER_MONTH)


def _pool_rows(st, level: Mapping[tuple[str, str, str, int], str]) -> None:
    """sp_level[p@m] and sp_job[c@m]: what the terms cover of a pool-month is on-demand usage."""
    B = st.B
    by_pool: dict[tuple[str, str, int], list[str]] = {}
    for (s, i, _term, m), ln in sorted(level.items()):
        by_pool.setdefault((s, i, m), []).append(ln)
    for (s, i, m), lns in sorted(by_pool.items()):
        jobs = _part_month_jobs(st, s, i, m)
        row = {ln: 1.0 for ln in lns}
        row[st.od_vars[(s, i, m)]] = -1.0
        for c, o, _h in jobs:
            for k, v in o.items():
                row[k] = row.get(k, 0.0) + v
            jrow = {n: 1.0 for n, var in B.vars.items()
                    if var.family == "sp_cover_job" and var.candidate == c.id and var.month == m}
            jrow.update({k: -v for k, v in o.items()})
            B.con(f"sp_job[{c.id}@{m:03d}]", "cloud_capacity", jrow, "<=", 0.0, "$.sites",
                  f"a Savings Plan covers only {c.id}'s on-demand hours in month {m}", family="sp_job",
                  workload=c.workload, candidate=c.id, month=m)
        B.con(f"sp_level[{s}/{i}@{m:03d}]", "cloud_capacity", row, "<=", 0.0, "$.sites",
              f"a Savings Plan covers {i} at {s} in month {m} no more than its on-demand usage that runs "
              f"all month", family="sp_level", site=s, instance=i, month=m)


def _tails(st, rates, made: list[SavingsPlanTerm], level, last_load) -> None:
    """(16) for Savings Plans: months after the horizon paid where the last month's covered level
    load leaves the commitment unused."""
    B, H = st.B, st.H
    credit: dict[str, dict[str, float]] = {}
    for (s, i, term, m), ln in sorted(level.items()):
        if m != H - 1:
            continue
        gn = B.var(f"sp_credit[{s}/{i}/{term}]", "continuous", None, family="sp_credit", site=s, instance=i,
                   pricing=term)
        B.con(f"sp_credit[{s}/{i}/{term}]", "after_horizon", {gn: 1.0, ln: -1.0}, "<=", 0.0,
              "$.policy.after_horizon", f"the {term} credit of {i} at {s} is usage it covers in month {H - 1}",
              family="sp_credit", site=s, instance=i, pricing=term)
        credit.setdefault(term, {})[gn] = rates[term][(s, i)] / HOURS_PER_MONTH
        pool = credit.setdefault(f"{s}/{i}", {})
        pool[gn] = 1.0
    for key, gns in sorted(credit.items()):
        if "/" not in key:
            continue
        s, i = key.split("/", 1)
        row = dict(gns)
        for k, v in last_load.get((s, i), {}).items():
            row[k] = row.get(k, 0.0) - v
        B.con(f"sp_credit[{s}/{i}]", "after_horizon", row, "<=", 0.0, "$.policy.after_horizon",
              f"the Savings Plan credit of {i} at {s} is the load the last month credits",
              family="sp_credit", site=s, instance=i)
    for term in sorted(rates):
        mine = [p for p in made if p.term == term]
        tm = unit_costs.SAVINGS_PLAN_MONTHS[term]
        ends = sorted({p.start + tm for p in mine if p.start + tm > H})
        j = H
        for end in ends:
            run = range(j, end)
            j = end
            active = [p.var for p in mine if p.start <= run.start < p.start + tm]
            if not active:
                continue
            tn = B.var(f"sp_tail[{term}@{run.start:03d}]", "continuous", None, family="sp_tail", pricing=term,
                       usd={"cloud_compute": HOURS_PER_MONTH * len(run)})
            row = {tn: 1.0, **{cn: -1.0 for cn in active}, **credit.get(term, {})}
            B.con(f"sp_tail[{term}@{run.start:03d}]", "after_horizon", row, ">=", 0.0, "$.policy.after_horizon",
                  f"{term} commitments in months {run.start}-{run.stop - 1} are paid where the last month's "
                  f"covered usage leaves them unused", family="sp_tail", pricing=term)
