"""The hardware, price and model catalog.

    load_catalog()                 the built-in data files (read once per process)
    load_catalog("ours.yaml")      the same with a user's overlay applied (--catalog FILE)

Figures live in compiler/catalog/data/*.yaml, each with a `source` (title, url, as_of);
see docs/catalog.md.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from compiler.catalog import loader
from compiler.catalog.model import Catalog
from compiler.resources import catalog_data_dir

__all__ = ["Catalog", "load_catalog"]


@lru_cache(maxsize=1)
def _builtin() -> tuple[loader._Merged, Catalog]:
    merged = loader.load_builtin(catalog_data_dir())
    return merged, loader.build(merged)


def load_catalog(overlay: str | Path | None = None) -> Catalog:
    """The built-in catalog, with `overlay` (a YAML file of the same shape) applied.

    Raises CompileError (exit 2) with file:line:col diagnostics for a bad file.
    """
    merged, catalog = _builtin()
    if overlay is None:
        return catalog
    return loader.build(loader.apply_overlay(merged, overlay))
