"""Inference formulas and candidate semantics of the estimate stage."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from compiler.catalog import load_catalog
from compiler.estimate import estimate, inference
from compiler.spec import CloudSite, InferenceWorkload, Pin, Policy, Slo, Spec, Traffic

CAT = load_catalog()


def test_decode_step_is_bandwidth_bound_at_batch_1():
    # Llama-2-7B bf16 (13.5 GB of weights) on one H100 (3,350 GB/s at 90% achieved):
    # 13.48e9 / (3350e9 * 0.9) = 4.47 ms per token, far above the compute time.
    m, g = CAT.models["llama-2-7b"], CAT.gpus["H100"]
    step = inference.decode_step_s(m, g, 1, "bf16", 1, 100, CAT)
    weights = m.params_b * 1e9 * 2
    assert step == pytest.approx(weights / (3350e9 * 0.9), rel=0.02)


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
        assert b is not None and b.tokens_per_s >= a.tokens_per_s * (1 - inference.TIE)
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


# ---------------------------------------------------------------- hand-worked figures

def test_largest_batch_beside_the_weights_worked_by_hand():
    # Llama-3-70B (70.55B params) at fp8 on 2 x H100 80 GB, 2,000 in + 500 out tokens:
    #   usable 2 x 80 x 0.90 = 144 GB, minus 2 x 3 GB runtime, minus 70.55 GB weights = 67.45 GB
    #   KV per token at fp8: 2 x 80 layers x 8 kv heads x 128 x 1 B = 163,840 B
    #   a paged cache holds a sequence's input and, on average over its decode, half its output:
    #   163,840 x (2,000 + 0.5 x 500) = 0.36864 GB -> floor(67.45 / 0.36864) = 182 sequences.
    rep = inference.replica(CAT.models["llama-3-70b"], CAT.gpus["H100"], 2, "fp8", 2000, 500, CAT)
    assert rep.weights_gb == pytest.approx(70.55)
    assert rep.free_gb == pytest.approx(67.45)
    assert rep.kv_per_seq_gb == pytest.approx(0.36864)
    assert rep.max_batch == 182  # memory is the only limit besides the SLO: no constant cap


def test_kv_heads_fewer_than_the_tensor_parallel_gpus_are_replicated():
    # Qwen3-235B has 4 KV heads: at tp 8 each GPU still holds a whole head, so the replica's cache
    # per token is 8 / 4 = 2x the model's 2 x 94 layers x 4 heads x 128 x 1 B = 96,256 B at fp8.
    m = CAT.models["qwen3-235b-a22b"]
    assert inference.replica_kv_bytes_per_token(m, 4, "fp8", CAT) == 2 * 94 * 4 * 128
    assert inference.replica_kv_bytes_per_token(m, 8, "fp8", CAT) == 2 * 2 * 94 * 4 * 128


def test_decode_step_with_tensor_parallel_all_reduces_worked_by_hand():
    # Same replica, batch 1, mean context 2,000 + 0.5 x 500 = 2,250 tokens:
    #   weights 70.55e9 B and KV 163,840 x 2,250 B over 2 x 3,350 GB/s x 0.9 = 11.761 ms
    #   (compute, 147 GFLOP at 2 x 1,978.9 TFLOP/s x 0.4, is 0.19 ms: bandwidth binds both)
    #   TP: 2 all-reduces x 80 layers x (40 us + 2(2-1)/2 x 16,384 B / 337.5 GB/s) = 6.408 ms
    #   the engine's own 8 us for the one sequence
    step = inference.decode_step_s(CAT.models["llama-3-70b"], CAT.gpus["H100"], 2, "fp8", 1, 2250, CAT)
    bw = (70.55e9 + 163840 * 2250) / (2 * 3350e9 * 0.9)
    tp = 2 * 80 * (40e-6 + 16384 / 337.5e9)
    assert step == pytest.approx(bw + tp + 8e-6)
    assert step * 1e3 == pytest.approx(18.177, abs=1e-3)


def test_decode_step_is_a_roofline_per_operator_worked_by_hand():
    # The same replica at batch 256: the weight GEMMs are compute-bound, attention memory-bound,
    # and they run one after the other (a single roofline over the sum would say 34.5 ms).
    #   GEMMs: max(70.55e9 / 6.03e12 = 11.70 ms, 256 x 2 x 70.55e9 / (2 x 1,978.9e12 x 0.4)
    #          = 22.817 ms) = 22.817 ms
    #   attention: max(256 x 163,840 x 2,250 B / 6.03e12 = 15.650 ms,
    #              256 x 4 x 80 x 8,192 x 2,250 / 1.583e15 = 0.95 ms) = 15.650 ms
    #   TP: 160 x (40 us + 256 x 8,192 x 2 B / 337.5 GB/s = 12.43 us) = 8.389 ms
    #   engine: 256 sequences x 8 us = 2.048 ms
    step = inference.decode_step_s(CAT.models["llama-3-70b"], CAT.gpus["H100"], 2, "fp8", 256, 2250, CAT)
    assert step * 1e3 == pytest.approx(22.817 + 15.650 + 8.389 + 2.048, abs=2e-3)
    assert step * 1e3 == pytest.approx(48.904, abs=1e-3)


def test_ttft_and_tpot_under_continuous_batching_worked_by_hand():
    # Batch B = 32 of the replica above: D = decode step at B, P = prefill of one request.
    # TPOT = D + B P / out; tokens/s = B / TPOT; rho = (B/out) P / TPOT;
    # TTFT = D + P + 4.6 x rho P / (2 (1 - rho)) (M/D/1 mean wait, p99 = ln(100) x mean).
    m, g = CAT.models["llama-3-70b"], CAT.gpus["H100"]
    rep = inference.replica(m, g, 2, "fp8", 2000, 500, CAT)
    pt = inference.serving_point(m, g, 2, "fp8", 2000, 500, 32, rep, CAT)
    d = inference.decode_step_s(m, g, 2, "fp8", 32, 2250, CAT)
    p = rep.prefill_s
    tpot = d + 32 * p / 500
    rho = 32 / 500 * p / tpot
    assert pt.tokens_per_s == pytest.approx(32 / tpot)
    assert pt.tpot_ms == pytest.approx(tpot * 1.1 * 1e3)
    assert pt.ttft_ms == pytest.approx((d + p + 4.6 * rho * p / (2 * (1 - rho))) * 1e3)
    # The prefill of 2,000 tokens: (2 x 70.55e9 x 2000 + 2 x 80 x 8192 x 2000^2) FLOPs
    # = 2.874e14 at 2 x 1,978.9 TFLOP/s x 0.50 = 145.3 ms (the attention term is 1.8% of it).
    assert p == pytest.approx((2 * 70.55e9 * 2000 + 2 * 80 * 8192 * 2000 ** 2) / (2 * 1978.9e12 * 0.50))
    assert p * 1e3 == pytest.approx(145.3, abs=0.1)


def test_replicas_carry_the_grown_peak_and_survive_losing_a_site():
    # Optimizer side of the serving model, with hand-made candidates of 300 output tokens/s a
    # replica. 10 rps x 100 output tokens = 1,000 tok/s from month 2, growing 5% a month:
    # month 11 needs 1,000 x 1.05^9 = 1,551 tok/s -> ceil(1551 / 300) = 6 replicas.
    from compiler.optimize import SolveOptions, optimize
    from optimize_fixtures import candidates, cloud, infer_cand, inference as chat, spec as platform

    aws = cloud()
    w = chat("chat", rps=10, out=100, growth=0.05, start=2)
    plan = optimize(candidates(platform([aws], [w], horizon=12),
                               [infer_cand(w, aws, "p5.48xlarge", 1, 300.0)]), SolveOptions(gap=1e-9))
    assert sum(p.replicas for p in plan.workloads[0].placements) == 6
    # Availability 0.999 over three sites: whichever site is lost, the others still carry
    # 1,000 tok/s, i.e. at least 4 replicas (4 x 300 >= 1,000 > 3 x 300) outside each site.
    gcp = cloud("gcp-usc1", "us-central1", "gcp", index=1)
    az = cloud("az-eus", "eastus", "azure", index=2)
    w = chat("chat", rps=10, out=100, availability=0.999)
    plan = optimize(candidates(platform([aws, gcp, az], [w], horizon=6),
                               [infer_cand(w, aws, "p5.48xlarge", 1, 300.0),
                                infer_cand(w, gcp, "a3-highgpu-8g", 1, 300.0),
                                infer_cand(w, az, "Standard_ND96isr_H100_v5", 1, 300.0)]),
                    SolveOptions(gap=1e-9))
    by_site = {p.site: p.replicas for p in plan.workloads[0].placements}
    assert len(by_site) >= 2
    for lost in ("aws-use1", "gcp-usc1", "az-eus"):
        assert sum(n for s, n in by_site.items() if s != lost) * 300.0 >= 1000.0, (lost, by_site)


@settings(max_examples=40, deadline=None)
@given(model=st.sampled_from(["llama-3-8b", "llama-2-70b", "mixtral-8x7b"]),
       gpu=st.sampled_from(["H100", "H200", "A100-80GB", "L40S"]), t=st.sampled_from([1, 2, 4, 8]),
       quant=st.sampled_from(["bf16", "fp8", "int4"]), inp=st.integers(50, 4000), out=st.integers(20, 1000),
       ttft=st.floats(100, 5000), tpot=st.floats(10, 300))
def test_bisection_finds_the_best_batch_a_scan_finds(model, gpu, t, quant, inp, out, ttft, tpot):
    # best_batch bisects for the largest SLO-meeting batch; a scan of every batch that fits
    # memory, keeping the most tokens/s, must agree (tokens/s, TPOT and TTFT are monotone).
    m, g = CAT.models[model], CAT.gpus[gpu]
    got, _ = inference.best_batch(m, g, t, quant, inp, out, ttft, tpot, CAT)
    rep = inference.replica(m, g, t, quant, inp, out, CAT)
    if rep.max_batch > 3000:
        return  # too many to scan; the argument is the same
    ok = [pt for pt in (inference.serving_point(m, g, t, quant, inp, out, b, rep, CAT)
                        for b in range(1, rep.max_batch + 1)) if pt.tpot_ms <= tpot and pt.ttft_ms <= ttft]
    assert (got is None) == (not ok)
    if ok:
        top = max(pt.tokens_per_s for pt in ok)
        best = min(pt.batch for pt in ok if pt.tokens_per_s >= top * (1 - inference.TIE))
        assert got.batch == best
