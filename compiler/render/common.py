"""What every target's view models share: names, node shapes, labels, storage mounts, NCCL
settings and Slurm hostlists. Each target's own view models live beside its renderer
(slurm.py, kubernetes.py, terraform.py, onprem.py); which nodes each orchestrator holds is
domains.py.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from compiler.catalog.model import Catalog, CloudInstance, OnPremNode
from compiler.plan import Plan, StoragePlan

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
    "onprem-nfs": "/nfs",
}
DEFAULT_MOUNT = "/shared"
# What each on-prem tier is, for the bill of materials.
STORAGE_KINDS = {"onprem-lustre": "parallel file system", "onprem-nfs": "NFS file server"}


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


# The label telling a node's pricing (Kueue flavors and autoscaled node groups select it).
PRICING_LABEL = "infra-compile.io/pricing"


def hostlist(prefix: str, first: int, last: int, digits: int) -> str:
    if first == last:
        return f"{prefix}{first:0{digits}d}"
    return f"{prefix}[{first:0{digits}d}-{last:0{digits}d}]"

# ---------------------------------------------------------------------------- storage


@dataclass(frozen=True)
class StorageView:
    tier: str
    capacity_tb: float            # decimal TB, as the plan sized it
    mount: str
    first_month: int = 0          # the first month the plan provisions any of it

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
    first = min((next((m for m, tb in enumerate(t.monthly_tb) if tb > 0), 0) if t.monthly_tb else 0
                 for t in tiers if t.tier == s.tier), default=0)
    return StorageView(tier=s.tier, capacity_tb=total, mount=STORAGE_MOUNTS.get(s.tier, DEFAULT_MOUNT),
                       first_month=first)


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


def nccl_profile(fabric: str, catalog: Catalog, instance: str = "") -> NcclProfile:
    """NCCL settings for a fabric, as each provider documents them: what the catalog says of the
    fabric (an on-prem fabric's kind) and of the instance (an Azure ND VM's topology file)."""
    record = catalog.instances.get(instance)
    topology = record.nccl_topology if record is not None and record.provider == "azure" else None
    kind = catalog.fabrics[fabric].kind if fabric in catalog.fabrics else ""
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
    if fabric == "infiniband" and topology is not None:
        # Azure ND-series: IB devices are mlx5_ib*, the accelerated-networking NIC is mlx5_an0;
        # the HPC image ships the VM's NCCL topology file (the catalog's, per VM size).
        return NcclProfile(fabric, _env(NCCL_IB_HCA="mlx5_ib", NCCL_SOCKET_IFNAME="eth0",
                                        NCCL_IB_PCI_RELAXED_ORDERING="1",
                                        NCCL_TOPO_FILE=topology.file,
                                        UCX_IB_PCI_RELAXED_ORDERING="on", NCCL_DEBUG="WARN"),
                           note="Azure ND-series InfiniBand")
    if fabric in ("infiniband", "infiniband-ndr"):
        return NcclProfile(fabric, _env(NCCL_IB_HCA="mlx5", NCCL_IB_DISABLE="0",
                                        NCCL_NET_GDR_LEVEL="PHB", NCCL_DEBUG="WARN"),
                           note="InfiniBand with GPUDirect RDMA")
    if kind == "roce":
        return NcclProfile(fabric, _env(NCCL_IB_HCA="mlx5", NCCL_IB_GID_INDEX="3",
                                        NCCL_IB_TC="106", NCCL_NET_GDR_LEVEL="PHB",
                                        NCCL_DEBUG="WARN"),
                           note="RoCE v2 (GID index 3)")
    return NcclProfile(fabric, _env(NCCL_IB_DISABLE="1", NCCL_SOCKET_IFNAME="^lo,docker0",
                                    NCCL_DEBUG="WARN"), note="TCP sockets over Ethernet")
