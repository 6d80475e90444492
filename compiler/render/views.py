"""View models: what the templates see, built from the Plan and the catalog's hardware figures.

Every template gets frozen dataclasses from here, never a raw dict from the spec or the
plan. The translation rules that are the same for every target live here once: pool and
node names, the node shape Slurm and Kubernetes need (CPUs, sockets, memory), which
orchestrator gets which nodes of a pool, where a site's shared storage is mounted, the
NCCL settings for a fabric and the switch tree of a fabric.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from compiler.catalog.model import Catalog, CloudInstance, OnPremNode
from compiler.plan import PRICINGS, Placement, Plan, Pool, SitePlan, StoragePlan, WorkloadPlan

GIB = 2**30
MIB = 2**20

# Slurm's RealMemory must not exceed what the OS reports; firmware and the kernel keep
# a few percent of the installed RAM, so we declare 95% of it (in MiB).
USABLE_MEMORY_SHARE = 0.95

# Cloud providers do not publish the radix of the switches behind EFA, GPUDirect or
# Azure InfiniBand. For Slurm's topology-aware placement we group cloud nodes into
# leaves of this many nodes (half of a 64-port switch faces the nodes), which matches
# the block size AWS and GCP document for their GPU clusters closely enough to matter.
CLOUD_LEAF_NODES = 32

# The label and taint every GPU node of a pool carries; Terraform sets them on the node
# group and Kubernetes objects select and tolerate them.
POOL_LABEL = "infra-compile.io/pool"
GPU_TAINT_KEY = "nvidia.com/gpu"

# Where each storage tier is mounted on the nodes (the mount the checkpoints go to).
STORAGE_MOUNTS = {
    "fsx-lustre": "/fsx",
    "filestore": "/mnt/filestore",
    "parallelstore": "/mnt/parallelstore",
    "managed-lustre": "/lustre",
    "onprem-lustre": "/lustre",
}
DEFAULT_MOUNT = "/shared"


def slug(text: str) -> str:
    """Lowercase letters, digits and '-' only (node, partition, flavor names)."""
    out = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return out or "x"


# ---------------------------------------------------------------------------- nodes


@dataclass(frozen=True)
class NodeShape:
    """One node of a pool as the schedulers see it (figures from the catalog)."""

    model: str                    # instance type or on-prem node model
    gpu: str
    gpu_vendor: str               # nvidia | amd
    gpus: int
    vcpus: int
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    ram_gb: float
    real_memory_mib: int          # what slurm.conf declares

    @property
    def gres_type(self) -> str:
        return slug(self.gpu)

    @property
    def gpu_resource(self) -> str:
        return "amd.com/gpu" if self.gpu_vendor == "amd" else "nvidia.com/gpu"

    @property
    def device_files(self) -> str:
        """gres.conf File= expression for this node's GPU devices."""
        last = self.gpus - 1
        if self.gpu_vendor == "amd":
            return f"/dev/dri/renderD[128-{128 + last}]" if last else "/dev/dri/renderD128"
        return f"/dev/nvidia[0-{last}]" if last else "/dev/nvidia0"


