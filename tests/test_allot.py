"""allot.py: which nodes each placement holds, per pricing and month.

Hand-worked cases of the rule (one pool, one month), the rule inside a solved plan, and the
invariants of DESIGN.md section 5 on every shipped example:
- a holding never has more nodes in a month than its pool of that pricing;
- per pool, pricing and month the placements' node-hours fit what the pool provides (730 h per
  reserved, owned or bought node; on demand and spot: the node-hours billed);
- a placement's holdings add up, month by month, to what it runs (training: nodes x hours of its
  candidate's usage; inference: replicas x GPUs per replica / GPUs per node x 730 h);
- reserved pools are their reservations' terms; the placement's pricing is its main holding.
"""

from __future__ import annotations

import math

import pytest

from compiler.readback.allot import HOURS, Demand, Share, Supply, allot, main_pricing
from compiler.plan import PRICINGS
from examples_cache import EXAMPLES, example

TOL = 1e-5


def job(key, nodes, hours=HOURS, start=0, pinned=None, workload=None):
    return Demand(key, workload or key, "job", float(nodes), hours, start, pinned)


def service(key, replicas, gpus, gpn=8, pinned=None, workload=None):
    return Demand(key, workload or key, "service", replicas * gpus / gpn, HOURS, 0, pinned)


def shares(a, key):
    return {s.pricing: (s.nodes, round(s.node_hours, 6)) for s in a.shares[key]}


# --- one pool, one month ------------------------------------------------------------------

def test_one_reserved_node_and_a_32_node_job():
    a = allot(Supply("cloud", reserved_3y=1), [job("burst", 32)])
    assert shares(a, "burst") == {"reserved_3y": (1, 730.0), "on_demand": (31, 31 * 730.0)}
    assert a.in_use == {"reserved_3y": 1, "on_demand": 31}


def test_a_short_job_runs_on_no_more_reserved_nodes_than_there_are():
    # 100 hours on 32 nodes: the one reserved node carries 100 of its 730 hours, not 730 (that
    # would be 7.3 nodes at once); the other 31 nodes are on demand.
    a = allot(Supply("cloud", reserved_1y=1), [job("burst", 32, hours=100.0)])
    assert shares(a, "burst") == {"reserved_1y": (1, 100.0), "on_demand": (31, 3100.0)}


def test_reserved_hours_are_shared_in_order_three_years_first():
    # 2 x 3y + 1 x 1y nodes; two jobs, the earlier start first. a (2 nodes, all month) takes the
    # two 3-year nodes; b (2 nodes, 400 h) takes the 1-year node for its 400 h and 400 h on demand.
    a = allot(Supply("cloud", reserved_3y=2, reserved_1y=1),
              [job("b", 2, hours=400.0, start=1), job("a", 2, start=0)])
    assert shares(a, "a") == {"reserved_3y": (2, 1460.0)}
    assert shares(a, "b") == {"reserved_1y": (1, 400.0), "on_demand": (1, 400.0)}
    # the same demands in another order: the same allotment
    again = allot(Supply("cloud", reserved_3y=2, reserved_1y=1),
                  [job("a", 2, start=0), job("b", 2, hours=400.0, start=1)])
    assert again == a


def test_two_services_share_a_pool_as_one_block_of_whole_nodes():
    # chat: 1 replica of 4 GPUs (half a node); docs: 2 replicas of 4 GPUs (one node). Together they
    # need 1.5 nodes, so 2 whole nodes; one is reserved. By name: chat fills half the reserved
    # node, docs the other half and half an on-demand node (the other half of it stays idle).
    a = allot(Supply("cloud", reserved_1y=1), [service("docs", 2, 4), service("chat", 1, 4)])
    assert shares(a, "chat") == {"reserved_1y": (1, 365.0)}
    assert shares(a, "docs") == {"reserved_1y": (1, 365.0), "on_demand": (1, 365.0)}
    assert a.in_use == {"reserved_1y": 1, "on_demand": 1}


def test_services_take_reserved_nodes_before_training_jobs():
    # The block (1 node: 3 replicas of 2 GPUs) holds one of the two reserved nodes all month; the
    # job (2 nodes, 300 h) may use the other one only: 300 reserved hours, 300 on demand.
    a = allot(Supply("cloud", reserved_1y=2), [job("train", 2, hours=300.0), service("chat", 3, 2)])
    assert shares(a, "chat") == {"reserved_1y": (1, 547.5)}
    assert shares(a, "train") == {"reserved_1y": (1, 300.0), "on_demand": (1, 300.0)}


