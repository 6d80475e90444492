"""The write stage: atomic replacement and drift detection (--check)."""

import json
import os

import pytest

from compiler import output
from compiler.diagnostics import CompileError


def test_write_replaces_the_whole_tree(tmp_path):
    out = tmp_path / "out"
    output.write({"a.txt": "1\n", "sub/b.txt": "2\n"}, out)
    output.write({"a.txt": "3\n"}, out)
    assert (out / "a.txt").read_text() == "3\n"
    assert not (out / "sub").exists(), "files of the previous output must not linger"
    # Nothing left beside the target but the lock file.
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.lock", "out"]


def test_failed_write_leaves_previous_output(tmp_path, monkeypatch):
    out = tmp_path / "out"
    output.write({"a.txt": "old\n"}, out)
    real_rename = os.rename
    failures = []

    def failing_rename(src, dst):
        # The new tree fails to move into place once; restoring the old one works.
        if str(dst) == str(out.resolve()) and ".out.tmp-" in str(src) and not failures:
            failures.append(src)
            raise OSError("disk full")
        return real_rename(src, dst)

    monkeypatch.setattr(os, "rename", failing_rename)
    with pytest.raises(OSError):
        output.write({"a.txt": "new\n"}, out)
    monkeypatch.undo()
    assert failures, "the failure path was not exercised"
    assert (out / "a.txt").read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.tmp")] == []


def test_artifact_paths_cannot_escape(tmp_path):
    with pytest.raises(ValueError):
        output.write({"../evil": "x"}, tmp_path / "out")
    assert not (tmp_path / "evil").exists()


def test_drift_names_changed_missing_and_extra(tmp_path):
    """Extra: a file the last write put there that the spec no longer renders. A file the compiler
    never wrote (a user's note) is the user's, carried by every write, so it is no drift."""
    out = tmp_path / "out"
    artifacts = {"a.txt": "1\n", "b/c.txt": "2\n", "d.txt": "4\n"}
    output.write(artifacts, out)
    assert output.drift(artifacts, out).clean
    (out / "a.txt").write_text("edited\n")
    (out / "stray.txt").write_text("x")
    now = {"a.txt": "1\n", "b/c.txt": "2\n", "e.txt": "5\n"}
    d = output.drift(now, out)
    assert (d.changed, d.missing, d.extra) == (("a.txt",), ("e.txt",), ("d.txt",))
    assert not d.clean


def _tree(root):
    return {p.relative_to(root).as_posix(): (p.read_text() if not p.is_symlink() else "->" + str(p.readlink()))
            for p in sorted(root.rglob("*")) if p.is_file() or p.is_symlink()}


def test_files_the_compiler_did_not_write_are_carried_never_deleted(tmp_path):
    """The runbook asks ops to add terraform.tfvars, backend.tf and backend.hcl beside the
    generated Terraform and to run terraform there (.terraform/, its lock file, a saved plan):
    a compile into the same folder keeps every one of them, byte for byte, and drops only the
    files its last write put there that the spec no longer renders."""
    out = tmp_path / "out"
    first = {"plan.json": "{}\n", "terraform/aws/main.tf": "old\n", "terraform/gone/main.tf": "x\n"}
    output.write(first, out)
    theirs = {"terraform/aws/backend.tf": "terraform {}\n", "terraform/aws/backend.hcl": "bucket = \"b\"\n",
              "terraform/aws/terraform.tfvars": "a = 1\n", "terraform/aws/tfplan": "binary",
              "terraform/aws/.terraform/providers/p": "provider\n", "terraform/aws/.terraform.lock.hcl": "lock\n",
              "notes.txt": "mine\n"}
    for rel, text in theirs.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(text)
    (out / "terraform/aws/link").symlink_to("backend.tf")
    second = {"plan.json": json.dumps({"v": 2}, indent=2) + "\n", "terraform/aws/main.tf": "new\n"}
    output.write(second, out)
    got = _tree(out)
    assert {k: got[k] for k in theirs} == theirs
    assert got["terraform/aws/link"] == "->backend.tf"
    assert got["terraform/aws/main.tf"] == "new\n" and "terraform/gone/main.tf" not in got
    assert set(got) == set(second) | set(theirs) | {"terraform/aws/link"}
    assert output.drift(second, out).clean


def test_a_folder_without_the_lock_file_keeps_what_no_compile_writes(tmp_path):
    """A folder moved or cloned has no lock file beside it naming the files of its last write:
    what no compile writes (hidden files, other kinds, the runbook's own files) is carried, the
    rest is the compiler's."""
    out = tmp_path / "out"
    plan = json.dumps({"spec": {}, "catalog": {}, "solver": {}}) + "\n"     # a compile's, by its keys
    output.write({"plan.json": plan, "terraform/aws/main.tf": "old\n", "terraform/gone/main.tf": "x\n"}, out)
    (out / "terraform/aws/backend.tf").write_text("terraform {}\n")
    (out / "terraform/aws/.terraform").mkdir()
    (out / "terraform/aws/.terraform/state").write_text("s\n")
    (tmp_path / ".out.lock").unlink()
    output.write({"plan.json": plan, "terraform/aws/main.tf": "new\n"}, out)
    got = _tree(out)
    assert got["terraform/aws/backend.tf"] == "terraform {}\n" and got["terraform/aws/.terraform/state"] == "s\n"
    assert "terraform/gone/main.tf" not in got


def test_a_users_file_where_the_compiler_now_writes_one_is_refused(tmp_path):
    out = tmp_path / "out"
    output.write({"plan.json": "{}\n", "report.md": "r\n"}, out)
    (out / "RUNBOOK.md").write_text("my own runbook\n")
    with pytest.raises(CompileError) as err:
        output.write({"plan.json": "{}\n", "report.md": "r\n", "RUNBOOK.md": "generated\n"}, out)
    assert err.value.diagnostics[0].code == "E015" and "RUNBOOK.md" in err.value.diagnostics[0].message
    assert (out / "RUNBOOK.md").read_text() == "my own runbook\n"


def test_drift_ignores_only_solver_seconds_in_plan(tmp_path):
    out = tmp_path / "out"
    plan = {"solver": {"seconds": 1.5, "status": "optimal"}, "total_cost_usd": 10}
    output.write({"plan.json": json.dumps(plan, indent=2, sort_keys=True) + "\n"}, out)
    rerun = {**plan, "solver": {"seconds": 2.7, "status": "optimal"}}
    assert output.drift({"plan.json": json.dumps(rerun, indent=2, sort_keys=True) + "\n"}, out).changed == ()
    # Anything else in the plan is drift.
    (out / "plan.json").write_text(json.dumps(plan, indent=2, sort_keys=True) + "\n")
    costlier = {**plan, "total_cost_usd": 11}
    assert output.drift({"plan.json": json.dumps(costlier, indent=2, sort_keys=True) + "\n"},
                        out).changed == ("plan.json",)
