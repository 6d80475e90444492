"""Wide expert parallelism across nodes (compiler/estimate/inference.py ScaleOut, expert_slots,
expert_parallel_step_s, expert_parallel_prefill_s; comms.domain_all_to_all_s; build.wide_ep_degrees):
each formula against a hand-worked or published figure.

Published figures: DeepEP's low-latency kernel table (github.com/deepseek-ai/DeepEP README,
'Low-latency kernels with pure RDMA': H800, CX7 InfiniBand 400 Gb/s a GPU, 128 tokens a batch, hidden
7,168, top-8 experts, FP8 dispatch and BF16 combine; the table of the library's release of
2025-02-25, unchanged in the README through its 2025-06-05 news). NVIDIA's 'Scaling Large MoE Models
with Wide Expert Parallelism on NVL72 Rack Scale Systems' (NVIDIA technical blog, 2025-10-20):
TensorRT-LLM's wide EP on GB200 NVL72 gives DeepSeek-R1 'up to 1.8x' the per-GPU throughput of a
small-EP (EP8) layout, the gain largest at high interactivity. The decode rates of SGLang on 72
H100 (LMSYS, 2025-05-05) and DeepSeek's profile on 128 H800 (2025-02-27) are held-out rows of
tests/calibration.py.
"""

from __future__ import annotations

import dataclasses

import pytest

from compiler.catalog import load_catalog
from compiler.estimate import comms, inference
from compiler.estimate.build import VLLM_DUAL_BATCH, wide_ep_degrees, wide_ep_fabric
from compiler.estimate.inference import ScaleOut, expert_slots
from compiler.estimate.options import Hardware

from calibration import with_factors

CAT = load_catalog()
F = CAT.factor
DSR1 = CAT.models["deepseek-r1"]
H800 = dataclasses.replace(CAT.gpus["H100"], nvlink_gb_s=400.0)   # H100's HBM and tensor cores, 400 GB/s NVLink
IB = ScaleOut.of(3200, 8, "infiniband", 0, CAT)                     # 8 x 400 Gb/s InfiniBand a node

# DeepEP README, low-latency kernels (H800, 128 tokens a GPU): EP -> (dispatch us, combine us)
DEEPEP_LOW_LATENCY = {8: (77, 114), 16: (118, 195), 32: (155, 273), 64: (173, 314), 128: (192, 369),
                      256: (194, 360)}


def test_the_fabric_share_is_each_gpus_rail_at_the_fabrics_efficiency():
    # 3,200 Gb/s over 8 GPUs = 400 Gb/s = 50 GB/s a GPU, at InfiniBand's 0.9: 45 GB/s; the domain is the node
    assert IB.domain == 8 and IB.bw == pytest.approx(3200e9 / 8 / 8 * F("network_efficiency.infiniband"))
    assert IB.bw == pytest.approx(45e9)
    assert IB.far_share(8) == 0 and IB.far_share(16) == 0.5 and IB.far_share(72) == pytest.approx(64 / 72)
    # a GB200 NVL72 rack: 72 GPUs over NVLink whatever the four-GPU trays
    rack = ScaleOut.of(1600, 4, "infiniband", 72, CAT)
    assert rack.domain == 72 and rack.far_share(72) == 0


@pytest.mark.parametrize("ep", sorted(DEEPEP_LOW_LATENCY))
def test_the_all_to_all_reproduces_deepeps_low_latency_kernels(ep):
    # One dispatch of 128 tokens x 8 copies x 7,168 values at fp8 (1 byte), one combine at bf16 (2):
    # tp_allreduce_latency_us + the slower of the NVLink share ((8 - 1)/ep over H800's 400 GB/s
    # NVLink at nvlink_efficiency) and the fabric share ((ep - 8)/ep over 45 GB/s). No factor is
    # fitted on the table: every one is the catalog's.
    link, latency = comms.scaleup_bw(H800, CAT), F("tp_allreduce_latency_us")
    dispatch = latency + comms.domain_all_to_all_s(128 * 8 * 7168 * 1, ep, 8, link, IB.bw) * 1e6
    combine = latency + comms.domain_all_to_all_s(128 * 8 * 7168 * 2, ep, 8, link, IB.bw) * 1e6
    want_dispatch, want_combine = DEEPEP_LOW_LATENCY[ep]
    assert dispatch == pytest.approx(want_dispatch, rel=0.12)
    assert combine == pytest.approx(want_combine, rel=0.12)


