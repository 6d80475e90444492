"""Solution -> Plan: read the solver's values back into pools, placements and costs; nothing
priced beside the plan (alternatives, break-even, idle owned nodes, binding limits: compiler/appraise/,
which decode() calls last).

Which nodes each placement holds, per pricing and month, is allot.py's rule applied to every
pool and month (Placement.holdings); the pools say what the plan provides of each pricing and
the node-hours run on it. Shared costs go to the placements holding what they pay for (by
node-hours: a month's on-demand hours, a reserved term's months, bought nodes' capex, support
and fabric; idle reserved nodes to every user of the pool), storage by TB-months; power, spot and
egress are direct. The workload costs therefore add up to the total.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Mapping

from compiler.candidates import Candidate, TrainingEstimate
from compiler import unit_costs
from compiler.catalog import freshness
from compiler.estimate.memory import checkpoint_tb
from compiler import problem as F
from compiler.appraise import appraise
from compiler.problem import Solution
from compiler.readback.allot import Demand, Supply, allot, main_pricing
from compiler.readback.held import held_commitments, owned_ages
from compiler.readback.inputs import inputs_of
from compiler.readback import capacity_blocks, savings_plans
from compiler.plan import (COST_CATEGORIES, MONTHS_NOTE, NO_SEARCH_NOTE, PRICINGS, AfterHorizon, Commitment,
                           CostBreakdown, DisaggregationPlan, EstimateFigures, Holding, LayoutPlan, Placement, Plan,
                           Pool, Reservation,
                           SiteCost, SitePlan, SolvePath, SolverInfo, SpecInputs, StepBreakdown, StoragePlan,
                           TailCredit, WorkloadPlan)
from compiler.spec import HOURS_PER_MONTH, CloudSite, InferenceWorkload

CATEGORIES = COST_CATEGORIES
# The pricings whose nodes a pool's users share, and so their costs.
SHARED_PRICINGS = tuple(p for p in PRICINGS if p != "spot")
# (site, instance, pricing) -> month -> workload -> node-hours
Use = dict[tuple[str, str, str], list[dict[str, float]]]


def _r(v: float) -> float:
    return round(v, 2)


def decode(problem: F.Problem, sol: Solution, path: SolvePath = SolvePath()) -> Plan:
    """The Plan `sol` describes, appraised (compiler/appraise/); `path`: the solve path that made it
    (strategy.py), recorded in plan.json."""
    return appraise(problem, sol, read_back(problem, sol, path))


def read_back(problem: F.Problem, sol: Solution, path: SolvePath = SolvePath()) -> Plan:
    """The Plan `sol` indexes: pools, placements, holdings and costs, nothing appraised (no
    alternatives, break-even, idle owned nodes or binding limits)."""
    spec, cat = problem.spec, problem.candidates.catalog
    H = spec.horizon_months
    value = _reader(problem, sol)
    breakdown = _breakdown(problem, value)
    total = sum(breakdown.values())
    by_site = _site_bills(problem, value)
    train, infer = _chosen(problem, value)
    held = _allot(problem, value, train, infer)      # which nodes each placement holds (allot.py)
    workload_cost, monthly = _workload_costs(problem, value, train, infer, held)
    pools = _pools(problem, value, held)
    workloads = tuple(_workload_plan(problem, w, train, infer, workload_cost, held)
                      for w in sorted(spec.workloads, key=lambda w: w.name))
    sites = _sites(spec, workloads)
    prices = freshness.stamp(spec, cat)

    return Plan(
        spec_name=spec.name, spec_sha256=spec.sha256, catalog_version=cat.version, horizon_months=H,
        prices_as_of=prices.as_of if prices else "", prices_sha256=prices.sha256 if prices else "",
        solver=SolverInfo(sol.solver, sol.status, _r(sol.objective), _r(sol.best_bound),
                          round(sol.gap, 6), round(sol.seconds, 3), gap_note(problem, sol, path), path),
        total_cost_usd=_r(total),
        cost_breakdown_usd=CostBreakdown.of({k: _r(v) for k, v in breakdown.items()}),
        cost_by_site_usd=by_site,
        sites=tuple(sites), pools=pools, workloads=workloads,
        storage=_storage(problem, value),
        monthly_cost_usd=tuple(_r(x) for x in monthly),
        after_horizon=_after_horizon(problem, value, pools),
        held=held_commitments(spec, cat, pools),
        owned_ages=owned_ages(spec, cat),
        savings_plans=savings_plans.read(problem, value),
        capacity_blocks=capacity_blocks.read(problem, value),
    )


def _reader(problem: F.Problem, sol: Solution) -> Callable[[str], float]:
    """A variable's value in `sol`, integer variables rounded to whole numbers (0 if absent)."""
    val = sol.values
    var = {v.name: v for v in problem.variables}

    def value(name: str) -> float:
        x = val.get(name, 0.0)
        return float(round(x)) if var.get(name) and var[name].kind != "continuous" else x

    return value


