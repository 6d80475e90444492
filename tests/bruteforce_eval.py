"""An oracle for the optimizer: tiny seeded platforms (training AND inference) and a brute force
over their unreduced choice space, priced by an evaluator that shares no code with the model.

Nothing here imports compiler.optimize (formulate, costs, mixes, cuts, start): the cost rules are
written again from DESIGN.md section 4, docs/optimizer.md ("The model in prose") and the maths in
formulate.py's docstring. Unit figures (prices, node power, capex, fabric ports, storage tiers)
come from the catalog, like the model's.

The semantics priced (docstring numbers in brackets):
- every training job runs one candidate (1); a job holds its GPUs in every month of the horizon
  in which it runs any hours (4, 6); work past the horizon is not priced;
- a service runs whole replicas of any of its candidates in each month from its start, carrying
  the month's output tokens/s (2), and with slo.availability >= 0.999 still carrying them after the
  loss of any one site that has a candidate (3);
- cloud GPUs at once per site and GPU type stay within the quota: training GPUs plus every GPU of
  the whole nodes that carry replicas (4);
- on-prem pools (site, node model): owned nodes plus whole bought nodes hold the GPUs in use in
  every month (6); new nodes' kW x PUE within power_kw (7); nodes within the racks (8); every
  bought node pays capex x min(1, H / useful life), support for the horizon and the fabric it is
  wired with: the cheapest fabric among the pool's candidates' labels, or the one fabric its
  multi-node training jobs assumed (5; one-node jobs and replicas run on any wiring); power for
  owned and bought nodes alike, per node-hour run (training) or per GPU share of a node-month
  (a replica of g GPUs on G-GPU nodes: g / G x 730 node-hours a month);
- cloud pools (site, instance): replicas pack into whole nodes per month (13), each node 730
  node-hours; training on non-spot capacity adds its node-hours; reserved nodes of a term can
  start in ANY month, cost their price x 730 h for every month of the horizon they cover whether
  used or not, and give 730 node-hours a month to the pool, shared by node-hours within the
  month, except that a job runs on no more reserved nodes at once than the replicas leave free
  (12b); the rest is bought on demand (12); spot candidates pay the spot price per node-hour;
- storage per site and month holds the datasets and checkpoints (keep x model-state bytes) of
  the jobs running there, less what an on-prem site already has (storage.existing_tb, free), in
  tiers sold in a minimum size; on-prem tiers also pay capex on each tier's peak TB (11); a job
  away from its data's home pays egress once. Two on-prem tiers: see onprem_storage_cost.

What the brute force enumerates, and the exact arguments that keep it small:
- every combination of one candidate per training job;
- for the service, every replica vector in every active month with y_c in 0..ceil(D_m / tau_c)
  (a candidate with more replicas than it needs to carry the month alone can drop one: every row
  it appears in stays satisfied), of which only the minimal feasible ones are kept (every cost and
  every limit is nondecreasing in each y_c), and of those only the ones whose resource signature
  (nodes per cloud pool, GPUs per on-prem pool) is not dominated by another's (cost and limits
  depend on the vector through this signature only, nondecreasingly);
- policy.max_instance_types_per_site K (the service's instance types at one site over the whole
  horizon, docs/spec-reference.md): a pick of replica signatures is kept only if, per site, at
  most K of its pools carry a replica in some month. The pruning above stays exact: a pool
  carries a replica exactly where the signature is nonzero, so the types are a function of the
  signature, and a signature dominating another (componentwise no more) is nonzero in no pool the
  other is zero in, so it uses no type the other does not; dropping a replica never adds a type;
- policy.max_sites_per_service S and max_gpu_types_per_service G (the service's sites and GPU
  types over the whole horizon): like the instance types, a function of the pools a pick's
  signatures are nonzero in, so the pruning stays exact;
- policy.min_pool_months N (a cloud pool's run of months with a replica lasts N months or
  reaches the horizon's last month): not monotone (a replica more can keep a pool up), so each
  month's options are every minimal vector's signature plus, for any set U of cloud pools it
  leaves empty, one replica's nodes in each pool of U (the fewest one of its candidates needs),
  pruned by dominance only among signatures with the same cloud pools up. Exact: a plan's vector
  holds a minimal one v, the pools it runs beyond v's are such a U, and its signature is at
  least v's plus those nodes, with the same pools up;
- policy.max_spot_share s: a spot candidate runs all its node-hours on spot (share 1), so for
  s < 1 it is not admissible. (policy.min_months_per_mix is not taught: a plan may keep a replica
  no row needs to hold its mix, so the minimal vectors above would not be exact under it.)
- per choice, the cheapest way to provide it: bought nodes = the busiest month's whole nodes
  less the owned ones; per cloud pool, reservations by depth-first search over start months
  where a start month a gets new reservations only if month a needs at least as many nodes as
  are then reserved (R_a <= ceil(N_a / 730)): otherwise moving one of them to start a month later
  (dropping it in the last month) covers no less of what is used and costs no more.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType

from compiler.candidates import Candidate, Candidates
from compiler.estimate.memory import model_state_bytes
from compiler.spec import (CloudSite, Data, InferenceWindow, InferenceWorkload, OnPremSite, OwnedNodes, Policy,
                           Slo, Spec, Traffic, TrainingWindow, TrainingWorkload)
# The hand-made Candidates of the optimizer tests (optimize_fixtures imports nothing from
# compiler.optimize either: test_the_evaluator_shares_no_code_with_the_model checks it).
from optimize_fixtures import CATALOG, HOURS, candidates, infer_cand, node_gpus, train_cand

TERM_MONTHS = {"reserved_1y": 12, "reserved_3y": 36}
TIER = {"aws": "fsx-lustre"}
ONPREM_TIERS = tuple(sorted((t for t in CATALOG.storage.values() if t.provider == "on_prem"), key=lambda t: t.name))
EPS = 1e-9


def _month_cost(n: float, open_: dict) -> float | None:
    """Cheapest monthly charge holding n TB with the tiers `open_` {tier: peak K}, each at least its
    minimum and at most its peak; None if they cannot."""
    best = None
    tiers = list(open_)
    for r in range(1, len(tiers) + 1):
        for used in itertools.combinations(tiers, r):
            if any(open_[t] < t.min_tb - EPS for t in used):
                continue
            size = {t: t.min_tb for t in used}
            rest = n - sum(size.values())
            for t in sorted(used, key=lambda t: (t.usd_per_tb_month, t.name)):   # cheapest TB first
                add = min(max(rest, 0.0), open_[t] - size[t])
                size[t] += add
                rest -= add
            if rest > 1e-7:
                continue
            usd = sum(t.usd_per_tb_month * v for t, v in size.items())
            best = usd if best is None else min(best, usd)
    return best


@lru_cache(maxsize=None)
def onprem_storage_cost(needs: tuple[float, ...]) -> float:
    """Exact cheapest on-prem storage for monthly needs (TB beyond the site's existing storage)
    with at most two tiers: capex x peak per tier + $/TB-month x TB each month. For fixed peaks
    K_a, K_b the months are independent (each the cheapest fill of _month_cost). At an optimum
    each peak equals some month's size of that tier, which sits at a bound: its minimum, the
    whole need n_m, or n_m less the other tier's minimum or peak; so K_a ranges over {0, min_a,
    n_m, n_m - min_b} and K_b over those and n_m - K_a (and the same with a and b swapped)."""
    needs = tuple(n for n in needs if n > 1e-9)
    if not needs:
        return 0.0
    assert len(ONPREM_TIERS) <= 2
    best = math.inf

    def price(peaks: dict) -> float:
        open_ = {t: k for t, k in peaks.items() if k > 0}
        total = sum(t.capex_usd_per_tb * k for t, k in open_.items())
        for n in needs:
            month = _month_cost(n, open_)
            if month is None:
                return math.inf
            total += month
        return total

    def values(t, others) -> set:
        out = {0.0, t.min_tb} | {n for n in needs}
        out |= {n - o.min_tb for o in others for n in needs}
        return {v for v in out if v == 0.0 or v >= t.min_tb - EPS}

    for a, b in itertools.permutations(ONPREM_TIERS, 2) if len(ONPREM_TIERS) == 2 else [(ONPREM_TIERS[0], None)]:
        for ka in values(a, [b] if b else []):
            if b is None:
                best = min(best, price({a: ka}))
                continue
            for kb in values(b, [a]) | {n - ka for n in needs if n - ka >= b.min_tb - EPS}:
                best = min(best, price({a: ka, b: kb}))
    return best


# --- tiny platforms -----------------------------------------------------------------------

SERVE_OPTIONS = (("cloud", "g6e.xlarge", (1,)), ("cloud", "g6e.12xlarge", (1, 2, 4)),
                 ("cloud", "p5.48xlarge", (1, 2, 4, 8)), ("on_prem", "hgx-h100", (1, 2, 4, 8)),
                 ("on_prem", "l40s-server", (1, 2, 4, 8)))
SPEED = {"H100": 1.0, "L40S": 0.4}


def platform(seed: int) -> tuple[Spec, Candidates]:
    """A tiny random platform: one AWS site, one data centre, 1-2 training jobs with 2-4 candidates,
    one service with 2-4 candidates active in the last 1-4 months of a 3-13 month horizon."""
    rng = random.Random(seed)
    H = rng.randint(3, 13)
    pricing = ["on_demand"]
    if rng.random() < 0.75:
        pricing.append("reserved_1y")
    if rng.random() < 0.4:
        pricing.append("spot")
    quotas = {}
    if rng.random() < 0.35:
        quotas = {"H100": rng.choice([8, 16, 24]), "L40S": rng.choice([4, 8, 16])}
    aws = CloudSite(name="aws-use1", provider="aws", region="us-east-1", pricing=tuple(pricing),
                    quotas=MappingProxyType(quotas), path="$.sites[0]")
    pue = rng.choice([1.2, 1.4])
    new_nodes = rng.randint(0, 3)
    owned = rng.randint(0, 2)
    dc = OnPremSite(name="dc1", power_kw=round(new_nodes * CATALOG.onprem_nodes["hgx-h100"].power_kw * pue + 0.5, 2),
                    electricity_usd_per_kwh=rng.choice([0.05, 0.15]), pue=pue, max_racks=40,
                    owned=(OwnedNodes("hgx-h100", owned),) if owned else (), path="$.sites[1]",
                    # its own draw, so the other figures of a seed stay what they were
                    existing_storage_tb=random.Random(f"existing-{seed}").choice([0.0, 0.0, 5.0, 25.0]))
    sites = {"cloud": aws, "on_prem": dc}

    workloads, cands = [], []
    for k in range(rng.randint(1, 2)):
        interruptible = "spot" in pricing and rng.random() < 0.7
        data = None
        if rng.random() < 0.4:
            data = Data(dataset_tb=rng.choice([2.0, 20.0]), home=rng.choice([aws.name, dc.name]))
        w = TrainingWorkload(name=f"train{k}", model="llama-3-8b", tokens=1e10,
                             window=TrainingWindow(start_month=rng.randrange(0, H)), interruptible=interruptible,
                             data=data, path=f"$.workloads[{len(workloads)}]")
        workloads.append(w)
        options = [(aws, "p5.48xlarge", False, "efa"), (dc, "hgx-h100", False, "infiniband-ndr"),
                   (dc, "hgx-h100", False, "roce-400g")]
        if interruptible:
            options.append((aws, "p5.48xlarge", True, "efa"))
        base = rng.choice([400.0, 1200.0, 2400.0])     # node-hours, spread over 1-3 nodes
        for j in range(rng.randint(2, 4)):
            site, inst, spot, fab = rng.choice(options)
            nodes = rng.randint(1, 3)
            hours = round(base / nodes * rng.uniform(0.8, 1.3), 1)
            cands.append(train_cand(w, site, inst, nodes, hours, spot, fab, f"/c{j}"))

    start = max(0, H - rng.randint(1, 4))
    svc = InferenceWorkload(name="svc", model="llama-3-8b",
                            traffic=Traffic(peak_rps=10.0, input_tokens=500, output_tokens=100,
                                            growth_per_month=rng.choice([0.0, 0.2, 0.5])),
                            slo=Slo(ttft_p99_ms=1000, tpot_p99_ms=60, availability=rng.choice([0.99, 0.999])),
                            window=InferenceWindow(start), path=f"$.workloads[{len(workloads)}]")
    workloads.append(svc)
    d_max = 1000.0 * (1.0 + svc.traffic.growth_per_month) ** (H - 1 - start)
    picks = [rng.choice(SERVE_OPTIONS) for _ in range(rng.randint(2, 4))]
    if svc.slo.availability >= 0.999 and len({k for k, _, _ in picks}) == 1 and rng.random() < 0.8:
        picks[-1] = rng.choice([o for o in SERVE_OPTIONS if o[0] != picks[0][0]])   # mostly survivable
    raw = []
    for kind, inst, tps in picks:
        tp = rng.choice(tps)
        site = sites[kind]
        gpu, gpn = node_gpus(site, inst)
        assert gpn % tp == 0
        raw.append((site, inst, tp, tp * SPEED[gpu] * rng.uniform(0.7, 1.3)))
    top = max(r[3] for r in raw)
    scale = d_max * rng.uniform(1.0, 1.4) / top
    for j, (site, inst, tp, r) in enumerate(raw):
        tau = round(max(r * scale, d_max / 4 * 1.003), 3)       # at most 4 replicas carry a month alone
        fab = "efa" if site.type == "cloud" else "ethernet-100g"
        cands.append(infer_cand(svc, site, inst, tp, tau, fab, f"/s{j}"))

    # the brute force prices commitments prorated or in full; continues is not enumerated
    sp = Spec(api_version="infra-compile/v1", name=f"oracle-{seed}", horizon_months=H, sites=(aws, dc),
              policy=Policy(after_horizon="prorated"), workloads=tuple(workloads), sha256="0" * 64)
    return sp, candidates(sp, cands)


# --- unit costs, from the catalog -------------------------------------------------------------

def fabric_per_node(name: str) -> float:
    """Ports x cost per port plus 3 x ports / radix switches (leaf-and-spine share) per node."""
    f = CATALOG.fabrics[name]
    return f.ports_per_node * f.cost_per_port_usd + 3.0 * f.ports_per_node / f.switch_radix * f.switch_cost_usd


def bought_node_usd(instance: str, H: int, fabric: str, full: bool = False) -> float:
    """A bought node's capex (its horizon's share of its life, or all of it under
    policy.after_horizon `full`), support over the horizon and its fabric."""
    n = CATALOG.onprem_nodes[instance]
    capex = n.capex_usd if full else n.capex_usd * min(1.0, H / (n.useful_life_years * 12.0))
    return capex + n.support_usd_per_year * H / 12.0 + fabric_per_node(fabric)


def power_usd_per_node_hour(instance: str, site: OnPremSite) -> float:
    return CATALOG.onprem_nodes[instance].power_kw * site.pue * site.electricity_usd_per_kwh


# --- the old per-site serving rule (for the tests that show the oracles catch it) -------------

def old_serving_rate(c: Candidate, site, H: int) -> float:
    """USD per hour per output token/s of one replica of serving candidate c priced alone, as
    formulate._cheapest_per_site priced it before the exact model: its share (GPUs / GPUs per
    node) of a node-hour at the site's on-demand price, or where the site sells none, of the
    cheapest reserved term's; on-prem, of a bought node's horizon cost spread over the horizon's
    hours, plus power."""
    if site.type == "cloud":
        inst = CATALOG.instances[c.instance]
        sold = {t: inst.price(site.region, t) for t in site.pricing if t != "spot"}
        rate = sold.get("on_demand")
        if rate is None:
            rate = min((sold.get(t) or math.inf) for t in ("reserved_1y", "reserved_3y"))
    else:
        rate = bought_node_usd(c.instance, H, c.fabric) / (H * HOURS) + power_usd_per_node_hour(c.instance, site)
    return rate * c.gpus / c.gpus_per_node / max(c.estimate.tokens_per_s, EPS)


def old_cheapest_per_site(sp: Spec, cands) -> dict[str, Candidate]:
    """The old rule itself: of one service's candidates, per site (in site order) only the one
    with the lowest old_serving_rate; ties by candidate id."""
    best: dict[str, tuple[tuple[float, str], Candidate]] = {}
    for c in cands:
        key = (old_serving_rate(c, sp.site(c.site), sp.horizon_months), c.id)
        if c.site not in best or key < best[c.site][0]:
            best[c.site] = (key, c)
    return {s: c for s, (_key, c) in sorted(best.items())}


def checkpoint_tb(w: TrainingWorkload) -> float:
    params = CATALOG.models[w.model].params_b * 1e9
    return w.checkpoint.keep * model_state_bytes(params, w.precision, w.optimizer, CATALOG) / 1e12


def provider(site) -> str:
    return site.provider if site.type == "cloud" else "on_prem"


def demand(w: InferenceWorkload, H: int) -> tuple[float, ...]:
    t = w.traffic
    return tuple(0.0 if m < w.window.start_month else
                 t.peak_rps * t.output_tokens * (1.0 + t.growth_per_month) ** (m - w.window.start_month)
                 for m in range(H))


# --- cloud pools: the cheapest reservations for a month-by-month need -------------------------

def pool_cost(need, od_price: float | None, terms: tuple[tuple[int, float], ...], full: bool = False) -> float:
    """Cheapest cost of a pool's months: need[m] = (node-hours, nodes carrying replicas, ((nodes,
    hours) of each training job)). Reserved nodes (term months, price per node-hour; a term may
    start in any month, paid for the months of the horizon it covers) give 730 node-hours a month
    each, but a job runs on no more reserved nodes at once than the replicas leave free; on demand
    for the rest (inf where on-demand is not allowed and need is left uncovered). A bare number
    is a month's node-hours with no job structure. `full` (policy.after_horizon): a term is paid
    for every one of its months, those after the horizon too."""
    need = tuple((round(n, 6), 0, ()) if isinstance(n, (int, float)) else (round(n[0], 6), n[1], n[2])
                 for n in need)
    return _pool_cost(need, od_price, terms, full)


@lru_cache(maxsize=None)
def _pool_cost(need, od_price, terms, full=False) -> float:
    H = len(need)
    # More reserved nodes than either the month's node-hours fill or its largest job (beside the
    # replicas' nodes) can use never lowers the on-demand hours.
    nodes = [max(math.ceil(total / HOURS - EPS), v + max((n for n, _h in jobs), default=0))
             for total, v, jobs in need]

    def od(m: int, reserved: int) -> float:
        total, v, jobs = need[m]
        free = max(0, reserved - v)    # the replicas take reserved nodes first (allot.py)
        rest = max(total - HOURS * reserved, sum(h * max(0, n - free) for n, h in jobs))
        if rest <= EPS:
            return 0.0
        return math.inf if od_price is None else od_price * rest

    @lru_cache(maxsize=None)
    def best(m: int, active: tuple[tuple[int, int], ...]) -> float:
        """Cheapest from month m on, given reservations still running: (end month, count)."""
        if m == H:
            return 0.0
        active = tuple((e, k) for e, k in active if e > m)
        held = sum(k for _, k in active)
        out = od(m, held) + best(m + 1, active)
        room = nodes[m] - held          # new terms start only where this month needs them all
        for split in _splits(room, len(terms)):
            cost, run = 0.0, list(active)
            for (months, price), k in zip(terms, split):
                if k:
                    end = min(H, m + months)
                    cost += k * price * HOURS * (months if full else end - m)
                    run.append((end, k))
            now = held + sum(split)
            out = min(out, cost + od(m, now) + best(m + 1, tuple(sorted(run))))
        return out

    return best(0, ())


def _splits(room: int, n_terms: int):
    """Every nonzero vector of new reservations per term with total at most room."""
    if room <= 0 or n_terms == 0:
        return
    for split in itertools.product(range(room + 1), repeat=n_terms):
        if 0 < sum(split) <= room:
            yield split


# --- the brute force ---------------------------------------------------------------------------

@dataclass
class Best:
    cost: float
    training: tuple[str, ...]                              # chosen candidate ids
    replicas: dict[int, dict[str, int]] = field(default_factory=dict)   # month -> candidate -> replicas
    bought: dict[str, int] = field(default_factory=dict)   # on-prem pool -> nodes bought
    parts: dict[str, float] = field(default_factory=dict)  # cost breakdown

    def describe(self) -> str:
        reps = {m: {k.split("/", 1)[1]: v for k, v in r.items() if v} for m, r in sorted(self.replicas.items())}
        parts = ", ".join(f"{k}={v:,.2f}" for k, v in sorted(self.parts.items()) if v)
        return f"cost {self.cost:,.2f}: training {list(self.training)}, replicas {reps}, bought {self.bought}; {parts}"


def _minimal_vectors(taus, sites, D: float, survive: bool) -> list[tuple[int, ...]]:
    rows = [tuple(range(len(taus)))]
    if survive:
        rows += [tuple(j for j, s in enumerate(sites) if s != lost) for lost in sorted(set(sites))]

    def ok(v) -> bool:
        return all(sum(taus[j] * v[j] for j in row) >= D - EPS * D for row in rows)

    ubs = [math.ceil(D / t - EPS) for t in taus]
    out = []
    for v in itertools.product(*(range(u + 1) for u in ubs)):
        if ok(v) and all(not ok(v[:j] + (v[j] - 1,) + v[j + 1:]) for j in range(len(v)) if v[j]):
            out.append(v)
    return out


def gpu_of_pool(instance: str) -> str:
    """The GPU type of a cloud instance or an on-prem node model."""
    if instance in CATALOG.instances:
        return CATALOG.instances[instance].gpu
    return CATALOG.onprem_nodes[instance].gpu


def _kept_up(vectors, cands, cloud_idx, gpn_cloud) -> list[tuple[int, ...]]:
    """Each minimal vector, and for every set of cloud pools it leaves empty, the vector with one
    replica more in each of them (of the candidate there that needs the fewest nodes)."""
    fewest: dict[int, int] = {}
    for j, c in enumerate(cands):
        if c.site_type == "cloud":
            k = cloud_idx[(c.site, c.instance)]
            need = math.ceil(c.gpus / gpn_cloud[k])
            if k not in fewest or need < math.ceil(cands[fewest[k]].gpus / gpn_cloud[k]):
                fewest[k] = j
    out = set()
    for v in vectors:
        empty = [k for k in sorted(fewest) if not any(v[j] for j, c in enumerate(cands) if c.site_type == "cloud"
                                                       and cloud_idx[(c.site, c.instance)] == k)]
        for r in range(len(empty) + 1):
            for extra in itertools.combinations(empty, r):
                w = list(v)
                for k in extra:
                    w[fewest[k]] += 1
                out.add(tuple(w))
    return sorted(out)


def _lives(pick, months, pools: int, H: int, least: int) -> bool:
    """Each cloud pool's runs of months with a replica last `least` months or reach month H-1."""
    for k in range(pools):
        up = {m for m, (vnodes, _g, _v) in zip(months, pick) if vnodes[k]}
        for m in up:
            if m - 1 in up:
                continue
            end = m
            while end + 1 in up:
                end += 1
            if end < H - 1 and end - m + 1 < least:
                return False
    return True


