"""Terraform per cloud site: terraform/<site>/{versions,providers,variables,main,outputs}.tf and
terraform/<site>/months/NNN.tfvars.

What each scheduling domain's blocks become (docs/artifacts.md, "terraform/<site>/"):
- a reserved block: one capacity reservation, whichever orchestrators use it (their instances
  and node groups start inside it), holding each month the nodes the plan reserves that month;
- Slurm's static share: instances of fixed number (AWS Auto Scaling group, GCP instances with
  `count`, Azure scale set with `instances`);
- Slurm's elastic share: what slurm/<site>/resume.sh launches from, named
  `<name_prefix>-<flavor>` (AWS launch template, GCP instance template; on Azure the Resume
  program creates the VMs and Terraform provisions nothing);
- Kubernetes' share: a node group labelled with the domain and the pricing, spot where the
  pricing is spot.

The folder is applied month by month: every count that changes over the horizon (reserved
nodes, fixed instances, node group sizes) is a variable, and months/NNN.tfvars sets all of them
for month NNN and the months after it until the next file; there is one file for month 0 and
one for every month in which a count changes. A reservation or node group exists only in the
months it holds nodes, so the first apply creates only what month 0 needs.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from compiler.catalog.model import Catalog
from compiler.diagnostics import CompileError, Diagnostic
from compiler.render.common import GPU_TAINT_KEY, POOL_LABEL, PRICING_LABEL, StorageView
from compiler.render.domains import Block, Domain
from compiler.plan import MONTH_PATTERN
from compiler.render.environment import hcl_string, render_template
from compiler.render.site import SiteView

FILES = ("versions.tf", "providers.tf", "variables.tf", "main.tf", "outputs.tf")
# Written from one template for every provider (templates/terraform/<file>.j2): variables.tf
# from the typed variables (TerraformSite.variables), which RUNBOOK.md reads too.
SHARED_TEMPLATES = ("variables.tf",)

# Extra GPU NICs (one VPC each) the GPUDirect machine types need besides eth0.
GCP_GPU_NICS = {"gpudirect-tcpx": 4, "gpudirect-tcpxo": 8, "gpudirect-rdma": 8}
EFA_CARD_GBPS = 100               # every EFA network card on p4d/p5 carries 100 Gb/s
RESERVED_PRICINGS = ("reserved_1y", "reserved_3y")
# The month variables months/NNN.tfvars sets (templates/terraform/month.tfvars.j2), in file order.
RESERVED_NODES, RESERVATION_END_MONTH, NODES = "reserved_nodes", "reservation_end_month", "nodes"


def hcl_label(text: str) -> str:
    """A Terraform block label from a name: lowercase, anything but [a-z0-9_] becomes '_'."""
    return re.sub(r"[^a-z0-9_]", "_", text.lower())


@dataclass(frozen=True)
class CloudReservation:
    """A reserved block's capacity reservation: all N nodes of the block, used by whichever
    orchestrators hold them (one reservation per block, not per orchestrator)."""

    block: Block
    domain: Domain
    id: str                       # Terraform block label
    nodes: int                    # block.nodes
    accelerator: str              # GCP accelerator type of the machine

    @property
    def name(self) -> str:
        return self.block.flavor

    @property
    def orchestrators(self) -> tuple[str, ...]:
        return self.block.orchestrators

    def month_nodes(self, month: int) -> int:
        """Nodes reserved in a month: the plan's (the sum of the terms that run then)."""
        return self.block.monthly_nodes[month]

    def month_end(self, month: int) -> int:
        """The plan month its end date falls on while `month` is applied: the end of the
        latest term running then (0 in a month it reserves nothing)."""
        return self.block.term_end(month) if self.month_nodes(month) else 0

    @property
    def terms(self) -> tuple[tuple[int, int, int], ...]:
        return self.block.terms

    @property
    def held_nodes(self) -> int:
        """Nodes of the terms bought before the plan (the spec's `reserved`, a baseline's terms:
        those that start before month 0). Such a reservation exists already: Terraform imports it
        (an `import` block, its id a variable) rather than create a second one."""
        return sum(n for first, n, _months in self.terms if first < 0)