def _breakdown(problem: F.Problem, value: Callable[[str], float]) -> dict[str, float]:
    """The plan's cost per breakdown category: every variable's costs at its value."""
    breakdown = {k: 0.0 for k in CATEGORIES}
    for v in problem.variables:
        q = value(v.name)
        for cat_name, usd in v.costs:
            breakdown[cat_name] = breakdown.get(cat_name, 0.0) + usd * q
    return breakdown


def _chosen(problem: F.Problem, value: Callable[[str], float]) -> tuple[
        dict[str, Candidate], dict[str, list[tuple[Candidate, list[int]]]]]:
    """What was chosen: each training job's candidate, and each service's candidates with their
    replicas month by month (those with any)."""
    H = problem.spec.horizon_months
    train: dict[str, Candidate] = {}
    infer: dict[str, list[tuple[Candidate, list[int]]]] = {}
    for w in problem.spec.workloads:
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
    return train, infer


def _sites(spec, workloads: tuple[WorkloadPlan, ...]) -> list[SitePlan]:
    """The sites any placement uses, each with the orchestrators its workloads run on."""
    sites = []
    for s in sorted({p.site for w in workloads for p in w.placements}):
        site = spec.site(s)
        orch = sorted({w.orchestrator for w in workloads if any(p.site == s for p in w.placements)})
        sites.append(SitePlan(s, site.type, getattr(site, "provider", None), getattr(site, "region", None),
                              tuple(orch)))
    return sites


def _workload_costs(problem: F.Problem, value: Callable[[str], float], train, infer,
                    held: "_Held") -> tuple[dict[str, float], list[float]]:
    """What each workload pays, and what each month costs: direct costs (power, spot, egress) as
    they are, shared ones to the placements holding what they pay for (_shared_costs), storage
    by TB-months. The workload costs add up to the total."""
    use = _use(problem.spec.horizon_months, held, train, infer)
    direct, monthly = _direct_costs(problem, train, infer)
    workload_cost = dict(direct)
    storage_shared = _shared_costs(problem, value, use, workload_cost, monthly)
    _storage_costs(problem, train, storage_shared, workload_cost)
    return workload_cost, monthly


def _use(H: int, held: "_Held", train, infer) -> Use:
    """Node-hours per (site, instance, pricing), month and workload: who uses what is paid for."""
    owner = {c.id: name for name, c in train.items()}
    owner.update({c.id: name for name, rows in infer.items() for c, _ in rows})
    use: Use = defaultdict(lambda: [defaultdict(float) for _ in range(H)])
    for cid, by_pricing in held.shares.items():
        c = held.candidates[cid]
        for pricing, (_nodes, hours) in by_pricing.items():
            for m, nh in enumerate(hours):
                if nh > 0:
                    use[(c.site, c.instance, pricing)][m][owner[cid]] += nh
    return use


def _weights(use: Use, site: str, inst: str, pricings, months) -> dict[str, float]:
    """Each workload's node-hours in one pool, over the given pricings and months."""
    out: dict[str, float] = defaultdict(float)
    for p in pricings:
        series = use.get((site, inst, p))
        if series:
            for m in months:
                for name, nh in series[m].items():
                    out[name] += nh
    return out


def _spread(workload_cost: dict[str, float], amount: float, *candidates: dict[str, float]) -> None:
    """To the first group of users with any node-hours, in proportion to them."""
    for wts in candidates:
        tot = sum(wts.values())
        if tot > 1e-9:
            for name, x in wts.items():
                workload_cost[name] = workload_cost.get(name, 0.0) + amount * x / tot
            return


