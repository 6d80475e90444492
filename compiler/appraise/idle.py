"""Owned nodes the plan leaves idle, and what made using them dearer than what the plan chose.

Idle: an on-prem site's owned nodes of a model (`owned`) that the plan's owned pool there holds
for nothing in a month (the pool's monthly_nodes below the owned count; no pool: all of them).
Consecutive months with idle owned nodes form one run; per run, one row per workload that could
be running then (a candidate of it, anywhere, runs in a month of the run; a service: it has
demand then) and that holds none of these owned nodes in the plan. Its reason, by computation:

  not_allowed   no candidate of the workload on that (site, model) survives policy, its sites or
                its pin (the first rule that excludes one, as problem.policy_filter states it); where
                the estimate made none, its first rejection there (memory, deadline) or "no
                candidate".
  too_big       every candidate there needs more nodes than the site owns.
  dearer        the cheapest candidate on owned nodes only, priced alone (alternatives.py's rule:
                power for its node-hours, egress of a dataset away from its home) plus the storage
                it would force at the site (training: dataset + checkpoints in each month it runs,
                beyond the site's storage.existing_tb, in the cheapest on-prem tier for it, at
                least that tier's minimum: capex x TB + $/TB-month x TB x months), costs more than
                the workload costs in the plan (WorkloadPlan.cost_usd).
  availability  a service that must survive the loss of any one site (slo.availability >= 0.999,
                formulate's rows (3)): its load is carried without this site whatever runs here, so
                the rule, not a price, keeps it off these nodes (checked before any price: wholly
                on one site is not a design the rule allows, so pricing it would compare nothing).
  cheaper_alone that option costs no more than the plan's figure: what the plan shares between
                workloads (terms, bought nodes, storage) keeps the workload elsewhere.

A run in which no workload could be running, or every one that could runs wholly on these
nodes already, gets one row with reason no_workload (detail "all here" in the second case).
A service placed partly elsewhere is priced as a whole on the owned nodes, so too_big may be
its reason although some of its replicas could move.
"""

from __future__ import annotations

from compiler import unit_costs
from compiler.estimate.memory import checkpoint_tb
from compiler.appraise.alternatives import _part, _service_use, _training_use
from compiler.problem import Problem, policy_filter
from compiler.plan import IdleOwned, Plan, month_range
from compiler.spec import InferenceWorkload, OnPremSite


def _r(v: float) -> float:
    return round(v, 2)


def forced_storage(problem: Problem, site: OnPremSite, tb: float, months: int) -> tuple[float, str, float]:
    """(USD, tier, TB bought) of holding `tb` at `site` for `months` months alone: what exceeds the
    storage the site already has, in its cheapest tier at that tier's minimum size or more."""
    beyond = tb - site.existing_storage_tb
    if beyond <= 1e-9 or months <= 0:
        return 0.0, "", 0.0
    best = None
    for t in unit_costs.storage_tiers(problem.candidates.catalog, site):
        size = max(beyond, t.min_tb)
        usd = size * (t.capex_usd_per_tb + t.usd_per_tb_month * months)
        if best is None or (usd, t.name) < (best[0], best[1]):
            best = (usd, t.name, size)
    return best if best is not None else (0.0, "", 0.0)


def _runs(idle: list[int]) -> list[tuple[int, int]]:
    runs: list[list[int]] = []
    for m, n in enumerate(idle):
        if n <= 0:
            continue
        if runs and runs[-1][1] == m - 1:
            runs[-1][1] = m
        else:
            runs.append([m, m])
    return [(a, b) for a, b in runs]


def _active(problem: Problem, w, first: int, last: int) -> bool:
    if isinstance(w, InferenceWorkload):
        demand = problem.demand.get(w.name) or ()
        return any(d > 0 for m, d in enumerate(demand) if first <= m <= last)
    return any(first <= m <= last and h > 0 for c in problem.candidates.by_workload.get(w.name, ())
               for m, h in c.usage)


def _spec_rule(problem: Problem, w, s: str, i: str) -> str | None:
    """The spec's rule that keeps w off node model i at site s, if any (policy, sites, pin)."""
    pol, pin = problem.spec.policy, w.pin
    gpu = problem.candidates.catalog.onprem_nodes[i].gpu
    if pol.placement == "cloud":
        return "policy.placement is cloud"
    if pol.allowed_gpus is not None and gpu not in pol.allowed_gpus:
        return f"{gpu} not in policy.allowed_gpus"
    if w.sites and s not in w.sites:
        return f"{s} not in the workload's sites"
    if pin is not None:
        for key, value, here in (("site", pin.site, s), ("gpu", pin.gpu, gpu), ("instance", pin.instance, i)):
            if value and value != here:
                return f"pinned to {key} {value}"
        if pin.pricing in ("on_demand", "spot", "reserved_1y", "reserved_3y"):
            return f"pinned to {pin.pricing} pricing (cloud)"
        if pin.pricing == "purchase":
            return "pinned to bought nodes"
    return None


def _why_not(problem: Problem, w, s: str, i: str) -> str:
    """Why no candidate of w runs on (s, i): the spec's rule, else the filter's first reason, else
    the estimate's first rejection there."""
    rule = _spec_rule(problem, w, s, i)
    if rule:
        return rule
    here = [c for c in problem.candidates.by_workload.get(w.name, ()) if c.site == s and c.instance == i]
    if here:
        _kept, why = policy_filter(problem.spec, w, tuple(here))
        return why[0][1] if why else "no candidate"
    for r in problem.candidates.rejected.get(w.name, ()):
        if r.site == s and r.instance == i:
            return r.reason
    return "no candidate"


