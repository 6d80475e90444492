"""The typed plan values (BindingConstraint, BreakEven, IdleOwned) and the appraisal stage
(compiler/appraise/): plan.json's form of each value read back unchanged, the binding rule on
hand-made rows against hand-counted slack, and the read-back left unappraised.
"""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace

import pytest

from compiler.appraise import appraise
from compiler.appraise.limits import QUOTA_HEADROOM_GPUS, binding_constraints
from compiler.optimize import SolveOptions
from compiler.plan import BindingConstraint, BreakEven, IdleOwned, from_dict, to_dict, to_json
from compiler.problem import Constraint, Variable

from optimize_fixtures import candidates, cloud, onprem, spec, train_cand, training
from plan_fixtures import hybrid_plan

LINES = [
    "quota[aws-use1/H100] at $.sites[0].quotas.H100: at most 512 H100 GPUs at once at aws-use1",
    "cloud_share at $.policy.max_cloud_share: cloud spend is at most 60% of the total",
    "power[fra-dc1]: new nodes at fra-dc1 are limited by power_kw 1200 ($.sites[1].power_kw)",
    "capacity[fra-dc1/dgx-h100@035]: chat-70b takes all 64 owned H100 at fra-dc1 ($.sites[1].owned)",
    "free text with no form", "a at : b", "x: ", " at ", ": ", "", "q[a: b] at $.p: m: n",
]


@pytest.mark.parametrize("line", LINES)
def test_a_binding_line_reads_back_to_itself(line):
    assert BindingConstraint.read(line).text == line


def test_a_binding_line_of_decodes_form_reads_into_its_fields():
    b = BindingConstraint.read(LINES[0])
    assert (b.family, b.series, b.path, b.meaning) == (
        "quota", "quota[aws-use1/H100]", "$.sites[0].quotas.H100", "at most 512 H100 GPUs at once at aws-use1")
    assert b.name == "quota[aws-use1/H100] at $.sites[0].quotas.H100"
    share = BindingConstraint.read(LINES[1])
    assert (share.family, share.series, share.path) == ("cloud_share", "cloud_share", "$.policy.max_cloud_share")
    # no path: the series and its meaning (an older form); the meaning's own " at " stays in it
    cap = BindingConstraint.read(LINES[3])
    assert (cap.family, cap.series, cap.path) == ("capacity", "capacity[fra-dc1/dgx-h100@035]", "")
    assert cap.meaning.startswith("chat-70b takes all 64 owned H100 at fra-dc1")


IDLE = {"site": "dc1", "instance": "hgx-h100", "owned_nodes": 4, "idle_nodes": 2, "first_month": 3,
        "last_month": 7, "months": "3-7", "workload": "job", "reason": "dearer", "detail": "storage",
        "plan_usd": 100.0, "owned_option_usd": 250.5, "power_usd": 50.5, "storage_usd": 200.0,
        "storage_tier": "lustre", "storage_tb": 10.0, "data_tb": 8.0, "egress_usd": 0.0, "candidate": "c1"}


def test_typed_rows_write_plan_json_as_the_dicts_did():
    """A plan's typed rows write the keys and values its dict rows wrote, and read back equal."""
    plan = hybrid_plan()
    row = IdleOwned(**IDLE)
    bare = BreakEven(**{k: v for k, v in json.loads(to_json(plan))["breakeven"][0].items()
                        if k not in ("note", "on_prem_basis", "on_prem_fabric")})
    plan = replace(plan, idle_owned=(row,), breakeven=plan.breakeven + (bare,),
                   binding_constraints=tuple(BindingConstraint.read(b) for b in LINES))
    doc = json.loads(to_json(plan))
    assert doc["idle_owned"] == [IDLE]
    assert doc["binding_constraints"] == LINES
    assert doc["breakeven"][1]["note"] == "capex credited for 36 of 60 months of useful life"
    assert set(doc["breakeven"][-1]) == {           # the optional keys a row does not state: absent
        "gpu", "on_prem_site", "on_prem_instance", "cloud_site", "cloud_instance", "cloud_pricing",
        "on_prem_capex_usd_per_gpu", "on_prem_opex_usd_per_gpu_month", "cloud_usd_per_gpu_month",
        "breakeven_months", "breakeven_utilization"}
    back = from_dict(doc)
    assert back.idle_owned == (row,) and back.breakeven == plan.breakeven
    assert to_json(back) == to_json(plan)
    assert to_dict(back) == to_dict(plan)


# --- the binding rule, on rows made by hand -----------------------------------------------------

def _problem(*rows: Constraint, kinds: dict[str, str]):
    return SimpleNamespace(variables=[Variable(n, k) for n, k in kinds.items()], constraints=list(rows))


def _quota(month: int, rhs: float) -> Constraint:
    return Constraint(f"quota[aws/H100@{month:03d}]", "quota", (("n", 8.0),), "<=", rhs, "$.sites[0].quotas.H100",
                      "at most 64 H100 GPUs", family="quota", site="aws", gpu="H100", month=month)


