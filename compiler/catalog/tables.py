"""`infra-compile catalog`: the catalog as rich tables, or as deterministic JSON.

Rows are sorted by name (instances by provider, then name; prices by region) so the
output is the same on every machine.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from rich.console import Console
from rich.table import Table

from compiler.catalog.model import PRICE_OPTIONS, Catalog
from compiler.diagnostics import CompileError, Diagnostic, did_you_mean

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


def _regions(cat: Catalog) -> Table:
    """Each region's instances and how old their prices are: where a spec's site can rent what."""
    t = Table(title="Regions (instances priced in each; as of: the oldest of their prices)")
    for col in ("provider", "region", "instances", "GPUs", "as of"):
        t.add_column(col)
    rows: dict[tuple[str, str], list] = {}
    for inst in cat.instances.values():
        for price in inst.prices:
            rows.setdefault((inst.provider, price.region), []).append((inst, cat.sources[price.source].as_of))
    for (provider, region), items in sorted(rows.items()):
        t.add_row(provider, region, ", ".join(sorted(i.name for i, _ in items)),
                  ", ".join(sorted({i.gpu for i, _ in items})), min(a for _, a in items))
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


def render_catalog(catalog: Catalog, console: Console, section: str | None = None) -> None:
    """Print the catalog (or one section of it) as tables."""
    if section is None:
        names = DEFAULT_SECTIONS
    else:
        key = ALIASES.get(section, section)
        if key not in SECTIONS:
            raise CompileError([Diagnostic("C009", f"unknown catalog section '{section}'",
                                           hint=did_you_mean(section, SECTIONS)
                                           or f"choose one of {', '.join(SECTIONS)}")], 2)
        names = (key,)
    for name in names:
        console.print(SECTIONS[name](catalog))


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