@dataclass(frozen=True)
class CloudPool:
    """One orchestrator's share of one block as Terraform creates it: Slurm's static instances,
    Slurm's launch/instance template (elastic), or a Kubernetes node group."""

    block: Block
    domain: Domain
    id: str                       # Terraform block label: <flavor>_<orchestrator>
    orchestrator: str             # slurm | kubernetes
    elastic: bool                 # the share is started and stopped as needed
    nodes: int                    # Slurm: its nodes (static: instances, elastic: CLOUD nodes);
                                  # Kubernetes: the node group's max size
    min_nodes: int                # Slurm: nodes when static, else 0; Kubernetes: min size
    efa_interfaces: int           # AWS: EFA network cards to attach (0: none)
    accelerator: str              # GCP accelerator type
    gke_driver: str               # GCP: the node pool's gpu_driver_version (the catalog's, by GPU)
    gpu_nics: int                 # GCP: extra GPUDirect NICs
    rdma: bool                    # GCP A3 Ultra: the GPU NICs are RDMA (MRDMA)
    short_name: str               # Azure AKS pool name (<= 12 lowercase alphanumerics)
    reservation: CloudReservation | None = None

    @property
    def name(self) -> str:
        return self.block.flavor if self.orchestrator == "slurm" else f"{self.block.flavor}-k8s"

    @property
    def spot(self) -> bool:
        return self.block.pricing == "spot"

    @property
    def reserved(self) -> bool:
        return self.block.pricing in RESERVED_PRICINGS

    @property
    def share(self):
        return self.block.share(self.orchestrator)

    @property
    def first(self) -> int:
        """Index of Slurm's first node in the block (node names count from it)."""
        return max(1, self.share.first)

    @property
    def hostlist(self) -> str:
        """Slurm's nodes of this share as a hostlist (Slurm pools only)."""
        if self.orchestrator != "slurm" or not self.nodes:
            return ""
        return self.block.names(self.first, self.first + self.nodes - 1)

    @property
    def digits(self) -> int:
        return self.block.digits

    @property
    def counted(self) -> bool:
        """Its size is a month's variable: fixed Slurm instances and node groups (an elastic
        Slurm share is a template: the Resume program starts its nodes)."""
        return self.orchestrator == "kubernetes" or not self.elastic

    def month_nodes(self, month: int) -> int:
        return month_nodes(self.block, self.orchestrator, month)

    @property
    def least(self) -> int:
        """Its fewest nodes in a month of the horizon."""
        return min((self.month_nodes(m) for m in range(len(self.block.monthly_nodes))), default=0)

    @property
    def most(self) -> int:
        return max((self.month_nodes(m) for m in range(len(self.block.monthly_nodes))), default=0)


@dataclass(frozen=True)
class CloudStorage:
    tier: str
    mount: str
    capacity_tb: float
    # AWS FSx for Lustre (PERSISTENT_2, SSD): 1200 GiB, 2400 GiB, then steps of 2400 GiB.
    fsx_capacity_gib: int
    fsx_throughput: int           # MB/s per TiB: 125 | 250 | 500 | 1000
    # GCP Parallelstore: 12000-100000 GiB in steps of 4000; Filestore zonal steps.
    parallelstore_gib: int
    filestore_gib: int
    # Azure Managed Lustre: TiB in the SKU's step (8 TiB for Premium-250).
    amlfs_tib: int
    amlfs_sku: str


def _round_up(value: float, step: int) -> int:
    return int(math.ceil(value / step - 1e-9) * step)


