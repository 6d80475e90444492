"""Re-planning from a baseline (`--baseline PLAN`, compiler/baseline.py): what the plan before
bought ahead of the new start is held, never bought again, and used before anything is rented;
a file that is not a plan of this spec is a clear error. The oracle of the quarterly replay is
the previous plan itself: its terms that began before the new start, re-dated by hand, and the
catalog's rate for what they still cost."""

from __future__ import annotations

import json

import pytest

from compiler import pipeline
from compiler.catalog import load_catalog
from compiler.diagnostics import CompileError
from compiler.plan import to_json
from compiler.spec import HOURS_PER_MONTH
from test_held import SPEC as HELD_SPEC

# the spec of tests/test_held.py, dated by each quarter and holding nothing of its own
SPEC = HELD_SPEC.replace("name: held", "name: replay").replace("start: 2027-01", "start: START").replace("HELD\n", "")
QUARTERS = (("2027-01", 20), ("2027-04", 24), ("2027-07", 26), ("2027-10", 30))


def _spec(tmp_path, start: str, rps: float, name: str = "replay") -> str:
    path = tmp_path / f"{name}-{start}.yaml"
    path.write_text(SPEC.replace("START", start).replace("RPS", f"{rps:g}").replace("name: replay", f"name: {name}"),
                    encoding="utf-8")
    return str(path)


def _compile(spec: str, baseline: str | None = None, warned: list | None = None):
    return pipeline.compile_spec(spec, pipeline.CompileOptions(
        baseline=baseline, warn=(lambda ds, _src: warned.extend(ds)) if warned is not None else None)).plan


