"""Edge sites: a fleet of small owned boxes at many locations, each serving its own users.

A site of `type: edge` names one catalog edge box (`box`, an on-prem node model marked
`edge: true`) and a list of `locations`, each with the most boxes it can hold (`max_boxes`), the
power its circuit gives new boxes (`power_kw`, optional), boxes already there (`owned_boxes`) and
the peak requests/s of each service it serves (`peak_rps`; a service it does not list serves its
own `traffic.peak_rps` there, 0 serves nothing). A service runs at an edge site by naming it,
alone, in `sites`.

The point of the edge is that a location's demand is served at that location, never pooled with
another's: the boxes at the next town do not cut a store's latency. So validation expands the
edge site here, at the Spec stage, into one on-prem site per location (`<site>-<location>`,
holding only the box: OnPremSite.edge) and each edge service into one inference workload per
location (`<service>-<location>`, restricted to that location's site, at that location's traffic:
InferenceWorkload.edge). Every later stage (estimate, formulate, solve, audit, render) sees plain
on-prem sites and services and is unchanged; the plan's box count per location is the node count
of the location's pool. docs/spec-reference.md ("Edge sites") says why the expansion is here.

Checks (what the schema cannot say), codes E230-E233:
  E230 `box` that is not a catalog edge box; an edge box owned at a data-centre site
  E231 an edge site named where only a data-centre or cloud site can be (`data.home`, `pin.site`,
       a training job's `sites`), or in a service's `sites` beside another site
  E232 a location whose derived site or workload name is too long or taken, or whose `peak_rps`
       names a service that is not served at this edge site
  E233 an edge service whose slo.availability asks to survive the loss of a site (a location
       is one site), or an edge site under policy.placement cloud
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Iterator

from compiler.catalog.model import Catalog
from compiler.diagnostics import Diagnostic, Path, did_you_mean
from compiler.source import Document
from compiler.spec import (RACK_UNITS, SURVIVES_SITE_LOSS, EdgeOf, EdgeService, InferenceWorkload, OnPremSite,
                           OwnedNodes, Spec)

EDGE = "edge"
MAX_NAME = 63        # the schema's name pattern: what reaches HCL, YAML and shell


def location_site(site: str, location: str) -> str:
    """The on-prem site one location of an edge site becomes."""
    return f"{site}-{location}"


def location_workload(service: str, location: str) -> str:
    """The workload one location's share of an edge service becomes."""
    return f"{service}-{location}"


def _list(v: Any) -> list:
    return v if isinstance(v, list) else []


def _dict(v: Any) -> dict:
    return v if isinstance(v, dict) else {}


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def edge_sites(data: dict) -> dict[str, tuple[int, dict]]:
    """The spec's edge sites by name: (index in `sites`, the site)."""
    out: dict[str, tuple[int, dict]] = {}
    for i, s in enumerate(_list(data.get("sites"))):
        if isinstance(s, dict) and s.get("type") == EDGE and isinstance(s.get("name"), str):
            out.setdefault(s["name"], (i, s))
    return out


def _served(w: dict, edge: dict) -> str | None:
    """The edge site an inference workload is served at (its `sites` names one), or None."""
    names = [n for n in _list(w.get("sites")) if isinstance(n, str) and n in edge]
    return names[0] if names else None


# ----------------------------------------------------------------------------- checks

def check(doc: Document, data: Any, catalog: Catalog) -> list[Diagnostic]:
    """The edge sites' semantic diagnostics (E230-E233); none for a spec without one."""
    if not isinstance(data, dict):
        return []
    return list(_check(doc, data, catalog))


