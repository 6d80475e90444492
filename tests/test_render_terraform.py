"""Terraform output: parses for every cloud, `terraform fmt`, and `terraform validate` for AWS."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import hcl2
import pytest

from plans import PLANS, rendered, write

MIRROR = Path("/opt/tf-plugins")
TF_FILES = [(case, path) for case in sorted(PLANS) for path in rendered(case)
            if path.endswith(".tf")]


def _site_dirs(provider: str) -> list[tuple[str, str]]:
    out = set()
    for case in sorted(PLANS):
        plan = PLANS[case]()
        for site in plan.sites:
            if site.provider == provider:
                out.add((case, site.name))
    return sorted(out)


@pytest.mark.parametrize("case,path", TF_FILES, ids=[f"{c}:{p}" for c, p in TF_FILES])
def test_hcl_parses(case, path):
    doc = hcl2.loads(rendered(case)[path])
    assert isinstance(doc, dict)


def test_every_cloud_is_covered():
    assert _site_dirs("aws") and _site_dirs("gcp") and _site_dirs("azure")


def plain(value):
    """python-hcl2 8.x keeps string quotes and block markers; drop them for comparisons."""
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items() if k != "__is_block__"}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value


def _main(case: str, site: str) -> dict:
    return plain(hcl2.loads(rendered(case)[f"terraform/{site}/main.tf"]))


def _resources(doc: dict, rtype: str) -> dict:
    out = {}
    for block in doc.get("resource", []):
        out.update(block.get(rtype, {}))
    return out


def test_aws_instances_match_the_plan():
    main = _main("aws", "aws-use1")
    asgs = _resources(main, "aws_autoscaling_group")
    sizes = {name: asg["desired_capacity"] for name, asg in asgs.items()}
    assert sizes == {"p5_48xlarge_reserved_1y_slurm": 16, "p5_48xlarge_spot_slurm": 8}
    lts = _resources(main, "aws_launch_template")
    # p5.48xlarge: 3200 Gb/s of EFA = 32 cards of 100 Gb/s.
    efa = lts["p5_48xlarge_spot_slurm"]["dynamic"][0]["network_interfaces"]
    assert efa["for_each"] == "${range(32)}"
    assert efa["content"][0]["interface_type"] == "efa"
    assert lts["p5_48xlarge_spot_slurm"]["instance_market_options"][0]["market_type"] == "spot"
    res = _resources(main, "aws_ec2_capacity_reservation")
    assert res["p5_48xlarge_reserved_1y_slurm"]["instance_count"] == 16
    assert _resources(main, "aws_placement_group")["gpu"]["strategy"] == "cluster"
    # 52 TB = 48,429 GiB -> the next PERSISTENT_2 step of 2,400 GiB is 50,400 (21 steps).
    fsx = _resources(main, "aws_fsx_lustre_file_system")["shared"]
    assert fsx["storage_capacity"] == 50400 and fsx["deployment_type"] == "PERSISTENT_2"
    # A 1 TB plan still gets the smallest size, 1,200 GiB.
    small = _resources(_main("onprem", "aws-use1"), "aws_fsx_lustre_file_system")["shared"]
    assert small["storage_capacity"] == 1200


def test_aws_kubernetes_site_uses_eks_node_groups():
    groups = _resources(_main("aws", "aws-usw2"), "aws_eks_node_group")
    assert {n: g["scaling_config"][0]["desired_size"] for n, g in groups.items()} == {
        "g6e_48xlarge_on_demand_kubernetes": 3, "p4de_24xlarge_on_demand_kubernetes": 4}
    assert groups["p4de_24xlarge_on_demand_kubernetes"]["labels"] == {
        "infra-compile.io/pool": "p4de-24xlarge-on-demand"}


def test_gcp_machines_accelerators_and_storage():
    main = _main("gcp", "gcp-usc1")
    vms = _resources(main, "google_compute_instance")["a3_megagpu_8g_spot_slurm"]
    assert vms["count"] == 8 and vms["machine_type"] == "a3-megagpu-8g"
    assert vms["guest_accelerator"][0] == {"type": "nvidia-h100-mega-80gb", "count": 8}
    assert vms["scheduling"][0]["provisioning_model"] == "SPOT"
    assert _resources(main, "google_compute_network")["gpu"]["count"] == 8   # TCPXO: 8 GPU NICs
    # 20 TB = 18,627 GiB -> Parallelstore's next 4,000 GiB step.
    assert _resources(main, "google_parallelstore_instance")["shared"]["capacity_gib"] == "20000"
    gke = _resources(_main("gcp", "gcp-euw4"), "google_container_node_pool")
    assert gke["a3_highgpu_8g_reserved_1y_kubernetes"]["placement_policy"][0]["type"] == "COMPACT"
    assert _resources(_main("gcp", "gcp-euw4"), "google_filestore_instance")["shared"]


def test_azure_scale_sets_node_pools_and_lustre():
    main = _main("azure", "azure-eastus")
    vmss = _resources(main, "azurerm_linux_virtual_machine_scale_set")
    assert vmss["standard_nd96isr_h100_v5_on_demand_slurm"]["instances"] == 12
    assert vmss["standard_nd96isr_h100_v5_on_demand_slurm"]["single_placement_group"] is True
    aks = _resources(main, "azurerm_kubernetes_cluster_node_pool")
    pool = aks["standard_nd96amsr_a100_v4_spot_kubernetes"]
    assert pool["priority"] == "Spot" and pool["node_count"] == 2 and len(pool["name"]) <= 12
    # 30 TB = 27.3 TiB -> the next 8 TiB step of AMLFS-Durable-Premium-250 is 32.
    amlfs = _resources(main, "azurerm_managed_lustre_file_system")["shared"]
    assert amlfs["storage_capacity_in_tb"] == 32
    assert amlfs["sku_name"] == "AMLFS-Durable-Premium-250"


def test_no_secrets_or_account_ids_in_terraform():
    for case in sorted(PLANS):
        for path, text in rendered(case).items():
            if path.endswith(".tf"):
                assert "arn:aws" not in text and "subscriptions/" not in text
                assert "BEGIN" not in text and "ssh-rsa" not in text


def _terraform_env(tmp_path: Path) -> dict[str, str]:
    rc = tmp_path / "terraformrc"
    rc.write_text('disable_checkpoint = true\nprovider_installation {\n'
                  f'  filesystem_mirror {{\n    path = "{MIRROR}"\n  }}\n}}\n')
    return {**os.environ, "TF_CLI_CONFIG_FILE": str(rc), "TF_IN_AUTOMATION": "1",
            "CHECKPOINT_DISABLE": "1"}


needs_terraform = pytest.mark.skipif(shutil.which("terraform") is None,
                                     reason="terraform is not installed on this machine")


@needs_terraform
@pytest.mark.parametrize("case", sorted(PLANS))
def test_terraform_fmt_check(case, tmp_path):
    write({p: t for p, t in rendered(case).items() if p.endswith(".tf")}, tmp_path)
    out = subprocess.run(["terraform", "fmt", "-check", "-diff", "-recursive", "terraform"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=60,
                         env=_terraform_env(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr


@needs_terraform
@pytest.mark.skipif(not (MIRROR / "registry.terraform.io" / "hashicorp" / "aws").is_dir(),
                    reason="no hashicorp/aws provider mirror under /opt/tf-plugins")
@pytest.mark.parametrize("case,site", _site_dirs("aws"))
def test_terraform_validate_aws(case, site, tmp_path):
    folder = tmp_path / site
    write({p.split("/", 2)[2]: t for p, t in rendered(case).items()
           if p.startswith(f"terraform/{site}/")}, folder)
    env = _terraform_env(tmp_path)
    init = subprocess.run(["terraform", "init", "-backend=false", "-input=false", "-no-color"],
                          cwd=folder, capture_output=True, text=True, timeout=180, env=env)
    assert init.returncode == 0, init.stdout + init.stderr
    val = subprocess.run(["terraform", "validate", "-no-color"], cwd=folder,
                         capture_output=True, text=True, timeout=180, env=env)
    assert val.returncode == 0, val.stdout + val.stderr


def test_pools_are_sized_by_where_the_nodes_are():
    # burst's 32 nodes are on demand (its label says reserved_1y): the reserved group has the one
    # reserved node, the on-demand group the 32.
    from compiler.catalog import load_catalog
    from compiler.render import render
    from plans import split_plan

    main = plain(hcl2.loads(render(split_plan(), load_catalog())["terraform/aws-use1/main.tf"]))
    sizes = {name: asg["desired_capacity"] for name, asg in _resources(main, "aws_autoscaling_group").items()}
    assert sizes == {"p5_48xlarge_reserved_1y_slurm": 1, "p5_48xlarge_on_demand_slurm": 32}
