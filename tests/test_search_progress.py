"""A HiGHS search tells its progress (node, plan, bound) as it moves, and telling it changes
nothing: the same plan, bound and node count with or without a listener."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from compiler.optimize.formulate import formulate
from compiler.optimize.solve import HighsModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from generate import generate  # noqa: E402

LINE = re.compile(r"^branch-and-bound: node (\d[\d,]*) of 30; (no plan yet|plan \$[\d,]+)(, bound \$[\d,]+)?$")


@pytest.mark.slow
def test_a_search_says_its_nodes_plan_and_bound_and_the_same_search_runs_without_a_listener():
    problem = formulate(generate(10, 0, horizon=6))
    heard: list[str] = []
    told = HighsModel(problem).solve(max_nodes=30, progress=heard.append)
    quiet = HighsModel(problem).solve(max_nodes=30)
    assert (told.objective, told.best_bound, told.status) == (quiet.objective, quiet.best_bound, quiet.status)
    assert told.values == quiet.values
    assert heard and all(LINE.match(m) for m in heard), heard[:5]
    # the last line is the search's end: its plan is the solution's cost, rounded to the dollar
    nodes = [int(LINE.match(m).group(1).replace(",", "")) for m in heard]
    assert nodes == sorted(nodes) and nodes[-1] <= 30
    assert LINE.match(heard[-1]).group(2) == f"plan ${told.objective:,.0f}"
    # a relaxation is not a search: nothing is said
    relaxed: list[str] = []
    HighsModel(problem).solve(relax=True, progress=relaxed.append)
    assert relaxed == []


def test_the_limits_narrowing_says_each_round_s_services():
    """The LP dive of optimize/narrow.py tells which services each round fixes, and how many of
    the limited ones are fixed by then; the last round's count is all of them."""
    import dataclasses

    from optimize_fixtures import LIFTED, candidates, cloud, infer_cand, inference, spec

    from compiler.optimize.narrow import narrowed

    site = cloud(pricing=("on_demand",))
    a, b = inference("a", index=0, rps=2.0, out=100), inference("b", index=1, rps=2.0, out=100)
    cs = [infer_cand(w, site, inst, 1, tps) for w in (a, b)
          for inst, tps in (("p4d.24xlarge", 200.0), ("p5.48xlarge", 300.0))]
    policy = dataclasses.replace(LIFTED, max_gpu_types_per_service=1)
    heard: list[str] = []
    cut = narrowed(candidates(spec([site], [a, b], horizon=2, policy=policy), cs), say=heard.append)
    assert all(len(cut.by_workload[w]) == 1 for w in ("a", "b"))
    assert heard and all(re.match(r"^narrowing on the LP: [a-z, ]+ fixed \(\d of 2 limited services\)$", m)
                         for m in heard), heard
    assert heard[-1].endswith("(2 of 2 limited services)")
    assert sorted(w for m in heard for w in m.split(": ")[1].split(" fixed")[0].split(", ")) == ["a", "b"]


@pytest.mark.slow
def test_the_polish_and_the_canonical_choice_say_each_month(tmp_path):
    """After the search, the polish and the fixed rule's month-by-month choice (a minute on a
    large platform) are told too: every serving month once, in order, after the polish."""
    from compiler.pipeline import CompileOptions, compile_spec

    root = Path(__file__).resolve().parents[1]
    heard: list[str] = []
    result = compile_spec(root / "examples/hybrid-llm-platform.yaml", CompileOptions(progress=heard.append))
    polish = [k for k, m in enumerate(heard) if m.startswith("polishing: ")]
    months = [m for m in heard if m.startswith("equal-cost choices by the fixed rule: ")]
    assert polish and months and heard.index(months[0]) > polish[-1]
    total = int(re.search(r"of (\d+)\)$", months[-1]).group(1))
    assert [int(re.search(r"\((\d+) of", m).group(1)) for m in months] == list(range(1, total + 1))
    assert total <= result.plan.horizon_months
