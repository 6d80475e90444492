"""Read one region's AmazonEC2 offer file (AWS Price List bulk API) without holding it in memory.

A regional offer file is one JSON object of up to a few GB:

    {"formatVersion": "v1.0", "offerCode": "AmazonEC2", "publicationDate": "...",
     "products": {SKU: {"sku", "productFamily", "attributes": {"instanceType", "operatingSystem", ...}}},
     "terms": {"OnDemand": {SKU: {OFFER_TERM: {"priceDimensions": {RATE: {"unit": "Hrs",
                                                  "pricePerUnit": {"USD": "55.04"}}}, ...}}},
               "Reserved": {SKU: {OFFER_TERM: {"termAttributes": {"LeaseContractLength": "1yr",
                                  "OfferingClass": "standard", "PurchaseOption": "No Upfront"},
                                  "priceDimensions": {...}}}}}}

It is parsed as a stream of events (ijson): each product is built on its own and dropped unless it
is a catalog instance type sold as plain Linux on shared hosts (no pre-installed software, the
capacity status of a normal running instance, an on-demand `BoxUsage` usage type run by
`RunInstances`); a term is built only for a SKU kept.

Whether a type is offered in the region: the file is the only keyless source (launchability per
zone is EC2's DescribeInstanceTypeOfferings, which needs credentials). A catalog type counts as
offered where the file sells it as above with an on-demand rate. Its other products are noted by
kind (`OfferPrices.other`: Capacity Block, capacity reservation, dedicated tenancy, another
operating system or software), so a type the file prices only in those ways, for instance only
through Capacity Blocks, is reported as not offered on demand there instead of being dropped
without a word. `products`
comes before `terms` in AWS's files, which this relies on (a file that puts them the other way
round is refused, not silently read as empty).

Reserved: the Standard offering class. No Upfront's hourly rate is the figure; where a type has
no No Upfront offer, Partial and then All Upfront are used at their effective hourly rate (the
upfront fee spread over the term's hours, plus the hourly fee).

Every figure read is checked (rows.figure); a part of the file not shaped as above is an
OfferFormatError, and a truncated file is ijson's error: the caller names the file's URL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import IO, Any, Callable, Iterator

import ijson

from compiler.catalog.refresh.rows import HOURS_PER_YEAR, MAX_USD, figure

PLAIN_LINUX = {"operatingSystem": "Linux", "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used"}
# Attributes that newer files carry; where present they must say this.
PLAIN_LINUX_IF_GIVEN = {"licenseModel": "No License required", "marketoption": "OnDemand",
                        "locationType": "AWS Region", "operation": "RunInstances"}
ON_DEMAND_USAGE = "BoxUsage:"     # "BoxUsage:p5.48xlarge", "USW2-BoxUsage:p5.48xlarge"
PURCHASE_OPTIONS = ("No Upfront", "Partial Upfront", "All Upfront")    # in order of preference
LEASES = {"1yr": 1, "3yr": 3}


class OfferFormatError(ValueError):
    """The offer file is not shaped as described above."""


@dataclass
class OfferPrices:
    on_demand: dict[str, float] = field(default_factory=dict)                 # instance type -> USD/h
    reserved: dict[tuple[str, int], float] = field(default_factory=dict)      # (type, years) -> USD/h
    gpu_types: set[str] = field(default_factory=set)     # every plain-Linux GPU type in the file
    plain: set[str] = field(default_factory=set)         # known types with a plain-Linux product
    other: dict[str, set[str]] = field(default_factory=dict)   # known type -> kinds of its other products


def plain_linux(product: dict) -> bool:
    attrs = product.get("attributes") or {}
    if not isinstance(attrs, dict) or product.get("productFamily") != "Compute Instance":
        return False
    if any(attrs.get(k) != v for k, v in PLAIN_LINUX.items()):
        return False
    usage = attrs.get("usagetype", ON_DEMAND_USAGE)
    if not isinstance(usage, str) or ON_DEMAND_USAGE not in usage:
        return False
    return all(attrs.get(k, v) == v for k, v in PLAIN_LINUX_IF_GIVEN.items())


def other_kind(product: dict) -> str:
    """What a product of an instance type that is not plain on-demand Linux is, for the report."""
    attrs = product.get("attributes") or {}
    text = {k: (v if isinstance(v, str) else "") for k, v in attrs.items()} if isinstance(attrs, dict) else {}
    if "CapacityBlock" in text.get("usagetype", "") or text.get("marketoption") == "CapacityBlock":
        return "Capacity Block"
    if text.get("capacitystatus", "Used") != "Used":
        return "capacity reservation"
    if text.get("tenancy", "Shared") != "Shared" or product.get("productFamily") != "Compute Instance":
        return "dedicated"
    return "another operating system or software"


def _gpus(attrs: dict) -> int:
    try:
        return int(str(attrs.get("gpu", "0")).strip() or 0)
    except ValueError:
        return 0


def _members(stream: IO[bytes], sections: tuple[str, ...],
             wanted: Callable[[str, str], bool]) -> Iterator[tuple[str, str, Any]]:
    """(section, key, value) for each member of the mappings at `sections`, built only where
    `wanted(section, key)`; the rest is skipped event by event."""
    events = ijson.parse(stream)
    for prefix, event, value in events:
        if event != "map_key" or prefix not in sections:
            continue
        key = value
        builder = ijson.ObjectBuilder() if wanted(prefix, key) else None
        depth = 0
        for _, inner, inner_value in events:
            if builder is not None:
                builder.event(inner, inner_value)
            if inner in ("start_map", "start_array"):
                depth += 1
            elif inner in ("end_map", "end_array"):
                depth -= 1
            if depth == 0:
                break
        if builder is not None:
            yield prefix, key, builder.value


def _mapping(value: Any, what: str) -> dict:
    if not isinstance(value, dict):
        raise OfferFormatError(f"{what} is not a mapping")
    return value


def _dimensions(term: Any) -> list[dict]:
    dims = _mapping(term, "a term").get("priceDimensions") or {}
    return [_mapping(d, "a price dimension") for d in _mapping(dims, "priceDimensions").values()]


def _usd(dimension: dict, most: float = MAX_USD) -> float:
    """The dimension's USD figure, checked (rows.figure): NaN, Infinity or an overflow is refused."""
    price = _mapping(dimension.get("pricePerUnit"), "pricePerUnit")
    return figure(price.get("USD"), "pricePerUnit.USD", most)


