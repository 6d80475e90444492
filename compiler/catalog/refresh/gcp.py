"""GCP: the Cloud Billing Catalog API's Compute Engine SKUs, composed into machine-type prices.

GET .../v1/services/6F81-5844-456A/skus?key=API_KEY&currencyCode=USD, paged by `nextPageToken`
(empty on the last page). The API needs an API key (INFRA_COMPILE_GCP_API_KEY or GOOGLE_API_KEY;
Google Cloud console, APIs & Services, with the Cloud Billing API enabled).

A catalog machine type's price in a region and option is

    gpus x GPU SKU  +  vcpus x core SKU  +  ram_gb (GiB) x RAM SKU

(or, for a series priced whole such as A4, gpus x its per-GPU slice SKU) from the SKUs of its
series below (the GPU model GCP bills, the family its cores and memory are billed as). A4X is
read either way: its per-GPU slice SKU where the list has one ("A4X Nvidia GB200 (1 gpu slice)",
named as A4's are), else its GB200 GPU, A4X cores and memory; neither name was read from a live
list. A region is priced where all three SKUs exist for on-demand; each other option
(Spot, 1-/3-year resource-based commitments) where all three exist for it. Bundled Local SSD is
not counted (GCP bills it apart). The 1-/3-year figures are resource-based committed use discounts
(`terms: committed-use`); spend-based (flexible) commitments are another kind and are not read.

Offerings: which zones have which GPUs is the Compute Engine API's (acceleratorTypes, machineTypes),
which an API key alone does not open. The SKUs' `serviceRegions` are the signal read: a machine
type is written for a region only where every on-demand SKU it is billed by (its GPU, its
series' cores and memory, or its slice) lists the region. Where some of its SKUs list the region
and an on-demand one does not (a GPU priced only for Spot or commitments there, a series' cores
without its GPU), the region is reported in `not_offered`, not written. A SKU named for a
geography ("running in Americas") lists each region it bills in, which is not a promise that a
zone there has capacity.

A3 Edge is billed by A3 High's SKUs (A3 cores and memory, the H100 80GB GPU), so the list cannot
tell which of the two a region sells: A3 Edge is written only in the regions the loaded catalog
prices it in, and A3 High not in a region where the catalog prices A3 Edge and not A3 High; each
region left out for that is in `Refreshed.undecided`.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from typing import Any, Callable

from compiler.catalog.model import PRICE_OPTIONS
from compiler.catalog.refresh.endpoints import GCP_BILLING_CATALOG, GCP_KEY_VARIABLES, gcp_api_key
from compiler.catalog.refresh.gcp_skus import Component, component
from compiler.catalog.refresh.http import PriceClient, pages, refresh_error, shown, where
from compiler.catalog.refresh.rows import BadFigure, Fetched, Refreshed, add_rows

SOURCE_KEY = "gcp-billing-catalog"
TERM_KIND = "committed-use"
PAGE_SIZE = 5000
TOKEN = re.compile(r"^[A-Za-z0-9_=+/.-]{1,512}$")     # an opaque page token, as Google's look


@dataclass(frozen=True)
class Series:
    families: tuple[str, ...]    # the core/RAM family names the SKUs use, most specific first
    gpus: tuple[str, ...]        # the GPU model names the SKUs use, in order of preference
    slices: tuple[str, ...] = ()  # priced whole: the per-GPU slice SKUs (GPU, vCPUs and memory in one),
                                  # tried before the parts where a series has both
    shares: str = ""             # billed by this other series' SKUs (the list cannot tell them apart)


# Machine series (the type's name up to its size) -> how GCP bills it.
SERIES = {
    "a2-highgpu": Series(("A2",), ("A100",)),
    "a2-ultragpu": Series(("A2",), ("A100 80GB",)),
    "a3-highgpu": Series(("A3",), ("H100 80GB",)),
    # A3 Mega's GPU is billed as "H100 80GB Mega" in some regions and "H100 80GB Plus" in others.
    "a3-megagpu": Series(("A3 Mega", "A3"), ("H100 80GB Mega", "H100 80GB Plus")),
    "a3-ultragpu": Series(("A3 Ultra", "A3"), ("H200 141GB",)),
    "g2-standard": Series(("G2",), ("L4",)),
    "a4-highgpu": Series((), (), slices=("A4 Nvidia B200",)),
    # A3 Edge: A3 High's machine with less network, billed as A3 High is.
    "a3-edgegpu": Series(("A3",), ("H100 80GB",), shares="a3-highgpu"),
    # A4X (GB200): whole, per GPU slice, as A4 is; else by its parts.
    "a4x-highgpu": Series(("A4X",), ("GB200",), slices=("A4X Nvidia GB200",)),
}

Prices = dict[tuple[str, str, str, str], float]    # (kind, name, option, region) -> USD


def series_of(machine_type: str) -> str:
    return "-".join(machine_type.split("-")[:2])


def _price(prices: Prices, kind: str, names: tuple[str, ...], option: str, region: str) -> float | None:
    for name in names:
        if (kind, name, option, region) in prices:
            return prices[(kind, name, option, region)]
    return None


def machine_price(inst, series: Series, option: str, region: str, prices: Prices) -> float | None:
    """gpus x slice where the series is priced whole and the list has its slice, else gpus x GPU +
    vcpus x core + ram_gb x RAM; None where a part has no SKU."""
    if series.slices:
        whole = _price(prices, "slice", series.slices, option, region)
        if whole is not None or not series.gpus:
            return None if whole is None else inst.gpus * whole
    gpu = _price(prices, "gpu", series.gpus, option, region)
    core = _price(prices, "core", series.families, option, region)
    ram = _price(prices, "ram", series.families, option, region)
    if gpu is None or core is None or ram is None:
        return None
    return inst.gpus * gpu + inst.vcpus * core + inst.ram_gb * ram


def missing_parts(inst, series: Series, region: str, prices: Prices) -> tuple[list[str], bool]:
    """The on-demand SKUs the machine lacks in `region`, and whether any of its SKUs (any option)
    lists the region at all."""
    parts = ([("slice", series.slices)] if series.slices else []) + (
        [("gpu", series.gpus), ("core", series.families), ("ram", series.families)] if series.gpus else [])
    missing = [f"{' or '.join(names)} {kind}" for kind, names in parts
               if _price(prices, kind, names, "on_demand", region) is None]
    listed = any(_price(prices, kind, names, o, region) is not None for kind, names in parts for o in PRICE_OPTIONS)
    return missing, listed


def twins_of(name: str, machines: dict) -> set[str]:
    """The catalog's machine types billed by the same SKUs as `name` (A3 Edge and A3 High)."""
    mine = series_of(name)
    own = SERIES[mine].shares or mine
    return {n for n in machines if n != name and series_of(n) in SERIES
            and (SERIES[series_of(n)].shares or series_of(n)) == own and series_of(n) != mine}


