"""The sweep's page (index.html): the scenarios side by side, as a table and three charts.

    page(rows, spec_name, base_version) -> str      templates/sweep/index.html.j2

Up to table.MAX_WORKLOAD_COLUMNS workloads, each workload's cost is a column of the scenarios
table. Past that (a 51-workload sweep's table ran off the screen), the scenarios table names each
scenario's largest changes against the base, as the terminal does, and the costs get a table of
their own (CostTable) in a box that scrolls by itself, its first column and header row sticky.

Charts (matplotlib through report.charts.render_svg: deterministic SVG inline in the page):
- cost per scenario, stacked by cost category;
- for each swept parameter, the total over its points with the band down to the proven bound
  (the optimum lies in the band: a curve that seems to rise where it should fall, within its
  band, is the solver's gap, not the model's);
- total against the cloud share of the spend, one labelled point per scenario.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from compiler.render.environment import money, percent, render_template
from compiler.report.charts import PALETTE, render_svg, usd_axis
from compiler.sweep.table import MAX_WORKLOAD_COLUMNS, Row, base_row, changes_text


@dataclass(frozen=True)
class RowView:
    scenario: str
    link: str              # the scenario's report, relative to the page ("" when it failed)
    status: str
    gap: str
    total: str
    cloud: str
    workloads: tuple[str, ...]   # cost per workload, in the page's column order (none past
                                 # MAX_WORKLOAD_COLUMNS: CostTable has them)
    changes: str           # largest changes against the base (only past MAX_WORKLOAD_COLUMNS)
    fleet: str             # GPUs by type
    sites: str             # GPUs by site
    message: str


@dataclass(frozen=True)
class CostTable:
    """Each workload's cost in each scenario with a plan, past MAX_WORKLOAD_COLUMNS workloads.

    Transposed (a row per workload, a column per scenario) when there are more workloads than
    scenarios: 50 workloads read down the page as a list, each row's few figures side by side,
    and the page grows downwards, which is how a page scrolls; 50 columns would leave all but a
    few out of sight at any time. Either way the table sits in its own scrolling box with its
    first column (the names) and header row sticky, for the sweep that is long both ways."""
    transposed: bool
    corner: str                              # the first column's header: "Workload" or "Scenario"
    columns: tuple[str, ...]                 # scenarios (transposed) or workloads
    rows: tuple[tuple[str, tuple[tuple[str, bool], ...]], ...]   # (name, (cost, differs from the base) per column)
    left_out: tuple[str, ...]                # failed scenarios: no plan, no costs
    base: str                                # the scenario the changes are against ("" if none)


def _cost_chart(table: Sequence[Row]) -> str:
    ok = [r for r in table if r.ok]
    categories = sorted({c for r in ok for c, v in r.by_category if v > 0})

    def draw(fig) -> None:
        ax = fig.subplots()
        names = [r.scenario for r in ok][::-1]
        left = [0.0] * len(names)
        for i, cat in enumerate(categories):
            values = [dict(r.by_category).get(cat, 0.0) for r in ok][::-1]
            ax.barh(names, values, left=left, color=PALETTE[i % len(PALETTE)], label=cat.replace("_", " "))
            left = [a + b for a, b in zip(left, values)]
        usd_axis(ax)
        ax.grid(axis="y", visible=False)
        ax.set_title("Total cost per scenario, by category", loc="left", fontsize=10)
        ax.legend(loc="lower right", fontsize=8, frameon=False)

    return render_svg("sweep-cost", (8.0, max(2.5, 1.0 + 0.3 * len(ok))), draw,
                      "Total cost per scenario, stacked by cost category")


def _fine_usd(ax) -> None:
    """Dollars to three significant digits on the y axis: a curve over a sweep often spans a few
    percent, which whole thousands would label '$4k, $4k, $4k'."""
    from matplotlib.ticker import FuncFormatter

    def fmt(v: float, _pos) -> str:
        for div, unit in ((1e6, "M"), (1e3, "k")):
            if abs(v) >= div:
                return f"${v / div:.3g}{unit}"
        return f"${v:.3g}"

    ax.yaxis.set_major_formatter(FuncFormatter(fmt))


def _curves(table: Sequence[Row]) -> list[str]:
    groups: dict[tuple[str, str], list[Row]] = {}
    for r in table:
        if r.ok and r.swept and r.point is not None:
            groups.setdefault((r.scenario.split("@", 1)[0], r.swept), []).append(r)
    out = []
    for k, ((base, swept), rs) in enumerate(sorted(groups.items())):
        rs = sorted(rs, key=lambda r: r.point)

        def draw(fig, rs=rs, base=base, swept=swept) -> None:
            ax = fig.subplots()
            x = [r.point for r in rs]
            y = [r.total_usd for r in rs]
            low = [r.total_usd * (1 - (r.gap or 0.0)) for r in rs]
            ax.fill_between(x, low, y, color=PALETTE[4], alpha=0.35, label="proven bound to plan")
            ax.plot(x, y, marker="o", color=PALETTE[0], label="plan")
            _fine_usd(ax)
            ax.set_xlabel(f"{base}: {swept}")
            ax.set_title(f"Total cost over {base}'s {swept}", loc="left", fontsize=10)
            ax.legend(loc="best", fontsize=8, frameon=False)

        out.append(render_svg(f"sweep-curve-{k}", (8.0, 3.2), draw,
                              f"Total cost of {base} over {swept}, with the proven bound"))
    return out


def _share_chart(table: Sequence[Row]) -> str:
    ok = [r for r in table if r.ok]

    def draw(fig) -> None:
        ax = fig.subplots()
        ax.scatter([r.cloud_share * 100 for r in ok], [r.total_usd for r in ok], color=PALETTE[5])
        for r in ok:
            ax.annotate(r.scenario, (r.cloud_share * 100, r.total_usd), xytext=(4, 2),
                        textcoords="offset points", fontsize=7, color="#444444")
        usd_axis(ax, "y")
        ax.set_xlabel("cloud share of the spend (%)")
        ax.set_xlim(-5, 105)
        ax.set_title("Total cost against the cloud's share", loc="left", fontsize=10)

    return render_svg("sweep-share", (8.0, 3.6), draw, "Total cost against the cloud share, per scenario")


@dataclass(frozen=True)
class PageView:
    spec_name: str
    catalog_version: str
    workloads: tuple[str, ...]   # the scenarios table's workload columns (none past MAX_WORKLOAD_COLUMNS)
    rows: tuple[RowView, ...]
    charts: tuple[str, ...]      # inline SVG
    failed: int
    costs: CostTable | None = None   # past MAX_WORKLOAD_COLUMNS workloads


def _cost_table(table: Sequence[Row], workloads: Sequence[str], base: Row | None) -> CostTable:
    ok = [r for r in table if r.ok]
    cost = {r.scenario: dict(r.by_workload) for r in ok}
    base_cost = {} if base is None else dict(base.by_workload)

    def cell(scenario: str, workload: str) -> tuple[str, bool]:
        """The cost, and whether it differs from the base's by a cent or more (as changes())."""
        mine = cost[scenario].get(workload)
        theirs = base_cost.get(workload)
        differs = base is not None and (
            (mine is None) != (theirs is None) or (mine is not None and round(abs(mine - theirs), 2) >= 0.01))
        return ("-" if mine is None else money(mine)), differs

    left_out = tuple(r.scenario for r in table if not r.ok)
    ref = "" if base is None else base.scenario
    if len(workloads) > len(ok):
        return CostTable(True, "Workload", tuple(r.scenario for r in ok),
                         tuple((w, tuple(cell(r.scenario, w) for r in ok)) for w in workloads), left_out, ref)
    return CostTable(False, "Scenario", tuple(workloads),
                     tuple((r.scenario, tuple(cell(r.scenario, w) for w in workloads)) for r in ok), left_out, ref)


