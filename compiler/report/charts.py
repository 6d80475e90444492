"""The report's charts: matplotlib (Agg, no pyplot state) rendered to inline SVG text.

Deterministic by construction: a fixed salt for the ids matplotlib hashes, no date or
creator metadata, text kept as <text> in DejaVu Sans (ships with matplotlib), and every
id prefixed with the chart's name so several charts can share one HTML page.
matplotlib is imported inside `_render` so the CLI starts fast.
"""

from __future__ import annotations

import io
import re
from typing import Callable, Sequence

from compiler.plan import UNDATED, Calendar
from compiler.report.views import CostRow, FleetView, UtilizationRow

# Okabe-Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")

_RC = {
    "svg.fonttype": "none",
    "font.family": "DejaVu Sans",
    "font.size": 9.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
    "svg.image_inline": True,
}


def _render(name: str, size: tuple[float, float], draw: Callable, label: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    with matplotlib.rc_context({**_RC, "svg.hashsalt": f"infra-compile-{name}"}):
        fig = Figure(figsize=size, dpi=100, layout="constrained")
        draw(fig)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None,
                                                "Type": None})
    return _inline(buf.getvalue(), name, label)


def _inline(svg: str, name: str, label: str) -> str:
    """Make a standalone SVG file fit inside HTML: no prolog, no metadata, unique ids."""
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, flags=re.S)
    svg = re.sub(r'id="([^"]+)"', lambda m: f'id="{name}-{m.group(1)}"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{name}-{m.group(1)})", svg)
    svg = re.sub(r'href="#([^"]+)"', lambda m: f'href="#{name}-{m.group(1)}"', svg)
    svg = svg.replace("<svg ", f'<svg class="chart" role="img" aria-label="{_attr(label)}" ', 1)
    return svg.rstrip() + "\n"


def render_svg(name: str, size: tuple[float, float], draw: Callable, label: str) -> str:
    """A chart drawn by `draw(figure)` as inline SVG, with the report's style and determinism
    (the sweep's page draws its charts through this too)."""
    return _render(name, size, draw, label)


def usd_axis(ax, axis: str = "x") -> None:
    _usd_axis(ax, axis)


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def _usd_axis(ax, axis: str = "x") -> None:
    from matplotlib.ticker import FuncFormatter

    def fmt(v: float, _pos) -> str:
        if abs(v) >= 1e6:
            return f"${v / 1e6:,.1f}M"
        if abs(v) >= 1e3:
            return f"${v / 1e3:,.0f}k"
        return f"${v:,.0f}"

    (ax.xaxis if axis == "x" else ax.yaxis).set_major_formatter(FuncFormatter(fmt))


# The most month labels a dated axis carries (it labels every 1, 2, 3, 6 or 12 months).
MONTH_TICKS = 12


def _month_axis(ax, months: int, calendar: Calendar) -> None:
    """The x axis of a month-by-month chart: undated, matplotlib's numbered ticks under 'month
    of the horizon'; dated, calendar months ('2027-04') on the first month of each quarter,
    half-year or year, as many as fit (MONTH_TICKS)."""
    if not calendar.dated:
        ax.set_xlabel("month of the horizon")
        return
    step = next((s for s in (1, 2, 3, 6) if months <= s * MONTH_TICKS), 12)
    first = calendar.index(calendar.name(0)[:4] + "-01")      # January of the start's year
    ticks = [m for m in range(months) if (m - first) % step == 0] or [0]
    ax.set_xticks(ticks, [calendar.name(m) for m in ticks], rotation=45, ha="right", fontsize=8)
    ax.set_xlabel("month")


def _bars(ax, rows: Sequence[CostRow], title: str, color: str) -> None:
    labels = [r.label.replace("_", " ") for r in rows][::-1]
    values = [r.usd for r in rows][::-1]
    ax.barh(labels, values, color=color)
    ax.set_title(title, loc="left", fontsize=10)
    _usd_axis(ax)
    ax.grid(axis="y", visible=False)
    for y, (v, r) in enumerate(zip(values, list(rows)[::-1])):
        ax.annotate(f"{r.share * 100:.1f}%", (v, y), xytext=(3, 0), textcoords="offset points",
                    va="center", fontsize=8, color="#444444")
    ax.margins(x=0.18)


def cost_chart(by_category: Sequence[CostRow], by_site: Sequence[CostRow],
               by_workload: Sequence[CostRow]) -> str:
    """Where the money goes: by category, by site and by workload (horizontal bars)."""
    groups = [(rows, title, PALETTE[i]) for i, (rows, title) in enumerate(
        ((by_category, "By category"), (by_site, "By site"), (by_workload, "By workload"))) if rows]
    height = 1.2 + 0.28 * sum(len(r) for r, _, _ in groups)

    def draw(fig) -> None:
        axes = fig.subplots(len(groups), 1, squeeze=False,
                            height_ratios=[max(1, len(r)) for r, _, _ in groups])
        for ax, (rows, title, color) in zip(axes[:, 0], groups):
            _bars(ax, rows, title, color)

    return _render("cost", (8.0, max(2.5, height)), draw, "Cost breakdown by category, site and workload")


def fleet_chart(fleet: FleetView) -> str:
    """GPUs in use per site, month by month (stacked bars)."""
    months = list(range(len(fleet.monthly_gpus[0]) if fleet.monthly_gpus else 0))

    def draw(fig) -> None:
        ax = fig.subplots()
        bottom = [0] * len(months)
        for i, (site, series) in enumerate(zip(fleet.sites, fleet.monthly_gpus)):
            ax.bar(months, series, bottom=bottom, width=0.85, label=site,
                   color=PALETTE[i % len(PALETTE)])
            bottom = [b + s for b, s in zip(bottom, series)]
        _month_axis(ax, len(months), fleet.calendar)
        ax.set_ylabel("GPUs in use")
        ax.set_title("Fleet per site, month by month", loc="left", fontsize=10)
        ax.grid(axis="x", visible=False)
        if fleet.sites:
            ax.legend(loc="upper right", frameon=False)

    return _render("fleet", (8.0, 3.2), draw, "GPUs in use per site, month by month")


def utilization_chart(rows: Sequence[UtilizationRow], calendar: Calendar = UNDATED) -> str:
    """Utilization of every pool over the horizon; the gap below 100% is idle, paid-for GPUs."""
    months = max((len(r.series) for r in rows), default=0)

    def draw(fig) -> None:
        ax = fig.subplots()
        for i, r in enumerate(rows):
            if not r.series:
                continue
            # months a cloud pool does not run are gaps, not idle capacity
            ys = [u * 100 if g > 0 else float("nan")
                  for u, g in zip(r.series, r.provided or (1,) * len(r.series))]
            ax.step(range(len(ys)), ys, where="mid", label=f"{r.pool}: mean {r.mean * 100:.0f}%",
                    color=PALETTE[i % len(PALETTE)], linewidth=1.6)
        ax.set_ylim(0, 105)
        ax.set_ylabel("GPUs busy / GPUs provided (%)")
        _month_axis(ax, months, calendar)
        ax.set_title("GPU utilization per pool (idle GPUs are money)", loc="left", fontsize=10)
        if any(r.series for r in rows):
            ax.legend(loc="lower right", frameon=True, framealpha=0.9, fontsize=8)

    return _render("utilization", (8.0, 3.4), draw, "GPU utilization of every pool over the horizon")
