"""The scenarios file: named sets of changes to one spec, ranges expanded, every problem located.

    load_scenarios(path, spec_doc) -> Scenarios      or CompileError with every problem at once

A factor written as a range (`{from: 0.6, to: 1.2, step: 0.1}` or `{values: [...]}`) expands into
one scenario per point, named `<name>@<point>`; a scenario holds at most one range, so a sweep
grows linearly with what is written (a grid is written as several scenarios). Names a change
refers to (workloads, sites) must exist in the spec, and a price filter must match some price
of the catalog, so a typo is an error here rather than a scenario that silently equals the base.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler.diagnostics import CompileError, Diagnostic, did_you_mean
from compiler.source import Document, load

MAX_POINTS = 100      # points one range may expand to: a typo'd step must not start 10,000 compiles


@dataclass(frozen=True)
class PriceFactor:
    """Multiply every price that matches (None matches anything): cloud rows per node-hour,
    and on-prem nodes' capex (provider on_prem, pricing purchase)."""
    factor: float
    gpu: str | None = None
    provider: str | None = None
    region: str | None = None
    pricing: str | None = None


@dataclass(frozen=True)
class Scaled:
    factor: float
    workloads: tuple[str, ...] | None = None     # None: every workload of the kind


@dataclass(frozen=True)
class Availability:
    value: float
    workloads: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Scenario:
    name: str                                     # folder name: a range's point follows '@'
    path: tuple                                   # where it is written in the scenarios file
    description: str = ""
    prices: tuple[PriceFactor, ...] = ()
    traffic: Scaled | None = None
    tokens: Scaled | None = None
    availability: Availability | None = None
    policy: tuple[tuple[str, Any], ...] = ()      # keys set in the spec's policy, in order
    remove_sites: tuple[str, ...] = ()
    add_sites: tuple[Any, ...] = ()               # site mappings, as the spec writes them
    remove_workloads: tuple[str, ...] = ()
    swept: str = ""                               # the ranged parameter, e.g. "prices[0].factor"
    point: float | None = None                    # its value in this scenario


@dataclass(frozen=True)
class Scenarios:
    items: tuple[Scenario, ...]
    doc: Document


def _range_points(r: dict) -> list[float]:
    if "values" in r:
        return [float(v) for v in r["values"]]
    lo, hi, step = float(r["from"]), float(r["to"]), float(r["step"])
    n = int((hi - lo) / step + 1e-9) + 1 if hi >= lo else 0
    return [round(lo + k * step, 10) for k in range(min(n, MAX_POINTS + 1))]


RANGE_KEYS = ("from", "to", "step", "values")


def _is_range(v: Any) -> bool:
    return isinstance(v, dict) and any(k in v for k in RANGE_KEYS)


def _ranges(raw: dict, path: tuple) -> list[tuple[tuple, dict]]:
    """(path, range mapping) of every range in one scenario. A traffic or tokens mapping is a
    range itself when it holds the range's keys, or holds one under `factor`."""
    out = []
    for k, p in enumerate(raw.get("prices") or []):
        if _is_range(p.get("factor")):
            out.append((path + ("prices", k, "factor"), p["factor"]))
    for key in ("traffic", "tokens"):
        v = raw.get(key)
        if isinstance(v, dict) and _is_range(v.get("factor")):
            out.append((path + (key, "factor"), v["factor"]))
        elif _is_range(v):
            out.append((path + (key,), v))
    return out


def _range_problem(r: dict) -> str | None:
    """What is wrong with a range's keys (the schema checks each value), or None."""
    steps = [k for k in ("from", "to", "step") if k in r]
    if "values" in r and steps:
        return "give either from/to/step or values, not both"
    if "values" not in r and len(steps) < 3:
        return f"a range needs from, to and step (missing {', '.join(k for k in ('from', 'to', 'step') if k not in r)})"
    return None


def _label(path: tuple, base: tuple) -> str:
    rel = path[len(base):]
    return "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p) for i, p in enumerate(rel))


def _set(raw: Any, rel: tuple, value: float) -> Any:
    """A copy of `raw` with the value at `rel` replaced; a range that also names workloads
    becomes {factor: value, workloads: ...}."""
    if not rel:
        if isinstance(raw, dict) and "workloads" in raw:
            return {"factor": value, "workloads": raw["workloads"]}
        return value
    head, rest = rel[0], rel[1:]
    if isinstance(raw, list):
        return [(_set(x, rest, value) if i == head else x) for i, x in enumerate(raw)]
    return {k: (_set(v, rest, value) if k == head else v) for k, v in raw.items()}


def _point_name(name: str, point: float) -> str:
    return f"{name}@{point:g}"


def _scaled(v: Any) -> Scaled | None:
    """A traffic or tokens change, its range already replaced by one point (by _set)."""
    if v is None:
        return None
    if isinstance(v, dict):
        return Scaled(float(v["factor"]), tuple(v["workloads"]) if "workloads" in v else None)
    return Scaled(float(v))


