"""The policy's operability limits (docs/spec-reference.md, "Operability limits"): plans compiled
with each limit obey it, judged by an oracle of this file's own that reads plan.json and the spec
only (not the optimizer, the audit or compiler/operability.py); the plan records what the limits
cost against the same candidates solved without them (and, where two bind, each alone), and the
report says it; the audit flags a plan that breaks a limit; the reductions a limit's argument does
not cover are off under it; the greedy start obeys the limits; a limit that makes a spec
infeasible is named.

Measured here (the test asserts a bound): multi-region-inference, whose plan runs two instance
types a service and site, costs $1,814,650 with one against $1,580,782 without the limit (+14.8%;
catalog 2026.11.4)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
import yaml

import audit_fixtures as F
from compiler.audit import codes
from compiler.pipeline import compile_spec, estimate
from compiler.plan import to_json
from examples_cache import ROOT
from shared_cache import free_solves_shared

MRI = "multi-region-inference"


def _variant(tmp_path: Path, example: str, **policy) -> Path:
    doc = copy.deepcopy(yaml.safe_load((ROOT / "examples" / f"{example}.yaml").read_text()))
    doc.setdefault("policy", {}).update(policy)
    out = tmp_path / f"{example}-limited.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


# --- the oracle: plan.json alone ----------------------------------------------------------

def types_per_site(plan: dict) -> dict[tuple[str, str], set[str]]:
    """(service, site) -> the instances of the placements that run a replica in some month."""
    out: dict[tuple[str, str], set[str]] = {}
    for w in plan["workloads"]:
        if w["kind"] != "inference":
            continue
        for p in w["placements"]:
            if any(r > 0 for r in p["monthly_replicas"]):
                out.setdefault((w["name"], p["site"]), set()).add(p["instance"])
    return out


def mix_change_months(plan: dict, w: dict) -> list[int]:
    """Months (after the start) whose set of candidates with a replica differs from the month before."""
    H = plan["horizon_months"]
    mixes = [{p["candidate"] for p in w["placements"] if p["monthly_replicas"][m] > 0} for m in range(H)]
    return [m for m in range(w["start_month"] + 1, H) if mixes[m] != mixes[m - 1]]


def spot_hours(w: dict) -> float:
    return sum(sum(h["monthly_node_hours"]) for p in w["placements"] for h in p["holdings"]
               if h["pricing"] == "spot")


@pytest.fixture(scope="module")
def mri_one_type(tmp_path_factory):
    path = _variant(tmp_path_factory.mktemp("mri"), MRI, max_instance_types_per_site=1)
    with free_solves_shared():        # its plan without the limit: the example's own solve
        result = compile_spec(path)
    return json.loads(result.artifacts["plan.json"]), result.artifacts["report.md"], result.artifacts["report.html"]


@pytest.mark.slow
def test_one_instance_type_per_site_is_obeyed_and_its_price_stated(mri_one_type):
    plan, report, html = mri_one_type
    assert all(len(v) <= 1 for v in types_per_site(plan).values()), types_per_site(plan)
    free = plan["operability"]["unlimited"]
    # the plan without the limit is the shipped example's own (same candidates, same budget)
    golden = json.loads((ROOT / "tests" / "golden" / "examples" / MRI / "plan.json").read_text())
    assert free["cost_usd"] == pytest.approx(golden["total_cost_usd"], abs=0.01)
    assert max(len(v) for v in types_per_site(golden).values()) == free["most_instance_types"] > 1
    # a binding limit costs something, and not a fleet's worth (measured +14.8%)
    assert free["cost_usd"] < plan["total_cost_usd"] <= 1.2 * free["cost_usd"], (plan["total_cost_usd"],
                                                                                   free["cost_usd"])
    assert plan["total_cost_usd"] >= plan["solver"]["best_bound_usd"] - 0.01
    # the report states both costs and the difference, as plan.json has them
    delta = plan["total_cost_usd"] - free["cost_usd"]
    line = next(line for line in report.splitlines() if line.startswith("With the limits"))
    assert f"${plan['total_cost_usd']:,.0f}" in line and f"${free['cost_usd']:,.0f}" in line
    assert f"${delta:,.0f} ({delta / free['cost_usd']:+.2%})" in line
    assert re.search(r"\| `max_instance_types_per_site` \| 1 \| at most 1 a service and site \| at most "
                     rf"{free['most_instance_types']} \| yes \|", report)
    assert ("<tr><td><code>max_instance_types_per_site</code></td><td>1</td><td>at most 1 a service and site</td>"
            f"<td>at most {free['most_instance_types']}</td><td>yes</td></tr>") in html


@pytest.mark.slow
def test_the_report_says_where_availability_multiplies_replicas(mri_one_type):
    """Every N+1 service gets one line: its peak month's replicas per site, and N / (N - 1)."""
    plan, report, _html = mri_one_type
    spec = yaml.safe_load((ROOT / "examples" / f"{MRI}.yaml").read_text())
    for w in spec["workloads"]:
        if w["kind"] != "inference" or w["slo"].get("availability", 0.99) < 0.999:
            continue
        pw = next(x for x in plan["workloads"] if x["name"] == w["name"])
        H = plan["horizon_months"]
        total = [sum(p["monthly_replicas"][m] for p in pw["placements"]) for m in range(H)]
        peak = max(range(H), key=lambda m: (total[m], -m))
        at: dict[str, int] = {}
        for p in pw["placements"]:
            if p["monthly_replicas"][peak]:
                at[p["site"]] = at.get(p["site"], 0) + p["monthly_replicas"][peak]
        n = len(at)
        line = next(line for line in report.splitlines() if line.startswith(f"- {w['name']}: availability"))
        assert f"in its peak month {peak} its {total[peak]} replicas run on {n} sites" in line
        assert ", ".join(f"{r} at {s}" for s, r in sorted(at.items())) in line
        assert f"{n}/{n - 1} = {n / (n - 1):.2f} times" in line


