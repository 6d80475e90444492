"""A vision service at the edge: tests/fixtures/edge-vision-20-locations.yaml, ResNet-50 shelf
cameras in 20 stores within a 50 ms p99 latency bound, each store's images classified by its own
edge-l4-2u boxes (2x L4). The plan's box count per location, checked against a hand computation,
and the files ops use: boxes.csv, the Ansible inventory, the Triton manifests, the report's and the
runbook's edge tables. (The small-LLM edge fixture is tests/test_edge.py's.)

One box, worked by hand from the vision serving model (docs/performance-model.md, "Vision
serving"; compiler/estimate/vision.py):
  t = forward FLOPs / (16-bit peak x efficiency) = 4.1e9 / (121e12 x 0.075) = 0.45179 ms an image
      (ResNet-50's 4.1 GFLOPs: torchvision's ResNet50_Weights.IMAGENET1K_V1; the L4's 121 TFLOPS
      FP16 dense: NVIDIA's L4 datasheet; 0.075: vision_inference_efficiency.default, fitted on the
      V100 table of NVIDIA DeepLearningExamples' Triton ResNet-50 README, with the per-batch
      overhead o = 2.4 ms and the largest batch 128 from the same tables)
  the bound less the default 10% headroom (slo.headroom): 50 x (1 - 0.1) = 45 ms
  B = floor((45 - 2.4) / 0.45179) = 94 images a batch (at most 128); a batch takes
      2.4 + 94 x 0.45179 = 44.868 ms
  one GPU serves 94 / 44.868 ms = 2,095.0 images/s; a box holds two one-GPU replicas:
  4,190.0 images/s a box.
A location needs ceil(peak images/s / 4,190.0) boxes (the plan buys no more: a box's capex is
most of its cost, and no load moves between locations):
  nyc-01: 12,000 / 4,190.0 = 2.86 -> 3 boxes, 1 of them owned: 2 to buy
  chi-01: 14,000 / 4,190.0 = 3.34 -> 4 boxes, its max_boxes
  hou-01:  4,000 / 4,190.0 = 0.95 -> 1 box (at 95% of it)
  sfo-01:  7,000 / 4,190.0 = 1.67 -> 2 boxes, whose 2 x 0.55 kW fit its 1.2 kW circuit
  lax-01: 10,000 / 4,190.0 = 2.39 -> 3 boxes"""

from __future__ import annotations

import csv
import io
import math
import subprocess
from pathlib import Path

import pytest
import yaml

from compiler import pipeline
from compiler.catalog import load_catalog
from compiler.edge import locations
from compiler.output import write
from compiler.source import parse
from compiler.validate import validate
from coherence import check
from test_edge import boxes
from test_render_kubernetes import K8S_VERSION, _tool

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "edge-vision-20-locations.yaml"
CATALOG = load_catalog()
PER_BOX = 2 * 94 / (2.4e-3 + 94 * 4.1e9 / (121e12 * 0.075))     # 4,190.0 images/s
HAND = {"nyc-01": (3, 1, 2), "chi-01": (4, 0, 4), "hou-01": (1, 0, 1), "sfo-01": (2, 0, 2), "lax-01": (3, 0, 3)}


def test_the_fixture_is_a_vision_service_at_20_locations():
    spec = validate(parse(FIXTURE.read_text(), str(FIXTURE)), CATALOG)
    assert len(locations(spec)) == 20 and len(spec.workloads) == 20
    w = spec.workload("shelf-camera-nyc-01")
    assert w.vision and w.traffic.peak_rps == 12000 and w.slo.latency_p99_ms == 50
    assert spec.site("stores-nyc-01").owned_nodes("edge-l4-2u") == 1
    assert PER_BOX == pytest.approx(4190.0, abs=0.1)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    result = pipeline.compile_spec(FIXTURE)
    out = write(result.artifacts, tmp_path_factory.mktemp("edge-vision") / "out")
    return result, out


