"""The exact reductions of compiler/optimize/reductions.py, on figures worked by hand.

Each case is one the old, inexact reductions got wrong (../shared/optimality-cases/) or the
argument in the reduction's docstring turns on."""

from __future__ import annotations

import pytest
from compiler.optimize.reductions import dominates, prune, replica_caps

from optimize_fixtures import HOURS, cloud, infer_cand, inference, onprem, train_cand, training


def test_two_tp4_replicas_dominate_one_tp8_on_the_same_node():
    # Llama-3-70B fp8 on p5.48xlarge (the estimates of examples/multi-region-inference.yaml):
    # tp2 2,027 tok/s, tp4 4,533, tp8 8,738. Two tp4 replicas: 8 GPUs, 9,066 tok/s > one tp8.
    # One tp4: 4 GPUs, 4,533 > two tp2 (4,054): an optimal plan needs at most one tp2 replica.
    w, aws = inference("chat"), cloud()
    tp2, tp4, tp8 = (infer_cand(w, aws, "p5.48xlarge", t, tps) for t, tps in ((2, 2027.198), (4, 4533.241),
                                                                               (8, 8738.165)))
    caps = replica_caps([tp2, tp4, tp8])
    assert caps == {tp2.id: 1, tp8.id: 0}


def test_no_cap_across_pools_or_where_the_bundle_carries_less():
    w, aws = inference("chat"), cloud()
    a = infer_cand(w, aws, "p5.48xlarge", 4, 4533.0)
    b = infer_cand(w, aws, "p4de.24xlarge", 2, 3000.0)     # another pool: packs into other nodes
    c = infer_cand(w, aws, "p5.48xlarge", 8, 9500.0)       # better per GPU than two tp4
    assert replica_caps([a, b, c]) == {a.id: 1}           # two tp4 (9,066) < one tp8: cap 1 on tp4


def test_on_prem_serving_gets_no_cap_under_a_cloud_share():
    w, dc = inference("chat"), onprem()
    tp2, tp4 = infer_cand(w, dc, "hgx-h100", 2, 2027.0), infer_cand(w, dc, "hgx-h100", 4, 4533.0)
    assert replica_caps([tp2, tp4]) == {tp2.id: 1}
    assert replica_caps([tp2, tp4], share_capped=True) == {}


def test_cloud_training_dominance_is_month_by_month():
    # Optimality case F: 4 nodes for 1,000 h (2,920 + 1,080 node-hours in months 0, 1) against
    # 8 nodes for 480 h (3,840 in month 0 only). The first holds fewer nodes but runs in month 1;
    # the second fewer node-hours in total (3,840 < 4,000) but more nodes and more in month 0.
    # Neither dominates on a cloud pool, where reserved hours are shared month by month.
    w, aws = training("job"), cloud()
    slow, fast = train_cand(w, aws, "p5.48xlarge", 4, 1000.0), train_cand(w, aws, "p5.48xlarge", 8, 480.0)
    assert not dominates(slow, fast, 12, False) and not dominates(fast, slow, 12, False)
    # Same job, fewer node-hours in every month and fewer nodes: dominated.
    lean = train_cand(w, aws, "p5.48xlarge", 4, 900.0, tag="lean")
    assert dominates(lean, slow, 12, False)
    assert prune([slow, fast, lean], 12) == [fast, lean]


def test_spot_and_on_prem_dominance_is_on_total_node_hours():
    w, dc = training("job"), onprem()
    a = train_cand(w, dc, "hgx-h100", 4, 700.0, fabric="infiniband-ndr")    # 2,800 node-hours, month 0
    b = train_cand(w, dc, "hgx-h100", 4, 800.0, fabric="infiniband-ndr", tag="b")  # 3,200, months 0-1
    assert dominates(a, b, 12, False)
    # Under max_cloud_share a dearer on-prem choice can be what keeps the cloud's share down.
    assert not dominates(a, b, 12, True)


@pytest.mark.slow
def test_pins_to_owned_and_purchase_are_honoured_on_prem(tmp_path):
    """A pin to `purchase` leaves the owned nodes idle and buys; a pin to `owned` runs on them.
    The audit, run by every compile, checks the holdings against the pin (A204)."""
    from compiler.pipeline import compile_spec

    base = """apiVersion: infra-compile/v1
name: pinned-pricing
horizon_months: 12
sites:
  - {name: dc, type: on_prem, power_kw: 500, electricity_usd_per_kwh: 0.15, pue: 1.3, max_racks: 10,
     owned: [{instance: dgx-h100, nodes: 2}]}
policy: {placement: on_prem}
workloads:
  - name: chat
    kind: inference
    model: llama-3-8b
    traffic: {peak_rps: 30, input_tokens: 800, output_tokens: 200}
    slo: {ttft_p99_ms: 500, tpot_p99_ms: 40}
    pin: {instance: dgx-h100, pricing: PRICING}
"""
    held = {}
    for pricing in ("owned", "purchase"):
        path = tmp_path / f"{pricing}.yaml"
        path.write_text(base.replace("PRICING", pricing))
        plan = compile_spec(path).plan
        (w,) = plan.workloads
        held[pricing] = {h.pricing for p in w.placements for h in p.holdings if any(h.monthly_nodes)}
        if pricing == "purchase":
            assert plan.cost_breakdown_usd.capex > 0
    assert held == {"owned": {"owned"}, "purchase": {"purchase"}}


