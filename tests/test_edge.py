"""Edge sites (compiler/edge.py, compiler/render/edge.py): a fleet of owned boxes at many
locations, each location's demand served there, and the plan's box count per location.

The 20-location spec is tests/fixtures/edge-20-locations.yaml: a store assistant (Llama 3.1 8B
in fp8, 400 tokens in, 150 out, TPOT p99 80 ms) in 20 stores on edge-l4-2u boxes (2x L4)."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from compiler import pipeline
from compiler.catalog import load_catalog
from compiler.diagnostics import CompileError
from compiler.edge import locations
from compiler.source import parse
from compiler.spec import InferenceWorkload, OnPremSite
from compiler.validate import validate

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "edge-20-locations.yaml"
CATALOG = load_catalog()

SMALL = """\
apiVersion: infra-compile/v1
name: edge-small
horizon_months: 12
sites:
  - name: dc
    type: on_prem
    power_kw: 100
    electricity_usd_per_kwh: 0.1
    pue: 1.3
    max_racks: 4
  - name: shops
    type: edge
    box: edge-l4-2u
    electricity_usd_per_kwh: 0.16
    locations:
      - {name: oslo, max_boxes: 4, peak_rps: {helper: 10}}
      - {name: bergen, max_boxes: 1, power_kw: 0.6}
      - {name: tromso, max_boxes: 2, peak_rps: {helper: 0}}
workloads:
  - name: helper
    kind: inference
    model: llama-3.1-8b
    quantization: fp8
    sites: [shops]
    traffic: {peak_rps: 2, input_tokens: 400, output_tokens: 150}
    slo: {ttft_p99_ms: 1500, tpot_p99_ms: 80}
  - name: chat
    kind: inference
    model: llama-3.1-8b
    traffic: {peak_rps: 2, input_tokens: 400, output_tokens: 150}
    slo: {ttft_p99_ms: 1500, tpot_p99_ms: 80}
"""


def spec_of(text: str):
    return validate(parse(text, "spec.yaml"), CATALOG)


def errors_of(text: str) -> list[tuple[str, str, str]]:
    """(code, line:column, message) of each diagnostic."""
    with pytest.raises(CompileError) as info:
        spec_of(text)
    return [(d.code, f"{d.position.line}:{d.position.column}" if d.position else "", d.message)
            for d in info.value.diagnostics]


# ----------------------------------------------------------------------------- expansion

def test_an_edge_site_becomes_one_owned_site_per_location_holding_its_box_only():
    spec = spec_of(SMALL)
    names = [s.name for s in spec.sites]
    assert names == ["dc", "shops-oslo", "shops-bergen", "shops-tromso"]
    oslo, bergen = spec.site("shops-oslo"), spec.site("shops-bergen")
    assert isinstance(oslo, OnPremSite) and oslo.edge.location == "oslo" and oslo.edge.box == "edge-l4-2u"
    assert oslo.max_gpus == 8 and oslo.path == "$.sites[1].locations[0]"
    assert bergen.power_kw == 0.6 and bergen.edge.power_stated and not oslo.edge.power_stated
    box, dgx = CATALOG.onprem_nodes["edge-l4-2u"], CATALOG.onprem_nodes["dgx-h100"]
    assert oslo.offers(box) and not oslo.offers(dgx)
    assert spec.site("dc").offers(dgx) and not spec.site("dc").offers(box)
    assert [loc.name for loc in locations(spec)] == ["shops-oslo", "shops-bergen", "shops-tromso"]


def test_an_edge_service_becomes_one_service_per_location_at_its_own_traffic():
    spec = spec_of(SMALL)
    helpers = [w for w in spec.workloads if isinstance(w, InferenceWorkload) and w.edge is not None]
    # oslo states 10 requests/s, bergen none (the service's 2), tromso 0 (not served there)
    assert [(w.name, w.sites, w.traffic.peak_rps) for w in helpers] == [
        ("helper-oslo", ("shops-oslo",), 10.0), ("helper-bergen", ("shops-bergen",), 2.0)]
    assert all(w.path == "$.workloads[0]" and w.edge.service == "helper" for w in helpers)
    # a data-centre service never lands on an edge location
    assert spec.workload("chat").sites == ("dc",)


def test_a_spec_without_an_edge_site_is_unchanged():
    text = SMALL.split("  - name: shops")[0] + "workloads:" + SMALL.split("  - name: chat")[1].join(
        ["\n  - name: chat", ""])
    spec = spec_of(text)
    assert [s.name for s in spec.sites] == ["dc"] and spec.workload("chat").sites is None


def test_the_20_location_spec_validates_to_20_sites_and_20_services():
    spec = validate(parse(FIXTURE.read_text(), str(FIXTURE)), CATALOG)
    assert len(locations(spec)) == 20 and len(spec.workloads) == 20
    assert spec.workload("store-assistant-nyc-01").traffic.peak_rps == 40
    assert spec.site("stores-nyc-01").owned_nodes("edge-l4-2u") == 1


# ----------------------------------------------------------------------------- errors

def test_a_box_that_is_not_an_edge_box_is_refused_with_the_edge_boxes_named():
    errs = errors_of(SMALL.replace("box: edge-l4-2u", "box: dgx-h100"))
    assert errs == [("E230", "13:10", "'dgx-h100' is a data-centre node model")]
    errs = errors_of(SMALL.replace("box: edge-l4-2u", "box: edge-l4-2x"))
    assert errs == [("E230", "13:10", "unknown edge box 'edge-l4-2x'")]


def test_an_edge_box_owned_at_a_data_centre_is_refused():
    errs = errors_of(SMALL.replace("max_racks: 4", "max_racks: 4\n    owned: [{instance: edge-l4-2u, nodes: 1}]"))
    assert [e[:2] for e in errs] == [("E230", "11:24")]


def test_an_edge_service_beside_another_site_or_an_edge_site_as_a_pin_is_refused():
    errs = errors_of(SMALL.replace("sites: [shops]", "sites: [shops, dc]"))
    assert [e[:2] for e in errs] == [("E231", "24:12")]
    errs = errors_of(SMALL.replace("    slo: {ttft_p99_ms: 1500, tpot_p99_ms: 80}\n",
                                   "    slo: {ttft_p99_ms: 1500, tpot_p99_ms: 80}\n    pin: {site: shops}\n", 1))
    assert "E231" in [e[0] for e in errs]


def test_a_location_naming_a_service_it_cannot_serve_and_a_name_too_long_are_refused():
    errs = errors_of(SMALL.replace("peak_rps: {helper: 10}", "peak_rps: {helpr: 10}"))
    assert errs == [("E232", "16:47", "'helpr' is not a service of edge site 'shops'")]
    errs = errors_of(SMALL.replace("name: tromso", "name: " + "t" * 60))
    assert [e[0] for e in errs] == ["E232"]


def test_an_edge_service_that_asks_to_survive_a_site_loss_is_refused():
    errs = errors_of(SMALL.replace("slo: {ttft_p99_ms: 1500, tpot_p99_ms: 80}",
                                   "slo: {ttft_p99_ms: 1500, tpot_p99_ms: 80, availability: 0.999}", 1))
    assert [e[:2] for e in errs] == [("E233", "26:61")]
    errs = errors_of(SMALL.replace("name: edge-small", "name: edge-small\npolicy: {placement: cloud}"))
    assert "E233" in [e[0] for e in errs]


# ----------------------------------------------------------------------------- the compile

@pytest.fixture(scope="module")
def compiled():
    return pipeline.compile_spec(FIXTURE)


def boxes(result) -> dict[str, dict[str, int]]:
    """Location site -> pricing -> boxes, from the plan's pools."""
    out: dict[str, dict[str, int]] = {}
    for p in result.plan.pools:
        out.setdefault(p.site, {})[p.pricing] = out.get(p.site, {}).get(p.pricing, 0) + p.nodes
    return out


