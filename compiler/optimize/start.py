"""A feasible-looking first plan for the solver to start from (CBC's MIP start).

On large platforms CBC can spend its whole time limit without finding any integer point (on
the 100-workload benchmark, none in minutes), and a time limit with no plan is exit 5. This
builds one in milliseconds, with no solver, the way a person would: every training job on its
cheapest candidate priced alone, every service on its cheapest sites (two, each carrying the
load alone, where it must survive the loss of a site), whole nodes bought, reserved and rented
for what that needs, the cheapest storage tier that holds it. Only integer values are
given; the solver fills in the continuous ones and rejects the start if it breaks a limit
(power, quota, cloud share), which costs nothing but the check. Pure function of the Problem:
the same spec gives the same start.
"""

from __future__ import annotations

import math
from typing import Mapping

from compiler.candidates import Candidate
from compiler import unit_costs
from compiler.estimate.memory import checkpoint_tb
from compiler.optimize import formulate as F
from compiler.optimize.moves import moved_indicators
from compiler.spec import HOURS_PER_MONTH, CloudSite, InferenceWorkload, OnPremSite


def _alone_cost(problem: F.Problem, c: Candidate) -> float | None:
    """A candidate's cost run by itself, the start's ranking: cloud at its list price (spot or on
    demand) for the node-hours it runs; on-prem power plus, beyond the site's owned nodes, the
    nodes it would buy (capex credit + support + fabric); egress when it runs away from its data.
    None where the pricing is not allowed at the site."""
    spec, cat = problem.spec, problem.candidates.catalog
    w = spec.workload(c.workload)
    site = spec.site(c.site)
    H = spec.horizon_months
    if isinstance(w, InferenceWorkload):
        demand = problem.demand.get(w.name) or ()
        node_months = [math.ceil(math.ceil(d / c.estimate.tokens_per_s - 1e-9) * c.gpus / c.gpus_per_node)
                       for d in demand if d > 0]
        if not node_months:
            return 0.0
        if isinstance(site, CloudSite):
            price = unit_costs.cloud_price(cat, site, c.instance, "on_demand")
            return None if price is None else sum(node_months) * HOURS_PER_MONTH * price
        node = cat.onprem_nodes[c.instance]
        owned = F.owned_nodes(site, c.instance)
        buy = max(0, max(node_months) - owned)
        return (buy * unit_costs.bought_node_cost(node, cat.fabrics.get(c.fabric), H, spec.policy.after_horizon,
                                             busy_at_end=True)
                + sum(node_months) * HOURS_PER_MONTH * unit_costs.power_usd_per_node_hour(node, site))
    hours = sum(h for _, h in c.usage)
    egress = 0.0
    if w.data and w.data.home and w.data.home != c.site and w.data.dataset_tb:
        egress = w.data.dataset_tb * unit_costs.egress_usd_per_tb(cat, spec.site(w.data.home))
    if isinstance(site, CloudSite):
        price = unit_costs.cloud_price(cat, site, c.instance, "spot" if c.spot else "on_demand")
        return None if price is None else price * c.nodes * hours + egress
    node = cat.onprem_nodes[c.instance]
    owned = F.owned_nodes(site, c.instance)
    buy = max(0, c.nodes - owned)
    busy_at_end = any(m == H - 1 and h > 0 for m, h in c.usage)
    return (buy * unit_costs.bought_node_cost(node, cat.fabrics.get(c.fabric), H, spec.policy.after_horizon, busy_at_end)
            + c.nodes * hours * unit_costs.power_usd_per_node_hour(node, site) + egress)


def _rank(problem: F.Problem, c: Candidate) -> tuple[float, str]:
    cost = _alone_cost(problem, c)
    return (math.inf if cost is None else cost, c.id)


