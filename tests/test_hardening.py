"""Safe output under interruption and concurrency, and hostile names through the whole pipeline.

- A compile interrupted mid-solve (SIGINT to its process group, CBC child included) exits
  130 with one line and no traceback, and leaves the previous output byte for byte.
- Compiles into one directory at once never interleave: the directory always holds one
  run's complete output.
- A compile that fails after solving (render error, interrupt while writing) leaves the
  previous output exactly as it was, with no temporary directory beside it.
- Injection-shaped names in a spec stop at the validator (exit 2, E106 at the name's path,
  no output written); names at the edges of the pattern compile, and every file they
  reach still parses, with the names only inside HCL strings.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from compiler import output, pipeline
from compiler.diagnostics import CompileError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_pipeline import platform_spec  # noqa: E402


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root (relative path -> bytes)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def leftovers(parent: Path, name: str) -> list[str]:
    """Temporary or aside directories that a write left next to `name`."""
    return sorted(p.name for p in parent.iterdir() if p.name.startswith((f".{name}.tmp-", f".{name}.old-")))


def compile_cmd(spec: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "compiler", str(spec), "-o", str(out), "-q", *extra]


@pytest.fixture(scope="module")
def previous():
    """A real compile's artifacts: the 'previous output' the failure tests must preserve."""
    return pipeline.compile_spec(EXAMPLES / "onprem-vision.yaml").artifacts


def _children(pid: int) -> list[int]:
    kids = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        kids += [int(k) for k in (task / "children").read_text().split()]
    return kids


