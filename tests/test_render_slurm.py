"""Slurm output: loaded by a real slurmctld/slurmd, every job through `sbatch --test-only`,
every job script through shellcheck."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import slurm_harness
from plans import PLANS, rendered, write

SLURM_SITES = sorted({(case, path.split("/")[1]) for case in PLANS for path in rendered(case)
                      if path.startswith("slurm/")})
JOBS = sorted((case, path) for case in PLANS for path in rendered(case)
              if path.endswith(".sbatch"))
SCRIPTS = sorted((case, path) for case in PLANS for path in rendered(case)
                 if path.endswith((".sbatch", ".sh")))

needs_slurm = pytest.mark.skipif(
    not slurm_harness.available(),
    reason="slurmctld/slurmd/sbatch are not installed (apt-get install slurmctld slurmd slurm-client)")


def _site_dir(case: str, site: str, root: Path) -> Path:
    prefix = f"slurm/{site}/"
    write({p[len(prefix):]: t for p, t in rendered(case).items() if p.startswith(prefix)}, root)
    return root


@pytest.mark.slow
@needs_slurm
@pytest.mark.parametrize("case,site", SLURM_SITES, ids=[f"{c}:{s}" for c, s in SLURM_SITES])
def test_slurm_config_loads_and_jobs_test_submit(case, site, tmp_path):
    conf = _site_dir(case, site, tmp_path / "conf")
    with slurm_harness.SlurmHarness(conf, tmp_path / "run") as h:
        # Every node registered with its typed GPUs (gres.conf File= lines were honoured).
        for node, _ in h.node_lines:
            assert "Gres=gpu:" in h.gres(node), h.gres(node)
            assert "Count=0" not in h.gres_output[node]
        jobs = sorted((conf / "jobs").glob("*.sbatch"))
        assert jobs
        for job in jobs:
            out = h.test_job(job)
            assert out.returncode == 0 and "to start at" in (out.stdout + out.stderr), \
                f"{job.name}: {out.stdout}{out.stderr}"
        # A recurring job's scrontab: its #SCRON options are the allocation each run gets, so
        # they go through the same sbatch --test-only as a script's #SBATCH lines.
        for entry in sorted((conf / "jobs").glob("*.scrontab")):
            script = entry.with_suffix(".scron.sbatch")
            script.write_text(scron_as_sbatch(entry.read_text()))
            out = h.test_job(script)
            assert out.returncode == 0 and "to start at" in (out.stdout + out.stderr), \
                f"{entry.name}: {out.stdout}{out.stderr}"
        assert h.errors() == []


CRON_FIELD = re.compile(r"^(\*|\*/[0-9]+|[0-9]+)$")


def scron_as_sbatch(text: str) -> str:
    """A scrontab file as the batch script one of its runs is: #SCRON lines as #SBATCH, and the
    one cron line (five fields, each a number, * or */N) as the command."""
    lines = text.splitlines()
    entries = [ln for ln in lines if ln.strip() and not ln.startswith("#")]
    assert len(entries) == 1, entries
    fields = entries[0].split()
    assert all(CRON_FIELD.match(f) for f in fields[:5]) and len(fields) > 5, entries[0]
    options = [ln.replace("#SCRON", "#SBATCH", 1) for ln in lines if ln.startswith("#SCRON")]
    return "\n".join(["#!/bin/bash", *options, " ".join(fields[5:])]) + "\n"


def test_a_recurring_job_is_one_scrontab_entry():
    files = rendered("aws")
    entry = files["slurm/aws-use1/jobs/llama-8b-ablation.scrontab"]
    assert [ln for ln in entry.splitlines() if ln and not ln.startswith("#")] == \
        ["0 0 1 * * bash /fsx/jobs/llama-8b-ablation.sbatch"]
    assert "#SCRON --nodes=8" in entry and "#SCRON --time=30-10:00:00" in entry   # the month's 730 h
    assert "#SCRON --requeue" in entry                                            # spot, as its script
    assert not any(p.endswith(".scrontab") and "llama-70b" in p for p in files)     # one-time: none


@needs_slurm
def test_harness_rejects_a_bad_config(tmp_path):
    # The harness must be able to fail: an unknown slurm.conf key stops slurmctld.
    conf = _site_dir("onprem", "fra-dc1", tmp_path / "conf")
    text = (conf / "slurm.conf").read_text()
    (conf / "slurm.conf").write_text(text + "NoSuchKey=1\n")
    with pytest.raises(RuntimeError):
        with slurm_harness.SlurmHarness(conf, tmp_path / "run"):
            pass


@pytest.mark.slow
@needs_slurm
def test_harness_rejects_a_job_larger_than_its_partition(tmp_path):
    conf = _site_dir("onprem", "fra-dc1", tmp_path / "conf")
    job = conf / "jobs" / "resnet50.sbatch"
    job.write_text(job.read_text().replace("--nodes=1", "--nodes=9"))
    with slurm_harness.SlurmHarness(conf, tmp_path / "run") as h:
        assert h.test_job(job).returncode != 0


def test_slurm_conf_carries_catalog_figures():
    conf = rendered("aws")["slurm/aws-use1/slurm.conf"]
    # p5.48xlarge: 192 vCPUs on 2 sockets (48 cores x 2 threads), 2048 GB RAM, 8 x H100.
    line = next(x for x in conf.splitlines() if x.startswith("NodeName=p5-48xlarge-spot"))
    for part in ("NodeName=p5-48xlarge-spot[01-08]", "CPUs=192", "SocketsPerBoard=2",
                 "CoresPerSocket=48", "ThreadsPerCore=2", "RealMemory=1855468",
                 "Gres=gpu:h100:8"):
        assert part in line.split(), line
    assert "SelectType=select/cons_tres" in conf and "GresTypes=gpu" in conf
    # one partition for the instance type: its 16 reserved (static) and 8 spot (cloud) nodes
    assert "PartitionName=p5-48xlarge Nodes=p5-48xlarge-r1y[01-16],p5-48xlarge-spot[01-08] " \
           "MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE Default=YES" in conf.splitlines()
    assert line.endswith("Feature=spot State=CLOUD")
    gres = rendered("aws")["slurm/aws-use1/gres.conf"]
    assert "NodeName=p5-48xlarge-spot[01-08] Name=gpu Type=h100 File=/dev/nvidia[0-7]" in gres


def test_job_scripts_follow_layout_and_fabric():
    job = rendered("aws")["slurm/aws-use1/jobs/llama-70b-pretrain.sbatch"]
    assert "#SBATCH --nodes=16" in job and "#SBATCH --gpus-per-node=h100:8" in job
    assert "export FI_PROVIDER=efa" in job and "--pipeline-parallel-size=4" in job
    assert "CHECKPOINT_DIR=/fsx/checkpoints/llama-70b-pretrain" in job
    spot = rendered("aws")["slurm/aws-use1/jobs/llama-8b-ablation.sbatch"]
    assert "#SBATCH --requeue" in spot
    ib = rendered("onprem")["slurm/fra-dc1/jobs/llama-405b-pretrain.sbatch"]
    assert "export NCCL_IB_HCA=mlx5" in ib and "CHECKPOINT_DIR=/lustre/" in ib
    tcpxo = rendered("gcp")["slurm/gcp-usc1/jobs/mixtral-sft.sbatch"]
    assert "nccl-env-profile.sh" in tcpxo and "NCCL_FASTRAK_CTRL_DEV=eth0" in tcpxo
    azure = rendered("azure")["slurm/azure-eastus/jobs/llama-70b-pretrain.sbatch"]
    assert "NCCL_TOPO_FILE=/opt/microsoft/ndv5-topo.xml" in azure


def test_nccl_settings_come_from_the_catalogs_facts_not_the_names():
    """Azure ND's topology file is the instance's catalog field (an ND VM without one gets the
    generic InfiniBand settings); RoCE is the on-prem fabric's catalog kind, not its name."""
    from dataclasses import replace

    from compiler.catalog import load_catalog
    from compiler.render.common import nccl_profile

    def env(profile):
        return {e.name: e.value for e in profile.env}
    cat = load_catalog()
    assert env(nccl_profile("infiniband", cat, "Standard_ND96asr_v4"))["NCCL_TOPO_FILE"] == "/opt/microsoft/ndv4-topo.xml"
    assert env(nccl_profile("infiniband", cat, "Standard_ND96isr_H100_v5"))["NCCL_TOPO_FILE"] == "/opt/microsoft/ndv5-topo.xml"
    bare = replace(cat, instances={**cat.instances, "Standard_ND96isr_H100_v5": replace(
        cat.instances["Standard_ND96isr_H100_v5"], nccl_topology=None)})
    assert env(nccl_profile("infiniband", bare, "Standard_ND96isr_H100_v5"))["NCCL_IB_HCA"] == "mlx5"
    assert env(nccl_profile("roce-400g", cat))["NCCL_IB_GID_INDEX"] == "3"
    renamed = replace(cat, fabrics={"rocky-fabric": cat.fabrics["roce-400g"]})
    assert env(nccl_profile("rocky-fabric", renamed))["NCCL_IB_GID_INDEX"] == "3"
    assert "NCCL_IB_GID_INDEX" not in env(nccl_profile("roce-unknown", cat))


