"""Storage a site already has, storage sized to the need, and owned nodes left idle.

The oracle shares no code with compiler/appraise/idle.py or the optimizer's storage terms: it
reads plan.json, the spec's YAML, the catalog's data files (compiler/catalog/data/*.yaml) and the
estimate stage's candidates (node-hours and node counts, which the estimate owns), and prices
again by the rule compiler/appraise/idle.py's docstring states.

REPRO is the reported scenario: a data centre owning two DGX H100 and an 8B fine-tune on a 5 TB
data set homed there. Without a storage declaration the cheapest way to use the owned nodes buys
a storage tier at its minimum, dearer than renting cloud GPUs with cloud storage, so the owned
nodes sit idle; with `storage: {existing_tb: 200}` the plan runs on them and buys no storage.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

import jsonschema
import pytest
import yaml

from examples_cache import ROOT, example

HOURS = 730.0
CENT = 0.011

REPRO = """\
apiVersion: infra-compile/v1
name: estate
horizon_months: 12
sites:
  - name: aws-use1
    type: cloud
    provider: aws
    region: us-east-1
    pricing: [on_demand, spot]
  - name: dc1
    type: on_prem
    power_kw: 1
    electricity_usd_per_kwh: 0.12
    pue: 1.3
    max_racks: 4
    owned:
      - {instance: dgx-h100, nodes: 2}
{storage}policy:
  placement: hybrid
workloads:
  - name: ft-8b
    kind: training
    model: llama-3-8b
    tokens: 2.0e10
    window: {start_month: 0, deadline_days: 14}
    interruptible: true
    data: {dataset_tb: 5, home: dc1}
{pin}"""

DECLARED = "    storage: {existing_tb: 200}\n"

BIG = """\
apiVersion: infra-compile/v1
name: estate-big
horizon_months: 12
sites:
  - name: aws-use1
    type: cloud
    provider: aws
    region: us-east-1
    pricing: [on_demand]
  - name: dc1
    type: on_prem
    power_kw: 1
    electricity_usd_per_kwh: 0.12
    pue: 1.3
    max_racks: 4
    owned:
      - {instance: l40s-server, nodes: 1}
policy:
  placement: hybrid
workloads:
  - name: pretrain-70b
    kind: training
    model: llama-3-70b
    tokens: 1.0e10
    window: {start_month: 0, deadline_days: 20}
"""

SPECS = {
    "undeclared": REPRO.replace("{storage}", "").replace("{pin}", ""),
    "declared": REPRO.replace("{storage}", DECLARED).replace("{pin}", ""),
    "pinned-away": REPRO.replace("{storage}", "").replace("{pin}", "    pin: {site: aws-use1}\n"),
    "too-big": BIG,
    "pinned-purchase": REPRO.replace("{storage}", DECLARED).replace("{pin}", "    pin: {pricing: purchase}\n")
                            .replace("power_kw: 1\n", "power_kw: 30\n"),
}


@lru_cache(maxsize=None)
def compiled(name: str, tmp: str):
    from compiler import pipeline
    if name.startswith("example:"):
        _cands, result = example(name.split(":", 1)[1])
        text = (ROOT / "examples" / f"{name.split(':', 1)[1]}.yaml").read_text(encoding="utf-8")
    else:
        text = SPECS[name]
        path = Path(tmp) / f"{name}.yaml"
        path.write_text(text, encoding="utf-8")
        result = pipeline.compile_spec(path)
    spec = next(d for d in yaml.safe_load_all(text) if d)
    return spec, json.loads(result.artifacts["plan.json"]), result.artifacts["report.md"], result.candidates


@pytest.fixture(scope="module")
def tmp(tmp_path_factory):
    return str(tmp_path_factory.mktemp("estate"))


# --- the catalog, read directly ---------------------------------------------------------------

@lru_cache(maxsize=None)
def catalog() -> dict:
    data = ROOT / "compiler" / "catalog" / "data"
    read = lambda name: yaml.safe_load((data / name).read_text(encoding="utf-8"))  # noqa: E731
    storage = read("storage.yaml")
    return {"nodes": read("onprem.yaml")["onprem_nodes"], "storage": storage["storage"],
            "egress": storage["egress"], "sources": {**read("sources.yaml")["sources"], **storage["sources"]}}


def onprem_tiers() -> dict[str, dict]:
    return {n: t for n, t in catalog()["storage"].items() if t["provider"] == "on_prem"}


def sites(spec) -> dict[str, dict]:
    return {s["name"]: s for s in spec["sites"]}


def money(x: float) -> str:
    """As the report writes money (cents below $10)."""
    digits = 2 if 0 < abs(x) < 10 else 0
    return f"${abs(x):,.{digits}f}"


def storage_alone(site: dict, tb: float, months: int) -> tuple[float, str]:
    """Cheapest on-prem tier holding what the site's existing storage does not, for `months`."""
    beyond = tb - (site.get("storage") or {}).get("existing_tb", 0.0)
    if beyond <= 1e-9 or months == 0:
        return 0.0, ""
    return min((max(beyond, t["min_tb"]) * (t["capex_usd_per_tb"] + t["usd_per_tb_month"] * months), n)
               for n, t in onprem_tiers().items())