def _direct_costs(problem: F.Problem, train, infer) -> tuple[dict[str, float], list[float]]:
    """The costs of the chosen candidates themselves (their x and y variables), per workload and
    month: a job's spread over its months by the hours it runs."""
    H = problem.spec.horizon_months
    var = {v.name: v for v in problem.variables}
    direct: dict[str, float] = defaultdict(float)
    monthly = [0.0] * H
    for name, c in train.items():
        xv = var[F.x_name(c)]
        direct[name] += xv.cost
        hours_total = sum(h for m, h in c.usage if m < H) or 1.0
        for m, h in c.usage:
            if m < H and h > 0:
                monthly[m] += xv.cost * h / hours_total
    for name, rows in infer.items():
        for c, reps in rows:
            for m, r in enumerate(reps):
                if r:
                    yv = var[F.y_name(c, m)]
                    direct[name] += yv.cost * r
                    monthly[m] += yv.cost * r
    return direct, monthly


def _shared_costs(problem: F.Problem, value: Callable[[str], float], use: Use, workload_cost: dict[str, float],
                  monthly: list[float]) -> dict[str, float]:
    """Shared costs go to the placements that hold what they pay for: on-demand node-hours of a
    month to its on-demand holders, a reserved term's months to that term's holders, bought
    nodes (capex, support, fabric) to the holders of bought nodes; where nobody holds them
    (idle reserved nodes), to every user of the pool that month, then over the horizon. Each
    is booked in its month too; storage is returned by site, to go by TB-months."""
    H = problem.spec.horizon_months
    all_months = range(H)
    reservation = {r.var: r for r in problem.reservations}
    storage_shared: dict[str, float] = defaultdict(float)
    for v in problem.variables:
        q = value(v.name)
        if not q or not v.cost or v.family in ("x", "y"):
            continue
        usd = v.cost * q
        month = v.month
        if v.family == "reserved":
            _reserved_cost(problem, reservation[v.name], usd, use, workload_cost, monthly)
            continue
        if savings_plans.spread(problem, v, usd, lambda s, i, p, ms: _weights(use, s, i, p, ms), workload_cost, monthly,
                          _spread):
            continue
        if capacity_blocks.spread(problem, v, usd, workload_cost, monthly):
            continue
        s, i = v.site, v.instance
        if v.family == "idle_tail":
            # decided by the last month's load: booked there, and to that month's users
            _spread(workload_cost, usd, _weights(use, s, i, SHARED_PRICINGS, (H - 1,)),
                    _weights(use, s, i, SHARED_PRICINGS, all_months))
            monthly[H - 1] += usd
            continue
        if v.family in ("storage", "storage_peak"):
            storage_shared[v.site] += usd
        elif v.family == "ondemand":
            _spread(workload_cost, usd, _weights(use, s, i, ("on_demand",), (month,)),
                    _weights(use, s, i, SHARED_PRICINGS, (month,)), _weights(use, s, i, SHARED_PRICINGS, all_months))
        elif v.instance is not None:       # an on-prem pool's bought nodes and their fabric
            # nodes nobody runs on (bought to keep a cloud-share limit) are every workload's alike
            _spread(workload_cost, usd, _weights(use, s, i, ("purchase",), all_months),
                    _weights(use, s, i, SHARED_PRICINGS, all_months),
                    {w.name: 1.0 for w in problem.spec.workloads})
        if month is not None:
            monthly[month] += usd
        else:
            for m in range(H):
                monthly[m] += usd / H
    return storage_shared


def _reserved_cost(problem: F.Problem, r, usd: float, use: Use, workload_cost: dict[str, float],
                   monthly: list[float]) -> None:
    """A reserved term's cost, month by month over its months (a non-empty range within the
    horizon, formulate) to that term's holders, then the pool's users, then (a term no one runs
    on) every workload alike, as bought nodes no one runs on; what it pays for months after the
    horizon is booked in the month it is bought, and goes to its holders as its months inside do."""
    H = problem.spec.horizon_months
    inside = usd * min(1.0, len(r.months) / unit_costs.term_months_charged(
        r.term, r.start, H, problem.spec.policy.after_horizon))
    share = usd / len(r.months)
    for m in r.months:
        _spread(workload_cost, share, _weights(use, r.site, r.instance, (r.term,), (m,)),
                _weights(use, r.site, r.instance, SHARED_PRICINGS, (m,)),
                _weights(use, r.site, r.instance, SHARED_PRICINGS, range(H)),
                {w.name: 1.0 for w in problem.spec.workloads})
        monthly[m] += inside / len(r.months)
    monthly[r.start] += usd - inside


