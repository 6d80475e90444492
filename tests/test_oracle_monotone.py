"""Monotonicity oracle: relaxing a spec never makes its optimum dearer.

Each change below turns a spec S into a spec R that allows every plan of S (and maybe more):

- drop a workload (its placements go; what it held is freed; every cost is >= 0). Not under
  policy.max_cloud_share: dropping an on-prem job lowers the total the cloud is a share of;
- raise the cloud quotas of a site (every GPU type it offers, to 4x and at least 64 more);
- raise an on-prem site's power budget (new nodes: 4x and 200 kW more) and racks (+4), and lift
  its max_gpus;
- add a site (a cloud region or a data centre with no owned nodes) that the placement policy
  admits: a plan may ignore it. (A 99.9% service must survive the loss of any one site; a site
  the plan does not use takes nothing away.)
- sell one more pricing option at a cloud site; allow one more GPU type (with a quota on it);
- drop a training job's deadline (it may then run until the horizon ends);
- halve a service's peak traffic; loosen its SLO (2x TTFT, 1.5x TPOT: a replica may batch more).
- declare storage a data centre already has (storage.existing_tb: at least its largest homed
  dataset, plus 0.5, 20 or 200 TB): it holds data free of charge. Not under
  policy.max_cloud_share: cheaper on-prem storage lowers the total the cloud is a share of.

So R's plan, which claims `optimal` or a gap, must cost no more than S's beyond R's gap, and R
has a plan whenever S has one:

    cost(S) >= cost(R) * (1 - gap(R)) - $0.01

Under `policy.after_horizon: continues` (the default) dropping a workload, halving a service's
traffic and loosening its SLO are not relaxations: that rule pays a commitment's months after the
horizon where the last month's load leaves its nodes idle, and each of these changes lowers that
load (fewer workloads running then, less forecast traffic to credit, fewer GPUs to carry it), so
S's plan can cost more under R (seed 4 without train-1: a bought H100 node busy in the last month
under S, idle under R, its other 56 months of life then paid). These three compare S and R under
`prorated`, where the objective does not read that load; the rules themselves are compared below.
A plan is one plan under every rule, priced prorated <= continues <= full (each pays what the one
before pays and maybe more), so each rule's optimum is a relaxation of the next one's:

    cost_continues(S) >= bound_prorated(S),  cost_full(S) >= bound_continues(S)

This catches reductions that depend on what else the spec allows: e.g. reservation terms that
may only start in some months (adding a 9-minute job made a plan cheaper: optimality case K), a
GPU-count ladder of "the 3 smallest counts that meet the deadline" (dropping the deadline takes
away the count that fits the owned nodes: case D), a per-site serving reduction by price per
token/s (allowing an H100 instance replaces the small instance that was cheaper in whole nodes:
case B). Runs on MONOTONE_SPECS seeded random specs
(oracle_specs.py); one test per (seed, change) where the change applies; set ORACLE_SPECS=N
for more.
"""

from __future__ import annotations

import copy
import os

import pytest

import oracle_specs as O

MONOTONE_SPECS = int(os.environ.get("ORACLE_SPECS", "30"))
CHANGES = ("drop_workload", "raise_quota", "raise_power", "add_site", "add_pricing", "allow_gpu",
           "drop_deadline", "lower_traffic", "loosen_slo", "declare_storage")
# changes that lower the horizon's last-month load, which `continues` credits (docstring)
LAST_MONTH_LOAD = ("drop_workload", "lower_traffic", "loosen_slo")
RULE_SPECS = int(os.environ.get("ORACLE_RULE_SPECS", "30"))