STATE_BYTES = {("bf16", "adamw"): 16.0}   # bf16 weights + grads (2 + 2), fp32 Adam m, v, master (12)


def checkpoint_tb(w: dict) -> float:
    """keep x model-state bytes of a catalog model, in TB (the spec reference's checkpoint rule)."""
    models = yaml.safe_load((ROOT / "compiler" / "catalog" / "data" / "models.yaml").read_text(encoding="utf-8"))
    params = models["models"][w["model"]]["params_b"] * 1e9
    per_param = STATE_BYTES[(w.get("precision", "bf16"), w.get("optimizer", "adamw"))]
    return (w.get("checkpoint") or {}).get("keep", 3) * params * per_param / 1e12


# --- (a) the reported scenario ----------------------------------------------------------------

def test_owned_nodes_sit_idle_without_a_storage_declaration(tmp):
    """The problem as reported: the owned H100s idle, the fine-tune rented in the cloud."""
    _spec, plan, report, _c = compiled("undeclared", tmp)
    assert not any(p["site"] == "dc1" and any(p["monthly_nodes"]) for p in plan["pools"])
    ft = next(w for w in plan["workloads"] if w["name"] == "ft-8b")
    assert {p["site"] for p in ft["placements"]} == {"aws-use1"}
    rows = [r for r in plan["idle_owned"] if r["site"] == "dc1"]
    assert [(r["workload"], r["reason"], r["detail"]) for r in rows] == [("ft-8b", "dearer", "storage")]
    assert "purchase" not in next(line for line in report.splitlines() if line.startswith("| dc1 dgx-h100 (owned)"))


def test_declared_storage_puts_the_job_on_the_owned_nodes_and_buys_none_there(tmp):
    spec, plan, report, _c = compiled("declared", tmp)
    ft = next(w for w in plan["workloads"] if w["name"] == "ft-8b")
    assert [(p["site"], p["instance"], p["pricing"]) for p in ft["placements"]] == [("dc1", "dgx-h100", "owned")]
    assert not [s for s in plan["storage"] if s["site"] == "dc1"]
    assert plan["cost_breakdown_usd"]["storage"] == 0 and plan["cost_breakdown_usd"]["capex"] == 0
    # what is left is power only: node-hours x kW x PUE x $/kWh, from plan.json and the catalog
    node = catalog()["nodes"]["dgx-h100"]
    dc = sites(spec)["dc1"]
    hours = sum(h for p in plan["pools"] if p["site"] == "dc1" for h in p["monthly_node_hours"])
    assert plan["total_cost_usd"] == pytest.approx(hours * node["power_kw"] * dc["pue"]
                                                   * dc["electricity_usd_per_kwh"], abs=CENT)
    undeclared = compiled("undeclared", tmp)[1]
    assert plan["total_cost_usd"] < undeclared["total_cost_usd"]


