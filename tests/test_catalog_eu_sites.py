"""A European platform finds H100 or H200 machines at each of its sites in the bundled catalog.

Validate and estimate only (no solve): each site must carry at least one candidate of the serving
workload on an H100 or H200 instance priced in the site's region. London on GCP sells A3 Edge
(a3-edgegpu-8g) and no A3 High; Sweden Central on Azure ND H100 v5 and ND H200 v5, UK South and
France Central ND H100 v5 (priced as estimates, named so in their source).
"""

from __future__ import annotations

import pytest

from compiler import pipeline

SITES = [("aws-lon", "aws", "eu-west-2"), ("aws-sto", "aws", "eu-north-1"), ("gcp-lon", "gcp", "europe-west2"),
         ("gcp-ams", "gcp", "europe-west4"), ("az-swe", "azure", "swedencentral"), ("az-weu", "azure", "westeurope"),
         ("az-uks", "azure", "uksouth"), ("az-frc", "azure", "francecentral")]

SPEC = """\
apiVersion: infra-compile/v1
name: eu-platform
horizon_months: 6
sites:
{sites}
policy:
  placement: cloud
  allowed_gpus: [H100, H200]
workloads:
  - name: chat-70b
    kind: inference
    model: llama-3-70b
    quantization: fp8
    traffic: {{peak_rps: 10, input_tokens: 1000, output_tokens: 250}}
    slo: {{ttft_p99_ms: 1000, tpot_p99_ms: 80, availability: 0.99}}
"""


@pytest.fixture(scope="module")
def candidates(tmp_path_factory):
    sites = "\n".join(f"  - {{name: {n}, type: cloud, provider: {p}, region: {r}, pricing: [on_demand]}}"
                      for n, p, r in SITES)
    path = tmp_path_factory.mktemp("eu") / "eu.yaml"
    path.write_text(SPEC.format(sites=sites), encoding="utf-8")
    found, _doc = pipeline.estimate(path, allow_unpriced_regions=True)
    return found


@pytest.mark.parametrize("site", [n for n, _p, _r in SITES])
def test_each_eu_site_has_h100_or_h200_candidates(candidates, site):
    gpus = {candidates.catalog.instances[c.instance].gpu for c in candidates.by_workload["chat-70b"] if c.site == site}
    assert gpus & {"H100", "H200"}, f"{site}: no H100/H200 candidate"


def test_london_on_gcp_is_served_by_a3_edge(candidates):
    names = {c.instance for c in candidates.by_workload["chat-70b"] if c.site == "gcp-lon"}
    assert names == {"a3-edgegpu-8g"}
