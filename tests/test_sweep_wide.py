"""The sweep's table and page at 50 workloads: readable in a 120-column terminal, and a page whose
wide table scrolls in its own box instead of running off the screen. A team's 51-workload sweep
printed a column per workload, squeezed to ellipses and empty cells.

The rows are built by hand (no compiles): 50 workloads whose base costs are 1000 + 37.5 x k,
and five scenarios, one of them failed. Every expected figure is worked out here from those
costs, not computed by the code under test."""

from __future__ import annotations

import csv
import io
import re
from html.parser import HTMLParser

import pytest
from rich.console import Console

from compiler.sweep.page import page
from compiler.sweep.table import (MAX_WORKLOAD_COLUMNS, Row, base_row, changes_text, render_table, short_usd,
                                  to_csv, to_json)

WORKLOADS = [f"serve-{k:03d}" for k in range(25)] + [f"train-{k:03d}" for k in range(25)]
BASE_COST = {w: 1000.0 + 37.5 * k for k, w in enumerate(WORKLOADS)}

# h100@0.8's changes against the base, by hand: seven of at least a cent (serve-007 and train-010
# tie at $1,200 and go by name), and one under a cent that is no change
H100_CHANGES = {"serve-002": 3100.0, "serve-007": 1200.0, "train-010": -1200.0, "serve-020": 900.0,
                "serve-001": 40.0, "train-020": 15.0, "train-000": -0.5, "train-005": 0.004}
H100_TEXT = "serve-002 +$3.1k, serve-007 +$1.2k, train-010 -$1.2k, +4 more"
STARVED = ("starved/spec.yaml:12:5: error[E303] at $.workloads[3]: no plan fits: the lab's 60 kW "
           "cannot power the L40S servers that workload serve-003 needs at 1000x the traffic")


def _row(name: str, changes: dict[str, float] | None = None, drop: tuple[str, ...] = (),
         costs: dict[str, float] | None = None) -> Row:
    base = BASE_COST if costs is None else costs
    cost = {w: c + (changes or {}).get(w, 0.0) for w, c in base.items() if w not in drop}
    total = sum(cost.values())
    return Row(name, "optimal", 0.0012, total, (("cloud_compute", 0.6 * total), ("onprem_capex", 0.4 * total)),
               tuple(sorted(cost.items())), (("H100", 64), ("L40S", 24)),
               (("aws-euw1", 40), ("gcp-euw4", 16), ("lab-fra1", 32)), 0.6)


def _failed(name: str, message: str = STARVED) -> Row:
    return Row(name, "infeasible", None, None, (), (), (), (), None, "", None, message)


SWEEP = (_row("base"), _row("h100@0.8", H100_CHANGES), _row("eu-traffic-doubled-for-the-assistant"),
         _row("fewer", drop=("train-024",)), _failed("starved"))


def _text(rows, width: int = 120, base: Row | None = None) -> str:
    console = Console(width=width, record=True, force_terminal=False)
    render_table(rows, console, base=base)
    return console.export_text()


def _body(text: str) -> list[list[str]]:
    """The table's body lines, each as its cells' text (stripped)."""
    lines = text.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("┡")) + 1
    end = next(k for k, line in enumerate(lines) if line.startswith("└"))
    return [[c.strip() for c in line.split("│")[1:-1]] for line in lines[start:end]]


# --- the changes, worked by hand --------------------------------------------------------------

def test_short_usd():
    assert [short_usd(v) for v in (0.42, 420, 999.4, 999.6, 3100, 9949, 9951, 12_345, 999_400, 999_600,
                                   1_400_000, 23_000_000)] == [
        "$0.42", "$420", "$999", "$1.0k", "$3.1k", "$9.9k", "$10k", "$12k", "$999k", "$1.0M", "$1.4M", "$23M"]
    assert short_usd(3100, signed=True) == "+$3.1k" and short_usd(-1200, signed=True) == "-$1.2k"
    assert short_usd(0.001, signed=True) == "$0.00"              # no sign on what shows as zero


