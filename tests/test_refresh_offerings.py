"""`catalog refresh`: what a list prices but does not offer, what its terms are, the regions it adds.

Served from tests/fixtures/refresh/offerings/ (tests/refresh_fixtures.py), small answers in each
list's own format:

- AWS: us-east-1's offer file sells p5.48xlarge on demand (with Standard Reserved Instances) and
  g6.xlarge on demand (no Reserved Instance), and prices p5e.48xlarge only as a Capacity Block
  (marketoption CapacityBlock, usage type USE1-CapacityBlock:p5e.48xlarge); eu-central-1's sells
  p5.48xlarge on demand, a region the catalog has no p5 row for. The spot feed prices p5e and
  p4de.24xlarge in us-east-1, neither sold there on demand.
- Azure: ND H100 v5 pay-as-you-go in eastus with savings plan rates beside it and no
  Reservation meter; in norwayeast (no catalog row) with a 1-year reservation; ND A100 v4 in
  westus only as Spot and as another region's (non-primary) meter.
"""

from __future__ import annotations

import json

import pytest
import yaml
from refresh_fixtures import OFFER, serve
from typer.testing import CliRunner

from compiler.catalog import load_catalog
from compiler.catalog.refresh import run
from compiler.catalog.refresh.aws import size_text
from compiler.cli import app
from compiler.diagnostics import CompileError

NOT_OFFERED = "not offered (priced in the list, not written): "


@pytest.fixture
def stub(monkeypatch):
    for state in serve(monkeypatch):
        state.scenario("offerings")
        yield state


