"""The seeded small specs of benchmarks/small_specs.py: the same text for the same seed, and every
one of the 40 the benchmark runs a valid spec (the benchmark measures compiles, not typos)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from small_specs import small_spec  # noqa: E402


def test_the_generator_is_seeded():
    assert small_spec(7) == small_spec(7)
    assert small_spec(7) != small_spec(8)


@pytest.mark.parametrize("seed", range(40))
def test_every_spec_of_the_set_validates(seed, tmp_path):
    from compiler import pipeline

    path = tmp_path / f"small-{seed:03d}.yaml"
    path.write_text(small_spec(seed), encoding="utf-8")
    spec, _, _ = pipeline.validate(path)
    assert 1 <= len(spec.workloads) <= 8 and 1 <= len(spec.sites) <= 4
    # 99.9% services survive the loss of a site: the spec offers another one.
    assert all(len(spec.sites) >= 2 for w in spec.workloads if w.kind == "inference" and w.slo.availability >= 0.999)
