"""GB200 as the clouds sell it: four-GPU instances of a 72-GPU NVLink domain (NVL72).

The catalog's GB200 machines (Azure ND GB200 v6 in westus3, priced from a recorded Retail
Prices API row; GCP A4X in us-east1, an estimate; AWS p6e-gb200.36xlarge in us-east-1, sold only
inside P6e-GB200 UltraServers through Capacity Blocks, its on-demand figure an estimate) carry the
domain as nvlink_domain_gpus; a spec
that pins GB200 compiles on a cloud that sells it; the training step model runs collectives
within the domain over NVLink (training.Fabric.nvlink_domain), not over the instance's NICs.
"""

from __future__ import annotations

import pytest

from compiler import pipeline
from compiler.catalog import load_catalog
from compiler.diagnostics import CompileError
from compiler.estimate.training import Fabric, best_step

CAT = load_catalog()

SPEC = """\
apiVersion: infra-compile/v1
name: gb200-pin
horizon_months: 3
sites:
  - {{name: {site}, type: cloud, provider: {provider}, region: {region}, pricing: [on_demand]}}
workloads:
  - name: chat-70b
    kind: inference
    model: llama-3-70b
    quantization: fp8
    traffic: {{peak_rps: 5, input_tokens: 1000, output_tokens: 250}}
    slo: {{ttft_p99_ms: 1000, tpot_p99_ms: 80, availability: 0.99}}
    pin: {{gpu: GB200}}
  - name: finetune-70b
    kind: training
    model: llama-3-70b
    tokens: 2.0e9
    window: {{start_month: 0, deadline_days: 20}}
    pin: {{gpu: GB200}}
"""


def test_the_gb200_instances_are_four_gpus_of_an_nvl72_domain():
    gb200 = {n: i for n, i in CAT.instances.items() if i.gpu == "GB200"}
    assert set(gb200) == {"Standard_ND128isr_NDR_GB200_v6", "a4x-highgpu-4g", "p6e-gb200.36xlarge"}
    for inst in gb200.values():
        assert inst.gpus == 4 and inst.nvlink_domain == 72 and inst.nvlink_domain_gpus == 72
    # Every other instance's NVLink domain is its own GPUs.
    assert all(i.nvlink_domain == i.gpus for i in CAT.instances.values() if i.gpu != "GB200")
    azure = gb200["Standard_ND128isr_NDR_GB200_v6"]
    assert azure.price("westus3", "on_demand") == 108.16 and azure.price_row("westus3").estimated == (
        "reserved_1y", "reserved_3y")
    gcp = gb200["a4x-highgpu-4g"]
    row = gcp.price_row("us-east1")
    assert row.source.endswith("-estimate") and CAT.sources[row.source].title.startswith("Estimate:")
    assert row.on_demand == pytest.approx(CAT.instances["a4-highgpu-8g"].price("us-east1", "on_demand") / 2, abs=1e-4)
    assert gcp.accelerator_type == "nvidia-gb200" and CAT.gpus["GB200"].gke_driver is not None
    # AWS: four of p6-b200.48xlarge's eight Blackwell GPUs at its us-east-1 list, an estimate (no
    # list price: Capacity Blocks only); not sold on spot; a block's own rate is recorded.
    aws = gb200["p6e-gb200.36xlarge"]
    assert aws.regions == ("us-east-1",)
    row = aws.price_row("us-east-1")
    assert row.source.endswith("-estimate") and row.spot is None
    assert row.on_demand == pytest.approx(CAT.instances["p6-b200.48xlarge"].price("us-east-1", "on_demand") / 2,
                                          abs=1e-4)
    assert CAT.factors["capacity_block_usd_per_hour.aws.us-east-1.p6e-gb200.36xlarge"].value == 42.328