def _descendant_named(pid: int, name: str) -> int | None:
    """The pid of a process called `name` below pid, if one runs now."""
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            todo += _children(p)
            if p != pid and Path(f"/proc/{p}/comm").read_text().strip() == name:
                return p
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return None


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_sigint_mid_solve_leaves_previous_output(tmp_path, previous):
    out = tmp_path / "out"
    output.write(previous, out)
    before = snapshot(out)
    spec = tmp_path / "big.yaml"
    # 10 workloads over five sites: CBC starts after the improving rounds (HiGHS, in-process:
    # engine.py), a few seconds in, and searches for several more, long enough to be caught in
    # the act (20 workloads keep the rounds busy for a minute or more on a loaded 2-core machine).
    spec.write_text(yaml.safe_dump(platform_spec(10, seed=1), sort_keys=False))
    # --solver cbc: auto searches on HiGHS in-process there (Ctrl-C in HiGHS: test_optimize_engine)
    proc = subprocess.Popen(compile_cmd(spec, out, "--solver", "cbc"), cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    cbc = None
    try:
        deadline = time.monotonic() + 400
        while (cbc := _descendant_named(proc.pid, "cbc")) is None:
            assert proc.poll() is None, f"compile ended before its solve could be interrupted: {proc.communicate()}"
            assert time.monotonic() < deadline, "CBC never started"
            time.sleep(0.05)
        time.sleep(0.2)
        assert _running(cbc), "the solve ended too soon to interrupt it: use a bigger spec"
        os.killpg(proc.pid, signal.SIGINT)     # what Ctrl-C in a terminal does
        stdout, stderr = proc.communicate(timeout=60)
        gone = time.monotonic() + 10
        while _running(cbc) and time.monotonic() < gone:
            time.sleep(0.05)
        assert not _running(cbc), "the solver outlived the interrupted compile"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if cbc is not None and _running(cbc):
            os.kill(cbc, signal.SIGKILL)      # never leave our solver running after a failure
    assert proc.returncode == 130, (proc.returncode, stderr)
    assert "Traceback" not in stderr and "Traceback" not in stdout
    assert "interrupted" in stderr
    assert snapshot(out) == before
    assert leftovers(tmp_path, "out") == []


@pytest.mark.slow
def test_concurrent_compiles_never_interleave(tmp_path):
    """Two different specs into one directory at once: it ends as exactly one of the two outputs."""
    specs = [EXAMPLES / "onprem-vision.yaml", EXAMPLES / "llm-pretrain-aws.yaml"]
    expected = [pipeline.compile_spec(s).artifacts for s in specs]
    out = tmp_path / "out"
    procs = [subprocess.Popen(compile_cmd(s, out), cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for s in specs]
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    matches = [output.drift(artifacts, out).clean for artifacts in expected]
    assert matches.count(True) == 1, [output.drift(a, out) for a in expected]
    assert leftovers(tmp_path, "out") == []


def test_racing_writers_each_leave_one_whole_tree(tmp_path, monkeypatch):
    """Many writers, slowed inside the write, contend for one directory; none mixes with another."""
    out = tmp_path / "out"
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (time.sleep(0.002), real_fsync(fd)))
    trees = {k: {f"f{i}.txt": f"{k}\n" for i in range(8 + k)} | {f"only-{k}/x": "x\n"} for k in range(6)}
    errors: list[BaseException] = []
    seen: list[int] = []

    def writer(k: int) -> None:
        try:
            output.write(trees[k], out)
            # Read back under the lock: what a reader sees between writes is one whole tree.
            with output._locked(out.resolve()):
                got = {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*") if p.is_file()}
            seen.append(next(j for j, t in trees.items() if t == got))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in trees]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == [] and len(seen) == len(trees), (errors, seen)
    final = {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*") if p.is_file()}
    assert final in trees.values()
    assert leftovers(tmp_path, "out") == []


def _cli(args: list[str]):
    from typer.testing import CliRunner

    from compiler.cli import _route, app

    return CliRunner().invoke(app, _route(args))


@pytest.mark.slow
def test_render_error_leaves_previous_output(tmp_path, monkeypatch, previous):
    out = tmp_path / "out"
    output.write(previous, out)
    before = snapshot(out)

    def broken_render(plan, catalog):
        raise RuntimeError("template blew up")

    monkeypatch.setattr(pipeline, "render_artifacts", broken_render)
    result = _cli([str(EXAMPLES / "llm-pretrain-aws.yaml"), "-o", str(out), "-q"])
    assert result.exit_code == 1, result.output
    assert "internal error" in result.output and "Traceback" not in result.output
    assert snapshot(out) == before
    assert leftovers(tmp_path, "out") == []


@pytest.mark.slow
@pytest.mark.parametrize("at_file", [0, 5])
def test_interrupt_while_writing_leaves_previous_output(tmp_path, monkeypatch, previous, at_file):
    """Ctrl-C after some files are already in the temp dir: exit 130, nothing of them stays."""
    out = tmp_path / "out"
    output.write(previous, out)
    before = snapshot(out)
    real_fsync, calls = os.fsync, []

    def interrupted_fsync(fd):
        calls.append(fd)
        if len(calls) > at_file:
            raise KeyboardInterrupt
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", interrupted_fsync)
    result = _cli([str(EXAMPLES / "onprem-vision.yaml"), "-o", str(out), "-q"])
    monkeypatch.undo()
    assert len(calls) == at_file + 1, "the interrupt was not injected where intended"
    assert result.exit_code == 130, result.output
    assert "interrupted" in result.output and "Traceback" not in result.output
    assert snapshot(out) == before
    assert leftovers(tmp_path, "out") == []


def test_interrupt_during_the_swap_restores_previous_output(tmp_path, monkeypatch, previous):
    """The old tree is already moved aside when the interrupt lands: it is put back."""
    out = tmp_path / "out"
    output.write(previous, out)
    before = snapshot(out)
    real_rename = os.rename

    def rename(src, dst):
        if str(dst) == str(out.resolve()) and ".out.tmp-" in str(src):
            raise KeyboardInterrupt
        return real_rename(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    with pytest.raises(KeyboardInterrupt):
        output.write({"plan.json": "{}\n"}, out)
    monkeypatch.undo()
    assert snapshot(out) == before
    assert leftovers(tmp_path, "out") == []


# --- names from the spec -------------------------------------------------------------------

HOSTILE_NAMES = [
    'a"b', "x${var.secret}", "a; touch PWNED", "$(touch PWNED)", "`id`", "line1\nline2",
    "../etc", "a/b", "Aws", "-rm", "a_b", "Н100", "ｎａｍｅ", "chat\u200b70b", "a" * 64, "a-", "",
    "name: x", "{a: 1}",
]
SPEC_PATHS = {   # where a name sits in examples/hybrid-llm-platform.yaml -> spec path
    "spec": ("name",),
    "site": ("sites", 1, "name"),
    "workload": ("workloads", 2, "name"),
}


def _set(data, path, value):
    for part in path[:-1]:
        data = data[part]
    data[path[-1]] = value


@pytest.mark.parametrize("where", sorted(SPEC_PATHS))
@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=lambda n: repr(n)[:24])
def test_injection_shaped_names_stop_at_the_validator(tmp_path, where, name):
    data = yaml.safe_load((EXAMPLES / "hybrid-llm-platform.yaml").read_text())
    _set(data, SPEC_PATHS[where], name)
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False))
    with pytest.raises(CompileError) as err:
        pipeline.validate(spec)
    assert err.value.exit_code == 2
    at_name = [d for d in err.value.diagnostics if tuple(d.path) == SPEC_PATHS[where]]
    assert at_name and at_name[0].code in ("E106", "E107"), err.value.diagnostics
    assert nothing_written(tmp_path)


