"""Month floors (compiler/optimize/month_floors.py) and month windows (schedules.months on engine.py).

The floors are valid inequalities: the oracle is the same model solved to its end without them
(HiGHS, no node limit), whose optimum must satisfy every floor and stay the optimum with them.
The hand-worked case checks the bound the floors give against a figure worked on paper."""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from compiler.optimize import engine, schedules
from compiler.optimize import month_floors as month_floors_module
from compiler.optimize.formulate import Constraint, Problem, Variable, formulate
from compiler.optimize.month_floors import blocks, month_floors, serving_months, split, stitched, with_month_floors
from compiler.optimize.neighbourhoods import month_windows
from compiler.optimize.solve import HighsModel
from compiler.optimize.start import greedy_start
from compiler.pipeline import estimate

from optimize_fixtures import reserved_or_on_demand

ROOT = Path(__file__).resolve().parents[1]


def month_search(problem, start, model, schedule, say=lambda _m: None):
    """The month windows' schedule run by the engine from `start` on `model` (its plan)."""
    return engine.search(problem, start, lambda k=0: model, schedule, say=say)[0]


def _hand_problem() -> Problem:
    """Two months. Each month a service needs 4/3 of a replica (3 y_m >= 4: two whole ones), every
    replica needs a node that month: on demand at $4 (u_m) or a reserved one (r, $10, both
    months: $5 a month). By hand: two replicas a month, on demand, $8 a month, $16 in all (two
    reserved nodes: $20). The LP without floors: y_m = u_m = 4/3, $10.67."""
    v = [Variable("y[a@000]", "integer", 2, month=0, family="y"),
         Variable("y[a@001]", "integer", 2, month=1, family="y"),
         Variable("ondemand[p@000]", "continuous", costs=(("cloud_compute", 4.0),), month=0),
         Variable("ondemand[p@001]", "continuous", costs=(("cloud_compute", 4.0),), month=1),
         Variable("reserved[p@000]", "integer", costs=(("cloud_compute", 10.0),))]
    c = []
    for m in (0, 1):
        c.append(Constraint(f"demand[a@{m:03d}]", "demand", ((f"y[a@{m:03d}]", 3.0),), ">=", 4.0))
        c.append(Constraint(f"ondemand[p@{m:03d}]", "cloud_capacity",
                            ((f"ondemand[p@{m:03d}]", 1.0), ("reserved[p@000]", 1.0), (f"y[a@{m:03d}]", -1.0)),
                            ">=", 0.0))
    return Problem(spec=SimpleNamespace(horizon_months=2), candidates=None, chosen_from={},
                   variables=tuple(v), constraints=tuple(c))


def test_hand_worked_floors_prove_the_optimum_at_the_root():
    p = _hand_problem()
    assert HighsModel(p).solve(relax=True).objective == pytest.approx(32 / 3)
    for size in (1, 2):
        q = with_month_floors(p, size=size)
        floors = [c for c in q.constraints if c.name.startswith("month_floor[")]
        # size 1: each month alone, r at $5 a month: min(2 x $4, 2 x $5) = $8; size 2: $16
        assert [c.rhs for c in floors] == pytest.approx([8.0, 8.0] if size == 1 else [16.0], rel=1e-6)
        assert HighsModel(q).solve(relax=True).objective == pytest.approx(16.0, rel=1e-6)
        assert HighsModel(q).solve().objective == pytest.approx(16.0)


def test_weights_split_a_spanning_cost_over_its_months():
    p = _hand_problem()
    (floor,) = month_floors(p, size=2).rows
    assert dict(floor.terms)["reserved[p@000]"] == pytest.approx(10.0)      # $5 + $5
    one = month_floors(p, size=1).rows
    assert [dict(c.terms)["reserved[p@000]"] for c in one] == pytest.approx([5.0, 5.0])


