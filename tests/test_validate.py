"""The validate stage: one test per error code with its exact text, the five-mistakes
spec, the examples, and the Spec that a valid document becomes.

Error cases live in tests/errors/<case>.yaml beside <case>.txt (the exact rendered
diagnostics). The case name starts with its code, so a code without a case fails
`test_every_error_code_has_a_case`. To see a case's output:
    python -m compiler validate tests/errors/<case>.yaml
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from compiler.catalog.model import (Catalog, CloudInstance, Gpu, InstancePrice, Model,
                                    OnPremNode)
from compiler.diagnostics import CompileError, render_all
from compiler.resources import schema
from compiler.source import MAX_BYTES, load, parse
from compiler.spec import CloudSite, InlineModel, OnPremSite
from compiler.validate import check, validate

ROOT = Path(__file__).resolve().parent.parent
ERRORS = ROOT / "tests" / "errors"
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))

LOAD_CODES = [f"E00{i}" for i in range(1, 9)]
SCHEMA_CODES = [f"E10{i}" for i in range(1, 8)]
SEMANTIC_CODES = [f"E2{i:02d}" for i in range(1, 18)]

# ---------------------------------------------------------------------------- the catalog

def _hand_catalog() -> Catalog:
    """The catalog names of the common brief, with only the fields validation reads."""
    gpus = {g: Gpu(g, "nvidia", 80, 3000, 900, 700, {"bf16": 989.0}, "test")
            for g in ("V100", "A100-40GB", "A100-80GB", "H100", "H200", "B200", "L4", "L40S",
                      "MI300X")}
    regions = {"aws": ("us-east-1", "us-west-2", "eu-west-1"),
               "gcp": ("us-central1", "europe-west4"), "azure": ("eastus", "westeurope")}
    table = [("aws", "A100-40GB", 8, "p4d.24xlarge"), ("aws", "A100-80GB", 8, "p4de.24xlarge"),
             ("aws", "H100", 8, "p5.48xlarge"), ("aws", "H200", 8, "p5e.48xlarge"),
             ("aws", "L4", 1, "g6.xlarge"), ("aws", "L4", 4, "g6.12xlarge"),
             ("aws", "L4", 8, "g6.48xlarge"), ("aws", "L40S", 1, "g6e.xlarge"),
             ("aws", "L40S", 4, "g6e.12xlarge"), ("aws", "L40S", 8, "g6e.48xlarge"),
             ("gcp", "H100", 8, "a3-highgpu-8g"), ("gcp", "H100", 8, "a3-megagpu-8g"),
             ("gcp", "H200", 8, "a3-ultragpu-8g"), ("gcp", "A100-80GB", 8, "a2-ultragpu-8g"),
             ("gcp", "A100-40GB", 8, "a2-highgpu-8g"), ("gcp", "L4", 1, "g2-standard-4"),
             ("azure", "A100-40GB", 8, "Standard_ND96asr_v4"),
             ("azure", "A100-80GB", 8, "Standard_ND96amsr_A100_v4"),
             ("azure", "H100", 8, "Standard_ND96isr_H100_v5"),
             ("azure", "H200", 8, "Standard_ND96isr_H200_v5")]
    instances = {
        name: CloudInstance(name, provider, gpu, n, 96, 1152, "ethernet", 100,
                            tuple(InstancePrice(r, 10.0, 4.0, 7.0, 5.0, "test")
                                  for r in regions[provider]), "test")
        for provider, gpu, n, name in table}
    nodes = {name: OnPremNode(name, gpu, 8, 112, 2, 2048, 300000, 10.2, 8, 5, 30000, "test")
             for name, gpu in (("dgx-h100", "H100"), ("hgx-h100", "H100"), ("hgx-h200", "H200"),
                               ("hgx-b200", "B200"), ("dgx-a100", "A100-80GB"),
                               ("l40s-server", "L40S"))}
    models = {name: Model(name, "llm", "dense", p, "test", layers=80, hidden=8192, heads=64,
                          kv_heads=8, vocab=128256, ffn_hidden=28672)
              for name, p in (("llama-2-7b", 7), ("llama-2-13b", 13), ("llama-2-70b", 70),
                              ("llama-3-8b", 8), ("llama-3-70b", 70), ("llama-3-405b", 405),
                              ("mixtral-8x7b", 46.7), ("deepseek-v3", 671),
                              ("gpt-3-175b", 175))}
    models["resnet-50"] = Model("resnet-50", "vision", "cnn", 0.0256, "test",
                                gflops_per_sample=4.1)
    models["vit-b-16"] = Model("vit-b-16", "vision", "vit", 0.086, "test",
                               gflops_per_sample=17.6)
    return Catalog("test", {}, gpus, instances, nodes, {}, {}, {}, models)


def _catalog() -> Catalog:
    try:
        from compiler.catalog import load_catalog
    except ImportError:
        return _hand_catalog()
    return load_catalog()


CATALOG = _catalog()


def errors_of(text: str, filename: str = "spec.yaml", catalog: Catalog | None = None) -> list[tuple[str, str]]:
    """(code, message) of every diagnostic for a spec text; [] when it validates."""
    try:
        validate(parse(text, filename), catalog or CATALOG)
    except CompileError as exc:
        return [(d.code, d.message) for d in exc.diagnostics]
    return []


def rendered(load_doc) -> str:
    try:
        validate(load_doc(), CATALOG)
    except CompileError as exc:
        assert exc.exit_code == 2
        return render_all(exc.diagnostics, exc.source) + "\n"
    raise AssertionError("expected a CompileError")


# ---------------------------------------------------------------------------- one case per code

CASES = sorted(p.stem for p in ERRORS.glob("*.txt"))


@pytest.mark.parametrize("case", CASES)
def test_error_case_renders_exactly(case, monkeypatch):
    monkeypatch.chdir(ROOT)   # relative filenames keep the text stable
    name = f"tests/errors/{case}.yaml"
    if case.startswith("e002"):
        text = rendered(lambda: parse("#" * (MAX_BYTES + 1), name))
    else:
        text = rendered(lambda: load(name))
    assert text == (ERRORS / f"{case}.txt").read_text(encoding="utf-8")


def test_every_error_code_has_a_case():
    covered = {c.split("-")[0].upper() for c in CASES}
    assert set(LOAD_CODES + SCHEMA_CODES + SEMANTIC_CODES) <= covered


@pytest.mark.parametrize("case", [c for c in CASES if re.match(r"e\d{3}-", c)])
def test_each_case_reports_its_own_code(case):
    text = (ERRORS / f"{case}.txt").read_text(encoding="utf-8")
    codes = set(re.findall(r"error\[(E\d{3})\]", text))
    assert codes == {case[:4].upper()}


def test_semantic_codes_are_documented():
    reference = (ROOT / "docs" / "spec-reference.md").read_text(encoding="utf-8")
    for code in LOAD_CODES + SCHEMA_CODES + SEMANTIC_CODES:
        assert f"| {code} |" in reference, code


# ---------------------------------------------------------------------------- five mistakes

def test_five_mistakes_are_all_reported_at_their_line_and_column(monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(CompileError) as info:
        validate(load("tests/errors/five-mistakes.yaml"), CATALOG)
    found = [(d.code, d.position.line, d.position.column) for d in info.value.diagnostics]
    assert found == [("E102", 16, 13),   # tokens: -5
                     ("E101", 17, 5),    # optimiser (at the key)
                     ("E105", 18, 16),   # precision: bf61
                     ("E202", 20, 33),   # data.home: aws-usw2
                     ("E209", 23, 12)]   # model: llama-3-7b
    assert info.value.exit_code == 2
    unknown = info.value.diagnostics[1]
    assert unknown.message == "unknown key 'optimiser'"
    assert unknown.hint == "did you mean 'optimizer'?"


# ---------------------------------------------------------------------------- the examples

@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_validates(path):
    spec = validate(load(path), CATALOG)
    assert spec.name == path.stem
    assert spec.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert [w.path for w in spec.workloads] == [f"$.workloads[{i}]"
                                                for i in range(len(spec.workloads))]


def test_there_are_the_four_promised_examples():
    names = {p.name for p in EXAMPLES}
    assert {"llm-pretrain-aws.yaml", "hybrid-llm-platform.yaml",
            "multi-region-inference.yaml", "onprem-vision.yaml"} <= names


DESIGN_EXAMPLE = """\
apiVersion: infra-compile/v1
name: acme-ml-platform
horizon_months: 36
sites:
  - name: aws-use1
    type: cloud
    provider: aws
    region: us-east-1
    pricing: [on_demand, spot, reserved_1y, reserved_3y]
    quotas: {H100: 512}
  - name: fra-dc1
    type: on_prem
    power_kw: 1200
    electricity_usd_per_kwh: 0.15
    pue: 1.3
    max_racks: 40
    rack_power_kw: 40
    owned: [{instance: dgx-h100, nodes: 8}]