@pytest.mark.slow
def test_a_mix_hold_and_no_spot_on_the_hybrid_platform(tmp_path):
    # The example's own traffic (chat-70b growing 3% a month) changes its cheapest mix months
    # apart and then back a month later (16, 17, 24, 25, ...), so the hold has something to hold
    # (asserted below). Its plan without the limits is the example's own solve.
    path = _variant(tmp_path, "hybrid-llm-platform", min_months_per_mix=3, max_spot_share=0)
    with free_solves_shared():
        result = compile_spec(path)
    plan = json.loads(result.artifacts["plan.json"])
    seen_changes = 0
    for w in plan["workloads"]:
        if w["kind"] == "inference":
            changes = [w["start_month"]] + mix_change_months(plan, w)
            assert all(b - a >= 3 for a, b in zip(changes, changes[1:])), (w["name"], changes)
            seen_changes += len(changes) - 1
        else:
            assert spot_hours(w) == 0, w["name"]
    assert seen_changes > 0        # the hold was tested on a service whose mix does change
    free = plan["operability"]["unlimited"]
    assert free["shortest_mix_hold"] is not None and free["shortest_mix_hold"] < 3   # it binds
    assert plan["total_cost_usd"] >= free["best_bound_usd"] - 0.01


@pytest.mark.slow
def test_a_spot_cap_of_zero_gives_no_spot(tmp_path):
    path = _variant(tmp_path, "llm-pretrain-aws", max_spot_share=0)
    result = compile_spec(path)
    plan = json.loads(result.artifacts["plan.json"])
    golden = json.loads((ROOT / "tests" / "golden" / "examples" / "llm-pretrain-aws" / "plan.json").read_text())
    assert any(spot_hours(w) > 0 for w in golden["workloads"])     # the example without the cap uses spot
    assert all(spot_hours(w) == 0 for w in plan["workloads"] if w["kind"] == "training")
    free = plan["operability"]["unlimited"]
    assert free["cost_usd"] == pytest.approx(golden["total_cost_usd"], abs=0.01)
    assert free["most_spot_share"] == 1.0 and plan["total_cost_usd"] > free["cost_usd"]
    assert "| `max_spot_share` | 0 | 0% at the most | 100% at the most | yes |" in result.artifacts["report.md"]
    assert _schema_errors(plan) == []


def _schema_errors(plan: dict) -> list[str]:
    import jsonschema

    from compiler.resources import schema

    validator = jsonschema.Draft202012Validator(schema("plan.schema.json"))
    return sorted(e.message for e in validator.iter_errors(plan))