def cli(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def refresh(tmp_path, provider: str, *extra: str):
    out = tmp_path / "overlay.yaml"
    r = cli("catalog", "refresh", provider, "-o", str(out), *extra)
    assert r.exit_code == 0, r.stderr
    return yaml.safe_load(out.read_text()), r.stderr, out


def prices(overlay: dict, instance: str) -> dict:
    return (overlay["instances"].get(instance) or {}).get("prices") or {}


# ---------------------------------------------------------------- offerings

def test_a_type_priced_only_as_a_capacity_block_is_reported_and_not_planned(stub, tmp_path):
    overlay, summary, out = refresh(tmp_path, "aws")
    assert "us-east-1" not in prices(overlay, "p5e.48xlarge")
    assert (NOT_OFFERED + "p5e.48xlarge in us-east-1: the offer file prices it only as Capacity Block") in summary
    # the spot feed's p4de price in a region whose offer file does not sell it: reported, not written
    assert "us-east-1" not in prices(overlay, "p4de.24xlarge")
    assert (NOT_OFFERED + "p4de.24xlarge in us-east-1: the spot feed prices it; the region's offer file "
            "does not sell it") in summary
    # and a compile on the overlay has no p5e candidate in us-east-1 beyond what the catalog had
    cat = load_catalog(out)
    assert cat.instances["p5e.48xlarge"].price_row("us-east-1") is None


def test_an_azure_size_with_only_spot_and_another_regions_meter_is_reported_and_not_planned(stub, tmp_path):
    overlay, summary, _ = refresh(tmp_path, "azure")
    assert "westus" not in prices(overlay, "Standard_ND96asr_v4")
    assert (NOT_OFFERED + "Standard_ND96asr_v4 in westus: the list has no Linux pay-as-you-go meter for it "
            "there, only Spot, a non-primary meter") in summary
    assert prices(overlay, "Standard_ND96asr_v4")["eastus"]["on_demand"] == 27.197


# ---------------------------------------------------------------- terms

def test_a_savings_plan_rate_never_becomes_reserved_1y(stub, tmp_path):
    overlay, summary, _ = refresh(tmp_path, "azure")
    h100 = prices(overlay, "Standard_ND96isr_H100_v5")["eastus"]
    # The item's savingsPlan rates (70.0, 52.0) are not a reservation. The list has no Reservation
    # meter here, so the catalog's own reservation figures (same kind of term) are kept, marked.
    builtin = load_catalog().instances["Standard_ND96isr_H100_v5"].price_row("eastus")
    assert (h100["reserved_1y"], h100["reserved_3y"]) == (builtin.reserved_1y, builtin.reserved_3y)
    assert 70.0 not in (h100["reserved_1y"], h100["reserved_3y"]) and 52.0 not in (h100["reserved_1y"], h100["reserved_3y"])
    assert h100["estimated"] == ["reserved_1y", "reserved_3y"] and h100["terms"] == "reservation"
    assert "1-/3-year figures are reservations (per VM size and region) (terms: reservation)" in summary


def test_aws_terms_are_reserved_instances_and_a_savings_plan_estimate_is_not_kept_as_one(stub, tmp_path):
    overlay, summary, out = refresh(tmp_path, "aws")
    p5 = prices(overlay, "p5.48xlarge")["us-east-1"]
    assert (p5["reserved_1y"], p5["reserved_3y"], p5["terms"]) == (36.1968, 24.6192, "reserved-instance")
    g6 = prices(overlay, "g6.xlarge")["us-east-1"]
    # the catalog's g6.xlarge 1-/3-year figures are Savings Plan estimates: null here, not kept
    assert (g6["reserved_1y"], g6["reserved_3y"], g6["estimated"]) == (None, None, [])
    assert "g6.xlarge in us-east-1 (reserved_1y, reserved_3y, source aws-ec2-g-prices)" in summary
    # Again, on that overlay, from a file that has lost p5's Reserved Instances: the figures the
    # first refresh wrote are Reserved Instance prices (its own source), so they are kept, marked.
    offer = json.loads(stub.routes[OFFER.format("us-east-1")])
    offer["terms"]["Reserved"] = {}
    stub.routes[OFFER.format("us-east-1")] = json.dumps(offer).encode()
    r = cli("catalog", "refresh", "aws", "--catalog", str(out), "-o", str(out))
    assert r.exit_code == 0, r.stderr
    p5 = prices(yaml.safe_load(out.read_text()), "p5.48xlarge")["us-east-1"]
    assert (p5["reserved_1y"], p5["reserved_3y"], p5["estimated"]) == (36.1968, 24.6192, ["reserved_1y", "reserved_3y"])


def test_a_row_that_states_its_terms_gives_both_term_figures(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("instances:\n  p5.48xlarge:\n    prices:\n"
                   "      us-east-1: {on_demand: 50.0, source: aws-skypilot-v9-vms, terms: reserved-instance}\n")
    with pytest.raises(CompileError) as err:
        load_catalog(bad)
    text = str(err.value)
    assert "a row that states `terms` gives reserved_1y and reserved_3y; missing 'reserved_1y', 'reserved_3y'" in text
    good = tmp_path / "good.yaml"
    good.write_text("instances:\n  p5.48xlarge:\n    prices:\n"
                    "      us-east-1: {on_demand: 50.0, reserved_1y: null, reserved_3y: 30.0, source: aws-skypilot-v9-vms,"
                    " terms: reserved-instance}\n")
    row = load_catalog(good).instances["p5.48xlarge"].price_row("us-east-1")
    assert (row.reserved_1y, row.reserved_3y) == (None, 30.0)     # the built-in estimate is not inherited


# ---------------------------------------------------------------- a known type gains a region

def test_a_type_the_catalog_knows_gains_a_region_the_list_offers_it_in(stub, tmp_path):
    assert load_catalog().instances["p5.48xlarge"].price_row("eu-central-1") is None
    overlay, summary, out = refresh(tmp_path, "aws", "--regions", "eu-central-1")
    # eu-central-1's offer file: 61.15 on demand; no Reserved Instance; the feed's spot is "N/A*"
    assert prices(overlay, "p5.48xlarge")["eu-central-1"] == {
        "on_demand": 61.15, "spot": None, "reserved_1y": None, "reserved_3y": None,
        "source": "aws-price-list", "estimated": [], "terms": "reserved-instance"}
    assert "new regions for the catalog's instances (no price row there before): p5.48xlarge in eu-central-1" in summary
    assert load_catalog(out).instances["p5.48xlarge"].price("eu-central-1", "on_demand") == 61.15
    # only the region asked for was downloaded
    assert OFFER.format("eu-central-1") in stub.requests and OFFER.format("us-east-1") not in stub.requests


def test_azure_adds_a_region_with_its_reservation(stub, tmp_path):
    overlay, summary, _ = refresh(tmp_path, "azure")
    row = prices(overlay, "Standard_ND96isr_H100_v5")["norwayeast"]
    # 104.04 pay-as-you-go; 596030.4 / 8760 h = 68.04 a year; no 3-year meter and no catalog row: null
    assert (row["on_demand"], row["reserved_1y"], row["reserved_3y"], row["estimated"]) == (104.04, 68.04, None, [])
    assert "Standard_ND96isr_H100_v5 in norwayeast" in summary


# ---------------------------------------------------------------- nothing written on a failure

@pytest.mark.parametrize("failure", ["http-500", "truncated"])
def test_a_failure_in_the_last_offer_file_writes_nothing(stub, tmp_path, failure):
    out = tmp_path / "overlay.yaml"
    before = b"# ours\nversion: acme\nsources: {}\n"
    out.write_bytes(before)
    last = OFFER.format("us-east-1")          # regions are read in order: eu-central-1 first
    if failure == "http-500":
        stub.fail[last] = [(500, {})] * 5
    else:
        stub.routes[last] = stub.routes[last][: len(stub.routes[last]) // 2]
    r = cli("catalog", "refresh", "aws", "-o", str(out))
    assert r.exit_code == 2, r.stderr
    assert OFFER.format("eu-central-1") in stub.requests     # the first file was read in full
    assert last in r.stderr.splitlines()[0]
    assert out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["overlay.yaml"]     # no temporary file left


def test_a_failure_on_a_later_azure_page_writes_nothing(stub, tmp_path):
    stub.scenario("offerings")
    page1 = stub.routes["/api/retail/prices"]({})
    page1["NextPageLink"] = stub.origin + "/api/retail/prices?$skip=100"
    stub.routes["/api/retail/prices"] = lambda q: page1 if q.get("$skip") != ["100"] else (200, {}, b"{not json")
    out = tmp_path / "overlay.yaml"
    r = cli("catalog", "refresh", "azure", "-o", str(out))
    assert r.exit_code == 2 and "error[C021]" in r.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- progress

def test_aws_progress_counts_the_bytes_of_each_offer_file(stub):
    said: list[str] = []
    run("aws", regions=("eu-central-1",), progress=said.append)
    size = len(stub.routes[OFFER.format("eu-central-1")])
    done = [s for s in said if s.startswith("aws: eu-central-1 offer file, ")]
    assert done == [f"aws: eu-central-1 offer file, {size / 1e3:.1f} of {size / 1e3:.1f} kB (100%) read"]
    assert size_text(1_200_000_000, 4_800_000_000) == "1.2 of 4.8 GB (25%)"
    assert size_text(310_000_000, None) == "310.0 MB"
