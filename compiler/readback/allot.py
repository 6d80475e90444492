"""ALLOT: which nodes each placement holds, per pricing and month (plan.Holding).

The MILP decides how many nodes each pool has of each pricing in each month (reserved terms,
owned and bought nodes, on-demand node-hours) and which candidate each workload runs, but not
which of a pool's nodes a job runs on. This module is that rule: a pure function of one pool in
one month, deterministic, so the same solution always gives the same holdings.

The rule, per pool (site, instance or node model) and month
----------------------------------------------------------
Demands: a training job holds `nodes` whole nodes for the `hours` it runs in the month; a service
(one inference candidate's replicas) holds replicas * GPUs per replica / GPUs per node nodes'
worth for the whole month (730 h). Node-hours are nodes x hours.

Cloud pool (R_3y, R_1y reserved nodes this month; on demand has no limit, the solver's
`ondemand[...]` node-hours bill it):
  1. A job pinned to a pricing takes all its node-hours there (formulate (12a): `pin.pricing`
     on_demand or a reserved term); a spot job takes spot (its own pool). While a job pinned to
     a reserved term runs, the services' block keeps only the reserved nodes the job leaves
     free (R_3y + R_1y - its nodes) and runs the rest on demand for those hours, which is what
     formulate (12b) bills.
  2. Services, as one block of B = ceil(sum of their nodes' worth) whole nodes (replicas of
     several services share nodes, and the spare GPUs of a node that carries replicas are of no
     use to a training job, which holds whole nodes): the block takes reserved node-hours, 3y
     first, then 1y, up to 730 * B, the rest on demand. The services, by workload name then
     candidate, fill the block's reserved part first (3y, then 1y), then on demand, so the
     block's idle remainder is on demand.
  3. The other jobs, by start month, then workload name, then candidate: reserved 3y node-hours
     left, then 1y, each at most (R_k - the block's nodes of term k) nodes at once for the hours
     the job runs, the rest on demand.
On-prem pool (O owned nodes, b bought): the block takes owned nodes first (min(O, B)), then bought;
services fill its owned part first; then each job, in the order above, takes whole owned nodes
that are left, the rest bought (formulate (6) makes every job and the block fit O + b at once).

Node count of a holding in a month: min(the demand's nodes (a service: ceil of its nodes' worth),
ceil(its node-hours of that pricing / the hours it runs that month - 1e-9)). A job that runs on
two pricings within the month can hold more nodes in total than it holds at once.

Where the month's reserved node-hours are more than the jobs can run on (at most R_k nodes at
once for the hours each runs), the rest of their work is on demand: formulate (12) shares
reserved node-hours within a month optimistically, so in that case the holdings' on-demand
node-hours can exceed the solver's `ondemand[...]`. A job pinned to a reserved term takes its
node-hours there even when it holds more nodes than are reserved (the model allowed it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from compiler.plan import PRICINGS
from compiler.spec import HOURS_PER_MONTH as HOURS   # hours in a month

TERMS = ("reserved_3y", "reserved_1y")   # the order reserved node-hours are taken in
EPS = 1e-9      # two node counts computed in floating point are equal within this


@dataclass(frozen=True)
class Demand:
    """One placement's work in one pool and month."""
    key: str                      # the placement (its candidate id)
    workload: str
    kind: str                     # job | service
    nodes: float                  # job: nodes held; service: replicas * GPUs each / GPUs per node
    hours: float = HOURS          # hours it runs this month (a service: the whole month)
    start_month: int = 0
    pinned: str | None = None     # the pricing it must take (pin.pricing, spot)

    @property
    def node_hours(self) -> float:
        return self.nodes * self.hours

    @property
    def whole_nodes(self) -> int:
        return max(0, math.ceil(self.nodes - EPS))


@dataclass(frozen=True)
class Supply:
    """What one pool has in one month."""
    site_type: str                # cloud | on_prem
    reserved_3y: int = 0
    reserved_1y: int = 0
    owned: int = 0
    bought: int = 0

    def reserved(self, term: str) -> int:
        return self.reserved_3y if term == "reserved_3y" else self.reserved_1y


