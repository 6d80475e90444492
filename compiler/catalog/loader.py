"""Catalog data files -> a frozen Catalog.

Every compiler/catalog/data/*.yaml is read (sorted by name) with compiler.source.parse, so
problems point at a file, line and column. Each file is validated against
schemas/catalog.schema.json; the sections of all files are then merged (a record name may
appear in one file only), every `source:` is resolved against the merged `sources` table and
cross-references are checked (instance/node GPUs, node fabrics).

A user's overlay (`--catalog FILE`) has the same shape but may be partial: a record whose
name already exists is updated field by field (an instance's `prices` merge by region), a
new name is added and must then be complete. Only the records the overlay touches are
re-checked, against the full schema.

Diagnostic codes:
    C001 unknown key                      C005 unknown GPU or fabric reference
    C002 bad value / missing field        C006 version missing or given twice
    C003 source key does not resolve      C007 as_of is not a real date, or (overlay) in the future
    C004 duplicate name across files      C008 no catalog data files found

An overlay is read as a spec is (compiler.source: size, depth, alias and number limits, E001-E008),
and only from a regular file: a pipe, a socket or a device (/dev/zero, /dev/stdin) is refused before
anything is read from it, so a path cannot block the compile or feed it without end.
"""

from __future__ import annotations

import copy
import datetime as dt
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import jsonschema

from compiler.catalog.model import (Accelerator, Catalog, CloudInstance, Egress, Fabric, Factor, GkeDriver,
                                    Gpu, InstancePrice, Model, NcclTopology, OnPremNode, ServingImage,
                                    SourceRef, StorageTier)
from compiler.diagnostics import UNPRINTABLE_IN_TEXT, CompileError, Diagnostic, Source, did_you_mean
from compiler.resources import schema
from compiler.source import MAX_BYTES, Document, Unreadable, parse, read_text

SCHEMA_NAME = "catalog.schema.json"

# Mapping sections (name -> record) and the $defs entry each record follows.
RECORD_SECTIONS: Mapping[str, str] = {
    "gpus": "gpu",
    "instances": "instance",
    "onprem_nodes": "onprem_node",
    "fabrics": "fabric",
    "storage": "storage_tier",
    "egress": "egress",
    "models": "model",
}

Key = tuple[str, str]  # (section, name); factors use ("factors", name), sources ("sources", key)


@dataclass
class _Merged:
    """The raw (plain dict) catalog, merged across files, with where each entry came from."""

    version: str | None = None
    version_doc: Document | None = None
    sections: dict[str, dict[str, dict[str, Any]]] = field(
        default_factory=lambda: {s: {} for s in (*RECORD_SECTIONS, "sources", "factors")})
    origin: dict[Key, tuple[Document, tuple]] = field(default_factory=dict)

    def copy(self) -> "_Merged":
        """Deep copy of the data, shallow of the origins (Documents are never mutated)."""
        return _Merged(self.version, self.version_doc, copy.deepcopy(self.sections), dict(self.origin))


class _Problems:
    """Diagnostics grouped by the file they point into (CompileError carries one source)."""

    def __init__(self) -> None:
        self.by_doc: dict[str, tuple[Document, list[Diagnostic]]] = {}

    def add(self, doc: Document, code: str, message: str, path: tuple, *, key: bool = False,
            hint: str | None = None) -> None:
        entry = self.by_doc.setdefault(doc.source.filename, (doc, []))
        entry[1].append(Diagnostic(code, message, tuple(path), doc.position(path, key=key), hint))

    def raise_if_any(self) -> None:
        # One file at a time: a CompileError renders against a single source text.
        for name in sorted(self.by_doc):
            doc, diags = self.by_doc[name]
            if diags:
                raise CompileError(_dedupe(diags), 2, doc.source)


