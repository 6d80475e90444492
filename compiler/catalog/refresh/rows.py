"""What a provider's price list gave, and how it becomes a catalog price row.

A fetcher returns `Fetched` figures per (instance, region): USD per node-hour for each option the
list has, None where it has none. `complete` turns them into the row the overlay writes:

- no on-demand figure: no row (the catalog requires one); the region is reported as skipped;
- an option the list has no figure for keeps the loaded catalog's figure for that region, if it
  has one, and is named in the row's `estimated` (the row's source did not give it);
- otherwise the option is null, as the catalog writes "not sold".

Figures are rounded to 6 decimals (a hundredth of a cent on a $100 node-hour is 0.0001).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from compiler.catalog.model import PRICE_OPTIONS, InstancePrice

OPTIONS = PRICE_OPTIONS[1:]   # besides on_demand
DECIMALS = 6
HOURS_PER_YEAR = 8760                                # both AWS and Azure count a term in 365-day years


@dataclass(frozen=True)
class Fetched:
    on_demand: float | None = None
    spot: float | None = None
    reserved_1y: float | None = None
    reserved_3y: float | None = None


@dataclass(frozen=True)
class PriceRow:
    on_demand: float
    spot: float | None
    reserved_1y: float | None
    reserved_3y: float | None
    estimated: tuple[str, ...] = ()


@dataclass
class Refreshed:
    """One provider's refresh: its source, its rows, and what it found but did not write."""

    provider: str
    source_key: str
    source: dict                                            # title, url, as_of, note
    rows: dict[str, dict[str, PriceRow]] = field(default_factory=dict)   # instance -> region -> row
    unknown: set[str] = field(default_factory=set)          # priced in the list, not in the catalog
    skipped: list[str] = field(default_factory=list)        # "instance in region: why"
    files: int = 0                                          # price files or pages read


def money(x: float) -> float:
    return round(float(x), DECIMALS)


def complete(fetched: Fetched, catalog_row: InstancePrice | None) -> PriceRow | None:
    """The overlay's row for one (instance, region); None when the list has no on-demand price."""
    if fetched.on_demand is None:
        return None
    values: dict[str, float | None] = {}
    estimated = []
    for option in OPTIONS:
        got = getattr(fetched, option)
        if got is None and catalog_row is not None and catalog_row.get(option) is not None:
            got = catalog_row.get(option)
            estimated.append(option)
        values[option] = None if got is None else money(got)
    return PriceRow(on_demand=money(fetched.on_demand), estimated=tuple(estimated), **values)


def add_rows(out: Refreshed, fetched: Mapping[tuple[str, str], Fetched], catalog) -> None:
    """Complete every fetched (instance, region) into `out.rows`, reporting the regions skipped."""
    for (name, region), figures in sorted(fetched.items()):
        inst = catalog.instances.get(name)
        row = complete(figures, inst.price_row(region) if inst else None)
        if row is None:
            out.skipped.append(f"{name} in {region}: no on-demand price in the list")
            continue
        out.rows.setdefault(name, {})[region] = row

