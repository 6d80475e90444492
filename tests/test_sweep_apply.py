"""A scenario's changes to the spec and the catalog, worked by hand on small inputs.

Each expected figure is written out here from the scenario's definition in docs/sweep.md (a
factor multiplies the matching figure; several matching factors multiply together), not
computed by the code under test."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from compiler.catalog import load_catalog
from compiler.sweep.apply import scenario_overlay, scenario_spec
from compiler.sweep.scenarios import Availability, PriceFactor, Scaled, Scenario, load_scenarios

CATALOG = load_catalog()

SPEC = {
    "apiVersion": "infra-compile/v1", "name": "s", "horizon_months": 12,
    "sites": [{"name": "aws-use1", "type": "cloud", "provider": "aws", "region": "us-east-1",
               "pricing": ["on_demand"]},
              {"name": "dc1", "type": "on_prem", "power_kw": 100, "electricity_usd_per_kwh": 0.1}],
    "policy": {"placement": "hybrid"},
    "workloads": [
        {"name": "chat", "kind": "inference", "model": "llama-3-8b",
         "traffic": {"peak_rps": 10, "input_tokens": 500, "output_tokens": 200},
         "slo": {"ttft_p99_ms": 1000, "tpot_p99_ms": 50, "availability": 0.99}},
        {"name": "bot", "kind": "inference", "model": "llama-3-8b",
         "traffic": {"peak_rps": 4, "input_tokens": 500, "output_tokens": 200}},
        {"name": "pre", "kind": "training", "model": "llama-3-8b", "tokens": 1e11},
        {"name": "vit", "kind": "training", "model": "vit-b-16", "samples": 1000, "epochs": 30},
    ],
}


def _spec(s: Scenario) -> dict:
    text = scenario_spec(s, SPEC, "spec.yaml")
    assert text.startswith(f"# Scenario '{s.name}' of spec.yaml")
    return yaml.safe_load(text)


def test_traffic_tokens_and_availability():
    out = _spec(Scenario("x", (), traffic=Scaled(2.5, ("chat",)), tokens=Scaled(3.0),
                         availability=Availability(0.999)))
    w = {x["name"]: x for x in out["workloads"]}
    assert w["chat"]["traffic"]["peak_rps"] == 25.0 and w["bot"]["traffic"]["peak_rps"] == 4
    assert w["pre"]["tokens"] == 3e11
    assert w["vit"]["epochs"] == 90 and w["vit"]["samples"] == 1000       # vision: epochs, not samples
    assert w["chat"]["slo"]["availability"] == 0.999 and w["bot"]["slo"] == {"availability": 0.999}
    assert SPEC["workloads"][0]["traffic"]["peak_rps"] == 10            # the input is not touched


def test_policy_sites_and_workloads():
    new_site = {"name": "gcp-usc1", "type": "cloud", "provider": "gcp", "region": "us-central1",
                "pricing": ["on_demand"]}
    out = _spec(Scenario("x", (), policy=(("max_cloud_share", 0.5),), remove_sites=("dc1",),
                         add_sites=(new_site,), remove_workloads=("vit",)))
    assert out["policy"] == {"placement": "hybrid", "max_cloud_share": 0.5}
    assert [s["name"] for s in out["sites"]] == ["aws-use1", "gcp-usc1"]
    assert [w["name"] for w in out["workloads"]] == ["chat", "bot", "pre"]


def _row(instance: str, region: str):
    return next(r for r in CATALOG.instances[instance].prices if r.region == region)


def test_overlay_multiplies_matching_rows_only():
    s = Scenario("cut", (), prices=(PriceFactor(0.5, gpu="H100", provider="aws", pricing="spot"),
                                     PriceFactor(0.8, provider="aws", region="us-east-1")))
    doc = yaml.safe_load(scenario_overlay(s, CATALOG, CATALOG.version))
    assert doc["version"] == "sweep-cut"
    p5 = doc["instances"]["p5.48xlarge"]["prices"]
    base = _row("p5.48xlarge", "us-east-1")
    # us-east-1 spot: 0.5 x 0.8; on-demand 0.8 only
    assert p5["us-east-1"]["spot"] == pytest.approx(base.spot * 0.4, rel=1e-5)
    assert p5["us-east-1"]["on_demand"] == pytest.approx(base.on_demand * 0.8, rel=1e-5)
    # us-west-2: only the H100 spot factor
    west = _row("p5.48xlarge", "us-west-2")
    assert p5["us-west-2"]["spot"] == pytest.approx(west.spot * 0.5, rel=1e-5)
    assert p5["us-west-2"]["on_demand"] == west.on_demand
    # no GCP or Azure row, no on-prem node (provider aws)
    assert all(CATALOG.instances[n].provider == "aws" for n in doc["instances"])
    assert "onprem_nodes" not in doc
    # every row cites a derived source with the original's date
    for name, rec in doc["instances"].items():
        for region, row in rec["prices"].items():
            src = doc["sources"][row["source"]]
            original = CATALOG.sources[_row(name, region).source]
            assert src["as_of"] == original.as_of and "Scenario cut" in src["title"]


def test_overlay_capex_for_purchase_and_none_without_prices():
    s = Scenario("capex", (), prices=(PriceFactor(1.25, gpu="H100", pricing="purchase"),))
    doc = yaml.safe_load(scenario_overlay(s, CATALOG, CATALOG.version))
    assert "instances" not in doc
    for name, node in CATALOG.onprem_nodes.items():
        if node.gpu == "H100":
            assert doc["onprem_nodes"][name]["capex_usd"] == pytest.approx(node.capex_usd * 1.25)
        else:
            assert name not in doc["onprem_nodes"]
    assert scenario_overlay(Scenario("none", ()), CATALOG, CATALOG.version) is None


def test_the_overlay_loads_as_a_catalog(tmp_path):
    s = Scenario("h100@0.7", (), prices=(PriceFactor(0.7, gpu="H100"),))
    path = tmp_path / "catalog.yaml"
    path.write_text(scenario_overlay(s, CATALOG, CATALOG.version))
    cat = load_catalog(str(path))
    assert cat.version == f"{CATALOG.version}+sweep-h100-0.7"
    assert _row("p5.48xlarge", "us-east-1").on_demand * 0.7 == pytest.approx(
        next(r for r in cat.instances["p5.48xlarge"].prices if r.region == "us-east-1").on_demand, rel=1e-5)


def test_ranges_expand_in_order_with_their_points(tmp_path: Path):
    f = tmp_path / "s.yaml"
    f.write_text("scenarios:\n"
                 "  - name: p\n    prices: [{gpu: H100, factor: {from: 0.5, to: 1.0, step: 0.25}}]\n"
                 "  - name: t\n    traffic: {values: [3, 1.5], workloads: [chat]}\n")
    items = load_scenarios(f, SPEC, CATALOG).items
    assert [s.name for s in items] == ["p@0.5", "p@0.75", "p@1", "t@3", "t@1.5"]
    assert [s.prices[0].factor for s in items[:3]] == [0.5, 0.75, 1.0]
    assert items[3].traffic == Scaled(3.0, ("chat",)) and items[4].swept == "traffic"
    assert items[0].swept == "prices[0].factor" and items[1].point == 0.75
