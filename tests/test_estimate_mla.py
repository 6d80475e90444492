"""Multi-head latent attention (DeepSeek-V2/V3/R1) in the serving and training model.

Shapes: DeepSeek-V3 Technical Report (arXiv:2412.19437, sec. 4.2) and its config.json: 128 heads,
KV compression dimension d_c = 512, decoupled rotary key d_h^R = 64, query/key heads of 128 + 64,
value heads of 128. The MLA arithmetic: DeepSeek-V2 (arXiv:2405.04434, sec. 2.1 and Table 1): a
layer caches the latent c^KV (d_c values) and the rotary key k^R (d_h^R), (d_c + d_h^R) l elements
per token, "equal to GQA with only 2.25 groups" (4.5 d_h at d_h = 128); and sec. 2.1.2: W^UK can be
absorbed into W^Q and W^UV into W^O, so decode attends over the latent itself.
"""

from __future__ import annotations

import pytest

from compiler.catalog import load_catalog
from compiler.estimate import inference, training
from compiler.estimate.memory import kv_bytes_per_token

CAT = load_catalog()
DS = CAT.models["deepseek-v3"]


def test_the_catalog_carries_deepseek_v3s_mla_shapes():
    for name in ("deepseek-v3", "deepseek-r1"):
        m = CAT.models[name]
        assert m.is_mla
        assert (m.heads, m.kv_lora_rank, m.qk_rope_head_dim, m.qk_nope_head_dim, m.v_head_dim) == (128, 512, 64, 128, 128)
    assert not CAT.models["llama-3-70b"].is_mla and not CAT.models["qwen3-235b-a22b"].is_mla


def test_latent_kv_bytes_per_token_worked_by_hand():
    # DeepSeek-V2 Table 1: (d_c + d_h^R) l = (512 + 64) x 61 = 35,136 values per token; 4.5 d_h per
    # layer at d_h 128. At 16 bits 70,272 bytes (68.6 KiB), in fp8 35,136. Llama 2 70B's GQA cache,
    # for scale, is 320 KiB at 16 bits (2 x 80 x 8 x 128 x 2): MLA holds a fifth of it per token.
    assert DS.kv_values_per_token_layer == 576 == 4.5 * 128
    assert kv_bytes_per_token(DS, "bf16", CAT) == 61 * 576 * 2 == 70_272
    assert kv_bytes_per_token(DS, "fp8", CAT) == 35_136
    # The latent is one head every query head reads: each GPU of a tensor-parallel replica holds it
    # whole, t times the model's bytes (GQA's heads split: Llama 3 70B's 8 over tp 8, once).
    assert inference.replica_kv_bytes_per_token(DS, 8, "fp8", CAT) == 8 * 35_136
    llama = CAT.models["llama-3-70b"]
    assert inference.replica_kv_bytes_per_token(llama, 8, "fp8", CAT) == kv_bytes_per_token(llama, "fp8", CAT)


def test_absorbed_decode_attention_flops_worked_by_hand():
    # Absorbed decode, per sequence, cached token and layer: the score q_h . [c^KV; k^R] over
    # 512 + 64 values and the value product over the 512-value latent, for each of 128 heads:
    # 2 x 128 x 576 + 2 x 128 x 512 = 147,456 + 131,072 = 278,528 FLOPs (the rough form
    # 2 x heads x (d_c + d_h^R) x 2 gives 294,912). Over 61 layers 16,990,208. The GQA form with
    # hidden 7,168 would give 4 x 7,168 = 28,672 per layer: MLA does 9.7x the work per cached token.
    assert inference.decode_attention_flops(DS) == 61 * 278_528 == 16_990_208
    assert 278_528 / (4 * 7168) == pytest.approx(9.71, abs=0.01)
    # A GQA model keeps 4 L hq: Llama 3 70B, 4 x 80 x 8,192.
    assert inference.decode_attention_flops(CAT.models["llama-3-70b"]) == 4 * 80 * 8192