def test_a_spec_without_limits_has_no_operability_record(tmp_path):
    """The defaults lifted (null) and nothing else set: no operability key, and the report says so."""
    path = _variant(tmp_path, "llm-pretrain-aws", max_sites_per_service=None, max_gpu_types_per_service=None,
                    min_pool_months=None)
    result = compile_spec(path)
    assert "operability" not in json.loads(result.artifacts["plan.json"])
    assert "The policy sets no operability limit" in result.artifacts["report.md"]
    shipped = json.loads((ROOT / "tests" / "golden" / "examples" / MRI / "plan.json").read_text())
    assert shipped["operability"]["max_sites_per_service"] == 3    # the default stays on


def service_keys(plan: dict, w: dict) -> tuple[set[str], set[str]]:
    """A service's sites and GPU types over the placements that run a replica (the GPU from the
    plan's pools)."""
    gpu = {(p["site"], p["instance"]): p["gpu"] for p in plan["pools"]}
    on = [p for p in w["placements"] if any(r > 0 for r in p["monthly_replicas"])]
    return {p["site"] for p in on}, {gpu[(p["site"], p["instance"])] for p in on}


def pool_runs(plan: dict) -> list[tuple[str, str, int, int]]:
    """(site, instance, first, last) of each run of months a cloud pool carries a replica in."""
    cloud = {s["name"] for s in plan["sites"] if s["type"] == "cloud"}
    up: dict[tuple[str, str], set[int]] = {}
    for w in plan["workloads"]:
        for p in w["placements"]:
            if p["site"] in cloud:
                up.setdefault((p["site"], p["instance"]), set()).update(
                    m for m, r in enumerate(p["monthly_replicas"]) if r > 0)
    runs = []
    for (site, inst), months in sorted(up.items()):
        for m in sorted(months):
            if m - 1 not in months:
                end = m
                while end + 1 in months:
                    end += 1
                runs.append((site, inst, m, end))
    return runs


@pytest.fixture(scope="module")
def mri_defaults(tmp_path_factory):
    """(Candidates, Result) of multi-region-inference with its policy's two lifted limits removed:
    the defaults on (the compile takes about a minute and a half on 2 cores)."""
    doc = yaml.safe_load((ROOT / "examples" / f"{MRI}.yaml").read_text())
    for key in ("max_gpu_types_per_service", "min_pool_months"):
        del doc["policy"][key]
    path = tmp_path_factory.mktemp("defaults") / f"{MRI}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with free_solves_shared():        # its plan without the limits: the example's own solve
        result = compile_spec(path)
    return result.candidates, result


@pytest.mark.slow
def test_the_default_limits_hold_on_the_three_cloud_example(mri_defaults):
    """multi-region-inference with the defaults on: each service on at most 3 sites and 2 GPU
    types, every cloud pool up 3 months or to the horizon's end; without the limits its services
    run on more GPU types and some pools for a month, so the defaults bind and their price is in
    plan.json and the report."""
    _cands, result = mri_defaults
    plan = json.loads(result.artifacts["plan.json"])
    H = plan["horizon_months"]
    for w in plan["workloads"]:
        sites, gpus = service_keys(plan, w)
        assert len(sites) <= 3 and len(gpus) <= 2, (w["name"], sites, gpus)
    assert all(last == H - 1 or last - first + 1 >= 3 for _s, _i, first, last in pool_runs(plan))
    free = json.loads(to_json(result.unlimited))     # the plan as plan.json writes it
    assert max(len(service_keys(free, w)[1]) for w in free["workloads"]) > 2
    assert any(last < H - 1 and last - first + 1 < 3 for _s, _i, first, last in pool_runs(free))
    op = plan["operability"]
    assert (op["max_sites_per_service"], op["max_gpu_types_per_service"], op["min_pool_months"]) == (3, 2, 3)
    assert op["unlimited"]["cost_usd"] == pytest.approx(free["total_cost_usd"])
    assert plan["total_cost_usd"] > free["total_cost_usd"]
    assert plan["solver"]["best_bound_usd"] <= free["total_cost_usd"] + 0.01   # a bound on both
    md = result.artifacts["report.md"]
    assert "| `max_gpu_types_per_service` | 2 | at most 2 a service |" in md
    assert "| `min_pool_months` | 3 |" in md


# --- the audit flags a plan that breaks a limit --------------------------------------------

def _policy(spec, **changes):
    from dataclasses import replace
    return replace(spec, policy=replace(spec.policy, **changes))


