"""The bundled catalog's regional coverage: what a team in Europe can rent, that every price row
names a source with an as_of date, and the current GPU generations and served models it carries.

Regions and prices come from the sources the price rows cite (compiler/catalog/data/instances_*.yaml):
SkyPilot's catalog at a pinned commit for the regions each type is sold in, the providers' list
prices for us-east-1 / us-central1 / eastus. A region appears under an instance only where the
source lists the type there, so the EU test below asserts what those sources show, including the
gaps: AWS sells no P5-class (H100/H200) instance in eu-central-1 or eu-west-1 (A100 only), and
the catalog prices no Azure ND v5 VM in an EU region other than westeurope, for want of a source.
"""

from __future__ import annotations

import collections
import datetime as dt
import re
import textwrap

import pytest

from compiler import pipeline
from compiler.catalog import load_catalog

CAT = load_catalog()

EU_SPEC = textwrap.dedent("""\
    apiVersion: infra-compile/v1
    name: eu-serving
    horizon_months: 12
    sites:
      - {name: aws-euc1, type: cloud, provider: aws, region: eu-central-1, pricing: [on_demand]}
      - {name: aws-euw1, type: cloud, provider: aws, region: eu-west-1, pricing: [on_demand]}
      - {name: aws-eun1, type: cloud, provider: aws, region: eu-north-1, pricing: [on_demand]}
      - {name: aws-euw2, type: cloud, provider: aws, region: eu-west-2, pricing: [on_demand]}
      - {name: gcp-euw4, type: cloud, provider: gcp, region: europe-west4, pricing: [on_demand]}
      - {name: gcp-euw1, type: cloud, provider: gcp, region: europe-west1, pricing: [on_demand]}
      - {name: azure-weu, type: cloud, provider: azure, region: westeurope, pricing: [on_demand]}
    policy:
      placement: cloud
      allowed_gpus: [H100, H200, A100-80GB, A100-40GB]
    workloads:
      - name: chat-70b
        kind: inference
        model: llama-3.1-70b
        quantization: fp8
        traffic: {peak_rps: 5, input_tokens: 1000, output_tokens: 250}
        slo: {ttft_p99_ms: 2000, tpot_p99_ms: 100}
    """)


@pytest.fixture(scope="module")
def eu_candidates(tmp_path_factory):
    path = tmp_path_factory.mktemp("eu") / "eu.yaml"
    path.write_text(EU_SPEC)
    candidates, _ = pipeline.estimate(path)
    gpus = collections.defaultdict(set)
    for c in candidates.by_workload["chat-70b"]:
        gpus[c.site].add(c.gpu)
    return candidates, gpus


def test_eu_spec_gets_h100_and_h200_where_each_cloud_sells_them(eu_candidates):
    _, gpus = eu_candidates
    # H100: AWS p5.48xlarge in eu-north-1 and eu-west-2; GCP a3-highgpu/megagpu-8g in europe-west4
    # and europe-west1; Azure ND96isr_H100_v5 in westeurope.
    for site in ("aws-eun1", "aws-euw2", "gcp-euw4", "gcp-euw1", "azure-weu"):
        assert "H100" in gpus[site], site
    # H200: AWS p5en.48xlarge in eu-north-1 (not eu-west-2: p5e is Capacity Blocks only there);
    # GCP a3-ultragpu-8g in europe-west4 and europe-west1; Azure ND96isr_H200_v5 in westeurope.
    for site in ("aws-eun1", "gcp-euw4", "gcp-euw1", "azure-weu"):
        assert "H200" in gpus[site], site
    assert "H200" not in gpus["aws-euw2"]
    # Frankfurt and Ireland: SkyPilot's AWS catalog (v9 @ 2c3d7ea) lists no p5/p5en/p6 type
    # there, so a team pinned to them gets A100 nodes, not H100.
    assert gpus["aws-euc1"] == {"A100-40GB", "A100-80GB"}    # p4d and p4de.24xlarge
    assert gpus["aws-euw1"] == {"A100-40GB"}                 # p4d.24xlarge


def test_eu_candidates_are_exactly_what_the_catalog_prices_there(eu_candidates):
    candidates, _ = eu_candidates
    spec = candidates.spec
    allowed = set(spec.policy.allowed_gpus)
    for site in spec.sites:
        sold = {i.name for i in CAT.instances.values()
                if i.provider == site.provider and site.region in i.regions and i.gpu in allowed}
        offered = {c.instance for c in candidates.by_workload["chat-70b"] if c.site == site.name}
        rejected = {r.instance for r in candidates.rejected.get("chat-70b", ()) if r.site == site.name}
        assert offered <= sold, site.name
        assert offered | rejected == sold, site.name


def test_every_price_row_cites_a_source_with_an_as_of_date():
    for inst in CAT.instances.values():
        assert inst.source in CAT.sources, inst.name
        for p in inst.prices:
            src = CAT.sources.get(p.source)
            assert src is not None, (inst.name, p.region, p.source)
            assert dt.date.fromisoformat(src.as_of) <= dt.date(2026, 12, 31), (inst.name, p.source)
            assert src.url.startswith(("https://", "file://", "docs/")), p.source


