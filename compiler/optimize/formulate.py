r"""FORMULATE: Candidates -> Problem, a pulp-free MILP with named variables and constraints.

The model
=========

Notation
--------
  M = {0..H-1}       months of the horizon (H = spec.horizon_months), 730 h each
  W_T, W_I           training and inference workloads
  C_w                candidates of workload w (after policy/pin filters and the exact reductions)
  for a candidate c:  s(c) site, i(c) instance / node model, g_c GPUs (training: held;
                      inference: per replica), n_c nodes held (training), h_{c,m} hours
                      run in month m (training), tau_c output tokens/s of one replica
  P_cloud            cloud pools p = (site, instance) with a non-spot candidate
  P_onprem           on-prem pools q = (site, node model) with a candidate
  G_q                GPUs per node of pool q; O_q owned nodes; Phi_q fabrics offered
  D_{w,m}            output tokens/s demanded: rps * out_tokens * (1+growth)^(m-start), m >= start

Decisions
---------
  x_c  in {0,1}      training candidate c chosen                       (c in C_w, w in W_T)
  y_{c,m} in Z+      replicas of inference candidate c in month m      (w in W_I, m >= start)
  b_q in Z+          nodes bought in on-prem pool q
  f_{q,phi} in {0,1} fabric phi chosen for pool q; z_{q,phi} >= 0 bought nodes wired with phi
  r_{p,k,a} in Z+    reserved nodes of term k (1y, 3y) starting in month a, cloud pool p
  u_{p,m} >= 0       on-demand node-hours of pool p in month m
  v_{p,m} in Z+      nodes carrying inference replicas in cloud pool p, month m
  S_{s,t,m} >= 0     TB of storage tier t at site s in month m; e_{s,t,m} in {0,1} tier open;
  K_{s,t} >= 0       peak TB of an on-prem tier (bought once)

Objective (USD over the horizon; compiler/unit_costs.py documents every unit cost)
---------
  min  sum_c spot_c * n_c * sum_m h_{c,m} * x_c                      cloud spot
     + sum_{p,m} price_od(p) * u_{p,m}                               cloud on-demand
     + sum_{p,k,a} price_k(p) * 730 * T_{k,a} * r_{p,k,a}            cloud reserved
     + sum_q (capex_q * L_q + support(q) * H/12) * b_q                capex + support
     + sum idle tails (16)                                           commitments after the horizon
     + sum_{q,phi} fabric(phi) * z_{q,phi}                           fabric
     + sum_c power(q) * n_c * sum_m h_{c,m} * x_c                    on-prem power (training)
     + sum_{c,m} power(q) * g_c/G_q * 730 * y_{c,m}                  on-prem power (inference)
     + sum_{s,t,m} $/TB-month * S_{s,t,m} + sum capex_t * K_{s,t}    storage
     + sum_c egress_c * x_c                                          egress (data away from home)

  Commitments that outlive the horizon (policy.after_horizon; docs/optimizer.md): under
  `full`, T_{k,a} = term_k months and L_q = 1 (every month of a term, the whole purchase price);
  under `prorated` (the default) and `continues`, T_{k,a} = |term(k,a) & M| and
  L_q = min(1, H / life) (the months inside the horizon, a node's life counted from month 0), and
  under `continues` rows (16) charge the rest for idle nodes only.

Constraints
-----------
  (1)  one[w]:             sum_{c in C_w} x_c = 1                                   w in W_T
  (2)  demand[w@m]:        sum_{c in C_w} tau_c y_{c,m} >= D_{w,m}                    w in W_I
  (3)  survive[w@m/-s]:    sum_{c in C_w, s(c) != s} tau_c y_{c,m} >= D_{w,m}
                           for every site s, when slo.availability >= 0.999 (N+1 across sites)
  (4)  quota[s/gpu@m]:     sum_{c at s, gpu} g_c x_c [h_{c,m}>0] + sum_p G_p v_{p,m} <= quota
  (5)  fabric[q]:          sum_phi f_{q,phi} <= 1;   fabric_use[c]: x_c <= f_{q,phi(c)} for
                           multi-node training (one-node jobs and inference replicas stay inside
                           a node: fabric-free, any wiring will do);
                           fabric_nodes[q/phi]: z_{q,phi} >= b_q - B_q (1 - f_{q,phi}) and
                           fabric_nodes_max: z_{q,phi} <= b_q, z_{q,phi} <= B_q f_{q,phi},
                           f_{q,phi} <= sum of its users' x_c; b_q pays the cheapest fabric
                           offered, z_{q,phi} the difference to phi
  (6)  capacity[q@m]:      sum_c g_c x_c [h_{c,m}>0] + sum_c g_c y_{c,m} <= G_q (b_q + O_q)
                           (a job that runs any hours in m holds its GPUs in m; replicas pack
                           by GPU count, exact because tensor-parallel degrees divide G_q)
  (7)  power[s]:           sum_q kW_q * PUE * b_q <= power_kw   (the spec's budget for NEW nodes)
  (8)  racks[s]:           sum_q RU_q (b_q + O_q) / 42 <= max_racks;
       rack_power[s]:      sum_q kW_q (b_q + O_q) / rack_power_kw <= max_racks
  (9)  max_gpus[s]:        sum_q G_q (b_q + O_q) <= max_gpus
  (10) cloud_share:        cloud spend <= max_cloud_share * total spend
  (11) storage[s@m]:       sum_t S_{s,t,m} >= sum_{c at s active in m} (dataset_tb + ckpt_tb) x_c - E_s;
                           E_s: the TB the site already has (storage.existing_tb), free of charge;
                           storage_open: S <= BIG e, S >= min_tb e;  storage_peak: K >= S
  (12) ondemand[p@m]:      u_{p,m} >= sum_c n_c h_{c,m} x_c + 730 v_{p,m}
                                       - 730 sum_{k,a: a <= m < a+term_k} r_{p,k,a}
                           (reserved node-hours are shared by every job in the pool that
                           month; u_{p,m} = 0 where on_demand is not an allowed pricing)
  (12b) od_excess[c@m], ondemand_jobs[p@m]: u_{p,m} >= sum_c e_{c,m}, e_{c,m} >= h_{c,m} (n_c x_c
                           - w_{p,m}): a job runs on no more reserved nodes at once than the pool
                           has free of replicas, w_{p,m} = max(0, sum_{active} r - v_{p,m}) (jobs
                           running all month: (12) says it). Without replicas w = sum_{active} r;
                           with them res_free, res_taken: w <= R - v + vbar t, w <= n_max (1 - t),
                           t in {0,1} (t = 1: the replicas take every reserved node)
  (12a) pin_pricing[p/k@m]: a job pinned to on_demand buys its node-hours on demand
                           (u_{p,m} >= its n_c h_{c,m} x_c); one pinned to a reserved term runs on
                           reserved nodes of that term (730 sum_a r_{p,k,a} >= its n_c h_{c,m} x_c);
                           on-prem, jobs pinned to owned (purchase) nodes fit the owned (bought) ones
  (13) packing[p@m]:       G_p v_{p,m} >= sum_c g_c y_{c,m}

  (14) cuts (group `cut`, valid inequalities only: every integer solution of (1)-(13) keeps
       them, so the optimum is unchanged; explain.py's elastic re-solve drops them):
       mix[w@m]: each service-month chooses exactly one minimal replica mix (mixes.py: no
       replica can be dropped; every plan can drop down to one, so the optimum is unchanged),
       mix_y[y]: y_{c,m} = sum_k mix_k(c) lambda_k (>= under (15f): a plan may hold a replica
       beyond its mix to keep a pool up, and every plan's replicas still hold a mix), node_mix[y]: v_{p,m} >= sum_k
       ceil(g_c mix_k(c) / G_p) lambda_k (b_q for an on-prem pool with no owned nodes). The LP
       of one mix is the convex hull of the month's integer points. Service-months with more than
       Settings.max_mixes mixes get the per-row integer-hull facets of cuts.py instead; buy_for[c]:
       b_q >= (ceil(n_c G/G_q) - O_q) x_c for a training job larger than the owned nodes;
       storage_used[s/w@m]: sum_t e_{s,t,m} >= sum_{c of w at s} x_c;
       node_for[y]: v_{p,m} >= slope_c y_{c,m} (b_q for an on-prem pool with no owned nodes),
       slope_c = min_{1<=k<=U} ceil(g_c k / G_p) / k: one replica already needs a whole node;
       cover[w@m], cover[w@m/-s]: each demand and N+1 row in whole nodes, sum_p min(cap_{w,p}, D)
       N_p >= D with cap_{w,p} = G_p max_c tau_c / g_c, and their MIR cuts (cuts.node_mirs);
       cover[w@m/2]: sum_p min(D, 2 cap_{w,p}) N_p >= 2D for N+1 services (_node_covers proves it).
  (15) operability limits of the policy (group `operability`: max_types, mix_hold, which explain.py
       may relax; the rows that define their indicators: group `operability_link`):
       (15a) type_use[y], max_types[w/s] (max_instance_types_per_site K): T_{w,s,i} in {0,1},
             y_{c,m} <= ub_{c,m} T_{w,s(c),i(c)}, sum_i T_{w,s,i} <= K at each site s where w
             has more than K instance types;
       (15b) in_mix[y], in_mix_some[y], mix_change[c@m/+-], mix_hold[w@a] (min_months_per_mix
             N > 1): u_{c,m} in {0,1} with u <= y <= ub u; chg_{w,m} >= |u_{c,m} - u_{c,m-1}|
             for m after w's first month; sum_{m=a}^{a+N-1} chg_{w,m} <= 1 for every month a, and
             0 for a = the first month (its start counts as a change);
       (15c) max_spot_share below 1: no spot candidate (a job runs all on spot or none), a
             filter applied with the policy's, before the reductions;
       (15d), (15e) uses_site[y], max_sites[w] (max_sites_per_service S), uses_gpu[y],
             max_gpu_types[w] (max_gpu_types_per_service G): as (15a) with the key a site or a
             GPU type and the sum over the whole service: at most S sites, at most G GPU types;
       (15f) pool_on, pool_start, pool_life[p@m] (min_pool_months N > 1), cloud pools with
             replicas: o_{p,m} in {0,1} with o <= sum_c y_{c,m} and v_{p,m} <= U_{p,m} o;
             s_{p,m} >= o_{p,m} - o_{p,m-1}; sum_{j=m-N+1}^{m} s_{p,j} <= o_{p,m} (each run of
             months with replicas lasts N months, or to the horizon's end).
       Under (15b) the mixes of (14) and reductions.replica_caps are not used (their arguments
       drop replicas a mix may need to hold; docs/optimizer.md, "Exact reductions").
  Bounds: y_{c,m} <= ceil(D_{w,m} / tau_c) (c alone carries month m); b_q <= nodes the busiest
  month could fill (the fabric big-M B_q); inodes are continuous when every replica in the pool
  fills whole nodes (then (13) makes them integral anyway).

  (16) idle_tail (policy.after_horizon: continues only): the months of a commitment after the
       horizon are paid for the nodes the last month's load leaves idle.
       Cloud pool p, for each run J of months after H with the same terms active:
         idle_tail[p@J]: sum_k t_{p,k,J} >= sum_{k,a active in J} r_{p,k,a} - L_p / 730,
         idle_term[p/k@J]: t_{p,k,J} <= sum_{a active in J} r_{p,k,a} (where two terms are active),
         t_{p,k,J} >= 0 at price_k(p) * 730 * |J| (the LP idles the cheaper term first: exact),
         L_p = the node-hours of month H-1 its jobs run (row (12)'s) and its credited replicas'
         GPUs fill (730 g_c / G_p k_c: not the node count v, which may exceed what they fill).
       Credited replicas: tail_credit[c]: 0 <= k_c <= y_{c,H-1}; tail_forecast[w]: sum_c tau_c k_c
         <= D_{w,H-1}: the load that continues is the traffic the spec forecasts for month H-1,
         not the plan's replicas (spares for a site's loss and replicas beyond the traffic earn
         no credit, so padding the last month never lowers the tail).
       On-prem pool q: idle_tail[q]: t_q >= b_q - a_q, t_q >= 0 at capex_q * (1 - L_q), a_q the
         load of month H-1 beyond the owned nodes, max(0, U_q / G_q - O_q) (U_q its GPUs in use,
         replicas counted as credited, k_c):
         a_q = U_q / G_q where O_q = 0; else idle_load[q]: a_q <= U_q / G_q - O_q s_q,
         idle_load_on[q]: a_q <= B_q s_q, s_q binary (whether the load passes the owned nodes).

  (17) Savings Plans (sites whose pricing lists savings_plan_1y / _3y; savings_plan_rows.py has
       the rows): commitments C_{k,a} in USD per hour cover each month's on-demand usage at the
       plan's rate: level usage and part-month jobs' hours, within the commitment each hour.
  (18) Capacity Blocks (sites whose pricing lists capacity_block; capacity_block_rows.py has the
       rows): k_c in {0,1}, k_c <= x_c, at the block's price for the job's nodes and days; a job
       on its block takes its node-hours off (12), (12b), (16) and (17): n_c h_{c,m} (x_c - k_c).

Policy (placement, allowed GPUs, site restrictions, pins) is applied as candidate filters
before the model is built; reductions.py removes only what provably no optimal plan needs
(docs/optimizer.md, "Exact reductions").
Each constraint keeps the spec path that caused it, so explain.py can point at the line.
Each variable and constraint also carries what it is about as typed fields (family, workload,
candidate, site, instance, tier, month, ...), set here where it is made: the other modules read
those and never parse a name back (the names are for the solver and the plan's readers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Mapping

from compiler import unit_costs
from compiler.candidates import Candidate, Candidates
from compiler.estimate.inference import demand_series
from compiler.estimate.memory import checkpoint_tb
from compiler.estimate.options import reserved_sold
from compiler.optimize.cuts import node_mirs, row_cuts
from compiler.optimize.mixes import minimal_mixes
from compiler.optimize.savings_plan_rows import savings_plans
from compiler.optimize.capacity_block_rows import block_prices, block_rows, job_terms
from compiler.optimize.reductions import prune, replica_caps
# the Problem's types and names, used here and re-exported for F.* readers
from compiler.problem import (
    Constraint, Problem, Reservation, TERMS, Variable, buy_name, capacity_name, demand_name,
    fab_name, fabn_name, fabric_free, inode_name, od_name, owned_nodes, pin_nodes_name,
    pin_pricing_name, pinned_cloud_pricing, pinned_onprem_pricing, policy_filter, pricing_of,
    quota_name, res_name, res_taken_name, series_name, sopen_name, speak_name, stor_name,
    survive_name, x_name, y_name)  # noqa: F401
from compiler.spec import HOURS_PER_MONTH, RACK_UNITS, CloudSite, InferenceWorkload, OnPremSite, Spec


def reserved_pools(candidates: Candidates) -> frozenset:
    """The cloud pools (site, instance) where a reserved term is sold and allowed: the only ones
    whose node-hours rows (12), (12b) share hours month by month (reductions.prune)."""
    pools = {(c.site, c.instance) for cs in candidates.by_workload.values() for c in cs if c.site_type == "cloud"}
    spec = candidates.spec
    return frozenset((s, i) for s, i in pools if reserved_sold(spec.site(s), i, candidates.catalog))


def site_new_nodes(site: OnPremSite, node) -> int:
    """The most new nodes of one model the site's power budget (7), racks (8) and GPUs (9) admit."""
    return max(0, min(site.nodes_admitted(node.power_kw, node.rack_units, node.gpus)))


