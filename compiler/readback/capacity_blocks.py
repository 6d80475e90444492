"""Capacity Blocks read back (formulate (18), docs/capacity-blocks.md): the blocks the plan buys,
the node-hours their jobs run on them, and who pays for them.

A job on a block holds its nodes as on-demand ones (allot.py, pinned: its instances are launched
into the block as on-demand instances), so its pool bills its node-hours on demand and the block
credits them back (CapacityBlock.monthly_node_hours): the model took them off the pool's rows.
A block's price goes to its job, booked in the months it runs by its hours there."""

from __future__ import annotations

from typing import Callable

from compiler import unit_costs
from compiler.plan import CapacityBlock


def chosen(problem, value: Callable[[str], float]) -> dict[str, object]:
    """candidate id -> its BlockOption, for the jobs the plan runs on a block."""
    return {b.candidate: b for b in problem.capacity_blocks if value(b.var) > 0.5}


def _hours(problem, candidate: str) -> list[float]:
    H = problem.spec.horizon_months
    c = next(c for cs in problem.chosen_from.values() for c in cs if c.id == candidate)
    out = [0.0] * H
    for m, h in c.usage:
        if m < H and h > 0:
            out[m] += c.nodes * h
    return out


def covered(problem, value: Callable[[str], float]) -> dict[tuple[str, str, int], float]:
    """(site, instance, month) -> node-hours jobs run on their blocks (billed on demand by the pool
    in plan.json, credited back by the blocks)."""
    out: dict[tuple[str, str, int], float] = {}
    for b in chosen(problem, value).values():
        for m, nh in enumerate(_hours(problem, b.candidate)):
            if nh:
                out[(b.site, b.instance, m)] = out.get((b.site, b.instance, m), 0.0) + nh
    return out


def read(problem, value: Callable[[str], float]) -> tuple[CapacityBlock, ...]:
    """The blocks bought, by workload."""
    cat = problem.candidates.catalog
    out = []
    for b in sorted(chosen(problem, value).values(), key=lambda b: b.workload):
        site = problem.spec.site(b.site)
        out.append(CapacityBlock(b.workload, b.site, b.instance, b.nodes,
                                 unit_costs.capacity_block_count(cat, b.nodes, site.provider, b.instance) or 1,
                                 b.start_month, b.days,
                                 unit_costs.capacity_block_rate(cat, site, b.instance) or 0.0, round(b.usd, 2),
                                 tuple(round(h, 6) for h in _hours(problem, b.candidate))))
    return tuple(out)


def spread(problem, v, usd: float, workload_cost: dict[str, float], monthly: list[float]) -> bool:
    """Book a block's price (`usd`) to its job and the months it runs; False for any other variable."""
    if v.family != "capacity_block":
        return False
    workload_cost[v.workload] = workload_cost.get(v.workload, 0.0) + usd
    hours = _hours(problem, v.candidate)
    total = sum(hours)
    for m, nh in enumerate(hours):
        monthly[m] += usd * nh / total if total else 0.0
    if not total:
        monthly[0] += usd
    return True
