"""training.LayoutSearch works out the step model's layout-independent and per-shape terms once and
keeps results between GPU counts: every number it gives must be bit for bit what the step model
gives written out in one piece (_plain_step below, step_time as it was before the search kept
anything), and a search asked about many counts must answer each as a fresh one does."""

from __future__ import annotations

import math

import pytest

from compiler.candidates import Layout
from compiler.catalog import load_catalog
from compiler.estimate import comms, moe
from compiler.estimate.factors import factor
from compiler.estimate.layout import training_layouts
from compiler.estimate.memory import params_per_gpu, state_bytes_per_param, training_memory
from compiler.estimate.training import (Fabric, LayoutSearch, Step, attention_s_per_token, best_step,
                                        compute_s_per_token, expert_s_per_token, flops_per_token, mfu_ceiling,
                                        peak_flops, step_time)

CAT = load_catalog()

# (model, GPU, fabric, sequence length, precision): dense and MoE, one- to eight-GPU nodes, context
# parallel (long sequences), fp8 and fp32, and a node with no scale-out fabric.
CASES = [("llama-3-8b", "H100", Fabric("efa", 3200.0, 8), 8192, "bf16"),
         ("llama-3-70b", "H100", Fabric("infiniband-ndr", 3200.0, 8), 32768, "fp8"),
         ("mixtral-8x7b", "A100-80GB", Fabric("ethernet", 400.0, 8), 4096, "bf16"),
         ("llama-3-70b", "L40S", Fabric("roce-400g", 400.0, 4), 8192, "fp32"),
         ("llama-2-7b", "L40S", Fabric("ethernet", 0.0, 1), 4096, "bf16"),
         ("qwen3-30b-a3b", "H100", Fabric("infiniband-ndr", 3200.0, 8), 32768, "fp8")]
NODES = (1, 2, 3, 6, 16, 40, 96)


def _plain_step(model, layout, gpu, fabric, seq_len, precision, optimizer, catalog):
    """The step model of training.py's docstring, every term worked out afresh in one function."""
    peak = peak_flops(gpu, precision)
    gpus = layout.tp * layout.pp * layout.dp * layout.cp
    gpn = fabric.gpus_per_node
    mb = int(factor(catalog, "micro_batch_size"))
    seqs = max(1, round(factor(catalog, "global_batch_tokens") / seq_len))
    m = max(1, math.ceil(seqs / (layout.dp * mb)))
    tokens = m * mb * layout.dp * seq_len
    fpt = flops_per_token(model, seq_len)
    compute = tokens * compute_s_per_token(model, gpu, seq_len, precision, catalog) / gpus
    routed_s = expert_s_per_token(model, gpu, precision, catalog)
    s_local = seq_len / layout.cp
    moe_per_token = 0.0
    if routed_s:
        routed = mb * s_local / layout.tp if layout.ep > 1 else mb * s_local
        copies = moe.copies_s_per_token(model, gpu.memory_bandwidth_gb_s, precision, catalog)
        moe_per_token = (routed_s * (moe.training_slowdown(model, layout.ep, routed, catalog) - 1)
                         + copies * (factor(catalog, "moe_imbalance") if layout.ep > 1 else 1.0))
    moe_s = tokens * moe_per_token / gpus
    nvl = comms.scaleup_bw(gpu, catalog)
    net = comms.scaleout_bw(fabric.node_gbps, gpn, fabric.name, catalog) if fabric.node_gbps > 0 else nvl
    multi_node = gpus > gpn
    layers = model.layers / layout.pp
    act = 2
    tp = m * layers * 4 * comms.ring_allreduce_s(mb * s_local * model.hidden * act, layout.tp, nvl)
    kv_chunk = mb * s_local * max(1.0, (model.kv_heads or model.heads) / layout.tp) * model.kv_head_values * act
    cp_bw = nvl if layout.tp * layout.cp <= gpn else net
    block = (attention_s_per_token(model, gpu, seq_len, precision, catalog) / model.layers * mb * seq_len
             / (layout.tp * layout.cp) / (3 * layout.cp))
    cp = m * layers * 3 * (layout.cp - 1) * max(0.0, kv_chunk / cp_bw - block) if layout.cp > 1 else 0.0
    ep = 0.0
    if layout.ep > 1:
        ep_bw = nvl if layout.ep <= gpn else net
        tok_bytes = mb * s_local / layout.tp * model.hidden * act * (model.experts_per_token or 1)
        ep = m * layers * 4 * (comms.all_to_all_s(tok_bytes, layout.ep, ep_bw) * factor(catalog, "moe_imbalance"))
    pp = 0.0
    if layout.pp > 1:
        pp_bw = net if multi_node else nvl
        pp = m * 2 * mb * s_local * model.hidden * act / layout.tp / pp_bw
    recompute = 0.0
    if layout.recompute == "full":
        recompute = (compute + moe_s) / 3
        tp, ep, cp = tp * 1.5, ep * 1.5, cp * 4 / 3
    elif layout.recompute == "moe":
        recompute = (tokens * routed_s / gpus + moe_s) / 3
        ep = ep * 1.5
    exposed_tp = comms.exposed(tp, factor(catalog, "tp_overlap"), compute)
    exposed_ep = comms.exposed(ep, factor(catalog, "ep_overlap"), compute)
    critical = compute + recompute + moe_s + exposed_tp + cp + exposed_ep + pp
    v = min(int(factor(catalog, "pipeline_virtual_stages")), max(1, int(layers))) if layout.pp > 1 else 1
    bubble = comms.pipeline_bubble(layout.pp, m, v)
    pipeline = critical / (1 - bubble)
    grad_b = state_bytes_per_param(precision, optimizer, catalog)[1]
    dense, experts = params_per_gpu(model, layout)
    dp_bw = net if multi_node else nvl
    expert_group = layout.tp * layout.cp * layout.dp // layout.ep if layout.ep > 1 else layout.dp
    dp = (comms.ring_allreduce_s(dense * grad_b, layout.dp, dp_bw)
          + comms.ring_allreduce_s(experts * grad_b, max(1, expert_group), dp_bw))
    if layout.zero >= 3:
        dp *= factor(catalog, "zero3_comm_multiplier")
    exposed_dp = comms.exposed(dp, factor(catalog, "dp_overlap"), compute * 2 / 3)
    step = pipeline + exposed_dp
    mfu = tokens * fpt / (gpus * peak * step)
    mem = training_memory(model, layout, seq_len, precision, optimizer, catalog)
    return Step(layout, step, tokens, compute, mfu, (step - compute) / step, mem,
                exposed_tp, cp, exposed_ep, pp, pipeline - critical, exposed_dp, moe_s, recompute)


