"""The write stage: artifacts (relative path -> text) to an output directory, atomically.

Files are written into a temporary directory beside the target and renamed into
place, so a failed or interrupted compile leaves the previous output exactly as it
was. A lock file beside the target serialises concurrent compiles into one directory.
`drift` compares artifacts with what a directory already holds (for --check).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

# plan.json records how long the solver ran; that one figure differs between runs of
# the same spec, so drift checks compare plan.json with it taken from the old file.
VOLATILE_PLAN_FIELDS = (("solver", "seconds"),)


def _safe_relpath(rel: str) -> Path:
    p = Path(rel)
    if p.is_absolute() or ".." in p.parts or not p.parts:
        raise ValueError(f"artifact path escapes the output directory: {rel!r}")
    return p


@contextlib.contextmanager
def _locked(target: Path) -> Iterator[None]:
    target.parent.mkdir(parents=True, exist_ok=True)
    lock_path = target.parent / f".{target.name}.lock"
    with open(lock_path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM until the block ends, so Ctrl-C cannot land between two renames."""
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _swap(tmp: Path, target: Path) -> None:
    """Move tmp to target; the old target goes aside first and comes back if the move fails."""
    with _signals_deferred():
        old = None
        swapped = False
        try:
            if target.exists():
                old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
                os.rename(target, old / "previous")
            os.rename(tmp, target)
            swapped = True
        except BaseException:
            if old is not None and (old / "previous").exists() and not target.exists():
                os.rename(old / "previous", target)
            raise
        finally:
            # Never delete the previous output unless it is back in place or replaced.
            if old is not None and (swapped or not (old / "previous").exists()):
                shutil.rmtree(old, ignore_errors=True)


def write(artifacts: Mapping[str, str], out_dir: str | Path) -> Path:
    """Write every artifact under out_dir, replacing its previous content atomically."""
    target = Path(out_dir).resolve()
    with _locked(target):
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
        try:
            for rel in sorted(artifacts):
                path = tmp / _safe_relpath(rel)
                path.parent.mkdir(parents=True, exist_ok=True)
                with open(path, "w", encoding="utf-8", newline="\n") as fh:
                    fh.write(artifacts[rel])
                    fh.flush()
                    os.fsync(fh.fileno())
            _swap(tmp, target)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return target


def _normalise_plan(new: str, old: str) -> str:
    """Carry the old plan's volatile fields into the new one before comparing."""
    try:
        new_doc, old_doc = json.loads(new), json.loads(old)
    except ValueError:
        return new
    for path in VOLATILE_PLAN_FIELDS:
        src, dst = old_doc, new_doc
        for key in path[:-1]:
            src, dst = src.get(key, {}), dst.get(key, {})
        if isinstance(src, dict) and isinstance(dst, dict) and path[-1] in src and path[-1] in dst:
            dst[path[-1]] = src[path[-1]]
    return json.dumps(new_doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@dataclass(frozen=True)
class Drift:
    changed: tuple[str, ...]
    missing: tuple[str, ...]
    extra: tuple[str, ...]

    @property
    def clean(self) -> bool:
        return not (self.changed or self.missing or self.extra)


def drift(artifacts: Mapping[str, str], out_dir: str | Path) -> Drift:
    """Which files in out_dir differ from, lack, or add to the artifacts."""
    root = Path(out_dir)
    on_disk: set[str] = set()
    if root.is_dir():
        for p in root.rglob("*"):
            if p.is_file() or p.is_symlink():
                on_disk.add(p.relative_to(root).as_posix())
    changed, missing = [], []
    for rel in sorted(artifacts):
        path = root / rel
        if rel not in on_disk:
            missing.append(rel)
            continue
        try:
            current = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            changed.append(rel)
            continue
        expected = artifacts[rel]
        if rel == "plan.json":
            expected = _normalise_plan(expected, current)
        if current != expected:
            changed.append(rel)
    extra = sorted(on_disk - set(artifacts))
    return Drift(tuple(changed), tuple(missing), tuple(extra))