@pytest.mark.slow
def test_the_audit_flags_too_many_instance_types():
    cands, plan = F.compiled(MRI)
    # the plan runs two instance types at each of its sites
    findings = F.run_audit(cands, plan, _policy(cands.spec, max_instance_types_per_site=1))
    assert codes.INSTANCE_TYPES in F.codes_of(findings)
    assert F.codes_of(F.run_audit(cands, plan, _policy(cands.spec, max_instance_types_per_site=5))) == set()


@pytest.mark.slow
def test_the_audit_flags_a_mix_changed_too_soon():
    cands, plan = F.compiled(MRI)
    findings = F.run_audit(cands, plan, _policy(cands.spec, min_months_per_mix=3))
    assert codes.MIX_HOLD in F.codes_of(findings)
    assert F.codes_of(F.run_audit(cands, plan, _policy(cands.spec, min_months_per_mix=1))) == set()


@pytest.mark.slow
def test_the_audit_flags_too_many_sites_or_gpu_types(mri_defaults):
    cands, plan = mri_defaults[0], mri_defaults[1].plan
    assert codes.SERVICE_SITES in F.codes_of(F.run_audit(cands, plan, _policy(cands.spec, max_sites_per_service=2)))
    assert codes.SERVICE_GPU_TYPES in F.codes_of(F.run_audit(cands, plan, _policy(cands.spec,
                                                                                  max_gpu_types_per_service=1)))
    assert F.codes_of(F.run_audit(cands, plan, cands.spec)) == set()


@pytest.mark.slow
def test_the_audit_flags_a_pool_up_too_short(mri_defaults):
    """The plan without the limits stands some cloud pools up for a month; the audit names them
    under min_pool_months 3, and not under 1."""
    cands, result = mri_defaults
    free = result.unlimited
    assert free is not None and free is not result.plan
    lifted = cands.spec.policy.without_limits()
    findings = F.run_audit(cands, free, _policy(cands.spec, **{**vars(lifted), "min_pool_months": 3}))
    assert codes.POOL_LIFE in F.codes_of(findings)
    assert any("carries replicas in months" in f.message for f in findings)
    assert F.codes_of(F.run_audit(cands, free, _policy(cands.spec, **{**vars(lifted), "min_pool_months": 1}))) == set()


def test_the_audit_flags_spot_over_the_cap():
    cands, plan = F.compiled("llm-pretrain-aws")
    findings = F.run_audit(cands, plan, _policy(cands.spec, max_spot_share=0.5))
    assert codes.SPOT_SHARE in F.codes_of(findings)
    assert F.codes_of(F.run_audit(cands, plan, _policy(cands.spec, max_spot_share=1.0))) == set()


# --- the model: rows where a limit can bind, reductions off where their argument fails ---------

@pytest.mark.slow
def test_the_limits_switch_off_mixes_and_replica_caps_and_write_their_rows(tmp_path):
    from compiler.optimize.formulate import formulate, replicas_needed

    def capped(problem) -> int:
        """y variables bounded below what carries their month alone (reductions.replica_caps)."""
        by_id = {c.id: c for cs in problem.chosen_from.values() for c in cs}
        return sum(1 for v in problem.variables if v.family == "y" and v.ub < replicas_needed(
            problem.demand[v.workload][v.month], by_id[v.candidate].estimate.tokens_per_s))

    hybrid = "hybrid-llm-platform"
    base = formulate(estimate(ROOT / "examples" / f"{hybrid}.yaml")[0])
    held = formulate(estimate(_variant(tmp_path, hybrid, min_months_per_mix=3))[0])
    assert base.mixes and capped(base) > 0
    assert not held.mixes and capped(held) == 0
    assert {c.family for c in held.constraints} >= {"in_mix", "in_mix_some", "mix_change", "mix_hold"}
    typed = formulate(estimate(_variant(tmp_path, MRI, max_instance_types_per_site=2))[0])
    rows = {(c.workload, c.site): c for c in typed.constraints if c.family == "max_types"}
    many = {(w, c.site) for w, cs in typed.chosen_from.items() for c in cs
            if len({d.instance for d in cs if d.site == c.site}) > 2}
    assert set(rows) == many and rows
    assert all(c.rhs == 2 for c in rows.values())


# --- infeasible under a limit: explained in the limit's terms --------------------------------