def _reserve(problem: F.Problem, kind, od_hours, vals: dict[str, float]) -> None:
    """Reserve nodes, one at a time, where a reserved node saves more on-demand hours than its
    term costs (the largest saving first): the break-even a person would work out per pool."""
    spec, cat = problem.spec, problem.candidates.catalog
    H = spec.horizon_months
    for r in problem.reservations:
        if r.start < 0:
            vals[r.var] = kind[r.var].ub       # held (bought already): every node, at no cost
    pools = sorted({(s, i) for (s, i, _m) in od_hours})
    for s, i in pools:
        price = unit_costs.cloud_price(cat, spec.site(s), i, "on_demand")
        if price is None:
            continue
        options = [(r.var, r.months, kind[r.var].cost) for r in problem.reservations
                   if (r.site, r.instance) == (s, i) and r.start >= 0]
        left = [od_hours.get((s, i, m), 0.0) for m in range(H)]
        for r in problem.reservations:
            if (r.site, r.instance) == (s, i) and r.start < 0:      # held: their hours first
                for m in r.months:
                    left[m] = max(0.0, left[m] - HOURS_PER_MONTH * vals[r.var])
        while options:
            def saving(opt):
                _n, months, cost = opt
                return price * sum(min(HOURS_PER_MONTH, left[m]) for m in months) - cost
            best = max(options, key=lambda o: (saving(o), o[0]))
            if saving(best) <= 1e-6:
                break
            vals[best[0]] = vals.get(best[0], 0.0) + 1.0
            for m in best[1]:
                left[m] = max(0.0, left[m] - HOURS_PER_MONTH)


def _replicas_take(problem: F.Problem, kind, vals: dict[str, float]) -> None:
    """formulate (12b): t = 1 where a pool-month's replicas need more nodes than are reserved
    (t = 0 would leave its jobs a negative number of free reserved nodes)."""
    reserved: dict[tuple[str, str, int], float] = {}
    for r in problem.reservations:
        for m in r.months:
            key = (r.site, r.instance, m)
            reserved[key] = reserved.get(key, 0.0) + vals.get(r.var, 0.0)
    for (s, i, m), held in sorted(reserved.items()):
        name = F.res_taken_name(s, i, m)
        if name in kind:
            vals[name] = float(vals.get(F.inode_name(s, i, m), 0.0) > held)


def _to_mixes(problem: F.Problem, w: str, cands, vals: dict[str, float], ledger: "_Ledger") -> None:
    """Drop the start's spare replicas down to one of the month's minimal mixes (formulate (14)
    makes the plan choose exactly one), the leanest in GPUs, and give the GPUs back."""
    for m in range(problem.spec.horizon_months):
        options = problem.mixes.get((w, m))
        if not options:
            continue
        by_y = {F.y_name(c, m): c for c in cands}
        below = [(sum(r * by_y[y].gpus for y, r in reps), n, reps) for n, reps in options
                 if all(r <= vals.get(y, 0.0) + 1e-9 for y, r in reps)]
        if not below:
            continue   # cannot happen for a start that carries the month; leave it to the solver
        _, name, reps = min(below)
        vals[name] = 1.0
        if problem.spec.policy.limits_pool_life:
            continue   # y >= its mix there (formulate (14)); a spare replica may keep a pool up
        new = dict(reps)
        for y, c in by_y.items():
            spare = vals.get(y, 0.0) - new.get(y, 0)
            if spare > 0:
                vals[y] = float(new.get(y, 0))
                pool = (c.site, c.instance, m)
                ledger.gpus[pool] = ledger.gpus.get(pool, 0.0) - spare * c.gpus