def test_the_all_to_all_worked_by_hand_at_ep16():
    # 7,340,032 bytes, half to the other node over 45 GB/s: 81.56 us, the NVLink half (7/16 over
    # 150 GB/s: 21.4 us) at the same time; plus 40 us: 121.6 us against DeepEP's 118.
    buffer = 128 * 8 * 7168
    got = comms.domain_all_to_all_s(buffer, 16, 8, comms.scaleup_bw(H800, CAT), 45e9)
    assert got * 1e6 == pytest.approx(buffer / 2 / 45e9 * 1e6) == pytest.approx(81.56, abs=0.01)
    assert (got * 1e6 + F("tp_allreduce_latency_us")) == pytest.approx(121.6, abs=0.1)


def test_within_one_nvlink_domain_nothing_changes():
    # n <= domain: the plain all-to-all over NVLink; a replica of one node sized with or without the
    # fabric takes the same step and holds the same memory (the in-node EP8 calibration stands).
    link = comms.scaleup_bw(CAT.gpus["B200"], CAT)
    assert comms.domain_all_to_all_s(1e6, 8, 8, link, 45e9) == comms.all_to_all_s(1e6, 8, link)
    args = (DSR1, CAT.gpus["B200"], 8, "fp4", 4096, 2300.0, CAT)
    assert inference.decode_step_s(*args, ep=True, fabric=IB) == inference.decode_step_s(*args, ep=True)
    r1 = inference.replica(DSR1, CAT.gpus["B200"], 8, "fp4", 1000, 2000, CAT, ep=True, fabric=IB)
    r0 = inference.replica(DSR1, CAT.gpus["B200"], 8, "fp4", 1000, 2000, CAT, ep=True)
    assert r1 == r0


def test_each_gpu_holds_ceil_e_over_t_experts_and_the_dense_part():
    # DeepSeek-R1: 256 experts of (671 - 37) / (256 - 8) = 2.5565B parameters, dense 671 - 654.45 =
    # 16.55B. At EP72 each GPU holds ceil(256 / 72) = 4 experts (288 slots: 32 redundant, as DeepSeek's
    # and SGLang's EPLB runs place them), so in fp8 16.55 + 4 x 2.5565 = 26.77 GB a GPU.
    assert [expert_slots(DSR1, t) for t in (8, 16, 32, 64, 72, 144)] == [32, 16, 8, 4, 4, 2]
    per_expert = (671 - 37) / (256 - 8)
    dense = 671 - per_expert * 256
    for t in (8, 16, 32, 64, 72):
        weights = inference.held_weights_gb(DSR1, t, "fp8", CAT, ep=True)
        assert weights / t == pytest.approx(dense + expert_slots(DSR1, t) * per_expert, rel=1e-9)
    assert inference.held_weights_gb(DSR1, 72, "fp8", CAT, ep=True) / 72 == pytest.approx(26.77, abs=0.01)
    # ... so the KV cache a GPU holds, and the batch, grows with the width
    batch = [inference.replica(DSR1, CAT.gpus["H200"], t, "fp8", 1000, 1000, CAT, ep=True, fabric=IB).max_batch / t
             for t in (8, 16, 32, 64)]
    assert batch == sorted(batch) and batch[-1] > 1.5 * batch[0]


def test_a_prompts_copies_cross_the_fabric_at_every_layer():
    # 1,000 prompt tokens at EP16 over two nodes: 61 layers x 1,000 x 8 copies x 7,168 x (1 + 2)
    # bytes (fp8 out, bf16 back) x 8/16 over 45 GB/s = 61 x 1.9115 ms = 116.6 ms
    got = inference.expert_parallel_prefill_s(DSR1, 16, "fp8", 1000, CAT, IB)
    assert got == pytest.approx(61 * 1000 * 8 * 7168 * 3 * 0.5 / 45e9)
    assert got * 1e3 == pytest.approx(116.6, abs=0.1)
    assert inference.expert_parallel_prefill_s(DSR1, 8, "fp8", 1000, CAT, IB) == 0.0
    # the request waits for it, the replica's share of every step carries it once over its t rails
    wide = inference.replica(DSR1, CAT.gpus["H200"], 16, "fp8", 1000, 1000, CAT, ep=True, fabric=IB)
    alone = inference.replica(DSR1, CAT.gpus["H200"], 16, "fp8", 1000, 1000, CAT, ep=True,
                              fabric=ScaleOut(16, 45e9))
    assert wide.prefill_latency_s - alone.prefill_latency_s == pytest.approx(got)
    assert wide.prefill_s - alone.prefill_s == pytest.approx(got / 16)


