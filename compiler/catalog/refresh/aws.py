"""AWS: on-demand and reserved prices from the Price List bulk API, spot from the spot feed.

No credentials: the region index (offers/v1.0/aws/AmazonEC2/current/region_index.json) names
each region's offer file, and each file is streamed (compiler.catalog.refresh.aws_offer). The
files are large (us-east-1's is several GB): only the regions asked for (`--regions`) are
downloaded, and progress counts the bytes read (of the file's Content-Length, where sent).

Offerings: a catalog type is written for a region only where the region's offer file sells it
on demand as plain Linux (aws_offer); one the file prices only otherwise (Capacity Blocks, a
capacity reservation, dedicated hosts), or one the spot feed prices in a region whose offer file
does not, is reported in `not_offered`, not written.

Terms: the rows' 1-/3-year figures are Standard Reserved Instance prices (`terms:
reserved-instance`). Savings Plan rates are another list (AWSComputeSavingsPlan) and are not
read; the catalog's own 1-/3-year figures for AWS are Savings Plan estimates, so where the offer
file has no Reserved Instance for a type, the row's figure is null, never the estimate: only a
figure an earlier refresh of this list wrote (a Reserved Instance price) is kept.
"""

from __future__ import annotations

import re
from typing import Callable

import ijson

from compiler.catalog.refresh import aws_offer, aws_spot, regions as regions_
from compiler.catalog.refresh.endpoints import AWS_PRICE_LIST, AWS_SPOT_FEED
from compiler.catalog.refresh.http import PriceClient, shown, where
from compiler.catalog.refresh.rows import REGION, Fetched, Refreshed, add_rows

SOURCE_KEY = "aws-price-list"
TERM_KIND = "reserved-instance"
INDEX_PATH = "/offers/v1.0/aws/AmazonEC2/current/region_index.json"
PROGRESS_BYTES = 16 * 2**20     # how often a streamed file's progress is updated
PUBLICATION = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{1,20}Z?$")


class _Counting:
    """A file-like wrapper that reports how much of a streamed file has been read (every
    PROGRESS_BYTES, and once at its end)."""

    def __init__(self, raw, report: Callable[[int], None]):
        self.raw, self.report, self.done, self._next, self._ended = raw, report, 0, PROGRESS_BYTES, False

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        self.done += len(data)
        if data and self.done >= self._next:
            self._next += PROGRESS_BYTES
            self.report(self.done)
        elif not data and n != 0 and not self._ended:
            self._ended = True
            self.report(self.done)
        return data


def size_text(done: int, total: int | None) -> str:
    """'1.2 of 4.8 GB (25%)', '310.0 MB', '1.6 of 1.6 kB (100%)': bytes read, for people."""
    most = max(done, total or 0)
    unit, scale = ("GB", 1e9) if most >= 1e9 else ("MB", 1e6) if most >= 1e6 else ("kB", 1e3)
    if total:
        return f"{done / scale:.1f} of {total / scale:.1f} {unit} ({min(100, 100 * done // total)}%)"
    return f"{done / scale:.1f} {unit}"


def _index(client: PriceClient, base: str) -> tuple[str, dict]:
    url = base + INDEX_PATH
    index = client.get_json(url)
    regions = index.get("regions") if isinstance(index, dict) else None
    if not isinstance(regions, dict) or not all(isinstance(r, dict) and r.get("currentVersionUrl")
                                                 for r in regions.values()):
        raise client.bad_answer(url, "no `regions` mapping with a currentVersionUrl for each region")
    odd = sorted(repr(r) for r in regions if not REGION.match(r))
    if odd:
        raise client.bad_answer(url, f"{shown(odd[0], 60)} is not a region name (lower-case letters, digits and '-')")
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
    body = client.stream(url)
    total = getattr(body, "total", None)
    reader = _Counting(body, lambda n: progress(f"aws: {region} offer file, {size_text(n, total)} read"))
    try:
        with body:
            return aws_offer.read_offer(reader, known)
    except ijson.JSONError as exc:
        # ijson's messages draw the text on several lines; the first says what went wrong
        first = (str(exc).strip().splitlines() or ["not JSON"])[0]
        raise client.bad_answer(url, f"the file is truncated or not JSON ({shown(first, 120)})") from None
    except (aws_offer.OfferFormatError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise client.bad_answer(url, f"{type(exc).__name__}: {shown(exc, 200)}") from None


def _not_offered_why(offer: aws_offer.OfferPrices, itype: str) -> str:
    if itype in offer.plain:
        return "the offer file has no on-demand rate for it as plain Linux (reserved terms only)"
    if itype in offer.other:
        return "the offer file prices it only as " + ", ".join(sorted(offer.other[itype]))
    return "the spot feed prices it; the region's offer file does not sell it"


def _note(index: dict) -> str:
    """The index's publication date for the source's note, where it looks like one."""
    date = index.get("publicationDate")
    return f"offer files of {date}" if isinstance(date, str) and PUBLICATION.match(date) else ""


def refresh(catalog, requested: tuple[str, ...] | None, as_of: str, client: PriceClient,
            progress: Callable[[str], None]) -> Refreshed:
    known = {n for n, i in catalog.instances.items() if i.provider == "aws"}
    base = AWS_PRICE_LIST.url()
    progress("aws: region index")
    index_url, index = _index(client, base)
    chosen = regions_.choose("aws", index["regions"], requested)
    progress("aws: spot price feed")
    spot = _spot(client)
    note = _note(index)
    out = Refreshed("aws", SOURCE_KEY, {
        "title": "AWS Price List bulk API (AmazonEC2 offer files): Linux, shared tenancy, on-demand and "
                 "Standard Reserved Instances, No Upfront (effective hourly rate over the term); spot from "
                 "the feed of the EC2 Spot pricing page",
        "url": where(index_url), "as_of": as_of, **({"note": note} if note else {})}, files=2,
        terms=TERM_KIND, same_terms=lambda row: row.source == SOURCE_KEY)
    fetched: dict[tuple[str, str], Fetched] = {}
    for n, region in enumerate(chosen, 1):
        progress(f"aws: {region} offer file ({n} of {len(chosen)})")
        path = index["regions"][region]["currentVersionUrl"]      # "/offers/v1.0/aws/AmazonEC2/..."
        if isinstance(path, str) and path.startswith("/") and not path.startswith("//"):
            path = base + path          # under a mirror's path prefix, as the index is
        url = client.link(index_url, path, f"{region} offer file link")     # on the index's origin
        offer = _offer(client, url, region, known, progress)
        out.files += 1
        out.unknown |= offer.gpu_types - known
        spot_here = {t for (r, t) in spot if r == region and t in known}
        for itype in sorted((set(offer.other) | offer.plain | spot_here) - set(offer.on_demand)):
            out.not_offered.append(f"{itype} in {region}: {_not_offered_why(offer, itype)}")
        for itype in sorted(offer.on_demand):
            fetched[(itype, region)] = Fetched(
                on_demand=offer.on_demand.get(itype), spot=spot.get((region, itype)),
                reserved_1y=offer.reserved.get((itype, 1)), reserved_3y=offer.reserved.get((itype, 3)))
    add_rows(out, fetched, catalog)
    return out
