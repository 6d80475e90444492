"""Results that several test files compute alike, computed once per test run and shared.

Under pytest-xdist the first worker to ask computes a value and leaves it, pickled, in the run's
folder (shared_folder, removed by conftest at the end of the run); a file lock per
key makes a second worker that asks meanwhile wait for that copy instead of computing it again.
Outside xdist the value is kept in the process.

A value is found by a content key: a digest of what computes it (the compiler's sources, its
templates, schemas and catalog data, the versions of Python and of the solvers and libraries it
calls) and of the inputs the caller names (spec bytes, options). Two calls share a value only
where all of that is the same, so a value is never stale: another run, or a source edited during
this one, keys another value."""

from __future__ import annotations

import copyreg
import fcntl
import hashlib
import os
import pickle
import sys
import tempfile
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Callable, TypeVar

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[1]
_LOCAL: dict[str, object] = {}
# What a compile reads besides its spec: the package's code and data, and the templates and
# schemas where the installed package finds them (compiler.resources).
_VERSIONED = ("pulp", "highspy", "numpy", "jinja2", "pyyaml", "jsonschema")


@lru_cache(maxsize=None)
def fingerprint() -> str:
    """A digest of everything a compile's result depends on besides its inputs."""
    from importlib.metadata import PackageNotFoundError, version
    from importlib.resources import files

    import compiler
    from compiler.resources import templates_dir

    h = hashlib.sha256(sys.version.encode())
    for name in _VERSIONED:
        try:
            h.update(f"{name}={version(name)}\n".encode())
        except PackageNotFoundError:
            h.update(f"{name}=-\n".encode())
    package = Path(compiler.__file__).resolve().parent
    schemas = Path(str(files("compiler._schemas")))
    for top in (package, templates_dir(), schemas):
        for path in sorted(p for p in top.resolve().rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            h.update(str(path.relative_to(top.resolve())).encode() + b"\0")
            h.update(path.read_bytes())
    return h.hexdigest()


def key(*parts: bytes | str) -> str:
    """The content key of a value computed from `parts` by this compiler."""
    h = hashlib.sha256(fingerprint().encode())
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def shared(kind: str, content_key: str, compute: Callable[[], T]) -> T:
    """compute(), or the value another process of this run computed under the same key."""
    name = f"{kind}-{content_key[:32]}"
    if name in _LOCAL:
        return _LOCAL[name]          # type: ignore[return-value]
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run:
        _LOCAL[name] = value = compute()
        return value
    folder = shared_folder(run)
    try:
        folder.mkdir(exist_ok=True)
        lock = open(folder / f"{name}.lock", "w")
    except OSError:
        _LOCAL[name] = value = compute()
        return value
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)          # one computes, the others wait for its copy
        path = folder / f"{name}.pickle"
        if path.exists():
            value = pickle.loads(path.read_bytes())
        else:
            value = compute()
            part = path.with_suffix(".part")
            try:
                part.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
                os.replace(part, path)
            except OSError:
                pass                              # not shared: the others compute it themselves
    _LOCAL[name] = value
    return value


@contextmanager
def free_solves_shared():
    """Within the block, a compile's solve without the operability limits (the first solve of
    compiler.operability.solve_within_limits: optimize on the candidates with every limit
    lifted) is shared (shared()) between compiles whose lifted candidates and solve options are
    the same: a shipped example and a variant of it that differs only in those limits solve the
    same model, and the compile asserts as much (tests/test_operability.py: the plan without the
    limit is the example's own). The spec's digest (Spec.sha256) is not an input of the solve but
    a label it copies into the plan (readback/decode.py: Plan.spec_sha256): it is left out of the
    key and set on the plan each compile gets back. A solve with limits, a start, a baseline or a
    progress callback is not shared."""
    from dataclasses import replace

    import compiler.optimize as optimize_module

    inner = optimize_module.optimize

    def sharing(candidates, options=optimize_module.SolveOptions()):
        spec = candidates.spec
        if (spec.policy.sets_limits or options.progress is not None or options.start is not None
                or options.kept is not None):
            return inner(candidates, options)
        try:
            unlabelled = pickle.dumps((replace(candidates, spec=replace(spec, sha256="")), options),
                                      protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError):
            return inner(candidates, options)
        plan = shared("free-solve", key(unlabelled), lambda: inner(candidates, options))
        return replace(plan, spec_sha256=spec.sha256)

    optimize_module.optimize = sharing
    try:
        yield
    finally:
        optimize_module.optimize = inner


def proven_objective(problem, gap: float) -> float:
    """The objective HiGHS proves for `problem` (a formulated Problem) within `gap`
    (compiler.optimize.solve.solve): the oracle several files compute alike for one generated
    platform (tests/test_optimize_engine.py and tests/test_optimize_start.py solve
    benchmarks/generate.generate(20, 1, horizon=12) to 1e-6, 11 s each), shared() under a digest
    of the problem's pickle, which holds everything the solve reads besides the compiler."""
    from compiler.optimize.solve import solve

    data = pickle.dumps(problem, protocol=pickle.HIGHEST_PROTOCOL)
    return shared("proven-objective", key(data, repr(gap)),
                  lambda: solve(problem, solver="highs", gap=gap).objective)


def shared_folder(run: str) -> Path:
    """Where the workers of test run `run` share what they computed (conftest removes it)."""
    return Path(tempfile.gettempdir()) / f"infra-compile-examples-{run}"


def _proxy(mapping: dict) -> MappingProxyType:
    return MappingProxyType(mapping)


# The catalog holds read-only mappings, which pickle does not know: rebuilt from their items.
copyreg.pickle(MappingProxyType, lambda m: (_proxy, (dict(m),)))