def test_decode_attention_term_is_the_roofline_of_latent_bytes_and_absorbed_flops():
    # The attention term of a decode step (the step at a context less the step at none): at batch
    # 64 and 2,000 cached tokens on one H200 in fp8 (a what-if: the weights do not fit), the latent
    # reads are 64 x 35,136 x 2,000 = 4.497 GB over 4.8 TB/s x 0.9 = 1.041 ms and the products
    # 64 x 16,990,208 x 2,000 = 2.175 PFLOP over 1,979 TFLOP/s x 0.4 = 2.747 ms: compute-bound.
    gpu = CAT.gpus["H200"]
    bw = gpu.memory_bandwidth_gb_s * 1e9 * CAT.factor("decode_bandwidth_efficiency")
    c = gpu.tflops["fp8"] * 1e12 * CAT.factor("decode_compute_efficiency")
    by_hand = max(64 * 35_136 * 2000 / bw, 64 * 16_990_208 * 2000 / c)
    assert by_hand == pytest.approx(64 * 16_990_208 * 2000 / c)
    assert by_hand == pytest.approx(2.747e-3, rel=0.01)
    step = lambda ctx: inference.decode_step_s(DS, gpu, 1, "fp8", 64, ctx, CAT)
    assert step(2000) - step(0) == pytest.approx(by_hand, rel=1e-9)
    # At tp 8 every GPU reads the whole latent but computes an eighth of the heads: the reads stay
    # 1.041 ms, the products fall to 0.343 ms, so the replicated reads bind.
    step8 = lambda ctx: inference.decode_step_s(DS, gpu, 8, "fp8", 64, ctx, CAT)
    assert step8(2000) - step8(0) == pytest.approx(64 * 35_136 * 2000 / bw, rel=1e-9)


def test_nvfp4_decode_attention_runs_at_the_fp8_peak_of_its_fp8_kv_cache():
    # An NVFP4 checkpoint serves with an fp8 KV cache (kv_bytes.fp4 = 1): attention's products run
    # at the fp8 peak with the fp8 (plain) decode efficiency, not at the fp4 peak.
    gpu = CAT.gpus["B200"]
    peak, quant = inference.attention_peak(gpu, "fp4")
    assert (peak, quant) == (gpu.tflops["fp8"] * 1e12, "fp8")
    assert inference.attention_peak(gpu, "fp8") == (gpu.tflops["fp8"] * 1e12, "fp8")


def test_prefill_attention_is_mha_at_the_full_head_widths():
    # Unabsorbed (prefill) MLA is MHA over 128 heads with queries and keys of 128 + 64 and values
    # of 128: per token pair 2 x 128 x 192 (score) + 2 x 128 x 128 (value) = 81,920 FLOPs forward,
    # which the model's 4 L h s form (causal share aside) gives at h = 20,480.
    assert DS.mha_attention_width == 128 * (192 + 128) // 2 == 20_480
    assert 4 * DS.mha_attention_width == 2 * 128 * 192 + 2 * 128 * 128
    # Prefill of 1,000 tokens: 2 x 37e9 x 1,000 + 2 x 61 x 20,480 x 1,000^2 FLOPs.
    rep = inference.replica(DS, CAT.gpus["B200"], 8, "fp8", 1000, 1000, CAT)
    peak = CAT.gpus["B200"].tflops["fp8"] * 1e12
    flops = 2 * 37e9 * 1000 + 2 * 61 * 20_480 * 1000 ** 2
    assert rep.prefill_s == pytest.approx(flops / (8 * peak * CAT.factor("prefill_efficiency")))
    # Other models: the width they always had.
    llama = CAT.models["llama-3-70b"]
    assert llama.mha_attention_width == llama.attention_width == 8192


def test_training_still_counts_mla_attention_at_the_hidden_width():
    # A known limit (docs/performance-model.md): counted at 20,480 the DeepSeek-V3 runs the MoE
    # factors are fitted on read 6% slower and the fit moves; until that refit, training keeps
    # 12 L h s at h = hidden: 6 x 37e9 + 12 x 61 x 7,168 x 4,096 per token at 4K.
    assert DS.attention_width == 7168
    assert training.flops_per_token(DS, 4096) == pytest.approx(6 * 37e9 + 12 * 61 * 7168 * 4096)


def test_context_parallel_kv_chunk_uses_the_decompressed_heads():
    # Ring attention passes K (128 + 64) and V (128) of each head: 320 values per head and token.
    assert DS.kv_head_values == 320
    assert CAT.models["llama-3-70b"].kv_head_values == 2 * 128