def problem_cands_at(chosen: Mapping[str, tuple[Candidate, ...]], site: str, inst: str) -> list[Candidate]:
    return [c for cs in chosen.values() for c in cs if c.site == site and c.instance == inst]


def pool_base_fabric(cands: list[Candidate], cat) -> str:
    """The cheapest fabric offered for an on-prem pool (by the candidates' labels): what its nodes
    are wired with when no multi-node job needs more. Ties by name."""
    offered = sorted({c.fabric for c in cands if c.fabric in cat.fabrics})
    if not offered:
        return ""
    return min(offered, key=lambda f: (unit_costs.fabric_cost_per_node(cat.fabrics[f]), f))


INODE_KIND = "integer"  # whole nodes per month carry the replicas (13)


def replicas_needed(demand: float, tokens_per_s: float) -> int:
    """Replicas of one candidate that carry `demand` output tokens/s alone."""
    return max(1, math.ceil(demand / tokens_per_s - 1e-9))


def _add_cuts(B: "_Builder", row: str, terms: dict[str, float], demand: float, path: str, key: dict) -> None:
    """Integer-hull cuts of one demand row (cuts.py); group `cut`, dropped when explaining. `key`:
    the row's typed fields (family, ...), which its cuts keep."""
    names = sorted(terms)
    taus = tuple(terms[n] for n in names)
    ubs = tuple(int(B.vars[n].ub) for n in names)
    for k, (coef, rhs) in enumerate(row_cuts(taus, ubs, demand)):
        B.con(f"{row}#cut{k:02d}", "cut", dict(zip(names, coef)), ">=", rhs, path,
              "valid inequality: whole replicas carry the demand", **key)


def _add_mixes(B: "_Builder", spec: Spec, cat, w, m: int, cands, found):
    """One binary per minimal replica mix of w in month m (mixes.py): exactly one is chosen and
    fixes every y_{c,m}. A valid reformulation (every optimal plan can drop replicas to a mix), so
    its rows join the `cut` group that explain.py drops. Each mix also tells how many whole nodes
    its replicas need in each pool (node_mix rows), which one service's rows alone cannot."""
    path = w.path
    names = [f"mix[{w.name}@{m:03d}#{k:03d}]" for k in range(len(found))]
    for n in names:
        B.var(n, "binary", family="mix", workload=w.name, month=m)
    B.con(f"mix[{w.name}@{m:03d}]", "cut", {n: 1.0 for n in names}, "==", 1.0, path,
          f"{w.name} runs one minimal mix of replicas in month {m}", family="mix", workload=w.name, month=m)
    out = [(n, tuple((y_name(c, m), r) for c, r in zip(cands, mix) if r)) for n, mix in zip(names, found)]
    # Under a pool-life limit a plan may keep a replica no row needs, to keep its pool up: every
    # plan's replicas still hold a minimal mix (drop them one by one while the rows hold), so
    # y >= the mix's count is valid where y = it is not.
    sense = ">=" if spec.policy.limits_pool_life else "=="
    for j, c in enumerate(cands):
        yn = y_name(c, m)
        about = dict(workload=c.workload, candidate=c.id, month=m)
        B.con(f"mix_y[{yn}]", "cut", {yn: 1.0, **{n: -float(mix[j]) for n, mix in zip(names, found) if mix[j]}},
              sense, 0.0, path, f"{yn} holds its mix's replica count", family="mix_y", **about)
        if c.site_type == "cloud":
            node_var, gpn = inode_name(c.site, c.instance, m), cat.instances[c.instance].gpus
        elif not owned_nodes(spec.site(c.site), c.instance, m):
            node_var, gpn = buy_name(c.site, c.instance), c.gpus_per_node
        else:
            continue   # owned nodes may carry a mix for free
        need = {n: float(math.ceil(c.gpus * mix[j] / gpn - 1e-9)) for n, mix in zip(names, found)}
        if any(v * gpn > c.gpus * mix[j] + 1e-9 for v, mix in zip(need.values(), found)):
            B.con(f"node_mix[{yn}]", "cut", {node_var: 1.0, **{n: -v for n, v in need.items()}}, ">=", 0.0,
                  path, "valid inequality: a mix's replicas sit on whole nodes", family="node_mix", **about)
    return tuple(out)


def node_slope(gpus: int, gpn: int, ub: int) -> float:
    """Slope of the convex hull of {(y, v) integer: gpn v >= gpus y, 0 <= y <= ub} from the origin:
    min over 1 <= k <= ub of ceil(gpus k / gpn) / k. One replica already needs a whole node."""
    return min(math.ceil(gpus * k / gpn - 1e-9) / k for k in range(1, max(1, ub) + 1))


def _add_node_cut(B: "_Builder", name: str, vn: str, yn: str, gpus: float, gpn: int, owned: int,
                  path: str) -> None:
    """Valid inequality v >= slope * y: the nodes of a pool carry whole replicas (a pool with any
    replica of c has at least one node). Stronger than packing (13) when few replicas are needed;
    only where no owned nodes could carry them for free."""
    if owned:
        return
    y = B.vars[yn]
    slope = node_slope(int(gpus), gpn, int(y.ub or 1))
    if slope > gpus / gpn + 1e-9:
        B.con(name, "cut", {vn: 1.0, yn: -slope}, ">=", 0.0, path,
              "valid inequality: replicas sit on whole nodes", family="node_for", workload=y.workload,
              candidate=y.candidate, month=y.month)


# --- the builder ------------------------------------------------------------------------

class _Builder:
    def __init__(self) -> None:
        self.vars: dict[str, Variable] = {}
        self.cons: dict[str, Constraint] = {}

    def var(self, name: str, kind: str, ub: float | None = None, *, family: str,
            usd: Mapping[str, float] | None = None, **key) -> str:
        """The variable `name` (made once): `usd` its cost per unit by breakdown category, `key`
        its typed fields (Variable: month, workload, candidate, site, ...)."""
        if name not in self.vars:
            self.vars[name] = Variable(name, kind, ub, tuple(sorted((k, v) for k, v in (usd or {}).items() if v)),
                                       family=family, **key)
        return name

    def add_cost(self, name: str, category: str, usd: float) -> None:
        v = self.vars[name]
        merged = dict(v.costs)
        merged[category] = merged.get(category, 0.0) + usd
        self.vars[name] = replace(v, costs=tuple(sorted((k, x) for k, x in merged.items() if x)))

    def con(self, name: str, group: str, terms: dict[str, float], sense: str, rhs: float,
            path: str = "", meaning: str = "", *, family: str, **key) -> None:
        """The row `name`: `key` its typed fields (Constraint: month, workload, site, ...)."""
        t = tuple(sorted((k, v) for k, v in terms.items() if v))
        self.cons[name] = Constraint(name, group, t, sense, rhs, path, meaning, family=family, **key)


def _add(d: dict, key, name: str, coef: float) -> None:
    d.setdefault(key, {})
    d[key][name] = d[key].get(name, 0.0) + coef


