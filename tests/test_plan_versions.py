"""plan.json's schema_version: every earlier version the tests hold is read and upgraded by the
one reader (compiler/plan_reader.py), and a version later than the compiler knows is refused.

tests/fixtures/plans/ holds plan.json files earlier compilers wrote (the hybrid example's golden
plan as committed on the day in the name): version 1, before plan.json stated a version. The
first lacks most fields added since (holdings, placement layouts, monthly series, idle_owned,
after_horizon ...); the last lacks only schema_version."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from compiler import plan_reader
from compiler.cli import _route, app
from compiler.diagnostics import CompileError
from compiler.diff import diff_plans, diff_to_json
from compiler.plan import SCHEMA_VERSION, VERSIONS, from_dict, to_dict, to_json
from compiler.resources import schema
from plan_fixtures import hybrid_plan

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "plans"
OLDEST, NEWEST_V1 = FIXTURES / "v1-2026-11-22-hybrid.plan.json", FIXTURES / "v1-2026-11-28-hybrid.plan.json"
GOLDEN = ROOT / "tests" / "golden" / "examples" / "hybrid-llm-platform" / "plan.json"

# Keys the first plan.json (2026-11-22) had, by where they are: version 1's oldest shape.
FIRST = {
    "top": {"spec", "catalog", "horizon_months", "solver", "total_cost_usd", "cost_breakdown_usd", "sites",
            "pools", "workloads", "storage", "binding_constraints", "monthly_cost_usd", "breakeven"},
    "solver": {"name", "status", "objective_usd", "best_bound_usd", "gap", "seconds"},
    "pool": {"site", "instance", "gpu", "gpus_per_node", "nodes", "pricing", "fabric", "monthly_nodes",
             "monthly_utilization"},
    "workload": {"name", "kind", "gpu", "gpus", "layout", "placements", "estimate", "cost_usd", "orchestrator",
                 "start_month", "alternatives"},
    "placement": {"site", "instance", "pricing", "nodes", "gpus", "replicas"},
    "layout": {"tp", "pp", "dp", "ep"},
    "storage": {"site", "tier", "capacity_tb", "cost_usd"},
}


def earlier() -> list[Path]:
    return sorted(FIXTURES.glob("v*.plan.json"))


def _version_of(path: Path) -> int:
    return int(path.name[1:].split("-", 1)[0])


def _strip_to_first(doc: dict) -> dict:
    """A current plan.json cut back to the first plan.json's keys (no schema_version): a
    pre-version plan made from today's fixture."""
    doc = copy.deepcopy(doc)

    def keep(obj: dict, where: str) -> None:
        for key in list(obj):
            if key not in FIRST[where]:
                del obj[key]
    keep(doc, "top")
    keep(doc["solver"], "solver")
    for p in doc["pools"]:
        keep(p, "pool")
    for s in doc["storage"]:
        keep(s, "storage")
    for w in doc["workloads"]:
        keep(w, "workload")
        keep(w["layout"], "layout")
        for p in w["placements"]:
            keep(p, "placement")
        for a in w["alternatives"]:
            a.pop("parts", None)
    return doc


def _required_missing(doc: dict) -> list:
    """Where the upgraded document lacks a key this version's schema requires."""
    validator = jsonschema.Draft202012Validator(schema("plan.schema.json"))
    return [(list(e.absolute_path), e.message) for e in validator.iter_errors(doc) if e.validator == "required"]


def test_the_fixtures_are_of_every_earlier_version():
    held = {_version_of(p) for p in earlier()}
    assert held == set(range(1, SCHEMA_VERSION)), "hold a plan.json of each earlier version"
    assert set(VERSIONS) == set(range(1, SCHEMA_VERSION + 1))
    assert set(plan_reader._UPGRADES) == set(range(1, SCHEMA_VERSION))
    for path in earlier():
        assert "schema_version" not in json.loads(path.read_text(encoding="utf-8"))


def test_the_compiler_writes_its_version():
    doc = to_dict(hybrid_plan())
    assert doc["schema_version"] == SCHEMA_VERSION
    assert json.loads(GOLDEN.read_text(encoding="utf-8"))["schema_version"] == SCHEMA_VERSION
    assert "schema_version" in schema("plan.schema.json")["required"]


