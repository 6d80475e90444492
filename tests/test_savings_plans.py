"""AWS Savings Plans as a commitment the solver chooses (docs/savings-plans.md).

Figures: the on-demand rate of g6e.xlarge (1x L40S) in us-east-1 is the catalog's AWS list price
(instances_aws.yaml, source aws-ec2-g-prices); its per-instance terms are the catalog's estimated
shares of it (~72% 1-year, ~55% 3-year in the P family; 63% / 43% in the G family, the same
source's title); the Savings Plan rates are the on-demand rate times the estimated Compute Savings
Plan shares of savings_plans.yaml (0.75 1-year, 0.60 3-year; source
aws-savings-plans-compute-estimate, bounded by the AWS Savings Plans FAQ's "up to 66%"). The
oracles re-price from plan.json and the catalog alone, never from the model's variables.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from compiler import pipeline
from compiler.audit import audit
from compiler.catalog import load_catalog
from compiler.diagnostics import CompileError
from compiler.pipeline import CompileOptions, compile_spec

HOURS = 730

SERVICE = """\
apiVersion: infra-compile/v1
name: sp-{name}
horizon_months: {horizon}
sites:
  - name: aws-use1
    type: cloud
    provider: aws
    region: us-east-1
    pricing: {pricing}
policy:
  placement: cloud
  allowed_gpus: [L40S]
  after_horizon: {rule}
workloads:
  - name: chat-8b
    kind: inference
    model: llama-3-8b
    quantization: bf16
    traffic: {{peak_rps: 20, input_tokens: 600, output_tokens: 150, growth_per_month: {growth}}}
    slo: {{ttft_p99_ms: 800, tpot_p99_ms: 60}}
"""


def _compile(tmp_path, pricing: str, *, horizon: int = 36, rule: str = "prorated", growth: float = 0.03,
             name: str = "x"):
    path = tmp_path / f"{name}.yaml"
    path.write_text(SERVICE.format(name=name, horizon=horizon, pricing=pricing, rule=rule, growth=growth),
                    encoding="utf-8")
    return compile_spec(path, CompileOptions(gap=1e-4))


def _share(term: str) -> float:
    return load_catalog().factors[f"savings_plan_estimated_share.aws.{term}"].value


def _on_demand(plan) -> dict[int, float]:
    """The on-demand node-hours of the plan's one pool, month by month."""
    (pool,) = [p for p in plan.pools if p.pricing == "on_demand"]
    return dict(enumerate(pool.monthly_node_hours))


def test_a_36_month_service_buys_a_3_year_plan_where_only_1_year_terms_are_sold(tmp_path):
    # 3-year Savings Plan at 0.60 of on-demand against a 1-year term at 0.63 (G family): the plan
    # is the cheaper commitment, and the solver buys it
    without = _compile(tmp_path, "[on_demand, reserved_1y]", name="terms").plan
    with_sp = _compile(tmp_path, "[on_demand, reserved_1y, savings_plan_3y]", name="sp").plan
    assert with_sp.savings_plans.bought, "no Savings Plan bought"
    assert with_sp.total_cost_usd < without.total_cost_usd - 1.0
    assert {b.term for b in with_sp.savings_plans.bought} == {"savings_plan_3y"}
    assert not any(p.pricing == "reserved_1y" for p in with_sp.pools)


def test_it_buys_none_where_per_instance_3_year_terms_are_cheaper(tmp_path):
    # a 3-year term (0.43 of on-demand, G family) beats the 3-year Savings Plan (0.60) on usage
    # that fills whole nodes all month: the plan buys terms, and the option costs nothing
    terms = _compile(tmp_path, "[on_demand, reserved_3y]", name="terms").plan
    both = _compile(tmp_path, "[on_demand, reserved_3y, savings_plan_3y]", name="both").plan
    assert both.savings_plans.bought == ()
    assert both.total_cost_usd == pytest.approx(terms.total_cost_usd, abs=0.01)


def test_a_plan_bought_for_the_months_left_is_no_bargain_under_full(tmp_path):
    # under `full` a 3-year plan bought in month 0 of a 6-month horizon pays 36 months for 6 months of
    # use: 36 x 0.60 > 6 x 1, so nothing is bought
    plan = _compile(tmp_path, "[on_demand, savings_plan_3y]", horizon=6, rule="full", name="short").plan
    assert plan.savings_plans.bought == ()


