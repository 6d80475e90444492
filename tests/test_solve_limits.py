"""Limits end in a plan or in exit 5, never in a traceback (compiler/optimize/solve.py).

A node limit stops where it stops on every machine, so these tests use node limits on models
whose outcome at that limit is forced, never wall-clock time:

- a market split (Cornuejols & Dawande): 24 binaries whose weights must add up to half of each
  of 3 rows' totals. This instance has no exact split, so no heuristic can find a plan, but its
  LP relaxation has one, so it takes branching to prove there is none (HiGHS takes seconds
  without a limit): one node ends with no plan and no verdict, on any machine.
- the same with a penalized slack on each row: any choice is a plan (cost = total slack, at
  least 1 since no split is exact) and the LP bound is 0: one node ends in a plan, with a gap.

Where CBC itself misbehaves (crashes, false "infeasible"), a stand-in binary replays the exact
failure around the real one.
"""

from __future__ import annotations

import math
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pulp
import pytest

from compiler.optimize.formulate import Constraint, Problem, Variable
from compiler.optimize.solve import solve

ROOT = Path(__file__).resolve().parents[1]

WEIGHTS = (
    (49, 97, 53, 5, 33, 65, 62, 51, 38, 61, 45, 74, 27, 64, 17, 36, 17, 96, 12, 79, 32, 68, 90, 77),
    (18, 39, 12, 93, 9, 87, 42, 60, 71, 12, 45, 55, 40, 78, 81, 26, 70, 61, 56, 66, 33, 7, 70, 1),
    (11, 92, 51, 90, 85, 80, 0, 78, 63, 42, 31, 93, 41, 90, 8, 24, 72, 28, 30, 18, 69, 57, 11, 10),
)
N = len(WEIGHTS[0])
# A MIP start for the slack model: the first half of the items; it misses the rows by this much.
START = {f"x{j:02d}": float(j < N // 2) for j in range(N)}
START_COST = sum(abs(sum(w[j] for j in range(N // 2)) - sum(w) // 2) for w in WEIGHTS)


def market_split(slack: bool) -> Problem:
    variables = [Variable(f"x{j:02d}", "binary") for j in range(N)]
    constraints = []
    for i, w in enumerate(WEIGHTS):
        terms = [(f"x{j:02d}", float(w[j])) for j in range(N)]
        if slack:
            variables += [Variable(f"over{i}", "continuous", costs=(("slack", 1.0),)),
                          Variable(f"under{i}", "continuous", costs=(("slack", 1.0),))]
            terms += [(f"over{i}", -1.0), (f"under{i}", 1.0)]
        constraints.append(Constraint(f"split[{i}]", "split", tuple(terms), "==", float(sum(w) // 2)))
    # solve() reads only the variables and the constraints
    return Problem(spec=None, candidates=None, chosen_from={}, variables=tuple(variables),
                   constraints=tuple(constraints))


def assert_a_plan_of(problem: Problem, sol) -> None:
    """The solution's values satisfy every constraint, its integers are integral and its
    objective is what they cost; its bound is at most its cost."""
    x = sol.values
    for c in problem.constraints:
        lhs = sum(a * x[n] for n, a in c.terms)
        assert {"<=": lhs <= c.rhs + 1e-6, ">=": lhs >= c.rhs - 1e-6, "==": abs(lhs - c.rhs) <= 1e-6}[c.sense], c
    for v in problem.variables:
        if v.kind != "continuous":
            assert abs(x[v.name] - round(x[v.name])) <= 1e-6, v.name
    assert sol.objective == pytest.approx(sum(v.cost * x[v.name] for v in problem.variables))
    assert 0.0 <= sol.best_bound <= sol.objective
    assert 0.0 <= sol.gap <= 1.0


# --- HiGHS: pulp 3.3 raised KeyError(kSolutionLimit) when mip_max_nodes stopped it ---------------

def test_highs_stopped_by_its_node_limit_with_a_plan_returns_it_as_feasible():
    problem = market_split(slack=True)
    sol = solve(problem, solver="highs", max_nodes=1)
    assert sol.status == "feasible"
    assert_a_plan_of(problem, sol)
    assert sol.objective >= 1.0 - 1e-6 and sol.gap > 0.0   # stopped, not proven


def test_highs_stopped_by_its_node_limit_without_a_plan_returns_no_solution():
    sol = solve(market_split(slack=False), solver="highs", max_nodes=1)
    assert sol.status == "no_solution" and not sol.has_solution
    assert math.isnan(sol.objective)


# --- CBC: a limit ends in the MIP start or a cheaper plan ---------------------------------------

def test_cbc_stopped_by_its_node_limit_returns_the_start_or_better():
    problem = market_split(slack=True)
    sol = solve(problem, solver="cbc", start=START, max_nodes=1)
    assert sol.has_solution
    assert_a_plan_of(problem, sol)
    assert sol.objective <= START_COST + 1e-6


def test_cbc_stopped_by_its_node_limit_without_a_plan_returns_no_solution():
    sol = solve(market_split(slack=False), solver="cbc", max_nodes=1)
    assert sol.status == "no_solution"


def fake_cbc(tmp_path: Path, monkeypatch, script: str) -> None:
    """Put a stand-in for CBC in pulp's place: `script` (bash) runs on every call that gives a MIP
    start (-mips) or a time limit (-sec), with "$@" the real arguments, $REAL the real binary and
    $SOL the solution file; other calls (the LP that completes a start) go to the real CBC."""
    real = pulp.PULP_CBC_CMD.pulp_cbc_path
    path = tmp_path / "cbc"
    path.write_text(textwrap.dedent(f"""\
        #!/bin/bash
        REAL='{real}'
        case " $* " in *" -mips "*|*" -sec "*) ;; *) exec "$REAL" "$@" ;; esac
        SOL=""; prev=""
        for a in "$@"; do [ "$prev" = "-solution" ] && SOL="$a"; prev="$a"; done
        """) + textwrap.dedent(script))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(pulp.PULP_CBC_CMD, "pulp_cbc_path", str(path))


# CBC 2.10.3 with a MIP start, when its time limit runs out during preprocessing: it logs its
# result and then dies of a segmentation fault before writing the solution file.
CRASH = """\
    "$REAL" "$@"
    rm -f "$SOL"
    exit 139
    """


def test_a_cbc_crash_with_a_start_ends_in_the_start(tmp_path, monkeypatch):
    fake_cbc(tmp_path, monkeypatch, CRASH)
    problem = market_split(slack=True)
    sol = solve(problem, solver="cbc", start=START, time_limit=60, max_nodes=1)
    assert sol.status == "feasible"
    assert_a_plan_of(problem, sol)
    assert sol.objective == pytest.approx(START_COST)
    assert [sol.values[n] for n in sorted(START)] == [START[n] for n in sorted(START)]


def test_a_cbc_crash_without_a_start_is_no_solution(tmp_path, monkeypatch):
    fake_cbc(tmp_path, monkeypatch, CRASH)
    sol = solve(market_split(slack=True), solver="cbc", time_limit=60, max_nodes=1)
    assert sol.status == "no_solution"


# CBC 2.10.3 when its time limit runs out during preprocessing: "Pre-processing says infeasible
# or unbounded", and "Integer infeasible" in the solution file. Here it takes 0.5 s to say so.
FALSE_INFEASIBLE = """\
    sleep 0.5
    echo "Pre-processing says infeasible or unbounded"
    echo "Integer infeasible - objective value 0.00000000" > "$SOL"
    exit 0
    """


def test_a_false_infeasible_verdict_is_disproved_by_the_start(tmp_path, monkeypatch):
    fake_cbc(tmp_path, monkeypatch, FALSE_INFEASIBLE)
    problem = market_split(slack=True)
    sol = solve(problem, solver="cbc", start=START, time_limit=60)
    assert sol.status == "feasible"
    assert_a_plan_of(problem, sol)
    assert sol.objective == pytest.approx(START_COST)


@pytest.mark.slow
def test_an_infeasible_verdict_at_the_time_limit_is_not_trusted(tmp_path, monkeypatch):
    fake_cbc(tmp_path, monkeypatch, FALSE_INFEASIBLE)
    # the stand-in answers after 0.5 s, past the 0.1 s limit: the clock may have cut CBC short
    assert solve(market_split(slack=True), solver="cbc", time_limit=0.1).status == "no_solution"
    # within its time limit, the verdict stands (it goes on to the infeasibility explainer)
    assert solve(market_split(slack=True), solver="cbc", time_limit=60).status == "infeasible"


def test_a_start_cbc_did_not_take_is_still_the_plan_or_better(tmp_path, monkeypatch):
    # As when CBC's preprocessing rejects a start that is a plan ("mipstart values could not be
    # used to build a solution"): the stand-in runs CBC without the start.
    fake_cbc(tmp_path, monkeypatch, """\
        args=(); skip=0
        for a in "$@"; do
            if [ $skip = 1 ]; then skip=0; continue; fi
            if [ "$a" = "-mips" ]; then skip=1; continue; fi
            args+=("$a")
        done
        exec "$REAL" "${args[@]}"
        """)
    problem = market_split(slack=True)
    sol = solve(problem, solver="cbc", start=START, max_nodes=1)
    assert sol.has_solution
    assert_a_plan_of(problem, sol)
    assert sol.objective <= START_COST + 1e-6


# --- the command line: exit 5 and a message, no traceback ---------------------------------------

# Runs the CLI with HiGHS's node limit lowered to 0 (the CLI's --max-nodes 0 means "no limit"):
# HiGHS stops before its first node, with no plan, as any node limit reached before a first
# incumbent would (pulp 3.3 then raised KeyError: kSolutionLimit, an internal error, exit 1).
NO_NODES_CLI = """\
import runpy, sys
import highspy
_run = highspy.Highs.run
def run(self):
    self.setOptionValue("mip_max_nodes", 0)
    return _run(self)
highspy.Highs.run = run
sys.argv = ["infra-compile", *sys.argv[1:]]
runpy.run_module("compiler", run_name="__main__")
"""


def test_cli_exits_5_when_the_solver_finds_no_plan_within_its_limits(tmp_path):
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-c", NO_NODES_CLI, "examples/onprem-vision.yaml", "--solver", "highs",
                        "--max-nodes", "1", "-o", str(out)],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 5, r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert r.stderr.startswith("examples/onprem-vision.yaml: error[E501]: the solver (highs) found no plan"), r.stderr
    assert not out.exists()


def _cover_problem(n: int = 60, rows: int = 8, seed: int = 7) -> Problem:
    """`n` binaries of random cost covering half of each of `rows` random weight rows. The
    default (60 and 8): HiGHS proves its optimum ($1,106) in a fraction of a second; its root
    node alone stops 1.18% above its bound."""
    import random

    rng = random.Random(seed)
    cost = [rng.randint(20, 100) for _ in range(n)]
    weights = [[rng.randint(5, 60) for _ in range(n)] for _ in range(rows)]
    variables = tuple(Variable(f"x{j:02d}", "binary", costs=(("c", float(cost[j])),)) for j in range(n))
    cover = tuple(Constraint(f"cover[{i}]", "cover", tuple((f"x{j:02d}", float(w[j])) for j in range(n)),
                             ">=", float(sum(w) // 2)) for i, w in enumerate(weights))
    return Problem(spec=None, candidates=None, chosen_from={}, variables=variables, constraints=cover)


@pytest.mark.slow
def test_a_settled_search_proves_its_gap_from_a_poor_plan_and_reports_what_it_proved():
    """steps.settled: a search that ended above settle_gap goes on with HiGHS's gap at
    settle_gap. From a first search of one node, its plan is reported feasible within settle_gap
    of a bound no higher than the optimum the unpruned search proves, and no cheaper than that
    optimum; node counts, not the clock, decide, so two runs agree."""
    from compiler.optimize.settings import DEFAULT
    from compiler.optimize.solve import HighsModel
    from compiler.optimize.steps import settled as settle

    SETTLE_GAP = DEFAULT.settle_gap

    model = HighsModel(_cover_problem())
    proven = model.solve()
    assert proven.status == "optimal" and proven.objective == pytest.approx(1106.0)
    first = model.solve(max_nodes=1)
    assert first.gap > SETTLE_GAP                      # the case it is for
    settled = settle(model, first, DEFAULT)
    assert settled.status == "feasible" and settled.gap <= SETTLE_GAP
    assert settled.best_bound <= proven.objective + 1e-6 <= settled.objective + 2e-6
    assert settled.objective <= first.objective and settled.best_bound >= first.best_bound - 1e-6
    again = settle(model, model.solve(max_nodes=1), DEFAULT)
    assert (again.objective, again.best_bound) == (settled.objective, settled.best_bound)


@pytest.mark.slow
def test_a_stalled_search_stops_and_reports_what_it_proved():
    """HighsModel.solve(stall=k): the search stops once neither its plan nor its bound has moved
    in k nodes. Oracle: the search without it proves the optimum; with stall=1 on a problem of a
    larger tree it stops short of that proof (feasible), with a bound no higher than the optimum
    and a plan no cheaper; a stall it never reaches leaves the search as it was; node counts and
    bounds, not the clock, decide, so two runs agree."""
    from compiler.optimize.solve import HighsModel

    model = HighsModel(_cover_problem(n=90, rows=12, seed=3))
    proven = model.solve()
    assert proven.status == "optimal"
    stalled = model.solve(stall=1)
    assert stalled.status == "feasible" and stalled.gap > 1e-4
    assert stalled.best_bound <= proven.objective + 1e-6 <= stalled.objective + 2e-6
    again = model.solve(stall=1)
    assert (again.objective, again.best_bound) == (stalled.objective, stalled.best_bound)
    never = model.solve(stall=10**9)
    assert never.status == "optimal" and never.objective == pytest.approx(proven.objective)


# --- the settled search's stall rule (HighsModel's MIP callback) ---------------------------------

def _first_stop(model, points) -> int | None:
    """The index (from 1) of the first of `points` (node, plan, bound), fed to `model`'s MIP callback
    as HiGHS's interrupt points would report them, at which it asks HiGHS to stop; None where it never does."""
    from types import SimpleNamespace

    for k, (node, plan, bound) in enumerate(points, start=1):
        event = SimpleNamespace(data_out=SimpleNamespace(mip_node_count=node, mip_primal_bound=plan,
                                                         mip_dual_bound=bound),
                                data_in=SimpleNamespace(user_interrupt=False))
        model._mip_interrupt_point(event)
        if event.data_in.user_interrupt:
            return k
    return None


def _stalled_at(stall_on_bound: bool, points) -> int | None:
    """The node at which HighsModel's callback asks HiGHS to stop, fed `points` (node, plan, bound)
    as HiGHS's MIP interrupt points would report them; None where it never does."""
    from compiler.optimize.solve import HighsModel

    model = HighsModel(market_split(False), 1)
    model._stall, model._stall_on_bound, model._moved = 200, stall_on_bound, (math.inf, -math.inf, 0)
    k = _first_stop(model, points)
    return None if k is None else points[k - 1][0]


def test_a_stall_counts_nodes_since_the_plan_or_the_bound_last_moved_or_the_plan_alone():
    # a plan at node 0, a cheaper one at node 50, then only the bound rises, a little each node
    points = [(0, 100.0, 10.0)] + [(n, 90.0 if n >= 50 else 100.0, 10.0 + n / 100) for n in range(1, 600)]
    assert _stalled_at(True, points) is None          # the bound never stops rising: no stall
    assert _stalled_at(False, points) == 250          # 200 nodes after the last cheaper plan
    flat = [(n, 100.0, 10.0) for n in range(600)]
    assert _stalled_at(True, flat) == _stalled_at(False, flat) == 200


# --- a default search past the target's proof (HighsModel.solve's `within`) ------------------------

def _within_stops_at(within, points, said: list | None = None) -> int | None:
    """The interrupt point (counted from 1) at which HighsModel's callback asks HiGHS to stop, fed
    `points` (plan, bound) as HiGHS's MIP interrupt points would report them; None where it never does."""
    from compiler.optimize.solve import HighsModel

    model = HighsModel(market_split(False), 1)
    model._within, model._points, model._within_at = within, 0, None
    model._say = said.append if said is not None else None
    return _first_stop(model, [(0, plan, bound) for plan, bound in points])


def test_within_counts_interrupt_points_from_the_first_proof_of_the_gap():
    # worked by hand: no plan at point 1, no bound at 2, then plan 100 over bounds 98 (2.0% of the
    # plan) at 3-4, 99 (1.0%) at 5 and on: proven within 1% first at point 5, so 3 points later
    # is point 8; a bound that falls back (it cannot in HiGHS) does not restart the count
    inf = float("inf")
    points = [(inf, -inf), (100.0, -inf), (100.0, 98.0), (100.0, 98.0)] + [(100.0, 99.0)] * 3 + [(100.0, 98.0)] * 20
    assert _within_stops_at((0.01, 3), points) == 8
    assert _within_stops_at((0.01, 0), points) == 5
    assert _within_stops_at((0.02, 0), points) == 3     # 2.0% is within 2%
    assert _within_stops_at((0.005, 0), points) is None  # never within 0.5%: the search runs on
    assert _within_stops_at((0.01, 100), points) is None
    said: list[str] = []
    _within_stops_at((0.01, 3), points, said)
    told = [m for m in said if "proven within" in m]
    assert told == ["branch-and-bound: plan proven within 1%; at most 3 more cut rounds and nodes toward the "
                    "optimum's proof"], said


def test_a_search_stopped_past_its_proof_reports_what_it_proved():
    """HighsModel.solve(within=(gap, k)): k interrupt points after its plan is first proven within
    `gap`, the search stops. Oracle: the search without it proves the optimum ($1,106, by HiGHS
    alone); stopped at once past a 2% proof, it reports its plan feasible within 2% of a bound no
    higher than that optimum; k points later its bound is no lower; a count it never reaches
    leaves the search as it was; counts, not the clock, decide, so two runs agree."""
    from compiler.optimize.solve import HighsModel

    model = HighsModel(_cover_problem())
    proven = model.solve()
    assert proven.status == "optimal" and proven.objective == pytest.approx(1106.0)
    at_once = model.solve(within=(0.02, 0))
    assert at_once.status == "feasible" and 1e-4 < at_once.gap <= 0.02
    assert at_once.best_bound <= proven.objective + 1e-6 <= at_once.objective + 2e-6
    later = model.solve(within=(0.02, 5))
    assert later.best_bound >= at_once.best_bound - 1e-6 and later.objective <= at_once.objective + 1e-6
    again = model.solve(within=(0.02, 0))
    assert (again.objective, again.best_bound) == (at_once.objective, at_once.best_bound)
    never = model.solve(within=(0.02, 10**9))
    assert never.status == "optimal" and never.objective == pytest.approx(proven.objective)


def test_a_default_search_stops_its_settings_points_past_the_target_and_an_asked_one_does_not():
    """steps.highs_search(default=True) stops settings.proof_points interrupt points after its plan
    is proven within settings.settle_gap; a search whose budget or gap was asked for (default
    False) seeks the optimum's proof as before, and so does a default one over narrowed candidates
    (plans_only: its bound is dropped, so only its plans count). With the gap at 2% and no points,
    the default search ends feasible within 2%; the asked and the narrowed ones prove the optimum."""
    import dataclasses

    from compiler.optimize.settings import DEFAULT
    from compiler.optimize.solve import HighsModel
    from compiler.optimize.steps import highs_search

    model = HighsModel(_cover_problem())
    s = dataclasses.replace(DEFAULT, settle_gap=0.02, proof_points=0)
    lp = model.solve(relax=True).objective
    default = highs_search(model, {}, lp, None, False, None, None, s, default=True)
    assert default.status == "feasible" and 1e-4 < default.gap <= 0.02
    asked = highs_search(model, {}, lp, None, False, None, None, s, default=False)
    assert asked.status == "optimal" and asked.objective == pytest.approx(1106.0)
    assert default.best_bound <= asked.objective + 1e-6
    narrowed = highs_search(model, {}, lp, None, False, None, None, s, default=True, plans_only=True)
    assert narrowed.status == "optimal" and narrowed.objective == pytest.approx(1106.0)
