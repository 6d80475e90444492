"""The bundled catalog's data files read on their own, as the tests' oracle: what is sold where
comes from the YAML, not through the compiler's loader or tables."""

from __future__ import annotations

from pathlib import Path

import yaml

DATA = Path(__file__).resolve().parents[1] / "compiler" / "catalog" / "data"


def sold_instances() -> dict[str, dict]:
    """instance -> {provider, gpu, regions}: the price rows the data files give (null = not sold)."""
    out = {}
    for path in sorted(DATA.glob("instances_*.yaml")):
        for name, rec in (yaml.safe_load(path.read_text(encoding="utf-8")).get("instances") or {}).items():
            out[name] = {"provider": rec["provider"], "gpu": rec["gpu"],
                         "regions": {r for r, row in (rec.get("prices") or {}).items() if row is not None}}
    return out