def _storage_costs(problem: F.Problem, train, storage_shared: Mapping[str, float],
                   workload_cost: dict[str, float]) -> None:
    """Storage: each site's spend to its jobs by TB-months of dataset + checkpoints there."""
    spec, cat, H = problem.spec, problem.candidates.catalog, problem.spec.horizon_months
    tb_months: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for name, c in train.items():
        w = spec.workload(name)
        need = (w.data.dataset_tb if w.data else 0.0) + checkpoint_tb(w, cat)
        tb_months[c.site][name] += need * sum(1 for m, h in c.usage if h > 0 and m < H)
    for site, amount in storage_shared.items():
        users = tb_months.get(site, {})
        tot = sum(users.values())
        for name, tbm in users.items():
            workload_cost[name] = workload_cost.get(name, 0.0) + (amount * tbm / tot if tot else 0.0)


def _after_horizon(problem, value, pools: tuple[Pool, ...]) -> AfterHorizon:
    """Every pool's commitments after the horizon: reserved terms that end after it (at the
    term's rate) and bought nodes' useful life after it (capex straight line, from month 0);
    charged in full (`full`), for the idle nodes (`continues`: the idle_tail variables), or not
    at all (`prorated`: there are none)."""
    spec, cat, H = problem.spec, problem.candidates.catalog, problem.spec.horizon_months
    rule = spec.policy.after_horizon
    idle: dict[tuple[str, str, str], float] = defaultdict(float)
    credits = []
    for v in problem.variables:
        if v.family == "idle_tail":
            idle[(v.site, v.instance, v.pricing)] += v.cost * value(v.name)
        elif v.family == "tail_credit" and round(value(v.name), 6) > 0:
            credits.append(TailCredit(v.workload, v.candidate, v.site, v.instance, round(value(v.name), 6)))
    out = []
    for p in pools:
        if p.pricing in unit_costs.TERM_MONTHS:
            rate = unit_costs.cloud_price(cat, spec.site(p.site), p.instance, p.pricing) or 0.0
            # a term held from before the horizon (negative start) is sunk, after the horizon too
            late = [(r.nodes, unit_costs.term_months_after(p.pricing, r.start_month, H)) for r in p.reservations
                    if r.start_month >= 0]
            late = [(n, k) for n, k in late if n and k]
            node_months = float(sum(n * k for n, k in late))
            committed = rate * HOURS_PER_MONTH * node_months
        elif p.pricing == "purchase" and p.nodes:
            node = cat.onprem_nodes[p.instance]
            node_months = p.nodes * max(0.0, node.useful_life_years * 12.0 - H)
            committed = p.nodes * unit_costs.capex_after_horizon(node, H)
        else:
            continue
        if node_months <= 0:
            continue
        charged = committed if rule == "full" else idle[(p.site, p.instance, p.pricing)]
        nodes = p.nodes if p.pricing == "purchase" else sum(n for n, _k in late)
        out.append(Commitment(p.site, p.instance, p.pricing, nodes, node_months, _r(committed), _r(charged)))
    return AfterHorizon(rule, tuple(out), tuple(sorted(credits, key=lambda k: k.candidate)))


@dataclass
class _Held:
    """The allotment over the horizon (allot.py applied to every pool and month)."""
    candidates: dict[str, Candidate]
    # candidate id -> pricing -> (nodes per month, node-hours per month)
    shares: dict[str, dict[str, tuple[list[int], list[float]]]]
    in_use: dict[tuple[str, str, str], list[int]]      # (site, instance, pricing) -> nodes per month
    busy: dict[tuple[str, str, str], list[float]]      # nodes' worth busy at once
    hours: dict[tuple[str, str, str], list[float]]     # node-hours run per month, all placements
    reserved: dict[tuple[str, str, str], list[int]]    # (site, instance, term) -> reserved nodes
    by_start: dict[tuple[str, str, str], dict[int, int]]   # (site, instance, term) -> start -> nodes
    bought: dict[tuple[str, str], int]
    pools: list[tuple[str, str]]                       # every (site, instance) with a placement