def test_largest_changes_by_hand():
    base, h100, same, fewer, starved = SWEEP
    assert base_row(SWEEP) is base
    assert changes_text(h100, base) == H100_TEXT
    assert changes_text(base, base) == "base"
    assert changes_text(same, base) == "no change"
    # a removed workload changes by its whole cost: train-024's 1000 + 37.5 x 49
    assert changes_text(fewer, base) == "train-024 -$2.8k (removed)"
    assert changes_text(base, fewer) == "train-024 +$2.8k (added)"
    # two named, then the rest counted
    assert changes_text(h100, base, limit=2) == "serve-002 +$3.1k, serve-007 +$1.2k, +5 more"
    assert changes_text(starved, None) == "-"


def test_which_row_is_the_base():
    base, h100, _same, fewer, starved = SWEEP
    # the scenario named base (or baseline) wherever it is; else the first with a plan
    assert base_row((h100, fewer, base)) is base
    named = _row("baseline")
    assert base_row((starved, h100, named)) is named
    assert base_row((starved, fewer, h100)) is fewer
    assert base_row((starved,)) is None
    # the sweep's own compile of the spec as it is, where the caller has it
    spec = _row("base")
    assert base_row(SWEEP, spec) is spec
    assert base_row(SWEEP, _failed("base")) is base


# --- the terminal -----------------------------------------------------------------------------

def test_fifty_workloads_fit_a_120_column_terminal():
    text = _text(SWEEP)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 120
    # nothing squeezed away: no ellipsis, and every line of the table ends with its frame
    assert "…" not in text
    frame = [line.rstrip() for line in lines if line[:1] in "┏┃┡│└"]
    assert frame and all(line[-1] in "┓┃┩│┘" for line in frame), frame
    head = [c.strip() for c in lines[2].split("┃")[1:-1]]
    assert head == ["scenario", "status", "gap", "total", "cloud", "largest changes vs base", "GPUs / by site"]
    assert not any(w in text for w in WORKLOADS[11:19])          # no column per workload
    body = _body(text)
    # a row's first line has something in every cell: no run of empty placeholders (a row starts
    # where its status is: a status never wraps, a long scenario name does)
    firsts = [k for k, cells in enumerate(body) if cells[1]]
    assert [body[k][0] for k in firsts] == ["base", "h100@0.8", "eu-traffic-doubled-f", "fewer", "starved"]
    for k in firsts:
        assert all(body[k]), body[k]

    def cell(row: int, col: int) -> str:
        """A cell's text over its lines, joined with spaces."""
        end = firsts[row + 1] if row + 1 < len(firsts) else len(body)
        return " ".join(c[col] for c in body[firsts[row]:end] if c[col])

    # the changes read as the worked example, no name parted from its change by a line break
    assert cell(1, 5) == H100_TEXT
    for item in H100_TEXT.split(", "):
        assert any(item in c[5] for c in body), item
    assert cell(0, 5) == "base" and cell(2, 5) == "no change" and cell(3, 5) == "train-024 -$2.8k (removed)"
    assert cell(2, 0).replace(" ", "") == "eu-traffic-doubled-for-the-assistant"
    # the figures whole: the base's total is 1000 x 50 + 37.5 x (0 + ... + 49)
    assert cell(0, 3) == "$95,938" and cell(1, 3) == f"${95_937.5 + 3100 + 1200 - 1200 + 900 + 40 + 15 - 0.5:,.0f}"
    assert cell(0, 6) == "64 H100, 24 L40S aws-euw1 40, gcp-euw4 16, lab-fra1 32"
    # the failed scenario says why, whole, where the changes go; its figures are '-'
    assert body[firsts[4]][:5] == ["starved", "infeasible", "-", "-", "-"]
    assert cell(4, 5) == STARVED and cell(4, 6) == "-"
    caption = " ".join(lines[lines.index(next(x for x in lines if x.startswith("└"))) + 1:]).split()
    assert " ".join(caption) == ("50 workloads: each scenario's largest changes in cost are against scenario 'base'. "
                                 "scenarios.csv and scenarios.json have every workload's cost.")


def test_against_the_spec_as_it_is_when_the_caller_has_it():
    spec = _row("base", {"serve-002": -100.0})
    body = _body(_text(SWEEP, base=spec))
    assert body[0][5] == "serve-002 +$100"                       # the scenario named base, against it
    assert "against the spec as it is" in " ".join(_text(SWEEP, base=spec).split())