@pytest.mark.slow
def test_the_box_count_per_location_is_the_hand_computation(compiled):
    result, _out = compiled
    # the estimate's L4 replica is the hand-worked one
    rates = {c.estimate.batch: c.estimate.images_per_s for c in result.candidates.by_workload["shelf-camera-nyc-01"]}
    assert rates == {94: pytest.approx(PER_BOX / 2, rel=1e-4)}
    got = boxes(result)
    assert len(got) == 20
    for location, (total, owned, to_buy) in HAND.items():
        pools = got[f"stores-{location}"]
        assert (sum(pools.values()), pools.get("owned", 0), pools.get("purchase", 0)) == (total, owned, to_buy)
    # every location: the fewest boxes that carry its peak
    for w in result.candidates.spec.workloads:
        assert sum(got[w.sites[0]].values()) == math.ceil(w.traffic.peak_rps / PER_BOX), w.name
    assert sum(sum(v.values()) for v in got.values()) == 32


@pytest.mark.slow
def test_ops_get_the_boxes_the_inventory_and_a_triton_server_per_location(compiled):
    result, out = compiled
    rows = list(csv.DictReader(io.StringIO((out / "edge/stores/boxes.csv").read_text())))
    total = rows.pop()
    by_location = {r["location"]: r for r in rows}
    assert len(by_location) == 20 and total["boxes"] == "32" and total["to_buy"] == "31"
    for location, (n, owned, to_buy) in HAND.items():
        r = by_location[location]
        assert (int(r["boxes"]), int(r["owned"]), int(r["to_buy"])) == (n, owned, to_buy)
    inventory = yaml.safe_load((out / "edge/stores/inventory.yml").read_text())
    groups = inventory["all"]["children"]["stores"]["children"]
    assert len(groups) == 20 and len(groups["stores_chi_01"]["hosts"]) == 4
    # each location's Triton server: the plan's batch in config.pbtxt, one GPU a replica, two a box
    for location, (n, _owned, _buy) in HAND.items():
        docs = {d["kind"]: d for d in yaml.safe_load_all(
            (out / f"kubernetes/stores-{location}/30-serve-shelf-camera-{location}.yaml").read_text()) if d}
        assert "max_batch_size: 94\n" in docs["ConfigMap"]["data"]["config.pbtxt"]
        server = docs["Deployment"]["spec"]["template"]["spec"]["containers"][0]
        assert server["image"].startswith("nvcr.io/nvidia/tritonserver:") and server["command"] == ["tritonserver"]
        replicas = math.ceil(result.candidates.spec.workload(f"shelf-camera-{location}").traffic.peak_rps
                             / (PER_BOX / 2))
        assert docs["Deployment"]["spec"]["replicas"] == replicas and math.ceil(replicas / 2) == n
    # the report's and the runbook's tables per location
    report = (out / "report.md").read_text()
    # 12,000 / (3 x 4,190.0) = 4,000 / 4,190.0 = 95.5% of the boxes' capacity
    assert ("| nyc-01 | shelf-camera | 3 | 1 | 2 | 12,000 images/s | 4,190 images/s | 3 | 95.5% |" in report)
    assert "| hou-01 | shelf-camera | 1 | 0 | 1 | 4,000 images/s | 4,190 images/s | 1 | 95.5% |" in report
    assert "| chi-01 | stores-chi-01 | 4 | 0 | 4 | shelf-camera (7) |" in (out / "RUNBOOK.md").read_text()


@pytest.mark.slow
def test_the_output_tree_is_coherent(compiled):
    assert check(compiled[1]) == []


@pytest.mark.slow
def test_the_manifests_pass_kubernetes_validate_strict(compiled, tmp_path):
    files = []
    for i, d in enumerate(d for f in sorted(compiled[1].glob("kubernetes/stores-*/*.yaml"))
                          for d in yaml.safe_load_all(f.read_text()) if d):
        if d["kind"] in ("Gateway", "HTTPRoute"):
            continue        # CRDs: tests/test_vision_service.py checks them against their schema
        f = tmp_path / f"{i:04d}-{d['kind']}.yaml"
        f.write_text(yaml.safe_dump(d, sort_keys=True))
        files.append(str(f))
    run = subprocess.run([_tool("kubernetes-validate"), "-k", K8S_VERSION, "--strict", *files],
                         capture_output=True, text=True, timeout=300)
    bad = [line for line in (run.stdout + run.stderr).splitlines() if line.startswith(("ERROR", "WARN"))]
    assert run.returncode == 0 and not bad, "\n".join(bad[:20])
