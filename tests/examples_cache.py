"""Each shipped example compiled once per test session, shared by every test that reads it.

The exact model makes the larger examples take tens of seconds (docs/optimizer.md, "Exact
reductions"); compiling each once keeps the suite's time to what the tests need."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = tuple(sorted(p.stem for p in (ROOT / "examples").glob("*.yaml")))


@lru_cache(maxsize=None)
def example(name: str):
    """(Candidates, Result) of examples/<name>.yaml: the estimate, and the whole compile (audited
    plan and artifacts) exactly as `infra-compile` runs it."""
    from compiler.pipeline import compile_spec, estimate

    path = ROOT / "examples" / f"{name}.yaml"
    candidates, _doc = estimate(path)
    return candidates, compile_spec(path)