def _scenario(raw: dict, path: tuple, swept: str = "", point: float | None = None) -> Scenario:
    avail = raw.get("availability")
    if isinstance(avail, dict):
        availability = Availability(float(avail["value"]), tuple(avail["workloads"]) if "workloads" in avail else None)
    else:
        availability = None if avail is None else Availability(float(avail))
    return Scenario(
        name=raw["name"] if point is None else _point_name(raw["name"], point), path=path,
        description=raw.get("description", ""),
        prices=tuple(PriceFactor(float(p["factor"]), p.get("gpu"), p.get("provider"), p.get("region"),
                                 p.get("pricing")) for p in raw.get("prices") or []),
        traffic=_scaled(raw.get("traffic")), tokens=_scaled(raw.get("tokens")), availability=availability,
        policy=tuple((raw.get("policy") or {}).items()),
        remove_sites=tuple(raw.get("remove_sites") or ()), add_sites=tuple(raw.get("add_sites") or ()),
        remove_workloads=tuple(raw.get("remove_workloads") or ()), swept=swept, point=point)


def _names_exist(doc: Document, raw: dict, path: tuple, spec: dict, catalog) -> list[Diagnostic]:
    """E705: a change that names a workload or site the spec lacks, or a price filter no price
    of the catalog matches."""
    out = []
    workloads = {w.get("name"): w.get("kind") for w in spec.get("workloads") or [] if isinstance(w, dict)}
    sites = {s.get("name") for s in spec.get("sites") or [] if isinstance(s, dict)}

    def unknown(kind: str, name: str, where: tuple, choices) -> None:
        out.append(Diagnostic("E705", f"no {kind} '{name}' in the spec", where, doc.position(where),
                              did_you_mean(name, choices) or f"the spec's {kind}s: {', '.join(sorted(choices))}"))

    for key, kind in (("traffic", "inference"), ("tokens", "training"), ("availability", "inference")):
        v = raw.get(key)
        names = v.get("workloads") if isinstance(v, dict) else None
        for i, name in enumerate(names or []):
            if name not in workloads:
                unknown("workload", name, path + (key, "workloads", i), workloads)
            elif workloads[name] != kind:
                out.append(Diagnostic("E705", f"'{name}' is a {workloads[name]} workload; {key} changes "
                                      f"{kind} workloads", path + (key, "workloads", i),
                                      doc.position(path + (key, "workloads", i))))
        if v is not None and names is None and kind not in workloads.values():
            out.append(Diagnostic("E705", f"the spec has no {kind} workload for '{key}' to change",
                                  path + (key,), doc.position(path + (key,), key=True)))
    for i, name in enumerate(raw.get("remove_workloads") or []):
        if name not in workloads:
            unknown("workload", name, path + ("remove_workloads", i), workloads)
    for i, name in enumerate(raw.get("remove_sites") or []):
        if name not in sites:
            unknown("site", name, path + ("remove_sites", i), sites)
    from compiler.sweep.apply import matches_any

    for i, p in enumerate(raw.get("prices") or []):
        if not matches_any(PriceFactor(1.0, p.get("gpu"), p.get("provider"), p.get("region"), p.get("pricing")),
                           catalog):
            where = path + ("prices", i)
            out.append(Diagnostic("E705", "no price in the catalog matches this filter", where,
                                  doc.position(where),
                                  "check the GPU name (infra-compile catalog --section gpus), provider, "
                                  "region and pricing"))
    return out


def load_scenarios(path: str | Path, spec: dict, catalog) -> Scenarios:
    """The scenarios of the file at `path` for the spec data `spec`, ranges expanded, in file
    order; or CompileError (exit 2) with every problem, located in the scenarios file."""
    from compiler.validate import schema_diagnostics

    doc = load(path)
    problems = schema_diagnostics(doc, doc.data, "scenarios.schema.json")
    if problems:
        raise CompileError(problems, source=doc.source)
    items: list[Scenario] = []
    first_at: dict[str, tuple] = {}
    for k, raw in enumerate(doc.data["scenarios"]):
        at = ("scenarios", k)
        problems += _names_exist(doc, raw, at, spec, catalog)
        ranges = _ranges(raw, at)
        shape = [Diagnostic("E703", why, where, doc.position(where))
                 for where, r in ranges for why in [_range_problem(r)] if why]
        for key in ("traffic", "tokens"):
            v = raw.get(key)
            if isinstance(v, dict) and not _is_range(v) and "factor" not in v:
                where = at + (key,)
                shape.append(Diagnostic("E703", f"'{key}' needs a factor (a number or a range)", where,
                                        doc.position(where), f"e.g. {key}: {{factor: 2, workloads: [...]}}"))
        if shape:
            problems += shape
            continue
        if len(ranges) > 1:
            where = ranges[1][0]
            problems.append(Diagnostic("E703", f"a scenario sweeps one factor; '{raw['name']}' has "
                                       f"{len(ranges)} ranges", where, doc.position(where),
                                       "write one scenario per range"))
            continue
        if ranges:
            where, r = ranges[0]
            points = _range_points(r)
            if not points or len(points) > MAX_POINTS:
                why = "'to' is below 'from'" if not points else f"more than {MAX_POINTS} points"
                problems.append(Diagnostic("E703", f"this range gives {why}", where, doc.position(where)))
                continue
            expanded = [_scenario(_set(raw, where[len(at):], p), at, _label(where, at), p) for p in points]
        else:
            expanded = [_scenario(raw, at)]
        for s in expanded:
            if s.name in first_at:
                problems.append(Diagnostic("E702", f"scenario name '{s.name}' is used twice", at + ("name",),
                                           doc.position(at + ("name",)),
                                           "every scenario needs its own name: it is its folder"))
            first_at.setdefault(s.name, at)
            items.append(s)
    if problems:
        raise CompileError(problems, source=doc.source)
    return Scenarios(tuple(items), doc)