def _pinned(w, c: Candidate) -> str | None:
    """The pricing a pin holds this candidate's work to (formulate (12a)), if any."""
    if c.spot:
        return "spot"
    if c.site_type == "cloud":
        return F.pinned_cloud_pricing(w)
    return F.pinned_onprem_pricing(w)


def _allot(problem, value, train, infer) -> _Held:
    spec = problem.spec
    H = spec.horizon_months
    cands: dict[str, Candidate] = {}
    demands: dict[tuple[str, str], list[list[Demand]]] = defaultdict(lambda: [[] for _ in range(H)])
    blocked = capacity_blocks.chosen(problem, value)
    for name, c in train.items():
        cands[c.id] = c
        # a job on a Capacity Block runs on-demand instances launched into it (capacity_blocks.py)
        pinned = "on_demand" if c.id in blocked else _pinned(spec.workload(name), c)
        series = demands[(c.site, c.instance)]
        for m, h in c.usage:
            if m < H and h > 0:
                series[m].append(Demand(c.id, name, "job", float(c.nodes), h, c.start_month, pinned))
    for name, rows in infer.items():
        for c, reps in rows:
            pinned = _pinned(spec.workload(name), c)
            cands[c.id] = c
            series = demands[(c.site, c.instance)]
            for m, r in enumerate(reps):
                if r:
                    series[m].append(Demand(c.id, name, "service", r * c.gpus / c.gpus_per_node,
                                            HOURS_PER_MONTH, c.start_month, pinned))
    # the terms bought, read once: nodes by start month, and the nodes reserved in each month (a
    # term's months are a non-empty range within the horizon, formulate)
    by_start: dict[tuple[str, str, str], dict[int, int]] = defaultdict(dict)
    reserved: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0] * H)
    for r in problem.reservations:
        q = round(value(r.var))
        if q:
            key = (r.site, r.instance, r.term)
            by_start[key][r.start] = by_start[key].get(r.start, 0) + q
            for m in r.months:
                reserved[key][m] += q
    # Every pool with a placement, every on-prem pool with nodes bought and every cloud pool with a
    # term reserved even where no placement runs on them (a cloud-share limit can make buying them
    # the cheapest plan; a search stopped at its node limit can leave a term no one uses): the plan
    # shows what it pays for.
    bought_idle = {(v.site, v.instance) for v in problem.variables
                   if v.family == "buy" and round(value(v.name)) > 0}
    with_terms = {(s, i) for (s, i, _term) in reserved}
    held = _Held(cands, {cid: {} for cid in cands}, defaultdict(lambda: [0] * H),
                 defaultdict(lambda: [0.0] * H), defaultdict(lambda: [0.0] * H), dict(reserved), dict(by_start),
                 {}, sorted(set(demands) | bought_idle | with_terms))
    for (s, i) in held.pools:
        site = spec.site(s)
        if isinstance(site, CloudSite):
            supply = lambda m: Supply("cloud", reserved_3y=reserved.get((s, i, "reserved_3y"), [0] * H)[m],  # noqa: E731
                                      reserved_1y=reserved.get((s, i, "reserved_1y"), [0] * H)[m])
        else:
            bought = round(value(F.buy_name(s, i)))
            held.bought[(s, i)] = bought
            # owned nodes serve until their useful life ends (spec.OwnedNodes.retires)
            supply = lambda m: Supply("on_prem", owned=F.owned_nodes(site, i, m), bought=bought)  # noqa: E731
        for m, month_demands in enumerate(demands[(s, i)]):
            if not month_demands:
                continue
            a = allot(supply(m), month_demands)
            for cid, shares in a.shares.items():
                for sh in shares:
                    nodes, hours = held.shares[cid].setdefault(sh.pricing, ([0] * H, [0.0] * H))
                    nodes[m], hours[m] = sh.nodes, sh.node_hours
                    held.hours[(s, i, sh.pricing)][m] += sh.node_hours
            for p, n in a.in_use.items():
                held.in_use[(s, i, p)][m] = n
            for p, b in a.busy.items():
                held.busy[(s, i, p)][m] = b
    return held