def _write(tmp_path, plan, name: str) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(to_json(plan), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    """One spec re-planned each quarter for a year: start three months later and its traffic up
    each time, each plan with the one before as its baseline."""
    tmp = tmp_path_factory.mktemp("replay")
    plans, base = [], None
    for start, rps in QUARTERS:
        plan = _compile(_spec(tmp, start, rps), base)
        plans.append(plan)
        base = _write(tmp, plan, f"plan-{start}")
    return plans


def _terms(plan):
    """(instance, term) -> [(start month, nodes)] of the plan's reserved pools."""
    return {(p.instance, p.pricing): [(r.start_month, r.nodes) for r in p.reservations]
            for p in plan.pools if p.reservations}


@pytest.mark.slow
def test_what_the_plan_before_bought_is_held_and_never_bought_again(replay):
    rate = load_catalog().instances["p5.48xlarge"].price("us-east-1", "reserved_1y")
    assert any(r.start_month >= 0 for p in replay[0].pools for r in p.reservations)   # the first plan buys terms
    for before, after in zip(replay, replay[1:]):
        # by hand: a term that began before the new start (3 months later) and still runs then
        carried = sorted((s - 3, n) for terms in _terms(before).values() for s, n in terms if s - 3 < 0 < s - 3 + 12)
        held = sorted((s, n) for terms in _terms(after).values() for s, n in terms if s < 0)
        assert held == carried and carried
        assert sorted((h.until_month, h.nodes) for h in after.held) == sorted((s + 12, n) for s, n in carried)
        # what they still cost, at the catalog's rate, is sunk and apart from the total
        assert after.sunk_usd == pytest.approx(sum(n * rate * HOURS_PER_MONTH * (s + 12) for s, n in carried),
                                               abs=0.01 * len(carried))


@pytest.mark.slow
def test_held_nodes_are_used_before_anything_is_rented(replay):
    for plan in replay[1:]:
        pools = {(p.instance, p.pricing): p for p in plan.pools}
        for h in plan.held:
            for m, used in enumerate(h.monthly_used):
                if used < h.nodes - 1e-6:       # a held node idle: nothing rented that month
                    on_demand = pools.get((h.instance, "on_demand"))
                    assert on_demand is None or on_demand.monthly_nodes[m] == 0, (plan.start, m)


@pytest.mark.slow
def test_a_re_plan_never_costs_more_than_one_from_scratch_plus_what_it_inherits(replay, tmp_path):
    # held nodes are free: the re-plan is no dearer than the same spec compiled with no baseline
    for (start, rps), plan in zip(QUARTERS[1:], replay[1:]):
        scratch = _compile(_spec(tmp_path, start, rps))
        assert plan.total_cost_usd <= scratch.total_cost_usd * (1 + scratch.solver.gap) + 0.01


def test_a_corrupt_or_hand_edited_baseline_is_a_clear_error(tmp_path):
    spec = _spec(tmp_path, "2027-04", 24)
    bad = tmp_path / "bad.json"
    bad.write_text('{"spec": {"name": "replay",\n  "sha256": }', encoding="utf-8")
    with pytest.raises(CompileError) as err:
        _compile(spec, str(bad))
    (d,) = err.value.diagnostics
    assert d.code == "E010" and (d.position.line, d.position.column) == (2, 13)   # the '}'
    assert err.value.source.filename == str(bad)
    bad.write_text(json.dumps({"spec": {"name": "replay"}, "pools": "none"}), encoding="utf-8")
    with pytest.raises(CompileError) as err:
        _compile(spec, str(bad))
    assert err.value.diagnostics[0].code == "E010" and "not a plan.json" in err.value.diagnostics[0].message
    with pytest.raises(CompileError) as err:
        _compile(spec, str(tmp_path / "missing.json"))
    assert err.value.diagnostics[0].code == "E010"


@pytest.mark.slow
def test_a_baseline_of_another_spec_or_a_later_start_is_an_error_and_an_undated_one_a_warning(tmp_path):
    first = _compile(_spec(tmp_path, "2027-01", 20))
    other = _write(tmp_path, first, "first")
    with pytest.raises(CompileError) as err:
        _compile(_spec(tmp_path, "2027-04", 24, name="another"), other)
    assert err.value.diagnostics[0].code == "E011" and "'replay'" in err.value.diagnostics[0].message
    with pytest.raises(CompileError) as err:
        _compile(_spec(tmp_path, "2026-10", 24), other)
    assert err.value.diagnostics[0].code == "E011"
    undated = tmp_path / "undated.yaml"
    undated.write_text(SPEC.replace("start: START\n", "").replace("RPS", "24"), encoding="utf-8")
    warned: list = []
    plan = _compile(str(undated), other, warned)
    assert [d.code for d in warned] == ["E012"] and plan.held == ()


FINETUNE = """\
  - name: extra-8b-finetune
    kind: training
    model: llama-3-8b
    tokens: 2.0e10
    seq_len: 4096
    window: {start_month: 4, deadline_days: 14}
"""


def _placed(plan):
    """workload -> the candidates its placements run on (where the plan runs it, not how much)."""
    return {w.name: frozenset(p.candidate for p in w.placements) for w in plan.workloads}


def _exactly(plan):
    """workload -> each placement's candidate, pricing, nodes and replicas month by month."""
    return {w.name: sorted((p.candidate, p.pricing, p.nodes, p.monthly_replicas) for p in w.placements)
            for w in plan.workloads}


@pytest.fixture(scope="module")
def hybrid(tmp_path_factory):
    """examples/hybrid-llm-platform.yaml compiled (the session's compile of it, which other
    files read too: the same spec and options), then re-planned from that plan with a small
    fine-tune added, and with a training job dropped."""
    from examples_cache import ROOT, example

    tmp = tmp_path_factory.mktemp("hybrid")
    text = (ROOT / "examples" / "hybrid-llm-platform.yaml").read_text(encoding="utf-8")
    base = example("hybrid-llm-platform")[1].plan
    base_json = _write(tmp, base, "base")
    cut = text.index("  - name: chat-70b")
    added = tmp / "added.yaml"
    added.write_text(text[:cut] + FINETUNE + "\n" + text[cut:], encoding="utf-8")
    start = text.index("  - name: support-8b-finetune")
    dropped = tmp / "dropped.yaml"
    dropped.write_text(text[:start] + text[cut:], encoding="utf-8")
    return base, _compile(str(added), base_json, []), _compile(str(dropped), base_json, [])


@pytest.mark.slow
def test_adding_a_fine_tune_moves_nothing_else_and_costs_at_most_its_own_cost(hybrid):
    base, added, _dropped = hybrid
    before, after = _exactly(base), _exactly(added)
    assert {w: c for w, c in after.items() if w in before} == before        # every other workload stays as it was
    own = next(w.cost_usd for w in added.workloads if w.name == "extra-8b-finetune")
    assert added.total_cost_usd <= base.total_cost_usd + own * 1.01 + 0.01
    assert added.solver.moves_usd == 0.0


@pytest.mark.slow
def test_dropping_a_training_job_never_raises_the_total(hybrid):
    base, _added, dropped = hybrid
    assert dropped.total_cost_usd <= base.total_cost_usd + 0.01
    assert {w: c for w, c in _placed(base).items() if w in _placed(dropped)} == _placed(dropped)


@pytest.mark.slow
@pytest.mark.parametrize("saving", [0, 10 ** 9])
def test_a_running_workload_moves_only_where_that_saves_more_than_the_policy_asks(tmp_path, saving):
    # The base plan runs on H100 only; the re-plan may use H200 and L40S too. Asked for no saving
    # a move is free: the re-plan is the compile from scratch (same cost, within its gap). Asked
    # for more than any move can save, every service stays on the candidates it ran on.
    base = _compile(_spec(tmp_path, "2027-01", 20))
    text = SPEC.replace("START", "2027-01").replace("RPS", "20").replace(
        "allowed_gpus: [H100]", "allowed_gpus: [H100, H200, L40S]")
    text = text.replace("  min_pool_months: null\n", f"  min_pool_months: null\n  replan: {{min_saving_usd: {saving}, min_saving_share: 0}}\n")
    wider = tmp_path / f"wider-{saving}.yaml"
    wider.write_text(text, encoding="utf-8")
    replan = _compile(str(wider), _write(tmp_path, base, "base"), [])
    if saving:
        assert _placed(replan) == _placed(base) and replan.total_cost_usd <= base.total_cost_usd + 0.01
        return
    scratch = _compile(str(wider))
    assert _placed(scratch) != _placed(base)            # the wider choice does move the service
    assert replan.total_cost_usd == pytest.approx(scratch.total_cost_usd,
                                                  rel=max(replan.solver.gap, scratch.solver.gap) + 1e-6)


@pytest.mark.slow
def test_the_diff_of_a_re_plan_says_what_it_inherits_apart_from_its_total(replay):
    from compiler.diff import cautions, diff_plans, diff_to_json

    d = diff_plans(replay[0], replay[1])
    said = [c for c in cautions(d) if "sunk" in c]
    assert said and f"${replay[1].sunk_usd:,.0f}" in said[0]
    assert diff_to_json(d)["plans"]["b"]["sunk_usd"] == pytest.approx(replay[1].sunk_usd, abs=0.01)


def test_the_start_frees_only_the_workloads_the_change_touches():
    # Two services, the baseline's replicas and a pool's nodes: 'chat' still carries its demand on
    # the baseline's 3 replicas, 'code' needs 5 where the baseline ran 4. The start holds chat's
    # replicas as they were and leaves code's, and the pool's nodes, to the search.
    from compiler.optimize import _untouched
    from compiler.problem import Constraint, Problem, Variable

    variables = (Variable("y[chat]", "integer", family="y", workload="chat"),
                 Variable("y[code]", "integer", family="y", workload="code"),
                 Variable("inodes[pool]", "integer", family="inodes"),
                 Variable("moved[chat]", "binary", family="moved", workload="chat"))
    rows = (Constraint("demand[chat]", "demand", (("y[chat]", 1.0),), ">=", 3.0, family="demand", workload="chat"),
            Constraint("demand[code]", "demand", (("y[code]", 1.0),), ">=", 5.0, family="demand", workload="code"),
            Constraint("pack[pool]", "packing", (("y[chat]", 1.0), ("y[code]", 1.0), ("inodes[pool]", -2.0)), "<=", 0.0))
    problem = Problem(spec=None, candidates=None, chosen_from={}, variables=variables, constraints=rows)
    exact = {"y[chat]": 3.0, "y[code]": 4.0, "inodes[pool]": 4.0, "moved[chat]": 0.0}
    assert _untouched(problem, exact) == {"y[chat]": 3.0}