def test_a_jobs_candidates_share_its_cost_over_its_whole_window():
    """A job with two candidates, one running in month 0 ($6), one in month 1 ($10), and a
    service needing one replica a month ($1). Each candidate's cost is split over both months,
    the months its one-candidate row reaches, so each month's floor holds the job's row and
    prices it at half: min($3, $5) + $1 = $4 a month, $8 in all: the optimum ($6 + 2 x $1)."""
    v = [Variable("y[s@000]", "integer", 2, costs=(("c", 1.0),), month=0, family="y"),
         Variable("y[s@001]", "integer", 2, costs=(("c", 1.0),), month=1, family="y"),
         Variable("x[a]", "binary", costs=(("c", 6.0),)), Variable("x[b]", "binary", costs=(("c", 10.0),))]
    c = [Constraint("one[job]", "one", (("x[a]", 1.0), ("x[b]", 1.0)), "==", 1.0),
         Constraint("demand[s@000]", "demand", (("y[s@000]", 1.0),), ">=", 1.0),
         Constraint("demand[s@001]", "demand", (("y[s@001]", 1.0),), ">=", 1.0),
         Constraint("capacity[000]", "capacity", (("x[a]", 1.0), ("y[s@000]", 1.0)), "<=", 2.0),
         Constraint("capacity[001]", "capacity", (("x[b]", 1.0), ("y[s@001]", 1.0)), "<=", 2.0)]
    p = Problem(spec=SimpleNamespace(horizon_months=2), candidates=None, chosen_from={},
                variables=tuple(v), constraints=tuple(c))
    cut = split(p, 1)
    for b in (frozenset({0}), frozenset({1})):
        assert "one[job]" in {r.name for r in cut.rows[b]}
        assert (cut.weights[("x[a]", b)], cut.weights[("x[b]", b)]) == pytest.approx((3.0, 5.0))
    assert [f.rhs for f in month_floors(p, size=1).rows] == pytest.approx([4.0, 4.0], rel=1e-6)


def _job_on_demand() -> Problem:
    """Two months. A job runs on demand ($4 a node-hour) either in month 0 for 1 node-hour
    (candidate a) or in month 1 for 2 (candidate b); its candidates cost nothing themselves, its
    hours are paid through the pool's month variables u_m. A service needs one $1 replica a
    month. By hand: a and two replicas, $4 + $2 = $6."""
    v = [Variable("y[s@000]", "integer", 2, costs=(("c", 1.0),), month=0, family="y"),
         Variable("y[s@001]", "integer", 2, costs=(("c", 1.0),), month=1, family="y"),
         Variable("ondemand[p@000]", "continuous", costs=(("c", 4.0),), month=0, family="ondemand"),
         Variable("ondemand[p@001]", "continuous", costs=(("c", 4.0),), month=1, family="ondemand"),
         Variable("x[a]", "binary", family="x"), Variable("x[b]", "binary", family="x")]
    c = [Constraint("one[job]", "one", (("x[a]", 1.0), ("x[b]", 1.0)), "==", 1.0),
         Constraint("demand[s@000]", "demand", (("y[s@000]", 1.0),), ">=", 1.0),
         Constraint("demand[s@001]", "demand", (("y[s@001]", 1.0),), ">=", 1.0),
         Constraint("ondemand[p@000]", "cloud_capacity", (("ondemand[p@000]", 1.0), ("x[a]", -1.0)), ">=", 0.0,
                    family="ondemand", month=0),
         Constraint("ondemand[p@001]", "cloud_capacity", (("ondemand[p@001]", 1.0), ("x[b]", -2.0)), ">=", 0.0,
                    family="ondemand", month=1)]
    return Problem(spec=SimpleNamespace(horizon_months=2), candidates=None, chosen_from={},
                   variables=tuple(v), constraints=tuple(c))


