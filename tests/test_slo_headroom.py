"""slo.headroom: the share of each latency bound a service's replicas are sized to leave free.

A 50 ms TPOT bound at the default headroom 0.1 is sized to 50 x (1 - 0.1) = 45 ms: the batch is
the largest whose p99 TPOT and TTFT meet the bounds x (1 - h) (a vision service: whose batch
latency meets its bound x (1 - h)), the replicas are the demand over that batch's rate, the
autoscaler's target sits below that batch (so below the batch at the bound too), a vision
server's batcher waits only within the sized bound, and plan.json records the headroom used.
"""

from __future__ import annotations

import json
import math
import shutil

import pytest

from coherence import check
from coherence_specs import compile_into
from test_edge import spec_of
from compiler.catalog import load_catalog
from compiler.diagnostics import CompileError
from compiler.estimate import estimate
from compiler.estimate.factors import factor
from compiler.estimate.inference import context_tokens, decode_step_s, replica
from compiler.estimate.vision import per_image_s
from compiler.spec import DEFAULT_SLO_HEADROOM

CAT = load_catalog()

# Llama 3 8B on one L40S (AWS g6e.xlarge), 1,000-token prompts and 250-token answers: at a 50 ms
# TPOT bound the batch is limited by TPOT, not by memory or the compute roofline, so the headroom
# moves it.
CHAT = """\
apiVersion: infra-compile/v1
name: headroom
horizon_months: 1
sites:
  - {name: aws-use1, type: cloud, provider: aws, region: us-east-1, pricing: [on_demand]}
workloads:
  - name: chat-8b
    kind: inference
    model: llama-3-8b
    traffic: {peak_rps: 15, input_tokens: 1000, output_tokens: 250}
    slo: {ttft_p99_ms: 1000, tpot_p99_ms: 50}
    pin: {instance: g6e.xlarge}
"""
VISION = """\
apiVersion: infra-compile/v1
name: headroom-vision
horizon_months: 1
sites:
  - {name: aws-use1, type: cloud, provider: aws, region: us-east-1, pricing: [on_demand]}
workloads:
  - name: tag-images
    kind: inference
    model: vit-b-16
    traffic: {peak_rps: 3000}
    slo: {latency_p99_ms: 50}
    pin: {instance: g6e.xlarge}
"""


def _stated(text: str, headroom: str) -> str:
    return text.replace("tpot_p99_ms: 50}", f"tpot_p99_ms: 50, headroom: {headroom}}}").replace(
        "latency_p99_ms: 50}", f"latency_p99_ms: 50, headroom: {headroom}}}")


def _candidate(spec):
    [c] = estimate(spec, CAT).by_workload[spec.workloads[0].name]
    return c


# ----------------------------------------------------------------------------- the spec

def test_a_service_that_states_no_headroom_keeps_the_default_tenth():
    assert DEFAULT_SLO_HEADROOM == 0.1
    assert spec_of(CHAT).workloads[0].slo.headroom == 0.1
    assert spec_of(VISION).workloads[0].slo.headroom == 0.1
    assert spec_of(_stated(CHAT, "0")).workloads[0].slo.headroom == 0.0
    assert spec_of(_stated(VISION, "0.25")).workloads[0].slo.headroom == 0.25


def test_the_schema_documents_the_default_the_compiler_applies():
    """The schema's `default` is what editors and docs show; validate.py applies DEFAULT_SLO_HEADROOM:
    one figure in two places, held equal here."""
    from pathlib import Path

    schema = json.loads((Path(__file__).resolve().parents[1] / "schemas" / "spec.schema.json").read_text())
    found = []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("properties"), dict) and "headroom" in node["properties"]:
                found.append(node["properties"]["headroom"].get("default"))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(schema)
    assert found and set(found) == {DEFAULT_SLO_HEADROOM}, found


@pytest.mark.parametrize("headroom", ["1", "1.5", "-0.1"])
def test_a_headroom_outside_0_to_1_is_refused(headroom):
    with pytest.raises(CompileError) as info:
        spec_of(_stated(CHAT, headroom))
    assert [d.code for d in info.value.diagnostics] == ["E102"]
    assert info.value.diagnostics[0].path[-2:] == ("slo", "headroom")


# ----------------------------------------------------------------------------- the estimate

def _p99_tpot_ms(batch: int) -> float:
    """Hand-worked from docs/performance-model.md: TPOT = D(B) + B P / out, p99 = TPOT x
    tpot_p99_multiplier (1.1), D(B) the decode step at the mean context, P one request's prefill."""
    model, gpu = CAT.models["llama-3-8b"], CAT.gpus["L40S"]
    rep = replica(model, gpu, 1, "bf16", 1000, 250, CAT)
    d = decode_step_s(model, gpu, 1, "bf16", batch, context_tokens(1000, 250, CAT), CAT)
    return (d + batch * rep.prefill_s / 250) * factor(CAT, "tpot_p99_multiplier") * 1e3