def test_an_instance_type_limit_that_makes_the_spec_infeasible_is_named():
    """One p5 node (H100 quota 8) and one 4-GPU L40S node (quota 4) carry 600 tokens/s each; the
    service needs 1,000: two instance types at aws-use1, one allowed."""
    from compiler.diagnostics import CompileError
    from compiler.optimize import SolveOptions, optimize
    from compiler.spec import Policy
    from optimize_fixtures import candidates, cloud, infer_cand, inference, spec

    aws = cloud(quotas={"H100": 8, "L40S": 4})
    svc = inference("svc")
    cands = [infer_cand(svc, aws, "p5.48xlarge", 8, 600.0), infer_cand(svc, aws, "g6e.12xlarge", 4, 600.0)]
    free = candidates(spec([aws], [svc], horizon=2), cands)
    assert optimize(free, SolveOptions(gap=1e-9)).total_cost_usd > 0
    limited = candidates(spec([aws], [svc], horizon=2, policy=Policy(max_instance_types_per_site=1)), cands)
    with pytest.raises(CompileError) as err:
        optimize(limited, SolveOptions(gap=1e-9))
    assert err.value.exit_code == 3
    assert [d.message for d in err.value.diagnostics] == [
        "svc needs 2 instance types at aws-use1, policy.max_instance_types_per_site allows 1"]


def test_the_greedy_start_obeys_the_limits(tmp_path):
    """The start sets the indicators its replicas imply, and those replicas obey every limit: held
    at its integers, the model (rows (15) included) has a solution, and the oracle reads one
    instance type a site and no mix change from its replica values."""
    from compiler.optimize.formulate import formulate
    from compiler.optimize.solve import HighsModel
    from compiler.optimize.start import greedy_start

    path = _variant(tmp_path, MRI, max_instance_types_per_site=1, min_months_per_mix=12, max_gpu_types_per_service=2,
                    min_pool_months=3)
    problem = formulate(estimate(path)[0])
    start = greedy_start(problem)
    assert start is not None
    assert HighsModel(problem).solve(fixed=start).has_solution
    by_id = {c.id: c for cs in problem.chosen_from.values() for c in cs}
    used: dict[tuple[str, str], set[str]] = {}
    months: dict[str, dict[int, set[str]]] = {}
    for v in problem.variables:
        if v.family == "y" and start.get(v.name, 0.0) >= 0.5:
            c = by_id[v.candidate]
            used.setdefault((v.workload, c.site), set()).add(c.instance)
            months.setdefault(v.workload, {}).setdefault(v.month, set()).add(c.id)
    assert used and all(len(v) == 1 for v in used.values())
    assert all(len({frozenset(s) for s in by_month.values()}) == 1 for by_month in months.values())
    gpus: dict[str, set[str]] = {}
    for v in problem.variables:
        if v.family == "y" and start.get(v.name, 0.0) >= 0.5:
            gpus.setdefault(v.workload, set()).add(by_id[v.candidate].gpu)
    assert all(len(g) <= 2 for g in gpus.values())


def test_limits_that_cannot_bind_are_recorded_without_a_second_solve(tmp_path):
    """A spot share of 1 and a one-month hold set nothing the model must meet: the plan records
    them, and the plan without them is this plan (no second solve)."""
    path = _variant(tmp_path, "llm-pretrain-aws", max_spot_share=1, min_months_per_mix=1, min_pool_months=1,
                    max_sites_per_service=None, max_gpu_types_per_service=None)
    from compiler.pipeline import CompileOptions

    said: list[str] = []
    result = compile_spec(path, CompileOptions(progress=said.append))
    plan = json.loads(result.artifacts["plan.json"])
    op = plan["operability"]
    assert (op["max_spot_share"], op["min_months_per_mix"], op["max_instance_types_per_site"]) == (1, 1, None)
    assert op["unlimited"]["cost_usd"] == plan["total_cost_usd"]
    assert said and not any("without the operability limits" in s for s in said)
    assert "The plan without the limits keeps every one of them" in result.artifacts["report.md"]