def nothing_written(tmp_path: Path) -> bool:
    return sorted(p.name for p in tmp_path.iterdir()) == ["spec.yaml"]


@pytest.mark.slow
def test_cli_refuses_a_hostile_workload_name_with_exit_2_and_writes_nothing(tmp_path):
    data = yaml.safe_load((EXAMPLES / "llm-pretrain-aws.yaml").read_text())
    data["workloads"][0]["name"] = "x; touch PWNED"
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    r = subprocess.run(compile_cmd(spec, tmp_path / "out"), cwd=tmp_path, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2
    assert re.search(r"spec\.yaml:\d+:\d+: error\[E106\] at \$\.workloads\[0\]\.name", r.stderr), r.stderr
    assert "Traceback" not in r.stderr
    assert nothing_written(tmp_path)


def _outside_hcl_strings(text: str) -> str:
    """HCL text with comments and the contents of string literals blanked out."""
    kept, in_str, i = [], False, 0
    while i < len(text):
        c = text[i]
        if in_str:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_str = False
            i += 1
            continue
        if c == '"':
            in_str = True
        elif c == "#" or text.startswith("//", i):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        kept.append(c)
        i += 1
    return "".join(kept)


@pytest.mark.slow
def test_edge_names_compile_and_every_file_still_parses(tmp_path):
    """Longest, shortest and dash-heavy names through spec -> files: HCL, YAML, JSON, CSV all parse."""
    import hcl2

    long_site = "s" + "-a" * 30 + "9"            # 62 chars, dashes everywhere
    long_workload = "w" * 63                       # the longest name the pattern allows
    data = yaml.safe_load((EXAMPLES / "hybrid-llm-platform.yaml").read_text())
    renames = {"aws-use1": "a", "fra-dc1": long_site, "chat-70b": long_workload,
               "llama-70b-continued": "x-0", "hybrid-llm-platform": "p" * 63}
    text = (EXAMPLES / "hybrid-llm-platform.yaml").read_text()
    for old, new in renames.items():
        text = re.sub(rf"(?<![\w-]){re.escape(old)}(?![\w-])", new, text)
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    assert yaml.safe_load(text)["workloads"][2]["name"] == long_workload != data["workloads"][2]["name"]
    files = pipeline.compile_spec(spec).artifacts
    assert any(long_site in p for p in files) and any(long_workload in t for t in files.values())
    for path, body in files.items():
        if path.endswith(".tf"):
            hcl2.loads(body)
            bare = _outside_hcl_strings(body)
            for name in (long_site, long_workload, "x-0"):
                assert name not in bare, f"{path}: {name} outside an HCL string"
        elif path.endswith(".yaml"):
            for doc in yaml.safe_load_all(body):
                name = doc["metadata"]["name"]
                assert re.fullmatch(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?", name) and len(name) <= 63
        elif path.endswith(".json"):
            json.loads(body)
        elif path.endswith(".csv"):
            rows = list(csv.reader(io.StringIO(body)))
            assert len({len(r) for r in rows}) == 1
