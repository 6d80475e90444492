"""Read Compute Engine SKUs of the Cloud Billing Catalog API into priced components.

GCP does not price a machine type as one figure: an accelerator-optimized machine costs its GPUs
plus its vCPUs plus its memory, each a SKU per region and usage type. A SKU:

    {"skuId": "...", "description": "Nvidia H100 80GB GPU running in Americas",
     "category": {"resourceFamily": "Compute", "resourceGroup": "GPU", "usageType": "OnDemand"},
     "serviceRegions": ["us-central1", ...],
     "pricingInfo": [{"pricingExpression": {"usageUnit": "h", "tieredRates": [
         {"startUsageAmount": 0, "unitPrice": {"currencyCode": "USD", "units": "9", "nanos": 796550569}}]}}]}

The price is units + nanos / 1e9 per usage unit: an hour for cores and GPUs, a GiB-hour for RAM.
Descriptions name what is priced, by usage type (category.usageType):

    OnDemand     "A3 Instance Core running in Americas", "A3 Instance Ram running in ...",
                 "Nvidia H100 80GB GPU running in ...", "H200 141GB GPU running in ..."
    Preemptible  "Spot Preemptible A3 Instance Core running in ...",
                 "Nvidia H100 80GB GPU attached to Spot Preemptible VMs running in ..."
    Commit1Yr/3Yr "Commitment v1: A3 Cpu in Americas for 1 Year", "Commitment v1: A3 Ram in ... for 3 Years",
                 "Commitment v1: Nvidia H100 80GB GPU running in Americas for 3 Years"

Some machine series are priced whole, by the GPU: an A4 is eight "A4 Nvidia B200 (1 gpu slice) running
in ..." SKUs, each an eighth of the machine with its vCPUs and memory (kind `slice`).

Anything else (custom, sole-tenant, reserved-capacity, DWS or premium SKUs) is not read. The
price of a SKU that is read must be a price: whole units and nanos, at most rows.MAX_USD a unit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from compiler.catalog.refresh.http import shown
from compiler.catalog.refresh.rows import MAX_USD, BadFigure, figure

USAGES = {"OnDemand": "on_demand", "Preemptible": "spot", "Commit1Yr": "reserved_1y", "Commit3Yr": "reserved_3y"}
UNITS = {"CPU": "h", "GPU": "h", "RAM": "GiBy.h"}
INTEGER = re.compile(r"^[-+]?[0-9]{1,19}$")

_DESCRIPTION = re.compile(
    r"^(?P<commit>Commitment v1: )?(?P<spot>Spot Preemptible )?(?P<what>.+?)"
    r"(?P<spot_attached> attached to Spot Preemptible VMs)?(?: running)? in (?P<where>.+?)"
    r"(?: for (?P<years>[13]) Years?)?$")
_SLICE = re.compile(r"^(?P<model>.+?) \(1 gpu slice\)$")
_GPU = re.compile(r"^(?:Nvidia )?(?:Tesla )?(?P<model>.+?) GPU$")
_CORE = re.compile(r"^(?P<family>[A-Z][A-Z0-9]*(?: (?!Instance\b)[A-Z][A-Za-z]+)?) (?:Instance Core|Cpu)$")
_RAM = re.compile(r"^(?P<family>[A-Z][A-Z0-9]*(?: (?!Instance\b)[A-Z][A-Za-z]+)?) (?:Instance Ram|Ram)$")
# SKUs of other purchase models or machine shapes than a plain VM of a predefined type.
_NOT_READ = re.compile(r"\b(?:Reserved|Custom|Sole Tenancy|Premium|DWS|Flex|Calendar|Defined Duration|"
                       r"Virtual Workstation|Extended)\b")


@dataclass(frozen=True)
class Component:
    kind: str          # core | ram | gpu | slice (a GPU with its share of the machine)
    name: str          # the machine family (A2, A3, G2) or the GPU model (H100 80GB, L4, A100 80GB)
    option: str        # on_demand | spot | reserved_1y | reserved_3y
    regions: tuple[str, ...]
    usd: float         # per hour (core, gpu) or per GiB-hour (ram)


def _int(raw: object, what: str, low: int, high: int) -> int:
    """Money's `units` (an int64, as a string in JSON) or `nanos` (an int32), within [low, high]."""
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        raise BadFigure(f"{what} is not a whole number ({shown(repr(raw), 60)})")
    text = str(raw).strip()
    if not INTEGER.match(text):
        raise BadFigure(f"{what} {shown(repr(raw), 60)} is not a whole number")
    value = int(text)
    if not low <= value <= high:
        raise BadFigure(f"{what} {shown(text, 60)} is outside {low} to {high}")
    return value


def unit_price(sku: dict) -> tuple[str, float] | None:
    """(usage unit, USD) of the first tier of the SKU's current pricing; BadFigure where the
    figure is not a price (Money's units and nanos, checked as rows.figure checks any price)."""
    try:
        expression = sku["pricingInfo"][0]["pricingExpression"]
        price = expression["tieredRates"][0]["unitPrice"]
        unit = expression.get("usageUnit", "")
        currency = price.get("currencyCode", "USD")
    except (KeyError, IndexError, TypeError, AttributeError):
        return None
    if currency != "USD":
        return None
    what = f"the unitPrice of SKU {shown(sku.get('skuId'), 40)}"
    units = _int(price.get("units") or 0, f"{what} (units)", 0, int(MAX_USD))
    nanos = _int(price.get("nanos") or 0, f"{what} (nanos)", 0, 999_999_999)
    return unit, figure(units + nanos / 1e9, what)


def _expected_usage(m: re.Match) -> str:
    if m["commit"]:
        return f"Commit{m['years']}Yr" if m["years"] else ""
    return "Preemptible" if (m["spot"] or m["spot_attached"]) else "OnDemand"


def component(sku: dict) -> Component | None:
    """The priced component a SKU is, or None for one not read here."""
    category = sku.get("category")
    if not isinstance(category, dict):
        return None
    group, usage = category.get("resourceGroup"), category.get("usageType")
    if not isinstance(group, str) or not isinstance(usage, str):
        return None
    if category.get("resourceFamily") != "Compute" or group not in UNITS or usage not in USAGES:
        return None
    description = sku.get("description", "")
    if not isinstance(description, str):
        return None
    m = None if _NOT_READ.search(description) else _DESCRIPTION.match(description)
    if m is None or _expected_usage(m) != usage:
        return None
    whole = _SLICE.match(m["what"])
    pattern = whole or {"GPU": _GPU, "CPU": _CORE, "RAM": _RAM}[group].match(m["what"])
    if pattern is None:
        return None
    priced = unit_price(sku)
    unit = "h" if whole else UNITS[group]
    if priced is None or priced[0] != unit or priced[1] <= 0:
        return None
    regions = sku.get("serviceRegions") or ()
    if not isinstance(regions, list):
        regions = ()
    kind = "slice" if whole else {"GPU": "gpu", "CPU": "core", "RAM": "ram"}[group]
    name = pattern["family"] if kind in ("core", "ram") else pattern["model"]
    return Component(kind, name, USAGES[usage], tuple(r for r in regions if isinstance(r, str)), priced[1])