@dataclass(frozen=True)
class Share:
    pricing: str
    nodes: int
    node_hours: float


@dataclass(frozen=True)
class Allotment:
    shares: Mapping[str, tuple[Share, ...]]   # per demand key, in PRICINGS order
    in_use: Mapping[str, int]                 # nodes of each pricing in use in the pool this month
    busy: Mapping[str, float]                 # nodes' worth busy at once, per pricing


def _order(d: Demand) -> tuple:
    return (d.start_month, d.workload, d.key) if d.kind == "job" else (d.workload, d.key)


def allot(supply: Supply, demands: Sequence[Demand]) -> Allotment:
    """The holdings of one pool in one month (see the module docstring for the rule)."""
    hours: dict[str, dict[str, float]] = {d.key: {} for d in demands}
    in_use: dict[str, float] = {}
    pinned = sorted((d for d in demands if d.pinned), key=lambda d: (d.kind, _order(d)))
    services = sorted((d for d in demands if not d.pinned and d.kind == "service"), key=_order)
    jobs = sorted((d for d in demands if not d.pinned and d.kind == "job"), key=_order)
    block = math.ceil(sum(d.nodes for d in services) - EPS) if services else 0
    if supply.site_type == "cloud":
        _cloud(supply, pinned, services, jobs, block, hours, in_use)
    else:
        _on_prem(supply, pinned, services, jobs, block, hours, in_use)
    return _allotment(supply, demands, hours, in_use)


def _give(hours: dict[str, dict[str, float]], d: Demand, pricing: str, nh: float) -> None:
    """Book `nh` node-hours of `pricing` to d (none below EPS)."""
    if nh > EPS:
        hours[d.key][pricing] = hours[d.key].get(pricing, 0.0) + nh


def _cloud(supply: Supply, pinned: list[Demand], services: list[Demand], jobs: list[Demand], block: int,
           hours: dict[str, dict[str, float]], in_use: dict[str, float]) -> None:
    """A cloud pool (rule 1-3): pinned work at its pricing, the services' block on reserved nodes
    and on demand, then each job on the reserved node-hours left, the rest on demand."""
    left = {t: HOURS * supply.reserved(t) for t in TERMS}
    for d in pinned:
        _give(hours, d, d.pinned, d.node_hours)
        if d.pinned in left:
            left[d.pinned] = max(0.0, left[d.pinned] - d.node_hours)
    block_nodes = _cloud_block(supply, pinned, services, block, left, hours, in_use)
    for d in jobs:
        rest = d.node_hours
        for t in TERMS:
            cap = max(0, supply.reserved(t) - block_nodes[t]) * d.hours
            take = min(left[t], cap, rest)
            _give(hours, d, t, take)
            left[t] -= take
            rest -= take
        _give(hours, d, "on_demand", rest)


def _cloud_block(supply: Supply, pinned: list[Demand], services: list[Demand], block: int, left: dict[str, float],
                 hours: dict[str, dict[str, float]], in_use: dict[str, float]) -> dict[str, int]:
    """The services' block of whole nodes in a cloud pool (rule 2): reserved node-hours (3y, then
    1y) out of `left`, the rest on demand, filled by the services in order; returns its reserved
    nodes by term. While a job pinned to a reserved term holds its nodes, the block keeps only
    the reserved nodes left free and runs the rest on demand (formulate (12b) bills that excess:
    h (n - reserved + replicas' nodes))."""
    reserved = sum(supply.reserved(t) for t in TERMS)
    displaced = [(d.hours, min(block, max(0, d.whole_nodes + block - reserved)))
                 for d in pinned if d.pinned in TERMS]      # (hours, block nodes moved)
    yielded = min(HOURS * block, sum(h * n for h, n in displaced))
    need = HOURS * block - yielded
    block_hours: dict[str, float] = {}
    for t in TERMS:
        block_hours[t] = min(left[t], need)
        left[t] -= block_hours[t]
        need -= block_hours[t]
    block_nodes = {t: math.ceil(block_hours[t] / HOURS - EPS) for t in TERMS}
    fill = dict(block_hours)
    moved = yielded / (HOURS * block) if block else 0.0   # the share the pinned jobs displace
    for d in services:
        rest = d.node_hours * (1.0 - moved)
        _give(hours, d, "on_demand", d.node_hours * moved)
        for t in TERMS:
            take = min(fill[t], rest)
            _give(hours, d, t, take)
            fill[t] -= take
            rest -= take
        _give(hours, d, "on_demand", rest)
    in_use["on_demand"] = max(math.ceil(max(0.0, need) / HOURS - EPS),
                              max((n for _h, n in displaced), default=0))
    for t in TERMS:
        in_use[t] = block_nodes[t]
    return block_nodes


def _on_prem(supply: Supply, pinned: list[Demand], services: list[Demand], jobs: list[Demand], block: int,
             hours: dict[str, dict[str, float]], in_use: dict[str, float]) -> None:
    """An on-prem pool: pinned work at its pricing, the block on owned nodes first (services fill
    its owned part first), then each job on whole owned nodes left, the rest bought."""
    owned_left = supply.owned
    for d in pinned:
        _give(hours, d, d.pinned, d.node_hours)
        if d.pinned == "owned":
            owned_left = max(0, owned_left - d.whole_nodes)
    block_owned = min(owned_left, block)
    owned_left -= block_owned
    in_use["owned"], in_use["purchase"] = block_owned, block - block_owned
    fill = float(block_owned)
    for d in services:
        take = min(fill, d.nodes)
        _give(hours, d, "owned", take * HOURS)
        _give(hours, d, "purchase", (d.nodes - take) * HOURS)
        fill -= take
    for d in jobs:
        k = min(d.whole_nodes, owned_left)
        owned_left -= k
        _give(hours, d, "owned", k * d.hours)
        _give(hours, d, "purchase", (d.nodes - k) * d.hours)


def _allotment(supply: Supply, demands: Sequence[Demand], hours: Mapping[str, Mapping[str, float]],
               in_use: dict[str, float]) -> Allotment:
    """Each demand's shares from its node-hours by pricing (node counts as the module docstring
    says), the nodes in use and busy per pricing."""
    busy: dict[str, float] = {}
    shares: dict[str, tuple[Share, ...]] = {}
    for d in demands:
        out = []
        for p in PRICINGS:
            nh = hours[d.key].get(p, 0.0)
            if nh <= EPS:
                continue
            n = min(d.whole_nodes, math.ceil(nh / d.hours - EPS)) if d.hours > EPS else d.whole_nodes
            out.append(Share(p, n, nh))
            busy[p] = busy.get(p, 0.0) + (nh / d.hours if d.hours > EPS else 0.0)
            if d.kind == "job" or d.pinned:
                in_use[p] = in_use.get(p, 0) + n
        shares[d.key] = tuple(out)
    # Jobs may run one after another on the same reserved nodes: never more in use than reserved.
    for t in TERMS:
        if t in in_use:
            in_use[t] = min(in_use[t], supply.reserved(t)) if supply.reserved(t) else in_use[t]
    return Allotment(shares=shares, in_use={p: int(in_use[p]) for p in PRICINGS if in_use.get(p)},
                     busy={p: busy[p] for p in PRICINGS if busy.get(p)})


def main_pricing(shares: Sequence[tuple[str, float]]) -> str | None:
    """The pricing with the most node-hours; ties by PRICINGS order. `shares`: (pricing, hours)."""
    best = None
    for p in PRICINGS:
        nh = sum(h for q, h in shares if q == p)
        if nh > EPS and (best is None or nh > best[1] + EPS):
            best = (p, nh)
    return best[0] if best else None