def test_a_job_pinned_to_on_demand_leaves_reserved_nodes_idle():
    a = allot(Supply("cloud", reserved_1y=2),
              [job("pinned", 1, hours=25.0, pinned="on_demand"), job("free", 1, hours=50.0, start=3)])
    assert shares(a, "pinned") == {"on_demand": (1, 25.0)}
    assert shares(a, "free") == {"reserved_1y": (1, 50.0)}
    # and one pinned to the 1-year term takes it first, even before a service
    a = allot(Supply("cloud", reserved_1y=1, reserved_3y=1),
              [service("chat", 1, 8), job("pinned", 1, hours=730.0, pinned="reserved_1y")])
    assert shares(a, "pinned") == {"reserved_1y": (1, 730.0)}
    assert shares(a, "chat") == {"reserved_3y": (1, 730.0)}


def test_a_job_pinned_to_reserved_moves_the_services_to_on_demand_while_it_runs():
    # 4 reserved nodes; a job pinned to them holds all 4 for 63.15 h; a service needs 1 whole
    # node all month. While the job runs the service's node is on demand: 63.15 node-hours, the
    # excess formulate (12b) bills (h x (n - reserved + replicas' nodes) = 63.15 x (4 - 4 + 1)).
    # Seed 8 of tests/coherence_specs.py: without it the holdings kept the service on reserved,
    # five nodes at once on four, and the audit found the bill $117.52 above the holdings.
    a = allot(Supply("cloud", reserved_1y=4),
              [job("train", 4, hours=63.15, pinned="reserved_1y"), service("chat", 1, 8)])
    assert shares(a, "train") == {"reserved_1y": (4, 252.6)}
    assert shares(a, "chat") == {"reserved_1y": (1, 666.85), "on_demand": (1, 63.15)}
    assert a.in_use["on_demand"] == 1
    # a replica worth 1/8 of a node moves its share: 63.15 / 8 node-hours on demand
    a = allot(Supply("cloud", reserved_1y=1),
              [job("train", 1, hours=30.0, pinned="reserved_1y"), service("tiny", 1, 1)])
    assert shares(a, "tiny") == {"reserved_1y": (1, round(700.0 / 8, 6)), "on_demand": (1, 30.0 / 8)}
    assert a.in_use["on_demand"] == 1
    # with room beside the job, nothing moves
    a = allot(Supply("cloud", reserved_1y=5),
              [job("train", 4, hours=63.15, pinned="reserved_1y"), service("chat", 1, 8)])
    assert shares(a, "chat") == {"reserved_1y": (1, 730.0)}


def test_spot_jobs_hold_spot_nodes():
    a = allot(Supply("cloud", reserved_1y=4), [job("cheap", 4, hours=200.0, pinned="spot")])
    assert shares(a, "cheap") == {"spot": (4, 800.0)}
    assert a.in_use == {"spot": 4}


def test_on_prem_owned_nodes_first_then_bought():
    # 8 owned, 6 bought. The services' block (1.5 nodes -> 2 whole nodes) takes 2 owned nodes;
    # then the jobs by start month: big (8 nodes) the 6 owned left and 2 bought, late (4 nodes)
    # 4 bought.
    a = allot(Supply("on_prem", owned=8, bought=6),
              [job("late", 4, hours=100.0, start=2), job("big", 8, hours=500.0, start=0),
               service("chat", 3, 4)])
    assert shares(a, "chat") == {"owned": (2, 1.5 * 730.0)}
    assert shares(a, "big") == {"owned": (6, 3000.0), "purchase": (2, 1000.0)}
    assert shares(a, "late") == {"purchase": (4, 400.0)}
    assert a.in_use == {"owned": 8, "purchase": 6}
    assert a.busy == {"owned": pytest.approx(7.5), "purchase": pytest.approx(6.0)}


def test_node_counts_follow_the_rule():
    # min(the job's nodes, ceil(node-hours / hours run)): 2.5 node-months of reserved hours over
    # a 4-node job that runs 730 h -> 3 reserved nodes (one of them half the month)
    a = allot(Supply("cloud", reserved_3y=3), [service("s", 2, 4), job("j", 4)])
    # the block (1 node) takes 730 of the 2,190 reserved hours; the job the remaining 1,460
    assert shares(a, "j") == {"reserved_3y": (2, 1460.0), "on_demand": (2, 1460.0)}
    half = allot(Supply("cloud", reserved_3y=3), [job("pin", 1, hours=365.0, pinned="reserved_3y"),
                                                  job("j", 4, start=1)])
    assert shares(half, "j") == {"reserved_3y": (3, 1825.0), "on_demand": (2, 1095.0)}


