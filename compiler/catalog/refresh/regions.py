"""Which regions a refresh prices: those asked for with --regions, or every one the list has."""

from __future__ import annotations

from typing import Iterable

from compiler.catalog.refresh.http import refresh_error
from compiler.diagnostics import did_you_mean


def choose(provider: str, available: Iterable[str], requested: tuple[str, ...] | None) -> list[str]:
    """`requested` (in sorted order) where the list knows each, else every region it has.
    A region the list does not know is an error (a typo would otherwise price nothing)."""
    known = sorted(set(available))
    if not requested:
        return known
    unknown = [r for r in requested if r not in known]
    if unknown:
        hint = did_you_mean(unknown[0], known) or f"the list has: {', '.join(known)}"
        raise refresh_error(provider, "C023", f"region{'s' if len(unknown) > 1 else ''} "
                            f"{', '.join(repr(r) for r in unknown)} not in the {provider} price list", hint)
    return sorted(set(requested))


def split(values: Iterable[str] | None) -> tuple[str, ...] | None:
    """--regions a,b --regions c -> ('a', 'b', 'c'); nothing given -> None."""
    out = tuple(r.strip() for v in (values or ()) for r in v.split(",") if r.strip())
    return out or None