def _dedupe(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    seen, out = set(), []
    for d in diags:
        k = (d.code, d.message, d.path)
        if k not in seen:
            seen.add(k)
            out.append(d)
    return out


# ---------------------------------------------------------------- schema checks

def _strip_required(node: Any) -> Any:
    """The overlay schema: the full one with `required` removed, except that a price row
    must still name its source (a changed price without a source is untraceable)."""
    if isinstance(node, dict):
        return {k: _strip_required(v) for k, v in node.items() if k != "required"}
    if isinstance(node, list):
        return [_strip_required(v) for v in node]
    return node


def _overlay_schema() -> dict[str, Any]:
    full = schema(SCHEMA_NAME)
    relaxed = _strip_required(full)
    relaxed["$defs"]["instance_price"]["required"] = ["source"]
    relaxed["$defs"]["factor"]["required"] = ["name"]
    return relaxed


def _record_schema(definition: str) -> dict[str, Any]:
    full = schema(SCHEMA_NAME)
    return {"$schema": full["$schema"], "$ref": f"#/$defs/{definition}", "$defs": full["$defs"]}


def _schema_errors(doc: Document, data: Any, schema_doc: dict[str, Any], base: tuple,
                   problems: _Problems) -> None:
    validator = jsonschema.Draft202012Validator(schema_doc)
    errors = sorted(validator.iter_errors(data), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    for err in errors:
        for leaf in _leaves(err):
            _report_schema_error(doc, leaf, base, problems, data)


def _leaves(err: jsonschema.ValidationError) -> list[jsonschema.ValidationError]:
    """The most specific errors under an if/then/allOf/$ref chain."""
    if err.context:
        out: list[jsonschema.ValidationError] = []
        for sub in err.context:
            out.extend(_leaves(sub))
        return out
    return [err]


def _at(data: Any, path: Iterable[Any]) -> Any:
    for part in path:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _report_schema_error(doc: Document, err: jsonschema.ValidationError, base: tuple,
                         problems: _Problems, data: Any) -> None:
    path = base + tuple(err.absolute_path)
    validator, sch, inst = err.validator, err.schema, err.instance
    container = _at(data, err.absolute_path)
    if (isinstance(inst, str) and isinstance(container, dict) and inst in container
            and validator in ("pattern", "enum", "maxLength", "minLength")):
        # A propertyNames failure: jsonschema reports it at the mapping, about one of its keys.
        what = f"be one of {', '.join(map(str, sch['enum']))}" if validator == "enum" else f"match {sch.get('pattern', 'the name rules')}"
        hint = did_you_mean(inst, sch.get("enum", ())) if validator == "enum" else _NAME_HINTS.get(sch.get("pattern"))
        problems.add(doc, "C002", f"bad name {inst!r}: must {what}", path + (inst,), key=True, hint=hint)
        return
    if validator == "additionalProperties" and isinstance(inst, dict):
        known = sorted(sch.get("properties", {}))
        for extra in sorted(k for k in inst if k not in sch.get("properties", {})):
            problems.add(doc, "C001", f"unknown key '{extra}'", path + (extra,), key=True,
                         hint=did_you_mean(extra, known) or (f"allowed: {', '.join(known)}" if known else None))
    elif validator == "required":
        missing = [k for k in sch.get("required", ()) if isinstance(inst, dict) and k not in inst]
        if missing:
            fields = ", ".join(f"'{m}'" for m in missing)
            problems.add(doc, "C002", f"missing required field{'s' if len(missing) > 1 else ''} {fields}",
                         path, key=True)
    elif validator == "dependentRequired" and isinstance(inst, dict):
        # A price row that says what its terms are gives both term figures: merged field by field
        # onto a row of another kind of term (a Savings Plan estimate), it would otherwise pass
        # that row's figure off as its own. A serving image's new tag comes with its vLLM release,
        # or the server would be given the flags of the release it replaced.
        for key, needs in sorted(sch.get("dependentRequired", {}).items()):
            missing = [k for k in needs if key in inst and k not in inst]
            if missing:
                problems.add(doc, "C002", f"{'a row' if key == 'terms' else 'a record'} that states `{key}` "
                             f"gives {' and '.join(needs)}; missing {', '.join(repr(m) for m in missing)}",
                             path, key=True, hint=_DEPENDENT_HINTS.get(key))
    elif validator == "enum":
        hint = did_you_mean(inst, sch.get("enum", ())) if isinstance(inst, str) else None
        allowed = ", ".join(map(str, sch.get("enum", ())))
        problems.add(doc, "C002", f"must be one of {allowed}, got {inst!r}", path, hint=hint)
    else:
        problems.add(doc, "C002", _plain_message(err), path, hint=_plain_hint(err))


_DEPENDENT_HINTS = {"terms": "write null for a term that is not sold",
                    "version": "state the vLLM release the image's tag runs: vllm: \"0.10.1.1\" (docs/catalog.md)"}


# The catalog's name patterns (schemas/catalog.schema.json), said for people. Names reach
# Terraform, Slurm and Kubernetes files and the report, as the spec's names do.
_NAME_HINTS = {
    "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$": "a name is letters, digits, '.', '_' and '-', starting with a letter "
                                          "or digit, at most 64 characters (as the provider spells it: p5.48xlarge)",
    "^[a-z0-9][a-z0-9_.-]{0,79}$": "a source key is lower-case letters, digits, '.', '_' and '-', "
                                    "at most 80 characters",
    "^[a-z][a-z0-9-]{1,39}$": "a region is the provider's region name: lower-case letters, digits and '-' (us-east-1)",
}


def _plain_hint(err: jsonschema.ValidationError) -> str:
    v, s = err.validator, err.schema
    if v in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        bounds = [f"{op} {s[k]}" for k, op in (("exclusiveMinimum", ">"), ("minimum", ">="), ("maximum", "<="),
                                                 ("exclusiveMaximum", "<")) if k in s]
        return f"the catalog takes {' and '.join(bounds)} here; the unit is in the key's name (docs/catalog.md)"
    if v == "pattern":
        return _NAME_HINTS.get(s["pattern"], "docs/catalog.md gives each field's form")
    return "docs/catalog.md gives each section's fields, their types and units"


def _plain_message(err: jsonschema.ValidationError) -> str:
    v, s, inst = err.validator, err.schema, err.instance
    if v == "type":
        want = s.get("type")
        want = " or ".join(want) if isinstance(want, list) else want
        return f"must be {want}, got {type(inst).__name__} {inst!r}"
    if v in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        op = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}[v]
        return f"must be {op} {s[v]}, got {inst}"
    if v == "pattern":
        return f"{inst!r} does not match the pattern {s['pattern']}"
    return err.message


# ---------------------------------------------------------------- reading files

def _read_builtin(paths: Iterable[Path]) -> list[Document]:
    docs = []
    for p in paths:
        # Errors name the file relative to the package so messages look the same everywhere.
        docs.append(parse(p.read_text(encoding="utf-8"), f"compiler/catalog/data/{p.name}", trusted=True))
    return docs


def _merge_file(doc: Document, merged: _Merged, problems: _Problems, *, overlay: bool) -> set[Key]:
    """Fold one file into `merged`; returns the keys it touched."""
    data = doc.data
    touched: set[Key] = set()
    if "version" in data:
        if merged.version is not None and not overlay:
            first = merged.version_doc.source.filename if merged.version_doc else "?"
            problems.add(doc, "C006", f"version is already set in {first}", ("version",), key=True,
                         hint="keep `version` in sources.yaml only")
        elif overlay and merged.version is not None:
            merged.version = f"{merged.version}+{data['version']}"
        else:
            merged.version, merged.version_doc = data["version"], doc
    for section in (*RECORD_SECTIONS, "sources"):
        for name, record in sorted((data.get(section) or {}).items()):
            key = (section, name)
            table = merged.sections[section]
            if name in table and not overlay:
                first = merged.origin[key][0].source.filename
                problems.add(doc, "C004", f"duplicate {_singular(section)} '{name}' (also in {first})",
                             (section, name), key=True)
                continue
            table[name] = _deep_merge(table.get(name), record) if overlay else copy.deepcopy(record)
            merged.origin[key] = (doc, (section, name))
            touched.add(key)
    for i, factor in enumerate(data.get("factors") or []):
        name = factor.get("name")
        key = ("factors", name)
        table = merged.sections["factors"]
        if name in table and not overlay:
            first = merged.origin[key][0].source.filename
            problems.add(doc, "C004", f"duplicate factor '{name}' (also in {first})", ("factors", i, "name"))
            continue
        table[name] = _deep_merge(table.get(name), factor) if overlay else copy.deepcopy(factor)
        merged.origin[key] = (doc, ("factors", i))
        touched.add(key)
    return touched


def _deep_merge(base: Any, update: Any) -> Any:
    """Field-by-field update; nested mappings (tflops, prices by region) merge recursively,
    lists and scalars are replaced."""
    if isinstance(base, dict) and isinstance(update, dict):
        out = dict(base)
        for k, v in update.items():
            out[k] = _deep_merge(base.get(k), v)
        return out
    return copy.deepcopy(update)


def _singular(section: str) -> str:
    return {"gpus": "GPU", "instances": "instance", "onprem_nodes": "on-prem node", "fabrics": "fabric",
            "storage": "storage tier", "egress": "egress entry", "models": "model",
            "sources": "source", "factors": "factor"}[section]


# ---------------------------------------------------------------- semantic checks

def _check(merged: _Merged, keys: Iterable[Key], problems: _Problems, *, latest: dt.date | None = None) -> None:
    """Source references, as_of dates and cross-references of the given entries; an as_of after
    `latest` (given for overlays) is refused."""
    s = merged.sections
    sources, gpus, fabrics = s["sources"], s["gpus"], s["fabrics"]

    def need_source(doc: Document, path: tuple, ref: Any) -> None:
        if isinstance(ref, str) and ref not in sources:
            problems.add(doc, "C003", f"source '{ref}' is not in any `sources` table", path,
                         hint=did_you_mean(ref, sources) or "add it under `sources:` with title, url and as_of")

    for key in sorted(keys, key=lambda k: (k[0], str(k[1]))):
        section, name = key
        doc, path = merged.origin[key]
        record = s[section].get(name)
        if not isinstance(record, dict):
            continue
        if section == "sources":
            as_of = record.get("as_of")
            try:
                date = dt.date.fromisoformat(str(as_of))
            except ValueError:
                problems.add(doc, "C007", f"as_of must be a real ISO date (YYYY-MM-DD), got {as_of!r}",
                             path + ("as_of",))
                continue
            if latest is not None and date > latest:
                problems.add(doc, "C007", f"as_of {as_of} is in the future (today is "
                             f"{latest - FUTURE_GRACE})", path + ("as_of",),
                             hint="write the date the figures were read: a later one would keep the stale-price "
                                  "warning (C010) quiet; today is SOURCE_DATE_EPOCH's day where it is set")
            continue
        need_source(doc, path + ("source",), record.get("source"))
        for part in ("serving", "training", "gke_driver", "accelerator", "nccl_topology"):   # a GPU's
            # images and GKE driver choice, a GCP accelerator type, an Azure VM's NCCL topology file
            if isinstance(record.get(part), dict):
                need_source(doc, path + (part, "source"), record[part].get("source"))
        if section == "instances":
            for region, row in sorted((record.get("prices") or {}).items()):
                if isinstance(row, dict):
                    need_source(doc, path + ("prices", region, "source"), row.get("source"))
        if section in ("instances", "onprem_nodes"):
            gpu = record.get("gpu")
            if isinstance(gpu, str) and gpu not in gpus:
                problems.add(doc, "C005", f"unknown GPU '{gpu}'", path + ("gpu",),
                             hint=did_you_mean(gpu, gpus) or "add it under `gpus:`")
        if section == "instances":
            domain, own = record.get("nvlink_domain_gpus"), record.get("gpus")
            if isinstance(domain, int) and isinstance(own, int) and own > 0 and (domain <= own or domain % own):
                problems.add(doc, "C002", f"nvlink_domain_gpus {domain} is not a whole number (above one) of the "
                             f"instance's {own} GPUs", path + ("nvlink_domain_gpus",),
                             hint="give the GPUs the rack-scale NVLink domain joins (GB200 NVL72: 72), or leave "
                                  "it out where the domain is the instance's own GPUs")
        if section == "onprem_nodes":
            for i, fab in enumerate(record.get("fabrics") or ()):
                if fab not in fabrics:
                    problems.add(doc, "C005", f"unknown fabric '{fab}'", path + ("fabrics", i),
                                 hint=did_you_mean(fab, fabrics) or "add it under `fabrics:`")


# ---------------------------------------------------------------- building records

def _frozen(mapping: Mapping[str, Any]) -> dict[str, Any]:
    # A plain dict in key order (not MappingProxyType: dataclasses.asdict and deepcopy
    # must keep working on catalog records). Nobody mutates it; the records are frozen.
    return dict(sorted(mapping.items()))


def _opt_float(v: Any) -> float | None:
    return None if v is None else float(v)


def _opt_int(v: Any) -> int | None:
    return None if v is None else int(v)


def _gke_driver(r: Mapping[str, Any] | None) -> GkeDriver | None:
    return GkeDriver(version=r["version"], source=r["source"]) if r else None


def _serving(r: Mapping[str, Any] | None) -> ServingImage | None:
    if not r:
        return None
    vllm = tuple(int(x) for x in str(r["vllm"]).split(".")) if r.get("vllm") else ()
    return ServingImage(image=r["image"], version=str(r["version"]), runtime=r["runtime"], driver=r["driver"],
                        source=r["source"], vllm=vllm)


def _build(merged: _Merged) -> Catalog:
    s = merged.sections
    sources = {k: SourceRef(k, v["title"], v["url"], v["as_of"], v.get("note", "")) for k, v in s["sources"].items()}
    gpus = {n: Gpu(name=n, vendor=r["vendor"], memory_gb=float(r["memory_gb"]),
                   memory_bandwidth_gb_s=float(r["memory_bandwidth_gb_s"]),
                   nvlink_gb_s=float(r["nvlink_gb_s"]), tdp_w=float(r["tdp_w"]),
                   tflops=_frozen({p: float(x) for p, x in r["tflops"].items()}), source=r["source"],
                   architecture=r.get("architecture", ""), serving=_serving(r.get("serving")),
                   training=_serving(r.get("training")), gke_driver=_gke_driver(r.get("gke_driver")))
            for n, r in s["gpus"].items()}
    instances = {}
    for n, r in s["instances"].items():
        prices = tuple(
            InstancePrice(region=region, on_demand=float(p["on_demand"]), spot=_opt_float(p["spot"]),
                          reserved_1y=_opt_float(p["reserved_1y"]), reserved_3y=_opt_float(p["reserved_3y"]),
                          source=p["source"], estimated=tuple(p.get("estimated") or ()))
            for region, p in sorted(r["prices"].items()))
        instances[n] = CloudInstance(name=n, provider=r["provider"], gpu=r["gpu"], gpus=int(r["gpus"]),
                                     vcpus=int(r["vcpus"]), ram_gb=float(r["ram_gb"]), fabric=r["fabric"],
                                     network_gbps=float(r["network_gbps"]), prices=prices, source=r["source"],
                                     sockets=int(r["sockets"]), local_nvme_tb=float(r.get("local_nvme_tb", 0.0)),
                                     accelerator=(Accelerator(r["accelerator"]["type"], r["accelerator"]["source"])
                                                  if r.get("accelerator") else None),
                                     nccl_topology=(NcclTopology(r["nccl_topology"]["file"], r["nccl_topology"]["source"])
                                                    if r.get("nccl_topology") else None),
                                     nvlink_domain_gpus=_opt_int(r.get("nvlink_domain_gpus")))
    nodes = {}
    for n, r in s["onprem_nodes"].items():
        extra = {"fabrics": tuple(r["fabrics"])} if "fabrics" in r else {}
        if r.get("edge"):
            extra["edge"] = True
        nodes[n] = OnPremNode(name=n, gpu=r["gpu"], gpus=int(r["gpus"]), vcpus=int(r["vcpus"]),
                              sockets=int(r["sockets"]), ram_gb=float(r["ram_gb"]),
                              capex_usd=float(r["capex_usd"]), power_kw=float(r["power_kw"]),
                              rack_units=int(r["rack_units"]), useful_life_years=float(r["useful_life_years"]),
                              support_usd_per_year=float(r["support_usd_per_year"]), source=r["source"], **extra)
    fabrics = {n: Fabric(name=n, kind=r["kind"], port_gbps=float(r["port_gbps"]),
                         ports_per_node=int(r["ports_per_node"]), cost_per_port_usd=float(r["cost_per_port_usd"]),
                         switch_radix=int(r["switch_radix"]), switch_cost_usd=float(r["switch_cost_usd"]),
                         switch_power_kw=float(r["switch_power_kw"]), source=r["source"])
               for n, r in s["fabrics"].items()}
    storage = {n: StorageTier(name=n, provider=r["provider"], usd_per_tb_month=float(r["usd_per_tb_month"]),
                              capex_usd_per_tb=float(r["capex_usd_per_tb"]),
                              throughput_gb_s_per_tb=float(r["throughput_gb_s_per_tb"]),
                              min_tb=float(r["min_tb"]), source=r["source"])
               for n, r in s["storage"].items()}
    egress = {n: Egress(provider=n, usd_per_gb=float(r["usd_per_gb"]), source=r["source"])
              for n, r in s["egress"].items()}
    models = {n: Model(name=n, family=r["family"], arch=r["arch"], params_b=float(r["params_b"]),
                       source=r["source"], active_params_b=_opt_float(r.get("active_params_b")),
                       layers=_opt_int(r.get("layers")), hidden=_opt_int(r.get("hidden")),
                       heads=_opt_int(r.get("heads")), kv_heads=_opt_int(r.get("kv_heads")),
                       vocab=_opt_int(r.get("vocab")), ffn_hidden=_opt_int(r.get("ffn_hidden")),
                       experts=_opt_int(r.get("experts")), experts_per_token=_opt_int(r.get("experts_per_token")),
                       gflops_per_sample=_opt_float(r.get("gflops_per_sample")),
                       image_size=_opt_int(r.get("image_size")), head_width=_opt_int(r.get("head_dim")),
                       kv_lora_rank=_opt_int(r.get("kv_lora_rank")),
                       qk_rope_head_dim=_opt_int(r.get("qk_rope_head_dim")),
                       qk_nope_head_dim=_opt_int(r.get("qk_nope_head_dim")),
                       v_head_dim=_opt_int(r.get("v_head_dim")))
              for n, r in s["models"].items()}
    factors = {n: Factor(name=n, value=float(r["value"]), source=r["source"], note=r.get("note", ""))
               for n, r in s["factors"].items()}
    return Catalog(version=merged.version or "", sources=_frozen(sources), gpus=_frozen(gpus),
                   instances=_frozen(instances), onprem_nodes=_frozen(nodes), fabrics=_frozen(fabrics),
                   storage=_frozen(storage), egress=_frozen(egress), models=_frozen(models),
                   factors=_frozen(factors))


# ---------------------------------------------------------------- entry points

def load_builtin(data_dir: Path) -> _Merged:
    """Read, validate and merge the shipped data files; raise CompileError on any problem."""
    paths = sorted(data_dir.glob("*.yaml"), key=lambda p: p.name)
    if not paths:
        raise CompileError([Diagnostic("C008", f"no catalog data files in {data_dir}")], 2)
    docs = _read_builtin(paths)
    problems = _Problems()
    full = schema(SCHEMA_NAME)
    for doc in docs:
        _schema_errors(doc, doc.data, full, (), problems)
    problems.raise_if_any()
    merged = _Merged()
    keys: set[Key] = set()
    for doc in docs:
        keys |= _merge_file(doc, merged, problems, overlay=False)
    if merged.version is None:
        problems.add(docs[0], "C006", "no data file sets `version`", ())
    _check(merged, keys, problems)
    problems.raise_if_any()
    return merged


# A source read "today" in a time zone ahead of this machine's is a day ahead: not refused.
FUTURE_GRACE = dt.timedelta(days=1)


_TOO_LARGE = "every provider's refreshed prices together make a far smaller file"


def read_overlay(path: str | os.PathLike) -> Document:
    """An overlay file as a Document: only a regular file, at most compiler.source.MAX_BYTES, read
    and parsed by compiler.source (its limits and E001-E008 diagnostics)."""
    return parse(read_overlay_text(path), str(path))


def read_overlay_text(path: str | os.PathLike) -> str:
    """The text of an overlay file; E001/E002 for a path that is not a regular file of at most
    compiler.source.MAX_BYTES of UTF-8 text."""
    name = str(path)

    def fail(message: str, hint: str | None = None, code: str = "E001") -> CompileError:
        return CompileError([Diagnostic(code, message, hint=hint)], 2, Source.of(name, ""))

    try:
        return read_text(path, MAX_BYTES)
    except Unreadable as exc:
        if exc.why == "large":
            raise fail(f"file is larger than {MAX_BYTES} bytes", _TOO_LARGE, "E002") from None
        raise fail(*{
            "missing": ("no such file", "check the --catalog path"),
            "directory": ("is a directory, not a catalog file", "give the overlay file itself"),
            "special": ("is not a regular file (a pipe, socket or device)",
                        "give a catalog overlay file; it is read whole before anything else is done"),
            "text": (exc.detail, "an overlay is a YAML text file"),
        }.get(exc.why, (f"cannot read: {exc.detail}", "check the file's permissions"))) from None




def _control_characters(doc: Document, problems: _Problems) -> None:
    """Strings of an overlay reach terminals, reports and rendered files: no control characters
    (a terminal escape in a source's title would repaint the screen of whoever lists the catalog)."""
    def walk(value: Any, path: tuple) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if UNPRINTABLE_IN_TEXT.search(str(k)):
                    problems.add(doc, "C002", f"control character in the name {str(k)!r}", path + (k,), key=True,
                                 hint="names and texts are printable characters only")
                walk(v, path + (k,))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, path + (i,))
        elif isinstance(value, str) and UNPRINTABLE_IN_TEXT.search(value):
            problems.add(doc, "C002", f"control character in {value[:60]!r}", path,
                         hint="names and texts are printable characters only (a tab or a new line is fine)")
    walk(doc.data, ())


def apply_overlay(base: _Merged, overlay: str | Path | Document) -> _Merged:
    """Merge a user's overlay (a file, or a Document already parsed) into a copy of `base`;
    raise CompileError on any problem."""
    from compiler.catalog.freshness import today

    doc = overlay if isinstance(overlay, Document) else read_overlay(overlay)
    problems = _Problems()
    _control_characters(doc, problems)
    _schema_errors(doc, doc.data, _overlay_schema(), (), problems)
    problems.raise_if_any()
    merged = base.copy()
    touched = _merge_file(doc, merged, problems, overlay=True)
    # A touched record must be complete after the merge (a new GPU needs every field).
    for section, name in sorted(touched, key=lambda k: (k[0], str(k[1]))):
        definition = RECORD_SECTIONS.get(section) or {"sources": "source", "factors": "factor"}[section]
        _, path = merged.origin[(section, name)]
        _schema_errors(doc, merged.sections[section][name], _record_schema(definition), path, problems)
    # Then what the overlay touched: sources, dates (none after today), GPU and fabric references.
    _check(merged, touched, problems, latest=today() + FUTURE_GRACE)
    problems.raise_if_any()
    return merged


def build(merged: _Merged) -> Catalog:
    return _build(merged)