@pytest.mark.parametrize("width", [80, 100, 160])
def test_other_widths_fold_but_never_crop(width):
    text = _text(SWEEP, width)
    assert max(len(line) for line in text.splitlines()) <= width
    assert "…" not in text
    frame = [line.rstrip() for line in text.splitlines() if line[:1] in "┏┃┡│└"]
    assert all(line[-1] in "┓┃┩│┘" for line in frame)


def test_every_scenario_failed():
    text = _text((_failed("a"), _failed("b", "no plan within the node limit")), 120)
    assert "no plan within the node limit" in text
    # no workloads at all: the table as it always was


def test_past_the_limit_the_columns_give_way():
    few = {w: BASE_COST[w] for w in WORKLOADS[:MAX_WORKLOAD_COLUMNS]}
    text = _text((_row("base", costs=few), _row("up", {"serve-001": 500.0}, costs=few)), width=200)
    head = [c.strip() for c in text.splitlines()[2].split("┃")[1:-1]]
    assert head == ["scenario", "status", "gap", "total", "cloud", *few, "GPUs", "by site"]
    more = dict(few, **{WORKLOADS[MAX_WORKLOAD_COLUMNS]: 1.0})
    text = _text((_row("base", costs=more), _row("up", {"serve-001": 500.0}, costs=more)), width=200)
    head = [c.strip() for c in text.splitlines()[2].split("┃")[1:-1]]
    assert head == ["scenario", "status", "gap", "total", "cloud", "largest changes vs base", "GPUs / by site"]
    assert "serve-001 +$500" in text


# A three-workload sweep as the table printed it before the wide layout, byte for byte.
SMALL = (
    Row("base", "optimal", 0.0, 12345.6, (("cloud_compute", 1000.0), ("power", 200.0)),
        (("assistant", 8000.0), ("batch", 1200.0), ("tune-8b", 3145.6)), (("H100", 8), ("L40S", 8)),
        (("aws-use1", 8), ("lab-dc1", 8)), 0.62),
    Row("h100@0.8", "feasible", 0.0123, 11000.0, (("cloud_compute", 1000.0), ("power", 200.0)),
        (("assistant", 7000.0), ("tune-8b", 4000.0)), (("H100", 16),), (("aws-use1", 16),), 1.0,
        "prices[0].factor", 0.8),
    Row("starved", "infeasible", None, None, (), (), (), (), None, "", None,
        "starved/spec.yaml:3:1: error[E303] no plan fits the lab's power for workload assistant at this traffic"),
)
SMALL_TEXT = """\
Scenarios                                                                                                               
┏━━━━━━━━━━┳━━━━━━━━━━━━┳━━━━━━━┳━━━━━━━━━┳━━━━━━━┳━━━━━━━━━━━┳━━━━━━━━┳━━━━━━━━━┳━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━┓
┃ scenario ┃ status     ┃   gap ┃   total ┃ cloud ┃ assistant ┃  batch ┃ tune-8b ┃ GPUs             ┃ by site          ┃
┡━━━━━━━━━━╇━━━━━━━━━━━━╇━━━━━━━╇━━━━━━━━━╇━━━━━━━╇━━━━━━━━━━━╇━━━━━━━━╇━━━━━━━━━╇━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━┩
│ base     │ optimal    │ 0.00% │ $12,346 │   62% │    $8,000 │ $1,200 │  $3,146 │ 8 H100, 8 L40S   │ aws-use1 8,      │
│          │            │       │         │       │           │        │         │                  │ lab-dc1 8        │
│ h100@0.8 │ feasible   │ 1.23% │ $11,000 │  100% │    $7,000 │      - │  $4,000 │ 16 H100          │ aws-use1 16      │
│ starved  │ infeasible │       │         │       │           │        │         │ starved/spec.ya… │                  │
│          │            │       │         │       │           │        │         │ error[E303] no   │                  │
│          │            │       │         │       │           │        │         │ plan fits the    │                  │
│          │            │       │         │       │           │        │         │ lab's po         │                  │
└──────────┴────────────┴───────┴─────────┴───────┴───────────┴────────┴─────────┴──────────────────┴──────────────────┘
"""


