"""A scenario as the two files a compile reads: the changed spec, and a catalog overlay.

    scenario_spec(scenario, spec) -> str               the spec's YAML with the changes made
    scenario_overlay(scenario, catalog, base) -> str | None   price rows multiplied (an overlay)

Both are plain inputs of `infra-compile`: the sweep writes them into the scenario's folder, so
`infra-compile <dir>/spec.yaml --catalog <dir>/catalog.yaml` compiles the scenario again, alone,
to the same bytes. Pure functions of their arguments.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

from compiler.sweep.scenarios import PriceFactor, Scenario

CLOUD_OPTIONS = ("on_demand", "spot", "reserved_1y", "reserved_3y")


def _cloud_match(f: PriceFactor, provider: str, gpu: str, region: str, option: str) -> bool:
    return ((f.gpu is None or f.gpu == gpu) and (f.provider is None or f.provider == provider)
            and (f.region is None or f.region == region) and (f.pricing is None or f.pricing == option))


def _onprem_match(f: PriceFactor, gpu: str) -> bool:
    return ((f.gpu is None or f.gpu == gpu) and f.provider in (None, "on_prem") and f.region is None
            and f.pricing in (None, "purchase"))


def matches_any(f: PriceFactor, catalog) -> bool:
    """Whether `f` multiplies at least one price of `catalog`."""
    for inst in catalog.instances.values():
        for row in inst.prices:
            if any(row.get(o) is not None and _cloud_match(f, inst.provider, inst.gpu, row.region, o)
                   for o in CLOUD_OPTIONS):
                return True
    return any(_onprem_match(f, node.gpu) for node in catalog.onprem_nodes.values())


def _factor(factors, match) -> float:
    out = 1.0
    for f in factors:
        if match(f):
            out *= f.factor
    return out


def _money(x: float) -> float:
    """Prices as the catalog writes them: 6 significant digits after the multiplication, so
    0.7 x 21.96 is 15.372, not 15.371999999999998."""
    return float(f"{x:.6g}")


def scenario_overlay(scenario: Scenario, catalog, base_version: str) -> str | None:
    """The catalog overlay that multiplies the prices `scenario` changes (None: it changes none).
    Every row it writes cites a source of its own, derived from the row's: the title says which
    factor was applied to which figure, the date is the original figure's."""
    if not scenario.prices:
        return None
    sources: dict[str, dict] = {}
    instances: dict[str, dict] = {}

    def derived(key: str, what: str) -> str:
        src = catalog.sources[key]
        new = f"sweep.{key}"[:80]
        sources[new] = {"title": f"Scenario {scenario.name}: {what} of '{src.title}'"[:300],
                        "url": "docs/sweep.md#prices", "as_of": src.as_of}
        return new

    for name in sorted(catalog.instances):
        inst = catalog.instances[name]
        rows = {}
        for row in inst.prices:
            factors = {o: _factor(scenario.prices, lambda f, o=o: _cloud_match(f, inst.provider, inst.gpu,
                                                                            row.region, o))
                       for o in CLOUD_OPTIONS if row.get(o) is not None}
            if all(x == 1.0 for x in factors.values()):
                continue
            changed = ", ".join(f"{o} x{x:g}" for o, x in factors.items() if x != 1.0)
            out: dict[str, Any] = {o: (None if row.get(o) is None else _money(row.get(o) * factors.get(o, 1.0)))
                                   for o in CLOUD_OPTIONS}
            out["source"] = derived(row.source, changed)
            rows[row.region] = out
        if rows:
            instances[name] = {"prices": rows}
    nodes = {}
    for name in sorted(catalog.onprem_nodes):
        node = catalog.onprem_nodes[name]
        x = _factor(scenario.prices, lambda f: _onprem_match(f, node.gpu))
        if x != 1.0:
            nodes[name] = {"capex_usd": _money(node.capex_usd * x),
                           "source": derived(node.source, f"capex x{x:g}")}
    version = ("sweep-" + "".join(c if c.isalnum() or c in "._-" else "-" for c in scenario.name))[:32]
    doc: dict[str, Any] = {"version": version, "sources": dict(sorted(sources.items()))}
    if instances:
        doc["instances"] = instances
    if nodes:
        doc["onprem_nodes"] = nodes
    head = (f"# Catalog overlay of scenario '{scenario.name}' on catalog {base_version}: "
            "the sweep's price factors.\n")
    return head + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=1000)


def _selected(workload: dict, kind: str, names: tuple[str, ...] | None) -> bool:
    return workload.get("kind") == kind and (names is None or workload.get("name") in names)


def scenario_spec(scenario: Scenario, spec: dict, spec_file: str) -> str:
    """The spec data `spec` (as read from `spec_file`) with `scenario`'s changes, as YAML."""
    data = copy.deepcopy(spec)
    workloads = [w for w in data.get("workloads", []) if w.get("name") not in scenario.remove_workloads]
    for w in workloads:
        if scenario.traffic and _selected(w, "inference", scenario.traffic.workloads):
            w["traffic"]["peak_rps"] = w["traffic"]["peak_rps"] * scenario.traffic.factor
        if scenario.tokens and _selected(w, "training", scenario.tokens.workloads):
            key = "tokens" if "tokens" in w else "epochs"
            w[key] = w[key] * scenario.tokens.factor
        if scenario.availability and _selected(w, "inference", scenario.availability.workloads):
            w.setdefault("slo", {})["availability"] = scenario.availability.value
    data["workloads"] = workloads
    data["sites"] = [s for s in data.get("sites", []) if s.get("name") not in scenario.remove_sites]
    data["sites"] += [copy.deepcopy(s) for s in scenario.add_sites]
    if scenario.policy:
        data["policy"] = {**(data.get("policy") or {}), **dict(scenario.policy)}
    head = f"# Scenario '{scenario.name}' of {spec_file}"
    head += f": {scenario.description}\n" if scenario.description else "\n"
    return head + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1000)
