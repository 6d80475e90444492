"""Break-even physics, availability, infeasibility explained, solvers agreeing, determinism."""

from __future__ import annotations

import json

import pytest

from compiler.diagnostics import CompileError
from compiler.optimize import SolveOptions, optimize
from compiler import unit_costs
from compiler.optimize.formulate import formulate
from compiler.plan import to_json

from optimize_fixtures import (CATALOG, candidates, cloud, infer_cand, inference, onprem, spec, train_cand,
                               training)

EXACT = SolveOptions(gap=1e-9)


def _train_platform(hours, usd_kwh=0.05, horizon=36, pricing=("on_demand", "spot")):
    aws, dc = cloud(pricing=pricing), onprem(usd_kwh=usd_kwh)
    w = training("job")
    sp = spec([aws, dc], [w], horizon=horizon)
    return candidates(sp, [train_cand(w, aws, "p5.48xlarge", 8, hours),
                           train_cand(w, dc, "hgx-h100", 8, hours)])


def test_whole_horizon_job_buys_hardware_when_power_is_cheap():
    # 8 nodes for 36 x 730 h: on-demand p5 at $55.04/node-h (catalog) is ~$11.6M; buying 8 HGX H100
    # is 8 x ($290k capex credit 36/60 + $60k support + fabric) + power at $0.05/kWh: ~$2.4M.
    plan = optimize(_train_platform(36 * 730.0), EXACT)
    (p,) = plan.workloads[0].placements
    assert (p.site, p.pricing) == ("dc1", "purchase")
    assert plan.cost_breakdown_usd.capex > 0 and plan.cost_breakdown_usd.cloud_compute == 0


def test_two_week_burst_rents():
    plan = optimize(_train_platform(14 * 24.0), EXACT)
    (p,) = plan.workloads[0].placements
    assert p.site == "aws-use1" and p.pricing == "on_demand"
    assert plan.cost_breakdown_usd.capex == 0
    # 8 nodes x 336 h x $55.04 (catalog on-demand p5.48xlarge, us-east-1)
    assert plan.cost_breakdown_usd.cloud_compute == pytest.approx(8 * 336 * 55.04, rel=1e-9)


def _cloud_job(months, horizon=36):
    aws = cloud(pricing=("on_demand", "reserved_1y"))
    w = training("job")
    sp = spec([aws], [w], horizon=horizon)
    return candidates(sp, [train_cand(w, aws, "p5.48xlarge", 8, months * 730.0)])


def test_reserved_only_when_utilization_pays():
    # A 1-year term costs 12 x 730 h x $39.63 whether used or not; on-demand is $55.04/h (catalog,
    # p5.48xlarge us-east-1). It pays from 12 x 39.63 / 55.04 = 8.6 months of use a year.
    eleven = optimize(_cloud_job(11), EXACT)
    assert [p.pricing for p in eleven.pools] == ["reserved_1y"]
    assert eleven.pools[0].nodes == 8
    four = optimize(_cloud_job(4), EXACT)
    assert [p.pricing for p in four.pools] == ["on_demand"]
    assert four.total_cost_usd == pytest.approx(8 * 4 * 730 * 55.04 + four.cost_breakdown_usd.storage)
    # And a two-week training burst never reserves.
    burst = optimize(_train_platform(14 * 24.0, pricing=("on_demand", "reserved_1y", "reserved_3y")), EXACT)
    assert not any(p.pricing.startswith("reserved") for p in burst.pools)


def test_high_availability_spans_two_sites():
    aws, gcp = cloud(), cloud("gcp-usc1", "us-central1", "gcp", index=1)
    dc = onprem(index=2)
    w = inference("chat", rps=10, out=100, availability=0.999)
    sp = spec([aws, gcp, dc], [w], horizon=6)
    cs = candidates(sp, [infer_cand(w, aws, "p5.48xlarge", 8, 1000.0),
                         infer_cand(w, gcp, "a3-highgpu-8g", 8, 1000.0),
                         infer_cand(w, dc, "hgx-h100", 8, 1000.0)])
    plan = optimize(cs, EXACT)
    sites = {p.site for p in plan.workloads[0].placements}
    assert len(sites) >= 2
    # Losing any one site leaves enough: every site carries the whole load on its own here.
    assert all(p.replicas >= 1 for p in plan.workloads[0].placements)
    assert plan.workloads[0].estimate.tokens_per_s >= 2 * 1000.0