def _pairwise(cands, horizon, share_capped):
    """The definition: drop c when any other candidate dominates it (O(n^2))."""
    return [c for c in cands if not any(dominates(d, c, horizon, share_capped) for d in cands)]


def _random_jobs(seed: int):
    """Counts of one job on a cloud and an on-prem pool, with durations drawn so that month
    classes, ties, identical twins, fabric-free one-node jobs and runs past the horizon occur."""
    import random

    rng = random.Random(seed)
    w, aws, dc = training("job"), cloud(), onprem()
    out = []
    for k in range(rng.randint(5, 40)):
        site, inst = rng.choice([(aws, "p5.48xlarge"), (dc, "hgx-h100")])
        nodes = rng.randint(1, 12)
        hours = rng.choice([HOURS * rng.randint(1, 14), rng.uniform(10, 12 * HOURS), 400.0, 1130.0])
        fabric = rng.choice(["infiniband-ndr", "roce-400g"]) if site is dc else None
        out.append(train_cand(w, site, inst, nodes, hours, spot=rng.random() < 0.2 and site is aws,
                              fabric=fabric, tag=f"-{k}"))
    return out


@pytest.mark.slow
def test_sort_and_sweep_prune_drops_exactly_what_pairwise_dominance_drops():
    """prune sorts and sweeps each pool (O(n log n)); on random sets it keeps exactly the
    candidates the pairwise definition keeps, with and without a cloud-share cap."""
    for seed in range(300):
        cands = _random_jobs(seed)
        for horizon in (6, 12):
            for capped in (False, True):
                assert prune(cands, horizon, capped) == _pairwise(cands, horizon, capped), (seed, horizon, capped)



def _random_front_cases(seed: int):
    """Candidates of one workload that prune compares pairwise (its `_front`): a job's counts
    running months apart (a recurring job's) or starting in different months, on pools that may
    sell Capacity Blocks; or a service's replicas (every fourth seed); with ties, identical twins and fabric-free jobs; and the blocks' USD by candidate."""
    import random
    from dataclasses import replace

    rng = random.Random(seed)
    w, aws, dc, chat = training("job"), cloud(), onprem(), inference("chat")
    out, blocks, serving = [], {}, seed % 4 == 0     # prune sees one workload's candidates
    for k in range(rng.randint(5, 40)):
        if serving:
            tp = rng.choice([1, 2, 4, 8])
            out.append(infer_cand(chat, aws, "p5.48xlarge", tp, rng.choice([1000.0 * tp, 2000.0, rng.uniform(500, 9000)]),
                                  tag=f"-{k}"))
            continue
        site, inst = rng.choice([(aws, "p5.48xlarge"), (dc, "hgx-h100")])
        nodes = rng.randint(1, 8)
        months = sorted(rng.sample(range(12), rng.randint(1, 4)))
        # equal totals over different months: a job on fewer months may come later in the
        # front's order and still dominate (the front then drops what it beats)
        each = rng.choice([100.0, 250.0, rng.uniform(10, HOURS), 480.0 / len(months)])
        fabric = rng.choice(["infiniband-ndr", "roce-400g"]) if site is dc else None
        c = train_cand(w, site, inst, nodes, each, spot=rng.random() < 0.2 and site is aws, fabric=fabric,
                       tag=f"-{k}")
        c = replace(c, start_month=months[0], usage=tuple((m, each) for m in months))
        out.append(c)
        if site is aws and not c.spot and rng.random() < 0.5:
            blocks[c.id] = rng.choice([1000.0, 2000.0, rng.uniform(500, 3000)])
    return out, blocks


@pytest.mark.slow
def test_the_front_drops_exactly_what_pairwise_dominance_drops():
    """prune's `_front` compares each candidate with the undominated ones found so far; on
    random sets of what it handles it keeps exactly what the pairwise definition keeps (with
    the blocks' prices where a pool sells them), with and without a cloud-share cap."""
    from compiler.optimize.reductions import _block_ok

    compared = 0
    for seed in range(300):
        cands, blocks = _random_front_cases(seed)
        for capped in (False, True):
            for priced in (None, blocks):
                def beats(d, c):
                    if not dominates(d, c, 12, capped):
                        return False
                    pool = [x for x in cands if (x.site, x.instance, x.spot) == (c.site, c.instance, c.spot)]
                    sells = bool(priced) and any(x.id in priced for x in pool if x.kind == "training")
                    return not sells or _block_ok(d, c, priced)

                # the definition, where no two candidates dominate each other (it would drop both)
                if any(beats(d, c) and beats(c, d) for d in cands for c in cands if d is not c):
                    continue
                expected = [c for c in cands if not any(beats(d, c) for d in cands)]
                assert prune(cands, 12, capped, None, priced) == expected, (seed, capped, priced is None)
                compared += 1
    assert compared > 1000