def test_main_pricing_most_node_hours_ties_by_order():
    assert main_pricing([("on_demand", 10.0), ("reserved_1y", 20.0)]) == "reserved_1y"
    assert main_pricing([("on_demand", 10.0), ("reserved_1y", 10.0)]) == "reserved_1y"
    assert main_pricing([("spot", 5.0), ("owned", 5.0)]) == "owned"
    assert main_pricing([]) is None


# --- the rule in a solved plan -----------------------------------------------------------------

def _burst_plan(pin=None, burst_nodes=32, burst_hours=730.0, burst_start=10, steady_hours=8000.0):
    """A 1-node job over most of the year (a 1-year reservation of one node pays for it) and a
    burst beside it. The steady job runs 8,000 h: 730 h a month, 700 h in month 10, none in 11."""
    from dataclasses import replace

    from compiler.optimize import SolveOptions, optimize
    from optimize_fixtures import candidates, cloud, spec, train_cand, training

    aws = cloud(pricing=("on_demand", "reserved_1y"))
    steady, burst = training("steady", 0, start=0), training("burst", 1, start=burst_start)
    burst = replace(burst, pin=pin) if pin else burst
    sp = spec([aws], [steady, burst], horizon=12)
    steady_c = train_cand(steady, aws, "p5.48xlarge", 1, steady_hours)
    burst_c = train_cand(burst, aws, "p5.48xlarge", burst_nodes, burst_hours)
    plan = optimize(candidates(sp, [steady_c, burst_c]), SolveOptions(gap=1e-9))
    return plan, {c.id: c for c in (steady_c, burst_c)}


def _placement(plan, name):
    (p,) = next(w for w in plan.workloads if w.name == name).placements
    return p


def test_a_32_node_burst_beside_one_reserved_node_is_on_demand():
    # Month 10: the reserved node has 30 idle hours; the 32-node burst runs on it for those 30 h
    # and on 32 on-demand nodes for the rest (no node is on two pricings at once, but within the
    # month the burst moves one of its nodes): 1 reserved_1y + 32 on_demand nodes held, labelled
    # on_demand, never 32 reserved nodes.
    plan, cands = _burst_plan()
    burst = _placement(plan, "burst")
    held = {h.pricing: h for h in burst.holdings}
    assert burst.pricing == "on_demand" and burst.nodes == 32
    assert held["reserved_1y"].monthly_nodes[10] == 1
    assert held["reserved_1y"].monthly_node_hours[10] == pytest.approx(30.0)
    assert held["on_demand"].monthly_nodes[10] == 32
    assert held["on_demand"].monthly_node_hours[10] == pytest.approx(32 * 730.0 - 30.0)
    od = next(p for p in plan.pools if p.pricing == "on_demand")
    assert od.monthly_node_hours[10] == pytest.approx(32 * 730.0 - 30.0)   # what the solver bills
    check_invariants(plan, cands)


def test_a_pinned_burst_holds_on_demand_only():
    from compiler.spec import Pin
    plan, cands = _burst_plan(Pin(pricing="on_demand"), burst_nodes=1, burst_hours=25.0, burst_start=11)
    burst = _placement(plan, "burst")
    assert [h.pricing for h in burst.holdings] == ["on_demand"]
    assert burst.holdings[0].monthly_node_hours[11] == pytest.approx(25.0)
    steady = _placement(plan, "steady")
    assert [h.pricing for h in steady.holdings] == ["reserved_1y"]
    check_invariants(plan, cands)


def test_reserved_hours_beyond_what_a_short_job_can_run_on():
    # Month 11: the steady job is done; a 32-node, 100-hour burst can use each reserved node for
    # 100 hours. The model counts all 730 of each node's hours against the burst's 3,200 (and
    # reserves nodes for month 11 on that account).
    plan, cands = _burst_plan(burst_hours=100.0, burst_start=11)
    check_invariants(plan, cands)


# --- invariants over the shipped examples -------------------------------------------------