def test_infeasible_power_budget_is_explained():
    dc = onprem(power_kw=50.0, index=0)            # one HGX H100 draws 10.2 kW x PUE 1.2 = 12.24 kW
    w = training("big")
    sp = spec([dc], [w])
    with pytest.raises(CompileError) as err:
        optimize(candidates(sp, [train_cand(w, dc, "hgx-h100", 8, 500.0)]))
    assert err.value.exit_code == 3
    (d,) = [d for d in err.value.diagnostics if "power" in d.message]
    assert d.path == ("sites", 0, "power_kw")
    assert "dc1" in d.message and "50 kW" in d.message
    # 8 nodes x 12.24 kW = 97.92 kW needed: 47.92 kW short
    assert "47.9 kW short" in d.message


def test_infeasible_quota_is_explained():
    aws = cloud(quotas={"H100": 8}, index=0)
    w = training("big")
    sp = spec([aws], [w])
    with pytest.raises(CompileError) as err:
        optimize(candidates(sp, [train_cand(w, aws, "p5.48xlarge", 4, 500.0)]))
    assert err.value.exit_code == 3
    (d,) = [d for d in err.value.diagnostics if "quota" in d.message]
    assert d.path == ("sites", 0, "quotas", "H100")
    assert "24 GPUs short" in d.message


def test_availability_without_second_site_is_explained():
    aws = cloud(index=0)
    w = inference("chat", availability=0.999, index=0)
    sp = spec([aws], [w], horizon=3)
    with pytest.raises(CompileError) as err:
        optimize(candidates(sp, [infer_cand(w, aws, "p5.48xlarge", 8, 1000.0)]))
    assert err.value.exit_code == 3
    assert any("without aws-use1" in d.message and d.path == ("workloads", 0, "slo", "availability")
               for d in err.value.diagnostics)


def test_no_candidate_names_rejections():
    from compiler.candidates import Rejection

    aws = cloud(index=0)
    w = training("huge")
    sp = spec([aws], [w])
    rej = {"huge": (Rejection("huge", "aws-use1", "p5.48xlarge", "H100", "does not fit: needs 97 GB/GPU, has 80"),)}
    with pytest.raises(CompileError) as err:
        optimize(candidates(sp, [], rejected=rej))
    assert err.value.exit_code == 3
    assert "needs 97 GB/GPU" in err.value.diagnostics[0].message
    assert err.value.diagnostics[0].path == ("workloads", 0)


def test_no_solution_in_time_exits_5(monkeypatch):
    from compiler.optimize import solve as solve_mod
    from compiler.optimize import steps

    def no_plan(problem, **kw):
        return solve_mod.Solution("cbc", "no_solution", float("nan"), float("nan"), float("nan"), 1.0)

    monkeypatch.setattr(steps, "solve", no_plan)
    with pytest.raises(CompileError) as err:
        optimize(_train_platform(500.0), SolveOptions(time_limit=1))
    assert err.value.exit_code == 5


def test_no_solution_message_names_the_limits_that_stopped_it(monkeypatch):
    from compiler.optimize import solve as solve_mod
    from compiler.optimize import steps

    monkeypatch.setattr(steps, "solve", lambda problem, **kw: solve_mod.Solution(
        "cbc", "no_solution", float("nan"), float("nan"), float("nan"), 1.0))
    with pytest.raises(CompileError) as err:
        optimize(_train_platform(500.0), SolveOptions(time_limit=30, max_nodes=200))
    d = err.value.diagnostics[0]
    assert d.message == "the solver (cbc) found no plan within 200 branch-and-bound nodes and 30 s"
    assert "--max-nodes" in d.hint


@pytest.mark.parametrize("gap", [0.25, None])
def test_a_stopped_solve_without_a_bound_never_claims_a_zero_gap(monkeypatch, gap):
    # When the solver's bound cannot be read back, a stopped search falls back on the gap it
    # reported and then on 0 (no cost is negative), not on the plan's own cost (a 0% gap).
    from compiler.optimize import solve as solve_mod

    def stopped_without_bound(lp, *args, **kwargs):
        lp.solve(solve_mod.pulp.COIN_CMD(path=solve_mod.pulp.PULP_CBC_CMD.pulp_cbc_path, msg=False))
        return "feasible", None, gap

    monkeypatch.setattr(solve_mod, "_run_cbc", stopped_without_bound)
    sol = solve_mod.solve(formulate(_train_platform(500.0)))
    assert sol.status == "feasible" and sol.objective > 0
    assert sol.best_bound == pytest.approx(sol.objective * (1 - gap) if gap is not None else 0.0)
    assert sol.gap == pytest.approx(gap if gap is not None else 1.0)


