"""Scheduling domains: which nodes of a site each orchestrator holds, month by month.

A domain is one (site, instance): every node the plan holds there, whatever its pricing, is
in it, so a job whose nodes span pricings (one reserved node beside 31 on-demand ones) still
finds all of them in one Slurm partition or one Kubernetes node set. Inside a domain each
pricing is a block of nodes named `<domain>-<tag>NN`.

Who holds what (docs/artifacts.md states the same rules as a contract):
- Slurm holds, each month, the nodes its training placements hold of that pricing, at most
  what the pool has that month (jobs may share a node within a month, one after the other).
- Kubernetes holds what its placements hold, at most what the pool has beyond Slurm's share
  (services pack their replicas onto shared nodes, so their holdings may overlap); of an
  elastic pricing, all the pool has beyond Slurm's in a month it holds any.
- Static pricings (owned, purchase, reserved) are fixed nodes 1..N: Slurm takes them from the
  bottom, Kubernetes from the top (an orchestrator alone on a block gets all N). Since Slurm's
  and Kubernetes' nodes in a month add up to no more than the pool, the two ranges never meet
  in the same month; a node inside both ranges changes hands, and the schedule says when.
- Elastic pricings (on-demand, spot) are rented as needed: Slurm's are `State=CLOUD` nodes the
  Resume program starts, Kubernetes' an autoscaled node group between the plan's least and
  most nodes. A static cloud block that changes hands is elastic on both sides (its nodes
  start inside the reservation when needed and stop when idle).
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.plan import PRICINGS, Placement, Plan, Pool, WorkloadPlan
from compiler.render.common import NodeShape, hostlist, node_shape, slug
from compiler.catalog.model import Catalog

# Short tags that name a pricing's nodes: `p5-48xlarge-od01`.
PRICING_TAGS = {"owned": "own", "purchase": "buy", "reserved_3y": "r3y", "reserved_1y": "r1y",
                "on_demand": "od", "spot": "spot"}
STATIC_PRICINGS = ("owned", "purchase", "reserved_3y", "reserved_1y")
# Months a reserved term runs (compiler/plan.py, Reservation).
TERMS = {"reserved_1y": 12, "reserved_3y": 36}
ORCHESTRATORS = ("slurm", "kubernetes")


def orchestrator_of(w: WorkloadPlan) -> str:
    """Services run on Kubernetes (the only orchestrator the spec offers them); training where
    the spec says."""
    return "kubernetes" if w.kind == "inference" else w.orchestrator


@dataclass(frozen=True)
class Share:
    """What one orchestrator holds of one pricing block."""

    orchestrator: str
    monthly: tuple[int, ...]      # nodes held in each month of the horizon
    first: int                    # node indices first..last (1-based) it may use; 0..-1: none
    last: int
    elastic: bool                 # started and stopped as needed (State=CLOUD, autoscaled group)

    @property
    def peak(self) -> int:
        return max(self.monthly, default=0)

    @property
    def floor(self) -> int:
        return min(self.monthly, default=0)

    @property
    def count(self) -> int:
        return max(0, self.last - self.first + 1)


@dataclass(frozen=True)
class Block:
    """One pricing's nodes in a domain."""

    domain: str
    site: str
    instance: str
    pricing: str
    nodes: int                    # the plan pool's nodes (static: fixed; elastic: the peak)
    monthly_nodes: tuple[int, ...]
    slurm: Share
    kubernetes: Share
    # Reserved blocks: the terms bought, (first month, nodes, months it runs), by first month.
    terms: tuple[tuple[int, int, int], ...] = ()

    @property
    def prefix(self) -> str:
        return f"{self.domain}-{PRICING_TAGS.get(self.pricing, slug(self.pricing))}"

    @property
    def flavor(self) -> str:
        """Kueue ResourceFlavor and node-group name of this block."""
        return f"{self.domain}-{slug(self.pricing)}"

    @property
    def static(self) -> bool:
        return self.pricing in STATIC_PRICINGS

    @property
    def digits(self) -> int:
        return max(2, len(str(max(self.nodes, self.slurm.last, self.kubernetes.last, 1))))

    def names(self, first: int, last: int) -> str:
        """Slurm hostlist of nodes first..last of this block."""
        return hostlist(self.prefix, first, last, self.digits)

    def node_names(self, first: int, last: int) -> tuple[str, ...]:
        return tuple(f"{self.prefix}{i:0{self.digits}d}" for i in range(first, last + 1))

    @property
    def handover(self) -> tuple[int, int]:
        """Static nodes both orchestrators use in different months (first, last), or (0, -1)."""
        if not (self.static and self.slurm.count and self.kubernetes.count):
            return (0, -1)
        return (max(self.slurm.first, self.kubernetes.first), min(self.slurm.last, self.kubernetes.last))

    def share(self, orchestrator: str) -> Share:
        return self.slurm if orchestrator == "slurm" else self.kubernetes

    @property
    def orchestrators(self) -> tuple[str, ...]:
        """The orchestrators that hold any of this block's nodes, in ORCHESTRATORS order."""
        return tuple(o for o in ORCHESTRATORS if self.share(o).peak > 0)

    def owner(self, i: int, month: int) -> str:
        """Who holds static node i (1-based) in a month: Slurm uses 1..s[m], Kubernetes
        N-k[m]+1..N; slurm | kubernetes | idle."""
        s = self.slurm.monthly[month] if month < len(self.slurm.monthly) else 0
        k = self.kubernetes.monthly[month] if month < len(self.kubernetes.monthly) else 0
        return "slurm" if i <= s else "kubernetes" if i > self.nodes - k else "idle"

    def months_held(self, i: int, orchestrator: str) -> list[int]:
        return [m for m in range(len(self.monthly_nodes)) if self.owner(i, m) == orchestrator]

    def first_needed(self, i: int) -> int | None:
        """The first month an orchestrator holds static node i (None: no month does)."""
        return next((m for m in range(len(self.monthly_nodes)) if self.owner(i, m) != "idle"), None)

    def term_end(self, month: int) -> int:
        """The month after the last of the terms running in `month` (0: none runs): the
        reservation of that month must last until then."""
        return max((first + length for first, _n, length in self.terms if first <= month < first + length),
                   default=0)