def test_two_micro_batches_hide_the_all_to_alls_behind_the_work():
    # ep_decode_overlap 1: the step is max(work, all-to-alls) + host, where without the overlap it is
    # work + all-to-alls + host; at overlap 0 the two are the same step.
    args = (DSR1, CAT.gpus["H100"], 72, "fp8", 256 * 72, 2050.0)
    plain = inference.expert_parallel_step_s(*args, CAT, kv="bf16", fabric=IB)
    dual = inference.expert_parallel_step_s(*args, CAT, kv="bf16", fabric=dataclasses.replace(IB, dual_batch=True))
    none = inference.expert_parallel_step_s(*args, with_factors(CAT, ep_decode_overlap=0.0), kv="bf16",
                                            fabric=dataclasses.replace(IB, dual_batch=True))
    assert none == pytest.approx(plain)
    in_node = ScaleOut(72, 1e30)          # the same step with a free fabric: the all-to-alls' NVLink part
    comm_far = plain - inference.expert_parallel_step_s(*args, CAT, kv="bf16", fabric=in_node)
    assert comm_far > 0 and dual < plain
    # SGLang's 72 H100: work 55 ms + copies 48 ms against 58 ms of all-to-alls: all of them hide
    link = comms.scaleup_bw(CAT.gpus["H100"], CAT)
    b = 256
    comm = 61 * (2 * F("tp_allreduce_latency_us") * 1e-6
                 + comms.domain_all_to_all_s(b * 8 * 7168 * 1, 72, 8, link, IB.bw)
                 + comms.domain_all_to_all_s(b * 8 * 7168 * 2, 72, 8, link, IB.bw))
    assert plain - dual == pytest.approx(comm)


def test_the_step_stays_exact_for_the_bisection():
    # D(B)/B never rises with B, with the fabric and with two micro-batches: best_batch's bisection
    # finds the scan's batch.
    dual = dataclasses.replace(IB, dual_batch=True)
    for fabric in (IB, dual):
        per = [inference.expert_parallel_step_s(DSR1, CAT.gpus["H200"], 32, "fp8", b, 3000.0, CAT, fabric=fabric) / b
               for b in range(32, 32 * 300, 97)]
        assert all(a >= b - 1e-15 for a, b in zip(per, per[1:]))
    g = CAT.gpus["H200"]
    pt, _ = inference.best_batch(DSR1, g, 16, "fp8", 1000, 1000, 3000, 60, CAT, ep=True, fabric=dual)
    rep = inference.replica(DSR1, g, 16, "fp8", 1000, 1000, CAT, ep=True, fabric=dual)
    best = max((inference.serving_point(DSR1, g, 16, "fp8", 1000, 1000, b, rep, CAT, ep=True, fabric=dual)
                for b in range(1, rep.max_batch + 1, 7)), key=lambda p: (p.tpot_ms <= 60 and p.ttft_ms <= 3000,
                                                                         p.tokens_per_s))
    assert pt.tokens_per_s >= best.tokens_per_s * (1 - 1e-9)


def _hw(instance: str, site: str = "s") -> Hardware:
    inst = CAT.instances[instance]
    return Hardware(site, "cloud", inst.provider, inst.name, CAT.gpus[inst.gpu], inst.gpus, inst.vcpus, inst.fabric,
                    inst.network_gbps, 1.0, None, inst.nvlink_domain_gpus or 0)


def test_the_widths_the_layout_search_tries():
    b200 = _hw("p6-b200.48xlarge")
    gb200 = _hw("Standard_ND128isr_NDR_GB200_v6")
    # whole 8-GPU nodes over the fabric; a GB200's four-GPU trays within its 72-GPU rack
    assert wide_ep_degrees(DSR1, b200) == (16, 32, 64, 72)
    assert wide_ep_degrees(DSR1, gb200) == (8, 16, 32, 64, 72)
    # no wider than the experts (Mixtral's 8), none for a dense model or an image without EP (H100's vLLM 0.6.3)
    assert wide_ep_degrees(CAT.models["mixtral-8x7b"], gb200) == (8,)
    assert wide_ep_degrees(CAT.models["llama-3-70b"], gb200) == ()
    assert wide_ep_degrees(DSR1, _hw("p5.48xlarge")) == ()
    # the catalog's vLLM 0.10.1.1 has no dual-batch overlap (vLLM 0.11's --enable-dbo)
    assert CAT.gpus["B200"].serving.vllm[:2] < VLLM_DUAL_BATCH and not wide_ep_fabric(b200, CAT).dual_batch
    assert wide_ep_fabric(gb200, CAT).domain == 72


