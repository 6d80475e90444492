r"""Capacity Blocks in the model: formulate's rows (18) (docs/capacity-blocks.md has the model).

An AWS Capacity Block (or a GCP calendar-mode reservation) reserves N instances of one type for D
days from a start date, paid in full at the block's rate; where a type's blocks are whole
UltraServers (AWS P6e-GB200), N is the job's nodes rounded up to whole UltraServers. A site opts in by listing capacity_block in its `pricing`; the
catalog says where blocks are sold (unit_costs.capacity_block_rate). A training job runs on one
block of its own nodes (several where it holds more than a block's limit) from its window's
start for its run, its duration rounded up to a block's length (AWS: whole days up to two weeks,
whole weeks beyond; GCP: whole days up to 90): D_c = capacity_block_days(duration_c, provider). The run is inside its window (the estimate
keeps only candidates that finish in time), so the block is too; a block's unused days are paid.

Notation (beyond formulate's)
-----------------------------
  B_c                the training candidates c with a block: cloud, not spot, at a site that lists
                     capacity_block and a region the catalog sells blocks of i(c) in, not pinned to
                     a pricing, not recurring, within the account's instance limit and a block's
                     longest duration
  beta_c             USD of c's block: rate(s, i) x N_c x 24 x D_c, N_c = n_c or whole UltraServers
                     of them (paid in full: all of it, also
                     where the run goes past the horizon, which on demand prices only inside it)

Decisions
---------
  k_c in {0,1}       c runs on its block                                          (c in B_c)

Objective: + sum_c beta_c k_c

Rows
----
  block_use[c]:      k_c <= x_c
  and in (12), (12b) and (16) the job's node-hours n_c h_{c,m} x_c become n_c h_{c,m} (x_c - k_c):
  a job on its block runs on none of the pool's reserved or on-demand hours, and Savings Plans
  (17) cover none of them.

Exact: every plan of the model without blocks is one with k = 0, and a job on a block pays its
block and nothing else for its nodes. The reductions compare block prices as well as node-hours
(reductions._block_ok): a block's whole days can make fewer node-hours cost more.
"""

from __future__ import annotations

from typing import Mapping

from compiler import recurrence, unit_costs
from compiler.candidates import Candidate
from compiler.problem import BlockOption, pinned_cloud_pricing
from compiler.spec import CloudSite, Spec


def block_price(spec: Spec, catalog, c: Candidate) -> tuple[int, float] | None:
    """(days, USD) of the block candidate c may run on, or None where it may not (B_c above)."""
    if c.kind != "training" or c.site_type != "cloud" or c.spot:
        return None
    site, w = spec.site(c.site), spec.workload(c.workload)
    if not isinstance(site, CloudSite) or unit_costs.CAPACITY_BLOCK not in site.pricing:
        return None
    if pinned_cloud_pricing(w) or recurrence.of(w.window, spec.horizon_months) is not None:
        return None
    if not any(h > 0 and m < spec.horizon_months for m, h in c.usage):
        return None
    return unit_costs.capacity_block_usd(catalog, site, c.instance, c.nodes, c.estimate.duration_hours)


def block_prices(spec: Spec, catalog, cands) -> dict[str, float]:
    """candidate id -> USD of its block, for the candidates that have one (reductions.prune)."""
    out = {}
    for c in cands:
        priced = block_price(spec, catalog, c)
        if priced is not None:
            out[c.id] = priced[1]
    return out


def block_rows(st, c: Candidate, xn: str) -> str | None:
    """k_c, its cost and block_use[c] for a candidate with a block; its node-hours' terms in (12)
    are added by the caller (od_hours: -n_c h_{c,m} on k_c). None where c has no block."""
    priced = block_price(st.spec, st.cat, c)
    if priced is None:
        return None
    days, usd = priced
    B = st.B
    kn = B.var(f"capacity_block[{c.id}]", "binary", family="capacity_block", workload=c.workload,
               candidate=c.id, site=c.site, instance=c.instance, pricing=unit_costs.CAPACITY_BLOCK,
               usd={"cloud_compute": usd})
    B.con(f"block_use[{c.id}]", "placement", {kn: 1.0, xn: -1.0}, "<=", 0.0, f"{st.spec.site(c.site).path}.pricing",
          f"{c.id} runs on a {days}-day Capacity Block of {c.nodes} {c.instance} only where it is chosen",
          family="block_use", workload=c.workload, candidate=c.id)
    st.capacity_blocks.append(BlockOption(kn, c.id, c.workload, c.site, c.instance, c.nodes, days, usd,
                                          c.start_month))
    return kn


def job_terms(B, od_terms: Mapping[str, float]) -> list[tuple[str, float, dict[str, float]]]:
    """The jobs among a pool-month's (12) terms: (x variable, n_c h_{c,m}, the job's own terms:
    x and, where it has a block, -k), skipping the block variables themselves."""
    blocks = {B.vars[n].candidate: n for n in od_terms if B.vars[n].family == "capacity_block"}
    out = []
    for xn, nh in sorted(od_terms.items()):
        v = B.vars[xn]
        if v.family != "x":
            continue
        kn = blocks.get(v.candidate)
        out.append((xn, nh, {xn: nh, **({kn: -nh} if kn else {})}))
    return out