# No region list exists in the code (a cloud site's region is valid when the catalog prices an
# instance of its provider there: semantic check E215), so each provider's regions are checked
# against that provider's naming scheme: a region filed under the wrong cloud fails here.
REGION_NAMES = {
    "aws": re.compile(r"^(us|eu|ap|ca|me|sa|af|il|mx)-(north|south|east|west|central|northeast|southeast)-\d$"),
    "gcp": re.compile(r"^(us|europe|asia|australia|northamerica|southamerica|me|africa)-[a-z]+\d{1,2}$"),
    "azure": re.compile(r"^[a-z]+[0-9]?$"),
}


def test_every_region_follows_its_providers_naming():
    for inst in CAT.instances.values():
        for region in inst.regions:
            assert REGION_NAMES[inst.provider].match(region), (inst.provider, inst.name, region)


def test_regional_coverage_spans_the_us_europe_and_asia_pacific():
    for provider, (us, eu, ap) in {"aws": ("us-", "eu-", "ap-"), "gcp": ("us-", "europe-", "asia-"),
                                   "azure": ("eastus", "westeurope", None)}.items():
        regions = {r for i in CAT.instances.values() if i.provider == provider for r in i.regions}
        assert any(r.startswith(us) for r in regions), provider
        assert any(r.startswith(eu) for r in regions), provider
        if ap:
            assert any(r.startswith(ap) for r in regions), provider


def test_h100_and_h200_regions_per_provider():
    def regions(provider, gpu):
        return {r for i in CAT.instances.values() if i.provider == provider and i.gpu == gpu for r in i.regions}

    assert {"us-east-1", "us-east-2", "us-west-2", "eu-north-1", "eu-west-2", "ap-northeast-1",
            "ap-south-1", "ap-southeast-2"} <= regions("aws", "H100")
    assert {"us-east-1", "us-west-2", "eu-north-1", "eu-south-2", "ap-northeast-1"} <= regions("aws", "H200")
    assert {"us-central1", "us-east4", "europe-west4", "europe-west1", "asia-northeast1",
            "asia-southeast1"} <= regions("gcp", "H100")
    assert {"us-central1", "europe-west4", "europe-west1", "asia-south1"} <= regions("gcp", "H200")
    assert {"eastus", "westeurope"} <= regions("azure", "H100")


@pytest.mark.parametrize("name, provider, gpu, gpus, fabric, gbps", [
    ("p5en.48xlarge", "aws", "H200", 8, "efa", 3200),
    ("p6-b200.48xlarge", "aws", "B200", 8, "efa", 3200),
    ("a3-ultragpu-8g", "gcp", "H200", 8, "gpudirect-rdma", 3200),
    ("a4-highgpu-8g", "gcp", "B200", 8, "gpudirect-rdma", 3200),
    ("Standard_ND96isr_H200_v5", "azure", "H200", 8, "infiniband", 3200),
    ("Standard_ND96isr_MI300X_v5", "azure", "MI300X", 8, "infiniband", 3200),
])
def test_current_generation_instances(name, provider, gpu, gpus, fabric, gbps):
    inst = CAT.instances[name]
    assert (inst.provider, inst.gpu, inst.gpus, inst.fabric, inst.network_gbps) == (provider, gpu, gpus, fabric, gbps)
    assert inst.regions


def test_aws_prices_are_the_post_reduction_list():
    # The June 2025 P4/P5 reduction: p5.48xlarge 98.32 -> 55.04 in us-east-1; p5en 84.80 -> 63.296.
    # SkyPilot's catalog v9 @ 2c3d7ea records the reduced figures in every region.
    def od(name, region):
        return next(p.on_demand for p in CAT.instances[name].prices if p.region == region)

    assert od("p5.48xlarge", "us-east-1") == 55.04 == od("p5.48xlarge", "us-east-2")
    assert od("p5en.48xlarge", "us-east-1") == 63.296
    assert od("p5.48xlarge", "eu-north-1") == 58.8928
    assert od("p6-b200.48xlarge", "us-east-1") == 113.9328


@pytest.mark.parametrize("name, layers, hidden, heads, kv_heads, vocab, ffn", [
    ("llama-3.3-70b", 80, 8192, 64, 8, 128256, 28672),
    ("qwen2.5-7b", 28, 3584, 28, 4, 152064, 18944),
    ("qwen2.5-14b", 48, 5120, 40, 8, 152064, 13824),
    ("qwen2.5-32b", 64, 5120, 40, 8, 152064, 27648),
    ("qwen2.5-72b", 80, 8192, 64, 8, 152064, 29568),
])
def test_served_dense_models(name, layers, hidden, heads, kv_heads, vocab, ffn):
    m = CAT.models[name]
    assert (m.layers, m.hidden, m.heads, m.kv_heads, m.vocab, m.ffn_hidden) == (layers, hidden, heads, kv_heads,
                                                                                 vocab, ffn)
    assert m.arch == "dense"


def test_deepseek_r1_is_deepseek_v3s_architecture():
    r1, v3 = CAT.models["deepseek-r1"], CAT.models["deepseek-v3"]
    assert r1.arch == "moe"
    fields = ("params_b", "active_params_b", "experts", "experts_per_token", "layers", "hidden", "heads", "kv_heads", "vocab", "ffn_hidden")
    assert all(getattr(r1, f) == getattr(v3, f) for f in fields)
    assert r1.source != v3.source