def test_topology_has_leaves_by_radix_and_a_spine():
    topo = rendered("onprem")["slurm/fra-dc1/topology.conf"]
    # NDR switches have 64 ports: 32 nodes per leaf, so 40 hgx-h200 take two leaves.
    assert "SwitchName=leaf02 Nodes=hgx-h200-buy[01-32]" in topo
    assert "SwitchName=leaf03 Nodes=hgx-h200-buy[33-40]" in topo
    assert "SwitchName=spine Switches=leaf[01-03]" in topo


def _shellcheck() -> str:
    found = shutil.which("shellcheck") or str(Path(sys.executable).with_name("shellcheck"))
    if not Path(found).exists():
        pytest.skip("shellcheck is not installed")
    return found


@pytest.mark.parametrize("case,path", SCRIPTS, ids=[f"{c}:{p}" for c, p in SCRIPTS])
def test_job_scripts_pass_shellcheck(case, path, tmp_path):
    """Job scripts and the Resume/Suspend programs."""
    script = tmp_path / "job.sbatch"
    script.write_text(rendered(case)[path])
    out = subprocess.run([_shellcheck(), "-S", "warning", "-s", "bash", str(script)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_job_goes_to_the_partition_its_nodes_are_in():
    # burst is labelled reserved_1y but holds 32 on-demand nodes (and one reserved node for 30
    # hours): its partition is the instance's domain, which holds every node the plan holds
    # there (the reserved node, shared by month with steady, and 32 on-demand cloud nodes), and
    # it may run on either pricing.
    from compiler.catalog import load_catalog
    from compiler.render import render
    from plans import split_plan

    files = render(split_plan(), load_catalog())
    sbatch = files["slurm/aws-use1/jobs/burst.sbatch"]
    assert "#SBATCH --partition=p5-48xlarge" in sbatch.splitlines()
    assert "#SBATCH --constraint='reserved_1y|on_demand'" in sbatch.splitlines()
    assert "#SBATCH --constraint=reserved_1y" in files["slurm/aws-use1/jobs/steady.sbatch"].splitlines()
    conf = files["slurm/aws-use1/slurm.conf"].splitlines()
    assert "PartitionName=p5-48xlarge Nodes=p5-48xlarge-r1y01,p5-48xlarge-od[01-32] " \
           "MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE Default=YES" in conf, conf
    od = [line for line in conf if line.startswith("NodeName=p5-48xlarge-od[01-32] ")]
    assert od and od[0].endswith("Feature=on_demand State=CLOUD")
    assert "SuspendExcNodes=p5-48xlarge-r1y01" in conf


@pytest.mark.parametrize("recompute", ["moe", "full"])
def test_launchers_carry_expert_folding_and_the_recompute_memory_was_sized_for(tmp_path, recompute):
    """A job whose experts fold over 8 ranks and whose memory needs more than selective recompute:
    the sbatch and the JobSet say so as Megatron-Core takes it (--expert-tensor-parallel-size=1;
    selective granularity with the MoE modules, or full granularity one layer at a time), and the
    coherence oracle, which reads them back against plan.json, finds nothing wrong."""
    from dataclasses import replace as _replace
    from compiler.catalog import load_catalog
    from compiler.output import write as write_out
    from compiler.plan import to_json
    from compiler.render import render
    from coherence import check

    plan = PLANS["gcp"]()
    lay = {"moe": dict(tp=8, dp=8, ep=8, recompute="moe"), "full": dict(tp=8, dp=8, ep=8, recompute="full")}[recompute]
    plan = _replace(plan, workloads=tuple(_replace(w, layout=_replace(w.layout, **lay)) if w.name == "mixtral-sft" else w
                                          for w in plan.workloads))
    files = {"plan.json": to_json(plan), **render(plan, load_catalog())}
    job = files["slurm/gcp-usc1/jobs/mixtral-sft.sbatch"]
    assert "--expert-parallel-size=8 \\\n  --expert-tensor-parallel-size=1 \\" in job
    if recompute == "moe":
        assert "--recompute-granularity=selective \\\n  --recompute-modules core_attn moe \\" in job
    else:
        assert ("--recompute-granularity=full \\\n  --recompute-method=uniform \\\n  --recompute-num-layers=1 \\"
                in job)
    subprocess.run(["bash", "-n"], input=job, text=True, check=True)
    write_out(files, tmp_path / "out")
    problems = [p for p in check(tmp_path / "out") if "mixtral-sft" in p]
    assert problems == []
    # and the oracle does see a launcher that says otherwise
    bad = dict(files)
    bad["slurm/gcp-usc1/jobs/mixtral-sft.sbatch"] = job.replace("--expert-tensor-parallel-size=1 \\\n", "")
    write_out(bad, tmp_path / "bad")
    assert any("expert-tensor-parallel-size" in p for p in check(tmp_path / "bad"))
