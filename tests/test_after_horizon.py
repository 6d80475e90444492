"""Commitments that outlive the horizon (policy.after_horizon; docs/optimizer.md, "Commitments that
outlive the horizon").

The oracle re-prices every commitment from plan.json and the catalog's prices alone: under `full`
each reserved term costs all its months (12 or 36) at its rate, and each bought node its whole
purchase price, whatever month it starts in; under `prorated` the months inside the
horizon, and the months after it are listed but not charged. Nothing here reads the model's
variables.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from compiler.catalog import load_catalog
from compiler.pipeline import CompileOptions, compile_spec
from compiler.plan import to_dict
from examples_cache import EXAMPLES, example, example_params

TERM = {"reserved_1y": 12, "reserved_3y": 36}
HOURS = 730

# A service on L40S in us-east-1 whose traffic grows 8% a month and runs to the end of a 24-month
# horizon: the terms that cover its later months outlive the horizon.
LATE_TERMS = """\
apiVersion: infra-compile/v1
name: late-terms
horizon_months: 24
sites:
  - name: aws-use1
    type: cloud
    provider: aws
    region: us-east-1
    pricing: [on_demand, reserved_1y, reserved_3y]
policy:
  placement: cloud
  allowed_gpus: [L40S]{extra}
workloads:
  - name: chat-8b
    kind: inference
    model: llama-3-8b
    quantization: bf16
    traffic: {{peak_rps: 20, input_tokens: 600, output_tokens: 150, growth_per_month: 0.08}}
    slo: {{ttft_p99_ms: 800, tpot_p99_ms: 60}}
"""

# A data centre with no owned nodes and room to buy, 24 months against a 5-year useful life.
BUY = """\
apiVersion: infra-compile/v1
name: buy-short
horizon_months: 24
sites:
  - name: dc
    type: on_prem
    power_kw: 200
    electricity_usd_per_kwh: 0.12
    pue: 1.3
    max_racks: 4
policy:
  placement: on_prem{extra}
workloads:
  - name: chat-8b
    kind: inference
    model: llama-3-8b
    quantization: bf16
    traffic: {{peak_rps: 20, input_tokens: 600, output_tokens: 150}}
    slo: {{ttft_p99_ms: 800, tpot_p99_ms: 60}}
"""


def _compiled(tmp_path: Path, text: str, rule: str | None = "full", proven: bool = False):
    extra = f"\n  after_horizon: {rule}" if rule else ""
    path = tmp_path / f"spec-{rule or 'default'}.yaml"
    path.write_text(text.format(extra=extra), encoding="utf-8")
    # proven: searched to the optimum (--gap 0.0001), where a test compares optima
    return compile_spec(path, CompileOptions(gap=1e-4) if proven else CompileOptions())


def _plan(tmp_path: Path, text: str, rule: str | None = "full", proven: bool = False) -> dict:
    return json.loads(json.dumps(to_dict(_compiled(tmp_path, text, rule, proven).plan)))


def _credited_gpus(plan: dict) -> dict[tuple[str, str], float]:
    """GPUs per pool of the last month's replicas plan.json credits as continuing (continues)."""
    per_replica = {pl["candidate"]: pl["gpus_per_replica"] for w in plan["workloads"] for pl in w["placements"]}
    out: dict[tuple[str, str], float] = {}
    for k in plan["after_horizon"].get("credits", []):
        out[(k["site"], k["instance"])] = out.get((k["site"], k["instance"]), 0.0) + k["replicas"] * per_replica[k["candidate"]]
    return out


def _full_commitments(plan: dict, catalog, spec_sites: dict, full: bool = True) -> tuple[float, float, float]:
    """(cloud compute, capex, committed after the horizon) of a plan.json, every term and
    purchase priced from the catalog: in full, or (full=False) for its months inside the horizon."""
    H = plan["horizon_months"]
    cloud = capex = after = 0.0
    for p in plan["pools"]:
        region = spec_sites.get(p["site"])
        if p["pricing"] in TERM:
            rate = catalog.instances[p["instance"]].price(region, p["pricing"])
            for r in p["reservations"]:
                months = TERM[p["pricing"]] if full else min(TERM[p["pricing"]], H - r["start_month"])
                cloud += r["nodes"] * rate * HOURS * months
                after += r["nodes"] * rate * HOURS * max(0, r["start_month"] + TERM[p["pricing"]] - H)
        elif p["pricing"] in ("on_demand", "spot"):
            cloud += catalog.instances[p["instance"]].price(region, p["pricing"]) * sum(p["monthly_node_hours"])
        elif p["pricing"] == "purchase":
            node = catalog.onprem_nodes[p["instance"]]
            life = node.useful_life_years * 12
            capex += p["nodes"] * node.capex_usd * (1.0 if full else min(1.0, H / life))
            after += p["nodes"] * node.capex_usd * max(0.0, life - H) / life
    return cloud, capex, after


