"""schedule/<site>.sh applies one month of the plan: run here with --dry-run, it prints exactly
the commands it would run, so the test reads them back against the plan's months."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace

import pytest

from compiler.catalog import load_catalog
from compiler.render import render
from plans import onprem_plan, owned_job


def _plan():
    """A Slurm job on all 8 owned dgx-h100 nodes in months 0-1, a Kubernetes job on one in 3."""
    plan = onprem_plan()
    return replace(plan, workloads=plan.workloads + (owned_job("big", 8, {0, 1}),
                                                     owned_job("small", 1, {3}, "kubernetes")))


def _month(script, month, tmp_path) -> subprocess.CompletedProcess:
    path = tmp_path / "apply.sh"
    path.write_text(script)
    return subprocess.run(["bash", str(path), str(month), "--dry-run"], capture_output=True, text=True,
                          timeout=30)


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_a_month_hands_nodes_over_and_sets_replicas(tmp_path):
    script = render(_plan(), load_catalog())["schedule/fra-dc1.sh"]
    # month 0: own08 is Slurm's (big holds all 8): Kubernetes lets go of it, Slurm resumes it;
    # chat-70b runs its 8 replicas (the fixture's every month), HPA from 2 to 8.
    out = _month(script, 0, tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "kubectl drain dgx-h100-own08 --ignore-daemonsets --delete-emptydir-data --timeout=900s" in lines
    assert "scontrol update NodeName=dgx-h100-own08 State=RESUME" in lines
    assert ("kubectl -n hybrid-llm-platform patch hpa chat-70b --type=merge "
            "-p {\"spec\":{\"minReplicas\":2,\"maxReplicas\":8}}") in lines
    assert "kubectl -n hybrid-llm-platform scale deployment chat-70b --replicas=8" in lines
    # month 3: small holds own08 on Kubernetes: Slurm drains it, Kubernetes takes it.
    lines = _month(script, 3, tmp_path).stdout.splitlines()
    assert "scontrol update NodeName=dgx-h100-own08 State=DRAIN Reason=kubernetes-month-3" in lines
    assert "kubectl uncordon dgx-h100-own08" in lines
    # month 5: nobody holds own08: drained on both sides
    lines = _month(script, 5, tmp_path).stdout.splitlines()
    assert "scontrol update NodeName=dgx-h100-own08 State=DRAIN Reason=idle-month-5" in lines
    assert "kubectl drain dgx-h100-own08 --ignore-daemonsets --delete-emptydir-data --timeout=900s" in lines


@pytest.mark.parametrize("month", ["12", "-1", "x", ""])
def test_a_month_outside_the_horizon_is_refused(month, tmp_path):
    out = _month(render(_plan(), load_catalog())["schedule/fra-dc1.sh"], month, tmp_path)
    assert out.returncode == 2 and "month must be a whole number from 0 to 11" in out.stderr
    assert out.stdout == ""


def _stubs(tmp_path, slurm_state: str, kubectl_rc: int = 0) -> dict:
    """kubectl, scontrol and sinfo that log their arguments; sinfo reports `slurm_state`."""
    import os
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    for name, body in (("kubectl", f'echo "kubectl $*" >> {log}\nexit {kubectl_rc}'),
                       ("scontrol", f'echo "scontrol $*" >> {log}'),
                       ("sinfo", f'echo {slurm_state}')):
        f = bin_dir / name
        f.write_text(f"#!/bin/bash\n{body}\n")
        f.chmod(0o755)
    return dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")


@pytest.mark.parametrize("state,resumed", [("idle", False), ("drained", True), ("draining", True)])
def test_slurm_resumes_a_node_only_where_it_is_drained(state, resumed, tmp_path):
    # Slurm 22.05 refuses State=RESUME on a node that is not drained: the script asks sinfo first
    path = tmp_path / "apply.sh"
    path.write_text(render(_plan(), load_catalog())["schedule/fra-dc1.sh"])
    out = subprocess.run(["bash", str(path), "0"], env=_stubs(tmp_path, state), capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert ("scontrol update NodeName=dgx-h100-own08 State=RESUME" in calls) is resumed
    assert "kubectl -n hybrid-llm-platform scale deployment chat-70b --replicas=8" in calls


def test_a_failed_command_is_reported_and_the_rest_still_run(tmp_path):
    path = tmp_path / "apply.sh"
    path.write_text(render(_plan(), load_catalog())["schedule/fra-dc1.sh"])
    out = subprocess.run(["bash", str(path), "0"], env=_stubs(tmp_path, "drained", kubectl_rc=1),
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 1
    assert "failed: kubectl -n hybrid-llm-platform patch hpa chat-70b" in out.stderr
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert "scontrol update NodeName=dgx-h100-own08 State=RESUME" in calls   # after the failures
