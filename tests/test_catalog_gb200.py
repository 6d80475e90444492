"""GB200 as the clouds sell it: four-GPU instances of a 72-GPU NVLink domain (NVL72).

The catalog's GB200 machines (Azure ND GB200 v6 in westus3, priced from a recorded Retail
Prices API row; GCP A4X in us-east1, an estimate) carry the domain as nvlink_domain_gpus; a spec
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
    assert set(gb200) == {"Standard_ND128isr_NDR_GB200_v6", "a4x-highgpu-4g"}
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


@pytest.mark.parametrize("site,provider,region,instance", [
    ("az-wus3", "azure", "westus3", "Standard_ND128isr_NDR_GB200_v6"),
    ("gcp-use1", "gcp", "us-east1", "a4x-highgpu-4g"),
])
def test_a_spec_pinning_gb200_compiles_on_a_cloud_that_sells_it(tmp_path, site, provider, region, instance):
    path = tmp_path / "gb200.yaml"
    path.write_text(SPEC.format(site=site, provider=provider, region=region), encoding="utf-8")
    plan = pipeline.compile_spec(path).plan
    placed = {(w.name, p.instance) for w in plan.workloads for p in w.placements}
    assert placed == {("chat-70b", instance), ("finetune-70b", instance)}


def test_a_gb200_pin_where_no_cloud_sells_it_is_refused(tmp_path):
    path = tmp_path / "gb200.yaml"
    path.write_text(SPEC.format(site="aws-use1", provider="aws", region="us-east-1"), encoding="utf-8")
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
