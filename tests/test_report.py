"""report.md / report.html from hand-made plans: sections, figures, self-containment, determinism."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from compiler.catalog import load_catalog
from compiler.plan import Placement, WorkloadPlan
from compiler.render.environment import money, percent
from compiler.report import render_report
from compiler.report import views
from compiler.report.summary import print_summary
from plan_fixtures import doubled_inference_plan, hybrid_plan, vision_only_plan
from plans import with_placement, workload


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def hybrid(catalog):
    return render_report(hybrid_plan(), catalog)


def test_files(hybrid):
    assert sorted(hybrid) == ["report.html", "report.md"]


def test_markdown_has_every_section(hybrid):
    md = hybrid["report.md"]
    headings = re.findall(r"^#{1,3} (.+)$", md, flags=re.M)
    for section in ("Design review: acme-ml-platform", "The chosen design and why", "Cost breakdown",
                    "By category", "By site", "By workload", "Fleet per site, month by month",
                    "GPU utilization per pool", "Binding constraints", "Workloads",
                    "chat-70b (inference)", "llama-70b-pretrain (training)", "resnet50 (training)",
                    "On-prem versus cloud break-even", "Solver"):
        assert section in headings, section


def test_markdown_figures(hybrid):
    md = hybrid["report.md"]
    assert "Total cost **$9,209,396**" in md
    # cost by category, largest first; shares of the 9,209,396.04 total
    assert "| cloud_compute | $7,992,336 | 86.8% |" in md
    assert md.index("| cloud_compute |") < md.index("| support |") < md.index("| power |")
    # by site: what each site bills, nothing split by GPUs held:
    #   aws-use1 = cloud 7,992,336.38 + egress of the data leaving it 3,600 + fsx 82,944 = 8,078,880.38
    #   fra-dc1 = power 197,515.66 + DGX support 912,000 + lustre 21,000 = 1,130,515.66
    assert "| aws-use1 | $8,078,880 | 87.7% |\n| fra-dc1 | $1,130,516 | 12.3% |\n\n" in md
    assert views.SITE_RULE in md and views.UNATTRIBUTED not in md.split("### By site")[1].split("###")[0]
    # the fleet, month by month with equal months merged: training in months 0-1, then inference
    assert "| 0 | 512 | 0 |\n| 1 | 512 | 8 |\n| 2-35 | 32 | 32 |" in md
    # fra-dc1's 64 owned GPUs: 8 busy in month 1, 32 from month 2; idle = 36*64 - (8 + 34*32) = 1208
    assert "| fra-dc1 dgx-h100 (owned) | 64 | 47.6% | 0.0% | 50.0% | 1,208 |" in md
    # estimates and alternatives with their cost delta
    assert "| Capacity at the SLO | 48,000 output tokens/s |" in md
    assert "| Duration | 1,152.0 h (48.0 days) |" in md
    assert "+$1,280,863 (+31.0%)" in md
    # binding constraints and break-even: 47,500 / (3,616.13 - 577.33) = 15.6 months
    assert "`power[fra-dc1]`: new nodes at fra-dc1 are limited by power_kw 1200" in md
    assert "buying pays off after 15.6 months of full use" in md
    # owned nodes: no capex, power only, cheaper than renting whenever they run
    assert ("| H100 | fra-dc1 dgx-h100 (owned) | aws-use1 p5.48xlarge (on_demand) | $0 | $182 | $5,022 | "
            "already owned: no capex") in md
    assert "| H100 | fra-dc1 dgx-h100 (bought) | aws-use1 p5.48xlarge (reserved_1y) | $47,500 |" in md
    assert "cbc: optimal" in md


def test_why_names_every_workload_and_its_next_best(hybrid):
    why = hybrid["report.md"].split("## The chosen design and why")[1].split("##")[0]
    assert "A hybrid design" in why
    assert "chat-70b runs as 32 replicas on 64 x H100" in why
    # llama-70b-pretrain: the 8 owned nodes and 56 bought ones instead, both priced alone
    assert ("priced alone it would cost $4,057,989, and the next best option, 512 x H100 at fra-dc1 "
            "dgx-h100 (purchase (56 new nodes + 8 owned)), would cost $11,282,011 more") in why
    assert "3 constraints are binding (power, survive)" in why


def test_binding_families_are_named_as_plan_json_writes_them(catalog):
    """decode writes each binding row as "<family[...]> at <path>: <meaning>"; the summary names
    the families, bracketed or not (a cloud_share row has no brackets)."""
    from dataclasses import replace

    from compiler.plan import BindingConstraint

    plan = replace(hybrid_plan(), binding_constraints=tuple(BindingConstraint.read(b) for b in (
        "cloud_share at $.policy.max_cloud_share: cloud spend at most 60% of the total",
        "quota[aws-use1/H100] at $.sites[0].quotas.H100: at most 512 H100 GPUs at once")))
    why = render_report(plan, catalog)["report.md"].split("## The chosen design and why")[1].split("##")[0]
    assert "2 constraints are binding (cloud_share, quota)" in why


def test_cost_rows_add_up_to_the_total():
    plan = doubled_inference_plan()
    for rows in (views.cost_by_site(plan), views.cost_by_workload(plan)):
        assert sum(r.usd for r in rows) == pytest.approx(plan.total_cost_usd)
        assert sum(r.share for r in rows) == pytest.approx(1.0)


def test_idle_gpu_months_count_only_paid_capacity():
    plan = hybrid_plan()
    rows = {r.pool: r for r in views.build(plan).utilization}
    on_demand = rows["aws-use1 p5.48xlarge (on_demand)"]
    # 64 nodes for months 0-1 at 100%: nothing idle; not running afterwards is not idle
    assert on_demand.idle_gpu_months == 0 and on_demand.mean == 1.0
    owned = rows["fra-dc1 dgx-h100 (owned)"]
    assert owned.idle_gpu_months == pytest.approx(1208.0)
    assert owned.mean == pytest.approx(1096 / 2304)


class _Refs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href", "xlink:href", "action", "poster", "data") and value:
                self.refs.append(value)


def test_html_is_self_contained(hybrid):
    html = hybrid["report.html"]
    parser = _Refs()
    parser.feed(html)
    remote = [r for r in parser.refs if re.match(r"\s*(https?:)?//", r)]
    assert remote == []
    assert all(r.startswith("#") for r in parser.refs), parser.refs   # only in-page references
    for tag in ("script", "link", "img", "iframe", "object", "embed"):
        assert tag not in parser.tags, tag
    assert "@import" not in html and "url(http" not in html and "@font-face" not in html


def test_html_has_inline_svg_charts(hybrid):
    html = hybrid["report.html"]
    charts = re.findall(r'<svg class="chart" role="img" aria-label="([^"]+)"', html)
    assert charts == ["Cost breakdown by category, site and workload",
                      "GPUs in use per site, month by month",
                      "GPU utilization of every pool over the horizon"]
    assert "<?xml" not in html and "<!DOCTYPE svg" not in html
    ids = re.findall(r' id="([^"]+)"', html)
    assert len(ids) == len(set(ids)), "element ids must be unique across the inline charts"
    for ref in re.findall(r"url\(#([^)]+)\)", html):
        assert ref in ids


def test_html_escapes_plan_text(catalog):
    from dataclasses import replace

    plan = hybrid_plan()
    wl = replace(plan.workloads[0], alternatives=(replace(plan.workloads[0].alternatives[0],
                                                          note="<script>alert(1)</script> | x"),))
    out = render_report(replace(plan, workloads=(wl,) + plan.workloads[1:]), catalog)
    assert "<script>" not in out["report.html"]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out["report.html"]
    # Markdown: the tag cannot open (its '<' an entity) and the cell stays one cell
    assert "&lt;script>alert(1)&lt;/script> \\| x |" in out["report.md"] and "<script>" not in out["report.md"]


def test_rendering_is_deterministic_byte_for_byte(catalog, hybrid):
    assert render_report(hybrid_plan(), catalog) == hybrid


@pytest.mark.slow
def test_rendering_is_the_same_in_another_process():
    """A fresh interpreter with another hash seed renders the same bytes (no set/dict-order leaks)."""
    code = ("import sys, hashlib; sys.path.insert(0, 'tests');"
            "from plan_fixtures import hybrid_plan;"
            "from compiler.catalog import load_catalog; from compiler.report import render_report;"
            "out = render_report(hybrid_plan(), load_catalog());"
            "print(hashlib.sha256(out['report.html'].encode()).hexdigest(),"
            "      hashlib.sha256(out['report.md'].encode()).hexdigest())")
    root = Path(__file__).resolve().parents[1]
    digests = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True,
                             text=True, check=True)
        digests.add(out.stdout.strip())
    assert len(digests) == 1


def test_small_plan_without_breakeven_or_series(catalog):
    out = render_report(vision_only_plan(), catalog)
    assert "No GPU type could run both on-prem and in the cloud in this spec." in out["report.md"]
    assert "No limit on power, racks, GPUs at a site, quotas or the cloud share is binding" in out["report.md"]
    assert "| aws-use1 p5.48xlarge (spot) | 8 | n/a | n/a | n/a | n/a |" in out["report.md"]
    assert "No other feasible option was found." in out["report.md"]
    assert out["report.html"].count('<svg class="chart"') == 3


def test_filters():
    assert money(1234567.4) == "$1,234,567"
    assert money(0.424) == "$0.42"
    assert money(-300, True) == "-$300" and money(1200, True) == "+$1,200"
    assert percent(0.41234) == "41.2%" and percent(-0.05, 1, True) == "-5.0%"
    # what shows as zero has no sign: a '+$0' would claim a direction
    assert money(0, True) == "$0" and money(-0.001, True) == "$0.00" and percent(0.00001, 1, True) == "0.0%"


def test_summary_fits_one_screen():
    console = Console(width=120, record=True, color_system=None)
    print_summary(hybrid_plan(), console)
    text = console.export_text()
    assert len(text.splitlines()) <= 40
    assert "total $9,209,396 over 36 months" in text
    assert "solver cbc optimal, gap 0.05%" in text
    assert re.search(r"cloud_compute\s+\$7,992,336\s+86.8%", text)
    assert re.search(r"fra-dc1\s+dgx-h100\s+H100\s+8\s+64\s+owned", text)
    assert re.search(r"chat-70b\s+inference\s+H100\s+64\s+aws-use1, fra-dc1\s+48,000 tok/s", text)
    assert re.search(r"llama-70b-pretrain\s+training\s+H100\s+512\s+aws-use1\s+48.0 days", text)


def test_summary_tells_the_whole_compiles_seconds_and_every_solves():
    # a compile whose limits made it solve twice: the last search alone would understate the solving
    from dataclasses import replace

    plan = hybrid_plan()
    plan = replace(plan, solver=replace(plan.solver, seconds=119.3))
    console = Console(width=200, record=True, color_system=None)
    print_summary(plan, console, 556.04, 520.26)
    text = " ".join(console.export_text().split())
    assert "compiled in 556.0 s (solving 520.3 s, of which the plan's search 119.3 s)" in text
    console = Console(width=200, record=True, color_system=None)
    print_summary(plan, console)
    assert "the plan's search 119.3 s" in console.export_text() and "compiled in" not in console.export_text()


@pytest.mark.parametrize("solver", ["cbc", "highs"])
def test_summary_warns_when_not_optimal(solver):
    from dataclasses import replace

    from compiler.plan import SolvePath

    plan = hybrid_plan()
    searched = SolvePath("search", ("greedy start", "branch-and-bound", "polish"), "a small platform")
    plan = replace(plan, solver=replace(plan.solver, name=solver, status="feasible", gap=0.031, strategy=searched))
    console = Console(width=120, record=True, color_system=None)
    print_summary(plan, console)
    text = " ".join(console.export_text().split())
    assert ("stopped at 'feasible' before proving the optimum (--max-nodes, --time-limit or --gap move where it "
            "stops); a plan up to 3.10% cheaper may exist") in text
    assert ("--solver highs usually gets closer" in text) == (solver == "cbc")


def test_summary_does_not_send_to_highs_a_plan_the_rounds_made_without_a_search():
    # The improving rounds run on HiGHS whatever --solver says; without a search, --solver
    # highs gives the same plan, so the summary must not suggest it.
    from dataclasses import replace

    from compiler.readback.decode import gap_note
    from compiler.optimize.solve import Solution

    from compiler.plan import SolvePath

    sol = Solution("cbc", "feasible", 8341376.67, 6560749.42, 0.2135, 80.0, searched=False)
    path = SolvePath("rounds-only", ("greedy start", "neighbourhood rounds", "polish"), "a large platform")
    note = gap_note(SimpleNamespace(reservations=("r",), constraints=()), sol, path)
    plan = hybrid_plan()
    plan = replace(plan, solver=replace(plan.solver, name="cbc", status="feasible", gap=0.2135, gap_note=note,
                                        strategy=path))
    console = Console(width=120, record=True, color_system=None)
    print_summary(plan, console)
    text = " ".join(console.export_text().split())
    assert "This is the improving rounds' plan, with no branch-and-bound search" in text
    assert "--solver highs usually gets closer" not in text


def test_cost_rows_do_not_charge_storage_twice():
    # The optimizer charges storage to the workloads (their costs add up to the total);
    # by-workload rows must then add up to the total with no negative remainder. (By-site rows
    # are the sites' bills, not workload costs: the plan here keeps its own, which no longer add
    # up to the changed total, so they are left out.)
    from dataclasses import replace

    from compiler.report.views import cost_by_workload
    from plan_fixtures import hybrid_plan

    plan = hybrid_plan()
    storage = sum(s.cost_usd for s in plan.storage)
    assert storage > 0
    share = storage / len(plan.workloads)
    carried = replace(plan, workloads=tuple(replace(w, cost_usd=w.cost_usd + share)
                                             for w in plan.workloads))
    carried = replace(carried, total_cost_usd=sum(w.cost_usd for w in carried.workloads))
    rows = cost_by_workload(carried)
    assert all(r.usd >= 0 for r in rows), rows
    assert abs(sum(r.usd for r in rows) - carried.total_cost_usd) < 1.0
    assert "storage" not in {r.label for r in cost_by_workload(carried)}


def test_inference_label_counts_what_runs_at_once_not_each_sites_own_peak():
    # Two sites whose peaks fall in different months: 5 replicas (10 GPUs) at aws-use1 in month 0,
    # 4 (8 GPUs) at fra-dc1 in month 1; at most 7 replicas on 14 GPUs ever run together.
    # Adding up the placements would claim 9 replicas on 18 GPUs.
    chat = hybrid_plan().workloads[0]
    a, b = chat.placements
    w = WorkloadPlan(**{**chat.__dict__, "gpus": 14, "replicas": 7, "placements": (
        Placement(a.site, a.instance, a.pricing, 2, 10, 5),
        Placement(b.site, b.instance, b.pricing, 1, 8, 4))})
    assert views.workload_view(w).gpus_label == "7 replicas on 14 x H100"


def _with_burst_holdings(plan):
    """llama-70b-pretrain on 1 reserved_3y + 63 on-demand nodes in months 0-3, 64 on demand in 4."""
    from compiler.plan import Holding

    (_one,) = workload(plan, "llama-70b-pretrain").placements
    H = plan.horizon_months
    reserved = Holding("reserved_3y", tuple(1 if m < 4 else 0 for m in range(H)),
                       tuple(730.0 if m < 4 else 0.0 for m in range(H)))
    od = Holding("on_demand", tuple(63 if m < 4 else 64 if m == 4 else 0 for m in range(H)),
                 tuple(63 * 730.0 if m < 4 else 64 * 100.0 if m == 4 else 0.0 for m in range(H)))
    return with_placement(plan, "llama-70b-pretrain", 0, holdings=(reserved, od))


def test_workloads_show_the_nodes_they_hold_per_pricing_by_month_range(catalog):
    plan = _with_burst_holdings(hybrid_plan())
    w = next(v for v in views.build(plan).workloads if v.name == "llama-70b-pretrain")
    assert [(h.months, h.where, h.text) for h in w.holdings] == [
        ("0-3", "aws-use1 p5.48xlarge", "1 reserved_3y + 63 on_demand nodes"),
        ("4", "aws-use1 p5.48xlarge", "64 on_demand nodes")]
    out = render_report(plan, catalog)
    section = out["report.md"].split("### llama-70b-pretrain (training)")[1].split("###")[0]
    assert "| 0-3 | aws-use1 p5.48xlarge | 1 reserved_3y + 63 on_demand nodes |" in section
    assert "| 4 | aws-use1 p5.48xlarge | 64 on_demand nodes |" in section
    assert "<tr><td>0-3</td><td>aws-use1 p5.48xlarge</td><td>1 reserved_3y + 63 on_demand nodes</td></tr>" \
        in out["report.html"]


def test_services_show_replicas_per_site_month_by_month(catalog, hybrid):
    md = hybrid["report.md"].split("### chat-70b (inference)")[1].split("###")[0]
    assert "| Months | aws-use1 | fra-dc1 |\n| --- | ---: | ---: |\n| 2-35 | 16 | 16 |" in md
    assert "| 2-35 | aws-use1 p5.48xlarge | 4 reserved_1y nodes |" in md
    assert "| 2-35 | fra-dc1 dgx-h100 | 4 owned nodes |" in md
    assert "| aws-use1 | p5.48xlarge | reserved_1y | 4 | 32 | 16 x 2 GPUs |" in md


def test_replica_ranges_follow_the_months_and_add_up_a_sites_candidates():
    # Two candidates at aws-use1 (tp2 and tp4) and one at fra-dc1; ranges break where any site
    # changes, months with no replica anywhere are left out.
    from dataclasses import replace

    chat = hybrid_plan().workloads[0]
    aws, fra = chat.placements
    H = 36
    series = lambda *v: tuple(v) + (v[-1],) * (H - len(v))  # noqa: E731
    w = replace(chat, placements=(
        replace(aws, monthly_replicas=series(0, 0, 2, 2, 3, 3)),
        replace(aws, candidate="chat-70b/aws-use1/p5.48xlarge/tp4", gpus_per_replica=4,
                monthly_replicas=series(0, 0, 1, 1, 1, 0)),
        replace(fra, monthly_replicas=series(0, 0, 2, 2, 2, 2))))
    v = views.workload_view(w)
    assert v.replica_sites == ("aws-use1", "fra-dc1")
    assert [(s.months, s.replicas) for s in v.replicas_by_month] == [
        ("2-3", (3, 2)), ("4", (4, 2)), ("5-35", (3, 2))]
    # the why-line names each site once, whatever the number of candidates there
    assert v.why.count("aws-use1 (p5.48xlarge") == 1


def test_a_plan_without_holdings_still_reports():
    # plan.json from before holdings (from_dict fills none): no holdings table, nothing breaks
    from dataclasses import replace

    plan = hybrid_plan()
    bare = replace(plan, workloads=tuple(
        replace(w, placements=tuple(replace(p, holdings=(), monthly_replicas=()) for p in w.placements))
        for w in plan.workloads))
    view = views.build(bare)
    assert all(w.holdings == () and w.replicas_by_month == () for w in view.workloads)
    md = render_report(bare, load_catalog())["report.md"]
    assert "Nodes held, by pricing" not in md and "Replicas per site" not in md


def test_a_services_candidates_in_one_pool_hold_their_node_hours_worth():
    # Two candidates of chat-70b share one reserved p5 node all month (2 replicas x 2 GPUs and
    # 1 x 4 GPUs: 8 GPUs); each placement rounds its half node up to a node, the service holds one.
    from dataclasses import replace

    from compiler.plan import Holding

    chat = hybrid_plan().workloads[0]
    aws = chat.placements[0]
    half = Holding("reserved_1y", (1,) * 36, (365.0,) * 36)
    w = replace(chat, placements=(
        replace(aws, replicas=2, gpus=4, holdings=(half,), monthly_replicas=(2,) * 36),
        replace(aws, candidate="chat-70b/aws-use1/p5.48xlarge/tp4", gpus_per_replica=4, replicas=1, gpus=4,
                holdings=(half,), monthly_replicas=(1,) * 36)))
    v = views.workload_view(w)
    assert [(h.months, h.where, h.text) for h in v.holdings] == [("0-35", "aws-use1 p5.48xlarge",
                                                                 "1 reserved_1y node")]
    assert [(s.months, s.replicas) for s in v.replicas_by_month] == [("0-35", (3,))]


@pytest.mark.slow
def test_bought_nodes_and_the_node_schedule_are_explained():
    # The onprem fixture buys 40 hgx-h200 ($330,000 each, 5-year useful life) for a 12-month
    # horizon: the plan charges 12 / 60 = 20% of the price, which bom.csv lists in full.
    from dataclasses import replace

    from plans import onprem_plan, owned_job

    md = render_report(onprem_plan(), load_catalog())["report.md"]
    assert "| fra-dc1 | hgx-h200 | 40 | $330,000 | 5.0 years | 20.0% |" in md
    assert "## Node schedule" not in md            # no node changes hands here
    # a Kubernetes job on one of the 8 owned dgx-h100 in month 3, beside Slurm's resnet50 (one
    # node every month): own08 is Kubernetes' in month 3, and the report says so
    k8s = owned_job("small", 1, {3}, "kubernetes")
    plan = onprem_plan()
    md = render_report(replace(plan, workloads=plan.workloads + (k8s,)), load_catalog())["report.md"]
    assert "## Node schedule" not in md            # own08 is never Slurm's: no hand-over
    big = owned_job("big", 8, {0, 1})
    md = render_report(replace(plan, workloads=plan.workloads + (k8s, big)), load_catalog())["report.md"]
    assert "| fra-dc1 | 3 | kubernetes | dgx-h100 / owned | dgx-h100-own08 |" in md
    assert "| fra-dc1 | 0-1 | slurm | dgx-h100 / owned | dgx-h100-own[01-08] |" in md


@pytest.mark.slow
def test_training_workloads_show_where_the_time_goes(catalog):
    # The plan's step_breakdown (shares of the wall time) becomes a table per training workload,
    # in the estimate's order, terms at 0 left out; a plan without it (older plans, inference)
    # shows none.
    from dataclasses import replace
    from compiler.plan import StepBreakdown

    shares = StepBreakdown(compute=0.8123, exposed_tp=0.05, exposed_cp=0.0, exposed_ep=0.0, exposed_pp=0.0061,
                           pipeline_bubble=0.0412, exposed_dp=0.0304, lost=0.06)
    plan = hybrid_plan()
    plan = replace(plan, workloads=tuple(
        replace(w, estimate=replace(w.estimate, step_breakdown=shares)) if w.name == "llama-70b-pretrain" else w
        for w in plan.workloads))
    view = {w.name: w for w in views.build(plan).workloads}
    rows = [(t.label, t.share) for t in view["llama-70b-pretrain"].time_shares]
    assert [share for _, share in rows] == [0.8123, 0.05, 0.0061, 0.0412, 0.0304, 0.06]
    assert rows[0][0].startswith("Compute") and rows[-1][0].startswith("Lost")
    assert view["chat-70b"].time_shares == () and view["resnet50"].time_shares == ()
    # not also dumped raw among the estimate's figures
    assert all(e.label != "step_breakdown" for e in view["llama-70b-pretrain"].estimate)
    out = render_report(plan, catalog)
    md, html = out["report.md"], out["report.html"]
    section = md[md.index("### llama-70b-pretrain"):md.index("### resnet50")]
    assert "Where the time goes" in section
    assert "| Compute (at the GPU's base MFU) | 81.2% |" in section
    assert "| Pipeline bubble | 4.1% |" in section
    assert "| Lost: interruptions, restarts, checkpoint stalls | 6.0% |" in section
    assert "Expert-parallel" not in section
    tiny = views.TimeShare("Lost", 0.0001)
    assert tiny.text == "<0.1%" and views.TimeShare("x", 0.0412).text == "4.1%"
    assert md.count("Where the time goes") == 1
    assert html.count("Where the time goes") == 1
    assert "<td>Pipeline bubble</td><td class=\"n\">4.1%</td>" in html
    # the hand-made plan without a breakdown has no such section
    assert "Where the time goes" not in render_report(hybrid_plan(), catalog)["report.md"]
