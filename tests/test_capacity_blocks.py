"""AWS EC2 Capacity Blocks as a pricing option for training jobs with a window (docs/capacity-blocks.md).

Figures: p5en.48xlarge (8x H200) in us-east-2 costs $63.296 an hour on demand, $45.5731 on a 1-year
term (the catalog's instances_aws.yaml: SkyPilot's AWS catalog after the June 2025 P5 reduction;
the term an estimated ~72% of it). Its Capacity Block rate is $54.92 an instance-hour
(capacity_blocks.yaml: the EC2 Capacity Blocks pricing page's p5en.48xlarge us-east-2 row in the
copy read on 2026-07-22, koyakimu/ec2-capacity-blocks-for-ml-pricing-json at b3a54ae, recorded in
tests/fixtures/prices/capacity-blocks/). Block lengths are whole days up to 14 and whole weeks up
to 182 (the EC2 User Guide's "Find and purchase Capacity Blocks"). The oracles price from the
catalog and the plan alone, never from the model's variables.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from compiler import pipeline
from compiler.audit import audit
from compiler.catalog import load_catalog
from compiler.diagnostics import CompileError
from compiler.pipeline import CompileOptions, compile_spec

INSTANCE, REGION = "p5en.48xlarge", "us-east-2"

SPEC = """\
apiVersion: infra-compile/v1
name: cb-{name}
horizon_months: {horizon}
start: 2027-03
sites:
  - name: aws-use2
    type: cloud
    provider: aws
    region: us-east-2
    pricing: {pricing}
    quotas: {{H200: 32}}
policy:
  placement: cloud
  allowed_gpus: [H200]
  after_horizon: {rule}
workloads:
  - name: pretrain
    kind: training
    model: llama-3-8b
    tokens: 3.31e11
    window: {{start_month: 0, deadline_days: 30}}
    orchestrator: slurm
    pin: {{instance: p5en.48xlarge{gpus}}}
"""


def _compile(tmp_path, pricing: str, *, name: str, horizon: int = 3, rule: str = "continues",
             gpus: int | None = 16, catalog: str | None = None):
    path = tmp_path / f"{name}.yaml"
    path.write_text(SPEC.format(name=name, horizon=horizon, pricing=pricing, rule=rule,
                                gpus=f", gpus: {gpus}" if gpus else ""), encoding="utf-8")
    return compile_spec(path, CompileOptions(catalog=catalog))


def _rates() -> tuple[float, float]:
    cat = load_catalog()
    return (cat.instances[INSTANCE].price(REGION, "on_demand"),
            cat.factors[f"capacity_block_usd_per_hour.aws.{REGION}.{INSTANCE}"].value)


def _block_days(hours: float) -> int:
    """AWS's block lengths: whole days to 14, whole weeks beyond (the User Guide)."""
    days = math.ceil(hours / 24 - 1e-9)
    return days if days <= 14 else 7 * math.ceil(days / 7)


def test_a_28_day_job_buys_a_block_where_it_is_cheaper_than_on_demand_and_a_term(tmp_path):
    # 2 nodes for 27.85 days: a 28-day block at $54.92 (2 x 24 x 28 x 54.92 = $73,812.48) against
    # $63.296 on demand for 1,336.9 node-hours (~$84,620) and, under continues, a 1-year term
    # paid for its 12 months (2 x 730 x 12 x $45.57 ~ $798k). At $54.92 a block beats on demand
    # only for a run over 86.8% of its days: a 29.45-day run's 35-day block ($92,265.60) would not
    without = _compile(tmp_path, "[on_demand, reserved_1y]", name="terms").plan
    res = _compile(tmp_path, "[on_demand, reserved_1y, capacity_block]", name="block")
    plan = res.plan
    od, rate = _rates()
    (b,) = plan.capacity_blocks
    (w,) = plan.workloads
    assert 27 < w.estimate.duration_hours / 24 <= 28
    assert (b.workload, b.site, b.instance, b.nodes, b.blocks, b.start_month, b.days) == \
        ("pretrain", "aws-use2", INSTANCE, 2, 1, 0, 28)
    assert b.cost_usd == pytest.approx(rate * 2 * 24 * 28, abs=0.01)
    node_hours = sum(b.monthly_node_hours)
    assert node_hours == pytest.approx(2 * w.estimate.duration_hours, abs=1e-3)
    assert plan.cost_breakdown_usd.cloud_compute == pytest.approx(b.cost_usd, abs=0.05)
    assert without.cost_breakdown_usd.cloud_compute == pytest.approx(od * node_hours, abs=0.05)
    assert plan.total_cost_usd < without.total_cost_usd - 10_000
    assert not any(p.pricing == "reserved_1y" for p in plan.pools)
    assert audit(res.candidates.spec, res.candidates.catalog, res.candidates, plan) == []
    runbook = res.artifacts["RUNBOOK.md"]
    assert "| pretrain | aws-use2 (us-east-2) | p5en.48xlarge | 2 | 28 | 2027-03-01 | $73,812.48 |" in runbook
    assert ("aws ec2 describe-capacity-block-offerings --region us-east-2 --instance-type p5en.48xlarge \\\n"
            "  --instance-count 2 --capacity-duration-hours 672 \\\n"
            "  --start-date-range 2027-03-01T00:00:00Z --end-date-range 2027-03-31T11:30:00Z") in runbook
    assert "aws ec2 purchase-capacity-block --region us-east-2 --capacity-block-offering-id OFFERING_ID" in runbook
    assert "### Capacity Blocks bought" in res.artifacts["report.md"]


