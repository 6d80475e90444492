"""Exact reductions of the choice space (docs/optimizer.md, "Exact reductions", has the table).

Each function here removes choices or tightens bounds only where an argument shows that some
optimal plan of the full model survives, under every constraint the model has: owned nodes,
whole-node billing, quotas, power and racks, N+1 availability, reserved capacity shared month by
month, policy.max_cloud_share (not monotone: a cheaper on-prem choice raises the cloud's share)
and pins (pins filter candidates before any reduction). Heuristics never live here.

The operability limits (formulate (15)): the spot cap filters candidates before any reduction.
Every dominance and bundle here stays inside one pool (site, instance), so it never changes the
instance types a service uses at a site (15a). Under a mix hold (15b) `dominates` stays exact (c
replaced by d in every month maps equal mixes to equal mixes: no change is added) but
`replica_caps` does not (a swap in one month can change that month's mix): formulate does not
call it there (docs/optimizer.md, "Under the operability limits").
"""

from __future__ import annotations

import itertools
from typing import Mapping

from compiler.candidates import Candidate
from compiler.problem import fabric_free
from compiler.optimize.settings import DEFAULT
from compiler.spec import HOURS_PER_MONTH



def _hours_by_month(c: Candidate, horizon: int) -> dict[int, float]:
    """Node-hours run in each month of the horizon (work past it is outside the plan)."""
    return {m: c.nodes * h for m, h in c.usage if h > 0 and m < horizon}


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


def _block_ok(d: Candidate, c: Candidate, blocks: Mapping[str, float]) -> bool:
    """Where c may run on a Capacity Block, d stands in for it only if d may too, at no more:
    a block is priced by whole days (weeks beyond two), so fewer node-hours can cost more."""
    cb = blocks.get(c.id)
    return cb is None or (d.id in blocks and blocks[d.id] <= cb + 1e-9)


def prune(cands: list[Candidate], horizon: int, share_capped: bool = False,
          monthly_pools: frozenset | None = None, blocks: Mapping[str, float] | None = None) -> list[Candidate]:
    """Drop every candidate another one dominates (`dominates`). Exact: a plan using a dominated
    candidate keeps its cost and feasibility with the dominating one instead, and dominance is a
    strict order with ties broken by id, so some undominated candidate is always kept.

    `monthly_pools`: the cloud pools (site, instance) where reserved nodes may be bought, the only
    ones whose node-hours are shared month by month ((12), (12b)); None counts every cloud pool.
    Elsewhere a cloud pool's on-demand hours are priced in total (`_monthly`).

    `blocks`: the USD of the Capacity Block each training candidate may run on (formulate's
    capacity_block rows), where one is sold; a pool with any is compared pairwise (`_block_ok`).

    Training candidates go through `_sweep` (sort and sweep, O(n log n) a pool), the rest through
    `_front` (each against the undominated ones found so far)."""
    by_pool: dict[tuple, list[Candidate]] = {}
    for c in cands:
        by_pool.setdefault((c.site, c.instance, c.spot), []).append(c)
    dominated: set[str] = set()
    for group in by_pool.values():
        train = [c for c in group if c.kind == "training"]
        profiles = {c.id: _profile(c, horizon) for c in train}
        blocked = bool(blocks) and any(c.id in blocks for c in train)
        if train and not blocked and all(p is not None for p in profiles.values()) and \
                len({c.start_month for c in train}) == 1:
            dominated |= _sweep(train, profiles, share_capped, monthly_pools)
            rest = [c for c in group if c.kind != "training"]
        else:
            rest = group
        hours = {c.id: _hours_by_month(c, horizon) for c in rest if c.kind == "training"}
        dominated |= _front(rest, hours, share_capped, blocks if blocked else None)
    return [c for c in cands if c.id not in dominated]


def _front(rest: list[Candidate], hours: dict[str, dict[int, float]], share_capped: bool,
           blocks: Mapping[str, float] | None) -> set[str]:
    """The candidates of one pool that another dominates (`_dominates`, and `_block_ok` where the
    pool sells blocks), each compared with the front of those not dominated so far, not with all.

    Dominance is transitive (fewer nodes, a subset of months, no more hours or GPUs, at least the
    tokens/s, a fabric-free one for any fabric, a block no dearer, twins to the smaller id), so
    a candidate any other dominates is dominated by one of the front: the one it is dominated
    by is in the front, or was dropped by one that is. A candidate joining the front drops the
    front's members it dominates, so the order only decides how many pairs are compared, not
    what is dropped. Recurring jobs (months apart), jobs whose counts start in different months
    and pools selling Capacity Blocks come here: n counts against a front of a few, not n^2."""
    def ok(d: Candidate, c: Candidate) -> bool:
        return _dominates(d, c, hours, share_capped) and (blocks is None or _block_ok(d, c, blocks))

    def order(c: Candidate) -> tuple:
        if c.kind == "training":
            return (0, c.nodes, sum(hours[c.id].values()), c.id)
        return (1, c.gpus, -c.estimate.tokens_per_s, c.id)

    front: list[Candidate] = []
    out: set[str] = set()
    for c in sorted(rest, key=order):
        if any(ok(d, c) for d in front):
            out.add(c.id)
            continue
        beaten = {d.id for d in front if ok(c, d)}
        if beaten:
            out |= beaten
            front = [d for d in front if d.id not in beaten]
        front.append(c)
    return out


