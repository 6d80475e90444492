"""The sweep's page (index.html): the scenarios side by side, as a table and three charts.

    page(rows, spec_name, base_version) -> str      templates/sweep/index.html.j2

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
from compiler.sweep.table import Row


@dataclass(frozen=True)
class RowView:
    scenario: str
    link: str              # the scenario's report, relative to the page ("" when it failed)
    status: str
    gap: str
    total: str
    cloud: str
    workloads: tuple[str, ...]   # cost per workload, in the page's column order
    fleet: str             # GPUs by type
    sites: str             # GPUs by site
    message: str


@dataclass(frozen=True)
class PageView:
    spec_name: str
    catalog_version: str
    workloads: tuple[str, ...]
    rows: tuple[RowView, ...]
    charts: tuple[str, ...]      # inline SVG
    failed: int


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


def page(table: Sequence[Row], spec_name: str, catalog_version: str) -> str:
    workloads = tuple(sorted({n for r in table for n, _ in r.by_workload}))
    views = []
    for r in table:
        wl = dict(r.by_workload)
        views.append(RowView(
            scenario=r.scenario, link=f"{r.scenario}/out/report.html" if r.ok else "",
            status=r.status, gap="" if r.gap is None else percent(r.gap, digits=2),
            total="" if r.total_usd is None else money(r.total_usd),
            cloud="" if r.cloud_share is None else percent(r.cloud_share, digits=0),
            workloads=tuple(money(wl[w]) if w in wl else "-" for w in workloads) if r.ok else ("",) * len(workloads),
            fleet=r.fleet_text, sites=r.sites_text, message=r.message))
    charts: list[str] = []
    if any(r.ok for r in table):
        charts = [_cost_chart(table), *_curves(table), _share_chart(table)]
    return render_template("sweep/index.html.j2", p=PageView(
        spec_name, catalog_version, workloads, tuple(views), tuple(charts), sum(not r.ok for r in table)))