def cloud_storage(storage: StorageView | None, catalog: Catalog) -> CloudStorage | None:
    if storage is None:
        return None
    gib = storage.capacity_gib
    tier = catalog.storage.get(storage.tier)
    per_tb = tier.throughput_gb_s_per_tb if tier else 0.25
    fsx_tp = min((t for t in (125, 250, 500, 1000) if t >= per_tb * 1000), default=1000)
    amlfs = {125: 16, 250: 8, 500: 4}
    amlfs_tp = min((t for t in (125, 250, 500) if t >= per_tb * 1000), default=500)
    filestore = max(1024, _round_up(gib, 256) if gib < 10240 else _round_up(gib, 2560))
    return CloudStorage(
        tier=storage.tier, mount=storage.mount, capacity_tb=storage.capacity_tb,
        fsx_capacity_gib=1200 if gib <= 1200 else _round_up(gib, 2400),
        fsx_throughput=fsx_tp,
        parallelstore_gib=min(100000, max(12000, _round_up(gib, 4000))),
        filestore_gib=filestore,
        amlfs_tib=max(amlfs[amlfs_tp], _round_up(storage.capacity_tib, amlfs[amlfs_tp])),
        amlfs_sku=f"AMLFS-Durable-Premium-{amlfs_tp}",
    )


@dataclass(frozen=True)
class MonthValue:
    key: str                      # the reservation's or pool's Terraform label
    value: int


@dataclass(frozen=True)
class MonthChange:
    what: str                     # e.g. "reservation p5-48xlarge-reserved-1y"
    before: int
    after: int
    unit: str                     # nodes | end


@dataclass(frozen=True)
class MonthFile:
    """months/NNN.tfvars: every month variable's value from `month` until the next file."""

    month: int
    path: str                     # relative to the site's folder: months/NNN.tfvars
    reserved: tuple[MonthValue, ...]      # reserved_nodes
    ends: tuple[MonthValue, ...]          # reservation_end_month (AWS)
    nodes: tuple[MonthValue, ...]         # nodes
    changes: tuple[MonthChange, ...]      # against the file before it (none for month 0)
    last: int = 0                         # the last month it holds for

    @property
    def maps(self) -> tuple[tuple[str, tuple[MonthValue, ...]], ...]:
        """The map variables the file sets, each with its values, in file order (a map without
        a value is left out)."""
        return tuple((name, values) for name, values in ((RESERVED_NODES, self.reserved),
                                                         (RESERVATION_END_MONTH, self.ends),
                                                         (NODES, self.nodes)) if values)

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(name for name, _values in self.maps)

    def value(self, variable: str, key: str) -> int:
        """What the file sets var.<variable>[key] to (0 where it sets none)."""
        return next((v.value for name, values in self.maps if name == variable
                     for v in values if v.key == key), 0)


@dataclass(frozen=True)
class Validation:
    condition: str                # an HCL expression
    error_message: str


@dataclass(frozen=True)
class TerraformVariable:
    """A variable of variables.tf as templates/terraform/variables.tf.j2 writes it; RUNBOOK.md
    lists those without a default that no month file sets, for the operator to set."""

    name: str
    description: str
    type: str                             # as HCL: string, map(number)
    default: str | None = None            # an HCL literal; None: none (the operator or a month file sets it)
    validations: tuple[Validation, ...] = ()


@dataclass(frozen=True)
class TerraformResource:
    """A resource block of main.tf (templates/terraform/<provider>/main.tf.j2) and its count: a
    number, or a month variable's value (var.<variable>["key"]), or one where that value is above
    0 (`var.<variable>["key"] > 0 ? 1 : 0`: it exists only in months with nodes)."""

    address: str                          # type.label
    count: int = 1
    variable: str = ""                    # the month map its count reads ("": the number `count`)
    key: str = ""
    exists: bool = False                  # one where the value is above 0, none otherwise

    def planned(self, month: MonthFile | None) -> int:
        """How many `terraform plan` adds with the month file applied (None: no month file)."""
        if not self.variable:
            return self.count
        n = month.value(self.variable, self.key) if month is not None else 0
        return (1 if n > 0 else 0) if self.exists else n


