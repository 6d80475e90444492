"""Commitments already bought (a cloud site's `reserved`): validated against the catalog and the
calendar, used by the plan before it rents or reserves anything, priced at nothing in the plan
and shown apart as sunk, and re-checked by the audit. Oracles: the same spec without the held
nodes (no dearer with them, and dearer by no more than what they would cost to rent), the
catalog's own rate for the sunk cost, and the plan's pools month by month."""

from __future__ import annotations

import json

import jsonschema
import pytest

from compiler import pipeline
from compiler.catalog import load_catalog
from compiler.diagnostics import CompileError
from compiler.plan import to_json
from compiler.report import render_report
from compiler.resources import schema
from compiler.spec import HOURS_PER_MONTH

SPEC = """\
apiVersion: infra-compile/v1
name: held
start: 2027-01
horizon_months: 12
sites:
  - name: aws-use1
    type: cloud
    provider: aws
    region: us-east-1
    pricing: [on_demand, reserved_1y]
HELD
policy:
  placement: cloud
  allowed_gpus: [H100]
  max_gpu_types_per_service: null
  min_pool_months: null
workloads:
  - name: chat
    kind: inference
    model: llama-3-70b
    quantization: fp8
    traffic: {peak_rps: RPS, input_tokens: 1000, output_tokens: 250, growth_per_month: 0.08}
    slo: {ttft_p99_ms: 800, tpot_p99_ms: 60}
"""
EIGHT = "    reserved:\n      - {instance: p5.48xlarge, nodes: 8, until: 2027-07}\n"


def _write(tmp_path, held: str, rps: float = 20, name: str = "held.yaml"):
    path = tmp_path / name
    path.write_text(SPEC.replace("HELD\n", held).replace("RPS", f"{rps:g}"), encoding="utf-8")
    return path


def _errors(tmp_path, held: str):
    with pytest.raises(CompileError) as err:
        pipeline.validate(_write(tmp_path, held))
    return err.value.diagnostics


def test_an_instance_the_region_does_not_sell_is_an_error_naming_what_it_sells(tmp_path):
    (d,) = _errors(tmp_path, "    reserved:\n      - {instance: p5.48xlargx, nodes: 8, until: 2027-07}\n")
    assert d.code == "E218" and d.path == ("sites", 0, "reserved", 0, "instance")
    assert (d.position.line, d.position.column) == (12, 20)
    assert "p5.48xlarge" in d.hint and "p4d.24xlarge" in d.hint      # the instances sold in us-east-1
    sold = {n for n, i in load_catalog().instances.items() if i.provider == "aws" and "us-east-1" in i.regions}
    assert all(n in d.hint for n in sold)


def test_a_held_term_needs_a_start_and_must_end_within_its_term(tmp_path):
    path = _write(tmp_path, EIGHT)
    path.write_text(path.read_text().replace("start: 2027-01\n", ""), encoding="utf-8")
    with pytest.raises(CompileError) as err:
        pipeline.validate(path)
    (d,) = err.value.diagnostics
    assert d.code == "E218" and d.path[-1] == "until" and "start" in d.hint
    (d,) = _errors(tmp_path, "    reserved:\n      - {instance: p5.48xlarge, nodes: 8, until: 2028-03}\n")
    assert d.code == "E218" and "14 months" in d.message and d.hint == "set term: reserved_3y"


def test_a_term_that_ended_before_the_start_is_a_warning_and_left_out(tmp_path):
    warned = []
    spec, _cat, _doc = pipeline.validate(_write(tmp_path, "    reserved:\n      - {instance: p5.48xlarge, nodes: 8, until: 2026-11}\n"),
                                         warn=lambda ds, _src: warned.extend(ds))
    assert [d.code for d in warned] == ["E218"] and spec.sites[0].reserved == ()


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    """The spec compiled with 8 p5.48xlarge held until its seventh month, and without them."""
    tmp = tmp_path_factory.mktemp("held")
    held = pipeline.compile_spec(_write(tmp, EIGHT, name="with.yaml")).plan
    free = pipeline.compile_spec(_write(tmp, "", name="without.yaml")).plan
    return held, free


