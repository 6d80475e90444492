"""`infra-compile catalog --region/--gpu/--provider`, and `--format json` honouring `--section`.

What a filtered listing should hold is read here straight from the bundled YAML files, not
through the loader the command uses, so a filter that kept or dropped the wrong rows fails.
"""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from compiler.catalog import load_catalog
from compiler.catalog.tables import catalog_to_json
from compiler.cli import app
from catalog_data import sold_instances



def cli(*args: str):
    return CliRunner().invoke(app, ["catalog", *args], catch_exceptions=False)


@pytest.fixture(scope="module")
def sold() -> dict[str, dict]:
    return sold_instances()


def table_rows(text: str) -> list[list[str]]:
    """The data rows of rich tables as lists of cells (header and rule lines left out)."""
    return [[c.strip() for c in line.strip().strip("│").split("│")]
            for line in text.splitlines() if line.startswith("│")]


def json_out(*args: str) -> dict:
    r = cli(*args, "--format", "json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


# ---------------------------------------------------------------- no filter: unchanged

def test_without_filters_the_json_is_the_whole_catalog():
    assert json_out() == json.loads(json.dumps(catalog_to_json(load_catalog())))


def test_without_filters_the_listing_is_the_default_sections():
    whole = cli().stdout
    parts = "".join(cli("--section", s).stdout for s in
                    ("gpus", "instances", "regions", "onprem", "fabrics", "storage", "models"))
    assert whole == parts and "nothing matches" not in whole


# ---------------------------------------------------------------- --section in JSON

@pytest.mark.parametrize("section, keys", [("gpus", {"gpus"}), ("instances", {"instances"}),
                                           ("onprem", {"onprem_nodes"}), ("storage", {"storage", "egress"}),
                                           ("models", {"models"}), ("sources", {"sources"}),
                                           ("fabrics", {"fabrics"}), ("model", {"models"})])
def test_json_prints_only_the_section_asked_for(section, keys):
    whole = json_out()
    part = json_out("--section", section)
    assert set(part) == keys
    assert all(part[k] == whole[k] for k in keys)


def test_json_regions_section_is_the_regions_table(sold):
    regions = json_out("--section", "regions")["regions"]
    expected: dict = {}
    for name, rec in sold.items():
        for region in rec["regions"]:
            expected.setdefault(rec["provider"], {}).setdefault(region, set()).add(name)
    assert {p: {r: set(v["instances"]) for r, v in rs.items()} for p, rs in regions.items()} == expected
    frankfurt = regions["aws"]["eu-central-1"]
    assert frankfurt["gpus"] == sorted({sold[n]["gpu"] for n in frankfurt["instances"]})
    rows = {(r[0], r[1]): r for r in table_rows(cli("--section", "regions").stdout)}
    # (the instances cell wraps onto further lines; the GPUs and the date fit on the first)
    assert rows[("aws", "eu-central-1")][3:] == [", ".join(frankfurt["gpus"]), frankfurt["as_of"]]


def test_an_unknown_section_in_json_is_c009_as_json():
    r = cli("--section", "modls", "--format", "json")
    assert r.exit_code == 2
    (d,) = json.loads(r.stdout)["diagnostics"]
    assert (d["code"], d["message"], d["hint"]) == ("C009", "unknown catalog section 'modls'", "did you mean 'models'?")


# ---------------------------------------------------------------- --region

def test_region_filter_lists_only_that_regions_rows(sold):
    r = cli("--region", "eu-central-1", "--section", "instances")
    assert r.exit_code == 0, r.stderr
    rows = table_rows(r.stdout)
    assert rows and {row[7] for row in rows} == {"eu-central-1"}
    assert {row[1] for row in rows} == {n for n, rec in sold.items() if "eu-central-1" in rec["regions"]}


def test_region_filter_narrows_the_json_alike(sold):
    data = json_out("--region", "eu-central-1", "--section", "instances")
    assert set(data) == {"instances"}
    assert set(data["instances"]) == {n for n, rec in sold.items() if "eu-central-1" in rec["regions"]}
    assert {p["region"] for i in data["instances"].values() for p in i["prices"]} == {"eu-central-1"}


def test_regions_repeat_or_separate_by_commas(sold):
    a = json_out("--region", "eu-central-1,europe-west4", "--region", "eastus")
    b = json_out("--region", "eastus", "--region", "europe-west4", "--region", "eu-central-1")
    assert a == b
    asked = {"eu-central-1", "europe-west4", "eastus"}
    assert set(a) == {"gpus", "instances", "regions"}       # the sections a region narrows
    assert set(a["instances"]) == {n for n, rec in sold.items() if rec["regions"] & asked}
    assert {p["region"] for i in a["instances"].values() for p in i["prices"]} == asked
    assert {r for rs in a["regions"].values() for r in rs} == asked
    # the GPUs section: those the instances sold there carry
    assert set(a["gpus"]) == {rec["gpu"] for rec in sold.values() if rec["regions"] & asked}


def test_a_filtered_listing_leaves_out_sections_the_filter_says_nothing_about():
    out = cli("--region", "eu-central-1").stdout
    assert "Cloud instances" in out and "Regions" in out and "GPUs" in out
    for title in ("Models", "On-prem node models", "On-prem fabrics", "Storage tiers"):
        assert title not in out


# ---------------------------------------------------------------- --gpu, --provider

def test_gpu_filter(sold):
    data = json_out("--gpu", "H100")
    assert set(data) == {"gpus", "instances", "regions", "onprem_nodes"}
    assert set(data["gpus"]) == {"H100"}
    assert set(data["instances"]) == {n for n, rec in sold.items() if rec["gpu"] == "H100"}
    assert data["onprem_nodes"] and {n["gpu"] for n in data["onprem_nodes"].values()} == {"H100"}
    rows = table_rows(cli("--gpu", "H100", "--section", "regions").stdout)
    assert rows and all(row[3] == "H100" for row in rows)


def test_provider_filter(sold):
    data = json_out("--provider", "azure")
    assert set(data) == {"gpus", "instances", "regions", "storage", "egress"}
    assert set(data["instances"]) == {n for n, rec in sold.items() if rec["provider"] == "azure"}
    assert set(data["regions"]) == {"azure"}
    assert data["storage"] and {s["provider"] for s in data["storage"].values()} == {"azure"}
    assert set(data["egress"]) == {"azure"}
    rows = table_rows(cli("--provider", "azure", "--section", "instances").stdout)
    assert {row[0] for row in rows} == {"azure", ""}       # the provider is shown on an instance's first row


def test_filters_combine(sold):
    data = json_out("--provider", "gcp", "--gpu", "H100", "--region", "europe-west4", "--section", "instances")
    assert set(data["instances"]) == {n for n, rec in sold.items() if rec["provider"] == "gcp"
                                      and rec["gpu"] == "H100" and "europe-west4" in rec["regions"]}
    assert data["instances"]


def test_nothing_matching_is_said_under_the_empty_table(sold):
    assert not any(rec["gpu"] == "H100" and "eu-central-1" in rec["regions"] for rec in sold.values())
    r = cli("--region", "eu-central-1", "--gpu", "H100", "--section", "instances")
    assert r.exit_code == 0 and table_rows(r.stdout) == []
    assert "nothing matches --region eu-central-1 --gpu H100" in r.stdout
    assert json_out("--region", "eu-central-1", "--gpu", "H100", "--section", "instances") == {"instances": {}}


# ---------------------------------------------------------------- mistakes

def test_unknown_filter_values_are_c009_with_a_hint():
    r = cli("--region", "eu-centrl-1", "--gpu", "h100", "--provider", "amazon,gpc")
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.splitlines() == [
        "catalog: error[C009]: unknown GPU 'h100' in --gpu",
        "   hint: did you mean 'H100'?",
        "catalog: error[C009]: unknown provider 'amazon' in --provider",
        "   hint: choose one of aws, azure, gcp",
        "catalog: error[C009]: unknown provider 'gpc' in --provider",
        "   hint: did you mean 'gcp'?",
        "catalog: error[C009]: unknown region 'eu-centrl-1' in --region: the catalog prices no instance there",
        "   hint: did you mean 'eu-central-1'?",
    ]


def test_a_region_known_only_to_an_overlay_is_accepted_with_it(tmp_path):
    overlay = tmp_path / "ours.yaml"
    overlay.write_text("sources:\n  ours: {title: quote, url: 'https://acme.example/q', as_of: '2026-11-01'}\n"
                       "instances:\n  p5.48xlarge:\n    prices:\n"
                       "      eu-central-2: {on_demand: 60.0, spot: null, reserved_1y: null, reserved_3y: null,\n"
                       "                     source: ours}\n", encoding="utf-8")
    assert cli("--region", "eu-central-2").exit_code == 2
    data = json_out("--catalog", str(overlay), "--region", "eu-central-2", "--section", "instances")
    assert list(data["instances"]) == ["p5.48xlarge"]


def test_unknown_filter_values_in_json_mode_are_json():
    r = cli("--gpu", "Z9", "--format", "json")
    assert r.exit_code == 2
    doc = json.loads(r.stdout)
    assert doc["ok"] is False and [d["code"] for d in doc["diagnostics"]] == ["C009"]
    assert doc["diagnostics"][0]["hint"].startswith("choose one of A100-40GB, ")


def test_a_filter_on_a_section_it_does_not_narrow_is_c009():
    r = cli("--gpu", "H100", "--section", "models")
    assert r.exit_code == 2
    assert r.stderr.splitlines() == ["catalog: error[C009]: --gpu does not narrow the models section",
                                     "   hint: drop --gpu, or ask for --section gpus, instances, regions or onprem"]
    assert cli("--region", "us-east-1", "--section", "storage", "--format", "json").exit_code == 2


def test_a_filter_before_refresh_is_a_usage_error_not_ignored():
    # it would otherwise refresh every region (many GB for AWS) while the user asked for one
    r = cli("--region", "us-east-1", "refresh", "aws")
    assert r.exit_code == 2
    assert re.search(r"Invalid value for '--region': it narrows the listing, not `refresh`", r.stderr)