@dataclass(frozen=True)
class Domain:
    site: str
    name: str                     # slug of the instance: partition, pool label value
    instance: str
    fabric: str
    shape: NodeShape
    blocks: tuple[Block, ...]     # in PRICINGS order

    def blocks_for(self, orchestrator: str) -> tuple[Block, ...]:
        return tuple(b for b in self.blocks if orchestrator in b.orchestrators)


def _series(values, months: int) -> list[int]:
    out = [int(v) for v in values][:months]
    return out + [0] * (months - len(out))


def _held(placements: list[tuple[WorkloadPlan, Placement]], pricing: str, months: int) -> list[int]:
    total = [0] * months
    for _w, p in placements:
        if p.holdings:
            for h in p.holdings:
                if h.pricing == pricing:
                    for m, n in enumerate(_series(h.monthly_nodes, months)):
                        total[m] += n
        elif p.pricing == pricing:          # a hand-made plan without holdings: all months
            total = [t + p.nodes for t in total]
    return total


def _terms(pool: Pool, pool_monthly: list[int]) -> tuple[tuple[int, int, int], ...]:
    """A reserved pool's terms; a plan without them (made by hand) reserves each month's rise in
    nodes from that month, for a term of its pricing."""
    months = TERMS.get(pool.pricing)
    if not months:
        return ()
    if pool.reservations:
        return tuple(sorted((r.start_month, r.nodes, months) for r in pool.reservations if r.nodes > 0))
    out, held = [], 0
    for m, n in enumerate(pool_monthly):
        if n > held:
            out.append((m, n - held, months))
        held = n
    return tuple(out)