@pytest.mark.slow
def test_the_20_location_spec_compiles_to_a_box_count_per_location_a_hand_check_confirms(compiled):
    """Worked by hand from the estimate of one replica on the L4 (the plan's own figures, checked
    here): sized to the SLO less the default 10% headroom (TPOT 80 x 0.9 = 72 ms), a tp1 replica
    (1 GPU) carries 1,135 output tokens/s, a tp2 replica (2 GPUs, one box) 2,768. A box holds 2
    GPUs, so it carries at most max(2 x 1,135, 2,768) = 2,768 tokens/s, and a location needs at
    least ceil(demand / 2,768) boxes; the cheapest plan buys no more (capex is most of a box's cost).
      nyc-01: 40 req/s x 150 tokens = 6,000 tokens/s; 2 boxes carry 5,536 < 6,000, 3 carry 8,303:
              3 boxes, 1 already owned, so 2 to buy.
      bos-01: 12 x 150 = 1,800 <= 2,768: 1 box.
      sfo-01: 28 x 150 = 4,200: 2 boxes (5,536), whose 2 x 0.55 kW fit its 1.2 kW circuit.
      atl-01: 22 x 150 = 3,300: 2 boxes."""
    plan = compiled.plan
    assert plan.solver.status == "optimal"
    rates = {c.gpus: c.estimate.tokens_per_s for c in compiled.candidates.by_workload["store-assistant-nyc-01"]}
    assert rates[1] == pytest.approx(1135, abs=1) and rates[2] == pytest.approx(2768, abs=1)
    got = boxes(compiled)
    assert len(got) == 20
    assert got["stores-nyc-01"] == {"owned": 1, "purchase": 2}
    assert got["stores-bos-01"] == {"purchase": 1}
    assert got["stores-sfo-01"] == {"purchase": 2}
    assert got["stores-atl-01"] == {"purchase": 2}
    # every location: the fewest boxes whose best packing carries its demand
    spec = compiled.candidates.spec
    per_box = max(2 * rates[1], rates[2])
    for w in spec.workloads:
        need = w.traffic.peak_rps * w.traffic.output_tokens
        assert sum(got[w.sites[0]].values()) == -(-need // per_box), w.name


@pytest.mark.slow
def test_the_boxes_file_and_the_inventory_agree_with_the_plan(compiled, tmp_path):
    files = compiled.artifacts
    rows = list(csv.DictReader(io.StringIO(files["edge/stores/boxes.csv"])))
    total = rows.pop()
    by_location = {r["location"]: r for r in rows}
    got = boxes(compiled)
    assert len(by_location) == 20
    for r in rows:
        assert int(r["boxes"]) == sum(got[r["site"]].values())
        assert int(r["owned"]) == got[r["site"]].get("owned", 0)
        assert float(r["capex_usd"]) == 18000 * int(r["to_buy"])
    assert by_location["nyc-01"]["boxes"] == "3" and by_location["nyc-01"]["to_buy"] == "2"
    assert int(total["boxes"]) == sum(sum(v.values()) for v in got.values())
    inventory = yaml.safe_load(files["edge/stores/inventory.yml"])
    groups = inventory["all"]["children"]["stores"]["children"]
    assert sorted(groups) == sorted(f"stores_{r['location'].replace('-', '_')}" for r in rows)
    assert len(groups["stores_nyc_01"]["hosts"]) == 3
    # the inventory's node names are the location's Kubernetes nodes
    nodes = [d["metadata"]["name"] for d in yaml.safe_load_all(files["kubernetes/stores-nyc-01/05-nodes.yaml"]) if d]
    assert sorted(h["node_name"] for h in groups["stores_nyc_01"]["hosts"].values()) == sorted(nodes)
    # the runbook lists the boxes per location
    runbook = files["RUNBOOK.md"]
    assert "| nyc-01 | stores-nyc-01 | 3 | 1 | 2 | store-assistant (3) |" in runbook


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("ansible-inventory") is None,
                    reason="ansible-inventory (ansible-core) is not installed")
