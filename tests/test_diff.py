"""`diff`: a spec and its edited copy (chat-70b's traffic doubled), as tables and as JSON."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from compiler.diff import diff_plans, diff_to_json, render_diff
from compiler.plan import from_dict, to_json
from plan_fixtures import doubled_inference_plan, hybrid_plan, vision_only_plan
from plans import with_placement, workload


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


def _row(text: str, *first: str) -> list[str]:
    """The remaining cells of the table row whose first cells are `first`."""
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if tuple(cells[:len(first)]) == first:
            return cells[len(first):]
    raise AssertionError(f"no row {first}")


def test_holdings_and_replicas_per_site(doubled):
    by_name = {w.name: w for w in doubled.workloads}
    chat = by_name["chat-70b"]
    assert [(h.site, h.pricing, h.nodes_a, h.nodes_b) for h in chat.holdings] == [
        ("aws-use1", "reserved_1y", 4, 8), ("fra-dc1", "owned", 4, 8)]
    assert chat.holdings[0].node_hours_a == pytest.approx(4 * 730.0 * 34)
    assert chat.holdings[0].node_hours_b == pytest.approx(8 * 730.0 * 34)
    assert [(r.site, r.peak_a, r.peak_b, r.months) for r in chat.replicas] == [
        ("aws-use1", 16, 32, "2-35"), ("fra-dc1", 16, 32, "2-35")]
    assert not chat.moved            # more of the same nodes: a resize
    resnet = by_name["resnet50"]
    assert [(h.site, h.pricing, h.nodes_a, h.nodes_b) for h in resnet.holdings] == [
        ("aws-use1", "spot", 0, 1), ("fra-dc1", "owned", 1, 0)]
    assert resnet.replicas == ()
    assert by_name["llama-70b-pretrain"].holdings == ()


def _pretrain_on(plan, holdings, pricing):
    (_one,) = workload(plan, "llama-70b-pretrain").placements
    return with_placement(plan, "llama-70b-pretrain", 0, pricing=pricing, holdings=holdings)


def test_a_job_moving_from_reserved_to_on_demand_nodes():
    from compiler.plan import Holding

    H = 36
    months = lambda v: tuple(v if m < 2 else type(v)(0) for m in range(H))  # noqa: E731
    a = _pretrain_on(hybrid_plan(), (Holding("reserved_1y", months(64), months(64 * 576.0)),), "reserved_1y")
    b = _pretrain_on(hybrid_plan(), (Holding("reserved_1y", months(1), months(576.0)),
                                     Holding("on_demand", months(63), months(63 * 576.0))), "on_demand")
    d = diff_plans(_read(a), _read(b))
    w = next(x for x in d.workloads if x.name == "llama-70b-pretrain")
    assert w.status == "changed" and w.moved
    assert {c.field: (c.a, c.b) for c in w.changes} == {"pricing": ("reserved_1y", "on_demand")}
    assert [(h.pricing, h.nodes_a, h.nodes_b, h.node_hours_a, h.node_hours_b) for h in w.holdings] == [
        ("reserved_1y", 64, 1, 64 * 576.0 * 2, 576.0 * 2), ("on_demand", 0, 63, 0.0, 63 * 576.0 * 2)]
    # same main pricing, fewer reserved nodes: a change in holdings, not a move
    c = _pretrain_on(hybrid_plan(), (Holding("reserved_1y", months(2), months(2 * 576.0)),
                                     Holding("on_demand", months(62), months(62 * 576.0))), "on_demand")
    w2 = next(x for x in diff_plans(b, c).workloads if x.name == "llama-70b-pretrain")
    assert w2.status == "changed" and not w2.moved and w2.changes == ()
    assert [(h.pricing, h.nodes_a, h.nodes_b) for h in w2.holdings] == [("reserved_1y", 1, 2), ("on_demand", 63, 62)]

    console = Console(width=160, record=True, color_system=None)
    render_diff(d, console)
    text = console.export_text()
    assert "Nodes held, by pricing" in text
    assert "aws-use1 p5.48xlarge" in text and "reserved_1y" in text and "on_demand" in text
    assert _row(text, "llama-70b-pretrain", "aws-use1 p5.48xlarge", "reserved_1y") == [
        "64", "1", "73,728", "1,152"]
    assert _row(text, "llama-70b-pretrain", "aws-use1 p5.48xlarge", "on_demand") == [
        "0", "63", "0", "72,576"]                                   # 63 x 576 h x 2 months


def test_replicas_per_site_in_the_table_and_json(doubled):
    console = Console(width=160, record=True, color_system=None)
    render_diff(doubled, console)
    text = console.export_text()
    assert "Replicas per site (peak)" in text
    assert _row(text, "chat-70b", "fra-dc1") == ["16", "32", "2-35"]
    assert _row(text, "resnet50", "fra-dc1 dgx-h100", "owned") == ["1", "0", "24", "0"]
    doc = diff_to_json(doubled)
    chat = doc["workloads"][0]
    assert chat["replicas"] == [{"site": "aws-use1", "peak_a": 16, "peak_b": 32, "months": "2-35"},
                                {"site": "fra-dc1", "peak_a": 16, "peak_b": 32, "months": "2-35"}]
    assert chat["holdings"][0] == {"site": "aws-use1", "instance": "p5.48xlarge", "pricing": "reserved_1y",
                                   "nodes_a": 4, "nodes_b": 8, "node_hours_a": 99280.0,
                                   "node_hours_b": 198560.0}


def test_a_plan_from_before_holdings_compares():
    # plan.json without holdings or months of replicas (from_dict leaves them empty)
    doc = json.loads(to_json(hybrid_plan()))
    for w in doc["workloads"]:
        for p in w["placements"]:
            for key in ("holdings", "monthly_replicas", "candidate", "gpus_per_replica"):
                p.pop(key)
    old = from_dict(doc)
    d = diff_plans(old, _read(hybrid_plan()))
    by_name = {w.name: w for w in d.workloads}
    # the same nodes of the same pricings: nothing to show but node-hours now known
    assert by_name["llama-70b-pretrain"].holdings == ()
    assert by_name["chat-70b"].replicas == ()
    d2 = diff_plans(old, _read(doubled_inference_plan()))
    chat = {w.name: w for w in d2.workloads}["chat-70b"]
    assert [(r.site, r.peak_a, r.peak_b, r.months) for r in chat.replicas] == [
        ("aws-use1", 16, 32, ""), ("fra-dc1", 16, 32, "")]


# --- the pull-request comment and the threshold --------------------------------------------

def _md_tables(markdown: str) -> list[list[list[str]]]:
    """Every table a Markdown parser (markdown-it, GFM tables) finds, as rows of cell texts."""
    from markdown_it import MarkdownIt

    tables, row, cell = [], [], None
    for t in MarkdownIt("commonmark").enable("table").parse(markdown):
        if t.type == "table_open":
            tables.append([])
        elif t.type == "tr_open":
            row = []
        elif t.type == "tr_close":
            tables[-1].append(row)
        elif t.type in ("th_open", "td_open"):
            cell = ""
        elif t.type in ("th_close", "td_close"):
            row.append(cell)
            cell = None
        elif t.type == "inline" and cell is not None:
            cell += "".join(c.content for c in t.children or [] if c.type == "text")
    return tables


def test_markdown_comment_is_tables_a_parser_reads(doubled):
    from compiler.diff_comment import render_comment

    text = render_comment(doubled, threshold=0.05)
    cost, plans, workloads, pools = _md_tables(text)
    assert cost[0] == ["Cost", "Base", "Head", "Change", ""]
    assert cost[1] == ["Total", "$9,209,396", "$13,341,807", "+$4,132,411", "+44.9%"]
    assert {r[0] for r in cost[2:]} == {"cloud_compute", "power"}
    assert [r[:5] for r in plans[1:]] == [["base", "acme-ml-platform", "optimal", "0.05%", "cbc"],
                                          ["head", "acme-ml-platform", "optimal", "0.05%", "cbc"]]
    assert {r[0]: r[1] for r in workloads[1:]} == {"chat-70b": "changed", "resnet50": "moved"}
    assert [r[:3] for r in pools[1:]] == [["added", "aws-use1", "p5.48xlarge"],
                                          ["resized", "aws-use1", "p5.48xlarge"]]
    assert "rises more than the 5.0% allowed (+44.9%)" in text
    assert "1 workload unchanged." in text
    assert render_comment(doubled, threshold=0.5).count("Within the 50.0% rise allowed (+44.9%)") == 1


def test_a_cell_cannot_break_its_table():
    from dataclasses import replace

    from compiler.diff_comment import render_comment

    a = hybrid_plan()
    b = replace(a, spec_name="acme | platform\nv2")
    _cost, plans = _md_tables(render_comment(diff_plans(a, b)))[:2]
    assert len(plans[2]) == 7 and plans[2][1] == "acme | platform v2"


def test_a_difference_within_the_gaps_is_flagged():
    from dataclasses import replace

    a = hybrid_plan()
    loose = replace(a.solver, status="feasible", gap=0.01)
    b = replace(a, total_cost_usd=a.total_cost_usd * 1.005, solver=loose)
    d = diff_plans(replace(a, solver=loose), b)
    assert any("proven gaps" in c for c in diff_to_json(d)["cautions"])
    # the same rise between two plans proven within 0.05% is the inputs'
    assert not diff_to_json(diff_plans(a, replace(a, total_cost_usd=a.total_cost_usd * 1.005)))["cautions"]


def test_plans_info_in_json(doubled):
    doc = diff_to_json(doubled)
    assert doc["plans"]["a"]["status"] == "optimal"
    assert doc["plans"]["b"]["solver"] == doubled_inference_plan().solver.name
    assert doc["plans"]["a"]["catalog_version"] == hybrid_plan().catalog_version
    assert doc["plans"]["a"]["gap"] == hybrid_plan().solver.gap


@pytest.mark.parametrize("limit, code", [("40", 7), ("44.8", 7), ("45", 0), (None, 0)])
def test_fail_above_exit_code(tmp_path, limit, code):
    from typer.testing import CliRunner

    from compiler.cli import app

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(to_json(hybrid_plan()))
    b.write_text(to_json(doubled_inference_plan()))
    args = ["diff", str(a), str(b), "--format", "markdown"] + (["--fail-above", limit] if limit else [])
    result = CliRunner().invoke(app, args)
    assert result.exit_code == code, result.output
    assert "| **Total** |" in result.stdout
    # the way back is a fall: never past a limit
    back = CliRunner().invoke(app, ["diff", str(b), str(a), "--fail-above", "0"])
    assert back.exit_code == 0