policy:
  placement: hybrid
  allowed_gpus: [H100, H200, A100-80GB, L40S]
  max_cloud_share: 0.8
workloads:
  - name: llama-70b-pretrain
    kind: training
    model: llama-3-70b
    tokens: 2.0e12
    seq_len: 8192
    precision: bf16
    optimizer: adamw
    window: {start_month: 0, deadline_days: 60}
    interruptible: true
    data: {dataset_tb: 40, home: aws-use1}
    checkpoint: {interval_min: 60, keep: 5}
    orchestrator: slurm
    sites: [aws-use1, fra-dc1]
    pin: {gpu: H100, gpus: 1024, site: aws-use1, pricing: on_demand}
  - name: chat-70b
    kind: inference
    model: llama-3-70b
    quantization: fp8
    traffic: {peak_rps: 50, input_tokens: 1000, output_tokens: 250, growth_per_month: 0.05}
    slo: {ttft_p99_ms: 800, tpot_p99_ms: 60, availability: 0.999}
    window: {start_month: 2}
    orchestrator: kubernetes
  - name: resnet50
    kind: training
    model: resnet-50
    samples: 1281167
    epochs: 90
    window: {deadline_days: 2}
"""


def test_the_design_example_becomes_a_spec_with_every_value():
    spec = validate(parse(DESIGN_EXAMPLE, "design.yaml"), CATALOG)
    aws, fra = spec.sites
    assert isinstance(aws, CloudSite) and aws.pricing[-1] == "reserved_3y"
    assert dict(aws.quotas) == {"H100": 512} and aws.path == "$.sites[0]"
    assert isinstance(fra, OnPremSite) and fra.owned[0].instance == "dgx-h100"
    assert (fra.power_kw, fra.pue, fra.max_racks, fra.rack_power_kw) == (1200, 1.3, 40, 40)
    assert spec.policy.allowed_gpus == ("H100", "H200", "A100-80GB", "L40S")
    assert spec.policy.max_cloud_share == 0.8
    pretrain, chat, resnet = spec.workloads
    assert pretrain.tokens == 2.0e12          # YAML 1.1 would read `2.0e12` as a string
    assert pretrain.pin.gpus == 1024 and pretrain.pin.pricing == "on_demand"
    assert pretrain.sites == ("aws-use1", "fra-dc1")
    assert pretrain.checkpoint.keep == 5 and pretrain.data.home == "aws-use1"
    assert chat.slo.availability == 0.999 and chat.traffic.growth_per_month == 0.05
    assert chat.window.start_month == 2 and chat.quantization == "fp8"
    assert resnet.samples == 1281167 and resnet.epochs == 90 and resnet.tokens is None
    assert resnet.window.deadline_days == 2


def test_defaults_are_filled():
    text = DESIGN_EXAMPLE.replace("    pricing: [on_demand, spot, reserved_1y, reserved_3y]\n", "")
    text = text.replace("    slo: {ttft_p99_ms: 800, tpot_p99_ms: 60, availability: 0.999}",
                        "    slo: {ttft_p99_ms: 800, tpot_p99_ms: 60}")
    text = text.replace("    orchestrator: kubernetes\n", "").replace("    quantization: fp8\n", "")
    text = text.replace("pricing: on_demand}", "}")
    spec = validate(parse(text), CATALOG)
    assert spec.sites[0].pricing == ("on_demand",)
    chat, resnet = spec.workloads[1], spec.workloads[2]
    assert (chat.orchestrator, chat.quantization, chat.slo.availability) == ("kubernetes",
                                                                             "bf16", 0.99)
    assert (resnet.seq_len, resnet.precision, resnet.optimizer) == (4096, "bf16", "adamw")
    assert (resnet.checkpoint.interval_min, resnet.checkpoint.keep) == (None, 3)  # None: auto
    assert (resnet.orchestrator, resnet.interruptible) == ("slurm", False)
    assert resnet.window.start_month == 0 and resnet.data is None and resnet.pin is None


def test_the_spec_is_frozen_and_typed():
    spec = validate(parse(DESIGN_EXAMPLE), CATALOG)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.name = "x"  # type: ignore[misc]
    assert isinstance(spec.horizon_months, int)
    assert isinstance(spec.workloads[0].seq_len, int)
    assert isinstance(spec.workloads[0].tokens, float)


# ---------------------------------------------------------------------------- smaller rules

def edit(old: str, new: str, text: str = DESIGN_EXAMPLE) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def test_a_key_of_the_other_branch_says_where_it_belongs():
    text = edit("    quotas: {H100: 512}\n", "    quotas: {H100: 512}\n    power_kw: 10\n")
    with pytest.raises(CompileError) as info:
        validate(parse(text), CATALOG)
    [d] = info.value.diagnostics
    assert (d.code, d.message, d.hint) == ("E101", "unknown key 'power_kw'",
                                           "'power_kw' applies to sites of type on_prem")


def test_an_inline_model_is_accepted_and_a_moe_one_must_be_complete():
    inline = ("model: {name: my-lm, arch: dense, params_b: 7, layers: 32, hidden: 4096, "
              "heads: 32, kv_heads: 8, vocab: 32000, ffn_hidden: 14336}")
    spec = validate(parse(edit("model: resnet-50\n    samples: 1281167\n    epochs: 90",
                               inline + "\n    tokens: 1.0e+11")), CATALOG)
    model = spec.workloads[2].model
    assert isinstance(model, InlineModel) and model.name == "my-lm" and model.layers == 32
    moe = edit("arch: dense", "arch: moe", inline)
    assert errors_of(edit("model: llama-3-70b\n    tokens", moe + "\n    tokens")) == [
        ("E104", "missing required keys 'active_params_b', 'experts' and 'experts_per_token'")]
    assert errors_of("apiVersion: infra-compile/v1\n") == [
        ("E104", "missing required keys 'name', 'horizon_months', 'sites' and 'workloads'")]
    assert errors_of(edit("sites:\n", "sites: 5\nignored:\n")) == [
        ("E103", "must be a list, got 5"), ("E101", "unknown key 'ignored'")]


@pytest.mark.parametrize("old,new,expected", [
    ("horizon_months: 36", "horizon_months: 121", ("E102", "must be <= 120, got 121")),
    ("pue: 1.3", "pue: 0.9", ("E102", "must be >= 1, got 0.9")),
    ("max_cloud_share: 0.8", "max_cloud_share: 1.5", ("E102", "must be <= 1, got 1.5")),
    ("availability: 0.999", "availability: 1", ("E102", "must be < 1, got 1")),
    ("seq_len: 8192", "seq_len: 8192.5", ("E103", "must be an integer, got 8192.5")),
    ("interruptible: true", "interruptible: 1", ("E103", "must be true or false, got 1")),
    ("max_racks: 40", "max_racks: true", ("E103", "must be an integer, got true")),
    ("model: resnet-50", "model: [resnet-50]", ("E103", "must be a string or a mapping, got a list")),
    ("apiVersion: infra-compile/v1", "apiVersion: v1",
     ("E105", "must be 'infra-compile/v1', got 'v1'")),
    ("name: chat-70b", "name: chat-70b-" + "x" * 60,
     ("E106", "bad name 'chat-70b-xxxxxxxxxxxxxxxxxxxxxxxxxxxx...': use lowercase letters, "
              "digits and '-', starting with a letter and ending with a letter or digit, "
              "at most 63 characters")),
    ("region: us-east-1", "region: US East", ("E106", "bad region name 'US East': use the "
                                              "provider's region id, e.g. us-east-1, "
                                              "us-central1, eastus")),
    ("allowed_gpus: [H100, H200, A100-80GB, L40S]", "allowed_gpus: []",
     ("E107", "must have at least 1 item, got 0")),
    ("window: {start_month: 2}", "window: {start_month: 36}",
     ("E207", "start_month 36 is not within the 36-month horizon (0..35)")),
    ("pricing: on_demand}", "pricing: owned}",
     ("E204", "pricing 'owned' is for on_prem sites; 'aws-use1' is a cloud site")),
    ("gpu: H100, gpus: 1024, site: aws-use1", "gpu: H100, gpus: 1024, site: fra-dc1",
     ("E204", "pricing 'on_demand' is for cloud sites; 'fra-dc1' is on_prem")),
    ("pricing: on_demand}", "pricing: on_demand, instance: dgx-h100}",
     ("E206", "'dgx-h100' is an on-prem node model, but site 'aws-use1' is a cloud site")),
    ("pricing: on_demand}", "pricing: on_demand, instance: p4de.24xlarge}",
     ("E206", "instance 'p4de.24xlarge' has A100-80GB GPUs, but pin.gpu is 'H100'")),
    ("pricing: on_demand}", "pricing: on_demand, instance: p5.48xl}",
     ("E206", "unknown instance 'p5.48xl'")),
    ("sites: [aws-use1, fra-dc1]", "sites: [fra-dc1]",
     ("E203", "pinned site 'aws-use1' is not in this workload's sites")),
    ("placement: hybrid", "placement: on_prem",
     ("E203", "pinned site 'aws-use1' is cloud but policy.placement is 'on_prem'")),
    ("    window: {start_month: 2}\n", "    window: {start_month: 2, deadline_days: 5}\n",
     ("E101", "unknown key 'deadline_days'")),
    ("samples: 1281167\n    epochs: 90", "samples: 1281167",
     ("E208", "vision training needs 'epochs'")),
    ("tokens: 2.0e12", "samples: 100\n    epochs: 1",
     ("E208", "'samples' is for vision training; 'llama-3-70b' is an LLM")),
])
def test_one_mistake_one_message(old, new, expected):
    assert expected in errors_of(edit(old, new))


def _without_prices_in(region: str) -> Catalog:
    """The shipped catalog with every price row of `region` removed: the catalog the report
    of an unpriced region was made against, whatever regions the shipped data covers later."""
    instances = {name: dataclasses.replace(inst, prices=tuple(p for p in inst.prices if p.region != region))
                 for name, inst in CATALOG.instances.items()}
    return dataclasses.replace(CATALOG, instances=instances)


def test_a_cloud_site_in_a_region_the_catalog_does_not_price_is_an_error():
    # As reported: `region: eu-central-1` validated ok, then the site got no candidates and
    # nothing said so.
    catalog = _without_prices_in("eu-central-1")
    text = edit("region: us-east-1", "region: eu-central-1")
    with pytest.raises(CompileError) as info:
        validate(parse(text), catalog)
    [d] = info.value.diagnostics
    priced = sorted({p.region for i in catalog.instances.values() if i.provider == "aws"
                     for p in i.prices})
    assert (d.code, d.severity, d.path) == ("E215", "error", ("sites", 0, "region"))
    assert d.message == ("the catalog prices no aws instance in eu-central-1, so site 'aws-use1' "
                         "would get no candidates")
    assert d.hint == (f"aws is priced in: {', '.join(priced)}; add eu-central-1 prices with "
                      "--catalog FILE, or pass --allow-unpriced-regions to accept the site with "
                      "a warning")
    assert "eu-central-1" not in priced and {"us-east-1", "us-west-2"} <= set(priced)


def test_the_shipped_catalog_prices_the_reported_region():
    # eu-central-1 has AWS prices now (G6 and G6e; docs/catalog.md, "Priced regions").
    assert "eu-central-1" in CATALOG.instances["g6e.xlarge"].regions
    assert errors_of(edit("region: us-east-1", "region: eu-central-1")) == []


def test_allow_unpriced_regions_makes_it_a_warning_and_the_spec_valid():
    catalog = _without_prices_in("eu-central-1")
    text = edit("region: us-east-1", "region: eu-central-1")
    checked = check(parse(text), catalog, allow_unpriced_regions=True)
    assert [s.region for s in checked.spec.sites if isinstance(s, CloudSite)] == ["eu-central-1"]
    [w] = checked.warnings
    assert (w.code, w.severity) == ("E215", "warning")
    assert w.message.endswith("so site 'aws-use1' gets no candidates")
    assert "--allow-unpriced-regions" not in w.hint
    # Without the option the same spec is rejected, and a valid spec has no warnings.
    with pytest.raises(CompileError):
        check(parse(text), catalog)
    assert check(parse(DESIGN_EXAMPLE), CATALOG, allow_unpriced_regions=True).warnings == ()


def test_with_the_option_warnings_are_listed_among_the_errors():
    catalog = _without_prices_in("eu-central-1")
    text = edit("region: us-east-1", "region: eu-central-1", edit("horizon_months: 36", "horizon_months: 0"))
    with pytest.raises(CompileError) as info:
        check(parse(text), catalog, allow_unpriced_regions=True)
    assert [(d.code, d.severity) for d in info.value.diagnostics] == [("E102", "error"),
                                                                      ("E215", "warning")]
    assert "warning[E215]" in render_all(info.value.diagnostics, info.value.source)


def test_an_unpriced_region_that_differs_in_dashes_only_gets_a_did_you_mean():
    [d] = [d for d in _diagnostics(edit("region: us-east-1", "region: us-east1")) if d.code == "E215"]
    assert d.hint.startswith("did you mean 'us-east-1'? aws is priced in: ")
    # A neighbouring region is a region, not a typo.
    [d] = [d for d in _diagnostics(edit("region: us-east-1", "region: eu-central-9")) if d.code == "E215"]
    assert d.hint.startswith("aws is priced in: ")


def test_a_region_priced_by_an_overlay_is_valid(tmp_path):
    from compiler.catalog import load_catalog

    overlay = tmp_path / "ours.yaml"
    overlay.write_text(
        "sources:\n  ours: {title: Our quote, url: 'https://example.com/q', as_of: '2026-11-01'}\n"
        "instances:\n  p5.48xlarge:\n    prices:\n      af-south-1: {on_demand: 80.0, spot: null, "
        "reserved_1y: null, reserved_3y: null, source: ours}\n", encoding="utf-8")
    text = edit("region: us-east-1", "region: af-south-1")
    assert [c for c, _ in errors_of(text)] == ["E215"]
    assert errors_of(text, catalog=load_catalog(str(overlay))) == []


def test_no_e215_where_the_schema_already_rejects_the_site():
    assert [c for c, _ in errors_of(edit("region: us-east-1", "region: US East"))] == ["E106"]
    assert [c for c, _ in errors_of(edit("provider: aws", "provider: ibm"))] == ["E105"]
    assert [c for c, _ in errors_of(edit("provider: aws", "provider: [aws]"))] == ["E105"]
    assert [c for c, _ in errors_of(edit("region: us-east-1", "region: [us-east-1]"))] == ["E103"]


def _diagnostics(text: str):
    try:
        validate(parse(text), CATALOG)
    except CompileError as exc:
        return exc.diagnostics
    return []


def test_a_checkpoint_interval_is_minutes_or_auto():
    spec = validate(parse(edit("interval_min: 60", "interval_min: auto")), CATALOG)
    assert spec.workloads[0].checkpoint.interval_min is None
    assert validate(parse(DESIGN_EXAMPLE), CATALOG).workloads[0].checkpoint.interval_min == 60
    assert errors_of(edit("interval_min: 60", "interval_min: sometimes")) == [
        ("E103", "must be a number, got 'sometimes'")]
    assert errors_of(edit("interval_min: 60", "interval_min: -3")) == [("E102", "must be > 0, got -3")]


def test_a_spot_pin_on_an_interruptible_job_with_a_matching_instance_is_fine():
    text = edit("pricing: on_demand}", "pricing: spot, instance: p5.48xlarge}")
    assert errors_of(text) == []
    assert ("E205", "pricing 'spot' needs interruptible: true") in errors_of(
        edit("interruptible: true", "interruptible: false", text))


def test_errors_are_sorted_by_position_and_not_repeated():
    text = edit("horizon_months: 36", "horizon_months: 0")
    text = edit("  - name: fra-dc1\n", "  - name: aws-use1\n", text)
    text = edit("  - name: aws-use1\n    type: cloud\n", "  - name: aws-use1\n", text)
    with pytest.raises(CompileError) as info:
        validate(parse(text), CATALOG)
    diags = info.value.diagnostics
    positions = [(d.position.line, d.position.column) for d in diags]
    assert positions == sorted(positions)
    assert len({(d.code, d.path, d.message) for d in diags}) == len(diags)
    assert [d.code for d in diags] == ["E102", "E104", "E201", "E202"]


def test_the_schema_is_valid_2020_12_and_closed_everywhere():
    spec_schema = schema("spec.schema.json")
    Draft202012Validator.check_schema(spec_schema)
    assert spec_schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"

    def objects(node):
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node and "allOf" not in node:
                yield node
            for v in node.values():
                yield from objects(v)
        elif isinstance(node, list):
            for v in node:
                yield from objects(v)

    closed = list(objects(spec_schema))
    assert len(closed) >= 12
    assert all(o.get("additionalProperties") is False for o in closed)
    assert json.dumps(spec_schema).count('"$ref": "#/$defs/name"') >= 6