@pytest.mark.parametrize("site,provider,region,instance", [
    ("az-wus3", "azure", "westus3", "Standard_ND128isr_NDR_GB200_v6"),
    ("gcp-use1", "gcp", "us-east1", "a4x-highgpu-4g"),
    ("aws-use1", "aws", "us-east-1", "p6e-gb200.36xlarge"),
])
def test_a_spec_pinning_gb200_compiles_on_a_cloud_that_sells_it(tmp_path, site, provider, region, instance):
    path = tmp_path / "gb200.yaml"
    path.write_text(SPEC.format(site=site, provider=provider, region=region), encoding="utf-8")
    plan = pipeline.compile_spec(path).plan
    placed = {(w.name, p.instance) for w in plan.workloads for p in w.placements}
    assert placed == {("chat-70b", instance), ("finetune-70b", instance)}


def test_a_gb200_pin_where_no_cloud_sells_it_is_refused(tmp_path):
    path = tmp_path / "gb200.yaml"
    path.write_text(SPEC.format(site="aws-usw2", provider="aws", region="us-west-2"), encoding="utf-8")
    with pytest.raises(CompileError):
        pipeline.compile_spec(path)


def test_the_nvlink_domain_must_be_whole_instances(tmp_path):
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("instances:\n  a4x-highgpu-4g:\n    nvlink_domain_gpus: 70\n", encoding="utf-8")
    with pytest.raises(CompileError) as info:
        load_catalog(overlay)
    [d] = [d for d in info.value.diagnostics if d.code == "C002"]
    assert "nvlink_domain_gpus 70" in d.message and "4 GPUs" in d.message


def test_the_training_step_model_runs_collectives_within_the_domain_over_nvlink():
    """Sixteen GB200s are four A4X instances: within one NVL72 domain the data-parallel gradient
    all-reduce runs over NVLink (1,800 GB/s a GPU), on the instances alone over each GPU's 400 Gbps
    NIC; the same instance's numbers otherwise."""
    model, gpu = CAT.models["llama-3-70b"], CAT.gpus["GB200"]
    racked = Fabric("gpudirect-rdma", 1600.0, 4, nvlink_domain=72)
    alone = Fabric("gpudirect-rdma", 1600.0, 4)
    assert racked.domain == 72 and alone.domain == 4
    fast, _ = best_step(model, 16, gpu, racked, 4096, "bf16", "adamw", CAT)
    slow, _ = best_step(model, 16, gpu, alone, 4096, "bf16", "adamw", CAT)
    assert fast is not None and slow is not None
    assert fast.seconds < slow.seconds
    assert fast.exposed_dp_s + fast.exposed_pp_s < slow.exposed_dp_s + slow.exposed_pp_s
    # Past the domain, the scale-out network is each GPU's share of its own instance's NICs.
    beyond, _ = best_step(model, 144, gpu, racked, 4096, "bf16", "adamw", CAT)
    node, _ = best_step(model, 144, gpu, Fabric("gpudirect-rdma", 1600.0 * 18, 72), 4096, "bf16", "adamw", CAT)
    assert beyond.seconds == pytest.approx(node.seconds)


TRAIN_405B = """\
apiVersion: infra-compile/v1
name: gb200-405b
horizon_months: 3
sites:
  - {name: gcp-use1, type: cloud, provider: gcp, region: us-east1, pricing: [on_demand]}
workloads:
  - name: pretrain-405b
    kind: training
    model: llama-3.1-405b
    tokens: 1.0e9
    window: {start_month: 0, deadline_days: 60}
    pin: {gpu: GB200, gpus: 48}
"""


