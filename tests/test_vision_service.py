"""A vision model's service: traffic in images/s (`traffic.peak_rps`) at a p99 latency bound
(`slo.latency_p99_ms`), each replica one GPU at the batch vision.serving_point sizes
(docs/performance-model.md, "Vision serving"), planned as LLM replicas are (capacity x replicas >=
demand), rendered as a Triton Inference Server Deployment.

The keys that do not fit the model are E210's (compiler/semantic.py): tokens, TTFT/TPOT, speculative
decoding, disaggregation and a quantization on a vision model's service, latency_p99_ms on an LLM's."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml

from compiler import pipeline
from compiler.catalog import load_catalog
from compiler.estimate import estimate, vision
from compiler.estimate.inference import demand_series
from compiler.output import write
from compiler.spec import ImageTraffic, Traffic
from coherence import check
from test_edge import errors_of, spec_of
from test_render_kubernetes import K8S_VERSION, _tool

CATALOG = load_catalog()
SCHEMAS = Path(__file__).resolve().parent / "schemas"

SPEC = """\
apiVersion: infra-compile/v1
name: vision-small
horizon_months: 12
sites:
  - name: dc
    type: on_prem
    power_kw: 100
    electricity_usd_per_kwh: 0.1
    pue: 1.3
    max_racks: 4
workloads:
  - name: shelf-scan
    kind: inference
    model: resnet-50
    traffic: {peak_rps: 3000, growth_per_month: 0.02}
    slo: {latency_p99_ms: 50}
