"""On-prem sites: onprem/<site>/bom.csv, the bill of materials to buy."""

from __future__ import annotations

from compiler.catalog.model import Catalog
from compiler.render.environment import render_template
from compiler.render.views import SiteView, bom_lines


def render_site(site: SiteView, catalog: Catalog) -> dict[str, str]:
    lines = bom_lines(site, catalog)
    total = sum(line.total_price_usd for line in lines)
    return {f"onprem/{site.name}/bom.csv": render_template("onprem/bom.csv.j2", site=site,
                                                           lines=lines, total=total)}