def test_the_estimate_stage_gives_the_training_model_the_instances_nvlink_domain(tmp_path):
    """build._search passes Hardware.nvlink_domain to training.Fabric (and keys its memo by it):
    Llama 3.1 405B on 48 GB200s (twelve A4X instances of one NVL72 rack) is estimated with
    tensor parallelism 8, each group over two instances joined by NVLink (the step model's
    tp degrees are those dividing the domain, 72, not the instance's 4), where the same instance
    without the domain has to pipeline with full recompute. The two searches share one memo and
    neither reads the other's answer; the memory bound of the count scan
    (training.fewest_gpus_to_fit) reads the domain too."""
    from dataclasses import replace

    from compiler.estimate import build
    from compiler.estimate.models import resolve_model
    from compiler.estimate.options import hardware_options
    from compiler.estimate.training import fewest_gpus_to_fit

    path = tmp_path / "gb200.yaml"
    path.write_text(TRAIN_405B, encoding="utf-8")
    spec, cat, _ = pipeline.validate(path)
    job = spec.workloads[0]
    model = resolve_model(job.model, cat)
    [racked] = [hw for hw in hardware_options(spec, job, cat) if hw.gpu.name == "GB200"]
    assert (racked.instance, racked.gpus_per_node, racked.nvlink_domain) == ("a4x-highgpu-4g", 4, 72)
    alone = replace(racked, nvlink_domain=0)
    memo = build.Memo()
    est, layout, why = build.llm_training_estimate(job, model, racked, 48, False, cat, memo)
    est0, layout0, _ = build.llm_training_estimate(job, model, alone, 48, False, cat, memo)
    assert why == "" and layout.tp == 8 and layout.tp > racked.gpus_per_node
    assert layout.recompute == "selective" and layout.pp == 1
    assert layout0.tp <= 4 and layout0.recompute == "full"
    assert est.duration_hours < est0.duration_hours
    # The memo kept them apart: each is what a fresh estimate gives.
    assert build.llm_training_estimate(job, model, alone, 48, False, cat)[0] == est0
    assert build.llm_training_estimate(job, model, racked, 48, False, cat)[0] == est
    # The candidate the estimate stage builds carries the domain's layout.
    cands, _rejs = build.training_candidates(spec, job, cat)
    [cand] = [c for c in cands if c.gpus == 48]
    assert cand.layout == layout and cand.estimate == est
    # A count below the domain-wide bound fits no layout on the rack either (a bound, not a guess).
    fewest = fewest_gpus_to_fit(model, 72, racked.gpu, job.seq_len, job.precision, job.optimizer, cat)
    assert fewest <= fewest_gpus_to_fit(model, 4, racked.gpu, job.seq_len, job.precision, job.optimizer, cat)
    for gpus in range(4, int(fewest) + 1, 4):
        assert build.llm_training_estimate(job, model, racked, gpus, False, cat, memo)[0] is None, gpus


def test_an_instance_without_a_rack_domain_is_estimated_as_before(tmp_path):
    """Every non-GB200 instance has no nvlink_domain_gpus: its Hardware carries 0, its fabric's
    domain is the node, and the estimate stage's layout and step are those of the three-argument
    Fabric the stage built before it passed the domain (so no other estimate moves)."""
    from compiler.estimate import build
    from compiler.estimate.options import hardware_options

    assert all(i.nvlink_domain_gpus is None for i in CAT.instances.values() if i.gpu != "GB200")
    path = tmp_path / "h100.yaml"
    path.write_text(TRAIN_405B.replace("gcp-use1", "aws-use1").replace("provider: gcp", "provider: aws")
                    .replace("us-east1", "us-east-1").replace("{gpu: GB200, gpus: 48}", "{instance: p5.48xlarge}"),
                    encoding="utf-8")
    spec, cat, _ = pipeline.validate(path)
    job = spec.workloads[0]
    [hw] = hardware_options(spec, job, cat)
    assert hw.nvlink_domain == 0
    model = cat.models["llama-3.1-405b"]
    for gpus in (128, 256):
        est, layout, _ = build.llm_training_estimate(job, model, hw, gpus, False, cat)
        step, _ = best_step(model, gpus, hw.gpu, Fabric(hw.fabric, hw.node_gbps, hw.gpus_per_node), job.seq_len,
                            job.precision, job.optimizer, cat)
        assert layout == step.layout and est.mfu == round(step.mfu, 4)