def test_a_jobs_node_hours_are_charged_to_every_block_of_its_window(monkeypatch):
    """Without the shift each month's block picks the candidate that runs in the other month and
    pays nothing for the job: floors of $1 + $1. With it, a is credited $4 in month 0 and b $8 in
    month 1, and each is charged half its credits in each month: month 0 sees a at $4 - $4 + $2
    and b at $4, month 1 a at $2 and b at $8 - $8 + $4, so each floor is $2 + $1 and their sum
    the $6 optimum, at the root."""
    p = _job_on_demand()
    cut = split(p, 1)
    m0, m1 = frozenset({0}), frozenset({1})
    assert (cut.weights[("x[a]", m0)], cut.weights[("x[a]", m1)]) == pytest.approx((-2.0, 2.0))
    assert (cut.weights[("x[b]", m0)], cut.weights[("x[b]", m1)]) == pytest.approx((4.0, -4.0))
    # the shift cancels over the blocks: the weights still sum to each candidate's own cost (0)
    for x in ("x[a]", "x[b]"):
        assert cut.weights[(x, m0)] + cut.weights[(x, m1)] == pytest.approx(0.0)
    floors = month_floors(p, size=1).rows
    assert [f.rhs for f in floors] == pytest.approx([3.0, 3.0], rel=1e-6)
    assert HighsModel(with_month_floors(p, size=1)).solve().objective == pytest.approx(6.0)
    monkeypatch.setattr(month_floors_module, "_hours_shift", lambda *_args: {})
    assert [f.rhs for f in month_floors(p, size=1).rows] == pytest.approx([1.0, 1.0], rel=1e-6)


TRAINING_AND_SERVING = """\
apiVersion: infra-compile/v1
name: floors-with-training
horizon_months: 4
sites:
  - {name: aws-use1, type: cloud, provider: aws, region: us-east-1, pricing: [on_demand, spot], quotas: {H100: 64}}
  - {name: azure-eus, type: cloud, provider: azure, region: eastus, pricing: [on_demand, reserved_1y]}
policy: {placement: hybrid, after_horizon: prorated}
workloads:
  - {name: serve-0, kind: inference, model: llama-3-8b, quantization: fp8, window: {start_month: 0},
     traffic: {peak_rps: 2, input_tokens: 500, output_tokens: 250, growth_per_month: 0.02},
     slo: {ttft_p99_ms: 1500, tpot_p99_ms: 80, availability: 0.99}}
  - {name: serve-2, kind: inference, model: llama-3-70b, quantization: fp8, window: {start_month: 1},
     traffic: {peak_rps: 50, input_tokens: 1000, output_tokens: 250, growth_per_month: 0.05},
     slo: {ttft_p99_ms: 1500, tpot_p99_ms: 80, availability: 0.999}}
  - {name: train-3, kind: training, model: llama-3-70b, tokens: 2.0e+11, seq_len: 8192,
     window: {start_month: 0, deadline_days: 14}}
  - {name: train-4, kind: training, model: llama-3-70b, tokens: 2.5e+11, seq_len: 8192,
     window: {start_month: 0, deadline_days: 110}, interruptible: true}
"""


@pytest.mark.slow
def test_floors_with_cloud_training_keep_the_optimum_and_bound_it_closely(tmp_path, monkeypatch):
    """Two services (8B and 70B) and two 70B jobs paid by the node-hour on demand, reserved or
    spot (seed 39 of benchmarks/small_specs.py cut to 4 months, less its steady 70B service: with
    it the oracle's solve and the floors took 40 s, without 13 s). The oracle is the model solved
    to its end without floors: its optimum satisfies every floor and stays the optimum with them.
    The floors of 3-month blocks then bound it within 2% (0.3% on catalog 2026.11.7, 0.2% with
    that service; with it 1.9% on 2026.11.4, 0.01% on 2026.11.3, with fewer instances and the
    earlier fit); without the shift of the jobs' node-hours the blocks ran the jobs in
    each other's months and bounded it lower still (3.1% below). The spec states `prorated`:
    under `continues` the floors bound it 3.0% below (measured with the third service, cause not
    yet found)."""
    spec = tmp_path / "floors-with-training.yaml"
    spec.write_text(TRAINING_AND_SERVING)
    candidates, _doc = estimate(spec)
    p = formulate(candidates)
    plain = HighsModel(p).solve(gap=0.0)
    assert plain.status == "optimal"
    floors = month_floors(p)
    assert floors.rows
    _satisfies_every_floor(floors.rows, plain.values)      # so the optimum with them is the same
    bound = sum(c.rhs for c in floors.rows)
    assert plain.objective * (1 - 0.02) <= bound <= plain.objective * (1 + 1e-6)
    monkeypatch.setattr(month_floors_module, "_hours_shift", lambda *_args: {})
    assert sum(c.rhs for c in month_floors(p).rows) < bound