def _shared_elsewhere(name: str, region: str, machines: dict) -> bool:
    """Whether `name`'s SKUs cannot say it is what `region` sells: the list prices it there by SKUs
    another catalog type shares, and the catalog sells not `name` but that type there (A3 High
    where the catalog sells A3 Edge), or `name` is the one billed by another's SKUs (A3 Edge) and
    the catalog does not sell it there."""
    twins = twins_of(name, machines)
    if not twins or machines[name].price_row(region) is not None:
        return False
    return bool(SERIES[series_of(name)].shares) or any(machines[t].price_row(region) is not None for t in twins)


def index(components: list[Component]) -> Prices:
    """Each component's price by region (the lowest where two SKUs cover one region)."""
    out: Prices = {}
    for c in components:
        for region in c.regions:
            key = (c.kind, c.name, c.option, region)
            out[key] = min(c.usd, out.get(key, c.usd))
    return out


def _next(client: PriceClient, base: str, key: str) -> Callable[[Any, str], str | None]:
    def next_link(page: Any, url: str) -> str | None:
        token = page.get("nextPageToken") if isinstance(page, dict) else None
        if not token:
            return None
        if not isinstance(token, str) or not TOKEN.match(token):
            raise client.bad_answer(url, f"the nextPageToken is not a page token ({shown(repr(token), 60)})")
        return _url_for(base, key, token)
    return next_link