@dataclass
class _State:
    """What the builders share while the model is written: the builder, the candidates kept, and
    per-pool usage terms collected from the workloads (constraint numbers as in the docstring)."""
    candidates: Candidates
    spec: Spec
    cat: object
    H: int
    months: range
    B: "_Builder"
    chosen: dict[str, tuple[Candidate, ...]]
    dropped: dict[str, tuple[str, ...]]
    caps: dict[str, int]                                        # inference candidate -> replica cap
    by_id: dict[str, Candidate]
    demand: dict[str, tuple[float, ...]]
    onprem_gpu: dict = field(default_factory=dict)              # (6)
    quota_gpu: dict = field(default_factory=dict)               # (4)
    od_hours: dict = field(default_factory=dict)                # (12)
    packing: dict = field(default_factory=dict)                 # (13)
    storage_need: dict = field(default_factory=dict)            # (11)
    fabric_users: dict = field(default_factory=dict)            # (5) multi-node job ids
    pools_onprem: set = field(default_factory=set)
    pool_peak: dict = field(default_factory=dict)               # pool@m -> workload -> most GPUs
    pools_cloud: dict = field(default_factory=dict)             # pool -> months it may be used
    pinned_hours: dict = field(default_factory=dict)            # (12a) pool@m/pricing
    pinned_gpus: dict = field(default_factory=dict)             # (12a) on-prem pool@m/owned|purchase
    pin_path: dict = field(default_factory=dict)
    tail_credit: dict = field(default_factory=dict)             # (16) y of month H-1 -> its credit
    mixes: dict = field(default_factory=dict)                   # (14)
    reservations: list = field(default_factory=list)
    od_vars: dict = field(default_factory=dict)                 # (12) pool@m -> on-demand variable
    savings_plans: list = field(default_factory=list)           # (17) commitments
    capacity_blocks: list = field(default_factory=list)         # (18) training candidates' blocks
    base_fabrics: dict = field(default_factory=dict)
    by_site: dict = field(default_factory=dict)                 # on-prem site -> its pools' node models

    @classmethod
    def start(cls, candidates: Candidates, reuse: dict | None = None) -> "_State":
        """Filter each workload's candidates by policy and pin, then apply the exact reductions."""
        spec = candidates.spec
        H = spec.horizon_months
        chosen, caps, dropped = kept_candidates(candidates, reuse)
        return cls(candidates=candidates, spec=spec, cat=candidates.catalog, H=H, months=range(H), B=_Builder(),
                   chosen=chosen, dropped=dropped, caps=caps,
                   by_id={c.id: c for cs in chosen.values() for c in cs},
                   demand={w.name: demand_series(w, H) for w in spec.workloads if isinstance(w, InferenceWorkload)})


def _pools_of(given: tuple[Candidate, ...], reuse: dict | None) -> frozenset:
    """The (site, instance) pools of a workload's candidates, kept in `reuse` with the tuple."""
    if reuse is None:
        return frozenset()
    hit = reuse.get(("pools", id(given)))
    if hit is None or hit[0] is not given:
        hit = reuse[("pools", id(given))] = (given, frozenset((c.site, c.instance) for c in given))
    return hit[1]


def kept_candidates(candidates: Candidates, reuse: dict | None = None
                    ) -> tuple[dict[str, tuple[Candidate, ...]], dict[str, int], dict[str, tuple[str, ...]]]:
    """What the model is built from: each workload's candidates after the policy and pin filters
    and the exact reductions (sorted by id), the inference replica caps, and the filters' reasons.

    `reuse`: a dict the caller keeps between formulations of candidates that share their spec
    and most workloads' candidate tuples (optimize/narrow.py cuts a few services a round): a
    workload whose tuple, spec and reserved pools are the same objects and values as before gets
    what it got then, not a second run of the reductions over its (often 100,000) counts."""
    spec = candidates.spec
    share_capped = spec.policy.caps_cloud_share
    chosen: dict[str, tuple[Candidate, ...]] = {}
    caps: dict[str, int] = {}
    dropped: dict[str, tuple[str, ...]] = {}
    monthly = reserved_pools(candidates)
    for w in spec.workloads:
        given = candidates.by_workload.get(w.name, ())
        # prune reads the reserved pools of this workload's own candidates only
        key = (w.name, id(given), id(spec), monthly & _pools_of(given, reuse))
        if reuse is not None and key in reuse and reuse[key][0] is given and reuse[key][1] is spec:
            chosen[w.name], own_caps, dropped[w.name] = reuse[key][2]
            caps.update(own_caps)
            continue
        kept, why = policy_filter(spec, w, tuple(given))
        kept = prune(kept, spec.horizon_months, share_capped, monthly,
                     block_prices(spec, candidates.catalog, kept))
        own_caps: dict[str, int] = {}
        if isinstance(w, InferenceWorkload) and not spec.policy.limits_churn:
            # Under a mix-hold limit a swap of one candidate's replicas for another's can change
            # the month's mix, so the caps' argument fails there: no caps (docs/optimizer.md).
            own_caps = replica_caps(kept, share_capped)
            kept = [c for c in kept if own_caps.get(c.id, 1) > 0]
        caps.update(own_caps)
        chosen[w.name] = tuple(sorted(kept, key=lambda c: c.id))
        dropped[w.name] = tuple(f"{c.id}: {reason}" for c, reason in why)
        if reuse is not None:
            reuse[key] = (given, spec, (chosen[w.name], own_caps, dropped[w.name]))
    return chosen, caps, dropped


def _services(st: "_State", w: InferenceWorkload) -> None:
    """Replicas y (integer, bounded), demand (2) and N+1 rows (3), mixes or row cuts (14)."""
    B, spec, cat, months = st.B, st.spec, st.cat, st.months
    chosen, caps, demand, onprem_gpu = st.chosen, st.caps, st.demand, st.onprem_gpu
    packing, pools_onprem, pool_peak, pools_cloud = st.packing, st.pools_onprem, st.pool_peak, st.pools_cloud
    mixes, = st.mixes,
    add = _add
    cands = chosen[w.name]
    D = demand[w.name]
    active = [m for m in months if D[m] > 0]
    for c in cands:
        site = spec.site(c.site)
        tau = c.estimate.tokens_per_s
        for m in active:
            # c alone carries month m with ceil(D/tau) replicas; more never helps (every
            # constraint y appears in is a demand to cover or a resource to spend).
            ub_m = min(replicas_needed(D[m], tau), caps.get(c.id, math.inf))
            yn = B.var(y_name(c, m), "integer", ub_m, family="y", workload=c.workload, candidate=c.id, month=m)
            if isinstance(site, OnPremSite):
                node = cat.onprem_nodes[c.instance]
                B.add_cost(yn, "power", c.gpus / c.gpus_per_node * HOURS_PER_MONTH
                           * unit_costs.power_usd_per_node_hour(node, site))
                add(onprem_gpu, (c.site, c.instance, m), yn, c.gpus)
                if pinned_onprem_pricing(w):
                    add(st.pinned_gpus, (c.site, c.instance, m, pinned_onprem_pricing(w)), yn, c.gpus)
                    st.pin_path[w.name] = f"{w.path}.pin.pricing"
                add(pool_peak, (c.site, c.instance, m), w.name, ub_m * c.gpus)
            else:
                add(packing, (c.site, c.instance, m), yn, c.gpus)
        if isinstance(site, OnPremSite):
            pools_onprem.add((c.site, c.instance))
        else:
            pools_cloud.setdefault((c.site, c.instance), set()).update(active)
    if spec.policy.after_horizon == "continues" and st.H - 1 in active:
        _tail_credits(st, w, cands)
    survive = w.slo.survives_site_loss
    too_many = math.inf   # a demand whose mixes ran over budget: more demand would too
    for m in active:
        terms = {y_name(c, m): c.estimate.tokens_per_s for c in cands}
        key = dict(family="demand", workload=w.name, month=m)
        rows = [(demand_name(w.name, m), terms, key)]
        B.con(rows[0][0], "demand", terms, ">=", D[m], f"{w.path}.traffic",
              f"{w.name} must carry {D[m]:,.0f} output tokens/s in month {m}", **key)  # (2)
        if survive:
            for s in sorted({c.site for c in cands}):
                t = {y_name(c, m): c.estimate.tokens_per_s for c in cands if c.site != s}
                key = dict(family="survive", workload=w.name, without=s, month=m)
                rows.append((survive_name(w.name, s, m), t, key))
                B.con(rows[-1][0], "availability", t, ">=", D[m], f"{w.path}.slo.availability",
                      f"{w.name} must carry {D[m]:,.0f} tokens/s in month {m} without {s}", **key)  # (3)
        # Under a mix-hold limit a plan may keep a replica no demand row needs (to keep its mix),
        # so "one minimal mix a month" is not a valid reformulation there: row cuts instead.
        found = None if D[m] >= too_many or spec.policy.limits_churn else minimal_mixes(
            tuple(c.estimate.tokens_per_s for c in cands),
            tuple(int(B.vars[y_name(c, m)].ub) for c in cands),
            tuple(c.site for c in cands), D[m], survive)
        if found is None:
            too_many = min(too_many, D[m])
        if found:
            mixes[(w.name, m)] = _add_mixes(B, spec, cat, w, m, cands, found)
            continue
        # Too many mixes (or none: explain.py reports that): cuts on each row instead.
        for row, t, key in rows:
            _add_cuts(B, row, t, D[m], w.path, key)


def _tail_credits(st: "_State", w: InferenceWorkload, cands) -> None:
    """(16) the replicas of month H-1 whose load continues after the horizon: at most each
    candidate's replicas, and together no more than the traffic the spec forecasts then."""
    B, m = st.B, st.H - 1
    credits = {}
    for c in cands:
        yn = y_name(c, m)
        kn = st.tail_credit[yn] = B.var(f"tail_credit[{c.id}]", "continuous", B.vars[yn].ub, family="tail_credit",
                                        workload=w.name, candidate=c.id, site=c.site, instance=c.instance, month=m)
        B.con(f"tail_credit[{c.id}]", "after_horizon", {kn: 1.0, yn: -1.0}, "<=", 0.0, "$.policy.after_horizon",
              f"{w.name}'s replicas on {c.instance} at {c.site} credited after the horizon are replicas it runs "
              f"in month {m}", family="tail_credit", workload=w.name, candidate=c.id, month=m)
        credits[kn] = c.estimate.tokens_per_s
    B.con(f"tail_forecast[{w.name}]", "after_horizon", credits, "<=", st.demand[w.name][m], f"{w.path}.traffic",
          f"{w.name}'s load credited after the horizon is the traffic forecast for month {m}",
          family="tail_forecast", workload=w.name, month=m)


def credited(st: "_State", terms: Mapping[str, float]) -> dict[str, float]:
    """A pool's month-(H-1) usage terms with each replica count replaced by its credit (16)."""
    return {st.tail_credit.get(k, k): v for k, v in terms.items()}


