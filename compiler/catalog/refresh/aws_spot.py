"""AWS spot prices from the feed behind the EC2 Spot pricing page (spot.js).

The Price List bulk API has no spot prices. The pricing page (aws.amazon.com/ec2/spot/pricing/)
reads them from a public JSONP feed, one current Linux and Windows price per instance type and
region:

    callback({"vers": 0.01, "config": {"rate": "perhr", "valueColumns": ["linux", "mswin"],
      "currencies": ["USD"], "regions": [{"region": "us-east-1", "instanceTypes": [
        {"type": "generalCurrentGen", "sizes": [{"size": "p5.48xlarge", "valueColumns": [
          {"name": "linux", "prices": {"USD": "24.77"}}, {"name": "mswin", ...}]}]}]}]}});

The feed is undocumented (spot prices move with supply, and AWS may change or drop it); a price
of "N/A*" means none. Older regions may appear under legacy names, mapped below.
"""

from __future__ import annotations

from typing import Any

from compiler.catalog.refresh.http import shown
from compiler.catalog.refresh.rows import figure

LEGACY_REGIONS = {"us-east": "us-east-1", "us-west": "us-west-1", "eu-ireland": "eu-west-1",
                  "apac-sin": "ap-southeast-1", "apac-syd": "ap-southeast-2", "apac-tokyo": "ap-northeast-1"}


def unwrap(text: str) -> str:
    """The JSON inside `callback(...);` (plain JSON passes through)."""
    body = text.strip()
    if body.startswith("{"):
        return body
    start, end = body.find("("), body.rfind(")")
    if start < 0 or end <= start:
        raise ValueError("neither JSON nor a JSONP callback")
    return body[start + 1:end]


def spot_prices(feed: Any) -> dict[tuple[str, str], float]:
    """(region, instance type) -> Linux spot USD per hour. A price that is a number must be a
    finite one within range (rows.figure raises BadFigure, a ValueError); "N/A*" is no offer."""
    out: dict[tuple[str, str], float] = {}
    config = feed.get("config") if isinstance(feed, dict) else None
    if not isinstance(config, dict) or not isinstance(config.get("regions"), list):
        raise ValueError("no config.regions list")
    if config.get("rate", "perhr") != "perhr":
        raise ValueError(f"rate is {shown(repr(config.get('rate')), 40)}, not per hour")
    for region in _dicts(config["regions"]):
        name = region.get("region")
        name = LEGACY_REGIONS.get(name, name) if isinstance(name, str) else None
        for family in _dicts(region.get("instanceTypes")):
            for size in _dicts(family.get("sizes")):
                for column in _dicts(size.get("valueColumns")):
                    if column.get("name") != "linux":
                        continue
                    prices = column.get("prices")
                    raw = prices.get("USD") if isinstance(prices, dict) else None
                    if raw is None or (isinstance(raw, str) and raw.strip().upper().startswith("N/A")):
                        continue       # "N/A*": no spot offer
                    price = figure(raw, f"the spot price of {shown(size.get('size'), 40)} in {shown(name, 40)}")
                    if price > 0 and isinstance(name, str) and isinstance(size.get("size"), str):
                        out[(name, size["size"])] = price
    return out


def _dicts(items: Any) -> list[dict]:
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []
