"""The MoE, long-context and FP4 terms of the performance model, each against a figure worked by
hand or published (docs/performance-model.md has the formulas)."""

from __future__ import annotations

import pytest

from compiler.candidates import Layout
from compiler.catalog import load_catalog
from compiler.estimate import inference, moe
from compiler.estimate.memory import activation_bytes_per_gpu, params_per_gpu, weight_bytes
from compiler.estimate.models import active_expert_params, expert_params, experts_hit
from compiler.estimate.training import (Fabric, attention_s_per_token, best_step, compute_s_per_token,
                                        peak_flops)

CAT = load_catalog()


def test_expert_parameters_from_the_published_totals():
    # DeepSeek-V3 report: 671B total, 37B active, 256 routed experts of which 8 per token. With
    # total = shared + 256 e and active = shared + 8 e: e = (671 - 37) / 248 = 2.5565B per expert
    # (over its 58 MoE layers: 3 x 7,168 x 2,048 x 58 = 2.554B, the config's shapes), all experts
    # 654.5B, the 8 a token meets 20.45B.
    ds = CAT.models["deepseek-v3"]
    assert expert_params(ds) / 1e9 == pytest.approx(634 / 248 * 256, rel=1e-12)
    assert active_expert_params(ds) / 1e9 == pytest.approx(634 / 248 * 8, rel=1e-12)
    assert 3 * 7168 * 2048 * 58 / 1e9 == pytest.approx(634 / 248, rel=0.002)


def test_grouped_gemm_efficiency_against_deepgemm():
    # DeepGEMM README @ 55ab91f (H800, FP8, N 4096, K 7168): masked grouped GEMMs at 256, 512 and
    # 1,024 rows per group reach 932, 1,040 and 1,233 TFLOPS; contiguous ones at 4,096 and 8,192
    # rows 1,346; normal GEMMs at 64 and 128 rows 287 and 533, at 4,096 rows 1,265. g(m) =
    # m / (m + 160) puts each figure's share of the 8,192-row rate within 25% of published from
    # 128 rows up; at 64 rows it is 37% high (0.29 against 0.21): no expert GEMM of a training
    # step is that small under expert parallelism.
    g = lambda m: moe.gemm_efficiency(m, CAT)
    assert g(160) == pytest.approx(0.5)
    published = {128: 533, 256: 932, 512: 1040, 1024: 1233, 4096: 1346}
    for rows, tflops in published.items():
        assert g(rows) / g(8192) == pytest.approx(tflops / 1346, rel=0.25), rows
    assert g(64) / g(8192) == pytest.approx(287 / 1346 * 1.37, rel=0.01)


def test_rows_per_expert_and_the_slowdown_worked_by_hand():
    # DeepSeek-V3 at 4,096 tokens per micro-batch, TP2 with sequence parallelism (2,048 tokens per
    # rank), top-8 of 256 experts. EP 64 gathers 64 ranks' tokens: m = 64 x 2,048 x 8 / 256 = 4,096
    # rows per expert. Without EP every rank holds all 256 experts and sees the TP group's 4,096
    # tokens: m = 4,096 x 8 / 256 = 128.
    ds = CAT.models["deepseek-v3"]
    assert moe.rows_per_expert(ds, 64, 2048) == 4096
    assert moe.rows_per_expert(ds, 1, 4096) == 128
    # slowdown = imbalance / (layer efficiency x g): EP 64 pays the busiest rank's share, 1.25
    eff, half, imb = (CAT.factor(n) for n in ("moe_layer_efficiency", "moe_gemm_half_tokens", "moe_imbalance"))
    assert moe.training_slowdown(ds, 64, 2048, CAT) == pytest.approx(imb / (eff * 4096 / (4096 + half)))
    assert moe.training_slowdown(ds, 1, 4096, CAT) == pytest.approx(1 / (eff * 128 / (128 + half)))
    assert moe.training_slowdown(CAT.models["llama-3-70b"], 1, 4096, CAT) == 1.0


def test_moe_activation_bytes_worked_by_hand():
    # DeepSeek-V3 (h 7,168, expert FFN 2,048, top-8) at s 4,096, micro-batch 1, TP 1, 61 layers:
    # per token and layer 34 x 7,168 = 243,712 bytes (Korthikanti) - the MLP's 19 x 7,168 =
    # 136,192 + 8 copies x (4 x 7,168 + 6 x 2,048) = 327,680, so 435,200 bytes; times 4,096 tokens
    # and 61 layers = 108.74 GB, plus fp32 logits 4,096 x 129,280 x 4 = 2.12 GB.
    ds = CAT.models["deepseek-v3"]
    assert moe.activation_bytes_per_token(ds, CAT) == 327_680 - 136_192
    got = activation_bytes_per_gpu(ds, Layout(), 4096, 1, "bf16", CAT)
    assert got == pytest.approx(4096 * 435_200 * 61 + 4096 * 129_280 * 4)
    # MoE recompute keeps the attention's 15 and the MoE input's 2 bytes per hidden unit:
    # 17 x 7,168 x 4,096 x 61 + logits
    got = activation_bytes_per_gpu(ds, Layout(recompute="moe"), 4096, 1, "bf16", CAT)
    assert got == pytest.approx(4096 * 17 * 7168 * 61 + 4096 * 129_280 * 4)


def test_experts_are_whole_under_expert_parallelism_and_split_by_tp_without_it():
    # Qwen3-235B: 227.2B in experts (128 of 1,775M each, over 94 layers), 7.8B dense. At TP2 PP8:
    # EP 32 holds 4 whole experts a rank, 227.2 / (8 x 32) = 0.8875B; EP 1 splits every expert over
    # the 2 TP ranks, 227.2 / (8 x 2) = 14.2B.
    q = CAT.models["qwen3-235b-a22b"]
    dense, experts = params_per_gpu(q, Layout(tp=2, pp=8, ep=32))
    assert experts / 1e9 == pytest.approx(227.2 / 256)
    assert dense / 1e9 == pytest.approx((235 - 227.2) / 16)
    assert params_per_gpu(q, Layout(tp=2, pp=8, ep=1))[1] / 1e9 == pytest.approx(227.2 / 16)


def test_experts_hit_per_decode_step():
    # Mixtral (8 experts, top-2): one sequence reads 8 (1 - 0.75) = 2 experts a layer, 16 sequences
    # 8 (1 - 0.75^16) = 7.92, 64 all but 1e-7 of the 8.
    mix = CAT.models["mixtral-8x7b"]
    assert experts_hit(mix, 1) == pytest.approx(2.0)
    assert experts_hit(mix, 16) == pytest.approx(8 * (1 - 0.75 ** 16))
    assert experts_hit(mix, 64) == pytest.approx(8, abs=1e-6)


def test_moe_decode_gemms_worked_by_hand():
    # Mixtral 8x7B at fp8 on one H100, batch 1: the dense part (46.7 - 45.07 = 1.63B params,
    # 1.63B active) reads 1.63 GB; the 2 experts hit of 8 read 45.07 x 2/8 = 11.27 GB; their math,
    # 2 x 11.27e9 FLOPs at 1,978.9e12 x 0.4, is 0.028 ms. BW = 3,350e9 x 0.9.
    mix = CAT.models["mixtral-8x7b"]
    bw, c = 3350e9 * 0.9, 1978.9e12 * 0.4
    experts, routed = expert_params(mix), active_expert_params(mix)
    dense = max((46.7e9 - experts) / bw, 2 * (12.9e9 - routed) / c)
    want = dense + experts * 2 / 8 / bw + 2 * routed / c
    assert inference.moe_gemm_s(mix, "fp8", 1, bw, c, CAT) == pytest.approx(want)
    assert want * 1e3 == pytest.approx((1.633 + 11.267) / 3.015 + 0.0285, abs=0.01)


def test_attention_runs_its_causal_half_at_the_fused_kernels_rate():
    # Llama 2 7B at 128K on H100: 12 x 32 x 4,096 x 131,072 = 206.2 GFLOPs of attention per token
    # (PaLM's 12 L h s), half of them computed under the causal mask, at 989.4 TFLOP/s x
    # attention_mfu: 206.2e9 x 0.5 / (989.4e12 x a) GPU-seconds per token.
    m, g = CAT.models["llama-2-7b"], CAT.gpus["H100"]
    a = CAT.factor("attention_mfu.H100")
    want = 12 * 32 * 4096 * 131072 * 0.5 / (989.4e12 * a)
    assert attention_s_per_token(m, g, 131072, "bf16", CAT) == pytest.approx(want)
    linear = 6 * 6.74e9 / (989.4e12 * CAT.factor("base_mfu.H100.bf16"))
    assert compute_s_per_token(m, g, 131072, "bf16", CAT) == pytest.approx(linear + want)
    # at 128K attention is 84% of the model FLOPs
    assert 206.2e9 / (206.2e9 + 40.44e9) == pytest.approx(0.836, abs=0.001)


def test_a_long_sequence_takes_context_parallelism_and_its_ring_hides_behind_attention():
    # Qwen3-235B at 128K on 256 H100: every layout that fits splits the sequence (CP > 1), and the
    # ring's K,V passes hide behind each block's attention (no exposed CP).
    q, g = CAT.models["qwen3-235b-a22b"], CAT.gpus["H100"]
    step, _ = best_step(q, 256, g, Fabric("infiniband-ndr", 3200.0, 8), 131072, "bf16", "adamw", CAT)
    assert step is not None and step.layout.cp > 1 and step.layout.ep > 1
    assert step.exposed_cp_s == 0.0


def test_fp4_weights_and_peak():
    # NVFP4: 4-bit values and one 8-bit scale per 16 = 4.5 bits = 0.5625 bytes; Llama 3 70B's
    # 70.55B params are 39.68 GB. B200's dense FP4 peak is 9 PFLOP/s (HGX B200: 144 PFLOPS sparse
    # for 8 GPUs); H100 has none, so fp4 is refused there.
    assert weight_bytes(70.55e9, "fp4", CAT) / 1e9 == pytest.approx(39.684, abs=1e-3)
    assert peak_flops(CAT.gpus["B200"], "fp4") == 9000e12
    assert peak_flops(CAT.gpus["H100"], "fp4") is None
    pt, why = inference.best_batch(CAT.models["llama-3-70b"], CAT.gpus["H100"], 2, "fp4", 1000, 1000, 1e9, 1e9, CAT)
    assert pt is None and why == "no fp4 tensor cores on H100"
    pt, why = inference.best_batch(CAT.models["llama-3-70b"], CAT.gpus["B200"], 1, "fp4", 1000, 1000, 1e9, 1e9, CAT)
    assert pt is not None and pt.tokens_per_s > 0


def test_a_large_moe_job_takes_expert_parallelism_as_published_systems_do():
    # DeepSeek-V3 on 1,024 H100 at the published batch (8,192 x 4,096, fp8, NVIDIA's Megatron-Bridge
    # 25.09 run: TP2 PP8 EP64) and Qwen3-235B on 256 H100 (26.04.01: TP2 PP8 EP32; the ModelZoo
    # runs EP8 within a node with FSDP as fast): the layout search takes expert parallelism, its
    # degree folded over tensor x data ranks, and the experts' time is named apart.
    import calibration as C
    from compiler.estimate.training import best_step
    for key in ("mbridge-deepseek-v3-h100-1024", "mbridge-qwen3-235b-h100-256"):
        f = C.FIGURES[key]
        cat = C.with_factors(CAT, global_batch_tokens=f.batch_seqs * f.seq_len, moe_imbalance=1.0)
        hw = C._hardware(f, cat)
        step, _ = best_step(CAT.models[f.model], f.gpus, hw.gpu, Fabric(hw.fabric, hw.node_gbps, hw.gpus_per_node),
                            f.seq_len, f.precision, "adamw", cat)
        assert step.layout.ep >= 8 and (step.layout.tp * step.layout.cp * step.layout.dp) % step.layout.ep == 0
        assert step.moe_gemm_s > 0 and step.exposed_ep_s > 0
