"""`infra-compile catalog refresh`, on recorded answers of the three price lists only.

tests/fixtures/prices/ holds small files in each provider's own format: AWS's region index, two
regional AmazonEC2 offer files and the spot feed (spot.js); two pages of Azure's Retail Prices API
linked by NextPageLink; two pages of GCP's Cloud Billing Catalog SKUs linked by nextPageToken. A
stub HTTP server on 127.0.0.1 (tests/refresh_fixtures.py) serves them and the
INFRA_COMPILE_PRICES_* variables point there. Every figure asserted below is worked by hand from
those files in the comment beside it.
"""

from __future__ import annotations

import json
import socket
import urllib.parse
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from refresh_fixtures import ROOT, serve

from compiler.catalog import load_catalog
from compiler.catalog.refresh.gcp_skus import component
from compiler.cli import app

AS_OF = "2026-11-28"      # tests/conftest.py's SOURCE_DATE_EPOCH


@pytest.fixture
def stub(monkeypatch):
    yield from serve(monkeypatch)


def cli(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def refresh(tmp_path: Path, provider: str, *extra: str) -> tuple[dict, str, Path]:
    out = tmp_path / "overlay.yaml"
    r = cli("catalog", "refresh", provider, "-o", str(out), *extra)
    assert r.exit_code == 0, r.stderr
    return yaml.safe_load(out.read_text()), r.stderr, out


def row(overlay: dict, instance: str, region: str) -> dict:
    return overlay["instances"][instance]["prices"][region]


# ---------------------------------------------------------------- what each list gives

def test_aws_offer_files_and_spot_feed_give_the_hand_worked_rows(stub, tmp_path):
    overlay, summary, _ = refresh(tmp_path, "aws")
    p5 = row(overlay, "p5.48xlarge", "us-east-1")
    # On-demand: the Linux, shared, Used product's Hrs rate (the Windows and the unused-reservation
    # products are not read). Reserved: standard No Upfront's hourly fee, 36.1968 for 1 year (not
    # All Upfront's 300000 / 8760 h = 34.2466, nor the convertible 40.0) and 24.6192 for 3 years.
    # Spot: the feed's linux price for us-east-1, 21.4560.
    assert p5 == {"on_demand": 55.04, "spot": 21.456, "reserved_1y": 36.1968, "reserved_3y": 24.6192,
                  "source": "aws-price-list", "estimated": [], "terms": "reserved-instance"}
    # g6.xlarge has no Reserved Instance in the file. The catalog's 0.507 / 0.3461 are Savings Plan
    # estimates, another kind of term: not kept as Reserved Instance prices, null, and said so.
    g6 = row(overlay, "g6.xlarge", "us-east-1")
    assert (g6["on_demand"], g6["spot"]) == (0.8123, 0.3412)
    assert (g6["reserved_1y"], g6["reserved_3y"], g6["estimated"]) == (None, None, [])
    assert ("the catalog's 1-/3-year figures of another kind of term were not kept (null where the list has "
            "none): g6.xlarge in us-east-1 (reserved_1y, reserved_3y, source aws-ec2-g-prices)") in summary
    assert "1-/3-year figures are Standard Reserved Instances (per instance type and region) (terms: reserved-instance)" in summary
    # p4d in us-west-2 has no No Upfront offer: 1 year All Upfront 120000 / 8760 h = 13.698630;
    # 3 years Partial Upfront 5.0 /h + 150000 / 26280 h = 10.707763. The feed says "N/A*" for
    # its spot, so the catalog's 11.9319 (its source's median zone) is kept and marked.
    p4d = row(overlay, "p4d.24xlarge", "us-west-2")
    assert p4d == {"on_demand": 21.96, "spot": 11.9319, "reserved_1y": 13.69863, "reserved_3y": 10.707763,
                   "source": "aws-price-list", "estimated": ["spot"], "terms": "reserved-instance"}
    assert overlay["sources"]["aws-price-list"]["as_of"] == AS_OF
    assert overlay["version"] == f"prices-{AS_OF}"
    assert "aws: 3 price rows for 3 instances in 2 regions (us-east-1, us-west-2)" in summary
    assert "p4d.24xlarge in us-west-2 (spot)" in summary


def test_azure_pages_give_the_hand_worked_rows(stub, tmp_path):
    overlay, _, _ = refresh(tmp_path, "azure")
    # Page 1, ND H100 v5: pay-as-you-go 98.32 (not the Windows meter's 104.0 nor DevTest's 96.0);
    # reservations are the term's price: 525600 / 8760 h = 60.0, 1182600 / 26280 h = 45.0. No
    # Spot meter, and the catalog has none either: null, not estimated.
    assert row(overlay, "Standard_ND96isr_H100_v5", "eastus") == {
        "on_demand": 98.32, "spot": None, "reserved_1y": 60.0, "reserved_3y": 45.0,
        "source": "azure-retail-prices", "estimated": [], "terms": "reservation"}
    # Page 2 (reached through NextPageLink), ND A100 v4: 27.197 is the latest meter (2025's 26.0 is
    # older); Spot 5.4394 (Low Priority's 2.72 not read); 146000 / 8760 h = 16.666667;
    # 262800 / 26280 h = 10.0.
    assert row(overlay, "Standard_ND96asr_v4", "eastus") == {
        "on_demand": 27.197, "spot": 5.4394, "reserved_1y": 16.666667, "reserved_3y": 10.0,
        "source": "azure-retail-prices", "estimated": [], "terms": "reservation"}
    pages = [r for r in stub.requests if r.startswith("/api/retail/prices")]
    assert len(pages) == 2 and "$skip=100" in pages[1]
    assert "armSkuName%20eq%20%27Standard_ND96asr_v4%27" in pages[0]


def test_gcp_pages_compose_machine_types_from_their_skus(stub, tmp_path):
    overlay, summary, _ = refresh(tmp_path, "gcp")
    # g2-standard-4 = 1 L4 + 4 vCPU + 16 GiB (page 2):
    #   on-demand 0.56 + 4 x 0.024988 + 16 x 0.002927 = 0.706784
    #   spot      0.224 + 4 x 0.009995 + 16 x 0.001171 = 0.282716
    #   1 year    0.3528 + 4 x 0.015743 + 16 x 0.001844 = 0.445276
    #   3 years   0.252 + 4 x 0.011244 + 16 x 0.001317 = 0.318048
    g2 = {"on_demand": 0.706784, "spot": 0.282716, "reserved_1y": 0.445276, "reserved_3y": 0.318048,
          "source": "gcp-billing-catalog", "estimated": [], "terms": "committed-use"}
    assert row(overlay, "g2-standard-4", "us-central1") == g2
    assert row(overlay, "g2-standard-4", "us-east4") == g2        # the SKUs serve both regions
    # a3-highgpu-8g = 8 H100 80GB + 208 vCPU + 1872 GiB (page 1, on-demand only):
    #   8 x 9.796550569 + 208 x 0.032083 + 1872 x 0.002713 = 90.124404552 -> 90.124405;
    # spot and commitments come from the catalog (35.3, 55.5975, 39.7125: its commitments are estimates
    # of the same resource-based commitments), marked.
    a3 = row(overlay, "a3-highgpu-8g", "us-central1")
    assert (a3["on_demand"], a3["spot"], a3["reserved_1y"], a3["reserved_3y"]) == (90.124405, 35.3, 55.5975, 39.7125)
    assert a3["estimated"] == ["spot", "reserved_1y", "reserved_3y"]
    # A4 is priced whole, per GPU slice: 8 x 14.24125 = 113.93.
    assert row(overlay, "a4-highgpu-8g", "us-central1")["on_demand"] == 113.93
    # A3 Mega's only GPU SKU is a reservation's: no on-demand price, no row; its cores (billed as
    # A3's) are priced there, so the region is reported as priced but not offered.
    assert "a3-megagpu-8g" not in overlay["instances"]
    assert ("not offered (priced in the list, not written): a3-megagpu-8g in us-central1: some of its SKUs list "
            "the region, no on-demand SKU for its H100 80GB Mega or H100 80GB Plus gpu does") in summary
    keys = [urllib.parse.parse_qs(urllib.parse.urlsplit(r).query) for r in stub.requests]
    assert [k["key"] for k in keys] == [["test-key"], ["test-key"]]
    assert keys[1]["pageToken"] == ["CAEQAhoMCNjJu7sGEOCm5ZgD"]
    assert "test-key" not in summary


def test_gcp_prices_a3_edge_and_a4x_from_their_skus(stub, tmp_path):
    """A3 Edge and A4X are composed, not skipped. A3 Edge is billed by A3 High's SKUs (page 2's London
    ones), so the list cannot say which of the two a region sells: A3 Edge is written where the
    catalog sells it, A3 High is not written where the catalog sells A3 Edge and not A3 High, and
    the summary names the regions left out. A4X is priced whole by its GB200 slice SKU, as A4 is."""
    overlay, summary, _ = refresh(tmp_path, "gcp")
    assert "no known composition" not in summary
    # a3-edgegpu-8g in europe-west2 = 8 x 11.167068 + 208 x 0.036574 + 1872 x 0.003093
    #   = 89.336544 + 7.607392 + 5.790096 = 102.734032; spot and commitments the catalog's, marked
    edge = row(overlay, "a3-edgegpu-8g", "europe-west2")
    cat = load_catalog().instances["a3-edgegpu-8g"].price_row("europe-west2")
    assert edge["on_demand"] == 102.734032 and edge["estimated"] == ["spot", "reserved_1y", "reserved_3y"]
    assert (edge["spot"], edge["reserved_1y"], edge["reserved_3y"]) == (cat.spot, cat.reserved_1y, cat.reserved_3y)
    # A3 High's SKUs price us-central1, which the catalog sells A3 High in and not A3 Edge: only A3 High there;
    # and europe-west2 is A3 Edge's alone.
    assert set(overlay["instances"]["a3-edgegpu-8g"]["prices"]) == {"europe-west2"}
    assert set(overlay["instances"]["a3-highgpu-8g"]["prices"]) == {"us-central1"}
    assert ("the list cannot tell which type a region sells (written only where the catalog sells it): "
            "a3-edgegpu-8g (billed by the same SKUs as a3-highgpu-8g; not written where the catalog does not "
            "sell it and sells those): us-central1") in summary
    assert ("the list cannot tell which type a region sells (written only where the catalog sells it): "
            "a3-highgpu-8g (billed by the same SKUs as a3-edgegpu-8g; not written where the catalog does not "
            "sell it and sells those): europe-west2") in summary
    # a4x-highgpu-4g in us-east1 = 4 x 12.5 (the A4X GB200 slice) = 50.0
    a4x = row(overlay, "a4x-highgpu-4g", "us-east1")
    assert a4x["on_demand"] == 50.0 and a4x["estimated"] == ["spot", "reserved_1y", "reserved_3y"]
    assert "GB200" not in summary.split("not in the catalog (not added):")[-1].split("\n")[0]


def test_gcp_a4x_is_priced_by_its_parts_where_the_list_has_no_slice():
    """Where no A4X slice SKU prices a region, A4X is its GB200 GPUs + A4X cores + memory."""
    from types import SimpleNamespace

    from compiler.catalog.refresh.gcp import SERIES, machine_price, missing_parts

    a4x = SimpleNamespace(gpus=4, vcpus=140, ram_gb=884)
    parts = {("gpu", "GB200", "on_demand", "us-east1"): 10.0, ("core", "A4X", "on_demand", "us-east1"): 0.05,
             ("ram", "A4X", "on_demand", "us-east1"): 0.004}
    # 4 x 10 + 140 x 0.05 + 884 x 0.004 = 40 + 7 + 3.536
    assert machine_price(a4x, SERIES["a4x-highgpu"], "on_demand", "us-east1", parts) == pytest.approx(50.536)
    whole = {**parts, ("slice", "A4X Nvidia GB200", "on_demand", "us-east1"): 12.5}
    assert machine_price(a4x, SERIES["a4x-highgpu"], "on_demand", "us-east1", whole) == 50.0
    del parts[("gpu", "GB200", "on_demand", "us-east1")]
    assert machine_price(a4x, SERIES["a4x-highgpu"], "on_demand", "us-east1", parts) is None
    assert missing_parts(a4x, SERIES["a4x-highgpu"], "us-east1", parts) == (
        ["A4X Nvidia GB200 slice", "GB200 gpu"], True)


def test_gcp_sku_descriptions_read_as_components():
    def sku(description, group, usage):
        return {"description": description, "serviceRegions": ["us-central1"],
                "category": {"resourceFamily": "Compute", "resourceGroup": group, "usageType": usage},
                "pricingInfo": [{"pricingExpression": {"usageUnit": "GiBy.h" if group == "RAM" else "h",
                                                       "tieredRates": [{"unitPrice": {"units": "1", "nanos": 250000000}}]}}]}
    c = component(sku("Nvidia H100 80GB GPU attached to Spot Preemptible VMs running in Tokyo", "GPU", "Preemptible"))
    assert (c.kind, c.name, c.option, c.usd) == ("gpu", "H100 80GB", "spot", 1.25)
    c = component(sku("Commitment v1: A3 Ram in Americas for 3 Years", "RAM", "Commit3Yr"))
    assert (c.kind, c.name, c.option) == ("ram", "A3", "reserved_3y")
    assert component(sku("H200 141GB GPU running in Belgium", "GPU", "OnDemand")).name == "H200 141GB"
    # a description whose usage type disagrees with its category, and a custom machine's core: not read
    assert component(sku("Spot Preemptible A3 Instance Core running in Americas", "CPU", "OnDemand")) is None
    assert component(sku("G2 Custom Instance Core running in Americas", "CPU", "OnDemand")) is None


# ---------------------------------------------------------------- the overlay works as an overlay

@pytest.mark.parametrize("provider, example", [("aws", "llm-pretrain-aws.yaml"),
                                               ("azure", "multi-region-inference.yaml"),
                                               ("gcp", "multi-region-inference.yaml")])
def test_each_refreshed_overlay_validates_with_an_example(stub, tmp_path, provider, example):
    _, _, out = refresh(tmp_path, provider)
    r = cli("validate", str(ROOT / "examples" / example), "--catalog", str(out))
    assert r.exit_code == 0, r.stderr
    assert "ok (" in r.stdout


SERVICE = """\
apiVersion: infra-compile/v1
name: refreshed-prices
horizon_months: 1
sites:
  - {name: aws-use1, type: cloud, provider: aws, region: us-east-1, pricing: [on_demand]}
policy: {placement: cloud, allowed_gpus: [L4]}
workloads:
  - name: chat-8b
    kind: inference
    model: llama-3-8b
    quantization: fp8
    traffic: {peak_rps: 1, input_tokens: 500, output_tokens: 100}
    slo: {ttft_p99_ms: 2000, tpot_p99_ms: 100, availability: 0.99}
    pin: {instance: g6.xlarge}
"""


@pytest.mark.slow
def test_a_compile_with_the_refreshed_overlay_pays_the_fetched_price(stub, tmp_path):
    _, _, out = refresh(tmp_path, "aws")
    spec = tmp_path / "spec.yaml"
    spec.write_text(SERVICE)
    r = cli("compile", str(spec), "--catalog", str(out), "-o", str(tmp_path / "build"), "-q")
    assert r.exit_code == 0, r.stderr
    plan = json.loads((tmp_path / "build" / "plan.json").read_text())
    pools = [p for p in plan["pools"] if p["instance"] == "g6.xlarge"]
    assert pools and all(p["pricing"] == "on_demand" for p in pools)
    node_hours = sum(sum(p["monthly_node_hours"]) for p in pools)
    # the offer file's g6.xlarge rate, 0.8123 per node-hour (the built-in catalog says 0.8048)
    assert plan["cost_breakdown_usd"]["cloud_compute"] / node_hours == pytest.approx(0.8123, rel=1e-4)
    assert plan["catalog"]["version"].endswith(f"+prices-{AS_OF}")


# ---------------------------------------------------------------- failures and reports

def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_list_exits_2_with_one_line_and_leaves_the_overlay_alone(stub, tmp_path, monkeypatch):
    out = tmp_path / "overlay.yaml"
    before = b"# ours\nversion: acme\nsources: {}\n"
    out.write_bytes(before)
    port = _closed_port()
    monkeypatch.setenv("INFRA_COMPILE_PRICES_AWS_URL", f"http://127.0.0.1:{port}")
    r = cli("catalog", "refresh", "aws", "-o", str(out))
    assert r.exit_code == 2
    lines = r.stderr.splitlines()
    assert lines[0].startswith("catalog refresh aws: error[C020]: cannot reach "
                               f"http://127.0.0.1:{port}/offers/v1.0/aws/AmazonEC2/current/region_index.json: ")
    assert len(lines) == 2 and lines[1].startswith("   hint:") and "HTTPS_PROXY" in lines[1]
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["overlay.yaml"]     # no temporary file left


def test_throttled_and_failing_answers_are_retried_after_a_backoff(stub, tmp_path):
    index = "/offers/v1.0/aws/AmazonEC2/current/region_index.json"
    stub.fail[index] = [(503, {}), (429, {"Retry-After": "7"})]
    overlay, _, _ = refresh(tmp_path, "aws")
    # the first retry waits the backoff's 2 s; the second what the 429 asked for
    assert stub.pauses == [2.0, 7.0]
    assert [r for r in stub.requests if r == index] == [index] * 3
    assert row(overlay, "p5.48xlarge", "us-east-1")["on_demand"] == 55.04


def test_a_list_that_keeps_failing_stops_after_the_last_try(stub, tmp_path):
    stub.fail["/spot.js"] = [(500, {})] * 5
    r = cli("catalog", "refresh", "aws")
    assert r.exit_code == 2
    assert "error[C021]" in r.stderr and "answered HTTP 500" in r.stderr and "after 5 tries" in r.stderr
    assert stub.pauses == [2.0, 4.0, 8.0, 16.0] and r.stdout == ""


def test_an_instance_the_catalog_lacks_is_reported_not_added(stub, tmp_path):
    overlay, summary, _ = refresh(tmp_path, "aws")
    # g4dn.12xlarge (4 GPUs) is priced in the us-east-1 offer file; m5.large has no GPU.
    assert "g4dn.12xlarge" not in overlay["instances"]
    assert "in the price list but not in the catalog (not added): g4dn.12xlarge" in summary
    assert "m5.large" not in summary
    _, summary, _ = refresh(tmp_path, "gcp")
    assert "in the price list but not in the catalog (not added): T4 GPU" in summary


def test_gcp_without_an_api_key_says_which_variable_to_set(stub, monkeypatch):
    monkeypatch.delenv("INFRA_COMPILE_GCP_API_KEY")
    r = cli("catalog", "refresh", "gcp")
    assert r.exit_code == 2
    assert r.stderr.startswith("catalog refresh gcp: error[C022]: the Cloud Billing Catalog API needs an API key; "
                               "INFRA_COMPILE_GCP_API_KEY or GOOGLE_API_KEY is not set")
    assert stub.requests == []


def test_a_region_the_list_lacks_is_an_error_with_a_hint(stub):
    r = cli("catalog", "refresh", "aws", "--regions", "us-east-1,us-wset-2")
    assert r.exit_code == 2
    assert "error[C023]: region 'us-wset-2' not in the aws price list" in r.stderr
    assert "did you mean 'us-west-2'?" in r.stderr


def test_regions_limit_what_is_fetched_and_print_to_stdout(stub):
    r = cli("catalog", "refresh", "aws", "--regions", "us-west-2")
    assert r.exit_code == 0, r.stderr
    overlay = yaml.safe_load(r.stdout)
    assert set(overlay["instances"]) == {"p4d.24xlarge"}
    assert not any("us-east-1" in req for req in stub.requests)


# ---------------------------------------------------------------- one file for three providers

def test_three_refreshes_share_one_file_and_keep_its_own_rows(stub, tmp_path):
    out = tmp_path / "overlay.yaml"
    out.write_text("sources:\n  acme-quote: {title: ACME quote, url: 'https://acme.example/q', as_of: '2026-10-01'}\n"
                   "instances:\n  p5.48xlarge:\n    prices:\n"
                   "      us-east-1: {on_demand: 40.0, spot: null, reserved_1y: null, reserved_3y: null, source: acme-quote}\n")
    for provider in ("aws", "azure", "gcp"):
        r = cli("catalog", "refresh", provider, "-o", str(out))
        assert r.exit_code == 0, r.stderr
    first = out.read_bytes()
    overlay = yaml.safe_load(first)
    assert set(overlay["sources"]) == {"acme-quote", "aws-price-list", "azure-retail-prices", "gcp-billing-catalog"}
    assert row(overlay, "p5.48xlarge", "us-east-1")["on_demand"] == 40.0     # the negotiated row stays
    assert "Standard_ND96asr_v4" in overlay["instances"] and "g2-standard-4" in overlay["instances"]
    # the same answers again: the same bytes
    assert cli("catalog", "refresh", "aws", "-o", str(out)).exit_code == 0
    assert out.read_bytes() == first
    cat = load_catalog(out)
    assert cat.instances["g6.xlarge"].price("us-east-1", "on_demand") == 0.8123
    g6 = cat.instances["g6.xlarge"].price_row("us-east-1")
    assert (g6.estimated, g6.reserved_1y) == ((), None)       # no Savings Plan estimate passed off as an RI


def test_an_estimated_list_must_name_price_options(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("instances:\n  p5.48xlarge:\n    prices:\n"
                   "      us-east-1: {on_demand: 50.0, source: aws-ec2-p-prices, estimated: [on_demand]}\n")
    from compiler.diagnostics import CompileError

    with pytest.raises(CompileError) as err:
        load_catalog(bad)
    assert "must be one of spot, reserved_1y, reserved_3y" in str(err.value)


def test_the_plain_catalog_listing_still_works():
    r = cli("catalog", "--section", "gpus")
    assert r.exit_code == 0 and "H100" in r.stdout


def test_the_weekly_ci_job_refreshes_the_three_providers_into_one_overlay_and_opens_a_pull_request():
    import re

    doc = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", doc, re.S)]
    job = next(b for b in blocks if "refresh-prices" in (b.get("jobs") or {}))
    assert job[True]["schedule"][0]["cron"].split()[4] == "1"        # `on:` reads as True in YAML 1.1
    steps = job["jobs"]["refresh-prices"]["steps"]
    run = next(s["run"] for s in steps if s.get("name") == "refresh")
    lines = [line.split() for line in run.splitlines() if line.startswith("infra-compile")]
    assert [words[3] for words in lines] == ["aws", "azure", "gcp"]
    assert all(words[:3] == ["infra-compile", "catalog", "refresh"] and words[-2:] == ["-o", "prices/overlay.yaml"]
               for words in lines)
    pr = next(s for s in steps if str(s.get("uses", "")).startswith("peter-evans/create-pull-request"))
    assert pr["with"]["add-paths"] == "prices/overlay.yaml"