def _monthly(c: Candidate, monthly_pools: frozenset | None) -> bool:
    """Whether c's node-hours are compared month by month: on a cloud pool where reserved nodes
    share their hours with every job of the month ((12), (12b)). Without reserved terms a cloud
    pool's rows (12) are u_m >= the month's hours (+ replicas), priced at one on-demand rate, so
    only the total is priced, as for spot and on-prem power."""
    if c.site_type != "cloud" or c.spot:
        return False
    return monthly_pools is None or (c.site, c.instance) in monthly_pools


def _profile(c: Candidate, horizon: int) -> tuple[int, float, float] | None:
    """(k, last, total) of a training candidate: k months run inside the horizon, node-hours in
    the last of them and in all. None unless the months are consecutive and every one but the
    last runs whole (730 h), the shape estimate.build.usage gives every training candidate."""
    run = [(m, h) for m, h in c.usage if h > 0 and m < horizon]
    if not run:
        return 0, 0.0, 0.0
    months = [m for m, _ in run]
    if months != list(range(months[0], months[0] + len(run))) or months[0] != c.start_month:
        return None
    if any(h != HOURS_PER_MONTH for _, h in run[:-1]):
        return None
    return len(run), c.nodes * run[-1][1], c.nodes * sum(h for _, h in run)


def _sweep(train: list[Candidate], profiles: dict[str, tuple[int, float, float]], share_capped: bool,
           monthly_pools: frozenset | None) -> set[str]:
    """The training candidates of one (site, instance, spot) that `dominates` drops, by sorting.

    All start in the same month and run consecutive months, whole but the last, so each is
    (n nodes, k months, last-month node-hours, total). For d, c of one pool with n_d <= n_c:
      - k_d < k_c: d is dominated month by month (whole months n_d <= n_c; d's last month at
        most 730 n_d <= c's whole month there), so in total too;
      - k_d = k_c: whole months compare by n, so d <= c iff last_d <= last_c month by month,
        total_d <= total_c in total (total = 730 (k - 1) n + last);
      - k_d > k_c: d runs in a month c does not.
    So c is dominated iff some d has k_d < k_c and n_d <= n_c (a prefix minimum of n over k), or
    k_d = k_c, n_d <= n_c and the compared hours no more (a sweep in n with a running minimum),
    identical twins (same n and hours) falling to the smaller id. A fabric-free d (`fabric_free`)
    stands in for any fabric; under a cloud-share cap on-prem candidates only for their twins."""
    out: set[str] = set()
    keys: dict[str, list[Candidate]] = {}
    for c in train:
        keys.setdefault(_fabric_key(c), []).append(c)
    for key, targets in keys.items():
        pool = targets if key == "*" else targets + keys.get("*", [])
        twins_only = share_capped and targets[0].site_type == "on_prem"
        monthly = _monthly(targets[0], monthly_pools)
        target_ids = {c.id for c in targets}

        def measure(c: Candidate) -> float:
            k, last, total = profiles[c.id]
            return last if monthly else total

        def beats(d: Candidate, c: Candidate) -> bool:
            """d dominates c, both of the same nodes and months: whole months are equal, so they
            are twins where their last months are; twins fall to the smaller id."""
            twin = abs(profiles[d.id][1] - profiles[c.id][1]) <= 1e-9
            if twins_only:
                return twin and d.id < c.id
            return measure(d) <= measure(c) + 1e-9 and (not twin or d.id < c.id)

        classes: dict[int, list[Candidate]] = {}
        for c in pool:
            classes.setdefault(profiles[c.id][0], []).append(c)
        least_below = float("inf")     # fewest nodes over the classes of fewer months
        for k in sorted(classes):
            members = sorted(classes[k], key=lambda c: (c.nodes, measure(c), c.id))
            running = float("inf")     # least measure over members with fewer nodes
            for _, group in itertools.groupby(members, key=lambda c: c.nodes):
                same_n = list(group)
                for c in same_n:
                    if c.id not in target_ids:
                        continue
                    fewer = not twins_only and (least_below <= c.nodes or running <= measure(c) + 1e-9)
                    if fewer or any(beats(d, c) for d in same_n if d is not c):
                        out.add(c.id)
                running = min(running, min(measure(d) for d in same_n))
            least_below = min(least_below, members[0].nodes)
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
            for k in range(1, DEFAULT.max_bundle + 1):
                j = (k * c.gpus) // d.gpus
                if j < 1 or j * tau_d < k * tau_c - 1e-9:
                    continue
                strict = j * d.gpus < k * c.gpus or j * tau_d > k * tau_c + 1e-9
                if strict or (j == k and d.id < c.id):
                    caps[c.id] = min(caps.get(c.id, k - 1), k - 1)
                    break
    return caps
