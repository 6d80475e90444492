"""Next-best alternatives and the on-prem versus cloud break-even, recomputed by an oracle.

The oracle shares no code with compiler/appraise/alternatives.py: it reads plan.json, the spec's
YAML and the catalog's data files (compiler/catalog/data/*.yaml) and prices every row again by the
rule that module's docstring states ("priced alone"), then checks what report.md prints of it.

The first tests check the report's tables as a reviewer reads them, in terms any version of the
report has (a delta is the row's cost minus the chosen cost the table shows; a job pinned to owned
nodes is not offered a purchase; owned hardware carries no capex; a break-even row compares one GPU
type with itself). OWNED_SPEC is a small spec on which every one of these was broken: a job pinned
to owned nodes was offered bought L40S servers, a job the owned node could run alone was offered it
as a "purchase", and the break-even row set the owned H100 node, with capex, against a cloud L40S.
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

from examples_cache import EXAMPLES, ROOT, example_params

HOURS = 730.0                  # hours in a month, as the spec reference states
RACK_UNITS = 42                # a standard rack
DEFAULT_FABRICS = ("infiniband-ndr", "roce-400g", "ethernet-100g")  # an on-prem node lists none
TERM_MONTHS = {"reserved_1y": 12, "reserved_3y": 36}
CENT = 0.011

OWNED_SPEC = """\
apiVersion: infra-compile/v1
name: owned-and-pinned
horizon_months: 12
sites:
  - name: aws-use1
    type: cloud
    provider: aws
    region: us-east-1
    pricing: [on_demand, spot]
  - name: dc
    type: on_prem
    power_kw: 30
    electricity_usd_per_kwh: 0.15
    pue: 1.3
    max_racks: 4
    owned:
      - {instance: dgx-h100, nodes: 1}
policy:
  placement: hybrid
  allowed_gpus: [H100, L40S]
workloads:
  - name: tune
    kind: training
    model: llama-3-8b
    tokens: 5.0e9
    window: {deadline_days: 10}
    pin: {pricing: owned}
  - name: sweep
    kind: training
    model: llama-3-8b
    tokens: 5.0e9
    window: {deadline_days: 10}
  - name: chat
    kind: inference
    model: llama-3-8b
    traffic: {peak_rps: 2, input_tokens: 500, output_tokens: 100}
    slo: {ttft_p99_ms: 800, tpot_p99_ms: 60}
    window: {start_month: 1}
