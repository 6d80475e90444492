"""The typed fields of every variable and row formulate makes (Variable / Constraint: family,
workload, candidate, site, instance, month, ...) say what its name says.

decode, improve, explain and month_floors read those fields and never parse a name back, so a field
that disagrees with the name would silently misread a plan. The oracle is this file's own parse of
the names (one pattern per family), run on the model of every shipped example and of two variants
that add the rows the examples lack (pinned pricing, owned and bought nodes)."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from compiler.optimize.explain import PENALTY, _placed
from compiler.optimize.formulate import Constraint, Variable, formulate, series_name
from compiler.pipeline import estimate

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = tuple(sorted(p.stem for p in (ROOT / "examples").glob("*.yaml")))

VAR_FIELDS = ("family", "workload", "candidate", "site", "instance", "gpu", "tier", "fabric", "pricing", "month")
ROW_FIELDS = ("family", "workload", "candidate", "site", "instance", "gpu", "tier", "fabric", "pricing",
              "without", "month")

# Pieces of a name: a site, instance, tier, fabric, pricing or GPU holds no '/', '@' or bracket; a
# candidate id may hold '/' (workload/site/instance+fabric/...); a workload holds no '@' or '/'.
_PART = r"[^/@\[\]#]+"
SITE, INST, TIER, FAB, PRICE, GPU = (rf"(?P<{k}>{_PART})" for k in ("site", "instance", "tier", "fabric",
                                                                     "pricing", "gpu"))
WORK, CAND, MONTH = rf"(?P<workload>{_PART})", r"(?P<candidate>[^@\[\]]+)", r"@(?P<month>\d{3})"
POOL_MONTH = rf"{SITE}/{INST}{MONTH}"

VARIABLES = {
    "x": CAND,
    "y": CAND + MONTH,
    "mix": WORK + MONTH + r"#\d{3}",
    "buy": f"{SITE}/{INST}",
    "fab": f"{SITE}/{INST}/{FAB}",
    "fabnodes": f"{SITE}/{INST}/{FAB}",
    "reserved": rf"{SITE}/{INST}/{PRICE}@(?P<start>\d{{3}})",
    "ondemand": POOL_MONTH,
    "inodes": POOL_MONTH,
    "res_free": POOL_MONTH,
    "res_taken": POOL_MONTH,
    "od_excess": CAND + MONTH,
    "storage": f"{SITE}/{TIER}{MONTH}",
    "storage_open": f"{SITE}/{TIER}{MONTH}",
    "storage_peak": f"{SITE}/{TIER}",
    "storage_peak_month": f"{SITE}/{TIER}{MONTH}",
    "uses_type": f"{WORK}/{SITE}/{INST}",
    "uses_site": f"{WORK}/{SITE}",
    "uses_gpu": f"{WORK}/{GPU}",
    "pool_on": POOL_MONTH,
    "pool_start": POOL_MONTH,
    "in_mix": CAND + MONTH,
    "mix_change": WORK + MONTH,
    # policy.after_horizon continues (16): a cloud pool's term over one run of months after the
    # horizon; a bought pool's (no month); its last-month load; the replicas credited then
    "idle_tail": rf"{SITE}/{INST}(?:/{PRICE}@(?P<start>\d{{3}}))?",
    "idle_load": f"{SITE}/{INST}",
    "idle_past_owned": f"{SITE}/{INST}",
    "tail_credit": CAND,
}

_Y = rf"y\[{CAND}{MONTH}\]"
ROWS = {
    "one": WORK,
    "demand": WORK + MONTH,
    "survive": rf"{WORK}{MONTH}/-(?P<without>{_PART})",
    "cover": rf"{WORK}{MONTH}(?:/-(?P<without>{_PART})|/2)?",
    "mix": WORK + MONTH,
    "mix_y": _Y,
    "node_mix": _Y,
    "node_for": _Y,
    "packing": POOL_MONTH,
    "od_excess": CAND + MONTH,
    "ondemand_jobs": POOL_MONTH,
    "ondemand": POOL_MONTH,
    "res_free": POOL_MONTH,
    "res_taken": POOL_MONTH,
    "pin_pricing": f"{SITE}/{INST}/{PRICE}{MONTH}",
    "pin_nodes": CAND + MONTH,
    "quota": f"{SITE}/{GPU}{MONTH}",
    "fabric_nodes": f"{SITE}/{INST}/{FAB}",
    "fabric_nodes_max": f"{SITE}/{INST}/{FAB}",
    "fabric_nodes_chosen": f"{SITE}/{INST}/{FAB}",
    "fabric_needed": f"{SITE}/{INST}/{FAB}",
    "fabric_use": CAND,
    "fabric": f"{SITE}/{INST}",
    "buy_for": CAND,
    "capacity": POOL_MONTH,
    "power": SITE,
    "racks": SITE,
    "rack_power": SITE,
    "max_gpus": SITE,
    "storage_max": f"{SITE}/{TIER}{MONTH}",
    "storage_min": f"{SITE}/{TIER}{MONTH}",
    "storage_peak": f"{SITE}/{TIER}{MONTH}",
    "storage_need_max": f"{SITE}/{TIER}{MONTH}",
    "storage_peak_max": f"{SITE}/{TIER}{MONTH}",
    "storage_peak_one": f"{SITE}/{TIER}",
    "storage_peak_any": f"{SITE}/{TIER}",
    "storage": SITE + MONTH,
    "storage_used": f"{SITE}/{WORK}{MONTH}",
    "type_use": _Y,
    "max_types": f"{WORK}/{SITE}",
    "uses_site": _Y,
    "uses_gpu": _Y,
    "max_sites": WORK,
    "max_gpu_types": WORK,
    "uses_site_mix": f"{WORK}/{SITE}{MONTH}",
    "uses_gpu_mix": f"{WORK}/{GPU}{MONTH}",
    "uses_type_mix": f"{WORK}/{SITE}/{INST}{MONTH}",
    "pool_on": POOL_MONTH + "/(?:some|nodes)",
    "pool_start": POOL_MONTH,
    "pool_life": POOL_MONTH,
    "in_mix": _Y,
    "in_mix_some": _Y,
    "mix_change": CAND + MONTH + "/[+-]",
    "mix_hold": WORK + MONTH,
    "idle_tail": rf"{SITE}/{INST}(?:@(?P<start>\d{{3}}))?",
    "idle_term": rf"{SITE}/{INST}/{PRICE}@(?P<start>\d{{3}})",
    "idle_load": f"{SITE}/{INST}",
    "idle_load_on": f"{SITE}/{INST}",
    "tail_credit": CAND,
    "tail_forecast": WORK,
}


def _parse(name: str, patterns: dict[str, str], fields: tuple[str, ...], workload_of: dict[str, str],
           last_month: int | None = None) -> dict:
    """The fields a name says: its head is the family, the rest matched by the family's pattern
    (a row's cuts #cutNN and #mirNN say what the row does); a candidate's workload is looked up."""
    if name == "cloud_share":
        return {f: ("cloud_share" if f == "family" else None) for f in fields}
    head, rest = name.split("[", 1)
    assert head in patterns, f"{name}: a family this test does not know (add its pattern)"
    match = re.fullmatch(rf"{patterns[head]}\](?:#(?:cut|mir)\d{{2}})?", rest)
    assert match, f"{name}: not the {head} pattern"
    got = {f: None for f in fields} | {k: v for k, v in match.groupdict().items() if k in fields}
    got["family"] = head
    if head == "idle_tail" and fields == VAR_FIELDS and got["pricing"] is None:
        got["pricing"] = "purchase"     # a bought pool's idle life: its name has no term to say
    if head in ("tail_credit", "tail_forecast"):
        got["month"] = last_month       # the credits are the horizon's last month's, by definition
    if got["month"] is not None:
        got["month"] = int(got["month"])
    if got["candidate"] is not None:
        got["workload"] = workload_of[got["candidate"]]
        if head == "tail_credit" and fields == VAR_FIELDS:   # a credit variable names its pool too
            site, instance = got["candidate"].split("/")[1:3]
            got["site"], got["instance"] = site, instance.split("+")[0]
    return got


def _variant(tmp_path: Path, example: str, edit) -> Path:
    doc = copy.deepcopy(yaml.safe_load((ROOT / "examples" / f"{example}.yaml").read_text()))
    edit(doc)
    out = tmp_path / f"{example}-{edit.__name__.strip('_')}.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


def _pinned(doc) -> None:
    """hybrid-llm-platform over a year with the continued pretraining pinned to 1-year reserved
    nodes and the fine-tuning to bought nodes (the pin_pricing and pin_nodes rows of cloud and
    on-prem pools), and chat-70b from month 0, beside the pretraining: the res_free rows of a
    pool-month with replicas, reserved nodes and a job."""
    by_name = {w["name"]: w for w in doc["workloads"]}
    by_name["llama-70b-continued"]["pin"] = {"pricing": "reserved_1y"}
    by_name["support-8b-finetune"]["pin"] = {"pricing": "purchase"}
    by_name["chat-70b"]["window"] = {"start_month": 0}
    doc["horizon_months"] = 12


def _on_demand(doc) -> None:
    """llm-pretrain-aws with its first job pinned to on-demand nodes."""
    doc["workloads"][0]["pin"] = {"pricing": "on_demand"}


def _limited(doc) -> None:
    """multi-region-inference with two sites a service, two instance types a service and site and a
    3-month mix hold: the operability rows (15a), (15b), (15d) (the defaults write (15e), (15f))."""
    doc["policy"].update(max_instance_types_per_site=2, min_months_per_mix=3, max_sites_per_service=2)


def _hybrid_limited(doc) -> None:
    """hybrid-llm-platform with one site and one instance type a site per service: the rows (15a)
    and (15d) in months with replica mixes, and their cuts over the mixes."""
    doc.setdefault("policy", {}).update(max_instance_types_per_site=1, max_sites_per_service=1,
                                        allowed_gpus=["H100", "L40S"])   # few enough candidates for mixes
    del next(w for w in doc["workloads"] if w["name"] == "eu-assistant-8b")["sites"]   # two sites to count


@pytest.fixture(scope="module")
def problems(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("keys")
    paths = [ROOT / "examples" / f"{name}.yaml" for name in EXAMPLES]
    paths += [_variant(tmp, "hybrid-llm-platform", _pinned), _variant(tmp, "llm-pretrain-aws", _on_demand),
              _variant(tmp, "multi-region-inference", _limited), _variant(tmp, "hybrid-llm-platform", _hybrid_limited)]
    return [formulate(estimate(p)[0]) for p in paths]


def _workload_of(problem) -> dict[str, str]:
    return {c.id: c.workload for cs in problem.chosen_from.values() for c in cs}


@pytest.mark.slow
def test_every_variable_has_the_fields_its_name_says(problems):
    for problem in problems:
        workload_of = _workload_of(problem)
        reservations = {r.var: r for r in problem.reservations}
        for v in problem.variables:
            want = _parse(v.name, VARIABLES, VAR_FIELDS, workload_of, problem.spec.horizon_months - 1)
            assert {f: getattr(v, f) for f in VAR_FIELDS} == want, v.name
            if v.family == "reserved":    # its start and months: Problem.reservations
                r = reservations[v.name]
                start = int(re.search(r"@(\d{3})\]$", v.name).group(1))
                assert (r.site, r.instance, r.term, r.start) == (v.site, v.instance, v.pricing, start)


@pytest.mark.slow
def test_every_row_has_the_fields_its_name_says(problems):
    for problem in problems:
        workload_of = _workload_of(problem)
        for c in problem.constraints:
            want = _parse(c.name, ROWS, ROW_FIELDS, workload_of, problem.spec.horizon_months - 1)
            assert {f: getattr(c, f) for f in ROW_FIELDS} == want, c.name


@pytest.mark.slow
def test_the_cases_cover_every_family(problems):
    """Every family above occurs in some case: no check is vacuous."""
    assert {v.family for p in problems for v in p.variables} == set(VARIABLES)
    assert {c.family for p in problems for c in p.constraints} == set(ROWS) | {"cloud_share"}


@pytest.mark.slow
def test_a_series_name_is_the_name_without_its_month(problems):
    """explain.py groups the rows it relaxes by series_name, and the plan's binding constraints
    report it: the name with its month left out."""
    seen = set()
    for problem in problems:
        for c in problem.constraints:
            if c.group in PENALTY:
                assert series_name(c) == re.sub(r"@\d+", "", c.name), c.name
                seen.add(c.family)
    assert {"one", "demand", "survive", "quota", "capacity", "power", "racks", "pin_pricing",
            "pin_nodes"} <= seen


def test_a_hand_made_variable_or_row_has_no_family():
    """Hand-made problems (tests, sub-problems) are about nothing formulate knows: empty family."""
    assert Variable("v", "binary").family == "" and Constraint("r", "g", (), "<=", 0.0).family == ""


@pytest.mark.slow
def test_explain_names_a_placement_row_as_its_name_does(problems):
    """explain.py says what a placement row places from its fields: the text inside its name."""
    seen = set()
    for problem in problems:
        for c in problem.constraints:
            if c.group == "placement":
                assert _placed(c) == re.fullmatch(r"[a-z_]+\[(.*)\]", c.name).group(1), c.name
                seen.add(c.family)
    assert seen == {"one", "pin_pricing", "pin_nodes"}
