"""No text from a plan can rewrite the Markdown the compiler writes: RUNBOOK.md, report.md and the
`diff --format markdown` comment.

Every interpolated string of a Markdown template is escaped where it is rendered (the Markdown
environment's finalize, compiler/render/environment.py), whatever field it is in. The oracle is a
real Markdown parser (markdown-it-py, CommonMark with GitHub's tables): the files rendered from
plans whose names, solver status, price date and source titles hold newlines, HTML, comments,
headings, pipes, links, ESC and right-to-left overrides parse to the same blocks (headings,
tables and their rows, lists) as the same plans with plain names, with no HTML token, no link
or image the template did not write, and no control or bidirectional character in the text.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from markdown_it import MarkdownIt

from compiler.catalog import load_catalog
from compiler.diagnostics import UNPRINTABLE
from compiler.diff import diff_plans
from compiler.diff_comment import render_comment
from compiler.render import render
from compiler.render.environment import md_cell, md_code, md_text, render_template
from compiler.report import views
from plan_fixtures import doubled_inference_plan, hybrid_plan

HOSTILE = [
    "line1\nline2",
    "a\r\n# injected heading",
    "# heading",
    "<script>alert(1)</script>",
    "<!-- the rest is hidden",
    "<img src=x onerror=alert(1)>",
    "a | b | c",
    "[click](https://evil.example)",
    "![pixel](https://evil.example/p.png)",
    "[ref]: https://evil.example",
    "`code` and ``more``",
    "> quoted",
    "\x1b[31mred\x1b[0m",
    "\u202eevil\u202c",
    "&#8238;&lt;b&gt;",
    "tail backslash \\",
    "\\| escaped pipe",
    "<https://evil.example>",
    "\u2028separated\u2029",
]
# All of it in one value, as a name.
MIXED = "x\n# H <script>y</script> <!-- | [l](u) `c` \x1b \u202e"


def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table")


def _tokens(text: str):
    """Every token, inline children included."""
    out = []
    for t in _parser().parse(text):
        out.append(t)
        out.extend(t.children or ())
    return out


def _shape(text: str) -> list[tuple]:
    """What the document is made of, block by block: each heading's level, each table's rows and
    columns, each list's items; the text inside is left out."""
    shape, rows, cols = [], 0, 0
    for t in _parser().parse(text):
        if t.type == "heading_open":
            shape.append(("heading", t.tag))
        elif t.type == "table_open":
            rows, cols = 0, 0
        elif t.type == "tr_open":
            rows, cols = rows + 1, 0
        elif t.type in ("th_open", "td_open"):
            cols += 1
        elif t.type == "tr_close":
            shape.append(("row", cols))
        elif t.type == "table_close":
            shape.append(("table", rows))
        elif t.type in ("bullet_list_open", "ordered_list_open", "blockquote_open", "fence", "hr"):
            shape.append((t.type,))
    return shape


def _links(text: str) -> list[str]:
    return sorted(t.attrGet("href") or t.attrGet("src") or "" for t in _tokens(text)
                  if t.type in ("link_open", "image"))


def assert_inert(hostile: str, plain: str) -> None:
    """`hostile` (rendered from hostile names) has the shape of `plain` (the same with plain
    names) and nothing the names could have made."""
    html = [t.content for t in _tokens(hostile) if t.type in ("html_block", "html_inline")]
    assert html == []
    assert _links(hostile) == _links(plain)
    bad = sorted({c for c in UNPRINTABLE.findall(hostile) if c != "\n"})
    assert bad == [], [hex(ord(c)) for c in bad]
    assert _shape(hostile) == _shape(plain)


# --- the filters alone -------------------------------------------------------------------------

@pytest.mark.parametrize("text", HOSTILE + [MIXED])
def test_a_table_cell_stays_one_cell(text):
    table = "| A | B |\n| --- | --- |\n| {} | z |\n"
    assert_inert(table.format(md_cell(text)), table.format("plain"))


@pytest.mark.parametrize("text", HOSTILE + [MIXED])
def test_a_heading_and_a_line_start_stay_what_they_are(text):
    doc = "### {} (inference)\n\n{}\n\n- {}\n"
    assert_inert(doc.format(md_text(text), md_text(text), md_text(text)), doc.format("a", "b", "c"))


@pytest.mark.parametrize("text", HOSTILE + [MIXED])
def test_a_code_span_holds_the_text(text):
    doc = "| A | B |\n| --- | --- |\n| `{}` | z |\n\nSpec `{}` here.\n"
    out = doc.format(md_code(text), md_code(text))
    assert_inert(out, doc.format("a", "b"))
    spans = [t.content for t in _tokens(out) if t.type == "code_inline"]
    assert len(spans) == 2                     # each stays one code span: no backtick closes it early


