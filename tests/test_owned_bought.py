"""Owned nodes with a purchase date (`owned[].bought`): they serve the plan until their useful life
ends, and their book value at the start is sunk.

Figures worked by hand from the catalog (dgx-h100: capex $380,000, 5-year useful life): nodes
bought 2022-07 end their life in 2027-07, month 6 of a plan starting 2027-01; at the start they
are 54 of 60 months old, so 4 of them are worth 4 x 380,000 x 6/60 = $152,000. Nodes bought
2025-01 are 24 months old: 2 x 380,000 x 36/60 = $456,000, and serve past the 12-month horizon."""

from __future__ import annotations

from dataclasses import replace

import pytest

from compiler import pipeline

SPEC = """\
apiVersion: infra-compile/v1
name: retire
start: 2027-01
horizon_months: 12
sites:
  - name: dc1
    type: on_prem
    power_kw: 500
    electricity_usd_per_kwh: 0.12
    pue: 1.3
    max_racks: 20
    owned:
      - {instance: dgx-h100, nodes: 4, bought: 2022-07}
      - {instance: dgx-h100, nodes: 2, bought: 2025-01}
policy:
  placement: on_prem
  allowed_gpus: [H100]
workloads:
  - name: chat
    kind: inference
    model: llama-3-8b
    traffic: {peak_rps: 600, input_tokens: 1000, output_tokens: 200}
    slo: {ttft_p99_ms: 800, tpot_p99_ms: 60}
"""


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    path = tmp_path_factory.mktemp("retire") / "retire.yaml"
    path.write_text(SPEC, encoding="utf-8")
    return pipeline.compile_spec(str(path), pipeline.CompileOptions())


def _owned_in_use(plan) -> list[int]:
    pool = next(p for p in plan.pools if p.pricing == "owned")
    return list(pool.monthly_nodes)


@pytest.mark.slow
def test_nodes_serve_until_their_useful_life_ends_and_the_plan_replaces_them(compiled):
    plan = compiled.plan
    assert max(_owned_in_use(plan)[6:]) <= 2            # from 2027-07 only the 2025 nodes are owned
    bought = sum(p.nodes for p in plan.pools if p.pricing == "purchase")
    assert bought >= 1                                   # the retired nodes' work is bought for


@pytest.mark.slow
def test_undated_owned_nodes_serve_the_whole_horizon(tmp_path, compiled):
    # the same spec without the dates owns all 6 through the horizon, so buys less
    path = tmp_path / "undated.yaml"
    path.write_text(SPEC.replace(", bought: 2022-07", "").replace(", bought: 2025-01", ""), encoding="utf-8")
    undated = pipeline.compile_spec(str(path), pipeline.CompileOptions()).plan
    bought = lambda plan: sum(p.nodes for p in plan.pools if p.pricing == "purchase")  # noqa: E731
    assert bought(undated) < bought(compiled.plan)
    assert undated.total_cost_usd < compiled.plan.total_cost_usd
    assert not undated.owned_ages


@pytest.mark.slow
def test_the_book_value_and_the_end_of_life_are_stated(compiled):
    ages = compiled.plan.owned_ages
    assert [(a.bought, a.life_ends, a.retires_month, a.book_usd) for a in ages] == [
        ("2022-07", "2027-07", 6, 152_000.0), ("2025-01", "2030-01", None, 456_000.0)]
    report = compiled.artifacts["report.md"]
    assert "### Owned nodes by age" in report and "$608,000, sunk" in report
    assert "retired from 2027-07" in report


@pytest.mark.slow
def test_the_audit_refuses_work_on_retired_nodes(compiled):
    from compiler.audit import audit, codes

    cands, plan = compiled.candidates, compiled.plan
    pool = next(p for p in plan.pools if p.pricing == "owned")
    # a plan that runs 5 owned nodes in month 8, when only 2 are still in their life
    more = replace(pool, monthly_nodes=pool.monthly_nodes[:8] + (5,) + pool.monthly_nodes[9:])
    bad = replace(plan, pools=tuple(more if p is pool else p for p in plan.pools))
    found = [f for f in audit(cands.spec, cands.catalog, cands, bad) if f.code == codes.OWNED_EXCEEDED]
    assert found and "past their useful life" in found[0].message
    assert not [f for f in audit(cands.spec, cands.catalog, cands, plan) if f.code == codes.OWNED_EXCEEDED]