def _short(tmp_path: Path, months: int, without: tuple[str, ...] = ()) -> Path:
    """examples/multi-region-inference.yaml over its first `months` months, less the sites
    `without`: both services share pools and reserved terms; small enough to solve to the end
    without floors."""
    doc = yaml.safe_load((ROOT / "examples/multi-region-inference.yaml").read_text())
    doc = copy.deepcopy(doc)
    doc["horizon_months"] = months
    doc["sites"] = [s for s in doc["sites"] if s["name"] not in without]
    out = tmp_path / f"mri-{months}{''.join('-' + n for n in without)}.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


@pytest.fixture(scope="module")
def short_problem(tmp_path_factory):
    """Three months on two of the example's clouds (AWS and GCP): the oracle below solves it to
    its end in seconds (7 s of CPU on 2 cores; with Azure too, 43 s, and its floors 37 s)."""
    candidates, _doc = estimate(_short(tmp_path_factory.mktemp("floors"), 3, without=("azure-eus",)))
    return formulate(candidates)


@pytest.fixture(scope="module")
def short_optimum(short_problem):
    """The oracle: the model without floors solved to its end (HiGHS, gap 0, no node limit),
    once for the module's tests."""
    plain = HighsModel(short_problem).solve(gap=0.0)
    assert plain.status == "optimal"
    return plain


@pytest.fixture(scope="module")
def short_floors(short_problem):
    """The floors of the short problem (each block solved to its end), once for the module."""
    return month_floors(short_problem)


def _satisfies_every_floor(floors, values) -> None:
    for c in floors:
        assert sum(a * values[n] for n, a in c.terms) >= c.rhs - 1e-6 * abs(c.rhs), c.name


@pytest.mark.slow
def test_floors_keep_the_optimum_and_every_optimal_plan_satisfies_them(short_problem, short_floors, short_optimum):
    """The model with floors is the model without them plus rows, under the same objective: its
    optimum is never below the plain one, and the plain optimum satisfying every floor makes it
    a plan of the floored model too, so the two optima are equal. Checking the rows is the whole
    oracle; solving the floored model to its end as well would only test HiGHS."""
    p = short_problem
    q = with_month_floors(p, floors=short_floors)
    floors = [c for c in q.constraints if c.name.startswith("month_floor[")]
    assert floors, "serving months get floors"
    _satisfies_every_floor(floors, short_optimum.values)
    # and the bound is no weaker: the LP with floors is at least the LP without
    assert HighsModel(q).solve(relax=True).objective >= HighsModel(p).solve(relax=True).objective - 1e-6


def test_blocks_cover_the_serving_months(short_problem):
    months = serving_months(short_problem)
    assert months == {0, 1, 2}
    assert blocks(short_problem, 2) == (frozenset({0, 1}), frozenset({2}))


@pytest.mark.slow
def test_month_windows_never_end_dearer_than_their_start(short_problem, short_floors, short_optimum):
    q = with_month_floors(short_problem, floors=short_floors)
    model = HighsModel(q)
    start = greedy_start(q)
    assert [w.name for w in month_windows(q)] == ["months 1-2", "months 0-1"]     # the latest months first
    found = month_search(q, start, model, schedules.months(q, enough=0.0))
    before, after = model.solve(fixed=start), model.solve(fixed=found)
    assert after.has_solution and after.objective <= before.objective + 1e-6
    optimum = short_optimum.objective        # the floored model's too (the test above)
    assert after.objective >= optimum - 1e-6 * optimum          # a plan, never below the optimum