@pytest.mark.slow
def test_the_plan_runs_on_held_nodes_first_and_buys_nothing_they_cover(plans):
    held, _free = plans
    (h,) = held.held
    assert (h.site, h.instance, h.term, h.nodes, h.until_month) == ("aws-use1", "p5.48xlarge", "reserved_1y", 8, 6)
    pools = {(p.instance, p.pricing): p for p in held.pools}
    term = pools[("p5.48xlarge", "reserved_1y")]
    assert [(r.start_month, r.nodes) for r in term.reservations if r.start_month < 0] == [(-6, 8)]
    # the load of its first six months fits in 8 nodes: nothing rented or newly reserved for them
    demand = [w for w in held.workloads if w.name == "chat"][0]
    for m in range(6):
        nodes_run = sum(p.monthly_node_hours[m] for p in held.pools if p.instance == "p5.48xlarge") / HOURS_PER_MONTH
        assert nodes_run <= 8 + 1e-6, (m, nodes_run)
        assert all(p.monthly_nodes[m] == 0 for p in held.pools if p.pricing == "on_demand"), m
        assert all(not (r.start_month >= 0 and r.start_month <= m) for r in term.reservations), m
        assert h.monthly_used[m] == pytest.approx(nodes_run, abs=1e-3)
    assert demand.cost_usd > 0
    assert len(h.monthly_used) == 6


@pytest.mark.slow
def test_held_nodes_are_sunk_apart_from_the_total_at_the_catalogs_rate(plans):
    held, free = plans
    (h,) = held.held
    rate = load_catalog().instances["p5.48xlarge"].price("us-east-1", "reserved_1y")
    assert h.sunk_usd == pytest.approx(8 * rate * HOURS_PER_MONTH * 6, abs=0.005)     # to the cent
    assert held.sunk_usd == h.sunk_usd
    # free capacity: the plan is no dearer than without it, and cheaper by no more than renting
    # those nodes on demand would cost
    od = load_catalog().instances["p5.48xlarge"].price("us-east-1", "on_demand")
    assert held.total_cost_usd <= free.total_cost_usd * (1 + free.solver.gap) + 1e-6
    assert free.total_cost_usd - held.total_cost_usd <= 8 * od * HOURS_PER_MONTH * 6 + 1e-6
    assert held.cost_breakdown_usd.total == pytest.approx(held.total_cost_usd, abs=0.05)


@pytest.mark.slow
def test_plan_json_reports_held_commitments_and_reads_back(plans, tmp_path):
    held, free = plans
    doc = json.loads(to_json(held))
    jsonschema.validate(doc, schema("plan.schema.json"))
    assert doc["held"][0]["until_month"] == 6 and "held" not in json.loads(to_json(free))
    from compiler.plan import from_dict
    assert to_json(from_dict(doc)) == to_json(held)


@pytest.mark.slow
def test_the_report_shows_held_nodes_in_use_month_by_month(plans):
    held, free = plans
    text = render_report(held, load_catalog())["report.md"]
    assert "### Commitments already held" in text
    assert "Commitments already held" not in render_report(free, load_catalog())["report.md"]
    section = text.split("### Commitments already held")[1].split("\n## ")[0]
    rows = [line.split(" | ")[0].removeprefix("| ") for line in section.splitlines() if line.startswith("| 2027-")]
    (h,) = held.held
    assert rows == [f"2027-0{m}" for m in range(1, 7)]       # the months it covers, one row each
    assert f"| 2027-01 | {h.monthly_used[0]:,.1f} of 8 |" in section
    assert "| 2027-07 | $" in section                         # covers until, with its sunk cost