def test_a_three_workload_sweep_prints_as_before():
    assert _text(SMALL) == SMALL_TEXT


# --- the machine outputs keep every workload --------------------------------------------------

def test_csv_and_json_keep_every_workload():
    doc = to_json(SWEEP)
    assert [len(r["cost_by_workload_usd"]) for r in doc] == [50, 50, 50, 49, 0]
    assert doc[1]["cost_by_workload_usd"]["serve-002"] == 1075.0 + 3100.0
    table = list(csv.DictReader(io.StringIO(to_csv(SWEEP), newline="")))
    assert [k for k in table[0] if k.startswith("workload:")] == [f"workload:{w}" for w in sorted(WORKLOADS)]
    assert table[3]["workload:train-024"] == "" and table[4]["message"] == STARVED


# --- the page ---------------------------------------------------------------------------------

class _Tree(HTMLParser):
    """Each element's tag, attributes and its ancestors' (tag, attributes), by id; and the text
    of the cells of each table, by its id."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, dict]] = []
        self.by_id: dict[str, tuple[dict, list[tuple[str, dict]]]] = {}
        self.tables: dict[str, list[list[str]]] = {}
        self._table: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.by_id[a["id"]] = (a, list(self.stack))
        if tag == "table":
            self._table = a.get("id", "")
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []
        if tag not in ("meta", "br", "img", "input", "link"):
            self.stack.append((tag, a))

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[self._table][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._table = None
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _tree(html: str) -> _Tree:
    t = _Tree()
    t.feed(html)
    return t


@pytest.fixture(scope="module")
def wide_page() -> str:
    return page(SWEEP, "eu-platform", "2026.11.1")


def _scrolls(tree: _Tree, html: str, table_id: str) -> None:
    """The table's parent is a box of class 'scroll', and the page's style scrolls that box."""
    _attrs, ancestors = tree.by_id[table_id]
    tag, attrs = ancestors[-1]
    assert tag == "div" and "scroll" in attrs.get("class", "").split(), ancestors[-1]
    assert re.search(r"\.scroll \{[^}]*overflow-x: auto", html)


def test_the_page_puts_fifty_workloads_in_a_box_that_scrolls(wide_page):
    tree = _tree(wide_page)
    _scrolls(tree, wide_page, "scenarios")
    _scrolls(tree, wide_page, "workload-costs")
    assert re.search(r"\.scroll\.costs \{[^}]*overflow: auto", wide_page)
    assert re.search(r"\.costs tbody th \{[^}]*position: sticky; left: 0", wide_page)
    box = tree.by_id["workload-costs"][1][-1][1]
    assert box["role"] == "region" and box["tabindex"] == "0" and box["aria-labelledby"] == "costs-title"
    # the scenarios table: no column per workload, the largest changes instead; the failed row
    # says why across the rest of the row
    scenarios = tree.tables["scenarios"]
    assert scenarios[0] == ["Scenario", "Status", "Gap", "Total", "Cloud share", "Largest changes vs base",
                            "GPUs by type", "GPUs by site"]
    assert [r[5] for r in scenarios[1:5]] == ["base", H100_TEXT, "no change", "train-024 -$2.8k (removed)"]
    assert scenarios[5] == ["starved", "infeasible", "", "", "", STARVED]
    assert 'colspan="3"' in wide_page
    # more workloads than scenarios: a row per workload, a column per scenario with a plan
    costs = tree.tables["workload-costs"]
    assert costs[0] == ["Workload", "base", "h100@0.8", "eu-traffic-doubled-for-the-assistant", "fewer"]
    assert [r[0] for r in costs[1:]] == sorted(WORKLOADS)
    by_name = {r[0]: r[1:] for r in costs[1:]}
    assert by_name["serve-002"] == ["$1,075", "$4,175", "$1,075", "$1,075"]
    assert by_name["train-024"] == ["$2,838", "$2,838", "$2,838", "-"]        # 1000 + 37.5 x 49, removed
    assert "Left out for want of a plan: starved." in wide_page
    # shaded where a cost differs from the base's: the worked changes, and the removed workload

    def shaded(workload: str) -> list[bool]:
        cells = re.search(rf'<tr><th scope="row">{workload}</th>(.*?)</tr>', wide_page).group(1)
        return ["changed" in c for c in re.findall(r'<td class="([^"]*)"', cells)]

    assert shaded("serve-002") == shaded("train-000") == [False, True, False, False]
    assert shaded("train-005") == shaded("serve-000") == [False] * 4          # under a cent: no change
    assert shaded("train-024") == [False, False, False, True]


def test_more_scenarios_than_workloads_keep_a_row_per_scenario():
    some = {w: BASE_COST[w] for w in WORKLOADS[:8]}
    rows = tuple(_row(f"s{k}", {"serve-000": 10.0 * k}, costs=some) for k in range(10))
    html = page(rows, "s", "v")
    tree = _tree(html)
    _scrolls(tree, html, "workload-costs")
    costs = tree.tables["workload-costs"]
    assert costs[0] == ["Scenario", *WORKLOADS[:8]]
    assert [r[0] for r in costs[1:]] == [f"s{k}" for k in range(10)]
    assert [r[1] for r in costs[1:]] == [f"${1000 + 10 * k:,}" for k in range(10)]
    assert [r[5] for r in tree.tables["scenarios"][1:3]] == ["base", "serve-000 +$10"]   # s0 is the base


def test_a_small_sweep_keeps_its_workload_columns_on_the_page():
    html = page(SMALL, "s", "v")
    tree = _tree(html)
    assert "workload-costs" not in tree.by_id
    _scrolls(tree, html, "scenarios")
    assert tree.tables["scenarios"][0] == ["Scenario", "Status", "Gap", "Total", "Cloud share", "assistant",
                                           "batch", "tune-8b", "GPUs by type", "GPUs by site"]
    assert tree.tables["scenarios"][2][5:8] == ["$7,000", "-", "$4,000"]


# --- the page, in a real browser ----------------------------------------------------------

from test_report_browser import browser  # noqa: E402,F401  (the headless Chromium fixture)


@pytest.mark.slow
def test_the_page_never_scrolls_sideways_and_its_names_stay_put(browser, tmp_path):  # noqa: F811
    """45 scenarios and 50 workloads: long both ways (a row per workload, 44 scenario columns).
    The page keeps its width; the cost box scrolls, and the workload names stay at its left edge
    and the scenario names at its top while it does."""
    rows = SWEEP + tuple(_row(f"price@{k}", {"serve-000": float(k)}) for k in range(40))
    path = tmp_path / "index.html"
    path.write_text(page(rows, "eu-platform", "2026.11.1"), encoding="utf-8")
    browser.set_window_size(1280, 900)
    browser.get(path.as_uri())
    sizes = browser.execute_script(
        "var d = document.documentElement, box = document.querySelector('#workload-costs').parentElement;"
        "return [d.scrollWidth, d.clientWidth, box.scrollWidth, box.clientWidth, box.scrollHeight, box.clientHeight];")
    page_w, view_w, box_w, box_view, box_h, box_view_h = sizes
    assert page_w <= view_w, sizes                   # the page does not run off the screen
    assert box_w > box_view and box_h > box_view_h, sizes    # the box scrolls, both ways
    moved = browser.execute_script(
        "var box = document.querySelector('#workload-costs').parentElement;"
        "box.scrollLeft = 600; box.scrollTop = 400;"
        "var b = box.getBoundingClientRect(), name = box.querySelector('tbody tr:nth-child(20) th'),"
        "    head = box.querySelector('thead th:nth-child(5)');"
        "return [b.left, b.top, name.getBoundingClientRect().left, head.getBoundingClientRect().top,"
        "        box.scrollLeft, box.scrollTop, name.textContent];")
    left, top, name_left, head_top, scrolled_x, scrolled_y, name = moved
    assert scrolled_x > 0 and scrolled_y > 0, moved
    assert name == sorted(WORKLOADS)[19]
    assert abs(name_left - left) <= 2 and abs(head_top - top) <= 2, moved
    errors = [e for e in browser.get_log("browser") if e.get("level") in ("SEVERE", "ERROR")]
    assert errors == []