def _training(st: "_State", w) -> None:
    """One binary per candidate (1), its costs and its usage of pools, quota and storage."""
    B, spec, cat, H = st.B, st.spec, st.cat, st.H
    chosen, onprem_gpu, quota_gpu, od_hours = st.chosen, st.onprem_gpu, st.quota_gpu, st.od_hours
    storage_need, fabric_users = st.storage_need, st.fabric_users
    pools_onprem, pool_peak = st.pools_onprem, st.pool_peak
    pools_cloud, pinned_hours, pin_path = st.pools_cloud, st.pinned_hours, st.pin_path
    add = _add
    cands = chosen[w.name]
    pinned_term = pinned_cloud_pricing(w)
    onprem_pin = pinned_onprem_pricing(w)
    if pinned_term or onprem_pin:
        pin_path[w.name] = f"{w.path}.pin.pricing"
    home = w.data.home if w.data else None
    ds_tb = w.data.dataset_tb if w.data else 0.0
    ck_tb = checkpoint_tb(w, cat)
    for c in cands:
        site = spec.site(c.site)
        xn = B.var(x_name(c), "binary", family="x", workload=c.workload, candidate=c.id)
        kn = block_rows(st, c, xn)      # (18)
        hours_total = sum(h for m, h in c.usage if m < H)  # the plan prices the horizon only
        if home and c.site != home and ds_tb:
            B.add_cost(xn, "egress", ds_tb * unit_costs.egress_usd_per_tb(cat, spec.site(home)))
        for m, h in c.usage:
            if m >= H or h <= 0:
                continue
            add(storage_need, (c.site, m), xn, ds_tb + ck_tb)
            if isinstance(site, OnPremSite):
                add(onprem_gpu, (c.site, c.instance, m), xn, c.gpus)
                if onprem_pin:
                    add(st.pinned_gpus, (c.site, c.instance, m, onprem_pin), xn, float(c.gpus))
                key = (c.site, c.instance, m)
                pool_peak.setdefault(key, {})
                pool_peak[key][w.name] = max(pool_peak[key].get(w.name, 0.0), float(c.gpus))
            else:
                add(quota_gpu, (c.site, c.gpu, m), xn, c.gpus)
                if not c.spot:
                    add(od_hours, (c.site, c.instance, m), xn, c.nodes * h)
                    if kn:
                        add(od_hours, (c.site, c.instance, m), kn, -c.nodes * h)
                    if pinned_term:
                        add(pinned_hours, (c.site, c.instance, m, pinned_term), xn, c.nodes * h)
        if isinstance(site, OnPremSite):
            node = cat.onprem_nodes[c.instance]
            B.add_cost(xn, "power", c.nodes * hours_total * unit_costs.power_usd_per_node_hour(node, site))
            pools_onprem.add((c.site, c.instance))
            if not fabric_free(c):
                fabric_users.setdefault((c.site, c.instance, c.fabric), []).append(c.id)
        elif c.spot:
            price = unit_costs.cloud_price(cat, site, c.instance, "spot") or 0.0
            B.add_cost(xn, "cloud_compute", price * c.nodes * hours_total)
        else:
            pools_cloud.setdefault((c.site, c.instance), set()).update(
                m for m, h in c.usage if h > 0 and m < H)
    B.con(f"one[{w.name}]", "placement", {x_name(c): 1.0 for c in cands}, "==", 1.0, w.path,
          f"{w.name} runs on exactly one candidate", family="one", workload=w.name)  # (1)


def _cloud_pools(st: "_State") -> None:
    """Reserved terms, on-demand hours (12), (12b), pinned pricing (12a), packing (13): each cloud
    pool's terms once, then its rows month by month; then the Savings Plans' rows (17) over them."""
    loads: dict = {}
    for (s, i) in sorted(st.pools_cloud):
        res_vars = _reserved_terms(st, s, i)
        gpn = st.cat.instances[i].gpus
        last_load: dict[str, float] = {}
        for m in st.months:
            hours = dict(st.od_hours.get((s, i, m), {}))
            pack = st.packing.get((s, i, m))
            if pack:
                vn = _cloud_packing(st, s, i, m, pack)
                hours[vn] = hours.get(vn, 0.0) + HOURS_PER_MONTH
            if m == st.H - 1:
                # the GPUs busy, not the replicas' node count: that one may exceed what they fill
                last_load = {**st.od_hours.get((s, i, m), {}),
                             **credited(st, {yn: HOURS_PER_MONTH * g / gpn for yn, g in (pack or {}).items()})}
            if not hours:
                continue
            un = st.od_vars[(s, i, m)] = _cloud_ondemand(st, s, i, m, hours, res_vars, pack)
            _cloud_pinned(st, s, i, m, un, res_vars)
        loads[(s, i)] = last_load
        if st.spec.policy.after_horizon == "continues":
            # held terms are sunk after the horizon too: the tail charges only the terms bought
            _cloud_idle_tail(st, s, i, [r for r in res_vars if r[1] >= 0], last_load)
    st.savings_plans = savings_plans(st, loads)   # (17)


def _reserved_terms(st: "_State", s: str, i: str) -> list[tuple[str, int, int]]:
    """A cloud pool's reserved-term variables, (name, start month, term months) each, one per
    term sold and month the pool may be used; recorded as the Problem's reservations too."""
    site, H = st.spec.site(s), st.H
    # A term may start in any month the pool may be used: one starting in a month it cannot be
    # is no better than starting a month later (same cost or less, no useful hour lost).
    starts = sorted(st.pools_cloud[(s, i)])
    res_vars = []
    for term in TERMS:
        price = unit_costs.cloud_price(st.cat, site, i, term)
        if price is None:
            continue
        tm = unit_costs.TERM_MONTHS[term]
        for a in starts:
            covered = min(H, a + tm) - a
            paid = unit_costs.term_months_charged(term, a, H, st.spec.policy.after_horizon)
            rn = st.B.var(res_name(s, i, term, a), "integer", None, family="reserved", site=s, instance=i,
                          pricing=term, usd={"cloud_compute": price * HOURS_PER_MONTH * paid})
            res_vars.append((rn, a, tm))
            st.reservations.append(Reservation(rn, s, i, term, a, range(a, a + covered)))
    return res_vars + _held_terms(st, s, i)


def _held_terms(st: "_State", s: str, i: str) -> list[tuple[str, int, int]]:
    """A cloud pool's commitments already bought (the spec's `reserved`): each a reserved-term
    variable that began before the horizon (start month negative), held at its nodes by a row and
    costing nothing here (what it costs is sunk: paid whatever the plan does). In every row a
    term active in a month is in (12), (12b), (12a) it is one like any other, so the plan uses
    its nodes before it rents or reserves; it takes no part in the idle tail (16)."""
    site, H = st.spec.site(s), st.H
    out = []
    for term in TERMS:
        began: dict[int, int] = {}
        for r in site.held(i):
            if r.term == term:
                began[r.start_month] = began.get(r.start_month, 0) + r.nodes
        tm = unit_costs.TERM_MONTHS[term]
        for a, nodes in sorted(began.items()):
            rn = st.B.var(res_name(s, i, term, a), "integer", float(nodes), family="reserved", site=s, instance=i,
                          pricing=term)
            st.B.con(f"held[{s}/{i}/{term}@{a:03d}]", "held", {rn: 1.0}, ">=", float(nodes), f"{site.path}.reserved",
                     f"{nodes} {i} nodes at {s} are held until month {a + tm} (bought already)", family="held",
                     site=s, instance=i, pricing=term)
            out.append((rn, a, tm))
            st.reservations.append(Reservation(rn, s, i, term, a, range(0, min(H, a + tm))))
    return out


def _cloud_packing(st: "_State", s: str, i: str, m: int, pack: Mapping[str, float]) -> str:
    """(13) the whole nodes that carry a pool-month's replicas, their node cuts, and their GPUs in
    the site's quota (4); returns the node-count variable."""
    B, site, gpn = st.B, st.spec.site(s), st.cat.instances[i].gpus
    pool_month = dict(site=s, instance=i, month=m)
    # Replicas that each fill whole nodes make the node count integral already.
    whole = all(v % gpn == 0 for v in pack.values())
    vn = B.var(inode_name(s, i, m), "continuous" if whole else INODE_KIND, family="inodes", **pool_month)
    B.con(f"packing[{s}/{i}@{m:03d}]", "packing", {vn: gpn, **{k: -v for k, v in pack.items()}},
          ">=", 0.0, site.path, f"inference replicas on {i} at {s} fill whole nodes",
          family="packing", **pool_month)  # (13)
    for yn, g in sorted(pack.items()):
        if f"node_mix[{yn}]" not in B.cons:
            _add_node_cut(B, f"node_for[{yn}]", vn, yn, g, gpn, 0, site.path)
    _add(st.quota_gpu, (s, st.cat.instances[i].gpu, m), vn, gpn)
    return vn


def _cloud_ondemand(st: "_State", s: str, i: str, m: int, hours: Mapping[str, float],
                    res_vars: list[tuple[str, int, int]], pack: Mapping[str, float] | None) -> str:
    """(12) a pool-month's on-demand node-hours: what its jobs and replicas run beyond the reserved
    terms active that month, and (12b) beyond what each job can run on reserved nodes; returns
    the on-demand variable."""
    B, site = st.B, st.spec.site(s)
    od_price = unit_costs.cloud_price(st.cat, site, i, "on_demand")
    pool_month = dict(site=s, instance=i, month=m)
    un = B.var(od_name(s, i, m), "continuous", None if od_price is not None else 0.0, family="ondemand",
               usd={"cloud_compute": od_price or 0.0}, **pool_month)
    B.vars[un] = replace(B.vars[un], scale=HOURS_PER_MONTH)
    terms = {un: 1.0, **{k: -v for k, v in hours.items()}}
    for rn, a, tm in res_vars:
        if a <= m < a + tm:
            terms[rn] = terms.get(rn, 0.0) + HOURS_PER_MONTH
    active_res = [rn for rn, a, tm in res_vars if a <= m < a + tm]
    _cloud_job_excess(st, s, i, m, un, active_res, pack)
    B.con(f"ondemand[{s}/{i}@{m:03d}]", "cloud_capacity", terms, ">=", 0.0, f"{site.path}.pricing",
          f"node-hours on {i} at {s} in month {m} beyond reserved nodes are bought on demand",
          family="ondemand", **pool_month)  # (12)
    return un


def _cloud_job_excess(st: "_State", s: str, i: str, m: int, un: str, active_res: list[str],
                      pack: Mapping[str, float] | None) -> None:
    """(12b) a job runs on no more reserved nodes at once than the pool has free of replicas: its
    nodes beyond them run its hours on demand. Row (12) alone would let a 100-hour job use a
    reserved node's 730 hours. Jobs running all month: (12) says it."""
    B, site = st.B, st.spec.site(s)
    jobs = [(xn, nh, own, st.by_id[B.vars[xn].candidate]) for xn, nh, own in job_terms(B, st.od_hours.get((s, i, m), {}))]
    jobs = [(xn, nh, own, c) for xn, nh, own, c in jobs if nh / c.nodes < HOURS_PER_MONTH - 1e-9]
    if not (active_res and jobs):
        return
    if pack:
        free = {_free_reserved(B, (s, i, m), active_res, inode_name(s, i, m),
                               _replica_nodes_most(B, pack, st.cat.instances[i].gpus),
                               max(c.nodes for *_, c in jobs), site.path): 1.0}
    else:
        free = {rn: 1.0 for rn in active_res}
    excess = {}
    for xn, nh, own, c in jobs:
        h = nh / c.nodes
        job_month = dict(family="od_excess", workload=c.workload, candidate=c.id, month=m)
        en = B.var(f"od_excess[{c.id}@{m:03d}]", "continuous", **job_month)
        row = {en: 1.0, **{k: -v for k, v in own.items()}, **{k: h * a for k, a in free.items()}}
        B.con(f"od_excess[{c.id}@{m:03d}]", "cloud_capacity", row, ">=", 0.0, f"{site.path}.pricing",
              f"{c.id} runs no more reserved nodes at once than {s} has free in month {m}", **job_month)
        excess[en] = -1.0
    B.con(f"ondemand_jobs[{s}/{i}@{m:03d}]", "cloud_capacity", {un: 1.0, **excess}, ">=", 0.0,
          f"{site.path}.pricing", f"node-hours on {i} at {s} in month {m} beyond what each job "
          f"can run on reserved nodes are bought on demand", family="ondemand_jobs",
          site=s, instance=i, month=m)


