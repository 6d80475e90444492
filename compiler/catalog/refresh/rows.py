"""What a provider's price list gave, and how it becomes a catalog price row.

A fetcher returns `Fetched` figures per (instance, region): USD per node-hour for each option the
list has, None where it has none. `complete` turns them into the row the overlay writes:

- no on-demand figure: no row (the catalog requires one); the region is reported as skipped;
- an option the list has no figure for keeps the loaded catalog's figure for that region, if it
  has one, and is named in the row's `estimated` (the row's source did not give it); a 1-/3-year
  figure is kept only where the catalog's row prices the same kind of term as the list (its
  `terms`: AWS's built-in rows estimate Savings Plans, the list prices Reserved Instances, and
  one is never written as the other; the option is null then, and the summary says so);
- otherwise the option is null, as the catalog writes "not sold".

Every row states its `terms`: what its reserved_1y and reserved_3y are (TERMS).

Whether a type is offered in a region is each list's own business (what it can tell is in its
module and docs/catalog.md): a (type, region) that a list prices but does not offer is in
`Refreshed.not_offered` and never becomes a row.

Figures are rounded to 6 decimals (a hundredth of a cent on a $100 node-hour is 0.0001).

Every figure read from a list goes through `figure`: a finite, non-negative number (NaN, Infinity,
a float overflow or a negative price are refused, not read as "no price"), and a row's figures
must lie within the catalog's own bound on a node-hour (MAX_USD), so nothing a list says can put
a figure in the overlay that the catalog would refuse or the solver would choke on.
"""

from __future__ import annotations

import decimal
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from compiler.catalog.model import PRICE_OPTIONS, InstancePrice
from compiler.catalog.refresh.http import refresh_error, shown, where

OPTIONS = PRICE_OPTIONS[1:]   # besides on_demand
TERM_OPTIONS = ("reserved_1y", "reserved_3y")
# What a row's reserved_1y / reserved_3y are (schemas/catalog.schema.json's `terms`).
TERMS = {"reserved-instance": "Standard Reserved Instances (per instance type and region)",
         "reservation": "reservations (per VM size and region)",
         "committed-use": "resource-based committed use discounts",
         "savings-plan": "Savings Plans (a dollars-per-hour commitment)"}
DECIMALS = 6
HOURS_PER_YEAR = 8760                                # both AWS and Azure count a term in 365-day years
MAX_USD = 10_000.0          # USD per node-hour: schemas/catalog.schema.json's bound on a price
REGION = re.compile(r"^[a-z][a-z0-9-]{1,39}$")      # schemas/catalog.schema.json's region names
_NUMBER = re.compile(r"^[-+]?[0-9]{1,20}(?:\.[0-9]{0,20})?(?:[eE][-+]?[0-9]{1,3})?$")


class BadFigure(ValueError):
    """A figure in a price list that is not a finite, non-negative number within its bound."""


def figure(raw: Any, what: str, most: float = MAX_USD) -> float:
    """`raw` (a JSON number, a Decimal from the streamed parser, or a decimal string such as AWS's
    "55.0400000000") as a float in [0, most]; BadFigure for anything else."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float, decimal.Decimal, str)):
        raise BadFigure(f"{what} is not a number ({shown(repr(raw), 60)})")
    if isinstance(raw, str):
        text = raw.strip()
        if not _NUMBER.match(text):
            kind = "a finite number" if text.lower().lstrip("+-") in ("nan", "inf", "infinity") else "a number"
            raise BadFigure(f"{what} {shown(repr(raw), 60)} is not {kind}")
        raw = text
    try:
        value = float(raw)
    except (ValueError, OverflowError, decimal.InvalidOperation):
        raise BadFigure(f"{what} {shown(repr(raw), 60)} is not a number") from None
    if not math.isfinite(value):
        raise BadFigure(f"{what} {shown(str(raw), 60)} is not a finite number")
    if value < 0 or value > most:
        raise BadFigure(f"{what} {shown(str(raw), 60)} is outside 0 to {most:g} USD")
    return value


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
    terms: str = ""              # a TERMS key: what reserved_1y / reserved_3y are


def _any_terms(row: InstancePrice) -> bool:
    return True


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
    terms: str = ""                                         # TERMS key of every row's 1-/3-year figures
    # Whether a loaded catalog row's 1-/3-year figures are terms of the same kind (may be kept).
    same_terms: Callable[[InstancePrice], bool] = _any_terms
    not_offered: list[str] = field(default_factory=list)    # "instance in region: why" (priced, not offered)
    added: list[str] = field(default_factory=list)          # "instance in region": no catalog row there before
    terms_not_kept: list[str] = field(default_factory=list) # "instance in region (options)"
    undecided: list[str] = field(default_factory=list)      # "instance (why): regions" the list cannot tell
                                                            # it is sold in (types billed by shared SKUs)


def money(x: float) -> float:
    return round(float(x), DECIMALS)


def complete(fetched: Fetched, catalog_row: InstancePrice | None, terms: str = "",
             same_terms: bool = True) -> tuple[PriceRow | None, tuple[str, ...]]:
    """The overlay's row for one (instance, region), None when the list has no on-demand price,
    and the catalog's 1-/3-year options not kept because they price another kind of term."""
    if fetched.on_demand is None:
        return None, ()
    values: dict[str, float | None] = {}
    estimated, not_kept = [], []
    for option in OPTIONS:
        got = getattr(fetched, option)
        if got is None and catalog_row is not None and catalog_row.get(option) is not None:
            if option in TERM_OPTIONS and not same_terms:
                not_kept.append(option)
            else:
                got = catalog_row.get(option)
                estimated.append(option)
        values[option] = None if got is None else money(got)
    return (PriceRow(on_demand=money(fetched.on_demand), estimated=tuple(estimated), terms=terms, **values),
            tuple(not_kept))


def _check(out: Refreshed, name: str, region: str, figures: Fetched) -> None:
    """The last guard before a row is written: a region name the catalog accepts, and figures in
    (0, MAX_USD] (each list's reader checks its own numbers; this is a whole machine's price)."""
    def bad(what: str):
        return refresh_error(out.provider, "C021", f"unexpected answer from {where(out.source.get('url', ''))}: {what}",
                             "the price list's figures are out of the catalog's range or its format changed; "
                             "nothing was written")
    if not isinstance(region, str) or not REGION.match(region):
        raise bad(f"{shown(repr(region), 60)} is not a region name (lower-case letters, digits and '-')")
    for option in PRICE_OPTIONS:
        value = getattr(figures, option)
        if value is not None and not (math.isfinite(value) and 0 < value <= MAX_USD):
            raise bad(f"{name} in {region}: {option} {value:g} USD per node-hour is outside 0 to {MAX_USD:g}")


def add_rows(out: Refreshed, fetched: Mapping[tuple[str, str], Fetched], catalog) -> None:
    """Complete every fetched (instance, region) into `out.rows`, reporting the regions skipped."""
    for (name, region), figures in sorted(fetched.items(), key=lambda kv: tuple(map(str, kv[0]))):
        _check(out, name, region, figures)
        inst = catalog.instances.get(name)
        old = inst.price_row(region) if inst else None
        row, not_kept = complete(figures, old, out.terms, old is None or out.same_terms(old))
        if row is None:
            out.skipped.append(f"{name} in {region}: no on-demand price in the list")
            continue
        out.rows.setdefault(name, {})[region] = row
        if old is None:
            out.added.append(f"{name} in {region}")
        if not_kept:
            out.terms_not_kept.append(f"{name} in {region} ({', '.join(not_kept)}, source {old.source})")

