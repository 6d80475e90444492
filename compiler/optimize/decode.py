"""Solution -> Plan: read the solver's values back into pools, placements and costs.

Shared costs are attributed to workloads by their GPU-hours in the pool (cloud on-demand and
reserved, on-prem capex/support/fabric) or by TB-months (storage); power, spot and egress are
direct. The workload costs therefore add up to the total.
"""

from __future__ import annotations

import math
from collections import defaultdict

from compiler.candidates import Candidate, TrainingEstimate
from compiler.optimize import costs
from compiler.optimize import formulate as F
from compiler.optimize.alternatives import alternatives, standalone_cost
from compiler.optimize.solve import Solution
from compiler.plan import (LayoutPlan, Placement, Plan, Pool, SitePlan, SolverInfo, StoragePlan,
                           WorkloadPlan)
from compiler.spec import HOURS_PER_MONTH, CloudSite, InferenceWorkload

CATEGORIES = ("capex", "power", "support", "fabric", "cloud_compute", "storage", "egress")
BINDING_GROUPS = ("power", "racks", "max_gpus", "quota", "cloud_share")


def _r(v: float) -> float:
    return round(v, 2)


def decode(problem: F.Problem, sol: Solution) -> Plan:
    spec, cat = problem.spec, problem.candidates.catalog
    H = spec.horizon_months
    val = sol.values
    var = {v.name: v for v in problem.variables}

    def value(name: str) -> float:
        x = val.get(name, 0.0)
        return float(round(x)) if var.get(name) and var[name].kind != "continuous" else x

    breakdown = {k: 0.0 for k in CATEGORIES}
    for v in problem.variables:
        q = value(v.name)
        for cat_name, usd in v.costs:
            breakdown[cat_name] = breakdown.get(cat_name, 0.0) + usd * q
    total = sum(breakdown.values())

    # --- what was chosen ---------------------------------------------------------------
    train: dict[str, Candidate] = {}
    infer: dict[str, list[tuple[Candidate, list[int]]]] = {}
    for w in spec.workloads:
        cands = problem.chosen_from[w.name]
        if isinstance(w, InferenceWorkload):
            rows = []
            for c in cands:
                reps = [int(value(F.y_name(c, m))) for m in range(H)]
                if any(reps):
                    rows.append((c, reps))
            infer[w.name] = rows
        else:
            picked = [c for c in cands if value(F.x_name(c)) > 0.5]
            train[w.name] = picked[0] if picked else cands[0]

    # GPU-hours per (pool key, workload) and per month, for attribution and utilization.
    gpu_hours: dict[tuple, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    used_nodes: dict[tuple, list[float]] = defaultdict(lambda: [0.0] * H)
    used_hours: dict[tuple, list[float]] = defaultdict(lambda: [0.0] * H)
    direct: dict[str, float] = defaultdict(float)
    monthly = [0.0] * H
    for name, c in train.items():
        key = (c.site, c.instance, "spot" if c.spot else "pool")
        xv = var[F.x_name(c)]
        for cat_name, usd in xv.costs:
            direct[name] += usd
        hours_total = sum(h for m, h in c.usage if m < H) or 1.0
        for m, h in c.usage:
            if m < H and h > 0:
                gpu_hours[key][name] += c.gpus * h
                used_nodes[key][m] += c.nodes
                used_hours[key][m] += c.nodes * h
                monthly[m] += xv.cost * h / hours_total
    for name, rows in infer.items():
        for c, reps in rows:
            for m, r in enumerate(reps):
                if r:
                    gpu_hours[(c.site, c.instance, "pool")][name] += r * c.gpus * HOURS_PER_MONTH
                    used_nodes[(c.site, c.instance, "pool")][m] += r * c.gpus / c.gpus_per_node
                    used_hours[(c.site, c.instance, "pool")][m] += r * c.gpus / c.gpus_per_node * HOURS_PER_MONTH
                    yv = var[F.y_name(c, m)]
                    direct[name] += yv.cost * r
                    monthly[m] += yv.cost * r

    # Shared costs by pool / site from the pool variables.
    shared: dict[tuple, float] = defaultdict(float)
    for v in problem.variables:
        q = value(v.name)
        if not q or not v.cost or v.name.startswith(("x[", "y[")):
            continue
        head, inner = v.name.split("[", 1)
        inner = inner.rstrip("]")
        month = int(inner.split("@")[1]) if "@" in inner else None
        parts = inner.split("@")[0].split("/")
        if head in ("storage", "storage_peak"):
            shared[("storage", parts[0])] += v.cost * q
        else:
            shared[(parts[0], parts[1], "pool")] += v.cost * q
        if head == "reserved":
            term = costs.TERM_MONTHS[parts[2]]
            start = int(inner.split("@")[1])
            span = list(range(start, min(H, start + term)))
            for m in span:
                monthly[m] += v.cost * q / len(span)
        elif month is not None:
            monthly[month] += v.cost * q
        else:
            for m in range(H):
                monthly[m] += v.cost * q / H

    workload_cost = dict(direct)
    for key, amount in shared.items():
        if key[0] == "storage":
            continue
        users = gpu_hours.get(key, {})
        tot = sum(users.values())
        for name, gh in users.items():
            workload_cost[name] = workload_cost.get(name, 0.0) + amount * gh / tot
    # Storage: by TB-months of dataset + checkpoints at the site.
    tb_months: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for name, c in train.items():
        w = spec.workload(name)
        need = (w.data.dataset_tb if w.data else 0.0) + costs.checkpoint_tb(w, cat)
        tb_months[c.site][name] += need * sum(1 for m, h in c.usage if h > 0 and m < H)
    for (_, site), amount in ((k, a) for k, a in shared.items() if k[0] == "storage"):
        users = tb_months.get(site, {})
        tot = sum(users.values())
        for name, tbm in users.items():
            workload_cost[name] = workload_cost.get(name, 0.0) + (amount * tbm / tot if tot else 0.0)

    pools = _pools(problem, value, train, infer, used_nodes, used_hours)
    workloads = tuple(_workload_plan(problem, w, train, infer, workload_cost, pools, value)
                      for w in sorted(spec.workloads, key=lambda w: w.name))
    used_sites = sorted({p.site for w in workloads for p in w.placements})
    sites = []
    for s in used_sites:
        site = spec.site(s)
        orch = sorted({w.orchestrator for w in workloads if any(p.site == s for p in w.placements)})
        sites.append(SitePlan(s, site.type, getattr(site, "provider", None), getattr(site, "region", None),
                              tuple(orch)))

    return Plan(
        spec_name=spec.name, spec_sha256=spec.sha256, catalog_version=cat.version, horizon_months=H,
        solver=SolverInfo(sol.solver, sol.status, _r(sol.objective), _r(sol.best_bound),
                          round(sol.gap, 6), round(sol.seconds, 3)),
        total_cost_usd=_r(total),
        cost_breakdown_usd={k: _r(v) for k, v in sorted(breakdown.items())},
        sites=tuple(sites), pools=pools, workloads=workloads,
        storage=_storage(problem, value),
        binding_constraints=_binding(problem, value),
        monthly_cost_usd=tuple(_r(x) for x in monthly),
        breakeven=_breakeven(problem),
    )


def _pools(problem, value, train, infer, used_nodes, used_hours) -> tuple[Pool, ...]:
    spec, cat = problem.spec, problem.candidates.catalog
    H = spec.horizon_months
    out = []
    keys = sorted(used_nodes)
    for (s, i, kind) in keys:
        site = spec.site(s)
        nodes_m = used_nodes[(s, i, kind)]
        hours_m = used_hours[(s, i, kind)]
        if isinstance(site, CloudSite):
            inst = cat.instances[i]
            if kind == "spot":
                mn = tuple(int(math.ceil(n - 1e-9)) for n in nodes_m)
                out.append(_pool(s, i, inst.gpu, inst.gpus, "spot", inst.fabric, mn,
                                 [h / (n * HOURS_PER_MONTH) if n else 0.0 for h, n in zip(hours_m, mn)]))
                continue
            reserved = {}
            for term in F.TERMS:
                tm = costs.TERM_MONTHS[term]
                r = [0] * H
                for a in range(H):
                    q = int(value(F.res_name(s, i, term, a)))
                    for m in range(a, min(H, a + tm)):
                        r[m] += q
                reserved[term] = r
            total_r = [sum(reserved[t][m] for t in F.TERMS) for m in range(H)]
            for term in F.TERMS:
                r = reserved[term]
                if any(r):
                    util = [min(1.0, hours_m[m] / (total_r[m] * HOURS_PER_MONTH)) if total_r[m] else 0.0
                            for m in range(H)]
                    out.append(_pool(s, i, inst.gpu, inst.gpus, term, inst.fabric, tuple(r), util))
            od_hours = [value(F.od_name(s, i, m)) for m in range(H)]
            od_nodes = tuple(int(math.ceil(max(0.0, nodes_m[m] - total_r[m]) - 1e-9)) if od_hours[m] > 1e-6 else 0
                             for m in range(H))
            if any(od_nodes):
                util = [od_hours[m] / (od_nodes[m] * HOURS_PER_MONTH) if od_nodes[m] else 0.0 for m in range(H)]
                out.append(_pool(s, i, inst.gpu, inst.gpus, "on_demand", inst.fabric, od_nodes, util))
        else:
            node = cat.onprem_nodes[i]
            owned = F.owned_nodes(site, i)
            bought = int(value(F.buy_name(s, i)))
            fabric = _fabric(problem, value, s, i)
            gpus_m = [n * node.gpus for n in nodes_m]
            own_m = tuple(min(owned, int(math.ceil(n - 1e-9))) for n in nodes_m)
            buy_m = tuple(max(0, int(math.ceil(n - 1e-9)) - owned) for n in nodes_m)
            if owned and any(own_m):
                out.append(Pool(s, i, node.gpu, node.gpus, owned, "owned", fabric, own_m,
                                tuple(round(min(1.0, g / (owned * node.gpus)), 6) for g in gpus_m)))
            if bought:
                out.append(Pool(s, i, node.gpu, node.gpus, bought, "purchase", fabric, buy_m,
                                tuple(round(max(0.0, g - owned * node.gpus) / (bought * node.gpus), 6)
                                      for g in gpus_m)))
    return tuple(sorted(out, key=lambda p: (p.site, p.instance, p.pricing)))


def _pool(s, i, gpu, gpn, pricing, fabric, monthly_nodes, util) -> Pool:
    return Pool(s, i, gpu, gpn, max(monthly_nodes) if monthly_nodes else 0, pricing, fabric,
                tuple(monthly_nodes), tuple(round(min(1.0, u), 6) for u in util))


def _fabric(problem, value, s, i) -> str:
    fabrics = sorted({c.fabric for cs in problem.chosen_from.values() for c in cs
                      if c.site == s and c.instance == i and not F.fabric_free(c)})
    for f in fabrics:
        if value(F.fab_name(s, i, f)) > 0.5:
            return f
    # No multi-node job chose a wiring: the pool gets the cheapest one offered (formulate
    # charged every bought node for it).
    return problem.base_fabrics.get((s, i), "")


def _pricing(c: Candidate, pools: tuple[Pool, ...], pinned: str | None = None) -> str:
    if c.spot:
        return "spot"
    if pinned and c.site_type == "cloud":
        return pinned       # formulate (12a) holds the job to it
    mine = [p for p in pools if p.site == c.site and p.instance == c.instance]
    if c.site_type == "on_prem":
        return "purchase" if any(p.pricing == "purchase" for p in mine) else "owned"
    months = [m for m, h in c.usage if h > 0] or list(range(len(mine[0].monthly_nodes) if mine else 0))
    best, most = "on_demand", 0
    for p in mine:
        if p.pricing.startswith("reserved"):
            n = sum(p.monthly_nodes[m] for m in months if m < len(p.monthly_nodes))
            if n > most:
                best, most = p.pricing, n
    return best


def _workload_plan(problem, w, train, infer, workload_cost, pools, value) -> WorkloadPlan:
    alts_for = lambda c: alternatives(problem, w.name, c)  # noqa: E731
    if not isinstance(w, InferenceWorkload):
        c = train[w.name]
        e: TrainingEstimate = c.estimate
        est = {"memory_gb_per_gpu": e.memory_gb_per_gpu, "duration_hours": e.duration_hours, "mfu": e.mfu}
        est["samples_per_s" if e.samples_per_s is not None and e.tokens_per_s is None else "tokens_per_s"] = (
            e.samples_per_s if e.samples_per_s is not None and e.tokens_per_s is None else e.tokens_per_s)
        placement = Placement(c.site, c.instance, _pricing(c, pools, F.pinned_cloud_pricing(w)), c.nodes, c.gpus)
        return WorkloadPlan(w.name, "training", c.gpu, c.gpus, _layout(c), (placement,), est,
                            _r(workload_cost.get(w.name, 0.0)), w.orchestrator, c.start_month, alts_for(c))
    rows = infer[w.name]
    demand = problem.demand[w.name]
    peak_m = max(range(len(demand)), key=lambda m: (demand[m], m)) if demand else 0
    placements = []
    for (site, inst) in sorted({(c.site, c.instance) for c, _ in rows}):
        mine = [(c, reps) for c, reps in rows if (c.site, c.instance) == (site, inst)]
        months = range(len(demand))
        reps_peak = max(sum(r[m] for _, r in mine) for m in months)
        gpus_peak = max(sum(c.gpus * r[m] for c, r in mine) for m in months)
        first = max(mine, key=lambda t: (max(t[1]), t[0].id))[0]
        placements.append(Placement(site, inst, _pricing(first, pools),
                                    int(math.ceil(gpus_peak / first.gpus_per_node)), gpus_peak, reps_peak))
    main = max(rows, key=lambda r: (max(r[1]), r[0].id))[0] if rows else problem.chosen_from[w.name][0]
    e = main.estimate
    capacity = sum(c.estimate.tokens_per_s * reps[peak_m] for c, reps in rows)
    est = {"memory_gb_per_gpu": e.memory_gb_per_gpu, "tokens_per_s": capacity, "ttft_ms": e.ttft_ms,
           "tpot_ms": e.tpot_ms, "batch": e.batch}
    peak_gpus = max((sum(c.gpus * reps[m] for c, reps in rows) for m in range(len(demand))), default=0)
    peak_replicas = max((sum(reps[m] for _, reps in rows) for m in range(len(demand))), default=0)
    return WorkloadPlan(w.name, "inference", main.gpu, peak_gpus, _layout(main),
                        tuple(sorted(placements, key=lambda p: (p.site, p.instance))), est,
                        _r(workload_cost.get(w.name, 0.0)), w.orchestrator, w.window.start_month,
                        alts_for(main), peak_replicas)


def _layout(c: Candidate) -> LayoutPlan:
    return LayoutPlan(c.layout.tp, c.layout.pp, c.layout.dp, c.layout.ep)


def _storage(problem, value) -> tuple[StoragePlan, ...]:
    out = []
    for v in problem.variables:
        if not v.name.startswith("storage["):
            continue
        inner = v.name[len("storage["):-1]
        site, tier = inner.split("@")[0].split("/")
        out.append((site, tier, value(v.name), v.cost * value(v.name)))
    agg: dict[tuple[str, str], list[float]] = {}
    for site, tier, tb, usd in out:
        a = agg.setdefault((site, tier), [0.0, 0.0])
        a[0] = max(a[0], tb)
        a[1] += usd
    for v in problem.variables:
        if v.name.startswith("storage_peak["):
            site, tier = v.name[len("storage_peak["):-1].split("/")
            if (site, tier) in agg:
                agg[(site, tier)][1] += v.cost * value(v.name)
    return tuple(StoragePlan(s, t, round(tb, 3), _r(usd)) for (s, t), (tb, usd) in sorted(agg.items()) if tb > 1e-9)


def _binding(problem, value) -> tuple[str, ...]:
    seen: dict[str, str] = {}
    for c in problem.constraints:
        if c.group not in BINDING_GROUPS:
            continue
        lhs = sum(a * value(n) for n, a in c.terms)
        slack = c.rhs - lhs if c.sense == "<=" else lhs - c.rhs
        tol = 1e-6 * max(1.0, abs(c.rhs))
        if c.group == "power":
            # binding when not even one more of the pool's nodes would fit
            tol = max(tol, min((a for _, a in c.terms), default=0.0))
        elif c.group == "quota":
            tol = max(tol, 7.999)
        elif c.group == "racks":
            tol = max(tol, min((a for _, a in c.terms), default=0.0))
        if slack <= tol and (c.group != "cloud_share" or c.terms):
            family = c.name.split("@")[0].rstrip("]") + ("]" if "[" in c.name else "")
            family = family if family.count("[") == family.count("]") else family + "]"
            seen.setdefault(family, f"{family} at {c.path}: {c.meaning}")
    return tuple(seen[k] for k in sorted(seen))


def _breakeven(problem) -> tuple[dict, ...]:
    """Per workload with both cloud and on-prem candidates: owning one GPU against renting it
    on demand, in the plan schema's `breakeven` shape (per GPU, so workloads compare).

    breakeven_months: months of full use after which buying (capex + fabric) is cheaper.
    breakeven_utilization: the share of the horizon a GPU must be busy for owning (capex
    credited for the horizon, support every month, power only while busy) to be cheaper.
    """
    spec, cat = problem.spec, problem.candidates.catalog
    horizon = spec.horizon_months
    rows = []
    for w in sorted(spec.workloads, key=lambda w: w.name):
        cands = problem.chosen_from.get(w.name, ())
        cloud = [c for c in cands if c.site_type == "cloud" and not c.spot]
        onprem = [c for c in cands if c.site_type == "on_prem"]
        if not cloud or not onprem:
            continue
        priced = [(standalone_cost(problem, c), c.id, c) for c in cloud]
        priced = [p for p in priced if p[0] is not None]
        op = [(standalone_cost(problem, c), c.id, c) for c in onprem]
        op = [p for p in op if p[0] is not None]
        if not priced or not op:
            continue
        cc = min(priced)[2]
        oc = min(op)[2]
        price = costs.cloud_price(cat, spec.site(cc.site), cc.instance, "on_demand") or 0.0
        cloud_gpu_month = price * HOURS_PER_MONTH / cc.gpus_per_node
        node = cat.onprem_nodes[oc.instance]
        site = spec.site(oc.site)
        fabric = cat.fabrics.get(oc.fabric)
        capex_gpu = (node.capex_usd + (costs.fabric_cost_per_node(fabric) if fabric else 0.0)) / node.gpus
        power_gpu_month = HOURS_PER_MONTH * costs.power_usd_per_node_hour(node, site) / node.gpus
        support_gpu_month = node.support_usd_per_year / 12.0 / node.gpus
        saving = cloud_gpu_month - power_gpu_month - support_gpu_month
        credited = capex_gpu * min(1.0, horizon / (node.useful_life_years * 12.0))
        margin = horizon * (cloud_gpu_month - power_gpu_month)
        gpus = cc.gpus if cc.kind == "training" else cc.gpus_per_node
        rows.append({
            "gpu": oc.gpu, "on_prem_site": oc.site, "on_prem_instance": oc.instance,
            "cloud_site": cc.site, "cloud_instance": cc.instance, "cloud_pricing": "on_demand",
            "on_prem_capex_usd_per_gpu": _r(capex_gpu),
            "on_prem_opex_usd_per_gpu_month": _r(power_gpu_month + support_gpu_month),
            "cloud_usd_per_gpu_month": _r(cloud_gpu_month),
            "breakeven_months": round(capex_gpu / saving, 2) if saving > 0 else None,
            "breakeven_utilization": (round((credited + horizon * support_gpu_month) / margin, 3)
                                      if margin > 0 else None),
            "note": f"{w.name}: {gpus} GPUs, {cc.gpu} in the cloud against {oc.gpu} owned",
        })
    return tuple(rows)
