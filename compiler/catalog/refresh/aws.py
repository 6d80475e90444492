"""AWS: on-demand and reserved prices from the Price List bulk API, spot from the spot feed.

No credentials: the region index (offers/v1.0/aws/AmazonEC2/current/region_index.json) names
each region's offer file, and each file is streamed (compiler.catalog.refresh.aws_offer). The
files are large (us-east-1's is several GB), so `--regions` saves a lot of time.
"""

from __future__ import annotations

import urllib.parse
from typing import Callable

from compiler.catalog.refresh import aws_offer, aws_spot, regions as regions_
from compiler.catalog.refresh.endpoints import AWS_PRICE_LIST, AWS_SPOT_FEED
from compiler.catalog.refresh.http import PriceClient
from compiler.catalog.refresh.rows import Fetched, Refreshed, add_rows

SOURCE_KEY = "aws-price-list"
INDEX_PATH = "/offers/v1.0/aws/AmazonEC2/current/region_index.json"
PROGRESS_BYTES = 16 * 2**20     # how often a streamed file's progress is updated


class _Counting:
    """A file-like wrapper that reports how much of a streamed file has been read."""

    def __init__(self, raw, report: Callable[[int], None]):
        self.raw, self.report, self.done, self._next = raw, report, 0, PROGRESS_BYTES

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        self.done += len(data)
        if self.done >= self._next:
            self._next += PROGRESS_BYTES
            self.report(self.done)
        return data


def _index(client: PriceClient, base: str) -> tuple[str, dict]:
    url = base + INDEX_PATH
    index = client.get_json(url)
    regions = index.get("regions") if isinstance(index, dict) else None
    if not isinstance(regions, dict) or not all(isinstance(r, dict) and r.get("currentVersionUrl")
                                                 for r in regions.values()):
        raise client.bad_answer(url, "no `regions` mapping with a currentVersionUrl for each region")
    return url, index


def _spot(client: PriceClient) -> dict[tuple[str, str], float]:
    url = AWS_SPOT_FEED.url()
    text = client.get_text(url)
    try:
        return aws_spot.spot_prices(client.parse_json(url, aws_spot.unwrap(text)))
    except ValueError as exc:
        raise client.bad_answer(url, str(exc)) from None


def _offer(client: PriceClient, url: str, region: str, known: set[str],
           progress: Callable[[str], None]) -> aws_offer.OfferPrices:
    response = client.open(url)
    reader = _Counting(response, lambda n: progress(f"aws: {region} offer file, {n / 1e9:.2f} GB read"))
    try:
        with response:
            return aws_offer.read_offer(reader, known)
    except (aws_offer.OfferFormatError, KeyError, TypeError, ValueError) as exc:
        raise client.bad_answer(url, f"{type(exc).__name__}: {exc}") from None
    except OSError as exc:       # the connection broke while the file streamed
        raise client.unreachable(url, exc) from None


def refresh(catalog, requested: tuple[str, ...] | None, as_of: str, client: PriceClient,
            progress: Callable[[str], None]) -> Refreshed:
    known = {n for n, i in catalog.instances.items() if i.provider == "aws"}
    base = AWS_PRICE_LIST.url()
    progress("aws: region index")
    index_url, index = _index(client, base)
    chosen = regions_.choose("aws", index["regions"], requested)
    progress("aws: spot price feed")
    spot = _spot(client)
    note = f"offer files of {index['publicationDate']}" if index.get("publicationDate") else ""
    out = Refreshed("aws", SOURCE_KEY, {
        "title": "AWS Price List bulk API (AmazonEC2 offer files): Linux, shared tenancy, on-demand and "
                 "Standard Reserved Instances, No Upfront (effective hourly rate over the term); spot from "
                 "the feed of the EC2 Spot pricing page",
        "url": index_url, "as_of": as_of, **({"note": note} if note else {})}, files=2)
    fetched: dict[tuple[str, str], Fetched] = {}
    for n, region in enumerate(chosen, 1):
        progress(f"aws: {region} offer file ({n} of {len(chosen)})")
        path = index["regions"][region]["currentVersionUrl"]      # "/offers/v1.0/aws/AmazonEC2/..."
        url = base + path if path.startswith("/") else urllib.parse.urljoin(base + "/", path)
        offer = _offer(client, url, region, known, progress)
        out.files += 1
        out.unknown |= offer.gpu_types - known
        for itype in sorted(set(offer.on_demand) | {t for t, _ in offer.reserved}):
            fetched[(itype, region)] = Fetched(
                on_demand=offer.on_demand.get(itype), spot=spot.get((region, itype)),
                reserved_1y=offer.reserved.get((itype, 1)), reserved_3y=offer.reserved.get((itype, 3)))
    add_rows(out, fetched, catalog)
    return out