def _check(doc: Document, data: dict, catalog: Catalog) -> Iterator[Diagnostic]:
    def diag(code: str, path: Path, message: str, hint: str | None = None, key: bool = False) -> Diagnostic:
        return Diagnostic(code, message, path, doc.position(path, key=key), hint)

    boxes = sorted(n for n, node in catalog.onprem_nodes.items() if node.edge)
    sites = _list(data.get("sites"))
    workloads = _list(data.get("workloads"))
    # an edge box owned at a data centre: it is never offered there (OnPremSite.offers)
    for i, s in enumerate(sites):
        if _dict(s).get("type") != "on_prem":
            continue
        for j, o in enumerate(_list(_dict(s).get("owned"))):
            inst = _str(_dict(o).get("instance"))
            node = catalog.onprem_nodes.get(inst or "")
            if node is not None and node.edge:
                yield diag("E230", ("sites", i, "owned", j, "instance"),
                           f"'{inst}' is an edge box; a data-centre site does not hold one",
                           "list it as owned_boxes at a location of a site of type edge")
    edge = edge_sites(data)
    if not edge:
        return
    policy = _dict(data.get("policy"))
    if policy.get("placement") == "cloud":
        yield diag("E233", ("policy", "placement"),
                   f"placement 'cloud' leaves edge site '{sorted(edge)[0]}' unused: its locations are owned boxes",
                   "use placement: hybrid, or remove the edge site")
    site_names = {_str(_dict(s).get("name")) for s in sites} - {None}
    work_names = {_str(_dict(w).get("name")) for w in workloads} - {None}
    taken_sites, taken_work = set(site_names), set(work_names)
    services: dict[str, set[str]] = {}          # edge site -> the services it serves
    for k, w in enumerate(workloads):
        w = _dict(w)
        named = [(j, n) for j, n in enumerate(_list(w.get("sites"))) if n in edge]
        for key in (("data", "home"), ("pin", "site")):
            ref = _str(_dict(w.get(key[0])).get(key[1]))
            if ref in edge:
                yield diag("E231", ("workloads", k) + key,
                           f"'{ref}' is an edge site: {'.'.join(key)} names a data-centre or cloud site",
                           "an edge service names its edge site in `sites`; its locations are chosen per location")
        if not named:
            continue
        if w.get("kind") != "inference":
            yield diag("E231", ("workloads", k, "sites", named[0][0]),
                       f"'{named[0][1]}' is an edge site, and edge sites serve inference only",
                       "run training at a data-centre or cloud site")
            continue
        name = _str(w.get("name"))
        if name:      # served there, even where what follows is wrong: no cascade of E232s
            services.setdefault(named[0][1], set()).add(name)
        if len(_list(w.get("sites"))) > 1:
            yield diag("E231", ("workloads", k, "sites"),
                       f"an edge service's `sites` names its edge site '{named[0][1]}' alone: each location "
                       "serves its own users, so no other site can carry their load",
                       f"sites: [{named[0][1]}]; run another service for the other sites")
            continue
        availability = _dict(w.get("slo")).get("availability")
        if isinstance(availability, (int, float)) and availability >= SURVIVES_SITE_LOSS:
            yield diag("E233", ("workloads", k, "slo", "availability"),
                       f"slo.availability {availability:g} asks to carry the load without any one site, and "
                       f"each location of edge site '{named[0][1]}' is one site with no other to fail over to",
                       f"state an availability below {SURVIVES_SITE_LOSS:g}, or serve from a data centre too")
    for name, (i, s) in sorted(edge.items(), key=lambda t: t[1][0]):
        box = _str(s.get("box"))
        if box is not None and (box not in catalog.onprem_nodes or not catalog.onprem_nodes[box].edge):
            what = ("a data-centre node model" if box in catalog.onprem_nodes else f"unknown edge box '{box}'")
            hint = did_you_mean(box, boxes) or ("edge boxes: " + ", ".join(boxes))
            yield diag("E230", ("sites", i, "box"),
                       f"'{box}' is {what}" if box in catalog.onprem_nodes else what, hint)
        for j, loc in enumerate(_list(s.get("locations"))):
            loc = _dict(loc)
            lname = _str(loc.get("name"))
            if lname is None:
                continue
            for derived, what, taken in ((location_site(name, lname), "site", taken_sites),):
                if len(derived) > MAX_NAME:
                    yield diag("E232", ("sites", i, "locations", j, "name"),
                               f"location '{lname}' becomes site '{derived}', longer than {MAX_NAME} characters",
                               "shorten the edge site's or the location's name")
                elif derived in taken:
                    yield diag("E232", ("sites", i, "locations", j, "name"),
                               f"location '{lname}' becomes site '{derived}', a name the spec already uses",
                               "rename the location or the other site")
                taken.add(derived)
            for svc in sorted(services.get(name, ())):
                rps = _dict(loc.get("peak_rps")).get(svc)
                if rps == 0:
                    continue
                derived = location_workload(svc, lname)
                if len(derived) > MAX_NAME:
                    yield diag("E232", ("sites", i, "locations", j, "name"),
                               f"service '{svc}' at location '{lname}' becomes workload '{derived}', longer "
                               f"than {MAX_NAME} characters", "shorten the service's or the location's name")
                elif derived in taken_work:
                    yield diag("E232", ("sites", i, "locations", j, "name"),
                               f"service '{svc}' at location '{lname}' becomes workload '{derived}', a name "
                               "the spec already uses", "rename the location or the other workload")
                taken_work.add(derived)
            for svc in sorted(_dict(loc.get("peak_rps")), key=str):
                if svc not in services.get(name, set()):
                    served = sorted(services.get(name, ()))
                    yield diag("E232", ("sites", i, "locations", j, "peak_rps", svc),
                               f"'{svc}' is not a service of edge site '{name}'",
                               did_you_mean(svc, served) or (f"its services: {', '.join(served)}" if served
                                                             else f"a service names it in `sites: [{name}]`"),
                               key=True)


