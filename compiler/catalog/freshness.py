"""How old the prices a spec is planned with are, and which prices they were.

A plan is only as cheap as the prices it was solved with: plan.json names the oldest `as_of` of
the prices its spec's sites could be planned with and a digest of them, so `diff` can tell two
plans priced differently (an overlay refreshed between them) even where the catalog's version is
the same, and a compile can warn when those prices are older than a team accepts.

"The prices a spec could be planned with": every instance price row in the region of each of its
cloud sites (the candidates the solver weighs, whichever it picks), and every on-prem node model's
price where the spec has a site of its own that may hold it (an edge location its box only, a
data centre every model but the edge boxes). Egress and storage prices are not counted: they follow
the instance lists' updates in the catalog and no refresh fetches them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any, Iterator

from compiler.catalog.model import PRICE_OPTIONS, Catalog

DEFAULT_MAX_AGE_DAYS = 90   # a quarter: cloud GPU list prices have moved within one (AWS, June 2025)


def today() -> dt.date:
    """The date prices' age is counted to: SOURCE_DATE_EPOCH's (the reproducible-builds
    convention, which the tests set) where it is set, else the machine's."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        return dt.datetime.fromtimestamp(int(epoch), dt.timezone.utc).date()
    return dt.date.today()


@dataclass(frozen=True)
class PricedRow:
    site: int            # index of the spec's site (for a diagnostic's path)
    site_name: str
    item: str            # instance or on-prem node model
    region: str          # "" for an on-prem node model
    source: str          # the catalog source key of the price
    as_of: str
    figures: tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class PriceStamp:
    as_of: str           # the oldest as_of among the rows
    source: str          # a source that old (the first by key)
    sha256: str          # digest of every row's item, region and figures


def priced_rows(spec: Any, catalog: Catalog) -> Iterator[PricedRow]:
    """Each price the spec's sites could be planned with, site by site in the spec's order."""
    for i, site in enumerate(spec.sites):
        if getattr(site, "type", "") == "cloud":
            for inst in sorted(catalog.instances.values(), key=lambda x: x.name):
                if inst.provider != site.provider:
                    continue
                p = inst.price_row(site.region)
                if p is not None:
                    figures = tuple((o, p.get(o)) for o in PRICE_OPTIONS)
                    yield PricedRow(i, site.name, inst.name, p.region, p.source,
                                    catalog.sources[p.source].as_of, figures)
        else:
            for node in sorted(catalog.onprem_nodes.values(), key=lambda n: n.name):
                if hasattr(site, "offers") and not site.offers(node):
                    continue        # an edge box at a data centre, another model at an edge location
                figures = (("capex_usd", node.capex_usd), ("support_usd_per_year", node.support_usd_per_year))
                yield PricedRow(i, site.name, node.name, "", node.source, catalog.sources[node.source].as_of,
                                figures)


def stamp(spec: Any, catalog: Catalog) -> PriceStamp | None:
    """The spec's prices' oldest as_of and digest; None where no site has a price."""
    rows = list(priced_rows(spec, catalog))
    if not rows:
        return None
    oldest = min(rows, key=lambda r: (r.as_of, r.source))
    # Sites priced alike give the same rows; the digest is of what was priced, not where.
    facts = sorted({(r.item, r.region, r.figures) for r in rows})
    digest = hashlib.sha256(json.dumps(facts, separators=(",", ":")).encode()).hexdigest()
    return PriceStamp(oldest.as_of, oldest.source, digest)


def stale(spec: Any, catalog: Catalog, today: dt.date, max_age_days: int) -> list[tuple[PricedRow, int]]:
    """Per site, its oldest price row and its age in days, where older than `max_age_days`."""
    out: dict[int, tuple[PricedRow, int]] = {}
    for row in priced_rows(spec, catalog):
        age = (today - dt.date.fromisoformat(row.as_of)).days
        if age > max_age_days and (row.site not in out or age > out[row.site][1]):
            out[row.site] = (row, age)
    return [out[i] for i in sorted(out)]
