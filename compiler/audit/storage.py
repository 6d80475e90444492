"""Storage: each site holds the datasets and checkpoints of the jobs running there, every month,
in tiers of its own provider sold in a minimum size."""

from __future__ import annotations

from collections import defaultdict
from typing import Iterator

from compiler.audit import codes, rules
from compiler.audit.context import Context, Finding, exceeds, num

TB_TOL = 1e-3     # sizes are written to 3 decimals: each may be half of this off


def check_storage(ctx: Context) -> Iterator[Finding]:
    held: dict[tuple[str, int], float] = defaultdict(float)
    tiers: dict[str, int] = {}       # site -> tiers provisioned there
    seen = set()
    for st in ctx.plan.storage:
        name = f"storage {st.site}/{st.tier}"
        site = ctx.sites.get(st.site)
        if site is None:
            yield Finding(codes.STORAGE_TIER, f"{name}: the spec has no site {st.site}")
            continue
        tiers = rules.tiers_at(ctx.catalog, site)
        if st.tier not in tiers:
            yield Finding(codes.STORAGE_TIER, f"{name}: {st.tier} is not a {rules.provider(site)} storage tier "
                          f"(the catalog sells {', '.join(sorted(tiers)) or 'none'} there)", site.path)
            continue
        if (st.site, st.tier) in seen:
            yield Finding(codes.STORAGE_TIER, f"{name} appears twice in the plan", site.path)
            continue
        seen.add((st.site, st.tier))
        if len(st.monthly_tb) != ctx.H or min(st.monthly_tb, default=0.0) < 0:
            yield Finding(codes.STORAGE_TIER, f"{name} gives {len(st.monthly_tb)} monthly sizes for a "
                          f"{ctx.H}-month horizon (or a negative one)", site.path)
            continue
        tier = tiers[st.tier]
        small = [m for m, tb in enumerate(st.monthly_tb) if 1e-9 < tb < tier.min_tb - TB_TOL]
        if small:
            m = small[0]
            yield Finding(codes.STORAGE_TIER, f"{name}: month {m} provisions {num(st.monthly_tb[m])} TB, "
                          f"{st.tier} is sold in at least {num(tier.min_tb)} TB", site.path)
        peak = max(st.monthly_tb, default=0.0)
        if abs(st.capacity_tb - peak) > TB_TOL + 1e-6 * peak:
            yield Finding(codes.STORAGE_TIER, f"{name} states {num(st.capacity_tb)} TB, its months peak at "
                          f"{num(peak)} TB", site.path)
        for m, tb in enumerate(st.monthly_tb):
            held[(st.site, m)] += tb
        tiers[st.site] = tiers.get(st.site, 0) + 1
    for (s, m), need in sorted(ctx.usage.storage.items()):
        site = ctx.sites[s]
        if not rules.tiers_at(ctx.catalog, site):
            continue      # the catalog sells no storage there: nothing a plan could provision
        have = held.get((s, m), 0.0)
        if exceeds(need, have, TB_TOL * tiers.get(s, 1)):
            yield Finding(codes.STORAGE_SHORT, f"{s}: month {m} holds {num(have)} TB of storage, the datasets "
                          f"and checkpoints of the jobs there take {num(need)} TB", site.path)