def _price(problem: Problem, w, c, owned: int) -> dict | None:
    """The candidate alone on owned nodes only, with the storage it forces; None if it cannot."""
    spec, H = problem.spec, problem.spec.horizon_months
    site = spec.site(c.site)
    if isinstance(w, InferenceWorkload):
        use = _service_use(problem, w, c, 1.0)
        if use is None:
            return None
        part = _part(problem, w, c, use, c.gpus)
        storage, data_tb = (0.0, "", 0.0), 0.0
    else:
        use = _training_use(c)
        part = _part(problem, w, c, use, c.gpus)
        months = sum(1 for m, h in c.usage if m < H and h > 0)
        data_tb = (w.data.dataset_tb if w.data else 0.0) + checkpoint_tb(w, problem.candidates.catalog)
        storage = forced_storage(problem, site, data_tb, months)
    if part is None or part.pricing != "owned" or use.nodes > owned:
        return None
    egress = 0.0
    if part.egress_tb:
        egress = part.egress_tb * unit_costs.egress_usd_per_tb(problem.candidates.catalog, spec.site(w.data.home))
    return {"candidate": c.id, "nodes": use.nodes, "power_usd": part.cost_usd - egress,
            "egress_usd": egress, "storage_usd": storage[0], "storage_tier": storage[1],
            "storage_tb": storage[2], "data_tb": data_tb, "usd": part.cost_usd + storage[0]}


def _row(problem: Problem, plan: Plan, w, s: str, i: str, owned: int) -> dict:
    """An IdleOwned's fields for workload w (its run's fields aside)."""
    ok = [c for c in problem.chosen_from.get(w.name, ()) if c.site == s and c.instance == i]
    plan_usd = next(x.cost_usd for x in plan.workloads if x.name == w.name)
    row = {"workload": w.name, "plan_usd": _r(plan_usd), "owned_option_usd": None, "power_usd": 0.0,
           "storage_usd": 0.0, "storage_tier": "", "storage_tb": 0.0, "data_tb": 0.0, "egress_usd": 0.0,
           "candidate": ""}
    rule = _spec_rule(problem, w, s, i)
    if rule or not ok:
        return {**row, "reason": "not_allowed", "detail": rule or _why_not(problem, w, s, i)}
    if isinstance(w, InferenceWorkload) and w.slo.survives_site_loss:
        return {**row, "reason": "availability",
                "detail": f"slo.availability {w.slo.availability:g} (its load must be carried without {s})"}
    priced = [p for p in (_price(problem, w, c, owned) for c in ok) if p is not None]
    if not priced:
        fewest = min(c.nodes if not isinstance(w, InferenceWorkload) else 1 for c in ok)
        return {**row, "reason": "too_big",
                "detail": f"needs {fewest} nodes or more here, the site owns {owned}"}
    best = min(priced, key=lambda p: (p["usd"], p["candidate"]))
    row.update({k: (_r(v) if isinstance(v, float) else v) for k, v in best.items() if k in row})
    row["storage_tb"], row["data_tb"] = round(best["storage_tb"], 3), round(best["data_tb"], 3)
    row["owned_option_usd"] = _r(best["usd"])
    terms = {"storage": best["storage_usd"], "power": best["power_usd"], "egress": best["egress_usd"]}
    largest = max(terms, key=lambda k: (terms[k], k))
    if best["usd"] > plan_usd + 0.005:
        return {**row, "reason": "dearer", "detail": largest}
    return {**row, "reason": "cheaper_alone", "detail": largest}


def idle_owned(problem: Problem, plan: Plan) -> tuple[IdleOwned, ...]:
    """The plan's idle owned nodes, a row per run of months and workload (see the module docstring)."""
    spec, H = problem.spec, problem.spec.horizon_months
    rows = []
    for site in spec.sites:
        if not isinstance(site, OnPremSite):
            continue
        for i in sorted({o.instance for o in site.owned}):
            owned = site.owned_nodes(i)
            held = [0] * H
            for p in plan.pools:
                if p.site == site.name and p.instance == i and p.pricing == "owned":
                    held = [a + b for a, b in zip(held, list(p.monthly_nodes) + [0] * H)]
            idle = [max(0, site.owned_nodes(i, m) - n) for m, n in enumerate(held)]   # retired nodes idle no more
            # workloads wholly on these owned nodes: nothing of them is left to move here
            users = {w.name for w in plan.workloads if w.placements and all(
                p.site == site.name and p.instance == i and all(h.pricing == "owned" for h in p.holdings)
                for p in w.placements)}
            for first, last in _runs(idle):
                base = {"site": site.name, "instance": i, "owned_nodes": owned,
                        "idle_nodes": max(idle[first:last + 1]), "first_month": first, "last_month": last,
                        "months": month_range(first, last)}
                active = [w for w in sorted(spec.workloads, key=lambda w: w.name)
                          if _active(problem, w, first, last)]
                found = [w for w in active if w.name not in users]
                if not found:
                    rows.append(IdleOwned(**base, workload="", reason="no_workload",
                                          detail="all here" if active else "", plan_usd=None,
                                          owned_option_usd=None))
                for w in found:
                    rows.append(IdleOwned(**base, **_row(problem, plan, w, site.name, i, owned)))
    return tuple(rows)
