"""The write stage: artifacts (relative path -> text) to an output directory, atomically.

Files are written into a temporary directory beside the target and renamed into
place, so a failed or interrupted compile leaves the previous output exactly as it
was. A lock file beside the target serialises concurrent compiles into one directory.
`drift` compares artifacts with what a directory already holds (for --check).

The target is replaced only where nothing of anyone else's can be lost (E015, exit 2,
otherwise): it does not exist, or it is an empty folder, or a folder this compiler wrote,
recognised by the plan.json of a compile or the scenarios.json of a sweep in it, or by the
lock file beside it, which records the folder the last write put there and the files it wrote.
Files in it that the compiler did not write (the runbook's terraform.tfvars, backend.tf and
backend.hcl, Terraform's .terraform/, a user's notes) are carried into the new folder, never
deleted; one where the compiler now writes a file of its name is refused. A file, a device or
a folder of the user's is never replaced; a path that cannot be written (under a file, in a
folder without write permission) is refused before anything is written.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator, Mapping

from compiler.diagnostics import CompileError, Diagnostic, Source

# plan.json records how long the solver ran; that one figure differs between runs of
# the same spec, so drift checks compare plan.json with it taken from the old file.
VOLATILE_PLAN_FIELDS = (("solver", "seconds"),)


_MAX_COMPARED = 64 << 20   # a file in the output folder larger than this differs unread
_MAX_LOCK = 16 << 20       # the lock file names every file of a write: read no more than this


def _safe_relpath(rel: str) -> Path:
    p = Path(rel)
    if p.is_absolute() or ".." in p.parts or not p.parts:
        raise ValueError(f"artifact path escapes the output directory: {rel!r}")
    return p


# The file a compile's and a sweep's folder always holds, and keys it has: with nothing else in
# the folder but what a compile or a sweep writes there, what marks a folder as this compiler's
# output where the lock file beside it does not (a clone, a moved folder).
INDEX_FILES = {"plan.json": ("spec", "catalog", "solver"), "scenarios.json": ("spec", "catalog_version", "scenarios")}
# What a compile writes at the top of its folder (tests/test_hostile_plans.py checks the goldens
# against it), and a sweep besides its scenarios' folders (each holds the scenario's spec.yaml).
COMPILE_ENTRIES = frozenset({"plan.json", "report.md", "report.html", "RUNBOOK.md", "ci", "kubernetes", "onprem",
                             "schedule", "slurm", "terraform"})
SWEEP_ENTRIES = frozenset({"index.html", "scenarios.csv", "scenarios.json", "_base"})
_MARK = "infra-compile output"   # the lock file's first line after a write: "<_MARK> <st_dev> <st_ino>";
                                 # the files that write put there follow, one relative path a line
# Where the lock file names no files (a folder moved or cloned, or written before it did): the
# kinds of file a compile writes, and the files the runbook asks ops to add beside them.
GENERATED_SUFFIXES = frozenset({".tf", ".tfvars", ".yaml", ".yml", ".conf", ".sh", ".csv", ".md", ".sbatch",
                                ".scrontab", ".json", ".html"})
USER_FILES = frozenset({"terraform.tfvars", "backend.tf", "backend.hcl"})
HINT = "name a new folder with -o (or move this one away yourself): an output folder is replaced whole"


def _refused(target: Path, message: str, hint: str | None = HINT) -> CompileError:
    return CompileError([Diagnostic("E015", message, hint=hint)], source=Source(str(target)))


def _lock_path(target: Path) -> Path:
    return target.parent / f".{target.name}.lock"


def _ours(target: Path, info: os.stat_result, writing: frozenset = frozenset()) -> bool:
    """Whether the folder `target` may be replaced: empty, or written by this compiler (`writing`:
    the top-level names of what will replace it)."""
    with os.scandir(target) as entries:
        names = {e.name: e.is_dir(follow_symlinks=False) for e in entries}
    if not names:
        return True
    if _written(target, info) is not None:
        return True
    from compiler import plan_reader

    for name in sorted(INDEX_FILES.keys() & names.keys()):
        try:
            doc = json.loads(plan_reader.read_text(target / name))
        except (CompileError, ValueError, RecursionError):
            continue
        if not (isinstance(doc, dict) and all(k in doc for k in INDEX_FILES[name])):
            continue
        known = writing | (COMPILE_ENTRIES if name == "plan.json" else SWEEP_ENTRIES)
        return all(n in known or (name == "scenarios.json" and is_dir and (target / n / "spec.yaml").is_file())
                   for n, is_dir in names.items())
    return False


def _written(target: Path, info: os.stat_result) -> frozenset[str] | None:
    """The files the last write put in `target` (relative paths), where the lock file beside it
    says that write made this very folder; None where it does not."""
    try:
        with open(_lock_path(target), encoding="utf-8", errors="replace") as fh:
            lines = fh.read(_MAX_LOCK).splitlines()
    except OSError:
        return None
    if not lines or lines[0].split() != [*_MARK.split(), str(info.st_dev), str(info.st_ino)]:
        return None
    return frozenset(line for line in lines[1:] if line)


def _theirs(target: Path, written: frozenset[str] | None) -> list[str]:
    """The files and links under `target` the compiler did not write, as relative paths, sorted:
    those not in `written` (the lock file's list), or where there is none, those hidden, of a kind
    no compile writes (GENERATED_SUFFIXES) or the runbook's own (USER_FILES). A linked folder is
    one entry, not walked."""
    out: list[str] = []
    for root, dirs, files in os.walk(target):
        here = Path(root)
        linked = [d for d in dirs if (here / d).is_symlink()]
        dirs[:] = [d for d in dirs if d not in linked]
        for name in linked + files:
            rel = (here / name).relative_to(target)
            if written is not None:
                if rel.as_posix() not in written:
                    out.append(rel.as_posix())
            elif any(part.startswith(".") for part in rel.parts) or rel.suffix not in GENERATED_SUFFIXES \
                    or rel.name in USER_FILES:
                out.append(rel.as_posix())
    return sorted(out)


def _carry(target: Path, tmp: Path, theirs: list[str], artifacts: Mapping[str, str]) -> None:
    """Each of `theirs` (files the compiler did not write) into the new folder `tmp` at its place,
    as a hard link (a copy across devices, a link as a link), so the swap deletes none of them;
    E015 where the compiler now writes a file of the same name."""
    clash = [rel for rel in theirs if rel in artifacts]
    if clash:
        raise _refused(target, f"the output folder holds {clash[0]}, which this compiler did not write, and the "
                               f"compile now writes a file of that name: it is not replaced",
                       "move or rename that file, or name a new folder with -o")
    for rel in theirs:
        src, dst = target / rel, tmp / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dst)
            continue
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)


def check_target(out_dir: str | Path) -> None:
    """E015 unless out_dir may be written (the module's docstring): called before a compile
    starts, so an output folder that will be refused is said before the solve, not after."""
    _check_target(Path(out_dir).resolve())


def _check_target(target: Path, writing: frozenset = frozenset()) -> None:
    """E015 unless `target` may be replaced (the module's docstring)."""
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise _refused(target, "a folder above the output folder is a file") from None
    except OSError as exc:
        raise _refused(target, f"cannot look at the output folder: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(info.st_mode):
        kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "a file" if stat.S_ISREG(info.st_mode) \
            else "a FIFO, device or socket"
        raise _refused(target, f"the output folder is {kind}: it is not replaced")
    try:
        if _ours(target, info, writing):
            return
    except OSError as exc:
        raise _refused(target, f"cannot look into the output folder: {exc.strerror or exc}") from None
    raise _refused(target, "the output folder holds files this compiler did not write (it is not a compile's "
                           "folder with its plan.json, nor a sweep's with its scenarios.json): it is not replaced")


@contextlib.contextmanager
def _locked(target: Path) -> Iterator[IO[str]]:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fh = open(_lock_path(target), "a+")
    except OSError as exc:
        raise _refused(target, f"cannot create the output folder in {target.parent}: {exc.strerror or exc}",
                       "name a folder you can write to with -o") from None
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield fh
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
    """Write every artifact under out_dir, replacing its previous content atomically; a
    CompileError (E015) where out_dir is not a folder that may be replaced, or cannot be written."""
    target = Path(out_dir).resolve()
    writing = frozenset(_safe_relpath(rel).parts[0] for rel in artifacts)
    _check_target(target, writing)
    with _locked(target) as lock:
        _check_target(target, writing)     # again, under the lock: another writer may have been first
        try:
            tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
        except OSError as exc:
            raise _refused(target, f"cannot write in {target.parent}: {exc.strerror or exc}",
                           "name a folder you can write to with -o") from None
        try:
            for rel in sorted(artifacts):
                path = tmp / _safe_relpath(rel)
                path.parent.mkdir(parents=True, exist_ok=True)
                with open(path, "w", encoding="utf-8", newline="\n") as fh:
                    fh.write(artifacts[rel])
                    fh.flush()
                    os.fsync(fh.fileno())
            if target.is_dir():
                try:
                    before = os.stat(target)
                    _carry(target, tmp, _theirs(target, _written(target, before)), artifacts)
                except OSError as exc:
                    raise _refused(target, f"cannot carry the files this compiler did not write into the new "
                                           f"folder: {exc.strerror or exc}", "move them out, or name a new folder "
                                           "with -o") from None
            _swap(tmp, target)
            info = os.stat(target)
            lock.seek(0)
            lock.truncate()
            lock.write(f"{_MARK} {info.st_dev} {info.st_ino}\n" + "".join(f"{rel}\n" for rel in sorted(artifacts)))
            lock.flush()
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return target


def _normalise_plan(new: str, old: str) -> str:
    """Carry the old plan's volatile fields into the new one before comparing."""
    try:
        new_doc, old_doc = json.loads(new), json.loads(old)
    except (ValueError, RecursionError):     # an edited file: it differs
        return new
    for path in VOLATILE_PLAN_FIELDS:
        src, dst = old_doc, new_doc
        for key in path[:-1]:
            src = src.get(key, {}) if isinstance(src, dict) else {}
            dst = dst.get(key, {}) if isinstance(dst, dict) else {}
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
        expected = artifacts[rel]
        try:
            # a FIFO or device is never read (it may never end), nor a file of another size
            info = os.stat(path)
            if not stat.S_ISREG(info.st_mode) or (rel != "plan.json" and info.st_size != len(expected.encode())) \
                    or info.st_size > _MAX_COMPARED:
                changed.append(rel)
                continue
            current = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            changed.append(rel)
            continue
        if rel == "plan.json":
            expected = _normalise_plan(expected, current)
        if current != expected:
            changed.append(rel)
    # a file the compiler did not write (the runbook's backend.tf, a user's notes) is not drift
    theirs = set(_theirs(root, _written(root.resolve(), os.stat(root)))) if root.is_dir() else set()
    extra = sorted(on_disk - set(artifacts) - theirs)
    return Drift(tuple(changed), tuple(missing), tuple(extra))
