"""The design-review report: report.md and a self-contained report.html.

    render_report(plan, catalog, baseline=None) -> {"report.md": ..., "report.html": ...}

Views (views.py) are computed once from the Plan; charts (charts.py) are inline SVG;
both files come from templates/report/ through THE Jinja environment. A re-plan's baseline
(the plan before it) adds what changes against it (replan.py).
"""

from __future__ import annotations

from compiler.catalog.model import Catalog
from compiler.plan import Plan


def render_report(plan: Plan, catalog: Catalog, baseline: Plan | None = None) -> dict[str, str]:
    from compiler.render.environment import render_template
    from compiler.report import charts, views

    view = views.build(plan, catalog, baseline)
    svg = {
        "cost": charts.cost_chart(view.by_category, view.by_site, view.by_workload),
        "fleet": charts.fleet_chart(view.fleet),
        "utilization": charts.utilization_chart(view.utilization, view.calendar),
    }
    return {
        "report.md": render_template("report/report.md.j2", r=view),
        "report.html": render_template("report/report.html.j2", r=view, charts=svg),
    }