def _pools(problem, value, held: _Held) -> tuple[Pool, ...]:
    """Per (site, instance) and pricing: what the plan provides, month by month, and the
    node-hours the placements run on it (allot.py)."""
    spec, cat = problem.spec, problem.candidates.catalog
    H = spec.horizon_months
    out = []
    zeros = [0] * H

    def hours_of(s, i, p) -> list[float]:
        return held.hours.get((s, i, p), [0.0] * H)

    on_blocks = capacity_blocks.covered(problem, value)   # billed on demand here, credited by the blocks
    for (s, i) in held.pools:
        site = spec.site(s)
        if isinstance(site, CloudSite):
            inst = cat.instances[i]
            spot = held.in_use.get((s, i, "spot"), zeros)
            if any(spot):
                nh = hours_of(s, i, "spot")
                out.append(_pool(s, i, inst.gpu, inst.gpus, "spot", inst.fabric, spot,
                                 [h / (n * HOURS_PER_MONTH) if n else 0.0 for h, n in zip(nh, spot)], nh))
            for term in F.TERMS:
                r = held.reserved.get((s, i, term), zeros)
                if any(r):
                    nh = hours_of(s, i, term)
                    util = [nh[m] / (r[m] * HOURS_PER_MONTH) if r[m] else 0.0 for m in range(H)]
                    res = tuple(Reservation(a, n) for a, n in sorted(held.by_start[(s, i, term)].items()))
                    out.append(_pool(s, i, inst.gpu, inst.gpus, term, inst.fabric, r, util, nh, res))
            od = held.in_use.get((s, i, "on_demand"), zeros)
            if any(od):
                nh = hours_of(s, i, "on_demand")
                billed = [max(0.0, value(F.od_name(s, i, m))) + on_blocks.get((s, i, m), 0.0) for m in range(H)]
                util = [nh[m] / (od[m] * HOURS_PER_MONTH) if od[m] else 0.0 for m in range(H)]
                out.append(_pool(s, i, inst.gpu, inst.gpus, "on_demand", inst.fabric, od, util, billed))
        else:
            node = cat.onprem_nodes[i]
            owned = F.owned_nodes(site, i)
            bought = held.bought.get((s, i), 0)
            fabric = _fabric(problem, value, s, i)
            own_m = held.in_use.get((s, i, "owned"), zeros)
            buy_m = held.in_use.get((s, i, "purchase"), zeros)
            if owned and any(own_m):
                busy = held.busy.get((s, i, "owned"), [0.0] * H)
                out.append(_pool(s, i, node.gpu, node.gpus, "owned", fabric, own_m,
                                 [b / owned for b in busy], hours_of(s, i, "owned"), nodes=owned))
            if bought:
                busy = held.busy.get((s, i, "purchase"), [0.0] * H)
                out.append(_pool(s, i, node.gpu, node.gpus, "purchase", fabric, buy_m,
                                 [b / bought for b in busy], hours_of(s, i, "purchase"), nodes=bought))
    return tuple(sorted(out, key=lambda p: (p.site, p.instance, p.pricing)))


def _pool(s, i, gpu, gpn, pricing, fabric, monthly_nodes, util, node_hours, reservations=(),
          nodes: int | None = None) -> Pool:
    peak = max(monthly_nodes) if monthly_nodes else 0
    return Pool(s, i, gpu, gpn, peak if nodes is None else nodes, pricing, fabric,
                tuple(int(n) for n in monthly_nodes), tuple(round(max(0.0, min(1.0, u)), 6) for u in util),
                tuple(round(h, 6) for h in node_hours), tuple(reservations))


def _fabric(problem, value, s, i) -> str:
    fabrics = sorted({c.fabric for cs in problem.chosen_from.values() for c in cs
                      if c.site == s and c.instance == i and not F.fabric_free(c)})
    for f in fabrics:
        if value(F.fab_name(s, i, f)) > 0.5:
            return f
    # No multi-node job chose a wiring: the pool gets the cheapest one offered (formulate
    # charged every bought node for it).
    return problem.base_fabrics.get((s, i), "")


def _holdings(held: _Held, c: Candidate) -> tuple[Holding, ...]:
    by_pricing = held.shares.get(c.id, {})
    return tuple(Holding(p, tuple(by_pricing[p][0]), tuple(round(h, 6) for h in by_pricing[p][1]))
                 for p in PRICINGS if p in by_pricing)   # a share is only kept with node-hours > 0


def _pricing(c: Candidate, holdings: tuple[Holding, ...]) -> str:
    """The holding with the most node-hours (ties: PRICINGS order)."""
    return main_pricing([(h.pricing, sum(h.monthly_node_hours)) for h in holdings]) or F.pricing_of(c)


