"""Next-best alternatives per workload, and owning against renting per GPU, for the report.

Priced alone
------------
Each row of a workload's alternatives, and the chosen design it is compared with
(WorkloadPlan.chosen_alone), is priced by one rule: the workload by itself on that option, for
the months and hours it runs, with no other workload sharing its nodes, terms or storage.

  cloud     at the instance's prices in the site's region: spot for a spot candidate; else the
            cheapest of the pricings the spec allows there (the one a pin names, if any): on
            demand for its node-hours, or a reserved term for its peak nodes, reserved for whole
            terms from the first month it runs until its last (each term charged as the plan
            charges terms, policy.after_horizon: its months inside the horizon; under `full` all
            its months; under `continues`, its months after the horizon too where the option does
            not run in the horizon's last month).
  on-prem   node-hours x power (kW x PUE x $/kWh). Nodes up to the site's owned ones of that model
            are owned and cost nothing more; nodes beyond them are bought: capex by the same
            rule, support and a fabric per node (compiler/unit_costs.py), as the plan charges them. A
            multi-node job's bought nodes carry the fabric it was estimated on, other bought nodes
            the cheapest the node model offers. A pin to `owned` allows no bought node; a pin to
            `purchase` buys every node.
  egress    a training job away from its data's home moves its dataset once.

An option has one part per (site, instance) it uses (OptionPart, with the figures its cost is
recomputed from). A training job's option is one candidate; the chosen design is its candidate.
A service's option carries its demand month by month in whole replicas and whole nodes; the chosen
design is the plan's placements, each (site, instance) holding, month by month, the nodes its
replicas there fill. A service that must survive the loss of a site (slo.availability >= 0.999,
formulate's rows (3)) is offered designs on one GPU type over k >= 2 sites, each site carrying
1/(k-1) of the demand: without any one of them the others carry it all.

delta_usd is the option's cost alone minus the chosen design's cost alone: the same rule on both
sides, so its sign says which is cheaper alone. The plan's own charge for the workload
(WorkloadPlan.cost_usd) also holds its storage and its share of what it shares with other
workloads (reserved terms, bought nodes, idle hours); it is not what the deltas are taken against,
and an option cheaper alone than the chosen design may still cost the whole plan more.

Which options are offered: candidates of other (GPU, site, pricing) groups, the cheapest of each
(a service that must survive a site: the cheapest design per GPU type), at most MAX_ALTERNATIVES,
cheapest first. Policy, site restrictions and pins were applied to the candidates before the model
(formulate._filter); a pin's pricing is applied here; an option that alone would break a site's
limits (new nodes over the power budget, racks, rack power or max_gpus with the owned nodes; GPUs
over a cloud quota) is not one the workload can take, and is left out.

Owning against renting (breakeven)
----------------------------------
Per GPU type that some workload could run both on-prem and in the cloud (on demand): for each
on-prem node model of that GPU type it could use, the cloud instance of the same GPU type it could
use with the lowest price per GPU-month (730 h), one GPU busy all month. Owned nodes (the site's
`owned`) cost power only and no capex: owning is cheaper whenever they run if the power is below
the cloud price. Bought nodes (where the site admits a new one) cost capex and the cheapest fabric
the model offers up front, power and support monthly:
  breakeven_months = capex per GPU / (cloud - power - support per GPU-month)
  breakeven_utilization = (capex charged (policy.after_horizon) + fabric + horizon x support)
                          / (horizon x (cloud - power)) per GPU: the share of the horizon a GPU
                          must be busy (power only while busy) for buying to cost less.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from compiler.candidates import Candidate
from compiler import unit_costs
from compiler.problem import TERMS, Problem, fabric_free, owned_nodes
from compiler.plan import Alternative, BreakEven, OptionPart
from compiler.spec import HOURS_PER_MONTH, RACK_UNITS, CloudSite, InferenceWorkload, OnPremSite

MAX_ALTERNATIVES = 3      # next-best options the report prices per workload



def _r(v: float) -> float:
    return round(v, 2)


@dataclass(frozen=True)
class _Use:
    """What one part of an option runs: its peak nodes and node-hours, in months first..last."""
    nodes: int
    node_hours: float
    first: int
    last: int


# --- pricing one part ----------------------------------------------------------------------

def reserved_cost(price: float, nodes: int, first: int, last: int, term: str, horizon: int,
                  rule: str = "prorated") -> float:
    """`nodes` reserved for whole terms from month `first` until `last` is covered, each term
    charged by policy.after_horizon (`continues`: its months after the horizon are free where
    the nodes still run in the horizon's last month)."""
    # priced alone, an option's nodes are idle after the horizon unless it runs in its last month
    if rule == "continues" and last < horizon - 1:
        rule = "full"
    months, start = 0, first
    while start <= last:
        months += unit_costs.term_months_charged(term, start, horizon, rule)
        start += unit_costs.TERM_MONTHS[term]
    return price * HOURS_PER_MONTH * months * nodes


def _cloud_part(problem: Problem, w, c: Candidate, use: _Use) -> tuple[str, float] | None:
    """(pricing, USD) of a cloud part, or None where no pricing of it is allowed."""
    spec, cat = problem.spec, problem.candidates.catalog
    site = spec.site(c.site)
    if c.spot:
        price = unit_costs.cloud_price(cat, site, c.instance, "spot")
        return None if price is None else ("spot", price * use.node_hours)
    pin = w.pin.pricing if w.pin else None
    options = (pin,) if pin in ("on_demand", *TERMS) else ("on_demand", *TERMS)
    priced = []
    for option in options:
        price = unit_costs.cloud_price(cat, site, c.instance, option)
        if price is None:
            continue
        usd = (price * use.node_hours if option == "on_demand"
               else reserved_cost(price, use.nodes, use.first, use.last, option, spec.horizon_months,
                                  spec.policy.after_horizon))
        priced.append((usd, option))
    if not priced:
        return None
    usd, option = min(priced)
    return option, usd


def cheapest_fabric(problem: Problem, instance: str) -> str:
    """The cheapest wiring a node model offers (ties by name): what a bought node that no
    multi-node job crosses is charged."""
    cat = problem.candidates.catalog
    offered = [f for f in cat.onprem_nodes[instance].fabrics if f in cat.fabrics]
    return min(offered, key=lambda f: (unit_costs.fabric_cost_per_node(cat.fabrics[f]), f), default="")


def fits_alone(problem: Problem, site: OnPremSite, instance: str, bought: int) -> bool:
    """`bought` new nodes of `instance` within the site's limits, with the nodes it owns."""
    cat = problem.candidates.catalog
    node = cat.onprem_nodes[instance]
    held = [(cat.onprem_nodes[o.instance], o.nodes) for o in site.owned if o.instance in cat.onprem_nodes]
    if bought * node.power_kw * site.pue > site.power_kw + 1e-9:
        return False
    if sum(n.rack_units * k for n, k in held) + bought * node.rack_units > site.max_racks * RACK_UNITS + 1e-9:
        return False
    if site.rack_power_kw and (sum(n.power_kw * k for n, k in held) + bought * node.power_kw
                               > site.max_racks * site.rack_power_kw + 1e-9):
        return False
    return site.max_gpus is None or sum(n.gpus * k for n, k in held) + bought * node.gpus <= site.max_gpus


def _part(problem: Problem, w, c: Candidate, use: _Use, gpus: int, checked: bool = True) -> OptionPart | None:
    """One (site, instance) of an option priced alone; None where the workload cannot take it
    (no allowed pricing, its pin's pricing, a site limit; checked=False: the chosen design)."""
    spec, cat = problem.spec, problem.candidates.catalog
    H = spec.horizon_months
    site = spec.site(c.site)
    egress_tb, egress = 0.0, 0.0
    if not isinstance(w, InferenceWorkload) and w.data and w.data.home and w.data.home != c.site \
            and w.data.dataset_tb:
        egress_tb = w.data.dataset_tb
        egress = egress_tb * unit_costs.egress_usd_per_tb(cat, spec.site(w.data.home))
    if isinstance(site, CloudSite):
        priced = _cloud_part(problem, w, c, use)
        if priced is None:
            return None
        quota = site.quotas.get(c.gpu)
        if checked and quota is not None and use.nodes * c.gpus_per_node > quota:
            return None
        pricing, usd = priced
        return OptionPart(c.site, c.instance, c.gpu, gpus, pricing, use.nodes, 0, use.node_hours,
                          use.first, use.last, _r(usd + egress), egress_tb=egress_tb)
    pin = w.pin.pricing if w.pin else None
    owned = 0 if pin == "purchase" else min(use.nodes, owned_nodes(site, c.instance))
    bought = use.nodes - owned
    if checked and ((bought and pin == "owned") or not fits_alone(problem, site, c.instance, bought)):
        return None
    node = cat.onprem_nodes[c.instance]
    fabric = ""
    if bought:
        multi_node = not isinstance(w, InferenceWorkload) and not fabric_free(c)
        fabric = c.fabric if multi_node and c.fabric in cat.fabrics else cheapest_fabric(problem, c.instance)
    usd = (bought * unit_costs.bought_node_cost(node, cat.fabrics.get(fabric), H, problem.spec.policy.after_horizon,
                                           use.last >= H - 1)
           + use.node_hours * unit_costs.power_usd_per_node_hour(node, site) + egress)
    return OptionPart(c.site, c.instance, c.gpu, gpus, "purchase" if bought else "owned", use.nodes, owned,
                      use.node_hours, use.first, use.last, _r(usd), fabric, egress_tb)


# --- what an option runs --------------------------------------------------------------------

def _training_use(c: Candidate) -> _Use:
    months = [m for m, h in c.usage if h > 0] or [c.start_month]
    return _Use(c.nodes, c.nodes * sum(h for _, h in c.usage), min(months), max(months))


def _service_use(problem: Problem, w, c: Candidate, share: float) -> _Use | None:
    """c carrying `share` of the service's demand alone, month by month, in whole replicas and
    whole nodes."""
    nodes = {}
    for m, d in enumerate(problem.demand.get(w.name) or ()):
        if d > 0:
            replicas = max(1, math.ceil(d * share / c.estimate.tokens_per_s - 1e-9))
            nodes[m] = math.ceil(replicas * c.gpus / c.gpus_per_node - 1e-9)
    if not nodes:
        return None
    return _Use(max(nodes.values()), HOURS_PER_MONTH * sum(nodes.values()), min(nodes), max(nodes))


def _option(parts: list[OptionPart], gpu: str, note: str = "", base: float | None = None) -> Alternative:
    cost = _r(sum(p.cost_usd for p in parts))
    joined = lambda key: " + ".join(dict.fromkeys(getattr(p, key) for p in parts))  # noqa: E731
    return Alternative(site=joined("site"), instance=joined("instance"), gpu=gpu, gpus=parts[0].gpus,
                       pricing=joined("pricing"), cost_usd=cost,
                       delta_usd=0.0 if base is None else _r(cost - base), note=note, parts=tuple(parts))


def _key(a: Alternative) -> tuple[str, str, str]:
    return (a.gpu, a.site, a.pricing)


# --- the chosen design ----------------------------------------------------------------------

def chosen_training(problem: Problem, c: Candidate) -> Alternative | None:
    w = problem.spec.workload(c.workload)
    part = _part(problem, w, c, _training_use(c), c.gpus, checked=False)
    return None if part is None else _option([part], c.gpu)


def chosen_service(problem: Problem, rows: list[tuple[Candidate, list[int]]]) -> Alternative | None:
    """The plan's placements priced alone: per (site, instance), the nodes its replicas fill in
    each month."""
    if not rows:
        return None
    w = problem.spec.workload(rows[0][0].workload)
    parts = []
    for site, inst in sorted({(c.site, c.instance) for c, _ in rows}):
        mine = [(c, reps) for c, reps in rows if (c.site, c.instance) == (site, inst)]
        gpn = mine[0][0].gpus_per_node
        months = max(len(reps) for _, reps in mine)
        nodes = {m: math.ceil(sum(c.gpus * reps[m] for c, reps in mine if m < len(reps)) / gpn - 1e-9)
                 for m in range(months)}
        nodes = {m: n for m, n in nodes.items() if n > 0}
        if not nodes:
            continue
        c = min((c for c, _ in mine), key=lambda c: c.id)
        use = _Use(max(nodes.values()), HOURS_PER_MONTH * sum(nodes.values()), min(nodes), max(nodes))
        part = _part(problem, w, c, use, max(c.gpus for c, _ in mine), checked=False)
        if part is None:
            return None
        parts.append(part)
    if not parts:
        return None
    return _option(parts, "/".join(sorted({p.gpu for p in parts})))


# --- the alternatives -----------------------------------------------------------------------

def alternatives(problem: Problem, workload: str, chosen: Alternative | None) -> tuple[Alternative, ...]:
    """The next-best options of a workload, cheapest first, each with its delta against `chosen`
    (its chosen design priced alone)."""
    if chosen is None:
        return ()
    w = problem.spec.workload(workload)
    cands = problem.chosen_from.get(workload, ())
    if isinstance(w, InferenceWorkload) and w.slo.survives_site_loss:
        options = _site_loss_options(problem, w, cands, chosen)
    else:
        options = _single_options(problem, w, cands, chosen)
    ranked = sorted(options, key=lambda t: (t[0].cost_usd, t[1]))[:MAX_ALTERNATIVES]
    return tuple(_option(list(a.parts), a.gpu, a.note, chosen.cost_usd) for a, _ in ranked)


def _single_options(problem, w, cands, chosen: Alternative) -> list[tuple[Alternative, str]]:
    """One candidate each, the cheapest of every (GPU, site, pricing) group but the chosen one's."""
    skip = _key(chosen) if len(chosen.parts) == 1 else None
    best: dict[tuple[str, str, str], tuple[Alternative, str]] = {}
    for c in cands:
        if isinstance(w, InferenceWorkload):
            use = _service_use(problem, w, c, 1.0)
        else:
            use = _training_use(c)
        part = None if use is None else _part(problem, w, c, use, c.gpus)
        if part is None:
            continue
        option = _option([part], c.gpu)
        key = _key(option)
        if key == skip:
            continue
        if key not in best or (option.cost_usd, c.id) < (best[key][0].cost_usd, best[key][1]):
            best[key] = (option, c.id)
    return list(best.values())


def _site_loss_options(problem, w, cands, chosen: Alternative) -> list[tuple[Alternative, str]]:
    """Per GPU type, the cheapest design over k >= 2 sites, each carrying 1/(k-1) of the demand:
    for each k the k sites whose best part for that share is cheapest (ties by name)."""
    chosen_places = {(p.site, p.instance) for p in chosen.parts}
    out = []
    for gpu in sorted({c.gpu for c in cands}):
        at_site: dict[str, list[Candidate]] = {}
        for c in cands:
            if c.gpu == gpu:
                at_site.setdefault(c.site, []).append(c)
        designs = []
        for k in range(2, len(at_site) + 1):
            best = []
            for site, cs in sorted(at_site.items()):
                parts = []
                for c in sorted(cs, key=lambda c: c.id):
                    use = _service_use(problem, w, c, 1.0 / (k - 1))
                    part = None if use is None else _part(problem, w, c, use, c.gpus)
                    if part is not None:
                        parts.append((part.cost_usd, c.id, part))
                if parts:
                    best.append(min(parts, key=lambda t: t[:2]))
            if len(best) < k:
                continue
            picked = sorted(best, key=lambda t: (t[0], t[2].site))[:k]
            parts = sorted((t[2] for t in picked), key=lambda p: p.site)
            if {(p.site, p.instance) for p in parts} == chosen_places:
                continue
            note = (f"each of {k} sites carries {'all' if k == 2 else f'1/{k - 1}'} of the demand, "
                    "so it survives losing any one")
            designs.append((_option(parts, gpu, note), ",".join(t[1] for t in picked)))
        if designs:
            out.append(min(designs, key=lambda t: (t[0].cost_usd, t[1])))
    return out


# --- owning against renting -----------------------------------------------------------------

def breakeven(problem: Problem) -> tuple[BreakEven, ...]:
    """Owned and bought GPUs against the same GPU type on demand in the cloud (see the module
    docstring)."""
    spec, cat = problem.spec, problem.candidates.catalog
    H = spec.horizon_months
    pairs: dict[tuple[str, str, str], dict] = {}     # (gpu, on-prem site, model) -> cloud, workloads
    for w in sorted(spec.workloads, key=lambda w: w.name):
        cands = problem.chosen_from.get(w.name, ())
        for gpu in sorted({c.gpu for c in cands}):
            cloud = {}
            for c in cands:
                if c.gpu != gpu or c.site_type != "cloud" or c.spot:
                    continue
                price = unit_costs.cloud_price(cat, spec.site(c.site), c.instance, "on_demand")
                if price is not None:
                    cloud[(c.site, c.instance)] = price * HOURS_PER_MONTH / c.gpus_per_node
            if not cloud:
                continue
            for s, i in sorted({(c.site, c.instance) for c in cands if c.gpu == gpu and c.site_type == "on_prem"}):
                pair = pairs.setdefault((gpu, s, i), {"cloud": {}, "workloads": []})
                pair["cloud"].update(cloud)
                pair["workloads"].append(w.name)
    rows = []
    for (gpu, s, i), pair in sorted(pairs.items()):
        (cs, ci), cloud_gpu_month = min(pair["cloud"].items(), key=lambda kv: (kv[1], kv[0]))
        site, node = spec.site(s), cat.onprem_nodes[i]
        power = HOURS_PER_MONTH * unit_costs.power_usd_per_node_hour(node, site) / node.gpus
        support = node.support_usd_per_year / 12.0 / node.gpus
        common = {"gpu": gpu, "on_prem_site": s, "on_prem_instance": i, "cloud_site": cs,
                  "cloud_instance": ci, "cloud_pricing": "on_demand", "cloud_usd_per_gpu_month": _r(cloud_gpu_month),
                  "note": f"{', '.join(pair['workloads'])} could run on {gpu} both at {s} and in the cloud"}
        if owned_nodes(site, i):
            cheaper = cloud_gpu_month > power
            rows.append(BreakEven(**common, on_prem_basis="owned", on_prem_fabric="",
                                  on_prem_capex_usd_per_gpu=0.0, on_prem_opex_usd_per_gpu_month=_r(power),
                                  breakeven_months=0.0 if cheaper else None,
                                  breakeven_utilization=0.0 if cheaper else None))
        if fits_alone(problem, site, i, 1):
            fabric = cheapest_fabric(problem, i)
            wiring = unit_costs.fabric_cost_per_node(cat.fabrics[fabric]) if fabric else 0.0
            capex = (node.capex_usd + wiring) / node.gpus
            credited = (unit_costs.capex_charged(node, H, problem.spec.policy.after_horizon) + wiring) / node.gpus
            saving = cloud_gpu_month - power - support
            margin = H * (cloud_gpu_month - power)
            rows.append(BreakEven(**common, on_prem_basis="purchase", on_prem_fabric=fabric,
                                  on_prem_capex_usd_per_gpu=_r(capex),
                                  on_prem_opex_usd_per_gpu_month=_r(power + support),
                                  breakeven_months=round(capex / saving, 2) if saving > 0 else None,
                                  breakeven_utilization=(round((credited + H * support) / margin, 3)
                                                         if margin > 0 else None)))
    return tuple(rows)