def test_audit_holds_existing_storage_against_the_need(tmp):
    """The audit counts the declared storage: a plan with none bought at dc1 passes it, and the
    same plan against the undeclared spec is short of storage there."""
    from dataclasses import replace

    from compiler.audit import audit, codes
    from compiler.plan import from_dict
    _spec, plan, _r, cands = compiled("declared", tmp)
    assert not audit(cands.spec, cands.catalog, cands, from_dict(plan))
    dc = next(s for s in cands.spec.sites if s.name == "dc1")
    bare = replace(cands.spec, sites=tuple(replace(s, existing_storage_tb=0.0) if s is dc else s
                                           for s in cands.spec.sites))
    found = audit(bare, cands.catalog, replace(cands, spec=bare), from_dict(plan))
    assert codes.STORAGE_SHORT in {f.code for f in found}


# --- (b) storage sized to the need --------------------------------------------------------------

def test_onprem_vision_buys_the_small_tier_at_its_minimum():
    _cands, result = example("onprem-vision")
    plan = json.loads(result.artifacts["plan.json"])
    (st,) = plan["storage"]
    tier = catalog()["storage"][st["tier"]]
    assert st["tier"] == "onprem-nfs" and tier["provider"] == "on_prem"
    months = sum(1 for tb in st["monthly_tb"] if tb > 0)
    # the need is well below the tier's minimum, so it buys the minimum: capex + monthly charge
    assert st["capacity_tb"] == pytest.approx(tier["min_tb"])
    expected = tier["min_tb"] * (tier["capex_usd_per_tb"] + tier["usd_per_tb_month"] * months)
    assert st["cost_usd"] == pytest.approx(expected, abs=CENT)
    lustre = catalog()["storage"]["onprem-lustre"]
    assert st["cost_usd"] < lustre["min_tb"] * lustre["capex_usd_per_tb"] / 5
    assert plan["cost_breakdown_usd"]["storage"] == pytest.approx(expected, abs=CENT)


def test_every_onprem_tier_has_a_dated_source():
    cat = catalog()
    for name, tier in onprem_tiers().items():
        src = cat["sources"][tier["source"]]
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(src["as_of"])) and src["url"].startswith("https://"), name
        assert tier["min_tb"] > 0 and tier["capex_usd_per_tb"] > 0


# --- (c) owned nodes left idle: the oracle -----------------------------------------------------

def allowed_here(spec, w: dict, site: str, instance: str) -> str | None:
    """The spec's rule that keeps w off (site, instance), as the spec reference states the rules."""
    gpu = catalog()["nodes"][instance]["gpu"]
    pol = spec.get("policy", {})
    pin = w.get("pin") or {}
    if pol.get("placement") == "cloud":
        return "policy.placement is cloud"
    if pol.get("allowed_gpus") is not None and gpu not in pol["allowed_gpus"]:
        return f"{gpu} not in policy.allowed_gpus"
    if w.get("sites") and site not in w["sites"]:
        return f"{site} not in the workload's sites"
    for key, here in (("site", site), ("gpu", gpu), ("instance", instance)):
        if pin.get(key) and pin[key] != here:
            return f"pinned to {key} {pin[key]}"
    if pin.get("pricing") in ("on_demand", "spot", "reserved_1y", "reserved_3y"):
        return f"pinned to {pin['pricing']} pricing (cloud)"
    if pin.get("pricing") == "purchase":
        return "pinned to bought nodes"
    return None


