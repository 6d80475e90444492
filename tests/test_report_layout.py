"""report.html's layout in a real browser: nothing overlaps, overflows the page or is clipped.

The report of tests/fixtures/eu-layout.yaml (three EU cloud regions and an owned data centre),
compiled in-process, is opened in headless Chromium (tests/test_report_browser.py's `browser`)
at window widths of 1400 and 1920 px. The page reports the box (getBoundingClientRect) of every
visible block that holds content: the summary cards, headings, paragraphs, list items, table
cells, chart SVGs and figure captions. Then:

- no two of them intersect unless one holds the other: cells of tables side by side in a
  two-column block (.grid2), a table and the heading or caption next to it;
- none extends past the viewport or out of <main>, and the page does not scroll sideways
  (document.documentElement.scrollWidth <= its clientWidth); boxes inside a container made to
  scroll sideways (.scroll) may run past its edge, and are reached by scrolling it;
- no cell, heading or paragraph clips its text (scrollWidth <= clientWidth) unless it scrolls.

The checks are plain functions of the boxes, tested on planted ones below, so a layout that
breaks shows which elements and by how many pixels. They found the two-column blocks laid out
as a grid of equal columns: a table wider than its column (the 7-column commitments after the
horizon) ran under the Storage table beside it; they are now wrapping flex rows (report.css).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from test_report_browser import CHROMIUM, browser  # noqa: F401  (the fixture, reused)

SPEC = Path(__file__).resolve().parent / "fixtures" / "eu-layout.yaml"
WIDTHS = (1400, 1920)
SLACK = 0.5     # px: subpixel layout puts adjacent cells' edges a fraction apart either way

# Every visible block that holds content, and for each: its box in page coordinates, the
# collected elements that hold it (never an overlap with those), whether an ancestor is made to
# scroll sideways, and its own scroll and client widths with its overflow-x (a clipped text
# shows as scrollWidth > clientWidth).
MEASURE = """
var SELECTOR = ".kpi, h1, h2, h3, p, li, th, td, svg.chart, figcaption";
var main = document.querySelector("main");
function page(r) { return {x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height}; }
function scroller(el) {
  for (var a = el.parentElement; a && a !== main; a = a.parentElement) {
    var o = getComputedStyle(a).overflowX;
    if (o === "auto" || o === "scroll") return a;
  }
  return null;
}
function label(el) {
  var cls = typeof el.className === "string" && el.className ? "." + el.className.trim().split(/\\s+/).join(".") : "";
  var sec = el.closest("section[id]");
  var text = (el.getAttribute("aria-label") || el.textContent || "").replace(/\\s+/g, " ").trim().slice(0, 50);
  return (sec ? "#" + sec.id + " " : "") + el.tagName.toLowerCase() + cls + " '" + text + "'";
}
var kept = [], index = new Map();
main.querySelectorAll(SELECTOR).forEach(function (el) {
  var r = el.getBoundingClientRect(), s = getComputedStyle(el);
  if (r.width <= 0 || r.height <= 0 || s.visibility === "hidden" || s.display === "none") return;
  index.set(el, kept.length);
  kept.push(el);
});
var root = document.documentElement;
return {
  viewport: root.clientWidth, innerWidth: innerWidth, pageWidth: root.scrollWidth,
  main: page(main.getBoundingClientRect()),
  boxes: kept.map(function (el) {
    var box = page(el.getBoundingClientRect()), holders = [], s = scroller(el);
    for (var a = el.parentElement; a; a = a.parentElement) if (index.has(a)) holders.push(index.get(a));
    box.name = label(el);
    box.tag = el.tagName.toLowerCase();
    box.holders = holders;
    box.scrolls = s !== null;
    box.scrollWidth = el.scrollWidth;
    box.clientWidth = el.clientWidth;
    box.overflowX = getComputedStyle(el).overflowX;
    return box;
  }),
};
"""


def overlaps(boxes, slack: float = SLACK):
    """Pairs of boxes that intersect by more than `slack` px both across and down, neither
    holding the other: [(name_a, name_b, across, down)]. A box is a dict with x, y, w, h, name
    and optionally holders (indices into `boxes` of the boxes that contain it)."""
    order = sorted(range(len(boxes)), key=lambda i: boxes[i]["y"])
    found = []
    for k, i in enumerate(order):
        a = boxes[i]
        for j in order[k + 1:]:
            b = boxes[j]
            if b["y"] >= a["y"] + a["h"] - slack:
                break                       # sorted by top: no later box reaches into a
            if i in b.get("holders", ()) or j in a.get("holders", ()):
                continue
            across = min(a["x"] + a["w"], b["x"] + b["w"]) - max(a["x"], b["x"])
            down = min(a["y"] + a["h"], b["y"] + b["h"]) - max(a["y"], b["y"])
            if across > slack and down > slack:
                found.append((a["name"], b["name"], round(across, 1), round(down, 1)))
    return found


def outside(boxes, left: float, right: float, slack: float = SLACK):
    """Boxes that reach left of `left` or right of `right`: [(name, box left, box right)]. A box
    inside a container made to scroll sideways (`scrolls`) is left out: it may run past the edge
    by design and is reached by scrolling that container, which the page's own width bounds."""
    return [(b["name"], round(b["x"], 1), round(b["x"] + b["w"], 1)) for b in boxes
            if not b.get("scrolls") and (b["x"] < left - slack or b["x"] + b["w"] > right + slack)]


