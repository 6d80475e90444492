"""Each shipped example compiled once per test session, shared by every test that reads it.

The exact model makes the larger examples take tens of seconds (docs/optimizer.md, "Exact
reductions"); compiling each once keeps the suite's time to what the tests need."""

from __future__ import annotations

from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

from shared_cache import free_solves_shared, key, shared, shared_folder  # noqa: F401  (conftest: shared_folder)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = tuple(sorted(p.stem for p in (ROOT / "examples").glob("*.yaml")))
# The examples whose compile is not a toy's (more than a minute on 2 cores): only slow tests
# compile them, so the fast tier stays an edit-test loop. example() refuses them in a test not
# marked slow (conftest tells it which test runs).
HEAVY = ("hybrid-llm-platform", "multi-region-inference")
IN_FAST_TEST = [False]


def example_params(names=EXAMPLES) -> list:
    """names for @pytest.mark.parametrize, the heavy examples marked slow."""
    import pytest

    return [pytest.param(n, marks=pytest.mark.slow) if n in HEAVY else n for n in names]


@contextmanager
def estimates_seen():
    """Within the block, the estimate stage compile_spec calls (pipeline.estimate_candidates, as
    it is then, test doubles included) records the Candidates of each call: the list it yields,
    in call order. A compile that fails after its estimate stage has no Result to read them from."""
    from compiler import pipeline

    seen, inner = [], pipeline.estimate_candidates

    def recording_estimate(*args, **kwargs):
        candidates = inner(*args, **kwargs)
        seen.append(candidates)
        return candidates

    pipeline.estimate_candidates = recording_estimate
    try:
        yield seen
    finally:
        pipeline.estimate_candidates = inner


def example(name: str):
    """(Candidates, Result) of examples/<name>.yaml (_example), refused for a heavy example in a
    test not marked slow."""
    if name in HEAVY and IN_FAST_TEST[0]:
        raise AssertionError(f"{name} takes minutes to compile: mark the test that asks for it slow "
                             "(examples_cache.example_params for a parametrized one)")
    return _example(name)


@lru_cache(maxsize=None)
def _example(name: str):
    """(Candidates, Result) of examples/<name>.yaml: the whole compile (audited plan and
    artifacts) exactly as `infra-compile` runs it, and the candidates its estimate stage gave
    the optimizer.

    Under pytest-xdist the first worker to ask compiles it and leaves it in a folder of this run
    (shared_cache.shared); the others read that copy instead of compiling again: the largest
    example takes minutes, and several workers' files read it. A stage replaced by a test double
    is compiled here and not shared. The plan it solves without the operability limits is shared
    with compiles of the example's variants (shared_cache.free_solves_shared)."""
    from compiler import pipeline

    path = ROOT / "examples" / f"{name}.yaml"

    def compiled():
        result = pipeline.compile_spec(path)
        return result.candidates, result

    if (pipeline.compile_spec, pipeline.estimate_candidates) != _STAGES:
        return compiled()

    def sharing_its_free_solve():
        with free_solves_shared():
            return compiled()

    return shared("example", key(name, path.read_bytes()), sharing_its_free_solve)


def _stages():
    from compiler import pipeline

    return pipeline.compile_spec, pipeline.estimate_candidates


_STAGES = _stages()