def idle_runs(spec, plan) -> list[tuple[str, str, int, int, int, int]]:
    """(site, model, owned, most idle, first, last) per run of months with idle owned nodes."""
    H = spec["horizon_months"]
    out = []
    for s in spec["sites"]:
        for inst in sorted({o["instance"] for o in s.get("owned", ())}):
            owned = sum(o["nodes"] for o in s["owned"] if o["instance"] == inst)
            held = [0] * H
            for p in plan["pools"]:
                if p["site"] == s["name"] and p["instance"] == inst and p["pricing"] == "owned":
                    held = [a + b for a, b in zip(held, p["monthly_nodes"])]
            idle = [owned - n for n in held]
            m = 0
            while m < H:
                if idle[m] <= 0:
                    m += 1
                    continue
                first = m
                while m + 1 < H and idle[m + 1] > 0:
                    m += 1
                out.append((s["name"], inst, owned, max(idle[first:m + 1]), first, m))
                m += 1
    return out


def owned_option(spec, plan, cands, w: dict, site: str, inst: str, owned: int):
    """The cheapest training candidate on owned nodes of (site, inst) alone: power + egress + the
    storage it forces; None where none fits the owned count."""
    dc = sites(spec)[site]
    node = catalog()["nodes"][inst]
    H = spec["horizon_months"]
    data = w.get("data") or {}
    best = None
    for c in cands.by_workload[w["name"]]:
        if c.site != site or c.instance != inst or c.spot or c.nodes > owned:
            continue
        hours = sum(h for _m, h in c.usage)
        power = c.nodes * hours * node["power_kw"] * dc["pue"] * dc["electricity_usd_per_kwh"]
        egress = 0.0
        if data.get("home") and data["home"] != site and data.get("dataset_tb"):
            home = sites(spec)[data["home"]]
            prov = home["provider"] if home["type"] == "cloud" else "on_prem"
            egress = data["dataset_tb"] * 1000 * catalog()["egress"][prov]["usd_per_gb"]
        months = sum(1 for m, h in c.usage if m < H and h > 0)
        best_c = (power + egress, c.id, power, egress, months)
        best = best_c if best is None or best_c[:2] < best[:2] else best
    return best


CASES = ("undeclared", "declared", "pinned-away", "too-big", "pinned-purchase", pytest.param("example:hybrid-llm-platform", marks=pytest.mark.slow),
         "example:onprem-vision")


