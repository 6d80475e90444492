"""The step-time breakdown: the step's terms in seconds, and where a run's wall time goes
(docs/performance-model.md, "Step-time breakdown")."""

from __future__ import annotations

import math

import pytest

from compiler import pipeline
from compiler.candidates import Layout
from compiler.catalog import load_catalog
from compiler.estimate import comms, estimate, table
from compiler.estimate.build import wall_time_shares
from compiler.estimate.layout import training_layouts
from compiler.estimate.memory import model_state_bytes
from compiler.estimate.training import Fabric, lost_fraction, step_time
from compiler.estimate.vision import vision_rate
from compiler.spec import CloudSite, Pin, Policy, Spec, TrainingWindow, TrainingWorkload
from examples_cache import EXAMPLES, ROOT

CAT = load_catalog()
LLM_TERMS = ("compute", "recompute", "moe_gemm", "exposed_tp", "exposed_cp", "exposed_ep", "exposed_pp",
             "pipeline_bubble", "exposed_dp", "lost")
VISION_TERMS = ("compute", "exposed_dp", "data_loading", "lost")


def test_step_breakdown_worked_by_hand():
    # Llama-2-7B (32 layers, h 4096, 6.74B params) at s = 4096 on 16 H100 (two 8-GPU nodes,
    # 3,200 Gb/s InfiniBand), TP 2 x PP 2 x DP 4, ZeRO-1, bf16:
    #   global batch 16M tokens / 4096 = 3,906 sequences; m = ceil(3906 / 4) = 977 micro-batches
    #   tokens per step = 977 x 4 x 4096 = 16,007,168
    #   linear layers: 6 x 6.74e9 FLOPs per token at 989.4e12 x base_mfu 0.45
    #       = 16,007,168 x 40.44e9 / (16 x 445.23e12) = 90.870 s
    #   attention: 12 x 32 x 4096 x 4096 FLOPs per token, half of them computed under the causal
    #       mask, at 989.4e12 x attention_mfu 0.42 = 16,007,168 x 3.221e9 / (16 x 415.548e12) = 7.755 s
    #   compute = 98.625 s
    #   NVLink 900/2 GB/s x 0.75 = 337.5 GB/s; IB 3200/8/8 GB/s x 0.9 = 45 GB/s per GPU
    #   TP: 977 micro-batches x 16 layers x 4 all-reduces of 4096 x 4096 x 2 B over 2 ranks
    #       = 62,528 x 33,554,432 / 337.5e9 = 6.2166 s, 90% hidden (tp_overlap) -> 0.62166 s exposed
    #   PP (across nodes, never hidden): 977 x 2 x 4096 x 4096 x 2 / 2 B / 45e9 = 0.7285 s
    #   critical path = 98.625 + 0.62166 + 0.7285 = 99.976 s
    #   bubble: (p-1)/(v m + p-1) = 1/(4 x 977 + 1) = 1/3909 of the pipeline, so
    #       pipeline - critical = critical / 3908 = 0.025582 s
    #   DP: 6.74e9/4 params x 2 B over 4 ranks: 2 x 3/4 x 3.37e9 / 45e9 = 0.11233 s; 70% hides
    #       behind the backward pass (2/3 x compute is far more) -> 0.0337 s exposed
    #   step = 99.976 + 0.025582 + 0.0337 = 100.035 s
    s = step_time(CAT.models["llama-2-7b"], Layout(tp=2, pp=2, dp=4, zero=1), CAT.gpus["H100"],
                  Fabric("infiniband-ndr", 3200.0, 8), 4096, "bf16", "adamw", CAT)
    b = s.breakdown()
    assert s.tokens == 977 * 4 * 4096
    compute = 977 * 4 * 4096 * (6 * 6.74e9 / (989.4e12 * 0.45)
                                + 12 * 32 * 4096 * 4096 * 0.5 / (989.4e12 * 0.42)) / 16
    tp = 977 * 16 * 4 * 4096 * 4096 * 2 / 337.5e9 * 0.1
    pp = 977 * 2 * 4096 * 4096 * 2 / 2 / 45e9
    critical = compute + tp + pp
    dp = 2 * 3 / 4 * 6.74e9 / 4 * 2 / 45e9 * 0.3
    assert b == pytest.approx({"compute": compute, "recompute": 0.0, "moe_gemm": 0.0, "exposed_tp": tp,
                               "exposed_cp": 0.0, "exposed_ep": 0.0, "exposed_pp": pp,
                               "pipeline_bubble": critical / 3908, "exposed_dp": dp}, rel=1e-9)
    assert b["compute"] == pytest.approx(98.625, abs=1e-3)
    assert b["exposed_tp"] == pytest.approx(0.62166, abs=1e-5)
    assert b["pipeline_bubble"] == pytest.approx(0.025582, abs=1e-6)
    assert b["exposed_dp"] == pytest.approx(0.0337, abs=1e-6)
    assert s.seconds == pytest.approx(100.035, abs=1e-3)
    assert sum(b.values()) == s.seconds