def _mixed():
    aws, dc = cloud(pricing=("on_demand", "spot", "reserved_1y")), onprem(owned=[("dgx-h100", 2)])
    t1, t2 = training("pre", 0), training("tune", 1, start=2)
    inf = inference("chat", index=2, rps=8, out=100, growth=0.05, availability=0.999)
    sp = spec([aws, dc], [t1, t2, inf], horizon=12)
    return candidates(sp, [
        train_cand(t1, aws, "p5.48xlarge", 4, 2000.0), train_cand(t1, aws, "p5.48xlarge", 4, 2300.0, spot=True),
        train_cand(t1, dc, "hgx-h100", 4, 2000.0), train_cand(t1, dc, "dgx-h100", 2, 4000.0),
        train_cand(t2, aws, "p5.48xlarge", 1, 300.0), train_cand(t2, dc, "dgx-h100", 1, 300.0),
        infer_cand(inf, aws, "p5.48xlarge", 2, 300.0), infer_cand(inf, dc, "hgx-h100", 4, 700.0,
                                                                  fabric="infiniband-ndr")])


def test_cbc_and_highs_agree():
    cs = _mixed()
    a = optimize(cs, SolveOptions(solver="cbc", gap=1e-9))
    b = optimize(cs, SolveOptions(solver="highs", gap=1e-9))
    assert a.total_cost_usd == pytest.approx(b.total_cost_usd, rel=1e-6)
    assert a.solver.status == b.solver.status == "optimal"


def test_deterministic_plan_json():
    def strip(text):
        d = json.loads(text)
        d["solver"].pop("seconds")
        return d
    first = to_json(optimize(_mixed(), EXACT))
    second = to_json(optimize(_mixed(), EXACT))
    assert strip(first) == strip(second)


def test_plan_is_complete_for_render_and_report():
    plan = optimize(_mixed(), EXACT)
    assert {x.category for x in plan.cost_breakdown_usd.lines} >= {"capex", "power", "support", "fabric",
                                                                    "cloud_compute", "storage", "egress"}
    assert len(plan.monthly_cost_usd) == 12
    assert sum(plan.monthly_cost_usd) == pytest.approx(plan.total_cost_usd, rel=1e-6)
    assert sum(w.cost_usd for w in plan.workloads) == pytest.approx(plan.total_cost_usd, rel=1e-6)
    assert plan.solver.objective_usd == pytest.approx(plan.total_cost_usd, rel=1e-9)
    for p in plan.pools:
        assert len(p.monthly_nodes) == 12 and p.nodes == max(p.monthly_nodes) and p.fabric
    chat = next(w for w in plan.workloads if w.name == "chat")
    assert {"memory_gb_per_gpu", "tokens_per_s", "ttft_ms", "tpot_ms", "batch"} <= {f.name for f in chat.estimate.figures}
    # capacity at the peak month carries the peak demand: 8 rps x 100 tokens x 1.05^11
    assert chat.estimate.tokens_per_s >= 800 * 1.05 ** 11
    pre = next(w for w in plan.workloads if w.name == "pre")
    assert {"memory_gb_per_gpu", "duration_hours", "tokens_per_s", "mfu"} <= {f.name for f in pre.estimate.figures}
    assert pre.alternatives and all(a.delta_usd >= -0.01 or a.note for a in pre.alternatives)
    assert {s.name for s in plan.sites} == {p.site for w in plan.workloads for p in w.placements}
    assert plan.breakeven


def test_constraints_traced_to_spec_paths():
    problem = formulate(_mixed())
    by_group = {}
    for c in problem.constraints:
        by_group.setdefault(c.group, c)
        assert c.path.startswith("$.")
    assert by_group["power"].path == "$.sites[1].power_kw"
    assert by_group["availability"].path == "$.workloads[2].slo.availability"
    assert by_group["placement"].path == "$.workloads[0]"


def test_capex_by_the_after_horizon_rule_and_fabric_unit_costs():
    node = CATALOG.onprem_nodes["hgx-h100"]
    # 36 of 60 months of useful life: 60% of $290k inside the horizon, 40% after it
    assert unit_costs.capex_in_horizon(node, 36) == pytest.approx(0.6 * 290000)
    assert unit_costs.capex_after_horizon(node, 36) == pytest.approx(0.4 * 290000)
    assert unit_costs.capex_in_horizon(node, 120) == pytest.approx(290000)
    assert unit_costs.capex_after_horizon(node, 120) == 0
    # full: the whole price; continues: the horizon's share (the rest per idle node, rows (16))
    assert unit_costs.capex_charged(node, 36, "full") == pytest.approx(290000)
    assert unit_costs.capex_charged(node, 36, "continues") == pytest.approx(0.6 * 290000)
    # a 3-year term bought in month 23 of 24 runs 35 months past the horizon; full pays all 36
    assert unit_costs.term_months_after("reserved_3y", 23, 24) == 35
    assert unit_costs.term_months_charged("reserved_3y", 23, 24, "full") == 36
    assert unit_costs.term_months_charged("reserved_3y", 23, 24, "continues") == 1
    assert unit_costs.term_months_after("reserved_1y", 0, 24) == 0
    ib = CATALOG.fabrics["infiniband-ndr"]
    # 8 ports x $4k + 3 x 8/64 switches x $40k = $32k + $15k
    assert unit_costs.fabric_cost_per_node(ib) == pytest.approx(32000 + 15000)


