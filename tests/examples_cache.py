"""Each shipped example compiled once per test session, shared by every test that reads it.

The exact model makes the larger examples take tens of seconds (docs/optimizer.md, "Exact
reductions"); compiling each once keeps the suite's time to what the tests need."""

from __future__ import annotations

from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = tuple(sorted(p.stem for p in (ROOT / "examples").glob("*.yaml")))


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


@lru_cache(maxsize=None)
def example(name: str):
    """(Candidates, Result) of examples/<name>.yaml: the whole compile (audited plan and
    artifacts) exactly as `infra-compile` runs it, and the candidates its estimate stage gave
    the optimizer."""
    from compiler import pipeline

    result = pipeline.compile_spec(ROOT / "examples" / f"{name}.yaml")
    return result.candidates, result
