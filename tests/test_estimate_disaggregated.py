"""Disaggregated prefill and decode (compiler/estimate/disaggregated.py): each phase's estimate
against a published disaggregated-serving figure, the unit's p:d choice, and where it pays.

The published figure: Zhong et al., DistServe (OSDI '24), as its authors' blog states it
("Throughput is not all you need: Maximizing Goodput in LLM Serving using Prefill-Decode
Disaggregation", hao-ai-lab.github.io/blogs/distserve, 2024-03-17, Figure 6): a 13B LLM on one
A100-80GB, input 512, output 64, Poisson arrivals, SLO P90 TTFT 0.4 s and P90 TPOT 0.04 s:
colocated 1.6 rps per GPU, one prefill worker ~5.6 rps, one decode worker ~10 rps (2P1D: 3.3 rps
per GPU). No factor is fitted on these figures: they check the model.
"""

from __future__ import annotations

import pytest

from compiler.catalog import load_catalog
from compiler.estimate import comms, disaggregated, inference
from compiler.estimate.memory import kv_bytes_per_token

CAT = load_catalog()

# DistServe's Figure 6 (blog of 2024-03-17): requests/s per GPU within both SLOs.
DISTSERVE = {"colocated": 1.6, "prefill": 5.6, "decode": 10.0}
IN, OUT, TTFT, TPOT = 512, 64, 400.0, 40.0


def distserve_phases():
    """Our prefill and decode instances and colocated replica for DistServe's case (its SLO's P90
    read as our p99: stricter). Its workers share a node, so the KV cache crosses NVLink."""
    m, g = CAT.models["llama-2-13b"], CAT.gpus["A100-80GB"]
    transfer = kv_bytes_per_token(m, "bf16", CAT) * IN / comms.scaleup_bw(g, CAT)
    rep = inference.replica(m, g, 1, "bf16", IN, OUT, CAT)
    dec, why = disaggregated.decode_pool(m, g, 1, "bf16", IN, OUT, TPOT, TTFT / 1e3 - rep.prefill_s - transfer, CAT)
    assert dec is not None, why
    pre, why = disaggregated.prefill_pool(m, g, 1, "bf16", IN, OUT, TTFT, dec.step_ms / 1e3, transfer, CAT)
    assert pre is not None, why
    colo, why = inference.best_batch(m, g, 1, "bf16", IN, OUT, TTFT, TPOT, CAT)
    assert colo is not None, why
    return pre, dec, colo


def test_prefill_phase_against_distserve():
    # ours: 86 ms a prompt at tp1; TTFT 400 ms leaves the M/D/1 p99 wait room for rho 0.59: 6.8 rps,
    # 1.21x DistServe's prefill worker (our p99 against its P90 would only lower ours).
    pre, _dec, _colo = distserve_phases()
    assert pre.requests_per_s / DISTSERVE["prefill"] == pytest.approx(1.21, abs=0.05)
    assert 0.8 <= pre.requests_per_s / DISTSERVE["prefill"] <= 1.3


def test_decode_phase_against_distserve():
    # A decode worker against a colocated one on the same GPU: ours 34.0 / 5.81 = 5.85x, DistServe's
    # 10 / 1.6 = 6.25x (6% apart): the prefill interference a colocated replica pays is what the
    # published figure shows. In absolute terms our decode worker carries 3.4x DistServe's 10 rps
    # (batch 69 at a 32 ms step): the decode efficiencies are fitted on TensorRT-LLM runs, and
    # DistServe's 2024 prototype decoded at about a third of that rate (its colocated vLLM baseline,
    # 1.6 rps to our 5.8, shows the same gap). docs/performance-model.md states it.
    _pre, dec, colo = distserve_phases()
    colocated_rps = colo.tokens_per_s / OUT
    ratio = dec.requests_per_s / colocated_rps
    published = DISTSERVE["decode"] / DISTSERVE["colocated"]
    assert ratio / published == pytest.approx(0.94, abs=0.03)
    assert 0.85 <= ratio / published <= 1.15
    assert dec.requests_per_s / DISTSERVE["decode"] == pytest.approx(3.4, abs=0.1)


def test_unit_balances_the_phases():
    # p prefill and d decode instances: the unit's rate is the slower side's, the pair the one with
    # the most tokens/s per GPU; a prefill-bound service gets more prefill instances than decode.
    m, g = CAT.models["llama-2-13b"], CAT.gpus["A100-80GB"]
    u, why = disaggregated.unit(m, g, 1, 1, "bf16", IN, OUT, TTFT, TPOT, 8, 400, "efa", CAT)
    assert u is not None, why
    rate = min(u.prefill_instances * u.prefill.requests_per_s, u.decode_instances * u.decode.requests_per_s)
    assert u.tokens_per_s == pytest.approx(rate * OUT)
    assert u.prefill_instances > u.decode_instances
    assert u.ttft_ms <= TTFT + 1e-6 and u.tpot_ms <= TPOT
    per_gpu = u.tokens_per_s / u.gpus
    for p in range(1, disaggregated.MAX_INSTANCES + 1):
        for d in range(1, disaggregated.MAX_INSTANCES + 1):
            r = min(p * u.prefill.requests_per_s, d * u.decode.requests_per_s) * OUT / (p + d)
            assert r <= per_gpu * (1 + 1e-9)


def test_kv_transfer_over_the_fabric():
    # Llama-3-70B fp8: 80 layers x 8 KV heads x 128 x 2 (K and V) x 1 byte = 163,840 B/token; 8,000
    # tokens = 1.31 GB. A tp4 prefill instance on a 3,200 Gb/s 8-GPU node has 4 rails of 50 GB/s
    # at the fabric's efficiency.
    m = CAT.models["llama-3-70b"]
    t = disaggregated.kv_transfer_s(m, "fp8", 8000, 4, 8, 3200, "efa", CAT)
    eff = comms.network_efficiency("efa", CAT)
    assert t == pytest.approx(163840 * 8000 / (4 * 50e9 * eff))
    assert disaggregated.kv_transfer_s(m, "fp8", 8000, 4, 8, 0, "ethernet", CAT) is None


def per_gpu(model, gpu, quant, inp, out, ttft, tpot):
    """(best colocated tokens/s per GPU, best disaggregated tokens/s per GPU) on 8-GPU nodes."""
    m, g = CAT.models[model], CAT.gpus[gpu]
    colo = max((pt.tokens_per_s / t for t in (1, 2, 4, 8)
                if (pt := inference.best_batch(m, g, t, quant, inp, out, ttft, tpot, CAT)[0])), default=0.0)
    dis = max((u.tokens_per_s / u.gpus for a in (1, 2, 4, 8) for b in (1, 2, 4, 8)
               if (u := disaggregated.unit(m, g, a, b, quant, inp, out, ttft, tpot, 8, 3200, "efa", CAT)[0])),
              default=0.0)
    return colo, dis


def test_disaggregation_pays_for_long_prompts_and_tight_tpot():
    # 8,000-token prompts, 25 ms TPOT: a colocated replica carries each prompt's prefill inside its
    # decode steps (B P / out per token), so the TPOT caps its batch; split, decode runs batch 80.
    colo, dis = per_gpu("llama-3-70b", "H100", "fp8", 8000, 300, 3000, 25)
    assert dis > 1.3 * colo


def test_disaggregation_does_not_pay_for_short_prompts():
    # 200-token prompts, loose TPOT: prefill is a small share of a colocated replica's steps and the
    # split only adds the transfer and a second set of weights.
    colo, dis = per_gpu("llama-3-70b", "H100", "fp8", 200, 500, 2000, 80)
    assert colo > dis
