"""How old the prices a plan was solved with are: plan.json's stamp, the compile's warning (C010),
`diff` on plans priced apart, and the catalog's listing of each region's prices' dates.

The oracle for which prices a spec could be planned with reads the catalog's YAML files itself
(no compiler code): every price row of the spec's cloud sites' provider and region, and every
on-prem node model where the spec has a site of its own."""

from __future__ import annotations

import datetime as dt
import io
import json
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest
import yaml
from rich.console import Console

from compiler import pipeline
from compiler.catalog import freshness, load_catalog, tables
from compiler.diff import cautions, diff_plans
from compiler.plan import from_dict, to_dict
from plan_fixtures import hybrid_plan

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "compiler" / "catalog" / "data"
EXAMPLES = ROOT / "examples"


def _raw():
    """(sources key -> as_of, instances name -> record, onprem name -> record) from the YAML."""
    sources, instances, nodes = {}, {}, {}
    for path in sorted(DATA.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text()) or {}
        sources.update({k: v["as_of"] for k, v in (doc.get("sources") or {}).items()})
        instances.update(doc.get("instances") or {})
        nodes.update(doc.get("onprem_nodes") or {})
    return sources, instances, nodes


def _oracle_as_of(spec_path: Path) -> str:
    """The oldest as_of of the prices the spec's sites could be planned with, from the files."""
    sources, instances, nodes = _raw()
    dates = []
    for site in yaml.safe_load(spec_path.read_text())["sites"]:
        if site["type"] == "cloud":
            dates += [sources[row["source"]] for inst in instances.values() if inst["provider"] == site["provider"]
                      for region, row in inst["prices"].items() if region == site["region"]]
        else:
            dates += [sources[n["source"]] for n in nodes.values()]
    return min(dates)


@pytest.mark.parametrize("example", ["llm-pretrain-aws", "hybrid-llm-platform", "multi-region-inference",
                                     "onprem-vision"])
def test_the_stamp_is_the_oldest_price_the_spec_could_be_planned_with(example):
    spec, cat, _ = pipeline.validate(EXAMPLES / f"{example}.yaml")
    got = freshness.stamp(spec, cat)
    assert got is not None and got.as_of == _oracle_as_of(EXAMPLES / f"{example}.yaml")
    assert cat.sources[got.source].as_of == got.as_of
    assert len(got.sha256) == 64


def test_an_overlay_price_changes_the_digest_and_only_a_price_the_spec_can_use_does(tmp_path):
    spec, cat, _ = pipeline.validate(EXAMPLES / "llm-pretrain-aws.yaml")
    base = freshness.stamp(spec, cat)
    region = spec.sites[0].region
    used = tmp_path / "used.yaml"
    used.write_text("sources:\n  ours: {title: negotiated, url: 'https://example.com', as_of: '2026-11-27'}\n"
                    f"instances:\n  p5.48xlarge:\n    prices:\n      {region}: {{on_demand: 40.0, source: ours}}\n")
    unused = tmp_path / "unused.yaml"      # a region no site of the spec is in
    unused.write_text("sources:\n  ours: {title: negotiated, url: 'https://example.com', as_of: '2026-11-27'}\n"
                      "instances:\n  p5.48xlarge:\n    prices:\n      us-west-1: {on_demand: 40.0, spot: null, "
                      "reserved_1y: null, reserved_3y: null, source: ours}\n")
    assert freshness.stamp(spec, load_catalog(str(used))).sha256 != base.sha256
    assert freshness.stamp(spec, load_catalog(str(unused))).sha256 == base.sha256


def test_stale_prices_warn_once_per_site_at_its_region():
    spec, cat, doc = pipeline.validate(EXAMPLES / "llm-pretrain-aws.yaml")
    warned = []
    oldest = _oracle_as_of(EXAMPLES / "llm-pretrain-aws.yaml")
    day = dt.date.fromisoformat(oldest) + dt.timedelta(days=91)
    pipeline._warn_stale_prices(spec, cat, doc, pipeline.CompileOptions(
        warn=lambda diags, source: warned.extend(diags), today=day))
    clouds = [i for i, s in enumerate(spec.sites) if s.type == "cloud"]
    assert [d.path for d in warned] == [("sites", i, "region") for i in clouds]
    assert all(d.code == "C010" and d.severity == "warning" and "91 days old" in d.message
               and f"as of {oldest}" in d.message for d in warned)
    assert "infra-compile catalog refresh aws" in warned[0].hint
    # a day younger, or a larger allowance: no warning
    for options in (dict(today=day - dt.timedelta(days=1)), dict(today=day, max_price_age_days=91)):
        warned.clear()
        pipeline._warn_stale_prices(spec, cat, doc, pipeline.CompileOptions(
            warn=lambda diags, source: warned.extend(diags), **options))
        assert warned == []


