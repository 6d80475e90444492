"""A feasible-looking first plan for the solver to start from (CBC's MIP start).

On large platforms CBC can spend its whole time limit without finding any integer point
(100 workloads: none in 150 s), and a time limit with no plan is exit 5. This builds one in
milliseconds, with no solver, the way a person would: every training job on its cheapest
candidate priced alone, every service on its cheapest sites (two, each carrying the load
alone, where it must survive the loss of a site), no reserved nodes, whole nodes bought and
rented for what that needs, the cheapest storage tier that holds it. Only integer values are
given; the solver fills in the continuous ones and rejects the start if it breaks a limit
(power, quota, cloud share), which costs nothing but the check. Pure function of the Problem:
the same spec gives the same start.
"""

from __future__ import annotations

import math
from typing import Mapping

from compiler.candidates import Candidate
from compiler.optimize import costs
from compiler.optimize import formulate as F
from compiler.optimize.alternatives import standalone_cost
from compiler.spec import HOURS_PER_MONTH, InferenceWorkload, OnPremSite


def _rank(problem: F.Problem, c: Candidate) -> tuple[float, str]:
    cost = standalone_cost(problem, c)
    return (math.inf if cost is None else cost, c.id)


def _reserve(problem: F.Problem, kind, od_hours, vals: dict[str, float]) -> None:
    """Reserve nodes, one at a time, where a reserved node saves more on-demand hours than its
    term costs (the largest saving first): the break-even a person would work out per pool."""
    spec, cat = problem.spec, problem.candidates.catalog
    H = spec.horizon_months
    pools = sorted({(s, i) for (s, i, _m) in od_hours})
    for s, i in pools:
        price = costs.cloud_price(cat, spec.site(s), i, "on_demand")
        if price is None:
            continue
        prefix = f"reserved[{s}/{i}/"
        options = []
        for n, v in kind.items():
            if n.startswith(prefix):
                term, a = n[len(prefix):-1].split("@")
                a = int(a)
                options.append((n, range(a, min(H, a + costs.TERM_MONTHS[term])), v.cost))
        left = [od_hours.get((s, i, m), 0.0) for m in range(H)]
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


def greedy_start(problem: F.Problem) -> Mapping[str, float] | None:
    """Values for the integer variables of a plausible plan, or None where none is obvious."""
    spec, cat = problem.spec, problem.candidates.catalog
    H = spec.horizon_months
    kind = {v.name: v for v in problem.variables}
    vals: dict[str, float] = {n: 0.0 for n, v in kind.items() if v.kind != "continuous"}
    gpus_used: dict[tuple[str, str, int], float] = {}     # (site, instance, month) -> GPUs
    fabric_need: dict[tuple[str, str], set[str]] = {}
    storage_need: dict[tuple[str, int], float] = {}
    od_hours: dict[tuple[str, str, int], float] = {}      # cloud node-hours a month, before reserving

    for w in spec.workloads:
        cands = problem.chosen_from.get(w.name, ())
        if not cands:
            return None
        if isinstance(w, InferenceWorkload):
            demand = problem.demand[w.name]
            ranked = sorted(cands, key=lambda c: (_rank(problem, c)[0], c.id))
            # Spread over the k cheapest sites, each carrying 1/(k-1) of the load, so the
            # service survives losing any one (k = 1 and the whole load without that need).
            ks = range(2, len(ranked) + 1) if w.slo.availability >= 0.999 else (1,)
            if not ks:
                return None
            k = min(ks, key=lambda k: (sum(_rank(problem, c)[0] for c in ranked[:k]) / max(1, k - 1), k))
            share = 1.0 / max(1, k - 1)
            for c in ranked[:k]:
                for m, d in enumerate(demand):
                    if d <= 0:
                        continue
                    y = F.replicas_needed(d * share, c.estimate.tokens_per_s)
                    vals[F.y_name(c, m)] = float(y)
                    key = (c.site, c.instance, m)
                    gpus_used[key] = gpus_used.get(key, 0.0) + y * c.gpus
            continue
        c = min(cands, key=lambda c: _rank(problem, c))
        vals[F.x_name(c)] = 1.0
        ckpt = costs.checkpoint_tb(w, cat)
        for m, h in c.usage:
            if m >= H or h <= 0:
                continue
            storage_need[(c.site, m)] = storage_need.get((c.site, m), 0.0) + (
                (w.data.dataset_tb if w.data else 0.0) + ckpt)
            if c.site_type == "on_prem":
                key = (c.site, c.instance, m)
                gpus_used[key] = gpus_used.get(key, 0.0) + c.gpus
        if c.site_type == "cloud" and not c.spot:
            for m, h in c.usage:
                if m < H and h > 0:
                    od_hours[(c.site, c.instance, m)] = od_hours.get((c.site, c.instance, m), 0.0) + c.nodes * h
        if c.site_type == "on_prem" and not F.fabric_free(c):
            fabric_need.setdefault((c.site, c.instance), set()).add(c.fabric)

    # Whole nodes: bought on-prem for the busiest month, rented per month in the cloud.
    peak: dict[tuple[str, str], float] = {}
    for (s, i, m), g in gpus_used.items():
        site = spec.site(s)
        if isinstance(site, OnPremSite):
            peak[(s, i)] = max(peak.get((s, i), 0.0), g)
        elif F.inode_name(s, i, m) in kind:
            nodes = math.ceil(g / cat.instances[i].gpus - 1e-9)
            vals[F.inode_name(s, i, m)] = float(nodes)
            od_hours[(s, i, m)] = od_hours.get((s, i, m), 0.0) + nodes * HOURS_PER_MONTH
    _reserve(problem, kind, od_hours, vals)
    for (s, i), g in peak.items():
        site = spec.site(s)
        node = cat.onprem_nodes[i]
        owned = sum(o.nodes for o in site.owned if o.instance == i)
        buy = max(0, math.ceil(g / node.gpus - 1e-9) - owned)
        name = F.buy_name(s, i)
        if name not in kind or (kind[name].ub is not None and buy > kind[name].ub):
            return None
        vals[name] = float(buy)
    for (s, i), fabrics in fabric_need.items():
        if len(fabrics) > 1:
            return None
        name = F.fab_name(s, i, next(iter(fabrics)))
        if name in kind:
            vals[name] = 1.0

    # Storage: open the cheapest tier that holds the month's data.
    for (s, m), tb in storage_need.items():
        tiers = costs.storage_tiers(cat, spec.site(s))
        if not tiers or tb <= 0:
            continue
        t = min(tiers, key=lambda t: (max(tb, t.min_tb) * t.usd_per_tb_month + max(tb, t.min_tb) * t.capex_usd_per_tb,
                                      t.name))
        name = F.sopen_name(s, t.name, m)
        if name in kind:
            vals[name] = 1.0
    # Never beyond a variable's bound (a replica count capped by its month's need, say).
    for n, v in vals.items():
        ub = 1.0 if kind[n].kind == "binary" else kind[n].ub
        if ub is not None and v > ub + 1e-9:
            return None
    return vals