# ----------------------------------------------------------------------------- expansion

def expand(spec: Spec, data: dict, catalog: Catalog) -> Spec:
    """The Spec with each edge site as one on-prem site per location and each edge service as one
    workload per location it serves (the module's docstring). `spec` holds the data-centre and
    cloud sites only; a spec without an edge site is returned as it is."""
    edge = edge_sites(data)
    if not edge:
        return spec
    located: list[OnPremSite] = []
    for name, (i, s) in sorted(edge.items(), key=lambda t: t[1][0]):
        box = catalog.onprem_nodes[s["box"]]
        pue = float(s.get("pue", 1.0))
        for j, loc in enumerate(s["locations"]):
            most = int(loc["max_boxes"])
            # absent power_kw: the location powers as many boxes as it holds (never the binding limit)
            power = float(loc["power_kw"]) if "power_kw" in loc else most * box.power_kw * pue
            owned = int(loc.get("owned_boxes", 0))
            located.append(OnPremSite(
                name=location_site(name, loc["name"]), power_kw=power,
                electricity_usd_per_kwh=float(loc.get("electricity_usd_per_kwh", s["electricity_usd_per_kwh"])),
                pue=pue, max_racks=max(1, math.ceil(most * box.rack_units / RACK_UNITS)),
                max_gpus=most * box.gpus, owned=(OwnedNodes(box.name, owned),) if owned else (),
                path=f"$.sites[{i}].locations[{j}]", edge=EdgeOf(name, loc["name"], box.name, most, "power_kw" in loc)))
    central = tuple(s.name for s in spec.sites)
    workloads = []
    raw = _list(data.get("workloads"))
    for w, w_raw in zip(spec.workloads, raw):
        at = _served(_dict(w_raw), edge) if isinstance(w, InferenceWorkload) else None
        if at is None:
            # a data-centre or cloud workload never lands on an edge location
            workloads.append(w if w.sites is not None else replace(w, sites=central))
            continue
        for loc in edge[at][1]["locations"]:
            rps = float(_dict(loc.get("peak_rps")).get(w.name, w.traffic.peak_rps))
            if rps <= 0:
                continue       # the location does not serve it
            workloads.append(replace(w, name=location_workload(w.name, loc["name"]),
                                     traffic=replace(w.traffic, peak_rps=rps),
                                     sites=(location_site(at, loc["name"]),),
                                     edge=EdgeService(w.name, at, loc["name"])))
    return replace(spec, sites=spec.sites + tuple(located), workloads=tuple(workloads))


def locations(spec: Spec) -> tuple[OnPremSite, ...]:
    """The spec's edge locations, as expanded (edge site, then location, in the spec's order)."""
    return tuple(s for s in spec.sites if isinstance(s, OnPremSite) and s.edge is not None)
