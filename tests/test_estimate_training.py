"""Training formulas, monotonicity properties and candidate semantics of the estimate stage."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from compiler.catalog import load_catalog
from compiler.estimate import comms, estimate
from compiler.estimate.build import usage
from compiler.estimate.training import Fabric, best_step, flops_per_token
from compiler.spec import (Checkpoint, CloudSite, OnPremSite, OwnedNodes, Pin, Policy, Spec, TrainingWindow,
                           TrainingWorkload)

CAT = load_catalog()


def test_flops_per_token_is_6n_plus_attention():
    # Kaplan et al. 2020 / PaLM appendix B: 6N + 12*L*h*s. Llama-2-70B at s=4096:
    # 6*68.98e9 + 12*80*8192*4096 = 4.139e11 + 3.221e10.
    m = CAT.models["llama-2-70b"]
    assert flops_per_token(m, 4096) == pytest.approx(6 * 68.98e9 + 12 * 80 * 8192 * 4096)


def test_moe_flops_use_active_parameters():
    m = CAT.models["mixtral-8x7b"]  # 12.9B active of 46.7B
    assert flops_per_token(m, 4096) == pytest.approx(6 * 12.9e9 + 12 * 32 * 4096 * 4096)


def test_ring_allreduce_moves_2_n_minus_1_over_n():
    # Patarasuk & Yuan 2009: each GPU sends and receives 2(n-1)/n of the buffer.
    assert comms.ring_allreduce_s(8e9, 8, 1e9) == pytest.approx(2 * 7 / 8 * 8)
    assert comms.ring_allreduce_s(8e9, 1, 1e9) == 0


def test_pipeline_bubble():
    # Narayanan et al. 2021: (p-1)/(m+p-1); interleaving by v divides the bubble's share.
    assert comms.pipeline_bubble(4, 8) == pytest.approx(3 / 11)
    assert comms.pipeline_bubble(4, 8, 4) == pytest.approx(3 / 35)
    assert comms.pipeline_bubble(1, 8) == 0


def test_exposed_communication_never_exceeds_comm_or_goes_negative():
    assert comms.exposed(10, 0.7, 100) == pytest.approx(3)
    assert comms.exposed(10, 0.7, 2) == pytest.approx(8)


def _duration(model, gpus, gbps, fabric="infiniband-ndr", gpu="H100", seq=4096):
    s, _ = best_step(CAT.models[model], gpus, CAT.gpus[gpu], Fabric(fabric, gbps, 8), seq, "bf16", "adamw", CAT)
    return s


@settings(max_examples=25, deadline=None)
@given(model=st.sampled_from(["llama-2-7b", "llama-3-70b", "mixtral-8x7b"]),
       nodes=st.sampled_from([2, 8, 32]),
       fast=st.sampled_from([400.0, 1600.0, 3200.0]),
       ratio=st.sampled_from([1.0, 2.0, 8.0, 32.0]))
def test_slower_fabric_never_makes_training_faster(model, nodes, fast, ratio):
    quick = _duration(model, nodes * 8, fast)
    slow = _duration(model, nodes * 8, fast / ratio)
    assert (quick is None) == (slow is None)  # memory does not depend on the fabric
    if quick is None:
        return
    assert slow.seconds / slow.tokens >= quick.seconds / quick.tokens * (1 - 1e-9)


def test_slower_fabric_never_faster_over_a_grid():
    # The same property, exhaustively: every model shape (dense, MoE, 405B), GPU and fabric kind,
    # line rates from 100 to 3,200 Gb/s per node; time per token never drops as bandwidth does.
    compared = 0
    for model in ("llama-2-7b", "llama-3-70b", "mixtral-8x7b", "llama-3-405b"):
        for gpu in ("H100", "A100-80GB"):
            for nodes in (1, 8, 64):
                for fabric in ("infiniband-ndr", "ethernet-100g"):
                    per_token = []
                    for gbps in (3200.0, 1600.0, 800.0, 400.0, 200.0, 100.0):
                        s = _duration(model, nodes * 8, gbps, fabric, gpu)
                        if s is None:
                            break
                        per_token.append(s.seconds / s.tokens)
                    compared += max(0, len(per_token) - 1)
                    assert per_token == sorted(per_token), (model, gpu, nodes, fabric)
    assert compared > 100  # not vacuous: most combinations fit


def test_fabric_kinds_are_ordered_for_the_same_line_rate():
    ib = _duration("llama-3-70b", 256, 3200, "infiniband-ndr")
    eth = _duration("llama-3-70b", 256, 3200, "ethernet-100g")
    assert eth.seconds / eth.tokens > ib.seconds / ib.tokens


def _spec(*workloads, sites=None, horizon=36):
    sites = sites or (CloudSite(name="aws-use1", provider="aws", region="us-east-1",
                                pricing=("on_demand", "spot")),)
    return Spec(api_version="infra-compile/v1", name="t", horizon_months=horizon, sites=sites,
                policy=Policy(), workloads=tuple(workloads))


def _train(name="llm", **kw):
    base = dict(name=name, model="llama-3-8b", window=TrainingWindow(start_month=1, deadline_days=30),
                tokens=1e12, seq_len=4096)
    base.update(kw)
    return TrainingWorkload(**base)


@settings(max_examples=20, deadline=None)
@given(model=st.sampled_from(["llama-2-7b", "llama-3-70b", "mixtral-8x7b", "llama-3-405b"]),
       fabric=st.sampled_from(["infiniband-ndr", "roce-400g", "ethernet-100g"]),
       nodes=st.sampled_from([4, 16, 64, 256]))
def test_more_gpus_never_slower_unless_communication_dominates(model, fabric, nodes):
    site = OnPremSite(name="dc", power_kw=1e5, electricity_usd_per_kwh=0.1, pue=1.3, max_racks=1000)
    durations = {}
    for g in (nodes * 8, nodes * 16):
        w = _train(model=model, tokens=1e12, window=TrainingWindow(), pin=Pin(gpus=g, instance="hgx-h100"))
        cands = estimate(_spec(w, sites=(site,), horizon=1200), CAT).by_workload["llm"]
        cands = [c for c in cands if c.fabric == fabric]
        durations[g] = cands[0] if cands else None
    small, big = durations[nodes * 8], durations[nodes * 16]
    if small is None or big is None:
        return  # does not fit at that size: nothing to compare
    assert (big.estimate.duration_hours <= small.estimate.duration_hours
            or any("communication dominates" in n for n in big.estimate.notes))


def test_communication_dominated_runs_say_so():
    # Llama-2-7B on 8,192 H100 over 2x100G Ethernet: with the global batch fixed, each GPU
    # computes little per step while the gradient all-reduce and bubble stay: > 50% overhead.
    site = OnPremSite(name="dc", power_kw=1e5, electricity_usd_per_kwh=0.1, pue=1.3, max_racks=1000)
    w = _train(model="llama-2-7b", tokens=1e11, window=TrainingWindow(), seq_len=4096,
               pin=Pin(gpus=8192, instance="hgx-h100"))
    cands = estimate(_spec(w, sites=(site,)), CAT).by_workload["llm"]
    eth = [c for c in cands if c.fabric == "ethernet-100g"]
    assert eth and any("communication dominates" in n for n in eth[0].estimate.notes)


def test_candidates_semantics():
    w = _train(interruptible=True, checkpoint=Checkpoint(interval_min=30))
    c = estimate(_spec(w), CAT)
    cands = c.by_workload["llm"]
    assert cands, c.rejected["llm"]
    ids = [x.id for x in cands]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    for x in cands:
        assert x.nodes * x.gpus_per_node == x.gpus
        assert x.layout.tp * x.layout.pp * x.layout.dp * x.layout.cp == x.gpus
        assert x.start_month == 1 and x.usage[0][0] == 1
        assert sum(h for _, h in x.usage) == pytest.approx(x.estimate.duration_hours, abs=1e-3)
        assert all(h <= 730 for _, h in x.usage)
        assert x.estimate.duration_hours <= 30 * 24
        assert x.fabric == CAT.instances[x.instance].fabric
    od = {x.id.rsplit("/", 1)[0]: x for x in cands if not x.spot}
    spot = [x for x in cands if x.spot]
    assert spot, "interruptible work at a spot site gets spot variants"
    for s in spot:  # spot pays restart overhead
        twin = od.get(s.id.rsplit("/", 1)[0])
        if twin:
            assert s.estimate.duration_hours > twin.estimate.duration_hours


def test_deadline_miss_is_a_rejection_with_reason():
    w = _train(model="llama-3-405b", tokens=15e12, window=TrainingWindow(deadline_days=1),
               pin=Pin(gpus=64, instance="p5.48xlarge"))
    c = estimate(_spec(w), CAT)
    assert c.by_workload["llm"] == ()
    reasons = " ".join(r.reason for r in c.rejected["llm"])
    assert "does not fit" in reasons or "misses" in reasons


def test_pin_and_policy_filters():
    w = _train(pin=Pin(gpu="A100-80GB"))
    cands = estimate(_spec(w), CAT).by_workload["llm"]
    assert cands and {x.gpu for x in cands} == {"A100-80GB"}


def test_fp8_on_a100_is_rejected_not_raised():
    w = _train(precision="fp8", pin=Pin(instance="p4de.24xlarge"))
    c = estimate(_spec(w), CAT)
    assert c.by_workload["llm"] == ()
    assert any("fp8" in r.reason for r in c.rejected["llm"])


def test_usage():
    # 1,000 hours from month 2 at 730 hours a month: a full month 2, 270 hours of month 3.
    assert usage(2, 1000) == ((2, 730.0), (3, 270.0))


@pytest.mark.parametrize("model,fabric,gbps,gpn", [("llama-3-8b", "efa", 3200, 8), ("llama-3-70b", "efa", 3200, 8),
                                                   ("llama-3-70b", "ethernet", 400, 4),
                                                   ("mixtral-8x7b", "ethernet", 400, 8)])
def test_mfu_ceiling_bounds_every_larger_count(model, fabric, gbps, gpn):
    """The scan of node counts stops on training.mfu_ceiling: it must bound best_step's MFU on
    every count at or above the one it was asked for (checked here count by count)."""
    from compiler.estimate.models import resolve_model
    from compiler.estimate.training import Fabric, best_step, mfu_ceiling

    m = resolve_model(model, CAT)
    gpu = CAT.gpus["H100" if gpn == 8 else "L40S"]
    fab = Fabric(fabric, gbps, gpn)
    for nodes in (2, 3, 7, 24, 100):
        ceiling = mfu_ceiling(m, nodes * gpn, gpu, fab, 8192, "bf16", "adamw", CAT)
        for larger in range(nodes, nodes + 40):
            best, _ = best_step(m, larger * gpn, gpu, fab, 8192, "bf16", "adamw", CAT)
            if best is not None:
                assert best.mfu <= ceiling + 1e-12, (model, nodes, larger, best.mfu, ceiling)


@pytest.mark.parametrize("model,gpu,gpn,seq", [("llama-3-70b", "L4", 4, 4096), ("llama-3-70b", "L4", 1, 4096),
                                               ("llama-3-70b", "L4", 8, 8192), ("llama-3-70b", "A100-40GB", 8, 4096),
                                               ("mixtral-8x7b", "L4", 8, 4096)])
def test_mfu_ceiling_bounds_memory_bound_gpus(model, gpu, gpn, seq):
    """Where memory forces full recompute or ZeRO-3 (a 70B model on 24 GB GPUs), the ceiling
    reads the steps that can fit: it still bounds every larger count's best step, and it is
    that step's MFU, not the selective ZeRO-1 step's a quarter above it (the count scan stops on
    it: on these GPUs it used to run to the node cap)."""
    from compiler.estimate.models import resolve_model
    from compiler.estimate.training import Fabric, LayoutSearch

    m = resolve_model(model, CAT)
    search = LayoutSearch(m, CAT.gpus[gpu], Fabric("efa", 400, gpn), seq, "bf16", "adamw", CAT)
    tight = 0
    for nodes in (2, 5, 16, 64, 200, 400):
        gpus = max(nodes * gpn, 2 * gpn)
        ceiling = search.ceiling(gpus)
        found = [best.mfu for larger in range(gpus, gpus + 40 * gpn, gpn)
                 if (best := search.best(larger)[0]) is not None]
        assert all(mfu <= ceiling + 1e-12 for mfu in found), (model, gpu, gpus, max(found), ceiling)
        tight += bool(found) and max(found) >= ceiling * 0.98
    assert tight >= 2, "the ceiling meets the best steps it bounds on the counts that fit"


def test_every_node_count_until_larger_ones_are_dominated():
    """No powers of two, no 'three smallest': every whole-node count from the smallest that
    meets the deadline is a candidate, up to where every larger count is provably dominated
    (finishes in the first month with no fewer node-hours than a smaller count that does)."""
    from compiler.estimate.build import llm_training_estimate
    from compiler.estimate.models import resolve_model
    from compiler.estimate.options import hardware_options

    w = _train(pin=Pin(instance="p5.48xlarge"))
    sp = _spec(w)
    cands = [c for c in estimate(sp, CAT).by_workload["llm"] if not c.spot]
    counts = sorted(c.nodes for c in cands)
    assert counts == list(range(counts[0], counts[-1] + 1))
    one_month = [c for c in cands if len(c.usage) == 1]
    assert one_month, "the scan reaches counts that finish in their first month"
    record = min(c.nodes * c.estimate.duration_hours for c in one_month)
    hw = hardware_options(sp, w, CAT)[0]
    model = resolve_model(w.model, CAT)
    for nodes in range(counts[-1] + 1, counts[-1] + 200):
        est, _, _ = llm_training_estimate(w, model, hw, nodes * 8, False, CAT)
        assert est is None or nodes * est.duration_hours >= record * (1 - 1e-6), nodes


def test_vision_data_loading_ceiling():
    # ResNet-50 on a node with few vCPUs per GPU is loader bound and says so.
    from compiler.estimate.vision import vision_rate
    m, g = CAT.models["resnet-50"], CAT.gpus["H100"]
    rich = vision_rate(m, 8, g, 8, 224, "infiniband-ndr", 3200, "bf16", "sgd", CAT)
    poor = vision_rate(m, 8, g, 8, 16, "infiniband-ndr", 3200, "bf16", "sgd", CAT)
    assert not rich.loader_bound and poor.loader_bound
    assert poor.samples_per_s == pytest.approx(8 * 2 * 300)   # 2 vCPUs/GPU x 300 img/s per vCPU


# ---------------------------------------------------------------- hand-worked figures

def test_per_gpu_bandwidths_from_the_catalog():
    # p5.48xlarge: 3,200 Gb/s EFA per node over 8 GPUs = 50 GB/s per GPU, x 0.80 achieved
    # (network_efficiency.efa) = 40 GB/s. H100 NVLink 900 GB/s bidirectional -> 450 one way
    # x 0.75 (nvlink_efficiency) = 337.5 GB/s. L40S has no NVLink: PCIe at 25 GB/s.
    assert comms.scaleout_bw(3200, 8, "efa", CAT) == pytest.approx(40e9)
    assert comms.scaleout_bw(3200, 8, "infiniband-ndr", CAT) == pytest.approx(45e9)
    assert comms.scaleout_bw(3200, 8, "ethernet-100g", CAT) == pytest.approx(30e9)
    assert comms.scaleup_bw(CAT.gpus["H100"], CAT) == pytest.approx(337.5e9)
    assert comms.scaleup_bw(CAT.gpus["L40S"], CAT) == pytest.approx(25e9)


def test_hardware_interruption_rate_matches_llama3():
    # Llama 3 paper, sec. 3.3.4: 466 job interruptions in 54 days on 16,384 H100.
    rate = CAT.factor("hardware_interruptions_per_gpu_day")
    assert rate * 16384 * 54 == pytest.approx(466, rel=0.01)


def test_spot_checkpoint_restart_overhead_worked_by_hand():
    from compiler.estimate.training import lost_fraction
    # 1,024 GPUs on 128 nodes, checkpoint every 60 min, AWS spot 0.02 preemptions/node-day,
    # 70B with bf16 + Adam = 1,120 GB of model state:
    #   checkpoint write: 1120 GB / (128 x 2 GB/s) = 4.375 s; the reload reads as fast: 4.375 s
    #   each event loses half an interval + a 10 min restart + the reload
    #     = 0.5 + 1/6 + 4.375/3600 h = 0.667882 h
    #   hardware: 0.00053 x 1024 / 24 = 0.022613 events/h; spot: 0.02 x 128 / 24 = 0.106667/h
    #   checkpoint stall: 10% of the write is synchronous, once per 3,600 s
    #   lost = (0.022613 + 0.106667) x 0.667882 + 4.375 x 0.1 / 3600 = 0.086465
    losses = lost_fraction(1024, 128, 60, 0.02, 1120, CAT)
    lost = losses.fraction
    assert lost == pytest.approx((0.00053 * 1024 / 24 + 0.02 * 128 / 24) * (0.5 + 10 / 60 + 4.375 / 3600)
                                 + 4.375 * 0.1 / 3600)
    assert lost == pytest.approx(0.086465, abs=1e-6)
    assert not losses.auto and losses.interval_min == 60
    assert losses.notes and "preemptions/day" in losses.notes[0]
    on_demand = lost_fraction(1024, 128, 60, 0.0, 1120, CAT).fraction
    assert on_demand == pytest.approx(lost - 0.02 * 128 / 24 * (0.5 + 10 / 60 + 4.375 / 3600))
    # A longer interval loses more per preemption (and writes less often).
    assert lost_fraction(1024, 128, 240, 0.02, 1120, CAT).fraction > lost


def test_auto_checkpoint_interval_is_youngs_optimum_worked_by_hand():
    from compiler.estimate.training import lost_fraction
    # Llama 3 405B on 16,384 H100 (2,048 nodes), bf16 + Adam: 405.85e9 x 16 B = 6,493.6 GB.
    #   write 6,493.6 / (2,048 x 2 GB/s) = 1.58535 s, stall 10% = 0.158535 s
    #   r = 0.00053 x 16,384 / 24 = 0.361813 interruptions/h = 1.005037e-4 /s
    #   Young: I = sqrt(2 x 0.158535 / 1.005037e-4) = 56.168 s (longer than the write)
    #   lost = r (I/2 + 10 min + reload 1.58535 s) + S / I
    #        = 0.361813 x (28.084 + 600 + 1.585) / 3600 + 0.158535 / 56.168 = 0.066106
    # (Llama 3 paper, sec. 3.3.4: "higher than 90% effective training time" with 466
    # interruptions in 54 days at this scale.)
    losses = lost_fraction(16384, 2048, None, 0.0, 6493.6, CAT)
    assert losses.auto
    assert losses.interval_min * 60 == pytest.approx(56.168, abs=1e-3)
    assert losses.fraction == pytest.approx(0.066106, abs=1e-6)
    assert 1 / (1 + losses.fraction) > 0.90
    assert losses.notes and "checkpoint every 0.9 min" in losses.notes[-1]
    # Young's interval is the optimum: a stated interval either side of it loses more.
    for minutes in (0.5, 2.0, 60.0):
        assert lost_fraction(16384, 2048, minutes, 0.0, 6493.6, CAT).fraction > losses.fraction
    # A small job is capped at checkpoint_max_interval_min (60): 8 GPUs would wait hours.
    small = lost_fraction(8, 1, None, 0.0, 112, CAT)
    assert small.interval_min == 60


def test_vision_training_is_3x_forward_flops():
    # ResNet-50: 4.1 GFLOP forward at 224^2 (torchvision), training = 3x = 12.3 GFLOP/sample.
    # One H100 at 989.4 dense bf16 TFLOP/s x vision_mfu 0.086 = 85.1 TFLOP/s achieved
    # -> 85.09e12 / 12.3e9 = 6,918 img/s, beside MLPerf v3.0's ~6,940 img/s/GPU (8 x H100 in
    # 13.466 min for ~35 epochs of 1,281,167 images). No all-reduce on one GPU; 28 vCPUs/GPU
    # x 300 img/s keep the loader (8,400 img/s) out of the way.
    from compiler.estimate.vision import vision_rate
    r = vision_rate(CAT.models["resnet-50"], 1, CAT.gpus["H100"], 8, 224, "infiniband-ndr", 3200,
                    "bf16", "sgd", CAT)
    assert r.samples_per_s == pytest.approx(989.4e12 * 0.086 / (3 * 4.1e9))
    assert r.samples_per_s == pytest.approx(6918, rel=1e-3)
    assert r.mfu == pytest.approx(0.086) and not r.loader_bound


@pytest.mark.parametrize("model,gpu,gpn", [("llama-3-8b", "L40S", 1), ("llama-3-8b", "L40S", 4),
                                           ("llama-3-70b", "L40S", 4), ("llama-3-70b", "A100-80GB", 1),
                                           ("llama-3-70b", "H100", 8), ("mixtral-8x7b", "A100-80GB", 2)])
def test_no_layout_fits_below_the_fewest_gpus_to_fit(model, gpu, gpn):
    """The estimate skips counts below training.fewest_gpus_to_fit without a layout search: on
    every one of them best_step must find no layout that fits (checked count by count)."""
    from compiler.estimate.training import fewest_gpus_to_fit
    m, g = CAT.models[model], CAT.gpus[gpu]
    fab = Fabric("ethernet", 400, gpn)
    for seq in (4096, 32768):
        fewest = fewest_gpus_to_fit(m, gpn, g, seq, "bf16", "adamw", CAT)
        below = [n * gpn for n in range(1, 400) if n * gpn < fewest]
        for gpus in below:
            assert best_step(m, gpus, g, fab, seq, "bf16", "adamw", CAT)[0] is None, (model, seq, gpus)
        if fewest < 400 * gpn:   # and it is not vacuous: some count fits
            assert any(best_step(m, n * gpn, g, fab, seq, "bf16", "adamw", CAT)[0]
                       for n in range(max(1, int(fewest // gpn)), 400))


def test_a_70b_model_fits_one_gpu_nodes_at_tp1_only_with_full_recompute():
    # Llama-3-70B at 4,096 tokens, micro-batch 1, TP 1 (one GPU a node): with selective recompute
    # the activations alone are s x h x 34 bytes x 80 layers (Korthikanti et al. 2022, sequence
    # parallel + selective recompute) = 4,096 x 8,192 x 34 x 80 = 91.3 GB, over an L40S's 48 GB at
    # any GPU count. Full recompute keeps each layer's input (2 s h bytes) and one layer's
    # activations: 4,096 x 8,192 x (2 x 80 + 34) = 6.5 GB, plus the fp32 logits 4,096 x 128,256 x 4
    # = 2.1 GB. The 16 bytes/param of 70.55B shard over every GPU under ZeRO-3, so the fewest GPUs
    # that fit are 1,128.8 GB / (48 x 0.95 - 8.6 - 4 GB buffer) = 34.2.
    from compiler.estimate.training import fewest_gpus_to_fit
    assert 4096 * 8192 * 34 * 80 / 1e9 == pytest.approx(91.27, abs=0.01)
    act_full = (4096 * 8192 * (2 * 80 + 34) + 4096 * 128256 * 4) / 1e9
    assert act_full == pytest.approx(8.61, abs=0.01)
    m = CAT.models["llama-3-70b"]
    want = 70.55e9 * 16 / 1e9 / (48 * 0.95 - act_full - 4)
    assert fewest_gpus_to_fit(m, 1, CAT.gpus["L40S"], 4096, "bf16", "adamw", CAT) == pytest.approx(want, rel=1e-9)
    step, _ = best_step(m, 40, CAT.gpus["L40S"], Fabric("ethernet", 100, 1), 4096, "bf16", "adamw", CAT)
    assert step is not None and step.layout.recompute == "full" and step.layout.zero == 3


def _exhaustive_best(m, gpus, gpu, fab, seq, cat):
    """The fastest fitting layout over every layout training_layouts offers, each stepped
    (best_step's definition, without its shortcuts)."""
    from compiler.estimate.factors import factor
    from compiler.estimate.layout import training_layouts
    from compiler.estimate.memory import training_memory, usable_training_gb
    from compiler.estimate.training import _key, step_time

    from dataclasses import replace
    from compiler.estimate.training import recomputes
    fits = []
    cp_min = int(factor(cat, "context_parallel_min_seq"))
    for plain in training_layouts(m, gpus, fab.gpus_per_node, seq, cp_min):
        for layout in (replace(plain, recompute=r) for r in recomputes(m)):
            mem = training_memory(m, layout, seq, "bf16", "adamw", cat)
            if mem.total_gb <= usable_training_gb(gpu.memory_gb, cat):
                s = step_time(m, layout, gpu, fab, seq, "bf16", "adamw", cat, mem)
                fits.append((_key(s), layout, s.seconds))
    return min(fits, key=lambda f: f[0]) if fits else None


@pytest.mark.parametrize("model,gpu,gpn", [("llama-3-8b", "H100", 8), ("llama-3-70b", "H100", 8),
                                           ("llama-3-70b", "L40S", 4), ("mixtral-8x7b", "A100-80GB", 8),
                                           ("llama-3-8b", "L40S", 1)])
def test_best_step_skips_only_zero_stages_that_cannot_win(model, gpu, gpn):
    """best_step leaves out a shape's higher ZeRO stages once a lower one fits (stages 1 and 2
    step alike, stage 3 moves zero3_comm_multiplier x more, ties go to the lower stage), and tries
    more recompute only where less does not fit: on every count here it picks the layout the
    exhaustive search over every layout and recompute picks, at the same step time."""
    from compiler.estimate.factors import factor
    assert factor(CAT, "zero3_comm_multiplier") >= 1
    m, g = CAT.models[model], CAT.gpus[gpu]
    fab = Fabric("ethernet", 400, gpn)
    for nodes in (1, 2, 3, 5, 8, 16, 48, 128):
        want = _exhaustive_best(m, nodes * gpn, g, fab, 8192, CAT)
        got, _ = best_step(m, nodes * gpn, g, fab, 8192, "bf16", "adamw", CAT)
        assert (got is None) == (want is None), (model, nodes)
        if got is not None:
            assert (got.layout, got.seconds) == (want[1], want[2]), (model, nodes)


@pytest.mark.parametrize("pricing,interruptible,owned", [(("on_demand", "spot"), True, 0),
                                                          (("on_demand", "reserved_1y"), False, 4)])
def test_count_scan_skips_only_counts_prune_would_drop(monkeypatch, pricing, interruptible, owned):
    """On pools where node-hours are compared in total (spot, on-prem, cloud without reserved
    terms) the scan skips counts a found count dominates (build._Totals). Whatever it skips,
    prune would have dropped: the pruned candidates are the same as from a scan that skips
    nothing, on a two-year window where every count finishes in time."""
    from compiler.estimate import build
    from compiler.optimize.reductions import prune
    from compiler.optimize.formulate import reserved_pools

    w = TrainingWorkload(name="llm", model="llama-3-8b", tokens=4e12, seq_len=4096, interruptible=interruptible,
                         window=TrainingWindow(start_month=1, deadline_days=700), path="$.workloads[0]")
    sp = Spec(api_version="infra-compile/v1", name="t", horizon_months=18,
              sites=(CloudSite(name="aws", provider="aws", region="us-east-1", pricing=pricing, path="$.sites[0]"),
                     OnPremSite(name="dc", power_kw=300.0, electricity_usd_per_kwh=0.1, pue=1.3, max_racks=10,
                                owned=((OwnedNodes("dgx-h100", owned),) if owned else ()), path="$.sites[1]")),
              policy=Policy(allowed_gpus=("H100", "H200")), workloads=(w,), sha256="0" * 64)

    def pruned():
        cands = estimate(sp, CAT)
        return cands, sorted(c.id for c in prune(list(cands.by_workload["llm"]), 18, False,
                                                  reserved_pools(cands)))

    skipping, kept = pruned()
    monkeypatch.setattr(build._Totals, "dominate", lambda self, *a: False)
    full, kept_full = pruned()
    assert kept == kept_full
    assert len(skipping.by_workload["llm"]) < len(full.by_workload["llm"])   # it did skip some
