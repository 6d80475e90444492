"""Terraform output: parses for every cloud, `terraform fmt`, `terraform validate` for AWS, and
implements the plan's blocks as docs/artifacts.md ("terraform/<site>/") says: one reservation
of N nodes per reserved block, Slurm's static share as instances, its elastic share as a launch
or instance template (nothing on Azure), Kubernetes' share as a node group sized from the plan's
months."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import hcl2
import pytest

from compiler.plan import Holding, Placement, Plan, Pool, SitePlan
from plans import PLANS, _plan, inference, rendered, split_plan, training, write

MIRROR = Path("/opt/tf-plugins")

# ---------------------------------------------------------------------------- extra plans

# Per cloud: the GPU machine, its fabric and a smaller GPU machine for a spot service.
CLOUDS = {
    "aws": ("us-east-1", "p5.48xlarge", "H100", "efa", "g6e.48xlarge", "L40S", "ethernet"),
    "gcp": ("us-central1", "a3-megagpu-8g", "H100", "gpudirect-tcpxo", "g2-standard-96", "L4",
            "ethernet"),
    "azure": ("eastus", "Standard_ND96isr_H100_v5", "H100", "infiniband",
              "Standard_ND96amsr_A100_v4", "A100-80GB", "infiniband"),
}
FIRST_HALF = (4,) * 6 + (0,) * 6
SECOND_HALF = (0,) * 6 + (4,) * 6
SPOT_MONTHS = (1, 1, 2, 2, 3, 3, 4, 4, 4, 4, 2, 2)


def _holding(pricing: str, monthly: tuple[int, ...]) -> Holding:
    return Holding(pricing, monthly, tuple(n * 730.0 for n in monthly))


def shared_plan(provider: str) -> Plan:
    """Both orchestrators on reserved blocks of one site, and a spot service that grows.

    - reserved_1y, 4 nodes: Slurm's `pretrain` holds all 4 in months 0-5, Kubernetes' `finetune`
      all 4 in months 6-11: the nodes change hands, so both shares are elastic, inside one
      reservation of 4.
    - reserved_3y, 6 nodes: Slurm's `steady` holds 2 all year, the service `chat` 4: static
      shares side by side (Slurm nodes 01-02, Kubernetes 03-06), one reservation of 6.
    - spot: the service `chat-small` holds 1 to 4 nodes (SPOT_MONTHS): an autoscaled node group.
    """
    region, big, gpu, fabric, small, small_gpu, small_fabric = CLOUDS[provider]
    site = f"{provider}-shared"
    pretrain = replace(training("pretrain", site, big, "reserved_1y", 4, 32, tp=8, pp=4),
                       placements=(Placement(site, big, "reserved_1y", 4, 32, candidate="pretrain",
                                             holdings=(_holding("reserved_1y", FIRST_HALF),)),))
    finetune = replace(training("finetune", site, big, "reserved_1y", 4, 32, tp=8,
                                orchestrator="kubernetes"),
                       placements=(Placement(site, big, "reserved_1y", 4, 32, candidate="finetune",
                                             holdings=(_holding("reserved_1y", SECOND_HALF),)),))
    steady = training("steady", site, big, "reserved_3y", 2, 16, tp=8)
    chat = inference("chat", [Placement(site, big, "reserved_3y", 4, 32, 8)], tp=4, gpu=gpu)
    chat_small = inference("chat-small", [Placement(
        site, small, "spot", 4, 32, 4, candidate="chat-small", gpus_per_replica=8,
        holdings=(_holding("spot", SPOT_MONTHS),), monthly_replicas=SPOT_MONTHS)], tp=8, gpu=small_gpu)
    return _plan(
        f"shared-{provider}",
        sites=[SitePlan(site, "cloud", provider, region, ("kubernetes", "slurm"))],
        pools=[Pool(site, big, gpu, 8, 4, "reserved_1y", fabric),
               Pool(site, big, gpu, 8, 6, "reserved_3y", fabric),
               Pool(site, small, small_gpu, 8, 4, "spot", small_fabric, monthly_nodes=SPOT_MONTHS)],
        workloads=[pretrain, finetune, steady, chat, chat_small],
        storage=[])


EXTRA = {"split": split_plan, **{f"shared-{p}": (lambda p=p: shared_plan(p)) for p in CLOUDS}}
_EXTRA_RENDERED: dict[str, dict[str, str]] = {}


def tree(case: str) -> dict[str, str]:
    """The rendered tree of one of PLANS or EXTRA (rendered once per test session)."""
    if case in PLANS:
        return rendered(case)
    if case not in _EXTRA_RENDERED:
        from compiler.catalog import load_catalog
        from compiler.render import render
        _EXTRA_RENDERED[case] = render(EXTRA[case](), load_catalog())
    return _EXTRA_RENDERED[case]


CASES = sorted(PLANS) + sorted(EXTRA)
TF_FILES = [(case, path) for case in CASES for path in tree(case) if path.endswith(".tf")]


def _site_dirs(provider: str) -> list[tuple[str, str]]:
    out = set()
    for case in CASES:
        plan = (PLANS.get(case) or EXTRA[case])()
        for site in plan.sites:
            if site.provider == provider:
                out.add((case, site.name))
    return sorted(out)


# ---------------------------------------------------------------------------- helpers


def plain(value):
    """python-hcl2 8.x keeps string quotes and block markers; drop them for comparisons."""
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items() if k != "__is_block__"}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value


def _doc(case: str, site: str, name: str = "main.tf") -> dict:
    return plain(hcl2.loads(tree(case)[f"terraform/{site}/{name}"]))


def _main(case: str, site: str) -> dict:
    return _doc(case, site)


def _resources(doc: dict, rtype: str) -> dict:
    out = {}
    for block in doc.get("resource", []):
        out.update(block.get(rtype, {}))
    return out


def slug_of(instance: str) -> str:
    """An instance type as it appears in Terraform labels: p5.48xlarge -> p5_48xlarge."""
    return re.sub(r"[^a-z0-9]+", "_", instance.lower())


def _outputs(case: str, site: str) -> dict:
    out = {}
    for block in _doc(case, site, "outputs.tf").get("output", []):
        out.update(block)
    return out


_REF = re.compile(r'^\$\{var\.(\w+)\["([^"]+)"\](\s*>\s*0\s*\?\s*1\s*:\s*0)?\}$')


def dynamic(body: dict, name: str) -> dict:
    """The `dynamic "name"` block of a resource body."""
    return next(d[name] for d in body.get("dynamic", []) if name in d)


def month_vars(case: str, site: str, month: int) -> dict:
    """The month variables in force in `month`: the last months/NNN.tfvars at or before it."""
    files = sorted(p for p in tree(case) if p.startswith(f"terraform/{site}/months/"))
    chosen = [p for p in files if int(p.rsplit("/", 1)[1].split(".")[0]) <= month][-1]
    return plain(hcl2.loads(tree(case)[chosen]))


def at(value, variables: dict):
    """A count or size as Terraform evaluates it with the month's variables: a number, or
    `${var.X["k"]}` / `${var.X["k"] > 0 ? 1 : 0}`."""
    if isinstance(value, int):
        return value
    m = _REF.match(value)
    assert m, f"not a month variable: {value!r}"
    n = variables[m.group(1)][m.group(2)]
    return (1 if n > 0 else 0) if m.group(3) else n


def _block(case: str, site: str, flavor: str):
    """The scheduling block `flavor` of a site, as domains.py computes it from the plan."""
    from compiler.catalog import load_catalog
    from compiler.render.site import site_view

    plan = (PLANS.get(case) or EXTRA[case])()
    view = site_view(plan, load_catalog(), next(s for s in plan.sites if s.name == site))
    return next(b for d in view.domains for b in d.blocks if b.flavor == flavor)


# ---------------------------------------------------------------------------- every file


@pytest.mark.parametrize("case,path", TF_FILES, ids=[f"{c}:{p}" for c, p in TF_FILES])
def test_hcl_parses(case, path):
    doc = hcl2.loads(tree(case)[path])
    assert isinstance(doc, dict)


def test_every_cloud_is_covered():
    assert _site_dirs("aws") and _site_dirs("gcp") and _site_dirs("azure")


def test_no_secrets_or_account_ids_in_terraform():
    for case in CASES:
        for path, text in tree(case).items():
            if path.endswith(".tf"):
                assert "arn:aws" not in text and "subscriptions/" not in text
                assert "BEGIN" not in text and "ssh-rsa" not in text


# ---------------------------------------------------------------------------- the PLANS


def test_aws_instances_match_the_plan():
    main = _main("aws", "aws-use1")
    v = month_vars("aws", "aws-use1", 0)
    # Reserved, Slurm only: 16 static nodes in a fixed-size group; spot is elastic: no group.
    asgs = _resources(main, "aws_autoscaling_group")
    assert {n: tuple(at(a[k], v) for k in ("min_size", "max_size", "desired_capacity"))
            for n, a in asgs.items()} == {"p5_48xlarge_reserved_1y_slurm": (16, 16, 16)}
    tags = {t["key"]: t["value"] for t in asgs["p5_48xlarge_reserved_1y_slurm"]["tag"]}
    assert tags == {"slurm-partition": "p5-48xlarge", "slurm-node-prefix": "p5-48xlarge-r1y"}
    lts = _resources(main, "aws_launch_template")
    spot = lts["p5_48xlarge_spot_slurm"]
    assert spot["name"] == "${var.name_prefix}-p5-48xlarge-spot" and "name_prefix" not in spot
    # p5.48xlarge: 3200 Gb/s of EFA = 32 cards of 100 Gb/s.
    efa = spot["dynamic"][0]["network_interfaces"]
    assert efa["for_each"] == "${range(32)}"
    assert efa["content"][0]["interface_type"] == "efa"
    assert spot["instance_market_options"][0]["market_type"] == "spot"
    assert spot["tag_specifications"][0]["tags"]["slurm-partition"] == "p5-48xlarge"
    res = _resources(main, "aws_ec2_capacity_reservation")
    assert {n: at(r["instance_count"], v) for n, r in res.items()} == {"p5_48xlarge_reserved_1y": 16}
    # The term runs months 0-11: the reservation ends with it, on a date counted from plan_start.
    assert res["p5_48xlarge_reserved_1y"]["end_date_type"] == "limited"
    assert v["reservation_end_month"] == {"p5_48xlarge_reserved_1y": 12}
    target = dynamic(lts["p5_48xlarge_reserved_1y_slurm"], "capacity_reservation_specification")
    assert target["for_each"] == "${aws_ec2_capacity_reservation.p5_48xlarge_reserved_1y}"
    assert target["content"][0]["capacity_reservation_target"][0]["capacity_reservation_id"] == \
        "${capacity_reservation_specification.value.id}"
    assert _resources(main, "aws_placement_group")["gpu"]["strategy"] == "cluster"
    assert "resume.sh" in tree("aws")["terraform/aws-use1/main.tf"]
    outputs = _outputs("aws", "aws-use1")
    assert outputs["p5_48xlarge_spot_slurm_template"]["value"] == \
        "${aws_launch_template.p5_48xlarge_spot_slurm.name}"
    assert outputs["p5_48xlarge_reserved_1y_reservation"]["value"] == \
        "${one(aws_ec2_capacity_reservation.p5_48xlarge_reserved_1y[*].id)}"
    assert "p5_48xlarge_reserved_1y_slurm_group" in outputs
    # 52 TB = 48,429 GiB -> the next PERSISTENT_2 step of 2,400 GiB is 50,400 (21 steps).
    fsx = _resources(main, "aws_fsx_lustre_file_system")["shared"]
    assert fsx["storage_capacity"] == 50400 and fsx["deployment_type"] == "PERSISTENT_2"
    # A 1 TB plan still gets the smallest size, 1,200 GiB.
    small = _resources(_main("onprem", "aws-use1"), "aws_fsx_lustre_file_system")["shared"]
    assert small["storage_capacity"] == 1200


def test_aws_kubernetes_site_uses_eks_node_groups():
    groups = _resources(_main("aws", "aws-usw2"), "aws_eks_node_group")
    v = month_vars("aws", "aws-usw2", 0)
    sizes = {n: {k: at(x, v) for k, x in g["scaling_config"][0].items()} for n, g in groups.items()}
    # On demand is elastic: each month's size is what the plan rents that month.
    assert sizes == {
        "g6e_48xlarge_on_demand_kubernetes": {"desired_size": 3, "min_size": 3, "max_size": 3},
        "p4de_24xlarge_on_demand_kubernetes": {"desired_size": 4, "min_size": 4, "max_size": 4}}
    assert all(at(g["count"], v) == 1 for g in groups.values())
    group = groups["p4de_24xlarge_on_demand_kubernetes"]
    assert group["labels"] == {"infra-compile.io/pool": "p4de-24xlarge",
                               "infra-compile.io/pricing": "on_demand"}
    assert group["capacity_type"] == "ON_DEMAND"
    assert group["taint"][0] == {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}
    assert group["node_group_name"] == "${var.name_prefix}-p4de-24xlarge-on-demand-k8s"
    assert not _resources(_main("aws", "aws-usw2"), "aws_autoscaling_group")
    assert set(_outputs("aws", "aws-usw2")) == {
        "placement_group", "g6e_48xlarge_on_demand_kubernetes_group",
        "p4de_24xlarge_on_demand_kubernetes_group", "fsx_dns_name", "fsx_mount_name"}


def test_gcp_machines_accelerators_and_storage():
    main = _main("gcp", "gcp-usc1")
    # Spot Slurm nodes are elastic: an instance template resume.sh creates them from, no VMs.
    assert not _resources(main, "google_compute_instance")
    tpl = _resources(main, "google_compute_instance_template")["a3_megagpu_8g_spot_slurm"]
    assert tpl["name"] == "${var.name_prefix}-a3-megagpu-8g-spot"
    assert tpl["machine_type"] == "a3-megagpu-8g"
    assert tpl["guest_accelerator"][0] == {"type": "nvidia-h100-mega-80gb", "count": 8}
    assert tpl["scheduling"][0]["provisioning_model"] == "SPOT"
    assert tpl["labels"]["slurm-partition"] == "a3-megagpu-8g"
    assert _resources(main, "google_compute_network")["gpu"]["count"] == 8   # TCPXO: 8 GPU NICs
    assert "a3_megagpu_8g_spot_slurm_template" in _outputs("gcp", "gcp-usc1")
    # 20 TB = 18,627 GiB -> Parallelstore's next 4,000 GiB step.
    assert _resources(main, "google_parallelstore_instance")["shared"]["capacity_gib"] == "20000"

    euw4 = _main("gcp", "gcp-euw4")
    gke = _resources(euw4, "google_container_node_pool")
    reserved = gke["a3_highgpu_8g_reserved_1y_kubernetes"]
    v = month_vars("gcp", "gcp-euw4", 0)
    assert reserved["placement_policy"][0]["type"] == "COMPACT"
    # Static and not shared with Slurm: a fixed node count, inside the block's reservation.
    assert at(reserved["node_count"], v) == 2 and "autoscaling" not in reserved
    assert reserved["node_config"][0]["labels"] == {"infra-compile.io/pool": "a3-highgpu-8g",
                                                    "infra-compile.io/pricing": "reserved_1y"}
    assert reserved["node_config"][0]["reservation_affinity"][0]["values"] == \
        "${google_compute_reservation.a3_highgpu_8g_reserved_1y[*].name}"
    assert at(_resources(euw4, "google_compute_reservation")["a3_highgpu_8g_reserved_1y"][
        "specific_reservation"][0]["count"], v) == 2
    # On demand: the month's nodes (2 all year).
    l4 = gke["g2_standard_96_on_demand_kubernetes"]
    assert at(l4["node_count"], v) == 2 and "autoscaling" not in l4
    assert l4["node_config"][0]["spot"] is False
    assert _resources(euw4, "google_filestore_instance")["shared"]


def test_azure_scale_sets_node_pools_and_lustre():
    main = _main("azure", "azure-eastus")
    # On-demand Slurm nodes are elastic: resume.sh creates the VMs, Terraform nothing.
    assert not _resources(main, "azurerm_linux_virtual_machine_scale_set")
    text = tree("azure")["terraform/azure-eastus/main.tf"]
    assert "slurm/azure-eastus/resume.sh creates each VM, named after its Slurm node" in text
    aks = _resources(main, "azurerm_kubernetes_cluster_node_pool")
    assert set(aks) == {"standard_nd96amsr_a100_v4_spot_kubernetes"}
    pool = aks["standard_nd96amsr_a100_v4_spot_kubernetes"]
    assert pool["priority"] == "Spot" and len(pool["name"]) <= 12
    assert re.fullmatch(r"[a-z][a-z0-9]{0,11}", pool["name"])
    assert at(pool["node_count"], month_vars("azure", "azure-eastus", 0)) == 2
    assert "auto_scaling_enabled" not in pool
    assert pool["node_labels"] == {"infra-compile.io/pool": "standard-nd96amsr-a100-v4",
                                   "infra-compile.io/pricing": "spot"}
    assert pool["node_taints"] == ["nvidia.com/gpu=present:NoSchedule"]
    # No scale set: no administrator variables to ask for.
    assert "ssh_public_key" not in tree("azure")["terraform/azure-eastus/variables.tf"]
    # 30 TB = 27.3 TiB -> the next 8 TiB step of AMLFS-Durable-Premium-250 is 32.
    amlfs = _resources(main, "azurerm_managed_lustre_file_system")["shared"]
    assert amlfs["storage_capacity_in_tb"] == 32
    assert amlfs["sku_name"] == "AMLFS-Durable-Premium-250"


def test_pools_are_sized_by_where_the_nodes_are():
    # burst's 32 nodes are on demand (its label says reserved_1y): the reserved block is the one
    # reserved node (burst rides its idle hours in month 10, which adds no node), a fixed group
    # of 1; the on-demand block the 32, elastic: a launch template, no group.
    main = _main("split", "aws-use1")
    v = month_vars("split", "aws-use1", 0)
    asgs = _resources(main, "aws_autoscaling_group")
    assert {n: at(a["desired_capacity"], v) for n, a in asgs.items()} == {"p5_48xlarge_reserved_1y_slurm": 1}
    assert _block("split", "aws-use1", "p5-48xlarge-reserved-1y").nodes == 1
    res = _resources(main, "aws_ec2_capacity_reservation")
    assert {n: at(r["instance_count"], v) for n, r in res.items()} == {"p5_48xlarge_reserved_1y": 1}
    od = _block("split", "aws-use1", "p5-48xlarge-on-demand")
    assert od.slurm.count == 32 and od.slurm.elastic
    assert "p5-48xlarge-od[01-32] in State=CLOUD" in tree("split")["terraform/aws-use1/main.tf"]


# ---------------------------------------------------------------------------- the contract


def test_on_demand_slurm_block_is_a_launch_template_and_no_group():
    main = _main("split", "aws-use1")
    lt = _resources(main, "aws_launch_template")["p5_48xlarge_on_demand_slurm"]
    assert lt["name"] == "${var.name_prefix}-p5-48xlarge-on-demand"
    assert lt["instance_type"] == "p5.48xlarge" and lt["image_id"] == "${var.ami_id}"
    assert "instance_market_options" not in lt and "capacity_reservation_specification" not in lt
    assert "p5_48xlarge_on_demand_slurm" not in _resources(main, "aws_autoscaling_group")
    assert "p5_48xlarge_on_demand_slurm" not in _resources(main, "aws_eks_node_group")
    assert _outputs("split", "aws-use1")["p5_48xlarge_on_demand_slurm_template"]["value"] == \
        "${aws_launch_template.p5_48xlarge_on_demand_slurm.name}"
    # The name resume.sh launches from: <name_prefix>-<flavor>, the prefix the site's name.
    variables = _doc("split", "aws-use1", "variables.tf")
    prefix = next(v["name_prefix"] for v in variables["variable"] if "name_prefix" in v)
    assert prefix["default"] == "aws-use1"


@pytest.mark.parametrize("provider", sorted(CLOUDS))
def test_reserved_block_has_one_reservation_of_its_nodes(provider):
    case, site = f"shared-{provider}", f"{provider}-shared"
    main = _main(case, site)
    big = slug_of(CLOUDS[provider][1])
    r1y, r3y = f"{big}_reserved_1y", f"{big}_reserved_3y"
    handover = _block(case, site, f"{big.replace('_', '-')}-reserved-1y")
    side_by_side = _block(case, site, f"{big.replace('_', '-')}-reserved-3y")
    assert (handover.nodes, side_by_side.nodes) == (4, 6)
    assert handover.slurm.elastic and handover.kubernetes.elastic
    assert not side_by_side.slurm.elastic and not side_by_side.kubernetes.elastic
    v = month_vars(case, site, 0)
    late = month_vars(case, site, 6)
    if provider == "aws":
        res = _resources(main, "aws_ec2_capacity_reservation")
        assert {n: at(r["instance_count"], v) for n, r in res.items()} == {r1y: 4, r3y: 6}
        assert {n: at(r["count"], v) for n, r in res.items()} == {r1y: 1, r3y: 1}
        lts = _resources(main, "aws_launch_template")
        for rid in (r1y, r3y):
            for orch in ("slurm", "kubernetes"):
                spec = dynamic(lts[f"{rid}_{orch}"], "capacity_reservation_specification")
                assert spec["for_each"] == f"${{aws_ec2_capacity_reservation.{rid}}}"
        # Nodes that change hands: Slurm's are CLOUD nodes (a launch template, no group), the
        # node group holds the 4 Kubernetes holds in months 6-11 and does not exist before.
        assert lts[f"{r1y}_slurm"]["name"] == f"${{var.name_prefix}}-{big.replace('_', '-')}-reserved-1y"
        asgs = _resources(main, "aws_autoscaling_group")
        assert {n: at(a["desired_capacity"], v) for n, a in asgs.items()} == {f"{r3y}_slurm": 2}
        groups = _resources(main, "aws_eks_node_group")
        assert at(groups[f"{r1y}_kubernetes"]["count"], v) == 0
        assert at(groups[f"{r1y}_kubernetes"]["count"], late) == 1
        assert {k: at(x, late) for k, x in groups[f"{r1y}_kubernetes"]["scaling_config"][0].items()} == {
            "desired_size": 4, "min_size": 4, "max_size": 4}
        assert {k: at(x, v) for k, x in groups[f"{r3y}_kubernetes"]["scaling_config"][0].items()} == {
            "desired_size": 4, "min_size": 4, "max_size": 4}
    elif provider == "gcp":
        res = _resources(main, "google_compute_reservation")
        assert {n: at(r["specific_reservation"][0]["count"], v) for n, r in res.items()} == {r1y: 4, r3y: 6}
        assert dynamic(_resources(main, "google_compute_instance_template")[f"{r1y}_slurm"],
                       "reservation_affinity")["for_each"] == f"${{google_compute_reservation.{r1y}}}"
        vms = _resources(main, "google_compute_instance")
        assert set(vms) == {f"{r3y}_slurm"} and at(vms[f"{r3y}_slurm"]["count"], v) == 2
        pools = _resources(main, "google_container_node_pool")
        assert at(pools[f"{r1y}_kubernetes"]["count"], v) == 0
        assert at(pools[f"{r1y}_kubernetes"]["node_count"], late) == 4
        assert at(pools[f"{r3y}_kubernetes"]["node_count"], v) == 4
        for rid in (r1y, r3y):
            assert pools[f"{rid}_kubernetes"]["node_config"][0]["reservation_affinity"][0]["values"] == \
                f"${{google_compute_reservation.{rid}[*].name}}"
    else:
        res = _resources(main, "azurerm_capacity_reservation")
        assert {n: at(r["sku"][0]["capacity"], v) for n, r in res.items()} == {r1y: 4, r3y: 6}
        vmss = _resources(main, "azurerm_linux_virtual_machine_scale_set")
        assert set(vmss) == {f"{r3y}_slurm"} and at(vmss[f"{r3y}_slurm"]["instances"], v) == 2
        assert vmss[f"{r3y}_slurm"]["capacity_reservation_group_id"] == \
            f"${{azurerm_capacity_reservation_group.{r3y}.id}}"
        pools = _resources(main, "azurerm_kubernetes_cluster_node_pool")
        assert at(pools[f"{r1y}_kubernetes"]["count"], v) == 0
        assert at(pools[f"{r1y}_kubernetes"]["node_count"], late) == 4
        assert at(pools[f"{r3y}_kubernetes"]["node_count"], v) == 4
        assert "auto_scaling_enabled" not in pools[f"{r3y}_kubernetes"]
        names = [p["name"] for p in pools.values()]
        assert len(set(names)) == len(names)
    outputs = _outputs(case, site)
    assert {f"{r1y}_reservation", f"{r3y}_reservation"} <= set(outputs)


@pytest.mark.parametrize("provider", sorted(CLOUDS))
def test_spot_kubernetes_node_group_follows_the_months(provider):
    case, site = f"shared-{provider}", f"{provider}-shared"
    main = _main(case, site)
    pid = f"{slug_of(CLOUDS[provider][4])}_spot_kubernetes"
    kind = {"aws": "aws_eks_node_group", "gcp": "google_container_node_pool",
            "azure": "azurerm_kubernetes_cluster_node_pool"}[provider]
    group = _resources(main, kind)[pid]
    for month, want in enumerate(SPOT_MONTHS):
        v = month_vars(case, site, month)
        if provider == "aws":
            sizes = {k: at(x, v) for k, x in group["scaling_config"][0].items()}
            assert sizes == {"desired_size": want, "min_size": want, "max_size": want}, month
        else:
            assert at(group["node_count"], v) == want, month
    if provider == "aws":
        assert group["capacity_type"] == "SPOT"
        assert group["labels"]["infra-compile.io/pricing"] == "spot"
        assert "lifecycle" not in group
    elif provider == "gcp":
        assert group["node_config"][0]["spot"] is True
    else:
        assert group["priority"] == "Spot"


def test_gcp_static_slurm_vms_are_named_after_their_slurm_nodes():
    case, site = "shared-gcp", "gcp-shared"
    vms = _resources(_main(case, site), "google_compute_instance")["a3_megagpu_8g_reserved_3y_slurm"]
    block = _block(case, site, "a3-megagpu-8g-reserved-3y")
    fmt = re.fullmatch(r'\$\{var\.name_prefix\}-(\S+)\$\{format\("%0(\d)d", count\.index \+ (\d+)\)\}',
                       vms["name"])
    assert fmt, vms["name"]
    prefix, digits, first = fmt.group(1), int(fmt.group(2)), int(fmt.group(3))
    names = tuple(f"{prefix}{i + first:0{digits}d}" for i in range(at(vms["count"], month_vars(case, site, 0))))
    assert names == block.node_names(1, block.slurm.count) == ("a3-megagpu-8g-r3y01", "a3-megagpu-8g-r3y02")
    assert vms["labels"]["slurm-partition"] == "a3-megagpu-8g"


# ---------------------------------------------------------------------------- real tools


def _terraform_env(tmp_path: Path) -> dict[str, str]:
    rc = tmp_path / "terraformrc"
    rc.write_text('disable_checkpoint = true\nprovider_installation {\n'
                  f'  filesystem_mirror {{\n    path = "{MIRROR}"\n  }}\n}}\n')
    return {**os.environ, "TF_CLI_CONFIG_FILE": str(rc), "TF_IN_AUTOMATION": "1",
            "CHECKPOINT_DISABLE": "1"}


needs_terraform = pytest.mark.skipif(shutil.which("terraform") is None,
                                     reason="terraform is not installed on this machine")


def fmt_check(files: dict[str, str], folder: Path) -> None:
    """`terraform fmt -check` passes on the .tf and .tfvars of `files` (a rendered tree) written to `folder`."""
    write({p: t for p, t in files.items() if p.endswith((".tf", ".tfvars"))}, folder)
    out = subprocess.run(["terraform", "fmt", "-check", "-diff", "-recursive", "terraform"],
                         cwd=folder, capture_output=True, text=True, timeout=60, env=_terraform_env(folder))
    assert out.returncode == 0, out.stdout + out.stderr


@needs_terraform
@pytest.mark.parametrize("case", CASES)
def test_terraform_fmt_check(case, tmp_path):
    fmt_check(tree(case), tmp_path)


@needs_terraform
@pytest.mark.slow
@pytest.mark.skipif(not (MIRROR / "registry.terraform.io" / "hashicorp" / "aws").is_dir(),
                    reason="no hashicorp/aws provider mirror under /opt/tf-plugins")
@pytest.mark.parametrize("case,site", _site_dirs("aws"))
def test_terraform_validate_aws(case, site, tmp_path):
    folder = tmp_path / site
    write({p.split("/", 2)[2]: t for p, t in tree(case).items()
           if p.startswith(f"terraform/{site}/")}, folder)
    env = _terraform_env(tmp_path)
    init = subprocess.run(["terraform", "init", "-backend=false", "-input=false", "-no-color"],
                          cwd=folder, capture_output=True, text=True, timeout=180, env=env)
    assert init.returncode == 0, init.stdout + init.stderr
    val = subprocess.run(["terraform", "validate", "-no-color"], cwd=folder,
                         capture_output=True, text=True, timeout=180, env=env)
    assert val.returncode == 0, val.stdout + val.stderr