def _inputs(case):
    model, gpu, fabric, seq, precision = case
    return CAT.models[model], CAT.gpus[gpu], fabric, seq, precision


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[4]}")
def test_every_step_is_the_plain_formulas_to_the_bit(case):
    """step_time (a LayoutSearch) on every layout of several counts: the same Step, field by field
    (== on floats: no tolerance)."""
    model, gpu, fabric, seq, precision = _inputs(case)
    search = LayoutSearch(model, gpu, fabric, seq, precision, "adamw", CAT)
    cp_min = int(factor(CAT, "context_parallel_min_seq"))
    checked = 0
    for nodes in NODES:
        for layout in training_layouts(model, nodes * fabric.gpus_per_node, fabric.gpus_per_node, seq, cp_min):
            want = _plain_step(model, layout, gpu, fabric, seq, precision, "adamw", CAT)
            assert search.step(layout) == want, layout
            assert step_time(model, layout, gpu, fabric, seq, precision, "adamw", CAT) == want, layout
            checked += 1
    assert checked > 50


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[4]}")
def test_one_search_over_many_counts_answers_as_fresh_ones(case):
    """The estimate keeps one LayoutSearch for every count it sizes (ceilings first, as its scan
    asks): each answer is a fresh search's, and the steps it returns, memory included, are the
    plain formulas' for their layouts."""
    model, gpu, fabric, seq, precision = _inputs(case)
    search = LayoutSearch(model, gpu, fabric, seq, precision, "adamw", CAT)
    for nodes in NODES + tuple(range(41, 60)) + NODES:
        gpus = nodes * fabric.gpus_per_node
        assert search.ceiling(gpus) == mfu_ceiling(model, gpus, gpu, fabric, seq, precision, "adamw", CAT)
        got = search.best(gpus)
        assert got == best_step(model, gpus, gpu, fabric, seq, precision, "adamw", CAT)
        for s in got:
            if s is not None:
                assert s == _plain_step(model, s.layout, gpu, fabric, seq, precision, "adamw", CAT)


def test_a_gpu_without_the_precision_has_no_step():
    search = LayoutSearch(CAT.models["llama-3-8b"], CAT.gpus["A100-80GB"], Fabric("efa", 400.0, 8), 4096,
                          "fp8", "adamw", CAT)
    assert search.best(16) == (None, None)
    assert search.ceiling(16) is None
    assert search.step(Layout(tp=8, dp=2, zero=1)) is None