"""

CASES = (*example_params(), "owned-and-pinned")


# --- the compiled cases ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def owned_case(tmp_path_factory):
    path = tmp_path_factory.mktemp("owned") / "owned-and-pinned.yaml"
    path.write_text(OWNED_SPEC, encoding="utf-8")
    from compiler import pipeline
    return path, pipeline.compile_spec(path)


@pytest.fixture
def case(request, owned_case):
    """(spec as a dict, plan.json as a dict, report.md) of one case."""
    name = request.param
    if name == "owned-and-pinned":
        path, result = owned_case
    else:
        from examples_cache import example
        path, result = ROOT / "examples" / f"{name}.yaml", example(name)[1]
    spec = next(d for d in yaml.safe_load_all(Path(path).read_text(encoding="utf-8")) if d)
    return spec, json.loads(result.artifacts["plan.json"]), result.artifacts["report.md"]


# --- the spec and the catalog, read directly --------------------------------------------------

@lru_cache(maxsize=None)
def catalog() -> dict:
    data = ROOT / "compiler" / "catalog" / "data"
    read = lambda name: yaml.safe_load((data / name).read_text(encoding="utf-8"))  # noqa: E731
    instances = {}
    for name in ("instances_aws.yaml", "instances_gcp.yaml", "instances_azure.yaml"):
        instances.update(read(name)["instances"])
    storage = read("storage.yaml")
    return {"instances": instances, "nodes": read("onprem.yaml")["onprem_nodes"],
            "fabrics": read("fabrics.yaml")["fabrics"], "egress": storage["egress"]}


def sites(spec) -> dict[str, dict]:
    return {s["name"]: s for s in spec["sites"]}


def owned(site: dict, instance: str) -> int:
    return sum(o["nodes"] for o in site.get("owned", ()) if o["instance"] == instance)


def gpu_of(instance: str) -> str:
    cat = catalog()
    return (cat["nodes"].get(instance) or cat["instances"][instance])["gpu"]


def fabric_usd(name: str) -> float:
    f = catalog()["fabrics"][name]
    # the node's ports, and its share of a two-tier leaf/spine tree (3 switch ports per node port)
    return (f["ports_per_node"] * f["cost_per_port_usd"]
            + 3 * f["ports_per_node"] / f["switch_radix"] * f["switch_cost_usd"])


def cheapest_fabric(instance: str) -> str:
    offered = catalog()["nodes"][instance].get("fabrics", DEFAULT_FABRICS)
    return min(offered, key=lambda f: (fabric_usd(f), f))


def power_per_node_hour(site: dict, instance: str) -> float:
    return catalog()["nodes"][instance]["power_kw"] * site["pue"] * site["electricity_usd_per_kwh"]


def workload_spec(spec, name: str) -> dict:
    return next(w for w in spec["workloads"] if w["name"] == name)


def cloud_prices(spec, part) -> dict[str, float]:
    """USD of the part's use under each pricing the spec allows and the catalog sells there."""
    site = sites(spec)[part["site"]]
    listed = catalog()["instances"][part["instance"]]["prices"][site["region"]]
    H = spec["horizon_months"]
    out = {}
    for option in site.get("pricing", ["on_demand"]):
        if listed.get(option) is None:       # not sold there
            continue
        if option in ("on_demand", "spot"):
            out[option] = listed[option] * part["node_hours"]
        else:
            term = TERM_MONTHS[option]
            rule = (spec.get("policy") or {}).get("after_horizon", "continues")
            # a term's months after the horizon: paid under full, and under continues (the default)
            # where the part no longer runs in the horizon's last month to keep them busy
            whole = rule == "full" or (rule == "continues" and part["last_month"] < H - 1)
            months = sum(term if whole else min(term, H - a)
                         for a in range(part["first_month"], part["last_month"] + 1, term))
            out[option] = listed[option] * HOURS * months * part["nodes"]
    return out


def egress_usd(spec, w: dict, part) -> float:
    data = w.get("data") or {}
    moved = w["kind"] == "training" and data.get("home") and data["home"] != part["site"] and data.get("dataset_tb")
    assert part["egress_tb"] == (data["dataset_tb"] if moved else 0), part
    if not moved:
        return 0.0
    home = sites(spec)[data["home"]]
    provider = home["provider"] if home["type"] == "cloud" else "on_prem"
    return part["egress_tb"] * catalog()["egress"][provider]["usd_per_gb"] * 1000


def part_usd(spec, w: dict, part) -> float:
    """A part's cost by the rule, from its own figures; checks its pricing label on the way."""
    site = sites(spec)[part["site"]]
    pin = (w.get("pin") or {}).get("pricing")
    assert gpu_of(part["instance"]) == part["gpu"], part
    if site["type"] == "cloud":
        assert part["owned_nodes"] == 0 and part["fabric"] == "", part
        prices = cloud_prices(spec, part)
        if part["pricing"] == "spot":
            assert pin in (None, "spot"), part
        elif pin:
            assert part["pricing"] == pin, part
        else:
            assert part["pricing"] != "spot" and prices[part["pricing"]] == pytest.approx(
                min(v for k, v in prices.items() if k != "spot")), ("not the cheapest allowed pricing", part)
        return prices[part["pricing"]] + egress_usd(spec, w, part)
    node = catalog()["nodes"][part["instance"]]
    H = spec["horizon_months"]
    expect_owned = 0 if pin == "purchase" else min(part["nodes"], owned(site, part["instance"]))
    assert part["owned_nodes"] == expect_owned, ("owned nodes", part)
    bought = part["nodes"] - part["owned_nodes"]
    assert part["pricing"] == ("purchase" if bought else "owned"), ("owned nodes called purchase", part)
    usd = part["node_hours"] * power_per_node_hour(site, part["instance"]) + egress_usd(spec, w, part)
    if not bought:
        assert part["fabric"] == "", part
        return usd
    offered = node.get("fabrics", DEFAULT_FABRICS)
    assert part["fabric"] in offered, part
    if part["fabric"] != cheapest_fabric(part["instance"]):      # only a multi-node job's own wiring
        assert w["kind"] == "training" and part["nodes"] > 1, part
    life = node["useful_life_years"] * 12
    rule = (spec.get("policy") or {}).get("after_horizon", "continues")
    # a bought node's life after the horizon: all of it under full; under continues (the default)
    # unless the option still runs on it in the horizon's last month; none under prorated
    after = node["capex_usd"] * max(0.0, life - H) / life
    tail = after if rule == "full" or (rule == "continues" and part["last_month"] < H - 1) else 0.0
    per_node = (node["capex_usd"] * min(1.0, H / life) + tail
                + node["support_usd_per_year"] * H / 12 + fabric_usd(part["fabric"]))
    return usd + bought * per_node


