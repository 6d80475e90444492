"""Memory formulas of the estimate stage against hand-worked and published figures."""

from __future__ import annotations

import pytest

from compiler.candidates import Layout
from compiler.catalog import load_catalog
from compiler.catalog.model import Model
from compiler.estimate.memory import (activation_bytes_per_gpu, kv_bytes_per_token, model_state_bytes,
                                      state_bytes_per_param, states_per_gpu_bytes, weight_bytes)


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_bf16_adam_is_16_bytes_per_param(cat):
    # ZeRO paper (Rajbhandari et al. 2020, sec. 3.1): 2 (fp16 weights) + 2 (grads) + 12 (fp32
    # master, momentum, variance) = 16 bytes per parameter.
    assert sum(state_bytes_per_param("bf16", "adamw", cat)) == 16
    assert sum(state_bytes_per_param("fp32", "adamw", cat)) == 16   # 4 + 4 + 8, no master copy


@pytest.mark.parametrize("precision,optimizer,parts", [
    # (weights, grads, optimizer + master) bytes per parameter; docs/performance-model.md table.
    ("bf16", "adamw", (2, 2, 12)),        # ZeRO paper: 2 + 2 + (4 master + 4 + 4)
    ("fp32", "adamw", (4, 4, 8)),         # no separate master copy
    ("fp8", "adamw", (1, 2, 12)),         # Transformer Engine: fp8 weights, bf16 grads
    ("bf16", "adamw-8bit", (2, 2, 2)),    # Dettmers et al. 2022: 1 + 1 byte of Adam state
    ("bf16", "sgd", (2, 2, 8)),           # fp32 momentum + fp32 master
])
def test_model_state_bytes_per_param_by_precision_and_optimizer(cat, precision, optimizer, parts):
    got = state_bytes_per_param(precision, optimizer, cat)
    assert (got[0], got[1], sum(got[2:])) == parts


def test_70b_bf16_weights_are_140_gb(cat):
    # DESIGN.md section 3: 70B at 2 bytes/param = 140 GB of weights.
    assert weight_bytes(70e9, "bf16", cat) / 1e9 == pytest.approx(140)
    assert weight_bytes(70e9, "int4", cat) / 1e9 == pytest.approx(35)


def test_llama2_70b_kv_cache_is_320_kib_per_token(cat):
    # 2 (K,V) * 80 layers * 8 KV heads * 128 head dim * 2 bytes = 327,680 B = 320 KiB.
    m = cat.models["llama-2-70b"]
    assert kv_bytes_per_token(m, "bf16", cat) == 320 * 1024
    assert kv_bytes_per_token(m, "fp8", cat) == 160 * 1024


def test_llama3_405b_bf16_8bit_adam_is_about_2_4_tb(cat):
    # Reference notes (shared/references/002): 810 GB weights + 810 GB grads + 810 GB 8-bit
    # Adam states = ~2.4 TB for Llama-3 405B.
    tb = model_state_bytes(405e9, "bf16", "adamw-8bit", cat) / 1e12
    assert tb == pytest.approx(2.43, rel=0.01)


def test_7b_kv_cache_at_batch_64_x_2048_exceeds_weights(cat):
    # Llama-2-7B (32 layers, 32 KV heads, head dim 128): 512 KiB/token at 16 bits;
    # 64 x 2048 tokens = 68.7 GB of KV cache versus 13.5 GB of bf16 weights.
    m = cat.models["llama-2-7b"]
    kv = kv_bytes_per_token(m, "bf16", cat) * 64 * 2048
    assert kv / 1e9 == pytest.approx(68.7, rel=0.01)
    assert kv > weight_bytes(m.params_b * 1e9, "bf16", cat)


def _dense(params_b=70.0, layers=80, hidden=8192, vocab=0):
    return Model(name="x", family="llm", arch="dense", params_b=params_b, source="test", layers=layers,
                 hidden=hidden, heads=64, kv_heads=8, vocab=vocab, ffn_hidden=28672)


@pytest.mark.parametrize("dp", [2, 8, 64])
def test_zero3_divides_model_state_by_dp(cat, dp):
    m = _dense()
    whole = states_per_gpu_bytes(m, Layout(dp=1, zero=0), "bf16", "adamw", cat)
    sharded = states_per_gpu_bytes(m, Layout(dp=dp, zero=3), "bf16", "adamw", cat)
    assert sharded == pytest.approx(whole / dp)


def test_zero_stages_shard_optimizer_then_grads(cat):
    # ZeRO-1: 2+2 + 12/dp; ZeRO-2: 2 + (2+12)/dp (bytes per parameter).
    m = _dense(params_b=1.0)
    z1 = states_per_gpu_bytes(m, Layout(dp=4, zero=1), "bf16", "adamw", cat)
    z2 = states_per_gpu_bytes(m, Layout(dp=4, zero=2), "bf16", "adamw", cat)
    assert z1 == pytest.approx(1e9 * (4 + 12 / 4))
    assert z2 == pytest.approx(1e9 * (2 + 14 / 4))


def test_tp_and_pp_divide_model_state(cat):
    m = _dense(params_b=8.0)
    assert states_per_gpu_bytes(m, Layout(tp=4, pp=2), "bf16", "adamw", cat) == pytest.approx(8e9 * 16 / 8)


def test_moe_memory_counts_all_experts(cat):
    # Mixtral 8x7B: 46.7B total, 12.9B active; model state covers all 46.7B.
    m = cat.models["mixtral-8x7b"]
    assert states_per_gpu_bytes(m, Layout(), "bf16", "adamw", cat) == pytest.approx(46.7e9 * 16, rel=1e-6)
    # Expert parallelism over 8 ranks shards only the expert part.
    ep8 = states_per_gpu_bytes(m, Layout(dp=8, ep=8, zero=0), "bf16", "adamw", cat)
    assert 12.9e9 * 16 / 2 < ep8 < 46.7e9 * 16 / 2


def test_korthikanti_activations_selective_recompute(cat):
    # Korthikanti et al. 2022, Table 2: sbh*34/t per layer with sequence parallelism and
    # selective recompute. GPT-3 175B shape (h=12288, 96 layers), s=2048, b=1, t=8:
    # 2048*12288*34/8 = 106.95 MB per layer, x96 layers in flight on the first stage.
    m = _dense(params_b=175, layers=96, hidden=12288)
    got = activation_bytes_per_gpu(m, Layout(tp=8, pp=8), 2048, 1, "bf16", cat)
    assert got == pytest.approx(2048 * 12288 * 34 / 8 * 96)
    # Context parallelism splits the sequence.
    assert activation_bytes_per_gpu(m, Layout(tp=8, cp=2), 2048, 1, "bf16", cat) == pytest.approx(got / 2)
