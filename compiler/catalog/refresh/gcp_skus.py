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

Anything else (custom, sole-tenant, reserved-capacity, DWS or premium SKUs) is not read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

USAGES = {"OnDemand": "on_demand", "Preemptible": "spot", "Commit1Yr": "reserved_1y", "Commit3Yr": "reserved_3y"}
UNITS = {"CPU": "h", "GPU": "h", "RAM": "GiBy.h"}

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


def unit_price(sku: dict) -> tuple[str, float] | None:
    """(usage unit, USD) of the first tier of the SKU's current pricing."""
    try:
        expression = sku["pricingInfo"][0]["pricingExpression"]
        price = expression["tieredRates"][0]["unitPrice"]
    except (KeyError, IndexError, TypeError):
        return None
    if price.get("currencyCode", "USD") != "USD":
        return None
    return expression.get("usageUnit", ""), int(price.get("units") or 0) + int(price.get("nanos") or 0) / 1e9


def _expected_usage(m: re.Match) -> str:
    if m["commit"]:
        return f"Commit{m['years']}Yr" if m["years"] else ""
    return "Preemptible" if (m["spot"] or m["spot_attached"]) else "OnDemand"


def component(sku: dict) -> Component | None:
    """The priced component a SKU is, or None for one not read here."""
    category = sku.get("category") or {}
    group, usage = category.get("resourceGroup"), category.get("usageType")
    if category.get("resourceFamily") != "Compute" or group not in UNITS or usage not in USAGES:
        return None
    description = sku.get("description", "")
    m = None if _NOT_READ.search(description) else _DESCRIPTION.match(description)
    if m is None or _expected_usage(m) != usage:
        return None
    whole = _SLICE.match(m["what"])
    pattern = whole or {"GPU": _GPU, "CPU": _CORE, "RAM": _RAM}[group].match(m["what"])
    priced = unit_price(sku)
    unit = "h" if whole else UNITS[group]
    if pattern is None or priced is None or priced[0] != unit or priced[1] <= 0:
        return None
    kind = "slice" if whole else {"GPU": "gpu", "CPU": "core", "RAM": "ram"}[group]
    name = pattern["family"] if kind in ("core", "ram") else pattern["model"]
    return Component(kind, name, USAGES[usage], tuple(sku.get("serviceRegions") or ()), priced[1])