def _workload_plan(problem, w, train, infer, workload_cost, held: _Held) -> WorkloadPlan:
    H = problem.spec.horizon_months
    if not isinstance(w, InferenceWorkload):
        c = train[w.name]
        e: TrainingEstimate = c.estimate
        vision = e.samples_per_s is not None and e.tokens_per_s is None     # samples/s: its only throughput
        est = EstimateFigures(memory_gb_per_gpu=e.memory_gb_per_gpu, duration_hours=e.duration_hours, mfu=e.mfu,
                              tokens_per_s=None if vision else e.tokens_per_s,
                              samples_per_s=e.samples_per_s if vision else None,
                              step_breakdown=StepBreakdown(**dict(e.step_breakdown)) if e.step_breakdown else None)
        holdings = _holdings(held, c)
        placement = Placement(c.site, c.instance, _pricing(c, holdings), c.nodes, c.gpus, candidate=c.id,
                              holdings=holdings, layout=_layout(c))
        return WorkloadPlan(w.name, "training", c.gpu, c.gpus, _layout(c), (placement,), est,
                            _r(workload_cost.get(w.name, 0.0)), w.orchestrator, c.start_month,
                            inputs=SpecInputs.of(inputs_of(w)))
    rows = infer[w.name]
    demand = problem.demand[w.name]
    peak_m = max(range(len(demand)), key=lambda m: (demand[m], m)) if demand else 0
    placements = []
    for c, reps in rows:
        holdings = _holdings(held, c)
        peak = max(reps)
        nodes = max(math.ceil(r * c.gpus / c.gpus_per_node - 1e-9) for r in reps)
        placements.append(Placement(c.site, c.instance, _pricing(c, holdings), nodes, peak * c.gpus, peak,
                                    candidate=c.id, gpus_per_replica=c.gpus, holdings=holdings,
                                    monthly_replicas=tuple(reps[:H]), layout=_layout(c),
                                    batch=c.estimate.batch, disaggregation=_disaggregation(c)))
    main = max(rows, key=lambda r: (max(r[1]), r[0].id))[0] if rows else problem.chosen_from[w.name][0]
    e = main.estimate
    capacity = sum(c.estimate.tokens_per_s * reps[peak_m] for c, reps in rows)
    if w.vision:      # images/s at a batch latency; no tokens, no KV cache, served at 16 bits
        est = EstimateFigures(memory_gb_per_gpu=e.memory_gb_per_gpu, images_per_s=capacity, latency_ms=e.latency_ms,
                              batch=e.batch, weights_gb=e.weights_gb)
    else:
        est = EstimateFigures(memory_gb_per_gpu=e.memory_gb_per_gpu, tokens_per_s=capacity, ttft_ms=e.ttft_ms,
                              tpot_ms=e.tpot_ms, batch=e.batch, weights_gb=e.weights_gb)
    peak_gpus = max((sum(c.gpus * reps[m] for c, reps in rows) for m in range(len(demand))), default=0)
    peak_replicas = max((sum(reps[m] for _, reps in rows) for m in range(len(demand))), default=0)
    return WorkloadPlan(w.name, "inference", main.gpu, peak_gpus, _layout(main),
                        tuple(sorted(placements, key=lambda p: (p.site, p.instance, p.gpus_per_replica,
                                                                p.candidate))), est,
                        _r(workload_cost.get(w.name, 0.0)), w.orchestrator, w.window.start_month,
                        replicas=peak_replicas,
                        quantization="" if w.vision else w.quantization,
                        max_model_len=0 if w.vision else w.traffic.input_tokens + w.traffic.output_tokens,
                        availability=w.slo.availability, inputs=SpecInputs.of(inputs_of(w)))


def _disaggregation(c: Candidate) -> DisaggregationPlan | None:
    g = c.estimate.disaggregation
    return None if g is None else DisaggregationPlan(g.prefill_tp, g.prefill_instances, g.decode_tp,
                                                     g.decode_instances)


def _layout(c: Candidate) -> LayoutPlan:
    return LayoutPlan(c.layout.tp, c.layout.pp, c.layout.dp, c.layout.ep, c.layout.cp, c.layout.recompute)