def on_demand_rate(terms: dict) -> float | None:
    """The hourly rate of an OnDemand term set (one offer term, one `Hrs` dimension)."""
    rates = [_usd(d) for term in _mapping(terms, "OnDemand terms").values() for d in _dimensions(term)
             if d.get("unit") == "Hrs"]
    rates = [r for r in rates if r > 0]
    return min(rates) if rates else None


def effective_hourly(term: dict, years: int) -> float:
    """A reserved term's cost per hour over its length: hourly fee plus upfront fee / hours."""
    hours = HOURS_PER_YEAR * years
    hourly = upfront = 0.0
    for d in _dimensions(term):
        if d.get("unit") == "Hrs":
            hourly += _usd(d)
        elif d.get("unit") == "Quantity":
            upfront += _usd(d, MAX_USD * hours)      # the whole term paid at once
    return hourly + upfront / hours


def reserved_rates(terms: dict) -> dict[int, float]:
    """years -> effective hourly rate of the Standard term, by the purchase option preferred."""
    best: dict[int, tuple[int, float]] = {}
    for term in _mapping(terms, "Reserved terms").values():
        attrs = _mapping(term, "a term").get("termAttributes") or {}
        if not isinstance(attrs, dict):
            continue
        lease = attrs.get("LeaseContractLength")
        years = LEASES.get(lease) if isinstance(lease, str) else None
        option = attrs.get("PurchaseOption")
        if years is None or attrs.get("OfferingClass") != "standard" or option not in PURCHASE_OPTIONS:
            continue
        rank = PURCHASE_OPTIONS.index(option)
        rate = effective_hourly(term, years)
        if rate > 0 and (years not in best or (rank, rate) < best[years]):
            best[years] = (rank, rate)
    return {years: rate for years, (_, rate) in best.items()}


def read_offer(stream: IO[bytes], known: set[str]) -> OfferPrices:
    """The on-demand and reserved rates of the `known` instance types in one regional offer file."""
    out = OfferPrices()
    sku_type: dict[str, str] = {}
    seen_products = False

    def wanted(section: str, key: str) -> bool:
        return section == "products" or key in sku_type

    for section, key, value in _members(stream, ("products", "terms.OnDemand", "terms.Reserved"), wanted):
        if section == "products":
            seen_products = True
            attrs = value.get("attributes") if isinstance(value, dict) else None
            itype = attrs.get("instanceType", "") if isinstance(attrs, dict) else ""
            if not isinstance(itype, str) or not itype:
                continue
            if not plain_linux(value):
                if itype in known:
                    out.other.setdefault(itype, set()).add(other_kind(value))
                continue
            if _gpus(value["attributes"]) > 0:
                out.gpu_types.add(itype)
            if itype in known:
                sku_type[key] = itype
                out.plain.add(itype)
            continue
        if not seen_products:
            raise OfferFormatError("`terms` comes before `products`")
        itype = sku_type[key]
        if section == "terms.OnDemand":
            rate = on_demand_rate(value)
            if rate is not None:
                out.on_demand[itype] = min(rate, out.on_demand.get(itype, rate))
        else:
            for years, rate in reserved_rates(value).items():
                out.reserved[(itype, years)] = min(rate, out.reserved.get((itype, years), rate))
    return out