@pytest.mark.slow
def test_two_binding_limits_are_each_priced_alone():
    """A job that is cheapest on spot, and a service that is cheapest on one p5 node plus one
    1-GPU L40S node (its L40S quota is 1 GPU; two p5 nodes also carry it): the spot cap and one
    instance type a site both bind, and each alone costs exactly its own swap, priced here from
    the catalog: the job's 100 node-hours on demand instead of spot, and a month of a p5 node
    instead of a g6e.xlarge node."""
    from compiler.operability import solve_within_limits, unlimited, with_limits
    from compiler.optimize import SolveOptions, optimize
    from compiler.spec import Policy
    from optimize_fixtures import CATALOG, candidates, cloud, infer_cand, inference, spec, train_cand, training
    from compiler.report.operability import build

    aws = cloud(quotas={"L40S": 1})
    job, svc = training("job"), inference("svc", index=1, start=1)
    cands = [train_cand(job, aws, "p5.48xlarge", 1, 100.0, spot=True),
             train_cand(job, aws, "p5.48xlarge", 1, 100.0, spot=False),
             infer_cand(svc, aws, "p5.48xlarge", 8, 900.0), infer_cand(svc, aws, "g6e.xlarge", 1, 150.0)]
    both = Policy(max_instance_types_per_site=1, max_spot_share=0.0)
    cs = candidates(spec([aws], [job, svc], horizon=2, policy=both), cands)
    exact = SolveOptions(gap=1e-9)
    limited, free = solve_within_limits(cs, exact, optimize)
    assert with_limits(cs, limited, unlimited(free), exact, optimize, free).operability.alone == ()
    plan = with_limits(cs, limited, unlimited(free), exact, optimize, free, appraise=True)
    op = plan.operability
    alone = {a.key: a.cost_usd for a in op.alone}
    assert set(alone) == {"max_instance_types_per_site", "max_spot_share"}
    p5, g6e = CATALOG.instances["p5.48xlarge"], CATALOG.instances["g6e.xlarge"]
    spot_swap = 100.0 * (p5.price("us-east-1", "on_demand") - p5.price("us-east-1", "spot"))
    type_swap = 730.0 * (p5.price("us-east-1", "on_demand") - g6e.price("us-east-1", "on_demand"))
    free = op.unlimited.cost_usd
    assert alone["max_spot_share"] - free == pytest.approx(spot_swap, rel=1e-6)
    assert alone["max_instance_types_per_site"] - free == pytest.approx(type_swap, rel=1e-6)
    assert plan.total_cost_usd - free == pytest.approx(spot_swap + type_swap, rel=1e-6)
    cost = build(plan).cost
    assert f"`max_spot_share` ${alone['max_spot_share']:,.0f} (+${spot_swap:,.0f})" in cost
    from compiler.plan import to_dict
    doc = to_dict(plan)
    assert len(doc["operability"]["alone"]) == 2 and _schema_errors(doc) == []


def test_a_search_without_the_limits_that_ends_dearer_prices_them_at_no_negative_figure():
    """Where the plan solved without the limits costs more than the plan with them (the search
    stopped early; a 50-workload hybrid estate does this), the limits do not 'add' a negative
    sum: the plan with the limits is a plan of the model without them, so their price is
    between $0 and the plan less the bound proved without them."""
    from dataclasses import replace as dc_replace

    from compiler.operability import solve_within_limits, unlimited, with_limits
    from compiler.optimize import SolveOptions, optimize
    from compiler.report.operability import build
    from compiler.spec import Policy
    from optimize_fixtures import candidates, cloud, infer_cand, inference, spec, train_cand, training

    aws = cloud(quotas={"L40S": 1})
    job, svc = training("job"), inference("svc", index=1, start=1)
    cands = [train_cand(job, aws, "p5.48xlarge", 1, 100.0, spot=True),
             train_cand(job, aws, "p5.48xlarge", 1, 100.0, spot=False),
             infer_cand(svc, aws, "p5.48xlarge", 8, 900.0), infer_cand(svc, aws, "g6e.xlarge", 1, 150.0)]
    cs = candidates(spec([aws], [job, svc], horizon=2, policy=Policy(max_spot_share=0.0)), cands)
    exact = SolveOptions(gap=1e-9)
    limited, free = solve_within_limits(cs, exact, optimize)
    plan = with_limits(cs, limited, unlimited(free), exact, optimize, free)
    op = plan.operability
    assert op.unlimited.cost_usd < plan.total_cost_usd        # the spot cap binds: a real price
    assert "the limits add $" in build(plan).cost
    dearer = dc_replace(op.unlimited, cost_usd=plan.total_cost_usd + 34_559.0)
    text = build(dc_replace(plan, operability=dc_replace(op, unlimited=dearer))).cost
    assert "$-" not in text and "add" not in text
    hi = plan.total_cost_usd - op.unlimited.best_bound_usd
    assert f"between $0 and ${hi:,.0f}" in text
    assert f"a dearer plan (${plan.total_cost_usd + 34_559.0:,.0f})" in text
