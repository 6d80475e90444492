"""MoE serving with attention data parallelism and expert parallelism, the output-length spread,
the KV cache's own precision and serving efficiencies by tensor-parallel degree
(compiler/estimate/inference.py; docs/performance-model.md, "Inference (LLM)").

Hand-worked on DeepSeek-R1 (catalog: 671B parameters, 37B active, 256 experts top-8, 61 layers,
hidden 7,168, MLA latent 512 + rope 64) in NVFP4 on 8 B200 (8,000 GB/s, fp4 9,000 and fp8 4,500
TFLOPS dense, NVLink 1,800 GB/s both ways), the layout TensorRT-LLM's DeepSeek-R1 guide runs for
maximum throughput (attention DP8, EP8) and NVIDIA's MLPerf Inference v5.1 configuration uses.
"""

from __future__ import annotations

import pytest

from compiler.catalog import load_catalog
from compiler.estimate import inference
from compiler.estimate.models import active_expert_params, expert_params, experts_hit

CAT = load_catalog()
DS = CAT.models["deepseek-r1"]
B200 = CAT.gpus["B200"]
F = CAT.factor


def test_deepseek_r1_parameters_split_by_hand():
    # e = (total - active) / (E - k) = (671 - 37) / 248 = 2.5565B a routed expert; 256 of them hold
    # 654.45B, the 8 a token reaches 20.45B; the dense rest (attention, shared expert, embeddings)
    # 16.55B, all of it active.
    assert expert_params(DS) / 1e9 == pytest.approx(634 / 248 * 256)
    assert active_expert_params(DS) / 1e9 == pytest.approx(634 / 248 * 8)
    assert (DS.params_b * 1e9 - expert_params(DS)) / 1e9 == pytest.approx(671 - 634 / 248 * 256)