def test_the_plan_json_stamp_round_trips_and_the_schema_takes_it():
    plan = replace(hybrid_plan(), prices_as_of="2026-11-22", prices_sha256="a" * 64)
    d = to_dict(plan)
    assert d["catalog"] == {"version": plan.catalog_version, "prices_as_of": "2026-11-22", "prices_sha256": "a" * 64}
    jsonschema.validate(json.loads(json.dumps(d)), json.loads((ROOT / "schemas/plan.schema.json").read_text()))
    assert from_dict(d) == plan
    # a plan that does not say has no keys, and reads back as not saying
    bare = to_dict(hybrid_plan())
    assert set(bare["catalog"]) == {"version"} and from_dict(bare).prices_as_of == ""


def test_diff_names_plans_priced_apart_by_version_or_by_prices():
    a = replace(hybrid_plan(), prices_as_of="2026-11-22", prices_sha256="a" * 64)
    same = cautions(diff_plans(a, a))
    assert not any("different catalogs" in c for c in same)
    refreshed = replace(a, prices_as_of="2026-12-05", prices_sha256="b" * 64)
    said = [c for c in cautions(diff_plans(a, refreshed)) if "different catalogs" in c]
    assert said and "2026-11-22" in said[0] and "2026-12-05" in said[0]
    other_version = replace(a, catalog_version="2026.12.0")
    assert any("different catalogs (" in c for c in cautions(diff_plans(a, other_version)))
    # a plan written before plans were stamped compares by version alone
    old = replace(a, prices_as_of="", prices_sha256="")
    assert not any("different catalogs" in c for c in cautions(diff_plans(old, refreshed)))


def test_the_regions_section_lists_each_regions_instances_with_their_oldest_price():
    sources, instances, _ = _raw()
    expected = {}
    for name, inst in instances.items():
        for region, row in inst["prices"].items():
            expected.setdefault((inst["provider"], region), []).append((name, sources[row["source"]]))
    out = io.StringIO()
    tables.render_catalog(load_catalog(), Console(file=out, width=1000), "regions")
    lines = [ln for ln in out.getvalue().splitlines() if ln.startswith("│")]
    rows, key = {}, None
    for ln in lines:
        cells = [c.strip() for c in ln.strip("│").split("│")]
        if cells[0]:
            key = (cells[0], cells[1])
            rows[key] = [cells[2], cells[4]]
        else:       # a wrapped row's next line
            rows[key][0] += " " + cells[2]
    rows = {k: ({n.strip() for n in text.split(",") if n.strip()}, as_of) for k, (text, as_of) in rows.items()}
    assert rows == {k: ({n for n, _ in v}, min(a for _, a in v)) for k, v in expected.items()}


def test_the_sources_section_names_the_oldest_price():
    sources, instances, nodes = _raw()
    keys = {row["source"] for inst in instances.values() for row in inst["prices"].values()}
    keys |= {n["source"] for n in nodes.values()}
    as_of, key = min((sources[k], k) for k in keys)
    out = io.StringIO()
    tables.render_catalog(load_catalog(), Console(file=out, width=400), "sources")
    assert f"oldest price: {key}, as of {as_of}" in out.getvalue()


@pytest.mark.slow
def test_compile_warns_on_stderr_and_the_flag_sets_the_age(tmp_path):
    import os
    import subprocess
    import sys

    def run(*flags):
        return subprocess.run([sys.executable, "-m", "compiler", str(EXAMPLES / "onprem-vision.yaml"), "-q",
                               "-o", str(tmp_path / "out"), *flags], capture_output=True, text=True,
                              env=dict(os.environ, SOURCE_DATE_EPOCH=str(int(dt.datetime(2027, 6, 1,
                                       tzinfo=dt.timezone.utc).timestamp()))))
    old = run()
    assert old.returncode == 0 and "warning[C010] at $.sites[0]" in old.stderr
    assert "--max-price-age DAYS" in old.stderr
    young = run("--max-price-age", "400")
    assert young.returncode == 0 and "C010" not in young.stderr
    # the warning is not in what the compile writes: the same bytes either way
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert plan["catalog"]["prices_as_of"] == _oracle_as_of(EXAMPLES / "onprem-vision.yaml")
