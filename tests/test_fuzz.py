"""Fuzz the front of the pipeline: every input ends in a Spec or a CompileError with exit
code 2, never a traceback, a hang or runaway memory. Seeded (derandomized) so CI is stable.

Covers junk bytes, YAML alias bombs, deep nesting, huge numbers, NaN/Infinity, wrong types
everywhere, empty files, duplicate keys and Unicode look-alike names, plus random
mutations of the shipped examples.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.diagnostics import CompileError, render_all
from compiler.source import parse

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
FUZZ = settings(max_examples=150, derandomize=True, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def catalog():
    from compiler.catalog import load_catalog

    return load_catalog()


def front(text: str, catalog):
    """load + validate; returns the Spec or the CompileError (anything else fails the test)."""
    from compiler.validate import validate

    try:
        return validate(parse(text, "fuzz.yaml"), catalog)
    except CompileError as exc:
        assert exc.exit_code == 2
        assert exc.diagnostics, "a CompileError must carry at least one diagnostic"
        rendered = render_all(exc.diagnostics, exc.source)
        assert "Traceback" not in rendered
        for d in exc.diagnostics:
            assert d.code[:1] == "E" and d.message
        return exc


ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-10**30, max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
    st.sampled_from(["H1OO", "Н100", "llama‐3‐70b", "aws-use1\n", "${var}", "$(rm -rf /)", "1e309",
                     "-0", "0x10", "~", "yes", "on", "1_000", "!!binary aGk="]),
)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, prefix + (i,))


@st.composite
def mutated_example(draw):
    data = yaml.safe_load(draw(st.sampled_from(EXAMPLES)).read_text())
    for _ in range(draw(st.integers(1, 4))):
        paths = [p for p in _paths(data) if p]
        path = draw(st.sampled_from(paths))
        parent = data
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "delete", "unknown_key", "duplicate_list_item"]))
        if action == "replace":
            parent[path[-1]] = draw(ODD_VALUES)
        elif action == "delete":
            del parent[path[-1]]
        elif action == "unknown_key" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["optimiser", "gpu", "Name", "sites ", "ｎａｍｅ"]))] = 1
        elif isinstance(parent, list):
            parent.append(copy.deepcopy(parent[path[-1]]))
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)


@pytest.mark.slow
@FUZZ
@given(mutated_example())
def test_mutated_examples_fail_cleanly(catalog, text):
    front(text, catalog)


@FUZZ
@given(st.one_of(st.text(max_size=300), st.binary(max_size=300).map(lambda b: b.decode("latin-1"))))
def test_junk_text_fails_cleanly(catalog, text):
    result = front(text, catalog)
    assert isinstance(result, CompileError)


@pytest.mark.parametrize("text", [
    "",
    "\n\n",
    "[]",
    "null",
    "a: 1\na: 2\n",
    "apiVersion: infra-compile/v1\nname: .inf\n",
    "horizon_months: 1e999\n",
    "horizon_months: " + "9" * 5000 + "\n",
    "x: " + "[" * 500 + "]" * 500 + "\n",
    "x: &a [" + ",".join(["*a"] * 0) + "]\n" + "".join(
        f"{c}: &{c} [" + ",".join([f"*{p}"] * 9) + "]\n" for p, c in zip("abcdefgh", "bcdefghi")),
    "name: !!python/object/apply:os.system ['true']\n",
])
def test_hostile_documents_fail_cleanly(catalog, text):
    assert isinstance(front(text, catalog), CompileError)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_survive_the_round_trip(catalog, path):
    result = front(path.read_text(), catalog)
    assert not isinstance(result, CompileError), render_all(result.diagnostics, result.source)
