"""`diff`: a spec and its edited copy (chat-70b's traffic doubled), as tables and as JSON."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import replace

import pytest
from rich.console import Console

from compiler.diff import Change, diff_plans, diff_to_json, render_diff
from compiler.plan import SpecInputs, from_dict, to_json
from plan_fixtures import doubled_inference_plan, hybrid_plan, vision_only_plan
from plans import with_placement, with_workload, workload

# What the fixtures' spec states of each workload (plan.json `inputs`, as a compile records it)
STATED = {
    "chat-70b": {"model": "llama-3-70b", "orchestrator": "kubernetes", "quantization": "fp8",
                 "slo": {"availability": 0.999, "tpot_p99_ms": 60, "ttft_p99_ms": 1000},
                 "traffic": {"growth_per_month": 0.02, "input_tokens": 1000, "output_tokens": 250,
                             "peak_rps": 20},
                 "window": {"start_month": 2}},
    "llama-70b-pretrain": {"model": "llama-3-70b", "optimizer": "adamw", "orchestrator": "slurm",
                           "precision": "bf16", "seq_len": 4096, "tokens": 2000000000000,
                           "window": {"deadline_days": 60, "start_month": 0}},
    "resnet50": {"epochs": 90, "model": "resnet-50", "orchestrator": "slurm", "samples": 1281167,
                 "sites": ["fra-dc1", "aws-use1"], "window": {"start_month": 1}},
}


def _read(plan):
    """As the CLI reads it: plan.json text -> from_dict."""
    return from_dict(json.loads(to_json(plan)))


def _stated(plan, rps: float = 20, **edits):
    """The plan with each workload's spec recorded (STATED, chat-70b at `rps` requests/s), and
    `edits` (workload -> {dotted path: value}) made to it."""
    def inputs(name):
        out = copy.deepcopy(STATED[name])
        if name == "chat-70b":
            out["traffic"]["peak_rps"] = rps
        for path, value in edits.get(name.replace("-", "_"), {}).items():
            *head, last = path.split(".")
            at = out
            for k in head:
                at = at.setdefault(k, {})
            at[last] = value
        return out
    return replace(plan, workloads=tuple(replace(w, inputs=SpecInputs.of(inputs(w.name))) for w in plan.workloads))


@pytest.fixture(scope="module")
def doubled():
    return diff_plans(_read(_stated(hybrid_plan(), 20)), _read(_stated(doubled_inference_plan(), 40)))


def _text(d, width: int = 160) -> str:
    console = Console(width=width, record=True, color_system=None)
    render_diff(d, console)
    return console.export_text()


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
    assert chat.status == chat.change == "input changed" and not chat.moved
    assert chat.inputs == (Change("traffic.peak_rps", 20, 40),)
    assert {c.field: (c.a, c.b) for c in chat.changes}["replicas"] == (32, 64)
    assert {e.key: e.delta for e in chat.estimate} == {"tokens_per_s": 48000.0}
    # 16 -> 32 replicas per site: the cost doubles (to the cent, after rounding both halves)
    assert chat.cost.delta == pytest.approx(4_131_815.19, abs=0.02)

    # resnet50's spec did not change: the owned node it ran on went to chat-70b, so it moved
    resnet = by_name["resnet50"]
    assert resnet.status == "changed" and resnet.change == "moved" and resnet.inputs == ()
    assert resnet.changes == ()       # where it runs is its placement rows, not fields
    assert [(h.site, h.instance, h.pricing, h.nodes_a, h.nodes_b) for h in resnet.holdings] == [
        ("aws-use1", "p5.48xlarge", "spot", 0, 1), ("fra-dc1", "dgx-h100", "owned", 1, 0)]
    assert resnet.saving == pytest.approx(47.74 - 643.97)
    assert by_name["llama-70b-pretrain"].status == "unchanged"
    # what the input did first, then what the re-plan did; the unchanged one counted
    assert [w.name for w in doubled.listed] == ["chat-70b", "resnet50"] and doubled.unchanged == 1


def test_total_cost_delta(doubled):
    # 13,341,807.46 - 9,209,396.04 (the fixtures' totals)
    assert doubled.total.delta == pytest.approx(4_132_411.42, abs=0.01)
    assert {d.key for d in doubled.breakdown} == {"cloud_compute", "power"}
    assert doubled.changed


def test_table_output(doubled):
    text = _text(doubled)
    assert "total $9,209,396 -> $13,341,807 (+$4,132,411 +44.9%)" in text
    assert _row(text, "chat-70b", "input changed") == ["$4,131,815", "$8,263,630", "+$4,131,815", "+100.0%", ""]
    assert _row(text, "resnet50", "moved") == ["$48", "$644", "+$596", "+1248.9%", "costs $596 more"]
    assert text.index("input changed") < text.index("moved")
    assert _row(text, "chat-70b", "traffic.peak_rps") == ["20", "40"]
    assert _row(text, "chat-70b", "replicas") == ["32", "64"]
    assert _row(text, "resnet50", "fra-dc1", "dgx-h100", "owned") == ["1", "0", "24", "0"]
    assert "added" in text and "spot" in text
    assert "resized" in text and "reserved_1y" in text
    assert "1 workload unchanged." in text and "llama-70b-pretrain" not in text


def test_json_form(doubled):
    doc = diff_to_json(doubled)
    assert doc["changed"] is True
    assert doc["total_cost_usd"] == {"a": 9209396.04, "b": 13341807.46, "delta": 4132411.42,
                                     "delta_ratio": 0.448717}
    assert doc["pools"]["added"][0]["pricing"] == "spot"
    assert doc["pools"]["resized"][0]["nodes_a"] == 4 and doc["pools"]["resized"][0]["nodes_b"] == 8
    # in the diff's order, the unchanged one counted, not listed
    assert [(w["name"], w["change"]) for w in doc["workloads"]] == [("chat-70b", "input changed"),
                                                                    ("resnet50", "moved")]
    assert doc["unchanged_workloads"] == 1
    chat, resnet = doc["workloads"]
    assert chat["inputs"] == [{"field": "traffic.peak_rps", "a": 20, "b": 40}]
    assert chat["estimate"]["tokens_per_s"]["delta"] == 48000.0
    assert resnet["moved"] is True and resnet["saving_usd"] == -596.23 and "saving_usd" not in chat
    assert resnet["placements"] == [
        {"site": "aws-use1", "instance": "p5.48xlarge", "pricing": "spot", "nodes_a": 0, "nodes_b": 1,
         "node_hours_a": 0.0, "node_hours_b": 26.0},
        {"site": "fra-dc1", "instance": "dgx-h100", "pricing": "owned", "nodes_a": 1, "nodes_b": 0,
         "node_hours_a": 24.0, "node_hours_b": 0.0}]
    # JSON-clean and deterministic: the same text from a fresh diff
    text = json.dumps(doc, sort_keys=True)
    again = diff_to_json(diff_plans(_read(_stated(hybrid_plan(), 20)), _read(_stated(doubled_inference_plan(), 40))))
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
    assert w.status == "changed" and w.moved and w.changes == ()
    assert [(h.pricing, h.nodes_a, h.nodes_b, h.node_hours_a, h.node_hours_b) for h in w.holdings] == [
        ("reserved_1y", 64, 1, 64 * 576.0 * 2, 576.0 * 2), ("on_demand", 0, 63, 0.0, 63 * 576.0 * 2)]
    # same main pricing, fewer reserved nodes: a change in holdings, not a move
    c = _pretrain_on(hybrid_plan(), (Holding("reserved_1y", months(2), months(2 * 576.0)),
                                     Holding("on_demand", months(62), months(62 * 576.0))), "on_demand")
    w2 = next(x for x in diff_plans(b, c).workloads if x.name == "llama-70b-pretrain")
    assert w2.status == "changed" and not w2.moved and w2.changes == ()
    assert [(h.pricing, h.nodes_a, h.nodes_b) for h in w2.holdings] == [("reserved_1y", 1, 2), ("on_demand", 63, 62)]

    text = _text(d)
    assert "Placements: nodes held" in text
    assert _row(text, "llama-70b-pretrain", "aws-use1", "p5.48xlarge", "reserved_1y") == [
        "64", "1", "73,728", "1,152"]
    assert _row(text, "llama-70b-pretrain", "aws-use1", "p5.48xlarge", "on_demand") == [
        "0", "63", "0", "72,576"]                                   # 63 x 576 h x 2 months


def test_replicas_per_site_in_the_table_and_json(doubled):
    text = _text(doubled)
    assert "Replicas per site (peak)" in text
    assert _row(text.split("Replicas per site (peak)")[1], "chat-70b", "fra-dc1") == ["16", "32", "2-35"]
    doc = diff_to_json(doubled)
    chat = doc["workloads"][0]
    assert chat["replicas"] == [{"site": "aws-use1", "peak_a": 16, "peak_b": 32, "months": "2-35"},
                                {"site": "fra-dc1", "peak_a": 16, "peak_b": 32, "months": "2-35"}]
    assert chat["placements"][0] == {"site": "aws-use1", "instance": "p5.48xlarge", "pricing": "reserved_1y",
                                     "nodes_a": 4, "nodes_b": 8, "node_hours_a": 99280.0,
                                     "node_hours_b": 198560.0}


def test_a_plan_from_before_holdings_compares():
    # plan.json without holdings or months of replicas (the reader's upgrade leaves them empty)
    from compiler.plan_reader import upgrade

    doc = json.loads(to_json(hybrid_plan()))
    del doc["schema_version"]
    for w in doc["workloads"]:
        for p in w["placements"]:
            for key in ("holdings", "monthly_replicas", "candidate", "gpus_per_replica"):
                p.pop(key)
    old = from_dict(upgrade("old.json", doc))
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
            cell += "".join(c.content for c in t.children or [] if c.type in ("text", "code_inline"))
    return tables


def test_markdown_comment_is_tables_a_parser_reads(doubled):
    from compiler.diff_comment import render_comment

    text = render_comment(doubled, threshold=0.05)
    cost, plans, workloads, inputs, placements, others, replicas, pools = _md_tables(text)
    assert cost[0] == ["Cost", "Base", "Head", "Change", ""]
    assert cost[1] == ["Total", "$9,209,396", "$13,341,807", "+$4,132,411", "+44.9%"]
    assert {r[0] for r in cost[2:]} == {"cloud_compute", "power"}
    assert [r[:5] for r in plans[1:]] == [["base", "acme-ml-platform", "optimal", "0.05%", "cbc"],
                                          ["head", "acme-ml-platform", "optimal", "0.05%", "cbc"]]
    assert workloads[1:] == [["chat-70b", "input changed", "$4,131,815", "$8,263,630", "+$4,131,815", "+100.0%", ""],
                             ["resnet50", "moved", "$48", "$644", "+$596", "+1248.9%", "costs $596 more"]]
    assert inputs[1:] == [["chat-70b", "traffic.peak_rps", "20", "40"]]
    assert placements[0][:4] == ["Workload", "Site", "Instance", "Pricing"]
    # one row per (site, instance, pricing) a workload holds nodes of, in the workloads' order
    assert placements[1:] == [
        ["chat-70b", "aws-use1", "p5.48xlarge", "reserved_1y", "4", "8", "99,280", "198,560"],
        ["chat-70b", "fra-dc1", "dgx-h100", "owned", "4", "8", "99,280", "198,560"],
        ["resnet50", "aws-use1", "p5.48xlarge", "spot", "0", "1", "0", "26"],
        ["resnet50", "fra-dc1", "dgx-h100", "owned", "1", "0", "24", "0"]]
    assert ["chat-70b", "replicas", "32", "64"] in others
    assert replicas[1:] == [["chat-70b", "aws-use1", "16", "32", "2-35"], ["chat-70b", "fra-dc1", "16", "32", "2-35"]]
    assert [r[:3] for r in pools[1:]] == [["added", "aws-use1", "p5.48xlarge"],
                                          ["resized", "aws-use1", "p5.48xlarge"]]
    assert "rises more than the 5.0% allowed (+44.9%)" in text
    assert "1 workload unchanged." in text
    assert render_comment(doubled, threshold=0.5).count("Within the 50.0% rise allowed (+44.9%)") == 1


def test_a_cell_cannot_break_its_table():
    from compiler.diff_comment import render_comment

    a = hybrid_plan()
    b = replace(a, spec_name="acme | platform\nv2")
    _cost, plans = _md_tables(render_comment(diff_plans(a, b)))[:2]
    assert len(plans[2]) == 7 and plans[2][1] == "acme | platform v2"


def test_a_difference_within_the_gaps_is_flagged():
    a = _stated(hybrid_plan())
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


# --- what the input did, apart from what the re-plan did -----------------------------------

def test_a_workloads_spec_as_plan_json_records_it():
    from compiler.readback.inputs import inputs_of
    from compiler.spec import InferenceWindow, InferenceWorkload, Pin, Slo, Traffic

    w = InferenceWorkload(name="chat", model="llama-3-70b", traffic=Traffic(20.0, 1000, 250, 0.03),
                          slo=Slo(1000.0, 60.5), window=InferenceWindow(2), sites=("a", "b"),
                          pin=Pin(gpu="H100"), path="$.workloads[3]")
    doc = inputs_of(w)
    # no name, kind or path (the entry's own, and where in the file); no nulls; as written; the
    # headroom the service was sized with (a Slo built in code keeps none unless it says so)
    assert doc == {"model": "llama-3-70b", "orchestrator": "kubernetes", "pin": {"gpu": "H100"},
                   "quantization": "bf16", "sites": ["a", "b"],
                   "slo": {"availability": 0.99, "headroom": 0, "tpot_p99_ms": 60.5, "ttft_p99_ms": 1000},
                   "traffic": {"growth_per_month": 0.03, "input_tokens": 1000, "output_tokens": 250,
                               "peak_rps": 20},
                   "window": {"start_month": 2}}
    assert list(doc) == sorted(doc) and isinstance(doc["traffic"]["peak_rps"], int)
    # the same workload elsewhere in the file records the same inputs
    assert inputs_of(replace(w, path="$.workloads[0]")) == doc


def test_changed_inputs_come_first_one_row_per_field():
    # chat-70b's spec changes in three places (a nested value, a list, a new key); its plan does
    # not. The pretraining's plan changes (on-demand -> reserved nodes) with its spec as it was.
    a = _stated(hybrid_plan())
    b = _stated(hybrid_plan(), chat_70b={"slo.ttft_p99_ms": 800, "sites": ["aws-use1"], "pin.gpu": "H100"})
    (pre,) = workload(b, "llama-70b-pretrain").placements
    b = with_placement(b, "llama-70b-pretrain", 0, pricing="reserved_1y",
                       holdings=tuple(replace(h, pricing="reserved_1y") for h in pre.holdings))
    d = diff_plans(_read(a), _read(b))
    assert [(w.name, w.change) for w in d.listed] == [("chat-70b", "input changed"),
                                                      ("llama-70b-pretrain", "moved")]
    chat = d.listed[0]
    assert [(c.field, c.a, c.b) for c in chat.inputs] == [
        ("pin.gpu", None, "H100"), ("sites", None, ["aws-use1"]), ("slo.ttft_p99_ms", 1000, 800)]
    assert chat.cost.delta == 0.0            # the spec changed, the plan did not: it costs the same
    text = _text(d)
    assert _row(text, "chat-70b", "pin.gpu") == ["-", "H100"]
    assert _row(text, "chat-70b", "sites") == ["-", "aws-use1"]
    assert _row(text, "chat-70b", "slo.ttft_p99_ms") == ["1000", "800"]
    assert text.index("input changed") < text.index("moved")
    assert diff_to_json(d)["workloads"][0]["inputs"] == [
        {"field": "pin.gpu", "a": None, "b": "H100"}, {"field": "sites", "a": None, "b": ["aws-use1"]},
        {"field": "slo.ttft_p99_ms", "a": 1000, "b": 800}]


def test_a_cost_that_changed_alone_says_so():
    a = _stated(hybrid_plan())
    b = with_workload(a, "resnet50", cost_usd=workload(a, "resnet50").cost_usd + 10.0)
    d = diff_plans(_read(a), _read(b))
    [w] = d.listed
    assert (w.name, w.status, w.change) == ("resnet50", "changed", "changed")
    assert _row(_text(d), "resnet50", "changed")[-1] == "cost only"


def test_a_jobs_start_month_is_a_change():
    a = _stated(hybrid_plan())
    later = with_workload(a, "llama-70b-pretrain", start_month=3)
    # the plan alone (a plan.json from before inputs): its start is a change of the job
    w = next(x for x in diff_plans(_read(hybrid_plan()), _read(replace(later, workloads=tuple(
        replace(x, inputs=None) for x in later.workloads)))).workloads if x.name == "llama-70b-pretrain")
    assert w.status == "changed" and w.changes == (Change("start", 0, 3),)
    # with the spec that moved it: an input change, and the plan's start beside it
    d = diff_plans(_read(a), _read(_stated(later, llama_70b_pretrain={"window.start_month": 3})))
    w = d.listed[0]
    assert (w.name, w.change) == ("llama-70b-pretrain", "input changed")
    assert w.inputs == (Change("window.start_month", 0, 3),) and w.changes == (Change("start", 0, 3),)
    assert "unchanged" not in [x.change for x in d.listed]
    assert _row(_text(d), "llama-70b-pretrain", "window.start_month") == ["0", "3"]


def _dated(plan, start: str, job_month: int):
    """The plan dated from `start`, its pretraining starting in its month `job_month`."""
    plan = with_workload(replace(plan, start=start), "llama-70b-pretrain", start_month=job_month)
    return _stated(plan, llama_70b_pretrain={"window.start_month": job_month})


def test_dated_plans_compare_a_jobs_start_by_calendar_month():
    # The re-plan starts three months later; the job starts in 2027-06 in both: month 5 of A,
    # month 2 of B. Not a change, though its index is.
    a = _dated(hybrid_plan(), "2027-01", 5)
    same = diff_plans(_read(a), _read(_dated(hybrid_plan(), "2027-04", 2)))
    assert {w.name: w.status for w in same.workloads}["llama-70b-pretrain"] == "unchanged"
    # a month later in the calendar is one, in either field, named by the calendar
    d = diff_plans(_read(a), _read(_dated(hybrid_plan(), "2027-04", 3)))
    w = next(x for x in d.workloads if x.name == "llama-70b-pretrain")
    assert w.status == "input changed"
    assert w.inputs == (Change("window.start_month", "2027-06", "2027-07"),)
    assert w.changes == (Change("start", "2027-06", "2027-07"),)
    doc = diff_to_json(d)
    job = next(x for x in doc["workloads"] if x["name"] == "llama-70b-pretrain")
    assert job["changes"] == [{"field": "start", "a": "2027-06", "b": "2027-07"}]
    # a workload that runs from each plan's first month (start_month 0 in both) runs from the
    # later one's in both: not a change
    d = diff_plans(_read(_dated(hybrid_plan(), "2027-01", 0)), _read(_dated(hybrid_plan(), "2027-04", 0)))
    assert {w.name: w.status for w in d.workloads}["llama-70b-pretrain"] == "unchanged"


def test_a_move_of_an_unchanged_workload_carries_its_saving():
    # the way back from the doubled traffic: resnet50 returns to the owned node it left, and the
    # re-plan that moved it says what its moves were priced at
    doubled = _stated(doubled_inference_plan(), 40)
    back = replace(doubled, workloads=tuple(workload(hybrid_plan(), "resnet50") if w.name == "resnet50" else w
                                            for w in doubled.workloads))
    back = _stated(replace(back, solver=replace(back.solver, moves_usd=2000.0)), 40)
    d = diff_plans(_read(doubled), _read(back))
    [resnet] = d.listed
    assert (resnet.name, resnet.change, resnet.inputs) == ("resnet50", "moved", ())
    assert resnet.saving == pytest.approx(643.97 - 47.74)
    assert _row(_text(d), "resnet50", "moved")[-1] == "saved $596"
    doc = diff_to_json(d)
    assert doc["workloads"][0]["saving_usd"] == 596.23 and doc["plans"]["b"]["moves_usd"] == 2000.0
    assert any("re-plan" in c and "$2,000" in c for c in doc["cautions"])
    from compiler.diff_comment import render_comment
    workloads = next(t for t in _md_tables(render_comment(d)) if t[0][0] == "Workload")
    assert workloads[1][-1] == "saved $596"


def test_no_format_joins_placements_into_one_string():
    # chat-70b leaves fra-dc1 and runs all its replicas on aws-use1: once 'site aws-use1+fra-dc1
    # -> aws-use1'; now a row per (site, instance, pricing)
    from compiler.diff_comment import render_comment

    a = _stated(hybrid_plan())
    chat = workload(a, "chat-70b")
    aws = chat.placements[0]
    b = with_workload(a, "chat-70b", placements=(replace(aws, nodes=8, replicas=32, gpus=64, holdings=tuple(
        replace(h, monthly_nodes=tuple(2 * n for n in h.monthly_nodes),
                monthly_node_hours=tuple(2 * x for x in h.monthly_node_hours)) for h in aws.holdings),
        monthly_replicas=tuple(2 * r for r in aws.monthly_replicas)),))
    d = diff_plans(_read(a), _read(b))
    [w] = d.listed
    assert w.change == "moved"
    assert [(h.site, h.pricing, h.nodes_a, h.nodes_b) for h in w.holdings] == [
        ("aws-use1", "reserved_1y", 4, 8), ("fra-dc1", "owned", 4, 0)]
    joined = re.compile(r"[\w-]\+[\w-]")
    for name, text in (("text", _text(d)), ("markdown", render_comment(d)),
                       ("json", json.dumps(diff_to_json(d), sort_keys=True))):
        assert not joined.search(text), (name, joined.search(text))
        assert "fra-dc1" in text and "dgx-h100" in text, name


def test_an_old_plan_without_inputs_still_diffs():
    from compiler.diff_comment import render_comment

    d = diff_plans(_read(hybrid_plan()), _read(_stated(doubled_inference_plan(), 40)))
    chat = next(w for w in d.workloads if w.name == "chat-70b")
    # its spec may have changed, or not: the diff cannot say, and says so
    assert chat.status == "changed" and not chat.inputs_known and chat.inputs == ()
    assert chat.change == "resized"
    assert any("plan A does not record its workloads' spec" in c for c in diff_to_json(d)["cautions"])
    assert diff_to_json(d)["plans"]["a"]["inputs_recorded"] is False
    assert _row(_text(d), "chat-70b", "resized")[-1] == "spec unknown"
    assert "which workloads the spec changed is unknown" in render_comment(d)
