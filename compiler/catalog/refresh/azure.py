"""Azure: the Retail Prices API (prices.azure.com/api/retail/prices), public and paged.

One query asks for the catalog's VM sizes (`armSkuName`) of serviceName 'Virtual Machines' (and
the regions asked for, if any); each page holds `Items` and the next page's URL in
`NextPageLink` (null on the last). An item is one meter:

    {"armSkuName": "Standard_ND96isr_H100_v5", "armRegionName": "eastus", "type": "Consumption",
     "productName": "Virtual Machines NDsrH100v5 Series", "skuName": "ND96isr H100 v5",
     "meterName": "ND96isr H100 v5", "retailPrice": 98.32, "unitOfMeasure": "1 Hour",
     "currencyCode": "USD", "effectiveStartDate": "...", "reservationTerm": "1 Year" (Reservation only)}

- on-demand: type Consumption, not Windows (productName ends in "Windows"), not Spot, not Low Priority;
- spot: type Consumption with "Spot" in skuName (Linux);
- reserved: type Reservation; retailPrice is the whole term's price, so it is divided by the term's
  hours (8,760 a year): "1 Year" -> reserved_1y, "3 Years" -> reserved_3y (`terms: reservation`).
  A pay-as-you-go item's `savingsPlan` rates (newer API versions) are a savings plan, another kind
  of commitment: they are not read, and never become a reservation's figure.
Where a meter has several prices, the latest effectiveStartDate wins (then the lowest price).

Offerings: the API has no list of the sizes each region can deploy (that is the Resource SKUs API,
which needs a subscription). A size is written for a region only where the region has its own
Linux pay-as-you-go meter: a `Consumption` meter, not Spot, Low Priority or Windows, and not one
whose `isPrimaryMeterRegion` is false (a meter of another region listed here). A size the list
prices in a region only otherwise (Spot or Low Priority, DevTest, a reservation, Windows, a
non-primary meter) is reported in `not_offered` and not written.
"""

from __future__ import annotations

import urllib.parse
from typing import Any, Callable

from compiler.catalog.refresh.endpoints import AZURE_RETAIL_PRICES
from compiler.catalog.refresh.http import PriceClient, pages, shown, where
from compiler.catalog.refresh.rows import HOURS_PER_YEAR, MAX_USD, BadFigure, Fetched, Refreshed, add_rows, figure

SOURCE_KEY = "azure-retail-prices"
TERM_KIND = "reservation"
TERMS = {"1 Year": ("reserved_1y", 1), "3 Years": ("reserved_3y", 3)}


def query(names: list[str], requested: tuple[str, ...] | None) -> str:
    """The OData $filter for the catalog's sizes (and regions)."""
    parts = ["serviceName eq 'Virtual Machines'",
             "(" + " or ".join(f"armSkuName eq '{n}'" for n in names) + ")"]
    if requested:
        parts.append("(" + " or ".join(f"armRegionName eq '{r}'" for r in requested) + ")")
    return " and ".join(parts)


def _text(item: dict, key: str) -> str:
    value = item.get(key, "")
    return value if isinstance(value, str) else ""


def meter_kind(item: dict) -> str:
    """What a Virtual Machines meter that classify() does not read is, for the report."""
    names = f"{_text(item, 'skuName')} {_text(item, 'meterName')}"
    if "Windows" in _text(item, "productName"):
        return "Windows"
    if "Low Priority" in names:
        return "Low Priority"
    if item.get("isPrimaryMeterRegion") is False:
        return "a non-primary meter"
    return _text(item, "type") or "an unknown meter type"


