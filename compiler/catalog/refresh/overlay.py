"""The overlay a refresh writes: the catalog's own format, merged into the file it replaces.

An overlay written by `catalog refresh` is an ordinary `--catalog` file (docs/catalog.md):

    version: prices-2026-12-01
    sources:
      aws-price-list: {title: ..., url: ..., as_of: "2026-12-01"}
    instances:
      p5.48xlarge:
        prices:
          us-east-1: {estimated: [], on_demand: 55.04, reserved_1y: ..., reserved_3y: ..., source: aws-price-list,
                      spot: ..., terms: reserved-instance}

`estimated` names the options of the row that its source did not give (the loaded catalog's
figures, kept); it is always written, so a refreshed row never inherits an older row's list.
`terms` says what the row's reserved_1y and reserved_3y are (rows.TERMS: AWS Reserved Instances,
Azure reservations, GCP committed use discounts); every option is written, null or not, so a row
never inherits a figure of another kind of term from the row it replaces.

Refreshing into an existing file replaces only what an earlier refresh of the same provider wrote
there (its rows, in the regions refreshed, and its source); other providers' rows, rows of the
file's own sources (a negotiated price) and every other section are kept. The three providers
can so share one file. Nothing is written until the whole file is built and loads as a catalog
overlay; then it replaces the old one atomically (a temporary file in the same folder, renamed).
"""

from __future__ import annotations

import copy
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import yaml

from compiler.catalog.refresh.http import refresh_error
from compiler.catalog.refresh.rows import PriceRow, Refreshed
from compiler.source import parse

REFRESH_SOURCES = ("aws-price-list", "azure-retail-prices", "gcp-billing-catalog")
VERSION_PREFIX = "prices-"
HEADER = ("# Cloud list prices written by `infra-compile catalog refresh` (docs/catalog.md, \"Refreshing\n"
          "# prices\"); use it with --catalog. A row's `estimated` options are not from its source:\n"
          "# the list had no figure, and the catalog's own (an estimate) was kept.\n")


class _Flow(dict):
    """A mapping written on one line, as the catalog's price rows are."""


class _FlowList(list):
    pass


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Flow, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", sorted(v.items()),
                                                                flow_style=True))
_Dumper.add_representer(_FlowList, lambda d, v: d.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=True))


def row_dict(row: PriceRow, source: str) -> dict[str, Any]:
    return {"on_demand": row.on_demand, "spot": row.spot, "reserved_1y": row.reserved_1y,
            "reserved_3y": row.reserved_3y, "source": source, "estimated": list(row.estimated),
            **({"terms": row.terms} if row.terms else {})}


def read_existing(path: Path, provider: str) -> dict[str, Any] | None:
    """The overlay file being replaced, as plain data; None when there is none. It is read as any
    overlay is (compiler.catalog.loader.read_overlay: a regular file within the size and depth
    limits) and must load as one on the built-in catalog: the refreshed file will have to, and a
    problem of the file's own is named at its line before anything is downloaded."""
    from compiler.catalog import _builtin
    from compiler.catalog.loader import apply_overlay, read_overlay_text

    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise refresh_error(provider, "C024", f"cannot read {path}: {exc.strerror}",
                            "it was left as it is") from None
    if not stat.S_ISREG(info.st_mode):
        raise refresh_error(provider, "C024", f"{path} is not a regular file (a directory, pipe, socket or device)",
                            "give -o the overlay file to write; nothing was read or written")
    text = read_overlay_text(path)
    if not any(line.strip() and not line.lstrip().startswith("#") for line in text.splitlines()):
        return None             # only comments: nothing to keep
    doc = parse(text, str(path))
    apply_overlay(_builtin()[0], doc)
    return doc.data


def merge(existing: dict[str, Any] | None, refreshed: Refreshed, catalog,
          requested: tuple[str, ...] | None) -> tuple[dict[str, Any], list[str]]:
    """The new overlay, and the rows not written because the file has its own there."""
    out = copy.deepcopy(existing) if existing else {}
    key = refreshed.source_key
    instances = out.setdefault("instances", {}) or {}
    out["instances"] = instances
    for name, record in list(instances.items()):
        inst = catalog.instances.get(name)
        prices = (record or {}).get("prices") or {}
        if inst is None or inst.provider != refreshed.provider:
            continue
        for region, row in list(prices.items()):
            if isinstance(row, dict) and row.get("source") == key and (not requested or region in requested):
                del prices[region]
    kept = []
    for name, by_region in sorted(refreshed.rows.items()):
        record = instances.setdefault(name, {}) or {}
        instances[name] = record
        prices = record.setdefault("prices", {})
        for region, row in sorted(by_region.items()):
            old = prices.get(region)
            if isinstance(old, dict) and old.get("source") not in (None, key):
                kept.append(f"{name} in {region}: the file's own row (source {old.get('source')}) was kept")
                continue
            prices[region] = row_dict(row, key)
    out["instances"] = {n: r for n, r in instances.items() if (r or {}).get("prices") or set(r or {}) - {"prices"}}
    out.setdefault("sources", {})[key] = dict(refreshed.source)
    stamps = [s["as_of"] for k, s in out["sources"].items() if k in REFRESH_SOURCES and isinstance(s, dict)]
    if str(out.get("version", VERSION_PREFIX)).startswith(VERSION_PREFIX):
        out["version"] = VERSION_PREFIX + max(map(str, stamps))
    return out, kept


def dump(overlay: dict[str, Any]) -> str:
    """YAML with keys sorted and each price row on one line: the same overlay, the same bytes."""
    data = copy.deepcopy(overlay)
    for record in (data.get("instances") or {}).values():
        for region, row in list(((record or {}).get("prices") or {}).items()):
            if isinstance(row, dict):
                flow = _Flow(row)
                if isinstance(row.get("estimated"), list):
                    flow["estimated"] = _FlowList(row["estimated"])
                record["prices"][region] = flow
    body = yaml.dump(data, Dumper=_Dumper, sort_keys=True, default_flow_style=False, width=10_000,
                     allow_unicode=True)
    return HEADER + body


def write_atomically(path: Path, text: str) -> None:
    """Replace `path` with `text` in one rename; on any failure the old file is as it was."""
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask()
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