def test_an_llm_service_is_sized_to_its_bounds_less_the_headroom():
    """B* = max{B : p99 TPOT(B) <= 50 x (1 - h) ms} (TTFT is far inside its 1,000 ms here): 44 at
    h = 0 (49.7 ms; batch 45 is past 50 ms), 36 at the default h = 0.1 (44.8 ms; 37 is past 45 ms).
    The rate B / TPOT falls with the batch, so the service needs more replicas: its peak, 15
    requests/s x 250 tokens = 3,750 tokens/s, over 973 tokens/s a replica is 4 replicas, over 883
    it is 5."""
    assert _p99_tpot_ms(44) <= 50 < _p99_tpot_ms(45)
    assert _p99_tpot_ms(36) <= 45 < _p99_tpot_ms(37)
    at_bound = _candidate(spec_of(_stated(CHAT, "0")))
    kept = _candidate(spec_of(CHAT))
    assert (at_bound.estimate.batch, kept.estimate.batch) == (44, 36)
    assert at_bound.estimate.tpot_ms == pytest.approx(_p99_tpot_ms(44), abs=1e-3)
    assert kept.estimate.tpot_ms == pytest.approx(_p99_tpot_ms(36), abs=1e-3) and kept.estimate.tpot_ms <= 45
    assert kept.estimate.ttft_ms <= 900
    assert round(at_bound.estimate.tokens_per_s) == 973 and round(kept.estimate.tokens_per_s) == 883
    assert math.ceil(3750 / at_bound.estimate.tokens_per_s) == 4 and math.ceil(3750 / kept.estimate.tokens_per_s) == 5


def test_a_vision_service_is_sized_to_its_bound_less_the_headroom():
    """B* = floor((L (1 - h) - o) / t), o = vision_inference_overhead_ms (2.4 ms), t = ViT-B/16's
    per-image time on L40S (0.648 ms): floor((50 - 2.4) / 0.648) = 73 at h = 0, floor((45 - 2.4) /
    0.648) = 65 at the default 0.1."""
    o = factor(CAT, "vision_inference_overhead_ms")
    t = per_image_s(CAT.models["vit-b-16"], CAT.gpus["L40S"], CAT) * 1e3
    assert (o, round(t, 3)) == (2.4, 0.648)
    assert math.floor((50 - o) / t) == 73 and math.floor((45 - o) / t) == 65
    at_bound = _candidate(spec_of(_stated(VISION, "0")))
    kept = _candidate(spec_of(VISION))
    assert (at_bound.estimate.batch, kept.estimate.batch) == (73, 65)
    assert kept.estimate.latency_ms == pytest.approx(o + 65 * t, abs=1e-3) and kept.estimate.latency_ms <= 45


def test_a_rejection_says_the_bound_was_sized_less_the_headroom():
    # 20 ms TPOT x 0.9 = 18 ms: Llama 3 8B on one L40S misses it at batch 1
    cands = estimate(spec_of(CHAT.replace("tpot_p99_ms: 50", "tpot_p99_ms: 20")), CAT)
    [why] = [r.reason for r in cands.rejected["chat-8b"]]
    assert why.startswith("misses the SLO at batch 1") and "TPOT p99" in why and "(SLO 18.0)" in why
    assert why.endswith("(the SLO's bounds less its 10% headroom: slo.headroom)")


# ----------------------------------------------------------------------------- plan and render
# A compile, a render and the coherence oracle: over a second each, so in the slow tier.

@pytest.fixture(scope="module")
def out(tmp_path_factory):
    root = tmp_path_factory.mktemp("headroom")
    spec = root / "spec.yaml"
    spec.write_text(CHAT, encoding="utf-8")
    done = compile_into(spec, root / "out")
    assert done is not None
    return done


def _hpa(out) -> tuple[int, str]:
    import yaml
    text = (out / "kubernetes" / "aws-use1" / "30-serve-chat-8b.yaml").read_text()
    hpa = next(d for d in yaml.safe_load_all(text) if d and d["kind"] == "HorizontalPodAutoscaler")
    return int(hpa["spec"]["metrics"][0]["pods"]["target"]["averageValue"]), text


@pytest.mark.slow
def test_plan_json_records_the_headroom_and_the_autoscaler_targets_below_the_sized_batch(out):
    """The plan runs the 5 replicas of batch 36; the HPA's target is floor(0.8 x 36) = 28, below
    the sized batch 36 and so below the batch at the bound, 44 (AUTOSCALER_TARGET_SHARE 0.8)."""
    from compiler.render.site import AUTOSCALER_TARGET_SHARE

    [w] = json.loads((out / "plan.json").read_text())["workloads"]
    assert w["inputs"]["slo"] == {"availability": 0.99, "headroom": 0.1, "tpot_p99_ms": 50, "ttft_p99_ms": 1000}
    [p] = w["placements"]
    assert (p["batch"], p["replicas"]) == (36, 5)
    target, text = _hpa(out)
    assert target == math.floor(36 * AUTOSCALER_TARGET_SHARE) == 28 < 36 < 44
    assert "That batch meets the SLO's bounds less the service's 10% headroom (slo.headroom)." in text
    assert check(out) == []


@pytest.mark.slow
def test_the_oracle_names_a_plan_sized_past_its_headroom(out, tmp_path):
    """plan.json's figures for the batch the HPA's target is below must meet the bounds less the
    headroom: a TPOT of 47 ms is inside the 50 ms bound but past the 45 ms the service is sized to."""
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    plan = json.loads((copy / "plan.json").read_text())
    plan["workloads"][0]["estimate"]["tpot_ms"] = 47.0
    (copy / "plan.json").write_text(json.dumps(plan, indent=2))
    found = check(copy)
    assert any("tpot_ms 47, past slo.tpot_p99_ms less the service's headroom (45)" in f for f in found), found
