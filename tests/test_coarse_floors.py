"""Coarse floors (steps.coarse_floors, steps.with_coarse): the month floors of a second, longer
partition, solved on a thread beside the month windows, lift the bound where the shorter blocks
each buy their own reserved terms, and never above the optimum. Oracles: a case worked by hand and
the model solved to its end (HiGHS, gap 0)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from compiler.optimize import steps
from compiler.optimize.formulate import Problem
from compiler.optimize.month_floors import month_floors, with_month_floors
from compiler.optimize.settings import DEFAULT
from compiler.optimize.solve import HighsModel, Running

from optimize_fixtures import reserved_or_on_demand

# blocks of one month, coarse blocks of two: the shapes of the shipped 3 and 4 on four months
ONE_AND_TWO = replace(DEFAULT, block_months=1, coarse_block_months=2)


def _alternating() -> Problem:
    """Four months of one service: 1.5, 0.5, 1.5, 0.5 replicas' worth of load, so 2, 1, 2, 1 whole
    replicas, each on a node of its own, on demand at $6 a node-month or on a node reserved for all
    four months ($20, $5 a month). By hand: one node reserved and one on demand in months 0 and 2,
    $20 + $12 = $32 (none: 6 x $6 = $36; two: $40); the LP, in fractions of replicas, $22 (half a
    node reserved). One-month blocks at $5 a month for the term: months of 2 take two reserved
    nodes ($10), months of 1 one ($5), $30, and the LP with their rows meets them at $30 (one node
    reserved, 5/6 of one on demand in months 0 and 2). Two-month blocks at $10: one reserved node
    and one on demand, $16 each (two reserved: $20; none: $18), $32, the optimum."""
    return reserved_or_on_demand((1.5, 0.5, 1.5, 0.5), term_usd=20.0)


def _fine(p: Problem):
    floors = month_floors(p, settings=ONE_AND_TWO)
    # the gate reads how hard the blocks were; these close at once, so say one branched
    return replace(floors, most_nodes=2)


def test_the_hand_worked_coarse_blocks_lift_the_bound_to_the_optimum():
    p = _alternating()
    assert HighsModel(p).solve(gap=0.0).objective == pytest.approx(32.0)
    assert HighsModel(p).solve(relax=True).objective == pytest.approx(22.0)
    floors = _fine(p)
    assert [r.rhs for r in floors.rows] == pytest.approx([10.0, 5.0, 10.0, 5.0], rel=1e-6)
    with_rows = with_month_floors(p, floors=floors)
    lp = HighsModel(with_rows).solve(relax=True).objective
    assert lp == pytest.approx(30.0, rel=1e-6)
    said = []
    coarse = steps.coarse_floors(p, floors, None, ONE_AND_TWO, said.append)
    assert isinstance(coarse, Running)
    assert said == ["coarse month floors: 2 blocks of 2 months, on a thread of their own"]
    assert steps.with_coarse(with_rows, coarse, lp, ONE_AND_TWO.seed) == pytest.approx(32.0, rel=1e-6)


def test_the_coarse_bound_is_never_above_the_optimum_nor_below_the_floors():
    """Under several demands (the months' replicas), the coarse bound is between the fine floors'
    LP and the optimum HiGHS proves without any floors."""
    base = _alternating()
    for need in ((1.5, 1.5, 0.5, 0.5), (0.5, 1.5, 1.5, 0.5), (1.5, 0.5, 0.5, 1.5), (0.5,) * 4, (1.5,) * 4,
                 (1.2, 0.4, 0.9, 1.7)):
        rows = tuple(replace(c, rhs=need[int(c.name[-2])]) if c.name.startswith("demand") else c
                     for c in base.constraints)
        p = replace(base, constraints=rows)
        optimum = HighsModel(p).solve(gap=0.0).objective
        floors = _fine(p)
        with_rows = with_month_floors(p, floors=floors)
        lp = HighsModel(with_rows).solve(relax=True).objective
        bound = steps.with_coarse(with_rows, steps.coarse_floors(p, floors, None, ONE_AND_TWO, lambda _m: None),
                                  lp, ONE_AND_TWO.seed)
        assert lp - 1e-6 <= bound <= optimum * (1 + 1e-9), (need, lp, bound, optimum)


def test_no_coarse_floors_where_the_blocks_closed_at_once_or_no_other_partition():
    p = _alternating()
    floors = _fine(p)
    quiet = lambda _m: None  # noqa: E731
    assert steps.coarse_floors(p, replace(floors, most_nodes=1), None, ONE_AND_TWO, quiet) is None
    # however long a block took (the multi-region example's last: thousands of nodes)
    assert isinstance(steps.coarse_floors(p, replace(floors, most_nodes=10**6), None, ONE_AND_TWO, quiet), Running)
    # four-month blocks on four months: one block, the whole problem, no partition
    assert steps.coarse_floors(p, floors, None, replace(ONE_AND_TWO, coarse_block_months=4), quiet) is None
    # the same length as the floors' blocks: the same partition
    assert steps.coarse_floors(p, floors, None, replace(ONE_AND_TWO, coarse_block_months=1), quiet) is None
    # where none ran, the bound is the one given
    assert steps.with_coarse(p, None, 30.0, DEFAULT.seed) == 30.0


def test_a_coarse_block_of_the_same_months_as_a_floor_block_is_left_out(monkeypatch):
    """Both partitions end on a clipped last block where the horizon is no multiple of either: five
    months cut into blocks of one and of four end in month 4 under both. That coarse block is the
    same sub-problem as the floor's, its row has the same name, and the LP is given it once (the
    model it is handed has each row's name once): the bound is the LP's with the floors and the one
    other coarse row (months 0-3), and no more than the optimum."""
    p = reserved_or_on_demand((1.5, 0.5, 1.5, 0.5, 1.5), term_usd=25.0)
    settings = replace(DEFAULT, block_months=1, coarse_block_months=4)
    floors = replace(month_floors(p, settings=settings), most_nodes=2)
    assert [r.name for r in floors.rows][-1] == "month_floor[004-004]"
    with_rows = with_month_floors(p, floors=floors)
    lp = HighsModel(with_rows).solve(relax=True).objective
    coarse = steps.coarse_floors(p, floors, None, settings, lambda _m: None)
    assert [r.name for r in coarse.result().rows] == ["month_floor[000-003]", "month_floor[004-004]"]
    given = []
    monkeypatch.setattr(steps, "HighsModel", lambda problem, seed: given.append(problem) or HighsModel(problem, seed))
    bound = steps.with_coarse(with_rows, coarse, lp, settings.seed)
    names = [c.name for c in given[0].constraints]
    assert len(names) == len(set(names)) and len(names) == len(with_rows.constraints) + 1
    once = replace(with_rows, constraints=with_rows.constraints + coarse.result().rows[:1])
    assert bound == pytest.approx(HighsModel(once).solve(relax=True).objective, rel=1e-9)
    assert lp - 1e-6 <= bound <= HighsModel(p).solve(gap=0.0).objective * (1 + 1e-9)


def test_a_failure_on_the_coarse_thread_reaches_the_caller():
    def broken():
        raise ValueError("block model")

    with pytest.raises(ValueError, match="block model"):
        Running(broken).result()


@pytest.mark.slow
def test_a_seeded_small_spec_is_proven_within_one_percent_by_the_coarse_floors(tmp_path):
    """small-031 (benchmarks/small_specs.py): its 3-month floors close in tens of nodes a block and
    bound the windows' plan only within 1.14%; with the 4-month floors' rows the LP bounds it
    within 1%, so no search runs. The bound stays under the best plan known for the spec
    (benchmarks/small_best_known.json, a HiGHS search with neither kind of floor), and lifts the
    bound that search proved, which is the LP's with the 3-month floors."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from small_specs import best_known, small_spec

    from compiler import pipeline

    path = tmp_path / "small-031.yaml"
    path.write_text(small_spec(31), encoding="utf-8")
    solver = pipeline.compile_spec(path).plan.solver
    known = best_known()["small-031"]
    assert "coarse floors" in solver.strategy.steps and "branch-and-bound" not in solver.strategy.steps
    assert known["best_bound_usd"] * (1 + 1e-6) < solver.best_bound_usd <= known["cost_usd"] * (1 + 1e-9)
    assert solver.gap <= 0.01


def test_the_coarse_floors_start_while_the_floors_still_run_and_bound_as_if_started_after(monkeypatch):
    """with_floors starts the coarse floors from the floors' own threads as soon as a block ends
    past settings.coarse_after_nodes nodes (here every block, at -1), before the last block is
    done, and they give the same bound as coarse_floors started after the floors; where no block
    ends past it, none start (the hand-worked blocks close at once: 0 or 1 node)."""
    import compiler.optimize.steps as steps_module

    p = _alternating()
    events, real_start, real_floors = [], steps_module._start_coarse, steps_module.month_floors
    monkeypatch.setattr(steps_module, "_start_coarse", lambda *a: events.append("coarse started") or real_start(*a))

    def floors_then_say(*a, **k):
        out = real_floors(*a, **k)
        if "on_block" in k:           # the floors themselves, not the coarse ones on their thread
            events.append("floors done")
        return out

    monkeypatch.setattr(steps_module, "month_floors", floors_then_say)
    early = replace(ONE_AND_TWO, coarse_after_nodes=-1)
    with_rows, floors, coarse = steps.with_floors(p, None, early, lambda _m: None)
    assert events == ["coarse started", "floors done"]
    lp = HighsModel(with_rows).solve(relax=True).objective
    after = steps.coarse_floors(p, replace(floors, most_nodes=2), None, ONE_AND_TWO, lambda _m: None)
    assert steps.with_coarse(with_rows, coarse, lp, early.seed) == pytest.approx(
        steps.with_coarse(with_rows, after, lp, early.seed), rel=1e-9)
    assert steps.with_coarse(with_rows, coarse, lp, early.seed) == pytest.approx(32.0, rel=1e-6)
    events.clear()
    assert steps.with_floors(p, None, ONE_AND_TWO, lambda _m: None)[2] is None
    assert events == ["floors done"]
