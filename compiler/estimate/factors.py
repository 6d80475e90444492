"""Named factors from the catalog (data/performance.yaml), with '.default' fallbacks.

Every number the performance model uses that is not a physical constant of a GPU or a
model comes through here, so a reviewer can find and override it in one data file.
"""

from __future__ import annotations

from compiler.catalog.model import Catalog


def factor(catalog: Catalog, name: str, *fallbacks: str) -> float:
    """The value of the first of name, *fallbacks present in the catalog."""
    values = catalog.factor_values
    value = values.get(name)
    if value is not None:
        return value
    for key in fallbacks:
        if key in values:
            return values[key]
    raise KeyError(f"catalog has no factor {name!r} (nor {', '.join(fallbacks) or 'a fallback'})")


def per(catalog: Catalog, family: str, *keys: str) -> float:
    """family.k1.k2 ..., then family.default.k2 ..., then family.default: e.g. base_mfu.H100.bf16."""
    name = ".".join((family, *keys))
    fallbacks = []
    if keys:
        fallbacks.append(".".join((family, "default", *keys[1:])))
    fallbacks.append(f"{family}.default")
    return factor(catalog, name, *fallbacks)