def test_break_even_reference_figures():
    """002 (practitioners' notes): 64 H100 bought for ~$2.5M vs ~$98 per 8-GPU node-hour.
    8 nodes x $98 x 730 h = $572,320 a month of rental; $2.5M / $572,320 = 4.4 months before
    running costs. See docs/optimizer.md for the month-by-month crossing."""
    monthly = 8 * 98 * 730
    assert monthly == 572320
    assert 2.5e6 / monthly == pytest.approx(4.37, abs=0.01)


def test_a_job_pinned_to_on_demand_does_not_ride_idle_reserved_nodes():
    # A 12-month job on one p5 node makes a 1-year reservation pay; it leaves 30 idle reserved
    # node-hours in month 11. A 25-hour job there would ride them for free, unless it is pinned
    # to on_demand: then it buys its 25 node-hours on demand (formulate (12a)).
    from dataclasses import replace
    from compiler.spec import Pin
    aws = cloud(pricing=("on_demand", "reserved_1y"))
    steady, burst = training("steady", 0, start=0), training("burst", 1, start=11)
    od = CATALOG.instances["p5.48xlarge"].price("us-east-1", "on_demand")

    def total(pin):
        b = replace(burst, pin=pin) if pin else burst
        sp = spec([aws], [steady, b], horizon=12)
        cs = candidates(sp, [train_cand(steady, aws, "p5.48xlarge", 1, 8000.0),
                             train_cand(b, aws, "p5.48xlarge", 1, 25.0)])
        return optimize(cs, SolveOptions(gap=1e-9))

    free, pinned = total(None), total(Pin(pricing="on_demand"))
    assert {p.pricing for p in free.pools} == {"reserved_1y"}
    assert pinned.total_cost_usd - free.total_cost_usd == pytest.approx(25 * od, rel=1e-6)
    burst_plan = next(w for w in pinned.workloads if w.name == "burst")
    assert [p.pricing for p in burst_plan.placements] == ["on_demand"]


@pytest.mark.parametrize("reserved, chosen_od, on_demand", [
    (2, 0, 730.0),          # v = 3 > R = 2: the replicas' third node, all month; no job here
    (2, 1, 730.0 + 100.0),  # ... and one chosen job: no reserved node is free, its 100 h on demand
    (3, 1, 100.0),          # v = R: the same for the job, the replicas fill the reserved nodes
    (4, 2, 0.0),            # v < R: one node free; each job runs on it (hours shared in the month)
])
def test_jobs_are_billed_on_demand_only_for_what_they_run(reserved, chosen_od, on_demand):  # (12b)
    # A service needs 3 whole p5 nodes (3 replicas of TP8 for 1,000 tok/s at 400 each) beside R
    # reserved nodes. Ten training jobs each have a 1-node, 100-hour on-demand candidate in the
    # pool and a spot one; `chosen_od` of them run on demand. Worked by hand from allot.py's rule:
    # the replicas take reserved nodes first, a job runs on at most max(0, R - v) of them at once,
    # the month's reserved node-hours are shared. Before the fix, (12b) billed every candidate
    # h (v - R) beside the job's own hours, chosen or not: 10 x 100 h at R = 2, above 730.
    from compiler.optimize.formulate import inode_name, od_name, res_name, x_name, y_name
    from compiler.optimize.solve import solve
    aws = cloud(pricing=("on_demand", "spot", "reserved_1y"))
    chat = inference("chat", 0, rps=10.0, out=100)
    jobs = [training(f"job{k}", k + 1) for k in range(10)]
    sp = spec([aws], [chat, *jobs], horizon=1)
    svc = infer_cand(chat, aws, "p5.48xlarge", 8, 400.0)
    od = [train_cand(j, aws, "p5.48xlarge", 1, 100.0) for j in jobs]
    spot = [train_cand(j, aws, "p5.48xlarge", 1, 100.0, spot=True) for j in jobs]
    problem = formulate(candidates(sp, [svc, *od, *spot]))
    fixed = {y_name(svc, 0): 3.0, inode_name(aws.name, "p5.48xlarge", 0): 3.0,
             res_name(aws.name, "p5.48xlarge", "reserved_1y", 0): float(reserved)}
    for k, (o, s) in enumerate(zip(od, spot)):
        fixed[x_name(o)], fixed[x_name(s)] = (1.0, 0.0) if k < chosen_od else (0.0, 1.0)
    sol = solve(problem, fixed=fixed)
    assert sol.status == "optimal"
    assert sol.values[od_name(aws.name, "p5.48xlarge", 0)] == pytest.approx(on_demand)