def takes_alone(spec, w: dict, part) -> bool:
    """The part within the spec's policy, pin and the site's limits, by itself."""
    site, pol, pin = sites(spec)[part["site"]], spec.get("policy") or {}, w.get("pin") or {}
    if pol.get("placement", "hybrid") not in ("hybrid", site["type"]):
        return False
    if pol.get("allowed_gpus") and part["gpu"] not in pol["allowed_gpus"]:
        return False
    if w.get("sites") and part["site"] not in w["sites"]:
        return False
    for key in ("site", "instance", "gpu", "gpus"):
        if key in pin and part[key] != pin[key]:
            return False
    if pin.get("pricing") and part["pricing"] != pin["pricing"]:
        return False
    if site["type"] == "cloud":
        quota = (site.get("quotas") or {}).get(part["gpu"])
        return quota is None or part["nodes"] * catalog()["instances"][part["instance"]]["gpus"] <= quota
    nodes = catalog()["nodes"]
    node, bought = nodes[part["instance"]], part["nodes"] - part["owned_nodes"]
    held = [(nodes[o["instance"]], o["nodes"]) for o in site.get("owned", ())]
    return (bought * node["power_kw"] * site["pue"] <= site["power_kw"] + 1e-9
            and sum(n["rack_units"] * k for n, k in held) + bought * node["rack_units"]
            <= site["max_racks"] * RACK_UNITS
            and (not site.get("rack_power_kw")
                 or sum(n["power_kw"] * k for n, k in held) + bought * node["power_kw"]
                 <= site["max_racks"] * site["rack_power_kw"] + 1e-9)
            and (site.get("max_gpus") is None
                 or sum(n["gpus"] * k for n, k in held) + bought * node["gpus"] <= site["max_gpus"]))


def chosen_uses(spec, w: dict, wp: dict) -> list[dict]:
    """What the chosen design runs, per (site, instance), from the plan's placements."""
    if wp["kind"] == "training":
        p = wp["placements"][0]
        nh = sum(sum(h["monthly_node_hours"]) for h in p["holdings"])
        months = [m for h in p["holdings"] for m, x in enumerate(h["monthly_node_hours"]) if x > 0]
        return [{"site": p["site"], "instance": p["instance"], "nodes": p["nodes"], "node_hours": nh,
                 "first_month": min(months), "last_month": max(months)}]
    out = []
    for s, i in sorted({(p["site"], p["instance"]) for p in wp["placements"]}):
        per_node = (catalog()["instances"].get(i) or catalog()["nodes"][i])["gpus"]
        mine = [p for p in wp["placements"] if (p["site"], p["instance"]) == (s, i)]
        months = max(len(p["monthly_replicas"]) for p in mine)
        nodes = [math.ceil(sum(p["monthly_replicas"][m] * p["gpus_per_replica"] for p in mine
                               if m < len(p["monthly_replicas"])) / per_node - 1e-9) for m in range(months)]
        busy = [m for m, n in enumerate(nodes) if n]
        out.append({"site": s, "instance": i, "nodes": max(nodes), "node_hours": HOURS * sum(nodes),
                    "first_month": min(busy), "last_month": max(busy)})
    return out


