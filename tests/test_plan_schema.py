"""plan.json against schemas/plan.schema.json: every plan the compiler writes must validate."""

from __future__ import annotations

import copy
import json
import typing

import jsonschema
import pytest

from compiler.plan import (CostBreakdown, EstimateFigures, Holding, LayoutPlan, SpecInputs, StepBreakdown, Placement, Plan, Pool, SitePlan, SolverInfo, WorkloadPlan,
                           from_dict, to_dict, to_json)
from compiler.resources import schema
from compiler.spec import Quantization
from plan_fixtures import ALL, hybrid_plan

VALIDATOR = jsonschema.Draft202012Validator(schema("plan.schema.json"))


def errors(doc) -> list[str]:
    return sorted(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(doc))


def test_schema_is_valid_2020_12():
    s = schema("plan.schema.json")
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(s)


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_fixture_plan_validates(name):
    plan = ALL[name]()
    assert errors(to_dict(plan)) == []
    # what is written to disk, read back, is the same document and still valid
    doc = json.loads(to_json(plan))
    assert errors(doc) == []
    assert to_dict(from_dict(doc)) == doc


def _minimal(kind: str, estimate: EstimateFigures) -> Plan:
    """A hand-built plan with one workload and nothing optional (a placement still says which
    candidate it runs and which nodes it holds)."""
    return Plan(
        spec_name="tiny", spec_sha256="a" * 64, catalog_version="2026.11", horizon_months=1,
        solver=SolverInfo("highs", "optimal", 10.0, 10.0, 0.0, 0.01), total_cost_usd=10.0,
        cost_breakdown_usd=CostBreakdown(cloud_compute=10.0),
        sites=(SitePlan("gcp-usc1", "cloud", "gcp", "us-central1", ("kubernetes",)),),
        pools=(Pool("gcp-usc1", "g2-standard-8", "L4", 1, 1, "on_demand", "ethernet"),),
        workloads=(WorkloadPlan(
            name="w", kind=kind, gpu="L4", gpus=1, layout=LayoutPlan(),
            placements=(Placement("gcp-usc1", "g2-standard-8", "on_demand", 1, 1,
                                  1 if kind == "inference" else 0, candidate="w/gcp-usc1/g2-standard-8/tp1",
                                  holdings=(Holding("on_demand", (1,), (730.0,)),)),),
            estimate=estimate, cost_usd=10.0, orchestrator="kubernetes"),))


HAND_BUILT = {
    "inference": ("inference", EstimateFigures(memory_gb_per_gpu=20.1, tokens_per_s=900.0, ttft_ms=180.0,
                                               tpot_ms=30.5, batch=16)),
    "llm-training": ("training", EstimateFigures(memory_gb_per_gpu=18.0, duration_hours=3.5, mfu=0.31,
                                                 tokens_per_s=2100.0)),
    # with where the wall time goes (older plans have no step_breakdown: the case above)
    "llm-training-breakdown": ("training", EstimateFigures(
        memory_gb_per_gpu=18.0, duration_hours=3.5, mfu=0.31, tokens_per_s=2100.0,
        step_breakdown=StepBreakdown(compute=0.8, exposed_tp=0.05, exposed_cp=0.0, exposed_ep=0.0, exposed_pp=0.01,
                                     pipeline_bubble=0.04, exposed_dp=0.06, lost=0.04))),
    "vision-breakdown": ("training", EstimateFigures(
        memory_gb_per_gpu=9.0, duration_hours=20.0, mfu=0.2, samples_per_s=2500.0,
        step_breakdown=StepBreakdown(compute=0.7, exposed_dp=0.01, data_loading=0.28, lost=0.01))),
    # a vision job with notes: no tokens_per_s key written
    "vision-notes": ("training", EstimateFigures(memory_gb_per_gpu=9.0, duration_hours=20.0, mfu=0.2,
                                                 samples_per_s=2500.0, notes=("data loading bound",))),
}


@pytest.mark.parametrize("case", sorted(HAND_BUILT))
def test_hand_built_plans_validate(case):
    kind, estimate = HAND_BUILT[case]
    assert errors(to_dict(_minimal(kind, estimate))) == []


def _hybrid_doc() -> dict:
    return to_dict(hybrid_plan())