def classify(item: dict) -> tuple[str, float] | None:
    """(option, USD per node-hour) of one price item, or None for a meter not used here.
    A price that is not a finite number in range is refused (rows.BadFigure), not skipped."""
    if item.get("serviceName") != "Virtual Machines" or item.get("currencyCode", "USD") != "USD":
        return None
    names = f"{_text(item, 'skuName')} {_text(item, 'meterName')}"
    if "Windows" in _text(item, "productName") or "Low Priority" in names:
        return None
    if item.get("isPrimaryMeterRegion") is False:
        return None          # another region's meter, listed here too
    kind = item.get("type")
    if kind == "Consumption" and item.get("unitOfMeasure") == "1 Hour":
        option, hours = ("spot" if "Spot" in names else "on_demand"), 1
    elif kind == "Reservation" and _text(item, "reservationTerm") in TERMS:
        option, years = TERMS[item["reservationTerm"]]
        hours = HOURS_PER_YEAR * years            # the price is the whole term's
    else:
        return None
    price = figure(item.get("retailPrice"), f"the retailPrice of {shown(item.get('armSkuName'), 60)}",
                   MAX_USD * hours)
    return (option, price / hours) if price > 0 else None


_OPTION_KIND = {"spot": "Spot", "reserved_1y": "reservation", "reserved_3y": "reservation"}


def _items(page: Any, url: str, client: PriceClient) -> list[dict]:
    items = page.get("Items") if isinstance(page, dict) else None
    if not isinstance(items, list):
        raise client.bad_answer(url, "no `Items` list")
    return [i for i in items if isinstance(i, dict)]


def _next(client: PriceClient) -> Callable[[Any, str], str | None]:
    def next_link(page: Any, url: str) -> str | None:
        link = page.get("NextPageLink") if isinstance(page, dict) else None
        return None if link is None else client.link(url, link, "next page link")
    return next_link


def refresh(catalog, requested: tuple[str, ...] | None, as_of: str, client: PriceClient,
            progress: Callable[[str], None]) -> Refreshed:
    names = sorted(n for n, i in catalog.instances.items() if i.provider == "azure")
    base = AZURE_RETAIL_PRICES.url()
    first = base + "?" + urllib.parse.urlencode({"$filter": query(names, requested)},
                                               quote_via=urllib.parse.quote)
    out = Refreshed("azure", SOURCE_KEY, {
        "title": "Azure Retail Prices API, Virtual Machines: Linux pay-as-you-go (Consumption), Spot, and "
                 "1-/3-year Reservations (the term's price over its hours)",
        "url": where(base), "as_of": as_of}, terms=TERM_KIND)
    best: dict[tuple[str, str, str], tuple[str, float]] = {}     # (size, region, option) -> (start, price)
    meters: dict[tuple[str, str], set[str]] = {}                 # (size, region) -> kinds of its meters
    for url, page in pages(client, first, _next(client)):
        out.files += 1
        progress(f"azure: {out.files} pages read")
        for item in _items(page, url, client):
            name, region = _text(item, "armSkuName"), _text(item, "armRegionName")
            try:
                found = classify(item)
            except BadFigure as exc:
                raise client.bad_answer(url, str(exc)) from None
            if found is None and region and name in names and item.get("serviceName") == "Virtual Machines":
                meters.setdefault((name, region), set()).add(meter_kind(item))
            if found is None or not region or not name:
                continue
            if name not in names:
                out.unknown.add(name)
                continue
            option, price = found
            meters.setdefault((name, region), set()).add(option)
            key, start = (name, region, option), _text(item, "effectiveStartDate")
            if key not in best or (start, -price) > (best[key][0], -best[key][1]):
                best[key] = (start, price)
    fetched: dict[tuple[str, str], dict[str, float]] = {}
    for (name, region, option), (_, price) in best.items():
        fetched.setdefault((name, region), {})[option] = price
    for (name, region), kinds in sorted(meters.items()):
        if "on_demand" not in kinds:
            fetched.pop((name, region), None)
            shown_kinds = sorted({_OPTION_KIND.get(k, k) for k in kinds})
            out.not_offered.append(f"{name} in {region}: the list has no Linux pay-as-you-go meter for it there, "
                                   f"only {', '.join(shown_kinds)}")
    if requested:
        missing = sorted(set(requested) - {region for _, region in fetched})
        out.skipped += [f"{r}: no price for the catalog's Azure sizes" for r in missing]
    add_rows(out, {k: Fetched(**v) for k, v in fetched.items()}, catalog)
    return out
