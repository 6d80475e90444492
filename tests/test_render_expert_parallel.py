"""An MoE service planned with attention data parallelism and expert parallelism, and a disaggregated
MoE service, rendered (docs/artifacts.md, docs/performance-model.md): a toy AWS B200 spec in which
DeepSeek-R1 in NVFP4 at a 100 ms TPOT is cheapest as one replica of 8 GPUs running attention data
parallel x 8 with its experts expert parallel over them (candidate .../dp8-ep8), and Mixtral 8x7B
with 8,000-token prompts at 20 ms TPOT as disaggregated units. DeepSeek-R1 is sized at its bounds
themselves (slo.headroom 0): at the default 10% headroom (90 ms) its demand is cheapest split over a
dp8-ep8 and a tp4 replica, and this file is about the one layout. plan.json records the layout
(tp 1, dp 8, ep 8); the server is told --tensor-parallel-size=1 --data-parallel-size=8
--enable-expert-parallel with the batch over its eight engines; the manifests pass yamllint and
kubernetes-validate --strict; the coherence oracle finds nothing and names each break of the
layout."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from coherence import check
from coherence_specs import compile_into
from test_render_kubernetes import CRD_KINDS, K8S_VERSION, _tool

SPEC = """\
apiVersion: infra-compile/v1
name: ep-render
horizon_months: 2
sites:
  - {name: aws-use1, type: cloud, provider: aws, region: us-east-1, pricing: [on_demand]}
policy:
  placement: cloud
  allowed_gpus: [B200]
workloads:
  - name: reasoner
    kind: inference
    model: deepseek-r1
    quantization: fp4
    traffic: {peak_rps: 20, input_tokens: 1000, output_tokens: 2000}
    slo: {ttft_p99_ms: 5000, tpot_p99_ms: 100, headroom: 0}
  - name: moe-rag
    kind: inference
    model: mixtral-8x7b
    quantization: fp8
    disaggregation: allowed
    traffic: {peak_rps: 60, input_tokens: 8000, output_tokens: 300}
    slo: {ttft_p99_ms: 3000, tpot_p99_ms: 20}