@pytest.mark.parametrize("name", example_params())
def test_every_commitment_of_the_examples_is_priced_by_the_default_rule(name):
    """The examples set no rule: `continues` charges the months inside the horizon, and of the
    months after it what the last month's credited load leaves idle: the total is the prorated
    one plus each commitment's charge, no charge above what is committed, and the credits are
    replicas the plan runs in the last month."""
    candidates, result = example(name)
    plan = json.loads(json.dumps(to_dict(result.plan)))
    sites = {s.name: getattr(s, "region", None) for s in candidates.spec.sites}
    cloud, capex, after = _full_commitments(plan, candidates.catalog, sites, full=False)
    ah = plan["after_horizon"]
    assert ah["rule"] == "continues"
    charged = {"cloud": 0.0, "capex": 0.0}
    for c in ah["commitments"]:
        assert 0 <= c["charged_usd"] <= c["committed_usd"] + 0.01
        charged["capex" if c["pricing"] == "purchase" else "cloud"] += c["charged_usd"]
    lines = plan["cost_breakdown_usd"]
    assert lines.get("cloud_compute", 0.0) == pytest.approx(cloud + charged["cloud"],
                                                          abs=0.05 * max(1, len(plan["pools"])))
    assert lines.get("capex", 0.0) == pytest.approx(capex + charged["capex"], abs=0.05 * max(1, len(ah["commitments"])))
    assert ah["committed_usd"] == pytest.approx(after, abs=0.05 * max(1, len(ah["commitments"])))
    last = {pl["candidate"]: pl["monthly_replicas"][-1] for w in plan["workloads"] for pl in w["placements"]
            if pl.get("monthly_replicas")}
    assert all(0 < k["replicas"] <= last[k["candidate"]] + 1e-6 for k in ah.get("credits", []))
    assert sum(plan["monthly_cost_usd"]) == pytest.approx(plan["total_cost_usd"], abs=0.01 * plan["horizon_months"])


def test_late_terms_are_paid_in_full_and_one_year_terms_are_chosen_near_the_end(tmp_path):
    plan = _plan(tmp_path, LATE_TERMS)
    catalog = load_catalog()
    cloud, _capex, after = _full_commitments(plan, catalog, {"aws-use1": "us-east-1"})
    assert plan["cost_breakdown_usd"]["cloud_compute"] == pytest.approx(cloud, abs=0.5)
    starts = [(p["pricing"], r["start_month"]) for p in plan["pools"] if p["pricing"] in TERM
              for r in p["reservations"]]
    # a 3-year term bought in the second year pays 36 months for at most 12 of use: the plan buys
    # 1-year terms there, and some of them do run past the horizon
    assert not [s for s in starts if s[0] == "reserved_3y" and s[1] >= 12], starts
    assert [s for s in starts if s[0] == "reserved_1y" and s[1] >= 12], starts
    assert after > 0
    ah = plan["after_horizon"]
    assert ah["committed_usd"] == pytest.approx(after, abs=0.05)
    assert ah["charged_usd"] == pytest.approx(ah["committed_usd"])
    # the runs of months after the horizon are the late terms' own
    late = {(c["pricing"], c["node_months"]) for c in ah["commitments"]}
    want = {}
    for p in plan["pools"]:
        for r in p.get("reservations", ()):
            k = max(0, r["start_month"] + TERM[p["pricing"]] - 24)
            if k:
                want[p["pricing"]] = want.get(p["pricing"], 0) + r["nodes"] * k
    assert late == {(t, float(n)) for t, n in want.items()}


@pytest.mark.slow
def test_continues_is_never_dearer_and_charges_only_idle_tails(tmp_path):
    """Every plan costs no more under `continues` than under `full` (its tails cost at most all
    their months), so neither does the optimum; a service that runs to the end keeps its late
    terms busy, so they are committed but not charged."""
    full = _plan(tmp_path, LATE_TERMS, "full", proven=True)
    cont = _plan(tmp_path, LATE_TERMS, "continues", proven=True)
    prorated = _plan(tmp_path, LATE_TERMS, "prorated", proven=True)
    assert prorated["after_horizon"]["rule"] == "prorated" and prorated["after_horizon"]["charged_usd"] == 0
    assert prorated["total_cost_usd"] <= cont["total_cost_usd"] + 0.01
    assert full["solver"]["status"] == cont["solver"]["status"] == "optimal"
    assert cont["total_cost_usd"] <= full["total_cost_usd"] + 0.01
    ah = cont["after_horizon"]
    assert ah["rule"] == "continues"
    assert ah["committed_usd"] > 0
    assert ah["charged_usd"] <= ah["committed_usd"] + 0.01
    # the last month's load fills every reserved node active in it: no tail is idle
    last = {p["pricing"]: p["monthly_nodes"][-1] for p in cont["pools"]}
    reserved_last = sum(n for k, n in last.items() if k in TERM)
    if reserved_last <= sum(last.values()):
        assert ah["charged_usd"] == pytest.approx(0.0, abs=0.01)