def check_option(spec, w: dict, option: dict) -> float:
    """The option's cost from its parts, each priced again; returns it."""
    assert option["parts"], option
    usd = sum(part_usd(spec, w, p) for p in option["parts"])
    for p in option["parts"]:
        assert p["cost_usd"] == pytest.approx(part_usd(spec, w, p), abs=CENT), p
    assert option["cost_usd"] == pytest.approx(sum(p["cost_usd"] for p in option["parts"]), abs=CENT)
    assert option["cost_usd"] == pytest.approx(usd, abs=CENT * len(option["parts"]))
    for key in ("site", "instance", "pricing"):
        assert option[key] == " + ".join(dict.fromkeys(p[key] for p in option["parts"])), option
    return option["cost_usd"]


# --- the report's tables, read as a reviewer reads them -------------------------------------

_MONEY = r"[+-]?\$[\d,]+(?:\.\d+)?"


def usd_value(text: str) -> float:
    sign = -1 if text.startswith("-") else 1
    return sign * float(text.lstrip("+-").lstrip("$").replace(",", ""))


def usd_text(x: float) -> str:
    return f"${abs(x):,.2f}" if 0 < abs(x) < 10 else f"${abs(x):,.0f}"


def workload_sections(report: str) -> dict[str, str]:
    body = report.split("\n## Workloads\n", 1)[1].split("\n## On-prem versus cloud break-even", 1)[0]
    parts = re.split(r"^### (\S+) \((?:training|inference)\)$", body, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, indirect=True)
def test_every_delta_is_the_rows_cost_less_the_chosen_cost_the_table_shows(case):
    """A delta is read against the chosen design's cost in the same table (before its own row
    existed, the only chosen cost the section printed: its cost in the plan)."""
    _spec, _plan, report = case
    for name, text in workload_sections(report).items():
        chosen_row = re.search(rf"^\| chosen \|.*?\| ({_MONEY}) \| - \|", text, flags=re.M)
        chosen = usd_value(chosen_row.group(1)) if chosen_row else usd_value(
            re.search(rf"; cost ({_MONEY})\.$", text, flags=re.M).group(1))
        rows = re.findall(rf"^\|.*\| ({_MONEY}) \| ({_MONEY}) \(([+-]?[\d.]+)%\) \|", text, flags=re.M)
        for cost, delta, pct in rows:
            cost, delta, pct = usd_value(cost), usd_value(delta), float(pct)
            assert cost - delta == pytest.approx(chosen, abs=1.5), (name, cost, delta, chosen)
            if chosen >= 1:
                expect = delta / chosen * 100
                # the printed dollars are rounded: allow for it in the percentage read back
                slack = 0.051 + abs(expect) * (0.5 / chosen + 0.5 / max(abs(delta), 1))
                assert pct == pytest.approx(expect, abs=slack), (name, pct, delta, chosen)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, indirect=True)
def test_no_option_the_workloads_pin_rules_out(case):
    spec, plan, _report = case
    for wp in plan["workloads"]:
        pin = (workload_spec(spec, wp["name"]).get("pin") or {}).get("pricing")
        for a in wp["alternatives"]:
            if pin:
                assert a["pricing"] == pin, (wp["name"], "pinned to", pin, "offered", a)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, indirect=True)
def test_owned_nodes_are_never_called_a_purchase(case):
    """An option is a purchase of a node model the site owns only where it needs more nodes than
    the site owns (or its pin says purchase), and then says how many it buys."""
    spec, plan, _report = case
    for wp in plan["workloads"]:
        pin = (workload_spec(spec, wp["name"]).get("pin") or {}).get("pricing")
        for a in wp["alternatives"]:
            for p in a.get("parts") or [a]:
                site = sites(spec)[p["site"]]
                if site["type"] == "on_prem" and p["pricing"] == "purchase" and pin != "purchase" \
                        and owned(site, p["instance"]):
                    assert "nodes" in p, (wp["name"], "owned nodes called a purchase", a)
                    assert p["nodes"] > owned(site, p["instance"]) == p["owned_nodes"], (wp["name"], p)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, indirect=True)
def test_breakeven_compares_one_gpu_type_and_owned_nodes_carry_no_capex(case):
    spec, plan, _report = case
    for b in plan["breakeven"]:
        assert gpu_of(b["on_prem_instance"]) == gpu_of(b["cloud_instance"]) == b["gpu"], b
        if owned(sites(spec)[b["on_prem_site"]], b["on_prem_instance"]) and b.get("on_prem_basis") != "purchase":
            assert b["on_prem_capex_usd_per_gpu"] == 0, ("capex charged for owned nodes", b)