def check_invariants(plan, cands=None) -> None:
    """DESIGN.md section 5's holdings contract; `cands` (candidate id -> Candidate) adds the
    training jobs' hours per month."""
    H = plan.horizon_months
    pools = {(p.site, p.instance, p.pricing): p for p in plan.pools}
    run: dict[tuple, float] = {}
    for w in plan.workloads:
        for p in w.placements:
            assert p.candidate, (w.name, p)
            assert [h.pricing for h in p.holdings] == [q for q in PRICINGS if q in {h.pricing for h in p.holdings}]
            for h in p.holdings:
                assert len(h.monthly_nodes) == len(h.monthly_node_hours) == H, (w.name, h.pricing)
                pool = pools.get((p.site, p.instance, h.pricing))
                assert pool is not None, (w.name, h.pricing)
                for m in range(H):
                    assert h.monthly_nodes[m] <= pool.monthly_nodes[m], (w.name, h.pricing, m)
                    assert h.monthly_node_hours[m] <= h.monthly_nodes[m] * HOURS + TOL, (w.name, h.pricing, m)
                    key = (p.site, p.instance, h.pricing, m)
                    run[key] = run.get(key, 0.0) + h.monthly_node_hours[m]
            totals = {h.pricing: sum(h.monthly_node_hours) for h in p.holdings}
            assert p.pricing == main_pricing(list(totals.items())), (w.name, p.pricing, totals)
            # what the placement runs, month by month
            if w.kind == "inference":
                assert len(p.monthly_replicas) == H and p.replicas == max(p.monthly_replicas)
                assert p.gpus == p.replicas * p.gpus_per_replica
                gpn = pools[(p.site, p.instance, p.holdings[0].pricing)].gpus_per_node
                for m in range(H):
                    need = p.monthly_replicas[m] * p.gpus_per_replica / gpn * HOURS
                    got = sum(h.monthly_node_hours[m] for h in p.holdings)
                    assert got == pytest.approx(need, abs=TOL), (w.name, p.candidate, m)
                    at_once = math.ceil(p.monthly_replicas[m] * p.gpus_per_replica / gpn - 1e-9)
                    assert sum(h.monthly_nodes[m] for h in p.holdings) >= at_once
            elif cands is not None:
                c = cands[p.candidate]
                hours = dict((m, h) for m, h in c.usage if m < H)
                for m in range(H):
                    got = sum(h.monthly_node_hours[m] for h in p.holdings)
                    assert got == pytest.approx(c.nodes * hours.get(m, 0.0), abs=TOL), (w.name, m)
                    if hours.get(m, 0.0) > 0:
                        assert sum(h.monthly_nodes[m] for h in p.holdings) >= c.nodes
    for (s, i, pricing, m), nh in run.items():
        pool = pools[(s, i, pricing)]
        if pricing in ("on_demand", "spot"):
            have = pool.monthly_node_hours[m]          # the solver's billed node-hours
        elif pricing in ("owned", "purchase"):
            have = pool.nodes * HOURS                  # owned / bought nodes, all month
            assert nh <= pool.monthly_nodes[m] * HOURS + TOL, (s, i, pricing, m)
        else:
            have = pool.monthly_nodes[m] * HOURS       # reserved nodes, all month
        assert nh <= have + TOL, (s, i, pricing, m, nh, have)
    for pool in plan.pools:
        assert len(pool.monthly_node_hours) == H and len(pool.monthly_nodes) == H
        if pool.pricing.startswith("reserved"):
            term = 12 if pool.pricing == "reserved_1y" else 36
            implied = [sum(r.nodes for r in pool.reservations if r.start_month <= m < r.start_month + term)
                       for m in range(H)]
            assert list(pool.monthly_nodes) == implied, pool
        else:
            assert pool.reservations == ()
        if pool.pricing == "spot":
            spot = sum(run.get((pool.site, pool.instance, "spot", m), 0.0) for m in range(H))
            assert spot == pytest.approx(sum(pool.monthly_node_hours), abs=TOL)


@pytest.fixture(scope="module")
def compiled():
    out = {}
    for name in EXAMPLES:
        cands, result = example(name)
        out[name] = (result.plan, {c.id: c for cs in cands.by_workload.values() for c in cs})
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", EXAMPLES)
def test_examples_hold_the_invariants(name, compiled):
    plan, cands = compiled[name]
    check_invariants(plan, cands)
    # and the workload costs still add up to the total
    assert sum(w.cost_usd for w in plan.workloads) == pytest.approx(plan.total_cost_usd, abs=0.05)


def test_share_is_plain_data():
    assert Share("owned", 1, 730.0) == Share("owned", 1, 730.0)