def _url_for(base: str, key: str, token: str | None = None) -> str:
    params = {"key": key, "currencyCode": "USD", "pageSize": PAGE_SIZE, **({"pageToken": token} if token else {})}
    return base + "?" + urllib.parse.urlencode(params)


def fetch_components(client: PriceClient, key: str, progress: Callable[[str], None]) -> tuple[list[Component], int]:
    base = GCP_BILLING_CATALOG.url()
    found: list[Component] = []
    read = 0
    for url, page in pages(client, _url_for(base, key), _next(client, base, key)):
        skus = page.get("skus", []) if isinstance(page, dict) else None
        if not isinstance(skus, list):
            raise client.bad_answer(url, "no `skus` list")
        read += 1
        progress(f"gcp: {read} pages of SKUs read")
        try:
            found += [c for c in map(component, (s for s in skus if isinstance(s, dict))) if c is not None]
        except BadFigure as exc:
            raise client.bad_answer(url, str(exc)) from None
    return found, read


def refresh(catalog, requested: tuple[str, ...] | None, as_of: str, client: PriceClient,
            progress: Callable[[str], None]) -> Refreshed:
    key = gcp_api_key()
    if not key:
        raise refresh_error("gcp", "C022", "the Cloud Billing Catalog API needs an API key; "
                            f"{' or '.join(GCP_KEY_VARIABLES)} is not set",
                            "create a key (Google Cloud console > APIs & Services > Credentials, with the "
                            f"Cloud Billing API enabled) and export {GCP_KEY_VARIABLES[0]}=<key>")
    components, read = fetch_components(client, key, progress)
    prices = index(components)
    out = Refreshed("gcp", SOURCE_KEY, {
        "title": "Cloud Billing Catalog API, Compute Engine SKUs: a machine type is its GPUs + vCPUs + RAM "
                 "(on-demand, Spot, 1-/3-year resource-based commitments)",
        "url": where(GCP_BILLING_CATALOG.url()), "as_of": as_of}, files=read, terms=TERM_KIND)
    machines = {n: i for n, i in sorted(catalog.instances.items()) if i.provider == "gcp"}
    used = {g for n in machines if series_of(n) in SERIES for g in SERIES[series_of(n)].gpus + SERIES[series_of(n)].slices}
    out.unknown |= {f"{c.name} GPU" for c in components if c.kind in ("gpu", "slice") and c.name not in used}
    regions = sorted({r for c in components for r in c.regions})
    if requested:
        regions = [r for r in regions if r in requested]
        out.skipped += [f"{r}: no Compute Engine SKU in this region" for r in sorted(set(requested) - set(regions))]
    fetched: dict[tuple[str, str], Fetched] = {}
    for name, inst in machines.items():
        series = SERIES.get(series_of(name))
        if series is None:
            out.skipped.append(f"{name}: no known composition for series {series_of(name)}")
            continue
        undecided: list[str] = []
        for region in regions:
            figures = {o: machine_price(inst, series, o, region, prices) for o in PRICE_OPTIONS}
            if figures["on_demand"] is not None:
                if _shared_elsewhere(name, region, machines):
                    undecided.append(region)
                    continue
                fetched[(name, region)] = Fetched(**figures)
                continue
            missing, listed = missing_parts(inst, series, region, prices)
            if listed:
                out.not_offered.append(f"{name} in {region}: some of its SKUs list the region, no on-demand "
                                       f"SKU for its {', '.join(missing)} does")
        if undecided:
            twins = ", ".join(sorted(twins_of(name, machines)))
            out.undecided.append(f"{name} (billed by the same SKUs as {twins}; not written where the catalog does not "
                                 f"sell it and sells those): {', '.join(undecided)}")
    add_rows(out, fetched, catalog)
    return out
