"""A sweep starts every scenario from the base spec's plan (compiler/sweep: `_base/plan.json`),
so a scenario that only relaxes the spec never ends dearer than the base plan: the curve shows
the input, not the search. The oracle is the base plan's own total: a relaxation keeps the base
plan a plan of the scenario, priced no higher, and the search from it only keeps cheaper plans."""

from __future__ import annotations

import json

import pytest

from compiler.sweep import prepare, sweep
from examples_cache import ROOT

RELAXED = """\
scenarios:
  - name: h100-cheaper
    prices:
      - {gpu: H100, factor: 0.8}
  - name: less-traffic
    traffic: 0.9
  - name: fewer-tokens
    tokens: 0.5
"""


@pytest.mark.slow
def test_no_relaxation_costs_more_than_the_base_plan(tmp_path):
    scenarios = tmp_path / "relaxed.yaml"
    scenarios.write_text(RELAXED, encoding="utf-8")
    prepared = prepare(ROOT / "examples" / "hybrid-llm-platform.yaml", scenarios)
    table, files = sweep(prepared, workers=2)
    base = json.loads(files["_base/plan.json"])["total_cost_usd"]
    assert len(table) == 3 and all(r.ok for r in table)
    for row in table:
        assert row.total_usd <= base + 0.01, (row.scenario, row.total_usd, base)