def _block(plan: Plan, pool: Pool, domain: str, cloud: bool,
           placed: list[tuple[WorkloadPlan, Placement]]) -> Block:
    months = plan.horizon_months
    pool_monthly = _series(pool.monthly_nodes, months) if pool.monthly_nodes else [pool.nodes] * months
    by_orch = {o: [(w, p) for w, p in placed if orchestrator_of(w) == o] for o in ORCHESTRATORS}
    # Placements may share a node within a month (node-hours, not nodes, add up to the pool's),
    # so what an orchestrator holds is capped at what the pool has that month.
    slurm = [min(h, pool_monthly[m]) for m, h in enumerate(_held(by_orch["slurm"], pool.pricing, months))]
    k8s_held = _held(by_orch["kubernetes"], pool.pricing, months)
    # Elastic pricings: Kubernetes may start every node the pool bills beyond Slurm's (services
    # that move there while a job holds their reserved node share one holding's count).
    elastic_k8s = pool.pricing not in STATIC_PRICINGS
    k8s = [max(0, pool_monthly[m] - slurm[m] if elastic_k8s else min(h, pool_monthly[m] - slurm[m]))
           if h else 0 for m, h in enumerate(k8s_held)]
    s_peak, k_peak = max(slurm, default=0), max(k8s, default=0)
    static = pool.pricing in STATIC_PRICINGS
    n = max(pool.nodes, s_peak, k_peak) if static else pool.nodes
    if static:
        # An orchestrator alone on a block gets every node of it: the nodes exist (owned,
        # bought or reserved) whether or not a month's work fills them.
        overlap = s_peak + k_peak > n
        s_last = (n if not k_peak else s_peak) if s_peak else -1
        k_first = (1 if not s_peak else n - k_peak + 1) if k_peak else 0
        s_share = Share("slurm", tuple(slurm), 1 if s_peak else 0, s_last, elastic=overlap and cloud)
        k_share = Share("kubernetes", tuple(k8s), k_first, n if k_peak else -1,
                        elastic=overlap and cloud)
    else:
        s_share = Share("slurm", tuple(slurm), 1 if s_peak else 0, s_peak if s_peak else -1, True)
        k_share = Share("kubernetes", tuple(k8s), 0, -1, True)
    return Block(domain=domain, site=pool.site, instance=pool.instance, pricing=pool.pricing,
                 nodes=n, monthly_nodes=tuple(pool_monthly), slurm=s_share, kubernetes=k_share,
                 terms=_terms(pool, pool_monthly))


def site_domains(plan: Plan, catalog: Catalog, site: str, cloud: bool) -> tuple[Domain, ...]:
    order = {q: k for k, q in enumerate(PRICINGS)}
    instances = sorted({p.instance for p in plan.pools if p.site == site})
    out = []
    for instance in instances:
        name = slug(instance)
        placed = [(w, p) for w in plan.workloads for p in w.placements
                  if (p.site, p.instance) == (site, instance)]
        pools = sorted((p for p in plan.pools if (p.site, p.instance) == (site, instance)),
                       key=lambda p: (order.get(p.pricing, len(order)), p.pricing))
        blocks = tuple(_block(plan, pool, name, cloud, placed) for pool in pools)
        out.append(Domain(site=site, name=name, instance=instance, fabric=pools[0].fabric,
                          shape=node_shape(catalog, instance), blocks=blocks))
    return tuple(out)


def domain_of(domains: tuple[Domain, ...], placement: Placement) -> Domain:
    for d in domains:
        if d.instance == placement.instance:
            return d
    raise KeyError(f"no pool at {placement.site} for {placement.instance}")


def placement_pricings(p: Placement) -> tuple[str, ...]:
    """The pricings a placement holds nodes of, in PRICINGS order (its label when it has no
    holdings)."""
    held = [h.pricing for h in p.holdings if max(h.monthly_nodes, default=0) > 0]
    order = {q: k for k, q in enumerate(PRICINGS)}
    return tuple(sorted(set(held), key=lambda q: order.get(q, len(order)))) or (p.pricing,)


# ---------------------------------------------------------------------------- schedule


@dataclass(frozen=True)
class ScheduleRow:
    """From month_first to month_last, `orchestrator` holds `count` nodes of a block (static
    blocks: exactly the nodes `names`), or a service runs `count` replicas."""

    site: str
    month_first: int
    month_last: int
    kind: str                     # nodes | replicas
    orchestrator: str
    domain: str
    pricing: str
    object: str                   # replicas: the Deployment; nodes: ""
    count: int
    names: str                    # static nodes: hostlist; otherwise ""


def spans(values: tuple) -> list[tuple[int, int, object]]:
    out: list[list] = []
    for m, v in enumerate(values):
        if out and out[-1][2] == v:
            out[-1][1] = m
        else:
            out.append([m, m, v])
    return [tuple(s) for s in out]


def block_rows(block: Block) -> list[ScheduleRow]:
    rows = []
    for orch in ORCHESTRATORS:
        share = block.share(orch)
        if share.peak == 0:
            continue
        for first, last, count in spans(share.monthly):
            names = ""
            if block.static and count:
                lo = 1 if orch == "slurm" else block.nodes - count + 1
                names = block.names(lo, lo + count - 1)
            rows.append(ScheduleRow(block.site, first, last, "nodes", orch, block.domain,
                                    block.pricing, "", int(count), names))
    return rows
