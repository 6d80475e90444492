"""A service where disaggregation pays is planned disaggregated, with its prefill and decode pools
sized apart (plan.json's placements[].disaggregation); one where it does not is planned colocated;
`never` (the default) builds no disaggregated candidate; the render writes a disaggregated service
(it stopped with E714 before it could)."""

from __future__ import annotations

import json

import jsonschema

from compiler import pipeline
from compiler.plan import from_dict, to_dict
from compiler.resources import schema

SPEC = """\
apiVersion: infra-compile/v1
name: pd-toy
horizon_months: 2
sites:
  - {{name: aws-use1, type: cloud, provider: aws, region: us-east-1, pricing: [on_demand]}}
policy:
  placement: cloud
  allowed_gpus: [B200]
workloads:
  - name: rag-70b
    kind: inference
    model: llama-3-70b
    quantization: fp8
    disaggregation: {mode}
    traffic: {{peak_rps: 20, input_tokens: 8000, output_tokens: 300}}
    slo: {{ttft_p99_ms: 3000, tpot_p99_ms: 20}}
  - name: chat-70b
    kind: inference
    model: llama-3-70b
    quantization: fp8
    disaggregation: {mode}
    traffic: {{peak_rps: 20, input_tokens: 200, output_tokens: 500}}
    slo: {{ttft_p99_ms: 2000, tpot_p99_ms: 80}}
"""


def _spec(tmp_path, mode: str):
    path = tmp_path / f"pd-{mode}.yaml"
    path.write_text(SPEC.format(mode=mode), encoding="utf-8")
    return path


def _plan(path, monkeypatch):
    """The plan without the render (tests/test_render_disaggregated.py checks the files)."""
    monkeypatch.setattr(pipeline, "render_artifacts", lambda *args: {})
    return pipeline.compile_spec(path).plan


def test_disaggregated_where_it_pays_colocated_where_not(tmp_path, monkeypatch):
    # rag-70b (8,000-token prompts, 20 ms TPOT): a unit of 4 prefill x tp4 and 1 decode x tp4 on B200
    # costs $9.85 a million tokens to the best colocated replica's $14.34 (tp8); chat-70b (200-token
    # prompts): colocated tp1 at $0.48 beats every unit (the best $0.49).
    plan = _plan(_spec(tmp_path, "allowed"), monkeypatch)
    by = {w.name: w for w in plan.workloads}
    # (units whose prefill tensor parallel exceeds the decode's are not built, vLLM 0.10's NixlConnector
    # refusing them: the plan ties 4 prefill x tp4 + 1 decode x tp4 with a mix of smaller units and a
    # colocated tp1 replica on the same 3 nodes, and the solver may take either)
    rag = [p for p in by["rag-70b"].placements if p.replicas and p.disaggregation is not None]
    assert rag and sum(p.gpus for p in rag) > sum(p.gpus for p in by["rag-70b"].placements) / 2
    for p in rag:
        pd = p.disaggregation
        assert pd.prefill_instances > pd.decode_instances          # long prompts: prefill-heavy
        assert pd.decode_tp >= pd.prefill_tp
        assert p.gpus_per_replica == pd.prefill_tp * pd.prefill_instances + pd.decode_tp * pd.decode_instances
    assert all(p.disaggregation is None for p in by["chat-70b"].placements)
    doc = to_dict(plan)
    jsonschema.validate(doc, schema("plan.schema.json"))
    back = from_dict(json.loads(json.dumps(doc)))
    assert [p.disaggregation for w in back.workloads for p in w.placements] == \
        [p.disaggregation for w in plan.workloads for p in w.placements]
    assert all("disaggregation" not in p for w in doc["workloads"] for p in w["placements"]
               if w["name"] == "chat-70b")


def test_never_builds_no_disaggregated_candidate(tmp_path):
    cands = pipeline.estimate(_spec(tmp_path, "never"))[0]
    assert all(c.estimate.disaggregation is None for cs in cands.by_workload.values() for c in cs)
    required = pipeline.estimate(_spec(tmp_path, "required"))[0]
    assert all(c.estimate.disaggregation is not None for cs in required.by_workload.values() for c in cs)


def test_render_writes_a_disaggregated_service_without_e714(tmp_path):
    # E714 stopped the render of any disaggregated placement until it wrote the prefill and decode servers
    result = pipeline.compile_spec(_spec(tmp_path, "required"))
    # required: every placement disaggregated (rag-70b here has two unit shapes, -tp<GPUs> apart)
    serve = sorted(p.rsplit("/", 1)[1] for p in result.artifacts if "/30-serve-" in p)
    assert serve and all(n.endswith(("-prefill.yaml", "-decode.yaml")) for n in serve)
    assert len(serve) == 2 * sum(1 for w in result.plan.workloads for p in w.placements if p.replicas)
