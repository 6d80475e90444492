"""The MILP against brute force: seeded random small platforms, every combination priced by an
independent evaluator written from the cost rules in compiler/unit_costs.py's docstring."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from compiler.diagnostics import CompileError
from compiler.optimize import SolveOptions, optimize
from compiler import unit_costs
from compiler.estimate.memory import checkpoint_tb

from optimize_fixtures import CATALOG, candidates, cloud, onprem, restrict, spec, train_cand, training

EXACT = SolveOptions(gap=1e-9)


def random_platform(seed: int):
    rng = random.Random(seed)
    aws = cloud()
    dc = onprem(power_kw=rng.choice([30.0, 60.0, 130.0, 300.0]), usd_kwh=rng.choice([0.05, 0.2]),
                owned=[("dgx-h100", rng.choice([0, 1, 2]))])
    horizon = rng.choice([6, 12, 36])
    ws = [training(f"job{k}", index=k, start=rng.randrange(0, 4)) for k in range(3)]
    options = [(aws, "p5.48xlarge", False, None), (aws, "p5.48xlarge", True, None),
               (dc, "hgx-h100", False, "infiniband-ndr"), (dc, "hgx-h100", False, "roce-400g"),
               (dc, "dgx-h100", False, "infiniband-ndr")]
    cands = []
    for w in ws:
        for site, inst, spot, fab in rng.sample(options, rng.randint(2, 4)):
            nodes = rng.choice([1, 2, 4])
            hours = rng.choice([100.0, 900.0, 2000.0, 6000.0])
            cands.append(train_cand(w, site, inst, nodes, hours, spot=spot, fabric=fab))
    sp = spec([aws, dc], ws, horizon=horizon)
    return sp, candidates(sp, cands)


def _fabric_per_node(name: str) -> float:
    fab = CATALOG.fabrics[name]
    return fab.ports_per_node * fab.cost_per_port_usd + 3 * fab.ports_per_node / fab.switch_radix * fab.switch_cost_usd


def brute_force(sp, cs) -> float | None:
    """Cheapest feasible combination, priced without the MILP."""
    dc = next(s for s in sp.sites if s.type == "on_prem")
    H = sp.horizon_months
    best = None
    for combo in itertools.product(*(cs.by_workload[w.name] for w in sp.workloads)):
        cost, pools, need = 0.0, {}, {}
        for c in combo:
            w = sp.workload(c.workload)
            ck = checkpoint_tb(w, CATALOG)
            for m, h in c.usage:
                if m < H:
                    need[(c.site, m)] = need.get((c.site, m), 0.0) + ck
            hours = sum(h for m, h in c.usage if m < H)
            if c.site_type == "cloud":
                price = CATALOG.instances[c.instance].price("us-east-1", "spot" if c.spot else "on_demand")
                cost += price * c.nodes * hours
            else:
                node = CATALOG.onprem_nodes[c.instance]
                cost += c.nodes * hours * node.power_kw * dc.pue * dc.electricity_usd_per_kwh
                pools.setdefault(c.instance, []).append(c)
        feasible, kw = True, 0.0
        for inst, cs_ in pools.items():
            # One-node jobs run on any wiring; multi-node jobs need theirs, one per pool. With no
            # multi-node job the nodes get the cheapest fabric offered for the pool.
            wired = {c.fabric for c in cs_ if c.nodes > 1}
            if len(wired) > 1:
                feasible = False
                break
            offered = {c.fabric for cc in cs.by_workload.values() for c in cc if c.instance == inst}
            fab_name = wired.pop() if wired else min(offered, key=lambda f: (_fabric_per_node(f), f))
            node = CATALOG.onprem_nodes[inst]
            peak = max(sum(c.nodes for c in cs_ if any(mm == m and h > 0 for mm, h in c.usage)) for m in range(H))
            owned = sum(o.nodes for o in dc.owned if o.instance == inst)
            buy = max(0, peak - owned)
            kw += buy * node.power_kw * dc.pue
            per_node = (node.capex_usd * min(1.0, H / (node.useful_life_years * 12))
                        + node.support_usd_per_year * H / 12 + _fabric_per_node(fab_name))
            cost += buy * per_node
        if not feasible or kw > dc.power_kw + 1e-9:
            continue
        aws_tier = CATALOG.storage["fsx-lustre"]
        for (site, m), tb in need.items():
            if site == "aws-use1":
                cost += max(tb, aws_tier.min_tb) * aws_tier.usd_per_tb_month
        # On-prem: every month's need is below each tier's minimum (asserted), so an open tier
        # holds its minimum, two tiers in one month cost more than either alone, and a second
        # tier over the horizon adds a second capex: one tier for every month is the cheapest.
        dc_months = [tb for (site, m), tb in need.items() if site == "dc1" and tb > 0]
        onprem_tiers = [t for t in CATALOG.storage.values() if t.provider == "on_prem"]
        assert all(tb <= t.min_tb for tb in dc_months for t in onprem_tiers)
        if dc_months:
            cost += min(t.min_tb * (t.capex_usd_per_tb + len(dc_months) * t.usd_per_tb_month)
                        for t in onprem_tiers)
        best = cost if best is None else min(best, cost)
    return best


@pytest.mark.parametrize("seed", range(12))
def test_milp_equals_brute_force(seed):
    sp, cs = random_platform(seed)
    expected = brute_force(sp, cs)
    if expected is None:
        with pytest.raises(CompileError) as err:
            optimize(cs, EXACT)
        assert err.value.exit_code == 3
        return
    plan = optimize(cs, EXACT)
    assert plan.total_cost_usd == pytest.approx(expected, rel=1e-7, abs=0.05)
    assert sum(w.cost_usd for w in plan.workloads) == pytest.approx(plan.total_cost_usd, rel=1e-6)
    # each month is rounded to cents: the sum may be off by half a cent a month
    assert sum(plan.monthly_cost_usd) == pytest.approx(plan.total_cost_usd, rel=1e-6,
                                                       abs=0.005 * sp.horizon_months + 1e-6)


@pytest.mark.parametrize("seed", range(6))
def test_pins_never_cheaper_and_repinning_reproduces(seed):
    sp, cs = random_platform(seed)
    if brute_force(sp, cs) is None:
        pytest.skip("infeasible draw")
    plan = optimize(cs, EXACT)
    # Re-pin the plan's own choices (site, instance, GPUs, pricing per workload).
    chosen = []
    for w in plan.workloads:
        p = w.placements[0]
        chosen += [c.id for c in cs.by_workload[w.name]
                   if (c.site, c.instance, c.gpus) == (p.site, p.instance, p.gpus)
                   and (p.pricing == "spot") == c.spot]
    again = optimize(restrict(cs, chosen), EXACT)
    assert again.total_cost_usd == pytest.approx(plan.total_cost_usd, rel=1e-7)
    # Any other pin: each alternative candidate of the first workload.
    w0 = sp.workloads[0].name
    for c in cs.by_workload[w0]:
        try:
            pinned = optimize(restrict(cs, [c.id]), EXACT)
        except CompileError:
            continue
        assert pinned.total_cost_usd >= plan.total_cost_usd - 0.01
