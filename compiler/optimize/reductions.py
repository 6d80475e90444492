"""Exact reductions of the choice space (docs/optimizer.md, "Exact reductions", has the table).

Each function here removes choices or tightens bounds only where an argument shows that some
optimal plan of the full model survives, under every constraint the model has: owned nodes,
whole-node billing, quotas, power and racks, N+1 availability, reserved capacity shared month by
month, policy.max_cloud_share (not monotone: a cheaper on-prem choice raises the cloud's share)
and pins (pins filter candidates before any reduction). Heuristics never live here.
"""

from __future__ import annotations

from compiler.candidates import Candidate

MAX_BUNDLE = 16   # replicas of one candidate tried against a bundle of another (replica_caps)


def _hours_by_month(c: Candidate, horizon: int) -> dict[int, float]:
    """Node-hours run in each month of the horizon (work past it is outside the plan)."""
    return {m: c.nodes * h for m, h in c.usage if h > 0 and m < horizon}


def fabric_free(c: Candidate) -> bool:
    """Work inside one node never crosses the scale-out fabric: an on-prem inference replica (TP
    within a node) or a one-node training job runs the same on any fabric the pool is wired with."""
    return c.site_type == "on_prem" and (c.kind == "inference" or c.nodes <= 1)


def _fabric_key(c: Candidate) -> str:
    return "*" if fabric_free(c) else c.fabric


def dominates(d: Candidate, c: Candidate, horizon: int, share_capped: bool) -> bool:
    """d can stand in for c in every plan, at no more cost and no more of any resource, in every
    constraint c takes part in (docs/optimizer.md, "Exact reductions"). Both are candidates of
    one workload on one (site, instance) and pricing (spot or not); a fabric-free d runs on any
    wiring. Training: d holds no more nodes, is active in no month c is not, and runs no more
    node-hours in each month where a cloud pool shares reserved and on-demand hours month by month
    (12), in total where only the total is priced (on-prem power, spot). Inference: d needs no
    more GPUs per replica and carries at least as many tokens/s. Under policy.max_cloud_share a
    cheaper on-prem choice raises the cloud's share of the total, so on-prem candidates are only
    replaced by an identical twin there."""
    hours = {x.id: _hours_by_month(x, horizon) for x in (d, c) if x.kind == "training"}
    return _dominates(d, c, hours, share_capped)


def _dominates(d: Candidate, c: Candidate, hours: dict[str, dict[int, float]], share_capped: bool) -> bool:
    """dominates(), with each training candidate's node-hours by month given (prune computes them
    once per candidate, not once per pair)."""
    if d is c or (d.site, d.instance, d.spot) != (c.site, c.instance, c.spot):
        return False
    if _fabric_key(d) not in ("*", _fabric_key(c)):
        return False
    if c.kind == "training":
        hd, hc = hours[d.id], hours[c.id]
        if d.nodes > c.nodes or not set(hd) <= set(hc):
            return False
        if c.site_type == "cloud" and not c.spot:
            le = all(v <= hc[m] + 1e-9 for m, v in hd.items())
        else:
            le = sum(hd.values()) <= sum(hc.values()) + 1e-9
        same = d.nodes == c.nodes and set(hd) == set(hc) and all(abs(v - hc[m]) <= 1e-9 for m, v in hd.items())
    else:
        le = d.gpus <= c.gpus and d.estimate.tokens_per_s >= c.estimate.tokens_per_s
        same = (d.gpus, d.estimate.tokens_per_s) == (c.gpus, c.estimate.tokens_per_s)
    if not le:
        return False
    if share_capped and c.site_type == "on_prem" and not same:
        return False
    return not same or d.id < c.id    # identical twins: the smaller id stays


def prune(cands: list[Candidate], horizon: int, share_capped: bool = False) -> list[Candidate]:
    """Drop every candidate another one dominates (`dominates`). Exact: a plan using a dominated
    candidate keeps its cost and feasibility with the dominating one instead, and dominance is a
    strict order with ties broken by id, so some undominated candidate is always kept."""
    by_pool: dict[tuple, list[Candidate]] = {}
    for c in cands:
        by_pool.setdefault((c.site, c.instance, c.spot), []).append(c)
    hours = {c.id: _hours_by_month(c, horizon) for c in cands if c.kind == "training"}
    out = []
    for group in by_pool.values():
        out += [c for c in group if not any(_dominates(d, c, hours, share_capped) for d in group)]
    return out


def replica_caps(cands: list[Candidate], share_capped: bool = False) -> dict[str, int]:
    """The most replicas of each inference candidate some optimal plan needs at once: c's cap is
    k - 1 when k replicas of c can be swapped for j replicas of a d in the same pool (same site
    and instance) that need no more GPUs and carry at least as many tokens/s, one of the two
    strictly (j * g_d <= k * g_c, j * tau_d >= k * tau_c). A cap of 0 drops c: d's bundle
    dominates it outright (two tp4 replicas carry more than one tp8 on the same 8 GPUs).

    Exact: among the optimal plans (replicas bounded as in the model), take one that uses the
    fewest replica GPUs and, among those, carries the most tokens/s. If it ran k replicas of c in
    a month, the swap (then dropping replicas of d beyond what carries the month alone) would keep
    every row: demand and the N+1 rows (same site), packing, capacity, quota (no more GPUs), cost
    (cloud nodes and on-prem power only grow with GPUs), and use fewer GPUs or carry more: a
    contradiction. Under max_cloud_share on-prem swaps could lower the on-prem spend that keeps
    the share, so on-prem candidates get no cap there. No bundle swap chain returns to its start
    (each is a strict improvement), so the candidates that dominate others stay."""
    caps: dict[str, int] = {}
    for c in cands:
        if c.kind != "inference" or (share_capped and c.site_type == "on_prem"):
            continue
        tau_c = c.estimate.tokens_per_s
        for d in cands:
            if d is c or (d.site, d.instance) != (c.site, c.instance):
                continue
            tau_d = d.estimate.tokens_per_s
            for k in range(1, MAX_BUNDLE + 1):
                j = (k * c.gpus) // d.gpus
                if j < 1 or j * tau_d < k * tau_c - 1e-9:
                    continue
                strict = j * d.gpus < k * c.gpus or j * tau_d > k * tau_c + 1e-9
                if strict or (j == k and d.id < c.id):
                    caps[c.id] = min(caps.get(c.id, k - 1), k - 1)
                    break
    return caps
