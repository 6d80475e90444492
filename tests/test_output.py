"""The write stage: atomic replacement and drift detection (--check)."""

import json
import os

import pytest

from compiler import output


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
    out = tmp_path / "out"
    artifacts = {"a.txt": "1\n", "b/c.txt": "2\n", "d.txt": "4\n"}
    output.write(artifacts, out)
    assert output.drift(artifacts, out).clean
    (out / "a.txt").write_text("edited\n")
    (out / "d.txt").unlink()
    (out / "stray.txt").write_text("x")
    d = output.drift(artifacts, out)
    assert (d.changed, d.missing, d.extra) == (("a.txt",), ("d.txt",), ("stray.txt",))
    assert not d.clean


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