class _Ledger:
    """What the start has placed so far, and whether one more placement still fits the sites'
    limits (on-prem power, racks, GPUs, bought-node bounds; cloud GPU quotas; one fabric a pool)."""

    def __init__(self, problem: F.Problem, kind) -> None:
        self.spec, self.cat, self.kind = problem.spec, problem.candidates.catalog, kind
        self.gpus: dict[tuple[str, str, int], float] = {}      # (site, instance, month) -> GPUs
        self.train_quota: dict[tuple[str, str, int], float] = {}  # cloud jobs: (site, gpu, month)
        self.fabric: dict[tuple[str, str], str] = {}

    def add(self, c: Candidate, per_month: Mapping[int, float]) -> bool:
        """Place c's GPUs per month if they fit the site's limits; say whether they did."""
        gpus, quota = dict(self.gpus), dict(self.train_quota)
        for m, g in per_month.items():
            if c.kind == "training" and c.site_type == "cloud":
                quota[(c.site, c.gpu, m)] = quota.get((c.site, c.gpu, m), 0.0) + g
            else:
                gpus[(c.site, c.instance, m)] = gpus.get((c.site, c.instance, m), 0.0) + g
        fabric = dict(self.fabric)
        if c.site_type == "on_prem" and c.kind == "training" and not F.fabric_free(c):
            if fabric.setdefault((c.site, c.instance), c.fabric) != c.fabric:
                return False
        if not self._site_ok(c.site, gpus, quota):
            return False
        self.gpus, self.train_quota, self.fabric = gpus, quota, fabric
        return True

    def bought(self, s: str, i: str, gpus) -> int:
        node, site = self.cat.onprem_nodes[i], self.spec.site(s)
        return max([0] + [math.ceil(g / node.gpus - 1e-9) - F.owned_nodes(site, i, m)
                          for (ss, ii, m), g in gpus.items() if (ss, ii) == (s, i)])

    def _site_ok(self, s: str, gpus, quota) -> bool:
        site = self.spec.site(s)
        if isinstance(site, OnPremSite):
            insts = sorted({i for (ss, i, _m) in gpus if ss == s})
            buy = {i: self.bought(s, i, gpus) for i in insts}
            owned = {i: F.owned_nodes(site, i) for i in insts}
            nodes = {i: self.cat.onprem_nodes[i] for i in insts}
            ub = {i: self.kind[F.buy_name(s, i)].ub if F.buy_name(s, i) in self.kind else 0.0 for i in insts}
            return (all(ub[i] is None or buy[i] <= ub[i] for i in insts)
                    and sum(buy[i] * nodes[i].power_kw * site.pue for i in insts) <= site.power_kw + 1e-9
                    and sum((buy[i] + owned[i]) * nodes[i].rack_units for i in insts) / F.RACK_UNITS
                    <= site.max_racks + 1e-9
                    and (not site.rack_power_kw or sum((buy[i] + owned[i]) * nodes[i].power_kw for i in insts)
                         / site.rack_power_kw <= site.max_racks + 1e-9)
                    and (site.max_gpus is None
                         or sum((buy[i] + owned[i]) * nodes[i].gpus for i in insts) <= site.max_gpus))
        used: dict[tuple[str, int], float] = {}
        for (ss, g, m), n in quota.items():
            if ss == s:
                used[(g, m)] = used.get((g, m), 0.0) + n
        for (ss, i, m), g in gpus.items():
            if ss == s:
                inst = self.cat.instances[i]
                used[(inst.gpu, m)] = used.get((inst.gpu, m), 0.0) + math.ceil(g / inst.gpus - 1e-9) * inst.gpus
        return all(n <= site.quotas[g] + 1e-9 for (g, _m), n in used.items() if g in site.quotas)


