"""Prefix caching: a service's traffic states the share of prompt tokens a prefix cache serves
(traffic.prefix_cache_hit); prefill work and TTFT fall by it, the KV memory plan does not."""

from __future__ import annotations

import pytest

from compiler.catalog import load_catalog
from compiler.estimate import inference
from compiler.estimate.inference import Serving

CAT = load_catalog()


def test_prefill_flops_with_a_cached_prefix_worked_by_hand():
    # Llama 3 70B, 2,000-token prompts of which half are cached, fp8 at tp 2 on H100. Uncached:
    # 2 x 70.55e9 x 2,000 + 2 x 80 x 8,192 x 2,000^2 FLOPs. Cached 1,000: the linear layers run
    # 1,000 tokens, and those attend over the whole prompt: 2 L h (2,000^2 - 1,000^2).
    m, g = CAT.models["llama-3-70b"], CAT.gpus["H100"]
    rate = 2 * g.tflops["fp8"] * 1e12 * CAT.factor("prefill_efficiency")
    full = (2 * 70.55e9 * 2000 + 2 * 80 * 8192 * 2000 ** 2) / rate
    cached = (2 * 70.55e9 * 1000 + 2 * 80 * 8192 * (2000 ** 2 - 1000 ** 2)) / rate
    plain = inference.replica(m, g, 2, "fp8", 2000, 500, CAT)
    hit = inference.replica(m, g, 2, "fp8", 2000, 500, CAT, Serving(prefix_cache_hit=0.5))
    assert plain.prefill_s == pytest.approx(full)
    assert hit.prefill_s == pytest.approx(cached)
    # The KV plan is the same: shared blocks count for each sequence, the rest holds the cache.
    assert (hit.kv_per_seq_gb, hit.max_batch, hit.free_gb) == (plain.kv_per_seq_gb, plain.max_batch, plain.free_gb)
    # No hit is today's model exactly.
    assert inference.replica(m, g, 2, "fp8", 2000, 500, CAT, Serving(0.0)) == plain


def test_saved_prefill_brackets_a_published_measurement():
    # Published: a team serving Qwen2.5-32B with vLLM 0.6 on H100 nodes turned on
    # enable_prefix_caching; a 1,024-token cached system prompt saves "roughly 90 to 110 ms" of
    # prefill per call on their hardware ("We turned on vLLM's prefix cache for our agent
    # workloads", Nexus Labs engineering post, read 2026-11-29 at
    # https://juhe.plus/discover/feeds/2860/url/zh/5150e5fbe8b6274537fbd500e59957c7.html). Their
    # tensor-parallel size and precision are not stated: the model's saving for 1,024 of 1,847
    # prompt tokens is 136 ms at tp 1 in bf16 and 68 ms at tp 2 (or in fp8), and the published
    # range lies between the two.
    q, g = CAT.models["qwen2.5-32b"], CAT.gpus["H100"]

    def saved_ms(t: int, quant: str) -> float:
        plain = inference.replica(q, g, t, quant, 1847, 200, CAT)
        hit = inference.replica(q, g, t, quant, 1847, 200, CAT, Serving(prefix_cache_hit=1024 / 1847))
        return (plain.prefill_s - hit.prefill_s) * 1e3

    high, low = saved_ms(1, "bf16"), saved_ms(2, "bf16")
    assert low < 90 < 110 < high
    assert high == pytest.approx(136, abs=2) and low == pytest.approx(68, abs=1)
    assert saved_ms(1, "fp8") == pytest.approx(low, rel=0.01)


def test_a_chat_service_with_a_cached_prefix_needs_fewer_gpus_by_what_the_model_says():
    # RAG/agent-shaped chat: 4,000-token prompts, 250 out, Llama 3 70B fp8 at tp 2 on H100, SLO
    # TTFT 2 s, TPOT 50 ms. With 75% of prompt tokens cached each request's prefill falls to
    # about a fifth (the linear layers a quarter, attention 7/16), so each decode step carries less
    # prefill and the replica serves more tokens/s: the GPUs for a given load fall by the same ratio.
    m, g = CAT.models["llama-3-70b"], CAT.gpus["H100"]
    args = (m, g, 2, "fp8", 4000, 250, 2000.0, 50.0, CAT)
    plain, _ = inference.best_batch(*args)
    cached, _ = inference.best_batch(*args, serving=Serving(prefix_cache_hit=0.75))
    assert plain and cached
    rep0 = inference.replica(m, g, 2, "fp8", 4000, 250, CAT)
    rep1 = inference.replica(m, g, 2, "fp8", 4000, 250, CAT, Serving(prefix_cache_hit=0.75))
    linear = 2 * 70.55e9 * 4000
    attention = 2 * 80 * 8192 * 4000 ** 2
    share = (0.25 * linear + (1 - 0.75 ** 2) * attention) / (linear + attention)
    assert rep1.prefill_s / rep0.prefill_s == pytest.approx(share)
    assert share == pytest.approx(0.26, abs=0.01)
    gain = cached.tokens_per_s / plain.tokens_per_s
    assert 1.3 < gain < 4.0
    assert cached.ttft_ms < plain.ttft_ms


def test_the_spec_field_defaults_to_no_cache_and_is_bounded():
    from compiler.estimate.inference import Serving
    from compiler.readback.inputs import inputs_of
    from compiler.spec import InferenceWindow, InferenceWorkload, Slo, Traffic
    plain = InferenceWorkload(name="chat", model="llama-3-8b", traffic=Traffic(1.0, 100, 100), slo=Slo(1000.0, 60.0),
                              window=InferenceWindow(0), path="$.workloads[0]")
    assert Serving.of(plain).prefix_cache_hit == 0.0
    assert "prefix_cache_hit" not in inputs_of(plain)["traffic"]     # plan.json records what was written
    from compiler.resources import schema
    field = schema("spec.schema.json")["$defs"]["inferenceWorkload"]["properties"]["traffic"]["properties"]
    assert (field["prefix_cache_hit"]["minimum"], field["prefix_cache_hit"]["maximum"]) == (0, 1)