def relax(data: dict, change: str, seed: int) -> tuple[dict, str] | None:
    """R and what was changed, or None when the change does not apply to this spec."""
    import random

    rng = random.Random(seed * 7919 + CHANGES.index(change))
    out = copy.deepcopy(data)
    if change == "drop_workload":
        if len(out["workloads"]) < 2 or out["policy"].get("max_cloud_share") is not None:
            return None
        gone = rng.choice(out["workloads"])["name"]
        out["workloads"] = [w for w in out["workloads"] if w["name"] != gone]
        return out, f"without workload {gone}"
    if change == "raise_quota":
        quoted = [s for s in out["sites"] if s.get("quotas")]
        if not quoted:
            return None
        site = rng.choice(quoted)
        site["quotas"] = {g: max(4 * q, q + 64) for g, q in site["quotas"].items()}
        return out, f"quotas of {site['name']} raised to {site['quotas']}"
    if change == "raise_power":
        dcs = [s for s in out["sites"] if s["type"] == "on_prem"]
        if not dcs:
            return None
        site = rng.choice(dcs)
        site["power_kw"] = 4 * site["power_kw"] + 200
        site["max_racks"] += 4
        site.pop("max_gpus", None)
        return out, f"power of {site['name']} raised to {site['power_kw']} kW, {site['max_racks']} racks, no max_gpus"
    if change == "add_site":
        names = {s["name"] for s in out["sites"]}
        placement = out["policy"].get("placement", "hybrid")
        options = []
        if placement in ("cloud", "hybrid"):
            for proto in O.CLOUD_SITES:
                if proto["name"] not in names:
                    # quotas keep the new site's training estimates small (node counts up to them)
                    offered = sorted(O.CLOUD_GPUS[proto["provider"]] & set(out["policy"].get("allowed_gpus", O.GPUS)))
                    options.append({"name": proto["name"], "type": "cloud", "provider": proto["provider"],
                                    "region": proto["region"], "pricing": ["on_demand", "reserved_1y"],
                                    "quotas": {g: 64 for g in offered}})
        if placement in ("on_prem", "hybrid"):
            for name in ("dc-new", "dc-extra"):
                if name not in names:
                    options.append({"name": name, "type": "on_prem", "power_kw": 60, "electricity_usd_per_kwh": 0.1,
                                    "pue": 1.2, "max_racks": 2})
        if not options:
            return None
        site = rng.choice(options)
        out["sites"].append(site)
        return out, f"with site {site['name']} ({site['type']})"
    if change == "add_pricing":
        options = [(s, p) for s in out["sites"] if s["type"] == "cloud"
                   for p in ("on_demand", "reserved_1y", "reserved_3y", "spot") if p not in s.get("pricing", ["on_demand"])]
        if not options:
            return None
        site, pricing = rng.choice(options)
        site["pricing"] = [*site.get("pricing", ["on_demand"]), pricing]
        return out, f"{site['name']} also sells {pricing}"
    if change == "allow_gpu":
        allowed = out["policy"].get("allowed_gpus")
        more = [g for g in O.GPUS if allowed is not None and g not in allowed]
        if not more:
            return None
        gpu = rng.choice(more)
        out["policy"]["allowed_gpus"] = sorted([*allowed, gpu])
        for site in out["sites"]:
            # a quota on the new type keeps the estimate small; the original spec had none of it
            if site["type"] == "cloud" and gpu in O.CLOUD_GPUS[site["provider"]]:
                site.setdefault("quotas", {})[gpu] = 64
        return out, f"policy.allowed_gpus also allows {gpu}"
    if change == "drop_deadline":
        timed = [w for w in out["workloads"] if "deadline_days" in w.get("window", {})]
        if not timed:
            return None
        w = rng.choice(timed)
        del w["window"]["deadline_days"]
        return out, f"{w['name']} without its deadline"
    if change in ("lower_traffic", "loosen_slo"):
        services = [w for w in out["workloads"] if w["kind"] == "inference"]
        if not services:
            return None
        w = rng.choice(services)
        if change == "lower_traffic":
            w["traffic"]["peak_rps"] = w["traffic"]["peak_rps"] / 2
            return out, f"{w['name']} at half the traffic ({w['traffic']['peak_rps']} rps)"
        w["slo"]["ttft_p99_ms"] *= 2
        w["slo"]["tpot_p99_ms"] *= 1.5
        return out, f"{w['name']} with a looser SLO ({w['slo']['ttft_p99_ms']} ms TTFT, {w['slo']['tpot_p99_ms']} ms TPOT)"
    if change == "declare_storage":
        dcs = [s for s in out["sites"] if s["type"] == "on_prem" and "storage" not in s]
        if not dcs or out["policy"].get("max_cloud_share") is not None:
            return None
        site = rng.choice(dcs)
        homed = [w["data"]["dataset_tb"] for w in out["workloads"]
                 if (w.get("data") or {}).get("home") == site["name"]]
        site["storage"] = {"existing_tb": max(homed, default=0.0) + rng.choice((0.5, 20.0, 200.0))}
        return out, f"{site['name']} already has {site['storage']['existing_tb']} TB of storage"
    raise ValueError(change)


# (seed, change) for every change that applies to the seed's spec (generating is cheap).
CASES = [(seed, change) for seed in range(MONOTONE_SPECS) for change in CHANGES
         if relax(O.random_spec(seed), change, seed) is not None]


@pytest.mark.slow
@pytest.mark.parametrize("seed, change", CASES)
def test_relaxing_a_spec_never_makes_the_plan_dearer(seed, change, tmp_path):
    data = O.random_spec(seed)
    if change in LAST_MONTH_LOAD:
        data["policy"]["after_horizon"] = "prorated"
    relaxed_data, what = relax(data, change, seed)
    original = O.compile_outcome(O.write(data, tmp_path))
    outcome = O.compile_outcome(O.write(relaxed_data, tmp_path, f"{data['name']}-{change}"))
    why = O.relaxation_problem(outcome, original, "relaxed", "original")
    assert why is None, (f"seed {seed} (tests/oracle_specs.random_spec({seed})), {what}: {why}; "
                         f"original {original}, relaxed {outcome}")


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(RULE_SPECS))
def test_each_rule_bounds_no_higher_than_a_dearer_rules_plan(seed, tmp_path):
    """The bound oracle across rules: prorated <= continues <= full price every plan alike or
    cheaper, so a cheaper rule's bound is at most a dearer rule's plan (and whichever has a plan,
    the cheaper rule has one)."""
    outcomes = {}
    for rule in ("prorated", "continues", "full"):
        data = O.random_spec(seed)
        data["policy"]["after_horizon"] = rule
        outcomes[rule] = O.compile_outcome(O.write(data, tmp_path, f"{data['name']}-{rule}"))
    for cheaper, dearer in (("prorated", "continues"), ("continues", "full"), ("prorated", "full")):
        why = O.relaxation_problem(outcomes[cheaper], outcomes[dearer], cheaper, dearer)
        assert why is None, f"seed {seed} (tests/oracle_specs.random_spec({seed})): {why}; {outcomes}"
