"""`--baseline` over mutated plan.json files: a compile of a small spec re-planned from its own
plan with one to three fields changed (dropped, or set to a value of another type, out of range,
NaN, a date the calendar has no room for) ends in a plan or in a clear error, never in a
traceback or an internal error. The mutations are test_hostile_plans' (its paths and values),
applied to a plan the compiler wrote; hypothesis is derandomized, so the same cases run every
time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from test_hostile_plans import HELD, _VALUES, _paths, cli, mutated

pytestmark = pytest.mark.slow     # each case that passes the reader compiles the spec


@pytest.fixture(scope="module")
def held(tmp_path_factory) -> tuple[Path, dict]:
    """test_held's spec and the plan.json the compiler writes for it (the baseline to mutate)."""
    folder = tmp_path_factory.mktemp("held")
    spec = folder / "held.yaml"
    spec.write_text(HELD.replace("HELD\n", "").replace("RPS", "20"), encoding="utf-8")
    result = cli(str(spec), "-o", str(folder / "base"), "-q")
    assert result.exit_code == 0, result.output
    return spec, json.loads((folder / "base" / "plan.json").read_text(encoding="utf-8"))


def _leaves(doc, prefix=()):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _leaves(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _leaves(v, prefix + (i,))
    else:
        yield prefix, doc


def test_the_unmutated_baseline_is_a_plan(held, tmp_path):
    spec, plan = held
    base = tmp_path / "base.json"
    base.write_text(json.dumps(plan), encoding="utf-8")
    result = cli(str(spec), "--baseline", str(base), "-o", str(tmp_path / "out"), "-q")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "plan.json").is_file()


def test_a_baseline_whose_placements_name_no_pool_is_refused(held, tmp_path):
    # it reached the runbook's removals once (render/domains.domain_of: KeyError, 'internal error')
    spec, plan = held
    base = tmp_path / "base.json"
    base.write_text(json.dumps({**plan, "pools": []}), encoding="utf-8")
    result = cli(str(spec), "--baseline", str(base), "-o", str(tmp_path / "out"), "-q")
    assert "internal error" not in result.output, result.output
    assert result.exit_code == 2 and result.stderr.startswith(f"{base}:"), result.output
    assert "error[E010] at $.pools: the plan cannot be read back: workload" in result.stderr
    assert "but the plan holds no pools" in result.stderr
    assert not (tmp_path / "out").exists()


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_mutated_baseline_gives_a_plan_or_a_clear_error(held, tmp_path_factory, data):
    spec, plan = held
    paths = sorted(_paths(plan), key=str)
    # besides test_hostile_plans' values, ones a plan could hold (small counts, names and pricings
    # it or the catalog uses), which reach the compile more often than the reader's refusals
    plausible = st.one_of(st.integers(0, 16), st.sampled_from(sorted({str(v) for k, v in _leaves(plan) if
                                                                      isinstance(v, str) and len(v) < 40})
                                                               + ["aws-usw2", "p4d.24xlarge", "reserved_3y", "spot"]))
    mutations = data.draw(st.lists(st.tuples(st.sampled_from(paths), st.one_of(st.just("drop"), _VALUES, plausible)),
                                   min_size=1, max_size=3))
    folder = tmp_path_factory.mktemp("fuzz")
    base = folder / "base.json"
    base.write_text(json.dumps(mutated(plan, mutations), allow_nan=True), encoding="utf-8")
    out = folder / "out"
    result = cli(str(spec), "--baseline", str(base), "-o", str(out), "-q")
    assert "Traceback" not in result.output and "internal error" not in result.output, (mutations, result.output)
    event(f"exit {result.exit_code}")
    if result.exit_code == 0:
        assert (out / "plan.json").is_file()
        return
    assert result.exit_code in (2, 3), (mutations, result.output)
    assert not out.exists(), "a refused compile writes nothing"
    errors = [line for line in result.stderr.splitlines() if ": error[" in line]
    assert errors, result.stderr
    # a refusal of the baseline names it; an error of the spec (a held term it cannot keep) names the spec
    assert errors[0].startswith((f"{base}:", f"{spec}:")), (mutations, result.stderr)
