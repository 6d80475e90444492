"""Inference formulas and candidate semantics of the estimate stage."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from compiler.catalog import load_catalog
from compiler.estimate import estimate, inference
from compiler.spec import CloudSite, InferenceWorkload, Pin, Policy, Slo, Spec, Traffic

CAT = load_catalog()


def test_decode_step_is_bandwidth_bound_at_batch_1():
    # Llama-2-7B bf16 (13.5 GB of weights) on one H100 (3,350 GB/s at 80% achieved):
    # 13.48e9 / (3350e9 * 0.8) = 5.03 ms per token, far above the compute time.
    m, g = CAT.models["llama-2-7b"], CAT.gpus["H100"]
    step = inference.decode_step_s(m, g, 1, "bf16", 1, 100, CAT)
    weights = m.params_b * 1e9 * 2
    assert step == pytest.approx(weights / (3350e9 * 0.8), rel=0.02)


def test_prefill_is_compute_bound():
    # 2*N*in + 2*L*h*in^2 FLOPs at the prefill efficiency: Llama-3-70B fp8, 5,000 tokens, TP2 H100.
    m, g = CAT.models["llama-3-70b"], CAT.gpus["H100"]
    rep = inference.replica(m, g, 2, "fp8", 5000, 500, CAT)
    flops = 2 * m.params_b * 1e9 * 5000 + 2 * 80 * 8192 * 5000 ** 2
    assert rep.prefill_s == pytest.approx(flops / (2 * g.tflops["fp8"] * 1e12 * CAT.factor("prefill_efficiency")))


def test_largest_batch_fits_memory():
    m, g = CAT.models["llama-3-70b"], CAT.gpus["H100"]
    pt, _ = inference.best_batch(m, g, 2, "fp8", 2000, 500, 1e9, 1e9, CAT)
    assert pt is not None and pt.memory_gb_per_gpu <= g.memory_gb
    rep = inference.replica(m, g, 2, "fp8", 2000, 500, CAT)
    assert pt.batch == rep.max_batch  # no SLO: throughput grows with the batch up to memory


@settings(max_examples=20, deadline=None)
@given(tpot=st.floats(20, 200), extra=st.floats(1, 100))
def test_a_looser_slo_never_lowers_throughput(tpot, extra):
    m, g = CAT.models["llama-3-8b"], CAT.gpus["H100"]
    a, _ = inference.best_batch(m, g, 1, "bf16", 1000, 250, 2000, tpot, CAT)
    b, _ = inference.best_batch(m, g, 1, "bf16", 1000, 250, 2000, tpot + extra, CAT)
    if a is not None:
        assert b is not None and b.tokens_per_s >= a.tokens_per_s
        assert a.tpot_ms <= tpot and a.ttft_ms <= 2000


def _spec(w):
    site = CloudSite(name="aws-use1", provider="aws", region="us-east-1")
    return Spec(api_version="infra-compile/v1", name="t", horizon_months=12, sites=(site,),
                policy=Policy(), workloads=(w,))


def _chat(**kw):
    base = dict(name="chat", model="llama-3-70b", quantization="fp8",
                traffic=Traffic(peak_rps=10, input_tokens=1000, output_tokens=250),
                slo=Slo(ttft_p99_ms=1000, tpot_p99_ms=60))
    base.update(kw)
    return InferenceWorkload(**base)


def test_inference_candidate_semantics():
    c = estimate(_spec(_chat()), CAT)
    cands = c.by_workload["chat"]
    assert cands
    assert [x.id for x in cands] == sorted(x.id for x in cands)
    for x in cands:
        assert x.gpus == x.layout.tp and x.gpus <= x.gpus_per_node
        assert x.nodes == 0 and not x.spot and x.usage == ()
        assert x.estimate.tpot_ms <= 60 and x.estimate.ttft_ms <= 1000
        assert x.estimate.tokens_per_s > 0 and x.estimate.batch >= 1
    # 70B fp8 does not fit one 24 GB L4: rejected with the reason.
    assert any(r.gpu == "L4" and "does not fit" in r.reason for r in c.rejected["chat"])


def test_unmeetable_slo_is_rejected_at_batch_1():
    c = estimate(_spec(_chat(slo=Slo(ttft_p99_ms=1000, tpot_p99_ms=1.0))), CAT)
    assert c.by_workload["chat"] == ()
    assert any("misses the SLO at batch 1" in r.reason for r in c.rejected["chat"])


def test_pin_gpus_fixes_tensor_parallel():
    c = estimate(_spec(_chat(pin=Pin(gpus=4, gpu="H100"))), CAT)
    assert {x.gpus for x in c.by_workload["chat"]} == {4}