def test_wide_ep_pays_most_per_gpu_at_tight_latency_on_an_nvl72_rack():
    # NVIDIA (2025-10-20): wide EP on GB200 NVL72 gives DeepSeek-R1 'up to 1.8x' the per-GPU rate of
    # EP8, most at high interactivity. The model: EP32 over EP8 per GPU rises as the TPOT bound
    # tightens, and at a 50 ms p99 bound is above 1 and within NVIDIA's 1.8x.
    g, rack = CAT.gpus["GB200"], ScaleOut.of(1600, 4, "infiniband", 72, CAT)

    def per_gpu(t: int, tpot: float) -> float:
        pt, why = inference.best_batch(DSR1, g, t, "fp4", 1024, 1024, 1e9, tpot, CAT, ep=True, fabric=rack)
        assert pt is not None, why
        return pt.tokens_per_s / t

    gain = {tpot: per_gpu(32, tpot) / per_gpu(8, tpot) for tpot in (20, 30, 50)}
    assert gain[20] > gain[30] > gain[50] > 1.0
    assert gain[50] < 1.8


def test_an_image_that_overlaps_the_all_to_alls_makes_wide_ep_pay_over_infiniband():
    # The catalog's Hopper images (vLLM 0.6.3) run no expert parallelism, so no wide candidate; an
    # overlay naming a vLLM 0.11 image (dual-batch overlap, --enable-dbo) gets EP16-EP72 on Azure's H200
    # nodes over InfiniBand, each step hiding its all-to-alls behind the other micro-batch: DeepSeek-R1
    # in fp8 at a 50 ms TPOT carries more a GPU at EP16 than the memory-starved EP8 of one node, and
    # more with the overlap than without (vLLM reports 2.2k tokens/s a H200 with wide EP and DBO, its
    # blog of 2025-12-17, where it read ~1.5k before).
    h200 = _hw("Standard_ND96isr_H200_v5")
    assert wide_ep_degrees(DSR1, h200) == ()
    newer = dataclasses.replace(CAT.gpus["B200"].serving, version="v0.11.0", vllm=(0, 11, 0))
    hw = dataclasses.replace(h200, gpu=dataclasses.replace(h200.gpu, serving=newer))
    assert wide_ep_degrees(DSR1, hw) == (16, 32, 64, 72)
    fabric = wide_ep_fabric(hw, CAT)
    assert fabric.dual_batch and fabric.domain == 8 and fabric.bw == pytest.approx(45e9)

    def per_gpu(t: int, f) -> float:
        pt, why = inference.best_batch(DSR1, hw.gpu, t, "fp8", 1000, 1000, 5000, 50, CAT, ep=True, fabric=f)
        assert pt is not None, why
        return pt.tokens_per_s / t

    ep8 = per_gpu(8, None)
    assert per_gpu(16, fabric) > per_gpu(16, dataclasses.replace(fabric, dual_batch=False)) > ep8


def test_a_kimi_k2_class_model_needs_the_width_to_fit():
    # Kimi K2 (Moonshot AI's README: 1T total, 32B active, 384 experts top-8, MLA): in fp8 its 1 TB of
    # weights fill no four-GPU GB200 tray (250 GB a GPU); expert parallel over the rack each GPU holds the
    # dense part, 1000 - 968 / 376 x 384 = 11.40B, and ceil(384 / t) experts of 2.5745B: 26.85 GB at EP72
    # (6 experts: 384 over 72 leaves 48 redundant slots), 73.19 GB at EP16 (24).
    k2 = CAT.models["kimi-k2"]
    per_expert = (1000 - 32) / (384 - 8)
    dense = 1000 - per_expert * 384
    assert dense == pytest.approx(11.40, abs=0.01)
    assert inference.held_weights_gb(k2, 72, "fp8", CAT, ep=True) / 72 == pytest.approx(dense + 6 * per_expert)
    assert inference.held_weights_gb(k2, 72, "fp8", CAT, ep=True) / 72 == pytest.approx(26.85, abs=0.01)
    assert inference.held_weights_gb(k2, 16, "fp8", CAT, ep=True) / 16 == pytest.approx(73.19, abs=0.01)
    gb200 = _hw("Standard_ND128isr_NDR_GB200_v6")
    assert wide_ep_degrees(k2, gb200) == (8, 16, 32, 64, 72)
    g, rack = CAT.gpus["GB200"], wide_ep_fabric(gb200, CAT)
    four, why = inference.best_batch(k2, g, 4, "fp8", 1000, 1000, 5000, 100, CAT, ep=True)
    assert four is None and why.startswith("does not fit")
    rates = []
    for t in (8, 16, 72):
        pt, why = inference.best_batch(k2, g, t, "fp8", 1000, 1000, 5000, 100, CAT, ep=True, fabric=rack)
        assert pt is not None, why
        rates.append(pt.tokens_per_s / t)
    assert rates == sorted(rates)