@dataclass(frozen=True)
class TerraformSite:
    site: SiteView
    pools: tuple[CloudPool, ...]
    reservations: tuple[CloudReservation, ...]
    storage: CloudStorage | None
    months: tuple[MonthFile, ...] = ()
    variables: tuple[TerraformVariable, ...] = ()   # variables.tf, in file order
    resources: tuple[TerraformResource, ...] = ()   # main.tf's resource blocks, in file order

    @property
    def planned_resources(self) -> int:
        """What a first `terraform plan` adds: each resource's count with month 0's file."""
        first = self.months[0] if self.months else None
        return sum(r.planned(first) for r in self.resources)

    @property
    def counted(self) -> tuple[CloudPool, ...]:
        return tuple(p for p in self.pools if p.counted)

    @property
    def held(self) -> tuple[CloudReservation, ...]:
        """The reservations that exist already (held terms): imported, never created."""
        return tuple(r for r in self.reservations if r.held_nodes)

    @property
    def dated(self) -> bool:
        """Reservations carry an end date (AWS: `end_date_type = "limited"`); elsewhere a
        term ends by the month's file dropping its nodes."""
        return bool(self.reservations) and self.site.provider == "aws"

    @property
    def monthly(self) -> bool:
        """The folder changes after month 0: the schedule applies its month files."""
        return len(self.months) > 1

    @property
    def has_slurm(self) -> bool:
        return any(p.orchestrator == "slurm" for p in self.pools)

    @property
    def has_kubernetes(self) -> bool:
        return any(p.orchestrator == "kubernetes" for p in self.pools)

    @property
    def has_static_slurm(self) -> bool:
        return any(p.orchestrator == "slurm" and not p.elastic for p in self.pools)


def _sizes(share, orchestrator: str) -> tuple[int, int]:
    """(nodes, min_nodes) of one orchestrator's share over the horizon: its most nodes in a
    month, and its fewest (a Slurm static share's are fixed)."""
    if orchestrator == "slurm":
        nodes = share.count
        return nodes, 0 if share.elastic else nodes
    return share.peak, min(share.monthly, default=0) if share.elastic else share.peak


def month_nodes(block: Block, orchestrator: str, month: int) -> int:
    """The nodes Terraform runs for one orchestrator's share of a block in a month
    (docs/artifacts.md): an elastic share (on-demand, spot, a static block that changes hands)
    what it holds that month; a static share, of the R nodes the block has that month (reserved:
    reserved), Slurm min(its range, R - Kubernetes' holding) and Kubernetes min(its range,
    R - Slurm's): all R for an orchestrator alone on the block, never more than R together."""
    share = block.share(orchestrator)
    if share.elastic:
        return share.monthly[month]
    have = block.monthly_nodes[month]
    other = block.kubernetes if orchestrator == "slurm" else block.slurm
    if orchestrator == "slurm":
        return max(0, min(share.count, have - other.monthly[month]))
    return max(0, min(share.count, have - month_nodes(block, "slurm", month)))


def gcp_accelerator(site: SiteView, instance: str, catalog: Catalog) -> str:
    """The catalog's GCP accelerator type of an instance's GPUs ("" off GCP). GCP refuses a
    reservation or a VM whose guest accelerator has no type, so a GCP instance without one (an
    overlay's) stops the render instead of writing a file that cannot apply."""
    if site.provider != "gcp":
        return ""
    inst = catalog.instances.get(instance)
    if inst is None or not inst.accelerator_type:
        raise CompileError([Diagnostic(
            "E710", f"GCP instance {instance!r} at site {site.name!r}: the catalog names no accelerator type",
            hint=f"give it `accelerator: {{type: ..., source: ...}}` under instances.{instance} (the type "
                 "GCP's guest_accelerators take, e.g. nvidia-h100-80gb; docs/catalog.md)")])
    return inst.accelerator_type


