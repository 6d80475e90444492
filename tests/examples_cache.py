"""Each shipped example compiled once per test session, shared by every test that reads it.

The exact model makes the larger examples take tens of seconds (docs/optimizer.md, "Exact
reductions"); compiling each once keeps the suite's time to what the tests need."""

from __future__ import annotations

import copyreg
import fcntl
import os
import pickle
import tempfile
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType

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
    (SHARED); the others read that copy instead of compiling again: the largest example takes
    most of a minute, and several workers' files read it. A stage replaced by a test double is
    compiled here and not shared."""
    from compiler import pipeline

    def compiled():
        result = pipeline.compile_spec(ROOT / "examples" / f"{name}.yaml")
        return result.candidates, result

    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run or (pipeline.compile_spec, pipeline.estimate_candidates) != _STAGES:
        return compiled()
    folder = shared_folder(run)
    try:
        folder.mkdir(exist_ok=True)
        lock = open(folder / f"{name}.lock", "w")
    except OSError:
        return compiled()
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)          # one compiles, the others wait for its copy
        path = folder / f"{name}.pickle"
        if path.exists():
            return pickle.loads(path.read_bytes())
        value = compiled()
        part = path.with_suffix(".part")
        try:
            part.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
            os.replace(part, path)
        except OSError:
            pass                                  # not shared: the others compile it themselves
        return value


def shared_folder(run: str) -> Path:
    """Where the workers of test run `run` share the examples' compiles (conftest removes it)."""
    return Path(tempfile.gettempdir()) / f"infra-compile-examples-{run}"


def _proxy(mapping: dict) -> MappingProxyType:
    return MappingProxyType(mapping)


# The catalog holds read-only mappings, which pickle does not know: rebuilt from their items.
copyreg.pickle(MappingProxyType, lambda m: (_proxy, (dict(m),)))


def _stages():
    from compiler import pipeline

    return pipeline.compile_spec, pipeline.estimate_candidates


_STAGES = _stages()