def _grid():
    for model in ("llama-2-7b", "llama-3-70b", "mixtral-8x7b", "llama-3-405b"):
        for nodes, gbps, seq in ((1, 3200.0, 4096), (4, 400.0, 4096), (64, 100.0, 65536), (512, 3200.0, 8192)):
            for layout in training_layouts(CAT.models[model], nodes * 8, 8, seq, 32768):
                yield model, nodes, gbps, seq, layout


def test_the_terms_add_up_to_the_step_on_every_layout():
    # Exact in real arithmetic (bubble = pipeline - critical); in floats the sum in breakdown
    # order is the step itself or an ulp away.
    checked = 0
    for model, nodes, gbps, seq, layout in _grid():
        s = step_time(CAT.models[model], layout, CAT.gpus["H100"], Fabric("roce-400g", gbps, 8), seq,
                      "bf16", "adamw", CAT)
        b = s.breakdown()
        assert sum(b.values()) == pytest.approx(s.seconds, rel=1e-15, abs=0), (model, layout)
        assert math.fsum(b.values()) == pytest.approx(s.seconds, rel=1e-15, abs=0)
        assert min(b.values()) >= 0
        # the bubble is the idle share of the pipeline, as time
        pipe = s.seconds - s.exposed_dp_s
        assert s.bubble_s / pipe == pytest.approx(
            comms.pipeline_bubble(layout.pp, math.ceil(round(16e6 / seq) / layout.dp),
                                  min(4, CAT.models[model].layers // layout.pp) if layout.pp > 1 else 1),
            rel=1e-9, abs=1e-15)
        assert s.overhead_share == pytest.approx(1 - s.compute_s / s.seconds)
        checked += 1
    assert checked > 1000


def test_wall_time_shares_worked_by_hand():
    # A 10 s step: 6 compute, 1 TP, 0.5 PP, 1.5 bubble, 1 DP; the run loses 25% on top of its
    # ideal time, so the duration is 1.25 x ideal: compute 6/10/1.25 = 0.48, TP and DP 0.08 each,
    # PP 0.04, bubble 0.12, lost 0.25/1.25 = 0.2. Sum 1.
    step = {"compute": 6.0, "recompute": 0.0, "moe_gemm": 0.0, "exposed_tp": 1.0, "exposed_cp": 0.0,
            "exposed_ep": 0.0, "exposed_pp": 0.5, "pipeline_bubble": 1.5, "exposed_dp": 1.0}
    shares = dict(wall_time_shares(step, 10.0, 0.25))
    assert shares == {"compute": 0.48, "recompute": 0.0, "moe_gemm": 0.0, "exposed_tp": 0.08, "exposed_cp": 0.0,
                      "exposed_ep": 0.0,
                      "exposed_pp": 0.04, "pipeline_bubble": 0.12, "exposed_dp": 0.08, "lost": 0.2}
    assert tuple(shares) == LLM_TERMS


def test_an_llm_candidates_shares_are_its_step_over_its_duration():
    site = CloudSite(name="aws-use1", provider="aws", region="us-east-1", pricing=("on_demand",))
    w = TrainingWorkload(name="llm", model="llama-2-7b", window=TrainingWindow(), tokens=2e11, seq_len=4096,
                         pin=Pin(gpus=64, instance="p5.48xlarge"))
    spec = Spec(api_version="infra-compile/v1", name="t", horizon_months=36, sites=(site,), policy=Policy(),
                workloads=(w,))
    (c,) = estimate(spec, CAT).by_workload["llm"]
    e = c.estimate
    s = step_time(CAT.models["llama-2-7b"], c.layout, CAT.gpus["H100"], Fabric(c.fabric, 3200.0, 8), 4096,
                  "bf16", "adamw", CAT)
    lost = lost_fraction(64, 8, w.checkpoint.interval_min, 0.0,
                         model_state_bytes(6.74e9, "bf16", "adamw", CAT) / 1e9, CAT).fraction
    shares = dict(e.step_breakdown)
    assert tuple(shares) == LLM_TERMS
    # duration = tokens / tokens per step x step x (1 + lost)
    assert e.duration_hours == pytest.approx(2e11 / s.tokens * s.seconds * (1 + lost) / 3600, abs=1e-4)
    for k, v in s.breakdown().items():
        assert shares[k] == round(v / s.seconds / (1 + lost), 4), k
    assert shares["lost"] == round(lost / (1 + lost), 4) > 0
    assert sum(shares.values()) == pytest.approx(1, abs=1e-3)


def test_a_loader_bound_vision_run_shows_the_wait():
    # ResNet-50 on 8 H100 with 2 vCPUs per GPU: the loader gives 8 x 2 x 300 = 4,800 img/s, the
    # GPUs could do more, so each step (a batch on every GPU) takes 8 x batch / 4,800 s, of which
    # the GPUs' own step is compute + exposed all-reduce and the rest is waiting for data.
    m, g = CAT.models["resnet-50"], CAT.gpus["H100"]
    r = vision_rate(m, 8, g, 8, 16, "infiniband-ndr", 3200, "bf16", "sgd", CAT)
    batch = CAT.factor("vision_batch_per_gpu")
    assert r.loader_bound and r.samples_per_s == pytest.approx(4800)
    assert r.step_s == pytest.approx(8 * batch / 4800)
    assert r.data_loading_s > 0
    assert sum(r.breakdown().values()) == pytest.approx(r.step_s, rel=1e-12)
    fed = vision_rate(m, 8, g, 8, 224, "infiniband-ndr", 3200, "bf16", "sgd", CAT)
    assert not fed.loader_bound and fed.data_loading_s == 0
    assert fed.step_s == fed.compute_s + fed.exposed_dp_s
    # the GPUs' step is the same either way: only the wait differs
    assert r.compute_s + r.exposed_dp_s == fed.step_s
    shares = dict(wall_time_shares(r.breakdown(), r.step_s, 0.0))
    assert shares["data_loading"] == round(1 - fed.step_s / r.step_s, 4) > 0


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_training_candidate_of_the_examples_has_shares_summing_to_one(name):
    candidates, _ = pipeline.estimate(ROOT / "examples" / f"{name}.yaml")
    doc = table.to_json(candidates)
    seen = 0
    for w in doc["workloads"]:
        for row in w["candidates"]:
            if w["kind"] != "training":
                assert "step_breakdown" not in row
                continue
            shares = row["step_breakdown"]
            assert tuple(shares) in (LLM_TERMS, VISION_TERMS), row["id"]
            assert all(0 <= v <= 1 for v in shares.values())
            assert sum(shares.values()) == pytest.approx(1, abs=1e-3), row["id"]
            assert shares["compute"] > 0
            seen += 1
    has_training = any(w["kind"] == "training" for w in doc["workloads"])
    assert seen > 0 or not has_training