def test_no_block_where_a_term_is_cheaper(tmp_path):
    # prorated over a 1-month horizon a 1-year term pays one month: 2 x 730 x $45.57 = $66,537,
    # under the 28-day block's $73,812.48: the plan buys the term, as it does without blocks
    terms = _compile(tmp_path, "[on_demand, reserved_1y]", name="t1", horizon=1, rule="prorated").plan
    both = _compile(tmp_path, "[on_demand, reserved_1y, capacity_block]", name="b1", horizon=1,
                    rule="prorated").plan
    assert both.capacity_blocks == ()
    assert any(p.pricing == "reserved_1y" for p in both.pools)
    assert both.total_cost_usd == pytest.approx(terms.total_cost_usd, abs=0.01)


def test_no_block_where_blocks_are_dearer_than_on_demand(tmp_path):
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(
        "sources:\n  test-dear-block:\n    title: 'A test: a block rate above the $63.296 on-demand rate'\n"
        "    url: 'https://example.com/dear'\n    as_of: '2026-11-29'\n"
        "factors:\n  - {name: capacity_block_usd_per_hour.aws.us-east-2.p5en.48xlarge, value: 70.0, "
        "source: test-dear-block}\n", encoding="utf-8")
    od_only = _compile(tmp_path, "[on_demand]", name="od").plan
    dear = _compile(tmp_path, "[on_demand, capacity_block]", name="dear", catalog=str(overlay))
    assert dear.plan.capacity_blocks == ()
    assert dear.plan.total_cost_usd == pytest.approx(od_only.total_cost_usd, abs=0.01)
    from compiler.plan import to_dict
    assert "capacity_blocks" not in to_dict(dear.plan)


def test_the_plan_is_the_brute_force_optimum_over_counts_and_pricings(tmp_path):
    """Every node count of p5en the window admits, each on demand or on its block: the cheapest of
    them is the plan's cloud spend. Every count finishes inside month 0 (30 days < 730 h), so
    storage is the same for all; fewer node-hours need not be cheaper on a block (whole weeks)."""
    res = _compile(tmp_path, "[on_demand, capacity_block]", name="brute", gpus=None)
    od, rate = _rates()
    cands = res.candidates.by_workload["pretrain"]
    assert len(cands) >= 2
    costs = {}
    for c in cands:
        hours = c.estimate.duration_hours
        costs[c.id] = min(od * c.nodes * hours, rate * c.nodes * 24 * _block_days(hours))
    best = min(costs.values())
    assert res.plan.cost_breakdown_usd.cloud_compute == pytest.approx(best, abs=0.05)
    (w,) = res.plan.workloads
    (b,) = res.plan.capacity_blocks
    assert b.days == _block_days(w.estimate.duration_hours)


def test_the_audit_re_derives_the_block(tmp_path):
    res = _compile(tmp_path, "[on_demand, capacity_block]", name="audit")
    spec, cat, plan = res.candidates.spec, res.candidates.catalog, res.plan
    assert audit(spec, cat, res.candidates, plan) == []
    (b,) = plan.capacity_blocks
    cheaper = replace(plan, capacity_blocks=(replace(b, cost_usd=b.cost_usd / 2),))
    assert "A609" in {f.code for f in audit(spec, cat, res.candidates, cheaper)}
    shorter = replace(plan, capacity_blocks=(replace(b, days=21, cost_usd=b.cost_usd * 21 / 28),))
    codes = {f.code for f in audit(spec, cat, res.candidates, shorter)}
    assert {"A609", "A601"} <= codes
    more = replace(plan, capacity_blocks=(replace(b, monthly_node_hours=tuple(h * 2 for h in b.monthly_node_hours)),))
    assert {"A609", "A601"} <= {f.code for f in audit(spec, cat, res.candidates, more)}


def test_plan_json_round_trips_and_validates(tmp_path):
    import jsonschema
    from compiler.plan import from_dict, to_dict
    from compiler.resources import schema
    plan = _compile(tmp_path, "[on_demand, capacity_block]", name="rt").plan
    d = to_dict(plan)
    assert "capacity_blocks" in d and from_dict(d) == plan
    jsonschema.validate(d, schema("plan.schema.json"))


@pytest.mark.parametrize("site, message", [
    ("    provider: aws\n    region: us-west-1\n    pricing: [on_demand, capacity_block]\n", "no Capacity Block in aws us-west-1"),
    ("    provider: aws\n    region: us-east-2\n    pricing: [reserved_1y, capacity_block]\n", "on_demand"),
])
def test_a_block_is_sold_where_the_catalog_says_and_beside_on_demand(tmp_path, site, message):
    text = SPEC.format(name="bad", horizon=3, pricing="[on_demand]", rule="prorated", gpus="")
    text = text.replace("    provider: aws\n    region: us-east-2\n    pricing: [on_demand]\n", site)
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CompileError) as err:
        pipeline.validate(path)
    found = [d for d in err.value.diagnostics if d.code == "E223"]
    assert found and message in found[0].message and found[0].path[:3] == ("sites", 0, "pricing")