def test_plain_text_is_left_as_it_is():
    for text in ("llama-70b-pretrain", "aws-use1 p5.48xlarge (reserved_1y)", "<0.1%", "0 -> 4 nodes",
                 "dgx-h100-own[01-07]", "+$1,200 (+3.0%)", "2027-01..2027-03", "a < b", "C:\\dir"):
        assert md_text(text) == text


def test_the_markdown_environment_escapes_a_field_no_filter_names():
    # report.md.j2 prints `r.solver.status` with no filter: the environment escapes it anyway
    plan = hybrid_plan()
    plain = _report(plan).split("## Solver\n", 1)[1]
    for text in HOSTILE:
        hostile = _report(replace(plan, solver=replace(plan.solver, status=text))).split("## Solver\n", 1)[1]
        assert_inert(hostile, plain)


# --- whole files from hostile plans ------------------------------------------------------------

def _hostile_plan(plan, text: str):
    """The plan with `text` in every name a reader of plan.json could be handed: the spec's, each
    site's and workload's, the solver status and the price date."""
    sites = {s.name: f"{s.name} {text}" for s in plan.sites}
    works = {w.name: f"{w.name} {text}" for w in plan.workloads}
    return replace(
        plan, spec_name=f"{plan.spec_name} {text}", prices_as_of=f"2026-11-01 {text}",
        solver=replace(plan.solver, status=f"optimal {text}"),
        sites=tuple(replace(s, name=sites[s.name]) for s in plan.sites),
        pools=tuple(replace(p, site=sites[p.site]) for p in plan.pools),
        workloads=tuple(replace(w, name=works[w.name],
                                placements=tuple(replace(p, site=sites[p.site]) for p in w.placements))
                        for w in plan.workloads),
        storage=tuple(replace(s, site=sites.get(s.site, s.site)) for s in plan.storage),
        cost_by_site_usd=tuple(replace(b, site=sites.get(b.site, b.site)) for b in plan.cost_by_site_usd))


def _report(plan, baseline=None, source: str = "") -> str:
    catalog = load_catalog()
    view = views.build(plan, catalog, baseline)
    if source:
        view = replace(view, risk=replace(view.risk, threshold_source=source))
    return render_template("report/report.md.j2", r=view)


@pytest.mark.parametrize("text", [MIXED, "\n# heading\n<!--", "<script>x</script>|\u202e\x1b"])
def test_report_md_of_a_hostile_plan_has_the_shape_of_a_plain_one(text):
    plain = _report(hybrid_plan(), source="Catalog source (https://example.org, as of 2026-11-01)")
    hostile = _report(_hostile_plan(hybrid_plan(), text), source=f"Overlay title {text}")
    assert_inert(hostile, plain)


@pytest.mark.parametrize("text", [MIXED, "\n# heading\n<!--"])
def test_report_md_of_a_hostile_replan_has_the_shape_of_a_plain_one(text):
    base, head = hybrid_plan(), doubled_inference_plan()
    plain = _report(head, base)
    hostile = _report(_hostile_plan(head, text), _hostile_plan(base, text))
    assert_inert(hostile, plain)


@pytest.mark.parametrize("text", [MIXED, "\n# heading\n<!--", "|\n|"])
def test_the_diff_comment_of_hostile_plans_has_the_shape_of_a_plain_one(text):
    plain = render_comment(diff_plans(hybrid_plan(), doubled_inference_plan()), threshold=0.05)
    hostile = render_comment(diff_plans(_hostile_plan(hybrid_plan(), text),
                                        _hostile_plan(doubled_inference_plan(), text)), threshold=0.05)
    assert_inert(hostile, plain)
    # an unclosed comment hides nothing: the last table is still there, whole
    assert _shape(hostile)[-1] == _shape(plain)[-1]


def _runbook(plan, baseline=None) -> str:
    return render(plan, load_catalog(), baseline)["RUNBOOK.md"]


@pytest.mark.parametrize("text", [MIXED, "\n# heading\n<!--"])
def test_runbook_of_a_hostile_replan_has_the_shape_of_a_plain_one(text):
    # The renderer refuses site and workload names outside the spec's pattern (E701), and the
    # plan's own name is the spec's (validated); the baseline's name, and either plan's price
    # date and solver status, reach RUNBOOK.md as the file holds them.
    base, head = hybrid_plan(), doubled_inference_plan()

    def named(p, name: bool):
        return replace(p, spec_name=f"{p.spec_name} {text}" if name else p.spec_name,
                       solver=replace(p.solver, status=text), prices_as_of=text)

    plain = _runbook(head, base)
    hostile = _runbook(named(head, False), named(base, True))
    assert "acme-ml-platform x" in hostile or "# heading" in hostile    # the baseline is named
    assert_inert(hostile, plain)
    assert re.search(r"^# Runbook: ", hostile, re.M)