def gke_driver(site: SiteView, gpu: str, catalog: Catalog) -> str:
    """The gpu_driver_version a GKE node pool of the GPU asks for (gpus.<GPU>.gke_driver: the
    branch that meets its images' driver need), "" off GCP. A GPU without one (an overlay's) stops
    the render: GKE installs no driver the images can be checked against."""
    if site.provider != "gcp":
        return ""
    rec = catalog.gpus.get(gpu)
    if rec is None or rec.gke_driver is None:
        raise CompileError([Diagnostic(
            "E712", f"{gpu} at GCP site {site.name!r}: the catalog names no GKE driver version for it",
            hint=f"give it `gke_driver: {{version: DEFAULT | LATEST | INSTALLATION_DISABLED, source: ...}}` "
                 f"under gpus.{gpu} (the branch that meets its images' driver need; docs/catalog.md)")])
    return rec.gke_driver.version


def terraform_site(site: SiteView, catalog: Catalog) -> TerraformSite:
    pools: list[CloudPool] = []
    reservations: list[CloudReservation] = []
    index = 0
    for domain in site.domains:
        inst = catalog.instances.get(domain.instance)
        accelerator = gcp_accelerator(site, domain.instance, catalog)
        driver = gke_driver(site, domain.shape.gpu, catalog) if any(
            "kubernetes" in b.orchestrators for b in domain.blocks) else ""
        efa = int(inst.network_gbps // EFA_CARD_GBPS) if inst and inst.fabric == "efa" else 0
        for block in domain.blocks:
            used = block.orchestrators
            if not used:
                continue
            index += 1
            reservation = None
            if block.pricing in RESERVED_PRICINGS:
                reservation = CloudReservation(block=block, domain=domain, id=hcl_label(block.flavor),
                                               nodes=block.nodes, accelerator=accelerator)
                reservations.append(reservation)
            for orch in used:
                share = block.share(orch)
                nodes, min_nodes = _sizes(share, orch)
                pools.append(CloudPool(
                    block=block, domain=domain, id=hcl_label(f"{block.flavor}_{orch}"),
                    orchestrator=orch, elastic=share.elastic, nodes=nodes, min_nodes=min_nodes,
                    efa_interfaces=efa, accelerator=accelerator, gke_driver=driver,
                    gpu_nics=GCP_GPU_NICS.get(domain.fabric, 0),
                    rdma=domain.fabric == "gpudirect-rdma",
                    short_name=f"gpu{index}{'k' if orch == 'kubernetes' else 's'}",
                    reservation=reservation,
                ))
    tf = TerraformSite(site=site, pools=tuple(pools), reservations=tuple(reservations),
                       storage=cloud_storage(site.storage, catalog))
    return replace(tf, months=month_files(tf), variables=site_variables(tf), resources=site_resources(tf))


# ---------------------------------------------------------------- variables.tf

def _var(name: str, description: str, type_: str = "string", default: object = None,
         validations: tuple[Validation, ...] = ()) -> TerraformVariable:
    return TerraformVariable(name, description, type_, None if default is None else str(default), validations)


def _provider_variables(tf: TerraformSite) -> list[TerraformVariable]:
    """What each provider's GPU capacity needs besides the month variables."""
    site = tf.site
    prefix = _var("name_prefix", "Prefix for the names of every resource created here.", default=hcl_string(site.name))
    if site.provider == "gcp":
        out = [_var("project_id", f"GCP project that hosts site {site.name}."),
               _var("region", f"GCP region of site {site.name}.", default=hcl_string(site.region)),
               _var("zone", "Zone for the GPU nodes (compact placement keeps them in one zone)."),
               prefix]
        if tf.has_slurm or tf.storage:
            out.append(_var("network", "VPC network for the Slurm nodes' first interface and the file system."))
        if tf.has_slurm:
            out += [_var("subnetwork", "Subnetwork of the Slurm nodes' first interface."),
                    _var("image", "Boot image for the Slurm nodes (e.g. a Cluster Toolkit Slurm image with the "
                                  "GPU driver)."),
                    _var("service_account_email", "Service account the GPU VMs run as.")]
        if tf.has_kubernetes:
            out.append(_var("gke_cluster", "Existing GKE cluster (name or id) the GPU node pools join."))
        return out
    if site.provider == "azure":
        out = [_var("subscription_id", f"Azure subscription that hosts site {site.name}."),
               _var("location", f"Azure region of site {site.name}.", default=hcl_string(site.region)),
               _var("zone", "Availability zone for the GPU nodes and the file system.", default=hcl_string("1")),
               prefix]
        if tf.has_static_slurm:
            out.append(_var("subnet_id", "Subnet for the Slurm nodes' Ethernet interface (InfiniBand needs no "
                                         "subnet)."))
        if tf.storage:
            out.append(_var("lustre_subnet_id", "Dedicated subnet for Azure Managed Lustre (its size depends on the "
                                                "capacity)."))
        if tf.has_static_slurm:
            out += [_var("admin_username", "Administrator user on the Slurm nodes.", default=hcl_string("azureuser")),
                    _var("ssh_public_key", "SSH public key of the administrator (the private key never comes here).")]
        if tf.has_kubernetes:
            out.append(_var("aks_cluster_id", "Resource id of the existing AKS cluster the GPU node pools join."))
        return out
    out = [_var("region", f"AWS region of site {site.name}.", default=hcl_string(site.region)), prefix,
           _var("vpc_id", "VPC the GPU nodes and the file system live in."),
           _var("subnet_id", "One private subnet (one Availability Zone: cluster placement groups and EFA do not "
                             "span zones).")]
    if tf.reservations:
        out.append(_var("availability_zone", "Availability Zone of subnet_id (capacity reservations are zonal)."))
    if tf.has_slurm:
        out += [_var("ami_id", "GPU AMI for the Slurm nodes (e.g. an AWS Deep Learning AMI with the EFA installer "
                               "and Slurm)."),
                _var("key_name", "EC2 key pair for SSH access; null for none.", default="null")]
    if tf.has_kubernetes:
        out += [_var("eks_cluster_name", "Existing EKS cluster the GPU node groups join."),
                _var("node_role_arn", "IAM role ARN of the EKS worker nodes.")]
    return out


def _month_variables(tf: TerraformSite) -> list[TerraformVariable]:
    """The variables each month file sets, and the month they count from (AWS end dates)."""
    calendar = tf.site.calendar
    out = []
    if tf.dated:
        first = "The plan's first month, the spec's start" if calendar.dated else "Month 0 of the plan"
        out.append(_var("plan_start", f"{first} (YYYY-MM, UTC): each capacity reservation ends on the first day "
                                      "of a month counted from it.",
                        default=hcl_string(calendar.start) if calendar.dated else None,
                        validations=(Validation(f"can(regex({hcl_string(MONTH_PATTERN)}, var.plan_start))",
                                                "The plan_start value must be a month as YYYY-MM."),)))
    if tf.reservations:
        out.append(_var(RESERVED_NODES, "Nodes each capacity reservation holds in the month applied (set by "
                                        "months/NNN.tfvars; 0: it does not exist).", "map(number)"))
    if tf.dated:
        out.append(_var(RESERVATION_END_MONTH, "The plan month each capacity reservation ends on: the end of the "
                                               "latest term running in the month applied (set by months/NNN.tfvars).",
                        "map(number)"))
    if tf.counted:
        out.append(_var(NODES, "Nodes of each fixed instance set and node group in the month applied (set by "
                               "months/NNN.tfvars; a node group with 0 does not exist).", "map(number)"))
    return out


# What a held reservation's id is on each provider: (the description's words, the pattern the
# variable checks, what its check says).
HELD_ID_FORMS = {
    "aws": ("an EC2 capacity reservation id (cr-0123456789abcdef0)", "^cr-[0-9a-f]{17}$",
            "an EC2 capacity reservation id (cr-0123456789abcdef0)"),
    "gcp": ("projects/PROJECT/zones/ZONE/reservations/NAME", "^projects/[^/]+/zones/[^/]+/reservations/[^/]+$",
            "projects/PROJECT/zones/ZONE/reservations/NAME"),
    "azure": ("the capacity reservation's resource id (/subscriptions/.../capacityReservationGroups/GROUP/"
              "capacityReservations/NAME)",
              "^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft.Compute/capacityReservationGroups/"
              "[^/]+/capacityReservations/[^/]+$",
              "the capacity reservation's resource id (/subscriptions/.../capacityReservationGroups/GROUP/"
              "capacityReservations/NAME)"),
}


def _held_variable(tf: TerraformSite) -> list[TerraformVariable]:
    """The ids of the reservations held already, which main.tf imports (none held: no variable)."""
    if not tf.held:
        return []
    words, pattern, form = HELD_ID_FORMS[tf.site.provider or "aws"]
    keys = ", ".join(hcl_string(r.id) for r in tf.held)
    return [_var("held_reservation_ids", f"The reservations held already (bought before the plan), by reservation: "
                                         f"{words}. Terraform imports each instead of creating it.", "map(string)",
                 validations=(
                     Validation("alltrue([for id in values(var.held_reservation_ids) : "
                                f"can(regex({hcl_string(pattern)}, id))])",
                                f"Each held reservation id must be {form}."),
                     Validation(f"alltrue([for k in [{keys}] : contains(keys(var.held_reservation_ids), k)])",
                                f"Give the id of every held reservation: {', '.join(r.id for r in tf.held)}.")))]


def site_variables(tf: TerraformSite) -> tuple[TerraformVariable, ...]:
    """variables.tf, in file order: the provider's, the month variables, the held reservations' ids."""
    return tuple(_provider_variables(tf) + _month_variables(tf) + _held_variable(tf))


# ---------------------------------------------------------------- main.tf's resources

def _counted(address: str, variable: str, key: str, exists: bool = True) -> TerraformResource:
    return TerraformResource(address, variable=variable, key=key, exists=exists)


def site_resources(tf: TerraformSite) -> tuple[TerraformResource, ...]:
    """The resource blocks templates/terraform/<provider>/main.tf.j2 writes for the site, in file
    order, with their counts (a reservation or node group exists only in months with nodes)."""
    out: list[TerraformResource] = []
    provider = tf.site.provider
    if provider == "gcp":
        nics = max((p.gpu_nics for p in tf.pools), default=0)
        if nics:
            out += [TerraformResource("google_compute_network.gpu", nics),
                    TerraformResource("google_compute_subnetwork.gpu", nics)]
        out.append(TerraformResource("google_compute_resource_policy.compact"))
        out += [_counted(f"google_compute_reservation.{r.id}", RESERVED_NODES, r.id) for r in tf.reservations]
        for p in tf.pools:
            if p.orchestrator == "kubernetes":
                out.append(_counted(f"google_container_node_pool.{p.id}", NODES, p.id))
            elif p.elastic:
                out.append(TerraformResource(f"google_compute_instance_template.{p.id}"))
            else:
                out.append(_counted(f"google_compute_instance.{p.id}", NODES, p.id, exists=False))
        if tf.storage:
            kind = "parallelstore_instance" if tf.storage.tier == "parallelstore" else "filestore_instance"
            out.append(TerraformResource(f"google_{kind}.shared"))
        return tuple(out)
    if provider == "azure":
        out += [TerraformResource("azurerm_resource_group.site"),
                TerraformResource("azurerm_proximity_placement_group.gpu")]
        for r in tf.reservations:
            out += [TerraformResource(f"azurerm_capacity_reservation_group.{r.id}"),
                    _counted(f"azurerm_capacity_reservation.{r.id}", RESERVED_NODES, r.id)]
        for p in tf.pools:
            if p.orchestrator == "kubernetes":
                out.append(_counted(f"azurerm_kubernetes_cluster_node_pool.{p.id}", NODES, p.id))
            elif not p.elastic:
                out.append(TerraformResource(f"azurerm_linux_virtual_machine_scale_set.{p.id}"))
        if tf.storage:
            out.append(TerraformResource("azurerm_managed_lustre_file_system.shared"))
        return tuple(out)
    out += [TerraformResource("aws_placement_group.gpu"), TerraformResource("aws_security_group.efa")]
    out += [_counted(f"aws_ec2_capacity_reservation.{r.id}", RESERVED_NODES, r.id) for r in tf.reservations]
    for p in tf.pools:
        out.append(TerraformResource(f"aws_launch_template.{p.id}"))
        if p.orchestrator == "kubernetes":
            out.append(_counted(f"aws_eks_node_group.{p.id}", NODES, p.id))
        elif not p.elastic:
            out.append(TerraformResource(f"aws_autoscaling_group.{p.id}"))
    if tf.storage:
        out.append(TerraformResource("aws_fsx_lustre_file_system.shared"))
    return tuple(out)


def _month_values(tf: TerraformSite, month: int) -> tuple[tuple[MonthValue, ...], ...]:
    reserved = tuple(MonthValue(r.id, r.month_nodes(month)) for r in tf.reservations)
    ends = tuple(MonthValue(r.id, r.month_end(month)) for r in tf.reservations) if tf.dated else ()
    nodes = tuple(MonthValue(p.id, p.month_nodes(month)) for p in tf.counted)
    return reserved, ends, nodes


def _changes(tf: TerraformSite, before, after) -> tuple[MonthChange, ...]:
    names = {r.id: f"reservation {r.name}" for r in tf.reservations}
    names.update({p.id: f"{'node group' if p.orchestrator == 'kubernetes' else 'Slurm instances'} {p.name}"
                  for p in tf.pools})
    out = []
    for unit, old, new in (("nodes", before[0], after[0]), ("end", before[1], after[1]),
                           ("nodes", before[2], after[2])):
        for a, b in zip(old, new):
            if a.value != b.value:
                out.append(MonthChange(names[b.key], a.value, b.value, unit))
    return tuple(out)


def month_files(tf: TerraformSite) -> tuple[MonthFile, ...]:
    """One file for month 0 and one for each month whose values differ from the month before."""
    horizon = tf.site.horizon_months
    if not (tf.reservations or tf.counted) or horizon <= 0:
        return ()
    width = max(3, len(str(horizon - 1)))
    files: list[MonthFile] = []
    previous = None
    for m in range(horizon):
        values = _month_values(tf, m)
        if values == previous:
            continue
        changes = _changes(tf, previous, values) if previous is not None else ()
        files.append(MonthFile(m, f"months/{m:0{width}d}.tfvars", *values, changes=changes))
        previous = values
    return tuple(replace(f, last=(files[i + 1].month - 1 if i + 1 < len(files) else horizon - 1))
                 for i, f in enumerate(files))


def render_site(tf: TerraformSite) -> dict[str, str]:
    site = tf.site
    provider = site.provider or ""
    out = {
        f"terraform/{site.name}/{name}": render_template(
            f"terraform/{name}.j2" if name in SHARED_TEMPLATES else f"terraform/{provider}/{name}.j2", tf=tf,
            site=site, pool_label=POOL_LABEL, pricing_label=PRICING_LABEL, gpu_taint=GPU_TAINT_KEY)
        for name in FILES
    }
    for f in tf.months:
        out[f"terraform/{site.name}/{f.path}"] = render_template(
            "terraform/month.tfvars.j2", tf=tf, site=site, month=f)
    return out
