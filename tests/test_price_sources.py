"""Every price figure the catalog takes from a recorded source equals that source.

The rows a price source gave are kept under tests/fixtures/prices/skypilot/ as the source file
has them (a subset of its columns, its rows verbatim). For each catalog price row citing such a
source, each figure that is not named in the row's `estimated` must be what the file says:
on-demand the file's price for the type and region, spot the median of the region's quoted
zone prices (the lower middle one for an even count), capped at on-demand (a zone at the cap
quotes it rounded to 4 decimals); a region whose zones quote none is not sold on spot: null. A figure named in `estimated` is a share of on-demand, not a source's.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from compiler.catalog import load_catalog

FIXTURES = Path(__file__).parent / "fixtures" / "prices" / "skypilot"

# source key -> the fixture holding the rows it gave. A source whose key ends in "-estimate"
# states its on-demand figure itself (no list price), so only its other figures are compared.
RECORDED = {
    "aws-skypilot-v9-vms": "aws-v9-2c3d7ea.csv",
    "aws-p5e-price-estimate": "aws-v9-2c3d7ea.csv",
    "azure-skypilot-v6-vms": "azure-v6-098741e.csv",
}
# Files whose SpotPrice equals Price where there is no Spot meter (SkyPilot's Azure fill): not sold.
NO_SPOT_AT_PRICE = {"azure-v6-098741e.csv"}


def _median(values: list[float]) -> float:
    values = sorted(values)
    return values[(len(values) - 1) // 2]


def _fixture(name: str) -> dict[tuple[str, str], dict]:
    """(type, region) -> {on_demand: the region's price or None, spots: quoted zone prices}."""
    out: dict[tuple[str, str], dict] = {}
    with open(FIXTURES / name, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            entry = out.setdefault((row["InstanceType"], row["Region"]), {"on_demand": set(), "spots": []})
            if row["Price"]:
                entry["on_demand"].add(float(row["Price"]))
            if row["SpotPrice"] and not (name in NO_SPOT_AT_PRICE and row["SpotPrice"] == row["Price"]):
                entry["spots"].append(float(row["SpotPrice"]))
    return out


def _recorded_rows():
    cat = load_catalog()
    for inst in cat.instances.values():
        for row in inst.prices:
            if row.source in RECORDED:
                yield inst.name, row


def test_every_recorded_source_is_in_the_catalog_sources():
    cat = load_catalog()
    assert set(RECORDED) <= set(cat.sources)
    for name in set(RECORDED.values()):
        assert (FIXTURES / name).is_file()


@pytest.mark.parametrize("name,row", list(_recorded_rows()), ids=lambda v: getattr(v, "region", v))
def test_a_non_estimated_figure_equals_its_source(name, row):
    rows = _fixture(RECORDED[row.source])
    assert (name, row.region) in rows, f"{name} in {row.region}: the source does not list it there"
    entry = rows[(name, row.region)]
    if not row.source.endswith("-estimate"):
        assert len(entry["on_demand"]) == 1, f"{name} in {row.region}: one on-demand price per region"
        assert row.on_demand == pytest.approx(entry["on_demand"].pop(), abs=1e-9)
    if "spot" not in row.estimated:
        expected = _median(entry["spots"]) if entry["spots"] else None
        if expected is not None:
            expected = min(expected, row.on_demand)
        assert row.spot == (pytest.approx(expected, abs=1e-9) if expected is not None else None), (
            f"{name} in {row.region}: spot {row.spot}, the source's median zone {expected}")


def test_estimated_figures_are_shares_the_row_names():
    """Where the source has no figure (1-/3-year terms), the row says so."""
    for name, row in _recorded_rows():
        for option in ("reserved_1y", "reserved_3y"):
            if row.get(option) is not None:
                assert option in row.estimated, f"{name} in {row.region}: {option} has no source figure"


def test_every_region_the_source_prices_a_type_in_is_in_the_catalog():
    """A type the catalog has is priced in each region its source sells it on demand."""
    cat = load_catalog()
    for fixture in set(RECORDED.values()):
        for (name, region), entry in sorted(_fixture(fixture).items()):
            inst = cat.instances.get(name)
            if inst is None or not entry["on_demand"]:
                continue
            assert inst.price_row(region) is not None, f"{name} is sold in {region} per {fixture}"


def test_p5e_is_not_priced_where_it_is_not_sold():
    cat = load_catalog()
    assert cat.instances["p5e.48xlarge"].price_row("us-east-1") is None


def test_a3_edge_is_the_a3_high_list_at_its_regional_machine_ratio():
    """GCP A3 Edge where A3 High is not sold: the A3 High us-central1 list times the region's
    a3-edgegpu-8g machine price over its us-central1 one, as SkyPilot's GCP file records them
    (its vCPU and memory price, the same for A3 Edge and A3 High in us-central1)."""
    cat = load_catalog()
    machine: dict[tuple[str, str], set[float]] = {}
    with open(FIXTURES / "gcp-v9-2c3d7ea.csv", newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            machine.setdefault((row["InstanceType"], row["Region"]), set()).add(float(row["Price"]))
    base = machine[("a3-edgegpu-8g", "us-central1")]
    assert base == machine[("a3-highgpu-8g", "us-central1")] and len(base) == 1
    [base_price] = base
    high, edge = cat.instances["a3-highgpu-8g"], cat.instances["a3-edgegpu-8g"]
    listed = high.price("us-central1", "on_demand")
    assert edge.regions and not set(edge.regions) & set(high.regions)
    for row in edge.prices:
        [price] = machine[("a3-edgegpu-8g", row.region)]
        assert row.source == "gcp-a3-edge-prices-regional" and row.estimated == ("spot", "reserved_1y", "reserved_3y")
        assert row.on_demand == pytest.approx(round(listed * price / base_price, 4), abs=1e-9), row.region


# ---------------------------------------------------------------- Capacity Block rates

BLOCKS = Path(__file__).parent / "fixtures" / "prices" / "capacity-blocks"
# source key -> the recorded copy of the Capacity Blocks pricing page it read (rows used, verbatim).
RECORDED_BLOCKS = {"aws-capacity-blocks-pricing-2026-07": "pricing-b3a54ae.json"}
BLOCK_RATE = "capacity_block_usd_per_hour."


def _in_region(region_code: str, region: str) -> bool:
    """A price in `region` itself or in one of its Local Zones (us-east-1-dfw-2a is us-east-1's)."""
    return region_code == region or region_code.startswith(region + "-")


def _block_rates(cat, name: str, instance: str, region: str) -> set[float]:
    """The recorded per-instance-hour rates of `instance` in `region`: its own rows, and an
    UltraServer's of its GPU (the UltraServer's rate over its instances: GPUs / the instance's)."""
    import json

    inst = cat.instances[instance]
    out = set()
    for key, entry in json.loads((BLOCKS / name).read_text())["instance_types"].items():
        per = 1.0 if key == instance else None
        if key.startswith("u-") and entry["accelerator_type"] == inst.gpu and entry["accelerator_count"] % inst.gpus == 0:
            per = entry["accelerator_count"] / inst.gpus
        if per is None:
            continue
        out |= {round(p["hourly_rate_usd"] / per, 6) for p in entry["pricing"] if _in_region(p["region_code"], region)}
    return out


def _recorded_block_factors():
    cat = load_catalog()
    for f in cat.factors.values():
        if f.name.startswith(BLOCK_RATE) and f.source in RECORDED_BLOCKS:
            provider, region, instance = f.name[len(BLOCK_RATE):].split(".", 2)
            yield f.name, provider, region, instance, f


@pytest.mark.parametrize("name,provider,region,instance,factor", list(_recorded_block_factors()),
                         ids=lambda v: v if isinstance(v, str) and v.startswith(BLOCK_RATE) else "")
def test_a_capacity_block_rate_equals_its_recorded_source(name, provider, region, instance, factor):
    """Each rate citing a recorded copy of the pricing page is that copy's Effective Hourly Rate for
    the instance in the region (or its Local Zone), an UltraServer's over its instances."""
    cat = load_catalog()
    rates = _block_rates(cat, RECORDED_BLOCKS[factor.source], instance, region)
    assert provider == "aws" and rates == {factor.value}, f"{name}: {factor.value}, the source {sorted(rates)}"


def test_every_region_the_recorded_block_source_sells_a_catalog_type_in_has_its_rate():
    """A catalog type the recorded page sells blocks of, in a region the catalog prices AWS types
    in (or a Local Zone of one), has that block rate (GovCloud is not a region the catalog has)."""
    import json

    cat = load_catalog()
    aws_regions = {r for i in cat.instances.values() if i.provider == "aws" for r in i.regions}
    for source, name in RECORDED_BLOCKS.items():
        for key, entry in json.loads((BLOCKS / name).read_text())["instance_types"].items():
            types = [key] if key in cat.instances else [
                n for n, i in cat.instances.items() if i.provider == "aws" and key.startswith("u-")
                and i.gpu == entry["accelerator_type"] and i.nvlink_domain_gpus]
            assert types, f"{key}: no catalog type"
            for p in entry["pricing"]:
                [*regions] = [r for r in aws_regions if _in_region(p["region_code"], r)]
                for instance in types:
                    for region in regions:
                        f = cat.factors.get(f"{BLOCK_RATE}aws.{region}.{instance}")
                        assert f is not None and f.source == source, f"{instance} blocks in {p['region_code']}"


def test_a_type_sold_on_blocks_where_it_has_no_list_price_has_an_estimated_row():
    """Candidates are priced rows: every block rate's (region, type) has one. Where the recorded
    SkyPilot file has no on-demand price for the type there (sold only on blocks: p5e, p6-b300 in
    us-east-1, p6e-gb200), the row's on-demand figure is an estimate (its source says so)."""
    cat = load_catalog()
    listed = {k for k, e in _fixture("aws-v9-2c3d7ea.csv").items() if e["on_demand"]}
    for f in cat.factors.values():
        if not f.name.startswith(BLOCK_RATE):
            continue
        provider, region, instance = f.name[len(BLOCK_RATE):].split(".", 2)
        row = cat.instances[instance].price_row(region)
        assert row is not None, f"{instance} in {region}: a block rate and no price row"
        if (instance, region) not in listed:
            assert row.source.endswith("-estimate") and cat.sources[row.source].title.startswith("Estimate:"), (
                f"{instance} in {region}: no list price, row source {row.source}")