def test_held_weights_and_batch_limit_under_attention_data_parallelism():
    # Each of 8 GPUs holds the dense 16.548B whole and 1/8 of the experts: NVFP4 (0.5625 bytes a
    # parameter) 671 x 0.5625 = 377.44 GB once, plus 7 more copies of the dense 9.31 GB = 442.60 GB.
    dense_gb = (671 - 634 / 248 * 256) * 0.5625
    held = 671 * 0.5625 + 7 * dense_gb
    assert inference.held_weights_gb(DS, 8, "fp4", CAT, ep=True) == pytest.approx(held)
    assert inference.held_weights_gb(DS, 8, "fp4", CAT) == pytest.approx(671 * 0.5625)
    # 1,024 in / 2,048 out: a sequence holds 1,024 + 1,024 tokens of fp8 latent, 61 x 576 bytes each
    # = 71.96 MB, once. A GPU has 180 x 0.9 - 3 - 442.60 / 8 = 103.67 GB for it: 1,440 sequences, 11,520
    # on the replica. Under TP8 every GPU holds every latent: 8 x 71.96 MB = 575.7 MB a sequence, and
    # 8 x 180 x 0.9 - 8 x 3 - 377.44 = 894.56 GB holds 1,553.
    kv_seq = 61 * 576 * 2048 / 1e9
    per_gpu = 180 * 0.9 - 3 - held / 8
    ep = inference.replica(DS, B200, 8, "fp4", 1024, 2048, CAT, ep=True)
    assert ep.kv_per_seq_gb == pytest.approx(kv_seq)
    assert ep.max_batch == 8 * int(per_gpu // kv_seq) == 11_520
    tp = inference.replica(DS, B200, 8, "fp4", 1024, 2048, CAT)
    assert tp.kv_per_seq_gb == pytest.approx(8 * kv_seq)
    assert tp.max_batch == int((8 * 162 - 24 - 671 * 0.5625) // (8 * kv_seq)) == 1_553


def test_expert_parallel_decode_step_worked_by_hand():
    # B = 7,168 sequences (896 a GPU, TensorRT-LLM's max_batch_size), context 2,048 tokens.
    b, t, ctx = 896, 8, 2048.0
    bw, c = 8000e9 * F("decode_bandwidth_efficiency"), 9000e12 * F("decode_compute_efficiency.fp4")
    assert (bw, c) == (7.2e12, pytest.approx(2.07e15))
    dense_p = (671 - 634 / 248 * 256) * 1e9
    routed = 634 / 248 * 8 * 1e9
    experts = 634 / 248 * 256 * 1e9
    # dense: max(9.31 GB / 7.2 TB/s = 1.29 ms, 896 x 2 x 16.55e9 / 2.07e15 = 14.33 ms)
    dense = max(dense_p * 0.5625 / bw, b * 2 * dense_p / c)
    assert dense == pytest.approx(14.326e-3, rel=1e-3)
    # experts: all 256 hit at 57,344 routed copies; 1.25 x (368.1 GB / 8 / 7.2 TB/s + 7,168 x 2 x
    # 20.45e9 / 8 / 2.07e15) = 1.25 x (6.39 + 17.71) ms = 30.12 ms
    hit = experts_hit(DS, 7168) / 256
    assert hit == pytest.approx(1.0)
    expert_s = 1.25 * (experts * hit * 0.5625 / t / bw + 7168 * 2 * routed / t / c)
    assert expert_s == pytest.approx(30.12e-3, rel=1e-3)
    # copies: 61 layers x 896 x 8 copies x 7,168 x ep_copy_bytes_per_hidden over 7.2 TB/s
    copies = 61 * b * 8 * 7168 * F("ep_copy_bytes_per_hidden") / bw
    # all-to-all over NVLink at 900 x 0.75 = 675 GB/s: per layer two collectives' 40 us and 7/8 of
    # the GPU's 896 x 8 x 7,168 values out at 0.5625 bytes (NVFP4 dispatch) and back at 2 (combine):
    # 61 x (80 + 37.5 + 133.2) us = 15.29 ms
    link = 900e9 * 0.75
    a2a = 61 * (2 * 40e-6 + 7 / 8 * b * 8 * 7168 * 0.5625 / link + 7 / 8 * b * 8 * 7168 * 2 / link)
    assert a2a == pytest.approx(15.29e-3, rel=1e-3)
    # attention, absorbed MLA over the fp8 latent: max(896 x 35,136 x 2,048 / 7.2 TB/s = 8.95 ms,
    # 896 x 16,990,208 x 2,048 / (4,500 TF x 0.4) = 17.32 ms)
    attention = max(b * 61 * 576 * ctx / bw, b * 16_990_208 * ctx / (4500e12 * F("decode_compute_efficiency")))
    assert attention == pytest.approx(17.32e-3, rel=1e-3)
    host = b * 8e-6
    step = inference.expert_parallel_step_s(DS, B200, t, "fp4", 7168, ctx, CAT)
    assert step == pytest.approx(dense + expert_s + copies + a2a + attention + host, rel=1e-9)
    # decode_step_s routes to it under ep, and the same batch under TP8 is another step
    assert inference.decode_step_s(DS, B200, t, "fp4", 7168, ctx, CAT, ep=True) == pytest.approx(step)


def test_attention_dp_pays_for_an_mla_model_at_throughput_and_not_under_a_tight_tpot():
    # No SLO (maximum throughput): TP8 caps the batch at 1,553 (every GPU holds every latent) and
    # carries 28k tokens/s; DP8 + EP8 holds 11,520 and carries more. Under a 20 ms p99 TPOT the batch
    # is small, every DP rank reads the 9.3 GB of dense weights, and TP8 wins.
    tp, _ = inference.best_batch(DS, B200, 8, "fp4", 1024, 2048, 1e9, 1e9, CAT)
    ep, _ = inference.best_batch(DS, B200, 8, "fp4", 1024, 2048, 1e9, 1e9, CAT, ep=True)
    assert tp.batch == 1553 and ep.batch > tp.batch and ep.tokens_per_s > 1.3 * tp.tokens_per_s
    tp20, _ = inference.best_batch(DS, B200, 8, "fp4", 1024, 2048, 2000, 20, CAT)
    ep20, _ = inference.best_batch(DS, B200, 8, "fp4", 1024, 2048, 2000, 20, CAT, ep=True)
    assert tp20.tokens_per_s > ep20.tokens_per_s


def test_a_dense_model_has_no_expert_parallel_layout():
    pt, why = inference.best_batch(CAT.models["llama-3-70b"], B200, 8, "fp4", 1000, 1000, 1e9, 1e9, CAT, ep=True)
    assert pt is None and "no experts" in why


def test_the_engines_batch_limit_caps_the_batch():
    pt, _ = inference.best_batch(DS, B200, 8, "fp4", 1024, 2048, 1e9, 1e9, CAT, ep=True, max_batch=7168)
    assert pt.batch == 7168


def test_bisection_is_exact_under_expert_parallelism():
    # D(B)/B never rises under ep either (affine maxima with non-negative intercepts, the experts hit
    # concave): the bisection's batch is the largest that meets the SLO, as a scan of every batch finds.
    model, gpu = CAT.models["qwen3-30b-a3b"], CAT.gpus["B200"]
    for ttft, tpot in ((800, 25), (400, 12), (3000, 60)):
        pt, _ = inference.best_batch(model, gpu, 4, "fp8", 2000, 500, ttft, tpot, CAT, ep=True)
        rep = inference.replica(model, gpu, 4, "fp8", 2000, 500, CAT, ep=True)
        best = max((b for b in range(1, min(rep.max_batch, 4000) + 1)
                    if (p := inference.serving_point(model, gpu, 4, "fp8", 2000, 500, b, rep, CAT, ep=True)).tpot_ms
                    <= tpot and p.ttft_ms <= ttft), default=None)
        assert pt is not None and best is not None
        rate = inference.serving_point(model, gpu, 4, "fp8", 2000, 500, best, rep, CAT, ep=True).tokens_per_s
        assert pt.tokens_per_s == pytest.approx(rate, rel=1e-6)


def test_a_requests_own_prefill_under_attention_dp():
    # Prefill of 1,024 tokens: 2 x 37e9 x 1,024 + 2 x 61 x 20,480 x 1,024^2 FLOPs. The replica's work
    # per request is all of it over 8 GPUs at 9,000 TF x 0.35; a request waits for its dense 16.55B and
    # attention on its own GPU and its routed 20.45B over all 8.
    rate = 9000e12 * F("prefill_efficiency.fp4")
    dense = 2 * (37e9 - 634 / 248 * 8 * 1e9) * 1024
    attention = 2 * 61 * 20480 * 1024 ** 2
    routed = 2 * 634 / 248 * 8 * 1e9 * 1024
    rep = inference.replica(DS, B200, 8, "fp4", 1024, 2048, CAT, ep=True)
    assert rep.prefill_s == pytest.approx((dense + attention + routed) / (8 * rate))
    assert rep.prefill_latency_s == pytest.approx((dense + attention) / rate + routed / (8 * rate))
    # tensor parallel: one figure for both
    tp = inference.replica(DS, B200, 8, "fp4", 1024, 2048, CAT)
    assert tp.ttft_prefill_s == tp.prefill_s == pytest.approx((dense + attention + routed) / (8 * rate))


def test_output_length_spread_weights_the_mean_context():
    # A sequence stays in the batch for a share of the steps proportional to its output o, so the
    # batch's mean context is in + f E[o^2]/E[o] = in + f o (1 + cv^2). MLPerf's DeepSeek-R1: 804 in,
    # 3,759 out on average with the dataset's spread 1.253: 804 + 0.5 x 3,759 x 2.570 = 5,634 tokens;
    # one length (cv 0) gives 804 + 1,879.5 = 2,683.5.
    spread = inference.Serving(output_cv=1.253)
    assert inference.context_tokens(804, 3759, CAT, spread) == pytest.approx(804 + 0.5 * 3759 * (1 + 1.253 ** 2))
    assert inference.context_tokens(804, 3759, CAT, spread) == pytest.approx(5634.3, abs=0.1)
    assert inference.context_tokens(804, 3759, CAT) == 2683.5
    # The memory plan holds it too: the same replica fits fewer such sequences.
    plain = inference.replica(DS, B200, 8, "fp4", 804, 3759, CAT, ep=True)
    wide = inference.replica(DS, B200, 8, "fp4", 804, 3759, CAT, spread, ep=True)
    assert wide.kv_per_seq_gb / plain.kv_per_seq_gb == pytest.approx(5634.3 / 2683.5, rel=1e-4)


def test_a_kv_cache_of_its_own_precision():
    # NVFP4 weights keep an fp8 cache by default (kv_bytes.fp4 = 1); a 16-bit cache doubles the bytes
    # and runs absorbed attention at the 16-bit peak.
    fp8 = inference.replica(DS, B200, 8, "fp4", 1024, 2048, CAT, ep=True)
    bf16 = inference.replica(DS, B200, 8, "fp4", 1024, 2048, CAT, inference.Serving(kv_cache="bf16"), ep=True)
    assert bf16.kv_per_seq_gb == pytest.approx(2 * fp8.kv_per_seq_gb)
    assert inference.attention_peak(B200, "bf16") == (2250e12, "bf16")
    assert inference.attention_peak(B200, "fp4") == (4500e12, "fp8")


def test_serving_efficiency_by_tensor_parallel_degree():
    # <factor>.<gpu>.tp<t> first: MI300X at TP1 has its own, TP2..TP8 the TP8-fitted MI300X value;
    # a GPU with no such key reads its per-GPU or the plain value at every degree.
    mi = CAT.gpus["MI300X"]
    for family in ("decode_compute_efficiency", "decode_bandwidth_efficiency", "prefill_efficiency"):
        assert inference.serving_efficiency(CAT, family, mi, "fp8", 1) == F(f"{family}.MI300X.tp1")
        for t in (2, 4, 8):
            assert inference.serving_efficiency(CAT, family, mi, "fp8", t) == F(f"{family}.MI300X")
        assert inference.serving_efficiency(CAT, family, mi, "fp8") == F(f"{family}.MI300X")
        assert inference.serving_efficiency(CAT, family, CAT.gpus["H100"], "fp8", 1) == F(family)
    # Llama 3.1 8B on one MI300X (Azure's 128/1024 row, held out): the one-GPU values carry it
    # within the tolerance, the TP8 ones read it 11% low.
    model = CAT.models["llama-3.1-8b"]
    pt, _ = inference.best_batch(model, mi, 1, "fp8", 128, 1024, 1e9, 1e9, CAT, max_batch=1000)
    assert pt.tokens_per_s == pytest.approx(19579, rel=0.20)
