"""`infra-compile catalog refresh PROVIDER`: the catalog's cloud prices, read again from the
providers' public price lists, written as a catalog overlay.

Instance facts (GPUs, vCPUs, RAM, fabric) stay in the hand-kept catalog: a refresh prices only
the instances of that provider that the loaded catalog (built-in plus any --catalog file) knows,
in every region the list offers them (a region the catalog had no row for is added, and said so),
and reports, without adding them, the instances the price list has and the catalog does not. A
type the list prices in a region but does not offer there is reported, not written. Each row
says what its 1-/3-year figures are (`terms`), and no figure of one kind of term is written as
another. One module per provider reads its list (aws, azure, gcp); rows.py turns what was read
into price rows and overlay.py writes them. Nothing is written unless the whole refresh
succeeded: every list is read and the overlay built and checked in memory first.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from compiler.catalog import freshness
from compiler.catalog.refresh import aws, azure, gcp
from compiler.catalog.refresh.http import PriceClient, one_line, refresh_error, where
from compiler.catalog.refresh.overlay import dump, merge, read_existing, write_atomically
from compiler.catalog.refresh.rows import TERMS, Refreshed
from compiler.diagnostics import CompileError
from compiler.source import parse

PROVIDERS = {"aws": aws.refresh, "azure": azure.refresh, "gcp": gcp.refresh}


@dataclass(frozen=True)
class Outcome:
    text: str                  # the overlay, as written (or to print)
    written: Path | None
    summary: tuple[str, ...]   # for people, on stderr


def run(provider: str, *, regions: tuple[str, ...] | None = None, out: Path | None = None,
        catalog_path: str | None = None, progress: Callable[[str], None] = lambda text: None,
        client: PriceClient | None = None, as_of: str | None = None) -> Outcome:
    """Refresh `provider`'s prices into the overlay at `out` (or only return its text)."""
    from compiler.catalog import load_catalog

    catalog = load_catalog(catalog_path)
    existing = read_existing(out, provider) if out else None      # a bad file fails before any download
    client = client or PriceClient(provider)
    refreshed = PROVIDERS[provider](catalog, regions, as_of or freshness.today().isoformat(), client, progress)
    if not refreshed.rows:
        raise refresh_error(provider, "C025", f"the {provider} price list priced none of the catalog's "
                            f"{provider} instances{' in ' + ', '.join(regions) if regions else ''}",
                            "nothing was written; check --regions, or whether the list's format changed")
    overlay, kept = merge(existing, refreshed, catalog, regions)
    text = dump(overlay)
    _loads_as_overlay(text, refreshed)
    if out is not None:
        write_atomically(out, text)
    return Outcome(text, out, tuple(summary(refreshed, kept, out)))


def _loads_as_overlay(text: str, refreshed: Refreshed) -> None:
    """The overlay must load on the built-in catalog before it replaces anything (a refresh that
    wrote a file `--catalog` refuses would break every compile that uses it). It is checked in
    memory; the file it came from was checked before the download (overlay.read_existing), so what
    fails here came from the price list, and the error names the list, not a file."""
    from compiler.catalog import _builtin
    from compiler.catalog.loader import apply_overlay
    from compiler.diagnostics import format_path

    try:
        apply_overlay(_builtin()[0], parse(text, f"the {refreshed.provider} overlay"))
    except CompileError as exc:
        first = exc.diagnostics[0]
        at = f" at {format_path(first.path)}" if first.path else ""
        url = where(refreshed.source.get("url", ""))
        raise refresh_error(refreshed.provider, "C021", f"the prices read from {url} "
                            f"do not load as a catalog overlay{at}: {first.message}",
                            "the list's figures are outside the catalog's ranges, or its format changed; "
                            "nothing was written") from None


def summary(r: Refreshed, kept: list[str], out: Path | None) -> list[str]:
    rows = [(name, region, row) for name, by in sorted(r.rows.items()) for region, row in sorted(by.items())]
    regions = sorted({region for _, region, _ in rows})
    lines = [f"{r.provider}: {len(rows)} price rows for {len(r.rows)} instances in {len(regions)} regions "
             f"({', '.join(regions)}), from {r.files} files or pages"]
    estimated = [f"{name} in {region} ({', '.join(row.estimated)})" for name, region, row in rows if row.estimated]
    if estimated:
        lines.append("  estimated (the list has no figure; the catalog's kept): " + "; ".join(estimated))
    if r.added:
        lines.append("  new regions for the catalog's instances (no price row there before): " + "; ".join(r.added))
    lines += [f"  not offered (priced in the list, not written): {s}" for s in r.not_offered]
    lines += [f"  the list cannot tell which type a region sells (written only where the catalog sells it): {s}"
              for s in r.undecided]
    if r.terms:
        lines.append(f"  1-/3-year figures are {TERMS[r.terms]} (terms: {r.terms})")
    if r.terms_not_kept:
        lines.append("  the catalog's 1-/3-year figures of another kind of term were not kept (null where the "
                     "list has none): " + "; ".join(r.terms_not_kept))
    if r.unknown:
        lines.append("  in the price list but not in the catalog (not added): " + ", ".join(sorted(r.unknown)))
    lines += [f"  skipped: {s}" for s in r.skipped]
    lines += [f"  kept: {k}" for k in kept]
    if out is not None:
        lines.append(f"wrote {out}")
    return [one_line(line) for line in lines]      # names from a list may hold terminal escapes