def page(table: Sequence[Row], spec_name: str, catalog_version: str) -> str:
    workloads = tuple(sorted({n for r in table for n, _ in r.by_workload}))
    wide = len(workloads) > MAX_WORKLOAD_COLUMNS
    base = base_row(table) if wide else None
    columns = () if wide else workloads
    views = []
    for r in table:
        wl = dict(r.by_workload)
        views.append(RowView(
            scenario=r.scenario, link=f"{r.scenario}/out/report.html" if r.ok else "",
            status=r.status, gap="" if r.gap is None else percent(r.gap, digits=2),
            total="" if r.total_usd is None else money(r.total_usd),
            cloud="" if r.cloud_share is None else percent(r.cloud_share, digits=0),
            workloads=tuple(money(wl[w]) if w in wl else "-" for w in columns) if r.ok else ("",) * len(columns),
            changes=changes_text(r, base) if wide and r.ok else "",
            fleet=r.fleet_text, sites=r.sites_text, message=r.message))
    charts: list[str] = []
    if any(r.ok for r in table):
        charts = [_cost_chart(table), *_curves(table), _share_chart(table)]
    return render_template("sweep/index.html.j2", p=PageView(
        spec_name, catalog_version, columns, tuple(views), tuple(charts), sum(not r.ok for r in table),
        _cost_table(table, workloads, base) if wide else None))