"""
SITE = "aws-use1"


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ep-render")
    spec = root / "spec.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    done = compile_into(spec, root / "out")
    assert done is not None
    return done


def _workload(out: Path, name: str) -> dict:
    return next(w for w in json.loads((out / "plan.json").read_text())["workloads"] if w["name"] == name)


def _docs(out: Path) -> list[tuple[str, dict]]:
    return [(f.name, d) for f in sorted((out / "kubernetes" / SITE).glob("*.yaml"))
            for d in yaml.safe_load_all(f.read_text()) if d]


def _server(out: Path, name: str) -> dict:
    dep = next(d for _f, d in _docs(out) if d["kind"] == "Deployment" and d["metadata"]["name"] == name)
    (server,) = dep["spec"]["template"]["spec"]["containers"]
    return server


def test_plan_json_records_the_expert_parallel_layout(out):
    w = _workload(out, "reasoner")
    (p,) = [p for p in w["placements"] if p["replicas"]]
    assert p["candidate"].endswith("/dp8-ep8")
    assert (p["layout"]["tp"], p["layout"]["pp"], p["layout"]["dp"], p["layout"]["ep"]) == (1, 1, 8, 8)
    assert p["gpus_per_replica"] == 8 and w["layout"]["dp"] == 8 and w["layout"]["ep"] == 8


def test_the_server_runs_attention_data_parallel_with_expert_parallel_moe(out):
    w = _workload(out, "reasoner")
    (p,) = [p for p in w["placements"] if p["replicas"]]
    server = _server(out, "reasoner")
    args = [a for a in server["args"]]
    assert "--tensor-parallel-size=1" in args and "--data-parallel-size=8" in args
    assert "--enable-expert-parallel" in args and not any(a.startswith("--pipeline") for a in args)
    # each data-parallel rank is its own engine: the replica's batch over the 8, rounded up
    assert f"--max-num-seqs={-(-p['batch'] // 8)}" in args
    assert server["resources"]["limits"]["nvidia.com/gpu"] == 8
    assert server["image"] == "vllm/vllm-openai:v0.10.1.1"


def test_the_moe_service_beside_it_is_disaggregated(out):
    w = _workload(out, "moe-rag")
    units = [p for p in w["placements"] if p["replicas"] and p.get("disaggregation")]
    assert units
    for role in ("prefill", "decode"):
        assert any(d["kind"] == "Deployment" and d["metadata"]["name"].endswith(f"-{role}") and
                   d["metadata"]["name"].startswith("moe-rag") for _f, d in _docs(out))


def test_yamllint(out):
    config = "{extends: default, rules: {line-length: {max: 160}, document-start: disable}}"
    res = subprocess.run([_tool("yamllint"), "-s", "-d", config, str(out / "kubernetes")],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr


def test_builtin_kinds_pass_kubernetes_validate(out, tmp_path):
    # The expert-parallel server and the disaggregated MoE service's prefill and decode servers.
    files = []
    for i, (_f, doc) in enumerate(_docs(out)):
        if doc["kind"] in CRD_KINDS:
            continue
        f = tmp_path / f"{i:03d}-{doc['kind']}.yaml"
        f.write_text(yaml.safe_dump(doc, sort_keys=True))
        files.append(str(f))
    assert sum("-Deployment" in f for f in files) >= 3
    res = subprocess.run([_tool("kubernetes-validate"), "-k", K8S_VERSION, "--strict", *files],
                         capture_output=True, text=True, timeout=120)
    bad = [line for line in (res.stdout + res.stderr).splitlines() if line.startswith(("ERROR", "WARN"))]
    assert res.returncode == 0 and not bad, res.stdout + res.stderr


def test_the_rendered_stack_is_coherent(out):
    assert check(out) == []


def _edit(out: Path, tmp_path: Path, change) -> list[str]:
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    f = copy / "kubernetes" / SITE / "30-serve-reasoner.yaml"
    docs = [d for d in yaml.safe_load_all(f.read_text()) if d]
    for d in docs:
        if d["kind"] == "Deployment":
            c = d["spec"]["template"]["spec"]["containers"][0]
            c["args"] = change(list(c["args"]))
    f.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return check(copy)


@pytest.mark.parametrize("change, says", [
    (lambda a: [x for x in a if x != "--enable-expert-parallel"], "not told --enable-expert-parallel"),
    (lambda a: [x.replace("--data-parallel-size=8", "--data-parallel-size=4") for x in a], "x data 4"),
    (lambda a: [x for x in a if not x.startswith("--data-parallel-size")]
     + ["--tensor-parallel-size=8"], "the plan sized tensor 1 x pipeline 1 x data 8"),
    (lambda a: [x if not x.startswith("--max-num-seqs=") else "--max-num-seqs=4000" for x in a],
     "over 8 data-parallel engines"),
], ids=["no-expert-parallel", "half-the-ranks", "tensor-parallel-instead", "the-replica-batch-per-engine"])
def test_the_oracle_names_each_break_of_the_layout(out, tmp_path, change, says):
    found = _edit(out, tmp_path, change)
    assert any(says in f and "reasoner" in f for f in found), found


def test_an_image_that_cannot_run_expert_parallel_stops_the_render():
    from compiler.catalog.model import ServingImage
    from compiler.diagnostics import CompileError
    from compiler.render.site import _check_expert_parallel

    old = ServingImage("vllm/vllm-openai", "v0.6.3", "CUDA 12.4", "NVIDIA driver 550", "vllm-v0-6-3", (0, 6, 3))
    rocm = ServingImage("rocm/vllm", "rocm6.4.1_vllm_0.10.0", "ROCm 6.4.1", "amdgpu", "rocm", (0, 10, 0))
    new = ServingImage("vllm/vllm-openai", "v0.10.1.1", "CUDA 12.8", "NVIDIA driver 570", "v", (0, 10, 1, 1))
    for image, gpu, vendor in ((old, "H100", "nvidia"), (rocm, "MI300X", "amd")):
        with pytest.raises(CompileError) as err:
            _check_expert_parallel(8, image, gpu, vendor, "reasoner")
        assert err.value.diagnostics[0].code == "E715"
    _check_expert_parallel(8, new, "B200", "nvidia", "reasoner")
    _check_expert_parallel(1, old, "H100", "nvidia", "reasoner")   # no data parallelism: nothing to check