def test_a_bought_node_costs_its_whole_price_under_full(tmp_path):
    full = _plan(tmp_path, BUY, "full")
    cont = _plan(tmp_path, BUY, "continues")
    catalog = load_catalog()
    bought = [p for p in full["pools"] if p["pricing"] == "purchase"]
    assert bought, full["pools"]
    _cloud, capex, after = _full_commitments(full, catalog, {})
    assert full["cost_breakdown_usd"]["capex"] == pytest.approx(capex, abs=0.05)
    assert after > 0 and full["after_horizon"]["committed_usd"] == pytest.approx(after, abs=0.05)
    # continues: the horizon's share of the price (24 of 60 months), and the rest for the GPUs
    # the service leaves idle in the last month (its credited replicas' GPUs there, from plan.json)
    busy = _credited_gpus(cont)
    want = 0.0
    for p in (q for q in cont["pools"] if q["pricing"] == "purchase"):
        node = catalog.onprem_nodes[p["instance"]]
        life = node.useful_life_years * 12
        idle = max(0.0, p["nodes"] - busy.get((p["site"], p["instance"]), 0) / node.gpus)
        want += p["nodes"] * node.capex_usd * 24 / life + idle * node.capex_usd * (life - 24) / life
    assert cont["cost_breakdown_usd"]["capex"] == pytest.approx(want, abs=0.05)
    assert cont["total_cost_usd"] <= full["total_cost_usd"] + 0.01


def test_the_audit_flags_a_misstated_commitment(tmp_path):
    from dataclasses import replace

    import audit_fixtures as F
    from compiler.audit import codes

    path = tmp_path / "late.yaml"
    path.write_text(LATE_TERMS.format(extra="\n  after_horizon: full"), encoding="utf-8")
    result = compile_spec(path)
    plan = result.plan
    assert plan.after_horizon.commitments
    first = plan.after_horizon.commitments[0]
    wrong = replace(plan, after_horizon=replace(plan.after_horizon, commitments=(
        replace(first, committed_usd=first.committed_usd / 2),) + plan.after_horizon.commitments[1:]))
    assert codes.COMMITMENTS in F.codes_of(F.run_audit(result.candidates, wrong))
    other = replace(plan, after_horizon=replace(plan.after_horizon, rule="prorated"))
    assert codes.COMMITMENTS in F.codes_of(F.run_audit(result.candidates, other))


# Two owned HGX H100 nodes; a one-month job in month 0 pinned to 4 of them (so 2 are bought), and a
# service that needs one node at the end: the last month's load fits the owned nodes.
OWNED_FIRST = """\
apiVersion: infra-compile/v1
name: owned-first
horizon_months: 24
sites:
  - name: dc
    type: on_prem
    power_kw: 400
    electricity_usd_per_kwh: 0.12
    pue: 1.3
    max_racks: 8
    owned: [{{instance: hgx-h100, nodes: 2}}]
policy:
  placement: on_prem
  allowed_gpus: [H100]{extra}
workloads:
  - name: tune
    kind: training
    model: llama-3-8b
    tokens: 2.0e10
    seq_len: 4096
    window: {{start_month: 0, deadline_days: 30}}
    pin: {{gpus: 32, site: dc}}
  - name: chat-8b
    kind: inference
    model: llama-3-8b
    quantization: bf16
    traffic: {{peak_rps: 5, input_tokens: 600, output_tokens: 150}}
    slo: {{ttft_p99_ms: 800, tpot_p99_ms: 60}}
"""