def node_shape(catalog: Catalog, instance: str) -> NodeShape:
    rec: CloudInstance | OnPremNode
    if instance in catalog.instances:
        rec = catalog.instances[instance]
    elif instance in catalog.onprem_nodes:
        rec = catalog.onprem_nodes[instance]
    else:
        raise KeyError(f"instance {instance!r} is not in the catalog")
    gpu = catalog.gpus.get(rec.gpu)
    vendor = (gpu.vendor if gpu else "nvidia").lower()
    sockets = max(1, rec.sockets)
    # Two hardware threads per core wherever the vCPU count allows it (every GPU
    # instance in the catalog is hyper-threaded); one otherwise.
    threads = 2 if rec.vcpus % (2 * sockets) == 0 else 1
    cores = max(1, rec.vcpus // (sockets * threads))
    return NodeShape(
        model=rec.name, gpu=rec.gpu, gpu_vendor=vendor, gpus=rec.gpus, vcpus=rec.vcpus,
        sockets=sockets, cores_per_socket=cores, threads_per_core=threads, ram_gb=rec.ram_gb,
        real_memory_mib=int(rec.ram_gb * 1e9 / MIB * USABLE_MEMORY_SHARE),
    )


# ---------------------------------------------------------------------------- pools


@dataclass(frozen=True)
class PoolView:
    """A plan pool split into the part each orchestrator at the site gets."""

    name: str                     # unique within the site: partition, flavor, node group
    site: str
    instance: str
    pricing: str
    fabric: str
    shape: NodeShape
    nodes: int                    # all nodes of the pool (the plan's figure)
    slurm_nodes: int
    kubernetes_nodes: int
    inference_gpus: int           # GPUs the pool's inference replicas hold (peak)
    training_gpus: int            # the largest training placement on the pool
    # Slurm and Kubernetes workloads need more nodes together than the pool has: the plan
    # runs them in different months, so the same nodes serve both, one after the other.
    time_shared: bool = False

    @property
    def dedicated_kubernetes_nodes(self) -> int:
        """Nodes provisioned for Kubernetes alone (what a cloud node group holds)."""
        return self.nodes - self.slurm_nodes

    @property
    def gpus(self) -> int:
        return self.nodes * self.shape.gpus

    @property
    def spot(self) -> bool:
        return self.pricing == "spot"

    @property
    def reserved(self) -> bool:
        return self.pricing.startswith("reserved")

    @property
    def node_prefix(self) -> str:
        return self.name

    @property
    def node_digits(self) -> int:
        return max(2, len(str(self.slurm_nodes)))

    @property
    def node_range(self) -> str:
        """Slurm hostlist of the pool's Slurm nodes, e.g. p5-48xlarge-spot[01-16]."""
        d = self.node_digits
        if self.slurm_nodes == 1:
            return f"{self.name}{1:0{d}d}"
        return f"{self.name}[{1:0{d}d}-{self.slurm_nodes:0{d}d}]"

    @property
    def node_names(self) -> tuple[str, ...]:
        d = self.node_digits
        return tuple(f"{self.name}{i:0{d}d}" for i in range(1, self.slurm_nodes + 1))

    @property
    def kueue_gpu_quota(self) -> int:
        """GPUs Kueue may admit training on: the Kubernetes part less inference replicas."""
        return max(self.kubernetes_nodes * self.shape.gpus - self.inference_gpus, 0)


def home_pricing(p: Placement) -> str:
    """The pricing of the pool a placement's work is sent to: where it holds the most nodes at
    once (its holdings, not its label: a 32-node job beside one reserved node is on the on-demand
    pool); ties by node-hours, then owned, purchase, reserved_3y, reserved_1y, on_demand, spot.
    A placement without holdings (a hand-made plan) goes by its pricing."""
    if not p.holdings:
        return p.pricing
    order = {q: k for k, q in enumerate(PRICINGS)}
    best = min(p.holdings, key=lambda h: (-max(h.monthly_nodes, default=0), -sum(h.monthly_node_hours),
                                          order.get(h.pricing, len(order))))
    return best.pricing if max(best.monthly_nodes, default=0) or sum(best.monthly_node_hours) else p.pricing


def _placements_on(plan: Plan, pool: Pool) -> list[tuple[WorkloadPlan, Placement]]:
    return [(w, p) for w in plan.workloads for p in w.placements
            if (p.site, p.instance, home_pricing(p)) == (pool.site, pool.instance, pool.pricing)]


def pool_views(plan: Plan, catalog: Catalog, site: str) -> tuple[PoolView, ...]:
    pools = sorted((p for p in plan.pools if p.site == site),
                   key=lambda p: (p.instance, p.pricing, p.gpu, p.nodes))
    seen: dict[str, int] = {}
    out = []
    for pool in pools:
        base = slug(f"{pool.instance}-{pool.pricing}")
        seen[base] = seen.get(base, 0) + 1
        name = base if seen[base] == 1 else f"{base}-{seen[base]}"
        placed = _placements_on(plan, pool)
        slurm_need = max((p.nodes for w, p in placed if w.orchestrator == "slurm"), default=0)
        k8s_need = max((p.nodes for w, p in placed if w.orchestrator != "slurm"), default=0)
        if k8s_need and not slurm_need:
            slurm_nodes = 0
        elif slurm_need and not k8s_need:
            slurm_nodes = pool.nodes
        else:
            # Both orchestrators use the pool: Slurm gets its largest job, Kubernetes the rest.
            slurm_nodes = min(pool.nodes, slurm_need)
        shared = bool(slurm_need and k8s_need and slurm_need + k8s_need > pool.nodes)
        k8s_nodes = max(pool.nodes - slurm_nodes, k8s_need) if shared else pool.nodes - slurm_nodes
        out.append(PoolView(
            name=name, site=site, instance=pool.instance, pricing=pool.pricing,
            fabric=pool.fabric, shape=node_shape(catalog, pool.instance), nodes=pool.nodes,
            slurm_nodes=slurm_nodes, kubernetes_nodes=k8s_nodes, time_shared=shared,
            inference_gpus=sum(p.gpus for w, p in placed if w.kind == "inference"),
            training_gpus=max((p.gpus for w, p in placed if w.kind == "training"), default=0),
        ))
    return tuple(out)


def pool_for(pools: tuple[PoolView, ...], placement: Placement) -> PoolView:
    """The pool a placement's work is sent to (home_pricing), else the one its label names."""
    for pricing in dict.fromkeys((home_pricing(placement), placement.pricing)):
        for pool in pools:
            if (pool.instance, pool.pricing) == (placement.instance, pricing):
                return pool
    raise KeyError(f"no pool at {placement.site} for {placement.instance}/{home_pricing(placement)}")


# ---------------------------------------------------------------------------- storage


@dataclass(frozen=True)
class StorageView:
    tier: str
    capacity_tb: float            # decimal TB, as the plan sized it
    mount: str

    @property
    def capacity_gib(self) -> int:
        return math.ceil(self.capacity_tb * 1e12 / GIB)

    @property
    def capacity_tib(self) -> float:
        return self.capacity_tb * 1e12 / 2**40


def storage_view(plan: Plan, site: str) -> StorageView | None:
    tiers = sorted((s for s in plan.storage if s.site == site and s.capacity_tb > 0),
                   key=lambda s: (-s.capacity_tb, s.tier))
    if not tiers:
        return None
    s: StoragePlan = tiers[0]
    total = sum(t.capacity_tb for t in tiers if t.tier == s.tier)
    return StorageView(tier=s.tier, capacity_tb=total, mount=STORAGE_MOUNTS.get(s.tier, DEFAULT_MOUNT))


def shared_mount(storage: StorageView | None) -> str:
    return storage.mount if storage else DEFAULT_MOUNT


# ---------------------------------------------------------------------------- NCCL


@dataclass(frozen=True)
class EnvVar:
    name: str
    value: str


@dataclass(frozen=True)
class NcclProfile:
    """The NCCL/libfabric environment for a fabric, and a vendor script to source first."""

    fabric: str
    env: tuple[EnvVar, ...]
    source_script: str = ""       # a provider-installed profile, sourced when present
    note: str = ""


def _env(**kv: str) -> tuple[EnvVar, ...]:
    return tuple(EnvVar(k, v) for k, v in kv.items())


def nccl_profile(fabric: str, instance: str = "") -> NcclProfile:
    """NCCL settings for a fabric, as each provider documents them."""
    if fabric == "efa":
        # AWS EFA user guide: libfabric's EFA provider with GPUDirect RDMA (p4d/p5).
        return NcclProfile(fabric, _env(FI_PROVIDER="efa", FI_EFA_USE_DEVICE_RDMA="1",
                                        FI_EFA_FORK_SAFE="1", NCCL_DEBUG="WARN"),
                           note="AWS EFA with the aws-ofi-nccl plugin")
    if fabric == "gpudirect-tcpx":
        # GCP A3 High: GPUDirect-TCPX over four GPU NICs (eth1-eth4), eth0 for control.
        return NcclProfile(fabric, _env(
            LD_LIBRARY_PATH="/usr/local/tcpx/lib64:/usr/local/nvidia/lib64",
            NCCL_SOCKET_IFNAME="eth0", NCCL_GPUDIRECTTCPX_CTRL_DEV="eth0",
            NCCL_GPUDIRECTTCPX_SOCKET_IFNAME="eth1,eth2,eth3,eth4",
            NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX="/run/tcpx", NCCL_CROSS_NIC="0",
            NCCL_ALGO="Ring", NCCL_PROTO="Simple", NCCL_NSOCKS_PERTHREAD="4",
            NCCL_SOCKET_NTHREADS="1", NCCL_NET_GDR_LEVEL="PIX", NCCL_P2P_PXN_LEVEL="0",
            NCCL_BUFFSIZE="4194304", NCCL_DEBUG="WARN"),
            note="GCP A3 High GPUDirect-TCPX (needs the tcpx receive-datapath manager)")
    if fabric == "gpudirect-tcpxo":
        # GCP A3 Mega: GPUDirect-TCPXO; Google ships the tuned variables as a profile script.
        return NcclProfile(fabric, _env(
            LD_LIBRARY_PATH="/var/lib/tcpxo/lib64:/usr/local/nvidia/lib64",
            NCCL_FASTRAK_CTRL_DEV="eth0",
            NCCL_FASTRAK_IFNAME="eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8",
            NCCL_SOCKET_IFNAME="eth0", NCCL_CROSS_NIC="0", NCCL_NET_GDR_LEVEL="PIX",
            NCCL_FASTRAK_USE_SNAP="1", NCCL_FASTRAK_NUM_FLOWS="2", NCCL_BUFFSIZE="8388608",
            NCCL_DEBUG="WARN"),
            source_script="/var/lib/tcpxo/lib64/nccl-env-profile.sh",
            note="GCP A3 Mega GPUDirect-TCPXO (FasTrak)")
    if fabric == "gpudirect-rdma":
        # GCP A3 Ultra: RDMA over Converged Ethernet with the gIB NCCL plugin.
        return NcclProfile(fabric, _env(LD_LIBRARY_PATH="/usr/local/gib/lib64:/usr/local/nvidia/lib64",
                                        NCCL_NET="gIB", NCCL_SOCKET_IFNAME="eth0,eth1",
                                        NCCL_CROSS_NIC="0", NCCL_NET_GDR_LEVEL="PIX",
                                        NCCL_DEBUG="WARN"),
                           source_script="/usr/local/gib/scripts/set_nccl_env.sh",
                           note="GCP A3 Ultra GPUDirect-RDMA (gIB plugin)")
    if fabric == "infiniband" and instance.startswith("Standard_ND"):
        # Azure ND-series: IB devices are mlx5_ib*, the accelerated-networking NIC is mlx5_an0;
        # the HPC image ships the VM's NCCL topology file.
        topo = "ndv4-topo.xml" if "A100" in instance or instance.endswith("asr_v4") else "ndv5-topo.xml"
        return NcclProfile(fabric, _env(NCCL_IB_HCA="mlx5_ib", NCCL_SOCKET_IFNAME="eth0",
                                        NCCL_IB_PCI_RELAXED_ORDERING="1",
                                        NCCL_TOPO_FILE=f"/opt/microsoft/{topo}",
                                        UCX_IB_PCI_RELAXED_ORDERING="on", NCCL_DEBUG="WARN"),
                           note="Azure ND-series InfiniBand")
    if fabric in ("infiniband", "infiniband-ndr"):
        return NcclProfile(fabric, _env(NCCL_IB_HCA="mlx5", NCCL_IB_DISABLE="0",
                                        NCCL_NET_GDR_LEVEL="PHB", NCCL_DEBUG="WARN"),
                           note="InfiniBand with GPUDirect RDMA")
    if fabric.startswith("roce"):
        return NcclProfile(fabric, _env(NCCL_IB_HCA="mlx5", NCCL_IB_GID_INDEX="3",
                                        NCCL_IB_TC="106", NCCL_NET_GDR_LEVEL="PHB",
                                        NCCL_DEBUG="WARN"),
                           note="RoCE v2 (GID index 3)")
    return NcclProfile(fabric, _env(NCCL_IB_DISABLE="1", NCCL_SOCKET_IFNAME="^lo,docker0",
                                    NCCL_DEBUG="WARN"), note="TCP sockets over Ethernet")


# ---------------------------------------------------------------------------- topology


@dataclass(frozen=True)
class Switch:
    name: str
    children: str                 # Slurm hostlist of nodes (leaf) or switches (spine)
    is_leaf: bool


@dataclass(frozen=True)
class FabricDesign:
    """A two-level leaf/spine tree (three levels once the spines outgrow one switch)."""

    fabric: str
    radix: int
    rails: int                    # ports per node (one leaf per rail in a rail-optimised tree)
    nodes: int
    leaves: int                   # leaf groups for Slurm (each: radix/2 nodes x rails switches)
    leaf_switches: int            # physical leaf switches
    spine_switches: int
    node_links: int               # node-to-leaf cables
    uplinks: int                  # leaf-to-spine cables


def fabric_design(fabric: str, nodes: int, radix: int, rails: int) -> FabricDesign:
    """Non-blocking, rail-optimised fat tree: half of each leaf's ports face nodes, half spines.

    One switch suffices while every node port fits on it; past that, each group of radix/2
    nodes gets one leaf per rail, and the spines take as many ports as the leaves send up.
    """
    if nodes * rails <= radix:
        return FabricDesign(fabric=fabric, radix=radix, rails=rails, nodes=nodes, leaves=1,
                            leaf_switches=1, spine_switches=0, node_links=nodes * rails, uplinks=0)
    down = max(1, radix // 2)
    groups = math.ceil(nodes / down)
    uplinks = nodes * rails                      # non-blocking: one uplink per node port
    return FabricDesign(fabric=fabric, radix=radix, rails=rails, nodes=nodes, leaves=groups,
                        leaf_switches=groups * rails, spine_switches=math.ceil(uplinks / radix),
                        node_links=nodes * rails, uplinks=uplinks)


def hostlist(prefix: str, first: int, last: int, digits: int) -> str:
    if first == last:
        return f"{prefix}{first:0{digits}d}"
    return f"{prefix}[{first:0{digits}d}-{last:0{digits}d}]"


def topology_switches(pools: tuple[PoolView, ...], leaf_nodes: int) -> tuple[Switch, ...]:
    """Slurm topology.conf switches: leaves of `leaf_nodes` nodes per pool, one spine above."""
    leaves: list[Switch] = []
    for pool in pools:
        if pool.slurm_nodes == 0:
            continue
        for start in range(1, pool.slurm_nodes + 1, leaf_nodes):
            end = min(start + leaf_nodes - 1, pool.slurm_nodes)
            leaves.append(Switch(name="", children=hostlist(pool.name, start, end, pool.node_digits),
                                 is_leaf=True))
    digits = max(2, len(str(len(leaves))))
    named = tuple(Switch(name=f"leaf{i:0{digits}d}", children=s.children, is_leaf=True)
                  for i, s in enumerate(leaves, start=1))
    if len(named) <= 1:
        return named
    spine = Switch(name="spine", children=hostlist("leaf", 1, len(named), digits), is_leaf=False)
    return named + (spine,)


# ---------------------------------------------------------------------------- workloads


@dataclass(frozen=True)
class TrainingJob:
    name: str                     # the workload's name (validated pattern)
    site: str
    pool: PoolView
    nodes: int
    gpus: int
    gpus_per_node: int
    tp: int
    pp: int
    dp: int
    ep: int
    cpus_per_task: int
    spot: bool
    checkpoint_dir: str
    nccl: NcclProfile
    duration_hours: float

    @property
    def dns_name(self) -> str:
        return slug(self.name)[:40].rstrip("-") or "job"


@dataclass(frozen=True)
class InferenceService:
    name: str                     # the workload's name (the served model)
    site: str
    pool: PoolView
    replicas: int
    gpus_per_replica: int
    tensor_parallel: int
    batch: int
    min_replicas: int             # HPA floor: keeps one replica spare for disruptions
    pdb_max_unavailable: int      # 0 means: use min_available instead
    pdb_min_available: int
    model_dir: str
    # Kubernetes object and file name: the workload's name, unless it has several placements at
    # the site (one per candidate: instance, GPUs per replica), then suffixed to keep them apart.
    deployment: str = ""

    @property
    def object_name(self) -> str:
        return self.deployment or self.name


def training_jobs(plan: Plan, catalog: Catalog, site: str, pools: tuple[PoolView, ...],
                  orchestrator: str, storage: StorageView | None) -> tuple[TrainingJob, ...]:
    jobs = []
    for w in sorted(plan.workloads, key=lambda w: w.name):
        if w.kind != "training" or w.orchestrator != orchestrator:
            continue
        for p in w.placements:
            if p.site != site:
                continue
            pool = pool_for(pools, p)
            nodes = max(1, p.nodes)
            per_node = max(1, min(pool.shape.gpus, math.ceil(p.gpus / nodes)))
            jobs.append(TrainingJob(
                name=w.name, site=site, pool=pool, nodes=nodes, gpus=p.gpus,
                gpus_per_node=per_node, tp=w.layout.tp, pp=w.layout.pp, dp=w.layout.dp,
                ep=w.layout.ep,
                cpus_per_task=max(1, pool.shape.vcpus * per_node // pool.shape.gpus),
                spot=pool.spot,
                checkpoint_dir=f"{shared_mount(storage)}/checkpoints/{w.name}",
                nccl=nccl_profile(pool.fabric, pool.instance),
                duration_hours=float(w.estimate.get("duration_hours", 0.0) or 0.0),
            ))
    return tuple(jobs)


def inference_services(plan: Plan, site: str, pools: tuple[PoolView, ...],
                       storage: StorageView | None) -> tuple[InferenceService, ...]:
    out = []
    for w in sorted(plan.workloads, key=lambda w: w.name):
        if w.kind != "inference" or w.orchestrator == "slurm":
            continue
        here = [p for p in w.placements if p.site == site and p.replicas > 0]
        for p in here:
            pool = pool_for(pools, p)
            per_replica = p.gpus_per_replica or max(1, p.gpus // p.replicas)
            replicas = p.replicas
            deployment = ""
            if len(here) > 1:
                same_size = sum(1 for q in here if (q.gpus_per_replica or q.gpus // q.replicas) == per_replica)
                deployment = f"{w.name}-tp{per_replica}" + (f"-{slug(p.instance)}" if same_size > 1 else "")
            spare = replicas >= 2
            out.append(InferenceService(
                name=w.name, site=site, pool=pool, replicas=replicas,
                gpus_per_replica=per_replica,
                tensor_parallel=max(1, min(per_replica, w.layout.tp * w.layout.pp)),
                batch=max(1, int(w.estimate.get("batch", 1) or 1)),
                min_replicas=2 if spare else 1,
                pdb_max_unavailable=1 if spare else 0,
                pdb_min_available=0 if spare else 1,
                model_dir=f"/models/{w.name}",
                deployment=deployment,
            ))
    return tuple(out)


# ---------------------------------------------------------------------------- sites


@dataclass(frozen=True)
class SiteView:
    name: str
    type: str
    provider: str | None
    region: str | None
    orchestrators: tuple[str, ...]
    plan_name: str
    pools: tuple[PoolView, ...]
    storage: StorageView | None
    training_slurm: tuple[TrainingJob, ...]
    training_kubernetes: tuple[TrainingJob, ...]
    inference: tuple[InferenceService, ...]

    @property
    def slurm_pools(self) -> tuple[PoolView, ...]:
        return tuple(p for p in self.pools if p.slurm_nodes > 0)

    @property
    def kubernetes_pools(self) -> tuple[PoolView, ...]:
        return tuple(p for p in self.pools if p.kubernetes_nodes > 0)

    @property
    def kueue_pools(self) -> tuple[PoolView, ...]:
        used = {j.pool.name for j in self.training_kubernetes}
        return tuple(p for p in self.kubernetes_pools if p.name in used)

    @property
    def namespace(self) -> str:
        return slug(self.plan_name)[:63].rstrip("-") or "ml"

    @property
    def mount(self) -> str:
        return shared_mount(self.storage)


def site_view(plan: Plan, catalog: Catalog, site: SitePlan) -> SiteView:
    pools = pool_views(plan, catalog, site.name)
    storage = storage_view(plan, site.name)
    return SiteView(
        name=site.name, type=site.type, provider=site.provider, region=site.region,
        orchestrators=tuple(sorted(site.orchestrators)), plan_name=plan.spec_name,
        pools=pools, storage=storage,
        training_slurm=training_jobs(plan, catalog, site.name, pools, "slurm", storage),
        training_kubernetes=training_jobs(plan, catalog, site.name, pools, "kubernetes", storage),
        inference=inference_services(plan, site.name, pools, storage),
    )


# ---------------------------------------------------------------------------- terraform

# GCP accelerator type names (Compute Engine `acceleratorTypes`), by machine family.
GCP_ACCELERATORS = {
    "a3-highgpu": "nvidia-h100-80gb",
    "a3-megagpu": "nvidia-h100-mega-80gb",
    "a3-ultragpu": "nvidia-h200-141gb",
    "a2-highgpu": "nvidia-tesla-a100",
    "a2-ultragpu": "nvidia-a100-80gb",
    "g2-standard": "nvidia-l4",
}
# Extra GPU NICs (one VPC each) the GPUDirect machine types need besides eth0.
GCP_GPU_NICS = {"gpudirect-tcpx": 4, "gpudirect-tcpxo": 8, "gpudirect-rdma": 8}
EFA_CARD_GBPS = 100               # every EFA network card on p4d/p5 carries 100 Gb/s


@dataclass(frozen=True)
class CloudPool:
    """One pool as Terraform creates it: instances for Slurm, a node group for Kubernetes."""

    pool: PoolView
    id: str                       # Terraform block label
    orchestrator: str             # slurm | kubernetes
    nodes: int
    efa_interfaces: int           # AWS: EFA network cards to attach (0: none)
    accelerator: str              # GCP accelerator type
    gpu_nics: int                 # GCP: extra GPUDirect NICs
    rdma: bool                    # GCP A3 Ultra: the GPU NICs are RDMA (MRDMA)
    short_name: str               # Azure AKS pool name (<= 12 lowercase alphanumerics)

    @property
    def name(self) -> str:
        return self.pool.name if self.orchestrator == "slurm" else f"{self.pool.name}-k8s"


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
class TerraformSite:
    site: SiteView
    pools: tuple[CloudPool, ...]
    storage: CloudStorage | None
    has_slurm: bool
    has_kubernetes: bool
    spot_any: bool
    reserved_any: bool


def terraform_site(site: SiteView, catalog: Catalog) -> TerraformSite:
    out = []
    for index, pool in enumerate(site.pools, start=1):
        inst = catalog.instances.get(pool.instance)
        family = "-".join(pool.instance.split("-")[:2])
        for orch, nodes in (("slurm", pool.slurm_nodes),
                            ("kubernetes", pool.dedicated_kubernetes_nodes)):
            if nodes <= 0:
                continue
            label = re.sub(r"[^a-z0-9_]", "_", f"{pool.name}_{orch}")
            out.append(CloudPool(
                pool=pool, id=label, orchestrator=orch, nodes=nodes,
                efa_interfaces=int(inst.network_gbps // EFA_CARD_GBPS) if inst and inst.fabric == "efa" else 0,
                accelerator=GCP_ACCELERATORS.get(family, ""),
                gpu_nics=GCP_GPU_NICS.get(pool.fabric, 0),
                rdma=pool.fabric == "gpudirect-rdma",
                short_name=f"gpu{index}{'k' if orch == 'kubernetes' else 's'}",
            ))
    pools = tuple(out)
    return TerraformSite(
        site=site, pools=pools, storage=cloud_storage(site.storage, catalog),
        has_slurm=any(p.orchestrator == "slurm" for p in pools),
        has_kubernetes=any(p.orchestrator == "kubernetes" for p in pools),
        spot_any=any(p.pool.spot for p in pools),
        reserved_any=any(p.pool.reserved for p in pools),
    )


# ---------------------------------------------------------------------------- on-prem BOM


@dataclass(frozen=True)
class BomLine:
    category: str
    item: str
    description: str
    quantity: int
    unit_price_usd: float

    @property
    def total_price_usd(self) -> float:
        return self.quantity * self.unit_price_usd


def bom_lines(site: SiteView, catalog: Catalog) -> tuple[BomLine, ...]:
    """What an on-prem site needs: nodes to buy, the switch tree per fabric, optics, storage."""
    lines: list[BomLine] = []
    by_fabric: dict[str, int] = {}
    for pool in site.pools:
        node = catalog.onprem_nodes.get(pool.instance)
        price = node.capex_usd if node and pool.pricing == "purchase" else 0.0
        what = "to buy" if pool.pricing == "purchase" else "already owned (no capex)"
        lines.append(BomLine("node", pool.instance,
                             f"{pool.shape.gpus}x {pool.shape.gpu}, {pool.shape.vcpus} vCPU, "
                             f"{pool.shape.ram_gb:g} GB RAM; {what}", pool.nodes, price))
        by_fabric[pool.fabric] = by_fabric.get(pool.fabric, 0) + pool.nodes
    for fabric_name in sorted(by_fabric):
        fab = catalog.fabrics.get(fabric_name)
        if fab is None:
            continue
        d = fabric_design(fabric_name, by_fabric[fabric_name], fab.switch_radix, fab.ports_per_node)
        lines.append(BomLine("switch", f"{fabric_name}-leaf",
                             f"{fab.switch_radix}-port {fab.port_gbps:g}G leaf switch "
                             f"({d.rails} rails)", d.leaf_switches, fab.switch_cost_usd))
        if d.spine_switches:
            lines.append(BomLine("switch", f"{fabric_name}-spine",
                                 f"{fab.switch_radix}-port {fab.port_gbps:g}G spine switch",
                                 d.spine_switches, fab.switch_cost_usd))
        lines.append(BomLine("optics", f"{fabric_name}-node-port",
                             f"NIC port, optic and cable share per node port ({fab.port_gbps:g}G)",
                             d.node_links, fab.cost_per_port_usd))
        if d.uplinks:
            lines.append(BomLine("optics", f"{fabric_name}-uplink",
                                 "leaf-to-spine optics and cable (both ends)",
                                 d.uplinks, fab.cost_per_port_usd))
    if site.storage is not None:
        tier = catalog.storage.get(site.storage.tier)
        lines.append(BomLine("storage", site.storage.tier,
                             f"parallel file system capacity, TB (mounted at {site.storage.mount})",
                             math.ceil(site.storage.capacity_tb),
                             tier.capex_usd_per_tb if tier else 0.0))
    return tuple(lines)