def _hybrid(tmp_path: Path, months: int, without: tuple[str, ...] = ()) -> Path:
    """examples/multi-region-inference.yaml with a data centre of our own beside the clouds
    (nodes bought, as examples/scenarios/multi-region-inference.yaml's hybrid scenario), over its
    first `months` months, less the clouds `without`."""
    doc = yaml.safe_load((ROOT / "examples/multi-region-inference.yaml").read_text())
    doc["horizon_months"] = months
    doc["policy"]["placement"] = "hybrid"
    doc["sites"] = [s for s in doc["sites"] if s["name"] not in without]
    doc["sites"].append({"name": "dc-east", "type": "on_prem", "power_kw": 400, "electricity_usd_per_kwh": 0.10,
                         "pue": 1.3, "max_racks": 20})
    out = tmp_path / f"hybrid-{months}.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


@pytest.mark.slow
def test_fewer_nodes_rounds_let_go_a_bought_node_the_windows_keep(tmp_path):
    """A bought node serves every month, and a window holds all but two of them, so the windows
    keep every node some held month fills. On the hybrid platform over 5 months, its data centre
    beside AWS and GCP, they end with two HGX H100 bought; the fewer-nodes rounds after them (one
    node fewer in a pool, the work on it freed in the months that are then short) let one go and
    end cheaper. The oracles: the plan is one of the whole model (priced with every integer held),
    and the LP bound with the floors is below it. (With Azure too and over 6 months the same
    happens, in three times the time.)"""
    candidates, _doc = estimate(_hybrid(tmp_path, 5, without=("azure-eus",)))
    p = formulate(candidates)
    floors = month_floors(p)
    q = with_month_floors(p, floors=floors)
    model = HighsModel(q)
    start = greedy_start(q)
    windows_only = month_search(q, start, model, schedules.months(q, enough=0.0, fewer_passes=0))
    said: list[str] = []
    both = month_search(q, start, model, schedules.months(q, enough=0.0), say=said.append)
    buy = "buy[dc-east/hgx-h100]"
    assert windows_only[buy] == 2.0 and both[buy] == 1.0
    assert any(m.startswith("month windows: fewer nodes dc-east/hgx-h100") for m in said)
    before, after = model.solve(fixed=windows_only), model.solve(fixed=both)
    assert before.has_solution and after.has_solution
    assert after.objective < before.objective * (1 - 0.01)
    assert after.objective >= HighsModel(q).solve(relax=True).objective * (1 - 1e-6)


@pytest.mark.slow
def test_the_blocks_plans_stitch_into_a_plan_no_cheaper_than_the_optimum(short_problem, short_floors,
                                                                           short_optimum):
    floors = short_floors
    q = with_month_floors(short_problem, floors=floors)
    model = HighsModel(q)
    plan = stitched(q, floors.block_plans, model)
    assert plan is not None
    priced = model.solve(fixed=plan)
    optimum = short_optimum.objective
    # a real plan (every row of the whole model holds), so never below the optimum, and the
    # floors' sum is a bound below both
    assert priced.status == "optimal" and priced.objective >= optimum - 1e-6 * optimum
    assert sum(r.rhs for r in floors.rows) <= optimum * (1 + 1e-6)