def brute_force(sp: Spec, cs: Candidates) -> Best | None:
    """The cheapest plan over the unreduced choice space, or None when there is none."""
    pol = sp.policy
    assert (pol.placement, pol.allowed_gpus, pol.max_cloud_share, pol.min_months_per_mix) == \
        (Policy().placement, None, None, None) and all(not w.pin and not w.sites for w in sp.workloads)
    assert pol.after_horizon in ("prorated", "full")    # continues' idle tails are not enumerated here
    full = pol.after_horizon == "full"
    H = sp.horizon_months
    site_of = {s.name: s for s in sp.sites}
    types_most = pol.max_instance_types_per_site
    sites_most, gpus_most = pol.max_sites_per_service, pol.max_gpu_types_per_service
    life = pol.min_pool_months if (pol.min_pool_months or 1) > 1 else None
    spot_most = 1.0 if pol.max_spot_share is None else pol.max_spot_share

    def admissible(c: Candidate) -> bool:    # the site's allowed pricing options, the spot share
        site = site_of[c.site]
        return not c.spot or (site.type == "cloud" and "spot" in site.pricing and spot_most >= 1.0)

    cands = {w.name: [c for c in cs.by_workload[w.name] if admissible(c)] for w in sp.workloads}
    every = [c for w in sp.workloads for c in cs.by_workload[w.name]]
    trains = [w for w in sp.workloads if w.kind == "training"]
    services = [w for w in sp.workloads if w.kind == "inference"]
    assert len(services) <= 1

    # Pools. Cloud: (site, instance) of a non-spot candidate. On-prem: (site, node model).
    cloud_pools = sorted({(c.site, c.instance) for w in sp.workloads for c in cands[w.name]
                          if c.site_type == "cloud" and not c.spot})
    onprem_pools = sorted({(c.site, c.instance) for w in sp.workloads for c in cands[w.name]
                           if c.site_type == "on_prem"})
    cloud_idx = {p: k for k, p in enumerate(cloud_pools)}
    onprem_idx = {p: k for k, p in enumerate(onprem_pools)}
    gpn_cloud = [CATALOG.instances[i].gpus for _, i in cloud_pools]
    gpu_cloud = [CATALOG.instances[i].gpu for _, i in cloud_pools]
    gpn_onprem = [CATALOG.onprem_nodes[i].gpus for _, i in onprem_pools]
    owned = [sum(o.nodes for o in site_of[s].owned if o.instance == i) for s, i in onprem_pools]
    # Bought nodes are wired with the cheapest fabric among the pool's candidates' labels unless a
    # multi-node job there needs its own.
    base_fab = [min(sorted({c.fabric for c in every if (c.site, c.instance) == p}), key=fabric_per_node)
                for p in onprem_pools]
    pool_terms, pool_od = [], []
    for s, i in cloud_pools:
        site = site_of[s]
        inst = CATALOG.instances[i]
        pool_od.append(inst.price(site.region, "on_demand") if "on_demand" in site.pricing else None)
        pool_terms.append(tuple((TERM_MONTHS[t], inst.price(site.region, t)) for t in ("reserved_1y", "reserved_3y")
                                if t in site.pricing and inst.price(site.region, t) is not None))
    quota = {}
    for s in sp.sites:
        if s.type == "cloud":
            for g, q in s.quotas.items():
                quota[(s.name, g)] = q

    # The service: per active month, the non-dominated replica signatures.
    svc_months: list[int] = []
    svc_options: list[list[tuple[tuple, tuple, tuple[int, ...]]]] = []   # (cloud nodes, onprem GPUs, vector)
    svc_cands: list[Candidate] = []
    if services:
        w = services[0]
        svc_cands = cands[w.name]
        if not svc_cands:
            return None
        D = demand(w, H)
        taus = tuple(c.estimate.tokens_per_s for c in svc_cands)
        sites = tuple(c.site for c in svc_cands)
        survive = w.slo.availability >= 0.999
        for m in range(H):
            if D[m] <= 0:
                continue
            sigs = {}
            vectors = _minimal_vectors(taus, sites, D[m], survive)
            if life is not None:
                vectors = _kept_up(vectors, svc_cands, cloud_idx, gpn_cloud)
            for v in vectors:
                gpus_c = [0] * len(cloud_pools)
                gpus_o = [0] * len(onprem_pools)
                for c, y in zip(svc_cands, v):
                    if c.site_type == "cloud":
                        gpus_c[cloud_idx[(c.site, c.instance)]] += c.gpus * y
                    else:
                        gpus_o[onprem_idx[(c.site, c.instance)]] += c.gpus * y
                sig = (tuple(math.ceil(g / gpn_cloud[k]) for k, g in enumerate(gpus_c)), tuple(gpus_o))
                sigs.setdefault(sig, v)
            def up(a) -> tuple[bool, ...]:
                return tuple(x > 0 for x in a) if life is not None else ()
            keep = [(a, b, v) for (a, b), v in sigs.items()
                    if not any((a2, b2) != (a, b) and up(a2) == up(a)
                               and all(x <= y for x, y in zip(a2 + b2, a + b)) for a2, b2 in sigs)]
            if not keep:
                return None
            svc_months.append(m)
            svc_options.append(sorted(keep))

    best: Best | None = None
    for combo in itertools.product(*(cands[w.name] for w in trains)):
        parts = {"spot": 0.0, "power": 0.0, "egress": 0.0, "storage": 0.0}
        node_hours = [[0.0] * H for _ in cloud_pools]
        job_runs = [[[] for _m in range(H)] for _ in cloud_pools]   # (nodes, hours) of each job
        gpus_onprem = [[0] * H for _ in onprem_pools]
        quota_use: dict[tuple[str, str, int], int] = {}
        need_tb: dict[tuple[str, int], float] = {}
        wired: list[set[str]] = [set() for _ in onprem_pools]
        for c in combo:
            w = sp.workload(c.workload)
            site = site_of[c.site]
            run = [(m, h) for m, h in c.usage if m < H and h > 0]
            hours = sum(h for _, h in run)
            tb = (w.data.dataset_tb if w.data else 0.0) + checkpoint_tb(w)
            if w.data and w.data.home and w.data.home != c.site and w.data.dataset_tb:
                usd_per_gb = CATALOG.egress[provider(site_of[w.data.home])].usd_per_gb
                parts["egress"] += w.data.dataset_tb * 1000.0 * usd_per_gb
            for m, h in run:
                need_tb[(c.site, m)] = need_tb.get((c.site, m), 0.0) + tb
            if c.site_type == "cloud":
                for m, _ in run:
                    quota_use[(c.site, c.gpu, m)] = quota_use.get((c.site, c.gpu, m), 0) + c.gpus
                if c.spot:
                    parts["spot"] += CATALOG.instances[c.instance].price(site.region, "spot") * c.nodes * hours
                else:
                    k = cloud_idx[(c.site, c.instance)]
                    for m, h in run:
                        node_hours[k][m] += c.nodes * h
                        job_runs[k][m].append((c.nodes, round(h, 6)))
            else:
                k = onprem_idx[(c.site, c.instance)]
                for m, _ in run:
                    gpus_onprem[k][m] += c.gpus
                parts["power"] += c.nodes * hours * power_usd_per_node_hour(c.instance, site)
                if c.nodes > 1:
                    wired[k].add(c.fabric)
        if any(len(f) > 1 for f in wired):
            continue
        fabric = [next(iter(f)) if f else base_fab[k] for k, f in enumerate(wired)]
        onprem_needs: dict[str, list[float]] = {}
        for (s, m), tb in sorted(need_tb.items()):
            if provider(site_of[s]) == "on_prem":
                onprem_needs.setdefault(s, []).append(tb - site_of[s].existing_storage_tb)
                continue
            tier = CATALOG.storage[TIER[provider(site_of[s])]]
            parts["storage"] += max(tb, tier.min_tb) * tier.usd_per_tb_month
        for s, needs in onprem_needs.items():
            parts["storage"] += onprem_storage_cost(tuple(round(n, 9) for n in needs))
        fixed = sum(parts.values())

        for pick in itertools.product(*svc_options):
            used = {cloud_pools[k] for vnodes, _g, _v in pick for k, v in enumerate(vnodes) if v}
            used |= {onprem_pools[k] for _n, vgpus, _v in pick for k, g in enumerate(vgpus) if g}
            if types_most is not None and any(sum(1 for s, _i in used if s == site) > types_most for site in site_of):
                continue
            if sites_most is not None and len({s for s, _i in used}) > sites_most:
                continue
            if gpus_most is not None and len({gpu_of_pool(i) for _s, i in used}) > gpus_most:
                continue
            if life is not None and not _lives(pick, svc_months, len(cloud_pools), H, life):
                continue
            nh = [list(row) for row in node_hours]
            vn = [[0] * H for _ in cloud_pools]
            go = [list(row) for row in gpus_onprem]
            qu = dict(quota_use)
            for m, (vnodes, vgpus, _v) in zip(svc_months, pick):
                for k, v in enumerate(vnodes):
                    if v:
                        nh[k][m] += HOURS * v
                        vn[k][m] += v
                        key = (cloud_pools[k][0], gpu_cloud[k], m)
                        qu[key] = qu.get(key, 0) + gpn_cloud[k] * v
                for k, g in enumerate(vgpus):
                    go[k][m] += g
            if any(q > quota.get((s, g), math.inf) for (s, g, _m), q in qu.items()):
                continue
            bought = [max(0, max(math.ceil(g / gpn_onprem[k]) for g in go[k]) - owned[k]) for k in range(len(go))]
            feasible = True
            for s in {p[0] for p in onprem_pools}:
                site = site_of[s]
                ks = [k for k, p in enumerate(onprem_pools) if p[0] == s]
                kw = sum(bought[k] * CATALOG.onprem_nodes[onprem_pools[k][1]].power_kw * site.pue for k in ks)
                ru = sum((bought[k] + owned[k]) * CATALOG.onprem_nodes[onprem_pools[k][1]].rack_units for k in ks)
                if kw > site.power_kw + 1e-9 or ru / 42.0 > site.max_racks + 1e-9:
                    feasible = False
            if not feasible:
                continue
            svc_power = sum((g / gpn_onprem[k]) * HOURS * power_usd_per_node_hour(onprem_pools[k][1],
                                                                                site_of[onprem_pools[k][0]])
                            for m, (_vn, vgpus, _v) in zip(svc_months, pick) for k, g in enumerate(vgpus))
            onprem = sum(b * bought_node_usd(onprem_pools[k][1], H, fabric[k], full) for k, b in enumerate(bought))
            cloud = sum(pool_cost(tuple((nh[k][m], vn[k][m], tuple(sorted(job_runs[k][m]))) for m in range(H)),
                                  pool_od[k], pool_terms[k], full) for k in range(len(cloud_pools)))
            total = fixed + svc_power + onprem + cloud
            if math.isinf(total) or (best is not None and total >= best.cost):
                continue
            best = Best(cost=total, training=tuple(c.id for c in combo),
                        replicas={m: {c.id: y for c, y in zip(svc_cands, v)}
                                  for m, (_a, _b, v) in zip(svc_months, pick)},
                        bought={f"{s}/{i}": b for (s, i), b in zip(onprem_pools, bought) if b},
                        parts={**parts, "power": parts["power"] + svc_power, "onprem_nodes": onprem, "cloud": cloud})
    return best
