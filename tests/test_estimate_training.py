"""Training formulas, monotonicity properties and candidate semantics of the estimate stage."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from compiler.catalog import load_catalog
from compiler.estimate import comms, estimate
from compiler.estimate.build import gpu_ladder, usage
from compiler.estimate.training import Fabric, best_step, flops_per_token
from compiler.spec import (Checkpoint, CloudSite, OnPremSite, Pin, Policy, Spec, TrainingWindow,
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


def test_usage_and_ladder():
    assert usage(2, 1000) == ((2, 730.0), (3, 270.0))
    assert gpu_ladder(8, CAT, None)[:4] == [8, 16, 32, 64]
    assert gpu_ladder(8, CAT, 24) == [24]


def test_vision_data_loading_ceiling():
    # ResNet-50 on a node with few vCPUs per GPU is loader bound and says so.
    from compiler.estimate.vision import vision_rate
    m, g = CAT.models["resnet-50"], CAT.gpus["H100"]
    rich = vision_rate(m, 8, g, 8, 224, "infiniband-ndr", 3200, "bf16", "sgd", CAT)
    poor = vision_rate(m, 8, g, 8, 16, "infiniband-ndr", 3200, "bf16", "sgd", CAT)
    assert not rich.loader_bound and poor.loader_bound
    assert poor.samples_per_s == pytest.approx(8 * 2 * 300)   # 2 vCPUs/GPU x 300 img/s per vCPU