@pytest.mark.slow
def test_a_time_limit_reaches_every_search_of_the_month_path(tmp_path, monkeypatch):
    """--time-limit bounds the floors' blocks, the stitched plan, the windows and the search after
    them, not only the search: every solve that branches (one given a node budget) is given a
    time limit, none over the user's. On the example's first two months on AWS and GCP: the month
    path with every one of those steps (20 solves that branch; with Azure too 11, in three times
    the time), as on three months, where the floors alone take most of a minute."""
    from compiler.optimize import SolveOptions, optimize
    from compiler.optimize.strategy import choose

    candidates, _doc = estimate(_short(tmp_path, 2, without=("azure-eus",)))
    problem = formulate(candidates)
    assert choose(problem, SolveOptions()).path == "months"
    seen, real = [], HighsModel.solve

    def recording(self, **kwargs):
        if kwargs.get("max_nodes"):
            seen.append(kwargs.get("time_limit"))
        return real(self, **kwargs)

    monkeypatch.setattr(HighsModel, "solve", recording)
    plan = optimize(candidates, SolveOptions(time_limit=600.0))
    assert plan.solver.status in ("optimal", "feasible")
    assert {"month floors", "month windows", "branch-and-bound"} <= set(plan.solver.strategy.steps)
    assert len(seen) >= 3 and all(t is not None and 0 < t <= 600.0 for t in seen)


@pytest.mark.slow
def test_blocks_solved_two_at_a_time_give_the_floors_of_one_after_another(short_problem, short_floors):
    """The blocks are independent models, each to its own node budget: solved on threads
    (settings.workers at a time) they give the same rows and block plans as one by one."""
    from compiler.optimize.settings import DEFAULT

    assert DEFAULT.workers == 2
    one_by_one = month_floors(short_problem, size=1, settings=replace(DEFAULT, workers=1))
    paired = month_floors(short_problem, size=1)
    assert len(paired.rows) == 3
    assert paired.rows == one_by_one.rows
    assert paired.block_plans == one_by_one.block_plans


def test_the_largest_block_starts_first_and_each_floor_keeps_its_own_block(monkeypatch):
    """The blocks go to the workers largest first (by nonzeros), and each floor row is still its
    own block's. One service over four months, 2, 1, 2, 1 whole replicas, a node each, on demand at
    $6 or reserved for all four months at $20 ($5 a month in a one-month block): by hand the
    one-month floors are $10, $5, $10, $5. Month 3 gets a redundant row (at most 2 replicas), so
    its block is the largest and is handed to the workers first."""
    base = reserved_or_on_demand((1.5, 0.5, 1.5, 0.5), term_usd=20.0)
    p = replace(base, constraints=base.constraints + (
        Constraint("cap[a@003]", "demand", (("y[a@003]", 1.0),), "<=", 2.0),))
    handed, real = [], month_floors_module.solve_all

    def recording(jobs, left, workers=None, done=None):
        handed.extend(model.h.getNumRow() for model, _kw in jobs)
        return real(jobs, left, workers, done)

    monkeypatch.setattr(month_floors_module, "solve_all", recording)
    floors = month_floors(p, size=1)
    assert [r.name for r in floors.rows] == [f"month_floor[00{m}-00{m}]" for m in range(4)]
    assert [r.rhs for r in floors.rows] == pytest.approx([10.0, 5.0, 10.0, 5.0], rel=1e-6)
    assert handed == [3, 2, 2, 2]      # month 3's block (its three rows) first, then months 0-2


def test_each_blocks_search_is_told_by_its_months_and_changes_nothing(monkeypatch):
    """A compile's month floors can take a minute (the multi-region example's last block: thousands
    of nodes); each block's search is told as it moves (the solve's progress, named by the block's
    months), and telling it changes no floor. These blocks close in presolve, before HiGHS's first
    node report, so what each block's solve is handed is called here."""
    p = reserved_or_on_demand((1.5, 0.5, 1.5, 0.5), term_usd=20.0)
    said: list[str] = []
    real = HighsModel.solve

    def solve(self, **kwargs):
        if kwargs.get("progress"):
            kwargs["progress"]("branch-and-bound: node 0")
        return real(self, **kwargs)

    monkeypatch.setattr(HighsModel, "solve", solve)
    told = month_floors(p, size=2, say=said.append)
    assert told.rows == month_floors(p, size=2).rows
    assert sorted(said) == ["month floors, months 0-1: branch-and-bound: node 0",
                            "month floors, months 2-3: branch-and-bound: node 0"]
