"""Where the package's data lives once installed: schemas, templates, catalog data.

schemas/ and templates/ sit at the top of the repository and are installed as the
packages compiler._schemas and compiler._templates (see pyproject.toml).
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any


def templates_dir() -> Path:
    return Path(str(files("compiler._templates")))


def catalog_data_dir() -> Path:
    return Path(str(files("compiler.catalog.data")))


@lru_cache(maxsize=None)
def schema(name: str) -> dict[str, Any]:
    """A JSON Schema by file name, e.g. schema('spec.schema.json')."""
    return json.loads(files("compiler._schemas").joinpath(name).read_text(encoding="utf-8"))