def greedy_start(problem: F.Problem) -> Mapping[str, float] | None:
    """Values for the integer variables of a plausible plan, or None where none is obvious."""
    kind = {v.name: v for v in problem.variables}
    vals: dict[str, float] = {n: 0.0 for n, v in kind.items() if v.kind != "continuous"}
    ledger = _Ledger(problem, kind)
    storage_need: dict[tuple[str, int], float] = {}
    od_hours: dict[tuple[str, str, int], float] = {}      # cloud node-hours a month, before reserving
    for w in problem.spec.workloads:
        cands = problem.chosen_from.get(w.name, ())
        if not cands:
            return None
        if isinstance(w, InferenceWorkload):
            placed = _place_service(problem, w, cands, kind, vals, ledger)
        else:
            placed = _place_job(problem, w, cands, vals, ledger, storage_need, od_hours)
        if not placed:
            return None
    _whole_nodes(problem, kind, vals, ledger, od_hours)
    _open_storage(problem, kind, vals, storage_need)
    # The operability indicators the replicas imply (one candidate a site, the same every month:
    # within any limit's reach); the solver rejects the start if a row says otherwise.
    vals.update(F.limit_indicators(problem, vals))
    # and in a re-plan, which services move from where the baseline ran them (moves.py)
    vals.update(moved_indicators(problem, vals))
    return vals if _within_bounds(kind, vals) else None


def _place_service(problem: F.Problem, w: InferenceWorkload, cands, kind, vals: dict[str, float],
                   ledger: "_Ledger") -> bool:
    """A service's replicas on its cheapest sites (`_site_count` of them), then down to a minimal
    mix each month; False where the sites' limits leave too few."""
    cost = {c.id: _rank(problem, c)[0] for c in cands}
    ranked = sorted(cands, key=lambda c: (cost[c.id], c.id))
    k = _site_count(problem.spec, w, ranked, cost)
    if k is None or not _place_replicas(problem, w, ranked, k, kind, vals, ledger):
        return False
    _to_mixes(problem, w.name, cands, vals, ledger)
    return True


def _site_count(spec, w: InferenceWorkload, ranked: list[Candidate], cost: Mapping[str, float]) -> int | None:
    """How many sites carry a service: spread over the k cheapest sites, each carrying 1/(k-1) of
    the load, so the service survives losing any one (k = 1 and the whole load without that
    need). One candidate per site (replicas at one site do not survive its loss), within the
    policy's GPU types and sites a service. None where no k will do."""
    most_gpus = spec.policy.max_gpu_types_per_service or len(ranked)
    first: dict[str, Candidate] = {}
    for c in ranked:
        if c.site not in first and (c.gpu in {d.gpu for d in first.values()}
                                    or len({d.gpu for d in first.values()}) < most_gpus):
            first[c.site] = c
    best_per_site = list(first.values())     # in rank order, as `ranked` is
    most_sites = spec.policy.max_sites_per_service or len(best_per_site)
    ks = range(2, min(len(best_per_site), most_sites) + 1) if w.slo.availability >= 0.999 else (1,)
    if not ks:
        return None
    return min(ks, key=lambda k: (sum(cost[c.id] for c in best_per_site[:k]) / max(1, k - 1), k))


def _place_replicas(problem: F.Problem, w: InferenceWorkload, ranked: list[Candidate], k: int, kind,
                    vals: dict[str, float], ledger: "_Ledger") -> bool:
    """Each of k sites carries 1/(k-1) of the demand on its first candidate in rank order that its
    limits and the replica bounds admit; a site whose limits cannot take its share is passed
    over. Whether k sites took it."""
    most_gpus = problem.spec.policy.max_gpu_types_per_service or len(ranked)
    demand = problem.demand[w.name]
    share = 1.0 / max(1, k - 1)
    placed, used, gpus = 0, set(), set()
    for c in ranked:
        if c.site in used or (c.gpu not in gpus and len(gpus) >= most_gpus):
            continue   # one candidate a site; the policy's GPU types a service
        reps = {m: F.replicas_needed(d * share, c.estimate.tokens_per_s)
                for m, d in enumerate(demand) if d > 0}
        if any(y > (kind[F.y_name(c, m)].ub or math.inf) for m, y in reps.items()):
            continue   # a capped candidate (reductions.replica_caps): a better one is in its pool
        if not ledger.add(c, {m: y * c.gpus for m, y in reps.items()}):
            continue
        for m, y in reps.items():
            vals[F.y_name(c, m)] = float(y)
        used.add(c.site)
        gpus.add(c.gpu)
        placed += 1
        if placed == k:
            break
    return placed >= k