@pytest.mark.parametrize("path", earlier(), ids=lambda p: p.name)
def test_an_earlier_plan_reads_and_upgrades(path):
    doc = json.loads(path.read_text(encoding="utf-8"))
    plan = plan_reader.read(path, complete=False)
    upgraded = plan_reader.upgrade(path, copy.deepcopy(doc))
    assert upgraded["schema_version"] == SCHEMA_VERSION
    # every key this version requires is there: nothing after the reader meets an older shape
    assert _required_missing(upgraded) == []
    assert from_dict(upgraded) == plan
    assert (plan.spec_name, plan.total_cost_usd) == (doc["spec"]["name"], doc["total_cost_usd"])
    assert [w.name for w in plan.workloads] == [w["name"] for w in doc["workloads"]]
    horizon = doc["horizon_months"]
    for w, raw in zip(plan.workloads, doc["workloads"]):
        for p, rp in zip(w.placements, raw["placements"]):
            # a placement without its own layout ran its workload's
            expected = rp.get("layout", raw["layout"])
            assert (p.layout.tp, p.layout.pp) == (expected["tp"], expected["pp"])
            assert (p.layout.cp, p.layout.ep) == (expected.get("cp", 1), expected.get("ep", 1))
        if w.kind == "inference":
            assert w.replicas == raw.get("replicas", sum(p["replicas"] for p in raw["placements"]))
    for p, raw in zip(plan.pools, doc["pools"]):
        assert p.monthly_nodes == tuple(raw.get("monthly_nodes", [raw["nodes"]] * horizon))
        assert p.reservations == () or "reservations" in raw
    assert plan.after_horizon.rule == doc.get("after_horizon", {}).get("rule", "prorated")
    # and compares with a plan of this version
    today = plan_reader.read(GOLDEN, complete=False)
    d = diff_plans(plan, today)
    assert {w.name for w in d.workloads} == {w.name for w in plan.workloads} | {w.name for w in today.workloads}
    json.dumps(diff_to_json(d))


def test_a_pre_version_plan_made_from_todays_fixture_upgrades(tmp_path):
    current = to_dict(hybrid_plan())
    old = _strip_to_first(current)
    assert "schema_version" not in old and "holdings" not in old["workloads"][0]["placements"][0]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(old), encoding="utf-8")
    plan = plan_reader.read(path, complete=False)
    up = to_dict(plan)
    assert up["schema_version"] == SCHEMA_VERSION
    assert _required_missing(up) == []
    # what the first plan.json had reads back as it was written
    assert _strip_to_first(up)["pools"] == old["pools"]
    assert [w["placements"] for w in _strip_to_first(up)["workloads"]] == [w["placements"] for w in old["workloads"]]
    # what it lacked means what its absence meant
    assert up["idle_owned"] == [] and up["after_horizon"]["rule"] == "prorated"
    assert up["solver"]["strategy"] == {"path": "", "steps": [], "why": ""}
    for w in up["workloads"]:
        assert all(p["holdings"] == [] and p["monthly_replicas"] == [] for p in w["placements"])
        assert w["layout"]["cp"] == 1
    # a baseline must hold what a re-plan carries: refused, saying an older release wrote it
    with pytest.raises(CompileError) as err:
        plan_reader.read(path, complete=True)
    [d] = err.value.diagnostics
    assert d.code == "E010" and "missing key" in d.message and "older infra-compile" in d.hint


def test_a_complete_version_1_plan_is_a_baseline_and_the_oldest_is_not():
    plan = plan_reader.read(NEWEST_V1, complete=True)
    assert plan == plan_reader.read(NEWEST_V1, complete=False)
    with pytest.raises(CompileError) as err:
        plan_reader.read(OLDEST, complete=True)
    assert "older infra-compile" in err.value.diagnostics[0].hint


def test_a_plan_of_this_version_must_be_complete(tmp_path):
    # a key this version requires, missing, is a damaged file, not an older one
    doc = to_dict(hybrid_plan())
    del doc["workloads"][0]["placements"][0]["holdings"]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(CompileError) as err:
        plan_reader.read(path, complete=False)
    [d] = err.value.diagnostics
    assert d.code == "E010" and "missing key 'holdings'" in d.message


def _cli(*args: str):
    return CliRunner().invoke(app, _route(list(args)))


@pytest.mark.parametrize("version", [SCHEMA_VERSION + 1, 99])
def test_a_newer_plan_is_refused_with_a_hint_to_upgrade(tmp_path, version):
    doc = json.loads(to_json(hybrid_plan()))
    doc["schema_version"] = version
    doc["a_field_from_the_future"] = {"x": 1}
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps(doc), encoding="utf-8")
    result = _cli("diff", str(GOLDEN), str(newer))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"{newer}:") and "E010" in first
    assert f"schema_version {version}" in result.stderr and "newer infra-compile" in result.stderr
    assert "upgrade infra-compile" in result.stderr
    with pytest.raises(CompileError) as err:
        plan_reader.read(newer, complete=True)
    assert err.value.diagnostics[0].path == ("schema_version",)


@pytest.mark.parametrize("value", [0, -1, "2", 1.5, True, None, [2]])
def test_a_version_that_is_no_version_is_refused(tmp_path, value):
    doc = json.loads(to_json(hybrid_plan()))
    doc["schema_version"] = value
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(CompileError) as err:
        plan_reader.read(path, complete=False)
    d = err.value.diagnostics[0]
    assert d.code in ("E010", "E014") and d.path == ("schema_version",)