def test_a_quota_binds_while_less_than_a_node_of_gpus_is_left():
    # 7 nodes x 8 GPUs = 56 in use: under 64 there are 8 GPUs left (one more node fits): not
    # binding; under 63, 7 left (no node fits): binding, once for its months
    kinds = {"n": "integer"}
    sol = SimpleNamespace(values={"n": 6.9999})         # an integer read back whole: 7
    assert binding_constraints(_problem(_quota(0, 64.0), kinds=kinds), sol) == ()
    got = binding_constraints(_problem(_quota(0, 63.0), _quota(1, 63.0), kinds=kinds), sol)
    assert got == (BindingConstraint("quota", "quota[aws/H100]", "$.sites[0].quotas.H100", "at most 64 H100 GPUs"),)
    assert 7.0 < QUOTA_HEADROOM_GPUS < 8.0


def test_power_binds_while_no_further_node_fits_and_max_gpus_only_when_full():
    power = Constraint("power[dc1]", "power", (("a", 10.0), ("b", 14.0)), "<=", 100.0, "$.sites[1].power_kw",
                       "power", family="power", site="dc1")
    gpus = Constraint("max_gpus[dc1]", "max_gpus", (("a", 8.0),), "<=", 80.0, "$.sites[1].max_gpus",
                      "gpus", family="max_gpus", site="dc1")
    kinds = {"a": "integer", "b": "integer"}
    # 9 x 10 kW = 90 of 100: 10 kW left, the smallest node's 10 kW: binding; 72 of 80 GPUs: not
    got = binding_constraints(_problem(power, gpus, kinds=kinds), SimpleNamespace(values={"a": 9.0}))
    assert [b.series for b in got] == ["power[dc1]"]
    # 8 x 10 = 80 kW: 20 left, room for a node: not binding; 64 of 80 GPUs: not binding either
    assert binding_constraints(_problem(power, gpus, kinds=kinds), SimpleNamespace(values={"a": 8.0})) == ()
    # 10 nodes: 100 kW and 80 GPUs, both full (an integer's -0.4 read back as 0)
    got = binding_constraints(_problem(power, gpus, kinds=kinds), SimpleNamespace(values={"a": 10.0, "b": -0.4}))
    assert [b.series for b in got] == ["max_gpus[dc1]", "power[dc1]"]
    empty = Constraint("cloud_share", "cloud_share", (), "<=", 0.0, "$.policy.max_cloud_share", "share",
                       family="cloud_share")
    assert binding_constraints(_problem(empty, kinds={}), SimpleNamespace(values={})) == ()


# --- the read-back leaves the appraisal to appraise ---------------------------------------------

def test_read_back_indexes_the_solution_and_appraise_adds_what_is_priced_beside_it():
    from compiler.optimize import strategy
    from compiler.optimize.formulate import formulate
    from compiler.readback.decode import decode, read_back

    aws, dc = cloud(), onprem(usd_kwh=0.05)
    w = training("job")
    cands = candidates(spec([aws, dc], [w], horizon=12),
                       [train_cand(w, aws, "p5.48xlarge", 8, 2000.0), train_cand(w, dc, "hgx-h100", 8, 2000.0)])
    problem = formulate(cands)
    options = SolveOptions(gap=1e-9)
    problem, sol, path = strategy.run(problem, strategy.choose(problem, options), options)
    bare = read_back(problem, sol, path)
    assert bare.breakeven == () and bare.idle_owned == () and bare.binding_constraints == ()
    assert all(x.alternatives == () and x.chosen_alone is None for x in bare.workloads)
    full = appraise(problem, sol, bare)
    assert full == decode(problem, sol, path)
    # appraisal adds; it changes nothing the read-back indexed
    assert replace(full, breakeven=(), idle_owned=(), binding_constraints=(),
                   workloads=tuple(replace(x, alternatives=(), chosen_alone=None) for x in full.workloads)) == bare
    [job] = full.workloads
    assert job.chosen_alone is not None and job.alternatives          # the other site, priced alone
    assert {(b.on_prem_site, b.cloud_site) for b in full.breakeven} == {("dc1", aws.name)}


def test_every_idle_reason_the_schema_allows_has_its_words_in_the_report():
    from pathlib import Path

    from compiler.plan import IDLE_REASONS, IDLE_TERMS
    from compiler.report.views import _IDLE_WHY, _idle_priced

    schema = json.loads((Path(__file__).resolve().parents[1] / "schemas" / "plan.schema.json").read_text())
    assert set(IDLE_REASONS) == set(schema["$defs"]["idleOwned"]["properties"]["reason"]["enum"]) == set(_IDLE_WHY)
    assert set(_idle_priced(IdleOwned(**IDLE))) == set(IDLE_TERMS)