"""


# ----------------------------------------------------------------------------- the spec

def test_a_vision_service_states_images_per_second_and_a_latency_bound():
    w = spec_of(SPEC).workload("shelf-scan")
    assert w.vision and isinstance(w.traffic, ImageTraffic)
    assert (w.traffic.peak_rps, w.traffic.growth_per_month) == (3000.0, 0.02)
    assert (w.slo.latency_p99_ms, w.slo.ttft_p99_ms, w.slo.tpot_p99_ms) == (50.0, None, None)
    # its demand is images/s: the peak, growing from its start month
    assert demand_series(w, 3) == pytest.approx((3000.0, 3060.0, 3121.2))


def test_an_llm_service_is_unchanged():
    w = spec_of(SPEC.replace("model: resnet-50", "model: llama-3.1-8b").replace(
        "traffic: {peak_rps: 3000, growth_per_month: 0.02}", "traffic: {peak_rps: 3, input_tokens: 400, output_tokens: 150}")
        .replace("slo: {latency_p99_ms: 50}", "slo: {ttft_p99_ms: 1500, tpot_p99_ms: 80}")).workload("shelf-scan")
    assert not w.vision and isinstance(w.traffic, Traffic) and w.slo.latency_p99_ms is None
    assert demand_series(w, 1) == (450.0,)


def test_token_keys_on_a_vision_service_are_refused_at_the_key():
    errs = errors_of(SPEC.replace("traffic: {peak_rps: 3000, growth_per_month: 0.02}",
                                  "traffic: {peak_rps: 3000, input_tokens: 1, output_tokens: 1}"))
    assert errs == [("E210", "15:31", "'input_tokens' and 'output_tokens' are for LLM services; 'resnet-50' is "
                                      "a vision model")]
    errs = errors_of(SPEC.replace("slo: {latency_p99_ms: 50}", "slo: {latency_p99_ms: 50, tpot_p99_ms: 20}"))
    assert errs == [("E210", "16:31", "'tpot_p99_ms' is for LLM services; 'resnet-50' is a vision model")]
    errs = errors_of(SPEC + "    speculative: {method: heads, acceptance: 0.7, draft_tokens: 3}\n"
                     "    quantization: fp8\n")
    assert [e[:2] for e in errs] == [("E210", "17:5"), ("E210", "18:5")]
    assert errs[1][2].startswith("quantization fp8 is for LLM services; 'resnet-50' is a vision model")


def test_a_vision_service_without_a_latency_bound_is_told_to_state_one():
    errs = errors_of(SPEC.replace("slo: {latency_p99_ms: 50}", "slo: {ttft_p99_ms: 100, tpot_p99_ms: 10}"))
    assert errs == [("E210", "16:11", "'ttft_p99_ms' and 'tpot_p99_ms' are for LLM services; 'resnet-50' is a "
                                      "vision model")]
    # the schema asks an LLM's bounds of any service that bounds no latency, not knowing the model's
    # family; validation keeps only what the vision service needs
    errs = errors_of(SPEC.replace("slo: {latency_p99_ms: 50}", "slo: {availability: 0.99}"))
    assert errs == [("E210", "16:5", "a vision service needs slo.latency_p99_ms")]


def test_a_latency_bound_on_an_llm_service_is_refused_and_its_own_keys_asked_for():
    errs = errors_of(SPEC.replace("model: resnet-50", "model: llama-3.1-8b"))
    assert errs == [("E210", "15:5", "LLM inference needs 'input_tokens' and 'output_tokens'"),
                    ("E210", "16:5", "LLM inference needs 'ttft_p99_ms' and 'tpot_p99_ms'"),
                    ("E210", "16:11", "'latency_p99_ms' is for vision services; 'llama-3.1-8b' is an LLM")]


def test_an_llm_service_missing_a_bound_keeps_the_schemas_error():
    errs = errors_of(SPEC.replace("model: resnet-50", "model: llama-3.1-8b").replace(
        "traffic: {peak_rps: 3000, growth_per_month: 0.02}", "traffic: {peak_rps: 3, input_tokens: 400, output_tokens: 150}")
        .replace("slo: {latency_p99_ms: 50}", "slo: {ttft_p99_ms: 1500}"))
    assert errs == [("E104", "16:5", "missing required key 'tpot_p99_ms'")]


# ----------------------------------------------------------------------------- the estimate

def test_each_gpu_replica_is_sized_at_the_bound_by_serving_point():
    spec = spec_of(SPEC)
    cands = estimate(spec, CATALOG)
    got = cands.by_workload["shelf-scan"]
    assert got and all(c.gpus == 1 and c.layout.tp == 1 for c in got)
    for c in got:
        pt, _ = vision.serving_point(CATALOG.models["resnet-50"], CATALOG.gpus[c.gpu], 50.0, CATALOG)
        assert c.estimate.images_per_s == pytest.approx(pt.images_per_s, rel=1e-6)
        assert c.estimate.tokens_per_s == c.estimate.images_per_s      # the figure the demand rows read
        assert c.estimate.batch == pt.batch and c.estimate.latency_ms == pytest.approx(pt.latency_ms, abs=1e-3)
        assert c.estimate.latency_ms <= 50.0 and c.estimate.ttft_ms is None
    # L40S (362 TFLOPS fp16, the default efficiency 0.075): t = 4.1e9 / (362.05e12 x 0.075) = 0.151 ms,
    # so the server's largest batch, 128, meets 50 ms: 2.4 + 128 x 0.151 = 21.7 ms, 5,891 images/s
    l40s = next(c for c in got if c.gpu == "L40S")
    assert l40s.estimate.batch == 128 and l40s.estimate.images_per_s == pytest.approx(5891.3, abs=0.5)


def test_a_gpu_that_misses_the_bound_at_batch_one_is_rejected_with_why():
    spec = spec_of(SPEC.replace("latency_p99_ms: 50", "latency_p99_ms: 2.75"))
    cands = estimate(spec, CATALOG)
    kept = {c.gpu for c in cands.by_workload["shelf-scan"]}
    rejected = {r.gpu: r.reason for r in cands.rejected["shelf-scan"]}
    # sized within 2.75 x (1 - 0.1) = 2.475 ms (the default 10% headroom): L40S, 2.4 + 0.151 = 2.55 ms
    # at batch 1, misses it; H100 (2.4 + 0.055 = 2.455 ms) meets it at batch 1
    assert "L40S" in rejected and rejected["L40S"] == (
        "misses the latency bound at batch 1: 2.6 ms (p99 bound 2.475 ms) "
        "(the SLO's bounds less its 10% headroom: slo.headroom)")
    assert "H100" in kept
    h100 = next(c for c in cands.by_workload["shelf-scan"] if c.gpu == "H100")
    assert h100.estimate.batch == 1


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    root = tmp_path_factory.mktemp("vision")
    path = root / "spec.yaml"
    path.write_text(SPEC)
    result = pipeline.compile_spec(path)
    write(result.artifacts, root / "out")
    return result, root / "out"


def test_a_gpu_no_triton_image_runs_on_gets_no_vision_candidate():
    # an AMD GPU: compiler/serving_stack.yaml lists NVIDIA's CUDA builds of Triton only
    spec = spec_of(SPEC.replace("sites:\n", "sites:\n  - {name: azure-east, type: cloud, provider: azure, region: eastus}\n"))
    cands = estimate(spec, CATALOG)
    assert all(c.gpu != "MI300X" for c in cands.by_workload["shelf-scan"])
    [why] = [r.reason for r in cands.rejected["shelf-scan"] if r.gpu == "MI300X"]
    assert why.startswith("no Triton Inference Server image runs on MI300X (cdna3)")


def test_the_plan_carries_images_per_second_and_replicas_cover_the_demand(compiled):
    result, _out = compiled
    w = result.plan.workloads[0]
    e = w.estimate
    assert e.tokens_per_s is None and e.ttft_ms is None and e.images_per_s is not None
    assert w.quantization == "" and w.max_model_len == 0
    peak = 3000 * 1.02 ** 11
    [p] = w.placements
    per_replica = e.images_per_s / p.replicas
    assert p.replicas == math.ceil(peak / per_replica - 1e-9)
    assert p.batch == e.batch


# ----------------------------------------------------------------------------- the render

SERVE = "kubernetes/dc/30-serve-shelf-scan.yaml"
ROUTE = "kubernetes/dc/31-route-shelf-scan.yaml"


def _docs(out: Path, rel: str) -> dict[str, dict]:
    return {d["kind"]: d for d in yaml.safe_load_all((out / rel).read_text()) if d}


def test_a_vision_service_runs_triton_at_the_plans_batch(compiled):
    result, out = compiled
    placement = result.plan.workloads[0].placements[0]
    docs = _docs(out, SERVE)
    assert set(docs) == {"ConfigMap", "Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget"}
    pod = docs["Deployment"]["spec"]["template"]["spec"]
    [server] = pod["containers"]
    # a pinned release of NVIDIA's container (compiler/serving_stack.yaml), never a moving tag
    assert server["image"] == "nvcr.io/nvidia/tritonserver:25.01-py3"
    assert server["command"] == ["tritonserver"] and "--model-repository=/model-repository" in server["args"]
    assert {p["name"]: p["containerPort"] for p in server["ports"]} == {"http": 8000, "grpc": 8001, "metrics": 8002}
    assert server["resources"]["limits"] == {"nvidia.com/gpu": 1}
    assert server["readinessProbe"]["httpGet"] == {"path": "/v2/health/ready", "port": "http"}
    mounts = {m["mountPath"]: m for m in server["volumeMounts"]}
    assert mounts["/model-repository/shelf-scan/config.pbtxt"]["subPath"] == "config.pbtxt"
    assert mounts["/model-repository/shelf-scan/1"]["subPath"] == "models/shelf-scan"
    config = docs["ConfigMap"]["data"]["config.pbtxt"]
    assert f"max_batch_size: {placement.batch}\n" in config and placement.batch == 128
    assert 'name: "shelf-scan"' in config and 'platform: "onnxruntime_onnx"' in config
    # the batcher waits at most the sized bound's slack: 50 x (1 - 0.1) = 45 ms (the default 10% headroom)
    # less the 21.727 ms a batch of 128 takes on L40S
    assert "max_queue_delay_microseconds: 23272\n" in config or "max_queue_delay_microseconds: 23273\n" in config
    hpa = docs["HorizontalPodAutoscaler"]["spec"]["metrics"][0]["pods"]
    assert hpa["metric"]["name"] == "nv_inference_pending_request_count" and hpa["target"]["averageValue"] == "102"
    route = _docs(out, ROUTE)
    assert set(route) == {"HTTPRoute"}
    assert route["HTTPRoute"]["spec"]["rules"][0]["backendRefs"] == [
        {"group": "", "kind": "Service", "name": "shelf-scan", "port": 8000}]


def test_the_manifests_pass_kubernetes_validate_yamllint_and_the_route_schema(compiled, tmp_path):
    _result, out = compiled
    files = []
    for i, d in enumerate(d for f in sorted(out.glob("kubernetes/*/*.yaml")) for d in yaml.safe_load_all(f.read_text())
                          if d):
        if d["kind"] == "HTTPRoute":
            schema = json.loads((SCHEMAS / "httproute-v1.json").read_text())
            assert not list(jsonschema.Draft7Validator(schema).iter_errors(d))
            continue
        if d["kind"] == "Gateway":
            continue
        f = tmp_path / f"{i:03d}-{d['kind']}.yaml"
        f.write_text(yaml.safe_dump(d, sort_keys=True))
        files.append(str(f))
    run = subprocess.run([_tool("kubernetes-validate"), "-k", K8S_VERSION, "--strict", *files],
                         capture_output=True, text=True, timeout=120)
    bad = [line for line in (run.stdout + run.stderr).splitlines() if line.startswith(("ERROR", "WARN"))]
    assert run.returncode == 0 and not bad, run.stdout + run.stderr
    config = "{extends: default, rules: {line-length: {max: 160}, document-start: disable}}"
    run = subprocess.run([_tool("yamllint"), "-s", "-d", config, str(out / "kubernetes")],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout


def test_the_coherence_oracle_passes_the_files(compiled):
    assert check(compiled[1]) == []


def _edit(out: Path, rel: str, mutate) -> None:
    path = out / rel
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    for d in docs:
        mutate(d)
    path.write_text(yaml.safe_dump_all([d for d in docs if d.get("kind") != "drop"], sort_keys=False))


def _batch_64(d):
    if d["kind"] == "ConfigMap":
        d["data"]["config.pbtxt"] = d["data"]["config.pbtxt"].replace("max_batch_size: 128", "max_batch_size: 64")


def _two_replicas(d):
    if d["kind"] == "Deployment":
        d["spec"]["replicas"] = 2


def _no_dynamic_batching(d):
    if d["kind"] == "ConfigMap":
        text = d["data"]["config.pbtxt"]
        d["data"]["config.pbtxt"] = text.replace("dynamic_batching {", "sequence_batching {")


def _config_not_mounted(d):
    if d["kind"] == "Deployment":
        c = d["spec"]["template"]["spec"]["containers"][0]
        c["volumeMounts"] = [m for m in c["volumeMounts"] if m["name"] != "model-config"]


def _probe_elsewhere(d):
    if d["kind"] == "Deployment":
        d["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["path"] = "/health"


def _long_wait(d):
    if d["kind"] == "ConfigMap":
        text = d["data"]["config.pbtxt"]
        d["data"]["config.pbtxt"] = text.replace("max_queue_delay_microseconds: 2327", "max_queue_delay_microseconds: 2527")


def _route_elsewhere(d):
    if d["kind"] == "HTTPRoute":
        d["spec"]["rules"][0]["backendRefs"][0]["name"] = "nobody"


@pytest.mark.parametrize("rel, mutate, finding", [
    (SERVE, _batch_64, "max_batch_size 64, the plan sized batch 128"),
    (SERVE, _two_replicas, "replicas 2, the plan runs 1 in month 0"),
    (SERVE, _no_dynamic_batching, "does not batch dynamically"),
    (SERVE, _config_not_mounted, "no ConfigMap gives a config.pbtxt"),
    (SERVE, _probe_elsewhere, "the readiness probe asks /health"),
    (SERVE, _long_wait, "past the 50 ms latency bound less the service's headroom (45 ms)"),
    (ROUTE, _route_elsewhere, "no HTTPRoute sends requests to a Service of"),
])
def test_the_oracle_names_a_broken_triton_server(compiled, tmp_path, rel, mutate, finding):
    out = tmp_path / "out"
    shutil.copytree(compiled[1], out)
    _edit(out, rel, mutate)
    found = check(out)
    assert any(finding in line for line in found), found
