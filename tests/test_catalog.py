"""The catalog: data files valid against their schema, every figure traceable to a source,
published figures where they should be, overlays, errors with positions, and JSON output."""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from rich.console import Console

from compiler.catalog import load_catalog
from compiler.catalog.tables import catalog_to_json, render_catalog
from compiler.diagnostics import CompileError, render_all
from compiler.resources import catalog_data_dir, schema
from compiler.source import parse

DATA_FILES = sorted(catalog_data_dir().glob("*.yaml"))

GPUS = ["V100", "A100-40GB", "A100-80GB", "H100", "H200", "B200", "B300", "GB200", "L4", "L40S", "MI300X"]
INSTANCES = {
    "aws": ["p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "g6.xlarge", "g6.12xlarge",
            "g6.48xlarge", "g6e.xlarge", "g6e.12xlarge", "g6e.48xlarge", "p6-b300.48xlarge", "p6e-gb200.36xlarge"],
    "gcp": [*(f"a2-highgpu-{n}g" for n in (1, 2, 4, 8)), *(f"a2-ultragpu-{n}g" for n in (1, 2, 4, 8)),
            "a3-highgpu-8g", "a3-megagpu-8g", "a3-ultragpu-8g",
            *(f"g2-standard-{n}" for n in (4, 8, 12, 16, 24, 32, 48, 96))],
    "azure": ["Standard_ND96asr_v4", "Standard_ND96amsr_A100_v4", "Standard_ND96isr_H100_v5",
              "Standard_ND96isr_H200_v5"],
}
ONPREM = ["dgx-h100", "hgx-h100", "hgx-h200", "hgx-b200", "dgx-a100", "l40s-server"]
MODELS = ["llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3-70b", "llama-3-405b",
          "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b",
          "mixtral-8x7b", "mixtral-8x22b", "qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3", "gpt-3-175b",
          "resnet-50", "vit-b-16"]


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def _write(tmp_path: Path, text: str, name: str = "overlay.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


# ---------------------------------------------------------------- schema and sources

def test_schema_is_valid_2020_12():
    Draft202012Validator.check_schema(schema("catalog.schema.json"))


@pytest.mark.parametrize("path", DATA_FILES, ids=lambda p: p.name)
def test_every_data_file_validates_against_the_schema(path):
    doc = parse(path.read_text(encoding="utf-8"), path.name)
    errors = list(Draft202012Validator(schema("catalog.schema.json")).iter_errors(doc.data))
    assert errors == []


def test_the_expected_data_files_ship():
    names = {p.name for p in DATA_FILES}
    assert {"sources.yaml", "gpus.yaml", "instances_aws.yaml", "instances_gcp.yaml", "instances_azure.yaml",
            "onprem.yaml", "fabrics.yaml", "storage.yaml", "models.yaml"} <= names


def test_every_record_and_price_row_has_a_resolving_source_with_iso_as_of(cat):
    refs = []
    for section in ("gpus", "instances", "onprem_nodes", "fabrics", "storage", "egress", "models", "factors"):
        for record in getattr(cat, section).values():
            refs.append(record.source)
    for inst in cat.instances.values():
        assert inst.prices, inst.name
        refs.extend(p.source for p in inst.prices)
    assert len(refs) > 100
    for ref in refs:
        src = cat.sources[ref]                       # KeyError = unresolved
        assert dt.date.fromisoformat(src.as_of) <= dt.date(2026, 12, 31)
        assert src.title and src.url


def test_estimates_say_so_in_their_source_title(cat):
    # Street prices are not public: every on-prem capex and every spot/reserved rate is an estimate.
    for node in cat.onprem_nodes.values():
        assert "estimate" in cat.sources[node.source].title.lower(), node.name
    for inst in cat.instances.values():
        for row in inst.prices:
            if row.spot is not None or row.reserved_1y is not None:
                assert "estimate" in cat.sources[row.source].title.lower(), (inst.name, row.region)


def test_version_is_set_once(cat):
    assert cat.version == "2026.11.7"


# ---------------------------------------------------------------- coverage of the names everybody uses

def test_all_catalog_names_of_the_brief_are_present(cat):
    assert sorted(cat.gpus) == sorted(GPUS)
    for provider, names in INSTANCES.items():
        for name in names:
            assert cat.instances[name].provider == provider
    assert set(ONPREM) <= set(cat.onprem_nodes)
    assert set(cat.fabrics) == {"infiniband-ndr", "roce-400g", "ethernet-100g", "ethernet-25g"}   # 25G: edge boxes
    assert {n: s.provider for n, s in cat.storage.items()} == {
        "fsx-lustre": "aws", "parallelstore": "gcp", "filestore": "gcp", "managed-lustre": "azure",
        "onprem-lustre": "on_prem", "onprem-nfs": "on_prem"}
    assert set(cat.egress) == {"aws", "gcp", "azure", "on_prem"}
    assert set(MODELS) <= set(cat.models)


def test_big_gpu_instances_have_prices_in_two_regions(cat):
    for inst in cat.instances.values():
        if inst.gpu in ("A100-40GB", "A100-80GB", "H100", "H200", "B200") and inst.gpus == 8:
            assert len(inst.regions) >= 2, inst.name
    regions = {p: set() for p in INSTANCES}
    for inst in cat.instances.values():
        regions[inst.provider] |= set(inst.regions)
    # US, EU and Asia-Pacific for each provider where the prices could be sourced (docs/catalog.md).
    assert regions == {
        "aws": {"us-east-1", "us-east-2", "us-west-1", "us-west-2", "ca-central-1", "eu-central-1", "eu-north-1",
                "eu-south-2", "eu-west-1", "eu-west-2", "me-central-1", "ap-northeast-1", "ap-northeast-2",
                "ap-south-1", "ap-southeast-1", "ap-southeast-2", "ap-southeast-3"},
        "gcp": {"us-central1", "us-east1", "us-east4", "us-east5", "us-south1", "us-west1", "us-west2", "us-west3",
                "us-west4", "northamerica-northeast2", "europe-north1", "europe-west1", "europe-west2", "europe-west3",
                "europe-west4", "europe-west9", "me-west1", "asia-east1", "asia-northeast1", "asia-northeast3",
                "asia-south1", "asia-south2", "asia-southeast1", "australia-southeast1"},
        "azure": {"centralus", "eastus", "eastus2", "southcentralus", "westus", "westus2", "westus3", "westeurope",
                  "swedencentral", "uksouth", "francecentral"}}


def test_regional_prices_are_the_sourced_figures(cat):
    # Spot checks against the figures the sources give: AWS G6/G6e on-demand as listed; GCP G2 as
    # the machine's price plus its L4s'; Azure ND pay-as-you-go as listed.
    assert cat.instances["g6.48xlarge"].price("eu-central-1", "on_demand") == 16.69464
    assert cat.instances["g6e.xlarge"].price("ap-northeast-1", "on_demand") == 2.699
    assert cat.instances["g2-standard-96"].price("asia-southeast1", "on_demand") == round(4.34634 + 5.52737, 4)
    assert cat.instances["Standard_ND96isr_H100_v5"].price("westus", "on_demand") == 127.816
    # Where a source has no figure the region is not priced: SkyPilot's AWS catalog lists no P5 in
    # Frankfurt or Ireland.
    assert "eu-central-1" not in cat.instances["p5.48xlarge"].regions
    assert "eu-west-1" not in cat.instances["p5.48xlarge"].regions
    # P-family outside us-east-1/us-west-2 as listed, after the June 2025 reduction.
    assert cat.instances["p5.48xlarge"].price("eu-north-1", "on_demand") == 58.8928
    assert cat.instances["p4d.24xlarge"].price("eu-central-1", "on_demand") == 27.43298


def test_prices_are_ordered_spot_and_reservations_below_on_demand(cat):
    for inst in cat.instances.values():
        for row in inst.prices:
            for option in ("reserved_1y", "reserved_3y"):
                value = row.get(option)
                assert value is None or value < row.on_demand, (inst.name, row.region, option)
            # Spot is capped at on-demand: a region whose zones all quote the cap sells no discount.
            assert row.spot is None or row.spot <= row.on_demand, (inst.name, row.region, "spot")
            if row.reserved_1y is not None and row.reserved_3y is not None:
                assert row.reserved_3y < row.reserved_1y


def test_instance_shapes(cat):
    # AWS P5 page: 8x H100, 192 vCPU, 3200 Gbps EFA; GCP A3 docs: a3-megagpu-8g GPUDirect-TCPXO 1800 Gbps;
    # GCP G2 docs: g2-standard-24 has 2 L4, g2-standard-96 has 8.
    p5 = cat.instances["p5.48xlarge"]
    assert (p5.gpu, p5.gpus, p5.vcpus, p5.fabric, p5.network_gbps) == ("H100", 8, 192, "efa", 3200)
    mega = cat.instances["a3-megagpu-8g"]
    assert (mega.fabric, mega.network_gbps) == ("gpudirect-tcpxo", 1800)
    assert [cat.instances[f"g2-standard-{n}"].gpus for n in (4, 8, 12, 16, 24, 32, 48, 96)] == [1, 1, 1, 1, 2, 1, 4, 8]
    assert cat.instances["Standard_ND96isr_H100_v5"].fabric == "infiniband"


# ---------------------------------------------------------------- published figures

def test_h100_figures_match_nvidias_datasheet(cat):
    # NVIDIA H100 SXM datasheet: BF16 1,979 TFLOPS *with sparsity* -> 989 dense; FP8 3,958 -> 1,979;
    # 80 GB HBM3 at 3.35 TB/s; NVLink 900 GB/s; up to 700 W.
    h100 = cat.gpus["H100"]
    assert h100.tflops["bf16"] == pytest.approx(989, abs=1)
    assert h100.tflops["fp8"] == pytest.approx(1979, abs=1)
    assert (h100.memory_gb, h100.memory_bandwidth_gb_s, h100.nvlink_gb_s, h100.tdp_w) == (80, 3350, 900, 700)


def test_other_gpu_figures_match_their_datasheets(cat):
    # A100 datasheet: BF16 312 dense, 80 GB at 2,039 GB/s (SXM). H200 page: 141 GB at 4.8 TB/s.
    # L40S datasheet: FP8 733 dense. AMD MI300X: 192 GB, 5.3 TB/s, BF16 1,307.4 dense.
    assert cat.gpus["A100-80GB"].tflops["bf16"] == 312
    assert cat.gpus["A100-80GB"].memory_bandwidth_gb_s == 2039
    assert (cat.gpus["H200"].memory_gb, cat.gpus["H200"].memory_bandwidth_gb_s) == (141, 4800)
    assert cat.gpus["L40S"].tflops["fp8"] == 733
    assert cat.gpus["MI300X"].tflops["bf16"] == pytest.approx(1307.4)
    assert "bf16" not in cat.gpus["V100"].tflops          # Volta has no bf16
    for gpu in cat.gpus.values():                          # dense, not sparsity: fp8 is 2x bf16 at most
        if "fp8" in gpu.tflops:
            assert gpu.tflops["fp8"] == pytest.approx(2 * gpu.tflops["bf16"], rel=0.02)


def test_llama_2_70b_architecture(cat):
    # Touvron et al. 2023 (Llama 2, arXiv:2307.09288) and meta-llama/Llama-2-70b-hf config.json:
    # 80 layers, hidden 8192, 64 heads, 8 key/value heads (GQA), FFN 28672, vocab 32000.
    m = cat.models["llama-2-70b"]
    assert (m.layers, m.hidden, m.heads, m.kv_heads, m.ffn_hidden, m.vocab) == (80, 8192, 64, 8, 28672, 32000)
    assert m.head_dim == 128


@pytest.mark.parametrize("name,shape", [
    ("llama-3.1-8b", (32, 4096, 32, 8, 14336)),
    ("llama-3.1-70b", (80, 8192, 64, 8, 28672)),
    ("llama-3.1-405b", (126, 16384, 128, 8, 53248)),
])
def test_llama_3_1_architecture(cat, name, shape):
    # meta-llama/Llama-3.1-{8B,70B,405B} config.json: layers, hidden, heads, KV heads, FFN; vocab
    # 128256. params_b is what those shapes hold (embeddings untied, RMSNorm weights included).
    m = cat.models[name]
    assert (m.family, m.arch) == ("llm", "dense")
    assert (m.layers, m.hidden, m.heads, m.kv_heads, m.ffn_hidden, m.vocab) == (*shape, 128256)
    kv_dim = m.kv_heads * m.head_dim
    per_layer = 2 * m.hidden * m.hidden + 2 * m.hidden * kv_dim + 3 * m.hidden * m.ffn_hidden + 2 * m.hidden
    params = 2 * m.vocab * m.hidden + m.layers * per_layer + m.hidden
    assert m.params_b == pytest.approx(params / 1e9, abs=0.005)
    assert "128K context" in cat.sources[m.source].title


def test_moe_and_vision_models(cat):
    # Mixtral paper: 46.7B total, 12.9B active, 8 experts top-2. DeepSeek-V3 report: 671B / 37B.
    # torchvision: ResNet-50 4.09 GFLOPS, ViT-B/16 17.56 GFLOPS at 224x224.
    mix, ds = cat.models["mixtral-8x7b"], cat.models["deepseek-v3"]
    assert (mix.arch, mix.params_b, mix.active_b, mix.experts, mix.experts_per_token) == ("moe", 46.7, 12.9, 8, 2)
    assert (ds.params_b, ds.active_b, ds.experts_per_token) == (671, 37, 8)
    assert cat.models["resnet-50"].gflops_per_sample == pytest.approx(4.1)
    assert cat.models["vit-b-16"].gflops_per_sample == pytest.approx(17.6)
    assert cat.models["resnet-50"].image_size == 224


def test_onprem_capex_is_near_the_published_reference(cat):
    # Shared reference 002: 64 H100 (8 nodes) bought for about $2.5M, i.e. ~$312k per node all-in.
    per_node = cat.onprem_nodes["hgx-h100"].capex_usd
    assert 250_000 <= per_node <= 400_000


# ---------------------------------------------------------------- overlays

OVERLAY = """\
sources:
  acme-quote:
    title: "ACME negotiated rates and GB200 evaluation unit, 2026"
    url: "https://example.com/acme/quote-17"
    as_of: "2026-10-01"
gpus:
  ACME-X1:
    vendor: nvidia
    memory_gb: 186
    memory_bandwidth_gb_s: 8000
    nvlink_gb_s: 1800
    tdp_w: 1200
    tflops: {bf16: 2500, fp8: 5000}
    source: acme-quote
instances:
  p5.48xlarge:
    prices:
      us-east-1: {on_demand: 40.0, source: acme-quote}
"""


def test_overlay_adds_a_gpu_and_overrides_one_price_keeping_the_rest(tmp_path, cat):
    merged = load_catalog(_write(tmp_path, OVERLAY))
    assert merged.gpus["ACME-X1"].tflops == {"bf16": 2500.0, "fp8": 5000.0}
    p5 = merged.instances["p5.48xlarge"]
    assert p5.price("us-east-1", "on_demand") == 40.0
    assert p5.price("us-east-1", "spot") == cat.instances["p5.48xlarge"].price("us-east-1", "spot")
    assert p5.price("us-west-2", "on_demand") == cat.instances["p5.48xlarge"].price("us-west-2", "on_demand")
    sources = {p.region: p.source for p in p5.prices}
    assert sources.pop("us-east-1") == "acme-quote"
    assert sources == {p.region: p.source for p in cat.instances["p5.48xlarge"].prices if p.region != "us-east-1"}
    assert p5.vcpus == 192 and p5.gpu == "H100"
    assert merged.gpus["H100"] == cat.gpus["H100"]
    # The built-in catalog is cached and untouched by the overlay.
    assert load_catalog().instances["p5.48xlarge"].price("us-east-1", "on_demand") != 40.0
    assert "ACME-X1" not in load_catalog().gpus


def test_overlay_can_add_an_instance_on_a_gpu_it_adds(tmp_path):
    text = OVERLAY + """\
  acme-box:
    provider: aws
    gpu: ACME-X1
    gpus: 4
    vcpus: 144
    sockets: 2
    ram_gb: 960
    fabric: efa
    network_gbps: 1600
    prices:
      us-east-1: {on_demand: 80, spot: null, reserved_1y: null, reserved_3y: null, source: acme-quote}
    source: acme-quote
"""
    merged = load_catalog(_write(tmp_path, text))
    assert merged.instances["acme-box"].gpu == "ACME-X1"
    assert merged.instances["acme-box"].price("us-east-1", "spot") is None


def test_a_serving_image_states_its_vllm_release_and_an_overlay_changes_both(tmp_path, cat):
    assert cat.gpus["B200"].serving.vllm == (0, 10, 1, 1) and cat.gpus["MI300X"].serving.vllm == (0, 9, 0, 1)
    bumped = load_catalog(_write(tmp_path, 'gpus:\n  H100:\n    serving: {version: v0.11.0, vllm: "0.11.0"}\n'))
    assert (bumped.gpus["H100"].serving.ref, bumped.gpus["H100"].serving.vllm) == ("vllm/vllm-openai:v0.11.0",
                                                                                    (0, 11, 0))
    # a new tag alone would keep the old release's flags: refused
    with pytest.raises(CompileError) as info:
        load_catalog(_write(tmp_path, "gpus:\n  H100:\n    serving: {version: v0.11.0}\n", "tag-only.yaml"))
    [d] = info.value.diagnostics
    assert (d.code, d.position.line, d.message) == ("C002", 3, "a record that states `version` gives vllm; missing 'vllm'")
    assert "vllm" in d.hint


BROKEN = """\
gpus:
  H100:
    memry_gb: 96
instances:
  p5.48xlarge:
    prices:
      us-east-1: {on_demand: 40.0}
"""


def test_broken_overlay_unknown_key_and_missing_source_give_positions(tmp_path):
    path = _write(tmp_path, BROKEN)
    with pytest.raises(CompileError) as info:
        load_catalog(path)
    err = info.value
    assert err.exit_code == 2
    got = [(d.code, d.position.line, d.position.column, d.message) for d in err.diagnostics]
    assert got == [("C001", 3, 5, "unknown key 'memry_gb'"),
                   ("C002", 7, 7, "missing required field 'source'")]
    text = render_all(err.diagnostics, err.source)
    assert f"{path}:3:5: error[C001] at $.gpus.H100.memry_gb: unknown key 'memry_gb'" in text
    assert "hint: did you mean 'memory_gb'?" in text
    assert "Traceback" not in text


def test_broken_overlay_bad_references(tmp_path):
    text = """\
sources:
  acme-quote: {title: "ACME quote", url: "https://example.com/q", as_of: "2026-02-30"}
gpus:
  H100: {memory_gb: 96, source: acme-qoute}
instances:
  p5.48xlarge: {gpu: H1OO}
onprem_nodes:
  hgx-h100: {fabrics: [infiniband-hdr]}
  mystery-box: {gpu: H100, source: acme-quote}
"""
    with pytest.raises(CompileError) as info:
        load_catalog(_write(tmp_path, text))
    got = [(d.code, d.position.line, d.message) for d in info.value.diagnostics]
    assert got == [
        ("C007", 2, "as_of must be a real ISO date (YYYY-MM-DD), got '2026-02-30'"),
        ("C003", 4, "source 'acme-qoute' is not in any `sources` table"),
        ("C005", 6, "unknown GPU 'H1OO'"),
        ("C005", 8, "unknown fabric 'infiniband-hdr'"),
        ("C002", 9, "missing required fields 'gpus', 'vcpus', 'sockets', 'ram_gb', 'capex_usd', 'power_kw', "
                    "'rack_units', 'useful_life_years', 'support_usd_per_year'"),
    ]
    hints = {d.code: d.hint for d in info.value.diagnostics}
    assert hints["C003"] == "did you mean 'acme-quote'?"
    assert hints["C005"] == "did you mean 'infiniband-ndr'?"


def test_overlay_that_is_not_yaml_or_missing(tmp_path):
    with pytest.raises(CompileError) as info:
        load_catalog(_write(tmp_path, "gpus: [unclosed\n"))
    assert info.value.diagnostics[0].position is not None
    with pytest.raises(CompileError) as info:
        load_catalog(tmp_path / "nope.yaml")
    assert info.value.diagnostics[0].code == "E001"


def test_broken_builtin_data_is_reported_per_file(tmp_path, monkeypatch):
    # Two files defining the same GPU, and a price row pointing at no source.
    from compiler.catalog import loader

    for p in DATA_FILES:
        (tmp_path / p.name).write_text(p.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "zz_extra.yaml").write_text(
        "gpus:\n  H100: {vendor: nvidia, memory_gb: 80, memory_bandwidth_gb_s: 1, nvlink_gb_s: 0,\n"
        "         tdp_w: 1, tflops: {bf16: 1}, source: nvidia-h100-datasheet}\n", encoding="utf-8")
    with pytest.raises(CompileError) as info:
        loader.load_builtin(tmp_path)
    (d,) = info.value.diagnostics
    assert (d.code, d.position.line, info.value.source.filename) == ("C004", 2, "compiler/catalog/data/zz_extra.yaml")
    assert "duplicate GPU 'H100' (also in compiler/catalog/data/gpus.yaml)" == d.message


def _copy_data(tmp_path: Path) -> None:
    for p in DATA_FILES:
        (tmp_path / p.name).write_text(p.read_text(encoding="utf-8"), encoding="utf-8")


def test_version_twice_or_never_is_c006(tmp_path):
    from compiler.catalog import loader

    _copy_data(tmp_path)
    (tmp_path / "zz_extra.yaml").write_text('version: "2027.01"\n', encoding="utf-8")
    with pytest.raises(CompileError) as info:
        loader.load_builtin(tmp_path)
    (d,) = info.value.diagnostics
    assert (d.code, d.message, d.hint) == ("C006", "version is already set in compiler/catalog/data/sources.yaml",
                                           "keep `version` in sources.yaml only")
    assert (d.position.line, d.position.column) == (1, 1)
    (tmp_path / "zz_extra.yaml").unlink()
    text = (tmp_path / "sources.yaml").read_text(encoding="utf-8")
    (tmp_path / "sources.yaml").write_text(text.replace('version: "2026.11.7"\n', ""), encoding="utf-8")
    with pytest.raises(CompileError) as info:
        loader.load_builtin(tmp_path)
    assert [(d.code, d.message) for d in info.value.diagnostics] == [("C006", "no data file sets `version`")]


def test_no_data_files_is_c008(tmp_path):
    from compiler.catalog import loader

    with pytest.raises(CompileError) as info:
        loader.load_builtin(tmp_path)
    (d,) = info.value.diagnostics
    assert (d.code, d.message) == ("C008", f"no catalog data files in {tmp_path}")
    assert info.value.exit_code == 2


# ---------------------------------------------------------------- output

def test_catalog_to_json_is_deterministic_and_complete(cat, tmp_path):
    first = json.dumps(catalog_to_json(cat), sort_keys=True)
    again = json.dumps(catalog_to_json(load_catalog(_write(tmp_path, "version: x\n"))), sort_keys=True)
    assert json.dumps(catalog_to_json(cat)) == json.dumps(catalog_to_json(cat))
    data = json.loads(first)
    assert data["version"] == "2026.11.7"
    assert json.loads(again)["version"] == "2026.11.7+x"
    assert list(data["gpus"]) == sorted(data["gpus"])
    assert data["gpus"]["H100"]["tflops"]["bf16"] == 989.4
    regions = [p["region"] for p in data["instances"]["p4d.24xlarge"]["prices"]]
    assert regions == sorted(regions)
    assert set(data) == {f.name for f in dataclasses.fields(cat)}


def test_render_catalog_prints_every_section(cat):
    buf = io.StringIO()
    render_catalog(cat, Console(file=buf, width=250, color_system=None), None)
    out = buf.getvalue()
    for needle in ("H100", "p5.48xlarge", "us-east-1", "hgx-b200", "infiniband-ndr", "fsx-lustre", "llama-3-405b"):
        assert needle in out
    buf = io.StringIO()
    render_catalog(cat, Console(file=buf, width=250, color_system=None), "models")
    assert "llama-2-70b" in buf.getvalue() and "p5.48xlarge" not in buf.getvalue()


def test_render_catalog_unknown_section_is_a_diagnostic(cat):
    with pytest.raises(CompileError) as info:
        render_catalog(cat, Console(file=io.StringIO()), "model5")
    (d,) = info.value.diagnostics
    assert (d.code, d.message) == ("C009", "unknown catalog section 'model5'")
    assert d.hint == "did you mean 'models'?"


def test_docs_list_the_priced_regions_of_each_provider(cat):
    # docs/catalog.md "Priced regions" is what E215's users read: it must match the data.
    import re

    text = (Path(__file__).resolve().parents[1] / "docs" / "catalog.md").read_text(encoding="utf-8")
    section = text.split("## Priced regions", 1)[1]
    listed = {m.group(1): set(re.findall(r"`([a-z0-9-]+)`", m.group(2)))
              for m in re.finditer(r"^\| (aws|gcp|azure) \| (.*) \|$", section, re.M)}
    priced: dict[str, set] = {}
    for inst in cat.instances.values():
        priced.setdefault(inst.provider, set()).update(inst.regions)
    assert listed == priced


def test_the_shipped_data_files_parse_alike_by_libyaml_and_by_pyyaml():
    """The built-in catalog is composed by libyaml (trusted=True, the compiler's own files); it
    must give the same values, types and positions as the pure-Python parser users' files go
    through, or a catalog figure or an error's line:col would depend on the parser."""
    from compiler.resources import catalog_data_dir
    from compiler.source import parse

    paths = sorted(Path(catalog_data_dir()).glob("*.yaml"))
    assert len(paths) >= 10
    for p in paths:
        text = p.read_text(encoding="utf-8")
        pure, fast = parse(text, p.name), parse(text, p.name, trusted=True)
        assert repr(fast.data) == repr(pure.data), p.name
        assert fast.value_positions == pure.value_positions, p.name
        assert fast.key_positions == pure.key_positions, p.name
    # YAML 1.2 numbers (`1e9`, no dot) are floats in both, as the spec language says
    assert parse("a: 1e9\nb: 2.0e12\n", "x", trusted=True).data == {"a": 1e9, "b": 2.0e12}