@pytest.mark.parametrize("name", CASES)
def test_idle_owned_rows_recomputed(name, tmp):
    spec, plan, report, cands = compiled(name, tmp)
    schema = json.loads((ROOT / "schemas" / "plan.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(plan)
    rows = plan["idle_owned"]
    runs = idle_runs(spec, plan)
    assert sorted({(r["site"], r["instance"], r["owned_nodes"], r["idle_nodes"], r["first_month"],
                    r["last_month"]) for r in rows}) == sorted(runs)
    costs = {w["name"]: w["cost_usd"] for w in plan["workloads"]}
    for r in rows:
        assert r["months"] == (str(r["first_month"]) if r["first_month"] == r["last_month"]
                               else f"{r['first_month']}-{r['last_month']}")
        line = next((ln for ln in report.splitlines()
                     if ln.startswith(f"| {r['site']} {r['instance']} (owned) | {r['idle_nodes']} of "
                                      f"{r['owned_nodes']} | {r['months']} | {r['workload'] or '-'} |")), None)
        assert line is not None, r
        assert "purchase" not in line
        if r["reason"] == "no_workload":
            continue
        w = next(x for x in spec["workloads"] if x["name"] == r["workload"])
        assert r["plan_usd"] == pytest.approx(costs[w["name"]], abs=CENT)
        rule = allowed_here(spec, w, r["site"], r["instance"])
        if r["reason"] == "not_allowed":
            here = [c for c in cands.by_workload[w["name"]] if c.site == r["site"] and c.instance == r["instance"]]
            assert rule is not None or not here, r
            if rule:
                assert r["detail"] == rule and rule in line
            continue
        assert rule is None, r
        assert w["kind"] == "training", "services are priced by their demand: not covered here"
        best = owned_option(spec, plan, cands, w, r["site"], r["instance"], r["owned_nodes"])
        if r["reason"] == "too_big":
            assert best is None, r
            continue
        opt = best
        assert r["candidate"] == opt[1], r
        dc = sites(spec)[r["site"]]
        need = (w.get("data") or {}).get("dataset_tb", 0.0) + checkpoint_tb(w)
        assert r["data_tb"] == pytest.approx(need, abs=1e-3)
        storage, tier = storage_alone(dc, need, opt[4])
        assert r["storage_usd"] == pytest.approx(storage, abs=CENT) and r["storage_tier"] == tier
        assert r["power_usd"] == pytest.approx(opt[2], abs=CENT)
        assert r["egress_usd"] == pytest.approx(opt[3], abs=CENT)
        total = opt[2] + opt[3] + storage
        assert r["owned_option_usd"] == pytest.approx(total, abs=2 * CENT)
        assert r["reason"] == ("dearer" if total > costs[w["name"]] + 0.005 else "cheaper_alone")
        parts = {"storage": storage, "power": opt[2], "egress": opt[3]}
        assert r["detail"] == max(parts, key=lambda k: (parts[k], k))
        for figure in (total, costs[w["name"]], storage, opt[2]):
            if figure:
                assert money(figure) in line, (figure, line)


def test_idle_reasons_name_what_kept_each_job_away(tmp):
    """One case per reason: the storage minimum, a pin, memory; and none where the job runs there."""
    und = compiled("undeclared", tmp)[1]["idle_owned"]
    assert [(r["reason"], r["detail"], r["storage_tier"]) for r in und] == [("dearer", "storage", "onprem-nfs")]
    assert und[0]["storage_usd"] > und[0]["plan_usd"] > und[0]["power_usd"]
    away = compiled("pinned-away", tmp)[1]["idle_owned"]
    assert [(r["reason"], r["detail"]) for r in away] == [("not_allowed", "pinned to site aws-use1")]
    big = compiled("too-big", tmp)[1]["idle_owned"]
    assert [r["reason"] for r in big] == ["not_allowed"] and "GB/GPU" in big[0]["detail"]
    bought = compiled("pinned-purchase", tmp)[1]["idle_owned"]
    assert [(r["reason"], r["detail"]) for r in bought] == [("not_allowed", "pinned to bought nodes")]
    declared = compiled("declared", tmp)[1]["idle_owned"]
    assert all(r["workload"] == "" for r in declared)


# --- the model's storage rows with existing storage ------------------------------------------------

def test_existing_storage_lowers_the_storage_row_and_drops_the_cut_it_would_break(tmp):
    """Row (11) at dc1 gets -existing_tb on its right-hand side; the valid inequality "a job with
    data here opens a tier" stays only for jobs with more data than the site already has (with
    200 TB a 5.4 TB job opens nothing, so that cut would cut off the optimum)."""
    from dataclasses import replace

    from compiler.optimize.formulate import formulate
    cands = compiled("declared", tmp)[3]
    rows = {c.name: c for c in formulate(cands).constraints}
    dc1 = [c for n, c in rows.items() if n.startswith("storage[dc1@")]
    assert dc1 and all(c.rhs == -200.0 for c in dc1)
    assert not [n for n in rows if n.startswith("storage_used[dc1/")]
    dc = next(s for s in cands.spec.sites if s.name == "dc1")
    small = replace(cands.spec, sites=tuple(replace(s, existing_storage_tb=1.0) if s is dc else s
                                            for s in cands.spec.sites))
    rows = {c.name: c for c in formulate(replace(cands, spec=small)).constraints}
    assert all(c.rhs == -1.0 for n, c in rows.items() if n.startswith("storage[dc1@"))
    assert [n for n in rows if n.startswith("storage_used[dc1/ft-8b@")]