def clipped(boxes):
    """Boxes whose content is wider than they are and not made to scroll: [(name, scrollWidth,
    clientWidth)]. SVGs draw to their viewBox and report no scroll width of their own."""
    return [(b["name"], b["scrollWidth"], b["clientWidth"]) for b in boxes
            if b["tag"] != "svg" and b["overflowX"] not in ("auto", "scroll")
            and b["scrollWidth"] > b["clientWidth"] + 1]


def _box(name, x, y, w, h, **more):
    return {"name": name, "x": x, "y": y, "w": w, "h": h, "tag": "td", **more}


def test_overlaps_finds_planted_intersections_only():
    boxes = [
        _box("left cell", 0, 0, 100, 30),
        _box("right cell", 100, 0, 100, 30),         # shares an edge with the left cell: no overlap
        _box("below", 0, 30.3, 200, 20),            # 0.3 px into nothing: apart, edges touch
        _box("runs into right", 150, 10, 80, 10),    # reaches 50 px into "right cell"
        _box("far below", 500, 400, 10, 10),
        _box("section", 0, 300, 400, 200),
        _box("in section", 10, 310, 50, 50, holders=[5]),   # held by "section": never an overlap
        _box("hairline", 199.6, 0, 10, 8),           # 0.4 px into "right cell": within the slack
    ]
    assert sorted(overlaps(boxes)) == [("right cell", "runs into right", 50, 10)]
    assert sorted(overlaps(boxes, slack=0.1)) == [("right cell", "hairline", 0.4, 8),
                                                  ("right cell", "runs into right", 50, 10)]
    # order in the list does not matter: a box that starts higher is found from either side
    assert overlaps(list(reversed(boxes[:4]))) == [("right cell", "runs into right", 50, 10)]
    assert overlaps([_box("a", 0, 0, 10, 100), _box("b", 5, 90, 10, 10)]) == [("a", "b", 5, 10)]
    assert overlaps([]) == []


def test_outside_and_clipped_on_planted_boxes():
    boxes = [
        _box("fits", 100, 0, 800, 10),
        _box("up to the edge", 600, 0, 400.4, 10),
        _box("past the right edge", 600, 20, 401, 10),
        _box("left of the page", -3, 40, 50, 10),
        _box("scrolled away inside .scroll", 950, 0, 100, 10, scrolls=True),   # reached by scrolling
    ]
    assert outside(boxes, 0, 1000) == [("past the right edge", 600, 1001), ("left of the page", -3, 47)]
    assert outside(boxes, 100, 900) == [("up to the edge", 600, 1000.4), ("past the right edge", 600, 1001),
                                        ("left of the page", -3, 47)]
    cells = [_box("fits", 0, 0, 10, 10, scrollWidth=80, clientWidth=80, overflowX="visible"),
             _box("spills", 0, 0, 10, 10, scrollWidth=95, clientWidth=80, overflowX="visible"),
             _box("hidden", 0, 0, 10, 10, scrollWidth=95, clientWidth=80, overflowX="hidden"),
             _box("scrolls", 0, 0, 10, 10, scrollWidth=95, clientWidth=80, overflowX="auto"),
             _box("rounding", 0, 0, 10, 10, scrollWidth=81, clientWidth=80, overflowX="visible"),
             {**_box("chart", 0, 0, 10, 10, scrollWidth=0, clientWidth=0, overflowX="visible"), "tag": "svg"}]
    assert clipped(cells) == [("spills", 95, 80), ("hidden", 95, 80)]


@pytest.fixture(scope="module")
def eu_report(tmp_path_factory):
    from compiler import pipeline

    result = pipeline.compile_spec(SPEC)
    page = tmp_path_factory.mktemp("layout") / "report.html"
    page.write_text(result.artifacts["report.html"], encoding="utf-8")
    return page


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is absent (apt-get install chromium chromium-driver)")
@pytest.mark.parametrize("width", WIDTHS)
def test_report_blocks_do_not_overlap_or_overflow(browser, eu_report, width):  # noqa: F811
    browser.set_window_size(width, 1000)
    browser.get(eu_report.as_uri())
    m = browser.execute_script(MEASURE)
    assert m["innerWidth"] == width, f"the window is {m['innerWidth']} px wide, not {width}"
    boxes = m["boxes"]
    tags = {t: sum(b["tag"] == t for b in boxes) for t in {b["tag"] for b in boxes}}
    # the page is the one meant: its four sites, and every kind of block measured
    text = browser.execute_script("return document.querySelector('#design table').textContent;")
    assert all(site in text for site in ("aws-fra", "aws-sto", "gcp-ams", "par-dc1")), text
    assert tags.get("td", 0) > 300 and tags.get("th", 0) > 100, tags
    assert tags.get("svg") == 3 and tags.get("figcaption") == 3 and tags.get("div") == 4, tags  # charts, .kpi
    assert min(tags.get(t, 0) for t in ("h1", "h2", "h3", "p", "li")) >= 1, tags

    problems = {
        "overlapping (a, b, px across, px down)": overlaps(boxes),
        "past the viewport (box left, box right)": outside(boxes, 0, m["viewport"]),
        "out of <main> (box left, box right)": outside(boxes, m["main"]["x"], m["main"]["x"] + m["main"]["w"]),
        "clipped text (scrollWidth, clientWidth)": clipped(boxes),
    }
    assert not any(problems.values()), "\n".join(
        f"{what}: {len(found)}, first: {found[:5]}" for what, found in problems.items() if found)
    assert m["pageWidth"] <= m["viewport"], f"the page scrolls sideways: {m['pageWidth']} > {m['viewport']} px"
