"""Azure savings plan for compute as a provider of the Savings Plan model (docs/savings-plans.md).

Figures: the pay-as-you-go rate of Standard_ND96isr_H100_v5 (8x H100) in eastus is the catalog's
(instances_azure.yaml, source azure-skypilot-v6-vms: 98.32 USD per hour); its reservations are the
catalog's estimated shares of it (~62% 1-year, ~40% 3-year); the savings plan rates are the
pay-as-you-go rate times the estimated shares of savings_plans.yaml (0.70 1-year, 0.45 3-year;
source azure-savings-plan-compute-estimate, bounded by Azure's savings plan overview, "up to 65%"
off pay-as-you-go). The oracles re-price from plan.json and the catalog alone.
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
VM = "Standard_ND96isr_H100_v5"

SERVICE = """\
apiVersion: infra-compile/v1
name: azsp-{name}
horizon_months: {horizon}
sites:
  - name: az-eastus
    type: cloud
    provider: azure
    region: eastus
    pricing: {pricing}
policy:
  placement: cloud
  allowed_gpus: [H100]
  after_horizon: prorated
workloads:
  - name: chat-70b
    kind: inference
    model: llama-3-70b
    quantization: fp8
    traffic: {{peak_rps: 6, input_tokens: 600, output_tokens: 150, growth_per_month: 0.0}}
    slo: {{ttft_p99_ms: 1500, tpot_p99_ms: 80}}
"""


def _compile(tmp_path, pricing: str, *, horizon: int = 36, name: str = "x"):
    path = tmp_path / f"{name}.yaml"
    path.write_text(SERVICE.format(name=name, horizon=horizon, pricing=pricing), encoding="utf-8")
    return compile_spec(path, CompileOptions(gap=1e-4))


def test_the_catalog_share_is_an_estimate_under_azures_published_bound():
    cat = load_catalog()
    src = cat.sources["azure-savings-plan-compute-estimate"]
    assert src.url == ("https://learn.microsoft.com/en-us/azure/cost-management-billing/savings-plan/"
                       "savings-plan-compute-overview")
    assert str(src.as_of) == "2026-11-30" and "65%" in src.title
    one = cat.factors["savings_plan_estimated_share.azure.savings_plan_1y"]
    three = cat.factors["savings_plan_estimated_share.azure.savings_plan_3y"]
    assert one.source == three.source == "azure-savings-plan-compute-estimate"
    assert "estimated" in one.note and "estimated" in three.note
    # "up to 65% off pay-as-you-go": no share under 0.35; a 3-year plan cheaper than a 1-year one
    assert 0.35 <= three.value < one.value < 1.0
    # a smaller discount than the catalog's reservations of the same term (Azure: up to 72% off)
    inst = cat.instances[VM]
    od = inst.price("eastus", "on_demand")
    assert od == pytest.approx(98.32)
    assert od * one.value > inst.price("eastus", "reserved_1y")
    assert od * three.value > inst.price("eastus", "reserved_3y")


def test_a_36_month_azure_service_buys_a_3_year_savings_plan_where_only_1_year_reservations_are_sold(tmp_path):
    # 0.45 of pay-as-you-go against a 1-year reservation at ~0.62: the plan is the cheaper commitment
    without = _compile(tmp_path, "[on_demand, reserved_1y]", name="terms")
    res = _compile(tmp_path, "[on_demand, reserved_1y, savings_plan_3y]", name="sp")
    plan = res.plan
    assert plan.savings_plans.bought, "no savings plan bought"
    assert {b.term for b in plan.savings_plans.bought} == {"savings_plan_3y"}
    assert all(b.sites == ("az-eastus",) for b in plan.savings_plans.bought)
    assert plan.total_cost_usd < without.plan.total_cost_usd - 1.0
    assert not any(p.pricing == "reserved_1y" for p in plan.pools)
    # the audit re-derives it from plan.json and the catalog: the commitment's 36 months at 730 h
    # plus the usage the plans leave to pay-as-you-go
    spec, cat = res.candidates.spec, res.candidates.catalog
    assert audit(spec, cat, res.candidates, plan) == []
    od = cat.instances[VM].price("eastus", "on_demand")
    (pool,) = [p for p in plan.pools if p.pricing == "on_demand"]
    covered = sum(sum(c.monthly_node_hours[:36]) for c in plan.savings_plans.cover)
    committed = sum(b.usd_per_hour * HOURS * min(36, 36 - b.start_month) for b in plan.savings_plans.bought)
    assert plan.cost_breakdown_usd.cloud_compute == pytest.approx(
        committed + od * (sum(pool.monthly_node_hours[:36]) - covered), abs=0.05)
    halved = replace(plan, savings_plans=replace(plan.savings_plans, bought=tuple(
        replace(b, usd_per_hour=b.usd_per_hour / 2) for b in plan.savings_plans.bought)))
    assert "A608" in {f.code for f in audit(spec, cat, res.candidates, halved)}
    # the report and the runbook name Azure's product and its purchase
    assert "Azure savings plan for compute" in res.artifacts["report.md"]
    runbook = res.artifacts["RUNBOOK.md"]
    first = plan.savings_plans.bought[0]
    assert "az billing-benefits savings-plan-order-aliases create" in runbook
    assert f"amount:{first.usd_per_hour:.4f}" in runbook and "--term P3Y" in runbook
    assert "aws savingsplans" not in runbook


def test_it_buys_none_where_3_year_reservations_are_cheaper(tmp_path):
    terms = _compile(tmp_path, "[on_demand, reserved_3y]", name="terms3").plan
    both = _compile(tmp_path, "[on_demand, reserved_3y, savings_plan_3y]", name="both3").plan
    assert both.savings_plans.bought == ()
    assert both.total_cost_usd == pytest.approx(terms.total_cost_usd, abs=0.01)


def test_a_spec_s_savings_plans_are_one_provider_s(tmp_path):
    text = SERVICE.format(name="mixed", horizon=12, pricing="[on_demand, savings_plan_1y]")
    text = text.replace("policy:", """  - name: aws-use1
    type: cloud
    provider: aws
    region: us-east-1
    pricing: [on_demand, savings_plan_1y]
policy:""")
    path = tmp_path / "mixed.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CompileError) as err:
        pipeline.validate(path)
    found = [d for d in err.value.diagnostics if d.code == "E222"]
    assert found and "one provider" in found[0].message and found[0].path[:2] == ("sites", 1)