def _cloud_pinned(st: "_State", s: str, i: str, m: int, un: str, res_vars: list[tuple[str, int, int]]) -> None:
    """(12a) work pinned to a pricing in a cloud pool-month: on demand buys its node-hours there; a
    reserved term's work runs on that term's nodes and holds no more of them at once than it has."""
    B, by_id, pin_path = st.B, st.by_id, st.pin_path
    for term in ("on_demand", *TERMS):
        pinned = st.pinned_hours.get((s, i, m, term))
        if not pinned:
            continue
        who = sorted({B.vars[n].workload for n in pinned})
        if term == "on_demand":
            row = {un: 1.0, **{k: -v for k, v in pinned.items()}}
        else:
            row = {rn: HOURS_PER_MONTH for rn, a, tm in res_vars
                   if a <= m < a + tm and tm == unit_costs.TERM_MONTHS[term]}
            row.update({k: -v for k, v in pinned.items()})
        B.con(pin_pricing_name(s, i, term, m), "placement", row, ">=", 0.0,
              pin_path[who[0]], f"{', '.join(who)} pinned to {term} on {i} at {s} in month {m}",
              family="pin_pricing", pricing=term, site=s, instance=i, month=m)
        if term != "on_demand":
            for xn in sorted(pinned):   # and holds no more nodes at once than the term has
                c = by_id[B.vars[xn].candidate]
                rows = {rn: 1.0 for rn in row if B.vars[rn].family == "reserved"}
                B.con(pin_nodes_name(c.id, m), "placement", {**rows, xn: -float(c.nodes)}, ">=",
                      0.0, pin_path[c.workload], f"{c.id} pinned to {term}: its nodes are reserved",
                      family="pin_nodes", workload=c.workload, candidate=c.id, month=m)


def _cloud_idle_tail(st: "_State", s: str, i: str, res_vars: list[tuple[str, int, int]],
                     last_load: Mapping[str, float]) -> None:
    """(16) a cloud pool's reserved terms after the horizon, paid for the nodes the last month's
    load (`last_load`: node-hours of month H-1, jobs' and replicas' GPUs') leaves idle; one row
    per run of months with the same terms active (the rows of its months are the same)."""
    B, H = st.B, st.H
    site = st.spec.site(s)
    pool = dict(site=s, instance=i)
    active = lambda j: tuple(rn for rn, a, tm in res_vars if a <= j < a + tm)   # noqa: E731
    ends = sorted({a + tm for _rn, a, tm in res_vars if a + tm > H})
    j = H
    for end in ends:
        run, sets = range(j, end), active(j)
        j = end
        if not sets:
            continue
        tails = {}
        for term in TERMS:
            mine = [rn for rn in sets if B.vars[rn].pricing == term]
            if not mine:
                continue
            price = unit_costs.cloud_price(st.cat, site, i, term) or 0.0
            tn = B.var(f"idle_tail[{s}/{i}/{term}@{run.start:03d}]", "continuous", None, family="idle_tail",
                       pricing=term, usd={"cloud_compute": price * HOURS_PER_MONTH * len(run)}, **pool)
            tails[tn] = 1.0
            if len(mine) < len(sets):
                B.con(f"idle_term[{s}/{i}/{term}@{run.start:03d}]", "after_horizon",
                      {tn: 1.0, **{rn: -1.0 for rn in mine}}, "<=", 0.0, "$.policy.after_horizon",
                      f"idle {term} nodes of {i} at {s} after the horizon are {term} nodes",
                      family="idle_term", pricing=term, **pool)
        row = {**tails, **{rn: -1.0 for rn in sets}}
        for k, v in last_load.items():
            row[k] = row.get(k, 0.0) + v / HOURS_PER_MONTH
        B.con(f"idle_tail[{s}/{i}@{run.start:03d}]", "after_horizon", row, ">=", 0.0, "$.policy.after_horizon",
              f"reserved {i} nodes at {s} in months {run.start}-{run.stop - 1} are paid where the last "
              f"month's load leaves them idle", family="idle_tail", **pool)


def _replica_nodes_most(B: "_Builder", pack: Mapping[str, float], gpn: int) -> int:
    """The most whole nodes a pool-month's replicas can need: each candidate's replica bound in
    whole nodes, summed (no less than any row asks of the pool's node count)."""
    return sum(math.ceil(g * B.vars[yn].ub / gpn - 1e-9) for yn, g in pack.items())


def _free_reserved(B: "_Builder", pool_month: tuple[str, str, int], reserved: list[str], vn: str, vbar: int,
                   most: int, path: str) -> str:
    """(12b) where a pool-month carries replicas: w, the reserved nodes a job may run on at once,
    w = max(0, R - v) with R the reserved nodes and v the replicas' nodes (readback/allot.py: the replicas
    take reserved nodes first). The max is not convex, so a binary t says the replicas take every
    reserved node (t = 1: w <= 0) or not (t = 0: w <= R - v). w <= `most`, the largest job's
    nodes, loses nothing (a job's excess is 0 at w >= its nodes) and is t = 1's big-M; `vbar`, the
    most nodes the replicas can need, is t = 0's. A plain w <= R - v bills a job h (v - R) more
    than it runs when v > R, chosen or not (found on the 100-workload benchmark: audit A303)."""
    s, i, m = pool_month
    at = dict(site=s, instance=i, month=m)
    key = f"{s}/{i}@{m:03d}"
    wn = B.var(f"res_free[{key}]", "continuous", float(most), family="res_free", **at)
    tn = B.var(res_taken_name(s, i, m), "binary", family="res_taken", **at)
    B.con(f"res_free[{key}]", "cloud_capacity", {wn: 1.0, vn: 1.0, tn: -float(vbar), **{rn: -1.0 for rn in reserved}},
          "<=", 0.0, f"{path}.pricing", f"jobs run on the reserved nodes at {key} the replicas leave free",
          family="res_free", **at)
    B.con(tn, "cloud_capacity", {wn: 1.0, tn: float(most)}, "<=", float(most),
          f"{path}.pricing", f"no reserved node at {key} is free where the replicas take them all",
          family="res_taken", **at)
    return wn


def _quotas(st: "_State") -> None:
    """GPUs of a type at once at a cloud site (4)."""
    B, spec, quota_gpu = st.B, st.spec, st.quota_gpu
    for (s, g, m), terms in sorted(quota_gpu.items()):
        site = spec.site(s)
        q = site.quotas.get(g) if isinstance(site, CloudSite) else None
        if q is not None:
            B.con(quota_name(s, g, m), "quota", terms, "<=", float(q), f"{site.path}.quotas.{g}",
                  f"at most {q} {g} GPUs at once at {s}", family="quota", site=s, gpu=g, month=m)


def _onprem_pools(st: "_State") -> None:
    """Bought nodes, fabric (5), capacity (6) and the valid cuts of on-prem pools."""
    for (s, i) in sorted(st.pools_onprem):
        cap_nodes = _buy_bound(st, s, i)
        bn = _bought_nodes(st, s, i, cap_nodes)
        _pool_fabrics(st, s, i, bn, cap_nodes)
        _buy_for_cuts(st, s, i, bn, cap_nodes)
        for m in st.months:
            _onprem_month(st, s, i, m, bn)


def _buy_bound(st: "_State", s: str, i: str) -> int:
    """The most nodes a pool may buy: never more than the busiest month could fill (each training
    workload at its largest candidate here, each service at the replicas that carry it alone),
    also the fabric link's big-M. Site limits stay constraints, so explain.py can relax them."""
    site: OnPremSite = st.spec.site(s)
    node = st.cat.onprem_nodes[i]
    owned = min(owned_nodes(site, i, m) for m in range(st.H))   # the fewest: nodes retire
    peak = max((sum(v.values()) for (ss, ii, _m), v in st.pool_peak.items() if (ss, ii) == (s, i)), default=0.0)
    cap_nodes = max(0, math.ceil(peak / node.gpus - 1e-9) - owned)
    if any(k[:2] == (s, i) and k[3] == "purchase" for k in st.pinned_gpus):
        cap_nodes = math.ceil(peak / node.gpus - 1e-9)   # work pinned to purchase leaves owned nodes idle
    if st.spec.policy.caps_cloud_share:
        # Under a cloud-share cap an idle bought node can be what keeps the cloud's share
        # down, so only the site's own limits bound the purchase.
        cap_nodes = site_new_nodes(site, node)
    return cap_nodes


def _bought_nodes(st: "_State", s: str, i: str, cap_nodes: int) -> str:
    """b_q, the pool's bought nodes, at capex, support and the cheapest fabric offered; returns
    its name."""
    spec, cat = st.spec, st.cat
    node = cat.onprem_nodes[i]
    # Every bought node is wired with some fabric: the cheapest the site offers is in b_q's own
    # cost; choosing a dearer one (because a multi-node job needs it) pays the difference.
    base_fabric = st.base_fabrics[(s, i)] = pool_base_fabric(problem_cands_at(st.candidates.by_workload, s, i), cat)
    base = unit_costs.fabric_cost_per_node(cat.fabrics[base_fabric]) if base_fabric in cat.fabrics else 0.0
    bn = st.B.var(buy_name(s, i), "integer", float(cap_nodes), family="buy", site=s, instance=i,
                  usd={"capex": unit_costs.capex_charged(node, st.H, spec.policy.after_horizon),
                       "support": unit_costs.support_cost(node, st.H), "fabric": base})
    st.by_site.setdefault(s, []).append(i)
    return bn