def _mutations():
    """(what, edit) pairs: each edit breaks the contract in one place."""
    def set_(path, value):
        def edit(d):
            *head, last = path
            for k in head:
                d = d[k]
            d[last] = value
        return edit

    def delete(path):
        def edit(d):
            *head, last = path
            for k in head:
                d = d[k]
            del d[last]
        return edit

    # workloads are in plan order: chat-70b (inference), llama-70b-pretrain, resnet50
    return {
        "unknown top-level key": set_(["optimiser"], "cbc"),
        "missing total": delete(["total_cost_usd"]),
        "bad pricing": set_(["pools", 0, "pricing"], "reserved_5y"),
        "nodes not an integer": set_(["pools", 0, "nodes"], 2.5),
        "unknown pool key": set_(["pools", 0, "zone"], "a"),
        "bad sha256": set_(["spec", "sha256"], "xyz"),
        "inference estimate without tpot": delete(["workloads", 0, "estimate", "tpot_ms"]),
        "training estimate with inference keys": set_(["workloads", 1, "estimate", "ttft_ms"], 3.0),
        "training estimate without throughput": delete(["workloads", 1, "estimate", "tokens_per_s"]),
        "mfu above one": set_(["workloads", 1, "estimate", "mfu"], 1.4),
        "step breakdown with an unknown term": set_(["workloads", 1, "estimate", "step_breakdown"],
                                                    {"compute": 0.9, "exposed_dp": 0.05, "lost": 0.05,
                                                     "network": 0.1}),
        "step breakdown share above one": set_(["workloads", 1, "estimate", "step_breakdown"],
                                               {"compute": 1.2, "exposed_dp": 0.0, "lost": 0.0}),
        "step breakdown without lost time": set_(["workloads", 1, "estimate", "step_breakdown"],
                                                 {"compute": 0.9, "exposed_dp": 0.1}),
        "training in two places": set_(["workloads", 1, "placements"],
                                       [_hybrid_doc()["workloads"][1]["placements"][0]] * 2),
        "unknown orchestrator": set_(["workloads", 0, "orchestrator"], "nomad"),
        "utilization above one": set_(["pools", 0, "monthly_utilization", 0], 1.5),
        "breakeven missing months": delete(["breakeven", 0, "breakeven_months"]),
        "layout with an unknown degree": set_(["workloads", 0, "layout", "sp"], 2),
        "layout without its context degree": delete(["workloads", 0, "layout", "cp"]),
        "placement without its layout": delete(["workloads", 0, "placements", 0, "layout"]),
        "unknown quantization": set_(["workloads", 0, "quantization"], "fp6"),
        "bad cost category name": set_(["cost_breakdown_usd", "Cloud Compute"], 1.0),
        "placement without holdings": set_(["workloads", 1, "placements", 0, "holdings"], []),
        "placement missing holdings": delete(["workloads", 1, "placements", 0, "holdings"]),
        "placement without candidate": delete(["workloads", 0, "placements", 0, "candidate"]),
        "holding of an unknown pricing": set_(["workloads", 1, "placements", 0, "holdings", 0, "pricing"],
                                              "reserved_5y"),
        "holding with a fractional node": set_(["workloads", 1, "placements", 0, "holdings", 0,
                                                "monthly_nodes", 0], 1.5),
        "holding with negative node-hours": set_(["workloads", 1, "placements", 0, "holdings", 0,
                                                  "monthly_node_hours", 0], -1.0),
        "unknown holding key": set_(["workloads", 1, "placements", 0, "holdings", 0, "zone"], "a"),
        "negative replicas in a month": set_(["workloads", 0, "placements", 0, "monthly_replicas", 2], -1),
        "pool missing node-hours": delete(["pools", 0, "monthly_node_hours"]),
        "empty reservation": set_(["pools", 1, "reservations", 0, "nodes"], 0),
        "reservation without start": delete(["pools", 1, "reservations", 0, "start_month"]),
        "storage missing its months": delete(["storage", 0, "monthly_tb"]),
        "inputs not a mapping": set_(["workloads", 0, "inputs"], "model: llama-3-70b"),
    }


@pytest.mark.parametrize("what", sorted(_mutations()))
def test_schema_rejects(what):
    doc = copy.deepcopy(_hybrid_doc())
    assert errors(doc) == []
    _mutations()[what](doc)
    assert errors(doc) != [], what


@pytest.mark.parametrize("quantization", typing.get_args(Quantization))
def test_every_quantization_a_spec_may_state_validates(quantization):
    # a plan serving a model at any width the spec accepts (NVFP4 included) reads back as a baseline
    doc = copy.deepcopy(_hybrid_doc())
    doc["workloads"][0]["quantization"] = quantization
    assert errors(doc) == []


def test_compiled_example_plan_validates():
    """The real pipeline's plan validates against the schema."""
    from examples_cache import example

    _candidates, result = example("llm-pretrain-aws")
    doc = to_dict(result.plan)
    assert errors(doc) == []
    # every training workload says where its wall time goes
    training = [w for w in doc["workloads"] if w["kind"] == "training"]
    assert training
    for w in training:
        assert sum(w["estimate"]["step_breakdown"].values()) == pytest.approx(1, abs=1e-3), w["name"]
    # and records the spec it was asked, for diff: the model and window as the spec states them
    for w in doc["workloads"]:
        assert w["inputs"]["model"] and "start_month" in w["inputs"]["window"], w["name"]
        assert not {"name", "kind", "path"} & set(w["inputs"])


def test_inputs_validate_and_read_back():
    from dataclasses import replace

    plan = hybrid_plan()
    inputs = {"model": "llama-3-70b", "sites": ["fra-dc1"], "traffic": {"peak_rps": 20}, "window": {"start_month": 2}}
    plan = replace(plan, workloads=(replace(plan.workloads[0], inputs=SpecInputs.of(inputs)),) + plan.workloads[1:])
    doc = json.loads(to_json(plan))
    assert errors(doc) == []
    assert doc["workloads"][0]["inputs"] == inputs and "inputs" not in doc["workloads"][1]
    assert from_dict(doc).workloads[0].inputs == SpecInputs.of(inputs) and from_dict(doc).workloads[1].inputs is None
    assert from_dict(doc).workloads[0].inputs.document == inputs