def _place_job(problem: F.Problem, w, cands, vals: dict[str, float], ledger: "_Ledger",
               storage_need: dict[tuple[str, int], float], od_hours: dict[tuple[str, str, int], float]) -> bool:
    """A training job on its cheapest candidate that fits (priced alone), its data and checkpoints
    counted at its site and its non-spot cloud node-hours kept for reserving; False where none fits."""
    H, cat = problem.spec.horizon_months, problem.candidates.catalog
    for c in sorted(cands, key=lambda c: _rank(problem, c)):
        months = {m: float(c.gpus) for m, h in c.usage if m < H and h > 0}
        if ledger.add(c, months):
            break
    else:
        return False
    vals[F.x_name(c)] = 1.0
    ckpt = checkpoint_tb(w, cat)
    for m in months:
        storage_need[(c.site, m)] = storage_need.get((c.site, m), 0.0) + (
            (w.data.dataset_tb if w.data else 0.0) + ckpt)
    if c.site_type == "cloud" and not c.spot:
        for m, h in c.usage:
            if m < H and h > 0:
                od_hours[(c.site, c.instance, m)] = od_hours.get((c.site, c.instance, m), 0.0) + c.nodes * h
    return True


def _whole_nodes(problem: F.Problem, kind, vals: dict[str, float], ledger: "_Ledger",
                 od_hours: dict[tuple[str, str, int], float]) -> None:
    """Whole nodes: bought on-prem for the busiest month (the ledger kept them within the site's
    limits and the variables' bounds), rented per month in the cloud and reserved where that pays;
    each on-prem pool's fabric."""
    spec, cat = problem.spec, problem.candidates.catalog
    onprem_pools = set()
    for (s, i, m), g in ledger.gpus.items():
        if isinstance(spec.site(s), OnPremSite):
            onprem_pools.add((s, i))
        elif F.inode_name(s, i, m) in kind:
            nodes = math.ceil(g / cat.instances[i].gpus - 1e-9)
            vals[F.inode_name(s, i, m)] = float(nodes)
            od_hours[(s, i, m)] = od_hours.get((s, i, m), 0.0) + nodes * HOURS_PER_MONTH
    _reserve(problem, kind, od_hours, vals)
    _replicas_take(problem, kind, vals)
    for s, i in onprem_pools:
        if F.buy_name(s, i) in kind:
            vals[F.buy_name(s, i)] = float(ledger.bought(s, i, ledger.gpus))
    for (s, i), fabric in ledger.fabric.items():
        name = F.fab_name(s, i, fabric)
        if name in kind:
            vals[name] = 1.0


def _open_storage(problem: F.Problem, kind, vals: dict[str, float],
                  storage_need: Mapping[tuple[str, int], float]) -> None:
    """Storage: open the cheapest tier that holds the month's data beyond what the site has."""
    spec, cat = problem.spec, problem.candidates.catalog
    for (s, m), tb in storage_need.items():
        tiers = unit_costs.storage_tiers(cat, spec.site(s))
        tb -= getattr(spec.site(s), "existing_storage_tb", 0.0)
        if not tiers or tb <= 0:
            continue
        t = min(tiers, key=lambda t: (max(tb, t.min_tb) * t.usd_per_tb_month + max(tb, t.min_tb) * t.capex_usd_per_tb,
                                      t.name))
        name = F.sopen_name(s, t.name, m)
        if name in kind:
            vals[name] = 1.0


def _within_bounds(kind, vals: Mapping[str, float]) -> bool:
    """Never beyond a variable's bound (a replica count capped by its month's need, say)."""
    for n, v in vals.items():
        ub = 1.0 if kind[n].kind == "binary" else kind[n].ub
        if ub is not None and v > ub + 1e-9:
            return False
    return True
