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
  hours (8,760 a year): "1 Year" -> reserved_1y, "3 Years" -> reserved_3y.
Where a meter has several prices, the latest effectiveStartDate wins (then the lowest price).
"""

from __future__ import annotations

import urllib.parse
from typing import Any, Callable

from compiler.catalog.refresh.endpoints import AZURE_RETAIL_PRICES
from compiler.catalog.refresh.http import PriceClient, pages
from compiler.catalog.refresh.rows import HOURS_PER_YEAR, Fetched, Refreshed, add_rows

SOURCE_KEY = "azure-retail-prices"
TERMS = {"1 Year": ("reserved_1y", 1), "3 Years": ("reserved_3y", 3)}


def query(names: list[str], requested: tuple[str, ...] | None) -> str:
    """The OData $filter for the catalog's sizes (and regions)."""
    parts = ["serviceName eq 'Virtual Machines'",
             "(" + " or ".join(f"armSkuName eq '{n}'" for n in names) + ")"]
    if requested:
        parts.append("(" + " or ".join(f"armRegionName eq '{r}'" for r in requested) + ")")
    return " and ".join(parts)


def classify(item: dict) -> tuple[str, float] | None:
    """(option, USD per node-hour) of one price item, or None for a meter not used here."""
    if item.get("serviceName") != "Virtual Machines" or item.get("currencyCode", "USD") != "USD":
        return None
    price = item.get("retailPrice")
    if not isinstance(price, (int, float)) or price <= 0:
        return None
    names = f"{item.get('skuName', '')} {item.get('meterName', '')}"
    if "Windows" in item.get("productName", "") or "Low Priority" in names:
        return None
    kind = item.get("type")
    if kind == "Consumption" and item.get("unitOfMeasure") == "1 Hour":
        return ("spot" if "Spot" in names else "on_demand"), float(price)
    if kind == "Reservation" and item.get("reservationTerm") in TERMS:
        option, years = TERMS[item["reservationTerm"]]
        return option, float(price) / (HOURS_PER_YEAR * years)
    return None


def _items(page: Any, url: str, client: PriceClient) -> list[dict]:
    items = page.get("Items") if isinstance(page, dict) else None
    if not isinstance(items, list):
        raise client.bad_answer(url, "no `Items` list")
    return [i for i in items if isinstance(i, dict)]


def refresh(catalog, requested: tuple[str, ...] | None, as_of: str, client: PriceClient,
            progress: Callable[[str], None]) -> Refreshed:
    names = sorted(n for n, i in catalog.instances.items() if i.provider == "azure")
    base = AZURE_RETAIL_PRICES.url()
    first = base + "?" + urllib.parse.urlencode({"$filter": query(names, requested)},
                                               quote_via=urllib.parse.quote)
    out = Refreshed("azure", SOURCE_KEY, {
        "title": "Azure Retail Prices API, Virtual Machines: Linux pay-as-you-go (Consumption), Spot, and "
                 "1-/3-year Reservations (the term's price over its hours)",
        "url": base, "as_of": as_of})
    best: dict[tuple[str, str, str], tuple[str, float]] = {}     # (size, region, option) -> (start, price)
    url = first
    for page in pages(client, first, lambda p, _u: p.get("NextPageLink") if isinstance(p, dict) else None):
        out.files += 1
        progress(f"azure: {out.files} pages read")
        for item in _items(page, url, client):
            name, region = item.get("armSkuName", ""), item.get("armRegionName", "")
            found = classify(item)
            if found is None or not region:
                continue
            if name not in names:
                out.unknown.add(name)
                continue
            option, price = found
            key, start = (name, region, option), str(item.get("effectiveStartDate", ""))
            if key not in best or (start, -price) > (best[key][0], -best[key][1]):
                best[key] = (start, price)
        url = page.get("NextPageLink") or url
    fetched: dict[tuple[str, str], dict[str, float]] = {}
    for (name, region, option), (_, price) in best.items():
        fetched.setdefault((name, region), {})[option] = price
    if requested:
        missing = sorted(set(requested) - {region for _, region in fetched})
        out.skipped += [f"{r}: no price for the catalog's Azure sizes" for r in missing]
    add_rows(out, {k: Fetched(**v) for k, v in fetched.items()}, catalog)
    return out