def test_ansible_reads_the_inventory(compiled, tmp_path):
    path = tmp_path / "inventory.yml"
    path.write_text(compiled.artifacts["edge/stores/inventory.yml"])
    run = subprocess.run(["ansible-inventory", "-i", str(path), "--list"], capture_output=True, text=True,
                         env={"PATH": str(Path(shutil.which("ansible-inventory")).parent) + ":/usr/bin:/bin",
                              "ANSIBLE_INVENTORY_UNPARSED_FAILED": "true", "HOME": str(tmp_path)}, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "WARNING" not in run.stderr, run.stderr
    listed = json.loads(run.stdout)
    assert len(listed["_meta"]["hostvars"]) == sum(sum(v.values()) for v in boxes(compiled).values())
    assert listed["stores_nyc_01"]["hosts"] == ["stores-nyc-01-edge-l4-2u-own01", "stores-nyc-01-edge-l4-2u-buy01",
                                                "stores-nyc-01-edge-l4-2u-buy02"]


@pytest.mark.slow
def test_yamllint_passes_the_inventory(compiled, tmp_path):
    path = tmp_path / "inventory.yml"
    path.write_text(compiled.artifacts["edge/stores/inventory.yml"])
    run = subprocess.run([sys.executable, "-m", "yamllint", "-d", "{extends: default, rules: {line-length: {max: 120}}}",
                          str(path)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout


# ----------------------------------------------------------------------------- infeasible

def test_a_location_whose_demand_exceeds_its_limit_is_named_in_the_specs_terms(tmp_path):
    spec = tmp_path / "tight.yaml"
    spec.write_text(SMALL.replace("{name: bergen, max_boxes: 1, power_kw: 0.6}",
                                  "{name: bergen, max_boxes: 1, peak_rps: {helper: 40}}"))
    with pytest.raises(CompileError) as info:
        pipeline.compile_spec(spec)
    assert info.value.exit_code == 3
    [d] = info.value.diagnostics
    assert d.code == "E303"
    assert d.path == ("sites", 1, "locations", 1, "max_boxes")
    assert d.message.startswith("location bergen of edge site shops needs 2 more edge-l4-2u boxes than its "
                                "max_boxes (1) allows")


def test_a_location_whose_circuit_is_too_small_names_its_power_kw(tmp_path):
    spec = tmp_path / "tight.yaml"
    spec.write_text(SMALL.replace("{name: bergen, max_boxes: 1, power_kw: 0.6}",
                                  "{name: bergen, max_boxes: 3, power_kw: 0.6, peak_rps: {helper: 40}}"))
    with pytest.raises(CompileError) as info:
        pipeline.compile_spec(spec)
    [d] = info.value.diagnostics
    assert d.path == ("sites", 1, "locations", 1, "power_kw")
    assert "location bergen of edge site shops: its power_kw of 0.6 kW is 1.05 kW short" in d.message