def test_continues_fills_owned_nodes_first_and_never_charges_them():
    """Under `continues` the last month's load runs on the owned nodes first, so a bought node
    is idle after the horizon unless that load passes the owned ones; the owned nodes' own months
    after the horizon are sunk. Here the load ends inside the two owned nodes: both bought nodes
    are charged their whole life after the horizon, and nothing more (a rule of b + O - load
    nodes would charge owned nodes too). Priced from plan.json and the catalog alone."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        cont = _plan(Path(tmp), OWNED_FIRST, "continues")
    node = load_catalog().onprem_nodes["hgx-h100"]
    bought = [p for p in cont["pools"] if p["pricing"] == "purchase"]
    assert [p["instance"] for p in bought] == ["hgx-h100"], cont["pools"]
    b = bought[0]["nodes"]
    assert b >= 2                              # the job alone needs 4 nodes in month 0
    busy = sum(pl["monthly_replicas"][-1] * pl["gpus_per_replica"] for w in cont["workloads"]
               for pl in w["placements"] if pl["instance"] == "hgx-h100" and w["kind"] == "inference")
    assert 0 < busy <= 2 * node.gpus           # the owned nodes carry the last month
    life = node.useful_life_years * 12
    tail = node.capex_usd * (life - 24) / life
    assert cont["cost_breakdown_usd"]["capex"] == pytest.approx(b * node.capex_usd * 24 / life + b * tail, abs=0.05)
    assert cont["after_horizon"]["charged_usd"] == pytest.approx(b * tail, abs=0.05)


def test_continues_credits_the_forecast_traffic_not_the_plans_replicas(tmp_path):
    """Under `continues` the last month's load that keeps a commitment busy after the horizon is
    the traffic the spec forecasts for that month, carried by replicas the plan runs then; spare
    replicas earn no credit, so padding the last month never lowers what the tail costs.
    Checked against the estimate's tokens/s per replica and the spec's traffic worked here by
    hand: 20 rps x 150 output tokens, growing 8% a month, in month 23."""
    result = _compiled(tmp_path, LATE_TERMS, "continues")
    plan = json.loads(json.dumps(to_dict(result.plan)))
    credits = plan["after_horizon"]["credits"]
    assert credits
    tau = {c.id: c.estimate.tokens_per_s for c in result.candidates.by_workload["chat-8b"]}
    last = {pl["candidate"]: pl["monthly_replicas"][-1] for w in plan["workloads"] for pl in w["placements"]}
    forecast = 20 * 150 * 1.08 ** 23
    for k in credits:
        assert 0 < k["replicas"] <= last[k["candidate"]] + 1e-6
    carried = sum(k["replicas"] * tau[k["candidate"]] for k in credits)
    assert carried <= forecast * (1 + 1e-9)
    # the whole forecast is credited (the replicas carry it, and credit only lowers the tail)
    assert carried == pytest.approx(forecast, rel=1e-6)
    # the last month runs the fewest replicas that carry it: no padding to absorb idle terms
    per = {k["candidate"]: tau[k["candidate"]] for k in credits}
    need = min(math.ceil(forecast / t - 1e-9) for t in per.values())
    assert sum(last.values()) <= need + 1


def test_the_audit_flags_credits_beyond_the_forecast(tmp_path):
    """The audit holds plan.json's credits to the replicas run and the forecast traffic (A607)."""
    from dataclasses import replace

    from compiler.audit import audit

    result = _compiled(tmp_path, LATE_TERMS, "continues")
    plan, cands = result.plan, result.candidates
    assert audit(cands.spec, cands.catalog, cands, plan) == []
    k = plan.after_horizon.credits[0]
    padded = replace(plan, after_horizon=replace(plan.after_horizon, credits=(replace(k, replicas=k.replicas * 3),)))
    found = [f for f in audit(cands.spec, cands.catalog, cands, padded) if f.code == "A607"]
    assert any("credited" in f.message for f in found), found


def test_a_fractional_credit_written_to_six_decimals_passes_the_audit(tmp_path):
    """plan.json writes credits to 6 decimals; a fractional credit on a dear node (here 1.999498
    replicas of a 4-GPU tp4 placement on an 8-GPU H100 node, 10 months of a 1-year term after a
    2-month horizon at about $44,500 a node-month) moves the re-derived idle tail by up to
    0.5e-6 x 4/8 x 10 x 44,500 = $0.11, more than a cent. The audit allows exactly that, and
    still flags a charge misstated beyond it."""
    import yaml
    from dataclasses import replace

    from compiler.audit import audit

    doc = yaml.safe_load(Path(__file__).parents[1].joinpath("examples/multi-region-inference.yaml").read_text())
    doc["horizon_months"] = 2
    doc["policy"]["allowed_gpus"] = ["H100", "L4"]
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = compile_spec(path)
    plan, cands = result.plan, result.candidates
    assert any(k.replicas != round(k.replicas) for k in plan.after_horizon.credits)
    assert audit(cands.spec, cands.catalog, cands, plan) == []
    c = max(plan.after_horizon.commitments, key=lambda c: c.charged_usd)
    assert c.charged_usd > 0
    off = replace(c, charged_usd=c.charged_usd + 5.0)
    misstated = replace(plan, after_horizon=replace(
        plan.after_horizon, commitments=tuple(off if x is c else x for x in plan.after_horizon.commitments)))
    found = [f for f in audit(cands.spec, cands.catalog, cands, misstated) if f.code == "A607"]
    assert found and "after the horizon" in found[0].message