# --- every row recomputed -------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, indirect=True)
def test_every_alternative_recomputed_from_plan_spec_and_catalog(case):
    spec, plan, _report = case
    for wp in plan["workloads"]:
        w = workload_spec(spec, wp["name"])
        chosen = wp["chosen_alone"]
        # the chosen design: the plan's own nodes and node-hours, priced by the rule
        uses = chosen_uses(spec, w, wp)
        assert [(p["site"], p["instance"]) for p in chosen["parts"]] == [(u["site"], u["instance"]) for u in uses]
        for p, u in zip(chosen["parts"], uses):
            assert p["nodes"] == u["nodes"] and p["node_hours"] == pytest.approx(u["node_hours"], abs=1e-4), (p, u)
            assert (p["first_month"], p["last_month"]) == (u["first_month"], u["last_month"]), (p, u)
        base = check_option(spec, w, chosen)
        assert chosen["delta_usd"] == 0
        survive = w["kind"] == "inference" and (w.get("slo") or {}).get("availability", 0.99) >= 0.999
        costs = [a["cost_usd"] for a in wp["alternatives"]]
        assert costs == sorted(costs) and len(costs) <= 3
        for a in wp["alternatives"]:
            assert check_option(spec, w, a) - base == pytest.approx(a["delta_usd"], abs=CENT), a
            assert all(takes_alone(spec, w, p) for p in a["parts"]), (wp["name"], a)
            assert {p["gpu"] for p in a["parts"]} == {a["gpu"]}
            places = [p["site"] for p in a["parts"]]
            if survive:
                # without any one site the others carry the demand: k >= 2 sites, 1/(k-1) each
                k = len(places)
                assert k >= 2 and len(set(places)) == k, a
                assert a["note"].startswith(f"each of {k} sites carries {'all' if k == 2 else f'1/{k - 1}'} "), a
            else:
                assert len(places) == 1, a
                if len(chosen["parts"]) == 1:
                    assert (a["gpu"], a["site"], a["pricing"]) != (chosen["gpu"], chosen["site"], chosen["pricing"])


@pytest.mark.parametrize("case", CASES, indirect=True)
def test_every_breakeven_row_recomputed_from_spec_and_catalog(case):
    spec, plan, _report = case
    H = spec["horizon_months"]
    cat = catalog()
    for b in plan["breakeven"]:
        site, cloud = sites(spec)[b["on_prem_site"]], sites(spec)[b["cloud_site"]]
        node, inst = cat["nodes"][b["on_prem_instance"]], cat["instances"][b["cloud_instance"]]
        assert b["cloud_pricing"] == "on_demand" and "on_demand" in cloud.get("pricing", ["on_demand"])
        rent = inst["prices"][cloud["region"]]["on_demand"] * HOURS / inst["gpus"]
        assert b["cloud_usd_per_gpu_month"] == pytest.approx(rent, abs=CENT)
        power = power_per_node_hour(site, b["on_prem_instance"]) * HOURS / node["gpus"]
        assert (b["on_prem_basis"] == "owned") <= bool(owned(site, b["on_prem_instance"]))
        if b["on_prem_basis"] == "owned":
            assert b["on_prem_capex_usd_per_gpu"] == 0 and b["on_prem_fabric"] == ""
            assert b["on_prem_opex_usd_per_gpu_month"] == pytest.approx(power, abs=CENT)
            cheaper = rent > power
            assert b["breakeven_months"] == (0 if cheaper else None)
            assert b["breakeven_utilization"] == (0 if cheaper else None)
            continue
        assert b["on_prem_fabric"] == cheapest_fabric(b["on_prem_instance"])
        wiring = fabric_usd(b["on_prem_fabric"])
        support = node["support_usd_per_year"] / 12 / node["gpus"]
        capex = (node["capex_usd"] + wiring) / node["gpus"]
        assert b["on_prem_capex_usd_per_gpu"] == pytest.approx(capex, abs=CENT)
        assert b["on_prem_opex_usd_per_gpu_month"] == pytest.approx(power + support, abs=CENT)
        saving = rent - power - support
        assert b["breakeven_months"] == (pytest.approx(capex / saving, abs=0.006) if saving > 0 else None)
        credited = (node["capex_usd"] * min(1.0, H / (node["useful_life_years"] * 12)) + wiring) / node["gpus"]
        margin = H * (rent - power)
        assert b["breakeven_utilization"] == (pytest.approx((credited + H * support) / margin, abs=0.0006)
                                              if margin > 0 else None)


