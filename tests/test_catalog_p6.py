"""AWS's P6 Blackwell types beside p6-b200: p6-b300.48xlarge (8x B300) and p6e-gb200.36xlarge
(four GB200 of a P6e-GB200 UltraServer).

p6-b300 is listed on demand in us-west-2 ($142.416, spot $15.9815 in its one quoting zone: SkyPilot's
catalogs/v9/aws/vms.csv at 2c3d7ea, recorded in tests/fixtures/prices/skypilot) and sold on
Capacity Blocks at $112.32 an instance-hour in us-east-1 and us-west-2; p6e-gb200 only on Capacity
Blocks, as UltraServers of 18 instances at $761.904 an hour ($42.328 an instance-hour) in the Dallas
Local Zone (the pricing page as koyakimu/ec2-capacity-blocks-for-ml-pricing-json recorded it at
b3a54ae, in tests/fixtures/prices/capacity-blocks; test_price_sources.py checks both against them).
Where a type has no list price its row is an estimate, as p5e.48xlarge's is.
"""

from __future__ import annotations

import pytest

from compiler import pipeline
from compiler.catalog import load_catalog

CAT = load_catalog()

SERVE = """\
apiVersion: infra-compile/v1
name: b300-pin
horizon_months: 3
sites:
  - {name: aws-usw2, type: cloud, provider: aws, region: us-west-2, pricing: [on_demand]}
workloads:
  - name: chat-70b
    kind: inference
    model: llama-3-70b
    quantization: fp8
    traffic: {peak_rps: 5, input_tokens: 1000, output_tokens: 250}
    slo: {ttft_p99_ms: 1000, tpot_p99_ms: 80, availability: 0.99}
    orchestrator: kubernetes
    pin: {gpu: B300}
"""

TRAIN = """\
apiVersion: infra-compile/v1
name: cb-{name}
horizon_months: 3
start: 2027-03
sites:
  - {{name: aws-use1, type: cloud, provider: aws, region: us-east-1, pricing: [on_demand, capacity_block]}}
policy: {{placement: cloud}}
workloads:
  - name: pretrain
    kind: training
    model: llama-3-8b
    tokens: {tokens}
    window: {{start_month: 0, deadline_days: 30}}
    orchestrator: slurm
    pin: {{instance: {instance}{gpus}}}
"""


def test_the_b300_is_hgx_b300_over_eight_with_blackwell_ultra_images():
    g = CAT.gpus["B300"]
    assert (g.memory_gb, g.memory_bandwidth_gb_s, g.nvlink_gb_s, g.architecture) == (288, 8000, 1800, "blackwell")
    # dense: half the HGX B300 sparsity figures over eight GPUs; FP4 108 PFLOPS dense over eight
    assert g.tflops == {"fp32": 75, "tf32": 1125, "bf16": 2250, "fp16": 2250, "fp8": 4500, "fp4": 13500}
    assert "int8" not in g.tflops                 # cut on Blackwell Ultra: int8 serving uses the FP8 peak
    assert "estimate" in CAT.sources[g.source].title    # tdp_w
    # sm_103 needs a CUDA 13 build: not the CUDA 12.8 images B200 and GB200 run
    assert (g.serving.version, g.serving.runtime) == ("v0.19.1-cu130", "CUDA 13.0")
    assert g.training.version == "25.10-py3" and g.training.runtime.startswith("CUDA 13")
    assert CAT.gpus["B200"].serving.runtime == "CUDA 12.8"


def test_the_p6_instances_facts():
    b300 = CAT.instances["p6-b300.48xlarge"]
    assert (b300.gpu, b300.gpus, b300.vcpus, b300.ram_gb, b300.fabric, b300.network_gbps) == (
        "B300", 8, 192, 4096, "efa", 6400)
    assert b300.nvlink_domain == 8 and b300.regions == ("us-east-1", "us-west-2")
    gb = CAT.instances["p6e-gb200.36xlarge"]
    assert (gb.gpu, gb.gpus, gb.vcpus, gb.ram_gb, gb.fabric, gb.network_gbps, gb.local_nvme_tb) == (
        "GB200", 4, 144, 960, "efa", 1600, 22.5)
    assert gb.nvlink_domain == 72                      # u-p6e-gb200x72: 18 instances, one NVLink domain


def test_p6_b300_is_listed_in_us_west_2_and_an_estimate_where_only_blocks_sell_it():
    b300 = CAT.instances["p6-b300.48xlarge"]
    west, east = b300.price_row("us-west-2"), b300.price_row("us-east-1")
    assert (west.on_demand, west.spot, west.source) == (142.416, 15.9815, "aws-skypilot-v9-vms")
    assert east.source.endswith("-estimate") and east.on_demand == west.on_demand and east.spot is None
    for row in (west, east):
        assert row.estimated == ("reserved_1y", "reserved_3y")
        assert row.reserved_1y == pytest.approx(0.72 * row.on_demand, abs=1e-4)
        assert row.reserved_3y == pytest.approx(0.55 * row.on_demand, abs=1e-4)
    for region in ("us-east-1", "us-west-2"):
        assert CAT.factors[f"capacity_block_usd_per_hour.aws.{region}.p6-b300.48xlarge"].value == 112.32


def test_a_service_pinned_to_b300_renders_with_the_cuda_13_image(tmp_path):
    path = tmp_path / "b300.yaml"
    path.write_text(SERVE, encoding="utf-8")
    res = pipeline.compile_spec(path)
    [w] = res.plan.workloads
    assert {p.instance for p in w.placements} == {"p6-b300.48xlarge"}
    manifests = "\n".join(t for p, t in res.artifacts.items() if p.startswith("kubernetes/"))
    assert "vllm/vllm-openai:v0.19.1-cu130" in manifests


@pytest.mark.parametrize("instance,gpus,tokens", [("p6-b300.48xlarge", 16, "3.5e11")])
def test_a_30_day_job_buys_a_block_of_a_type_sold_only_on_blocks(tmp_path, instance, gpus, tokens):
    """In us-east-1 p6-b300 has no list price: the block's recorded rate is below the row's
    estimated on-demand figure, so a job with a window buys a block, priced at the recorded rate.
    (p6e-gb200's blocks are whole UltraServers: test_capacity_blocks_providers.py.)"""
    path = tmp_path / "cb.yaml"
    path.write_text(TRAIN.format(name=instance.split(".")[0], instance=instance, gpus=f", gpus: {gpus}",
                                 tokens=tokens), encoding="utf-8")
    plan = pipeline.compile_spec(path).plan
    [block] = plan.capacity_blocks
    rate = CAT.factors[f"capacity_block_usd_per_hour.aws.us-east-1.{instance}"].value
    assert (block.instance, block.usd_per_hour) == (instance, rate)
    assert block.cost_usd == pytest.approx(rate * block.nodes * 24 * block.days, abs=0.01)