def _pool_fabrics(st: "_State", s: str, i: str, bn: str, cap_nodes: int) -> None:
    """(5) one fabric for a pool its multi-node jobs need: a binary per fabric they ask for, the
    bought nodes wired with it (paying the difference to the base fabric), and each job's link."""
    B, cat, site = st.B, st.cat, st.spec.site(s)
    pool = dict(site=s, instance=i)
    fabrics = sorted({f for (ss, ii, f) in st.fabric_users if (ss, ii) == (s, i)})
    if not fabrics:
        return
    base_fabric = st.base_fabrics[(s, i)]
    base = unit_costs.fabric_cost_per_node(cat.fabrics[base_fabric]) if base_fabric in cat.fabrics else 0.0
    sel = {}
    for f in fabrics:
        fn = B.var(fab_name(s, i, f), "binary", family="fab", fabric=f, **pool)
        sel[fn] = 1.0
        fab = cat.fabrics.get(f)
        zn = B.var(fabn_name(s, i, f), "continuous", None, family="fabnodes", fabric=f, **pool,
                   usd={"fabric": (unit_costs.fabric_cost_per_node(fab) - base) if fab else 0.0})
        B.con(f"fabric_nodes[{s}/{i}/{f}]", "fabric", {zn: 1.0, bn: -1.0, fn: -float(cap_nodes)},
              ">=", -float(cap_nodes), site.path, f"bought {i} nodes at {s} are wired with {f}",
              family="fabric_nodes", fabric=f, **pool)
        # Never more nodes wired with f than are bought, none unless f is the pool's fabric, and f
        # only where a job needs it: without these a plan could pay for fabric no job uses, to lift
        # the on-prem spend a cloud-share limit measures. Exact: a plan never needs such wiring.
        B.con(f"fabric_nodes_max[{s}/{i}/{f}]", "fabric", {zn: 1.0, bn: -1.0}, "<=", 0.0, site.path,
              f"no more {i} nodes at {s} wired with {f} than bought", family="fabric_nodes_max", fabric=f, **pool)
        B.con(f"fabric_nodes_chosen[{s}/{i}/{f}]", "fabric", {zn: 1.0, fn: -float(cap_nodes)}, "<=", 0.0,
              site.path, f"{i} nodes at {s} are wired with {f} only where it is the pool's fabric",
              family="fabric_nodes_chosen", fabric=f, **pool)
        B.con(f"fabric_needed[{s}/{i}/{f}]", "fabric",
              {fn: 1.0, **{f"x[{cid}]": -1.0 for cid in st.fabric_users[(s, i, f)]}}, "<=", 0.0, site.path,
              f"the {i} pool at {s} takes {f} only for a job that needs it", family="fabric_needed", fabric=f, **pool)
        for cid in st.fabric_users[(s, i, f)]:
            B.con(f"fabric_use[{cid}]", "fabric", {f"x[{cid}]": 1.0, fn: -1.0}, "<=", 0.0,
                  site.path, f"{cid} needs the pool's fabric to be {f}", family="fabric_use",
                  workload=st.by_id[cid].workload, candidate=cid)
    B.con(f"fabric[{s}/{i}]", "fabric", sel, "<=", 1.0, site.path,
          f"one fabric for the {i} pool at {s}", family="fabric", **pool)  # (5)


def _buy_for_cuts(st: "_State", s: str, i: str, bn: str, cap_nodes: int) -> None:
    """Valid inequality: a job bigger than the owned nodes buys the rest (the capacity rows alone
    let a half-chosen job sit on owned nodes for free)."""
    B, site = st.B, st.spec.site(s)
    node = st.cat.onprem_nodes[i]
    owned = owned_nodes(site, i)
    for cid in sorted({n for (ss, ii, _m), t in st.onprem_gpu.items() if (ss, ii) == (s, i)
                       for n in t if B.vars[n].family == "x"}):
        job = st.by_id[B.vars[cid].candidate]
        extra = math.ceil(job.gpus / node.gpus - 1e-9) - owned
        if 0 < extra <= cap_nodes:
            B.con(f"buy_for[{job.id}]", "cut", {bn: 1.0, cid: -float(extra)}, ">=", 0.0, site.path,
                  f"valid inequality: {job.id} needs {extra} bought {i} nodes", family="buy_for",
                  workload=job.workload, candidate=job.id)


def _onprem_month(st: "_State", s: str, i: str, m: int, bn: str) -> None:
    """An on-prem pool's rows of one month: its replicas' node cuts, (16) the idle tail after the
    last month, (6) capacity, and (12a) work pinned to owned or bought nodes."""
    B, site = st.B, st.spec.site(s)
    node = st.cat.onprem_nodes[i]
    owned = owned_nodes(site, i, m)
    terms = st.onprem_gpu.get((s, i, m))
    for yn, g in sorted((terms or {}).items()):
        if B.vars[yn].family == "y" and f"node_mix[{yn}]" not in B.cons:
            _add_node_cut(B, f"node_for[{yn}]", bn, yn, g, node.gpus, owned, site.path)
    if m == st.H - 1 and st.spec.policy.after_horizon == "continues":
        _onprem_idle_tail(st, s, i, bn, credited(st, terms or {}))
    if terms:
        B.con(capacity_name(s, i, m), "capacity",
              {**terms, bn: -float(node.gpus)}, "<=", float(node.gpus * owned),
              site.path, f"GPUs in use on {i} at {s} in month {m} fit the nodes owned and bought",
              family="capacity", month=m, site=s, instance=i)  # (6)
    for pricing in ("owned", "purchase"):                                                  # (12a)
        pinned = st.pinned_gpus.get((s, i, m, pricing))
        if not pinned:
            continue
        who = sorted({B.vars[n].workload for n in pinned})
        row = {k: -v for k, v in pinned.items()}
        if pricing == "purchase":
            row[bn] = float(node.gpus)
        B.con(pin_pricing_name(s, i, pricing, m), "placement", row, ">=",
              -float(owned * node.gpus) if pricing == "owned" else 0.0, st.pin_path[who[0]],
              f"{', '.join(who)} pinned to {pricing} nodes of {i} at {s} in month {m}",
              family="pin_pricing", pricing=pricing, month=m, site=s, instance=i)


def _onprem_idle_tail(st: "_State", s: str, i: str, bn: str, in_use: Mapping[str, float]) -> None:
    """(16) a bought node's life after the horizon, paid where the last month's load (the GPUs in
    use in month H-1, owned nodes first) leaves it idle: t_q >= b_q - a_q, where a_q, the load
    beyond the owned nodes, is max(0, use/G - O_q). Without owned nodes a_q is the load itself (an
    LP row); with them the max is not convex, so a binary s_q says whether the load passes the
    owned nodes: a_q <= use/G - O_q s_q and a_q <= B_q s_q (B_q, b_q's bound, the most a_q can
    lower t_q by). Owned nodes' own months after the horizon are sunk: never charged."""
    node = st.cat.onprem_nodes[i]
    after = unit_costs.capex_after_horizon(node, st.H)
    if after <= 0:
        return
    B, pool = st.B, dict(site=s, instance=i)
    tn = B.var(f"idle_tail[{s}/{i}]", "continuous", None, family="idle_tail", pricing="purchase",
               usd={"capex": after}, **pool)
    owned = owned_nodes(st.spec.site(s), i, st.H - 1)
    use = {k: v / node.gpus for k, v in in_use.items()}
    meaning = (f"bought {i} nodes at {s} are paid for their life after the horizon where the last month's load "
               f"(owned nodes first) leaves them idle")
    if not owned or not use:
        B.con(f"idle_tail[{s}/{i}]", "after_horizon", {tn: 1.0, bn: -1.0, **({} if owned else use)}, ">=", 0.0,
              "$.policy.after_horizon", meaning, family="idle_tail", **pool)
        return
    cap = B.vars[bn].ub or 0.0
    an = B.var(f"idle_load[{s}/{i}]", "continuous", None, family="idle_load", **pool)
    sn = B.var(f"idle_past_owned[{s}/{i}]", "binary", None, family="idle_past_owned", **pool)
    B.con(f"idle_tail[{s}/{i}]", "after_horizon", {tn: 1.0, bn: -1.0, an: 1.0}, ">=", 0.0,
          "$.policy.after_horizon", meaning, family="idle_tail", **pool)
    B.con(f"idle_load[{s}/{i}]", "after_horizon", {an: 1.0, sn: float(owned), **{k: -v for k, v in use.items()}},
          "<=", 0.0, "$.policy.after_horizon", f"the last month's load on bought {i} nodes at {s} is what the "
          f"owned nodes do not carry", family="idle_load", **pool)
    B.con(f"idle_load_on[{s}/{i}]", "after_horizon", {an: 1.0, sn: -cap}, "<=", 0.0, "$.policy.after_horizon",
          f"no load on bought {i} nodes at {s} unless it passes the owned nodes", family="idle_load_on", **pool)


def _site_limits(st: "_State") -> None:
    """Power (7), racks (8), max GPUs (9) of each on-prem site."""
    B, spec, cat, by_site = st.B, st.spec, st.cat, st.by_site
    for s in sorted(by_site):
        site = spec.site(s)
        insts = by_site[s]
        # Owned nodes take racks and GPUs whether or not any workload can use their model.
        every = sorted(set(insts) | {o.instance for o in site.owned if o.instance in cat.onprem_nodes})
        owned = {i: owned_nodes(site, i) for i in every}
        nodes = {i: cat.onprem_nodes[i] for i in every}
        B.con(f"power[{s}]", "power", {buy_name(s, i): nodes[i].power_kw * site.pue for i in insts}, "<=",
              site.power_kw, f"{site.path}.power_kw", f"new nodes at {s} fit its {site.power_kw:g} kW",
              family="power", site=s)  # (7)
        owned_ru = sum(owned[i] * nodes[i].rack_units for i in every) / RACK_UNITS
        B.con(f"racks[{s}]", "racks", {buy_name(s, i): nodes[i].rack_units / RACK_UNITS for i in insts}, "<=",
              site.max_racks - owned_ru, f"{site.path}.max_racks",
              f"nodes at {s} fit in {site.max_racks} racks", family="racks", site=s)  # (8)
        if site.rack_power_kw:
            owned_kw = sum(owned[i] * nodes[i].power_kw for i in every) / site.rack_power_kw
            B.con(f"rack_power[{s}]", "racks",
                  {buy_name(s, i): nodes[i].power_kw / site.rack_power_kw for i in insts}, "<=",
                  site.max_racks - owned_kw, f"{site.path}.rack_power_kw",
                  f"nodes at {s} fit {site.max_racks} racks of {site.rack_power_kw:g} kW", family="rack_power", site=s)
        if site.max_gpus is not None:
            B.con(f"max_gpus[{s}]", "max_gpus", {buy_name(s, i): nodes[i].gpus for i in insts}, "<=",
                  site.max_gpus - sum(owned[i] * nodes[i].gpus for i in every), f"{site.path}.max_gpus",
                  f"at most {site.max_gpus} GPUs at {s}", family="max_gpus", site=s)  # (9)


