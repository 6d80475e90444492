"""`diff`: a spec and its edited copy (chat-70b's traffic doubled), as tables and as JSON."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from compiler.diff import diff_plans, diff_to_json, render_diff
from compiler.plan import from_dict, to_json
from plan_fixtures import doubled_inference_plan, hybrid_plan, vision_only_plan


def _read(plan):
    """As the CLI reads it: plan.json text -> from_dict."""
    return from_dict(json.loads(to_json(plan)))


@pytest.fixture(scope="module")
def doubled():
    return diff_plans(_read(hybrid_plan()), _read(doubled_inference_plan()))


def test_names_the_pools_that_changed(doubled):
    assert [(p.site, p.instance, p.pricing, p.nodes) for p in doubled.pools_added] == [
        ("aws-use1", "p5.48xlarge", "spot", 1)]
    assert doubled.pools_removed == ()
    [resized] = doubled.pools_resized
    assert (resized.site, resized.instance, resized.pricing) == ("aws-use1", "p5.48xlarge", "reserved_1y")
    assert (resized.nodes_a, resized.nodes_b, resized.nodes_delta) == (4, 8, 4)


def test_names_the_workloads_that_changed(doubled):
    by_name = {w.name: w for w in doubled.workloads}
    chat = by_name["chat-70b"]
    assert chat.status == "changed" and not chat.moved
    assert {c.field: (c.a, c.b) for c in chat.changes}["replicas"] == (32, 64)
    assert {e.key: e.delta for e in chat.estimate} == {"tokens_per_s": 48000.0}
    # 16 -> 32 replicas per site: the cost doubles (to the cent, after rounding both halves)
    assert chat.cost.delta == pytest.approx(4_131_815.19, abs=0.02)

    resnet = by_name["resnet50"]
    assert resnet.moved
    assert {c.field: (c.a, c.b) for c in resnet.changes} == {
        "site": ("fra-dc1", "aws-use1"), "instance": ("dgx-h100", "p5.48xlarge"),
        "pricing": ("owned", "spot")}
    assert by_name["llama-70b-pretrain"].status == "unchanged"


def test_total_cost_delta(doubled):
    # 13,341,807.46 - 9,209,396.04 (the fixtures' totals)
    assert doubled.total.delta == pytest.approx(4_132_411.42, abs=0.01)
    assert {d.key for d in doubled.breakdown} == {"cloud_compute", "power"}
    assert doubled.changed


def test_table_output(doubled):
    console = Console(width=160, record=True, color_system=None)
    render_diff(doubled, console)
    text = console.export_text()
    assert "total $9,209,396 -> $13,341,807 (+$4,132,411 +44.9%)" in text
    assert "chat-70b" in text and "replicas 32 -> 64" in text
    assert "resnet50" in text and "moved" in text and "site fra-dc1 -> aws-use1" in text
    assert "added" in text and "spot" in text
    assert "resized" in text and "reserved_1y" in text
    assert "1 workload unchanged." in text


def test_json_form(doubled):
    doc = diff_to_json(doubled)
    assert doc["changed"] is True
    assert doc["total_cost_usd"] == {"a": 9209396.04, "b": 13341807.46, "delta": 4132411.42,
                                     "delta_ratio": 0.448717}
    assert doc["pools"]["added"][0]["pricing"] == "spot"
    assert doc["pools"]["resized"][0]["nodes_a"] == 4 and doc["pools"]["resized"][0]["nodes_b"] == 8
    names = [w["name"] for w in doc["workloads"]]
    assert names == sorted(names) == ["chat-70b", "llama-70b-pretrain", "resnet50"]
    chat = doc["workloads"][0]
    assert chat["estimate"]["tokens_per_s"]["delta"] == 48000.0
    assert doc["workloads"][2]["moved"] is True
    # JSON-clean and deterministic: the same text from a fresh diff
    text = json.dumps(doc, sort_keys=True)
    again = diff_to_json(diff_plans(_read(hybrid_plan()), _read(doubled_inference_plan())))
    assert json.dumps(again, sort_keys=True) == text


def test_a_plan_against_itself_is_empty():
    d = diff_plans(hybrid_plan(), hybrid_plan())
    assert not d.changed
    assert d.pools_added == d.pools_removed == d.pools_resized == ()
    assert all(w.status == "unchanged" for w in d.workloads)
    console = Console(width=120, record=True, color_system=None)
    render_diff(d, console)
    assert "The plans are the same." in console.export_text()


def test_workloads_added_and_removed():
    d = diff_plans(vision_only_plan(), hybrid_plan())
    status = {w.name: w.status for w in d.workloads}
    assert status == {"chat-70b": "added", "llama-70b-pretrain": "added", "resnet50": "changed"}
    back = {w.name: w.status for w in diff_plans(hybrid_plan(), vision_only_plan()).workloads}
    assert back["chat-70b"] == "removed"
    doc = diff_to_json(d)
    assert doc["workloads"][0]["cost_usd"]["a"] is None