@pytest.mark.parametrize("case", CASES, indirect=True)
def test_report_prints_each_row_as_the_plan_has_it(case):
    spec, plan, report = case
    sections = workload_sections(report)
    for wp in plan["workloads"]:
        text = sections[wp["name"]]
        if not wp["alternatives"]:
            assert "No other feasible option was found." in text
            continue
        base = wp["chosen_alone"]["cost_usd"]
        assert re.search(rf"^\| chosen \| .* \| {re.escape(usd_text(base))} \| - \|", text, flags=re.M), wp["name"]
        rows = re.findall(r"^\| alternative \| (.*?) \| .* \| (\S+) \| (\S+) \((\S+)%\) \|", text, flags=re.M)
        assert len(rows) == len(wp["alternatives"])
        for (where, cost, delta, pct), a in zip(rows, wp["alternatives"]):
            for p in a["parts"]:
                label = p["pricing"].replace("_", " ")
                if p["pricing"] == "purchase" and p["owned_nodes"]:
                    assert f"{p['site']} {p['instance']} (purchase (" in where, (where, p)
                    assert f"+ {p['owned_nodes']} owned)" in where, (where, p)
                else:
                    assert f"{p['site']} {p['instance']} ({label})" in where, (where, p)
            assert cost == usd_text(a["cost_usd"])
            d = a["delta_usd"]
            shown = usd_text(d)
            assert delta == (shown if shown in ("$0", "$0.00") else ("+" if d > 0 else "-") + shown), (delta, d)
            assert float(pct) == pytest.approx(d / base * 100 if base else 0, abs=0.051)
    # break-even rows: owned ones say so and show no capex
    table = report.split("## On-prem versus cloud break-even", 1)[1]
    for b in plan["breakeven"]:
        label = "owned" if b["on_prem_basis"] == "owned" else f"bought, {b['on_prem_fabric']}"
        row = (f"| {b['gpu']} | {b['on_prem_site']} {b['on_prem_instance']} ({label}) | "
               f"{b['cloud_site']} {b['cloud_instance']} (on_demand) | {usd_text(b['on_prem_capex_usd_per_gpu'])} | "
               f"{usd_text(b['on_prem_opex_usd_per_gpu_month'])} | {usd_text(b['cloud_usd_per_gpu_month'])} |")
        assert row in table, row


def test_owned_spec_offers_the_owned_node_as_owned_and_nothing_to_the_pinned_job(owned_case):
    """The figures of OWNED_SPEC's plan: sweep's owned-node option is owned, at power only; tune,
    pinned to owned nodes that the chosen design already uses, has no other option."""
    _path, result = owned_case
    plan = json.loads(result.artifacts["plan.json"])
    by_name = {w["name"]: w for w in plan["workloads"]}
    assert by_name["tune"]["alternatives"] == []
    dc = [a for a in by_name["sweep"]["alternatives"] if a["site"] == "dc" and a["instance"] == "dgx-h100"]
    assert len(dc) == 1 and dc[0]["pricing"] == "owned" and dc[0]["parts"][0]["owned_nodes"] == 1
    # one dgx-h100 at 10.2 kW x 1.3 x $0.15/kWh for the node-hours the job runs, nothing else
    part = dc[0]["parts"][0]
    assert part["cost_usd"] == pytest.approx(part["node_hours"] * 10.2 * 1.3 * 0.15, abs=CENT)
    rows = {(b["gpu"], b["on_prem_instance"], b["on_prem_basis"]): b for b in plan["breakeven"]}
    assert rows[("H100", "dgx-h100", "owned")]["cloud_instance"] == "p5.48xlarge"
    assert rows[("H100", "dgx-h100", "owned")]["on_prem_capex_usd_per_gpu"] == 0