def _storage(st: "_State") -> None:
    """Storage tiers per site and month (11)."""
    B, spec, cat, by_id = st.B, st.spec, st.cat, st.by_id
    storage_need, = st.storage_need,
    # Under a cloud-share limit, storage bought beyond what the jobs need would lift the on-prem
    # spend the limit measures: bound each tier's TB and capex by what the jobs there need (exact:
    # a plan never needs more, so the optimum is kept; nothing else changes without the limit).
    exact = spec.policy.caps_cloud_share
    peaks: dict[tuple[str, str], list[tuple[str, float]]] = {}
    for (s, m), need in sorted(storage_need.items()):
        site = spec.site(s)
        tiers = unit_costs.storage_tiers(cat, site)
        if not tiers:
            continue
        # S never needs more than the need or the tier's minimum: the tightest big-M.
        big = max(sum(need.values()), max(t.min_tb for t in tiers))
        have = getattr(site, "existing_storage_tb", 0.0)
        terms = {k: -v for k, v in need.items()}
        for t in tiers:
            tier_month = dict(site=s, tier=t.name, month=m)
            sn = B.var(stor_name(s, t.name, m), "continuous", None, family="storage", **tier_month,
                       usd={"storage": t.usd_per_tb_month})
            on = B.var(sopen_name(s, t.name, m), "binary", family="storage_open", **tier_month)
            terms[sn] = 1.0
            B.con(f"storage_max[{s}/{t.name}@{m:03d}]", "storage", {sn: 1.0, on: -big}, "<=", 0.0, site.path,
                  family="storage_max", **tier_month)
            B.con(f"storage_min[{s}/{t.name}@{m:03d}]", "storage", {sn: 1.0, on: -t.min_tb}, ">=", 0.0,
                  site.path, f"{t.name} is sold in at least {t.min_tb:g} TB", family="storage_min", **tier_month)
            if exact and site.type == "on_prem":
                # S <= need - have + min_tb (open): the most a plan that holds the need buys
                B.con(f"storage_need_max[{s}/{t.name}@{m:03d}]", "storage",
                      {sn: 1.0, on: -t.min_tb, **{k: -v for k, v in need.items()}}, "<=", -have, site.path,
                      f"{t.name} at {s} holds no more than its jobs need", family="storage_need_max", **tier_month)
            if t.capex_usd_per_tb:
                kn = B.var(speak_name(s, t.name), "continuous", None, family="storage_peak", site=s, tier=t.name,
                           usd={"storage": t.capex_usd_per_tb})
                B.con(f"storage_peak[{s}/{t.name}@{m:03d}]", "storage", {kn: 1.0, sn: -1.0}, ">=", 0.0, site.path,
                      family="storage_peak", **tier_month)
                if exact and site.type == "on_prem":
                    peaks.setdefault((s, t.name), []).append((sn, big))
        held = f" with the {have:g} TB it already has" if have else ""
        B.con(f"storage[{s}@{m:03d}]", "storage", terms, ">=", -have, site.path,
              f"storage at {s} in month {m}{held} holds the datasets and checkpoints of the jobs there",
              family="storage", site=s, month=m)
        # Valid inequality: a job that needs more storage here this month than the site already
        # has opens some tier.
        opens = {sopen_name(s, t.name, m): 1.0 for t in tiers}
        per_w: dict[str, dict[str, float]] = {}
        for xn, tb in need.items():
            if tb > have + 1e-9:
                per_w.setdefault(B.vars[xn].workload, {})[xn] = -1.0
        for wn in sorted(per_w):
            B.con(f"storage_used[{s}/{wn}@{m:03d}]", "cut", {**opens, **per_w[wn]}, ">=", 0.0, site.path,
                  "valid inequality: a job with data here opens a storage tier", family="storage_used",
                  site=s, workload=wn, month=m)
    if exact:
        _storage_peak_exact(st, peaks)


def _storage_peak_exact(st: "_State", peaks: dict[tuple[str, str], list[tuple[str, float]]]) -> None:
    """K = max_m S_m for each capex tier of an on-prem site (`peaks`: its months' S and big-M): K >=
    S_m (storage_peak) and, with a binary w_m marking the peak month, K <= S_m + U (1 - w_m),
    sum_m w_m <= 1, K <= U sum_m w_m."""
    B, spec = st.B, st.spec
    for (s, t), months in sorted(peaks.items()):
        site, kn = spec.site(s), speak_name(s, t)
        top = max(big for _, big in months)
        marks = {}
        for sn, _big in months:
            m = B.vars[sn].month
            wn = B.var(f"storage_peak_month[{s}/{t}@{m:03d}]", "binary", family="storage_peak_month", site=s, tier=t,
                       month=m)
            marks[wn] = 1.0
            B.con(f"storage_peak_max[{s}/{t}@{m:03d}]", "storage", {kn: 1.0, sn: -1.0, wn: top}, "<=", top,
                  site.path, f"{t} at {s} is bought for its peak month", family="storage_peak_max", site=s, tier=t,
                  month=m)
        B.con(f"storage_peak_one[{s}/{t}]", "storage", dict(marks), "<=", 1.0, site.path,
              f"one peak month for {t} at {s}", family="storage_peak_one", site=s, tier=t)
        B.con(f"storage_peak_any[{s}/{t}]", "storage", {kn: 1.0, **{w: -top for w in marks}}, "<=", 0.0, site.path,
              f"no {t} capex at {s} without a month that needs it", family="storage_peak_any", site=s, tier=t)


def _cloud_share(st: "_State") -> None:
    """Cloud spend at most max_cloud_share of the total (10)."""
    B, spec = st.B, st.spec
    share = spec.policy.max_cloud_share
    if spec.policy.caps_cloud_share:
        terms = {}
        for v in B.vars.values():
            cloud = sum(x for k, x in v.costs if k == "cloud_compute")
            cloud += v.cost if _is_cloud_storage(v, spec) else 0.0
            coef = cloud - share * v.cost
            if coef:
                terms[v.name] = coef
        B.con("cloud_share", "cloud_share", terms, "<=", 0.0, "$.policy.max_cloud_share",
              f"cloud spend is at most {share:.0%} of the total", family="cloud_share")


def in_mix_name(cid: str, m: int) -> str:
    return f"in_mix[{cid}@{m:03d}]"


def mix_change_name(w: str, m: int) -> str:
    return f"mix_change[{w}@{m:03d}]"


def _operability(st: "_State") -> None:
    """The operability limits of the policy: sites (15d), GPU types (15e) and instance types per
    site (15a) of a service, how long a cloud pool carries replicas (15f) and a service keeps its
    replica mix (15b). (15c), the spot cap, is a candidate filter."""
    policy = st.spec.policy
    for w in st.spec.workloads:
        if not isinstance(w, InferenceWorkload):
            continue
        if policy.limits_sites:
            _at_most(st, w, policy.max_sites_per_service, "uses_site", "max_sites", "$.policy.max_sites_per_service",
                     "sites")
        if policy.limits_gpu_types:
            _at_most(st, w, policy.max_gpu_types_per_service, "uses_gpu", "max_gpu_types",
                     "$.policy.max_gpu_types_per_service", "GPU types")
        if policy.limits_types:
            _at_most(st, w, policy.max_instance_types_per_site, "uses_type", "max_types",
                     "$.policy.max_instance_types_per_site", "instance types")
        if policy.limits_churn:
            _mix_hold(st, w, policy.min_months_per_mix)
    if policy.limits_pool_life:
        _pool_life(st, policy.min_pool_months)


# Each "at most K" limit's indicator family -> what of a candidate it counts (an instance type is
# counted per site: its key's first part is the site).
COUNTED = {"uses_site": lambda c: (c.site,), "uses_gpu": lambda c: (c.gpu,),
           "uses_type": lambda c: (c.site, c.instance)}


def uses_name(family: str, w: str, key: tuple[str, ...]) -> str:
    return f"{family}[{w}/{'/'.join(key)}]"


def type_name(w: str, site: str, inst: str) -> str:
    return uses_name("uses_type", w, (site, inst))


def _at_most(st: "_State", w: InferenceWorkload, K: int, family: str, row: str, path: str, what: str) -> None:
    """(15a), (15d), (15e): T_{w,k} in {0,1} = 1 where w runs any replica on a candidate whose key
    k = COUNTED[family](c) (a site, a GPU type, an instance type at a site) in any month:
    y_{c,m} <= ub_{c,m} T_{w,k}; sum_k T_{w,k} <= K, per site for instance types, else over the
    whole service. Written only where w has more than K keys to choose from."""
    B = st.B
    scoped = family == "uses_type"
    groups: dict[tuple[str, ...], dict[tuple[str, ...], list[Candidate]]] = {}
    for c in st.chosen[w.name]:
        k = COUNTED[family](c)
        groups.setdefault(k[:1] if scoped else (), {}).setdefault(k, []).append(c)
    for scope, keys in sorted(groups.items()):
        if len(keys) <= K:
            continue
        chosen = {}
        for k, cands in sorted(keys.items()):
            gpu = family == "uses_gpu"
            tn = B.var(uses_name(family, w.name, k), "binary", family=family, workload=w.name,
                       site=None if gpu else k[0], instance=k[1] if scoped else None, gpu=k[0] if gpu else None)
            chosen[tn] = 1.0
            for c in cands:
                for m in st.months:
                    yn = y_name(c, m)
                    if yn not in B.vars:
                        continue
                    link = "type_use" if scoped else family
                    B.con(f"{link}[{yn}]", "operability_link", {yn: 1.0, tn: -float(B.vars[yn].ub)}, "<=", 0.0,
                          path, f"{w.name} runs {c.id} only if it uses {'/'.join(k)}", family=link,
                          workload=w.name, candidate=c.id, month=m)
        _mix_uses(st, w, family, keys)
        where = f"/{scope[0]}" if scope else ""
        B.con(f"{row}[{w.name}{where}]", "operability", chosen, "<=", float(K), path,
              f"{w.name} runs on at most {K} {what}{' at ' + scope[0] if scope else ''}", family=row,
              workload=w.name, site=scope[0] if scope else None)


def _mix_uses(st: "_State", w: InferenceWorkload, family: str, keys) -> None:
    """Valid inequalities (group `cut`) of (15a), (15d), (15e) in the months with mixes (14):
    sum_{k: mix k runs a replica with key q} lambda_k <= T_{w,q}. The month's one chosen mix uses
    q only where T_{w,q} = 1, so every plan keeps them; the LP can no longer spread a month over
    mixes of many keys with every T a fraction (y <= ub T alone lets five GPU types at 0.4 each
    carry a service under a limit of 2)."""
    B = st.B
    of = {c.id: k for k, cands in keys.items() for c in cands}
    by_y = {y_name(c, m): of[c.id] for c in st.chosen[w.name] if c.id in of for m in st.months}
    for m in st.months:
        options = st.mixes.get((w.name, m))
        if not options:
            continue
        using: dict[tuple[str, ...], dict[str, float]] = {}
        for mix, reps in options:
            for q in {by_y[y] for y, _r in reps if y in by_y}:
                using.setdefault(q, {})[mix] = 1.0
        for q, mixes in sorted(using.items()):
            tn = uses_name(family, w.name, q)
            about = {"uses_gpu": dict(gpu=q[0]), "uses_site": dict(site=q[0])}.get(
                family, dict(site=q[0], instance=q[-1]))
            B.con(f"{family}_mix[{w.name}/{'/'.join(q)}@{m:03d}]", "cut", {**mixes, tn: -1.0}, "<=", 0.0, w.path,
                  f"valid inequality: {w.name}'s mix in month {m} uses {'/'.join(q)} only if it may",
                  family=f"{family}_mix", workload=w.name, month=m, **about)


def pool_on_name(site: str, inst: str, m: int) -> str:
    return f"pool_on[{site}/{inst}@{m:03d}]"