def _storage(problem, value) -> tuple[StoragePlan, ...]:
    H = problem.spec.horizon_months
    agg: dict[tuple[str, str], list] = {}      # (site, tier) -> [peak TB, USD, TB per month]
    for v in problem.variables:
        if v.family != "storage":
            continue
        tb = value(v.name)
        a = agg.setdefault((v.site, v.tier), [0.0, 0.0, [0.0] * H])
        a[0] = max(a[0], tb)
        a[1] += v.cost * tb
        if 0 <= v.month < H:
            a[2][v.month] += tb
    for v in problem.variables:
        if v.family == "storage_peak" and (v.site, v.tier) in agg:
            agg[(v.site, v.tier)][1] += v.cost * value(v.name)
    return tuple(StoragePlan(s, t, round(tb, 3), _r(usd), tuple(round(x, 3) for x in monthly))
                 for (s, t), (tb, usd, monthly) in sorted(agg.items()) if tb > 1e-9)


def _site_bills(problem, value) -> tuple[SiteCost, ...]:
    """What each site bills, per breakdown category: the same variables and costs as the
    breakdown, each charged to the site it is paid to (a pool's or a storage tier's site; a
    candidate's site for its direct costs; the data's home for the egress of its dataset, which
    the provider there charges). Nothing is split by use, so the sites add up to the total."""
    site_of = {c.id: c.site for cs in problem.chosen_from.values() for c in cs}
    billed_at = savings_plans.bill_site(problem)      # a Savings Plan's commitment: its first site
    bills: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for v in problem.variables:
        if not v.costs:
            continue
        q = value(v.name)
        if not q:
            continue
        site = v.site if v.site is not None else billed_at.get(v.name) or site_of[v.candidate]
        for cat_name, usd in v.costs:
            at = site
            if cat_name == "egress":
                w = problem.spec.workload(v.workload)
                at = w.data.home if w.data and w.data.home else site
            bills[at][cat_name] += usd * q
    return tuple(SiteCost(s, CostBreakdown.of({k: _r(x) for k, x in cats.items()})) for s, cats in sorted(bills.items()))


def gap_note(problem, sol, path: SolvePath = SolvePath(), moves_usd: float = 0.0) -> str:
    """One sentence on what the reported gap says, standing alone (the summary and the report
    print it as it is). The bound is the solver's proven floor: no
    plan costs less. It is known to be weak where replicas of several services pack into whole
    cloud nodes or whole reserved nodes (docs/optimizer.md, "Where the remaining gap comes
    from"); there the gap may overstate how far a stopped search is from the optimum. A re-plan
    (`moves_usd` > 0) minimises the cost plus the moves' price: the bound and the gap are on that
    sum, and the sentence says so and splits this plan's into the two."""
    def floor_of(what: str) -> str:
        if not moves_usd:
            return f"no plan costs less than ${sol.best_bound:,.2f}, {what}"
        return (f"no plan's cost plus the price of its moves is less than ${sol.best_bound:,.2f}, {what} "
                f"(this plan's: ${sol.objective - moves_usd:,.2f} plus ${moves_usd:,.2f} of moves)")

    floor = floor_of("the bound the solver proved")
    if sol.status == "optimal":
        return f"Optimal within the gap asked for: {floor}"
    lumps = problem.reservations or any(c.group == "packing" for c in problem.constraints)
    if not sol.searched and path.path == "months":
        floor = floor_of("the LP relaxation's bound with the month floors")
        return (f"{MONTHS_NOTE}, proven close enough to stop there (docs/optimizer.md; --max-nodes, "
                f"--time-limit or --gap runs one): {floor}, so this plan is at most {sol.gap:.2%} above the optimum")
    if not sol.searched:
        floor = floor_of("the LP relaxation's bound")
        text = (f"{NO_SEARCH_NOTE} on a platform this large "
                f"(docs/optimizer.md; --time-limit or --max-nodes runs one): {floor}, so this plan is at most "
                f"{sol.gap:.2%} above the optimum")
    else:
        text = (f"The search stopped before proving the optimum (at a node, stall or time limit, or past its "
                f"proof of the 1% target: docs/optimizer.md): {floor}, so this plan is at most {sol.gap:.2%} "
                f"above the optimum")
    if lumps:
        text += ("; this model's bound is weak where services share whole nodes and reserved terms "
                 "(docs/optimizer.md), so the gap may overstate how far this plan is from the optimum")
    return text
