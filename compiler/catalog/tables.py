"""`infra-compile catalog`: the catalog as rich tables, or as deterministic JSON.

Rows are sorted by name (instances by provider, then name; prices by region) so the
output is the same on every machine. `--region`, `--gpu` and `--provider` narrow both
forms alike (`Filters`); a section a given filter says nothing about is left out.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from rich.console import Console
from rich.table import Table

from compiler.catalog.model import PRICE_OPTIONS, Catalog
from compiler.diagnostics import CompileError, Diagnostic, Source, did_you_mean

PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")


def _num(value: float | int | None, digits: int = 2) -> str:
    if value is None:
        return "-"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.{digits}f}"


def _money(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


def _gpus(cat: Catalog) -> Table:
    t = Table(title=f"GPUs (dense peak TFLOP/s; catalog {cat.version})")
    for col in ("GPU", "vendor", *PRECISIONS, "mem GB", "mem GB/s", "NVLink GB/s", "TDP W", "source"):
        t.add_column(col, justify="left" if col in ("GPU", "vendor", "source") else "right")
    for g in cat.gpus.values():
        t.add_row(g.name, g.vendor, *(_num(g.tflops.get(p), 1) for p in PRECISIONS),
                  _num(g.memory_gb), _num(g.memory_bandwidth_gb_s), _num(g.nvlink_gb_s), _num(g.tdp_w), g.source)
    return t


def _instances(cat: Catalog) -> Table:
    t = Table(title="Cloud instances (USD per node-hour; '-' = not sold)")
    for col in ("provider", "instance", "GPUs", "vCPU", "RAM GB", "fabric", "Gb/s", "region",
                "on-demand", "spot", "1y", "3y", "price source", "as of"):
        t.add_column(col, justify="right" if col in ("GPUs", "vCPU", "RAM GB", "Gb/s", "on-demand", "spot", "1y", "3y")
                     else "left")
    for inst in sorted(cat.instances.values(), key=lambda i: (i.provider, i.name)):
        for n, price in enumerate(sorted(inst.prices, key=lambda p: p.region)):
            head = ((inst.provider, inst.name, f"{inst.gpus}x {inst.gpu}", str(inst.vcpus), _num(inst.ram_gb),
                     inst.fabric, _num(inst.network_gbps)) if n == 0 else ("",) * 7)
            t.add_row(*head, price.region, *(_money(price.get(o)) for o in PRICE_OPTIONS), price.source,
                      cat.sources[price.source].as_of)
    return t


def region_rows(cat: Catalog) -> list[tuple[str, str, list[str], list[str], str]]:
    """(provider, region, instances, GPUs, oldest as_of) for each priced region, sorted."""
    rows: dict[tuple[str, str], list] = {}
    for inst in cat.instances.values():
        for price in inst.prices:
            rows.setdefault((inst.provider, price.region), []).append((inst, cat.sources[price.source].as_of))
    return [(provider, region, sorted(i.name for i, _ in items), sorted({i.gpu for i, _ in items}),
             min(a for _, a in items)) for (provider, region), items in sorted(rows.items())]


def _regions(cat: Catalog) -> Table:
    """Each region's instances and how old their prices are: where a spec's site can rent what."""
    t = Table(title="Regions (instances priced in each; as of: the oldest of their prices)")
    for col in ("provider", "region", "instances", "GPUs", "as of"):
        t.add_column(col)
    for provider, region, names, gpus, as_of in region_rows(cat):
        t.add_row(provider, region, ", ".join(names), ", ".join(gpus), as_of)
    return t


def _onprem(cat: Catalog) -> Table:
    t = Table(title="On-prem node models")
    for col in ("node", "GPUs", "vCPU", "RAM GB", "capex USD", "kW", "RU", "life y", "support USD/y", "fabrics", "source"):
        t.add_column(col, justify="left" if col in ("node", "fabrics", "source") else "right")
    for n in cat.onprem_nodes.values():
        t.add_row(n.name, f"{n.gpus}x {n.gpu}", str(n.vcpus), _num(n.ram_gb), _num(n.capex_usd), _num(n.power_kw),
                  str(n.rack_units), _num(n.useful_life_years), _num(n.support_usd_per_year),
                  ", ".join(n.fabrics), n.source)
    return t


def _fabrics(cat: Catalog) -> Table:
    t = Table(title="On-prem fabrics")
    for col in ("fabric", "kind", "port Gb/s", "ports/node", "USD/port", "switch radix", "switch USD", "switch kW", "source"):
        t.add_column(col, justify="left" if col in ("fabric", "kind", "source") else "right")
    for f in cat.fabrics.values():
        t.add_row(f.name, f.kind, _num(f.port_gbps), str(f.ports_per_node), _num(f.cost_per_port_usd),
                  str(f.switch_radix), _num(f.switch_cost_usd), _num(f.switch_power_kw), f.source)
    return t


def _storage(cat: Catalog) -> Table:
    t = Table(title="Storage tiers and egress")
    for col in ("tier", "provider", "USD/TB-month", "capex USD/TB", "GB/s per TB", "min TB", "source"):
        t.add_column(col, justify="left" if col in ("tier", "provider", "source") else "right")
    for s in sorted(cat.storage.values(), key=lambda s: (s.provider, s.name)):
        t.add_row(s.name, s.provider, _num(s.usd_per_tb_month), _num(s.capex_usd_per_tb),
                  _num(s.throughput_gb_s_per_tb), _num(s.min_tb), s.source)
    for e in cat.egress.values():
        t.add_row("egress", e.provider, f"{e.usd_per_gb:.3f}/GB", "", "", "", e.source)
    return t


def _models(cat: Catalog) -> Table:
    t = Table(title="Models")
    cols = ("model", "arch", "params B", "active B", "layers", "hidden", "heads", "kv", "vocab", "ffn",
            "experts", "GFLOP/sample", "source")
    for col in cols:
        t.add_column(col, justify="left" if col in ("model", "arch", "source") else "right")
    for m in cat.models.values():
        experts = f"{m.experts_per_token}/{m.experts}" if m.experts else "-"
        t.add_row(m.name, m.arch, f"{m.params_b:g}", "-" if m.active_params_b is None else f"{m.active_params_b:g}", _num(m.layers), _num(m.hidden),
                  _num(m.heads), _num(m.kv_heads), _num(m.vocab), _num(m.ffn_hidden), experts,
                  _num(m.gflops_per_sample, 1), m.source)
    return t


def oldest_price(cat: Catalog) -> tuple[str, str] | None:
    """(as_of, source key) of the oldest price in the catalog: an instance's or a node model's."""
    keys = {p.source for i in cat.instances.values() for p in i.prices} | {n.source for n in cat.onprem_nodes.values()}
    return min(((cat.sources[k].as_of, k) for k in keys), default=None)


def _sources(cat: Catalog) -> Table:
    oldest = oldest_price(cat)
    t = Table(title="Sources", caption=None if oldest is None else
              f"oldest price: {oldest[1]}, as of {oldest[0]}")
    for col in ("key", "as of", "title", "url"):
        t.add_column(col)
    for s in cat.sources.values():
        t.add_row(s.key, s.as_of, s.title, s.url)
    return t


SECTIONS: dict[str, Callable[[Catalog], Table]] = {
    "gpus": _gpus,
    "instances": _instances,
    "regions": _regions,
    "onprem": _onprem,
    "fabrics": _fabrics,
    "storage": _storage,
    "models": _models,
    "sources": _sources,
}
DEFAULT_SECTIONS = ("gpus", "instances", "regions", "onprem", "fabrics", "storage", "models")
ALIASES = {"onprem_nodes": "onprem", "egress": "storage", "gpu": "gpus", "instance": "instances",
           "model": "models", "fabric": "fabrics"}


PROVIDERS = ("aws", "azure", "gcp")
# The sections each filter narrows. A filtered listing leaves out the sections a given filter says
# nothing about (models have no region), rather than print them whole as if they matched.
NARROWS = {
    "region": ("gpus", "instances", "regions"),
    "gpu": ("gpus", "instances", "regions", "onprem"),
    "provider": ("gpus", "instances", "regions", "storage"),
}
# `--format json --section S`: the keys of the catalog's JSON that section prints.
JSON_KEYS = {"gpus": ("gpus",), "instances": ("instances",), "regions": ("regions",), "onprem": ("onprem_nodes",),
             "fabrics": ("fabrics",), "storage": ("storage", "egress"), "models": ("models",), "sources": ("sources",)}
WHERE = Source.of("catalog", "")      # errors read `catalog: error[C009]: ...`, as refresh's name their command


@dataclasses.dataclass(frozen=True)
class Filters:
    """What `--region`, `--gpu` and `--provider` asked for; an empty set filters nothing."""

    region: frozenset[str] = frozenset()
    gpu: frozenset[str] = frozenset()
    provider: frozenset[str] = frozenset()

    def given(self) -> tuple[str, ...]:
        return tuple(k for k in NARROWS if getattr(self, k))

    def flags(self) -> str:
        return " ".join(f"--{k} {','.join(sorted(getattr(self, k)))}" for k in self.given())


def _split(values: Any) -> list[str]:
    """--region a,b --region c -> [a, b, c]."""
    return [v.strip() for value in (values or ()) for v in str(value).split(",") if v.strip()]


def _guess(value: str, choices: Any) -> str | None:
    """did_you_mean, but a name that differs only in case is the guess (h100 is H100, not V100)."""
    same = sorted(c for c in choices if c.lower() == value.lower())
    return f"did you mean '{same[0]}'?" if same else did_you_mean(value, choices)


def make_filters(catalog: Catalog, region: Any = None, gpu: Any = None, provider: Any = None) -> Filters | None:
    """The filters given on the command line, each value checked against the catalog (with its
    overlay): a typo would otherwise list nothing and look like "not sold". None if none given."""
    regions, gpus, providers = _split(region), _split(gpu), _split(provider)
    if not (regions or gpus or providers):
        return None
    priced = sorted({p.region for i in catalog.instances.values() for p in i.prices})
    diags = []
    for value in regions:
        if value not in priced:
            diags.append(Diagnostic("C009", f"unknown region '{value}' in --region: "
                                    "the catalog prices no instance there", hint=_guess(value, priced)
                                    or "`infra-compile catalog --section regions` lists the regions with prices"))
    for value in gpus:
        if value not in catalog.gpus:
            diags.append(Diagnostic("C009", f"unknown GPU '{value}' in --gpu", hint=_guess(value, catalog.gpus)
                                    or f"choose one of {', '.join(sorted(catalog.gpus))}"))
    for value in providers:
        if value not in PROVIDERS:
            diags.append(Diagnostic("C009", f"unknown provider '{value}' in --provider",
                                    hint=_guess(value, PROVIDERS) or f"choose one of {', '.join(PROVIDERS)}"))
    if diags:
        raise CompileError(diags, 2, WHERE)
    return Filters(frozenset(regions), frozenset(gpus), frozenset(providers))


def filter_catalog(cat: Catalog, f: Filters) -> Catalog:
    """The catalog narrowed to what `f` asks for: instances of those providers and GPUs with only
    the price rows of those regions, the GPUs they carry, on-prem nodes of those GPUs, storage and
    egress of those providers. Sections no filter applies to are kept as they are."""
    instances = {}
    for name, inst in cat.instances.items():
        if (f.provider and inst.provider not in f.provider) or (f.gpu and inst.gpu not in f.gpu):
            continue
        prices = tuple(p for p in inst.prices if not f.region or p.region in f.region)
        if prices or not f.region:
            instances[name] = dataclasses.replace(inst, prices=prices)
    # With a place asked for, a GPU is listed where one of the instances left carries it.
    sold = {i.gpu for i in instances.values()} if f.region or f.provider else set(cat.gpus)
    return dataclasses.replace(
        cat, instances=instances,
        gpus={k: g for k, g in cat.gpus.items() if k in sold and (not f.gpu or k in f.gpu)},
        onprem_nodes={k: n for k, n in cat.onprem_nodes.items() if not f.gpu or n.gpu in f.gpu},
        storage={k: s for k, s in cat.storage.items() if not f.provider or s.provider in f.provider},
        egress={k: e for k, e in cat.egress.items() if not f.provider or e.provider in f.provider})


def sections(section: str | None, filters: Filters | None = None) -> tuple[str, ...]:
    """The sections to print: the one asked for (C009 if there is no such section, or a filter
    given says nothing about it), else the default ones the filters given all narrow."""
    given = filters.given() if filters else ()
    if section is None:
        return tuple(s for s in DEFAULT_SECTIONS if all(s in NARROWS[k] for k in given))
    key = ALIASES.get(section, section)
    if key not in SECTIONS:
        raise CompileError([Diagnostic("C009", f"unknown catalog section '{section}'",
                                       hint=did_you_mean(section, SECTIONS)
                                       or f"choose one of {', '.join(SECTIONS)}")], 2, WHERE)
    for k in given:
        if key not in NARROWS[k]:
            raise CompileError([Diagnostic("C009", f"--{k} does not narrow the {key} section",
                                           hint=f"drop --{k}, or ask for --section {', '.join(NARROWS[k][:-1])} "
                                                f"or {NARROWS[k][-1]}")], 2, WHERE)
    return (key,)


def render_catalog(catalog: Catalog, console: Console, section: str | None = None,
                   filters: Filters | None = None) -> None:
    """Print the catalog (or one section of it) as tables, narrowed by `filters`."""
    names = sections(section, filters)
    if filters is not None:
        catalog = filter_catalog(catalog, filters)
    for name in names:
        table = SECTIONS[name](catalog)
        if filters is not None and table.row_count == 0:
            table.caption = f"nothing matches {filters.flags()}"
        console.print(table)


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in sorted(dataclasses.fields(value), key=lambda f: f.name)}
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def catalog_to_json(catalog: Catalog) -> dict[str, Any]:
    """The whole catalog as plain JSON data: keys sorted, lists in a fixed order."""
    out = _plain(catalog)
    for inst in out["instances"].values():
        inst["prices"] = sorted(inst["prices"], key=lambda p: p["region"])
    return out


def catalog_json(catalog: Catalog, section: str | None = None, filters: Filters | None = None) -> dict[str, Any]:
    """`--format json`: the whole catalog (as catalog_to_json) when neither a section nor a
    filter is given, else only the keys of the sections the tables would print, narrowed alike;
    `regions` is the regions table's rows by provider and region."""
    if section is None and filters is None:
        return catalog_to_json(catalog)
    names = sections(section, filters)
    if filters is not None:
        catalog = filter_catalog(catalog, filters)
    out = catalog_to_json(catalog)
    regions: dict[str, dict[str, Any]] = {}
    for provider, region, instances, gpus, as_of in region_rows(catalog):
        regions.setdefault(provider, {})[region] = {"instances": instances, "gpus": gpus, "as_of": as_of}
    out["regions"] = regions
    return {key: out[key] for name in names for key in JSON_KEYS[name]}