def _pool_life(st: "_State", N: int) -> None:
    """(15f) o_{p,m} in {0,1}: cloud pool p carries a replica in month m (o <= sum_c y_{c,m}, and
    v_{p,m} <= U_{p,m} o with U the nodes every replica at its bound would fill, so no replica
    without o); a start s_{p,m} >= o_{p,m} - o_{p,m-1} (o_{p,-1} = 0), and N months on after every
    start: sum_{j=m-N+1}^{m} s_{p,j} <= o_{p,m} (the minimum up-time rows of unit commitment). A
    run the horizon's end cuts short is allowed: the pool goes on after it."""
    B, cat = st.B, st.cat
    path = "$.policy.min_pool_months"
    for (s, i) in sorted({(s, i) for (s, i, _m) in st.packing}):
        gpn = cat.instances[i].gpus
        starts: dict[int, str] = {}
        for m in st.months:
            pack = st.packing.get((s, i, m))
            if not pack:
                continue
            about = dict(site=s, instance=i, month=m)
            on = B.var(pool_on_name(s, i, m), "binary", family="pool_on", **about)
            B.con(f"pool_on[{s}/{i}@{m:03d}/some]", "operability_link", {on: 1.0, **{yn: -1.0 for yn in pack}},
                  "<=", 0.0, path, f"{i} at {s} is up in month {m} only if it carries a replica",
                  family="pool_on", **about)
            most = math.ceil(sum(g * (B.vars[yn].ub or 0.0) for yn, g in pack.items()) / gpn - 1e-9)
            B.con(f"pool_on[{s}/{i}@{m:03d}/nodes]", "operability_link",
                  {inode_name(s, i, m): 1.0, on: -float(max(1, most))}, "<=", 0.0, path,
                  f"{i} at {s} has nodes for replicas in month {m} only if it is up", family="pool_on", **about)
            sn = starts[m] = B.var(f"pool_start[{s}/{i}@{m:03d}]", "continuous", 1.0, family="pool_start", **about)
            row = {sn: 1.0, on: -1.0}
            if m - 1 in starts:
                row[pool_on_name(s, i, m - 1)] = 1.0
            B.con(f"pool_start[{s}/{i}@{m:03d}]", "operability_link", row, ">=", 0.0, path,
                  f"{i} at {s} is stood up in month {m} if it was not up the month before",
                  family="pool_start", **about)
            window = {starts[j]: 1.0 for j in range(m - N + 1, m + 1) if j in starts}
            B.con(f"pool_life[{s}/{i}@{m:03d}]", "operability", {**window, on: -1.0}, "<=", 0.0, path,
                  f"{i} at {s} stays up {N} months after it is stood up", family="pool_life", **about)


def _mix_hold(st: "_State", w: InferenceWorkload, N: int) -> None:
    """(15b) u_{c,m} = [y_{c,m} >= 1] (y <= ub u, u <= y); the mix changes in month m > start
    where any u_{c,m} != u_{c,m-1}: chg_m >= +-(u_{c,m} - u_{c,m-1}); any N consecutive months
    hold at most one change, and the N - 1 months after the start none (the start counts as one)."""
    B = st.B
    path = "$.policy.min_months_per_mix"
    D = st.demand[w.name]
    active = [m for m in st.months if D[m] > 0]
    if len(active) < 2:
        return
    first = active[0]
    cands = st.chosen[w.name]
    for c in cands:
        for m in active:
            yn = y_name(c, m)
            un = B.var(in_mix_name(c.id, m), "binary", family="in_mix", workload=w.name, candidate=c.id, month=m)
            about = dict(workload=w.name, candidate=c.id, month=m)
            B.con(f"in_mix[{yn}]", "operability_link", {yn: 1.0, un: -float(B.vars[yn].ub)}, "<=", 0.0, path,
                  f"{c.id} is in {w.name}'s mix in month {m} if it runs a replica", family="in_mix", **about)
            B.con(f"in_mix_some[{yn}]", "operability_link", {un: 1.0, yn: -1.0}, "<=", 0.0, path,
                  f"{c.id} is in {w.name}'s mix in month {m} only if it runs a replica", family="in_mix_some", **about)
    changes = {}
    for m in active[1:]:
        chg = changes[m] = B.var(mix_change_name(w.name, m), "continuous", 1.0, family="mix_change",
                                 workload=w.name, month=m)
        for c in cands:
            now, before = in_mix_name(c.id, m), in_mix_name(c.id, m - 1)
            about = dict(workload=w.name, candidate=c.id, month=m)
            B.con(f"mix_change[{c.id}@{m:03d}/+]", "operability_link", {chg: 1.0, now: -1.0, before: 1.0}, ">=", 0.0,
                  path, f"{w.name}'s mix changes in month {m} if {c.id} joins it", family="mix_change", **about)
            B.con(f"mix_change[{c.id}@{m:03d}/-]", "operability_link", {chg: 1.0, now: 1.0, before: -1.0}, ">=", 0.0,
                  path, f"{w.name}'s mix changes in month {m} if {c.id} leaves it", family="mix_change", **about)
    for a in active:
        months = [m for m in range(a, a + N) if m in changes]
        if not months:
            continue
        held = 0.0 if a == first else 1.0     # the start counts as the first change
        B.con(f"mix_hold[{w.name}@{a:03d}]", "operability", {changes[m]: 1.0 for m in months}, "<=", held, path,
              f"{w.name}'s mix changes at most once in months {a}-{a + N - 1}", family="mix_hold",
              workload=w.name, month=a)


def limit_indicators(problem: "Problem", vals: Mapping[str, float]) -> dict[str, float]:
    """The operability indicators (15a), (15b), (15d)-(15f) that integer replica counts `vals`
    imply: each site, GPU type and instance type at a site a service uses, each candidate in a
    service's mix in a month, each cloud pool up in a month. For a heuristic plan given as its
    integers (start.py); the solver checks the rows."""
    out: dict[str, float] = {}
    if not problem.spec.policy.has_limits:
        return out
    by_var = {v.name: v for v in problem.variables}
    by_id = {c.id: c for cs in problem.chosen_from.values() for c in cs}
    for v in problem.variables:
        if v.family == "y" and vals.get(v.name, 0.0) >= 0.5:
            c = by_id[v.candidate]
            names = [uses_name(f, v.workload, key(c)) for f, key in COUNTED.items()]
            names += [in_mix_name(c.id, v.month), pool_on_name(c.site, c.instance, v.month)]
            out.update((n, 1.0) for n in names if n in by_var)
    for v in problem.variables:
        if v.family in (*COUNTED, "in_mix", "pool_on") and v.name not in out:
            out[v.name] = 0.0
    return out


def _node_caps(st: "_State", w: InferenceWorkload, without: str | None = None) -> dict[tuple[str, str], float]:
    """cap_{w,p}: the most tokens/s one node of pool p can give w (G_p times w's best tokens/s per
    GPU there), for the pools of w's candidates outside site `without`."""
    cap: dict[tuple[str, str], float] = {}
    for c in st.chosen[w.name]:
        if c.site == without:
            continue
        per_node = c.gpus_per_node * c.estimate.tokens_per_s / c.gpus
        cap[(c.site, c.instance)] = max(cap.get((c.site, c.instance), 0.0), per_node)
    return cap


def _cover_row(st: "_State", name: str, w: InferenceWorkload, m: int, coefs: dict[tuple[str, str], float],
               rhs: float, without: str | None = None) -> None:
    """sum_p coefs[p] N_p >= rhs over whole nodes N_p (v_{p,m}; b_q + O_q on-prem), written with the
    owned nodes moved to the right, every coefficient cut to the right side (a whole node never
    needs to count for more), and its MIR cuts. Nothing when the owned nodes alone satisfy it."""
    B, spec = st.B, st.spec
    terms: dict[str, float] = {}
    for (s, i), k in sorted(coefs.items()):
        site = spec.site(s)
        if isinstance(site, OnPremSite):
            rhs -= min(k, rhs) * owned_nodes(site, i, m)
            if rhs <= 1e-6:
                return   # the owned nodes alone satisfy it (stop before rhs < 0 flips min())
            terms[buy_name(s, i)] = k
        else:
            terms[inode_name(s, i, m)] = k
    if rhs <= 1e-6:
        return
    terms = {n: min(k, rhs) for n, k in terms.items() if n in B.vars}
    what = "valid inequality: the service's replicas sit on whole nodes"
    key = dict(family="cover", workload=w.name, without=without, month=m)
    B.con(name, "cut", terms, ">=", rhs, w.path, what, **key)
    for k, (coef, r) in enumerate(node_mirs(tuple(terms.values()), rhs)):
        B.con(f"{name}#mir{k:02d}", "cut", dict(zip(terms, coef)), ">=", r, w.path, what, **key)


def _node_covers(st: "_State") -> None:
    """Valid inequalities (14) cover[w@m...]: a service's demand and N+1 rows in whole nodes.

    A node of pool p gives service w at most cap_p = cap_{w,p} tokens/s (_node_caps), so a row
    sum_{c in R} tau_c y_{c,m} >= D implies sum_p cap_p N_p >= D over the row's pools, N_p the
    pool's whole nodes that month. Written as cover[w@m] and cover[w@m/-s] (_cover_row, with MIR
    cuts). With N+1 across sites, also cover[w@m/2]: sum_p min(D, 2 cap_p) N_p >= 2D over every
    site. Proof, with a_p = min(1, cap_p / D) and z_s = sum_{p at s} a_p N_p, which the N+1 rows
    give Z - z_s >= 1 for every site s: if two pool-nodes have a_p >= 1/2 the left side is >= 2D;
    else at most one, say at site s0 with weight a0 <= z_{s0}, and every other node counts 2 a_p,
    so the left side is >= D (1 + 2 (Z - a0)) >= D (1 + 2 (Z - z_{s0})) >= 3D; with none, it is
    2 Z D >= 2D. The LP can no longer carry a 99.9% service on half a node at each of three sites:
    every plan holds two whole ones. Rows the owned nodes already carry are left out."""
    for w in st.spec.workloads:
        if not isinstance(w, InferenceWorkload):
            continue
        D = st.demand[w.name]
        survive = w.slo.survives_site_loss
        sites = sorted({c.site for c in st.chosen[w.name]}) if survive else []
        every = _node_caps(st, w)
        outside = {s: _node_caps(st, w, s) for s in sites}
        for m in st.months:
            if D[m] <= 0:
                continue
            tag = f"cover[{w.name}@{m:03d}"
            _cover_row(st, f"{tag}]", w, m, every, D[m])
            for s in sites:
                _cover_row(st, f"{tag}/-{s}]", w, m, outside[s], D[m], without=s)
            if survive:
                _cover_row(st, f"{tag}/2]", w, m, {p: min(D[m], 2 * k) for p, k in every.items()}, 2 * D[m])


def formulate(candidates: Candidates, reuse: dict | None = None) -> Problem:
    """Candidates -> Problem: the reductions, then one builder per constraint group. `reuse`:
    see kept_candidates."""
    st = _State.start(candidates, reuse)
    for w in st.spec.workloads:
        if isinstance(w, InferenceWorkload):
            _services(st, w)
        else:
            _training(st, w)
    _cloud_pools(st)
    _quotas(st)
    _onprem_pools(st)
    _node_covers(st)
    _site_limits(st)
    _storage(st)
    _cloud_share(st)
    _operability(st)
    B = st.B
    return Problem(spec=st.spec, candidates=candidates, chosen_from=st.chosen,
                   variables=tuple(B.vars[k] for k in sorted(B.vars)),
                   constraints=tuple(B.cons[k] for k in sorted(B.cons)), demand=st.demand,
                   filtered_out=st.dropped, mixes=st.mixes,
                   reservations=tuple(sorted(st.reservations, key=lambda r: r.var)), base_fabrics=st.base_fabrics,
                   savings_plans=tuple(st.savings_plans), capacity_blocks=tuple(st.capacity_blocks))


def _is_cloud_storage(v: Variable, spec: Spec) -> bool:
    """Storage bought at a cloud site: cloud spend (10) though its costs are not cloud_compute."""
    return v.family in ("storage", "storage_peak") and spec.site(v.site).type == "cloud"

