"""Storage: each site holds the datasets and checkpoints of the jobs running there, every month,
in the storage it already has (an on-prem site's storage.existing_tb, free) plus tiers of its own
provider sold in a minimum size."""

from __future__ import annotations

from collections import defaultdict
from typing import Iterator

from compiler.audit import codes, rules
from compiler.audit.context import Context, Finding, exceeds, num
from compiler.catalog.model import StorageTier

TB_TOL = 1e-3     # sizes are written to 3 decimals: each may be half of this off


def check_storage(ctx: Context) -> Iterator[Finding]:
    held: dict[tuple[str, int], float] = defaultdict(float)
    # site -> the tiers the catalog sells there
    offered_at: dict[str, dict[str, StorageTier]] = {s: rules.tiers_at(ctx.catalog, site)
                                                     for s, site in ctx.sites.items()}
    seen = set()
    for st in ctx.plan.storage:
        name = f"storage {st.site}/{st.tier}"
        site = ctx.sites.get(st.site)
        if site is None:
            yield Finding(codes.STORAGE_TIER, f"{name}: the spec has no site {st.site}")
            continue
        offered = offered_at[st.site]
        if st.tier not in offered:
            yield Finding(codes.STORAGE_TIER, f"{name}: {st.tier} is not a {rules.provider(site)} storage tier "
                          f"(the catalog sells {', '.join(sorted(offered)) or 'none'} there)", site.path)
            continue
        if (st.site, st.tier) in seen:
            yield Finding(codes.STORAGE_TIER, f"{name} appears twice in the plan", site.path)
            continue
        seen.add((st.site, st.tier))
        if len(st.monthly_tb) != ctx.H or min(st.monthly_tb, default=0.0) < 0:
            yield Finding(codes.STORAGE_TIER, f"{name} gives {len(st.monthly_tb)} monthly sizes for a "
                          f"{ctx.H}-month horizon (or a negative one)", site.path)
            continue
        tier = offered[st.tier]
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
    for (s, m), need in sorted(ctx.usage.storage.items()):
        site = ctx.sites[s]
        if not offered_at[s]:
            continue      # the catalog sells no storage there: nothing a plan could provision
        existing = getattr(site, "existing_storage_tb", 0.0)
        have = held.get((s, m), 0.0) + existing
        if exceeds(need, have, TB_TOL):
            own = f" (of them {num(existing)} TB it already has)" if existing else ""
            yield Finding(codes.STORAGE_SHORT, f"{s}: month {m} holds {num(have)} TB of storage{own}, the "
                          f"datasets and checkpoints of the jobs there take {num(need)} TB", site.path)
