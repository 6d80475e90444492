"""Next-best alternatives per workload, for the report.

Each candidate is priced alone ("standalone"): cloud at its list price for the node-hours
it runs; on-prem as power plus, beyond the site's owned nodes, the nodes it would need to
buy (capex credit + support + fabric); egress when it runs away from its data. Candidates
are grouped by (GPU, site, pricing); the cheapest of each group that the plan did not
choose is an alternative, and its delta is against the chosen candidate priced the same way.
A standalone price ignores sharing (reserved nodes, pooled purchases), so deltas are a
guide, not a re-solve.
"""

from __future__ import annotations

import math

from compiler.candidates import Candidate
from compiler.optimize import costs
from compiler.optimize.formulate import Problem, owned_nodes, pricing_of
from compiler.plan import Alternative
from compiler.spec import HOURS_PER_MONTH, CloudSite, InferenceWorkload

MAX_ALTERNATIVES = 3


def standalone_cost(problem: Problem, c: Candidate) -> float | None:
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
            price = costs.cloud_price(cat, site, c.instance, "on_demand")
            return None if price is None else sum(node_months) * HOURS_PER_MONTH * price
        node = cat.onprem_nodes[c.instance]
        owned = owned_nodes(site, c.instance)
        buy = max(0, max(node_months) - owned)
        return (buy * costs.bought_node_cost(node, cat.fabrics.get(c.fabric), H)
                + sum(node_months) * HOURS_PER_MONTH * costs.power_usd_per_node_hour(node, site))
    hours = sum(h for _, h in c.usage)
    egress = 0.0
    if w.data and w.data.home and w.data.home != c.site and w.data.dataset_tb:
        egress = w.data.dataset_tb * costs.egress_usd_per_tb(cat, spec.site(w.data.home))
    if isinstance(site, CloudSite):
        price = costs.cloud_price(cat, site, c.instance, "spot" if c.spot else "on_demand")
        return None if price is None else price * c.nodes * hours + egress
    node = cat.onprem_nodes[c.instance]
    owned = owned_nodes(site, c.instance)
    buy = max(0, c.nodes - owned)
    return (buy * costs.bought_node_cost(node, cat.fabrics.get(c.fabric), H)
            + c.nodes * hours * costs.power_usd_per_node_hour(node, site) + egress)


def alternatives(problem: Problem, workload: str, chosen: Candidate) -> tuple[Alternative, ...]:
    base = standalone_cost(problem, chosen)
    if base is None:
        return ()
    best: dict[tuple[str, str, str], tuple[float, str, Candidate]] = {}
    for c in problem.chosen_from.get(workload, ()):
        key = (c.gpu, c.site, pricing_of(c))
        if key == (chosen.gpu, chosen.site, pricing_of(chosen)):
            continue
        cost = standalone_cost(problem, c)
        if cost is None:
            continue
        if key not in best or (cost, c.id) < best[key][:2]:
            best[key] = (cost, c.id, c)
    ranked = sorted(best.values(), key=lambda t: (t[0], t[1]))[:MAX_ALTERNATIVES]
    return tuple(Alternative(site=c.site, instance=c.instance, gpu=c.gpu, gpus=c.gpus, pricing=pricing_of(c),
                             cost_usd=round(cost, 2), delta_usd=round(cost - base, 2),
                             note="priced alone against the chosen option priced alone")
                 for cost, _, c in ranked)