def test_the_commitment_is_the_brute_force_optimum_of_a_flat_year(tmp_path):
    """Flat traffic over 12 months, 1-year plans only, prorated: every month's usage U is level, so
    the cost of a single commitment C bought in month 0 is 12 x 730 C + od x sum_m max(0, U_m - 730 C
    / rho) (rho the plan's rate): brute force over a grid of C, priced here from the catalog."""
    res = _compile(tmp_path, "[on_demand, savings_plan_1y]", horizon=12, growth=0.0, name="flat")
    plan = res.plan
    cat = load_catalog()
    od = cat.instances["g6e.xlarge"].price("us-east-1", "on_demand")
    rho = od * _share("savings_plan_1y")
    usage = _on_demand(plan)

    def cost(c: float) -> float:
        return 12 * HOURS * c + od * sum(max(0.0, u - HOURS * c / rho) for u in usage.values())

    chosen = sum(b.usd_per_hour for b in plan.savings_plans.bought if b.start_month == 0)
    assert all(b.start_month == 0 for b in plan.savings_plans.bought)
    top = 2 * rho * max(usage.values()) / HOURS
    grid = [top * k / 2000 for k in range(2001)]
    best = min(grid, key=cost)
    assert cost(chosen) <= cost(best) + 0.01
    assert chosen == pytest.approx(rho * max(usage.values()) / HOURS, abs=1e-3)
    # the plan's cloud spend is exactly that cost: the audit's pricing and this one agree
    assert plan.cost_breakdown_usd.cloud_compute == pytest.approx(cost(chosen), abs=0.05)


def test_with_growth_each_month_is_covered_at_the_plan_rate(tmp_path):
    """Growing traffic, 12 months, prorated: commitments bought month by month as the load grows
    cover every month's level usage, so the optimum pays rho x U_m each month (each month's
    own optimum, reachable because the usage never falls)."""
    plan = _compile(tmp_path, "[on_demand, savings_plan_1y]", horizon=12, growth=0.08, name="grow").plan
    od = load_catalog().instances["g6e.xlarge"].price("us-east-1", "on_demand")
    rho = od * _share("savings_plan_1y")
    usage = _on_demand(plan)
    assert plan.cost_breakdown_usd.cloud_compute == pytest.approx(rho * sum(usage.values()), abs=0.05)
    (cover,) = plan.savings_plans.cover
    assert cover.monthly_node_hours == pytest.approx(tuple(usage[m] for m in range(12)), abs=1e-3)


def test_the_audit_re_derives_the_cost_and_refuses_a_cover_beyond_the_commitment(tmp_path):
    res = _compile(tmp_path, "[on_demand, savings_plan_3y]", name="audit")
    spec, cat = res.candidates.spec, res.candidates.catalog
    assert audit(spec, cat, res.candidates, res.plan) == []
    sp = res.plan.savings_plans
    halved = replace(res.plan, savings_plans=replace(sp, bought=tuple(
        replace(b, usd_per_hour=b.usd_per_hour / 2) for b in sp.bought)))
    codes = {f.code for f in audit(spec, cat, res.candidates, halved)}
    assert {"A608", "A601"} <= codes
    more = replace(res.plan, savings_plans=replace(sp, cover=tuple(
        replace(c, monthly_node_hours=tuple(h * 2 for h in c.monthly_node_hours)) for c in sp.cover)))
    assert "A608" in {f.code for f in audit(spec, cat, res.candidates, more)}


def test_under_continues_the_months_after_the_horizon_are_charged_where_the_load_leaves_them_unused(tmp_path):
    res = _compile(tmp_path, "[on_demand, savings_plan_3y]", horizon=24, rule="continues", name="cont")
    plan = res.plan
    assert plan.savings_plans.bought and plan.savings_plans.idle_after
    for i in plan.savings_plans.idle_after:
        # growing traffic: the last month's covered usage carries every commitment on
        assert i.idle_usd_per_hour == pytest.approx(0.0, abs=1e-3) and i.charged_usd == pytest.approx(0.0, abs=0.01)
    assert audit(res.candidates.spec, res.candidates.catalog, res.candidates, plan) == []


def test_the_plan_json_round_trips_and_the_report_and_runbook_say_what_to_buy(tmp_path):
    from compiler.plan import from_dict, to_dict
    res = _compile(tmp_path, "[on_demand, savings_plan_3y]", horizon=12, name="rt")
    d = to_dict(res.plan)
    assert "savings_plans" in d and from_dict(d) == res.plan
    first = res.plan.savings_plans.bought[0]
    assert "### Savings Plans bought" in res.artifacts["report.md"]
    runbook = res.artifacts["RUNBOOK.md"]
    assert "aws savingsplans create-savings-plan" in runbook and f"--commitment {first.usd_per_hour:.4f}" in runbook


@pytest.mark.parametrize("site, message", [
    ("    provider: gcp\n    region: us-central1\n    pricing: [on_demand, savings_plan_1y]\n", "which the catalog sells for aws, azure"),
    ("    provider: aws\n    region: us-east-1\n    pricing: [reserved_1y, savings_plan_1y]\n", "on_demand"),
])
def test_a_savings_plan_is_aws_and_covers_on_demand_usage(tmp_path, site, message):
    text = SERVICE.format(name="bad", horizon=12, pricing="[on_demand]", rule="prorated", growth=0.0)
    text = text.replace("    provider: aws\n    region: us-east-1\n    pricing: [on_demand]\n", site)
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CompileError) as err:
        pipeline.validate(path)
    found = [d for d in err.value.diagnostics if d.code == "E222"]
    assert found and message in found[0].message and found[0].path[:3] == ("sites", 0, "pricing")
